// expect: correct
extern "C" __global__ void histogram(const int* keys, int n, int* bins) {
    unsigned* counts = reinterpret_cast<unsigned*>(bins);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicInc(&counts[keys[i]], 0xffffffffu);
}
