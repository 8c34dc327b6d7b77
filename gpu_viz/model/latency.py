"""A MODEL of one warp scheduler hiding memory latency (notebook 04) -- not a measurement.

Data path: :func:`simulate` (numpy, cycle by cycle) --> :class:`gpu_viz.trace.Trace`
(``source="model"``, every array listed in ``simulated``) --> :func:`frames` (matplotlib)
--> :class:`gpu_viz.widgets.Animation` (live + static player).

The model, stated plainly:
  * one warp scheduler (one SM sub-partition) issues at most one instruction per cycle;
  * every warp runs the same loop as ``stream_read`` in ``kernels/memory.cu``:
    a load (``LDG``), then ``compute_per_load`` instructions that need the loaded value,
    repeated ``loads_per_warp`` times;
  * a load's value arrives ``latency_cycles`` after it issues (the measured DRAM latency, or
    the deck's ~200 cycles in CPU mode); until then its warp is stalled ("waiting");
  * other instructions take one issue cycle and the next can issue the cycle after
    (ALU pipeline latency and bandwidth limits are left out);
  * the scheduler picks among ready warps greedily (``policy="greedy"``, the default: stay on
    the warp it issued last while that warp is ready, else the next ready warp in turn), or by
    loose round robin (``"round robin"``: always the next ready warp after the last one; it
    keeps warps in lock-step, so they all stall together and hide less latency).
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from ..trace import MODEL_SOURCE, Trace

READY, COMPUTE, LOAD, WAITING, DONE = 0, 1, 2, 3, 4
STATE_NAMES = {READY: "ready (not picked)", COMPUTE: "issues math", LOAD: "issues a load",
               WAITING: "waiting for memory", DONE: "finished"}
STATE_COLORS = {READY: "#c9d7e8", COMPUTE: "#2e7d32", LOAD: "#f9a825", WAITING: "#e57373", DONE: "#ffffff"}
POLICIES = ("greedy", "round robin")
KERNEL = "warp_scheduler_model"


def _pos(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _schedule(n_warps, latency, compute, loads, policy, max_cycles):
    """Event-driven core of the model: the list of issues ``(cycle, warp, kind)`` and the cycle count.

    Each cycle the scheduler issues from one ready warp (``policy``); when no warp is ready it
    jumps to the next arrival, so the cost is per instruction, not per cycle.
    """
    n_instr = loads * (compute + 1)
    pc = [0] * n_warps
    ready_at = [0] * n_warps
    issues = []
    last = n_warps - 1
    t = 0
    remaining = n_warps
    while remaining:
        if t >= max_cycles:
            raise RuntimeError(f"simulate: not finished after max_cycles={max_cycles}")
        pick = -1
        if policy == "greedy" and pc[last] < n_instr and ready_at[last] <= t:
            pick = last
        else:
            for j in range(1, n_warps + 1):
                w = (last + j) % n_warps
                if pc[w] < n_instr and ready_at[w] <= t:
                    pick = w
                    break
        if pick < 0:  # everyone waits: jump to the next arrival
            t = min(ready_at[w] for w in range(n_warps) if pc[w] < n_instr)
            continue
        kind = LOAD if pc[pick] % (compute + 1) == 0 else COMPUTE
        issues.append((t, pick, kind))
        pc[pick] += 1
        ready_at[pick] = t + (latency if kind == LOAD else 1)
        if pc[pick] == n_instr:
            remaining -= 1
        last = pick
        t += 1
    return issues, t


def simulate(n_warps: int = 8, latency_cycles: int = 200, compute_per_load: int = 16,
             loads_per_warp: int = 3, policy: str = "greedy", latency_source: str = "the deck's ~200 cycles",
             max_cycles: int = 1_000_000) -> Trace:
    """Run the scheduler model until every warp has finished its loop.

    Args:
        n_warps: resident warps on this scheduler (>= 1).
        latency_cycles: cycles from a load's issue to its data (>= 1).
        compute_per_load: dependent instructions after each load (>= 1).
        loads_per_warp: loop iterations per warp (>= 1).
        policy: ``"greedy"`` or ``"round robin"``.
        latency_source: words for where ``latency_cycles`` came from (goes into the provenance).

    Returns:
        :class:`Trace` with arrays (T = cycles until the last warp finished):
          ``state`` (T, n_warps) int8: READY/COMPUTE/LOAD/WAITING/DONE per warp per cycle;
          ``issued`` (T,) int16: the warp that issued, -1 for an idle (stall) cycle;
          ``kind`` (T,) int8: COMPUTE, LOAD, or -1;
          ``in_flight`` (T,) int16: loads issued and not yet arrived.
        ``params`` holds the inputs plus ``utilization`` (issue cycles / T).

    Raises:
        ValueError / TypeError: naming the bad argument.
    """
    n_warps = _pos("n_warps", n_warps)
    latency_cycles = _pos("latency_cycles", latency_cycles)
    compute_per_load = _pos("compute_per_load", compute_per_load)
    loads_per_warp = _pos("loads_per_warp", loads_per_warp)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    issues, T = _schedule(n_warps, latency_cycles, compute_per_load, loads_per_warp, policy, max_cycles)
    t_issue = np.fromiter((i[0] for i in issues), dtype=np.int64, count=len(issues))
    w_issue = np.fromiter((i[1] for i in issues), dtype=np.int64, count=len(issues))
    k_issue = np.fromiter((i[2] for i in issues), dtype=np.int64, count=len(issues))
    state = np.full((T, n_warps), READY, dtype=np.int8)
    for w in range(n_warps):
        state[int(t_issue[w_issue == w].max()) + 1:, w] = DONE
    loads = k_issue == LOAD
    for t0, w in zip(t_issue[loads], w_issue[loads]):
        state[t0 + 1: t0 + latency_cycles, w] = WAITING
    state[t_issue, w_issue] = k_issue
    issued = np.full(T, -1, dtype=np.int64)
    issued[t_issue] = w_issue
    kinds = np.full(T, -1, dtype=np.int8)
    kinds[t_issue] = k_issue
    delta = np.zeros(T + latency_cycles + 1, dtype=np.int64)
    np.add.at(delta, t_issue[loads], 1)
    np.add.at(delta, t_issue[loads] + latency_cycles, -1)
    in_flight = np.cumsum(delta)[:T]
    t = T
    issued_a = issued.astype(np.int16)
    util = float(np.mean(issued_a >= 0))
    params = {"n_warps": n_warps, "latency_cycles": latency_cycles, "compute_per_load": compute_per_load,
              "loads_per_warp": loads_per_warp, "policy": policy, "cycles": t, "utilization": util,
              "latency_source": latency_source}
    prov = (f"MODEL (not measured): one warp scheduler, {n_warps} warp{'s' if n_warps > 1 else ''}, "
            f"load latency {latency_cycles} cycles ({latency_source}), {compute_per_load} instructions per load")
    return Trace(kernel=KERNEL, params=params,
                 arrays={"state": state, "issued": issued_a, "kind": kinds, "in_flight": in_flight.astype(np.int16)},
                 source=MODEL_SOURCE, provenance=prov, steps=[],
                 simulated=("state", "issued", "kind", "in_flight"))


def utilization(n_warps: int, latency_cycles: int, compute_per_load: int = 16, loads_per_warp: int = 10,
                policy: str = "greedy") -> float:
    """Fraction of cycles the scheduler issues, from :func:`simulate` (10 loads per warp: close to steady state)."""
    n_warps = _pos("n_warps", n_warps)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    issues, T = _schedule(n_warps, _pos("latency_cycles", latency_cycles), _pos("compute_per_load", compute_per_load),
                          _pos("loads_per_warp", loads_per_warp), policy, 10 ** 9)
    return len(issues) / T


def warps_to_hide(latency_cycles: int, compute_per_load: int) -> int:
    """The model's rule of thumb: while one warp waits ``latency_cycles``, the others must fill
    them with ``compute_per_load + 1`` issue cycles each: ceil((L + c) / (c + 1)) warps."""
    latency_cycles = _pos("latency_cycles", latency_cycles)
    compute_per_load = _pos("compute_per_load", compute_per_load)
    return -(-(latency_cycles + compute_per_load) // (compute_per_load + 1))


def frame_cycles(trace: Trace, count: int = 24) -> List[int]:
    """The cycles the frames show: ``count`` points spread over the run, ending at the last cycle."""
    count = _pos("count", count)
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


def frames(trace: Trace, count: int = 16, source_lines: Optional[Dict[int, int]] = None, dpi: int = 60):
    """Frames for :class:`gpu_viz.widgets.Animation`: the run drawn up to each of :func:`frame_cycles`.

    ``source_lines`` maps LOAD / COMPUTE to the source line to highlight when that kind issues.
    """
    from ..widgets import Frame, figure_png

    out = []
    for t in frame_cycles(trace, count):
        k = int(trace["kind"][t])
        line = (source_lines or {}).get(k) if k >= 0 else None
        out.append(Frame(png=figure_png(draw(trace, t), dpi=dpi), caption=caption(trace, t), line=line))
    return out
