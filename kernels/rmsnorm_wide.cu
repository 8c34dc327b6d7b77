// rmsnorm_wide.cu -- RMSNorm and RMSNorm + SiLU gate for wide rows on sm_90: one row per
// thread-block cluster, the row held on chip (registers or shared memory) across the cluster's
// CTAs, one pass over x.
//
//   rmsnorm:       y[m,n] = (x[m,n] * (w[n] + w_offset)) * r[m]
//   rmsnorm_gate:  y[m,n] = ((x[m,n] * silu(g[m,n])) * (w[n] + w_offset)) * r[m]
//   (kernels/rmsnorm_fused.cu's order, x * w * r; w + w_offset in fp32, e.g. Gemma's 1 + w)
//   with           r[m]   = rsqrt(sum_n x[m,n]^2 / N + eps)   (statistic from x only; also
//                                                             written to rstd[m], fp32)
//
// Launcher: gpu_viz/rmsnorm/wide.py (its policy picks CLUSTER / THREADS / EPT / MODE from N,
// the op and the dtype); tests: tests/test_rmsnorm_wide.py; compute-sanitizer and timing:
// scripts/sanitize/rmsnorm_wide.py, benchmarks/explore/2026-12-01-wide/wide_bench.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels -DWIDE_DTYPE=2 -DWIDE_WEIGHT=2 \
//              -DWIDE_GATE=0 -DWIDE_CLUSTER=8 -DWIDE_THREADS=256 -DWIDE_EPT=32 -DWIDE_MIN_BLOCKS=6 \
//              -DWIDE_MODE=1 kernels/rmsnorm_wide.cu
//              (gpu_viz.rmsnorm.wide.kernel_report runs it for every configuration and arch)
//
// Layout (modes 0-2, 5, 9).  grid = M * CLUSTER blocks of THREADS threads; cluster k (blocks k*CLUSTER ..
// k*CLUSTER + CLUSTER-1, __cluster_dims__) normalises row k.  The row is N / VEC 16-byte
// vectors; CTA `rank` of the cluster holds the contiguous slice of THREADS * CHUNKS vectors
// starting at rank * THREADS * CHUNKS, thread t its vectors t, t + THREADS, ... of that slice
// (coalesced: consecutive threads, consecutive 16 bytes).  Vectors past N / VEC (N below the
// configuration's capacity CLUSTER * THREADS * EPT) are neither read nor written.
// Steps, per CTA:
//   0. barrier.cluster.arrive.relaxed: its wait (step 3) proves every CTA of the cluster is
//      running before any CTA writes into another's shared memory; the wait's latency hides
//      behind the loads.
//   1. every load of the slice (x, gate) issued before the first use: one memory round trip.
//      WIDE_MODE 0 (cluster_row): into registers; x (or x * silu(g)) stays there until step 5;
//        the weight's loads follow the sum of squares (step 2), so the gate op's x and g
//        registers are free by then, and their latency (an L2 hit: every row reads the weight)
//        hides behind the reductions.
//      WIDE_MODE 1 / 2 (cluster_row_smem): cp.async copies into dynamic shared memory, no
//        registers held while they fly, so the CTAs per SM are bounded by shared memory and
//        more bytes are in flight per SM; each thread reads back only its own vectors (no
//        barrier).  Mode 1 reads the weight from global memory in step 5, mode 2 copies its
//        slice into shared memory with x.
//   2. sum of x^2: each thread over its elements in order, a warp butterfly, the warps'
//      totals through shared memory, one butterfly over them: every thread holds the CTA sum.
//   3. cluster wait; thread i < CLUSTER stores the CTA sum into slot [rank] of CTA i's shared
//      memory (distributed shared memory, st.shared::cluster); arrive.release / wait.acquire.
//   4. every thread adds slots 0 .. CLUSTER-1 in that order: every CTA of the cluster gets the
//      bit-identical row sum.  No other CTA's shared memory is touched after this barrier, so
//      no CTA can exit while another still writes into it.
//   5. y from the registers / this CTA's shared memory, written once (L2 evict-first stores);
//      rank 0 writes rstd[row].  (Mode 9 with WIDE_GLATE reads the gate here, not in step 1.)
// WIDE_MODE 3 / 4 (cluster_rows_persistent): a persistent grid of clusters, each looping over
// rows; the weight's slice copied into shared memory once, x (and the gate) double-buffered
// (3) or refilled in place (4) so the next row's copies fly while this row is reduced and
// written; the CTA sums as mode 5.  WIDE_MODE 5 (cluster_row_mbar): mode 1 with QuACK's
// exchange, st.async into every CTA's slot completing bytes on that CTA's mbarrier, in place
// of steps 3's cluster barrier.  Modes 3-5 add the slots in rank order as step 4: the same
// bits as mode 1 at the same (CLUSTER, THREADS, EPT).
// WIDE_MODE 7 / 8 (cluster_rows_ring): persistent, the slice in registers, a per-thread cp.async
// ring of chunk slots in shared memory streaming the chunks that follow (the next row's among
// them); 7 keeps the weight's slice in shared memory, 8 reads it from L2.  WIDE_MODE 9
// (cluster_row_hybrid): mode 5 with a thread's first WIDE_HREG chunks in registers and the rest in
// shared memory (slices of 128 KiB at two CTAs an SM), the weight WIDE_WDIST chunks ahead; with
// WIDE_GLATE the gate op loads only x in step 1 and reads g from global memory in step 5, beside
// the weight (x alone on chip).
// Batch invariance: the summation order depends only on the compile-time configuration, which
// the launcher picks from N, the dtype and the GPU alone -- never from M or the row's position.
// Numerics: silu(g) = __fdividef(g, 1 + __expf(-g)) and r = rsqrtf(__fdividef(sum, N) + eps),
// as kernels/rmsnorm_fused.cu; storage fp32 / fp16 / bf16, arithmetic fp32, one rounding of y.
// NaN/Inf in a row make that row NaN/0 as the float64 formula, and never touch other rows.
//
// Kernels (extern "C"; names parsed by gpu_viz/rmsnorm/wide.py):
//   rmsnorm[_gate]_cluster_<dt>_w<wdt>_c<CLUSTER>_t<THREADS>_e<EPT>_m<MODE>[_wb|_we|_r<R>|_h<H>_d<D>[_g]]
//   dt = f32 | f16 | bf16 (x, gate, y); wdt = the weight's: dt, or f32 for a 16-bit x;
//   _wb / _we: WIDE_WLOAD 1 / 2 (modes 1, 5); _r<R>: WIDE_RING (modes 7, 8); _h<H>_d<D>[_g]: WIDE_HREG,
//   WIDE_WDIST (mode 9), _g with WIDE_GLATE.
// -D options (the launcher passes all of them; the defaults below are one configuration of its
// policy): one kernel per module, i.e. per (op, dtype, weight dtype, configuration):
//   WIDE_DTYPE       x's: 1 f32, 2 f16, 4 bf16
//   WIDE_WEIGHT      the weight's: WIDE_DTYPE, or 1 (f32)
//   WIDE_GATE        0 rmsnorm, 1 rmsnorm_gate
//   WIDE_CLUSTER     CTAs per cluster (2..16; above 8 the launcher sets the non-portable
//                    cluster-size attribute)
//   WIDE_THREADS     threads per CTA (multiple of 32, <= 1024)
//   WIDE_EPT         elements per thread in registers (a multiple of the 16-byte vector)
//   WIDE_MIN_BLOCKS  __launch_bounds__' minimum blocks per SM (register cap 65536 / (T * MIN))
//   WIDE_MODE        where a CTA keeps its slice: 0 registers, 1 shared memory (x, gate),
//                    2 shared memory (x, gate and the weight); see step 1.  3 persistent,
//                    x (gate) double-buffered, 4 persistent, one buffer refilled in place
//                    (both: the weight's slice in shared memory), 5 mode 1 with the mbarrier
//                    exchange; 7 / 8 persistent, the slice in registers, a cp.async ring (the
//                    weight in shared memory / from L2); 9 mode 5 with the slice split between
//                    registers and shared memory.  Modes 3, 4, 7 and 8 take gridDim.x / CLUSTER
//                    clusters for M rows (the launcher: at most what the GPU holds at once, at
//                    most M); the others M * CLUSTER blocks.
//   WIDE_RING        modes 7, 8: the ring's chunk slots (1..16)
//   WIDE_HREG        mode 9: chunks a thread keeps in registers (0: half of them)
//   WIDE_WDIST       mode 9: how many chunks ahead of the stores the weight is loaded
//   WIDE_GLATE       mode 9, the gate op: 1 reads g in the last step (0: with x in step 1)
//   WIDE_SMEM_ALIGN  where the dynamic shared memory starts (bytes; 128, see below)
//   WIDE_WLOAD       modes 1 and 5: when the last step's weight is loaded -- 0 a chunk at a
//                    time, 1 all chunks together, 2 with x's copies (see store_row_smem)
// Kernel arguments: (out, rstd, x, gate, w, N, eps, w_offset, M); only modes 3, 4, 7 and 8 read M.
// Before sm_90 (no clusters) the kernels compile to a trap: wide.supported() is False there.
#include "convert.cuh"  // to_f32 / from_f32<T>

