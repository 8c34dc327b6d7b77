"""Notebooks 07 and 08 (where the bytes go): four write-or-fix-the-kernel exercises, graded on the run.

* ``memory_access.coalesce`` -- keep each thread's ``per_thread`` elements, but make every warp's
  loads and stores coalesced.  Graded on y (exact) at six launch shapes, then on a target counted
  from the emulator's run: the global accesses must use >= :data:`COALESCED` of the bytes their
  sectors move (the starting code's thread-major order uses 14 % over the six launches).
* ``memory_access.pad_tile`` -- the tiled transpose, conflict-free.  Graded on out (exact) at six
  shapes (edges included), then on the tile's bank conflicts counted from the run: none allowed.
* ``memory_access.fix_race`` -- a histogram whose ``bins[k] += 1`` loses counts.  Graded on the bins
  (exact) at five launches, each run in the emulator with its warps interleaved at random (seeded),
  so an increment left racy shows; the emulator's hazards name the race at its line.
* ``memory_access.next_rung`` -- from rung 3 of the reduction ladder (sequential addressing), write
  rung 4 (the first add during the load).  Graded on each block's partial sum (float64 reference)
  at seven launches, then on targets counted from the run: the tree's bank conflicts (none) and its
  divergent branches (at most :data:`DIVERGENT_PER_BLOCK` a block: keep the sequential addressing).

A failure names what the run showed: the elements wrong, the counts lost, the hazard and its line,
or how far the counted sectors or wavefronts are from the target -- never the answer.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from .. import memory_access as ma
from .core import KERNEL, Exercise, register
from .kernel_task import Case, KernelTask, Observation, Param, kernel_cells

NB_BYTES = "07_coalescing_and_banks"
NB_RACES = "08_races_and_reduction"
ID_COALESCE = "memory_access.coalesce"
ID_PAD = "memory_access.pad_tile"
ID_RACE = "memory_access.fix_race"
ID_RUNG = "memory_access.next_rung"
#: The share of the moved bytes coalesced accesses must use (a warp-major copy uses 100 %, less a
#: partial last warp; the thread-major one 12.5 % at 8 floats a thread, 25 % at 4).
COALESCED = 0.9


def _runs(obs: List[Observation]):
    return [getattr(o, "run", None) for o in obs if getattr(o, "run", None) is not None]


def _global_totals(obs: List[Observation], op: str) -> Dict[str, int]:
    t = {"requests": 0, "sectors": 0, "bytes": 0}
    for run in _runs(obs):
        for r in ma.run_counts(run):
            if r["space"] == "global" and r["op"] == op:
                for k in t:
                    t[k] += r[k]
    return t


def _shared_totals(obs: List[Observation], op: str) -> Dict[str, int]:
    t = {"requests": 0, "wavefronts": 0, "ideal": 0}
    for run in _runs(obs):
        for r in ma.run_counts(run):
            if r["space"] == "shared" and r["op"] == op:
                for k in t:
                    t[k] += r[k]
    return t


# -- 1. coalesce ---------------------------------------------------------------------------------------

#: (n, per_thread, block): the grid is ceil(n / (block * per_thread)).
COALESCE_SHAPES = ((4096, 8, 128), (4096, 4, 256), (8192, 16, 64), (1000, 8, 64), (100, 3, 32), (1, 4, 32))


def _coalesce_cases():
    return tuple(Case((-(-n // (b * k)),), (b,), {"n": n, "per_thread": k}) for n, k, b in COALESCE_SHAPES)


def _coalesce_inputs(case: Case, rng):
    n = case.sizes["n"]
    return {"x": rng.standard_normal(n).astype(np.float32), "n": n, "per_thread": case.sizes["per_thread"]}


def _coalesce_reference(case: Case, inputs):
    return {"y": (np.float32(2.0) * inputs["x"]).astype(np.float64)}


def explain_coverage(obs: List[Observation]) -> Optional[str]:
    """Threads that take the same element (a write-write race on y) and elements nobody takes."""
    for o in obs:
        h = next((h for h in o.hazards if h.kind == "race" and h.message.startswith("a race on y[")), None)
        if h is not None:
            unwritten = int((~o.written("y")[:o.length("y")]).sum())
            return (f"several threads write the same element of y ({h.message.split(':')[0][len('a race on '):]} "
                    f"at {o.case.label()}, line {h.where.line}) and {unwritten:,} of {o.length('y'):,} elements are "
                    "never written: every thread, on every trip, must take an element no other thread takes.")
    return None


def target_coalesced(obs: List[Observation]) -> Optional[str]:
    """Loads and stores of global memory must use >= COALESCED of the bytes their sectors move."""
    for op, what in (("ld", "loads of x"), ("st", "stores to y")):
        t = _global_totals(obs, op)
        if not t["sectors"]:
            continue
        eff = t["bytes"] / (ma.SECTOR_BYTES * t["sectors"])
        if eff < COALESCED:
            spr = t["sectors"] / t["requests"]
            return (f"every element is right, but the {what} are not coalesced: they use {100 * eff:.1f} % of the "
                    f"bytes their sectors move ({spr:.1f} sectors of 32 B per warp request, where 32 lanes on 32 "
                    f"consecutive floats need 4): {1 / eff:.1f}x the traffic a coalesced order moves. Arrange the "
                    "loop so that, on each trip, consecutive lanes of a warp take consecutive elements.")
    return None


COALESCE = KernelTask(
    id=ID_COALESCE, kernel="scale_chunks",
    params=(Param("x", "in", "float32"), Param("y", "out", "float32"), Param("n", "scalar", "int32"),
            Param("per_thread", "scalar", "int32")),
    cases=_coalesce_cases(), make_inputs=_coalesce_inputs, reference=_coalesce_reference,
    tolerance=lambda case, inputs, name: 0.0, explanations=(explain_coverage,), targets=(target_coalesced,),
    narrow_index_note=False,
    success=f"right at all {len(COALESCE_SHAPES)} launches, and coalesced: each warp request of x and of y uses "
            "the bytes its sectors move.")


# -- 2. pad the tile -----------------------------------------------------------------------------------

#: (rows, cols) of the matrix transposed; blocks of 32 x 8 threads, one per 32 x 32 tile.
PAD_SHAPES = ((32, 32), (64, 96), (96, 64), (33, 70), (1, 40), (70, 1))


def _pad_cases():
    return tuple(Case((-(-c // 32), -(-r // 32)), (32, 8), {"rows": r, "cols": c}) for r, c in PAD_SHAPES)


def _pad_inputs(case: Case, rng):
    r, c = case.sizes["rows"], case.sizes["cols"]
    return {"in": rng.standard_normal(r * c).astype(np.float32), "rows": r, "cols": c}


def _pad_reference(case: Case, inputs):
    r, c = case.sizes["rows"], case.sizes["cols"]
    return {"out": np.ascontiguousarray(inputs["in"].reshape(r, c).T).reshape(-1).astype(np.float64)}


def explain_copy(obs: List[Observation]) -> Optional[str]:
    """out holds in itself (no transpose) wherever a shape lets one tell."""
    wrong = [o for o in obs if not o.ok and o.bad["out"].size]
    if wrong and all(np.array_equal(o.outputs["out"][:o.length("out")], o.inputs["in"]) for o in wrong):
        return (f"out holds in as it is, not transposed (first at {wrong[0].case.label()}): the element at row r, "
                "column c of in goes to row c, column r of out.")
    return None


def target_conflict_free(obs: List[Observation]) -> Optional[str]:
    """The tile's shared loads and stores must take one wavefront per request."""
    for op, what in (("ld", "reads"), ("st", "writes")):
        t = _shared_totals(obs, op)
        if t["wavefronts"] > t["ideal"]:
            wpr = t["wavefronts"] / max(t["requests"], 1)
            return (f"the transpose is right, but the tile's {what} have {t['wavefronts'] - t['ideal']:,} bank "
                    f"conflicts: {wpr:.1f} wavefronts per warp request where 1 would do. The 32 words a warp "
                    f"{what[:-1]}s in one go fall in the same banks; change the tile's layout (not who does what) "
                    "so that they fall in 32 different banks.")
    return None


