// reduction_ladder.cu -- the sum of n floats, rung by rung (Harris, "Optimizing Parallel Reduction
// in CUDA"; PMPP chapter 10): each rung changes one thing and is checked against float64 first.
//
// Notebook 08_races_and_reduction.  GPU producer gpu_viz/record/reduction_ladder.py (the traced
// build records which threads add in each tree step), frames gpu_viz/frames/reduction_ladder.py;
// tests/test_reduction_ladder.py; GPU timings: gpu_viz/claims/memory_access.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/reduction_ladder.cu
//
// Every rung writes one partial sum per block, out[blockIdx.x]; the partials are summed after it.
// Rungs 1-3 reduce blockDim.x elements per block, rung 4 twice that, rungs 5-6 any number
// (grid-stride loops).  Launch with blockDim.x * sizeof(float) bytes of dynamic shared memory.
//   1. reduce_interleaved   the tree in place: in step k the threads with t % 2k == 0 add s[t + k].
//                           Branches on t % 2k split every warp (divergent).
//   2. reduce_strided       the same pairs, done by threads 0, 1, 2, ... (index 2k * t): no
//                           divergence until few threads remain, but lanes 2k words apart share
//                           banks (bank conflicts).
//   3. reduce_sequential    halve the span instead: threads t < k add s[t + k]. Consecutive lanes,
//                           consecutive words, whole warps retire.  Needs blockDim.x a power of two:
//                           a span of odd length drops its last slot.
//   4. reduce_first_add     rung 3 with the first add done while loading: each block reads
//                           2 * blockDim.x elements, half the blocks.
//   5. reduce_shuffle       each thread sums a grid-stride slice, then reduce.cuh's block_reduce_sum
//                           (warp shuffles, one slot per warp): any blockDim.x.
//   6. reduce_vector        rung 5 with 16-byte loads (float4): a quarter of the load instructions.
// Rungs 1-4 are correct only for power-of-two blockDim.x (the tree's halving); rungs 5-6 for any.
//
// Traced build (trace.cuh), rungs 1-3 only (power-of-two blocks), block 0: rec.adds[step *
// blockDim.x + t] = 1 when thread t adds in tree step `step` (0 elsewhere), and rec.slots[step *
// blockDim.x + d] = the sum it wrote into slot d (each adder records its own write: no thread
// reads a slot another may be writing).
#include "reduce.cuh"
#include "trace.cuh"

#ifdef GPU_VIZ_TRACE
struct LadderRecord { int* adds; float* slots; };
__device__ LadderRecord rec;
#define RECORD_ADD(step, t, d, v) do { if (blockIdx.x == 0) { rec.adds[(step) * blockDim.x + (t)] = 1; \
                                                               rec.slots[(step) * blockDim.x + (d)] = (v); } } while (0)
// the tree step of span k: k = 1, 2, 4, ... (rungs 1-2); k = blockDim.x / 2, / 4, ... (rung 3)
#define UP_STEP(k) (__ffs(k) - 1)
#define DOWN_STEP(k) (__ffs(blockDim.x) - 1 - __ffs(k))
#endif

// [region interleaved]
extern "C" __global__ void reduce_interleaved(const float* x, float* out, long long n) {
    extern __shared__ float s[];
    const unsigned t = threadIdx.x;
    const long long i = (long long)blockIdx.x * blockDim.x + t;
    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        if (t % (2 * k) == 0) {                      // lanes 0, 2k, 4k, ...: every warp splits
            s[t] = __fadd_rn(s[t], s[t + k]);
            TRACE(RECORD_ADD(UP_STEP(k), t, t, s[t]));
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
// [end interleaved]

// [region strided]
extern "C" __global__ void reduce_strided(const float* x, float* out, long long n) {
    extern __shared__ float s[];
    const unsigned t = threadIdx.x;
    const long long i = (long long)blockIdx.x * blockDim.x + t;
    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        const unsigned idx = 2 * k * t;              // threads 0, 1, 2, ... take the pairs
        if (idx < blockDim.x) {
            s[idx] = __fadd_rn(s[idx], s[idx + k]);  // lanes 2k words apart: shared banks
            TRACE(RECORD_ADD(UP_STEP(k), t, idx, s[idx]));
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
// [end strided]

// [region sequential]
extern "C" __global__ void reduce_sequential(const float* x, float* out, long long n) {
    extern __shared__ float s[];
    const unsigned t = threadIdx.x;
    const long long i = (long long)blockIdx.x * blockDim.x + t;
    s[t] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) {                                 // the first k threads: whole warps idle
            s[t] = __fadd_rn(s[t], s[t + k]);
            TRACE(RECORD_ADD(DOWN_STEP(k), t, t, s[t]));
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
// [end sequential]

// [region first_add]
extern "C" __global__ void reduce_first_add(const float* x, float* out, long long n) {
    extern __shared__ float s[];
    const unsigned t = threadIdx.x;
    const long long i = (long long)blockIdx.x * (2 * blockDim.x) + t;      // two elements a thread
    float v = (i < n) ? x[i] : 0.0f;
    if (i + blockDim.x < n) v = __fadd_rn(v, x[i + blockDim.x]);             // the first add, in the load
    s[t] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] = __fadd_rn(s[t], s[t + k]);
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
// [end first_add]

// [region shuffle]
extern "C" __global__ void reduce_shuffle(const float* x, float* out, long long n) {
    __shared__ float smem[GPU_VIZ_REDUCE_SLOTS];
    const long long stride = (long long)gridDim.x * blockDim.x;
    float v = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        v = __fadd_rn(v, x[i]);                                             // many adds in registers
    v = block_reduce_sum(v, smem);                                          // shuffles, then smem[warp]
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
// [end shuffle]

// [region vector]
extern "C" __global__ void reduce_vector(const float* x, float* out, long long n) {
    __shared__ float smem[GPU_VIZ_REDUCE_SLOTS];
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);                  // x 16-byte aligned
    float v = 0.0f;
    for (long long i = t; i < n / 4; i += stride) {
        const float4 q = x4[i];                                             // 16 bytes a lane
        v = __fadd_rn(v, __fadd_rn(__fadd_rn(q.x, q.y), __fadd_rn(q.z, q.w)));
    }
    for (long long i = 4 * (n / 4) + t; i < n; i += stride) v = __fadd_rn(v, x[i]);   // the tail
    v = block_reduce_sum(v, smem);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}
// [end vector]
