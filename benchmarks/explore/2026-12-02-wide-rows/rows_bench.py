"""HYBRID with two (or four) rows a cluster (``rows``, WIDE_ROWS) at rmsnorm's 262144 points, in one
H200 run.

Why: explore/2026-12-02-wide-wsmem's diagnostics (single launches, event-timed) had the policy's
kernels at 262144 gain 4-8 points of copy when the weight was not read at all, and 1.7-2.6 when it
was read for one chunk in two: its L2 reads beside the stores, 1 MiB a row at fp32, are what the
last step waits on, and they take from the loads.  A CTA holding the slices of R rows reads its
weight slice once for R rows.  Each row is summed exactly as before, so its bits are mode 1's at
the same (cluster, threads, ept) whatever row shares its cluster (checked for every candidate,
with op(x[:3]), whose third row is alone in its cluster, against op(x)).

Protocol, checks and row names: ../2026-12-02-wide-ring/ring_bench.py's ``main``; a name ending
in ``x2`` / ``x4`` has that many rows a cluster.

Needs commit 34fca78 (the kernel's WIDE_ROWS, the launcher's ``rows``, ring_bench's handling of
it); a later commit removed them after this run (slower at every point).

    python benchmarks/explore/2026-12-02-wide-rows/rows_bench.py OUT_DIR [--budget-s 300]
    python benchmarks/explore/2026-12-02-wide-rows/rows_bench.py --dry-run
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-12-02-wide-ring"))
import ring_bench  # noqa: E402  (its protocol, checks and row names; its plan replaced below)

wide = ring_bench.wide
H = wide.HYBRID
#: (dtypes, N, M) -> [((cluster, threads, ept, mode), hreg, wdist, rows, blocks)]
CANDS = {
    (("float32",), 262144, 1024): [
        ((16, 512, 32, H), 3, 2, 2, 2), ((16, 512, 32, H), 2, 2, 2, 2), ((16, 512, 32, H), 2, 1, 2, 2),
        ((8, 1024, 32, H), 2, 1, 2, 1), ((8, 1024, 32, H), 1, 2, 2, 1),
        ((8, 512, 64, H), 6, 2, 2, 1), ((8, 512, 64, H), 8, 4, 2, 1)],
    (("float16", "bfloat16"), 262144, 1024): [
        ((8, 1024, 32, H), 1, 1, 2, 2), ((8, 1024, 32, H), 1, 2, 2, 2),
        ((8, 512, 64, H), 3, 2, 2, 2), ((8, 512, 64, H), 2, 2, 2, 2), ((8, 512, 64, H), 4, 1, 2, 2),
        ((4, 1024, 64, H), 2, 2, 2, 1), ((16, 512, 32, H), 2, 1, 4, 2), ((16, 512, 32, H), 1, 2, 4, 2)],
}


def plan():
    out = []
    for (dts, N, M), cands in CANDS.items():
        for dt in dts:
            rows = [("policy", wide.config(N, dt, (9, 0)))]
            refs = {}
            for shape, *_ in cands:
                refs.setdefault(shape[:3], ("ref", ring_bench.reference(N, dt, False, shape)))
            rows += list(refs.values())
            for shape, h, d, r, b in cands:
                try:
                    rows.append(("ring", wide.config(N, dt, (9, 0), shape=shape, hreg=h, wdist=d, rows=r, blocks=b)))
                except ValueError as exc:
                    print(f"# rmsnorm {N} {dt} {shape} h{h} d{d} x{r}: {exc}", file=sys.stderr)
            out.append((M, N, dt, "rmsnorm", rows))
    return out


ring_bench.plan = plan
ring_bench.NAME_BLOCKS = True
ring_bench.MAX_SPILL_BYTES = 0

if __name__ == "__main__":
    sys.exit(ring_bench.dry_run() if "--dry-run" in sys.argv else ring_bench.main(sys.argv[1:]))
