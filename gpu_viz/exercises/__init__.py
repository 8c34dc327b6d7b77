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

import inspect
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
    ex = get(exercise_id)
    _check_options(exercise_id, ex.given, (), options)
    return Given(ex.given(**options))


def _check_options(exercise_id: str, fn, args: tuple, options: Dict) -> None:
    """TypeError naming the exercise and the options it takes when ``options`` are not its own (the
    checker's or facts function's keyword parameters), instead of Python's message about an
    internal function."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):     # a builtin or C callable: let the call itself say
        return
    try:
        sig.bind(*args, **options)
    except TypeError:
        takes = [n for n, p in sig.parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                 and p.default is not p.empty]
        unknown = sorted(k for k in options if k not in takes)
        offer = f"it takes {', '.join(f'{t}=' for t in takes)}" if takes else "it takes no options"
        raise TypeError(f"{exercise_id}: unknown option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown) or ', '.join(options)}; {offer}") from None


def check(exercise_id: str, answer, **options) -> Verdict:
    """Grade ``answer`` (a number, a pair, or CUDA source, as the task says) for ``exercise_id``.

    Returns:
        :class:`Verdict`: ``ok`` True / False (``message`` names the likely mistake, or the kind
        of answer expected when ``answer`` is of another kind: a string for a number, a number
        for a pair) / None (no answer yet, or a kernel that cannot run here: no GPU and no NVRTC
        for the emulator -- in CPU mode the emulator grades kernels); a notebook shows it as text,
        never a traceback.

    Raises:
        KeyError: no such exercise.  TypeError: an option the exercise lacks (naming the exercise
        and the options it takes).
    """
    ex = get(exercise_id)
    _check_options(exercise_id, ex.check, (answer,), options)
    try:
        return ex.check(answer, **options)
    except AnswerKindError as exc:
        msg = str(exc)
        msg = msg[len(exercise_id) + 2:] if msg.startswith(f"{exercise_id}: ") else msg
        return Verdict(exercise_id, False, msg)
