"""Small CUDA kernels that pin down the emulator's semantics, shared by the CPU tests
(tests/test_emulator_semantics.py: emulated == an independent numpy/Python reference) and the GPU
tests (tests/test_emulator_gpu.py: emulated == silicon, bit for bit).

Each :class:`Case` is one kernel of one source, a launch shape, and ``make(rng)`` building fresh
inputs (random values plus the edge values each op is known to get wrong: zeros of both signs,
subnormals, infinities, NaN, INT_MIN, UINT_MAX, shift counts past the width ...).  Output buffers
are filled with a sentinel (NaN bits or 0xDEADBEEF) so that an element no thread wrote shows.
:func:`run_emulated` runs a case on the emulator and :func:`run_cupy` on a GPU; both return every
buffer argument as a host array, in argument order.
"""
from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

#: The architectures every semantics kernel is compiled for (NVRTC's PTX differs between them).
ARCHES = ("sm_75", "sm_90")
SENTINEL32 = np.uint32(0xDEADBEEF)


# -- edge values ------------------------------------------------------------------------------------

def f32_bits(*bits) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


#: float32 values each arithmetic op must get right: signed zeros, the smallest and largest
#: subnormals, the smallest normal, one, values next to powers of two, the largest finite,
#: infinities and a quiet NaN.
F32_EDGES = np.concatenate([
    f32_bits(0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
             0x80800000, 0x3F800000, 0xBF800000, 0x3F800001, 0x3F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF,
             0x7F800000, 0xFF800000, 0x7FC00000, 0x4B800000, 0x33800000, 0x40490FDB),
    np.array([0.5, 1.5, 2.5, -2.5, 3.0, 1e-30, 1e30, -7.0], np.float32)])


def f32_mix(rng, n: int) -> np.ndarray:
    """``n`` float32s: a third normal(0, 1), a third random bit patterns (every exponent, NaNs
    among them), a third the edge values, shuffled."""
    k = n // 3
    parts = [rng.standard_normal(k).astype(np.float32),
             rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32).view(np.float32),
             rng.choice(F32_EDGES, n - 2 * k)]
    out = np.concatenate(parts)
    rng.shuffle(out)
    return out


INT32_EDGES = np.array([0, 1, -1, 2, -2, 7, -7, 31, 32, 33, 2**31 - 1, -2**31, 2**30, -2**30, 0x55555555,
                        0x12345678, -0x12345678, 65535, 65536, -65536], np.int64).astype(np.int32)


def i32_mix(rng, n: int) -> np.ndarray:
    k = n // 2
    out = np.concatenate([rng.integers(-2**31, 2**31, k, dtype=np.int64).astype(np.int32),
                          rng.choice(INT32_EDGES, n - k)])
    rng.shuffle(out)
    return out


def u32(a) -> np.ndarray:
    return np.asarray(a).astype(np.int64).astype(np.uint32)


# -- exact rounding (independent of the emulator's double-double method) ---------------------------

#: (precision in bits, smallest normal exponent, largest exponent)
F32, F16, BF16 = (24, -126, 127), (11, -14, 15), (8, -126, 127)
MODES = ("rn", "rz", "rd", "ru")


def round_exact(q: Fraction, mode: str, fmt=F32) -> float:
    """The exact rational ``q`` rounded to the format ``fmt`` in ``mode`` (rn: nearest, ties to
    even; rz: toward zero; rd: toward -inf; ru: toward +inf), with IEEE overflow; a zero keeps
    q's sign (the caller decides the sign of an exact zero)."""
    p, emin, emax = fmt
    if q == 0:
        return 0.0
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if a < Fraction(2) ** e:
        e -= 1
    elif a >= Fraction(2) ** (e + 1):
        e += 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - p + 1)
    n, rem = divmod(a, quantum)
    if rem:
        if mode == "rn":
            up = 2 * rem > quantum or (2 * rem == quantum and n % 2 == 1)
        elif mode == "rz":
            up = False
        elif mode == "ru":
            up = not neg
        else:
            up = neg
        n += up
    value = n * quantum
    biggest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if value > biggest:
        to_inf = mode == "rn" or (mode == "ru" and not neg) or (mode == "rd" and neg)
        value = None if to_inf else biggest
    mag = math.inf if value is None else float(value)
    return -mag if neg else mag


def _zero_sum_sign(s1: bool, s2: bool, mode: str) -> float:
    """IEEE: an exact zero sum is -0 when both terms are -0, or in rd mode when their signs differ."""
    if s1 and s2:
        return -0.0
    if s1 != s2 and mode == "rd":
        return -0.0
    return 0.0


def ref_add(x: float, y: float, mode: str = "rn", fmt=F32) -> float:
    if math.isnan(x) or math.isnan(y):
        return math.nan
    if math.isinf(x) or math.isinf(y):
        if math.isinf(x) and math.isinf(y) and (x > 0) != (y > 0):
            return math.nan
        return x if math.isinf(x) else y
    s = Fraction(x) + Fraction(y)
    if s == 0:
        if x == 0 and y == 0:
            return _zero_sum_sign(math.copysign(1, x) < 0, math.copysign(1, y) < 0, mode)
        return -0.0 if mode == "rd" else 0.0
    return round_exact(s, mode, fmt)


def ref_mul(x: float, y: float, mode: str = "rn", fmt=F32) -> float:
    if math.isnan(x) or math.isnan(y):
        return math.nan
    neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
    if math.isinf(x) or math.isinf(y):
        if x == 0 or y == 0:
            return math.nan
        return -math.inf if neg else math.inf
    p = Fraction(x) * Fraction(y)
    if p == 0:
        return -0.0 if neg else 0.0
    return round_exact(p, mode, fmt)


def ref_fma(x: float, y: float, z: float, mode: str = "rn", fmt=F32) -> float:
    if math.isnan(x) or math.isnan(y) or math.isnan(z):
        return math.nan
    pneg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
    if math.isinf(x) or math.isinf(y):
        if x == 0 or y == 0:
            return math.nan
        pinf = -math.inf if pneg else math.inf
        if math.isinf(z) and (z > 0) != (pinf > 0):
            return math.nan
        return pinf
    if math.isinf(z):
        return z
    p = Fraction(x) * Fraction(y)
    s = p + Fraction(z)
    if s == 0:
        if p == 0 and z == 0:
            return _zero_sum_sign(pneg, math.copysign(1, z) < 0, mode)
        return -0.0 if mode == "rd" else 0.0
    return round_exact(s, mode, fmt)


