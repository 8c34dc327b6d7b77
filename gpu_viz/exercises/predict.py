"""Predict-then-run and change-and-measure exercises (notebooks 01-10).

Each exercise gives its facts (:func:`gpu_viz.exercises.given`), grades the learner's number and
names the likely mistake, then shows the run it was checked against: on a GPU the silicon (a
trace, the occupancy API, a timed kernel), in CPU mode the CPU model and the committed record,
labelled with their GPU and date.
"""
from __future__ import annotations

import math
import re
from typing import Dict

import numpy as np

from .. import backend
from ..claims import inflight
from ..measure import facts
from . import core as _core
from .core import (MEASURE, PREDICT, AnswerKindError, Verdict, info, live,
                   no_answer, register, source_label, Exercise)

GiB = 1 << 30
MiB = 1 << 20


# == what every checker here shares ==================================================================
# A verdict on a wrong (or missing) answer never carries the answer: it names the likely mistake
# and the facts, and the run that produced the right number is shown only once the learner has it
# (``reveal`` below).  tests/test_exercise_feedback.py checks it for every exercise here.

def _plain(answer):
    """``answer`` with NumPy's numbers made Python's: a NumPy scalar or a one-element array is its
    value, a 1-D array a tuple (a pair answer); an array of any other shape is not an answer."""
    if isinstance(answer, np.generic):
        return answer.item()
    if isinstance(answer, np.ndarray):
        if answer.size == 1:
            return answer.reshape(()).item()
        if answer.ndim == 1:
            return tuple(v.item() for v in answer)
        raise AnswerKindError(f"the answer must be a number or a pair, got an array of shape {answer.shape}")
    if isinstance(answer, list):
        return tuple(_plain(a) for a in answer)
    return answer


def as_number(exercise_id: str, answer, what: str):
    """:func:`gpu_viz.exercises.core.as_number`, NumPy answers included (``np.array([x])`` is x)."""
    try:
        return _core.as_number(exercise_id, _plain(answer), what)
    except AnswerKindError as exc:
        msg = str(exc)
        raise AnswerKindError(msg if msg.startswith(exercise_id) else f"{exercise_id}: {msg}") from None


def grade_number(exercise_id: str, answer, want: float, rtol: float, what: str, mistakes: Dict[str, float],
                 details: list, reveal=()) -> Verdict:
    """:func:`gpu_viz.exercises.core.grade_number`, with NumPy answers, with ``reveal`` (lines that
    show the right number: the run it was checked against) added only to a right answer, and with
    no "1x too large" for an answer within 1 % of the right one."""
    v = _core.grade_number(exercise_id, as_number(exercise_id, answer, what), want, rtol, what, mistakes,
                           list(details))
    if v.ok:
        v.details.extend(reveal)
    else:
        small_count = float(want).is_integer() and abs(want) < _SMALL_COUNT
        v.message = _RATIO.sub(lambda m: _ratio_words(m, small_count), v.message)
    return v


#: core.grade_number's "is 1.03x too large".  A ratio that close gives the answer away (33 / 1.03)
#: and "1x too large" reads as nonsense: within 10 % it is said in words.  For a small count (a
#: number of warps, blocks, registers) any ratio is the answer by one division ("4 is 2x too
#: large"): only the direction is said.
_RATIO = re.compile(r" is ([0-9.]+(?:e[+-]?\d+)?)x too (large|small) ")
_SMALL_COUNT = 1000


def _ratio_words(m, small_count: bool) -> str:
    if small_count:
        return f" is too {m.group(2)} "
    return f" is a little too {m.group(2)} (under 10 % off) " if float(m.group(1)) < 1.1 else m.group(0)


def _right_only(v: Verdict, lines) -> Verdict:
    """``v`` with ``lines`` (the run, which shows the right number) appended only when it is right."""
    if v.ok:
        v.details.extend(lines)
    return v


def _placeholder(eid: str, what: str, extra: str = "") -> str:
    return (f"from gpu_viz import exercises as ex\n"
            f"g = ex.given({eid!r})   # the facts, from this GPU (or, in CPU mode, the record)\n"
            f"{extra}answer = None   # FILL ME IN: {what}\n"
            f"ex.check({eid!r}, answer)")


def _solution(eid: str, expr: str, pre: str = "") -> str:
    return (f"from gpu_viz import exercises as ex\n"
            f"g = ex.given({eid!r})\n{pre}"
            f"answer = {expr}\n"
            f"ex.check({eid!r}, answer).require()")


# the hardware facts (measured once per process on a GPU, else the committed record's) and notebook
# 08's Little's-law facts live where their data does: gpu_viz.measure.facts, gpu_viz.claims.inflight
_copy_GBps = facts.copy_GBps
_dram_latency = facts.dram_latency


# == 01: the whole chip ==============================================================================

N01 = 1 << 26


def _given_01_bytes():
    return {"n": N01, "dtype": "float32", "op": "y = x + 1 (y a new array)"}


def _check_01_bytes(answer):
    n = N01
    want = 2 * 4 * n
    return grade_number("01.bytes", answer, want, 1e-3, "bytes: read x once, write y once, 4 bytes each", {
        "you counted one direction only: x is read AND y is written, both cross the memory bus.": 4 * n,
        "that is the element count: each float32 is 4 bytes.": n,
        "that counts the elements of x and y, not their bytes (x 4 bytes each).": 2 * n,
        "those are 2-byte elements: float32 is 4 bytes.": 2 * 2 * n,
        "that is MiB: the question asks for bytes.": want / MiB,
        "that is GiB: the question asks for bytes.": want / GiB,
    }, [])


def _given_01_time():
    return {"bytes": 2 * 4 * N01, **_copy_GBps()}


def _check_01_time(answer):
    g = _given_01_time()
    want = g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6
    details = [f"copy bandwidth {g['copy_GBps']:,.0f} GB/s: {g['copy_source']}"]
    v = grade_number("01.time", answer, want, 0.02, "microseconds: bytes / (GB/s x 1e9) x 1e6", {
        "you divided by GiB/s (2^30): GB/s means 1e9 bytes per second.": g["bytes"] / (g["copy_GBps"] * GiB) * 1e6,
        "that is seconds: multiply by 1e6 for microseconds.": want / 1e6,
        "that is milliseconds: multiply by 1e3 for microseconds.": want / 1e3,
        "that moves only half the bytes: x is read and y written.": want / 2,
    }, details)
    if v.ok and live():
        from ..measure import timing

        cp = backend.require_cupy("01.time's run")

        x = cp.random.standard_normal(N01, dtype=cp.float32)
        y = cp.empty_like(x)
        t = timing.time_calls(lambda i: cp.add(x, 1.0, out=y), reps=20, warmup=3, framework="cupy")
        if not bool(cp.all(y == x + 1)):
            raise AssertionError("01.time: y = x + 1 came back wrong on this GPU")
        v.details.append(f"measured just now: y = x + 1 took {t.median_us:,.0f} µs median "
                         f"(p10 {t.p10_us:,.0f}, p90 {t.p90_us:,.0f}), {100 * want / t.median_us:.0f}% of the copy roofline")
    return v


