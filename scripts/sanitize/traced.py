"""Launch every kernel of the traced area (vector_add.cu, divergence.cu, grid_stride.cu,
scheduling.cu) on a few small shapes, edge cases included, and check every result against a
float64 reference (and the CPU model, bit for bit, where the field is deterministic).

Run plain, or under compute-sanitizer (memcheck, racecheck, synccheck, initcheck):
    compute-sanitizer --tool memcheck --error-exitcode 1 .venv/bin/python scripts/sanitize/traced.py
Exits 0 when every check passes, 1 on any mismatch (each one printed), 2 without a GPU.
A few seconds: tiny grids, few iterations.
"""
import sys
import traceback

import numpy as np


def main() -> int:
    from gpu_viz import backend, gridstride, kernels, scheduling, simt
    from gpu_viz.model import grid_stride as gs_model
    from gpu_viz.model import vector_add as va_model
    from gpu_viz.traced import check_close

    if not backend.has_gpu():
        print(f"sanitize/traced: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import cupy as cp

    rng = np.random.default_rng(12345)
    failures = []

    def run(name, fn):
        try:
            fn()
            print(f"ok    {name}")
        except Exception as exc:  # report every failure, keep going
            failures.append(name)
            print(f"FAIL  {name}: {type(exc).__name__}: {exc}")
            traceback.print_exc(limit=2)

    f32 = lambda n: rng.standard_normal(n).astype(np.float32)  # noqa: E731

    # vector_add.cu: the plain kernel and the traced one
    for n, block in [(64, 64), (1, 1), (70, 64), (1000, 96), (33, 1024)]:
        def va(n=n, block=block):
            A, B = f32(n), f32(n)
            gpu = simt.vector_add_gpu(A, B, block)
            va_model.vector_add(A, B, block).assert_equal(
                gpu, names=("block", "thread", "index", "warp", "lane", "a", "b", "c"))
            dA, dB = cp.asarray(A), cp.asarray(B)
            dC = cp.full(n, np.nan, cp.float32)
            kernels.function("vector_add.cu", "vector_add")((-(-n // block),), (block,), (dA, dB, dC, np.int32(n)))
            check_close("vector_add C", dC.get(), A.astype(np.float64) + B, rtol=2.0 ** -24)
        run(f"vector_add n={n} block={block}", va)

    # divergence.cu: both kernels, recording and not
    for kernel in va_model.DIVERGENCE_KERNELS:
        for n, block, iters in [(64, 64, 4), (70, 64, 3), (45, 45, 2), (300, 128, 5)]:
            def dv(kernel=kernel, n=n, block=block, iters=iters):
                x = f32(n)
                gpu = simt.divergence_gpu(x, block, iters, kernel)
                va_model.divergence(x, block, iters, kernel).assert_equal(
                    gpu, names=("y", "branch", "active"))
            run(f"{kernel} n={n} block={block} iters={iters}", dv)

    # grid_stride.cu: traced and plain, n < T, n % T != 0, n == 0
    for n, grid, block in [(2048, 1, 1024), (5, 2, 4), (1025, 1, 1024), (0, 2, 64), (2500, 3, 96)]:
        def gs(n=n, grid=grid, block=block):
            x = f32(n)
            gpu = gridstride.grid_stride_gpu(x, 1.5, grid, block)
            gs_model.grid_stride(x, 1.5, grid, block).assert_equal(
                gpu, names=("y", "block", "thread", "pass", "visits"))
            if n:
                y = gridstride.scale(cp.asarray(x), 1.5, grid, block)
                check_close("scale_grid_stride y", y.get(), 1.5 * x.astype(np.float64), rtol=2.0 ** -24)
        run(f"grid_stride n={n} grid={grid} block={block}", gs)

    # scheduling.cu: small grids, short spins (checks inside: smid < SMs, monotone timers)
    for blocks, threads, spin, fma in [(64, 128, 2000, 0), (7, 32, 0, 100), (130, 1024, 500, 10)]:
        def sc(blocks=blocks, threads=threads, spin=spin, fma=fma):
            s = scheduling.scheduling_summary(scheduling.scheduling_gpu(blocks, threads, spin, fma))
            assert s["blocks"] == blocks, s
        run(f"scheduled_block blocks={blocks} threads={threads} spin={spin} fma={fma}", sc)

    cp.cuda.runtime.deviceSynchronize()
    if failures:
        print(f"sanitize/traced: {len(failures)} check(s) failed: {failures}")
        return 1
    print("sanitize/traced: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
