"""What a benchmark run or record shows: tables, bar charts, the seed's table beside ours, the
performance checks as a table (rows in DESIGN.md section 5's format, live from
:mod:`gpu_viz.rmsnorm.bench` or from a committed record); and ``gpu-viz bench``, which measures
with :mod:`gpu_viz.rmsnorm.bench` and prints with these.
"""
from __future__ import annotations

import html as _html
import math
import re
from typing import Dict, List, Optional, Sequence, Tuple

from pathlib import Path

from .. import backend, check, words
from ..measure import records
from ..measure.timing import CALL, KERNEL
from . import bench, bench_record, plan, targets
from .dtypes import OPS, RMSNORM, RMSNORM_ADD, RMSNORM_GATE
from .plan import SEED_H100
from .providers import PROVIDERS, WIDE_PROVIDERS
from .dtypes import dtype_name

def _fmt(v, spec="{:,.2f}"):
    return "—" if v is None else spec.format(v)


class Table:
    """A table of rows: ``html()`` for notebooks (also its rich display), ``markdown()`` and
    ``plain()`` (``str()``) for the CLI.  ``caption`` carries the provenance."""

    def __init__(self, header: List[str], body: List[List[str]], caption: str = "",
                 labels: Optional[Dict[str, str]] = None, align: Optional[Sequence[str]] = None):
        self.header, self.body, self.caption = header, body, caption
        #: identifiers (a header or a whole cell, e.g. "fused µs", "rmsnorm") and how ``html()``
        #: -- the slides' and notebooks' rendering -- writes them; markdown / plain keep the names
        self.labels = dict(labels or {})
        #: per column "left" | "right"; None: numbers right, text left (:func:`_column_align`)
        self.align = list(align) if align is not None else None

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(r) + " |" for r in self.body]
        if self.caption:
            lines += ["", f"*{self.caption}*"]
        return "\n".join(lines)

    def plain(self) -> str:
        widths = [max(len(h), *(len(r[i]) for r in self.body)) if self.body else len(h)
                  for i, h in enumerate(self.header)]
        fmt = "  ".join("{:>%d}" % w for w in widths)
        lines = [fmt.format(*self.header), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*r) for r in self.body]
        if self.caption:
            lines.append(self.caption)
        return "\n".join(lines)

    def html(self) -> str:
        align = self.align or [_column_align([r[i] for r in self.body if i < len(r)])
                               for i in range(len(self.header))]

        def e(text):  # display name, escaped, a number kept with its unit and its ratio on one line,
            # a hyphenated word, date or id and a short parenthesis whole (words.keep_whole)
            return _html.escape(words.keep_whole(self.labels.get(text, text)))

        # 4 px a side: a value kept with its ratio ("63.69 (14.6x)") and unbroken headers
        # ("speed-up") still fit ten to twelve columns on a 1280 px slide
        head = "".join(f"<th style='text-align:{a};padding:2px 4px'>{e(h)}</th>"
                       for h, a in zip(self.header, align))
        body = "".join("<tr>" + "".join(f"<td style='text-align:{a};padding:2px 4px'>{e(c)}</td>"
                                        for c, a in zip(r, align)) + "</tr>" for r in self.body)
        cap = f"<caption style='caption-side:bottom;text-align:left'>{e(self.caption)}</caption>" \
            if self.caption else ""
        return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    _repr_html_ = html

    def __str__(self):
        return self.plain()

    __repr__ = __str__


#: A table cell that reads as a number: "4.92", "1,211", "12.3 (5.0x)", "87%", "—", "0.5 / 0.6".
_NUMBER_CELL = re.compile(r"^[\s—–+\-\d.,x%()/µsGB]*$")


def _column_align(cells: Sequence[str]) -> str:
    """"right" for a column of numbers (digits line up), "left" for one of words."""
    filled = [c for c in cells if c and c not in ("—", "n/a")]  # "not measured" / "no such baseline"
    return "right" if filled and all(_NUMBER_CELL.match(c) for c in filled) else "left"


#: How a provider is named on a slide.
PROVIDER_WORDS = {"fused": "ours", "native": "F.rms_norm", "compile": "torch.compile", "eager": "eager",
                  "liger": "Liger", "native_grad": "F.rms_norm, weight requires grad",
                  "fused_grad": "ours, weight requires grad", "deck4phase": "the deck's 4-phase kernel"}
#: How an op is named on a slide.
OP_WORDS = {RMSNORM: "RMSNorm", RMSNORM_GATE: "RMSNorm + gate", RMSNORM_ADD: "RMSNorm + residual add"}
#: dtype names as a slide writes them.
DTYPE_WORDS = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def impl_words(impl: str) -> str:
    """A provider's name on a slide (:data:`PROVIDER_WORDS`; an unlisted one keeps its name)."""
    return PROVIDER_WORDS.get(impl, impl)


def display_labels() -> Dict[str, str]:
    """Identifiers as a rendered table writes them: each provider's column header ("fused µs"
    -> "ours µs"), op and dtype cells ("rmsnorm_gate" -> "RMSNorm + gate")."""
    out = {f"{p} µs": f"{w} µs" for p, w in PROVIDER_WORDS.items()}
    out.update(PROVIDER_WORDS)
    out.update(OP_WORDS)
    out.update(DTYPE_WORDS)
    return out


