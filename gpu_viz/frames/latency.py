"""Trace -> frames for notebook 04's latency hiding: one warp scheduler's warps over time.

Data path: ``gpu_viz.model.latency.trace`` (the lesson ``gpu_viz.lessons.LATENCY``) -->
:class:`gpu_viz.trace.Trace` --> :func:`drawing` (SVG: each warp's states up to a cycle, what each
warp does now, the issue slot filled or idle) --> :func:`frames` --> :func:`animation` (the player,
beside the loop every warp runs; or several runs side by side: :func:`contrast_frames`);
:func:`still` is the whole run as one SVG picture.  :func:`draw` is the same run as a matplotlib chart.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from ..check import check_int
from ..model.latency import COMPUTE, DONE, LOAD, READY, STATE_NAMES, WAITING
from ..trace import Trace
from ..widgets import Animation, Frame, Still, svg

STATE_COLORS = {READY: "#c9d7e8", COMPUTE: "#2e7d32", LOAD: "#f9a825", WAITING: "#e57373", DONE: "#ffffff"}
#: The player's state fills (Okabe-Ito) and the word written in a bar wide enough to hold it.
STATE_FILLS = {READY: svg.LIGHT, COMPUTE: svg.BLUE, LOAD: svg.ORANGE, WAITING: svg.SKY, DONE: "#FFFFFF"}
STATE_WORDS = {READY: "ready", COMPUTE: "math", LOAD: "load", WAITING: "stalled", DONE: ""}
#: Warps the player draws at most (a row each).
MAX_WARPS_DRAWN = 8
_LEFT, _RIGHT, _TOP, _ROW = 92, 540, 40, 27
#: The kind of a cycle on which no warp issues (the model's ``kind`` array).
IDLE = -1
#: The lines of the loop every warp runs (kernels/memory.cu, region ``stream_read_loop``) that the
#: player lights: the load, and the math that needs its data (what every warp waits to issue on an
#: idle cycle).
SOURCE_NEEDLES = {LOAD: "float4 v", COMPUTE: "acc +=", IDLE: "acc +="}


def frame_cycles(trace: Trace, count: int = 24) -> List[int]:
    """The cycles the frames show: ``count`` points spread over the run, ending at the last cycle."""
    count = check_int("count", count, 1)
    T = trace["issued"].shape[0]
    return sorted(set(int(round(x)) for x in np.linspace(0, T - 1, count)))


def caption(trace: Trace, t: int) -> str:
    """What happens at cycle ``t``, in words."""
    w, k = int(trace["issued"][t]), int(trace["kind"][t])
    L = trace.params["latency_cycles"]
    busy = float(np.mean(trace["issued"][: t + 1] >= 0))
    head = f"cycle {t}: "
    if w < 0:
        what = "every warp is waiting for memory -- the cores idle this cycle"
    elif k == LOAD:
        what = f"warp {w} issues a load; its data arrives at cycle {t + L}"
    else:
        what = f"warp {w} issues math on data that has arrived"
    return f"{head}{what}; {int(trace['in_flight'][t])} loads in flight; cores busy {busy:.0%} of cycles so far"


def draw(trace: Trace, t: Optional[int] = None, ax=None):
    """Draw the run up to cycle ``t`` (default: all): a Gantt chart of warp states + loads in flight.

    Returns the matplotlib Figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    states = trace["state"]
    T, W = states.shape
    t = T - 1 if t is None else int(t)
    if not 0 <= t < T:
        raise ValueError(f"t must be in [0, {T - 1}], got {t}")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(9, 1.6 + 0.28 * W + 1.4), sharex=True,
                                  gridspec_kw={"height_ratios": [max(2, W * 0.28), 1.2]})
    from matplotlib.colors import ListedColormap

    img = np.where(np.arange(T)[:, None] <= t, states, DONE).T.astype(float)
    cmap = ListedColormap([STATE_COLORS[s] for s in (READY, COMPUTE, LOAD, WAITING, DONE)])
    ax.imshow(img, aspect="auto", interpolation="nearest", cmap=cmap, vmin=-0.5, vmax=4.5,
              extent=(0, T, W - 0.5, -0.5))
    ax.axvline(t + 0.5, color="k", lw=1)
    ax.set_ylim(W - 0.5, -0.5)
    ax.set_yticks(range(W))
    ax.set_yticklabels([f"warp {w}" for w in range(W)], fontsize=8)
    ax.set_xlim(0, T)
    p = trace.params
    fig.suptitle(f"MODEL: one warp scheduler, {W} warps, load latency {p['latency_cycles']} cycles -- "
                 f"cores busy {np.mean(trace['issued'][: t + 1] >= 0):.0%} so far", fontsize=10)
    handles = [Patch(color=STATE_COLORS[s], label=STATE_NAMES[s]) for s in (LOAD, COMPUTE, WAITING, READY)]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=7, ncol=4, frameon=False)
    x = np.arange(t + 1)
    ax2.fill_between(x, trace["in_flight"][: t + 1], step="post", color=STATE_COLORS[LOAD], alpha=0.8,
                     label="loads in flight")
    ax2.set_ylim(0, max(1, W) + 0.5)
    ax2.set_ylabel("loads in\nflight", fontsize=8)
    ax2.set_xlabel("cycle")
    rate = ax2.twinx()
    busy = (trace["issued"][: t + 1] >= 0).astype(float)
    window = 32
    rolling = np.convolve(busy, np.ones(window), mode="full")[: t + 1] / np.minimum(np.arange(1, t + 2), window)
    rate.plot(x, rolling, color=STATE_COLORS[COMPUTE], lw=1.2, label=f"cores busy ({window}-cycle window)")
    rate.set_ylim(0, 1.05)
    rate.set_ylabel("busy", fontsize=8)
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = rate.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, loc="upper right", fontsize=7)
    fig.text(0.01, 0.005, "Data: " + trace.provenance, fontsize=7, color="#555")
    fig.subplots_adjust(left=0.09, right=0.93, top=0.86, bottom=0.12, hspace=0.08)
    return fig