def ref_div(x: float, y: float, mode: str = "rn", fmt=F32) -> float:
    if math.isnan(x) or math.isnan(y):
        return math.nan
    neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
    if (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
        return math.nan
    if math.isinf(x) or y == 0:
        return -math.inf if neg else math.inf
    if math.isinf(y) or x == 0:
        return -0.0 if neg else 0.0
    return round_exact(Fraction(x) / Fraction(y), mode, fmt)


def ref_sqrt(x: float, mode: str = "rn") -> float:
    """Correctly rounded float32 square root: the neighbours of float64's answer, decided by
    comparing exact squares."""
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    X = Fraction(x)
    c = np.float32(math.sqrt(x))
    cands = [c]
    for _ in range(2):
        cands = [np.nextafter(cands[0], np.float32(0))] + cands + [np.nextafter(cands[-1], np.float32(np.inf))]
    below = max(v for v in cands if Fraction(float(v)) ** 2 <= X)
    above = min(v for v in cands if Fraction(float(v)) ** 2 >= X)
    if below == above or mode in ("rd", "rz"):
        return float(below)
    if mode == "ru":
        return float(above)
    mid = (Fraction(float(below)) + Fraction(float(above))) / 2
    return float(below) if X < mid * mid else float(above)   # X == mid^2 cannot happen (mid has p+1 bits)


def to_f32(v: float) -> np.float32:
    return np.float32(v)


def round_int(x: float, mode: str) -> int:
    """x rounded to an integer in ``mode`` (rn: half to even)."""
    if mode == "rn":
        return round(x)
    if mode == "rz":
        return math.trunc(x)
    if mode == "rd":
        return math.floor(x)
    return math.ceil(x)


def ref_f2i(x: float, mode: str, lo: int, hi: int, source: str = "f32") -> int:
    """PTX cvt.{rni,rzi,rmi,rpi}.<int>.<float>: rounded, saturated to [lo, hi].  NaN, as an H200
    converts it: 0 from an f32 into a 32-bit integer, else the integer with only its top bit set."""
    if math.isnan(x):
        bits = (hi - lo).bit_length()
        if source == "f32" and bits == 32:
            return 0
        top = 1 << (bits - 1)
        return top if lo == 0 else -top
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(round_int(x, mode), lo), hi)


# -- cases ----------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Case:
    """One kernel launch: ``make(rng)`` -> the argument list (numpy arrays become device buffers,
    numpy scalars are passed by value)."""

    name: str
    source: str
    kernel: str
    grid: Tuple[int, ...]
    block: Tuple[int, ...]
    make: Callable[[np.random.Generator], List]
    shared_mem: int = 0
    arches: Sequence[str] = ARCHES
    #: outputs (argument positions) whose values depend on approximate instructions
    approximate: Sequence[int] = ()
    #: options added to the compile (e.g. "-DFOO")
    options: Sequence[str] = ()


def run_emulated(case: Case, arch: str, args: Sequence, compile_options: Sequence[str] = (), **launch_options):
    """(run, host copies of every buffer argument, None for scalars); ``compile_options`` after the
    course's (e.g. ``-ftz=false``: IEEE subnormals instead of the GPU path's flush to zero)."""
    from gpu_viz import emulator as em

    prog = em.compile(case.source, name=f"{case.name}.cu", arch=arch,
                      options=tuple(case.options) + tuple(compile_options))
    dev = em.Device()
    dargs = [dev.asarray(a, name=f"arg{k}") if isinstance(a, np.ndarray) else a for k, a in enumerate(args)]
    run = prog.launch(case.kernel, grid=case.grid, block=case.block, args=dargs, device=dev,
                      shared_mem=case.shared_mem, **launch_options)
    return run, [d.get() if isinstance(d, em.DeviceArray) else None for d in dargs]


def run_cupy(case: Case, args: Sequence):
    """Host copies of every buffer argument after the launch on the current GPU (CuPy RawModule,
    compiled for the device's own architecture with the course's options)."""
    import cupy as cp

    from gpu_viz.kernels import gpu_options

    mod = cp.RawModule(code=case.source, options=tuple(gpu_options()) + tuple(case.options))
    fn = mod.get_function(case.kernel)
    dargs = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    fn(case.grid, case.block, tuple(dargs), shared_mem=case.shared_mem)
    cp.cuda.runtime.deviceSynchronize()
    return [cp.asnumpy(d) if isinstance(d, cp.ndarray) else None for d in dargs]


CASES: Dict[str, Case] = {}


def case(**kw) -> Case:
    c = Case(**kw)
    CASES[c.name] = c
    return c


def _nan_f32(n) -> np.ndarray:
    return np.full(n, SENTINEL32, np.uint32).view(np.float32)


# integer arithmetic ----------------------------------------------------------------------------------

INT_SRC = r"""
extern "C" __global__ void int_arith(const int* a, const int* b, const int* c, int* out, long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i], z = c[i];
  unsigned ux = (unsigned)x, uy = (unsigned)y;
  out[0 * n + i] = x + y;
  out[1 * n + i] = x - y;
  out[2 * n + i] = x * y;
  out[3 * n + i] = __mulhi(x, y);
  out[4 * n + i] = (int)__umulhi(ux, uy);
  out[5 * n + i] = x * y + z;                        // mad.lo
  out[6 * n + i] = __mul24(x, y);
  out[7 * n + i] = (int)__umul24(ux, uy);
  out[8 * n + i] = min(x, y);
  out[9 * n + i] = max(x, y);
  out[10 * n + i] = (int)min(ux, uy);
  out[11 * n + i] = (int)max(ux, uy);
  out[12 * n + i] = abs(x);
  out[13 * n + i] = __sad(x, y, (unsigned)z);
  out[14 * n + i] = __hadd(x, y);
  out[15 * n + i] = __rhadd(x, y);
  wide[0 * n + i] = (long long)x * y;                // mul.wide.s32
  wide[1 * n + i] = (long long)((unsigned long long)ux * uy);   // mul.wide.u32
  long long lx = ((long long)x << 32) ^ (unsigned)z, ly = ((long long)y << 17) + z;
  wide[2 * n + i] = lx * ly;
  wide[3 * n + i] = __mul64hi(lx, ly);
  wide[4 * n + i] = (long long)__umul64hi((unsigned long long)lx, (unsigned long long)ly);
  wide[5 * n + i] = lx + ly;
  wide[6 * n + i] = min(lx, ly);
  wide[7 * n + i] = (long long)max((unsigned long long)lx, (unsigned long long)ly);
}

extern "C" __global__ void int_div(const int* a, const int* b, int* out, long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  out[0 * n + i] = x / y;
  out[1 * n + i] = x % y;
  out[2 * n + i] = (int)((unsigned)x / (unsigned)y);
  out[3 * n + i] = (int)((unsigned)x % (unsigned)y);
  long long lx = (long long)x * 1000003LL, ly = y;
  wide[0 * n + i] = lx / ly;
  wide[1 * n + i] = lx % ly;
  wide[2 * n + i] = (long long)((unsigned long long)lx / (unsigned long long)ly);
  wide[3 * n + i] = (long long)((unsigned long long)lx % (unsigned long long)ly);
}
"""


