"""One launch each (after a warm one) of fp32 / fp16 HYBRID-family kernels at several shapes, for
Nsight Compute: which launch shape makes L2 send the SMs more than the bytes the kernel reads
(ncu_fp32.py found ~0.67 GB more xbar-to-L1 read bytes than x plus the weight for the fp32
262144 policy kernel, none for the fp32 131072 one).

    ncu --metrics ... python benchmarks/explore/2026-12-03-wide-l2/ncu_sweep.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import torch  # noqa: E402

from gpu_viz.rmsnorm import wide  # noqa: E402

H, MB = wide.HYBRID, wide.MBAR
#: (dtype, M, N, shape or None (the policy), keyword overrides)
CASES = [("float32", 1024, 262144, None, {}),
         ("float32", 1024, 262144, (8, 512, 64, H), dict(hreg=2, wdist=1)),
         ("float32", 1024, 262144, (8, 512, 64, H), dict(hreg=12, wdist=1)),
         ("float32", 1024, 262144, (8, 1024, 32, H), dict(hreg=2, wdist=1, blocks=2)),
         ("float32", 1024, 262144, (8, 256, 128, H), dict(hreg=16, wdist=1)),
         ("float32", 2048, 131072, None, {}),
         ("float32", 2048, 131072, (4, 512, 64, H), dict(hreg=6, wdist=2, blocks=2)),
         ("float32", 2048, 131072, (8, 512, 32, H), dict(hreg=2, wdist=1)),
         ("float16", 1024, 262144, None, {}),
         ("float16", 2048, 131072, None, {})]
dt_of = {"float32": torch.float32, "float16": torch.float16}
for dt, M, N, shape, kw in CASES:
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(M, N, device="cuda", dtype=dt_of[dt], generator=g)
    w = torch.randn(N, device="cuda", dtype=dt_of[dt], generator=g)
    y = torch.empty_like(x)
    for _ in range(2):
        wide.forward(x, w, 1e-6, y, shape=shape, **kw)
    torch.cuda.synchronize()
    cfg = wide.config(N, dt, (9, 0), shape=shape, **kw)
    print(dt, M, N, cfg.kernel, f"blocks {cfg.min_blocks} smem {cfg.smem_bytes}", flush=True)
    del x, y
    torch.cuda.empty_cache()
