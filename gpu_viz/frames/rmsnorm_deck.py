"""Trace -> frames for notebook 12's four phases: one frame per step of a traced row.

Data path: ``gpu_viz.record.rmsnorm_deck`` / ``gpu_viz.model.rmsnorm_deck`` --> :class:`gpu_viz.trace.Trace`
--> :func:`frames` (SVG, one per step) --> :func:`animation` (live + static player, the variant's
kernel code beside it, the current line lit).

A frame shows the row in VRAM (the part this step reads or writes), one warp's 32 lanes as
registers with their recorded values (a warp shuffle drawn as arrows carrying lane l+off's value
to lane l), the 32 shared-memory slots with the rstd slot, the barrier, and the faults where they
happen: slots nobody wrote, read as stale values, outlined in vermillion and marked ✗.
"""
from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class _Step:
    """What every part of a frame reads: the step's data, the launch, the warp drawn."""

    s: dict
    phase: int
    kind: str
    d_len: int
    block: int
    nw: int
    n0: int
    lanes_here: int
    deck_stale: bool
    passes: int
    warp: int
    variant: str
    prefill: bool

    @classmethod
    def of(cls, trace: Trace, step_index: int, warp: int) -> "_Step":
        s, p = trace.steps[step_index].data, trace.params
        block, nw = p["block"], p["n_warps"]
        return cls(s, s["phase"], s["kind"], p["d"], block, nw, min(block, WARP),
                   int(model.lanes_in_warp(np.array([warp]), block)[0]),
                   p["variant"] == model.DECK and nw < WARP, -(-p["d"] // block), warp, p["variant"], p["prefill"])


def _draw_vram(d: svg.Svg, st: _Step) -> None:
    """The part of x this step reads, the part of y written so far."""
    s, kind = st.s, st.kind
    lo = hi = 0
    if kind in ("local", "output"):
        lo, hi = s["pass_"] * st.block, min(st.d_len, (s["pass_"] + 1) * st.block)
    if kind == "local" and s["pass_"] == st.passes - 1 and st.passes > 2:
        lo = 0                                            # "... all passes done"
    _vram(d, 28, "VRAM x", st.d_len, lo, hi, READ,
          f"x[{lo}:{hi}] read (LDG)" if kind == "local" else
          (f"x[{lo}:{hi}] read again, w from L1" if kind == "output" else ""))
    y_done = min(st.d_len, (s["pass_"] + 1) * st.block) if kind == "output" else 0
    _vram(d, 52, "VRAM y", st.d_len, 0, y_done, WRITTEN, f"y[0:{y_done}] written (STG)" if y_done else "not written yet")


def _local_registers(trace: Trace, st: _Step, cache: dict) -> np.ndarray:
    """Warp ``st.warp``'s local sums after pass ``pass_`` (the last pass: the trace's own)."""
    q = st.s["pass_"]
    if q < st.passes - 1:
        if q not in cache:
            g = np.full(st.nw * WARP, np.nan, np.float32)
            g[:st.block] = model.local_sums(trace["x"][:(q + 1) * st.block], st.block)
            cache[q] = g.reshape(st.nw, WARP)
        return cache[q][st.warp]
    g = np.full(st.nw * WARP, np.nan, np.float32)
    g[:st.block] = trace["local"]
    return g.reshape(st.nw, WARP)[st.warp]


def _warp0_words(st: _Step) -> str:
    s = st.s
    if st.kind == "w0" and s["step"] == 0:
        return ("total = smem[tid] for every lane (the deck)" if st.variant == model.DECK
                else f"total = smem[lane] for lane < {st.nw}, else 0")
    if st.kind == "w0":
        return f"warp 0, offset {s['offset']}: lane l += lane l+{s['offset']}"
    return "lane 0 holds the block's total"


def _registers(trace: Trace, st: _Step, cache: dict):
    """(the 32 lanes' values, whose warp they are, what the step does, the stale lanes)."""
    s, kind, warp = st.s, st.kind, st.warp
    if kind == "local":
        return _local_registers(trace, st, cache), warp, "local = sum of x[i]² over its elements so far", set()
    if kind == "shuffle":
        what = ("local sums" if s["step"] == 0 else
                f"after __shfl_down_sync offset {s['offset']}: lane l += lane l+{s['offset']}")
        return trace["warp_lanes"][warp, s["step"]], warp, what, set()
    if kind == "handoff":
        return trace["warp_lanes"][warp, -1], warp, "lane 0 holds the warp's sum; it writes smem[warp]", set()
    if kind == "output":
        regs = np.full(WARP, np.nan, np.float32)
        first = s["pass_"] * st.block + warp * WARP
        y_out = trace["y"]
        seg = y_out[first:min(first + WARP, st.d_len, (s["pass_"] + 1) * st.block)] if first < st.d_len else y_out[:0]
        regs[:seg.size] = seg
        return regs, warp, f"y[i] = x[i] * rstd * w[i] for i = {first}.., stored to VRAM", set()
    w0 = trace["w0_lanes"]
    stale = set(range(st.nw, st.n0)) if kind == "w0" and st.deck_stale else set()  # slots nobody wrote
    return (w0[s["step"]] if kind == "w0" else w0[-1]), 0, _warp0_words(st), stale


def _cells(values, n_cells: int, stale: set, keep: set, full: int):
    """(labels, fills, strokes, widths) of register cells: empty past ``n_cells`` or without a
    value, vermillion where stale, lit where kept (when fewer than ``full`` are)."""
    labels, fills, strokes, widths = [], [], [], []
    for k in range(WARP):
        v = values[k]
        if k >= n_cells or not np.isfinite(v):
            labels.append(""); fills.append("#FFFFFF"); strokes.append(svg.GREY); widths.append(1)
        elif k in stale:
            labels.append(svg.fmt(v, 4)); fills.append(STALE); strokes.append(svg.VERMILLION); widths.append(3)
        else:
            on = k in keep
            labels.append(svg.fmt(v, 4)); fills.append(HOLD if on else SPENT)
            strokes.append(svg.BLACK if on and len(keep) < full else svg.MUTED)
            widths.append(2.5 if on and len(keep) < full else 1)
    return labels, fills, strokes, widths


def _draw_cell_rows(d: svg.Svg, y0: float, cells, cell_h: Optional[int] = None, dy: int = 0) -> None:
    """The 32 cells as two rows of 16 (0-15, 16-31), ``dy`` apart, labelled on the left."""
    labels, fills, strokes, widths = cells
    for row in range(2):
        sl = slice(16 * row, 16 * row + 16)
        y = y0[row] if isinstance(y0, tuple) else y0 + row * dy
        kw = {} if cell_h is None else {"cell_h": cell_h}
        svg.lane_rows(d, _X0, y, [np.nan] * 16, labels=labels[sl], fills=fills[sl], strokes=strokes[sl],
                      widths=widths[sl], cell_w=_CW, gap=_GAP, row_label=False, **kw)
        h = _CH if cell_h is None else cell_h
        d.text(_X0 - 6, y + h / 2 + 6, "0-15" if row == 0 else "16-31", anchor="end", fill=svg.MUTED)


def _draw_registers(d: svg.Svg, trace: Trace, st: _Step, cache: dict) -> set:
    """Warp ``who``'s lanes with their values, the shuffle's arrows; returns the stale lanes."""
    s, kind = st.s, st.kind
    regs, who, what, stale = _registers(trace, st, cache)
    arrows_off = s.get("offset") if kind in ("shuffle", "w0") and s.get("step", 0) > 0 else None
    keep = (set(range(arrows_off)) if arrows_off else
            ({0} if kind in ("handoff", "math") or (kind == "w0" and s["step"] == 5) else set(range(WARP))))
    n_lanes = st.lanes_here if who == st.warp and kind != "w0" and kind != "math" else st.n0
    d.text(8, 94, f"warp {who}'s lanes: {what}")
    _draw_cell_rows(d, (_Y_ROW1, _Y_ROW2), _cells(regs, n_lanes, stale, keep, WARP))
    if arrows_off:
        _shuffle_arrows(d, arrows_off, n_lanes)
    if stale and s["step"] == 0:       # between the rows: no arrows there at this step
        d.text(_X0, _Y_ROW2 - 6, f"✗ lanes {st.nw}-{st.n0 - 1} read slots nobody wrote", fill=svg.VERMILLION,
               weight="bold")
    return stale


def _draw_barrier(d: svg.Svg, st: _Step) -> None:
    if st.kind == "handoff" or (st.kind == "math" and st.s["what"] == "sync"):
        d.line(8, _Y_BARRIER, svg.WIDTH - 8, _Y_BARRIER, stroke=svg.PURPLE, sw=3, dash="10 6")
        d.cell(svg.WIDTH - 400, _Y_BARRIER - 12, 392, 24, "barrier: __syncthreads(), all warps wait",
               fill="#FFFFFF", stroke=svg.PURPLE, sw=2, weight="bold")


def _slot_cells(slots, st: _Step, show: bool):
    """(labels, fills, strokes, widths) of the 32 shared slots: "–" where a slot of the block
    holds nothing, stale where the deck reads a slot nobody wrote, the handoff's slot lit."""
    written = set(range(min(st.nw, WARP))) if show else set()
    labels, fills, strokes, widths = [], [], [], []
    for k in range(WARP):
        v = slots[k]
        if k >= st.n0 or not np.isfinite(v):
            labels.append("–" if k < st.n0 else ""); fills.append("#FFFFFF"); strokes.append(svg.GREY); widths.append(1)
        elif show and k not in written:
            labels.append(svg.fmt(v, 4))
            stale = st.deck_stale
            fills.append(STALE if stale else SPENT); strokes.append(svg.VERMILLION if stale else svg.GREY)
            widths.append(3 if stale else 1)
        else:
            labels.append(svg.fmt(v, 4)); fills.append(HOLD if show else SPENT)
            hit = st.kind == "handoff" and k == st.warp
            strokes.append(svg.BLACK if hit else svg.MUTED); widths.append(3 if hit else 1)
    return labels, fills, strokes, widths


def _draw_shared(d: svg.Svg, trace: Trace, st: _Step) -> None:
    """The 32 shared-memory slots (written, pre-filled, stale) and the handoff's arrow."""
    show = st.kind in ("handoff", "w0", "math", "output")
    slots = np.full(WARP, np.nan, np.float32)
    if show:
        slots = trace["smem"]
    elif st.prefill:
        slots[:st.n0] = model.prefill_value(np.arange(st.n0))
    note = "shared memory smem[0..31]"
    if not show:
        note += ": " + ("pre-filled with 1000 + slot" if st.prefill else "empty")
    elif st.nw < st.n0:
        note += f": slots {st.nw}-{st.n0 - 1} never written" + (" ✗ (the deck reads them)" if st.deck_stale else "")
    d.text(8, _Y_SMEM - 8, note, fill=svg.VERMILLION if show and st.deck_stale else svg.INK)
    _draw_cell_rows(d, _Y_SMEM, _slot_cells(slots, st, show), cell_h=_SH, dy=_SH + 3)
    if st.kind == "handoff" and st.warp < WARP:        # lane 0's value travels down into slot `warp`
        sx = _cx(st.warp)
        sy = _Y_SMEM + (st.warp // 16) * (_SH + 3)
        d.curve(_cx(0), _Y_ROW1 + _CH, _cx(0) - 40, _Y_SMEM - 40, sx, sy - 1, stroke=svg.BLUE, sw=3)


def _draw_scalars(d: svg.Svg, trace: Trace, st: _Step, stale: set) -> None:
    """Phase 3's scalars and the rstd slot; before it, what the stale lanes did to the sum."""
    s, kind, nw, n0 = st.s, st.kind, st.nw, st.n0
    y = _Y_SMEM + 2 * (_SH + 3) + 24
    if st.phase >= 3:
        scalars = trace["scalars"]
        d.text(8, y, f"total = {scalars[0]:.6g}   mean = total / d = {scalars[1]:.6g}")
        if not (kind == "math" and s["what"].startswith("total")):
            d.cell(svg.WIDTH - 250, y - 20, 242, 28, f"smem rstd = {scalars[3]:.5g}", fill=RSTD, stroke=svg.PURPLE, sw=2)
    elif stale and 0 < s["step"] < 5:
        d.text(8, y, f"✗ lanes {nw}-{n0 - 1} started from slots nobody wrote: their values join the sum",
               fill=svg.VERMILLION, weight="bold")
    elif kind == "w0" and s["step"] == 5:
        w0 = trace["w0_lanes"]
        d.text(8, y, f"lane 0: total = {w0[-1, 0]:.6g}" + (f"  ✗ {n0 - nw} stale slots are in it" if st.deck_stale else ""),
               weight="bold", fill=svg.VERMILLION if st.deck_stale else svg.INK)


def drawing(trace: Trace, step_index: int, warp: int = 0, _cache=None) -> str:
    """SVG of step ``step_index`` of a four-phase trace, warp ``warp``'s lanes drawn: the title,
    VRAM, the registers, the barrier, shared memory, phase 3's scalars, in that order."""
    st = _Step.of(trace, step_index, warp)
    d = svg.Svg(height=360)
    d.text(8, 20, f"{PHASE_TITLES[st.phase]}: {PHASE_CAPTIONS[st.phase]}", weight="bold")
    _draw_vram(d, st)
    stale = _draw_registers(d, trace, st, {} if _cache is None else _cache)
    _draw_barrier(d, st)
    _draw_shared(d, trace, st)
    _draw_scalars(d, trace, st, stale)
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
