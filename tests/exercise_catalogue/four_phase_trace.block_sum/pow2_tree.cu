// expect: a halving tree
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[1024];
    unsigned tid = threadIdx.x;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    s[tid] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[0] = s[0];
}
