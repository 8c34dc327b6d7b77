// rmsnorm_deck.cu -- the deck's RMSNorm, four phases on the silicon, one block per row.
//
//   y[r, i] = x[r, i] * rsqrt(mean_i(x[r, i]^2) + eps) * w[i]      x, y: (M, d)   w: (d,)
//
// Notebooks 10_rmsnorm_four_phases (taught), 11_rmsnorm_speedup (timed: gpu_viz/rmsnorm/deck.py) and
// 12_four_phase_trace (its traced build, played back: GPU producer gpu_viz/record/rmsnorm_deck.py,
// CPU model gpu_viz/model/rmsnorm_deck.py, frames gpu_viz/frames/rmsnorm_deck.py);
// tests/test_rmsnorm_deck.py;
// compute-sanitizer: scripts/sanitize/lessons.py and scripts/sanitize/rmsnorm_deck.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels kernels/rmsnorm_deck.cu
//              (add -DGPU_VIZ_TRACE --fmad=false for the traced build)
//
// Launch: grid = (M,), block = (blockDim,), no dynamic shared memory, on the caller's stream.
// Element types: float (f32), __half (f16), __nv_bfloat16 (bf16) in and out; every sum,
// product and the rsqrt are fp32.  Row offsets are size_t (64-bit); d < 2^31 - 1024.
//
// Kernels (one entry point per variant and dtype: rmsnorm_<variant>_<f32|f16|bf16>):
//   deck     the deck's code as its slides show it (regions phase1 .. phase4).  Correct only when
//            blockDim.x == 1024 (32 full warps): phase 2 reads smem[tid] for every tid < 32, so
//            with fewer than 32 warps it adds uninitialised shared memory, and a block that is not
//            a multiple of 32 shuffles with a full mask over lanes that do not exist.
//   guarded  the same four phases with phase 2 replaced by block_reduce_sum from reduce.cuh
//            (partial warps, only written slots read): correct for any blockDim 1..1024, any d >= 1.
// The only edits to the deck's lines: `row` is a size_t (so row*d is 64-bit), element loads and
// stores go through to_f32()/from_f32<T>() so one source serves fp32, fp16 and bf16, the
// shuffle loops have braces (for their TRACE lines), and the deck's `rms` / `smem_rms` are named
// `rstd` / `smem_rstd`: they hold 1/RMS, the reciprocal the slides call rstd.
//
// Where the data lives (the deck's captions): phase 1 reads VRAM, writes registers; phase 2
// registers -> shared -> registers; phase 3 reads constant memory (d and eps are kernel
// parameters, which live in the constant bank), writes shared memory; phase 4 reads VRAM +
// shared + L1 (w[i] is re-read by every block, hot in L1/L2), writes VRAM.
//
// Traced build (trace.cuh; one block, one row, float): NaN-poisoned records, NaN left = not
// written (a lane that does not exist, a slot nobody wrote)
//   rec.local       [blockDim]        phase 1: each thread's local sum of squares
//   rec.warp_lanes  [nwarps][6][32]   phase 2.1: each warp's lanes before / after each shuffle
//   rec.smem        [32]              phase 2.2: the slots as warp 0 reads them after __syncthreads
//   rec.w0_lanes    [6][32]           phase 2.3: warp 0's lanes as read, then after each shuffle
//   rec.scalars     [4]               phase 3: total, mean, mean + eps, rstd
//   rec.prefill     0 / 1             1: first fill the 32 slots with PREFILL(s) = 1000 + s, a
//                                     visible stand-in for "whatever shared memory held"
// y itself is the kernel's output.
#include "convert.cuh"  // to_f32 / from_f32<T> (and the CUDA fp16/bf16 headers, before trace.cuh)
#include "trace.cuh"

#define FULL GPU_VIZ_FULL_MASK  // all 32 lanes of a warp take part in the shuffle (the deck's name)

#ifdef GPU_VIZ_TRACE
struct FourPhaseRecord { float *local, *warp_lanes, *smem, *w0_lanes, *scalars; long long prefill; };
__device__ FourPhaseRecord rec;
#define PREFILL(s) (1000.0f + (float)(s))

// stage 1: a warp's own lanes; stage 2: warp 0's final reduction (reduce.cuh's stages)
__device__ __forceinline__ void record_lanes(int stage, int step, float v) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float* lanes = (stage == 1) ? rec.warp_lanes + warp * 6 * 32 : rec.w0_lanes;
    lanes[step * 32 + lane] = v;
}
__device__ __forceinline__ void record_slots(const float* smem, int nwarps) {
    const int lane = threadIdx.x & 31;
    if (rec.prefill || lane < nwarps) rec.smem[lane] = smem[lane];   // written slots (all, if prefilled)
}
__device__ __forceinline__ void record_scalars(float total, float mean, float mean_eps, float rstd) {
    rec.scalars[0] = total;
    rec.scalars[1] = mean;
    rec.scalars[2] = mean_eps;
    rec.scalars[3] = rstd;
}
__device__ __forceinline__ void prefill_slots(float* smem) {   // rec.prefill is uniform
    if (rec.prefill) {
        if (threadIdx.x < 32) smem[threadIdx.x] = PREFILL(threadIdx.x);
        __syncthreads();
    }
}
#define TRACE_REDUCE_LANES(stage, step, v) TRACE(if (stage) record_lanes(stage, step, v))
#define TRACE_REDUCE_SLOTS(smem, nwarps) TRACE(record_slots(smem, nwarps))
#endif
#include "reduce.cuh"