def _int_arith_args(rng, n=96):
    return [i32_mix(rng, n), i32_mix(rng, n), i32_mix(rng, n), np.zeros(16 * n, np.int32),
            np.zeros(8 * n, np.int64), np.int32(n)]


def _int_div_args(rng, n=96):
    a, b = i32_mix(rng, n), i32_mix(rng, n)
    b[b == 0] = 3                                   # division by zero is its own hazard test
    b[(a == -2**31) & (b == -1)] = 5                # INT_MIN / -1 overflows: undefined in C
    b[:4] = [1, -1, 2**31 - 1, -2**31]
    a[:4] = [-2**31, -7, -2**31, 5]
    return [a, b, np.zeros(4 * n, np.int32), np.zeros(4 * n, np.int64), np.int32(n)]


case(name="int_arith", source=INT_SRC, kernel="int_arith", grid=(3,), block=(32,), make=_int_arith_args)
case(name="int_div", source=INT_SRC, kernel="int_div", grid=(2,), block=(64,), make=_int_div_args)

# shifts and bits ----------------------------------------------------------------------------------

BITS_SRC = r"""
// PTX's own shifts and bit-field instructions (C leaves shifts past the width undefined)
#define ASM(T, name, args, text, ...) \
  __device__ __forceinline__ T name args { T r; asm(text : __VA_ARGS__); return r; }
ASM(unsigned, shl32, (unsigned a, unsigned s), "shl.b32 %0, %1, %2;", "=r"(r) : "r"(a), "r"(s))
ASM(unsigned, shr32, (unsigned a, unsigned s), "shr.u32 %0, %1, %2;", "=r"(r) : "r"(a), "r"(s))
ASM(int, sar32, (int a, unsigned s), "shr.s32 %0, %1, %2;", "=r"(r) : "r"(a), "r"(s))
ASM(unsigned long long, shl64, (unsigned long long a, unsigned s), "shl.b64 %0, %1, %2;", "=l"(r) : "l"(a), "r"(s))
ASM(long long, sar64, (long long a, unsigned s), "shr.s64 %0, %1, %2;", "=l"(r) : "l"(a), "r"(s))
ASM(unsigned, bfe_u, (unsigned a, unsigned p, unsigned l), "bfe.u32 %0, %1, %2, %3;",
    "=r"(r) : "r"(a), "r"(p), "r"(l))
ASM(int, bfe_s, (int a, unsigned p, unsigned l), "bfe.s32 %0, %1, %2, %3;", "=r"(r) : "r"(a), "r"(p), "r"(l))
ASM(unsigned, bfi, (unsigned f, unsigned b, unsigned p, unsigned l), "bfi.b32 %0, %1, %2, %3, %4;",
    "=r"(r) : "r"(f), "r"(b), "r"(p), "r"(l))

extern "C" __global__ void bits(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out,
                                unsigned long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i], k = s[i], c = k & 0xff;   // c: a shift count, 0..69 or 255
  unsigned long long lx = ((unsigned long long)x << 32) | y;
  out[0 * n + i] = shl32(x, c);
  out[1 * n + i] = shr32(x, c);
  out[2 * n + i] = (unsigned)sar32((int)x, c);
  out[3 * n + i] = x << (k & 31);                     // C shifts: counts below the width
  out[4 * n + i] = (unsigned)((int)x >> (k & 31));
  out[5 * n + i] = __funnelshift_l(x, y, c);          // wraps the count (mod 32)
  out[6 * n + i] = __funnelshift_lc(x, y, c);         // clamps the count to 32
  out[7 * n + i] = __funnelshift_r(x, y, c);
  out[8 * n + i] = __funnelshift_rc(x, y, c);
  out[9 * n + i] = __popc(x);
  out[10 * n + i] = __clz((int)x);
  out[11 * n + i] = __brev(x);
  out[12 * n + i] = __ffs((int)x);
  out[13 * n + i] = __byte_perm(x, y, k);
  out[14 * n + i] = bfe_u(x, k & 0xff, (k >> 8) & 0xff);
  out[15 * n + i] = (unsigned)bfe_s((int)x, k & 0xff, (k >> 8) & 0xff);
  out[16 * n + i] = bfi(x, y, k & 0xff, (k >> 8) & 0xff);
  out[17 * n + i] = (x >> (k & 31)) & ((1u << ((k >> 8) & 15)) - 1u);   // a C bit-field extraction
  out[18 * n + i] = x & y;
  out[19 * n + i] = x | y;
  out[20 * n + i] = x ^ y;
  out[21 * n + i] = ~x;
  out[22 * n + i] = (x & ~y) | (~x & k);            // a lop3 candidate
  out[23 * n + i] = __popcll(lx);
  out[24 * n + i] = __clzll((long long)lx);
  out[25 * n + i] = __ffsll((long long)lx);
  wide[0 * n + i] = shl64(lx, c);
  wide[1 * n + i] = (unsigned long long)sar64((long long)lx, c);
  wide[2 * n + i] = __brevll(lx);
  wide[3 * n + i] = lx >> (k & 63);
}
"""


def _bits_args(rng, n=96):
    a = u32(i32_mix(rng, n))
    b = u32(i32_mix(rng, n))
    counts = rng.integers(0, 70, n).astype(np.uint32)
    counts[:8] = [0, 1, 31, 32, 33, 63, 64, 255]
    fields = rng.integers(0, 40, n).astype(np.uint32)      # bfe/bfi lengths, some past the width
    fields[:8] = [0, 1, 32, 31, 33, 8, 0, 255]
    k = counts | (fields << np.uint32(8)) | (rng.integers(0, 2**16, n).astype(np.uint32) << np.uint32(16))
    a[:6] = [0, 0xFFFFFFFF, 0x80000000, 1, 0x7FFFFFFF, 0x00010000]
    return [a, b, k, np.zeros(26 * n, np.uint32), np.zeros(4 * n, np.uint64), np.int32(n)]


case(name="bits", source=BITS_SRC, kernel="bits", grid=(3,), block=(32,), make=_bits_args)

# f32 rounding modes ----------------------------------------------------------------------------------

F32_OPS = ("add", "sub", "mul", "fma", "div", "sqrt", "rcp")
F32_SRC = r"""
#define ALL4(op, ...) op##_rn(__VA_ARGS__), op##_rz(__VA_ARGS__), op##_rd(__VA_ARGS__), op##_ru(__VA_ARGS__)
extern "C" __global__ void f32_round(const float* a, const float* b, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  float r[28] = {ALL4(__fadd, x, y), ALL4(__fsub, x, y), ALL4(__fmul, x, y), ALL4(__fmaf, x, y, z),
                 ALL4(__fdiv, x, y), ALL4(__fsqrt, x), ALL4(__frcp, x)};
  for (int k = 0; k < 28; ++k) out[k * n + i] = r[k];
}

extern "C" __global__ void f32_plain(const float* a, const float* b, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  out[0 * n + i] = x + y;
  out[1 * n + i] = x - y;
  out[2 * n + i] = x * y;
  out[3 * n + i] = fmaf(x, y, z);
  out[4 * n + i] = x / y;
  out[5 * n + i] = sqrtf(x);
  out[6 * n + i] = fminf(x, y);
  out[7 * n + i] = fmaxf(x, y);
  out[8 * n + i] = fabsf(x);
  out[9 * n + i] = -x;
  out[10 * n + i] = copysignf(x, y);
  out[11 * n + i] = __saturatef(x);
  out[12 * n + i] = x * z + y;                       // contracted to fma (-fmad=true, nvcc's default;
                                                     // x * y would reuse out[2]'s product instead)
}
"""


