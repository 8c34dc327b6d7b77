// trace.cuh -- the traced build of a lesson's kernel: the taught kernel, plus records.
//
// TRACE(statement) runs `statement` only in the traced build (-DGPU_VIZ_TRACE, which
// gpu_viz.kernels.load(file, traced=True) passes together with --fmad=false); in every other
// build it is an empty statement.  So the kernel a notebook teaches and the kernel its player
// animates are one source: the traced build only adds writes into record buffers.
//
// Each traced file declares, under #ifdef GPU_VIZ_TRACE, one `__device__` struct named `rec`
// of 8-byte fields (record pointers, then flags); its Python producer in gpu_viz/record/<stem>.py
// fills it before the launch (gpu_viz.kernels.bind_record) and NaN/-1-poisons every buffer.
//
// What the traced build changes besides the records, so that numpy float32 reproduces every
// recorded value bit for bit (gpu_viz/model/<stem>.py):
//   * --fmad=false: `a += v * v` is a rounded multiply, then a rounded add (no FFMA);
//   * rsqrtf is approximate (about 2 ulp, its exact bits are the hardware's): here it is the
//     correctly rounded 1 / sqrt, two IEEE operations numpy does identically.
// Include this header after the CUDA headers (cuda_fp16.h, ...): it redefines rsqrtf.
#pragma once

#ifdef GPU_VIZ_TRACE
#define TRACE(...) do { __VA_ARGS__; } while (0)
#define rsqrtf(v) __fdiv_rn(1.0f, __fsqrt_rn(v))
#else
#define TRACE(...) do { } while (0)
#endif
