"""GPU producer of notebook 08's races lesson: one launch of a ``kernels/races.cu`` kernel, run
``runs`` times, and what each run produced.

Data path: ``kernels/races.cu`` --(:func:`trace`: the same launch ``runs`` times, fresh outputs each
time)--> :class:`gpu_viz.trace.Trace` (one outcome per run) --> ``gpu_viz.frames.races`` (the
distribution of outcomes).  On a GPU the runs are the silicon's; inside
:func:`gpu_viz.emulator.emulated` with ``policy="random"`` each launch interleaves the warps with its
own seed (the session's seed + the launch's number), so CPU mode shows a distribution too, labelled
emulated.

Outcomes: the histograms' ``counted`` (sum of the bins: n when no count was lost) and ``bins``
(runs x nbins); the reversals' ``wrong`` (elements of y not equal to x reversed) and ``y`` of the
first run.  Each reversal run reads fresh x (seed + run), so a slot left over from an earlier run
can never pass for the right value.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import backend, kernels
from ..check import check_int
from ..trace import GPU_SOURCE, Step, Trace

FILE = "races.cu"
HISTOGRAMS = ("histogram_racy", "histogram_atomic", "histogram_private")
REVERSALS = ("reverse_racy", "reverse_synced")
KERNELS = HISTOGRAMS + REVERSALS
#: The most runs one trace makes (a GPU does thousands a second; the emulator ~5).
MAX_RUNS = 10_000
#: The largest histogram input and bin count a trace takes.
MAX_KEYS, MAX_BINS = 1 << 20, 4096
#: The most blocks a reversal runs (each block reverses its own blockDim.x elements).
MAX_BLOCKS = 1 << 12


def check_launch(kernel, runs, grid, block, nbins) -> tuple:
    """``(kernel, runs, grid, block, nbins)`` checked (TypeError / ValueError naming the argument)."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    runs = check_int("runs", runs, 1, MAX_RUNS)
    grid = check_int("grid", grid, 1, MAX_BLOCKS)
    block = check_int("block", block, 1, 1024)
    nbins = check_int("nbins", nbins, 1, MAX_BINS)
    return kernel, runs, grid, block, nbins


def reversal_input(seed: int, run: int, n: int) -> np.ndarray:
    """The x of run ``run``: distinct small integers, different in every run (exact in float32)."""
    rng = np.random.default_rng([seed, run])
    return ((rng.permutation(n).astype(np.int64) + run * n) % (1 << 24)).astype(np.float32)


def params(kernel, runs, grid, block, nbins, n, seed) -> dict:
    return {"kernel": kernel, "runs": runs, "grid": grid, "block": block, "nbins": nbins, "n": n,
            "threads": grid * block, "seed": seed}


def trace(keys: Optional[np.ndarray] = None, kernel: str = "histogram_racy", runs: int = 100, grid: int = 8,
          block: int = 128, nbins: int = 256, *, line: Optional[int] = None, seed: Optional[int] = None) -> Trace:
    """Run ``kernel`` ``runs`` times on the same launch and return the outcomes.

    Args:
        keys: the histograms' input (int32 in [0, nbins)); ignored by the reversals (they reverse
            grid * block fresh floats each run).
        kernel: one of :data:`KERNELS`.  runs: how many launches.  grid, block: the launch.
        nbins: the histograms' bins.  line: the source line the player highlights.
        seed: names the reversals' inputs (and the Trace).

    Raises:
        TypeError / ValueError: naming a bad argument.  GPUUnavailable in CPU mode (outside the
        emulator).
    """
    kernel, runs, grid, block, nbins = check_launch(kernel, runs, grid, block, nbins)
    seed = 0 if seed is None else check_int("seed", seed, 0)
    cp = backend.require_cupy("the race runs")
    if kernel in HISTOGRAMS:
        k = np.asarray(keys)
        if k.ndim != 1 or k.dtype != np.int32 or not 1 <= k.size <= MAX_KEYS:
            raise TypeError(f"keys must be a 1-D int32 array of 1..{MAX_KEYS} keys, got {k.dtype} of shape {k.shape}")
        if k.min() < 0 or k.max() >= nbins:
            raise ValueError(f"keys must lie in [0, nbins = {nbins}), got {int(k.min())}..{int(k.max())}")
        dk = cp.asarray(k)
        fn = kernels.function(FILE, kernel)
        bins = np.zeros((runs, nbins), np.int32)
        for r in range(runs):
            db = cp.zeros(nbins, cp.int32)
            if kernel == "histogram_private":
                fn((grid,), (block,), (dk, np.int64(k.size), db, np.int32(nbins)), shared_mem=4 * nbins)
            else:
                fn((grid,), (block,), (dk, np.int64(k.size), db))
            bins[r] = db.get()
        want = np.bincount(k, minlength=nbins).astype(np.int32)
        arrays = {"bins": bins, "counted": bins.sum(axis=1).astype(np.int64), "want": want}
        n = int(k.size)
        label = f"{kernel}: {n} keys into {nbins} bins, {runs} runs"
    else:
        if block > 1024:
            raise ValueError(f"block must be <= 1024 for {kernel} (its shared array), got {block}")
        n = grid * block
        fn = kernels.function(FILE, kernel)
        wrong = np.zeros(runs, np.int64)
        first = None
        for r in range(runs):
            x = reversal_input(seed, r, n)
            dy = cp.full(n, np.nan, cp.float32)
            fn((grid,), (block,), (cp.asarray(x), dy))
            y = dy.get()
            want = x.reshape(grid, block)[:, ::-1].reshape(-1)
            wrong[r] = int((y != want).sum())
            if first is None:
                first = (x, y)
        arrays = {"wrong": wrong, "x0": first[0], "y0": first[1]}
        label = f"{kernel}: {grid} blocks x {block} threads reversed, {runs} runs"
    return Trace(kernel=kernel, params=params(kernel, runs, grid, block, nbins, n, seed), arrays=arrays,
                 source=GPU_SOURCE, provenance=backend.live_label(), steps=[Step(label, kernel, line)])
