// expect: it does not compile -- NVRTC says: line 2: cannot open source file "cstdio". NVRTC compiles device code on its own
#include <cstdio>
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
