"""The fused ops' C++ launcher (kernels/rmsnorm_launcher.cpp, gpu_viz/rmsnorm/launcher.py).

CPU: the launcher is compiled here against the installed torch and loaded with a stub driver
(tests/data/stub_cuda.c) that records every launch and computes the float32 result for CPU
tensors, so these tests check the real C++ code -- the plan cache's key, the kernel arguments,
the outputs, the autograd node and its backward, the errors -- without a GPU.  GPU (marked
``gpu``): the launcher against the Python one, bit for bit, on the real kernels.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from gpu_viz import ops  # noqa: E402
from gpu_viz.rmsnorm.fused import checks as fchecks, config as fconfig, autograd as fgrad, launch as flaunch
from gpu_viz.rmsnorm import launcher  # noqa: E402
from test_rmsnorm_invariance import same_on_a_side_stream_and_in_a_graph  # noqa: E402

gpu = pytest.mark.gpu
STUB_SOURCE = Path(__file__).parent / "data" / "stub_cuda.c"
RMSNORM, GATE, ADD = 0, 1, 2
FP32, LLAMA = 0, 1


class StubRecord(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_int), ("fn", ctypes.c_uint64), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint), ("stream", ctypes.c_uint64),
                ("ptr", ctypes.c_uint64 * 5), ("M", ctypes.c_int64), ("N", ctypes.c_int32),
                ("sx", ctypes.c_int64), ("sg", ctypes.c_int64), ("eps", ctypes.c_float),
                ("offset", ctypes.c_float), ("flags", ctypes.c_int32), ("ctx_sets", ctypes.c_int)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The launcher compiled into a fresh cache, and the stub driver next to it."""
    if launcher.compiler() is None:
        pytest.skip("no C++ compiler on this machine")
    root = tmp_path_factory.mktemp("launcher cache")  # a space in every path the build and load take
    mp = pytest.MonkeyPatch()
    mp.setenv(launcher.CACHE_ENV, str(root))
    try:
        so = launcher.build()
    finally:
        mp.undo()
    stub = root / "libstubcuda.so"
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", str(STUB_SOURCE), "-o", str(stub), "-lm"], check=True)
    return so, stub


@pytest.fixture
def ext(built):
    so, stub = built
    mod = launcher.load(so, fgrad.ext_backward, driver=str(stub), allow_cpu=True, max_plans=8)
    lib = ctypes.CDLL(str(stub))  # the same handle the launcher opened: its globals
    rec = StubRecord.in_dll(lib, "stub_record")
    ctypes.memset(ctypes.addressof(rec), 0, ctypes.sizeof(rec))
    ctypes.c_int.in_dll(lib, "stub_rc").value = 0
    ctypes.c_int.in_dll(lib, "stub_rc_once").value = 0
    mod.stub = lib
    mod.rec = rec
    yield mod
    mod.clear()


def fields(fn=1, grid=7, block=256, M=4, N=64, sx=64, sg=0, eps=1e-6, offset=0.0, flags=0, add=False, owner=None):
    return (fn, grid, block, M, N, sx, sg, eps, offset, flags, add, owner)


def reference(x, w, eps, gate=None, offset=0.0):
    xd = x.double()
    r = torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    s = torch.nn.functional.silu(gate.double()) if gate is not None else 1.0
    return (xd * s * (w.double() + offset) * r).float()


