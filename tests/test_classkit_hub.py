"""A class on one machine: the class kit's JupyterHub (tests/hub_session.py), three students in
headless Chromium, nbgrader's exchange, the instructor's autograde.  CPU mode, no GPU.

The instructor writes the kit, generates and releases one lesson (the first with a kernel
exercise and a number exercise).  Then each student, one after another (two shared cores: one
lesson runs at a time, the servers stay up):

1. signs in on the hub's login page (name + the room's password); the hub starts their JupyterLab;
2. fetches the lesson in nbgrader's Assignments tab and opens it;
3. writes answers in the answer cells (ada: all right; grace: a wrong kernel from the catalogue;
   linus: wrong numbers from tests/test_exercises.py WRONG), runs the whole notebook, and sees
   each exercise graded in its test cell ("correct", or "not yet" naming the mistake);
4. presses play on the lesson's live player and sees its frame counter move;
5. saves and submits in the Assignments tab.

The three servers run side by side at the end.  The instructor then runs ``nbgrader collect`` and
``nbgrader autograde``; the gradebook holds each student's expected score.  Every process the hub
started is stopped by PID on the way out, pass or fail (hub_session.stop).
"""
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import classkit_answers as answers
from conftest_browser import in_ci
from gpu_viz import classkit
from gpu_viz.classkit import source
from gpu_viz.exercises.core import KERNEL
from hub_session import PASSWORD, class_hub, proxy_command

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "hub"
#: Seconds: sign-in and the student's server starting; the lesson running; the player moving.
SPAWN_S, RUN_S, PLAY_S = 120, 240, 30
#: Seconds an idle kernel may sit with cells left before the run counts as stopped.
STALL_S = 15
VIEWPORT = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    if not proxy_command():
        msg = "configurable-http-proxy is not on PATH (npm install -g configurable-http-proxy; .ci/run does)"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    out = tmp_path_factory.mktemp("class") / "kit"
    classkit.build(out)
    return out


def _nbgrader(hub, *args):
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=hub.kit, env=hub.env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, f"nbgrader {' '.join(args)}:\n{(r.stdout + r.stderr)[-4000:]}"


def _answers(exs, rng):
    """Each student's answers (exercise id -> statements) and the fragment each verdict must show."""
    right = {ex.id: answers.right_answer(ex) for ex in exs}
    plans = {"ada": {}, "grace": {}, "linus": {}}
    for ex in exs:
        if ex.kind == KERNEL:
            plans["grace"][ex.id] = answers.wrong_answer(ex, rng)
        else:
            plans["linus"][ex.id] = answers.wrong_answer(ex, rng)
    out = {}
    for student, wrong in plans.items():
        stmts = {ex.id: answers.answer_cell(ex, wrong[ex.id][0] if ex.id in wrong else right[ex.id]) for ex in exs}
        expect = {eid: ("not yet", wrong[eid][1]) if eid in wrong else ("correct", "") for eid in right}
        score = sum(source.points(ex) for ex in exs if ex.id not in wrong)
        out[student] = (stmts, expect, score)
    return out


_SET_ANSWERS = """(answers) => { var cells = jupyterapp.shell.currentWidget.content.widgets, n = 0;
  cells.forEach(c => { var eid = c.model.getMetadata('exercise_id'), g = c.model.getMetadata('nbgrader');
    if (eid && g && g.solution && eid in answers) { c.model.sharedModel.setSource(answers[eid]); n++; } });
  return n; }"""

_KERNEL_IDLE = """() => { var w = jupyterapp.shell.currentWidget;
  var k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"""

#: How many code cells have run (an execution count in their prompt), and whether the kernel is idle.
_PROGRESS = """() => { var w = jupyterapp.shell.currentWidget, k = w.sessionContext.session.kernel;
  var done = w.content.widgets.filter(c => c.model.type === 'code' && c.model.executionCount).length;
  return [done, k.status]; }"""

#: Each test cell's outputs as the notebook holds them (text, or the error's name and value): the
#: page renders only the cells near the view, so the model is read, and the cell is then shown.
_TEST_OUTPUTS = """() => { var out = {};
  jupyterapp.shell.currentWidget.content.widgets.forEach(c => { var eid = c.model.getMetadata('exercise_id'),
      g = c.model.getMetadata('nbgrader');
    if (eid && g && g.grade) out[eid] = c.model.outputs.toJSON().map(o => o.text ||
        (o.ename ? o.ename + ': ' + o.evalue : JSON.stringify(o.data || {}))).join('\\n'); });
  return out; }"""

_SHOW_TEST_CELL = """(eid) => { var nb = jupyterapp.shell.currentWidget.content;
  var k = nb.widgets.findIndex(c => c.model.getMetadata('exercise_id') === eid && (c.model.getMetadata('nbgrader') || {}).grade);
  nb.activeCellIndex = k; nb.scrollToItem(k, 'center'); return k; }"""

#: The test cell of exercise ``eid`` is on screen and shows ``text``.
_TEST_CELL_SHOWS = """([eid, text]) => { var nb = jupyterapp.shell.currentWidget.content;
  var c = nb.widgets.find(c => c.model.getMetadata('exercise_id') === eid && (c.model.getMetadata('nbgrader') || {}).grade);
  var r = c.node.getBoundingClientRect();
  return c.node.innerText.includes(text) && r.bottom > 0 && r.top < window.innerHeight; }"""


def _sign_in(browser, hub, student):
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.goto(f"{hub.url}/hub/login")
    pg.fill("#username_input", student)
    pg.fill("#password_input", PASSWORD)
    pg.click("#login_submit")
    pg.wait_for_url(f"**/user/{student}/lab**", timeout=SPAWN_S * 1000)
    pg.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=SPAWN_S * 1000)
    pg.evaluate("() => jupyterapp.restored.then(() => 1)")
    return context, pg


