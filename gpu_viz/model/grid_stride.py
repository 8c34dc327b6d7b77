"""CPU model of ``kernels/grid_stride.cu`` (notebook 06): which thread handled which element, on
which pass -- the same Trace as ``gpu_viz.record.grid_stride``.

The model runs the grid-stride loop itself, one pass at a time for all T = grid * block threads
(pass p: thread t takes i = t + p * T while i < n), in float32 with the kernel's rounding (one FMUL), so
every field is deterministic and a GPU test asserts model == silicon bit for bit.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from .. import backend
from ..check import check_f32
from ..trace import MODEL_SOURCE, Step, Trace
from ..words import count

#: What the deck shows: 2048 elements, 1024 threads.
DECK_N, DECK_THREADS = 2048, 1024


def check_shape(n: int, grid: int, block: int) -> Tuple[int, int, int]:
    """Validate a grid-stride launch; return ``(n, grid, block)`` as Python ints (numpy integers
    would wrap: ``np.int32(2**22) * 1024`` is 0 threads).

    Raises:
        TypeError / ValueError naming the argument and what was expected.
    """
    for name, v in (("n", n), ("grid", grid), ("block", block)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    n, grid, block = int(n), int(grid), int(block)
    if n < 0:
        raise ValueError(f"n must be >= 0 elements, got {n}")
    if n >= 2**31:
        raise ValueError(f"n must be < 2**31 (trace arrays are int32-indexed), got {n}")
    if not 1 <= block <= 1024:
        raise ValueError(f"block must be 1..1024 threads (CUDA's per-block cap), got {block}")
    if not 1 <= grid <= 2**31 - 1:
        raise ValueError(f"grid must be 1..2**31-1 blocks, got {grid}")
    return n, grid, block


def passes(n: int, threads: int) -> int:
    """Trips round the loop the busiest thread makes: ceil(n / threads) (0 when n == 0)."""
    return -(-n // threads)


def grid_stride_steps(n: int, grid: int, block: int, body_line=None, loop_line=None) -> list:
    """Player steps: the launch, then one step per pass."""
    T = grid * block
    steps = [Step(f"launch: {count(grid, 'block')} x {block} threads = {T} threads for {n} elements",
                  "grid_stride", loop_line, {"pass": -1})]
    for p in range(passes(n, T)):
        lo, hi = p * T, min(n, (p + 1) * T) - 1
        busy = hi - lo + 1
        steps.append(Step(f"pass {p}: {count(busy, 'thread')} handle elements {lo}..{hi}"
                          + ("" if busy == T else f"; {count(T - busy, 'thread')} find i >= n and leave the loop"),
                          "grid_stride", body_line, {"pass": p}))
    return steps


def as_f32(name: str, x) -> np.ndarray:
    """``x`` checked to be a 1-D float32 array (TypeError naming ``name`` otherwise)."""
    x = np.asarray(x)
    if x.ndim != 1 or x.dtype != np.float32:
        raise TypeError(f"{name} must be a 1-D float32 array, got shape {x.shape} dtype {x.dtype}")
    return x


def params(n: int, grid: int, block: int, alpha, seed=None) -> dict:
    """The Trace's ``params`` (both producers)."""
    return {"n": n, "grid": grid, "block": block, "threads": grid * block, "passes": passes(n, grid * block),
            "alpha": float(np.float32(alpha)), "seed": seed}


def trace(x: np.ndarray, alpha: float = 2.0, grid: int = 1, block: int = DECK_THREADS, *,
          body_line=None, loop_line=None, seed=None) -> Trace:
    """Model of the traced ``scale_grid_stride``.

    Args:
        x: float32 [n] input (n >= 0).
        alpha: the scale (rounded to float32 like the kernel's float argument).
        grid, block: the launch shape; T = grid * block threads.

    Returns:
        Trace with x, y: float32 [n]; block, thread, pass: int32 [n] (who handled element i, on
        which trip round the loop); visits: int32 [n] (how many times it was handled: 1).
    """
    x = as_f32("x", x)
    n = x.shape[0]
    n, grid, block = check_shape(n, grid, block)
    T = grid * block
    a32 = check_f32("alpha", alpha)
    y = np.full(n, np.nan, np.float32)
    blk = np.full(n, -1, np.int32)
    thr = np.full(n, -1, np.int32)
    pss = np.full(n, -1, np.int32)
    visits = np.zeros(n, np.int32)
    t = np.arange(T, dtype=np.int64)
    for p in range(passes(n, T)):          # the loop, all threads in lock step
        i = t + p * T
        live = i < n
        i, tl = i[live], t[live]
        y[i] = (a32 * x[i]).astype(np.float32)
        blk[i] = tl // block
        thr[i] = tl % block
        pss[i] = p
        visits[i] += 1
    return Trace(kernel="scale_grid_stride", params=params(n, grid, block, a32, seed),
                 arrays={"x": x.copy(), "y": y, "block": blk, "thread": thr, "pass": pss, "visits": visits},
                 source=MODEL_SOURCE, provenance=backend.MODEL_LABEL,
                 steps=grid_stride_steps(n, grid, block, body_line, loop_line))
