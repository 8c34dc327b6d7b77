// Make this a grid-stride loop: every i in [0, n) handled exactly once, for any grid and block.
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    // FILL ME IN: a loop so that every i in [0, n) is handled exactly once, for any grid and block
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&visits[i], 1u);   // keep: the checker counts the visits
        y[i] = alpha * x[i];
    }
}
