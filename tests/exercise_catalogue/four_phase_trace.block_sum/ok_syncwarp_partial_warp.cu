// expect: correct
// a bare __syncwarp() (full mask) in a partial warp: lanes the warp does not have count as exited,
// which __syncwarp allows (unlike a full-mask shuffle, which would read them)
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float partials[32];
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    int nwarps = (blockDim.x + 31) / 32;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    __syncwarp();
    int here = min(32, (int)blockDim.x - warp * 32);
    unsigned mask = here == 32 ? 0xffffffffu : (1u << here) - 1u;
    for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_down_sync(mask, v, off);
        if (lane + off < here) v += o;
    }
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < nwarps ? partials[lane] : 0.0f;
        for (int off = 16; off > 0; off /= 2) {
            float o = __shfl_down_sync(mask, t, off);
            if (lane + off < here) t += o;
        }
        if (lane == 0) out[0] = t;
    }
}
