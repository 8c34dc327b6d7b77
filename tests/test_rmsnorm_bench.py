"""gpu_viz.rmsnorm.bench (providers, the harness, the record, `gpu-viz bench`) and
gpu_viz.rmsnorm.report (tables, charts, the performance checks): the plumbing on CPU (bytes, rows,
the float64 check with the one tolerance table, errors, gating), GPU smoke tests."""
import argparse
import json
import importlib
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from gpu_viz import words

import gpu_viz.rmsnorm
from gpu_viz import backend, check
from gpu_viz import device as gpu_device
from gpu_viz.measure import records
from gpu_viz.measure import timing as measure
from gpu_viz.rmsnorm import bench as bm, plan as bplan, bench_record as brec, providers as prov, targets as tg
from gpu_viz.rmsnorm.dtypes import OPS
from gpu_viz.rmsnorm import eager, reference, report
from gpu_viz.rmsnorm.tolerances import tolerance

torch = pytest.importorskip("torch")


def _ref(x, w, gate=None, eps=prov.EPS):
    """The float64 reference (rmsnorm, or rmsnorm_gate with a gate), in x's library."""
    return reference.rmsnorm(x, w, eps, gate)


def _compare(out, ref, dtype, name="y"):
    """gpu_viz.check.compare with the one tolerance table's entry for ``dtype``."""
    atol, rtol = tolerance(dtype)
    return check.compare(name, out, ref, atol=atol, rtol=rtol)


def _whole(op, out, ref, dtype):
    """One whole-tensor comparison, rows as check_rows numbers them (leading dims flattened),
    as (ok, message) under check_rows' name."""
    N = out.shape[-1]
    rep = _compare(out.reshape(-1, N), ref.reshape(-1, N), dtype, name=f"{op} {dtype}")
    return rep.ok, rep.message()


@pytest.fixture
def cpu_mode(monkeypatch):
    monkeypatch.setenv(backend.FORCE_CPU_ENV, "1")
    saved = backend._cached
    backend._cached = None
    yield
    backend._cached = saved


# -- byte accounting and rows -------------------------------------------------------------------

@pytest.mark.parametrize("dtype,size", [("float16", 2), ("bfloat16", 2), ("float32", 4)])
def test_fewest_bytes(dtype, size):
    M, N = 1024, 4096
    assert bm.fewest_bytes("rmsnorm", M, N, dtype) == 2 * M * N * size + N * size
    assert bm.fewest_bytes("rmsnorm_gate", M, N, dtype) == 3 * M * N * size + N * size
    # the seed's own accounting for fp16 rmsnorm_gate: 2 (3MN + N) bytes
    assert bm.fewest_bytes("rmsnorm_gate", M, N, "float16") == 2 * (3 * M * N + N)


def test_fewest_bytes_rejects_bad_op_and_dtype():
    with pytest.raises(ValueError, match="op must be one of"):
        bm.fewest_bytes("layernorm", 1, 1, "float16")
    with pytest.raises(ValueError, match="dtype must be one of"):
        bm.fewest_bytes("rmsnorm", 1, 1, "int8")


def test_dtype_names():
    assert bm.dtype_name(torch.float16) == "float16"
    assert bm.dtype_name("bf16") == "bfloat16"
    assert bm.dtype_name(torch.float32) == "float32"


def _timing(median, timing="kernel", n=100):
    samples = np.full(n, float(median))
    samples[0] = median * 0.9
    samples[-1] = median * 1.2
    return measure.Timing.from_samples(samples, timing)


def test_make_row_matches_design_format():
    row = bm.make_row("rmsnorm", "fused", 16384, 4096, "float16", _timing(50.0))
    assert tuple(row)[:len(bm.ROW_KEYS)] == bm.ROW_KEYS
    assert row["op"] == "rmsnorm" and row["impl"] == "fused" and row["dtype"] == "float16"
    assert row["timing"] == "kernel" and row["M"] == 16384 and row["N"] == 4096
    assert row["p10_us"] <= row["median_us"] <= row["p90_us"]
    nbytes = 2 * 16384 * 4096 * 2 + 4096 * 2
    assert row["GBps"] == pytest.approx(nbytes / 50e-6 / 1e9, rel=1e-6)
    assert row["reps"] == 100


def test_add_speedups_same_timing_only():
    rows = [bm.make_row("rmsnorm", "eager", 8, 8, "float16", _timing(40.0)),
            bm.make_row("rmsnorm", "fused", 8, 8, "float16", _timing(4.0)),
            bm.make_row("rmsnorm", "fused", 8, 8, "float16", _timing(10.0, "call")),
            bm.make_row("rmsnorm_gate", "fused", 8, 8, "float16", _timing(5.0))]
    bm.add_speedups(rows)
    assert rows[0]["speedup_vs_eager"] == 1.0
    assert rows[1]["speedup_vs_eager"] == pytest.approx(10.0)
    assert rows[2]["speedup_vs_eager"] is None  # no eager "call" row
    assert rows[3]["speedup_vs_eager"] is None  # other op


# -- errors ----------------------------------------------------------------------------------------

def test_unknown_provider_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown provider 'triton'.*known providers.*eager.*fused"):
        prov.check_providers("rmsnorm", ["eager", "triton"])
    with pytest.raises(ValueError, match="native"):
        prov.setup("rmsnorm_gate", "native", torch.ones(4))
    with pytest.raises(ValueError, match="unknown provider"):
        bm.run("rmsnorm", [(8, 8)], providers=["nope"])


@pytest.mark.parametrize("module, provider", [("fused", "fused"), ("deck", "deck4phase"), ("eager", "eager")])
def test_a_missing_module_of_ours_is_an_import_error(monkeypatch, module, provider):
    """The package's own providers are never "unavailable": with one of its modules unimportable,
    importing the harness or setting up the provider raises ImportError -- it is not skipped with
    a reason (ProviderUnavailable, a RuntimeError) as a missing optional library is."""
    monkeypatch.setitem(sys.modules, f"gpu_viz.rmsnorm.{module}", None)  # `import` of it: ImportError
    monkeypatch.delattr(gpu_viz.rmsnorm, module)  # `from . import x` reads the package's attribute first
    monkeypatch.delitem(sys.modules, "gpu_viz.rmsnorm.providers")  # a fresh import of the providers
    monkeypatch.delattr(gpu_viz.rmsnorm, "providers")
    w = torch.ones(8)
    with pytest.raises(ImportError, match=f"gpu_viz.rmsnorm.{module}"):
        fresh = importlib.import_module("gpu_viz.rmsnorm.providers")
        for op in OPS:
            if provider in fresh.PROVIDERS[op]:
                fresh.setup(op, provider, w)


def test_liger_missing_is_an_unavailable_provider(monkeypatch):
    """The optional provider, by contrast: without liger_kernel it is ProviderUnavailable, with the
    reason, and run() leaves it out."""
    monkeypatch.setitem(sys.modules, "liger_kernel", None)
    monkeypatch.setitem(sys.modules, "liger_kernel.transformers", None)
    monkeypatch.setitem(sys.modules, "liger_kernel.transformers.functional", None)
    with pytest.raises(prov.ProviderUnavailable, match="liger_kernel is not importable"):
        prov.setup("rmsnorm", "liger", torch.ones(8))
    assert "liger" not in prov.available("rmsnorm", None)
    assert prov.available("rmsnorm", None) == tuple(p for p in prov.PROVIDERS["rmsnorm"] if p != "liger")


