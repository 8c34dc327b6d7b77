// rmsnorm_fused.cu -- production fused RMSNorm and fused RMSNorm + SiLU gate, one kernel per op.
//
//   rmsnorm:       y[m,n] = x[m,n] * w[n] * r[m]
//   rmsnorm_gate:  y[m,n] = x[m,n] * w[n] * silu(g[m,n]) * r[m]
//   with           r[m]   = rsqrt(sum_n x[m,n]^2 / N + eps)      (statistic from x only)
//
// Notebook 13_fused_rmsnorm_gate.  Launcher and public ops: gpu_viz/rmsnorm/fused/ (public as
// gpu_viz.ops); benchmark harness gpu_viz/rmsnorm/bench.py; tests/test_rmsnorm_fused.py;
// compute-sanitizer: scripts/sanitize/rmsnorm_fused.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels kernels/rmsnorm_fused.cu
//              (gpu_viz.rmsnorm.fused.op.kernel_report runs it for every architecture, with the
//              -D values the launcher compiles with)
// Storage fp32 / fp16 / bf16, arithmetic and accumulation fp32.  Every input element is read
// once and every output element written once (except by `wide`, which reads the row twice).
//
// Variants (gpu_viz.rmsnorm.fused.config.launch_config picks one per (M, N, dtype, alignment)):
//   warp   one warp per row, WARP_BLOCK_THREADS / 32 rows per block, the row in registers:
//          N <= 32 * EPT (<= 1024).  Warp-shuffle reduction only: no shared memory, no barrier.
//   block  one block per row (any blockDim 1..BLOCK_MAX_THREADS(EPT)), the row in registers:
//          N <= blockDim * EPT.  Reduction: block_allreduce_sum_full_warps (one barrier) when
//          blockDim % 32 == 0, as the launcher's blocks always are; block_reduce_sum from
//          reduce.cuh otherwise.  Every load of the row (x, gate, weight) is issued before the
//          reduction.
//   wide   one block of WIDE_THREADS threads per row, any N: pass 1 sums x^2, pass 2 re-reads
//          the row (mostly from L1/L2) and writes y.
// Each instantiation is an extern "C" kernel with a readable name:
//   rmsnorm[_gate]_<warp|block>_<f32|f16|bf16>_v<VEC>_e<EPT>,  rmsnorm[_gate]_wide_<dt>_v<VEC>
//   (then _w32 for an fp32 weight, _x for the extended-output build: see the -D options below)
//   VEC  elements per load: 16 bytes (8 halves, 4 floats) when x, gate, weight, out and both row
//        strides are 16-byte aligned and N % VEC == 0; else 1 (the scalar path).
//   EPT  elements per thread kept in registers (8, 16, 32; the scalar block variant only 8).
// Numerics: silu(g) = __fdividef(g, 1 + __expf(-g)) (see `silu`); r = rsqrtf(__fdividef(sum, N)
// + eps), 2 + 2 ulp.  NaN/Inf in a row make that row NaN/0 like the float64 formula, and never
// touch other rows.  64-bit row offsets (M * stride may exceed 2^31).
// -D options (the launcher passes all of them; the defaults below are its values, the two
// build switches 1 only in their own modules):
//   RMSNORM_DTYPES=<mask>      1 f32, 2 f16, 4 bf16: build one dtype's kernels only
//   RMSNORM_WEIGHT_F32=1       the fp16 / bf16 kernels with an fp32 weight (names end in _w32)
//   RMSNORM_OUT_EXT=1          the extended-output kernels (names end in _x): see OUT_PLAIN
//   WARP_BLOCK_THREADS, WIDE_THREADS, BLOCK_MAX_THREADS_E8 / _E16 / _E32   launch shapes
#include "pack.cuh"    // Pack, elem, load_pack, silu (and convert.cuh: to_f32 / from_f32<T>)
#include "reduce.cuh"  // block_reduce_sum, warp_allreduce_sum

#ifndef RMSNORM_DTYPES
#define RMSNORM_DTYPES 7
#endif

// ---------------------------------------------------------------------------------------
// cache-hinted loads and stores (Pack, elem, load_pack: pack.cuh)