def table(rows: Sequence[Dict], provenance: str = "", layout: str = "wide", copy_GBps: Optional[float] = None,
          impls: Optional[Sequence[str]] = None) -> Table:
    """Rows as a :class:`Table`.

    ``layout="wide"``: one line per (op, M, N, dtype, timing), a column per impl with its
    median µs and speed-up vs eager: the compared providers (``PROVIDERS``) unless ``impls``
    names others (the per-call variants such as ``fused_unplanned`` only then).  ``layout="long"``: one line per row with p10-p90,
    GB/s and (given ``copy_GBps``) the share of copy bandwidth.  ``provenance`` is the caption.
    """
    rows = bench.unique_rows(rows)
    if layout not in ("wide", "long"):
        raise ValueError(f"layout must be 'wide' or 'long', got {layout!r}")
    if layout == "long":
        header = ["op", "impl", "M x N", "dtype", "timing", "median µs", "p10–p90 µs", "GB/s"]
        if copy_GBps:
            header.append("% of copy")
        header.append("vs eager")
        body = []
        for r in rows:
            line = [r["op"], r["impl"], f"{r['M']}x{r['N']}", r["dtype"], r["timing"], _fmt(r["median_us"]),
                    f"{r['p10_us']:,.2f}–{r['p90_us']:,.2f}", _fmt(r["GBps"], "{:,.0f}")]
            if copy_GBps:
                line.append(f"{100 * r['GBps'] / copy_GBps:.0f}%")
            line.append(_fmt(r.get("speedup_vs_eager"), "{:.2f}x"))
            body.append(line)
        return Table(header, body, provenance, labels=display_labels())
    order = [p for op in OPS for p in PROVIDERS[op]]
    present = sorted({r["impl"] for r in rows}, key=lambda p: order.index(p) if p in order else 99)
    if impls is not None:
        present = [p for p in impls if p in present]
    else:  # the compared providers; the per-call variants (fused_cupy, fused_unplanned, ...) by name only
        present = [p for p in present if p in order]
    groups: Dict[Tuple, Dict[str, Dict]] = {}
    for r in rows:
        groups.setdefault((r["op"], r["M"], r["N"], r["dtype"], r["timing"]), {})[r["impl"]] = r
    header = ["op", "M x N", "dtype", "timing"] + [f"{p} µs" for p in present]
    body = []
    for (op, M, N, dt, timing), by in groups.items():
        line = [op, f"{M}x{N}", dt, timing]
        for p in present:
            r = by.get(p)
            if r is None:
                line.append("—")
            else:
                s = r.get("speedup_vs_eager")
                line.append(_fmt(r["median_us"]) + (f" ({s:.1f}x)" if s and p != "eager" else ""))
        body.append(line)
    return Table(header, body, provenance, labels=display_labels())


def _provenance_or_live(provenance: Optional[str]) -> str:
    if provenance:
        return provenance
    if backend.has_gpu():
        return backend.live_label()
    raise ValueError("provenance is required in CPU mode: rows without a GPU come from a record; pass "
                     "records.label(record)")


#: Most groups (shapes) one bar chart draws: more do not fit a slide's width with 14 pt labels.
BAR_CHART_MAX_GROUPS = 6


def shape_words(M: int, N: int) -> str:
    """A shape as a chart's tick label writes it: "16384×4096", one unbroken token (a label
    never splits it as "16384 x" / "4096")."""
    return f"{M}\u00d7{N}"


def _shape_label(g, multi_op: bool, multi_dt: bool) -> str:
    """A group's tick label: the shape on one line (:func:`shape_words`; six groups still fit a
    slide), op above it and dtype below it when they vary."""
    op, M, N, dt = g
    return (f"{OP_WORDS.get(op, op)}\n" if multi_op else "") + shape_words(M, N) + \
        (f"\n{DTYPE_WORDS.get(dt, dt)}" if multi_dt else "")


def _legend_words(impl: str) -> str:
    """A provider's legend entry: its slide name, a long one over two lines ("ours, weight\nrequires grad")."""
    w = impl_words(impl)
    if len(w) <= 16:
        return w
    if ", " in w:
        return w.replace(", ", ",\n", 1)
    cut = min((i for i, ch in enumerate(w) if ch == " "), key=lambda i: abs(i - len(w) / 2), default=None)
    return w if cut is None else w[:cut] + "\n" + w[cut + 1:]


def _bar_selection(rows, timing: str, op, dtype, metric: str):
    """(impls in display order, groups (op, M, N, dtype), {group + (impl,): value}) of the rows
    :func:`bar_chart` draws."""
    if metric not in ("median_us", "GBps", "speedup_vs_eager"):
        raise ValueError(f"metric must be 'median_us', 'GBps' or 'speedup_vs_eager', got {metric!r}")
    sel = [r for r in bench.unique_rows(rows) if r["timing"] == timing and (op is None or r["op"] == op)
           and (dtype is None or r["dtype"] == dtype_name(dtype)) and r.get(metric) is not None]
    if not sel:
        raise ValueError(f"bar_chart: no rows with timing={timing!r}, op={op!r}, dtype={dtype!r}")
    order = [p for o in OPS for p in PROVIDERS[o]]
    impls = sorted({r["impl"] for r in sel}, key=lambda p: order.index(p) if p in order else 99)
    groups = list(dict.fromkeys((r["op"], r["M"], r["N"], r["dtype"]) for r in sel))
    if len(groups) > BAR_CHART_MAX_GROUPS:
        raise ValueError(f"bar_chart: {len(groups)} shapes (op, M, N, dtype) selected, at most "
                         f"{BAR_CHART_MAX_GROUPS} fit one readable chart; pass op= / dtype= or fewer rows")
    return impls, groups, {(r["op"], r["M"], r["N"], r["dtype"], r["impl"]): r[metric] for r in sel}