PAD_TILE = KernelTask(
    id=ID_PAD, kernel="transpose",
    params=(Param("in", "in", "float32"), Param("out", "out", "float32"), Param("rows", "scalar", "int32"),
            Param("cols", "scalar", "int32")),
    cases=_pad_cases(), make_inputs=_pad_inputs, reference=_pad_reference,
    tolerance=lambda case, inputs, name: 0.0, explanations=(explain_copy,), targets=(target_conflict_free,),
    narrow_index_note=False,
    success=f"right at all {len(PAD_SHAPES)} shapes (edges included), and the tile's reads and writes take one "
            "wavefront each: no bank conflicts.")


# -- 3. fix the race -----------------------------------------------------------------------------------

NBINS = 256
#: (n, grid, block, keys): "uniform" over the 256 bins, "few" over 4 of them (heavy contention).
RACE_SHAPES = ((4096, 4, 128, "uniform"), (4096, 8, 256, "few"), (10000, 3, 100, "uniform"), (300, 1, 1024, "few"),
               (5000, 16, 64, "uniform"))


def _race_cases():
    return tuple(Case((g,), (b,), {"n": n, "key_range": 4 if k == "few" else NBINS}) for n, g, b, k in RACE_SHAPES)


def _race_inputs(case: Case, rng):
    n = case.sizes["n"]
    return {"keys": rng.integers(0, case.sizes["key_range"], n).astype(np.int32), "n": n,
            "bins": np.zeros(NBINS, np.int32)}


