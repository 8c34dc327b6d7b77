// divergence.cu -- branch divergence inside a warp, seen through __activemask() and measured.
//
// Kernels (NVRTC through gpu_viz.kernels.load, or: nvcc -arch=sm_89 -cubin divergence.cu):
//   divergent_branch   branch on lane parity: even lanes take path A, odd lanes path B, so every
//                      warp runs both paths one after the other, each with half its lanes masked off.
//   uniform_branch     the same two paths and the same work per thread, but the branch is on warp
//                      parity: all 32 lanes of a warp agree, nothing is masked.
// Both record, per thread, the branch taken (0 = path A, 1 = path B) and __activemask() read as
// the first thing inside the branch, when record != 0.  Paths iterate `iters` times a dependent
//   path A: v = v * 1.0001f + 0.5f      path B: v = v * 0.9999f - 0.25f
// with __fmul_rn/__fadd_rn (never contracted to FMA) so the CPU model matches bit for bit.
// `iters` is a run-time argument: the compiler cannot if-convert the loops into selects.

__device__ __forceinline__ float path_a(float v, int iters) {
    for (int k = 0; k < iters; ++k) v = __fadd_rn(__fmul_rn(v, 1.0001f), 0.5f);
    return v;
}
__device__ __forceinline__ float path_b(float v, int iters) {
    for (int k = 0; k < iters; ++k) v = __fadd_rn(__fmul_rn(v, 0.9999f), -0.25f);
    return v;
}

// [region divergent]
extern "C" __global__ void divergent_branch(const float* x, float* y, int n, int iters,
                                            int record, int* branch, unsigned* active) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int lane = threadIdx.x & 31;
    float v = x[i];
    if ((lane & 1) == 0) {                  // even lanes: path A
        unsigned m = __activemask();        // which lanes are running right now?
        if (record) { branch[i] = 0; active[i] = m; }
        v = path_a(v, iters);
    } else {                                // odd lanes: path B, never together with path A
        unsigned m = __activemask();
        if (record) { branch[i] = 1; active[i] = m; }
        v = path_b(v, iters);
    }
    y[i] = v;
}
// [end divergent]

// [region uniform]
extern "C" __global__ void uniform_branch(const float* x, float* y, int n, int iters,
                                          int record, int* branch, unsigned* active) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int warp = i >> 5;                      // global warp number: same for all 32 lanes
    float v = x[i];
    if ((warp & 1) == 0) {                  // even warps: path A
        unsigned m = __activemask();
        if (record) { branch[i] = 0; active[i] = m; }
        v = path_a(v, iters);
    } else {                                // odd warps: path B
        unsigned m = __activemask();
        if (record) { branch[i] = 1; active[i] = m; }
        v = path_b(v, iters);
    }
    y[i] = v;
}
// [end uniform]
