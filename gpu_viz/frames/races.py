"""Trace -> frames for notebook 08's races: the distribution of one launch's outcomes over many runs.

Data path: ``gpu_viz.record.races`` (on a GPU: the silicon's runs; in CPU mode: the emulator's,
each run its own seeded warp interleaving) --> :class:`gpu_viz.trace.Trace` (one outcome per run) -->
frames here (a bar per outcome, the runs so far) --> :class:`gpu_viz.widgets.Animation`.

An outcome is the histograms' counts lost (n - the sum of the bins: 0 when every count landed) or
the reversals' wrong elements.  A correct kernel has one bar, at 0, however many runs.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from ..trace import Trace
from ..widgets import Animation, Frame, Still, svg

_X0, _Y0, _W, _H = 70, 50, 670, 230
#: How many runs each frame has counted (then every run's frame up to the last).
CHECKPOINTS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
MAX_BARS = 24


def outcomes(trace: Trace) -> np.ndarray:
    """One outcome per run (int64): counts lost, or wrong elements."""
    if "counted" in trace.arrays:
        return trace.params["n"] - trace["counted"].astype(np.int64)
    if "wrong" in trace.arrays:
        return trace["wrong"].astype(np.int64)
    raise KeyError("counted")


def what(trace: Trace) -> str:
    """What an outcome counts, in words."""
    return "counts lost" if "counted" in trace.arrays else "elements wrong"


def summary(trace: Trace) -> Dict:
    """``runs``, ``right`` (runs with outcome 0), ``distinct`` outcomes, ``min``, ``median``, ``max``."""
    o = outcomes(trace)
    return {"kernel": trace.kernel, "runs": int(o.size), "right": int((o == 0).sum()), "distinct": int(np.unique(o).size),
            "min": int(o.min()), "median": float(np.median(o)), "max": int(o.max()), "what": what(trace)}


def _bins(o: np.ndarray):
    """Bar edges: one bar per outcome when there are few, else equal-width bins (at most MAX_BARS)."""
    lo, hi = int(o.min()), int(o.max())
    if hi - lo + 1 <= MAX_BARS:
        return np.arange(lo, hi + 2)
    width = -(-(hi - lo + 1) // MAX_BARS)
    return np.arange(lo, hi + width + 1, width)


def drawing(trace: Trace, runs: int, edges: Optional[np.ndarray] = None, ymax: Optional[int] = None) -> str:
    """SVG of the distribution of the first ``runs`` outcomes (bars over ``edges``; axes fixed by
    ``edges`` and ``ymax`` so that frames of one player compare)."""
    o = outcomes(trace)
    edges = _bins(o) if edges is None else edges
    counts, _ = np.histogram(o[:runs], bins=edges)
    ymax = int(ymax or max(1, counts.max()))
    d = svg.Svg(height=svg.HEIGHT)
    d.text(_X0 - 60, 26, f"{trace.kernel}: {runs} run{'s' if runs != 1 else ''}", weight="bold")
    d.line(_X0, _Y0 + _H, _X0 + _W, _Y0 + _H, stroke=svg.INK, sw=1.5)
    d.line(_X0, _Y0, _X0, _Y0 + _H, stroke=svg.INK, sw=1.5)
    nb = len(edges) - 1
    bw = _W / nb
    for k in range(nb):
        h = _H * counts[k] / ymax
        zero = edges[k] == 0 and edges[k + 1] == 1
        fill = svg.GREEN if zero else svg.VERMILLION
        if counts[k]:
            d.rect(_X0 + k * bw + 2, _Y0 + _H - h, bw - 4, h, fill=fill, stroke=svg.MUTED, rx=1)
            if bw >= 26:
                d.text(_X0 + k * bw + bw / 2, _Y0 + _H - h - 6, str(int(counts[k])), anchor="middle")
    # x labels: first, last and zero if present
    ticks = {0, nb - 1}
    for k in sorted(ticks):
        lab = (str(int(edges[k])) if edges[k + 1] - edges[k] == 1 else f"{int(edges[k])}-{int(edges[k + 1] - 1)}")
        d.text(_X0 + k * bw + bw / 2, _Y0 + _H + 24, lab, anchor="middle", fill=svg.MUTED)
    d.text(_X0 + _W / 2, _Y0 + _H + 50, f"{what(trace)} in one run", anchor="middle")
    d.text(_X0 - 10, _Y0 + 6, str(ymax), anchor="end", fill=svg.MUTED)
    d.text(_X0 - 10, _Y0 + _H, "0", anchor="end", fill=svg.MUTED)
    d.text(_X0 + _W, 26, "runs per outcome", anchor="end", fill=svg.MUTED)
    right = int((o[:runs] == 0).sum())
    d.text(_X0 - 60, svg.HEIGHT - 8, f"right: {right} of {runs}; distinct outcomes: {np.unique(o[:runs]).size}",
           weight="bold")
    return d.markup()


def animation(trace: Trace, source: Optional[str] = None, *, line: Optional[int] = None) -> Animation:
    """The distribution building up run by run (frames at 1, 2, 3, 5, 10, 20, 50, 100 ... runs)."""
    line = line if line is not None else next((st.line for st in trace.steps if st.line), None)
    o = outcomes(trace)
    edges = _bins(o)
    ymax = int(np.histogram(o, bins=edges)[0].max())
    marks = [c for c in CHECKPOINTS if c < o.size] + [int(o.size)]
    frames = []
    for r in marks:
        s = o[:r]
        cap = (f"after {r} run{'s' if r != 1 else ''}: {what(trace)} from {int(s.min())} to {int(s.max())}"
               + ("; every run right" if not s.any() else f"; {int((s == 0).sum())} run(s) right"))
        frames.append(Frame(drawing(trace, r, edges, ymax), cap, line))
    return Animation(frames, title=f"{trace.kernel}, the same launch {o.size} times: {what(trace)} per run",
                     provenance=trace.provenance, source=source)


def still(trace: Trace) -> Still:
    """The whole distribution, as a picture."""
    s = summary(trace)
    return Still(drawing(trace, s["runs"]), title=f"{trace.kernel}: {s['runs']} runs, {s['right']} right, "
                                                  f"{s['distinct']} distinct outcome(s)", provenance=trace.provenance)
