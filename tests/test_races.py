"""Notebook 08's races (kernels/races.cu): the racy kernels' outcomes vary from run to run (in CPU mode,
the emulator's seeded interleavings, replayable by seed), their fixes are right in every run, the
emulator names the race; on a GPU (marked gpu) the silicon's runs, at least 100 a kernel."""
import numpy as np
import pytest

from gpu_viz import backend, emulator
from gpu_viz.claims import memory_access as claims
from gpu_viz.frames import races as frames
from gpu_viz.lessons import RACES
from gpu_viz.record import races as record

needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")
L = claims.RACE_LAUNCH


def _trace(kernel, runs, seed, **kw):
    return RACES.trace(seed=seed, kernel=kernel, runs=runs, grid=kw.get("grid", L["grid"]),
                       block=kw.get("block", L["block"]), nbins=L["nbins"], n=L["n"])


@needs_emulator
def test_the_racy_histogram_loses_a_different_number_of_counts_run_by_run_replayably():
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour (on a GPU the runs are the silicon's)")
    a = _trace("histogram_racy", 12, seed=5)
    lost = frames.outcomes(a)
    assert a.source == "emulator" and emulator.LABEL in a.provenance
    assert (lost > 0).all() and np.unique(lost).size > 3, lost
    assert np.array_equal(frames.outcomes(_trace("histogram_racy", 12, seed=5)), lost)
    assert not np.array_equal(frames.outcomes(_trace("histogram_racy", 12, seed=6)), lost)
    assert any("race" in h for h in a.params["emulator"]["hazards"])


@needs_emulator
@pytest.mark.parametrize("kernel", ["histogram_atomic", "histogram_private", "reverse_synced"])
def test_the_fixes_are_right_in_every_interleaving(kernel):
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    tr = _trace(kernel, 10, seed=9, grid=3, block=96)
    assert (frames.outcomes(tr) == 0).all()
    assert tr.params["emulator"]["hazards"] == []
    if "bins" in tr.arrays:
        assert (tr["bins"] == tr["want"]).all()


@needs_emulator
def test_the_missing_barrier_reads_unwritten_slots_and_the_emulator_names_them():
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    tr = _trace("reverse_racy", 10, seed=2)
    assert (frames.outcomes(tr) > 0).all()
    rep = claims.race_report("reverse_racy")
    assert "s[" in rep["race"] and "no __syncthreads() between them" in rep["race"] or "nothing in this block wrote" \
        in rep["race"], rep


@needs_emulator
def test_race_report_names_the_line_and_the_bins():
    rep = claims.race_report("histogram_racy", seed=3)
    assert rep["race"].startswith("a race on bins[") and "line 29" in rep["race"], rep
    assert "counts lost" in rep["outcome"] and emulator.LABEL in rep["label"]
    assert {a["access"] for a in rep["accesses"]} == {"this access", "the other"}
    assert all(a["line"] == 29 for a in rep["accesses"]), rep["accesses"]
    assert claims.race_report("histogram_atomic")["race"] == ""


def test_distribution_frames_build_up_and_say_the_counts():
    tr = record_like([3, 3, 0, 5, 3, 0, 0, 9, 3, 3, 1, 2])
    an = frames.animation(tr)
    assert [int(f.caption.split()[1]) for f in an.frames] == [1, 2, 3, 5, 10, 12]
    assert "every run right" not in an.frames[-1].caption and "3 run(s) right" in an.frames[-1].caption
    s = frames.summary(tr)
    assert (s["runs"], s["right"], s["distinct"], s["max"]) == (12, 3, 6, 9)
    assert "right: 3 of 12; distinct outcomes: 6" in frames.drawing(tr, 12)


def record_like(wrong):
    from gpu_viz.trace import Trace

    return Trace(kernel="reverse_racy", params={"runs": len(wrong), "n": 512}, arrays={"wrong": np.array(wrong)},
                 source="model", provenance=backend.MODEL_LABEL)


@pytest.mark.parametrize("kw, err", [({"kernel": "nope"}, "kernel must be one of"), ({"runs": 0}, "runs must be"),
                                     ({"block": 2048}, "block must be"), ({"nbins": 0}, "nbins must be"),
                                     ({"runs": 1000, "grid": 64}, "at most")])
def test_bad_launches_are_named(kw, err):
    if backend.has_gpu() and "at most" in err:
        pytest.skip("the emulator's limit is CPU mode's")
    with pytest.raises((TypeError, ValueError), match=err):
        RACES.trace(seed=1, **kw)


def test_keys_out_of_range_are_named():
    with emulator.emulated():
        with pytest.raises(ValueError, match="keys must lie in"):
            record.trace(np.array([0, 300], np.int32), "histogram_racy", runs=1, nbins=256)


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", record.KERNELS)
def test_silicon_runs_at_least_100_times_and_the_fixes_are_always_right(kernel):
    tr = _trace(kernel, claims.RACE_RUNS, seed=0)
    o = frames.outcomes(tr)
    assert o.size >= 100 and tr.source == "gpu"
    if kernel in ("histogram_atomic", "histogram_private", "reverse_synced"):
        assert (o == 0).all()
    if kernel == "histogram_racy":
        assert (o > 0).all()        # lanes of one warp with one key lose counts in every run


@needs_emulator
@pytest.mark.parametrize("kernel, needle", [("histogram_racy", "bins[keys[i]] += 1"), ("histogram_atomic", "atomicAdd"),
                                            ("histogram_private", "atomicAdd(&local"), ("reverse_racy", "= s["),
                                            ("reverse_synced", "__syncthreads")])
def test_each_kernels_player_shows_its_own_source_and_line(kernel, needle):
    if backend.has_gpu():
        pytest.skip("CPU-mode traces")
    tr = RACES.trace(seed=1, kernel=kernel, runs=2, grid=2, block=64, nbins=16, n=100)
    an = RACES.animation(tr)
    src = RACES.source_for(tr).text
    assert f"void {kernel}(" in src and needle in src.splitlines()[an.frames[0].line - 1]
