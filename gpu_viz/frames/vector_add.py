"""Trace -> frames for notebook 03's vector add: two warps adding 64 elements, lane by lane.

Data path: ``gpu_viz.record.vector_add`` / ``gpu_viz.model.vector_add`` --> :class:`gpu_viz.trace.Trace`
--> frames here (SVG, one per Step of the warps drawn) --> :class:`gpu_viz.widgets.Animation`.
Each warp is a band: its six warp-instructions (done, issuing now, to come), then its 32 lanes
(lanes 0-15 above 16-31) holding the register the warp wrote last, with the recorded values.
"""
from __future__ import annotations

from typing import List

import numpy as np

from ..trace import Trace
from ..widgets import Animation, Frame, svg
from ..words import count

WARP = 32
#: Warps drawn (two bands of 32 lanes fit a slide; the others issue the same six instructions).
#: With more warps, the first and the LAST are drawn: the last is where the bounds check switches
#: lanes off (notebook 03's exercise asks about it).
MAX_WARPS_DRAWN = 2


def drawn_warps(trace: Trace) -> List[int]:
    """The (grid-wide) warp numbers the player draws: all of them up to :data:`MAX_WARPS_DRAWN`,
    else the first and the last."""
    warps = int(trace.params["warps"])
    return list(range(warps)) if warps <= MAX_WARPS_DRAWN else [0, warps - 1]
#: The six instructions as the bands name them, with the SASS each becomes on sm_75..sm_90, and
#: what the lane cells show once a warp has issued it.
INSTRUCTIONS = (("index", "S2R + IMAD", "i = blockIdx.x * blockDim.x + threadIdx.x"),
                ("bounds", "ISETP + @P0 EXIT", "i < n: the lane's predicate (T runs on, F leaves)"),
                ("LDG a", "LDG.E", "a = A[i], loaded into a register"),
                ("LDG b", "LDG.E", "b = B[i], loaded into a register"),
                ("FADD", "FADD", "c = a + b, in a register"),
                ("STG", "STG.E", "C[i] = c, stored to global memory"))
_FILL = (svg.LIGHT, None, svg.SKY, svg.YELLOW, svg.ORANGE, svg.GREEN)   # fill per instruction's register
_BAND = 150


def _progress(step_k: int, step_w: int, w: int) -> int:
    """Steps warp ``w`` has completed when warp ``step_w`` has just issued step ``step_k``."""
    if step_k < 0:
        return 0
    return step_k + 1 if w <= step_w else step_k


