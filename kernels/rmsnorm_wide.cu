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
// the op and the dtype); tests: tests/test_rmsnorm_wide.py; compute-sanitizer:
// scripts/sanitize/rmsnorm_wide.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels -DWIDE_DTYPE=2 -DWIDE_WEIGHT=2 \
//              -DWIDE_GATE=0 -DWIDE_CLUSTER=8 -DWIDE_THREADS=256 -DWIDE_EPT=32 -DWIDE_MIN_BLOCKS=6 \
//              -DWIDE_MODE=1 kernels/rmsnorm_wide.cu
//              (gpu_viz.rmsnorm.wide.kernel_report runs it for every configuration and arch)
//
// Layout.  grid = M * CLUSTER blocks of THREADS threads; cluster k (blocks k*CLUSTER ..
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
//      WIDE_MODE 1 and 5 (cluster_row_smem): cp.async copies into dynamic shared memory, no
//        registers held while they fly, so the CTAs per SM are bounded by shared memory and
//        more bytes are in flight per SM; each thread reads back only its own vectors (no
//        barrier).  The weight is read from global memory in step 5 (WIDE_WLOAD says when).
//      WIDE_MODE 9 (cluster_row_hybrid): a thread's first WIDE_HREG chunks into registers, the
//        rest into shared memory (slices of 128 KiB at two CTAs an SM).
//   2. sum of x^2: each thread over its elements in order, a warp butterfly, the warps'
//      totals through shared memory, one butterfly over them: every thread holds the CTA sum.
//   3. the CTA sums meet: thread i < CLUSTER stores the CTA sum into slot [rank] of CTA i's
//      shared memory (distributed shared memory).  Modes 0 and 1: st.shared::cluster after the
//      cluster wait, then arrive.release / wait.acquire.  Modes 5 and 9: QuACK's exchange,
//      st.async completing 4 bytes on each CTA's mbarrier, no second cluster barrier.
//   4. every thread adds slots 0 .. CLUSTER-1 in that order: every CTA of the cluster gets the
//      bit-identical row sum.  No other CTA's shared memory is touched after this, so no CTA
//      can exit while another still writes into it.
//   5. y from the registers / this CTA's shared memory, written once (L2 evict-first stores);
//      rank 0 writes rstd[row].  (Mode 9 with WIDE_GLATE reads the gate here, not in step 1.)
// Batch invariance: the summation order depends only on the compile-time configuration, which
// the launcher picks from N, the dtype and the GPU alone -- never from M or the row's position.
// Every mode adds a row's squares in the same order at a given (CLUSTER, THREADS, EPT): the
// mode changes where the operands wait, never a bit.
// Numerics: silu(g) = __fdividef(g, 1 + __expf(-g)) and r = rsqrtf(__fdividef(sum, N) + eps),
// as kernels/rmsnorm_fused.cu; storage fp32 / fp16 / bf16, arithmetic fp32, one rounding of y.
// NaN/Inf in a row make that row NaN/0 as the float64 formula, and never touch other rows.
//
// Kernels (extern "C"; names parsed by gpu_viz/rmsnorm/wide.py):
//   rmsnorm[_gate]_cluster_<dt>_w<wdt>_c<CLUSTER>_t<THREADS>_e<EPT>_m<MODE>[_wb|_we|_h<H>_d<D>[_g]]
//   dt = f32 | f16 | bf16 (x, gate, y); wdt = the weight's: dt, or f32 for a 16-bit x;
//   _wb / _we: WIDE_WLOAD 1 / 2 (modes 1, 5); _h<H>_d<D>[_g]: WIDE_HREG, WIDE_WDIST (mode 9), _g
//   with WIDE_GLATE.
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
//   WIDE_MODE        where a CTA keeps its slice and how the CTA sums meet (step 1 and 3): 0
//                    registers; 1 shared memory; 5 shared memory, the mbarrier exchange; 9 split
//                    between registers and shared memory, the mbarrier exchange.  (The numbers
//                    are the kernels' `_m<MODE>`; no other mode is built.)
//   WIDE_HREG        mode 9: chunks a thread keeps in registers (0: half of them)
//   WIDE_WDIST       mode 9: how many chunks ahead of the stores the weight is loaded
//   WIDE_GLATE       mode 9, the gate op: 1 reads g in the last step (0: with x in step 1)
//   WIDE_SMEM_ALIGN  where the dynamic shared memory starts (bytes; 128, see below)
//   WIDE_WLOAD       modes 1 and 5: when the last step's weight is loaded -- 0 a chunk at a
//                    time, 1 all chunks together, 2 with x's copies (see store_row_smem)
// Kernel arguments: (out, rstd, x, gate, w, N, eps, w_offset, M); M is not read (grid = M * CLUSTER).
// Before sm_90 (no clusters) the kernels compile to a trap: wide.supported() is False there.
#include "pack.cuh"  // Pack, elem, silu (and convert.cuh: to_f32 / from_f32<T>)
#include "reduce.cuh"  // warp_allreduce_sum

