// expect: had run
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i + stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
