"""The course's exercises: predict-then-run, write-the-kernel and change-and-measure, each graded
by a checker that names the learner's likely mistake.

    from gpu_viz import exercises as ex
    g = ex.given("07.doubling")        # the facts the task needs (this GPU, or the record in CPU mode)
    ex.check("07.doubling", 265)       # -> Verdict: right, or the likely mistake

Exercises live in :mod:`.predict` (numbers) and :mod:`.kernel_lab` (CUDA source the learner
writes); :func:`exercises` lists them by notebook, :mod:`.cells` writes their notebook cells.
"""
from __future__ import annotations

from typing import Dict

from .core import KINDS, Exercise, Verdict, exercises, get

__all__ = ["Exercise", "Verdict", "KINDS", "check", "exercises", "get", "given"]


class Given(dict):
    """The facts of one exercise: a dict that prints as one fact a line."""

    def __repr__(self) -> str:
        return "\n".join(f"{k}: {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k}: {v}"
                         for k, v in self.items())


def given(exercise_id: str, **options) -> Dict:
    """The facts exercise ``exercise_id`` needs, as a dict (printed one a line in a notebook);
    ``options`` are the exercise's knobs (e.g. ``block=256`` for 08.inflight).

    Raises:
        KeyError: no such exercise (naming those that exist).  TypeError: an option it lacks.
    """
    return Given(get(exercise_id).given(**options))


def check(exercise_id: str, answer, **options) -> Verdict:
    """Grade ``answer`` (a number, a pair, or CUDA source, as the task says) for ``exercise_id``.

    Returns:
        :class:`Verdict`: ``ok`` True / False (``message`` names the likely mistake) / None (no
        answer yet, or a kernel exercise in CPU mode); a notebook shows it as text.

    Raises:
        KeyError: no such exercise.  TypeError / ValueError: an answer of the wrong kind (naming it).
    """
    return get(exercise_id).check(answer, **options)
