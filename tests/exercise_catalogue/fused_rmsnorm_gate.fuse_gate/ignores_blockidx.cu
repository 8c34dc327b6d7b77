// expect: only row 0 of y is written
// the row offset left out: every block normalises row 0
#include "reduce.cuh"
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) local += x[i] * x[i];
    float total = block_reduce_sum(local, red);
    float r = rsqrtf(total / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gate = g[i];
        y[i] = x[i] * w[i] * (gate / (1.0f + expf(-gate))) * r;
    }
}
