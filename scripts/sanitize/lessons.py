"""Sanitizer run for the traced lessons: every kernel of vector_add.cu, divergence.cu,
grid_stride.cu, scheduling.cu, rmsnorm_deck.cu (its traced build) and reduction.cu, plain and
traced, on a few small shapes, edge cases included.

Run plain, or under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool memcheck --error-exitcode 1 python scripts/sanitize/lessons.py
Fresh random data, NaN/-1-poisoned records and outputs; every result is checked against a float64
reference and against the CPU model, bit for bit where the field is deterministic.  Exits 0 when
every check passes, 1 on any mismatch (each one printed), 2 without a GPU.  A few seconds.
Not launched: the deck variant WITHOUT prefill below 32 warps -- it reads shared memory nobody
wrote by design (fault a, taught in notebook 12), which initcheck rightly reports.
"""
import sys
import traceback

import numpy as np


def main() -> int:
    from gpu_viz import backend

    # the package's names first, so that a renamed module fails here too, not only on a GPU
    from gpu_viz import kernels
    from gpu_viz.check import assert_close
    from gpu_viz.frames import scheduling as sched_frames
    from gpu_viz.model import divergence as dv_model
    from gpu_viz.model import grid_stride as gs_model
    from gpu_viz.model import reduction as red_model
    from gpu_viz.model import rmsnorm_deck as deck_model
    from gpu_viz.model import vector_add as va_model
    from gpu_viz.record import divergence, grid_stride, reduction, rmsnorm_deck, scheduling, vector_add
    from gpu_viz.rmsnorm import reference

    if not backend.has_gpu():
        print(f"sanitize/lessons: no GPU ({backend.detect().reason})", file=sys.stderr)
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

    # vector_add.cu: the traced build, then the plain one
    for n, block in [(64, 64), (1, 1), (70, 64), (1000, 96), (33, 1024)]:
        def va(n=n, block=block):
            A, B = f32(n), f32(n)
            gpu = vector_add.trace(A, B, block)
            va_model.trace(A, B, block).assert_equal(gpu, names=("block", "thread", "index", "warp", "lane",
                                                                 "a", "b", "c"))
            dA, dB = cp.asarray(A), cp.asarray(B)
            dC = cp.full(n, np.nan, cp.float32)
            kernels.function("vector_add.cu", "vector_add")((-(-n // block),), (block,), (dA, dB, dC, np.int32(n)))
            assert_close("vector_add C", dC.get(), A.astype(np.float64) + B, rtol=2.0 ** -24)
        run(f"vector_add n={n} block={block}", va)

    # divergence.cu: both kernels, traced (the plain ones are timed by claims.divergence)
    for kernel in dv_model.DIVERGENCE_KERNELS:
        for n, block, iters in [(64, 64, 4), (70, 64, 3), (45, 45, 2), (300, 128, 5)]:
            def dv(kernel=kernel, n=n, block=block, iters=iters):
                x = f32(n)
                dv_model.trace(x, block, iters, kernel).assert_equal(divergence.trace(x, block, iters, kernel),
                                                                     names=("y", "branch", "active"))
            run(f"{kernel} n={n} block={block} iters={iters}", dv)

    # grid_stride.cu: traced and plain, n < T, n % T != 0, n == 0
    for n, grid, block in [(2048, 1, 1024), (5, 2, 4), (1025, 1, 1024), (0, 2, 64), (2500, 3, 96)]:
        def gs(n=n, grid=grid, block=block):
            x = f32(n)
            gs_model.trace(x, 1.5, grid, block).assert_equal(grid_stride.trace(x, 1.5, grid, block),
                                                             names=("y", "block", "thread", "pass", "visits"))
            if n:
                y = grid_stride.scale(cp.asarray(x), 1.5, grid, block)
                assert_close("scale_grid_stride y", y.get(), 1.5 * x.astype(np.float64), rtol=2.0 ** -24)
        run(f"grid_stride n={n} grid={grid} block={block}", gs)

    # scheduling.cu: small grids, short spins (checks inside: smid < SMs, monotone timers)
    for blocks, threads, spin, fma in [(64, 128, 2000, 0), (7, 32, 0, 100), (130, 1024, 500, 10)]:
        def sc(blocks=blocks, threads=threads, spin=spin, fma=fma):
            s = sched_frames.summary(scheduling.trace(blocks, threads, spin, fma))
            assert s["blocks"] == blocks, s
        run(f"scheduled_block blocks={blocks} threads={threads} spin={spin} fma={fma}", sc)

    # rmsnorm_deck.cu, traced: guarded at any block; deck with prefill, or at 32 warps
    configs = [(d, b, "guarded", pre) for d in (1, 33, 2048) for b in (1, 33, 96, 1024) for pre in (True, False)]
    configs += [(2048, 96, "deck", True), (300, 1024, "deck", False), (2048, 1024, "deck", True)]
    for d, block, variant, prefill in configs:
        def fp(d=d, block=block, variant=variant, prefill=prefill):
            x, w = f32(d), f32(d)
            gpu = rmsnorm_deck.trace(x, w, block=block, variant=variant, prefill=prefill)
            deck_model.trace(x, w, block=block, variant=variant, prefill=prefill).assert_equal(gpu)
            if variant == "guarded" or block == 1024:
                assert_close("y", gpu["y"], reference.rmsnorm(x, w), rtol=deck_model.output_rtol(d, block))
        run(f"rmsnorm_deck traced d={d} block={block} {variant} prefill={prefill}", fp)

    # reduction.cu: the seed's tree and the fix; reduce.cuh verbatim
    for block, corrected in ((32, False), (96, False), (1000, False), (1, True), (96, True), (1024, True)):
        def sr(block=block, corrected=corrected):
            p = f32(block)
            gpu, cpu = reduction.seed_reduce(p, corrected), red_model.seed_reduce(p, corrected)
            for k in ("levels", "finish", "out"):
                assert np.array_equal(gpu[k].view(np.uint32), cpu[k].view(np.uint32)), k
        run(f"seed_reduce block={block} corrected={corrected}", sr)
    for block in (1, 31, 32, 33, 96, 1000, 1024):
        def br(block=block):
            v = rng.integers(1, 8, size=block).astype(np.float32)
            out = reduction.block_reduce(v)
            exact = float(v.sum(dtype=np.float64))
            assert np.all(out[0] == exact) and np.all(out[1] == 2 * exact), out
        run(f"block_reduce_all block={block}", br)

    cp.cuda.runtime.deviceSynchronize()
    if failures:
        print(f"sanitize/lessons: {len(failures)} check(s) failed: {failures}")
        return 1
    print("sanitize/lessons: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
