"""GPU producer of notebook 09's block scheduling: ``kernels/scheduling.cu`` on the GPU.

Data path: ``kernels/scheduling.cu`` (``scheduled_block``: %smid, %globaltimer, clock64 per block)
--(:func:`trace`)--> :class:`gpu_viz.trace.Trace`, the layout of ``gpu_viz.model.scheduling.trace``
(a named round-robin model) --> ``gpu_viz.frames.scheduling`` (timeline, queue animation, the
summary the notebook and the record quote).
"""
from __future__ import annotations

import numpy as np

from .. import backend, device, kernels, occupancy
from ..model import scheduling as model
from ..trace import GPU_SOURCE, Trace

FILE, KERNEL = model.FILE, model.KERNEL


def resident_blocks(threads: int) -> int:
    """Blocks of ``threads`` threads one SM holds at once for ``scheduled_block`` (the CUDA
    occupancy API, :func:`gpu_viz.occupancy.live_blocks_per_sm`)."""
    return occupancy.live_blocks_per_sm(kernels.function(FILE, KERNEL), threads)


def trace(blocks: int = model.DECK_BLOCKS, threads: int = model.DEFAULT_THREADS,
          spin_cycles: int = model.DEFAULT_SPIN, fma_iters: int = 0, *, seed=None) -> Trace:
    """Launch ``scheduled_block`` and return its Trace (same arrays as the model's).

    t_start/t_end are %globaltimer ns made relative to the earliest start; clk_* are raw clock64.
    Checks: every block wrote its record; t_end >= t_start and clk_end > clk_start.  (PTX does not
    promise contiguous %smid values; tests/test_scheduling.py checks smid < SM count on the GPU.)

    Raises:
        GPUUnavailable in CPU mode; AssertionError on a missing or impossible record.
    """
    model.check_schedule_args(blocks, threads, spin_cycles, fma_iters)
    cp = backend.require_cupy("the scheduling trace")
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
    resident = resident_blocks(threads)
    return Trace(kernel=KERNEL, params=model.launch_params(blocks, threads, spin_cycles, fma_iters, info, resident, None),
                 arrays={"smid": smid, "t_start": t0 - base, "t_end": t1 - base, "clk_start": c0, "clk_end": c1},
                 source=GPU_SOURCE, provenance=backend.live_label() + "; %smid and %globaltimer read on the SMs")
