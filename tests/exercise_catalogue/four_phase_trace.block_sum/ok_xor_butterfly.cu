// expect: correct
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    unsigned nwarps = (blockDim.x + 31) / 32;
    float v = 0.0f;
    for (long long i = tid; i < n; i += blockDim.x) v += x[i];
    // pad the partial last warp with zero-valued phantom lanes by giving every lane a value:
    // lanes past the block do not exist, so each warp reduces only the lanes it has
    unsigned present = min(32u, blockDim.x - warp * 32);
    unsigned mask = present == 32 ? 0xffffffffu : (1u << present) - 1u;
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_down_sync(mask, v, off);
        v += (lane + off < present) ? o : 0.0f;
    }
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = (lane < nwarps) ? smem[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_down_sync(mask, t, off);
            t += (lane + off < present) ? o : 0.0f;
        }
        if (lane == 0) out[0] = t;
    }
}