def _f32_args(rng, n=96, outs=28):
    a, b, c = f32_mix(rng, n), f32_mix(rng, n), f32_mix(rng, n)
    # cancellation and ties: c close to -a*b, halfway sums
    k = n // 8
    with np.errstate(over="ignore", invalid="ignore"):     # products past the range, signalling NaNs
        c[:k] = -(a[:k].astype(np.float64) * b[:k].astype(np.float64)).astype(np.float32)
    a[k:2 * k] = np.float32(1.0)
    b[k:2 * k] = np.ldexp(np.float32(1.0), -24).astype(np.float32) * rng.choice([1, 3, -1, -3], k).astype(np.float32)
    # products past float32's range meeting an infinity or cancelling back into range
    a[2 * k:2 * k + 3] = [3e38, 3e38, 3e38]
    b[2 * k:2 * k + 3] = [3e38, -2.0, 2.0]
    c[2 * k:2 * k + 3] = [-np.inf, 3e38, -3e38]
    return [a, b, c, _nan_f32(outs * n), np.int32(n)]


case(name="f32_round", source=F32_SRC, kernel="f32_round", grid=(3,), block=(32,), make=_f32_args)
case(name="f32_plain", source=F32_SRC, kernel="f32_plain", grid=(3,), block=(32,),
     make=lambda rng: _f32_args(rng, outs=13))

MATH_SRC = r"""
extern "C" __global__ void math_approx(const float* a, float* exact, float* approx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  exact[0 * n + i] = rintf(x);
  exact[1 * n + i] = floorf(x);
  exact[2 * n + i] = ceilf(x);
  exact[3 * n + i] = truncf(x);
  exact[4 * n + i] = fmodf(x, 0.75f);
  approx[0 * n + i] = __expf(x);                      // ex2.approx
  approx[1 * n + i] = __sinf(x);                      // sin.approx
  approx[2 * n + i] = __logf(fabsf(x) + 1.0f);        // lg2.approx
  approx[3 * n + i] = rsqrtf(fabsf(x) + 1.0f);        // rsqrt.approx
  approx[4 * n + i] = __fdividef(x, 3.0f);            // div.full
  approx[5 * n + i] = expf(x);                        // a sequence around ex2.approx
}
"""


def _math_args(rng, n=96):
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[:6] = [0.0, -0.0, 0.5, -2.5, 3.5, 1e-3]
    return [x, _nan_f32(5 * n), _nan_f32(6 * n), np.int32(n)]


case(name="math_approx", source=MATH_SRC, kernel="math_approx", grid=(3,), block=(32,), make=_math_args,
     approximate=(2,))

# conversions ------------------------------------------------------------------------------------------

CONV_SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define ALL4(op, x) op##_rn(x), op##_rz(x), op##_rd(x), op##_ru(x)
extern "C" __global__ void f2i(const float* a, const double* d, int* oi, unsigned* ou, long long* oll,
                               unsigned long long* oull, int* ocast, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  double y = d[i];
  int ri[8] = {ALL4(__float2int, x), ALL4(__double2int, y)};
  unsigned ru[8] = {ALL4(__float2uint, x), ALL4(__double2uint, y)};
  long long rl[8] = {ALL4(__float2ll, x), ALL4(__double2ll, y)};
  unsigned long long rul[8] = {ALL4(__float2ull, x), ALL4(__double2ull, y)};
  for (int k = 0; k < 8; ++k) {
    oi[k * n + i] = ri[k]; ou[k * n + i] = ru[k]; oll[k * n + i] = rl[k]; oull[k * n + i] = rul[k];
  }
  ocast[0 * n + i] = (int)x;                          // cvt.rzi.s32.f32
  ocast[1 * n + i] = (int)rintf(x);
  ocast[2 * n + i] = (int)floorf(x);
  ocast[3 * n + i] = (int)ceilf(x);
}

extern "C" __global__ void i2f(const int* a, const long long* b, float* of, double* od, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i];
  long long y = b[i];
  float r[16] = {ALL4(__int2float, x), ALL4(__uint2float, (unsigned)x), ALL4(__ll2float, y),
                 ALL4(__ull2float, (unsigned long long)y)};
  for (int k = 0; k < 16; ++k) of[k * n + i] = r[k];
  double q[6] = {__ll2double_rn(y), __ll2double_rz(y), __ll2double_rd(y), __ll2double_ru(y),
                 (double)x, (double)(unsigned long long)y};
  for (int k = 0; k < 6; ++k) od[k * n + i] = q[k];
}

