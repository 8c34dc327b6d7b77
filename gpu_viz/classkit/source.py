"""The course's notebooks as nbgrader *source* notebooks: each exercise becomes three nbgrader cells.

For every exercise of the registry (:mod:`gpu_viz.exercises`) a notebook holds (matched by the
cells' ``exercise_id`` metadata), the source notebook has, in the exercise's place:

1. **the task** -- a read-only markdown cell (nbgrader ``locked``), the text the learner's
   notebook shows (:func:`gpu_viz.exercises.cells.cells_for`) and the points;
2. **the answer** -- a solution cell: the learner's cell as their notebook has it (the starter:
   ``answer = None`` or the starting kernel), then the reference solution between nbgrader's
   ``### BEGIN SOLUTION`` / ``### END SOLUTION``.  ``nbgrader generate_assignment`` replaces that
   region with the course's code stub (``nbgrader_config.py``: a comment), so the released cell
   is the learner's cell of the course notebook and holds no solution;
3. **the test** -- an autograded, locked cell with the exercise's points that runs the same checker
   on the learner's answer (:func:`gpu_viz.classkit.grade`: the verdict's ``require()``, and an
   answer that is not graded earns nothing); tagged ``raises-exception``, so "Run All" goes on past
   a wrong answer to the next exercise.

The split of a learner's cell and a reference solution into "starter" and "solution" is read from
their Python statements: the statements both cells open with and close with are shared; what
lies between is the starter (learner's cell) and the solution (reference cell), whose last line's
``.require()`` is dropped (the test cell does the requiring).  Every other cell of the notebook is
kept as it is, except any cell of an exercise already there (the learner's cells, an older
notebook's solution cells): the registry is what the kit writes.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import re
from typing import Dict, List, Optional, Tuple

import nbformat

from ..exercises import cells as learner_cells
from ..exercises.core import KERNEL, Exercise

#: nbgrader's cell-metadata schema version (nbgrader 0.6 to 0.9 read and write version 3).
SCHEMA_VERSION = 3
#: Points per exercise, by kind: writing a kernel is worth more than a prediction.
POINTS = {KERNEL: 3}
DEFAULT_POINTS = 1
#: nbgrader's default solution delimiters (``ClearSolutions.begin_solution_delimeter``, ``...end...``).
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"


class ClassKitError(ValueError):
    """The course cannot be turned into an nbgrader course as it is: the message names the
    notebook or exercise and what is wrong."""


def points(ex: Exercise) -> int:
    """The points exercise ``ex`` is worth (:data:`POINTS` by kind, else :data:`DEFAULT_POINTS`)."""
    return POINTS.get(ex.kind, DEFAULT_POINTS)


def grade_id(ex: Exercise, role: str) -> str:
    """nbgrader's id of one of the exercise's cells: ``<role>-<exercise id>`` with every character
    but letters, digits, ``_`` and ``-`` made ``-`` (nbgrader uses the id in file and database keys)."""
    return f"{role}-" + re.sub(r"[^A-Za-z0-9_-]", "-", ex.id)


@dataclasses.dataclass(frozen=True)
class Split:
    """An exercise's learner cell and reference solution, statement by statement.

    Attributes:
        prefix: the statements both cells open with (the learner's text of them).
        starter: the learner cell's own statements (``answer = None``, the starting kernel).
        solution: the reference solution's own statements.
        suffix: the statements both close with (the learner's text: the checker call).
        answer: the source of the answer the checker is given (``answer``, ``code``).
        options: the source of the checker's keyword options (``block=256``), "" when none.
    """

    prefix: str
    starter: str
    solution: str
    suffix: str
    answer: str
    options: str


def _segments(src: str, what: str, ex: Exercise) -> List[Tuple[str, str]]:
    """``src``'s top-level statements as (AST dump, text) pairs; a statement's text runs from the
    end of the one before (its leading comments come with it) to its own last line."""
    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ClassKitError(f"exercise {ex.id}: its {what} is not valid Python ({exc})") from None
    if not tree.body:
        raise ClassKitError(f"exercise {ex.id}: its {what} is empty")
    lines = src.splitlines()
    out, start = [], 0
    for k, node in enumerate(tree.body):
        end = node.end_lineno if k < len(tree.body) - 1 else len(lines)
        if out and end <= start:   # a statement on the line of the one before (`a(); b()`): one segment
            out[-1] = (out[-1][0] + ast.dump(node), out[-1][1])
            continue
        out.append((ast.dump(node), "\n".join(lines[start:end])))
        start = end
    return out


def _drop_require(src: str, ex: Exercise) -> str:
    """The reference solution without the ``.require()`` its last statement ends with."""
    tree = ast.parse(src)
    last = tree.body[-1]
    call = last.value if isinstance(last, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "require"
            and not call.args and not call.keywords):
        raise ClassKitError(f"exercise {ex.id}: its reference solution must end with `<verdict>.require()`, "
                            f"not {ast.get_source_segment(src, last)!r}")
    inner = ast.get_source_segment(src, call.func.value)
    lines = src.splitlines()
    return "\n".join(lines[:last.lineno - 1] + [inner] + lines[last.end_lineno:])


def _checker_call(src: str, ex: Exercise) -> Tuple[str, str]:
    """(answer source, keyword options source) of the ``<module>.check(<ex.id>, <answer>, ...)``
    call in ``src``."""
    tree = ast.parse(src)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "check" and len(n.args) == 2]
    # the call naming the exercise by its id; else the cell's only checker call (an id held in a name)
    named = [n for n in calls if isinstance(n.args[0], ast.Constant) and n.args[0].value == ex.id]
    others = [n for n in calls if not isinstance(n.args[0], ast.Constant)]
    found = named or (others if len(others) == 1 else [])
    if not found:
        raise ClassKitError(f"exercise {ex.id}: its learner cell never calls `ex.check({ex.id!r}, <answer>)`")
    node = found[0]
    opts = ", ".join(ast.get_source_segment(src, kw) for kw in node.keywords)
    return ast.get_source_segment(src, node.args[1]), opts


def split(ex: Exercise) -> Split:
    """Split exercise ``ex``'s learner cell and reference solution (see :class:`Split`).

    Raises:
        ClassKitError: either cell is not Python, the solution does not end with ``.require()``,
            the learner cell never calls the checker, or the two cells do not differ.
    """
    p = _segments(ex.placeholder, "learner cell", ex)
    s = _segments(_drop_require(ex.solution, ex), "reference solution", ex)
    i = 0
    while i < min(len(p), len(s)) and p[i][0] == s[i][0]:
        i += 1
    j = 0
    while j < min(len(p), len(s)) - i and p[-1 - j][0] == s[-1 - j][0]:
        j += 1
    starter, solution = p[i:len(p) - j], s[i:len(s) - j]
    if not solution:
        raise ClassKitError(f"exercise {ex.id}: the reference solution adds nothing to the learner cell")
    answer, options = _checker_call(ex.placeholder, ex)

    def text(segs):
        return "\n".join(t for _, t in segs).strip("\n")
    return Split(text(p[:i]), text(starter), text(solution), text(p[len(p) - j:]), answer, options)


def _nbgrader(ex: Exercise, role: str, *, grade: bool, solution: bool, locked: bool) -> Dict:
    meta = {"grade": grade, "grade_id": grade_id(ex, role), "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution}
    if grade:
        meta["points"] = points(ex)
    return meta


def _meta(ex: Exercise, nbg: Dict, tags=()) -> Dict:
    return {"exercise_id": ex.id, "nbgrader": nbg, "slideshow": {"slide_type": "skip"}, "tags": ["exercise", *tags]}


#: A test cell's tag: its failure is expected, so JupyterLab's "Run All" (and nbclient) go on to the
#: next cells -- a student sees every exercise's verdict, not only the first wrong one.
RAISES = "raises-exception"


def answer_source(sp: Split) -> str:
    """The source notebook's answer cell: the learner's cell with the solution region inside."""
    parts = [sp.prefix, sp.starter, BEGIN_SOLUTION, sp.solution, END_SOLUTION, sp.suffix]
    return "\n".join(x for x in parts if x)


def test_source(ex: Exercise, sp: Split) -> str:
    """The autograded cell: the same checker, via :func:`gpu_viz.classkit.grade`."""
    n = points(ex)
    args = ", ".join(x for x in (repr(ex.id), sp.answer, sp.options) if x)
    return (f"# Autograded ({n} point{'s' if n != 1 else ''}, locked): the exercise's checker on your answer above.\n"
            f"# Run it to see whether it earns the points; nbgrader runs it again when grading.\n"
            f"from gpu_viz import classkit\n"
            f"classkit.grade({args})")


def exercise_cells(ex: Exercise) -> List[nbformat.NotebookNode]:
    """The three nbgrader cells of ``ex``: the task (read-only), the answer (solution region), the
    test (autograded, with points)."""
    sp = split(ex)
    learner_task = learner_cells.cells_for(ex)[0].source
    n = points(ex)
    task = nbformat.v4.new_markdown_cell(
        f"{learner_task}\n\n**{n} point{'s' if n != 1 else ''}.** Write your answer in the cell below; the locked "
        "cell after it runs the checker on it and earns the points when it passes.",
        metadata=_meta(ex, _nbgrader(ex, "task", grade=False, solution=False, locked=True)))
    answer = nbformat.v4.new_code_cell(answer_source(sp),
                                       metadata=_meta(ex, _nbgrader(ex, "answer", grade=False, solution=True,
                                                                    locked=False)))
    test = nbformat.v4.new_code_cell(test_source(ex, sp),
                                     metadata=_meta(ex, _nbgrader(ex, "test", grade=True, solution=False,
                                                                  locked=True), tags=[RAISES]))
    for cell, role in ((task, "task"), (answer, "answer"), (test, "test")):
        cell["id"] = grade_id(ex, role)
    return [task, answer, test]


def source_notebook(nb: nbformat.NotebookNode, stem: str, exs: List[Exercise]) -> nbformat.NotebookNode:
    """Notebook ``nb`` (the course notebook ``stem``) as an nbgrader source notebook: each of
    ``exs`` in the place of its cells (the first cell with its ``exercise_id``), every other cell
    of an exercise dropped, the rest kept.

    Raises:
        ClassKitError: an exercise of ``exs`` has no cell in the notebook, or the notebook holds
            cells of an exercise the registry does not know (run ``python -m gpu_viz.exercises.cells``).
    """
    out = copy.deepcopy(nb)
    ids = [c.metadata.get("exercise_id") for c in out.cells]
    known = {e.id for e in exs}
    stray = sorted({i for i in ids if i is not None} - known)
    if stray:
        raise ClassKitError(f"notebook {stem}: cells of exercise(s) {stray} that the registry does not hold for it; "
                            "refresh its exercise cells with `python -m gpu_viz.exercises.cells`")
    missing = [e.id for e in exs if e.id not in ids]
    if missing:
        raise ClassKitError(f"notebook {stem}: no cell of exercise(s) {missing}; write them with "
                            "`python -m gpu_viz.exercises.cells`")
    by_id = {e.id: e for e in exs}
    cells, placed = [], set()
    for cell, eid in zip(out.cells, ids):
        if eid is None:
            cells.append(cell)
        elif eid not in placed:
            cells.extend(exercise_cells(by_id[eid]))
            placed.add(eid)
    out.cells = cells
    out.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    return out


def _code_line(line: str) -> str:
    """A line without its trailing comment (``//`` in CUDA, ``#`` in Python) and outer blanks."""
    return re.split(r"//|#", line, maxsplit=1)[0].strip()


def solution_lines(ex: Exercise, shown: str = "") -> List[str]:
    """The code lines of ``ex``'s solution region (comments left out) that neither its starter nor
    the text ``shown`` (what the learner's notebook already shows) has, and that are long enough
    to give something away: none of them may appear in a released notebook."""
    sp = split(ex)
    given = {_code_line(ln) for ln in (sp.starter + "\n" + shown).splitlines()}
    out = []
    for ln in sp.solution.splitlines():
        s = _code_line(ln)
        if len(s) > 8 and s not in given:
            out.append(s)
    return out


def find_exercise_cells(nb: nbformat.NotebookNode, ex_id: str) -> Optional[Dict[str, nbformat.NotebookNode]]:
    """The kit's cells of exercise ``ex_id`` in ``nb`` by role (``task``, ``answer``, ``test``), or
    None when it has none."""
    found = {}
    for c in nb.cells:
        nbg = c.metadata.get("nbgrader")
        if c.metadata.get("exercise_id") == ex_id and nbg:
            found[nbg["grade_id"].split("-", 1)[0]] = c
    return found or None
