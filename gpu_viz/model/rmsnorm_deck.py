"""CPU model of the traced build of ``kernels/rmsnorm_deck.cu`` (notebook 12): the same records as
``gpu_viz.record.rmsnorm_deck``, computed warp-synchronously in numpy.

Data path: inputs --> :func:`trace` (32 lanes at a time, float32, the kernel's exact operation
order; phase 2 from ``gpu_viz.model.reduction``) --> :class:`gpu_viz.trace.Trace` --> frames
(``gpu_viz.frames.rmsnorm_deck``).  On a GPU the tests assert model == silicon bit for bit.

Why it can be bit for bit: the traced build is compiled with ``--fmad=false`` (``local += v * v``
is a rounded multiply, then a rounded add), and its ``rsqrtf`` is the correctly rounded
``1 / sqrt(mean + eps)`` (kernels/trace.cuh), two IEEE operations numpy's float32 ``sqrt`` and
``/`` also are.  Each numpy float32 ``+`` / ``*`` below is one rounded operation in the kernel's order.

Trace arrays of :func:`trace` (all float32; NaN = not written: a lane that does not exist, a slot
nobody wrote, or -- for the deck variant without prefill -- a value the model cannot know because
it is whatever shared memory held):

==============  =====================  =========================================================
``x``, ``w``    (d,)                   the inputs
``local``       (block,)               phase 1: each thread's local sum of squares
``warp_lanes``  (n_warps, 6, 32)       phase 2.1: every warp's lanes before / after each shuffle
``smem``        (32,)                  phase 2.2: the slots as warp 0 reads them after the sync
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
from ..check import check_f32
from ..trace import MODEL_SOURCE, Step, Trace
from .reduction import F32, OFFSETS, STEPS, WARP, block_reduce_sum, lanes_in_warp, warp_shuffle_steps  # noqa: F401

FILE = "rmsnorm_deck.cu"
DECK = "deck"                #: the deck's phase 2 as printed: blockDim % 32 == 0 only
GUARDED = "guarded"          #: phase 2 = reduce.cuh's block_reduce_sum: correct for any blockDim 1..1024
VARIANTS = (DECK, GUARDED)


def entry_point(variant: str, suffix: str = "f32") -> str:
    """The kernel file's entry point of ``variant`` for a dtype suffix (f32, f16, bf16)."""
    return f"rmsnorm_{variant}_{suffix}"


#: The traced entry point of each variant (float).
KERNELS = {v: entry_point(v) for v in VARIANTS}
DEFAULT_EPS = 1e-6
#: u, the unit roundoff of float32 (half an ulp of 1.0).
U32 = 2.0 ** -24
#: The kernel regions the player shows for each variant, in order ("file:region" from another file).
SOURCE_REGIONS = {
    DECK: ("phase1", "phase2", "phase3", "phase4"),
    GUARDED: ("phase1", "guarded_phase2", "reduce.cuh:block_reduce_sum", "phase3", "phase4"),
}
#: For each kind of step, text that finds its line in the variant's source (:data:`SOURCE_REGIONS`):
#: phases 1, 3 and 4 are the deck's lines in both; phase 2 is the deck's or reduce.cuh's.
_SHARED_NEEDLES = {"local": "local += v * v", "passes": "i = tid, then", "mean": "float mean = total / d;",
                   "rstd": "smem_rstd = rsqrtf(mean + eps);", "sync": "RMS now visible to all",
                   "output": "y[row*d + i] = from_f32<T>("}
NEEDLES = {
    DECK: dict(_SHARED_NEEDLES, lanes="1 · collapse 32 lanes", shuffle="local += __shfl_down_sync(FULL, local, off)",
               handoff="if (lane == 0) smem[warpId] = local;", w0_read="float total = (tid < 32) ? smem[tid] : 0;",
               w0="total += __shfl_down_sync(FULL, total, off)"),
    GUARDED: dict(_SHARED_NEEDLES, lanes="v = warp_reduce_sum(v, lanes_in_warp(warp, nthreads), 1);",
                  shuffle="float other = __shfl_down_sync(mask, v, off);", handoff="if (lane == 0) smem[warp] = v;",
                  w0_read="float t = (lane < nwarps) ? smem[lane] : 0.0f;",
                  w0="float other = __shfl_down_sync(mask, v, off);"),
}


