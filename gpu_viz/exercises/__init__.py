"""The course's exercises: predict-then-run, write-the-kernel and change-and-measure, each graded
by a checker that names the learner's likely mistake.

    from gpu_viz import exercises as ex
    g = ex.given("kernel_scheduling.doubling")        # the facts the task needs (this GPU, or the record in CPU mode)
    ex.check("kernel_scheduling.doubling", 265)       # -> Verdict: right, or the likely mistake

Each notebook's exercises live in the module named after its topic (``warps_simt``, ...): numbers,
and write-the-kernel tasks graded by :mod:`.kernel_task` from the run; :func:`exercises` lists them
by notebook, :mod:`.cells` writes their notebook cells.
"""
from __future__ import annotations

from typing import Dict

from .core import KINDS, AnswerKindError, Exercise, Verdict, exercises, get

__all__ = ["Exercise", "Verdict", "KINDS", "check", "exercises", "get", "given"]


class Given(dict):
    """The facts of one exercise: a dict that prints as one fact a line."""

    def __repr__(self) -> str:
        return "\n".join(f"{k}: {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k}: {v}"
                         for k, v in self.items())


def given(exercise_id: str, **options) -> Dict:
    """The facts exercise ``exercise_id`` needs, as a dict (printed one a line in a notebook);
    ``options`` are the exercise's knobs (e.g. ``block=256`` for rmsnorm_speedup.inflight).

    Raises:
        KeyError: no such exercise (naming those that exist).  TypeError: an option it lacks.
    """
    return Given(get(exercise_id).given(**options))


def check(exercise_id: str, answer, **options) -> Verdict:
    """Grade ``answer`` (a number, a pair, or CUDA source, as the task says) for ``exercise_id``.

    Returns:
        :class:`Verdict`: ``ok`` True / False (``message`` names the likely mistake, or the kind
        of answer expected when ``answer`` is of another kind: a string for a number, a number
        for a pair) / None (no answer yet, or a kernel exercise in CPU mode); a notebook shows it
        as text, never a traceback.

    Raises:
        KeyError: no such exercise.  TypeError: an option the exercise lacks.
    """
    ex = get(exercise_id)
    try:
        return ex.check(answer, **options)
    except AnswerKindError as exc:
        msg = str(exc)
        msg = msg[len(exercise_id) + 2:] if msg.startswith(f"{exercise_id}: ") else msg
        return Verdict(exercise_id, False, msg)
