"""Every mode of the cluster path (gpu_viz.rmsnorm.wide: 0-2 measured on 2026-12-01, 3-5 new and
unmeasured) at the wide shapes, kernel-only, in one run on an H200; writes one record in
DESIGN.md section 5's format plus a proposed POLICY.

    python benchmarks/explore/2026-12-02-wide-persistent/persist_bench.py OUT_DIR [--reps 25] [--budget-s 140]
    python benchmarks/explore/2026-12-02-wide-persistent/persist_bench.py --dry-run   (no GPU: the plan
                                                                                         and its time)

Plan (:func:`plan`): for each shape (M x N = 1 GiB of fp16 x; 16384x32768 .. 1024x262144, and
8192x40000 fp16, a partly filled bucket) x dtype (fp16, bf16, fp32) x op (rmsnorm,
rmsnorm_gate): every measured candidate (wide.CANDIDATES, modes 0-2) and every new one
(wide.NEW_CANDIDATES, modes 3-5: PERSIST, PERSIST_1, MBAR).  At 40000 the policy's shape and the
new candidates only.

Each configuration is checked before it is timed: NaN-poisoned output, every element finite,
128 rows against float64 (gpu_viz.rmsnorm.bench.check_rows, the one tolerance table), rows of
forward(x[:3]) bit-identical to forward(x)'s, and for modes 3-5 the whole output bit-identical
to mode 1's at the same (cluster, threads, ept) (the same reduction order: wide.reduction_order).
Failures are logged and the run goes on.  Timing: CUDA-graph replay
(gpu_viz.measure.timing.time_graph), input sets rotated beyond 3x L2 (one 1 GiB set already
is), a pilot for the calls per replay, then ``--reps`` replays (>= 20), median, p10, p90.  The
copy bandwidth (1 GiB device-to-device) is measured first in the same process.  The record
is rewritten after every shape, so a run cut by its time limit keeps what it measured; past
``--budget-s`` the remaining shapes are skipped and named in the record.

Proposed POLICY (:func:`propose_policy`): per (op, element size, bucket) the shape with the
least summed median over the dtypes of that size that passed every check; a proposal to read,
not applied to gpu_viz/rmsnorm/wide.py by this script.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES, bytes_moved  # noqa: E402

SHAPES = ((16384, 32768), (8192, 65536), (2048, 131072), (1024, 262144))
ODD = ((8192, 40000, "float16"),)
DTS = ("float16", "bfloat16", "float32")
OPS = ("rmsnorm", "rmsnorm_gate")
H100 = (9, 0)
#: The dry run's assumptions (not measurements): the H200's copy bandwidth as measured on
#: 2026-12-01 (4,253 GB/s), a kernel at 80 % of it, NVRTC at 0.1 s per kernel with 8 threads
#: (2026-12-01: 128 kernels in 11 s), per configuration 0.15 s of checks, capture and Python,
#: per shape 1.5 s to make its inputs, 25 s of start-up (imports, CUDA context, the copy).
EST_COPY_GBPS = 4253.0
EST_SHARE = 0.80
EST_COMPILE_S = 0.1
EST_CONFIG_S = 0.15
EST_SHAPE_S = 1.5
EST_START_S = 25.0


def _bucket(size: int, n: int) -> int:
    return min(b for b in wide.CANDIDATES[size] if b >= n)


def impl_name(shape) -> str:
    c, t, e, m = shape
    return f"wide_c{c}_t{t}_e{e}_m{m}"


def plan():
    """[(M, N, dtype, op, [shape, ...])]: what the run checks and times, in order."""
    out = []
    for (M, N) in SHAPES:
        for dt in DTS:
            size = DTYPES[dt][1]
            for op in OPS:
                b = _bucket(size, N)
                shapes = list(wide.CANDIDATES[size][b]) + list(wide.NEW_CANDIDATES[op][size][b])
                out.append((M, N, dt, op, list(dict.fromkeys(shapes))))
    for (M, N, dt) in ODD:
        size = DTYPES[dt][1]
        for op in OPS:
            b = _bucket(size, N)
            shapes = [wide.POLICY[op][size][b]] + list(wide.NEW_CANDIDATES[op][size][b])
            out.append((M, N, dt, op, list(dict.fromkeys(shapes))))
    return out


def configs(p=None):
    """Every distinct WideConfig of the plan (each checked by wide.config: raises on a shape that
    does not fit)."""
    cfgs = []
    for M, N, dt, op, shapes in (p or plan()):
        for sh in shapes:
            cfgs.append(wide.config(N, dt, H100, gate=op == "rmsnorm_gate", shape=sh))
    return list(dict.fromkeys(cfgs))


def fewest_bytes(op: str, M: int, N: int, dt: str) -> int:
    """The bytes the op must move (gpu_viz.rmsnorm.dtypes.bytes_moved, as the record's GBps)."""
    return bytes_moved(M, N, dt, gate=op == "rmsnorm_gate")


def calls_per_graph(call_us: float, target_us: float = 1000.0, most: int = 64) -> int:
    """As gpu_viz.rmsnorm.bench._calls_per_graph for one input set (every shape here: 1 GiB)."""
    return int(min(most, max(1, math.ceil(target_us / max(call_us, 1e-3)))))


def estimate(p=None, reps: int = 25) -> dict:
    """The run's time from the assumptions above (EST_*): per configuration a 3-replay pilot, 3
    warm-up replays and ``reps`` replays of calls_per_graph calls; compile; inputs; start."""
    p = p or plan()
    timing_s = 0.0
    n_cfg = 0
    for M, N, dt, op, shapes in p:
        call_us = fewest_bytes(op, M, N, dt) / (EST_SHARE * EST_COPY_GBPS * 1e3)
        k = calls_per_graph(call_us)
        per = (3 * 1 + (3 + reps) * k) * call_us * 1e-6 + EST_CONFIG_S
        timing_s += per * len(shapes)
        n_cfg += len(shapes)
    n_kernels = len(configs(p))
    compile_s = n_kernels * EST_COMPILE_S
    total = EST_START_S + compile_s + timing_s + EST_SHAPE_S * len(p)
    return {"shapes": len(p), "configurations": n_cfg, "kernels": n_kernels, "compile_s": round(compile_s, 1),
            "timing_s": round(timing_s, 1), "inputs_s": round(EST_SHAPE_S * len(p), 1), "start_s": EST_START_S,
            "total_s": round(total, 1)}


def propose_policy(rows, failures=()):
    """{op: {size: {bucket: [c, t, e, mode]}}}: per (op, element size, bucket) the shape whose
    summed median over the dtypes of that size is least, among the shapes timed for every one of
    those dtypes at the bucket's own N (not 40000) and never failing a check."""
    failed = {(f["op"], f["N"], f["dtype"], f["impl"]) for f in failures}
    table = {}
    for r in rows:
        if not r["impl"].startswith("wide_c") or r["N"] not in wide.CANDIDATES[DTYPES[r["dtype"]][1]]:
            continue
        if (r["op"], r["N"], r["dtype"], r["impl"]) in failed:
            continue
        size = DTYPES[r["dtype"]][1]
        table.setdefault((r["op"], size, r["N"]), {}).setdefault(r["impl"], {})[r["dtype"]] = r["median_us"]
    out = {}
    for (op, size, n), impls in sorted(table.items()):
        dts = [d for d in DTS if DTYPES[d][1] == size]
        full = {i: sum(v.values()) for i, v in impls.items() if all(d in v for d in dts)}
        if not full:
            continue
        best = min(full, key=full.get)
        shape = [int(part[1:]) for part in best[len("wide_"):].split("_")]
        out.setdefault(op, {}).setdefault(size, {})[n] = shape
    return out


def dry_run(reps: int) -> int:
    p = plan()
    for M, N, dt, op, shapes in p:
        print(f"{op:12s} {M:>6d}x{N:<7d} {dt:9s} {len(shapes):2d} shapes: "
              + " ".join(impl_name(s)[5:] for s in shapes))
    est = estimate(p, reps)
    print(json.dumps(est))
    print(f"estimated bench time {est['total_s']:.0f} s (assumptions EST_* in this file, not measurements)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--budget-s", type=float, default=140.0, help="skip the remaining shapes after this")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if args.reps < 20:
        ap.error(f"--reps must be >= 20 (medians of at least 20 replays), got {args.reps}")
    if args.dry_run:
        return dry_run(args.reps)
    if not args.out:
        ap.error("OUT_DIR is required unless --dry-run")
    return run(Path(args.out), args.reps, args.budget_s)


def run(out_dir: Path, reps: int, budget_s: float) -> int:
    import torch

    from gpu_viz import device as _device
    from gpu_viz.measure import records, timing
    from gpu_viz.rmsnorm import bench

    t0 = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    cc = torch.cuda.get_device_capability()
    dev = torch.cuda.current_device()
    l2 = _device.current().l2_bytes
    copy = timing.copy_bandwidth()
    print(f"copy {copy['GBps']:.0f} GB/s", flush=True)
    rec = records.new_record([], copy_GBps=round(copy["GBps"], 1), tag="wide-persistent", reps=reps,
                             failures=[], configs={}, skipped=[], checks=[])
    rows = rec.pop("rows")
    gen = torch.Generator(device="cuda").manual_seed(20261202)

    def save():
        rec["rows"] = rows
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        rec["proposed_policy"] = propose_policy(rows, rec["failures"])
        (out_dir / "persist-record.json").write_text(json.dumps(rec, indent=1) + "\n")
        rec.pop("rows")

    p = plan()
    from concurrent.futures import ThreadPoolExecutor

    def build(cfg):
        try:
            wide._kernel(cfg, dev)
        except Exception as exc:  # logged; the shape's check fails later with the same error
            print(f"compile {cfg.kernel}: {type(exc).__name__}: {exc}", flush=True)
    todo = configs(p)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(build, todo))
    print(f"compiled {len(todo)} cluster kernels in {time.perf_counter() - t0:.0f} s", flush=True)
    for M, N, dt, op, shapes in p:
        if time.perf_counter() - t0 > budget_s:
            rec["skipped"].append(dict(op=op, M=M, N=N, dtype=dt, reason=f"past --budget-s {budget_s}"))
            print(f"skip {op} {M}x{N} {dt}: past the {budget_s:.0f} s budget", flush=True)
            continue
        gate = op == "rmsnorm_gate"
        size = DTYPES[dt][1]
        nbytes = bench.fewest_bytes(op, M, N, dt)
        nsets = timing.rotation_count(nbytes, l2)
        sets = bench.make_inputs(op, M, N, dt, "cuda", generator=gen, count=nsets)
        w = sets[0]["weight"]
        s0 = sets[0]
        out = torch.empty(M, N, dtype=s0["x"].dtype, device="cuda")
        twin_out = torch.empty_like(out)
        ints = torch.int16 if size == 2 else torch.int32
        idx = torch.cat([torch.arange(64), torch.arange(M - 64, M)]).cuda()
        for shape in shapes:
            impl = impl_name(shape)
            key = dict(op=op, impl=impl, M=M, N=N, dtype=dt)
            try:
                cfg = wide.config(N, dt, cc, gate=gate, shape=shape)
                entry = cfg.as_dict()
                try:
                    k = wide._kernel(cfg, dev)
                    entry.update(num_regs=int(k.num_regs), local_bytes=int(k.local_size_bytes),
                                 max_active_clusters=wide.max_active_clusters(cfg, dev))
                    if cfg.persistent:
                        entry["grid_blocks"] = wide.launch_grid(cfg, M, entry["max_active_clusters"])
                except Exception as exc:
                    entry["attributes_error"] = f"{type(exc).__name__}: {exc}"
                rec["configs"][f"{impl} {op} {dt} {N}"] = entry

                def fn(i, shape=shape):
                    s = sets[i % nsets]
                    wide.forward(s["x"], w, bench.EPS, out, gate=s.get("gate"), shape=shape)
                    return out
                out.fill_(float("nan"))
                y = fn(0)
                torch.cuda.synchronize()
                problems = []
                if not bool(torch.isfinite(y).all()):
                    problems.append(f"{int((~torch.isfinite(y)).sum())} non-finite outputs")
                ok, msg = bench.check_rows(op, y[idx], s0["x"][idx], w.float(), s0["gate"][idx] if gate else None,
                                           bench.EPS, dt)
                if not ok:
                    problems.append(msg[:300])
                part = torch.full((3, N), float("nan"), dtype=y.dtype, device="cuda")
                wide.forward(s0["x"][:3], w, bench.EPS, part, gate=s0["gate"][:3] if gate else None, shape=shape)
                torch.cuda.synchronize()
                if not torch.equal(part.view(ints), y[:3].view(ints)):
                    problems.append("batch invariance: rows of forward(x[:3]) differ from forward(x)'s")
                if shape[3] in (wide.PERSIST, wide.PERSIST_1, wide.MBAR):
                    twin_out.fill_(float("nan"))
                    wide.forward(s0["x"], w, bench.EPS, twin_out, gate=s0.get("gate"), shape=shape[:3] + (wide.SMEM,))
                    torch.cuda.synchronize()
                    same = torch.equal(twin_out.view(ints), y.view(ints))
                    rec["checks"].append(dict(key, same_bits_as_mode1=bool(same)))
                    if not same:
                        problems.append("output differs from mode 1's at the same (cluster, threads, ept)")
                if problems:
                    rec["failures"].append(dict(key, reason="; ".join(problems)))
                    print(f"FAIL {op} {impl} {M}x{N} {dt}: {problems}", flush=True)
                    continue
                pilot = timing.time_graph(fn, reps=3, calls_per_graph=nsets)
                kcalls = bench._calls_per_graph(nsets, pilot.median_us)
                t = timing.time_graph(fn, reps=reps, warmup=3, calls_per_graph=kcalls)
                row = bench.make_row(op, impl, M, N, dt, t, buffers=nsets, calls_per_graph=kcalls)
                row["copy_share"] = round(row["GBps"] / copy["GBps"], 4)
                row["mode"] = shape[3]
                rows.append(row)
                print(f"{op:12s} {impl:22s} {M:>6d}x{N:<7d} {dt:9s} {t.median_us:9.1f} us "
                      f"[{t.p10_us:.1f}, {t.p90_us:.1f}] {row['GBps']:7.0f} GB/s {row['copy_share']:.1%}", flush=True)
            except Exception as exc:  # log, go on
                rec["failures"].append(dict(key, reason=f"{type(exc).__name__}: {exc}"))
                print(f"FAIL {op} {impl} {M}x{N} {dt}: {type(exc).__name__}: {exc}", flush=True)
                traceback.print_exc()
                try:
                    torch.cuda.synchronize()
                except Exception as exc2:
                    print(f"  synchronize after the failure: {exc2}", flush=True)
        sets = out = twin_out = s0 = w = None
        torch.cuda.empty_cache()
        save()
    rec["complete"] = not rec["skipped"]
    save()
    # per (op, shape, dtype): the best of modes 0-2 against the best of modes 3-5, last in the log
    best = {}
    for r in rows:
        k = (r["op"], r["M"], r["N"], r["dtype"], r["mode"] >= wide.PERSIST)
        if k not in best or r["median_us"] < best[k]["median_us"]:
            best[k] = r
    for (op, M, N, dt, new), r in sorted(best.items()):
        if new:
            old = best.get((op, M, N, dt, False))
            print(f"best {op:12s} {M}x{N} {dt:9s} new {r['impl']:22s} {r['copy_share']:.1%}"
                  + (f"  old {old['impl']:22s} {old['copy_share']:.1%}" if old else ""), flush=True)
    print("proposed POLICY: " + json.dumps(propose_policy(rows, rec["failures"])), flush=True)
    print(f"done in {time.perf_counter() - t0:.0f} s; {len(rec['failures'])} failures, "
          f"{len(rec['skipped'])} shapes skipped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
