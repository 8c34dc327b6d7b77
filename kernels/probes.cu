// probes.cu -- small measurements of claims the course makes: what a shuffle step costs, where a
// warp's value sits after each step, which %warpid a block's warps get, how wide an fp16 load is.
//
// Notebooks 03, 09, 10, 12.  Host side gpu_viz/claims/probes.py (`gpu-viz record probes`);
// tests/test_probes.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/probes.cu
//
// Kernels (launch one warp unless said otherwise):
//   shfl_steps        lane l starts with in[l]; after each of the five __shfl_down_sync steps
//                     (offsets 16, 8, 4, 2, 1) every lane writes its value: out[k * 32 + l],
//                     k = 0 (start) .. 5.  The silicon's side of notebook 12's lane-0 exercise.
//   chain_shfl        `steps` dependent __shfl_sync (v = value of lane l+1): SHFL alone
//   chain_shfl_fadd   `steps` dependent v += __shfl_down_sync(v, 1): the deck's reduction step
//   chain_lds         `steps` dependent shared-memory loads (i = smem[i]): an LDS chain
//   chain_ffma        `steps` dependent fmaf(v, a, b): an FFMA chain
//                     Each chain: clock64() before and after the loop, lane 0 writes the cycle
//                     count to cycles[0] and the chain's value to out[0] (so it cannot be
//                     dropped); the host times two step counts and takes the difference, so the
//                     loop's entry and exit cancel.
//   warp_order        any block: lane 0 of each warp writes %warpid, %smid and clock64() at its
//                     first instruction: rec[(block * warps + warp) * 3 + {0, 1, 2}].
//   load_f16          one warp loads 32 consecutive fp16 values (one per lane) and writes them
//                     back as float: the SASS of this kernel names the load's width.
//   reread            any grid: every thread sums its grid-stride share of x (float4 loads),
//                     `passes` times over, and writes the sum to out[thread]: a buffer that fits
//                     in L2 is read from L2 on every pass after the first, so one launch does
//                     enough work to measure L2 bandwidth rather than the launch.  The loads are
//                     __ldcg (ld.global.cg: cached in L2, not in L1): each SM re-reads the same
//                     share every pass, a few tens of KB that its L1 would otherwise hold, and
//                     the probe would time L1.
//   rownorm_reread    one block per row of n floats: pass 1 sums x^2, the block reduces it,
//                     pass 2 reads x AGAIN from global memory (L1/L2 if it is still there, else
//                     DRAM) and writes y = x * rsqrt(mean + eps) * w.
//   rownorm_staged    the same row op with x staged in registers: pass 1 keeps each thread's
//                     STAGE_ITEMS elements, pass 2 reuses them; x is read from memory once.
//                     Needs n <= STAGE_ITEMS * blockDim.x.  Notebook 10's "where data lives".
#include <cuda_fp16.h>
#include "sreg.cuh"
#include "reduce.cuh"

#define FULL 0xffffffffu
#define CHAIN_UNROLL 16

// [region shfl_steps]
extern "C" __global__ void shfl_steps(const float* in, float* out) {
    unsigned lane = threadIdx.x & 31;
    float v = in[lane];
    out[lane] = v;
    int k = 1;
    for (int off = 16; off > 0; off >>= 1, ++k) {
        v += __shfl_down_sync(FULL, v, off);   // lane l adds lane l + off (its own value past 31)
        out[k * 32 + lane] = v;
    }
}
// [end shfl_steps]

// [region chains]
// The timed part of every chain: `steps` dependent STEPs (one statement), CHAIN_UNROLL to a loop
// iteration, between two clock64 reads; lane 0 then writes the chain's VALUE to out[0] (so the
// chain cannot be dropped) and the cycles to cycles[0].  (A macro, not a function taking a
// lambda: this way each kernel compiles to exactly the machine code of the loop written out.)
#define TIMED_CHAIN(STEP, VALUE)                                                                  \
    long long t0 = clock64();                                                                     \
    for (int s = 0; s < steps; s += CHAIN_UNROLL) {                                               \
        _Pragma("unroll") for (int u = 0; u < CHAIN_UNROLL; ++u) STEP;                            \
    }                                                                                             \
    long long t1 = clock64();                                                                     \
    if (lane == 0) { out[0] = VALUE; cycles[0] = t1 - t0; }

