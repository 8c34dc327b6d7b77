"""Kernel scheduling (notebook 07): which SM ran each block, and when.

Data path: ``kernels/scheduling.cu`` (``scheduled_block``: %smid, %globaltimer, clock64 per block)
--(:func:`scheduling_gpu`)--> :class:`gpu_viz.trace.Trace` --> :func:`scheduling_summary` and
``gpu_viz.frames_scheduling`` (timeline, queue animation).  Without a GPU the Trace comes from
``gpu_viz.model.scheduling`` (the named round-robin model with the L4's 58 SMs), every array of
it listed in ``Trace.simulated``.

Public:
  scheduling_trace(blocks=2048, threads=256, spin_cycles=20000, fma_iters=0) -> Trace
  scheduling_summary(trace=None, **launch) -> dict for the GPU record
"""
from __future__ import annotations

import math
from typing import Dict, Optional

import numpy as np

from . import backend, device, kernels
from .model import scheduling as model
from .trace import GPU_SOURCE, Trace

FILE, KERNEL = "scheduling.cu", "scheduled_block"
DECK_CLAIM = ("Launch a grid of 2,048 blocks on 58 SMs. The GigaThread Engine fills all 58, and "
              "the remaining blocks wait in a hardware queue.")
DEFAULT_THREADS = 256
DEFAULT_SPIN = 20000


def resident_blocks_gpu(threads: int) -> int:
    """Blocks of ``threads`` threads one SM holds at once for ``scheduled_block`` (CUDA occupancy API)."""
    import cupy as cp

    fn = kernels.function(FILE, KERNEL)
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, threads, 0))
    except Exception:  # fall back to the same arithmetic the model uses, with this GPU's limits
        return model.resident_blocks_per_sm(device.current(), threads, fn.num_regs, fn.shared_size_bytes)


def scheduling_gpu(blocks: int = model.DECK_BLOCKS, threads: int = DEFAULT_THREADS,
                   spin_cycles: int = DEFAULT_SPIN, fma_iters: int = 0) -> Trace:
    """Launch ``scheduled_block`` and return its Trace (same arrays as the model's).

    t_start/t_end are %globaltimer ns made relative to the earliest start; clk_* are raw clock64.
    Checks: every block wrote its record; t_end >= t_start and clk_end > clk_start.  (PTX does not
    promise contiguous %smid values; tests/test_scheduling.py checks smid < SM count on the GPU.)

    Raises:
        GPUUnavailable in CPU mode; AssertionError on a missing or impossible record.
    """
    import cupy as cp

    model.check_schedule_args(blocks, threads, spin_cycles, fma_iters)
    backend.require_gpu("the scheduling trace")
    info = device.current()
    poison = np.iinfo(np.uint32).max
    smid = cp.full(blocks, poison, cp.uint32)
    t0 = cp.zeros(blocks, cp.uint64)
    t1 = cp.zeros(blocks, cp.uint64)
    c0 = cp.full(blocks, -1, cp.int64)
    c1 = cp.full(blocks, -1, cp.int64)
    sink = cp.zeros(1, cp.float32)
    fn = kernels.function(FILE, KERNEL)
    fn((1,), (threads,), (np.int64(0), np.int32(0), smid, t0, t1, c0, c1, sink))  # warm-up: load + JIT
    fn((blocks,), (threads,), (np.int64(spin_cycles), np.int32(fma_iters), smid, t0, t1, c0, c1, sink))
    smid, t0, t1, c0, c1 = (a.get() for a in (smid, t0, t1, c0, c1))
    missing = int((smid == poison).sum())
    if missing:
        raise AssertionError(f"scheduled_block: {missing} of {blocks} blocks did not record their SM")
    if (t1 < t0).any() or (c1 <= c0).any():
        raise AssertionError("scheduled_block: a block ended before it started (timer not monotone)")
    base = t0.min()
    resident = resident_blocks_gpu(threads)
    return Trace(kernel=KERNEL,
                 params={"blocks": blocks, "threads": threads, "spin_cycles": spin_cycles,
                         "fma_iters": fma_iters, "sm_count": info.sm_count,
                         "resident_blocks_per_sm": resident, "gpu": info.name, "model": None,
                         "clock_khz": info.clock_khz},
                 arrays={"smid": smid, "t_start": t0 - base, "t_end": t1 - base, "clk_start": c0, "clk_end": c1},
                 source=GPU_SOURCE, provenance=backend.live_label() + "; %smid and %globaltimer read on the SMs")


