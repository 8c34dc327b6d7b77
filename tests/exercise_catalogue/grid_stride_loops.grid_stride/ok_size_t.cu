// expect: correct
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)n; i += stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
