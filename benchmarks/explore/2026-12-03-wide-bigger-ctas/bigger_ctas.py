"""Bigger CTAs on smaller clusters at the wide points that stay under 90 % of copy (H200 run of
explore/2026-12-02-wide-persistent): same protocol, checks and record format as that run's
persist_bench.py (imported; only the plan differs), with wide.POLICY's shape at each point timed
in the same run as the baseline.

Why: at 131072 and 262144 the one-row-per-cluster kernels (modes 1, 2, 5) wait, between a CTA's
load and its store, for the slowest CTA of the cluster; rmsnorm (two streams) loses more than
the gate (three streams, more bytes per wait), and the 4-CTA clusters at 32768 reach 95 %.  A
CTA that holds twice the slice on a cluster half the size waits on fewer CTAs per row.

    python benchmarks/explore/2026-12-03-wide-bigger-ctas/bigger_ctas.py OUT_DIR [--reps 25] [--budget-s 120]
    python benchmarks/explore/2026-12-03-wide-bigger-ctas/bigger_ctas.py --dry-run
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
S, P1, MB = wide.SMEM, wide.PERSIST_1, wide.MBAR
#: (op, element size, N) -> the shapes tried beside POLICY's: half the cluster with twice the
#: slice a CTA (more threads or more elements a thread), in MBAR and in the mode that won there.
TRIES = {
    ("rmsnorm", 2, 131072): ((4, 512, 64, MB), (4, 1024, 32, MB), (4, 1024, 32, P1), (8, 1024, 16, MB)),
    ("rmsnorm", 2, 262144): ((8, 512, 64, MB), (8, 1024, 32, MB), (8, 1024, 32, P1), (4, 1024, 64, MB)),
    ("rmsnorm", 4, 32768): ((4, 256, 32, MB), (4, 512, 16, MB), (2, 512, 32, MB)),
    ("rmsnorm", 4, 65536): ((4, 512, 32, MB), (4, 1024, 16, MB), (8, 256, 32, MB)),
    ("rmsnorm", 4, 131072): ((8, 512, 32, MB), (8, 1024, 16, MB), (8, 1024, 16, P1)),
    ("rmsnorm", 4, 262144): ((8, 1024, 32, MB), (16, 1024, 16, MB), (16, 1024, 16, P1)),
    ("rmsnorm_gate", 2, 131072): ((4, 512, 64, S), (4, 1024, 32, S), (4, 1024, 32, MB), (4, 512, 64, MB)),
    ("rmsnorm_gate", 2, 262144): ((8, 512, 64, S), (8, 1024, 32, S), (8, 1024, 32, MB), (8, 512, 64, MB)),
    ("rmsnorm_gate", 4, 131072): ((8, 512, 32, S), (8, 1024, 16, S), (8, 1024, 16, MB)),
    ("rmsnorm_gate", 4, 262144): ((16, 1024, 16, S), (16, 1024, 16, MB)),
}


def plan():
    """[(M, N, dtype, op, [POLICY's shape, tries that fit one CTA ...])]."""
    out = []
    for (op, size, n), tries in TRIES.items():
        for dt in pb.DTS:
            if DTYPES[dt][1] != size:
                continue
            shapes = [wide.POLICY[op][size][n]]
            for sh in tries:
                try:
                    wide.config(n, dt, pb.H100, gate=op == "rmsnorm_gate", shape=sh)
                except ValueError:  # its shared memory does not fit one CTA
                    continue
                shapes.append(sh)
            out.append((M_OF[n], n, dt, op, list(dict.fromkeys(shapes))))
    return out


pb.plan = plan  # persist_bench.run / estimate / dry_run read the module's plan()

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--budget-s" not in argv and "--dry-run" not in argv:
        argv += ["--budget-s", "120"]
    sys.exit(pb.main(argv))
