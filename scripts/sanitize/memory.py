"""Sanitizer run for kernels/memory.cu and kernels/occupancy.cu: every kernel on a few small shapes, edge cases included.

Run under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by the GPU batch:
    compute-sanitizer --tool memcheck python scripts/sanitize/memory.py
Every launch gets fresh random data and a NaN-poisoned (or sentinel) output, and is checked:
pointer_chase against where the permutation says the chase must end, stream_read's block sums
against a float64 sum (float32 error bound), occ_* against their float64 references.
Exits 1 on any mismatch, 2 without a GPU; prints one line per launch.  A few seconds natively.
"""
import sys


def main() -> int:
    from gpu_viz import backend

    # the package's names first, so that a renamed module fails here too, not only on a GPU
    from gpu_viz import occupancy as O
    from gpu_viz.measure import memory as M

    if not backend.has_gpu():
        print(f"memory sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import cupy as cp

    failures, launches = 0, 0

    def run(label, fn):
        nonlocal failures, launches
        launches += 1
        try:
            out = fn()
            print(f"ok   {label} {out if out is not None else ''}")
        except Exception as exc:  # a wrong result or a CUDA error: both are failures here
            failures += 1
            print(f"FAIL {label}: {type(exc).__name__}: {exc}")

    # pointer_chase: 2 nodes (smallest), a few KiB, past L1, with and without warm-up
    for size, stride, warm in ((256, 128, 0), (4096, 128, None), (64 * 1024, 64, 17), (1 << 20, 128, 0)):
        run(f"pointer_chase size={size} stride={stride} warm={warm}",
            lambda: M.pointer_chase(size, stride_bytes=stride, steps=64, warm_steps=warm, repeats=1,
                                    seed=size).cycles_per_load)
    # stream_read: one float4, a partial warp, a partial last block, more threads than data,
    # 1024-thread blocks, non-multiple-of-32 blocks
    rs = cp.random.RandomState(7)
    for n4, blocks, threads in ((1, 1, 32), (37, 3, 96), (1000, 2, 1000), (5, 4, 64), (4099, 3, 1024),
                                (70000, 40, 256)):
        x = rs.uniform(0.5, 1.5, 4 * n4, dtype=cp.float32)
        run(f"stream_read n4={n4} grid={blocks} block={threads}",
            lambda: float(M.stream_read_sums(x, blocks, threads).sum()))
    # occupancy kernels: n = 1, odd n, partial blocks, the 1024 cap; occ_smem with dynamic smem
    for name in O.OCC_KERNELS:
        for n, block in ((1, 32), (1000, 96), (4099, 256), (2048, 1000)):
            if name == "occ_heavy" and block > 512:
                block = 512  # 1024 x 80 registers does not fit one SM (notebook 05 shows it)
            run(f"{name} n={n} block={block}", lambda: O.check_occ_kernel(name, n, block, seed=n + block))
    for n, block, dyn in ((999, 128, 128), (4096, 1024, 2048), (33, 64, 64)):
        run(f"occ_smem n={n} block={block} dyn_floats={dyn}",
            lambda: O.check_occ_kernel("occ_smem", n, block, dyn_floats=dyn, seed=n))
    cp.cuda.runtime.deviceSynchronize()
    print(f"memory sanitize: {failures} failing launches of {launches}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
