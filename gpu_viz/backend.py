"""Is there a usable CUDA GPU?  Decided once, here, for the whole package.

Every module that could touch CUDA asks :func:`detect` first.  The probe goes
further than "does CuPy import": it asks the runtime for a device, then
compiles (NVRTC, with the fp16/bf16 headers our kernels include) and launches a
32-thread kernel and checks its result.  Any failure on the way -- CuPy
missing, no driver, a driver older than the runtime
(``cudaErrorInsufficientDriver``, what a Colab CPU runtime reports), NVRTC
without its headers, a PTX version the driver cannot JIT -- lands in CPU mode
with the reason in plain words, never in an exception.  Each CPU-mode outcome also
carries a cause code (one of :data:`CAUSES`) for code that acts on it, such as the
doctor; the reason is for people and may change wording.

Set ``GPU_VIZ_FORCE_CPU=1`` to force CPU mode (the CI and the CPU-mode notebook
tests do); add ``GPU_VIZ_NO_EMULATOR=1`` for CPU mode as it runs without NVRTC (the emulator
reports it missing: :mod:`gpu_viz.emulator.nvrtc`).
"""
from __future__ import annotations

import contextvars
import dataclasses
import datetime as _dt
import os
import threading
from typing import Optional, Tuple

FORCE_CPU_ENV = "GPU_VIZ_FORCE_CPU"
#: The emulator session the GPU paths run on inside ``gpu_viz.emulator.emulated()`` (None: the
#: real GPU): backend.require_cupy and gpu_viz.kernels hand its facade and kernels to the GPU paths.
EMULATED: contextvars.ContextVar = contextvars.ContextVar("gpu_viz_emulated", default=None)

GPU = "gpu"
CPU = "cpu"

# Cause codes: why the probe landed where it did.  ``Backend.cause`` is one of these;
# code decides on them, never on the wording of ``Backend.reason``.
CAUSE_OK = "ok"  # GPU mode
CAUSE_FORCED_CPU = "forced-cpu"  # GPU_VIZ_FORCE_CPU set
CAUSE_CUPY_MISSING = "cupy-missing"  # import cupy: ImportError
CAUSE_CUPY_BROKEN = "cupy-broken"  # import cupy: anything else (a broken install)
CAUSE_NO_DRIVER = "no-driver"  # cudaErrorInsufficientDriver and no driver answers
CAUSE_DRIVER_TOO_OLD = "driver-too-old"  # cudaErrorInsufficientDriver, driver's CUDA < runtime's
CAUSE_DRIVER_INSUFFICIENT = "driver-insufficient"  # cudaErrorInsufficientDriver, versions do not explain it
CAUSE_NO_DEVICE = "no-device"  # cudaErrorNoDevice, or a device count of 0
CAUSE_DRIVER_LIBRARY = "driver-library"  # libcuda could not be loaded
CAUSE_RUNTIME_INIT = "runtime-init"  # any other runtime error while counting devices
CAUSE_DEVICE_PROPERTIES = "device-properties"  # any other error while reading the device's properties
CAUSE_NVRTC_MISSING = "nvrtc-missing"  # NVRTC missing or failed to load
CAUSE_NVRTC_HEADERS = "nvrtc-headers"  # NVRTC cannot find cuda_fp16.h / cuda_bf16.h
CAUSE_COMPILE_FAILED = "compile-failed"  # any other compile error of the probe kernel
CAUSE_PTX_TOO_NEW = "ptx-too-new"  # the driver cannot JIT the PTX that NVRTC produced
CAUSE_LAUNCH_FAILED = "launch-failed"  # any other error launching the probe kernel
CAUSE_WRONG_RESULT = "wrong-result"  # the probe kernel ran and returned wrong values

