"""Time every register-resident launch configuration of the fused ops (GPU machine).

Usage: python benchmarks/explore/scripts/sweep_configs.py [--quick] [--json OUT.json]

For each (op, M, N, dtype) below it times, through the SAME harness as ``gpu-viz bench``
(``gpu_viz.benchmarks.run``: fresh inputs, float64 check before and after, inputs rotated
past 3x L2, "kernel" = CUDA-graph replay, median of the samples):
  * what ``ops.launch_config`` picks, Liger's Triton rms_norm and ``F.rms_norm`` (rmsnorm only);
  * every ``block`` variant at EPT 8/16/32 (block = N / EPT threads) that the kernel's
    bounds allow, forced by replacing ``ops.choose_config`` for that run only.
The device-to-device copy bandwidth of the same run is the yardstick.  Data for
benchmarks/NOTES.md (the chooser's table), not a record.
"""
import argparse
import json
import sys

from gpu_viz import backend, bench, benchmarks, ops

FULL = [
    ("rmsnorm", 16384, 4096, "float16"), ("rmsnorm", 32768, 8192, "float16"),
    ("rmsnorm_gate", 16384, 4096, "float16"), ("rmsnorm_gate", 32768, 8192, "float16"),
    ("rmsnorm", 16384, 4096, "bfloat16"), ("rmsnorm", 32768, 8192, "bfloat16"),
    ("rmsnorm_gate", 16384, 4096, "bfloat16"), ("rmsnorm_gate", 32768, 8192, "bfloat16"),
    ("rmsnorm", 4096, 4096, "float32"), ("rmsnorm_gate", 4096, 4096, "float32"),
    ("rmsnorm", 4096, 4096, "float16"), ("rmsnorm", 4096, 2048, "float16"),
    ("rmsnorm", 128, 4096, "float16"), ("rmsnorm_gate", 128, 4096, "float16"),
    ("rmsnorm", 1024, 768, "float16"), ("rmsnorm", 1, 2048, "bfloat16"),
]
QUICK = FULL[:2]


def candidates(op, M, N, dt):
    vec = ops.DTYPES[dt][2]
    gate = op == "rmsnorm_gate"
    out = []
    for ept in ops.EPT_CHOICES:
        threads = -(-N // ept // 32) * 32
        if 32 <= threads <= ops.BLOCK_MAX_THREADS[ept] and threads * ept >= N:
            out.append((f"block e{ept} x{threads}",
                        ops.forced_config(M, N, dt, variant=ops.BLOCK, block=threads, ept=ept, vec=vec, gate=gate)))
    return out


def timed(op, M, N, dt, providers, reps):
    rows = benchmarks.run(op, [(M, N)], [dt], providers=providers, timings=(bench.KERNEL,), reps=reps)
    for s in rows.skipped:
        print(f"    skipped {s['impl']}: {s['reason'][:100]}", flush=True)
    return {r["impl"]: r for r in rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.reps < 1:
        ap.error(f"--reps must be >= 1, got {a.reps}")
    if a.json:  # fail now, not after the sweep
        try:
            open(a.json, "a").close()
        except OSError as exc:
            ap.error(f"--json {a.json}: cannot write ({exc.strerror})")
    if not backend.has_gpu():  # a GPU-machine script: say so instead of a CUDA traceback
        print(f"sweep_configs: needs a CUDA GPU; {backend.detect().reason}", file=sys.stderr)
        return 2
    copy = bench.copy_bandwidth()["GBps"]
    floor = bench.launch_floor()
    print(f"copy {copy:.0f} GB/s; empty kernel {floor[bench.KERNEL].median_us:.2f} µs", flush=True)
    results = []
    real_choose = ops.choose_config
    for op, M, N, dt in (QUICK if a.quick else FULL):
        nbytes = ops.bytes_moved(M, N, dt, gate=op == "rmsnorm_gate")
        base = ["fused"] + (["liger", "native"] if op == "rmsnorm" else [])
        got = timed(op, M, N, dt, base, a.reps)
        picked = ops.launch_config(M, N, dt, gate=op == "rmsnorm_gate")["kernel"]
        lines = [(f"picked {picked}", got.get("fused"))] + [(p, got.get(p)) for p in base[1:]]
        for name, cfg in candidates(op, M, N, dt):
            ops.choose_config = lambda *args, _cfg=cfg, **kw: _cfg
            try:
                lines.append((name, timed(op, M, N, dt, ["fused"], a.reps).get("fused")))
            except Exception as exc:
                print(f"    {name}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
            finally:
                ops.choose_config = real_choose
        for name, r in lines:
            if r is None:
                print(f"{op:13s} {M:>6d}x{N:<5d} {dt:9s} {name:34s} (not timed)", flush=True)
                continue
            pct = 100 * nbytes / (r["median_us"] * 1e-6) / 1e9 / copy
            print(f"{op:13s} {M:>6d}x{N:<5d} {dt:9s} {name:34s} {r['median_us']:9.2f} µs "
                  f"(p10 {r['p10_us']:.2f}) {pct:5.1f} % of copy", flush=True)
            results.append({"op": op, "M": M, "N": N, "dtype": dt, "config": name, "median_us": r["median_us"],
                            "pct_of_copy": pct, "row": r})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"copy_GBps": copy, "results": results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
