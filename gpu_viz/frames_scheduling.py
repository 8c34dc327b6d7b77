"""Trace -> figures for notebook 07: blocks on SMs over time, and the hardware queue draining.

Data path: :func:`gpu_viz.scheduling.scheduling_trace` --> :class:`gpu_viz.trace.Trace` -->
:func:`timeline_figure` (one static picture) and :func:`queue_animation` (frames at successive
instants) --> :class:`gpu_viz.widgets.player.Animation`.
Bars are coloured by launch order in groups of (SMs x resident blocks per SM): the waves.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .frames_simt import fast_frames
from .trace import Trace
from .widgets.player import Animation


def _wave_of(trace: Trace) -> np.ndarray:
    p = trace.params
    per_wave = p["sm_count"] * p["resident_blocks_per_sm"]
    return np.arange(p["blocks"]) // per_wave


def timeline_figure(trace: Trace, until_ns: Optional[float] = None, title: str = ""):
    """Blocks as bars: y = SM, x = time (µs) from the first block's start.

    ``until_ns``: draw the state at that instant (running blocks cut there, unstarted ones absent).
    """
    import matplotlib.pyplot as plt

    p = trace.params
    t0 = trace["t_start"].astype(np.float64)
    t1 = trace["t_end"].astype(np.float64)
    sm = trace["smid"].astype(np.int64)
    wave = _wave_of(trace)
    end = t1 if until_ns is None else np.minimum(t1, until_ns)
    show = np.ones(len(t0), bool) if until_ns is None else t0 <= until_ns
    n_sm = p["sm_count"]
    r = max(1, int(p["resident_blocks_per_sm"]))
    # stack co-resident blocks inside an SM's row: slot = order among the SM's blocks mod r
    slot = np.zeros(len(t0))
    for s in np.unique(sm):
        idx = np.nonzero(sm == s)[0]
        idx = idx[np.argsort(t0[idx], kind="stable")]
        slot[idx] = np.arange(len(idx)) % r
    cmap = plt.get_cmap("tab10")
    # rasterise: one image row per (SM, slot), one column per time bin -- one artist, fast to draw
    span = max(1.0, float(t1.max()) * 1.02)
    bins = 900
    rows = n_sm * r
    img = np.ones((rows, bins, 3))
    img[np.arange(rows) % r == r - 1] = 0.97 if r > 1 else 1.0
    c0 = np.floor(t0 / span * bins).astype(np.int64)
    c1 = np.maximum(c0 + 1, np.ceil(end / span * bins).astype(np.int64))
    row = (sm * r + slot).astype(np.int64)
    for b in np.nonzero(show)[0]:
        img[row[b], c0[b]:c1[b]] = cmap(int(wave[b]) % 10)[:3]
    fig, ax = plt.subplots(figsize=(10, 4.6))
    ax.imshow(img, aspect="auto", interpolation="nearest", extent=(0, span / 1e3, n_sm - 0.5, -0.5))
    ax.set_xlabel("time since the first block started (µs)")
    ax.set_ylabel(f"SM (%smid), {n_sm} SMs")
    if until_ns is not None:
        ax.axvline(until_ns / 1e3, color="k", lw=1)
        queued = int((t0 > until_ns).sum())
        running = int(((t0 <= until_ns) & (t1 > until_ns)).sum())
        done = int((t1 <= until_ns).sum())
        ax.text(0.99, 0.02, f"in the queue: {queued}   running: {running}   done: {done}",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=9,
                bbox=dict(fc="white", ec="#999"))
    ax.set_title(title or f"{p['blocks']} blocks x {p['threads']} threads, colour = wave "
                          f"(launch order / ({n_sm} SMs x {r} resident))", fontsize=9, loc="left")
    fig.text(0.01, 0.005, "Data: " + trace.provenance[:160], fontsize=7, color="#555")
    fig.tight_layout()
    return fig


def queue_animation(trace: Trace, source: Optional[str] = None, frames: int = 10, dpi: int = 65) -> Animation:
    """The hardware queue draining: ``frames`` instants from the launch to the last block's end."""
    t1 = float(trace["t_end"].max())
    times = np.linspace(0, t1, frames)
    t0 = trace["t_start"]
    caps = [f"t = {t / 1e3:.1f} µs: {int((t0 > t).sum())} block(s) still wait in the queue" for t in times]
    pics = fast_frames(lambda i: timeline_figure(trace, until_ns=float(times[i])), frames, caps, dpi=dpi)
    p = trace.params
    return Animation(pics, title=f"{p['blocks']} blocks on {p['sm_count']} SMs: the queue drains in waves",
                     provenance=trace.provenance, source=source)


def show_figure(fig, dpi: int = 80) -> None:
    """Display a matplotlib figure as a PNG whatever the backend (Agg included), then close it."""
    from IPython.display import Image, display

    from .widgets.player import figure_png

    display(Image(data=figure_png(fig, dpi=dpi), format="png"))
