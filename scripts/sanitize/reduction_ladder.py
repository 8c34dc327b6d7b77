"""Sanitizer run for notebook 08's measured reduction ladder: every rung of reduction_ladder.cu's plain
build (the one notebook 08 times) at power-of-two blocks (and the shuffle rungs at any block), over
one block's values and many blocks'.  The lessons' traced kernels of notebooks 07 and 08
(coalescing.cu, banks.cu, races.cu, the ladder's traced tree rungs) run in scripts/sanitize/lessons.py,
at the launches each lesson lists (gpu_viz.lessons).

Run plain, or under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool racecheck --error-exitcode 1 python scripts/sanitize/reduction_ladder.py
Every total is checked exactly (integer-valued inputs).  Exits 0 when every check passes, 1 on any
failure, 2 without a GPU.
Not launched: the tree rungs at blocks that are not a power of two (they read past their shared
array by design: the notebook names it).
"""
import sys
import traceback


def main() -> int:
    from gpu_viz import backend
    from gpu_viz.record import reduction_ladder

    if not backend.has_gpu():
        print(f"sanitize/reduction_ladder: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import cupy as cp

    failures = []

    def run(name, fn):
        try:
            fn()
            print(f"ok    {name}")
        except Exception as exc:  # report every failure, keep going
            failures.append(name)
            print(f"FAIL  {name}: {type(exc).__name__}: {exc}")
            traceback.print_exc(limit=2)

    for rung, _k, _w in reduction_ladder.RUNGS:
        blocks = (64, 256, 1024) if rung not in ("shuffle", "vector") else (64, 100, 256, 1000)
        for block in blocks:
            for n in (block, 5 * block + 3, 100_000):
                def rung_run(rung=rung, block=block, n=n):
                    x = reduction_ladder.exact_inputs(n, seed=n)
                    res = reduction_ladder.run(cp.asarray(x), rung, block)
                    reduction_ladder.check_total(f"{rung} block={block} n={n}", res["total"], x, exact=True)
                run(f"ladder {rung} block={block} n={n}", rung_run)

    print(f"{len(failures)} failure(s)" + (": " + ", ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