def test_a_layout_without_a_plan_is_a_miss_and_an_inserted_plan_launches(ext, rng):
    x = torch.from_numpy(rng.standard_normal((4, 64)).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal(64).astype(np.float32))
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False) == 0  # MISS
    assert ext.rec.calls == 0
    assert ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields(grid=7, block=256, flags=3))
    y = ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False)
    r = ext.rec
    assert r.calls == 1 and r.fn == 1 and list(r.grid) == [7, 1, 1] and list(r.block) == [256, 1, 1]
    assert r.smem == 0 and r.stream == 0  # CPU tensors: no stream
    assert list(r.ptr) == [y.data_ptr(), 0, x.data_ptr(), 0, w.data_ptr()]
    assert (r.M, r.N, r.sx, r.sg, r.flags) == (4, 64, 64, 0, 3)
    assert r.eps == np.float32(1e-6) and r.offset == 0.0
    assert y.shape == x.shape and y.dtype == x.dtype and y.is_contiguous()
    torch.testing.assert_close(y, reference(x, w, 1e-6), atol=1e-6, rtol=1e-5)
    y2 = ext.call(RMSNORM, x.clone(), None, w, 1e-6, 0.0, FP32, False)  # same layout, other data: a hit
    assert ext.rec.calls == 2 and y2.data_ptr() != y.data_ptr()


def test_the_key_follows_every_part_of_the_layout(ext, rng):
    """Each change that flaunch.fast's key holds is a miss: stride, alignment, dtype, shape, eps,
    weight_offset, cast, op, a Parameter instead of a Tensor; a tensor subclass is never keyed."""
    buf = torch.from_numpy(rng.standard_normal((4, 72)).astype(np.float32))
    x = buf[:, :64].contiguous()
    w = torch.ones(64)
    assert ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    hit = ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False)
    assert isinstance(hit, torch.Tensor)
    flat = torch.zeros(4 * 64 + 1)
    misaligned = flat[1:].view(4, 64)  # data_ptr % 16 == 4
    variants = {
        "row stride": (RMSNORM, buf[:, :64], None, w, 1e-6, 0.0, FP32),
        "alignment": (RMSNORM, misaligned, None, w, 1e-6, 0.0, FP32),
        "dtype": (RMSNORM, x.half(), None, w, 1e-6, 0.0, FP32),
        "shape": (RMSNORM, x[:3], None, w, 1e-6, 0.0, FP32),
        "leading dims": (RMSNORM, x.view(2, 2, 64), None, w, 1e-6, 0.0, FP32),
        "eps": (RMSNORM, x, None, w, 1e-5, 0.0, FP32),
        "weight_offset": (RMSNORM, x, None, w, 1e-6, 1.0, FP32),
        "cast": (RMSNORM, x, None, w, 1e-6, 0.0, LLAMA),
        "op": (GATE, x, x, w, 1e-6, 0.0, FP32),
        "weight type": (RMSNORM, x, None, torch.nn.Parameter(w.clone()), 1e-6, 0.0, FP32),
        "weight dtype": (RMSNORM, x, None, w.half(), 1e-6, 0.0, FP32),
    }
    for what, args in variants.items():
        assert ext.call(*args, False) == 0, what

    class Sub(torch.Tensor):
        pass

    sub = x.as_subclass(Sub)
    assert not ext.insert(RMSNORM, sub, None, w, 1e-6, 0.0, FP32, fields())
    assert ext.call(RMSNORM, sub, None, w, 1e-6, 0.0, FP32, False) == 0
    for bad in ((RMSNORM, x, x, w), (GATE, x, None, w), (7, x, None, w)):  # x2 must match the op
        assert ext.call(*bad, 1e-6, 0.0, FP32, False) == 0
    assert ext.call(RMSNORM, x.double(), None, w, 1e-6, 0.0, FP32, False) == 0  # no kernel for it
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, -1, False) == 0  # unknown cast: Python raises


def test_wrong_arguments_raise_python_errors(ext):
    x, w = torch.ones(4, 64), torch.ones(64)
    with pytest.raises(TypeError, match=r"call\(\) takes 8 arguments \(3 given\)"):
        ext.call(RMSNORM, x, None)
    with pytest.raises(TypeError, match="insert"):
        ext.insert(RMSNORM, x, None, w)
    with pytest.raises(TypeError):  # eps must be a number
        ext.call(RMSNORM, x, None, w, "1e-6", 0.0, FP32, False)
    with pytest.raises(TypeError):  # fields must be the plan's tuple
        ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, (1, 2))


