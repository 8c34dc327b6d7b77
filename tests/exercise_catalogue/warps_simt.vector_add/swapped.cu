// expect: swaps the roles
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = threadIdx.x * blockDim.x + blockIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
