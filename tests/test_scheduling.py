"""Notebook 09's block scheduling (kernels/scheduling.cu): the round-robin model, the summary, the
timeline; on a GPU, silicon's %smid and timers."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_viz import device, kernels, occupancy
from gpu_viz.frames import scheduling as frames
from gpu_viz.lessons import SCHEDULING
from gpu_viz.model import scheduling as model
from gpu_viz.widgets import svg

L4 = device.SPEC_SHEETS["L4"]


def test_deck_case_2048_blocks_on_58_sms():
    s = frames.summary(trace=model.trace(2048, 256, 20000))
    assert s["sm_count"] == 58 and s["sms_used"] == 58 and s["blocks"] == 2048
    assert s["blocks_per_sm_hist"] == {"35": 40, "36": 18}  # 2048 = 58 * 35 + 18: 18 SMs get a 36th
    assert s["resident_blocks_per_sm"] == 6   # 1536 threads/SM / 256
    assert s["waves"] == 6 and s["waves_observed"] == 6
    assert s["max_concurrent_blocks_per_sm"] == 6
    assert "round-robin model" in s["model"] and s["source"] == "model"


@pytest.mark.parametrize("threads,expect", [(1024, 1), (512, 3), (256, 6), (64, 24), (32, 24), (96, 16), (1, 24)])
def test_occupancy_limits(threads, expect):
    assert model.resident_blocks_per_sm(L4, threads) == expect


@settings(max_examples=60, deadline=None)
@given(blocks=st.integers(1, 3000), threads=st.sampled_from([32, 64, 128, 256, 384, 512, 1024]),
       spin=st.integers(100, 100000))
def test_round_robin_properties(blocks, threads, spin):
    tr = model.trace(blocks, threads, spin)
    S, R = 58, model.resident_blocks_per_sm(L4, threads)
    smid, t0, t1 = tr["smid"], tr["t_start"], tr["t_end"]
    assert (smid < S).all() and (t1 > t0).all()
    counts = np.bincount(smid, minlength=S)
    assert counts.max() - counts[counts > 0].min() <= 1           # balanced
    first = min(blocks, S * R)
    assert np.array_equal(smid[:first], np.arange(first) % S)      # round robin fill
    assert (t0[:first] == 0).all() and (t0[first:] > 0).all()      # the rest waited in the queue
    for s in range(min(S, blocks)):                                 # never more than R at once
        sel = smid == s
        assert frames.max_concurrent(t0[sel], t1[sel]) <= R
    summ = frames.summary(tr)
    assert summ["waves"] == -(-blocks // (S * R))
    assert sum(summ["blocks_per_sm_hist"].values()) == summ["sms_used"] == min(S, blocks)
    assert set(tr.simulated) == set(tr.arrays)


def test_more_work_longer_makespan():
    a = frames.summary(trace=model.trace(2048, 256, 10000))
    b = frames.summary(trace=model.trace(2048, 256, 20000))
    assert b["makespan_us"] == pytest.approx(2 * a["makespan_us"], rel=1e-3)


def test_bad_args_name_the_argument():
    with pytest.raises(ValueError, match="threads must be 1..1024"):
        SCHEDULING.trace(threads=2000)
    with pytest.raises(ValueError, match="blocks must be"):
        SCHEDULING.trace(blocks=0)
    with pytest.raises(TypeError, match="spin_cycles must be an int"):
        SCHEDULING.trace(spin_cycles=1.5)


def test_max_concurrent():
    assert frames.max_concurrent(np.array([0, 0, 5]), np.array([5, 5, 9])) == 2
    assert frames.max_concurrent(np.array([0, 1, 2]), np.array([10, 10, 10])) == 3


def test_frames_render():
    tr = SCHEDULING.trace(blocks=3000, threads=512, spin_cycles=5000)
    an = frames.animation(tr, frames=4)
    assert 2 <= len(an) <= 4 and all(f.markup.startswith("<svg") for f in an.frames)
    assert "in the queue" in an.frames[0].caption and "done" in an.frames[-1].caption
    fig = frames.timeline_figure(tr)
    assert fig.axes


@pytest.mark.slow


def test_each_frame_is_a_new_picture_with_the_line_that_matters():
    """Bug class: the player stepped through 10 frames of 2 pictures, its source pane on the
    kernel's signature.  Consecutive frames differ; each highlights a line of the kernel's body:
    the %smid / %globaltimer record, the spin, or the end record."""
    src = SCHEDULING.source().text.splitlines()
    for launch in ({"blocks": 2048, "threads": 256}, {"blocks": 2048, "threads": 1024}, {"blocks": 100, "threads": 64}):
        an = frames.animation(SCHEDULING.trace(spin_cycles=20000, **launch), frames=10)
        marks = [f.markup for f in an.frames]
        assert all(a != b for a, b in zip(marks, marks[1:])), launch
        for f in an.frames:
            assert f.line is not None and any(k in src[f.line - 1] for k in ("smid()", "clock64() - t0", "t_end[")), \
                (launch, f.caption, src[f.line - 1] if f.line else None)


def _recorded(tr, **extra):
    """A scheduling record holding ``tr``'s timeline, as ``gpu-viz record scheduling`` writes it."""
    import dataclasses

    silicon = dataclasses.replace(tr, source="gpu", simulated=())
    return {"date": "2026-12-05", "gpu": "NVIDIA H200", "driver": "580", **extra,
            frames.TIMELINE_KEY: [frames.timeline_entry(silicon)]}