def test_no_plan_entries_and_the_cache_limit(ext):
    x, w = torch.ones(4, 64), torch.ones(64)
    assert ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, None)
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False) == 1  # NO_PLAN: Python's path
    assert ext.size() == 1
    for i in range(7):
        ext.insert(RMSNORM, torch.ones(i + 10, 64), None, w, 1e-6, 0.0, FP32, fields(M=i + 10))
    assert ext.size() == 8
    ext.insert(RMSNORM, torch.ones(9, 64), None, w, 1e-6, 0.0, FP32, fields(M=9))
    assert ext.size() == 1  # max_plans (8) reached: started again empty


def test_gate_and_add_pass_both_row_strides_and_both_outputs(ext, rng):
    buf = torch.from_numpy(rng.standard_normal((3, 80)).astype(np.float32))
    x, g = buf[:, :64], torch.from_numpy(rng.standard_normal((3, 64)).astype(np.float32))
    w = torch.from_numpy(rng.standard_normal(64).astype(np.float32))
    ext.insert(GATE, x, g, w, 1e-5, 0.5, FP32, fields(fn=2, M=3, sx=80, sg=64, eps=1e-5, offset=0.5))
    y = ext.call(GATE, x, g, w, 1e-5, 0.5, FP32, False)
    assert (ext.rec.sx, ext.rec.sg, ext.rec.offset) == (80, 64, 0.5)
    assert list(ext.rec.ptr) == [y.data_ptr(), 0, x.data_ptr(), g.data_ptr(), w.data_ptr()]
    torch.testing.assert_close(y, reference(x, w, 1e-5, g, 0.5), atol=1e-6, rtol=1e-5)
    r = g.clone()
    ext.insert(ADD, x, r, w, 1e-5, 0.0, FP32, fields(fn=3, M=3, sx=80, sg=64, eps=1e-5, add=True))
    y, h = ext.call(ADD, x, r, w, 1e-5, 0.0, FP32, False)
    assert list(ext.rec.ptr) == [y.data_ptr(), h.data_ptr(), x.data_ptr(), r.data_ptr(), w.data_ptr()]
    torch.testing.assert_close(h, x + r, atol=0, rtol=0)
    torch.testing.assert_close(y, reference(h, w, 1e-5), atol=1e-6, rtol=1e-5)


def test_a_plan_keeps_its_owner_alive_until_it_is_dropped(ext):
    """The C++ plan holds the object that owns its kernel (CuPy's RawKernel: its module must stay
    loaded while the plan can launch it) and lets it go when the cache drops the plan."""
    import gc
    import weakref

    class Owner:
        pass

    o = Owner()
    ref = weakref.ref(o)
    x, w = torch.ones(4, 64), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields(owner=o))
    del o
    gc.collect()
    assert ref() is not None
    ext.clear()
    gc.collect()
    assert ref() is None


def test_an_empty_batch_allocates_and_does_not_launch(ext):
    x, w = torch.ones(0, 64), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields(fn=0, grid=0, M=0))
    y = ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False)
    assert y.shape == (0, 64) and ext.rec.calls == 0


def test_a_failed_launch_raises_with_the_driver_s_name_grid_and_block(ext):
    x, w = torch.ones(4, 64), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields(grid=5, block=128))
    ctypes.c_int.in_dll(ext.stub, "stub_rc").value = 700
    with pytest.raises(RuntimeError, match=r"CUDA_ERROR_ILLEGAL_ADDRESS \(700\); grid 5, block 128"):
        ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False)
    with pytest.raises(RuntimeError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):  # the autograd path too
        ext.call(RMSNORM, x.clone().requires_grad_(), None, w, 1e-6, 0.0, FP32, True)


def test_a_thread_without_a_context_gets_the_primary_one_then_python_s_path(ext):
    x, w = torch.ones(4, 64), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    ctypes.c_int.in_dll(ext.stub, "stub_rc_once").value = 201
    y = ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False)
    assert isinstance(y, torch.Tensor) and ext.rec.ctx_sets == 1 and ext.rec.calls == 2  # retried once
    ctypes.c_int.in_dll(ext.stub, "stub_rc").value = 201
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False) == 2  # NO_CONTEXT: Python launches


