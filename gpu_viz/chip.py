"""The chip and the SM, drawn with matplotlib from a :class:`gpu_viz.device.DeviceInfo`.

Every number in these figures comes from the ``DeviceInfo`` passed in (live attributes on a
GPU, a spec sheet otherwise) or from measurements passed in; each figure carries a ``Data:``
line saying which.

* :func:`draw_chip` -- notebook 01: host, PCIe, the SMs, L2, DRAM; measured latencies and
  bandwidths written onto the levels when given.
* :func:`draw_sm` -- notebook 02: one SM's four sub-partitions (warp scheduler, register file,
  FP32 lanes), L1 / shared memory, the per-SM limits.
* :func:`draw_mapping` -- notebook 02: the deck's "what you write vs what runs it".
* :func:`hierarchy_rows` / :func:`markdown_table` -- the spec-sheet table of notebook 01.
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, List, Optional, Sequence

from . import device

_BLUE, _GREEN, _ORANGE, _GREY, _RED = "#1f5fa8", "#2e7d32", "#ef8f00", "#6b6b6b", "#c62828"


def _check_info(info) -> device.DeviceInfo:
    if not isinstance(info, device.DeviceInfo):
        raise TypeError(f"info must be a gpu_viz.device.DeviceInfo (device.current() or device.spec_sheet(...)), "
                        f"got {type(info).__name__}")
    return info


def _mib(n: Optional[int]) -> str:
    if n is None:
        return "?"
    if n >= 2 ** 30:
        return f"{n / 2 ** 30:.0f} GiB"
    if n >= 2 ** 20:
        return f"{n / 2 ** 20:.0f} MiB"
    return f"{n / 2 ** 10:.0f} KiB"


def data_line(info: device.DeviceInfo, provenance: Optional[str] = None) -> str:
    """The figure's ``Data:`` line: the device numbers' source, plus the measurements' provenance."""
    text = f"Data: {info.name} -- {info.source}"
    if provenance:
        text += f"; measurements: {provenance}"
    return text


def _box(ax, x, y, w, h, text="", color=_BLUE, fill=0.12, fontsize=9, weight="normal", ha="center", lw=1.5):
    from matplotlib.patches import FancyBboxPatch, Rectangle

    if min(w, h) < 0.05:  # small cells: square corners, no padding
        patch = Rectangle((x, y), w, h, linewidth=lw, edgecolor=color, facecolor=(*_rgb(color), fill))
        ax.add_patch(patch)
        return patch
    patch = FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.005,rounding_size=0.01", linewidth=lw,
                           edgecolor=color, facecolor=(*_rgb(color), fill))
    ax.add_patch(patch)
    if text:
        tx = x + w / 2 if ha == "center" else x + 0.01
        ax.text(tx, y + h / 2, text, ha=ha, va="center", fontsize=fontsize, weight=weight, color="#111")
    return patch


def _rgb(color):
    from matplotlib.colors import to_rgb

    return to_rgb(color)


def _fmt_latency(m: Optional[Dict]) -> str:
    if not m:
        return ""
    parts = []
    if m.get("cycles") is not None:
        parts.append(f"{m['cycles']:,.0f} cycles")
    if m.get("ns") is not None:
        parts.append(f"{m['ns']:,.0f} ns")
    return "measured load latency " + " / ".join(parts) if parts else ""


