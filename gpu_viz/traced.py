"""What every traced producer shares (gpu_viz.simt, gpu_viz.gridstride, gpu_viz.scheduling).

Data path: instrumented kernel in ``kernels/`` --(a producer: poison the buffers, launch, read
back, check)--> :class:`gpu_viz.trace.Trace`; without a GPU the producer asks ``gpu_viz.model``
for the same Trace.  Here: fresh random inputs, the comparison helpers (they name the buffer,
the index and both values), and the source-line lookup of the steps.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence

import numpy as np

from . import kernels


def rng(seed: Optional[int] = None) -> np.random.Generator:
    """A generator seeded with ``seed``, or with fresh OS entropy when ``seed`` is None."""
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    return np.random.default_rng(seed)


def random_f32(n: int, seed: Optional[int] = None, scale: float = 1.0) -> np.ndarray:
    """Fresh random float32 [n] values (standard normal x scale): never zeros, never a pattern."""
    return (rng(seed).standard_normal(n) * scale).astype(np.float32)


def region_lines(file: str, region: str, needles: Sequence[str]) -> list:
    """1-based line, within ``kernels.snippet(file, region)``, of the first line containing each needle."""
    snip = kernels.snippet(file, region)
    return [snip.line_of(nd) for nd in needles]


def check_close(name: str, got, ref, *, atol: float = 0.0, rtol: float = 0.0, limit: int = 5) -> None:
    """Raise AssertionError unless ``|got - ref| <= atol + rtol * |ref|`` everywhere (NaN never passes).

    Args:
        name: the buffer's name, shown in the message.
        got: the kernel's output (any shape; compared as float64).
        ref: the float64 reference, same shape.
    """
    g = np.asarray(got, np.float64)
    r = np.asarray(ref, np.float64)
    if g.shape != r.shape:
        raise AssertionError(f"{name}: shape {g.shape} but the reference has {r.shape}")
    bad = ~(np.abs(g - r) <= atol + rtol * np.abs(r))
    if bad.any():
        idx = np.argwhere(bad)
        shown = ", ".join(f"{tuple(int(k) for k in i)}: got {g[tuple(i)]!r} want {r[tuple(i)]!r}"
                          for i in idx[:limit])
        nan = int(np.isnan(g).sum())
        raise AssertionError(f"{name}: {len(idx)} of {g.size} outside atol={atol} rtol={rtol} "
                             f"({nan} NaN: never written?); first {shown}")


def check_equal(name: str, got, want, limit: int = 5) -> None:
    """Raise AssertionError unless the integer arrays ``got`` and ``want`` are equal."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        raise AssertionError(f"{name}: shape {g.shape} but expected {w.shape}")
    bad = np.argwhere(g != w)
    if len(bad):
        shown = ", ".join(f"{tuple(int(k) for k in i)}: got {g[tuple(i)]!r} want {w[tuple(i)]!r}"
                          for i in bad[:limit])
        raise AssertionError(f"{name}: {len(bad)} of {g.size} differ; first {shown}")
