"""The claim probes (gpu_viz.claims.probes, kernels/probes.cu): the record's schema, checked here;
the probes themselves on a GPU (marked gpu), each checking its own result."""
import re

import numpy as np
import pytest

from gpu_viz import kernels
from gpu_viz.claims import probes
from gpu_viz.rmsnorm import reference


def _good():
    return {"date": "2026-12-01", "gpu": "NVIDIA H200", "sm": "sm_90", "failed": [], "rows": [
        {"op": "latency_chain", "impl": "chain_shfl", "cycles_per_step": 24.0, "p10": 23.9, "p90": 24.1, "reps": 7},
        {"op": "doubling_point", "threads": 1024, "blocks": 265, "slots": 264, "first_wave_blocks": 264,
         "makespan_us": 20.7, "block_us_median": 10.4, "resident_blocks_per_sm": 2, "sm_count": 132},
        {"op": "warp_order", "threads": 64, "block": 0, "warpid": [2, 3], "clk_offset": [0, 4], "smid": 7, "same_sm": True},
        {"op": "fp16_load", "sass": "LDG.E.U16", "bytes_per_lane": 2, "bytes_per_warp": 64},
        {"op": "reread_bandwidth", "level": "L2", "size_bytes": 8 << 20, "passes": 64, "median_us": 60.0,
         "p10_us": 59.0, "p90_us": 61.0, "GBps": 8947.8, "loads": probes.REREAD_LOADS},
        {"op": "reread_bandwidth", "level": "DRAM", "size_bytes": 1 << 30, "passes": 1, "median_us": 250.0,
         "p10_us": 249.0, "p90_us": 251.0, "GBps": 4295.0, "loads": probes.REREAD_LOADS}] + _residency_rows() + [
        {"op": "grid_stride", "impl": "scale_grid_stride", "grid": 132, "block": 1024, "n": 1 << 24,
         "timing": "kernel", "median_us": 40.0, "p10_us": 39.5, "p90_us": 40.5, "GBps": 3355.4}]}


def _residency_rows():
    rows = []
    for level, M, reread, staged in (("in L2", 512, 10.0, 8.0), ("beyond L2", 16384, 160.0, 150.0)):
        for impl, us in (("rownorm_reread", reread), ("rownorm_staged", staged)):
            rows.append({"op": "data_residency", "impl": impl, "level": level, "M": M, "N": 4096, "timing": "kernel",
                         "median_us": us, "p10_us": us * 0.99, "p90_us": us * 1.01,
                         "GBps": round((2 * M * 4096 * 4 + 4096 * 4) / (us * 1e-6) / 1e9, 1), "copy_GBps": 4230.0})
    return rows


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
    # the L2 figure is L2's: the re-read bypasses L1, and the chip drawing may label it L2
    assert all(probes.reread_measures_l2(r) for r in rec["rows"] if r["op"] == "reread_bandwidth")
    assert probes.level_bandwidths([r for r in rec["rows"] if r["op"] == "reread_bandwidth"])["L2"] == bw["L2"]
    gs = {r["grid"]: r["median_us"] for r in rec["rows"] if r["op"] == "grid_stride"}
    assert len(gs) == 3 and gs[1] > max(v for g, v in gs.items() if g > 1), gs   # one block is the slowest
    res = {(r["level"], r["impl"]) for r in rec["rows"] if r["op"] == "data_residency"}
    assert len(res) == len(probes.RESIDENCY_ROWS) * len(probes.RESIDENCY_KERNELS), res


def test_claim_texts_quote_the_rows_and_their_label(monkeypatch):
    from gpu_viz.claims import text as claims

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


def test_data_residency_claim_quotes_both_kernels_and_the_copy(monkeypatch):
    from gpu_viz.claims import text as claims

    rows = _residency_rows()
    monkeypatch.setattr(probes, "current", lambda op: ([r for r in rows if r["op"] == op], "recorded on X, D (not live)"))
    text = claims.data_residency()
    assert "| beyond L2: 16,384 rows |" in text and "(1.07x)" in text and "4,230 GB/s" in text
    assert "(1.25x)" in text and "Data: recorded on X, D (not live)" in text


def test_data_residency_claim_without_a_record_says_how_to_make_one(monkeypatch, tmp_path):
    """CPU mode and no committed record (or one made before the probe existed): one clear line."""
    from gpu_viz import backend
    from gpu_viz.measure import records
    from gpu_viz.claims import text as claims

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)          # nothing committed
    text = claims.data_residency()
    assert "not recorded yet; on a GPU this cell measures it live" in text and "`gpu-viz record probes`" in text
    records.save_record(_good() | {"rows": _good()["rows"][:2]}, tag="probes", directory=tmp_path)
    assert "not recorded yet; on a GPU this cell measures it live" in claims.data_residency()


