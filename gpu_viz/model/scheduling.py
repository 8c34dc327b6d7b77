"""CPU model of ``kernels/scheduling.cu``: a named round-robin model of the hardware block queue.

Nothing here is measured: where and when a block runs is only known to silicon, so every array
of the model's Trace is listed in ``Trace.simulated`` and every figure names :data:`MODEL_NAME`.

The model (:func:`schedule`):
  * each SM holds at most R blocks at once, R from the occupancy limits of the spec sheet
    (:func:`resident_blocks_per_sm`: blocks/SM, threads/SM, registers/SM);
  * the queue hands blocks out in order; the first S * R go round-robin (block b to SM b mod S,
    then a second layer, ...), each later block to the slot that frees first (ties: the slot
    whose previous block was launched first), with no dispatch delay;
  * every block takes the same time, spin_cycles + FMA_LATENCY_CYCLES * fma_iters cycles at the
    spec sheet's boost clock (no contention between co-resident blocks is modelled).
"""
from __future__ import annotations

import heapq
from typing import Optional

import numpy as np

from .. import backend, device
from ..trace import MODEL_SOURCE, Trace

#: The deck's launch.
DECK_BLOCKS = 2048

#: Registers per thread of ``scheduled_block`` (ptxas, CUDA 13.0, sm_89): the occupancy model's input.
#: tests/test_scheduling.py checks it against nvcc when nvcc is present.
MODEL_REGS_PER_THREAD = 10

#: Dependent FMA latency the model charges per iteration (cycles; Volta..Hopper: 4).
FMA_LATENCY_CYCLES = 4

REG_ALLOC_UNIT = 256   # registers are allocated per warp in units of 256
WARP = 32


def model_name(info: device.DeviceInfo) -> str:
    short = info.name.replace("NVIDIA ", "")
    return f"round-robin model, {short}'s {info.sm_count} SMs"


MODEL_NAME = model_name(device.SPEC_SHEETS["L4"])


def check_schedule_args(blocks: int, threads: int, spin_cycles: int, fma_iters: int) -> None:
    """Raises TypeError / ValueError naming the bad argument and what was expected."""
    for name, v in (("blocks", blocks), ("threads", threads), ("spin_cycles", spin_cycles),
                    ("fma_iters", fma_iters)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if not 1 <= blocks <= 2**31 - 1:
        raise ValueError(f"blocks must be 1..2**31-1, got {blocks}")
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads must be 1..1024 per block (CUDA's per-block cap), got {threads}")
    if spin_cycles < 0 or fma_iters < 0:
        raise ValueError(f"spin_cycles and fma_iters must be >= 0, got {spin_cycles}, {fma_iters}")


def resident_blocks_per_sm(info: device.DeviceInfo, threads: int,
                           regs_per_thread: int = MODEL_REGS_PER_THREAD, smem_bytes: int = 0) -> int:
    """Occupancy: how many blocks of ``threads`` threads fit on one SM at once.

    min over the limits: max blocks/SM, max threads/SM (whole warps), registers/SM (allocated per
    warp in units of 256), shared memory/SM.  Raises ValueError if not even one block fits.
    """
    warps = -(-threads // WARP)
    limits = [info.max_blocks_per_sm, info.max_threads_per_sm // (warps * WARP)]
    regs_per_warp = -(-regs_per_thread * WARP // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    if regs_per_warp:
        limits.append((info.regs_per_sm // regs_per_warp) // warps)
    if smem_bytes:
        limits.append(info.smem_per_sm_bytes // smem_bytes)
    r = min(limits)
    if r < 1:
        raise ValueError(f"a block of {threads} threads does not fit on one SM of {info.name} ({limits})")
    return int(r)


def block_cycles(spin_cycles: int, fma_iters: int) -> int:
    """The model's duration of one block, in SM cycles."""
    return int(spin_cycles) + FMA_LATENCY_CYCLES * int(fma_iters)


def schedule(blocks: int, sm_count: int, resident: int, duration_ns: float):
    """Assign ``blocks`` equal-length blocks to ``sm_count`` SMs of ``resident`` slots each.

    Returns (smid uint32 [blocks], start_ns float64 [blocks]).
    """
    smid = np.empty(blocks, np.uint32)
    start = np.empty(blocks, np.float64)
    first = min(blocks, sm_count * resident)
    b = np.arange(first)
    smid[:first] = b % sm_count
    start[:first] = 0.0
    if blocks > first:
        # heap of (time the slot frees, launch order of its current block, sm)
        heap = [(duration_ns, int(k), int(k % sm_count)) for k in range(first)]
        heapq.heapify(heap)
        for k in range(first, blocks):
            t, _order, sm = heapq.heappop(heap)
            smid[k], start[k] = sm, t
            heapq.heappush(heap, (t + duration_ns, k, sm))
    return smid, start


def scheduling(blocks: int = DECK_BLOCKS, threads: int = 256, spin_cycles: int = 20000,
               fma_iters: int = 0, info: Optional[device.DeviceInfo] = None) -> Trace:
    """Model of ``scheduled_block``: where and when each of ``blocks`` blocks runs.

    Args:
        blocks: grid size (the deck: 2048).
        threads: threads per block (1..1024).
        spin_cycles: clock64() cycles each block spins.
        fma_iters: dependent FMAs per thread after the spin.
        info: the GPU modelled (default: the L4 spec sheet, the deck's GPU).

    Returns:
        Trace with smid: uint32 [blocks]; t_start, t_end: uint64 [blocks] (ns from the launch);
        clk_start, clk_end: int64 [blocks] (cycles at the spec sheet's clock).  All simulated.
    """
    check_schedule_args(blocks, threads, spin_cycles, fma_iters)
    info = info or device.SPEC_SHEETS["L4"]
    resident = resident_blocks_per_sm(info, threads)
    cycles = block_cycles(spin_cycles, fma_iters)
    ghz = info.clock_khz / 1e6
    dur_ns = cycles / ghz
    smid, start = schedule(blocks, info.sm_count, resident, dur_ns)
    t_start = np.round(start).astype(np.uint64)
    t_end = np.round(start + dur_ns).astype(np.uint64)
    clk_start = np.round(start * ghz).astype(np.int64)
    name = model_name(info)
    return Trace(kernel="scheduled_block",
                 params={"blocks": blocks, "threads": threads, "spin_cycles": spin_cycles,
                         "fma_iters": fma_iters, "sm_count": info.sm_count,
                         "resident_blocks_per_sm": resident, "gpu": info.name, "model": name,
                         "clock_khz": info.clock_khz},
                 arrays={"smid": smid, "t_start": t_start, "t_end": t_end, "clk_start": clk_start,
                         "clk_end": clk_start + cycles},
                 source=MODEL_SOURCE,
                 provenance=f"{backend.MODEL_LABEL}; {name}, {resident} resident block(s)/SM from "
                            f"the {info.name} spec sheet",
                 simulated=("smid", "t_start", "t_end", "clk_start", "clk_end"))
