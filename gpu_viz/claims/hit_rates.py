"""``gpu-viz record hit-rates`` (optional, needs Nsight Compute's ``ncu``): the L1 and L2 sector
hit rates of notebook 10's two row kernels (:data:`gpu_viz.claims.probes.RESIDENCY_KERNELS`) at
both shapes of :data:`gpu_viz.claims.probes.RESIDENCY_ROWS`.  It is what shows *where* pass 2 of
``rownorm_reread`` found x: a high L1 hit rate means the second read never left the SM.

``ncu`` profiles a child process (``python -m gpu_viz.claims.hit_rates --launch``) that launches
each kernel once per shape; :func:`parse_csv` reads ``ncu --csv`` output.  The record is its own
file, ``<gpu-slug>-<date>-hit-rates.json``, so the probes record never depends on ncu.
"""
from __future__ import annotations

import subprocess
import sys
from typing import Dict, List, Optional

from .. import backend, kernels

#: Sector hit rates of the L1/texture cache and of L2, in percent.
METRICS = {"l1tex__t_sector_hit_rate.pct": "l1_hit_pct", "lts__t_sector_hit_rate.pct": "l2_hit_pct"}


def launch_once() -> None:
    """Launch each row kernel once at each residency shape (the process ncu profiles), in the
    order of :func:`shapes`."""
    from . import probes

    cp = backend.require_cupy("the hit-rate launches")
    w = cp.ones(probes.RESIDENCY_N, cp.float32)
    for _level, M in probes.RESIDENCY_ROWS:
        x = cp.random.standard_normal((M, probes.RESIDENCY_N), dtype=cp.float32)
        for kernel in probes.RESIDENCY_KERNELS:
            probes.rownorm(kernel, x, w)
    cp.cuda.get_current_stream().synchronize()


def shapes() -> List[tuple]:
    """``(level, M, kernel)`` in launch order: the rows ncu's kernels are matched to."""
    from . import probes

    return [(level, M, k) for level, M in probes.RESIDENCY_ROWS for k in probes.RESIDENCY_KERNELS]


def parse_csv(text: str) -> List[Dict]:
    """``ncu --csv --metrics ...`` output -> one dict per profiled kernel launch, in order:
    ``{"kernel": name, "l1_hit_pct": .., "l2_hit_pct": ..}``.  Lines before the CSV header
    (ncu's ``==PROF==`` log) are skipped.

    Raises:
        ValueError: no CSV header with "Metric Name" in ``text``.
    """
    from ..measure import ncu

    return ncu.launches(text, METRICS)


def measure(ncu: Optional[str] = None) -> List[Dict]:
    """Profile :func:`launch_once` under ncu; one row per (level, kernel).

    Raises:
        RuntimeError: no ncu, ncu failed (its last lines), or the launches and the profile disagree.
    """
    ncu = ncu or kernels.find_tool("ncu")
    if not ncu:
        raise RuntimeError("ncu (Nsight Compute) not found: the hit-rate record needs it")
    cmd = [ncu, "--csv", "--metrics", ",".join(METRICS), "--kernel-name", "regex:rownorm_",
           sys.executable, "-m", "gpu_viz.claims.hit_rates", "--launch"]
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=600)
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"ncu failed ({proc.returncode}): {tail[:400]}")
    got, want = parse_csv(proc.stdout), shapes()
    if [g["kernel"] for g in got] != [k for _l, _m, k in want]:
        raise RuntimeError(f"ncu profiled {[g['kernel'] for g in got]}, expected {[k for _l, _m, k in want]}")
    from . import probes

    return [{"op": "hit_rate", "impl": k, "level": level, "M": M, "N": probes.RESIDENCY_N, "timing": "ncu",
             "l1_hit_pct": g.get("l1_hit_pct"), "l2_hit_pct": g.get("l2_hit_pct")}
            for (level, M, k), g in zip(want, got)]


def record(out=None):
    """Measure and save ``<gpu>-<date>-hit-rates.json`` into ``out``; the path."""
    from ..measure import records

    backend.require_gpu("the hit-rate record")
    return records.save_record(records.new_record(measure(), tool="ncu", metrics=list(METRICS)),
                               tag="hit-rates", directory=out)


if __name__ == "__main__" and "--launch" in sys.argv:
    launch_once()
