"""Comparison, selection and classification (PTX ISA: comparison and selection, half precision
comparison, testp): setp (one predicate, or p|q; combined with a third predicate by .and / .or /
.xor), set (1.0 / all ones into a float or integer register), selp, slct, testp.

Float comparisons follow IEEE: the ordered forms (eq, lt ...) are false when either side is NaN,
the unordered ones (equ, ltu ...) true; num / nan test for it.  Half-precision forms compare each
half (:mod:`.half`).
"""
from __future__ import annotations

import numpy as np

from . import numerics as nm
from .half import HALF_TYPES, operand_values
from .isa import NP, kind_of, reader, the_type, types_of, writer


def _cmp(op: str, x, y, t: str):
    if kind_of(t) == "f" or t in ("f16", "bf16"):
        nan = np.isnan(x) | np.isnan(y)
        base = op.rstrip("u") if op not in ("num", "nan") else op
        with np.errstate(invalid="ignore"):
            r = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
                 "num": ~nan, "nan": nan}[base]
        if op in ("num", "nan"):
            return r
        if op.endswith("u") and op not in ("nan",):
            return r | nan
        return r & ~nan
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
            "lo": x < y, "ls": x <= y, "hi": x > y, "hs": x >= y}[op]


_CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu",
            "geu", "num", "nan")


def c_setp(ins, fn):
    t = the_type(ins)
    cmp = next(m[1:] for m in ins.mods if m[1:] in _CMP_OPS)
    bop = next((m[1:] for m in ins.mods if m in (".and", ".or", ".xor")), None)
    dst = ins.args[0]
    a, b = ins.args[1], ins.args[2]
    c = ins.args[3] if bop else None
    if t in HALF_TYPES:
        return _setp_half(ins, fn, t, cmp, bop)
    rt = t
    ra, rb = reader(a, rt, fn, ins), reader(b, rt, fn, ins)
    rc = reader(c, "pred", fn, ins) if c is not None else None
    if dst[0] == "pair":
        wp, wq = writer(dst[1], "pred", fn, ins), writer(dst[2], "pred", fn, ins)
    else:
        wp, wq = writer(dst, "pred", fn, ins), None
    ftz = ins.has(".ftz")
    unsigned_order = kind_of(t) == "u" and cmp in ("lt", "le", "gt", "ge")
    del unsigned_order

    def ex(st, idx):
        x, y = ra(st, idx), rb(st, idx)
        if ftz and t == "f32":
            x, y = nm.ftz32(x), nm.ftz32(y)
        r = _cmp(cmp, x, y, t)
        q = ~r
        if rc is not None:
            cv = rc(st, idx)
            f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[bop]
            r, q = f(r, cv), f(q, cv)
        wp(st, idx, r)
        if wq is not None:
            wq(st, idx, q)
    return ex


def _setp_half(ins, fn, t, cmp, bop):
    """setp on f16 / bf16 (one predicate), and on f16x2 / bf16x2: p from the lower halves, q from
    the upper ones (PTX's p|q for the packed types)."""
    dst, a, b = ins.args[:3]
    ra, rb = operand_values(ins, fn, a, t), operand_values(ins, fn, b, t)
    rc = reader(ins.args[3], "pred", fn, ins) if bop else None
    packed = t.endswith("x2")
    if dst[0] == "pair":
        wp, wq = writer(dst[1], "pred", fn, ins), writer(dst[2], "pred", fn, ins)
    else:
        wp, wq = writer(dst, "pred", fn, ins), None
    f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(bop)

    def ex(st, idx):
        xs, ys = ra(st, idx), rb(st, idx)
        res = [_cmp(cmp, x, y, "f32") for x, y in zip(xs, ys)]
        if packed:
            p, q = res[0], res[1]
        else:
            p, q = res[0], ~res[0]
        if rc is not None:
            cv = rc(st, idx)
            p, q = f(p, cv), f(q, cv)
        wp(st, idx, p)
        if wq is not None:
            wq(st, idx, q)
    return ex


