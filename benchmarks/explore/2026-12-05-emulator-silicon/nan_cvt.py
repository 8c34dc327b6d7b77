"""What the GPU returns for float -> integer conversions of NaN and of values out of range, every
rounding mode and width (CuPy, the course's options): the facts the emulator's cvt must follow.
Prints one JSON object; run on a GPU: python benchmarks/explore/2026-12-05-emulator-silicon/nan_cvt.py"""
import json

import cupy as cp
import numpy as np

from gpu_viz.kernels import gpu_options

SRC = r"""
#define ALL4(op, x) op##_rn(x), op##_rz(x), op##_rd(x), op##_ru(x)
extern "C" __global__ void k(const float* a, const double* d, long long* out, int n) {
  int i = threadIdx.x; if (i >= n) return;
  float x = a[i]; double y = d[i];
  long long r[32] = {ALL4(__float2int, x), ALL4(__double2int, y), ALL4(__float2uint, x), ALL4(__double2uint, y),
                     ALL4(__float2ll, x), ALL4(__double2ll, y),
                     (long long)ALL4(__float2ull, x), (long long)ALL4(__double2ull, y)};
  for (int j = 0; j < 32; ++j) out[j * n + i] = r[j];
}
"""
vals = [np.nan, -np.nan, np.inf, -np.inf, 3e9, -3e9, 1e19, -1e19, 0.5, -0.5]
a = cp.asarray(np.array(vals, np.float32))
d = cp.asarray(np.array(vals, np.float64))
n = len(vals)
out = cp.zeros(32 * n, cp.int64)
fn = cp.RawModule(code=SRC, options=gpu_options()).get_function("k")
fn((1,), (32,), (a, d, out, np.int32(n)))
o = cp.asnumpy(out).reshape(32, n)
names = [f"{op}_{m}" for op in ("float2int", "double2int", "float2uint", "double2uint", "float2ll", "double2ll",
                                 "float2ull", "double2ull") for m in ("rn", "rz", "rd", "ru")]
print(json.dumps({"inputs": [repr(v) for v in vals], "results": {nm: o[j].tolist() for j, nm in enumerate(names)},
                  "options": list(gpu_options())}))
