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

import ctypes
import dataclasses
import functools
import itertools
import math
import os
import re
import sys
import threading
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend, kernels
from .. import device as _device
from ..arrays import framework as _framework
from ..arrays import _torch_stream_ptr, launch
from ..check import check_bool as _check_bool
from ..check import check_f32_arg
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
#: The kernel file's ops: the two public formulas and the fused residual add.
RMSNORM_ADD = "rmsnorm_add"
KERNEL_OPS: Tuple[str, ...] = OPS + (RMSNORM_ADD,)
#: Cast orders (``cast=`` of the public ops): FP32 rounds once, ``T(a * w * r)``; LLAMA rounds
#: the normalised value to x's dtype before the weight, ``T(T(a * r) * w)``, as HF's
#: LlamaRMSNorm (``self.weight * hidden_states.to(input_dtype)``).
CAST_FP32, CAST_LLAMA = "fp32", "llama"
CASTS: Tuple[str, ...] = (CAST_FP32, CAST_LLAMA)
#: The kernels' flags argument (FLAG_* in the .cu file).
FLAG_FITS_L2, FLAG_LLAMA = 1, 4
#: Name suffix of the extended-output build (``-DRMSNORM_OUT_EXT=1``, a module of its own): the
#: kernels a call with a ``weight_offset`` or the llama cast launches.  The plain names hold only
#: the plain output ``T(a * w * r)``, so the common call runs no code for the other two forms
#: (kernels/rmsnorm_fused.cu, OUT_PLAIN).  It follows ``_w32``: ``..._e8_w32_x``.
OUT_EXT_SUFFIX = "_x"


def kernel_name(op: str, variant: str, dtype, vec: int, ept: Optional[int] = None, *,
                aligned: bool = True, weight_dtype=None, out_ext: bool = False) -> str:
    """The kernel's extern "C" name, e.g. ``rmsnorm_gate_block_f16_v8_e16``; ``aligned=False``
    names the element-by-element twin (``_u8``) of a 16-byte kernel, ``weight_dtype`` float32
    with fp16/bf16 x the fp32-weight build (``_w32``), ``out_ext`` the extended-output build
    (``_x``: see :data:`OUT_EXT_SUFFIX` and :func:`_out_ext`)."""
    dt = dtype_name(dtype)
    suffix = DTYPES[dt][0]
    name = f"{op}_{variant}_{suffix}_{'v' if aligned or vec == 1 else 'u'}{vec}"
    name = name if variant == WIDE else f"{name}_e{ept}"
    return name + ("_w32" if _w32(dt, weight_dtype) else "") + (OUT_EXT_SUFFIX if out_ext else "")


def _w32(dt: str, weight_dtype) -> bool:
    return weight_dtype is not None and dt != "float32" and dtype_name(weight_dtype) == "float32"


def _out_ext(offset: float, llama: bool) -> bool:
    """Whether a call needs the extended-output kernels (``_x``): the llama cast, or a
    weight_offset that is not 0 as the kernel's float32 argument (where it rounds to 0 the
    kernel would add nothing: the plain output is the same bits)."""
    return bool(llama) or float(np.float32(offset)) != 0.0


def _build_of(kernel: str) -> Tuple[bool, bool]:
    """``(w32, out_ext)``: the module a kernel name belongs to (its suffixes)."""
    out_ext = kernel.endswith(OUT_EXT_SUFFIX)
    return (kernel[:-len(OUT_EXT_SUFFIX)] if out_ext else kernel).endswith("_w32"), out_ext


def kernel_names() -> List[str]:
    """Every kernel the file defines (as its DEF_SCALAR / DEF_VECTOR macros instantiate them), in
    every build: plain, fp32 weight (``_w32``), extended output (``_x``) and both."""
    return list(_kernel_name_list())


@functools.lru_cache(maxsize=None)
def _kernel_names() -> "frozenset[str]":
    return frozenset(_kernel_name_list())


@functools.lru_cache(maxsize=None)
def _kernel_name_list() -> Tuple[str, ...]:
    names = []
    for dt, (_, _, vec16, _) in DTYPES.items():
        for wdt, ext in itertools.product((None,) if dt == "float32" else (None, "float32"), (False, True)):
            for op in KERNEL_OPS:
                for vec, aligned in ((1, True), (vec16, True), (vec16, False)):
                    kw = {"aligned": aligned, "weight_dtype": wdt, "out_ext": ext}
                    names += [kernel_name(op, WARP, dt, vec, e, **kw) for e in EPT_CHOICES]
                    blocks = SCALAR_BLOCK_EPT if vec == 1 else EPT_CHOICES
                    names += [kernel_name(op, BLOCK, dt, vec, e, **kw) for e in blocks]
                    names.append(kernel_name(op, WIDE, dt, vec, **kw))
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
    #: False: the element-by-element twin of a 16-byte kernel (a misaligned view; same bits).
    aligned: bool = True

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


def reduction_order(cfg: LaunchConfig) -> Tuple:
    """What fixes the order in which a row's squares are added (kernels/rmsnorm_fused.cu,
    "Batch invariance"): the variant's family, the elements per 16-byte unit and N -- for the
    block variant with one unit per thread or several (a power-of-two count of warps) the
    same tree.  Batch invariance means: for one (N, dtype, op) this is the same at every M
    and ``fits_l2`` (tests/test_rmsnorm_fused.py checks it for every N up to 16384, and a
    float32 emulation of both launch shapes gives the same bits)."""
    if cfg.variant == BLOCK and cfg.vec > 1:
        chunks = cfg.ept // cfg.vec
        nwarps = cfg.block // 32
        canonical = cfg.block % 32 == 0 and (chunks == 1 or nwarps & (nwarps - 1) == 0)
        return (BLOCK, cfg.vec, cfg.N, "slot-tree" if canonical else (cfg.block, cfg.ept))
    # warp, wide and the scalar block: one launch shape per N
    return (cfg.variant, cfg.vec, cfg.N, cfg.block, cfg.ept)


def _pow2_warps(threads: int) -> int:
    """``threads`` (a multiple of 32) rounded up to a power-of-two count of warps."""
    w = threads // 32
    return 32 * (1 << (w - 1).bit_length())


