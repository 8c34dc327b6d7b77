"""How long a write-the-kernel exercise takes to grade in CPU mode (the emulator), per exercise:
the median and spread over the catalogue's kernels (tests/exercise_catalogue), each graded
``--repeat`` times in this process after one warm-up (NVRTC's first load excluded).

    python benchmarks/exercise_grading_bench.py [--repeat 3] [--out benchmarks/cpu]

Writes ``benchmarks/cpu/cpu-<date>-exercise-grading.json`` (CPU records live apart from the GPU records in
benchmarks/results, which the course reads): one row per exercise (median, p10, p90 seconds over
every kernel graded, the slowest kernel), with the machine's CPU count and the NVRTC version.  A
benchmark record, not a test: the target (5 s median per exercise on a 2-core machine) is checked
here and printed, never asserted in the test suite.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "cpu"))
    args = ap.parse_args(argv)
    os.environ.setdefault("GPU_VIZ_FORCE_CPU", "1")
    from gpu_viz import emulator, exercises as ex
    from gpu_viz.emulator import nvrtc

    sys.path.insert(0, str(ROOT / "tests"))
    import catalogue  # tests/catalogue.py: each kernel exercise's catalogue, by exercise id

    emulator.compile('extern "C" __global__ void warm() {}')     # NVRTC's first load, not timed
    rows = []
    for eid in catalogue.kernel_exercises():
        if eid in catalogue.SHARED:    # graded by the same task as the exercise whose catalogue it shares
            continue
        times, slowest = [], ("", 0.0)
        for f, _expect in catalogue.entries(eid):
            src = f.read_text(encoding="utf-8")
            for _ in range(args.repeat):
                t = time.perf_counter()
                ex.check(eid, src)
                dt = time.perf_counter() - t
                times.append(dt)
                if dt > slowest[1]:
                    slowest = (f.stem, dt)
        med = statistics.median(times)
        rows.append({"exercise": eid, "kernels": len(times) // args.repeat, "median_s": round(med, 3),
                     "p10_s": round(float(np.percentile(times, 10)), 3),
                     "p90_s": round(float(np.percentile(times, 90)), 3),
                     "slowest": slowest[0], "slowest_s": round(slowest[1], 3), "target_s": TARGET_S,
                     "within_target": med <= TARGET_S})
        print(f"{eid:16s} median {med:5.2f} s  p90 {rows[-1]['p90_s']:5.2f} s  slowest {slowest[0]} "
              f"{slowest[1]:.2f} s  {'ok' if med <= TARGET_S else 'OVER the 5 s target'}")
    major, minor = nvrtc.version()
    rec = {"date": datetime.date.today().isoformat(), "machine": f"{os.cpu_count()}-core CPU ({platform.machine()})",
           "python": platform.python_version(), "numpy": np.__version__, "nvrtc": f"{major}.{minor}",
           "what": "write-the-kernel exercises graded in CPU mode (the emulator), the catalogue's kernels",
           "emulator_label": emulator.LABEL, "rows": rows}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    seq = 1   # a later run of the same day is .2, .3 ...: an earlier record is never overwritten
    while (out := out_dir / f"cpu-{rec['date']}{'' if seq == 1 else f'.{seq}'}-exercise-grading.json").exists():
        seq += 1
    with open(out, "x", encoding="utf-8") as fh:
        fh.write(json.dumps(rec, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
