// divergence.cu -- branch divergence inside a warp, seen through __activemask() and measured.
//
// Notebook 03_warps_simt.  GPU producer gpu_viz/record/divergence.py (the trace) and
// gpu_viz/claims/divergence.py (the cost), CPU model gpu_viz/model/divergence.py, frames
// gpu_viz/frames/divergence.py; tests/test_divergence.py;
// compute-sanitizer: scripts/sanitize/lessons.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/divergence.cu
//
// Kernels:
//   divergent_branch   branch on lane parity: even lanes take path A, odd lanes path B, so every
//                      warp runs both paths one after the other, each with half its lanes masked off.
//   uniform_branch     the same two paths and the same work per thread, but the branch is on warp
//                      parity: all 32 lanes of a warp agree, nothing is masked.
// Paths iterate `iters` times a dependent
//   path A: v = v * 1.0001f + 0.5f      path B: v = v * 0.9999f - 0.25f
// with __fmul_rn / __fadd_rn (never contracted to FMA) so the CPU model matches bit for bit.
// `iters` is a run-time argument: the compiler cannot if-convert the loops into selects.
//
// Traced build (trace.cuh): as the first thing inside its branch, element i's thread writes
//   rec.branch[i] = 0 (path A) or 1 (path B) and rec.active[i] = __activemask().
#include "trace.cuh"

#ifdef GPU_VIZ_TRACE
struct DivergenceRecord { int* branch; unsigned* active; };
__device__ DivergenceRecord rec;

__device__ __forceinline__ void record_branch(int i, int path) {
    unsigned m = __activemask();          // which lanes are running right now?
    rec.branch[i] = path;
    rec.active[i] = m;
}
#endif

__device__ __forceinline__ float path_a(float v, int iters) {
    for (int k = 0; k < iters; ++k) v = __fadd_rn(__fmul_rn(v, 1.0001f), 0.5f);
    return v;
}
__device__ __forceinline__ float path_b(float v, int iters) {
    for (int k = 0; k < iters; ++k) v = __fadd_rn(__fmul_rn(v, 0.9999f), -0.25f);
    return v;
}

// [region branch]
// One of two paths per thread.  Lanes of one warp that disagree on `take_a` run one side,
// then the other, each with the other side's lanes masked off.
__device__ __forceinline__ float branch(bool take_a, float v, int i, int iters) {
    if (take_a) {                           // path A
        TRACE(record_branch(i, 0));
        v = path_a(v, iters);
    } else {                                // path B: never together with path A in one warp
        TRACE(record_branch(i, 1));
        v = path_b(v, iters);
    }
    return v;
}
// [end branch]

// [region divergent]
extern "C" __global__ void divergent_branch(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = branch((threadIdx.x & 1) == 0, x[i], i, iters);  // lane parity: every warp splits
}
// [end divergent]

// [region uniform]
extern "C" __global__ void uniform_branch(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = branch(((i >> 5) & 1) == 0, x[i], i, iters);    // warp parity: whole warps agree
}
// [end uniform]