def test_bad_shapes_dtypes_timings():
    with pytest.raises(ValueError, match="positive"):
        bm.run("rmsnorm", [(0, 8)])
    with pytest.raises(ValueError, match=r"\(M, N\) pairs"):
        bm.run("rmsnorm", [8])
    with pytest.raises(ValueError, match="dtype"):
        bm.run("rmsnorm", [(8, 8)], dtypes=["int32"])
    with pytest.raises(ValueError, match="timings"):
        bm.run("rmsnorm", [(8, 8)], timings=["wall"])


def test_cpu_mode_raises_gpu_unavailable(cpu_mode):
    with pytest.raises(backend.GPUUnavailable, match="needs a CUDA GPU"):
        bm.run("rmsnorm", [(8, 8)])
    with pytest.raises(backend.GPUUnavailable):
        bm.run_rmsnorm([(8, 8)], timing="kernel")
    with pytest.raises(backend.GPUUnavailable):
        brec.full_record(quick=True, save=False)
    with pytest.raises(backend.GPUUnavailable):
        bm.seed_defect_checks()


def test_cli_bench_in_cpu_mode(cpu_mode, capsys):
    import argparse

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    report.register_cli(sub)
    args = parser.parse_args(["bench", "--quick", "--tag", "t", "--out", "/tmp/x"])
    assert args.quick and args.tag == "t" and args.out == Path("/tmp/x")
    assert parser.parse_args(["bench"]).out == Path(".")  # the current folder, not the package's
    assert args.func(args) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out


# -- references and comparison ----------------------------------------------------------------------

def test_eager_gate_matches_float64_reference():
    g = torch.Generator().manual_seed(1)
    x, gate = torch.randn(6, 96, generator=g), 2 * torch.randn(6, 96, generator=g)
    w = 1 + 0.5 * torch.randn(96, generator=g)
    ref = _ref(x, w, gate)
    y = eager.eager_rmsnorm_gate(x, gate, w)
    assert y.dtype == torch.float32
    rep = _compare(y, ref, "float32")
    assert rep.ok, rep.message()
    # formula by hand for one element
    r = 1 / np.sqrt(np.mean(x[2].double().numpy() ** 2) + 1e-6)
    gg = gate[2, 5].item()
    assert ref[2, 5].item() == pytest.approx(x[2, 5].item() * w[5].item() * gg / (1 + np.exp(-gg)) * r, rel=1e-12)


def test_compare_names_the_mismatch():
    ref = torch.randn(4, 768, dtype=torch.float64) + 3
    out = ref.to(torch.float16)
    assert _compare(out, ref, "float16").ok
    bad = out.clone()
    bad[1, 7] = bad[1, 7] * 1.1  # one lost reduction term changes a row by far more than rounding
    bad[3, 0] = float("nan")
    rep = _compare(bad, ref, "float16")
    assert not rep.ok and (rep.n, rep.mismatches, rep.nan, rep.inf) == (3072, 2, 1, 0)
    assert [idx for idx, _, _ in rep.first] == [(1, 7), (3, 0)]
    detail = rep.message()
    assert "2 of 3072" in detail and "(1 NaN, 0 inf" in detail and "(1, 7): got" in detail, detail
    with pytest.raises(ValueError, match="shape"):
        _compare(out[:, :10], ref, "float16")


@pytest.mark.parametrize("op", ["rmsnorm", "rmsnorm_gate"])
@pytest.mark.parametrize("chunk", [96, 1000, 1 << 22])  # one row, several rows, everything at once
def test_check_rows_matches_whole_tensor_compare(op, chunk):
    """The row-blocked float64 check (no multi-GB temporaries before timing) gives the same
    verdict as one whole-tensor compare, names the global row of a mismatch, and catches NaN."""
    g = torch.Generator().manual_seed(5)
    x, gate = torch.randn(37, 96, generator=g), 2 * torch.randn(37, 96, generator=g)
    w = 1 + 0.5 * torch.randn(96, generator=g)
    gate = gate if op == "rmsnorm_gate" else None
    y = _ref(x, w, gate).to(torch.float16)
    ok, detail = bm.check_rows(op, y, x, w, gate, dtype="float16", chunk_elements=chunk)
    assert ok and detail.startswith(f"{op} float16: all {37 * 96} within"), detail
    assert _compare(y, _ref(x, w, gate), "float16").ok
    bad = y.clone()
    bad[29, 3] = bad[29, 3] * 1.1 + 0.1
    ok, detail = bm.check_rows(op, bad, x, w, gate, dtype="float16", chunk_elements=chunk)
    assert not ok and f"1 of {37 * 96} elements" in detail and "(29, 3): got" in detail, detail
    assert not _compare(bad, _ref(x, w, gate), "float16").ok
    bad = y.clone()
    bad[36, 95] = float("nan")  # the very last element, in the last (possibly partial) block
    ok, detail = bm.check_rows(op, bad, x, w, gate, dtype="float16", chunk_elements=chunk)
    assert not ok and "(1 NaN, 0 inf" in detail and "(36, 95): got nan" in detail, detail
    ok, detail = bm.check_rows(op, y[:, :10], x, w, gate, dtype="float16", chunk_elements=chunk)
    assert not ok and "shape" in detail


@pytest.mark.parametrize("chunk", [1, 8, 200, 1 << 22])
def test_check_rows_same_detail_as_compare(chunk):
    """Several mismatches in different blocks: the same count, examples and worst error as one
    whole-tensor compare of the rows; leading dims flattened (3-D) and a 1-D x as one row."""
    g = torch.Generator().manual_seed(9)
    cases = [torch.randn(10, 100, generator=g), torch.randn(4, 3, 8, generator=g), torch.randn(300, generator=g)]
    for x in cases:
        w = 1 + 0.5 * torch.randn(x.shape[-1], generator=g)
        y = _ref(x, w).to(torch.float16)
        flat = y.view(-1)
        for i in (3, flat.numel() // 2, flat.numel() - 1):
            flat[i] += 1.0
        want = _whole("rmsnorm", y, _ref(x, w), "float16")
        assert not want[0] and f"3 of {x.numel()} elements" in want[1], want
        assert bm.check_rows("rmsnorm", y, x, w, dtype="float16", chunk_elements=chunk) == want


def test_compare_nan_inputs_need_nan_outputs():
    """A NaN in a row's input makes the reference row NaN: a finite output there is wrong (|out -
    NaN| > bound is False, so a plain bound would accept it); the NaN row itself is right."""
    g = torch.Generator().manual_seed(2)
    x, w = torch.randn(6, 64, generator=g), 1 + 0.5 * torch.randn(64, generator=g)
    finite_y = _ref(x, w).to(torch.float16)
    x[4, 3] = float("nan")
    ref = _ref(x, w)
    ok, detail = _whole("rmsnorm", finite_y, ref, "float16")
    assert not ok and "64 of 384" in detail and "(4, 0): got" in detail, detail
    assert bm.check_rows("rmsnorm", finite_y, x, w, dtype="float16", chunk_elements=64) == (ok, detail)
    good = ref.to(torch.float16)  # row 4 all NaN, the others finite
    assert _compare(good, ref, "float16").ok
    assert bm.check_rows("rmsnorm", good, x, w, dtype="float16", chunk_elements=64)[0]


def test_check_rows_uses_the_one_reference_and_table(monkeypatch):
    """check_rows compares with gpu_viz.rmsnorm.reference.rmsnorm and the dtype's entry of the one
    tolerance table: an error just inside it passes, just outside it fails, per dtype."""
    assert bm.reference_f64 is reference.rmsnorm
    g = torch.Generator().manual_seed(4)
    x, w = torch.randn(3, 64, generator=g), 1 + 0.5 * torch.randn(64, generator=g)
    ref = _ref(x, w)
    for dt in ("float32", "float16", "bfloat16"):
        atol, rtol = tolerance(dt)
        bound = atol + rtol * ref.abs()
        for factor, ok in ((0.99, True), (1.01, False)):
            out = ref + factor * bound  # float64 output: no rounding of its own
            assert bm.check_rows("rmsnorm", out, x, w, dtype=dt)[0] is ok, (dt, factor)


@pytest.mark.parametrize("chunk, err", [(0, ValueError), (-5, ValueError), (2.5, TypeError), (None, TypeError),
                                        (True, TypeError)])
def test_check_rows_rejects_bad_chunk(chunk, err):
    x, w = torch.ones(2, 8), torch.ones(8)
    with pytest.raises(err, match="chunk_elements"):
        bm.check_rows("rmsnorm", x, x, w, dtype="float32", chunk_elements=chunk)


# -- torch.compile: really compiled, or excluded ---------------------------------------------------

def _expr(x, w):
    v = x.float().pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(v + 1e-6))


