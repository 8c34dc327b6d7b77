"""Sanitizer run for kernels/probes.cu and the write-the-kernel exercises' reference solutions:
every kernel on small shapes, edge cases included (a block of 1, a partial warp, 1024 threads).

Run plain, or under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool memcheck --error-exitcode 1 python scripts/sanitize/probes.py
Fresh random data, NaN-poisoned outputs; every result is checked against numpy (the shuffle steps
bit for bit against the CPU model).  Exits 0 when every check passes, 1 on any mismatch (each one
printed), 2 without a GPU.  A few seconds.
"""
import sys
import traceback

import numpy as np


def _compiled(cp, code: str, kernel: str):
    """An exercise's reference kernel, compiled as the GPU path compiles a learner's (NVRTC, the
    course's headers on the include path)."""
    from gpu_viz import kernels

    return cp.RawModule(code=code, options=kernels.gpu_options() + (f"-I{kernels.KERNEL_DIR}",)).get_function(kernel)


def main() -> int:
    from gpu_viz import backend

    # the package's names first, so that a renamed module fails here too, not only on a GPU
    from gpu_viz.exercises.core import exercise_source
    from gpu_viz.claims import probes

    if not backend.has_gpu():
        print(f"sanitize/probes: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    cp = backend.require_cupy("the probes sanitizer run")
    rng = np.random.default_rng(2026)
    failures = []

    def run(name, fn):
        try:
            fn()
            print(f"ok   {name}")
        except Exception:  # noqa: BLE001  (report every failure, then exit 1)
            failures.append(name)
            print(f"FAIL {name}\n{traceback.format_exc()}")

    run("shfl_steps", lambda: probes.shfl_steps(rng.standard_normal(32).astype(np.float32)))
    for k in probes.CHAINS:
        run(k, lambda k=k: probes._chain_cycles(k, 64))
    run("warp_order 64 x 4", lambda: probes.warp_order(64, 4))
    run("warp_order 33 x 2", lambda: probes.warp_order(33, 2))

    def load_f16():
        x = rng.standard_normal(32).astype(np.float16)
        y = cp.full(32, np.nan, cp.float32)
        probes._fn("load_f16")((1,), (32,), (cp.asarray(x), y))
        assert np.array_equal(cp.asnumpy(y), x.astype(np.float32)), "load_f16"
    run("load_f16", load_f16)
    run("reread 1 MiB x 2", lambda: probes._reread(1 << 20, 2, reps=1))

    def vector_add():
        fn = _compiled(cp, exercise_source("vector_add.solution"), "vector_add")
        for n, block in ((1, 1), (100, 32), (1000, 96)):
            a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
            c = cp.full(n, np.nan, cp.float32)
            fn((-(-n // block),), (block,), (cp.asarray(a), cp.asarray(b), c, np.int32(n)))
            assert np.array_equal(cp.asnumpy(c), a + b), (n, block)
    run("exercise vector_add reference", vector_add)

    def grid_stride():
        fn = _compiled(cp, exercise_source("grid_stride.solution"), "grid_stride")
        for n, grid, block in ((1, 4, 32), (2500, 1, 1024), (5000, 7, 96)):
            x = rng.standard_normal(n).astype(np.float32)
            y = cp.full(n, np.nan, cp.float32)
            v = cp.zeros(n, cp.uint32)
            fn((grid,), (block,), (cp.asarray(x), y, np.float32(1.5), np.int32(n), v))
            assert (cp.asnumpy(v) == 1).all() and np.array_equal(cp.asnumpy(y), np.float32(1.5) * x), (n, grid, block)
    run("exercise grid_stride reference", grid_stride)

    def block_sum():
        fn = _compiled(cp, exercise_source("block_sum.solution"), "block_sum")
        x = rng.standard_normal(3000).astype(np.float32)
        for block in (1, 31, 32, 33, 96, 1000, 1024):
            out = cp.full(1, np.nan, cp.float32)
            fn((1,), (block,), (cp.asarray(x), out, np.int32(x.size)))
            got, want = float(out.get()[0]), float(x.astype(np.float64).sum())
            assert abs(got - want) <= 1e-5 * float(np.abs(x).sum()), (block, got, want)
    run("exercise block_sum reference", block_sum)

    print(f"sanitize/probes: {len(failures)} failure(s)" + (f": {failures}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
