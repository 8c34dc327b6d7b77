"""gpu_viz.lessons: one stem per lesson through every layer, so `ls` shows the data path."""
import importlib
from pathlib import Path

import pytest

from gpu_viz import backend, kernels, lessons

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_every_layer_carries_the_stem(stem):
    les = lessons.LESSONS[stem]
    assert (kernels.KERNEL_DIR / les.kernel_file).is_file()
    # a lesson whose CPU producer is the emulator alone (cpu=("emulator",)) has no CPU model
    for layer in ("record", "model", "frames") if "model" in les.cpu else ("record", "frames"):
        assert (ROOT / "gpu_viz" / layer / f"{stem}.py").is_file(), (layer, stem)
        assert hasattr(les.module(layer), "animation" if layer == "frames" else "trace"), (layer, stem)
    assert (ROOT / "tests" / f"test_{stem}.py").is_file()
    assert (ROOT / "notebooks" / f"{les.notebook}.ipynb").is_file()


_SMALL = {"vector_add": {}, "divergence": {}, "grid_stride": {"n": 300},
          "scheduling": {"blocks": 120}, "rmsnorm_deck": {"d": 64, "block": 64},
          "coalescing": {"n": 64}, "banks": {}, "races": {"kernel": "histogram_atomic", "runs": 3},
          "reduction_ladder": {"block": 32}}


@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_cpu_mode_uses_the_emulator_when_it_can_else_the_model(stem):
    """CPU mode runs the traced kernel's own PTX in the emulator (labelled so), the scheduling
    lesson's timeline excepted (a scheduling model, not a kernel's semantics); the model otherwise."""
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    from gpu_viz import emulator

    les = lessons.LESSONS[stem]
    if "model" not in les.cpu and not emulator.available():
        with pytest.raises(RuntimeError, match="needs NVRTC"):
            les.trace(seed=5, **_SMALL[stem])
        return
    tr = les.trace(seed=5, **_SMALL[stem])
    if stem == "scheduling" or not emulator.available():
        assert tr.source == "model" and backend.MODEL_LABEL in tr.provenance
    else:
        assert tr.source == "emulator" and emulator.LABEL in tr.provenance and "measured" not in tr.provenance.replace(
            "nothing was measured", "")
        assert tr.params["emulator"]["hazards"] == [], tr.params["emulator"]


def test_a_launch_too_large_to_emulate_comes_from_the_model():
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    big = lessons.MAX_EMULATED_THREADS + 1
    assert lessons.VECTOR_ADD.producer(n=big, block=256) == "model"
    assert lessons.GRID_STRIDE.producer(n=big, grid=1, block=1024) == "model"
    with pytest.raises(ValueError, match="producer must be one of"):
        lessons.VECTOR_ADD.trace(seed=1, producer="silicon")


@pytest.mark.parametrize("producer", ["emulator", "model"])
@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_trace_in_cpu_mode_is_labelled_and_plays(stem, producer):
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    les = lessons.LESSONS[stem]
    if producer == "emulator" and (stem == "scheduling" or not __import__("gpu_viz.emulator").emulator.available()):
        pytest.skip("no emulated producer for this lesson here")
    if producer == "model" and "model" not in les.cpu:
        with pytest.raises(ValueError, match="has no CPU model"):
            les.trace(seed=5, producer=producer, **_SMALL[stem])
        return
    tr = les.trace(seed=5, producer=producer, **_SMALL[stem])
    assert tr.source == producer
    if producer == "model":
        assert backend.MODEL_LABEL in tr.provenance
    an = les.animation(tr)
    assert len(an) >= 1 and an.provenance == tr.provenance
    # a model's or the emulator's player never claims a run on the hardware, in its title or captions
    claims = ("silicon", "measured on", "on the GPU", "recorded on")
    texts = [an.title, *(f.caption for f in an.frames)]
    assert not [t for t in texts for c in claims if c in t], texts[:3]
    if any(s.line for s in tr.steps):
        assert an.source == les.source_for(tr).text


