"""The cluster path (gpu_viz.rmsnorm.wide) against the existing fused path and the copy bandwidth,
kernel-only, in one run: writes one record in DESIGN.md section 5's format.

    python benchmarks/explore/2026-12-01-wide/wide_bench.py OUT_DIR [--reps 30]

For each shape x dtype x op: every candidate configuration (wide.CANDIDATES) and the fused op
(gpu_viz.rmsnorm.bench's "fused" provider) are first checked -- NaN-poisoned output, every
element finite where the reference is, 128 rows against float64 with the one tolerance table,
rows of forward(x[:3]) bit-identical to forward(x)'s -- and only the ones that pass are timed:
CUDA-graph replay (gpu_viz.measure.timing.time_graph; input sets rotated beyond 3x L2), median,
p10/p90.  Failures are logged and the run goes on.  The copy bandwidth (1 GiB device copy) is
measured first, in the same process.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

SHAPES = ((16384, 32768), (8192, 65536), (2048, 131072), (1024, 262144))
ODD = ((8192, 40000, "float16"),)  # a partly filled configuration (bucket 65536)
DTS = ("float16", "bfloat16", "float32")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args(argv)
    import torch

    from gpu_viz import device as _device
    from gpu_viz.measure import records, timing
    from gpu_viz.rmsnorm import bench, wide
    from gpu_viz.rmsnorm.dtypes import DTYPES

    t0 = time.perf_counter()
    cc = torch.cuda.get_device_capability()
    l2 = _device.current().l2_bytes
    copy = timing.copy_bandwidth()
    print(f"copy {copy['GBps']:.0f} GB/s", flush=True)
    rec = records.new_record([], copy_GBps=round(copy["GBps"], 1), tag="wide", reps=args.reps,
                             failures=[], configs={})
    rows = rec.pop("rows")
    gen = torch.Generator(device="cuda").manual_seed(20261201)

    def save():
        rec["rows"] = rows
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        with open(f"{args.out}/wide-record.json", "w") as f:
            json.dump(rec, f, indent=1)
        rec.pop("rows")

    plan = [(M, N, dt) for (M, N) in SHAPES for dt in DTS] + list(ODD)
    # compile every kernel up front, 8 at a time (NVRTC; CuPy's disk cache keeps them for the
    # tests and the sanitizer run that follow)
    from concurrent.futures import ThreadPoolExecutor

    from gpu_viz.rmsnorm import fused
    dev = torch.cuda.current_device()
    todo = [wide.config(N, dt, cc, gate=g, shape=sh) for (M, N, dt) in plan for g in (False, True)
            for sh in wide.CANDIDATES[DTYPES[dt][1]][min(b for b in wide.CANDIDATES[DTYPES[dt][1]] if b >= N)]]
    todo += [wide.config(N, "bfloat16", cc, gate=g, weight_dtype="float32") for (M, N, dt) in plan
             for g in (False, True) if dt == "bfloat16"]

    def build(job):
        try:
            if isinstance(job, str):
                fused.get_kernel(fused.kernel_name("rmsnorm", "wide", job, DTYPES[job][2]), job, dev)
            else:
                wide._kernel(job, dev)
        except Exception as exc:
            print(f"compile {job}: {type(exc).__name__}: {exc}", flush=True)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(build, list(dict.fromkeys(todo)) + list(DTS)))
    print(f"compiled {len(set(todo))} cluster kernels in {time.perf_counter() - t0:.0f} s", flush=True)
    for M, N, dt in plan:
        for op in ("rmsnorm", "rmsnorm_gate"):
            gate = op == "rmsnorm_gate"
            nbytes = bench.fewest_bytes(op, M, N, dt)
            nsets = timing.rotation_count(nbytes, l2)
            sets = bench.make_inputs(op, M, N, dt, "cuda", generator=gen, count=nsets)
            w = sets[0]["weight"]
            out = torch.empty(M, N, dtype=sets[0]["x"].dtype, device="cuda")
            size = DTYPES[dt][1]
            bucket = min(b for b in wide.CANDIDATES[size] if b >= N)
            provs = [(f"wide_c{c}_t{t}_e{e}_m{m}", (c, t, e, m)) for c, t, e, m in wide.CANDIDATES[size][bucket]]
            provs.append(("fused", None))
            if dt == "bfloat16":
                provs.append(("wide_w32", "w32"))  # the policy's configuration with an fp32 weight
            for impl, shape in provs:
                key = dict(op=op, impl=impl, M=M, N=N, dtype=dt)
                try:
                    if shape is None:
                        f = bench.setup(op, "fused", w)
                        fn = lambda i, f=f: f(sets[i % nsets])  # noqa: E731
                        wcheck = w
                    else:
                        ww = w.float() if shape == "w32" else w
                        shp = None if shape == "w32" else shape
                        wcheck = ww

                        def fn(i, ww=ww, shp=shp):
                            s = sets[i % nsets]
                            wide.forward(s["x"], ww, bench.EPS, out, gate=s.get("gate"), shape=shp)
                            return out
                        cfg = wide.config(N, dt, cc, gate=gate, weight_dtype=ww.dtype, shape=shp)
                        entry = cfg.as_dict()
                        try:
                            k = wide._kernel(cfg, torch.cuda.current_device())
                            entry.update(num_regs=int(k.num_regs), local_bytes=int(k.local_size_bytes),
                                         max_active_clusters=wide.max_active_clusters(cfg))
                        except Exception as exc:
                            entry["attributes_error"] = f"{type(exc).__name__}: {exc}"
                        rec["configs"][impl + f" {op} {dt} {N}"] = entry
                    # correctness first: poisoned output, all finite, 128 rows vs float64, invariance
                    out.fill_(float("nan"))
                    y = fn(0)
                    torch.cuda.synchronize()
                    problems = []
                    if not bool(torch.isfinite(y).all()):
                        problems.append(f"{int((~torch.isfinite(y)).sum())} non-finite outputs")
                    s0 = sets[0]
                    idx = torch.cat([torch.arange(64), torch.arange(M - 64, M)]).cuda() if M > 128 else torch.arange(M).cuda()
                    ok, msg = bench.check_rows(op, y[idx], s0["x"][idx], wcheck.float(),
                                               s0["gate"][idx] if gate else None, bench.EPS, dt)
                    if not ok:
                        problems.append(msg[:300])
                    if shape is not None:
                        part = torch.full((3, N), float("nan"), dtype=y.dtype, device="cuda")
                        wide.forward(s0["x"][:3], ww, bench.EPS, part, gate=s0["gate"][:3] if gate else None, shape=shp)
                        torch.cuda.synchronize()
                        if not torch.equal(part.view(torch.int16 if size == 2 else torch.int32),
                                           y[:3].view(torch.int16 if size == 2 else torch.int32)):
                            problems.append("batch invariance: rows of forward(x[:3]) differ from forward(x)'s")
                    elif impl == "fused":
                        y = None
                    if problems:
                        rec["failures"].append(dict(key, reason="; ".join(problems)))
                        print(f"FAIL {op} {impl} {M}x{N} {dt}: {problems}", flush=True)
                        continue
                    pilot = timing.time_graph(fn, reps=3, calls_per_graph=nsets)
                    k = bench._calls_per_graph(nsets, pilot.median_us)
                    t = timing.time_graph(fn, reps=args.reps, warmup=3, calls_per_graph=k)
                    row = bench.make_row(op, impl, M, N, dt, t, buffers=nsets, calls_per_graph=k)
                    row["copy_share"] = round(row["GBps"] / copy["GBps"], 4)
                    rows.append(row)
                    print(f"{op:12s} {impl:20s} {M:>6d}x{N:<7d} {dt:9s} {t.median_us:9.1f} us "
                          f"[{t.p10_us:.1f}, {t.p90_us:.1f}] {row['GBps']:7.0f} GB/s {row['copy_share']:.1%}",
                          flush=True)
                except Exception as exc:  # log, go on
                    rec["failures"].append(dict(key, reason=f"{type(exc).__name__}: {exc}"))
                    print(f"FAIL {op} {impl} {M}x{N} {dt}: {type(exc).__name__}: {exc}", flush=True)
                    traceback.print_exc()
                    try:
                        torch.cuda.synchronize()
                    except Exception as exc2:
                        print(f"  synchronize after the failure: {exc2}", flush=True)
            sets = out = None
            torch.cuda.empty_cache()
            save()
    rec["complete"] = True
    save()
    # the best configuration per (op, shape, dtype) against the fused op, last in the log
    best = {}
    for r in rows:
        k = (r["op"], r["M"], r["N"], r["dtype"])
        if r["impl"].startswith("wide_c") and (k not in best or r["median_us"] < best[k]["median_us"]):
            best[k] = r
    for k, r in best.items():
        f = next((q for q in rows if q["impl"] == "fused" and (q["op"], q["M"], q["N"], q["dtype"]) == k), None)
        print(f"best {k[0]:12s} {k[1]}x{k[2]} {k[3]:9s} {r['impl']:24s} {r['copy_share']:.1%}"
              f"  fused {f['copy_share']:.1%}" if f else "", flush=True)
    print(f"done in {time.perf_counter() - t0:.0f} s; {len(rec['failures'])} failures", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
