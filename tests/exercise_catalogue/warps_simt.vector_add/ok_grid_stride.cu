// expect: correct
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        C[i] = A[i] + B[i];
}