def test_a_thread_without_a_context_takes_python_s_path_with_grad_too(ext):
    """NO_CONTEXT is the answer whether or not the call records an autograd node: the node's
    forward must not turn the missing context into an error when the no-grad call falls back."""
    x, w = torch.ones(4, 64).requires_grad_(), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    ctypes.c_int.in_dll(ext.stub, "stub_rc").value = 201
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False) == 2
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True) == 2  # _call then takes _EagerFn
    ctypes.c_int.in_dll(ext.stub, "stub_rc").value = 0
    y = ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True)
    assert "gpu_viz::FusedRMSNorm" in y.grad_fn.name()


def test_a_backward_answer_that_is_not_three_tensors_or_none_is_a_type_error(built):
    """The node unpacks what Python's backward returns: anything but (tensor or None) x 3 must
    raise, not be read as a tensor (a segfault) or indexed past its end."""
    so, stub = built
    x, w = torch.ones(4, 64), torch.nn.Parameter(torch.ones(64))
    try:
        for answer in ((1, None, None), (None,), None):
            mod = launcher.load(so, lambda *a, answer=answer: answer, driver=str(stub), allow_cpu=True)
            mod.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
            y = mod.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True)
            with pytest.raises(TypeError, match="backward"):
                y.sum().backward()
        def raises(*a):
            raise ValueError("from the Python backward")

        mod = launcher.load(so, raises, driver=str(stub), allow_cpu=True)
        mod.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
        with pytest.raises(ValueError, match="from the Python backward"):  # its own type, through the engine
            mod.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True).sum().backward()
    finally:
        launcher.load(so, fgrad.ext_backward, driver=str(stub), allow_cpu=True).clear()


def test_cpu_tensors_are_a_miss_for_the_cuda_launcher_on_any_torch(built):
    """Without allow_cpu (the real launcher) a CPU call is a MISS, so Python raises its own
    ValueError -- also on a CPU-only torch, where asking for the current CUDA device throws."""
    so, stub = built
    mod = launcher.load(so, fgrad.ext_backward, driver=str(stub), allow_cpu=False)
    try:
        x, w = torch.ones(4, 64), torch.ones(64)
        assert mod.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False) == 0
        assert not mod.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    finally:
        launcher.load(so, fgrad.ext_backward, driver=str(stub), allow_cpu=True)


@pytest.mark.parametrize("op", [RMSNORM, GATE, ADD])
def test_the_autograd_node_gives_the_python_composite_s_gradients(ext, rng, op):
    M, N = 5, 64
    x = torch.from_numpy(rng.standard_normal((M, N)).astype(np.float32)).requires_grad_()
    x2 = torch.from_numpy(rng.standard_normal((M, N)).astype(np.float32)).requires_grad_() if op else None
    w = torch.nn.Parameter(torch.from_numpy(rng.standard_normal(N).astype(np.float32)))
    ext.insert(op, x, x2, w, 1e-6, 0.25, FP32, fields(fn=op + 1, M=M, N=N, sx=N, sg=N if op else 0,
                                                        offset=0.25, add=op == ADD))
    out = ext.call(op, x, x2, w, 1e-6, 0.25, FP32, True)
    y, h = out if op == ADD else (out, None)
    assert y.requires_grad and "gpu_viz::FusedRMSNorm" in y.grad_fn.name()
    gy = torch.from_numpy(rng.standard_normal((M, N)).astype(np.float32))
    gh = torch.from_numpy(rng.standard_normal((M, N)).astype(np.float32))
    loss = (y * gy).sum() + ((h * gh).sum() if h is not None else 0)
    loss.backward()
    name = ("rmsnorm", "rmsnorm_gate", "rmsnorm_add")[op]
    hh = (x + x2).detach() if op == ADD else None
    want = fgrad.backward(name, (gy, gh if op == ADD else None), x.detach(), None if x2 is None else x2.detach(),
                           w.detach(), hh, 1e-6, 0.25, (True, x2 is not None, True))
    got = (x.grad, None if x2 is None else x2.grad, w.grad)
    for g, wnt, what in zip(got, want, ("x", "x2", "weight")):
        if wnt is None:
            assert g is None, what
        else:
            torch.testing.assert_close(g, wnt, atol=1e-5, rtol=1e-5, msg=what)


