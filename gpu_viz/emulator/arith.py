"""Arithmetic (PTX ISA: integer, extended-precision integer and floating-point arithmetic):
add / sub (and the carry chain add.cc, addc, sub.cc, subc), mul (.lo, .hi, .wide), mad, fma,
mul24 / mad24, sad, dp4a / dp2a, div / rem, min / max, neg / abs, copysign, and the float
functions rcp, sqrt, rsqrt, sin, cos, lg2, ex2, tanh.

One compiler per opcode; the instruction's type picks the semantics: integers wrap around (two's
complement, ``.sat`` clamps), f32 follows :mod:`gpu_viz.emulator.numerics` (exact IEEE rounding in
every mode, ``.ftz``, ``.sat``, the canonical NaN), f64 is numpy's own IEEE arithmetic, and the
16-bit float types go to :mod:`.half`.  ``.approx`` functions are computed correctly rounded and
reported as approximate (``Run.approximate``).
"""
from __future__ import annotations

import numpy as np

from . import numerics as nm
from .half import HALF_TYPES, compile_op, compile_unary
from .isa import NP, UBITS, Unsupported, binary, kind_of, reader, rounding, size_of, the_type, types_of, writer


def c_add(ins, fn):
    t = the_type(ins)
    k = kind_of(t)
    if ins.has(".cc") or ins.base in ("addc", "subc"):
        return _carry_add(ins, fn, t)
    sub = ins.base == "sub"
    if k == "f" and t == "f32":
        mode, ftz, sat = rounding(ins), ins.has(".ftz"), ins.has(".sat")
        d, a, b = ins.args[:3]
        ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)

        def ex(st, idx):
            x, y = ra(st, idx), rb(st, idx)
            if ftz:
                x, y = nm.ftz32(x), nm.ftz32(y)
            r = nm.add_f32(x, -y if sub else y, mode)
            if ftz:
                r = nm.ftz32(r)
            if sat:
                r = _sat01(r)
            wd(st, idx, r)
        return ex
    if t == "f64":
        if rounding(ins) != nm.RN:
            raise Unsupported(ins, "f64 rounding modes other than .rn")
        return binary(ins, fn, (lambda x, y: x - y) if sub else (lambda x, y: x + y))
    if t in HALF_TYPES:
        return compile_op(ins, fn, t, "sub" if sub else "add")
    if ins.has(".sat") and t == "s32":
        return binary(ins, fn, lambda x, y: np.clip(x.astype(np.int64) - y if sub else x.astype(np.int64) + y,
                                                         -2**31, 2**31 - 1))
    return binary(ins, fn, (lambda x, y: x - y) if sub else (lambda x, y: x + y))


def _sat01(r):
    r = np.where(np.isnan(r), np.float32(0), r)
    return np.clip(r, np.float32(0), np.float32(1)).astype(np.float32)


def _carry_add(ins, fn, t):
    """add.cc / addc / sub.cc / subc: PTX's condition-code carry (addition) and borrow
    (subtraction), one flag per thread, in Python integers (these are rare)."""
    n = size_of(t)
    d, a, b = ins.args[:3]
    ut = _u(t)
    ra, rb, wd = reader(a, ut, fn, ins), reader(b, ut, fn, ins), writer(d, ut, fn, ins)
    use_cc = ins.base in ("addc", "subc")
    set_cc = ins.has(".cc")
    sub = ins.base in ("sub", "subc")
    top = 1 << (8 * n)

    def ex(st, idx):
        xs, ys = ra(st, idx), rb(st, idx)
        cin = st.carry(idx) if use_cc else np.zeros(idx.shape, bool)
        res, cout = [], []
        for x, y, c in zip(xs.tolist(), ys.tolist(), cin.tolist()):
            if sub:
                r = x - (y + c)
                cout.append(r < 0)
            else:
                r = x + y + c
                cout.append(r >= top)
            res.append(r % top)
        wd(st, idx, np.array(res, dtype=UBITS[n]))
        if set_cc:
            st.set_carry(idx, np.array(cout, bool))
    return ex


def _u(t):
    return {1: "u8", 2: "u16", 4: "u32", 8: "u64"}[size_of(t)]


