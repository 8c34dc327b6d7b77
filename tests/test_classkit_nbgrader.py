"""The class kit through nbgrader's own commands, on one machine, no GPU (CPU mode, the emulator).

1. ``gpu-viz class-kit --out COURSE``; ``nbgrader generate_assignment`` for every assignment: each
   release holds the learner's cells and none of the reference solutions' lines.
2. Three submissions of one lesson (the first with a kernel exercise and a number exercise,
   :func:`classkit_answers.pick_lesson`), each the released notebook as a student edits it:
   ``right`` -- every reference solution; ``wrong`` -- a typical wrong answer to every exercise
   (a catalogue kernel, a WRONG number, picked with the test's seed); ``partial`` -- the kernels
   right, the numbers left unanswered.
3. ``nbgrader autograde``; the scores read back from the gradebook: full marks, none, and the
   kernels' points.
4. ``nbgrader generate_feedback``: the wrong submission's feedback names each mistake (the
   fragment the catalogue or WRONG expects), the unanswered one says "no answer yet", and no
   feedback shows a reference solution.
"""
import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import classkit_answers as answers
from gpu_viz import classkit
from gpu_viz.classkit import source
from gpu_viz.exercises.core import KERNEL

pytestmark = pytest.mark.slow
#: Seconds one nbgrader command may take here (autograde runs a whole lesson; 2 shared CPU cores).
COMMAND_TIMEOUT_S = 600


def _env(course: Path) -> dict:
    env = dict(os.environ)
    env["NBGRADER_EXCHANGE"] = str(course.parent / "exchange")
    env["GPU_VIZ_FORCE_CPU"] = "1"
    # nbgrader runs `alembic` from PATH when it makes a gradebook: the venv's bin first, as an
    # activated venv (or the class image) has it
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def nbgrader(course: Path, *args) -> str:
    """Run ``nbgrader ARGS`` in the course folder; its output (the test fails with it on an error)."""
    cmd = [sys.executable, "-m", "nbgrader", *args]
    r = subprocess.run(cmd, cwd=course, env=_env(course), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"nbgrader {' '.join(args)} exited {r.returncode}:\n{out[-4000:]}"
    return out


def _feedback_text(path: Path) -> str:
    """The feedback page's text, tags dropped and entities decoded (ANSI colour codes too)."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _output_text(cell) -> str:
    """A code cell's outputs as text: streams, results, errors (name, value, traceback)."""
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", [])))
        out.append(str(o.get("data", {}).get("text/plain", "")))
        out += [o.get("ename", ""), o.get("evalue", "")] + list(o.get("traceback", []))
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out))


def _learner_text(path: Path) -> str:
    """What the course notebook shows a learner (every cell but a reference solution's)."""
    nb = nbformat.read(str(path), as_version=4)
    return "\n".join(c.source for c in nb.cells if "solution" not in c.metadata.get("tags", []))


def test_generate_autograde_gradebook_feedback(tmp_path, rng):
    course = tmp_path / "course"
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "gpu_viz.cli", "class-kit", "--out", str(course)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lessons = classkit.lessons()
    assert sorted(p.name for p in (course / "source").iterdir()) == sorted(lessons)

    # 1. every release: the learner's cells, no solution
    nbgrader(course, "generate_assignment", "--CourseDirectory.assignment_id=*")
    for stem, (path, exs) in lessons.items():
        released = nbformat.read(str(course / "release" / stem / f"{stem}.ipynb"), as_version=4)
        text = "\n".join(c.source for c in released.cells)
        assert source.BEGIN_SOLUTION not in text and source.END_SOLUTION not in text, stem
        shown = _learner_text(path)
        for ex in exs:
            leaked = [ln for ln in source.solution_lines(ex, shown) if ln in text]
            assert not leaked, f"{stem}: the release shows {ex.id}'s solution lines {leaked}"
            cells = source.find_exercise_cells(released, ex.id)
            assert cells and set(cells) == {"task", "answer", "test"}, (ex.id, cells and sorted(cells))
            assert ex.placeholder.strip() in "\n".join(ln for ln in cells["answer"].source.splitlines()
                                                         if not ln.startswith("# your answer")), ex.id
            assert cells["test"].metadata["nbgrader"]["points"] == source.points(ex)
    t_release = time.monotonic() - t0

    # 2. three students hand the lesson in
    stem, exs = answers.pick_lesson()
    release = course / "release" / stem / f"{stem}.ipynb"
    wrong = {ex.id: answers.wrong_answer(ex, rng) for ex in exs}
    subs = {"right": {ex.id: answers.right_answer(ex) for ex in exs},
            "wrong": {eid: stmt for eid, (stmt, _frag) in wrong.items()},
            "partial": {ex.id: answers.right_answer(ex) if ex.kind == KERNEL else None for ex in exs}}
    for student, ans in subs.items():
        nb = answers.fill(nbformat.read(str(release), as_version=4), ans)
        folder = course / "submitted" / student / stem
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / f"{stem}.ipynb"))

    # 3. autograde, then the gradebook
    t1 = time.monotonic()
    nbgrader(course, "autograde", stem)
    t_autograde = time.monotonic() - t1
    from nbgrader.api import Gradebook

    total = sum(source.points(ex) for ex in exs)
    kernels = sum(source.points(ex) for ex in exs if ex.kind == KERNEL)
    expected = {"right": total, "wrong": 0, "partial": kernels}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        got = {s: gb.find_submission(stem, s).score for s in subs}
        per_cell = {s: {g.name: g.score for nb in gb.find_submission(stem, s).notebooks for g in nb.grades}
                    for s in subs}
        assert {s: gb.find_submission(stem, s).max_score for s in subs} == {s: total for s in subs}
    assert got == expected, (got, per_cell, {e: f for e, (_s, f) in wrong.items()})
    for s, ans in subs.items():
        for ex in exs:
            want = source.points(ex) if (s == "right" or (s == "partial" and ex.kind == KERNEL)) else 0
            assert per_cell[s][source.grade_id(ex, "test")] == want, (s, ex.id, per_cell[s])

    # 4. feedback: the mistakes named, the unanswered said, no solution shown
    nbgrader(course, "generate_feedback", stem)
    shown = _learner_text(lessons[stem][0])
    pages = {s: _feedback_text(course / "feedback" / s / stem / f"{stem}.html") for s in subs}
    for eid, (_stmt, fragment) in wrong.items():
        assert fragment in pages["wrong"], f"the feedback on {eid} does not name the mistake {fragment!r}"
    assert pages["partial"].count("no answer yet") >= sum(ex.kind != KERNEL for ex in exs)
    assert "earns no points" in pages["partial"]
    for s in subs:
        # what the exercises' cells printed (the verdicts; the lesson's own cells may show the taught
        # kernel, which is not the exercise's answer), against the reference solutions' lines
        graded = nbformat.read(str(course / "autograded" / s / stem / f"{stem}.ipynb"), as_version=4)
        verdicts = "\n".join(_output_text(c) for c in graded.cells if c.metadata.get("exercise_id"))
        assert verdicts.strip(), s
        mine = "\n".join(x for x in subs[s].values() if x)    # a student's own lines may match the solution's
        for ex in exs:
            leaked = [ln for ln in source.solution_lines(ex, shown) if ln in verdicts and ln not in mine]
            assert not leaked, f"the feedback to {s} shows {ex.id}'s solution lines {leaked}"
    print(f"\nrelease of {len(lessons)} assignments {t_release:.0f} s; autograde of 3 submissions of {stem} "
          f"{t_autograde:.0f} s; scores {got} of {total}")
