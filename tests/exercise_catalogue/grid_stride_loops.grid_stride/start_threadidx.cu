// expect: the loop starts at threadIdx.x
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = threadIdx.x; i < n; i += stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
