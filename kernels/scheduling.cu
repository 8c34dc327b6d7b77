// scheduling.cu -- how the hardware queue hands blocks to SMs: every block records where and when.
//
// Notebook 09_kernel_scheduling.  GPU producer gpu_viz/record/scheduling.py, CPU model (a named
// round-robin model) gpu_viz/model/scheduling.py, frames gpu_viz/frames/scheduling.py;
// tests/test_scheduling.py;
// compute-sanitizer: scripts/sanitize/lessons.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/scheduling.cu
//
// Kernel:
//   scheduled_block   each block (any blockDim) does an adjustable amount of work and thread 0
//                     records, for its block b:
//                       smid[b]                      %smid, the SM it ran on
//                       t_start[b], t_end[b]         %globaltimer (ns) on entry and after the work
//                       clk_start[b], clk_end[b]     clock64() (SM cycles) on entry and after
//                     work: every thread spins until clock64() has advanced `spin_cycles`, then
//                     runs `fma_iters` dependent FMAs; __syncthreads() waits for the whole block.
//                     sink[0] is written only if the FMA chain hits an impossible value, so the
//                     compiler must keep the chain.
// The records are the lesson itself (where and when is all it shows), so they are written in
// every build.  __launch_bounds__(1024, 2) keeps the kernel at <= 32 registers per thread:
// registers never cap how many of its blocks an SM holds (2048 threads x 32 = the 64K register
// file), so the CPU model's occupancy needs only the thread and block limits.
#include "sreg.cuh"

// [region scheduled_block]
extern "C" __global__ void __launch_bounds__(1024, 2) scheduled_block(
        long long spin_cycles, int fma_iters, unsigned* smid, unsigned long long* t_start,
        unsigned long long* t_end, long long* clk_start, long long* clk_end, float* sink) {
    __syncthreads();                                  // the whole block is resident
    if (threadIdx.x == 0) {
        smid[blockIdx.x] = ::smid();                  // which SM did the queue pick?
        t_start[blockIdx.x] = globaltimer_ns();       // when did this block start (ns)?
        clk_start[blockIdx.x] = clock64();
    }
    long long t0 = clock64();
    while (clock64() - t0 < spin_cycles) { }          // work, measured in SM cycles
    float acc = (float)threadIdx.x;
    for (int k = 0; k < fma_iters; ++k) acc = fmaf(acc, 0.999f, 1.0f);  // or work in FMAs
    if (acc == -1.2345f) sink[0] = acc;               // never true: keeps the FMAs alive
    __syncthreads();                                  // the block ends when its last warp does
    if (threadIdx.x == 0) {
        clk_end[blockIdx.x] = clock64();
        t_end[blockIdx.x] = globaltimer_ns();         // when did it finish (ns)?
    }
}
// [end scheduled_block]
