// rmsnorm_fused.cu -- production fused RMSNorm and fused RMSNorm + SiLU gate, one kernel per op.
//
//   rmsnorm:       y[m,n] = x[m,n] * w[n] * r[m]
//   rmsnorm_gate:  y[m,n] = x[m,n] * w[n] * silu(g[m,n]) * r[m]
//   with           r[m]   = rsqrt(sum_n x[m,n]^2 / N + eps)      (statistic from x only)
//
// Notebook 10_fused_rmsnorm_gate.  Launcher and public ops: gpu_viz/rmsnorm/fused.py (public as
// gpu_viz.ops); benchmark harness gpu_viz/rmsnorm/bench.py; tests/test_rmsnorm_fused.py;
// compute-sanitizer: scripts/sanitize/rmsnorm_fused.py.
// Build check: nvcc -arch=sm_90 -cubin -std=c++17 -Xptxas -v -Ikernels kernels/rmsnorm_fused.cu
//              (gpu_viz.rmsnorm.fused.kernel_report runs it for every architecture, with the
//              -D values the launcher compiles with)
// Storage fp32 / fp16 / bf16, arithmetic and accumulation fp32.  Every input element is read
// once and every output element written once (except by `wide`, which reads the row twice).
//
// Variants (gpu_viz.rmsnorm.fused.launch_config picks one per (M, N, dtype, alignment)):
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
//   VEC  elements per load: 16 bytes (8 halves, 4 floats) when x, gate, weight, out and both row
//        strides are 16-byte aligned and N % VEC == 0; else 1 (the scalar path).
//   EPT  elements per thread kept in registers (8, 16, 32; the scalar block variant only 8).
// Numerics: silu(g) = __fdividef(g, 1 + __expf(-g)) (see `silu`); r = rsqrtf(__fdividef(sum, N)
// + eps), 2 + 2 ulp.  NaN/Inf in a row make that row NaN/0 like the float64 formula, and never
// touch other rows.  64-bit row offsets (M * stride may exceed 2^31).
// -D options (the launcher passes all of them; the defaults below are its values):
//   RMSNORM_DTYPES=<mask>      1 f32, 2 f16, 4 bf16: build one dtype's kernels only
//   WARP_BLOCK_THREADS, WIDE_THREADS, BLOCK_MAX_THREADS_E8 / _E16 / _E32   launch shapes
#include "convert.cuh"  // to_f32 / from_f32<T>
#include "reduce.cuh"

#ifndef RMSNORM_DTYPES
#define RMSNORM_DTYPES 7
#endif

// ---------------------------------------------------------------------------------------
// packed loads

// VEC elements moved as one load/store (16 bytes when VEC * sizeof(T) == 16).
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

// Element k of a pack, widened to fp32.  bf16 is read from the pack's 32-bit words (an
// exact shift / mask: a bf16 is the high half of its float) -- element by element through
// cvt.f32.bf16, ptxas unpacked every 16-bit value into a register of its own on sm_90
// (bf16 kernels 15-25 registers above the fp16 ones, fewer blocks per SM).
template <typename T, int VEC>
__device__ __forceinline__ float elem(const Pack<T, VEC>& p, int k) { return to_f32(p.v[k]); }
template <int VEC>
__device__ __forceinline__ float elem(const Pack<__nv_bfloat16, VEC>& p, int k) {
    if (VEC == 1) return to_f32(p.v[0]);
    const unsigned u = reinterpret_cast<const unsigned*>(p.v)[k >> 1];  // little-endian pairs
    return __uint_as_float((k & 1) ? (u & 0xffff0000u) : (u << 16));
}

template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* p) {
    return *reinterpret_cast<const Pack<T, VEC>*>(p);
}

// Cache-hinted loads and stores of one pack (hints only: the values are load_pack's).  The
// 16-byte packs use inline PTX (NVRTC needs no header for it); other pack sizes are plain.
//   weight (read by every row): ld.global.nc (LOAD_WEIGHT)
//   x, gate (read once), y (written once): by the kernel argument `fits_l2`, which the host
//     sets when x, gate and y of the launch together fit in L2 (gpu_viz.rmsnorm.fused.fits_l2):
//     fits:      x, gate ld.global.cs (evict-first), y st.global: y, often a recycled buffer,
//                stays in L2;
//     otherwise: the op's policy below.
//   Selected by a predicate inside each access (no branch: a row's loads still issue back
//   to back).
// Policies beyond L2, by measurement (benchmarks/NOTES.md, the cache-hint runs of 2026-11-29/30):
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

