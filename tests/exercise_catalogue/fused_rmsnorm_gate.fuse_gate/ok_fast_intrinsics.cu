// expect: correct
// the fast intrinsics (as kernels/pack.cuh's silu): __expf (2 + 1.173|g| ulp) and __fdividef
// (2 ulp), inside the bound the checker derives; at g < -87.4 __fdividef gives 0, silu's limit
#include "reduce.cuh"
__device__ __forceinline__ float silu(float v) { return __fdividef(v, 1.0f + __expf(-v)); }

extern "C" __global__ void fuse_gate(const float* __restrict__ x, const float* __restrict__ g,
                                     const float* __restrict__ w, float* __restrict__ y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const float* xr = x + (size_t)blockIdx.x * n;
    const float* gr = g + (size_t)blockIdx.x * n;
    float* yr = y + (size_t)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) local = fmaf(xr[i], xr[i], local);
    const float r = rsqrtf(__fdividef(block_reduce_sum(local, red), (float)n) + eps);
    #pragma unroll 4
    for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = silu(gr[i]) * xr[i] * (w[i] * r);
}
