// expect: an atomicAdd into an output that was never zeroed
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    atomicAdd(out, v);
}