def _runs(values: np.ndarray):
    """(start, end, value) runs of equal values."""
    if values.size == 0:
        return []
    brk = np.nonzero(np.diff(values) != 0)[0] + 1
    edges = np.concatenate([[0], brk, [values.size]])
    return [(int(a), int(b), int(values[a])) for a, b in zip(edges[:-1], edges[1:])]


def _now(trace: Trace, w: int, t: int) -> str:
    """What warp ``w`` does at cycle ``t``, in words (with the cycles its load still needs)."""
    st = trace["state"][:, w]
    s = int(st[t])
    if s == WAITING:
        rest = np.nonzero(st[t:] != WAITING)[0]
        left = int(rest[0]) if rest.size else st.size - t
        return f"stalled, {left} cycles to go"
    return {READY: "ready, not picked", COMPUTE: "issues math", LOAD: "issues a load", DONE: "done"}[s]


def drawing(trace: Trace, t: Optional[int] = None) -> str:
    """SVG of the run up to cycle ``t`` (default: all): per warp its states over time and what it
    does at ``t``; below them the issue slot (filled by a warp, or idle).

    Raises:
        ValueError: ``t`` outside the run.
    """
    states = trace["state"]
    T, W = states.shape
    t = T - 1 if t is None else int(t)
    if not 0 <= t < T:
        raise ValueError(f"t must be in [0, {T - 1}], got {t}")
    shown = min(W, MAX_WARPS_DRAWN)
    scale = (_RIGHT - _LEFT) / T
    d = svg.Svg(height=min(svg.HEIGHT, _TOP + (shown + 1) * _ROW + 78))
    issued = trace["issued"]
    busy = float(np.mean(issued[: t + 1] >= 0))
    d.text(8, 22, f"cycle {t} of {T}: issue slot busy {busy:.0%} of cycles so far, "
                  f"{int(trace['in_flight'][t])} loads in flight", weight="bold")

    def bars(y, runs, fill_of, word_of, on_top=(LOAD, COMPUTE)):
        # issue cycles are drawn last: a 1-cycle load must not vanish under the stall after it
        runs = [r for r in runs if r[2] not in on_top] + [r for r in runs if r[2] in on_top]
        for a, b, v in runs:
            if a > t:
                continue
            b = min(b, t + 1)
            x0, w_ = _LEFT + a * scale, max(3.0, (b - a) * scale)   # a 1-cycle issue stays visible
            d.rect(x0, y, w_, _ROW - 5, fill=fill_of(v), rx=0)
            word = word_of(v)
            if word and w_ >= 0.6 * svg.MIN_FONT_PX * len(word) + 6:
                d.text(x0 + w_ / 2, y + _ROW - 10, word, anchor="middle", fill=svg.ink_on(fill_of(v)))

    for w in range(shown):
        y = _TOP + w * _ROW
        d.text(8, y + _ROW - 10, f"warp {w}")
        d.rect(_LEFT, y, _RIGHT - _LEFT, _ROW - 5, fill="#FFFFFF", stroke=svg.LIGHT, rx=0)
        bars(y, _runs(states[:, w]), STATE_FILLS.get, STATE_WORDS.get)
        now = _now(trace, w, t)
        d.text(_RIGHT + 10, y + _ROW - 10, now, weight="bold" if now.startswith("issues") else None)
    y = _TOP + shown * _ROW + 6
    d.text(8, y + _ROW - 10, "issue", weight="bold")
    d.rect(_LEFT, y, _RIGHT - _LEFT, _ROW - 5, fill="#FFFFFF", stroke=svg.MUTED, rx=0)
    bars(y, _runs((issued >= 0).astype(np.int8)), lambda v: svg.GREEN if v else "#FFFFFF",
         lambda v: "busy" if v else "idle", on_top=(1,))
    w_now = int(issued[t])
    d.text(_RIGHT + 10, y + _ROW - 10, f"warp {w_now} issues" if w_now >= 0 else "IDLE: no warp ready",
           weight="bold", fill=svg.INK if w_now >= 0 else svg.VERMILLION)
    x = _LEFT + (t + 1) * scale
    d.line(x, _TOP - 6, x, y + _ROW, stroke=svg.BLACK, sw=2)
    yl = y + _ROW + 22
    d.text(_LEFT, yl, "cycle 0", fill=svg.MUTED)
    d.text(_RIGHT, yl, f"{T}", anchor="end", fill=svg.MUTED)
    if W > shown:
        d.text(_RIGHT + 10, yl, f"(warps {shown}..{W - 1} not drawn)", fill=svg.MUTED)
    d.legend(8, yl + 28, [(STATE_FILLS[LOAD], "load"), (STATE_FILLS[WAITING], "stalled"),
                          (STATE_FILLS[COMPUTE], "math"), (STATE_FILLS[READY], "ready")])
    return d.markup()


