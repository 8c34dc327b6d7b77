"""Notebook 04's latency-hiding model (gpu_viz.model.latency) and its frames (gpu_viz.frames.latency):
one warp scheduler, cycle by cycle -- a model, not a measurement."""
import numpy as np
import pytest

from gpu_viz.frames import latency as F
from gpu_viz.model import latency as L


def test_model_one_warp_exact():
    c, lat, n = 5, 40, 3
    tr = L.simulate(1, lat, c, n)
    assert tr.params["cycles"] == n * (lat + c)
    assert tr.params["utilization"] == pytest.approx((c + 1) / (lat + c))


@pytest.mark.parametrize("policy", L.POLICIES)
def test_model_invariants(policy):
    lat, c = 30, 4
    tr = L.simulate(6, lat, c, 3, policy=policy)
    issued, kind, state = tr["issued"], tr["kind"], tr["state"]
    T, W = state.shape
    assert issued.shape == kind.shape == tr["in_flight"].shape == (T,)
    # at most one issue per cycle, and it is the issuing warp's state
    for t in np.flatnonzero(issued >= 0):
        assert state[t, issued[t]] == kind[t]
        assert np.sum((state[t] == L.COMPUTE) | (state[t] == L.LOAD)) == 1
    assert np.all(state[issued < 0] != L.COMPUTE)
    # every load stalls its warp exactly lat - 1 cycles, then the warp may issue again
    for t in np.flatnonzero(kind == L.LOAD):
        w = issued[t]
        assert np.all(state[t + 1: t + lat, w] == L.WAITING)
        assert t + lat >= T or state[t + lat, w] != L.WAITING
    # every warp issued (1 + c) * loads instructions
    for w in range(W):
        assert np.sum(issued == w) == (1 + c) * 3
    assert tr.source == "model" and set(tr.simulated) == set(tr.arrays)
    assert "MODEL (not measured)" in tr.provenance


def test_model_more_warps_hide_more_latency():
    lat, c = 200, 16
    u = [L.utilization(n, lat, c) for n in (1, 2, 4, 8, L.warps_to_hide(lat, c))]
    assert all(a < b for a, b in zip(u, u[1:])), u
    assert u[0] < 0.1 and u[-1] > 0.9


def test_model_validates():
    with pytest.raises(ValueError, match="n_warps must be >= 1"):
        L.simulate(0)
    with pytest.raises(ValueError, match="policy must be one of"):
        L.simulate(2, policy="fifo")
    with pytest.raises(TypeError, match="latency_cycles must be an int"):
        L.simulate(2, 200.5)


def test_model_frames_feed_the_player():
    from gpu_viz.widgets import Animation

    tr = L.simulate(4, 60, 6, 2)
    fr = F.frames(tr, count=5, source_lines={L.LOAD: 1, L.COMPUTE: 2})
    assert len(fr) == 5 and all(f.markup.startswith("<svg") for f in fr)
    assert fr[-1].caption.startswith(f"cycle {tr.params['cycles'] - 1}:")
    assert {f.line for f in fr} <= {None, 1, 2}
    anim = Animation(fr, title="latency hiding", provenance=tr.provenance, source="load\nmath")
    assert "MODEL (not measured)" in anim.static_html()


def test_caption_words():
    tr = L.simulate(1, 10, 2, 1)
    assert "issues a load; its data arrives at cycle 10" in F.caption(tr, 0)
    assert "every warp is waiting" in F.caption(tr, 5)


def test_few_warps_against_many_side_by_side():
    """Bug class: deck 04's only animation showed latency NOT hidden (8 warps, 18 % busy).  The
    contrast player draws few warps and many on one time axis, and the many stay busier."""
    from gpu_viz.frames import latency as fr
    from gpu_viz.model import latency as lm

    runs = [lm.simulate(n, 691, 16, 5) for n in (2, 16, 42)]
    frames = fr.contrast_frames(runs, ["2 warps", "16 warps", "42 warps"], count=8)
    assert len(frames) == 8 and all(f.markup.startswith("<svg") for f in frames)
    busy = [float(x) for x in __import__("re").findall(r"(\d+)% busy", frames[-1].caption)]
    assert busy == sorted(busy) and busy[0] < 10 < 80 < busy[-1], frames[-1].caption
    assert "100% busy" not in frames[0].caption          # no trivial first frame at cycle 0
    with pytest.raises(ValueError, match="one label per trace"):
        fr.contrast_drawing(runs, 10, ["one"])
