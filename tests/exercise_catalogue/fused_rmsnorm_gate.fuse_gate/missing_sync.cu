// expect: a race in shared memory
// a hand-written reduction: partials into shared memory, thread 0 adds them -- with no barrier
// between the partials' stores and thread 0's reads (nor before the others read r)
extern "C" __global__ void fuse_gate(const float* x, const float* g, const float* w, float* y, int n, float eps) {
    __shared__ float part[1024];
    __shared__ float r_shared;
    const long long row = (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) local += x[row + i] * x[row + i];
    part[threadIdx.x] = local;
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int t = 0; t < blockDim.x; ++t) total += part[t];
        r_shared = rsqrtf(total / n + eps);
    }
    __syncthreads();
    float r = r_shared;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float gate = g[row + i];
        y[row + i] = x[row + i] * w[i] * (gate / (1.0f + expf(-gate))) * r;
    }
}
