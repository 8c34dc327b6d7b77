"""CPU model of ``kernels/scheduling.cu`` (notebook 09): a named round-robin model of the hardware
block queue, the same Trace as ``gpu_viz.record.scheduling``.

Nothing here is measured: where and when a block runs is only known to silicon, so every array
of the model's Trace is listed in ``Trace.simulated`` and every figure names :data:`MODEL_NAME`.

The model (:func:`schedule`):
  * each SM holds at most R blocks at once, R from the spec sheet's occupancy limits
    (:func:`resident_blocks_per_sm`: the calculator of ``gpu_viz.occupancy``; the kernel's
    ``__launch_bounds__(1024, 2)`` keeps it at <= 32 registers, so registers never bind and
    only blocks/SM and threads/SM do);
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

from .. import backend, device, occupancy
from ..trace import MODEL_SOURCE, Trace
from ..words import noun

FILE, KERNEL = "scheduling.cu", "scheduled_block"
DEFAULT_THREADS = 256
DEFAULT_SPIN = 20000

#: The deck's launch.
DECK_BLOCKS = 2048

#: Registers per thread the model charges: the ceiling ``__launch_bounds__(1024, 2)`` sets in
#: kernels/scheduling.cu (2048 threads x 32 = 64K registers: registers never cap its occupancy).
MODEL_REGS_PER_THREAD = 32

#: Dependent FMA latency the model charges per iteration (cycles; Volta..Hopper: 4).
FMA_LATENCY_CYCLES = 4



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


def resident_blocks_per_sm(info: device.DeviceInfo, threads: int) -> int:
    """Occupancy: how many blocks of ``threads`` threads of ``scheduled_block`` fit on one SM of
    ``info`` at once (:func:`gpu_viz.occupancy.calculate` at :data:`MODEL_REGS_PER_THREAD`).

    Raises:
        ValueError: not even one block fits.
    """
    occ = occupancy.calculate(info, threads, occupancy.KernelResources(KERNEL, MODEL_REGS_PER_THREAD))
    if occ.blocks_per_sm < 1:
        raise ValueError(f"a block of {threads} threads does not fit on one SM of {info.name} ({occ.limits})")
    return occ.blocks_per_sm


def launch_params(blocks: int, threads: int, spin_cycles: int, fma_iters: int, info: device.DeviceInfo,
                  resident: int, model: Optional[str]) -> dict:
    """The Trace's ``params`` (both producers); ``model``: the model's name, None on silicon."""
    return {"blocks": blocks, "threads": threads, "spin_cycles": spin_cycles, "fma_iters": fma_iters,
            "sm_count": info.sm_count, "resident_blocks_per_sm": resident, "gpu": info.name, "model": model,
            "clock_khz": info.clock_khz}


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


def trace(blocks: int = DECK_BLOCKS, threads: int = DEFAULT_THREADS, spin_cycles: int = DEFAULT_SPIN,
          fma_iters: int = 0, info: Optional[device.DeviceInfo] = None, *, seed=None) -> Trace:
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
    return Trace(kernel=KERNEL, params=launch_params(blocks, threads, spin_cycles, fma_iters, info, resident, name),
                 arrays={"smid": smid, "t_start": t_start, "t_end": t_end, "clk_start": clk_start,
                         "clk_end": clk_start + cycles},
                 source=MODEL_SOURCE,
                 provenance=f"{backend.MODEL_LABEL}; {name}, {resident} resident {noun(resident, 'block')}/SM from "
                            f"the occupancy calculator for {info.name}",
                 simulated=("smid", "t_start", "t_end", "clk_start", "clk_end"))
