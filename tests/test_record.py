"""The GPU producers' plumbing (gpu_viz.record.*), on a fake device, in CPU mode.

The kernels are emulated in numpy from the CPU models, so that every producer's Python -- buffer
poisoning, the record struct it binds, argument order, read-back, reshapes, dtypes, its checks --
runs here.  This proves nothing about silicon (the gpu-marked tests do); it catches plumbing bugs
before the GPU run.  It also checks that without a GPU (CuPy missing included) every producer
raises GPUUnavailable, never an ImportError.
"""
import importlib
import os
import pkgutil
import re
import sys
import types

import numpy as np
import pytest

from gpu_viz import backend, kernels, lessons, occupancy
from gpu_viz.model import divergence as dv_model
from gpu_viz.model import grid_stride as gs_model
from gpu_viz.model import reduction as red_model
from gpu_viz.model import rmsnorm_deck as deck_model
from gpu_viz.model import scheduling as sc_model
from gpu_viz.model import vector_add as va_model


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
    """A launcher for kernel ``name`` of ``file`` that computes its outputs and records with the models."""
    def launch(grid, block, args):
        g, b = grid[0], block[0]
        T = g * b
        rec = bound.get(file, {})
        if name == "vector_add":
            A, B, C, n = args
            tr = va_model.trace(np.asarray(A), np.asarray(B), b)
            r = np.asarray(rec["thread"]).reshape(T, len(va_model.VECTOR_ADD_FIELDS))
            for k, f in enumerate(va_model.VECTOR_ADD_FIELDS):
                r[:, k] = tr[f]
            ok = tr["index"] < n
            v = np.asarray(rec["vals"]).reshape(T, 3)
            for k, f in enumerate("abc"):
                v[ok, k] = tr[f][ok]
            C[:] = tr["c"][:n]
        elif name in dv_model.DIVERGENCE_KERNELS:
            x, y, n, iters = args
            tr = dv_model.trace(np.asarray(x)[:n], b, int(iters), name)
            y[:] = tr["y"]
            rec["branch"][:] = tr["branch"]
            rec["active"][:] = tr["active"]
        elif name == "scale_grid_stride":
            x, y, alpha, n = args
            tr = gs_model.trace(np.asarray(x)[:n], float(alpha), g, b)
            y[:n] = tr["y"]
            for f in ("block", "thread", "pass", "visits"):
                rec[f][:n] = tr[f]
        elif name == "scheduled_block":
            spin, fma, smid, t0, t1, c0, c1, sink = args
            tr = sc_model.trace(g, b, int(spin), int(fma))
            for dst, f in ((smid, "smid"), (t0, "t_start"), (t1, "t_end"), (c0, "clk_start"), (c1, "clk_end")):
                dst[:g] = tr[f] + (1000 if f in ("t_start", "t_end") else 0)
        elif name in deck_model.KERNELS.values():
            x, w, y, d, eps = args
            variant = next(k for k, v in deck_model.KERNELS.items() if v == name)
            tr = deck_model.trace(np.asarray(x), np.asarray(w), b, float(eps), variant, bool(rec["prefill"]))
            y[:] = tr["y"]
            for f in ("local", "warp_lanes", "smem", "w0_lanes", "scalars"):
                got = tr[f]
                dst = rec[f]
                keep = ~np.isnan(got)  # the kernel writes only what the model records
                dst[keep] = got[keep]
        elif name == red_model.SEED_KERNEL:
            p, corrected, levels, finish, out = args
            r = red_model.seed_reduce(np.asarray(p), bool(corrected))
            levels[:] = r["levels"]
            finish[:] = r["finish"]
            out[:] = r["out"]
        elif name == red_model.BLOCK_REDUCE_KERNEL:
            v, out = args
            v = np.asarray(v, np.float32)
            out[:b] = red_model.block_reduce_sum(v)[0]
            out[b:] = red_model.block_reduce_sum((2 * v).astype(np.float32))[0]
        else:
            raise AssertionError(f"no emulation for {name}")

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


VA_FIELDS = ("block", "thread", "index", "warp", "lane", "a", "b", "c", "A", "B", "smid", "hw_warpid")