def source(variant: str = GUARDED) -> "kernels.Snippet":
    """The kernel code the player shows for ``variant``: the deck's four phases (the guarded
    variant: with reduce.cuh's block_reduce_sum as phase 2)."""
    return kernels.snippet(FILE, *SOURCE_REGIONS[_check_variant(variant)])


def prefill_value(slot) -> np.ndarray:
    """The visible "stale" value ``prefill=True`` writes into shared slot ``slot`` (the kernel's PREFILL)."""
    return (F32(1000.0) + np.asarray(slot, dtype=F32)).astype(F32)


def _check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    return variant


# --------------------------------------------------------------------------------------------
# argument checks (shared with the GPU producer)

def check_launch(d: int, block: int, variant: str = GUARDED) -> Tuple[int, int]:
    """Validate a traced launch; return ``(d, block)`` as ints.

    Raises:
        ValueError: ``d`` not in 1..2**24 (float32 must hold d exactly), ``block`` not in 1..1024,
            an unknown ``variant``, or the deck variant with ``block % 32 != 0``.
    """
    # a bool is an int to Python (block=True was a 1-thread block): neither is a count
    if isinstance(d, bool) or int(d) != d or not 1 <= int(d) <= 1 << 24:
        raise ValueError(f"d (row length) must be an integer in 1..2**24, got {d!r}")
    if isinstance(block, (bool, np.bool_)) or int(block) != block or not 1 <= int(block) <= 1024:
        raise ValueError(f"block (threads per block) must be an integer in 1..1024, got {block!r}")
    _check_variant(variant)
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


def local_sums(x: np.ndarray, block: int) -> np.ndarray:
    """Phase 1: thread t's ``local`` = x[t]^2 + x[t+block]^2 + ... added in that order, float32."""
    d = x.shape[0]
    local = np.zeros(block, dtype=F32)
    for start in range(0, d, block):
        chunk = x[start:start + block]
        n = chunk.shape[0]
        local[:n] = local[:n] + chunk * chunk
    return local


# --------------------------------------------------------------------------------------------
# the four phases

def trace(x, w=None, block: int = 1024, eps: float = DEFAULT_EPS, variant: str = GUARDED,
          prefill: bool = True, *, seed: Optional[int] = None, provenance: Optional[str] = None) -> Trace:
    """The CPU model's trace of the traced ``rmsnorm_<variant>_f32`` (one block, one row).

    Args:
        x: (d,) the row (cast to float32; finite).
        w: (d,) the weight, default ones.
        block: threads per block, 1..1024 (the deck: 1024 on d = 2048).
        eps: added to the mean of squares (float32).
        variant: ``"guarded"`` (reduce.cuh's phase 2) or ``"deck"`` (as printed; block % 32 == 0).
        prefill: the kernel first writes :func:`prefill_value` into the 32 shared slots.  Without
            it the deck variant reads slots nobody wrote: the model records NaN there (unknowable).
        seed: the inputs' seed (kept in ``params``).
        provenance: label; default ``backend.MODEL_LABEL``.

    Returns:
        :class:`Trace` (source ``"model"``), arrays as in the module docstring, steps from
        :func:`steps`.

    Raises:
        ValueError: see :func:`check_launch`, :func:`as_f32_vector`.
    """
    x = as_f32_vector(x, "x")
    d, block = check_launch(x.shape[0], block, variant)
    w = np.ones(d, dtype=F32) if w is None else as_f32_vector(w, "w", d)
    deck = variant == DECK
    eps32 = check_f32("eps", eps, minimum=0.0)
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
        slots[:n0] = prefill_value(np.arange(n0))
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

    params = launch_params(d, block, eps, variant, prefill, seed)
    arrays = dict(x=x, w=w, local=local, warp_lanes=warp_lanes, smem=smem, w0_lanes=w0,
                  scalars=scalars, y=y)
    return Trace(kernel=KERNELS[variant], params=params, arrays=arrays, source=MODEL_SOURCE,
                 provenance=provenance or backend.MODEL_LABEL, steps=steps(params))