def _bar_axes(style, ax, groups, impls):
    """(figure, axes, whether the figure is ours): a new one sized for the groups, else ``ax``'s."""
    if ax is not None:
        ax.tick_params(which="both", labelsize=style.SMALL_PT)
        return ax.figure, ax, False
    # room per group for its bars and its widest label line (0.62 em a character at 14 pt),
    # plus the y axis; never past the slide
    label_in = max(len(line) for g in groups for line in
                   _shape_label(g, len({h[0] for h in groups}) > 1, True).split("\n")) * 0.62 * 14 / 72
    width = min(style.MAX_FIGSIZE_IN[0], 2.0 + len(groups) * max(1.4, 0.32 * len(impls), label_in + 0.4))
    fig, ax = style.subplots(figsize=(width, style.MAX_FIGSIZE_IN[1]))
    return fig, ax, True


def _draw_bars(style, ax, groups, impls, vals, timing: str, metric: str) -> None:
    """One bar per impl in each shape's group, the shapes as tick labels, the y label."""
    import numpy as np

    x = np.arange(len(groups))
    w = 0.8 / len(impls)
    for j, p in enumerate(impls):
        ys = [vals.get(g + (p,), np.nan) for g in groups]
        ax.bar(x + (j - (len(impls) - 1) / 2) * w, ys, w, label=_legend_words(p),
               color=style.OKABE_ITO[j % len(style.OKABE_ITO)])
    multi_op = len({g[0] for g in groups}) > 1
    multi_dt = len({g[3] for g in groups}) > 1
    ax.set_xticks(x)
    ax.set_xticklabels([_shape_label(g, multi_op, multi_dt) for g in groups], fontsize=style.SMALL_PT)
    ylabel = {"median_us": "median µs per call" if timing == CALL else "median µs, kernel only",
              "GBps": "effective GB/s",
              "speedup_vs_eager": "speed-up over eager (x)"}[metric]
    ax.set_ylabel(ylabel, fontsize=style.BODY_PT)


