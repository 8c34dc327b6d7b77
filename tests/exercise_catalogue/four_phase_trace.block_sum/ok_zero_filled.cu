// expect: correct
#define FULL 0xffffffffu
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid < 32) s[tid] = 0.0f;          // zero-fill every slot first
    __syncthreads();
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    unsigned present = min(32u, blockDim.x - warp * 32);
    unsigned mask = present == 32 ? FULL : (1u << present) - 1u;
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_down_sync(mask, v, off);
        if (lane + off < present) v += o;
    }
    if (lane == 0) s[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = s[lane];                      // unwritten slots hold 0: safe to read all of warp 0's
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_down_sync(mask, v, off);
            if (lane + off < present) v += o;
        }
        if (tid == 0) out[0] = v;
    }
}
