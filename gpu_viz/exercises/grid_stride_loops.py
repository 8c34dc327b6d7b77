"""Notebook 06 (grid-stride loops): turn the body into a grid-stride loop.

The checker counts each element's visits (the kernel's ``atomicAdd(&visits[i], 1u)``) at launch
shapes with fewer threads than elements, more threads than elements, grids of several blocks,
block sizes that are not a multiple of 32, one element and none, and names the mistake from the
visit counts: every candidate loop below predicts them, and the first that matches every launch is
the loop the kernel ran.  A 32-bit loop index (found in the PTX: a 32-bit add widened for the
address) fails too: the notebook's "Why 64-bit indices" shows ``i += stride`` overflowing.
"""
from __future__ import annotations

from typing import Callable, List, Optional

import numpy as np

from .core import KERNEL, PREDICT, Exercise, Verdict, no_answer, register
from .numbers import as_pair
from .kernel_task import PAD, Case, KernelTask, Observation, Param, kernel_cells, writes_by_thread

ID = "grid_stride_loops.grid_stride"

#: (n, grid, block)
SHAPES = ((2048, 1, 1024), (2500, 1, 1024), (700, 1, 1024), (10000, 3, 256), (5000, 7, 96), (1, 4, 32), (0, 2, 64),
          (3333, 2, 100))
ALPHA = 1.5


def _inputs(case: Case, rng):
    n = case.sizes["n"]
    return {"x": rng.standard_normal(n).astype(np.float32), "alpha": np.float32(ALPHA), "n": n,
            "visits": np.zeros(n, np.uint32)}


def _reference(case: Case, inputs):
    n = case.sizes["n"]
    return {"y": (np.float32(ALPHA) * inputs["x"]).astype(np.float64), "visits": np.ones(n, np.uint32)}


def _tolerance(case, inputs, name):
    return 0.0           # alpha * x in float32 is one rounding: every right kernel gives it bit for bit


def visits_of(case: Case, start: Callable, step: Callable, cond: Callable, first_unconditional: bool = False,
              max_passes: int = 100_000) -> np.ndarray:
    """Visit counts (n + PAD) of a loop ``i = start(b, t, B, G); while cond(i, n): visit i; i += step(B, G)``
    run by every thread (``first_unconditional``: a do-while, the first visit before the test)."""
    n = case.sizes["n"]
    G, B = case.grid[0], case.block[0]
    b, t = np.meshgrid(np.arange(G), np.arange(B), indexing="ij")
    i = start(b, t, B, G).reshape(-1).astype(np.int64)
    s = step(B, G)
    counts = np.zeros(n + PAD, np.int64)
    live = np.ones(i.shape, bool) if first_unconditional else cond(i, n)
    for _ in range(max_passes):
        if not live.any():
            break
        hit = i[live]
        hit = hit[(hit >= 0) & (hit < n + PAD)]
        np.add.at(counts, hit, 1)
        i = i + s
        live = live & cond(i, n)
    return counts


_START = lambda b, t, B, G: b * B + t          # noqa: E731
_T = lambda B, G: B * G                         # noqa: E731
_LT = lambda i, n: i < n                        # noqa: E731

def _loop(start=_START, step=_T, cond=_LT, first_unconditional=False):
    return lambda case: visits_of(case, start, step, cond, first_unconditional)


def _no_loop(case: Case) -> np.ndarray:
    n = case.sizes["n"]
    counts = np.zeros(n + PAD, np.int64)
    i = np.arange(case.grid[0] * case.block[0])
    counts[i[i < n]] += 1
    return counts


def _drop_tail(case: Case) -> np.ndarray:
    T = case.grid[0] * case.block[0]
    return visits_of(case, _START, _T, lambda i, n: i + T < n)


#: (message, visits(case) -> counts): the classic loops, each as the visit counts it makes.
LOOP_MISTAKES = (
    ("there is no loop (or it never repeats): each thread handles one element, so only as many elements as "
     "the grid has threads are visited. Each thread must go on, one whole grid further each time, while i < n.",
     _no_loop),
    ("the stride is blockDim.x, one block: with more than one block, blocks overlap and elements are visited "
     "several times. Step by the whole grid: every thread of every block.", _loop(step=lambda B, G: B)),
    ("the stride is gridDim.x, the number of blocks: threads a block apart visit the same elements. Step by "
     "the whole grid: every thread of every block.", _loop(step=lambda B, G: G)),
    ("the stride is one element longer than the grid: some elements are skipped.",
     _loop(step=lambda B, G: B * G + 1)),
    ("the stride is one element shorter than the grid: some elements are visited twice.",
     _loop(step=lambda B, G: B * G - 1)),
    ("the loop test is `i <= n`: element n, one past the end, is visited. Stop at i < n.",
     _loop(cond=lambda i, n: i <= n)),
    ("the body runs before the test (a do-while): a thread whose first i is already >= n still visits it -- "
     "past the end when the grid has more threads than elements. Test i < n before the first visit.",
     _loop(first_unconditional=True)),
    ("the last, partial pass is dropped (the loop stops while i + stride < n): the elements of the last pass "
     "are never visited. Test i < n itself.", _drop_tail),
    ("the loop starts at threadIdx.x, not at the thread's place in the grid: blocks visit the same elements. "
     "Start each thread at its place in the whole grid.", _loop(start=lambda b, t, B, G: t + 0 * b)),
)


