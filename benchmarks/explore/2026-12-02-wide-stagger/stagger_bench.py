"""The policy's kernels at the 262144 points with the first wave staggered (``stagger_ns``,
WIDE_STAGGER_NS), in one H200 run.

Why: ncu (explore/2026-12-02-wide-xlate/ncu-pairs) has rmsnorm fp32 262144 at 73 % of DRAM peak with
its warps stalled on long scoreboards, no spills, and the same 8-CTA HYBRID shape reaching 91 % of
copy for the gate op, whose last step moves twice the bytes: a fixed cost per CTA life -- the last
loads' latency, the block reduction, the cluster exchange -- that the other CTA on the SM should
hide, if it were streaming then.  But every cluster of the first wave starts at once, so the two
CTAs an SM load, wait and store in step; a new cluster takes the slots the last one left, so they
stay in step wave after wave.  The odd rows of the first wave (rows below the clusters the GPU holds
at once, estimated: SMs x CTAs an SM / cluster) start ``stagger_ns`` late, when M is at least twice
that: one CTA then streams while the other waits.  No bit depends on it (every candidate is checked
bit-identical to the policy's kernel at the same shape).

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main`` (NaN-poisoned
output, 128 rows against float64, rows of op(x[:3]) bit-identical, every candidate bit-identical
to the reference -- here the policy's own kernel, tagged ``ref`` -- at its (cluster, threads,
ept); CUDA-graph replay over input sets beyond L2, 25 replays, median; the copy bandwidth first, in
the same process); a candidate's name ends in s<stagger ns>.

Needs commit 7a46b31 (the kernel's WIDE_STAGGER_NS / WIDE_STAGGER_ROWS, the launcher's
``stagger_ns``, their tests and sanitizer case); the next commit removed them after this run.

    python benchmarks/explore/2026-12-02-wide-stagger/stagger_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-02-wide-stagger/stagger_bench.py --dry-run
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-12-02-wide-ring"))
import ring_bench  # noqa: E402  (its protocol, checks and row names; its plan replaced below)

wide = ring_bench.wide
DTYPES = ring_bench.DTYPES

#: (op, N) -> the first wave's stagger in ns; the policy's kernel at each point is timed beside them
STAGGERS = {("rmsnorm", 262144): (4000, 8000, 12000), ("rmsnorm_gate", 262144): (8000, 12000)}
M_OF = {262144: 1024}


def plan():
    out = []
    for (op, N), staggers in STAGGERS.items():
        for dt in ("float16", "bfloat16", "float32"):
            gate = op == "rmsnorm_gate"
            pol = wide.config(N, dt, (9, 0), gate=gate)
            rows = [("ref", pol)] + [("ring", wide.config(N, dt, (9, 0), gate=gate, stagger_ns=s)) for s in staggers]
            out.append((M_OF[N], N, dt, op, rows))
    return out


ring_bench.plan = plan
ring_bench.NAME_BLOCKS = True
ring_bench.MAX_SPILL_BYTES = 32

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
