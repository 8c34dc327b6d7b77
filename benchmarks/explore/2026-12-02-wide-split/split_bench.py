"""SPLIT (wide mode 6: a row's slices as independent CTAs whose sums meet in global memory, no
cluster) beside wide.POLICY's shape at every wide point, in one H200 run.  Same protocol, checks
and record format as explore/2026-12-02-wide-persistent/persist_bench.py (imported; only the plan
differs): NaN-poisoned output, 128 rows against float64, rows of forward(x[:3]) bit-identical,
and for SPLIT shapes of <= 16 slices the whole output bit-identical to mode 1's (a cluster) at the
same (cluster, threads, ept).

Why: at a fixed slice of 16 KiB a CTA, MBAR went from 95.9 % of copy on 4-CTA clusters (fp16
32768) to 87.3 % on 8-CTA clusters (65536), and the policy's 131072 / 262144 shapes stay at
84-89 %.  A cluster of C CTAs starts only when one GPC has C slots free at once, and its CTAs
wait for its slowest load; SPLIT starts every CTA alone (a ticket names its slice) and keeps the
small slices (8-32 KiB) that let an SM hold 6-8 CTAs at any N.  Its price: a ticket (an L2
atomic) before the loads and the sums' round trip through L2.

    python benchmarks/explore/2026-12-02-wide-split/split_bench.py OUT_DIR [--reps 25] [--budget-s 200]
    python benchmarks/explore/2026-12-02-wide-split/split_bench.py --dry-run

Ran once (run1/, H200, 2026-12-02) at commit bf42429, which holds SPLIT; SPLIT measured slower
than POLICY at every point (52-82 % of copy) and was removed after the run, so this script needs
that commit (git checkout bf42429, whose persist_bench.py also checks SPLIT against mode 1's bits) to
run again.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "persist_bench", HERE.parent / "2026-12-02-wide-persistent" / "persist_bench.py")
pb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pb)

M_OF = {n: m for m, n in pb.SHAPES}  # N -> M (1 GiB of fp16 x)
SP = wide.SPLIT
#: (threads, elements a thread) of the SPLIT shapes tried, by element size: slices of 8, 16 and
#: 32 KiB of x (the gate's CTA holds twice that); slices per row = N / (threads * ept).
SPLIT_SLICES = {2: ((256, 32), (128, 32), (512, 32), (256, 64)),
                4: ((256, 16), (128, 16), (512, 16), (256, 32))}


def split_shapes(n: int, size: int):
    out = []
    for t, e in SPLIT_SLICES[size]:
        c = -(-n // (t * e))
        if c <= min(wide.MAX_SPLIT, t):
            out.append((c, t, e, SP))
    return out


def plan():
    """[(M, N, dtype, op, [POLICY's shape, SPLIT shapes ...])], and 8192x40000 fp16 (5 of a
    65536 bucket's 8 slices: SPLIT launches 5)."""
    out = []
    for (M, N) in pb.SHAPES:
        for dt in pb.DTS:
            size = DTYPES[dt][1]
            for op in pb.OPS:
                shapes = [wide.POLICY[op][size][N]] + split_shapes(N, size)
                out.append((M, N, dt, op, list(dict.fromkeys(shapes))))
    for op in pb.OPS:
        out.append((8192, 40000, "float16", op, [wide.POLICY[op][2][65536]] + split_shapes(65536, 2)))
    return out


pb.plan = plan  # persist_bench.run / estimate / dry_run read the module's plan()

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--budget-s" not in argv and "--dry-run" not in argv:
        argv += ["--budget-s", "200"]
    sys.exit(pb.main(argv))
