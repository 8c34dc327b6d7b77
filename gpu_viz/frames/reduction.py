"""Trace -> frames for notebook 09's fault b: the seed write-up's halving tree (and its fix), level
by level, the partials that never reach the total drawn in red.

Data path: ``gpu_viz.record.reduction.seed_reduce`` / ``gpu_viz.model.reduction.seed_reduce`` -->
:func:`frames` --> :func:`animation` (the tree's source beside it).
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from .. import kernels
from ..model import reduction as model
from ..widgets import Animation, Frame, figure_png

WARP = model.WARP


def source(corrected: bool) -> "kernels.Snippet":
    """The tree's code: our reconstruction of the seed's (``seed_tree``) or the fix (``fixed_tree``)."""
    return kernels.snippet(model.FILE, "fixed_tree" if corrected else "seed_tree")


def frames(partials, result: Dict[str, np.ndarray], corrected: bool, dpi: int = 72) -> List[Frame]:
    """Frames of the seed's reduction (or the fix): the slots after each tree level, what warp 0 read,
    the lost partials in red.  ``result`` from ``gpu_viz.record.reduction.seed_reduce`` or ``model.seed_reduce``."""
    import matplotlib.pyplot as plt

    p = np.asarray(partials, dtype=np.float32)
    B = p.size
    weight = result["weight"] if "weight" in result else model.seed_reduce(p, corrected)["weight"]  # GPU results have none
    snip = source(corrected)
    levels = [lv for lv in result["levels"] if np.isfinite(lv).any()]
    states = [("partials in shared[tid]", p, None)]
    s = B >> 1
    n = B
    for k, lv in enumerate(levels):
        if corrected:
            half = (n + 1) >> 1
            states.append((f"tree level {k + 1}: slots 0..{n - half - 1} += slots {half}..{n - 1}", lv, half))
            n = half
        else:
            states.append((f"tree level {k + 1}: s = {s}: slots 0..{s - 1} += slots {s}..{2 * s - 1}", lv, s))
            s >>= 1
    lost = np.flatnonzero(weight == 0)
    total = result["out"][0]
    captions = [c for c, _, _ in states] + [
        "warp finish: lanes 0..31 read shared[0..31], then 5 shuffles",
        f"total = {total:g}" + (f": {lost.size} of {B} partials never arrived" if lost.size
                                else ": every partial counted once")]
    last_live = B if corrected else (states[-1][2] or B)   # slots still holding partials before the finish
    frames_: List[Frame] = []
    for i, cap in enumerate(captions):
        fig, axes = plt.subplots(2, 1, figsize=(9, 3.2), gridspec_kw=dict(height_ratios=[1.3, 1]))
        ax = axes[0]
        vals = states[min(i, len(states) - 1)][1]
        colors = np.array(["#9ecae1"] * B, dtype=object)
        if i >= len(states):
            colors[:] = "#dddddd"
            colors[: min(WARP, B)] = "#2ca02c"
            if not corrected and last_live > WARP:
                colors[WARP:last_live] = "#d62728"
                ax.text((WARP + last_live) / 2, float(np.nanmax(vals)) * 0.5, f"slots {WARP}..{last_live - 1}:\nnever read",
                        ha="center", va="center", fontsize=8, color="white", fontweight="bold")
        ax.bar(np.arange(B), vals, color=list(colors), width=1.0, edgecolor="white", linewidth=0.3)
        ax.set_xlim(-0.5, B - 0.5)
        ax.set_title(cap, fontsize=9, loc="left")
        ax.set_ylabel("shared[slot]", fontsize=7)
        ax.tick_params(labelsize=6)
        ax2 = axes[1]
        if i == len(captions) - 1:
            wc = np.where(weight == 0, "#d62728", np.where(weight == 1, "#2ca02c", "#ff7f0e"))
            ax2.bar(np.arange(B), np.maximum(weight, 0.15), color=list(wc), width=1.0)
            ax2.set_title("how many times each thread's partial reaches the total (red = lost)", fontsize=8, loc="left")
        else:
            ax2.bar(np.arange(B), np.ones(B), color="#eeeeee", width=1.0)
            ax2.set_title("thread -> total: shown at the end", fontsize=8, loc="left", color="#888")
        ax2.set_xlim(-0.5, B - 0.5)
        ax2.set_ylim(0, 2.2)
        ax2.set_xlabel("thread / slot", fontsize=7)
        ax2.tick_params(labelsize=6)
        fig.tight_layout()
        line = snip.line_of("shared[tid] = __fadd_rn") if 0 < i < len(states) else None
        frames_.append(Frame(png=figure_png(fig, dpi=dpi, tight=False), caption=cap, line=line))
    return frames_


def animation(partials, result: Dict[str, np.ndarray], corrected: bool, provenance: str) -> Animation:
    """Player for :func:`frames`, with the tree's source (our reconstruction or the fix)."""
    B = np.asarray(partials).size
    title = (f"The fixed halving-tree reduction at {B} threads" if corrected else
             f"The seed write-up's halving-tree reduction at {B} threads (our reconstruction from its description)")
    return Animation(frames(partials, result, corrected), title=title, provenance=provenance,
                     source=source(corrected).text)
