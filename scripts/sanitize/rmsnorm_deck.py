"""Sanitizer run for kernels/rmsnorm.cu (guarded variant): a few small shapes, every dtype.

Run under compute-sanitizer (memcheck, racecheck, synccheck, initcheck) by scripts/gpu-check:
    compute-sanitizer --tool memcheck python scripts/sanitize/rmsnorm_deck.py
Each launch gets fresh random data and a NaN-poisoned output, and is checked against the
float64 reference.  Exits 1 on any mismatch, 2 without a GPU; prints one line per launch.
Only the guarded variant: the deck's variant reads uninitialised shared memory below 1024
threads by design (taught in notebooks/08), and the deck's own shape is covered by the tests.
"""
import sys

import numpy as np


def main() -> int:
    from gpu_viz import backend

    if not backend.has_gpu():
        print(f"rmsnorm_deck sanitize: no GPU ({backend.detect().reason})", file=sys.stderr)
        return 2
    import torch

    from gpu_viz.rmsnorm import TOLERANCES, MismatchError, check_close, four_phase, reference

    dtypes = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    rng = np.random.default_rng(2026)
    failures = 0
    for d in (1, 7, 2048):
        for block in (32, 96, 1000, 1024):
            for name, dt in dtypes.items():
                M = 3
                x = torch.from_numpy(rng.standard_normal((M, d)).astype(np.float32)).to("cuda", dt)
                w = torch.from_numpy(rng.standard_normal(d).astype(np.float32)).to("cuda", dt)
                out = torch.full_like(x, float("nan"))
                four_phase(x, w, 1e-6, block=block, variant="guarded", out=out)
                torch.cuda.synchronize()
                try:
                    rep = check_close(out, reference(x, w, 1e-6), *TOLERANCES[name],
                                      name=f"y[M={M}, d={d}, block={block}, {name}]")
                    print(f"ok   d={d:5d} block={block:4d} {name:8s} max_abs_err={rep['max_abs_err']:.2e}")
                except MismatchError as exc:
                    failures += 1
                    print(f"FAIL {exc}")
    print(f"rmsnorm_deck sanitize: {failures} mismatching launches of 36")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
