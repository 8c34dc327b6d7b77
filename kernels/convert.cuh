// convert.cuh -- element conversions shared by rmsnorm_deck.cu and rmsnorm_fused.cu:
// loads widen fp32 / fp16 / bf16 to fp32 (exact), stores round fp32 to nearest even.
//
// Use:  #include "convert.cuh"   float v = to_f32(x[i]);   y[i] = from_f32<T>(v);
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
