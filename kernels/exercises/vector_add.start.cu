// Write the kernel: C = A + B, one thread per element, right for any n and any block size.
extern "C" __global__ void vector_add(const float* A, const float* B, float* C, int n) {
    int i = 0;             // FILL ME IN: this thread's element
    C[i] = A[i] + B[i];    // FILL ME IN: only when i is inside the array
}
