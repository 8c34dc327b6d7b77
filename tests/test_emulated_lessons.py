"""Faithfulness: every traced lesson kernel, run in the emulator from its PTX through its own GPU
producer (``gpu_viz.record.<stem>``), gives the CPU model's Trace bit for bit -- at the shapes the
tests use, for every architecture the course targets (sm_75 in the fast lane, sm_80/89/90 slow).
On a GPU (marked ``gpu``) the same kernels give the silicon's Trace bit for bit.

The simulated arrays (``%smid``, ``%warpid``) come from the emulator's scheduling model and the
model's alike (block b on SM b mod 58; the warp's index in its block): they are compared too.
"""
import numpy as np
import pytest

from gpu_viz import backend, emulator, lessons
from gpu_viz.model import reduction as red_model
from gpu_viz.record import reduction as red_record

pytestmark = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")

#: (stem, launch) at the shapes the lesson tests use: one block and many, partial warps, the deck's
#: 2048 x 1024, fewer warps than 32 (the guarded phase 2), both divergence kernels.
SHAPES = [
    ("vector_add", dict(n=64, block=64)), ("vector_add", dict(n=70, block=64)), ("vector_add", dict(n=1000, block=96)),
    ("divergence", dict(n=100, block=64, iters=5)), ("divergence", dict(n=64, block=64, kernel="uniform_branch")),
    ("grid_stride", dict(n=2048, grid=1, block=1024)), ("grid_stride", dict(n=2500, grid=3, block=100)),
    ("grid_stride", dict(n=0, grid=1, block=32)),
    ("rmsnorm_deck", dict(d=2048, block=1024)), ("rmsnorm_deck", dict(d=700, block=96)),
    ("rmsnorm_deck", dict(d=64, block=33, variant="guarded")),
    ("rmsnorm_deck", dict(d=500, block=256, variant="deck", prefill=True)),
]
ARCHES = [pytest.param("sm_75")] + [pytest.param(a, marks=pytest.mark.slow) for a in ("sm_80", "sm_89", "sm_90")]


def _emulated(stem, arch, seed, launch):
    les = lessons.LESSONS[stem]
    args, kw = les.inputs(seed, **launch)
    extra = les.source_lines(les.source(), **kw) if les.source_lines else {}
    model = les.module("model").trace(*args, **kw, **extra, seed=seed)
    # in CPU mode the inputs name the GPU the model models; the emulator gets its SM count
    # (as Lesson.trace does), the record producer no ``info``
    modelled = kw.pop("info", None)
    options = {"sm_count": modelled.sm_count} if modelled is not None else {}
    with emulator.emulated(arch=arch, **options) as session:
        got = les.module("record").trace(*args, **kw, **extra, seed=seed)
    return model, lessons.emulated_trace(got, session, les.simulated), session


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("stem, launch", SHAPES, ids=[f"{s}-{'-'.join(f'{k}{v}' for k, v in l.items())}"
                                                     for s, l in SHAPES])
def test_emulated_trace_equals_the_cpu_model(stem, launch, arch):
    model, emu, session = _emulated(stem, arch, 11, launch)
    emu.assert_equal(model, names=sorted(model.arrays))
    assert emu.source == "emulator" and emulator.LABEL in emu.provenance
    assert [s.line for s in emu.steps] == [s.line for s in model.steps]
    # the lesson kernels are hazard-free at these shapes (the deck variant with 8 warps reads the
    # prefilled slots: written, so no uninitialised read either)
    assert not [h.text() for r in session.runs for h in r.hazards if h.severity == "error"]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("block", [1, 7, 31, 32, 33, 96, 100, 1000, 1024])