def test_the_probe_reference_is_the_package_s_and_launch_checks(monkeypatch):
    x = np.array([[3.0, 4.0], [1.0, 1.0]], np.float32)
    y = reference.rmsnorm(x, np.array([1.0, 2.0]), 0.0)
    assert np.allclose(y, [[3 / np.sqrt(12.5), 8 / np.sqrt(12.5)], [1.0, 2.0]])
    with pytest.raises(ValueError, match="kernel must be one of"):
        probes.rownorm("rownorm_fast", None, None)


def test_stage_items_matches_the_kernel():
    from gpu_viz import kernels

    assert "STAGE_ITEMS" in kernels.snippet(probes.FILE, "rownorm_staged").text
    assert f"#define STAGE_ITEMS {probes.STAGE_ITEMS}\n" in (kernels.KERNEL_DIR / probes.FILE).read_text()
    assert probes.RESIDENCY_N <= probes.STAGE_ITEMS * probes.RESIDENCY_BLOCK


@pytest.mark.gpu
@pytest.mark.timing   # asserts that one kernel is not slower than another
def test_data_residency_probe_matches_float64_and_staged_is_not_slower_beyond_l2():
    import cupy as cp

    from gpu_viz.rmsnorm.tolerances import tolerance

    atol, rtol = tolerance("float32")
    # every row of odd shapes, against float64 (the probe itself checks its timed shapes)
    for M, N in ((1, 1), (3, 1000), (33, 4096), (2, 4095)):
        x = cp.random.standard_normal((M, N), dtype=cp.float32)
        w = cp.random.standard_normal(N, dtype=cp.float32)
        want = reference.rmsnorm(cp.asnumpy(x), cp.asnumpy(w), probes.RESIDENCY_EPS)
        for kernel in probes.RESIDENCY_KERNELS:
            got = cp.asnumpy(probes.rownorm(kernel, x, w)).astype(np.float64)
            assert np.all(np.abs(got - want) <= atol + rtol * np.abs(want)), (kernel, M, N)
    with pytest.raises(ValueError, match="holds"):
        probes.rownorm("rownorm_staged", cp.zeros((1, 4097), cp.float32), cp.zeros(4097, cp.float32))
    rows = probes.data_residency()
    by = {(r["level"], r["impl"]): r for r in rows}
    assert set(by) == {(lv, k) for lv, _ in probes.RESIDENCY_ROWS for k in probes.RESIDENCY_KERNELS}
    staged, reread = by[("beyond L2", "rownorm_staged")], by[("beyond L2", "rownorm_reread")]
    # beyond L2 the row's second read can only cost more than keeping it: 3% for timing noise
    assert staged["median_us"] <= reread["median_us"] * 1.03, (staged, reread)
    assert staged["GBps"] <= 1.1 * staged["copy_GBps"], staged   # beyond L2: not above the copy roofline


def test_claims_from_the_hardware_record_in_cpu_mode(monkeypatch):
    """CPU mode: one GPU (the committed hardware record's) for the limit and the latency."""
    from gpu_viz import backend
    from gpu_viz.measure import records
    from gpu_viz.claims import text as claims

    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    rec, label = records.recorded_hardware()
    if rec is None:
        pytest.skip("no committed hardware record")
    per_sched = rec["device"]["max_threads_per_sm"] // 32 // 4
    text = claims.latency_hiding()
    assert f"**{per_sched} per scheduler**" in text and label in text
    assert f"{round(rec['dram_latency']['cycles_per_load'])} cycles" in text
    assert f"{rec['device']['max_threads_per_sm']:,} threads" in claims.block_cap()


def test_deck_claims_05_and_08_from_the_committed_records(monkeypatch):
    """05 corrects the deck's "exactly why it's 1024" and ties 1024 = 32 x 32 to smem[32]; 08 explains
    the deck kernel's bandwidth with Little's law, from the records' GPU in CPU mode."""
    from gpu_viz import backend
    from gpu_viz.measure import records
    from gpu_viz.claims import text as claims

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    hw = records.newest("*-hardware.json")
    cap = claims.block_cap()
    assert "exactly why blocks cap at 1024" in cap and "`smem[32]`" in cap and "32 warps of 32 lanes" in cap
    assert f"holds {hw['device']['max_threads_per_sm']:,} threads" in cap
    law = claims.deck_littles_law()
    assert f"{hw['device']['max_threads_per_sm'] * 2:,} B per SM" in law and re.search(r"Measured(?: at \d+x\d+, block \d+)?: \*\*", law)
    assert "[" not in law.split("Data:")[0]   # the record's shape in words, not as a Python list
    assert records.label(hw) in law and records.gpus_named(law) == records.gpus_named(hw["gpu"])


