#!/bin/bash
# One device call (~400 s on an H200), from the repository root:
#   1. split_bench.py alone on the GPU (SPLIT beside POLICY at every wide point; <= 230 s),
#   2. SPLIT's GPU tests beside compute-sanitizer's four tools on scripts/sanitize/rmsnorm_wide.py
#      --split (short limits: a wait that never ends would show here, not in a long phase),
#   3. per_call_quick.py (the per-call rows with the interleaved protocol), alone.
# Everything lands in $OUT: smi.txt, bench.log, persist-record.json, pytest.log, san-*.log, per-call*.
set -o pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
H=benchmarks/explore/2026-12-02-wide-split
OUT=${OUT:-/tmp/wide-split}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/smi.txt" 2>&1
python3 -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__)" >> "$OUT/smi.txt" 2>&1
timeout 230 python3 $H/split_bench.py "$OUT" --reps 25 --budget-s 200 > "$OUT/bench.log" 2>&1
echo "bench rc=$?" | tee -a "$OUT/bench.log"
grep -E "^best|FAIL|proposed|done in" "$OUT/bench.log" | tail -40
for tool in memcheck racecheck synccheck initcheck; do
  ( timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize/rmsnorm_wide.py --split \
      > "$OUT/san-$tool.log" 2>&1; echo "== $tool rc=$?" >> "$OUT/san-$tool.log" ) &
done
timeout 200 python3 -m pytest -q -m gpu tests/test_rmsnorm_wide.py tests/test_timing.py -p no:cacheprovider \
    -k "split or interleaved or timings_are_sane" --timeout 150 > "$OUT/pytest.log" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest.log"
wait
tail -3 "$OUT/pytest.log"
for tool in memcheck racecheck synccheck initcheck; do grep -E "SUMMARY|rc=|FAIL" "$OUT/san-$tool.log" | tail -3; done
timeout 150 python3 $H/per_call_quick.py "$OUT" > "$OUT/per-call.log" 2>&1
echo "per-call rc=$?" >> "$OUT/per-call.log"
tail -3 "$OUT/per-call.log"
cd "$OUT" && tar czf logs.tar.gz *.log smi.txt && rm -f san-*.log
