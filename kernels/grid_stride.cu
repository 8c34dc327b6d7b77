// grid_stride.cu -- more data than threads: each thread loops over elements with a grid-stride loop.
//
// Notebook 06_grid_stride_loops.  GPU producer gpu_viz/record/grid_stride.py, CPU model
// gpu_viz/model/grid_stride.py, frames gpu_viz/frames/grid_stride.py; tests/test_grid_stride.py;
// compute-sanitizer: scripts/sanitize/lessons.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/grid_stride.cu
//
// Kernel:
//   scale_grid_stride   y[i] = alpha * x[i] for every i < n, whatever the grid: thread t handles
//                       i = t, t + T, t + 2T, ... where T = gridDim.x * blockDim.x.
// Correct for any n >= 0 and any launch shape (n < T leaves threads idle, n % T != 0 gives a short
// last pass); indices are 64-bit so n close to 2^31 does not overflow i + T.
// The deck's case: n = 2048, one block of 1024 threads -> 2 passes.
//
// Traced build (trace.cuh): for each element i, who handled it and when:
//   rec.block[i], rec.thread[i] (threadIdx.x), rec.pass[i] (0 = the first trip round the loop),
//   rec.visits[i] (atomicAdd: must end at exactly 1).
#include "trace.cuh"

#ifdef GPU_VIZ_TRACE
struct GridStrideRecord { int* block; int* thread; int* pass; int* visits; };
__device__ GridStrideRecord rec;

__device__ __forceinline__ void record_visit(long long i, long long stride) {
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    rec.block[i] = (int)blockIdx.x;
    rec.thread[i] = (int)threadIdx.x;
    rec.pass[i] = (int)((i - first) / stride);
    atomicAdd(rec.visits + i, 1);
}
#endif

// [region grid_stride]
extern "C" __global__ void scale_grid_stride(const float* __restrict__ x, float* __restrict__ y,
                                             float alpha, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;            // T: threads in the grid
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // start at my thread id
         i < n;                                                     // stop past the end
         i += stride) {                                             // jump a whole grid ahead
        y[i] = alpha * x[i];                                        // the work for element i
        TRACE(record_visit(i, stride));
    }
}
// [end grid_stride]
