"""RING and RING_L2 (kernels/rmsnorm_wide.cu, modes 7 and 8) at the wide points under 90 % of
copy, in one H200 run.

Why these modes: cuOccupancyMaxActiveClusters says a 16-CTA cluster leaves 15 % of the H200's CTA
slots empty at any CTAs per SM (7 clusters of 16 at one CTA an SM: 112 of 132 SMs), and every
262144 kernel so far -- one row per cluster or persistent, any weight load -- measured 83-84 % of
copy; 8-CTA clusters leave 9 % (6 % at 2 or 4 CTAs an SM).  Eight CTAs a row at 262144 (and four
at 131072) need a slice of 64-128 KiB a CTA, too much to double-buffer in shared memory at 1024
threads; RING keeps the slice in registers (at most 32 a thread) and streams the following chunks,
the next row's first ones among them, through a small ring of shared-memory slots, each thread its
own cp.async pipeline.  Candidates per point: 8- and 4-CTA clusters of 1024 threads (one CTA an
SM) and of 512 threads (two), ring depths 2-8, the weight's slice in shared memory (RING) or read
from L2 one chunk ahead (RING_L2); beside them the policy's kernel and mode 1 (SMEM) or 0
(REGISTERS) at each candidate's (cluster, threads, ept) -- the bits every candidate must equal.

Protocol and checks as explore/2026-12-02-wide-weight/weight_bench.py: NaN-poisoned output,
128 rows against float64, rows of op(x[:3]) bit-identical to op(x)'s, every candidate
bit-identical to the reference at its shape; CUDA-graph replay over input sets beyond L2, 25
replays, median; the copy bandwidth first, in the same process; no kernel that spills is timed.

    python benchmarks/explore/2026-12-02-wide-ring/ring_bench.py OUT_DIR [--budget-s 420]
    python benchmarks/explore/2026-12-02-wide-ring/ring_bench.py --dry-run
    python benchmarks/explore/2026-12-02-wide-ring/ring_bench.py OUT_DIR --hybrid   (run2: HYBRID)
    python benchmarks/explore/2026-12-02-wide-ring/ring_bench.py OUT_DIR --tune     (run3: its hreg, wdist)

("ring" in a row's tag names every candidate of the run, HYBRID's included.)  A candidate's
parameters are a ring depth or (hreg, wdist[, blocks[, gate_late]]): a launch bound of its own where given
(explore/2026-12-02-wide-occupancy runs this file's main with its own table); every non-policy
row is launched with its configuration's launch bound (the runs above: the computed one).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES  # noqa: E402

SHAPES = {131072: 2048, 262144: 1024}  # N -> M: 1 GiB of fp16 x, as the bench's wide rows
R, RL = wide.RING, wide.RING_L2
#: (op, element size, N) -> [((cluster, threads, ept, mode), ring)]
CANDS = {
    ("rmsnorm", 2, 262144): [((8, 1024, 32, R), 4), ((8, 1024, 32, R), 8), ((8, 1024, 32, RL), 4),
                             ((8, 1024, 32, RL), 8), ((4, 1024, 64, R), 4), ((4, 1024, 64, RL), 4),
                             ((4, 1024, 64, RL), 8), ((8, 512, 64, R), 4)],
    ("rmsnorm", 4, 262144): [((8, 1024, 32, R), 2), ((8, 1024, 32, R), 4), ((8, 1024, 32, RL), 4),
                             ((8, 1024, 32, RL), 8)],
    ("rmsnorm", 4, 131072): [((4, 1024, 32, R), 4), ((4, 1024, 32, RL), 4), ((4, 1024, 32, RL), 8),
                             ((8, 1024, 16, R), 4), ((8, 1024, 16, R), 8), ((8, 512, 32, R), 4)],
    ("rmsnorm_gate", 2, 131072): [((4, 1024, 32, R), 2), ((4, 1024, 32, R), 4), ((4, 1024, 32, RL), 4),
                                  ((4, 1024, 32, RL), 6), ((8, 1024, 16, R), 4), ((8, 512, 32, R), 4)],
    ("rmsnorm_gate", 2, 262144): [((8, 1024, 32, R), 4), ((8, 1024, 32, RL), 4), ((8, 1024, 32, RL), 6)],
    ("rmsnorm_gate", 4, 262144): [((8, 1024, 32, R), 2), ((8, 1024, 32, R), 3), ((8, 1024, 32, RL), 4),
                                  ((8, 1024, 32, RL), 6)],
}
#: run2: HYBRID (mode 9, one row per cluster, half a thread's chunks in registers, half in shared
#: memory), for 4-CTA clusters at two CTAs an SM where the slice is 128 KiB, and 8-CTA ones
H = wide.HYBRID
HYBRID_CANDS = {
    ("rmsnorm", 2, 262144): [((4, 512, 128, H), None), ((8, 512, 64, H), None)],
    ("rmsnorm", 4, 262144): [((8, 512, 64, H), None), ((4, 1024, 64, H), None)],
    ("rmsnorm", 4, 131072): [((4, 512, 64, H), None), ((8, 512, 32, H), None)],
    ("rmsnorm_gate", 2, 131072): [((4, 512, 64, H), None), ((8, 512, 32, H), None)],
    ("rmsnorm_gate", 2, 262144): [((8, 512, 64, H), None), ((8, 1024, 32, H), None)],
    ("rmsnorm_gate", 4, 262144): [((8, 1024, 32, H), None)],
}
#: run3: HYBRID's chunks in registers (hreg) and the weight's distance (wdist): fewer chunks in
#: registers leave registers for the weight's loads to run further ahead of the stores
#: [((cluster, threads, ept, mode), (hreg, wdist))]
TUNE_CANDS = {
    ("rmsnorm", 2, 262144): [((4, 512, 128, H), (8, 1)), ((4, 512, 128, H), (4, 2)), ((4, 512, 128, H), (4, 3)),
                             ((4, 512, 128, H), (2, 4)), ((4, 512, 128, H), (2, 6))],
    ("rmsnorm", 4, 262144): [((8, 512, 64, H), (8, 1)), ((8, 512, 64, H), (4, 4)), ((8, 512, 64, H), (2, 4))],
    ("rmsnorm", 4, 131072): [((4, 512, 64, H), (8, 1)), ((4, 512, 64, H), (4, 2)), ((4, 512, 64, H), (4, 4)),
                             ((4, 512, 64, H), (2, 4))],
    ("rmsnorm_gate", 2, 131072): [((4, 512, 64, H), (4, 1)), ((4, 512, 64, H), (3, 2)), ((4, 512, 64, H), (2, 2)),
                                  ((4, 512, 64, H), (2, 4))],
    ("rmsnorm_gate", 2, 262144): [((8, 512, 64, H), (2, 2)), ((8, 512, 64, H), (2, 4))],
}
if "--tune" in sys.argv:
    CANDS = TUNE_CANDS
elif "--hybrid" in sys.argv:  # run2: the hybrid shapes, with the ring's best of run1 beside them
    RING_BEST = {("rmsnorm", 2, 262144): ((8, 1024, 32, R), 4), ("rmsnorm", 4, 262144): ((8, 1024, 32, R), 4),
                 ("rmsnorm", 4, 131072): ((8, 1024, 16, R), 4), ("rmsnorm_gate", 2, 131072): ((8, 1024, 16, R), 4),
                 ("rmsnorm_gate", 2, 262144): ((8, 1024, 32, RL), 4), ("rmsnorm_gate", 4, 262144): ((8, 1024, 32, R), 3)}
    CANDS = {k: [RING_BEST[k]] + v for k, v in HYBRID_CANDS.items()}


def reference(N, dt, gate, shape):
    """Mode 1 (SMEM) at the shape's (cluster, threads, ept), or mode 0 (REGISTERS) where mode 1's
    shared memory does not fit: the bits a candidate must give (every mode sums in one order)."""
    c, t, e, _ = shape
    for mode in (wide.SMEM, wide.REGISTERS):
        try:
            return wide.config(N, dt, (9, 0), gate=gate, shape=(c, t, e, mode))
        except ValueError:
            continue
    raise ValueError(f"no reference for {shape}")


def plan():
    out = []
    for N, M in SHAPES.items():
        for dt in ("float16", "bfloat16", "float32"):
            size = DTYPES[dt][1]
            for op in wide.OPS:
                cands = CANDS.get((op, size, N))
                if not cands:
                    continue
                gate = op == "rmsnorm_gate"
                rows = [("policy", wide.config(N, dt, (9, 0), gate=gate))]
                refs = {}
                for shape, ring in cands:
                    refs.setdefault(shape[:3], ("ref", reference(N, dt, gate, shape)))
                rows += list(refs.values())
                for shape, ring in cands:
                    hw = dict(hreg=ring[0], wdist=ring[1]) if isinstance(ring, tuple) else dict(ring=ring)
                    if isinstance(ring, tuple) and len(ring) > 2 and ring[2]:  # a launch bound of its own
                        hw["blocks"] = ring[2]
                    if isinstance(ring, tuple) and len(ring) > 3 and ring[3]:  # the gate read in the last step
                        hw["gate_late"] = True
                    if isinstance(ring, tuple) and len(ring) > 4 and ring[4]:  # the first wave's stagger (ns)
                        hw["stagger_ns"] = ring[4]
                    try:
                        rows.append(("ring", wide.config(N, dt, (9, 0), gate=gate, shape=shape, **hw)))
                    except ValueError as exc:  # a shape whose shared memory does not fit: said, not timed
                        print(f"# {op} {N} {dt} {shape}: {exc}", file=sys.stderr)
                out.append((M, N, dt, op, rows))
    return out


def spills(cfg) -> int:
    from gpu_viz import kernels
    (u,) = kernels.nvcc_compile(wide.FILE, "sm_90", cfg.options)
    return u.spill_stores_bytes + u.spill_loads_bytes


#: The modes that take hreg / wdist (HYBRID; SPLIT_HYBRID where the package has it, 2026-12-03).
_HYBRIDS = getattr(wide, "HYBRID_MODES", (wide.HYBRID,))
#: Whether a HYBRID row's name ends in its launch bound, b<min blocks> (runs after run3 set it).
NAME_BLOCKS = False
#: The most spill bytes (stores + loads, ptxas) of a candidate that is still timed (these runs: 0;
#: explore/2026-12-02-wide-late-gate: 32, its rows carrying the count).
MAX_SPILL_BYTES = 0


def name_of(tag, cfg):
    return f"{tag}:{cfg.cluster}x{cfg.threads}x{cfg.ept}m{cfg.mode}" + (
        f"r{cfg.ring}" if cfg.ring else f"h{cfg.hreg}d{cfg.wdist}" + ("g" if cfg.gate_late else "")
        if cfg.mode in _HYBRIDS else "") + (
        f"b{cfg.min_blocks}" if NAME_BLOCKS and cfg.mode in _HYBRIDS else "") + (
        f"s{cfg.stagger_ns}" if getattr(cfg, "stagger_ns", 0) else "")


def main(argv) -> int:
    import torch
    from gpu_viz import device as _device
    from gpu_viz.measure import records, timing
    from gpu_viz.rmsnorm import bench

    argv = [a for a in argv if a not in ("--hybrid", "--tune")]
    out_dir = Path(argv[0])
    budget = float(argv[argv.index("--budget-s") + 1]) if "--budget-s" in argv else 420.0
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    p = plan()
    # no candidate spilling more than MAX_SPILL_BYTES is timed (the policy and references are not
    # filtered: references may spill, bits only)
    spilled = {c: spills(c) for _, _, _, _, cands in p for tag, c in cands if tag == "ring"}
    for M, N, dt, op, cands in p:
        cands[:] = [(tag, c) for tag, c in cands if tag != "ring" or spilled[c] <= MAX_SPILL_BYTES]
    copy = timing.copy_bandwidth()
    print(f"copy {copy['GBps']:.0f} GB/s", flush=True)
    rec = records.new_record([], copy_GBps=round(copy["GBps"], 1), tag="wide-ring", reps=25, failures=[],
                             skipped=[], configs={})
    rows = rec.pop("rows")
    l2 = _device.current().l2_bytes
    gen = torch.Generator(device="cuda").manual_seed(20261202)
    dev = torch.cuda.current_device()
    for M, N, dt, op, cands in p:
        if time.perf_counter() - t0 > budget:
            rec["skipped"].append(dict(op=op, M=M, N=N, dtype=dt))
            print(f"skipped {op} {M}x{N} {dt}: budget", flush=True)
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
            name = name_of(tag, cfg)
            key = dict(op=op, impl=name, M=M, N=N, dtype=dt)
            shp = (cfg.cluster, cfg.threads, cfg.ept)
            try:
                k = wide._kernel(cfg, dev)
                active = wide.max_active_clusters(cfg, dev)
                rec["configs"][f"{name} {op} {dt} {N}"] = dict(cfg.as_dict(), tag=tag, num_regs=int(k.num_regs),
                                                               max_active_clusters=active)
                shape = None if tag == "policy" else (cfg.cluster, cfg.threads, cfg.ept, cfg.mode)
                kw = {} if tag == "policy" else dict(blocks=cfg.min_blocks, **(
                    dict(ring=cfg.ring) if cfg.mode in wide.RING_MODES else dict(
                        hreg=cfg.hreg, wdist=cfg.wdist, gate_late=cfg.gate_late) if cfg.mode in _HYBRIDS else {}),
                    **(dict(stagger_ns=cfg.stagger_ns) if getattr(cfg, "stagger_ns", 0) else {}),
                    **(dict(wload=cfg.wload) if cfg.mode in wide.WLOAD_MODES else {}))

                def fn(i, shape=shape, kw=kw):
                    s = sets[i % nsets]
                    wide.forward(s["x"], w, bench.EPS, y, gate=s.get("gate"), shape=shape, **kw)
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
                if tag == "ref":
                    ref_bits[shp] = bits
                elif tag == "ring" and not torch.equal(ref_bits[shp], bits):
                    problems.append("bits differ from the reference's at the same (cluster, threads, ept)")
                part = torch.full((3, N), float("nan"), dtype=y.dtype, device="cuda")
                wide.forward(s0["x"][:3], w, bench.EPS, part, gate=s0["gate"][:3] if gate else None, shape=shape, **kw)
                torch.cuda.synchronize()
                if not torch.equal(part.view(ints), bits[:3]):
                    problems.append("rows of op(x[:3]) differ")
                if cfg.persistent:  # a grid of 3 clusters for M rows: other clusters, other rows, same bits
                    y.fill_(float("nan"))
                    wide.forward(s0["x"], w, bench.EPS, y, gate=s0.get("gate"), shape=shape, clusters=3, **kw)
                    torch.cuda.synchronize()
                    if not torch.equal(y.view(ints), bits):
                        problems.append("a 3-cluster grid gives other bits")
                del bits
                if problems:
                    rec["failures"].append(dict(key, reason="; ".join(problems)))
                    print(f"FAIL {op} {name} {M}x{N} {dt}: {problems}", flush=True)
                    continue
                if tag == "ref" and cfg.mode == wide.REGISTERS:
                    continue  # a bits reference only (may spill)
                pilot = timing.time_graph(fn, reps=3, calls_per_graph=nsets)
                kc = bench._calls_per_graph(nsets, pilot.median_us)
                t = timing.time_graph(fn, reps=25, warmup=3, calls_per_graph=kc)
                row = bench.make_row(op, name, M, N, dt, t, buffers=nsets, calls_per_graph=kc)
                row["copy_share"] = round(row["GBps"] / copy["GBps"], 4)
                row["regs"] = int(k.num_regs)
                if cfg in spilled:
                    row["spill_bytes"] = spilled[cfg]
                row["max_active_clusters"] = active
                rows.append(row)
                print(f"{op:12s} {name:26s} {M:>6d}x{N:<7d} {dt:9s} {t.median_us:8.1f} us [{t.p10_us:.1f}, "
                      f"{t.p90_us:.1f}] {row['copy_share']:.1%} regs {k.num_regs} clusters {active}", flush=True)
            except Exception as exc:
                rec["failures"].append(dict(key, reason=f"{type(exc).__name__}: {exc}"))
                print(f"FAIL {op} {name} {M}x{N} {dt}: {type(exc).__name__}: {exc}", flush=True)
                torch.cuda.synchronize()
        sets = y = s0 = w = ref_bits = None
        torch.cuda.empty_cache()
        rec["rows"] = rows
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        (out_dir / "ring-record.json").write_text(json.dumps(rec, indent=1) + "\n")
        rec.pop("rows")
    best = {}
    for r in rows:
        k = (r["op"], r["N"], r["dtype"])
        if k not in best or r["median_us"] < best[k]["median_us"]:
            best[k] = r
    for (op, N, dt), r in sorted(best.items()):
        pol = [x for x in rows if (x["op"], x["N"], x["dtype"]) == (op, N, dt) and x["impl"].startswith("policy")]
        ps = f"{pol[0]['copy_share']:.1%}" if pol else "-"
        print(f"best {op:12s} {N:7d} {dt:9s} {r['impl']:26s} {r['copy_share']:.1%}  (policy {ps})", flush=True)
    print(f"done in {time.perf_counter() - t0:.0f} s; {len(rec['failures'])} failures", flush=True)
    return 0


def dry_run() -> int:
    """Print the plan (what ptxas lets through, what it drops for spills) and time nothing."""
    n = 0
    for M, N, dt, op, cands in plan():
        keep = [(t, c) for t, c in cands if t != "ring" or spills(c) <= MAX_SPILL_BYTES]
        n += len(keep)
        print(op, M, N, dt, [f"{name_of(t, c)}/mb{c.min_blocks}/{c.smem_bytes // 1024}K" for t, c in keep],
              "dropped (spills):", [name_of(t, c) for t, c in cands if (t, c) not in keep])
    print(n, "configurations")
    return 0


if __name__ == "__main__":
    sys.exit(dry_run() if "--dry-run" in sys.argv else main(sys.argv[1:]))
