"""Load the CUDA C in ``kernels/``: NVRTC through CuPy for the live GPU, nvcc for the build checks.

Data path: ``kernels/<file>.cu`` --(:func:`load`, NVRTC, this device's arch)--> ``cupy.RawModule``
--(:func:`function`)--> a launchable kernel with its compiler attributes.  A lesson's traced
build is the same file compiled with ``traced=True`` (``-DGPU_VIZ_TRACE --fmad=false``,
``kernels/trace.cuh``): its ``TRACE(...)`` lines write into the record buffers that
:func:`bind_record` hands it.

Conventions every ``.cu`` file follows (so both compilers accept it):
  * kernels are ``extern "C"`` or explicitly instantiated templates;
  * includes are ``<cuda_fp16.h>``, ``<cuda_bf16.h>`` and local headers (``"reduce.cuh"``);
  * regions shown on slides are fenced by ``// [region NAME]`` ... ``// [end NAME]`` lines;
    :func:`snippet` drops the ``TRACE(...);`` lines from the text it shows (the taught kernel),
    ``Snippet.traced_text`` keeps them.
"""
from __future__ import annotations

import dataclasses
import functools
import glob
import hashlib
import os
import re
import shutil
import sys
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import backend
from .data import course_dir

KERNEL_DIR: Path = course_dir("kernels", "_kernels")

#: Options every NVRTC compile gets.  ``-default-device``: a function without an execution-space
#: annotation is a __device__ function -- what nvcc makes of a lambda inside a kernel, and what
#: NVRTC 13.2 does unasked, but older NVRTCs (CUDA 12 on Colab, 13.0) reject such a lambda
#: ("host functions are not allowed in JIT mode"); kernels/rmsnorm_fused.cu has three.
#: ``-ftz=true``: CuPy appends it to every NVRTC compile it makes (cupy/cuda/compiler.py; a later
#: ``-ftz=false`` cannot undo it), so the kernels on the GPU flush float32 subnormals to zero; the
#: emulator's PTX and the SASS the lessons show are compiled the same way, so they describe the code
#: the GPU runs (on an H200, emulated == silicon differed at every subnormal without it).
BASE_OPTIONS: Tuple[str, ...] = ("-std=c++17", "-default-device", "-ftz=true")


def gpu_options() -> Tuple[str, ...]:
    """:data:`BASE_OPTIONS` plus the include folder of CCCL (``nv/target``, which CUDA 13's
    ``cooperative_groups.h`` includes) when the CUDA headers of CuPy's own CUDA major keep it apart
    in ``include/cccl``, where NVRTC under CuPy does not look: the options every CuPy compile of the
    course uses (its kernels, a learner's kernel, the tests' comparisons).  Headers of another CUDA
    major are never added; in CPU mode (or inside the emulator's stand-in for CuPy) nothing is."""
    if backend.EMULATED.get() is not None or not backend.has_gpu():
        return BASE_OPTIONS
    return BASE_OPTIONS + _cccl_option()


@functools.lru_cache(maxsize=1)
def _cccl_option() -> Tuple[str, ...]:
    """``("-I<cccl>",)`` for the real CuPy's CUDA major, or ``()`` (asked on a GPU only, so the
    answer cached is the GPU's)."""
    from .cuda_headers import cccl_dir

    major = (backend.runtime_cuda_version(backend.require_cupy("the GPU compile options")) or 0) // 1000
    found = cccl_dir(major) if major else None
    return (f"-I{found}",) if found else ()


#: What makes a build the traced build (kernels/trace.cuh): records on, no FMA contraction.
TRACED_OPTIONS: Tuple[str, ...] = ("-DGPU_VIZ_TRACE", "--fmad=false")


class KernelCompileError(RuntimeError):
    """A kernel file failed to compile.

    Attributes:
        file: the ``.cu``/``.cuh`` file the first error points into.
        line: its 1-based line number (``None`` if the log names none).
        log: the compiler's full log.
    """

    def __init__(self, file: str, line: Optional[int], log: str):
        self.file, self.line, self.log = file, line, log
        where = f"{file}:{line}" if line else file
        first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:300])
        first = re.sub(r"^[^\s()]+\(\d+\):\s*", "", first.strip())   # "where" already says file(line)
        super().__init__(f"{where}: {first}\n--- compiler log ---\n{log.strip()}")


def kernel_files() -> List[str]:
    """Names of the ``.cu`` files in ``kernels/``, sorted."""
    return sorted(p.name for p in KERNEL_DIR.glob("*.cu"))


