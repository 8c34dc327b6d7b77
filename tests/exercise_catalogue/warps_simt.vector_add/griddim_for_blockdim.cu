// expect: multiplies blockIdx.x by gridDim.x
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * gridDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
}
