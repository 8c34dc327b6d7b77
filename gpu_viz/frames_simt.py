"""Trace -> frames for notebook 03: two warps adding a vector, and a warp split by a branch.

Data path: :func:`gpu_viz.simt.vector_add_trace` / :func:`gpu_viz.simt.divergence_trace` -->
:class:`gpu_viz.trace.Trace` --> frames here (matplotlib, one per Step) -->
:class:`gpu_viz.widgets.player.Animation` (live + static).
"""
from __future__ import annotations

from typing import List

import numpy as np

from .trace import Trace
from .widgets.player import Animation, Frame

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


def fast_frames(draw, count: int, captions, lines=None, dpi: int = 70) -> List[Frame]:
    """Like ``widgets.player.render_frames`` but saves each figure once (no tight bbox pass)."""
    import io
    import matplotlib.pyplot as plt

    if len(captions) != count:
        raise ValueError(f"fast_frames: captions has {len(captions)} entries, expected count={count}")
    lines = list(lines) if lines is not None else [None] * count
    out = []
    for i in range(count):
        fig = draw(i)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        plt.close(fig)
        out.append(Frame(png=buf.getvalue(), caption=captions[i], line=lines[i]))
    return out


def vector_add_figure(trace: Trace, frame: int):
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


def vector_add_animation(trace: Trace, source: str, dpi: int = 70) -> Animation:
    """Animation of every step of ``trace`` (from :func:`gpu_viz.simt.vector_add_trace`).

    ``source`` is the text of region ``vector_add`` (``kernels.snippet(...).text``), whose lines
    the steps highlight.
    """
    steps = trace.steps
    frames = fast_frames(lambda i: vector_add_figure(trace, i), len(steps), [s.label for s in steps],
                         [s.line for s in steps], dpi=dpi)
    warps = trace.params["warps"]
    return Animation(frames, title=f"C = A + B on {trace.params['n']} elements: {warps} warp(s), "
                                   f"6 warp-instructions each", provenance=trace.provenance, source=source)


# -- divergence --------------------------------------------------------------------------------

def divergence_groups(trace: Trace) -> List[dict]:
    """One dict per (warp, active mask) in issue order: warp id, branch, mask, lanes.

    Groups come from the trace's recorded masks: what ran together under one mask.
    """
    blk, warp, branch, active = trace["block"], trace["warp"], trace["branch"], trace["active"]
    groups = []
    for key in sorted(set(zip(blk.tolist(), warp.tolist()))):
        sel = (blk == key[0]) & (warp == key[1])
        for br in sorted(set(branch[sel].tolist())):
            s2 = sel & (branch == br)
            masks = sorted(set(active[s2].tolist()))
            groups.append({"block": key[0], "warp": key[1], "branch": br, "masks": masks,
                           "lanes": sorted(trace["lane"][s2].tolist())})
    return groups


def divergence_figure(trace: Trace, highlight: int = -1):
    """Lanes of each warp coloured by branch; group ``highlight`` (index into divergence_groups) lit."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    groups = divergence_groups(trace)
    keys = sorted({(g["block"], g["warp"]) for g in groups})[:MAX_WARPS_DRAWN]
    fig, ax = plt.subplots(figsize=(12, 0.7 + 0.85 * len(keys)))
    ax.set_xlim(-3.5, WARP + 9)
    ax.set_ylim(len(keys) - 0.3, -0.9)
    ax.axis("off")
    colors = {0: "#4c9be8", 1: "#f28e2b"}
    lit = groups[highlight] if 0 <= highlight < len(groups) else None
    for r, key in enumerate(keys):
        ax.text(-0.5, r, f"block {key[0]} warp {key[1]}", ha="right", va="center", fontsize=8)
        for g in (g for g in groups if (g["block"], g["warp"]) == key):
            on = lit is None or lit is g
            for lane in g["lanes"]:
                ax.add_patch(Rectangle((lane, r - 0.35), 0.92, 0.7, fc=colors[g["branch"]],
                                       alpha=1.0 if on else 0.15, ec="#333" if lit is g else "none"))
            if lit is g:
                ax.text(WARP + 0.5, r, "mask " + ", ".join(f"0x{m:08x}" for m in g["masks"]),
                        va="center", fontsize=8, family="monospace")
    for lane in range(0, WARP, 4):
        ax.text(lane + 0.46, -0.6, str(lane), ha="center", fontsize=7, color="#555")
    ax.text(-3.4, -0.6, "lane", fontsize=7, color="#555")
    ax.set_title(f"{trace.kernel}: blue = path A, orange = path B", fontsize=10, loc="left")
    return fig


def divergence_animation(trace: Trace, source: str, a_line: int, b_line: int, dpi: int = 70) -> Animation:
    """One frame per (warp, branch) the SM issues, its __activemask() shown; then the whole picture."""
    groups = divergence_groups(trace)
    keys = {(g["block"], g["warp"]) for g in groups}
    groups = [g for g in groups if (g["block"], g["warp"]) in sorted(keys)[:MAX_WARPS_DRAWN]]
    caps = [f"block {g['block']} warp {g['warp']} runs path {'AB'[g['branch']]} with "
            f"__activemask() = " + ", ".join(f"0x{m:08x}" for m in g["masks"])
            + f" ({len(g['lanes'])} of 32 lanes)" for g in groups]
    caps.append(f"{len(groups)} path executions for {len(keys)} warp(s)")
    lines = [a_line if g["branch"] == 0 else b_line for g in groups] + [None]
    frames = fast_frames(lambda i: divergence_figure(trace, i if i < len(groups) else -1),
                         len(caps), caps, lines, dpi=dpi)
    return Animation(frames, title=f"{trace.kernel}: who runs, under which mask",
                     provenance=trace.provenance, source=source)