def _expr_with_break(x, w):
    v = x.float().pow(2).mean(-1, keepdim=True)
    torch._dynamo.graph_break()
    return w * (x * torch.rsqrt(v + 1e-6))


def test_compile_checked_accepts_a_real_compile():
    x, w = torch.randn(4, 16), torch.randn(16)
    c = prov.compile_checked(_expr, (x, w), backend_name="eager")
    torch.testing.assert_close(c(x, w), _expr(x, w))


def test_compile_checked_rejects_a_graph_break():
    x, w = torch.randn(4, 16), torch.randn(16)
    with pytest.raises(prov.CompileFellBack, match="graph break"):
        prov.compile_checked(_expr_with_break, (x, w), backend_name="eager")


def test_compile_checked_per_shape_survives_many_shapes():
    # the H200 trap: after 8 recompiles dynamo silently runs eager; per-shape compiles must not
    for n in range(1, 14):
        x, w = torch.randn(3, n), torch.randn(n)
        prov.compile_checked(_expr, (x, w), backend_name="eager")


# -- the run loop: correctness gates timing --------------------------------------------------------

def _stand_in_timers(fixed_us=None):
    """CPU stand-ins for the GPU timers, for the plumbing only (never reported as GPU data).
    ``fixed_us``: every sample is that many µs (the function still runs), for tests whose
    assertions depend on the times (a CPU's timing noise would make them flaky)."""
    def sample(fn, reps):
        out = []
        for i in range(reps):
            t0 = time.perf_counter()
            fn(i)
            out.append(1e6 * (time.perf_counter() - t0) if fixed_us is None else float(fixed_us))
        return out

    calls = []

    def kernel(fn, reps, k):
        calls.append(("kernel", k))
        return measure.Timing.from_samples(sample(fn, reps), "kernel")

    def call(fn, reps):
        calls.append(("call", reps))
        return measure.Timing.from_samples(sample(fn, reps), "call")

    return bm._Timers(kernel=kernel, call=call, sync=lambda: None), calls


def test_run_loop_times_only_correct_providers(monkeypatch):
    timed = []

    def setup_stand_in(provider, weight, eps, sample=None, compile_backend=None):
        def right(inp):
            timed.append(provider)
            return _ref(inp["x"], weight, None, eps).to(inp["x"].dtype)

        if provider == "eager":
            return right
        if provider == "fused":
            return right
        if provider == "native":  # wrong: mean over N - 1 (a lost reduction term)
            def wrong(inp):
                timed.append(provider)
                x = inp["x"].double()
                return (x * torch.rsqrt(x[:, 1:].pow(2).mean(-1, keepdim=True) + eps) * weight).float()
            return wrong
        if provider == "compile":
            raise prov.CompileFellBack("torch.compile fell back: 1 graph break(s)")
        raise prov.ProviderUnavailable("not here")

    monkeypatch.setitem(prov.SETUP, "rmsnorm", setup_stand_in)
    timers, calls = _stand_in_timers()
    rows = bm._run("rmsnorm", [(8, 64), (3, 768)], ("float32",), ("eager", "native", "compile", "fused", "liger"),
                   ("kernel", "call"), 7, 1e-6, "cpu", timers, l2_bytes=64 * 1024, verbose=False, seed=0)
    impls = {r["impl"] for r in rows}
    assert impls == {"eager", "fused"}
    assert len(rows) == 2 * 2 * 2  # 2 shapes x 2 impls x 2 timings
    assert timed.count("native") == 2  # checked once per shape, never timed
    reasons = {(s["impl"], s["N"]): s["reason"] for s in rows.skipped}
    assert set(reasons) == {(p, n) for p in ("native", "compile", "liger") for n in (64, 768)}
    assert "elements outside" in reasons[("native", 64)]
    assert "fell back" in reasons[("compile", 768)]
    for r in rows:
        assert set(bm.ROW_KEYS) <= set(r)
        assert r["dtype"] == "float32" and r["timing"] in ("kernel", "call")
        assert r["GBps"] > 0 and r["reps"] == 7 and r["buffers"] >= 1
        assert r["speedup_vs_eager"] is not None
        if r["timing"] == "kernel":  # whole passes over the rotated sets
            assert r["calls_per_graph"] >= r["buffers"] and r["calls_per_graph"] % r["buffers"] == 0
    # each timed provider's pilot is a kernel timing (not as-called) of one pass over the sets
    kernel_calls = [k for kind, k in calls if kind == "kernel"]
    kernel_rows = [r for r in rows if r["timing"] == "kernel"]
    assert len(kernel_calls) == 2 * len(kernel_rows) == 2 * 2 * 2  # 2 shapes x (eager, fused) x 2
    assert kernel_calls[0::2] == [r["buffers"] for r in kernel_rows]  # the pilots
    assert kernel_calls[1::2] == [r["calls_per_graph"] for r in kernel_rows]
    # rotation: 8x64 fp32 moves ~4 KiB, so several buffer sets are needed to pass 3x the 64 KiB "L2"
    assert rows[0]["buffers"] == measure.rotation_count(bm.fewest_bytes("rmsnorm", 8, 64, "float32"), 64 * 1024)
    assert rows[0]["buffers"] > 1


def test_call_timing_alone_needs_no_graph(monkeypatch):
    """timings=("call",): nothing is captured (no pilot either), so a provider that a CUDA graph
    refuses is still timed as called."""
    def setup_stand_in(provider, weight, eps, sample=None, compile_backend=None):
        return lambda inp: _ref(inp["x"], weight, None, eps).float()

    monkeypatch.setitem(prov.SETUP, "rmsnorm", setup_stand_in)
    timers, calls = _stand_in_timers()

    def refuse(fn, reps, k):
        raise RuntimeError("operation not permitted when stream is capturing")

    timers.kernel = refuse
    rows = bm._run("rmsnorm", [(4, 32)], ("float32",), ("eager", "fused"), ("call",), 3, 1e-6, "cpu",
                   timers, l2_bytes=1024, verbose=False, seed=2)
    assert {r["impl"] for r in rows} == {"eager", "fused"} and not rows.skipped
    assert all(r["timing"] == "call" and "calls_per_graph" not in r for r in rows)


