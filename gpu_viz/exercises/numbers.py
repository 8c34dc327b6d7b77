"""What the number exercises (predict-then-run, change-and-measure) share: grading a number and
naming the likely mistake, the cells of a number exercise, the hardware facts.

Each exercise gives its facts (:func:`gpu_viz.exercises.given`), grades the learner's number and
names the likely mistake, then shows the run it was checked against: on a GPU the silicon (a
trace, the occupancy API, a timed kernel), in CPU mode the CPU model and the committed record,
labelled with their GPU and date.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from .. import backend
from ..measure import facts
from . import core as _core
from .core import AnswerKindError, Verdict, source_label

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


def as_pair(exercise_id: str, answer, form: str):
    """``answer`` as a pair of counts (NumPy answers included), for an exercise whose answer is the
    pair ``form`` ("(warps, useful_lanes)").

    Raises:
        AnswerKindError: ``answer`` is not two numbers (naming ``form``).
    """
    try:
        a, b = (as_number(exercise_id, v, "count") for v in _plain(answer))
    except (TypeError, ValueError):
        raise AnswerKindError(f"{exercise_id}: the answer is a pair {form}, got {answer!r}") from None
    return a, b


def grade_number(exercise_id: str, answer, want: float, rtol: float, what: str, mistakes: Dict[str, float],
                 details: list, reveal=()) -> Verdict:
    """:func:`gpu_viz.exercises.core.grade_number`, with NumPy answers, and with ``reveal`` (lines that
    show the right number: the run it was checked against) added only to a right answer.  How far
    off a wrong number is comes as a band (``core.far_off``), and for a small whole count (a number
    of warps, blocks, registers: below :data:`_SMALL_COUNT`) as its direction alone: any band
    narrows a count of 4 to a candidate or two."""
    small_count = float(want).is_integer() and abs(want) < _SMALL_COUNT
    v = _core.grade_number(exercise_id, as_number(exercise_id, answer, what), want, rtol, what, mistakes,
                           list(details), small_count=small_count)
    if v.ok:
        v.details.extend(reveal)
    return v


_SMALL_COUNT = 1000


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
# 11's Little's-law facts live where their data does: gpu_viz.measure.facts, gpu_viz.claims.inflight
_copy_GBps = facts.copy_GBps
_dram_latency = facts.dram_latency


def _resident(threads: int):
    """(blocks of ``threads`` of scheduled_block per SM, where it came from)."""
    if _core.live():
        from ..record import scheduling as rec

        return rec.resident_blocks(threads), "CUDA occupancy API, " + backend.live_label()
    from ..model import scheduling as m

    i = _core.info()
    return m.resident_blocks_per_sm(i, threads), f"occupancy calculator, {i.name}; {source_label()}"
