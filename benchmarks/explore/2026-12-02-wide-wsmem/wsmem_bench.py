"""HYBRID with the weight's loads through shared memory (``wsmem``, WIDE_WSMEM) at rmsnorm's
262144 points and beside the policy's other HYBRID entries, in one H200 run.

Why: in the same 8-CTA HYBRID shape the fp32 gate reaches 91 % of copy and rmsnorm 86 %
(explore/2026-12-02-wide-xlate/ncu-pairs).  The gate's last step moves twice rmsnorm's bytes
(g in, y out) in about the time rmsnorm's moves y: per row and CTA, (384 KiB / 0.914) - (256 KiB
/ 0.856) is about 121 KiB of copy-time for 128 KiB more bytes.  So rmsnorm's last step is not
bandwidth-bound: it waits.  What it waits on is the weight, read from L2 ``wdist`` chunks ahead
of the stores into registers (at 64 registers a thread, two chunks).  With ``wsmem`` the weight's
packs land in a ring of ``wdist`` slots a thread in shared memory (cp.async, one group a chunk):
no register cost, deeper rings, and the first ``wdist`` chunks are copied before the cluster
exchange, whose wait hides their latency.  phases.py, run in the same call, reads the CTAs'
own clocks to say where each one's time goes.

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main`` (NaN-poisoned
output, 128 rows against float64, rows of op(x[:3]) bit-identical, every candidate bit-identical to
mode 1 / 0 at its (cluster, threads, ept); CUDA-graph replay over input sets beyond L2, 25
replays, median; the copy bandwidth first, in the same process; no candidate that spills is timed);
a name ending in ``w`` has the weight's ring in shared memory.

Needs commit d193b92 (the kernel's WIDE_WSMEM, the launcher's ``wsmem``, ring_bench's handling of
it); the next commit removed them after this run (slower at every point).

    python benchmarks/explore/2026-12-02-wide-wsmem/wsmem_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-02-wide-wsmem/wsmem_bench.py --dry-run
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-12-02-wide-ring"))
import ring_bench  # noqa: E402  (its protocol, checks and row names; its plan replaced below)

wide = ring_bench.wide
H = wide.HYBRID
M_OF = {65536: 4096, 131072: 2048, 262144: 1024}  # 1 GiB of 16-bit x, as the bench's wide rows
#: (op, dtypes, N) -> [((cluster, threads, ept, mode), hreg, wdist, wsmem, gate_late)], every one at two
#: CTAs an SM (blocks=2)
CANDS = {
    ("rmsnorm", ("float32",), 262144): [((8, 512, 64, H), 6, 3, False, False), ((8, 512, 64, H), 6, 4, False, False)]
    + [((8, 512, 64, H), h, d, True, False) for h, d in ((6, 2), (6, 3), (6, 4), (7, 2), (7, 3), (7, 4), (8, 2))],
    ("rmsnorm", ("float16", "bfloat16"), 262144):
        [((4, 1024, 64, H), h, d, True, False) for h, d in ((2, 1), (3, 1), (3, 2), (4, 1), (4, 2), (4, 3))]
        + [((4, 512, 128, H), h, d, True, False) for h, d in ((8, 2), (8, 4), (8, 6), (6, 4), (10, 2), (10, 4))],
    ("rmsnorm", ("float16", "bfloat16"), 65536): [((2, 1024, 32, H), 3, 1, True, False), ((2, 1024, 32, H), 3, 2, True, False),
                                                 ((2, 1024, 32, H), 2, 2, True, False)],
    ("rmsnorm", ("float32",), 131072): [((4, 1024, 32, H), 2, 1, True, False), ((4, 1024, 32, H), 2, 2, True, False),
                                       ((4, 1024, 32, H), 3, 2, True, False)],
    ("rmsnorm_gate", ("float32",), 262144): [((8, 512, 64, H), 4, 2, True, True), ((8, 512, 64, H), 4, 3, True, True)],
}


def plan():
    out = []
    for (op, dts, N), cands in CANDS.items():
        gate = op == "rmsnorm_gate"
        for dt in dts:
            rows = [("policy", wide.config(N, dt, (9, 0), gate=gate))]
            refs = {}
            for shape, *_ in cands:
                refs.setdefault(shape[:3], ("ref", ring_bench.reference(N, dt, gate, shape)))
            rows += list(refs.values())
            for shape, h, d, ws, late in cands:
                try:
                    rows.append(("ring", wide.config(N, dt, (9, 0), gate=gate, shape=shape, hreg=h, wdist=d,
                                                     wsmem=ws, gate_late=late if gate else None, blocks=2)))
                except ValueError as exc:  # shared memory that does not fit two CTAs an SM: said, not timed
                    print(f"# {op} {N} {dt} {shape} h{h} d{d}: {exc}", file=sys.stderr)
            out.append((M_OF[N], N, dt, op, rows))
    return out


ring_bench.plan = plan
ring_bench.NAME_BLOCKS = True
ring_bench.MAX_SPILL_BYTES = 0

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
