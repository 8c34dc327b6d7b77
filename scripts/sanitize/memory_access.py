"""Sanitizer run for notebooks 07 and 08's kernels: coalescing.cu (every pattern, plain and traced),
banks.cu (every case, the transposes at edge shapes, reduce.cuh's block sum), races.cu's correct
kernels (histogram_atomic, histogram_private, reverse_synced) and every rung of
reduction_ladder.cu at power-of-two blocks (and the shuffle rungs at any block).

Run plain, or under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool racecheck --error-exitcode 1 python scripts/sanitize/memory_access.py
Every result is checked (coalescing and banks against the CPU models, bit for bit; histograms
exactly; sums against float64).  Exits 0 when every check passes, 1 on any failure, 2 without a GPU.
Not launched: histogram_racy and reverse_racy (racy by design: notebook 08 shows their outcomes, and
racecheck rightly reports them), and the tree rungs at blocks that are not a power of two (they
read past their shared array by design: the notebook names it).
"""
import sys
import traceback

import numpy as np


def main() -> int:
    from gpu_viz import backend
    from gpu_viz.model import banks as banks_model
    from gpu_viz.model import coalescing as coal_model
    from gpu_viz.record import banks, coalescing, races, reduction_ladder

    if not backend.has_gpu():
        print(f"sanitize/memory_access: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import cupy as cp

    rng = np.random.default_rng(2024)
    failures = []

    def run(name, fn):
        try:
            fn()
            print(f"ok    {name}")
        except Exception as exc:  # report every failure, keep going
            failures.append(name)
            print(f"FAIL  {name}: {type(exc).__name__}: {exc}")
            traceback.print_exc(limit=2)

    for name, p in coal_model.PATTERNS.items():
        for n, block in ((p.per_thread * 40, 32), (p.per_thread * 1000, 256)):
            def coal(name=name, p=p, n=n, block=block):
                x = rng.standard_normal(coal_model.x_elements(p, n)).astype(p.dtype)
                tr = coalescing.trace(x, name, n=n, block=block)
                assert tr.diff(coal_model.trace(x, name, n=n, block=block)) == []
            run(f"coalescing {name} n={n} block={block}", coal)

    for name, c in banks_model.CASES.items():
        shapes = [(32, 32)] if c.kernel == "shared_stride" else [(32, 32), (64, 96), (33, 70), (1, 5)]
        for rows, cols in shapes:
            def bank(name=name, rows=rows, cols=cols):
                x = rng.standard_normal(rows * cols).astype(np.float32)
                tr = banks.trace(x, name, rows=rows, cols=cols)
                assert tr.diff(banks_model.trace(x, name, rows=rows, cols=cols)) == []
            run(f"banks {name} {rows}x{cols}", bank)

    keys = rng.integers(0, 256, 5000).astype(np.int32)
    for kernel in ("histogram_atomic", "histogram_private"):
        def hist(kernel=kernel):
            tr = races.trace(keys, kernel, runs=3, grid=7, block=96, nbins=256)
            assert (tr["bins"] == tr["want"]).all()
        run(f"races {kernel}", hist)
    run("races reverse_synced", lambda: None if races.trace(None, "reverse_synced", runs=3, grid=5,
                                                             block=200)["wrong"].sum() == 0 else 1 / 0)

    for rung, _k, _w in reduction_ladder.RUNGS:
        blocks = (64, 256, 1024) if rung not in ("shuffle", "vector") else (64, 100, 256, 1000)
        for block in blocks:
            for n in (block, 5 * block + 3, 100_000):
                def rung_run(rung=rung, block=block, n=n):
                    x = reduction_ladder.exact_inputs(n, seed=n)
                    res = reduction_ladder.run(cp.asarray(x), rung, block)
                    reduction_ladder.check_total(f"{rung} block={block} n={n}", res["total"], x, exact=True)
                run(f"ladder {rung} block={block} n={n}", rung_run)
        if rung in reduction_ladder.TREE_RUNGS:
            run(f"ladder {rung} traced", lambda rung=rung: reduction_ladder.trace(
                rng.standard_normal(128).astype(np.float32), rung, 128))

    print(f"{len(failures)} failure(s)" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