def _bar_y_range(style, fig, ax, impls, vals, metric: str, copy_GBps, roofline: bool, ncol: int) -> None:
    """The y axis: log µs (plain numbers at 1, 2, 5 x 10^k) or linear from 0, with headroom above
    the tallest bar (or the roofline) for the legend's rows."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    top = max(v for v in vals.values())
    if roofline:
        top = max(top, copy_GBps)
    legend_rows = -(-(len(impls) + roofline) // ncol) + any("\n" in _legend_words(p) for p in impls)
    ax_h_pt = ax.get_position().height * fig.get_size_inches()[1] * 72
    room = min(0.6, (legend_rows * style.SMALL_PT * 1.6 + 24) / max(ax_h_pt, 1.0))
    if metric == "median_us":
        ax.set_yscale("log")
        bottom = min(v for v in vals.values()) / 2
        ax.set_ylim(bottom, bottom * (top / bottom) ** (1 / (1 - room)))
        # plain numbers at 1, 2, 5 x 10^k: a range under a decade still gets several labels
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(0, top / (1 - room))


def bar_chart(rows: Sequence[Dict], provenance: Optional[str] = None, timing: str = KERNEL,
              op: Optional[str] = None, dtype: Optional[str] = None, metric: str = "median_us", ax=None,
              copy_GBps: Optional[float] = None):
    """Grouped bars: one group per shape, one bar per impl, of ``metric`` ("median_us" in µs,
    "GBps" in GB/s or "speedup_vs_eager" as a ratio) for one ``timing`` (and optionally one
    ``op`` / ``dtype``).

    The ``Data:`` line under the bars states the provenance: ``provenance`` (e.g.
    :func:`gpu_viz.measure.records.label`), or the live label when a GPU is here.  With
    ``metric="GBps"`` and ``copy_GBps`` (GB/s), the copy bandwidth measured in the same run is
    drawn as the practical roofline.  Without ``ax`` the figure is at most 12 x 5.5 in; every
    text is 14 pt or more (:mod:`gpu_viz.figures.style`).  Returns the matplotlib Figure.

    Raises:
        ValueError: no rows match, an unknown metric, no provenance in CPU mode, or more than
            :data:`BAR_CHART_MAX_GROUPS` shapes (filter by ``op`` / ``dtype`` or pass fewer rows).
    """
    from ..figures import style

    label = _provenance_or_live(provenance)
    impls, groups, vals = _bar_selection(rows, timing, op, dtype, metric)
    with style.context():
        fig, ax, own = _bar_axes(style, ax, groups, impls)
        _draw_bars(style, ax, groups, impls, vals, timing, metric)
        roofline = metric == "GBps" and bool(copy_GBps)
        if roofline:
            ax.axhline(copy_GBps, color="k", ls="--", lw=1.5, label=f"device copy {copy_GBps:,.0f} GB/s")
        # three entries a legend row; two where an entry is long ("ours, weight requires grad"):
        # the legend stays inside the axes
        ncol = 2 if any(len(impl_words(p)) > 14 for p in impls) else 3
        _bar_y_range(style, fig, ax, impls, vals, metric, copy_GBps, roofline, ncol)
        what = " / ".join(OP_WORDS.get(o, o) for o in sorted({g[0] for g in groups}))
        ax.set_title(f"{what}, {'per call' if timing == CALL else 'kernel only'}", fontsize=style.BODY_PT)
        ax_w_in = ax.get_position().width * fig.get_size_inches()[0]
        ax.set_xlabel(style.wrap("Data: " + label, max(ax_w_in, 3.0)), fontsize=style.SMALL_PT,
                      color=style.PROVENANCE_COLOR)
        ax.legend(loc="upper left", ncol=min(ncol, len(impls) + roofline), fontsize=style.SMALL_PT, columnspacing=1.0,
                  handlelength=1.2, handletextpad=0.4)
        ax.grid(axis="y", alpha=0.3)
        if own:
            fig.tight_layout()
            fit_legends(fig)
    return fig


#: The least gap between a bar's top and the legend above it, CSS px (a bar touching the
#: legend's frame reads as hidden under it from the back of a room).
LEGEND_CLEARANCE_PX = 8.0


def fit_legends(fig) -> None:
    """Fit the texts of ``fig``'s bar charts to the figure as laid out.  Where x tick labels run
    together (:func:`gpu_viz.figures.style.crowded_ticks`; a shape label is one unbroken token, so
    narrow axes can bring "1024×4096" against "1024×8192"), every panel's x labels turn 30 degrees
    and the figure is laid out again.  Then the top of each axes is raised until its legend, as
    drawn, covers no bar (the headroom :func:`bar_chart` leaves is an estimate made before the
    figure's layout).  Call it after the last ``fig.tight_layout()`` when :func:`bar_chart` drew
    into axes of yours; :func:`bar_chart` calls it on a figure of its own.  A bar's top stays at
    least :data:`LEGEND_CLEARANCE_PX` CSS px below the legend."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    from ..figures import style

    renderer, drawn = style._renderer(fig), style.drawn_texts(fig)
    turned = any(style.crowded_ticks(ax, renderer, which="x", drawn=drawn) for ax in fig.axes)
    for ax in fig.axes if turned else ():  # every panel alike: a pair reads as one figure
        for t in ax.get_xticklabels():
            t.set(rotation=30, ha="right", rotation_mode="anchor")
    if turned and not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.tight_layout()
    for ax in fig.axes:
        for _ in range(12):
            if not style.legend_covers(ax, clearance_px=LEGEND_CLEARANCE_PX):
                break
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, lo * (hi / lo) ** 1.12 if ax.get_yscale() == "log" else lo + (hi - lo) * 1.12)


def seed_comparison(rows: Sequence[Dict], provenance: str, dtype: str = "float16") -> Table:
    """The seed's recorded H100 numbers beside ours for rmsnorm_gate at :data:`SEED_SHAPES`.

    Columns: the seed's fused / eager / speed-up (recorded by its author, "call"-like timing),
    then ours as called (comparable with the seed's) and kernel-only.  ``provenance`` labels ours.
    """
    dt = dtype_name(dtype)
    mine = {(r["M"], r["N"], r["impl"], r["timing"]): r for r in bench.unique_rows(rows)
            if r["op"] == RMSNORM_GATE and r["dtype"] == dt}

    def cell(M, N, impl, timing):
        r = mine.get((M, N, impl, timing))
        return "—" if r is None else f"{r['median_us']:,.2f}"

    def speed(M, N, timing):
        r = mine.get((M, N, "fused", timing))
        return "—" if r is None or not r.get("speedup_vs_eager") else f"{r['speedup_vs_eager']:.1f}x"

    header = ["M x N", "write-up fused µs", "write-up eager µs", "write-up speed-up",
              "ours call: fused", "eager", "compile", "speed-up",
              "ours kernel: fused", "eager", "compile", "speed-up"]
    body = []
    for (M, N, f, e, sp) in SEED_H100["rows"]:
        line = [f"{M}x{N}", f"{f:.2f}", f"{e:.2f}", f"{sp:.2f}x"]
        for timing in (CALL, KERNEL):
            line += [cell(M, N, "fused", timing), cell(M, N, "eager", timing), cell(M, N, "compile", timing),
                     speed(M, N, timing)]
        body.append(line)
    from ..measure.records import SEED_H100 as heading

    cap = (f"write-up columns: {heading}, {SEED_H100['source']}. ours ({dt}): {provenance}. "
           "µs, median: \"call\" one Python call after another (the write-up's way), \"kernel\" "
           "CUDA-graph replay; speed-up = eager / fused.")
    return Table(header, body, cap)


