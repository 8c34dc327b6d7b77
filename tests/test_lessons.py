"""gpu_viz.lessons: one stem per lesson through every layer, so `ls` shows the data path; every
lesson's cases (refusals, largest launch, small launch, integer arguments) come from the registry."""
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest

from gpu_viz import backend, kernels, lessons

ROOT = Path(__file__).resolve().parent.parent
STEMS = list(lessons.LESSONS)


def _small(stem):
    return dict(lessons.LESSONS[stem].cases.small)


@pytest.mark.parametrize("stem", STEMS)
def test_every_layer_carries_the_stem(stem):
    """kernels/<file> (its own <stem>.cu, or for a lesson without a kernel of its own the one it
    models), gpu_viz/record/<stem>.py exactly when it has a GPU producer, gpu_viz/model/<stem>.py
    exactly when its CPU producers include the model, gpu_viz/frames/<stem>.py always."""
    les = lessons.LESSONS[stem]
    assert (kernels.KERNEL_DIR / les.kernel_file).is_file(), les.kernel_file
    assert les.gpu == (les.kernel_file == f"{stem}.cu"), "a GPU producer runs the lesson's own kernel file"
    for layer, present in (("record", les.gpu), ("model", "model" in les.cpu), ("frames", True)):
        assert (ROOT / "gpu_viz" / layer / f"{stem}.py").is_file() == present, (layer, stem, present)
        if present:
            assert hasattr(les.module(layer), "animation" if layer == "frames" else "trace"), (layer, stem)
    assert (ROOT / "tests" / f"test_{stem}.py").is_file()
    assert (ROOT / "notebooks" / f"{les.notebook}.ipynb").is_file()


def _inputs_arguments(les):
    """The launch arguments a lesson's trace takes: its ``inputs``'s, after the seed."""
    return list(inspect.signature(les.inputs).parameters)[1:]


@pytest.mark.parametrize("stem", STEMS)
def test_every_lesson_carries_its_cases(stem):
    """The registry is the one list: a lesson without its refusals, its largest launch, its players
    (or, with a GPU producer, its sanitizer launches and kernel entry points) fails here, and every
    launch it lists names only arguments its trace takes."""
    les = lessons.LESSONS[stem]
    c = les.cases
    assert c.refused and c.largest and c.players, f"{stem}: refusals, a largest launch and players are required"
    if les.gpu:
        assert c.sanitize and c.entry_points, f"{stem}: a GPU producer needs sanitizer launches and its entry points"
    else:
        assert not c.sanitize, f"{stem}: no GPU producer, nothing for the sanitizer to launch"
    known = set(_inputs_arguments(les)) | {"seed"}
    launches = [c.small, c.largest, *(launch for launch, _w in c.refused), *(launch for _n, launch, _o in c.players),
                *c.sanitize]
    unknown = sorted({k for launch in launches for k in launch} - known)
    assert not unknown, f"{stem}: launches name arguments its trace does not take: {unknown}"
    for launch, words in c.refused:
        assert words, launch


def test_player_names_are_unique_across_lessons():
    names = [name for les in lessons.LESSONS.values() for name, _l, _o in les.cases.players]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


@pytest.mark.parametrize("stem", STEMS)
def test_every_listed_launch_is_accepted(stem):
    """The small, largest, player and sanitizer launches pass the lesson's own checks (a sanitizer
    launch that a lesson refuses would fail only on a GPU)."""
    les = lessons.LESSONS[stem]
    c = les.cases
    for launch in (c.small, c.largest, *(launch for _n, launch, _o in c.players), *c.sanitize):
        kw = {k: v for k, v in launch.items() if k != "seed"}
        les.inputs(launch.get("seed", 1), **kw)


def test_the_cases_are_read_only_plain_data():
    c = lessons.VECTOR_ADD.cases
    with pytest.raises(TypeError):
        c.largest["n"] = 1
    with pytest.raises(AttributeError):
        c.small = {}
    assert json.loads(json.dumps([dict(x) for x in (c.small, c.largest, *c.sanitize)]))