// Cache-hinted loads and stores of one pack (hints only: the values are load_pack's).  The
// 16-byte packs use inline PTX (NVRTC needs no header for it); other pack sizes are plain.
//   weight (read by every row): ld.global.nc (LOAD_WEIGHT)
//   x, gate (read once), y (written once): by the kernel argument `fits_l2`, which the host
//     sets when x, gate and y of the launch together fit in L2 (gpu_viz.rmsnorm.fused.config.fits_l2):
//     fits:      x, gate ld.global.cs (evict-first), y st.global: y, often a recycled buffer,
//                stays in L2;
//     otherwise: the op's policy below.
//   Selected by a predicate inside each access (no branch: a row's loads still issue back
//   to back).
// Policies beyond L2, by measurement (benchmarks/NOTES.md, the cache-hint runs):
//   rmsnorm fp16/bf16, and fp32's warp variant   load LOAD_NO_L1,  store STORE_EVICT_FIRST
//   rmsnorm fp32, block variant                  load LOAD_KEEP_L2, store STORE_PLAIN
//   rmsnorm_gate                                 load LOAD_PLAIN,  store STORE_PLAIN
// Before sm_80 (no L2 cache-policy operands) LOAD_KEEP_L2 is LOAD_NO_L1 and STORE_EVICT_FIRST
// is st.global.cs.
#define LOAD_WEIGHT -1       // ld.global.nc: the read-only path
#define LOAD_PLAIN 0         // ld.global
#define LOAD_NO_L1 2         // ld.global.L1::no_allocate
#define LOAD_KEEP_L2 4       // .L1::no_allocate with an L2 evict_last policy: x stays in L2
#define STORE_PLAIN 0        // st.global
#define STORE_EVICT_FIRST 2  // st.global with an L2 evict_first policy
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define RMSNORM_SM80 true
#else
#define RMSNORM_SM80 false
#endif

#define RMSNORM_LD4(INSTR, u, p) \
    asm(INSTR " {%0, %1, %2, %3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p))

// An L2 cache policy (sm_80+) for the hinted loads/stores, made once per thread (a
// createpolicy per access costs registers): KIND 1 evict_first, 2 evict_last, 0 none (0).
template <int KIND>
__device__ __forceinline__ unsigned long long l2_policy() {
    unsigned long long pol = 0;
    if constexpr (KIND == 1 && RMSNORM_SM80)
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    if constexpr (KIND == 2 && RMSNORM_SM80)
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}

// Two accesses in one asm, one of them executed: `@q` the first (q = fits != 0), `@!q` the
// second -- a predicate, not a branch, so the loads of a row still issue back to back.
#define RMSNORM_LD4_SEL(IF_FITS, ELSE, u, p, fits)                                            \
    asm("{\n\t.reg .pred q;\n\tsetp.ne.s32 q, %5, 0;\n\t"                                 \
        "@q " IF_FITS " {%0, %1, %2, %3}, [%4];\n\t@!q " ELSE " {%0, %1, %2, %3}, [%4];\n\t}" \
        : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "r"(fits))

// POLICY: a LOAD_* policy above (ld.global.cs instead where `fits` != 0; LOAD_WEIGHT ignores it).
template <int POLICY, typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_hinted(const T* p, unsigned long long pol, int fits) {
    static_assert(POLICY == LOAD_WEIGHT || POLICY == LOAD_PLAIN || POLICY == LOAD_NO_L1 ||
                  POLICY == LOAD_KEEP_L2, "load policy");
    if constexpr (sizeof(Pack<T, VEC>) == 16) {
        uint4 u;
        if constexpr (POLICY == LOAD_WEIGHT) {
            RMSNORM_LD4("ld.global.nc.v4.u32", u, p);
        } else if constexpr (POLICY == LOAD_PLAIN) {
            RMSNORM_LD4_SEL("ld.global.cs.v4.u32", "ld.global.v4.u32", u, p, fits);
        } else if constexpr (POLICY == LOAD_NO_L1 || !RMSNORM_SM80) {
            RMSNORM_LD4_SEL("ld.global.cs.v4.u32", "ld.global.L1::no_allocate.v4.u32", u, p, fits);
        } else {  // LOAD_KEEP_L2, sm_80+: pol = l2_policy<2>()
            asm("{\n\t.reg .pred q;\n\tsetp.ne.s32 q, %6, 0;\n\t"
                "@q ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\n\t"
                "@!q ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n\t}"
                : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(pol), "r"(fits));
        }
        Pack<T, VEC> r;
        *reinterpret_cast<uint4*>(&r) = u;
        return r;
    } else {
        return load_pack<T, VEC>(p);
    }
}

// POLICY: a STORE_* policy above (a plain st.global instead where `fits` != 0).
template <int POLICY, typename T, int VEC>
__device__ __forceinline__ void store_hinted(T* p, const Pack<T, VEC>& v, unsigned long long pol,
                                             int fits) {
    static_assert(POLICY == STORE_PLAIN || POLICY == STORE_EVICT_FIRST, "store policy");
    if constexpr (sizeof(Pack<T, VEC>) == 16 && POLICY == STORE_EVICT_FIRST) {
        const uint4 u = *reinterpret_cast<const uint4*>(&v);
        if constexpr (RMSNORM_SM80) {  // pol = l2_policy<1>()
            asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.s32 q, %6, 0;\n\t"
                         "@q st.global.v4.u32 [%0], {%1, %2, %3, %4};\n\t"
                         "@!q st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;\n\t}"
                         :: "l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "l"(pol), "r"(fits)
                         : "memory");
        } else {
            asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.s32 q, %5, 0;\n\t"
                         "@q st.global.v4.u32 [%0], {%1, %2, %3, %4};\n\t"
                         "@!q st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};\n\t}"
                         :: "l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "r"(fits) : "memory");
        }
    } else {
        *reinterpret_cast<Pack<T, VEC>*>(p) = v;
    }
}

