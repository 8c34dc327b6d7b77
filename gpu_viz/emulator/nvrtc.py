"""CUDA C -> PTX with NVRTC, with no GPU and no driver.

NVRTC is the ``libnvrtc`` shared library of the ``nvidia-cuda-nvrtc`` wheel (or a CUDA toolkit),
called through ``cuda-bindings`` (``cuda.bindings.nvrtc``) where that is installed, else through
ctypes (NVRTC's C API is eight functions; the package does not require ``cuda-bindings``, whose
major version must match the CUDA on the machine and which Colab pins for its own packages).  The CUDA headers (``cuda_fp16.h``, ``cuda_bf16.h``) come from
the ``nvidia-cuda-runtime`` / ``nvidia-cuda-cccl`` wheels or a CUDA toolkit.  The options are
the GPU path's (``gpu_viz.kernels.BASE_OPTIONS``, ``kernels/`` on the include path) plus
``-lineinfo``, which maps every PTX instruction to a line of the source.

A compile error is :class:`gpu_viz.kernels.KernelCompileError` carrying NVRTC's own log (an
intrinsic of a newer architecture than the one compiled for, such as ``__reduce_add_sync`` at the
default sm_75, gets a hint naming the architecture it needs: :func:`explain_log`).

Set ``GPU_VIZ_NO_EMULATOR=1`` to make the emulator behave as if NVRTC were not installed
(:func:`available` False, every compile :class:`NVRTCUnavailable`): CPU mode as a machine without
``gpu-viz[emulator]`` runs it, on a machine that has it.  The GPU path (CuPy's NVRTC) is unaffected.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

from ..cuda_headers import include_dirs  # noqa: F401  (the emulator's include path, found where kernels.gpu_options finds CCCL)

#: The architecture emulated when none is named: sm_75 (T4), the lowest this course supports.
DEFAULT_ARCH = "sm_75"
ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
#: Device intrinsics the CUDA headers declare only from an architecture on (NVRTC's error for them
#: below it is just 'identifier "..." is undefined'): name -> the oldest architecture that has them.
NEWER_INTRINSICS = {
    **{f"__reduce_{op}_sync": "sm_80" for op in ("add", "min", "max", "and", "or", "xor")},
    **{name: "sm_90" for name in ("__isClusterShared", "__cluster_query_shared_rank", "__cluster_barrier_arrive",
                                  "__cluster_barrier_wait", "__threadfence_cluster")},
}
_UNDEFINED = re.compile(r'identifier "(\w+)" is undefined')
#: Set (to anything but "" or "0"): the emulator reports NVRTC missing, as without gpu-viz[emulator].
NO_EMULATOR_ENV = "GPU_VIZ_NO_EMULATOR"
#: What to install for the emulator: every "needs NVRTC" message names it.
INSTALL = "pip install 'gpu-viz[emulator]'"


class NVRTCUnavailable(RuntimeError):
    """NVRTC (or the CUDA headers) cannot be found: says what to install."""


@functools.lru_cache(maxsize=1)
def _libnvrtc():
    """libnvrtc through ctypes: the wheel's (site-packages/nvidia/*/lib), a toolkit's, or the loader's."""
    import ctypes
    import ctypes.util

    paths = []
    for sp in sys.path:
        paths += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib", "libnvrtc.so*")), reverse=True)
        paths += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "bin", "nvrtc64_*.dll")), reverse=True)
    paths += sorted(glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*"), reverse=True)
    found = ctypes.util.find_library("nvrtc")
    if found:
        paths.append(found)
    for p in paths:
        if "builtins" in os.path.basename(p) or ".alt." in os.path.basename(p):
            continue
        try:
            # libnvrtc dlopens libnvrtc-builtins by name: load the one beside it first, globally
            for b in sorted(glob.glob(os.path.join(os.path.dirname(p), "libnvrtc-builtins.so*"))):
                if ".alt." not in b:
                    ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
            lib = ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
            lib.nvrtcVersion
            return lib
        except OSError:
            continue
    return None


class _CtypesNVRTC:
    """The eight NVRTC calls the emulator needs, over ctypes."""

    def __init__(self, lib):
        import ctypes

        self.c = ctypes
        self.lib = lib

    def version(self):
        c = self.c
        major, minor = c.c_int(), c.c_int()
        self.lib.nvrtcVersion(c.byref(major), c.byref(minor))
        return major.value, minor.value

    def compile(self, source: str, name: str, opts: List[str]) -> Tuple[int, str, str]:
        c = self.c
        lib = self.lib
        prog = c.c_void_p()
        rc = lib.nvrtcCreateProgram(c.byref(prog), source.encode(), name.encode(), 0, None, None)
        if rc != 0:
            raise NVRTCUnavailable(f"nvrtcCreateProgram failed ({rc})")
        try:
            arr = (c.c_char_p * len(opts))(*[o.encode() for o in opts])
            rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
            n = c.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, c.byref(n))
            buf = c.create_string_buffer(n.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode("utf-8", "replace")
            ptx = ""
            if rc == 0:
                lib.nvrtcGetPTXSize(prog, c.byref(n))
                pbuf = c.create_string_buffer(n.value)
                lib.nvrtcGetPTX(prog, pbuf)
                ptx = pbuf.value.decode("utf-8", "replace")
            return rc, log, ptx
        finally:
            lib.nvrtcDestroyProgram(c.byref(prog))


def switched_off() -> bool:
    """True when ``GPU_VIZ_NO_EMULATOR`` asks the emulator to act as if NVRTC were not installed."""
    return os.environ.get(NO_EMULATOR_ENV, "").strip() not in ("", "0")


def _binding():
    """('bindings' | 'ctypes', binding): whichever NVRTC binding loads.

    Raises:
        NVRTCUnavailable: none loads, or ``GPU_VIZ_NO_EMULATOR`` is set.
    """
    if switched_off():
        raise NVRTCUnavailable(
            f"NVRTC is switched off by {NO_EMULATOR_ENV}={os.environ[NO_EMULATOR_ENV]} (as if it were not "
            f"installed), so kernels cannot be compiled for the emulator: unset it, or elsewhere {INSTALL}")
    try:
        from cuda.bindings import nvrtc as b  # type: ignore

        err, major, minor = b.nvrtcVersion()
        if int(err) == 0:
            return "bindings", b
    except Exception:  # noqa: BLE001  (not installed, or libnvrtc missing)
        pass
    lib = _libnvrtc()
    if lib is not None:
        return "ctypes", _CtypesNVRTC(lib)
    raise NVRTCUnavailable(
        "NVRTC is not available, so kernels cannot be compiled for the emulator: "
        f"{INSTALL} (nvidia-cuda-nvrtc and the CUDA headers; Colab has them), then restart the kernel")


def not_shown(what: str, otherwise: str = "") -> str:
    """Markdown for a learner where a cell shows nothing because the emulator cannot compile:
    ``what`` (a noun phrase, "the emulator's count of each pattern's sectors") is not shown, why,
    what to install, then ``otherwise`` (another way to see it, "or run on a GPU"), if given.

    Raises:
        TypeError: ``what`` or ``otherwise`` is not a string.  ValueError: ``what`` is empty.
    """
    if not isinstance(what, str) or not isinstance(otherwise, str):
        raise TypeError(f"what and otherwise must be strings, got {type(what).__name__} and "
                        f"{type(otherwise).__name__}")
    if not what.strip():
        raise ValueError("what must say what is not shown, got an empty string")
    why = (f"NVRTC is switched off here ({NO_EMULATOR_ENV} is set, as on a machine without it)" if switched_off()
           else "NVRTC, the CUDA compiler the emulator needs, is not installed")
    return (f"**Not shown here: {what}.** It comes from the course's emulator (the kernel's own PTX, run on "
            f"the CPU), and {why}. To see it: `{INSTALL}`, then restart the kernel (Colab has NVRTC "
            f"already){', ' + otherwise if otherwise else ''}.")


def version() -> Tuple[int, int]:
    kind, b = _binding()
    if kind == "bindings":
        _, major, minor = b.nvrtcVersion()
        return int(major), int(minor)
    return b.version()


def available() -> bool:
    """True when NVRTC loads (and ``GPU_VIZ_NO_EMULATOR`` is not set): the emulator can compile kernels."""
    try:
        _binding()
        return True
    except NVRTCUnavailable:
        return False


def explain_log(log: str, arch: str) -> str:
    """NVRTC's ``log`` with a hint after each 'identifier "X" is undefined' whose X is an intrinsic
    of a newer architecture than ``arch`` (:data:`NEWER_INTRINSICS`): which one, and how to ask
    for it."""
    def hint(m: "re.Match") -> str:
        need = NEWER_INTRINSICS.get(m.group(1))
        if need is None or int(need[3:]) <= int(arch[3:]):
            return m.group(0)
        return (f"{m.group(0)} ({m.group(1)} needs {need} or newer, this compile is for {arch}: compile for "
                f"arch='{need}')")
    return _UNDEFINED.sub(hint, log)


def compile_ptx(source: str, name: str, options: Sequence[str] = (), arch: str = DEFAULT_ARCH,
                include: Sequence[str] = ()) -> Tuple[str, str]:
    """Compile CUDA C ``source`` (file name ``name`` in messages) to PTX for ``arch``.

    Returns:
        (ptx, log).

    Raises:
        TypeError / ValueError: ``source`` not a string, ``arch`` not like "sm_80".
        NVRTCUnavailable: no NVRTC.  gpu_viz.kernels.KernelCompileError: NVRTC's errors.
    """
    from ..kernels import KernelCompileError, _LOG_LINE

    if not isinstance(source, str):
        raise TypeError(f"source must be a string of CUDA C, got {type(source).__name__}")
    if not isinstance(arch, str) or not arch.startswith("sm_") or not arch[3:].isdigit():
        raise ValueError(f"arch must be like 'sm_80', got {arch!r}")
    opts = [f"-arch=compute_{arch[3:]}", "-lineinfo", *options]
    for d in (*include, *include_dirs()):
        opts.append(f"-I{d}")
    kind, b = _binding()
    if kind == "ctypes":
        rc, log, ptx = b.compile(source, name, opts)
        if rc != 0:
            m = _LOG_LINE.search(log)
            raise KernelCompileError(name, int(m.group(2)) if m else None, explain_log(log, arch))
        return ptx, log
    if kind == "bindings":
        err, prog = b.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
        try:
            enc = [o.encode() for o in opts]
            (err,) = b.nvrtcCompileProgram(prog, len(enc), enc)
            _, n = b.nvrtcGetProgramLogSize(prog)
            buf = b" " * n
            b.nvrtcGetProgramLog(prog, buf)
            log = buf.rstrip(b"\0").decode("utf-8", "replace")
            if int(err) != 0:
                m = _LOG_LINE.search(log)
                raise KernelCompileError(name, int(m.group(2)) if m else None, explain_log(log, arch))
            _, n = b.nvrtcGetPTXSize(prog)
            ptx = b" " * n
            b.nvrtcGetPTX(prog, ptx)
        finally:
            b.nvrtcDestroyProgram(prog)
        return ptx.rstrip(b"\0").decode("utf-8", "replace"), log


def kernel_dir() -> Path:
    from ..kernels import KERNEL_DIR

    return KERNEL_DIR