extern "C" __global__ void f_narrow(const float* a, const double* d, float* of, unsigned short* oh, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i];
  double y = d[i];
  float r[4] = {ALL4(__double2float, y)};
  for (int k = 0; k < 4; ++k) of[k * n + i] = r[k];
  __half h[4] = {ALL4(__float2half, x)};
  __nv_bfloat16 bh[4] = {ALL4(__float2bfloat16, x)};
  for (int k = 0; k < 4; ++k) {
    oh[k * n + i] = __half_as_ushort(h[k]);
    oh[(4 + k) * n + i] = __bfloat16_as_ushort(bh[k]);
  }
  oh[8 * n + i] = __half_as_ushort(__double2half(y));
  oh[9 * n + i] = __bfloat16_as_ushort(__double2bfloat16(y));
  of[4 * n + i] = __half2float(__ushort_as_half((unsigned short)(__float_as_uint(x) & 0xffff)));
  of[5 * n + i] = __bfloat162float(__ushort_as_bfloat16((unsigned short)(__float_as_uint(x) & 0xffff)));
  of[6 * n + i] = (float)y;
}
"""

F2I_EDGES = np.array([0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, -1.5, 3.5, 0.49999997, 2147483520.0, 2147483648.0,
                      -2147483648.0, -2147483904.0, 4294967040.0, 4294967296.0, -1.0, 1e20, -1e20, 9.2233720e18,
                      1.8446744e19, np.inf, -np.inf, np.nan], np.float64)


def _f2i_args(rng, n=96):
    x = np.concatenate([F2I_EDGES, (rng.standard_normal(n - len(F2I_EDGES)) *
                                    10.0 ** rng.integers(0, 20, n - len(F2I_EDGES)))]).astype(np.float32)
    d = np.concatenate([F2I_EDGES, [2147483647.5, -2147483648.5, 2147483646.5, 4294967295.5],
                        rng.standard_normal(n - len(F2I_EDGES) - 4) * 10.0 ** rng.integers(0, 20, n - len(F2I_EDGES) - 4)])
    rng.shuffle(x)
    rng.shuffle(d)
    return [x, d, np.zeros(8 * n, np.int32), np.zeros(8 * n, np.uint32), np.zeros(8 * n, np.int64),
            np.zeros(8 * n, np.uint64), np.zeros(4 * n, np.int32), np.int32(n)]


def _i2f_args(rng, n=96):
    a = i32_mix(rng, n)
    b = rng.integers(-2**63, 2**63, n, dtype=np.int64)
    b[:10] = [0, 1, -1, 2**63 - 1, -2**63, 2**53 + 1, -(2**53 + 1), 2**24 + 1, 2**62 + 2**38 + 1, 2**40 + 2**16]
    # values that fall exactly between two floats, and just off
    b[10:20] = (rng.integers(2**24, 2**30, 10) * 2 + 1) << rng.integers(0, 30, 10)
    return [a, b, _nan_f32(16 * n), np.full(6 * n, np.nan), np.int32(n)]


def _narrow_args(rng, n=96):
    x = f32_mix(rng, n)
    # values near the f16 range's ends, halfway cases of f16 and bf16
    x[:12] = [65504.0, 65519.99, 65520.0, -65520.0, 6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08,
              1.0009765625 + 2**-11, 1.00390625, 1.0 + 2**-8 + 2**-20, 3.3895314e38]
    d = rng.standard_normal(n) * 10.0 ** rng.integers(-45, 40, n)
    d[:8] = [1.0 + 2**-24, 1.0 + 2**-24 + 2**-50, -(1.0 + 2**-24), 3.4028235677973366e38, 3.4028236e38 * 1.0000001,
             1e-46, -7e-46, np.nan]
    return [x, d, _nan_f32(7 * n), np.zeros(10 * n, np.uint16), np.int32(n)]


case(name="f2i", source=CONV_SRC, kernel="f2i", grid=(3,), block=(32,), make=_f2i_args)
case(name="i2f", source=CONV_SRC, kernel="i2f", grid=(3,), block=(32,), make=_i2f_args)
case(name="f_narrow", source=CONV_SRC, kernel="f_narrow", grid=(3,), block=(32,), make=_narrow_args)

# half precision ---------------------------------------------------------------------------------------

HALF_SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_ops(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                    unsigned short* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = __ushort_as_half(a[i]), y = __ushort_as_half(b[i]), z = __ushort_as_half(c[i]);
  __half r[8] = {__hadd(x, y), __hsub(x, y), __hmul(x, y), __hfma(x, y, z), __hmin(x, y), __hmax(x, y),
                 __hneg(x), __habs(x)};
  for (int k = 0; k < 8; ++k) out[k * n + i] = __half_as_ushort(r[k]);
}

extern "C" __global__ void bf16_ops(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                    unsigned short* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat16 x = __ushort_as_bfloat16(a[i]), y = __ushort_as_bfloat16(b[i]), z = __ushort_as_bfloat16(c[i]);
#if __CUDA_ARCH__ >= 800
  __nv_bfloat16 q[4] = {__hadd(x, y), __hsub(x, y), __hmul(x, y), __hfma(x, y, z)};
#else  // sm_75: cuda_bf16.h has no bf16 arithmetic there; through float32, rounded once
  __nv_bfloat16 q[4] = {__float2bfloat16_rn(__bfloat162float(x) + __bfloat162float(y)),
                        __float2bfloat16_rn(__bfloat162float(x) - __bfloat162float(y)),
                        __float2bfloat16_rn(__bfloat162float(x) * __bfloat162float(y)),
                        __float2bfloat16_rn(__fmaf_rn(__bfloat162float(x), __bfloat162float(y), __bfloat162float(z)))};
#endif
  for (int k = 0; k < 4; ++k) out[k * n + i] = __bfloat16_as_ushort(q[k]);
}

extern "C" __global__ void half2_ops(const __half2* a, const __half2* b, const __half2* c, __half2* out,
                                     float2* f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = a[i], y = b[i], z = c[i];
  out[0 * n + i] = __hadd2(x, y);
  out[1 * n + i] = __hmul2(x, y);
  out[2 * n + i] = __hfma2(x, y, z);
  out[3 * n + i] = __hsub2(x, y);
  out[4 * n + i] = __floats2half2_rn(__low2float(x) * 3.0f, __high2float(y));
  f[i] = __half22float2(x);
}
"""


