/* A stand-in for libcuda.so.1 for the C++ launcher's CPU tests (tests/test_rmsnorm_launcher.py).
 *
 * cuLaunchKernel records what it was given (function, grid, block, stream, the twelve kernel
 * arguments in kernels/rmsnorm_fused.cu's order) and, for CPU float32 tensors, computes what the
 * kernel would: fn 1 = rmsnorm, 2 = rmsnorm_gate, 3 = rmsnorm_add, in float64, rounded to float32
 * (so the tests check the outputs the launcher returns, not only the arguments).  `stub_rc` makes
 * it fail with that code; `stub_rc_once` fails only the next launch (a missing context that the
 * launcher repairs with cuCtxSetCurrent and a retry).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  int calls;
  uint64_t fn;
  unsigned grid[3], block[3], smem;
  uint64_t stream;
  uint64_t ptr[5]; /* y, h, x, x2, w */
  int64_t M;
  int32_t N;
  int64_t sx, sg;
  float eps, offset;
  int32_t flags;
  int ctx_sets;
} stub_record_t;

stub_record_t stub_record;
int stub_rc = 0;
int stub_rc_once = 0;

static void compute(void) {
  const stub_record_t* r = &stub_record;
  float* y = (float*)(uintptr_t)r->ptr[0];
  float* h = (float*)(uintptr_t)r->ptr[1];
  const float* x = (const float*)(uintptr_t)r->ptr[2];
  const float* x2 = (const float*)(uintptr_t)r->ptr[3];
  const float* w = (const float*)(uintptr_t)r->ptr[4];
  for (int64_t i = 0; i < r->M; ++i) {
    const float* xi = x + i * r->sx;
    const float* gi = x2 ? x2 + i * r->sg : 0;
    double ss = 0;
    for (int32_t j = 0; j < r->N; ++j) {
      double v = r->fn == 3 ? (double)(float)(xi[j] + gi[j]) : xi[j];
      if (r->fn == 3) h[i * r->N + j] = (float)v;
      ss += v * v;
    }
    double rr = 1.0 / sqrt(ss / r->N + r->eps);
    for (int32_t j = 0; j < r->N; ++j) {
      double v = r->fn == 3 ? h[i * r->N + j] : xi[j];
      double s = 1.0;
      if (r->fn == 2) s = gi[j] / (1.0 + exp(-(double)gi[j]));
      y[i * r->N + j] = (float)(v * s * (w[j] + (double)r->offset) * rr);
    }
  }
}

int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void* stream, void** params, void** extra) {
  (void)extra;
  stub_record.calls++;
  if (stub_rc_once) {
    int rc = stub_rc_once;
    stub_rc_once = 0;
    return rc;
  }
  if (stub_rc) return stub_rc;
  stub_record.fn = (uint64_t)(uintptr_t)f;
  stub_record.grid[0] = gx, stub_record.grid[1] = gy, stub_record.grid[2] = gz;
  stub_record.block[0] = bx, stub_record.block[1] = by, stub_record.block[2] = bz;
  stub_record.smem = smem;
  stub_record.stream = (uint64_t)(uintptr_t)stream;
  for (int i = 0; i < 5; ++i) memcpy(&stub_record.ptr[i], params[i], 8);
  memcpy(&stub_record.M, params[5], 8);
  memcpy(&stub_record.N, params[6], 4);
  memcpy(&stub_record.sx, params[7], 8);
  memcpy(&stub_record.sg, params[8], 8);
  memcpy(&stub_record.eps, params[9], 4);
  memcpy(&stub_record.offset, params[10], 4);
  memcpy(&stub_record.flags, params[11], 4);
  if (stub_record.fn >= 1 && stub_record.fn <= 3) compute();
  return 0;
}

int cuGetErrorName(int rc, const char** s) {
  *s = rc == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : rc == 201 ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_UNKNOWN";
  return 0;
}

int cuDeviceGet(int* dev, int ordinal) {
  *dev = ordinal;
  return 0;
}
int cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  *ctx = (void*)(uintptr_t)(0x1000 + dev);
  return 0;
}
int cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  return 0;
}
int cuCtxSetCurrent(void* ctx) {
  (void)ctx;
  stub_record.ctx_sets++;
  return 0;
}