def test_only_what_requires_grad_gets_a_grad_and_no_grad_modes_make_no_node(ext, rng):
    x = torch.from_numpy(rng.standard_normal((4, 64)).astype(np.float32))
    w = torch.nn.Parameter(torch.ones(64))
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    y = ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True)
    y.sum().backward()
    assert x.grad is None and w.grad is not None and w.grad.shape == (64,)
    with torch.no_grad():
        assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True).grad_fn is None
    with torch.inference_mode():
        assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, True).grad_fn is None
    assert ext.call(RMSNORM, x, None, w, 1e-6, 0.0, FP32, False).grad_fn is None  # the custom ops' impl


def test_the_public_op_takes_the_launcher_only_when_it_is_the_chosen_one(ext, rng, monkeypatch):
    """fop._call goes to the C++ launcher first when LAUNCHER is "cpp" (CPU tensors here only
    because the stub allows them); with "driver" it never does (and the CPU tensor is refused)."""
    x = torch.from_numpy(rng.standard_normal((4, 64)).astype(np.float32))
    w = torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    monkeypatch.setitem(launcher.STATE, "module", ext)
    monkeypatch.setattr(flaunch, "LAUNCHER", "cpp")
    y = ops.rmsnorm(x, w, 1e-6)
    assert ext.rec.calls == 1 and ext.rec.ptr[0] == y.data_ptr()
    monkeypatch.setattr(flaunch, "LAUNCHER", "driver")
    with pytest.raises(ValueError, match="x is on device cpu"):
        ops.rmsnorm(x, w, 1e-6)
    assert ext.rec.calls == 1
    monkeypatch.setattr(flaunch, "LAUNCHER", "cpp")
    with pytest.raises(TypeError):  # a bool eps is not a number here: Python checks (and refuses) it
        ops.rmsnorm(x, w, True)


def test_a_python_plan_s_fields_are_the_arguments_its_ctypes_launch_packs(ext, monkeypatch):
    """flaunch.Plan.fields, read by the C++ insert(), launch with the same scalars as the plan's
    own ctypes argument block (so both launchers run a kernel with the same arguments)."""
    class RK:
        class kernel:
            ptr = 1

    monkeypatch.setattr(flaunch, "get_kernel", lambda *a, **k: RK)
    x = torch.ones(6, 64)
    w = torch.ones(64)
    operand = lambda name, a: fchecks.Operand(name, "torch", a, "float32", tuple(a.shape), tuple(a.stride()))  # noqa: E731
    call = fchecks.Call("rmsnorm", operand("x", x), operand("weight", w), None, 6, 64, 1e-5, 1.0, "fp32")
    cfg = fconfig.config_for(6, 64, "float32", False, True, False, "rmsnorm", True, None)
    plan = flaunch.Plan(call, cfg, 3, 64, 0, 0)
    w = torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-5, 1.0, FP32, plan.fields)
    ext.call(RMSNORM, x, None, w, 1e-5, 1.0, FP32, False)
    r = ext.rec
    packed = [v.value for v in plan.vals[5:]]
    assert [r.M, r.N, r.sx, r.sg, r.eps, r.offset, r.flags] == packed
    assert (r.grid[0], r.block[0], r.fn) == (cfg.grid, cfg.block, 1)


