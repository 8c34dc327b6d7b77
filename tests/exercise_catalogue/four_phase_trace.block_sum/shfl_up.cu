// expect: __shfl_up_sync instead of __shfl_down_sync
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    unsigned nwarps = (blockDim.x + 31) / 32;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    int present = min(32, (int)(blockDim.x - warp * 32));
    unsigned mask = present == 32 ? 0xffffffffu : (1u << present) - 1u;
    for (int off = 16; off > 0; off >>= 1) { float o = __shfl_up_sync(mask, v, off); if ((int)(lane + off) < present) v += o; }
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < nwarps) ? smem[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) { float o = __shfl_up_sync(mask, v, off); if ((int)(lane + off) < present) v += o; }
        if (tid == 0) out[0] = v;
    }
}