// A pack at any address: 16-byte accesses (load_hinted / store_hinted) when `aligned`, else
// one element at a time (a misaligned view).  Both fill the same pack, so the arithmetic --
// and every output bit -- is the same either way; only the access width differs.  `aligned`
// is a template parameter (the _u kernels): a run-time choice kept both paths' registers
// live (+16 to +35 registers per thread on sm_90).
template <int POLICY, typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_any(const T* p, unsigned long long pol, int fits,
                                                 bool aligned) {
    if constexpr (VEC == 1) {
        return load_hinted<POLICY, T, VEC>(p, pol, fits);
    } else {
        if (aligned) return load_hinted<POLICY, T, VEC>(p, pol, fits);
        Pack<T, VEC> r;
        #pragma unroll
        for (int k = 0; k < VEC; ++k) r.v[k] = p[k];
        return r;
    }
}
template <int POLICY, typename T, int VEC>
__device__ __forceinline__ void store_any(T* p, const Pack<T, VEC>& v, unsigned long long pol,
                                          int fits, bool aligned) {
    if constexpr (VEC == 1) {
        store_hinted<POLICY, T, VEC>(p, v, pol, fits);
    } else {
        if (aligned) {
            store_hinted<POLICY, T, VEC>(p, v, pol, fits);
            return;
        }
        #pragma unroll
        for (int k = 0; k < VEC; ++k) p[k] = v.v[k];
    }
}


// Block sum when blockDim.x % 32 == 0 (the chooser's blocks): butterfly in every warp, the
// warp totals through shared memory, then EVERY warp butterflies the nwarps partials itself --
// one __syncthreads instead of block_reduce_sum's two, no partial-warp guards.  The xor
// butterfly adds the same pairs in every lane (a + b == b + a), so every thread of the block
// gets the bit-identical total.  Called once per kernel (smem is not reused afterwards).
// `block_allreduce_warp_totals` is its second half: `v` already the warp's total (the same in
// every lane).
// [region block_allreduce]
__device__ __forceinline__ float block_allreduce_warp_totals(float v, float* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    return warp_allreduce_sum(lane < nwarps ? smem[lane] : 0.0f);
}
// [end block_allreduce]
__device__ __forceinline__ float block_allreduce_sum_full_warps(float v, float* smem) {
    return block_allreduce_warp_totals(warp_allreduce_sum(v), smem);
}

// ---------------------------------------------------------------------------------------
// register-resident row: `warp` (WARP_ROW) and `block` variants share one body

// MODE: what the second input x2 is.
#define MODE_PLAIN 0  // rmsnorm:      no x2
#define MODE_GATE 1   // rmsnorm_gate: x2 = gate, y = x * silu(gate) * w * r
#define MODE_ADD 2    // rmsnorm_add:  x2 = residual, h = x + residual (rounded to T, written to
                      //               h_out), y = h * w * r with r from h
// Every kernel's arguments (the launcher's, in this order): the outputs y and h (the add op's),
// the inputs x and x2, the weight, M rows of N elements, the row strides, eps, w_offset, FLAGS.
#define RMSNORM_PARAMS(T, TW)                                                                   \
    T* __restrict__ out, T* __restrict__ h_out, const T* __restrict__ x,                        \
        const T* __restrict__ x2, const TW* __restrict__ w, long long M, int N,                \
        long long x_stride, long long x2_stride, float eps, float w_offset, int flags
