// expect: thread 0 of block 0 handled all 2,048 elements
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (long long i = 0; i < n; ++i) {
            atomicAdd(&visits[i], 1u);
            y[i] = alpha * x[i];
        }
    }
}
