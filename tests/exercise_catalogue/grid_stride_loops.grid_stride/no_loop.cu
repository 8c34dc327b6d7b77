// expect: there is no loop
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
