"""CPU tests of the bench's plan, time estimate and the wide rows'
share of copy and their baselines (a provider that cannot run a shape), the same-run comparison
with the previous record, the shared dynamic-M compile.  Records here are hand-made, never GPU
results."""

import numpy as np
import pytest

from gpu_viz.measure import timing as measure
from gpu_viz.rmsnorm import bench as bm, plan as bplan, providers as prov, targets as tg
from gpu_viz.rmsnorm.dtypes import OPS
from gpu_viz.rmsnorm import report


def _timing(median, timing="kernel"):
    return measure.Timing.from_samples(np.full(30, float(median)), timing)


def _wide_record(share=0.92, drop=(), liger_refuses=True):
    """Wide kernel rows: fused at ``share`` of copy, every baseline slower; Liger refusing N > 65536."""
    copy = 4000.0
    rows, skipped = [], []
    for op in OPS:
        for (M, N) in bplan.WIDE_SHAPES:
            for dt in bm.DTYPES:
                us = bm.fewest_bytes(op, M, N, dt) / (share * copy * 1e9) * 1e6
                for p in prov.WIDE_PROVIDERS[op]:
                    if (op, p, M, N, dt) in drop:
                        continue
                    if p == "liger" and N > bplan.LIGER_MAX_N and liger_refuses:
                        skipped.append({"op": op, "impl": p, "M": M, "N": N, "dtype": dt,
                                        "reason": f"raised RuntimeError: Cannot launch Triton kernel since n = {N} "
                                                  "exceeds the recommended Triton blocksize = 65536."})
                        continue
                    for tm in ("kernel", "call"):
                        rows.append(bm.make_row(op, p, M, N, dt, _timing(us * (1 if p == "fused" else 1.3), tm)))
    return {"date": "2026-12-02", "gpu": "NVIDIA H200", "copy_GBps": copy, "rows": rows, "skipped": skipped}


def _checks(rec, **kw):
    return {c: (ok, d) for c, ok, d in tg.summary_checks(rec, **kw)}


def test_wide_copy_share_checked_per_op_shape_dtype():
    checks = _checks(_wide_record(share=0.92))
    names = [c for c in checks if "copy bandwidth" in c and any(f"{M}x{N}" in c for M, N in bplan.WIDE_SHAPES)]
    assert len(names) == 2 * len(bplan.WIDE_SHAPES) * 3
    assert all(checks[n][0] for n in names)
    ok, detail = checks["rmsnorm fused 2048x131072 float32: >= 90% of copy bandwidth"]
    assert ok and detail == "3,680 GB/s = 92.0% of copy 4,000 GB/s"
    low = _checks(_wide_record(share=0.85))
    assert not low["rmsnorm_gate fused 1024x262144 bfloat16: >= 90% of copy bandwidth"][0]


def test_wide_checks_absent_from_a_record_without_wide_rows_and_present_in_a_full_one():
    rec = {"copy_GBps": 4000.0, "rows": [], "skipped": []}
    assert not any("x32768" in c for c in _checks(rec))
    full = _checks(dict(rec, quick=False))  # a full record without them: each one fails, not shown
    ok, detail = full["rmsnorm fused 16384x32768 float32: >= 90% of copy bandwidth"]
    assert not ok and detail == "not measured"


def test_liger_refusal_is_shown_and_not_counted():
    checks = _checks(_wide_record())
    name = "rmsnorm 2048x131072 float16: baselines beside fused (eager, native, compile; liger where it runs)"
    ok, detail = checks[name]
    assert ok, detail
    assert "liger: refuses N = 131072 (raised RuntimeError: Cannot launch Triton kernel" in detail
    assert detail.endswith("not counted") and "compile" in detail and "eager" in detail
    ok, detail = checks["rmsnorm 8192x65536 float16: baselines beside fused (eager, native, compile; liger where it runs)"]
    assert ok and "liger " in detail and "not counted" not in detail  # Liger runs at 65536: its time shown
    # the gate has no native op and no Liger
    assert "rmsnorm_gate 1024x262144 float32: baselines beside fused (eager, compile)" in checks


