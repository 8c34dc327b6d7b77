// expect: by the whole grid
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
