"""One launch each (after a warm one) of the fp32 wide kernels whose share of copy differs at
the same bytes: the policy's rmsnorm at 2048x131072 (92-93 % in the records) and 1024x262144
(85 %), the gate op at 1024x262144 (90 %), and rmsnorm 1024x262144 built with
WIDE_DIAG_NOWEIGHT (the weight never read: a timing diagnostic, wrong output), for Nsight
Compute: where the weight's reads are served (L1 hits, L2 hits, the L2 fabric between the two
L2 partitions) and how busy L2 and DRAM are.

    ncu --metrics ... python benchmarks/explore/2026-12-03-wide-l2/ncu_fp32.py [--align]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import numpy as np  # noqa: E402
import torch  # noqa: E402

from gpu_viz.rmsnorm import wide  # noqa: E402

CASES = [("rmsnorm", 2048, 131072, ()), ("rmsnorm", 1024, 262144, ()), ("rmsnorm_gate", 1024, 262144, ()),
         ("rmsnorm", 1024, 262144, ("-DWIDE_DIAG_NOWEIGHT=1",))]
if "--align" in sys.argv:  # the second run: the fp32 262144 and 131072 policy kernels, dynamic shared memory at 16 / 128
    CASES = [("rmsnorm", 1024, 262144, ("-DWIDE_SMEM_ALIGN=16",)), ("rmsnorm", 1024, 262144, ("-DWIDE_SMEM_ALIGN=128",)),
             ("rmsnorm_gate", 1024, 262144, ("-DWIDE_SMEM_ALIGN=128",))]
dev = torch.cuda.current_device()
for op, M, N, extra in CASES:
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(M, N, device="cuda", dtype=torch.float32, generator=g)
    gate = torch.randn(M, N, device="cuda", dtype=torch.float32, generator=g) if op == "rmsnorm_gate" else None
    w = torch.randn(N, device="cuda", dtype=torch.float32, generator=g)
    y = torch.empty_like(x)
    rstd = torch.empty(M, device="cuda", dtype=torch.float32)
    cfg = wide.config(N, "float32", (9, 0), gate=gate is not None)
    k = wide._kernel(cfg, dev, tuple(extra))
    args = (np.uint64(y.data_ptr()), np.uint64(rstd.data_ptr()), np.uint64(x.data_ptr()),
            np.uint64(gate.data_ptr() if gate is not None else 0), np.uint64(w.data_ptr()),
            np.int32(N), np.float32(1e-6), np.float32(0.0), np.int64(M))
    for _ in range(2):
        wide._launch(k, M * cfg.cluster, cfg, args, "torch", dev)
    torch.cuda.synchronize()
    print(op, M, N, cfg.kernel, extra, "max_active_clusters", wide.max_active_clusters(cfg), flush=True)
    del x, gate, y
    torch.cuda.empty_cache()
