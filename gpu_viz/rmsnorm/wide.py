"""Wide rows on a thread-block cluster (``kernels/rmsnorm_wide.cu``): RMSNorm and RMSNorm + SiLU
gate for 16384 < N <= 262144 on sm_90, one pass over x.

    rmsnorm       y = (x * (w + weight_offset)) * rstd
    rmsnorm_gate  y = ((x * silu(g)) * (w + weight_offset)) * rstd
    rstd = rsqrt(mean(x^2, -1) + eps)   (fp32, returned per row for a backward)

A row is split over the CTAs of one cluster; each CTA loads its slice into registers or shared
memory once, sums x^2 (block reduction), the CTA sums meet through distributed shared memory,
and y is written from the slice.  The op the other paths (:mod:`gpu_viz.rmsnorm.fused`) compute,
in the same fp32 operation order (x * w * r, one rounding), with the one tolerance table.

Contract for the dispatcher (the fused ops' launch layer):

* :func:`supported` ``(n, dtype, cc) -> bool`` -- True where this path runs; it depends on N, the
  dtype and the GPU's compute capability only.
* :func:`config` -- the launch configuration (cluster size, threads, elements per thread, and
  where a CTA keeps its slice): a pure function of (N, dtype, op, weight dtype, cc) -- never of
  M -- and the summation order is fixed by it, so the op is batch-invariant: a row's bits depend
  only on N, the dtypes, eps, weight_offset and the row's values, not on M or the row's position.
* :func:`forward` -- launch on a contiguous, 16-byte aligned (M, N) problem (:func:`aligned`
  tells); returns rstd.
* :func:`kernel_report` -- ptxas registers / spills of every configuration the policy uses.

Four modes (where a CTA keeps its slice and how the CTA sums meet: the kernel file's header);
:data:`POLICY` names one shape per op, element size and row-length bucket, :data:`POLICY_LOADS`,
:data:`POLICY_HYBRID` and :data:`POLICY_GATE_LATE` the knobs of the shared-memory and split modes.
Every mode adds a row's squares in the same order at a given (cluster, threads, ept), so no choice
of the policy changes a bit.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend, kernels
from ..arrays import framework as _framework
from ..arrays import _StreamPtr, _torch_stream_ptr, launch
from ..check import check_bool, check_f32_arg, check_int
from .dtypes import DTYPES, OPS, RMSNORM, RMSNORM_GATE, dtype_name
from .fused.checks import Operand
from .reference import check_eps

FILE = "rmsnorm_wide.cu"

#: Thread-block clusters and distributed shared memory arrived with sm_90.  The path is taken on
#: Hopper (compute capability 9.x) only: its shared-memory sizes (228 KiB per SM) and the
#: 16-CTA clusters are what the policy was measured with; later GPUs run the fused op's path
#: until the policy is measured there.
MIN_CC: Tuple[int, int] = (9, 0)
MAX_CC_MAJOR = 9
#: Row lengths this path takes: above the register-resident ``block`` variant of the fused ops
#: (N <= 16384), up to 262144 (a 1 MiB fp32 row on a 16-CTA cluster).
MIN_N = 16385
MAX_N = 262144
#: Largest portable cluster; above it the kernel needs the non-portable cluster-size attribute.
PORTABLE_CLUSTER = 8
MAX_CLUSTER = 16
#: cuFuncSetAttribute's CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (cuda.h).
_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
#: Registers of one SM (sm_90) and the most threads it holds: the min-blocks arithmetic below.
SM_REGISTERS = 65536
SM_THREADS = 2048
#: Registers a thread needs beside its row data (indices, pointers, the reduction), from ptxas
#: on sm_90: with it, every configuration below compiles without spills (tests check).
OVERHEAD_REGISTERS = 24
#: The same for HYBRID (its weight distance and the shared-memory half's addresses besides).
HYBRID_OVERHEAD_REGISTERS = 32
#: gridDim.x limit: M * cluster blocks.
MAX_GRID_X = 2**31 - 1

#: Where a CTA keeps its slice of the row (the kernel's WIDE_MODE) and how the CTA sums meet:
#: REGISTERS -- registers, a cluster barrier; SMEM -- shared memory (x, and the gate, by cp.async;
#: the weight read in the last step), a cluster barrier; MBAR -- SMEM with QuACK's exchange (the
#: CTA sums by st.async onto each CTA's mbarrier, no second cluster barrier); HYBRID -- MBAR with a
#: thread's first ``hreg`` chunks (default half) in registers and the rest in shared memory (slices
#: of 128 KiB on two CTAs an SM), the weight read ``wdist`` chunks ahead of the stores, and for the
#: gate op with ``gate_late`` g read there too, beside the weight (x alone on chip).  The numbers
#: are the kernels' names' ``_m<MODE>``.
REGISTERS, SMEM, MBAR, HYBRID = 0, 1, 5, 9
MODES = (REGISTERS, SMEM, MBAR, HYBRID)
#: When SMEM and MBAR load the weight for the last step (the kernel's WIDE_WLOAD): a chunk at a
#: time in the store loop (each load waits behind the previous chunk's store: one L2 round trip
#: a chunk), all of a thread's chunks together, or into registers with x's copies (its latency
#: behind the loads, the reductions and the exchange; the registers held throughout).
WLOAD_CHUNK, WLOAD_BATCH, WLOAD_EARLY = 0, 1, 2
WLOADS = (WLOAD_CHUNK, WLOAD_BATCH, WLOAD_EARLY)
WLOAD_MODES = (SMEM, MBAR)
#: The most weight bytes a thread holds at once for WLOAD_BATCH / WLOAD_EARLY in the policy
#: (ptxas, sm_90: 64 bytes -- 16 registers -- fit every policy shape without spills; an fp32 weight
#: of a 16-bit x, or 64 elements a thread, would spill: those keep WLOAD_CHUNK).
WLOAD_MAX_BYTES = 64
#: Shared memory of one SM (sm_90: 228 KiB, of which 1 KiB per resident CTA is the system's) and
#: the most one CTA may have (227 KiB, after the max-dynamic-shared-size opt-in).
SM_SHARED = 228 * 1024
CTA_RESERVED_SHARED = 1024
MAX_CTA_SHARED = 227 * 1024
#: Registers per thread the shared-memory modes are given at least (ptxas on sm_90 needs 32-64).
SMEM_MODE_REGISTERS = 40

# ---------------------------------------------------------------------------------------
# the policy: measured on an H200, the fastest of the shapes timed

#: The row-length buckets and their launch shape (cluster, threads, elements per thread, mode) by
#: op and element size: the smallest bucket >= N is used (vectors past N idle).  16-byte vectors
#: everywhere; EPT = elements of x each thread holds.
#: Source: the record nvidia-h200-2026-12-03-wide-policy.json ("policy").
POLICY: Dict[str, Dict[int, Dict[int, Tuple[int, int, int, int]]]] = {
    RMSNORM: {
        2: {32768: (4, 256, 32, MBAR), 65536: (2, 1024, 32, HYBRID), 131072: (4, 1024, 32, MBAR),
            262144: (8, 1024, 32, HYBRID)},
        4: {32768: (4, 512, 16, MBAR), 65536: (4, 1024, 16, MBAR), 131072: (4, 1024, 32, HYBRID),
            262144: (8, 1024, 32, HYBRID)}},
    RMSNORM_GATE: {
        2: {32768: (4, 256, 32, MBAR), 65536: (8, 256, 32, SMEM), 131072: (8, 1024, 16, HYBRID),
            262144: (8, 1024, 32, HYBRID)},
        4: {32768: (4, 512, 16, REGISTERS), 65536: (8, 512, 16, SMEM), 131072: (16, 512, 16, SMEM),
            262144: (8, 512, 64, HYBRID)}},
}
#: Per POLICY entry of mode SMEM or MBAR, (weight loads, __launch_bounds__' minimum blocks or None
#: for :func:`min_blocks`'s) where they measured faster than one chunk at a time (a minimum of 2
#: blocks of 1024 threads caps the registers at 32, so an SM holds two CTAs).  An entry absent
#: here: (WLOAD_CHUNK, None).  Weights whose bytes a thread would hold exceed WLOAD_MAX_BYTES keep
#: WLOAD_CHUNK (:func:`config`) and the entry's launch bound.
#: Source: the record nvidia-h200-2026-12-03-wide-policy.json ("policy_loads").
POLICY_LOADS: Dict[str, Dict[int, Dict[int, Tuple[int, Optional[int]]]]] = {
    RMSNORM: {2: {32768: (WLOAD_EARLY, None), 131072: (WLOAD_EARLY, 2)},
              4: {32768: (WLOAD_BATCH, None), 65536: (WLOAD_EARLY, 2)}},
    RMSNORM_GATE: {2: {32768: (WLOAD_EARLY, None)},
                   4: {65536: (WLOAD_BATCH, None), 131072: (WLOAD_BATCH, None)}},
}
#: Per POLICY entry of mode HYBRID, (chunks in registers, the weight's distance in chunks,
#: __launch_bounds__' minimum blocks): the bound it was timed at.  The bound holds for the entry's
#: own chunks in registers, weight distance and gate read (:data:`POLICY_GATE_LATE`) and a weight
#: of x's dtype; :func:`config` gives an override of any of them, or an fp32 weight of a 16-bit x
#: (ptxas spills 4-32 bytes at 32 registers with its packs), the estimate (not timed).
#: Source: the record nvidia-h200-2026-12-03-wide-policy.json ("policy_hybrid").
POLICY_HYBRID: Dict[str, Dict[int, Dict[int, Tuple[int, int, int]]]] = {
    RMSNORM: {2: {65536: (3, 1, 2), 262144: (2, 1, 2)}, 4: {131072: (2, 1, 2), 262144: (2, 1, 2)}},
    RMSNORM_GATE: {2: {131072: (1, 1, 2), 262144: (1, 1, 2)}, 4: {262144: (4, 2, 2)}}}
#: Per element size, the buckets whose POLICY entry for the gate op is HYBRID reading g in the last
#: step (``gate_late``: the kernel's WIDE_GLATE; g streamed in ``wdist`` chunks ahead of the
#: stores, x alone kept on chip).
#: Source: the record nvidia-h200-2026-12-03-wide-policy.json ("policy_gate_late").
POLICY_GATE_LATE: Dict[int, Tuple[int, ...]] = {2: (), 4: (262144,)}
#: The record the four tables come from (benchmarks/results; tests/test_rmsnorm_wide.py checks
#: they are its tables).
POLICY_RECORD = "nvidia-h200-2026-12-03-wide-policy.json"


def smem_bytes_of(op: str, itemsize: int, weight_itemsize: int, shape: Tuple[int, int, int, int],
                  hreg: int = 0, gate_late: bool = False) -> int:
    """Dynamic shared memory per CTA of ``shape`` = (cluster, threads, ept, mode): the slice of x
    (and the gate) in SMEM and MBAR; HYBRID the chunks past the ``hreg`` (0: half) a thread keeps
    in registers (of x alone where the gate op reads g in the last step, ``gate_late``); none in
    REGISTERS.  The weight is never in shared memory (``weight_itemsize`` is kept for the callers'
    symmetry)."""
    _, t, e, mode = shape
    if mode == REGISTERS:
        return 0
    if mode == HYBRID:
        rows = 2 if op == RMSNORM_GATE and not gate_late else 1
        return t * (e - _hybrid_register_elements(itemsize, e, hreg)) * itemsize * rows
    return t * e * itemsize * (2 if op == RMSNORM_GATE else 1)


def _hybrid_register_elements(itemsize: int, ept: int, hreg: int = 0) -> int:
    """Elements a thread of HYBRID holds in registers: its first ``hreg`` 16-byte chunks (0: half
    of them)."""
    vec = 16 // itemsize
    return (hreg or (ept // vec) // 2) * vec


@dataclasses.dataclass(frozen=True)
class WideConfig:
    """One kernel and its launch: ``grid = M * cluster`` blocks of ``threads``.

    ``capacity = cluster * threads * ept`` is the longest row it holds; ``vec`` elements per
    16-byte load; ``min_blocks`` the ``__launch_bounds__`` minimum (register cap
    ``SM_REGISTERS / (threads * min_blocks)``); ``mode`` where the slice is kept (REGISTERS,
    SMEM, MBAR, HYBRID), ``smem_bytes`` the dynamic shared memory that takes; ``wload`` when SMEM
    and MBAR load the weight for the last step (WLOAD_CHUNK / _BATCH / _EARLY); ``hreg`` the
    chunks a HYBRID thread keeps in registers (0: half) and ``wdist`` how many chunks ahead of its
    stores it loads the weight; ``gate_late`` whether a HYBRID gate kernel reads g there too
    (instead of with x).
    """

    op: str
    dtype: str
    weight_dtype: str
    cluster: int
    threads: int
    ept: int
    vec: int
    min_blocks: int
    mode: int = REGISTERS
    wload: int = WLOAD_CHUNK
    hreg: int = 0
    wdist: int = 1
    gate_late: bool = False

    @property
    def capacity(self) -> int:
        return self.cluster * self.threads * self.ept

    @property
    def kernel(self) -> str:
        suf = DTYPES[self.dtype][0]
        if self.mode == HYBRID:
            tail = f"_h{self.hreg}_d{self.wdist}" + ("_g" if self.gate_late else "")
        else:
            tail = ("", "_wb", "_we")[self.wload]
        return (f"{self.op}_cluster_{suf}_w{DTYPES[self.weight_dtype][0]}_c{self.cluster}"
                f"_t{self.threads}_e{self.ept}_m{self.mode}" + tail)

    @property
    def options(self) -> Tuple[str, ...]:
        """The -D options of its module (one kernel per module)."""
        hybrid = ((f"-DWIDE_HREG={self.hreg}", f"-DWIDE_WDIST={self.wdist}")
                  + (("-DWIDE_GLATE=1",) if self.gate_late else ())) if self.mode == HYBRID else ()
        return (f"-DWIDE_DTYPE={DTYPES[self.dtype][3]}", f"-DWIDE_WEIGHT={DTYPES[self.weight_dtype][3]}",
                f"-DWIDE_GATE={int(self.op == RMSNORM_GATE)}", f"-DWIDE_CLUSTER={self.cluster}",
                f"-DWIDE_THREADS={self.threads}", f"-DWIDE_EPT={self.ept}",
                f"-DWIDE_MIN_BLOCKS={self.min_blocks}", f"-DWIDE_MODE={self.mode}",
                f"-DWIDE_WLOAD={self.wload}") + hybrid

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per CTA (:func:`smem_bytes_of`)."""
        return smem_bytes_of(self.op, DTYPES[self.dtype][1], DTYPES[self.weight_dtype][1],
                             (self.cluster, self.threads, self.ept, self.mode), self.hreg, self.gate_late)

    def as_dict(self) -> Dict:
        return dict(dataclasses.asdict(self), capacity=self.capacity, kernel=self.kernel, smem_bytes=self.smem_bytes)


