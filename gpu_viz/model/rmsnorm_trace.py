"""CPU model of ``kernels/rmsnorm_trace.cu``: the same records, computed warp-synchronously in numpy.

Data path: inputs --> :func:`four_phase_trace` (32 lanes at a time, float32, the kernel's exact
operation order) --> :class:`gpu_viz.trace.Trace` --> frames (``gpu_viz.four_phase``).  On a GPU,
``gpu_viz.four_phase.record_gpu`` fills the same arrays from the instrumented kernel and the tests
assert model == silicon bit for bit.

Why it can be bit for bit: the kernel does no FMA (``__fmul_rn``/``__fadd_rn``, ``--fmad=false``), and
its ``rstd`` is ``1 / sqrt(mean + eps)`` as two correctly rounded IEEE operations, which numpy's
float32 ``sqrt`` and ``/`` also are.  Each numpy float32 ``+`` / ``*`` below is one rounded operation
in the kernel's order.

Trace arrays of :func:`four_phase_trace` (all float32; NaN = not written: a lane that does not
exist, a slot nobody wrote, or -- for the deck variant without prefill -- a value the model cannot
know because it is whatever shared memory held):

==============  =====================  =========================================================
``x``, ``w``    (d,)                   the inputs
``local``       (block,)               phase 1: each thread's local sum of squares
``warp_lanes``  (n_warps, 6, 32)       phase 2.1: every warp's lanes before / after each shuffle
``smem``        (32,)                  phase 2.2: the slots as warp 0 sees them after the sync
``w0_lanes``    (6, 32)                phase 2.3: what warp 0's lanes read, then after each shuffle
``scalars``     (4,)                   phase 3: total, mean, mean + eps, rstd
``y``           (d,)                   phase 4: the output
==============  =====================  =========================================================
"""
from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Optional, Tuple

import numpy as np

from .. import backend, kernels
from ..trace import MODEL_SOURCE, Step, Trace

F32 = np.float32
WARP = 32
STEPS = 6                    #: lane records per warp: before the first shuffle + after each of 5
OFFSETS = (16, 8, 4, 2, 1)   #: __shfl_down_sync offsets, in order
SEED_MAX_LEVELS = 10
KERNEL_FILE = "rmsnorm_trace.cu"
KERNEL = "rmsnorm_four_phase_trace"
SEED_KERNEL = "seed_reduce_trace"

GUARDED = "guarded"          #: reduce.cuh's phase 2: correct for any blockDim 1..1024
DECK = "deck"                #: the deck's phase 2 as printed: blockDim % 32 == 0 only
VARIANTS = {GUARDED: 0, DECK: 1}
DEFAULT_EPS = 1e-6
#: u, the unit roundoff of float32 (half an ulp of 1.0).
U32 = 2.0 ** -24


def garbage(slot) -> np.ndarray:
    """The visible "stale" value ``prefill=True`` writes into shared slot ``slot`` (kernel's TRACE_GARBAGE)."""
    return (F32(1000.0) + np.asarray(slot, dtype=F32)).astype(F32)


# --------------------------------------------------------------------------------------------
# argument checks (shared with the GPU producer)

def check_launch(d: int, block: int, variant: str = GUARDED) -> Tuple[int, int]:
    """Validate a traced launch; return ``(d, block)`` as ints.

    Raises:
        ValueError: ``d`` not in 1..2**24 (float32 must hold d exactly), ``block`` not in 1..1024,
            an unknown ``variant``, or the deck variant with ``block % 32 != 0``.
    """
    if int(d) != d or not 1 <= int(d) <= 1 << 24:
        raise ValueError(f"d (row length) must be an integer in 1..2**24, got {d!r}")
    if int(block) != block or not 1 <= int(block) <= 1024:
        raise ValueError(f"block (threads per block) must be an integer in 1..1024, got {block!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    if variant == DECK and block % WARP:
        raise ValueError(
            f"variant='deck' needs block % 32 == 0 (the deck's FULL-mask shuffles name all 32 lanes); "
            f"got block={block}. Use variant='guarded' for any block size.")
    return int(d), int(block)


def as_f32_vector(a, name: str, length: Optional[int] = None) -> np.ndarray:
    """``a`` as a contiguous 1-D float32 numpy array (copy), checked.

    Raises:
        ValueError: not 1-D, wrong length, or not finite.
    """
    arr = np.ascontiguousarray(np.asarray(a, dtype=F32)).copy()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one row), got shape {arr.shape}")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf): the traces use NaN to mean 'not written'")
    return arr


