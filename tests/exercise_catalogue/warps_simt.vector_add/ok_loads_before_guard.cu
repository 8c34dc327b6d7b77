// expect: correct
// The loads come before the guard in the source, but their values are used only under it: the
// compiler moves them inside, so no thread reads past n (the emulator runs what the compiler kept).
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float a = A[i], b = B[i];
    if (i < n) C[i] = a + b;
}