NCU_CSV = '''==PROF== Connected to process 4242
==PROF== Profiling "rownorm_reread": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python","h","rownorm_reread(const float *, const float *, float *, int, float)","1","7","(1024, 1, 1)","(512, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sector_hit_rate.pct","%","49.93"
"0","4242","python","h","rownorm_reread(const float *, const float *, float *, int, float)","1","7","(1024, 1, 1)","(512, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","98.10"
"1","4242","python","h","rownorm_staged(const float *, const float *, float *, int, float)","1","7","(1024, 1, 1)","(512, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sector_hit_rate.pct","%","0.02"
"1","4242","python","h","rownorm_staged(const float *, const float *, float *, int, float)","1","7","(1024, 1, 1)","(512, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","12.00"
'''


def test_hit_rates_parse_ncu_csv():
    from gpu_viz.claims import hit_rates

    got = hit_rates.parse_csv(NCU_CSV)
    assert got == [{"kernel": "rownorm_reread", "l1_hit_pct": 49.93, "l2_hit_pct": 98.10},
                   {"kernel": "rownorm_staged", "l1_hit_pct": 0.02, "l2_hit_pct": 12.0}]
    with pytest.raises(ValueError, match="Metric Name"):
        hit_rates.parse_csv("==PROF== ncu: no kernels were profiled")
    assert [k for _l, _m, k in hit_rates.shapes()] == list(probes.RESIDENCY_KERNELS) * len(probes.RESIDENCY_ROWS)


def test_hit_rates_line_only_beside_rows_of_the_same_gpu(monkeypatch, tmp_path):
    from gpu_viz import backend
    from gpu_viz.measure import records
    from gpu_viz.claims import text as claims

    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    rec = _good() | {"driver": "580.159.04"}
    records.save_record(rec, tag="probes", directory=tmp_path)
    hits = [{"op": "hit_rate", "impl": "rownorm_reread", "level": "beyond L2", "M": 16384, "N": 4096,
             "l1_hit_pct": 48.0, "l2_hit_pct": 51.0}]
    records.save_record({"date": "2026-12-02", "gpu": "NVIDIA L4", "rows": hits}, tag="hit-rates", directory=tmp_path)
    assert "hits L1" not in claims.data_residency()          # another GPU's hit rates: not shown
    records.save_record({"date": "2026-12-02", "gpu": "NVIDIA H200", "rows": hits}, tag="hit-rates", directory=tmp_path)
    text = claims.data_residency()
    assert "hits L1 on 48% of its sectors and L2 on 51%" in text and "recorded on NVIDIA H200, 2026-12-02" in text


@pytest.mark.gpu
@pytest.mark.skipif(__import__("gpu_viz").kernels.find_tool("ncu") is None, reason="ncu not installed")
def test_hit_rates_record_on_the_gpu(tmp_path):
    import json

    from gpu_viz.claims import hit_rates

    rec = json.loads(hit_rates.record(tmp_path).read_text())
    by = {(r["level"], r["impl"]): r for r in rec["rows"]}
    assert len(by) == 4 and all(0 <= r["l1_hit_pct"] <= 100 for r in rec["rows"]), rec["rows"]


def test_doubling_claim_never_teaches_a_rule_its_rows_contradict(monkeypatch):
    """Bug class: the claim quoted 1,056 blocks taking 2.01 block-times and 2,048 taking 4.01 as
    support for "waves = blocks / slots".  Where the rows follow the arithmetic the text says so;
    where they do not, it calls the arithmetic a lower bound, with the numbers beside it."""
    from gpu_viz.claims import text as claims

    def row(threads, blocks, slots, took, first):
        return {"op": "doubling_point", "threads": threads, "blocks": blocks, "slots": slots, "sm_count": 132,
                "resident_blocks_per_sm": slots // 132, "first_wave_blocks": first, "block_us_median": 10.4,
                "makespan_us": 10.4 * took, "makespan_blocks": took}

    follows = [row(1024, 264, 264, 1.04, 264), row(1024, 265, 264, 2.01, 264), row(1024, 2048, 264, 8.34, 264)]
    breaks = [row(256, 1056, 1056, 2.01, 911), row(256, 1057, 1056, 2.10, 871), row(256, 2048, 1056, 4.01, 883)]
    monkeypatch.setattr(probes, "current", lambda op: (follows + breaks, "recorded on X, D (not live)"))
    text = claims.doubling_point()
    assert "At 1024 threads per block the silicon follows the arithmetic" in text
    assert "At 256 it does not" in text and "lower bound on the makespan, not a prediction" in text
    assert "| 256 | 2,048 | 2 | **4.01** |" in text and "recorded on X" in text
    monkeypatch.setattr(probes, "current", lambda op: (follows, "recorded on X, D (not live)"))
    text = claims.doubling_point()
    assert "does not" not in text and "follows the arithmetic" in text


