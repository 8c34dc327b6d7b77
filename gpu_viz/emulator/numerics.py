"""Exact PTX arithmetic on numpy arrays: IEEE rounding of f32 / f16 / bf16 results in every
rounding mode, a correctly rounded f32 fma, conversions with PTX's saturation rules, the
canonical NaN silicon writes, and integer ops with C's truncating division.

Everything takes and returns numpy arrays (one element per lane).  Exactness rests on one fact:
a double-double (hi, lo) with hi = RN64(x) and x = hi + lo exactly decides the rounding of x to
any format with at most 26 significant bits, because that format's values and midpoints are all
float64 numbers: hi can only sit on a midpoint (or a value) of the narrow format when x is within
half a float64 ulp of it, and then the sign of lo says which side x is on.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

F32_CANONICAL_NAN = np.uint32(0x7FFFFFFF)
F16_CANONICAL_NAN = np.uint16(0x7FFF)
BF16_CANONICAL_NAN = np.uint16(0x7FFF)

RN, RZ, RM, RP = ".rn", ".rz", ".rm", ".rp"
ROUNDINGS = (RN, RZ, RM, RP)


# -- bit views ----------------------------------------------------------------------------------

def f32(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, np.uint32).view(np.float32)


def bits32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


def canon32(x: np.ndarray) -> np.ndarray:
    """``x`` (float32) with every NaN replaced by the canonical NaN 0x7fffffff silicon writes."""
    x = np.asarray(x, np.float32)
    nan = np.isnan(x)
    if nan.any():
        b = x.view(np.uint32).copy()
        b[nan] = F32_CANONICAL_NAN
        return b.view(np.float32)
    return x


def ftz32(x: np.ndarray) -> np.ndarray:
    """Flush float32 subnormals to a zero of the same sign (``.ftz``)."""
    x = np.asarray(x, np.float32)
    sub = (x != 0) & (np.abs(x) < np.float32(1.1754943508222875e-38))
    if sub.any():
        x = np.where(sub, np.copysign(np.float32(0), x), x).astype(np.float32)
    return x


# -- rounding a double-double to narrow formats ------------------------------------------------------

def two_sum(a: np.ndarray, b: np.ndarray):
    """(s, e) with s = RN64(a + b) and a + b = s + e exactly (float64 arrays)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


def _narrow(hi: np.ndarray, dtype) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return hi.astype(dtype)


def round_dd(hi: np.ndarray, lo: np.ndarray, dtype, mode: str = RN) -> np.ndarray:
    """Round the exact value hi + lo (float64 arrays, hi = RN64 of it) to ``dtype`` (np.float32 or
    np.float16) in rounding ``mode``."""
    hi = np.asarray(hi, np.float64)
    lo = np.asarray(lo, np.float64)
    r = _narrow(hi, dtype)
    r64 = r.astype(np.float64)
    if mode == RN:
        # hi on a midpoint of two dtype values, and lo breaks the tie
        with np.errstate(invalid="ignore", over="ignore"):
            other = np.nextafter(r, np.where(hi > r64, np.inf, -np.inf).astype(dtype))
            mid = (r64 + other.astype(np.float64)) / 2
        tie = (hi == mid) & (lo != 0) & np.isfinite(hi)
        if tie.any():
            up = np.nextafter(r, np.where(lo > 0, np.inf, -np.inf).astype(dtype))
            # the nearest is toward lo's side: the neighbour of hi in that direction
            lower, upper = np.minimum(r, other), np.maximum(r, other)
            pick = np.where(lo > 0, upper, lower)
            r = np.where(tie, pick, r).astype(dtype)
            del up
        return r
    # directed: first round hi itself in the mode, then lo moves an exact hi one step
    target = {RZ: None, RM: -np.inf, RP: np.inf}[mode]
    with np.errstate(invalid="ignore", over="ignore"):
        if mode == RZ:
            too_far = np.abs(r64) > np.abs(hi)
            r = np.where(too_far, np.nextafter(r, np.zeros_like(r)), r)
        elif mode == RM:
            r = np.where(r64 > hi, np.nextafter(r, np.full_like(r, -np.inf)), r)
        else:
            r = np.where(r64 < hi, np.nextafter(r, np.full_like(r, np.inf)), r)
        r = r.astype(dtype)
        exact_hi = r.astype(np.float64) == hi
        if mode == RZ:
            step = exact_hi & (lo != 0) & (np.sign(lo) == -np.sign(hi)) & (hi != 0)
            r = np.where(step, np.nextafter(r, np.zeros_like(r)), r)
        elif mode == RM:
            r = np.where(exact_hi & (lo < 0), np.nextafter(r, np.full_like(r, -np.inf)), r)
        else:
            r = np.where(exact_hi & (lo > 0), np.nextafter(r, np.full_like(r, np.inf)), r)
        # overflow in a directed mode: RZ and the mode away from the infinity stop at the largest finite
        big = np.finfo(dtype).max
        if mode == RZ:
            r = np.where(np.isinf(r) & np.isfinite(hi), np.copysign(big, hi), r)
        elif mode == RM:
            r = np.where(np.isposinf(r) & np.isfinite(hi), big, r)
        else:
            r = np.where(np.isneginf(r) & np.isfinite(hi), -big, r)
    del target
    return r.astype(dtype)