def _counts(o: Observation) -> np.ndarray:
    v = o.outputs["visits"].astype(np.int64)
    n = o.length("visits")
    v[n:] = np.where(v[n:] == np.iinfo(np.uint32).max, 0, v[n:])     # the padding's poison: never visited
    return v


def explain_visits(obs: List[Observation]) -> Optional[str]:
    for msg, predict in LOOP_MISTAKES:
        if all(np.array_equal(_counts(o), predict(o.case)) for o in obs):
            o = next(o for o in obs if not o.ok)
            return f"{msg} (first seen at {o.case.label()})"
    return None


def explain_no_count(obs: List[Observation]) -> Optional[str]:
    """The visits stayed 0 everywhere while y is right: the counting line was removed."""
    if all((_counts(o)[:o.length("visits")] == 0).all() for o in obs) and \
            all(o.bad["y"].size == 0 for o in obs) and any(o.length("y") for o in obs):
        return ("y is right, but no element's visit was counted: keep the line `atomicAdd(&visits[i], 1u);` "
                "inside the loop -- the checker counts each element's visits with it.")
    return None


def explain_values(obs: List[Observation]) -> Optional[str]:
    ok_visits = all(np.array_equal(_counts(o)[:o.length("visits")], np.ones(o.length("visits"))) and
                    not _counts(o)[o.length("visits"):].any() for o in obs)
    if not ok_visits:
        return None
    for o in obs:
        if o.bad["y"].size:
            k = int(o.bad["y"][0])
            got = float(o.outputs["y"][k])
            x = float(o.inputs["x"][k])
            hint = ""
            if got == x:
                hint = ": y[i] = x[i], alpha is never applied"
            elif np.float32(got) == np.float32(ALPHA) + np.float32(x):
                hint = ": y[i] = alpha + x[i]; the task is alpha * x[i]"
            return (f"every element is visited exactly once, but at {o.case.label()} y[{k}] = {got:.7g}, want "
                    f"alpha * x[{k}] = {ALPHA * x:.7g}{hint}")
    return None