def test_the_lesson_contract_is_checked_when_a_lesson_is_made():
    cases = lessons.VECTOR_ADD.cases
    args = ("x", "03_warps_simt", ("vector_add",), "claim", lambda seed: ((), {}))
    with pytest.raises(ValueError, match="cpu names the emulator"):
        lessons.Lesson(*args, gpu=False, cpu=("emulator", "model"), cases=cases)
    for cpu in ((), ("model", "model"), ("silicon",)):
        with pytest.raises(ValueError, match="cpu must name"):
            lessons.Lesson(*args, cpu=cpu, cases=cases)
    with pytest.raises(TypeError, match="cases"):
        lessons.Lesson(*args)
    with pytest.raises(TypeError, match="cases must be a LessonCases"):
        lessons.Lesson(*args, cases={"refused": ()})


def _expected_cpu_producer(les):
    """The first of ``les.cpu`` that can run here (the emulator needs NVRTC), else None."""
    from gpu_viz import emulator

    for which in les.cpu:
        if which == "model" or emulator.available():
            return which
    return None


@pytest.mark.parametrize("stem", STEMS)
def test_cpu_mode_uses_the_lessons_first_cpu_producer_that_can_run(stem):
    """CPU mode runs the traced kernel's own PTX in the emulator (labelled so) for the lessons that
    list it first; the model for those that list it first (a scheduling model, not a kernel's
    semantics; the reduction tree, as notebook 12 shows it) or that have no kernel of their own."""
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    from gpu_viz import emulator

    les = lessons.LESSONS[stem]
    want = _expected_cpu_producer(les)
    if want is None:
        with pytest.raises(RuntimeError, match="needs NVRTC"):
            les.trace(seed=5, **_small(stem))
        return
    tr = les.trace(seed=5, **_small(stem))
    assert tr.source == want
    if want == "model":
        assert backend.MODEL_LABEL in tr.provenance or "MODEL (not measured)" in tr.provenance, tr.provenance
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
@pytest.mark.parametrize("stem", STEMS)
def test_trace_in_cpu_mode_is_labelled_and_plays(stem, producer):
    """Every producer a lesson lists makes a labelled trace its player shows; a producer it does
    not list is a clear error naming it (bug class: forcing the emulator on the scheduling lesson
    raised AttributeError '_EmulatedKernel' object has no attribute 'kernel')."""
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    les = lessons.LESSONS[stem]
    if producer not in les.cpu:
        words = "has no CPU model" if producer == "model" else "does not run in the emulator"
        with pytest.raises(ValueError, match=words):
            les.trace(seed=5, producer=producer, **_small(stem))
        return
    if producer == "emulator" and not __import__("gpu_viz.emulator").emulator.available():
        pytest.skip("NVRTC is not installed (the emulator's compiler)")
    tr = les.trace(seed=5, producer=producer, **_small(stem))
    assert tr.source == producer
    if producer == "model":
        assert backend.MODEL_LABEL in tr.provenance or "MODEL (not measured)" in tr.provenance, tr.provenance
    an = les.animation(tr)
    assert len(an) >= 1 and an.provenance == tr.provenance
    # a model's or the emulator's player never claims a run on the hardware, in its title or captions
    claims = ("silicon", "measured on", "on the GPU", "recorded on")
    texts = [an.title, *(f.caption for f in an.frames)]
    assert not [t for t in texts for c in claims if c in t], texts[:3]
    if any(s.line for s in tr.steps):
        assert an.source == les.source_for(tr).text


@pytest.mark.parametrize("stem", STEMS)
def test_the_gpu_producer_is_a_gpu_lessons_only(stem):
    les = lessons.LESSONS[stem]
    if les.gpu:
        if backend.has_gpu():
            pytest.skip("CPU-mode behaviour")
        with pytest.raises(backend.GPUUnavailable):
            les.trace(seed=5, producer="gpu", **_small(stem))
    else:
        with pytest.raises(ValueError, match="has no GPU producer"):
            les.trace(seed=5, producer="gpu", **_small(stem))


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


# Every lesson lists launches its trace must refuse at once (before any input is made or kernel
# launched), the argument named in the error: sizes past the trace limit (they would take minutes
# and gigabytes), wrong types, and non-finite or negative float arguments (the traces use NaN to
# mean "not written", so NaN in would be silent).  LessonCases.refused, in gpu_viz/lessons.py.
_REFUSED = [(stem, dict(launch), words) for stem, les in lessons.LESSONS.items() for launch, words in les.cases.refused]