def c_mul(ins, fn):
    t = the_type(ins)
    k = kind_of(t)
    d, a, b = ins.args[:3]
    if t == "f32":
        mode, ftz, sat = rounding(ins), ins.has(".ftz"), ins.has(".sat")
        ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)

        def ex(st, idx):
            x, y = ra(st, idx), rb(st, idx)
            if ftz:
                x, y = nm.ftz32(x), nm.ftz32(y)
            r = nm.mul_f32(x, y, mode)
            if ftz:
                r = nm.ftz32(r)
            wd(st, idx, _sat01(r) if sat else r)
        return ex
    if t == "f64":
        return binary(ins, fn, lambda x, y: x * y)
    if t in HALF_TYPES:
        return compile_op(ins, fn, t, "mul")
    n = size_of(t)
    signed = k == "s"
    if ins.has(".wide"):
        wt = {2: "s32" if signed else "u32", 4: "s64" if signed else "u64"}[n]
        ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, wt, fn, ins)
        return lambda st, idx: wd(st, idx, ra(st, idx).astype(NP[wt]) * rb(st, idx).astype(NP[wt]))
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
    if ins.has(".hi"):
        return lambda st, idx: wd(st, idx, nm.mul_hi(ra(st, idx), rb(st, idx), 8 * n, signed))
    return binary(ins, fn, lambda x, y: x * y)


def c_mad(ins, fn):
    t = the_type(ins)
    if t in ("f32", "f64") or ins.base == "fma" or t in HALF_TYPES:
        return c_fma(ins, fn)
    k = kind_of(t)
    n = size_of(t)
    signed = k == "s"
    d, a, b, c = ins.args[:4]
    ra, rb = reader(a, t, fn, ins), reader(b, t, fn, ins)
    if ins.has(".cc") or ins.base == "madc":
        raise Unsupported(ins, "extended-precision mad")
    if ins.has(".wide"):
        wt = {2: "s32" if signed else "u32", 4: "s64" if signed else "u64"}[n]
        rc, wd = reader(c, wt, fn, ins), writer(d, wt, fn, ins)
        return lambda st, idx: wd(st, idx, ra(st, idx).astype(NP[wt]) * rb(st, idx).astype(NP[wt]) + rc(st, idx))
    rc, wd = reader(c, t, fn, ins), writer(d, t, fn, ins)
    if ins.has(".hi"):
        def ex(st, idx):
            with np.errstate(all="ignore"):
                wd(st, idx, (nm.mul_hi(ra(st, idx), rb(st, idx), 8 * n, signed) + rc(st, idx)).astype(NP[t]))
        return ex

    def ex(st, idx):
        with np.errstate(all="ignore"):
            wd(st, idx, (ra(st, idx) * rb(st, idx) + rc(st, idx)).astype(NP[t]))
    return ex


def c_mul24(ins, fn):
    t = the_type(ins)
    signed = kind_of(t) == "s"
    d, a, b = ins.args[:3]
    c = ins.args[3] if ins.base == "mad24" else None
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
    rc = reader(c, t, fn, ins) if c is not None else None
    hi = ins.has(".hi")

    def ex(st, idx):
        x, y = ra(st, idx).astype(np.int64), rb(st, idx).astype(np.int64)
        x = ((x & 0xFFFFFF) ^ 0x800000) - 0x800000 if signed else x & 0xFFFFFF
        y = ((y & 0xFFFFFF) ^ 0x800000) - 0x800000 if signed else y & 0xFFFFFF
        p = x * y
        r = (p >> 16) if hi else p
        r = (r & 0xFFFFFFFF).astype(np.uint32).view(NP[t])
        if rc is not None:
            with np.errstate(all="ignore"):
                r = (r + rc(st, idx)).astype(NP[t])
        wd(st, idx, r)
    return ex