def _flat_warp(trace: Trace) -> np.ndarray:
    per_block = -(-trace.params["block"] // WARP)
    return trace["block"].astype(np.int64) * per_block + trace["warp"]


def _lanes(trace: Trace, warps) -> List[np.ndarray]:
    """For each drawn warp (``warps``: grid-wide warp numbers, or a count = the first that many):
    the trace rows of its lanes 0..31 (-1: none)."""
    flat_warp = _flat_warp(trace)
    out = []
    for w in (range(warps) if isinstance(warps, (int, np.integer)) else warps):
        rows = np.full(WARP, -1, np.int64)
        sel = np.nonzero(flat_warp == w)[0]
        rows[trace["lane"][sel]] = sel
        out.append(rows)
    return out


def drawing(trace: Trace, frame: int, lanes=None) -> str:
    """SVG of step ``frame`` of a vector-add trace: one band per drawn warp (:func:`drawn_warps`).

    ``lanes``: :func:`_lanes` of the drawn warps (computed here when None).
    """
    step = trace.steps[frame]
    k, sw = step.data["step"], step.data["warp"]
    n = trace.params["n"]
    ids = drawn_warps(trace)
    lanes = _lanes(trace, ids) if lanes is None else lanes
    cols = {"index": trace["index"], "a": trace["a"], "b": trace["b"], "c": trace["c"]}
    d = svg.Svg(height=min(svg.HEIGHT, 30 + _BAND * len(ids)))
    for band, w in enumerate(ids):
        y0 = 4 + band * _BAND
        done = _progress(k, sw, w)
        issuing = w == sw
        d.rect(0, y0, svg.WIDTH, _BAND - 10, fill="#FFFFFF", stroke=svg.BLACK if issuing else svg.GREY,
               sw=3 if issuing else 1)
        d.text(8, y0 + 24, f"warp {w}" + (" (last)" if band and w != band else ""), weight="bold")
        # the six instructions: done (check mark), issuing now (bold, yellow), to come (dashed)
        x = 90
        for j, (name, _sass, _what) in enumerate(INSTRUCTIONS):
            now = issuing and j == k
            fill = svg.YELLOW if now else (svg.LIGHT if j < done else "#FFFFFF")
            label = ("✓ " if j < done and not now else "") + name
            d.cell(x, y0 + 5, 104, 26, label, fill=fill, stroke=svg.BLACK if now else svg.MUTED,
                   sw=3 if now else 1, weight="bold" if now else None, dash=None if j < done else "4 3")
            x += 110
        last = done - 1
        rows = lanes[band]
        values, fills, labels, strokes = [], [], [], []
        for lane in range(WARP):
            t = rows[lane]
            if t < 0:
                values.append(np.nan); fills.append("#FFFFFF"); labels.append(""); strokes.append(svg.GREY)
                continue
            ok = bool(trace["index"][t] < n)
            if last < 0:
                label, fill = "", "#FFFFFF"
            elif last == 0:
                label, fill = str(int(cols["index"][t])), svg.LIGHT
            elif last == 1 or not ok:
                label, fill = ("T", "#CFEFE3") if ok else ("F", "#F6D0BE")
            else:
                label = svg.fmt(float(cols["abcc"[last - 2]][t]), 4)
                fill = _FILL[last]
            values.append(np.nan); fills.append(fill); labels.append(label)
            strokes.append(svg.MUTED if ok or last < 1 else svg.VERMILLION)
        svg.lane_rows(d, 64, y0 + 40, values, labels=labels, fills=fills, strokes=strokes)
        what = ("nothing issued yet" if last < 0 else
                f"lanes hold {INSTRUCTIONS[last][2]}  (SASS {INSTRUCTIONS[last][1]})")
        d.text(8, y0 + _BAND - 18, what, fill=svg.MUTED)
    return d.markup()


def animation(trace: Trace, source: str) -> Animation:
    """Animation of the steps of a vector-add trace issued by the warps drawn (:func:`drawn_warps`:
    all of up to :data:`MAX_WARPS_DRAWN`, else the first and the last; the others issue the same
    six instructions, which the last caption says).

    ``source`` is the text of region ``vector_add`` (``kernels.snippet(...).text``), whose lines
    the steps highlight.
    """
    warps = trace.params["warps"]
    ids = drawn_warps(trace)
    shown = [i for i, s in enumerate(trace.steps) if s.data["warp"] in ids or s.data["warp"] < 0]   # and the launch
    lanes = _lanes(trace, ids)
    frames = []
    for j, i in enumerate(shown):
        st = trace.steps[i]
        cap = st.label  # the model's label says what the warp issued (and, for LDG / FADD / STG, that it is one instruction)
        if j == len(shown) - 1 and warps > MAX_WARPS_DRAWN:
            between = "warp 1" if warps == 3 else f"warps 1..{warps - 2}"
            cap += f" ({between} issue the same six instructions; not drawn)"
        frames.append(Frame(drawing(trace, i, lanes), cap, st.line))
    return Animation(frames, title=f"C = A + B on {trace.params['n']} elements: {count(warps, 'warp')}, "
                                   f"6 warp-instructions each", provenance=trace.provenance, source=source)


#: What each SASS mnemonic of vector_add does, in the deck's six steps' terms; each at most
#: SASS_ROLE_CHARS characters, what notebook 03 prints beside a SASS line on one slide row.
SASS_ROLE_CHARS = 44
SASS_ROLES = (
    ("S2R", "1 index: read threadIdx.x (or blockIdx.x)"),
    ("CS2R", "1 index: read a special register"),
    ("S2UR", "1 index: read blockIdx.x (warp-uniform)"),
    ("IMAD.WIDE", "address: base + 4 * i (64-bit)"),
    ("IMAD", "1 index: i = blockIdx*blockDim + threadIdx"),
    ("ISETP", "2 bounds check: predicate P0 = (i >= n)"),
    ("@P0 EXIT", "2 bounds check: lanes with i >= n leave"),
    ("LDG", "3/4 load: one instruction, 32 lanes' floats"),
    ("FADD", "5 add: one instruction, 32 adds"),
    ("STG", "6 store: one instruction, 32 lanes' floats"),
    ("EXIT", "done"),
)


def classify_sass(text: str) -> list:
    """[(sass line, role)] for :func:`sass` output; role "setup: stack pointer, constants, addresses"
    for a line no SASS_ROLES entry names."""
    out = []
    for line in (text or "").splitlines():
        instr = line.split("*/", 1)[-1].strip()
        role = next((r for key, r in SASS_ROLES if instr.startswith(key)), "setup: stack pointer, constants, addresses")
        out.append((line, role))
    return out
