"""Notebook 09 (kernel scheduling): its exercises."""
from __future__ import annotations

import math

from . import core as _core
from .core import PREDICT, Exercise, Verdict, no_answer, register
from .numbers import _placeholder, _resident, _solution, as_number, grade_number

# == 07: scheduling ==================================================================================

THREADS_07 = 1024
SPIN_07 = 20000
#: kernel_scheduling.doubling grades counts up to this many times SMs x resident + 1 (beyond, no launch is needed
#: to say "far fewer suffice", and a model of 10^6 blocks takes seconds).
_MAX_BLOCKS_07 = 8


def _makespan_us(blocks: int, threads: int) -> tuple:
    from .. import lessons
    from ..frames import scheduling as fr
    from ..model import scheduling as m

    if _core.live():
        tr = lessons.SCHEDULING.trace(blocks=blocks, threads=threads, spin_cycles=SPIN_07)
    else:
        tr = m.trace(blocks=blocks, threads=threads, spin_cycles=SPIN_07, info=_core.info())
    s = fr.summary(tr)
    return s["makespan_us"], s["block_us_median"], tr.provenance


def _recorded_probe_lines(threads: int, blocks_2048: bool = False) -> list:
    """CPU mode: what the committed probes record saw at ``threads`` (labelled), else []."""
    if _core.live():
        return []
    from ..claims import probes
    from ..measure import records

    rec = probes.recorded()
    if rec is None:
        return []
    rows = [r for r in rec.get("rows", []) if r.get("op") == "doubling_point" and r.get("threads") == threads]
    if blocks_2048:
        rows = [r for r in rows if r["blocks"] == 2048]
        return [f"the silicon, {records.label(rec)}: of {r['blocks']} blocks, {r['first_wave_blocks']} started in "
                f"the first wave (the occupancy API allows {r['slots']}); {r['makespan_blocks']:.1f} block times"
                for r in rows]
    rows = [r for r in rows if r["blocks"] != 2048]
    return [f"the silicon, {records.label(rec)}: " + ", ".join(f"{r['blocks']} blocks {r['makespan_us']:.1f} µs"
                                                          for r in sorted(rows, key=lambda r: r["blocks"]))] if rows else []


def _given_doubling():
    i = _core.info()
    r, src = _resident(THREADS_07)
    return {"gpu": i.name, "sm_count": i.sm_count, "threads_per_block": THREADS_07,
            "resident_blocks_per_sm": r, "resident_source": src}


def _check_doubling(answer):
    eid = "kernel_scheduling.doubling"
    g = _given_doubling()
    v = as_number(eid, answer, "blocks")
    if v is None:
        return no_answer(eid, "the fewest blocks whose makespan is about twice one block's")
    b = int(v)
    if b != v or b < 2:
        return Verdict(eid, False, f"{answer!r}: a block count is a whole number >= 2.")
    want = g["sm_count"] * g["resident_blocks_per_sm"] + 1
    if b > _MAX_BLOCKS_07 * want:
        # launching (or modelling) that many blocks takes seconds and says nothing new
        return Verdict(eid, False, f"{b:,} blocks: the makespan is many block-times there, long past its first "
                       "doubling; far fewer blocks suffice.")
    m_at, blk, prov = _makespan_us(b, THREADS_07)
    m_before, _, _ = _makespan_us(b - 1, THREADS_07)
    d = [f"the run: {b - 1} blocks {m_before:.1f} µs, {b} blocks {m_at:.1f} µs (one block {blk:.1f} µs; {prov})"]
    doubled_here = m_at >= 1.6 * blk and m_before < 1.4 * blk
    if doubled_here:
        note = "" if b == want else (f" (the occupancy arithmetic says {want}: this GPU's first wave held "
                                     f"{b - 1} blocks)")
        # the silicon's doubling point (CPU mode: the record) is the answer: shown only now
        return Verdict(eid, True, f"{b}: the makespan doubles when one block more than SMs x resident blocks "
                       f"arrives.{note}", d + _recorded_probe_lines(THREADS_07))
    if b == g["sm_count"] + 1:
        return Verdict(eid, False, f"{b} = SMs + 1: but an SM holds more than one block of {THREADS_07} "
                       "threads at once (resident_blocks_per_sm), so the first wave is larger.", d)
    if m_before >= 1.6 * blk:
        return Verdict(eid, False, f"the makespan had already doubled at {b - 1} blocks: fewer blocks suffice.", d)
    return Verdict(eid, False, f"at {b} blocks every block still starts in the first wave: SMs x resident blocks "
                   "fit at once.", d)


