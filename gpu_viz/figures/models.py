"""Plots of the CPU models (nothing measured): notebooks 04 and 12.

* :func:`plot_latency_hiding` -- notebook 04: the fraction of cycles a warp scheduler issues vs
  the warps it has, from :func:`gpu_viz.model.latency.utilization`.
* :func:`plot_lost_partials` -- notebook 12: the share of partial sums the write-up's halving tree
  drops at each row width.
* :func:`plot_sum_error` -- notebook 12: the fp32 sum of squares' relative error vs row length for
  several summation orders, with the error bounds.

Each is 12 x 5.5 in or smaller with text 14 pt or more (:mod:`gpu_viz.figures.style`) and a
``Data:`` line.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from . import style

FIGSIZE = (12.0, 5.5)


def _finish(fig, provenance: str):
    bottom = style.add_data_line(fig, "Data: " + provenance)
    fig.tight_layout(rect=(0, bottom, 1, 1))


#: Warp schedulers (SM sub-partitions) per SM on every GPU the course supports (sm_75 .. sm_90).
SCHEDULERS_PER_SM = 4


@style.styled
def plot_latency_hiding(latencies: Sequence[Tuple[int, str]], compute_per_load: int, max_warps: int,
                        provenance: str, warps: Sequence[int] = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)):
    """Fraction of cycles issuing vs warps on one scheduler, one line per load latency.

    Args:
        latencies: ``(cycles, name)`` pairs, e.g. ``[(L, "measured"), (200, "the deck")]``; a
            repeated latency is drawn once, with its first name.
        compute_per_load: dependent instructions after each load (the model's ``compute_per_load``).
        max_warps: resident warps per SM; the vertical line is one scheduler's share of them
            (``max_warps // SCHEDULERS_PER_SM``), the x axis being one scheduler's warps.
        provenance: the ``Data:`` line's source (the model, and where each latency came from).
        warps: the warp counts on the x axis.

    Returns:
        matplotlib Figure.

    Raises:
        ValueError: ``latencies`` or ``warps`` is empty.
    """
    from ..model import latency as model

    if not latencies or not warps:
        raise ValueError("plot_latency_hiding: latencies and warps must not be empty")
    # one line per distinct latency: in CPU mode the "measured" L may be the deck's own 200
    distinct = {}
    for cycles, name in latencies:
        distinct.setdefault(cycles, name)
    fig, ax = style.subplots(figsize=FIGSIZE)
    for (cycles, name), marker, color in zip(distinct.items(), "os^D", (style.BLUE, style.ORANGE, style.GREEN,
                                                                style.PURPLE)):
        need = model.warps_to_hide(cycles, compute_per_load)
        ax.plot(warps, [model.utilization(w, cycles, compute_per_load) for w in warps], marker + "-", color=color,
                label=f"L = {cycles} cycles ({name}): ~{need} warps")
        ax.axvline(need, ls=":", lw=2, color=color)
    per_scheduler = max_warps // SCHEDULERS_PER_SM
    ax.axvline(per_scheduler, color="k", lw=1.5,
               label=f"max per scheduler: {per_scheduler} ({max_warps} per SM / {SCHEDULERS_PER_SM})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(warps))
    ax.set_xticklabels([str(w) for w in warps])
    ax.minorticks_off()
    ax.set_xlabel("warps on the scheduler")
    ax.set_ylabel("fraction of cycles issuing")
    ax.set_ylim(0, 1.05)
    # upper left: the curves start low there (few warps hide little)
    ax.legend(loc="upper left")
    ax.set_title(f"MODEL: latency hidden by warps ({compute_per_load} instructions per load)")
    _finish(fig, provenance)
    return fig


@style.styled
def plot_lost_partials(widths: Sequence[int], lost_percent: Sequence[float], provenance: str):
    """Percent of partial sums lost vs row width N (one dot per width).

    Raises:
        ValueError: ``widths`` and ``lost_percent`` differ in length or are empty.
    """
    if len(widths) == 0 or len(widths) != len(lost_percent):
        raise ValueError(f"plot_lost_partials: {len(widths)} widths and {len(lost_percent)} values; "
                         "they must be the same non-zero length")
    fig, ax = style.subplots(figsize=(12.0, 4.5))
    ax.plot(widths, lost_percent, ".", ms=6, color=style.VERMILLION)
    ax.set_xlabel("row width N")
    ax.set_ylabel("% of partials lost")
    ax.set_ylim(bottom=-2, top=max(max(lost_percent), 1) * 1.15)
    ax.set_title("The write-up's halving tree: partial sums lost at each width")
    _finish(fig, provenance)
    return fig


@style.styled
def plot_sum_error(lengths: Sequence[int], errors: Dict[str, Sequence[float]], provenance: str,
                   bounds: Optional[Dict[str, Sequence[float]]] = None, unit_roundoff: float = 2.0 ** -24):
    """Relative error of an fp32 sum of squares vs row length, log-log, one line per order.

    Args:
        lengths: row lengths d.
        errors: order name -> relative error at each length.
        provenance: the ``Data:`` line's source.
        bounds: optional name -> error bound at each length (dashed black lines).
        unit_roundoff: u, drawn as a grey line (float32: 2^-24), named in the legend.

    Raises:
        ValueError: ``errors`` is empty or a series' length differs from ``lengths``.
    """
    series = dict(errors, **(bounds or {}))
    if not errors or any(len(v) != len(lengths) for v in series.values()):
        raise ValueError("plot_sum_error: every series needs one value per length, and errors must not be empty")
    fig, ax = style.subplots(figsize=FIGSIZE)
    for (name, ys), marker in zip(errors.items(), "os^Dv"):
        ax.loglog(lengths, ys, marker + "-", label=name)
    for (name, ys), ls in zip((bounds or {}).items(), ("--", ":", "-.")):
        ax.loglog(lengths, ys, "k" + ls, lw=1.5, label=name)
    ax.axhline(unit_roundoff, color="#999999", lw=1.5,
               label="u = 2^-24" if unit_roundoff == 2.0 ** -24 else f"u = {unit_roundoff:g}")
    style.plain_log_ticks(ax)
    ax.set_xlabel("d (row length)")
    ax.set_ylabel("relative error")
    # the legend beside the plot: the five lines fan out over the whole log-log area
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.set_title("fp32 sum of squares: error vs summation order")
    _finish(fig, provenance)
    return fig
