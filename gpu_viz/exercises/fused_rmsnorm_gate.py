"""Notebook 13 (the fused RMSNorm + SiLU gate): its exercises.

* ``fused_rmsnorm_gate.fuse_gate`` -- write the fused kernel.  The starting code is a right
  one-row-per-block RMSNorm, ``y = x * w * r``, ``r = 1 / sqrt(mean(x^2) + eps)``, fp32 in and out;
  the learner fuses the SiLU gate into it: ``y = x * w * silu(g) * r``, ``silu(g) = g / (1 + e^-g)``,
  r from x alone (the write-up's op), reading g once and writing y once.  Graded on y against float64
  at :data:`GATE_SHAPES` (odd rows, rows shorter than the block, blocks of 32..1024 including
  non-multiples of 32, several rows), fresh inputs each time: one row of every launch small enough
  that eps matters, and gates as large as |g| = 1000 (silu saturates; e^-g overflows float32).
  Each element may be off by the bound :func:`gate_bound` derives from fp32 arithmetic (the task's
  tolerance is that array, one bound per element of y).
  Then a target counted from the emulator's run: the bytes of g loaded and of y stored and loaded
  must be the fused minimum (4 n bytes a row each, and no load of y): an extra pass fails, its
  message counting the bytes.
* ``fused_rmsnorm_gate.bytes`` and ``.floor`` -- the bytes the fused op must move at the write-up's
  shape, and the time they take at the copy kernel's bandwidth.

A failing kernel is named from its run: hazards first (a read or a store past the row's end, a
barrier or shared-memory race in a hand-written reduction), then which elements of y were never
written (a dropped tail, rows never reached), then values that are right except where the gate is
large (an overflow), then the classic wrong formulas, each a float64 model of y that the learner's
y must match at every launch (:data:`VALUE_MISTAKES`) -- never the answer.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from . import core as _core
from .core import KERNEL, PREDICT, Exercise, register
from .kernel_task import Case, KernelTask, Observation, Param, kernel_cells
from .numbers import GiB, _copy_GBps, _placeholder, _solution, grade_number

NB = "13_fused_rmsnorm_gate"

# == write the fused kernel ===========================================================================

ID_FUSE = "fused_rmsnorm_gate.fuse_gate"
#: The write-up's eps (its op's definition); passed to the kernel as its ``eps`` argument.
EPS = 1e-6
#: (n, block, rows): one block per row.  Rows longer than the block (several trips of the row loop,
#: the last partial), rows shorter than it, one element a row; blocks of one warp and one lane (33),
#: partial last warps (96 is whole, 100, 255, 1000 are not), the largest block; the write-up's two
#: launch shapes (N = 768 at 96 threads, its reduction's fault; N = 4096 at 256).
GATE_SHAPES = ((100, 32, 3), (257, 96, 3), (37, 100, 2), (1, 64, 2), (1000, 1024, 2), (515, 255, 2),
               (2049, 512, 1), (70, 33, 2), (768, 96, 2), (4096, 256, 1), (5, 32, 4))
#: Gates whose silu saturates: e^-g overflows float32 for g < -88.7 (e^-g > 3.4e38) and underflows
#: for g > 103; a few of them go into every row of 8 elements or more, at random places.
EXTREME_G = (-1000.0, -100.0, -90.0, 90.0, 100.0, 1000.0)
#: |g| from which an element counts as "large gate" in the explanations (the moderate gates are
#: drawn from N(0, 2.5^2): none comes near).
LARGE_G = 80.0
#: float32's unit roundoff (half an ulp, relative): 2^-24.
U32 = 2.0 ** -24
#: The most of silu(g) a float32 formula may lose to its limits, times 2: __fdividef returns 0 once
#: its divisor passes 2^126 (g < -87.4, where |silu(g)| < 88 * 2^-126 < 2^-119), e^-g overflows to
#: inf a little later (g / inf = -0), and an intermediate below 2^-126 may flush to zero.
SILU_FLOOR = 2.0 ** -118


def _gate_cases():
    return tuple(Case((m,), (b,), {"n": n, "rows": m}) for n, b, m in GATE_SHAPES)


def _gate_inputs(case: Case, rng) -> Dict:
    n, m = case.sizes["n"], case.sizes["rows"]
    # row 0: mean(x^2) ~ 1e-6, the size of eps (so where eps goes shows); the others 0.3..3
    scale = 10.0 ** rng.uniform(-0.5, 0.5, m)
    scale[0] = 1e-3
    x = rng.standard_normal((m, n)) * scale[:, None]
    g = 2.5 * rng.standard_normal((m, n))
    k = min(len(EXTREME_G), n // 8)
    for row in range(m):
        g[row, rng.choice(n, k, replace=False)] = rng.choice(EXTREME_G, k, replace=False)
    w = 1.0 + 0.5 * rng.standard_normal(n)
    return {"x": x.astype(np.float32).reshape(-1), "g": g.astype(np.float32).reshape(-1),
            "w": w.astype(np.float32), "n": n, "eps": EPS}


def silu64(g) -> np.ndarray:
    """silu(g) = g / (1 + e^-g) in float64, without overflow (e^-|g| only): shape of ``g``."""
    g = np.asarray(g, np.float64)
    e = np.exp(-np.abs(g))
    return np.where(g >= 0, g / (1.0 + e), g * e / (1.0 + e))


def _sigmoid(g):
    """1 / (1 + e^-g) in float64, without overflow."""
    e = np.exp(-np.abs(g))
    return np.where(g >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _rows(case: Case, inputs):
    """(x, g as float64 [rows, n], w float64 [n])."""
    n, m = case.sizes["n"], case.sizes["rows"]
    return (np.asarray(inputs["x"], np.float64).reshape(m, n), np.asarray(inputs["g"], np.float64).reshape(m, n),
            np.asarray(inputs["w"], np.float64))


def _r(x: np.ndarray, eps: float) -> np.ndarray:
    """r = 1 / sqrt(mean(x^2) + eps) of each row, [rows, 1]."""
    return 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)


def _gate_reference(case: Case, inputs) -> Dict[str, np.ndarray]:
    x, g, w = _rows(case, inputs)
    return {"y": (x * w * silu64(g) * _r(x, inputs["eps"])).reshape(-1)}


def gate_bound(case: Case, inputs, y: np.ndarray) -> np.ndarray:
    """The most a right fp32 kernel's y may differ from ``y`` (float64 [rows * n], the reference or
    a model of a mistake), element by element; the derivation, with u = 2^-24 (1 ulp <= 2u):

    * r: the sum of n squares in any order (any block size, any reduction): each term passes
      through at most n roundings of a positive quantity, n u; the division by n (IEEE u, or
      __fdividef, 2 ulp) 4u; + eps u; rsqrtf (2 ulp) 4u.  The square root halves the sum's
      share: delta_r = (n u + 5u) / 2 + 4u.
    * silu(g) = g / (1 + e^-g): e^-g by expf (2 ulp) or __expf (2 + 1.173 |g| ulp, CUDA's bound
      for the intrinsic), (4 + 2.35 |g|) u, weighted by e/(1 + e) <= 1 when 1 is added (u); the
      division (IEEE, __fdividef, or a reciprocal and a multiply) 4u.  No cancellation: every term
      has one sign, so the relative bound holds for every element, however small.
    * y = x * w * silu * r: three roundings, 3u.
    * twice the sum, for margin (as gpu_viz/rmsnorm/tolerances.py takes it), times |y|, plus
      SILU_FLOOR times the factors that multiply silu, for what underflows (|silu| < 2^-119).

    A lost term of the sum, a wrong factor or eps in the wrong place is off by far more (the eps
    row's mean(x^2) is about eps: there eps changes r by tens of percent)."""
    x, g, w = _rows(case, inputs)
    n = case.sizes["n"]
    r = _r(x, inputs["eps"])
    weight = _sigmoid(-g)                               # e / (1 + e), e = e^-g
    d_silu = (4.0 + 2.35 * np.abs(g)) * U32 * weight + 5.0 * U32
    d_r = (n * U32 + 5.0 * U32) / 2.0 + 4.0 * U32
    rel = 2.0 * (d_silu + d_r + 3.0 * U32)
    floor = SILU_FLOOR * (1.0 + np.abs(x * w)) * (1.0 + r)
    return (rel * np.abs(np.asarray(y, np.float64).reshape(rel.shape)) + floor).reshape(-1)


def _gate_tolerance(case: Case, inputs, name: str) -> np.ndarray:
    """The task's tolerance: an array, y's bound element by element (the engine compares
    ``|got - want| <= atol`` elementwise)."""
    return gate_bound(case, inputs, _gate_reference(case, inputs)["y"])


# -- the explanations ------------------------------------------------------------------------------------

def _line(h) -> str:
    return f"line {h.where.line}" if h.where is not None and h.where.line is not None else "a line of your kernel"


def explain_past_end(obs: List[Observation]) -> Optional[str]:
    """y stored past the end of its row: in the last row that is past y's end (the poisoned padding
    shows it; elsewhere the next row's elements, overwritten later or not)."""
    hit = [o for o in obs if o.past_end("y").size]
    if not hit:
        return None
    o = hit[0]
    n, B = o.case.sizes["n"], o.case.block[0]
    # the stores past the last row's end, as columns of a row that does not exist
    cols = [set((o2.past_end("y") - o2.length("y")).tolist()) for o2 in hit]
    first = int(o.past_end("y")[0])
    where = f"at {o.case.label()}, y[{first}] was written, past y's end (y has {o.length('y'):,} elements)"
    if all(c == {0} for c in cols):
        return (f"{where}: each row's store runs one element past the row's end -- the loop's test lets "
                "i = n through (i <= n?). The row's last element is i = n - 1; in every row but the last, the "
                "extra store lands on the next row's first element.")
    if all(c2 == set(range(0, -(-o2.case.sizes["n"] // o2.case.block[0]) * o2.case.block[0] - o2.case.sizes["n"]))
           for o2, c2 in zip(hit, cols)):
        return (f"{where}: threads whose element i is past the row's end (i >= n) still store. Their test compares "
                f"threadIdx.x with n, which every thread passes when the row is longer than the block (n = {n:,}, "
                f"blockDim.x = {B}): test the element's index i instead.")
    return (f"{where}: a thread stores an element past the row's end (i >= n). Every store of the row must sit "
            "under a test of the element's index against n.")


def explain_read_past(obs: List[Observation]) -> Optional[str]:
    """An out-of-bounds read: an element past the row's end read (past the array's end in the last
    row, the next row's element in the others)."""
    for o in obs:
        h = next((h for h in o.hazards if h.kind == "out-of-bounds"), None)
        if h is not None:
            return (f"at {o.case.label()}: {h.message} ({_line(h)}). A thread reads an element past the row's end "
                    "(i >= n) -- in the last row past the array's end, in the others the next row's element. Read "
                    "x, g and w only for elements i < n, under the test that ends the row loop.")
    return None


#: The bits of the poison y starts as (NaN, as numpy writes it); a NaN the kernel computes has the
#: bits the GPU (and the emulator) give an invalid operation, 0x7fffffff: a NaN y[k] that still
#: holds the poison's bits was never written.
POISON_BITS = int(np.array(np.nan, np.float32).view(np.uint32))


def _never_written(o: Observation) -> np.ndarray:
    """Which elements of y (flat, rows * n) still hold the poison's bits."""
    return o.outputs["y"][:o.length("y")].view(np.uint32) == POISON_BITS


def _written(o: Observation) -> np.ndarray:
    m, n = o.case.sizes["rows"], o.case.sizes["n"]
    return ~_never_written(o).reshape(m, n)


def explain_unwritten(obs: List[Observation]) -> Optional[str]:
    """Elements of y never written: all of them, whole rows (the row offset), or each row's last
    elements (the row loop stops early)."""
    short = [(o, _written(o)) for o in obs if not _written(o).all()]
    if not short:
        return None
    if len(short) == len(obs) and not any(w.any() for _o, w in short):
        return "y is never written, at any launch: each thread must store y for each of its elements."
    o, wr = short[0]
    n, m = o.case.sizes["n"], o.case.sizes["rows"]
    if all((w2.all(axis=1) | ~w2.any(axis=1)).all() and w2[0].all() for _o, w2 in short):
        missing = np.flatnonzero(~wr.any(axis=1))
        return (f"at {o.case.label()}, only row 0 of y is written (rows {', '.join(str(int(k)) for k in missing[:6])} "
                "never are): the blocks all work on row 0, where block b's row starts b * n elements in.")
    # each row written from its element 0 up to some element, the rest never: the loop stops early
    ends = []
    for o2, w2 in short:
        c = w2.sum(axis=1)
        if not all(w2[k, :c[k]].all() for k in range(w2.shape[0])):
            ends = None
            break
        ends.append((o2, int(c.min())))
    if ends:
        o2, c = ends[0]
        n2, b2 = o2.case.sizes["n"], o2.case.block[0]
        return (f"the row loop stops early: at {o2.case.label()}, each row's elements from i = {c} to {n2 - 1} are "
                f"never written (the tail of {n2 - c} element{'s' if n2 - c != 1 else ''}; blockDim.x = {b2}). The loop "
                "must go on, blockDim.x at a time, until every element i < n of the row has had its thread.")
    k = int(np.flatnonzero(~wr.reshape(-1))[0])
    return (f"at {o.case.label()}, {int((~wr).sum()):,} of {m * n:,} elements of y are never written (first y[{k}], "
            f"row {k // n}, element {k % n}).")


def _first_hazard(obs, kinds):
    for kind in kinds:
        for o in obs:
            h = next((h for h in o.hazards if h.kind == kind), None)
            if h is not None:
                return o, h
    return None, None


def explain_sync(obs: List[Observation]) -> Optional[str]:
    """The hand-offs of a reduction: a barrier not every thread reaches, a race or a read of a slot
    nothing wrote in shared memory, a shuffle mask naming lanes that are not there."""
    o, h = _first_hazard(obs, ("barrier-divergence",))
    if h is not None:
        return (f"a __syncthreads() that not every thread of the block reaches ({_line(h)}, at {o.case.label()}: "
                f"{h.message.split(':')[0]}). Every thread must reach the same barriers: none inside a branch "
                "that depends on the thread, and none inside a loop some threads leave early.")
    o, h = _first_hazard(obs, ("race", "lockstep", "same-instruction"))
    if h is not None:
        return (f"a race in shared memory ({_line(h)}, at {o.case.label()}): {h.message.split(' [')[0]}. A value "
                "handed from one thread to another through shared memory -- a partial sum, the row's total, r -- "
                "needs a __syncthreads() between its write and its reads (and between the reads and the next write "
                "of the same slot).")
    o, h = _first_hazard(obs, ("uninitialized",))
    if h is not None:
        return (f"a read of shared memory nothing wrote ({_line(h)}, at {o.case.label()}): "
                f"{h.message.split(' [')[0]}. With fewer than 32 warps (or a partial one) some slots of the "
                "reduction are never written: read only those that were.")
    o, h = _first_hazard(obs, ("shuffle-mask",))
    if h is not None and not h.details.get("instruction", "shfl").startswith("shfl"):   # __syncwarp's mask
        return f"at {o.case.label()}: {h.message.split(' [')[0]} ({_line(h)})."
    if h is not None:
        return (f"a shuffle whose mask names lanes that are not there ({_line(h)}, at {o.case.label()}): "
                f"{h.message.split(' [')[0]}. In a partial last warp, shuffle among the lanes present.")
    for o in obs:
        if o.hazards:
            return f"at {o.case.label()}: {o.hazards[0].text()}"
    return None


def explain_large_gate(obs: List[Observation]) -> Optional[str]:
    """y right wherever the gate is moderate, wrong (NaN, inf, or off) only where |g| is large."""
    wrong = [o for o in obs if not o.ok]
    if not wrong:
        return None
    first = None
    for o in obs:
        bad = o.bad["y"]
        if not bad.size:
            continue
        g = np.asarray(o.inputs["g"], np.float64)
        if (np.abs(g[bad]) < LARGE_G).any() or _never_written(o)[bad].any():
            return None
        if first is None:
            first = (o, int(bad[0]))
    if first is None:
        return None
    o, k = first
    got = float(o.outputs["y"][k])
    gk = float(o.inputs["g"][k])
    why = ""
    if not np.isfinite(got):
        why = (f" e^{'g' if gk > 0 else '-g'} overflows float32 once its exponent passes 88.7 (e^88.7 = 3.4e38), and "
               "inf / inf, 0 * inf or inf - inf is NaN.")
    return (f"y is right wherever |g| < {LARGE_G:g}, but wrong where the gate is large: at {o.case.label()}, "
            f"y[{k}] = {got:.7g} where g = {gk:g} (want {float(o.want['y'][k]):.7g}).{why} silu(g) tends to g as g "
            "grows and to 0 as g falls: write it so that, at either end, what float32 gives is that limit.")


def _model(f):
    """A mistake's y, [rows * n], from f(x, g, w, eps, case) on the float64 rows."""
    def y(case, inputs):
        x, g, w = _rows(case, inputs)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return np.asarray(f(x, g, w, inputs["eps"], case), np.float64).reshape(-1)
    return y


def _r_partial(x: np.ndarray, eps: float, block: int) -> np.ndarray:
    """r of each element from its thread's partial sum (thread t adds elements t, t + block, ...)."""
    t = np.arange(x.shape[1]) % block
    part = np.stack([np.bincount(t, weights=row * row, minlength=block) for row in x])
    return 1.0 / np.sqrt(part[:, t] / x.shape[1] + eps)


#: (message, model of y): the classic wrong fusions, each as the y it computes (float64).  The
#: learner's y must match one at every moderate gate (|g| < LARGE_G) of every launch.
VALUE_MISTAKES = (
    ("the gate is missing: y comes out as the plain RMSNorm, x * w * r. The task multiplies in silu(g) too.",
     _model(lambda x, g, w, eps, c: x * w * _r(x, eps))),
    ("r is computed from the gated value x * silu(g) -- the gate reached the sum of squares (applied to x before "
     "the reduction). In the write-up's op r comes from x alone; the gate multiplies y only.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) * _r(x * silu64(g), eps))),
    ("the gate is g * e^-g: silu(g) is g times sigmoid(g), and sigmoid(g) = 1 / (1 + e^-g), not e^-g.",
     _model(lambda x, g, w, eps, c: x * w * g * np.exp(-g) * _r(x, eps))),
    ("the gate is sigmoid(g) alone: silu(g) is g times sigmoid(g).",
     _model(lambda x, g, w, eps, c: x * w * _sigmoid(g) * _r(x, eps))),
    ("the gate is g itself, with no SiLU: silu(g) is g times sigmoid(g).",
     _model(lambda x, g, w, eps, c: x * w * g * _r(x, eps))),
    ("the exponent's sign is flipped: the gate is g / (1 + e^g), that is g * sigmoid(-g). silu(g) is "
     "g * sigmoid(g): it tends to g for large g, and to 0 for very negative g.",
     _model(lambda x, g, w, eps, c: x * w * silu64(-g) * -1.0 * _r(x, eps))),
    ("the weight w is missing: y = x * silu(g) * r without w.",
     _model(lambda x, g, w, eps, c: x * silu64(g) * _r(x, eps))),
    ("x is missing from y's product: y = w * silu(g) * r without x (r alone carries x).",
     _model(lambda x, g, w, eps, c: w * silu64(g) * _r(x, eps))),
    ("eps is missing: r = 1 / sqrt(mean(x^2)). It shows on the rows whose mean(x^2) is about eps (row 0 of every "
     "launch): eps belongs inside the square root, added to the mean.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) * _r(x, 0.0))),
    ("eps is outside the square root: r = 1 / (sqrt(mean(x^2)) + eps). It shows on the rows whose mean(x^2) is "
     "about eps (row 0 of every launch): eps is added to the mean, under the root.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) / (np.sqrt((x * x).mean(axis=1, keepdims=True)) + eps))),
    ("r comes from each thread's own partial sum of squares, not the row's total: the partials must be reduced "
     "across the block and every thread must use the one total.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) * _r_partial(x, eps, c.block[0]))),
    ("r uses the sum of squares, not their mean: divide the row's total by n.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) / np.sqrt((x * x).sum(axis=1, keepdims=True) + eps))),
    ("the mean divides by blockDim.x, not by n (the row's length).",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) / np.sqrt((x * x).sum(axis=1, keepdims=True) / c.block[0] + eps))),
    ("the mean divides by n - 1: RMSNorm's mean of squares divides the row's total by n.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) / np.sqrt((x * x).sum(axis=1, keepdims=True) / max(c.sizes["n"] - 1, 1e-300) + eps))),
    ("y is multiplied by the RMS, sqrt(mean(x^2) + eps), not divided by it: r is its reciprocal.",
     _model(lambda x, g, w, eps, c: x * w * silu64(g) / _r(x, eps))),
)


def explain_values(obs: List[Observation]) -> Optional[str]:
    """The first of :data:`VALUE_MISTAKES` whose y the learner's y matches at every moderate gate of
    every launch (within the same fp32 bound), where that model differs from the right y."""
    if not any(not o.ok for o in obs):
        return None
    for msg, model in VALUE_MISTAKES:
        differs = False
        for o in obs:
            want = model(o.case, o.inputs)
            moderate = np.abs(np.asarray(o.inputs["g"], np.float64)) < LARGE_G
            got = o.outputs["y"][:o.length("y")].astype(np.float64)
            tol = gate_bound(o.case, o.inputs, want)
            with np.errstate(invalid="ignore"):
                close = np.abs(got - want) <= tol
            if not close[moderate].all():
                break
            right = o.want["y"]
            differs |= bool((np.abs(right - want) > gate_bound(o.case, o.inputs, right))[moderate].any())
        else:
            if differs:
                wrong = next(o for o in obs if not o.ok)
                return f"{msg} (first wrong at {wrong.case.label()})"
    return None


#: How close y must be everywhere for :func:`explain_precision` to call the rest a precision problem.
NEAR = 1e-3


def explain_precision(obs: List[Observation]) -> Optional[str]:
    """y within NEAR (relative) of float64 everywhere, some elements past the fp32 bound: a formula
    that loses precision (a constant with too few digits, a form that cancels), not a wrong one."""
    worst = None
    nbad = 0
    for o in obs:
        bad = o.bad["y"]
        if not bad.size:
            continue
        got = o.outputs["y"][bad].astype(np.float64)
        want = o.want["y"][bad]
        tol = _gate_tolerance(o.case, o.inputs, "y")[bad]
        if not np.isfinite(got).all() or (np.abs(got - want) > NEAR * np.abs(want) + tol).any():
            return None
        rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
        j = int(np.argmax(rel))
        nbad += int(bad.size)
        if worst is None:
            worst = (o, int(bad[j]), float(rel[j]), float(tol[j] / max(abs(want[j]), 1e-300)))
    if worst is None:
        return None
    o, k, rel, bound = worst
    return (f"y is within {100 * NEAR:g} % of float64 everywhere, but {nbad} element{'s are' if nbad > 1 else ' is'} "
            f"further off than fp32 arithmetic allows: at {o.case.label()}, y[{k}] = {float(o.outputs['y'][k]):.9g}, "
            f"want {float(o.want['y'][k]):.9g} (g = {float(o.inputs['g'][k]):g}), off by {rel:.2g} relative where its "
            f"bound is {bound:.2g} (the sum of n squares in any order, expf or __expf, the division and rsqrtf, each at "
            "its documented worst case, twice over). A constant with too few digits, or a form that cancels (a "
            "difference of two nearly equal numbers), loses that much.")


# -- the target: one pass over memory --------------------------------------------------------------------

#: The launches whose global traffic is counted (one with rows longer than the block, one shorter).
TRAFFIC_CASES = (1, 2)


def global_bytes(task: KernelTask, o: Observation) -> Optional[Dict[str, Dict[str, int]]]:
    """{array: {"ld": bytes loaded, "st": bytes stored}} of the learner's kernel at ``o``'s launch,
    counted from the emulator's run of it (relaunched with its event log: the counts per array come
    from each access's addresses).  None when the run has no program (no NVRTC)."""
    from .. import emulator

    run = getattr(o, "run", None)
    program = getattr(run, "program", None)
    if program is None:
        return None
    dev = emulator.Device()
    args = []
    for p in task.params:
        if p.role == "scalar":
            args.append(np.dtype(p.dtype).type(o.inputs[p.name]))
        elif p.role == "in":
            args.append(dev.asarray(np.asarray(o.inputs[p.name], p.dtype), name=p.name))
        else:
            args.append(dev.asarray(np.full(o.length(p.name), np.nan, p.dtype), name=p.name))
    rec = program.launch(task.kernel, o.case.grid, o.case.block, args, device=dev, record=True, checks=False,
                         budget=task.budget(o.case), time_limit=60.0)
    out: Dict[str, Dict[str, int]] = {p.name: {"ld": 0, "st": 0} for p in task.params if p.role != "scalar"}
    for ev in rec.events or ():
        names = ev.get("elements")
        if not names:
            continue
        op = "st" if ev.get("write") else "ld"
        for el in names:
            name = el.split("[", 1)[0]
            if name in out:
                out[name][op] += int(ev["nbytes"])
    return out


def target_one_pass(obs: List[Observation]) -> Optional[str]:
    """g loaded once and y stored once, y never loaded: each 4 n bytes a row (the fused minimum)."""
    for k in TRAFFIC_CASES:
        if k >= len(obs):
            continue
        o = obs[k]
        counts = global_bytes(FUSE_GATE, o)
        if counts is None:
            return None
        least = 4 * o.length("y")
        g_ld, y_st, y_ld = counts["g"]["ld"], counts["y"]["st"], counts["y"]["ld"]
        if g_ld <= least and y_st <= least and y_ld == 0:
            continue
        moved = g_ld + y_st + y_ld
        parts = [f"g loaded {g_ld:,} bytes", f"y stored {y_st:,}", f"y loaded back {y_ld:,}"]
        return (f"every element is right, but not in one pass over memory: at {o.case.label()} the kernel moved "
                f"{moved:,} bytes of g and y ({', '.join(parts)}), where the fused kernel moves {2 * least:,}: g "
                f"loaded once and y stored once, {least:,} bytes each (4 bytes x n x rows), and y never read. "
                "Keep each element's gated value in a register until y's one store.")
    return None


def explain_stuck(o: Observation) -> Optional[str]:
    """A launch stopped by a barrier not every thread reaches (the other hangs: the generic words)."""
    if any(h.kind == "barrier-divergence" for h in o.hazards):
        return explain_sync([o])
    return None


def _gate_budget(case: Case) -> int:
    warps = -(-case.block[0] // 32)
    trips = -(-case.sizes["n"] // case.block[0])
    return 20 * case.sizes["rows"] * warps * (60 * trips + 300) + 50_000


FUSE_GATE = KernelTask(
    id=ID_FUSE, kernel="fuse_gate",
    params=(Param("x", "in", "float32"), Param("g", "in", "float32"), Param("w", "in", "float32"),
            Param("y", "out", "float32"), Param("n", "scalar", "int32"), Param("eps", "scalar", "float32")),
    cases=_gate_cases(), make_inputs=_gate_inputs, reference=_gate_reference, tolerance=_gate_tolerance,
    explanations=(explain_past_end, explain_read_past, explain_unwritten, explain_sync, explain_large_gate,
                  explain_values, explain_precision),
    targets=(target_one_pass,), runaway_explanations=(explain_stuck,), budget=_gate_budget, narrow_index_note=False,
    success=f"right at all {len(GATE_SHAPES)} launches (odd rows, rows shorter than the block, blocks of 32 to 1024, "
            "gates up to |g| = 1000), hazard-free, and fused: g read once and y written once, counted from the run.")

_ph, _sol = kernel_cells(ID_FUSE, "fuse_gate.start", "fuse_gate.solution")
register(Exercise(
    ID_FUSE, NB, KERNEL, "Fuse the SiLU gate",
    "**Exercise: write the fused kernel.** `fuse_gate` is a right one-row-per-block RMSNorm, fp32: "
    "`y = x * w * r`, `r = 1 / sqrt(mean(x^2) + eps)`. Fuse the gate into it: "
    "`y = x * w * silu(g) * r`, `silu(g) = g / (1 + e^-g)`, with r still from x alone -- in the same "
    "kernel, reading g once and writing y once. The checker runs it at "
    f"{len(GATE_SHAPES)} launches (odd rows, rows shorter than the block, blocks of 32 to 1024, several rows; "
    "gates as large as |g| = 1000), compares y with float64 within a bound derived from fp32 arithmetic, "
    "then counts from the run the bytes of g and y your kernel moved: one pass passes.",
    _ph, _sol, "### Rows too long for one block", lambda: {"launches (n, block, rows)": list(GATE_SHAPES),
                                                          "eps": EPS},
    lambda code: FUSE_GATE.grade(code),
    ("gate missing", "r from the gated value", "g * e^-g", "sigmoid alone", "eps outside the root",
     "tail dropped", "an extra pass over y")))


# == 10: the fused gate ===============================================================================

M10, N10 = 16384, 4096


def _check_bytes(answer):
    t = M10 * N10 * 2
    want = 3 * t + N10 * 2
    # a byte count is exact: a relative tolerance would hide w's 8 KiB beside 384 MiB
    return grade_number("fused_rmsnorm_gate.bytes", answer, want, 1e-9, "bytes that must move", {
        f"you left out the weight w: its {N10 * 2:,} bytes ({N10} fp16) are read too, once.": 3 * t,
        "you counted w once per row: it is read from memory once, then every row hits it in L1/L2.": 4 * t,
        "you left out the gate: the fused op reads x AND gate.": 2 * t + N10 * 2,
        "those are float32 sizes: the tensors are fp16.": 2 * want,
        "that counts the eager version's intermediates: fused, nothing but x, gate, w and y touches memory.": 5 * t + N10 * 2,
    }, [])


def _given_floor():
    """The bytes and the copy bandwidth to divide them by: measured now on a GPU; in CPU mode the
    bench record's copy -- the run that timed the fused kernel the checker shows -- else the
    hardware record's, each named."""
    facts = {"M": M10, "N": N10, "dtype": "float16", "bytes": 3 * M10 * N10 * 2 + N10 * 2}
    if _core.live():
        return {**facts, **_copy_GBps()}
    from ..measure import records

    rec = records.newest("*-fused.json")
    if rec and rec.get("copy_GBps"):
        return {**facts, "copy_GBps": float(rec["copy_GBps"]),
                "copy_source": f"the bench run's copy, {records.label(rec)}"}
    copy = _copy_GBps()
    return {**facts, **copy, "copy_source": f"the hardware record's copy, {copy['copy_source']}"}


def _fused_gate_us():
    if _core.live():
        import torch

        from .. import ops
        from ..check import assert_close
        from ..measure import timing

        x = torch.randn(M10, N10, device="cuda", dtype=torch.float16)
        gt = torch.randn_like(x)
        w = torch.randn(N10, device="cuda", dtype=torch.float16)
        y = ops.rmsnorm_gate(x, gt, w)
        from ..rmsnorm.reference import rmsnorm as reference
        from ..rmsnorm.tolerances import tolerance

        atol, rtol = tolerance("float16")
        assert_close("rmsnorm_gate y", y, reference(x, w, 1e-6, gate=gt), atol=atol, rtol=rtol)
        t = timing.time_graph(lambda i: ops.rmsnorm_gate(x, gt, w), reps=30)
        return t.median_us, "measured just now (CUDA graph replay; inputs not rotated, may sit partly in L2)"
    from ..measure import records

    rec = records.newest("*-fused.json")
    for r in (rec or {}).get("rows", []):
        if (r.get("op"), r.get("impl"), r.get("M"), r.get("N"), r.get("dtype"), r.get("timing")) == \
                ("rmsnorm_gate", "fused", M10, N10, "float16", "kernel"):
            return float(r["median_us"]), records.label(rec)
    return None, "no recorded fused-gate row at this shape"


def _check_floor(answer):
    g = _given_floor()
    want = g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6
    peak = _core.info().peak_bandwidth_GBps
    v = grade_number("fused_rmsnorm_gate.floor", answer, want, 0.02, "microseconds at the copy kernel's bandwidth", {
        "you used the spec sheet's peak bandwidth: the reference here is the measured copy kernel.":
            g["bytes"] / (peak * 1e9) * 1e6 if peak else None,
        "you divided by GiB/s: GB/s is 1e9 bytes per second.": g["bytes"] / (g["copy_GBps"] * GiB) * 1e6,
        "that is milliseconds: the question asks for microseconds.": want / 1e3,
    }, [f"copy {g['copy_GBps']:,.0f} GB/s ({g['copy_source']})"])
    if v.ok:
        us, where = _fused_gate_us()
        if us is not None:
            share = 100 * want / us
            v.details.append(f"the fused kernel: {us:,.1f} µs ({where}): it moves its bytes at {share:.0f}% "
                             "of the copy kernel's bandwidth")
            if us < want:
                v.details.append(
                    f"it beat the copy reference by {share - 100:.1f}%: the reference is a 1:1 copy (one byte "
                    "read per byte written), not a hard floor. The gate reads two bytes (x, gate) per byte it "
                    "writes, and a read-heavy stream turns the DRAM bus around between reads and writes less "
                    "often than a copy, so it can move slightly more bytes per second.")
    return v


register(Exercise(
    "fused_rmsnorm_gate.bytes", "13_fused_rmsnorm_gate", PREDICT, "Bytes the fused gate must move",
    f"**Exercise.** `y = rmsnorm(x) * w * silu(gate)` with `x`, `gate` [{M10}, {N10}] fp16 and `w` [{N10}] "
    "fp16, fused into one kernel. The fewest bytes that must move?",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: bytes\nex.check('fused_rmsnorm_gate.bytes', answer)",
    f"from gpu_viz import exercises as ex\nM, N = {M10}, {N10}\nanswer = 3 * M * N * 2 + N * 2   # x, gate in; y out; w once\n"
    "ex.check('fused_rmsnorm_gate.bytes', answer).require()",
    "## 7. Long rows, one call at a time", lambda: {"M": M10, "N": N10, "dtype": "float16"}, _check_bytes,
    ("gate left out", "fp32 sizes", "eager intermediates")))

register(Exercise(
    "fused_rmsnorm_gate.floor", "13_fused_rmsnorm_gate", PREDICT, "The fused kernel at copy speed",
    "**Exercise: predict, then run.** If the fused kernel moved its bytes at the copy kernel's bandwidth "
    "(`copy_GBps` in the exercise's given values, with the record or run it comes from), how many "
    "microseconds would it take at this shape? "
    "That is a reference time, not a hard floor: the checker then shows the kernel's measured time.\n\n"
    "*Beside it: in the H200 record the fused gate ran slightly faster than this reference (the checker "
    "says by how much). A copy reads "
    "one byte per byte it writes; the gate reads two (x and gate) per byte of y, and a read-heavy stream "
    "turns the DRAM bus around between reads and writes less often, so it can move slightly more bytes "
    "per second than the copy that sets the reference.*",
    _placeholder("fused_rmsnorm_gate.floor", "microseconds"),
    _solution("fused_rmsnorm_gate.floor", "g['bytes'] / (g['copy_GBps'] * 1e9) * 1e6"),
    "## 7. Long rows, one call at a time", _given_floor, _check_floor,
    ("spec-sheet peak", "GiB/s", "milliseconds")))