# --------------------------------------------------------------------------------------------
# the warp shuffle, warp-synchronously

def warp_shuffle_steps(lanes: np.ndarray, n_lanes: np.ndarray, deck: bool = False) -> np.ndarray:
    """Five ``__shfl_down_sync`` steps over many warps at once, recorded.

    Args:
        lanes: (n_warps, 32) float32 start values; lanes ``>= n_lanes[w]`` are ignored (made NaN).
        n_lanes: (n_warps,) int, lanes present in each warp (1..32).
        deck: the deck's code (every lane adds: a lane whose partner is past lane 31 gets its
            own value back from ``__shfl_down_sync`` and doubles); else reduce.cuh's guard
            (lane adds only when ``lane + off < n_lanes``).

    Returns:
        (n_warps, 6, 32) float32: step 0 = start, step k = after the k-th shuffle; NaN = no lane.
    """
    v = np.array(lanes, dtype=F32, copy=True)
    n_lanes = np.asarray(n_lanes).reshape(-1, 1)
    lane = np.arange(WARP).reshape(1, -1)
    present = lane < n_lanes
    v[~present] = np.nan
    out = np.empty((v.shape[0], STEPS, WARP), dtype=F32)
    out[:, 0] = v
    for k, off in enumerate(OFFSETS, 1):
        src = lane + off
        # __shfl_down_sync: from lane + off when that lane is in the warp, else my own value
        other = np.where(src < WARP, v[:, np.minimum(src[0], WARP - 1)], v)
        add = present & ((src < n_lanes) | deck)
        v = np.where(add, v + other, v).astype(F32)
        out[:, k] = v
    return out


def lanes_in_warp(warp, nthreads: int):
    """Lanes present in warp ``warp`` of a block of ``nthreads`` threads (reduce.cuh's lanes_in_warp)."""
    return np.clip(nthreads - np.asarray(warp) * WARP, 0, WARP)


def local_sums(x: np.ndarray, block: int) -> np.ndarray:
    """Phase 1: thread t's ``local`` = x[t]^2 + x[t+block]^2 + ... added in that order, float32."""
    d = x.shape[0]
    local = np.zeros(block, dtype=F32)
    for start in range(0, d, block):
        chunk = x[start:start + block]
        n = chunk.shape[0]
        local[:n] = local[:n] + chunk * chunk
    return local


def block_reduce_sum(values: np.ndarray) -> Tuple[np.float32, np.ndarray, np.ndarray]:
    """kernels/reduce.cuh ``block_reduce_sum`` of one value per thread, in its addition order.

    Args:
        values: (block,) float32, block in 1..1024.

    Returns:
        ``(total, warp_lanes (n_warps, 6, 32), w0_lanes (6, 32))``; every thread gets ``total``.
    """
    values = np.asarray(values, dtype=F32)
    block = values.shape[0]
    nw = (block + WARP - 1) // WARP
    lanes = np.full((nw, WARP), np.nan, dtype=F32)
    lanes.reshape(-1)[:block] = values
    warp_lanes = warp_shuffle_steps(lanes, lanes_in_warp(np.arange(nw), block))
    partials = warp_lanes[:, -1, 0]
    start = np.zeros((1, WARP), dtype=F32)
    start[0, :nw] = partials
    w0 = warp_shuffle_steps(start, lanes_in_warp(np.array([0]), block))[0]
    return w0[-1, 0], warp_lanes, w0


# --------------------------------------------------------------------------------------------
# the four phases

