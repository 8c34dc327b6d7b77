// expect: correct
extern "C" __global__ void histogram(const int* keys, int n, int* bins) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[keys[i]], 1);
}