def test_per_call_times_come_from_one_interleaved_run_per_shape(monkeypatch):
    """With interleaving timers, each shape's providers are timed per call together (one call of
    ``timers.calls`` naming all of them); a provider whose calls raise is skipped with the
    reason and the others are timed without it; kernel-only times are unchanged."""
    state = {"raise": False}

    def setup_stand_in(provider, weight, eps, sample=None, compile_backend=None):
        def f(inp):
            if provider == "native" and state["raise"]:
                raise RuntimeError("native broke")
            return _ref(inp["x"], weight, None, eps).float()
        return f

    monkeypatch.setitem(prov.SETUP, "rmsnorm", setup_stand_in)
    timers, calls = _stand_in_timers(fixed_us=2.0)
    together = []

    def interleaved(fns, reps):
        together.append(sorted(fns))
        state["raise"] = True  # the providers were checked; now native raises while timed
        return {p: measure.Timing.from_samples([2.0] * reps, "call") for p in fns if (fns[p](0) is not None)}

    timers.calls = interleaved
    rows = bm._run("rmsnorm", [(4, 32), (2, 64)], ("float32",), ("eager", "native", "fused"), ("kernel", "call"),
                   5, 1e-6, "cpu", timers, l2_bytes=1024, verbose=False, seed=3)
    assert together[0] == ["eager", "fused", "native"]  # shape 1: all three at once, then native raises
    assert together[1] == ["eager", "fused"]  # after it, without native
    assert all(kind == "kernel" for kind, _ in calls)  # per call only through the interleaved timer
    by = {(r["impl"], r["N"], r["timing"]) for r in rows}
    assert ("eager", 32, "call") in by and ("fused", 32, "call") in by and ("fused", 64, "call") in by
    assert not any(impl == "native" and t == "call" for impl, _, t in by)
    reasons = [s["reason"] for s in rows.skipped if s["impl"] == "native"]
    assert reasons and all("native broke" in r for r in reasons)
    calls_rows = [r for r in rows if r["timing"] == "call"]
    assert calls_rows and all(r["rounds"] == bm.CALL_ROUNDS for r in calls_rows)
    assert not any("rounds" in r for r in rows if r["timing"] == "kernel")
    # one provider alone: nothing to interleave with, no rounds claimed
    together.clear()
    alone = bm._run("rmsnorm", [(4, 32)], ("float32",), ("fused",), ("call",), 5, 1e-6, "cpu", timers,
                    l2_bytes=1024, verbose=False, seed=4)
    assert not together and len(alone) == 1 and "rounds" not in alone[0]


def test_a_failure_only_the_rounds_hit_times_each_provider_alone(monkeypatch):
    """When the interleaved rounds raise but no provider raises on a call of its own (a fault
    only some calls hit), every provider is timed alone instead -- no row is lost to another
    provider's fault, and no row claims shared rounds."""
    def setup_stand_in(provider, weight, eps, sample=None, compile_backend=None):
        return lambda inp: _ref(inp["x"], weight, None, eps).float()

    monkeypatch.setitem(prov.SETUP, "rmsnorm", setup_stand_in)
    timers, calls = _stand_in_timers(fixed_us=2.0)

    def rounds_fail(fns, reps):
        raise RuntimeError("the 7th call of native raised")

    timers.calls = rounds_fail
    rows = bm._run("rmsnorm", [(4, 32)], ("float32",), ("eager", "native", "fused"), ("kernel", "call"),
                   5, 1e-6, "cpu", timers, l2_bytes=1024, verbose=False, seed=5)
    got = {(r["impl"], r["timing"]) for r in rows}
    assert got == {(p, t) for p in ("eager", "native", "fused") for t in ("kernel", "call")}, got
    assert not rows.skipped and not any("rounds" in r for r in rows)
    assert [k for k, _ in calls].count("call") == 3  # each provider alone


@pytest.mark.parametrize("buffers, pilot_us", [(0, 3.0), (-1, 3.0), (2, float("nan")), (2, float("inf")), (2, -1.0)])
def test_calls_per_graph_rejects_bad_arguments(buffers, pilot_us):
    with pytest.raises(ValueError, match="buffers must be|pilot_us must be"):
        bm._calls_per_graph(buffers=buffers, pilot_us=pilot_us)


def test_calls_per_graph_covers_every_buffer_set():
    assert bm._calls_per_graph(buffers=64, pilot_us=3.0) == 64
    assert bm._calls_per_graph(buffers=1, pilot_us=3000.0) == 1
    assert bm._calls_per_graph(buffers=1, pilot_us=260.0) == 4  # 32768x8192: ~1 ms per replay
    assert bm._calls_per_graph(buffers=2, pilot_us=34.0) == 30  # fp32 4096x4096
    assert bm._calls_per_graph(buffers=2, pilot_us=5.0) == 64


@pytest.mark.parametrize("buffers", [1, 2, 3, 5, 7, 40, 64])
@pytest.mark.parametrize("pilot_us", [0.1, 1.0, 3.0, 34.0, 117.0, 260.0, 999.0, 5000.0])
def test_calls_per_graph_is_whole_passes_over_the_sets(buffers, pilot_us):
    """Every set equally often per replay, so consecutive replays never read one set twice in a
    row (an odd count over 2 sets did: the second read partly hit L2)."""
    k = bm._calls_per_graph(buffers=buffers, pilot_us=pilot_us)
    assert k % buffers == 0 and k >= buffers
    assert k <= max(64, buffers) + buffers - 1
    if k > buffers:  # more than one pass only while a replay is still under ~1 ms
        assert (k - buffers) * pilot_us < 1000.0


# -- the performance checks on hand-made records ---------------------------------------------------

def _record(fused_GBps=3900.0, fused_faster=True, floor_us=2.0, small_us=2.5, drop=None):
    copy = 4200.0
    rows = []
    for op in OPS:
        for dt in ("float16", "bfloat16"):
            for (M, N) in bplan.RECORD_SHAPES:
                nbytes = bm.fewest_bytes(op, M, N, dt)
                if (M, N) in tg.BANDWIDTH_SHAPES:
                    us = nbytes / (fused_GBps * 1e9) * 1e6
                elif (M, N) == tg.FLOOR_SHAPE:
                    us = small_us
                else:
                    us = nbytes / (3000e9) * 1e6
                base = us * (1.5 if fused_faster else 0.9)
                for impl, t in (("fused", us), ("native", base), ("compile", base), ("eager", 5 * base)):
                    if impl == "native" and op == "rmsnorm_gate":
                        continue
                    if drop == (op, impl, M, N, dt):
                        continue
                    rows.append(bm.make_row(op, impl, M, N, dt, _timing(t)))
    return {"date": "2026-11-29", "gpu": "NVIDIA H200", "copy_GBps": copy, "launch_floor_us": floor_us,
            "rows": bm.add_speedups(rows),
            "skipped": [{"op": "rmsnorm", "impl": "compile", "M": 128, "N": 4096, "dtype": "float16",
                         "reason": "torch.compile fell back: 1 graph break(s)"}]}


def test_summary_checks_all_pass():
    checks = tg.summary_checks(_record())
    assert checks and all(passed for _, passed, _ in checks), [c for c in checks if not c[1]]
    names = [c for c, _, _ in checks]
    assert sum("copy bandwidth" in n for n in names) == 2 * 2 * 2
    assert sum("launch floor" in n for n in names) == 4
    assert sum("faster than native" in n for n in names) == 2 * len(bplan.RECORD_SHAPES)
    assert sum("faster than compile" in n for n in names) == 2 * 2 * len(bplan.RECORD_SHAPES)


