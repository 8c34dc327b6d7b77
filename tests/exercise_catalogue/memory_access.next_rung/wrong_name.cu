// expect: no kernel named `reduce_first_add`
extern "C" __global__ void reduce4(const float* x, float* out, int n) {
    if (threadIdx.x == 0) out[blockIdx.x] = 0.0f;
}
