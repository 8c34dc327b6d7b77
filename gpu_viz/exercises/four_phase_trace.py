"""Notebook 12 (the four phases traced): write the block reduction, and fix the deck's.

Both run the learner's ``block_sum`` as one block at block sizes 1..64, 96, 100, 255-257, 511-513,
1000, 1023 and 1024 (each class of block size: one lane, a partial warp, whole warps, one warp
more, the largest), on 3000 fresh values, plus two launches with fewer values than threads.
Shared memory starts as NaN (a slot nobody wrote shows).  The mistake is named from the emulator's
hazards first (they point at the line: a race, an uninitialised slot, a barrier not every thread
reaches, a shuffle mask naming lanes that do not exist), then from the totals: each classic wrong
reduction below predicts the total at every block size, and the first that matches every launch
is the one the kernel computed.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .. import backend
from . import core as _core
from .core import KERNEL, PREDICT, Exercise, register
from .kernel_task import Case, KernelTask, Observation, Param, kernel_cells
from .numbers import _placeholder, _solution, grade_number

ID_WRITE = "four_phase_trace.block_sum"
ID_FIX = "four_phase_trace.fix_deck"
N_SUM = 3000
#: Every class of block size: 1..64 (one lane, partial warps, one and two whole warps), a partial
#: last warp (96 is whole, 100 is not), and around 256, 512 and 1024.
BLOCK_SIZES = tuple(range(1, 65)) + (96, 100, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024)
#: Launches with fewer values than threads: (n, block).
FEW = ((5, 64), (1, 1024))
WARP = 32


def _cases():
    return tuple(Case((1,), (b,), {"n": N_SUM}) for b in BLOCK_SIZES) + tuple(Case((1,), (b,), {"n": n}) for n, b in FEW)


def _inputs(case: Case, rng):
    n = case.sizes["n"]
    return {"x": rng.standard_normal(n).astype(np.float32), "n": n}


def _reference(case: Case, inputs):
    return {"out": np.array([float(np.sum(inputs["x"].astype(np.float64)))])}


def _tolerance(case, inputs, name):
    return 1e-5 * float(np.abs(inputs["x"]).sum()) + 1e-6     # float32 partial sums: far inside this bound


def _partials(x: np.ndarray, B: int) -> np.ndarray:
    """Each thread's phase-1 sum (float64): thread t adds x[t], x[t + B], ..."""
    p = np.zeros(B)
    np.add.at(p, np.arange(x.size) % B, x.astype(np.float64))
    return p


def _warp_sum(v: np.ndarray, mode: str) -> float:
    """Lane 0's value after the shuffle loop over the warp's ``len(v)`` lanes, in ``mode``:
    "down" (right), "up" (__shfl_up_sync: lane 0 adds itself at every step), "no-last" (offsets
    16..2: the odd lanes never reach lane 0), "no-first" (offsets 8..1: lanes 16..31 never do)."""
    if v.size == 0:
        return 0.0
    if mode == "down":
        return float(v.sum())
    if mode == "up":          # lane 0 adds its own value at each step whose partner would exist
        return float(v[0]) * 2 ** sum(off < v.size for off in (16, 8, 4, 2, 1))
    if mode == "up-all":      # ... and without the partner test, at every step
        return float(v[0]) * 32
    if mode == "no-last":
        return float(v[::2].sum())
    if mode == "no-first":
        return float(v[:16].sum())
    raise ValueError(mode)


