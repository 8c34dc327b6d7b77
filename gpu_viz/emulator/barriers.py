"""Barriers: ``bar.sync`` / ``barrier.sync`` (``__syncthreads()``, named barriers with a thread
count) and ``bar.arrive``, for the warps of one block.

A warp that reaches a barrier waits (state "bar") with its lanes counted as arrived; when every
live thread of the block has arrived (or the barrier's count), the barrier completes and its
warps run on.  What CUDA leaves undefined is reported, not hidden (barrier-divergence hazards):
a barrier inside a branch on which one warp's lanes disagree, a barrier completed after some
threads exited without reaching it, threads meeting at different ``__syncthreads()``, and a block
that hangs because not all its threads can arrive.

Each function takes the :class:`~gpu_viz.emulator.block.Block` (``blk``) whose warps wait.
"""
from __future__ import annotations

from typing import Dict, List

from . import hazards as hz
from . import isa
from .simt import WARP, Warp, divergent, lane_list, lanes_of


def bar(blk, group, ins, idx, fn):
    """bar.sync / barrier.sync / bar.arrive / bar.red: the group's active lanes arrive."""
    L = blk.L
    mods = ins.mods
    arrive_only = ".arrive" in mods
    red = ".red" in mods
    args = ins.args
    if red:
        raise isa.Unsupported(ins, "bar.red (__syncthreads_count/and/or)")
    bid = 0
    if args:
        a0 = args[0]
        if a0[0] != "imm":
            vals = isa.reader(a0, "u32", fn, ins)(blk, idx)
            bid = int(vals[0])
        else:
            bid = a0[1]
    count = None
    if len(args) > 1:
        c = args[1]
        count = int(isa.reader(c, "u32", fn, ins)(blk, idx)[0]) if c[0] != "imm" else c[1]
    for w in group:
        top = w.stack[-1]
        if top.mask != w.live and len(w.stack) > 1 and divergent(w):
            L.hazards.add(hz.Hazard(
                hz.BARRIER_DIVERGENCE,
                "__syncthreads() inside a branch on which the lanes of one warp disagree: only lanes "
                f"{lane_list(top.mask)} of warp {w.id} reached it (every live thread of the block must reach "
                "the same barrier)", L.where(blk, fn.name, ins.index, w.id * WARP + int(lanes_of(top.mask)[0]))))
        blk.arrivals[bid] = blk.arrivals.get(bid, 0) + bin(top.mask).count("1")
        if arrive_only:
            top.pc = ins.index + 1
        else:
            w.state = "bar"
            w.bar = (bid, count)
            w.bar_pc = (fn.name, ins.index)
            w.bar_mask = top.mask


def release(blk) -> bool:
    """Complete every barrier whose participants have all arrived; True if any warp resumed."""
    L = blk.L
    waiting = [w for w in blk.warps if w.state == "bar"]
    if not waiting:
        return False
    by_bar: Dict[int, List[Warp]] = {}
    for w in waiting:
        by_bar.setdefault(w.bar[0], []).append(w)
    live = sum(bin(w.live).count("1") for w in blk.warps)
    resumed = False
    for bid, ws in by_bar.items():
        count = ws[0].bar[1]
        arrived = blk.arrivals.get(bid, 0)
        need = count if count is not None else live
        if arrived < need:
            continue
        # every live thread is here (or the counted number): complete the barrier
        if count is None and blk.exited_since_barrier:
            n_left = bin(blk.exited_since_barrier).count("1")
            f, pc = ws[0].bar_pc
            t = ws[0].id * WARP + int(lanes_of(ws[0].bar_mask)[0])
            L.hazards.add(hz.Hazard(
                hz.BARRIER_DIVERGENCE,
                f"__syncthreads() was reached by {arrived} of the block's {arrived + n_left} threads: "
                f"{n_left} had already returned without reaching it (every thread of the block must reach "
                "every __syncthreads(); on sm_70+ silicon the barrier usually completes anyway, but the "
                "CUDA programming model leaves it undefined)", L.where(blk, f, pc, t),
                details={"arrived": arrived, "missing": n_left}))
        # the block's threads met at barrier `bid`, but at different bar.sync instructions (the
        # two arms of an if/else each with its own __syncthreads()): silicon counts arrivals per
        # barrier, so it completes there, but CUDA requires every thread to reach the same
        # __syncthreads().  (Named barriers with a thread count are the producer/consumer idiom,
        # where different instructions are the point: not reported.)
        places = sorted({w.bar_pc for w in ws})
        if count is None and len(places) > 1:
            lines = [L.program.user_line(L.module.functions[f].code[pc]) for f, pc in places]
            w0 = next(w for w in ws if w.bar_pc == places[0])
            L.hazards.add(hz.Hazard(
                hz.BARRIER_DIVERGENCE,
                f"the block's threads met at {len(places)} different __syncthreads() (lines "
                f"{', '.join(str(x) for x in lines)}): every thread must reach the same __syncthreads() "
                "(on sm_70+ silicon they release each other, but the CUDA programming model leaves it undefined; "
                "is one inside a branch the block's threads do not all take?)",
                L.where(blk, places[0][0], places[0][1], w0.id * WARP + int(lanes_of(w0.bar_mask)[0])),
                details={"lines": lines}))
        blk.epoch += 1
        blk.arrivals[bid] = 0
        blk.exited_since_barrier = 0
        for w in ws:
            w.state = "run"
            w.bar = None
            w.stack[-1].pc = w.bar_pc[1] + 1
            resumed = True
    return resumed


def deadlock(blk, waiting: List[Warp]) -> None:
    """Every warp still running waits at a barrier that cannot complete: report the hang (how many
    threads arrived, and the other barriers some wait at)."""
    L = blk.L
    w0 = waiting[0]
    f, pc = w0.bar_pc
    arrived_lanes = sum(bin(w.bar_mask).count("1") for w in waiting)
    live = sum(bin(w.live).count("1") for w in blk.warps)
    others = sorted({w.bar_pc for w in waiting} - {w0.bar_pc})
    where_else = ""
    if others:
        lines = [str(L.program.user_line(L.module.functions[ff].code[pp])) for ff, pp in others]
        where_else = f"; the others wait at a different __syncthreads() (line {', '.join(lines)})"
    L.hazards.add(hz.Hazard(
        hz.BARRIER_DIVERGENCE,
        f"the block hangs: __syncthreads() was reached by {arrived_lanes} of {live} live threads{where_else}. "
        "Every thread of the block must reach the same __syncthreads(); on a GPU this kernel would hang or "
        "give undefined results", L.where(blk, f, pc, w0.id * WARP + int(lanes_of(w0.bar_mask)[0]))))
