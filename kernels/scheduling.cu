// scheduling.cu -- how the hardware queue hands blocks to SMs: every block records where and when.
//
// Kernels (NVRTC through gpu_viz.kernels.load, or: nvcc -arch=sm_89 -cubin scheduling.cu):
//   scheduled_block   each block (any blockDim) does an adjustable amount of work and thread 0
//                     records, for its block b:
//                       smid[b]                      %smid, the SM it ran on
//                       t_start[b], t_end[b]         %globaltimer (ns) on entry and after the work
//                       clk_start[b], clk_end[b]     clock64() (SM cycles) on entry and after
//                     work: every thread spins until clock64() has advanced `spin_cycles`, then
//                     runs `fma_iters` dependent FMAs; __syncthreads() waits for the whole block.
//                     sink[0] is written only if the FMA chain hits an impossible value, so the
//                     compiler must keep the chain.
// %globaltimer is a chip-wide nanosecond clock (on some GPUs it ticks in steps of ~1 us);
// clock64() is a per-SM cycle counter: compare it only within one block.

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned sm_id() {
    unsigned v;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
    return v;
}

// [region scheduled_block]
extern "C" __global__ void scheduled_block(long long spin_cycles, int fma_iters,
                                           unsigned* smid, unsigned long long* t_start,
                                           unsigned long long* t_end, long long* clk_start,
                                           long long* clk_end, float* sink) {
    __syncthreads();                                  // the whole block is resident
    if (threadIdx.x == 0) {
        smid[blockIdx.x] = sm_id();                   // which SM did the queue pick?
        t_start[blockIdx.x] = global_ns();            // when did this block start (ns)?
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
        t_end[blockIdx.x] = global_ns();              // when did it finish (ns)?
    }
}
// [end scheduled_block]
