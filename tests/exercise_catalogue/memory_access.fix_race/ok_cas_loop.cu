// expect: correct
// the increment as a compare-and-swap loop (the CUDA Programming Guide's pattern): the plain read
// of bins[k] may be stale, and atomicCAS stores only when it is not, else the loop tries again
extern "C" __global__ void histogram(const int* keys, int n, int* bins) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int* p = &bins[keys[i]];
        int old = *p, assumed;
        do {
            assumed = old;
            old = atomicCAS(p, assumed, assumed + 1);
        } while (old != assumed);
    }
}
