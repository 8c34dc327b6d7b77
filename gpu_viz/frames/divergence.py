"""Trace -> frames for notebook 03's divergence demo: who runs a warp's branch, under which mask.

Data path: ``gpu_viz.record.divergence`` / ``gpu_viz.model.divergence`` --> :class:`gpu_viz.trace.Trace`
--> frames here (one per (warp, active mask), in issue order) --> :class:`gpu_viz.widgets.Animation`.
"""
from __future__ import annotations

from typing import List, Optional

from ..trace import Trace
from ..widgets import Animation, render_frames
from .vector_add import MAX_WARPS_DRAWN, WARP


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


def figure(trace: Trace, highlight: int = -1, groups: Optional[List[dict]] = None):
    """Lanes of the first warps coloured by branch; group ``highlight`` (index into ``groups``,
    default :func:`mask_groups` of the warps drawn) lit."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    groups = mask_groups(trace, MAX_WARPS_DRAWN) if groups is None else groups
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


def _line_of(source: str, needle: str):
    return next((i for i, line in enumerate(source.splitlines(), 1) if needle in line), None)


def animation(trace: Trace, source: str, dpi: int = 70) -> Animation:
    """One frame per (warp, branch) the SM issues, its __activemask() shown; then the whole picture.

    ``source``: the ``branch`` region's text; each frame lights the path its lanes run.
    """
    a_line, b_line = _line_of(source, "path_a("), _line_of(source, "path_b(")
    groups = mask_groups(trace, MAX_WARPS_DRAWN)  # once, and only of the warps drawn
    n_warps = len(_warps(trace))
    caps = [f"block {g['block']} warp {g['warp']} runs path {'AB'[g['branch']]} with "
            f"__activemask() = " + ", ".join(f"0x{m:08x}" for m in g["masks"])
            + f" ({len(g['lanes'])} of 32 lanes)" for g in groups]
    caps.append(f"{len(groups)} path executions for {min(n_warps, MAX_WARPS_DRAWN)} warp(s)"
                + (f" (the first {MAX_WARPS_DRAWN} of {n_warps} drawn)" if n_warps > MAX_WARPS_DRAWN else ""))
    lines = [a_line if g["branch"] == 0 else b_line for g in groups] + [None]
    frames = render_frames(lambda i: figure(trace, i if i < len(groups) else -1, groups),
                           len(caps), caps, lines, dpi=dpi, tight=False)
    return Animation(frames, title=f"{trace.kernel}: who runs, under which mask",
                     provenance=trace.provenance, source=source)


def mask_bits(mask: int) -> str:
    """A 32-bit active mask as lanes 31..0, e.g. '0101...0101' for 0x55555555."""
    return format(int(mask) & 0xFFFFFFFF, "032b")
