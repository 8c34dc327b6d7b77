"""Trace -> figures for notebook 09: blocks on SMs over time, the hardware queue draining, and
the numbers the notebook and the GPU record quote.

Data path: ``gpu_viz.record.scheduling`` / ``gpu_viz.model.scheduling`` --> :class:`gpu_viz.trace.Trace`
--> :func:`timeline_figure` (one static plot), :func:`drawing` (SVG: the SMs and their block
slots at one instant, the hardware queue beside them) --> :func:`animation` (instants from the
launch to the last block's end) --> :class:`gpu_viz.widgets.Animation`; :func:`summary` -->
tables and records.  Blocks are coloured by launch order in groups of (SMs x resident blocks per
SM): the waves, each also named in words.
"""
from __future__ import annotations

import math
from typing import Dict, Optional

import numpy as np

from ..figures import style
from ..trace import Trace
from ..widgets import Animation, Frame, svg
from ..words import count


#: Fewest image columns (of 900) a block running at the drawn instant takes: a block that started
#: at that instant is one column wide otherwise, too thin to see (the first frame looked empty).
_MIN_RUNNING_COLS = 6
#: Most wave numbers written along the timeline's top edge (more would overlap at slide size).
_MAX_WAVE_LABELS = 12


def _rgb(hex_colour: str):
    return tuple(int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))


def wave_colour(w: int) -> str:
    """The fill of wave ``w`` (0-based): Okabe-Ito colours in turn (:data:`gpu_viz.widgets.svg.CYCLE`),
    so neighbouring waves always differ; the colours repeat every ``len(CYCLE)`` waves, which is
    why every drawing also names its waves by number."""
    return svg.CYCLE[int(w) % len(svg.CYCLE)]


def _wave_of(trace: Trace) -> np.ndarray:
    p = trace.params
    per_wave = p["sm_count"] * p["resident_blocks_per_sm"]
    return np.arange(p["blocks"]) // per_wave


