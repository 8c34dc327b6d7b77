// expect: takes 3 parameter(s)
extern "C" __global__ void vector_add(const float* A, const float* B, float* C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    C[i] = A[i] + B[i];
}
