"""Wide rows on a thread-block cluster (``kernels/rmsnorm_wide.cu``): RMSNorm and RMSNorm + SiLU
gate for 16384 < N <= 262144 on sm_90, one pass over x.

    rmsnorm       y = (x * (w + weight_offset)) * rstd
    rmsnorm_gate  y = ((x * silu(g)) * (w + weight_offset)) * rstd
    rstd = rsqrt(mean(x^2, -1) + eps)   (fp32, returned per row for a backward)

A row is split over the CTAs of one cluster; each CTA loads its slice into registers once,
sums x^2 (block reduction), the CTA sums meet through distributed shared memory, and y is
written from the registers.  The op the other paths (:mod:`gpu_viz.rmsnorm.fused`) compute,
in the same fp32 operation order (x * w * r, one rounding), with the one tolerance table.

Contract for the dispatcher (fused.py):

* :func:`supported` ``(n, dtype, cc) -> bool`` -- True where this path runs; it depends on N, the
  dtype and the GPU's compute capability only.
* :func:`config` -- the launch configuration (cluster size, threads, elements per thread, and
  where a CTA keeps its slice: registers or shared memory):
  a pure function of (N, dtype, op, weight dtype, cc) -- never of M -- and the summation order
  is fixed by it, so the op is batch-invariant: a row's bits depend only on N, the dtypes,
  eps, weight_offset and the row's values, not on M or the row's position.
* :func:`forward` -- launch on a contiguous, 16-byte aligned (M, N) problem (:func:`aligned`
  tells); returns rstd.
* :func:`kernel_report` -- ptxas registers / spills of every configuration the policy uses.

Nine modes (where a CTA keeps its slice, how the CTA sums meet, one cluster per row or a
persistent grid of clusters looping over rows, :func:`launch_grid`); :data:`POLICY` takes, per
op, element size and row-length bucket, the fastest of :data:`CANDIDATES` and
:data:`NEW_CANDIDATES` and of bigger CTAs on smaller clusters, on the H200 (benchmarks/NOTES.md,
"wide rows on a cluster" and "fifth session"; :data:`POLICY` says which runs), and RING /
HYBRID where three later runs measured them faster ("seventh session": a 16-CTA cluster leaves
15 % of the H200's CTA slots empty, so rmsnorm's 262144 rows and the fp32 gate's moved to 4- and
8-CTA clusters), and HYBRID at two CTAs of 1024 threads an SM where two runs after those measured
it faster ("eighth session": rmsnorm 16-bit 65536 on 2-CTA clusters, fp32 131072, the 16-bit
gate at 131072), and where one run after those measured HYBRID faster at 262144 ("ninth session":
rmsnorm 16-bit on 4-CTA clusters of 1024 threads; the fp32 gate reading g in its last step,
:data:`POLICY_GATE_LATE`, which leaves x alone on chip).  Every mode
adds a row's squares in the same order at a given (cluster, threads, ept), so the policy's
choice of mode never changes a bit.  :data:`POLICY_LOADS` adds, per shape, when the shared-memory
modes load the weight for the last step and the launch bound that sets their registers (another
run on the H200, "sixth session"); neither changes a bit either.
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
from .dtypes import DTYPES, dtype_name
from .reference import check_eps

FILE = "rmsnorm_wide.cu"

#: Thread-block clusters and distributed shared memory arrived with sm_90.  The path is taken on
#: Hopper (compute capability 9.x) only: its shared-memory sizes (228 KiB per SM) and the
#: 16-CTA clusters are what the policy was measured with; later GPUs run the fused op's path
#: until the policy is measured there.
MIN_CC: Tuple[int, int] = (9, 0)
MAX_CC_MAJOR = 9
#: Row lengths this path takes: above the register-resident ``block`` variant of fused.py
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
#: The same for RING / RING_L2 (the ring's pointers and the next row's addresses besides; ptxas on
#: sm_90: 48 registers with 16 of row data, 62-64 with 32).
RING_OVERHEAD_REGISTERS = 32
#: gridDim.x limit: M * cluster blocks.
MAX_GRID_X = 2**31 - 1

#: Where a CTA keeps its slice of the row (the kernel's WIDE_MODE): registers; shared memory
#: (x, and the gate, by cp.async; the weight read in the last step); shared memory with the
#: weight's slice too.
REGISTERS, SMEM, SMEM_W = 0, 1, 2
#: PERSIST -- a persistent grid of clusters looping over rows, the weight's slice in shared
#: memory across rows, x (and the gate) double-buffered so the next row's copies fly while this
#: row is reduced and written; PERSIST_1 -- the same with one buffer, each vector of the next
#: row copied into its slot once this row's y for it is stored (half the shared memory); MBAR --
#: SMEM with QuACK's exchange of the CTA sums (st.async completing bytes on each CTA's mbarrier,
#: no second cluster barrier).  PERSIST and PERSIST_1 exchange the sums the same way.
PERSIST, PERSIST_1, MBAR = 3, 4, 5
#: RING -- a persistent grid whose CTAs keep their slice of the row in registers (x packed, or
#: x * silu(g) in fp32, as REGISTERS) while a ring of ``ring`` chunk slots in shared memory takes
#: the copies of the chunks that follow, the next row's first ones among them: each thread's own
#: cp.async pipeline, ``ring`` chunks in flight through the reductions, the exchange and the stores
#: (the exchange as PERSIST's); the weight's slice in shared memory, copied once.  RING_L2 -- the
#: same with the weight read from global memory (L2) one chunk ahead of each store.  (Mode 6 was a
#: row split without a cluster, tried and removed: benchmarks/NOTES.md, "sixth session"; modes 10-12,
#: HYBRID, PERSIST and PERSIST_1 so split, the same: "twelfth session".)
RING, RING_L2 = 7, 8
RING_MODES = (RING, RING_L2)
#: HYBRID -- one row per cluster as MBAR, a thread's first ``hreg`` chunks (default half) loaded into
#: registers (x packed, or x * silu(g) in fp32), the rest copied into shared memory: a CTA holds
#: more than either alone gives it at the same CTAs per SM (slices of 128 KiB on two CTAs an SM);
#: the weight read from global memory ``wdist`` chunks ahead of the stores; for the gate op with
#: ``gate_late``, g read there too, beside the weight, instead of with x (x alone on chip).
HYBRID = 9
MODES = (REGISTERS, SMEM, SMEM_W, PERSIST, PERSIST_1, MBAR, RING, RING_L2, HYBRID)
PERSISTENT_MODES = (PERSIST, PERSIST_1, RING, RING_L2)
#: Ring depths (chunk slots) the kernel takes.
MAX_RING = 16
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
#: The row-length buckets and their launch shape (cluster, threads, elements per thread, mode)
#: by op and element size: the smallest bucket >= N is used (vectors past N idle).  16-byte
#: vectors everywhere; EPT = elements of x each thread holds (copies, in the shared-memory
#: modes).  Each entry is the shape with the least median time (fp16 and bf16 summed for the
#: 16-bit entries) of CANDIDATES and NEW_CANDIDATES in one H200 run
#: (benchmarks/explore/2026-12-02-wide-persistent/run1/persist-record.json, its
#: "proposed_policy"), where a second run that timed bigger CTAs on smaller clusters beside
#: those entries found faster ones (explore/2026-12-03-wide-bigger-ctas/run1: rmsnorm 16-bit at
#: 131072, fp32 at 32768 and 65536), and where the ring runs (explore/2026-12-02-wide-ring
#: run1-3) measured a RING or HYBRID kernel faster than the policy's in the same run (rmsnorm
#: 16-bit 262144, fp32 131072 and 262144, the fp32 gate at 262144), and where the occupancy runs
#: (explore/2026-12-02-wide-occupancy run1-2: HYBRID at more CTAs an SM) did the same (rmsnorm
#: 16-bit 65536, fp32 131072 and 262144, the 16-bit gate at 131072), and where the late-gate run
#: (explore/2026-12-02-wide-late-gate run1) did (rmsnorm 16-bit 262144, the fp32 gate at 262144),
#: and where the run after the dynamic shared memory moved onto 128 bytes (explore/2026-12-03-wide-split2
#: run2) did (rmsnorm 262144, every dtype), and the 16-bit gate's run after it
#: (explore/2026-12-03-wide-gate16 run1) did (the 16-bit gate at 262144);
#: tests/test_rmsnorm_wide.py checks the table is those proposals, each later one over the earlier.
POLICY: Dict[str, Dict[int, Dict[int, Tuple[int, int, int, int]]]] = {
    "rmsnorm": {
        2: {32768: (4, 256, 32, MBAR), 65536: (2, 1024, 32, HYBRID), 131072: (4, 1024, 32, MBAR),
            262144: (8, 1024, 32, HYBRID)},
        4: {32768: (4, 512, 16, MBAR), 65536: (4, 1024, 16, MBAR), 131072: (4, 1024, 32, HYBRID),
            262144: (8, 1024, 32, HYBRID)}},
    "rmsnorm_gate": {
        2: {32768: (4, 256, 32, MBAR), 65536: (8, 256, 32, SMEM), 131072: (8, 1024, 16, HYBRID),
            262144: (8, 1024, 32, HYBRID)},
        4: {32768: (4, 512, 16, REGISTERS), 65536: (8, 512, 16, SMEM), 131072: (16, 512, 16, SMEM),
            262144: (8, 512, 64, HYBRID)}},
}
#: Per POLICY entry of mode SMEM or MBAR, (weight loads, __launch_bounds__' minimum blocks or None
#: for :func:`min_blocks`'s) where one H200 run measured them faster than one chunk at a time
#: (explore/2026-12-02-wide-weight/run1, fp16 and bf16 summed, every variant bit-identical to the
#: chunked one): a minimum of 2 blocks of 1024 threads caps the registers at 32, so an SM holds two
#: CTAs (with the launcher's minimum of 1, ptxas took 40-56 registers and the SM held one).  An
#: entry absent here: (WLOAD_CHUNK, None).  Weights whose bytes a thread would hold exceed
#: WLOAD_MAX_BYTES keep WLOAD_CHUNK (:func:`config`) and the entry's launch bound (an fp32 weight
#: of a 16-bit x at 131072: 32 registers, no spills in ptxas; that pairing was not timed).
POLICY_LOADS: Dict[str, Dict[int, Dict[int, Tuple[int, Optional[int]]]]] = {
    "rmsnorm": {2: {32768: (WLOAD_EARLY, None), 131072: (WLOAD_EARLY, 2)},
                4: {32768: (WLOAD_BATCH, None), 65536: (WLOAD_EARLY, 2)}},
    "rmsnorm_gate": {2: {32768: (WLOAD_EARLY, None)},
                     4: {65536: (WLOAD_BATCH, None), 131072: (WLOAD_BATCH, None)}},
}
#: Per POLICY entry of mode RING or RING_L2, its ring depth (chunk slots).
POLICY_RING: Dict[str, Dict[int, Dict[int, int]]] = {"rmsnorm": {2: {}, 4: {}},
                                                     "rmsnorm_gate": {2: {}, 4: {}}}
#: Per POLICY entry of mode HYBRID, (chunks in registers, the weight's distance in chunks,
#: __launch_bounds__' minimum blocks): the bound its run timed it at -- :func:`min_blocks`'
#: estimate for the ring runs' entries, two CTAs of 1024 threads an SM at 32 registers a thread
#: (above the estimate of one) for the occupancy runs' and the late-gate run's
#: (explore/2026-12-02-wide-occupancy, explore/2026-12-02-wide-late-gate).  The bound holds for the
#: entry's own chunks in registers, weight distance and gate read (:data:`POLICY_GATE_LATE`) and a
#: weight of x's dtype; :func:`config` gives an override of any of them, or an fp32 weight of a
#: 16-bit x (ptxas spills 4-32 bytes at 32 registers with its packs), the estimate (not timed).
POLICY_HYBRID: Dict[str, Dict[int, Dict[int, Tuple[int, int, int]]]] = {
    "rmsnorm": {2: {65536: (3, 1, 2), 262144: (2, 1, 2)}, 4: {131072: (2, 1, 2), 262144: (2, 1, 2)}},
    "rmsnorm_gate": {2: {131072: (1, 1, 2), 262144: (1, 1, 2)}, 4: {262144: (4, 2, 2)}}}
#: Per element size, the buckets whose POLICY entry for the gate op is HYBRID reading g in the last
#: step (``gate_late``: the kernel's WIDE_GLATE; g streamed in ``wdist`` chunks ahead of the stores,
#: x alone kept on chip) where one H200 run measured it faster (explore/2026-12-02-wide-late-gate).
POLICY_GATE_LATE: Dict[int, Tuple[int, ...]] = {2: (), 4: (262144,)}
#: The shapes of modes 0-2 measured first (one cluster per row; the CTA sums through a cluster
#: barrier); NEW_CANDIDATES adds modes 3-5 around POLICY's shapes and QuACK's; the bigger-CTA
#: shapes are the exploration's own (benchmarks/explore/2026-12-03-wide-bigger-ctas).
CANDIDATES: Dict[int, Dict[int, Tuple[Tuple[int, int, int, int], ...]]] = {
    2: {32768: ((4, 256, 32, SMEM), (2, 512, 32, SMEM), (2, 256, 64, SMEM), (4, 256, 32, SMEM_W),
                (2, 512, 32, REGISTERS)),
        65536: ((8, 256, 32, SMEM), (4, 256, 64, SMEM), (4, 512, 32, SMEM), (8, 256, 32, SMEM_W),
                (4, 512, 32, REGISTERS)),
        131072: ((16, 256, 32, SMEM), (8, 256, 64, SMEM), (8, 512, 32, SMEM), (16, 256, 32, SMEM_W),
                 (8, 512, 32, REGISTERS)),
        262144: ((16, 256, 64, SMEM), (16, 512, 32, SMEM), (8, 1024, 32, SMEM), (16, 256, 64, SMEM_W),
                 (16, 512, 32, REGISTERS))},
    4: {32768: ((8, 256, 16, SMEM), (4, 256, 32, SMEM), (4, 512, 16, SMEM), (8, 256, 16, SMEM_W),
                (4, 512, 16, REGISTERS)),
        65536: ((16, 256, 16, SMEM), (8, 256, 32, SMEM), (8, 512, 16, SMEM), (16, 256, 16, SMEM_W),
                (8, 512, 16, REGISTERS)),
        131072: ((16, 256, 32, SMEM), (8, 512, 32, SMEM), (16, 512, 16, SMEM), (16, 256, 32, SMEM_W),
                 (16, 512, 16, REGISTERS)),
        262144: ((16, 512, 32, SMEM), (16, 1024, 16, SMEM), (16, 256, 64, SMEM), (16, 512, 32, SMEM_W),
                 (16, 1024, 16, REGISTERS))},
}


def _quack_cluster(n: int, size: int) -> int:
    """QuACK's cluster size for an RMSNorm row of n elements of `size` bytes on Hopper
    (quack/rmsnorm_config.py ``_for_hopper_fwd``: 256 threads; 16-bit x: 2 / 4 / 8 / 16 CTAs up
    to 32K / 64K / 128K / 256K elements, fp32 1 / 2 / 4 / 8)."""
    limits = (32768, 65536, 131072, 262144)
    ladder = (2, 4, 8, 16) if size == 2 else (1, 2, 4, 8)
    return next(c for lim, c in zip(limits, ladder) if n <= lim)


#: The (cluster, threads, ept) NEW_CANDIDATES are built around: POLICY's before the ring runs
#: (2026-12-02) moved some of its entries to RING / HYBRID shapes -- kept, so the candidates of
#: the persistent explorations stay what those runs timed.
_PERSIST_RUN_SHAPES = {
    "rmsnorm": {2: {32768: (4, 256, 32), 65536: (4, 256, 64), 131072: (4, 1024, 32), 262144: (16, 512, 32)},
                4: {32768: (4, 512, 16), 65536: (4, 1024, 16), 131072: (16, 512, 16), 262144: (16, 512, 32)}},
    "rmsnorm_gate": {2: {32768: (4, 256, 32), 65536: (8, 256, 32), 131072: (8, 512, 32), 262144: (16, 512, 32)},
                     4: {32768: (4, 512, 16), 65536: (8, 512, 16), 131072: (16, 512, 16), 262144: (16, 512, 32)}},
}


def _new_candidates() -> Dict[str, Dict[int, Dict[int, Tuple[Tuple[int, int, int, int], ...]]]]:
    """NEW_CANDIDATES: per op, element size and bucket, the shapes of modes 3-5 an exploration
    times (benchmarks/explore/2026-12-02-wide-persistent): _PERSIST_RUN_SHAPES in PERSIST, PERSIST_1 and
    MBAR (a direct comparison with the measured mode at the same reduction order), and
    QuACK's shape (256 threads, its cluster size) in MBAR and PERSIST -- each only where its
    shared memory fits one CTA (PERSIST doubles the row buffers: the fp32 gate at 262144
    needs 320 KiB, so only PERSIST_1 runs it persistently)."""
    out: Dict = {}
    for op in OPS:
        out[op] = {}
        for size in (2, 4):
            out[op][size] = {}
            for n in sorted(_PERSIST_RUN_SHAPES[op][size]):
                c, t, e = _PERSIST_RUN_SHAPES[op][size][n]
                qc = _quack_cluster(n, size)
                shapes = [(c, t, e, PERSIST), (c, t, e, PERSIST_1), (c, t, e, MBAR),
                          (qc, 256, n // (qc * 256), MBAR), (qc, 256, n // (qc * 256), PERSIST)]
                keep = []
                for sh in dict.fromkeys(shapes):
                    if smem_bytes_of(op, size, 4, sh) <= MAX_CTA_SHARED:  # an fp32 weight: the largest
                        keep.append(sh)
                out[op][size][n] = tuple(keep)
    return out


#: Shared memory of one SM (sm_90: 228 KiB, of which 1 KiB per resident CTA is the system's) and
#: the most one CTA may have (227 KiB, after the max-dynamic-shared-size opt-in).
SM_SHARED = 228 * 1024
CTA_RESERVED_SHARED = 1024
MAX_CTA_SHARED = 227 * 1024
#: Registers per thread the shared-memory modes are given at least (ptxas on sm_90 needs 32-64).
SMEM_MODE_REGISTERS = 40
OPS = ("rmsnorm", "rmsnorm_gate")
#: SMs of an H200 / H100 SXM (132): the CPU-side estimate of a persistent grid (dry runs); on a
#: GPU the launcher asks the driver (cuOccupancyMaxActiveClusters).
H100_SMS = 132


def smem_bytes_of(op: str, itemsize: int, weight_itemsize: int, shape: Tuple[int, int, int, int],
                  ring: int = 0, hreg: int = 0, gate_late: bool = False) -> int:
    """Dynamic shared memory per CTA of ``shape`` = (cluster, threads, ept, mode): the slice of x
    (and the gate) -- twice in PERSIST -- and, in SMEM_W, PERSIST, PERSIST_1 and RING, the weight's;
    RING and RING_L2 hold ``ring`` chunk slots of 16 bytes a thread (of x, and of the gate)
    instead of the slice; HYBRID the chunks past the ``hreg`` (0: half) a thread keeps in
    registers (of x alone where the gate op reads g in the last step, ``gate_late``).

    Raises:
        ValueError: ``ring`` below 1 for RING / RING_L2."""
    _, t, e, mode = shape
    if mode == REGISTERS:
        return 0
    if mode in RING_MODES:
        if ring < 1:
            raise ValueError(f"mode {mode} (RING / RING_L2) needs ring >= 1 chunk slots, got {ring}")
        return t * 16 * ring * (2 if op == "rmsnorm_gate" else 1) + (t * e * weight_itemsize if mode == RING else 0)
    if mode == HYBRID:
        rows = 2 if op == "rmsnorm_gate" and not gate_late else 1
        return t * (e - _hybrid_register_elements(itemsize, e, hreg)) * itemsize * rows
    rows = itemsize * (2 if op == "rmsnorm_gate" else 1) * (2 if mode == PERSIST else 1)
    weight = weight_itemsize if mode in (SMEM_W, PERSIST, PERSIST_1) else 0
    return t * e * (rows + weight)


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
    SMEM, SMEM_W), ``smem_bytes`` the dynamic shared memory that takes; ``wload`` when SMEM and
    MBAR load the weight for the last step (WLOAD_CHUNK / _BATCH / _EARLY); ``ring`` the chunk
    slots of RING and RING_L2 (0 for the other modes); ``hreg`` the chunks a HYBRID thread keeps
    in registers (0: half) and ``wdist`` how many chunks ahead of its stores it loads the weight;
    ``gate_late`` whether a HYBRID gate kernel reads g there too (instead of with x).
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
    ring: int = 0
    hreg: int = 0
    wdist: int = 1
    gate_late: bool = False

    @property
    def capacity(self) -> int:
        return self.cluster * self.threads * self.ept

    @property
    def kernel(self) -> str:
        suf = DTYPES[self.dtype][0]
        return (f"{self.op}_cluster_{suf}_w{DTYPES[self.weight_dtype][0]}_c{self.cluster}"
                f"_t{self.threads}_e{self.ept}_m{self.mode}"
                + (f"_r{self.ring}" if self.mode in RING_MODES else f"_h{self.hreg}_d{self.wdist}"
                   + ("_g" if self.gate_late else "") if self.mode == HYBRID else ("", "_wb", "_we")[self.wload]))

    @property
    def options(self) -> Tuple[str, ...]:
        """The -D options of its module (one kernel per module)."""
        return (f"-DWIDE_DTYPE={DTYPES[self.dtype][3]}", f"-DWIDE_WEIGHT={DTYPES[self.weight_dtype][3]}",
                f"-DWIDE_GATE={int(self.op == 'rmsnorm_gate')}", f"-DWIDE_CLUSTER={self.cluster}",
                f"-DWIDE_THREADS={self.threads}", f"-DWIDE_EPT={self.ept}",
                f"-DWIDE_MIN_BLOCKS={self.min_blocks}", f"-DWIDE_MODE={self.mode}", f"-DWIDE_WLOAD={self.wload}") + (
                    (f"-DWIDE_RING={self.ring}",) if self.mode in RING_MODES else
                    (f"-DWIDE_HREG={self.hreg}", f"-DWIDE_WDIST={self.wdist}") + (
                        ("-DWIDE_GLATE=1",) if self.gate_late else ()) if self.mode == HYBRID else ())

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory per CTA (:func:`smem_bytes_of`)."""
        return smem_bytes_of(self.op, DTYPES[self.dtype][1], DTYPES[self.weight_dtype][1],
                             (self.cluster, self.threads, self.ept, self.mode), self.ring, self.hreg,
                             self.gate_late)

    @property
    def persistent(self) -> bool:
        """Whether the grid is persistent (PERSIST, PERSIST_1, RING, RING_L2): a fixed number of clusters loops
        over the rows (:func:`launch_grid`)."""
        return self.mode in PERSISTENT_MODES

    def as_dict(self) -> Dict:
        return dict(dataclasses.asdict(self), capacity=self.capacity, kernel=self.kernel, smem_bytes=self.smem_bytes,
                    persistent=self.persistent)


