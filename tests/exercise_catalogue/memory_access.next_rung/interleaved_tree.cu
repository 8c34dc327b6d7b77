// expect: the tree diverges
// the first add is right, but the tree went back to rung 1's interleaved addressing
extern "C" __global__ void reduce_first_add(const float* x, float* out, int n) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    long long i = (long long)blockIdx.x * (2 * blockDim.x) + t;
    float v = (i < n) ? x[i] : 0.0f;
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        if (t % (2 * k) == 0) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
