// expect: correct
// each block owns a contiguous chunk of blockDim.x * per_thread elements; within it, lanes are consecutive
extern "C" __global__ void scale_chunks(const float* x, float* y, int n, int per_thread) {
    long long base = (long long)blockIdx.x * blockDim.x * per_thread;
    for (int k = 0; k < per_thread; ++k) {
        long long i = base + (long long)k * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] + x[i];
    }
}
