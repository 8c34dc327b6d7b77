"""Trace -> frames for notebook 09's four phases: one frame per step of a traced row.

Data path: ``gpu_viz.record.rmsnorm_deck`` / ``gpu_viz.model.rmsnorm_deck`` --> :class:`gpu_viz.trace.Trace`
--> :func:`frames` (SVG, one per step) --> :func:`animation` (live + static player, the variant's
kernel code beside it, the current line lit).

A frame shows the row in VRAM (the part this step reads or writes), one warp's 32 lanes as
registers with their recorded values (a warp shuffle drawn as arrows carrying lane l+off's value
to lane l), the 32 shared-memory slots with the rstd slot, the barrier, and the faults where they
happen: slots nobody wrote, read as stale values, outlined in vermillion and marked ✗.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..model import rmsnorm_deck as model
from ..trace import GPU_SOURCE, Trace
from ..widgets import Animation, Frame, svg

WARP = model.WARP

#: The deck's memory captions, one per phase.
PHASE_CAPTIONS = {
    1: "reads VRAM, writes registers",
    2: "registers -> shared -> registers",
    3: "reads constant mem, writes shared mem",
    4: "reads VRAM + shared + L1, writes VRAM",
}
PHASE_TITLES = {1: "Phase 1 - local sums", 2: "Phase 2 - the reduction",
                3: "Phase 3 - final math", 4: "Phase 4 - applying the weights"}
KINDS = ("local", "shuffle", "handoff", "w0", "math", "output")
#: Fills: a register or slot holding a value that still counts, one that no longer does, a
#: stale value (a fault, also outlined in vermillion and marked ✗), VRAM read / written, rstd.
HOLD, SPENT, STALE, READ, WRITTEN, RSTD = "#CDE8F6", "#FFFFFF", "#F6D0BE", svg.SKY, "#BFE6D9", "#EBCFE0"
_X0 = 56                                   # left edge of lane / slot cells (row labels before it)
_CW, _GAP = 42, 2                          # "1031" at 18 px needs 40 px
_Y_ROW1, _Y_ROW2, _CH = 128, 180, 30       # register rows: lanes 0-15, lanes 16-31 (arrow room between)
_Y_BARRIER = 224
_Y_SMEM, _SH = 264, 28


def _cx(lane: int) -> float:
    return _X0 + (lane % 16) * (_CW + _GAP) + _CW / 2


def _shuffle_arrows(d: svg.Svg, off: int, n_lanes: int) -> None:
    """Arrows carrying lane l+off's value to lane l, for every l < off whose source lane exists."""
    for lane in range(off):
        src = lane + off
        if src >= n_lanes:
            continue
        if off == 16:                      # row 2 straight up to row 1
            d.line(_cx(src), _Y_ROW2, _cx(lane), _Y_ROW1 + _CH + 1, stroke=svg.BLUE, sw=2, arrow=True)
        else:                              # within row 1: an arc above it, higher for longer hops
            x1, x2 = _cx(src), _cx(lane)
            lift = 10 + 2.2 * off
            d.curve(x1, _Y_ROW1, (x1 + x2) / 2, _Y_ROW1 - lift, x2 + 3, _Y_ROW1 - 1, stroke=svg.BLUE, sw=2)


def _vram(d: svg.Svg, y: float, label: str, d_len: int, lo: int, hi: int, fill: str, words: str) -> None:
    x0, w = 90, svg.WIDTH - 96
    d.text(8, y + 16, label)
    d.rect(x0, y, w, 21, fill="#FFFFFF", stroke=svg.MUTED, rx=0)
    if hi > lo:
        d.rect(x0 + w * lo / d_len, y, max(2.0, w * (hi - lo) / d_len), 21, fill=fill, rx=0)
    if words:
        d.text(x0 + 8, y + 16, words)


