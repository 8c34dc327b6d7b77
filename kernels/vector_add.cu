// vector_add.cu -- C = A + B, one thread per element: the deck's "a warp at work on a vector of 64".
//
// Notebook 03_warps_simt.  GPU producer gpu_viz/record/vector_add.py, CPU model
// gpu_viz/model/vector_add.py, frames gpu_viz/frames/vector_add.py; tests/test_vector_add.py;
// compute-sanitizer: scripts/sanitize/lessons.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/vector_add.cu
//              (add -DGPU_VIZ_TRACE --fmad=false for the traced build)
//
// Kernel:
//   vector_add   index, bounds check, LDG A, LDG B, FADD, STG: the six steps the slides number.
// Launch: grid = ceil(n / block), block = any 1..1024; 64 elements with block 64 = 2 warps.
//
// Traced build (trace.cuh): every launched thread t = blockIdx.x * blockDim.x + threadIdx.x writes
//   rec.thread[t * VA_REC_FIELDS + f]: f = 0 blockIdx.x, 1 threadIdx.x, 2 global index i,
//       3 warp (threadIdx.x / 32), 4 lane (threadIdx.x % 32), 5 %smid, 6 %warpid (5, 6: silicon only)
//   rec.vals[t * 3 + {0, 1, 2}] = a, b, c as loaded and added (only threads with i < n)
#include "sreg.cuh"
#include "trace.cuh"

#ifndef VA_REC_FIELDS
#define VA_REC_FIELDS 7
#endif

#ifdef GPU_VIZ_TRACE
struct VectorAddRecord { int* thread; float* vals; };
__device__ VectorAddRecord rec;

__device__ __forceinline__ void record_thread(int i) {
    int* r = rec.thread + ((long long)blockIdx.x * blockDim.x + threadIdx.x) * VA_REC_FIELDS;
    r[0] = (int)blockIdx.x;
    r[1] = (int)threadIdx.x;
    r[2] = i;
    r[3] = (int)(threadIdx.x >> 5);
    r[4] = (int)(threadIdx.x & 31);
    r[5] = (int)smid();
    r[6] = (int)warpid();
}
__device__ __forceinline__ void record_values(float a, float b, float c) {
    float* v = rec.vals + ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 3;
    v[0] = a;
    v[1] = b;
    v[2] = c;
}
#endif

// [region vector_add]
extern "C" __global__ void vector_add(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // 1 · which element is mine
    TRACE(record_thread(i));
    if (i < n) {                                    // 2 · bounds check (a predicate per lane)
        float a = A[i];                             // 3 · LDG: 32 lanes load 32 floats of A
        float b = B[i];                             // 4 · LDG: ... and 32 floats of B
        float c = a + b;                            // 5 · FADD: one instruction, 32 adds
        C[i] = c;                                   // 6 · STG: 32 floats stored
        TRACE(record_values(a, b, c));
    }
}
// [end vector_add]
