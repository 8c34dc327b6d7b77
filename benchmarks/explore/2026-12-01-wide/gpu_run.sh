#!/bin/bash
# The GPU calls of 2026-12-01's wide-row work: bench (record), sanitizer, GPU tests.
# Run from the repository root on the device machine: bash benchmarks/explore/2026-12-01-wide/gpu_run.sh
set -o pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/smi.txt 2>&1
timeout 90 python3 benchmarks/explore/2026-12-01-wide/wide_bench.py $OUT 2>&1 | tee $OUT/bench.log
for tool in memcheck racecheck; do
  echo "== $tool" | tee -a $OUT/sanitize.log
  timeout 35 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize/rmsnorm_wide.py 2>&1 | tee -a $OUT/sanitize.log
  echo "== $tool rc=$?" | tee -a $OUT/sanitize.log
done
timeout 40 python3 -m pytest -q -m gpu tests/test_rmsnorm_wide.py -p no:cacheprovider --timeout 35 2>&1 | tail -40 | tee $OUT/pytest.log
echo "pytest rc=$?"
