"""Trace -> frames for notebook 08's reduction ladder: one block's tree, step by step, for rungs 1-3.

Data path: ``gpu_viz.record.reduction_ladder`` (the traced build: which threads add in each step,
every slot after it) --> :class:`gpu_viz.trace.Trace` --> frames here --> :class:`gpu_viz.widgets.Animation`.

The drawing, per step: the block's threads as rows of 32 (one row a warp), filled where the thread
adds; each warp is marked "divergent" (some lanes add, some do not), "all add" or "idle"; below,
the shared slots the adders write (orange) and read (sky), with the wavefronts each warp's load of
``s[... + k]`` takes (:mod:`gpu_viz.memory_access`, from the slots the rung's index reads).
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .. import memory_access as ma
from ..trace import Trace
from ..widgets import Animation, Frame, svg

WARP = 32
#: The largest block drawn (4 warps: four rows of lanes, four of slots).
MAX_BLOCK = 128
_X0, _W = 110, 640


def slots_touched(rung: str, block: int, step: int, adds: np.ndarray):
    """(threads adding, slot each writes, slot each reads) of ``step`` for ``rung``."""
    t = np.flatnonzero(adds)
    if rung in ("interleaved", "strided"):
        k = 1 << step
        dst = t if rung == "interleaved" else 2 * k * t
    else:
        k = block >> (step + 1)
        dst = t
    return t, dst, dst + k


def step_stats(rung: str, block: int, step: int, adds: np.ndarray) -> Dict:
    """``divergent`` warps (some lanes add), ``busy`` warps (any lane adds), and the wavefronts
    of the busy warps' loads of the partner slot (4-byte words), summed and worst."""
    t, _dst, src = slots_touched(rung, block, step, adds)
    warps = -(-block // WARP)
    div = busy = 0
    wf, worst = 0, 0
    for w in range(warps):
        lanes = t[(t // WARP) == w]
        if lanes.size:
            busy += 1
            present = min(WARP, block - w * WARP)
            div += int(lanes.size < present)
            req = ma.shared_request(4 * src[(t // WARP) == w], 4, lanes=lanes % WARP)
            wf += req.wavefronts
            worst = max(worst, req.wavefronts)
    return {"divergent": div, "busy": busy, "warps": warps, "wavefronts": wf, "worst": worst}


def drawing(trace: Trace, step: int) -> str:
    """SVG of tree step ``step``: threads (rows = warps) and slots, adders and their slots marked."""
    p = trace.params
    rung, block = p["rung"], p["block"]
    adds = trace["adds"][step]
    t, dst, src = slots_touched(rung, block, step, adds)
    warps = -(-block // WARP)
    cw = _W / WARP
    rh, gap = 22, 3
    d = svg.Svg(height=svg.HEIGHT)
    st = step_stats(rung, block, step, adds)
    d.text(8, 24, f"{rung}, step {step + 1} of {p['steps']}: {t.size} threads add", weight="bold")
    d.text(8, 50, "threads, one row a warp:", fill=svg.MUTED)
    y_t = 58
    adding = set(t.tolist())
    for w in range(warps):
        y = y_t + w * (rh + gap)
        present = min(WARP, block - w * WARP)
        n_add = sum(1 for lane in range(present) if w * WARP + lane in adding)
        for lane in range(WARP):
            tid = w * WARP + lane
            fill = svg.ORANGE if tid in adding else ("#FFFFFF" if lane < present else svg.LIGHT)
            d.rect(_X0 + lane * cw + 1, y, cw - 2, rh, fill=fill, stroke=svg.MUTED, sw=0.8, rx=1)
        d.text(_X0 - 8, y + rh - 4, f"warp {w}", anchor="end")
        if 0 < n_add < present:
            d.rect(_X0 + _W + 2, y + 2, 6, rh - 4, fill=svg.VERMILLION, rx=1)
    y_l = y_t + warps * (rh + gap) + 20
    d.text(8, y_l, "shared slots s[ ]:", fill=svg.MUTED)
    y_s = y_l + 8
    written, read = set(dst.tolist()), set(src.tolist())
    for w in range(warps):
        y = y_s + w * (rh + gap)
        for lane in range(WARP):
            slot = w * WARP + lane
            if slot >= block:
                continue
            fill = svg.ORANGE if slot in written else (svg.SKY if slot in read else "#FFFFFF")
            d.rect(_X0 + lane * cw + 1, y, cw - 2, rh, fill=fill, stroke=svg.MUTED, sw=0.8, rx=1)
        d.text(_X0 - 8, y + rh - 4, f"{w * WARP}-{min(block, (w + 1) * WARP) - 1}", anchor="end", fill=svg.MUTED)
    y_x = y_s + warps * (rh + gap) + 22
    d.text(8, y_x, f"divergent warps: {st['divergent']} of {st['busy']} busy; partner loads: worst "
                   f"{st['worst']} wavefront{'s' if st['worst'] != 1 else ''} a warp", weight="bold")
    d.legend(10, min(svg.HEIGHT - 6, y_x + 30), [(svg.ORANGE, "adds / slot written"), (svg.SKY, "slot read"),
                                                 (svg.VERMILLION, "warp divergent")])
    return d.markup()


def animation(trace: Trace, source: Optional[str] = None, *, line: Optional[int] = None) -> Animation:
    """One frame per tree step of a rung-1..3 trace.

    Raises:
        ValueError: a block larger than :data:`MAX_BLOCK` (too many rows to draw).
    """
    line = line if line is not None else next((st.line for st in trace.steps if st.line), None)
    p = trace.params
    if p["block"] > MAX_BLOCK:
        raise ValueError(f"reduction_ladder: the player draws blocks of at most {MAX_BLOCK} threads (4 warps), got "
                         f"{p['block']}; trace a smaller block")
    frames = []
    for s in range(p["steps"]):
        st = step_stats(p["rung"], p["block"], s, trace["adds"][s])
        k = trace.steps[s].data["k"] if s < len(trace.steps) else 0
        cap = (f"step {s + 1}: pairs {k} apart; {st['divergent']} of {st['busy']} busy warps divergent; "
               f"the partner loads take {st['wavefronts']} wavefronts in all")
        frames.append(Frame(drawing(trace, s), cap, line))
    total = float(trace["total"][0])
    last = frames[-1]
    frames[-1] = Frame(last.markup, last.caption + f"; s[0] = {total:.6g} (float64: "
                                                   f"{float(trace['x'].astype(np.float64).sum()):.6g})", last.line)
    return Animation(frames, title=f"Rung '{p['rung']}': one block of {p['block']} threads, step by step",
                     provenance=trace.provenance, source=source)
