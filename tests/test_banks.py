"""Notebook 07's shared-memory banks (kernels/banks.cu): each lane's shared offset, from the CPU
model, from the emulator's run of the traced kernel and (marked gpu) from the silicon, all equal;
the wavefronts derived from them equal the emulator's own count; the transposes are right at edge
shapes; reduce.cuh's smem[32] is conflict-free."""
import numpy as np
import pytest

from gpu_viz import backend, emulator, memory_access as ma
from gpu_viz.frames import banks as frames
from gpu_viz.lessons import BANKS
from gpu_viz.model import banks as model

needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")
CASES = list(model.CASES)
#: wavefronts of warp 0's recorded load (the [guide] rules: see tests/test_memory_access.py)
WAVEFRONTS = {"stride 1": 1, "stride 2": 2, "stride 4": 4, "stride 32": 32, "stride 33": 1, "broadcast": 1,
              "tile 32x32": 32, "tile 32x33": 1}


def _shape(name):
    return (32, 32) if model.CASES[name].kernel == "shared_stride" else (64, 96)


@pytest.mark.parametrize("name", CASES)
def test_model_offsets_give_the_textbook_wavefronts(name):
    rows, cols = _shape(name)
    tr = model.trace(np.zeros(rows * cols, np.float32), name, rows=rows, cols=cols)
    load = [it for it in frames.requests_of(tr) if it["site"] == tr.params["sites"] - 1]
    assert load[0]["request"].wavefronts == WAVEFRONTS[name]
    stores = [it["request"] for it in frames.requests_of(tr) if it["site"] < 4 and tr.params["sites"] > 1]
    assert all(r.wavefronts == 1 for r in stores)


@needs_emulator
@pytest.mark.parametrize("name, rows, cols", [(n, r, c) for n in CASES for r, c in
                                              ([(32, 32)] if model.CASES[n].kernel == "shared_stride" else
                                               [(32, 32), (64, 96), (33, 70), (1, 5), (70, 1)])])
def test_emulated_trace_equals_the_model_and_its_count(name, rows, cols):
    from gpu_viz.record import banks as record
    x = np.random.default_rng(rows * cols).standard_normal(rows * cols).astype(np.float32)
    with emulator.emulated() as session:
        tr = record.trace(x, name, rows=rows, cols=cols)
    assert tr.diff(model.trace(x, name, rows=rows, cols=cols)) == []
    run = session.runs[0]
    assert not run.hazards.errors()
    counted = [r for r in ma.run_counts(run) if r["space"] == "shared" and (r["op"] == "ld" or tr.params["sites"] > 1)]
    if tr.params["sites"] == 1:
        counted = [r for r in counted if r["op"] == "ld"]
    s = frames.summary(tr)
    assert (sum(r["wavefronts"] for r in counted), sum(r["ideal"] for r in counted)) == (s["wavefronts"], s["ideal"])


def test_the_padded_tile_removes_every_conflict_and_the_square_one_has_31_a_column():
    tiled = model.trace(np.zeros(64 * 96, np.float32), "tile 32x32", rows=64, cols=96)
    padded = model.trace(np.zeros(64 * 96, np.float32), "tile 32x33", rows=64, cols=96)
    assert frames.summary(padded)["conflicts"] == 0
    loads = [it["request"] for it in frames.requests_of(tiled) if it["site"] >= 4]
    assert {r.conflicts for r in loads} == {31} and all(r.ways() == 32 for r in loads)


@needs_emulator
def test_reduce_cuh_smem32_is_conflict_free():
    from gpu_viz.claims import memory_access as claims

    rows = [r for r in claims.bank_counts() if r["kernel"] == "block_sum_smem32"]
    assert {r["op"] for r in rows} == {"ld", "st"} and all(r["conflicts"] == 0 for r in rows)


def test_lesson_trace_is_labelled_and_plays():
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    tr = BANKS.trace(seed=1, case="tile 32x32", rows=32, cols=32)
    an = BANKS.animation(tr)
    assert len(an) == frames.MAX_FRAMES and all(f.markup.startswith("<svg") for f in an.frames)
    assert an.frames[0].line == BANKS.source_for(tr).line_of("// a column: 1 bank")
    an = frames.animation(tr, sites=[7])
    assert len(an) == 8 and "32 wavefronts" in an.frames[0].caption     # 8 warps of 32 x 8 threads


def test_drawing_stacks_the_busiest_bank():
    svg = frames.drawing(ma.shared_request(128 * np.arange(32), 4), "stride 32")
    assert "32 wavefronts: 31 bank conflicts (32 words in the busiest bank)" in svg
    svg = frames.drawing(ma.shared_request(np.zeros(32, np.int64), 4), "broadcast")
    assert "1 wavefront: no bank conflict" in svg
    with pytest.raises(ValueError, match="4-byte accesses"):
        frames.drawing(ma.shared_request(8 * np.arange(32), 8), "64-bit")


@pytest.mark.parametrize("kw, err", [({"case": "stride 3"}, "case must be one of"), ({"rows": 0}, "rows must be"),
                                     ({"rows": 512, "cols": 512}, "rows \\* cols"), ({"cols": 1.5}, "cols must be")])
def test_bad_launches_are_named(kw, err):
    with pytest.raises((TypeError, ValueError), match=err):
        BANKS.trace(seed=1, **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("name", CASES)
def test_silicon_records_the_models_offsets_and_the_emulators_count(name):
    """On a GPU: the shared offsets the traced kernel recorded on the silicon are the model's, so
    the wavefronts derived from them equal the emulator's count of the same launch."""
    rows, cols = _shape(name)
    gpu = BANKS.trace(seed=4, producer="gpu", case=name, rows=rows, cols=cols)
    emu = BANKS.trace(seed=4, producer="emulator", case=name, rows=rows, cols=cols)
    assert gpu.diff(emu, names=("offsets", "out")) == []
    assert frames.summary(gpu) == frames.summary(emu)