def test_the_build_says_why_it_cannot_be_done(monkeypatch, tmp_path):
    monkeypatch.setenv(launcher.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.raises(launcher.LauncherUnavailable, match="no C\\+\\+ compiler"):
        launcher.build()
    fake = tmp_path / "fails"
    fake.write_text("#!/bin/sh\necho 'error: something broke' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CXX", str(fake))
    with pytest.raises(launcher.LauncherUnavailable, match="did not compile:[\\s\\S]*something broke"):
        launcher.build()
    assert not list((tmp_path / "launcher").glob("*.so"))  # nothing half-written left


def _fake_compiler(tmp_path, seconds=0.0):
    """A "compiler" that writes its -o file after ``seconds`` and counts its runs in calls.txt."""
    fake = tmp_path / "fake c++"
    fake.write_text("#!/bin/sh\n"
                    f"echo run >> '{tmp_path}/calls.txt'\n"
                    f"sleep {seconds}\n"
                    'while [ "$#" -gt 0 ]; do if [ "$1" = -o ]; then echo so > "$2"; fi; shift; done\n')
    fake.chmod(0o755)
    return fake


def test_two_processes_building_at_once_compile_once(monkeypatch, tmp_path):
    monkeypatch.setenv(launcher.CACHE_ENV, str(tmp_path / "cache dir"))
    monkeypatch.setenv("CXX", str(_fake_compiler(tmp_path, 2)))
    code = "from gpu_viz.rmsnorm import launcher; print(launcher.build())"
    root = str(Path(launcher.__file__).resolve().parents[2])
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and outs[0] == outs[1] and Path(outs[0]).is_file()
    assert (tmp_path / "calls.txt").read_text().split() == ["run"]  # the second waited, then found it


def test_a_background_build_finishes_after_its_process_exits(monkeypatch, tmp_path):
    """The first CUDA call starts the build in the background; a script that ends before the
    compile does must not leave an orphaned compile whose result is thrown away (every short
    run compiling again): the build completes and the next process finds it."""
    monkeypatch.setenv(launcher.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(_fake_compiler(tmp_path, 3)))
    monkeypatch.setenv(launcher.ENV, "cpp")
    code = ("from gpu_viz.rmsnorm import launcher; from gpu_viz.rmsnorm.fused import autograd; "
            "launcher.poll(autograd.ext_backward); "
            "import time; time.sleep(0.5); print(launcher.status())")
    root = str(Path(launcher.__file__).resolve().parents[2])
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "building" in r.stdout, r.stderr
    for _ in range(300):
        if launcher.built_path() is not None:
            break
        time.sleep(0.1)
    assert launcher.built_path() is not None
    assert not [p for p in (tmp_path / "cache" / "launcher").iterdir() if p.is_dir()]  # no temporary left


def test_a_cache_dir_that_cannot_be_written_says_so(monkeypatch, tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv(launcher.CACHE_ENV, str(blocked))  # (root ignores mode bits: a file is unwritable)
    with pytest.raises(launcher.LauncherUnavailable, match="cache dir"):
        launcher.build()


def test_turned_off_it_is_never_built(monkeypatch):
    launcher._reset_for_tests()
    monkeypatch.setenv(launcher.ENV, "python")
    try:
        assert not launcher.enabled()
        assert launcher.poll(fgrad.ext_backward) is None
        assert launcher.STATE["thread"] is None
        assert launcher.status().startswith("unavailable: turned off")
    finally:
        launcher._reset_for_tests()
    monkeypatch.setenv(launcher.ENV, "cpp")
    assert launcher.enabled() and launcher.status().startswith("not built yet")
    monkeypatch.setenv(launcher.ENV, "bogus")  # a value it does not take is named, and means off
    try:
        assert not launcher.enabled() and launcher.poll(fgrad.ext_backward) is None
        assert launcher.status() == "unavailable: turned off: GPU_VIZ_LAUNCHER must be one of cpp, python, got 'bogus'"
    finally:
        launcher._reset_for_tests()


def test_the_build_command_says_what_it_did_without_a_gpu(built, monkeypatch, capsys):
    so, _ = built
    monkeypatch.setenv(launcher.CACHE_ENV, str(so.parent.parent))
    monkeypatch.setattr(launcher, "driver_present", lambda: False)
    assert launcher.main([]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"Built: {so}.") and "no CUDA driver" in out and "cannot open" not in out
    with pytest.raises(SystemExit) as e:
        launcher.main(["--help"])
    assert e.value.code == 0 and "Build the fused ops' C++ launcher now" in capsys.readouterr().out
    monkeypatch.setenv(launcher.ENV, "python")
    assert launcher.main([]) == 1 and "Not built: turned off" in capsys.readouterr().out


def test_a_driver_that_cannot_be_opened_is_named(built, tmp_path):
    so, _ = built
    with pytest.raises(launcher.LauncherUnavailable, match="cannot open .*no-libcuda"):
        launcher.load(so, fgrad.ext_backward, driver=str(tmp_path / "no-libcuda.so"))


def test_the_module_name_follows_the_source_and_torch(monkeypatch):
    a = launcher.module_name()
    monkeypatch.setattr(torch, "__version__", torch.__version__ + "+other")
    assert launcher.module_name() != a and launcher.module_name().startswith("gpu_viz_launcher_")


# ---------------------------------------------------------------------------------------
# GPU: the launcher on the real kernels

@pytest.fixture(scope="module")
def cuda_launcher():
    status = flaunch.ensure_launcher()
    if launcher.STATE["module"] is None:
        pytest.fail(f"the C++ launcher is not available on this GPU machine: {status}")
    return launcher.STATE["module"]


def _rand(rng, shape, dtype):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).to("cuda", getattr(torch, dtype))


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("op", ["rmsnorm", "rmsnorm_gate", "rmsnorm_add"])
def test_cpp_and_python_launchers_agree_bit_for_bit(cuda_launcher, rng, monkeypatch, op, dtype):
    """Same kernels, same arguments: the same bits, over shapes, views, misaligned bases, an fp32
    weight and the weight offset; the second call of each layout is the C++ launcher's."""
    f = getattr(ops, op)
    cases = []
    for M, N in ((1, 4096), (7, 768), (300, 4096), (64, 8192), (5, 1000)):
        x = _rand(rng, (M, N), dtype)
        x2 = _rand(rng, (M, N), dtype)
        for wdt in (dtype, "float32"):
            cases.append((x, x2, _rand(rng, (N,), wdt), {}))
        cases.append((x, x2, _rand(rng, (N,), dtype), {"weight_offset": 1.0}))
    buf = _rand(rng, (33, 4104), dtype)
    cases.append((buf[:, :4096], _rand(rng, (33, 4096), dtype), _rand(rng, (4096,), dtype), {}))
    flat = _rand(rng, (9 * 2048 + 1,), dtype)
    cases.append((flat[1:].view(9, 2048), _rand(rng, (9, 2048), dtype), _rand(rng, (2048,), dtype), {}))
    for x, x2, w, kw in cases:
        args = (x, w) if op == "rmsnorm" else (x, x2, w)
        monkeypatch.setattr(flaunch, "LAUNCHER", "driver")
        want = f(*args, **kw)
        monkeypatch.setattr(flaunch, "LAUNCHER", "cpp")
        n = cuda_launcher.size()
        f(*args, **kw)  # a miss at most: Python registers the plan
        got = f(*args, **kw)
        torch.cuda.synchronize()
        assert cuda_launcher.size() >= min(n, 1)
        for g, wnt in zip(got if op == "rmsnorm_add" else (got,), want if op == "rmsnorm_add" else (want,)):
            assert torch.equal(g, wnt), (op, dtype, tuple(x.shape), kw)


@gpu
def test_cpp_launcher_streams_graphs_threads_and_grads(cuda_launcher, rng):
    x = _rand(rng, (64, 4096), "float16")
    w = _rand(rng, (4096,), "float16")
    y = ops.rmsnorm(x, w)
    y = ops.rmsnorm(x, w)  # the C++ launcher's
    same_on_a_side_stream_and_in_a_graph(x, w, y)  # both calls in it through the C++ launcher
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("y", ops.rmsnorm(x, w)))
    t.start()
    t.join()
    torch.cuda.synchronize()
    assert torch.equal(out["y"], y)
    xg = x.clone().requires_grad_()
    wg = w.clone().requires_grad_()
    ops.rmsnorm(xg, wg)
    yc = ops.rmsnorm(xg, wg)
    assert "gpu_viz::FusedRMSNorm" in yc.grad_fn.name()
    gy = torch.randn_like(yc)
    yc.backward(gy)
    want = fgrad.torch_backward(gy, x, w, None, 1e-6, (True, True))
    assert torch.equal(xg.grad, want[0]) and torch.equal(wg.grad, want[1])
    with pytest.raises(ValueError, match="x is on device cpu"):  # a cached layout's CPU twin
        ops.rmsnorm(x.cpu(), w)


