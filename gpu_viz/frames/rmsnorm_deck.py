"""Trace -> frames for notebook 09's four phases: one frame per step of a traced row.

Data path: ``gpu_viz.record.rmsnorm_deck`` / ``gpu_viz.model.rmsnorm_deck`` --> :class:`gpu_viz.trace.Trace`
--> :func:`frames` (one figure drawn once, its artists updated per step) --> :func:`animation`
(live + static player, the variant's kernel code beside it, the current line lit).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..model import rmsnorm_deck as model
from ..trace import GPU_SOURCE, Trace
from ..widgets import Animation, Frame, figure_png

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


def _fmt(v) -> str:
    if not np.isfinite(v):
        return "-"
    a = abs(float(v))
    return f"{v:.0f}" if a >= 100 else f"{v:.2f}" if a >= 1 else f"{v:.3f}"


class _Boxes:
    """A row (or rows) of register / slot boxes drawn once and updated per frame (fast re-render)."""

    def __init__(self, ax, n, per_row, norm, cmap, fontsize=7.0, fmt=None):
        import matplotlib.patches as mpatches

        self.norm, self.cmap, self.rects, self.texts = norm, cmap, [], []
        self.fmt = fmt or _fmt
        rows = -(-n // per_row)
        for i in range(n):
            r, c = divmod(i, per_row)
            yy = rows - 1 - r
            self.rects.append(ax.add_patch(mpatches.Rectangle((c + 0.03, yy + 0.05), 0.94, 0.9)))
            self.texts.append(ax.text(c + 0.5, yy + 0.5, "", ha="center", va="center", fontsize=fontsize))
        ax.set_xlim(0, per_row)
        ax.set_ylim(0, rows)
        ax.set_xticks([])
        ax.set_yticks([])
        for sp in ax.spines.values():
            sp.set_visible(False)

    def update(self, values, highlight=(), hatch=(), text=True, norm=None):
        norm = norm or self.norm
        for i, (rect, txt) in enumerate(zip(self.rects, self.texts)):
            v = values[i]
            color = self.cmap(norm(max(abs(float(v)), norm.vmin))) if np.isfinite(v) else (0.9, 0.9, 0.9, 1)
            rect.set_facecolor(color)
            rect.set_edgecolor("#d62728" if i in hatch else ("#111" if i in highlight else "#888"))
            rect.set_linewidth(2.0 if (i in highlight or i in hatch) else 0.5)
            rect.set_hatch("///" if i in hatch else None)
            lum = 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]
            txt.set_text(self.fmt(v) if text and np.isfinite(v) else "")
            txt.set_color("white" if lum < 0.45 else "black")


def _norm(trace: Trace):
    from matplotlib.colors import LogNorm

    vals = np.concatenate([trace["local"], trace["warp_lanes"].ravel(), trace["smem"], trace["w0_lanes"].ravel()])
    vals = vals[np.isfinite(vals) & (vals > 0)]
    lo = max(float(vals.min()) if vals.size else 1e-3, 1e-3)
    hi = max(float(vals.max()) if vals.size else 1.0, lo * 10)
    return LogNorm(vmin=lo, vmax=hi)


def _strip(ax, values, cmap, name, vmax):
    im = ax.imshow(np.asarray(values, dtype=np.float32).reshape(1, -1), aspect="auto", cmap=cmap, vmin=0,
                   vmax=vmax, interpolation="nearest")
    ax.set_facecolor("#f1f1f1")
    ax.set_yticks([])
    ax.set_xticks([])
    ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
    return im


def _span(ax, color, alpha):
    import matplotlib.patches as mpatches

    return ax.add_patch(mpatches.Rectangle((0, -0.5), 1, 1, color=color, alpha=alpha, visible=False))


def frames(trace: Trace, warp: int = 0, kinds: Optional[Sequence[str]] = None, dpi: int = 72) -> List[Frame]:
    """One frame per step of a four-phase trace (18 to 21 frames; 20 at the deck's shape).

    Each frame shows: the VRAM row (x read, y as it is written) with the elements this step touches,
    the chosen warp's 32 lanes as registers, a summary of every warp's lanes, the shared-memory slots
    (and the rstd slot), the phase's scalars, and the deck's memory caption for the phase.  One
    figure is drawn and its artists updated per step (a frame costs one PNG render).

    Args:
        trace: from :func:`record` / the model (kernel ``rmsnorm_deck_f32`` or ``rmsnorm_guarded_f32``).
        warp: which warp's lanes to draw (0..n_warps-1).
        kinds: only the steps of these kinds (``local``, ``shuffle``, ``handoff``, ``w0``, ``math``,
            ``output``); default all.
        dpi: PNG resolution.

    Raises:
        ValueError: not a four-phase trace, ``warp`` out of range, or an unknown kind.
    """
    import matplotlib.pyplot as plt

    known = {"local", "shuffle", "handoff", "w0", "math", "output"}
    if kinds is not None and not set(kinds) <= known:
        raise ValueError(f"kinds must be a subset of {sorted(known)}, got {sorted(set(kinds) - known)}")
    if trace.kernel not in model.KERNELS.values():
        raise ValueError(f"frames: trace must come from one of {sorted(model.KERNELS.values())}, got {trace.kernel!r}")
    p = trace.params
    d, block, nw = p["d"], p["block"], p["n_warps"]
    if not 0 <= warp < nw:
        raise ValueError(f"warp must be in 0..{nw - 1} for block={block}, got {warp}")
    steps = [st for st in trace.steps if kinds is None or st.data["kind"] in kinds]
    cmap = plt.get_cmap("viridis").with_extremes(bad="#e6e6e6")
    norm = _norm(trace)
    x, y_out = trace["x"], trace["y"]
    local, lanes_all, smem, w0, scalars = (trace["local"], trace["warp_lanes"], trace["smem"],
                                           trace["w0_lanes"], trace["scalars"])
    n0 = min(block, WARP)
    deck_reads_stale = p["variant"] == model.DECK and nw < WARP
    never_written = set(range(nw, n0))
    xmax = float(np.max(np.abs(x))) or 1.0
    finite_y = np.isfinite(y_out)
    ymax = float(np.max(np.abs(y_out[finite_y]))) if finite_y.any() else 1.0
    passes = -(-d // block)

    def as_grid(values):
        g = np.full(nw * WARP, np.nan, np.float32)
        g[:block] = values
        return g.reshape(nw, WARP)

    # phase 1 frames before the last pass show `local` part-way: the same float32 additions
    # (model.local_sums) over the passes done so far; after the last pass it is the record itself.
    local_after = {q: as_grid(model.local_sums(x[:(q + 1) * block], block)) for q in range(min(passes, 2) - 1)}
    local_grid = as_grid(local)
    from matplotlib.colors import Normalize

    y_norm = Normalize(vmin=0.0, vmax=ymax)

    # -- the figure, drawn once
    fig = plt.figure(figsize=(9.6, 6.0))
    gs = fig.add_gridspec(7, 2, height_ratios=[0.35, 0.35, 0.25, 1.6, 2.3, 0.9, 0.55],
                          width_ratios=[1, 1], hspace=0.75, wspace=0.12,
                          left=0.1, right=0.98, top=0.86, bottom=0.02)
    t_title = fig.text(0.02, 0.985, "", fontsize=12, fontweight="bold", ha="left", va="top")
    t_step = fig.text(0.02, 0.925, "", fontsize=9.5, ha="left")
    fig.text(0.98, 0.895, f"d={d}, block={block} ({nw} warps), {p['variant']} phase 2"
                          + (", smem pre-filled with 1000+s" if p["prefill"] else "") + "   data: "
                          + ("GPU record" if trace.source == GPU_SOURCE else "CPU model"),
             fontsize=7.5, ha="right", color="#555")
    ax_x, ax_y = fig.add_subplot(gs[0, :]), fig.add_subplot(gs[1, :])
    _strip(ax_x, np.abs(x), "Greys", "VRAM x", xmax)
    im_y = _strip(ax_y, np.full(d, np.nan), "Greens", "VRAM y", ymax)
    span_x, span_y = _span(ax_x, "#1f77b4", 0.45), _span(ax_y, "#2ca02c", 0.3)
    t_vram = ax_x.set_title("", fontsize=7.5, loc="left", pad=2)
    ax_r = fig.add_subplot(gs[3, :])
    regs_boxes = _Boxes(ax_r, WARP, 16, norm, cmap)
    t_regs = ax_r.set_title("", fontsize=7.5, loc="left")
    ax_s = fig.add_subplot(gs[4, 0])
    im_s = ax_s.imshow(np.full((nw, WARP), np.nan), aspect="auto", cmap=cmap, norm=norm, interpolation="nearest")
    if nw > 1:
        ax_s.axhline(warp, color="#d62728", linewidth=0.8)
    ax_s.set_xticks([0, 8, 16, 24, 31])
    ax_s.tick_params(labelsize=6, pad=1)
    t_summ = ax_s.set_title("", fontsize=7.5)
    ax_t = fig.add_subplot(gs[4, 1])
    ax_t.axis("off")
    t_explain = ax_t.text(0.02, 0.95, "", fontsize=8.5, va="top", ha="left", transform=ax_t.transAxes)
    ax_m = fig.add_subplot(gs[5, :])
    smem_boxes = _Boxes(ax_m, WARP, WARP, norm, cmap, fontsize=5.5, fmt=lambda v: f"{v:.3g}")
    t_smem = ax_m.set_title("", fontsize=7.5, loc="left")
    ax_v = fig.add_subplot(gs[6, :])
    ax_v.axis("off")
    t_vals = ax_v.text(0, 0.5, "", fontsize=9, va="center", bbox=dict(facecolor="#fff3c4", edgecolor="#999"))

    out: List[Frame] = []
    try:
        for step in steps:
            s = step.data
            phase, kind = s["phase"], s["kind"]
            t_title.set_text(f"{PHASE_TITLES[phase]}:  {PHASE_CAPTIONS[phase]}")
            t_step.set_text(step.label)
            # VRAM: x read, y written
            done = min(d, (s["pass_"] + 1) * block) if kind == "output" else 0
            im_y.set_data(np.where(np.arange(d) < done, np.abs(y_out), np.nan).reshape(1, -1))
            span_x.set_visible(kind in ("local", "output"))
            span_y.set_visible(kind == "output")
            t_vram.set_text("")
            if kind in ("local", "output"):
                lo_i, hi_i = s["pass_"] * block, min(d, (s["pass_"] + 1) * block)
                for sp in (span_x, span_y):
                    sp.set_x(lo_i - 0.5)
                    sp.set_width(hi_i - lo_i)
                t_vram.set_text(f"x[{lo_i}:{hi_i}] read this pass (LDG)" if kind == "local" else
                                f"x[{lo_i}:{hi_i}] read again, w from L1;  y[{lo_i}:{hi_i}] written (STG)")
            # registers
            grid_now = local_after.get(s.get("pass_"), local_grid) if kind == "local" else local_grid
            if kind == "local":
                regs, show_w, what = grid_now[warp], warp, "'local'"
            elif kind == "shuffle":
                regs, show_w, what = lanes_all[warp, s["step"]], warp, "'local'"
            elif kind == "handoff":
                regs, show_w, what = lanes_all[warp, -1], warp, "'local'"
            elif kind == "output":
                regs = np.full(WARP, np.nan, np.float32)
                first = s["pass_"] * block + warp * WARP
                seg = y_out[first:min(first + WARP, d, (s["pass_"] + 1) * block)] if first < d else y_out[:0]
                regs[:seg.size] = seg
                show_w, what = warp, f"y[i] for i = {first}.. (stored to VRAM)"
            else:
                regs, show_w, what = w0[s["step"] if kind == "w0" else -1], 0, "'total'"
            hl = set()
            if kind in ("shuffle", "w0") and s["step"] > 0:
                hl = set(range(s["offset"]))
            elif kind in ("handoff", "math"):
                hl = {0}
            hl = {lane for lane in hl if np.isfinite(regs[lane])}      # only lanes that exist
            stale_regs = (never_written if (deck_reads_stale and kind == "w0" and s["step"] == 0) else set())
            regs_boxes.update(regs, highlight=hl, hatch=stale_regs, norm=y_norm if kind == "output" else None)
            t_regs.set_text(f"registers: warp {show_w}'s 32 lanes, {what} (lanes 0-15 top, 16-31 below;"
                            " grey = no lane; bold = value still counts)")
            # all warps
            if kind == "local":
                grid, ttl = grid_now, f"all {nw} warps: local sums"
            elif kind == "shuffle":
                grid, ttl = lanes_all[:, s["step"]], f"all {nw} warps after shuffle step {s['step']}"
            else:
                grid, ttl = lanes_all[:, -1], f"all {nw} warps: lane 0 holds each warp's sum"
            im_s.set_data(np.where(np.isfinite(grid), np.maximum(grid, norm.vmin), np.nan))
            t_summ.set_text(ttl + " (row = warp, column = lane)")
            t_explain.set_text(_explain(step, trace, warp))
            # shared memory
            show_smem = kind in ("handoff", "w0", "math", "output")
            slots = np.full(WARP, np.nan, np.float32)
            if show_smem:
                slots = smem
            elif p["prefill"]:
                slots[:n0] = model.prefill_value(np.arange(n0))
            smem_boxes.update(slots, text=show_smem,
                              hatch=never_written if (deck_reads_stale and show_smem) else (),
                              highlight=set(range(min(nw, WARP))) if kind == "handoff" else ())
            note = (f"shared smem[0..31]: slots 0..{min(nw, WARP) - 1} get each warp's lane 0"
                    + (f"; slots {nw}..{n0 - 1} are never written" if nw < n0 else "")
                    + ("" if show_smem else ("  (now: the pre-filled 1000+s)" if p["prefill"] else "  (now: empty)")))
            if deck_reads_stale and show_smem:
                note += " -- and the deck's smem[tid] reads them (red)"
            t_smem.set_text(note)
            # phase 3 scalars
            if phase >= 3:
                first = kind == "math" and s["what"].startswith("total")
                t_vals.set_text(f"total = {scalars[0]:.7g}    mean = total / d = {scalars[1]:.7g}    "
                                + ("" if first else f"smem_rms = rstd = 1/sqrt(mean + eps) = {scalars[3]:.7g}"))
                t_vals.set_visible(True)
            else:
                t_vals.set_visible(False)
            out.append(Frame(png=figure_png(fig, dpi=dpi, tight=False, close=False),
                             caption=f"{step.label}  [{PHASE_CAPTIONS[phase]}]", line=step.line))
    finally:
        plt.close(fig)
    return out


def _explain(step, trace: Trace, warp: int) -> str:
    s, p = step.data, trace.params
    block, nw = p["block"], p["n_warps"]
    kind = s["kind"]
    if kind == "local":
        return (f"{block} threads, one register each.\nThread t adds x[i]^2 for i = t, t+{block}, ...\n"
                "No thread sees another's register.")
    if kind == "shuffle":
        if s["step"] == 0:
            return "Registers are private: a warp combines its\n32 values with __shfl_down_sync, 5 steps."
        lanes = trace["warp_lanes"][warp, s["step"]]
        return (f"offset {s['offset']}: lane l reads lane l+{s['offset']}'s register\n"
                f"(no shared memory). Lanes 0..{s['offset'] - 1} now matter;\n"
                f"warp {warp} lane 0 = {_fmt(lanes[0])}")
    if kind == "handoff":
        return (f"{nw} warps -> {nw} slots of shared memory,\nthen __syncthreads() so warp 0 sees them all."
                + ("\nSlots >= %d were never written." % nw if nw < WARP else ""))
    if kind == "w0":
        start = trace["w0_lanes"][0]
        if s["step"] == 0:
            if p["variant"] == model.DECK and nw < WARP:
                return (f"The deck: total = smem[tid] for all 32 lanes.\nLanes {nw}..31 read slots nobody wrote:"
                        f"\n{_fmt(np.nansum(start[nw:]))} of stale values join the sum.")
            return f"Warp 0 reads the {nw} partial sums\n(lanes >= {nw} take 0)."
        return f"warp 0, offset {s['offset']}: lane 0 = {_fmt(trace['w0_lanes'][s['step'], 0])}"
    if kind == "math":
        return ("One thread does the scalar math;\nd and eps come from the kernel's parameters\n"
                "(constant bank). The result goes to shared memory.")
    return "All threads read rstd from shared memory\nand write y = x * rstd * w back to VRAM."


def animation(trace: Trace, source: Optional[str] = None, warp: int = 0, title: Optional[str] = None,
              kinds: Optional[Sequence[str]] = None) -> Animation:
    """The player for a four-phase trace: frames (see :func:`frames`) + the kernel source, current
    line lit.  ``source``: the code the steps' lines point into (default: the variant's,
    ``gpu_viz.model.rmsnorm_deck.source``)."""
    p = trace.params
    where = "on the silicon" if trace.source == GPU_SOURCE else "in the CPU model"  # the title never claims a GPU run
    title = title or (f"Four phases {where}: RMSNorm of one row, d={p['d']}, {p['block']} threads "
                      f"({p['variant']} phase 2)")
    return Animation(frames(trace, warp=warp, kinds=kinds), title=title, provenance=trace.provenance,
                     source=source if source is not None else model.source(p["variant"]).text)
