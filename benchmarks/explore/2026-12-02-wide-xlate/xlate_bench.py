"""HYBRID (kernels/rmsnorm_wide.cu, mode 9) reading a thread's first chunks twice (``xlate``,
WIDE_XLATE) at the three rmsnorm points of 262144 that missed 90 % of copy in record .4, in one H200
run.

Why: a CTA's serial life (load the slice, reduce, exchange, store) leaves its SM idle unless other
CTAs are streaming, and at 262144 the slices (128 KiB a CTA) fit only two CTAs an SM.  The gate op
with g read in its last step reached 91.4 % at fp32 262144 on the same 8-CTA shape where rmsnorm
stays at 85.6 %: the same on-chip slice, the same fixed cost per CTA, one more stream to amortise
it.  Reading a thread's first ``xlate`` chunks twice -- once into registers for the sum of squares
(L2 evict-last), again in the last step beside the weight (evict-first), an L2 hit if the lines
survive the CTA's life -- shrinks the slice a CTA keeps on chip, so three CTAs of 512 threads fit
an SM (40 registers a thread, at most 72 KiB of shared memory each): the fp32 row on 8-CTA clusters
of (8, 512, 64), the 16-bit row on 4-CTA clusters of (4, 512, 128).  Every candidate is spill-free
or spills at most 12 bytes (ptxas, sm_90; the 1024-thread shapes at two CTAs an SM spill 100-460
bytes and are left out) and bit-identical to mode 1 (or mode 0) at its (cluster, threads, ept).

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main`` (NaN-poisoned
output, 128 rows against float64, rows of op(x[:3]) bit-identical, every candidate bit-identical
to the reference at its (cluster, threads, ept); CUDA-graph replay over input sets beyond L2, 25
replays, median; the copy bandwidth first, in the same process); a HYBRID row's name ends in
b<launch bound>, and xN names N chunks read twice.

Needs commit 06eb1ec (the kernel's WIDE_XLATE, the launcher's ``xlate``, ring_bench's fifth
candidate parameter); the next commit removed them after this run.

    python benchmarks/explore/2026-12-02-wide-xlate/xlate_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-02-wide-xlate/xlate_bench.py --dry-run
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-12-02-wide-ring"))
import ring_bench  # noqa: E402  (its protocol, checks and row names; its tables replaced below)

wide = ring_bench.wide
H = wide.HYBRID

#: (op, element size, N) -> [((cluster, threads, ept, HYBRID), (hreg, wdist, blocks, gate_late, xlate))]
CANDS = {
    ("rmsnorm", 4, 262144): [((8, 512, 64, H), (2, 1, 3, False, 5)), ((8, 512, 64, H), (1, 1, 3, False, 7)),
                             ((8, 512, 64, H), (2, 1, 3, False, 6)), ((8, 512, 64, H), (1, 1, 3, False, 6))],
    ("rmsnorm", 2, 262144): [((4, 512, 128, H), (1, 1, 3, False, 6)), ((4, 512, 128, H), (1, 1, 3, False, 7)),
                             ((4, 512, 128, H), (2, 1, 3, False, 5)), ((4, 512, 128, H), (2, 1, 3, False, 6))],
}
ring_bench.CANDS = CANDS
ring_bench.SHAPES = {262144: 1024}
ring_bench.NAME_BLOCKS = True
ring_bench.MAX_SPILL_BYTES = 32

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
