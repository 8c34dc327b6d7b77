"""Players: the same SVG frames feed the live ipywidgets player and the static HTML one."""
import html
import json
import re

import pytest

from gpu_viz.widgets import Animation, Frame, source_view, svg
from gpu_viz.widgets import player as P

SRC = "int i = tid;\nfloat v = x[i];\ny[i] = v;"


def drawn(i):
    d = svg.Svg(height=60)
    d.cell(10, 10, 60, 30, f"v{i}")
    return d.markup()


def frames(n=3):
    return [Frame(drawn(i), f"step {i}", 1 + i % 3) for i in range(n)]


def _static_data(page):
    """The static player's JS arrays: markups M, source views S, frames F."""
    m = re.search(r"var M = (\[.*?\]), S = (\{.*?\}), F = (\[.*?\]);", page, re.S)
    return json.loads(m.group(1)), json.loads(m.group(2)), json.loads(m.group(3))


def test_static_html_has_every_frame_and_provenance():
    fr = frames(4)
    anim = Animation(fr, title="T", provenance="CPU model, no GPU", source=SRC)
    page = anim.static_html()
    assert 'data-frames="4"' in page
    M, S, F = _static_data(page)
    assert [M[f["m"]] for f in F] == [f.markup for f in fr]
    assert len(M) == 4 and set(S) == {"1", "2", "3"}
    assert "Data: CPU model, no GPU" in page
    assert re.search(r'data-line="1" style="display:block;background:#F0E442;font-weight:bold', page)
    ids = re.findall(r'id="(gvp[^"]+)"', page)
    assert Animation(frames(1), title="U", provenance="p").static_html() and len(set(ids)) == len(ids)


def test_static_html_deduplicates_repeated_drawings():
    same = drawn(0)
    anim = Animation([Frame(same, "a"), Frame(same, "b"), Frame(drawn(1), "c")], title="T", provenance="p")
    M, S, F = _static_data(anim.static_html())
    assert len(M) == 2 and [f["m"] for f in F] == [0, 0, 1] and S == {}


def test_static_player_gives_the_keyboard_back():
    """Bug class: a clicked player button keeps focus, so reveal.js's Space re-clicks it."""
    page = Animation(frames(2), title="T", provenance="p").static_html()
    assert "b.blur()" in page and "rng.blur()" in page
    assert "stopPropagation" not in page


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="frame 0 highlights line 9, but source has 3 lines"):
        Animation([Frame("<svg/>", "c", 9)], title="T", provenance="p", source=SRC)
    with pytest.raises(ValueError, match="frames is empty"):
        Animation([], title="T", provenance="p")
    with pytest.raises(ValueError, match="interval_ms must be 50..10000"):
        Animation(frames(1), title="T", provenance="p", interval_ms=5)
    with pytest.raises(TypeError, match="Frame objects"):
        Animation([b"png"], title="T", provenance="p")
    with pytest.raises(ValueError, match="markup must be a non-empty"):
        Frame(b"\x89PNG")


def test_svg_refuses_small_text_and_tall_drawings():
    d = svg.Svg(height=100)
    with pytest.raises(ValueError, match="size must be >= 18 px"):
        d.text(0, 0, "tiny", size=12)
    with pytest.raises(ValueError, match=r"height must be 1..360 px"):
        svg.Svg(height=svg.HEIGHT + 1)
    assert svg.fmt(0.5312) == "0.53" and svg.fmt(1031.0, 4) == "1031" and svg.fmt(float("nan")) == "–"
    assert len(svg.fmt(123456.0, 4)) <= 4


def test_source_view_windows_long_sources_and_always_shows_the_line():
    long = "\n".join(f"line_{k} = compute(x[{k}]) + something_long_enough_to_wrap_twice_{k};" for k in range(1, 61))
    for line in (1, 30, 60):
        view = source_view(long, line)
        assert f'data-line="{line}" style="display:block;background:#F0E442;font-weight:bold' in view
        first, last = P.source_window(long, line)
        rows = sum(P._rows(t) for t in long.splitlines()[first - 1:last]) + (first > 1) + (last < 60)
        assert first <= line <= last and rows <= P.SOURCE_ROWS
        assert "white-space:pre;" in view                # the browser never wraps: the rows are ours
    assert "lines 1-" in source_view(long, 60) and "below" in source_view(long, 1)
    assert P.source_window(SRC, 2) == (1, 3)             # a short source is shown whole


def test_live_player_steps_and_highlights():
    ipywidgets = pytest.importorskip("ipywidgets")
    anim = Animation(frames(3), title="T", provenance="p", source=SRC)
    box = anim.live(live_id="x1")
    assert isinstance(box, ipywidgets.VBox)
    assert {"gpu-viz-live-player", "gpu-viz-live-x1"} <= set(box._dom_classes)
    header, controls, caption, body = box.children
    play, back, fwd, slider, counter, speed = controls.children
    assert anim.frames[0].markup in body.value and "frame 1 of 3" in counter.value
    fwd.click()
    fwd.click()
    assert slider.value == 2 and anim.frames[2].markup in body.value and "frame 3 of 3" in counter.value
    assert 'data-line="3" style="display:block;background:#F0E442;font-weight:bold' in body.value
    fwd.click()
    assert slider.value == 2
    back.click()
    assert slider.value == 1 and "step 1" in caption.value and "frame 2 of 3" in counter.value
    assert speed.value == anim.interval_ms
    assert not slider.readout, "the slider's 0-based readout would contradict 'frame k of n'"


def test_source_rows_break_at_spaces_and_keep_comments_with_their_line():
    line = "        float a = A[i];   // 2 · bounds check: threads past n do nothing at all"
    rows = P.source_rows(line)
    assert len(rows) >= 2 and rows[0].startswith("        float a = A[i];")
    tokens = line.split()
    for r in rows:
        assert len(r) <= P.SOURCE_COLS or " " not in r.strip()
        body = r.strip().removeprefix(P.CONTINUATION.strip()).strip()
        assert all(t in tokens for t in body.split()), f"row {r!r} starts or ends inside a token"
    for r in rows[1:]:     # continuation rows: deeper than the line, marked, never a new line's start
        assert r.startswith(" " * 10 + P.CONTINUATION)
    assert P.source_rows("  short();") == ["  short();"]
    view = source_view(line + "\nnext();", 1)
    assert "// 2" in rows[0], "the comment starts on its code's row"
    line1 = html.unescape(view).split('data-line="2"')[0].split('data-line="1"')[1]
    assert all(r in line1 for r in rows), "every row of line 1 is inside line 1's block (one highlight)"


def test_bundle_carries_static_html_and_metadata():
    anim = Animation(frames(2), title="T", provenance="p")
    data, meta = anim._repr_mimebundle_()
    assert "text/html" in data and "gpu-viz-player" in data["text/html"]
    assert meta["gpu_viz"]["player"] is True


def test_the_controls_sit_above_the_drawing_in_both_players():
    """Bug class: at 1024x768 the 09 player needed a scroll between its drawing and its buttons
    (the source pane wraps below a drawing in a narrow output).  Both players put the controls
    and the caption above the drawing."""
    anim = Animation(frames(3), title="T", provenance="p", source=SRC)
    html = anim.static_html()
    assert html.index("gpu-viz-controls") < html.index("gpu-viz-caption") < html.index("gpu-viz-body")
    ipywidgets = pytest.importorskip("ipywidgets")
    header, controls, caption, body = anim.live().children
    assert isinstance(controls, ipywidgets.HBox) and "<svg" in body.value
