"""HYBRID (kernels/rmsnorm_wide.cu, mode 9) at more CTAs an SM, at the wide points still under
90 % of copy after the seventh session's record, in one H200 run.

Why: the 8-CTA gate kernel at 131072 that runs three CTAs an SM reaches 98-99 % of what its
occupied CTA slots allow (89.3-90.0 % of copy at 90.9 % of the slots, the seventh session's runs
and record), the two-CTA-an-SM HYBRID kernels 93-96 %: more CTAs (or threads) on an SM overlap one
row's loads with another's stores.  HYBRID
splits a CTA's slice between registers (``hreg`` chunks a thread) and shared memory, so the launch
bound (``blocks``: registers a thread = 65536 / (threads * blocks)) and ``hreg`` together set how
many CTAs an SM holds.  Candidates: every (cluster, threads, ept, hreg, wdist, blocks) at these
points that ptxas (CUDA 13.0, sm_90) compiles without spills and whose shared memory lets the SM
hold ``blocks`` CTAs:

  rmsnorm fp32 262144     8-CTA clusters at 2 CTAs of 1024 threads an SM (32 registers), 16-CTA
                          ones at 2-4, 8-CTA ones of 128 / 256 threads with half the slice in
                          registers, the policy's (8, 512, 64) with other hreg / wdist
  rmsnorm_gate 16-bit 131072   8-CTA clusters at 4 CTAs an SM (256 or 512 threads), at 3 (512) and
                          at 2 of 1024 threads, 16-CTA ones at 4-8
  rmsnorm_gate fp32 262144     16-CTA clusters at 1-3 CTAs an SM

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main`` (NaN-poisoned
output, 128 rows against float64, rows of op(x[:3]) bit-identical, every candidate bit-identical
to mode 1 at its (cluster, threads, ept); CUDA-graph replay over input sets beyond L2, 25 replays,
median; the copy bandwidth first, in the same process; no spilling candidate timed), with this
table; a HYBRID row's name ends in b<launch bound>.

    python benchmarks/explore/2026-12-02-wide-occupancy/occupancy_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-02-wide-occupancy/occupancy_bench.py --dry-run
    python benchmarks/explore/2026-12-02-wide-occupancy/occupancy_bench.py OUT_DIR --run2   (CANDS2)
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("ring_bench", HERE.parent / "2026-12-02-wide-ring" / "ring_bench.py")
ring_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ring_bench)
wide = ring_bench.wide
H = wide.HYBRID

#: (op, element size, N) -> [((cluster, threads, ept, HYBRID), (hreg, wdist, blocks or None))];
#: None: the launch bound wide.min_blocks computes
CANDS = {
    ("rmsnorm", 4, 262144): [((8, 1024, 32, H), (2, 1, 2)), ((8, 1024, 32, H), (3, 1, 2)),
                             ((16, 256, 64, H), (8, 1, None)), ((16, 512, 32, H), (2, 1, None)),
                             ((16, 512, 32, H), (4, 1, None)), ((8, 256, 128, H), (16, 1, None)),
                             ((8, 512, 64, H), (6, 2, None)), ((8, 512, 64, H), (5, 3, None)),
                             ((8, 128, 256, H), (24, 1, 2))],
    ("rmsnorm_gate", 2, 131072): [((8, 256, 64, H), (2, 1, None)), ((8, 256, 64, H), (2, 2, None)),
                                  ((8, 256, 64, H), (3, 1, None)), ((8, 512, 32, H), (1, 1, 4)),
                                  ((8, 512, 32, H), (1, 1, None)), ((8, 1024, 16, H), (1, 1, 2)),
                                  ((16, 256, 32, H), (1, 1, 8)), ((16, 256, 32, H), (2, 1, 6)),
                                  ((16, 512, 16, H), (1, 1, 4))],
    ("rmsnorm_gate", 4, 262144): [((16, 512, 32, H), (4, 1, None)), ((16, 512, 32, H), (4, 2, None)),
                                  ((16, 128, 128, H), (16, 1, 3)), ((16, 256, 64, H), (8, 1, None)),
                                  ((16, 1024, 16, H), (2, 1, None))],
}
#: run2: two CTAs of 1024 threads an SM at 32 registers (run1's fastest gate kernel at 131072 is
#: one) at the wide points run1 did not time that measured under 91.5 % in the seventh session's
#: record (rmsnorm 16-bit 65536 and 262144, fp32 131072; the gate 16-bit 262144, fp32 131072);
#: run1's two winners again (the gate at 131072, also with the weight two chunks ahead; rmsnorm
#: fp32 262144's (6, 2)) beside the policy, and rmsnorm fp32 262144 with one chunk in registers
CANDS2 = {
    ("rmsnorm", 2, 65536): [((4, 1024, 16, H), (1, 1, 2)), ((2, 1024, 32, H), (1, 1, 2)),
                            ((2, 1024, 32, H), (2, 1, 2)), ((2, 1024, 32, H), (3, 1, 2))],
    ("rmsnorm", 2, 262144): [((8, 1024, 32, H), (1, 1, 2)), ((8, 1024, 32, H), (2, 1, 2)),
                             ((16, 1024, 16, H), (1, 1, 2))],
    ("rmsnorm", 4, 131072): [((8, 1024, 16, H), (1, 1, 2)), ((8, 1024, 16, H), (2, 1, 2)),
                             ((4, 1024, 32, H), (2, 1, 2)), ((4, 1024, 32, H), (3, 1, 2))],
    ("rmsnorm", 4, 262144): [((8, 1024, 32, H), (1, 1, 2)), ((8, 512, 64, H), (6, 2, None))],
    ("rmsnorm_gate", 2, 131072): [((8, 1024, 16, H), (1, 1, 2)), ((8, 1024, 16, H), (1, 2, 2))],
    ("rmsnorm_gate", 2, 262144): [((8, 1024, 32, H), (1, 1, 2)), ((16, 1024, 16, H), (1, 1, 2))],
    ("rmsnorm_gate", 4, 131072): [((16, 1024, 8, H), (1, 1, 2)), ((8, 1024, 16, H), (1, 1, 2)),
                                  ((8, 1024, 16, H), (2, 1, 2))],
}
if "--run2" in sys.argv:
    sys.argv.remove("--run2")
    CANDS = CANDS2
    ring_bench.SHAPES = {65536: 8192, 131072: 2048, 262144: 1024}

ring_bench.CANDS = CANDS
ring_bench.NAME_BLOCKS = True

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