def seed_call_note(rows: Sequence[Dict], call_floor_us: Optional[float] = None, dtype: str = "float16") -> str:
    """Why ours "per call" can read 3x the write-up's at its smallest shape: a call's time is the
    host's (an empty kernel's per-call time on the same host, ``call_floor_us``, says how much), and
    the write-up divided one event pair over a loop of 100 calls where ours puts events around each
    call; the kernel time is the comparable one.  "" when the rows lack the shape."""
    dt = dtype_name(dtype)
    M, N, seed_us = SEED_H100["rows"][0][:3]
    mine = {(r["impl"], r["timing"]): r["median_us"] for r in bench.unique_rows(rows)
            if (r["op"], r["M"], r["N"], r["dtype"]) == (RMSNORM_GATE, M, N, dt)}
    call, kern = mine.get(("fused", CALL)), mine.get(("fused", KERNEL))
    if call is None or call <= seed_us:
        return ""
    floor = (f" An empty kernel takes {call_floor_us:.2f} µs per call on this host, more than the write-up's "
             "whole call." if call_floor_us and call_floor_us > seed_us else "")
    return (f"At {M} x {N} ours takes {call:.2f} µs per call, the write-up {seed_us:.2f}: per-call times measure "
            f"the host. The write-up divided one pair of events over a loop of 100 calls on its own host; "
            f"ours puts events around each call.{floor} The kernel alone takes "
            + (f"{kern:.2f} µs." if kern else "what the kernel column shows."))


def checks_table(checks: Sequence[Tuple[str, bool, str]]) -> Table:
    """:func:`gpu_viz.rmsnorm.targets.summary_checks` output as a :class:`Table`."""
    def words_(text):  # the comparison signs a reader expects
        return str(text).replace(">=", "≥").replace("<=", "≤")

    return Table(["check", "passed", "detail"], [[words_(c), "yes" if p else "NO", words_(d)] for c, p, d in checks],
                 align=["left", "left", "left"])


# -- the wide rows, the per-call rows, batch invariance (notebook 13) ----------------------------

#: The wide baselines in the order the wide table shows them.
WIDE_BASELINES = ("native", "compile", "eager", "liger")


def _shape(M: int, N: int) -> str:
    return f"{M} x {N}"


def _one_per_key(rows: Sequence[Dict]) -> Dict[Tuple, Dict]:
    """Rows by (op, impl, M, N, dtype, timing), one each (:func:`gpu_viz.rmsnorm.bench.unique_rows`:
    a key measured twice in an older record keeps its first row)."""
    return {bench.row_key(r): r for r in bench.unique_rows(rows)}


def _wide_refusals(skipped: Sequence[Dict], shapes) -> Dict[Tuple[str, str], Dict[Tuple[int, int], List[str]]]:
    """The baselines' refusals at ``shapes``, one entry per (provider, message): the row length in
    the message read as "N", the shapes listed once with the dtypes refused there."""
    refusals: Dict[Tuple[str, str], Dict[Tuple[int, int], List[str]]] = {}
    for s in skipped:
        if (s["M"], s["N"]) in shapes and s["impl"] in WIDE_BASELINES:
            reason = s["reason"].split(": ", 1)[-1].strip() if s["reason"].startswith("raised ") else s["reason"]
            reason = re.sub(rf"\b{s['N']}\b", "N", reason[:160])
            refusals.setdefault((s["impl"], reason), {}).setdefault((s["M"], s["N"]), []).append(
                DTYPE_WORDS.get(s["dtype"], s["dtype"]))
    return refusals


def _share_pct(r, copy_GBps: float) -> str:
    """A baseline's share of the copy bandwidth in whole percent ("—": not measured)."""
    return "—" if r is None else f"{100 * r['GBps'] / copy_GBps:.0f}"


def _ours_pct(r, copy_GBps: float) -> str:
    """Ours to a tenth, cut down rather than rounded: a share under the 90 % target never reads as 90."""
    return "—" if r is None else f"{math.floor(1000 * r['GBps'] / copy_GBps) / 10:.1f}"


def _wide_body(sel, shapes, dts, shown, copy_GBps: float, timing: str, refusals) -> List[List[str]]:
    """The wide table's lines: per (op, shape) where ours was measured, ours per dtype, then each
    shown baseline's cell."""
    by = _one_per_key(sel)
    refused = {(p, mn) for (p, reason), by_shape in refusals.items() if "not importable" not in reason
               for mn in by_shape}
    body = []
    for op in (op for op in OPS if any(r["op"] == op for r in sel)):
        for (M, N) in shapes:
            if not any(by.get((op, "fused", M, N, d, timing)) for d in dts):
                continue  # a shape this run did not measure (a live run times one)
            body.append([OP_WORDS[op], f"{M}x{N}"]  # unbroken: one line a row on a slide
                        + [_ours_pct(by.get((op, "fused", M, N, d, timing)), copy_GBps) for d in dts]
                        + [_wide_baseline_cell(by, op, p, M, N, dts, timing, copy_GBps, refused) for p in shown])
    return body


def _wide_baseline_cell(by, op: str, p: str, M: int, N: int, dts, timing: str, copy_GBps: float, refused) -> str:
    """One baseline's cell of a wide row: its shares per dtype ("a/b/c"), "n/a" (the gate has no
    such baseline), "refused" (it raised there) or "—" (not measured)."""
    if p not in WIDE_PROVIDERS[op]:
        return "n/a"
    cells = [_share_pct(by.get((op, p, M, N, d, timing)), copy_GBps) for d in dts]
    if all(c == "—" for c in cells):
        return "refused" if (p, (M, N)) in refused else "—"  # a refusal is said in words below the table
    return "/".join(cells)


