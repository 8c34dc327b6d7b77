// expect: a do-while
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    long long stride = (long long)blockDim.x * gridDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    do {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
        i += stride;
    } while (i < n);
}
