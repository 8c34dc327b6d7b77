"""Production fused ops: RMSNorm and RMSNorm + SiLU gate, one kernel each (``kernels/rmsnorm_fused.cu``).
Public as ``gpu_viz.ops``.

    rmsnorm(x, weight, eps)            y = x * w * rsqrt(mean(x^2) + eps)
    rmsnorm_gate(x, gate, weight, eps) y = x * w * silu(g) * rsqrt(mean(x^2) + eps)   (statistic from x)

Layers, thinnest first (Liger's shape: kernel, launcher, public op, autograd):

* ``kernels/rmsnorm_fused.cu`` -- the kernels: ``warp`` (one warp per row; chosen for N <= 256 on
  the 16-byte path, N <= 1024 on the scalar path), ``block`` (one block per row, the row in
  registers, N <= 16384; on the 16-byte path one vector per thread for rows under 8 KB, two or
  more per thread in blocks of <= 512 for longer rows), ``wide`` (any N, re-reads the row); a
  16-byte vector path and a scalar path for misaligned views, odd N and odd row strides.
* :func:`launch_config` -- which kernel, block size and grid a shape gets (pure Python).
* :func:`_launch` -- validates pointers/alignment, picks the kernel, launches it with CuPy on
  the caller's current stream.
* :func:`rmsnorm`, :func:`rmsnorm_gate` -- the public ops, for torch CUDA tensors and CuPy
  arrays (the result has the input's type).  On torch they go through the custom ops
  ``torch.ops.gpu_viz.rmsnorm`` / ``torch.ops.gpu_viz.rmsnorm_gate`` (``torch.library.custom_op``
  with ``register_fake`` and ``register_autograd``), so ``torch.compile(fullgraph=True)`` and
  CUDA-graph capture accept them and autograd differentiates x, weight and gate.
* the float64 reference is :mod:`gpu_viz.rmsnorm.reference`, the tolerances
  :mod:`gpu_viz.rmsnorm.tolerances` (``gpu_viz.ops`` re-exports both under their public names).
* :func:`kernel_report` -- registers / spills of every kernel (ptxas for sm_75/89/90, or the
  live device's ``cudaFuncGetAttributes``).

* :class:`FusedRMSNorm`, :class:`FusedRMSNormGate` -- ``nn.Module`` wrappers holding the weight.

Names used by the benchmarks and the notebook (keep stable): ``rmsnorm``, ``rmsnorm_gate``,
``launch_config``, ``kernel_report``, ``bytes_moved``.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend, kernels
from .. import device as _device
from ..arrays import framework as _framework
from ..arrays import launch
from ..check import check_int as _check_int
from .dtypes import DTYPES, OPS, dtype_name
from .reference import check_eps as _check_eps

try:  # torch is optional for the package: without it the ops take CuPy arrays only
    import torch
except ImportError:  # pragma: no cover - the course environment has torch
    torch = None

FILE = "rmsnorm_fused.cu"

# ---------------------------------------------------------------------------------------
# launch configuration (named constants; must match the DEF_* macros of the kernel file)

#: One warp per row up to this row length (32 lanes x the largest EPT).
WARP_ROW_MAX_N = 1024
#: Rows (warps) per block in the ``warp`` variant: 128 threads.
WARP_ROWS_PER_BLOCK = 4
#: Elements per thread kept in registers (template parameter EPT).
EPT_CHOICES: Tuple[int, ...] = (8, 16, 32)
#: The scalar path's ``block`` variant only exists at EPT 8 (EPT 16/32 would spill there).
SCALAR_BLOCK_EPT: Tuple[int, ...] = (8,)
#: ``block`` variant, rows shorter than MULTI_VECTOR_ROW_BYTES (and the scalar path): the
#: smallest EPT whose block is at most this many threads wins -- on the 16-byte path one vector
#: per thread, block = N / 8 (fp16/bf16): the shortest latency for short rows.
BLOCK_TARGET_THREADS = 1024
#: 16-byte path, rows of at least this many bytes (fp16 N >= 4096, fp32 N >= 2048): the smallest
#: EPT giving each thread at least MULTI_VECTOR_BYTES_PER_THREAD (two 16-byte loads in flight)
#: within MULTI_VECTOR_TARGET_THREADS threads: fp16 N=4096 -> 256 x EPT 16, 8192 -> 512 x
#: EPT 16, 16384 -> 512 x EPT 32.  The bytes counted are every input's (x, and the gate's for
#: rmsnorm_gate): the gate at fp16 N=4096 gets 512 x EPT 8 (one vector of x and one of gate per
#: thread).  Problems whose x, gate and y fit in L2 (:func:`fits_l2`) get one vector per thread
#: instead, where that block has at most BLOCK_TARGET_THREADS (fp16/bf16 N <= 8192: where it was
#: measured; fp32 and N=16384 keep the rule above).  The measurements behind each choice are in
#: benchmarks/NOTES.md (the H200 runs of 2026-11-29).
MULTI_VECTOR_ROW_BYTES = 8192
MULTI_VECTOR_BYTES_PER_THREAD = 32
MULTI_VECTOR_TARGET_THREADS = 512
#: 16-byte path: one warp per row only while the row fits in one EPT-8 chunk per lane
#: (N <= 256); longer rows (e.g. 768) get a ``block`` of N / 8 threads (96 = 3 warps) rather
#: than a warp padded to EPT 32 (many more registers, lower occupancy).
WARP_ROW_MAX_N_VECTOR = 32 * 8
#: ... within the kernel's ``__launch_bounds__`` (BLOCK_MAX_THREADS(EPT) in the .cu file, from here).
BLOCK_MAX_THREADS: Dict[int, int] = {8: 1024, 16: 1024, 32: 512}
#: Rows longer than the register-resident limit go to ``wide``: 1024 threads, two passes.
WIDE_THREADS = 1024
#: The kernel file's launch-shape macros, from the constants above (-D; its #ifndef defaults match).
LAUNCH_DEFINES: Tuple[str, ...] = (
    f"-DWARP_BLOCK_THREADS={32 * WARP_ROWS_PER_BLOCK}", f"-DWIDE_THREADS={WIDE_THREADS}",
    *(f"-DBLOCK_MAX_THREADS_E{e}={t}" for e, t in sorted(BLOCK_MAX_THREADS.items())))
#: gridDim.x limit.
MAX_GRID_X = 2**31 - 1
#: Row length limit (the kernels index a row with int).
MAX_N = 2**31 - 1

WARP, BLOCK, WIDE = "warp", "block", "wide"

def kernel_name(op: str, variant: str, dtype, vec: int, ept: Optional[int] = None) -> str:
    """The kernel's extern "C" name, e.g. ``rmsnorm_gate_block_f16_v8_e16``."""
    suffix = DTYPES[dtype_name(dtype)][0]
    name = f"{op}_{variant}_{suffix}_v{vec}"
    return name if variant == WIDE else f"{name}_e{ept}"


