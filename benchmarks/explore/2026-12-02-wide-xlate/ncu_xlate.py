"""One launch each of the policy's kernel and an ``xlate`` candidate at rmsnorm 1024x262144 (fp16,
fp32), for ncu: do the second reads of the re-read chunks hit L2?  Needs commit 06eb1ec (``xlate``).

    ncu --kernel-name regex:rmsnorm_cluster --metrics dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sector_hit_rate.pct,sm__cycles_active.avg,gpu__time_duration.sum --csv \
        python benchmarks/explore/2026-12-02-wide-xlate/ncu_xlate.py
"""
import torch

from gpu_viz.rmsnorm import bench, wide

H = wide.HYBRID
CASES = [("float16", None, {}), ("float16", (4, 512, 128, H), dict(hreg=2, wdist=1, blocks=3, xlate=5)),
         ("float32", None, {}), ("float32", (8, 512, 64, H), dict(hreg=2, wdist=1, blocks=3, xlate=5))]
for dt, shape, kw in CASES:
    s = bench.make_inputs("rmsnorm", 1024, 262144, dt, "cuda", generator=torch.Generator(device="cuda").manual_seed(1))[0]
    y = torch.empty_like(s["x"])
    torch.cuda.synchronize()
    wide.forward(s["x"], s["weight"], bench.EPS, y, shape=shape, **kw)
    torch.cuda.synchronize()
    print(dt, shape, kw, "ok", flush=True)
