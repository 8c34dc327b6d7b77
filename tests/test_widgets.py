"""Players: the same frames feed the live ipywidgets player and the static HTML one."""
import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpu_viz.widgets import Animation, Frame, render_frames  # noqa: E402

SRC = "int i = tid;\nfloat v = x[i];\ny[i] = v;"


def frames(n=3):
    def draw(i):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.bar([0], [i + 1])
        return fig
    return render_frames(draw, n, [f"step {i}" for i in range(n)], [1 + i % 3 for i in range(n)])


def test_render_frames_are_png():
    fs = frames()
    assert len(fs) == 3 and all(f.png.startswith(b"\x89PNG") for f in fs)
    assert [f.caption for f in fs] == ["step 0", "step 1", "step 2"]


def test_render_frames_validates_lengths():
    with pytest.raises(ValueError, match="captions has 1 entries, expected count=2"):
        render_frames(lambda i: plt.figure(), 2, ["a"])


def test_static_html_has_every_frame_and_provenance():
    anim = Animation(frames(4), title="T", provenance="CPU model, no GPU", source=SRC)
    page = anim.static_html()
    assert 'data-frames="4"' in page
    assert page.count("iVBOR") == 4 + 1  # 4 frames in the JS array + the first shown in <img>
    assert "Data: CPU model, no GPU" in page
    assert re.search(r'data-line="1" style="display:block;background:#ffe08a', page)
    ids = re.findall(r'id="(gvp[^"]+)"', page)
    assert Animation(frames(1), title="U", provenance="p").static_html() and len(set(ids)) == len(ids)


def test_line_outside_source_is_rejected():
    with pytest.raises(ValueError, match="frame 0 highlights line 9, but source has 3 lines"):
        Animation([Frame(b"x", "c", 9)], title="T", provenance="p", source=SRC)
    with pytest.raises(ValueError, match="frames is empty"):
        Animation([], title="T", provenance="p")


def test_live_player_steps_and_highlights():
    ipywidgets = pytest.importorskip("ipywidgets")
    anim = Animation(frames(3), title="T", provenance="p", source=SRC)
    box = anim.live()
    assert isinstance(box, ipywidgets.VBox)
    controls = box.children[-1]
    play, back, fwd, slider = controls.children
    image, source = box.children[1].children
    fwd.click()
    fwd.click()
    assert slider.value == 2 and image.value == anim.frames[2].png
    assert 'data-line="3" style="display:block;background:#ffe08a' in source.value
    fwd.click()
    assert slider.value == 2
    back.click()
    assert slider.value == 1 and box.children[2].value == "step 1"


def test_bundle_carries_static_html_and_metadata():
    anim = Animation(frames(2), title="T", provenance="p")
    data, meta = anim._repr_mimebundle_()
    assert "text/html" in data and "gpu-viz-player" in data["text/html"]
    assert meta["gpu_viz"]["player"] is True
