"""Write the exercises' cells into the notebooks (run by hand after changing an exercise; the
notebooks are committed).

Each exercise becomes two cells, inserted before the cell its :attr:`Exercise.before` names (the
heading of the next section; None: the end): the task (markdown) and the learner's code cell (tags
``exercise`` + ``remove-cell``: decks drop it).  Both are ``slide_type: skip``.  No solution goes into
the learner's notebook: a learner can "Run all" and see only their own cells' verdicts.  The
reference solutions live with the exercises (:attr:`Exercise.solution`, ``kernels/exercises/*.cu``);
the tests run them, and the class kit (nbgrader) writes them into the instructor's source notebooks.

The notebook's "Your turn" slide (a ``gv-card`` listing its exercises and saying how they are
graded: on the GPU and in the emulator for kernels, against the silicon or the committed records
for numbers) is written from the same registry, so it cannot drift from the exercises.

Cells already written (matched by their ``exercise_id`` / ``exercise_card`` metadata) are replaced
in place, so running it again is safe.

    python -m gpu_viz.exercises.cells            # all notebooks
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List

from .core import KERNEL, Exercise, exercises

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent.parent / "notebooks"
CARD_KEY = "exercise_card"

KERNEL_GRADING = ("your kernel runs at every launch shape the task names: on a GPU on the silicon (in a "
                  "separate process, so a kernel that never ends cannot freeze the notebook) with the "
                  "emulator checking it for races and out-of-bounds accesses; without a GPU in the emulator, "
                  "from your kernel's own PTX")
NUMBER_GRADING = "on a GPU against the silicon, without one against the CPU models and the committed records"


def _meta(ex: Exercise, tags: List[str]) -> dict:
    return {"slideshow": {"slide_type": "skip"}, "tags": tags, "exercise_id": ex.id}


def cells_for(ex: Exercise) -> list:
    """The two cells of ``ex``: the task and the learner's code cell."""
    import nbformat  # here, not at import: the registry loads this module, and nbformat takes ~1 s

    show = ("\n\n`v.show()` plays your kernel's run, lane by lane, with the failing launch's faults marked."
            if ex.kind == KERNEL else "")
    task = nbformat.v4.new_markdown_cell(f"#### Your turn: {ex.title}\n\n{ex.task}{show}\n\n*({ex.kind})*",
                                         metadata=_meta(ex, ["exercise"]))
    code = nbformat.v4.new_code_cell(ex.placeholder, metadata=_meta(ex, ["exercise", "remove-cell"]))
    for c in (task, code):
        c.pop("id", None)
    return [task, code]


def card(exs: List[Exercise]) -> str:
    """The "Your turn" slide's markdown for a notebook's exercises."""
    lines = [f"{k}. **{e.title}** ({e.kind})" for k, e in enumerate(exs, 1)]
    how = []
    if any(e.kind == KERNEL for e in exs):
        how.append(f"Kernels: {KERNEL_GRADING}.")
    if any(e.kind != KERNEL for e in exs):
        how.append(f"Numbers: {NUMBER_GRADING}.")
    return ("## Your turn, in the notebook\n\n<div class=\"gv-card\">\n\n" + "\n".join(lines) + "\n\n"
            "Each checker names the mistake it sees, never the answer. " + " ".join(how) + "\n\n</div>")


def _heading_index(nb, before) -> int:
    if before is None:
        return len(nb.cells)
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown" and c.source.lstrip().startswith(before):
            return i
    raise ValueError(f"no markdown cell starting with {before!r}")


def insert(path: Path) -> int:
    """Insert (or refresh) the exercises of notebook ``path`` and its "Your turn" card; returns how
    many exercises."""
    import nbformat  # here, not at import: the registry loads this module, and nbformat takes ~1 s

    nb = nbformat.read(str(path), as_version=4)
    exs = exercises(path.stem)
    nb.cells = [c for c in nb.cells if "exercise_id" not in c.metadata]
    for ex in exs:
        i = _heading_index(nb, ex.before)
        new = cells_for(ex)
        for k, c in enumerate(new):
            c["id"] = f"ex-{ex.id.replace('.', '-')}-{k}"
        nb.cells[i:i] = new
    for c in nb.cells:
        if c.cell_type == "markdown" and (c.metadata.get(CARD_KEY) or
                                          c.source.lstrip().startswith("## Your turn, in the notebook")):
            c.source = card(exs)
            c.metadata[CARD_KEY] = True
    nbformat.write(nb, str(path))
    return len(exs)


def main(argv=None) -> int:
    paths = [Path(p) for p in (argv or [])] or sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    for p in paths:
        print(f"{p.name}: {insert(p)} exercises")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
