"""GPU producer of notebook 08's reduction ladder: the traced build of ``kernels/reduction_ladder.cu``,
one block of a tree rung, step by step.

Data path: ``kernels/reduction_ladder.cu`` (traced build, rungs 1-3: which threads of block 0
add in each tree step, ``rec.adds``, and the sum each wrote, ``rec.slots``)
--(:func:`trace`)--> :class:`gpu_viz.trace.Trace` --> ``gpu_viz.frames.reduction_ladder``.  Inside
:func:`gpu_viz.emulator.emulated` the same code runs the kernel's PTX on the CPU.
:func:`run` launches any rung (untraced) over n values: its partial sums, checked against float64.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .. import backend, kernels
from ..check import check_int
from ..trace import GPU_SOURCE, Step, Trace

FILE = "reduction_ladder.cu"
WARP = 32


#: The rungs, in order: (short name, kernel, what changed).
RUNGS = (
    ("interleaved", "reduce_interleaved", "the tree in place: threads t % 2k == 0 add (every warp diverges)"),
    ("strided", "reduce_strided", "the same pairs taken by threads 0, 1, 2, ...: no divergence, bank conflicts"),
    ("sequential", "reduce_sequential", "halve the span: threads t < k add s[t + k] (whole warps retire)"),
    ("first add", "reduce_first_add", "the first add while loading: two elements a thread, half the blocks"),
    ("shuffle", "reduce_shuffle", "a grid-stride sum in registers, then warp shuffles (reduce.cuh)"),
    ("vector", "reduce_vector", "the same with 16-byte loads (float4)"),
)
KERNEL = {name: k for name, k, _ in RUNGS}
WHAT = {name: w for name, _k, w in RUNGS}
#: The rungs whose traced build records the tree, step by step.
TREE_RUNGS = ("interleaved", "strided", "sequential")


def rung(name) -> str:
    """The kernel of rung ``name``; ValueError naming the rungs."""
    if name not in KERNEL:
        raise ValueError(f"rung must be one of {list(KERNEL)}, got {name!r}")
    return KERNEL[name]


def check_block(block, tree: bool = True) -> int:
    """``block`` as an int, a power of two 2..1024 for the tree rungs (TypeError / ValueError naming it)."""
    block = check_int("block", block, 1, 1024)
    if tree and (block < 2 or block & (block - 1)):
        raise ValueError(f"block must be a power of two in 2..1024 for the tree rungs (their halving drops a slot "
                         f"of an odd span; notebook 08 shows it at 96 threads), got {block}")
    return block


#: Values each thread of the grid-stride rungs (5-6) sums at least, when the grid is not given.
PER_THREAD = 8


def grid_for(name: str, n: int, block: int, blocks: Optional[int] = None) -> int:
    """Blocks the rung launches for n values: n / block (rungs 1-3), n / 2 block (rung 4), or
    ``blocks`` (rungs 5-6; default n / (PER_THREAD x block), at most 1024: each thread sums a slice)."""
    if name in TREE_RUNGS:
        return max(1, -(-n // block))
    if name == "first add":
        return max(1, -(-n // (2 * block)))
    return blocks or max(1, min(1024, n // (PER_THREAD * block)))


def steps(name: str, block: int, line=None) -> list:
    """One step per level of the tree."""
    out = []
    levels = block.bit_length() - 1
    for s in range(levels):
        k = (1 << s) if name in ("interleaved", "strided") else block >> (s + 1)
        out.append(Step(f"step {s + 1} of {levels}: pairs {k} apart", name, line, {"step": s, "k": k}))
    return out


def trace(x: np.ndarray, rung_name: str = "sequential", block: int = 64, *, line=None, seed=None) -> Trace:
    """Launch the traced ``rung_name`` (one of :data:`TREE_RUNGS`) as one block of ``block`` threads
    over ``x`` (block values) and return the tree: ``adds`` (int32 [steps, block]: 1 where thread t
    added in that step), ``slots`` (float32 [steps, block]: the sum written into slot d in that step,
    NaN where none was), ``x`` and ``total``.

    Raises:
        ValueError: a rung without a recorded tree, or a block that is not a power of two.
        TypeError: x not float32 [block].  GPUUnavailable in CPU mode (outside the emulator).
        AssertionError: the total differs from the float64 sum beyond float32's rounding.
    """
    if rung_name not in TREE_RUNGS:
        raise ValueError(f"rung must be one of {TREE_RUNGS} (the tree rungs, whose steps are recorded), got "
                         f"{rung_name!r}")
    block = check_block(block)
    x = np.asarray(x)
    if x.dtype != np.float32 or x.shape != (block,):
        raise TypeError(f"x must be a 1-D float32 array of block = {block} values, got {x.dtype} of shape {x.shape}")
    cp = backend.require_cupy("the traced reduction ladder")
    levels = block.bit_length() - 1
    adds = cp.zeros(levels * block, cp.int32)
    slots = cp.full(levels * block, np.nan, cp.float32)
    out = cp.full(1, np.nan, cp.float32)
    kernels.bind_record(kernels.load(FILE, traced=True), [("adds", adds), ("slots", slots)])
    kernels.function(FILE, KERNEL[rung_name], traced=True)((1,), (block,), (cp.asarray(x), out, np.int64(block)),
                                                           shared_mem=4 * block)
    total = float(out.get()[0])
    check_total(f"{rung_name} over {block} values", total, x, depth=block.bit_length())
    return Trace(kernel=KERNEL[rung_name], params={"rung": rung_name, "block": block, "steps": levels, "seed": seed},
                 arrays={"x": x.copy(), "adds": adds.get().reshape(levels, block),
                         "slots": slots.get().reshape(levels, block), "total": np.array([total], np.float32)},
                 source=GPU_SOURCE, provenance=backend.live_label(), steps=steps(rung_name, block, line))


def tolerance(x: np.ndarray, depth: Optional[int] = None) -> float:
    """How far a float32 sum of ``x`` may be from the float64 one: each value passes through at most
    ``depth`` float32 additions, each rounding by at most 2^-24 of what it adds up, so the error is at
    most depth x 2^-24 x sum|x| (to first order; doubled for safety).  ``depth`` defaults to a
    tree's, ceil(log2 n) + 1."""
    n = max(int(x.size), 1)
    depth = depth if depth is not None else int(np.ceil(np.log2(n))) + 1
    return float(2 * depth * 2.0 ** -24 * np.abs(x.astype(np.float64)).sum()) + 1e-30