@pytest.mark.parametrize("stem,launch,words", _REFUSED,
                         ids=[f"{s}-" + "-".join(f"{k}={v!r}"[:16] for k, v in launch.items()) for s, launch, _w in _REFUSED])
def test_trace_refuses_bad_launch_arguments_at_once(stem, launch, words):
    import time

    t0 = time.perf_counter()
    with pytest.raises((TypeError, ValueError)) as exc:
        lessons.LESSONS[stem].trace(seed=1, **launch)
    assert time.perf_counter() - t0 < 2.0
    assert words in str(exc.value), str(exc.value)


@pytest.mark.parametrize("seed,err", [(-1, ValueError), ("abc", TypeError), (1.5, TypeError)])
def test_trace_names_a_bad_seed(seed, err):
    with pytest.raises(err, match=r"^seed must"):
        lessons.LESSONS["vector_add"].trace(seed=seed)


def test_the_limits_leave_the_lessons_room():
    """The defaults and the notebooks' sizes are far inside the limits."""
    assert lessons.MAX_TRACE >= 2048 * 256 and lessons.MAX_BLOCKS >= 2048 * 16 and lessons.MAX_SPIN_CYCLES >= 20000 * 100
    tr = lessons.GRID_STRIDE.trace(seed=1, n=lessons.MAX_TRACE, grid=1024, block=1024)
    assert tr.params["n"] == lessons.MAX_TRACE


@pytest.mark.parametrize("stem", STEMS)
def test_the_player_of_the_largest_allowed_trace_is_quick_or_refused(stem):
    """A learner may ask for the largest trace the limits allow: its player draws the first warps
    (a few dozen frames at most) in seconds, or refuses at once naming its own limit; it never
    renders thousands of frames (vector add at n=4096 once took two minutes, n=2**20 hours)."""
    import time

    if backend.has_gpu():
        pytest.skip("CPU-mode timing of the model and its frames")
    les = lessons.LESSONS[stem]
    tr = les.trace(seed=1, **les.cases.largest)
    t0 = time.perf_counter()
    try:
        an = les.animation(tr)
    except ValueError as exc:
        assert "at most" in str(exc) and time.perf_counter() - t0 < 2.0, str(exc)
        return
    assert len(an) <= 60 and time.perf_counter() - t0 < 30.0, (len(an), time.perf_counter() - t0)


# ----------------------------------------------------------------------------- numpy and bool launch arguments
def _int_args(les):
    """Every integer launch argument of a lesson (its ``inputs``'s int-defaulted ones), at its small
    launch's value or else its default."""
    params = inspect.signature(les.inputs).parameters
    return {name: les.cases.small.get(name, params[name].default) for name in _inputs_arguments(les)
            if type(params[name].default) is int}


_INT_ARGS = {stem: _int_args(les) for stem, les in lessons.LESSONS.items()}


def test_every_lesson_has_integer_arguments_to_check():
    """The int-defaulted arguments of ``inputs`` are found (a lesson whose sizes are all keyword
    defaults of other types would silently skip the tests below)."""
    assert all(_INT_ARGS.values()), {s: a for s, a in _INT_ARGS.items() if not a}
    assert _INT_ARGS["grid_stride"] == {"n": 300, "grid": 2, "block": 128}
    assert set(_INT_ARGS["scheduling"]) == {"blocks", "threads", "spin_cycles", "fma_iters"}


@pytest.mark.parametrize("stem,arg", [(s, a) for s, args in _INT_ARGS.items() for a in args])
@pytest.mark.parametrize("kind", ["uint32", "int32", "uint64", "int64"])
def test_a_numpy_integer_launch_argument_is_its_value(stem, arg, kind):
    """Bug class: numpy integers reaching the launch arithmetic (a uint32 block raised OverflowError
    at -(-n // block); an int32 grid of 2**22 wrapped to a trace of 0 threads).  Each is taken as
    the Python int it holds: the trace equals the one made with the int."""
    import numpy as np

    if backend.has_gpu():
        pytest.skip("CPU-mode traces (the model) compared")
    les, args = lessons.LESSONS[stem], dict(_small(stem), **_INT_ARGS[stem])
    want = les.trace(seed=2, **args)
    got = les.trace(seed=2, **dict(args, **{arg: getattr(np, kind)(args[arg])}))
    assert got.diff(want) == []
    assert got.params == want.params and all(type(v) is not getattr(np, kind) for v in got.params.values())


