"""The policy's wide kernels built with their dynamic shared memory aligned to 16 bytes (the
uint4's own alignment: the layout until now) and to 128, side by side in one H200 run.

Why: ncu_fp32.py and ncu_sweep.py found every kernel whose static shared memory ends 16 bytes
off a 32-byte sector (all the 8-CTA ones: 112 or 176 bytes) asking L1 for 25 % more sectors per
cp.async copy than it moves (4 bytes a 16-byte copy), and L2 sending the SMs 0.65 GB more than
the kernel reads (2.77 GB against 2.12 GB at fp32 262144): a warp's 512 bytes landing across
five 128-byte rows of shared memory instead of four.  The 4-CTA kernels (160 or 96 bytes, a
32-byte multiple) show none of it.  WIDE_SMEM_ALIGN=128 starts the dynamic window on a 128-byte
boundary (0x80 instead of 0x70 in the fp32 262144 kernel's SASS).

Protocol: for each (op, N, dtype) of the bench's wide rows, the policy's configuration built
twice (WIDE_SMEM_ALIGN 16 and 128), each checked first (NaN-poisoned output, 128 rows against
float64, the two builds' y and rstd bit-identical); then kernel-only time by CUDA-graph replay
over input sets beyond L2, 25 replays, median, the two builds alternated over ``--rounds``
rounds (each round times both); the copy bandwidth first, in the same process.

    python benchmarks/explore/2026-12-03-wide-l2/align_bench.py OUT_DIR [--budget-s 400] [--rounds 2]
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES  # noqa: E402

SHAPES = {32768: 16384, 65536: 8192, 131072: 2048, 262144: 1024}  # the bench's wide rows
ALIGNS = (16, 128)


def main(argv) -> int:
    import torch
    from gpu_viz import device as _device
    from gpu_viz.measure import records, timing
    from gpu_viz.rmsnorm import bench

    out_dir = Path(argv[0])
    budget = float(argv[argv.index("--budget-s") + 1]) if "--budget-s" in argv else 400.0
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 2
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    copy = timing.copy_bandwidth()
    print(f"copy {copy['GBps']:.0f} GB/s", flush=True)
    rec = records.new_record([], copy_GBps=round(copy["GBps"], 1), tag="wide-align", reps=25, failures=[],
                             skipped=[], configs={})
    rows = rec.pop("rows")
    l2 = _device.current().l2_bytes
    gen = torch.Generator(device="cuda").manual_seed(20261203)
    dev = torch.cuda.current_device()
    for N in sorted(SHAPES, reverse=True):  # the misses first
        M = SHAPES[N]
        for dt in ("float32", "float16", "bfloat16"):
            for op in wide.OPS:
                if time.perf_counter() - t0 > budget:
                    rec["skipped"].append(dict(op=op, M=M, N=N, dtype=dt))
                    print(f"skipped {op} {M}x{N} {dt}: budget", flush=True)
                    continue
                gate = op == "rmsnorm_gate"
                cfg = wide.config(N, dt, (9, 0), gate=gate)
                nbytes = bench.fewest_bytes(op, M, N, dt)
                nsets = timing.rotation_count(nbytes, l2)
                sets = bench.make_inputs(op, M, N, dt, "cuda", generator=gen, count=nsets)
                w = sets[0]["weight"]
                ys = [torch.empty_like(sets[0]["x"]) for _ in ALIGNS]
                rstds = [torch.empty(M, dtype=torch.float32, device="cuda") for _ in ALIGNS]
                ints = torch.int16 if DTYPES[dt][1] == 2 else torch.int32
                idx = torch.cat([torch.arange(64), torch.arange(M - 64, M)]).cuda()
                kerns = [wide._kernel(cfg, dev, (f"-DWIDE_SMEM_ALIGN={a}",)) for a in ALIGNS]
                key = dict(op=op, M=M, N=N, dtype=dt, kernel=cfg.kernel)

                def args_of(i, a):
                    s = sets[i % nsets]
                    return (np.uint64(ys[a].data_ptr()), np.uint64(rstds[a].data_ptr()), np.uint64(s["x"].data_ptr()),
                            np.uint64(s["gate"].data_ptr() if gate else 0), np.uint64(w.data_ptr()),
                            np.int32(N), np.float32(bench.EPS), np.float32(0.0), np.int64(M))

                def fn_of(a):
                    def fn(i):
                        wide._launch(kerns[a], M * cfg.cluster, cfg, args_of(i, a), "torch", dev)
                        return ys[a]
                    return fn
                fns = [fn_of(a) for a in range(len(ALIGNS))]
                try:
                    problems = []
                    for a in range(len(ALIGNS)):
                        ys[a].fill_(float("nan"))
                        fns[a](0)
                    torch.cuda.synchronize()
                    s0 = sets[0]
                    for a, al in enumerate(ALIGNS):
                        if not bool(torch.isfinite(ys[a]).all()):
                            problems.append(f"align {al}: non-finite outputs")
                        ok, msg = bench.check_rows(op, ys[a][idx], s0["x"][idx], w.float(),
                                                   s0["gate"][idx] if gate else None, bench.EPS, dt)
                        if not ok:
                            problems.append(f"align {al}: {msg[:200]}")
                    if not (torch.equal(ys[0].view(ints), ys[1].view(ints)) and torch.equal(rstds[0], rstds[1])):
                        problems.append("the two builds' bits differ")
                    if problems:
                        rec["failures"].append(dict(key, reason="; ".join(problems)))
                        print(f"FAIL {op} {M}x{N} {dt}: {problems}", flush=True)
                        continue
                    pilot = timing.time_graph(fns[0], reps=3, calls_per_graph=nsets)
                    kc = bench._calls_per_graph(nsets, pilot.median_us)
                    for r in range(rounds):
                        for a, al in enumerate(ALIGNS):
                            t = timing.time_graph(fns[a], reps=25, warmup=3, calls_per_graph=kc)
                            row = bench.make_row(op, f"policy-align{al}", M, N, dt, t, buffers=nsets, calls_per_graph=kc)
                            row["copy_share"] = round(row["GBps"] / copy["GBps"], 4)
                            row["round"] = r
                            row["kernel"] = cfg.kernel
                            rows.append(row)
                            print(f"{op:12s} {cfg.kernel:48s} align {al:3d} r{r} {M:>6d}x{N:<7d} {dt:9s} "
                                  f"{t.median_us:8.1f} us [{t.p10_us:.1f}, {t.p90_us:.1f}] {row['copy_share']:.1%}",
                                  flush=True)
                except Exception as exc:
                    rec["failures"].append(dict(key, reason=f"{type(exc).__name__}: {exc}"))
                    print(f"FAIL {op} {M}x{N} {dt}: {type(exc).__name__}: {exc}", flush=True)
                    torch.cuda.synchronize()
                sets = ys = rstds = w = None
                torch.cuda.empty_cache()
                rec["rows"] = rows
                rec["wall_s"] = round(time.perf_counter() - t0, 1)
                (out_dir / "align-record.json").write_text(json.dumps(rec, indent=1) + "\n")
                rec.pop("rows")
    print(f"done in {time.perf_counter() - t0:.0f} s; {len(rec['failures'])} failures", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