def find_tool(name: str) -> Optional[str]:
    """A CUDA binary utility (nvcc, cuobjdump, nvdisasm): on PATH, else from the pip wheels
    (``site-packages/nvidia/*/bin``)."""
    path = shutil.which(name)
    if path:
        return path
    for sp in sys.path:
        for hit in sorted(glob.glob(os.path.join(sp, "nvidia", "**", "bin", name), recursive=True)):
            if os.access(hit, os.X_OK):
                return hit
    return None


def kernel_path(name: str) -> Path:
    """Path of ``kernels/<name>``.

    Raises:
        ValueError: ``name`` is not a bare file name (no paths: only ``kernels/`` is read).
        FileNotFoundError: naming the files that do exist.
    """
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ValueError(f"kernel file name must be a bare file name in {KERNEL_DIR} (e.g. 'rmsnorm_deck.cu'), "
                         f"got {name!r}")
    path = KERNEL_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"kernel file {name!r} not found in {KERNEL_DIR}; available: {kernel_files()}")
    return path


def read_source(name: str) -> str:
    """The text of ``kernels/<name>``, exactly as on disk (what the slides show)."""
    return kernel_path(name).read_text(encoding="utf-8")


@dataclasses.dataclass(frozen=True)
class Snippet:
    """Fenced regions of a kernel file, as the slides show them.

    Attributes:
        file: the file in ``kernels/``.  region: the region name (several joined by ``+``).
        text: the taught code (dedented; ``TRACE(...);`` lines dropped).
        traced_text: the same with the traced build's ``TRACE`` lines.
        first_line: 1-based line in the file where the (first) region's code starts.
    """

    file: str
    region: str
    text: str
    first_line: int
    traced_text: str = ""

    def line_of(self, needle: str) -> int:
        """1-based line number *within* ``text`` of the first line containing ``needle``.

        Raises:
            ValueError: no line contains it.
        """
        for i, line in enumerate(self.text.splitlines(), 1):
            if needle in line:
                return i
        raise ValueError(f"{needle!r} not found in region {self.region!r} of {self.file}")

    def lines_of(self, needles: Sequence[str]) -> List[int]:
        """:meth:`line_of` for each needle."""
        return [self.line_of(nd) for nd in needles]


_REGION = re.compile(r"//\s*\[region\s+([\w.-]+)\]")
_TRACE_LINE = re.compile(r"^\s*TRACE\w*\(.*\);?\s*$")  # TRACE(...); and the TRACE_* hooks


def _region_lines(name: str, lines: List[str], region: str) -> Tuple[List[str], int]:
    start = end = None
    for i, line in enumerate(lines):
        m = _REGION.search(line)
        if m and m.group(1) == region:
            start = i + 1
        elif start is not None and re.search(rf"//\s*\[end\s+{re.escape(region)}\]", line):
            end = i
            break
    if start is None or end is None:
        regions = [m.group(1) for m in map(_REGION.search, lines) if m]
        raise KeyError(f"region {region!r} not found (or not closed) in {name}; regions: {regions}")
    return [ln for ln in lines[start:end] if not _REGION.search(ln) and "// [end " not in ln], start + 1


def snippet(name: str, *regions: str) -> Snippet:
    """The region(s) ``// [region R]`` ... ``// [end R]`` of ``kernels/<name>``, joined by a blank
    line when several are given (e.g. the four phases of the deck's kernel, in order); a region
    written ``"other.cuh:R"`` is taken from that file of ``kernels/``.

    Raises:
        KeyError: naming the regions the file does define.  ValueError: no region given.
    """
    if not regions:
        raise ValueError("snippet: name at least one region")
    traced, taught, first = [], [], None
    for k, region in enumerate(regions):
        file, _, reg = region.rpartition(":")
        file = file or name
        body, start = _region_lines(file, read_source(file).splitlines(), reg)
        first = start if first is None else first  # the first region's line in its file
        block = textwrap.dedent("\n".join(body)).splitlines()
        sep = [""] if k else []
        traced += sep + block
        taught += sep + [ln for ln in block if not _TRACE_LINE.match(ln)]
    return Snippet(file=name, region="+".join(regions), text="\n".join(taught), first_line=first,
                   traced_text="\n".join(traced))