HALF_CMP_SRC = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_compare(const unsigned short* a, const unsigned short* b, int* out,
                                        unsigned* packed, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = __ushort_as_half(a[i]), y = __ushort_as_half(b[i]);
  out[i] = __heq(x, y) | __hne(x, y) << 1 | __hlt(x, y) << 2 | __hle(x, y) << 3 | __hgt(x, y) << 4
         | __hge(x, y) << 5 | __hequ(x, y) << 6 | __hneu(x, y) << 7 | __hltu(x, y) << 8 | __hgeu(x, y) << 9
         | __hisnan(x) << 10 | (x < y) << 11 | (x == y) << 12;
  if ((i & 1) == 0) {                                    // the pair (a[i], a[i + 1]) as one half2
    __half2 p = __halves2half2(x, __ushort_as_half(a[i + 1])), q = __halves2half2(y, __ushort_as_half(b[i + 1]));
    __half2 r = __hlt2(p, q);                            // 1.0 / 0.0 per half
    packed[i] = __half_as_ushort(__low2half(r)) | (unsigned)__half_as_ushort(__high2half(r)) << 16;
    packed[i + 1] = __hblt2(p, q) | __hbeq2(p, q) << 1 | __hbgtu2(p, q) << 2;
  }
}
"""


def _half_cmp_args(rng, n=96):
    a, b = f16_mix(rng, n), f16_mix(rng, n)
    b[: n // 4] = a[: n // 4]
    return [a, b, np.zeros(n, np.int32), np.zeros(n, np.uint32), np.int32(n)]


def f16_mix(rng, n: int) -> np.ndarray:
    """uint16 bits of n halves: random normals, random bit patterns (NaN and inf among them), edges."""
    edges = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF,
                      0x7C00, 0xFC00, 0x7E00, 0x3800, 0x4100], np.uint16)
    k = n // 3
    out = np.concatenate([rng.standard_normal(k).astype(np.float16).view(np.uint16),
                          rng.integers(0, 2**16, k).astype(np.uint16), rng.choice(edges, n - 2 * k)])
    rng.shuffle(out)
    return out


def _half_args(rng, n=96):
    return [f16_mix(rng, n), f16_mix(rng, n), f16_mix(rng, n), np.zeros(8 * n, np.uint16), np.int32(n)]


def bf16_mix(rng, n: int) -> np.ndarray:
    """uint16 bits of n bfloat16s: random normals, random bit patterns, edges."""
    edges = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x3F81, 0x7F7F, 0xFF7F,
                      0x7F80, 0xFF80, 0x7FC0, 0x3F00, 0x4040], np.uint16)
    k = n // 3
    out = np.concatenate([(rng.standard_normal(k).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16),
                          rng.integers(0, 2**16, k).astype(np.uint16), rng.choice(edges, n - 2 * k)])
    rng.shuffle(out)
    return out


def _bf16_args(rng, n=96):
    return [bf16_mix(rng, n), bf16_mix(rng, n), bf16_mix(rng, n), np.zeros(4 * n, np.uint16), np.int32(n)]


def _half2_args(rng, n=64):
    return [f16_mix(rng, 2 * n), f16_mix(rng, 2 * n), f16_mix(rng, 2 * n), np.zeros(2 * 5 * n, np.uint16),
            _nan_f32(2 * n), np.int32(n)]


case(name="half_compare", source=HALF_CMP_SRC, kernel="half_compare", grid=(3,), block=(32,), make=_half_cmp_args)
case(name="half_ops", source=HALF_SRC, kernel="half_ops", grid=(3,), block=(32,), make=_half_args)
case(name="bf16_ops", source=HALF_SRC, kernel="bf16_ops", grid=(3,), block=(32,), make=_bf16_args)
case(name="half2_ops", source=HALF_SRC, kernel="half2_ops", grid=(2,), block=(32,), make=_half2_args)

# f64 and comparisons -------------------------------------------------------------------------------------

F64_SRC = r"""
extern "C" __global__ void f64_ops(const double* a, const double* b, const double* c, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i], z = c[i];
  out[0 * n + i] = __dadd_rn(x, y);
  out[1 * n + i] = __dmul_rn(x, y);
  out[2 * n + i] = __fma_rn(x, y, z);
  out[3 * n + i] = __ddiv_rn(x, y);
  out[4 * n + i] = __dsqrt_rn(x);
  out[5 * n + i] = fmin(x, y);
  out[6 * n + i] = fmax(x, y);
  out[7 * n + i] = x - y;
  out[8 * n + i] = (double)(float)x;
}

extern "C" __global__ void compare(const float* a, const float* b, int* out, float* sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  int bits = (x == y) | (x != y) << 1 | (x < y) << 2 | (x <= y) << 3 | (x > y) << 4 | (x >= y) << 5
           | isnan(x) << 6 | isinf(x) << 7 | isfinite(x) << 8 | signbit(x) << 9 | !(x < y) << 10
           | !(x >= y) << 11;
  out[i] = bits;
  sel[0 * n + i] = x < y ? x : y;                    // selp
  sel[1 * n + i] = (x > y) ? 1.0f : -1.0f;
  sel[2 * n + i] = (x == x && y == y) ? x + y : 7.0f;
  sel[3 * n + i] = (i & 1) ? x : y;
}
"""


def _f64_args(rng, n=96):
    def mix():
        v = np.concatenate([rng.standard_normal(n // 2), rng.integers(0, 2**64, n // 4, dtype=np.uint64).view(np.float64),
                            rng.choice(np.array([0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0, np.inf, -np.inf, np.nan,
                                                 1.7976931348623157e308, 2.2250738585072014e-308, 0.5, 3.0]),
                                       n - n // 2 - n // 4)])
        rng.shuffle(v)
        return v
    a, b, c = mix(), mix(), mix()
    # fma whose product overflows float64 while the exact result is finite, or meets an infinity
    a[:4] = [1e300, 1e300, 1.7e308, -3.0]
    b[:4] = [1e300, -1e300, 2.0, 1e308]
    c[:4] = [-np.inf, np.inf, -1.7e308, 1.7e308]
    return [a, b, c, np.full(9 * n, np.nan), np.int32(n)]


def _compare_args(rng, n=96):
    a, b = f32_mix(rng, n), f32_mix(rng, n)
    b[: n // 4] = a[: n // 4]                           # equal pairs (NaN == NaN is false)
    return [a, b, np.zeros(n, np.int32), _nan_f32(4 * n), np.int32(n)]


case(name="f64_ops", source=F64_SRC, kernel="f64_ops", grid=(3,), block=(32,), make=_f64_args)
case(name="compare", source=F64_SRC, kernel="compare", grid=(3,), block=(32,), make=_compare_args)

# control flow -------------------------------------------------------------------------------------------

FLOW_SRC = r"""
__device__ __noinline__ int classify(int v, int* side) {
  // early returns from a device function that is not inlined (a .func with a call sequence)
  if (v < 0) { *side = -1; return 1; }
  if (v == 0) return 2;
  for (int k = 2; k < 12; ++k)
    if (v % k == 0) { *side = k; return 10 + k; }
  *side = 1;
  return 3;
}

__device__ __noinline__ float scaled(float x, int k) { return k > 3 ? x * (float)k : x - (float)k; }

extern "C" __global__ void flow(const int* in, const int* pick, int* out, float* fout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;                                  // early return before any work
  int v = in[i];
  int side = 0;
  int cls = classify(v, &side);                        // &side: a local through a generic pointer
  out[0 * n + i] = cls;
  out[1 * n + i] = side;
  // a loop with break / continue and a switch, nested divergence inside
  int acc = 0;
  int trips = (v & 0x7fffffff) % 37;
  for (int k = 0; k < trips; ++k) {
    if (k % 3 == 0) continue;
    if (acc > 1000) break;
    switch (k & 3) {
      case 0: acc += k; break;
      case 1: acc ^= k << 2; break;
      case 2: if (v & 1) { acc -= 1; } else { if (v & 2) acc *= 3; else acc += 5; } break;
      default: acc += 7;
    }
  }
  out[2 * n + i] = acc;
  // a local array indexed at run time (it must live in local memory)
  int buf[16];
  for (int k = 0; k < 16; ++k) buf[k] = v * (k + 1) + k;
  buf[pick[i] & 15] += 1000;
  out[3 * n + i] = buf[pick[i] >> 4 & 15] + buf[(pick[i] + v) & 15];
  fout[i] = scaled((float)(v % 100), pick[i] & 7);
  if (v & 4) return;                                   // early return after some work
  out[4 * n + i] = v >> 3;
}

extern "C" __global__ void shape(int* out, int stride) {
  // 2D and 3D blocks and grids: every thread writes its coordinates at its linear position
  int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
  int block = bx + gridDim.x * (by + gridDim.y * bz);
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int g = block * (blockDim.x * blockDim.y * blockDim.z) + t;
  int* o = out + g * stride;
  o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
  o[3] = bx; o[4] = by; o[5] = bz;
  o[6] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
  o[7] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  o[8] = lane;                                         // t % 32: lanes are numbered x fastest
}