def test_the_doctor_says_whether_calls_take_the_launcher(monkeypatch, tmp_path):
    from gpu_viz import doctor

    launcher._reset_for_tests()
    monkeypatch.setenv(launcher.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv(launcher.ENV, "cpp")
    monkeypatch.setattr(launcher, "driver_present", lambda: False)
    line = {i.name: i.value for i in doctor.diagnose().items}["C++ launcher (fused ops)"]
    assert line.startswith("not built, and not needed here: this machine has no CUDA driver")
    (tmp_path / "launcher").mkdir()
    (tmp_path / "launcher" / (launcher.module_name() + __import__("sysconfig").get_config_var("EXT_SUFFIX"))).touch()
    assert launcher.describe().startswith("built (") and "unused here" in launcher.describe()
    monkeypatch.setattr(launcher, "driver_present", lambda: True)
    assert launcher.describe().startswith("built (") and "first CUDA call" in launcher.describe()
    for f in (tmp_path / "launcher").iterdir():
        f.unlink()
    line = {i.name: i.value for i in doctor.diagnose().items}["C++ launcher (fused ops)"]
    assert line.startswith("not built yet") and "python -m gpu_viz.rmsnorm.launcher" in line
    monkeypatch.setenv("CXX", str(tmp_path / "none"))
    assert launcher.describe().startswith("unavailable: no C++ compiler") and "Python launcher" in launcher.describe()
    monkeypatch.setenv(launcher.ENV, "python")
    assert launcher.describe().startswith("turned off") and launcher.STATE["thread"] is None


def test_negated_views_and_freed_storage_never_reach_a_kernel(ext):
    """A lazily negated view (its sign is a bit, not memory) misses in C++, and the Python path
    resolves it; a tensor whose storage was freed (a null data pointer) misses too, and Python
    refuses it by name (a kernel would read address 0)."""
    x, w = torch.ones(4, 64), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    neg = torch._neg_view(x)
    assert neg.is_neg() and ext.call(RMSNORM, neg, None, w, 1e-6, 0.0, FP32, False) == 0
    assert fchecks.operand("x", neg).array.is_neg() is False
    torch.testing.assert_close(fchecks.operand("x", neg).array, -x)
    freed = torch.ones(4, 64)
    freed.untyped_storage().resize_(0)
    assert ext.call(RMSNORM, freed, None, w, 1e-6, 0.0, FP32, False) == 0
    with pytest.raises(ValueError, match="x has no data"):
        fchecks.operand("x", freed)


@gpu
def test_a_negated_view_gives_the_negated_input_s_result(cuda_launcher, rng):
    x = _rand(rng, (64, 4096), "float16")
    w = _rand(rng, (4096,), "float16")
    want = ops.rmsnorm(-x, w)
    for _ in range(2):  # the second call: a cached layout, the neg bit still honoured
        got = ops.rmsnorm(torch._neg_view(x), w)
        torch.cuda.synchronize()
        assert torch.equal(got, want)


def test_clear_plans_clears_both_caches(ext, monkeypatch):
    x, w = torch.ones(4, 64), torch.ones(64)
    ext.insert(RMSNORM, x, None, w, 1e-6, 0.0, FP32, fields())
    flaunch._plans()[("a key",)] = False
    monkeypatch.setitem(launcher.STATE, "module", ext)
    flaunch.clear_plans()
    assert ext.size() == 0 and not flaunch._plans()
