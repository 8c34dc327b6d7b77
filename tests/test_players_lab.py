"""The players in the live notebook: JupyterLab 4 + ipywidgets 8 in headless Chromium, CPU mode.

One notebook holds every lesson's player (tests/players_cases.py, the CPU model's traces).  The
module runs it as a learner does, at 1440x900:

1. live: each cell shows the live ipywidgets player and hides its static twin; each player fits
   the screen, its drawing keeps its aspect ratio, its source pane wraps nowhere but at our rows.
2. reopened: the notebook saved, its kernel shut down, opened again in a fresh page (a new
   kernel starts, the old widget models are gone: every live twin's output says "model not
   found", which is the bug reproduced): those outputs hidden, no "Error displaying widget" /
   "model not found" visible anywhere, every static player visible, fitting, and stepping when its button is clicked;
   then the same at 900 px wide (a narrow output, as Colab's).

Screenshots go to test-artifacts/lab/ (gitignored).  The server is tests/jupyterlab_session.py's.
"""
import json
import time
from pathlib import Path

import nbformat
import pytest

from jupyterlab_session import lab_server
from players_cases import CASES

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "lab"
SCREEN = {"width": 1440, "height": 900}
NARROW = {"width": 900, "height": 900}
NOTEBOOK = "players.ipynb"
#: Seconds to wait for a notebook to open, for the cells to run, for the widget manager to settle.
OPEN_S, RUN_S, SETTLE_MS = 60, 90, 2500


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("from players_cases import CASES")]
    nb.cells += [nbformat.v4.new_code_cell(f"CASES[{name!r}]('model')[0]") for name in CASES]
    return nb


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    pytest.importorskip("jupyterlab")
    with lab_server(tmp_path_factory.mktemp("lab")) as server:
        nbformat.write(_notebook(), str(server.root / NOTEBOOK))
        yield server


def _open(browser, lab, viewport=SCREEN):
    context = browser.new_context(viewport=viewport)
    pg = context.new_page()
    pg.goto(f"{lab.url}/lab/tree/{NOTEBOOK}")
    pg.wait_for_function("() => window.jupyterapp && document.querySelectorAll('.jp-Notebook .jp-Cell').length > 1",
                         timeout=OPEN_S * 1000)
    pg.wait_for_function(_KERNEL_READY, timeout=OPEN_S * 1000)
    return context, pg


#: The notebook's kernel is connected and idle (an execute request sent before that is dropped).
_KERNEL_READY = """() => { var w = jupyterapp.shell.currentWidget;
  var k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"""


#: ``n`` widget outputs (the live twins) answer "model not found", and every one of them is hidden.
_TWINS_NOT_FOUND = """(n) => { var twins = Array.from(document.querySelectorAll('.jp-OutputArea-child')).filter(
    c => c.querySelector(':scope > .jp-OutputArea-output.lm-Panel'));
  return twins.length === n && twins.every(c => c.textContent.includes('model not found') && c.offsetParent === null); }"""


def _run_all(pg, n_cells):
    """Run every cell (Run > Run All Cells); again if the first request was dropped."""
    for _attempt in range(3):
        pg.click(".jp-Notebook .jp-Cell .jp-InputPrompt")
        pg.evaluate("() => { jupyterapp.commands.execute('notebook:run-all-cells'); return 1 }")
        try:
            pg.wait_for_function("() => Array.from(document.querySelectorAll('.jp-Notebook .jp-InputPrompt'))"
                                 ".some(p => /\\[[0-9*]\\]/.test(p.textContent))", timeout=10000)
            break
        except Exception:
            pg.wait_for_timeout(1000)
    pg.wait_for_function(f"() => Array.from(document.querySelectorAll('.jp-Notebook .jp-InputPrompt'))"
                         f".filter(p => /\\[[0-9]+\\]/.test(p.textContent)).length >= {n_cells}", timeout=RUN_S * 1000)


#: Per player (static or live) in the page: its box, each drawing's rendered and drawn sizes, and
#: the source pane's rows: the line boxes the browser laid out against the rows we wrote.
_MEASURE = """(sel) => Array.from(document.querySelectorAll(sel)).filter(p => p.offsetParent !== null).map(p => {
  var r = p.getBoundingClientRect(), out = {w: r.width, h: r.height, right: r.right, svgs: [], wrapped: [], ws: null};
  p.querySelectorAll('svg.gpu-viz-drawing').forEach(s => {
    var b = s.getBoundingClientRect();
    out.svgs.push({w: b.width, h: b.height, vw: s.viewBox.baseVal.width, vh: s.viewBox.baseVal.height});
  });
  var pre = p.querySelector('pre.gpu-viz-source');
  if (pre) {
    out.ws = getComputedStyle(pre).whiteSpace;
    pre.querySelectorAll('span[data-line]').forEach(span => {
      var range = document.createRange(); range.selectNodeContents(span);
      var tops = new Set(Array.from(range.getClientRects()).filter(q => q.width > 0).map(q => Math.round(q.top)));
      var rows = span.textContent.split('\\n').length;
      if (tops.size > rows) out.wrapped.push(span.dataset.line + ': ' + span.textContent.slice(0, 40));
    });
  }
  return out; })"""