def reduction_order(cfg: WideConfig, n: int) -> Tuple:
    """What fixes the order in which a row of ``n`` elements' squares are added
    (kernels/rmsnorm_wide.cu, steps 2 and 4; vectors past n are skipped): each thread's fmaf chain over its vectors c = 0 .. EPT/VEC - 1 and their elements,
    a warp butterfly, the warps' totals in one butterfly, the CTA sums added in rank order 0 ..
    CLUSTER-1 -- so (N, vec, cluster, threads, ept).  Not the mode: every mode, the persistent
    ones included, adds a row in this order (only where the operands wait differs), and not M,
    the grid or the row's position: a persistent cluster runs the same per-row code for each of
    its rows.  (The output's rounding, x * w * r, is one expression in every mode too.)"""
    n = check_int("n", n)
    if not 0 < n <= cfg.capacity:
        raise ValueError(f"n={n} does not fit {cfg.kernel} (capacity {cfg.capacity})")
    return ("cluster-slots", n, cfg.vec, cfg.cluster, cfg.threads, cfg.ept)


def launch_grid(cfg: WideConfig, M: int, active_clusters: Optional[int] = None,
                clusters: Optional[int] = None) -> int:
    """Blocks of ``cfg``'s launch for M rows: ``M * cluster``, or for a persistent mode
    ``G * cluster`` with G = ``clusters`` (tests, explorations: any G >= 1, exactly, even above
    M: the clusters without a row pass their first barrier and exit) or else
    min(M, ``active_clusters``) -- what the GPU holds at once (cuOccupancyMaxActiveClusters),
    so no cluster waits for a second wave and none is left without a row.  The grid changes
    which cluster computes a row, never how (:func:`reduction_order`).

    Raises:
        ValueError: M < 0; a persistent mode without ``active_clusters`` or ``clusters``, or with
            either below 1; ``clusters`` for a mode that is not persistent; a grid beyond
            gridDim.x.
    """
    M = check_int("M", M)
    if M < 0:
        raise ValueError(f"M must be >= 0, got {M}")
    if not cfg.persistent:
        if clusters is not None:
            raise ValueError(f"clusters={clusters} is for the persistent modes ({PERSISTENT_MODES}); "
                             f"mode {cfg.mode} launches one cluster per row")
        g = M
    elif clusters is not None:  # exactly that many, more than M included (idle clusters: tests)
        clusters = check_int("clusters", clusters)
        if clusters < 1:
            raise ValueError(f"clusters must be >= 1 for the persistent grid, got {clusters}")
        g = clusters if M else 0
    else:
        if active_clusters is None:
            raise ValueError("a persistent mode needs active_clusters (cuOccupancyMaxActiveClusters) or clusters")
        active_clusters = check_int("active_clusters", active_clusters)
        if active_clusters < 1:
            raise ValueError(f"active_clusters must be >= 1 (the GPU holds no cluster of {cfg.kernel}?), "
                             f"got {active_clusters}")
        g = min(M, active_clusters)
    if g * cfg.cluster > MAX_GRID_X:
        raise ValueError(f"M={M} rows x {cfg.cluster} CTAs per row exceeds gridDim.x={MAX_GRID_X}")
    return g * cfg.cluster


