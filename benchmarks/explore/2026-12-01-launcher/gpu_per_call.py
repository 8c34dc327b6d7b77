"""Per call on a GPU, host side: the fused op through the C++ launcher against the Python plan
(ctypes cuLaunchKernel) and F.rms_norm, with and without a weight that requires grad.

A tight eager loop (the GPU kept busy, so the host's time per call is what is measured), best of
five loops of CALLS calls, CUDA synchronised around each loop; every provider's output checked
against the Python launcher's first (bit for bit) and F.rms_norm (close).

    python benchmarks/explore/2026-12-01-launcher/gpu_per_call.py out.json
"""
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
from gpu_viz.measure import records  # noqa: E402
from gpu_viz.rmsnorm import fused  # noqa: E402
from profile_per_call import per_call_us  # noqa: E402  (the same tight loop, best of five)

CALLS = 3000
SHAPES = ((1, 4096), (16, 4096), (128, 4096), (512, 4096), (1024, 4096))


def with_launcher(name, fn):
    def call():
        saved, fused.LAUNCHER = fused.LAUNCHER, name
        try:
            return fn()
        finally:
            fused.LAUNCHER = saved
    return call


def main():
    status = fused.ensure_launcher()
    print("launcher:", status)
    rows = []
    for dt in (torch.float16, torch.bfloat16):
        for M, N in SHAPES:
            x = torch.randn(M, N, device="cuda", dtype=dt)
            w = torch.randn(N, device="cuda", dtype=dt)
            wg = w.clone().requires_grad_(True)
            ref = with_launcher("driver", lambda: fused.rmsnorm(x, w))()
            cpp = fused.rmsnorm(x, w)
            cpp = fused.rmsnorm(x, w)  # the second call of the layout: the C++ launcher's
            nat = torch.nn.functional.rms_norm(x, (N,), w, 1e-6)
            torch.cuda.synchronize()
            same = bool(torch.equal(cpp, ref))
            close = bool(torch.allclose(cpp.float(), nat.float(), atol=2e-2, rtol=2e-2))
            cases = {
                "native": lambda: torch.nn.functional.rms_norm(x, (N,), w, 1e-6),
                "neg": lambda: torch.neg(x),
                "ours_cpp": lambda: fused.rmsnorm(x, w),
                "ours_python_plan": with_launcher("driver", lambda: fused.rmsnorm(x, w)),
                "native_grad": lambda: torch.nn.functional.rms_norm(x, (N,), wg, 1e-6),
                "ours_cpp_grad": lambda: fused.rmsnorm(x, wg),
                "ours_python_plan_grad": with_launcher("driver", lambda: fused.rmsnorm(x, wg)),
            }
            res = {k: round(per_call_us(f, CALLS), 2) for k, f in cases.items()}
            yg = fused.rmsnorm(x, wg)
            row = {"M": M, "N": N, "dtype": str(dt).split(".")[1], "cpp_equals_python_plan": same,
                   "close_to_native": close, "grad_fn": yg.grad_fn.name() if yg.grad_fn else None, **res}
            rows.append(row)
            print(json.dumps(row))
    rec = records.new_record(rows=rows, kind="per-call-launcher", calls=CALLS, launcher=status)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(rec, indent=1) + "\n")


if __name__ == "__main__":
    main()
