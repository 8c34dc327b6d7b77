"""Host-side cost of one fused rmsnorm call from Python, with the GPU launch stubbed (runs on a
CPU-only machine): the pre-plan path (_validate + _launch, CuPy launch stubbed) against the
plan path (_fast: key, lookup, allocation, pointers, cuLaunchKernel through ctypes into a stub
C function with cuLaunchKernel's signature).  Torch's own costs on CPU stand in for CUDA's
(torch.empty on CPU; the CUDA caching allocator is ~1-2 us dearer).  Prints medians of
time.perf_counter loops and the top of a cProfile of the old path.

    PYTHONPATH=$PWD python benchmarks/explore/2026-12-01-per-call/host_profile.py
"""
import cProfile
import ctypes
import os
import pstats
import statistics
import subprocess
import tempfile
import time
import types

import torch
import torch.nn.functional as F

from gpu_viz import backend
from gpu_viz.rmsnorm import fused

STUB = "int cuLaunchKernel(void* f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g,\n" \
       "unsigned s, void* st, void** p, void** x) { return 0; }\n" \
       "int cuGetErrorName(int e, const char** s) { return 1; }\n"


class FakeCuda(torch.Tensor):
    """A CPU tensor that says it is on CUDA (only the plan path's is_cuda test reads it)."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    @property
    def is_cuda(self):
        return True


def per_call_us(fn, n=20000, rounds=7):
    for _ in range(2000):
        fn()
    meds = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        meds.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(meds), min(meds), max(meds)


def main():
    d = tempfile.mkdtemp()
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", f"{d}/libstub.so", "-x", "c", "-"], check=True,
                          input=STUB.encode())
    lib = ctypes.CDLL(f"{d}/libstub.so")
    f = lib.cuLaunchKernel
    u = ctypes.c_uint
    f.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    f.restype = ctypes.c_int
    if hasattr(fused, "_DRIVER"):
        fused._DRIVER[:] = [(f, lib.cuGetErrorName)]
    fake_kernel = types.SimpleNamespace(kernel=types.SimpleNamespace(ptr=0))
    fused.get_kernel = lambda *a, **k: fake_kernel
    fused.l2_bytes = lambda dev: 60 << 20
    fused._compute_capability = lambda dev: (9, 0)
    fused._current_device = lambda: 0
    fused._torch_stream_ptr = lambda dev: 0
    backend.require_gpu = lambda *a, **k: None
    fused.launch = lambda *a, **k: None          # the pre-plan path's CuPy launch, stubbed
    cuda0 = torch.device("cuda", 0)
    fused._device_of = lambda o: cuda0 if o.fw == "torch" else ("cuda", 0)

    rows = []
    for M in (1, 128, 1024):
        x = torch.randn(M, 4096, dtype=torch.float16)
        w = torch.randn(4096, dtype=torch.float16)
        old = lambda: fused._launch(fused._validate(x, w, None, 1e-6))
        if not hasattr(fused, "_Plan"):  # a checkout before the plans (PYTHONPATH=/work/main)
            rows.append((M, "pre-plan checkout: _validate + _launch, launch stubbed", per_call_us(old)))
            continue
        xf, wf = x.as_subclass(FakeCuda), w.as_subclass(FakeCuda)
        info = fused._validate(x, w, None, 1e-6)
        info["x"].array = types.SimpleNamespace(device=types.SimpleNamespace(index=0), shape=x.shape,
                                                dtype=x.dtype)
        cfg = fused._choose_config(M, 4096, "float16", False, True, True)
        plan = fused._Plan(info, cfg, 1, 4096, 0, 0)
        plan.tdevice = "cpu"
        plan.stream = lambda dev: 0
        key_fn = lambda: (("rmsnorm", type(xf), xf.shape, xf.stride(), xf.dtype, xf.get_device(), xf.data_ptr() % 16,
                           type(wf), wf.shape, wf.stride(), wf.dtype, wf.get_device(), wf.data_ptr() % 16, None,
                           1e-6, 0.0, "fp32", 0))
        plans = {key_fn(): plan}
        fused._plans = lambda: plans
        fused._TLS.plans = plans
        fast = lambda: fused._fast("rmsnorm", xf, None, wf, 1e-6, 0.0, "fp32")
        assert fast() is not None
        rows += [(M, "old path (_validate + _launch, launch stubbed)", per_call_us(old)),
                 (M, "plan path (_fast, ctypes into a stub)", per_call_us(fast)),
                 (M, "  of which: the plan key", per_call_us(key_fn)),
                 (M, "  of which: plan.run", per_call_us(lambda: plan.run(xf, None, wf))),
                 (M, "torch.empty(x.shape) on CPU", per_call_us(lambda: torch.empty(x.shape, dtype=x.dtype))),
                 (M, "F.rms_norm on CPU (whole op, for scale)", per_call_us(lambda: F.rms_norm(x, (4096,), w, 1e-6), n=200 if M > 1 else 5000)),
                 (M, "x * 2 on CPU (one aten op)", per_call_us(lambda: x * 2, n=200 if M > 1 else 5000))]
    for M, what, (med, lo, hi) in rows:
        print(f"M={M:5d} x 4096 fp16  {what:55s} {med:7.2f} us  [{lo:.2f}, {hi:.2f}]")
    print("gpu_viz from", fused.__file__)
    x = torch.randn(128, 4096, dtype=torch.float16)
    w = torch.randn(4096, dtype=torch.float16)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20000):
        fused._launch(fused._validate(x, w, None, 1e-6))
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
