"""The live widgets work under ipywidgets 8 (this venv) AND 7.7.1 (what Colab ships).

Each major runs the same check script in a fresh subprocess: 7.7.1 is pip-installed once into
build/ipywidgets-7.7.1 (`--no-deps`, with the widgetsnbextension 3.6 / jupyterlab_widgets 1 it
pairs with) and put first on PYTHONPATH.  The script builds every live widget, drives it like a
learner would (slider, step buttons) and checks the frame shown.  A static scan also checks that
every `ipywidgets.<Name>` the package and notebooks use exists in both majors.

Add a new live widget to CHECK_SCRIPT's `factories` below.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IPYW7_DIR = ROOT / "build" / "ipywidgets-7.7.1"
IPYW7_SPECS = ["ipywidgets==7.7.1", "widgetsnbextension==3.6.*", "jupyterlab_widgets==1.*", "ipython_genutils"]

CHECK_SCRIPT = r'''
import json, sys
import ipywidgets
from gpu_viz.lessons import RMSNORM_DECK, VECTOR_ADD
from gpu_viz.widgets import Animation, Frame, svg

def find(widget, cls):
    """Every descendant of widget (children walked) that is an instance of cls."""
    found, todo = [], [widget]
    while todo:
        w = todo.pop()
        if isinstance(w, cls):
            found.append(w)
        todo.extend(getattr(w, "children", ()))
    return found

def drive(anim):
    """Step the live player like a learner (slider, step buttons): the SVG drawing must follow."""
    box = anim.live()
    (slider,) = [s for s in find(box, ipywidgets.IntSlider) if s.description == "frame"]
    (speed,) = [s for s in find(box, ipywidgets.IntSlider) if s.description == "ms/frame"]
    (play,) = find(box, ipywidgets.Play)
    drawing = [h for h in find(box, ipywidgets.HTML) if "<svg" in h.value]
    assert len(drawing) == 1, "the drawing is one widgets.HTML holding the frame's SVG"
    drawing = drawing[0]
    n = len(anim)
    assert slider.max == n - 1 and play.max == n - 1 and anim.frames[0].markup in drawing.value
    assert speed.value == play.interval == anim.interval_ms
    slider.value = 2
    assert anim.frames[2].markup in drawing.value, "moving the slider did not change the drawing"
    [b for b in find(box, ipywidgets.Button) if b.description.startswith("step")][0].click()
    assert slider.value == 3 and anim.frames[3].markup in drawing.value, "step forward did not advance"
    [b for b in find(box, ipywidgets.Button) if b.description.startswith("\u25c0")][0].click()
    assert slider.value == 2 and anim.frames[2].markup in drawing.value
    assert any(f"frame 3 of {n}" in h.value for h in find(box, ipywidgets.HTML)), "no 'frame k of n' counter"
    src = [h.value for h in find(box, ipywidgets.HTML) if "gpu-viz-source" in h.value]
    line = anim.frames[2].line
    assert line is None or f'data-line="{line}" style="display:block;background:#F0E442;font-weight:bold' in src[0]
    html = [h.value for h in find(box, ipywidgets.HTML)]
    assert any("Data: " + anim.provenance.split(";")[0].split("'")[0] in h for h in html), "provenance not shown"
    bundle, meta = anim._repr_mimebundle_()     # the static player alone: renders without a kernel
    assert "text/html" in bundle and "application/vnd.jupyter.widget-view+json" not in bundle
    assert meta == {"gpu_viz": {"player": True, "frames": n}}
    # show(): the static player, then the live twin as its own output (what a saved notebook keeps)
    import IPython.display as ipd
    from gpu_viz.widgets import player
    calls, orig, here = [], ipd.display, player.in_notebook
    ipd.display = lambda *a, **k: calls.append((a, k))
    player.in_notebook = lambda: True  # this script is no notebook: show() would print one line
    try:
        anim.show()
    finally:
        ipd.display, player.in_notebook = orig, here
    (static, ks), (live, kl) = calls
    assert "text/html" in static[0] and 'data-live="' in static[0]["text/html"]
    assert ks["metadata"] == {"gpu_viz": {"player": True, "frames": n}} and ks["raw"]
    view = live[0]["application/vnd.jupyter.widget-view+json"]
    assert view["version_major"] == 2 and view["model_id"] and kl["metadata"] == {"gpu_viz": {"live": True}}

def check_animation():
    frames = []
    for i in range(4):
        d = svg.Svg(height=40)
        d.text(10, 30, f"frame {i}")
        frames.append(Frame(d.markup(), caption=f"step {i}", line=1 + i % 2))
    drive(Animation(frames, title="t", provenance="CPU model, no GPU", source="a\nb", interval_ms=100))
    return "Animation.live"

def check_lessons():
    drive(VECTOR_ADD.animation(VECTOR_ADD.trace(seed=1, n=64, block=64)))
    drive(RMSNORM_DECK.animation(RMSNORM_DECK.trace(seed=9), warp=5))
    return "lesson players"

def check_show_live():
    """A live control with its static twin (notebook 09's sliders, latency_hiding.hide's slider): the widget
    carries the twin's class and its model id goes into the widget-view output."""
    import IPython.display as ipd
    from gpu_viz.widgets import show_live
    box = ipywidgets.VBox([ipywidgets.IntSlider(value=1, description="warps"), ipywidgets.HTML("x")])
    calls, orig = [], ipd.display
    ipd.display = lambda *a, **k: calls.append((a, k))
    try:
        show_live(box, "<p>needs a kernel</p>")
    finally:
        ipd.display = orig
    (static, _ks), (live, kl) = calls
    live_id = static[0]["text/html"].split('data-live="')[1].split('"')[0]
    assert f"gpu-viz-live-{live_id}" in box._dom_classes
    assert live[0]["application/vnd.jupyter.widget-view+json"]["model_id"] == box.model_id
    return "show_live"

