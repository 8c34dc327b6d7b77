"""Trace -> frames for notebook 07's coalescing lesson: a warp's 32 lanes, an arrow from each into
memory, and the 32-byte sectors its request moved.

Data path: ``gpu_viz.record.coalescing`` / ``gpu_viz.model.coalescing`` (or the emulator's run of
the traced kernel) --> :class:`gpu_viz.trace.Trace` (each load's byte offset into x) -->
:mod:`gpu_viz.memory_access` (one :class:`~gpu_viz.memory_access.GlobalRequest` per warp) --> frames
here (SVG: one per warp request drawn) --> :class:`gpu_viz.widgets.Animation`.

The drawing: the warp's lanes in a row (filled: the lane loads); below, memory as 128-byte lines of
four 32-byte sectors, the sectors the request touched filled (orange, marked "moved") and the
others empty; an arrow from each lane to the first byte it loads.  Every figure says where its
offsets came from (the trace's provenance).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import memory_access as ma
from ..trace import Trace
from ..widgets import Animation, Frame, Still, svg

WARP = 32
#: The most warp requests one player draws (the rest repeat the pattern).
MAX_FRAMES = 16
#: The widest run of lines drawn side by side; past it only the lines touched are drawn.
MAX_LINES = 32
_X0, _W = 12, 736
_LANE_Y, _LANE_H = 40, 30
_MEM_Y, _MEM_H = 220, 40


def pct(fraction: float) -> str:
    """A fraction as a percentage: whole when it is one (100 %), else to a tenth (12.5 %)."""
    v = 100.0 * fraction
    return f"{v:.0f} %" if abs(v - round(v)) < 0.05 else f"{v:.1f} %"


def requests_of(trace: Trace) -> List[Dict]:
    """Every warp request of the trace, in (trip, warp) order: ``{"warp", "trip", "request"}``."""
    p = trace.params
    T, K = p["threads"], p["per_thread"]
    off = trace["offsets"]
    out = []
    for k in range(K):
        o = off[k * T:(k + 1) * T]
        for w in range(-(-T // WARP)):
            seg = o[w * WARP:(w + 1) * WARP]
            lanes = np.flatnonzero(seg >= 0)
            if lanes.size:
                out.append({"warp": w, "trip": k, "request": ma.global_request(seg[lanes], p["width"], lanes=lanes)})
    return out


def summary(trace: Trace) -> Dict:
    """The pattern's counts over all its requests: ``pattern``, ``width``, ``requests``, ``sectors``,
    ``sectors_per_request``, ``efficiency``, ``ideal_sectors`` (what a coalesced request of that
    width needs), ``requests_per_KiB`` (warp loads per KiB of x loaded)."""
    reqs = [r["request"] for r in requests_of(trace)]
    s = ma.summary(reqs)
    width = trace.params["width"]
    ideal = -(-WARP * width // ma.SECTOR_BYTES)
    return {"pattern": trace.params["pattern"], "width": width, **s, "ideal_sectors": ideal,
            "requests_per_KiB": s["requests"] / (s["bytes"] / 1024) if s["bytes"] else 0.0}


def _layout(lines: np.ndarray):
    """x of each line's left edge and the sector width: contiguous from the first to the last line
    touched when they span <= MAX_LINES lines, else only the lines touched, a gap between runs."""
    lo, hi = int(lines.min()), int(lines.max())
    if hi - lo + 1 <= MAX_LINES:
        shown = np.arange(lo, hi + 1)
        gaps = np.zeros(shown.size, bool)
    else:
        shown = lines[:MAX_LINES]
        gaps = np.r_[False, np.diff(shown) > 1]
    gap = 10.0
    sector_w = (_W - gap * gaps.sum()) / (4 * shown.size)
    left, x = {}, float(_X0)
    for ln, g in zip(shown.tolist(), gaps.tolist()):
        x += gap if g else 0.0
        left[ln] = x
        x += 4 * sector_w
    return left, sector_w, shown, gaps


def drawing(req: ma.GlobalRequest, title: str) -> str:
    """SVG of one warp request: lanes, arrows, lines and the sectors moved."""
    d = svg.Svg(height=svg.HEIGHT)
    d.text(_X0, 24, title, weight="bold")
    cw = _W / WARP
    active = set(req.lanes.tolist())
    for lane in range(WARP):
        x = _X0 + lane * cw
        d.rect(x + 1, _LANE_Y, cw - 2, _LANE_H, fill=svg.SKY if lane in active else "#FFFFFF", stroke=svg.MUTED)
    d.text(_X0, _LANE_Y + _LANE_H + 22, "lane 0", fill=svg.MUTED)
    d.text(_X0 + _W, _LANE_Y + _LANE_H + 22, "lane 31", anchor="end", fill=svg.MUTED)
    left, sw, shown, gaps = _layout(req.lines)
    moved = set(req.sectors.tolist())
    per_line = ma.LINE_BYTES // ma.SECTOR_BYTES
    for ln, x in left.items():
        for s in range(per_line):
            sec = ln * per_line + s
            d.rect(x + s * sw + 0.5, _MEM_Y, max(sw - 1, 1), _MEM_H,
                   fill=svg.ORANGE if sec in moved else svg.LIGHT, stroke=svg.MUTED, sw=0.8, rx=1)
        d.rect(x, _MEM_Y - 4, per_line * sw, _MEM_H + 8, fill="none", stroke=svg.INK, sw=1.5, rx=2)
    # the bytes the lanes asked for: a dark band in the lower half of their sectors
    for off in req.offsets.tolist():
        ln = off // ma.LINE_BYTES
        if ln in left:
            bx = left[ln] + (off % ma.LINE_BYTES) / ma.SECTOR_BYTES * sw
            d.rect(bx, _MEM_Y + _MEM_H / 2, max(req.nbytes / ma.SECTOR_BYTES * sw, 1.0), _MEM_H / 2 - 2,
                   fill=svg.BLUE, rx=0)
    # arrows: lane -> its first byte
    for lane, off in zip(req.lanes.tolist(), req.offsets.tolist()):
        ln = off // ma.LINE_BYTES
        if ln not in left:
            continue
        tx = left[ln] + (off % ma.LINE_BYTES) / ma.SECTOR_BYTES * sw
        cx = _X0 + lane * cw + cw / 2
        d.line(cx, _LANE_Y + _LANE_H + 30, tx, _MEM_Y - 8, stroke=svg.BLUE, sw=1.3, arrow=True)
    first, last = int(shown[0]), int(shown[-1])
    span = (f"memory: lines {first}-{last} of x (128 B each, 4 sectors of 32 B)" if first != last else
            f"memory: line {first} of x (128 B, 4 sectors of 32 B)")
    if gaps.any():
        span += "; untouched lines left out"
    d.text(_X0, _MEM_Y + _MEM_H + 26, span, fill=svg.MUTED)
    n = req.sectors.size
    d.text(_X0, _MEM_Y + _MEM_H + 54, f"{n} sector{'s' if n != 1 else ''} moved for {req.bytes} B asked: "
           f"{pct(req.efficiency)} of the bytes moved are used", weight="bold")
    d.legend(_X0 + 2, svg.HEIGHT - 6, [(svg.ORANGE, "sector moved"), (svg.BLUE, "bytes used"),
                                       (svg.LIGHT, "not moved"), (svg.SKY, "lane loads")])
    return d.markup()


def _title(trace: Trace, item: Dict) -> str:
    p = trace.params
    trip = f", trip {item['trip']}" if p["per_thread"] > 1 else ""
    return f"{p['pattern']}: warp {item['warp']}{trip}, {p['width']} B a lane"


def _caption(trace: Trace, item: Dict) -> str:
    req = item["request"]
    return (f"{trace.params['pattern']}: {req.lanes.size} lanes ask for {req.bytes} B; the request moves "
            f"{req.sectors.size} sectors ({req.lines.size} line{'s' if req.lines.size != 1 else ''}): "
            f"{pct(req.efficiency)} efficiency")


def animation(trace: Trace, source: Optional[str] = None, *, line: Optional[int] = None) -> Animation:
    """The warp requests of one pattern's trace (the first :data:`MAX_FRAMES`), one frame each.

    Raises:
        ValueError: the trace recorded no load.
    """
    line = line if line is not None else next((st.line for st in trace.steps if st.line), None)
    items = requests_of(trace)
    if not items:
        raise ValueError(f"coalescing: the trace of {trace.kernel} holds no load (n = {trace.params['n']})")
    shown = items[:MAX_FRAMES]
    frames = [Frame(drawing(it["request"], _title(trace, it)), _caption(trace, it), line) for it in shown]
    if len(items) > len(shown):
        last = frames[-1]
        frames[-1] = Frame(last.markup, last.caption + f" ({len(items)} requests in all; {len(shown)} drawn)",
                           last.line)
    s = summary(trace)
    return Animation(frames, title=f"What each warp touched: {trace.params['pattern']}, {s['sectors_per_request']:.1f} "
                                   f"sectors per request", provenance=trace.provenance, source=source)


def patterns_animation(traces: Sequence[Trace]) -> Animation:
    """One frame per pattern: warp 0's first request of each trace, side by side in time.

    Raises:
        ValueError: no traces, or one without a load.
    """
    if not traces:
        raise ValueError("patterns_animation: give at least one trace")
    frames = []
    for tr in traces:
        items = requests_of(tr)
        if not items:
            raise ValueError(f"coalescing: the trace of {tr.kernel} holds no load")
        from ..model.coalescing import PATTERNS

        words = PATTERNS[tr.params["pattern"]].words if tr.params["pattern"] in PATTERNS else ""
        frames.append(Frame(drawing(items[0]["request"], _title(tr, items[0])),
                            f"{words}: " + _caption(tr, items[0]).split(": ", 1)[1]))
    provs = sorted({t.provenance for t in traces})
    return Animation(frames, title="One warp request, pattern by pattern", provenance="; ".join(provs))


def still(trace: Trace, warp: int = 0) -> Still:
    """One warp's first request, as a picture."""
    items = [it for it in requests_of(trace) if it["warp"] == warp]
    if not items:
        raise ValueError(f"coalescing: warp {warp} made no load in this trace")
    return Still(drawing(items[0]["request"], _title(trace, items[0])), title=_caption(trace, items[0]),
                 provenance=trace.provenance)
