"""gpu_viz.bench: timing statistics, rotation, records; GPU timing itself on a GPU."""
import json

import numpy as np
import pytest

from gpu_viz import backend, bench


def test_timing_statistics():
    t = bench.Timing.from_samples([10, 11, 12, 13, 100], "kernel")
    assert (t.median_us, t.min_us, t.n, t.timing) == (12, 10, 5, "kernel")
    assert t.p10_us < t.median_us < t.p90_us
    assert t.GBps(12e3) == pytest.approx(1.0)  # 12 kB in 12 µs = 1 GB/s
    with pytest.raises(ValueError, match="no samples"):
        bench.Timing.from_samples([], "call")


def test_rotation_exceeds_l2():
    l2 = 50 * 2**20
    k = bench.rotation_count(8 * 2**20, l2)
    assert k * 8 * 2**20 >= 3 * l2
    assert bench.rotation_count(10 * l2, l2) == 1
    assert bench.rotation_count(1, l2) == 64  # capped
    with pytest.raises(ValueError, match="bytes_per_call must be positive"):
        bench.rotation_count(0, l2)


def test_slug_and_record_roundtrip(tmp_path):
    assert bench.gpu_slug("NVIDIA H200") == "nvidia-h200"
    assert bench.gpu_slug("Tesla T4 ") == "tesla-t4"
    rec = {"date": "2026-11-29", "gpu": "NVIDIA H200", "rows": [{"op": "rmsnorm", "median_us": 1.5}]}
    path = bench.save_record(rec, tag="x", directory=tmp_path)
    assert path.name == "nvidia-h200-2026-11-29-x.json"
    assert json.loads(path.read_text())["rows"][0]["median_us"] == 1.5
    (tmp_path / "broken.json").write_text("{")
    older = dict(rec, date="2026-01-01")
    bench.save_record(older, directory=tmp_path)
    got = bench.load_records(directory=tmp_path)
    assert [r["date"] for r in got] == ["2026-11-29", "2026-01-01"]


def test_committed_records_have_the_design_fields():
    for rec in bench.load_records():
        for key in ("date", "gpu", "sm", "driver", "cuda", "torch", "cupy"):
            assert key in rec, f"{rec['_file']} lacks {key!r}"
        for row in rec.get("rows", []):
            # every timed row: what, which implementation, how timed, the spread (DESIGN.md section 5);
            # the RMSNorm ops' rows also carry their (M, N) shape
            assert "op" in row, f"{rec['_file']}: a row lacks 'op': {row}"
            if "median_us" not in row:  # a summary row (e.g. scheduling waves), not a timing
                continue
            keys = ["impl", "timing", "p10_us", "p90_us"]
            if row["op"] in ("rmsnorm", "rmsnorm_gate"):
                keys += ["M", "N", "dtype", "GBps"]
            for key in keys:
                assert key in row, f"{rec['_file']}: a row lacks {key!r}: {row}"
            assert row["timing"] in ("kernel", "call"), f"{rec['_file']}: timing {row['timing']!r}"
            assert row["p10_us"] <= row["median_us"] <= row["p90_us"], f"{rec['_file']}: spread out of order: {row}"


def test_timing_in_cpu_mode_says_why(monkeypatch):
    cpu = backend.Backend(mode="cpu", reason="no driver", cause=backend.CAUSE_NO_DRIVER)
    monkeypatch.setattr(backend, "_cached", cpu)
    with pytest.raises(backend.GPUUnavailable, match="timing needs a CUDA GPU.*no driver"):
        bench.time_calls(lambda i: None)
    with pytest.raises(backend.GPUUnavailable):
        bench.environment()


@pytest.mark.gpu
def test_cupy_timings_are_sane():
    import cupy as cp

    x = cp.random.rand(1 << 24, dtype=cp.float32)
    y = cp.empty_like(x)
    call = bench.time_calls(lambda i: cp.multiply(x, 2, out=y), reps=50, framework="cupy")
    kern = bench.time_graph(lambda i: cp.multiply(x, 2, out=y), reps=20, framework="cupy")
    assert 0 < kern.median_us and 0 < call.median_us
    assert kern.p10_us <= kern.median_us <= kern.p90_us
    np.testing.assert_allclose(cp.asnumpy(y), cp.asnumpy(x) * 2)
    floor = bench.launch_floor()
    assert 0 < floor["kernel"].median_us < 20 and floor["call"].median_us > 0


@pytest.mark.gpu
def test_copy_kernel_floor_is_above_the_empty_kernel():
    from gpu_viz import device

    empty = bench.launch_floor()["kernel"].median_us
    t = bench.copy_kernel_floor(1 << 20, device.current().l2_bytes, reps=50)  # copies checked inside
    assert t.timing == bench.KERNEL and t.p10_us <= t.median_us <= t.p90_us
    assert empty < t.median_us < 100  # 1 MiB each way from DRAM: more than an empty launch


@pytest.mark.gpu
def test_torch_copy_bandwidth_and_environment():
    torch = pytest.importorskip("torch")
    bw = bench.copy_bandwidth(nbytes=1 << 28, reps=10)
    assert 50 < bw["GBps"] < 20000
    env = bench.environment()
    assert env["gpu"] == torch.cuda.get_device_name() and env["sm"].startswith("sm_")