// A bare build (no -D) is the policy's fp16 rmsnorm at N = 131072 (wide.config(131072, "float16",
// (9, 0)); tests/test_rmsnorm_wide.py checks the two agree).  The launcher passes every one of
// these; mode 9's WIDE_HREG and WIDE_WDIST only with mode 9, WIDE_GLATE only where it is 1.
#ifndef WIDE_MODE
#define WIDE_DTYPE 2
#define WIDE_WEIGHT 2
#define WIDE_GATE 0
#define WIDE_CLUSTER 4
#define WIDE_THREADS 1024
#define WIDE_EPT 32
#define WIDE_MIN_BLOCKS 2
#define WIDE_MODE 5
#define WIDE_WLOAD 2
#endif
#ifndef WIDE_HREG  // mode 9's two (the launcher passes both with mode 9)
#define WIDE_HREG 0
#define WIDE_WDIST 1
#endif
#ifndef WIDE_GLATE
#define WIDE_GLATE 0
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
// uint4's own 16 it would begin 16 bytes off a 32-byte sector wherever the static arrays come
// to an odd multiple of 16 bytes (every 8-CTA kernel), and each warp's 512 bytes of cp.async
// copies would then ask L1 for 20 sectors instead of 16, and L2 for as many: 25 % more traffic
// between L2 and the SMs for the same bytes (Nsight Compute; tests/test_rmsnorm_wide.py checks
// the window's start).
#ifndef WIDE_SMEM_ALIGN
#define WIDE_SMEM_ALIGN 128
#endif
#define WIDE_SMEM_ALIGNED __align__(WIDE_SMEM_ALIGN)

// Every mode's arguments: y and rstd (outputs), x and the gate (inputs; gate unused by rmsnorm),
// the weight, N, eps, w_offset (the kernel's, less M).
#define WIDE_ROW_PARAMS(T, WT)                                                                      \
    T* __restrict__ out, float* __restrict__ rstd, const T* __restrict__ x, const T* __restrict__ gate, \
        const WT* __restrict__ w, int N, float eps, float w_offset

#if WIDE_HAS_CLUSTERS  // the device code; before sm_90 the kernel is a trap (below)

// ---------------------------------------------------------------------------------------
// cache-hinted loads and stores of a pack (Pack, elem: pack.cuh)

// x and gate, read once: no L1 allocation.  The weight, read by every row: the read-only path.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
    uint4 u;
    asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p));
    return u;
}
__device__ __forceinline__ uint4 ld_weight(const void* p) {
    uint4 u;
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p));
    return u;
}

// One pack from `p` in whole 16-byte loads: the weight's (WEIGHT) through ld_weight, x's and the
// gate's through ld_stream.
template <bool WEIGHT, typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack_hinted(const T* p) {
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
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "l"(pol) : "memory");
}
__device__ __forceinline__ unsigned long long evict_first_policy() {
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}

// ---------------------------------------------------------------------------------------
// cluster primitives (PTX; sm_90)

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r = 0;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive_release() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The shared-memory address (a 32-bit window offset) of a generic pointer into shared memory.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// v into the shared-memory float at `local` (this CTA's address of it) in CTA `rank`.
__device__ __forceinline__ void st_remote_f32(float* local, unsigned rank, float v) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(v) : "memory");
}