def test_a_missing_module_of_ours_is_an_error_not_a_skip(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gpu_viz.frames.vector_add", None)
    with pytest.raises(ImportError):
        lessons.VECTOR_ADD.module("frames")


def test_bad_layer():
    with pytest.raises(ValueError, match="layer must be"):
        lessons.VECTOR_ADD.module("view")


def test_the_data_path_reads_off_the_file_names():
    """kernels/<stem>.cu -> gpu_viz/record|model|frames/<stem>.py for notebook 03's and 12's lessons."""
    names = {p.stem for p in (ROOT / "gpu_viz" / "record").glob("*.py")}
    assert {"vector_add", "divergence", "rmsnorm_deck", "reduction"} <= names
    assert importlib.import_module("gpu_viz.model.reduction").FILE == "reduction.cu"


# Every launch argument a learner can pass to a lesson's trace, with values the trace must refuse
# at once (before any input is made or kernel launched), the argument named in the error: sizes
# past the trace limit (they would take minutes and gigabytes), wrong types, and non-finite or
# negative float arguments (the traces use NaN to mean "not written", so NaN in would be silent).
_HUGE = 10**9
_REFUSED = {
    "vector_add": [("n", _HUGE), ("n", 0), ("n", 64.0), ("block", 0), ("block", 2048)],
    "divergence": [("n", _HUGE), ("n", -5), ("n", 64.0), ("block", 2048), ("iters", _HUGE), ("iters", -1),
                   ("kernel", "nope")],
    "grid_stride": [("n", _HUGE), ("n", -1), ("grid", 1.5), ("grid", 4096), ("block", 0),
                    ("alpha", float("nan")), ("alpha", float("inf")), ("alpha", 1e39), ("alpha", "2")],
    "scheduling": [("blocks", _HUGE), ("blocks", 0), ("threads", 2000), ("spin_cycles", _HUGE * 1000),
                   ("spin_cycles", -1), ("spin_cycles", 1.5), ("fma_iters", _HUGE)],
    "rmsnorm_deck": [("d", _HUGE), ("d", 0), ("block", 2048), ("eps", -1.0), ("eps", float("nan")),
                     ("eps", float("inf")), ("eps", True), ("variant", "nope")],
    "coalescing": [("n", _HUGE), ("n", 0), ("n", 64.0), ("block", 2048), ("pattern", "nope")],
    "banks": [("rows", _HUGE), ("cols", 0), ("rows", 1.5), ("case", "nope")],
    "races": [("runs", _HUGE), ("runs", 0), ("grid", _HUGE), ("block", 2048), ("nbins", 0), ("n", 0),
              ("kernel", "nope")],
    "reduction_ladder": [("block", 96), ("block", 2048), ("block", 64.0), ("rung", "nope")],
}


def test_every_lesson_has_refusal_cases():
    assert set(_REFUSED) == set(lessons.LESSONS)


@pytest.mark.parametrize("stem,arg,value", [(s, a, v) for s, cases in _REFUSED.items() for a, v in cases],
                         ids=lambda v: repr(v)[:12])
def test_trace_refuses_bad_launch_arguments_at_once(stem, arg, value):
    import time

    if (stem, arg, value) == ("grid_stride", "grid", 4096):
        launch = {"grid": 4096, "block": 1024}  # 4M threads: past the trace limit
    else:
        launch = {arg: value}
    t0 = time.perf_counter()
    with pytest.raises((TypeError, ValueError)) as exc:
        lessons.LESSONS[stem].trace(seed=1, **launch)
    assert time.perf_counter() - t0 < 2.0
    assert (arg in str(exc.value)) or ("grid * block" in str(exc.value)), str(exc.value)


@pytest.mark.parametrize("seed,err", [(-1, ValueError), ("abc", TypeError), (1.5, TypeError)])
def test_trace_names_a_bad_seed(seed, err):
    with pytest.raises(err, match=r"^seed must"):
        lessons.LESSONS["vector_add"].trace(seed=seed)


def test_the_limits_leave_the_lessons_room():
    """The defaults and the notebooks' sizes are far inside the limits."""
    assert lessons.MAX_TRACE >= 2048 * 256 and lessons.MAX_BLOCKS >= 2048 * 16 and lessons.MAX_SPIN_CYCLES >= 20000 * 100
    tr = lessons.GRID_STRIDE.trace(seed=1, n=lessons.MAX_TRACE, grid=1024, block=1024)
    assert tr.params["n"] == lessons.MAX_TRACE


#: The largest trace each lesson's limits allow.
_LARGEST = {"vector_add": {"n": lessons.MAX_TRACE, "block": 256},
            "divergence": {"n": lessons.MAX_TRACE, "block": 256},
            "grid_stride": {"n": lessons.MAX_TRACE, "grid": 1024, "block": 1024},
            "scheduling": {"blocks": lessons.MAX_BLOCKS, "threads": 1024},
            "rmsnorm_deck": {"d": lessons.MAX_TRACE, "block": 1024},
            "coalescing": {"n": 1 << 16, "block": 1024},
            "banks": {"rows": 256, "cols": 256},
            # the emulator-only lessons: the largest launch CPU mode emulates (MAX_EMULATED_THREADS)
            "races": {"kernel": "histogram_atomic", "runs": 16, "grid": 8, "block": 128},
            "reduction_ladder": {"block": 1024}}


def test_every_lesson_has_a_largest_case():
    assert set(_LARGEST) == set(lessons.LESSONS)


@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_the_player_of_the_largest_allowed_trace_is_quick_or_refused(stem):
    """A learner may ask for the largest trace the limits allow: its player draws the first warps
    (a few dozen frames at most) in seconds, or refuses at once naming its own limit; it never
    renders thousands of frames (vector add at n=4096 once took two minutes, n=2**20 hours)."""
    import time

    if backend.has_gpu():
        pytest.skip("CPU-mode timing of the model and its frames")
    les = lessons.LESSONS[stem]
    tr = les.trace(seed=1, **_LARGEST[stem])
    t0 = time.perf_counter()
    try:
        an = les.animation(tr)
    except ValueError as exc:
        assert "at most" in str(exc) and time.perf_counter() - t0 < 2.0, str(exc)
        return
    assert len(an) <= 60 and time.perf_counter() - t0 < 30.0, (len(an), time.perf_counter() - t0)


# ----------------------------------------------------------------------------- numpy and bool launch arguments
#: Every integer launch argument of each lesson, at a small value the lesson accepts.
_INT_ARGS = {"vector_add": {"n": 64, "block": 64}, "divergence": {"n": 64, "block": 64, "iters": 8},
             "grid_stride": {"n": 300, "grid": 2, "block": 128},
             "scheduling": {"blocks": 120, "threads": 128, "spin_cycles": 1000, "fma_iters": 0},
             "rmsnorm_deck": {"d": 64, "block": 64}, "coalescing": {"n": 64, "block": 64},
             "banks": {"rows": 32, "cols": 32}, "races": {"runs": 2, "grid": 2, "block": 64, "nbins": 16, "n": 100},
             "reduction_ladder": {"block": 32}}


def test_every_lesson_lists_its_integer_arguments():
    assert set(_INT_ARGS) == set(lessons.LESSONS)


@pytest.mark.parametrize("stem,arg", [(s, a) for s, args in _INT_ARGS.items() for a in args])
@pytest.mark.parametrize("kind", ["uint32", "int32", "uint64", "int64"])
def test_a_numpy_integer_launch_argument_is_its_value(stem, arg, kind):
    """Bug class: numpy integers reaching the launch arithmetic (a uint32 block raised OverflowError
    at -(-n // block); an int32 grid of 2**22 wrapped to a trace of 0 threads).  Each is taken as
    the Python int it holds: the trace equals the one made with the int."""
    import numpy as np

    if backend.has_gpu():
        pytest.skip("CPU-mode traces (the model) compared")
    les, args = lessons.LESSONS[stem], _INT_ARGS[stem]
    want = les.trace(seed=2, **args)
    got = les.trace(seed=2, **dict(args, **{arg: getattr(np, kind)(args[arg])}))
    assert got.diff(want) == []
    assert got.params == want.params and all(type(v) is not getattr(np, kind) for v in got.params.values())


@pytest.mark.parametrize("stem,arg", [(s, a) for s, args in _INT_ARGS.items() for a in args])
def test_a_bool_launch_argument_is_refused_naming_it(stem, arg):
    """``block=True`` ran a 1-thread block: a bool is not a count."""
    with pytest.raises((TypeError, ValueError), match=arg):
        lessons.LESSONS[stem].trace(seed=1, **dict(_INT_ARGS[stem], **{arg: True}))


def test_a_numpy_grid_past_the_trace_limit_is_refused_not_wrapped():
    import numpy as np

    with pytest.raises(ValueError, match=r"grid \* block must be <= \d+ threads for a trace, got 4194304 \* 1024"):
        lessons.GRID_STRIDE.trace(seed=1, grid=np.int32(2**22))


@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_another_lessons_trace_is_a_clear_error(stem):
    """Bug class: a trace passed to the wrong lesson's player raised a bare KeyError ('warps')."""
    if backend.has_gpu():
        pytest.skip("CPU-mode traces")
    les = lessons.LESSONS[stem]
    for other in lessons.LESSONS.values():
        if other is les:
            continue
        tr = other.trace(seed=1, **{k: v for k, v in _INT_ARGS[other.stem].items() if k not in ("threads",)})
        try:
            les.animation(tr)
        except (TypeError, ValueError) as exc:
            assert stem in str(exc), str(exc)
        else:
            raise AssertionError(f"{stem}'s player showed {other.stem}'s trace")
    with pytest.raises(TypeError, match="trace must be a Trace"):
        les.show({"warps": 2})


def test_show_outside_a_notebook_prints_one_line_not_the_html(capsys):
    """Bug class: show() in a plain Python script printed the player's whole HTML (up to 1.2 MB)."""
    if backend.has_gpu():
        pytest.skip("CPU-mode trace")
    lessons.VECTOR_ADD.show(lessons.VECTOR_ADD.trace(seed=1))
    out = capsys.readouterr().out
    assert len(out) < 1000 and "<div" not in out and "static_html()" in out, out[:2000]
    assert out.startswith("<Animation 'C = A + B on 64 elements")


def test_cpu_models_model_the_gpu_of_the_records_beside_them(monkeypatch):
    """Bug class: notebook 03's model placed blocks on the L4's 58 SMs and 09's on the H200's 132,
    both under captions that said L4.  In CPU mode every model that invents %smid models the GPU
    of the committed records (records.lesson_device) and its provenance names that GPU."""
    from gpu_viz import backend
    from gpu_viz.lessons import SCHEDULING, VECTOR_ADD
    from gpu_viz.measure import records

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    info, _label = records.lesson_device()
    short = info.name.replace("NVIDIA ", "")
    for lesson, launch in ((VECTOR_ADD, {"n": 64, "block": 64}), (SCHEDULING, {"blocks": 300})):
        tr = lesson.trace(seed=1, **launch)
        assert tr.params["gpu"] == info.name, (lesson.stem, tr.params["gpu"])
        assert f"{short}'s {info.sm_count} SMs" in tr.provenance, (lesson.stem, tr.provenance)
        if short != "L4":
            assert "L4" not in tr.provenance, (lesson.stem, tr.provenance)