def test_summary_checks_fail_bandwidth_speed_floor():
    bad = {c: ok for c, ok, _ in tg.summary_checks(_record(fused_GBps=3000.0))}
    assert not bad["rmsnorm fused 16384x4096 float16: >= 90% of copy bandwidth"]
    assert not bad["rmsnorm_gate fused 32768x8192 bfloat16: >= 90% of copy bandwidth"]
    slow = tg.summary_checks(_record(fused_faster=False))
    assert not any(ok for c, ok, _ in slow if "faster than" in c)
    floor = {c: ok for c, ok, _ in tg.summary_checks(_record(small_us=3.5))}
    assert not floor["rmsnorm fused 128x4096 float16: within 1.5x of the launch floor"]


def test_floor_check_names_the_copy_kernel_floor_without_changing_the_verdict():
    name = "rmsnorm fused 128x4096 float16: within 1.5x of the launch floor"
    rec = _record(small_us=3.5)
    rec["copy_kernel_floor_us"] = 3.2  # a bare copy slower than 1.5x: context, not an excuse
    ok, detail = {c: (o, d) for c, o, d in tg.summary_checks(rec)}[name]
    assert not ok and detail.endswith("a bare copy kernel moving the same x -> y bytes: 3.20 µs = 1.60x")
    ok, detail = {c: (o, d) for c, o, d in tg.summary_checks(_record(small_us=2.5))}[name]
    assert ok and "copy kernel" not in detail  # absent from older records


@pytest.mark.parametrize("kw, err, name", [
    (dict(nbytes=0), ValueError, "nbytes"), (dict(nbytes=-16), ValueError, "nbytes"),
    (dict(nbytes=24), ValueError, "nbytes"), (dict(nbytes=1.5), TypeError, "nbytes"),
    (dict(l2_bytes=-1), ValueError, "l2_bytes"), (dict(l2_bytes=None), TypeError, "l2_bytes"),
    (dict(block=16), ValueError, "block"), (dict(block=2048), ValueError, "block"),
    (dict(reps=0), ValueError, "reps"), (dict(block=True), TypeError, "block")])
def test_copy_kernel_floor_rejects_bad_arguments(kw, err, name):
    args = dict(nbytes=1024, l2_bytes=1 << 20) | kw
    with pytest.raises(err, match=name):
        measure.copy_kernel_floor(**args)


def test_copy_kernel_floor_takes_numpy_ints_then_needs_a_gpu(monkeypatch):
    def cpu_mode(what):
        raise backend.GPUUnavailable(f"{what} needs a CUDA GPU (stand-in)")

    monkeypatch.setattr(backend, "require_gpu", cpu_mode)  # the arguments passed validation
    with pytest.raises(backend.GPUUnavailable, match="copy-kernel floor"):
        measure.copy_kernel_floor(np.int64(1024), np.int64(1 << 20), block=np.int32(256))


def test_summary_checks_missing_baseline_fails_with_reason():
    rec = _record(drop=("rmsnorm", "compile", 128, 4096, "float16"))
    checks = {c: (ok, d) for c, ok, d in tg.summary_checks(rec)}
    ok, detail = checks["rmsnorm 128x4096 float16: fused faster than compile"]
    assert not ok and "not measured" in detail and "graph break" in detail
    rec = _record(drop=("rmsnorm", "fused", 16384, 4096, "bfloat16"))
    ok, detail = {c: (o, d) for c, o, d in tg.summary_checks(rec)}[
        "rmsnorm fused 16384x4096 bfloat16: >= 90% of copy bandwidth"]
    assert not ok and detail == "not measured"


# -- tables, charts, plan -----------------------------------------------------------------------------

def test_tables():
    rec = _record()
    t = report.table(rec["rows"], provenance=records.label(rec))
    md = t.markdown()
    assert md.splitlines()[0].startswith("| op | M x N | dtype | timing | eager µs")
    assert "recorded on NVIDIA H200, 2026-11-29" in md
    assert "(5.0x)" in md  # fused vs eager
    # the HTML keeps names, dates and brackets whole with invisible marks (words.keep_whole)
    assert "<table>" in t.html() and "recorded on NVIDIA H200" in words.plain(t._repr_html_())
    long = report.table(rec["rows"][:3], layout="long", copy_GBps=rec["copy_GBps"]).plain()
    assert "% of copy" in long and len(long.splitlines()) == 5
    with pytest.raises(ValueError, match="layout"):
        report.table(rec["rows"], layout="tall")
    # per-call variants in the rows (a full record has them) stay out of the comparison table
    # (a column per variant ran 1654 px wide on a 1188 px slide) unless asked for by name
    extra = [dict(r, impl="fused_unplanned") for r in rec["rows"] if r["impl"] == "fused"]
    head = report.table(rec["rows"] + extra).markdown().splitlines()[0]
    assert "fused_unplanned" not in head and "fused µs" in head, head
    assert "fused_unplanned" in report.table(rec["rows"] + extra, impls=("fused", "fused_unplanned")).markdown()


def test_bar_chart_states_provenance(cpu_mode):
    rec = _record()
    seed_rows = [r for r in rec["rows"] if (r["M"], r["N"]) in bplan.SEED_SHAPES]
    fig = report.bar_chart(seed_rows, provenance=records.label(rec), op="rmsnorm", dtype="float16")
    data = " ".join(fig.axes[0].get_xlabel().split())
    assert data.startswith("Data: ") and "recorded on NVIDIA H200, 2026-11-29" in data
    assert len(fig.axes[0].patches) == 4 * len(bplan.SEED_SHAPES)
    # all nine record shapes do not fit one readable chart: refused, naming the count and the limit
    with pytest.raises(ValueError, match=f"{len(bplan.RECORD_SHAPES)} shapes .* at most {report.BAR_CHART_MAX_GROUPS}"):
        report.bar_chart(rec["rows"], provenance=records.label(rec), op="rmsnorm", dtype="float16")
    with pytest.raises(ValueError, match="provenance is required in CPU mode"):
        report.bar_chart(rec["rows"])
    with pytest.raises(ValueError, match="no rows"):
        report.bar_chart(rec["rows"], provenance="x", op="rmsnorm", dtype="float32")


def test_record_plan_covers_every_shape():
    plan = bplan.record_plan()
    rms = [p for p in plan if p[0] == "rmsnorm" and "float16" in p[2]][0]
    gate = [p for p in plan if p[0] == "rmsnorm_gate"][0]
    for shape in bplan.RECORD_SHAPES:
        assert shape in rms[1] and shape in gate[1]
    for shape in bplan.DECK_SHAPES:
        assert shape in rms[1]
    assert "deck4phase" in rms[3] and set(gate[3]) == {"eager", "compile", "fused"}
    assert any(p[0] == "rmsnorm" and p[2] == ("float32",) for p in plan)
    assert set(rms[2]) == {"float16", "bfloat16"} and set(gate[2]) == {"float16", "bfloat16"}