def kernel_names() -> List[str]:
    """Every kernel the file defines (as its DEF_SCALAR / DEF_VECTOR macros instantiate them)."""
    return list(_kernel_name_list())


@functools.lru_cache(maxsize=None)
def _kernel_names() -> "frozenset[str]":
    return frozenset(_kernel_name_list())


@functools.lru_cache(maxsize=None)
def _kernel_name_list() -> Tuple[str, ...]:
    names = []
    for dt, (_, _, vec16, _) in DTYPES.items():
        for op in OPS:
            for vec in (1, vec16):
                names += [kernel_name(op, WARP, dt, vec, e) for e in EPT_CHOICES]
                blocks = SCALAR_BLOCK_EPT if vec == 1 else EPT_CHOICES
                names += [kernel_name(op, BLOCK, dt, vec, e) for e in blocks]
                names.append(kernel_name(op, WIDE, dt, vec))
    return tuple(names)


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """One launch: ``kernel`` with ``grid`` x ``block`` threads (1-D).

    ``capacity`` is the longest row the variant holds in registers (``None`` for ``wide``,
    which takes any N); ``rows_per_block`` is 4 for ``warp``, 1 otherwise.
    """

    op: str
    variant: str
    kernel: str
    dtype: str
    M: int
    N: int
    vec: int
    ept: Optional[int]
    block: int
    rows_per_block: int
    grid: int
    capacity: Optional[int]

    def as_dict(self) -> Dict:
        return dataclasses.asdict(self)


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


def choose_config(M: int, N: int, dtype, *, gate: bool = False, vectorized: Optional[bool] = None,
                  fits_l2: bool = False) -> LaunchConfig:
    """The :class:`LaunchConfig` for an (M, N) problem; see :func:`launch_config`.  A pure
    function: ``fits_l2`` is given (the op passes :func:`fits_l2` for its device)."""
    M = _check_int("M", M, 0, MAX_GRID_X * WARP_ROWS_PER_BLOCK)
    N = _check_int("N", N, 1, MAX_N)
    if vectorized is not None:
        vectorized = _check_bool("vectorized", vectorized, "or None (decide from N)")
    fits_l2 = _check_bool("fits_l2", fits_l2, "(see gpu_viz.ops.fits_l2; launch_config takes None "
                          "for the current GPU)")
    return _choose_config(M, N, dtype_name(dtype), _check_bool("gate", gate), vectorized, fits_l2)


def _check_bool(name: str, value, more: str = "") -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool{' ' + more if more else ''}, got {type(value).__name__} {value!r}")
    return bool(value)