register(Exercise(
    "01.bytes", "01_whole_chip", PREDICT, "Bytes an op must move",
    "**Exercise: bytes an op must move.** `y = x + 1` over `n = 2**26` float32 elements, `y` a new "
    "array. What is the fewest number of bytes that must cross the memory bus? (The fewest: each input "
    "read once, each output written once.)",
    _placeholder("01.bytes", "bytes"), _solution("01.bytes", "2 * 4 * g['n']   # read x, write y, 4 bytes each"),
    "## The host link", _given_01_bytes, _check_01_bytes,
    ("one direction only", "element count", "fp16 bytes", "MiB not bytes")))

register(Exercise(
    "01.time", "01_whole_chip", PREDICT, "The copy roofline",
    "**Exercise: predict, then run.** At this GPU's device-to-device copy bandwidth (`g['copy_GBps']`, "
    "GB/s = 1e9 bytes/s), how many microseconds must `y = x + 1` over those bytes take at least? On a GPU "
    "the checker then times it.",
    _placeholder("01.time", "microseconds"),
    _solution("01.time", "g['bytes'] / (g['copy_GBps'] * 1e9) * 1e6"),
    "## The host link", _given_01_time, _check_01_time, ("GiB for GB", "seconds or ms", "half the bytes")))


# == 02: the streaming multiprocessor =================================================================

def _given_02_regs():
    from .. import occupancy

    i = info()
    return {"gpu": i.name, "regs_per_sm": i.regs_per_sm, "max_threads_per_sm": i.max_threads_per_sm,
            "max_threads_per_block": i.max_threads_per_block, "fp32_cores_per_sm": i.fp32_cores_per_sm,
            "warp_size": i.warp_size, "reg_alloc_unit_per_warp": occupancy.REG_ALLOC_UNIT}


def _check_02_regs(answer):
    from .. import occupancy

    eid = "02.regs"
    g = _given_02_regs()
    i = info()
    want = occupancy.full_occupancy_registers(i)
    even = g["regs_per_sm"] / g["max_threads_per_sm"]
    d = [f"{g['gpu']}: {g['regs_per_sm']:,} registers, {g['max_threads_per_sm']:,} resident threads per SM, "
         f"registers allocated per warp in units of {g['reg_alloc_unit_per_warp']} ({source_label()})"]
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


def _check_02_warps(answer):
    eid = "02.warps"
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
                       "whole warps (100 = 3 x 32 + 4: the 4 leftover threads need a fourth warp).")
    if w == 4 and i == 4:
        return Verdict(eid, False, "4 is the number of threads in the last warp; the question asks for its idle lanes.")
    if w == 4:
        return Verdict(eid, False, f"4 warps is right; idle lanes: 4 x 32 lanes minus 100 threads, not {i:g}.")
    return Verdict(eid, False, f"{w:g} warps: warps = ceil(threads / 32).")


register(Exercise(
    "02.regs", "02_streaming_multiprocessor", PREDICT, "The per-thread register budget",
    "**Exercise.** At full occupancy every resident thread shares the SM's register file. From the facts "
    "printed, how many 32-bit registers may each thread use before the SM holds fewer threads? (The "
    "hardware hands registers out per warp, `g['reg_alloc_unit_per_warp']` at a time.)",
    _placeholder("02.regs", "registers per thread"),
    _solution("02.regs", "per_warp // g['reg_alloc_unit_per_warp'] * g['reg_alloc_unit_per_warp'] // g['warp_size']",
              "per_warp = g['regs_per_sm'] // (g['max_threads_per_sm'] // g['warp_size'])   # registers one warp may hold\n"),
    "### The same SM across five GPUs", _given_02_regs, _check_02_regs,
    ("divided by threads per block", "divided by cores", "per warp")))

register(Exercise(
    "02.warps", "02_streaming_multiprocessor", PREDICT, "A block of 100 threads",
    "**Exercise.** A block of 100 threads: how many warps does the SM run for it, and how many lanes of "
    "those warps do no work? Answer a pair `(warps, idle_lanes)`.",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: (warps, idle_lanes)\nex.check('02.warps', answer)",
    "from gpu_viz import exercises as ex\nanswer = (-(-100 // 32), -(-100 // 32) * 32 - 100)\n"
    "ex.check('02.warps', answer).require()",
    "## What you write vs what runs it", lambda: {"threads": 100, "warp_size": 32}, _check_02_warps,
    ("floor instead of ceil", "threads instead of idle lanes")))


# == 03: warps and SIMT ===============================================================================

