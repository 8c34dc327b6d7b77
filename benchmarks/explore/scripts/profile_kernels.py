"""Our fused kernels next to Liger's rms_norm at one shape, two ways (GPU machine).

Usage:
  ncu --clock-control none -k 'regex:rmsnorm_|_rms_norm' --section SpeedOfLight ... \\
      env NCU=1 python benchmarks/explore/scripts/profile_kernels.py [M N]     # each kernel launched once, for ncu
  python benchmarks/explore/scripts/profile_kernels.py [M N]                   # interleaved timing rounds

Without ncu: the same inputs (fp16, M x N, default 32768 x 8192) timed in 5 interleaved rounds
of ``gpu_viz.bench.time_graph`` (one launch per graph, 40 replays per round):
ours through the public op (output allocated in the graph's pool, as ``gpu-viz bench``),
ours into a preallocated output, Liger's Triton rms_norm, the gate op, and a device copy of
x into a buffer of x's size (captured, a memcpy node: on the H200 slower than the
timed-from-Python copy that ``gpu-viz bench`` uses as its yardstick).  Prints each round's
median and p10..p90 (µs), so drift between rounds and differences between harness paths are visible.
Data for benchmarks/NOTES.md, not a record.
"""
import argparse
import os
import statistics
import sys

_ap = argparse.ArgumentParser(description="fused kernels next to Liger's rms_norm (see the module docstring)")
_ap.add_argument("M", type=int, nargs="?", default=32768, help="rows (default 32768)")
_ap.add_argument("N", type=int, nargs="?", default=8192, help="row length, a multiple of 32 (default 8192)")
_args = _ap.parse_args()
M, N = _args.M, _args.N
if M < 1 or N < 32 or N % 32:
    _ap.error(f"need M >= 1 and N a positive multiple of 32, got M={M}, N={N}")

from gpu_viz import backend

if not backend.has_gpu():  # a GPU-machine script: say so instead of a CUDA traceback
    sys.exit(f"{__file__.rsplit('/', 1)[-1]}: needs a CUDA GPU; {backend.detect().reason}")

import torch

from gpu_viz import bench, benchmarks, ops

x = torch.randn(M, N, device="cuda", dtype=torch.float16)
g = (2 * torch.randn(M, N, device="cuda")).half()
w = (1 + 0.5 * torch.randn(N, device="cuda")).half()
out = torch.empty_like(x)
liger = benchmarks._liger_rms_norm()

if "NCU" in os.environ:
    for gate in (False, True):
        for ept in (8, 16, 32):
            if ops.BLOCK_MAX_THREADS[ept] >= N // ept >= 32:
                cfg = ops.forced_config(M, N, "float16", variant="block", block=N // ept, ept=ept, vec=8, gate=gate)
                ops._launch(ops._validate(x, w, g if gate else None, 1e-6), out=out, config=cfg)
    liger(x, w, 1e-6)
    torch.cuda.synchronize()
    sys.exit(0)

info = ops._validate(x, w, None, 1e-6)
info_g = ops._validate(x, w, g, 1e-6)
cases = {
    "ours via ops.rmsnorm (allocates y)": lambda: ops.rmsnorm(x, w),
    "ours into preallocated y": lambda: ops._launch(info, out=out),
    "liger rms_norm": lambda: liger(x, w, 1e-6),
    "gate via ops.rmsnorm_gate": lambda: ops.rmsnorm_gate(x, g, w),
    "gate into preallocated y": lambda: ops._launch(info_g, out=out),
    "copy x -> y (torch)": lambda: out.copy_(x),
}
nbytes = {"copy x -> y (torch)": 2 * M * N * 2}
for name in cases:
    nbytes.setdefault(name, ops.bytes_moved(M, N, "float16", gate=name.startswith("gate")))
rounds = {name: [] for name in cases}
for r in range(5):  # interleaved: drift between rounds shows, and hits every case alike
    for name, fn in cases.items():
        rounds[name].append(bench.time_graph(lambda i, fn=fn: fn(), reps=40, warmup=3, calls_per_graph=1))
print(f"{M}x{N} fp16; per round: median µs [p10..p90]; GB/s at the median of the rounds")
for name, ts in rounds.items():
    med = statistics.median(t.median_us for t in ts)
    print(f"{name:36s} " + "  ".join(f"{t.median_us:7.1f} [{t.p10_us:.0f}..{t.p90_us:.0f}]" for t in ts)
          + f"   -> {nbytes[name] / med / 1e3:7.0f} GB/s")
