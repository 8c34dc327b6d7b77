"""The numeric exercises' feedback (gpu_viz/exercises/<topic>.py, gpu_viz/exercises/numbers.py), as a learner meets it alone.

* A verdict on a missing or wrong answer never carries the right answer (Run All runs every
  exercise cell with ``answer = None``; a first wrong try must name the mistake, not the number).
* A checker answers every kind of input with a verdict, quickly: no traceback, no nonsense
  graded right (a block size of 2048, a negative warp count), no minutes of work for a huge count.
* A classic wrong reasoning gives a wrong number on every GPU the course names (spec sheets), so
  the checker can tell it from the right one.

CPU mode throughout (the committed records and the CPU models); the answer is the reference
solution's, run as its cell runs.
"""
import math
import re
import time

import numpy as np
import pytest

import gpu_viz.exercises as ex
from gpu_viz import device, occupancy
from gpu_viz.exercises import core, kernel_scheduling, latency_hiding


@pytest.fixture(autouse=True)
def _cpu_mode(monkeypatch):
    monkeypatch.setattr(core, "live", lambda: False)


NUMERIC = [e.id for e in ex.exercises() if e.kind != core.KERNEL]


def solution_answer(eid):
    """The reference solution's answer: its cell run with ``ex.check`` capturing the answer."""
    seen = {}

    class _Passes:
        def require(self):
            return self

    fake = type("ex", (), {"given": staticmethod(ex.given),
                           "check": staticmethod(lambda _id, answer, **_o: seen.setdefault("a", answer) and _Passes()
                                                 or _Passes())})
    code = ex.get(eid).solution.replace("from gpu_viz import exercises as ex\n", "")
    exec(compile(code, f"<solution {eid}>", "exec"), {"ex": fake})
    return seen["a"]


