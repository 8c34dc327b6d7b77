// expect: thread 0 of block 0 handled all 2,048 elements
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    // thread 0 of each block walks the block's share of the array, every gridDim.x-th element
    if (threadIdx.x != 0) return;
    for (long long i = blockIdx.x; i < n; i += gridDim.x) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
