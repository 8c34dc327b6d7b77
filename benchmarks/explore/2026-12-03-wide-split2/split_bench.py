"""The SPLIT modes (kernels/rmsnorm_wide.cu, modes 10-12: a row's CTAs independent CTAs, no
cluster) at the 262144 points, in one H200 run.

Why: the eleventh session's phase stamps found only 124 of the H200's 132 SMs running any CTA of
a clustered launch (116 for 16-CTA clusters), while every SM streamed 95-98 % of the time; a
launch without clusters runs on all 132.  The sixth session's SPLIT (mode 1 without a cluster,
16 KiB slices, release / acquire slots) cost about 3.8 µs a CTA and lost everywhere; these
differ in three ways:
  * SPLIT_HYBRID (10): HYBRID's 64-128 KiB slices (a CTA lives ~17 µs at fp32 262144, not ~5);
  * SPLIT_PERSIST / SPLIT_PERSIST_1 (11 / 12): persistent, one ticket a CTA for the whole run, the
    weight's slice in shared memory across rows (the eleventh session: not reading the weight
    gains 4-8 points), the next row's copies in flight while this row's sums meet;
  * the slots are written and read relaxed (value and flag in one 64-bit word: no fence).
Row groups of 11 CTAs (slices of 48 elements a thread, the last CTA's partly idle) make 12
groups of one CTA an SM: all 132 SMs.

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main`` (NaN-poisoned
output, 128 rows against float64, rows of op(x[:3]) bit-identical, every candidate bit-identical
to mode 1 at its (cluster, threads, ept), persistent ones also on a 3-group grid; CUDA-graph
replay over input sets beyond L2, 25 replays, median; the copy bandwidth first, in the same
process; no spilling candidate timed).

    python benchmarks/explore/2026-12-03-wide-split2/split_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-03-wide-split2/split_bench.py --dry-run
    python benchmarks/explore/2026-12-03-wide-split2/split_bench.py OUT_DIR --run2   (CANDS2)
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
SH, SP, SP1 = wide.SPLIT_HYBRID, wide.SPLIT_PERSIST, wide.SPLIT_PERSIST_1
H = wide.HYBRID

#: (op, element size, N) -> [((cluster, threads, ept, mode), params)]: params (hreg, wdist, blocks)
#: for the hybrids, None for the persistent modes
CANDS = {
    ("rmsnorm", 4, 262144): [((8, 512, 64, SH), (6, 2, 2)), ((8, 1024, 32, SH), (1, 1, 2)),
                             ((16, 512, 32, SP), None), ((16, 512, 32, SP1), None),
                             ((16, 1024, 16, SP), None), ((11, 512, 48, SP1), None),
                             ((11, 1024, 24, SP1), None)],
    ("rmsnorm", 2, 262144): [((4, 1024, 64, SH), (1, 1, 2)), ((8, 1024, 32, SH), (1, 1, 2)),
                             ((8, 512, 64, SH), (4, 2, None)),
                             ((8, 512, 64, SP), None), ((16, 512, 32, SP), None),
                             ((11, 512, 48, SP), None), ((11, 1024, 24, SP), None),
                             ((16, 1024, 16, SP), None)],
}

#: run2 (after WIDE_SMEM_ALIGN became 128, explore/2026-12-03-wide-l2): the 262144 rmsnorm points'
#: HYBRID shapes around the policy's again (the policy was chosen with every 8-CTA kernel's copies
#: landing 16 bytes off a sector), the SPLIT modes beside them
MB = wide.MBAR
CANDS2 = {
    ("rmsnorm", 4, 262144): [((8, 512, 64, H), (4, 2, 2)), ((8, 512, 64, H), (8, 2, 2)), ((8, 512, 64, H), (6, 3, 2)),
                             ((8, 512, 64, H), (5, 3, None)), ((8, 512, 64, H), (4, 4, None)),
                             ((8, 1024, 32, H), (2, 1, 2)), ((8, 1024, 32, H), (3, 1, 2)), ((8, 1024, 32, H), (1, 1, 2)),
                             ((8, 256, 128, H), (16, 1, None)), ((8, 256, 128, H), (12, 2, None)),
                             ((16, 512, 32, H), (2, 1, None)), ((16, 512, 32, H), (4, 1, None)),
                             ((16, 256, 64, H), (8, 1, None)),
                             ((8, 512, 64, SH), (6, 2, 2)), ((8, 1024, 32, SH), (1, 1, 2)),
                             ((16, 512, 32, SP), None), ((11, 512, 48, SP1), None)],
    ("rmsnorm", 2, 262144): [((4, 1024, 64, H), (3, 2, 2)), ((4, 1024, 64, H), (2, 3, 2)), ((4, 1024, 64, H), (1, 2, 2)),
                             ((4, 512, 128, H), (8, 1, None)), ((4, 512, 128, H), (4, 2, None)),
                             ((8, 1024, 32, H), (1, 1, 2)), ((8, 1024, 32, H), (2, 1, 2)),
                             ((8, 512, 64, H), (4, 2, None)),
                             ((4, 1024, 64, SH), (1, 1, 2)), ((8, 1024, 32, SH), (1, 1, 2)),
                             ((16, 512, 32, SP), None), ((11, 512, 48, SP), None)],
}
if "--run2" in sys.argv:
    sys.argv.remove("--run2")
    CANDS = CANDS2

ring_bench.CANDS = CANDS
ring_bench.SHAPES = {262144: 1024}
ring_bench.NAME_BLOCKS = True

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
