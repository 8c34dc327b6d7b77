// expect: writes 8-byte elements (double) to C, a float array
extern "C" __global__ void vector_add(const float* A, const float* B, double* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