@style.styled
def timeline_figure(trace: Trace, until_ns: Optional[float] = None, title: str = ""):
    """Blocks as bars: y = SM, x = time (µs) from the first block's start; at slide size, every text
    at least the course's smallest (``gpu_viz.figures.style``).

    ``until_ns``: draw the state at that instant (running blocks cut there but at least
    :data:`_MIN_RUNNING_COLS` image columns wide, unstarted ones absent).  Colour and the numbers
    w1, w2, ... along the top edge say the wave (:func:`wave_colour`).
    """
    p = trace.params
    t0 = trace["t_start"].astype(np.float64)
    t1 = trace["t_end"].astype(np.float64)
    sm = trace["smid"].astype(np.int64)
    wave = _wave_of(trace)
    end = t1 if until_ns is None else np.minimum(t1, until_ns)
    show = np.ones(len(t0), bool) if until_ns is None else t0 <= until_ns
    n_sm = p["sm_count"]
    r = max(1, int(p["resident_blocks_per_sm"]))
    # stack co-resident blocks inside an SM's row: slot = order among the SM's blocks mod r
    slot = np.zeros(len(t0))
    for s in np.unique(sm):
        idx = np.nonzero(sm == s)[0]
        idx = idx[np.argsort(t0[idx], kind="stable")]
        slot[idx] = np.arange(len(idx)) % r
    # rasterise: one image row per (SM, slot), one column per time bin -- one artist, fast to draw
    span = max(1.0, float(t1.max()) * 1.02)
    bins = 900
    rows = n_sm * r
    img = np.ones((rows, bins, 3))
    img[np.arange(rows) % r == r - 1] = 0.97 if r > 1 else 1.0
    c0 = np.floor(t0 / span * bins).astype(np.int64)
    c1 = np.maximum(c0 + 1, np.ceil(end / span * bins).astype(np.int64))
    if until_ns is not None:    # running at the instant: wide enough to see, even if it just started
        running_now = (t0 <= until_ns) & (t1 > until_ns)
        c1[running_now] = np.maximum(c1[running_now], c0[running_now] + _MIN_RUNNING_COLS)
    row = (sm * r + slot).astype(np.int64)
    for b in np.nonzero(show)[0]:
        img[row[b], c0[b]:c1[b]] = _rgb(wave_colour(wave[b]))
    fig, ax = style.subplots(figsize=(style.MAX_FIGSIZE_IN[0], 4.6))   # room on its slide for a title and a line
    ax.imshow(img, aspect="auto", interpolation="nearest", extent=(0, span / 1e3, n_sm - 0.5, -0.5))
    ax.set_xlabel("time since the first block started (µs)")
    ax.set_ylabel(f"SM (%smid), {n_sm} SMs")
    if until_ns is not None:
        ax.axvline(until_ns / 1e3, color="k", lw=1)
        queued = int((t0 > until_ns).sum())
        running = int(((t0 <= until_ns) & (t1 > until_ns)).sum())
        done = int((t1 <= until_ns).sum())
        ax.text(0.99, 0.02, f"in the queue: {queued}   running: {running}   done: {done}",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=style.SMALL_PT,
                bbox=dict(fc="white", ec="#999"))
    # the waves by number along the top (the colours repeat every len(CYCLE) waves)
    n_waves = int(wave.max()) + 1 if len(wave) else 0
    step = max(1, -(-n_waves // _MAX_WAVE_LABELS))
    starts = [float(t0[wave == w].min()) / 1e3 for w in range(0, n_waves, step)]
    top = ax.secondary_xaxis("top")
    top.set_xticks(starts, [f"w{w + 1}" for w in range(0, n_waves, step)])
    top.tick_params(labelsize=style.SMALL_PT)
    ax.set_title(title or f"{p['blocks']} blocks x {p['threads']} threads; colour and w1..w{n_waves} on top = wave "
                          f"({n_sm} SMs x {r} resident)", loc="left")
    bottom = style.add_data_line(fig, "Data: " + trace.provenance)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def drawing(trace: Trace, at_ns: float) -> str:
    """SVG of the launch at ``at_ns`` ns after the first block started: every SM (%smid) as a box
    of its resident-block slots, a slot filled (its wave's colour and number) while a block runs
    there; below, the hardware queue, the running and the finished blocks as bars with counts."""
    p = trace.params
    t0 = trace["t_start"].astype(np.float64)
    t1 = trace["t_end"].astype(np.float64)
    base = float(t0.min())
    t0, t1 = t0 - base, t1 - base
    sm = trace["smid"].astype(np.int64)
    wave = _wave_of(trace)
    n_sm, r, B = int(p["sm_count"]), max(1, int(p["resident_blocks_per_sm"])), int(p["blocks"])
    running = np.nonzero((t0 <= at_ns) & (t1 > at_ns))[0]
    queued = int((t0 > at_ns).sum())
    done = int((t1 <= at_ns).sum())
    cols = 16 if n_sm > 80 else 10
    rows = -(-n_sm // cols)
    bw = (svg.WIDTH - 70) / cols
    bh = min(40.0, (svg.HEIGHT - 150) / rows)
    d = svg.Svg(height=int(40 + rows * bh + 104))
    n_waves = int(wave.max()) + 1 if B else 0
    live = sorted(set(wave[running].tolist()))
    head = f"t = {at_ns / 1e3:.1f} µs: " + (f"wave {', '.join(str(w + 1) for w in live)} of {n_waves} running"
                                           if live else ("all blocks done" if done == B else "nothing running"))
    d.text(8, 22, head, weight="bold")
    x = 8 + svg._text_px(head) + 16          # each running wave's swatch, numbered (never colour alone)
    for w in live[:4]:
        if x + 90 > svg.WIDTH:
            break
        d.rect(x, 8, 18, 18, fill=wave_colour(w), stroke=svg.MUTED)
        d.text(x + 24, 22, f"w{w + 1}")
        x += 30 + svg._text_px(f"w{w + 1}")
    # slot of each running block inside its SM: order among that SM's running blocks
    slot_fill = {}
    for s_ in np.unique(sm[running]):
        idx = running[sm[running] == s_]
        idx = idx[np.argsort(t0[idx], kind="stable")]
        for k, b in enumerate(idx[:r]):
            slot_fill[(int(s_), k)] = int(wave[b])
    sw_ = (bw - 8) / r
    for s_ in range(n_sm):
        rr, cc = divmod(s_, cols)
        x, y = 66 + cc * bw, 34 + rr * bh
        d.rect(x, y, bw - 4, bh - 4, fill="#FFFFFF", stroke=svg.MUTED)
        for k in range(r):
            wv = slot_fill.get((s_, k))
            if wv is not None:
                d.rect(x + 2 + k * sw_, y + 2, sw_ - 1, bh - 8, fill=wave_colour(wv), rx=1)
        if cc == 0:
            d.text(60, y + bh / 2 + 5, f"SM {s_}", anchor="end", fill=svg.MUTED)
    y = 34 + rows * bh + 10
    full = svg.WIDTH - 250
    for k, (name, n_blocks, fill) in enumerate((("queue", queued, svg.GREY), ("running", len(running), svg.SKY),
                                              ("done", done, svg.GREEN))):
        yy = y + k * 26
        d.text(8, yy + 18, name, weight="bold" if name == "queue" else None)
        d.rect(96, yy + 2, full, 20, fill="#FFFFFF", stroke=svg.LIGHT)
        d.rect(96, yy + 2, full * n_blocks / max(B, 1), 20, fill=fill)
        d.text(96 + full + 8, yy + 18, f"{n_blocks:,} block{'s' if n_blocks != 1 else ''}")
    return d.markup()


#: The lines of ``scheduled_block`` a frame points at: a block that starts records where and when
#: (%smid, %globaltimer), runs its work, and records its end.
_LINE_START, _LINE_WORK, _LINE_END = "smid[blockIdx.x] = ::smid()", "while (clock64() - t0 < spin_cycles)", \
    "t_end[blockIdx.x] = globaltimer_ns()"


def frame_instants(trace: Trace, frames: int) -> np.ndarray:
    """Up to ``frames`` instants (ns after the first start) at which the launch looks different:
    the launch, instants spread over the run, the end; an instant whose running, queued and done
    blocks are those of the one before is dropped (an idealised model's waves give few pictures;
    a recorded timeline many).  Always the first instant and the end."""
    t0 = trace["t_start"].astype(np.float64)
    t1 = trace["t_end"].astype(np.float64)
    base = float(t0.min())
    t0, t1 = t0 - base, t1 - base
    span = float(t1.max())
    # candidates: an even grid, plus just after every distinct start and end (where a picture changes)
    events = np.unique(np.concatenate([t0, t1]))
    grid = np.linspace(0, span, 4 * frames)
    cand = np.unique(np.concatenate([grid, events[::max(1, len(events) // (4 * frames))], [span]]))
    kept, last = [], None
    for t in cand:
        state = (((t0 <= t) & (t1 > t)).tobytes(), int((t1 <= t).sum()))
        if state != last:
            kept.append(t)
            last = state
    kept = np.asarray(kept)
    if len(kept) > frames:   # spread the survivors evenly, first and last kept
        kept = kept[np.unique(np.round(np.linspace(0, len(kept) - 1, frames)).astype(int))]
    return kept


def animation(trace: Trace, source: Optional[str] = None, frames: int = 10) -> Animation:
    """The hardware queue draining: at most ``frames`` instants from the launch to the last block's
    end, each a different picture (:func:`frame_instants`; SVG, see :func:`drawing`), beside
    ``source`` (default: region ``scheduled_block`` of ``kernels/scheduling.cu``, the kernel every
    block runs) with the line that matters at that instant highlighted: the %smid / %globaltimer
    record of a block that starts, the spin of running blocks, the end record once all are done."""
    if isinstance(frames, bool) or not isinstance(frames, (int, np.integer)) or not 2 <= frames <= 60:
        raise ValueError(f"frames must be an int in 2..60 (instants drawn), got {frames!r}")
    t0 = trace["t_start"].astype(np.float64)
    t1 = trace["t_end"].astype(np.float64)
    rel, rel1 = t0 - t0.min(), t1 - t0.min()
    p = trace.params
    if source is None:
        from .. import kernels

        source = kernels.snippet("scheduling.cu", "scheduled_block").text
    lines = source.splitlines()

    def line_of(needle):
        return next((i + 1 for i, ln in enumerate(lines) if needle in ln), None)

    out, states = [], []
    for t in frame_instants(trace, int(frames)):
        queued = int((rel > t).sum())
        running = int(((rel <= t) & (rel1 > t)).sum())
        states.append((queued, running))
        if running == 0 and queued == 0:
            cap, line = f"t = {t / 1e3:.1f} µs: all {p['blocks']:,} blocks done; each recorded its end", _LINE_END
        elif int(((rel <= t) & (rel > t - 1)).sum()) and queued:
            cap, line = (f"t = {t / 1e3:.1f} µs: blocks start on the SMs that have a free slot and record "
                         f"%smid and the time; {count(queued, 'block')} still wait in the queue"), _LINE_START
        else:
            cap, line = (f"t = {t / 1e3:.1f} µs: {count(running, 'block')} running their work, "
                         f"{count(queued, 'block')} in the queue"), _LINE_WORK
        out.append(Frame(drawing(trace, float(t)), cap, line_of(line)))
    r = p["resident_blocks_per_sm"]
    # a printed deck shows the queue draining (blocks running, more waiting), not the end's empty SMs
    draining = [k for k, (q, run) in enumerate(states) if q and run and k]
    print_frame = draining[len(draining) // 2] if draining else len(out) // 2
    return Animation(out, title=f"{p['blocks']} blocks on {p['sm_count']} SMs ({r} slot{'s' if r != 1 else ''} "
                                f"each): the queue drains", provenance=trace.provenance, source=source,
                     print_frame=print_frame)


def max_concurrent(starts: np.ndarray, ends: np.ndarray) -> int:
    """Most intervals [start, end) open at one instant (a block ending at t frees its slot at t)."""
    if len(starts) == 0:
        return 0
    ev = np.concatenate([np.stack([ends, np.zeros_like(ends)], 1), np.stack([starts, np.ones_like(starts)], 1)])
    ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]   # by time, ends (0) before starts (1)
    return int(np.max(np.cumsum(np.where(ev[:, 1] == 1, 1, -1))))


def summary(trace: Optional[Trace] = None, **launch) -> Dict:
    """The numbers notebook 09 and the GPU record quote, from ``trace`` (or a new one for ``launch``).

    Returns a JSON-able dict:
        kernel, source ("gpu" | "model"), provenance, model (its name, or None on silicon), gpu,
        sm_count, blocks, threads_per_block, resident_blocks_per_sm (occupancy),
        sms_used, blocks_per_sm_hist ({"35": 30, "36": 28}: blocks on an SM -> number of SMs),
        blocks_per_sm_min / _max, max_concurrent_blocks_per_sm (seen in the timeline),
        waves (the occupancy arithmetic: ceil(blocks / (sm_count * resident)), a lower bound on the
        block-times), waves_observed (makespan / median block time, rounded), makespan_us,
        block_us_median, mean_resident_blocks_per_sm (:func:`mean_resident`), first_wave_blocks
        (blocks that started before any block ended).
    """
    if trace is None:
        from .. import lessons

        trace = lessons.SCHEDULING.trace(**launch)
    tr = trace
    p = tr.params
    smid = tr["smid"].astype(np.int64)
    t0 = tr["t_start"].astype(np.float64)
    t1 = tr["t_end"].astype(np.float64)
    counts = np.bincount(smid, minlength=p["sm_count"])
    used = counts[counts > 0]
    hist: Dict[str, int] = {}
    for c in used:
        hist[str(int(c))] = hist.get(str(int(c)), 0) + 1
    conc = max(max_concurrent(t0[smid == s], t1[smid == s]) for s in np.unique(smid))
    makespan = float(t1.max() - t0.min())
    dur = float(np.median(t1 - t0))
    resident = int(p["resident_blocks_per_sm"])
    busy = mean_resident(int(p["blocks"]), dur / 1e3, int(p["sm_count"]), makespan / 1e3)
    return {
        "kernel": tr.kernel, "source": tr.source, "provenance": tr.provenance, "model": p.get("model"), "gpu": p.get("gpu"),
        "sm_count": int(p["sm_count"]), "blocks": int(p["blocks"]), "threads_per_block": int(p["threads"]),
        "spin_cycles": int(p["spin_cycles"]), "fma_iters": int(p["fma_iters"]),
        "resident_blocks_per_sm": resident, "sms_used": int((counts > 0).sum()),
        "blocks_per_sm_hist": dict(sorted(hist.items(), key=lambda kv: int(kv[0]))),
        "blocks_per_sm_min": int(used.min()), "blocks_per_sm_max": int(used.max()),
        "max_concurrent_blocks_per_sm": conc,
        "waves": int(math.ceil(p["blocks"] / (p["sm_count"] * resident))),
        "waves_observed": int(round(makespan / dur)) if dur > 0 else None,
        "makespan_us": makespan / 1e3, "block_us_median": dur / 1e3,
        "mean_resident_blocks_per_sm": busy,
        "first_wave_blocks": int((t0 < t1.min()).sum()),
        "degenerate": _degenerate(p, makespan, dur),
    }


def mean_resident(blocks: int, block_us: float, sm_count: int, makespan_us: float) -> Optional[float]:
    """Blocks resident per SM on average over the launch: the block-time the blocks ran
    (``blocks`` x ``block_us``) over the SM-time the launch took (``sm_count`` x ``makespan_us``).
    Beside the occupancy's resident blocks per SM it says how full the slots were kept: the
    arithmetic assumes full.  None when the launch has no duration."""
    if not makespan_us or makespan_us <= 0 or not sm_count:
        return None
    return blocks * block_us / (sm_count * makespan_us)


#: Key of the per-block timeline a scheduling record keeps for each launch (``gpu-viz record
#: scheduling``): what notebook 09 draws in CPU mode, labelled as recorded.
TIMELINE_KEY = "timelines"


def timeline_entry(trace: Trace) -> Dict:
    """The per-block timeline of a silicon trace, JSON-able: threads, blocks, spin cycles, and for
    every block its ``smid`` and ``t_start_ns`` / ``t_end_ns`` (%globaltimer, ns from the first start).

    Raises:
        ValueError: ``trace`` is a model's (only silicon is recorded).
    """
    if trace.source != "gpu":
        raise ValueError(f"only a silicon trace is recorded, got a {trace.source} trace ({trace.provenance})")
    p = trace.params
    t0 = trace["t_start"].astype(np.int64)
    base = int(t0.min())
    return {"threads": int(p["threads"]), "blocks": int(p["blocks"]), "spin_cycles": int(p["spin_cycles"]),
            "fma_iters": int(p["fma_iters"]), "sm_count": int(p["sm_count"]),
            "resident_blocks_per_sm": int(p["resident_blocks_per_sm"]), "gpu": p.get("gpu"),
            "clock_khz": p.get("clock_khz"),
            "smid": trace["smid"].astype(np.int64).tolist(), "t_start_ns": (t0 - base).tolist(),
            "t_end_ns": (trace["t_end"].astype(np.int64) - base).tolist()}


def recorded_trace(record: Optional[Dict], threads: int = 256, blocks: int = 2048) -> Optional[Trace]:
    """The Trace of the launch ``record`` (a scheduling record) keeps the per-block timeline of
    (:data:`TIMELINE_KEY`), at ``threads`` per block and ``blocks`` blocks; its provenance is the
    record's label ("recorded on <GPU>, <date> (not live)").  None when the record has no such
    timeline (records made before the timeline was kept)."""
    from ..measure import records as _records

    entry = next((e for e in (record or {}).get(TIMELINE_KEY, [])
                  if e.get("threads") == threads and e.get("blocks") == blocks), None)
    if entry is None:
        return None
    t0 = np.asarray(entry["t_start_ns"], np.uint64)
    t1 = np.asarray(entry["t_end_ns"], np.uint64)
    smid = np.asarray(entry["smid"], np.uint32)
    if not (len(t0) == len(t1) == len(smid) == entry["blocks"]) or (t1 < t0).any():
        raise ValueError(f"the scheduling record's timeline at {threads} threads is malformed "
                         f"({len(smid)} SM ids, {len(t0)} starts, {len(t1)} ends for {entry['blocks']} blocks)")
    params = {"blocks": entry["blocks"], "threads": threads, "spin_cycles": entry["spin_cycles"],
              "fma_iters": entry.get("fma_iters", 0), "sm_count": entry["sm_count"],
              "resident_blocks_per_sm": entry["resident_blocks_per_sm"], "gpu": entry.get("gpu") or record.get("gpu"),
              "model": None, "clock_khz": entry.get("clock_khz")}
    ghz = (entry.get("clock_khz") or 1e6) / 1e6
    return Trace(kernel="scheduled_block", params=params,
                 arrays={"smid": smid, "t_start": t0, "t_end": t1,
                         "clk_start": np.round(t0 * ghz).astype(np.int64), "clk_end": np.round(t1 * ghz).astype(np.int64)},
                 source="gpu", provenance=f"{_records.label(record)}; %smid and %globaltimer read on the SMs",
                 simulated=("clk_start", "clk_end"))


def _degenerate(p: Dict, makespan_ns: float, block_ns: float) -> Optional[str]:
    """Why a launch has no timeline to read, in words, or None when it has one."""
    if makespan_ns <= 0 or block_ns <= 0:
        work = ("no work per block (spin cycles = 0 and FMAs = 0)" if not p["spin_cycles"] and not p["fma_iters"]
                else "blocks too short for the clock to see")
        return (f"{work}: every block exits as soon as it starts, so there is no makespan and no waves "
                f"to see; give the blocks some spin cycles or FMAs")
    return None


def describe(summary: Dict) -> str:
    """The explorer's line for a launch, in words: blocks, SMs, occupancy, waves expected and seen,
    makespan; a degenerate launch (:func:`summary`'s ``degenerate``) says why there is nothing to
    time instead of "seen None" and "0.0 µs"."""
    s = summary
    head = (f"{s['blocks']} blocks on {s['sms_used']} of {s['sm_count']} SMs, {s['resident_blocks_per_sm']} "
            f"resident per SM, blocks per SM {s['blocks_per_sm_min']}..{s['blocks_per_sm_max']}")
    if s["degenerate"]:
        return f"{head}; {s['waves']} wave{'s' if s['waves'] != 1 else ''} expected, but {s['degenerate']}."
    return (f"{head}; waves: {s['waves']} expected, {s['waves_observed']} seen (makespan / block time); "
            f"makespan {s['makespan_us']:.1f} µs, one block {s['block_us_median']:.1f} µs.")


def summary_row(summary: Dict) -> Dict:
    """One row for a DESIGN.md section 5 record (``measure.records.new_record(rows=[...])``)."""
    return {"op": "scheduling", "impl": summary["kernel"], "blocks": summary["blocks"],
            "threads": summary["threads_per_block"], "spin_cycles": summary["spin_cycles"],
            "timing": "globaltimer", **{k: summary[k] for k in (
                "sm_count", "resident_blocks_per_sm", "sms_used", "blocks_per_sm_hist", "waves",
                "waves_observed", "max_concurrent_blocks_per_sm", "makespan_us", "block_us_median",
                "mean_resident_blocks_per_sm", "first_wave_blocks")}}