# -- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.timing
def test_gpu_run_smoke():
    rows = bm.run("rmsnorm", [(64, 1000)], ["float16"], ["eager", "native", "fused"], reps=20)
    assert rows, rows.skipped
    assert not [s for s in rows.skipped if s["impl"] == "fused"], rows.skipped
    for r in rows:
        assert set(bm.ROW_KEYS) <= set(r)
        assert r["median_us"] > 0 and r["p10_us"] <= r["median_us"] <= r["p90_us"] and r["GBps"] > 0
        assert r["reps"] == 20
    assert {r["timing"] for r in rows} == {"kernel", "call"}
    gate = bm.run("rmsnorm_gate", [(32, 4096)], ["bfloat16"], ["eager", "fused"], timings=["kernel"], reps=20)
    assert {r["impl"] for r in gate} == {"eager", "fused"}, gate.skipped


@pytest.mark.gpu
def test_gpu_seed_defects_fixed():
    results = bm.seed_defect_checks("float16")
    assert len(results) == 7
    assert all(ok for _, ok, _ in results), [r for r in results if not r[1]]


def test_cpu_providers_with_the_real_modules():
    """eager / native / compile (dynamo's eager backend on CPU) of rmsnorm and rmsnorm_gate agree
    with float64 on CPU tensors: the providers' wiring, not their speed."""
    g = torch.Generator().manual_seed(3)
    for op in OPS:
        sets = bm.make_inputs(op, 5, 40, "float32", "cpu", generator=g)
        inp, w = sets[0], sets[0]["weight"]
        ref = _ref(inp["x"], w, inp.get("gate"))
        for p in ("eager", "native", "compile"):
            if p not in prov.PROVIDERS[op]:
                continue
            fn = prov.setup(op, p, w, sample=inp, compile_backend="eager")
            rep = _compare(fn(inp), ref, "float32")
            assert rep.ok, (op, p, rep.message())


def test_seed_comparison_quotes_the_seed_and_labels_ours():
    rows = bm.add_speedups([bm.make_row("rmsnorm_gate", impl, 128, 4096, "float16", _timing(us, t))
                            for impl, us in (("eager", 30.0), ("fused", 3.0)) for t in ("kernel", "call")])
    t = report.seed_comparison(rows, provenance="recorded on NVIDIA H200, 2026-11-29 (not live)")
    md = t.markdown()
    assert "| 128x4096 | 4.92 | 55.72 | 11.32x | 3.00 | 30.00 | — | 10.0x |" in md
    assert "| 1024x8192 | 25.77 | 294.51 | 11.43x | — |" in md
    assert "not live" in md and "d801038" in md
    # the two halves' timings are named: the kernel half is no per-call time
    assert '"call" one Python call after another' in t.caption and '"kernel" CUDA-graph replay' in t.caption


