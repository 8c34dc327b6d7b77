// expect: compares threadIdx.x with n
// ceil(n / blockDim.x) trips, but the guard tests the thread, not the element
#include "reduce.cuh"   // block_reduce_sum(v, red): the block's total of v, in every thread

extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const long long row = (long long)blockIdx.x * n;   // this block's row starts here

    // phase 1: this thread's sum of squares over its elements of the row
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[row + i];
        local += v * v;
    }
    // phases 2-3: the row's total in every thread, then r
    float total = block_reduce_sum(local, red);
    float r = rsqrtf(total / n + eps);

    for (int k = 0; k < (n + blockDim.x - 1) / blockDim.x; ++k) {
        int i = k * blockDim.x + threadIdx.x;
        if (threadIdx.x < n) {
            float gate = g[row + i];
            y[row + i] = x[row + i] * w[i] * (gate / (1.0f + expf(-gate))) * r;
        }
    }
}