def test_recorded_timeline_round_trips_with_its_label():
    """CPU mode draws the silicon's run from the committed record: the per-block timeline comes
    back as a Trace labelled "recorded on <GPU>, <date>", not live, with the same summary."""
    tr = SCHEDULING.trace(blocks=2048, threads=256, spin_cycles=20000)
    rec = _recorded(tr)
    back = frames.recorded_trace(rec, threads=256)
    assert back is not None and back.source == "gpu"
    assert "recorded on NVIDIA H200, 2026-12-05" in back.provenance and "not live" in back.provenance
    a, b = frames.summary(tr), frames.summary(back)
    for k in ("blocks", "sm_count", "resident_blocks_per_sm", "blocks_per_sm_hist", "waves", "max_concurrent_blocks_per_sm"):
        assert a[k] == b[k], k
    assert b["makespan_us"] == pytest.approx(a["makespan_us"], abs=1e-3)
    assert frames.recorded_trace(rec, threads=1024) is None          # a launch it does not keep
    assert frames.recorded_trace({"gpu": "x"}, threads=256) is None   # an older record: no timeline
    with pytest.raises(ValueError, match="only a silicon trace"):
        frames.timeline_entry(tr)                                    # a model is never recorded
    bad = _recorded(tr)
    bad[frames.TIMELINE_KEY][0]["t_end_ns"] = bad[frames.TIMELINE_KEY][0]["t_end_ns"][:-1]
    with pytest.raises(ValueError, match="malformed"):
        frames.recorded_trace(bad, threads=256)


def test_mean_resident_says_how_full_the_slots_were_kept():
    """The committed record's own numbers: 2048 blocks of 10.4 µs on 132 SMs in 42.1 µs kept 3.9
    blocks per SM busy on average, of the 8 the occupancy allows."""
    assert frames.mean_resident(2048, 10.432, 132, 42.08) == pytest.approx(3.85, abs=0.01)
    s = frames.summary(SCHEDULING.trace(blocks=2048, threads=256, spin_cycles=20000))
    assert s["mean_resident_blocks_per_sm"] <= s["resident_blocks_per_sm"] + 1e-9
    assert frames.mean_resident(10, 1.0, 4, 0.0) is None