// [region silu]
// silu(g) = g * sigmoid(g) = g / (1 + e^-g), with the fast intrinsics: __expf (ex2.approx,
// max 2 + 1.2|g| ulp) and __fdividef (div.approx, max 2 ulp) -- ~6 instructions instead of
// ~35 for expf + IEEE division.  Relative error for |g| <= 8: <= ~1.5e-6 (12 ulp), far under
// the one rounding of an fp16 (4.9e-4) or bf16 (3.9e-3) result, inside the fp32 rtol 2e-5.
// Limits: e^-g overflows to inf for g < -88.7 and g * (1/inf) = -0, the limit (also 0 where
// 1 + e^-g > 2^126, true value below 1e-36); g = +inf gives inf; g = -inf and NaN give NaN
// (as the float64 formula: -inf / inf).
__device__ __forceinline__ float silu(float g) { return __fdividef(g, 1.0f + __expf(-g)); }
// [end silu]

// Sum over the 32 lanes of a warp, every lane gets it (butterfly; all 32 lanes must call).
__device__ __forceinline__ float warp_allreduce_sum(float v) {
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(GPU_VIZ_FULL_MASK, v, off);
    return v;
}

// Block sum when blockDim.x % 32 == 0 (the chooser's blocks): butterfly in every warp, the
// warp totals through shared memory, then EVERY warp butterflies the nwarps partials itself --
// one __syncthreads instead of block_reduce_sum's two, no partial-warp guards.  The xor
// butterfly adds the same pairs in every lane (a + b == b + a), so every thread of the block
// gets the bit-identical total.  Called once per kernel (smem is not reused afterwards).
__device__ __forceinline__ float block_allreduce_sum_full_warps(float v, float* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_allreduce_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    return warp_allreduce_sum(lane < nwarps ? smem[lane] : 0.0f);
}

// ---------------------------------------------------------------------------------------
// register-resident row: `warp` (WARP_ROW) and `block` variants share one body

// [region rows]
template <typename T, bool GATE, int VEC, int EPT, bool WARP_ROW>
__device__ __forceinline__ void rmsnorm_rows(T* __restrict__ out, const T* __restrict__ x,
                                             const T* __restrict__ gate, const T* __restrict__ w,
                                             long long M, int N, long long x_stride,
                                             long long gate_stride, float eps, int fits_l2) {
    constexpr int CHUNKS = EPT / VEC;
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
    const T* gr = GATE ? gate + row * gate_stride : nullptr;
    T* yr = out + row * (long long)N;

    // phase 1: issue EVERY load of the row -- x (and g) streaming, the weight through the
    // read-only path -- before the first use of any of them, so a row costs one memory round
    // trip.  On the 16-byte path the loads sit in a loop of their own: one predicated LDG.128
    // per chunk, back to back (with the use in the same loop, ptxas branched around each
    // chunk and waited for chunk 0 before issuing chunk 1: one round trip per chunk).  One
    // chunk (EPT == VEC) needs no split, and splitting it costs registers on sm_89.
    constexpr bool LOADS_FIRST = VEC > 1 && CHUNKS > 1;
    // Cache policies (see "Cache-hinted loads" above): `fits_l2` (set by the host when x,
    // gate and y of the launch together fit in L2) selects .cs loads and plain stores, else
    // the op's policy -- by a predicate inside each access, no branch.
    constexpr bool F32_BLOCK = sizeof(T) == 4 && !WARP_ROW;
    constexpr int LOAD = GATE ? LOAD_PLAIN : F32_BLOCK ? LOAD_KEEP_L2 : LOAD_NO_L1;
    constexpr int STORE = GATE ? STORE_PLAIN : F32_BLOCK ? STORE_PLAIN : STORE_EVICT_FIRST;
    const unsigned long long load_pol = l2_policy<LOAD == LOAD_KEEP_L2 ? 2 : 0>();
    Pack<T, VEC> px[CHUNKS], pg[CHUNKS], pw[CHUNKS];
    // every chunk c of this thread's share of the row: vector j = t + c * nthreads, while j < nvec
    auto for_each_chunk = [&](auto&& body) {
        #pragma unroll
        for (int c = 0; c < CHUNKS; ++c) {
            const int j = t + c * nthreads;
            if (j < nvec) body(c, j);
        }
    };
    auto load_chunk = [&](int c, int j) {  // chunk c = vector j of the row: x, g, weight
        px[c] = load_hinted<LOAD, T, VEC>(xr + (long long)j * VEC, load_pol, fits_l2);
        if (GATE) pg[c] = load_hinted<LOAD, T, VEC>(gr + (long long)j * VEC, load_pol, fits_l2);
        pw[c] = load_hinted<LOAD_WEIGHT, T, VEC>(w + (long long)j * VEC, 0, 0);
    };
    if (LOADS_FIRST) for_each_chunk(load_chunk);
    // ... then sum x^2; the gate op keeps x * silu(g) as fp32 in v, rmsnorm keeps x packed
    // (half the registers in fp16/bf16: more blocks per SM, more bytes in flight) and widens
    // it again in phase 2.  (The scalar path loads here, chunk by chunk: split like the above,
    // its 64-bit addresses spill.)
    float v[GATE ? EPT : 1];
    float sumsq = 0.0f;
    for_each_chunk([&](int c, int j) {
        if (!LOADS_FIRST) load_chunk(c, j);
        #pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float xf = elem(px[c], k);
            sumsq = fmaf(xf, xf, sumsq);
            if (GATE) v[c * VEC + k] = xf * silu(elem(pg[c], k));
        }
    });
    float total;
    if (WARP_ROW) {
        total = warp_allreduce_sum(sumsq);
    } else {
        __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
        // uniform branch: every thread of the block takes the same side
        total = (blockDim.x & 31) == 0 ? block_allreduce_sum_full_warps(sumsq, red)
                                       : block_reduce_sum(sumsq, red);
    }
    const float r = rsqrtf(__fdividef(total, (float)N) + eps);
    // phase 2: y = v * w * r, written once.
    const unsigned long long store_pol = l2_policy<STORE == STORE_EVICT_FIRST ? 1 : 0>();
    for_each_chunk([&](int c, int j) {
        Pack<T, VEC> py;
        #pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float a = GATE ? v[c * VEC + k] : elem(px[c], k);
            py.v[k] = from_f32<T>(a * elem(pw[c], k) * r);
        }
        store_hinted<STORE, T, VEC>(yr + (long long)j * VEC, py, store_pol, fits_l2);
    });
}
// [end rows]