def exact_inputs(n: int, seed: int = 0) -> np.ndarray:
    """n float32 integers in [-4, 4]: every partial sum a rung makes (up to 2^22 values) is exact in
    float32, so a right rung's sum equals the float64 one exactly and a lost value always shows."""
    return np.random.default_rng(seed).integers(-4, 5, n).astype(np.float32)


def check_total(what: str, total: float, x: np.ndarray, exact: bool = False, depth: Optional[int] = None) -> None:
    """AssertionError unless ``total`` is the float64 sum of x: exactly (``exact``: x from
    :func:`exact_inputs`), or within :func:`tolerance`."""
    want = float(x.astype(np.float64).sum())
    if exact:
        if total != want:
            raise AssertionError(f"{what}: the sum is {total!r}, float64 says {want!r} (the inputs are integers: "
                                 "every partial is exact, so they must be equal)")
        return
    tol = tolerance(x, depth)
    if not abs(total - want) <= tol:
        raise AssertionError(f"{what}: the sum is {total!r}, float64 says {want!r} (tolerance {tol:.3g})")


def run(x, rung_name: str, block: int = 256, blocks: Optional[int] = None) -> Dict:
    """Launch rung ``rung_name`` (untraced) over x (a device float32 array of n values) once:
    ``{"partials": host array, "total": float64 sum of the partials, "grid": blocks}``.

    Raises:
        ValueError: a tree rung at a block that is not a power of two.  GPUUnavailable in CPU mode.
    """
    kernel = rung(rung_name)
    block = check_block(block, tree=rung_name not in ("shuffle", "vector"))
    cp = backend.require_cupy("the reduction ladder")
    n = int(x.size)
    grid = grid_for(rung_name, n, block, blocks)
    out = cp.full(grid, np.nan, cp.float32)
    shared = 4 * block if rung_name not in ("shuffle", "vector") else 0
    kernels.function(FILE, kernel)((grid,), (block,), (x, out, np.int64(n)), shared_mem=shared)
    partials = out.get()
    return {"partials": partials, "total": float(partials.astype(np.float64).sum()), "grid": grid}
