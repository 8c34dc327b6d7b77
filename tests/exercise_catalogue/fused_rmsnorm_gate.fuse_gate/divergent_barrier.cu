// expect: a __syncthreads() that not every thread of the block reaches
// the reduction's barrier inside `if (threadIdx.x < n)`: with rows shorter than the block, the
// threads past n never reach it
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float part[1024];
    __shared__ float r_shared;
    const long long row = (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) local += x[row + i] * x[row + i];
    if (threadIdx.x < n) {
        part[threadIdx.x] = local;
        __syncthreads();
        if (threadIdx.x == 0) {
            float total = 0.0f;
            int used = n < blockDim.x ? n : blockDim.x;
            for (int t = 0; t < used; ++t) total += part[t];
            r_shared = rsqrtf(total / n + eps);
        }
    }
    __syncthreads();
    float r = r_shared;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gate = g[row + i];
        y[row + i] = x[row + i] * w[i] * (gate / (1.0f + expf(-gate))) * r;
    }
}
