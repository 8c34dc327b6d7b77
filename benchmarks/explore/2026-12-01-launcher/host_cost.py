"""Host cost per call of the fused op's eager paths, without a GPU: the C++ launcher (built here,
loaded with tests/data/stub_cuda.c as the driver, CPU tensors) against the same steps in Python
(the Python plan's key, lookup, torch.empty and five data_ptr reads; the launch itself left
out) and against one native torch op on the same CPU tensor.  The stub's cuLaunchKernel copies
the arguments and returns (fn 99: no compute), so the C++ numbers are the launcher's own cost
plus ~0.05 us; on a GPU add the driver's cuLaunchKernel (~2 us on the H200's host).

    python benchmarks/explore/2026-12-01-launcher/host_cost.py [out.json]
"""
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from gpu_viz.rmsnorm import fused, launcher  # noqa: E402


def per_call_us(fn, n=20000, loops=7):
    best = float("inf")
    for _ in range(loops):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def main():
    tmp = Path(tempfile.mkdtemp())
    so = launcher.build()
    stub = tmp / "libstub.so"
    subprocess.run([shutil.which("cc"), "-shared", "-fPIC", "-O1", str(ROOT / "tests/data/stub_cuda.c"),
                    "-o", str(stub), "-lm"], check=True)
    ext = launcher.load(so, fused._ext_backward, driver=str(stub), allow_cpu=True)
    out = {"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
           "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "rows": []}
    for M in (1, 512):
        x = torch.randn(M, 4096)
        w = torch.ones(4096)
        wg = torch.nn.Parameter(torch.ones(4096))
        f = (99, 1, 1024, M, 4096, 4096, 0, 1e-6, 0.0, 0, False, None)
        ext.insert(0, x, None, w, 1e-6, 0.0, 0, f)
        ext.insert(0, x, None, wg, 1e-6, 0.0, 0, f)
        fused._EXT[0] = ext
        key_py = lambda: (("rmsnorm", type(x), x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() % 16,  # noqa: E731
                           type(w), w.shape, w.stride(), w.dtype, w.get_device(), w.data_ptr() % 16, None,
                           1e-6, 0.0, "fp32", 0) in {},
                          torch.empty(x.shape, dtype=x.dtype, device=x.device),
                          x.data_ptr(), w.data_ptr())
        rows = {
            "cpp: ext.call": lambda: ext.call(0, x, None, w, 1e-6, 0.0, 0, True),
            "cpp: public op (ops.rmsnorm)": lambda: fused.rmsnorm(x, w, 1e-6),
            "cpp: public op, weight requires grad": lambda: fused.rmsnorm(x, wg, 1e-6),
            "python: key + lookup + torch.empty + pointers (no launch)": key_py,
            "torch.empty alone": lambda: torch.empty(x.shape, dtype=x.dtype, device=x.device),
            "torch.neg(x) (one native op)": lambda: torch.neg(x),
        }
        for name, fn in rows.items():
            n = 2000 if M == 512 else 20000
            out["rows"].append({"M": M, "N": 4096, "what": name, "us_per_call": round(per_call_us(fn, n), 3)})
            print(f"M={M:4d} {name:60s} {out['rows'][-1]['us_per_call']:8.3f} us")
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
