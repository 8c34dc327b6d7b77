"""CUDA sources of the write-the-kernel exercises: the learner's starting code, the reference
solution, and the classic wrong answers the checkers must name (tests/test_exercises.py compiles
every one for the four architectures and, on a GPU, checks each verdict)."""

VECTOR_ADD_START = r'''
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = 0;             // FILL ME IN: this thread's element
    C[i] = A[i] + B[i];    // FILL ME IN: only when i is inside the array
}
'''

VECTOR_ADD_REFERENCE = r'''
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
'''

VECTOR_ADD_WRONG = {
    "missing guard": r'''
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    C[i] = A[i] + B[i];
}
''',
    "no blockIdx": r'''
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
''',
    "gridDim for blockDim": r'''
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * gridDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
''',
}

GRID_STRIDE_START = r'''
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    // FILL ME IN: a loop so that every i in [0, n) is handled exactly once, for any grid and block
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&visits[i], 1u);   // keep: the checker counts the visits
        y[i] = alpha * x[i];
    }
}
'''

GRID_STRIDE_REFERENCE = r'''
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
'''

GRID_STRIDE_WRONG = {
    "no loop": GRID_STRIDE_START,
    "stride is blockDim": r'''
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
''',
    "off-by-one stride": r'''
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    int stride = blockDim.x * gridDim.x + 1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
''',
    "i <= n": r'''
extern "C" __global__ void grid_stride(const float* x, float* y, float alpha, int n, unsigned* visits) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += stride) {
        atomicAdd(&visits[i], 1u);
        y[i] = alpha * x[i];
    }
}
''',
}

# One block sums x[0..n): the shape of RMSNorm's phases 1 and 2.
BLOCK_SUM_START = r'''
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    // FILL ME IN: reduce v across the warp, hand one partial per warp through smem,
    // let warp 0 reduce the partials, and write the total to out[0]
}
'''

BLOCK_SUM_REFERENCE = r'''
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    unsigned nwarps = (blockDim.x + 31) / 32;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    // the lanes this warp has: 32, or fewer in the last warp of a block that is not a multiple of 32
    int present = min(32, (int)(blockDim.x - warp * 32));
    unsigned mask = present == 32 ? 0xffffffffu : (1u << present) - 1u;
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_down_sync(mask, v, off);
        if ((int)(lane + off) < present) v += o;                    // only a partner that exists
    }
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < nwarps) ? smem[lane] : 0.0f;                       // only the partials written
        for (int off = 16; off > 0; off >>= 1) {
            float o = __shfl_down_sync(mask, v, off);                  // warp 0's own lanes
            if ((int)(lane + off) < present) v += o;
        }
        if (tid == 0) out[0] = v;
    }
}
'''

# The deck's phase 2, as the slides show it: right only when blockDim.x is 1024.
BLOCK_SUM_DECK = r'''
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float smem[32];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float v = 0.0f;
    for (int i = tid; i < n; i += blockDim.x) v += x[i];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (tid < 32) {
        v = smem[tid];                     // FIX ME: only (blockDim.x + 31) / 32 warps wrote a partial
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) out[0] = v;
    }
}
'''

# The fix a learner writes for the deck's fault: guard the read, keep blockDim a multiple of 32.
BLOCK_SUM_DECK_FIXED = BLOCK_SUM_DECK.replace(
    "v = smem[tid];                     // FIX ME: only (blockDim.x + 31) / 32 warps wrote a partial",
    "v = (tid < (blockDim.x + 31) / 32) ? smem[tid] : 0.0f;")

BLOCK_SUM_WRONG = {
    "smem[tid] unguarded": BLOCK_SUM_DECK,
    "missing __syncthreads": BLOCK_SUM_REFERENCE.replace("    __syncthreads();\n", ""),
    "missing lane guard": BLOCK_SUM_REFERENCE.replace("if (lane == 0) smem[warp] = v;", "smem[warp] = v;"),
    "partial warp": BLOCK_SUM_DECK_FIXED,
}
