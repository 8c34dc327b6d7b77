"""Trace -> frames for notebook 06: the elements a grid-stride loop covers, pass by pass.

Data path: ``gpu_viz.record.grid_stride`` / ``gpu_viz.model.grid_stride`` --> :class:`gpu_viz.trace.Trace`
--> frames here (one per Step: the launch, then each pass) --> :class:`gpu_viz.widgets.Animation`.
Each element is a cell, coloured by the global thread (block * blockDim + thread) that handled
it: the same colours repeat pass after pass because the same threads come round again.
"""
from __future__ import annotations

import numpy as np

from ..trace import Trace
from ..widgets import Animation, render_frames

#: Elements drawn at most (the figure is one cell per element).
MAX_DRAWN = 16384


def layout_width(n: int) -> int:
    """Cells per row: 64 for the deck's 2048 (32 rows), wider for larger n."""
    return 64 if n <= 4096 else 128


def figure(trace: Trace, frame: int):
    """Step ``frame``: passes before it faded, its pass bright, later passes blank."""
    import matplotlib.pyplot as plt

    n = trace.params["n"]
    if n > MAX_DRAWN:
        raise ValueError(f"grid_stride.figure draws at most {MAX_DRAWN} elements, the trace has n={n}")
    step = trace.steps[frame]
    p = step.data["pass"]
    T = trace.params["threads"]
    width = layout_width(max(n, 1))
    rows = max(1, -(-n // width))
    gthread = trace["block"].astype(np.int64) * trace.params["block"] + trace["thread"]
    cmap = plt.get_cmap("turbo")
    img = np.ones((rows * width, 3))
    if n:
        col = cmap((gthread % T) / max(T - 1, 1))[:, :3]
        cur = trace["pass"] == p
        old = (trace["pass"] < p) & (trace["pass"] >= 0)
        img[:n][cur] = col[cur]
        img[:n][old] = 0.25 * col[old] + 0.75
    img[n:] = (0.6, 0.6, 0.6)   # past the end of the array
    height = 1.2 + 0.13 * rows
    fig = plt.figure(figsize=(9, height))
    ax = fig.add_axes([0.08, 0.04, 0.9, 1 - 0.75 / height - 0.05])
    ax.imshow(img.reshape(rows, width, 3), aspect="auto", interpolation="nearest")
    ax.set_yticks(range(0, rows, max(1, rows // 8)))
    ax.set_yticklabels([str(r * width) for r in range(0, rows, max(1, rows // 8))], fontsize=7)
    ax.set_xticks([0, width - 1]); ax.set_xticklabels(["+0", f"+{width - 1}"], fontsize=7)
    ax.set_ylabel("element", fontsize=8)
    fig.suptitle(step.label + f"\ncolour = the global thread id (0..{T - 1}) that handled the element; "
                 "faded = earlier passes, grey = past the end", fontsize=8, x=0.06, ha="left")
    return fig


def animation(trace: Trace, source: str, dpi: int = 70) -> Animation:
    """Animation, pass by pass, of a grid-stride trace; ``source`` = region ``grid_stride``'s text."""
    steps = trace.steps
    frames = render_frames(lambda i: figure(trace, i), len(steps), [s.label for s in steps],
                           [s.line for s in steps], dpi=dpi, tight=False)
    p = trace.params
    return Animation(frames, title=f"{p['n']} elements, {p['grid']} x {p['block']} = {p['threads']} threads: "
                                   f"{p['passes']} pass(es)", provenance=trace.provenance, source=source)