// FLAGS (one int kernel argument):
#define FLAG_FITS_L2 1  // x, x2 and the outputs of the launch fit in L2 (cache hints only)
#define FLAG_LLAMA 4    // HF LlamaRMSNorm's cast order: y = T(T(a * r) * w), else T(a * w * r)

// How phase 2 forms an output (a compile-time tag OUT_*, so each copy of the output loop is its
// form's arithmetic only -- selecting per element cost ~50 % more instructions and 5-7 % of
// kernel time on rows in L2).  Which forms a kernel holds is a build choice, RMSNORM_OUT_EXT:
//   0 (the default; the plain names)  OUT_PLAIN only: what every call with weight_offset 0 and
//      the fp32 cast launches.  Its output loop is the plain arithmetic and nothing else (no
//      branch on the llama flag or w_offset): a second and third copy of the loop behind a
//      uniform branch cost 2-6 % of kernel time at small in-L2 shapes (benchmarks/NOTES.md).
//   1 (names end in _x)  all three, one copy of the loop each, picked per launch by a uniform
//      branch on FLAG_LLAMA and w_offset; the host launches these for a weight_offset != 0 or
//      the llama cast (gpu_viz/rmsnorm/fused/names.py, out_ext), a module of their own.  Their plain
//      side gives the plain kernel's bits where neither is set (the host does not launch it so).
// The arguments are the same in both builds (the plain kernels ignore w_offset and FLAG_LLAMA).
#ifndef RMSNORM_OUT_EXT
#define RMSNORM_OUT_EXT 0
#endif
#define OUT_PLAIN 0   // T(a * w * r)
#define OUT_OFFSET 1  // T(a * (w + w_offset) * r)            (Gemma's 1 + w)
#define OUT_LLAMA 2   // T(T(a * r) * (w [+ w_offset]))        (FLAG_LLAMA: HF LlamaRMSNorm's order)
template <int K>
struct OutTag {
    static constexpr int value = K;
};

// The output of element k: `a` (x, x * silu(g), or h), the weight pack, r.  The offset is added
// only where it is not 0 (w + 0.0f would turn a -0 weight into +0).
template <int OUT, typename T, typename TW, int VEC>
__device__ __forceinline__ T out_elem(float a, const Pack<TW, VEC>& pw, int k, float w_offset, float r) {
    const float w = elem(pw, k);
    if constexpr (OUT == OUT_PLAIN) {
        return from_f32<T>(a * w * r);
    } else if constexpr (OUT == OUT_OFFSET) {
        return from_f32<T>(a * (w + w_offset) * r);
    } else {
        const float wt = w_offset != 0.0f ? w + w_offset : w;
        return from_f32<T>(to_f32(from_f32<T>(a * r)) * wt);
    }
}

// Calls body(OutTag<OUT_*>{}): OUT_PLAIN in the plain build; in the _x build the form the flags
// / offset ask for (uniform: one side per launch).
template <typename F>
__device__ __forceinline__ void with_out_kind(bool llama, float w_offset, F&& body) {
    if constexpr (RMSNORM_OUT_EXT) {
        if (llama) body(OutTag<OUT_LLAMA>{});
        else if (w_offset != 0.0f) body(OutTag<OUT_OFFSET>{});
        else body(OutTag<OUT_PLAIN>{});
    } else {
        body(OutTag<OUT_PLAIN>{});
    }
}