def _wide_sentences(shown, refusals) -> List[str]:
    """The baselines not measured at all, and each refusal with the reason the run gave."""
    said = []
    missing = [PROVIDER_WORDS[p] for p in WIDE_BASELINES if p not in shown and p != "liger"]
    if missing:
        said.append(f"Not measured at these shapes in this run: {', '.join(missing)}.")
    for (p, reason), by_shape in refusals.items():
        where = ", ".join(f"{M}x{N} ({'/'.join(d)})" for (M, N), d in by_shape.items())
        if "not importable" in reason:
            said.append(f"{PROVIDER_WORDS[p]} is not installed here: no time at {where}.")
        else:
            said.append(f"{PROVIDER_WORDS[p]} refused {where}: \u201c{reason}\u201d (N: the row length).")
    return said


def _markers_said(body) -> str:
    """The legend's words for the markers the table's cells show (and only those)."""
    cells = [c for line in body for c in line[2:]]
    return "".join(f"; {said}" for marker, said in (
        ("—", "— not measured"), ("refused", "refused: the baseline raised there"),
        ("n/a", "n/a: no such baseline for the gate"))
        if any(c == marker or marker in c.split("/") for c in cells))


def wide_share(rows: Sequence[Dict], copy_GBps: Optional[float], provenance: str,
               skipped: Sequence[Dict] = (), shapes=plan.WIDE_SHAPES, timing: str = KERNEL
               ) -> Tuple[Optional[Table], List[str]]:
    """The wide rows as the share of the copy bandwidth: ``(table, sentences)``.

    One line per (op, shape) where ours was measured: ours in each dtype, then one column per baseline of
    :data:`WIDE_BASELINES` measured at any of these rows, its shares in fp16 / bf16 / fp32
    ("—" where not measured, "refused" where it raised; the gate has no F.rms_norm or Liger: "n/a").  ``sentences`` say in
    words which baselines were not measured at all, which refused a shape (with the reason the
    run gave) and, when there are no wide rows (an older record), that the table is missing.
    ``table`` is None when nothing is shown.  ``timing``: the rows' timing ("kernel")."""
    shapes = [tuple(s) for s in shapes]
    sel = [r for r in rows if (r["M"], r["N"]) in shapes and r["timing"] == timing]
    if not copy_GBps or not any(r["impl"] == "fused" for r in sel):
        return None, [f"The data shown has no wide rows (N = {', '.join(str(n) for _, n in shapes)}) "
                      f"to compare; `gpu-viz bench` on a GPU measures them. Data: {provenance}"]
    dts = [d for d in bench.DTYPES if any(r["dtype"] == d for r in sel)]
    shown = [p for p in WIDE_BASELINES if any(r["impl"] == p for r in sel)]
    header = ["op", "M x N"] + [f"ours {DTYPE_WORDS[d]}" for d in dts] + [PROVIDER_WORDS[p] for p in shown]
    refusals = _wide_refusals(skipped, shapes)
    body = _wide_body(sel, shapes, dts, shown, copy_GBps, timing, refusals)
    dt_words = "/".join(DTYPE_WORDS[d] for d in dts)
    caption = (f"% of the copy bandwidth ({copy_GBps:,.0f} GB/s), {timing} time; ours cut to a tenth, not "
               f"rounded; baseline columns: {dt_words}{_markers_said(body)}. Data: {provenance}")
    return Table(header, body, caption), _wide_sentences(shown, refusals)


def per_call_rows(rows: Sequence[Dict], dtype: str = "float16", shapes=plan.CALL_SHAPES,
                  impls=("native", "fused", "native_grad", "fused_grad")) -> List[Dict]:
    """The rmsnorm per-call rows (``"timing": "call"``) at ``shapes`` in ``dtype``, one per
    (impl, shape) (:func:`_one_per_key`), ordered by impl then M."""
    shapes = [tuple(s) for s in shapes]
    by = _one_per_key([r for r in rows if r["timing"] == CALL and r["op"] == RMSNORM
                        and r["dtype"] == dtype and (r["M"], r["N"]) in shapes and r["impl"] in impls])
    return sorted(by.values(), key=lambda r: (impls.index(r["impl"]), r["M"]))


