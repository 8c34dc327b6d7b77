// grid_stride.cu -- more data than threads: each thread loops over elements with a grid-stride loop.
//
// Kernels (NVRTC through gpu_viz.kernels.load, or: nvcc -arch=sm_89 -cubin grid_stride.cu):
//   scale_grid_stride         y[i] = alpha * x[i] for every i < n, whatever the grid: thread t
//                             handles i = t, t + T, t + 2T, ... where T = gridDim.x * blockDim.x.
//   scale_grid_stride_traced  the same loop, recording for each element who handled it, when:
//                             block[i], thread[i] (threadIdx.x), pass[i] (0 = first trip round the
//                             loop), and visits[i] (atomicAdd: must end at exactly 1).
// Correct for any n >= 0 and any launch shape (n < T leaves threads idle, n % T != 0 gives a short
// last pass); indices are 64-bit so n close to 2^31 does not overflow i + T.
// The deck's case: n = 2048, one block of 1024 threads -> 2 passes.

// [region grid_stride]
extern "C" __global__ void scale_grid_stride(const float* __restrict__ x, float* __restrict__ y,
                                             float alpha, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;            // T: threads in the grid
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // start at my thread id
         i < n;                                                     // stop past the end
         i += stride) {                                             // jump a whole grid ahead
        y[i] = __fmul_rn(alpha, x[i]);                              // the work for element i
    }
}
// [end grid_stride]

extern "C" __global__ void scale_grid_stride_traced(const float* __restrict__ x, float* __restrict__ y,
                                                    float alpha, long long n,
                                                    int* __restrict__ block, int* __restrict__ thread,
                                                    int* __restrict__ pass, int* __restrict__ visits) {
    long long stride = (long long)gridDim.x * blockDim.x;
    int p = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride, ++p) {
        y[i] = __fmul_rn(alpha, x[i]);
        block[i] = (int)blockIdx.x;
        thread[i] = (int)threadIdx.x;
        pass[i] = p;
        atomicAdd(visits + i, 1);
    }
}
