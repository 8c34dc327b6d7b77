// memory.cu -- what the memory hierarchy costs, measured: load latency and streaming bandwidth.
//
// Notebooks 01_whole_chip and 04_latency_hiding.  Launchers and checks: gpu_viz/measure/memory.py
// (figures: gpu_viz/figures/memory.py); tests/test_memory.py;
// compute-sanitizer: scripts/sanitize/memory.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels kernels/memory.cu
//
// Kernels:
//   pointer_chase   ONE thread follows a random cyclic permutation: each load's address is the
//                   value the previous load returned, so no two loads overlap and no prefetcher
//                   can guess the next line.  Time per load = latency of the level the working
//                   set fits in (L1, L2, DRAM), in SM cycles (clock64) and ns (%globaltimer).
//   stream_read     grid-stride float4 reads, exactly ONE 16-byte load in flight per thread per
//                   iteration (#pragma unroll 1), per-block sums for the check.  Bandwidth vs
//                   working-set size, and vs resident warps per SM (Little's law).
#include "reduce.cuh"
#include "sreg.cuh"

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