def four_phase_trace(x, w=None, block: int = 1024, eps: float = DEFAULT_EPS, variant: str = GUARDED,
                     prefill: bool = True, provenance: Optional[str] = None) -> Trace:
    """The CPU model's trace of ``rmsnorm_four_phase_trace`` (one block, one row).

    Args:
        x: (d,) the row (cast to float32; finite).
        w: (d,) the weight, default ones.
        block: threads per block, 1..1024 (the deck: 1024 on d = 2048).
        eps: added to the mean of squares (float32).
        variant: ``"guarded"`` (reduce.cuh's phase 2) or ``"deck"`` (as printed; block % 32 == 0).
        prefill: the kernel first writes :func:`garbage` into the 32 shared slots.  Without it the
            deck variant reads slots nobody wrote: the model records NaN there (unknowable).
        provenance: label; default ``backend.MODEL_LABEL``.

    Returns:
        :class:`Trace` (source ``"model"``), arrays as in the module docstring, steps from
        :func:`four_phase_steps`.

    Raises:
        ValueError: see :func:`check_launch`, :func:`as_f32_vector`.
    """
    x = as_f32_vector(x, "x")
    d, block = check_launch(x.shape[0], block, variant)
    w = np.ones(d, dtype=F32) if w is None else as_f32_vector(w, "w", d)
    deck = variant == DECK
    eps32 = F32(eps)
    nw = (block + WARP - 1) // WARP

    # phase 1
    local = local_sums(x, block)
    # phase 2.1: every warp's five shuffles
    lanes = np.full((nw, WARP), np.nan, dtype=F32)
    lanes.reshape(-1)[:block] = local
    n_lanes = lanes_in_warp(np.arange(nw), block)
    warp_lanes = warp_shuffle_steps(lanes, n_lanes, deck=deck)
    # phase 2.2: the hand-off (slot s as warp 0's lane s sees it after __syncthreads)
    n0 = int(n_lanes[0])
    slots = np.full(WARP, np.nan, dtype=F32)
    if prefill:
        slots[:n0] = garbage(np.arange(n0))
    slots[:nw] = warp_lanes[:, -1, 0]
    smem = np.full(WARP, np.nan, dtype=F32)
    recorded = np.arange(WARP) < n0
    if not (deck or prefill):
        recorded &= np.arange(WARP) < nw
    smem[recorded] = slots[recorded]
    # phase 2.3: warp 0 reads and reduces
    start = np.zeros(WARP, dtype=F32)
    if deck:
        start = slots.copy()             # smem[tid] for every tid < 32 (NaN where unknowable)
    else:
        start[:nw] = slots[:nw]
    w0 = warp_shuffle_steps(start.reshape(1, WARP), np.array([n0]), deck=deck)[0]
    # phase 3
    total = w0[-1, 0]
    mean = F32(total / F32(d))
    mean_eps = F32(mean + eps32)
    rstd = F32(F32(1.0) / np.sqrt(mean_eps))
    scalars = np.array([total, mean, mean_eps, rstd], dtype=F32)
    # phase 4
    y = ((x * rstd).astype(F32) * w).astype(F32)

    params = dict(d=d, block=block, eps=float(eps32), variant=variant, prefill=bool(prefill),
                  n_warps=nw)
    arrays = dict(x=x, w=w, local=local, warp_lanes=warp_lanes, smem=smem, w0_lanes=w0,
                  scalars=scalars, y=y)
    return Trace(kernel=KERNEL, params=params, arrays=arrays, source=MODEL_SOURCE,
                 provenance=provenance or backend.MODEL_LABEL, steps=four_phase_steps(params))


def unknowable(params: Dict) -> Tuple[str, ...]:
    """Arrays whose values the model cannot know for these params (compare them GPU-side only).

    The deck variant without prefill reads shared slots nobody wrote: ``smem`` (beyond the
    written slots), ``w0_lanes``, ``scalars`` and ``y`` depend on what was there.
    """
    if params["variant"] == DECK and not params["prefill"] and params["n_warps"] < WARP:
        return ("smem", "w0_lanes", "scalars", "y")
    return ()