// ---------------------------------------------------------------------------------------
// wide rows: any N, two passes over the row (the second mostly hits L2)

// [region wide]
template <typename T, bool GATE, int VEC>
__device__ __forceinline__ void rmsnorm_wide(T* __restrict__ out, const T* __restrict__ x,
                                             const T* __restrict__ gate, const T* __restrict__ w,
                                             long long M, int N, long long x_stride,
                                             long long gate_stride, float eps, int /*fits_l2*/) {
    const long long row = blockIdx.x;
    const int nvec = N / VEC;
    const T* xr = x + row * x_stride;
    const T* gr = GATE ? gate + row * gate_stride : nullptr;
    T* yr = out + row * (long long)N;

    float sumsq = 0.0f;
    #pragma unroll 4
    for (int j = threadIdx.x; j < nvec; j += blockDim.x) {
        const Pack<T, VEC> px = load_pack<T, VEC>(xr + (long long)j * VEC);
        #pragma unroll
        for (int k = 0; k < VEC; ++k) {
            const float xf = elem(px, k);
            sumsq = fmaf(xf, xf, sumsq);
        }
    }
    __shared__ float red[GPU_VIZ_REDUCE_SLOTS];
    const float r = rsqrtf(__fdividef(block_reduce_sum(sumsq, red), (float)N) + eps);
    #pragma unroll 2
    for (int j = threadIdx.x; j < nvec; j += blockDim.x) {
        const Pack<T, VEC> px = load_pack<T, VEC>(xr + (long long)j * VEC);
        const Pack<T, VEC> pw = load_pack<T, VEC>(w + (long long)j * VEC);
        Pack<T, VEC> pg;
        if (GATE) pg = load_pack<T, VEC>(gr + (long long)j * VEC);
        Pack<T, VEC> py;
        #pragma unroll
        for (int k = 0; k < VEC; ++k) {
            float p = elem(px, k);
            if (GATE) p *= silu(elem(pg, k));
            py.v[k] = from_f32<T>(p * elem(pw, k) * r);
        }
        *reinterpret_cast<Pack<T, VEC>*>(yr + (long long)j * VEC) = py;
    }
}
// [end wide]

// ---------------------------------------------------------------------------------------
// the extern "C" kernels (one per instantiation; names parsed by gpu_viz/rmsnorm/fused.py)

#define RMSNORM_PARAMS(T)                                                                      \
    T* __restrict__ out, const T* __restrict__ x, const T* __restrict__ gate,                  \
        const T* __restrict__ w, long long M, int N, long long x_stride, long long gate_stride, \
        float eps, int fits_l2
#define RMSNORM_ARGS out, x, gate, w, M, N, x_stride, gate_stride, eps, fits_l2