def _set_half(ins, fn, dt, t, cmp, bop):
    """set.CmpOp.<dtype>.f16 / .f16x2.f16x2 (and bf16): per half, 1.0 / 0.0 in a float destination,
    all ones / zero in an integer one."""
    d, a, b = ins.args[:3]
    ra, rb = operand_values(ins, fn, a, t), operand_values(ins, fn, b, t)
    rc = reader(ins.args[3], "pred", fn, ins) if bop else None
    f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(bop)
    wd = writer(d, "b16" if dt in ("f16", "bf16", "u16", "s16") else "b32", fn, ins)
    one = {"f16": 0x3C00, "bf16": 0x3F80, "f16x2": 0x3C00, "bf16x2": 0x3F80}.get(dt)

    def ex(st, idx):
        res = [_cmp(cmp, x, y, "f32") for x, y in zip(ra(st, idx), rb(st, idx))]
        if rc is not None:
            res = [f(r, rc(st, idx)) for r in res]
        if dt in ("f16x2", "bf16x2", "u32", "s32", "b32") and len(res) == 2:
            hi_one = one if one is not None else 0xFFFF
            out = (np.where(res[0], hi_one, 0).astype(np.uint32)
                   | (np.where(res[1], hi_one, 0).astype(np.uint32) << np.uint32(16)))
        elif dt in ("f16", "bf16"):
            out = np.where(res[0], one, 0).astype(np.uint16)
        elif dt in ("u16", "s16"):
            out = np.where(res[0], 0xFFFF, 0).astype(np.uint16)
        elif dt == "f32":
            out = np.where(res[0], np.float32(1.0), np.float32(0.0)).astype(np.float32).view(np.uint32)
        else:
            out = np.where(res[0], np.uint32(0xFFFFFFFF), np.uint32(0))
        wd(st, idx, out)
    return ex


def c_set(ins, fn):
    ts = types_of(ins)
    dt, t = ts[0], ts[1]
    cmp = next(m[1:] for m in ins.mods if m[1:] in _CMP_OPS)
    bop = next((m[1:] for m in ins.mods if m in (".and", ".or", ".xor")), None)
    if t in HALF_TYPES:
        return _set_half(ins, fn, dt, t, cmp, bop)
    d, a, b = ins.args[:3]
    c = ins.args[3] if bop else None
    ra, rb = reader(a, t, fn, ins), reader(b, t, fn, ins)
    rc = reader(c, "pred", fn, ins) if c is not None else None
    wd = writer(d, dt, fn, ins)

    def ex(st, idx):
        r = _cmp(cmp, ra(st, idx), rb(st, idx), t)
        if rc is not None:
            r = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[bop](r, rc(st, idx))
        if kind_of(dt) == "f":
            wd(st, idx, np.where(r, 1.0, 0.0).astype(NP[dt]))
        else:
            wd(st, idx, np.where(r, np.array(-1).astype(NP[dt]) if kind_of(dt) == "s" else np.iinfo(NP[dt]).max,
                                 0).astype(NP[dt]))
    return ex


def c_selp(ins, fn):
    t = the_type(ins)
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), reader(c, "pred", fn, ins), writer(d, t, fn, ins)
    return lambda st, idx: wd(st, idx, np.where(rc(st, idx), ra(st, idx), rb(st, idx)).astype(ra(st, idx[:0]).dtype))


def c_slct(ins, fn):
    ts = types_of(ins)
    t, ct = ts[0], ts[1]
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), reader(c, ct, fn, ins), writer(d, t, fn, ins)
    return lambda st, idx: wd(st, idx, np.where(rc(st, idx) >= 0, ra(st, idx), rb(st, idx)))


def c_testp(ins, fn):
    t = the_type(ins)
    what = next(m[1:] for m in ins.mods if m[1:] in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
    d, a = ins.args[:2]
    ra, wd = reader(a, t, fn, ins), writer(d, "pred", fn, ins)
    tiny = np.finfo(NP[t]).tiny

    def ex(st, idx):
        x = ra(st, idx)
        r = {"finite": np.isfinite(x), "infinite": np.isinf(x), "number": ~np.isnan(x), "notanumber": np.isnan(x),
             "normal": np.isfinite(x) & (np.abs(x) >= tiny),
             "subnormal": (x != 0) & (np.abs(x) < tiny)}[what]
        wd(st, idx, r)
    return ex