// 16 bytes global -> shared, asynchronously, cached in L2 only (cp.async.cg, sm_80+); visible
// to the issuing thread after cp_async_wait_all().
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// mbarriers and st.async (sm_90): the CTA sums of modes 5 and 9
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait_parity(unsigned long long* bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "WIDE_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra WIDE_WAIT;\n\t}"
                 :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
// v into the float at `local` (this CTA's address of it) in CTA `rank`, completing 4 bytes of
// the transaction count of that CTA's mbarrier at `bar` (st.async: no round trip).
__device__ __forceinline__ void st_async_remote_f32(float* local, unsigned long long* bar, unsigned rank, float v) {
    const unsigned a = smem_addr(local), ab = smem_addr(bar);
    unsigned ra, rb;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(ab), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];"
                 :: "r"(ra), "f"(v), "r"(rb) : "memory");
}

// ---------------------------------------------------------------------------------------
// what every mode shares: the slice's coordinates, the CTA's sum, the cluster's sum

// One CTA's part of its cluster's row: the compile-time shape and, per thread, where its
// vectors are.  Chunk c of thread t is vector first + c * THREADS of the row (first = rank *
// SLICE + t); it exists where that is below nvec.  xr, gr: the row of x and of the gate (GATE).
// Made after step 0's arrive.
template <typename T, bool GATE, int CLUSTER, int THREADS, int EPT>
struct Slice {
    static constexpr int VEC = 16 / sizeof(T);  // elements per 16-byte vector of x
    static constexpr int CHUNKS = EPT / VEC;
    static constexpr int NWARPS = THREADS / 32;
    static constexpr int SLICE = THREADS * CHUNKS;  // 16-byte vectors of x per CTA
    static_assert(EPT % VEC == 0 && THREADS % 32 == 0 && THREADS <= 1024, "launch shape");
    static_assert(CLUSTER >= 1 && CLUSTER <= 16, "cluster size");
    unsigned rank;
    long long row;
    int t, nvec, first;
    const T* xr;
    const T* gr;
    __device__ __forceinline__ Slice(const T* x, const T* gate, int N)
        : rank(cluster_rank()), row(blockIdx.x / CLUSTER), t(threadIdx.x), nvec(N / VEC),
          first((int)rank * SLICE + t), xr(x + row * (long long)N), gr(GATE ? gate + row * (long long)N : nullptr) {}
    // the row's vector index of chunk c (exists where < nvec)
    __device__ __forceinline__ int vector(int c) const { return first + c * THREADS; }
    // f(c, j) for this thread's chunks FROM <= c < TO whose vector j exists, in order (unrolled)
    template <int FROM, int TO, typename F>
    __device__ __forceinline__ void each(F&& f) const {
        #pragma unroll
        for (int c = FROM; c < TO; ++c) {
            const int j = vector(c);
            if (j < nvec) f(c, j);
        }
    }
};

