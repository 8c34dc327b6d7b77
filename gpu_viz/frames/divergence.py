"""Trace -> frames for notebook 03's divergence demo: who runs a warp's branch, under which mask.

Data path: ``gpu_viz.record.divergence`` / ``gpu_viz.model.divergence`` --> :class:`gpu_viz.trace.Trace`
--> frames here (SVG, one per (warp, active mask), in issue order) --> :class:`gpu_viz.widgets.Animation`.
A frame lights the lanes of one warp that run one path, with the value each computed; the lanes
the mask leaves out wait, drawn empty and dashed.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..trace import Trace
from ..widgets import Animation, Frame, svg
from .vector_add import MAX_WARPS_DRAWN, WARP
from ..words import count

#: Fill and name of each path (0 = A, 1 = B); cells also carry the letter or the value.
PATHS = ((svg.SKY, "A"), (svg.ORANGE, "B"))
_BAND = 150


def _warps(trace: Trace) -> List[tuple]:
    """Every (block, warp) of the trace, sorted."""
    return sorted(set(zip(trace["block"].tolist(), trace["warp"].tolist())))


def mask_groups(trace: Trace, max_warps: Optional[int] = None) -> List[dict]:
    """One dict per (warp, active mask) in issue order: warp id, branch, mask, lanes; of the first
    ``max_warps`` warps (all when None).

    Groups come from the trace's recorded masks: what ran together under one mask.
    """
    blk, warp, branch, active = trace["block"], trace["warp"], trace["branch"], trace["active"]
    groups = []
    for key in _warps(trace)[:max_warps]:
        sel = (blk == key[0]) & (warp == key[1])
        for br in sorted(set(branch[sel].tolist())):
            s2 = sel & (branch == br)
            masks = sorted(set(active[s2].tolist()))
            groups.append({"block": key[0], "warp": key[1], "branch": br, "masks": masks,
                           "lanes": sorted(trace["lane"][s2].tolist())})
    return groups


def drawing(trace: Trace, highlight: int = -1, groups: Optional[List[dict]] = None) -> str:
    """SVG: the first warps' 32 lanes; group ``highlight`` (index into ``groups``, default
    :func:`mask_groups` of the warps drawn) runs, its lanes showing their result y; with no
    highlight every lane shows the path it took."""
    groups = mask_groups(trace, MAX_WARPS_DRAWN) if groups is None else groups
    keys = sorted({(g["block"], g["warp"]) for g in groups})[:MAX_WARPS_DRAWN]
    lit = groups[highlight] if 0 <= highlight < len(groups) else None
    y_of = {}   # (block, warp, lane) -> the recorded y, for the drawn warps only (traces can be large)
    for key in keys:
        for t in np.nonzero((trace["block"] == key[0]) & (trace["warp"] == key[1]))[0]:
            y_of[(key[0], key[1], int(trace["lane"][t]))] = float(trace["y"][t])
    d = svg.Svg(height=min(svg.HEIGHT, 40 + _BAND * len(keys)))
    for r, key in enumerate(keys):
        y0 = 4 + r * _BAND
        mine = [g for g in groups if (g["block"], g["warp"]) == key]
        branch_of = {lane: g["branch"] for g in mine for lane in g["lanes"]}
        running = lit is not None and (lit["block"], lit["warp"]) == key
        d.rect(0, y0, svg.WIDTH, _BAND - 10, fill="#FFFFFF", stroke=svg.BLACK if running else svg.GREY,
               sw=3 if running else 1)
        head = f"block {key[0]} warp {key[1]}"
        if running:
            head += (f": path {PATHS[lit['branch']][1]} runs, __activemask() = "
                     + ", ".join(f"0x{m:08x}" for m in lit["masks"]))
        elif lit is not None:
            head += ": waits (another warp issues)"
        else:
            head += ": " + ", ".join(f"path {PATHS[g['branch']][1]} {len(g['lanes'])} lanes" for g in mine)
        d.text(8, y0 + 24, head, weight="bold" if running else None)
        labels, fills, strokes, widths = [], [], [], []
        for lane in range(WARP):
            br = branch_of.get(lane)
            if br is None:                                  # no thread (past n or the block's end)
                labels.append(""); fills.append("#FFFFFF"); strokes.append(svg.GREY); widths.append(1)
            elif lit is None:
                labels.append(PATHS[br][1]); fills.append(PATHS[br][0]); strokes.append(svg.MUTED); widths.append(1)
            elif running and br == lit["branch"]:
                labels.append(svg.fmt(y_of.get((key[0], key[1], lane), np.nan), 4))
                fills.append(PATHS[br][0]); strokes.append(svg.BLACK); widths.append(2.5)
            else:                                           # masked off: waits for the other path
                labels.append("–"); fills.append("#FFFFFF"); strokes.append(svg.MUTED); widths.append(1)
        svg.lane_rows(d, 64, y0 + 40, [np.nan] * WARP, labels=labels, fills=fills, strokes=strokes, widths=widths)
        if running:
            note = f"{len(lit['lanes'])} lanes compute y; the lanes marked – are masked off and wait"
        else:
            note = "letters: the path each lane takes" if lit is None else "idle this step"
        d.text(8, y0 + _BAND - 18, note, fill=svg.MUTED)
    y = 4 + _BAND * len(keys) + 22
    d.legend(8, y, [(PATHS[0][0], "A: path_a"), (PATHS[1][0], "B: path_b"), ("#FFFFFF", "– masked off")])
    return d.markup()


def _line_of(source: str, needle: str):
    return next((i for i, line in enumerate(source.splitlines(), 1) if needle in line), None)


def animation(trace: Trace, source: str) -> Animation:
    """One frame per (warp, branch) the SM issues, its __activemask() shown; then the whole picture.

    ``source``: the ``branch`` region's text; each frame lights the path its lanes run.
    """
    a_line, b_line = _line_of(source, "path_a("), _line_of(source, "path_b(")
    groups = mask_groups(trace, MAX_WARPS_DRAWN)  # once, and only of the warps drawn
    n_warps = len(_warps(trace))
    caps = [f"block {g['block']} warp {g['warp']} runs path {'AB'[g['branch']]} with "
            f"__activemask() = " + ", ".join(f"0x{m:08x}" for m in g["masks"])
            + f" ({len(g['lanes'])} of 32 lanes)" for g in groups]
    caps.append(f"{len(groups)} path executions for {count(min(n_warps, MAX_WARPS_DRAWN), 'warp')}"
                + (f" (the first {MAX_WARPS_DRAWN} of {n_warps} drawn)" if n_warps > MAX_WARPS_DRAWN else ""))
    # the summary frame points at the branch itself: the one line both paths come from
    lines = [a_line if g["branch"] == 0 else b_line for g in groups] + [_line_of(source, "if (")]
    frames = [Frame(drawing(trace, i if i < len(groups) else -1, groups), caps[i], lines[i])
              for i in range(len(caps))]
    return Animation(frames, title=f"{trace.kernel}: who runs, under which mask",
                     provenance=trace.provenance, source=source)


def mask_bits(mask: int) -> str:
    """A 32-bit active mask as lanes 31..0, e.g. '0101...0101' for 0x55555555."""
    return format(int(mask) & 0xFFFFFFFF, "032b")