// A bare build (no -D) is the policy's fp16 rmsnorm at N = 131072 (wide.config(131072, "float16",
// (9, 0)); tests/test_rmsnorm_wide.py checks the two agree).
#ifndef WIDE_DTYPE
#define WIDE_DTYPE 2
#endif
#ifndef WIDE_WEIGHT
#define WIDE_WEIGHT 2
#endif
#ifndef WIDE_GATE
#define WIDE_GATE 0
#endif
#ifndef WIDE_CLUSTER
#define WIDE_CLUSTER 4
#endif
#ifndef WIDE_THREADS
#define WIDE_THREADS 1024
#endif
#ifndef WIDE_EPT
#define WIDE_EPT 32
#endif
#ifndef WIDE_MIN_BLOCKS
#define WIDE_MIN_BLOCKS 2
#endif
#ifndef WIDE_MODE
#define WIDE_MODE 5
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define WIDE_HAS_CLUSTERS 1
#define WIDE_CLUSTER_DIMS __cluster_dims__(WIDE_CLUSTER, 1, 1)
#else
#define WIDE_HAS_CLUSTERS 0
#define WIDE_CLUSTER_DIMS
#endif

// The dynamic shared memory (the slices, copied in by cp.async) starts after the kernel's static
// shared memory, aligned to WIDE_SMEM_ALIGN bytes: 128, a whole row of the 32 banks.  At the
// uint4's own 16 (the layout before 2026-12-03) it began 16 bytes off a 32-byte sector wherever
// the static arrays came to an odd multiple of 16 bytes (every 8-CTA kernel), and each warp's
// 512 bytes of cp.async copies then asked L1 for 20 sectors instead of 16, and L2 for as many:
// 25 % more traffic between L2 and the SMs for the same bytes (Nsight Compute,
// benchmarks/NOTES.md "twelfth session").  The explorations build 16 to compare.
#ifndef WIDE_SMEM_ALIGN
#define WIDE_SMEM_ALIGN 128
#endif
#define WIDE_SMEM_ALIGNED __align__(WIDE_SMEM_ALIGN)

// ---------------------------------------------------------------------------------------
// packed loads and stores

// VEC elements of T moved together: 16 bytes (x, gate, y, a same-dtype weight) or 32 bytes
// (an fp32 weight of a 16-bit x: two 16-byte loads).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

// Element k widened to fp32; bf16 from the pack's 32-bit words (exact: a bf16 is the high half
// of its float), which keeps ptxas from unpacking every 16-bit value into a register of its own
// (as kernels/rmsnorm_fused.cu's `elem`).
template <typename T, int VEC>
__device__ __forceinline__ float elem(const Pack<T, VEC>& p, int k) { return to_f32(p.v[k]); }
template <int VEC>
__device__ __forceinline__ float elem(const Pack<__nv_bfloat16, VEC>& p, int k) {
    const unsigned u = reinterpret_cast<const unsigned*>(p.v)[k >> 1];  // little-endian pairs
    return __uint_as_float((k & 1) ? (u & 0xffff0000u) : (u << 16));
}

// x and gate, read once: no L1 allocation.  The weight, read by every row: the read-only path.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
    uint4 u;
    asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p));
    return u;
}
// WIDE_DIAG_NOWEIGHT / WIDE_DIAG_PLAINSTORE / WIDE_DIAG_WEIGHT_EVERY (explorations' timing
// diagnostics only, never in the launcher's builds; the output is then wrong): the weight never
// read (a constant pack), y stored without the evict-first policy, HYBRID's weight read for one
// chunk in WIDE_DIAG_WEIGHT_EVERY (the others reuse a pack in registers).
__device__ __forceinline__ uint4 ld_weight(const void* p) {
    uint4 u;
#if WIDE_DIAG_NOWEIGHT  // undefined: 0
    u = make_uint4(0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u);
#else
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p));
#endif
    return u;
}

template <bool WEIGHT, typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* p) {
    static_assert(sizeof(Pack<T, VEC>) % 16 == 0, "packs are whole 16-byte vectors");
    Pack<T, VEC> r;
    #pragma unroll
    for (int q = 0; q < (int)(sizeof(Pack<T, VEC>) / 16); ++q)
        reinterpret_cast<uint4*>(&r)[q] = WEIGHT ? ld_weight(reinterpret_cast<const uint4*>(p) + q)
                                                 : ld_stream(reinterpret_cast<const uint4*>(p) + q);
    return r;
}

// y, written once: an L2 evict-first policy (y is not read again by this kernel; the weight,
// read by every row, keeps its lines).  pol from createpolicy, made once per thread.
__device__ __forceinline__ void st_evict_first(void* p, uint4 u, unsigned long long pol) {
#if WIDE_HAS_CLUSTERS && !WIDE_DIAG_PLAINSTORE
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "l"(pol) : "memory");
#else
    *reinterpret_cast<uint4*>(p) = u;
#endif
}

// ---------------------------------------------------------------------------------------
// cluster primitives (PTX; sm_90)

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r = 0;
#if WIDE_HAS_CLUSTERS
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
    return r;
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if WIDE_HAS_CLUSTERS
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_arrive_release() {
#if WIDE_HAS_CLUSTERS
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait_acquire() {
#if WIDE_HAS_CLUSTERS
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// v into the shared-memory float at `local` (this CTA's address of it) in CTA `rank`.
__device__ __forceinline__ void st_remote_f32(float* local, unsigned rank, float v) {
#if WIDE_HAS_CLUSTERS
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(local));
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(v) : "memory");
#endif
}

// [region silu]
// silu(g) = g / (1 + e^-g) with the fast intrinsics, exactly kernels/rmsnorm_fused.cu's
// (limits and error bounds there).
__device__ __forceinline__ float silu(float g) { return __fdividef(g, 1.0f + __expf(-g)); }
// [end silu]

__device__ __forceinline__ float warp_allreduce_sum(float v) {
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Block reduction: the CTA's total of every thread's `v` -- a warp butterfly, the warps' totals
// through `warp_sums` (THREADS / 32 floats) in warp order, one butterfly over them -- in every
// thread.  Every mode sums a CTA this way; the call must be reached by every thread.
template <int THREADS>
__device__ __forceinline__ float cta_allreduce_sum(float v, float* warp_sums, int t) {
    constexpr int NWARPS = THREADS / 32;
    v = warp_allreduce_sum(v);
    if ((t & 31) == 0) warp_sums[t >> 5] = v;
    __syncthreads();
    return warp_allreduce_sum((t & 31) < NWARPS ? warp_sums[t & 31] : 0.0f);
}

// r = rsqrt(row sum / N + eps) from the CLUSTER CTA sums in `cta_sums`, added in rank order 0 ..
// CLUSTER-1: every CTA of the cluster gets the bit-identical row sum (step 4).
template <int CLUSTER>
__device__ __forceinline__ float rstd_of_cta_sums(const float* cta_sums, int N, float eps) {
    float total = 0.0f;
    #pragma unroll
    for (int i = 0; i < CLUSTER; ++i) total += cta_sums[i];
    return rsqrtf(__fdividef(total, (float)N) + eps);
}

// This thread's weight packs of the slice (vectors first + c * THREADS), into registers.
template <typename WT, int VEC, int CHUNKS, int THREADS>
__device__ __forceinline__ void load_weight_slice(Pack<WT, VEC> (&pw)[CHUNKS], const WT* __restrict__ w,
                                                  int first, int nvec) {
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS;
        if (j < nvec) pw[c] = load_pack<true, WT, VEC>(w + (long long)j * VEC);
    }
}