def c_fma(ins, fn):
    t = the_type(ins)
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = (reader(a, t, fn, ins), reader(b, t, fn, ins), reader(c, t, fn, ins), writer(d, t, fn, ins))
    if t == "f32":
        mode, ftz, sat = rounding(ins), ins.has(".ftz"), ins.has(".sat")

        def ex(st, idx):
            x, y, z = ra(st, idx), rb(st, idx), rc(st, idx)
            if ftz:
                x, y, z = nm.ftz32(x), nm.ftz32(y), nm.ftz32(z)
            r = nm.fma_f32(x, y, z, mode)
            if ftz:
                r = nm.ftz32(r)
            wd(st, idx, _sat01(r) if sat else r)
        return ex
    if t == "f64":
        if rounding(ins) != nm.RN:
            raise Unsupported(ins, "f64 rounding modes other than .rn")
        return lambda st, idx: wd(st, idx, nm.fma_f64(ra(st, idx), rb(st, idx), rc(st, idx)))
    if t in HALF_TYPES:
        return compile_op(ins, fn, t, "fma")
    raise Unsupported(ins)


def c_div(ins, fn):
    t = the_type(ins)
    d, a, b = ins.args[:3]
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
    if t == "f32":
        ftz = ins.has(".ftz")
        if ins.has(".approx") or ins.has(".full"):
            def ex(st, idx):
                x, y = ra(st, idx).astype(np.float64), rb(st, idx).astype(np.float64)
                with np.errstate(all="ignore"):
                    r = nm.canon32((x / y).astype(np.float32))
                st.note_approx(ins)
                wd(st, idx, nm.ftz32(r) if ftz else r)
            return ex
        mode = rounding(ins)

        def ex(st, idx):
            x, y = ra(st, idx), rb(st, idx)
            if ftz:
                x, y = nm.ftz32(x), nm.ftz32(y)
            r = nm.div_f32(x, y, mode)
            wd(st, idx, nm.ftz32(r) if ftz else r)
        return ex
    if t == "f64":
        if rounding(ins) != nm.RN:
            raise Unsupported(ins, "f64 rounding modes other than .rn")

        def ex(st, idx):
            with np.errstate(all="ignore"):
                wd(st, idx, ra(st, idx) / rb(st, idx))
        return ex
    signed = kind_of(t) == "s"
    rem = ins.base == "rem"

    def ex(st, idx):
        q, r, zero = nm.idiv(ra(st, idx), rb(st, idx), signed)
        if zero.any():
            st.division_by_zero(ins, idx, zero)
        wd(st, idx, r if rem else q)
    return ex


def c_unary_float(ins, fn):
    """rcp, sqrt, rsqrt, sin, cos, lg2, ex2, tanh, and the integer/float abs and neg."""
    t = the_type(ins)
    d, a = ins.args[:2]
    ra, wd = reader(a, t, fn, ins), writer(d, t, fn, ins)
    base = ins.base
    ftz = ins.has(".ftz")
    if t in HALF_TYPES:
        return compile_unary(ins, fn, t)
    if base in ("neg", "abs") and kind_of(t) in "su":
        if base == "neg":
            return lambda st, idx: wd(st, idx, (-ra(st, idx)).astype(NP[t]))
        return lambda st, idx: wd(st, idx, np.abs(ra(st, idx)).astype(NP[t]))
    if t == "f64":
        fns = {"neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "rcp": lambda x: 1.0 / x,
               "rsqrt": lambda x: 1.0 / np.sqrt(x)}
        if base not in fns:
            raise Unsupported(ins)
        approx = base == "rsqrt" or ins.has(".approx")

        def ex(st, idx):
            with np.errstate(all="ignore"):
                r = fns[base](ra(st, idx))
            if approx:
                st.note_approx(ins)
            wd(st, idx, r)
        return ex
    if t != "f32":
        raise Unsupported(ins)
    if base == "neg":
        def ex(st, idx):
            x = ra(st, idx)
            if ftz:
                x = nm.ftz32(x)
            wd(st, idx, (x.view(np.uint32) ^ np.uint32(0x80000000)).view(np.float32))
        return ex
    if base == "abs":
        def ex(st, idx):
            x = ra(st, idx)
            if ftz:
                x = nm.ftz32(x)
            wd(st, idx, (x.view(np.uint32) & np.uint32(0x7FFFFFFF)).view(np.float32))
        return ex
    if base in ("sqrt", "rcp") and not ins.has(".approx"):
        mode = rounding(ins)

        def ex(st, idx):
            x = ra(st, idx)
            if ftz:
                x = nm.ftz32(x)
            r = nm.sqrt_f32(x, mode) if base == "sqrt" else nm.div_f32(np.ones_like(x), x, mode)
            wd(st, idx, nm.ftz32(r) if ftz else r)
        return ex
    fns = {"sqrt": np.sqrt, "rcp": lambda x: 1.0 / x, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin,
           "cos": np.cos, "lg2": np.log2, "ex2": np.exp2, "tanh": np.tanh}
    if base not in fns:
        raise Unsupported(ins)
    f = fns[base]

    def ex(st, idx):
        st.note_approx(ins)
        wd(st, idx, nm.approx_f32(f, ra(st, idx), ftz))
    return ex


