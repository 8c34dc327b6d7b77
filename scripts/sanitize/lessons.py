"""Sanitizer run for the animated lessons: every launch each lesson of ``gpu_viz.lessons.LESSONS``
lists for it (``LessonCases.sanitize``: small shapes, edge cases included), traced on the GPU by
the lesson's GPU producer; then the entry points no lesson traces: vector_add.cu's plain build and
grid_stride.cu's ``scale`` at the same shapes, reduce.cuh's block_reduce_sum at every kind of block.

Run plain, or under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool memcheck --error-exitcode 1 python scripts/sanitize/lessons.py
Fresh random data from each launch's seed, NaN/-1-poisoned records and outputs; every trace is
compared with the lesson's CPU producer (its model; the emulator where it has none) bit for bit,
every array but those the CPU producer simulates (%smid, timers), and has their names, shapes and
dtypes.  The plain builds are checked against float64.  Exits 0 when every check passes, 1 on any
mismatch (each one printed), 2 without a GPU.  Under a minute.
What a lesson leaves out of its launches, and why, is said beside them in gpu_viz/lessons.py (the
racy kernels race by design; the deck variant without prefill below 32 warps reads shared memory
nobody wrote, as notebook 12 teaches).
"""
import sys
import traceback

import numpy as np


def reference_producer(lesson) -> str:
    """The CPU producer a lesson's GPU trace is held to: its model, else the emulator."""
    return "model" if "model" in lesson.cpu else "emulator"


def compare(got, want, simulated=()) -> None:
    """``got`` (the GPU's trace) against ``want`` (the CPU producer's): the same arrays (``want``
    may hold more: what only a model knows), names, shapes and dtypes, and bit for bit every array
    neither ``want.simulated`` nor ``simulated`` lists.

    Raises:
        AssertionError: naming the arrays that differ.
    """
    missing = sorted(set(got.arrays) - set(want.arrays))
    assert not missing, f"{got.kernel}: arrays the CPU producer does not make: {missing}"
    shapes = [(n, got[n].shape, got[n].dtype, want[n].shape, want[n].dtype) for n in got.arrays
              if (got[n].shape, got[n].dtype) != (want[n].shape, want[n].dtype)]
    assert not shapes, f"{got.kernel}: shapes or dtypes differ: {shapes}"
    skip = set(want.simulated) | set(simulated)
    problems = got.diff(want, [n for n in sorted(got.arrays) if n not in skip])
    assert not problems, f"{got.kernel}: " + "; ".join(problems)


def check_launch(lesson, launch, seed: int, producer: str = "gpu") -> None:
    """Trace ``launch`` of ``lesson`` with ``producer`` and hold it to the lesson's CPU producer.
    ``producer="emulator"`` stands in for the GPU on a machine without one (the CPU tests)."""
    got = lesson.trace(seed=seed, producer=producer, **launch)
    want = lesson.trace(seed=seed, producer=reference_producer(lesson), **launch)
    compare(got, want, lesson.simulated)


def lesson_launches():
    """``(lesson, launch, seed)`` for every launch every lesson lists for the sanitizer."""
    from gpu_viz.lessons import LESSONS

    return [(les, launch, 1000 + k) for les in LESSONS.values() if les.gpu
            for k, launch in enumerate(les.cases.sanitize)]


def main() -> int:
    from gpu_viz import backend

    # the package's names first, so that a renamed module fails here too, not only on a GPU
    from gpu_viz import kernels
    from gpu_viz.check import assert_close
    from gpu_viz.lessons import GRID_STRIDE, VECTOR_ADD
    from gpu_viz.record import grid_stride, reduction

    launches = lesson_launches()
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

    # every lesson's launches, traced on the GPU, against its CPU producer
    for les, launch, seed in launches:
        words = " ".join(f"{k}={v}" for k, v in launch.items())
        run(f"{les.stem} {words}", lambda les=les, launch=launch, seed=seed: check_launch(les, launch, seed))

    # vector_add.cu's plain build, at the lesson's shapes
    for launch in VECTOR_ADD.cases.sanitize:
        def va(n=launch["n"], block=launch["block"]):
            A, B = f32(n), f32(n)
            dA, dB = cp.asarray(A), cp.asarray(B)
            dC = cp.full(n, np.nan, cp.float32)
            kernels.function("vector_add.cu", "vector_add")((-(-n // block),), (block,), (dA, dB, dC, np.int32(n)))
            assert_close("vector_add C", dC.get(), A.astype(np.float64) + B, rtol=2.0 ** -24)
        run(f"vector_add plain n={launch['n']} block={launch['block']}", va)

    # grid_stride.cu's scale (the plain loop), at the lesson's shapes
    for launch in GRID_STRIDE.cases.sanitize:
        if not launch["n"]:
            continue
        def gs(n=launch["n"], grid=launch["grid"], block=launch["block"]):
            x = f32(n)
            y = grid_stride.scale(cp.asarray(x), 1.5, grid, block)
            assert_close("scale_grid_stride y", y.get(), 1.5 * x.astype(np.float64), rtol=2.0 ** -24)
        run(f"scale_grid_stride n={launch['n']} grid={launch['grid']} block={launch['block']}", gs)

    # reduction.cu's block_reduce_all: reduce.cuh verbatim, partial warps and one thread included
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
