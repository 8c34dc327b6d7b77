// Each thread doubles `per_thread` elements of x into y, in warp-major order: on trip k, thread t
// takes element k * T + t (T = threads in the grid), so a warp's lanes touch consecutive floats.
extern "C" __global__ void scale_chunks(const float* x, float* y, int n, int per_thread) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long T = (long long)gridDim.x * blockDim.x;
    for (int k = 0; k < per_thread; ++k) {
        long long i = k * T + t;                 // consecutive lanes, consecutive elements
        if (i < n) y[i] = 2.0f * x[i];
    }
}
