// rmsnorm_trace.cu -- the deck's four-phase RMSNorm, instrumented: the kernel writes every value the
// slides animate into record buffers, so the player shows what the silicon did (notebook 09).
//
// One block, one row:  y[i] = x[i] * rstd * w[i],  rstd = 1 / sqrt(sum(x^2) / d + eps).
// Compiled by NVRTC through CuPy (gpu_viz.kernels.load("rmsnorm_trace.cu", ("--fmad=false",))); the
// host side is gpu_viz/four_phase.py, the CPU model that reproduces every record bit for bit is
// gpu_viz/model/rmsnorm_trace.py.  Offline build check: gpu_viz.kernels.nvcc_compile(..., "sm_90").
//
// Bit-for-bit rules (so numpy float32 reproduces every recorded value):
//   * no FMA contraction: every multiply and add is __fmul_rn / __fadd_rn (and --fmad=false);
//   * the deck's rsqrtf is approximate (about 2 ulp); the traced kernel uses the correctly rounded
//     1 / sqrt:  __fdiv_rn(1.0f, __fsqrt_rn(mean + eps)), two IEEE operations numpy also does;
//   * additions happen in kernels/reduce.cuh's order (see its header).
//
// Kernels (one file, numbered the llm.c way):
//   1. rmsnorm_four_phase_trace  the four phases, recorded.  variant 0 = guarded (reduce.cuh's order,
//                                any blockDim 1..1024); variant 1 = the deck's phase 2 as printed
//                                (FULL-mask shuffles, warp 0 reads smem[tid] for every tid < 32:
//                                needs blockDim % 32 == 0, reads uninitialised slots when the block
//                                has fewer than 32 warps).  prefill = 1 writes TRACE_GARBAGE(s) into
//                                the 32 slots first, a visible stand-in for "whatever was there".
//   2. seed_reduce_trace         the reduction of the fused RMSNorm+SiLU write-up (seed 000), a halving
//                                tree over shared memory then a full-warp finish, recorded level by
//                                level; corrected = 1 is the fixed tree (ceil halving, guarded finish).
//   3. block_reduce_all          kernels/reduce.cuh's block_reduce_sum, verbatim, called twice back to
//                                back: every thread's two totals (the every-block-size proof).
#include "reduce.cuh"

#define TRACE_STEPS 6                        // lane values before the first shuffle + after each of 5
#define TRACE_GARBAGE(s) (1000.0f + (float)(s))  // the visible "stale" pattern of prefill = 1
#define TRACE(buf, idx, val) ((buf)[(idx)] = (val))
#define VARIANT_GUARDED 0
#define VARIANT_DECK 1
#define SEED_MAX_LEVELS 10

// ----------------------------------------------------------------------------------------------
// 1. the four phases, recorded
//
// Records (float32, poisoned with NaN by the host; a NaN left means "not written": a lane that does
// not exist, a slot nobody wrote):
//   rec_local   [blockDim]            phase 1: each thread's local sum of squares
//   rec_warp    [nwarps][6][32]       phase 2.1: each warp's lanes before / after each shuffle
//   rec_smem    [32]                  phase 2.2: the slots as warp 0 sees them after __syncthreads
//   rec_w0      [6][32]               phase 2.3: what warp 0's lanes read, then after each shuffle
//   rec_scalars [4]                   phase 3: total, mean, mean + eps, rstd
//   y           [d]                   phase 4: the output
extern "C" __global__ void rmsnorm_four_phase_trace(
        const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
        int d, float eps, int variant, int prefill,
        float* rec_local, float* rec_warp, float* rec_smem, float* rec_w0, float* rec_scalars) {
    __shared__ float smem[32];
    __shared__ float smem_rms;
    const unsigned FULL = GPU_VIZ_FULL_MASK;
    const int tid = threadIdx.x, lane = tid & 31, warpId = tid >> 5;
    const int nwarps = (blockDim.x + 31) >> 5;
    const int n_lanes = lanes_in_warp(warpId, blockDim.x);     // lanes present in my warp
    const unsigned mask = (n_lanes >= 32) ? FULL : ((1u << n_lanes) - 1u);
    const bool deck = (variant == VARIANT_DECK);
    if (prefill) {                                             // uniform branch (kernel argument)
        if (tid < 32) smem[tid] = TRACE_GARBAGE(tid);          // real life: whatever was there
        __syncthreads();
    }
    // [region four_phase]
    // [region phase1]
    // Phase 1 -- local sums: reads VRAM, writes registers
    float local = 0.0f;                                        // private register
    for (int i = tid; i < d; i += blockDim.x) {
        float v = x[i];                                        // LDG from VRAM
        local = __fadd_rn(local, __fmul_rn(v, v));             // local += v * v, no FMA
    }
    TRACE(rec_local, tid, local);
    // [end phase1]
    // [region phase2]
    // Phase 2 -- reduction: registers -> shared -> registers
    // 1 . collapse 32 lanes -> lane 0 (5 steps)
    float* my_warp = rec_warp + warpId * TRACE_STEPS * 32;
    TRACE(my_warp, lane, local);
    #pragma unroll
    for (int off = 16, step = 1; off > 0; off >>= 1, ++step) {
        float other = __shfl_down_sync(mask, local, off);
        if (deck || lane + off < n_lanes) local = __fadd_rn(local, other);   // deck: always adds
        TRACE(my_warp, step * 32 + lane, local);
    }
    // 2 . each warp's lane 0 -> shared memory
    if (lane == 0) smem[warpId] = local;
    __syncthreads();
    // 3 . warp 0 reduces the partial sums
    float total = 0.0f;
    if (warpId == 0) {
        if (deck || prefill || lane < nwarps) TRACE(rec_smem, lane, smem[lane]);
        if (deck) total = smem[tid];                           // the deck: every tid < 32
        else total = (lane < nwarps) ? smem[lane] : 0.0f;      // guarded: only written slots
        TRACE(rec_w0, lane, total);
        #pragma unroll
        for (int off = 16, step = 1; off > 0; off >>= 1, ++step) {
            float other = __shfl_down_sync(mask, total, off);
            if (deck || lane + off < n_lanes) total = __fadd_rn(total, other);
            TRACE(rec_w0, step * 32 + lane, total);
        }
    }
    // [end phase2]
    // [region phase3]
    // Phase 3 -- final math: reads constant mem, writes shared mem
    if (tid == 0) {
        float mean = __fdiv_rn(total, (float)d);               // d, eps: kernel arguments (constant bank)
        float mean_eps = __fadd_rn(mean, eps);
        smem_rms = __fdiv_rn(1.0f, __fsqrt_rn(mean_eps));      // deck: rsqrtf(mean + eps)
        TRACE(rec_scalars, 0, total); TRACE(rec_scalars, 1, mean);
        TRACE(rec_scalars, 2, mean_eps); TRACE(rec_scalars, 3, smem_rms);
    }
    __syncthreads();                                           // RMS now visible to all
    // [end phase3]
    // [region phase4]
    // Phase 4 -- apply the weights: reads VRAM + shared + L1, writes VRAM
    float rms = smem_rms;                                      // from shared mem
    for (int i = tid; i < d; i += blockDim.x) {
        y[i] = __fmul_rn(__fmul_rn(x[i], rms), w[i]);          // STG to VRAM; w[i] hot in L1
    }
    // [end phase4]
    // [end four_phase]
}

