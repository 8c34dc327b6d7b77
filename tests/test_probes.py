"""The claim probes (gpu_viz.measure.probes, kernels/probes.cu): the record's schema, checked here;
the probes themselves on a GPU (marked gpu), each checking its own result."""
import numpy as np
import pytest

from gpu_viz.measure import probes


def _good():
    return {"date": "2026-12-01", "gpu": "NVIDIA H200", "sm": "sm_90", "failed": [], "rows": [
        {"op": "latency_chain", "impl": "chain_shfl", "cycles_per_step": 24.0, "p10": 23.9, "p90": 24.1, "reps": 7},
        {"op": "doubling_point", "threads": 1024, "blocks": 265, "slots": 264, "first_wave_blocks": 264,
         "makespan_us": 20.7, "block_us_median": 10.4, "resident_blocks_per_sm": 2, "sm_count": 132},
        {"op": "warp_order", "threads": 64, "block": 0, "warpid": [2, 3], "clk_offset": [0, 4], "smid": 7, "same_sm": True},
        {"op": "fp16_load", "sass": "LDG.E.U16", "bytes_per_lane": 2, "bytes_per_warp": 64},
        {"op": "reread_bandwidth", "level": "L2", "size_bytes": 8 << 20, "passes": 64, "median_us": 60.0,
         "p10_us": 59.0, "p90_us": 61.0, "GBps": 8947.8},
        {"op": "reread_bandwidth", "level": "DRAM", "size_bytes": 1 << 30, "passes": 1, "median_us": 250.0,
         "p10_us": 249.0, "p90_us": 251.0, "GBps": 4295.0}]}


def test_record_schema_accepts_a_sound_record():
    assert probes.check_record(_good()) == []


@pytest.mark.parametrize("mutate,fragment", [
    (lambda r: r.pop("failed"), "missing 'failed'"),
    (lambda r: r["rows"][0].pop("cycles_per_step"), "missing 'cycles_per_step'"),
    (lambda r: r["rows"][0].__setitem__("cycles_per_step", 0), "must be > 0"),
    (lambda r: r["rows"][1].pop("first_wave_blocks"), "first_wave_blocks"),
    (lambda r: r["rows"].append({"op": "mystery"}), "unknown op"),
])
def test_record_schema_catches(mutate, fragment):
    r = _good()
    mutate(r)
    assert any(fragment in p for p in probes.check_record(r)), probes.check_record(r)


def test_first_wave_counts_blocks_started_before_any_ended():
    class T(dict):
        pass
    tr = T(t_start=np.array([0, 0, 1, 10, 11]), t_end=np.array([10, 10, 11, 20, 21]))
    assert probes.first_wave(tr) == 3


def test_shfl_steps_rejects_a_wrong_lane_count():
    with pytest.raises(ValueError, match="32 values"):
        probes.shfl_steps(np.zeros(31))


def test_committed_probes_record_is_sound():
    rec = probes.recorded()
    if rec is None:
        pytest.skip("no committed probes record yet (gpu-viz record probes makes one on a GPU)")
    assert probes.check_record(rec) == []


@pytest.mark.gpu
def test_shfl_steps_match_the_model_bit_for_bit():
    got = probes.shfl_steps(np.random.default_rng().standard_normal(32).astype(np.float32))
    assert got.shape == (6, 32)


@pytest.mark.gpu
@pytest.mark.timing   # asserts on measured cycles and makespans
def test_probes_record_runs_every_probe(tmp_path):
    import json

    path = probes.record(tmp_path)
    rec = json.loads(path.read_text())
    assert probes.check_record(rec) == [], probes.check_record(rec)
    assert rec["failed"] == [], rec["failed"]
    chains = {r["impl"]: r["cycles_per_step"] for r in rec["rows"] if r["op"] == "latency_chain"}
    assert set(chains) == set(probes.CHAINS)
    # a dependent FFMA cannot issue faster than one per cycle, a shuffle is no cheaper than an FMA
    assert chains["chain_ffma"] >= 1 and chains["chain_shfl"] >= chains["chain_ffma"], chains
    warps = [r for r in rec["rows"] if r["op"] == "warp_order"]
    assert all(len(r["warpid"]) == 2 and r["same_sm"] for r in warps)
    dbl = {(r["threads"], r["blocks"] - r["slots"]): r for r in rec["rows"] if r["op"] == "doubling_point"}
    for t in probes.DOUBLING_THREADS:
        assert dbl[(t, 1)]["makespan_us"] > dbl[(t, 0)]["makespan_us"]
    bw = {r["level"]: r["GBps"] for r in rec["rows"] if r["op"] == "reread_bandwidth"}
    assert bw["L2"] > bw["DRAM"], bw   # a buffer in L2, re-read, beats one pass over DRAM


def test_claim_texts_quote_the_rows_and_their_label(monkeypatch):
    from gpu_viz.measure import claims

    rows = _good()["rows"]
    monkeypatch.setattr(probes, "current", lambda op: ([r for r in rows if r["op"] == op], "recorded on X, D (not live)"))
    assert "24.0" in claims.shuffle_step() and "recorded on X" in claims.shuffle_step()
    assert "**64 bytes**" in claims.fp16_load()
    order = claims.warp_order()
    assert "| 0 | 7 | 2, 3 | +0, +4 |" in order and "[2, 3]" not in order, order
    l2 = claims.l2_bandwidth()
    assert "**8,948 GB/s**" in l2 and "4,295 GB/s" in l2 and "recorded on X" in l2
    monkeypatch.setattr(probes, "current", lambda op: ([], "no committed probes record"))
    assert "no committed probes record" in claims.shuffle_step()


def test_claims_from_the_hardware_record_in_cpu_mode(monkeypatch):
    """CPU mode: one GPU (the committed hardware record's) for the limit and the latency."""
    from gpu_viz import backend
    from gpu_viz.measure import claims, memory

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    rec, label = memory.recorded_hardware()
    if rec is None:
        pytest.skip("no committed hardware record")
    per_sched = rec["device"]["max_threads_per_sm"] // 32 // 4
    text = claims.latency_hiding()
    assert f"**{per_sched} per scheduler**" in text and label in text
    assert f"{round(rec['dram_latency']['cycles_per_load'])} cycles" in text
    assert f"{rec['device']['max_threads_per_sm']:,} threads" in claims.block_cap()
