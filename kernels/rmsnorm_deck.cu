// rmsnorm.cu -- the deck's RMSNorm, four phases on the silicon, one block per row.
//
//   y[r, i] = x[r, i] * rsqrt(mean_i(x[r, i]^2) + eps) * w[i]      x, y: (M, d)   w: (d,)
//
// Launch: grid = (M,), block = (blockDim,), no dynamic shared memory, on the caller's stream.
// Python: gpu_viz.rmsnorm.four_phase(x, w, eps, block, variant) compiles this file with NVRTC
// (gpu_viz.kernels.load) and launches it; the deck's slides show the `// [region ...]` fences.
// Offline build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels kernels/rmsnorm.cu
//
// Element types: float (f32), __half (f16), __nv_bfloat16 (bf16) in and out; every sum,
// product and the rsqrt are fp32.  Row offsets are size_t (64-bit); d < 2^31 - 1024.
//
// Variants (one entry point per variant and dtype: rmsnorm_<variant>_<f32|f16|bf16>):
//   deck     the deck's code as shown on its slides (phases 1-4 below).  Correct only when
//            blockDim.x == 1024 (32 full warps): phase 2 reads smem[tid] for every tid < 32,
//            so with fewer than 32 warps it adds uninitialised shared memory, and a block that
//            is not a multiple of 32 shuffles with a full mask over lanes that do not exist.
//   guarded  the same four phases, correct for any blockDim 32..1024 and any d >= 1: phase 2 is
//            block_reduce_sum from reduce.cuh (partial warps, only written slots read), and
//            phase 3 is computed by every thread from the broadcast total (one barrier fewer).
//
// The only edits to the deck's lines: `row` is a size_t (so row*d is 64-bit), and element loads
// and stores go through to_f32()/from_f32<T>() so one source serves fp32, fp16 and bf16.
//
// Where the data lives (the deck's captions): phase 1 reads VRAM, writes registers; phase 2
// registers -> shared -> registers; phase 3 reads constant memory (d and eps are kernel
// parameters, which live in the constant bank), writes shared memory; phase 4 reads VRAM +
// shared + L1 (w[i] is re-read by every block, hot in L1/L2), writes VRAM.

#include "convert.cuh"  // to_f32 / from_f32<T>
#include "reduce.cuh"

#define FULL 0xffffffffu  // all 32 lanes of a warp take part in the shuffle

// ----------------------------------------------------------------------------------------
// kernel 1: the deck's four phases, as shown (latent fault: needs blockDim.x == 1024)

template <typename T>
__device__ __forceinline__ void rmsnorm_deck(const T* __restrict__ x, const T* __restrict__ w,
                                             T* __restrict__ y, int d, float eps) {
    __shared__ float smem[32];      // one partial sum per warp
    __shared__ float smem_rms;      // the row's 1/RMS, published by thread 0
    const int tid = threadIdx.x;
    const int lane = tid % 32, warpId = tid / 32;
    const size_t row = blockIdx.x;  // one block per row; size_t so row*d cannot overflow

    // [region phase1]
    // per thread · tid = threadIdx.x
    float local = 0.0f;        // private register
    for (int i = tid; i < d; i += blockDim.x) {
        float v = to_f32(x[row*d + i]);   // LDG from VRAM
        local += v * v;           // FFMA, stays in reg
    }
    // i = tid, then tid+1024  → 2 passes
    // [end phase1]

    // [region phase2]
    // 1 · collapse 32 lanes → lane 0  (5 steps)
    for (int off = 16; off > 0; off >>= 1)
        local += __shfl_down_sync(FULL, local, off);

    // 2 · each warp's lane 0 → shared memory
    if (lane == 0) smem[warpId] = local;
    __syncthreads();

    // 3 · warp 0 reduces the 32 partial sums
    float total = (tid < 32) ? smem[tid] : 0;
    if (warpId == 0)
        for (int off = 16; off > 0; off >>= 1)
            total += __shfl_down_sync(FULL, total, off);
    // [end phase2]

    // [region phase3]
    if (tid == 0) {
        float mean = total / d;        // d ← constant mem
        smem_rms = rsqrtf(mean + eps);  // eps ← constant mem
    }
    __syncthreads();   // RMS now visible to all
    // [end phase3]

    // [region phase4]
    float rms = smem_rms;          // from shared mem
    for (int i = tid; i < d; i += blockDim.x) {
        y[row*d + i] = from_f32<T>(
            to_f32(x[row*d + i]) * rms * to_f32(w[i])); // STG to VRAM
    }
    // w[i]: left in VRAM, hot in L1 cache
    // [end phase4]
}

// ----------------------------------------------------------------------------------------
// kernel 2: guarded -- the same phases, correct for any blockDim 32..1024 and any d >= 1

template <typename T>
__device__ __forceinline__ void rmsnorm_guarded(const T* __restrict__ x, const T* __restrict__ w,
                                                T* __restrict__ y, int d, float eps) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];  // 32 warp partials + the broadcast total
    const int tid = threadIdx.x;
    const size_t row = blockIdx.x;
    const T* xr = x + row * (size_t)d;           // 64-bit row offset
    T* yr = y + row * (size_t)d;

    // phase 1: as the deck (reads VRAM, writes registers)
    float local = 0.0f;
    for (int i = tid; i < d; i += blockDim.x) {
        float v = to_f32(xr[i]);
        local += v * v;
    }

    // [region guarded_phase2]
    // phase 2 without the latent fault: a partial last warp shuffles only among the lanes
    // it has, warp 0 reads only the smem slots that were written (lane < number of warps),
    // and the total comes back to EVERY thread through its own slot, red[32].
    float total = block_reduce_sum(local, red);
    // phase 3, in every thread: no thread-0 branch, no second __syncthreads()
    const float rms = rsqrtf(total / (float)d + eps);
    // [end guarded_phase2]

    // phase 4: as the deck (reads VRAM + L1, writes VRAM)
    for (int i = tid; i < d; i += blockDim.x) {
        yr[i] = from_f32<T>(to_f32(xr[i]) * rms * to_f32(w[i]));
    }
}

// ----------------------------------------------------------------------------------------
// entry points: extern "C" names for NVRTC (CuPy) and nvcc alike, one per variant x dtype.
// __launch_bounds__(1024): the compiler keeps registers low enough for the deck's 1024 threads.

#define RMSNORM_ENTRY(variant, suffix, T)                                                     \
    extern "C" __global__ void __launch_bounds__(1024) rmsnorm_##variant##_##suffix(          \
        const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int d, float eps) { \
        rmsnorm_##variant<T>(x, w, y, d, eps);                                                \
    }

RMSNORM_ENTRY(deck, f32, float)
RMSNORM_ENTRY(deck, f16, __half)
RMSNORM_ENTRY(deck, bf16, __nv_bfloat16)
RMSNORM_ENTRY(guarded, f32, float)
RMSNORM_ENTRY(guarded, f16, __half)
RMSNORM_ENTRY(guarded, bf16, __nv_bfloat16)
