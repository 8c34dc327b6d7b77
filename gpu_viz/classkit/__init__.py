"""A class, not one learner: the course's exercises as an nbgrader course, and the hub to serve it.

``gpu-viz class-kit --out DIR`` writes (:func:`build`)::

    DIR/README.md                 the instructor's guide (the hub from nothing, profiles, GPU trouble)
    DIR/nbgrader_config.py        course id, exchange, cell timeout, learner-kernel timeout, code stub
    DIR/source/<lesson>/<lesson>.ipynb
                                  every course notebook with exercises, each exercise as nbgrader
                                  cells (:mod:`.source`): task (read-only), answer (solution region),
                                  test (autograded, locked, with points)
    DIR/hub/                      one machine: jupyterhub_config.py; many: Dockerfile, install-course.sh,
                                  values.yaml (zero-to-jupyterhub), exchange-pvc.yaml; the students'
                                  nbgrader_config.py

JupyterHub, Kubernetes and nbgrader do the work; the kit only writes their inputs.  The folder is
written through :class:`gpu_viz.outdir.OwnedFolder`: a folder holding files the kit did not write
is refused (``--force`` writes beside them and still never touches them).

The test cells call :func:`grade`, the exercises' own checker made strict: a wrong answer fails
with the verdict's text (the mistake named, never the answer), and so does an answer the checker
could not grade here ("no answer yet", a kernel exercise without NVRTC) -- no points for it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Dict, List

from ..outdir import FolderError, OwnedFolder, check_root
from .source import POINTS, ClassKitError, points, source_notebook  # noqa: F401  (public)

FILES = Path(__file__).resolve().parent / "files"
#: The course id nbgrader files submissions under (``--course-id``).
DEFAULT_COURSE_ID = "cuda-on-the-metal"
#: Seconds nbgrader lets one cell run when it autogrades.  The slowest grading, the block reduction's
#: 75 launches in the emulator, takes ~5 s alone on one CPU core (tests/test_classkit.py measures it
#: and holds this at least 10 times that, for a loaded grading machine); a whole notebook's slowest
#: lesson cell (a CPU-mode trace) takes a few seconds more.
CELL_TIMEOUT_S = 300
#: Seconds one learner kernel may run while being graded: on a GPU, the child process that runs all
#: of its launches is stopped then; in the emulator, each launch.  (The emulator's warp-instruction
#: budget stops a runaway loop long before either.)
KERNEL_TIMEOUT_S = 30
#: The environment variable that carries the learner-kernel timeout from nbgrader_config.py into the
#: kernels nbgrader starts (they inherit nbgrader's environment); the graders read it
#: (:func:`gpu_viz.exercises.kernel_task.time_limits`).
KERNEL_TIMEOUT_ENV = "GPU_VIZ_KERNEL_TIMEOUT_S"


class NotYet(AssertionError):
    """A test cell's failure: the verdict's text.  IPython shows it without a traceback (its
    ``_render_traceback_``), so a student and the nbgrader feedback read the mistake, not this
    module's lines."""

    def _render_traceback_(self):
        lines = str(self).splitlines() or [""]
        return [f"\x1b[0;31mNotYet\x1b[0m: {lines[0]}"] + lines[1:]


def grade(exercise_id: str, answer, **options) -> None:
    """An autograded test cell: check ``answer`` for ``exercise_id`` with the exercise's checker
    (:func:`gpu_viz.exercises.check`) and print one line when it is right.

    Raises:
        NotYet (an AssertionError): the answer is wrong (the verdict's text: the mistake it names), or it was
            not graded here (no answer yet; a kernel exercise that could not run): nbgrader gives
            the cell's points only when it raises nothing.
        KeyError: no such exercise.  ValueError: a bad :data:`KERNEL_TIMEOUT_ENV`.
    """
    from .. import exercises

    __tracebackhide__ = True   # pytest leaves this function's lines out (IPython: NotYet's own rendering)
    from ..exercises import kernel_task

    kernel_task.time_limits()  # a bad KERNEL_TIMEOUT_ENV is the grading machine's error: raised before grading
    v = exercises.check(exercise_id, answer, **options)
    if v.ok is None:
        raise NotYet(f"{v.text()}\n(an answer that is not graded earns no points)")
    try:
        v.require()
    except AssertionError as exc:
        raise NotYet(str(exc)) from None
    print(f"[{exercise_id}] correct: {v.message}")


# -- the kit -------------------------------------------------------------------------------------------