// ----------------------------------------------------------------------------------------------
// 2. the seed's reduction (fault b)
//
// The write-up (seed 000, "Why Fuse CUDA Kernels?") describes its reduce.cuh helper in words only:
// "writes partials to shared memory, combines them in a halving tree, then finishes with warp
// shuffles ... the row total available to every thread through shared[0]", and its wrapper picks
// threads = max(min(256, N / 8), 32), i.e. 96 threads at N = 768.  The code below is OUR
// reconstruction from that description, not the seed's code.  With 96 threads the tree runs one
// level (s = 48) and stops (s = 24 < 32); the full-warp finish then reads slots 0..31 only, so slots
// 32..47 (threads 32..47 and 80..95) never reach the total.
//
// Records: rec_levels [10][blockDim] (slot tid after each tree level), rec_finish [6][32] (warp 0's
// lanes: what they read, then after each shuffle), out [blockDim] (the total every thread gets).
// corrected = 0 needs blockDim >= 32 (the seed's wrapper guarantees it); corrected = 1 takes 1..1024.
extern "C" __global__ void seed_reduce_trace(const float* __restrict__ partial, int corrected,
                                             float* rec_levels, float* rec_finish, float* out) {
    __shared__ float shared[1024];
    const int tid = threadIdx.x, lane = tid & 31;
    const int B = blockDim.x;
    shared[tid] = partial[tid];
    __syncthreads();
    int level = 0, live = 32;                                  // live: slots the finish must read
    if (!corrected) {
        // [region seed_tree]
        for (int s = B >> 1; s >= 32; s >>= 1) {               // halving tree, stops at 32
            if (tid < s) shared[tid] = __fadd_rn(shared[tid], shared[tid + s]);
            __syncthreads();
            TRACE(rec_levels, level * B + tid, shared[tid]); ++level;
        }
        // [end seed_tree]
    } else {
        // [region fixed_tree]
        int n = B;                                             // slots still holding partials
        while (n > 32) {
            int half = (n + 1) >> 1;                           // ceil: the odd slot is kept
            if (tid < n - half) shared[tid] = __fadd_rn(shared[tid], shared[tid + half]);
            __syncthreads();
            TRACE(rec_levels, level * B + tid, shared[tid]); ++level;
            n = half;
        }
        live = n;
        // [end fixed_tree]
    }
    float t = 0.0f;
    if (tid < 32) {                                            // the warp finish, warp 0
        const int n0 = lanes_in_warp(0, B);
        const unsigned mask = (n0 >= 32) ? GPU_VIZ_FULL_MASK : ((1u << n0) - 1u);
        t = (corrected && lane >= live) ? 0.0f : shared[tid];
        TRACE(rec_finish, lane, t);
        #pragma unroll
        for (int off = 16, step = 1; off > 0; off >>= 1, ++step) {
            float other = __shfl_down_sync(mask, t, off);
            if (!corrected || lane + off < n0) t = __fadd_rn(t, other);
            TRACE(rec_finish, step * 32 + lane, t);
        }
    }
    __syncthreads();                                           // everyone has read its slot
    if (tid == 0) shared[0] = t;
    __syncthreads();
    out[tid] = shared[0];
}

// ----------------------------------------------------------------------------------------------
// 3. the project's reduction, verbatim (fault c: correct for every blockDim 1..1024)
// out[tid] = block_reduce_sum(v[tid]); out[blockDim + tid] = block_reduce_sum(2 * v[tid]) right after
// (the second call checks that back-to-back calls do not race on the broadcast slot).
extern "C" __global__ void block_reduce_all(const float* __restrict__ v, float* out) {
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const int tid = threadIdx.x;
    float a = block_reduce_sum(v[tid], red);
    float b = block_reduce_sum(__fmul_rn(2.0f, v[tid]), red);
    out[tid] = a;
    out[blockDim.x + tid] = b;
}
