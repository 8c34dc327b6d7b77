"""The hardware facts the lessons compute from: measured on this GPU (once per process, so the facts
a learner computes from and the number a checker grades against are the same), else the committed
hardware record's (:func:`gpu_viz.measure.records.recorded_hardware`), each with where it came from.
"""
from __future__ import annotations

import functools
from typing import Dict

from .. import backend
from . import memory, records, timing

MiB = 1 << 20


@functools.lru_cache(maxsize=None)
def _live_copy_GBps(device_id: int) -> float:
    return round(timing.copy_bandwidth(256 * MiB, reps=20)["GBps"], 1)


@functools.lru_cache(maxsize=None)
def _live_dram_latency(device_id: int) -> tuple:
    p = memory.dram_latency()
    return round(p.ns_per_load, 1), round(p.cycles_per_load)


def _device_id() -> int:
    return backend.require_cupy("a live measurement").cuda.runtime.getDevice()


def copy_GBps() -> Dict:
    """The practical roofline: ``{"copy_GBps", "copy_source"}``, measured on this GPU (once per
    process), else the committed hardware record's.

    Raises:
        RuntimeError: CPU mode and no committed hardware record with a copy bandwidth.
    """
    if backend.has_gpu():
        return {"copy_GBps": _live_copy_GBps(_device_id()), "copy_source": backend.live_label()}
    rec, label = records.recorded_hardware()
    if rec is None or not rec.get("copy_GBps"):
        raise RuntimeError("no committed hardware record with copy_GBps in benchmarks/results "
                           "(make one on a GPU: gpu-viz record hardware --out benchmarks/results)")
    return {"copy_GBps": float(rec["copy_GBps"]), "copy_source": label}


def dram_latency() -> Dict:
    """One DRAM load's latency: ``{"latency_ns", "latency_cycles", "latency_source"}``, measured now
    on a GPU (once per process), else the committed hardware record's.

    Raises:
        RuntimeError: CPU mode and no committed hardware record with a DRAM latency.
    """
    if backend.has_gpu():
        ns, cycles = _live_dram_latency(_device_id())
        return {"latency_ns": ns, "latency_cycles": cycles, "latency_source": backend.live_label()}
    rec, label = records.recorded_hardware()
    lat = (rec or {}).get("dram_latency")
    if not lat:
        raise RuntimeError("no committed hardware record with dram_latency in benchmarks/results")
    return {"latency_ns": float(lat["ns_per_load"]), "latency_cycles": round(lat["cycles_per_load"]),
            "latency_source": label}