def _check(players, what, viewport):
    assert players, f"{what}: no visible player"
    for k, m in enumerate(players):
        assert m["w"] <= viewport["width"] and m["h"] <= viewport["height"], \
            f"{what} player {k}: {m['w']:.0f}x{m['h']:.0f} does not fit {viewport['width']}x{viewport['height']}"
        assert m["right"] <= viewport["width"] + 0.5, f"{what} player {k} runs past the right edge ({m['right']:.0f})"
        for s in m["svgs"]:
            ratio, drawn = s["w"] / s["h"], s["vw"] / s["vh"]
            assert abs(ratio / drawn - 1) <= 0.01, \
                f"{what} player {k}: drawing shown {s['w']:.0f}x{s['h']:.0f}, drawn {s['vw']:.0f}x{s['vh']:.0f} (stretched)"
            assert s["h"] <= s["vh"] + 0.5, f"{what} player {k}: drawing grown past its drawn height"
        assert m["ws"] in (None, "pre"), f"{what} player {k}: the source pane wraps (white-space: {m['ws']})"
        assert not m["wrapped"], f"{what} player {k}: the browser wrapped source lines {m['wrapped'][:3]}"


def test_live_then_reopened_players(browser, lab):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    n_players = len(CASES)
    # 1. live: run every cell (Shift+Enter from the first), as a learner does
    context, pg = _open(browser, lab)
    _run_all(pg, n_players + 1)
    pg.wait_for_function(f"() => document.querySelectorAll('.gpu-viz-live-player').length >= {n_players}",
                         timeout=RUN_S * 1000)
    pg.wait_for_timeout(SETTLE_MS)
    live = pg.evaluate(_MEASURE, ".gpu-viz-live-player")
    assert len(live) == n_players, f"{len(live)} of {n_players} live players visible"
    assert pg.evaluate("() => Array.from(document.querySelectorAll('.gpu-viz-player')).filter("
                       "p => p.offsetParent !== null).length") == 0, "a static twin shows beside its live player"
    _check(live, "live", SCREEN)
    measured = {"live-1440": live}
    pg.locator(".gpu-viz-live-player").first.scroll_into_view_if_needed()
    pg.screenshot(path=str(ARTIFACTS / "live-1440.png"))
    pg.evaluate("() => jupyterapp.commands.execute('docmanager:save').then(() => 1)")
    deadline = time.monotonic() + 20
    while True:     # saved: every player output and its live twin are in the file
        saved = json.loads((lab.root / NOTEBOOK).read_text())
        outs = [o for c in saved["cells"] for o in c.get("outputs", [])]
        if sum(bool(o.get("metadata", {}).get("gpu_viz", {}).get("live")) for o in outs) == n_players:
            break
        assert time.monotonic() < deadline, "the notebook was not saved with its outputs"
        time.sleep(0.3)
    context.close()
    assert lab.shutdown_kernels() >= 1

    # 2. reopened later: a fresh page, a fresh kernel, the widget models of the saved run gone
    for viewport, tag in ((SCREEN, "1440"), (NARROW, "900")):
        context, pg = _open(browser, lab, viewport)
        pg.wait_for_function(f"() => document.querySelectorAll('.gpu-viz-player').length >= {n_players}",
                             timeout=OPEN_S * 1000)
        # the bug reproduced: every live twin's saved model is gone ("model not found"), its output hidden
        pg.wait_for_function(_TWINS_NOT_FOUND, arg=n_players, timeout=OPEN_S * 1000)
        pg.wait_for_timeout(SETTLE_MS)
        text = pg.evaluate("() => document.querySelector('.jp-Notebook').innerText")
        assert "Error displaying widget" not in text and "model not found" not in text, text[:500]
        assert "Loading widget" not in text
        static = pg.evaluate(_MEASURE, ".gpu-viz-player")
        assert len(static) == n_players, f"{len(static)} of {n_players} static players visible after reopening"
        _check(static, f"reopened at {tag} px", viewport)
        measured[f"reopened-{tag}"] = static
        (ARTIFACTS / "measured.json").write_text(json.dumps(measured, indent=1))
        player = pg.locator(".gpu-viz-player").first
        player.scroll_into_view_if_needed()
        pg.screenshot(path=str(ARTIFACTS / f"reopened-{tag}.png"))
        before = player.locator(".gpu-viz-draw").inner_html()
        n = int(player.get_attribute("data-frames"))
        assert player.locator(".gpu-viz-counter").inner_text() == f"frame 1 of {n}"
        player.locator("button[data-act=next]").click()
        assert player.get_attribute("data-frame") == "1", "the reopened static player did not step"
        assert player.locator(".gpu-viz-draw").inner_html() != before, "stepping did not change the drawing"
        assert player.locator(".gpu-viz-counter").inner_text() == f"frame 2 of {n}"
        pg.screenshot(path=str(ARTIFACTS / f"reopened-{tag}-stepped.png"))
        context.close()
        lab.shutdown_kernels()
