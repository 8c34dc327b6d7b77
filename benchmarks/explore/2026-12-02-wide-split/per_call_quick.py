"""Per-call rows of issue 18 item 2 alone, with the bench's interleaved protocol
(gpu_viz.measure.timing.time_calls_interleaved through gpu_viz.rmsnorm.bench.run): ours (the C++
launcher, built first) against F.rms_norm, with and without a grad-requiring weight, 1..1024 x
4096, fp16 and bf16; prints each ratio and the count within the targets (1x, 1.5x with grad).

    python benchmarks/explore/2026-12-02-wide-split/per_call_quick.py OUT_DIR
"""
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpu_viz.rmsnorm import bench, fused  # noqa: E402


def main(out: Path) -> int:
    t0 = time.perf_counter()
    print("launcher:", fused.ensure_launcher(), flush=True)
    rows = bench.run("rmsnorm", list(bench.CALL_SHAPES), ("float16", "bfloat16"),
                     providers=("native", "fused", "native_grad", "fused_grad"), timings=("call",))
    out.mkdir(parents=True, exist_ok=True)
    (out / "per-call-quick.json").write_text(json.dumps({"rows": list(rows), "skipped": rows.skipped}, indent=1))
    ok = n = 0
    for r in rows:
        if r["impl"] not in ("fused", "fused_grad"):
            continue
        base = "native" if r["impl"] == "fused" else "native_grad"
        b = next(x for x in rows if x["impl"] == base and x["M"] == r["M"] and x["dtype"] == r["dtype"])
        ratio = r["median_us"] / b["median_us"]
        limit = 1.0 if r["impl"] == "fused" else bench.CALL_GRAD_FACTOR
        n += 1
        ok += ratio <= limit
        print(f"{r['impl']:10s} {r['M']:5d}x4096 {r['dtype']:9s} {r['median_us']:6.2f} vs {b['median_us']:6.2f} µs "
              f"({ratio:.2f}x) [{r['p10_us']:.1f}, {r['p90_us']:.1f}] vs [{b['p10_us']:.1f}, {b['p90_us']:.1f}]"
              f"{'' if ratio <= limit else '  MISS'}", flush=True)
    print(f"per call: {ok} of {n} within target; {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