def test_every_producer_through_its_lesson(fake_device):
    """LESSON.trace() on a 'GPU' goes through gpu_viz.record.<stem> and gives the model's Trace."""
    for stem, launch, names in (
            ("vector_add", dict(n=70, block=64), VA_FIELDS),
            ("divergence", dict(n=100, block=64, iters=5), ("x", "y", "branch", "active", "lane", "warp", "block")),
            ("grid_stride", dict(n=2500, grid=1, block=1024), ("x", "y", "block", "thread", "pass", "visits")),
            ("rmsnorm_deck", dict(d=700, block=96), ("x", "w", "local", "warp_lanes", "smem", "w0_lanes",
                                                      "scalars", "y"))):
        les = lessons.LESSONS[stem]
        gpu = les.trace(seed=7, **launch)
        assert gpu.source == "gpu" and gpu.params["seed"] == 7, stem
        args, kw = les.inputs(7, **launch)
        extra = les.source_lines(les.source(), **kw) if les.source_lines else {}
        cpu = les.module("model").trace(*args, **kw, **extra, seed=7)
        cpu.assert_equal(gpu, names=names)
        assert [s.line for s in cpu.steps] == [s.line for s in gpu.steps], stem


def test_producers_bind_every_record_field(fake_device):
    """What each traced producer binds, in the order its .cu file declares the struct."""
    lessons.VECTOR_ADD.trace(n=64, block=64)
    lessons.DIVERGENCE.trace(n=64)
    lessons.GRID_STRIDE.trace(n=100, grid=2, block=32)
    lessons.RMSNORM_DECK.trace(d=64, block=64, variant="deck", prefill=False)
    assert {f: list(v) for f, v in fake_device.items()} == {
        "vector_add.cu": ["thread", "vals"], "divergence.cu": ["branch", "active"],
        "grid_stride.cu": ["block", "thread", "pass", "visits"],
        "rmsnorm_deck.cu": ["local", "warp_lanes", "smem", "w0_lanes", "scalars", "prefill"]}
    assert fake_device["rmsnorm_deck.cu"]["prefill"] == 0
    for file, fields in fake_device.items():  # the struct in the .cu file, field by field
        src = kernels.read_source(file)
        decl = src[src.index("struct "):src.index("__device__", src.index("struct "))]
        for f in fields:
            assert f in decl, (file, f, decl)


def test_scheduling_producer(fake_device):
    from gpu_viz.check import assert_equal
    from gpu_viz.frames import scheduling as frames
    from gpu_viz.record import scheduling as record

    tr = record.trace(300, 256, 5000)
    assert tr["t_start"].min() == 0 and tr.source == "gpu"
    s = frames.summary(tr)
    assert s["blocks"] == 300 and s["resident_blocks_per_sm"] == 6 and s["source"] == "gpu"
    assert_equal("smid", tr["smid"], np.arange(300, dtype=np.uint32) % 58)


def test_reduction_producers(fake_device):
    from gpu_viz.record import reduction as record

    ones = np.ones(96, np.float32)
    got = record.seed_reduce(ones)
    want = red_model.seed_reduce(ones)
    for k in ("levels", "finish", "out"):
        np.testing.assert_array_equal(got[k], want[k])
    out = record.block_reduce(np.arange(1, 8, dtype=np.float32))
    assert out.shape == (2, 7) and (out[0] == 28).all() and (out[1] == 56).all()


def _gpu_entry_points():
    """Every public function of gpu_viz.record.*, gpu_viz.measure.* and gpu_viz.claims.divergence with its minimal arguments."""
    x = np.ones(64, np.float32)
    return [("record.vector_add", "trace", (x, x)), ("record.divergence", "trace", (x,)),
            ("record.grid_stride", "trace", (x,)), ("record.grid_stride", "scale", (x,)),
            ("record.scheduling", "trace", ()), ("record.rmsnorm_deck", "trace", (x,)),
            ("record.reduction", "seed_reduce", (x,)), ("record.reduction", "block_reduce", (x,)),
            ("claims.divergence", "cost", ()), ("measure.memory", "pointer_chase", (4096,)),
            ("measure.memory", "read_bandwidth", (4096,)), ("measure.memory", "hardware_record", ()),
            ("measure.timing", "launch_floor", ()), ("measure.timing", "copy_kernel_floor", (1024, 0))]


@pytest.mark.parametrize("module,fn,args", _gpu_entry_points(), ids=lambda v: v if isinstance(v, str) else "")
def test_without_cupy_every_gpu_path_says_gpu_unavailable(monkeypatch, module, fn, args):
    """CPU mode with CuPy missing: GPUUnavailable naming what needed the GPU, not ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    monkeypatch.setattr(backend, "_cached", None)
    monkeypatch.setattr(backend, "_probe", lambda: backend.Backend(mode="cpu", reason="CuPy is not installed",
                                                                   **_cause("cupy-missing")))
    f = getattr(importlib.import_module(f"gpu_viz.{module}"), fn)
    with pytest.raises(backend.GPUUnavailable):
        f(*args)


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
