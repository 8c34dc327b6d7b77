#!/usr/bin/env python3
"""Where the fused op's per-call time goes from Python (the per-call target), on a GPU.

Times, per call in a tight eager loop (wall clock over many calls, the GPU kept busy so the host
side is what is measured; CUDA is synchronised before and after each loop):

  native          torch.nn.functional.rms_norm
  neg             torch.neg(x): one native single-kernel op, the dispatcher + allocator floor
  empty           torch.empty(x.shape, ...): the output allocation alone
  ours            gpu_viz.ops.rmsnorm (public entry: _call -> _fast -> plan.run)
  ours_fast       rmsnorm's _fast directly (no _call checks)
  ours_nolaunch   _fast with cuLaunchKernel replaced by a no-op (the Python around the launch)
  launch_only     the plan's cuLaunchKernel through ctypes, its argument block prebuilt

and a cProfile of ``ours`` (top entries by own time).  Writes ``profile_per_call.json`` and
``profile_per_call.txt`` under the folder given (default: .).

Usage: python scripts/profile_per_call.py [OUT_DIR]
"""
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gpu_viz.measure import records  # noqa: E402
from gpu_viz.rmsnorm.fused import launch as flaunch  # noqa: E402
from gpu_viz.rmsnorm.fused import names as fnames  # noqa: E402
from gpu_viz.rmsnorm.fused import op as fop  # noqa: E402

CALLS = 4000
SHAPES = [(512, 4096), (1, 4096)]


def per_call_us(fn, calls: int = CALLS) -> float:
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):   # the best of five loops: the least disturbed host time
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    rows, text = [], []
    for M, N in SHAPES:
        x = torch.randn(M, N, device="cuda", dtype=torch.float16)
        w = torch.randn(N, device="cuda", dtype=torch.float16)
        fop.rmsnorm(x, w)  # builds the plan
        key_plan = [p for p in flaunch._plans().values() if p]
        plan = key_plan[-1]
        cases = {
            "native": lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6),
            "neg": lambda: torch.neg(x),
            "empty": lambda: torch.empty((M, N), dtype=torch.float16, device=x.device),
            "ours": lambda: fop.rmsnorm(x, w),
            "ours_fast": lambda: flaunch.fast("rmsnorm", x, None, w, 1e-6, 0.0, fnames.CAST_FP32),
        }
        res = {name: per_call_us(fn) for name, fn in cases.items()}
        real = plan.driver
        plan.driver = lambda *a: 0
        try:
            res["ours_nolaunch"] = per_call_us(lambda: flaunch.fast("rmsnorm", x, None, w, 1e-6, 0.0, fnames.CAST_FP32))
        finally:
            plan.driver = real
        stream = plan.stream(plan.device)
        res["launch_only"] = per_call_us(lambda: real(plan.fn, plan.grid, 1, 1, plan.block, 1, 1, 0, stream,
                                                     plan.params, None))
        rows.append({"M": M, "N": N, "dtype": "float16", **{k: round(v, 2) for k, v in res.items()}})
        text.append(f"{M}x{N} fp16, µs per call: " + ", ".join(f"{k} {v:.2f}" for k, v in res.items()))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            fop.rmsnorm(x, w)
        prof.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(18)
        text.append(s.getvalue())
    rec = records.new_record(rows=rows, kind="per-call-profile", calls=CALLS)
    (out / "profile_per_call.json").write_text(json.dumps(rec, indent=1), encoding="utf-8")
    (out / "profile_per_call.txt").write_text("\n".join(text), encoding="utf-8")
    print("\n".join(t for t in text if "µs per call" in t))


if __name__ == "__main__":
    main()
