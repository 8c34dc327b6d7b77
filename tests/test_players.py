"""Every animated lesson's player, drawn as SVG from its trace: sizes, text, and that what is drawn
is the recorded data (values in the lanes, shuffle arrows per offset, stale slots, queue counts).

Browser checks (play, fit, keys) are in tests/test_players_browser.py."""
import html
import re

import numpy as np
import pytest

from gpu_viz.frames import grid_stride as gs_frames
from gpu_viz.frames import vector_add as va_frames
from gpu_viz.model import latency as latency_model
from gpu_viz.trace import GPU_SOURCE
from gpu_viz.widgets import svg
from players_cases import CASES, FIXTURE_LABEL, KINDS

_FONT = re.compile(r'font-size="([\d.]+)"')
_SVG = re.compile(r'<svg class="gpu-viz-drawing"[^>]* width="(\d+)" height="(\d+)" viewBox="0 0 (\d+) (\d+)"')


def texts(markup):
    """The text content of every <text> element of an SVG drawing."""
    return [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in re.findall(r"<text[^>]*>(.*?)</text>", markup)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_every_frame_is_an_svg_that_fits_with_legible_text(name, kind):
    anim, _ = CASES[name](kind)
    assert len(anim) >= 2
    for i, f in enumerate(anim.frames):
        m = _SVG.match(f.markup)
        assert m, f"{name} frame {i}: not a gpu-viz SVG drawing: {f.markup[:80]}"
        w, h, vw, vh = map(int, m.groups())
        assert (w, h) == (vw, vh), f"{name} frame {i}: drawn scaled ({w}x{h} for a {vw}x{vh} viewBox)"
        assert w == svg.WIDTH and h <= svg.HEIGHT, f"{name} frame {i}: {w}x{h}"
        sizes = [float(s) for s in _FONT.findall(f.markup)]
        assert sizes and min(sizes) >= svg.MIN_FONT_PX, f"{name} frame {i}: text at {min(sizes)} px"
        assert f.markup.count("<svg") == 1 and "<script" not in f.markup
    # playing changes the drawing: consecutive frames differ
    same = [i for i in range(1, len(anim)) if anim.frames[i].markup == anim.frames[i - 1].markup]
    assert not same, f"{name}: frames {same} draw the same as the frame before"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_provenance_is_the_traces_own(name, kind):
    anim, tr = CASES[name](kind)
    prov = getattr(tr, "provenance", None)
    if prov is not None:
        assert anim.provenance == prov
    page = anim.static_html()
    assert "Data: " + html.escape(anim.provenance) in page
    if kind == "record" and name == "latency":
        assert "recorded on NVIDIA H200, 2026-12-01" in anim.provenance and "MODEL" in anim.provenance
    if getattr(tr, "source", None) == GPU_SOURCE:
        assert anim.provenance == FIXTURE_LABEL


def test_vector_add_lanes_show_the_recorded_values():
    anim, tr = CASES["vector_add"]("model")
    # frame order: launch, then step k of warp 0, warp 1; after warp 0's FADD (step 4) its lanes hold c
    f = next(fr for fr in anim.frames if fr.caption.startswith("warp 0 issues FADD"))
    words = texts(f.markup)
    sel = tr["warp"] == 0
    want = [svg.fmt(float(v), 4) for v in tr["c"][sel][np.argsort(tr["lane"][sel])]]
    at = words.index("warp 0")            # the band: its name, its 6 instruction chips, its 32 lanes
    assert [w.lstrip("✓ ") for w in words[at + 1:at + 7]] == [n for n, _s, _w in va_frames.INSTRUCTIONS]
    assert words[at + 7:at + 39] == want
    assert "SASS FADD" in words[words.index("16-31") + 1]


def test_vector_add_draws_two_warps_and_says_so_for_more():
    from gpu_viz.lessons import VECTOR_ADD

    tr = VECTOR_ADD.trace(seed=1, n=256, block=128)
    anim = VECTOR_ADD.animation(tr)
    assert len(anim) == 1 + 6 * va_frames.MAX_WARPS_DRAWN
    assert "warps 1..6 issue the same six instructions" in anim.frames[-1].caption
    bands = [w for w in texts(anim.frames[0].markup) if w.startswith("warp ")]
    assert bands == ["warp 0", "warp 7 (last)"], bands


def test_divergence_lights_only_the_masked_lanes():
    anim, tr = CASES["divergence"]("model")
    first = anim.frames[0]                        # warp 0, path A, mask 0x55555555
    assert "0x55555555" in first.caption
    words = texts(first.markup)
    cells = words[words.index("0-15") - 32:words.index("0-15")]
    y0 = tr["y"][(tr["warp"] == 0) & (tr["block"] == 0)]
    assert cells[1::2] == ["–"] * 16              # odd lanes are masked off (they take path B)
    assert cells[0::2] == [svg.fmt(float(v), 4) for v in y0[0::2]]


def test_grid_stride_pass_lights_its_elements_only():
    anim, tr = CASES["grid_stride"]("model")
    bright = [len(re.findall(r'fill="url\(#gs\d+\)" opacity="1.00"', f.markup)) for f in anim.frames]
    faded = [len(re.findall(r'fill="url\(#gs\d+\)"[^>]*opacity="0.30"', f.markup)) for f in anim.frames]
    assert faded[0] == 0 and faded[1] == 0 and faded[2] > 0 and faded[3] > faded[2]
    assert any(w.startswith("pass 2: threads 0..451 handle elements 2048..2499") for w in texts(anim.frames[3].markup))
    with pytest.raises(ValueError, match=f"at most {gs_frames.MAX_DRAWN} elements"):
        from gpu_viz.lessons import GRID_STRIDE
        GRID_STRIDE.animation(GRID_STRIDE.trace(seed=1, n=gs_frames.MAX_DRAWN + 1, grid=1, block=1024))
    assert bright[0] == 0 and bright[1] == 16 and bright[2] == 16 and bright[3] == 8   # rows of 64 lit per pass


def test_latency_frames_say_idle_exactly_when_no_warp_issues():
    anim, tr = CASES["latency"]("record")
    for f in anim.frames:
        t = int(re.match(r"cycle (\d+):", f.caption).group(1))
        idle = int(tr["issued"][t]) < 0
        assert ("IDLE: no warp ready" in texts(f.markup)) == idle, f.caption
    L = tr.params["latency_cycles"]
    assert L > 200 and any("stalled" in w for f in anim.frames for w in texts(f.markup))
    assert tr.params["latency_source"].startswith("recorded on NVIDIA H200")
    assert tr.kernel == latency_model.KERNEL


def test_scheduling_counts_match_the_trace():
    for kind in KINDS:
        anim, tr = CASES["scheduling"](kind)
        t0 = tr["t_start"].astype(np.float64)
        t1 = tr["t_end"].astype(np.float64)
        base = t0.min()
        times = np.linspace(0, t1.max() - base, len(anim))      # the instants animation() draws
        for f, at in zip(anim.frames, times):
            words = texts(f.markup)
            counts = [int(words[words.index(k) + 1].split()[0].replace(",", "")) for k in ("queue", "running", "done")]
            rel0, rel1 = t0 - base, t1 - base
            assert counts == [int((rel0 > at).sum()), int(((rel0 <= at) & (rel1 > at)).sum()), int((rel1 <= at).sum())]
        last = texts(anim.frames[-1].markup)
        assert last[last.index("done") + 1] == f"{tr.params['blocks']:,} blocks"
        n_sm = tr.params["sm_count"]
        assert f"SM {(n_sm - 1) // (16 if n_sm > 80 else 10) * (16 if n_sm > 80 else 10)}" in last
    assert CASES["scheduling"]("record")[1].params["sm_count"] == 132


def _polygons(markup):
    return markup.count("<polygon")


def test_rmsnorm_shuffle_is_drawn_as_arrows_lane_l_plus_off_to_lane_l():
    anim, tr = CASES["rmsnorm_deck"]("model")
    shuffles = [f for f in anim.frames if "__shfl_down_sync, offset" in f.caption and "warp 0," not in f.caption]
    offs = [int(re.search(r"offset (\d+)", f.caption).group(1)) for f in shuffles]
    assert offs == [16, 8, 4, 2, 1]
    assert [_polygons(f.markup) for f in shuffles] == offs         # one arrowhead per lane that receives
    # the lanes after offset 16 hold lane l + lane l+16 of the step before (the recorded values)
    lanes = tr["warp_lanes"][5]
    words = texts(shuffles[0].markup)
    cells = words[words.index(next(w for w in words if w.startswith("warp 5's lanes"))) + 1:][:32]
    assert cells[:16] == [svg.fmt(float(v), 4) for v in lanes[1, :16]]
    np.testing.assert_array_equal(lanes[1, :16], (lanes[0, :16] + lanes[0, 16:]).astype(np.float32))


def test_rmsnorm_frames_show_barrier_rstd_and_writes():
    anim, tr = CASES["rmsnorm_deck"]("model")
    by_cap = {f.caption.split("  [")[0]: f for f in anim.frames}
    hand = next(f for c, f in by_cap.items() if "writes its slot" in c)
    assert "barrier: __syncthreads(), all warps wait" in texts(hand.markup)
    rstd = next(f for c, f in by_cap.items() if c.startswith("phase 3: thread 0: rstd"))
    assert f"smem rstd = {tr['scalars'][3]:.5g}" in texts(rstd.markup)
    out = [f for c, f in by_cap.items() if c.startswith("phase 4")]
    assert "y[0:1024] written (STG)" in texts(out[0].markup) and "y[0:2048] written (STG)" in texts(out[1].markup)


def test_rmsnorm_deck_fault_marks_the_stale_slots():
    anim, tr = CASES["rmsnorm_deck_stale"]("model")
    read = next(f for f in anim.frames if "warp 0 reads smem[tid]" in f.caption)
    words = texts(read.markup)
    assert "✗ lanes 8-31 read slots nobody wrote" in words
    # 24 stale lanes + 24 stale slots outlined in vermillion (3 px)
    assert read.markup.count(f'stroke="{svg.VERMILLION}" stroke-width="3"') == 48
    assert "1008" in words and "1031" in words                      # the prefill 1000 + s, read as data
    good = CASES["rmsnorm_deck"]("model")[0]
    assert not any(f'stroke="{svg.VERMILLION}"' in f.markup for f in good.frames)


def test_seed_tree_marks_the_lost_partials():
    for kind in KINDS:
        anim, res = CASES["reduction"](kind)
        last = anim.frames[-1]
        assert last.caption == "total = 64: 32 of 96 partials never arrived"
        assert texts(last.markup).count("✗") == 32
    fixed = CASES["reduction_fixed"]("model")[0].frames[-1]
    assert fixed.caption == "total = 96: every partial counted once" and "✗" not in texts(fixed.markup)


def test_every_lessons_players_are_cases():
    """tests/players_cases.py draws every player every lesson lists, and nothing else."""
    from gpu_viz.lessons import LESSONS

    assert list(CASES) == [name for les in LESSONS.values() for name, _l, _o in les.cases.players]


def test_latency_still_is_the_whole_run_with_its_provenance():
    from gpu_viz.frames import latency as latency_frames

    tr = latency_model.simulate(1, 200, 16, 2, latency_source="the deck's ~200 cycles")
    page = latency_frames.still(tr)._repr_html_()
    assert "Data: " + html.escape(tr.provenance) in page
    assert latency_frames.drawing(tr) in page and f"cycle {tr.params['cycles'] - 1} of" in page
    assert min(float(s) for s in _FONT.findall(page)) >= svg.MIN_FONT_PX
    with pytest.raises(ValueError, match="markup must be a non-empty"):
        from gpu_viz.widgets import Still
        Still("", title="t", provenance="p")


def test_every_lessons_player_steps_to_a_new_picture():
    """Bug class: notebook 09's player had 10 frames but 2 pictures.  In every lesson's player (CPU
    model, its default launch) a step changes the drawing or the highlighted line."""
    from gpu_viz.lessons import LESSONS

    for stem, lesson in LESSONS.items():
        an = lesson.animation(lesson.trace(seed=1))
        same = [k for k in range(1, len(an)) if (an.frames[k].markup, an.frames[k].line)
                == (an.frames[k - 1].markup, an.frames[k - 1].line)]
        assert not same, f"{stem}: frames {same} repeat the frame before them"


def test_every_frames_source_pane_shows_its_line_with_its_statement():
    """Bug class: the panes of 06 and 07 showed the kernel's signature, or a loop's increment
    without its ``for``.  For every frame of every lesson's player, the pane's window holds the
    highlighted line and the first line of the statement it belongs to."""
    from gpu_viz.lessons import LESSONS
    from gpu_viz.widgets import player

    for stem, lesson in LESSONS.items():
        an = lesson.animation(lesson.trace(seed=1))
        for k, f in enumerate(an.frames):
            assert f.line is not None or k == 0, f"{stem}: frame {k} highlights no line"
            if f.line is None:
                continue
            first, last = player.source_window(an.source, f.line)
            start = player.statement_start(an.source, f.line)
            assert first <= start and f.line <= last, (stem, k, f.line, start, (first, last))
            assert f'data-line="{f.line}"' in player.source_view(an.source, f.line)
    src = "for (int i = 0;  // start\n     i < n;      // stop\n     i += s) {   // step\n  y[i] = x[i];\n}"
    assert player.statement_start(src, 3) == 1 and player.statement_start(src, 4) == 4