def c_minmax(ins, fn):
    t = the_type(ins)
    is_min = ins.base == "min"
    if t in HALF_TYPES:
        return compile_op(ins, fn, t, ins.base)
    if kind_of(t) == "f":
        d, a, b = ins.args[:3]
        ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
        nan_prop = ins.has(".NaN")
        ftz = ins.has(".ftz")

        def ex(st, idx):
            x, y = ra(st, idx), rb(st, idx)
            if ftz:
                x, y = nm.ftz32(x), nm.ftz32(y)
            r = (np.minimum if nan_prop else np.fmin)(x, y) if is_min else (np.maximum if nan_prop else np.fmax)(x, y)
            # -0 is smaller than +0
            z = (x == 0) & (y == 0)
            if z.any():
                neg = (np.signbit(x) | np.signbit(y)) if is_min else (np.signbit(x) & np.signbit(y))
                r = np.where(z, np.where(neg, -0.0, 0.0).astype(x.dtype), r)
            wd(st, idx, nm.canon32(r) if t == "f32" else r)
        return ex
    if ins.has(".relu"):
        return binary(ins, fn, lambda x, y: np.maximum(np.minimum(x, y) if is_min else np.maximum(x, y), 0))
    return binary(ins, fn, np.minimum if is_min else np.maximum)


def c_sad(ins, fn):
    t = the_type(ins)
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), reader(c, t, fn, ins), writer(d, t, fn, ins)

    def ex(st, idx):
        x, y = ra(st, idx).astype(np.int64), rb(st, idx).astype(np.int64)
        with np.errstate(all="ignore"):
            wd(st, idx, (np.abs(x - y) + rc(st, idx).astype(np.int64)).astype(NP[t]))
    return ex


def c_dp(ins, fn):
    ts = types_of(ins)
    d, a, b, c = ins.args[:4]
    ta, tb = ts[0], ts[1]
    ra, rb, rc = reader(a, "b32", fn, ins), reader(b, "b32", fn, ins), reader(c, "b32", fn, ins)
    out_t = "s32" if "s32" in (ta, tb) else "u32"
    wd = writer(d, out_t, fn, ins)
    four = ins.base == "dp4a"
    hi = ins.has(".hi")

    def parts(v, t, width, count, start=0):
        out = []
        for k in range(count):
            x = (v.astype(np.int64) >> (width * (k + start))) & ((1 << width) - 1)
            if t == "s32":
                x = (x ^ (1 << (width - 1))) - (1 << (width - 1))
            out.append(x)
        return out

    def ex(st, idx):
        x, y = ra(st, idx), rb(st, idx)
        if four:
            xs, ys = parts(x, ta, 8, 4), parts(y, tb, 8, 4)
        else:
            xs, ys = parts(x, ta, 16, 2), parts(y, tb, 8, 2, 2 if hi else 0)
        acc = rc(st, idx).view(np.int32 if out_t == "s32" else np.uint32).astype(np.int64)
        for p, q in zip(xs, ys):
            acc = acc + p * q
        wd(st, idx, (acc & 0xFFFFFFFF).astype(np.uint32).view(NP[out_t]))
    return ex


def c_copysign(ins, fn):
    t = the_type(ins)
    d, a, b = ins.args[:3]
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
    return lambda st, idx: wd(st, idx, np.copysign(rb(st, idx), ra(st, idx)))
