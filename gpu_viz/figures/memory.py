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
from .chip import _BLUE, _GREEN, _GREY, _ORANGE, _RED, _check_info, _mib

def _rows(points) -> List[Dict]:
    return [p.row() if hasattr(p, "row") else dict(p) for p in points]


def _sorted_rows(points, key: str, what: str) -> List[Dict]:
    """The points as row dicts sorted by ``key``; ValueError naming ``what`` when there are none."""
    rows = sorted(_rows(points), key=lambda r: r[key])
    if not rows:
        raise ValueError(f"{what}: points is empty")
    return rows


def _size_axis(ax, sizes):
    from ..measure.memory import size_label

    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes], rotation=45, fontsize=8)
    ax.minorticks_off()


def plot_staircase(points, info: device.DeviceInfo, provenance: str, deck_cycles: Optional[int] = 200):
    """Latency per dependent load vs working-set size: cycles (left axis) and ns (right axis).

    ``points``: LatencyPoints or their ``row()`` dicts.  Marks the L2 size and the deck's claim.
    """
    import matplotlib.pyplot as plt

    info, rows = _check_info(info), _sorted_rows(points, "size_bytes", "plot_staircase")
    sizes = [r["size_bytes"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 4.6))
    ax.plot(sizes, [r["cycles_per_load"] for r in rows], "o-", color=_BLUE, lw=2, label="measured: cycles per load")
    for r in rows:
        ax.annotate(f"{r['cycles_per_load']:,.0f}", (r["size_bytes"], r["cycles_per_load"]),
                    textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    ax.axvline(info.l2_bytes, color=_ORANGE, ls="--", lw=1.5, label=f"L2 size ({_mib(info.l2_bytes)})")
    if deck_cycles:
        ax.axhline(deck_cycles, color=_RED, ls=":", lw=1.5, label=f"the deck's claim: ~{deck_cycles} cycles")
    _size_axis(ax, sizes)
    ax.set_ylabel("SM cycles per load (clock64)")
    ax.set_xlabel("working set (one thread chasing a random cycle, one node per 128 B)")
    ax.set_ylim(0, max(r["cycles_per_load"] for r in rows) * 1.15)
    ns = ax.twinx()
    ns.set_ylim(0, max(r["ns_per_load"] for r in rows) * 1.15)
    ns.set_ylabel("ns per load (%globaltimer)")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"Load latency vs working set on {info.name}: L1, then L2, then DRAM", fontsize=11)
    fig.text(0.01, 0.005, "Data: " + provenance, fontsize=7.5, color="#555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def plot_bandwidth(points, info: device.DeviceInfo, provenance: str, copy_GBps: Optional[float] = None):
    """Read bandwidth of ``stream_read`` vs bytes read; peak (spec/attributes) and copy bandwidth lines."""
    import matplotlib.pyplot as plt

    info, rows = _check_info(info), _sorted_rows(points, "size_bytes", "plot_bandwidth")
    sizes = [r["size_bytes"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 4.4))
    gb = [r["GBps"] for r in rows]
    ax.plot(sizes, gb, "o-", color=_BLUE, lw=2, label="measured: stream_read (kernel time, CUDA graph)")
    lo = [r["size_bytes"] / (r["p90_us"] * 1e3) for r in rows]
    hi = [r["size_bytes"] / (r["p10_us"] * 1e3) for r in rows]
    ax.fill_between(sizes, lo, hi, color=_BLUE, alpha=0.15, label="p10-p90")
    if info.peak_bandwidth_GBps:
        ax.axhline(info.peak_bandwidth_GBps, color=_RED, ls="--",
                   label=f"DRAM peak {info.peak_bandwidth_GBps:,.0f} GB/s ({'attributes' if info.is_live else 'spec'})")
    if copy_GBps:
        ax.axhline(copy_GBps, color=_GREEN, ls=":", label=f"device copy {copy_GBps:,.0f} GB/s (measured)")
    ax.axvline(info.l2_bytes, color=_ORANGE, ls="--", lw=1.2, label=f"L2 size ({_mib(info.l2_bytes)})")
    _size_axis(ax, sizes)
    ax.set_ylabel("GB/s (bytes read / kernel time)")
    ax.set_xlabel("bytes read per launch (the same buffer every launch: small ones stay in L2)")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"Streaming read bandwidth vs size on {info.name}", fontsize=11)
    fig.text(0.01, 0.005, "Data: " + provenance, fontsize=7.5, color="#555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def plot_sweep(points, info: device.DeviceInfo, provenance: str, copy_GBps: Optional[float] = None,
               warps_needed: Optional[float] = None):
    """Read bandwidth vs resident warps per SM (one 16-byte load in flight per thread)."""
    import matplotlib.pyplot as plt

    info, rows = _check_info(info), _sorted_rows(points, "warps_per_sm", "plot_sweep")
    fig, ax = plt.subplots(figsize=(9, 4.4))
    w = [r["warps_per_sm"] for r in rows]
    ax.plot(w, [r["GBps"] for r in rows], "o-", color=_BLUE, lw=2, label="measured: stream_read, DRAM-sized buffer")
    for r in rows:
        ax.annotate(f"{r['GBps']:,.0f}", (r["warps_per_sm"], r["GBps"]), textcoords="offset points",
                    xytext=(0, 7), ha="center", fontsize=8)
    if info.peak_bandwidth_GBps:
        ax.axhline(info.peak_bandwidth_GBps, color=_RED, ls="--", label=f"DRAM peak {info.peak_bandwidth_GBps:,.0f} GB/s")
    if copy_GBps:
        ax.axhline(copy_GBps, color=_GREEN, ls=":", label=f"device copy {copy_GBps:,.0f} GB/s")
    if warps_needed:
        ax.axvline(warps_needed, color=_ORANGE, ls="--", label=f"Little's law: ~{warps_needed:.0f} warps/SM needed")
    ax.set_xscale("log", base=2)
    ax.set_xticks(w)
    ax.set_xticklabels([str(v) for v in w])
    ax.minorticks_off()
    ax.set_xlabel("resident warps per SM (max %d)" % (info.max_threads_per_sm // info.warp_size))
    ax.set_ylabel("GB/s")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("More resident warps = more loads in flight = more bandwidth, up to a plateau", fontsize=11)
    fig.text(0.01, 0.005, "Data: " + provenance, fontsize=7.5, color="#555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


LIMITER_COLORS = {"threads": _BLUE, "blocks": _GREY, "registers": _RED, "shared memory": _ORANGE,
                  "block size": "#000000"}


def plot_occupancy(tables: Dict[str, Sequence], info: device.DeviceInfo, provenance: str):
    """Resident warps per SM vs block size for each kernel, each point coloured by its limiter.

    ``tables``: kernel name -> list of :class:`gpu_viz.occupancy.Occupancy` (or their ``row()``).
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    info = _check_info(info)
    if not tables:
        raise ValueError("plot_occupancy: tables is empty")
    n = len(tables)
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.3 * n + 0.6), sharex=True, squeeze=False)
    max_warps = info.max_threads_per_sm // info.warp_size
    for ax, (name, rows) in zip(axes[:, 0], tables.items()):
        rows = [r.row() if hasattr(r, "row") else dict(r) for r in rows]
        b = [r["block_size"] for r in rows]
        ax.plot(b, [r["warps_per_sm"] for r in rows], color="#999", lw=1, zorder=1)
        for r in rows:
            first = r["limiter"].split(" + ")[0]
            ax.scatter(r["block_size"], r["warps_per_sm"], color=LIMITER_COLORS.get(first, "#7b1fa2"), s=22, zorder=2)
        ax.set_ylim(-2, max_warps * 1.12)
        ax.axhline(max_warps, color="#bbb", ls=":", lw=1)
        regs = rows[0].get("regs_per_thread")
        ax.set_ylabel("warps / SM", fontsize=8)
        ax.set_title(f"{name}: {regs} registers/thread, {rows[0].get('smem_per_block_bytes', 0):,} B shared "
                     f"charged per block", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("threads per block")
    axes[-1, 0].set_xticks(list(range(64, 1025, 64)))
    handles = [Line2D([], [], marker="o", ls="", color=c, label=k) for k, c in LIMITER_COLORS.items()
               if k != "block size"]
    axes[0, 0].legend(handles=handles, title="limited by", fontsize=7, title_fontsize=7, loc="lower right", ncol=4)
    fig.suptitle(f"Occupancy vs block size on {info.name} ({info.sm}): resident warps per SM", fontsize=11)
    fig.text(0.01, 0.005, "Data: " + provenance, fontsize=7.5, color="#555")
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    return fig