def f64_to_bf16_bits(x: np.ndarray, mode: str = RN) -> np.ndarray:
    """float64 -> bf16 bits (uint16), correctly rounded: float64 rounded to float32 by round-to-odd
    (no double-rounding error since 24 >= 8 + 2), then float32 to bf16."""
    x = np.asarray(x, np.float64)
    r = round_dd(x, np.zeros_like(x), np.float32, RZ)
    inexact = (r.astype(np.float64) != x) & np.isfinite(x)
    b = r.view(np.uint32).copy()
    b[inexact] |= np.uint32(1)          # round to odd: a sticky bit for the second rounding
    return f32_bits_to_bf16(b, mode)


def f32_bits_to_bf16(b: np.ndarray, mode: str = RN) -> np.ndarray:
    """float32 bits -> bf16 bits in ``mode`` (NaN -> canonical)."""
    b = np.asarray(b, np.uint32)
    nan = np.isnan(b.view(np.float32))
    sign = b >> np.uint32(31)
    low = b & np.uint32(0xFFFF)
    hi16 = b >> np.uint32(16)
    if mode == RN:
        lsb = hi16 & np.uint32(1)
        out = (b + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    elif mode == RZ:
        out = hi16
    elif mode == RM:
        out = np.where((low != 0) & (sign == 1), hi16 + np.uint32(1), hi16)
    else:
        out = np.where((low != 0) & (sign == 0), hi16 + np.uint32(1), hi16)
    out = np.where(nan, np.uint32(BF16_CANONICAL_NAN), out)
    return out.astype(np.uint16)


def bf16_bits_to_f32(b: np.ndarray) -> np.ndarray:
    return (np.asarray(b, np.uint32) << np.uint32(16)).view(np.float32)


def f16_from_bits(b: np.ndarray) -> np.ndarray:
    return np.asarray(b, np.uint16).view(np.float16)


def to_f16_bits(x: np.ndarray, mode: str = RN) -> np.ndarray:
    """float64/float32 -> f16 bits, correctly rounded in ``mode``, canonical NaN."""
    x64 = np.asarray(x, np.float64)
    r = round_dd(x64, np.zeros_like(x64), np.float16, mode)
    b = r.view(np.uint16).copy()
    b[np.isnan(x64)] = F16_CANONICAL_NAN
    return b


# -- f32 arithmetic -----------------------------------------------------------------------------

def add_f32(a, b, mode=RN):
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if mode == RN:
        with np.errstate(all="ignore"):
            return canon32((np.asarray(a, np.float32) + np.asarray(b, np.float32)).astype(np.float32))
    hi, lo = two_sum(a64, b64)
    r = round_dd(hi, lo, np.float32, mode)
    if mode == RM:
        # IEEE: an exact zero sum is -0 when rounding toward -inf (x + -x, -0 + +0), unless both
        # terms are +0; float64's own sum (taken for hi) rounds to nearest and gives +0 there
        zero = (hi == 0) & (lo == 0) & ~(np.signbit(a64) & np.signbit(b64))
        both_pos = ~np.signbit(a64) & ~np.signbit(b64) & (a64 == 0) & (b64 == 0)
        r = np.where(zero & ~both_pos, np.float32(-0.0), r).astype(np.float32)
    return canon32(r)


def mul_f32(a, b, mode=RN):
    with np.errstate(all="ignore"):
        if mode == RN:
            return canon32((np.asarray(a, np.float32) * np.asarray(b, np.float32)).astype(np.float32))
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)   # exact: 24 + 24 bits
    return canon32(round_dd(p, np.zeros_like(p), np.float32, mode))