// [region rows]
// Batch invariance: the sum of squares is added in one order that depends on N and the
// dtype only, never on the launch shape the host picked for M (the host may give rows of
// 8-16 KB one 16-byte vector per thread or several, fused/config.py launch_config):
//   p_j  = the VEC squares of vector j, fmaf-chained from 0
//   S_s  = warp butterfly (xor 16, 8, .., 1) over the 32 vectors 32s .. 32s+31 (lane = j % 32)
//   sum  = S_s combined over the slots s by the xor tree of their index bits, highest first
// One vector per thread: thread (warp w, lane l) holds p_{32w+l}; the warp butterfly gives
// S_w and the cross-warp butterfly of block_allreduce_warp_totals is the slot tree.  Several
// vectors per thread (block variant, CHUNKS > 1, nwarps a power of two -- the launcher's
// blocks are): chunk c is vector t + c * blockDim, slot w + c * nwarps, so each chunk gets
// its own butterfly, the thread's chunks are combined by the tree over c (the slot index's
// high bits, first), then across warps (its low bits).  Absent vectors and slots add +0,
// which changes no sum of squares (never -0).  The warp variant and the scalar path have one
// launch shape per N, so their single fmaf chain per lane is canonical already.
template <typename T, typename TW, int MODE, int VEC, int EPT, bool WARP_ROW, bool ALIGNED>
__device__ __forceinline__ void rmsnorm_rows(RMSNORM_PARAMS(T, TW)) {
    constexpr int CHUNKS = EPT / VEC;
    constexpr bool TWO = MODE != MODE_PLAIN;  // a second input row
    constexpr bool CANON = !WARP_ROW && VEC > 1 && CHUNKS > 1;
    const int fits_l2 = flags & FLAG_FITS_L2;
    constexpr bool aligned = ALIGNED;
    const bool llama = (flags & FLAG_LLAMA) != 0;
    long long row;
    int t, nthreads;
    if (WARP_ROW) {  // one warp per row: a whole warp leaves together, no block barrier follows
        row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
        t = threadIdx.x & 31;
        nthreads = 32;
        if (row >= M) return;
    } else {         // one block per row: grid == M, every thread reaches the reduction
        row = blockIdx.x;
        t = threadIdx.x;
        nthreads = blockDim.x;
    }
    const int nvec = N / VEC;  // host guarantees N % VEC == 0
    const T* xr = x + row * x_stride;
    const T* gr = TWO ? x2 + row * x2_stride : nullptr;
    T* yr = out + row * (long long)N;
    T* hr = MODE == MODE_ADD ? h_out + row * (long long)N : nullptr;

    // phase 1: issue EVERY load of the row -- x (and x2) streaming, the weight through the
    // read-only path -- before the first use of any of them, so a row costs one memory round
    // trip.  On the 16-byte path the loads sit in a loop of their own: one predicated LDG.128
    // per chunk, back to back (with the use in the same loop, ptxas branched around each
    // chunk and waited for chunk 0 before issuing chunk 1: one round trip per chunk).  One
    // chunk (EPT == VEC) needs no split, and splitting it costs registers on sm_89.
    constexpr bool LOADS_FIRST = VEC > 1 && CHUNKS > 1;
    // Cache policies (see "Cache-hinted loads" above): `fits_l2` selects .cs loads and plain
    // stores, else the op's policy -- by a predicate inside each access, no branch.  The add
    // op has two inputs like the gate and takes the gate's policy.
    constexpr bool F32_BLOCK = sizeof(T) == 4 && !WARP_ROW;
    constexpr int LOAD = TWO ? LOAD_PLAIN : F32_BLOCK ? LOAD_KEEP_L2 : LOAD_NO_L1;
    constexpr int STORE = TWO ? STORE_PLAIN : F32_BLOCK ? STORE_PLAIN : STORE_EVICT_FIRST;
    const unsigned long long load_pol = l2_policy<LOAD == LOAD_KEEP_L2 ? 2 : 0>();
    // [region row_loads]
    Pack<T, VEC> px[CHUNKS], pg[CHUNKS];
    Pack<TW, VEC> pw[CHUNKS];
    // every chunk c of this thread's share of the row: vector j = t + c * nthreads, while j < nvec
    auto for_each_chunk = [&](auto&& body) {
        #pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int j = t + c * nthreads;
            if (j < nvec) body(c, j);
        }
    };
    auto load_chunk = [&](int c, int j) {  // chunk c = vector j of the row: x, x2, weight
        px[c] = load_any<LOAD, T, VEC>(xr + (long long)j * VEC, load_pol, fits_l2, aligned);
        if (TWO) pg[c] = load_any<LOAD, T, VEC>(gr + (long long)j * VEC, load_pol, fits_l2, aligned);
        pw[c] = load_any<LOAD_WEIGHT, TW, VEC>(w + (long long)j * VEC, 0, 0, aligned);
    };
    if (LOADS_FIRST) for_each_chunk(load_chunk);
    // [end row_loads]
    // ... then sum x^2 (h^2 for the add op, after h = x + residual is rounded to T and
    // written); the gate op keeps x * silu(g) as fp32 in v, the others keep the row packed
    // (half the registers in fp16/bf16: more blocks per SM, more bytes in flight) and widen it
    // again in phase 2.  (The scalar path loads here, chunk by chunk: split like the above,
    // its 64-bit addresses spill.)
    float v[MODE == MODE_GATE ? EPT : 1];
    float part[CANON ? CHUNKS : 1];
    #pragma unroll
    for (int c = 0; c < (CANON ? CHUNKS : 1); ++c) part[c] = 0.0f;
    float sumsq = 0.0f;
    const unsigned long long store_pol = l2_policy<STORE == STORE_EVICT_FIRST ? 1 : 0>();
    // [region row_sum]
    for_each_chunk([&](int c, int j) {
        if (!LOADS_FIRST) load_chunk(c, j);
        if (MODE == MODE_ADD) {
            #pragma unroll
            for (int k = 0; k < VEC; ++k) px[c].v[k] = from_f32<T>(elem(px[c], k) + elem(pg[c], k));
            store_any<STORE, T, VEC>(hr + (long long)j * VEC, px[c], store_pol, fits_l2, aligned);
        }
        float& acc = CANON ? part[CANON ? c : 0] : sumsq;
        add_squares<MODE == MODE_GATE>(px[c], pg[c], acc, v + (MODE == MODE_GATE ? c * VEC : 0));
    });
    // [end row_sum]
    float total;
    if (WARP_ROW) {
        total = warp_allreduce_sum(sumsq);
    } else {
        __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
        // uniform branch: every thread of the block takes the same side
        if (CANON && (blockDim.x & 31) == 0) {
            #pragma unroll
            for (int c = 0; c < CHUNKS; ++c) part[c] = warp_allreduce_sum(part[c]);
            #pragma unroll
            for (int h = CHUNKS / 2; h >= 1; h >>= 1) {
                #pragma unroll
                for (int i = 0; i < h; ++i) part[i] += part[i + h];
            }
            total = block_allreduce_warp_totals(part[0], red);
        } else {
            if (CANON) {  // a hand-made block (tests): correct, not the canonical order
                #pragma unroll
                for (int c = 0; c < CHUNKS; ++c) sumsq += part[CANON ? c : 0];
            }
            total = (blockDim.x & 31) == 0 ? block_allreduce_sum_full_warps(sumsq, red)
                                           : block_reduce_sum(sumsq, red);
        }
    }
    // [region row_write]
    const float r = rsqrtf(__fdividef(total, (float)N) + eps);
    // phase 2: y = a * w * r, written once.
    with_out_kind(llama, w_offset, [&](auto kind) {
        constexpr int OUT = decltype(kind)::value;
        for_each_chunk([&](int c, int j) {
            Pack<T, VEC> py;
            #pragma unroll
            for (int k = 0; k < VEC; ++k) {
                const float a = MODE == MODE_GATE ? v[c * VEC + k] : elem(px[c], k);
                py.v[k] = out_elem<OUT, T>(a, pw[c], k, w_offset, r);
            }
            store_any<STORE, T, VEC>(yr + (long long)j * VEC, py, store_pol, fits_l2, aligned);
        });
    // [end row_write]
    });
}
// [end rows]

