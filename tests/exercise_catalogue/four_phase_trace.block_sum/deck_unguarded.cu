// expect: warp 0 reads a shared slot no warp wrote
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (tid < 32) {
        v = smem[tid];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) out[0] = v;
    }
}
