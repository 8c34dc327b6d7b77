"""Is there a usable CUDA GPU?  Decided once, here, for the whole package.

Every module that could touch CUDA asks :func:`detect` first.  The probe goes
further than "does CuPy import": it asks the runtime for a device, then
compiles (NVRTC, with the fp16/bf16 headers our kernels include) and launches a
32-thread kernel and checks its result.  Any failure on the way -- CuPy
missing, no driver, a driver older than the runtime
(``cudaErrorInsufficientDriver``, what a Colab CPU runtime reports), NVRTC
without its headers, a PTX version the driver cannot JIT -- lands in CPU mode
with the reason in plain words, never in an exception.

Set ``GPU_VIZ_FORCE_CPU=1`` to force CPU mode (the CI and the CPU-mode notebook
tests do).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import threading
from typing import Optional, Tuple

FORCE_CPU_ENV = "GPU_VIZ_FORCE_CPU"

GPU = "gpu"
CPU = "cpu"

# A kernel that includes the same headers as the course's kernels: if NVRTC
# cannot find cuda_fp16.h / cuda_bf16.h, every fp16 kernel would fail later.
_PROBE_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void gpu_viz_probe(int* out) {
    __half h = __float2half(1.0f);
    __nv_bfloat16 b = __float2bfloat16(2.0f);
    out[threadIdx.x] = 3 * (int)threadIdx.x + (int)__half2float(h) + (int)__bfloat162float(b);
}
"""


class GPUUnavailable(RuntimeError):
    """Raised by :func:`require_gpu` when the course runs in CPU mode."""


@dataclasses.dataclass(frozen=True)
class Backend:
    """The outcome of the probe.

    Attributes:
        mode: ``"gpu"`` or ``"cpu"``.
        reason: in CPU mode, why (plain words, the underlying error quoted);
            empty in GPU mode.
        device_name: the GPU's name (``"NVIDIA L4"``) or ``None``.
        compute_capability: ``(major, minor)``, e.g. ``(8, 9)``, or ``None``.
        device_id: the CUDA device the course uses (the current one at probe time).
    """

    mode: str
    reason: str = ""
    device_name: Optional[str] = None
    compute_capability: Optional[Tuple[int, int]] = None
    device_id: int = 0

    @property
    def is_gpu(self) -> bool:
        return self.mode == GPU

    @property
    def sm(self) -> Optional[str]:
        """``"sm_89"`` style architecture name, or ``None`` in CPU mode."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def describe(self) -> str:
        if self.is_gpu:
            return f"GPU mode: {self.device_name} ({self.sm})"
        return f"CPU mode (model traces, no timings): {self.reason}"


_lock = threading.Lock()
_cached: Optional[Backend] = None


def _cpu(reason: str) -> Backend:
    return Backend(mode=CPU, reason=reason)


def libcuda_driver_version() -> Optional[int]:
    """The NVIDIA driver's CUDA version from libcuda (``cuDriverGetVersion``, e.g. 12040), or
    None when no driver library loads (a machine without an NVIDIA driver).  Never raises."""
    try:
        import ctypes
    except Exception:  # a Python without _ctypes
        return None
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
            v = ctypes.c_int(0)
            if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value > 0:
                return int(v.value)
        except Exception:  # not there, or no cuDriverGetVersion in it: try the next name
            continue
    return None


def _positive_int(value) -> Optional[int]:
    try:
        v = int(value)
    except Exception:
        return None
    return v if v > 0 else None


def driver_cuda_version(cupy=None) -> Optional[int]:
    """The NVIDIA driver's CUDA version (e.g. 12040): CuPy's ``driverGetVersion`` (0 without a
    driver) when ``cupy`` is given and answers, else :func:`libcuda_driver_version`; None when
    no driver is found.  Never raises (the CPU-mode probe and the doctor both call it)."""
    if cupy is not None:
        try:
            v = _positive_int(cupy.cuda.runtime.driverGetVersion())
        except Exception:
            v = None
        if v:
            return v
    try:
        return _positive_int(libcuda_driver_version())
    except Exception:
        return None


def runtime_cuda_version(cupy) -> Optional[int]:
    """The CUDA runtime version CuPy was built for (e.g. 12090), None if it does not say."""
    try:
        return _positive_int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:
        return None


def cuda_version_text(v: Optional[int]) -> str:
    """A CUDA version number as text: 12040 -> "12.4"; "none" for 0 / None."""
    if not v:
        return "none"
    return f"{v // 1000}.{(v % 1000) // 10}"


def _explain_runtime_error(exc: BaseException, cupy=None) -> str:
    """The CPU-mode reason for a CUDA runtime error.  ``cupy``: asked for the driver's and the
    runtime's CUDA versions when the error is cudaErrorInsufficientDriver (None: not known)."""
    text = f"{type(exc).__name__}: {exc}"
    if "InsufficientDriver" in text or "insufficient" in text.lower():
        # the runtime reports the same error with no driver at all (a machine or a Colab
        # runtime without a GPU) and with a driver too old for it: say which one this is
        if cupy is None:
            return ("the NVIDIA driver is missing or older than the CUDA runtime CuPy was built for "
                    f"[{text}]")
        driver, runtime = driver_cuda_version(cupy), runtime_cuda_version(cupy)
        if not driver:
            return f"no NVIDIA driver on this machine, so no GPU to run on [{text}]"
        if runtime and driver < runtime:
            return (f"the NVIDIA driver (CUDA {cuda_version_text(driver)}) is older than the CUDA runtime CuPy was built "
                    f"for (CUDA {cuda_version_text(runtime)}) [{text}]")
        return (f"the NVIDIA driver (CUDA {cuda_version_text(driver)}) is insufficient for the CUDA runtime CuPy was built "
                f"for{f' (CUDA {cuda_version_text(runtime)})' if runtime else ''} [{text}]")
    if "NoDevice" in text or "no CUDA-capable device" in text:
        return f"no CUDA-capable GPU is visible to this process [{text}]"
    if "libcuda" in text or "driver" in text.lower():
        return f"the NVIDIA driver library could not be loaded [{text}]"
    return f"the CUDA runtime could not be initialised [{text}]"