def draw_chip(info: device.DeviceInfo, latency: Optional[Dict[str, Dict]] = None,
              bandwidth: Optional[Dict[str, float]] = None, provenance: Optional[str] = None):
    """The whole chip: host --PCIe--> GPU (SMs, L2) --> DRAM, sized and labelled from ``info``.

    Args:
        info: the device.
        latency: optional ``{"L1": {"cycles": c, "ns": t}, "L2": {...}, "DRAM": {...}}`` measured.
        bandwidth: optional ``{"L2": GB/s, "DRAM": GB/s, "copy": GB/s, "h2d": GB/s}`` measured
            (``h2d``: host -> GPU over the host link).
        provenance: where ``latency`` / ``bandwidth`` came from (required when either is given).

    Returns:
        matplotlib Figure.

    Raises:
        TypeError: ``info`` is not a DeviceInfo.  ValueError: measurements without provenance.
    """
    import matplotlib.pyplot as plt

    info = _check_info(info)
    if (latency or bandwidth) and not provenance:
        raise ValueError("provenance is required with measured latency/bandwidth (say where they came from)")
    latency, bandwidth = latency or {}, bandwidth or {}
    fig, ax = plt.subplots(figsize=(11, 6.2))
    ax.set_xlim(-0.015, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title(f"Inside the {info.name} ({info.sm}): the whole chip", fontsize=13, weight="bold")

    # host and PCIe
    _box(ax, 0.0, 0.40, 0.10, 0.22, "Host\nCPU + RAM", color=_GREY, fontsize=10)
    ax.annotate("", xy=(0.19, 0.51), xytext=(0.10, 0.51), arrowprops=dict(arrowstyle="<->", lw=2, color=_GREY))
    link = "PCIe"
    if "h2d" in bandwidth:
        link += f"\n{bandwidth['h2d']:,.0f} GB/s\nhost->GPU\n(measured)"
    ax.text(0.145, 0.53, link, ha="center", va="bottom", fontsize=7.5, color=_GREY)

    # GPU outline
    _box(ax, 0.19, 0.04, 0.56, 0.90, "", color=_BLUE, fill=0.03, lw=2)
    ax.text(0.20, 0.915, f"GPU: {info.sm_count} streaming multiprocessors (SMs)", fontsize=10, weight="bold",
            color=_BLUE)
    # SM grid
    n = info.sm_count
    cols = max(1, math.ceil(math.sqrt(n * 2.6)))
    rows = math.ceil(n / cols)
    gx, gy, gw, gh = 0.21, 0.42, 0.52, 0.47
    cw, ch = gw / cols, gh / rows
    for i in range(n):
        r, c = divmod(i, cols)
        _box(ax, gx + c * cw + cw * 0.08, gy + gh - (r + 1) * ch + ch * 0.1, cw * 0.84, ch * 0.8, color=_GREEN,
             fill=0.35, lw=0.6)
    cores = info.fp32_cores_per_sm
    sm_text = (f"each SM: {cores} FP32 cores, {info.regs_per_sm:,} registers, "
               f"{_mib(info.smem_per_sm_bytes)} shared memory + L1" if cores else
               f"each SM: {info.regs_per_sm:,} registers, {_mib(info.smem_per_sm_bytes)} shared memory + L1")
    ax.text(0.47, 0.395, sm_text, ha="center", fontsize=8.5)
    if "L1" in latency:
        ax.text(0.47, 0.365, "L1: " + _fmt_latency(latency["L1"]), ha="center", fontsize=8.5, color=_RED)
    # L2
    l2_text = f"L2 cache: {_mib(info.l2_bytes)}, shared by all SMs"
    if "L2" in latency:
        l2_text += "\n" + _fmt_latency(latency["L2"])
    if "L2" in bandwidth:
        l2_text += f"; read bandwidth {bandwidth['L2']:,.0f} GB/s"
    _box(ax, 0.21, 0.22, 0.52, 0.12, l2_text, color=_ORANGE, fill=0.25, fontsize=9)
    # memory controllers
    ax.text(0.47, 0.17, f"memory interface: {info.mem_bus_bits or '?'}-bit bus", ha="center", fontsize=8.5)
    for k in range(6):
        ax.annotate("", xy=(0.80, 0.30 + 0.1 * k), xytext=(0.75, 0.30 + 0.1 * k),
                    arrowprops=dict(arrowstyle="<->", lw=1.2, color=_RED))
    # DRAM
    bw = info.peak_bandwidth_GBps
    dram = f"DRAM\n{_mib(info.mem_bytes)}\n\npeak\n{bw:,.0f} GB/s" if bw else f"DRAM\n{_mib(info.mem_bytes)}"
    if info.mem_clock_khz and info.mem_bus_bits:
        dram += (f"\n= 2 x {info.mem_clock_khz / 1e6:.2f} GHz\n x {info.mem_bus_bits // 8} B")
    if "DRAM" in latency:
        dram += "\n\n" + _fmt_latency(latency["DRAM"]).replace("measured load latency ", "measured\nlatency\n")
    if "DRAM" in bandwidth:
        dram += f"\nmeasured read\n{bandwidth['DRAM']:,.0f} GB/s"
    if "copy" in bandwidth:
        dram += f"\ncopy {bandwidth['copy']:,.0f} GB/s"
    _box(ax, 0.80, 0.10, 0.18, 0.80, dram, color=_RED, fill=0.12, fontsize=8.5)
    ax.text(0.47, 0.07, "further from the cores = larger and slower: registers -> L1/shared -> L2 -> DRAM",
            ha="center", fontsize=8.5, style="italic")
    fig.text(0.01, 0.01, data_line(info, provenance), fontsize=7.5, color="#555")
    return fig


def draw_sm(info: device.DeviceInfo):
    """One SM: four sub-partitions (warp scheduler, register file slice, FP32 lanes), L1/shared, limits.

    The number of FP32 lane squares drawn equals ``info.fp32_cores_per_sm`` (when known).

    Returns:
        matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    info = _check_info(info)
    cores = info.fp32_cores_per_sm
    fig, ax = plt.subplots(figsize=(11, 6.4))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title(f"Inside one streaming multiprocessor of the {info.name} ({info.sm})", fontsize=13,
                 weight="bold")
    _box(ax, 0.01, 0.03, 0.70, 0.90, "", color=_GREEN, fill=0.03, lw=2)
    parts = 4
    regs_part = info.regs_per_sm // parts
    lanes = (cores // parts) if cores else None
    for p in range(parts):
        x = 0.02 + p * 0.1725
        _box(ax, x, 0.36, 0.165, 0.55, "", color=_GREEN, fill=0.06, lw=1)
        _box(ax, x + 0.005, 0.83, 0.155, 0.06, "warp scheduler\n+ dispatch", color=_BLUE, fill=0.25, fontsize=7.5)
        _box(ax, x + 0.005, 0.72, 0.155, 0.09, f"register file\n{regs_part:,} x 32-bit\n({regs_part * 4 // 1024} KiB)",
             color=_ORANGE, fill=0.2, fontsize=7.5)
        if lanes:
            cols = 8
            rws = math.ceil(lanes / cols)
            cw, chh = 0.155 / cols, 0.27 / max(rws, 1)
            for i in range(lanes):
                r, c = divmod(i, cols)
                _box(ax, x + 0.005 + c * cw + cw * 0.1, 0.70 - (r + 1) * chh + chh * 0.1, cw * 0.8, chh * 0.8,
                     color=_GREEN, fill=0.5, lw=0.4)
            ax.text(x + 0.0825, 0.385, f"{lanes} FP32 lanes", ha="center", fontsize=7.5)
        ax.text(x + 0.0825, 0.935, f"sub-partition {p}", ha="center", fontsize=7.5, color=_GREY)
    smem = (f"L1 data cache / shared memory\nup to {_mib(info.smem_per_sm_bytes)} shared per SM, "
            f"{_mib(info.smem_per_block_bytes)} per block by default ({_mib(info.smem_per_block_optin_bytes)} opt-in)")
    _box(ax, 0.02, 0.05, 0.68, 0.13, smem, color=_ORANGE, fill=0.18, fontsize=9)
    ax.text(0.36, 0.24, "(tensor cores, load/store and special-function units omitted)", ha="center",
            fontsize=7.5, color=_GREY, style="italic")
    warps = info.max_threads_per_sm // info.warp_size
    limits = [
        ("FP32 cores", f"{cores}" if cores else "unknown"),
        ("registers", f"{info.regs_per_sm:,} x 32-bit ({info.regs_per_sm * 4 // 1024} KiB)"),
        ("max resident threads", f"{info.max_threads_per_sm:,} ({warps} warps)"),
        ("max resident blocks", f"{info.max_blocks_per_sm}"),
        ("max threads / block", f"{info.max_threads_per_block}"),
        ("shared memory", _mib(info.smem_per_sm_bytes)),
        ("warp size", f"{info.warp_size} threads"),
    ]
    ax.text(0.735, 0.90, "Per SM", fontsize=11, weight="bold")
    for i, (k, v) in enumerate(limits):
        ax.text(0.735, 0.84 - i * 0.075, k, fontsize=9, color=_GREY)
        ax.text(0.735, 0.81 - i * 0.075, v, fontsize=10, weight="bold")
    if cores:
        ax.text(0.735, 0.12, f"{info.max_threads_per_sm:,} resident threads\nshare {cores} cores:\n"
                f"{info.max_threads_per_sm / cores:.0f} threads per core", fontsize=9, color=_RED)
    fig.text(0.01, 0.005, data_line(info), fontsize=7.5, color="#555")
    return fig


#: The deck's mapping, logical -> physical.
MAPPING = (
    ("thread", "one FP32 core lane", "runs one thread's instruction on one lane"),
    ("warp (32 threads)", "a warp scheduler", "issues ONE instruction for all 32 lanes"),
    ("block", "one SM", "all its threads resident on that SM; shares its shared memory"),
    ("grid", "the whole GPU", "blocks spread over all SMs by the block scheduler"),
)


def draw_mapping(info: device.DeviceInfo):
    """The deck's "What you write vs what runs it": thread -> core lane, warp -> scheduler,
    block -> SM, grid -> GPU, with this device's counts."""
    import matplotlib.pyplot as plt

    info = _check_info(info)
    cores = info.fp32_cores_per_sm
    counts = (
        f"{cores} lanes per SM" if cores else "lanes per SM unknown",
        f"4 schedulers per SM, up to {info.max_threads_per_sm // info.warp_size} warps resident",
        f"up to {info.max_blocks_per_sm} blocks / {info.max_threads_per_sm:,} threads per SM",
        f"{info.sm_count} SMs, {info.max_resident_threads:,} threads resident at once",
    )
    fig, ax = plt.subplots(figsize=(11, 4.6))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title("What you write vs what runs it", fontsize=13, weight="bold")
    ax.text(0.17, 0.92, "you write (logical)", ha="center", fontsize=10, color=_BLUE, weight="bold")
    ax.text(0.62, 0.92, f"runs on ({info.name})", ha="center", fontsize=10, color=_GREEN, weight="bold")
    for i, ((logical, physical, how), count) in enumerate(zip(MAPPING, counts)):
        y = 0.72 - i * 0.21
        _box(ax, 0.04, y, 0.26, 0.14, logical, color=_BLUE, fill=0.15, fontsize=11, weight="bold")
        ax.annotate("", xy=(0.44, y + 0.07), xytext=(0.31, y + 0.07),
                    arrowprops=dict(arrowstyle="->", lw=2, color=_GREY))
        _box(ax, 0.45, y, 0.34, 0.14, f"{physical}\n{count}", color=_GREEN, fill=0.15, fontsize=9.5)
        ax.text(0.80, y + 0.07, how, fontsize=8.5, va="center", wrap=True)
    fig.text(0.01, 0.01, data_line(info), fontsize=7.5, color="#555")
    return fig


# -- the table ---------------------------------------------------------------------------------

HIERARCHY_COLUMNS = ("GPU", "sm", "SMs", "FP32 cores", "L2", "memory", "bus (bits)", "peak GB/s",
                     "threads/SM", "source")


def hierarchy_rows(infos: Iterable[device.DeviceInfo]) -> List[Dict]:
    """One row per device for the hierarchy table (columns :data:`HIERARCHY_COLUMNS`)."""
    rows = []
    for info in infos:
        info = _check_info(info)
        bw = info.peak_bandwidth_GBps
        rows.append({"GPU": info.name, "sm": info.sm, "SMs": info.sm_count,
                     "FP32 cores": info.fp32_cores if info.fp32_cores else "?",
                     "L2": _mib(info.l2_bytes), "memory": _mib(info.mem_bytes),
                     "bus (bits)": info.mem_bus_bits or "?", "peak GB/s": f"{bw:,.0f}" if bw else "?",
                     "threads/SM": info.max_threads_per_sm,
                     "source": "live" if info.is_live else "spec sheet"})
    return rows


def markdown_table(rows: Sequence[Dict], columns: Optional[Sequence[str]] = None) -> str:
    """A Markdown table of ``rows`` (dicts), columns in order (default: the first row's keys).

    Raises:
        ValueError: no rows.
    """
    if not rows:
        raise ValueError("markdown_table: rows is empty")
    columns = list(columns or rows[0].keys())
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(r.get(c, "")) for c in columns) + " |")
    return "\n".join(out)