def four_phase_steps(params: Dict) -> List[Step]:
    """The player's steps for one trace (both producers use this, so steps match too).

    Each Step's ``region`` is ``"four_phase"``, ``data["phase"]`` is 1..4 and ``data["kind"]`` one of
    ``local``, ``shuffle`` (``data["step"]`` 0..5), ``handoff``, ``w0`` (``data["step"]`` 0..5),
    ``math`` (``data["what"]``), ``output`` (``data["pass_"]``).  ``line`` is the 1-based line of the
    ``four_phase`` region of kernels/rmsnorm_trace.cu that the step executes (found by the text in
    ``data["needle"]``).
    """
    d, block = params["d"], params["block"]
    passes = -(-d // block)
    steps: List[Step] = []
    for p in range(min(passes, 2)):
        label = (f"phase 1: pass {p + 1} of {passes}: thread t reads x[t + {p * block}] and adds its square"
                 if passes > 1 else "phase 1: thread t reads x[t] and squares it")
        steps.append(Step(label, "four_phase", None,
                          dict(phase=1, kind="local", pass_=p, needle="local = __fadd_rn(local")))
    if passes > 2:
        steps.append(Step(f"phase 1: ... all {passes} passes done: every thread holds its local sum",
                          "four_phase", None, dict(phase=1, kind="local", pass_=passes - 1,
                                                   needle="TRACE(rec_local")))
    steps.append(Step("phase 2: every warp's lanes hold the local sums", "four_phase", None,
                      dict(phase=2, kind="shuffle", step=0, needle="TRACE(my_warp, lane, local)")))
    for k, off in enumerate(OFFSETS, 1):
        steps.append(Step(f"phase 2: __shfl_down_sync, offset {off}: lane l adds lane l+{off}",
                          "four_phase", None, dict(phase=2, kind="shuffle", step=k, offset=off,
                                                   needle="float other = __shfl_down_sync(mask, local")))
    steps.append(Step("phase 2: lane 0 of each warp writes smem[warpId]; __syncthreads()", "four_phase", None,
                      dict(phase=2, kind="handoff", needle="if (lane == 0) smem[warpId] = local;")))
    read = ("smem[tid] for every tid < 32" if params["variant"] == DECK
            else "smem[lane] for lane < n_warps, else 0")
    steps.append(Step(f"phase 2: warp 0 reads {read}", "four_phase", None,
                      dict(phase=2, kind="w0", step=0,
                           needle=("if (deck) total = smem[tid];" if params["variant"] == DECK
                                   else "else total = (lane < nwarps)"))))
    for k, off in enumerate(OFFSETS, 1):
        steps.append(Step(f"phase 2: warp 0, __shfl_down_sync offset {off}", "four_phase", None,
                          dict(phase=2, kind="w0", step=k, offset=off,
                               needle="float other = __shfl_down_sync(mask, total")))
    for what, needle in (("total / d = mean", "float mean = __fdiv_rn"),
                         ("rstd = 1 / sqrt(mean + eps), into shared memory", "smem_rms = __fdiv_rn")):
        steps.append(Step(f"phase 3: thread 0: {what}", "four_phase", None,
                          dict(phase=3, kind="math", what=what, needle=needle)))
    steps.append(Step("phase 3: __syncthreads(): rstd visible to every thread", "four_phase", None,
                      dict(phase=3, kind="math", what="sync", needle="RMS now visible to all")))
    for p in range(min(passes, 2)):
        steps.append(Step(f"phase 4: pass {p + 1} of {passes}: y[i] = x[i] * rstd * w[i] written to VRAM",
                          "four_phase", None, dict(phase=4, kind="output", pass_=p,
                                                   needle="y[i] = __fmul_rn")))
    snip = kernels.snippet(KERNEL_FILE, "four_phase")
    return [dataclasses.replace(st, line=snip.line_of(st.data["needle"])) for st in steps]


# --------------------------------------------------------------------------------------------
# the seed's reduction (fault b) and its fix

def seed_reduce(partials, corrected: bool = False) -> Dict[str, np.ndarray]:
    """CPU model of ``seed_reduce_trace``: the seed's halving tree + full-warp finish (or the fix).

    Args:
        partials: (block,) float32, one partial sum per thread; block in 32..1024
            (1..1024 when ``corrected``).
        corrected: the fixed tree (ceil halving down to <= 32 slots, guarded warp finish).

    Returns:
        dict with ``levels`` (10, block) float32 (slot t after each tree level, NaN rows unused),
        ``finish`` (6, 32) float32 (warp 0's lanes), ``out`` (block,) float32 (every thread's total),
        ``weight`` (block,) int64: how many times thread t's partial reaches the total (0 = lost).

    Raises:
        ValueError: block outside the range above.
    """
    p = np.asarray(partials, dtype=F32).reshape(-1)
    B = p.shape[0]
    lo = 1 if corrected else WARP
    if not lo <= B <= 1024:
        raise ValueError(f"partials must have length (block) in {lo}..1024 for corrected={corrected}, got {B}"
                         + ("" if corrected else " (the seed's wrapper never picks fewer than 32 threads)"))
    shared = p.copy()
    # contrib[s, t]: how many copies of thread t's partial slot s holds
    contrib = np.eye(B, dtype=np.int64)
    levels = np.full((SEED_MAX_LEVELS, B), np.nan, dtype=F32)
    level = 0
    live = WARP
    if not corrected:
        s = B >> 1
        while s >= WARP:
            shared[:s] = shared[:s] + shared[s:2 * s]
            contrib[:s] += contrib[s:2 * s]
            levels[level] = shared
            level += 1
            s >>= 1
    else:
        n = B
        while n > WARP:
            half = (n + 1) >> 1
            m = n - half
            shared[:m] = shared[:m] + shared[half:half + m]
            contrib[:m] += contrib[half:half + m]
            levels[level] = shared
            level += 1
            n = half
        live = n
    n0 = min(B, WARP)
    start = np.full(WARP, np.nan, dtype=F32)
    start[:n0] = shared[:n0]
    lane_contrib = np.zeros((WARP, B), dtype=np.int64)
    lane_contrib[:n0] = contrib[:n0]
    if corrected:
        start[live:n0] = 0
        lane_contrib[live:] = 0
    finish = warp_shuffle_steps(start.reshape(1, WARP), np.array([n0]), deck=not corrected)[0]
    # lane 0's contributions: the same tree over the lanes (lane 0 only ever adds lanes 1, 2, 4, ...)
    c = lane_contrib.copy()
    lane = np.arange(WARP)
    for off in OFFSETS:
        src = lane + off
        ok = src < (WARP if not corrected else n0)
        c_new = c.copy()
        c_new[ok] += c[src[ok]]
        if not corrected:
            c_new[~ok] += c[~ok]   # the seed's FULL-mask finish: out-of-range lanes double (not lane 0)
        c = c_new
    out = np.full(B, finish[-1, 0], dtype=F32)
    return dict(levels=levels, finish=finish, out=out, weight=c[0])


def lost_partials(block: int) -> np.ndarray:
    """Threads whose partial never reaches the seed reduction's total at this block size (sorted)."""
    w = seed_reduce(np.ones(block, dtype=F32))["weight"]
    return np.flatnonzero(w == 0)


# --------------------------------------------------------------------------------------------
# numerics: error bounds and summation orders

def sum_error_bound(d: int, block: int) -> float:
    """Relative error bound of the kernel's fp32 sum of squares (all terms >= 0).

    Each term passes through at most ``ceil(d / block)`` phase-1 additions (its own square rounds
    once more) and 10 tree additions (5 warp shuffles + 5 in warp 0); the standard bound for a sum
    of non-negative terms is then ``gamma_k = k u / (1 - k u)`` with ``k = ceil(d/block) + 11`` and
    u = 2**-24.  Returns that ``gamma_k`` (a dimensionless relative error).
    """
    k = math.ceil(d / block) + 11
    return k * U32 / (1 - k * U32)


def output_rtol(d: int, block: int) -> float:
    """Relative tolerance for ``y`` against float64 that the error analysis guarantees.

    rstd = (S/d + eps)^-1/2 halves the sum's relative error; the division, the +eps, sqrt, 1/x and
    two multiplies add at most 6 more roundings (u each, to first order).  Twice that for margin.
    """
    return 2 * (sum_error_bound(d, block) / 2 + 6 * U32)


def rmsnorm_float64(x, w=None, eps: float = DEFAULT_EPS) -> np.ndarray:
    """The float64 reference: x * w / sqrt(mean(x^2) + eps), inputs read as given (float32 exact)."""
    x64 = np.asarray(x, dtype=np.float64)
    w64 = np.ones_like(x64) if w is None else np.asarray(w, dtype=np.float64)
    return x64 * w64 / np.sqrt(np.mean(x64 * x64) + float(F32(eps)))


def sum_of_squares_fp32(x, block: int) -> np.float32:
    """The kernel's fp32 sum of squares at ``block`` threads (phase 1 + reduce.cuh's tree)."""
    x = np.asarray(x, dtype=F32)
    return block_reduce_sum(local_sums(x, block))[0]


def sequential_sum_of_squares_fp32(x) -> np.float32:
    """One thread, left to right, in float32 (what block = 1 does): the worst common order."""
    x = np.asarray(x, dtype=F32)
    return np.cumsum((x * x).astype(F32), dtype=F32)[-1]
