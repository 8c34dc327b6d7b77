// expect: correct
extern "C" __global__ void scale_chunks(const float* x, float* y, int n, int per_thread) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long T = (long long)gridDim.x * blockDim.x;
    for (int k = 0; k < per_thread; ++k) {
        long long i = k * T + t;
        if (i < n) y[i] = 2.0f * x[i];
    }
}
