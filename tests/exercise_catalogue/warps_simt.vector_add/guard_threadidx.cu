// expect: the guard compares threadIdx.x with n
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < n) C[i] = A[i] + B[i];
}