extern "C" __global__ void chain_shfl(int steps, const float* seed, float* out, long long* cycles) {
    unsigned lane = threadIdx.x & 31;
    float v = seed[lane];
    TIMED_CHAIN(v = __shfl_sync(FULL, v, (lane + 1) & 31), v)
}

extern "C" __global__ void chain_shfl_fadd(int steps, const float* seed, float* out, long long* cycles) {
    unsigned lane = threadIdx.x & 31;
    float v = seed[lane];
    TIMED_CHAIN(v += __shfl_down_sync(FULL, v, 1), v)
}

extern "C" __global__ void chain_lds(int steps, const float* seed, float* out, long long* cycles) {
    __shared__ int next[32];
    unsigned lane = threadIdx.x & 31;
    next[lane] = (lane + 1) & 31;               // a ring: the next index is the loaded value
    __syncwarp();
    int i = (int)seed[lane] & 31;
    TIMED_CHAIN(i = next[i], (float)i)
}

extern "C" __global__ void chain_ffma(int steps, const float* seed, float* out, long long* cycles) {
    unsigned lane = threadIdx.x & 31;
    float v = seed[lane], a = seed[32], b = seed[33];
    TIMED_CHAIN(v = fmaf(v, a, b), v)
}
// [end chains]

// [region warp_order]
extern "C" __global__ void warp_order(long long* rec) {
    long long t = clock64();                    // first: the time this warp issued
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned warps = (blockDim.x + 31) >> 5;
    if (lane == 0) {
        long long* r = rec + 3ll * (blockIdx.x * warps + warp);
        r[0] = warpid();
        r[1] = smid();
        r[2] = t;
    }
}
// [end warp_order]

// [region load_f16]
extern "C" __global__ void load_f16(const __half* x, float* y) {
    unsigned lane = threadIdx.x & 31;
    y[lane] = __half2float(x[lane]);            // 32 lanes x 2 bytes: one 64-byte warp request
}
// [end load_f16]

// [region reread]
extern "C" __global__ void reread(const float4* x, long long n4, int passes, float* out) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p)
        for (long long i = t; i < n4; i += stride) {
            float4 v = __ldcg(&x[i]);           // L2, never L1: the share would fit L1
            acc += (v.x + v.y) + (v.z + v.w);
        }
    out[t] = acc;
}
// [end reread]

// Both row kernels: y = x * rsqrt(mean(x^2) + eps) * w over rows of n floats, one block a row.
#define ROWNORM_PARAMS const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n, float eps

// [region rownorm_reread]
extern "C" __global__ void rownorm_reread(ROWNORM_PARAMS) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const float* xr = x + (long long)blockIdx.x * n;
    float local = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = xr[i];                          // pass 1: x from memory
        local += v * v;
    }
    float r = rsqrtf(block_reduce_sum(local, red) / n + eps);
    float* yr = y + (long long)blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        yr[i] = xr[i] * r * w[i];                 // pass 2: x from memory again
}
// [end rownorm_reread]

#define STAGE_ITEMS 4

// [region rownorm_staged]
extern "C" __global__ void rownorm_staged(ROWNORM_PARAMS) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const float* xr = x + (long long)blockIdx.x * n;
    float v[STAGE_ITEMS];                         // this thread's elements, kept in registers
    float local = 0.0f;
#pragma unroll
    for (int k = 0; k < STAGE_ITEMS; ++k) {
        int i = threadIdx.x + k * blockDim.x;
        v[k] = i < n ? xr[i] : 0.0f;              // pass 1: x from memory, once
        local += v[k] * v[k];
    }
    float r = rsqrtf(block_reduce_sum(local, red) / n + eps);
    float* yr = y + (long long)blockIdx.x * n;
#pragma unroll
    for (int k = 0; k < STAGE_ITEMS; ++k) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < n) yr[i] = v[k] * r * w[i];       // pass 2: x from registers
    }
}
// [end rownorm_staged]
