"""A reopened notebook shows each player (and each live control) once, whatever the frontend.

A saved notebook keeps two outputs per player: the static copy and the live widget's view.
Reopened without the kernel that made it, the widget manager cannot find the view's model and
writes an error in its place: "Error displaying widget: model not found" (JupyterLab 4 / Notebook
7, ipywidgets 8) or "A Jupyter widget could not be displayed because the widget state could not
be found" (ipywidgets 7.7.1, in JupyterLab 3 or the classic notebook, Colab's stack).  The static
copy's script must hide that output and show itself, in each frontend's DOM, and hide itself
while the live twin is rendered.  Each case below is the DOM that frontend builds around the two
outputs (reduced to the containers and classes the script reads), with the copy's real HTML.
"""
import pytest

from gpu_viz.widgets import Animation, Frame, svg
from gpu_viz.widgets import player

pytestmark = pytest.mark.browser

ERR8 = "Error displaying widget: model not found"
ERR7 = ("A Jupyter widget could not be displayed because the widget state could not be found. This could "
        "happen if the kernel storing the widget is no longer available, or if the widget state was not saved "
        "in the notebook. You may be able to create the widget by running the appropriate cells.")


def _static(live_id):
    d = svg.Svg(height=60)
    d.text(10, 30, "a frame")
    return Animation([Frame(d.markup(), "c1"), Frame(d.markup().replace("a frame", "b frame"), "c2")],
                     title="T", provenance="p").static_html(live_id)


def _control(live_id):
    """show_live's static output for a live control (notebook 09's sliders)."""
    import IPython.display as ipd

    class FakeWidget:
        model_id = "m1"

        def add_class(self, c):
            self.cls = c

    shown = []
    real, ipd.display = ipd.display, lambda *a, **k: shown.append(a[0])
    try:
        player.show_live(FakeWidget(), "<p>the sliders need a kernel</p>")
    finally:
        ipd.display = real
    html = shown[0]["text/html"]
    return html.replace(html.split('data-live="')[1].split('"')[0], live_id)


FRONTENDS = {
    # JupyterLab 4 / Notebook 7 with ipywidgets 8
    "lab4-ipywidgets8": ('<div class="jp-OutputArea"><div class="jp-OutputArea-child"><div class="jp-OutputArea-output">'
                         '{static}</div></div><div class="jp-OutputArea-child twin"><div class="jp-OutputArea-output '
                         'lm-Panel">{twin}</div></div></div>', ERR8),
    # JupyterLab 3 with ipywidgets 7.7.1 (jupyterlab_widgets 1): the error in a p-Panel output
    "lab3-ipywidgets7": ('<div class="jp-OutputArea"><div class="jp-OutputArea-child"><div class="jp-OutputArea-output">'
                         '{static}</div></div><div class="jp-OutputArea-child twin"><div class="jp-OutputArea-output '
                         'p-Widget p-Panel">{twin}</div></div></div>', ERR7),
    # the classic notebook with ipywidgets 7.7.1 (widgetsnbextension 3)
    "classic-ipywidgets7": ('<div class="output"><div class="output_area"><div class="output_subarea output_html">'
                            '{static}</div></div><div class="output_area twin"><div class="output_subarea '
                            'jupyter-widgets-view">{twin}</div></div></div>', ERR7),
}


@pytest.mark.parametrize("make", [_static, _control], ids=["player", "live-control"])
@pytest.mark.parametrize("frontend", sorted(FRONTENDS))
def test_reopened_shows_the_static_copy_and_hides_the_error(browser, frontend, make):
    page = browser.new_page()
    try:
        shell, err = FRONTENDS[frontend]
        page.set_content("<html><body>" + shell.format(static=make("gvl7"), twin=f"<div>{err}</div>") + "</body></html>")
        page.wait_for_timeout(150)
        twin = page.locator(".twin")
        assert not twin.is_visible(), f"{frontend}: the widget error stays visible"
        assert page.locator(f"text={err[:30]}").is_visible() is False
        static = page.locator(".gpu-viz-player, .gpu-viz-static").first
        assert static.is_visible(), f"{frontend}: the static copy is hidden"
        # the kernel comes back and the live twin renders: the static copy hides, the twin shows
        page.evaluate("""() => { const t = document.querySelector('.twin > *');
                                 t.innerHTML = '<div class="gpu-viz-live-gvl7">live</div>'; }""")
        page.wait_for_timeout(150)
        assert twin.is_visible() and not static.is_visible(), f"{frontend}: the live twin did not take over"
    finally:
        page.close()