CAUSES = (CAUSE_OK, CAUSE_FORCED_CPU, CAUSE_CUPY_MISSING, CAUSE_CUPY_BROKEN, CAUSE_NO_DRIVER,
          CAUSE_DRIVER_TOO_OLD, CAUSE_DRIVER_INSUFFICIENT, CAUSE_NO_DEVICE, CAUSE_DRIVER_LIBRARY,
          CAUSE_RUNTIME_INIT, CAUSE_DEVICE_PROPERTIES, CAUSE_NVRTC_MISSING, CAUSE_NVRTC_HEADERS,
          CAUSE_COMPILE_FAILED, CAUSE_PTX_TOO_NEW, CAUSE_LAUNCH_FAILED, CAUSE_WRONG_RESULT)

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
        cause: why, as a code from :data:`CAUSES`: :data:`CAUSE_OK` in GPU mode (the
            default there), any other one in CPU mode (required there).
        device_name: the GPU's name (``"NVIDIA L4"``) or ``None``.
        compute_capability: ``(major, minor)``, e.g. ``(8, 9)``, or ``None``.
        device_id: the CUDA device the course uses (the current one at probe time).
    """

    mode: str
    reason: str = ""
    cause: Optional[str] = None
    device_name: Optional[str] = None
    compute_capability: Optional[Tuple[int, int]] = None
    device_id: int = 0

    def __post_init__(self):
        """Fill in GPU mode's cause; raise ValueError for an unknown mode or cause, a CPU mode
        without a cause, or a cause that contradicts the mode."""
        if self.mode not in (GPU, CPU):
            raise ValueError(f"Backend mode must be {GPU!r} or {CPU!r}, got {self.mode!r}")
        cause = self.cause
        if cause is None:
            if self.mode == CPU:
                raise ValueError("a CPU-mode Backend needs a cause, one of backend.CAUSES")
            cause = CAUSE_OK
            object.__setattr__(self, "cause", cause)  # frozen: set once, here
        if cause not in CAUSES:
            raise ValueError(f"unknown Backend cause {cause!r}; expected one of {CAUSES}")
        if (cause == CAUSE_OK) != (self.mode == GPU):
            raise ValueError(f"cause {cause!r} contradicts mode {self.mode!r} "
                             f"({CAUSE_OK!r} is GPU mode's cause and only GPU mode's)")

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

    @property
    def plain_reason(self) -> str:
        """:attr:`reason` without the library's raw message (the trailing ``[...]``): what the
        notebook's banner, projected on a title slide, says.  The doctor shows the whole reason."""
        if self.cause == CAUSE_FORCED_CPU:  # the environment variable is for the doctor, not a slide
            return "CPU mode was chosen on purpose (a CPU-mode build or run of the course)"
        r = self.reason or ""
        return r[:r.index(" [")] if r.endswith("]") and " [" in r else r

    def describe(self, plain: bool = False, recorded: Optional[bool] = None) -> str:
        """One line: the mode and the GPU, or why CPU mode, as a sentence (closed by a full stop in
        CPU mode).  ``plain``: the reason in words only (:attr:`plain_reason`), as notebooks print
        it on a slide; the default keeps the library's raw message for logs and the doctor.
        ``recorded``: what CPU mode shows -- committed GPU records (True) or CPU-model traces
        (False); None: what this process's notebook said through ``gpu_viz.banner(recorded=...)``
        (:func:`chapter_shows_records`; traces when no banner was printed)."""
        if self.is_gpu:
            return f"GPU mode: {self.device_name} ({self.sm})"
        if recorded is None:
            recorded = chapter_shows_records()
        head = ("CPU mode (committed GPU records, nothing timed here)" if recorded
                else "CPU mode (model traces, no timings)")
        why = (self.plain_reason if plain else self.reason).strip().rstrip(".")
        if why.startswith("CPU mode "):  # "CPU mode was chosen on purpose (...)": say "CPU mode" once
            return f"{head} {why[len('CPU mode '):]}."
        return f"{head}: {why}."


_lock = threading.Lock()
_cached: Optional[Backend] = None
#: What the notebook running in this process shows in CPU mode, as its banner said
#: (``gpu_viz.banner(recorded=...)``): committed GPU records (True) or model traces (False);
#: None before any banner.
_chapter_recorded: Optional[bool] = None


def note_chapter(recorded: bool) -> None:
    """Remember what this process's chapter shows in CPU mode (``gpu_viz.banner`` calls it), so
    that a later :meth:`Backend.describe` on one of its slides says the same."""
    global _chapter_recorded
    _chapter_recorded = bool(recorded)


