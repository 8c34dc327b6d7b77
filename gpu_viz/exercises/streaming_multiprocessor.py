"""Notebook 02 (the streaming multiprocessor): its exercises."""
from __future__ import annotations

import math

from . import core as _core
from .core import PREDICT, AnswerKindError, Exercise, Verdict, no_answer, register, source_label
from .numbers import _placeholder, _solution, as_number, grade_number

# == 02: the streaming multiprocessor =================================================================

def _given_regs():
    from .. import occupancy

    i = _core.info()
    return {"gpu": i.name, "regs_per_sm": i.regs_per_sm, "max_threads_per_sm": i.max_threads_per_sm,
            "max_threads_per_block": i.max_threads_per_block, "fp32_cores_per_sm": i.fp32_cores_per_sm,
            "warp_size": i.warp_size, "reg_alloc_unit_per_warp": occupancy.REG_ALLOC_UNIT}


def _check_regs(answer):
    from .. import occupancy

    eid = "streaming_multiprocessor.regs"
    g = _given_regs()
    i = _core.info()
    want = occupancy.full_occupancy_registers(i)
    even = g["regs_per_sm"] / g["max_threads_per_sm"]
    d = [f"{g['gpu']}: {g['regs_per_sm']:,} registers, {g['max_threads_per_sm']:,} resident threads per SM, "
         f"registers allocated per warp in units of {g['reg_alloc_unit_per_warp']}; {source_label()}"]
    run = [f"the occupancy calculator agrees: at {want} registers per thread 128-thread blocks fill the SM "
           f"({occupancy.calculate(i, 128, want).occupancy:.0%}); at {want + 1} they reach "
           f"{occupancy.calculate(i, 128, want + 1).occupancy:.0%}"]
    mistakes = {
        "you divided by the threads of one block (1024); the register file is shared by every "
        "thread resident on the SM.": g["regs_per_sm"] // g["max_threads_per_block"],
        "you divided by the FP32 cores: the SM keeps far more threads resident than it has cores.":
            (g["regs_per_sm"] // g["fp32_cores_per_sm"]) if g["fp32_cores_per_sm"] else None,
        "that is per warp (32 threads): divide by threads, not warps.": g["regs_per_sm"] // (g["max_threads_per_sm"] // 32),
    }
    if even != want:   # an even split that the allocation unit rounds down (an L4: 42.67 -> 40)
        unit = f"registers are allocated per warp in units of {g['reg_alloc_unit_per_warp']}, a multiple of " \
               f"{g['reg_alloc_unit_per_warp'] // g['warp_size']} per thread"
        mistakes[f"that splits the register file evenly, but {unit}: round down to one."] = even
        mistakes[f"that is the even split rounded up; {unit}: round down to one."] = math.ceil(even)
        mistakes[f"that is the even split rounded down to a whole register; {unit}."] = math.floor(even)
    return grade_number(eid, answer, want, 1e-9, "registers per thread at full occupancy", mistakes, d, reveal=run)


def _check_warps(answer):
    eid = "streaming_multiprocessor.warps"
    if answer is None:
        return no_answer(eid, "a pair (warps, idle lanes)")
    try:
        warps, idle = answer
    except (TypeError, ValueError):
        raise AnswerKindError(f"{eid}: the answer is a pair (warps, idle_lanes), got {answer!r}") from None
    w = as_number(eid, warps, "warps")
    i = as_number(eid, idle, "idle lanes")
    if w == 4 and i == 28:
        return Verdict(eid, True, "4 warps; the last holds 4 threads and 28 idle lanes: a block that is not "
                       "a multiple of 32 still occupies whole warps.")
    if w in (3, 3.125):
        return Verdict(eid, False, f"{w:g} warps: a warp is 32 lanes and the hardware rounds a block up to "
                       "whole warps: the threads left over after the full warps need a warp of their own.")
    if w == 4 and i == 4:
        return Verdict(eid, False, "4 is the number of threads in the last warp; the question asks for its idle lanes.")
    if w == 4:
        return Verdict(eid, False, f"4 warps is right; {i:g} idle lanes is not: count the lanes of those warps "
                       "that hold no thread.")
    return Verdict(eid, False, f"{w:g} warps: a warp is 32 lanes; how many warps hold all the block's threads?")


register(Exercise(
    "streaming_multiprocessor.regs", "02_streaming_multiprocessor", PREDICT, "The per-thread register budget",
    "**Exercise.** At full occupancy every resident thread shares the SM's register file. From the facts "
    "printed, how many 32-bit registers may each thread use before the SM holds fewer threads? (The "
    "hardware hands registers out per warp, `g['reg_alloc_unit_per_warp']` at a time.)",
    _placeholder("streaming_multiprocessor.regs", "registers per thread"),
    _solution("streaming_multiprocessor.regs", "per_warp // g['reg_alloc_unit_per_warp'] * g['reg_alloc_unit_per_warp'] // g['warp_size']",
              "per_warp = g['regs_per_sm'] // (g['max_threads_per_sm'] // g['warp_size'])   # registers one warp may hold\n"),
    "### The same SM across five GPUs", _given_regs, _check_regs,
    ("divided by threads per block", "divided by cores", "per warp")))

register(Exercise(
    "streaming_multiprocessor.warps", "02_streaming_multiprocessor", PREDICT, "A block of 100 threads",
    "**Exercise.** A block of 100 threads: how many warps does the SM run for it, and how many lanes of "
    "those warps do no work? Answer a pair `(warps, idle_lanes)`.",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: (warps, idle_lanes)\nex.check('streaming_multiprocessor.warps', answer)",
    "from gpu_viz import exercises as ex\nanswer = (-(-100 // 32), -(-100 // 32) * 32 - 100)\n"
    "ex.check('streaming_multiprocessor.warps', answer).require()",
    "## What you write vs what runs it", lambda: {"threads": 100, "warp_size": 32}, _check_warps,
    ("floor instead of ceil", "threads instead of idle lanes")))
