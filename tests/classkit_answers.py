"""Answers a student types into the class kit's released notebooks, for the nbgrader and hub tests.

Everything comes from the exercise registry and the tests' own catalogues, never from a list of
exercise ids: the right answer is the reference solution's own statements; a typical wrong one is a
kernel of tests/exercise_catalogue/<kernel>/ headed ``// expect: <fragment>`` (the folder named by
the kernel the learner's cell defines) or, for a number, an entry of tests/test_exercises.py's
WRONG with the fragment its verdict must contain.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import nbformat

from gpu_viz import exercises
from gpu_viz.classkit import source
from gpu_viz.exercises.core import KERNEL

import catalogue as _catalogue

def catalogue(ex) -> List[Tuple[Path, str]]:
    """(kernel file, its expectation: "correct" or a fragment of the message) of ``ex``'s catalogue."""
    return _catalogue.entries(ex.id)


def _value_source(value) -> str:
    """A Python literal of a number or a tuple of numbers (numpy scalars as plain numbers)."""
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_value_source(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if hasattr(value, "item"):
        value = value.item()
    return repr(value)


def wrong_answer(ex, rng) -> Tuple[str, str]:
    """(the statement that sets ``ex``'s answer to a typical wrong one, the fragment its verdict
    names), chosen with ``rng`` among the catalogue's wrong kernels or the WRONG numbers of ``ex``
    (the run seed picks: another run tries another, and the seed replays it)."""
    var = source.split(ex).answer
    if ex.kind == KERNEL:
        picks = [(f, e) for f, e in catalogue(ex) if e != "correct"]
        assert picks, f"{ex.id}: no wrong kernel in {_catalogue.folder(ex.id)}"
        f, expect = picks[int(rng.integers(len(picks)))]
        return f"{var} = r'''\n{f.read_text(encoding='utf-8')}'''", expect
    from test_exercises import WRONG

    picks = [(w, frag) for eid, w, frag in WRONG if eid == ex.id]
    assert picks, f"{ex.id}: no wrong answer in tests/test_exercises.py WRONG"
    wrong, fragment = picks[int(rng.integers(len(picks)))]
    return f"{var} = {_value_source(wrong(exercises.given(ex.id)))}", fragment


def right_answer(ex) -> str:
    """The reference solution's own statements (what a student who solved it writes)."""
    return source.split(ex).solution


def answer_cell(ex, statements: Optional[str]) -> str:
    """The released answer cell of ``ex`` with the starter replaced by ``statements`` (None: left
    as released, unanswered)."""
    sp = source.split(ex)
    middle = sp.starter if statements is None else statements
    return "\n".join(x for x in (sp.prefix, middle, sp.suffix) if x)


def fill(nb: nbformat.NotebookNode, answers: dict) -> nbformat.NotebookNode:
    """Put ``answers`` (exercise id -> statements, or None to leave it unanswered) into the answer
    cells of released notebook ``nb`` (matched by ``exercise_id``); every exercise must be there."""
    seen = set()
    for c in nb.cells:
        eid = c.metadata.get("exercise_id")
        nbg = c.metadata.get("nbgrader", {})
        if eid in answers and nbg.get("solution"):
            c.source = answer_cell(exercises.get(eid), answers[eid])
            seen.add(eid)
    assert seen == set(answers), f"answer cells missing for {set(answers) - seen}"
    return nb


def pick_lesson():
    """The first lesson (course order) with a kernel exercise and a number exercise: the one the
    slow tests autograde (a kernel's catalogue and a number's WRONG both exercised)."""
    from gpu_viz.classkit import lessons

    for stem, (_path, exs) in lessons().items():
        kinds = {e.kind == KERNEL for e in exs}
        if kinds == {True, False}:
            return stem, exs
    raise AssertionError("no lesson has both a kernel exercise and a number exercise")