def _run_vector_add(n: int, block: int):
    from .. import lessons

    tr = lessons.VECTOR_ADD.trace(n=n, block=block)
    warp_id = tr["block"].astype(np.int64) * (-(-block // 32)) + tr["warp"]
    last = warp_id.max()
    useful = int(((warp_id == last) & (tr["index"] < n)).sum())
    return int(last + 1), useful, tr.provenance


def _check_03_warps(answer, n: int = 100, block: int = 96):
    eid = "03.warps"
    if answer is None:
        return no_answer(eid, "a pair (warps, useful lanes in the last warp)")
    try:
        warps, useful = (as_number(eid, a, "count") for a in _plain(answer))
    except (TypeError, ValueError):
        raise AnswerKindError(f"{eid}: the answer is a pair (warps, useful_lanes), got {answer!r}") from None
    got_w, got_u, prov = _run_vector_add(n, block)
    d = []   # the run's counts are the answer: shown only once the learner has it
    if (warps, useful) == (got_w, got_u):
        return Verdict(eid, True, f"({got_w}, {got_u}): the grid is ceil(n / block) blocks of whole warps; warps "
                       "past n still issue, their guard is false.",
                       [f"the run: vector_add(n={n}, block={block}) launched {got_w} warps, the last with {got_u} "
                        f"useful lanes ({prov})"])
    if warps == -(-n // 32):
        return Verdict(eid, False, f"{warps:g} warps counts warps of elements; warps come from blocks: "
                       f"{-(-n // block)} blocks x {-(-block // 32)} warps each.", d)
    if warps == got_w:
        return Verdict(eid, False, f"{got_w} warps is right; the last warp covers threads {(got_w - 1) * 32}.."
                       f"{got_w * 32 - 1} and n = {n}: how many of those indices are < n?", d)
    return Verdict(eid, False, f"{warps:g} warps: blocks = ceil(n / block), warps = blocks x ceil(block / 32).", d)


register(Exercise(
    "03.warps", "03_warps_simt", PREDICT, "Warps of a launch",
    "**Exercise: predict, then run.** `vector_add` with `n = 100` elements and `block = 96` threads "
    "(grid = ceil(n / block)). How many warps run, and how many lanes of the *last* warp do useful "
    "work? Answer `(warps, useful_lanes)`; the checker runs the kernel (the CPU model in CPU mode).",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: (warps, useful_lanes)\nex.check('03.warps', answer)",
    "from gpu_viz import exercises as ex\nblocks = -(-100 // 96)\nwarps = blocks * -(-96 // 32)\n"
    "answer = (warps, max(0, 100 - (warps - 1) * 32))\nex.check('03.warps', answer).require()",
    "## When lanes disagree", lambda: {"n": 100, "block": 96}, _check_03_warps,
    ("warps of elements, not of blocks", "last warp's lanes")))


# == 04: latency hiding ===============================================================================

COMPUTE_04 = 16
BUSY_04 = 0.9
#: The most warps per scheduler 04.hide simulates (no SM has more than 16; the slider stops at 64).
_MAX_WARPS_04 = 256


def _given_04_hide():
    lat = _dram_latency()
    i = info()
    return {"latency_cycles": int(lat["latency_cycles"]), "latency_source": lat["latency_source"],
            "compute_per_load": COMPUTE_04, "target_busy": BUSY_04,
            "warps_per_scheduler_max": i.max_threads_per_sm // 32 // 4, "gpu": i.name}


def _fewest_warps(latency: int, compute: int, target: float) -> int:
    from ..model import latency as lm

    for w in range(1, 257):
        if lm.utilization(w, latency, compute) >= target:
            return w
    raise ValueError(f"no warp count up to 256 reaches {target:.0%} busy at {latency} cycles")


def _check_04_hide(answer):
    eid = "04.hide"
    g = _given_04_hide()
    want = _fewest_warps(g["latency_cycles"], COMPUTE_04, BUSY_04)
    from ..model import latency as lm

    d = [f"the model (one scheduler, {COMPUTE_04} instructions per load, {g['latency_cycles']} cycles: "
         f"{g['latency_source']}) reaches {lm.utilization(want, g['latency_cycles'], COMPUTE_04):.0%} busy at {want} warps",
         f"{g['gpu']}: at most {g['warps_per_scheduler_max']} warps per scheduler (a quarter of the SM's)"]
    right = [d.pop(0)]   # "reaches N% busy at <the answer> warps": only once the learner has it
    v = as_number(eid, answer, "warps per scheduler")
    if v is None:
        return no_answer(eid, "the fewest warps per scheduler (try the slider)")
    if v < 1 or v != int(v):
        return Verdict(eid, False, f"{v:g}: a scheduler holds a whole number of warps, at least 1.", d)
    if v > _MAX_WARPS_04:
        return Verdict(eid, False, f"{v:g} warps: far more than any SM holds; the question asks for the fewest.", d)
    if v == want:
        fits = "fits" if want <= g["warps_per_scheduler_max"] else "does NOT fit: more work per load is needed"
        return Verdict(eid, True, f"{want} warps per scheduler; this GPU {fits}.", right + d)
    if v == want * 4 or v == (want - 1) * 4:
        return Verdict(eid, False, f"{v:g} is per SM: the model is ONE of the SM's four schedulers.", d)
    if v == math.ceil(g["latency_cycles"] / COMPUTE_04):
        return Verdict(eid, False, f"{v:g} = latency / compute: each warp also spends a cycle issuing its "
                       "load, so each covers compute + 1 cycles.", d)
    if v > want:
        return Verdict(eid, False, f"{v:g} warps keep it busy, but fewer do: the question asks for the fewest.", d)
    busy = lm.utilization(int(v), g["latency_cycles"], COMPUTE_04)
    # one decimal: 89.6 % must not print as "90 %" beside a 90 % target
    return Verdict(eid, False, f"with {v:g} warps the model is {100 * busy:.1f} % busy, short of the "
                   f"{BUSY_04:.0%} target.", d)


def _slider_04():
    # show_live: the slider with a static twin, so a reopened notebook says what it needs instead
    # of "model not found"
    return ("import ipywidgets as widgets\nfrom gpu_viz.model import latency as lm\n"
            "from gpu_viz.widgets import show_live\n"
            "warps = widgets.IntSlider(value=1, min=1, max=64, description='warps')\n"
            "busy = widgets.HTML()\n"
            "def show_busy(_=None):\n"
            "    busy.value = f\"{warps.value} warps: {lm.utilization(warps.value, g['latency_cycles'], "
            "g['compute_per_load']):.1%} busy\"\n"
            "warps.observe(show_busy, names='value'); show_busy()\n"
            "show_live(widgets.VBox([warps, busy]), '<p>A slider of warps per scheduler: run this cell to use it.</p>')\n")


register(Exercise(
    "04.hide", "04_latency_hiding", MEASURE, "Warps to hide a load",
    "**Exercise: change and measure (the model).** One warp scheduler; each warp issues "
    f"`{COMPUTE_04}` instructions per load and every load takes `g['latency_cycles']` cycles. Move the "
    f"slider: what is the fewest number of warps that keeps the scheduler at least {BUSY_04:.0%} busy? "
    "Then compare with `g['warps_per_scheduler_max']`.",
    _placeholder("04.hide", "warps per scheduler", _slider_04()),
    _solution("04.hide", "next(w for w in range(1, 257) if lm.utilization(w, g['latency_cycles'], "
                         "g['compute_per_load']) >= g['target_busy'])",
              "from gpu_viz.model import latency as lm\n"),
    "## Measured: bandwidth vs resident warps per SM", _given_04_hide, _check_04_hide,
    ("per SM instead of per scheduler", "latency / compute without the issue cycle", "not the fewest")))


def _given_04_little():
    i = info()
    return {**_copy_GBps(), **_dram_latency(), "sm_count": i.sm_count, "gpu": i.name}


def _check_04_little(answer):
    g = _given_04_little()
    want = g["copy_GBps"] * g["latency_ns"] / g["sm_count"]
    cyc_ns = g["latency_cycles"] / g["latency_ns"]
    return grade_number("04.little", answer, want, 0.02, "bytes in flight per SM = GB/s x ns / SMs", {
        "that is the whole chip: divide by the SM count for one SM.": want * g["sm_count"],
        "you used the latency in cycles: 1 GB/s x 1 ns = 1 byte, so use nanoseconds.": want * cyc_ns,
        "that is KiB: the question asks for bytes.": want / 1024,
        "that is 1000x too small: GB/s x ns is bytes (1e9 B/s x 1e-9 s).": want / 1e3,
    }, [f"copy {g['copy_GBps']:,.0f} GB/s ({g['copy_source']}); DRAM latency {g['latency_ns']:,.0f} ns "
        f"({g['latency_source']}); {g['sm_count']} SMs"])


register(Exercise(
    "04.little", "04_latency_hiding", PREDICT, "Little's law per SM",
    "**Exercise: Little's law.** To sustain the copy bandwidth `g['copy_GBps']` GB/s when a DRAM load "
    "takes `g['latency_ns']` ns, how many bytes must each SM have in flight?",
    _placeholder("04.little", "bytes per SM"),
    _solution("04.little", "g['copy_GBps'] * g['latency_ns'] / g['sm_count']"),
    "## Your turn, in the notebook", _given_04_little, _check_04_little,
    ("whole chip", "cycles not ns", "KiB", "1e3 off")))


# == 05: the 1024 cap =================================================================================

def _resident(threads: int):
    """(blocks of ``threads`` of scheduled_block per SM, where it came from)."""
    if live():
        from ..record import scheduling as rec

        return rec.resident_blocks(threads), "CUDA occupancy API, " + backend.live_label()
    from ..model import scheduling as m

    i = info()
    return m.resident_blocks_per_sm(i, threads), f"occupancy calculator, {i.name} ({source_label()})"


#: 05.blocks' block size: one warp.  Every GPU the course names caps resident blocks per SM below
#: its threads per SM / 32 (T4 16 < 32, L4 24 < 48, A100/H100/H200 32 < 64), so the block cap, not
#: the thread limit, decides: an answer from the thread limit alone is wrong everywhere.
THREADS_05 = 32


def _given_05_blocks():
    i = info()
    return {"gpu": i.name, "threads_per_block": THREADS_05, "max_threads_per_sm": i.max_threads_per_sm,
            "max_blocks_per_sm": i.max_blocks_per_sm, "regs_per_thread": 32, "regs_per_sm": i.regs_per_sm}


def _check_05_blocks(answer):
    g = _given_05_blocks()
    b = g["threads_per_block"]
    want, src = _resident(b)
    t = g["max_threads_per_sm"]
    return grade_number("05.blocks", answer, want, 1e-9, f"blocks of {b} threads resident per SM", {
        "that is the thread limit alone: an SM also caps how many blocks it holds (max_blocks_per_sm), "
        "and the smallest limit wins.": t // b,
        "that is the register limit alone: the thread and block limits count too, and the smallest wins.":
            g["regs_per_sm"] // (g["regs_per_thread"] * b),
        "that counts warps per SM: the question asks for blocks.": t // 32 if b != 32 else None,
    }, [], reveal=[f"the run: {want} per SM ({src}); {want} x {b} threads = {want * b:,} of the SM's {t:,} "
                   f"({want * b / t:.0%} occupancy): one-warp blocks leave the SM half empty or worse"])


def _given_05_1024():
    i = info()
    return {"gpu": i.name, "max_threads_per_sm": i.max_threads_per_sm, "max_threads_per_block": i.max_threads_per_block}


def _check_05_1024(answer):
    g = _given_05_1024()
    want, src = _resident(1024)
    return grade_number("05.fit1024", answer, want, 1e-9, "1024-thread blocks resident per SM", {
        "1024 is the block cap, not the SM's size: an SM of this GPU holds "
        f"{g['max_threads_per_sm']} threads.": 1,
        "blocks are whole: round down.": g["max_threads_per_sm"] / 1024,
    } if want != 1 else {"blocks are whole: round down.": g["max_threads_per_sm"] / 1024},
        [], reveal=[f"the run: {want} per SM ({src}); {g['gpu']} holds {g['max_threads_per_sm']:,} threads per SM"
                    + (": here the cap and the SM's size coincide, on most GPUs they do not" if want == 1 else "")])


register(Exercise(
    "05.blocks", "05_block_1024_cap", PREDICT, "Blocks per SM",
    "**Exercise: predict, then run.** `scheduled_block` (notebook 07's kernel: 32 registers per thread, "
    f"no shared memory) at {THREADS_05} threads per block (one warp): how many blocks does one SM hold at "
    "once? Every limit in the facts counts. The checker asks the CUDA occupancy API on a GPU, the "
    "occupancy calculator in CPU mode.",
    _placeholder("05.blocks", "blocks per SM"),
    _solution("05.blocks", "min(g['max_threads_per_sm'] // g['threads_per_block'], g['max_blocks_per_sm'], "
                           "g['regs_per_sm'] // (g['regs_per_thread'] * g['threads_per_block']))"),
    "## What this means for the code you write", _given_05_blocks, _check_05_blocks,
    ("thread limit alone", "register limit alone", "warps, not blocks")))

register(Exercise(
    "05.fit1024", "05_block_1024_cap", PREDICT, "Is 1024 the SM's size?",
    "**Exercise.** The deck says the block cap is 1024 because that is what an SM holds. How many "
    "1024-thread blocks of `scheduled_block` does one SM of this GPU hold at once?",
    _placeholder("05.fit1024", "blocks per SM"),
    _solution("05.fit1024", "g['max_threads_per_sm'] // 1024"),
    "## What this means for the code you write", _given_05_1024, _check_05_1024,
    ("1024 is the SM's size", "not rounded down")))


# == 06: grid-stride loops ============================================================================

def _check_06_passes(answer, n: int = 2500, block: int = 1024):
    eid = "06.passes"
    if answer is None:
        return no_answer(eid, "a pair (elements thread 0 handles, threads that handle three)")
    try:
        first, three = (as_number(eid, a, "count") for a in _plain(answer))
    except (TypeError, ValueError):
        raise AnswerKindError(f"{eid}: the answer is a pair (elements_of_thread_0, threads_with_3), got {answer!r}") from None
    from .. import lessons

    tr = lessons.GRID_STRIDE.trace(n=n, grid=1, block=block)
    per_thread = np.bincount(tr["thread"].astype(np.int64), minlength=block)
    got = (int(per_thread[0]), int((per_thread == 3).sum()))
    d = []   # the run's counts are the answer: shown only once the learner has it
    if (first, three) == got:
        return Verdict(eid, True, f"{got}: thread t handles ceil((n - t) / stride) elements.",
                       [f"the run: thread 0 handled {got[0]} elements, {got[1]} threads handled 3 ({tr.provenance})"])
    if first == n // block:
        return Verdict(eid, False, f"{first:g} = floor(n / stride): the last partial pass counts too "
                       f"(thread 0 handles 0, 1024 and 2048).", d)
    if first == got[0] and three == n - (got[0] - 1) * block - 1:
        return Verdict(eid, False, "off by one: indices 2048..2499 are 452 elements (2499 - 2048 + 1).", d)
    if first == got[0]:
        return Verdict(eid, False, f"thread 0 is right; threads with a third element are those with "
                       f"t + 2 x {block} < {n}.", d)
    return Verdict(eid, False, f"thread 0 handles i = 0, {block}, {2 * block}, ... while i < {n}.", d)


register(Exercise(
    "06.passes", "06_grid_stride_loops", PREDICT, "Who handles what",
    "**Exercise: predict, then run.** `n = 2500`, one block of 1024 threads, the grid-stride loop. How "
    "many elements does thread 0 handle, and how many threads handle three? Answer "
    "`(elements_of_thread_0, threads_with_3)`.",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: (elements_of_thread_0, threads_with_3)\n"
    "ex.check('06.passes', answer)",
    "from gpu_viz import exercises as ex\nn, stride = 2500, 1024\ncounts = [len(range(t, n, stride)) for t in range(stride)]\n"
    "answer = (counts[0], counts.count(3))\nex.check('06.passes', answer).require()",
    "### Checked over many shapes", lambda: {"n": 2500, "grid": 1, "block": 1024}, _check_06_passes,
    ("floor(n / stride)", "off by one")))


# == 07: scheduling ==================================================================================

THREADS_07 = 1024
SPIN_07 = 20000
#: 07.doubling grades counts up to this many times SMs x resident + 1 (beyond, no launch is needed
#: to say "far fewer suffice", and a model of 10^6 blocks takes seconds).
_MAX_BLOCKS_07 = 8


def _makespan_us(blocks: int, threads: int) -> tuple:
    from .. import lessons
    from ..frames import scheduling as fr
    from ..model import scheduling as m

    if live():
        tr = lessons.SCHEDULING.trace(blocks=blocks, threads=threads, spin_cycles=SPIN_07)
    else:
        tr = m.trace(blocks=blocks, threads=threads, spin_cycles=SPIN_07, info=info())
    s = fr.summary(tr)
    return s["makespan_us"], s["block_us_median"], tr.provenance


def _recorded_probe_lines(threads: int, blocks_2048: bool = False) -> list:
    """CPU mode: what the committed probes record saw at ``threads`` (labelled), else []."""
    if live():
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


def _given_07_doubling():
    i = info()
    r, src = _resident(THREADS_07)
    return {"gpu": i.name, "sm_count": i.sm_count, "threads_per_block": THREADS_07,
            "resident_blocks_per_sm": r, "resident_source": src}


def _check_07_doubling(answer):
    eid = "07.doubling"
    g = _given_07_doubling()
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
        return Verdict(eid, False, f"{b} = SMs + 1: but each SM holds {g['resident_blocks_per_sm']} blocks of "
                       f"{THREADS_07} threads at once, so the second wave starts only after SMs x resident.", d)
    if b == want - 1:
        return Verdict(eid, False, f"{b} blocks all fit in the first wave: one more is needed to start a second.", d)
    if m_before >= 1.6 * blk:
        return Verdict(eid, False, f"the makespan had already doubled at {b - 1} blocks: fewer blocks suffice.", d)
    return Verdict(eid, False, f"at {b} blocks every block still starts in the first wave: SMs x resident blocks "
                   "fit at once.", d)


register(Exercise(
    "07.doubling", "07_kernel_scheduling", PREDICT, "When does the makespan double?",
    f"**Exercise: predict, then run.** Blocks of {THREADS_07} threads, each spinning {SPIN_07:,} cycles. "
    "What is the fewest number of blocks for which the kernel takes about twice as long as one block? "
    "The checker launches your count and one fewer.",
    _placeholder("07.doubling", "blocks"),
    _solution("07.doubling", "g['sm_count'] * g['resident_blocks_per_sm'] + 1"),
    "## Takeaways", _given_07_doubling, _check_07_doubling,
    ("SMs + 1 (one block per SM)", "SMs x resident (all still fit)", "already doubled")))


def _given_07_waves():
    i = info()
    r, src = _resident(256)
    return {"gpu": i.name, "sm_count": i.sm_count, "blocks": 2048, "threads_per_block": 256,
            "resident_blocks_per_sm": r, "resident_source": src}


def _silicon_block_times_07(blocks: int, threads: int):
    """(block-times, what ran) of ``blocks`` x ``threads`` on the silicon: run now on a GPU, else the
    committed probes record's row; (None, why) when neither has it."""
    if live():
        m, blk, prov = _makespan_us(blocks, threads)
        return m / blk, prov
    from ..claims import probes
    from ..measure import records

    rec = probes.recorded()
    row = next((r for r in (rec or {}).get("rows", []) if r.get("op") == "doubling_point"
                and r.get("threads") == threads and r.get("blocks") == blocks), None)
    return (row["makespan_blocks"], records.label(rec)) if row else (None, "no recorded run")


def _check_07_waves(answer):
    eid = "07.waves"
    g = _given_07_waves()
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
                          "once, so it bounds the makespan from below; it is not a prediction. Notebook 07's "
                          "'Measured' slide shows how far below.")
    return grade_number(eid, answer, want, 1e-9, "waves = ceil(blocks / (SMs x resident))", {
        "that divides by the SMs only: each SM holds several blocks at once.": math.ceil(g["blocks"] / g["sm_count"]),
        "a partial wave is still a wave: round up.": g["blocks"] // slots,
        "waves are whole: round up.": g["blocks"] / slots,
    }, [], reveal=reveal)


register(Exercise(
    "07.waves", "07_kernel_scheduling", PREDICT, "Waves of a launch",
    "**Exercise: predict, then run.** 2,048 blocks of 256 threads on this GPU. How many waves does the "
    "occupancy arithmetic give (blocks / (SMs x resident blocks per SM), rounded up)? Once you have it, the "
    "checker shows how many block-times the silicon took.",
    _placeholder("07.waves", "waves"),
    _solution("07.waves", "-(-g['blocks'] // (g['sm_count'] * g['resident_blocks_per_sm']))"),
    "## Takeaways", _given_07_waves, _check_07_waves, ("divided by SMs only", "rounded down")))


# == 08: RMSNorm ======================================================================================

M08, D08 = inflight.M, inflight.N


def _check_08_bytes(answer):
    x = M08 * D08 * 2
    want = 2 * x + D08 * 2
    # a byte count is exact: a relative tolerance would hide w's 4 KiB beside x's 64 MiB
    return grade_number("08.bytes", answer, want, 1e-9, "bytes: x read once, y written once, w once (fp16)", {
        f"you left out the weight w: its {D08 * 2:,} bytes ({D08} fp16) are read too, once (every row "
        "then finds it in L1/L2).": 2 * x,
        "you counted w once per row: it is read from memory once, then every row hits it in L1/L2.": 3 * x,
        "you counted x twice: the kernel reads it twice, but the second read hits L1/L2; the fewest "
        "bytes count it once.": 3 * x + D08 * 2,
        "those are float32 sizes: the tensors are fp16 (2 bytes).": 2 * (2 * x + D08 * 2),
        "you left out the output y: it is written to memory too.": x + D08 * 2,
        "that is MiB: the question asks for bytes.": want / MiB,
    }, [])


register(Exercise(
    "08.bytes", "08_rmsnorm_four_phases", PREDICT, "Bytes RMSNorm must move",
    f"**Exercise.** RMSNorm of `x` [{M08}, {D08}] fp16 with weight `w` [{D08}] fp16, output `y` like `x`. "
    "The fewest bytes that must move?",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: bytes\nex.check('08.bytes', answer)",
    f"from gpu_viz import exercises as ex\nM, d = {M08}, {D08}\nanswer = 2 * M * d * 2 + d * 2   # x in, y out, w once\n"
    "ex.check('08.bytes', answer).require()",
    "## 3. Four phases on the silicon", lambda: {"M": M08, "d": D08, "dtype": "float16"}, _check_08_bytes,
    ("x counted twice", "fp32 sizes", "output left out")))


def _check_block_08(block) -> int:
    """``block`` as a block size of the deck kernel: an int in 1..1024 (the block cap).

    Raises:
        ValueError / TypeError: naming ``block`` and what was expected.
    """
    from ..check import check_int

    return check_int("block", block, 1, info().max_threads_per_block)


def _given_08_inflight(block: int = 1024):
    """The facts of 08.inflight at ``block`` threads per block (1..1024): notebook 08's Little's-law
    facts (:func:`gpu_viz.claims.inflight.facts_at`, which the claim quotes too).

    Raises:
        ValueError / TypeError: ``block`` is not a block size (an int in 1..1024).
    """
    return inflight.facts_at(_check_block_08(block))


_deck_measured_GBps = inflight.deck_GBps


def _check_08_inflight(answer, block: int = 1024):
    eid = "08.inflight"
    try:
        block = _check_block_08(block)
    except (TypeError, ValueError) as exc:
        return Verdict(eid, False, f"{exc} (a block holds 1 to 1024 threads).")
    g = _given_08_inflight(block)
    want = g["resident_threads_per_sm"] * g["bytes_per_load"]
    need = g["copy_GBps"] * g["latency_ns"] / g["sm_count"]
    pred = min(g["copy_GBps"], want * g["sm_count"] / g["latency_ns"])
    # the facts' provenance (in CPU mode the committed record's GPU and date): copy and latency, once if one run
    sources = list(dict.fromkeys([g["copy_source"], g["latency_source"]]))
    d = [f"Little's law: this GPU needs {need:,.0f} B in flight per SM for {g['copy_GBps']:,.0f} GB/s; "
         f"{want:,} B predicts at most {pred:,.0f} GB/s ({100 * pred / g['copy_GBps']:.0f}% of copy) "
         f"[{'; '.join(sources)}]"]
    v = grade_number(eid, answer, want, 1e-9, "bytes in flight per SM = resident threads x 2 B", {
        "that counts one block only: the SM holds several blocks at once.": block * g["bytes_per_load"]
            if block * g["bytes_per_load"] != want else None,
        "those are float32 loads: the deck kernel loads fp16 x, 2 bytes per thread.": want * 2,
        "that is per warp: every resident thread has its own load in flight.": want / 32,
    }, [], reveal=d)   # d's Little's-law line quotes the answer: shown only once the learner has it
    if v.ok:
        gbps, where = _deck_measured_GBps(block)
        if gbps is not None:
            v.details.append(f"the deck kernel: {gbps:,.0f} GB/s ({where}) -- block size does not change the "
                             "bytes in flight once the SM is full of threads; wider loads (8 fp16 per thread) do.")
    return v


register(Exercise(
    "08.inflight", "08_rmsnorm_speedup", MEASURE, "The deck kernel against Little's law",
    "**Exercise: change and measure.** A model of phase 1: each thread of the deck kernel has one 2-byte "
    "fp16 load of `x` in flight at a time (the compiler may overlap the loop's two loads, which would "
    "double it). With `g['resident_threads_per_sm']` threads resident per SM at "
    "`block = 1024`, how many bytes does one SM have in flight? Then change the block size: "
    "`ex.given('08.inflight', block=256)` and `ex.check('08.inflight', answer, block=256)`. Does it "
    "change the bytes in flight?",
    _placeholder("08.inflight", "bytes in flight per SM"),
    _solution("08.inflight", "g['resident_threads_per_sm'] * g['bytes_per_load']"),
    "## 2. Where data lives", _given_08_inflight, _check_08_inflight,
    ("one block only", "fp32 loads", "per warp")))


# == 09: the four phases traced =======================================================================

def _given_09_lane0():
    r = np.random.default_rng(9)
    lanes = r.integers(0, 10, 32).astype(np.float32)
    return {"lanes": [int(v) for v in lanes], "step": 3, "offsets": [16, 8, 4, 2, 1]}


def _shuffle_run(lanes, step: int):
    """Lane 0 after shuffle step ``step``: kernels/probes.cu ``shfl_steps`` on a GPU, else the model."""
    if live():
        from ..measure import probes

        out = probes.shfl_steps(np.asarray(lanes, np.float32))
        return float(out[step, 0]), backend.live_label() + " (kernels/probes.cu shfl_steps)"
    from ..model import reduction as m

    steps = m.warp_shuffle_steps(np.asarray(lanes, np.float32)[None, :], np.array([32]))
    return float(steps[0, step, 0]), backend.MODEL_LABEL


def _check_09_lane0(answer):
    eid = "09.lane0"
    g = _given_09_lane0()
    v = np.asarray(g["lanes"], np.float64)
    k = g["step"]
    span = 32 >> k
    want = float(v[::span].sum())
    run_val, prov = _shuffle_run(v, k)
    if run_val != want:
        raise AssertionError(f"09.lane0: the run gave lane 0 = {run_val} after step {k}, the arithmetic {want}")
    d = [f"the run (__shfl_down_sync, offsets 16, 8, 4, ...): lane 0 = {run_val:g} after step {k} ({prov})"]
    return grade_number(eid, answer, want, 1e-9, f"lane 0 after step {k}", reveal=d, details=[], mistakes={
        f"that adds lanes 0..{2 ** k - 1}, the neighbours: shfl_down by 16 first brings lane 16, then 8, "
        f"then 4 -- lane 0 holds lanes 0, {span}, {2 * span}, ...": float(v[:2 ** k].sum()),
        "lane 0 is unchanged only with __shfl_up_sync; shfl_down brings the value of lane + offset.": float(v[0]),
        "that is the warp's total: it takes all five steps.": float(v.sum()),
        f"that is after step {k - 1}: count the steps 16, 8, 4 (step {k} is offset {16 >> (k - 1)}).":
            float(v[::span * 2].sum()),
    })


register(Exercise(
    "09.lane0", "09_four_phase_trace", PREDICT, "Lane 0 after shuffle step k",
    "**Exercise: predict, then run.** Lane i of one warp holds `g['lanes'][i]`. After step `g['step']` "
    "of `v += __shfl_down_sync(0xffffffff, v, offset)` with offsets 16, 8, 4, 2, 1, what does lane 0 hold?",
    _placeholder("09.lane0", "lane 0's value"),
    _solution("09.lane0", "sum(g['lanes'][::32 >> g['step']])   # lanes 0, 4, 8, ... after step 3"),
    "## 3. Model == silicon", _given_09_lane0, _check_09_lane0,
    ("neighbouring lanes", "shfl_up", "the total", "one step early")))


def _given_08_warp_loads() -> Dict:
    return {"d": 3000, "block": 1024}


def _check_08_warp_loads(answer):
    g = _given_08_warp_loads()
    d, block = g["d"], g["block"]
    passes = -(-d // block)
    # a warp issues the load of a pass when any of its lanes still has an element: i = pass*block + t < d
    want = sum(-(-min(block, d - p * block) // 32) for p in range(passes))
    return grade_number("08.warp_loads", answer, want, 1e-9, "warp-load instructions of x in phase 1", {
        "that counts every warp on the last pass: a warp whose 32 lanes are all past d skips the load.":
            passes * (block // 32),
        "that is the element count: one warp-instruction loads 32 neighbouring elements.": d,
        "that is one thread's loads (the passes); the block has block / 32 warps issuing them.": passes,
    }, [f"phase 1 at d = {d}, block = {block}: {passes} passes of the grid-stride loop"])


register(Exercise(
    "08.warp_loads", "08_rmsnorm_four_phases", PREDICT, "Warp-loads in phase 1",
    "**Exercise: predict.** Phase 1 at `d = g['d']` features and `block = g['block']` threads: how many "
    "warp-level load instructions of `x` does the block issue (a warp issues a load when at least one "
    "of its lanes has an element)?",
    _placeholder("08.warp_loads", "warp-load instructions"),
    _solution("08.warp_loads", "-(-g['d'] // 32)   # each warp-load covers 32 neighbouring elements"),
    "### Phase 2", _given_08_warp_loads, _check_08_warp_loads,
    ("every warp on the last pass", "the element count", "one thread's loads")))


def _given_08_amdahl() -> Dict:
    """The norms' share of an eager decoder step and the fused norm's own speed-up, from the decoder
    record (fp16 prefill) when one is committed, else the deck's 7.2x and a share stated as an example."""
    from ..claims import decoder

    rec = decoder.recorded()
    rows = [r for r in (rec or {}).get("rows", []) if r.get("dtype") == "float16" and r.get("phase") == "prefill"
            and "median_us" in r]
    e = next((r for r in rows if r.get("impl") == "eager" and r.get("norm_share") is not None), None)
    f = next((r for r in rows if r.get("impl") == "fused" and r.get("norms_median_us")), None)
    if e and f:
        from ..measure import records

        return {"norm_share": float(e["norm_share"]), "norm_speedup": e["norms_median_us"] / f["norms_median_us"],
                "source": f"the decoder record, fp16 prefill ({records.label(rec)})"}
    return {"norm_share": 0.05, "norm_speedup": 7.2,
            "source": "an example: the deck's 7.2x and a 5% share (no decoder record is committed)"}


def _check_08_amdahl(answer):
    g = _given_08_amdahl()
    s, k = g["norm_share"], g["norm_speedup"]
    want = 1.0 / ((1.0 - s) + s / k)
    return grade_number("08.amdahl", answer, want, 2e-3, "the whole step's speed-up", {
        "that is the norms' own speed-up: the rest of the step does not get faster.": k,
        "that is the Amdahl bound, for norms that take no time at all; yours still take 1/k of theirs.":
            1.0 / (1.0 - s),
        "you sped up the rest of the step instead of the norms: (1 - s) / k + s.": 1.0 / ((1.0 - s) / k + s),
        "that is the time saved as a fraction, s (1 - 1/k), not the speed-up.": s * (1.0 - 1.0 / k),
    }, [f"facts: {g['source']}"])


register(Exercise(
    "08.amdahl", "08_rmsnorm_speedup", PREDICT, "What a faster norm gives the whole step",
    "**Exercise: predict.** The three norms take a fraction `g['norm_share']` of an eager decoder step, "
    "and the fused op makes them `g['norm_speedup']` times faster. How many times faster is the whole "
    "step (Amdahl's law)?",
    _placeholder("08.amdahl", "the step's speed-up"),
    _solution("08.amdahl", "1 / ((1 - g['norm_share']) + g['norm_share'] / g['norm_speedup'])"),
    "## Takeaways", _given_08_amdahl, _check_08_amdahl,
    ("the norms' own speed-up", "the Amdahl bound", "the wrong part sped up", "time saved")))


# == 10: the fused gate ===============================================================================

M10, N10 = 16384, 4096


def _check_10_bytes(answer):
    t = M10 * N10 * 2
    want = 3 * t + N10 * 2
    # a byte count is exact: a relative tolerance would hide w's 8 KiB beside 384 MiB
    return grade_number("10.bytes", answer, want, 1e-9, "bytes: x and gate read, y written, w once (fp16)", {
        f"you left out the weight w: its {N10 * 2:,} bytes ({N10} fp16) are read too, once.": 3 * t,
        "you counted w once per row: it is read from memory once, then every row hits it in L1/L2.": 4 * t,
        "you left out the gate: the fused op reads x AND gate.": 2 * t + N10 * 2,
        "those are float32 sizes: the tensors are fp16.": 2 * want,
        "that counts the eager version's intermediates: fused, nothing but x, gate, w and y touches memory.": 5 * t + N10 * 2,
    }, [])


def _given_10_floor():
    """The bytes and the copy bandwidth to divide them by: measured now on a GPU; in CPU mode the
    bench record's copy -- the run that timed the fused kernel the checker shows -- else the
    hardware record's, each named."""
    facts = {"M": M10, "N": N10, "dtype": "float16", "bytes": 3 * M10 * N10 * 2 + N10 * 2}
    if live():
        return {**facts, **_copy_GBps()}
    from ..measure import records

    rec = records.newest("*-fused.json")
    if rec and rec.get("copy_GBps"):
        return {**facts, "copy_GBps": float(rec["copy_GBps"]),
                "copy_source": f"the bench run's copy, {records.label(rec)}"}
    copy = _copy_GBps()
    return {**facts, **copy, "copy_source": f"the hardware record's copy, {copy['copy_source']}"}


def _fused_gate_us():
    if live():
        import torch

        from .. import ops
        from ..check import assert_close
        from ..measure import timing

        x = torch.randn(M10, N10, device="cuda", dtype=torch.float16)
        gt = torch.randn_like(x)
        w = torch.randn(N10, device="cuda", dtype=torch.float16)
        y = ops.rmsnorm_gate(x, gt, w)
        from ..rmsnorm.reference import rmsnorm as reference
        from ..rmsnorm.tolerances import tolerance

        atol, rtol = tolerance("float16")
        assert_close("rmsnorm_gate y", y, reference(x, w, 1e-6, gate=gt), atol=atol, rtol=rtol)
        t = timing.time_graph(lambda i: ops.rmsnorm_gate(x, gt, w), reps=30)
        return t.median_us, "measured just now (CUDA graph replay; inputs not rotated, may sit partly in L2)"
    from ..measure import records

    rec = records.newest("*-fused.json")
    for r in (rec or {}).get("rows", []):
        if (r.get("op"), r.get("impl"), r.get("M"), r.get("N"), r.get("dtype"), r.get("timing")) == \
                ("rmsnorm_gate", "fused", M10, N10, "float16", "kernel"):
            return float(r["median_us"]), records.label(rec)
    return None, "no recorded fused-gate row at this shape"


def _check_10_floor(answer):
    g = _given_10_floor()
    want = g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6
    peak = info().peak_bandwidth_GBps
    v = grade_number("10.floor", answer, want, 0.02, "microseconds at the copy kernel's bandwidth", {
        "you used the spec sheet's peak bandwidth: the reference here is the measured copy kernel.":
            g["bytes"] / (peak * 1e9) * 1e6 if peak else None,
        "you divided by GiB/s: GB/s is 1e9 bytes per second.": g["bytes"] / (g["copy_GBps"] * GiB) * 1e6,
        "that is milliseconds: multiply by 1e3.": want / 1e3,
    }, [f"copy {g['copy_GBps']:,.0f} GB/s ({g['copy_source']})"])
    if v.ok:
        us, where = _fused_gate_us()
        if us is not None:
            share = 100 * want / us
            v.details.append(f"the fused kernel: {us:,.1f} µs ({where}): it moves its bytes at {share:.0f}% "
                             "of the copy kernel's bandwidth")
            if us < want:
                v.details.append(
                    f"it beat the copy reference by {share - 100:.1f}%: the reference is a 1:1 copy (one byte "
                    "read per byte written), not a hard floor. The gate reads two bytes (x, gate) per byte it "
                    "writes, and a read-heavy stream turns the DRAM bus around between reads and writes less "
                    "often than a copy, so it can move slightly more bytes per second.")
    return v


register(Exercise(
    "10.bytes", "10_fused_rmsnorm_gate", PREDICT, "Bytes the fused gate must move",
    f"**Exercise.** `y = rmsnorm(x) * w * silu(gate)` with `x`, `gate` [{M10}, {N10}] fp16 and `w` [{N10}] "
    "fp16, fused into one kernel. The fewest bytes that must move?",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: bytes\nex.check('10.bytes', answer)",
    f"from gpu_viz import exercises as ex\nM, N = {M10}, {N10}\nanswer = 3 * M * N * 2 + N * 2   # x, gate in; y out; w once\n"
    "ex.check('10.bytes', answer).require()",
    "## 7. Long rows, one call at a time", lambda: {"M": M10, "N": N10, "dtype": "float16"}, _check_10_bytes,
    ("gate left out", "fp32 sizes", "eager intermediates")))

register(Exercise(
    "10.floor", "10_fused_rmsnorm_gate", PREDICT, "The fused kernel at copy speed",
    "**Exercise: predict, then run.** If the fused kernel moved its bytes at the copy kernel's bandwidth "
    "(`copy_GBps` in the exercise's given values, with the record or run it comes from), how many "
    "microseconds would it take at this shape? "
    "That is a reference time, not a hard floor: the checker then shows the kernel's measured time.\n\n"
    "*Beside it: in the H200 record the fused gate ran slightly faster than this reference (the checker "
    "says by how much). A copy reads "
    "one byte per byte it writes; the gate reads two (x and gate) per byte of y, and a read-heavy stream "
    "turns the DRAM bus around between reads and writes less often, so it can move slightly more bytes "
    "per second than the copy that sets the reference.*",
    _placeholder("10.floor", "microseconds"),
    _solution("10.floor", "g['bytes'] / (g['copy_GBps'] * 1e9) * 1e6"),
    "## 7. Long rows, one call at a time", _given_10_floor, _check_10_floor,
    ("spec-sheet peak", "GiB/s", "milliseconds")))