// ----------------------------------------------------------------------------------------
// phase 2 as the deck shows it (latent fault: needs blockDim.x == 1024, see the header)

__device__ __forceinline__ float deck_phase2(float local, float* smem) {
    const int tid = threadIdx.x;
    const int lane = tid % 32, warpId = tid / 32;
    // [region phase2]
    // 1 · collapse 32 lanes → lane 0  (5 steps)
    TRACE(record_lanes(1, 0, local));
    for (int off = 16; off > 0; off >>= 1) {
        local += __shfl_down_sync(FULL, local, off);
        TRACE(record_lanes(1, 6 - __ffs(off), local));
    }

    // 2 · each warp's lane 0 → shared memory
    if (lane == 0) smem[warpId] = local;
    __syncthreads();

    // 3 · warp 0 reduces the 32 partial sums
    float total = (tid < 32) ? smem[tid] : 0;
    TRACE(if (tid < 32) { rec.smem[tid] = total; record_lanes(2, 0, total); });
    if (warpId == 0)
        for (int off = 16; off > 0; off >>= 1) {
            total += __shfl_down_sync(FULL, total, off);
            TRACE(record_lanes(2, 6 - __ffs(off), total));
        }
    // [end phase2]
    return total;
}

// ----------------------------------------------------------------------------------------
// the four phases: phase 2 is the deck's, or (GUARDED) reduce.cuh's block_reduce_sum

template <typename T, bool GUARDED>
__device__ __forceinline__ void rmsnorm_four_phase(const T* __restrict__ x, const T* __restrict__ w,
                                                   T* __restrict__ y, int d, float eps) {
    __shared__ float smem[GPU_VIZ_REDUCE_SLOTS];  // one partial sum per warp (+ reduce.cuh's total)
    __shared__ float smem_rstd;     // the row's 1/RMS (rstd), published by thread 0
    const int tid = threadIdx.x;
    const size_t row = blockIdx.x;  // one block per row; size_t so row*d cannot overflow
    TRACE(prefill_slots(smem));

    // [region phase1]
    // per thread · tid = threadIdx.x
    float local = 0.0f;        // private register
    for (int i = tid; i < d; i += blockDim.x) {
        float v = to_f32(x[row*d + i]);   // LDG from VRAM
        local += v * v;           // FFMA, stays in reg
    }
    // i = tid, then tid+1024  → 2 passes
    // [end phase1]
    TRACE(rec.local[tid] = local);

    // [region guarded_phase2]
    float total = GUARDED ? block_reduce_sum(local, smem)   // the fix: any blockDim
                          : deck_phase2(local, smem);       // the deck's: 32 full warps only
    // [end guarded_phase2]

    // [region phase3]
    if (tid == 0) {
        float mean = total / d;        // d ← constant mem
        smem_rstd = rsqrtf(mean + eps);  // eps ← constant mem
        TRACE(record_scalars(total, mean, mean + eps, smem_rstd));
    }
    __syncthreads();   // RMS now visible to all
    // [end phase3]

    // [region phase4]
    float rstd = smem_rstd;        // from shared mem
    for (int i = tid; i < d; i += blockDim.x) {
        y[row*d + i] = from_f32<T>(
            to_f32(x[row*d + i]) * rstd * to_f32(w[i])); // STG to VRAM
    }
    // w[i]: left in VRAM, hot in L1 cache
    // [end phase4]
}

// ----------------------------------------------------------------------------------------
// entry points: extern "C" names for NVRTC (CuPy) and nvcc alike, one per variant x dtype.
// __launch_bounds__(1024): the compiler keeps registers low enough for the deck's 1024 threads.

#define RMSNORM_ENTRY(variant, GUARDED, suffix, T)                                            \
    extern "C" __global__ void __launch_bounds__(1024) rmsnorm_##variant##_##suffix(          \
        const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int d, float eps) { \
        rmsnorm_four_phase<T, GUARDED>(x, w, y, d, eps);                                      \
    }

RMSNORM_ENTRY(deck, false, f32, float)
RMSNORM_ENTRY(deck, false, f16, __half)
RMSNORM_ENTRY(deck, false, bf16, __nv_bfloat16)
RMSNORM_ENTRY(guarded, true, f32, float)
RMSNORM_ENTRY(guarded, true, f16, __half)
RMSNORM_ENTRY(guarded, true, bf16, __nv_bfloat16)