// ---------------------------------------------------------------------------------------
// one row per cluster

// [region cluster_row]
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT>
__device__ __forceinline__ void cluster_row(T* __restrict__ out, float* __restrict__ rstd,
                                            const T* __restrict__ x, const T* __restrict__ gate,
                                            const WT* __restrict__ w, int N, float eps, float w_offset) {
#if WIDE_HAS_CLUSTERS
    constexpr int VEC = 16 / sizeof(T);  // elements per 16-byte vector of x
    constexpr int CHUNKS = EPT / VEC;
    constexpr int NWARPS = THREADS / 32;
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024, "launch shape");
    static_assert(CLUSTER >= 1 && CLUSTER <= 16, "cluster size");
    __shared__ float warp_sums[NWARPS];
    __shared__ float cta_sums[CLUSTER];  // slot [i]: CTA i's sum, written by CTA i (step 3)

    cluster_arrive_relaxed();  // step 0
    const unsigned rank = cluster_rank();
    const long long row = blockIdx.x / CLUSTER;
    const int t = threadIdx.x;
    const int nvec = N / VEC;  // the launcher guarantees N % VEC == 0
    const int first = (int)rank * (THREADS * CHUNKS) + t;  // this thread's vector c: first + c * THREADS
    const T* xr = x + row * (long long)N;
    const T* gr = GATE ? gate + row * (long long)N : nullptr;

    // step 1: every load of x (and g) before any use
    Pack<T, VEC> px[CHUNKS], pg[GATE ? CHUNKS : 1];
    Pack<WT, VEC> pw[CHUNKS];
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS;
        if (j < nvec) {
            px[c] = load_pack<false, T, VEC>(xr + (long long)j * VEC);
            if (GATE) pg[c] = load_pack<false, T, VEC>(gr + (long long)j * VEC);
        }
    }
    // step 2: sum of squares; the gate op keeps a = x * silu(g) (fp32), rmsnorm keeps x packed
    float a[GATE ? EPT : 1];
    float sumsq = 0.0f;
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        if (first + c * THREADS < nvec) {
            #pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float xf = elem(px[c], k);
                sumsq = fmaf(xf, xf, sumsq);
                if (GATE) a[c * VEC + k] = xf * silu(elem(pg[c], k));
            }
        }
    }
    // the weight (L2-resident: every row reads it) once x's registers are folded: its latency
    // hides behind the block and cluster reductions, and the gate op's x and g are dead by now
    load_weight_slice<WT, VEC, CHUNKS, THREADS>(pw, w, first, nvec);
    // [region cluster_exchange]
    const float cta = cta_allreduce_sum<THREADS>(sumsq, warp_sums, t);
    // step 3: this CTA's sum into slot [rank] of every CTA of the cluster
    cluster_wait_acquire();  // matches step 0: every CTA of the cluster has started
    if (t < CLUSTER) st_remote_f32(&cta_sums[rank], (unsigned)t, cta);
    cluster_arrive_release();
    cluster_wait_acquire();
    // step 4: the row sum, in rank order (the same bits in every CTA)
    const float r = rstd_of_cta_sums<CLUSTER>(cta_sums, N, eps);
    if (rank == 0 && t == 0) rstd[row] = r;
    // [end cluster_exchange]
    // step 5: y from the registers
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    T* yr = out + row * (long long)N;
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS;
        if (j < nvec) {
            Pack<T, VEC> py;
            #pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float v = GATE ? a[c * VEC + k] : elem(px[c], k);
                py.v[k] = from_f32<T>((v * (elem(pw[c], k) + w_offset)) * r);
            }
            st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
        }
    }
#else
    __trap();  // no clusters before sm_90: the launcher never selects these kernels there
#endif
}
// [end cluster_row]

// ---------------------------------------------------------------------------------------
// one row per cluster, the slice in shared memory (WIDE_MODE 1 and 2)

// 16 bytes global -> shared, asynchronously, cached in L2 only (cp.async.cg, sm_80+); visible
// to the issuing thread after cp_async_wait_all().
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
#if WIDE_HAS_CLUSTERS
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(a), "l"(gmem) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#if WIDE_HAS_CLUSTERS
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
// One weight pack (16 or 32 bytes: one or two 16-byte copies) global -> shared.
template <typename WT, int VEC>
__device__ __forceinline__ void cp_async_pack(Pack<WT, VEC>* dst, const WT* src) {
    #pragma unroll
    for (int q = 0; q < (int)(sizeof(Pack<WT, VEC>) / 16); ++q)
        cp_async16(reinterpret_cast<uint4*>(dst) + q, reinterpret_cast<const uint4*>(src) + q);
}
// This thread's weight packs of the CTA's slice into shared memory, slot c * THREADS + t for
// vector first + c * THREADS (the persistent modes' copy, once per CTA).
template <typename WT, int VEC, int CHUNKS, int THREADS>
__device__ __forceinline__ void cp_async_weight_slice(Pack<WT, VEC>* sw, const WT* __restrict__ w, int first,
                                                      int nvec, int t) {
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS;
        if (j < nvec) cp_async_pack<WT, VEC>(&sw[c * THREADS + t], w + (long long)j * VEC);
    }
}

// The CTA's sum of squares over its slice in shared memory `sx`: each thread fmaf-chains its
// own vectors (chunk c = vector first + c * THREADS + t of the row), then the warps' butterflies,
// then the warp totals in warp order (`warp_sums`: NWARPS floats).  Modes 1-5 all sum this way,
// so a row has the same bits in every mode; the call must be reached by every thread.
template <typename T, int VEC, int CHUNKS, int THREADS>
__device__ __forceinline__ float cta_sumsq_smem(const Pack<T, VEC>* sx, int first, int nvec, int t,
                                                float* warp_sums) {
    float sumsq = 0.0f;
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        if (first + c * THREADS < nvec) {
            const Pack<T, VEC> px = sx[c * THREADS + t];
            #pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float xf = elem(px, k);
                sumsq = fmaf(xf, xf, sumsq);
            }
        }
    }
    return cta_allreduce_sum<THREADS>(sumsq, warp_sums, t);
}

// y of one 16-byte vector: T(x [* silu(g)] * (w + w_offset) * r), in fp32 (modes 1-5).
template <bool GATE, typename T, typename WT, int VEC>
__device__ __forceinline__ Pack<T, VEC> y_pack(const Pack<T, VEC>& px, const Pack<T, VEC>& pg,
                                               const Pack<WT, VEC>& pw, float w_offset, float r) {
    Pack<T, VEC> py;
    #pragma unroll
    for (int k = 0; k < VEC; ++k) {
        const float xf = elem(px, k);
        const float v = GATE ? xf * silu(elem(pg, k)) : xf;
        py.v[k] = from_f32<T>((v * (elem(pw, k) + w_offset)) * r);
    }
    return py;
}

// Where the shared-memory modes (1, 5) load the weight for the last step (WIDE_WLOAD):
//   0  one chunk at a time, in the store loop: each store's "memory" clobber keeps the next
//      chunk's load behind it, so a thread waits one L2 round trip per chunk (sm_90 SASS: LDG,
//      STG, LDG, STG, ...) -- cheapest in registers;
//   1  all of the thread's chunks, then their stores: one round trip;
//   2  with x's copies (step 1), into registers: the latency hides behind the loads, the
//      reductions and the exchange; the registers are held throughout.
// Which is fastest depends on the shape and on how many CTAs the registers let an SM hold
// (benchmarks/NOTES.md, "the weight's loads"); the launcher's policy names one per shape.
#ifndef WIDE_WLOAD
#define WIDE_WLOAD 2
#endif
// The last step of a one-row-per-cluster mode with the slice in shared memory (modes 1, 2, 5):
// each thread writes y of its own vectors of row `yr`, the weight from shared memory (SMEM_W,
// `sw`), from registers loaded with x (PRE, `wpre`: WIDE_WLOAD 2) or from global memory (WIDE_WLOAD
// 0 or 1), the stores marked evict-first (y is not read again here).
template <typename T, typename WT, bool GATE, int CHUNKS, int THREADS, bool SMEM_W, bool PRE = false>
__device__ __forceinline__ void store_row_smem(T* __restrict__ yr, const Pack<T, 16 / sizeof(T)>* sx,
                                               const Pack<T, 16 / sizeof(T)>* sg,
                                               const Pack<WT, 16 / sizeof(T)>* sw, const WT* __restrict__ w,
                                               int first, int nvec, int t, float w_offset, float r,
                                               const Pack<WT, 16 / sizeof(T)>* wpre = nullptr) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int WB = WIDE_WLOAD == 0 ? 1 : CHUNKS;  // chunks whose weight loads go out together
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    #pragma unroll
    for (int c0 = 0; c0 < CHUNKS; c0 += WB) {
        Pack<WT, VEC> pw[WB];
        #pragma unroll
        for (int k = 0; k < WB; ++k) {
            const int j = first + (c0 + k) * THREADS, s = (c0 + k) * THREADS + t;
            if (j < nvec) pw[k] = PRE ? wpre[c0 + k] : SMEM_W ? sw[s] : load_pack<true, WT, VEC>(w + (long long)j * VEC);
        }
        #pragma unroll
        for (int k = 0; k < WB; ++k) {
            const int j = first + (c0 + k) * THREADS, s = (c0 + k) * THREADS + t;
            if (j < nvec) {
                const Pack<T, VEC> px = sx[s];
                Pack<T, VEC> pg;
                if (GATE) pg = sg[s];
                const Pack<T, VEC> py = y_pack<GATE>(px, pg, pw[k], w_offset, r);
                st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
            }
        }
    }
}

