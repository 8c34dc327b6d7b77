// Reference solution: partial warps shuffle among the lanes they have; warp 0 reads only the
// partials that were written.
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    unsigned nwarps = (blockDim.x + 31) / 32;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    // the lanes this warp has: 32, or fewer in the last warp of a block that is not a multiple of 32
    int present = min(32, (int)(blockDim.x - warp * 32));
    unsigned mask = present == 32 ? 0xffffffffu : (1u << present) - 1u;
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_down_sync(mask, v, off);
        if ((int)(lane + off) < present) v += o;                    // only a partner that exists
    }
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < nwarps) ? smem[lane] : 0.0f;                       // only the partials written
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_down_sync(mask, v, off);                  // warp 0's own lanes
            if ((int)(lane + off) < present) v += o;
        }
        if (tid == 0) out[0] = v;
    }
}
