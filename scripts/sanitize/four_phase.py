"""Sanitizer run for kernels/rmsnorm_trace.cu: every kernel on a few small shapes, edge cases included.

Run under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool racecheck python scripts/sanitize/four_phase.py
Fresh random data, NaN-poisoned records and outputs; every launch is checked against the float64
reference (and against the CPU model, bit for bit).  Exits 1 on any mismatch, 2 without a GPU.
Not launched here: the deck variant WITHOUT prefill below 32 warps -- it reads shared memory nobody
wrote by design (fault a, taught in notebook 09), which initcheck rightly reports.
"""
import sys

import numpy as np


def main() -> int:
    from gpu_viz import backend

    if not backend.has_gpu():
        print(f"four_phase sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    from gpu_viz import four_phase as fp
    from gpu_viz.model import rmsnorm_trace as m

    rng = np.random.default_rng(2026)
    failures, launches = [], 0

    def check(ok, what):
        nonlocal launches
        launches += 1
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    # 1. the four phases (guarded, any block; deck only with prefill or at 32 warps)
    configs = [(d, b, "guarded", pre) for d in (1, 33, 2048) for b in (1, 33, 96, 1024) for pre in (True, False)]
    configs += [(2048, 96, "deck", True), (300, 1024, "deck", False), (2048, 1024, "deck", True)]
    for d, block, variant, prefill in configs:
        x = rng.standard_normal(d).astype(np.float32)
        w = rng.standard_normal(d).astype(np.float32)
        gpu = fp.record_gpu(x, w, block=block, variant=variant, prefill=prefill)
        cpu = m.four_phase_trace(x, w, block=block, variant=variant, prefill=prefill)
        same = cpu.diff(gpu) == []
        what = f"four_phase d={d:5d} block={block:4d} {variant:7s} prefill={prefill!s:5s}"
        if variant == "guarded" or block == 1024:
            ref = m.rmsnorm_float64(x, w)
            rel = float(np.max(np.abs(gpu["y"] - ref) / np.maximum(np.abs(ref), 1e-30)))
            check(same and rel <= m.output_rtol(d, block), f"{what} model==gpu:{same} rel_err={rel:.1e}")
        else:
            check(same, f"{what} model==gpu:{same} (deck, stale slots summed as the model predicts)")
    # 2. the seed's tree and the fix
    for block, corrected in ((32, False), (96, False), (1000, False), (1, True), (96, True), (1024, True)):
        p = rng.standard_normal(block).astype(np.float32)
        gpu, cpu = fp.seed_reduce_gpu(p, corrected), m.seed_reduce(p, corrected)
        same = all(np.array_equal(gpu[k].view(np.uint32), cpu[k].view(np.uint32)) for k in ("levels", "finish", "out"))
        exact = float(np.dot(cpu["weight"], p.astype(np.float64)))
        close = abs(float(gpu["out"][0]) - exact) <= 1e-5 * float(np.abs(p).sum())
        check(same and close, f"seed_reduce block={block:4d} corrected={corrected!s:5s} model==gpu:{same}")
    # 3. reduce.cuh, verbatim
    for block in (1, 31, 32, 33, 96, 1000, 1024):
        v = rng.integers(1, 8, size=block).astype(np.float32)
        out = fp.block_reduce_gpu(v)
        exact = float(v.sum(dtype=np.float64))
        check(bool(np.all(out[0] == exact) and np.all(out[1] == 2 * exact)), f"block_reduce_all block={block:4d}")
    print(f"four_phase sanitize: {len(failures)} failing launches of {launches}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
