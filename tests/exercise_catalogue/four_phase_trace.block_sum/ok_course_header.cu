// expect: correct
#include "reduce.cuh"
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    float total = block_reduce_sum(v, red);
    if (threadIdx.x == 0) out[0] = total;
}