def simulate(x: np.ndarray, B: int, stage1: str = "down", stage2: str = "down", floor_warps: bool = False,
             tree: bool = False) -> float:
    """The total a reduction with these mistakes computes for ``x`` at block size ``B``."""
    p = _partials(x, B)
    if tree:        # a halving tree over B slots (s = B/2, B/4, ...): a level of odd size drops its last slot
        s = list(p)
        size = B
        while size > 1:
            half = size // 2
            for t in range(half):
                s[t] += s[t + half]
            size = half
        return float(s[0])
    W = -(-B // WARP)
    partial = [_warp_sum(p[w * WARP: min(B, (w + 1) * WARP)], stage1) for w in range(W)]
    nw = B // WARP if floor_warps else W
    n0 = min(B, WARP)
    lanes0 = np.array([partial[lane] if lane < nw else 0.0 for lane in range(n0)])
    return _warp_sum(lanes0, stage2)


#: (message, keyword arguments of :func:`simulate`).
VALUE_MISTAKES = (
    ("a halving tree (s = blockDim.x / 2, then / 4 ...) over shared memory: a level with an odd number of "
     "slots drops its last one, so the sum is right only when blockDim.x is a power of two -- notebook 12's "
     "fault (b). Halve with ceil ((n + 1) / 2, keeping the odd slot) or reduce with shuffles.", {"tree": True}),
    ("__shfl_up_sync instead of __shfl_down_sync: lane 0 has no lane below it, so at every step it adds its own "
     "value (32x its partial) and the sum gathers in lane 31. Shuffle down so the sum gathers in lane 0.",
     {"stage1": "up", "stage2": "up"}),
    ("__shfl_up_sync instead of __shfl_down_sync: lane 0 has no lane below it, so at every step it adds its own "
     "value and the sum gathers in the last lane. Shuffle down so the sum gathers in lane 0.",
     {"stage1": "up-all", "stage2": "up-all"}),
    ("__shfl_up_sync in the warp reduction: lane 0 adds its own value at every step and the warp's sum gathers "
     "in lane 31. Shuffle down.", {"stage1": "up"}),
    ("__shfl_up_sync in warp 0's final reduction: lane 0 doubles its own value at every step. Shuffle down.",
     {"stage2": "up"}),
    ("a shuffle step is missing: the loop stops before offset 1 (off > 1), so the odd lanes never reach lane 0. "
     "Run offsets 16, 8, 4, 2 and 1 (off > 0).", {"stage1": "no-last", "stage2": "no-last"}),
    ("a shuffle step is missing: the loop starts at offset 8, so lanes 16-31 never reach lane 0. Start at 16.",
     {"stage1": "no-first", "stage2": "no-first"}),
    ("the number of warps is rounded down (blockDim.x / 32): the last, partial warp's partial is never read -- "
     "and with fewer than 32 threads no partial at all. Count (blockDim.x + 31) / 32 warps.", {"floor_warps": True}),
)


def _total(o: Observation) -> float:
    return float(o.outputs["out"][0])


def _sizes(obs: List[Observation]) -> str:
    from .. import words

    bs = sorted({o.case.block[0] for o in obs if not o.ok})
    return words.numbers(bs[:8]) + (" ..." if len(bs) > 8 else "")


def _first_hazard(obs, kind, region=None):
    for o in obs:
        for h in o.hazards:
            if h.kind == kind and (region is None or h.details.get("region") == region or
                                   (h.details.get("element") or "").startswith(region + "[")):
                return o, h
    return None, None


def _full_mask(o, h, obs) -> str:
    # a shuffle's mask (a __syncwarp's mask fault is another mistake: its message says which)
    if "do not exist" in h.message and h.details.get("instruction", "shfl").startswith("shfl"):
        return (f"a full-mask shuffle in a partial warp (line {h.where.line}, block sizes that are not a "
                f"multiple of 32, first {o.case.label()}): the mask names lanes that do not exist, which is "
                "undefined even where the sum comes out right. Shuffle with the mask of the lanes present and "
                "add a partner's value only when it exists.")
    return f"at {o.case.label()}: {h.message} (line {h.where.line})"


#: (hazard kind, what it says given (observation, hazard, all observations)), in the order they are
#: named: the first hazard kind any launch shows decides the message.
HAZARD_MESSAGES = (
    ("out-of-bounds", lambda o, h, obs:
        f"at {o.case.label()}: {h.message} -- the loop must stop at i < n (line {h.where.line})"),
    ("barrier-divergence", lambda o, h, obs:
        f"a __syncthreads() that not every thread reaches (line {h.where.line}; at {o.case.label()}: "
        f"{h.message.split(':')[0]}). Every thread of the block must reach the same __syncthreads(): put it "
        "outside `if (warp == 0)` and any other branch on the thread."),
    ("uninitialized:out", lambda o, h, obs:
        f"out[0] is read before anything wrote it (line {h.where.line}): an atomicAdd into an output that "
        "was never zeroed adds to whatever was there. Zero it first, or write the total with a plain "
        "store from one thread."),
    ("lockstep", lambda o, h, obs:
        f"{h.message} (line {h.where.line}). Put __syncwarp() between the steps, or reduce with shuffles."),
    ("uninitialized", lambda o, h, obs:
        f"warp 0 reads a shared slot no warp wrote ({h.details.get('element')} at line {h.where.line}, "
        f"block sizes {_sizes(obs)}): only (blockDim.x + 31) / 32 warps write a partial, so warp 0 must read "
        "0, not smem[lane], for lanes past the number of warps."),
    ("same-instruction", lambda o, h, obs:
        f"every lane stores the warp's partial into smem[warp] (line {h.where.line}): after the shuffles "
        "only lane 0 holds the warp's sum, and which lane's store lands is undefined. Guard the store so "
        "that one lane writes (`if (lane == 0)`)."),
    ("race", lambda o, h, obs:
        f"{h.message.split(': the result')[0]} (line {h.where.line}). The partials are handed from every "
        "warp to warp 0 through shared memory: a __syncthreads() must separate the writes from the reads "
        "(and the reads from any later writes to the same slots)."),
    ("shuffle-mask", _full_mask),
)


def explain_hazards(obs: List[Observation]) -> Optional[str]:
    """The first hazard of :data:`HAZARD_MESSAGES` any launch shows, in the learner's words ("kind:region"
    limits a kind to one array)."""
    for key, say in HAZARD_MESSAGES:
        kind, _, region = key.partition(":")
        o, h = _first_hazard(obs, kind, region or None)
        if h is not None:
            return say(o, h, obs)
    return None


def explain_values(obs: List[Observation]) -> Optional[str]:
    if all(np.isnan(_total(o)) for o in obs):
        return "out[0] was never written, at any block size: thread 0 must write the total."
    wrong = [o for o in obs if not o.ok]
    if not wrong:
        return None
    for msg, kw in VALUE_MISTAKES:
        if all(abs(_total(o) - simulate(o.inputs["x"], o.case.block[0], **kw)) <= 2 * _tolerance(o.case, o.inputs, "out")
               for o in obs):
            return f"{msg} (wrong at block sizes {_sizes(obs)})"
    bs = sorted({o.case.block[0] for o in wrong})
    if all(b % WARP for b in bs):
        return (f"only block sizes that are not a multiple of 32 fail ({_sizes(obs)}): the last warp is partial. "
                "Shuffle with the mask of the lanes present and add a partner's value only when it exists.")
    if all(b <= WARP for b in bs) or not any(b > WARP for b in bs):
        return (f"wrong with one warp already (block sizes {_sizes(obs)}): the warp reduction itself -- does lane 0 "
                "end up with the sum of all the warp's lanes?")
    return None


def _budget(case: Case) -> int:
    warps = -(-case.block[0] // WARP)
    return 20 * warps * (16 * (-(-case.sizes["n"] // case.block[0]) + 1) + 200) + 50_000


def _task(eid: str) -> KernelTask:
    return KernelTask(
        id=eid, kernel="block_sum",
        params=(Param("x", "in", "float32"), Param("out", "out", "float32"), Param("n", "scalar", "int32")),
        cases=_cases(), make_inputs=_inputs, reference=_reference, tolerance=_tolerance,
        explanations=(explain_hazards, explain_values), budget=_budget,
        success=f"right and hazard-free at every class of block size ({len(BLOCK_SIZES)} sizes from 1 to 1024, "
                "and fewer values than threads).")


TASK_WRITE = _task(ID_WRITE)
TASK_FIX = _task(ID_FIX)


_ph, _sol = kernel_cells(ID_WRITE, "block_sum.start", "block_sum.solution")
register(Exercise(
    ID_WRITE, "12_four_phase_trace", KERNEL, "Write the block reduction",
    "**Exercise: write the kernel.** Finish `block_sum`: shuffle within each warp, one partial per warp "
    "through `smem`, warp 0 reduces the partials. It must be right at **every** block size 1..1024: the checker "
    f"runs {len(BLOCK_SIZES)} sizes that cover every class (one lane, partial warps, whole warps, up to 1024), on "
    "the GPU if there is one, else in the emulator, with shared memory poisoned, and names races, unread or "
    "unwritten slots and bad shuffle masks at their line.",
    _ph, _sol, "## 7. Numerics", lambda: {"block sizes": f"{len(BLOCK_SIZES)} sizes in 1..1024", "n": N_SUM},
    lambda code: TASK_WRITE.grade(code), ("missing __syncthreads", "missing lane guard", "smem[tid] unguarded",
                                          "partial warp (block not a multiple of 32)", "power-of-two tree")))

_ph, _sol = kernel_cells(ID_FIX, "block_sum.deck", "block_sum.solution")
register(Exercise(
    ID_FIX, "12_four_phase_trace", KERNEL, "Fix the deck's smem[tid] fault",
    "**Exercise: fix the deck's kernel.** This is the deck's phase 2. Fix it so that it is right at every "
    "block size 1..1024, not only at 1024 (two faults: the unguarded `smem[tid]` and the partial warp).",
    _ph, _sol, "## 7. Numerics", lambda: {"block sizes": f"{len(BLOCK_SIZES)} sizes in 1..1024", "n": N_SUM},
    lambda code: TASK_FIX.grade(code), ("smem[tid] unguarded", "partial warp")))


# -- numbers ----------------------------------------------------------------------------------------

# == 09: the four phases traced =======================================================================

def _given_lane0():
    r = np.random.default_rng(9)
    lanes = r.integers(0, 10, 32).astype(np.float32)
    return {"lanes": [int(v) for v in lanes], "step": 3, "offsets": [16, 8, 4, 2, 1]}


def _shuffle_run(lanes, step: int):
    """Lane 0 after shuffle step ``step``: kernels/probes.cu ``shfl_steps`` on a GPU, else the model."""
    if _core.live():
        from ..claims import probes

        out = probes.shfl_steps(np.asarray(lanes, np.float32))
        return float(out[step, 0]), backend.live_label() + " (kernels/probes.cu shfl_steps)"
    from ..model import reduction as m

    steps = m.warp_shuffle_steps(np.asarray(lanes, np.float32)[None, :], np.array([32]))
    return float(steps[0, step, 0]), backend.MODEL_LABEL


def _check_lane0(answer):
    eid = "four_phase_trace.lane0"
    g = _given_lane0()
    v = np.asarray(g["lanes"], np.float64)
    k = g["step"]
    span = 32 >> k
    want = float(v[::span].sum())
    run_val, prov = _shuffle_run(v, k)
    if run_val != want:
        raise AssertionError(f"four_phase_trace.lane0: the run gave lane 0 = {run_val} after step {k}, the arithmetic {want}")
    d = [f"the run (__shfl_down_sync, offsets 16, 8, 4, ...): lane 0 = {run_val:g} after step {k} ({prov})"]
    return grade_number(eid, answer, want, 1e-9, f"lane 0 after step {k}", reveal=d, details=[], mistakes={
        f"that adds lanes 0..{2 ** k - 1}, the neighbours: shfl_down by 16 first brings lane 16, then 8, "
        f"then 4 -- lane 0 holds lanes 0, {span}, {2 * span}, ...": float(v[:2 ** k].sum()),
        "lane 0 is unchanged only with __shfl_up_sync; shfl_down brings the value of lane + offset.": float(v[0]),
        "that is the warp's total: it takes all five steps.": float(v.sum()),
        f"that is after step {k - 1}: count the steps 16, 8, 4 (step {k} is offset {16 >> (k - 1)}).":
            float(v[::span * 2].sum()),
    })


register(Exercise(
    "four_phase_trace.lane0", "12_four_phase_trace", PREDICT, "Lane 0 after shuffle step k",
    "**Exercise: predict, then run.** Lane i of one warp holds `g['lanes'][i]`. After step `g['step']` "
    "of `v += __shfl_down_sync(0xffffffff, v, offset)` with offsets 16, 8, 4, 2, 1, what does lane 0 hold?",
    _placeholder("four_phase_trace.lane0", "lane 0's value"),
    _solution("four_phase_trace.lane0", "sum(g['lanes'][::32 >> g['step']])   # lanes 0, 4, 8, ... after step 3"),
    "## 3. Model == silicon", _given_lane0, _check_lane0,
    ("neighbouring lanes", "shfl_up", "the total", "one step early")))
