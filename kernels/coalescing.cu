// coalescing.cu -- where a warp's loads go: the 32 lanes' addresses, the 32-byte sectors they touch.
//
// Notebook 07_coalescing_and_banks.  GPU producer gpu_viz/record/coalescing.py, CPU model
// gpu_viz/model/coalescing.py (each lane's byte offset, in numpy), frames gpu_viz/frames/coalescing.py;
// tests/test_coalescing.py; GPU timings and ncu counters: gpu_viz/claims/memory_access.py.
// Build check: nvcc -arch=sm_89 -cubin -std=c++17 -Ikernels kernels/coalescing.cu
//
// Every kernel copies n elements of x into y (y[i] is always written coalesced); what differs is
// the order in which the lanes of a warp READ x, and how wide each lane's load is:
//   read_strided        y[i] = x[i * stride + offset]    stride 1, 2, 4, 32; offset 1 = misaligned
//   copy_thread_major   thread t copies the chunk x[t*K .. t*K+K-1]: lane l and lane l+1 are K apart
//   copy_warp_major     the same copy, element i = k*T + t on trip k: consecutive lanes, consecutive elements
//   aos_x / soa_x       the x of every particle: from an array of {x, y, z} structs (12 bytes apart)
//                       or from an array of x alone
//   copy_f16            2 bytes a lane (__half)
//   copy_f16x2          4 bytes a lane (__half2)
//   copy_f16x8          16 bytes a lane (8 halves as one uint4)
// Correct for any n >= 0 and any launch shape (indices are 64-bit).
//
// Traced build (trace.cuh): every load of x records its address, rec.addr[k * T + t] for thread t
// (T = gridDim.x * blockDim.x) on trip k (0 for the one-trip kernels).  The producer subtracts x's
// address: what stays is each lane's byte offset into x, from which the sectors per request are
// counted on the GPU (gpu_viz/memory_access.py) and compared with the emulator's own count.
#include <cuda_fp16.h>
#include "trace.cuh"

#ifdef GPU_VIZ_TRACE
struct CoalescingRecord { unsigned long long* addr; };
__device__ CoalescingRecord rec;
#define RECORD_LOAD(slot, p) (rec.addr[(slot)] = (unsigned long long)(p))
#endif

// [region strided]
extern "C" __global__ void read_strided(const float* x, float* y, long long n, int stride, int offset) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float* p = x + i * stride + offset;      // lanes l, l+1 read 4 * stride bytes apart
        y[i] = *p;                                     // the load the counts are about
        TRACE(RECORD_LOAD(i, p));
    }
}
// [end strided]

// [region thread_major]
extern "C" __global__ void copy_thread_major(const float* x, float* y, long long n, int per_thread) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long T = (long long)gridDim.x * blockDim.x;
    for (int k = 0; k < per_thread; ++k) {
        const long long i = t * per_thread + k;        // my own chunk: lanes are per_thread apart
        if (i < n) {
            y[i] = x[i];
            TRACE(RECORD_LOAD(k * T + t, x + i));
        }
    }
}
// [end thread_major]

// [region warp_major]
extern "C" __global__ void copy_warp_major(const float* x, float* y, long long n, int per_thread) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long T = (long long)gridDim.x * blockDim.x;
    for (int k = 0; k < per_thread; ++k) {
        const long long i = k * T + t;                 // consecutive lanes, consecutive elements
        if (i < n) {
            y[i] = x[i];
            TRACE(RECORD_LOAD(k * T + t, x + i));
        }
    }
}
// [end warp_major]

// [region aos]
struct Particle { float x, y, z; };                    // 12 bytes: x of particle i at byte 12 * i

extern "C" __global__ void aos_x(const Particle* p, float* y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = p[i].x;                                 // 4 useful bytes of every 12
        TRACE(RECORD_LOAD(i, &p[i].x));
    }
}

extern "C" __global__ void soa_x(const float* px, float* y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = px[i];                                  // the x of every particle, side by side
        TRACE(RECORD_LOAD(i, px + i));
    }
}
// [end aos]

// [region widths]
extern "C" __global__ void copy_f16(const __half* x, __half* y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i];                                   // 2 bytes a lane: 64 bytes a warp
        TRACE(RECORD_LOAD(i, x + i));
    }
}

extern "C" __global__ void copy_f16x2(const __half2* x, __half2* y, long long n2) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        y[i] = x[i];                                   // 4 bytes a lane: 128 bytes a warp
        TRACE(RECORD_LOAD(i, x + i));
    }
}

extern "C" __global__ void copy_f16x8(const uint4* x, uint4* y, long long n8) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n8) {
        y[i] = x[i];                                   // 16 bytes a lane: 512 bytes a warp
        TRACE(RECORD_LOAD(i, x + i));
    }
}
// [end widths]
