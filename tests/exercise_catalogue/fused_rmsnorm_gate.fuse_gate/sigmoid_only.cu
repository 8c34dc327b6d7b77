// expect: the gate is sigmoid(g) alone
// the gate's sigmoid without its factor g
#include "reduce.cuh"
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const long long row = (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[row + i];
        local += v * v;
    }
    float total = block_reduce_sum(local, red);
    float r = rsqrtf(total / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gate = g[row + i];
        y[row + i] = x[row + i] * w[i] * (1.0f / (1.0f + expf(-gate))) * r;
    }
}
