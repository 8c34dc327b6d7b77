// expect: further off than fp32 arithmetic allows
// e^-g as 2^(-g log2 e) with log2 e rounded to 1.4427f: 3.4e-6 relative off, 1e-5 .. 1e-4 in e^-g
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

    // phase 4: y for this thread's elements, gated
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gate = g[row + i];
        // e^-gate overflows to inf for gate < -88.7: then gate / inf = -0, silu's limit
        float silu = gate / (1.0f + exp2f(-gate * 1.4427f));
        y[row + i] = x[row + i] * w[i] * silu * r;
    }
}