// ---------------------------------------------------------------------------------------
// wide rows: any N, two passes over the row (the second mostly hits L2)

// [region wide]
// One launch shape (WIDE_THREADS) for every M: the order of the sums depends on N only.
template <typename T, typename TW, int MODE, int VEC, bool ALIGNED>
__device__ __forceinline__ void rmsnorm_wide(RMSNORM_PARAMS(T, TW)) {
    const long long row = blockIdx.x;
    const int nvec = N / VEC;
    constexpr bool aligned = ALIGNED;
    const bool llama = (flags & FLAG_LLAMA) != 0;
    const T* xr = x + row * x_stride;
    const T* gr = MODE != MODE_PLAIN ? x2 + row * x2_stride : nullptr;
    T* yr = out + row * (long long)N;
    T* hr = MODE == MODE_ADD ? h_out + row * (long long)N : nullptr;

    // pass 1: sum of squares (the add op computes h here and writes it; pass 2 reads it back,
    // each thread its own vectors)
    float sumsq = 0.0f;
    #pragma unroll 4
    for (int j = threadIdx.x; j < nvec; j += blockDim.x) {
        Pack<T, VEC> px = load_any<LOAD_PLAIN, T, VEC>(xr + (long long)j * VEC, 0, 0, aligned);
        if (MODE == MODE_ADD) {
            const Pack<T, VEC> pr = load_any<LOAD_PLAIN, T, VEC>(gr + (long long)j * VEC, 0, 0, aligned);
            #pragma unroll
            for (int k = 0; k < VEC; ++k) px.v[k] = from_f32<T>(elem(px, k) + elem(pr, k));
            store_any<STORE_PLAIN, T, VEC>(hr + (long long)j * VEC, px, 0, 0, aligned);
        }
        add_squares<false>(px, px, sumsq, nullptr);
    }
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const float r = rsqrtf(__fdividef(block_reduce_sum(sumsq, red), (float)N) + eps);
    const T* ar = MODE == MODE_ADD ? hr : xr;  // the row normalised: x, or h as written above
    with_out_kind(llama, w_offset, [&](auto kind) {
    constexpr int OUT = decltype(kind)::value;
    #pragma unroll 2
    for (int j = threadIdx.x; j < nvec; j += blockDim.x) {
        const Pack<T, VEC> px = load_any<LOAD_PLAIN, T, VEC>(ar + (long long)j * VEC, 0, 0, aligned);
        const Pack<TW, VEC> pw = load_any<LOAD_PLAIN, TW, VEC>(w + (long long)j * VEC, 0, 0, aligned);
        Pack<T, VEC> pg;
        if (MODE == MODE_GATE) pg = load_any<LOAD_PLAIN, T, VEC>(gr + (long long)j * VEC, 0, 0, aligned);
        Pack<T, VEC> py;
        #pragma unroll
        for (int k = 0; k < VEC; ++k) {
            float a = elem(px, k);
            if (MODE == MODE_GATE) a *= silu(elem(pg, k));
            py.v[k] = out_elem<OUT, T>(a, pw, k, w_offset, r);
        }
        store_any<STORE_PLAIN, T, VEC>(yr + (long long)j * VEC, py, 0, 0, aligned);
    }
    });
}
// [end wide]

