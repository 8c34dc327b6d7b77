// expect: still racy
// volatile makes every load and store reach memory, but they are still three steps
extern "C" __global__ void histogram(const int* keys, int n, int* bins) {
    volatile int* b = bins;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        b[keys[i]] = b[keys[i]] + 1;
}