// [region cluster_row_smem]
// As cluster_row, but step 1 copies the slice into shared memory with cp.async (no registers
// held while the loads fly: the CTAs per SM are bounded by shared memory, not registers, so
// more bytes are in flight per SM).  Each thread reads back only the 16-byte vectors it copied
// itself (no barrier needed for them).  SMEM_W: the weight's slice is copied with x (true), or
// read from global memory in step 5 (false: less shared memory per CTA).
// Dynamic shared memory: THREADS * EPT * (sizeof(T) * (1 + GATE) + (SMEM_W ? sizeof(WT) : 0)) bytes.
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT, bool SMEM_W>
__device__ __forceinline__ void cluster_row_smem(T* __restrict__ out, float* __restrict__ rstd,
                                                 const T* __restrict__ x, const T* __restrict__ gate,
                                                 const WT* __restrict__ w, int N, float eps, float w_offset) {
#if WIDE_HAS_CLUSTERS
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CHUNKS = EPT / VEC;
    constexpr int NWARPS = THREADS / 32;
    constexpr int SLICE = THREADS * CHUNKS;  // 16-byte vectors of x per CTA
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024, "launch shape");
    __shared__ float warp_sums[NWARPS];
    __shared__ float cta_sums[CLUSTER];
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<T, VEC>* sx = reinterpret_cast<Pack<T, VEC>*>(wide_smem);
    Pack<T, VEC>* sg = sx + SLICE;                                              // GATE only
    Pack<WT, VEC>* sw = reinterpret_cast<Pack<WT, VEC>*>(sx + (GATE ? 2 : 1) * SLICE);  // SMEM_W only

    cluster_arrive_relaxed();  // step 0
    const unsigned rank = cluster_rank();
    const long long row = blockIdx.x / CLUSTER;
    const int t = threadIdx.x;
    const int nvec = N / VEC;
    const int first = (int)rank * SLICE + t;
    const T* xr = x + row * (long long)N;
    const T* gr = GATE ? gate + row * (long long)N : nullptr;

    // step 1: the slice into shared memory, every copy in flight at once
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS, s = c * THREADS + t;
        if (j < nvec) {
            cp_async16(&sx[s], xr + (long long)j * VEC);
            if (GATE) cp_async16(&sg[s], gr + (long long)j * VEC);
            if (SMEM_W) cp_async_pack<WT, VEC>(&sw[s], w + (long long)j * VEC);
        }
    }
    constexpr bool PRE = WIDE_WLOAD == 2 && !SMEM_W;  // the weight into registers now (see WIDE_WLOAD)
    Pack<WT, VEC> wpre[PRE ? CHUNKS : 1];
    if constexpr (PRE) load_weight_slice<WT, VEC, CHUNKS, THREADS>(wpre, w, first, nvec);
    cp_async_wait_all();
    // step 2: sum of squares of this thread's own vectors
    const float cta = cta_sumsq_smem<T, VEC, CHUNKS, THREADS>(sx, first, nvec, t, warp_sums);
    // steps 3 and 4: as cluster_row
    cluster_wait_acquire();
    if (t < CLUSTER) st_remote_f32(&cta_sums[rank], (unsigned)t, cta);
    cluster_arrive_release();
    cluster_wait_acquire();
    const float r = rstd_of_cta_sums<CLUSTER>(cta_sums, N, eps);
    if (rank == 0 && t == 0) rstd[row] = r;
    // step 5: y from shared memory (and the weight from shared or global memory)
    store_row_smem<T, WT, GATE, CHUNKS, THREADS, SMEM_W, PRE>(out + row * (long long)N, sx, sg, sw, w, first, nvec,
                                                               t, w_offset, r, wpre);
#else
    __trap();
#endif
}
// [end cluster_row_smem]

// ---------------------------------------------------------------------------------------
// mbarriers and st.async (sm_90): the CTA sums of modes 3, 4 and 5

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
#if WIDE_HAS_CLUSTERS
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(count) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
#if WIDE_HAS_CLUSTERS
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(a), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait_parity(unsigned long long* bar, unsigned parity) {
#if WIDE_HAS_CLUSTERS
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "WIDE_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WIDE_WAIT;\n\t}"
                 :: "r"(a), "r"(parity) : "memory");
#endif
}
// v into the float at `local` (this CTA's address of it) in CTA `rank`, completing 4 bytes of
// the transaction count of that CTA's mbarrier at `bar` (st.async: no round trip).
__device__ __forceinline__ void st_async_remote_f32(float* local, unsigned long long* bar, unsigned rank, float v) {
#if WIDE_HAS_CLUSTERS
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(local));
    const unsigned ab = static_cast<unsigned>(__cvta_generic_to_shared(bar));
    unsigned ra, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(ab), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
                 :: "r"(ra), "f"(v), "r"(rb) : "memory");
#endif
}

// QuACK's exchange of the CTA sums, one row per cluster (modes 5, 9; the persistent modes 3, 4,
// 7, 8 write the same steps out with their slot set and parity): thread i < CLUSTER sends this CTA's `cta`
// into slot [rank] of `cta_sums` in CTA i, completing 4 bytes on that CTA's mbarrier `bar`;
// every thread waits for its own `bar`'s phase `parity` (all CLUSTER sums landed) and returns
// r from them (rstd_of_cta_sums).  The caller has armed `bar` for CLUSTER * 4 bytes (thread 0)
// and knows every CTA of the cluster has initialised its mbarriers.
template <int CLUSTER>
__device__ __forceinline__ float exchange_rstd_mbar(float cta, float* cta_sums, unsigned long long* bar,
                                                    unsigned parity, unsigned rank, int t, int N, float eps) {
    if (t < CLUSTER) st_async_remote_f32(&cta_sums[rank], bar, (unsigned)t, cta);
    mbar_wait_parity(bar, parity);
    return rstd_of_cta_sums<CLUSTER>(cta_sums, N, eps);
}

// ---------------------------------------------------------------------------------------
// persistent clusters (WIDE_MODE 3 and 4)

__device__ __forceinline__ void cp_async_commit() {
#if WIDE_HAS_CLUSTERS
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Every committed group but the newest N complete (and visible to the issuing thread).
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
#if WIDE_HAS_CLUSTERS
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
#endif
}

