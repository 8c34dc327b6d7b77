"""Sanitizer run for kernels/rmsnorm_deck.cu through gpu_viz.rmsnorm.deck: a few small shapes, every dtype.

Run under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool memcheck python scripts/sanitize/rmsnorm_deck.py
Each launch gets fresh random data and a NaN-poisoned output, and is checked against the float64
reference (gpu_viz.rmsnorm.reference) within the one tolerance table (gpu_viz.rmsnorm.tolerances),
compared by gpu_viz.check.  Exits 1 on any mismatch, 2 without a GPU; prints one line per launch.
The guarded variant at every block size; the deck's variant only at its own launch (1024 threads):
below that it reads shared memory nobody wrote, by design (taught in notebooks 10 and 12), which
initcheck rightly reports.
"""
import sys

import numpy as np


def main() -> int:
    from gpu_viz import backend

    # the package's names first, so that a renamed module fails here too, not only on a GPU
    from gpu_viz import check
    from gpu_viz.rmsnorm.deck import DECK_BLOCK, four_phase
    from gpu_viz.rmsnorm.dtypes import DTYPES, torch_dtype
    from gpu_viz.rmsnorm.reference import rmsnorm as reference
    from gpu_viz.rmsnorm.tolerances import tolerance

    if not backend.has_gpu():
        print(f"rmsnorm_deck sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import torch

    dtypes = {name: torch_dtype(name) for name in DTYPES}
    launches = [(d, block, "guarded") for d in (1, 7, 2048) for block in (32, 96, 1000, 1024)]
    launches += [(d, DECK_BLOCK, "deck") for d in (1, 7, 2048)]
    rng = np.random.default_rng(2026)
    failures = total = 0
    for d, block, variant in launches:
        for name, dt in dtypes.items():
            M = 3
            x = torch.from_numpy(rng.standard_normal((M, d)).astype(np.float32)).to("cuda", dt)
            w = torch.from_numpy(rng.standard_normal(d).astype(np.float32)).to("cuda", dt)
            out = torch.full_like(x, float("nan"))
            four_phase(x, w, 1e-6, block=block, variant=variant, out=out)
            torch.cuda.synchronize()
            total += 1
            atol, rtol = tolerance(name)
            try:
                rep = check.assert_close(f"y[M={M}, d={d}, block={block}, {variant}, {name}]", out,
                                         reference(x, w, 1e-6), atol=atol, rtol=rtol)
                print(f"ok   d={d:5d} block={block:4d} {variant:7s} {name:8s} max_abs_err={rep.max_abs_err:.2e}")
            except check.MismatchError as exc:
                failures += 1
                print(f"FAIL {exc}")
    print(f"rmsnorm_deck sanitize: {failures} mismatching launches of {total}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
