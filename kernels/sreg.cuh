// sreg.cuh -- special registers only the silicon knows, read with inline PTX.
//
//   smid()           %smid: which SM runs this thread (0 .. SMs - 1 in practice; PTX does not
//                    promise contiguous values)
//   warpid()         %warpid: the warp's slot on its SM sub-partition right now (volatile: a
//                    warp may move; only a snapshot)
//   globaltimer_ns() %globaltimer: a chip-wide nanosecond clock (on some GPUs it ticks in steps
//                    of about 1 us); clock64() is the per-SM cycle counter, comparable only
//                    within one SM
#pragma once

// [region sreg]
__device__ __forceinline__ unsigned smid() { unsigned v; asm volatile("mov.u32 %0, %%smid;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned warpid() { unsigned v; asm volatile("mov.u32 %0, %%warpid;" : "=r"(v)); return v; }
__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));   // ns since an arbitrary epoch
    return t;
}
// [end sreg]