def lessons() -> Dict[str, List]:
    """The course notebooks with exercises, by stem, each with its exercises (registry order)."""
    from .. import data
    from ..exercises import exercises

    nb_dir = data.course_dir("notebooks", "_notebooks")
    out = {}
    for path in sorted(nb_dir.glob("[0-9][0-9]_*.ipynb")):
        exs = exercises(path.stem)
        if exs:
            out[path.stem] = (path, exs)
    return out


def _template(name: str, **values) -> str:
    text = (FILES / name).read_text(encoding="utf-8")
    for k, v in values.items():
        text = text.replace("{{" + k + "}}", str(v))
    if "{{" in text:
        raise RuntimeError(f"{name}: a placeholder was not filled: {text[text.index('{{'):][:40]}")
    return text


#: The kit's files with the course's values filled in (``{{NAME}}``), and those copied as they are
#: (``files/<name>`` -> ``DIR/<name>``).
TEMPLATES = ("README.md", "nbgrader_config.py", "hub/student/nbgrader_config.py", "hub/values.yaml")
COPIED = ("hub/Dockerfile", "hub/install-course.sh", "hub/exchange-pvc.yaml", "hub/jupyterhub_config.py",
          "hub/student/labconfig/page_config.json", "hub/student/jupyter_server_config.d/zz-nbgrader-student.json")


def build(out, course_id: str = DEFAULT_COURSE_ID, force: bool = False) -> List[Path]:
    """Write the class kit into folder ``out`` (see the module docstring); returns the files written.

    Raises:
        FolderError: ``out`` is empty (``""`` would mean the current folder), a file system's root,
            the home folder or a folder holding it (refused at once, before anything is read or
            built: :func:`gpu_viz.outdir.check_root`); ``out`` holds files the kit did not write
            (without ``force``), or cannot be written.
        ClassKitError: a notebook and the exercise registry disagree (named).
        ValueError: ``course_id`` is not a plain name (letters, digits, ``-``, ``_``).
    """
    import re

    import nbformat

    out = check_root(out, "--out", example="class-kit")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", course_id or ""):
        raise ValueError(f"course_id must be letters, digits, '-' or '_' (nbgrader files submissions under it), "
                         f"got {course_id!r}")
    items = []
    table = []
    for stem, (path, exs) in lessons().items():
        nb = source_notebook(nbformat.read(str(path), as_version=4), stem, exs)
        items.append((f"source/{stem}/{stem}.ipynb", nbformat.writes(nb).encode("utf-8") + b"\n"))
        table.append(f"| `{stem}` | " + ", ".join(f"`{e.id}` ({points(e)})" for e in exs)
                     + f" | {sum(points(e) for e in exs)} |")
    values = dict(COURSE_ID=course_id, CELL_TIMEOUT_S=CELL_TIMEOUT_S, KERNEL_TIMEOUT_S=KERNEL_TIMEOUT_S,
                  KERNEL_TIMEOUT_ENV=KERNEL_TIMEOUT_ENV, ASSIGNMENTS="\n".join(table))
    for name in TEMPLATES:
        items.append((name, _template(name, **values).encode("utf-8")))
    for name in COPIED:
        items.append((name, (FILES / name).read_bytes()))
    with OwnedFolder(out, "--out", force=force) as folder:
        paths = folder.write_many(items)
        os.chmod(folder.path("hub/install-course.sh"), 0o755)
    return paths


def _cli(args) -> int:
    try:
        paths = build(args.out, course_id=args.course_id, force=args.force)
    except (FolderError, ClassKitError, ValueError) as exc:
        print(f"gpu-viz class-kit: {exc}", file=sys.stderr)
        return 2
    n = sum(1 for p in paths if p.suffix == ".ipynb")
    print(f"class kit written to {args.out}: {n} assignments in source/, nbgrader_config.py, hub/, README.md "
          f"(start with {Path(args.out) / 'README.md'})")
    return 0


def register_cli(subparsers) -> None:
    """Add the ``class-kit`` subcommand to ``gpu-viz``."""
    p = subparsers.add_parser(
        "class-kit", help="write an nbgrader course of the exercises, and the hub to serve it",
        description="Write an nbgrader course directory of the course's exercises (source/<lesson>/, "
                    "nbgrader_config.py), the files to serve it with JupyterHub on one machine or on "
                    "Kubernetes (hub/), and the instructor's guide (README.md).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder to write: new, empty, or an earlier class kit's")
    p.add_argument("--course-id", default=DEFAULT_COURSE_ID,
                   help=f"nbgrader's course id (letters, digits, - and _; default {DEFAULT_COURSE_ID})")
    p.add_argument("--force", action="store_true",
                   help="write into an --out folder that holds files the kit did not write (they are still "
                        "never overwritten or deleted)")
    p.set_defaults(func=_cli)
