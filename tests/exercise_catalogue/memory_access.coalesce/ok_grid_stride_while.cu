// expect: correct
// a plain grid-stride loop covers the same elements (per_thread trips at most, for this launch)
extern "C" __global__ void scale_chunks(const float* x, float* y, int n, int per_thread) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    while (i < n) {
        y[i] = 2.0f * x[i];
        i += (long long)gridDim.x * blockDim.x;
    }
}
