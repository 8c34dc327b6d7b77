// expect: correct
// the two elements added in shared memory rather than in a register: the same sums
extern "C" __global__ void reduce_first_add(const float* x, float* out, int n) {
    extern __shared__ float s[];
    const unsigned t = threadIdx.x;
    const long long base = (long long)blockIdx.x * blockDim.x * 2;
    s[t] = base + t < n ? x[base + t] : 0.0f;
    if (base + blockDim.x + t < n) s[t] = s[t] + x[base + blockDim.x + t];
    __syncthreads();
    for (unsigned k = blockDim.x >> 1; k >= 1; k >>= 1) {
        if (t < k) s[t] = s[t] + s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
