"""One launch each of a few wide-row kernels, for Nsight Compute (ncu --launch-skip 1: the first
launch of each compiles and warms).  Which: the policy at rmsnorm 16-bit 131072 (94 % of copy in
the record) and 262144 (83 %), the 16-bit gate at 262144 (90 %), RING at rmsnorm 16-bit 262144
(8 x 1024 x 32, ring 4: 81 % in ring_bench run1) and MBAR at (8, 1024, 32) (the 131072 policy's
CTA on an 8-CTA cluster: 84 % in the weight run).

    ncu --section SpeedOfLight ... python benchmarks/explore/2026-12-02-wide-ring/ncu_wide.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import torch  # noqa: E402

from gpu_viz.rmsnorm import wide  # noqa: E402

CASES = [("rmsnorm", 2048, 131072, None, None, None),
         ("rmsnorm", 1024, 262144, None, None, None),
         ("rmsnorm_gate", 1024, 262144, None, None, None),
         ("rmsnorm", 1024, 262144, (8, 1024, 32, wide.RING), 4, None),
         ("rmsnorm", 1024, 262144, (8, 1024, 32, wide.MBAR), None, 2)]

for op, M, N, shape, ring, blocks in CASES:
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16, generator=g)
    gate = torch.randn(M, N, device="cuda", dtype=torch.float16, generator=g) if op == "rmsnorm_gate" else None
    w = torch.randn(N, device="cuda", dtype=torch.float16, generator=g)
    y = torch.empty_like(x)
    kw = dict(shape=shape, ring=ring, blocks=blocks, wload=wide.WLOAD_EARLY if shape and shape[3] == wide.MBAR else None)
    for _ in range(2):
        wide.forward(x, w, 1e-6, y, gate=gate, **kw)
    torch.cuda.synchronize()
    cfg = wide.config(N, "float16", (9, 0), gate=gate is not None, shape=shape, ring=ring, blocks=blocks,
                      wload=kw["wload"])
    print(op, M, N, cfg.kernel, "max_active_clusters", wide.max_active_clusters(cfg), flush=True)
    del x, gate, y
    torch.cuda.empty_cache()
