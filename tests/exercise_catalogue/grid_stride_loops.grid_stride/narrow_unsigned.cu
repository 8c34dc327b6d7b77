// expect: the loop index is a 32-bit unsigned int
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    unsigned stride = blockDim.x * gridDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
