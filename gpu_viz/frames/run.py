"""An emulated run -> frames: any kernel's warp-instructions, lane by lane, with the faults marked.

Data path: :class:`gpu_viz.emulator.Run` recorded with ``record=True`` (one event per warp-instruction
group: the warps, their active lanes, the register each lane wrote or the element it touched) -->
frames here (one per event of the warps drawn) --> :class:`gpu_viz.widgets.Animation`.

This is the player of a learner's own kernel (``Verdict.show()`` after a kernel exercise, or
:func:`animation` on any emulated run): each warp is a band of 32 lane cells; a lane that issues
the instruction is filled and shows what it wrote (a value, or the element it loaded or stored:
``C[37]``); a lane that sits it out (its branch side is not running, or it has exited) is blank;
a lane at which the emulator found a hazard, or that touched a wrong element, has a thick
vermillion border, and the caption says why.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..widgets import Animation, Frame, svg

WARP = 32
MAX_WARPS_DRAWN = 2
MAX_FRAMES = 48
_BAND = 170


def _short(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "T" if v else "F"
    if isinstance(v, (float, np.floating)):
        return svg.fmt(float(v), 4)
    v = int(v)
    return str(v) if -9999 <= v <= 99999 else f"{v:.1e}"


def _cells(ev: dict, w: int, marked: Set[int]):
    """(labels, fills, strokes, widths) of warp ``w``'s 32 lanes in event ``ev``."""
    k = ev["warps"].index(w)
    mask = ev["masks"][k]
    labels, fills, strokes, widths = [""] * WARP, ["#FFFFFF"] * WARP, [svg.GREY] * WARP, [1.0] * WARP
    per_lane: Dict[int, str] = {}
    if "elements" in ev:
        for t, name in zip(ev["mem_threads"].tolist(), ev["elements"]):
            if t // WARP == w:
                per_lane[t % WARP] = name
    elif "values" in ev:
        for t, v in zip(ev["threads"].tolist(), ev["values"].tolist()):
            if t // WARP == w:
                per_lane[t % WARP] = _short(v)
    fill = svg.ORANGE if ev.get("write") else (svg.SKY if "elements" in ev else svg.LIGHT)
    for lane in range(WARP):
        if mask >> lane & 1:
            labels[lane] = per_lane.get(lane, "")
            fills[lane] = fill
            strokes[lane] = svg.MUTED
        if w * WARP + lane in marked:
            strokes[lane] = svg.VERMILLION
            widths[lane] = 4.0
    return labels, fills, strokes, widths


def drawing(ev: dict, warps: Sequence[int], marked: Set[int], names: Dict[int, str]) -> str:
    """SVG of one event: a band per drawn warp."""
    d = svg.Svg(height=min(svg.HEIGHT, 10 + _BAND * len(warps)))
    for j, w in enumerate(warps):
        y0 = 4 + j * _BAND
        issuing = w in ev["warps"]
        d.rect(0, y0, svg.WIDTH, _BAND - 10, fill="#FFFFFF", stroke=svg.BLACK if issuing else svg.GREY,
               sw=3 if issuing else 1)
        head = f"warp {w}"
        if issuing:
            k = ev["warps"].index(w)
            n_act = bin(ev["masks"][k]).count("1")
            head += f": line {ev['line'] or '?'}, {ev['op']}, {n_act} of 32 lanes"
        else:
            head += ": not issuing this instruction"
        d.text(8, y0 + 24, head, weight="bold")
        if issuing:
            labels, fills, strokes, widths = _cells(ev, w, marked)
        else:
            labels, fills, strokes, widths = [""] * WARP, ["#FFFFFF"] * WARP, [svg.GREY] * WARP, [1.0] * WARP
        svg.lane_rows(d, 64, y0 + 38, [np.nan] * WARP, labels=labels, fills=fills, strokes=strokes, widths=widths,
                      cell_w=40, cell_h=34)
        what = names.get(w, "")
        if what:
            d.text(8, y0 + _BAND - 22, what, fill=svg.MUTED)
    return d.markup()