def fma_f32(a, b, c, mode=RN):
    """round(a * b + c) once, in ``mode`` (a, b, c float32)."""
    a64, b64, c64 = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        p = a64 * b64                           # exact
        hi, lo = two_sum(p, c64)
        special = ~np.isfinite(hi) | ~np.isfinite(p)
    r = round_dd(hi, lo, np.float32, mode)
    if special.any():
        with np.errstate(all="ignore"):
            r = np.where(special, (p + c64).astype(np.float32), r)
    # an exact zero result: IEEE gives +0 in RN/RZ/RP and -0 in RM unless both terms are -0
    zero = (hi == 0) & (lo == 0) & ~special
    if zero.any():
        both_neg = np.signbit(p) & np.signbit(c64)
        neg = both_neg | ((mode == RM) & (np.signbit(p) != np.signbit(c64)))
        r = np.where(zero, np.where(neg, np.float32(-0.0), np.float32(0.0)), r)
    return canon32(np.asarray(r, np.float32))


def div_f32(a, b, mode=RN):
    if mode != RN:
        # exact rationals for finite, non-zero operands; the rest (zeros, infinities, NaN) are exact
        # in float32 itself, and keep the sign of a zero quotient (-0 / y is -0 in every mode)
        q = np.array([_frac_round(Fraction(float(x)) / Fraction(float(y))
                                  if x != 0 and y != 0 and np.isfinite(x) and np.isfinite(y) else None,
                                  float(x), float(y), mode) for x, y in zip(np.ravel(a), np.ravel(b))],
                     np.float32)
        return canon32(q)
    with np.errstate(all="ignore"):
        return canon32((np.asarray(a, np.float32) / np.asarray(b, np.float32)).astype(np.float32))


def _frac_round(q, x, y, mode):
    if q is None:
        with np.errstate(all="ignore"):
            return np.float32(np.float32(x) / np.float32(y))
    hi = float(q)
    lo = float(q - Fraction(hi))
    return round_dd(np.array([hi]), np.array([lo]), np.float32, mode)[0]


def sqrt_f32(a, mode=RN):
    with np.errstate(all="ignore"):
        if mode == RN:
            return canon32(np.sqrt(np.asarray(a, np.float32)).astype(np.float32))
        a64 = np.asarray(a, np.float64)
        s = np.sqrt(a64)
        # residual sign: s*s - a, exact through a two-product of float64 (Dekker split)
        hi, lo = _two_prod(s, s)
        res = (hi - a64) + lo
    return canon32(round_dd(s, np.where(np.isfinite(res), -res / (2 * np.where(s == 0, 1, s)), 0.0),
                            np.float32, mode))


def _two_prod(a, b):
    split = 134217729.0
    with np.errstate(all="ignore"):
        p = a * b
        ca = split * a
        ah = ca - (ca - a)
        al = a - ah
        cb = split * b
        bh = cb - (cb - b)
        bl = b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def approx_f32(fn, a, ftz: bool):
    """An approximate instruction (``ex2.approx``, ``rsqrt.approx``, ...): computed in float64 and
    rounded to float32.  Silicon's MUFU results are within PTX's stated error of this, not equal."""
    a = np.asarray(a, np.float32)
    if ftz:
        a = ftz32(a)
    with np.errstate(all="ignore"):
        r = fn(a.astype(np.float64)).astype(np.float32)
    r = canon32(r)
    return ftz32(r) if ftz else r


# -- f64 ----------------------------------------------------------------------------------------