@pytest.mark.parametrize("stem,arg", [(s, a) for s, args in _INT_ARGS.items() for a in args])
def test_a_bool_launch_argument_is_refused_naming_it(stem, arg):
    """``block=True`` ran a 1-thread block: a bool is not a count."""
    with pytest.raises((TypeError, ValueError), match=arg):
        lessons.LESSONS[stem].trace(seed=1, **{**_small(stem), **_INT_ARGS[stem], arg: True})


def test_a_numpy_grid_past_the_trace_limit_is_refused_not_wrapped():
    import numpy as np

    with pytest.raises(ValueError, match=r"grid \* block must be <= \d+ threads for a trace, got 4194304 \* 1024"):
        lessons.GRID_STRIDE.trace(seed=1, grid=np.int32(2**22))


@pytest.mark.parametrize("stem", STEMS)
def test_another_lessons_trace_is_a_clear_error(stem):
    """Bug class: a trace passed to the wrong lesson's player raised a bare KeyError ('warps')."""
    if backend.has_gpu():
        pytest.skip("CPU-mode traces")
    les = lessons.LESSONS[stem]
    for other in lessons.LESSONS.values():
        if other is les:
            continue
        tr = other.trace(seed=1, **_small(other.stem))
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


# ----------------------------------------------------------------------------- lessons without a kernel of their own
@pytest.mark.parametrize("policy", ["greedy", "round robin"])
@pytest.mark.parametrize("n_warps,latency,compute,loads", [(1, 200, 16, 3), (8, 691, 16, 5), (42, 691, 16, 5),
                                                           (64, 1000, 1, 8), (3, 1, 1, 1), (256, 50, 1, 2)])
def test_the_latency_lessons_limit_bounds_the_models_run(n_warps, latency, compute, loads, policy):
    """The latency lesson refuses a run before it starts from gpu_viz.model.latency.cycles_bound:
    a true upper bound on the cycles the model takes."""
    from gpu_viz.model import latency as model

    tr = model.simulate(n_warps, latency, compute, loads, policy=policy)
    assert tr.params["cycles"] <= model.cycles_bound(n_warps, latency, compute, loads)


def test_the_latency_lessons_trace_is_the_models_run():
    from gpu_viz.model import latency

    tr = lessons.LATENCY.trace(seed=3, n_warps=4, latency_cycles=60, compute_per_load=6, loads_per_warp=2)
    tr.assert_equal(latency.simulate(4, 60, 6, 2), names=sorted(tr.arrays))
    assert tr.source == "model" and tr.params["seed"] == 3 and lessons.LATENCY.producer() == "model"
    an = lessons.LATENCY.animation(tr)
    assert an.source == lessons.LATENCY.source().text and "float4 v" in an.source


def test_the_latency_lessons_contrast_player_is_the_runs_side_by_side():
    """Notebook 04's few-warps-against-many player, through the lesson: the runs on one time axis,
    no source pane (no one line belongs to every run), one label per run."""
    from gpu_viz.frames import latency as frames
    from gpu_viz.widgets import Animation

    runs = [lessons.LATENCY.trace(seed=1, n_warps=n, latency_cycles=120, compute_per_load=8, loads_per_warp=3)
            for n in (2, 16)]
    an = lessons.LATENCY.animation(runs[0], against=runs[1:], labels=["2 warps", "16 warps"], count=6)
    want = Animation(frames.contrast_frames(runs, ["2 warps", "16 warps"], count=6), title=an.title,
                     provenance=an.provenance, interval_ms=700)
    assert [f.markup for f in an.frames] == [f.markup for f in want.frames] and an.source is None
    assert "2 warps against 16 warps" in an.title and "MODEL (not measured)" in an.provenance
    default = lessons.LATENCY.animation(runs[0], against=runs[1:], count=6)     # labels: "N warps"
    assert [f.caption for f in default.frames] == [f.caption for f in an.frames] and "16 warps" in an.frames[0].caption
    with pytest.raises(ValueError, match="labels must give one label per run"):
        lessons.LATENCY.animation(runs[0], against=runs[1:], labels=["2 warps"])
    with pytest.raises(TypeError, match="against must hold Traces"):
        lessons.LATENCY.animation(runs[0], against=[{"state": 1}])


