"""gpu_viz.measure.timing: timing statistics, rotation; GPU timing itself on a GPU."""
import numpy as np
import pytest

from gpu_viz import backend
from gpu_viz.measure import records
from gpu_viz.measure import timing as bench


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


def test_timing_in_cpu_mode_says_why(monkeypatch):
    cpu = backend.Backend(mode="cpu", reason="no driver", cause=backend.CAUSE_NO_DRIVER)
    monkeypatch.setattr(backend, "_cached", cpu)
    with pytest.raises(backend.GPUUnavailable, match="timing needs a CUDA GPU.*no driver"):
        bench.time_calls(lambda i: None)
    with pytest.raises(backend.GPUUnavailable):
        records.environment()


class _DriftingHost:
    """A stand-in framework whose clock advances by a call's cost times the host's speed, and the
    host slows 1.6x halfway through (the two bands seen on the H200 machines' hosts)."""

    def __init__(self, switch_us):
        self.now, self.switch_us = 0.0, switch_us

    def event(self):
        return {}

    def record(self, ev):
        ev["t"] = self.now

    def sync(self):
        pass

    def elapsed_ms(self, a, b):
        return (b["t"] - a["t"]) / 1e3

    def cost(self, us):
        return lambda i: setattr(self, "now", self.now + us * (1.0 if self.now < self.switch_us else 1.6))


def test_interleaved_calls_see_the_same_host(monkeypatch):
    """One provider after another can land in different host states (a 1.2x pair measured as
    1.9x); interleaved rounds give both the same mix, so their ratio is the true one."""
    host = _DriftingHost(switch_us=800)  # a: 80 x 10 µs fast, then b slow
    monkeypatch.setattr(bench, "_framework", lambda name: host)
    seq = {name: bench.time_calls(host.cost(us), reps=80, warmup=0) for name, us in (("a", 10.0), ("b", 12.0))}
    assert seq["b"].median_us / seq["a"].median_us > 1.8
    host.now = 0.0
    host.switch_us = 4 * (12 * 10 + 12 * 12)  # halfway: four rounds of 2 + 10 calls each
    both = bench.time_calls_interleaved({"a": host.cost(10.0), "b": host.cost(12.0)}, reps=80, rounds=8, warmup=0)
    assert both["a"].n == both["b"].n == 80 and both["a"].timing == "call"
    assert both["b"].median_us / both["a"].median_us == pytest.approx(1.2, rel=0.02)
    for reps, rounds in ((5, 10), (101, 10), (1, 3)):  # exactly reps samples, whatever the split
        t = bench.time_calls_interleaved({"a": host.cost(1.0), "b": host.cost(2.0)}, reps=reps, rounds=rounds, warmup=0)
        assert t["a"].n == t["b"].n == reps
    with pytest.raises(TypeError, match="reps must be an int"):
        bench.time_calls_interleaved({"a": host.cost(1.0)}, reps=2.5)
    with pytest.raises(ValueError, match="at least one"):
        bench.time_calls_interleaved({})
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        bench.time_calls_interleaved({"a": host.cost(1.0)}, rounds=0)


class _QueuedGPU:
    """A stand-in framework with a host clock and a GPU queue: a call costs its host time, then
    queues its kernel behind the GPU's earlier work; an event completes when the host has recorded
    it and the GPU has finished everything queued before it; sync waits for the GPU."""

    def __init__(self):
        self.host = self.gpu = 0.0

    def event(self):
        return {}

    def record(self, ev):
        ev["t"] = self.gpu = max(self.host, self.gpu)

    def sync(self):
        self.host = max(self.host, self.gpu)

    def elapsed_ms(self, a, b):
        return (b["t"] - a["t"]) / 1e3

    def cost(self, host_us, kernel_us):
        def call(i):
            self.host += host_us
            self.gpu = max(self.host, self.gpu) + kernel_us
        return call


def test_interleaved_windows_start_on_an_idle_gpu(monkeypatch):
    """Bug class: a callable timed right after one that leaves GPU work queued (host 10 µs, kernel
    30 µs a call) had its start events wait behind that work, so its samples measured its own
    kernel (8 µs) instead of its cost per call (its host time, 14 µs).  Each window starts on an
    idle GPU; a GPU-bound callable still measures its kernel's pace."""
    gpu = _QueuedGPU()
    monkeypatch.setattr(bench, "_framework", lambda name: gpu)
    t = bench.time_calls_interleaved({"heavy": gpu.cost(10.0, 30.0), "light": gpu.cost(14.0, 8.0)},
                                     reps=100, rounds=10, warmup=5)
    assert t["light"].median_us == pytest.approx(14.0)
    assert t["light"].p10_us == pytest.approx(14.0)
    assert t["heavy"].median_us == pytest.approx(30.0, rel=0.05)


@pytest.mark.gpu
@pytest.mark.timing
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
@pytest.mark.timing
def test_copy_kernel_floor_is_above_the_empty_kernel():
    from gpu_viz import device

    empty = bench.launch_floor()["kernel"].median_us
    t = bench.copy_kernel_floor(1 << 20, device.current().l2_bytes, reps=50)  # copies checked inside
    assert t.timing == bench.KERNEL and t.p10_us <= t.median_us <= t.p90_us
    assert empty < t.median_us < 100  # 1 MiB each way from DRAM: more than an empty launch


@pytest.mark.gpu
@pytest.mark.timing
def test_torch_copy_bandwidth_and_environment():
    torch = pytest.importorskip("torch")
    bw = bench.copy_bandwidth(nbytes=1 << 28, reps=10)
    assert 50 < bw["GBps"] < 20000
    env = records.environment()
    assert env["gpu"] == torch.cuda.get_device_name() and env["sm"].startswith("sm_")


@pytest.mark.gpu
def test_time_graph_refuses_an_empty_capture():
    """Work launched through the other framework's stream is not captured: an error, not ~0 µs."""
    import cupy as cp

    torch = pytest.importorskip("torch")
    x = cp.random.rand(1 << 20, dtype=cp.float32)
    y = cp.empty_like(x)
    with pytest.raises(bench.EmptyGraphError, match="framework='cupy'"):
        bench.time_graph(lambda i: cp.multiply(x, 2, out=y), reps=3, framework="torch")
    with pytest.raises(bench.EmptyGraphError, match="framework='torch'"):
        bench.time_graph(lambda i: None, reps=3, framework="cupy")
    t = torch.rand(1 << 20, device="cuda")
    assert bench.time_graph(lambda i: t.mul_(1.0), reps=3, framework="torch").median_us > 0