def animation(run, source: Optional[str], *, block: int = 0, warps: Optional[Sequence[int]] = None,
              marked: Sequence[int] = (), focus_seq: Optional[int] = None, notes: Dict[int, str] = None,
              title: Optional[str] = None, provenance: Optional[str] = None) -> Animation:
    """The player of an emulated run (``run.events`` from ``record=True``).

    Args:
        run: the :class:`~gpu_viz.emulator.Run`.  source: the kernel's source (lines highlighted).
        block: the block (linear number) whose warps are drawn.
        warps: the warps drawn (default: the first two that issued).
        marked: thread numbers (in the block) to mark.
        focus_seq: an event the frames must include (the frames are a window around it).
        notes: {event seq: caption text} added to those frames' captions.

    Raises:
        ValueError: the run has no events (record it with ``record=True``), or none for ``block``.
    """
    events = [e for e in (run.events or []) if e["block"] == block]
    if not events:
        raise ValueError("the run has no recorded events for that block: launch it with record=True")
    if warps is None:
        seen: List[int] = []
        for e in events:
            for w in e["warps"]:
                if w not in seen:
                    seen.append(w)
        warps = seen[:MAX_WARPS_DRAWN]
    warps = list(warps)[:MAX_WARPS_DRAWN]
    mine = [e for e in events if set(e["warps"]) & set(warps)]
    start = 0
    if focus_seq is not None:
        k = next((i for i, e in enumerate(mine) if e["seq"] >= focus_seq), len(mine) - 1)
        start = max(0, min(k - MAX_FRAMES // 2, len(mine) - MAX_FRAMES))
    shown = mine[start:start + MAX_FRAMES]
    marked = set(int(t) for t in marked)
    notes = notes or {}
    lines = source.splitlines() if source else []
    n_lines = len(lines)
    frames = []
    for e in shown:
        op = e["op"]
        if e["line"] and 1 <= e["line"] <= n_lines:
            code = " ".join(lines[e["line"] - 1].split())
            cap = f"line {e['line']}: {code[:70]}{'...' if len(code) > 70 else ''} [{op}]"
        else:
            cap = f"[{op}] (no source line)"
        if e.get("elements"):
            cap += ": each lane's element shown"
        if e["seq"] in notes:
            cap += ". " + notes[e["seq"]]
        line = e["line"] if e["line"] and 1 <= e["line"] <= n_lines else None
        frames.append(Frame(drawing(e, warps, marked, {}), cap, line))
    more = len(mine) - start - len(shown)
    if more > 0 or start > 0:
        cap = frames[-1].caption
        frames[-1] = Frame(frames[-1].markup, cap + f" ({len(mine)} warp-instructions of these warps in all; "
                                                        f"{len(shown)} shown)", frames[-1].line)
    from .. import emulator

    return Animation(frames, title=title or f"Your kernel, block {block}, warps {', '.join(map(str, warps))}",
                     provenance=provenance or emulator.LABEL, source=source)


def replay(verdict, **options) -> Animation:
    """The player of the launch a kernel exercise's verdict is about: re-run in the emulator with
    its events recorded, the block and warps of the first fault drawn, the fault marked."""
    task, program, case, inputs = verdict.replay
    obs = task._run_emulated(program, [(case, inputs)], record=True)[0]
    run = obs.run
    errs = [h for h in run.hazards if h.severity == "error"]
    block, warps, marked, focus, notes = 0, None, [], None, {}
    if errs:
        h = errs[0]
        g = case.grid + (1, 1)
        b3 = h.where.block
        block = b3[0] + g[0] * (b3[1] + g[1] * b3[2])
        t = h.where.warp * WARP + h.where.lane
        warps = [h.where.warp]
        marked = [t]
        if h.other is not None and h.other.block == h.where.block:
            marked.append(h.other.warp * WARP + h.other.lane)
            if h.other.warp != h.where.warp:
                warps.append(h.other.warp)
        at_line = [e for e in run.events if e["block"] == block and e["line"] == h.where.line
                   and h.where.warp in e["warps"]]
        ev = next((e for e in at_line if "elements" in e), at_line[0] if at_line else None)
        if ev is not None:
            focus = ev["seq"]
            notes[ev["seq"]] = h.message
    else:
        bad = _first_wrong(task, obs)
        if bad is not None:
            name, k = bad
            for e in run.events:
                if e.get("write") and f"{name}[{k}]" in e.get("elements", ()):
                    i = e["elements"].index(f"{name}[{k}]")
                    t = int(e["mem_threads"][i])
                    block, warps, marked, focus = e["block"], [t // WARP], [t], e["seq"]
                    notes[e["seq"]] = f"this lane stores {name}[{k}], which is wrong"
                    break
    prov = f"emulated on the CPU from your kernel's PTX: a replay of the launch {case.label()}"
    return animation(run, program.source, block=block, warps=warps, marked=marked, focus_seq=focus, notes=notes,
                     title=f"[{verdict.exercise}] your kernel at {case.label()}", provenance=prov, **options)


def _first_wrong(task, obs) -> Optional[Tuple[str, int]]:
    for p in task.params:
        bad = obs.bad.get(p.name)
        if bad is not None and bad.size:
            return p.name, int(bad[0])
    return None
