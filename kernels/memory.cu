// memory.cu -- what the memory hierarchy costs, measured: load latency, streaming bandwidth,
// and the kernels the occupancy lesson sizes up.
//
// Compiled at run time by NVRTC (gpu_viz.kernels.load("memory.cu")); launchers and checks live
// in gpu_viz/memory.py (measurements) and gpu_viz/occupancy.py (occupancy).  Offline build check:
//   nvcc -arch=sm_90 -cubin -Xptxas -v -Ikernels kernels/memory.cu
//
// Kernels:
//   pointer_chase   ONE thread follows a random cyclic permutation: each load's address is the
//                   value the previous load returned, so no two loads overlap and no prefetcher
//                   can guess the next line.  Time per load = latency of the level the working
//                   set fits in (L1, L2, DRAM), in SM cycles (clock64) and ns (%globaltimer).
//   stream_read     grid-stride float4 reads, exactly ONE 16-byte load in flight per thread per
//                   iteration (#pragma unroll 1), per-block sums for the check.  Bandwidth vs
//                   working-set size, and vs resident warps per SM (Little's law).
//   occ_light       y = a*x + b: few registers (occupancy limited by threads or blocks).
//   occ_heavy       keeps OCC_HEAVY_LIVE values live per thread: many registers (limit: registers).
//   occ_smem        stages through a 16 KiB static shared tile + dynamic shared memory
//                   (limit: shared memory).
#include "reduce.cuh"

// ----------------------------------------------------------------------------------------------
// timers

__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// ----------------------------------------------------------------------------------------------
// pointer_chase: one thread, one dependent load after another.
//   next[j] is the index of the node after node j (nodes sit stride apart; the rest is unused).
//   warm_steps loads first (bring the working set into the caches), then `steps` timed loads.
//   out_index[0] = where the chase ended (the host checks it against the permutation),
//   out_cycles[0] = clock64 cycles, out_ns[0] = %globaltimer ns, both for the `steps` loads.
// [region pointer_chase]
extern "C" __global__ void pointer_chase(const unsigned int* __restrict__ next, unsigned int start,
                                         int warm_steps, int steps, unsigned int* out_index,
                                         long long* out_cycles, unsigned long long* out_ns) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    unsigned int j = start;
    for (int i = 0; i < warm_steps; ++i) j = __ldca(next + j);   // warm-up pass
    const unsigned long long t0 = globaltimer_ns();
    const long long c0 = clock64();
    for (int i = 0; i < steps; ++i) j = __ldca(next + j);        // address = previous value
    const long long c1 = clock64();
    const unsigned long long t1 = globaltimer_ns();
    out_index[0] = j;                                              // keeps the chain alive
    out_cycles[0] = c1 - c0;
    out_ns[0] = t1 - t0;
}
// [end pointer_chase]

// ----------------------------------------------------------------------------------------------
// stream_read: every thread reads float4s in a grid-stride loop, one load in flight at a time.
//   block_sums[blockIdx.x] = sum of the floats the block read (float32, then block_reduce_sum).
//   n4 = number of float4s; 64-bit indexing.
// [region stream_read]
extern "C" __global__ void stream_read(const float4* __restrict__ x, long long n4,
                                       float* __restrict__ block_sums) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    // [region stream_read_loop]
    #pragma unroll 1
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];                      // LDG.128: ~hundreds of cycles to arrive
        acc += (v.x + v.y) + (v.z + v.w);     // needs v: this warp waits, others issue
    }
    // [end stream_read_loop]
    const float total = block_reduce_sum(acc, red);
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}
// [end stream_read]

// ----------------------------------------------------------------------------------------------
// occupancy kernels: same job shape (one output per thread), different appetites.

// [region occ_light]
extern "C" __global__ void occ_light(const float* __restrict__ x, float* __restrict__ y,
                                     float a, float b, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), b);
}
// [end occ_light]

#define OCC_HEAVY_LIVE 64
#define OCC_HEAVY_ROUNDS 4

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

#define OCC_SMEM_TILE 4096

// y[i] = x[i] + x[block's mirror index]: staged through a 16 KiB static tile (tile[t] for every
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
