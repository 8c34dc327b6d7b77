// banks.cu -- shared memory's 32 banks: which bank each lane's word lives in, and the wavefronts
// a warp's access takes.
//
// Notebook 07_coalescing_and_banks.  GPU producer gpu_viz/record/banks.py, CPU model
// gpu_viz/model/banks.py (each lane's shared offset, in numpy), frames gpu_viz/frames/banks.py;
// tests/test_banks.py; ncu counters: gpu_viz/claims/memory_access.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/banks.cu
//
// Shared memory is 32 banks of 4 bytes: the 4-byte word at byte offset b is in bank (b / 4) % 32.
// A warp's 32-bit access takes one wavefront per distinct word of its busiest bank (lanes reading
// the same word share it: a broadcast).  Kernels:
//   shared_stride      one warp per block reads s[(lane * stride) % 1024]: stride 0 broadcasts,
//                      odd strides are conflict-free, stride 2^k puts 2^k lanes in a bank
//   transpose_naive    out = in^T straight from global memory: the reads are coalesced, the writes
//                      are a column (one sector per lane)
//   transpose_tiled    through a 32x32 tile: both global accesses coalesced, but the tile is read
//                      down a column: 32 lanes, one bank, 32 wavefronts
//   transpose_padded   the same with a 32x33 tile: a column's words fall in 32 different banks
//   block_sum_smem32   reduce.cuh's block_reduce_sum: each warp's lane 0 writes smem[warp], warp 0
//                      reads smem[lane] -- consecutive words, one wavefront
// The transposes take any rows x cols (guards at the edges); blocks of TILE x ROWS threads.
//
// Traced build (trace.cuh): the shared-memory byte offset (from the array's first byte) of each
// lane's access, rec.off[site * T + t] for thread t of the grid (T threads) at access site
// `site` (the transposes: sites 0..3 the tile's stores, 4..7 its loads, one per j).
#include "reduce.cuh"
#include "trace.cuh"

#define TILE 32
#define ROWS 8

#ifdef GPU_VIZ_TRACE
struct BanksRecord { int* off; };
__device__ BanksRecord rec;
__device__ __forceinline__ int shared_offset(const void* p, const void* base) {
    return (int)(__cvta_generic_to_shared(p) - __cvta_generic_to_shared(base));
}
__device__ __forceinline__ long long grid_thread() {
    const long long block = (long long)blockIdx.y * gridDim.x + blockIdx.x;
    return block * (blockDim.x * blockDim.y) + threadIdx.y * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long grid_threads() {
    return (long long)gridDim.x * gridDim.y * blockDim.x * blockDim.y;
}
#define RECORD_SHARED(site, p, base) (rec.off[(site) * grid_threads() + grid_thread()] = shared_offset((p), (base)))
#endif

// [region stride]
extern "C" __global__ void shared_stride(float* out, int stride) {
    __shared__ float s[1024];
    for (int k = threadIdx.x; k < 1024; k += blockDim.x) s[k] = (float)k;
    __syncthreads();
    const int idx = (threadIdx.x * stride) & 1023;        // lane l reads word l * stride
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[idx];  // bank (l * stride) % 32
    TRACE(RECORD_SHARED(0, &s[idx], s));
}
// [end stride]

// [region naive]
extern "C" __global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
    const int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows)                       // read a row, write a column
            out[(long long)x * rows + y + j] = in[(long long)(y + j) * cols + x];
}
// [end naive]

// [region tiled]
extern "C" __global__ void transpose_tiled(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * TILE + tx, y = blockIdx.y * TILE + ty;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) {
            tile[ty + j][tx] = in[(long long)(y + j) * cols + x];   // a row: 32 banks
            TRACE(RECORD_SHARED(j / ROWS, &tile[ty + j][tx], tile));
        }
    __syncthreads();
    x = blockIdx.y * TILE + tx;
    y = blockIdx.x * TILE + ty;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) {
            out[(long long)(y + j) * rows + x] = tile[tx][ty + j];  // a column: 1 bank
            TRACE(RECORD_SHARED(4 + j / ROWS, &tile[tx][ty + j], tile));
        }
}
// [end tiled]

// [region padded]
extern "C" __global__ void transpose_padded(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];      // a spare word a row: a column's words are 33 apart
    const int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * TILE + tx, y = blockIdx.y * TILE + ty;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) {
            tile[ty + j][tx] = in[(long long)(y + j) * cols + x];
            TRACE(RECORD_SHARED(j / ROWS, &tile[ty + j][tx], tile));
        }
    __syncthreads();
    x = blockIdx.y * TILE + tx;
    y = blockIdx.x * TILE + ty;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) {
            out[(long long)(y + j) * rows + x] = tile[tx][ty + j];  // 32 banks
            TRACE(RECORD_SHARED(4 + j / ROWS, &tile[tx][ty + j], tile));
        }
}
// [end padded]

// [region smem32]
extern "C" __global__ void block_sum_smem32(const float* x, float* out, int n) {
    __shared__ float smem[GPU_VIZ_REDUCE_SLOTS];           // reduce.cuh: smem[warp], then smem[lane]
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v = __fadd_rn(v, x[i]);
    const float total = block_reduce_sum(v, smem);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}
// [end smem32]
