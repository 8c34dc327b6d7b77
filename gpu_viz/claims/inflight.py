"""Notebook 11's deck kernel against Little's law: the bytes one SM has in flight (each resident
thread one 2-byte fp16 load), the copy bandwidth and DRAM latency they are set against, and the
kernel's own bandwidth -- timed now on a GPU, else the committed bench record's row.  The exercise
``rmsnorm_speedup.inflight`` grades against these and the claim :func:`gpu_viz.claims.text.deck_littles_law`
quotes them: one answer for both.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from .. import backend
from ..measure import facts, records

#: The exercise's problem: x [M, N] fp16 (the deck's row length, 16384 rows).
M, N = 16384, 2048


def resident_threads(block: int) -> Tuple[int, str]:
    """Threads of the deck kernel resident per SM at ``block`` (occupancy API on a GPU, the
    thread and block limits in CPU mode) and where the number came from."""
    i = records.lesson_device()[0]
    if backend.has_gpu():
        from .. import occupancy
        from ..rmsnorm import deck

        fn = deck.get_kernel("guarded", "float16")   # the variant the checker times
        return occupancy.live_blocks_per_sm(fn, block) * block, "CUDA occupancy API"
    return min(i.max_threads_per_sm // block, i.max_blocks_per_sm) * block, f"thread limit of {i.name}"


def facts_at(block: int = 1024) -> Dict:
    """The facts of Little's law for the deck kernel at ``block``: ``gpu``, ``block``,
    ``resident_threads_per_sm`` (and its source), ``bytes_per_load`` (2), ``sm_count``, the copy
    bandwidth and the DRAM latency (each with its source).

    Raises:
        RuntimeError: CPU mode and no committed hardware record with them.
    """
    i = records.lesson_device()[0]
    t, src = resident_threads(block)
    return {"gpu": i.name, "block": block, "resident_threads_per_sm": t, "resident_source": src,
            "bytes_per_load": 2, "sm_count": i.sm_count, **facts.copy_GBps(), **facts.dram_latency()}


def deck_GBps(block: int) -> Tuple[Optional[float], str]:
    """The deck kernel's bandwidth at [M, N] fp16 and where it came from: timed now on a GPU (checked
    against float64 first), else the committed bench record's row; (None, why) without either."""
    if backend.has_gpu():
        return _deck_GBps_live(block)
    rec = records.newest("*-fused.json")
    rows = [r for r in (rec or {}).get("rows", []) if r.get("impl") == "deck4phase" and r.get("timing") == "kernel"
            and r.get("dtype") == "float16"]
    if not rows:
        return None, "no recorded deck-kernel row"
    # the exercise's row length if the record has it (largest M), else its largest shape
    best = max(rows, key=lambda r: (r["N"] == N, r["M"] * r["N"]))
    return float(best["GBps"]), f"{records.label(rec)}, [{best['M']}, {best['N']}] at block 1024"


def _deck_GBps_live(block: int) -> Tuple[float, str]:
    import torch

    from ..check import assert_close
    from ..measure import timing
    from ..rmsnorm import deck
    from ..rmsnorm.reference import rmsnorm as reference
    from ..rmsnorm.tolerances import tolerance

    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.randn(N, device="cuda", dtype=torch.float16)
    y = deck.four_phase(x, w, block=block, variant="guarded")
    atol, rtol = tolerance("float16")
    assert_close("deck y", y, reference(x, w, 1e-6), atol=atol, rtol=rtol)
    t = timing.time_calls(lambda i: deck.four_phase(x, w, block=block, variant="guarded", out=y), reps=50)
    return t.GBps(2 * x.numel() * 2 + N * 2), f"measured just now at block {block}"