def scheduling_trace(blocks: int = model.DECK_BLOCKS, threads: int = DEFAULT_THREADS,
                     spin_cycles: int = DEFAULT_SPIN, fma_iters: int = 0) -> Trace:
    """Where and when each block ran: live on a GPU, else the round-robin model of the L4.

    Args:
        blocks: grid size (deck: 2048); threads: per block (1..1024);
        spin_cycles: clock64 cycles each block spins; fma_iters: dependent FMAs per thread after it.
    """
    if backend.has_gpu():
        return scheduling_gpu(blocks, threads, spin_cycles, fma_iters)
    return model.scheduling(blocks, threads, spin_cycles, fma_iters)


def max_concurrent(starts: np.ndarray, ends: np.ndarray) -> int:
    """Most intervals [start, end) open at one instant (a block ending at t frees its slot at t)."""
    if len(starts) == 0:
        return 0
    ev = np.concatenate([np.stack([ends, np.zeros_like(ends)], 1), np.stack([starts, np.ones_like(starts)], 1)])
    ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]   # by time, ends (0) before starts (1)
    return int(np.max(np.cumsum(np.where(ev[:, 1] == 1, 1, -1))))


def scheduling_summary(trace: Optional[Trace] = None, **launch) -> Dict:
    """The numbers notebook 07 and the GPU record quote, from ``trace`` (or a new one for ``launch``).

    Returns a JSON-able dict:
        source ("gpu" | "model"), provenance, model (its name, or None on silicon), gpu,
        sm_count, blocks, threads_per_block, resident_blocks_per_sm (occupancy),
        sms_used, blocks_per_sm_hist ({"35": 30, "36": 28}: blocks on an SM -> number of SMs),
        blocks_per_sm_min / _max, max_concurrent_blocks_per_sm (seen in the timeline),
        waves (expected: ceil(blocks / (sm_count * resident))), waves_observed
        (makespan / median block time, rounded), makespan_us, block_us_median.
    """
    tr = trace if trace is not None else scheduling_trace(**launch)
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
    return {
        "source": tr.source, "provenance": tr.provenance, "model": p.get("model"), "gpu": p.get("gpu"),
        "sm_count": int(p["sm_count"]), "blocks": int(p["blocks"]), "threads_per_block": int(p["threads"]),
        "spin_cycles": int(p["spin_cycles"]), "fma_iters": int(p["fma_iters"]),
        "resident_blocks_per_sm": resident, "sms_used": int((counts > 0).sum()),
        "blocks_per_sm_hist": dict(sorted(hist.items(), key=lambda kv: int(kv[0]))),
        "blocks_per_sm_min": int(used.min()), "blocks_per_sm_max": int(used.max()),
        "max_concurrent_blocks_per_sm": conc,
        "waves": int(math.ceil(p["blocks"] / (p["sm_count"] * resident))),
        "waves_observed": int(round(makespan / dur)) if dur > 0 else None,
        "makespan_us": makespan / 1e3, "block_us_median": dur / 1e3,
    }


def summary_row(summary: Dict) -> Dict:
    """One row for a DESIGN.md section 5 record (``bench.new_record(rows=[...])``)."""
    return {"op": "scheduling", "impl": KERNEL, "blocks": summary["blocks"],
            "threads": summary["threads_per_block"], "spin_cycles": summary["spin_cycles"],
            "timing": "globaltimer", **{k: summary[k] for k in (
                "sm_count", "resident_blocks_per_sm", "sms_used", "blocks_per_sm_hist", "waves",
                "waves_observed", "max_concurrent_blocks_per_sm", "makespan_us", "block_us_median")}}


def main(argv=None) -> int:
    """``python -m gpu_viz.scheduling [--record]``: print the deck's launch summary (2048 blocks);
    with --record save it, plus the 1024-thread variant, as a GPU record (bench.save_record)."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--record", action="store_true", help="save benchmarks/results/<gpu>-<date>-scheduling.json")
    args = ap.parse_args(argv)
    runs = [scheduling_summary(threads=t) for t in (DEFAULT_THREADS, 1024)]
    for r in runs:
        print(json.dumps(r))
    if args.record:
        from . import bench

        rec = bench.new_record([summary_row(r) for r in runs], scheduling=runs[0])
        print(bench.save_record(rec, tag="scheduling"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
