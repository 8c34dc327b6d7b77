"""Where does an as-called-from-Python fused op spend its host time?  (GPU machine)

Usage: python benchmarks/explore/scripts/profile_call.py [M N]
Prints µs per call (host wall clock, back-to-back calls, one sync at the end) for the fused ops,
the deck's four-phase kernel and F.rms_norm, then cProfile's top functions for ops.rmsnorm.
"""
import argparse
import cProfile
import pstats
import sys
import time

_ap = argparse.ArgumentParser(description="host time per call of the fused ops (see the module docstring)")
_ap.add_argument("M", type=int, nargs="?", default=512, help="rows (default 512)")
_ap.add_argument("N", type=int, nargs="?", default=2048, help="row length (default 2048)")
_args = _ap.parse_args()
M, N = _args.M, _args.N
if M < 1 or N < 1:
    _ap.error(f"need M >= 1 and N >= 1, got M={M}, N={N}")

from gpu_viz import backend

if not backend.has_gpu():  # a GPU-machine script: say so instead of a CUDA traceback
    sys.exit(f"{__file__.rsplit('/', 1)[-1]}: needs a CUDA GPU; {backend.detect().reason}")

import torch

from gpu_viz import ops, rmsnorm

x = torch.randn(M, N, device="cuda", dtype=torch.float16)
g = torch.randn(M, N, device="cuda", dtype=torch.float16)
w = torch.randn(N, device="cuda", dtype=torch.float16)
wp = torch.nn.Parameter(w.clone())


def per_call(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


cases = {
    "ops.rmsnorm": lambda: ops.rmsnorm(x, w),
    "ops.rmsnorm (weight Parameter, grad on)": lambda: ops.rmsnorm(x, wp),
    "ops.rmsnorm_gate": lambda: ops.rmsnorm_gate(x, g, w),
    "torch.ops.gpu_viz.rmsnorm": lambda: torch.ops.gpu_viz.rmsnorm(x, w, 1e-6),
    "rmsnorm.four_phase": lambda: rmsnorm.four_phase(x, w, 1e-6, block=1024),
    "F.rms_norm": lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6),
    "torch.empty_like": lambda: torch.empty_like(x),
}
for name, fn in cases.items():
    print(f"{name:45s} {per_call(fn):8.2f} µs/call")
with torch.no_grad():
    print(f"{'ops.rmsnorm (no_grad, Parameter)':45s} {per_call(lambda: ops.rmsnorm(x, wp)):8.2f} µs/call")
prof = cProfile.Profile()
prof.enable()
for _ in range(2000):
    ops.rmsnorm(x, w)
torch.cuda.synchronize()
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(18)