// [region cluster_rows_persistent]
// A persistent grid: gridDim.x / CLUSTER clusters (the launcher sizes it to what the GPU holds
// at once, at most M), cluster k normalising rows k, k + G, k + 2G, ... < M (G = the cluster
// count).  Per row the arithmetic is cluster_row_smem's exactly (the same per-thread order,
// butterflies and rank-order slot sum), so a row's bits are mode 1's at the same (CLUSTER,
// THREADS, EPT) whatever M, G or the row's position: only which cluster computes it changes.
// What changes is what a CTA keeps and overlaps:
//   * the weight's slice is copied into shared memory once (cp.async, with the first row) and
//     read from there for every row;
//   * STAGES == 2: x (and the gate) double-buffered.  Before reducing row i the CTA issues the
//     copies of its next row into the other buffer, so they are in flight through this row's
//     reductions, sum exchange and stores.  A buffer is refilled one row after it was read,
//     by the thread that read it (each thread copies and reads only its own vectors: no block
//     barrier for the buffers).
//   * STAGES == 1: one buffer; each vector of the next row is copied into its slot right after
//     this row's y for that vector is stored (the store consumed the value just read from the
//     slot, so the read has completed before the copy is issued; the same thread does both).
//     Half the shared memory: for slices too large to double (fp32 gate at 262144).
// The CTA sums travel as in mode 5 (cluster_row_mbar, below): st.async into slot [rank] of every
// CTA, completing 4 bytes on that CTA's mbarrier; no cluster barrier per row.  (Mode 1's
// barrier.cluster.arrive.release compiles to MEMBAR.ALL.GPU on sm_90 (nvcc 13.0 SASS), a fence
// that waits for the thread's earlier stores -- here the previous row's y -- every row.)  Two slot sets and two mbarriers, iteration `it` using set p = it & 1 at phase
// parity (it >> 1) & 1.  Why two suffice: CTA A sends iteration it + 2's sum into set p of CTA
// B only after its own wait of iteration it + 1 returned, i.e. after B's sum of it + 1 reached
// A; B sends that only after it has waited for set p's phase of iteration it and read the
// slots (program order; the read's value fed the stores before the send).  So no sum of it + 2
// lands in a slot, or completes a phase, that B still needs for it.  (With one set, A could
// send it + 1's sum while B still reads it's.)  B's thread 0 may arm a phase after some of its
// bytes landed (the transaction count goes negative for a while; the phase cannot complete
// before the arm's arrival).  The per-CTA warp totals use two sets too (the block barrier of
// iteration it + 1 separates the reads of it from the writes of it + 2).  A CTA's last wait
// returns only once every sum sent to it has landed, so it may exit; a cluster with no row
// (the launcher starts none; tests do) copies nothing, passes its first cluster barrier and exits.
// Dynamic shared memory: THREADS * EPT * (sizeof(WT) + STAGES * sizeof(T) * (1 + GATE)) bytes.
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT, int STAGES>
__device__ __forceinline__ void cluster_rows_persistent(T* __restrict__ out, float* __restrict__ rstd,
                                                        const T* __restrict__ x, const T* __restrict__ gate,
                                                        const WT* __restrict__ w, int N, long long M,
                                                        float eps, float w_offset) {
#if WIDE_HAS_CLUSTERS
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CHUNKS = EPT / VEC;
    constexpr int NWARPS = THREADS / 32;
    constexpr int SLICE = THREADS * CHUNKS;
    constexpr int XG = GATE ? 2 : 1;  // row inputs per buffer: x (and the gate)
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024, "launch shape");
    static_assert(STAGES == 1 || STAGES == 2, "one or two row buffers");
    __shared__ float warp_sums[2][NWARPS];
    __shared__ float cta_sums[2][CLUSTER];  // set it & 1, slot [i] written by CTA i
    __shared__ unsigned long long bars[2];  // set p's: one arrival (the arm) + CLUSTER * 4 bytes
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<WT, VEC>* sw = reinterpret_cast<Pack<WT, VEC>*>(wide_smem);  // the weight's slice
    Pack<T, VEC>* sbuf = reinterpret_cast<Pack<T, VEC>*>(sw + SLICE);  // buffer b: x at b * XG * SLICE, gate after

    const int t = threadIdx.x;
    if (t == 0) {
        mbar_init(&bars[0], 1);
        mbar_init(&bars[1], 1);
    }
    cluster_arrive_relaxed();  // its wait, below, proves every CTA runs and has its mbarriers
    const unsigned rank = cluster_rank();
    const int nvec = N / VEC;
    const int first = (int)rank * SLICE + t;
    const long long nclusters = gridDim.x / CLUSTER;
    long long row = blockIdx.x / CLUSTER;

    // copies of row `r`'s vectors owned by this thread into buffer b
    auto issue_row = [&](long long r, int b) {
        Pack<T, VEC>* sx = sbuf + b * XG * SLICE;
        const T* xr = x + r * (long long)N;
        const T* gr = GATE ? gate + r * (long long)N : nullptr;
        #pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int j = first + c * THREADS, s = c * THREADS + t;
            if (j < nvec) {
                cp_async16(&sx[s], xr + (long long)j * VEC);
                if (GATE) cp_async16(&sx[SLICE + s], gr + (long long)j * VEC);
            }
        }
    };
    // prologue: the weight's slice and the first row, one group (a cluster without a row copies
    // nothing: it must not exit with copies into its shared memory in flight)
    if (row < M) {
        cp_async_weight_slice<WT, VEC, CHUNKS, THREADS>(sw, w, first, nvec, t);
        issue_row(row, 0);
    }
    cp_async_commit();
    cluster_wait_acquire();  // the first barrier's wait, its latency behind the copies in flight
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));

    for (int it = 0; row < M; ++it, row += nclusters) {
        const int b = STAGES == 2 ? (it & 1) : 0, p = it & 1;
        const long long next = row + nclusters;
        if (STAGES == 2) {
            if (next < M) issue_row(next, b ^ 1);  // in flight through this row's reductions and stores
            cp_async_commit();                     // (an empty group when there is no next row)
            cp_async_wait_group<1>();              // this row's group (and the weight's) landed
        } else {
            cp_async_wait_group<0>();
        }
        const Pack<T, VEC>* sx = sbuf + b * XG * SLICE;
        // sum of squares of this thread's own vectors, in cluster_row_smem's order
        const float cta = cta_sumsq_smem<T, VEC, CHUNKS, THREADS>(sx, first, nvec, t, warp_sums[p]);
        // this CTA's sum into slot [rank] of set p of every CTA; wait for set p's CLUSTER sums
        if (t == 0) mbar_arrive_expect_tx(&bars[p], CLUSTER * 4);
        if (t < CLUSTER) st_async_remote_f32(&cta_sums[p][rank], &bars[p], (unsigned)t, cta);
        mbar_wait_parity(&bars[p], (unsigned)(it >> 1) & 1u);
        const float r = rstd_of_cta_sums<CLUSTER>(cta_sums[p], N, eps);
        if (rank == 0 && t == 0) rstd[row] = r;
        T* yr = out + row * (long long)N;
        const T* xn = x + next * (long long)N;  // STAGES == 1: the next row, refilled slot by slot
        const T* gn = GATE ? gate + next * (long long)N : nullptr;
        #pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int j = first + c * THREADS, s = c * THREADS + t;
            if (j < nvec) {
                const Pack<WT, VEC> pw = sw[s];
                const Pack<T, VEC> px = sx[s];
                Pack<T, VEC> pg;
                if (GATE) pg = sx[SLICE + s];
                const Pack<T, VEC> py = y_pack<GATE>(px, pg, pw, w_offset, r);
                st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
                if (STAGES == 1 && next < M) {  // after the store: the slot's value has been read
                    cp_async16(const_cast<Pack<T, VEC>*>(&sx[s]), xn + (long long)j * VEC);
                    if (GATE) cp_async16(const_cast<Pack<T, VEC>*>(&sx[SLICE + s]), gn + (long long)j * VEC);
                }
            }
        }
        if (STAGES == 1) cp_async_commit();
    }
#else
    __trap();
#endif
}
// [end cluster_rows_persistent]

// ---------------------------------------------------------------------------------------
// persistent clusters, the row in registers, a ring of copies in flight (WIDE_MODE 7 and 8)