def test_liger_not_installed_is_not_counted_but_a_required_baseline_is():
    rec = _wide_record(drop={("rmsnorm", "liger", 16384, 32768, "bfloat16"),
                             ("rmsnorm", "compile", 16384, 32768, "bfloat16")})
    rec["providers_unavailable"] = {"liger": "liger_kernel is not importable (ImportError: x)"}
    rec["skipped"].append({"op": "rmsnorm", "impl": "compile", "M": 16384, "N": 32768, "dtype": "bfloat16",
                           "reason": "torch.compile fell back: 1 graph break(s)"})
    ok, detail = _checks(rec)["rmsnorm 16384x32768 bfloat16: baselines beside fused "
                              "(eager, native, compile; liger where it runs)"]
    assert not ok
    assert "compile not measured (torch.compile fell back: 1 graph break(s))" in detail
    assert "liger: (liger_kernel is not importable (ImportError: x)); not counted" in detail


def test_wide_plan_has_every_baseline_in_both_timings():
    steps = [s for s in bplan.plan_steps() if (s["M"], s["N"]) in bplan.WIDE_SHAPES]
    for op in OPS:
        for shape in bplan.WIDE_SHAPES:
            for dt in bm.DTYPES:
                got = {s["provider"]: s for s in steps if (s["op"], (s["M"], s["N"]), s["dtype"]) == (op, shape, dt)}
                assert set(got) == set(prov.WIDE_PROVIDERS[op]), (op, shape, dt, set(got))
                for p in ("eager", "compile", "fused") + (("native",) if op == "rmsnorm" else ()):
                    assert got[p]["timings"] == ("kernel", "call") and got[p]["reps"] == bplan.WIDE_REPS
                assert got["compile"]["compile"] == "per shape"  # no two wide shapes share an N
    liger = [s for s in steps if s["provider"] == "liger"]
    assert {bool(s["note"]) for s in liger if s["N"] > 65536} == {True}
    assert not any(s["note"] for s in liger if s["N"] <= 65536)


def test_the_record_compiles_every_shape_for_itself():
    """SHARE_COMPILES is off: torch.compile gets one static graph per shape, the baseline the
    earlier records measured."""
    steps = bplan.plan_steps()
    assert not prov.SHARE_COMPILES and prov.shared_compile_groups(steps) == frozenset()
    compiles = [s for s in steps if s["provider"] == "compile"]
    assert compiles and all(s["compile"] == "per shape" for s in compiles)


def test_shared_compiles_one_per_op_n_dtype_with_several_rows(monkeypatch):
    monkeypatch.setattr(prov, "SHARE_COMPILES", True)
    steps = bplan.plan_steps()
    groups = prov.shared_compile_groups(steps)
    assert ("rmsnorm", 4096, "float16") in groups and ("rmsnorm_gate", 8192, "bfloat16") in groups
    assert ("rmsnorm", 768, "float16") not in groups  # one shape: compiled for it alone
    record = [s for s in steps if s["provider"] == "compile" and (s["M"], s["N"]) not in bplan.WIDE_SHAPES]
    compiles = [s for s in record if s["compile"] in ("per shape", "dynamic M: compiles")]
    assert len(record) == 39 and len(compiles) == 19
    one_row = [s for s in record if s["M"] == 1]
    assert one_row and all(s["compile"] == "per shape" for s in one_row)  # dynamo specialises M = 1


def test_the_estimate_fits_one_command_and_no_committed_record_overran_it():
    """The full plan estimates under the 600 s of one device command, and every committed full
    fused record took at most the estimate it was run with (``estimate_s``) + 10 %: the time
    model (:data:`gpu_viz.rmsnorm.plan.EST_S`) does not promise a budget the GPU then breaks."""
    from gpu_viz.measure import records

    new = bplan.estimate(bplan.plan_steps())
    assert new["compiles"] == 39 + 24 and new["total_s"] < 600
    assert sum(new["by_part"].values()) == pytest.approx(new["total_s"], abs=0.5)
    full = [r for r in records.load_records("*-fused.json")
            if r.get("complete") and not r.get("quick") and r.get("wall_s") and r.get("estimate_s")]
    assert full, "no complete fused record with wall_s and estimate_s committed"
    over = [(r["_file"], r["wall_s"], r["estimate_s"]) for r in full if r["wall_s"] > 1.10 * r["estimate_s"]]
    assert not over, over


