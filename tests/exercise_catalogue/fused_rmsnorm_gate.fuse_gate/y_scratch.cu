// expect: not in one pass over memory
// silu(g) parked in y during phase 1, read back in phase 4: y stored twice and loaded once
#include "reduce.cuh"
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const long long row = (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[row + i];
        local += v * v;
        float gate = g[row + i];
        y[row + i] = gate / (1.0f + expf(-gate));
    }
    float total = block_reduce_sum(local, red);
    float r = rsqrtf(total / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[row + i] = x[row + i] * w[i] * y[row + i] * r;
}
