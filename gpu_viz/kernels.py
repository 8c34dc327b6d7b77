"""Load the CUDA C in ``kernels/``: NVRTC through CuPy for the live GPU, nvcc for the build checks.

Data path: ``kernels/<file>.cu`` --(:func:`load`, NVRTC, this device's arch)--> ``cupy.RawModule``
--(:func:`function`)--> a launchable kernel with its compiler attributes.

Conventions every ``.cu`` file follows (so both compilers accept it):
  * kernels are ``extern "C"`` or explicitly instantiated templates;
  * includes are ``<cuda_fp16.h>``, ``<cuda_bf16.h>`` and local headers (``"reduce.cuh"``);
  * regions shown on slides are fenced by ``// [region NAME]`` ... ``// [end NAME]`` lines.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import backend

_PKG = Path(__file__).resolve().parent


def _find_kernel_dir() -> Path:
    # editable install / source checkout: <repo>/kernels; wheel: gpu_viz/_kernels
    for candidate in (_PKG.parent / "kernels", _PKG / "_kernels"):
        if candidate.is_dir() and any(candidate.glob("*.cu*")):
            return candidate
    return _PKG.parent / "kernels"


KERNEL_DIR: Path = _find_kernel_dir()

#: Options every NVRTC compile gets.
BASE_OPTIONS: Tuple[str, ...] = ("-std=c++17",)


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
        super().__init__(f"{where}: {first.strip()}\n--- compiler log ---\n{log.strip()}")


def kernel_files() -> List[str]:
    """Names of the ``.cu`` files in ``kernels/``, sorted."""
    return sorted(p.name for p in KERNEL_DIR.glob("*.cu"))


def kernel_path(name: str) -> Path:
    """Path of ``kernels/<name>``.

    Raises:
        ValueError: ``name`` is not a bare file name (no paths: only ``kernels/`` is read).
        FileNotFoundError: naming the files that do exist.
    """
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ValueError(f"kernel file name must be a bare file name in {KERNEL_DIR} (e.g. 'rmsnorm.cu'), "
                         f"got {name!r}")
    path = KERNEL_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"kernel file {name!r} not found in {KERNEL_DIR}; available: {kernel_files()}")
    return path


def read_source(name: str) -> str:
    """The text of ``kernels/<name>``, exactly as on disk (what the slides show)."""
    return kernel_path(name).read_text()


@dataclasses.dataclass(frozen=True)
class Snippet:
    """A fenced region of a kernel file: ``text`` (dedented) starts at ``first_line`` (1-based)."""

    file: str
    region: str
    text: str
    first_line: int

    def line_of(self, needle: str) -> int:
        """1-based line number *within the snippet* of the first line containing ``needle``."""
        for i, line in enumerate(self.text.splitlines(), 1):
            if needle in line:
                return i
        raise ValueError(f"{needle!r} not found in region {self.region!r} of {self.file}")


_REGION = re.compile(r"//\s*\[region\s+([\w.-]+)\]")


def snippet(name: str, region: str) -> Snippet:
    """The region ``// [region <region>]`` ... ``// [end <region>]`` of ``kernels/<name>``.

    Raises:
        KeyError: naming the regions the file does define.
    """
    lines = read_source(name).splitlines()
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
    body = [ln for ln in lines[start:end] if not _REGION.search(ln) and "// [end " not in ln]
    return Snippet(file=name, region=region, text=textwrap.dedent("\n".join(body)), first_line=start + 1)


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
    import cupy

    code = read_source(name)
    opts = BASE_OPTIONS + (f"-I{KERNEL_DIR}", f"-DGPU_VIZ_HEADERS={_headers_digest()}") + options
    module = cupy.RawModule(code=code, options=opts,
                            name_expressions=list(name_expressions) or None)
    try:
        module.compile()
    except cupy.cuda.compiler.CompileException as exc:
        log = exc.get_message() if hasattr(exc, "get_message") else str(exc)
        _raise_compile_error(name, log)
    return module


def load(name: str, options: Sequence[str] = (), name_expressions: Iterable[str] = ()):
    """Compile ``kernels/<name>`` with NVRTC for the current GPU (cached per process).

    Args:
        name: file name in ``kernels/``, e.g. ``"rmsnorm.cu"``.
        options: extra NVRTC options, e.g. ``("--fmad=false", "-DBLOCK=256")``.
        name_expressions: template instantiations to fetch later, e.g. ``("k<float>",)``.

    Returns:
        ``cupy.RawModule``.

    Raises:
        GPUUnavailable: in CPU mode.
        FileNotFoundError: no such file.
        KernelCompileError: with the NVRTC log, file and line.
    """
    b = backend.require_gpu(f"compiling {name}")
    kernel_path(name)
    return _load_cached(name, tuple(options), tuple(name_expressions), b.compute_capability)


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


def function(name: str, kernel: str, options: Sequence[str] = (), name_expressions: Iterable[str] = ()):
    """The kernel ``kernel`` of ``kernels/<name>`` as a ``cupy.RawKernel``.

    Its ``num_regs``, ``local_size_bytes`` and ``shared_size_bytes`` are the compiler's;
    :class:`KernelAttributes` bundles them.  For a template, pass its instantiation both
    as ``kernel`` and in ``name_expressions``.
    """
    exprs = tuple(name_expressions)
    if "<" in kernel and kernel not in exprs:
        exprs = exprs + (kernel,)
    module = load(name, options, exprs)
    return module.get_function(kernel)


def attributes(name: str, kernel: str, options: Sequence[str] = ()) -> KernelAttributes:
    """:class:`KernelAttributes` of one kernel, compiled for this GPU."""
    return KernelAttributes.of(function(name, kernel, options))


# ---------------------------------------------------------------------------------------
# nvcc: the offline build check (no GPU needed), and the resource report the slides quote.

#: The architectures every kernel must build for: T4, L4, H100/H200.
ARCHES: Tuple[str, ...] = ("sm_75", "sm_89", "sm_90")


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


def nvcc_compile(name: str, arch: str, options: Sequence[str] = ()) -> List[PtxasUsage]:
    """Compile ``kernels/<name>`` with the local ``nvcc`` to a cubin for ``arch``; no GPU needed.

    Returns:
        one :class:`PtxasUsage` per kernel.

    Raises:
        FileNotFoundError: no ``nvcc`` on PATH.
        KernelCompileError: with nvcc's log, file and line.
    """
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FileNotFoundError("nvcc not found on PATH (install the CUDA toolkit)")
    src = kernel_path(name)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-std=c++17", "-Xptxas", "-v", f"-I{KERNEL_DIR}",
               *options, "-o", str(Path(tmp) / "out.cubin"), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        _raise_compile_error(name, log)
    return parse_ptxas(log)
