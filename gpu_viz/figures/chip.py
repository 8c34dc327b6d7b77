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

The measurement plots (latency staircase, bandwidth, occupancy) are :mod:`gpu_viz.figures.memory`.
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, List, Optional, Sequence

from .. import device

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
