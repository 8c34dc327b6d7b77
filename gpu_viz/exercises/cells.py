"""Write the exercises' cells into the notebooks (run once, by hand; the notebooks are committed).

Each exercise becomes three cells, inserted before the cell its :attr:`Exercise.before` names
(the heading of the next section; None: the end): the task (markdown), the learner's code cell
(tags ``exercise`` + ``remove-cell``: decks drop it) and the solution (tags ``solution`` +
``remove-cell``, source hidden).  All three are ``slide_type: skip``.  Cells already written
(matched by their ``exercise_id`` metadata) are replaced in place, so running it again is safe.

    python -m gpu_viz.exercises.cells            # all notebooks
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import nbformat

from .core import Exercise, exercises

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent.parent / "notebooks"


def _meta(ex: Exercise, tags: List[str], hidden: bool = False) -> dict:
    m = {"slideshow": {"slide_type": "skip"}, "tags": tags, "exercise_id": ex.id}
    if hidden:
        m["jupyter"] = {"source_hidden": True}
    return m


def cells_for(ex: Exercise) -> list:
    """The three cells of ``ex``: task, exercise code, solution."""
    task = nbformat.v4.new_markdown_cell(f"#### Your turn: {ex.title}\n\n{ex.task}\n\n*({ex.kind})*",
                                         metadata=_meta(ex, ["exercise"]))
    code = nbformat.v4.new_code_cell(ex.placeholder, metadata=_meta(ex, ["exercise", "remove-cell"]))
    sol = nbformat.v4.new_code_cell("# Solution\n" + ex.solution, metadata=_meta(ex, ["solution", "remove-cell"], True))
    for c in (task, code, sol):
        c.pop("id", None)
    return [task, code, sol]


def _heading_index(nb, before) -> int:
    if before is None:
        return len(nb.cells)
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown" and c.source.lstrip().startswith(before):
            return i
    raise ValueError(f"no markdown cell starting with {before!r}")


def insert(path: Path) -> int:
    """Insert (or refresh) the exercises of notebook ``path``; returns how many."""
    nb = nbformat.read(str(path), as_version=4)
    exs = exercises(path.stem)
    nb.cells = [c for c in nb.cells if "exercise_id" not in c.metadata]
    for ex in exs:
        i = _heading_index(nb, ex.before)
        new = cells_for(ex)
        for c in new:
            c["id"] = f"ex-{ex.id.replace('.', '-')}-{new.index(c)}"
        nb.cells[i:i] = new
    nbformat.write(nb, str(path))
    return len(exs)


def main(argv=None) -> int:
    paths = [Path(p) for p in (argv or [])] or sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    for p in paths:
        print(f"{p.name}: {insert(p)} exercises")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