register(Exercise(
    "kernel_scheduling.doubling", "09_kernel_scheduling", PREDICT, "When does the makespan double?",
    f"**Exercise: predict, then run.** Blocks of {THREADS_07} threads, each spinning {SPIN_07:,} cycles. "
    "What is the fewest number of blocks for which the kernel takes about twice as long as one block? "
    "The checker launches your count and one fewer.",
    _placeholder("kernel_scheduling.doubling", "blocks"),
    _solution("kernel_scheduling.doubling", "g['sm_count'] * g['resident_blocks_per_sm'] + 1"),
    "## Takeaways", _given_doubling, _check_doubling,
    ("SMs + 1 (one block per SM)", "SMs x resident (all still fit)", "already doubled")))


def _given_waves():
    i = _core.info()
    r, src = _resident(256)
    return {"gpu": i.name, "sm_count": i.sm_count, "blocks": 2048, "threads_per_block": 256,
            "resident_blocks_per_sm": r, "resident_source": src}


def _silicon_block_times_07(blocks: int, threads: int):
    """(block-times, what ran) of ``blocks`` x ``threads`` on the silicon: run now on a GPU, else the
    committed probes record's row; (None, why) when neither has it."""
    if _core.live():
        m, blk, prov = _makespan_us(blocks, threads)
        return m / blk, prov
    from ..claims import probes
    from ..measure import records

    rec = probes.recorded()
    row = next((r for r in (rec or {}).get("rows", []) if r.get("op") == "doubling_point"
                and r.get("threads") == threads and r.get("blocks") == blocks), None)
    return (row["makespan_blocks"], records.label(rec)) if row else (None, "no recorded run")


def _check_waves(answer):
    eid = "kernel_scheduling.waves"
    g = _given_waves()
    slots = g["sm_count"] * g["resident_blocks_per_sm"]
    want = math.ceil(g["blocks"] / slots)
    took, where = _silicon_block_times_07(g["blocks"], g["threads_per_block"])
    v = as_number(eid, answer, "waves")
    if took is not None and v is not None and v != want and round(took) == v:
        # not "2x too large": the silicon's number is a fact, just not the one asked for
        return Verdict(eid, False, f"{v:g} is how many block-times the silicon took ({where}); the question "
                       "asks what the occupancy arithmetic predicts. The gap between the two is the point of "
                       "the exercise: answer the arithmetic's count, then compare.")
    reveal = []
    if took is not None:
        reveal.append(f"the silicon: {took:.1f} block-times ({where})")
        if took > want + 0.5:
            reveal.append(f"{took:.1f} block-times, not {want}: the arithmetic counts the blocks an SM CAN hold at "
                          "once, so it bounds the makespan from below; it is not a prediction. Notebook 09's "
                          "'Measured' slide shows how far below.")
    return grade_number(eid, answer, want, 1e-9, "waves the occupancy arithmetic gives", {
        "that divides by the SMs only: each SM holds several blocks at once.": math.ceil(g["blocks"] / g["sm_count"]),
        "a partial wave is still a wave: round up.": g["blocks"] // slots,
        "waves are whole: round up.": g["blocks"] / slots,
    }, [], reveal=reveal)


register(Exercise(
    "kernel_scheduling.waves", "09_kernel_scheduling", PREDICT, "Waves of a launch",
    "**Exercise: predict, then run.** 2,048 blocks of 256 threads on this GPU. How many waves does the "
    "occupancy arithmetic give (blocks / (SMs x resident blocks per SM), rounded up)? Once you have it, the "
    "checker shows how many block-times the silicon took.",
    _placeholder("kernel_scheduling.waves", "waves"),
    _solution("kernel_scheduling.waves", "-(-g['blocks'] // (g['sm_count'] * g['resident_blocks_per_sm']))"),
    "## Takeaways", _given_waves, _check_waves, ("divided by SMs only", "rounded down")))