// ---------------------------------------------------------------------------------------
// the extern "C" kernels (one per instantiation; names parsed by gpu_viz/rmsnorm/fused/names.py)

#define RMSNORM_ARGS out, h_out, x, x2, w, M, N, x_stride, x2_stride, eps, w_offset, flags

// launch bounds: the warp variant WARP_BLOCK_THREADS (4 rows of a warp each); the block variant up
// to BLOCK_MAX_THREADS(EPT) threads (EPT 32 keeps its 32 values per thread within 128 registers
// at 512); wide WIDE_THREADS.  The 16-byte EPT 8 kernels (one or two vectors per thread, what
// the launcher picks for short rows) also ask ptxas for 2048 resident threads per SM, i.e. <= 32
// registers: full occupancy where the SM holds 2048 threads (sm_80+; sm_75's 1024 ignores it).
#ifndef WARP_BLOCK_THREADS  // the launcher passes all five (LAUNCH_DEFINES)
#define WARP_BLOCK_THREADS 128
#define WIDE_THREADS 1024
#define BLOCK_MAX_THREADS_E8 1024
#define BLOCK_MAX_THREADS_E16 1024
#define BLOCK_MAX_THREADS_E32 512
#endif
#define BLOCK_MAX_THREADS(EPT) BLOCK_MAX_THREADS_E##EPT
// (The misaligned "u" twins carry no such bound: their element-wise addresses spilled under it.)
#define BLOCK_MIN_BLOCKS(VEC, EPT, AL) (((VEC) > 1 && (EPT) == 8 && (AL)) ? 2048 / BLOCK_MAX_THREADS(EPT) : 1)
#define WARP_MIN_BLOCKS(VEC, EPT, AL) (((VEC) > 1 && (EPT) == 8 && (AL)) ? 2048 / WARP_BLOCK_THREADS : 1)

// RMSNORM_WEIGHT_F32: build the kernels of fp16 / bf16 x with an fp32 weight instead (names
// end in _w32; the launcher compiles them as a module of their own, on first use).
// RMSNORM_OUT_EXT (see OUT_PLAIN): names end in _x, after any _w32 (..._e8_w32_x).
#ifndef RMSNORM_WEIGHT_F32
#define RMSNORM_WEIGHT_F32 0
#endif
#if RMSNORM_WEIGHT_F32
#define WSUF_W _w32
#define WTYPE(T) float
#else
#define WSUF_W
#define WTYPE(T) T
#endif
#define RMSNORM_CAT2(a, b) a##b
#define RMSNORM_CAT(a, b) RMSNORM_CAT2(a, b)
#if RMSNORM_OUT_EXT
#define WSUF RMSNORM_CAT(WSUF_W, _x)
#else
#define WSUF WSUF_W
#endif

