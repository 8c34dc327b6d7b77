"""Where a wide-row CTA's time goes, from the CTAs' own clocks (kernels/rmsnorm_wide.cu built with
WIDE_PHASES=1: thread 0 of each CTA writes %globaltimer and clock64 at its start, its CTA sum, the
row's rstd and its last store, and %smid).  Seven launches of M rows per configuration after three
untimed ones (``timing.time_calls``: the median of their event times; the last one's stamps; the
runs of 2026-12-02 timed the same launches with a loop of their own, synchronising after each), 1 GiB or more of x (beyond L2), inputs random.

Per configuration it prints:
- the CTAs' median load (start -> CTA sum: the loads landed and were summed), exchange (CTA sum ->
  rstd: the cluster's other sums arrived) and store (rstd -> last store issued) times, in µs;
- the cluster skew: per row, the latest CTA sum minus the earliest (the exchange waits for it);
- per SM, the share of the kernel's span with no CTA of it resident, with at least one CTA in a
  load or store step, and with CTAs resident but every one of them in its exchange;
- the SM clock the CTAs saw (clock64 cycles over %globaltimer ns).
The raw stamps go to OUT_DIR/phases-<kernel>.npy (CTAs x 10 uint64: 4 globaltimer, 4 clock64, smid).

    python benchmarks/explore/2026-12-02-wide-wsmem/phases.py OUT_DIR [--diag]

``--rows`` runs CONFIGS_ROWS (two rows a cluster) instead of CONFIGS.  ``--diag`` runs
CONFIGS_DIAG, ``--diag2`` CONFIGS_DIAG2: the policy's kernels with the timing diagnostics (the weight
never read, y stored without the evict-first policy), whose outputs are wrong: times only.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpu_viz import kernels  # noqa: E402
from gpu_viz.rmsnorm import wide  # noqa: E402

SLOTS = 10
PHASE_CTAS = 65536
#: (label, N, dtype, op, config kwargs, M[, extra -D options: the timing diagnostics, whose output
#: is wrong -- WIDE_DIAG_NOWEIGHT never reads the weight, WIDE_DIAG_PLAINSTORE stores y without the
#: evict-first policy])
NOW, PLAIN = ("-DWIDE_DIAG_NOWEIGHT=1",), ("-DWIDE_DIAG_PLAINSTORE=1",)
CONFIGS_DIAG = [
    (f"{label}{tag}", N, dt, "rmsnorm", {}, M, extra)
    for label, N, dt, M in (("rmsnorm fp32 262144 policy", 262144, "float32", 1024),
                            ("rmsnorm fp16 262144 policy", 262144, "float16", 1024),
                            ("rmsnorm fp32 131072 policy", 131072, "float32", 2048))
    for tag, extra in (("", ()), (" no weight", NOW), (" plain stores", PLAIN), (" no weight, plain stores", NOW + PLAIN))
] + [("gate fp32 262144 policy (g late) no weight", 262144, "float32", "rmsnorm_gate", {}, 1024, NOW)]
#: ``--diag2``: the weight read for one chunk in k (WIDE_DIAG_WEIGHT_EVERY; the rest reuse a pack):
#: what reading it for two rows at once (half its L2 traffic a row) or four could give
CONFIGS_DIAG2 = [
    (f"{label}{tag}", N, dt, "rmsnorm", {}, M, extra)
    for label, N, dt, M in (("rmsnorm fp32 262144 policy", 262144, "float32", 1024),
                            ("rmsnorm fp16 262144 policy", 262144, "float16", 1024),
                            ("rmsnorm bf16 262144 policy", 262144, "bfloat16", 1024))
    for tag, extra in (("", ()), (" weight 1 chunk in 2", ("-DWIDE_DIAG_WEIGHT_EVERY=2",)),
                       (" weight 1 chunk in 4", ("-DWIDE_DIAG_WEIGHT_EVERY=4",)), (" no weight", NOW))
]
#: The policy's kernels (run1's phases also timed two wsmem candidates each at fp32 and fp16 262144:
#: ``dict(shape=..., hreg=6, wdist=4, wsmem=True, blocks=2)`` and the like, which need commit d193b92)
CONFIGS = [
    ("rmsnorm fp32 262144 policy", 262144, "float32", "rmsnorm", {}, 1024),
    ("gate fp32 262144 policy (g late)", 262144, "float32", "rmsnorm_gate", {}, 1024),
    ("rmsnorm fp32 131072 policy", 131072, "float32", "rmsnorm", {}, 2048),
    ("rmsnorm fp16 262144 policy", 262144, "float16", "rmsnorm", {}, 1024),
]

#: ``--rows``: HYBRID with two rows a cluster (explore/2026-12-02-wide-rows) beside the policy's kernels;
#: ran at commit bffd9a2 (the kernel's WIDE_ROWS, the launcher's ``rows``, removed after that run)
CONFIGS_ROWS = [
    ("rmsnorm fp32 262144 policy", 262144, "float32", "rmsnorm", {}, 1024),
    ("rmsnorm fp32 262144 16x512x32 h3 d2 x2", 262144, "float32", "rmsnorm",
     dict(shape=(16, 512, 32, wide.HYBRID), hreg=3, wdist=2, rows=2, blocks=2), 1024),
    ("rmsnorm fp32 262144 8x1024x32 h2 d1 x2", 262144, "float32", "rmsnorm",
     dict(shape=(8, 1024, 32, wide.HYBRID), hreg=2, wdist=1, rows=2, blocks=1), 1024),
    ("rmsnorm fp16 262144 policy", 262144, "float16", "rmsnorm", {}, 1024),
    ("rmsnorm fp16 262144 8x512x64 h3 d2 x2", 262144, "float16", "rmsnorm",
     dict(shape=(8, 512, 64, wide.HYBRID), hreg=3, wdist=2, rows=2, blocks=2), 1024),
]


def analyse(L: np.ndarray, cluster: int, bin_ns: int = 50) -> dict:
    g = L[:, 0:4].astype(np.int64)
    c = L[:, 4:8].astype(np.int64)
    sm = L[:, 8].astype(np.int64)
    g -= g[:, 0].min()
    span = int(g[:, 3].max())
    load, exch, store = g[:, 1] - g[:, 0], g[:, 2] - g[:, 1], g[:, 3] - g[:, 2]
    rows = g.shape[0] // cluster
    g1 = g[: rows * cluster, 1].reshape(rows, cluster)
    g0 = g[: rows * cluster, 0].reshape(rows, cluster)
    skew = g1.max(1) - g1.min(1)
    start_skew = g0.max(1) - g0.min(1)
    ghz = float(np.median((c[:, 3] - c[:, 0]) / np.maximum(g[:, 3] - g[:, 0], 1)))
    # per SM and time bin: CTAs resident, CTAs in a load or store step
    sms = np.unique(sm)
    nb = span // bin_ns + 2
    res = np.zeros((len(sms), nb + 1), np.int32)
    xfer = np.zeros((len(sms), nb + 1), np.int32)
    idx = np.searchsorted(sms, sm)
    b = g // bin_ns
    for lo, hi, arr in ((0, 3, res), (0, 1, xfer), (2, 3, xfer)):
        np.add.at(arr, (idx, b[:, lo]), 1)
        np.add.at(arr, (idx, b[:, hi]), -1)
    res = np.cumsum(res, 1)[:, :nb]
    xfer = np.cumsum(xfer, 1)[:, :nb]
    empty = float((res == 0).mean())
    streaming = float((xfer > 0).mean())
    all_wait = float(((res > 0) & (xfer == 0)).mean())
    active = (res > 0).sum(0)
    q = lambda a: [round(float(np.percentile(a, p)) / 1000, 2) for p in (10, 50, 90)]  # noqa: E731
    return dict(ctas=int(g.shape[0]), sms=int(len(sms)), span_us=round(span / 1000, 1),
                load_us=q(load), exchange_us=q(exch), store_us=q(store), cluster_skew_us=q(skew),
                cluster_start_skew_us=q(start_skew), sm_clock_ghz=round(ghz, 3),
                sm_share_empty=round(empty, 4), sm_share_streaming=round(streaming, 4),
                sm_share_all_in_exchange=round(all_wait, 4),
                sms_busy_median=int(np.median(active)), tail_us_below_90pct_sms=round(
                    float((active < 0.9 * len(sms)).sum() * bin_ns) / 1000, 1))


def main(argv) -> int:
    import cupy

    out_dir = Path([a for a in argv if not a.startswith("--")][0])
    out_dir.mkdir(parents=True, exist_ok=True)
    from gpu_viz.measure import timing

    copy = timing.copy_bandwidth()
    print(f"copy {copy['GBps']:.0f} GB/s", flush=True)
    results = {"copy_GBps": round(copy["GBps"], 1)}
    configs = (CONFIGS_DIAG if "--diag" in argv else CONFIGS_DIAG2 if "--diag2" in argv
               else CONFIGS_ROWS if "--rows" in argv else CONFIGS)
    for label, N, dt, op, kw, M, *extra in configs:
        cfg = wide.config(N, dt, (9, 0), gate=op == "rmsnorm_gate", **kw)
        opts = ("-DWIDE_PHASES=1",) + (extra[0] if extra else ())
        k = wide._kernel(cfg, 0, opts)  # the launcher's kernel set-up (shared memory, 16-CTA clusters)
        log_ptr = kernels.load(wide.FILE, cfg.options + opts).get_global("wide_phase_log")
        cap = PHASE_CTAS  # the kernel's WIDE_PHASE_CTAS default (a module global's pointer carries no size)
        log = cupy.ndarray((cap, SLOTS), cupy.uint64, log_ptr)
        # bf16 as its upper 16 bits (CuPy has no bfloat16): the kernel reads only the bits
        ctype = {"float32": cupy.float32, "float16": cupy.float16, "bfloat16": cupy.uint16}[dt]

        def rand(shape, scale=1.0, shift=0.0):
            v = shift + scale * rng.standard_normal(shape, dtype=cupy.float32)
            return (v.view(cupy.uint32) >> 16).astype(cupy.uint16) if dt == "bfloat16" else v.astype(ctype)
        rng = cupy.random.default_rng(7)
        x = rand((M, N))
        gt = rand((M, N)) if op == "rmsnorm_gate" else None
        w = rand(N, 0.1, 1.0)
        y = cupy.empty_like(x)
        rstd = cupy.empty(M, cupy.float32)
        grid = wide.launch_grid(cfg, M)
        assert grid <= cap, (grid, cap)
        ptr = lambda a: np.uint64(a.data.ptr if a is not None else 0)  # noqa: E731  (as wide.forward's)
        args = (ptr(y), ptr(rstd), ptr(x), ptr(gt), ptr(w), np.int32(N), np.float32(1e-6), np.float32(0.0),
                np.int64(M))
        # every CTA writes all its slots each launch: the log holds the last launch's stamps
        t = timing.time_calls(lambda i: wide._launch(k, grid, cfg, args, "cupy", 0), reps=7, warmup=3,
                              framework="cupy")
        ms = t.median_us / 1000
        L = cupy.asnumpy(log[:grid])
        np.save(out_dir / f"phases-{cfg.kernel}.npy", L)
        r = analyse(L, cfg.cluster)
        nbytes = x.nbytes * (3 if gt is not None else 2)
        gbps = nbytes / (ms * 1e-3) / 1e9
        r.update(kernel=cfg.kernel, event_us=round(ms * 1000, 1), GBps=round(gbps, 1),
                 copy_share=round(gbps / copy["GBps"], 4),
                 M=M, N=N, dtype=dt, op=op)
        results[label] = r
        print(label, json.dumps(r), flush=True)
        del x, gt, w, y, rstd, log
        cupy.get_default_memory_pool().free_all_blocks()
    (out_dir / "phases.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