def test_bandwidth_chart_draws_copy_line():
    rec = _record()
    bw_rows = [r for r in rec["rows"] if (r["M"], r["N"]) in tg.BANDWIDTH_SHAPES]
    fig = report.bar_chart(bw_rows, provenance="recorded", metric="GBps", op="rmsnorm_gate",
                           copy_GBps=rec["copy_GBps"])
    ax = fig.axes[0]
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [rec["copy_GBps"]]
    assert f"device copy {rec['copy_GBps']:,.0f} GB/s" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_kernel_resources_from_a_given_report():
    from gpu_viz import device, ops

    info = device.spec_sheet("H200")
    k = ops.launch_config(16384, 4096, "float16", gate=True)["kernel"]
    report = [{"kernel": k, "arch": "sm_90", "registers": 64, "spill_stores_bytes": 0, "spill_loads_bytes": 0,
               "local_bytes": 0, "shared_bytes": 132}]
    rows = brec.kernel_resources([("rmsnorm_gate", 16384, 4096), ("rmsnorm", 1024, 768)], "float16",
                               info=info, report=report)
    assert rows[0]["kernel"] == k and rows[0]["registers"] == 64
    block = rows[0]["block"]
    # 64 registers x block threads: 65536 / (64 * block) blocks by registers, and the thread cap
    assert rows[0]["blocks_per_sm"] == min(65536 // (64 * block), 2048 // block)
    assert 0 < rows[0]["occupancy"] <= 1
    assert rows[1]["registers"] is None and rows[1]["occupancy"] is None


def test_kernel_resources_name_the_cluster_kernel_a_wide_row_launches():
    """Where the fused op sends a row to the cluster path (N = 65536 on an H200), the registers and
    occupancy are the cluster kernel's -- the one the launch list names -- not the one-block-per-row
    kernel the GPU never runs for it; on a GPU without clusters (L4), that kernel's."""
    from gpu_viz import device, kernels
    from gpu_viz.rmsnorm import wide

    h200 = device.spec_sheet("H200")
    cfg = wide.config(65536, "float16", tuple(h200.compute_capability), gate=True)
    (row,) = brec.kernel_resources([("rmsnorm_gate", 2, 65536)], "float16", info=h200, report=[])
    assert (row["variant"], row["kernel"], row["block"]) == ("cluster", cfg.kernel, cfg.threads)
    assert row["grid"] == 2 * cfg.cluster and row["rows_per_block"] is None
    if kernels.find_tool("nvcc"):
        assert row["registers"] and row["spill_stores_bytes"] == 0
        # its dynamic shared memory counts: no more blocks than shared memory holds
        assert row["blocks_per_sm"] <= wide.sm_holds(cfg.threads, cfg.smem_bytes)
    (l4,) = brec.kernel_resources([("rmsnorm_gate", 2, 65536)], "float16", info=device.spec_sheet("L4"), report=[])
    assert l4["variant"] != "cluster"


def test_run_loop_end_to_end_with_real_cpu_providers():
    timers, _ = _stand_in_timers()
    for op, provs in (("rmsnorm", ("eager", "native", "compile")), ("rmsnorm_gate", ("eager", "compile"))):
        rows = bm._run(op, [(4, 48)], ("float32",), provs, ("kernel", "call"), 3, 1e-6, "cpu", timers,
                       l2_bytes=4096, verbose=False, compile_backend="eager", seed=1)
        assert not rows.skipped, rows.skipped
        assert sorted({r["impl"] for r in rows}) == sorted(provs)
        assert all(r["op"] == op for r in rows)


def test_run_loop_reports_a_timing_failure(monkeypatch):
    def setup_stand_in(provider, weight, eps, sample=None, compile_backend=None):
        return lambda inp: _ref(inp["x"], weight, None, eps).float()

    monkeypatch.setitem(prov.SETUP, "rmsnorm", setup_stand_in)
    timers, _ = _stand_in_timers()
    real_kernel = timers.kernel
    n = {"kernel": 0}

    def kernel(fn, reps, k):
        n["kernel"] += 1
        if n["kernel"] > 2:  # eager: pilot + timing; fused's first capture (its pilot) is refused
            raise RuntimeError("operation not permitted when stream is capturing")
        return real_kernel(fn, reps, k)

    timers.kernel = kernel
    rows = bm._run("rmsnorm", [(4, 32)], ("float32",), ("eager", "fused"), ("kernel", "call"), 3, 1e-6, "cpu",
                   timers, l2_bytes=1024, verbose=False, seed=2)
    assert {r["impl"] for r in rows} == {"eager"} and len(rows) == 2
    assert rows.skipped[0]["impl"] == "fused" and "timing failed" in rows.skipped[0]["reason"]


@pytest.mark.parametrize("newer", [None, "truncated", "[]", "null", '"x"', "a folder", "partial"])
def test_notebook10_cpu_mode_shows_a_committed_record_labelled(cpu_mode, monkeypatch, tmp_path, newer):
    """Notebook 13's cells in CPU mode with one (hand-made) record in the results folder:
    nothing is timed, and everything shown carries the record's GPU and date.  A newer record that
    is not usable (cut short, not an object, a folder, lacking the copy bandwidth) breaks nothing:
    it is skipped, and the label of the record shown says so."""
    import json
    from pathlib import Path

    import IPython.display
    import matplotlib
    import nbformat

    matplotlib.use("Agg")
    rec = _record()
    rec["kernels"] = {}
    (tmp_path / "nvidia-h200-2026-11-29-fused.json").write_text(json.dumps(rec), encoding="utf-8")
    bad = tmp_path / "nvidia-h200-2026-11-30-fused.json"
    if newer == "a folder":
        bad.mkdir()
    elif newer == "truncated":
        bad.write_text(json.dumps(rec)[:5000], encoding="utf-8")
    elif newer == "partial":
        bad.write_text(json.dumps({k: v for k, v in rec.items() if k != "copy_GBps"}), encoding="utf-8")
    elif newer is not None:
        bad.write_text(newer, encoding="utf-8")
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    monkeypatch.setattr(brec, "kernel_report_any", lambda arch=None: ([], "stand-in (test)"))
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    monkeypatch.setattr(brec, "run", lambda *a, **k: pytest.fail("CPU mode must not time anything"))
    nb = nbformat.read(Path(__file__).resolve().parent.parent / "notebooks" / "13_fused_rmsnorm_gate.ipynb", 4)
    ns = {}
    for cell in nb.cells:
        assert "slideshow" in cell.metadata
        # every code cell the notebook runs (the deck runs them too, hiding the "skip" ones: a
        # helper such as show_code is defined in one), less the learner's exercise cells
        if cell.cell_type == "code" and "exercise" not in cell.metadata.get("tags", []):
            exec(compile(cell.source, "<nb10>", "exec"), ns)
    tables = [o for o in shown if isinstance(o, report.Table)]
    label = "recorded on NVIDIA H200, 2026-11-29 (not live)"
    if newer is not None:
        label += f"; the newer record {bad.name} was skipped ("
        assert ns["label"].startswith(label), ns["label"]
        label = ns["label"]
    assert any("write-up fused µs" in t.header for t in tables)
    assert all(label in t.caption for t in tables if "write-up fused µs" in t.header or "GB/s" in t.header)
    assert any(t.header == ["check", "passed", "detail"] for t in tables)
    assert ns["label"] == label and ns["rows"] and not ns["LIVE"]


@pytest.mark.parametrize("out_given", [True, False], ids=["--out", "current-folder"])
def test_full_record_and_cli_plumbing(monkeypatch, tmp_path, capsys, out_given):
    """full_record + `gpu-viz bench` end to end on CPU with stand-ins for every GPU step; the
    stand-in record goes under tmp_path only (it is never a GPU result): into --out, or without
    it into the current folder (never the package's results)."""
    import json

    cwd, out_dir = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    # the committed records: read (the previous record of the same GPU), never written
    committed = tmp_path / "committed"
    committed.mkdir()
    prev = {"date": "1999-12-31", "gpu": "Stand-in GPU", "copy_GBps": 1000.0, "complete": True,
            "rows": [bm.make_row("rmsnorm", "fused", 4, 32, "float16", _timing(1.0)),
                     bm.make_row("rmsnorm", "native", 4, 32, "float16", _timing(2.0))]}
    (committed / "stand-in-gpu-1999-12-31-t.json").write_text(json.dumps(prev))
    monkeypatch.setattr(records, "results_dir", lambda: committed)
    t = _timing(2.0)
    monkeypatch.setattr(backend, "require_gpu", lambda what: None)
    monkeypatch.setattr(backend, "has_gpu", lambda: True)
    monkeypatch.setattr(backend, "live_label", lambda: "stand-in label")
    monkeypatch.setattr(measure, "copy_bandwidth", lambda: {"GBps": 1000.0, "timing": t})
    monkeypatch.setattr(measure, "launch_floor", lambda: {"kernel": t, "call": _timing(5.0, "call")})
    floor_calls = []
    monkeypatch.setattr(measure, "copy_kernel_floor",
                        lambda nbytes, l2_bytes: floor_calls.append((nbytes, l2_bytes)) or _timing(3.0))
    monkeypatch.setattr(gpu_device, "current", lambda: types.SimpleNamespace(l2_bytes=1 << 20))
    monkeypatch.setattr(records, "environment", lambda: {"date": "2000-01-01", "gpu": "Stand-in GPU", "sm": "sm_00"})
    monkeypatch.setattr(brec, "_kernel_section", lambda plan: {"source": "stand-in"})
    monkeypatch.setattr(bplan, "record_plan", lambda quick=False: [
        ("rmsnorm", [(4, 32), (16, 512)], ("float16",), ("eager", "native", "compile", "fused", "liger")),
        ("rmsnorm_gate", [(4, 32)], ("bfloat16",), ("eager", "compile", "fused"))])
    # the per-call and wide steps: one stand-in step each way; the invariance check stands in
    monkeypatch.setattr(bplan, "call_plan", lambda: [("rmsnorm", [(2, 64)], ("float16",), ("native", "fused"))])
    monkeypatch.setattr(bplan, "wide_plan", lambda: [])
    monkeypatch.setattr(brec, "batch_invariance", lambda Ns=None: {"ok": True, "checked": [{"stand-in": Ns}]})
    # the C++ launcher: a stand-in too (the real one would be built into the user's cache, 30-60 s)
    from gpu_viz.rmsnorm.fused import launch as flaunch

    monkeypatch.setattr(flaunch, "ensure_launcher", lambda timeout=None: "stand-in launcher")

    def setup_ok(provider, weight, eps, sample=None, compile_backend=None):
        if provider == "compile":
            raise prov.CompileFellBack("torch.compile fell back: stand-in")
        return lambda inp: _ref(inp["x"], weight, None, eps).to(inp["x"].dtype)

    def setup_gate_ok(provider, weight, eps, sample=None, compile_backend=None):
        return lambda inp: _ref(inp["x"], weight, inp["gate"], eps).to(inp["x"].dtype)

    monkeypatch.setitem(prov.SETUP, "rmsnorm", setup_ok)
    monkeypatch.setitem(prov.SETUP, "rmsnorm_gate", setup_gate_ok)
    timers, _ = _stand_in_timers(fixed_us=2.0)  # the previous-record check below: fused 2.0 vs 1.0, F.rms_norm 2.0 vs 2.0

    def run_cpu(op, shapes, dtypes, providers, reps=100, verbose=False, timings=("kernel", "call"), **kw):
        return bm._run(op, shapes, dtypes, providers, timings, reps, 1e-6, "cpu", timers,
                       l2_bytes=1 << 16, verbose=verbose)

    monkeypatch.setattr(brec, "run", run_cpu)
    parser = argparse.ArgumentParser()
    report.register_cli(parser.add_subparsers(dest="command", required=True))
    where = ["--out", str(out_dir)] if out_given else []
    args = parser.parse_args(["bench", *where, "--tag", "t", "--reps", "3"])
    assert args.func(args) == 0
    path = (out_dir if out_given else cwd) / "stand-in-gpu-2000-01-01-t.json"
    assert sorted(p for p in tmp_path.rglob("*.json") if committed not in p.parents) == [path]
    assert [p.name for p in committed.iterdir()] == ["stand-in-gpu-1999-12-31-t.json"]
    rec = json.loads(path.read_text())
    assert list(rec)[-1] == "rows" and rec["copy_GBps"] == 1000.0 and rec["launch_floor_us"] == 2.0
    assert rec["launch_floor_call_us"] == 5.0 and rec["reps"] == 3 and rec["complete"] is True
    assert rec["call_windows"] == bm.CALL_WINDOWS == "idle-start"  # per-call windows on an idle GPU
    assert rec["copy_kernel_floor_us"] == 3.0 and floor_calls == [(128 * 4096 * 2, 1 << 20)]
    assert {r["impl"] for r in rec["rows"] if r["op"] == "rmsnorm"} == {"eager", "native", "fused"}
    assert {r["impl"] for r in rec["rows"] if r["op"] == "rmsnorm_gate"} == {"eager", "compile", "fused"}
    calls = [r for r in rec["rows"] if r["M"] == 2]  # the per-call step: "call" rows only
    assert sorted(r["impl"] for r in calls) == ["fused", "native"] and {r["timing"] for r in calls} == {"call"}
    assert rec["batch_invariant"] == {"ok": True, "checked": [{"stand-in": list(bplan.INVARIANCE_N)}]}
    assert rec["launcher"] == "stand-in launcher"
    assert len(rec["rows"]) == (2 * 3 + 3) * 2 + 2
    assert {s["impl"] for s in rec["skipped"]} == {"compile"}
    if "liger" in rec["providers_unavailable"]:
        assert "liger_kernel" in rec["providers_unavailable"]["liger"]
    assert rec["checks"] and all(set(c) == {"check", "passed", "detail"} for c in rec["checks"])
    # the previous record: fused 2.0 µs now vs 1.0 µs before, F.rms_norm 2.0 vs 2.0: 2x slower, named
    assert rec["previous_record"]["date"] == "1999-12-31"
    vs = {c["check"]: c for c in rec["vs_previous"]}
    c = vs["rmsnorm fused float16: kernel time at most 2% slower than the last record at every shared shape"]
    assert not c["passed"] and "stand-in-gpu-1999-12-31-t.json (1999-12-31)" in c["detail"]
    assert c in rec["checks"] and rec["estimate_s"] > 0
    out = capsys.readouterr().out
    assert "The performance targets" in out and "stand-in label" in out and path.name in out
    assert "compile not measured" in out or "not measured" in out


def test_newest_record_skips_partial_and_quick(monkeypatch, tmp_path):
    import json

    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    assert brec.newest_record() is None
    base = _record()
    for name, date, extra in (("a-2026-11-01-fused.json", "2026-11-01", {}),
                              ("a-2026-11-05-fused.json", "2026-11-05", {"complete": False}),
                              ("a-2026-11-06-quick-fused.json", "2026-11-06", {"quick": True}),
                              ("a-2026-11-07-hardware.json", "2026-11-07", {"rows": []})):
        (tmp_path / name).write_text(json.dumps(dict(base, date=date, **extra)))
    assert brec.newest_record()["date"] == "2026-11-01"
    assert brec.newest_record(include_quick=True)["date"] == "2026-11-06"


@pytest.mark.gpu
@pytest.mark.parametrize("op", OPS)
def test_gpu_compile_baseline_really_compiles(op):
    """torch.compile (inductor) of the eager expression compiles one graph per shape on this GPU;
    if this fails, every "compile" row of the record is excluded (and says why)."""
    sets = bm.make_inputs(op, 256, 4096, "float16", "cuda")
    w = sets[0]["weight"]
    fn = prov.setup(op, "compile", w, sample=sets[0])
    rep = _compare(fn(sets[0]), _ref(sets[0]["x"], w, sets[0].get("gate")), "float16")
    assert rep.ok, rep.message()


@pytest.mark.parametrize("bad", ["0", "-3", "two", "1.5"])
def test_bench_reps_must_be_a_whole_number_at_least_one(bad, capsys):
    """`gpu-viz bench --reps` is checked when the arguments are parsed (like `slides --jobs`),
    not after the GPU check: a usage error naming --reps, exit status 2."""
    parser = argparse.ArgumentParser()
    report.register_cli(parser.add_subparsers(dest="command", required=True))
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["bench", "--reps", bad])
    assert exc.value.code == 2
    assert "--reps" in capsys.readouterr().err
    assert parser.parse_args(["bench", "--reps", "1"]).reps == 1


