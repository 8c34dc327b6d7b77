"""Trace -> frames for notebook 12's fault b: the seed write-up's halving tree (and its fix), level
by level, the partials that never reach the total marked ✗ in vermillion.

Data path: ``gpu_viz.record.reduction.trace`` / ``gpu_viz.model.reduction.trace`` (the lesson
``gpu_viz.lessons.REDUCTION``) --> :class:`gpu_viz.trace.Trace` --> :func:`frames` (SVG: the
shared-memory slots, 32 to a row, with their values) --> :func:`animation` (the tree's source beside it).
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .. import kernels
from ..model import reduction as model
from ..trace import Trace
from ..widgets import Animation, Frame, svg

WARP = model.WARP
#: Threads (slots) drawn at most: four rows of 32 slots.
MAX_DRAWN = 128
_X0, _CW, _CH, _GAP, _TOP = 44, 21, 30, 1, 40
LIVE, READ, LOST, TWICE = "#CDE8F6", "#BFE6D9", "#F6D0BE", svg.YELLOW
#: What each frame highlights in the tree's code: a level's add; after the tree, the line that
#: decides which slots the warp finish reads (the seed's loop stops at 32 slots; the fix keeps ``live``).
_ADD = "shared[tid] += shared[tid +"
_FINISH = {False: "s >= 32", True: "live = n"}


def source(corrected: bool) -> "kernels.Snippet":
    """The tree's code: our reconstruction of the seed's (``seed_tree``) or the fix (``fixed_tree``)."""
    return kernels.snippet(model.FILE, "fixed_tree" if corrected else "seed_tree")


def _line_of(text: str, needle: str) -> Optional[int]:
    """The 1-based line of ``text`` holding ``needle``, or None."""
    return next((i for i, ln in enumerate(text.splitlines(), 1) if needle in ln), None)


def _slots(d: svg.Svg, values, fills, strokes, widths, labels=None) -> float:
    """Slots 32 to a row with their values (blank where a value needs more than 2 characters);
    returns the y below the last row."""
    B = len(values)
    for t in range(B):
        r, c = divmod(t, WARP)
        x, y = _X0 + c * (_CW + _GAP), _TOP + r * (_CH + 6)
        lab = labels[t] if labels is not None else svg.fmt(values[t], 2)
        d.cell(x, y, _CW, _CH, lab if len(lab) <= 2 else "", fill=fills[t], stroke=strokes[t], sw=widths[t])
    rows = -(-B // WARP)
    for r in range(rows):
        d.text(_X0 - 4, _TOP + r * (_CH + 6) + 21, f"{r * WARP}", anchor="end", fill=svg.MUTED)
    return _TOP + rows * (_CH + 6)


def frames(trace: Trace, source_text: Optional[str] = None) -> List[Frame]:
    """Frames of the seed's reduction (or the fix): the slots after each tree level, what warp 0 read,
    the lost partials.  ``trace`` from ``gpu_viz.lessons.REDUCTION`` (either producer); each
    frame highlights its line of ``source_text`` (default: the tree's region, :func:`source`).
    How often each partial reaches the total is counted by the CPU model (the kernel records the
    slots, not where their values came from).

    Raises:
        ValueError: more than :data:`MAX_DRAWN` partials (the player draws one slot per thread).
    """
    corrected = bool(trace.params["corrected"])
    p = np.asarray(trace["partials"], dtype=np.float32)
    B = p.size
    if B > MAX_DRAWN:
        raise ValueError(f"reduction frames draw at most {MAX_DRAWN} threads (slots), got {B} partials")
    weight = model.seed_reduce(p, corrected)["weight"]
    text = source(corrected).text if source_text is None else source_text
    line, finish_line = _line_of(text, _ADD), _line_of(text, _FINISH[corrected])
    levels = [lv for lv in trace["levels"] if np.isfinite(lv).any()]
    out: List[Frame] = []
    plain = ([svg.MUTED] * B, [1.0] * B)

    def frame(head, caption, values, fills, strokes, widths, notes, labels=None, lit=None):
        d = svg.Svg(height=min(svg.HEIGHT, _TOP + 4 * (_CH + 6) + 30 * len(notes) + 10))
        d.text(8, 22, head, weight="bold")
        y = _slots(d, values, fills, strokes, widths, labels)
        for k, (words, colour) in enumerate(notes):
            d.text(8, y + 22 + 28 * k, words, fill=colour)
        out.append(Frame(d.markup(), caption, lit))

    frame("shared[tid] = each thread's partial", "partials in shared[tid]", p, [LIVE] * B, *plain,
          [("slot t holds thread t's partial; the tree halves the live slots each level", svg.INK)])
    n, s = B, B >> 1
    live = B
    for k, lv in enumerate(levels):
        if corrected:
            half = (n + 1) >> 1
            lo, hi = n - half, n
            cap = f"tree level {k + 1}: slots 0..{lo - 1} += slots {half}..{hi - 1}"
            live, n = half, half
            added = lo
        else:
            cap = f"tree level {k + 1}: s = {s}: slots 0..{s - 1} += slots {s}..{2 * s - 1}"
            live, added = s, s
            s >>= 1
        fills = [LIVE if t < live else "#FFFFFF" for t in range(B)]
        strokes = [svg.BLACK if t < added else svg.MUTED for t in range(B)]
        widths = [2.5 if t < added else 1.0 for t in range(B)]
        frame(cap, cap, lv, fills, strokes, widths,
              [(f"bold: the {added} slots written this level; slots {live}..{B - 1} are no longer read", svg.INK)],
              lit=line)
    vals = levels[-1] if levels else p
    last_live = live
    fills, strokes, widths, notes = [], [], [], []
    for t in range(B):
        if t < min(WARP, last_live):
            fills.append(READ); strokes.append(svg.BLACK); widths.append(2.5)
        elif t < last_live:
            fills.append(LOST); strokes.append(svg.VERMILLION); widths.append(3)
        else:
            fills.append("#FFFFFF"); strokes.append(svg.GREY); widths.append(1)
    notes.append((f"warp 0's lanes 0..{min(WARP, last_live) - 1} read slots 0..{min(WARP, last_live) - 1}, "
                  "then 5 warp shuffles", svg.INK))
    if last_live > WARP:
        notes.append((f"✗ slots {WARP}..{last_live - 1} still hold partials and are never read", svg.VERMILLION))
    frame("the warp finish: warp 0 reads shared[0..31]", "warp finish: lanes 0..31 read shared[0..31], then 5 shuffles",
          vals, fills, strokes, widths, notes, lit=finish_line)
    lost = np.flatnonzero(weight == 0)
    total = trace["out"][0]
    labels = ["✗" if w_ == 0 else str(int(w_)) for w_ in weight]
    fills = [LOST if w_ == 0 else (READ if w_ == 1 else TWICE) for w_ in weight]
    strokes = [svg.VERMILLION if w_ == 0 else svg.MUTED for w_ in weight]
    widths = [3.0 if w_ == 0 else 1.0 for w_ in weight]
    cap = f"total = {total:g}" + (f": {lost.size} of {B} partials never arrived" if lost.size
                                  else ": every partial counted once")
    frame(f"total = {total:g}: how many times each thread's partial counts", cap, weight, fills, strokes, widths,
          [("✗ = lost (never reaches the total), 1 = counted once" if lost.size else
            "1 = counted once: nothing lost", svg.VERMILLION if lost.size else svg.INK)], labels=labels,
          lit=finish_line)
    return out


def animation(trace: Trace, source_text: Optional[str] = None) -> Animation:
    """Player for :func:`frames` of ``trace``, beside ``source_text`` (default: the tree's source,
    our reconstruction or the fix), with the trace's provenance.

    Raises:
        KeyError: ``trace`` lacks the arrays or params of a seed-tree trace (``Lesson.animation``
            names the lesson).  ValueError: as :func:`frames`.
    """
    corrected = bool(trace.params["corrected"])
    B = np.asarray(trace["partials"]).size
    title = (f"The fixed halving-tree reduction at {B} threads" if corrected else
             f"The write-up's halving tree at {B} threads (our reconstruction from its description)")
    text = source(corrected).text if source_text is None else source_text
    return Animation(frames(trace, text), title=title, provenance=trace.provenance, source=text)
