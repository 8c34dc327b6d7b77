"""The class kit (gpu_viz.classkit) without running nbgrader: what ``gpu-viz class-kit`` writes.

* every course notebook with exercises becomes ``source/<lesson>/<lesson>.ipynb``; nbgrader's own
  metadata validator accepts it; each exercise of the registry is there as task (locked markdown),
  answer (solution cell: the learner's cell with the reference solution in a BEGIN/END SOLUTION
  region), test (locked, graded, with points); no reference-solution cell of the course notebook
  is carried over;
* nbgrader's ClearSolutions (what ``generate_assignment`` runs) turns each answer cell into the
  learner's cell of the course notebook, and the release holds no line of the solution;
* run as a student would: the answer with the solution region passes its test cell; the released
  (unanswered) cell and a wrong answer fail it with the verdict's text -- an answer the checker
  does not grade earns nothing, unlike the verdict's plain ``require()``;
* nbgrader_config.py holds the cell timeout (at least ten times the slowest grading, measured)
  and the learner-kernel timeout, which reaches the kernel graders while a test cell runs;
* the folder is an OwnedFolder: a folder with files the kit did not write is refused, nothing
  changed; running the kit again over its own folder works; the CLI says what went wrong.
"""
import os
import subprocess
import sys
import time

import nbformat
import pytest

from gpu_viz import backend, classkit, exercises as ex
from gpu_viz.classkit import source
from gpu_viz.exercises import kernel_task
from gpu_viz.exercises.core import KERNEL
from gpu_viz.outdir import FolderError

import classkit_answers as answers

EXERCISES = ex.exercises()


@pytest.fixture
def cpu_mode(monkeypatch):
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    out = tmp_path_factory.mktemp("kit") / "course"
    classkit.build(out)
    return out


def _released(cell_source: str) -> str:
    """An answer cell as nbgrader's ClearSolutions leaves it, with the kit's stub."""
    from nbgrader.preprocessors import ClearSolutions
    from traitlets.config import Config

    cfg = Config()
    cfg.ClearSolutions.code_stub = {"python": "# STUB"}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    cell = nbformat.v4.new_code_cell(cell_source, metadata={"nbgrader": {"solution": True, "grade": False,
                                                                          "locked": False, "grade_id": "x",
                                                                          "schema_version": 3}})
    nb.cells = [cell]
    nb, _ = ClearSolutions(config=cfg).preprocess(nb, {})
    return nb.cells[0].source


def test_every_lesson_with_exercises_is_an_assignment_nbgrader_accepts(kit):
    from nbgrader.nbgraderformat import MetadataValidator

    lessons = classkit.lessons()
    assert lessons and sorted(p.name for p in (kit / "source").iterdir()) == sorted(lessons)
    assert {e.id for _p, exs in lessons.values() for e in exs} == {e.id for e in EXERCISES}
    for stem, (_path, exs) in lessons.items():
        nb = nbformat.read(str(kit / "source" / stem / f"{stem}.ipynb"), as_version=4)
        MetadataValidator().validate_nb(nb)        # nbgrader's own check of the cell metadata
        assert not [c for c in nb.cells if "solution" in c.metadata.get("tags", [])], stem
        for e in exs:
            cells = source.find_exercise_cells(nb, e.id)
            assert cells and sorted(cells) == ["answer", "task", "test"], (e.id, cells and sorted(cells))
            task, answer, test = cells["task"], cells["answer"], cells["test"]
            assert task.cell_type == "markdown" and task.metadata.nbgrader["locked"] and not task.metadata.nbgrader["grade"]
            assert answer.metadata.nbgrader["solution"] and not answer.metadata.nbgrader["locked"]
            assert test.metadata.nbgrader["grade"] and test.metadata.nbgrader["locked"]
            assert test.metadata.nbgrader["points"] == source.points(e) > 0
            assert f"classkit.grade({e.id!r}" in test.source and source.RAISES in test.metadata.tags
            assert source.BEGIN_SOLUTION in answer.source and source.END_SOLUTION in answer.source
            assert e.title in task.source
            # in the notebook's order: task, answer, test, one after the other
            idx = [nb.cells.index(cells[r]) for r in ("task", "answer", "test")]
            assert idx == list(range(idx[0], idx[0] + 3)), (e.id, idx)


@pytest.mark.parametrize("eid", [e.id for e in EXERCISES])
def test_release_is_the_learners_cell_and_holds_no_solution(eid):
    e = ex.get(eid)
    cell = source.exercise_cells(e)[1].source
    released = _released(cell)
    assert released.replace("\n# STUB", "") == e.placeholder.rstrip("\n"), released
    leaked = [ln for ln in source.solution_lines(e) if ln in released]
    assert not leaked and source.solution_lines(e), (leaked, source.solution_lines(e))


