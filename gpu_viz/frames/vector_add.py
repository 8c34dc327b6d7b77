"""Trace -> frames for notebook 03's vector add: two warps adding 64 elements, lane by lane.

Data path: ``gpu_viz.record.vector_add`` / ``gpu_viz.model.vector_add`` --> :class:`gpu_viz.trace.Trace`
--> frames here (matplotlib, one per Step) --> :class:`gpu_viz.widgets.Animation` (live + static).
"""
from __future__ import annotations

import numpy as np

from ..trace import Trace
from ..widgets import Animation, render_frames

WARP = 32
_ROWS = ("i", "pred", "a", "b", "c", "C[i]")  # lane registers in issue order, then global memory
_ROW_STAGE = {"i": 0, "pred": 1, "a": 2, "b": 3, "c": 4, "C[i]": 5}  # step after which a row is filled
_ROW_ARRAY = {"a": "a", "b": "b", "c": "c", "C[i]": "c"}
MAX_WARPS_DRAWN = 4


def _progress(step_k: int, step_w: int, w: int) -> int:
    """Steps warp ``w`` has completed when warp ``step_w`` has just issued step ``step_k``."""
    if step_k < 0:
        return 0
    return step_k + 1 if w <= step_w else step_k


def _fmt(v: float) -> str:
    return "" if np.isnan(v) else f"{v:.2f}"


#: Lanes whose values are printed (the others are shown by colour only: text is slow to draw).
LABELLED_LANES = (0, 1, 2, 31)


def figure(trace: Trace, frame: int):
    """The figure of step ``frame`` of a vector-add trace: one band of 32 lanes per warp.

    Rows per warp: i (index), pred (i < n), registers a, b, c, and C[i] in global memory; a row
    is filled once the warp has issued its instruction.  Values are coloured (blue < 0 < red); lanes 0, 1, 2 and 31 print them.
    """
    import matplotlib.pyplot as plt
    from matplotlib import cm, colors

    step = trace.steps[frame]
    k, sw = step.data["step"], step.data["warp"]
    n, block = trace.params["n"], trace.params["block"]
    warps = min(trace.params["warps"], MAX_WARPS_DRAWN)
    idx = trace["index"]
    warp_of = trace["block"] * (-(-block // WARP)) + trace["warp"]
    vals = np.concatenate([trace[r][np.isfinite(trace[r])] for r in ("a", "b", "c")] + [np.zeros(1)])
    norm = colors.Normalize(-max(1e-6, np.abs(vals).max()), max(1e-6, np.abs(vals).max()))
    cmap = cm.get_cmap("coolwarm") if hasattr(cm, "get_cmap") else plt.get_cmap("coolwarm")
    R = len(_ROWS)
    band = R + 1
    img = np.ones((warps * band, WARP, 3))
    texts = []
    for w in range(warps):
        done = _progress(k, sw, w)
        y0 = w * band + 1
        if w == sw:
            img[y0 - 1, :, :] = (1.0, 0.93, 0.7)
        for t in np.nonzero(warp_of == w)[0]:
            lane, ok = int(trace["lane"][t]), bool(idx[t] < n)
            for r, row in enumerate(_ROWS):
                if done <= _ROW_STAGE[row]:
                    continue
                if row == "i":
                    img[y0 + r, lane] = (0.85, 0.9, 0.97)
                    txt = str(int(idx[t]))
                elif row == "pred":
                    img[y0 + r, lane] = (0.7, 0.9, 0.7) if ok else (0.95, 0.7, 0.7)
                    txt = "T" if ok else "F"
                else:
                    v = float(trace[_ROW_ARRAY[row]][t])
                    img[y0 + r, lane] = cmap(norm(v))[:3] if ok else (0.9, 0.9, 0.9)
                    txt = _fmt(v)
                if lane in LABELLED_LANES:
                    texts.append((lane, y0 + r, txt))
    fig = plt.figure(figsize=(12, 0.35 + 0.3 * warps * band))
    ax = fig.add_axes([0.07, 0.02, 0.92, 0.86])
    ax.imshow(img, aspect="auto", interpolation="nearest", extent=(-0.5, WARP - 0.5, warps * band - 0.5, -0.5))
    ax.set_xticks([]); ax.set_yticks([])
    for lane, y, txt in texts:
        ax.text(lane, y, txt, fontsize=7, ha="center", va="center")
    for w in range(warps):
        y0 = w * band + 1
        issuing = w == sw
        ax.text(-0.4, y0 - 1, f"warp {w}: {_progress(k, sw, w)} of 6 instructions issued"
                + ("  <- this instruction, once, for all 32 lanes" if issuing else ""),
                fontsize=8, va="center", weight="bold" if issuing else "normal")
        for r, row in enumerate(_ROWS):
            ax.text(-0.7, y0 + r, row, fontsize=8, ha="right", va="center")
    ax.text(WARP - 0.5, -0.5 - 0.35, "lanes 0 .. 31 ->", fontsize=7, ha="right", va="bottom")
    fig.suptitle(step.label, fontsize=10, x=0.07, ha="left")
    return fig


def animation(trace: Trace, source: str, dpi: int = 70) -> Animation:
    """Animation of the steps of a vector-add trace issued by the warps drawn (the first
    :data:`MAX_WARPS_DRAWN`; the others issue the same six instructions, which the last caption says).

    ``source`` is the text of region ``vector_add`` (``kernels.snippet(...).text``), whose lines
    the steps highlight.
    """
    warps = trace.params["warps"]
    shown = [i for i, s in enumerate(trace.steps) if s.data["warp"] < MAX_WARPS_DRAWN]
    caps = [trace.steps[i].label for i in shown]
    if warps > MAX_WARPS_DRAWN:
        caps[-1] += f" (warps {MAX_WARPS_DRAWN}..{warps - 1} issue the same six instructions; not drawn)"
    frames = render_frames(lambda j: figure(trace, shown[j]), len(shown), caps,
                           [trace.steps[i].line for i in shown], dpi=dpi, tight=False)
    return Animation(frames, title=f"C = A + B on {trace.params['n']} elements: {warps} warp(s), "
                                   f"6 warp-instructions each", provenance=trace.provenance, source=source)


#: What each SASS mnemonic of vector_add does, in the deck's six steps' terms.
SASS_ROLES = (
    ("S2R", "1 index: read blockIdx.x / threadIdx.x"),
    ("CS2R", "1 index: read a special register"),
    ("S2UR", "1 index: read blockIdx.x (uniform register: same for the whole warp)"),
    ("IMAD.WIDE", "address: base + 4 * i (64-bit)"),
    ("IMAD", "1 index: i = blockIdx.x * blockDim.x + threadIdx.x"),
    ("ISETP", "2 bounds check: predicate P0 = (i >= n)"),
    ("@P0 EXIT", "2 bounds check: lanes with i >= n leave"),
    ("LDG", "3/4 load: one instruction, 32 lanes' floats"),
    ("FADD", "5 add: one instruction, 32 adds"),
    ("STG", "6 store: one instruction, 32 lanes' floats"),
    ("EXIT", "done"),
)


def classify_sass(text: str) -> list:
    """[(sass line, role)] for :func:`sass` output; role "setup (stack pointer, constants)" otherwise."""
    out = []
    for line in (text or "").splitlines():
        instr = line.split("*/", 1)[-1].strip()
        role = next((r for key, r in SASS_ROLES if instr.startswith(key)), "setup: stack pointer, constants, addresses")
        out.append((line, role))
    return out
