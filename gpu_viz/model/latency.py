"""A MODEL of one warp scheduler hiding memory latency (notebook 04) -- not a measurement.

Data path: :func:`simulate` (numpy, cycle by cycle; :func:`trace` for the lesson
``gpu_viz.lessons.LATENCY``) --> :class:`gpu_viz.trace.Trace` (``source="model"``, every array
listed in ``simulated``) --> ``gpu_viz.frames.latency`` (SVG) --> :class:`gpu_viz.widgets.Animation`
(live + static player).  It has no GPU producer: a scheduler's issue slots are not observable
from a kernel.

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

from typing import Optional

import numpy as np

from ..check import check_int
from ..trace import MODEL_SOURCE, Trace

READY, COMPUTE, LOAD, WAITING, DONE = 0, 1, 2, 3, 4
STATE_NAMES = {READY: "ready (not picked)", COMPUTE: "issues math", LOAD: "issues a load",
               WAITING: "waiting for memory", DONE: "finished"}
POLICIES = ("greedy", "round robin")
KERNEL = "warp_scheduler_model"
#: The most cycles :func:`simulate` runs before it gives up (its ``max_cycles``).
MAX_CYCLES = 1_000_000


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
             max_cycles: int = MAX_CYCLES) -> Trace:
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
    n_warps = check_int("n_warps", n_warps, 1)
    latency_cycles = check_int("latency_cycles", latency_cycles, 1)
    compute_per_load = check_int("compute_per_load", compute_per_load, 1)
    loads_per_warp = check_int("loads_per_warp", loads_per_warp, 1)
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
            f"load latency {latency_cycles} cycles, {compute_per_load} instructions per load; the latency: {latency_source}")
    return Trace(kernel=KERNEL, params=params,
                 arrays={"state": state, "issued": issued_a, "kind": kinds, "in_flight": in_flight.astype(np.int16)},
                 source=MODEL_SOURCE, provenance=prov, steps=[],
                 simulated=("state", "issued", "kind", "in_flight"))


def cycles_bound(n_warps: int, latency_cycles: int, compute_per_load: int, loads_per_warp: int) -> int:
    """An upper bound on the cycles :func:`simulate` takes, known before it runs: every cycle either
    issues (``n_warps * loads_per_warp * (compute_per_load + 1)`` issues in all) or idles, and an
    idle cycle is one where every unfinished warp waits for a load -- the warp that finishes last
    among them, which waits ``loads_per_warp * (latency_cycles - 1)`` cycles in all."""
    return n_warps * loads_per_warp * (compute_per_load + 1) + loads_per_warp * (latency_cycles - 1)


def trace(n_warps: int = 8, latency_cycles: int = 200, compute_per_load: int = 16, loads_per_warp: int = 3,
          policy: str = "greedy", latency_source: str = "the deck's ~200 cycles", *,
          seed: Optional[int] = None) -> Trace:
    """:func:`simulate` as the lesson's producer (``gpu_viz.lessons.LATENCY``): the same run and
    Trace, ``seed`` kept in ``params`` (the model draws nothing at random: it names the call).

    Raises:
        ValueError / TypeError: as :func:`simulate`, naming the bad argument.
    """
    tr = simulate(n_warps, latency_cycles, compute_per_load, loads_per_warp, policy, latency_source)
    tr.params["seed"] = seed
    return tr


def utilization(n_warps: int, latency_cycles: int, compute_per_load: int = 16, loads_per_warp: int = 10,
                policy: str = "greedy") -> float:
    """Fraction of cycles the scheduler issues, from :func:`simulate` (10 loads per warp: close to steady state)."""
    n_warps = check_int("n_warps", n_warps, 1)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    issues, T = _schedule(n_warps, check_int("latency_cycles", latency_cycles, 1), check_int("compute_per_load", compute_per_load, 1),
                          check_int("loads_per_warp", loads_per_warp, 1), policy, 10 ** 9)
    return len(issues) / T


def warps_to_hide(latency_cycles: int, compute_per_load: int) -> int:
    """The model's rule of thumb: while one warp waits ``latency_cycles``, the others must fill
    them with ``compute_per_load + 1`` issue cycles each: ceil((L + c) / (c + 1)) warps."""
    latency_cycles = check_int("latency_cycles", latency_cycles, 1)
    compute_per_load = check_int("compute_per_load", compute_per_load, 1)
    return -(-(latency_cycles + compute_per_load) // (compute_per_load + 1))