def test_the_reduction_lessons_trace_is_the_seed_tree():
    """Notebook 12's tree: 96 ones lose 32 partials; the fix counts every one; either producer."""
    from gpu_viz import emulator
    from gpu_viz.model import reduction

    seed, fixed = lessons.REDUCTION.trace(block=96), lessons.REDUCTION.trace(block=96, corrected=True)
    assert seed["out"][0] == 64 and fixed["out"][0] == 96
    want = reduction.seed_reduce(seed["partials"])
    for k in ("levels", "finish", "out"):
        assert (seed[k].view("u4") == want[k].view("u4")).all(), k
    if emulator.available() and not backend.has_gpu():
        for tr in (seed, fixed):
            emu = lessons.REDUCTION.trace(seed=1, producer="emulator", block=96, corrected=tr.params["corrected"])
            emu.assert_equal(tr, names=sorted(tr.arrays))
    rnd = lessons.REDUCTION.trace(seed=7, block=40, corrected=True, values="random")
    assert rnd["partials"].std() > 0 and rnd.params == {"block": 40, "corrected": True, "seed": 7}


# ----------------------------------------------------------------------------- the registry's readers
def _sanitize_script():
    spec = importlib.util.spec_from_file_location("sanitize_lessons", ROOT / "scripts" / "sanitize" / "lessons.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_sanitizer_runs_every_lessons_launches():
    """scripts/sanitize/lessons.py takes its launches from the registry: every GPU lesson's, nothing else."""
    got = [(les.stem, dict(launch)) for les, launch, _seed in _sanitize_script().lesson_launches()]
    want = [(les.stem, dict(launch)) for les in lessons.LESSONS.values() if les.gpu for launch in les.cases.sanitize]
    assert got == want and {s for s, _l in got} == {s for s, les in lessons.LESSONS.items() if les.gpu}


@pytest.mark.parametrize("stem", [s for s, les in lessons.LESSONS.items() if "emulator" in les.cpu])
def test_the_sanitizers_check_runs_with_the_emulator_standing_in_for_the_gpu(stem):
    """The sanitizer's comparison, run on the CPU: the emulator's trace of the lesson's first
    sanitizer launch against its CPU producer (the model, or the emulator again)."""
    from gpu_viz import emulator

    if backend.has_gpu() or not emulator.available():
        pytest.skip("CPU mode with NVRTC")
    les = lessons.LESSONS[stem]
    script = _sanitize_script()
    script.check_launch(les, les.cases.sanitize[0], seed=1000, producer="emulator")
    a, b = les.trace(seed=1, **les.cases.sanitize[0]), les.trace(seed=2, **les.cases.sanitize[0])
    if a.diff(b):          # different inputs: the comparison must notice
        with pytest.raises(AssertionError):
            script.compare(a, b, les.simulated)


def _notebook_code(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize("stem", STEMS)
def test_each_lessons_notebook_asks_the_lesson_for_its_traces(stem):
    """A notebook gets a lesson's traces from the lesson (``LESSON.trace``), never by choosing a
    producer: notebooks 04 and 12 once called the latency model and the reduction producers."""
    les = lessons.LESSONS[stem]
    code = _notebook_code(les.notebook)
    name = stem.upper()
    assert getattr(lessons, name) is les
    assert re.search(rf"\b{name}\.trace\(", code), f"{les.notebook} never calls {name}.trace()"


def test_notebooks_04_and_12_do_not_pick_the_latency_or_reduction_producers():
    code = _notebook_code("04_latency_hiding") + _notebook_code("12_four_phase_trace")
    assert not re.search(r"\.simulate\(|seed_reduce\(|reduction_frames|frames\.reduction", code)
