"""Trace -> frames for notebook 06: the elements a grid-stride loop covers, pass by pass.

Data path: ``gpu_viz.record.grid_stride`` / ``gpu_viz.model.grid_stride`` --> :class:`gpu_viz.trace.Trace`
--> frames here (SVG, one per Step: the launch, then each pass) --> :class:`gpu_viz.widgets.Animation`.
Each element is a cell, lit by the global thread (block * blockDim + thread) that handled it,
from blue (thread 0) to orange (the last thread): the same colours come round pass after pass
because the same threads do.  The current pass is bright, earlier passes faded, later ones empty.
"""
from __future__ import annotations

import numpy as np

from ..trace import Trace
from ..widgets import Animation, Frame, svg
from ..words import count

#: Elements drawn at most (the drawing is one cell per element).
MAX_DRAWN = 16384
#: Thread colours: blue for thread 0 to orange for the last (Okabe-Ito ends; the legend names them).
LOW, HIGH = svg.BLUE, svg.ORANGE
_LEFT, _TOP = 78, 34


def layout_width(n: int) -> int:
    """Cells per row: 64 for the deck's 2048 (32 rows), wider for larger n."""
    return 64 if n <= 4096 else 128


def _runs(gthread: np.ndarray, pss: np.ndarray, lo: int, hi: int):
    """(start, end) index runs in [lo, hi) where the pass is the same and the thread goes up by one
    (one gradient rect each: a run's colours are a straight line from its first thread's to its last's)."""
    if hi <= lo:
        return []
    g, p = gthread[lo:hi], pss[lo:hi]
    brk = np.nonzero((np.diff(g) != 1) | (np.diff(p) != 0))[0] + 1
    edges = np.concatenate([[0], brk, [hi - lo]])
    return [(lo + int(a), lo + int(b)) for a, b in zip(edges[:-1], edges[1:])]


def drawing(trace: Trace, frame: int) -> str:
    """SVG of step ``frame``: the array as rows of cells, each lit by its thread.

    Raises:
        ValueError: the trace has more than :data:`MAX_DRAWN` elements.
    """
    n = trace.params["n"]
    if n > MAX_DRAWN:
        raise ValueError(f"grid_stride.drawing draws at most {MAX_DRAWN} elements, the trace has n={n}")
    cur = trace.steps[frame].data["pass"]
    T = trace.params["threads"]
    width = layout_width(max(n, 1))
    rows = max(1, -(-n // width))
    cw = (svg.WIDTH - _LEFT - 8) / width
    rh = min(12.0, (svg.HEIGHT - _TOP - 60) / rows)
    gthread = trace["block"].astype(np.int64) * trace.params["block"] + trace["thread"]
    pss = trace["pass"].astype(np.int64)
    d = svg.Svg(height=int(_TOP + rows * rh + 60))
    colour = lambda t: svg.lerp_colour(LOW, HIGH, t / max(T - 1, 1))  # noqa: E731
    label_every = max(1, int(np.ceil(22 / rh)))
    for r in range(rows):
        y = _TOP + r * rh
        lo, hi = r * width, min(n, (r + 1) * width)
        d.rect(_LEFT, y, width * cw, rh - 1, fill="#FFFFFF", stroke=svg.LIGHT, sw=0.5, rx=0)
        if hi - lo < width:                     # past the end of the array
            d.rect(_LEFT + (hi - lo) * cw, y, (width - (hi - lo)) * cw, rh - 1, fill=svg.GREY, rx=0)
        for a, b in _runs(gthread, pss, lo, hi):
            p = int(pss[a])
            if p < 0 or p > cur:
                continue                        # not visited yet
            x0, x1 = _LEFT + (a - lo) * cw, _LEFT + (b - lo) * cw
            gid = svg.Svg.new_id("gs")
            d.defs(f'<linearGradient id="{gid}" gradientUnits="userSpaceOnUse" x1="{x0:.1f}" x2="{x1:.1f}" '
                   f'y1="0" y2="0"><stop offset="0" stop-color="{colour(int(gthread[a]))}"/>'
                   f'<stop offset="1" stop-color="{colour(int(gthread[b - 1]))}"/></linearGradient>')
            d.rect(x0, y, x1 - x0, rh - 1, fill=f"url(#{gid})", rx=0, opacity=1.0 if p == cur else 0.3)
        if r % label_every == 0:
            d.text(_LEFT - 6, y + min(rh, 16) / 2 + 7, str(lo), anchor="end", fill=svg.MUTED)
    bad = np.nonzero(trace["visits"] != 1)[0] if n else np.array([], np.int64)
    for i in bad[:256]:                         # an element visited twice or never: a vermillion box
        r, c = divmod(int(i), width)
        d.rect(_LEFT + c * cw - 1, _TOP + r * rh - 1, cw + 2, rh + 1, fill="none", stroke=svg.VERMILLION, sw=2, rx=0)
    if cur < 0:
        head = f"launch: {T} threads, {n} elements, nothing visited yet"
    else:
        sel = pss == cur
        head = (f"pass {cur}: threads 0..{int(sel.sum()) - 1} handle elements {cur * T}.."
                f"{cur * T + int(sel.sum()) - 1} (bright); earlier passes faded")
    d.text(8, 22, head, weight="bold")
    yb = _TOP + rows * rh + 16
    gid = svg.Svg.new_id("gs")
    d.defs(f'<linearGradient id="{gid}"><stop offset="0" stop-color="{LOW}"/><stop offset="1" '
           f'stop-color="{HIGH}"/></linearGradient>')
    d.text(8, yb + 18, "thread 0", fill=svg.INK)
    d.rect(96, yb + 2, 260, 20, fill=f"url(#{gid})", stroke=svg.MUTED)
    d.text(364, yb + 18, f"thread {T - 1}")
    if bad.size:
        d.text(520, yb + 18, f"✗ {bad.size} element(s) not visited once", fill=svg.VERMILLION, weight="bold")
    elif rows * width > n:
        d.legend(560, yb + 18, [(svg.GREY, "past the end")])
    return d.markup()


def animation(trace: Trace, source: str) -> Animation:
    """Animation, pass by pass, of a grid-stride trace; ``source`` = region ``grid_stride``'s text.

    Raises:
        ValueError: more than :data:`MAX_DRAWN` elements (the player draws one cell per element).
    """
    steps = trace.steps
    frames = [Frame(drawing(trace, i), s.label, s.line) for i, s in enumerate(steps)]
    p = trace.params
    return Animation(frames, title=f"{p['n']} elements, {p['grid']} x {p['block']} = {p['threads']} threads: "
                                   f"{count(p['passes'], 'pass')}", provenance=trace.provenance, source=source)
