"""The 16-bit gate at 262144 (the one wide point under 90 % of copy in the twelfth session's
record: bf16 89.8 %), its policy (16, 512, 32) SMEM against HYBRID shapes, in one H200 run.

Why: HYBRID lost to SMEM at this point while every 8-CTA kernel's dynamic shared memory began 16
bytes off a sector (explore/2026-12-03-wide-l2); the 128-byte window (WIDE_SMEM_ALIGN) made the
8-CTA HYBRID kernels 4-7 points faster elsewhere, so the gate's HYBRID shapes are timed again,
with the gate read early and late (gate_late) and launch bounds of 1 and 2 CTAs an SM.

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main`` (NaN-poisoned
output, 128 rows against float64, rows of op(x[:3]) bit-identical, every candidate bit-identical
to mode 1 at its (cluster, threads, ept); CUDA-graph replay over input sets beyond L2, 25 replays,
median; the copy bandwidth first, in the same process; no spilling candidate timed).

    python benchmarks/explore/2026-12-03-wide-gate16/gate_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-03-wide-gate16/gate_bench.py --dry-run
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

#: (op, element size, N) -> [((cluster, threads, ept, mode), (hreg, wdist, blocks, gate_late))]
CANDS = {
    ("rmsnorm_gate", 2, 262144): [
        ((8, 1024, 32, H), (1, 1, 2, False)), ((8, 1024, 32, H), (1, 1, 2, True)),
        ((8, 1024, 32, H), (2, 1, 2, False)), ((8, 1024, 32, H), (2, 1, 2, True)),
        ((8, 1024, 32, H), (1, 1, 1, True)),
        ((8, 512, 64, H), (2, 2, 2, False)), ((8, 512, 64, H), (2, 2, 2, True)),
        ((8, 512, 64, H), (4, 2, 2, True)), ((8, 512, 64, H), (4, 2, None, True)),
        ((4, 1024, 64, H), (1, 1, 2, True)), ((4, 1024, 64, H), (2, 2, 2, True)),
        ((16, 512, 32, H), (1, 1, None, False)), ((16, 512, 32, H), (2, 1, None, True)),
        ((16, 256, 64, H), (4, 1, None, True)),
    ],
}

ring_bench.CANDS = CANDS
ring_bench.SHAPES = {262144: 1024}
ring_bench.NAME_BLOCKS = True

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
