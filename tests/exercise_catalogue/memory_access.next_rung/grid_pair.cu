// expect: one grid further on
extern "C" __global__ void reduce_first_add(const float* x, float* out, int n) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    long long i = (long long)blockIdx.x * blockDim.x + t;
    long long j = i + (long long)gridDim.x * blockDim.x;
    float v = (i < n) ? x[i] : 0.0f;
    if (j < n) v += x[j];
    s[t] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