def still(trace: Trace) -> Still:
    """The whole run as one SVG picture (:func:`drawing` at the last cycle), with its provenance."""
    p = trace.params
    W = trace["state"].shape[1]
    return Still(drawing(trace), title=f"MODEL: one warp scheduler, {W} warp{'s' if W > 1 else ''}, load latency "
                                       f"{p['latency_cycles']} cycles: issue slot busy {p['utilization']:.0%}",
                 provenance=trace.provenance)


def frames(trace: Trace, count: int = 16, source_lines: Optional[Dict[int, int]] = None) -> List[Frame]:
    """Frames for :class:`gpu_viz.widgets.Animation`: the run drawn up to each of :func:`frame_cycles`.

    ``source_lines`` maps LOAD / COMPUTE to the source line to highlight when that kind issues,
    and :data:`IDLE` to the one of a cycle on which no warp issues (none when absent).
    """
    out = []
    for t in frame_cycles(trace, count):
        k = int(trace["kind"][t])
        line = (source_lines or {}).get(k if k >= 0 else IDLE)
        out.append(Frame(drawing(trace, t), caption=caption(trace, t), line=line))
    return out


def animation(trace: Trace, source: Optional[str] = None, count: int = 16, against: Sequence[Trace] = (),
              labels: Optional[Sequence[str]] = None, title: Optional[str] = None,
              provenance: Optional[str] = None, interval_ms: int = 700) -> Animation:
    """The player of a run of the model: :func:`frames` at ``count`` cycles, beside ``source`` (the
    loop every warp runs) with the lines of :data:`SOURCE_NEEDLES` lit.  With ``against`` (more
    runs, e.g. with more warps) the runs play side by side on one time axis instead
    (:func:`contrast_frames`, one of ``labels`` per run, ``trace`` first; default "N warps"), with
    no source pane: no one line belongs to every run.  ``title`` and ``provenance`` default to the
    run's (the first run's latency, for ``against``).

    Raises:
        KeyError: ``trace`` is not a run of the model (``Lesson.animation`` names the lesson).
        TypeError: a run of ``against`` is not a Trace.  ValueError: ``labels`` not one per run.
    """
    W, p = trace["state"].shape[1], trace.params
    if against:
        runs = [trace, *against]
        bad = [type(r).__name__ for r in runs if not isinstance(r, Trace)]
        if bad:
            raise TypeError(f"against must hold Traces (runs of the model), got {bad}")
        labels = list(labels) if labels is not None else [f"{r['state'].shape[1]} warps" for r in runs]
        if len(labels) != len(runs):
            raise ValueError(f"labels must give one label per run ({len(runs)}), got {len(labels)}")
        title = title or (f"MODEL: one warp scheduler, loads of {p['latency_cycles']} cycles, "
                          f"{p['compute_per_load']} instructions each: " + " against ".join(labels))
        provenance = provenance or f"MODEL (not measured), one warp scheduler; the latency: {p['latency_source']}"
        return Animation(contrast_frames(runs, labels, count=count), title=title, provenance=provenance,
                         interval_ms=interval_ms)
    lines = None
    if source is not None:
        text = source.splitlines()
        lines = {k: next((i for i, ln in enumerate(text, 1) if needle in ln), None)
                 for k, needle in SOURCE_NEEDLES.items()}
    return Animation(frames(trace, count=count, source_lines=lines),
                     title=title or f"MODEL: a warp scheduler switching among {W} warps",
                     provenance=provenance or trace.provenance, source=source, interval_ms=interval_ms)