def _numbers(text):
    """Every number written in ``text`` (1,056 and 4.0 and 2.68e+08 alike), as floats."""
    return [float(t.replace(",", "")) for t in re.findall(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?", text)]


def _wrong_answers(want):
    if isinstance(want, tuple):
        a, b = want
        return [None, (a + 1, b), (a, b + 1), (a + 2, b + 3), (0, 0)]
    return [None, want * 2, want + 1, want * 0.5 + 0.25, 0, -1]


def _reveals(verdict, want, answer, given_text, task=""):
    """The right answer's numbers that the verdict writes and neither the facts, the task nor the
    learner's own answer contain (those may be quoted back; so may the count one below the
    learner's where the task says the checker also launches "one fewer")."""
    # "2.0x too large" is a ratio, not a quoted number (small counts get no ratio: numbers._ratio_words)
    told = _numbers(re.sub(r"[\d.e+]+x too ", "", verdict.text()))
    free = set(_numbers(given_text)) | set(_numbers(task)) | set(_numbers(repr(answer)))
    if "one fewer" in task and isinstance(answer, (int, float)):
        free.add(answer - 1)
    wants = list(want) if isinstance(want, tuple) else [want]
    out = []
    for w in wants:
        w = float(w)
        if any(math.isclose(w, f, rel_tol=1e-3, abs_tol=1e-9) for f in free):
            continue
        if any(math.isclose(w, t, rel_tol=1e-3, abs_tol=1e-9) for t in told):
            out.append(w)
    return out


@pytest.mark.parametrize("eid", NUMERIC)
def test_no_verdict_on_a_missing_or_wrong_answer_carries_the_answer(eid):
    want = solution_answer(eid)
    assert ex.check(eid, want).ok, f"{eid}: the reference solution does not pass"
    given_text = repr(ex.given(eid))
    for answer in _wrong_answers(want):
        v = ex.check(eid, answer)
        if v.ok:
            continue   # an answer that happens to be right (a tolerance) is not feedback on a wrong one
        leaked = _reveals(v, want, answer, given_text, ex.get(eid).task + ex.get(eid).placeholder)
        assert not leaked, f"{eid}: answering {answer!r} shows the answer {leaked}:\n{v.text()}"


def test_the_reveal_check_can_fail():
    """The check above flags a verdict that quotes the answer (as four_phase_trace.lane0's did on Run All)."""
    v = core.Verdict("four_phase_trace.lane0", None, "no answer yet", ["the run: lane 0 = 35 after step 3"])
    assert _reveals(v, 35.0, None, "lanes: [1, 2]") == [35.0]
    assert _reveals(v, 35.0, 35, "") == []            # the learner's own number may be quoted back


ODD_ANSWERS = [0, -1, 1.5, 10**6, float("nan"), float("inf"), True, "12", [1, 2, 3], np.array([5]),
               np.array([[1, 2]]), np.int64(7), np.float32(2.5), (1,), {"a": 1}]


@pytest.mark.parametrize("eid", NUMERIC)
def test_every_answer_gets_a_verdict_quickly(eid):
    """No traceback and no long run for any input a learner might type."""
    for answer in ODD_ANSWERS:
        t0 = time.perf_counter()
        v = ex.check(eid, answer)
        took = time.perf_counter() - t0
        assert isinstance(v, core.Verdict), f"{eid}: {answer!r} gave {v!r}"
        assert took < 2.0, f"{eid}: checking {answer!r} took {took:.1f} s"
        assert " 1x too " not in v.message, f"{eid}: {v.message}"


@pytest.mark.parametrize("eid", NUMERIC)
def test_a_one_element_array_is_its_number(eid):
    want = solution_answer(eid)
    if isinstance(want, tuple):
        assert ex.check(eid, np.array(want)).ok
    else:
        assert ex.check(eid, np.array([want])).ok
        assert ex.check(eid, np.float64(want)).ok


def test_08_inflight_refuses_a_block_size_that_is_not_one():
    want = solution_answer("rmsnorm_speedup.inflight")
    for block in (0, -1, 1025, 2048, "256", 2.5):
        v = ex.check("rmsnorm_speedup.inflight", want, block=block)
        assert v.ok is False and "block" in v.message, (block, v.text())
        with pytest.raises((TypeError, ValueError), match="block"):
            ex.given("rmsnorm_speedup.inflight", block=block)
    assert ex.check("rmsnorm_speedup.inflight", want, block=256).ok


def test_04_hide_says_short_of_the_target_in_numbers_that_are_short():
    want = solution_answer("latency_hiding.hide")
    v = ex.check("latency_hiding.hide", want - 1)
    busy = re.search(r"([\d.]+) % busy", v.message)
    assert v.ok is False and busy and float(busy.group(1)) < 100 * latency_hiding.BUSY_04, v.message
    for bad in (0, -3, 2.5):
        assert ex.check("latency_hiding.hide", bad).ok is False


def test_07_doubling_answers_a_huge_count_without_launching_it():
    t0 = time.perf_counter()
    v = ex.check("kernel_scheduling.doubling", 10**6)
    assert v.ok is False and time.perf_counter() - t0 < 0.5


def test_07_waves_does_not_grade_the_silicons_block_times_as_an_arithmetic_error():
    """The record's 4 block-times are a fact: answering them gets told what the question asks,
    not "2x too large"."""
    took, _where = kernel_scheduling._silicon_block_times_07(2048, 256)
    want = solution_answer("kernel_scheduling.waves")
    if took is None or round(took) == want:
        pytest.skip("the committed record's block-times equal the arithmetic's waves")
    v = ex.check("kernel_scheduling.waves", round(took))
    assert v.ok is False and "too large" not in v.message and "silicon" in v.message, v.message


@pytest.mark.parametrize("gpu", sorted(device.SPEC_SHEETS))
def test_classic_mistakes_differ_from_the_answer_on_every_spec_sheet(gpu, monkeypatch):
    """On each GPU the course names, streaming_multiprocessor.regs follows the register allocation unit (what the
    occupancy calculator says) and block_1024_cap.blocks cannot be passed with the thread limit alone."""
    info = device.SPEC_SHEETS[gpu]
    monkeypatch.setattr(core, "info", lambda: info)
    regs = occupancy.full_occupancy_registers(info)
    assert ex.check("streaming_multiprocessor.regs", regs).ok
    assert occupancy.calculate(info, 128, regs).occupancy == 1.0 > occupancy.calculate(info, 128, regs + 1).occupancy
    if info.regs_per_sm % info.max_threads_per_sm:      # the even split is not a whole allocation
        assert not ex.check("streaming_multiprocessor.regs", round(info.regs_per_sm / info.max_threads_per_sm)).ok
    g = ex.given("block_1024_cap.blocks")
    threads_only = g["max_threads_per_sm"] // g["threads_per_block"]
    v = ex.check("block_1024_cap.blocks", threads_only)
    assert v.ok is False and "thread limit" in v.message, v.text()
    assert ex.check("block_1024_cap.blocks", solution_answer("block_1024_cap.blocks")).ok


@pytest.mark.parametrize("eid", [e.id for e in ex.exercises()])
def test_every_exercise_sits_in_its_lesson_before_the_takeaways(eid):
    """An exercise's cells go before a heading of its notebook that exists and comes no later than
    the takeaways (gpu_viz/exercises/cells.py inserts them there); none trails after them."""
    import json
    from pathlib import Path

    e = ex.get(eid)
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / f"{e.notebook}.ipynb").read_text())
    firsts = ["".join(c["source"]).split("\n", 1)[0] for c in nb["cells"]]
    assert e.before, f"{eid}: no heading to go before (it would land after the takeaways)"
    at = next((i for i, h in enumerate(firsts) if h.startswith(e.before)), None)
    takeaways = next(i for i, h in enumerate(firsts) if h.startswith("## Takeaways"))
    assert at is not None, f"{eid}: {e.before!r} is not a heading of {e.notebook}"
    assert at <= takeaways, f"{eid}: {e.before!r} comes after the takeaways of {e.notebook}"


