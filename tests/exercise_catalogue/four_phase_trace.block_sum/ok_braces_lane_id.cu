// expect: correct
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float partials[32];
    int tid = threadIdx.x, lane_id = tid % 32, warp_id = tid / 32;
    int nwarps = (blockDim.x + 31) / 32;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) { v += x[i]; }
    int here = min(32, (int)blockDim.x - warp_id * 32);
    unsigned mask = __activemask();
    for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_down_sync(mask, v, off);
        if (lane_id + off < here) { v += o; }
    }
    if (lane_id == 0) { partials[warp_id] = v; }
    __syncthreads();
    if (warp_id == 0) {
        float t = 0.0f;
        if (lane_id < nwarps) {
            t = partials[lane_id];
        }
        for (int off = 16; off > 0; off /= 2) {
            float o = __shfl_down_sync(mask, t, off);
            if (lane_id + off < here) { t += o; }
        }
        if (lane_id == 0) { out[0] = t; }
    }
}
