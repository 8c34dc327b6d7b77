// races.cu -- races made visible: two racy kernels, each beside its fix.
//
// Notebook 08_races_and_reduction.  GPU producer gpu_viz/record/races.py (the same launch run many
// times: the distribution of outcomes), frames gpu_viz/frames/races.py; tests/test_races.py;
// compute-sanitizer racecheck: scripts/sanitize/memory_access.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/races.cu
//
// Kernels:
//   histogram_racy     bins[key]++ as a load, an add and a store: two warps that load the same
//                      bin before either stores lose one count (lanes of one warp with the same
//                      key lose theirs in every run: one store of the several lands)
//   histogram_atomic   atomicAdd(&bins[key], 1): every count lands, in any order
//   histogram_private  each block counts in shared memory (atomics there), then adds its counts
//                      to bins once per bin: far fewer atomics on global memory
//   reverse_racy       y = x reversed within each block through shared memory, with no barrier
//                      between the writes and the reads: a lane may read a slot another warp has
//                      not written yet
//   reverse_synced     the same with __syncthreads() between them
// The histograms take any n >= 0 and any launch shape (grid-stride loops, 64-bit indices); keys
// must lie in [0, nbins).  The reversals take blocks of up to 1024 threads and n = gridDim.x *
// blockDim.x.
//
// No traced build: what each run produced (the bins, y) is the record.

// [region histogram_racy]
extern "C" __global__ void histogram_racy(const int* keys, long long n, int* bins) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        bins[keys[i]] += 1;                           // load, add, store: not one step
}
// [end histogram_racy]

// [region histogram_atomic]
extern "C" __global__ void histogram_atomic(const int* keys, long long n, int* bins) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&bins[keys[i]], 1);                 // read-modify-write as one step
}
// [end histogram_atomic]

// [region histogram_private]
extern "C" __global__ void histogram_private(const int* keys, long long n, int* bins, int nbins) {
    extern __shared__ int local[];                    // this block's own nbins counters
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();                                  // zeroed before anyone counts
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&local[keys[i]], 1);                // contention stays inside the block
    __syncthreads();                                  // every count in before they are added up
    for (int b = threadIdx.x; b < nbins; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);  // one global atomic per bin per block
}
// [end histogram_private]

// [region reverse_racy]
extern "C" __global__ void reverse_racy(const float* x, float* y) {
    __shared__ float s[1024];
    const int t = threadIdx.x;
    const long long base = (long long)blockIdx.x * blockDim.x;
    s[t] = x[base + t];
    y[base + t] = s[blockDim.x - 1 - t];              // written yet? by a lane of another warp
}
// [end reverse_racy]

// [region reverse_synced]
extern "C" __global__ void reverse_synced(const float* x, float* y) {
    __shared__ float s[1024];
    const int t = threadIdx.x;
    const long long base = (long long)blockIdx.x * blockDim.x;
    s[t] = x[base + t];
    __syncthreads();                                  // every slot written before any is read
    y[base + t] = s[blockDim.x - 1 - t];
}
// [end reverse_synced]
