// expect: correct
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n) return;
    float a = A[i], b = B[i];
    C[i] = b + a;
}