def reduction_order(cfg: WideConfig, n: int) -> Tuple:
    """What fixes the order in which a row of ``n`` elements' squares are added
    (kernels/rmsnorm_wide.cu, steps 2 and 4; vectors past n are skipped): each thread's fmaf chain
    over its vectors c = 0 .. EPT/VEC - 1 and their elements, a warp butterfly, the warps' totals
    in one butterfly, the CTA sums added in rank order 0 .. CLUSTER-1 -- so (N, vec, cluster,
    threads, ept).  Not the mode (every mode adds a row in this order: only where the operands
    wait differs), and not M or the row's position.  (The output's rounding, x * w * r, is one
    expression in every mode too.)"""
    n = check_int("n", n)
    if not 0 < n <= cfg.capacity:
        raise ValueError(f"n={n} does not fit {cfg.kernel} (capacity {cfg.capacity})")
    return ("cluster-slots", n, cfg.vec, cfg.cluster, cfg.threads, cfg.ept)


def launch_grid(cfg: WideConfig, M: int) -> int:
    """Blocks of ``cfg``'s launch for M rows: ``M * cluster`` (cluster k normalises row k).

    Raises:
        ValueError: M < 0, or a grid beyond gridDim.x.
    """
    M = check_int("M", M)
    if M < 0:
        raise ValueError(f"M must be >= 0, got {M}")
    if M * cfg.cluster > MAX_GRID_X:
        raise ValueError(f"M={M} rows x {cfg.cluster} CTAs per row exceeds gridDim.x={MAX_GRID_X}")
    return M * cfg.cluster