def test_emulated_reductions_equal_the_model(block, arch, rng):
    p = rng.standard_normal(block).astype(np.float32)
    for corrected in (False, True):
        if not corrected and block < 32:
            continue
        want = red_model.seed_reduce(p, corrected)
        with emulator.emulated(arch=arch):
            got = red_record.seed_reduce(p, corrected)
        for k in ("levels", "finish", "out"):
            np.testing.assert_array_equal(got[k].view(np.uint32), want[k].view(np.uint32), err_msg=k)
    total = red_model.block_reduce_sum(p)[0]
    total2 = red_model.block_reduce_sum((2 * p).astype(np.float32))[0]
    with emulator.emulated(arch=arch):
        out = red_record.block_reduce(p)
    assert (out[0].view(np.uint32) == np.float32(total).view(np.uint32)).all()
    assert (out[1].view(np.uint32) == np.float32(total2).view(np.uint32)).all()


def test_the_deck_kernel_without_prefill_reads_unwritten_slots_and_the_emulator_says_so():
    """The deck's latent fault (notebook 12): with fewer than 32 warps, warp 0 reads smem slots no
    warp wrote.  The emulator names it (an uninitialised shared read at the deck's line) -- silicon
    would add whatever the slots held."""
    les = lessons.RMSNORM_DECK
    args, kw = les.inputs(3, d=500, block=96, variant="deck", prefill=False)
    with emulator.emulated() as session:
        les.module("record").trace(*args, **kw, seed=3)
    found = [h for r in session.runs for h in r.hazards if h.kind == "uninitialized"]
    assert found and "smem[3]" in found[0].message
    line = les.source("phase2").text
    assert "smem[tid]" in line


@pytest.mark.gpu
@pytest.mark.parametrize("stem, launch", SHAPES, ids=[f"{s}-{'-'.join(f'{k}{v}' for k, v in l.items())}"
                                                     for s, l in SHAPES])
def test_emulated_trace_equals_the_silicon(stem, launch):
    """The emulator, for this GPU's architecture, against the traced kernel on the GPU itself."""
    les = lessons.LESSONS[stem]
    sm = backend.detect().sm
    args, kw = les.inputs(13, **launch)
    extra = les.source_lines(les.source(), **kw) if les.source_lines else {}
    silicon = les.module("record").trace(*args, **kw, **extra, seed=13)
    with emulator.emulated(arch=sm) as session:
        emu = les.module("record").trace(*args, **kw, **extra, seed=13)
    names = [k for k in silicon.arrays if k not in les.simulated]
    lessons.emulated_trace(emu, session, les.simulated).assert_equal(silicon, names=names)


def test_a_new_device_never_sees_an_old_devices_module_variables():
    """Bug class: a module's __device__ variables were kept per id(device); a new device that reused
    a dead one's id got the old regions, and a traced kernel read its record pointers from a stranger
    (a flaky "some launched thread did not write its record")."""
    import gc

    prog = emulator.compile_file("vector_add.cu", traced=True)
    for _ in range(20):          # CPython reuses a collected object's id within a few rounds
        dev = emulator.Device()
        regs = prog.globals_on(dev)
        assert regs and all(dev.space.region_at(r.base) is r for r in regs.values())
        del dev, regs
        gc.collect()


@pytest.mark.skipif(backend.has_gpu(), reason="CPU mode: the lesson's trace comes from the emulator")
@pytest.mark.parametrize("stem, launch", [("vector_add", dict(n=4096, block=64)), ("vector_add", dict(n=70, block=96)),
                                          ("grid_stride", dict(n=2500, grid=3, block=100))])
def test_a_lessons_cpu_mode_trace_is_emulated_and_models_the_records_gpu(stem, launch):
    """Lesson.trace in CPU mode: the emulator runs the traced kernel, the launch's ``info`` (the GPU
    the CPU model models) does not reach the GPU producer, and %smid spreads over that GPU's SMs."""
    from gpu_viz.measure import records

    tr = lessons.LESSONS[stem].trace(seed=5, **launch)
    assert tr.source == "emulator", tr.provenance
    model = lessons.LESSONS[stem].trace(seed=5, producer="model", **launch)
    tr.assert_equal(model, names=sorted(model.arrays))
    if "smid" in tr.arrays:
        assert int(tr.arrays["smid"].max()) < records.lesson_device()[0].sm_count