// [region cluster_rows_ring]
// A persistent grid as cluster_rows_persistent (cluster k normalises rows k, k + G, ... < M),
// but a CTA keeps its slice of the row in registers -- x packed for rmsnorm, a = x * silu(g) in
// fp32 for the gate, as cluster_row (mode 0) -- and its shared memory holds a ring of RING
// chunk slots (a chunk: one 16-byte vector of x, and one of the gate, per thread) that the next
// chunks' copies fly into.  Each thread runs its own software pipeline over the sequence of
// (row, chunk) it owns: chunk q = it * CHUNKS + c of the cluster's it-th row lives in slot
// q % RING.  Before consuming chunk q the thread waits until at most RING - 1 of its cp.async
// groups are pending (every group is one chunk, empty past the row's end or M, so the count is
// the same at every step); it reads the slot into registers, adds the squares, and at once
// reissues the slot with chunk q + RING -- the next row's first chunks while it finishes this
// one.  So RING chunks are in flight through the reductions, the sum exchange and the stores,
// and no slot waits for a store to free it (the register slice does).  The weight: mode 7
// copies the CTA's slice into shared memory once (with the first chunk's group) and reads it
// there; mode 8 reads it from global memory (L2: every row reads it) one chunk ahead of the
// stores.  Each thread copies and reads only its own vectors: no block barrier for the ring.
// The arithmetic per row is cluster_row_smem's (the same per-thread fmaf order, butterflies and
// rank-order slot sum; y = T(x [* silu(g)] * (w + w_offset) * r)): mode 1's bits at the same
// (CLUSTER, THREADS, EPT), whatever M, G, RING or the row's position.  The CTA sums travel as
// cluster_rows_persistent's (two slot sets and mbarriers, st.async).  A cluster's last copies
// are empty groups (past M), so no copy into shared memory is in flight when a CTA exits.
// Dynamic shared memory: RING * THREADS * 16 * (1 + GATE) bytes, plus THREADS * EPT * sizeof(WT)
// for mode 7's weight.
#ifndef WIDE_RING
#define WIDE_RING 4
#endif
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT, int RING, bool WSMEM>
__device__ __forceinline__ void cluster_rows_ring(T* __restrict__ out, float* __restrict__ rstd,
                                                  const T* __restrict__ x, const T* __restrict__ gate,
                                                  const WT* __restrict__ w, int N, long long M,
                                                  float eps, float w_offset) {
#if WIDE_HAS_CLUSTERS
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CHUNKS = EPT / VEC;
    constexpr int NWARPS = THREADS / 32;
    constexpr int SLICE = THREADS * CHUNKS;
    constexpr int XG = GATE ? 2 : 1;  // vectors per thread per slot: x (and the gate)
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024, "launch shape");
    static_assert(RING >= 1 && RING <= 16, "ring depth");
    __shared__ float warp_sums[2][NWARPS];
    __shared__ float cta_sums[2][CLUSTER];
    __shared__ unsigned long long bars[2];
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<T, VEC>* ring = reinterpret_cast<Pack<T, VEC>*>(wide_smem);  // slot s: x at s * XG * THREADS, gate after
    Pack<WT, VEC>* sw = reinterpret_cast<Pack<WT, VEC>*>(ring + RING * XG * THREADS);  // mode 7's weight slice

    const int t = threadIdx.x;
    if (t == 0) {
        mbar_init(&bars[0], 1);
        mbar_init(&bars[1], 1);
    }
    cluster_arrive_relaxed();  // its wait, below, proves every CTA runs and has its mbarriers
    const unsigned rank = cluster_rank();
    const int nvec = N / VEC;
    const int first = (int)rank * SLICE + t;
    const long long nclusters = gridDim.x / CLUSTER;
    long long row = blockIdx.x / CLUSTER;

    // chunk c of row r into slot s (nothing past the row's end or past M), then one commit
    auto issue = [&](long long r, int c, int s) {
        const int j = first + c * THREADS;
        if (r < M && j < nvec) {
            cp_async16(&ring[s * XG * THREADS + t], x + r * (long long)N + (long long)j * VEC);
            if (GATE) cp_async16(&ring[(s * XG + 1) * THREADS + t], gate + r * (long long)N + (long long)j * VEC);
        }
        cp_async_commit();
    };
    // prologue: mode 7's weight slice (in the first group), then chunks 0 .. RING-1
    if (WSMEM && row < M) cp_async_weight_slice<WT, VEC, CHUNKS, THREADS>(sw, w, first, nvec, t);
    #pragma unroll
    for (int q = 0; q < RING; ++q) issue(row + (q / CHUNKS) * nclusters, q % CHUNKS, q);
    cluster_wait_acquire();  // the first barrier's wait, its latency behind the copies in flight
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));

    int slot = 0;  // the slot of the next chunk to consume
    for (int it = 0; row < M; ++it, row += nclusters) {
        const int p = it & 1;
        Pack<T, VEC> px[GATE ? 1 : CHUNKS];
        float a[GATE ? EPT : 1];
        float sumsq = 0.0f;
        #pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            cp_async_wait_group<RING - 1>();  // chunk c of this row has landed
            if (first + c * THREADS < nvec) {
                const Pack<T, VEC> v = ring[slot * XG * THREADS + t];
                Pack<T, VEC> g;
                if (GATE) g = ring[(slot * XG + 1) * THREADS + t];
                #pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const float xf = elem(v, k);
                    sumsq = fmaf(xf, xf, sumsq);
                    if (GATE) a[c * VEC + k] = xf * silu(elem(g, k));
                }
                if (!GATE) px[c] = v;
            }
            // the slot's value is in registers (read by this thread): refill it RING chunks ahead.  The
            // copy is issued after the thread's own ld.shared of the slot, in program order; its
            // write lands only after a round trip to global memory (cp.async.cg: L2 at least), so
            // the read has long completed.  (Mode 4 refills after a store consumed the value; here
            // the value feeds the sum right away, and racecheck runs these kernels clean.)
            issue(row + ((c + RING) / CHUNKS) * nclusters, (c + RING) % CHUNKS, slot);
            slot = slot + 1 == RING ? 0 : slot + 1;
        }
        // the CTA's sum (two sets of warp totals, as cluster_rows_persistent), then the exchange
        const float cta = cta_allreduce_sum<THREADS>(sumsq, warp_sums[p], t);
        if (t == 0) mbar_arrive_expect_tx(&bars[p], CLUSTER * 4);
        if (t < CLUSTER) st_async_remote_f32(&cta_sums[p][rank], &bars[p], (unsigned)t, cta);
        mbar_wait_parity(&bars[p], (unsigned)(it >> 1) & 1u);
        const float r = rstd_of_cta_sums<CLUSTER>(cta_sums[p], N, eps);
        if (rank == 0 && t == 0) rstd[row] = r;
        // y from the registers; mode 8 loads the weight one chunk ahead of each store
        T* yr = out + row * (long long)N;
        Pack<WT, VEC> wn;
        if (!WSMEM && first < nvec) wn = load_pack<true, WT, VEC>(w + (long long)first * VEC);
        #pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int j = first + c * THREADS;
            Pack<WT, VEC> pw;
            if (WSMEM) {
                if (j < nvec) pw = sw[c * THREADS + t];
            } else {
                pw = wn;
                if (c + 1 < CHUNKS && j + THREADS < nvec) wn = load_pack<true, WT, VEC>(w + (long long)(j + THREADS) * VEC);
            }
            if (j < nvec) {
                Pack<T, VEC> py;
                #pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const float v = GATE ? a[c * VEC + k] : elem(px[c], k);
                    py.v[k] = from_f32<T>((v * (elem(pw, k) + w_offset)) * r);
                }
                st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
            }
        }
    }
#else
    __trap();
#endif
}
// [end cluster_rows_ring]

// ---------------------------------------------------------------------------------------
// one row per cluster, the slice split between registers and shared memory (WIDE_MODE 9)

