"""Exercises (gpu_viz.exercises): every notebook has at least two; each checker accepts the
reference answer and names the classic wrong answers; kernel exercises compile for the four
architectures here and, on a GPU (marked gpu), accept the reference and reject each wrong kernel
with the message that names its mistake."""
from pathlib import Path

import pytest

from gpu_viz import backend, exercises as ex

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture
def cpu_mode(monkeypatch):
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))


def _run_cell(code: str):
    """Execute an exercise cell: all lines, the last one's value returned (as a notebook shows it)."""
    lines = code.rstrip().splitlines()
    ns = {}
    exec("\n".join(lines[:-1]), ns)
    return eval(lines[-1], ns)


def test_a_solution_cell_shows_one_labelled_line(cpu_mode):
    """"Run all" runs the hidden solution cells too: each shows one line that says it is the
    reference solution, never a verdict the learner could read as the one on their own answer."""
    for e in ex.exercises():
        shown = repr(_run_cell(e.solution))
        assert "\n" not in shown and shown.startswith(f"[{e.id}] reference solution: "), (e.id, shown)
        assert "correct" not in shown and "not graded" not in shown, (e.id, shown)


#: the closing recap teaches nothing new: it names the three forces the earlier notebooks measured,
#: whose exercises are the recap's questions
RECAP = "14_recap"


def test_every_notebook_has_two_exercises():
    by_nb = {nb: [e.id for e in ex.exercises(nb)] for nb in NOTEBOOKS if nb != RECAP}
    assert all(len(v) >= 2 for v in by_nb.values()), by_nb
    assert {e.notebook for e in ex.exercises()} <= set(NOTEBOOKS)


def test_an_exercise_id_names_the_module_that_registers_it():
    from gpu_viz.exercises import core

    for e in ex.exercises():
        topic = e.id.split(".")[0]
        assert (Path(core.__file__).parent / f"{topic}.py").is_file(), e.id
    bad = core.Exercise("03.spare", "03_warps_simt", "predict-then-run", "", "", "", "", None, dict, print)
    with pytest.raises(ValueError, match="test_exercises.<name>"):
        core.register(bad)
    assert "03.spare" not in core.REGISTRY


def test_unknown_exercise_names_the_ids():
    with pytest.raises(KeyError, match="kernel_scheduling.doubling"):
        ex.check("07.nope", 1)


PREDICT = [e.id for e in ex.exercises() if e.kind != "write-the-kernel"]
KERNEL = [e.id for e in ex.exercises() if e.kind == "write-the-kernel"]


@pytest.mark.parametrize("eid", PREDICT)
def test_solution_passes_and_placeholder_is_not_graded_in_cpu_mode(eid, cpu_mode):
    e = ex.get(eid)
    v = _run_cell(e.solution)
    assert v.ok is True, v.text()
    p = _run_cell(e.placeholder)
    assert p.ok is None and "no answer yet" in p.message, p.text()



def _g(eid):
    return ex.given(eid)


