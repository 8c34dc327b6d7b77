// expect: no __syncwarp() between
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[1024 + 32];
    unsigned tid = threadIdx.x;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    s[tid] = v;
    __syncthreads();
    // fold everything into the first 32 slots, then a warp-synchronous tree without __syncwarp
    if (tid < 32) {
        float t = 0.0f;
        for (unsigned k = tid; k < blockDim.x; k += 32) t += s[k];
        volatile float* vs = s;
        vs[tid] = t;
        vs[tid + 32] = 0.0f;
        vs[tid] += vs[tid + 16];
        vs[tid] += vs[tid + 8];
        vs[tid] += vs[tid + 4];
        vs[tid] += vs[tid + 2];
        vs[tid] += vs[tid + 1];
        if (tid == 0) out[0] = vs[0];
    }
}