def contrast_drawing(traces: List[Trace], t: int, labels: List[str]) -> str:
    """SVG of several runs of the model side by side at cycle ``t`` (runs shorter than ``t`` are
    drawn to their end): per run its issue slot over time (busy or idle), how busy it has been,
    and how many loads are in flight now -- few warps and many, on one time axis.

    Raises:
        ValueError: ``traces`` and ``labels`` differ in length, or either is empty.
    """
    if not traces or len(traces) != len(labels):
        raise ValueError(f"contrast_drawing: one label per trace, got {len(traces)} traces, {len(labels)} labels")
    T = max(tr["issued"].shape[0] for tr in traces)
    x0, width = 8, svg.WIDTH - 16
    scale = width / T
    band = 78
    d = svg.Svg(height=min(svg.HEIGHT, 34 + band * len(traces) + 40))
    d.text(8, 22, f"cycle {t} of {T}: one scheduler's issue slot, green when a warp issues", weight="bold")
    for k, (tr, label) in enumerate(zip(traces, labels)):
        issued = tr["issued"]
        tk = min(t, issued.shape[0] - 1)
        busy = float(np.mean(issued[: tk + 1] >= 0))
        y = 34 + k * band
        n_in = int(tr["in_flight"][tk])
        d.text(x0, y + 20, f"{label}: busy {busy:.0%} so far, {n_in} load{'s' if n_in != 1 else ''} in flight",
               weight="bold")
        d.rect(x0, y + 30, width, _ROW, fill="#FFFFFF", stroke=svg.MUTED, rx=0)
        for a, b, v in _runs((issued[: tk + 1] >= 0).astype(np.int8)):
            if v:
                d.rect(x0 + a * scale, y + 30, max(1.5, (b - a) * scale), _ROW, fill=svg.GREEN, rx=0)
    x = x0 + (t + 1) * scale
    d.line(x, 30, x, 34 + band * len(traces), stroke=svg.BLACK, sw=2)
    d.legend(8, 34 + band * len(traces) + 22, [(svg.GREEN, "a warp issues"),
                                                ("#FFFFFF", "idle: every warp waits for memory")])
    return d.markup()


def contrast_frames(traces: List[Trace], labels: List[str], count: int = 12) -> List[Frame]:
    """Frames of :func:`contrast_drawing` at ``count`` cycles spread over the longest run (from a
    ``count``-th of the way in); each caption compares how busy the runs have kept the scheduler."""
    T = max(tr["issued"].shape[0] for tr in traces)
    out = []
    count = check_int("count", count, 2)
    # from a twelfth of the way in: at cycle 0 every run has just issued and reads "100 % busy"
    for t in sorted(set(int(round(x)) for x in np.linspace((T - 1) / count, T - 1, count))):
        busy = [float(np.mean(tr["issued"][: min(t, tr["issued"].shape[0] - 1) + 1] >= 0)) for tr in traces]
        out.append(Frame(contrast_drawing(traces, t, labels),
                         caption=f"cycle {t}: " + "; ".join(f"{lab} {b:.0%} busy" for lab, b in zip(labels, busy))))
    return out
