// expect: the sum of squares, not their mean
// the division by n dropped
// One block per row: RMSNorm of row blockIdx.x of x [rows, n], fp32 in and out.  It is right as it
// stands for y = x * w * r, r = 1 / sqrt(mean(x^2) + eps), at any n and any blockDim.x (1..1024).
// Fuse the SiLU gate into it:  y = x * w * silu(g) * r,  silu(g) = g / (1 + e^-g),
// r still from x alone -- in this kernel, reading g once and writing y once.
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
    float r = rsqrtf(total + eps);

    // phase 4: y for this thread's elements
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float s = g[row + i] / (1.0f + expf(-g[row + i]));
        y[row + i] = x[row + i] * w[i] * s * r;
    }
}