def test_dry_run_lists_every_step_and_the_estimate(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    report.register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["bench", "--dry-run"])
    assert args.func(args) == 0  # no GPU here: the plan needs none
    out = capsys.readouterr().out.splitlines()
    steps = bplan.plan_steps()
    assert len(out) == 3 + len(steps) + 2
    assert out[0].startswith("The steps `gpu-viz bench` takes on a GPU; nothing is measured here.")
    assert "estimated" in out[0] and "not a measurement" in out[0]
    assert "rmsnorm_gate" in out[-3] and "1024x262144" in out[-3] and "float32" in out[-3]
    assert "estimated" in out[-1] and "an estimate" in out[-1] and f"{len(steps)} steps" in out[-1]
    assert any("Liger refuses N > 65536" in line for line in out)


def _prev_pair(fused_change, native_change, gate_copy_change=None):
    shapes = [(1024, 4096), (16384, 4096)]
    before, now = [], []
    for (M, N) in shapes:
        for rows, f, n in ((before, 10.0, 20.0), (now, 10.0 * fused_change, 20.0 * native_change)):
            rows.append(bm.make_row("rmsnorm", "fused", M, N, "float16", _timing(f)))
            rows.append(bm.make_row("rmsnorm", "native", M, N, "float16", _timing(n)))
    prev = {"_file": "nvidia-h200-2026-12-01-fused.json", "date": "2026-12-01", "copy_GBps": 4000.0, "rows": before}
    rec = {"copy_GBps": 4000.0, "rows": now}
    if gate_copy_change is not None:
        before.append(bm.make_row("rmsnorm_gate", "fused", 64, 768, "bfloat16", _timing(5.0)))
        now.append(bm.make_row("rmsnorm_gate", "fused", 64, 768, "bfloat16", _timing(5.0 * 1.025)))
        rec["copy_GBps"] = 4000.0 / gate_copy_change
    return rec, prev


def test_previous_record_check_normalises_by_f_rms_norm():
    name = "rmsnorm fused float16: kernel time at most 2% slower than the last record at every shared shape"
    rec, prev = _prev_pair(1.025, 1.01)  # +2.5 % raw, F.rms_norm +1 %: +1.5 % normalised
    (c, ok, detail), = tg.previous_record_checks(rec, prev)
    assert c == name and ok
    assert "2 shapes against nvidia-h200-2026-12-01-fused.json (2026-12-01)" in detail
    assert "normalised by F.rms_norm" in detail and "+1.5%" in detail and "+2.5%" in detail
    rec, prev = _prev_pair(1.03, 1.0)
    (c, ok, detail), = tg.previous_record_checks(rec, prev)
    assert not ok and "over the limit: 1024x4096 +3.0%, 16384x4096 +3.0%" in detail
    # through summary_checks: given a previous record, or read back from the record itself
    assert not _checks(rec, previous=prev)[name][0]
    stored = dict(rec, vs_previous=[{"check": c, "passed": ok, "detail": detail}])
    assert _checks(stored)[name] == (False, detail)


def test_previous_record_check_falls_back_to_the_copy_bandwidth():
    # the gate at 64x768 has no F.rms_norm row: +2.5 % raw, copy 2 % slower now -> +0.5 %
    rec, prev = _prev_pair(1.0, 1.0, gate_copy_change=1.02)
    gate = [c for c in tg.previous_record_checks(rec, prev) if c[0].startswith("rmsnorm_gate")]
    (c, ok, detail), = gate
    assert ok and "copy 3,922 vs 4,000 GB/s" in detail and "+0.5%" in detail


def test_previous_record_check_skips_unshared_shapes():
    rec, prev = _prev_pair(1.0, 1.0)
    prev["rows"] = [r for r in prev["rows"] if r["M"] != 1024]
    (c, ok, detail), = tg.previous_record_checks(rec, prev)
    assert ok and detail.startswith("1 shapes against")
    assert tg.previous_record_checks(rec, {"rows": []}) == []