def _explain_compile_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "cuda_fp16.h" in text or "cuda_bf16.h" in text or "cannot open source file" in text:
        return ("NVRTC is present but cannot find the CUDA headers (cuda_fp16.h, cuda_bf16.h) the "
                f"kernels include; install the CUDA toolkit headers or set CUDA_PATH [{text[:400]}]")
    if "nvrtc" in text.lower():
        return f"NVRTC (the run-time CUDA compiler) is missing or failed to load [{text[:400]}]"
    return f"a probe kernel failed to compile [{text[:400]}]"


def _probe() -> Backend:
    if os.environ.get(FORCE_CPU_ENV, "").strip() not in ("", "0"):
        return _cpu(f"forced by {FORCE_CPU_ENV}={os.environ[FORCE_CPU_ENV]}")
    try:
        import cupy  # noqa: F401
    except ImportError as exc:
        return _cpu(f"CuPy is not installed ({exc}); pip install cupy-cuda12x")
    except Exception as exc:  # a broken install raises all sorts of things
        return _cpu(f"CuPy failed to import ({type(exc).__name__}: {exc})")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return _cpu(_explain_runtime_error(exc, cupy))
    if count < 1:
        return _cpu("the CUDA runtime reports no GPU")
    try:
        device_id = cupy.cuda.runtime.getDevice()
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        cc = (int(props["major"]), int(props["minor"]))
    except Exception as exc:
        return _cpu(_explain_runtime_error(exc, cupy))
    try:
        module = cupy.RawModule(code=_PROBE_SOURCE, options=("-std=c++17",))
        kernel = module.get_function("gpu_viz_probe")
    except Exception as exc:
        return _cpu(_explain_compile_error(exc))
    try:
        out = cupy.full(32, -1, dtype=cupy.int32)
        kernel((1,), (32,), (out,))
        got = out.get().tolist()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if "PTX" in text or "ptx" in text:
            return _cpu("the driver is older than NVRTC and cannot load the PTX it produced; "
                        f"update the NVIDIA driver or install a CuPy built for an older CUDA [{text}]")
        if "nvrtc" in text.lower() or "cuda_fp16" in text:
            return _cpu(_explain_compile_error(exc))
        return _cpu(f"a probe kernel failed to launch [{text}]")
    expected = [3 * i + 3 for i in range(32)]
    if got != expected:
        return _cpu(f"a probe kernel ran but returned wrong values ({got[:4]}... expected {expected[:4]}...)")
    return Backend(mode=GPU, device_name=name, compute_capability=cc, device_id=device_id)


def detect(refresh: bool = False) -> Backend:
    """Return the :class:`Backend`, probing once per process (``refresh=True`` probes again)."""
    global _cached
    if _cached is not None and not refresh:  # the probe's answer, read on every GPU call's path
        return _cached
    with _lock:
        if _cached is None or refresh:
            _cached = _probe()
        return _cached


def has_gpu() -> bool:
    """True when a usable CUDA GPU was found (see :func:`detect`)."""
    return detect().is_gpu


def require_gpu(what: str) -> Backend:
    """Return the GPU backend, or raise :class:`GPUUnavailable` saying that ``what`` needs one."""
    backend = detect()
    if not backend.is_gpu:
        raise GPUUnavailable(f"{what} needs a CUDA GPU; running in CPU mode because {backend.reason}")
    return backend


def require_cupy(what: str):
    """The ``cupy`` module, for code that is about to use the GPU: :func:`require_gpu` first, so
    CPU mode (CuPy missing included) raises :class:`GPUUnavailable` naming ``what``, never an
    ImportError.  Every GPU path of the package gets CuPy from here."""
    require_gpu(what)
    import cupy

    return cupy


def today() -> str:
    """Today's date, ISO format (used in provenance labels and records)."""
    return _dt.date.today().isoformat()


def live_label() -> str:
    """Provenance of data measured now: ``"measured on NVIDIA L4 (sm_89) just now"``."""
    backend = require_gpu("a live measurement")
    return f"measured on {backend.device_name} ({backend.sm}) just now, {today()}"


MODEL_LABEL = "CPU model, no GPU: computed in numpy, nothing was measured"


def provenance() -> str:
    """The label for data produced right now: live on a GPU, else the CPU model's label."""
    return live_label() if has_gpu() else MODEL_LABEL


def recorded_label(gpu: str, date: str) -> str:
    """Provenance of a recorded run: ``"recorded on NVIDIA H200, 2026-11-29"``."""
    return f"recorded on {gpu}, {date} (not live)"