def test_full_record_saves_one_file_however_often_it_saves(tmp_path, monkeypatch):
    """Bug class: a run that saves after every shape must rewrite its own file, never add one
    per save (records.save_record never replaces another run's file).  full_record on the CPU
    with the GPU parts stubbed: several shapes, one record file, complete, with every row."""
    from gpu_viz.rmsnorm.fused import launch as flaunch

    monkeypatch.setattr(backend, "require_gpu", lambda what: None)
    monkeypatch.setattr(backend, "live_label", lambda: "measured on a stub just now")
    monkeypatch.setattr(brec, "record_batches", lambda quick=False: [
        ("rmsnorm", [(8, 64), (16, 64), (32, 64)], ("float16",), ("fused",), ("kernel",), 1)])
    fake = types.SimpleNamespace(median_us=1.0, p10_us=1.0, p90_us=1.0)
    monkeypatch.setattr(bm.bench, "copy_bandwidth", lambda: {"GBps": 4000.0, "timing": fake})
    monkeypatch.setattr(bm.bench, "launch_floor", lambda: {"kernel": fake, "call": fake})
    monkeypatch.setattr(bm.bench, "copy_kernel_floor", lambda nbytes, l2: fake)
    monkeypatch.setattr(gpu_device, "current", lambda: types.SimpleNamespace(l2_bytes=60 << 20))
    monkeypatch.setattr(flaunch, "ensure_launcher", lambda: "stub")
    monkeypatch.setattr(brec, "_kernel_section", lambda plan: {})
    monkeypatch.setattr(brec, "batch_invariance", lambda **kw: {"ok": True, "checked": []})
    monkeypatch.setattr(brec, "available", lambda op, providers, drop_optional=True: tuple(providers))

    def fake_run(op, shapes, dtypes, providers, **kw):
        (M, N), = shapes
        return bm.Rows([dict(op=op, impl="fused", M=M, N=N, dtype="float16", timing="kernel", median_us=1.0,
                             p10_us=1.0, p90_us=1.0, GBps=1.0)])
    monkeypatch.setattr(brec, "run", fake_run)
    monkeypatch.setattr(records, "environment", lambda: {"gpu": "NVIDIA H200", "date": "2026-12-01"})
    # an earlier record of the same GPU, day and tag stays as it was
    older = records.save_record({"date": "2026-12-01", "gpu": "NVIDIA H200", "rows": [], "run": "older"},
                                tag="fused", directory=tmp_path)
    saves = []
    real = records.save_record
    monkeypatch.setattr(records, "save_record", lambda *a, **kw: saves.append(1) or real(*a, **kw))
    rec = brec.full_record(out=tmp_path, previous=None, verbose=False)
    assert len(saves) >= 4  # after each of the three shapes, and at the end
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert files == [older.name, "nvidia-h200-2026-12-01.2-fused.json"], files
    assert json.loads(older.read_text())["run"] == "older"
    saved = json.loads((tmp_path / files[1]).read_text())
    assert saved["complete"] is True and len(saved["rows"]) == 3 and rec["_path"].endswith(files[1])