#define TILE 16
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
  // the classic tiled transpose: 2D blocks, shared memory, __syncthreads
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[(size_t)y * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  if (x < rows && y < cols) out[(size_t)y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void dyn_shared(const float* in, float* out, int n) {
  // static and dynamic (extern) shared memory together, sized by the launch
  extern __shared__ float dyn[];
  __shared__ int count;
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (t == 0) count = 0;
  dyn[t] = i < n ? in[i] : 0.0f;
  dyn[blockDim.x + t] = (float)t;
  __syncthreads();
  atomicAdd(&count, 1);
  __syncthreads();
  if (i < n) out[i] = dyn[blockDim.x - 1 - t] + dyn[blockDim.x + (t ^ 1)] * 0.5f + (float)count;
}

extern "C" __global__ void grid_stride(float* out, unsigned long long start, unsigned long long n) {
  // 64-bit indices past 2^32 (start), a grid-stride loop
  for (unsigned long long i = start + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < start + n;
       i += (unsigned long long)blockDim.x * gridDim.x)
    out[i - start] = (float)(i >> 20) + (float)(i & 0xfffff) * 0.25f;
}
"""


def _flow_args(rng, n=100):
    v = rng.integers(-2000, 2000, n).astype(np.int32)
    v[:6] = [0, -1, 1, 2**31 - 1, -2**31, 77]
    return [v, rng.integers(0, 2**12, n).astype(np.int32), np.full(5 * n, -7, np.int32), _nan_f32(n), np.int32(n)]


case(name="flow", source=FLOW_SRC, kernel="flow", grid=(2,), block=(64,), make=_flow_args)
case(name="shape2d", source=FLOW_SRC, kernel="shape", grid=(3, 2), block=(16, 4),
     make=lambda rng: [np.full(6 * 64 * 9, -1, np.int32), np.int32(9)])
case(name="shape3d", source=FLOW_SRC, kernel="shape", grid=(2, 2, 3), block=(8, 2, 3),
     make=lambda rng: [np.full(12 * 48 * 9, -1, np.int32), np.int32(9)])
case(name="transpose", source=FLOW_SRC, kernel="transpose", grid=(3, 2), block=(16, 16),
     make=lambda rng: [rng.standard_normal(21 * 37).astype(np.float32), _nan_f32(21 * 37), np.int32(21), np.int32(37)])
case(name="dyn_shared", source=FLOW_SRC, kernel="dyn_shared", grid=(3,), block=(96,), shared_mem=2 * 96 * 4,
     make=lambda rng: [rng.standard_normal(250).astype(np.float32), _nan_f32(250), np.int32(250)])
case(name="grid_stride", source=FLOW_SRC, kernel="grid_stride", grid=(3,), block=(64,),
     make=lambda rng: [_nan_f32(1000), np.uint64(2**33 + 2**20 - 300), np.uint64(1000)])

# atomics ------------------------------------------------------------------------------------------------

ATOMIC_SRC = r"""
extern "C" __global__ void atomics(const int* v, int* counters, float* fsum, unsigned* u, unsigned long long* w,
                                   double* dsum, int* old, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __shared__ int hist[8];
  if (threadIdx.x < 8) hist[threadIdx.x] = 0;
  __syncthreads();
  if (i < n) {
  int x = v[i];
  int slot = x & 7;                                       // 8 slots: many lanes on each
  old[0 * n + i] = atomicAdd(&counters[slot], 1);         // the old values of one slot: 0, 1, 2, ...
  atomicAdd(&counters[8 + slot], x);
  atomicMax(&counters[16 + slot], x);
  atomicMin(&counters[24 + slot], x);
  atomicAnd(&counters[32 + slot], x | (1 << (i & 31)));
  atomicOr(&counters[40 + slot], 1 << (i & 31));
  atomicXor(&counters[48 + slot], x);
  old[1 * n + i] = atomicExch(&counters[56 + i], x);      // one lane per address: old values exact
  old[2 * n + i] = atomicCAS(&counters[56 + n + i], i & 1 ? i : -1, x);
  old[3 * n + i] = (int)atomicInc(&u[i & 3], 5u);
  old[4 * n + i] = (int)atomicDec(&u[4 + (i & 3)], 5u);
  atomicMax(&u[8 + slot], (unsigned)x);
  atomicMin(&u[16 + slot], (unsigned)x);
  atomicAdd(&fsum[slot], (float)(x % 64) * 0.25f);         // every partial sum exact: any order, one answer
  atomicAdd(&w[slot], (unsigned long long)(unsigned)x << 20);
  atomicAdd(&dsum[slot], (double)x * 0.5);
  old[5 * n + i] = atomicAdd(&hist[slot], 1);             // shared-memory atomics
  }
  __syncthreads();
  if (threadIdx.x < 8) atomicAdd(&counters[56 + 2 * n + threadIdx.x], hist[threadIdx.x]);
}
"""


def _atomic_args(rng, n=160):
    x = rng.integers(-2**20, 2**20, n).astype(np.int32)
    counters = np.zeros(56 + 2 * n + 8, np.int32)
    counters[16:24] = -2**31
    counters[24:32] = 2**31 - 1
    counters[32:40] = -1
    counters[56:56 + 2 * n] = rng.integers(-100, 100, 2 * n)
    counters[56 + n:56 + 2 * n:2] = -1                     # CAS succeeds where the compare is -1 (even i)
    u = np.zeros(24, np.uint32)
    u[4:8] = [0, 3, 9, 5]
    u[16:24] = 0xFFFFFFFF
    return [x, counters, np.zeros(8, np.float32), u, np.zeros(8, np.uint64), np.zeros(8, np.float64),
            np.full(6 * n, -99, np.int32), np.int32(n)]


case(name="atomics", source=ATOMIC_SRC, kernel="atomics", grid=(3,), block=(64,), make=_atomic_args)

# warp-level operations ------------------------------------------------------------------------------------

WARP_SRC = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void shuffles(const int* v, const int* sel, int* out, double* dout) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int x = v[t], s = sel[t];
  int k = 0;
#define W(expr) out[(k++) * blockDim.x * gridDim.x + t] = (expr)
  W(__shfl_sync(0xffffffff, x, s));                       // any source lane, from each lane's own s
  W(__shfl_sync(0xffffffff, x, s, 8));
  W(__shfl_sync(0xffffffff, x, s, 16));
  W(__shfl_up_sync(0xffffffff, x, 1));
  W(__shfl_up_sync(0xffffffff, x, 3, 8));
  W(__shfl_down_sync(0xffffffff, x, 5));
  W(__shfl_down_sync(0xffffffff, x, 2, 4));
  W(__shfl_xor_sync(0xffffffff, x, 1));
  W(__shfl_xor_sync(0xffffffff, x, 12, 16));              // reaches earlier groups, not later ones
  W(__shfl_xor_sync(0xffffffff, x, 9, 8));
  W(__shfl_down_sync(0xffffffff, x, s & 7, 16));          // per-lane deltas
  dout[t] = __shfl_xor_sync(0xffffffff, (double)x / 3.0, 6);   // 64 bits: two shuffles
}

extern "C" __global__ void votes(const int* v, unsigned* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int x = v[t];
  unsigned full = __ballot_sync(0xffffffff, x > 0);
  unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0;
  if (x & 1) {                                            // divergent: only the odd lanes
    unsigned m = __activemask();
    r0 = m;
    r1 = __ballot_sync(m, x > 0);
    r2 = __all_sync(m, x > -50);
    r3 = __any_sync(m, x > 90);
    if (x & 2) r4 = __activemask();                      // nested divergence
  } else {
    r0 = __activemask();
    r1 = __ballot_sync(r0, x & 4);
  }
  unsigned key = __match_any_sync(0xffffffff, x & 3);
  int pred;
  unsigned all = __match_all_sync(0xffffffff, blockIdx.x == 0 ? 7 : x, &pred);   // block 0: all equal
  out[0 * n + t] = full; out[1 * n + t] = r0; out[2 * n + t] = r1; out[3 * n + t] = r2;
  out[4 * n + t] = r3; out[5 * n + t] = r4; out[6 * n + t] = key; out[7 * n + t] = all;
  out[8 * n + t] = __all_sync(0xffffffff, x > 0) | __any_sync(0xffffffff, x > 95) << 1;
  out[9 * n + t] = pred;
}

__shared__ int stage[64];
extern "C" __global__ void syncwarp(const int* v, int* out) {
  // lanes hand values through shared memory, ordered by __syncwarp (no hazard)
  int t = threadIdx.x, lane = t & 31;
  stage[t] = v[blockIdx.x * blockDim.x + t];
  __syncwarp();
  int got = stage[(t & ~31) | ((lane + 1) & 31)];
  __syncwarp();
  stage[t] = got * 2;
  __syncwarp();
  out[blockIdx.x * blockDim.x + t] = stage[(t & ~31) | (31 - lane)] + got;
}

extern "C" __global__ void tiles(const int* v, int* out) {
  // cooperative groups: 16- and 8-lane tiles of a warp run one instruction with different masks
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
  cg::thread_block_tile<8> small = cg::tiled_partition<8>(block);
  int t = block.thread_rank(), n = block.size();
  int x = v[t];
  out[0 * n + t] = cg::reduce(tile, x, cg::plus<int>());
  out[1 * n + t] = cg::reduce(small, x, cg::greater<int>());
  out[2 * n + t] = tile.shfl_down(x, 3);
  out[3 * n + t] = small.shfl_xor(x, 5);
  out[4 * n + t] = tile.any(x > 50) | tile.all(x > -90) << 1;
  out[5 * n + t] = (int)tile.ballot(x > 0);
  out[6 * n + t] = (int)small.match_any(x & 1);
  tile.sync();
  out[7 * n + t] = tile.thread_rank() + 100 * tile.meta_group_rank();
}

extern "C" __global__ void reductions(const int* v, unsigned* out) {
#if __CUDA_ARCH__ >= 800
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int x = v[t];
  int n = blockDim.x * gridDim.x;
  out[0 * n + t] = __reduce_add_sync(0xffffffff, (unsigned)x);
  out[1 * n + t] = (unsigned)__reduce_min_sync(0xffffffff, x);
  out[2 * n + t] = (unsigned)__reduce_max_sync(0xffffffff, x);
  out[3 * n + t] = __reduce_min_sync(0xffffffff, (unsigned)x);
  out[4 * n + t] = __reduce_and_sync(0xffffffff, (unsigned)x);
  out[5 * n + t] = __reduce_or_sync(0xffffffff, (unsigned)x);
  out[6 * n + t] = __reduce_xor_sync(0xffffffff, (unsigned)x);
  if (x & 1) out[7 * n + t] = __reduce_add_sync(__activemask(), (unsigned)x);   // divergent members
#endif
}
"""


def _shuffle_args(rng, n=64):
    sel = rng.integers(0, 64, n).astype(np.int32)
    sel[:4] = [0, 31, 32, 63]
    return [rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32), sel, np.full(11 * n, -1, np.int32),
            np.full(n, np.nan)]


case(name="shuffles", source=WARP_SRC, kernel="shuffles", grid=(1,), block=(64,), make=_shuffle_args)
case(name="votes", source=WARP_SRC, kernel="votes", grid=(2,), block=(64,),
     make=lambda rng: [rng.integers(-100, 100, 128).astype(np.int32), np.zeros(10 * 128, np.uint32), np.int32(128)])
case(name="syncwarp", source=WARP_SRC, kernel="syncwarp", grid=(2,), block=(64,),
     make=lambda rng: [rng.integers(-1000, 1000, 128).astype(np.int32), np.zeros(128, np.int32)])
case(name="tiles", source=WARP_SRC, kernel="tiles", grid=(1,), block=(64,),
     make=lambda rng: [rng.integers(-100, 100, 64).astype(np.int32), np.zeros(8 * 64, np.int32)])
case(name="reductions", source=WARP_SRC, kernel="reductions", grid=(1,), block=(64,), arches=("sm_80", "sm_90"),
     make=lambda rng: [i32_mix(rng, 64), np.zeros(8 * 64, np.uint32)])

# printf and assert --------------------------------------------------------------------------------------------

PRINTF_SRC = r"""
extern "C" __global__ void say(const int* v, const float* f, const char* text, long long big, int n) {
  int t = threadIdx.x;
  if (t < n)
    printf("t=%d u=%u x=%x f=%f g=%.3e s=%s c=%c ll=%lld p=%p w=[%5d|%-4d|%08x]\n", t, (unsigned)v[t], v[t],
           f[t], (double)f[t] * 1e10, text, 'A' + t, big * t, text, v[t], t, v[t]);
}

extern "C" __global__ void checked(const int* v, int* out, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  assert(v[t] >= 0);
  out[t] = v[t] * 2;
}
"""

case(name="printf", source=PRINTF_SRC, kernel="say", grid=(1,), block=(8,),
     make=lambda rng: [rng.integers(-10**6, 10**6, 8).astype(np.int32), rng.standard_normal(8).astype(np.float32),
                       np.frombuffer(b"hello, warp\0", np.uint8).copy(), np.int64(-(2**40) - 3), np.int32(5)])
case(name="assert_ok", source=PRINTF_SRC, kernel="checked", grid=(2,), block=(40,),
     make=lambda rng: [rng.integers(0, 1000, 70).astype(np.int32), np.zeros(70, np.int32), np.int32(70)])