// [region cluster_row_hybrid]
// cluster_row_mbar (mode 5: one row per cluster, the CTA sums by st.async onto each CTA's
// mbarrier) with the slice split in two: a thread's first RC = WIDE_HREG chunks are loaded into
// registers (x packed for rmsnorm; for the gate x and g, kept as a = x * silu(g) in fp32 once
// summed), the rest copied into shared memory with cp.async -- so a CTA holds more than either
// alone would give it at the same CTAs per SM, and slices of 128 KiB fit two CTAs an SM on a
// 4-CTA cluster (262144 16-bit elements a row).  The copies are issued first, then the register
// loads; the squares are added in chunk order c = 0 .. CHUNKS-1 (the register chunks are the
// first ones), so a row's bits are mode 1's at the same (CLUSTER, THREADS, EPT).  The weight is
// read from global memory (L2) WIDE_WDIST chunks ahead of the stores.
// WIDE_HREG: chunks in registers (0: CHUNKS / 2); WIDE_WDIST: how many chunks ahead of the stores
// the weight's loads run (1: one).  WIDE_GLATE (the gate op only): 1 reads g in step 5 instead of
// step 1, WIDE_WDIST chunks ahead of the stores with the weight, straight from global memory (the
// statistic needs x alone): a CTA keeps only x on chip, half the gate op's bytes, and the last
// step streams g in while y streams out.  y is the same expression of the same values: the same
// bits.
// Dynamic shared memory: THREADS * (CHUNKS - RC) * 16 * (1 + GATE * !GLATE) bytes.
#ifndef WIDE_HREG
#define WIDE_HREG 0
#endif
#ifndef WIDE_WDIST
#define WIDE_WDIST 1
#endif
#ifndef WIDE_GLATE
#define WIDE_GLATE 0
#endif
// WIDE_PHASES (explorations only; never in the launcher's builds): thread 0 of each CTA below
// WIDE_PHASE_CTAS writes %globaltimer (ns, chip-wide) into slots 0-3 and clock64 (this SM's
// cycles) into slots 4-7 of its WIDE_PHASE_SLOTS entries of wide_phase_log at the CTA's start,
// its CTA sum (every thread's loads landed), the row's rstd (the exchange done) and its last
// store issued (after a barrier), and %smid into slot 8.
#ifndef WIDE_PHASES
#define WIDE_PHASES 0
#endif
#if WIDE_PHASES
#include "sreg.cuh"
#ifndef WIDE_PHASE_CTAS
#define WIDE_PHASE_CTAS 65536
#endif
#define WIDE_PHASE_SLOTS 10
__device__ unsigned long long wide_phase_log[WIDE_PHASE_CTAS * WIDE_PHASE_SLOTS];
__device__ __forceinline__ void wide_phase(int k) {
    if (threadIdx.x == 0 && blockIdx.x < WIDE_PHASE_CTAS) {
        unsigned long long* e = wide_phase_log + (size_t)blockIdx.x * WIDE_PHASE_SLOTS;
        e[k] = globaltimer_ns();
        e[4 + k] = (unsigned long long)clock64();
        if (k == 0) e[8] = smid();
    }
}
#else
__device__ __forceinline__ void wide_phase(int) {}
#endif
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT>
__device__ __forceinline__ void cluster_row_hybrid(T* __restrict__ out, float* __restrict__ rstd,
                                                   const T* __restrict__ x, const T* __restrict__ gate,
                                                   const WT* __restrict__ w, int N, float eps, float w_offset) {
#if WIDE_HAS_CLUSTERS
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CHUNKS = EPT / VEC;
    constexpr int RC = WIDE_HREG <= 0 ? CHUNKS / 2 : WIDE_HREG;  // chunks in registers: c < RC
    constexpr int SC = CHUNKS - RC;     // chunks in shared memory: c >= RC, at slot c - RC
    constexpr int NWARPS = THREADS / 32;
    constexpr int SLICE = THREADS * CHUNKS;
    constexpr int WD = WIDE_WDIST;      // the weight's loads run WD chunks ahead of the stores
    constexpr bool GL = GATE && WIDE_GLATE != 0;  // g read in step 5 (then nothing of g on chip before)
    constexpr bool GE = GATE && !GL;              // g read in step 1, with x
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024 && CHUNKS >= 2, "launch shape");
    static_assert(RC >= 1 && RC < CHUNKS && WD >= 1, "register chunks, weight distance");
    __shared__ float warp_sums[NWARPS];
    __shared__ float cta_sums[CLUSTER];
    __shared__ unsigned long long bar;
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<T, VEC>* sx = reinterpret_cast<Pack<T, VEC>*>(wide_smem);
    Pack<T, VEC>* sg = sx + SC * THREADS;  // GE only

    const int t = threadIdx.x;
    wide_phase(0);
    if (t == 0) mbar_init(&bar, 1);
    cluster_arrive_relaxed();
    const unsigned rank = cluster_rank();
    const long long row = blockIdx.x / CLUSTER;
    const int nvec = N / VEC;
    const int first = (int)rank * SLICE + t;
    const T* xr = x + row * (long long)N;
    const T* gr = GATE ? gate + row * (long long)N : nullptr;
    // step 1: the shared-memory half's copies, then the register half's loads
    #pragma unroll
    for (int c = RC; c < CHUNKS; ++c) {
        const int j = first + c * THREADS, s = (c - RC) * THREADS + t;
        if (j < nvec) {
            cp_async16(&sx[s], xr + (long long)j * VEC);
            if (GE) cp_async16(&sg[s], gr + (long long)j * VEC);
        }
    }
    Pack<T, VEC> px[RC], pg[GE ? RC : 1];
    #pragma unroll
    for (int c = 0; c < RC; ++c) {
        const int j = first + c * THREADS;
        if (j < nvec) {
            px[c] = load_pack<false, T, VEC>(xr + (long long)j * VEC);
            if (GE) pg[c] = load_pack<false, T, VEC>(gr + (long long)j * VEC);
        }
    }
    // step 2: the squares in chunk order, the register chunks first
    float a[GE ? RC * VEC : 1];
    float sumsq = 0.0f;
    #pragma unroll
    for (int c = 0; c < RC; ++c) {
        if (first + c * THREADS < nvec) {
            #pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float xf = elem(px[c], k);
                sumsq = fmaf(xf, xf, sumsq);
                if (GE) a[c * VEC + k] = xf * silu(elem(pg[c], k));
            }
        }
    }
    cp_async_wait_all();
    #pragma unroll
    for (int c = RC; c < CHUNKS; ++c) {
        if (first + c * THREADS < nvec) {
            const Pack<T, VEC> v = sx[(c - RC) * THREADS + t];
            #pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float xf = elem(v, k);
                sumsq = fmaf(xf, xf, sumsq);
            }
        }
    }
    const float cta = cta_allreduce_sum<THREADS>(sumsq, warp_sums, t);
    wide_phase(1);
    // steps 3 and 4: as cluster_row_mbar
    if (t == 0) mbar_arrive_expect_tx(&bar, CLUSTER * 4);
    cluster_wait_acquire();
    const float r = exchange_rstd_mbar<CLUSTER>(cta, cta_sums, &bar, 0u, rank, t, N, eps);
    if (rank == 0 && t == 0) rstd[row] = r;
    wide_phase(2);
    // step 5: y, the weight (and with GL the gate) WD chunks ahead of each store
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    T* yr = out + row * (long long)N;
    Pack<WT, VEC> wq[WD];        // wq[c % WD]: chunk c's weight
    Pack<T, VEC> gq[GL ? WD : 1];  // gq[c % WD]: chunk c's gate (GL)
    #pragma unroll
    for (int d = 0; d < WD; ++d) {
        if (d < CHUNKS && first + d * THREADS < nvec) {
            wq[d] = load_pack<true, WT, VEC>(w + (long long)(first + d * THREADS) * VEC);
            if constexpr (GL) gq[d] = load_pack<false, T, VEC>(gr + (long long)(first + d * THREADS) * VEC);
        }
    }
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS;
        const Pack<WT, VEC> pw = wq[c % WD];
        Pack<T, VEC> g;
        if constexpr (GL) g = gq[c % WD];
        if (c + WD < CHUNKS && j + WD * THREADS < nvec) {
#if WIDE_DIAG_WEIGHT_EVERY > 1  // timing diagnostic: 1 chunk in k read
            if ((c + WD) % WIDE_DIAG_WEIGHT_EVERY == 0)
#endif
            wq[c % WD] = load_pack<true, WT, VEC>(w + (long long)(j + WD * THREADS) * VEC);
            if constexpr (GL) gq[c % WD] = load_pack<false, T, VEC>(gr + (long long)(j + WD * THREADS) * VEC);
        }
        if (j < nvec) {
            Pack<T, VEC> py;
            if (c < RC) {
                #pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const float xf = elem(px[c], k);
                    const float v = GE ? a[c * VEC + k] : GL ? xf * silu(elem(g, k)) : xf;
                    py.v[k] = from_f32<T>((v * (elem(pw, k) + w_offset)) * r);
                }
            } else {
                const int s = (c - RC) * THREADS + t;
                if (GE) g = sg[s];
                py = y_pack<GATE>(sx[s], g, pw, w_offset, r);
            }
            st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
        }
    }
#if WIDE_PHASES
    __syncthreads();
    wide_phase(3);
#endif
#else
    __trap();
#endif
}
// [end cluster_row_hybrid]

// ---------------------------------------------------------------------------------------
// one row per cluster, the CTA sums through an mbarrier (WIDE_MODE 5: QuACK's exchange)

