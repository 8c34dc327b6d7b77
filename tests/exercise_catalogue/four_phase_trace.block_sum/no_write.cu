// expect: out[0] was never written
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    if (lane == 0) smem[warp] = v;
    __syncthreads();
}
