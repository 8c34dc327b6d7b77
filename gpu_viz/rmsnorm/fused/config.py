"""Which kernel, block and grid a fused-op problem gets: pure Python over :mod:`.names`.

* :func:`launch_config` / :func:`choose_config` -- the :class:`LaunchConfig` of an (M, N, dtype)
  problem (the public answers); :func:`config_for` -- the same decision with every input the
  launch layer knows (op, alignment, weight dtype, output build), cached: it is on every call's
  path.
* :func:`fits_l2` -- whether x, gate and y fit in L2 together (the kernels' cache hints follow it).
* :func:`reduction_order` -- what fixes a row's sum order (batch invariance).
* :func:`forced_config` / :func:`check_forced` -- a hand-made config (tests, sanitizer) and the
  check that it fits the problem it is launched on.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Dict, Optional, Tuple

from ... import backend
from ... import device as _device
from ...check import check_bool as _check_bool
from ...check import check_f32_arg
from ...check import check_int as _check_int
from ..dtypes import DTYPES, RMSNORM, RMSNORM_GATE, dtype_name
from .names import (BLOCK, BLOCK_MAX_THREADS, BLOCK_TARGET_THREADS, CAST_FP32, CAST_LLAMA, EPT_CHOICES,
                    MAX_GRID_X, MAX_N, MULTI_VECTOR_BYTES_PER_THREAD, MULTI_VECTOR_ROW_BYTES,
                    MULTI_VECTOR_TARGET_THREADS, OUT_EXT_SUFFIX, SCALAR_BLOCK_EPT, VARIANTS, WARP, WARP_ROW_MAX_N,
                    WARP_ROW_MAX_N_VECTOR, WARP_ROWS_PER_BLOCK, WIDE, WIDE_THREADS, build_of, check_cast,
                    kernel_name, kernel_name_set, out_ext, w32)


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
    return config_for(M, N, dtype_name(dtype), _check_bool("gate", gate), vectorized, fits_l2)


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


def _block_fits(epts, vec: int, size: int, N: int, gate: bool, fits_l2: bool):
    """The ``block`` variant's candidates for a row of N: ``(misses the target, ept, threads)`` per
    EPT whose block is within the kernel's bounds (the smallest of them is taken)."""
    nvec = N // vec
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
    return fits