def _headers_digest() -> str:
    # CuPy's on-disk cache keys on the main source and the options, not on included
    # headers: fold every local header's content into a -D so an edit recompiles.
    h = hashlib.sha1()
    for p in sorted(KERNEL_DIR.glob("*.cuh")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


_LOG_LINE = re.compile(r"([^\s()]+?)\((\d+)\):\s*(?:catastrophic )?error")


def _raise_compile_error(name: str, log: str):
    m = _LOG_LINE.search(log)
    file, line = name, None
    if m:
        line = int(m.group(2))
        reported = Path(m.group(1)).name
        if (KERNEL_DIR / reported).is_file() and reported != name:
            file = reported
    raise KernelCompileError(file, line, log)


@functools.lru_cache(maxsize=None)
def _load_cached(name: str, options: Tuple[str, ...], name_expressions: Tuple[str, ...], cc):
    cupy = backend.require_cupy(f"compiling {name}")

    code = read_source(name)
    opts = gpu_options() + (f"-I{KERNEL_DIR}", f"-DGPU_VIZ_HEADERS={_headers_digest()}") + options
    module = cupy.RawModule(code=code, options=opts,
                            name_expressions=list(name_expressions) or None)
    try:
        module.compile()
    except cupy.cuda.compiler.CompileException as exc:
        log = exc.get_message() if hasattr(exc, "get_message") else str(exc)
        _raise_compile_error(name, log)
    return module


def load(name: str, options: Sequence[str] = (), name_expressions: Iterable[str] = (), traced: bool = False):
    """Compile ``kernels/<name>`` with NVRTC for the current GPU (cached per process).

    Args:
        name: file name in ``kernels/``, e.g. ``"rmsnorm_deck.cu"``.
        options: extra NVRTC options, e.g. ``("-DBLOCK=256",)``.
        name_expressions: template instantiations to fetch later, e.g. ``("k<float>",)``.
        traced: the traced build (:data:`TRACED_OPTIONS` added).

    Returns:
        ``cupy.RawModule``.

    Raises:
        GPUUnavailable: in CPU mode.
        FileNotFoundError: no such file.
        KernelCompileError: with the NVRTC log, file and line.
    """
    session = backend.EMULATED.get()
    if session is not None:
        return session.load(name, options, traced)
    b = backend.require_gpu(f"compiling {name}")
    kernel_path(name)
    options = (TRACED_OPTIONS if traced else ()) + tuple(options)
    return _load_cached(name, options, tuple(name_expressions), b.compute_capability)


@dataclasses.dataclass(frozen=True)
class KernelAttributes:
    """What the compiler decided for one kernel (``cudaFuncGetAttributes``)."""

    num_regs: int
    local_size_bytes: int
    shared_size_bytes: int
    const_size_bytes: int
    max_threads_per_block: int

    @classmethod
    def of(cls, raw_kernel) -> "KernelAttributes":
        return cls(num_regs=raw_kernel.num_regs, local_size_bytes=raw_kernel.local_size_bytes,
                   shared_size_bytes=raw_kernel.shared_size_bytes,
                   const_size_bytes=raw_kernel.const_size_bytes,
                   max_threads_per_block=raw_kernel.max_threads_per_block)


def function(name: str, kernel: str, options: Sequence[str] = (), name_expressions: Iterable[str] = (),
             traced: bool = False, device: Optional[int] = None):
    """The kernel ``kernel`` of ``kernels/<name>`` as a ``cupy.RawKernel`` for CUDA device
    ``device`` (default: the current one); cached, so a hot launch path may call this on every
    launch.

    Its ``num_regs``, ``local_size_bytes`` and ``shared_size_bytes`` are the compiler's;
    :class:`KernelAttributes` bundles them.  For a template, pass its instantiation both
    as ``kernel`` and in ``name_expressions``.
    """
    session = backend.EMULATED.get()
    if session is not None:
        return session.function(name, kernel, options, traced)
    exprs = tuple(name_expressions)
    if "<" in kernel and kernel not in exprs:
        exprs = exprs + (kernel,)
    if device is None:
        device = backend.require_cupy(f"compiling {name}").cuda.runtime.getDevice()
    return _function_cached(name, kernel, tuple(options), exprs, bool(traced), int(device))


@functools.lru_cache(maxsize=None)
def _function_cached(name, kernel, options, exprs, traced, device):
    cupy = backend.require_cupy(f"loading {kernel}")  # CPU mode raises here, never cached

    with cupy.cuda.Device(device):
        return load(name, options, exprs, traced=traced).get_function(kernel)


def bind_record(mod, fields: Sequence[Tuple[str, object]], symbol: str = "rec") -> None:
    """Fill the traced build's ``__device__`` record struct ``symbol`` (kernels/trace.cuh).

    Args:
        mod: the traced module (:func:`load` with ``traced=True``), on the current device.
        fields: ``(name, value)`` in the struct's declaration order; a value is a CuPy array
            (its device pointer is stored) or an int (a flag); every field is 8 bytes.

    Raises:
        ValueError: the struct's size in the module differs from ``8 * len(fields)`` (the Python
            producer and the .cu file disagree on the layout).
    """
    session = backend.EMULATED.get()
    if session is not None:
        return session.bind_record(mod, fields, symbol)
    cupy = backend.require_cupy("a traced launch")
    words = np.array([int(v.data.ptr) if hasattr(v, "data") else int(v) for _, v in fields], dtype=np.uint64)
    ptr = mod.get_global(symbol)
    size = _global_size(mod, symbol)
    if size is not None and size != words.nbytes:
        raise ValueError(f"record struct {symbol!r} is {size} bytes in the module, but the producer gives "
                         f"{len(fields)} fields ({[n for n, _ in fields]}) = {words.nbytes} bytes")
    stream = cupy.cuda.get_current_stream()
    ptr.copy_from_host_async(words.ctypes.data, words.nbytes, stream)  # ordered before the launch
    stream.synchronize()  # `words` is host memory that goes away on return


def _global_size(mod, symbol: str) -> Optional[int]:
    """Bytes of the ``__device__`` variable ``symbol`` of a loaded module (``cuModuleGetGlobal``;
    CuPy's ``get_global`` does not keep it); None where the driver library cannot be asked."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        dptr, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
        rc = lib.cuModuleGetGlobal_v2(ctypes.byref(dptr), ctypes.byref(size), ctypes.c_void_p(mod.module.ptr),
                                      symbol.encode())
    except (OSError, AttributeError):
        return None
    return int(size.value) if rc == 0 else None


def attributes(name: str, kernel: str, options: Sequence[str] = ()) -> KernelAttributes:
    """:class:`KernelAttributes` of one kernel, compiled for this GPU."""
    return KernelAttributes.of(function(name, kernel, options))


# ---------------------------------------------------------------------------------------
# nvcc: the offline build check (no GPU needed), and the resource report the slides quote.

#: The architectures every kernel must build for: T4, A100, L4, H100/H200.
ARCHES: Tuple[str, ...] = ("sm_75", "sm_80", "sm_89", "sm_90")


def has_traced_build(name: str) -> bool:
    """Whether ``kernels/<name>`` has a traced build (it uses ``GPU_VIZ_TRACE``)."""
    return "GPU_VIZ_TRACE" in read_source(name)


@dataclasses.dataclass(frozen=True)
class PtxasUsage:
    """``nvcc -Xptxas -v`` for one kernel on one architecture."""

    kernel: str
    arch: str
    registers: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    stack_frame_bytes: int
    shared_bytes: int


_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+a?)'")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(log: str) -> List[PtxasUsage]:
    """Parse ``-Xptxas -v`` output into one :class:`PtxasUsage` per kernel."""
    rows, current, arch, frame = [], None, None, (0, 0, 0)
    for line in log.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            current, arch, frame = m.group(1), m.group(2), (0, 0, 0)
            continue
        m = _PTXAS_FRAME.search(line)
        if m and current:
            frame = tuple(int(g) for g in m.groups())
            continue
        m = _PTXAS_USED.search(line)
        if m and current:
            rows.append(PtxasUsage(kernel=current, arch=arch, registers=int(m.group(1)),
                                   stack_frame_bytes=frame[0], spill_stores_bytes=frame[1],
                                   spill_loads_bytes=frame[2], shared_bytes=int(m.group(2) or 0)))
            current = None
    return rows


def nvcc_compile(name: str, arch: str, options: Sequence[str] = (), traced: bool = False,
                 cubin: Optional[Path] = None) -> List[PtxasUsage]:
    """Compile ``kernels/<name>`` with the local ``nvcc`` to a cubin for ``arch``; no GPU needed.
    ``traced``: the traced build (:data:`TRACED_OPTIONS`); ``cubin``: where to keep the cubin
    (default: a temporary file, removed).

    Returns:
        one :class:`PtxasUsage` per kernel.

    Raises:
        FileNotFoundError: no ``nvcc`` on PATH.
        KernelCompileError: with nvcc's log, file and line.
    """
    nvcc = find_tool("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH or in the pip wheels (install the CUDA toolkit, "
                                "or pip install nvidia-cuda-nvcc)")
    src = kernel_path(name)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(cubin) if cubin is not None else Path(tmp) / "out.cubin"
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v", f"-I{KERNEL_DIR}",
               *(TRACED_OPTIONS if traced else ()), *options, "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace")
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        _raise_compile_error(name, log)
    return parse_ptxas(log)
