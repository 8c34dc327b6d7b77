// expect: reads 8-byte elements (double) from
extern "C" __global__ void vector_add(const double* A, const double* B, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
