// Rung 3 of the ladder (sequential addressing): each block sums blockDim.x elements.  Write rung 4:
// each block sums 2 * blockDim.x elements -- the launch has half the blocks -- doing the first add
// while loading.  blockDim.x is a power of two; blockDim.x floats of dynamic shared memory.
extern "C" __global__ void reduce_first_add(const float* x, float* out, int n) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    long long i = (long long)blockIdx.x * blockDim.x + t;   // FILL ME IN: this block's 2 * blockDim.x elements
    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
