// vector_add.cu -- C = A + B, one thread per element: the deck's "a warp at work on a vector of 64".
//
// Kernels (NVRTC through gpu_viz.kernels.load, or: nvcc -arch=sm_89 -cubin vector_add.cu):
//   vector_add          the kernel the slides show: index, bounds check, LDG A, LDG B, FADD, STG.
//   vector_add_traced   the same body, plus a record of what each launched thread was and did:
//                       rec[t * VA_REC_FIELDS + f] for global thread t (block * blockDim + thread):
//                         f = 0 blockIdx.x, 1 threadIdx.x, 2 global index i, 3 warp (threadIdx/32),
//                             4 lane (threadIdx%32), 5 %smid, 6 %warpid  (5, 6: only silicon knows)
//                       vals[t * 3 + {0,1,2}] = a, b, c as loaded/added (only for i < n).
// Launch: grid = ceil(n / block), block = any 1..1024; 64 elements with block 64 = 2 warps.
// The add is __fadd_rn (no contraction possible anyway) so the CPU model is bit for bit.
#define VA_REC_FIELDS 7

// [region vector_add]
extern "C" __global__ void vector_add(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // 1 · which element is mine
    if (i < n) {                                    // 2 · bounds check (a predicate per lane)
        float a = A[i];                             // 3 · LDG: 32 lanes load 32 floats of A
        float b = B[i];                             // 4 · LDG: ... and 32 floats of B
        float c = __fadd_rn(a, b);                  // 5 · FADD: one instruction, 32 adds
        C[i] = c;                                   // 6 · STG: 32 floats stored
    }
}
// [end vector_add]

// [region read_sreg]
__device__ __forceinline__ unsigned read_smid() {
    unsigned v;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(v));    // which SM runs this thread
    return v;
}
__device__ __forceinline__ unsigned read_warpid() {
    unsigned v;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(v));  // the warp slot inside that SM (volatile)
    return v;
}
// [end read_sreg]

extern "C" __global__ void vector_add_traced(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int n,
                                             int* __restrict__ rec, float* __restrict__ vals) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int* r = rec + t * VA_REC_FIELDS;
    r[0] = (int)blockIdx.x;
    r[1] = (int)threadIdx.x;
    r[2] = i;
    r[3] = (int)(threadIdx.x >> 5);
    r[4] = (int)(threadIdx.x & 31);
    r[5] = (int)read_smid();
    r[6] = (int)read_warpid();
    if (i < n) {
        float a = A[i];
        float b = B[i];
        float c = __fadd_rn(a, b);
        C[i] = c;
        vals[t * 3 + 0] = a;
        vals[t * 3 + 1] = b;
        vals[t * 3 + 2] = c;
    }
}
