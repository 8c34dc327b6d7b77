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

from . import style

# Okabe-Ito colours (style.OKABE_ITO), named by the role they play in these figures.
_BLUE, _GREEN, _ORANGE, _GREY, _RED = style.BLUE, style.GREEN, style.ORANGE, style.GREY, style.VERMILLION
_INK = "#111111"


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


def _diagram(figsize, title: str, data: str):
    """A figure with one axes in [0, 1] x [0, 1] coordinates, no frame, between ``title`` (top)
    and the wrapped ``data`` line (bottom).  Returns (fig, ax)."""
    fig, ax = style.subplots(figsize=figsize)
    bottom = style.add_data_line(fig, data)
    title_h = (style.TITLE_PT * 1.6) / (figsize[1] * 72)
    ax.set_position([0.01, bottom + 0.01, 0.98, 1 - bottom - title_h - 0.02])
    # a margin around [0, 1] so that box outlines at the edges are not clipped
    ax.set_xlim(-0.005, 1.005)
    ax.set_ylim(-0.015, 1.015)
    ax.axis("off")
    ax.set_title(title, fontsize=style.TITLE_PT, weight="bold")
    return fig, ax


def _box(ax, x, y, w, h, text="", color=_BLUE, fill=0.12, fontsize=style.BODY_PT, weight="normal",
         ha="center", lw=1.5):
    """A box at (x, y) of size (w, h) in axes coordinates, with ``text`` wrapped to its width."""
    from matplotlib.patches import FancyBboxPatch, Rectangle

    if min(w, h) < 0.05:  # small cells: square corners, no padding
        patch = Rectangle((x, y), w, h, linewidth=lw, edgecolor=color, facecolor=(*_rgb(color), fill))
        ax.add_patch(patch)
        return patch
    patch = FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.005,rounding_size=0.01", linewidth=lw,
                           edgecolor=color, facecolor=(*_rgb(color), fill))
    ax.add_patch(patch)
    if text:
        width_in = w * ax.get_position().width * ax.figure.get_size_inches()[0] - 0.1
        tx = x + w / 2 if ha == "center" else x + 0.01
        ax.text(tx, y + h / 2, style.wrap(text, width_in, fontsize), ha=ha, va="center", fontsize=fontsize,
                weight=weight, color=_INK, linespacing=1.25)
    return patch


def _rgb(color):
    from matplotlib.colors import to_rgb

    return to_rgb(color)


def _fmt_latency(m: Optional[Dict]) -> str:
    """``"40 cycles / 20 ns"`` from a measured level's ``{"cycles": c, "ns": t}``; "" when absent."""
    if not m:
        return ""
    parts = []
    if m.get("cycles") is not None:
        parts.append(f"{m['cycles']:,.0f} cycles")
    if m.get("ns") is not None:
        parts.append(f"{m['ns']:,.0f} ns")
    return " / ".join(parts)


