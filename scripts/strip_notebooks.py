"""Strip outputs from the course notebooks, and check their format (the committed form).

    python scripts/strip_notebooks.py                 # strip notebooks/*.ipynb in place
    python scripts/strip_notebooks.py --check         # exit 1, listing problems, if any would change
    python scripts/strip_notebooks.py --set-repo      # rewrite badge + install cell from nbkit.COURSE_REPO
    python scripts/strip_notebooks.py path/a.ipynb    # only these

Stripping is nbconvert's ClearOutputPreprocessor (outputs, execution counts, the collapsed /
scrolled / execution cell metadata) plus the notebook-level keys an execution adds (widget
state, the slide build's record).  ``check_notebook`` is the format rule set that
tests/test_notebook_format.py applies to every notebook.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import List

import nbformat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import nbkit  # noqa: E402

REPO = HERE.parent
NOTEBOOKS = REPO / "notebooks"
NAME_RE = re.compile(r"^(\d\d)_[a-z0-9_]+\.ipynb$")
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "skip", "notes"}
#: Where a cell keeps its slide's speaker notes (gpu_viz.slides.SPEAKER_NOTES_KEY: the deck build
#: turns them into notes; the learner's notebook shows nothing).
SPEAKER_NOTES_KEY = nbkit.SPEAKER_NOTES_KEY
EXECUTION_NB_KEYS = ("widgets", "gpu_viz_build", "papermill")
CELL_META_DROP = {"collapsed", "scrolled", "execution", "ExecuteTime"}
#: A markdown claim that numbers are measured now ("timed live", "the live speed-up", "the same
#: table, live", "measurements are live", a line break allowed in between; "live in" is the verb) ...
_MEASURE = r"(?:measured|measurements?|timed|timings?|tables?|speed-?ups?|numbers|results|benchmark(?:ed|s)?)"
LIVE_CLAIM_RE = re.compile(rf"\b{_MEASURE}\b[^.]{{0,40}}?\blive\b(?!\s+in\b)"
                           rf"|\blive[\s-]+{_MEASURE}\b", re.I)
#: ... must sit in a cell that also says what CPU mode shows.
CPU_MODE_RE = re.compile(r"\bCPU mode\b|\bcommitted record\b|\bwithout a GPU\b", re.I)


def strip(nb):
    """Remove outputs, execution counts and execution metadata from ``nb`` (in place); return it."""
    from nbconvert.preprocessors import ClearOutputPreprocessor

    ClearOutputPreprocessor(remove_metadata_fields=set(CELL_META_DROP)).preprocess(nb, {})
    for key in EXECUTION_NB_KEYS:
        nb.metadata.pop(key, None)
    return nb


def _source(cell) -> str:
    """A cell's source as one string (nbformat.from_dict keeps the file's list of lines; a
    hand-made cell may have none)."""
    source = cell.get("source") or ""
    return source if isinstance(source, str) else "".join(source)


def check_notebook(nb, filename: str) -> List[str]:
    """Every way ``nb`` (named ``filename``) breaks the course's notebook format; [] when it is clean.

    Rules: valid nbformat 4; NN_topic.ipynb name; no outputs or execution counts; a ``slideshow``
    slide_type on every cell; the standard header (nbkit.header: Colab badge for this file and a
    ``# title`` in cell 0, the install cell from nbkit.COURSE_REPO skipped on slides in cell 1,
    ``gpu_viz.banner()`` or ``gpu_viz.banner(recorded=True)`` in cell 2); speaker notes only in cell
    metadata (:data:`SPEAKER_NOTES_KEY`), never as cells of their own, and at least one; no markdown cell that says a number is live (measured / timed / a table or speed-up "live") without also saying
    what CPU mode shows instead (``LIVE_CLAIM_RE``, ``CPU_MODE_RE``): in CPU mode nothing is
    timed, and the text must not claim otherwise.
    """
    problems = []
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        problems.append(f"invalid nbformat: {str(exc).splitlines()[0]}")
    if not NAME_RE.match(filename):
        problems.append(f"file name {filename!r} is not NN_topic.ipynb (two digits, lowercase_snake topic)")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            if cell.get("outputs"):
                problems.append(f"cell {i} has outputs (commit notebooks stripped: scripts/strip_notebooks.py)")
            if cell.get("execution_count") is not None:
                problems.append(f"cell {i} has an execution count")
        elif cell.cell_type == "markdown":
            source = _source(cell)
            claim = LIVE_CLAIM_RE.search(source)
            if claim and not CPU_MODE_RE.search(source):
                problems.append(f"cell {i} says {claim.group(0)!r} but not what CPU mode shows "
                                "(nothing timed; a committed record, labelled)")
        st = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        if st not in SLIDE_TYPES:
            problems.append(f"cell {i} has no slideshow slide_type (got {st!r}; write cells with scripts/nbkit.py)")
    for key in EXECUTION_NB_KEYS:
        if key in nb.metadata:
            problems.append(f"notebook metadata has {key!r} from an execution")
    cells = nb.cells
    if len(cells) < 3:
        problems.append("fewer than the 3 header cells")
        return problems
    c0, c1, c2 = cells[:3]
    if c0.cell_type != "markdown" or nbkit.colab_badge(filename) not in _source(c0):
        problems.append(f"cell 0 lacks the Colab badge for this notebook: {nbkit.colab_badge(filename)}")
    if c0.cell_type != "markdown" or not re.search(r"^# \S", _source(c0), re.M):
        problems.append("cell 0 lacks the '# Title' heading")
    if c1.cell_type != "code" or c1.metadata.get("slideshow", {}).get("slide_type") != "skip" \
            or nbkit.install_spec() not in _source(c1) or 'find_spec("gpu_viz")' not in _source(c1):
        problems.append(f"cell 1 is not the install cell (code, slide_type skip, pip install "
                        f"{nbkit.install_spec()!r} when gpu_viz is missing)")
    if c2.cell_type != "code" or not any(call in _source(c2) for call in nbkit.BANNER_CALLS.values()):
        problems.append(f"cell 2 does not call {' or '.join(nbkit.BANNER_CALLS.values())}")
    for i, c in enumerate(cells):
        if c.metadata.get("slideshow", {}).get("slide_type") == "notes":
            problems.append(f"cell {i} is a speaker-notes cell in the learner's way: keep notes in the "
                            f"metadata of the cell above ({SPEAKER_NOTES_KEY!r}; nbkit.write folds nbkit.notes "
                            "cells there, gpu_viz.slides.fold_speaker_notes does it for a notebook)")
    if not any(c.metadata.get(SPEAKER_NOTES_KEY) for c in cells):
        problems.append(f"no speaker notes (cell metadata {SPEAKER_NOTES_KEY!r})")
    return problems


_BADGE_RE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)")
_SPEC_RE = re.compile(r"gpu-viz @ git\+https://github\.com/[^\"'@\s]+@[^\"'\s]+")


def set_repo(nb, filename: str) -> bool:
    """Rewrite the badge (cell 0) and install spec (cell 1) from nbkit's COURSE_REPO; True if changed."""
    changed = False
    if nb.cells and nb.cells[0].cell_type == "markdown":
        new = _BADGE_RE.sub(nbkit.colab_badge(filename).replace("\\", "\\\\"), nb.cells[0].source, count=1)
        changed |= new != nb.cells[0].source
        nb.cells[0].source = new
    if len(nb.cells) > 1 and nb.cells[1].cell_type == "code":
        new = _SPEC_RE.sub(nbkit.install_spec(), nb.cells[1].source, count=1)
        changed |= new != nb.cells[1].source
        nb.cells[1].source = new
    return changed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", help="notebooks (default: notebooks/*.ipynb)")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 on any problem")
    p.add_argument("--set-repo", action="store_true", help="rewrite badge and install cell from nbkit.COURSE_REPO")
    args = p.parse_args(argv)
    paths = [Path(x) for x in args.paths] or sorted(NOTEBOOKS.glob("*.ipynb"))
    bad = 0
    for path in paths:
        try:
            original = path.read_text(encoding="utf-8")
            nb = nbformat.reads(original, as_version=4)
        except OSError as exc:
            print(f"strip_notebooks: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        except (ValueError, nbformat.reader.NotJSONError) as exc:  # not JSON / not a notebook
            print(f"strip_notebooks: {path} is not a notebook: {str(exc).splitlines()[0] if str(exc) else exc}",
                  file=sys.stderr)
            return 2
        strip(nb)
        if args.set_repo:
            set_repo(nb, path.name)
        text = nbformat.writes(nb) + "\n"
        if args.check:
            problems = check_notebook(nbformat.reads(original, as_version=4), path.name)
            if problems:
                bad += 1
                print(f"{path}:\n  " + "\n  ".join(problems))
        elif text != original:
            try:
                path.write_text(text, encoding="utf-8")
            except OSError as exc:
                print(f"strip_notebooks: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
                return 2
            print(f"stripped {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