// Step 1 into registers: this thread's chunks c < COUNT of x (and with GATE of the gate), every
// load issued before any use.
template <bool GATE, typename T, int VEC, int COUNT, int GCOUNT, typename S>
__device__ __forceinline__ void load_slice(Pack<T, VEC> (&px)[COUNT], Pack<T, VEC> (&pg)[GCOUNT], const S& s) {
    s.template each<0, COUNT>([&](int c, int j) {
        px[c] = load_pack_hinted<false, T, VEC>(s.xr + (long long)j * VEC);
        if (GATE) pg[c] = load_pack_hinted<false, T, VEC>(s.gr + (long long)j * VEC);
    });
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

// Steps 3 and 4 of modes 0 and 1: after the cluster wait that matches step 0 (every CTA of the
// cluster has started), thread i < CLUSTER stores this CTA's `cta` into slot [rank] of
// `cta_sums` in CTA i; a release / acquire cluster barrier; r from the slots.
template <int CLUSTER>
__device__ __forceinline__ float exchange_rstd_barrier(float cta, float* cta_sums, unsigned rank, int t, int N,
                                                       float eps) {
    cluster_wait_acquire();
    if (t < CLUSTER) st_remote_f32(&cta_sums[rank], (unsigned)t, cta);
    cluster_arrive_release();
    cluster_wait_acquire();
    return rstd_of_cta_sums<CLUSTER>(cta_sums, N, eps);
}

// Steps 3 and 4 of modes 5 and 9, QuACK's exchange (quack/reduce.py cluster_reduce): thread 0
// arms this CTA's mbarrier `bar` (initialised before step 0's arrive) for CLUSTER * 4 bytes; after
// the cluster wait that proves every CTA started (so every mbarrier is initialised), thread
// i < CLUSTER sends `cta` into slot [rank] of `cta_sums` in CTA i with st.async, completing 4
// bytes on that CTA's mbarrier; every thread waits for its own mbarrier's phase 0 (all CLUSTER
// sums landed) and returns r from them.  A CTA's wait returns only once every sum sent to it
// has landed, so no store into it is pending when it exits: no closing barrier.
template <int CLUSTER>
__device__ __forceinline__ float exchange_rstd_mbar(float cta, float* cta_sums, unsigned long long* bar,
                                                    unsigned rank, int t, int N, float eps) {
    if (t == 0) mbar_arrive_expect_tx(bar, CLUSTER * 4);
    cluster_wait_acquire();
    if (t < CLUSTER) st_async_remote_f32(&cta_sums[rank], bar, (unsigned)t, cta);
    mbar_wait_parity(bar, 0u);
    return rstd_of_cta_sums<CLUSTER>(cta_sums, N, eps);
}

// This thread's weight packs of the slice (its chunks c < COUNT), into registers.
template <typename WT, int VEC, int COUNT, typename S>
__device__ __forceinline__ void load_weight_slice(Pack<WT, VEC> (&pw)[COUNT], const WT* __restrict__ w,
                                                  const S& s) {
    s.template each<0, COUNT>([&](int c, int j) { pw[c] = load_pack_hinted<true, WT, VEC>(w + (long long)j * VEC); });
}

// y of one 16-byte vector: T(a * (w + w_offset) * r), a = x [* silu(g)], in fp32.
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

// ---------------------------------------------------------------------------------------
// one row per cluster, the slice in registers (WIDE_MODE 0)


// [region cluster_row]
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT>
__device__ __forceinline__ void cluster_row(WIDE_ROW_PARAMS(T, WT)) {
    __shared__ float warp_sums[THREADS / 32];
    __shared__ float cta_sums[CLUSTER];  // slot [i]: CTA i's sum, written by CTA i (step 3)
    using S = Slice<T, GATE, CLUSTER, THREADS, EPT>;
    constexpr int VEC = S::VEC, CHUNKS = S::CHUNKS;

    cluster_arrive_relaxed();  // step 0
    const S s(x, gate, N);
    // step 1: every load of x (and g) before any use
    Pack<T, VEC> px[CHUNKS], pg[GATE ? CHUNKS : 1];
    Pack<WT, VEC> pw[CHUNKS];
    load_slice<GATE>(px, pg, s);
    // step 2: sum of squares; the gate op keeps a = x * silu(g) (fp32), rmsnorm keeps x packed
    float a[GATE ? EPT : 1];
    float sumsq = 0.0f;
    s.template each<0, CHUNKS>([&](int c, int) {
        add_squares<GATE>(px[c], pg[GATE ? c : 0], sumsq, a + (GATE ? c * VEC : 0));
    });
    // the weight (L2-resident: every row reads it) once x's registers are folded: its latency
    // hides behind the block and cluster reductions, and the gate op's x and g are dead by now
    load_weight_slice<WT, VEC, CHUNKS>(pw, w, s);
    // [region cluster_exchange]
    const float cta = cta_allreduce_sum<THREADS>(sumsq, warp_sums, s.t);
    // steps 3 and 4: the row sum, in rank order (the same bits in every CTA)
    const float r = exchange_rstd_barrier<CLUSTER>(cta, cta_sums, s.rank, s.t, N, eps);
    // [end cluster_exchange]
    if (s.rank == 0 && s.t == 0) rstd[s.row] = r;
    // step 5: y from the registers
    const unsigned long long pol = evict_first_policy();
    T* yr = out + s.row * (long long)N;
    s.template each<0, CHUNKS>([&](int c, int j) {
        Pack<T, VEC> py;
        #pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float v = GATE ? a[c * VEC + k] : elem(px[c], k);
            py.v[k] = from_f32<T>((v * (elem(pw[c], k) + w_offset)) * r);
        }
        st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
    });
}
// [end cluster_row]

