// expect: A thread reads an element past the row's end
// the next trip's gate prefetched with no test: the last trip of every thread reads one element
// past the row's end (in the last row, past the end of g)
#include "reduce.cuh"
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const long long row = (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) local += x[row + i] * x[row + i];
    float r = rsqrtf(block_reduce_sum(local, red) / n + eps);
    float gate = g[row + threadIdx.x];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float next = g[row + i + blockDim.x];
        y[row + i] = x[row + i] * w[i] * (gate / (1.0f + expf(-gate))) * r;
        gate = next;
    }
}
