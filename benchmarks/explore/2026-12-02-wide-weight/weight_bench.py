"""The weight's loads in the store step of the shared-memory cluster modes (1 SMEM, 5 MBAR), in
one H200 run: sm_90 SASS of the policy's kernels shows LDG (weight), STG (y), LDG, STG, ... -- each
store's "memory" clobber keeps the next chunk's weight load behind it, so every CTA waits one L2
round trip per chunk before it can finish.  Variants, per shape (every -D of kernels/rmsnorm_wide.cu):

  a   WIDE_WBATCH=1: one weight load per chunk (the kernels before this run)
  b   all of a thread's weight loads, then its stores (WIDE_WBATCH default)
  c   WIDE_WEARLY=1: the weight's slice into registers with x's copies, its latency behind the
      reductions and the cluster exchange
  c2  c with __launch_bounds__' minimum blocks at what the threads allow (registers capped so the
      SM holds as many CTAs as threads and shared memory allow), where that differs from c's and
      ptxas spills nothing

at POLICY's shape (modes 1 and 5) and at MBAR shapes where POLICY runs another mode (the
persistent modes at 262144 and fp32 131072), beside POLICY's own kernel.  Protocol and checks as
explore/2026-12-02-wide-persistent/persist_bench.py: NaN-poisoned output, 128 rows against float64,
rows of op(x[:3]) bit-identical, every variant bit-identical to ``a`` at the same shape; CUDA-graph
replay, 25 replays, median; the copy bandwidth first, in the same process.

    python benchmarks/explore/2026-12-02-wide-weight/weight_bench.py OUT_DIR [--budget-s 200]

Ran once (run1/, H200, 2026-12-02) at commit f466748, whose kernel took -DWIDE_WBATCH=1 (a),
its default (b), -DWIDE_WEARLY=1 (c) and -DWIDE_SUFFIX; the kernel now takes WIDE_WLOAD 0 / 1 / 2
for a / b / c, and gpu_viz.rmsnorm.wide.POLICY_LOADS holds the variant this run chose per shape
(tests/test_rmsnorm_wide.py::test_policy_loads_are_the_recorded_runs_choice), so this script needs
that commit to run again.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES  # noqa: E402

SHAPES = {32768: 16384, 65536: 8192, 131072: 2048, 262144: 1024}  # N -> M: 1 GiB of fp16 x
M5, M1 = wide.MBAR, wide.SMEM
#: (op, element size, N) -> shapes tried beside POLICY's (MBAR where POLICY is persistent)
EXTRA = {("rmsnorm", 2, 262144): ((16, 512, 32, M5), (8, 1024, 32, M5)),
         ("rmsnorm", 4, 131072): ((16, 512, 16, M5), (8, 1024, 16, M5)),
         ("rmsnorm", 4, 262144): ((16, 512, 32, M5), (16, 1024, 16, M5)),
         ("rmsnorm_gate", 4, 262144): ((16, 512, 32, M1), (16, 1024, 16, M1))}


@dataclasses.dataclass(frozen=True)
class Variant(wide.WideConfig):
    """A WideConfig built with extra -D options, its kernel named with a suffix."""
    tag: str = ""
    extra: tuple = ()

    @property
    def kernel(self) -> str:
        return super().kernel + ("_" + self.tag if self.tag else "")

    @property
    def options(self):
        base = tuple(o for o in super().options if not any(o.startswith(e.split("=")[0] + "=") for e in self.extra))
        return base + self.extra + ((f"-DWIDE_SUFFIX=_{self.tag}",) if self.tag else ())


def variants(cfg: wide.WideConfig):
    """[(tag, config)]: a, b, c (and c2 where its launch bound differs) of a mode 1 / 5 config."""
    base = dataclasses.asdict(cfg)
    out = [("a", Variant(**base, tag="a", extra=("-DWIDE_WBATCH=1",))),
           ("b", Variant(**base, tag="b")),
           ("c", Variant(**base, tag="c", extra=("-DWIDE_WEARLY=1",)))]
    most = min(wide.SM_THREADS // cfg.threads, wide.SM_SHARED // (cfg.smem_bytes + wide.CTA_RESERVED_SHARED))
    if most > cfg.min_blocks:
        b2 = dict(base, min_blocks=most)
        out.append(("c2", Variant(**b2, tag="c2", extra=("-DWIDE_WEARLY=1",))))
    return out


def plan():
    out = []
    for N, M in SHAPES.items():
        for dt in ("float16", "bfloat16", "float32"):
            size = DTYPES[dt][1]
            for op in wide.OPS:
                gate = op == "rmsnorm_gate"
                pol = wide.config(N, dt, (9, 0), gate=gate)
                cands = [("policy", pol)]
                shapes = ([tuple(wide.POLICY[op][size][N])] if pol.mode in (M1, M5) else []) + list(
                    EXTRA.get((op, size, N), ()))
                for sh in shapes:
                    try:
                        cfg = wide.config(N, dt, (9, 0), gate=gate, shape=sh)
                    except ValueError:
                        continue
                    cands += variants(cfg)
                if len(cands) > 1:
                    out.append((M, N, dt, op, cands))
    return out


def spills(cfg) -> int:
    from gpu_viz import kernels
    (u,) = kernels.nvcc_compile(wide.FILE, "sm_90", cfg.options)
    return u.spill_stores_bytes + u.spill_loads_bytes


def launch(cfg, x, w, out, gate=None, eps=1e-6):
    import numpy as np
    import torch
    M, N = x.shape
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    dev = x.device.index or 0
    k = wide._kernel(cfg, dev)
    grid = wide.launch_grid(cfg, M, wide._active_clusters(cfg, dev) if cfg.persistent else None)
    args = (np.uint64(out.data_ptr()), np.uint64(rstd.data_ptr()), np.uint64(x.data_ptr()),
            np.uint64(gate.data_ptr() if gate is not None else 0), np.uint64(w.data_ptr()),
            np.int32(N), np.float32(eps), np.float32(0.0), np.int64(M), np.uint64(0))
    wide._launch(k, grid, cfg, args, "torch", dev)
    return rstd


def main(argv) -> int:
    import torch
    from gpu_viz import device as _device
    from gpu_viz.measure import records, timing
    from gpu_viz.rmsnorm import bench

    out_dir = Path(argv[0])
    budget = float(argv[argv.index("--budget-s") + 1]) if "--budget-s" in argv else 200.0
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    p = plan()
    for M, N, dt, op, cands in p:  # no spilling kernel is timed
        cands[:] = [(tag, c) for tag, c in cands if tag != "c2" or spills(c) == 0]
    copy = timing.copy_bandwidth()
    print(f"copy {copy['GBps']:.0f} GB/s", flush=True)
    rec = records.new_record([], copy_GBps=round(copy["GBps"], 1), tag="wide-weight", reps=25, failures=[],
                             skipped=[], configs={})
    rows = rec.pop("rows")
    l2 = _device.current().l2_bytes
    gen = torch.Generator(device="cuda").manual_seed(20261202)
    dev = torch.cuda.current_device()
    for M, N, dt, op, cands in p:
        if time.perf_counter() - t0 > budget:
            rec["skipped"].append(dict(op=op, M=M, N=N, dtype=dt))
            continue
        gate = op == "rmsnorm_gate"
        nbytes = bench.fewest_bytes(op, M, N, dt)
        nsets = timing.rotation_count(nbytes, l2)
        sets = bench.make_inputs(op, M, N, dt, "cuda", generator=gen, count=nsets)
        s0, w = sets[0], sets[0]["weight"]
        y = torch.empty_like(s0["x"])
        ints = torch.int16 if DTYPES[dt][1] == 2 else torch.int32
        idx = torch.cat([torch.arange(64), torch.arange(M - 64, M)]).cuda()
        ref_bits = {}
        for tag, cfg in cands:
            name = f"{tag}:{cfg.cluster}x{cfg.threads}x{cfg.ept}m{cfg.mode}"
            key = dict(op=op, impl=name, M=M, N=N, dtype=dt)
            try:
                k = wide._kernel(cfg, dev)
                rec["configs"][f"{name} {op} {dt} {N}"] = dict(cfg.as_dict(), tag=tag, num_regs=int(k.num_regs),
                                                               min_blocks=cfg.min_blocks)
                if tag == "policy":
                    def fn(i):
                        s = sets[i % nsets]
                        wide.forward(s["x"], w, bench.EPS, y, gate=s.get("gate"))
                        return y
                else:
                    def fn(i, cfg=cfg):
                        s = sets[i % nsets]
                        launch(cfg, s["x"], w, y, s.get("gate"))
                        return y
                y.fill_(float("nan"))
                fn(0)
                torch.cuda.synchronize()
                problems = []
                if not bool(torch.isfinite(y).all()):
                    problems.append("non-finite outputs")
                ok, msg = bench.check_rows(op, y[idx], s0["x"][idx], w.float(), s0["gate"][idx] if gate else None,
                                           bench.EPS, dt)
                if not ok:
                    problems.append(msg[:200])
                bits = y.view(ints).clone()
                shp = (cfg.cluster, cfg.threads, cfg.ept, cfg.mode)
                if tag == "a":
                    ref_bits[shp] = bits
                elif tag != "policy" and shp in ref_bits and not torch.equal(ref_bits[shp], bits):
                    problems.append("bits differ from variant a's at the same shape")
                if tag != "policy":
                    part = torch.full((3, N), float("nan"), dtype=y.dtype, device="cuda")
                    launch(cfg, s0["x"][:3], w, part, s0["gate"][:3] if gate else None)
                    torch.cuda.synchronize()
                    if not torch.equal(part.view(ints), bits[:3]):
                        problems.append("rows of op(x[:3]) differ")
                del bits
                if problems:
                    rec["failures"].append(dict(key, reason="; ".join(problems)))
                    print(f"FAIL {op} {name} {M}x{N} {dt}: {problems}", flush=True)
                    continue
                pilot = timing.time_graph(fn, reps=3, calls_per_graph=nsets)
                kc = bench._calls_per_graph(nsets, pilot.median_us)
                t = timing.time_graph(fn, reps=25, warmup=3, calls_per_graph=kc)
                row = bench.make_row(op, name, M, N, dt, t, buffers=nsets, calls_per_graph=kc)
                row["copy_share"] = round(row["GBps"] / copy["GBps"], 4)
                row["regs"] = int(k.num_regs)
                rows.append(row)
                print(f"{op:12s} {name:22s} {M:>6d}x{N:<7d} {dt:9s} {t.median_us:8.1f} us [{t.p10_us:.1f}, "
                      f"{t.p90_us:.1f}] {row['copy_share']:.1%} regs {k.num_regs}", flush=True)
            except Exception as exc:
                rec["failures"].append(dict(key, reason=f"{type(exc).__name__}: {exc}"))
                print(f"FAIL {op} {name} {M}x{N} {dt}: {type(exc).__name__}: {exc}", flush=True)
                torch.cuda.synchronize()
        sets = y = s0 = w = ref_bits = None
        torch.cuda.empty_cache()
        rec["rows"] = rows
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        (out_dir / "weight-record.json").write_text(json.dumps(rec, indent=1) + "\n")
        rec.pop("rows")
    best = {}
    for r in rows:
        k = (r["op"], r["N"], r["dtype"])
        if k not in best or r["median_us"] < best[k]["median_us"]:
            best[k] = r
    for (op, N, dt), r in sorted(best.items()):
        pol = next(x for x in rows if (x["op"], x["N"], x["dtype"]) == (op, N, dt) and x["impl"].startswith("policy"))
        print(f"best {op:12s} {N:7d} {dt:9s} {r['impl']:22s} {r['copy_share']:.1%}  (policy {pol['copy_share']:.1%})",
              flush=True)
    print(f"done in {time.perf_counter() - t0:.0f} s; {len(rec['failures'])} failures", flush=True)
    return 0


if __name__ == "__main__":
    if "--dry-run" in sys.argv:
        n = 0
        for M, N, dt, op, cands in plan():
            cands = [(t, c) for t, c in cands if t != "c2" or spills(c) == 0]
            n += len(cands)
            print(op, M, N, dt, [f"{t}:{c.cluster}x{c.threads}x{c.ept}m{c.mode}/mb{c.min_blocks}" for t, c in cands])
        print(n, "configurations")
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