def _run(code: str, ns: dict):
    exec(compile(code, "<cell>", "exec"), ns)


@pytest.mark.parametrize("eid", [pytest.param(e.id, marks=[pytest.mark.slow] if e.kind == KERNEL else [])
                                 for e in EXERCISES])
def test_solution_passes_the_test_cell_and_the_release_fails_it(eid, cpu_mode, capsys):
    """The source notebook's answer cell then its test cell, as nbgrader's autograde runs them:
    the solution passes; the released (unanswered) cell fails."""
    e = ex.get(eid)
    _task, answer, test = source.exercise_cells(e)
    ns = {}
    _run(answer.source, ns)
    _run(test.source, ns)
    assert f"[{eid}] correct:" in capsys.readouterr().out
    ns = {}
    _run(_released(answer.source), ns)
    with pytest.raises(classkit.NotYet) as info:
        _run(test.source, ns)
    # a number left None is not graded (and earns nothing); a kernel's starter is graded, and wrong
    assert (f"[{eid}] not yet" if e.kind == KERNEL else "no answer yet") in str(info.value), str(info.value)


def test_a_wrong_answer_fails_the_test_cell_naming_the_mistake(cpu_mode, rng):
    """One typical wrong number per number exercise (tests/test_exercises.py WRONG)."""
    for e in EXERCISES:
        if e.kind == KERNEL:
            continue
        stmt, fragment = answers.wrong_answer(e, rng)
        ns = {}
        _run(answers.answer_cell(e, stmt), ns)
        with pytest.raises(classkit.NotYet) as info:
            _run(source.exercise_cells(e)[2].source, ns)
        assert f"[{e.id}] not yet" in str(info.value) and fragment in str(info.value)
        shown = info.value._render_traceback_()
        assert fragment in "\n".join(shown) and "Traceback" not in "\n".join(shown)


def test_an_ungraded_verdict_earns_nothing(monkeypatch):
    """A verdict the checker could not give here (ok is None: no NVRTC, no answer) passes the
    reference solutions' require() but must fail an autograded cell."""
    eid = EXERCISES[0].id
    monkeypatch.setattr(ex, "check", lambda *a, **k: ex.Verdict(eid, None, "not graded: needs NVRTC"))
    assert ex.check(eid, 1).require().ok is None       # what a plain require() lets through
    with pytest.raises(classkit.NotYet, match="earns no points"):
        classkit.grade(eid, 1)


def test_the_learner_kernel_timeout_reaches_the_graders(monkeypatch):
    seen = {}

    def fake_check(eid, answer, **options):
        seen["limits"] = kernel_task.time_limits()
        return ex.Verdict(eid, True, "fine")

    assert classkit.KERNEL_TIMEOUT_ENV == kernel_task.KERNEL_TIMEOUT_ENV
    monkeypatch.setattr(ex, "check", fake_check)
    monkeypatch.setenv(classkit.KERNEL_TIMEOUT_ENV, "12.5")
    classkit.grade(EXERCISES[0].id, 1)
    assert seen["limits"] == (12.5, 12.5)
    monkeypatch.delenv(classkit.KERNEL_TIMEOUT_ENV)
    assert kernel_task.time_limits() == (kernel_task.GPU_TIMEOUT_S, kernel_task.EMU_SECONDS)
    for bad in ("0", "-3", "soon", "inf", "nan"):
        monkeypatch.setenv(classkit.KERNEL_TIMEOUT_ENV, bad)
        with pytest.raises(ValueError, match=classkit.KERNEL_TIMEOUT_ENV):
            classkit.grade(EXERCISES[0].id, 1)


def test_the_emulator_stops_a_learner_kernel_at_the_timeout(monkeypatch):
    """The limit reaches the emulated launch itself: a kernel that spins without end is stopped by
    the seconds the environment sets, long before the default."""
    import dataclasses
    import time

    from gpu_viz.exercises import core, warps_simt

    # the seconds, not the warp-instruction budget, must stop it: the task's budget made endless
    monkeypatch.setattr(warps_simt, "TASK", dataclasses.replace(warps_simt.TASK, budget=lambda case: 10**12))
    monkeypatch.setenv(classkit.KERNEL_TIMEOUT_ENV, "1.5")
    spin = ('extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) '
            '{ volatile int k = 0; while (true) { k = k + 1; } }')
    t0 = time.perf_counter()
    v = ex.check("warps_simt.vector_add", spin)
    took = time.perf_counter() - t0
    assert v.ok is False and 1.5 <= took < kernel_task.EMU_SECONDS and "did not finish in 1.5 s" in v.message, \
        (took, v.text())
    assert core.get("warps_simt.vector_add")