# -- how far off, never by how much ------------------------------------------------------------------
# A wrong number's verdict says which way it is off and roughly how far (a band), never the right
# number nor the exact factor: "1 is 127x too small" is the answer (1 x 127).

#: Wrong answers as multiples of the right one: near misses, factors of two and ten, unit slips, signs.
FACTORS = (0.001, 0.1, 0.5, 0.9, 1.1, 2, 10, 1000, -1, -2)
_TOKEN = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")


def _tokens(text):
    """(value, half a unit of its last written digit) for every number written in ``text``:
    "127" -> (127, 0.5), "1.24" -> (1.24, 0.005), "1.27e+02" -> (127, 0.5), "4,230" -> (4230, 0.5)."""
    out = []
    for t in _TOKEN.findall(text):
        mant, _, exp = t.replace(",", "").partition("e")
        decimals = len(mant.partition(".")[2])
        half = 0.5 * 10.0 ** (int(exp or 0) - decimals)
        out.append((float(mant) * 10.0 ** int(exp or 0), half * (1 + 1e-9)))
    return out


def _shows(text, value, free=()):
    """The numbers of ``text`` (not among ``free``) that are ``value`` as written to their precision."""
    if not value or not math.isfinite(value):
        return []
    return [t for t, half in _tokens(text) if t and abs(t - value) <= half
            and not any(math.isclose(t, f, rel_tol=1e-9, abs_tol=1e-12) for f in free)]


def _factor_answers(want):
    if isinstance(want, tuple):
        return [tuple(w * f if j == k else w for j, w in enumerate(want)) for k in range(len(want)) for f in FACTORS]
    return [want * f for f in FACTORS]


def _leaks(eid, answer, want):
    v = ex.check(eid, answer)
    if v.ok:
        return v, []
    e = ex.get(eid)
    free = {t for t, _ in _tokens(repr(ex.given(eid)) + e.task + e.placeholder + repr(answer))}
    text = v.text()
    wants = list(want) if isinstance(want, tuple) else [want]
    answers = list(answer) if isinstance(answer, tuple) else [answer]
    found = []
    for w, a in zip(wants, answers):
        if any(math.isclose(float(w), f, rel_tol=1e-3) for f in free):
            continue          # the facts or the task already show it
        found += [("the answer", t) for t in _shows(text, float(w), free)]
        if a and w != a:       # the factor that turns the learner's number into the right one, either way
            for r in (w / a, a / w):
                found += [(f"the factor {r:.4g}", t) for t in _shows(text, abs(r), free) if abs(r) != 1]
    return v, found


