"""One launch each of two kernel pairs at 262144, for ncu (2026-12-02, tenth session):
- the 16-bit gate with g read in the last step on (4, 1024, 64) with (2, 1): fp16 ran at 93 % of copy,
  bf16 at 84 % in explore/2026-12-02-wide-late-gate (cause not known);
- rmsnorm fp32 (the policy: 85.7 %) beside the fp32 gate (the policy, g read late: 91.4 %) on the
  same (8, 512, 64) HYBRID shape.

    ncu --kernel-name regex:rmsnorm --metrics ... --csv python benchmarks/explore/2026-12-02-wide-xlate/ncu_pairs.py
"""
import torch

from gpu_viz.rmsnorm import bench, wide

H = wide.HYBRID
CASES = [("rmsnorm_gate", "float16", (4, 1024, 64, H), dict(hreg=2, wdist=1, blocks=2, gate_late=True)),
         ("rmsnorm_gate", "bfloat16", (4, 1024, 64, H), dict(hreg=2, wdist=1, blocks=2, gate_late=True)),
         ("rmsnorm", "float32", None, {}),
         ("rmsnorm_gate", "float32", None, {})]
for op, dt, shape, kw in CASES:
    s = bench.make_inputs(op, 1024, 262144, dt, "cuda", generator=torch.Generator(device="cuda").manual_seed(1))[0]
    y = torch.empty_like(s["x"])
    torch.cuda.synchronize()
    wide.forward(s["x"], s["weight"], bench.EPS, y, gate=s.get("gate"), shape=shape, **kw)
    torch.cuda.synchronize()
    print(op, dt, shape, kw, "ok", flush=True)