def chapter_shows_records() -> bool:
    """True when this process's banner said its chapter shows committed GPU records
    (:func:`note_chapter`); False before any banner."""
    return bool(_chapter_recorded)


def _cpu(cause: str, reason: str) -> Backend:
    return Backend(mode=CPU, reason=reason, cause=cause)


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


def _explain_runtime_error(exc: BaseException, cupy=None,
                           fallback: str = CAUSE_RUNTIME_INIT) -> Tuple[str, str]:
    """The CPU-mode ``(cause, reason)`` for a CUDA runtime error.  ``cupy``: asked for the
    driver's and the runtime's CUDA versions when the error is cudaErrorInsufficientDriver
    (None: not known).  ``fallback``: the cause when the error is none of the known kinds."""
    text = f"{type(exc).__name__}: {exc}"
    if "InsufficientDriver" in text or "insufficient" in text.lower():
        # the runtime reports the same error with no driver at all (a machine or a Colab
        # runtime without a GPU) and with a driver too old for it: say which one this is
        if cupy is None:  # no versions to ask: missing or too old, which one is not known
            return (CAUSE_DRIVER_INSUFFICIENT,
                    f"the NVIDIA driver is missing or older than the CUDA runtime CuPy was built for [{text}]")
        driver, runtime = driver_cuda_version(cupy), runtime_cuda_version(cupy)
        if not driver:
            return CAUSE_NO_DRIVER, f"no NVIDIA driver on this machine, so no GPU to run on [{text}]"
        if runtime and driver < runtime:
            return (CAUSE_DRIVER_TOO_OLD,
                    f"the NVIDIA driver (CUDA {cuda_version_text(driver)}) is older than the CUDA runtime CuPy "
                    f"was built for (CUDA {cuda_version_text(runtime)}) [{text}]")
        return (CAUSE_DRIVER_INSUFFICIENT,
                f"the NVIDIA driver (CUDA {cuda_version_text(driver)}) is insufficient for the CUDA runtime CuPy "
                f"was built for{f' (CUDA {cuda_version_text(runtime)})' if runtime else ''} [{text}]")
    if "NoDevice" in text or "no CUDA-capable device" in text:
        return CAUSE_NO_DEVICE, f"no CUDA-capable GPU is visible to this process [{text}]"
    if "libcuda" in text or "driver" in text.lower():
        return CAUSE_DRIVER_LIBRARY, f"the NVIDIA driver library could not be loaded [{text}]"
    return fallback, f"the CUDA runtime could not be initialised [{text}]"


def _explain_compile_error(exc: BaseException) -> Tuple[str, str]:
    """The CPU-mode ``(cause, reason)`` for an error compiling the probe kernel."""
    text = f"{type(exc).__name__}: {exc}"
    if "cuda_fp16.h" in text or "cuda_bf16.h" in text or "cannot open source file" in text:
        return (CAUSE_NVRTC_HEADERS,
                "NVRTC is present but cannot find the CUDA headers (cuda_fp16.h, cuda_bf16.h) the "
                f"kernels include; install the CUDA toolkit headers or set CUDA_PATH [{text[:400]}]")
    if "nvrtc" in text.lower():
        return CAUSE_NVRTC_MISSING, f"NVRTC (the run-time CUDA compiler) is missing or failed to load [{text[:400]}]"
    return CAUSE_COMPILE_FAILED, f"a probe kernel failed to compile [{text[:400]}]"