@functools.lru_cache(maxsize=4096)  # on every call's path; a pure function of its arguments
def _choose_config(M: int, N: int, dt: str, gate: bool, vectorized: Optional[bool],
                   fits_l2: bool = False, op: Optional[str] = None, aligned: bool = True,
                   wdt: Optional[str] = None, out_ext: bool = False) -> LaunchConfig:
    """``gate``: a second input row (the gate, or the add op's residual); ``op`` the kernel's
    op (default from ``gate``); ``aligned`` False: the misaligned twin of a 16-byte kernel;
    ``wdt`` the weight's dtype name (None: x's); ``out_ext`` the extended-output build
    (:func:`_out_ext` of the call's weight_offset and cast).  The launch shape is the same
    in either build."""
    vec16 = DTYPES[dt][2]
    if vectorized is None:
        vectorized = N % vec16 == 0
    elif vectorized and N % vec16:
        raise ValueError(f"vectorized=True needs N % {vec16} == 0 for {dt} (16-byte loads); got N={N}")
    vec = vec16 if vectorized else 1
    op = op or ("rmsnorm_gate" if gate else "rmsnorm")
    kw = {"aligned": aligned or vec == 1, "weight_dtype": wdt, "out_ext": out_ext}
    if N <= (WARP_ROW_MAX_N_VECTOR if vec > 1 else WARP_ROW_MAX_N):
        ept = min(e for e in EPT_CHOICES if 32 * e >= N)
        return LaunchConfig(op, WARP, kernel_name(op, WARP, dt, vec, ept, **kw), dt, M, N, vec, ept,
                            block=32 * WARP_ROWS_PER_BLOCK, rows_per_block=WARP_ROWS_PER_BLOCK,
                            grid=-(-M // WARP_ROWS_PER_BLOCK), capacity=32 * ept, aligned=kw["aligned"])
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
        if e > vec and one_vector:  # N also has a one-unit-per-thread block (taken when the
            # problem fits L2): several units per thread then need a power-of-two count of warps
            # for the same sum order (see reduction_order)
            threads = _pow2_warps(threads)
        if threads <= BLOCK_MAX_THREADS[e]:
            if multi:
                miss = (e * size * inputs < MULTI_VECTOR_BYTES_PER_THREAD
                        or threads > MULTI_VECTOR_TARGET_THREADS)
            else:
                miss = threads > BLOCK_TARGET_THREADS
            fits.append((miss, e, threads))
    if fits:
        _, ept, threads = min(fits)  # within the target if any fits, then the smallest EPT
        return LaunchConfig(op, BLOCK, kernel_name(op, BLOCK, dt, vec, ept, **kw), dt, M, N, vec, ept,
                            block=threads, rows_per_block=1, grid=M, capacity=threads * ept,
                            aligned=kw["aligned"])
    return LaunchConfig(op, WIDE, kernel_name(op, WIDE, dt, vec, **kw), dt, M, N, vec, None,
                        block=WIDE_THREADS, rows_per_block=1, grid=M, capacity=None, aligned=kw["aligned"])


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


def _check_cast(cast) -> str:
    if cast not in CASTS:
        raise ValueError(f"cast must be one of {CASTS} ('llama': HF LlamaRMSNorm's order, the normalised "
                         f"value rounded to x's dtype before the weight), got {cast!r}")
    return cast


def _operand(name: str, a, fw_expected: Optional[str] = None) -> _Operand:
    if a is None:
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got None")
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
        if a.is_neg():  # a lazily negated view (torch._neg_view): the kernels read memory, not the bit
            a = a.resolve_neg()
        if a.numel() and not a.data_ptr():  # e.g. a parameter whose storage was freed (resized to 0)
            raise ValueError(f"{name} has no data (its data pointer is null: storage freed or never "
                             "allocated); pass a tensor whose memory holds its values")
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


def _validate(x, weight, gate, eps, *, residual=None, weight_offset=0.0, cast: str = CAST_FP32) -> Dict:
    """Checks shared by every entry point; returns the operands and (M, N).

    ``gate`` and ``residual`` (the add op's) are the second input row; at most one is given.
    Order: kind, dtype, shape, strides, eps / weight_offset / cast, then device (so the first
    four can be checked on CPU tensors too).
    """
    xo = _operand("x", x)
    wo = _operand("weight", weight, xo.fw)
    if gate is not None and residual is not None:  # internal callers only
        raise ValueError("gate and residual cannot both be given")
    second = "gate" if gate is not None else "residual"
    x2 = gate if gate is not None else residual
    go = _operand(second, x2, xo.fw) if x2 is not None else None
    if go is not None and go.dtype != xo.dtype:
        raise TypeError(f"{go.name} has dtype {go.dtype} but x has {xo.dtype}: {go.name} must share x's "
                        f"dtype (cast with .to(x.dtype))")
    if wo.dtype != xo.dtype and wo.dtype != "float32":
        raise TypeError(f"weight has dtype {wo.dtype}; expected x's dtype ({xo.dtype}) or float32 "
                        f"(cast with .to(x.dtype) or .float())")
    if len(xo.shape) < 1:
        raise ValueError("x must have at least one dimension (..., N), got a 0-d scalar")
    N = xo.shape[-1]
    if N < 1:
        raise ValueError(f"x has shape {xo.shape}: its last dimension N must be >= 1")
    if wo.shape != (N,):
        raise ValueError(f"weight must have shape (N,) = ({N},) to match x of shape {xo.shape}, got "
                         f"{wo.shape}")
    if go is not None and go.shape != xo.shape:
        raise ValueError(f"{go.name} must have x's shape {xo.shape}, got {go.shape}")
    for o in (xo, wo, go):
        if o is not None:
            _check_last_dim(o)
    eps = _check_eps(eps)
    offset = check_f32_arg("weight_offset", weight_offset)
    _check_cast(cast)
    dev = None
    for o in (xo, wo, go):
        if o is None:
            continue
        d = _device_of(o)
        if o.fw == "torch" and d.type != "cuda":
            where = (f"move it with {o.name}.cuda()" if backend.has_gpu() else
                     "this machine has no usable GPU, CPU mode: "
                     f"gpu_viz.ops.reference_rmsnorm{'_gate' if gate is not None else ''} computes the "
                     "formula on the CPU, in float64")
            raise ValueError(f"{o.name} is on device {d}: the fused ops need CUDA tensors ({where})")
        if dev is None:
            dev = d
        elif d != dev:
            raise ValueError(f"{o.name} is on {d} but x is on {dev}: all operands must be on one device")
    M = math.prod(xo.shape[:-1])
    op = "rmsnorm_gate" if gate is not None else RMSNORM_ADD if residual is not None else "rmsnorm"
    return {"x": xo, "weight": wo, "gate": go, "M": M, "N": N, "eps": eps, "dtype": xo.dtype,
            "op": op, "wdtype": wo.dtype, "offset": offset, "llama": cast == CAST_LLAMA}


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


def _fits_l2(M: int, N: int, itemsize: int, gate: bool, l2: int, add: bool = False) -> bool:
    return (4 if add else 3 if gate else 2) * M * N * itemsize <= l2


def _fits_current_device(M: int, N: int, dtype, gate: bool) -> bool:
    """:func:`fits_l2` on the current CUDA device's L2; False in CPU mode."""
    if not backend.has_gpu():
        return False
    cupy = backend.require_cupy("fits_l2")
    return fits_l2(M, N, dtype, gate, l2_bytes(cupy.cuda.runtime.getDevice()))


@functools.lru_cache(maxsize=None)  # on every call's path
def compile_options(dtype, w32: bool = False, out_ext: bool = False) -> Tuple[str, ...]:
    """The -D options this module compiles kernels/rmsnorm_fused.cu with for ``dtype`` (one module
    per dtype; the launch shapes are this module's constants, so Python and CUDA cannot drift);
    ``w32``: the fp16/bf16 kernels with an fp32 weight; ``out_ext``: the extended-output kernels
    (``_x``, :data:`OUT_EXT_SUFFIX`).  Each of those is a module of its own, built on first use."""
    opts = (f"-DRMSNORM_DTYPES={DTYPES[dtype_name(dtype)][3]}",) + LAUNCH_DEFINES
    return opts + (("-DRMSNORM_WEIGHT_F32=1",) if w32 else ()) + (("-DRMSNORM_OUT_EXT=1",) if out_ext else ())


def get_kernel(kernel: str, dtype, device: int = 0):
    """The ``cupy.RawKernel`` named ``kernel`` (compiled with NVRTC for ``device``; one module
    per dtype, weight dtype and output build, so the first call of each compiles that module's
    kernels)."""
    return kernels.function(FILE, kernel, compile_options(dtype, *_build_of(kernel)), device=device)


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


# --- the wide-row kernels of gpu_viz.rmsnorm.wide (a module of its own; optional) -----------

@functools.lru_cache(maxsize=None)  # a failed import costs ~50 us: looked up once
def _wide_module():
    """:mod:`gpu_viz.rmsnorm.wide` where it exists, else None (then every row takes this file's
    kernels)."""
    try:
        from . import wide
    except ImportError:
        return None
    return wide


@functools.lru_cache(maxsize=None)
def _compute_capability(device: int) -> Tuple[int, int]:
    cupy = backend.require_cupy("the fused RMSNorm op")
    cc = cupy.cuda.Device(device).compute_capability  # e.g. "90"
    return int(cc[:-1]), int(cc[-1])


def uses_wide(op: str, N: int, dtype, cc: Tuple[int, int], weight_dtype=None, cast: str = CAST_FP32) -> bool:
    """Whether rows of ``N`` elements go to :mod:`gpu_viz.rmsnorm.wide` on a GPU of compute
    capability ``cc``: decided by the op, N, the dtypes, the cast and the GPU -- never by M or
    the data's alignment (batch invariance).  The add op and the ``"llama"`` cast stay on this
    file's kernels."""
    return _uses_wide(op, int(N), dtype_name(dtype), tuple(cc),
                      None if weight_dtype is None else dtype_name(weight_dtype), cast)


@functools.lru_cache(maxsize=4096)  # on every call's path; pure given the wide module
def _uses_wide(op: str, N: int, dt: str, cc: Tuple[int, int], weight_dtype: Optional[str], cast: str) -> bool:
    if op not in OPS or cast != CAST_FP32:  # (fp32 weights: the cluster path takes them too)
        return False
    wide = _wide_module()
    return wide is not None and bool(wide.supported(N, dt, cc))


def _launch_wide(info: Dict, out, device: int):
    """The row through :func:`gpu_viz.rmsnorm.wide.forward` (torch operands); misaligned
    operands are copied to fresh (aligned) buffers first, which changes no value."""
    xo, go, wo, M, N = info["x"], info["gate"], info["weight"], info["M"], info["N"]
    x2, _ = _rows_view(xo, M, N)
    g2 = _rows_view(go, M, N)[0] if go is not None else None
    def fit(a):  # the cluster path takes contiguous, 16-byte aligned operands: copy the others
        if a is None or (a.is_contiguous() and a.data_ptr() % 16 == 0):
            return a
        return a.contiguous() if not a.is_contiguous() else a.clone()

    _wide_module().forward(fit(x2), fit(wo.array), info["eps"], out, gate=fit(g2), stream=None,
                           weight_offset=info["offset"])


def _launch(info: Dict, out=None, config: Optional[LaunchConfig] = None, h_out=None):
    """Pick the kernel and launch it on the current stream; returns y shaped like x (and h,
    also shaped like x, for the add op).

    ``out`` / ``h_out`` (tests, sanitizer): contiguous (M, N) arrays of x's kind/dtype/device
    to write into, e.g. NaN-poisoned; ``config`` (tests): force a :class:`LaunchConfig` (e.g.
    a 96-thread block), checked against the shape and alignment.
    """
    xo, wo, go, M, N, eps, dt = (info[k] for k in ("x", "weight", "gate", "M", "N", "eps", "dtype"))
    op = info["op"]
    add = op == RMSNORM_ADD
    if out is None:
        out = _empty(xo, M, N)
    if add and h_out is None:
        h_out = _empty(xo, M, N)
    if M > 0:
        backend.require_gpu("the fused RMSNorm op")
        fw = xo.fw
        device = xo.array.device.index if fw == "torch" else xo.array.device.id
        wdt = info["wdtype"] if info["wdtype"] != dt else None
        cast = CAST_LLAMA if info["llama"] else CAST_FP32
        if (config is None and fw == "torch"
                and uses_wide(op, N, dt, _compute_capability(device), wdt, cast)):
            _launch_wide(info, out, device)
            return out.reshape(xo.shape)
        x2, sx = _rows_view(xo, M, N)
        g2, sg = _rows_view(go, M, N) if go is not None else (None, 0)
        itemsize, vec16 = DTYPES[dt][1], DTYPES[dt][2]
        ptrs = [_ptr(out, fw), _ptr(h_out, fw) if add else 0, _ptr(x2, fw),
                _ptr(g2, fw) if g2 is not None else 0, _ptr(wo.array, fw)]
        aligned = (N % vec16 == 0 and all(p % 16 == 0 for p in ptrs if p)
                   and (M == 1 or (sx * itemsize) % 16 == 0)
                   and (g2 is None or M == 1 or (sg * itemsize) % 16 == 0))
        fits = _fits_l2(M, N, itemsize, go is not None, l2_bytes(device), add)  # M, N checked already
        ext = _out_ext(info["offset"], info["llama"])
        cfg = config or _choose_config(M, N, dt, go is not None, N % vec16 == 0, fits, op, aligned, wdt, ext)
        _check_forced(cfg, M, N, dt, go is not None, aligned, op, wdt, ext)
        flags = (FLAG_FITS_L2 if fits else 0) | (FLAG_LLAMA if info["llama"] else 0)
        args = (*(np.uint64(p) for p in ptrs), np.int64(M), np.int32(N), np.int64(sx), np.int64(sg),
                np.float32(eps), np.float32(info["offset"]), np.int32(flags))
        launch(get_kernel(cfg.kernel, dt, device), cfg.grid, cfg.block, args, fw, device)
    y = out.reshape(xo.shape)
    return (y, h_out.reshape(xo.shape)) if add else y


def _check_forced(cfg: LaunchConfig, M: int, N: int, dt: str, gate: bool, aligned: bool,
                  op: Optional[str] = None, wdt: Optional[str] = None, out_ext: bool = False):
    """A (possibly hand-made) config must fit the problem: guards the forced-config test hook.
    ``out_ext``: the call has a weight_offset or the llama cast (:func:`_out_ext`), which only
    the ``_x`` kernels compute; a plain kernel would silently leave them out."""
    problems = []
    op = op or ("rmsnorm_gate" if gate else "rmsnorm")
    if cfg.kernel not in _kernel_names():
        problems.append(f"no kernel {cfg.kernel}")
    if cfg.dtype != dt or cfg.op != op:
        problems.append("op/dtype differ")
    w32, ext = _build_of(cfg.kernel)
    if _w32(dt, wdt) != w32:
        problems.append("the kernel's weight dtype differs")
    if out_ext and not ext:
        problems.append(f"a weight_offset or the llama cast needs the extended-output kernel "
                        f"{cfg.kernel}{OUT_EXT_SUFFIX} (forced_config(..., weight_offset=, cast=)); "
                        f"{cfg.kernel} computes only T(x * w * r)")
    elif ext and not out_ext:
        problems.append(f"{cfg.kernel} is the extended-output build, launched only for a "
                        f"weight_offset or the llama cast; this call has neither: its plain twin "
                        f"{cfg.kernel[:-len(OUT_EXT_SUFFIX)]}")
    if cfg.vec > 1 and cfg.aligned and not aligned:
        problems.append("vector loads on a misaligned problem")
    if cfg.vec > 1 and N % cfg.vec:
        problems.append(f"N={N} is not a multiple of the kernel's {cfg.vec}-element units")
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
                  vec: int = 1, gate: bool = False, op: Optional[str] = None, aligned: bool = True,
                  weight_dtype=None, weight_offset: float = 0.0, cast: str = CAST_FP32) -> LaunchConfig:
    """A hand-made :class:`LaunchConfig` (tests, sanitizer): e.g. the seed's 96-thread block at
    N=768.  ``weight_offset`` / ``cast``: the call's, which pick the plain or the extended-output
    (``_x``) kernel as the op does.  Validated when launched."""
    dt = dtype_name(dtype)
    if variant not in (WARP, BLOCK, WIDE):
        raise ValueError(f"variant must be one of {(WARP, BLOCK, WIDE)}, got {variant!r}")
    if variant != WIDE and ept is None:
        raise ValueError(f"variant {variant!r} holds the row in registers: pass ept (elements per thread)")
    op = op or ("rmsnorm_gate" if gate else "rmsnorm")
    rows = WARP_ROWS_PER_BLOCK if variant == WARP else 1
    cap = None if variant == WIDE else (32 * ept if variant == WARP else block * ept)
    al = aligned or vec == 1
    ext = _out_ext(check_f32_arg("weight_offset", weight_offset), _check_cast(cast) == CAST_LLAMA)
    return LaunchConfig(op, variant, kernel_name(op, variant, dt, vec, ept, aligned=al, weight_dtype=weight_dtype,
                                                 out_ext=ext),
                        dt, M, N, vec, ept, block, rows, -(-M // rows), cap, al)


# ---------------------------------------------------------------------------------------
# the per-call path from Python (torch, eager): a launch plan per operand layout

#: How a plan launches: "cpp" (the C++ launcher of :mod:`gpu_viz.rmsnorm.launcher`: key,
#: allocation, ``cuLaunchKernel`` and the autograd node in C++, once it is built; until then,
#: and where it cannot be built, "driver"), "driver" (``cuLaunchKernel`` through ctypes, the
#: kernel's arguments packed once per plan, only the pointers rewritten per call) or "cupy"
#: (CuPy's ``RawKernel`` call with the same arguments).  ``gpu-viz bench`` times each.
LAUNCHERS: Tuple[str, ...] = ("cpp", "driver", "cupy")
LAUNCHER = "cpp"
#: Plans kept per thread (one per op, shape, strides, dtypes, device, alignment, eps,
#: weight_offset and cast seen); past this the cache starts again empty.
MAX_PLANS = 1024
_CUDA_ERROR_INVALID_CONTEXT = 201

_TLS = threading.local()
_DRIVER: List = []


def _plans() -> Dict:
    try:
        return _TLS.plans
    except AttributeError:
        _TLS.plans = {}
        return _TLS.plans


def clear_plans() -> None:
    """Forget every launch plan: this thread's Python plans and the C++ launcher's cache (the
    next call of each layout is validated and planned again)."""
    _plans().clear()
    if _EXT[0] is not None:
        _EXT[0].clear()


def _driver():
    """``cuLaunchKernel`` and ``cuGetErrorName`` from the CUDA driver, through ctypes (None
    where the driver library cannot be opened: then plans launch through CuPy)."""
    if not _DRIVER:
        try:
            lib = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
            f = lib.cuLaunchKernel
            u = ctypes.c_uint
            f.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            f.restype = ctypes.c_int
            name = lib.cuGetErrorName
            name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            _DRIVER.append((f, name))
        except (OSError, AttributeError):
            _DRIVER.append(None)
    return _DRIVER[0]


def _driver_error(code: int) -> str:
    s = ctypes.c_char_p()
    d = _driver()
    if d is not None and d[1](code, ctypes.byref(s)) == 0 and s.value:
        return s.value.decode()
    return f"CUDA error {code}"


class _Plan:
    """One operand layout's launch: the kernel, grid, block and every scalar argument,
    decided (and every check done) once; :meth:`run` allocates the outputs, writes the five
    pointers and launches on the current stream."""

    __slots__ = ("add", "M", "shape", "tdtype", "tdevice", "device", "rk", "fn", "grid", "block",
                 "vals", "params", "np_tail", "stream", "driver", "fields")

    def __init__(self, info: Dict, cfg: LaunchConfig, flags: int, sx: int, sg: int, device: int):
        self.add = info["op"] == RMSNORM_ADD
        self.M = info["M"]
        xa = info["x"].array
        self.shape, self.tdtype, self.tdevice, self.device = tuple(xa.shape), xa.dtype, xa.device, device
        self.grid, self.block = cfg.grid, cfg.block
        self.rk = get_kernel(cfg.kernel, info["dtype"], device) if self.M else None
        self.fn = int(self.rk.kernel.ptr) if self.M else 0
        c = ctypes
        self.vals = [c.c_uint64(0) for _ in range(5)] + [
            c.c_int64(self.M), c.c_int32(info["N"]), c.c_int64(sx), c.c_int64(sg), c.c_float(info["eps"]),
            c.c_float(info["offset"]), c.c_int32(flags)]
        self.params = (c.c_void_p * len(self.vals))(*[c.addressof(v) for v in self.vals])
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what _torch_stream_ptr reads
        self.stream = raw if raw is not None else _torch_stream_ptr
        d = _driver()
        self.driver = d[0] if d is not None else None
        self.np_tail = (np.int64(self.M), np.int32(info["N"]), np.int64(sx), np.int64(sg),
                        np.float32(info["eps"]), np.float32(info["offset"]), np.int32(flags))
        # what the C++ launcher's insert() takes: the same kernel (the plain or the _x build, as
        # chosen here: the C++ side names no kernel) and scalar arguments, and the kernel's owner
        # (the C++ plan keeps it, so the module stays loaded while it is cached)
        self.fields = (self.fn, self.grid, self.block, self.M, info["N"], sx, sg, float(np.float32(info["eps"])),
                       float(np.float32(info["offset"])), flags, self.add, self.rk)

    def run(self, x, x2, weight):
        out = torch.empty(self.shape, dtype=self.tdtype, device=self.tdevice)
        h = torch.empty(self.shape, dtype=self.tdtype, device=self.tdevice) if self.add else None
        if self.M:
            ptrs = (out.data_ptr(), h.data_ptr() if h is not None else 0, x.data_ptr(),
                    x2.data_ptr() if x2 is not None else 0, weight.data_ptr())
            stream = self.stream(self.device)
            f = self.driver if LAUNCHER != "cupy" else None
            rc = _CUDA_ERROR_INVALID_CONTEXT
            if f is not None:
                v = self.vals
                v[0].value, v[1].value, v[2].value, v[3].value, v[4].value = ptrs
                rc = f(self.fn, self.grid, 1, 1, self.block, 1, 1, 0, stream, self.params, None)
            if rc == _CUDA_ERROR_INVALID_CONTEXT:  # CuPy's launch (it makes the context current)
                args = (*(np.uint64(p) for p in ptrs), *self.np_tail)
                launch(self.rk, self.grid, self.block, args, "torch", self.device)
            elif rc:
                raise RuntimeError(f"cuLaunchKernel of the fused RMSNorm kernel failed: {_driver_error(rc)} "
                                   f"({rc}); grid {self.grid}, block {self.block}")
        return (out, h) if self.add else out


def _plan_for(info: Dict) -> Optional[_Plan]:
    """The plan of a validated torch call, or None where the call must take :func:`_launch`
    (leading dims that do not merge into one row stride, the wide-row module, a fresh output
    that is not 16-byte aligned)."""
    xo, go, M, N, dt = info["x"], info["gate"], info["M"], info["N"], info["dtype"]
    device = xo.array.device.index
    if M == 0:
        return _Plan(info, _choose_config(0, N, dt, go is not None, None, False, info["op"]), 0, N, 0, device)
    backend.require_gpu("the fused RMSNorm op")
    wdt = info["wdtype"] if info["wdtype"] != dt else None
    cast = CAST_LLAMA if info["llama"] else CAST_FP32
    if uses_wide(info["op"], N, dt, _compute_capability(device), wdt, cast):
        return None
    x2 = xo.array.reshape(M, N)
    g2 = go.array.reshape(M, N) if go is not None else None
    if x2.data_ptr() != xo.array.data_ptr() or (g2 is not None and g2.data_ptr() != go.array.data_ptr()):
        return None  # a copy, not a view
    sx = x2.stride(0) if M > 1 else N
    sg = g2.stride(0) if g2 is not None and M > 1 else (N if g2 is not None else 0)
    itemsize, vec16 = DTYPES[dt][1], DTYPES[dt][2]
    ptrs = [xo.array.data_ptr(), info["weight"].array.data_ptr()] + ([go.array.data_ptr()] if go is not None else [])
    aligned = (N % vec16 == 0 and all(p % 16 == 0 for p in ptrs)
               and (M == 1 or (sx * itemsize) % 16 == 0) and (g2 is None or M == 1 or (sg * itemsize) % 16 == 0))
    add = info["op"] == RMSNORM_ADD
    fits = _fits_l2(M, N, itemsize, go is not None, l2_bytes(device), add)
    cfg = _choose_config(M, N, dt, go is not None, N % vec16 == 0, fits, info["op"], aligned, wdt,
                         _out_ext(info["offset"], info["llama"]))
    flags = (FLAG_FITS_L2 if fits else 0) | (FLAG_LLAMA if info["llama"] else 0)
    return _Plan(info, cfg, flags, int(sx), int(sg), device)


_NUMBER = (float, int)
_OP_ID = {"rmsnorm": 0, "rmsnorm_gate": 1, RMSNORM_ADD: 2}  # kernels/rmsnorm_launcher.cpp's op numbers
_CAST_ID = {CAST_FP32: 0, CAST_LLAMA: 1}
#: The C++ launcher module once built and loaded (None before, or where it cannot be built).
_EXT: List = [None]


def _ext_backward(op: int, grad_y, grad_h, x, x2, weight, h, eps: float, offset: float, needs):
    """The C++ autograd node's backward: ``(dx, dx2, dweight)`` (None where not needed), by the
    same composite as :class:`_EagerFn`."""
    name = ("rmsnorm", "rmsnorm_gate", RMSNORM_ADD)[op]
    return _backward(name, (grad_y, grad_h), x, x2, weight, h, eps, offset, needs)


def _ext_register(op: str, x, x2, weight, eps, offset, cast, plan) -> None:
    """Give the C++ launcher this layout's plan (None: the layout takes Python's path every
    call).  The first call starts the launcher's build; until it is loaded this does nothing."""
    if LAUNCHER != "cpp":
        return
    ext = _EXT[0]
    if ext is None:
        from . import launcher

        ext = launcher.poll(_ext_backward)
        if ext is None:
            return
        _EXT[0] = ext
    ext.insert(_OP_ID[op], x, x2, weight, eps, offset, _CAST_ID[cast], plan.fields if plan else None)


def ensure_launcher(timeout: Optional[float] = None) -> str:
    """Build (in the foreground, ~30-60 s the first time on a machine) and load the C++
    launcher, so that the calls after this one use it; returns
    :func:`gpu_viz.rmsnorm.launcher.status` (why not, where it cannot be built)."""
    from . import launcher

    if LAUNCHER == "cpp" and _EXT[0] is None:
        _EXT[0] = launcher.ensure(_ext_backward, timeout)
    return launcher.status()


def _fast(op: str, x, x2, weight, eps, offset, cast):
    """The eager call's result through its plan (built, with every check, on the first call of
    an operand layout): in C++ where the launcher has the plan, else in Python; through
    :func:`_launch` where no plan applies."""
    ext = _EXT[0]
    if ext is not None and LAUNCHER == "cpp" and type(eps) in _NUMBER and type(offset) in _NUMBER:
        r = ext.call(_OP_ID[op], x, x2, weight, eps, offset, _CAST_ID.get(cast, -1), False)
        if type(r) is not int:
            return r
    if (type(eps) not in (float, int) or type(offset) not in (float, int) or not x.is_cuda
            or not weight.is_cuda or (x2 is not None and not x2.is_cuda)
            or x.is_neg() or weight.is_neg() or (x2 is not None and x2.is_neg())):
        plan, key = None, None  # e.g. a numpy scalar, a CPU tensor, a negated view: checked every call
    else:
        key = (op, type(x), x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() % 16,
               type(weight), weight.shape, weight.stride(), weight.dtype, weight.get_device(), weight.data_ptr() % 16,
               None if x2 is None else (type(x2), x2.shape, x2.stride(), x2.dtype, x2.get_device(), x2.data_ptr() % 16),
               eps, offset, cast, _current_device())
        plan = _plans().get(key)
    if plan is None:
        info = _validate(x, weight, x2 if op == "rmsnorm_gate" else None, eps,
                         residual=x2 if op == RMSNORM_ADD else None, weight_offset=offset, cast=cast)
        plan = _plan_for(info) if key is not None and info["x"].array.device.index == _current_device() else None
        if key is not None:
            plans = _plans()
            if len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = plan if plan is not None else False
            _ext_register(op, x, x2, weight, eps, offset, cast, plan)
        if plan is None:
            return _launch(info)
    elif plan is False:
        _ext_register(op, x, x2, weight, eps, offset, cast, None)
        return _launch(_validate(x, weight, x2 if op == "rmsnorm_gate" else None, eps,
                                 residual=x2 if op == RMSNORM_ADD else None, weight_offset=offset, cast=cast))
    else:
        _ext_register(op, x, x2, weight, eps, offset, cast, plan)  # the C++ launcher missed it
    return plan.run(x, x2, weight)


def _current_device() -> int:
    """The current CUDA device's index (torch's C hook where it exists: no lazy-init check)."""
    get = getattr(torch._C, "_cuda_getDevice", None)
    return get() if get is not None else torch.cuda.current_device()


# ---------------------------------------------------------------------------------------
# torch custom ops, fake (meta) kernels and autograd

def _torch_backward(grad, x, weight, gate, eps: float, needs: Sequence[bool], offset: float = 0.0):
    """Gradients by a composite of fp32 torch ops (not a CUDA kernel of ours):

        a = x * silu(g) (or x),  r = rsqrt(mean(x^2) + eps),  y = a * w' * r,  w' = w + offset
        dx = r * (G w' s) - x r^3 mean(G w' a),   s = silu(g) (or 1)
        dw = sum_rows(G a r)
        dg = G x w' r silu'(g),   silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g)))

    The "llama" cast's intermediate rounding counts as the identity.  Returns grads in the
    inputs' dtypes (None where not needed).
    """
    N = x.shape[-1]
    xf = x.float().reshape(-1, N)
    G = grad.float().reshape(-1, N)
    wf = weight.float() + offset if offset else weight.float()
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


def _add_backward(grad_y, grad_h, h, x, residual, weight, eps: float, offset: float, needs: Sequence[bool]):
    """Gradients of the add op: y = rmsnorm(h), h = x + residual (both outputs used):
    dh = d rmsnorm / dh (grad_y) + grad_h, dx = dresidual = dh; dw as rmsnorm's."""
    need_h = needs[0] or needs[1]
    dh, dw, _ = _torch_backward(grad_y, h, weight, None, eps, (need_h, needs[2]), offset)
    if need_h and grad_h is not None:
        dh = (dh.float() + grad_h.float())
    dx = dh.to(x.dtype) if needs[0] else None
    dr = dh.to(residual.dtype) if needs[1] else None
    return dx, dr, dw


def _registered(name: str) -> bool:
    """True when ``torch.ops.gpu_viz.<name>`` exists already (a reloaded module keeps the first
    registration instead of failing on a duplicate)."""
    try:
        getattr(torch.ops.gpu_viz, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def _cast(llama: bool) -> str:
    return CAST_LLAMA if llama else CAST_FP32


if torch is not None and not _registered("rmsnorm"):
    @torch.library.custom_op("gpu_viz::rmsnorm", mutates_args=())
    def _rmsnorm_op(x: torch.Tensor, weight: torch.Tensor, eps: float, weight_offset: float = 0.0,
                    llama: bool = False) -> torch.Tensor:
        return _fast("rmsnorm", x, None, weight, eps, weight_offset, _cast(llama))

    @_rmsnorm_op.register_fake
    def _(x, weight, eps, weight_offset=0.0, llama=False):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def _rmsnorm_setup(ctx, inputs, output):
        x, weight, eps = inputs[:3]
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        ctx.offset = inputs[3] if len(inputs) > 3 else 0.0

    def _rmsnorm_bwd(ctx, grad):
        x, weight = ctx.saved_tensors
        dx, dw, _ = _torch_backward(grad, x, weight, None, ctx.eps, ctx.needs_input_grad[:2], ctx.offset)
        return dx, dw, None, None, None

    _rmsnorm_op.register_autograd(_rmsnorm_bwd, setup_context=_rmsnorm_setup)

if torch is not None and not _registered("rmsnorm_gate"):
    @torch.library.custom_op("gpu_viz::rmsnorm_gate", mutates_args=())
    def _rmsnorm_gate_op(x: torch.Tensor, gate: torch.Tensor, weight: torch.Tensor, eps: float,
                         weight_offset: float = 0.0, llama: bool = False) -> torch.Tensor:
        return _fast("rmsnorm_gate", x, gate, weight, eps, weight_offset, _cast(llama))

    @_rmsnorm_gate_op.register_fake
    def _(x, gate, weight, eps, weight_offset=0.0, llama=False):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def _rmsnorm_gate_setup(ctx, inputs, output):
        x, gate, weight, eps = inputs[:4]
        ctx.save_for_backward(x, gate, weight)
        ctx.eps = eps
        ctx.offset = inputs[4] if len(inputs) > 4 else 0.0

    def _rmsnorm_gate_bwd(ctx, grad):
        x, gate, weight = ctx.saved_tensors
        nx, ng, nw = ctx.needs_input_grad[:3]
        dx, dw, dg = _torch_backward(grad, x, weight, gate, ctx.eps, (nx, nw, ng), ctx.offset)
        return dx, dg, dw, None, None, None

    _rmsnorm_gate_op.register_autograd(_rmsnorm_gate_bwd, setup_context=_rmsnorm_gate_setup)

if torch is not None and not _registered("rmsnorm_add"):
    @torch.library.custom_op("gpu_viz::rmsnorm_add", mutates_args=())
    def _rmsnorm_add_op(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                        weight_offset: float = 0.0, llama: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
        return _fast(RMSNORM_ADD, x, residual, weight, eps, weight_offset, _cast(llama))

    @_rmsnorm_add_op.register_fake
    def _(x, residual, weight, eps, weight_offset=0.0, llama=False):
        return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
                torch.empty(x.shape, dtype=x.dtype, device=x.device))

    def _rmsnorm_add_setup(ctx, inputs, output):
        x, residual, weight, eps = inputs[:4]
        ctx.save_for_backward(x, residual, weight, output[1])
        ctx.eps = eps
        ctx.offset = inputs[4] if len(inputs) > 4 else 0.0

    def _rmsnorm_add_bwd(ctx, grad_y, grad_h):
        x, residual, weight, h = ctx.saved_tensors
        dx, dr, dw = _add_backward(grad_y, grad_h, h, x, residual, weight, ctx.eps, ctx.offset,
                                   ctx.needs_input_grad[:3])
        return dx, dr, dw, None, None, None

    _rmsnorm_add_op.register_autograd(_rmsnorm_add_bwd, setup_context=_rmsnorm_add_setup)


if torch is not None:
    class _EagerFn(torch.autograd.Function):
        """The eager autograd path (no dispatcher round trip): the same plan launch forward and
        the same composite backward as the custom ops' ``register_autograd``."""

        @staticmethod
        def forward(ctx, op, x, x2, weight, eps, offset, cast):
            res = _fast(op, x, x2, weight, eps, offset, cast)
            ctx.op, ctx.eps, ctx.offset = op, float(eps), float(offset)
            ctx.save_for_backward(x, x2, weight, res[1] if op == RMSNORM_ADD else None)
            return res

        @staticmethod
        def backward(ctx, *grads):
            x, x2, weight, h = ctx.saved_tensors
            dx, d2, dw = _backward(ctx.op, grads, x, x2, weight, h, ctx.eps, ctx.offset, ctx.needs_input_grad[1:4])
            return None, dx, d2, dw, None, None, None


def _backward(op: str, grads, x, x2, weight, h, eps: float, offset: float, needs):
    """``(dx, dx2, dweight)`` of an eager call (x2: the gate or the residual; h: the add op's
    second output); ``needs``: (x, x2, weight) need grads.  The Python and C++ autograd paths
    both come here."""
    nx, n2, nw = needs
    if op == RMSNORM_ADD:
        return _add_backward(grads[0], grads[1], h, x, x2, weight, eps, offset, (nx, n2, nw))
    gate = x2 if op == "rmsnorm_gate" else None
    dx, dw, d2 = _torch_backward(grads[0], x, weight, gate, eps, (nx, nw, n2), offset)
    return dx, d2, dw


# ---------------------------------------------------------------------------------------
# public ops

def _on_cpu(*tensors) -> bool:
    """A CPU tensor among the operands of an eager call: :func:`_validate` refuses it, and
    refused here it is a three-frame traceback instead of one through torch's dispatcher (~10
    torch frames).  False while torch.compile traces (the op then refuses it at run time, and
    the graph stays whole)."""
    return not torch.compiler.is_compiling() and any(t.device.type == "cpu" for t in tensors)


if torch is not None:
    _is_compiling = torch.compiler.is_compiling
    _grad_enabled = torch.is_grad_enabled


def _call(op: str, x, x2, weight, eps, weight_offset, cast):
    """Every public op's one entry: torch eager -> the plan (through :class:`_EagerFn` when
    autograd records the call), torch.compile -> ``torch.ops.gpu_viz.<op>``, CuPy ->
    :func:`_launch`."""
    gate = x2 if op == "rmsnorm_gate" else None
    residual = x2 if op == RMSNORM_ADD else None
    if op != "rmsnorm" and x2 is None:
        name = "gate" if op == "rmsnorm_gate" else "residual"
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array of x's shape, got None")
    if torch is not None and isinstance(x, torch.Tensor):
        Tensor = torch.Tensor
        # (explicit tests, no generators: this is the per-call path)
        if not (isinstance(weight, Tensor) and (x2 is None or isinstance(x2, Tensor))):
            _validate(x, weight, gate, eps, residual=residual, weight_offset=weight_offset, cast=cast)  # raises
        if _is_compiling():
            # the op's implementation validates everything else (once per call, also when traced)
            eps, offset = _check_eps(eps), check_f32_arg("weight_offset", weight_offset)
            _check_cast(cast)
            fn = getattr(torch.ops.gpu_viz, op)
            return fn(x, weight, eps, offset, cast == CAST_LLAMA) if x2 is None else fn(
                x, x2, weight, eps, offset, cast == CAST_LLAMA)
        ext = _EXT[0]  # the C++ launcher: the whole call, autograd node included, where it has the plan
        if ext is not None and LAUNCHER == "cpp" and type(eps) in _NUMBER and type(weight_offset) in _NUMBER:
            r = ext.call(_OP_ID[op], x, x2, weight, eps, weight_offset, _CAST_ID.get(cast, -1), True)
            if type(r) is not int:
                return r
        if not (x.is_cuda and weight.is_cuda and (x2 is None or x2.is_cuda)):
            _validate(x, weight, gate, eps, residual=residual, weight_offset=weight_offset, cast=cast)  # raises
        if _grad_enabled() and (x.requires_grad or weight.requires_grad or (x2 is not None and x2.requires_grad)):
            return _EagerFn.apply(op, x, x2, weight, eps, weight_offset, cast)
        return _fast(op, x, x2, weight, eps, weight_offset, cast)
    return _launch(_validate(x, weight, gate, eps, residual=residual, weight_offset=weight_offset, cast=cast))


_GUARANTEE = """Batch invariance: a row's output bits depend only on N, the dtypes, eps, weight_offset,
        cast, the weight and that row's values -- never on M, the row's position in x, its
        memory alignment, or whether the problem fits in L2 (one sum order per N: see
        kernels/rmsnorm_fused.cu, "Batch invariance"; tests/test_rmsnorm_fused.py checks it
        bit for bit at M = 1, 3, 64, 1000, 4096)."""


def rmsnorm(x, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = CAST_FP32):
    """Fused RMSNorm, one kernel: ``y = x * (weight + weight_offset) * rsqrt(mean(x^2, -1) + eps)``.

    Args:
        x: ``(..., N)`` torch CUDA tensor or CuPy array, float32 / float16 / bfloat16; the last
            dimension contiguous (stride 1), leading dimensions any strides (rows of a wider
            buffer, e.g. ``buf[:, :N]``, are read in place; leading dims that cannot merge into
            one row stride are copied first).  Any M = prod(leading dims) >= 0, any N >= 1.
        weight: ``(N,)``, same library and device, stride 1; x's dtype or float32 (e.g. an
            fp32 weight with bf16 x, as HF checkpoints ship it).
        eps: >= 0, added to the mean square (fp32 in the kernel).
        weight_offset: added to the weight in fp32 (Gemma's ``1 + w``: 1.0); default 0.
        cast: ``"fp32"`` (default): ``y = T(x * w * r)`` computed in fp32, rounded once to x's
            dtype T; ``"llama"``: HF LlamaRMSNorm's order, ``y = T(T(x * r) * w)``.

    Returns:
        y: x's shape, dtype (whatever the weight's) and library, contiguous; launched on the
        caller's current stream (``torch.cuda.current_stream()`` / CuPy's current stream)
        without host synchronisation.  M = 0 returns an empty y, no launch.  NaN/inf in a row
        make only that row NaN (or 0 where the formula gives 0).
        torch: differentiable in x and weight (backward: fp32 torch composite, not a fused
        kernel); ``torch.compile(fullgraph=True)`` and CUDA graphs accept it
        (``torch.ops.gpu_viz.rmsnorm``).
        {guarantee}

    Raises:
        TypeError: not a torch tensor / CuPy array, mixed libraries, unsupported dtypes, a
            weight neither x's dtype nor float32, non-float eps / weight_offset.
        ValueError: CPU tensors, operands on different devices, weight not of shape (N,),
            a last dimension with stride != 1, N == 0, negative or non-finite eps, a
            non-finite weight_offset, an unknown cast.
        GPUUnavailable: in CPU mode (after the checks above).
    """
    return _call("rmsnorm", x, None, weight, eps, weight_offset, cast)


def rmsnorm_gate(x, gate, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = CAST_FP32):
    """Fused RMSNorm + SiLU gate, one kernel:
    ``y = x * (weight + weight_offset) * silu(gate) * rsqrt(mean(x^2, -1) + eps)`` -- the
    statistic from x only.

    Args:
        x, gate: ``(..., N)``, same shape (strides may differ) and dtype, torch CUDA tensors or
            CuPy arrays, float32 / float16 / bfloat16, last dimension contiguous.
        weight: ``(N,)``, x's dtype or float32.  eps, weight_offset, cast: as in :func:`rmsnorm`
            ("llama" rounds ``x * silu(g) * r`` to x's dtype before the weight).

    Returns:
        y as in :func:`rmsnorm`; torch: differentiable in x, gate and weight (fp32 torch
        composite backward).  ``silu(g) = g / (1 + e^-g)`` with the fast ``__expf`` /
        ``__fdividef`` intrinsics (relative error <= ~1.5e-6 for |g| <= 8, inside
        ``TOLERANCES``; exactly -0 / NaN at the limits like the float64 formula).
        {guarantee}

    Raises:
        as :func:`rmsnorm`, and ValueError when gate's shape differs from x's, TypeError when
        its dtype does.
    """
    return _call("rmsnorm_gate", x, gate, weight, eps, weight_offset, cast)


def rmsnorm_add(x, residual, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = CAST_FP32):
    """Fused residual add + RMSNorm, one kernel (vLLM's ``fused_add_rms_norm``, out of place):
    ``h = x + residual`` (rounded to x's dtype), ``y = h * (weight + weight_offset) *
    rsqrt(mean(h^2, -1) + eps)``; reads x and residual once, writes h and y once.

    Args:
        x, residual: ``(..., N)``, same shape and dtype (strides may differ), last dimension
            contiguous.  weight, eps, weight_offset, cast: as in :func:`rmsnorm`.

    Returns:
        ``(y, h)``: both x's shape and dtype, contiguous; torch: differentiable in x, residual
        and weight through both outputs.  {guarantee}

    Raises:
        as :func:`rmsnorm`, and ValueError / TypeError when residual's shape / dtype differ
        from x's.
    """
    return _call(RMSNORM_ADD, x, residual, weight, eps, weight_offset, cast)


for _f in (rmsnorm, rmsnorm_gate, rmsnorm_add):
    _f.__doc__ = _f.__doc__.replace("{guarantee}", _GUARANTEE)


# ---------------------------------------------------------------------------------------
# nn.Module wrappers (the thinnest layer: a weight parameter and eps)

if torch is not None:
    class FusedRMSNorm(torch.nn.Module):
        """``y = rmsnorm(x, self.weight, self.eps, weight_offset=..., cast=...)`` with a learnable
        ``weight`` of shape (N,); ``forward(x, residual)`` returns ``rmsnorm_add``'s ``(y, h)``.

        Loads an HF ``LlamaRMSNorm`` state dict unchanged (its one entry is ``weight``; pass
        ``cast="llama"`` for its cast order), and a Gemma-style one with ``weight_offset=1.0``
        (Gemma stores w and scales by ``1 + w``).

        Args:
            N: features per row, >= 1.  eps: >= 0.  device, dtype: of the weight (ones, or
            zeros with a weight_offset of 1 -- the identity either way); the weight may be
            float32 with fp16/bf16 activations.  weight_offset, cast: as in :func:`rmsnorm`.
        ``forward(x)``: x ``(..., N)`` CUDA tensor; see :func:`rmsnorm`.
        """

        def __init__(self, N: int, eps: float = 1e-6, device=None, dtype=None, *, weight_offset: float = 0.0,
                     cast: str = CAST_FP32):
            super().__init__()
            N = _check_int("N", N, 1, MAX_N)
            self.eps = _check_eps(eps)
            self.weight_offset = check_f32_arg("weight_offset", weight_offset)
            self.cast = _check_cast(cast)
            if dtype is not None and dtype not in (torch.float32, torch.float16, torch.bfloat16):
                raise TypeError(f"dtype (of the weight) must be torch.float32, torch.float16 or "
                                f"torch.bfloat16, got {dtype}")
            init = torch.zeros if self.weight_offset == 1.0 else torch.ones
            self.weight = torch.nn.Parameter(init(N, device=device, dtype=dtype))

        def forward(self, x, residual=None):
            if residual is not None:
                return rmsnorm_add(x, residual, self.weight, self.eps, weight_offset=self.weight_offset,
                                   cast=self.cast)
            return rmsnorm(x, self.weight, self.eps, weight_offset=self.weight_offset, cast=self.cast)

        def extra_repr(self) -> str:
            more = f", weight_offset={self.weight_offset:g}" if self.weight_offset else ""
            more += f", cast={self.cast!r}" if self.cast != CAST_FP32 else ""
            return f"N={self.weight.shape[0]}, eps={self.eps:g}{more}"

    class FusedRMSNormGate(FusedRMSNorm):
        """``y = rmsnorm_gate(x, gate, self.weight, self.eps, ...)``; ``forward(x, gate)``."""

        def forward(self, x, gate):
            return rmsnorm_gate(x, gate, self.weight, self.eps, weight_offset=self.weight_offset, cast=self.cast)


# ---------------------------------------------------------------------------------------
# what the compiler decided

_NAME = re.compile(r"^(rmsnorm(?:_gate|_add)?)_(warp|block|wide)_(f32|f16|bf16)_([vu])(\d+)(?:_e(\d+))?(_w32)?"
                   rf"({OUT_EXT_SUFFIX})?$")
_SUFFIX_TO_DTYPE = {v[0]: k for k, v in DTYPES.items()}


def describe_kernel(name: str) -> Dict:
    """``{"op", "variant", "dtype", "vec", "ept", "aligned", "weight_dtype", "out_ext"}`` parsed
    from a kernel name (``weight_dtype`` None: x's; ``out_ext`` True: the extended-output build,
    ``_x``)."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"{name!r} is not a kernel of {FILE}")
    op, variant, suffix, v, vec, ept, w32, ext = m.groups()
    return {"op": op, "variant": variant, "dtype": _SUFFIX_TO_DTYPE[suffix], "vec": int(vec),
            "ept": int(ept) if ept else None, "aligned": v == "v", "weight_dtype": "float32" if w32 else None,
            "out_ext": ext is not None}


@functools.lru_cache(maxsize=None)
def _ptxas_rows(arch: str) -> Tuple:
    """ptxas rows for ``arch``: one nvcc per module (dtype, the fp32-weight builds of fp16 / bf16,
    each also as the extended-output build), as many at once as there are CPUs."""
    from concurrent.futures import ThreadPoolExecutor

    builds = [(dt, w32, ext) for dt in DTYPES for w32 in ((False,) if dt == "float32" else (False, True))
              for ext in (False, True)]
    with ThreadPoolExecutor(min(len(builds), os.cpu_count() or 1)) as pool:
        parts = pool.map(lambda b: kernels.nvcc_compile(FILE, arch, compile_options(*b)), builds)
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
