"""The GPU producers' plumbing (gpu_viz.record.*) in CPU mode.

The traced lesson kernels run for real in the emulator (``gpu_viz.emulator.emulated()``: the same
producer, the same traced kernel, its PTX executed on the CPU), so every producer's Python -- buffer
poisoning, the record struct it binds, argument order, read-back, reshapes, dtypes, its checks --
runs here against the kernel itself; tests/test_emulated_lessons.py holds the results to the CPU
models bit for bit.  The scheduling producer needs the CUDA occupancy API and the GPU's timers, so
it runs on a fake device computed from its CPU model.  Without a GPU (CuPy missing included) every
producer raises GPUUnavailable, never an ImportError.
"""
import importlib
import os
import pkgutil
import re
import sys
import types

import numpy as np
import pytest

from gpu_viz import backend, emulator, kernels, lessons, occupancy
from gpu_viz.model import reduction as red_model
from gpu_viz.model import scheduling as sc_model


class _DevArray(np.ndarray):
    def get(self):
        return np.array(self)


def _fake_cupy():
    cp = types.ModuleType("cupy")
    dev = lambda a: np.array(a).view(_DevArray)  # noqa: E731
    cp.asarray = dev
    cp.asnumpy = lambda a: np.array(a)
    cp.full = lambda n, v, dtype=np.float32: dev(np.full(n, v, dtype))
    cp.zeros = lambda n, dtype=np.float32: dev(np.zeros(n, dtype))
    cp.full_like = lambda a, v: dev(np.full_like(np.asarray(a), v))
    cp.ndarray = _DevArray
    for name in ("float32", "int32", "uint32", "int64", "uint64"):
        setattr(cp, name, getattr(np, name))
    stream = types.SimpleNamespace(synchronize=lambda: None)
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: stream)
    return cp


def _emulate(file, name, bound):
    """The scheduling kernel on the fake device: its outputs from the CPU model."""
    def launch(grid, block, args):
        g, b = grid[0], block[0]
        if name != "scheduled_block":
            raise AssertionError(f"the fake device runs only scheduled_block (the others run in the emulator), got {name}")
        spin, fma, smid, t0, t1, c0, c1, sink = args
        tr = sc_model.trace(g, b, int(spin), int(fma))
        for dst, f in ((smid, "smid"), (t0, "t_start"), (t1, "t_end"), (c0, "clk_start"), (c1, "clk_end")):
            dst[:g] = tr[f] + (1000 if f in ("t_start", "t_end") else 0)

    launch.num_regs, launch.shared_size_bytes = 10, 0
    return launch