// ---------------------------------------------------------------------------------------
// one row per cluster, the slice in shared memory (WIDE_MODE 1 and 5)

// Where the shared-memory modes load the weight for the last step (WIDE_WLOAD):
//   0  one chunk at a time, in the store loop: each store's "memory" clobber keeps the next
//      chunk's load behind it, so a thread waits one L2 round trip per chunk (sm_90 SASS: LDG,
//      STG, LDG, STG, ...) -- cheapest in registers;
//   1  all of the thread's chunks, then their stores: one round trip;
//   2  with x's copies (step 1), into registers: the latency hides behind the loads, the
//      reductions and the exchange; the registers are held throughout.
// Which is fastest depends on the shape and on how many CTAs the registers let an SM hold
// (benchmarks/NOTES.md, "the weight's loads"); the launcher's policy names one per shape.

// The CTA's sum of squares over its chunks c0 <= c < CHUNKS in shared memory `sx` (chunk c at
// slot (c - c0) * THREADS + t), added to `sumsq` in chunk order: each thread fmaf-chains its own
// vectors, then the warps' butterflies, then the warp totals in warp order (`warp_sums`: NWARPS
// floats).  Every shared-memory mode sums this way, so a row has the same bits in every mode;
// the call must be reached by every thread.
template <typename T, int VEC, int CHUNKS, int THREADS, int C0 = 0, typename S>
__device__ __forceinline__ float cta_sumsq_smem(const Pack<T, VEC>* sx, const S& s, float* warp_sums,
                                                float sumsq = 0.0f) {
    s.template each<C0, CHUNKS>([&](int c, int) {
        const Pack<T, VEC> px = sx[(c - C0) * THREADS + s.t];
        add_squares<false>(px, px, sumsq, nullptr);
    });
    return cta_allreduce_sum<THREADS>(sumsq, warp_sums, s.t);
}

// Step 1 of the shared-memory modes: this thread's chunks c0 <= c < CHUNKS of x (and, with GATE,
// of the gate) copied into slot (c - c0) * THREADS + t of `sx` (`sg`), every copy in flight at once.
template <bool GATE, typename T, int VEC, int CHUNKS, int THREADS, int C0 = 0, typename S>
__device__ __forceinline__ void cp_async_slice(Pack<T, VEC>* sx, Pack<T, VEC>* sg, const S& s) {
    s.template each<C0, CHUNKS>([&](int c, int j) {
        const int slot = (c - C0) * THREADS + s.t;
        cp_async16(&sx[slot], s.xr + (long long)j * VEC);
        if (GATE) cp_async16(&sg[slot], s.gr + (long long)j * VEC);
    });
}