def target_every_thread_strides(obs: List[Observation]) -> Optional[str]:
    """In the recorded launch no thread handled more than its share, ceil(n / threads of the grid):
    a single thread (or one per block) walking the elements visits each once too, but it is not a
    grid-stride loop and leaves the rest of the grid idle."""
    for o in obs:
        per = writes_by_thread(o, "y")
        if not per:
            continue
        threads = int(np.prod(o.case.grid)) * int(np.prod(o.case.block))
        n = o.length("y")
        share = -(-n // threads)
        (b, t), els = max(per.items(), key=lambda kv: (kv[1].size, -kv[0][0], -kv[0][1]))
        if els.size > share:
            many = f"all {n:,}" if els.size == n else f"{els.size:,} of the {n:,}"
            return (f"thread {t} of block {b} handled {many} elements (at {o.case.label()}), where the grid's "
                    f"{threads:,} threads share them: in a grid-stride loop every thread strides through the "
                    f"array, so none handles more than {share:,} here. Start each thread at its own place in "
                    "the grid and step by the whole grid.")
    return None


def _expected_passes(case: Case) -> int:
    T = case.grid[0] * case.block[0]
    return -(-case.sizes["n"] // T) if case.sizes["n"] else 0


def _budget(case: Case) -> int:
    warps = case.grid[0] * -(-case.block[0] // 32)
    return 20 * warps * 16 * (_expected_passes(case) + 2) + 20_000


def explain_runaway(o: Observation) -> Optional[str]:
    h = next((h for h in o.hazards if h.kind == "runaway"), None)
    if h is None or "executions" not in h.details:
        return None
    per_warp = h.details["executions"] / max(1, h.details["warps"])
    want = _expected_passes(o.case)
    return (f"at {o.case.label()} the loop (line {h.details['line']}) had run {per_warp:,.0f} times per thread when it "
            f"was stopped, where a grid-stride loop runs at most {want} times (n divided by the grid's threads, "
            "rounded up): does i advance, and by the whole grid?")


TASK = KernelTask(
    id=ID, kernel="grid_stride",
    params=(Param("x", "in", "float32"), Param("y", "out", "float32"), Param("alpha", "scalar", "float32"),
            Param("n", "scalar", "int32"), Param("visits", "inout", "uint32")),
    cases=tuple(Case((g,), (b,), {"n": n}) for n, g, b in SHAPES),
    make_inputs=_inputs, reference=_reference, tolerance=_tolerance,
    explanations=(explain_no_count, explain_visits, explain_values),
    success=f"every element visited exactly once at all {len(SHAPES)} launch shapes (fewer and more threads than "
            "elements, one element, none), with a 64-bit index.",
    narrow_index_fails=True, budget=_budget, runaway_explanations=(explain_runaway,),
    targets=(target_every_thread_strides,), recorded_cases=(0,))


_ph, _sol = kernel_cells(ID, "grid_stride.start", "grid_stride.solution")
register(Exercise(
    ID, "06_grid_stride_loops", KERNEL, "Write the grid-stride loop",
    "**Exercise: write the kernel.** Turn the body into a grid-stride loop so that every element is "
    "handled exactly once for any grid and block, with an index that cannot overflow for n up to 2^31 - 1. "
    "The checker counts each element's visits at eight launch shapes (on the GPU if there is one, else in the "
    "emulator) and names the loop's mistake from the counts.",
    _ph, _sol, "## Why bother", lambda: {"shapes (n, grid, block)": list(SHAPES)},
    lambda code: TASK.grade(code),
    ("no loop", "stride blockDim.x only", "off-by-one stride", "i <= n", "do-while", "dropped tail", "32-bit index")))


# -- numbers ----------------------------------------------------------------------------------------

# == 06: grid-stride loops ============================================================================

def _check_passes(answer, n: int = 2500, block: int = 1024):
    eid = "grid_stride_loops.passes"
    if answer is None:
        return no_answer(eid, "a pair (elements thread 0 handles, threads that handle three)")
    first, three = as_pair(eid, answer, "(elements_of_thread_0, threads_with_3)")
    from .. import lessons

    tr = lessons.GRID_STRIDE.trace(n=n, grid=1, block=block)
    per_thread = np.bincount(tr["thread"].astype(np.int64), minlength=block)
    got = (int(per_thread[0]), int((per_thread == 3).sum()))
    d = []   # the run's counts are the answer: shown only once the learner has it
    if (first, three) == got:
        return Verdict(eid, True, f"{got}: thread t handles ceil((n - t) / stride) elements.",
                       [f"the run: thread 0 handled {got[0]} elements, {got[1]} threads handled 3 ({tr.provenance})"])
    if first == n // block:
        return Verdict(eid, False, f"{first:g} = floor(n / stride): the last, partial pass counts too "
                       "(thread 0 is in it).", d)
    if first == got[0] and three == n - (got[0] - 1) * block - 1:
        return Verdict(eid, False, "thread 0 is right; the threads with a third element are off by one: count "
                       "the indices of the last pass from its first to n - 1, both ends included.", d)
    if first == got[0]:
        return Verdict(eid, False, "thread 0 is right; a thread t has a third element when its third index, "
                       "two strides past t, is still < n.", d)
    return Verdict(eid, False, f"{first:g} for thread 0: it handles i = 0, then one stride further each "
                   "pass, while i < n.", d)


register(Exercise(
    "grid_stride_loops.passes", "06_grid_stride_loops", PREDICT, "Who handles what",
    "**Exercise: predict, then run.** `n = 2500`, one block of 1024 threads, the grid-stride loop. How "
    "many elements does thread 0 handle, and how many threads handle three? Answer "
    "`(elements_of_thread_0, threads_with_3)`.",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: (elements_of_thread_0, threads_with_3)\n"
    "ex.check('grid_stride_loops.passes', answer)",
    "from gpu_viz import exercises as ex\nn, stride = 2500, 1024\ncounts = [len(range(t, n, stride)) for t in range(stride)]\n"
    "answer = (counts[0], counts.count(3))\nex.check('grid_stride_loops.passes', answer).require()",
    "### Checked over many shapes", lambda: {"n": 2500, "grid": 1, "block": 1024}, _check_passes,
    ("floor(n / stride)", "off by one")))