@pytest.fixture
def fake_device(monkeypatch):
    bound = {}
    cp = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(backend, "require_gpu", lambda what: None)
    monkeypatch.setattr(backend, "require_cupy", lambda what: cp)
    monkeypatch.setattr(backend, "has_gpu", lambda: True)
    monkeypatch.setattr(backend, "live_label", lambda: "fake device (plumbing test)")
    monkeypatch.setattr(kernels, "load", lambda file, options=(), name_expressions=(), traced=False: file)
    monkeypatch.setattr(kernels, "bind_record", lambda mod, fields, symbol="rec": bound.__setitem__(mod, dict(fields)))
    monkeypatch.setattr(kernels, "function",
                        lambda file, name, options=(), name_expressions=(), traced=False, device=None:
                        _emulate(file, name, bound))
    monkeypatch.setattr(occupancy, "live_blocks_per_sm", lambda k, threads, dyn=0: 1536 // (32 * -(-threads // 32)))
    return bound


needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed")


def record_struct_fields(file):
    """The fields of the struct a kernel file's traced build records into (``__device__ T rec;``), in
    declaration order: what its producer must bind, in that order (the pointers are written as
    consecutive words)."""
    src = kernels.read_source(file)
    m = re.search(r"__device__\s+(\w+)\s+rec\s*;", src)
    assert m, f"{file}: no __device__ record 'rec'"
    body = re.search(rf"struct\s+{m.group(1)}\s*\{{(.*?)\}};", src, re.S)
    assert body, f"{file}: struct {m.group(1)} not found"
    return [name for decl in body.group(1).split(";") if decl.strip()
            for name in re.findall(r"(\w+)\s*(?:,|$)", decl.strip())]


def test_record_struct_fields_reads_declarations():
    assert record_struct_fields("rmsnorm_deck.cu") == ["local", "warp_lanes", "smem", "w0_lanes", "scalars", "prefill"]
    assert record_struct_fields("vector_add.cu") == ["thread", "vals"]


_TRACED = [s for s, les in lessons.LESSONS.items() if les.gpu and kernels.has_traced_build(les.kernel_file)]


@needs_emulator
@pytest.mark.parametrize("stem", _TRACED)
def test_producers_bind_every_record_field(monkeypatch, stem):
    """Every lesson whose kernel has a traced build: its GPU producer (run in the emulator, at the
    lesson's small launch) binds exactly the fields of the struct its .cu file declares, in order."""
    from gpu_viz.emulator import runtime

    les = lessons.LESSONS[stem]
    bound = {}
    real = runtime.bind_record
    monkeypatch.setattr(runtime, "bind_record", lambda session, prog, fields, symbol="rec": (
        bound.__setitem__(prog.source_name, dict(fields)), real(session, prog, fields, symbol))[1])
    with emulator.emulated():
        les.trace(seed=1, producer="emulator", **les.cases.small)
    assert list(bound) == [les.kernel_file], bound
    assert list(bound[les.kernel_file]) == record_struct_fields(les.kernel_file)


def test_every_traced_build_is_a_lessons():
    """A kernel file with a traced build belongs to a lesson with a GPU producer (whose record it
    binds, above); the test of the files' entry points is tests/test_kernels.py."""
    traced = {n for n in kernels.kernel_files() if kernels.has_traced_build(n)}
    assert traced == {lessons.LESSONS[s].kernel_file for s in _TRACED}
    assert len(traced) >= 7


@needs_emulator
def test_the_deck_without_prefill_binds_prefill_zero(monkeypatch):
    from gpu_viz.emulator import runtime

    bound = {}
    real = runtime.bind_record
    monkeypatch.setattr(runtime, "bind_record", lambda session, prog, fields, symbol="rec": (
        bound.__setitem__(prog.source_name, dict(fields)), real(session, prog, fields, symbol))[1])
    with emulator.emulated():
        lessons.RMSNORM_DECK.trace(d=64, block=64, variant="deck", prefill=False, producer="emulator")
    assert bound["rmsnorm_deck.cu"]["prefill"] == 0


def test_scheduling_producer(fake_device):
    from gpu_viz.check import assert_equal
    from gpu_viz.frames import scheduling as frames
    from gpu_viz.record import scheduling as record

    tr = record.trace(300, 256, 5000)
    assert tr["t_start"].min() == 0 and tr.source == "gpu"
    s = frames.summary(tr)
    assert s["blocks"] == 300 and s["resident_blocks_per_sm"] == 6 and s["source"] == "gpu"
    assert_equal("smid", tr["smid"], np.arange(300, dtype=np.uint32) % 58)


@needs_emulator
def test_reduction_producers():
    from gpu_viz.record import reduction as record

    ones = np.ones(96, np.float32)
    with emulator.emulated():
        got = record.seed_reduce(ones)
        out = record.block_reduce(np.arange(1, 8, dtype=np.float32))
    want = red_model.seed_reduce(ones)
    for k in ("levels", "finish", "out"):
        np.testing.assert_array_equal(got[k], want[k])
    assert out.shape == (2, 7) and (out[0] == 28).all() and (out[1] == 56).all()


def _gpu_entry_points():
    """The GPU entry points no lesson's trace reaches (the lessons' producers are found by the
    registry, below): the plain kernels' launchers, and gpu_viz.measure.* and claims.divergence,
    each with its minimal arguments."""
    x = np.ones(64, np.float32)
    return [("record.grid_stride", "scale", (x,)), ("record.reduction", "seed_reduce", (x,)),
            ("record.reduction", "block_reduce", (x,)),
            ("claims.divergence", "cost", ()), ("measure.memory", "pointer_chase", (4096,)),
            ("measure.memory", "read_bandwidth", (4096,)), ("measure.memory", "hardware_record", ()),
            ("measure.timing", "launch_floor", ()), ("measure.timing", "copy_kernel_floor", (1024, 0))]


def _without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    monkeypatch.setattr(backend, "_cached", None)
    monkeypatch.setattr(backend, "_probe", lambda: backend.Backend(mode="cpu", reason="CuPy is not installed",
                                                                   **_cause("cupy-missing")))


@pytest.mark.parametrize("module,fn,args", _gpu_entry_points(), ids=lambda v: v if isinstance(v, str) else "")
def test_without_cupy_every_gpu_path_says_gpu_unavailable(monkeypatch, module, fn, args):
    """CPU mode with CuPy missing: GPUUnavailable naming what needed the GPU, not ModuleNotFoundError."""
    _without_cupy(monkeypatch)
    f = getattr(importlib.import_module(f"gpu_viz.{module}"), fn)
    with pytest.raises(backend.GPUUnavailable):
        f(*args)


@pytest.mark.parametrize("stem", [s for s, les in lessons.LESSONS.items() if les.gpu])
def test_without_cupy_every_lessons_gpu_producer_says_gpu_unavailable(monkeypatch, stem):
    """The same for every lesson's GPU producer (``gpu_viz.record.<stem>.trace``), called as
    Lesson.trace calls it, at the lesson's small launch."""
    _without_cupy(monkeypatch)
    les = lessons.LESSONS[stem]
    args, kw = les.inputs(1, **les.cases.small)
    kw.pop("info", None)              # the GPU the CPU model models: not the GPU producer's
    extra = les.source_lines(les.source(), **kw) if les.source_lines else {}
    with pytest.raises(backend.GPUUnavailable):
        les.module("record").trace(*args, **kw, **extra, seed=1)


def _cause(code):
    import dataclasses

    return {"cause": code} if "cause" in {f.name for f in dataclasses.fields(backend.Backend)} else {}


def test_only_the_backend_imports_cupy():
    """The one way to CuPy is backend.require_cupy (after the GPU check): no module of the package
    imports it itself, so CPU mode can never surface as an ImportError."""
    import gpu_viz

    offenders = []
    for m in pkgutil.walk_packages(gpu_viz.__path__, "gpu_viz."):
        if m.name == "gpu_viz.backend":
            continue
        src = importlib.util.find_spec(m.name).loader.get_source(m.name) or ""
        for i, line in enumerate(src.splitlines(), 1):
            if re.match(r"(import cupy\b|from cupy[. ])", line.strip()):
                offenders.append(f"{m.name}:{i}: {line.strip()}")
    assert not offenders, offenders


def test_the_command_line_and_the_lessons_do_not_import_torch():
    """torch costs a second or more to import (a CUDA build more): `gpu-viz info/doctor/slides`,
    the lessons, the checks and the record readers never pay it; only the torch paths (the fused
    ops, the eager baselines, the benchmark providers when they run) import it."""
    import subprocess
    import sys

    code = ("import sys, gpu_viz.cli, gpu_viz.doctor, gpu_viz.slides, gpu_viz.lessons, gpu_viz.check, "
            "gpu_viz.arrays, gpu_viz.measure.records, gpu_viz.record_cli, gpu_viz.rmsnorm.bench, "
            "gpu_viz.rmsnorm.report, gpu_viz.rmsnorm.reference, gpu_viz.rmsnorm.tolerances; "
            "from gpu_viz.lessons import VECTOR_ADD; VECTOR_ADD.trace(seed=1); "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "GPU_VIZ_FORCE_CPU": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout[:500]
