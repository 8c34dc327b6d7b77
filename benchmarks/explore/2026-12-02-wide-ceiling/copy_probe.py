"""What a streaming kernel with rmsnorm's memory traffic, and nothing else, reaches on this GPU.

explore/2026-12-02-wide-wsmem found every wide-row kernel's SMs streaming 95-98 % of the time,
only 124 of the H200's 132 SMs ever running a CTA of a clustered launch, and the weight's L2
reads (1 MiB a row at fp32 262144) costing 4-8 points of copy.  These probes take the rows away:
grid-stride kernels over x (1024 x 262144 fp32, 1 GiB) into y, 16-byte vectors, no reduction, no
exchange:
  copy            y = x
  copy_w          y = x * w[column]     (w: 262144 fp32, L2-resident, read beside every vector)
  copy_w2         y = x * w[column] for two rows per w load (the weight read once for two rows)
each launched plainly (every SM) and as 8-CTA clusters (__cluster_dims__, the SMs a clustered
launch gets), with rmsnorm's cache hints (x: L1::no_allocate, y: L2 evict_first) or none.
Timing: ``timing.time_calls`` (CUDA events around each launch), 3 warm-ups, median of 15 (the run
of 2026-12-02 timed the same launches with a loop of its own, synchronising after each); the
project's copy_bandwidth in the same process.

    python benchmarks/explore/2026-12-02-wide-ceiling/copy_probe.py OUT_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

SRC = r'''
#if CLUSTER > 0
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif
#define HINT_LD(u, p) asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" \
    : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p))
__device__ __forceinline__ uint4 ldx(const uint4* p) {
#if HINTS
    uint4 u; HINT_LD(u, p); return u;
#else
    return *p;
#endif
}
__device__ __forceinline__ void sty(uint4* p, uint4 u, unsigned long long pol) {
#if HINTS
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "l"(pol) : "memory");
#else
    *p = u;
#endif
}
__device__ __forceinline__ uint4 mul4(uint4 a, uint4 b) {
    return make_uint4(__float_as_uint(__uint_as_float(a.x) * __uint_as_float(b.x)),
                      __float_as_uint(__uint_as_float(a.y) * __uint_as_float(b.y)),
                      __float_as_uint(__uint_as_float(a.z) * __uint_as_float(b.z)),
                      __float_as_uint(__uint_as_float(a.w) * __uint_as_float(b.w)));
}
// KIND 0 copy, 1 copy_w, 2 copy_w2 (two rows a w load); n4: vectors of x; c4: vectors a row
extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(512) probe(uint4* __restrict__ y, const uint4* __restrict__ x,
                                                                      const uint4* __restrict__ w, long long n4, int c4) {
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (KIND == 2) {  // i walks the even rows' vectors; each thread also does the row below
        const long long half = n4 / 2;
        for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < half; k += stride) {
            const long long row = (k / c4) * 2, col = k % c4, i = row * c4 + col;
            const uint4 wv = __ldg(w + col);
            const uint4 a = ldx(x + i), b = ldx(x + i + c4);
            sty(y + i, mul4(a, wv), pol);
            sty(y + i + c4, mul4(b, wv), pol);
        }
    } else {
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
            uint4 v = ldx(x + i);
            if (KIND == 1) v = mul4(v, __ldg(w + i % c4));
            sty(y + i, v, pol);
        }
    }
}
'''


def main(argv) -> int:
    import cupy
    from gpu_viz.measure import timing

    out_dir = Path(argv[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    copy = timing.copy_bandwidth()
    print(f"copy_bandwidth {copy['GBps']:.0f} GB/s", flush=True)
    M, N = 1024, 262144
    x = cupy.random.default_rng(1).standard_normal((M, N), dtype=cupy.float32)
    w = cupy.ones(N, cupy.float32)
    y = cupy.empty_like(x)
    n4, c4 = x.size // 4, N // 4
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    res = {"copy_GBps": round(copy["GBps"], 1), "rows": []}
    for kind, name in ((0, "copy"), (1, "copy_w"), (2, "copy_w2")):
        for hints in (0, 1):
            for cluster in (0, 8):
                opts = (f"-DKIND={kind}", f"-DHINTS={hints}", f"-DCLUSTER={cluster}", "-std=c++17")
                k = cupy.RawModule(code=SRC, options=opts).get_function("probe")
                for per_sm in (2, 4, 8):
                    grid = sms * per_sm // 8 * 8
                    args = (y, x, w, np.int64(n4), np.int32(c4))
                    t = timing.time_calls(lambda i: k((grid,), (512,), args), reps=15, warmup=3, framework="cupy")
                    ms = t.median_us / 1000
                    gbps = 2 * x.nbytes / (ms * 1e-3) / 1e9
                    row = dict(kernel=name, hints=hints, cluster=cluster, blocks_per_sm=per_sm, grid=grid,
                               us=round(ms * 1000, 1), GBps=round(gbps, 1), copy_share=round(gbps / copy["GBps"], 4),
                               p10_us=round(t.p10_us, 1), p90_us=round(t.p90_us, 1))
                    res["rows"].append(row)
                    print(json.dumps(row), flush=True)
    ok = bool(cupy.allclose(y, x))
    res["last_output_equals_x"] = ok
    print("last output equals x (w = 1):", ok)
    (out_dir / "probe.json").write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
