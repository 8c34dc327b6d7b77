#!/bin/bash
# One device call (<= 240 s on an H200): every mode of the cluster path timed (persist_bench.py,
# hard limit 160 s, it stops starting shapes at 140 s), then compute-sanitizer memcheck (30 s)
# and racecheck (40 s) on one small case per new mode (scripts/sanitize/rmsnorm_wide.py --new).
# Run from the repository root on the device machine:
#     bash benchmarks/explore/2026-12-02-wide-persistent/gpu_run.sh          # bench + sanitizer
#     bash benchmarks/explore/2026-12-02-wide-persistent/gpu_run.sh tests    # the new modes' GPU tests
# Everything lands in $OUT (smi.txt, bench.log, persist-record.json, sanitize.log, pytest.log).
set -o pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
HERE=benchmarks/explore/2026-12-02-wide-persistent
OUT=${OUT:-/tmp/wide-persistent}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/smi.txt" 2>&1
if [ "$1" = "tests" ]; then
  timeout 560 python3 -m pytest -q -m gpu tests/test_rmsnorm_wide.py -p no:cacheprovider \
      -k "new_modes or persistent_grid or new_candidates" --timeout 120 2>&1 | tail -60 | tee "$OUT/pytest.log"
  echo "pytest rc=${PIPESTATUS[0]}" | tee -a "$OUT/pytest.log"
  exit 0
fi
timeout 160 python3 $HERE/persist_bench.py "$OUT" --reps 25 --budget-s 140 2>&1 | tee "$OUT/bench.log"
echo "bench rc=${PIPESTATUS[0]}" | tee -a "$OUT/bench.log"
for tool in memcheck racecheck; do
  limit=30; [ $tool = racecheck ] && limit=40
  echo "== $tool" | tee -a "$OUT/sanitize.log"
  timeout $limit compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize/rmsnorm_wide.py --new 2>&1 \
      | tee -a "$OUT/sanitize.log"
  echo "== $tool rc=${PIPESTATUS[0]}" | tee -a "$OUT/sanitize.log"
done