@pytest.mark.slow   # nvcc per architecture: `make test`, not the fast lane
@pytest.mark.skipif(kernels.find_tool("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", kernels.ARCHES)
def test_registers_never_bind_the_models_occupancy(arch):
    """__launch_bounds__(1024, 2) keeps scheduled_block at <= MODEL_REGS_PER_THREAD registers, so the
    model's occupancy is exact: at the real register count the calculator gives the same blocks."""
    regs = kernels.nvcc_compile("scheduling.cu", arch)[0].registers
    assert regs <= model.MODEL_REGS_PER_THREAD
    for threads in (32, 96, 256, 1024):
        real = occupancy.calculate(L4, threads, occupancy.KernelResources("scheduled_block", regs))
        assert real.blocks_per_sm == model.resident_blocks_per_sm(L4, threads)


# -- GPU ----------------------------------------------------------------------------------------

@pytest.mark.timing
@pytest.mark.gpu
@pytest.mark.parametrize("blocks,threads,spin", [(2048, 256, 20000), (2048, 1024, 5000), (7, 32, 1000), (500, 96, 0)])
def test_silicon_smid_and_times(blocks, threads, spin):
    tr = SCHEDULING.trace(blocks=blocks, threads=threads, spin_cycles=spin)
    S = device.current().sm_count
    assert tr.source == "gpu" and tr.simulated == ()
    assert (tr["smid"] < S).all()
    assert (tr["t_end"] >= tr["t_start"]).all() and (tr["clk_end"] > tr["clk_start"]).all()
    if spin:
        assert ((tr["clk_end"] - tr["clk_start"]) >= spin).all()
    s = frames.summary(tr)
    assert s["blocks"] == blocks and sum(int(k) * v for k, v in s["blocks_per_sm_hist"].items()) == blocks
    assert s["max_concurrent_blocks_per_sm"] <= s["resident_blocks_per_sm"]
    if blocks >= 2 * S * s["resident_blocks_per_sm"]:
        assert s["sms_used"] == S


@pytest.mark.gpu
@pytest.mark.timing
def test_scheduling_record_keeps_every_blocks_timeline(tmp_path):
    """``gpu-viz record scheduling`` keeps each launch's per-block timeline; it reads back as the
    Trace notebook 09 draws in CPU mode, with the record's summary."""
    import json

    from gpu_viz import record_cli as lessons

    path = lessons.record("scheduling", tmp_path)
    rec = json.loads(path.read_text())
    for row in rec["rows"]:
        back = frames.recorded_trace(rec, threads=row["threads"], blocks=row["blocks"])
        assert back is not None, row["threads"]
        s = frames.summary(back)
        assert s["blocks_per_sm_hist"] == row["blocks_per_sm_hist"]
        assert s["makespan_us"] == pytest.approx(row["makespan_us"], rel=1e-6)
        assert s["mean_resident_blocks_per_sm"] == pytest.approx(row["mean_resident_blocks_per_sm"], rel=1e-6)


@pytest.mark.gpu
@pytest.mark.timing
def test_silicon_queue_waits():
    tr = SCHEDULING.trace(blocks=2048, threads=1024, spin_cycles=20000)   # 1 block per SM on most GPUs -> many waves
    s = frames.summary(tr)
    assert s["waves"] >= 2
    assert s["makespan_us"] > 1.5 * s["block_us_median"]


@pytest.mark.gpu
@pytest.mark.parametrize("threads", [32, 96, 256, 1024])
def test_occupancy_model_equals_cuda_occupancy_api(threads):
    from gpu_viz.record import scheduling as record

    assert record.resident_blocks(threads) == model.resident_blocks_per_sm(device.current(), threads)


def test_zero_work_launch_is_said_in_words():
    """Bug class: notebook 09's explorer printed 'waves 22 (seen None) ... makespan 0.0 µs' and an
    empty chart for spin cycles = 0, FMAs = 0."""
    s = frames.summary(SCHEDULING.trace(blocks=2048, threads=256, spin_cycles=0, fma_iters=0))
    assert s["degenerate"] and "no work per block" in s["degenerate"] and "no makespan" in s["degenerate"]
    line = frames.describe(s)
    assert "None" not in line and "0.0 µs" not in line and "no work per block" in line
    s = frames.summary(SCHEDULING.trace(blocks=2048, threads=256, spin_cycles=20000))
    assert s["degenerate"] is None
    line = frames.describe(s)
    assert f"waves: {s['waves']} expected, {s['waves_observed']} seen" in line and "None" not in line


def test_first_instant_draws_the_running_blocks():
    """Bug class: at t = 0 the timeline's label said 'running: 348' over an empty chart (blocks that
    had just started were one image column wide)."""
    import matplotlib.pyplot as plt

    tr = SCHEDULING.trace(blocks=2048, threads=256, spin_cycles=20000)
    fig = frames.timeline_figure(tr, until_ns=float(tr["t_start"].min()))
    img = fig.axes[0].get_images()[0].get_array()
    coloured_cols = np.nonzero((np.asarray(img) < 0.9).any(axis=2).any(axis=0))[0]
    assert len(coloured_cols) >= frames._MIN_RUNNING_COLS, coloured_cols
    plt.close(fig)
    first = frames.animation(tr, frames=10).frames[0].markup
    assert sum(first.count(f'rx="1" fill="{frames.wave_colour(w)}"') for w in range(7)) > 0, \
        "frame 1 draws no running block"


def test_waves_keep_distinct_colours_or_numbers():
    """Bug class: with 37 waves the timeline's ten colours repeated and nothing said which wave."""
    import matplotlib.pyplot as plt

    tr = SCHEDULING.trace(blocks=8192, threads=1024, spin_cycles=2000)
    n_waves = frames.summary(tr)["waves"]
    assert n_waves > len(svg.CYCLE)
    assert all(frames.wave_colour(w) != frames.wave_colour(w + 1) for w in range(n_waves))
    assert set(svg.CYCLE) <= {"#56B4E9", "#E69F00", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}
    fig = frames.timeline_figure(tr)
    top = [a for a in fig.axes[0].child_axes]
    labels = [t.get_text() for a in top for t in a.get_xticklabels()]
    assert labels[0] == "w1" and 2 <= len(labels) <= frames._MAX_WAVE_LABELS, labels
    plt.close(fig)
    anim = frames.animation(tr, frames=10)
    mid = anim.frames[len(anim) // 2].markup
    assert re.search(r">w\d+</text>", mid), "the running waves' swatches carry no number"
    assert f"frame 1 of {len(anim)}" in anim.static_html()
