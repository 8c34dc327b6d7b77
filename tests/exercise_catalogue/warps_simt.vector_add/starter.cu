// expect: every thread writes C[0]
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = 0;
    C[i] = A[i] + B[i];
}