def _config(path):
    from traitlets.config.loader import PyFileConfigLoader

    env = dict(os.environ)
    try:
        cfg = PyFileConfigLoader(path.name, path=str(path.parent)).load_config()
        return cfg, os.environ.get(classkit.KERNEL_TIMEOUT_ENV)
    finally:
        os.environ.clear()
        os.environ.update(env)


def test_nbgrader_config_sets_the_timeouts_course_and_stub(kit, monkeypatch):
    monkeypatch.delenv(classkit.KERNEL_TIMEOUT_ENV, raising=False)
    cfg, kernel_timeout = _config(kit / "nbgrader_config.py")
    assert cfg.Execute.timeout == classkit.CELL_TIMEOUT_S
    assert kernel_timeout == str(classkit.KERNEL_TIMEOUT_S)
    assert cfg.CourseDirectory.course_id == classkit.DEFAULT_COURSE_ID
    assert cfg.ClearSolutions.code_stub["python"].startswith("#")    # a comment: the released cell runs
    student, _ = _config(kit / "hub" / "student" / "nbgrader_config.py")
    assert student.CourseDirectory.course_id == classkit.DEFAULT_COURSE_ID
    assert student.Exchange.root == cfg.Exchange.root


@pytest.mark.slow
def test_cell_timeout_covers_the_slowest_grading_ten_times_over(cpu_mode):
    """Every exercise's reference solution graded, timed: the slowest (a block reduction's 75
    emulated launches) within a tenth of nbgrader's cell timeout."""
    times = {}
    for e in EXERCISES:
        t0 = time.perf_counter()
        ns = {}
        _run(source.exercise_cells(e)[1].source, ns)
        times[e.id] = time.perf_counter() - t0
    slowest = max(times, key=times.get)
    print(f"\nslowest grading: {slowest} {times[slowest]:.1f} s (cell timeout {classkit.CELL_TIMEOUT_S} s)")
    assert 10 * times[slowest] <= classkit.CELL_TIMEOUT_S, times