def _race_reference(case: Case, inputs):
    return {"bins": np.bincount(inputs["keys"], minlength=NBINS).astype(np.int64)}


def _race_options(case: Case) -> Dict:
    # a different interleaving per launch, the same every time the task is graded
    return {"policy": "random", "seed": 7 + case.sizes["n"] + 31 * case.grid[0]}


def _counted(o: Observation) -> int:
    return int(o.outputs["bins"][:NBINS].astype(np.int64).sum())


def _first(obs, kind, region=None):
    for o in obs:
        for h in o.hazards:
            if h.kind == kind and (region is None or h.details.get("region") == region
                                   or f" {region}[" in f" {h.message}" or h.message.startswith(region + "[")):
                return o, h
    return None, None


def explain_race_hazards(obs: List[Observation]) -> Optional[str]:
    o, h = _first(obs, "uninitialized")
    if h is not None:
        return (f"a counter is read before anything in its block wrote it (line {h.where.line}): {h.message.split(' (')[0]}. "
                "Counters in shared memory start as whatever was there: zero them, then __syncthreads(), before "
                "counting into them.")
    o, h = _first(obs, "barrier-divergence")
    if h is not None:
        return f"a __syncthreads() not every thread reaches (line {h.where.line}): {h.message.split(':')[0]}."
    for kind in ("race", "lockstep", "same-instruction"):
        o, h = _first(obs, kind)
        if h is not None:
            lost = o.case.sizes["n"] - _counted(o)
            how = (f"{lost:,} of {o.case.sizes['n']:,} counts were lost" if lost > 0 else
                   "this run happened to lose no count, but another interleaving will")
            return (f"still racy at line {h.where.line}: {h.message.split(' [')[0]}. At {o.case.label()} {how}. "
                    "A load, an add and a store are three steps another thread can come between: make the "
                    "increment one indivisible step.")
    return None


def explain_race_values(obs: List[Observation]) -> Optional[str]:
    wrong = [o for o in obs if not o.ok]
    if not wrong:
        return None
    o = wrong[0]
    n, got = o.case.sizes["n"], _counted(o)
    if got < n:
        threads = o.case.grid[0] * o.case.block[0]
        if all(_counted(w) == min(w.case.sizes["n"], w.case.grid[0] * w.case.block[0]) for w in wrong):
            return (f"only the first gridDim.x * blockDim.x keys are counted (at {o.case.label()}: {got:,} of {n:,}, "
                    f"{threads:,} threads): each thread must count every key of its grid-stride loop.")
        return f"{n - got:,} of {n:,} counts were lost at {o.case.label()}."
    if got > n:
        return (f"{got - n:,} counts too many at {o.case.label()} ({got:,} for {n:,} keys): a key is counted more "
                "than once -- by several threads, or into shared and global bins both.")
    k = int(o.bad["bins"][0])
    return (f"the right number of counts, in the wrong bins at {o.case.label()}: bins[{k}] = "
            f"{int(o.outputs['bins'][k])}, want {int(o.want['bins'][k])}.")


FIX_RACE = KernelTask(
    id=ID_RACE, kernel="histogram",
    params=(Param("keys", "in", "int32"), Param("n", "scalar", "int32"), Param("bins", "inout", "int32")),
    cases=_race_cases(), make_inputs=_race_inputs, reference=_race_reference,
    tolerance=lambda case, inputs, name: 0.0, explanations=(explain_race_hazards, explain_race_values),
    launch_options=_race_options, narrow_index_note=False,
    success=f"every count lands at all {len(RACE_SHAPES)} launches, each run with its warps interleaved at random, "
            "and the emulator finds no race.")


# -- 4. the next rung ----------------------------------------------------------------------------------

