"""One focused GPU run for issue 18's items 2-3 (the lead's gpu-check re-runs the full record):
copy bandwidth and launch floor, the per-call rows (1..1024 x 4096, fp16/bf16, with and without
a grad-requiring weight, the plan launched by cuLaunchKernel / by CuPy / no plan), kernel-only
rows of the fused op at the record's shapes and the wide ones, and the batch-invariance check.
Every provider is checked against float64 before and after its timing (bench.run).

    python benchmarks/explore/2026-12-01-per-call/gpu_run.py OUTDIR
"""
import sys
import time

from gpu_viz.measure import records, timing as T
from gpu_viz.rmsnorm import bench as B


def main(out):
    t0 = time.perf_counter()
    copy, floor = T.copy_bandwidth(), T.launch_floor()
    rec = records.new_record([], copy_GBps=round(copy["GBps"], 1),
                             launch_floor_us=round(floor["kernel"].median_us, 4),
                             launch_floor_call_us=round(floor["call"].median_us, 4), skipped=[])
    rows = rec.pop("rows")
    print(f"copy {copy['GBps']:.0f} GB/s, floor {floor['kernel'].median_us:.2f} us kernel, "
          f"{floor['call'].median_us:.2f} us call", flush=True)
    rec["batch_invariant"] = B.batch_invariance()
    bad = [c for c in rec["batch_invariant"]["checked"] if not c["ok"]]
    print(f"batch invariance ok={rec['batch_invariant']['ok']} of {len(rec['batch_invariant']['checked'])}; bad: {bad}",
          flush=True)
    steps = [(B.RMSNORM, list(B.CALL_SHAPES), ("float16", "bfloat16"), B.CALL_PROVIDERS[B.RMSNORM], (T.CALL,)),
             (B.RMSNORM_GATE, [(1, 4096), (128, 4096), (1024, 4096)], ("float16",), ("fused", "fused_grad"), (T.CALL,)),
             (B.RMSNORM, [(128, 4096), (1024, 4096), (16384, 4096), (32768, 8192), (4096, 8192), (1024, 8192)],
              ("float16", "bfloat16"), ("native", "fused"), (T.KERNEL,)),
             (B.RMSNORM, [(4096, 4096)], ("float32",), ("native", "fused"), (T.KERNEL,)),
             (B.RMSNORM_GATE, [(128, 4096), (1024, 8192), (16384, 4096), (32768, 8192)], ("float16",), ("fused",), (T.KERNEL,)),
             (B.RMSNORM, list(B.WIDE_SHAPES), ("float16", "bfloat16", "float32"), ("native", "fused"), (T.KERNEL,)),
             (B.RMSNORM_GATE, list(B.WIDE_SHAPES), ("float16",), ("fused",), (T.KERNEL,))]
    for op, shapes, dts, provs, timings in steps:
        for shape in shapes:
            r = B.run(op, [shape], dts, provs, timings=timings, reps=100)
            rows += list(r)
            rec["skipped"] += r.skipped
            for row in r:
                print(f"{row['op']:12s} {row['impl']:16s} {row['M']:>6d}x{row['N']:<6d} {row['dtype']:8s} "
                      f"{row['timing']:6s} {row['median_us']:9.2f} [{row['p10_us']:.2f}, {row['p90_us']:.2f}] "
                      f"{row['GBps']:8.1f} GB/s", flush=True)
            for s in r.skipped:
                print("SKIP", s, flush=True)
            rec["rows"] = rows
            rec["wall_s"] = round(time.perf_counter() - t0, 1)
            records.save_record(rec, tag="per-call-invariance", directory=out)
    print("saved", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
