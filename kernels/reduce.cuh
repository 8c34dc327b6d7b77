// reduce.cuh -- warp shuffle + shared-memory block reduction, correct for ANY blockDim (1..1024),
// and the full-warp butterfly (warp_allreduce_sum) the fused RMSNorm kernels sum with.
//
// What the deck's phase 2 does, without its latent faults:
//   * a partial last warp (blockDim.x % 32 != 0) shuffles only among lanes that exist
//     (mask of the lanes present; a lane adds its partner's value only if the partner exists);
//   * warp 0 reads only the partials that were written (lane < number of warps), never
//     an uninitialised smem slot (the deck reads smem[tid] for every tid < 32);
//   * the total is broadcast through its own slot, smem[32], so back-to-back calls are safe.
// Order of additions (the CPU model gpu_viz/model/reduction.py reproduces it bit for bit):
//   step 1, in every warp w:  for off = 16, 8, 4, 2, 1:  v[l] += v[l + off]  if l + off < n_w
//   step 2, warp 0:           v[l] = smem[l] for l < n_warps (else 0), then the same 5 steps.
// Proved at every block size 1..1024 by kernels/reduction.cu's block_reduce_all
// (tests/test_reduction.py).
//
// Use:  __shared__ float red[GPU_VIZ_REDUCE_SLOTS];  float total = block_reduce_sum(local, red);
// Every thread of the block must call it (it contains __syncthreads) and gets the total.
//
// Record hooks for a traced build (trace.cuh) that includes this header; a file may define them
// before including it (kernels/rmsnorm_deck.cu does), else they are empty:
//   TRACE_REDUCE_LANES(stage, step, v)  stage 1: every warp's own sum, stage 2: warp 0's final
//                                       sum; step 0 = before the first shuffle, k = after the k-th
//   TRACE_REDUCE_SLOTS(smem, nwarps)    warp 0, as it reads the partials
#pragma once

#define GPU_VIZ_REDUCE_SLOTS 33
#define GPU_VIZ_FULL_MASK 0xffffffffu

#ifndef TRACE_REDUCE_LANES
#define TRACE_REDUCE_LANES(stage, step, v)
#endif
#ifndef TRACE_REDUCE_SLOTS
#define TRACE_REDUCE_SLOTS(smem, nwarps)
#endif

// [region block_reduce_sum]
// Lanes present in warp `warp` of a block of `nthreads` threads (1..32).
__device__ __forceinline__ int lanes_in_warp(int warp, int nthreads) {
    int rest = nthreads - warp * 32;
    return rest >= 32 ? 32 : rest;
}

// Sum over the first `n` lanes of the calling warp (1 <= n <= 32); lane 0 gets the sum.
// Must be called by exactly those n lanes.  `trace_stage` only names the call to the record
// hooks (0: not recorded).
__device__ __forceinline__ float warp_reduce_sum(float v, int n, int trace_stage = 0) {
    const unsigned mask = (n >= 32) ? GPU_VIZ_FULL_MASK : ((1u << n) - 1u);
    const int lane = threadIdx.x & 31;
    TRACE_REDUCE_LANES(trace_stage, 0, v);
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float other = __shfl_down_sync(mask, v, off);
        if (lane + off < n) v = __fadd_rn(v, other);   // never fused with the caller's multiply
        TRACE_REDUCE_LANES(trace_stage, 6 - __ffs(off), v);
    }
    return v;
}

// Sum of `v` over the whole block (1D blocks, any blockDim.x in 1..1024); every thread gets it.
// `smem` must hold GPU_VIZ_REDUCE_SLOTS floats.
__device__ __forceinline__ float block_reduce_sum(float v, float* smem) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nthreads = blockDim.x;
    const int nwarps = (nthreads + 31) >> 5;
    v = warp_reduce_sum(v, lanes_in_warp(warp, nthreads), 1);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = (lane < nwarps) ? smem[lane] : 0.0f;
        TRACE_REDUCE_SLOTS(smem, nwarps);
        t = warp_reduce_sum(t, lanes_in_warp(0, nthreads), 2);
        if (lane == 0) smem[32] = t;
    }
    __syncthreads();
    return smem[32];
}
// [end block_reduce_sum]

// Sum over the 32 lanes of a warp, every lane gets it (butterfly; all 32 lanes must call).  The
// xor butterfly adds the same pairs in every lane, so every lane holds the bit-identical sum.
// [region warp_allreduce]
__device__ __forceinline__ float warp_allreduce_sum(float v) {
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(GPU_VIZ_FULL_MASK, v, off);
    return v;
}
// [end warp_allreduce]