// [region cluster_row_mbar]
// cluster_row_smem (mode 1: the slice by cp.async into shared memory, the weight from global
// memory at the end) with QuACK's cluster exchange (quack/reduce.py cluster_reduce) in place of
// the second cluster barrier: one mbarrier per CTA, initialised before the cluster's first
// (relaxed) arrive; thread 0 arms it for CLUSTER * 4 bytes; after the wait that proves every
// CTA started (so every mbarrier is initialised), thread i < CLUSTER sends the CTA sum to slot
// [rank] of CTA i with st.async, which completes 4 bytes on CTA i's mbarrier; every thread
// waits for its own mbarrier's phase 0 and adds slots 0 .. CLUSTER-1 in order (the same bits as
// mode 1).  A CTA's wait returns only once all CLUSTER sums have landed in it, so no store
// into it is pending when it exits: no closing barrier.
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT>
__device__ __forceinline__ void cluster_row_mbar(T* __restrict__ out, float* __restrict__ rstd,
                                                 const T* __restrict__ x, const T* __restrict__ gate,
                                                 const WT* __restrict__ w, int N, float eps, float w_offset) {
#if WIDE_HAS_CLUSTERS
    constexpr int VEC = 16 / sizeof(T);
    constexpr int CHUNKS = EPT / VEC;
    constexpr int NWARPS = THREADS / 32;
    constexpr int SLICE = THREADS * CHUNKS;
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024, "launch shape");
    __shared__ float warp_sums[NWARPS];
    __shared__ float cta_sums[CLUSTER];
    __shared__ unsigned long long bar;
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<T, VEC>* sx = reinterpret_cast<Pack<T, VEC>*>(wide_smem);
    Pack<T, VEC>* sg = sx + SLICE;

    const int t = threadIdx.x;
    if (t == 0) mbar_init(&bar, 1);  // fenced for the cluster; the arrive below publishes it
    cluster_arrive_relaxed();
    const unsigned rank = cluster_rank();
    const long long row = blockIdx.x / CLUSTER;
    const int nvec = N / VEC;
    const int first = (int)rank * SLICE + t;
    const T* xr = x + row * (long long)N;
    const T* gr = GATE ? gate + row * (long long)N : nullptr;
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = first + c * THREADS, s = c * THREADS + t;
        if (j < nvec) {
            cp_async16(&sx[s], xr + (long long)j * VEC);
            if (GATE) cp_async16(&sg[s], gr + (long long)j * VEC);
        }
    }
    constexpr bool PRE = WIDE_WLOAD == 2;  // the weight into registers now (see WIDE_WLOAD)
    Pack<WT, VEC> wpre[PRE ? CHUNKS : 1];
    if constexpr (PRE) load_weight_slice<WT, VEC, CHUNKS, THREADS>(wpre, w, first, nvec);
    cp_async_wait_all();
    const float cta = cta_sumsq_smem<T, VEC, CHUNKS, THREADS>(sx, first, nvec, t, warp_sums);
    if (t == 0) mbar_arrive_expect_tx(&bar, CLUSTER * 4);
    cluster_wait_acquire();  // every CTA of the cluster has started: its mbarrier is initialised
    const float r = exchange_rstd_mbar<CLUSTER>(cta, cta_sums, &bar, 0u, rank, t, N, eps);
    if (rank == 0 && t == 0) rstd[row] = r;
    store_row_smem<T, WT, GATE, CHUNKS, THREADS, false, PRE>(out + row * (long long)N, sx, sg, nullptr, w, first, nvec,
                                                              t, w_offset, r, wpre);
#else
    __trap();
#endif
}
// [end cluster_row_mbar]

// ---------------------------------------------------------------------------------------
// the extern "C" kernel: one per module, named after its -D configuration

#if WIDE_WLOAD == 1
#define WIDE_WLOAD_SUFFIX _wb
#elif WIDE_WLOAD == 2
#define WIDE_WLOAD_SUFFIX _we
#else
#define WIDE_WLOAD_SUFFIX
#endif
#if WIDE_MODE == 7 || WIDE_MODE == 8
#define WIDE_SUFFIX WIDE_RING_SUFFIX(WIDE_RING)
#define WIDE_RING_SUFFIX(K) WIDE_RING_SUFFIX2(K)
#define WIDE_RING_SUFFIX2(K) _r##K
#elif WIDE_MODE == 9
#if WIDE_GLATE
#define WIDE_SUFFIX WIDE_HYBRID_SUFFIX(WIDE_HREG, WIDE_WDIST, _g)
#else
#define WIDE_SUFFIX WIDE_HYBRID_SUFFIX(WIDE_HREG, WIDE_WDIST, )
#endif
#define WIDE_HYBRID_SUFFIX(H, D, G) WIDE_HYBRID_SUFFIX2(H, D, G)
#define WIDE_HYBRID_SUFFIX2(H, D, G) _h##H##_d##D##G
#else
#define WIDE_SUFFIX WIDE_WLOAD_SUFFIX
#endif
#define WIDE_NAME(OP, DT, WDT) WIDE_NAME2(OP, DT, WDT, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT, WIDE_MODE, WIDE_SUFFIX)
#define WIDE_NAME2(OP, DT, WDT, C, T, E, M, S) WIDE_NAME3(OP, DT, WDT, C, T, E, M, S)
#define WIDE_NAME3(OP, DT, WDT, C, T, E, M, S) OP##_cluster_##DT##_w##WDT##_c##C##_t##T##_e##E##_m##M##S

#define DEF_WIDE(OP, GATE, DT, T, WDT, WT)                                                          \
    extern "C" __global__ void WIDE_CLUSTER_DIMS __launch_bounds__(WIDE_THREADS, WIDE_MIN_BLOCKS)  \
        WIDE_NAME(OP, DT, WDT)(T* __restrict__ out, float* __restrict__ rstd,                      \
                               const T* __restrict__ x, const T* __restrict__ gate,                \
                               const WT* __restrict__ w, int N, float eps, float w_offset,         \
                               long long M) {                                                      \
        if (WIDE_MODE == 0)                                                                        \
            cluster_row<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT>(out, rstd, x, gate, w, N,   \
                                                                           eps, w_offset);         \
        else if (WIDE_MODE == 3 || WIDE_MODE == 4)                                                 \
            cluster_rows_persistent<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT,             \
                                    WIDE_MODE == 3 ? 2 : 1>(out, rstd, x, gate, w, N, M, eps, w_offset); \
        else if (WIDE_MODE == 7 || WIDE_MODE == 8)                                                 \
            cluster_rows_ring<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT, WIDE_RING,         \
                              WIDE_MODE == 7>(out, rstd, x, gate, w, N, M, eps, w_offset);         \
        else if (WIDE_MODE == 9)                                                                   \
            cluster_row_hybrid<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT>(out, rstd, x, gate, w, \
                                                                                  N, eps, w_offset); \
        else if (WIDE_MODE == 5)                                                                   \
            cluster_row_mbar<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT>(out, rstd, x, gate, w, \
                                                                                N, eps, w_offset); \
        else                                                                                       \
            cluster_row_smem<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT, WIDE_MODE == 2>(       \
                out, rstd, x, gate, w, N, eps, w_offset);                                          \
    }

#if WIDE_GATE
#define DEF_OP(DT, T, WDT, WT) DEF_WIDE(rmsnorm_gate, true, DT, T, WDT, WT)
#else
#define DEF_OP(DT, T, WDT, WT) DEF_WIDE(rmsnorm, false, DT, T, WDT, WT)
#endif

#if WIDE_DTYPE == 1 && WIDE_WEIGHT == 1
DEF_OP(f32, float, f32, float)
#elif WIDE_DTYPE == 2 && WIDE_WEIGHT == 2
DEF_OP(f16, __half, f16, __half)
#elif WIDE_DTYPE == 2 && WIDE_WEIGHT == 1
DEF_OP(f16, __half, f32, float)
#elif WIDE_DTYPE == 4 && WIDE_WEIGHT == 4
DEF_OP(bf16, __nv_bfloat16, bf16, __nv_bfloat16)
#elif WIDE_DTYPE == 4 && WIDE_WEIGHT == 1
DEF_OP(bf16, __nv_bfloat16, f32, float)
#else
#error "WIDE_DTYPE must be 1 (f32), 2 (f16) or 4 (bf16); WIDE_WEIGHT the same or 1 (f32)"
#endif
