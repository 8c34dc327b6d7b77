// pack.cuh -- vector packs shared by rmsnorm_fused.cu and rmsnorm_wide.cu: VEC elements of T
// moved as one access (16 bytes when VEC * sizeof(T) == 16; an fp32 weight of a 16-bit x takes
// 32), each element widened to fp32 for the arithmetic, and silu with the fast intrinsics.
//
// Use:  #include "pack.cuh"
//       Pack<T, VEC> p = load_pack<T, VEC>(x + j * VEC);   float v = elem(p, k);
#pragma once

#include "convert.cuh"  // to_f32 / from_f32<T>

// VEC elements moved as one load/store.
// [region pack]
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};
// [end pack]

// Element k of a pack, widened to fp32.  bf16 is read from the pack's 32-bit words (an exact
// shift / mask: a bf16 is the high half of its float) -- element by element through
// cvt.f32.bf16, ptxas unpacked every 16-bit value into a register of its own on sm_90 (bf16
// kernels 15-25 registers above the fp16 ones, fewer blocks per SM).
template <typename T, int VEC>
__device__ __forceinline__ float elem(const Pack<T, VEC>& p, int k) { return to_f32(p.v[k]); }
template <int VEC>
__device__ __forceinline__ float elem(const Pack<__nv_bfloat16, VEC>& p, int k) {
    if (VEC == 1) return to_f32(p.v[0]);
    const unsigned u = reinterpret_cast<const unsigned*>(p.v)[k >> 1];  // little-endian pairs
    return __uint_as_float((k & 1) ? (u & 0xffff0000u) : (u << 16));
}

// One pack from `p`, a plain load (the kernels' cache-hinted loads give the same values).
// [region load_pack]
template <typename T, int VEC>
__device__ __forceinline__ Pack<T, VEC> load_pack(const T* p) {
    return *reinterpret_cast<const Pack<T, VEC>*>(p);
}
// [end load_pack]

// The squares of px's elements added to `acc` in element order, one fmaf chain (the order the
// kernels' batch invariance rests on); with GATE, also a[k] = x * silu(g) of each element, from
// the gate's pack pg.
template <bool GATE, typename T, int VEC>
__device__ __forceinline__ void add_squares(const Pack<T, VEC>& px, const Pack<T, VEC>& pg, float& acc,
                                            float* a);

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

template <bool GATE, typename T, int VEC>
__device__ __forceinline__ void add_squares(const Pack<T, VEC>& px, const Pack<T, VEC>& pg, float& acc,
                                            float* a) {
    #pragma unroll
    for (int k = 0; k < VEC; ++k) {
        const float xf = elem(px, k);
        acc = fmaf(xf, xf, acc);
        if (GATE) a[k] = xf * silu(elem(pg, k));
    }
}