#: (n, block): the grid is ceil(n / (2 * block)); blockDim.x floats of dynamic shared memory.
RUNG_SHAPES = ((4096, 128), (4096, 256), (1000, 64), (777, 128), (6144, 1024), (64, 32), (1, 64))


def _rung_cases():
    return tuple(Case((-(-n // (2 * b)),), (b,), {"n": n}, shared_mem=4 * b) for n, b in RUNG_SHAPES)


def _rung_inputs(case: Case, rng):
    # small integers: every partial sum is exact in float32, so a right kernel's partials equal the
    # float64 sums exactly and one lost value always shows
    n = case.sizes["n"]
    return {"x": rng.integers(-4, 5, n).astype(np.float32), "n": n}


def _slices(x: np.ndarray, start: np.ndarray, length: int) -> np.ndarray:
    """float64 sums of x[s : s + length] for each s (clipped to x)."""
    c = np.r_[0.0, np.cumsum(x.astype(np.float64))]
    lo = np.clip(start, 0, x.size)
    hi = np.clip(start + length, 0, x.size)
    return c[hi] - c[lo]


def _rung_reference(case: Case, inputs):
    b, g = case.block[0], case.grid[0]
    return {"out": _slices(inputs["x"], 2 * b * np.arange(g), 2 * b)}


def _rung_tolerance(case, inputs, name):
    return 0.0          # integer inputs: exact


#: (message, partial sums the mistake gives: f(x, block, grid)).
RUNG_MISTAKES = (
    ("each block still sums the blockDim.x elements from b * blockDim.x on (rung 3's index): with half the "
     "blocks, the second half of x is never read. Block b now owns 2 * blockDim.x elements, from "
     "b * 2 * blockDim.x on, and each thread adds two of them while it loads.",
     lambda x, B, G: _slices(x, B * np.arange(G), B)),
    ("each block sums only the first half of its 2 * blockDim.x elements: every thread must also add the element "
     "blockDim.x further on while it loads.",
     lambda x, B, G: _slices(x, 2 * B * np.arange(G), B)),
    ("the blocks' slices overlap: block b starts at b * blockDim.x, but with two elements a thread it owns "
     "2 * blockDim.x of them, from b * 2 * blockDim.x on.",
     lambda x, B, G: _slices(x, B * np.arange(G), 2 * B)),
    ("each block sums blockDim.x elements from b * blockDim.x and blockDim.x more one grid further on: the "
     "pair a thread adds must be the two halves of its block's own 2 * blockDim.x elements.",
     lambda x, B, G: _slices(x, B * np.arange(G), B) + _slices(x, B * np.arange(G) + G * B, B)),
)


def explain_rung_values(obs: List[Observation]) -> Optional[str]:
    if not any(not o.ok for o in obs):
        return None
    for msg, predict in RUNG_MISTAKES:
        if all(np.array_equal(o.outputs["out"][:o.length("out")].astype(np.float64),
                              predict(o.inputs["x"], o.case.block[0], o.case.grid[0])) for o in obs):
            o = next(o for o in obs if not o.ok)
            return f"{msg} (first wrong at {o.case.label()})"
    return None


def target_rung_conflicts(obs: List[Observation]) -> Optional[str]:
    t = _shared_totals(obs, "ld")
    if t["wavefronts"] > t["ideal"]:
        wpr = t["wavefronts"] / max(t["requests"], 1)
        return (f"the sums are right, but the tree's shared loads have {t['wavefronts'] - t['ideal']:,} bank "
                f"conflicts ({wpr:.2f} wavefronts per warp request): the partners a warp reads are 2k words "
                "apart. Keep rung 3's sequential addressing: consecutive lanes, consecutive slots.")
    return None


#: Divergent branches a block of the sequential tree may take: the five steps below a warp (k = 16
#: .. 1) and the guards of the load and of the write of the partial (the reference takes 6-7).
DIVERGENT_PER_BLOCK = 8


def target_rung_divergence(obs: List[Observation]) -> Optional[str]:
    runs = [(o.case.grid[0], getattr(o, "run", None)) for o in obs]
    runs = [(g, r) for g, r in runs if r is not None]
    div = sum(sum(s.divergent for s in r.stats.values()) for _g, r in runs)
    allowed = DIVERGENT_PER_BLOCK * sum(g for g, _r in runs)
    if div > allowed:
        return (f"the sums are right, but the tree diverges: {div:,} branches on which a warp's lanes disagreed, "
                f"{div / allowed * DIVERGENT_PER_BLOCK:.0f} a block where the sequential tree takes at most "
                f"{DIVERGENT_PER_BLOCK}. Keep rung 3's sequential addressing: the adders are the first k threads, "
                "so whole warps add or sit out together.")
    return None


NEXT_RUNG = KernelTask(
    id=ID_RUNG, kernel="reduce_first_add",
    params=(Param("x", "in", "float32"), Param("out", "out", "float32"), Param("n", "scalar", "int32")),
    cases=_rung_cases(), make_inputs=_rung_inputs, reference=_rung_reference, tolerance=_rung_tolerance,
    explanations=(explain_rung_values,), targets=(target_rung_conflicts, target_rung_divergence),
    narrow_index_note=False,
    success=f"every block's partial sum is right at all {len(RUNG_SHAPES)} launches (odd n, one value, blocks of "
            "32..1024), with half the blocks of rung 3 and a conflict-free tree.")


def _given(shapes, what):
    return lambda: {what: list(shapes)}


_ph, _sol = kernel_cells(ID_COALESCE, "coalesce.start", "coalesce.solution")
register(Exercise(
    ID_COALESCE, NB_BYTES, KERNEL, "Make a strided access coalesced",
    "**Exercise: fix the kernel.** Each thread of `scale_chunks` doubles `per_thread` elements -- its own "
    "consecutive chunk, so the 32 lanes of a warp are `per_thread` floats apart on every trip. Keep "
    "`per_thread` elements a thread (and the launch), but make every warp's loads and stores coalesced. The "
    f"checker runs six launches, then counts from the run the share of moved bytes your accesses use: at least "
    f"{100 * COALESCED:.0f} % passes.",
    _ph, _sol, "## Measured on a GPU", _given(COALESCE_SHAPES, "launches (n, per_thread, block)"),
    lambda code: COALESCE.grade(code), ("thread-major order", "elements skipped or repeated")))

_ph, _sol = kernel_cells(ID_PAD, "pad_tile.start", "pad_tile.solution")
register(Exercise(
    ID_PAD, NB_BYTES, KERNEL, "Pad the tile",
    "**Exercise: fix the kernel.** The tiled transpose is right, but reading a column of its 32 x 32 tile puts "
    "all 32 lanes in one bank. Change the tile so that the reads are conflict-free, keeping who loads and "
    "stores what. The checker transposes six shapes (edges included), then counts the tile's bank conflicts "
    "from the run: none passes.",
    _ph, _sol, "## Why the reduction's smem[32] is conflict-free", _given(PAD_SHAPES, "shapes (rows, cols)"),
    lambda code: PAD_TILE.grade(code), ("32-way column reads", "2-way (tile width 34)", "conflicts moved to the stores")))

_ph, _sol = kernel_cells(ID_RACE, "fix_race.start", "fix_race.solution")
register(Exercise(
    ID_RACE, NB_RACES, KERNEL, "Fix the race",
    "**Exercise: fix the kernel.** `histogram` counts keys with `bins[keys[i]] += 1` and loses counts. Make "
    "every count land, for any grid and block. The checker runs five launches, each with its warps "
    "interleaved at random (seeded) in the emulator -- or on the GPU, with the emulator's race check beside "
    "it -- and names a race at its line.",
    _ph, _sol, "## The reduction as a ladder", _given(RACE_SHAPES, "launches (n, grid, block, keys)"),
    lambda code: FIX_RACE.grade(code), ("load-add-store", "shared counters not zeroed", "no barrier before the "
                                                                                          "global add")))

_ph, _sol = kernel_cells(ID_RUNG, "next_rung.start", "next_rung.solution")
register(Exercise(
    ID_RUNG, NB_RACES, KERNEL, "Write the next rung",
    "**Exercise: write the kernel.** This is rung 3 (sequential addressing), launched with half the blocks. "
    "Make it rung 4: each block sums its `2 * blockDim.x` elements, the first add done while loading. The "
    "checker compares every block's partial sum with float64 at seven launches (odd n, one value, blocks of "
    "32 to 1024; the values are small integers, so a right sum is exact) and counts the tree's bank conflicts "
    "and divergent branches from the run.",
    _ph, _sol, "## Your turn, in the notebook", _given(RUNG_SHAPES, "launches (n, block)"),
    lambda code: NEXT_RUNG.grade(code), ("rung 3's index", "first half only", "overlapping slices",
                                         "second load unguarded",
                                         "a strided tree (bank conflicts)")))
