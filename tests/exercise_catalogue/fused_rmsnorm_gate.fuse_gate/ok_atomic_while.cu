// expect: correct
// another reduction (each warp's partial added atomically into one shared total), while loops,
// 64-bit indices, the gate as g * sigmoid(g), and the product in another order
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float total;
    if (threadIdx.x == 0) total = 0.0f;
    __syncthreads();
    const long long base = (long long)blockIdx.x * n;
    float local = 0.0f;
    long long i = threadIdx.x;
    while (i < n) {
        float v = x[base + i];
        local += v * v;
        i += blockDim.x;
    }
    atomicAdd(&total, local);
    __syncthreads();
    const float r = 1.0f / sqrtf(total / (float)n + eps);
    i = threadIdx.x;
    while (i < n) {
        float gate = g[base + i];
        float sigmoid = 1.0f / (1.0f + expf(-gate));
        y[base + i] = r * w[i] * (gate * sigmoid) * x[base + i];
        i += blockDim.x;
    }
}