// V: "v" (16-byte accesses) or "u" (the same kernel, element by element: misaligned views)
#define DEF_WARP(OP, MODE, DT, T, V, AL, VEC, EPT)                                              \
    extern "C" __global__ void __launch_bounds__(WARP_BLOCK_THREADS, WARP_MIN_BLOCKS(VEC, EPT, AL)) \
        RMSNORM_CAT(OP##_warp_##DT##_##V##VEC##_e##EPT, WSUF)(RMSNORM_PARAMS(T, WTYPE(T))) {   \
        rmsnorm_rows<T, WTYPE(T), MODE, VEC, EPT, true, AL>(RMSNORM_ARGS);                      \
    }

#define DEF_BLOCK(OP, MODE, DT, T, V, AL, VEC, EPT)                                             \
    extern "C" __global__ void __launch_bounds__(BLOCK_MAX_THREADS(EPT), BLOCK_MIN_BLOCKS(VEC, EPT, AL)) \
        RMSNORM_CAT(OP##_block_##DT##_##V##VEC##_e##EPT, WSUF)(RMSNORM_PARAMS(T, WTYPE(T))) {  \
        rmsnorm_rows<T, WTYPE(T), MODE, VEC, EPT, false, AL>(RMSNORM_ARGS);                     \
    }

#define DEF_WIDE(OP, MODE, DT, T, V, AL, VEC)                                                   \
    extern "C" __global__ void __launch_bounds__(WIDE_THREADS, 1)                              \
        RMSNORM_CAT(OP##_wide_##DT##_##V##VEC, WSUF)(RMSNORM_PARAMS(T, WTYPE(T))) {            \
        rmsnorm_wide<T, WTYPE(T), MODE, VEC, AL>(RMSNORM_ARGS);                                 \
    }

// 16-byte path ("v") and its element-by-element twin for misaligned views ("u"): warp and
// block variants at EPT 8, 16, 32, and wide.
#define DEF_VECTOR(OP, MODE, DT, T, V, AL, VEC)                                                     \
    DEF_WARP(OP, MODE, DT, T, V, AL, VEC, 8) DEF_WARP(OP, MODE, DT, T, V, AL, VEC, 16)            \
    DEF_WARP(OP, MODE, DT, T, V, AL, VEC, 32) DEF_BLOCK(OP, MODE, DT, T, V, AL, VEC, 8)           \
    DEF_BLOCK(OP, MODE, DT, T, V, AL, VEC, 16) DEF_BLOCK(OP, MODE, DT, T, V, AL, VEC, 32)         \
    DEF_WIDE(OP, MODE, DT, T, V, AL, VEC)
// scalar path (N % VEC != 0): with one element per load and a run-time blockDim, every chunk
// needs its own 64-bit address and ptxas hoists them all, so block EPT 16/32 would spill:
// the block variant stops at EPT 8 (N <= 8192) and wider rows take `wide`.
#define DEF_SCALAR(OP, MODE, DT, T)                                                         \
    DEF_WARP(OP, MODE, DT, T, v, true, 1, 8) DEF_WARP(OP, MODE, DT, T, v, true, 1, 16)    \
    DEF_WARP(OP, MODE, DT, T, v, true, 1, 32) DEF_BLOCK(OP, MODE, DT, T, v, true, 1, 8)   \
    DEF_WIDE(OP, MODE, DT, T, v, true, 1)

#define DEF_OP(OP, MODE, DT, T, VEC16) \
    DEF_SCALAR(OP, MODE, DT, T) DEF_VECTOR(OP, MODE, DT, T, v, true, VEC16) DEF_VECTOR(OP, MODE, DT, T, u, false, VEC16)
#define DEF_DTYPE(DT, T, VEC16)                            \
    DEF_OP(rmsnorm, MODE_PLAIN, DT, T, VEC16)              \
    DEF_OP(rmsnorm_gate, MODE_GATE, DT, T, VEC16)          \
    DEF_OP(rmsnorm_add, MODE_ADD, DT, T, VEC16)

#if (RMSNORM_DTYPES & 1) && !RMSNORM_WEIGHT_F32
DEF_DTYPE(f32, float, 4)
#endif
#if RMSNORM_DTYPES & 2
DEF_DTYPE(f16, __half, 8)
#endif
#if RMSNORM_DTYPES & 4
DEF_DTYPE(bf16, __nv_bfloat16, 8)
#endif