# (exercise, wrong answer (callable of the given facts), a fragment the verdict must contain)
WRONG = [
    ("whole_chip.bytes", lambda g: 4 * g["n"], "one direction only"),
    ("whole_chip.bytes", lambda g: g["n"], "element count"),
    ("whole_chip.bytes", lambda g: 2 * 4 * g["n"] / 2**20, "MiB"),
    ("whole_chip.time", lambda g: g["bytes"] / (g["copy_GBps"] * 2**30) * 1e6, "GiB/s"),
    ("whole_chip.time", lambda g: g["bytes"] / (g["copy_GBps"] * 1e9) * 1e3, "milliseconds"),
    ("streaming_multiprocessor.regs", lambda g: g["regs_per_sm"] // g["max_threads_per_block"], "threads of one block"),
    ("streaming_multiprocessor.warps", lambda g: (3, 28), "rounds a block up to whole warps"),
    ("streaming_multiprocessor.warps", lambda g: (4, 4), "idle lanes"),
    ("warps_simt.warps", lambda g: (4, 4), "warps of elements"),
    ("warps_simt.warps", lambda g: (6, 4), "which thread indices does the last warp cover"),
    ("latency_hiding.hide", lambda g: 4 * next(w for w in range(1, 257) if __import__("gpu_viz.model.latency", fromlist=["x"])
                                   .utilization(w, g["latency_cycles"], 16) >= 0.9), "per SM"),
    ("latency_hiding.little", lambda g: g["copy_GBps"] * g["latency_ns"], "whole chip"),
    ("latency_hiding.little", lambda g: g["copy_GBps"] * g["latency_cycles"] / g["sm_count"], "cycles"),
    ("block_1024_cap.blocks", lambda g: g["max_threads_per_sm"] // g["threads_per_block"], "thread limit alone"),
    ("block_1024_cap.fit1024", lambda g: 1, "not the SM's size"),
    ("grid_stride_loops.passes", lambda g: (2, 452), "floor(n / stride)"),
    ("grid_stride_loops.passes", lambda g: (3, 451), "off by one"),
    ("kernel_scheduling.doubling", lambda g: g["sm_count"] + 1, "SMs + 1"),
    ("kernel_scheduling.doubling", lambda g: g["sm_count"] * g["resident_blocks_per_sm"], "first wave"),
    ("kernel_scheduling.waves", lambda g: -(-g["blocks"] // g["sm_count"]), "divides by the SMs only"),
    ("rmsnorm_four_phases.bytes", lambda g: 3 * g["M"] * g["d"] * 2 + g["d"] * 2, "counted x twice"),
    ("rmsnorm_four_phases.bytes", lambda g: 2 * (2 * g["M"] * g["d"] * 2 + g["d"] * 2), "float32"),
    ("rmsnorm_four_phases.bytes", lambda g: 2 * g["M"] * g["d"] * 2, "left out the weight w"),
    ("rmsnorm_four_phases.bytes", lambda g: 3 * g["M"] * g["d"] * 2, "once per row"),
    ("rmsnorm_speedup.inflight", lambda g: g["block"] * 2, "one block only"),
    ("rmsnorm_speedup.inflight", lambda g: g["resident_threads_per_sm"] * 4, "float32 loads"),
    ("rmsnorm_four_phases.warp_loads", lambda g: 3 * 32, "every warp on the last pass"),
    ("rmsnorm_four_phases.warp_loads", lambda g: g["d"], "element count"),
    ("rmsnorm_speedup.amdahl", lambda g: g["norm_speedup"], "norms' own speed-up"),
    ("rmsnorm_speedup.amdahl", lambda g: 1 / (1 - g["norm_share"]), "Amdahl bound"),
    ("rmsnorm_speedup.amdahl", lambda g: g["norm_share"] * (1 - 1 / g["norm_speedup"]), "time saved"),
    ("four_phase_trace.lane0", lambda g: sum(g["lanes"][:8]), "neighbours"),
    ("four_phase_trace.lane0", lambda g: g["lanes"][0], "__shfl_up_sync"),
    ("four_phase_trace.lane0", lambda g: sum(g["lanes"]), "all five steps"),
    ("fused_rmsnorm_gate.bytes", lambda g: 2 * g["M"] * g["N"] * 2 + g["N"] * 2, "left out the gate"),
    ("fused_rmsnorm_gate.bytes", lambda g: 3 * g["M"] * g["N"] * 2, "left out the weight w"),
    ("fused_rmsnorm_gate.bytes", lambda g: 4 * g["M"] * g["N"] * 2, "once per row"),
    ("fused_rmsnorm_gate.floor", lambda g: g["bytes"] / (ex.core.info().peak_bandwidth_GBps * 1e9) * 1e6, "peak bandwidth"),
]


@pytest.mark.parametrize("eid,wrong,fragment", WRONG, ids=[f"{e}-{f}" for e, _, f in WRONG])
def test_wrong_answer_names_the_mistake(eid, wrong, fragment, cpu_mode):
    v = ex.check(eid, wrong(_g(eid)))
    assert v.ok is False and fragment in v.message, v.text()


def test_every_predict_exercise_has_a_wrong_answer_test():
    assert {e for e, _, _ in WRONG} == set(PREDICT)


@pytest.mark.parametrize("eid, answer, expected", [
    ("whole_chip.bytes", "lots", "the answer must be a number"), ("whole_chip.bytes", float("inf"), "finite number"),
    ("streaming_multiprocessor.warps", 4, "the answer is a pair"), ("warps_simt.warps", "6,0", "the answer is a pair"),
    ("warps_simt.warps", 6, "the answer is a pair"),
])
def test_bad_answer_kind_is_a_not_yet_verdict_naming_what_is_expected(cpu_mode, eid, answer, expected):
    """A learner's answer of the wrong kind is graded "not yet" with what was expected (a
    notebook cell shows a verdict, not a traceback)."""
    v = ex.check(eid, answer)
    assert v.ok is False and expected in v.message and repr(answer) in v.message, v.text()


@pytest.mark.parametrize("answer, words", [(0, "0 is not it"), (-5, "wrong sign"), (1e9, "too large"),
                                           (1, "too small")])
def test_a_far_off_number_says_how_far_in_words(cpu_mode, answer, words):
    """Never "off by a factor of 0": zero, a negative or a far-off number is named as such."""
    v = ex.check("whole_chip.bytes", answer)
    assert v.ok is False and words in v.message and "factor of 0" not in v.message, v.text()


def test_verdict_require():
    assert ex.Verdict("x", True, "fine").require().ok
    assert repr(ex.Verdict("x", True, "fine", ["a detail"]).require()) == "[x] reference solution: passes"
    assert ex.Verdict("x", None, "needs a GPU").require().ok is None
    with pytest.raises(AssertionError, match="the mistake"):
        ex.Verdict("x", False, "the mistake").require()


@pytest.mark.gpu
@pytest.mark.timing   # 09's verdicts read measured makespans
@pytest.mark.parametrize("eid", PREDICT)
def test_predict_solution_passes_on_the_gpu(eid):
    v = _run_cell(ex.get(eid).solution)
    assert v.ok is True, v.text()


def test_cpu_mode_shows_the_committed_probes_record(monkeypatch, cpu_mode):
    from gpu_viz.claims import probes

    rec = {"date": "2026-12-01", "gpu": "NVIDIA H200", "rows": [
        {"op": "doubling_point", "threads": 1024, "blocks": b, "slots": 264, "makespan_us": us,
         "first_wave_blocks": 264, "makespan_blocks": us / 10.4} for b, us in ((264, 10.4), (265, 20.7))]}
    monkeypatch.setattr(probes, "recorded", lambda directory=None: rec)
    g = ex.given("kernel_scheduling.doubling")
    v = ex.check("kernel_scheduling.doubling", g["sm_count"] * g["resident_blocks_per_sm"] + 1)
    assert any("recorded on NVIDIA H200, 2026-12-01" in d and "265 blocks 20.7 µs" in d for d in v.details), v.details


# -- the vector-add and grid-stride diagnoses on numpy emulations of each kernel --------------------
# (the diagnosis reads only what a launch wrote; here numpy writes what each kernel would, thread by
# thread, so the message each mistake gets is checked without a GPU; the GPU tests run the kernels)

@pytest.mark.parametrize("block", [256, 512, 1024])
def test_08_block_size_knob(block, cpu_mode):
    g = ex.given("rmsnorm_speedup.inflight", block=block)
    assert g["block"] == block
    assert ex.check("rmsnorm_speedup.inflight", g["resident_threads_per_sm"] * 2, block=block).ok is True
    with pytest.raises(TypeError):
        ex.given("whole_chip.bytes", block=block)


def test_10_floor_is_a_reference_from_the_bench_run_and_says_when_it_was_beaten(cpu_mode):
    """The copy bandwidth of fused_rmsnorm_gate.floor in CPU mode is the bench run's (the run that timed the kernel the
    checker shows), named; the verdict calls it a reference and explains a kernel faster than it."""
    from gpu_viz.rmsnorm import bench_record as brec

    rec = brec.newest_record()
    if rec is None or not rec.get("copy_GBps"):
        pytest.skip("no committed bench record with a copy bandwidth")
    g = ex.given("fused_rmsnorm_gate.floor")
    assert g["copy_GBps"] == pytest.approx(rec["copy_GBps"]) and g["copy_source"].startswith("the bench run's copy")
    task = ex.get("fused_rmsnorm_gate.floor").task
    assert "reference time, not a hard floor" in task and "least time" not in task
    text = ex.check("fused_rmsnorm_gate.floor", g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6).text()
    assert "the bench run's copy" in text
    kernel = next((r for r in rec["rows"] if (r["op"], r["impl"], r["M"], r["N"], r["dtype"], r["timing"]) ==
                   ("rmsnorm_gate", "fused", g["M"], g["N"], "float16", "kernel")), None)
    if kernel is not None and kernel["median_us"] < g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6:
        assert "beat the copy reference" in text and "not a hard floor" in text