def test_a_folder_with_other_files_is_refused_and_left_alone(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(FolderError, match="notes.txt"):
        classkit.build(out)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    paths = classkit.build(out, force=True)             # beside them, never over them
    assert (out / "notes.txt").read_text() == "my notes" and len(paths) > 10


def test_the_kit_can_be_written_again_and_keeps_an_edited_file(tmp_path):
    out = tmp_path / "course"
    classkit.build(out)
    classkit.build(out)                                  # its own folder: accepted
    (out / "nbgrader_config.py").write_text("# the instructor's own settings\n")
    with pytest.raises(FolderError, match="nbgrader_config.py"):
        classkit.build(out)
    with pytest.raises(FolderError, match="will not overwrite"):
        classkit.build(out, force=True)
    assert (out / "nbgrader_config.py").read_text() == "# the instructor's own settings\n"


def test_cli(tmp_path):
    out = tmp_path / "course"
    run = [sys.executable, "-m", "gpu_viz.cli", "class-kit"]
    r = subprocess.run(run + ["--out", str(out), "--course-id", "gpu101"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "README.md" in r.stdout, r.stderr
    assert 'course_id = "gpu101"' in (out / "nbgrader_config.py").read_text()
    assert os.access(out / "hub" / "install-course.sh", os.X_OK)
    r = subprocess.run(run + ["--out", str(tmp_path / "x"), "--course-id", "a b"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "course_id must be" in r.stderr and not (tmp_path / "x").exists()
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "keep.txt").write_text("x")
    r = subprocess.run(run + ["--out", str(tmp_path / "y")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "keep.txt" in r.stderr and "--force" in r.stderr
    r = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--out" in r.stderr


def _fake(**kw):
    base = dict(id="99.fake", notebook="99_fake", kind="predict-then-run", title="Fake", task="t",
                placeholder="from gpu_viz import exercises as ex\nanswer = None\nex.check('99.fake', answer)",
                solution="from gpu_viz import exercises as ex\nanswer = 3\nex.check('99.fake', answer).require()",
                before=None, given=dict, check=None)
    base.update(kw)
    return ex.Exercise(**base)


@pytest.mark.parametrize("kw, words", [
    (dict(solution="answer = 3\nex.check('99.fake', answer)"), "must end with `<verdict>.require()`"),
    (dict(placeholder="answer = None\nprint(answer)"), "never calls `ex.check('99.fake'"),
    (dict(placeholder="answer = (None"), "not valid Python"),
    (dict(solution="from gpu_viz import exercises as ex\nanswer = None\nex.check('99.fake', answer).require()"),
     "adds nothing"),
])
def test_an_exercise_the_kit_cannot_split_is_named(kw, words):
    with pytest.raises(source.ClassKitError, match="99.fake") as info:
        source.split(_fake(**kw))
    assert words in str(info.value)


def test_a_notebook_and_the_registry_that_disagree_are_named():
    e = _fake()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# intro")]
    with pytest.raises(source.ClassKitError, match="no cell of exercise"):
        source.source_notebook(nb, "99_fake", [e])
    nb.cells.append(nbformat.v4.new_code_cell("x", metadata={"exercise_id": "98.other"}))
    with pytest.raises(source.ClassKitError, match="98.other"):
        source.source_notebook(nb, "99_fake", [e])


def _hub_config(kit, tmp_path, **env):
    """Load the kit's hub/jupyterhub_config.py as JupyterHub does, in a child process with ``env``;
    (exit code, the settings that matter as JSON or the error)."""
    code = ("import json, sys; from traitlets.config.loader import PyFileConfigLoader\n"
            f"c = PyFileConfigLoader('jupyterhub_config.py', path={str(kit / 'hub')!r}).load_config()\n"
            "print(json.dumps({'bind_url': c.JupyterHub.bind_url, 'spawner': c.JupyterHub.spawner_class,"
            " 'auth': c.JupyterHub.authenticator_class, 'allowed': sorted(c.Authenticator.allowed_users or []),"
            " 'admins': sorted(c.Authenticator.admin_users or []), 'env': c.Spawner.environment,"
            " 'args': c.Spawner.args}))")
    full = {k: v for k, v in os.environ.items() if not k.startswith("CLASS_HUB_")}
    full.update(CLASS_HUB_STATE=str(tmp_path / "state"), **env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)
    return r.returncode, (r.stdout if r.returncode == 0 else r.stderr)


ROOT_OK = {"CLASS_HUB_ALLOW_ROOT": "1"} if os.geteuid() == 0 else {}


@pytest.mark.parametrize("env, words", [
    ({}, "CLASS_HUB_PASSWORD"),
    ({"CLASS_HUB_PASSWORD": "short"}, "8 characters"),
    ({"CLASS_HUB_PASSWORD": "long-enough", "CLASS_HUB_ADMINS": "me"}, "CLASS_HUB_ADMIN_PASSWORD"),
    ({"CLASS_HUB_PASSWORD": "long-enough", "CLASS_HUB_ADMINS": "me", "CLASS_HUB_ADMIN_PASSWORD": "x" * 31},
     "32 characters"),
])
def test_the_hub_config_refuses_what_would_lock_people_out(kit, tmp_path, env, words):
    rc, out = _hub_config(kit, tmp_path, **{**ROOT_OK, **env})
    assert rc != 0 and words in out, out


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal to run as root needs root to be seen")
def test_the_hub_config_refuses_root_unless_told(kit, tmp_path):
    rc, out = _hub_config(kit, tmp_path, CLASS_HUB_PASSWORD="long-enough")
    assert rc != 0 and "not root" in out and "CLASS_HUB_ALLOW_ROOT" in out


def test_the_hub_config_serves_locally_with_the_students_settings(kit, tmp_path):
    rc, out = _hub_config(kit, tmp_path, CLASS_HUB_PASSWORD="long-enough", CLASS_HUB_USERS="ada, grace,linus",
                          CLASS_HUB_ADMINS="prof", CLASS_HUB_ADMIN_PASSWORD="p" * 32, **ROOT_OK)
    assert rc == 0, out
    import json

    c = json.loads(out)
    assert c["bind_url"] == "http://127.0.0.1:8000" and c["spawner"] == "simple" and c["auth"] == "shared-password"
    assert c["allowed"] == ["ada", "grace", "linus", "prof"] and c["admins"] == ["prof"]
    assert c["env"]["JUPYTER_CONFIG_PATH"] == str(kit / "hub" / "student")
    assert c["env"]["NBGRADER_EXCHANGE"] == str(tmp_path / "state" / "exchange")


def test_the_hub_tests_clean_up_stops_every_process_it_started(tmp_path, monkeypatch):
    """tests/hub_session.stop on a stand-in for a hub: a process that ignores SIGTERM and has
    started a child in a session of its own (as the spawner starts a student's server) and a
    grandchild under it (a kernel).  Every one of them is stopped, by PID and process group."""
    import signal

    from hub_session import Hub, _alive, stop

    tree = tmp_path / "tree.py"
    tree.write_text(
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "if sys.argv[1:] != ['leaf']:\n"
        "    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 0\n"
        "    nxt = [sys.executable, __file__, str(depth + 1)] if depth < 1 else [sys.executable, __file__, 'leaf']\n"
        "    subprocess.Popen(nxt, start_new_session=True)\n"
        "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, str(tree)], start_new_session=True)
    hub = Hub("http://127.0.0.1:1", tmp_path, tmp_path, tmp_path, proc, tmp_path / "log", {})
    deadline = time.monotonic() + 30
    while hub.record() < 3:
        assert time.monotonic() < deadline, "the stand-in did not start its children"
        time.sleep(0.1)
    seen = dict(hub.seen)
    assert len({g for g, _t in seen.values()}) == 3          # three process groups
    import hub_session

    monkeypatch.setattr(hub_session, "STOP_TIMEOUT_S", 2)    # it ignores SIGTERM: do not wait long
    stop(hub)
    assert not [p for p, (_g, t) in seen.items() if _alive(p, t)]
    assert proc.poll() is not None and proc.returncode == -signal.SIGKILL


def test_statements_sharing_a_line_keep_the_cells_lines():
    """Bug class: two statements on one line (``a(); b()``) made an empty segment, and the released
    cell lost the blank line after them."""
    head = "from gpu_viz import exercises as ex\nx = 1; y = 2\n\nprint(x)\n"
    e = _fake(placeholder=head + "answer = None\nex.check('99.fake', answer)",
              solution=head + "answer = 3\nex.check('99.fake', answer).require()")
    cell = source.exercise_cells(e)[1].source
    assert _released(cell).replace("\n# STUB", "") == e.placeholder, _released(cell)


def _no_scan(monkeypatch):
    """Make reading a folder's files, or building the kit's notebooks, fail the test: a refused
    --out must be refused before either."""
    from gpu_viz import outdir

    def scanned(*_a, **_k):
        raise AssertionError("the folder was read before --out was refused")

    monkeypatch.setattr(outdir.OwnedFolder, "_present", scanned)
    monkeypatch.setattr(outdir.os, "walk", scanned)
    monkeypatch.setattr(classkit, "lessons", scanned)


@pytest.mark.parametrize("out, words", [
    ("", "--out is empty: name a folder (e.g. --out class-kit)"),
    ("   ", "--out is empty"),
    ("/", "--out /: the root of the file system"),
    ("~", "--out ~: your home folder"),
    ("HOME", "your home folder"),
    ("HOME/..", "a folder holding your home folder"),
    ("HOME/../home", "your home folder"),
])
def test_an_out_no_kit_should_own_is_refused_at_once(tmp_path, monkeypatch, capsys, out, words):
    """Bug class: `--out ""` was taken as the current folder and every file under it read (17,902)
    before the kit refused it; `--out /` read 1.28 million.  An empty --out, a file system's root,
    the home folder and a folder holding it are refused before anything is read or built, with
    exit 2 and a message naming --out and what to pass."""
    from gpu_viz import cli

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    out = out.replace("HOME", str(home))
    _no_scan(monkeypatch)
    with pytest.raises(FolderError, match=words.replace("(", r"\(").replace(")", r"\)")):
        classkit.build(out)
    assert cli.main(["class-kit", "--out", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpu-viz class-kit: --out") and words in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"] and list(home.iterdir()) == []


def test_the_rule_is_the_slides_rule_too(tmp_path, monkeypatch):
    """One rule for every folder a gpu-viz command owns (gpu_viz.outdir.check_root): the slides'
    OwnedFolder refuses the root and the home folder before reading them, and a folder inside
    the home folder, or the current folder named ".", is still accepted."""
    from gpu_viz import outdir

    monkeypatch.setenv("HOME", str(tmp_path))
    _no_scan(monkeypatch)
    for bad in ("/", tmp_path, tmp_path.parent):
        with pytest.raises(FolderError, match="--out"):
            outdir.OwnedFolder(bad, "--out")
    with pytest.raises(FolderError, match="--out is empty"):
        outdir.OwnedFolder("", "--out")
    assert outdir.check_root(tmp_path / "decks") == tmp_path / "decks"
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert outdir.check_root(".") == outdir.Path(".")