def fma_f64(a, b, c):
    """Correctly rounded a * b + c in float64 (exact rationals per lane)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    out = np.empty(np.broadcast(a, b, c).shape, np.float64)
    fa, fb, fc = np.broadcast_arrays(a, b, c)
    for i, (x, y, z) in enumerate(zip(fa.ravel(), fb.ravel(), fc.ravel())):
        if np.isfinite(x) and np.isfinite(y) and np.isfinite(z):
            v = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
            try:
                out.flat[i] = float(v) if v != 0 else (np.float64(x) * np.float64(y) + np.float64(z))
            except OverflowError:          # past the largest double: round-to-nearest gives inf
                out.flat[i] = np.inf if v > 0 else -np.inf
        elif np.isfinite(x) and np.isfinite(y) and not np.isnan(z):
            out.flat[i] = z                    # finite x * y (exact, even past float64's range) + inf
        else:
            with np.errstate(all="ignore"):
                out.flat[i] = x * y + z
    return out


# -- integers -----------------------------------------------------------------------------------

def idiv(a: np.ndarray, b: np.ndarray, signed: bool):
    """C division (truncating) and remainder; division by zero gives all ones (u) / -1 (s) and the
    dividend as remainder, and the caller reports it."""
    a = np.asarray(a)
    b = np.asarray(b)
    zero = b == 0
    bb = np.where(zero, 1, b).astype(a.dtype)
    if signed:
        with np.errstate(all="ignore"):
            q = np.abs(a.astype(np.int64) if a.dtype.itemsize < 8 else a) // np.abs(bb.astype(np.int64) if bb.dtype.itemsize < 8 else bb)
            neg = (a < 0) != (bb < 0)
            q = np.where(neg, -q, q).astype(a.dtype)
            r = (a - q * bb).astype(a.dtype)
    else:
        q = (a // bb).astype(a.dtype)
        r = (a % bb).astype(a.dtype)
    allones = np.array(-1).astype(a.dtype) if signed else np.array(np.iinfo(a.dtype).max, a.dtype)
    q = np.where(zero, allones, q).astype(a.dtype)
    r = np.where(zero, a, r).astype(a.dtype)
    return q, r, zero


def mul_hi(a: np.ndarray, b: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """The high ``bits`` of the 2*bits-bit product."""
    if bits <= 32:
        wide = np.int64 if signed else np.uint64
        p = a.astype(wide) * b.astype(wide)
        return (p >> bits).astype(a.dtype)
    # 64 x 64: Python integers, per lane
    out = [((int(x) * int(y)) >> 64) & ((1 << 64) - 1) for x, y in zip(np.ravel(a), np.ravel(b))]
    r = np.array(out, np.uint64)
    return r.view(np.int64) if signed else r


def float_to_int(x: np.ndarray, dtype, mode: str, source: str = "f32") -> np.ndarray:
    """PTX ``cvt.{rni,rzi,rmi,rpi}.<int>.<float>``: rounded, saturated to the integer's range.  NaN
    (measured on an H200, every mode): 0 from an f32 (or narrower) source into a 32-bit integer; else
    the integer with only its top bit set (0x80000000, 0x8000000000000000), signed or not."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = {".rni": np.rint, ".rzi": np.trunc, ".rmi": np.floor, ".rpi": np.ceil}[mode](x)
    info = np.iinfo(dtype)
    nan = np.isnan(r)
    if nan.any() and not (source != "f64" and info.bits == 32):
        top = np.array(1 << (info.bits - 1), dtype=f"u{info.bits // 8}").view(dtype)
        r = np.where(nan, 0, r)
        out = float_to_int(r, dtype, mode, source)
        out[nan] = top
        return out
    r = np.where(nan, 0, r)
    lo, hi = float(info.min), float(info.max)
    out = np.empty(r.shape, dtype)
    small = r <= lo
    big = r >= hi
    mid = ~small & ~big
    out[small] = info.min
    out[big] = info.max
    out[mid] = r[mid].astype(dtype)
    return out


def int_to_float(x: np.ndarray, dtype, mode: str) -> np.ndarray:
    """PTX ``cvt.{rn,rz,rm,rp}.<float>.<int>``: correctly rounded."""
    x = np.asarray(x)
    if dtype == np.float64 and x.dtype.itemsize < 8:
        return x.astype(np.float64)
    if x.dtype.itemsize == 8:
        hi = x.astype(np.float64)
        # the part of x that float64 lost, exact: x - int(hi) fits a float64 when |x| < 2^64
        lo = np.array([float(int(v) - int(h)) if np.isfinite(h) else 0.0 for v, h in zip(x.ravel(), hi.ravel())],
                      np.float64).reshape(x.shape) if x.size else np.zeros(0)
    else:
        hi, lo = x.astype(np.float64), np.zeros(x.shape)
    if dtype == np.float64:
        if mode == RN:
            return hi
        return np.array([_round_int_f64(int(v), mode) for v in x.ravel()], np.float64).reshape(x.shape)
    return round_dd(hi, lo, dtype, mode)


def _round_int_f64(v: int, mode: str) -> float:
    f = float(v)
    if int(f) == v:
        return f
    lower = f if int(f) < v else float(np.nextafter(f, -np.inf))
    upper = float(np.nextafter(lower, np.inf))
    if mode == RZ:
        return lower if v > 0 else upper
    return lower if mode == RM else upper
