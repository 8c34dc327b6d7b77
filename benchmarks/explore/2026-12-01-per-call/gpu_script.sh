#!/bin/bash
# The one GPU call of this change (run from the carried folder): GPU tests of the touched ops,
# the focused bench record, compute-sanitizer over the fused ops' script.
set -o pipefail
export PYTHONPATH=$PWD
O=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee $O/log
timeout 120 python3 -m pytest -q -rf -p no:cacheprovider -m gpu tests/test_rmsnorm_invariance.py tests/test_rmsnorm_fused.py 2>&1 | tail -40 | tee -a $O/log
echo "pytest rc=$?" | tee -a $O/log
timeout 95 python3 benchmarks/explore/2026-12-01-per-call/gpu_run.py $O 2>&1 | tee $O/bench.log | tail -5 >> $O/log
echo "bench rc=$?" | tee -a $O/log
for tool in memcheck racecheck; do
  timeout 35 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize/rmsnorm_fused.py > $O/sanitize-$tool.log 2>&1
  echo "sanitize $tool rc=$? $(grep -c '^ok ' $O/sanitize-$tool.log) ok, $(grep -c '^FAIL' $O/sanitize-$tool.log) FAIL; $(tail -1 $O/sanitize-$tool.log)" | tee -a $O/log
done