@functools.lru_cache(maxsize=4096)  # on every call's path; a pure function of its arguments
def _choose_config(M: int, N: int, dt: str, gate: bool, vectorized: Optional[bool],
                   fits_l2: bool = False) -> LaunchConfig:
    vec16 = DTYPES[dt][2]
    if vectorized is None:
        vectorized = N % vec16 == 0
    elif vectorized and N % vec16:
        raise ValueError(f"vectorized=True needs N % {vec16} == 0 for {dt} (16-byte loads); got N={N}")
    vec = vec16 if vectorized else 1
    op = "rmsnorm_gate" if gate else "rmsnorm"
    if N <= (WARP_ROW_MAX_N_VECTOR if vec > 1 else WARP_ROW_MAX_N):
        ept = min(e for e in EPT_CHOICES if 32 * e >= N)
        return LaunchConfig(op, WARP, kernel_name(op, WARP, dt, vec, ept), dt, M, N, vec, ept,
                            block=32 * WARP_ROWS_PER_BLOCK, rows_per_block=WARP_ROWS_PER_BLOCK,
                            grid=-(-M // WARP_ROWS_PER_BLOCK), capacity=32 * ept)
    epts = EPT_CHOICES if vec > 1 else SCALAR_BLOCK_EPT
    if M > MAX_GRID_X:
        raise ValueError(f"M={M} rows exceeds gridDim.x={MAX_GRID_X} for N={N} > {WARP_ROW_MAX_N} "
                         "(one block per row)")
    nvec = N // vec
    size = DTYPES[dt][1]
    # x, gate, y in L2: one 16-byte vector per thread where such a block exists (fp16/bf16,
    # N <= 8192), else the rule below (fp32 has no EPT-4 kernel; N=16384 would need 2048 threads)
    one_vector = vec in epts and _round_up(nvec, 32) <= min(BLOCK_TARGET_THREADS, BLOCK_MAX_THREADS[vec])
    multi = vec > 1 and N * size >= MULTI_VECTOR_ROW_BYTES and not (fits_l2 and one_vector)
    inputs = 2 if gate else 1  # rows read per row written: x (and gate)
    fits = []
    for e in epts:
        threads = _round_up(-(-nvec // (e // vec)), 32)
        if threads <= BLOCK_MAX_THREADS[e]:
            if multi:
                miss = (e * size * inputs < MULTI_VECTOR_BYTES_PER_THREAD
                        or threads > MULTI_VECTOR_TARGET_THREADS)
            else:
                miss = threads > BLOCK_TARGET_THREADS
            fits.append((miss, e, threads))
    if fits:
        _, ept, threads = min(fits)  # within the target if any fits, then the smallest EPT
        return LaunchConfig(op, BLOCK, kernel_name(op, BLOCK, dt, vec, ept), dt, M, N, vec, ept,
                            block=threads, rows_per_block=1, grid=M, capacity=threads * ept)
    return LaunchConfig(op, WIDE, kernel_name(op, WIDE, dt, vec), dt, M, N, vec, None,
                        block=WIDE_THREADS, rows_per_block=1, grid=M, capacity=None)


def launch_config(M: int, N: int, dtype, *, gate: bool = False, vectorized: Optional[bool] = None,
                  fits_l2: Optional[bool] = None) -> Dict:
    """How the fused op launches for ``M`` rows of ``N`` elements of ``dtype``.

    Args:
        M: rows (>= 0; 0 means no launch, ``grid`` is 0).  N: row length (>= 1).
        dtype: float32 / float16 / bfloat16 (torch, numpy or a name).
        gate: ``rmsnorm_gate`` instead of ``rmsnorm``.
        vectorized: 16-byte loads (None: when N allows it, i.e. aligned contiguous input;
            the op itself also checks pointers and row strides).
        fits_l2: x, gate and y fit in L2 together (:func:`fits_l2`): rows of 8 KB and more
            then get one 16-byte vector per thread where that block fits in 1024 threads
            (fp16/bf16, N <= 8192; fp32 has no such kernel and keeps its config; see
            MULTI_VECTOR_ROW_BYTES).  None: as the op decides on the current GPU; False in
            CPU mode (no L2 to ask).

    Returns:
        dict with ``op``, ``variant`` ("warp" | "block" | "wide"), ``kernel`` (its name),
        ``dtype``, ``M``, ``N``, ``vec`` (elements per load), ``ept`` (elements per thread in
        registers, None for wide), ``block`` (threads per block), ``rows_per_block``, ``grid``
        (blocks) and ``capacity`` (longest row the variant holds, None for wide).

    Raises:
        TypeError: non-int M/N, unsupported dtype, a non-bool ``gate`` / ``vectorized`` /
            ``fits_l2`` (None allowed for the last two).
        ValueError: M/N out of range.
    """
    if fits_l2 is None:
        M = _check_int("M", M, 0, MAX_GRID_X * WARP_ROWS_PER_BLOCK)  # before asking the GPU
        N = _check_int("N", N, 1, MAX_N)
        fits_l2 = _fits_current_device(M, N, dtype, _check_bool("gate", gate))
    return choose_config(M, N, dtype, gate=gate, vectorized=vectorized, fits_l2=fits_l2).as_dict()


# ---------------------------------------------------------------------------------------
# operands: torch tensors and CuPy arrays seen the same way

@dataclasses.dataclass
class _Operand:
    name: str
    fw: str           # "torch" | "cupy"
    array: object
    dtype: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # in elements


def _operand(name: str, a, fw_expected: Optional[str] = None) -> _Operand:
    fw = _framework(a)
    if fw is None:
        kind = type(a).__module__.split(".")[0] + "." + type(a).__name__
        host = " (host memory: move it to the GPU first)" if kind.startswith("numpy") else ""
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got {kind}{host}")
    if fw_expected is not None and fw != fw_expected:
        other = "torch.Tensor" if fw_expected == "torch" else "cupy.ndarray"
        raise TypeError(f"{name} is a {'torch.Tensor' if fw == 'torch' else 'cupy.ndarray'} but x is a "
                        f"{other}: pass all operands from the same library")
    dtype = a.dtype
    try:
        dt = dtype_name(dtype)
    except TypeError:
        raise TypeError(f"{name} has dtype {dtype}; expected float32, float16 or bfloat16 "
                        "(integer and float64 tensors are not accepted)") from None
    if fw == "torch":
        shape, strides = tuple(a.shape), tuple(a.stride())
    else:
        item = a.dtype.itemsize
        shape = tuple(a.shape)
        if any(s % item for s in a.strides):
            raise ValueError(f"{name} has byte strides {a.strides} that are not multiples of its "
                             f"element size {item}")
        strides = tuple(s // item for s in a.strides)
    return _Operand(name, fw, a, dt, shape, strides)


def _device_of(op: _Operand):
    if op.fw == "torch":
        return op.array.device
    return ("cuda", op.array.device.id)


def _check_last_dim(op: _Operand):
    # an empty array's strides mean nothing (CuPy reports (0, 0) for shape (0, N))
    if op.shape and op.shape[-1] > 1 and 0 not in op.shape and op.strides[-1] != 1:
        raise ValueError(f"{op.name} must be contiguous in its last dimension (stride 1), got stride "
                         f"{op.strides[-1]} for shape {op.shape}: pass {op.name}.contiguous()")


def _validate(x, weight, gate, eps) -> Dict:
    """Checks shared by every entry point; returns the operands and (M, N).

    Order: kind, dtype, shape, strides, eps, then device (so the first four can be checked
    on CPU tensors too).
    """
    xo = _operand("x", x)
    wo = _operand("weight", weight, xo.fw)
    go = _operand("gate", gate, xo.fw) if gate is not None else None
    for o in (wo, go):
        if o is not None and o.dtype != xo.dtype:
            raise TypeError(f"{o.name} has dtype {o.dtype} but x has {xo.dtype}: all operands must share "
                            f"one dtype (cast with .to(x.dtype))")
    if len(xo.shape) < 1:
        raise ValueError("x must have at least one dimension (..., N), got a 0-d scalar")
    N = xo.shape[-1]
    if N < 1:
        raise ValueError(f"x has shape {xo.shape}: its last dimension N must be >= 1")
    if wo.shape != (N,):
        raise ValueError(f"weight must have shape (N,) = ({N},) to match x of shape {xo.shape}, got "
                         f"{wo.shape}")
    if go is not None and go.shape != xo.shape:
        raise ValueError(f"gate must have x's shape {xo.shape}, got {go.shape}")
    for o in (xo, wo, go):
        if o is not None:
            _check_last_dim(o)
    eps = _check_eps(eps)
    dev = None
    for o in (xo, wo, go):
        if o is None:
            continue
        d = _device_of(o)
        if o.fw == "torch" and d.type != "cuda":
            where = (f"move it with {o.name}.cuda()" if backend.has_gpu() else
                     "this machine has no usable GPU, CPU mode: "
                     f"gpu_viz.ops.reference_rmsnorm{'_gate' if go is not None else ''} computes the "
                     "formula on the CPU, in float64")
            raise ValueError(f"{o.name} is on device {d}: the fused ops need CUDA tensors ({where})")
        if dev is None:
            dev = d
        elif d != dev:
            raise ValueError(f"{o.name} is on {d} but x is on {dev}: all operands must be on one device")
    M = math.prod(xo.shape[:-1])
    return {"x": xo, "weight": wo, "gate": go, "M": M, "N": N, "eps": eps, "dtype": xo.dtype}


# ---------------------------------------------------------------------------------------
# launcher

def l2_bytes(device: int) -> int:
    """L2 cache size of CUDA device ``device`` in bytes (:func:`gpu_viz.device.live`, cached).

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    return _device.live(device).l2_bytes


def fits_l2(M: int, N: int, dtype, gate: bool, l2: int) -> bool:
    """Whether one launch's x, gate and y (``M`` x ``N`` each) fit in ``l2`` bytes of L2 together.

    The kernels take it as their last argument: where it holds, x and gate are loaded
    evict-first (``ld.global.cs``) and y is stored plainly, so y -- often a recycled buffer --
    stays in L2; otherwise the op's load/store policies apply (kernels/rmsnorm_fused.cu,
    "Cache-hinted loads"; chosen by measurement on the H200, benchmarks/NOTES.md: within L2 the
    evict-first loads are faster, beyond it slower).  The launch config follows it too (:func:`launch_config`,
    MULTI_VECTOR_ROW_BYTES): problems that fit get one 16-byte vector per thread where that
    block fits in 1024 threads (fp16/bf16 rows up to 8192).

    Raises:
        TypeError: non-int ``M`` / ``N`` / ``l2``, an unsupported dtype.
        ValueError: ``M`` < 0, ``N`` < 1, ``l2`` < 0.
    """
    M = _check_int("M", M, 0, 2**62)
    N = _check_int("N", N, 1, MAX_N)
    l2 = _check_int("l2", l2, 0, 2**62)
    return _fits_l2(M, N, DTYPES[dtype_name(dtype)][1], bool(gate), l2)


def _fits_l2(M: int, N: int, itemsize: int, gate: bool, l2: int) -> bool:
    return (3 if gate else 2) * M * N * itemsize <= l2


def _fits_current_device(M: int, N: int, dtype, gate: bool) -> bool:
    """:func:`fits_l2` on the current CUDA device's L2; False in CPU mode."""
    if not backend.has_gpu():
        return False
    cupy = backend.require_cupy("fits_l2")
    return fits_l2(M, N, dtype, gate, l2_bytes(cupy.cuda.runtime.getDevice()))


@functools.lru_cache(maxsize=None)  # on every call's path
def compile_options(dtype) -> Tuple[str, ...]:
    """The -D options this module compiles kernels/rmsnorm_fused.cu with for ``dtype`` (one module
    per dtype; the launch shapes are this module's constants, so Python and CUDA cannot drift)."""
    return (f"-DRMSNORM_DTYPES={DTYPES[dtype_name(dtype)][3]}",) + LAUNCH_DEFINES


def get_kernel(kernel: str, dtype, device: int = 0):
    """The ``cupy.RawKernel`` named ``kernel`` (compiled with NVRTC for ``device``; one module
    per dtype, so the first call per dtype compiles that dtype's 24 kernels)."""
    return kernels.function(FILE, kernel, compile_options(dtype), device=device)


def _rows_view(o: _Operand, M: int, N: int):
    """(array as (M, N) with last-dim stride 1, row stride in elements); copies only when the
    leading dimensions cannot be merged into one stride."""
    a = o.array
    a2 = a.reshape(M, N)  # a view whenever the leading dims merge; else a copy
    if o.fw == "torch":
        stride = a2.stride(0) if M > 1 else N
    else:
        stride = a2.strides[0] // a2.dtype.itemsize if M > 1 else N
    return a2, int(stride)


def _ptr(a, fw: str) -> int:
    return int(a.data_ptr()) if fw == "torch" else int(a.data.ptr)


def _empty(xo: _Operand, M: int, N: int):
    if xo.fw == "torch":
        return torch.empty((M, N), dtype=xo.array.dtype, device=xo.array.device)
    cupy = backend.require_cupy("the fused RMSNorm op")
    with cupy.cuda.Device(xo.array.device.id):
        return cupy.empty((M, N), dtype=xo.array.dtype)


def _launch(info: Dict, out=None, config: Optional[LaunchConfig] = None):
    """Pick the kernel and launch it on the current stream; returns y shaped like x.

    ``out`` (tests, sanitizer): a contiguous (M, N) array of x's kind/dtype/device to write
    into, e.g. NaN-poisoned; ``config`` (tests): force a :class:`LaunchConfig` (e.g. a
    96-thread block), checked against the shape and alignment.
    """
    xo, wo, go, M, N, eps, dt = (info[k] for k in ("x", "weight", "gate", "M", "N", "eps", "dtype"))
    if out is None:
        out = _empty(xo, M, N)
    if M > 0:
        backend.require_gpu("the fused RMSNorm op")
        fw = xo.fw
        x2, sx = _rows_view(xo, M, N)
        g2, sg = _rows_view(go, M, N) if go is not None else (None, 0)
        itemsize, vec16 = DTYPES[dt][1], DTYPES[dt][2]
        ptrs = [_ptr(out, fw), _ptr(x2, fw), _ptr(g2, fw) if g2 is not None else 0, _ptr(wo.array, fw)]
        aligned = (N % vec16 == 0 and all(p % 16 == 0 for p in ptrs if p)
                   and (M == 1 or (sx * itemsize) % 16 == 0)
                   and (g2 is None or M == 1 or (sg * itemsize) % 16 == 0))
        device = xo.array.device.index if fw == "torch" else xo.array.device.id
        fits = _fits_l2(M, N, itemsize, go is not None, l2_bytes(device))  # M, N checked already
        cfg = config or choose_config(M, N, dt, gate=go is not None, vectorized=aligned, fits_l2=fits)
        _check_forced(cfg, M, N, dt, go is not None, aligned)
        args = (np.uint64(ptrs[0]), np.uint64(ptrs[1]), np.uint64(ptrs[2]), np.uint64(ptrs[3]),
                np.int64(M), np.int32(N), np.int64(sx), np.int64(sg), np.float32(eps), np.int32(fits))
        launch(get_kernel(cfg.kernel, dt, device), cfg.grid, cfg.block, args, fw, device)
    return out.reshape(xo.shape)


def _check_forced(cfg: LaunchConfig, M: int, N: int, dt: str, gate: bool, aligned: bool):
    """A (possibly hand-made) config must fit the problem: guards the forced-config test hook."""
    problems = []
    if cfg.kernel not in _kernel_names():
        problems.append(f"no kernel {cfg.kernel}")
    if cfg.dtype != dt or cfg.op != ("rmsnorm_gate" if gate else "rmsnorm"):
        problems.append("op/dtype differ")
    if cfg.vec > 1 and not aligned:
        problems.append("vector loads on a misaligned problem")
    if cfg.capacity is not None and cfg.capacity < N:
        problems.append(f"capacity {cfg.capacity} < N={N}")
    if cfg.variant == WARP and cfg.grid * cfg.rows_per_block < M or cfg.variant != WARP and cfg.grid != M:
        problems.append(f"grid {cfg.grid} does not cover M={M}")
    limit = {WARP: 32 * WARP_ROWS_PER_BLOCK, WIDE: WIDE_THREADS}.get(cfg.variant) or BLOCK_MAX_THREADS[cfg.ept]
    if not 1 <= cfg.block <= limit or (cfg.variant == WARP and cfg.block != limit):
        problems.append(f"block {cfg.block} outside the kernel's bounds ({limit})")
    if problems:
        raise ValueError(f"launch config {cfg} does not fit M={M}, N={N}, {dt}: " + "; ".join(problems))


def forced_config(M: int, N: int, dtype, *, variant: str, block: int, ept: Optional[int] = None,
                  vec: int = 1, gate: bool = False) -> LaunchConfig:
    """A hand-made :class:`LaunchConfig` (tests, sanitizer): e.g. the seed's 96-thread block at
    N=768.  Validated when launched."""
    dt = dtype_name(dtype)
    if variant not in (WARP, BLOCK, WIDE):
        raise ValueError(f"variant must be one of {(WARP, BLOCK, WIDE)}, got {variant!r}")
    if variant != WIDE and ept is None:
        raise ValueError(f"variant {variant!r} holds the row in registers: pass ept (elements per thread)")
    op = "rmsnorm_gate" if gate else "rmsnorm"
    rows = WARP_ROWS_PER_BLOCK if variant == WARP else 1
    cap = None if variant == WIDE else (32 * ept if variant == WARP else block * ept)
    return LaunchConfig(op, variant, kernel_name(op, variant, dt, vec, ept), dt, M, N, vec, ept, block,
                        rows, -(-M // rows), cap)


# ---------------------------------------------------------------------------------------
# torch custom ops, fake (meta) kernels and autograd

def _torch_backward(grad, x, weight, gate, eps: float, needs: Sequence[bool]):
    """Gradients by a composite of fp32 torch ops (not a CUDA kernel of ours):

        a = x * silu(g) (or x),  r = rsqrt(mean(x^2) + eps),  y = a * w * r
        dx = r * (G w s) - x r^3 mean(G w a),   s = silu(g) (or 1)
        dw = sum_rows(G a r)
        dg = G x w r silu'(g),   silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g)))

    Returns grads in the inputs' dtypes (None where not needed).
    """
    N = x.shape[-1]
    xf = x.float().reshape(-1, N)
    G = grad.float().reshape(-1, N)
    wf = weight.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if gate is not None:
        gf = gate.float().reshape(-1, N)
        sig = torch.sigmoid(gf)
        s = gf * sig
    else:
        s = None
    a = xf * s if s is not None else xf
    Gw = G * wf
    dx = dw = dg = None
    if needs[0]:
        Gws = Gw * s if s is not None else Gw
        dx = (r * Gws - xf * r.pow(3) * (Gw * a).mean(-1, keepdim=True)).reshape(x.shape).to(x.dtype)
    if needs[1]:
        dw = (G * a * r).sum(0).to(weight.dtype)
    if gate is not None and needs[2]:
        dg = (Gw * xf * r * sig * (1.0 + gf * (1.0 - sig))).reshape(gate.shape).to(gate.dtype)
    return dx, dw, dg


def _registered(name: str) -> bool:
    """True when ``torch.ops.gpu_viz.<name>`` exists already (a reloaded module keeps the first
    registration instead of failing on a duplicate)."""
    try:
        getattr(torch.ops.gpu_viz, name)
        return True
    except (AttributeError, RuntimeError):
        return False


if torch is not None and not _registered("rmsnorm"):
    @torch.library.custom_op("gpu_viz::rmsnorm", mutates_args=())
    def _rmsnorm_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return _launch(_validate(x, weight, None, eps))

    @_rmsnorm_op.register_fake
    def _(x, weight, eps):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def _rmsnorm_setup(ctx, inputs, output):
        x, weight, eps = inputs
        ctx.save_for_backward(x, weight)
        ctx.eps = eps

    def _rmsnorm_bwd(ctx, grad):
        x, weight = ctx.saved_tensors
        dx, dw, _ = _torch_backward(grad, x, weight, None, ctx.eps, ctx.needs_input_grad[:2])
        return dx, dw, None

    _rmsnorm_op.register_autograd(_rmsnorm_bwd, setup_context=_rmsnorm_setup)

if torch is not None and not _registered("rmsnorm_gate"):
    @torch.library.custom_op("gpu_viz::rmsnorm_gate", mutates_args=())
    def _rmsnorm_gate_op(x: torch.Tensor, gate: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return _launch(_validate(x, weight, gate, eps))

    @_rmsnorm_gate_op.register_fake
    def _(x, gate, weight, eps):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def _rmsnorm_gate_setup(ctx, inputs, output):
        x, gate, weight, eps = inputs
        ctx.save_for_backward(x, gate, weight)
        ctx.eps = eps

    def _rmsnorm_gate_bwd(ctx, grad):
        x, gate, weight = ctx.saved_tensors
        nx, ng, nw = ctx.needs_input_grad[:3]
        dx, dw, dg = _torch_backward(grad, x, weight, gate, ctx.eps, (nx, nw, ng))
        return dx, dg, dw, None

    _rmsnorm_gate_op.register_autograd(_rmsnorm_gate_bwd, setup_context=_rmsnorm_gate_setup)


# ---------------------------------------------------------------------------------------
# public ops

def _on_cpu(*tensors) -> bool:
    """A CPU tensor among the operands of an eager call: :func:`_validate` refuses it, and
    refused here it is a three-frame traceback instead of one through torch's dispatcher (~10
    torch frames).  False while torch.compile traces (the op then refuses it at run time, and
    the graph stays whole)."""
    return not torch.compiler.is_compiling() and any(t.device.type == "cpu" for t in tensors)


def _direct(*tensors) -> bool:
    """Eager call that autograd will not record: launch without the dispatcher round trip
    (a few µs per call).  Traced calls (torch.compile) and grad-requiring inputs go through
    ``torch.ops.gpu_viz.*``."""
    if torch.compiler.is_compiling() or not all(t.device.type == "cuda" for t in tensors):
        return False
    return not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))


def rmsnorm(x, weight, eps: float = 1e-6):
    """Fused RMSNorm, one kernel: ``y = x * weight * rsqrt(mean(x^2, -1) + eps)``.

    Args:
        x: ``(..., N)`` torch CUDA tensor or CuPy array, float32 / float16 / bfloat16; the last
            dimension contiguous (stride 1), leading dimensions any strides (rows of a wider
            buffer, e.g. ``buf[:, :N]``, are read in place; leading dims that cannot merge into
            one row stride are copied first).  Any M = prod(leading dims) >= 0, any N >= 1.
        weight: ``(N,)``, same library, dtype and device, stride 1.
        eps: >= 0, added to the mean square (fp32 in the kernel).

    Returns:
        y: x's shape, dtype and library, contiguous; computed in fp32, rounded once; launched
        on the caller's current stream (``torch.cuda.current_stream()`` / CuPy's current
        stream) without host synchronisation.  M = 0 returns an empty y, no launch.  NaN/inf
        in a row make only that row NaN (or 0 where the formula gives 0).
        torch: differentiable in x and weight (backward: fp32 torch composite, not a fused
        kernel); ``torch.compile(fullgraph=True)`` and CUDA graphs accept it
        (``torch.ops.gpu_viz.rmsnorm``).

    Raises:
        TypeError: not a torch tensor / CuPy array, mixed libraries, unsupported or mismatched
            dtypes, non-float eps.
        ValueError: CPU tensors, operands on different devices, weight not of shape (N,),
            a last dimension with stride != 1, N == 0, negative or non-finite eps.
        GPUUnavailable: in CPU mode (after the checks above).
    """
    if torch is not None and isinstance(x, torch.Tensor):
        if not isinstance(weight, torch.Tensor) or _on_cpu(x, weight):
            _validate(x, weight, None, eps)  # raises, naming the argument, before the dispatcher
        if _direct(x, weight):  # eager, no autograd: skip the dispatcher (same launcher)
            return _launch(_validate(x, weight, None, eps))
        # the op's implementation validates everything else (once per call, also when traced)
        return torch.ops.gpu_viz.rmsnorm(x, weight, _check_eps(eps))
    return _launch(_validate(x, weight, None, eps))


def rmsnorm_gate(x, gate, weight, eps: float = 1e-6):
    """Fused RMSNorm + SiLU gate, one kernel:
    ``y = x * weight * silu(gate) * rsqrt(mean(x^2, -1) + eps)`` -- the statistic from x only.

    Args:
        x, gate: ``(..., N)``, same shape (strides may differ), torch CUDA tensors or CuPy
            arrays, float32 / float16 / bfloat16, last dimension contiguous.
        weight: ``(N,)``.  eps: as in :func:`rmsnorm`.

    Returns:
        y as in :func:`rmsnorm`; torch: differentiable in x, gate and weight (fp32 torch
        composite backward).  ``silu(g) = g / (1 + e^-g)`` with the fast ``__expf`` /
        ``__fdividef`` intrinsics (relative error <= ~1.5e-6 for |g| <= 8, inside
        ``TOLERANCES``; exactly -0 / NaN at the limits like the float64 formula).

    Raises:
        as :func:`rmsnorm`, and ValueError when gate's shape differs from x's.
    """
    if torch is not None and isinstance(x, torch.Tensor):
        if not (isinstance(weight, torch.Tensor) and isinstance(gate, torch.Tensor)) or _on_cpu(x, weight, gate):
            _validate(x, weight, gate, eps)  # raises, naming the argument, before the dispatcher
        if _direct(x, weight, gate):
            return _launch(_validate(x, weight, gate, eps))
        return torch.ops.gpu_viz.rmsnorm_gate(x, gate, weight, _check_eps(eps))
    return _launch(_validate(x, weight, gate, eps))


# ---------------------------------------------------------------------------------------
# nn.Module wrappers (the thinnest layer: a weight parameter and eps)

if torch is not None:
    class FusedRMSNorm(torch.nn.Module):
        """``y = rmsnorm(x, self.weight, self.eps)`` with a learnable ``weight`` of shape (N,).

        Args:
            N: features per row, >= 1.  eps: >= 0.  device, dtype: of the weight (ones).
        ``forward(x)``: x ``(..., N)`` CUDA tensor of the weight's dtype; see :func:`rmsnorm`.
        """

        def __init__(self, N: int, eps: float = 1e-6, device=None, dtype=None):
            super().__init__()
            N = _check_int("N", N, 1, MAX_N)
            self.eps = _check_eps(eps)
            self.weight = torch.nn.Parameter(torch.ones(N, device=device, dtype=dtype))

        def forward(self, x):
            return rmsnorm(x, self.weight, self.eps)

        def extra_repr(self) -> str:
            return f"N={self.weight.shape[0]}, eps={self.eps:g}"

    class FusedRMSNormGate(FusedRMSNorm):
        """``y = rmsnorm_gate(x, gate, self.weight, self.eps)``; ``forward(x, gate)``."""

        def forward(self, x, gate):
            return rmsnorm_gate(x, gate, self.weight, self.eps)


# ---------------------------------------------------------------------------------------
# what the compiler decided

_NAME = re.compile(r"^(rmsnorm(?:_gate)?)_(warp|block|wide)_(f32|f16|bf16)_v(\d+)(?:_e(\d+))?$")
_SUFFIX_TO_DTYPE = {v[0]: k for k, v in DTYPES.items()}


def describe_kernel(name: str) -> Dict:
    """``{"op", "variant", "dtype", "vec", "ept"}`` parsed from a kernel name."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"{name!r} is not a kernel of {FILE}")
    op, variant, suffix, vec, ept = m.groups()
    return {"op": op, "variant": variant, "dtype": _SUFFIX_TO_DTYPE[suffix], "vec": int(vec),
            "ept": int(ept) if ept else None}


@functools.lru_cache(maxsize=None)
def _ptxas_rows(arch: str) -> Tuple:
    """ptxas rows for ``arch``: one nvcc per dtype (-DRMSNORM_DTYPES), run in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(DTYPES)) as pool:
        parts = pool.map(lambda dt: kernels.nvcc_compile(FILE, arch, compile_options(dt)), list(DTYPES))
        return tuple(u for part in parts for u in part)


def kernel_report(source: str = "auto", arches: Optional[Sequence[str]] = None) -> List[Dict]:
    """Registers and spills of every kernel in ``kernels/rmsnorm_fused.cu``.

    Args:
        source: ``"ptxas"`` (local nvcc, ``-Xptxas -v``, for each of ``arches``; no GPU needed),
            ``"device"`` (NVRTC for the live GPU, ``cudaFuncGetAttributes``), or ``"auto"``
            (device on a GPU, else ptxas).
        arches: for ptxas, default ``gpu_viz.kernels.ARCHES`` (sm_75, sm_80, sm_89, sm_90).

    Returns:
        one dict per (kernel, arch): ``kernel``, ``op``, ``variant``, ``dtype``, ``vec``,
        ``ept``, ``arch``, ``registers``, ``spill_stores_bytes``, ``spill_loads_bytes`` (ptxas;
        None from the device), ``local_bytes`` (stack frame / local memory per thread),
        ``shared_bytes``, ``max_threads_per_block`` (device only, else None), ``source``.

    Raises:
        ValueError: unknown source.  FileNotFoundError: ptxas without nvcc.
        GPUUnavailable: ``"device"`` in CPU mode.
    """
    if source == "auto":
        source = "device" if backend.has_gpu() else "ptxas"
    rows = []
    if source == "ptxas":
        for arch in arches or kernels.ARCHES:
            for u in _ptxas_rows(arch):
                rows.append({"kernel": u.kernel, **describe_kernel(u.kernel), "arch": u.arch,
                             "registers": u.registers, "spill_stores_bytes": u.spill_stores_bytes,
                             "spill_loads_bytes": u.spill_loads_bytes, "local_bytes": u.stack_frame_bytes,
                             "shared_bytes": u.shared_bytes, "max_threads_per_block": None,
                             "source": "ptxas"})
    elif source == "device":
        b = backend.require_gpu("kernel_report(source='device')")
        for name in kernel_names():
            d = describe_kernel(name)
            k = get_kernel(name, d["dtype"], b.device_id)
            rows.append({"kernel": name, **d, "arch": b.sm, "registers": int(k.num_regs),
                         "spill_stores_bytes": None, "spill_loads_bytes": None,
                         "local_bytes": int(k.local_size_bytes), "shared_bytes": int(k.shared_size_bytes),
                         "max_threads_per_block": int(k.max_threads_per_block), "source": "device"})
    else:
        raise ValueError(f"source must be 'auto', 'ptxas' or 'device', got {source!r}")
    return rows