def _probe() -> Backend:
    if os.environ.get(FORCE_CPU_ENV, "").strip() not in ("", "0"):
        return _cpu(CAUSE_FORCED_CPU, f"forced by {FORCE_CPU_ENV}={os.environ[FORCE_CPU_ENV]}")
    try:
        import cupy  # noqa: F401
    except ImportError as exc:
        return _cpu(CAUSE_CUPY_MISSING, f"CuPy is not installed ({exc}); pip install cupy-cuda12x")
    except Exception as exc:  # a broken install raises all sorts of things
        return _cpu(CAUSE_CUPY_BROKEN, f"CuPy failed to import ({type(exc).__name__}: {exc})")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return _cpu(*_explain_runtime_error(exc, cupy))
    if count < 1:
        return _cpu(CAUSE_NO_DEVICE, "the CUDA runtime reports no GPU")
    try:
        device_id = cupy.cuda.runtime.getDevice()
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        cc = (int(props["major"]), int(props["minor"]))
    except Exception as exc:
        return _cpu(*_explain_runtime_error(exc, cupy, fallback=CAUSE_DEVICE_PROPERTIES))
    try:
        module = cupy.RawModule(code=_PROBE_SOURCE, options=("-std=c++17",))
        kernel = module.get_function("gpu_viz_probe")
    except Exception as exc:
        return _cpu(*_explain_compile_error(exc))
    try:
        out = cupy.full(32, -1, dtype=cupy.int32)
        kernel((1,), (32,), (out,))
        got = out.get().tolist()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if "PTX" in text or "ptx" in text:
            return _cpu(CAUSE_PTX_TOO_NEW,
                        "the driver is older than NVRTC and cannot load the PTX it produced; "
                        f"update the NVIDIA driver or install a CuPy built for an older CUDA [{text}]")
        if "nvrtc" in text.lower() or "cuda_fp16" in text:  # compiled lazily, at the first launch
            return _cpu(*_explain_compile_error(exc))
        return _cpu(CAUSE_LAUNCH_FAILED, f"a probe kernel failed to launch [{text}]")
    expected = [3 * i + 3 for i in range(32)]
    if got != expected:
        return _cpu(CAUSE_WRONG_RESULT,
                    f"a probe kernel ran but returned wrong values ({got[:4]}... expected {expected[:4]}...)")
    return Backend(mode=GPU, cause=CAUSE_OK, device_name=name, compute_capability=cc, device_id=device_id)


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
    """Return the GPU backend, or raise :class:`GPUUnavailable` saying that ``what`` needs one.
    Inside ``gpu_viz.emulator.emulated()`` the emulated GPU stands in (its architecture's)."""
    session = EMULATED.get()
    if session is not None:
        arch = session.arch[3:]
        return Backend(mode=GPU, device_name=f"emulated GPU ({session.arch})",
                       compute_capability=(int(arch[:-1]), int(arch[-1])))
    backend = detect()
    if not backend.is_gpu:
        raise GPUUnavailable(f"{what} needs a CUDA GPU; running in CPU mode because {backend.reason}")
    return backend


def require_cupy(what: str):
    """The ``cupy`` module, for code that is about to use the GPU: :func:`require_gpu` first, so
    CPU mode (CuPy missing included) raises :class:`GPUUnavailable` naming ``what``, never an
    ImportError.  Every GPU path of the package gets CuPy from here."""
    session = EMULATED.get()
    if session is not None:
        return session.facade()
    require_gpu(what)
    import cupy

    return cupy


def today() -> str:
    """Today's date, ISO format (used in provenance labels and records)."""
    return _dt.date.today().isoformat()


def live_label() -> str:
    """Provenance of data measured now: ``"measured on NVIDIA L4 (sm_89) just now"`` (inside
    ``gpu_viz.emulator.emulated()``: the emulator's label; nothing is measured there)."""
    session = EMULATED.get()
    if session is not None:
        return session.label()
    backend = require_gpu("a live measurement")
    return f"measured on {backend.device_name} ({backend.sm}) just now, {today()}"


MODEL_LABEL = "CPU model, no GPU: computed in numpy, nothing was measured"


def provenance() -> str:
    """The label for data produced right now: live on a GPU, else the CPU model's label."""
    return live_label() if has_gpu() else MODEL_LABEL


def recorded_label(gpu: str, date: str, driver: Optional[str] = None) -> str:
    """Provenance of a recorded run: ``"recorded on NVIDIA H200, 2026-11-29, driver 580.65 (not live)"``
    (no driver part when the record has none)."""
    return f"recorded on {gpu}, {date}{f', driver {driver}' if driver else ''} (not live)"