def test_an_l1_cacheable_reread_is_never_labelled_l2(monkeypatch):
    """Bug class: notebook 01 wrote 15,020 GB/s on the chip's L2 box, from a re-read whose loads
    were L1-cacheable and whose per-SM share fit L1.  A row of that probe (no ``loads``) is said
    to be mostly L1 and is not drawn as L2; the probe that bypasses L1 is."""
    from gpu_viz.claims import text as claims

    old = [dict(r) for r in _good()["rows"] if r["op"] == "reread_bandwidth"]
    for r in old:
        r.pop("loads", None)
    assert "L2" not in probes.level_bandwidths(old) and "DRAM" in probes.level_bandwidths(old)
    monkeypatch.setattr(probes, "current", lambda op: (old, "recorded on X, D (not live)"))
    text = claims.l2_bandwidth()
    assert "mostly L1, not L2" in text and "__ldcg" in text
    new = [dict(r, loads=probes.REREAD_LOADS) for r in old]
    assert probes.level_bandwidths(new)["L2"] == next(r["GBps"] for r in new if r["level"] == "L2")
    monkeypatch.setattr(probes, "current", lambda op: (new, "recorded on X, D (not live)"))
    assert "L1 bypassed" in claims.l2_bandwidth() and "mostly L1" not in claims.l2_bandwidth()


@pytest.mark.skipif(kernels.find_tool("nvcc") is None or kernels.find_tool("cuobjdump") is None,
                    reason="needs nvcc and cuobjdump")
def test_the_reread_probe_bypasses_l1_in_the_sass():
    """The re-read's global loads are not L1-cacheable on any arch: ld.global.cg (no .CONSTANT /
    plain cached LDG), so the probe times L2."""
    import subprocess
    import tempfile
    from pathlib import Path

    for arch in kernels.ARCHES:
        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "p.cubin"
            kernels.nvcc_compile("probes.cu", arch, cubin=cubin)
            sass = subprocess.run([kernels.find_tool("cuobjdump"), "-sass", "-fun", "reread", str(cubin)],
                                  capture_output=True, text=True, check=True).stdout
        loads = re.findall(r"\bLDG\.[\w.]+", sass)
        assert loads, (arch, sass[:400])
        # .STRONG.GPU (sm_70+) or .CG: cached at the GPU level (L2); a plain LDG.E.128 would cache in L1
        assert all(".STRONG.GPU" in ld or ".CG" in ld for ld in loads), (arch, loads)


def test_warp_order_says_what_the_clocks_say(monkeypatch):
    """Bug class: the text said two warps "issue in the same cycle" beside a record of +2 cycles."""
    from gpu_viz.claims import text as claims

    rows = [r for r in _good()["rows"] if r["op"] == "warp_order"]
    monkeypatch.setattr(probes, "current", lambda op: (rows, "recorded on X, D (not live)"))
    text = claims.warp_order()
    assert "same cycle" not in text and "4 cycles apart" in text
    monkeypatch.setattr(probes, "current", lambda op: ([dict(r, clk_offset=[0, 0]) for r in rows], "recorded on X"))
    assert "within a cycle" in claims.warp_order()


@pytest.mark.parametrize("gpu", ["T4", "L4", "A100", "H100", "H200"])
def test_block_cap_claim_holds_on_every_gpu(gpu, monkeypatch):
    """Bug class: "the cap is not the SM's size: an SM of a T4 holds 1,024 threads" contradicted
    itself on the Colab GPU.  On every spec sheet the text is true: where an SM holds exactly 1024
    threads it says they coincide there; smem[32] is a consequence of the cap."""
    from gpu_viz import device
    from gpu_viz.claims import text as claims
    from gpu_viz.measure import records

    info = device.SPEC_SHEETS[gpu]
    monkeypatch.setattr(records, "lesson_device", lambda: (info, f"{gpu} spec sheet (test)"))
    text = claims.block_cap()
    assert f"holds {info.max_threads_per_sm:,} threads" in text and "compute capability 2.0" in text
    assert "consequence of the cap, not its cause" in text
    if info.max_threads_per_sm == 1024:
        assert "coincide" in text and "not the SM's size" not in text
    else:
        assert "coincide" not in text
