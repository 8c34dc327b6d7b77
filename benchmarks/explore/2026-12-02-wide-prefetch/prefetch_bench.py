"""The policy's HYBRID kernels with the next rows' L2 prefetch (``prefetch``, WIDE_PREFETCH_DIST),
in one H200 run.

Why: explore/2026-12-02-wide-wsmem's phase stamps have rmsnorm's CTAs streaming 96-98 % of the
time, the fp32 262144 store step taking twice its load step, and every design that shortened the
store step lengthening the load step by as much; the fp32 gate, whose last step reads g from DRAM
while it stores, runs at 91 %.  Here each CTA's thread 0, in the store step, prefetches into L2
(cp.async.bulk.prefetch.L2, one bulk prefetch of the 64-128 KiB slice as the store step begins) its slice of row + D -- the row a
cluster launched about D clusters later reads, D around the clusters the GPU holds at once --
so DRAM reads the next wave's rows while this one stores, and their loads hit L2.  A hint: every
candidate is checked bit-identical to the policy's own kernel at the same shape.

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main``; the policy's
kernel is the reference (tag ``ref``); a name ending in p<D> prefetches D rows ahead.

Needs commit e34a41f (the kernel's WIDE_PREFETCH_DIST, the launcher's ``prefetch``, ring_bench's
handling of it); a later commit removed them after this run (slower at a wave's distance or more).

    python benchmarks/explore/2026-12-02-wide-prefetch/prefetch_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-02-wide-prefetch/prefetch_bench.py --dry-run
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-12-02-wide-ring"))
import ring_bench  # noqa: E402  (its protocol, checks and row names; its plan replaced below)

wide = ring_bench.wide
M_OF = {65536: 4096, 131072: 2048, 262144: 1024}
#: (op, N, dtypes) -> prefetch distances (rows); the H200 holds 30 8-CTA and 62 4-CTA clusters of
#: these kernels at once (their run records' max_active_clusters)
DISTS = {
    ("rmsnorm", 262144, ("float32",)): (15, 30, 45, 60),
    ("rmsnorm", 262144, ("float16", "bfloat16")): (31, 62, 93, 124),
    ("rmsnorm_gate", 262144, ("float32",)): (30, 60),
    ("rmsnorm", 131072, ("float32",)): (62, 124),
}

#: (op, N, dtypes) -> [(hreg, wdist, prefetch distances)]: the policy's shape with another split
#: (bf16 spills 4 bytes at the policy's (2, 2) with the prefetch; (1, 2) spills in neither dtype)
SPLITS = {("rmsnorm", 262144, ("float16", "bfloat16")): [(1, 2, (0, 62, 93))]}


def plan():
    out = []
    for (op, N, dts), dists in DISTS.items():
        gate = op == "rmsnorm_gate"
        for dt in dts:
            pol = wide.config(N, dt, (9, 0), gate=gate)
            assert pol.mode == wide.HYBRID, pol
            shape = (pol.cluster, pol.threads, pol.ept, pol.mode)
            kw = dict(hreg=pol.hreg, wdist=pol.wdist, blocks=pol.min_blocks, gate_late=pol.gate_late if gate else None)
            rows = [("ref", pol)] + [("ring", wide.config(N, dt, (9, 0), gate=gate, shape=shape, prefetch=d, **kw))
                                     for d in dists]
            for h, wd, ds in SPLITS.get((op, N, dts), ()):
                rows += [("ring", wide.config(N, dt, (9, 0), shape=shape, hreg=h, wdist=wd, blocks=pol.min_blocks,
                                              prefetch=d)) for d in ds]
            out.append((M_OF[N], N, dt, op, rows))
    return out


ring_bench.plan = plan
ring_bench.NAME_BLOCKS = True
ring_bench.MAX_SPILL_BYTES = 0

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
