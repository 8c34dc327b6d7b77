"""Trace -> frames for notebook 07's shared-memory banks: a warp's lanes, the 32 banks below them,
and in each bank the distinct words the warp asked for -- one wavefront per word of the busiest bank.

Data path: ``gpu_viz.record.banks`` / ``gpu_viz.model.banks`` (or the emulator's run of the traced
kernel) --> :class:`gpu_viz.trace.Trace` (each access's shared byte offset) -->
:mod:`gpu_viz.memory_access` (one :class:`~gpu_viz.memory_access.SharedRequest` per warp) --> frames
here --> :class:`gpu_viz.widgets.Animation`.

The drawing: lanes in a row; the banks as 32 columns under them; in each column a stack of the
distinct 4-byte words asked for there (a word several lanes share is one cell: a broadcast); an
arrow from each lane to its word.  The tallest stack is the number of wavefronts.  4-byte accesses
(every access of ``kernels/banks.cu``); wider ones are served a half- or quarter-warp at a time and
are counted by :mod:`gpu_viz.memory_access`, not drawn here.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import memory_access as ma
from ..trace import Trace
from ..widgets import Animation, Frame, Still, svg

WARP = 32
MAX_FRAMES = 16
_X0, _W = 12, 736
_LANE_Y, _LANE_H = 40, 28
_BANK_Y = 150
_STACK_H = 140


def requests_of(trace: Trace) -> List[Dict]:
    """Every warp's request at every recorded site: ``{"site", "warp", "request"}`` in site order."""
    p = trace.params
    T = p["threads"]
    off = trace["offsets"].astype(np.int64)
    out = []
    for site in range(p["sites"]):
        o = off[site * T:(site + 1) * T]
        for w in range(-(-T // WARP)):
            seg = o[w * WARP:(w + 1) * WARP]
            lanes = np.flatnonzero(seg >= 0)
            if lanes.size:
                out.append({"site": site, "warp": w, "request": ma.shared_request(seg[lanes], 4, lanes=lanes)})
    return out


def summary(trace: Trace, sites: Optional[Sequence[int]] = None) -> Dict:
    """Totals over the recorded requests (of ``sites``, default all): ``requests``, ``wavefronts``,
    ``ideal``, ``conflicts``, ``wavefronts_per_request``, ``ways`` (the worst request's)."""
    reqs = [r["request"] for r in requests_of(trace) if sites is None or r["site"] in sites]
    s = ma.summary(reqs)
    return {"case": trace.params["case"], **s, "ways": max((r.ways() for r in reqs), default=0)}


def drawing(req: ma.SharedRequest, title: str) -> str:
    """SVG of one warp's 4-byte shared access: lanes, banks, the words stacked in each bank."""
    if req.nbytes != 4:
        raise ValueError(f"banks: the player draws 4-byte accesses, got {req.nbytes}-byte ones")
    d = svg.Svg(height=svg.HEIGHT)
    d.text(_X0, 24, title, weight="bold")
    cw = _W / WARP
    active = set(req.lanes.tolist())
    for lane in range(WARP):
        d.rect(_X0 + lane * cw + 1, _LANE_Y, cw - 2, _LANE_H, fill=svg.SKY if lane in active else "#FFFFFF",
               stroke=svg.MUTED)
    d.text(_X0, _LANE_Y + _LANE_H + 20, "lane 0", fill=svg.MUTED)
    d.text(_X0 + _W, _LANE_Y + _LANE_H + 20, "lane 31", anchor="end", fill=svg.MUTED)
    # the words of each bank, stacked (row = the word's rank in its bank)
    words = np.unique(req.words)
    banks = words % ma.BANKS
    ways = int(np.bincount(banks, minlength=ma.BANKS).max())
    row_h = min(26.0, _STACK_H / max(ways, 1))
    rank: Dict[int, int] = {}
    seen = np.zeros(ma.BANKS, int)
    for w in words.tolist():
        b = w % ma.BANKS
        rank[w] = int(seen[b])
        seen[b] += 1
    for b in range(ma.BANKS):
        d.rect(_X0 + b * cw + 1, _BANK_Y, cw - 2, _STACK_H, fill="#FFFFFF", stroke=svg.GREY, sw=0.8, rx=1)
    for w in words.tolist():
        b = w % ma.BANKS
        busy = seen[b] > 1
        d.rect(_X0 + b * cw + 2, _BANK_Y + rank[w] * row_h + 1, cw - 4, max(row_h - 2, 1),
               fill=svg.VERMILLION if busy else svg.GREEN, rx=1)
    for lane, w in zip(req.lanes.tolist(), req.words.tolist()):
        b = w % ma.BANKS
        d.line(_X0 + lane * cw + cw / 2, _LANE_Y + _LANE_H + 26, _X0 + b * cw + cw / 2,
               _BANK_Y + rank[w] * row_h - 2, stroke=svg.BLUE, sw=1.2, arrow=rank[w] == 0)
    d.text(_X0, _BANK_Y + _STACK_H + 24, "bank 0", fill=svg.MUTED)
    d.text(_X0 + _W, _BANK_Y + _STACK_H + 24, "bank 31", anchor="end", fill=svg.MUTED)
    word = "wavefront" if req.wavefronts == 1 else "wavefronts"
    conflict = (f"{req.conflicts} bank conflict{'s' if req.conflicts != 1 else ''} ({ways} words in the busiest bank)"
                if req.conflicts else "no bank conflict")
    d.text(_X0 + 80, _BANK_Y + _STACK_H + 24, f"{req.wavefronts} {word}: {conflict}", weight="bold")
    d.legend(_X0 + 2, svg.HEIGHT - 6, [(svg.GREEN, "word alone in its bank"), (svg.VERMILLION, "bank holds more words"),
                                       (svg.SKY, "lane accesses")])
    return d.markup()


def _title(trace: Trace, item: Dict) -> str:
    p = trace.params
    where = ""
    if p["sites"] > 1:
        where = f", {'tile store' if item['site'] < 4 else 'tile load'} j = {8 * (item['site'] % 4)}"
    return f"{p['case']}: warp {item['warp']}{where}"


def _caption(trace: Trace, item: Dict) -> str:
    req = item["request"]
    ways = req.ways()
    how = "one wavefront: every word in its own bank, or shared" if req.wavefronts == 1 else (
        f"{req.wavefronts} wavefronts: {ways} different words in one bank are served one after another")
    return f"{trace.params['case']}: {req.lanes.size} lanes, {np.unique(req.words).size} distinct words; {how}"


def animation(trace: Trace, source: Optional[str] = None, *, line: Optional[int] = None,
              sites: Optional[Sequence[int]] = None) -> Animation:
    """The warp requests of one case (the first :data:`MAX_FRAMES`; ``sites``: only those)."""
    line = line if line is not None else next((st.line for st in trace.steps if st.line), None)
    items = [it for it in requests_of(trace) if sites is None or it["site"] in sites]
    if not items:
        raise ValueError(f"banks: the trace of {trace.kernel} holds no shared access")
    # the transposes: a store and a load of warp 0 first, then the rest
    shown = items[:MAX_FRAMES]
    frames = [Frame(drawing(it["request"], _title(trace, it)), _caption(trace, it), line) for it in shown]
    s = summary(trace, sites)
    return Animation(frames, title=f"Shared-memory banks: {trace.params['case']}, {s['wavefronts_per_request']:.1f} "
                                   f"wavefronts per request", provenance=trace.provenance, source=source)


def cases_animation(traces: Sequence[Trace], site: Optional[int] = None) -> Animation:
    """One frame per case: warp 0's request at ``site`` (default: the last site, the transposes'
    column load)."""
    if not traces:
        raise ValueError("cases_animation: give at least one trace")
    frames = []
    from ..model.banks import CASES

    for tr in traces:
        want = tr.params["sites"] - 1 if site is None else site
        items = [it for it in requests_of(tr) if it["site"] == want]
        if not items:
            raise ValueError(f"banks: no shared access at site {want} in the trace of {tr.kernel}")
        words = CASES[tr.params["case"]].words if tr.params["case"] in CASES else ""
        frames.append(Frame(drawing(items[0]["request"], _title(tr, items[0])),
                            f"{words}: " + _caption(tr, items[0]).split("; ", 1)[1]))
    provs = sorted({t.provenance for t in traces})
    return Animation(frames, title="One warp's shared access, case by case", provenance="; ".join(provs))


def still(trace: Trace, site: Optional[int] = None) -> Still:
    """Warp 0's request at ``site`` (default the last), as a picture."""
    want = trace.params["sites"] - 1 if site is None else site
    items = [it for it in requests_of(trace) if it["site"] == want]
    if not items:
        raise ValueError(f"banks: no shared access at site {want}")
    return Still(drawing(items[0]["request"], _title(trace, items[0])), title=_caption(trace, items[0]),
                 provenance=trace.provenance)
