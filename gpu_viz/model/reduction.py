"""CPU model of the block reductions (notebook 12): ``kernels/reduce.cuh``'s ``block_reduce_sum``
and ``kernels/reduction.cu``'s seed tree and its fix, warp-synchronously in numpy float32.

Data path: inputs --> :func:`block_reduce_sum` / :func:`seed_reduce` (the kernels' exact addition
order) --> the arrays ``gpu_viz.record.reduction`` reads off the GPU; on a GPU the tests assert
model == silicon bit for bit.  :func:`trace` is the seed tree as the lesson's
:class:`gpu_viz.trace.Trace` (``gpu_viz.lessons.REDUCTION``, drawn by ``gpu_viz.frames.reduction``).
``gpu_viz.model.rmsnorm_deck`` builds its phase 2 from these.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from .. import backend
from ..trace import MODEL_SOURCE, Trace

F32 = np.float32
WARP = 32
STEPS = 6                    #: lane records per warp: before the first shuffle + after each of 5
OFFSETS = (16, 8, 4, 2, 1)   #: __shfl_down_sync offsets, in order
SEED_MAX_LEVELS = 10         #: kernels/reduction.cu's SEED_MAX_LEVELS
SEED_KERNEL = "seed_reduce_trace"
BLOCK_REDUCE_KERNEL = "block_reduce_all"
FILE = "reduction.cu"


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


#: The arrays of a seed-tree trace, as both producers record them (the model's ``weight`` is not
#: among them: the silicon cannot record it, and the frames count it from the model).
TRACE_ARRAYS = ("partials", "levels", "finish", "out")


def as_trace(partials: np.ndarray, result: Dict[str, np.ndarray], corrected: bool, seed: Optional[int],
             source: str, provenance: str) -> Trace:
    """The seed tree's run as a :class:`Trace`: arrays ``partials`` (block,) and the
    :data:`TRACE_ARRAYS` of ``result`` (:func:`seed_reduce`'s, or ``gpu_viz.record.reduction``'s),
    params ``block``, ``corrected`` and ``seed``; kernel ``seed_reduce_trace``."""
    arrays = {"partials": np.array(partials, dtype=F32), **{k: result[k] for k in TRACE_ARRAYS[1:]}}
    params = {"block": int(arrays["partials"].shape[0]), "corrected": bool(corrected), "seed": seed}
    return Trace(kernel=SEED_KERNEL, params=params, arrays=arrays, source=source, provenance=provenance)


def trace(partials, corrected: bool = False, *, seed: Optional[int] = None) -> Trace:
    """CPU model of the seed tree (or the fix) as the lesson's Trace: :func:`seed_reduce`, its
    arrays ``partials`` (block,), ``levels`` (10, block), ``finish`` (6, 32), ``out`` (block,), all
    float32 (NaN = not written); labelled the CPU model's.

    Raises:
        ValueError: block outside 32..1024 (1..1024 when ``corrected``), naming ``partials``.
    """
    p = np.asarray(partials, dtype=F32).reshape(-1)
    return as_trace(p, seed_reduce(p, corrected), corrected, seed, MODEL_SOURCE, backend.MODEL_LABEL)


def lost_partials(block: int) -> np.ndarray:
    """Threads whose partial never reaches the seed reduction's total at this block size (sorted)."""
    w = seed_reduce(np.ones(block, dtype=F32))["weight"]
    return np.flatnonzero(w == 0)