def per_call_chart(rows: Sequence[Dict], provenance: Optional[str] = None, dtype: str = "float16"):
    """µs per call against rows per call (N fixed) for ours and F.rms_norm, without and with a
    weight that requires grad: one line each, log-scaled rows.  Returns the Figure (readable on
    a slide: :mod:`gpu_viz.figures.style`).

    Raises:
        ValueError: no per-call rows of ``dtype``, or no provenance in CPU mode."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from ..figures import style

    label = _provenance_or_live(provenance)
    sel = per_call_rows(rows, dtype)
    if not sel:
        raise ValueError(f"per_call_chart: no rmsnorm per-call rows in {dtype}")
    N = sel[0]["N"]
    looks = {"native": (style.BLUE, "o", "-"), "fused": (style.VERMILLION, "s", "-"),
             "native_grad": (style.BLUE, "o", "--"), "fused_grad": (style.VERMILLION, "s", "--")}
    with style.context():
        fig, ax = style.subplots(figsize=(11.5, 3.2))  # with its four sentences below, one slide
        Ms = sorted({r["M"] for r in sel})
        for impl, (colour, marker, ls) in looks.items():
            pts = [(r["M"], r["median_us"]) for r in sel if r["impl"] == impl]
            if pts:
                ax.plot(*zip(*pts), color=colour, marker=marker, ls=ls, label=PROVIDER_WORDS[impl])
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(Ms))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        top = max(r["median_us"] for r in sel)
        ax.set_ylim(0, top * 1.1)
        ax.set_xlabel(f"rows per call (each {N} numbers, {DTYPE_WORDS.get(dtype, dtype)})", fontsize=style.BODY_PT)
        ax.set_ylabel("median µs per call", fontsize=style.BODY_PT)
        # beside the axes, clear of every point (one call's time can spike at any size)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=style.SMALL_PT, handlelength=2.4,
                  labels=[PROVIDER_WORDS[i].replace(", weight requires grad", ",\nweight requires grad")
                          for i in looks if any(r["impl"] == i for r in sel)])
        ax.grid(axis="y", alpha=0.3)
        bottom = style.add_data_line(fig, "Data: " + label)
        fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def per_call_summary(rows: Sequence[Dict], dtype: str = "float16",
                     grad_factor: float = targets.CALL_GRAD_FACTOR) -> List[str]:
    """Sentences on the per-call rows of ``dtype``: at how many sizes ours is no slower than
    F.rms_norm, and within ``grad_factor`` x with a grad-requiring weight, with the ratios' range."""
    sel = per_call_rows(rows, dtype)
    by = {(r["impl"], r["M"]): r["median_us"] for r in sel}
    out = []
    for ours, base, factor, what in (("fused", "native", 1.0, "No grad: ours no slower than F.rms_norm"),
                                     ("fused_grad", "native_grad", grad_factor,
                                      f"Weight requires grad: ours within {grad_factor:g}x")):
        ratios = [by[(ours, M)] / by[(base, M)] for (i, M) in by if i == ours and (base, M) in by]
        if not ratios:
            if out:  # the per-call rows of an older record: no grad-requiring weight
                out.append("The data shown has no per-call rows with a weight that requires grad.")
            continue
        met = sum(q <= factor for q in ratios)
        out.append(f"{what} at {met} of {len(ratios)} sizes "
                   f"({min(ratios):.2f}x to {max(ratios):.2f}x its time).")
    spans = {i: [v for (j, _), v in by.items() if j == i] for i in ("fused", "native")}
    if all(len(v) > 1 and max(v) >= NOISY_CALL_SPREAD * min(v) for v in spans.values()):
        together = all(r.get("rounds") for r in sel if r["impl"] in ("fused", "native"))
        out.append(f"Noisy: {min(spans['fused']):.1f}-{max(spans['fused']):.1f} µs (ours), "
                   f"{min(spans['native']):.1f}-{max(spans['native']):.1f} µs (F.rms_norm) over these sizes: "
                   + ("the host varied between sizes; at each size both shared their timing rounds." if together else
                      "the host varied between timing windows; compare where both are low."))
    return out


#: Per call, each provider's median over 1..1024 rows of 4096 moves with the kernel by a few µs
#: at most; a spread of this factor or more for both ours and F.rms_norm is the host's noise.
NOISY_CALL_SPREAD = 1.4


def call_timing_caveat(record: Optional[Dict]) -> Optional[str]:
    """The sentence to show beside a record's per-call numbers when they were timed before each
    provider's window started on an idle GPU (no ``"call_windows"`` key, :data:`bench.CALL_WINDOWS`),
    else None (also for None or a record without per-call rows)."""
    if not record or record.get("call_windows") == bench.CALL_WINDOWS:
        return None
    if not any(r.get("timing") == CALL for r in record.get("rows", [])):
        return None
    return ("Caution, per call: this record was timed before each provider's window started on an "
            "idle GPU.  A provider timed right after eager (torch.compile for the gate, F.rms_norm "
            "for rmsnorm) can show its own kernel's pace instead of its cost per call where eager's "
            "kernels were still queued -- at 1024 rows and up a per-call bar far below the same "
            "provider's at 512 rows is that, not a faster call.")


def launcher_line(status: Optional[str]) -> str:
    """One sentence on how the per-call rows' calls of ours were launched, from a record's
    ``"launcher"`` (None: a record from before the C++ launcher)."""
    if status is None:
        return "These calls of ours went through the Python launcher: the C++ launcher was not in that run."
    if status.startswith("built"):
        return "These calls of ours went through the C++ launcher."
    return "These calls of ours went through the Python launcher: the C++ launcher was unavailable there."


def _plain(text: str) -> str:
    """A detail with Python lists in it ("rows differ at M=[3, 64]") written out ("M = 3, 64")."""
    return re.sub(r"=\s*\[([^\]]*)\]", r" = \1", str(text))