def min_blocks(op: str, itemsize: int, weight_itemsize: int, threads: int, ept: int, mode: int = REGISTERS,
               smem_bytes: int = 0, hreg: int = 0, wdist: int = 1, gate_late: bool = False) -> int:
    """``__launch_bounds__``' minimum blocks per SM.  REGISTERS: as many as the registers of the
    row data allow (x packed -- or, for the gate, x * silu(g) as fp32 -- and the weight's pack,
    plus OVERHEAD_REGISTERS); HYBRID for its ``hreg`` register chunks (the gate's x and g packs
    while they are summed, or its fp32 x * silu(g), whichever is larger; with ``gate_late`` x packed
    and ``wdist`` g packs in flight) and the weight packs in flight past the first (``wdist`` - 1),
    plus HYBRID_OVERHEAD_REGISTERS.  An estimate: ptxas decides (:func:`kernel_report`).  SMEM and
    MBAR: as many as shared memory holds, while each thread keeps SMEM_MODE_REGISTERS.  At least 1,
    at most SM_THREADS / threads."""
    if mode == REGISTERS:
        data = (ept * itemsize // 4 if op == RMSNORM else ept) + ept * weight_itemsize // 4
        fit = SM_REGISTERS // (threads * (data + OVERHEAD_REGISTERS))
    elif mode == HYBRID:
        e = _hybrid_register_elements(itemsize, ept, hreg)
        data = e * itemsize // 4 if op == RMSNORM else e
        if op != RMSNORM and gate_late:  # x packed, g's packs of the last step in flight
            data = e * itemsize // 4 + wdist * 4
        elif op != RMSNORM:  # x's and g's packs live together until x * silu(g) is formed
            data = max(data, 2 * e * itemsize // 4)
        data += (wdist - 1) * (16 // itemsize) * weight_itemsize // 4
        fit = SM_REGISTERS // (threads * (data + HYBRID_OVERHEAD_REGISTERS))
    else:
        fit = SM_REGISTERS // (threads * SMEM_MODE_REGISTERS)
    return max(1, min(sm_holds(threads, smem_bytes), fit))


def sm_holds(threads: int, smem_bytes: int) -> int:
    """CTAs of ``threads`` threads and ``smem_bytes`` of dynamic shared memory one SM can hold by
    its threads and shared memory alone (registers aside: the launch bound sets those)."""
    by_smem = SM_SHARED // (smem_bytes + CTA_RESERVED_SHARED) if smem_bytes else SM_THREADS
    return min(SM_THREADS // threads, by_smem)


def _bucket(n: int) -> int:
    return next(b for b in sorted(POLICY[RMSNORM][2]) if b >= n)


def _check_cc(cc) -> Tuple[int, int]:
    try:
        major, minor = (int(v) for v in cc)
    except (TypeError, ValueError):
        raise TypeError(f"cc must be a (major, minor) compute capability, e.g. (9, 0), got {cc!r}") from None
    return major, minor


def supported(n: int, dtype, cc) -> bool:
    """Whether this path runs rows of ``n`` elements of ``dtype`` on a GPU of compute
    capability ``cc`` ``(major, minor)``: Hopper, 9.x (clusters; see MIN_CC), MIN_N <= n <=
    MAX_N and n a multiple of the 16-byte vector (8 fp16/bf16, 4 fp32).  Depends on nothing
    else (not M).

    Raises:
        TypeError: non-int ``n``, an unsupported dtype, a malformed ``cc``.
    """
    n = check_int("n", n)
    dt = dtype_name(dtype)
    cc = _check_cc(cc)
    return MIN_CC <= cc and cc[0] <= MAX_CC_MAJOR and MIN_N <= n <= MAX_N and n % DTYPES[dt][2] == 0


# ---------------------------------------------------------------------------------------
# config: the policy's entry, or a shape given, checked step by step

@dataclasses.dataclass(frozen=True)
class _Knobs:
    """What a configuration takes beside its shape: the weight loads, the launch bound (None: the
    estimate), HYBRID's register chunks and weight distance (None: half, 1), the gate's read."""

    wload: Optional[int] = None
    blocks: Optional[int] = None
    hreg: Optional[int] = None
    wdist: Optional[int] = None
    gate_late: Optional[bool] = None


def _policy_knobs(op: str, size: int, wsize: int, n: int, given: _Knobs) -> _Knobs:
    """``given``'s knobs, the policy's for n's bucket where ``given`` leaves them None.  The
    policy's weight loads fall back to a chunk at a time where a thread's weight bytes would exceed
    WLOAD_MAX_BYTES; a HYBRID entry's launch bound holds only for its own hreg, wdist and gate read
    and a weight of x's size (an fp32 weight of a 16-bit x takes twice the registers with its packs:
    ptxas spills at the policy's 32 registers a thread there), else the estimate."""
    b = _bucket(n)
    wload, blocks = POLICY_LOADS[op][size].get(b, (WLOAD_CHUNK, None))
    if POLICY[op][size][b][2] * wsize > WLOAD_MAX_BYTES:
        wload = WLOAD_CHUNK
    hreg, wdist, hybrid_blocks = POLICY_HYBRID[op][size].get(b, (None, None, None))
    late = op == RMSNORM_GATE and b in POLICY_GATE_LATE[size]
    own = (wsize <= size and given.hreg in (None, hreg) and given.wdist in (None, wdist)
           and given.gate_late in (None, late))
    if blocks is None and own:
        blocks = hybrid_blocks
    policy = (wload, blocks, hreg, wdist, late)
    return _Knobs(*(p if g is None else g for g, p in zip(dataclasses.astuple(given), policy)))


def _check_shape(shape, n: int, dt: str) -> Tuple[int, int, int, int]:
    """``shape`` = (cluster, threads, ept, mode) if it holds a row of n elements of ``dt``."""
    if not isinstance(shape, (tuple, list)) or len(shape) != 4:
        raise ValueError(f"shape must be (cluster, threads, ept, mode), 4 ints, got {shape!r}")
    c, t, e, mode = shape
    vec = DTYPES[dt][2]
    if (c * t * e < n or not 1 <= c <= MAX_CLUSTER or t % 32 or not 32 <= t <= 1024 or e % vec
            or mode not in MODES):
        raise ValueError(f"shape (cluster={c}, threads={t}, ept={e}, mode={mode}) does not fit n={n} {dt} "
                         f"(needs cluster*threads*ept >= n, cluster <= {MAX_CLUSTER}, threads a multiple "
                         f"of 32 up to 1024, ept a multiple of {vec}, mode one of {MODES})")
    return c, t, e, mode


def _hybrid_chunks(mode: int, chunks: int, hreg, wdist) -> Tuple[int, int]:
    """(hreg, wdist) of a HYBRID configuration of ``chunks`` chunks a thread: as given, else half
    of them in registers and the weight one chunk ahead; (0, 1) for the other modes, which take
    neither."""
    hreg, wdist = (None if v is None else check_int(name, v) for name, v in (("hreg", hreg), ("wdist", wdist)))
    if mode != HYBRID:
        if hreg is not None or wdist is not None:
            given = ", ".join(f"{k}={v}" for k, v in (("hreg", hreg), ("wdist", wdist)) if v is not None)
            raise ValueError(f"{given} with mode {mode}: hreg and wdist are HYBRID ({HYBRID})'s only")
        return 0, 1
    if chunks < 2:
        raise ValueError(f"HYBRID needs at least 2 chunks a thread, got {chunks}")
    if hreg is not None and not 1 <= hreg < chunks:
        keeps = "exactly 1" if chunks == 2 else f"1 to {chunks - 1}"
        raise ValueError(f"hreg={hreg}: a HYBRID thread keeps {keeps} of its {chunks} chunks in registers")
    if wdist is not None and not 1 <= wdist <= chunks:
        raise ValueError(f"wdist={wdist}: the weight's loads run 1 to {chunks} chunks ahead of the stores")
    return hreg or chunks // 2, wdist or 1


def _check_gate_late(gate_late: Optional[bool], gate: bool, op: str, mode: int) -> bool:
    if gate_late and not gate:
        raise ValueError("gate_late=True for rmsnorm: it says when the gate op reads its gate g; "
                         "pass gate=True (rmsnorm_gate) or leave gate_late out")
    if gate_late and mode != HYBRID:
        raise ValueError(f"gate_late=True with {op} mode {mode}: reading g in the last step is the gate op's "
                         f"HYBRID ({HYBRID}) only; pass shape=(cluster, threads, ept, {HYBRID}) with it")
    return bool(gate_late)


def _launch_bound(cfg: WideConfig, blocks: Optional[int]) -> int:
    """``blocks`` if an SM holds that many of cfg's CTAs, else ValueError; None: the estimate."""
    if blocks is None:
        return min_blocks(cfg.op, DTYPES[cfg.dtype][1], DTYPES[cfg.weight_dtype][1], cfg.threads, cfg.ept,
                          cfg.mode, cfg.smem_bytes, cfg.hreg, cfg.wdist, cfg.gate_late)
    most = sm_holds(cfg.threads, cfg.smem_bytes)
    blocks = check_int("blocks", blocks)
    if not 1 <= blocks <= most:
        holds = f"1 to {most}" if most > 1 else "only 1"
        raise ValueError(f"blocks={blocks} for {cfg.kernel}: an SM holds {holds} of its CTAs "
                         f"({cfg.threads} threads, {cfg.smem_bytes} bytes of shared memory each)")
    return blocks


def config(n: int, dtype, cc, *, gate: bool = False, weight_dtype=None,
           shape: Optional[Tuple[int, int, int, int]] = None, wload: Optional[int] = None,
           blocks: Optional[int] = None, hreg: Optional[int] = None, wdist: Optional[int] = None,
           gate_late: Optional[bool] = None) -> WideConfig:
    """The :class:`WideConfig` for rows of ``n`` elements: :data:`POLICY`'s bucket for n and the
    element size, with :data:`POLICY_LOADS`' weight loads and launch bound and
    :data:`POLICY_HYBRID` / :data:`POLICY_GATE_LATE`'s knobs.  ``shape`` = (cluster, threads, ept,
    mode) overrides the shape (then none of the policy's knobs apply: the launch bound is
    :func:`min_blocks`' estimate unless ``blocks`` is given, even where it is the policy's own
    shape); ``wload`` the weight loads; ``blocks`` the minimum blocks per SM; ``hreg`` / ``wdist``
    HYBRID's chunks kept in registers (default half) and how many chunks ahead of its stores it
    loads the weight (default 1); ``gate_late`` a HYBRID gate kernel reads g in its last step.
    Taken as given, so a combination the policy never uses may spill -- :func:`kernel_report`
    tells.  ``weight_dtype``: x's dtype (None) or float32.

    Raises:
        ValueError: ``not supported(n, dtype, cc)`` (naming why), a weight dtype other than x's
            or float32, a ``shape`` that is not 4 ints or whose capacity is below n or whose
            cluster exceeds 16, a ``wload`` not in WLOADS or other than WLOAD_CHUNK for a mode not
            in WLOAD_MODES, ``blocks`` beyond what the threads or shared memory allow an SM,
            ``hreg`` outside 1 .. chunks - 1 or ``wdist`` outside 1 .. chunks for HYBRID (which
            needs 2 chunks a thread), either given for another mode, ``gate_late`` true for rmsnorm
            or a mode other than HYBRID, shared memory beyond MAX_CTA_SHARED.
        TypeError: ``wload``, ``blocks``, ``hreg`` or ``wdist`` not an int, ``gate_late`` not a bool.
    """
    dt = dtype_name(dtype)
    wdt = dt if weight_dtype is None else dtype_name(weight_dtype)
    if not supported(n, dt, cc):
        raise ValueError(_unsupported_reason(n, dt, cc))
    if wdt not in (dt, "float32"):
        raise ValueError(f"weight dtype {wdt} with x {dt}: the weight must be x's dtype or float32")
    op, size = (RMSNORM_GATE if gate else RMSNORM), DTYPES[dt][1]
    if gate_late is not None:
        gate_late = check_bool("gate_late", gate_late, "or None (the policy's)")
    knobs = _Knobs(wload, blocks, hreg, wdist, gate_late)
    if shape is None:
        shape, knobs = POLICY[op][size][_bucket(n)], _policy_knobs(op, size, DTYPES[wdt][1], n, knobs)
    c, t, e, mode = _check_shape(shape, n, dt)
    wload = _check_wload(knobs.wload)
    if wload != WLOAD_CHUNK and mode not in WLOAD_MODES:
        raise ValueError(f"wload={wload!r} with mode {mode}: loading the weight other than a chunk at a time "
                         f"(WLOAD_CHUNK = {WLOAD_CHUNK}) is for the shared-memory modes SMEM ({SMEM}) and MBAR "
                         f"({MBAR}) only")
    vec = DTYPES[dt][2]
    h, d = _hybrid_chunks(mode, e // vec, knobs.hreg, knobs.wdist)
    late = _check_gate_late(knobs.gate_late, gate, op, mode)
    cfg = WideConfig(op, dt, wdt, c, t, e, vec, 1, mode, hreg=h, wdist=d, gate_late=late)
    if cfg.smem_bytes > MAX_CTA_SHARED:
        raise ValueError(f"shape {shape} needs {cfg.smem_bytes} bytes of shared memory per CTA for {op} {dt} "
                         f"(weight {wdt}); at most {MAX_CTA_SHARED}")
    return dataclasses.replace(cfg, min_blocks=_launch_bound(cfg, knobs.blocks), wload=wload)


def _check_wload(wload) -> int:
    """``wload`` (None: WLOAD_CHUNK) as one of WLOADS, else TypeError / ValueError naming it."""
    if wload is None:
        return WLOAD_CHUNK
    wload = check_int("wload", wload)
    if wload not in WLOADS:
        raise ValueError(f"wload={wload!r}: the weight loads are WLOAD_CHUNK ({WLOAD_CHUNK}, a chunk at a time), "
                         f"WLOAD_BATCH ({WLOAD_BATCH}, all chunks together) or WLOAD_EARLY ({WLOAD_EARLY}, "
                         f"with x's copies)")
    return wload


def _unsupported_reason(n: int, dt: str, cc) -> str:
    cc = _check_cc(cc)
    if cc < MIN_CC:
        return (f"the cluster path needs compute capability >= {MIN_CC[0]}.{MIN_CC[1]} (thread-block "
                f"clusters), got {cc[0]}.{cc[1]}")
    if cc[0] > MAX_CC_MAJOR:
        return (f"the cluster path's policy was measured on Hopper (9.x) only, got compute capability "
                f"{cc[0]}.{cc[1]}: the fused op's path runs there")
    if not MIN_N <= n <= MAX_N:
        return f"the cluster path takes {MIN_N} <= N <= {MAX_N}, got N={n}"
    return f"the cluster path needs N % {DTYPES[dt][2]} == 0 for {dt} (16-byte vectors), got N={n}"


def configs_in_use(dtypes: Sequence[str] = tuple(DTYPES), cc=(9, 0)) -> List[WideConfig]:
    """Every configuration :func:`config` can return: each bucket, op and weight dtype."""
    return [config(n, dt, cc, gate=op == RMSNORM_GATE, weight_dtype=wdt)
            for dt in dtypes for n in sorted(POLICY[RMSNORM][DTYPES[dt][1]]) for op in OPS
            for wdt in dict.fromkeys((dt, "float32"))]


# ---------------------------------------------------------------------------------------
# operands and launch

def _array(name: str, a) -> Operand:
    """A torch CUDA tensor or CuPy array as an :class:`~gpu_viz.rmsnorm.fused.checks.Operand`, as it
    is (a negated view is not resolved: ``out`` must be the caller's memory); TypeError for
    anything else."""
    fw = _framework(a)
    if fw is None:
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got {type(a).__module__}."
                        f"{type(a).__name__}")
    try:
        dt = dtype_name(a.dtype)
    except TypeError:
        raise TypeError(f"{name} has dtype {a.dtype}; expected float32, float16 or bfloat16") from None
    if fw == "torch":
        return Operand(name, fw, a, dt, tuple(a.shape), tuple(a.stride()))
    item = a.dtype.itemsize
    return Operand(name, fw, a, dt, tuple(a.shape), tuple(s // item for s in a.strides))


def _device(a: Operand) -> int:
    return int(a.device_index)


def _contiguous(shape, strides) -> bool:
    want, ok = 1, True
    for d, s in zip(reversed(shape), reversed(strides)):
        if d > 1 and s != want:
            ok = False
        want *= d
    return ok


def aligned(*arrays) -> bool:
    """Whether every given array (None skipped) starts on a 16-byte boundary: :func:`forward`'s
    vector loads need it (fresh torch / CuPy allocations are; a view offset by a few elements
    is not)."""
    for a in arrays:
        if a is None:
            continue
        ptr = int(a.data_ptr()) if _framework(a) == "torch" else int(a.data.ptr)
        if ptr % 16:
            return False
    return True


@functools.lru_cache(maxsize=None)
def _kernel(cfg: WideConfig, device: int):
    """The compiled kernel of ``cfg`` on ``device``, with the non-portable cluster-size
    attribute set where the cluster exceeds 8 CTAs."""
    k = kernels.function(FILE, cfg.kernel, cfg.options, device=device)
    if cfg.smem_bytes:  # above 48 KiB a kernel must opt in to its dynamic shared memory
        k.max_dynamic_shared_size_bytes = cfg.smem_bytes
    if cfg.cluster > PORTABLE_CLUSTER:
        lib = ctypes.CDLL("libcuda.so.1")
        rc = lib.cuFuncSetAttribute(ctypes.c_void_p(int(k.kernel.ptr)),
                                    _CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, ctypes.c_int(1))
        if rc != 0:
            raise RuntimeError(f"cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED) failed with CUresult {rc} "
                               f"for {cfg.kernel} (cluster of {cfg.cluster} CTAs)")
    return k


def _operands(x2d, weight, out, gate) -> List[Optional[Operand]]:
    """[x2d, weight, out, gate or None], each checked: kinds, library, shapes, dtypes, contiguity,
    16-byte alignment, CUDA and one device (forward's Raises)."""
    x = _array("x2d", x2d)
    if len(x.shape) != 2:
        raise ValueError(f"x2d must be 2-D (M, N), got shape {x.shape}")
    ops = [x]
    for name, a, want_shape in (("weight", weight, (x.shape[1],)), ("out", out, x.shape), ("gate", gate, x.shape)):
        if a is None:
            if name != "gate":
                raise TypeError(f"{name} must be an array, got None")
            ops.append(None)
            continue
        o = _array(name, a)
        if o.fw != x.fw:
            raise TypeError(f"{name} is a {o.fw} array but x2d is a {x.fw} array: pass all operands from one library")
        if o.shape != want_shape:
            raise ValueError(f"{name} must have shape {want_shape} to match x2d of shape {x.shape}, got {o.shape}")
        if name == "weight" and o.dtype not in (x.dtype, "float32"):
            raise TypeError(f"weight has dtype {o.dtype} but x2d has {x.dtype}: the weight must be x's dtype or float32")
        if name != "weight" and o.dtype != x.dtype:
            raise TypeError(f"{name} has dtype {o.dtype} but x2d has {x.dtype}: they must match")
        ops.append(o)
    given = [o for o in ops if o is not None]
    for o in given:
        if not _contiguous(o.shape, o.strides):
            raise ValueError(f"{o.name} must be contiguous (shape {o.shape}, strides {o.strides}): "
                             f"pass {o.name}.contiguous()")
        if o.ptr % 16 and math.prod(o.shape) > 0:
            raise ValueError(f"{o.name} must start on a 16-byte boundary for the cluster path's vector loads "
                             f"(its data pointer is {o.ptr:#x}); use the general path for offset views")
    for o in given:
        if o.fw == "torch" and o.array.device.type != "cuda":
            raise ValueError(f"{o.name} is on device {o.array.device}: the cluster path needs CUDA tensors")
    devs = {_device(o) for o in given}
    if len(devs) > 1:
        raise ValueError(f"all operands must be on one device, got devices {sorted(devs)}")
    return ops


def _check_knobs(wload, blocks, hreg, wdist, gate_late) -> None:
    """The knobs' kinds, refused before M == 0 returns too (their values need the GPU's cc: config)."""
    _check_wload(wload)
    for name, v in (("blocks", blocks), ("hreg", hreg), ("wdist", wdist)):
        if v is not None:
            check_int(name, v, minimum=1)
    if gate_late is not None:
        check_bool("gate_late", gate_late, "or None (the policy's)")


def forward(x2d, weight, eps: float, out, *, gate=None, stream=None, weight_offset: float = 0.0,
            shape: Optional[Tuple[int, int, int, int]] = None, wload: Optional[int] = None,
            blocks: Optional[int] = None, hreg: Optional[int] = None, wdist: Optional[int] = None,
            gate_late: Optional[bool] = None):
    """RMSNorm (or, with ``gate``, RMSNorm + SiLU gate) of the rows of ``x2d`` into ``out``, on a
    thread-block cluster per row (sm_90).

    Args:
        x2d: ``(M, N)`` torch CUDA tensor or CuPy array, float32 / float16 / bfloat16,
            C-contiguous, 16-byte aligned; ``supported(N, dtype, cc)`` must hold.  M >= 0.
        weight: ``(N,)``, contiguous, x's dtype or float32, same library and device.
        eps: >= 0, finite as a float32; added to the mean square.
        out: ``(M, N)`` of x's dtype, library and device, contiguous and 16-byte aligned:
            every element is written.
        gate: None (rmsnorm) or ``(M, N)`` like x (rmsnorm_gate).
        stream: None (the framework's current stream), a ``torch.cuda.Stream`` or a
            ``cupy.cuda.Stream``: the launch goes there, without host synchronisation.
        weight_offset: added to the weight in fp32 (1.0 for Gemma's ``1 + w``).
        shape: (cluster, threads, ept, mode) instead of :data:`POLICY`'s (tests: any shape that
            holds the row).
        wload, blocks, hreg, wdist, gate_late: the weight loads, the launch bound, HYBRID's
            register chunks, weight distance and where it reads the gate instead of the policy's
            (see :func:`config`); the result does not depend on them.

    Returns:
        rstd: ``(M,)`` float32 of x's library: ``rsqrt(mean(x^2) + eps)`` per row.  ``out``
        holds y = (x [* silu(gate)] * (weight + weight_offset)) * rstd, computed in fp32 and
        rounded once to x's dtype.

    Raises:
        TypeError: an operand that is not a torch CUDA tensor / CuPy array, mixed libraries,
            unsupported or mismatched dtypes, a non-number eps / weight_offset, a non-int
            ``wload`` / ``blocks`` / ``hreg`` / ``wdist``, a non-bool ``gate_late``.
        ValueError: shapes (x not 2-D, weight not (N,), gate / out not x's shape), a
            non-contiguous or misaligned operand, operands on different devices, eps < 0,
            N not supported on this GPU (naming why), M * cluster beyond gridDim.x, ``shape`` /
            ``wload`` / ``blocks`` / ``hreg`` / ``wdist`` / ``gate_late`` that :func:`config` refuses.
        GPUUnavailable: in CPU mode.
    """
    x, w, o, g = _operands(x2d, weight, out, gate)
    eps = check_eps(eps)
    weight_offset = check_f32_arg("weight_offset", weight_offset)
    _check_knobs(wload, blocks, hreg, wdist, gate_late)
    device = _device(x)
    M, N = x.shape
    if M == 0:
        return _new_rstd(x2d, x.fw, 0, device)
    backend.require_gpu("the cluster RMSNorm path")
    cfg = config(N, x.dtype, _cc(device), gate=g is not None, weight_dtype=w.dtype, shape=shape, wload=wload,
                 blocks=blocks, hreg=hreg, wdist=wdist, gate_late=gate_late)
    grid = launch_grid(cfg, M)
    rstd = _new_rstd(x2d, x.fw, M, device)
    rp = int(rstd.data_ptr()) if x.fw == "torch" else int(rstd.data.ptr)
    args = (np.uint64(o.ptr), np.uint64(rp), np.uint64(x.ptr), np.uint64(g.ptr if g is not None else 0),
            np.uint64(w.ptr), np.int32(N), np.float32(eps), np.float32(weight_offset), np.int64(M))
    k = _kernel(cfg, device)
    if stream is None:
        _launch(k, grid, cfg, args, x.fw, device)
    elif x.fw == "torch":
        import torch

        with torch.cuda.stream(stream):
            _launch(k, grid, cfg, args, x.fw, device)
    else:
        with stream:
            _launch(k, grid, cfg, args, x.fw, device)
    return rstd


def _launch(k, grid: int, cfg: WideConfig, args, fw: str, device: int) -> None:
    """:func:`gpu_viz.arrays.launch` with the configuration's dynamic shared memory: on torch's
    current stream (the raw handle, no host synchronisation) or CuPy's."""
    if not cfg.smem_bytes:
        launch(k, grid, cfg.threads, args, fw, device)
        return
    cupy = backend.require_cupy("a kernel launch")
    with cupy.cuda.Device(device):
        if fw == "torch":
            k.kernel((grid,), (cfg.threads,), args, shared_mem=cfg.smem_bytes,
                     stream=_StreamPtr(_torch_stream_ptr(device)))
        else:
            k((grid,), (cfg.threads,), args, shared_mem=cfg.smem_bytes)


def _new_rstd(x2d, fw: str, M: int, device: int):
    if fw == "torch":
        import torch

        return torch.empty(M, dtype=torch.float32, device=x2d.device)
    cupy = backend.require_cupy("the cluster RMSNorm path")
    with cupy.cuda.Device(device):
        return cupy.empty(M, dtype=cupy.float32)


@functools.lru_cache(maxsize=None)
def _cc(device: int) -> Tuple[int, int]:
    cupy = backend.require_cupy("the cluster RMSNorm path")
    props = cupy.cuda.runtime.getDeviceProperties(device)
    return int(props["major"]), int(props["minor"])


# ---------------------------------------------------------------------------------------
# what the compiler decided

def kernel_report(arches: Optional[Sequence[str]] = None, workers: int = 2) -> List[Dict]:
    """ptxas registers / spills / shared memory of every configuration in use, for each of
    ``arches`` (default sm_90 only: before sm_90 the kernels are a trap); ``workers`` nvcc
    processes.

    Returns:
        one dict per (configuration, arch): the :class:`WideConfig` fields, ``arch``,
        ``registers``, ``spill_stores_bytes``, ``spill_loads_bytes``, ``local_bytes``,
        ``shared_bytes``.

    Raises:
        FileNotFoundError: no nvcc.  KernelCompileError: with nvcc's log.
    """
    from concurrent.futures import ThreadPoolExecutor

    jobs = [(c, a) for a in (arches or ("sm_90",)) for c in configs_in_use()]
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda j: (j, kernels.nvcc_compile(FILE, j[1], j[0].options)), jobs))
    rows = []
    for (cfg, arch), usages in parts:
        for u in usages:
            rows.append(dict(cfg.as_dict(), arch=u.arch, registers=u.registers,
                             spill_stores_bytes=u.spill_stores_bytes, spill_loads_bytes=u.spill_loads_bytes,
                             local_bytes=u.stack_frame_bytes, shared_bytes=u.shared_bytes))
    return rows