def _assignments_tab(pg):
    pg.wait_for_function("() => jupyterapp.commands.hasCommand('nbgrader:open-assignment-list')", timeout=30000)
    pg.evaluate("() => jupyterapp.commands.execute('nbgrader:open-assignment-list').then(() => 1)")


def _student(browser, hub, student, stem, stmts, expect, n_code):
    context, pg = _sign_in(browser, hub, student)
    try:
        # fetch through nbgrader's exchange, then open the fetched notebook
        _assignments_tab(pg)
        pg.locator("#released_assignments_list .list_item", has_text=stem).locator("button", has_text="Fetch").click()
        pg.locator("#fetched_assignments_list .list_item", has_text=stem).first.wait_for(timeout=30000)
        assert (hub.home(student) / stem / f"{stem}.ipynb").is_file(), "the fetched lesson is not in the home folder"
        pg.evaluate("(p) => jupyterapp.commands.execute('docmanager:open', {path: p}).then(() => 1)",
                    f"{stem}/{stem}.ipynb")
        pg.wait_for_function("() => { var w = jupyterapp.shell.currentWidget; return w && w.content && "
                             "w.content.widgets && w.content.widgets.length > 5; }", timeout=60000)
        pg.wait_for_function(_KERNEL_IDLE, timeout=60000)
        # write the answers, run the lesson
        assert pg.evaluate(_SET_ANSWERS, stmts) == len(stmts)
        t0 = moved = time.monotonic()
        pg.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells').then(() => 1)")
        seen = -1
        while True:
            done, status = pg.evaluate(_PROGRESS)
            if done >= n_code and status == "idle":
                break
            now = time.monotonic()
            if done != seen or status != "idle":
                seen, moved = done, now
            # an idle kernel with cells left: "Run All" stopped (a failing cell it did not go past)
            assert now - moved < STALL_S, f"{student}: Run All stopped after {done} of {n_code} code cells"
            assert now - t0 < RUN_S, f"{student}: {done} of {n_code} code cells ran in {RUN_S} s"
            pg.wait_for_timeout(500)
        t_run = time.monotonic() - t0
        # each exercise graded in its test cell
        shown = pg.evaluate(_TEST_OUTPUTS)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for eid, (word, fragment) in expect.items():
            text = shown.get(eid, "")
            assert f"[{eid}] {word}" in text and fragment in text, f"{student}, {eid}: test cell holds {text[:600]!r}"
            pg.evaluate(_SHOW_TEST_CELL, eid)
            pg.wait_for_function(_TEST_CELL_SHOWS, arg=[eid, f"[{eid}] {word}"], timeout=20000)
            pg.screenshot(path=str(ARTIFACTS / f"{student}-{eid}.png"))
        # the lesson's live player plays
        player = pg.locator(".gpu-viz-live-player").first
        player.scroll_into_view_if_needed()
        counter = player.locator(".gpu-viz-counter")
        first = counter.inner_text()
        player.locator(".widget-play button").first.click()
        pg.wait_for_function("([el, t]) => el.innerText !== t", arg=[counter.element_handle(), first],
                             timeout=PLAY_S * 1000)
        pg.screenshot(path=str(ARTIFACTS / f"{student}-player.png"))
        # save and submit
        pg.evaluate("() => jupyterapp.commands.execute('docmanager:save').then(() => 1)")
        _assignments_tab(pg)
        pg.locator("#fetched_assignments_list .list_item", has_text=stem).locator("button", has_text="Submit").first.click()
        pg.locator("#submitted_assignments_list .list_item", has_text=stem).first.wait_for(timeout=30000)
        pg.screenshot(path=str(ARTIFACTS / f"{student}-submitted.png"))
        # the student leaves: their kernel stops (their server stays up)
        pg.evaluate("() => jupyterapp.serviceManager.sessions.shutdownAll().then(() => 1)")
        return t_run
    except Exception:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / f"{student}-failed.png"))
        raise
    finally:
        context.close()


def test_three_students_fetch_run_submit_and_are_autograded(browser, kit, tmp_path, rng):
    stem, exs = answers.pick_lesson()
    plans = _answers(exs, rng)
    t0 = time.monotonic()
    with class_hub(kit, tmp_path, singleuser_args="--LabApp.expose_app_in_browser=True") as hub:
        try:
            _nbgrader(hub, "generate_assignment", stem)
            _nbgrader(hub, "release_assignment", stem)
            released = nbformat.read(str(kit / "release" / stem / f"{stem}.ipynb"), as_version=4)
            n_code = sum(c.cell_type == "code" for c in released.cells)
            runs = {}
            for student, (stmts, expect, _score) in plans.items():
                runs[student] = _student(browser, hub, student, stem, stmts, expect, n_code)
                hub.record()
            servers = [p for p in hub.seen if _cmdline(p).count("jupyterhub-singleuser")]
            assert len([p for p in servers if _running(p)]) == 3, "three students' servers are not all up"
            # the instructor: collect from the exchange, autograde, read the gradebook
            _nbgrader(hub, "collect", stem)
            _nbgrader(hub, "autograde", stem)
        except Exception as exc:
            raise AssertionError(f"{exc}\n--- the hub's log ---\n{hub.log_tail()}") from exc
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{kit / 'gradebook.db'}") as gb:
        scores = {s: gb.find_submission(stem, s).score for s in plans}
    assert scores == {s: plan[2] for s, plan in plans.items()}, scores
    print(f"\nhub test: lesson {stem}; runs {', '.join(f'{s} {t:.0f} s' for s, t in runs.items())}; "
          f"scores {scores}; {time.monotonic() - t0:.0f} s in all")


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] not in (b"Z", b"X")
    except OSError:
        return False