def test_shared_compile_reuses_one_graph_across_m():
    """A dynamic-M compile (dynamo's eager backend: no compiler needed) serves M = 8, 32, 300
    without compiling again; its own code object keeps other compiles out of its cache."""
    torch = pytest.importorskip("torch")
    prov._SHARED_COMPILES.clear()
    try:
        fns = []
        for M in (8, 32, 300):
            sets = bm.make_inputs("rmsnorm", M, 64, "float32", "cpu", generator=torch.Generator().manual_seed(M))
            fn = prov.compiled_baseline("rmsnorm", sets[0], sets[0]["weight"], 1e-6, "eager", shared=True)
            y = fn(sets[0])
            ok, detail = bm.check_rows("rmsnorm", y, sets[0]["x"], sets[0]["weight"], None, 1e-6, "float32")
            assert ok, detail
            fns.append(fn)
        assert len(prov._SHARED_COMPILES) == 1
        with pytest.raises(ValueError, match="M >= 2"):
            s1 = bm.make_inputs("rmsnorm", 1, 128, "float32", "cpu")
            prov.compiled_baseline("rmsnorm", s1[0], s1[0]["weight"], 1e-6, "eager", shared=True)
    finally:
        prov._SHARED_COMPILES.clear()


def test_post_check_skips_only_torch_baselines_at_wide_shapes():
    assert bm.post_check("fused", "rmsnorm", 1024, 262144, "float32")
    assert not bm.post_check("eager", "rmsnorm", 1024, 262144, "float32")
    assert not bm.post_check("liger", "rmsnorm", 16384, 32768, "float16")
    assert bm.post_check("eager", "rmsnorm", 1024, 4096, "float16")


def test_per_call_checks_take_one_row_per_key_the_first():
    """An older record times a shape per call in two batches: the checks (and every table) take
    the first row of each key, the one timed beside the other providers of its shape."""
    def row(impl, us):
        return {"op": "rmsnorm", "impl": impl, "M": 128, "N": 4096, "dtype": "float16", "timing": "call",
                "median_us": us, "GBps": 1.0}
    rec = {"copy_GBps": 4000.0, "rows": [row("native", 18.0), row("fused", 17.0),     # batch 1
                                         row("native", 30.0), row("fused", 25.0)]}    # batch 2
    checks = [c for c in tg.summary_checks(rec) if "per call" in c[0]]
    assert len(checks) == 1
    name, ok, detail = checks[0]
    assert ok and detail.startswith("17.00 µs vs 18.00 µs")
    rec["rows"][1]["median_us"] = 19.0
    assert not [c for c in tg.summary_checks(rec) if "per call" in c[0]][0][1]
    assert [r["median_us"] for r in bm.unique_rows(rec["rows"])] == [18.0, 19.0]


def test_the_record_times_each_key_once():
    """No (op, provider, shape, dtype, timing) is planned twice: the per-call batch leaves out
    what the record plan times per call already; every CALL_SHAPES point still has ours and
    F.rms_norm, with and without grad, per call."""
    seen = {}
    for op, shapes, dtypes, providers, timings, _ in bplan.record_batches():
        for (M, N) in shapes:
            for dt in dtypes:
                for p in providers:
                    for t in timings:
                        key = (op, p, M, N, dt, t)
                        assert key not in seen, key
                        seen[key] = True
    for (M, N) in bplan.CALL_SHAPES:
        for dt in ("float16", "bfloat16"):
            for p in ("native", "fused", "native_grad", "fused_grad"):
                assert ("rmsnorm", p, M, N, dt, "call") in seen, (p, M, dt)


def test_tables_of_a_record_with_repeated_keys_keep_the_first_row_and_its_speedup():
    from gpu_viz.rmsnorm import report

    def row(impl, us, sp):
        return {"op": "rmsnorm", "impl": impl, "M": 128, "N": 4096, "dtype": "float16", "timing": "call",
                "median_us": us, "p10_us": us, "p90_us": us, "GBps": 1.0, "speedup_vs_eager": sp}
    rows = [row("eager", 100.0, 1.0), row("fused", 20.0, 5.0), row("fused", 25.0, None)]
    t = report.table(rows)
    text = t.plain()
    assert "20.00 (5.0x)" in text and "25.00" not in text