// launch bounds: the warp variant WARP_BLOCK_THREADS (4 rows of a warp each); the block variant up
// to BLOCK_MAX_THREADS(EPT) threads (EPT 32 keeps its 32 values per thread within 128 registers
// at 512); wide WIDE_THREADS.  The 16-byte EPT 8 kernels (one or two vectors per thread, what
// the launcher picks for short rows) also ask ptxas for 2048 resident threads per SM, i.e. <= 32
// registers: full occupancy where the SM holds 2048 threads (sm_80+; sm_75's 1024 ignores it).
#ifndef WARP_BLOCK_THREADS
#define WARP_BLOCK_THREADS 128
#endif
#ifndef WIDE_THREADS
#define WIDE_THREADS 1024
#endif
#ifndef BLOCK_MAX_THREADS_E8
#define BLOCK_MAX_THREADS_E8 1024
#endif
#ifndef BLOCK_MAX_THREADS_E16
#define BLOCK_MAX_THREADS_E16 1024
#endif
#ifndef BLOCK_MAX_THREADS_E32
#define BLOCK_MAX_THREADS_E32 512
#endif
#define BLOCK_MAX_THREADS(EPT) BLOCK_MAX_THREADS_E##EPT
#define BLOCK_MIN_BLOCKS(VEC, EPT) (((VEC) > 1 && (EPT) == 8) ? 2048 / BLOCK_MAX_THREADS(EPT) : 1)
#define WARP_MIN_BLOCKS(VEC, EPT) (((VEC) > 1 && (EPT) == 8) ? 2048 / WARP_BLOCK_THREADS : 1)

#define DEF_WARP(OP, GATE, DT, T, VEC, EPT)                                                     \
    extern "C" __global__ void __launch_bounds__(WARP_BLOCK_THREADS, WARP_MIN_BLOCKS(VEC, EPT)) \
        OP##_warp_##DT##_v##VEC##_e##EPT(RMSNORM_PARAMS(T)) {                                  \
        rmsnorm_rows<T, GATE, VEC, EPT, true>(RMSNORM_ARGS);                                   \
    }

#define DEF_BLOCK(OP, GATE, DT, T, VEC, EPT)                                                    \
    extern "C" __global__ void __launch_bounds__(BLOCK_MAX_THREADS(EPT), BLOCK_MIN_BLOCKS(VEC, EPT)) \
        OP##_block_##DT##_v##VEC##_e##EPT(RMSNORM_PARAMS(T)) {                                 \
        rmsnorm_rows<T, GATE, VEC, EPT, false>(RMSNORM_ARGS);                                  \
    }

#define DEF_WIDE(OP, GATE, DT, T, VEC)                                                          \
    extern "C" __global__ void __launch_bounds__(WIDE_THREADS, 1)                              \
        OP##_wide_##DT##_v##VEC(RMSNORM_PARAMS(T)) {                                           \
        rmsnorm_wide<T, GATE, VEC>(RMSNORM_ARGS);                                              \
    }

// 16-byte path: warp and block variants at EPT 8, 16, 32, and wide.
#define DEF_VECTOR(OP, GATE, DT, T, VEC)                                          \
    DEF_WARP(OP, GATE, DT, T, VEC, 8) DEF_WARP(OP, GATE, DT, T, VEC, 16)        \
    DEF_WARP(OP, GATE, DT, T, VEC, 32) DEF_BLOCK(OP, GATE, DT, T, VEC, 8)       \
    DEF_BLOCK(OP, GATE, DT, T, VEC, 16) DEF_BLOCK(OP, GATE, DT, T, VEC, 32)     \
    DEF_WIDE(OP, GATE, DT, T, VEC)
// scalar path: with one element per load and a run-time blockDim, every chunk needs its own
// 64-bit address and ptxas hoists them all, so block EPT 16/32 would spill: the block
// variant stops at EPT 8 (N <= 8192) and wider rows take `wide`.
#define DEF_SCALAR(OP, GATE, DT, T)                                                \
    DEF_WARP(OP, GATE, DT, T, 1, 8) DEF_WARP(OP, GATE, DT, T, 1, 16)             \
    DEF_WARP(OP, GATE, DT, T, 1, 32) DEF_BLOCK(OP, GATE, DT, T, 1, 8)            \
    DEF_WIDE(OP, GATE, DT, T, 1)

#define DEF_DTYPE(DT, T, VEC16)                        \
    DEF_SCALAR(rmsnorm, false, DT, T)                  \
    DEF_VECTOR(rmsnorm, false, DT, T, VEC16)           \
    DEF_SCALAR(rmsnorm_gate, true, DT, T)              \
    DEF_VECTOR(rmsnorm_gate, true, DT, T, VEC16)

#if RMSNORM_DTYPES & 1
DEF_DTYPE(f32, float, 4)
#endif
#if RMSNORM_DTYPES & 2
DEF_DTYPE(f16, __half, 8)
#endif
#if RMSNORM_DTYPES & 4
DEF_DTYPE(bf16, __nv_bfloat16, 8)
#endif