def kernel_vs_call(rows: Sequence[Dict], M: int = 128, N: int = 4096, dtype: str = "float16") -> Optional[str]:
    """One sentence: ours and F.rms_norm at (M, N) per call against their kernel-only times (the
    same record or run); None when either timing is missing."""
    call = {r["impl"]: r["median_us"] for r in per_call_rows(rows, dtype, shapes=((M, N),))}
    kern = {impl: r["median_us"] for (op, impl, m, n, dt, tm), r in _one_per_key(rows).items()
            if op == RMSNORM and (m, n, dt, tm) == (M, N, dtype, KERNEL)}
    if not all(k in call and k in kern for k in ("fused", "native")):
        return None
    return (f"At {_shape(M, N)}, kernel only: ours {kern['fused']:.2f} µs, F.rms_norm "
            f"{kern['native']:.2f} µs (per call: {call['fused']:.1f} and {call['native']:.1f} µs).")


def invariance_summary(inv: Optional[Dict]) -> List[str]:
    """Sentences on a record's (or a live run's) ``batch_invariant``: the count, what was
    compared (ops, dtypes, N, M) and any failing case in words."""
    if not inv or not inv.get("checked"):
        return ["No batch-invariance check to show: this run predates it. `gpu-viz bench` on a GPU makes it."]
    cases = inv["checked"]
    good = sum(bool(c.get("ok")) for c in cases)
    ops = list(dict.fromkeys(c["op"] for c in cases))
    dts = list(dict.fromkeys(c["dtype"] for c in cases))
    Ns = sorted({c["N"] for c in cases})
    Ms = sorted({m for c in cases for m in c.get("M", [])})
    full = max(Ms) if Ms else None
    lines = [f"{good} of {len(cases)} cases bit-identical: {words.count(len(ops), 'op')} x "
             f"{words.count(len(dts), 'dtype')} x {words.count(len(Ns), 'row length')}.",
             f"{', '.join(OP_WORDS.get(o, o) for o in ops)}; {', '.join(DTYPE_WORDS.get(d, d) for d in dts)}.",
             f"N = {', '.join(str(n) for n in Ns)}"
             + (f"; M = {', '.join(str(m) for m in Ms if m != full)} against {full}." if full else ".")]
    for c in cases:
        if not c.get("ok"):
            lines.append(f"Differs: {OP_WORDS.get(c['op'], c['op'])} {DTYPE_WORDS.get(c['dtype'], c['dtype'])} "
                         f"N = {c['N']}" + (f" ({_plain(c['detail'])})" if c.get("detail") else "") + ".")
    return lines


# -- command line ----------------------------------------------------------------------------------

def _cmd_bench(args) -> int:
    if args.dry_run:  # the plan and its time estimate: no GPU needed, nothing measured
        print(plan.plan_text(quick=args.quick, reps=args.reps))
        return 0
    if not backend.has_gpu():
        print(f"gpu-viz bench needs a CUDA GPU: {backend.detect().describe()}")
        rec = bench_record.newest_record()
        if rec:
            print(f"The newest committed record: {records.label(rec)}.")
        return 2
    record = bench_record.full_record(quick=args.quick, out=args.out, tag=args.tag, reps=args.reps)
    rows = record["rows"]
    print()
    print(table(rows, provenance=backend.live_label()).plain())
    if record["skipped"]:
        print("\nNot timed:")
        for s in record["skipped"]:
            print(f"  {s['op']} {s['impl']} {s['M']}x{s['N']} {s['dtype']}: {s['reason'][:200]}")
    print("\nThe performance targets (kernel timing):")
    checks = [(c["check"], c["passed"], c["detail"]) for c in record["checks"]]
    print(checks_table(checks).plain())
    print(f"\n{sum(p for _, p, _ in checks)} of {len(checks)} checks passed; record: {record.get('_path')}")
    return 1 if args.strict and not all(p for _, p, _ in checks) else 0


def register_cli(subparsers) -> None:
    """Add ``gpu-viz bench [--quick] [--out DIR] [--tag T] [--reps N] [--strict] [--dry-run]``."""
    p = subparsers.add_parser("bench", help="measure fused RMSNorm (+gate) vs eager, F.rms_norm, "
                                            "torch.compile; save a record",
                              description="Time the course's fused RMSNorm and RMSNorm + SiLU gate on this GPU "
                                          "against eager PyTorch, F.rms_norm, torch.compile (and Liger where it "
                                          "is installed), beside the copy kernel and the launch floor, each "
                                          "output checked against a float64 reference first; print the table "
                                          "and save the JSON record.  Needs a CUDA GPU.")
    p.add_argument("--quick", action="store_true",
                   help="a few shapes in fp16, the per-call rows (fp16 and bf16), no wide rows")
    p.add_argument("--out", type=Path, default=Path("."),
                   help="folder for the JSON record (default: the current folder; the course's committed "
                        "records are in benchmarks/results/)")
    p.add_argument("--tag", default="fused", help="record file suffix (default: fused)")
    p.add_argument("--reps", type=check.positive_int_arg, default=bench.DEFAULT_REPS,
                   help="timed samples per row, >= 1 (default 100)")
    p.add_argument("--strict", action="store_true", help="exit 1 if any performance target is missed")
    p.add_argument("--dry-run", action="store_true",
                   help="print every (op, shape, dtype, provider, timing) step and the estimated time; "
                        "measure nothing (no GPU needed)")
    p.set_defaults(func=_cmd_bench)