def drawing(trace: Trace, step_index: int, warp: int = 0, _cache=None) -> str:
    """SVG of step ``step_index`` of a four-phase trace, warp ``warp``'s lanes drawn."""
    st = trace.steps[step_index]
    s, p = st.data, trace.params
    phase, kind = s["phase"], s["kind"]
    d_len, block, nw = p["d"], p["block"], p["n_warps"]
    x, y_out = trace["x"], trace["y"]
    lanes_all, smem, w0, scalars = trace["warp_lanes"], trace["smem"], trace["w0_lanes"], trace["scalars"]
    n0 = min(block, WARP)
    lanes_here = int(model.lanes_in_warp(np.array([warp]), block)[0])
    deck_stale = p["variant"] == model.DECK and nw < WARP
    cache = {} if _cache is None else _cache
    d = svg.Svg(height=360)
    d.text(8, 20, f"{PHASE_TITLES[phase]}: {PHASE_CAPTIONS[phase]}", weight="bold")
    # VRAM: the part of x this step reads, the part of y written so far
    lo = hi = 0
    if kind in ("local", "output"):
        lo, hi = s["pass_"] * block, min(d_len, (s["pass_"] + 1) * block)
    passes = -(-d_len // block)
    if kind == "local" and s["pass_"] == passes - 1 and passes > 2:
        lo = 0                                            # "... all passes done"
    _vram(d, 28, "VRAM x", d_len, lo, hi, READ,
          f"x[{lo}:{hi}] read (LDG)" if kind == "local" else
          (f"x[{lo}:{hi}] read again, w from L1" if kind == "output" else ""))
    y_done = min(d_len, (s["pass_"] + 1) * block) if kind == "output" else 0
    _vram(d, 52, "VRAM y", d_len, 0, y_done, WRITTEN, f"y[0:{y_done}] written (STG)" if y_done else "not written yet")

    # registers
    arrows_off = s.get("offset") if kind in ("shuffle", "w0") and s.get("step", 0) > 0 else None
    stale_lanes = set()
    if kind == "local":
        q = s["pass_"]
        if q < passes - 1:
            if q not in cache:
                g = np.full(nw * WARP, np.nan, np.float32)
                g[:block] = model.local_sums(x[:(q + 1) * block], block)
                cache[q] = g.reshape(nw, WARP)
            regs = cache[q][warp]
        else:
            g = np.full(nw * WARP, np.nan, np.float32)
            g[:block] = trace["local"]
            regs = g.reshape(nw, WARP)[warp]
        who, what = warp, "local = sum of x[i]² over its elements so far"
    elif kind == "shuffle":
        regs, who = lanes_all[warp, s["step"]], warp
        what = "local sums" if s["step"] == 0 else f"after __shfl_down_sync offset {s['offset']}: lane l += lane l+{s['offset']}"
    elif kind == "handoff":
        regs, who, what = lanes_all[warp, -1], warp, "lane 0 holds the warp's sum; it writes smem[warp]"
    elif kind == "output":
        regs = np.full(WARP, np.nan, np.float32)
        first = s["pass_"] * block + warp * WARP
        seg = y_out[first:min(first + WARP, d_len, (s["pass_"] + 1) * block)] if first < d_len else y_out[:0]
        regs[:seg.size] = seg
        who, what = warp, f"y[i] = x[i] * rstd * w[i] for i = {first}.., stored to VRAM"
    else:
        regs, who = (w0[s["step"]] if kind == "w0" else w0[-1]), 0
        if kind == "w0" and deck_stale:
            stale_lanes = set(range(nw, n0))      # they started from slots nobody wrote
        if kind == "w0" and s["step"] == 0:
            what = ("total = smem[tid] for every lane (the deck)" if p["variant"] == model.DECK
                    else f"total = smem[lane] for lane < {nw}, else 0")
        elif kind == "w0":
            what = f"warp 0, offset {s['offset']}: lane l += lane l+{s['offset']}"
        else:
            what = "lane 0 holds the block's total"
    keep = (set(range(arrows_off)) if arrows_off else
            ({0} if kind in ("handoff", "math") or (kind == "w0" and s["step"] == 5) else set(range(WARP))))
    n_lanes = lanes_here if who == warp and kind != "w0" and kind != "math" else n0
    labels, fills, strokes, widths = [], [], [], []
    for lane in range(WARP):
        v = regs[lane]
        if lane >= n_lanes or not np.isfinite(v):
            labels.append(""); fills.append("#FFFFFF"); strokes.append(svg.GREY); widths.append(1)
        elif lane in stale_lanes:
            labels.append(svg.fmt(v, 4)); fills.append(STALE); strokes.append(svg.VERMILLION); widths.append(3)
        else:
            on = lane in keep
            labels.append(svg.fmt(v, 4)); fills.append(HOLD if on else SPENT)
            strokes.append(svg.BLACK if on and len(keep) < WARP else svg.MUTED); widths.append(2.5 if on and len(keep) < WARP else 1)
    d.text(8, 94, f"warp {who}'s lanes: {what}")
    for row, y0 in ((0, _Y_ROW1), (1, _Y_ROW2)):
        sl = slice(16 * row, 16 * row + 16)
        svg.lane_rows(d, _X0, y0, [np.nan] * 16, labels=labels[sl], fills=fills[sl], strokes=strokes[sl],
                      widths=widths[sl], cell_w=_CW, gap=_GAP, row_label=False)
        d.text(_X0 - 6, y0 + _CH / 2 + 6, "0-15" if row == 0 else "16-31", anchor="end", fill=svg.MUTED)
    if arrows_off:
        _shuffle_arrows(d, arrows_off, n_lanes)
    if stale_lanes and s["step"] == 0:       # between the rows: no arrows there at this step
        d.text(_X0, _Y_ROW2 - 6, f"✗ lanes {nw}-{n0 - 1} read slots nobody wrote", fill=svg.VERMILLION, weight="bold")

    # the barrier, where the step is one
    if kind == "handoff" or (kind == "math" and s["what"] == "sync"):
        d.line(8, _Y_BARRIER, svg.WIDTH - 8, _Y_BARRIER, stroke=svg.PURPLE, sw=3, dash="10 6")
        d.cell(svg.WIDTH - 400, _Y_BARRIER - 12, 392, 24, "barrier: __syncthreads(), all warps wait",
               fill="#FFFFFF", stroke=svg.PURPLE, sw=2, weight="bold")

    # shared memory: the 32 slots and the rstd slot
    show = kind in ("handoff", "w0", "math", "output")
    slots = np.full(WARP, np.nan, np.float32)
    if show:
        slots = smem
    elif p["prefill"]:
        slots[:n0] = model.prefill_value(np.arange(n0))
    written = set(range(min(nw, WARP))) if show else set()
    s_labels, s_fills, s_strokes, s_widths = [], [], [], []
    for k in range(WARP):
        v = slots[k]
        if k >= n0 or not np.isfinite(v):
            s_labels.append("–" if k < n0 else ""); s_fills.append("#FFFFFF"); s_strokes.append(svg.GREY); s_widths.append(1)
        elif show and k not in written:
            s_labels.append(svg.fmt(v, 4))
            stale = deck_stale
            s_fills.append(STALE if stale else SPENT); s_strokes.append(svg.VERMILLION if stale else svg.GREY)
            s_widths.append(3 if stale else 1)
        else:
            s_labels.append(svg.fmt(v, 4)); s_fills.append(HOLD if show else SPENT)
            hit = kind == "handoff" and k == warp
            s_strokes.append(svg.BLACK if hit else svg.MUTED); s_widths.append(3 if hit else 1)
    note = "shared memory smem[0..31]"
    if not show:
        note += ": " + ("pre-filled with 1000 + slot" if p["prefill"] else "empty")
    elif nw < n0:
        note += f": slots {nw}-{n0 - 1} never written" + (" ✗ (the deck reads them)" if deck_stale else "")
    d.text(8, _Y_SMEM - 8, note, fill=svg.VERMILLION if show and deck_stale else svg.INK)
    for row in range(2):
        sl = slice(16 * row, 16 * row + 16)
        svg.lane_rows(d, _X0, _Y_SMEM + row * (_SH + 3), [np.nan] * 16, labels=s_labels[sl], fills=s_fills[sl],
                      strokes=s_strokes[sl], widths=s_widths[sl], cell_w=_CW, gap=_GAP, cell_h=_SH, row_label=False)
        d.text(_X0 - 6, _Y_SMEM + row * (_SH + 3) + _SH / 2 + 6, "0-15" if row == 0 else "16-31", anchor="end",
               fill=svg.MUTED)
    if kind == "handoff" and warp < WARP:        # lane 0's value travels down into slot `warp`
        sx = _cx(warp)
        sy = _Y_SMEM + (warp // 16) * (_SH + 3)
        d.curve(_cx(0), _Y_ROW1 + _CH, _cx(0) - 40, _Y_SMEM - 40, sx, sy - 1, stroke=svg.BLUE, sw=3)

    # phase 3's scalars and the rstd slot
    y = _Y_SMEM + 2 * (_SH + 3) + 24
    if phase >= 3:
        rstd_known = not (kind == "math" and s["what"].startswith("total"))
        words = f"total = {scalars[0]:.6g}   mean = total / d = {scalars[1]:.6g}"
        d.text(8, y, words)
        if rstd_known:
            d.cell(svg.WIDTH - 250, y - 20, 242, 28, f"smem rstd = {scalars[3]:.5g}", fill=RSTD, stroke=svg.PURPLE, sw=2)
    elif stale_lanes and 0 < s["step"] < 5:
        d.text(8, y, f"✗ lanes {nw}-{n0 - 1} started from slots nobody wrote: their values join the sum",
               fill=svg.VERMILLION, weight="bold")
    elif kind == "w0" and s["step"] == 5:
        d.text(8, y, f"lane 0: total = {w0[-1, 0]:.6g}" + (f"  ✗ {n0 - nw} stale slots are in it" if deck_stale else ""),
               weight="bold", fill=svg.VERMILLION if deck_stale else svg.INK)
    return d.markup()


def frames(trace: Trace, warp: int = 0, kinds: Optional[Sequence[str]] = None) -> List[Frame]:
    """One frame per step of a four-phase trace (18 to 21 frames; 20 at the deck's shape).

    Args:
        trace: from :func:`record` / the model (kernel ``rmsnorm_deck_f32`` or ``rmsnorm_guarded_f32``).
        warp: which warp's lanes to draw (0..n_warps-1).
        kinds: only the steps of these kinds (``local``, ``shuffle``, ``handoff``, ``w0``, ``math``,
            ``output``); default all.

    Raises:
        ValueError: not a four-phase trace, ``warp`` out of range, or an unknown kind.
    """
    if kinds is not None and not set(kinds) <= set(KINDS):
        raise ValueError(f"kinds must be a subset of {sorted(KINDS)}, got {sorted(set(kinds) - set(KINDS))}")
    if trace.kernel not in model.KERNELS.values():
        raise ValueError(f"frames: trace must come from one of {sorted(model.KERNELS.values())}, got {trace.kernel!r}")
    p = trace.params
    nw = p["n_warps"]
    if isinstance(warp, bool) or not isinstance(warp, (int, np.integer)) or not 0 <= warp < nw:
        raise ValueError(f"warp must be an int in 0..{nw - 1} for block={p['block']}, got {warp!r}")
    cache: dict = {}
    out = []
    for i, st in enumerate(trace.steps):
        if kinds is not None and st.data["kind"] not in kinds:
            continue
        out.append(Frame(drawing(trace, i, warp, cache),
                         caption=f"{st.label}  [{PHASE_CAPTIONS[st.data['phase']]}]", line=st.line))
    return out


def animation(trace: Trace, source: Optional[str] = None, warp: int = 0, title: Optional[str] = None,
              kinds: Optional[Sequence[str]] = None) -> Animation:
    """The player for a four-phase trace: frames (see :func:`frames`) + the kernel source, current
    line lit.  ``source``: the code the steps' lines point into (default: the variant's,
    ``gpu_viz.model.rmsnorm_deck.source``)."""
    p = trace.params
    where = {GPU_SOURCE: "on the silicon", "emulator": "in the emulator"}.get(trace.source, "in the CPU model")
    title = title or (f"Four phases {where}: RMSNorm of one row, d={p['d']}, {p['block']} threads "
                      f"({p['variant']} phase 2)")
    return Animation(frames(trace, warp=warp, kinds=kinds), title=title, provenance=trace.provenance,
                     source=source if source is not None else model.source(p["variant"]).text)
