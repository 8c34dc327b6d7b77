// occupancy.cu -- three kernels with the same job shape (one output per thread) and different
// appetites, for the occupancy lesson: which resource runs out first.
//
// Notebook 05_block_1024_cap.  Launchers, the occupancy calculator and the CUDA API's answer:
// gpu_viz/occupancy.py; tests/test_occupancy.py;
// compute-sanitizer: scripts/sanitize/memory.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels kernels/occupancy.cu
//
// Kernels:
//   occ_light   y = a*x + b: few registers (occupancy limited by threads or blocks).
//   occ_heavy   keeps OCC_HEAVY_LIVE values live per thread: many registers (limit: registers).
//   occ_smem    stages through a static shared tile of OCC_SMEM_TILE floats + dynamic shared
//               memory (limit: shared memory).
// The OCC_* sizes come from gpu_viz/occupancy.py as -D options (the defaults below are the same).

// [region occ_light]
extern "C" __global__ void occ_light(const float* __restrict__ x, float* __restrict__ y,
                                     float a, float b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), b);
}
// [end occ_light]

#ifndef OCC_HEAVY_LIVE
#define OCC_HEAVY_LIVE 64
#endif
#ifndef OCC_HEAVY_ROUNDS
#define OCC_HEAVY_ROUNDS 4
#endif

// r[k] = x[(i + k) % n] for k < OCC_HEAVY_LIVE, then OCC_HEAVY_ROUNDS in-place sweeps
//   r[k] = 0.5 * r[k] + 0.25 * r[(k + 1) % LIVE]   (k ascending: r[0] is already new when k = LIVE-1)
// y[i] = sum_k r[k].  All LIVE values stay live at once: the registers it needs are real.
// [region occ_heavy]
extern "C" __global__ void occ_heavy(const float* __restrict__ x, float* __restrict__ y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float r[OCC_HEAVY_LIVE];
    #pragma unroll
    for (int k = 0; k < OCC_HEAVY_LIVE; ++k) r[k] = x[(i + k) % n];
    #pragma unroll
    for (int round = 0; round < OCC_HEAVY_ROUNDS; ++round) {
        #pragma unroll
        for (int k = 0; k < OCC_HEAVY_LIVE; ++k)
            r[k] = __fadd_rn(__fmul_rn(0.5f, r[k]), __fmul_rn(0.25f, r[(k + 1) % OCC_HEAVY_LIVE]));
    }
    float s = 0.0f;
    #pragma unroll
    for (int k = 0; k < OCC_HEAVY_LIVE; ++k) s = __fadd_rn(s, r[k]);
    y[i] = s;
}
// [end occ_heavy]

#ifndef OCC_SMEM_TILE
#define OCC_SMEM_TILE 4096
#endif

// y[i] = x[i] + x[block's mirror index]: staged through a static tile of OCC_SMEM_TILE floats (tile[t] for every
// t < blockDim.x, wrapping) plus `dynamic` bytes of dynamic shared memory that only count
// against occupancy (the kernel writes and reads back its first float per thread, if any).
// [region occ_smem]
extern "C" __global__ void occ_smem(const float* __restrict__ x, float* __restrict__ y, int n,
                                    int dyn_floats) {
    __shared__ float tile[OCC_SMEM_TILE];
    extern __shared__ float dyn[];
    const int t = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + t;
    const float v = (i < n) ? x[i] : 0.0f;
    tile[t % OCC_SMEM_TILE] = v;
    if (t < dyn_floats) dyn[t] = v;
    __syncthreads();
    const int mirror = blockDim.x - 1 - t;          // another thread's value, via shared memory
    float w = tile[mirror % OCC_SMEM_TILE];
    if (t < dyn_floats) w = __fadd_rn(w, __fsub_rn(dyn[t], v));   // adds exactly 0
    if (i < n) y[i] = __fadd_rn(v, w);
}
// [end occ_smem]