# -- measurement figures (rows are the dicts of gpu_viz.memory's ``row()``, live or recorded) -----

def _rows(points) -> List[Dict]:
    return [p.row() if hasattr(p, "row") else dict(p) for p in points]


def _size_axis(ax, sizes):
    from .memory import size_label

    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(s) for s in sizes], rotation=45, fontsize=8)
    ax.minorticks_off()


def plot_staircase(points, info: device.DeviceInfo, provenance: str, deck_cycles: Optional[int] = 200):
    """Latency per dependent load vs working-set size: cycles (left axis) and ns (right axis).

    ``points``: LatencyPoints or their ``row()`` dicts.  Marks the L2 size and the deck's claim.
    """
    import matplotlib.pyplot as plt

    info = _check_info(info)
    rows = sorted(_rows(points), key=lambda r: r["size_bytes"])
    if not rows:
        raise ValueError("plot_staircase: points is empty")
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

    info = _check_info(info)
    rows = sorted(_rows(points), key=lambda r: r["size_bytes"])
    if not rows:
        raise ValueError("plot_bandwidth: points is empty")
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

    info = _check_info(info)
    rows = sorted(_rows(points), key=lambda r: r["warps_per_sm"])
    if not rows:
        raise ValueError("plot_sweep: points is empty")
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
