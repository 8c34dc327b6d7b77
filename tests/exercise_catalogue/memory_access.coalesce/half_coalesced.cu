// expect: not coalesced
// pairs of elements per lane: lanes 8 bytes apart, half of every sector's bytes unused per request
extern "C" __global__ void scale_chunks(const float* x, float* y, int n, int per_thread) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long T = (long long)gridDim.x * blockDim.x;
    for (int k = 0; k < per_thread; k += 2) {
        for (int h = 0; h < 2 && k + h < per_thread; ++h) {
            long long i = (k / 2) * 2 * T + 2 * t + h;
            if (i < n) y[i] = 2.0f * x[i];
        }
    }
}
