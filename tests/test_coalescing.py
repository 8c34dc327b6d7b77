"""Notebook 07's coalescing lesson (kernels/coalescing.cu): each load's byte offset, from the CPU
model, from the emulator's run of the traced kernel and (marked gpu) from the silicon, all equal;
the sectors per request derived from them equal the emulator's own count of the load instruction;
the frames draw what the counts say."""
import numpy as np
import pytest

from gpu_viz import backend, emulator, kernels, lessons, memory_access as ma
from gpu_viz.frames import coalescing as frames
from gpu_viz.lessons import COALESCING
from gpu_viz.model import coalescing as model

needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")
PATTERNS = list(model.PATTERNS)
#: sectors per request of a full warp, by pattern (the rules of the Nsight Compute profiling guide:
#: 32-byte sectors; see tests/test_memory_access.py for the literature cases)
EXPECTED = {"stride 1": 4, "stride 2": 8, "stride 4": 16, "stride 32": 32, "misaligned": 5, "thread-major": 32,
            "warp-major": 4, "AoS": 12, "SoA": 4, "fp16": 2, "half2": 4, "16-byte": 16}


def _x(p, n, seed=0):
    return np.random.default_rng(seed).standard_normal(model.x_elements(p, n)).astype(p.dtype)


@pytest.mark.parametrize("name", PATTERNS)
def test_model_offsets_give_the_textbook_sectors(name):
    p = model.pattern(name)
    n = 32 * p.per_thread * 8
    tr = model.trace(_x(p, n), name, n=n, block=64)
    s = frames.summary(tr)
    assert s["sectors_per_request"] == EXPECTED[name]
    assert s["requests"] == n // 32 and s["ideal_sectors"] == 32 * p.width // 32


@needs_emulator
@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("n, block", [(256, 128), (100 * 8, 96), (8, 32)])
def test_emulated_trace_equals_the_model_and_its_count(name, n, block):
    """The traced kernel's PTX in the emulator records the model's offsets, bit for bit, and the
    emulator's own count of the load instruction equals the count derived from them."""
    p = model.pattern(name)
    x = _x(p, n, seed=n)
    from gpu_viz.record import coalescing as record

    with emulator.emulated() as session:
        tr = record.trace(x, name, n=n, block=block)
    assert tr.diff(model.trace(x, name, n=n, block=block)) == []
    # the kernel's loads of x: every global load but the traced build's loads of the record pointer
    src = kernels.read_source(model.FILE).splitlines()
    rows = [r for r in ma.run_counts(session.runs[0])
            if r["op"] == "ld" and r["space"] == "global" and "TRACE(" not in src[r["line"] - 1]]
    derived = frames.summary(tr)
    assert (sum(r["requests"] for r in rows), sum(r["sectors"] for r in rows)) == \
        (derived["requests"], derived["sectors"])
    assert not session.runs[0].hazards.errors()


def test_lesson_trace_is_labelled_and_plays():
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    tr = COALESCING.trace(seed=1, pattern="misaligned", n=96, block=64)
    an = COALESCING.animation(tr)
    assert len(an) == 3 and all(f.markup.startswith("<svg") for f in an.frames)
    assert "5 sectors" in an.frames[0].caption and "80 %" in an.frames[0].caption
    assert an.source == COALESCING.source_for(tr).text and an.frames[0].line == COALESCING.source_for(tr).line_of("*p")
    # without NVRTC the model stands in, and its label says what the emulator needs
    assert tr.provenance == (emulator.label(emulator.DEFAULT_ARCH) if emulator.available()
                             else backend.MODEL_LABEL + lessons.EMULATOR_MISSING_NOTE)


def test_drawing_lights_exactly_the_sectors_of_the_request():
    req = ma.global_request(8 * np.arange(32), 4)
    svg = frames.drawing(req, "stride 2")
    assert svg.count('fill="#E69F00"') == req.sectors.size + 1          # + the legend's swatch
    assert "8 sectors moved for 128 B asked: 50 % of the bytes moved are used" in svg


def test_a_wide_request_draws_only_the_lines_it_touched():
    offs = 4096 * np.arange(32)                   # 32 lines, 32 apart
    req = ma.global_request(offs, 4)
    svg = frames.drawing(req, "far apart")
    assert "untouched lines left out" in svg and req.sectors.size == 32


def test_patterns_animation_has_a_frame_per_pattern():
    trs = [model.trace(_x(model.pattern(n), 64 * model.pattern(n).per_thread), n,
                       n=64 * model.pattern(n).per_thread, block=64) for n in PATTERNS]
    an = frames.patterns_animation(trs)
    assert len(an) == len(PATTERNS)
    assert all(f.caption.startswith(model.PATTERNS[n].words + ": ") for f, n in zip(an.frames, PATTERNS))


@pytest.mark.parametrize("kw, err", [({"pattern": "stride 3"}, "pattern must be one of"),
                                     ({"n": 0}, "n must be"), ({"n": 1 << 20}, "n must be"),
                                     ({"pattern": "thread-major", "n": 100}, "multiple of 8"),
                                     ({"block": 2048}, "block must be")])
def test_bad_launches_are_named(kw, err):
    with pytest.raises((TypeError, ValueError), match=err):
        COALESCING.trace(seed=1, **kw)


def test_x_of_the_wrong_size_is_named():
    with pytest.raises(TypeError, match="x must be a 1-D float32 array of 64 elements"):
        model.trace(np.zeros(10, np.float32), "stride 1", n=64, block=32)


@pytest.mark.gpu
@pytest.mark.parametrize("name", PATTERNS)
def test_silicon_records_the_models_offsets_and_the_emulators_count(name):
    """On a GPU: the addresses the traced kernel recorded on the silicon give the model's offsets bit
    for bit, so the sectors per request derived from them equal the emulator's count."""
    p = model.pattern(name)
    n = 32 * p.per_thread * 40
    x = _x(p, n, seed=3)
    gpu = COALESCING.trace(seed=3, producer="gpu", pattern=name, n=n, block=128)
    emu = COALESCING.trace(seed=3, producer="emulator", pattern=name, n=n, block=128)
    assert gpu.diff(model.trace(x, name, n=n, block=128), names=("offsets",)) == []
    assert gpu.diff(emu, names=("offsets", "y")) == []
    assert frames.summary(gpu) == frames.summary(emu)