factories = [check_animation, check_lessons, check_show_live]
done = [f() for f in factories]
print(json.dumps({"ipywidgets": ipywidgets.__version__, "checked": done}))
'''


def _run_check(env_extra):
    env = dict(os.environ, MPLBACKEND="Agg", **env_extra)
    proc = subprocess.run([sys.executable, "-c", CHECK_SCRIPT], capture_output=True, text=True, env=env,
                          cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, f"live widget check failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def ipywidgets7():
    """A folder holding ipywidgets 7.7.1 (installed once; reused while build/ is kept)."""
    if not any(IPYW7_DIR.glob("ipywidgets-7.7.1.dist-info")):
        IPYW7_DIR.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade",
                               "--target", str(IPYW7_DIR)] + IPYW7_SPECS, capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"could not pip install {IPYW7_SPECS} into {IPYW7_DIR}:\n{proc.stderr[-2000:]}")
    assert any(IPYW7_DIR.glob("ipywidgets-7.7.1.dist-info")), f"ipywidgets 7.7.1 missing from {IPYW7_DIR}"
    return IPYW7_DIR


def test_live_widgets_under_ipywidgets_8():
    out = _run_check({})
    assert out["ipywidgets"].startswith("8."), out
    assert out["checked"] == ["Animation.live", "lesson players", "show_live"]


@pytest.mark.slow
def test_live_widgets_under_ipywidgets_7_7_1(ipywidgets7):
    out = _run_check({"PYTHONPATH": os.pathsep.join([str(ipywidgets7), str(ROOT)])})
    assert out["ipywidgets"] == "7.7.1", out
    assert out["checked"] == ["Animation.live", "lesson players", "show_live"]


# ----------------------------------------------------------------------------- static scan
_ATTR = re.compile(r"\b(?:w|widgets|ipywidgets|ipw)\.([A-Z][A-Za-z0-9_]*)\b")


def _used_widget_names():
    """Capitalised names used as ipywidgets.<Name> (aliases w, widgets, ipw) in gpu_viz/ and notebooks/."""
    used = {}
    sources = [(p, p.read_text()) for p in (ROOT / "gpu_viz").rglob("*.py")]
    for nbp in (ROOT / "notebooks").glob("*.ipynb"):
        nb = json.loads(nbp.read_text())
        sources.append((nbp, "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")))
    for path, text in sources:
        if "ipywidgets" not in text:
            continue
        for name in _ATTR.findall(text):
            used.setdefault(name, set()).add(path.name)
    return used


def _names_in(pythonpath):
    code = "import ipywidgets, json; print(json.dumps(sorted(n for n in dir(ipywidgets) if n[:1].isupper())))"
    env = dict(os.environ, **({"PYTHONPATH": pythonpath} if pythonpath else {}))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout))


@pytest.mark.slow
def test_only_widget_api_common_to_7_and_8_is_used(ipywidgets7):
    used = _used_widget_names()
    assert "Play" in used and "IntSlider" in used  # the scan sees the player's widgets
    common = _names_in(str(ipywidgets7)) & _names_in(None)
    missing = {n: sorted(files) for n, files in used.items() if n not in common}
    assert not missing, f"ipywidgets names not in both 7.7.1 and 8 (Colab ships 7.7.1): {missing}"


# ----------------------------------------------------------------------------- Colab's image
#: What a Colab GPU runtime has preinstalled (the course's install cell must not replace any of it):
#: Python 3.13, cupy-cuda12x 14, ipywidgets 7.7.1, IPython 7.34 (Colab's kernel pins it), numpy 2.0,
#: matplotlib 3.10.  Update when Colab's image moves.
COLAB_PREINSTALLED = {"python": "3.13.0", "numpy": "2.0.2", "matplotlib": "3.10.0", "ipywidgets": "7.7.1",
                      "ipython": "7.34.0", "cupy-cuda12x": "14.0.0"}


def test_base_dependencies_install_on_colab_without_reinstalls():
    import tomllib

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert SpecifierSet(proj["requires-python"]).contains(COLAB_PREINSTALLED["python"])
    reqs = [Requirement(r) for r in proj["dependencies"]] + \
           [Requirement(r) for r in proj["optional-dependencies"]["gpu"]]
    for req in reqs:
        name = req.name.lower()
        assert name in COLAB_PREINSTALLED, (
            f"base dependency {name!r} is not preinstalled on Colab: the install cell would download it "
            "(make it optional, or add it here if Colab has it)")
        assert req.specifier.contains(COLAB_PREINSTALLED[name], prereleases=True), (
            f"{req} rejects Colab's {name} {COLAB_PREINSTALLED[name]}: installing the course on Colab would "
            "replace it under the running kernel")