def launch_params(d: int, block: int, eps: float, variant: str, prefill: bool, seed=None) -> Dict:
    """The Trace's ``params`` (both producers)."""
    return dict(d=d, block=block, eps=float(F32(eps)), variant=variant, prefill=bool(prefill),
                n_warps=(block + WARP - 1) // WARP, seed=seed)


def unknowable(params: Dict) -> Tuple[str, ...]:
    """Arrays whose values the model cannot know for these params (compare them GPU-side only).

    The deck variant without prefill reads shared slots nobody wrote: ``smem`` (beyond the
    written slots), ``w0_lanes``, ``scalars`` and ``y`` depend on what was there.
    """
    if params["variant"] == DECK and not params["prefill"] and params["n_warps"] < WARP:
        return ("smem", "w0_lanes", "scalars", "y")
    return ()


def steps(params: Dict) -> List[Step]:
    """The player's steps for one trace (both producers use this, so steps match too).

    ``data["phase"]`` is 1..4 and ``data["kind"]`` one of ``local``, ``shuffle`` (``data["step"]``
    0..5), ``handoff``, ``w0`` (``data["step"]`` 0..5), ``math`` (``data["what"]``), ``output``
    (``data["pass_"]``).  ``line`` is the 1-based line of :func:`source` (the variant's code) that
    the step executes; ``region`` names those regions.
    """
    d, block, variant = params["d"], params["block"], params["variant"]
    needle = NEEDLES[variant]
    region = "+".join(SOURCE_REGIONS[variant])
    passes = -(-d // block)
    out: List[Step] = []

    def add(label, kind_needle, **data):
        out.append(Step(label, region, None, dict(data, needle=needle[kind_needle])))

    for p in range(min(passes, 2)):
        add(f"phase 1: pass {p + 1} of {passes}: thread t reads x[t + {p * block}] and adds its square"
            if passes > 1 else "phase 1: thread t reads x[t] and squares it", "local", phase=1, kind="local", pass_=p)
    if passes > 2:
        add(f"phase 1: ... all {passes} passes done: every thread holds its local sum", "passes",
            phase=1, kind="local", pass_=passes - 1)
    add("phase 2: every warp's lanes hold the local sums", "lanes", phase=2, kind="shuffle", step=0)
    for k, off in enumerate(OFFSETS, 1):
        add(f"phase 2: __shfl_down_sync, offset {off}: lane l adds lane l+{off}", "shuffle",
            phase=2, kind="shuffle", step=k, offset=off)
    add("phase 2: lane 0 of each warp writes its slot of shared memory; __syncthreads()", "handoff",
        phase=2, kind="handoff")
    read = "smem[tid] for every tid < 32" if variant == DECK else "smem[lane] for lane < n_warps, else 0"
    add(f"phase 2: warp 0 reads {read}", "w0_read", phase=2, kind="w0", step=0)
    for k, off in enumerate(OFFSETS, 1):
        add(f"phase 2: warp 0, __shfl_down_sync offset {off}", "w0", phase=2, kind="w0", step=k, offset=off)
    add("phase 3: thread 0: total / d = mean", "mean", phase=3, kind="math", what="total / d = mean")
    add("phase 3: thread 0: rstd = 1 / sqrt(mean + eps), into shared memory", "rstd", phase=3, kind="math",
        what="rstd = 1 / sqrt(mean + eps), into shared memory")
    add("phase 3: __syncthreads(): rstd visible to every thread", "sync", phase=3, kind="math", what="sync")
    for p in range(min(passes, 2)):
        add(f"phase 4: pass {p + 1} of {passes}: y[i] = x[i] * rstd * w[i] written to VRAM", "output",
            phase=4, kind="output", pass_=p)
    snip = source(variant)
    return [dataclasses.replace(st, line=snip.line_of(st.data["needle"])) for st in out]


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


def sum_of_squares_fp32(x, block: int) -> np.float32:
    """The kernel's fp32 sum of squares at ``block`` threads (phase 1 + reduce.cuh's tree)."""
    x = np.asarray(x, dtype=F32)
    return block_reduce_sum(local_sums(x, block))[0]


def sequential_sum_of_squares_fp32(x) -> np.float32:
    """One thread, left to right, in float32 (what block = 1 does): the worst common order."""
    x = np.asarray(x, dtype=F32)
    return np.cumsum((x * x).astype(F32), dtype=F32)[-1]
