"""Notebook 05 (the 1024-thread block cap): its exercises."""
from __future__ import annotations

from . import core as _core
from .core import PREDICT, Exercise, register
from .numbers import _placeholder, _resident, _solution, grade_number

# == 05: the 1024 cap =================================================================================

#: block_1024_cap.blocks' block size: one warp.  Every GPU the course names caps resident blocks per SM below
#: its threads per SM / 32 (T4 16 < 32, L4 24 < 48, A100/H100/H200 32 < 64), so the block cap, not
#: the thread limit, decides: an answer from the thread limit alone is wrong everywhere.
THREADS_05 = 32


def _given_blocks():
    i = _core.info()
    return {"gpu": i.name, "threads_per_block": THREADS_05, "max_threads_per_sm": i.max_threads_per_sm,
            "max_blocks_per_sm": i.max_blocks_per_sm, "regs_per_thread": 32, "regs_per_sm": i.regs_per_sm}


def _check_blocks(answer):
    g = _given_blocks()
    b = g["threads_per_block"]
    want, src = _resident(b)
    t = g["max_threads_per_sm"]
    return grade_number("block_1024_cap.blocks", answer, want, 1e-9, f"blocks of {b} threads resident per SM", {
        "that is the thread limit alone: an SM also caps how many blocks it holds (max_blocks_per_sm), "
        "and the smallest limit wins.": t // b,
        "that is the register limit alone: the thread and block limits count too, and the smallest wins.":
            g["regs_per_sm"] // (g["regs_per_thread"] * b),
        "that counts warps per SM: the question asks for blocks.": t // 32 if b != 32 else None,
    }, [], reveal=[f"the run: {want} per SM ({src}); {want} x {b} threads = {want * b:,} of the SM's {t:,} "
                   f"({want * b / t:.0%} occupancy): one-warp blocks leave the SM half empty or worse"])


def _given_1024():
    i = _core.info()
    return {"gpu": i.name, "max_threads_per_sm": i.max_threads_per_sm, "max_threads_per_block": i.max_threads_per_block}


def _check_1024(answer):
    g = _given_1024()
    want, src = _resident(1024)
    return grade_number("block_1024_cap.fit1024", answer, want, 1e-9, "1024-thread blocks resident per SM", {
        "1024 is the block cap, not the SM's size: an SM of this GPU holds "
        f"{g['max_threads_per_sm']} threads.": 1,
        "blocks are whole: round down.": g["max_threads_per_sm"] / 1024,
    } if want != 1 else {"blocks are whole: round down.": g["max_threads_per_sm"] / 1024},
        [], reveal=[f"the run: {want} per SM ({src}); {g['gpu']} holds {g['max_threads_per_sm']:,} threads per SM"
                    + (": here the cap and the SM's size coincide, on most GPUs they do not" if want == 1 else "")])


register(Exercise(
    "block_1024_cap.blocks", "05_block_1024_cap", PREDICT, "Blocks per SM",
    "**Exercise: predict, then run.** `scheduled_block` (notebook 09's kernel: 32 registers per thread, "
    f"no shared memory) at {THREADS_05} threads per block (one warp): how many blocks does one SM hold at "
    "once? Every limit in the facts counts. The checker asks the CUDA occupancy API on a GPU, the "
    "occupancy calculator in CPU mode.",
    _placeholder("block_1024_cap.blocks", "blocks per SM"),
    _solution("block_1024_cap.blocks", "min(g['max_threads_per_sm'] // g['threads_per_block'], g['max_blocks_per_sm'], "
                           "g['regs_per_sm'] // (g['regs_per_thread'] * g['threads_per_block']))"),
    "## What this means for the code you write", _given_blocks, _check_blocks,
    ("thread limit alone", "register limit alone", "warps, not blocks")))

register(Exercise(
    "block_1024_cap.fit1024", "05_block_1024_cap", PREDICT, "Is 1024 the SM's size?",
    "**Exercise.** The deck says the block cap is 1024 because that is what an SM holds. How many "
    "1024-thread blocks of `scheduled_block` does one SM of this GPU hold at once?",
    _placeholder("block_1024_cap.fit1024", "blocks per SM"),
    _solution("block_1024_cap.fit1024", "g['max_threads_per_sm'] // 1024"),
    "## What this means for the code you write", _given_1024, _check_1024,
    ("1024 is the SM's size", "not rounded down")))
