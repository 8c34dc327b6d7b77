"""Plots of the memory hierarchy's measurements (rows of ``gpu_viz.measure.memory``'s ``row()``,
live or from a record) and of occupancy tables (``gpu_viz.occupancy``): notebooks 01, 04, 05.

* :func:`plot_staircase` -- load latency vs working-set size (L1, L2, DRAM).
* :func:`plot_bandwidth` -- streaming read bandwidth vs bytes read.
* :func:`plot_sweep` -- read bandwidth vs resident warps per SM (Little's law).
* :func:`plot_occupancy` -- resident warps per SM vs block size, coloured by the limiting resource.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .. import device
from . import style
from .chip import _BLUE, _GREEN, _GREY, _ORANGE, _RED, _check_info, _mib

#: Every plot here: (width, height) in inches, 1152 x 528 CSS px in SVG.
FIGSIZE = (12.0, 5.5)


def _rows(points) -> List[Dict]:
    return [p.row() if hasattr(p, "row") else dict(p) for p in points]


def _sorted_rows(points, key: str, what: str) -> List[Dict]:
    """The points as row dicts sorted by ``key``; ValueError naming ``what`` when there are none."""
    rows = sorted(_rows(points), key=lambda r: r[key])
    if not rows:
        raise ValueError(f"{what}: points is empty")
    return rows


def _size_axis(ax, sizes):
    """Log2 x axis with one tick per measured size; every other label when they would crowd."""
    from ..measure.memory import size_label

    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    step = 1 if len(sizes) <= 12 else 2
    ax.set_xticklabels([size_label(s) if i % step == 0 else "" for i, s in enumerate(sizes)])
    ax.minorticks_off()


def _finish(fig, provenance: str):
    """The ``Data:`` line at the bottom, the rest laid out above it."""
    bottom = style.add_data_line(fig, "Data: " + provenance)
    fig.tight_layout(rect=(0, bottom, 1, 1))


def _label_points(ax, xs, ys, fmt="{:,.0f}"):
    """The value beside each point of a log2 x axis: above it, or below it when the previous
    point is under an octave away and its label is above (the two would overlap)."""
    import math

    above_prev, x_prev = False, None
    for x, y in zip(xs, ys):
        above = not (x_prev is not None and math.log2(x / x_prev) < 1 and above_prev)
        ax.annotate(fmt.format(y), (x, y), textcoords="offset points", xytext=(0, 9 if above else -9),
                    ha="center", va="bottom" if above else "top", fontsize=style.SMALL_PT)
        above_prev, x_prev = above, x


@style.styled
def plot_staircase(points, info: device.DeviceInfo, provenance: str, deck_cycles: Optional[int] = 200):
    """Latency per dependent load vs working-set size: cycles (left axis) and ns (right axis).

    ``points``: LatencyPoints or their ``row()`` dicts.  Marks the L2 size and the deck's claim
    (``deck_cycles``, SM cycles; None leaves it out).  12 x 5.5 in, text 14 pt or more.

    Raises:
        TypeError: ``info`` is not a DeviceInfo.  ValueError: ``points`` is empty.
    """
    info, rows = _check_info(info), _sorted_rows(points, "size_bytes", "plot_staircase")
    sizes = [r["size_bytes"] for r in rows]
    cycles = [r["cycles_per_load"] for r in rows]
    fig, ax = style.subplots(figsize=FIGSIZE)
    ax.plot(sizes, cycles, "o-", color=_BLUE, label="measured")
    _label_points(ax, sizes, cycles)
    ax.axvline(info.l2_bytes, color=_ORANGE, ls="--", lw=2, label=f"L2 size ({_mib(info.l2_bytes)})")
    if deck_cycles:
        ax.axhline(deck_cycles, color=_RED, ls=":", lw=2, label=f"the deck: ~{deck_cycles} cycles")
    _size_axis(ax, sizes)
    ax.set_ylabel("SM cycles per load")
    ax.set_xlabel("working set (one thread chasing pointers through it)")
    top = max(cycles + [deck_cycles or 0]) * 1.25
    ax.set_ylim(0, top)
    ns = ax.twinx()
    ns.tick_params(labelsize=style.SMALL_PT)
    # the right axis shows the same loads in ns: same scale factor as the data's cycles -> ns
    ns_per_cycle = max(r["ns_per_load"] for r in rows) / max(cycles)
    ns.set_ylim(0, top * ns_per_cycle)
    ns.set_ylabel("ns per load")
    ax.legend(loc="upper left")
    ax.set_title(f"Load latency vs working set on the {info.name}")
    _finish(fig, provenance)
    return fig


@style.styled
def plot_bandwidth(points, info: device.DeviceInfo, provenance: str, copy_GBps: Optional[float] = None):
    """Read bandwidth of ``stream_read`` vs bytes read (GB/s, p10-p90 band); the DRAM peak
    (spec/attributes), the measured copy bandwidth (``copy_GBps``, GB/s) and the L2 size as lines.
    12 x 5.5 in, text 14 pt or more.

    Raises:
        TypeError: ``info`` is not a DeviceInfo.  ValueError: ``points`` is empty.
    """
    info, rows = _check_info(info), _sorted_rows(points, "size_bytes", "plot_bandwidth")
    sizes = [r["size_bytes"] for r in rows]
    fig, ax = style.subplots(figsize=FIGSIZE)
    gb = [r["GBps"] for r in rows]
    ax.plot(sizes, gb, "o-", color=_BLUE, label="measured (kernel time)")
    lo = [r["size_bytes"] / (r["p90_us"] * 1e3) for r in rows]
    hi = [r["size_bytes"] / (r["p10_us"] * 1e3) for r in rows]
    ax.fill_between(sizes, lo, hi, color=_BLUE, alpha=0.2, label="p10-p90")
    peak = info.peak_bandwidth_GBps
    if peak:
        ax.axhline(peak, color=_RED, ls="--", lw=2,
                   label=f"DRAM peak {peak:,.0f} GB/s ({'attributes' if info.is_live else 'spec'})")
    if copy_GBps:
        ax.axhline(copy_GBps, color=_GREEN, ls=":", lw=2.5, label=f"device copy {copy_GBps:,.0f} GB/s")
    ax.axvline(info.l2_bytes, color=_ORANGE, ls="--", lw=2, label=f"L2 size ({_mib(info.l2_bytes)})")
    _size_axis(ax, sizes)
    ax.set_ylabel("GB/s")
    ax.set_xlabel("bytes read per launch (the same buffer each launch)")
    ax.set_ylim(0, max(gb + hi + [peak or 0, copy_GBps or 0]) * 1.1)
    # lower right: the curve is high there (large buffers stream at DRAM speed)
    ax.legend(loc="lower right")
    ax.set_title(f"Streaming read bandwidth vs size on the {info.name}")
    _finish(fig, provenance)
    return fig


@style.styled
def plot_sweep(points, info: device.DeviceInfo, provenance: str, copy_GBps: Optional[float] = None,
               warps_needed: Optional[float] = None):
    """Read bandwidth (GB/s) vs resident warps per SM (one 16-byte load in flight per thread);
    DRAM peak, ``copy_GBps`` and Little's law's ``warps_needed`` as lines.  12 x 5.5 in, text
    14 pt or more.

    Raises:
        TypeError: ``info`` is not a DeviceInfo.  ValueError: ``points`` is empty.
    """
    info, rows = _check_info(info), _sorted_rows(points, "warps_per_sm", "plot_sweep")
    fig, ax = style.subplots(figsize=FIGSIZE)
    w = [r["warps_per_sm"] for r in rows]
    gb = [r["GBps"] for r in rows]
    ax.plot(w, gb, "o-", color=_BLUE, label="measured (DRAM-sized buffer)")
    _label_points(ax, w, gb)
    peak = info.peak_bandwidth_GBps
    if peak:
        ax.axhline(peak, color=_RED, ls="--", lw=2, label=f"DRAM peak {peak:,.0f} GB/s")
    if copy_GBps:
        ax.axhline(copy_GBps, color=_GREEN, ls=":", lw=2.5, label=f"device copy {copy_GBps:,.0f} GB/s")
    if warps_needed:
        ax.axvline(warps_needed, color=_ORANGE, ls="--", lw=2, label=f"Little's law: ~{warps_needed:.0f} warps")
    ax.set_xscale("log", base=2)
    ax.set_xticks(w)
    ax.set_xticklabels([str(v) for v in w])
    ax.minorticks_off()
    ax.set_ylim(0, max(gb + [peak or 0, copy_GBps or 0]) * 1.12)
    ax.set_xlabel("resident warps per SM (max %d)" % (info.max_threads_per_sm // info.warp_size))
    ax.set_ylabel("GB/s")
    # lower right: the curve is high there (many warps reach the plateau)
    ax.legend(loc="lower right")
    ax.set_title("More resident warps, more loads in flight, more bandwidth")
    _finish(fig, provenance)
    return fig


LIMITER_COLORS = {"threads": _BLUE, "blocks": _GREY, "registers": _RED, "shared memory": _ORANGE,
                  "block size": "#000000"}
_OTHER_LIMITER = style.PURPLE


@style.styled
def plot_occupancy(tables: Dict[str, Sequence], info: device.DeviceInfo, provenance: str):
    """Resident warps per SM vs block size for each kernel (one panel each, at most 3), each
    point coloured by its limiter.  12 x 5.5 in, text 14 pt or more.

    ``tables``: kernel name -> list of :class:`gpu_viz.occupancy.Occupancy` (or their ``row()``).

    Raises:
        TypeError: ``info`` is not a DeviceInfo.  ValueError: ``tables`` is empty or has more
        than 3 kernels (their panels would be too short to read; draw them in two figures).
    """
    from matplotlib.lines import Line2D

    info = _check_info(info)
    if not tables:
        raise ValueError("plot_occupancy: tables is empty")
    n = len(tables)
    if n > 3:
        raise ValueError(f"plot_occupancy: {n} kernels do not fit one slide's figure (at most 3); "
                         f"split {sorted(tables)} over two calls")
    # one column per kernel: side by side the panels stay tall enough to read the steps
    fig, axes = style.subplots(1, n, figsize=FIGSIZE, sharey=True, squeeze=False)
    max_warps = info.max_threads_per_sm // info.warp_size
    col_in = FIGSIZE[0] * 0.9 / n
    for ax, (name, rows) in zip(axes[0], tables.items()):
        rows = [r.row() if hasattr(r, "row") else dict(r) for r in rows]
        b = [r["block_size"] for r in rows]
        ax.plot(b, [r["warps_per_sm"] for r in rows], color="#999999", lw=1.2, zorder=1)
        colors = [LIMITER_COLORS.get(r["limiter"].split(" + ")[0], _OTHER_LIMITER) for r in rows]
        ax.scatter(b, [r["warps_per_sm"] for r in rows], c=colors, s=40, zorder=2)
        ax.set_ylim(-2, max_warps * 1.08)
        ax.set_yticks([0, max_warps // 4, max_warps // 2, 3 * max_warps // 4, max_warps])
        ax.axhline(max_warps, color="#bbbbbb", ls=":", lw=1.2)
        ax.set_xticks([256, 512, 768, 1024])
        ax.set_xlim(0, 1088)
        regs = rows[0].get("regs_per_thread")
        smem = rows[0].get("smem_per_block_bytes", 0)
        detail = f"{regs} registers/thread" + (f", {smem:,} B shared" if smem else "")
        ax.set_title(name + "\n" + style.wrap(detail, col_in, style.SMALL_PT), fontsize=style.SMALL_PT,
                     linespacing=1.3)
    axes[0, 0].set_ylabel("resident warps per SM")
    axes[0, n // 2].set_xlabel("threads per block")
    fig.suptitle(f"Occupancy vs block size on the {info.name} ({info.sm})")
    bottom = style.add_data_line(fig, "Data: " + provenance)
    handles = [Line2D([], [], marker="o", ls="", markersize=9, color=c, label=k)
               for k, c in LIMITER_COLORS.items() if k != "block size"]
    legend_h = (style.SMALL_PT * 2.2) / (FIGSIZE[1] * 72)
    fig.legend(handles=handles, title="limited by:", loc="lower center", ncol=len(handles) + 1, frameon=False,
               bbox_to_anchor=(0.5, bottom), alignment="left", handletextpad=0.2, columnspacing=1.2)
    fig.tight_layout(rect=(0, bottom + legend_h, 1, 1))
    return fig