@pytest.mark.parametrize("eid", NUMERIC)
def test_no_wrong_answer_is_told_the_answer_or_the_factor_to_it(eid):
    want = solution_answer(eid)
    for answer in _factor_answers(want):
        v, found = _leaks(eid, answer, want)
        assert not found, f"{eid}: answering {answer!r} shows {found}:\n{v.text()}"


def test_the_factor_check_can_fail(monkeypatch):
    """The check above flags the old "1 is 127x too small" (and a "1.24x" or "1e+03x")."""
    for msg, answer, want in (("1 is 127x too small", 1, 127.3), ("1 is 1.24x too small", 1, 1.2401),
                              ("0.1 is 1e+03x too small", 0.1, 100.0)):
        monkeypatch.setattr(ex, "check", lambda _e, _a, m=msg: core.Verdict("whole_chip.time", False, m))
        assert _leaks("whole_chip.time", answer, want)[1], msg


@pytest.mark.parametrize("answer, band", [(1, "off by 30x to 300x"), (2e6, "off by 300x to 30,000x"),
                                          (1.7e5, "off by 300x to 30,000x")])
def test_a_far_off_number_gets_a_band_that_names_the_unit_slip(answer, band):
    want = solution_answer("whole_chip.time")
    v = ex.check("whole_chip.time", answer * want / 127.3 if answer == 1 else answer)
    assert v.ok is False and band in v.message, v.text()
    assert ("prefix" in v.message) == band.startswith("off by 300x"), v.text()


@pytest.mark.parametrize("eid", NUMERIC)
def test_the_no_answer_message_names_the_quantity_not_its_formula(eid):
    """Run All shows every exercise's "no answer yet": it says what to fill in, never the formula
    that computes it ("bytes in flight per SM = resident threads x 2 B" is the solution)."""
    v = ex.check(eid, None)
    assert v.ok is None
    formula = re.search(r"=|\w \* \w|\w / \w|\w x \d|\) x \w", v.message)   # "x" alone is a tensor
    assert not formula, f"{eid}: {v.message}"


# -- any number a learner can type gets a verdict ---------------------------------------------------

def _odd_numbers():
    from decimal import Decimal
    from fractions import Fraction

    return [10**400, -10**400, Fraction(1, 3), Fraction(10**400, 3), Decimal("1e999"), Decimal("-1e999"),
            Decimal("NaN"), Decimal("sNaN"), Decimal("2.5"), np.int64(7), np.uint8(3), np.float16(2.5),
            np.float64("inf"), np.bool_(True), True, complex(1, 1), (10**400, 1), (1, Decimal("1e999"))]


@pytest.mark.parametrize("eid", NUMERIC)
def test_a_number_that_is_no_finite_float_gets_a_verdict(eid):
    """10**400 (float() overflows), Decimal('1e999') (inf), a signalling NaN: "not yet" naming a
    finite number, like NaN and inf; other number types are graded as numbers."""
    for answer in _odd_numbers():
        v = ex.check(eid, answer)
        assert isinstance(v, core.Verdict) and v.ok is not True, f"{eid}: {answer!r} gave {v!r}"
        if not isinstance(solution_answer(eid), tuple) and type(answer) is int and abs(answer) > 10**300:
            assert v.ok is False and "finite number" in v.message and len(v.message) < 300, v.text()


@pytest.mark.parametrize("eid", [e.id for e in ex.exercises()])
def test_an_unknown_option_names_the_exercise_and_its_options(eid):
    """``ex.check(eid, answer, foo=3)`` and ``ex.given(eid, foo=3)``: a TypeError naming the
    exercise and the options it takes, not an internal function."""
    for call in (lambda: ex.check(eid, None, foo=3), lambda: ex.given(eid, foo=3)):
        with pytest.raises(TypeError) as ei:
            call()
        msg = str(ei.value)
        assert msg.startswith(f"{eid}: unknown option foo;") and "_check" not in msg and "lambda" not in msg, msg
    inflight = "rmsnorm_speedup.inflight"
    if eid == inflight:
        with pytest.raises(TypeError, match=r"it takes block="):
            ex.check(eid, 1, foo=3)
        assert ex.check(eid, None, block=256).ok is None
    elif eid == "whole_chip.bytes":
        with pytest.raises(TypeError, match="it takes no options"):
            ex.check(eid, 1, foo=3)