@style.styled
def draw_chip(info: device.DeviceInfo, latency: Optional[Dict[str, Dict]] = None,
              bandwidth: Optional[Dict[str, float]] = None, provenance: Optional[str] = None):
    """The whole chip: host --PCIe--> GPU (SMs, L2) --> DRAM, sized and labelled from ``info``.

    12 x 5.5 in (1152 x 528 CSS px in SVG), text 14 pt or more.

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
    info = _check_info(info)
    if (latency or bandwidth) and not provenance:
        raise ValueError("provenance is required with measured latency/bandwidth (say where they came from)")
    latency, bandwidth = latency or {}, bandwidth or {}
    small = style.SMALL_PT
    fig, ax = _diagram((12, 5.5), f"Inside the {info.name} ({info.sm}): the whole chip", data_line(info, provenance))

    # host and the host link
    _box(ax, 0.0, 0.55, 0.125, 0.25, "Host\nCPU + RAM", color=_GREY, fontsize=small)
    ax.annotate("", xy=(0.175, 0.675), xytext=(0.125, 0.675), arrowprops=dict(arrowstyle="<->", lw=2, color=_GREY))
    link = "PCIe link" + (f"\n{bandwidth['h2d']:,.0f} GB/s\nhost -> GPU\n(measured)" if "h2d" in bandwidth else "")
    ax.text(0.0625, 0.50, link, ha="center", va="top", fontsize=small, color=_RED if "h2d" in bandwidth else _GREY,
            linespacing=1.25)

    # GPU outline and the SM grid: one small square per SM
    _box(ax, 0.175, 0.0, 0.575, 1.0, "", color=_BLUE, fill=0.03, lw=2)
    ax.text(0.19, 0.93, f"GPU: {info.sm_count} streaming multiprocessors (SMs)", fontsize=style.BODY_PT,
            weight="bold", color=_BLUE, va="center")
    n = info.sm_count
    gx, gy, gw, gh = 0.19, 0.50, 0.545, 0.37
    # columns for roughly square cells: cells are gw * axes width wide and gh * axes height tall
    aspect = (gw * ax.get_position().width * 12) / (gh * ax.get_position().height * 5.5)
    cols = max(1, math.ceil(math.sqrt(n * aspect)))
    rows = math.ceil(n / cols)
    cw, ch = gw / cols, gh / rows
    for i in range(n):
        r, c = divmod(i, cols)
        _box(ax, gx + c * cw + cw * 0.1, gy + gh - (r + 1) * ch + ch * 0.1, cw * 0.8, ch * 0.8, color=_GREEN,
             fill=0.35, lw=0.6)
    cores = info.fp32_cores_per_sm
    sm_text = ("each SM: " + (f"{cores} FP32 cores, " if cores else "")
               + f"{info.regs_per_sm // 1024}K registers, {_mib(info.smem_per_sm_bytes)} shared + L1")
    ax.text(0.4625, 0.45, sm_text, ha="center", va="center", fontsize=small)
    if "L1" in latency:
        ax.text(0.4625, 0.38, "L1 latency: " + _fmt_latency(latency["L1"]), ha="center", va="center",
                fontsize=small, color=_RED)
    # L2 and the memory interface
    l2_text = f"L2 cache: {_mib(info.l2_bytes)}, shared by all SMs"
    measured_l2 = []
    if "L2" in latency:
        measured_l2.append("latency " + _fmt_latency(latency["L2"]))
    if "L2" in bandwidth:
        measured_l2.append(f"read {bandwidth['L2']:,.0f} GB/s")
    _box(ax, 0.19, 0.12, 0.545, 0.20, "", color=_ORANGE, fill=0.25)
    ax.text(0.4625, 0.27 if measured_l2 else 0.22, l2_text, ha="center", va="center", fontsize=style.BODY_PT,
            color=_INK)
    if measured_l2:
        ax.text(0.4625, 0.17, "measured: " + ", ".join(measured_l2), ha="center", va="center", fontsize=small,
                color=_RED)
    ax.text(0.4625, 0.055, f"memory interface: {info.mem_bus_bits or '?'}-bit bus", ha="center", va="center",
            fontsize=small)
    for k in range(5):
        ax.annotate("", xy=(0.79, 0.2 + 0.15 * k), xytext=(0.75, 0.2 + 0.15 * k),
                    arrowprops=dict(arrowstyle="<->", lw=1.2, color=_RED))
    # DRAM: capacity and peak from info, then the measurements
    _box(ax, 0.79, 0.0, 0.205, 1.0, "", color=_RED, fill=0.10)
    lines = [("DRAM", style.BODY_PT, "bold", _INK), (_mib(info.mem_bytes), style.BODY_PT, "normal", _INK)]
    bw = info.peak_bandwidth_GBps
    if bw:
        lines.append((f"peak {bw:,.0f} GB/s", small, "normal", _INK))
    if info.mem_clock_khz and info.mem_bus_bits:
        lines.append((f"= 2 x {info.mem_clock_khz / 1e6:.2f} GHz x {info.mem_bus_bits // 8} B", small, "normal",
                      _GREY))
    measured = []
    if "DRAM" in latency:
        measured.append("latency " + _fmt_latency(latency["DRAM"]).replace(" / ", "\n"))
    if "DRAM" in bandwidth:
        measured.append(f"read {bandwidth['DRAM']:,.0f} GB/s")
    if "copy" in bandwidth:
        measured.append(f"copy {bandwidth['copy']:,.0f} GB/s")
    if measured:
        lines.append(("measured:", small, "bold", _RED))
        lines += [(m, small, "normal", _RED) for m in measured]
    y = 0.93
    for text, size, weight, color in lines:
        ax.text(0.8925, y, text, ha="center", va="top", fontsize=size, weight=weight, color=color,
                    linespacing=1.2)
        y -= (text.count("\n") + 1) * 0.085 + 0.015
    return fig


@style.styled
def draw_sm(info: device.DeviceInfo):
    """One SM: four sub-partitions (warp scheduler, register file slice, FP32 lanes), L1/shared, limits.

    The number of FP32 lane squares drawn equals ``info.fp32_cores_per_sm`` (when known).
    12 x 5.5 in (1152 x 528 CSS px in SVG), text 14 pt or more.

    Returns:
        matplotlib Figure.

    Raises:
        TypeError: ``info`` is not a DeviceInfo.
    """
    info = _check_info(info)
    cores = info.fp32_cores_per_sm
    small = style.SMALL_PT
    fig, ax = _diagram((12, 5.5), f"One streaming multiprocessor (SM) of the {info.name}", data_line(info))
    _box(ax, 0.0, 0.0, 0.655, 1.0, "", color=_GREEN, fill=0.03, lw=2)
    parts = 4
    regs_part = info.regs_per_sm // parts
    lanes = (cores // parts) if cores else None
    for p in range(parts):
        x = 0.01 + p * 0.16
        _box(ax, x, 0.27, 0.155, 0.72, "", color=_GREEN, fill=0.06, lw=1)
        ax.text(x + 0.0775, 0.95, f"sub-partition {p}", ha="center", va="center", fontsize=small, color=_GREY)
        _box(ax, x + 0.005, 0.80, 0.145, 0.11, "warp scheduler", color=_BLUE, fill=0.25, fontsize=small)
        _box(ax, x + 0.005, 0.56, 0.145, 0.21, f"registers\n{regs_part:,} x 32-bit", color=_ORANGE, fill=0.2,
             fontsize=small)
        if lanes:
            cols = 8
            rws = math.ceil(lanes / cols)
            cw, chh = 0.145 / cols, 0.17 / max(rws, 1)
            for i in range(lanes):
                r, c = divmod(i, cols)
                _box(ax, x + 0.005 + c * cw + cw * 0.1, 0.53 - (r + 1) * chh + chh * 0.1, cw * 0.8, chh * 0.8,
                     color=_GREEN, fill=0.5, lw=0.4)
            ax.text(x + 0.0775, 0.31, f"{lanes} FP32 lanes", ha="center", va="center", fontsize=small)
    smem = (f"L1 cache / shared memory: up to {_mib(info.smem_per_sm_bytes)} shared per SM\n"
            f"per block: {_mib(info.smem_per_block_bytes)} by default, {_mib(info.smem_per_block_optin_bytes)} opt-in")
    _box(ax, 0.01, 0.02, 0.635, 0.22, smem, color=_ORANGE, fill=0.18, fontsize=small)
    warps = info.max_threads_per_sm // info.warp_size
    limits = [
        ("FP32 cores", f"{cores}" if cores else "unknown"),
        ("registers", f"{info.regs_per_sm:,} x 32-bit"),
        ("threads", f"{info.max_threads_per_sm:,} ({warps} warps)"),
        ("blocks", f"{info.max_blocks_per_sm}"),
        ("threads / block", f"{info.max_threads_per_block:,}"),
        ("shared memory", _mib(info.smem_per_sm_bytes)),
    ]
    ax.text(0.675, 0.95, "Per SM, at most", fontsize=style.BODY_PT, weight="bold", va="center")
    for i, (k, v) in enumerate(limits):
        y = 0.85 - i * 0.1
        ax.text(0.675, y, k, fontsize=small, color=_GREY, va="center")
        ax.text(0.835, y, v, fontsize=small, weight="bold", va="center")
    if cores:
        ax.text(0.675, 0.12, f"{info.max_threads_per_sm:,} threads share\n{cores} cores: "
                f"{info.max_threads_per_sm / cores:.0f} per core", fontsize=small, color=_RED, va="center",
                linespacing=1.25)
    return fig


#: The deck's mapping, logical -> physical.
MAPPING = (
    ("thread", "one FP32 core lane", "runs one thread's instruction on one lane"),
    ("warp (32 threads)", "a warp scheduler", "issues ONE instruction for all 32 lanes"),
    ("block", "one SM", "all its threads resident on that SM; shares its shared memory"),
    ("grid", "the whole GPU", "blocks spread over all SMs by the block scheduler"),
)


@style.styled
def draw_mapping(info: device.DeviceInfo):
    """The deck's "What you write vs what runs it": thread -> core lane, warp -> scheduler,
    block -> SM, grid -> GPU, with this device's counts.

    12 x 5.5 in (1152 x 528 CSS px in SVG), text 14 pt or more.

    Raises:
        TypeError: ``info`` is not a DeviceInfo.
    """
    info = _check_info(info)
    cores = info.fp32_cores_per_sm
    counts = (
        f"{cores} lanes per SM" if cores else "lanes per SM unknown",
        f"4 per SM, up to {info.max_threads_per_sm // info.warp_size} warps resident",
        f"up to {info.max_blocks_per_sm} blocks, {info.max_threads_per_sm:,} threads per SM",
        f"{info.sm_count} SMs, {info.max_resident_threads:,} threads resident at once",
    )
    small = style.SMALL_PT
    fig, ax = _diagram((12, 5.5), "What you write vs what runs it", data_line(info))
    ax.text(0.095, 0.96, "you write", ha="center", va="center", fontsize=style.BODY_PT, color=_BLUE,
            weight="bold")
    ax.text(0.425, 0.96, f"runs on ({info.name})", ha="center", va="center", fontsize=style.BODY_PT,
            color=_GREEN, weight="bold")
    ax.text(0.64, 0.96, "what it does", ha="left", va="center", fontsize=style.BODY_PT, color=_GREY,
            weight="bold")
    for i, ((logical, physical, how), count) in enumerate(zip(MAPPING, counts)):
        y = 0.735 - i * 0.245
        _box(ax, 0.0, y, 0.19, 0.18, logical, color=_BLUE, fill=0.15, fontsize=style.BODY_PT, weight="bold")
        ax.annotate("", xy=(0.245, y + 0.09), xytext=(0.195, y + 0.09),
                    arrowprops=dict(arrowstyle="->", lw=2, color=_GREY))
        _box(ax, 0.25, y, 0.35, 0.18, "", color=_GREEN, fill=0.15)
        ax.text(0.425, y + 0.125, physical, ha="center", va="center", fontsize=style.BODY_PT, weight="bold",
                color=_INK)
        ax.text(0.425, y + 0.05, count, ha="center", va="center", fontsize=small, color=_INK)
        ax.text(0.64, y + 0.09, style.wrap(how, 0.36 * 12 * 0.98, small), fontsize=small, va="center",
                linespacing=1.25)
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
