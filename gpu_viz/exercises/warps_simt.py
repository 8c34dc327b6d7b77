"""Notebook 03 (warps and SIMT): write vector add's index and guard.

The checker runs the learner's ``vector_add`` at launch shapes that catch each classic mistake
(one block; several; a block size that is not a multiple of 32; one element; a grid with a block
more than needed) and names the mistake from *which elements were written*: every candidate
index formula below predicts a set of written elements, and the first that matches every launch
is the one the kernel used.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .core import KERNEL, PREDICT, Exercise, Verdict, no_answer, register
from .numbers import as_pair
from .kernel_task import PAD, Case, KernelTask, Observation, Param, kernel_cells, writes_by_thread

ID = "warps_simt.vector_add"

#: (n, block, grid): grid is ceil(n / block) except the last-but-one launch, which has one block
#: more than it needs (a guard must protect those threads too).
SHAPES = ((64, 64, 1), (100, 32, 4), (1000, 96, 11), (4097, 256, 17), (1, 1024, 1), (50, 64, 2), (5000, 1000, 5))


def _inputs(case: Case, rng):
    n = case.sizes["n"]
    return {"A": rng.standard_normal(n).astype(np.float32), "B": rng.standard_normal(n).astype(np.float32), "n": n}


def _reference(case: Case, inputs):
    # the float32 sum, correctly rounded: what every right kernel computes, bit for bit
    return {"C": (inputs["A"] + inputs["B"]).astype(np.float64)}


def _tolerance(case, inputs, name):
    return 0.0


def _written_by(case: Case, index, guard) -> np.ndarray:
    """Which of the n + PAD elements a kernel with ``index(b, t, B, G)`` and ``guard(i, t, n)`` writes."""
    n = case.sizes["n"]
    G, B = case.grid[0], case.block[0]
    b, t = np.meshgrid(np.arange(G), np.arange(B), indexing="ij")
    i = index(b, t, B, G).reshape(-1)
    keep = guard(i, t.reshape(-1), n) & (i >= 0) & (i < n + PAD)
    w = np.zeros(n + PAD, bool)
    w[i[keep]] = True
    return w


_LT = lambda i, t, n: i < n            # noqa: E731
_ALL = lambda i, t, n: np.ones(i.shape, bool)  # noqa: E731
_RIGHT = lambda b, t, B, G: b * B + t  # noqa: E731

#: (message, index, guard): the classic mistakes, each as the elements it writes.
INDEX_MISTAKES = (
    ("every thread writes C[0]: the index is never set to the thread's element. Each thread's element is "
     "its place in the whole grid: the blocks before its own, then its place in its block.",
     lambda b, t, B, G: 0 * (b + t), _ALL),
    ("there is no guard: the last block has threads past the end, and they write C[n] and beyond. Guard "
     "the store (and the loads) with `if (i < n)`.", _RIGHT, _ALL),
    ("the guard is `i <= n`: one thread too many writes C[n], one past the end. The last element is "
     "C[n - 1]: guard with `i < n`.", _RIGHT, lambda i, t, n: i <= n),
    ("the guard compares threadIdx.x with n: in a block other than the first, threads with a small threadIdx.x "
     "have i >= n and write past the end. Compare the element index i with n.", _RIGHT, lambda i, t, n: t < n),
    ("the index ignores blockIdx.x: every block writes the first blockDim.x elements, and the rest are never "
     "written. Each block must start blockIdx.x * blockDim.x elements in.", lambda b, t, B, G: t, _LT),
    ("the index ignores blockIdx.x (and has no guard): every block writes the first blockDim.x elements.",
     lambda b, t, B, G: t, _ALL),
    ("the index multiplies blockIdx.x by gridDim.x: a block's first element is blockIdx.x * blockDim.x "
     "(blockDim = threads per block; gridDim = blocks in the grid).", lambda b, t, B, G: b * G + t, _LT),
    ("the index is blockIdx.x * blockDim.x without threadIdx.x: all threads of a block write the same "
     "element.", lambda b, t, B, G: b * B, _LT),
    ("the index swaps the roles of blockIdx.x and threadIdx.x: a block's threads land blockDim.x elements "
     "apart, where neighbouring threads should take neighbouring elements.", lambda b, t, B, G: t * B + b, _LT),
    ("the index is off by one (i + 1): C[0] is never written and the last thread writes past the end.",
     lambda b, t, B, G: b * B + t + 1, _LT),
    ("the index is off by one (i + 1), and the guard stops one early: C[0] is never written.",
     lambda b, t, B, G: b * B + t + 1, lambda i, t, n: i < n),
)

#: (message, C as a function of A and B): right elements, wrong values.
VALUE_MISTAKES = (
    ("C[i] = A[i] - B[i]: the kernel subtracts; the task is C = A + B.", lambda A, B: A - B),
    ("C[i] = B[i] - A[i]: the kernel subtracts; the task is C = A + B.", lambda A, B: B - A),
    ("C[i] = A[i] * B[i]: the kernel multiplies; the task is C = A + B.", lambda A, B: A * B),
    ("C[i] = A[i]: B is never added.", lambda A, B: A),
    ("C[i] = B[i]: A is never added.", lambda A, B: B),
    ("C[i] = 2 A[i]: the kernel adds A to itself; the task is A + B.", lambda A, B: A + A),
    ("C[i] = 2 B[i]: the kernel adds B to itself; the task is A + B.", lambda A, B: B + B),
)


def explain_index(obs: List[Observation]) -> Optional[str]:
    for msg, index, guard in INDEX_MISTAKES:
        if all(np.array_equal(o.written("C"), _written_by(o.case, index, guard)) for o in obs):
            o = next(o for o in obs if not o.ok)
            return f"{msg} (first seen at {o.case.label()})"
    return None


def explain_values(obs: List[Observation]) -> Optional[str]:
    right = [o for o in obs if np.array_equal(o.written("C"), _written_by(o.case, _RIGHT, _LT))]
    if len(right) != len(obs):
        return None
    for msg, f in VALUE_MISTAKES:
        if all(np.array_equal(o.outputs["C"][:o.length("C")], f(o.inputs["A"], o.inputs["B"]).astype(np.float32))
               for o in obs):
            return msg
    return None


def target_one_element_per_thread(obs: List[Observation]) -> Optional[str]:
    """The recorded launch (one thread per element: a block of n threads) has no thread that wrote
    more than one element: a kernel whose single thread loops over every element is right in its
    values, but it is not the kernel the task asks for (and is n times slower on a GPU)."""
    for o in obs:
        per = writes_by_thread(o, "C")
        if not per:
            continue
        (b, t), els = max(per.items(), key=lambda kv: (kv[1].size, -kv[0][0], -kv[0][1]))
        n = o.length("C")
        if els.size > 1:
            many = f"all {n:,}" if els.size == n else f"{els.size:,} of the {n:,}"
            return (f"thread {t} of block {b} wrote {many} elements (at {o.case.label()}, a launch with a thread for "
                    "every element): the task gives each thread its own element(s) -- a thread's place in the "
                    "grid picks the element it adds, so the threads of the grid share the work.")
    return None


def _budget(case: Case) -> int:
    return 20 * case.grid[0] * -(-case.block[0] // 32) * 24 + 20_000


TASK = KernelTask(
    id=ID, kernel="vector_add",
    params=(Param("A", "in", "float32"), Param("B", "in", "float32"), Param("C", "out", "float32"),
            Param("n", "scalar", "int32")),
    cases=tuple(Case((g,), (b,), {"n": n}) for n, b, g in SHAPES),
    make_inputs=_inputs, reference=_reference, tolerance=_tolerance,
    explanations=(explain_index, explain_values), budget=_budget,
    targets=(target_one_element_per_thread,), recorded_cases=(0,),
    success=f"right at all {len(SHAPES)} launch shapes (one block, many, blocks that are not a multiple of "
            "32, one element, a spare block), and no write past n.")


_ph, _sol = kernel_cells(ID, "vector_add.start", "vector_add.solution")
register(Exercise(
    ID, "03_warps_simt", KERNEL, "Write vector add's index",
    "**Exercise: write the kernel.** Give each thread its element `i` and guard the write, so that "
    "`C = A + B` is right for any `n` and any block size. The checker runs your kernel at seven launch shapes "
    "(one of them with a spare block) with poisoned output -- on the GPU if there is one, else in the "
    "emulator, from your kernel's PTX -- and names the mistake from which elements were written.",
    _ph, _sol, "## Six warp-instructions?", lambda: {"shapes (n, block, grid)": list(SHAPES)},
    lambda code: TASK.grade(code),
    tuple(m for m, _i, _g in INDEX_MISTAKES[:4]) + ("C = A - B",)))


# -- numbers ----------------------------------------------------------------------------------------

# == 03: warps and SIMT ===============================================================================

def _run_vector_add(n: int, block: int):
    from .. import lessons

    tr = lessons.VECTOR_ADD.trace(n=n, block=block)
    warp_id = tr["block"].astype(np.int64) * (-(-block // 32)) + tr["warp"]
    last = warp_id.max()
    useful = int(((warp_id == last) & (tr["index"] < n)).sum())
    return int(last + 1), useful, tr.provenance


def _check_warps(answer, n: int = 100, block: int = 96):
    eid = "warps_simt.warps"
    if answer is None:
        return no_answer(eid, "a pair (warps, useful lanes in the last warp)")
    warps, useful = as_pair(eid, answer, "(warps, useful_lanes)")
    got_w, got_u, prov = _run_vector_add(n, block)
    d = []   # the run's counts are the answer: shown only once the learner has it
    if (warps, useful) == (got_w, got_u):
        return Verdict(eid, True, f"({got_w}, {got_u}): the grid is ceil(n / block) blocks of whole warps; warps "
                       "past n still issue, their guard is false.",
                       [f"the run: vector_add(n={n}, block={block}) launched {got_w} warps, the last with {got_u} "
                        f"useful lanes ({prov})"])
    if warps == -(-n // 32):
        return Verdict(eid, False, f"{warps:g} warps counts warps of elements; warps come from blocks: each "
                       "block of the grid is rounded up to whole warps.", d)
    if warps == got_w:
        return Verdict(eid, False, f"{got_w} warps is right; {useful:g} useful lanes is not: which thread "
                       "indices does the last warp cover, and how many of them are < n?", d)
    return Verdict(eid, False, f"{warps:g} warps: count the grid's blocks, then each block's warps (a block is "
                   "rounded up to whole warps).", d)


register(Exercise(
    "warps_simt.warps", "03_warps_simt", PREDICT, "Warps of a launch",
    "**Exercise: predict, then run.** `vector_add` with `n = 100` elements and `block = 96` threads "
    "(grid = ceil(n / block)). How many warps run, and how many lanes of the *last* warp do useful "
    "work? Answer `(warps, useful_lanes)`; the checker runs the kernel (in the emulator in CPU mode).",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: (warps, useful_lanes)\nex.check('warps_simt.warps', answer)",
    "from gpu_viz import exercises as ex\nblocks = -(-100 // 96)\nwarps = blocks * -(-96 // 32)\n"
    "answer = (warps, max(0, 100 - (warps - 1) * 32))\nex.check('warps_simt.warps', answer).require()",
    "## When lanes disagree", lambda: {"n": 100, "block": 96}, _check_warps,
    ("warps of elements, not of blocks", "last warp's lanes")))
