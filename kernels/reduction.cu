// reduction.cu -- block reductions side by side: the seed write-up's halving tree (which loses
// partials at 96 threads), its fix, and kernels/reduce.cuh's block_reduce_sum at every block size.
//
// Notebook 12_four_phase_trace (faults b and c).  GPU producer gpu_viz/record/reduction.py, CPU
// model gpu_viz/model/reduction.py, frames gpu_viz/frames/reduction.py; tests/test_reduction.py;
// compute-sanitizer: scripts/sanitize/lessons.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Ikernels kernels/reduction.cu
//
// Kernels (each exists to be watched, so its records are kernel arguments, written in every build):
//   1. seed_reduce_trace   the seed's halving tree over shared memory, then a full-warp finish,
//                          recorded level by level; corrected = 1 is the fixed tree (ceil
//                          halving, guarded finish).
//   2. block_reduce_all    reduce.cuh's block_reduce_sum, verbatim, called twice back to back:
//                          every thread's two totals (the every-block-size proof).
// Additions are plain fp32 adds (no multiply beside them, so never contracted to an FMA) in the
// order the CPU model reproduces.  The record writes are TRACE_LEVEL / TRACE_FINISH lines: always
// compiled (these kernels exist to be watched), and left out of the listings the slides show
// (gpu_viz.kernels.snippet drops TRACE... lines), so the taught tree reads as the tree.
#include "reduce.cuh"

#define TRACE_LEVEL(...) do { __VA_ARGS__; } while (0)
#define TRACE_FINISH(...) do { __VA_ARGS__; } while (0)

#ifndef SEED_MAX_LEVELS
#define SEED_MAX_LEVELS 10  // tree levels recorded (1024 threads halve 5 times; the host passes its own)
#endif

// ----------------------------------------------------------------------------------------------
// 1. the seed's reduction (fault b)
//
// The write-up (seed 000, "Why Fuse CUDA Kernels?") describes its reduce.cuh helper in words only:
// "writes partials to shared memory, combines them in a halving tree, then finishes with warp
// shuffles ... the row total available to every thread through shared[0]", and its wrapper picks
// threads = max(min(256, N / 8), 32), i.e. 96 threads at N = 768.  The code below is OUR
// reconstruction from that description, not the seed's code.  With 96 threads the tree runs one
// level (s = 48) and stops (s = 24 < 32); the full-warp finish then reads slots 0..31 only, so slots
// 32..47 (threads 32..47 and 80..95) never reach the total.
//
// Records (poisoned with NaN by the host): rec_levels [10][blockDim] (slot tid after each tree level), rec_finish [6][32] (warp 0's
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
            if (tid < s) shared[tid] += shared[tid + s];
            __syncthreads();
            TRACE_LEVEL(rec_levels[level * B + tid] = shared[tid]; ++level);
        }
        // [end seed_tree]
    } else {
        // [region fixed_tree]
        int n = B;                                             // slots still holding partials
        while (n > 32) {
            int half = (n + 1) >> 1;                           // ceil: the odd slot is kept
            if (tid < n - half) shared[tid] += shared[tid + half];
            __syncthreads();
            TRACE_LEVEL(rec_levels[level * B + tid] = shared[tid]; ++level);
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
        TRACE_FINISH(rec_finish[lane] = t);
        #pragma unroll
        for (int off = 16, step = 1; off > 0; off >>= 1, ++step) {
            float other = __shfl_down_sync(mask, t, off);
            if (!corrected || lane + off < n0) t += other;
            TRACE_FINISH(rec_finish[step * 32 + lane] = t);
        }
    }
    __syncthreads();                                           // everyone has read its slot
    if (tid == 0) shared[0] = t;
    __syncthreads();
    out[tid] = shared[0];
}

// ----------------------------------------------------------------------------------------------
// 2. the project's reduction, verbatim (fault c: correct for every blockDim 1..1024)
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
