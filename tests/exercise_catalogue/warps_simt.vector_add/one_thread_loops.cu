// expect: thread 0 of block 0 wrote all 64 elements
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (int i = 0; i < n; ++i) C[i] = A[i] + B[i];
    }
}