def rows_of_cluster(k: int, M: int, clusters: int) -> range:
    """The rows persistent cluster k of ``clusters`` normalises: k, k + clusters, ... < M (the
    kernel's loop); iteration i of it uses slot set and mbarrier i % 2 at phase (i // 2) % 2."""
    return range(k, M, clusters)


def estimate_active_clusters(cfg: WideConfig, sms: int = H100_SMS) -> int:
    """An upper bound, without a GPU, of the clusters of ``cfg`` resident at once: SMs times the
    CTAs one SM holds (``min_blocks``: shared memory and registers) over the cluster size.  The
    driver's number can be lower (a cluster must fit one GPC); dry runs only."""
    return max(1, (sms * cfg.min_blocks) // cfg.cluster)


def min_blocks(op: str, itemsize: int, weight_itemsize: int, threads: int, ept: int, mode: int = REGISTERS,
               smem_bytes: int = 0, hreg: int = 0, wdist: int = 1, gate_late: bool = False) -> int:
    """``__launch_bounds__``' minimum blocks per SM.  REGISTERS: as many as the registers of the
    row data allow (x packed -- or, for the gate, x * silu(g) as fp32 -- and the weight's pack,
    plus OVERHEAD_REGISTERS); RING and RING_L2 the same for the row data alone (no weight pack)
    plus RING_OVERHEAD_REGISTERS, HYBRID for its ``hreg`` register chunks (the gate's x and g packs
    while they are summed, or its fp32 x * silu(g), whichever is larger; with ``gate_late`` x packed
    and ``wdist`` g packs in flight) and the weight packs in flight past the first (``wdist`` - 1).  An estimate: ptxas decides (:func:`kernel_report`).  Other shared-memory modes: as many as shared memory holds, while
    each thread keeps SMEM_MODE_REGISTERS.  At least 1, at most SM_THREADS / threads."""
    if mode == REGISTERS:
        data = (ept * itemsize // 4 if op == "rmsnorm" else ept) + ept * weight_itemsize // 4
        fit = SM_REGISTERS // (threads * (data + OVERHEAD_REGISTERS))
    elif mode in RING_MODES or mode == HYBRID:
        e = _hybrid_register_elements(itemsize, ept, hreg) if mode == HYBRID else ept
        data = e * itemsize // 4 if op == "rmsnorm" else e
        if mode == HYBRID:
            if op != "rmsnorm" and gate_late:  # x packed, g's packs of the last step in flight
                data = e * itemsize // 4 + wdist * 4
            elif op != "rmsnorm":  # x's and g's packs live together until x * silu(g) is formed
                data = max(data, 2 * e * itemsize // 4)
            data += (wdist - 1) * (16 // itemsize) * weight_itemsize // 4
        fit = SM_REGISTERS // (threads * (data + RING_OVERHEAD_REGISTERS))
    else:
        fit = SM_REGISTERS // (threads * SMEM_MODE_REGISTERS)
    return max(1, min(sm_holds(threads, smem_bytes), fit))


def sm_holds(threads: int, smem_bytes: int) -> int:
    """CTAs of ``threads`` threads and ``smem_bytes`` of dynamic shared memory one SM can hold by
    its threads and shared memory alone (registers aside: the launch bound sets those)."""
    by_smem = SM_SHARED // (smem_bytes + CTA_RESERVED_SHARED) if smem_bytes else SM_THREADS
    return min(SM_THREADS // threads, by_smem)


NEW_CANDIDATES = _new_candidates()


def _bucket(n: int) -> int:
    return next(b for b in sorted(POLICY["rmsnorm"][2]) if b >= n)


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


def config(n: int, dtype, cc, *, gate: bool = False, weight_dtype=None,
           shape: Optional[Tuple[int, int, int, int]] = None, wload: Optional[int] = None,
           blocks: Optional[int] = None, ring: Optional[int] = None, hreg: Optional[int] = None,
           wdist: Optional[int] = None, gate_late: Optional[bool] = None) -> WideConfig:
    """The :class:`WideConfig` for rows of ``n`` elements: :data:`POLICY`'s bucket for n and the
    element size, with :data:`POLICY_LOADS`' weight loads and launch bound (``shape`` =
    (cluster, threads, ept, mode) overrides the shape, ``wload`` the weight loads and ``blocks``
    the minimum blocks per SM: the measurements' candidates; taken as given, so a combination the
    policy never uses may spill -- :func:`kernel_report` tells; an explicit ``shape`` gets
    :func:`min_blocks`' estimate unless ``blocks`` is given, even where it is the policy's own shape).  ``ring``: the chunk slots of
    RING / RING_L2 (the policy's :data:`POLICY_RING` where the shape is the policy's; required with
    a ``shape`` in those modes).  ``hreg`` / ``wdist``: HYBRID's chunks kept in registers (default
    half) and how many chunks ahead of its stores it loads the weight (default 1; the policy's
    :data:`POLICY_HYBRID`, with its launch bound where neither is overridden).  ``gate_late``: a
    HYBRID gate kernel reads g in its last step instead of with x (the policy's
    :data:`POLICY_GATE_LATE` where the shape is the policy's; otherwise False; overriding the
    policy's choice also gives the estimated launch bound).  ``weight_dtype``: x's
    dtype (None) or float32.

    Raises:
        ValueError: ``not supported(n, dtype, cc)`` (naming why), a weight dtype other than x's
            or float32, a ``shape`` that is not 4 ints or whose capacity is below n or whose
            cluster exceeds 16, a ``wload`` not in WLOADS or other than WLOAD_CHUNK for a mode not
            in WLOAD_MODES, ``blocks`` beyond what the threads or shared memory allow an SM, a
            ``ring`` outside 1 .. MAX_RING for RING / RING_L2, missing there, or given for another
            mode, ``hreg`` outside 1 .. chunks - 1 or ``wdist`` outside 1 .. chunks for HYBRID (which
            needs 2 chunks a thread), either given for another mode, ``gate_late`` true for rmsnorm
            or a mode other than HYBRID, shared memory beyond MAX_CTA_SHARED.
        TypeError: ``wload``, ``blocks``, ``ring``, ``hreg`` or ``wdist`` not an int, ``gate_late``
            not a bool.
    """
    dt = dtype_name(dtype)
    wdt = dt if weight_dtype is None else dtype_name(weight_dtype)
    if not supported(n, dt, cc):
        raise ValueError(_unsupported_reason(n, dt, cc))
    if wdt not in (dt, "float32"):
        raise ValueError(f"weight dtype {wdt} with x {dt}: the weight must be x's dtype or float32")
    size = DTYPES[dt][1]
    op = "rmsnorm_gate" if gate else "rmsnorm"
    if shape is not None and (not isinstance(shape, (tuple, list)) or len(shape) != 4):
        raise ValueError(f"shape must be (cluster, threads, ept, mode), 4 ints, got {shape!r}")
    c, t, e, mode = POLICY[op][size][_bucket(n)] if shape is None else shape
    if gate_late is not None:
        gate_late = check_bool("gate_late", gate_late, "or None (the policy's)")
    if shape is None:  # the policy's weight loads and launch bound; WLOAD_CHUNK where they would spill
        pol_wload, pol_blocks = POLICY_LOADS[op][size].get(_bucket(n), (WLOAD_CHUNK, None))
        if e * DTYPES[wdt][1] > WLOAD_MAX_BYTES:
            pol_wload = WLOAD_CHUNK
        wload = pol_wload if wload is None else wload
        blocks = pol_blocks if blocks is None else blocks
        if ring is None:
            ring = POLICY_RING[op][size].get(_bucket(n))
        pol_h, pol_d, pol_b = POLICY_HYBRID[op][size].get(_bucket(n), (None, None, None))
        # the bound was timed with the entry's own hreg / wdist and a weight of x's dtype: another
        # hreg or wdist, or an fp32 weight of a 16-bit x (its packs take twice the registers), gets
        # min_blocks' estimate instead (ptxas spills at the policy's 32 registers a thread there)
        pol_late = gate and _bucket(n) in POLICY_GATE_LATE[size]
        if (DTYPES[wdt][1] > size or hreg not in (None, pol_h) or wdist not in (None, pol_d)
                or gate_late not in (None, pol_late)):
            pol_b = None
        hreg = pol_h if hreg is None else hreg
        wdist = pol_d if wdist is None else wdist
        blocks = pol_b if blocks is None else blocks
        gate_late = pol_late if gate_late is None else gate_late
    wload = _check_wload(wload)
    if wload != WLOAD_CHUNK and mode not in WLOAD_MODES:
        raise ValueError(f"wload={wload!r} with mode {mode}: loading the weight other than a chunk at a time "
                         f"(WLOAD_CHUNK = {WLOAD_CHUNK}) is for the shared-memory modes SMEM ({SMEM}) and MBAR "
                         f"({MBAR}) only")
    vec = DTYPES[dt][2]
    if (c * t * e < n or not 1 <= c <= MAX_CLUSTER or t % 32 or not 32 <= t <= 1024 or e % vec
            or mode not in MODES):
        raise ValueError(f"shape (cluster={c}, threads={t}, ept={e}, mode={mode}) does not fit n={n} {dt} "
                         f"(needs cluster*threads*ept >= n, cluster <= {MAX_CLUSTER}, threads a multiple "
                         f"of 32 up to 1024, ept a multiple of {vec}, mode one of {MODES})")
    ring, hreg, wdist = (None if v is None else check_int(name, v)
                         for name, v in (("ring", ring), ("hreg", hreg), ("wdist", wdist)))
    if mode in RING_MODES:
        if ring is None:
            raise ValueError(f"mode {mode} (RING / RING_L2) needs ring, its chunk slots (1 to {MAX_RING})")
        if not 1 <= ring <= MAX_RING:
            raise ValueError(f"ring={ring}: the ring takes 1 to {MAX_RING} chunk slots")
    elif ring is not None:
        raise ValueError(f"ring={ring} with mode {mode}: the chunk ring is RING ({RING}) and RING_L2 ({RING_L2})'s only")
    h, d = 0, 1
    if mode == HYBRID:
        chunks = e // vec
        if chunks < 2:
            raise ValueError(f"HYBRID needs at least 2 chunks a thread, got ept={e} ({chunks} of {vec} elements)")
        if hreg is not None and not 1 <= hreg < chunks:
            keeps = "exactly 1" if chunks == 2 else f"1 to {chunks - 1}"
            raise ValueError(f"hreg={hreg}: a HYBRID thread keeps {keeps} of its {chunks} chunks in registers")
        if wdist is not None and not 1 <= wdist <= chunks:
            raise ValueError(f"wdist={wdist}: the weight's loads run 1 to {chunks} chunks ahead of the stores")
        h, d = hreg or chunks // 2, wdist or 1
    elif hreg is not None or wdist is not None:
        given = ", ".join(f"{k}={v}" for k, v in (("hreg", hreg), ("wdist", wdist)) if v is not None)
        raise ValueError(f"{given} with mode {mode}: hreg and wdist are HYBRID ({HYBRID})'s only")
    if gate_late and not gate:
        raise ValueError("gate_late=True for rmsnorm: it says when the gate op reads its gate g; "
                         "pass gate=True (rmsnorm_gate) or leave gate_late out")
    if gate_late and mode != HYBRID:
        raise ValueError(f"gate_late=True with {op} mode {mode}: reading g in the last step is the gate op's "
                         f"HYBRID ({HYBRID}) only; pass shape=(cluster, threads, ept, {HYBRID}) with it")
    cfg = WideConfig(op, dt, wdt, c, t, e, vec, 1, mode, ring=ring or 0, hreg=h, wdist=d, gate_late=bool(gate_late))
    if cfg.smem_bytes > MAX_CTA_SHARED:
        raise ValueError(f"shape {shape} needs {cfg.smem_bytes} bytes of shared memory per CTA for {op} {dt} "
                         f"(weight {wdt}); at most {MAX_CTA_SHARED}")
    mb = min_blocks(op, size, DTYPES[wdt][1], t, e, mode, cfg.smem_bytes, h, d, cfg.gate_late)
    if blocks is not None:
        most = sm_holds(t, cfg.smem_bytes)
        blocks = check_int("blocks", blocks)
        if not 1 <= blocks <= most:
            holds = f"1 to {most}" if most > 1 else "only 1"
            raise ValueError(f"blocks={blocks} for {cfg.kernel}: an SM holds {holds} of its CTAs "
                             f"({t} threads, {cfg.smem_bytes} bytes of shared memory each)")
        mb = blocks
    return dataclasses.replace(cfg, min_blocks=mb, wload=wload)


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


def configs_in_use(dtypes: Sequence[str] = tuple(DTYPES), cc=(9, 0), candidates: bool = False,
                   new: bool = False) -> List[WideConfig]:
    """Every configuration :func:`config` can return (each bucket, op and weight dtype), or with
    ``candidates`` every measured alternative too; with ``new`` only NEW_CANDIDATES (modes 3-5
    around the policy's shapes)."""
    out = []
    for dt in dtypes:
        size = DTYPES[dt][1]
        for n in sorted(CANDIDATES[size]):
            for gate in (False, True):
                op = "rmsnorm_gate" if gate else "rmsnorm"
                if new:
                    shapes = NEW_CANDIDATES[op][size][n]
                else:  # the policy: shape None, so its weight loads and launch bound come with it
                    shapes = CANDIDATES[size][n] if candidates else (None,)
                for shape in shapes:
                    for wdt in dict.fromkeys((dt, "float32")):
                        out.append(config(n, dt, cc, gate=gate, weight_dtype=wdt, shape=shape))
    return out


# ---------------------------------------------------------------------------------------
# operands and launch

def _info(name: str, a) -> Tuple[str, str, Tuple[int, ...], Tuple[int, ...], int]:
    """(framework, dtype name, shape, strides in elements, data pointer) of a torch CUDA tensor
    or CuPy array."""
    fw = _framework(a)
    if fw is None:
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got {type(a).__module__}."
                        f"{type(a).__name__}")
    try:
        dt = dtype_name(a.dtype)
    except TypeError:
        raise TypeError(f"{name} has dtype {a.dtype}; expected float32, float16 or bfloat16") from None
    if fw == "torch":
        return fw, dt, tuple(a.shape), tuple(a.stride()), int(a.data_ptr())
    item = a.dtype.itemsize
    return fw, dt, tuple(a.shape), tuple(s // item for s in a.strides), int(a.data.ptr)


def _device(a, fw: str) -> int:
    return int(a.device.index) if fw == "torch" else int(a.device.id)


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
def _kernel(cfg: WideConfig, device: int, extra_options: Tuple[str, ...] = ()):
    """The compiled kernel of ``cfg`` on ``device``, with the non-portable cluster-size
    attribute set where the cluster exceeds 8 CTAs.  ``extra_options``: -D options added to
    ``cfg.options`` (the explorations' builds, e.g. ``("-DWIDE_PHASES=1",)``; their module is
    ``kernels.load(FILE, cfg.options + extra_options)``)."""
    k = kernels.function(FILE, cfg.kernel, cfg.options + tuple(extra_options), device=device)
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


def forward(x2d, weight, eps: float, out, *, gate=None, stream=None, weight_offset: float = 0.0,
            shape: Optional[Tuple[int, int, int, int]] = None, clusters: Optional[int] = None,
            wload: Optional[int] = None, blocks: Optional[int] = None, ring: Optional[int] = None,
            hreg: Optional[int] = None, wdist: Optional[int] = None, gate_late: Optional[bool] = None):
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
        shape: (cluster, threads, ept, mode) instead of :data:`POLICY`'s (measurements, tests:
            any of CANDIDATES or NEW_CANDIDATES, or another shape that holds the row).
        clusters: a persistent mode's cluster count (tests: any >= 1; None: what the GPU holds
            at once, see :func:`launch_grid`).  The result does not depend on it.
        wload, blocks, ring, hreg, wdist, gate_late: the weight loads, the launch bound, the ring
            depth, HYBRID's register chunks, weight distance and where it reads the gate instead of
            the policy's (see :func:`config`); the result does not depend on them either.

    Returns:
        rstd: ``(M,)`` float32 of x's library: ``rsqrt(mean(x^2) + eps)`` per row.  ``out``
        holds y = (x [* silu(gate)] * (weight + weight_offset)) * rstd, computed in fp32 and
        rounded once to x's dtype.

    Raises:
        TypeError: an operand that is not a torch CUDA tensor / CuPy array, mixed libraries,
            unsupported or mismatched dtypes, a non-number eps / weight_offset, a non-int
            ``wload`` / ``blocks``, a non-bool ``gate_late``.
        ValueError: shapes (x not 2-D, weight not (N,), gate / out not x's shape), a
            non-contiguous or misaligned operand, operands on different devices, eps < 0,
            N not supported on this GPU (naming why), M * cluster beyond gridDim.x, ``clusters``
            below 1 or with a mode that is not persistent, ``shape`` / ``wload`` / ``blocks`` /
            ``ring`` / ``hreg`` / ``wdist`` / ``gate_late`` that :func:`config` refuses.
        GPUUnavailable: in CPU mode.
    """
    xf, dt, xs, xst, xp = _info("x2d", x2d)
    if len(xs) != 2:
        raise ValueError(f"x2d must be 2-D (M, N), got shape {xs}")
    M, N = xs
    ops = [("x2d", x2d, xf, dt, xs, xst, xp)]
    for name, a, want_shape in (("weight", weight, (N,)), ("out", out, xs), ("gate", gate, xs)):
        if a is None:
            if name != "gate":
                raise TypeError(f"{name} must be an array, got None")
            continue
        f, d, s, st, p = _info(name, a)
        if f != xf:
            raise TypeError(f"{name} is a {f} array but x2d is a {xf} array: pass all operands from one library")
        if s != want_shape:
            raise ValueError(f"{name} must have shape {want_shape} to match x2d of shape {xs}, got {s}")
        if name == "weight" and d not in (dt, "float32"):
            raise TypeError(f"weight has dtype {d} but x2d has {dt}: the weight must be x's dtype or float32")
        if name != "weight" and d != dt:
            raise TypeError(f"{name} has dtype {d} but x2d has {dt}: they must match")
        ops.append((name, a, f, d, s, st, p))
    wdt = ops[1][3]
    for name, a, f, d, s, st, p in ops:
        if not _contiguous(s, st):
            raise ValueError(f"{name} must be contiguous (shape {s}, strides {st}): pass {name}.contiguous()")
        if p % 16 and math.prod(s) > 0:
            raise ValueError(f"{name} must start on a 16-byte boundary for the cluster path's vector loads "
                             f"(its data pointer is {p:#x}); use the general path for offset views")
    for name, a, f, *_ in ops:
        if f == "torch" and a.device.type != "cuda":
            raise ValueError(f"{name} is on device {a.device}: the cluster path needs CUDA tensors")
    devs = {_device(a, f) for _, a, f, *_ in ops}
    if len(devs) > 1:
        raise ValueError(f"all operands must be on one device, got devices {sorted(devs)}")
    eps = check_eps(eps)
    weight_offset = check_f32_arg("weight_offset", weight_offset)
    _check_wload(wload)  # refused before M == 0 returns too (the rest needs the GPU's cc: config)
    if blocks is not None:
        check_int("blocks", blocks, minimum=1)
    for name, v in (("ring", ring), ("hreg", hreg), ("wdist", wdist)):
        if v is not None:
            check_int(name, v, minimum=1)
    if gate_late is not None:
        check_bool("gate_late", gate_late, "or None (the policy's)")
    device = devs.pop()
    if M == 0:
        return _new_rstd(x2d, xf, 0, device)
    backend.require_gpu("the cluster RMSNorm path")
    cc = _cc(device)
    cfg = config(N, dt, cc, gate=gate is not None, weight_dtype=wdt, shape=shape, wload=wload, blocks=blocks,
                 ring=ring, hreg=hreg, wdist=wdist, gate_late=gate_late)
    active = _active_clusters(cfg, device) if cfg.persistent and clusters is None else None
    grid = launch_grid(cfg, M, active, clusters)
    rstd = _new_rstd(x2d, xf, M, device)
    rp = int(rstd.data_ptr()) if xf == "torch" else int(rstd.data.ptr)
    gp = ops[3][6] if gate is not None else 0
    args = (np.uint64(ops[2][6]), np.uint64(rp), np.uint64(xp), np.uint64(gp), np.uint64(ops[1][6]),
            np.int32(N), np.float32(eps), np.float32(weight_offset), np.int64(M))
    k = _kernel(cfg, device)
    if stream is None:
        _launch(k, grid, cfg, args, xf, device)
    elif xf == "torch":
        import torch

        with torch.cuda.stream(stream):
            _launch(k, grid, cfg, args, xf, device)
    else:
        with stream:
            _launch(k, grid, cfg, args, xf, device)
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


@functools.lru_cache(maxsize=None)
def _active_clusters(cfg: WideConfig, device: int) -> int:
    """cuOccupancyMaxActiveClusters of ``cfg`` on ``device``, asked once (a persistent grid's
    size; it depends on the kernel and the GPU, not on M)."""
    return max_active_clusters(cfg, device)


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

def kernel_report(arches: Optional[Sequence[str]] = None, candidates: bool = False, new: bool = False,
                  workers: int = 2) -> List[Dict]:
    """ptxas registers / spills / shared memory of every configuration in use (``candidates``:
    the measured alternatives too; ``new``: NEW_CANDIDATES only), for each of ``arches``
    (default sm_90 only: before sm_90 the kernels are a trap); ``workers`` nvcc processes.

    Returns:
        one dict per (configuration, arch): the :class:`WideConfig` fields, ``arch``,
        ``registers``, ``spill_stores_bytes``, ``spill_loads_bytes``, ``local_bytes``,
        ``shared_bytes``.

    Raises:
        FileNotFoundError: no nvcc.  KernelCompileError: with nvcc's log.
    """
    from concurrent.futures import ThreadPoolExecutor

    cfgs = configs_in_use(candidates=candidates, new=new)
    jobs = [(c, a) for a in (arches or ("sm_90",)) for c in cfgs]
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda j: (j, kernels.nvcc_compile(FILE, j[1], j[0].options)), jobs))
    rows = []
    for (cfg, arch), usages in parts:
        for u in usages:
            rows.append(dict(cfg.as_dict(), arch=u.arch, registers=u.registers,
                             spill_stores_bytes=u.spill_stores_bytes, spill_loads_bytes=u.spill_loads_bytes,
                             local_bytes=u.stack_frame_bytes, shared_bytes=u.shared_bytes))
    return rows


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig (cuda.h), no attributes
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


def max_active_clusters(cfg: WideConfig, device: int = 0) -> int:
    """How many clusters of ``cfg`` the GPU holds at once (``cuOccupancyMaxActiveClusters``):
    times ``cfg.cluster`` CTAs, the resident CTAs the cluster shape allows (a diagnostic).

    Raises:
        GPUUnavailable: in CPU mode.  RuntimeError: the driver's error code.
    """
    backend.require_gpu("max_active_clusters")
    k = _kernel(cfg, device)
    lc = _LaunchConfig(cfg.cluster * 1024, 1, 1, cfg.threads, 1, 1, cfg.smem_bytes, None, None, 0)
    n = ctypes.c_int(0)
    rc = ctypes.CDLL("libcuda.so.1").cuOccupancyMaxActiveClusters(ctypes.byref(n), ctypes.c_void_p(int(k.kernel.ptr)),
                                                                  ctypes.byref(lc))
    if rc != 0:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters failed with CUresult {rc} for {cfg.kernel}")
    return int(n.value)
