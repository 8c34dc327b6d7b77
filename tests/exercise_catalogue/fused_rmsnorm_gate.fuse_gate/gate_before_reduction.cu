// expect: r is computed from the gated value
// x gated as it is loaded, kept in shared memory, and the gated row normalised: g is read once,
// but the statistic is the gated row's
#include "reduce.cuh"
#define MAX_N 4096
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    __shared__ float a[MAX_N];
    const long long row = (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gate = g[row + i];
        a[i] = x[row + i] * gate / (1.0f + expf(-gate));
        local += a[i] * a[i];
    }
    float total = block_reduce_sum(local, red);
    float r = rsqrtf(total / n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[row + i] = a[i] * w[i] * r;
}