// The last step of the shared-memory modes: each thread writes y of its own vectors of row `yr`,
// the weight from registers loaded with x (PRE, `wpre`: WIDE_WLOAD 2) or from global memory
// (WIDE_WLOAD 0 or 1), the stores marked evict-first (y is not read again here).
template <typename T, typename WT, bool GATE, int CHUNKS, int THREADS, bool PRE, typename S>
__device__ __forceinline__ void store_row_smem(T* __restrict__ yr, const Pack<T, 16 / sizeof(T)>* sx,
                                               const Pack<T, 16 / sizeof(T)>* sg, const WT* __restrict__ w,
                                               const S& s, float w_offset, float r,
                                               const Pack<WT, 16 / sizeof(T)>* wpre) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int WB = WIDE_WLOAD == 0 ? 1 : CHUNKS;  // chunks whose weight loads go out together
    const unsigned long long pol = evict_first_policy();
    #pragma unroll
    for (int c0 = 0; c0 < CHUNKS; c0 += WB) {
        Pack<WT, VEC> pw[WB];
        #pragma unroll
        for (int k = 0; k < WB; ++k) {
            const int j = s.vector(c0 + k);
            if (j < s.nvec) pw[k] = PRE ? wpre[c0 + k] : load_pack_hinted<true, WT, VEC>(w + (long long)j * VEC);
        }
        #pragma unroll
        for (int k = 0; k < WB; ++k) {
            const int j = s.vector(c0 + k), slot = (c0 + k) * THREADS + s.t;
            if (j < s.nvec) {
                const Pack<T, VEC> px = sx[slot];
                Pack<T, VEC> pg;
                if (GATE) pg = sg[slot];
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
// itself (no barrier needed for them).  MBAR (mode 5): the CTA sums by QuACK's exchange
// (exchange_rstd_mbar) instead of the cluster barrier (mode 1) -- the same slots in the same
// order, the same bits.
// Dynamic shared memory: THREADS * EPT * sizeof(T) * (1 + GATE) bytes.
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT, bool MBAR>
__device__ __forceinline__ void cluster_row_smem(WIDE_ROW_PARAMS(T, WT)) {
    using S = Slice<T, GATE, CLUSTER, THREADS, EPT>;
    constexpr int VEC = S::VEC, CHUNKS = S::CHUNKS;
    __shared__ float warp_sums[S::NWARPS];
    __shared__ float cta_sums[CLUSTER];
    __shared__ unsigned long long bar;  // MBAR's
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<T, VEC>* sx = reinterpret_cast<Pack<T, VEC>*>(wide_smem);
    Pack<T, VEC>* sg = sx + S::SLICE;  // GATE only

    if (MBAR && threadIdx.x == 0) mbar_init(&bar, 1);  // fenced for the cluster; the arrive publishes it
    cluster_arrive_relaxed();  // step 0
    const S s(x, gate, N);
    // step 1: the slice into shared memory, every copy in flight at once
    cp_async_slice<GATE, T, VEC, CHUNKS, THREADS>(sx, sg, s);
    constexpr bool PRE = WIDE_WLOAD == 2;  // the weight into registers now (see WIDE_WLOAD)
    Pack<WT, VEC> wpre[PRE ? CHUNKS : 1];
    if constexpr (PRE) load_weight_slice<WT, VEC, CHUNKS>(wpre, w, s);
    cp_async_wait_all();
    // step 2: sum of squares of this thread's own vectors
    const float cta = cta_sumsq_smem<T, VEC, CHUNKS, THREADS>(sx, s, warp_sums);
    // steps 3 and 4
    const float r = MBAR ? exchange_rstd_mbar<CLUSTER>(cta, cta_sums, &bar, s.rank, s.t, N, eps)
                         : exchange_rstd_barrier<CLUSTER>(cta, cta_sums, s.rank, s.t, N, eps);
    if (s.rank == 0 && s.t == 0) rstd[s.row] = r;
    // step 5: y from shared memory, the weight from registers or global memory
    store_row_smem<T, WT, GATE, CHUNKS, THREADS, PRE>(out + s.row * (long long)N, sx, sg, w, s, w_offset, r,
                                                       wpre);
}
// [end cluster_row_smem]

// ---------------------------------------------------------------------------------------
// one row per cluster, the slice split between registers and shared memory (WIDE_MODE 9)

// [region cluster_row_hybrid]
// cluster_row_smem's mode 5 (one row per cluster, the CTA sums by st.async onto each CTA's
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
template <typename T, typename WT, bool GATE, int CLUSTER, int THREADS, int EPT>
__device__ __forceinline__ void cluster_row_hybrid(WIDE_ROW_PARAMS(T, WT)) {
    using S = Slice<T, GATE, CLUSTER, THREADS, EPT>;
    constexpr int VEC = S::VEC, CHUNKS = S::CHUNKS;
    constexpr int RC = WIDE_HREG <= 0 ? CHUNKS / 2 : WIDE_HREG;  // chunks in registers: c < RC
    constexpr int SC = CHUNKS - RC;     // chunks in shared memory: c >= RC, at slot c - RC
    constexpr int WD = WIDE_WDIST;      // the weight's loads run WD chunks ahead of the stores
    constexpr bool GL = GATE && WIDE_GLATE != 0;  // g read in step 5 (then nothing of g on chip before)
    constexpr bool GE = GATE && !GL;              // g read in step 1, with x
    static_assert(CHUNKS >= 2 && RC >= 1 && RC < CHUNKS && WD >= 1, "register chunks, weight distance");
    __shared__ float warp_sums[S::NWARPS];
    __shared__ float cta_sums[CLUSTER];
    __shared__ unsigned long long bar;
    extern __shared__ WIDE_SMEM_ALIGNED uint4 wide_smem[];
    Pack<T, VEC>* sx = reinterpret_cast<Pack<T, VEC>*>(wide_smem);
    Pack<T, VEC>* sg = sx + SC * THREADS;  // GE only

    if (threadIdx.x == 0) mbar_init(&bar, 1);
    cluster_arrive_relaxed();
    const S s(x, gate, N);
    // step 1: the shared-memory half's copies, then the register half's loads
    cp_async_slice<GE, T, VEC, CHUNKS, THREADS, RC>(sx, sg, s);
    Pack<T, VEC> px[RC], pg[GE ? RC : 1];
    load_slice<GE>(px, pg, s);
    // step 2: the squares in chunk order, the register chunks first
    float a[GE ? RC * VEC : 1];
    float sumsq = 0.0f;
    s.template each<0, RC>([&](int c, int) { add_squares<GE>(px[c], pg[GE ? c : 0], sumsq, a + (GE ? c * VEC : 0)); });
    cp_async_wait_all();
    const float cta = cta_sumsq_smem<T, VEC, CHUNKS, THREADS, RC>(sx, s, warp_sums, sumsq);
    // steps 3 and 4: as mode 5
    const float r = exchange_rstd_mbar<CLUSTER>(cta, cta_sums, &bar, s.rank, s.t, N, eps);
    if (s.rank == 0 && s.t == 0) rstd[s.row] = r;
    // step 5: y, the weight (and with GL the gate) WD chunks ahead of each store
    const unsigned long long pol = evict_first_policy();
    T* yr = out + s.row * (long long)N;
    Pack<WT, VEC> wq[WD];        // wq[c % WD]: chunk c's weight
    Pack<T, VEC> gq[GL ? WD : 1];  // gq[c % WD]: chunk c's gate (GL)
    #pragma unroll
    for (int d = 0; d < WD; ++d) {
        if (d < CHUNKS && s.vector(d) < s.nvec) {
            wq[d] = load_pack_hinted<true, WT, VEC>(w + (long long)s.vector(d) * VEC);
            if constexpr (GL) gq[d] = load_pack_hinted<false, T, VEC>(s.gr + (long long)s.vector(d) * VEC);
        }
    }
    #pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int j = s.vector(c);
        const Pack<WT, VEC> pw = wq[c % WD];
        Pack<T, VEC> g;
        if constexpr (GL) g = gq[c % WD];
        if (c + WD < CHUNKS && j + WD * THREADS < s.nvec) {
            wq[c % WD] = load_pack_hinted<true, WT, VEC>(w + (long long)(j + WD * THREADS) * VEC);
            if constexpr (GL) gq[c % WD] = load_pack_hinted<false, T, VEC>(s.gr + (long long)(j + WD * THREADS) * VEC);
        }
        if (j < s.nvec) {
            Pack<T, VEC> py;
            if (c < RC) {
                #pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const float xf = elem(px[c], k);
                    const float v = GE ? a[c * VEC + k] : GL ? xf * silu(elem(g, k)) : xf;
                    py.v[k] = from_f32<T>((v * (elem(pw, k) + w_offset)) * r);
                }
            } else {
                const int slot = (c - RC) * THREADS + s.t;
                if (GE) g = sg[slot];
                py = y_pack<GATE>(sx[slot], g, pw, w_offset, r);
            }
            st_evict_first(yr + (long long)j * VEC, *reinterpret_cast<const uint4*>(&py), pol);
        }
    }
}
// [end cluster_row_hybrid]

#endif  // WIDE_HAS_CLUSTERS

// ---------------------------------------------------------------------------------------
// the extern "C" kernel: one per module, named after its -D configuration

#if WIDE_MODE != 0 && WIDE_MODE != 1 && WIDE_MODE != 5 && WIDE_MODE != 9
#error "WIDE_MODE must be 0 (registers), 1 (shared memory), 5 (shared memory, mbarrier) or 9 (split)"
#endif
#if (WIDE_DTYPE != 1 && WIDE_DTYPE != 2 && WIDE_DTYPE != 4) || (WIDE_WEIGHT != WIDE_DTYPE && WIDE_WEIGHT != 1)
#error "WIDE_DTYPE must be 1 (f32), 2 (f16) or 4 (bf16); WIDE_WEIGHT the same or 1 (f32)"
#endif
#define WIDE_CAT2(a, b) a##b
#define WIDE_CAT(a, b) WIDE_CAT2(a, b)
// the -D codes' types and name parts: 1 f32, 2 f16, 4 bf16
#define WIDE_TYPE_1 float
#define WIDE_TYPE_2 __half
#define WIDE_TYPE_4 __nv_bfloat16
#define WIDE_DT_1 f32
#define WIDE_DT_2 f16
#define WIDE_DT_4 bf16
// the name's last part: modes 1 and 5 their weight loads (WIDE_WLOAD 0, 1, 2: none, _wb, _we),
// mode 9 _h<HREG>_d<WDIST>[_g]
#define WIDE_WLOAD_SUFFIX_0
#define WIDE_WLOAD_SUFFIX_1 _wb
#define WIDE_WLOAD_SUFFIX_2 _we
#define WIDE_GLATE_SUFFIX_0
#define WIDE_GLATE_SUFFIX_1 _g
#if WIDE_MODE == 9
#define WIDE_SUFFIX WIDE_HYBRID_SUFFIX(WIDE_HREG, WIDE_WDIST, WIDE_CAT(WIDE_GLATE_SUFFIX_, WIDE_GLATE))
#define WIDE_HYBRID_SUFFIX(H, D, G) WIDE_HYBRID_SUFFIX2(H, D, G)
#define WIDE_HYBRID_SUFFIX2(H, D, G) _h##H##_d##D##G
#else
#define WIDE_SUFFIX WIDE_CAT(WIDE_WLOAD_SUFFIX_, WIDE_WLOAD)
#endif
#define WIDE_NAME(OP, DT, WDT) WIDE_NAME2(OP, DT, WDT, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT, WIDE_MODE, WIDE_SUFFIX)
#define WIDE_NAME2(OP, DT, WDT, C, T, E, M, S) WIDE_NAME3(OP, DT, WDT, C, T, E, M, S)
#define WIDE_NAME3(OP, DT, WDT, C, T, E, M, S) OP##_cluster_##DT##_w##WDT##_c##C##_t##T##_e##E##_m##M##S

#define DEF_WIDE(OP, GATE, DT, T, WDT, WT)                                                          \
    extern "C" __global__ void WIDE_CLUSTER_DIMS __launch_bounds__(WIDE_THREADS, WIDE_MIN_BLOCKS)  \
        WIDE_NAME(OP, DT, WDT)(WIDE_ROW_PARAMS(T, WT), long long M) {                              \
        WIDE_BODY(T, WT, GATE)                                                                     \
    }
#if WIDE_HAS_CLUSTERS
#define WIDE_BODY(T, WT, GATE)                                                                     \
    if (WIDE_MODE == 0)                                                                            \
        cluster_row<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT>(out, rstd, x, gate, w, N, eps, \
                                                                       w_offset);                  \
    else if (WIDE_MODE == 9)                                                                       \
        cluster_row_hybrid<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT>(out, rstd, x, gate, w, N, \
                                                                              eps, w_offset);      \
    else                                                                                           \
        cluster_row_smem<T, WT, GATE, WIDE_CLUSTER, WIDE_THREADS, WIDE_EPT, WIDE_MODE == 5>(       \
            out, rstd, x, gate, w, N, eps, w_offset);
#else
#define WIDE_BODY(T, WT, GATE) __trap();  // no clusters before sm_90: the launcher never selects it there
#endif

#if WIDE_GATE
#define DEF_OP(DT, T, WDT, WT) DEF_WIDE(rmsnorm_gate, true, DT, T, WDT, WT)
#else
#define DEF_OP(DT, T, WDT, WT) DEF_WIDE(rmsnorm, false, DT, T, WDT, WT)
#endif
#define DEF_OP_OF(D, W) DEF_OP(WIDE_DT_##D, WIDE_TYPE_##D, WIDE_DT_##W, WIDE_TYPE_##W)
#define DEF_OP_OF2(D, W) DEF_OP_OF(D, W)

DEF_OP_OF2(WIDE_DTYPE, WIDE_WEIGHT)