@functools.lru_cache(maxsize=4096)  # on every call's path; a pure function of its arguments
def config_for(M: int, N: int, dt: str, gate: bool, vectorized: Optional[bool], fits_l2: bool = False,
               op: Optional[str] = None, aligned: bool = True, wdt: Optional[str] = None,
               out_ext: bool = False) -> LaunchConfig:
    """``gate``: a second input row (the gate, or the add op's residual); ``op`` the kernel's
    op (default from ``gate``); ``aligned`` False: the misaligned twin of a 16-byte kernel;
    ``wdt`` the weight's dtype name (None: x's); ``out_ext`` the extended-output build
    (:func:`.names.out_ext` of the call's weight_offset and cast).  The launch shape is the same
    in either build."""
    vec16 = DTYPES[dt][2]
    if vectorized is None:
        vectorized = N % vec16 == 0
    elif vectorized and N % vec16:
        raise ValueError(f"vectorized=True needs N % {vec16} == 0 for {dt} (16-byte loads); got N={N}")
    vec = vec16 if vectorized else 1
    op = op or (RMSNORM_GATE if gate else RMSNORM)
    kw = {"aligned": aligned or vec == 1, "weight_dtype": wdt, "out_ext": out_ext}
    if N <= (WARP_ROW_MAX_N_VECTOR if vec > 1 else WARP_ROW_MAX_N):
        ept = min(e for e in EPT_CHOICES if 32 * e >= N)
        return LaunchConfig(op, WARP, kernel_name(op, WARP, dt, vec, ept, **kw), dt, M, N, vec, ept,
                            block=32 * WARP_ROWS_PER_BLOCK, rows_per_block=WARP_ROWS_PER_BLOCK,
                            grid=-(-M // WARP_ROWS_PER_BLOCK), capacity=32 * ept, aligned=kw["aligned"])
    if M > MAX_GRID_X:
        raise ValueError(f"M={M} rows exceeds gridDim.x={MAX_GRID_X} for N={N} > {WARP_ROW_MAX_N} "
                         "(one block per row)")
    fits = _block_fits(EPT_CHOICES if vec > 1 else SCALAR_BLOCK_EPT, vec, DTYPES[dt][1], N, gate, fits_l2)
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
        fits_l2 = fits_current_device(M, N, dtype, _check_bool("gate", gate))
    return choose_config(M, N, dtype, gate=gate, vectorized=vectorized, fits_l2=fits_l2).as_dict()


# ---------------------------------------------------------------------------------------
# L2

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
    evict-first loads are faster, beyond it slower).  The launch config follows it too
    (:func:`launch_config`, MULTI_VECTOR_ROW_BYTES): problems that fit get one 16-byte vector per
    thread where that block fits in 1024 threads (fp16/bf16 rows up to 8192).

    Raises:
        TypeError: non-int ``M`` / ``N`` / ``l2``, an unsupported dtype.
        ValueError: ``M`` < 0, ``N`` < 1, ``l2`` < 0.
    """
    M = _check_int("M", M, 0, 2**62)
    N = _check_int("N", N, 1, MAX_N)
    l2 = _check_int("l2", l2, 0, 2**62)
    return fits_l2_bytes(M, N, DTYPES[dtype_name(dtype)][1], bool(gate), l2)


def fits_l2_bytes(M: int, N: int, itemsize: int, gate: bool, l2: int, add: bool = False) -> bool:
    """:func:`fits_l2` of checked arguments; ``add``: the add op (x, residual, h and y)."""
    return (4 if add else 3 if gate else 2) * M * N * itemsize <= l2


def fits_current_device(M: int, N: int, dtype, gate: bool) -> bool:
    """:func:`fits_l2` on the current CUDA device's L2; False in CPU mode."""
    if not backend.has_gpu():
        return False
    cupy = backend.require_cupy("fits_l2")
    return fits_l2(M, N, dtype, gate, l2_bytes(cupy.cuda.runtime.getDevice()))


# ---------------------------------------------------------------------------------------
# hand-made configurations (tests, sanitizer)

def check_forced(cfg: LaunchConfig, M: int, N: int, dt: str, gate: bool, aligned: bool,
                 op: Optional[str] = None, wdt: Optional[str] = None, out_ext: bool = False):
    """A (possibly hand-made) config must fit the problem: guards the forced-config test hook.
    ``out_ext``: the call has a weight_offset or the llama cast (:func:`.names.out_ext`), which only
    the ``_x`` kernels compute; a plain kernel would silently leave them out.

    Raises:
        ValueError: naming every way the config does not fit.
    """
    problems = []
    op = op or (RMSNORM_GATE if gate else RMSNORM)
    if cfg.kernel not in kernel_name_set():
        problems.append(f"no kernel {cfg.kernel}")
    if cfg.dtype != dt or cfg.op != op:
        problems.append("op/dtype differ")
    is_w32, is_ext = build_of(cfg.kernel)
    if w32(dt, wdt) != is_w32:
        problems.append("the kernel's weight dtype differs")
    if out_ext and not is_ext:
        problems.append(f"a weight_offset or the llama cast needs the extended-output kernel "
                        f"{cfg.kernel}{OUT_EXT_SUFFIX} (forced_config(..., weight_offset=, cast=)); "
                        f"{cfg.kernel} computes only T(x * w * r)")
    elif is_ext and not out_ext:
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
    (``_x``) kernel as the op does.  Validated when launched (:func:`check_forced`).

    Raises:
        ValueError: an unknown variant, no ept for a register-resident variant, an unknown cast,
            a non-finite weight_offset.
    """
    dt = dtype_name(dtype)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if variant != WIDE and ept is None:
        raise ValueError(f"variant {variant!r} holds the row in registers: pass ept (elements per thread)")
    op = op or (RMSNORM_GATE if gate else RMSNORM)
    rows = WARP_ROWS_PER_BLOCK if variant == WARP else 1
    cap = None if variant == WIDE else (32 * ept if variant == WARP else block * ept)
    al = aligned or vec == 1
    ext = out_ext(check_f32_arg("weight_offset", weight_offset), check_cast(cast) == CAST_LLAMA)
    return LaunchConfig(op, variant, kernel_name(op, variant, dt, vec, ept, aligned=al, weight_dtype=weight_dtype,
                                                 out_ext=ext),
                        dt, M, N, vec, ept, block, rows, -(-M // rows), cap, al)
