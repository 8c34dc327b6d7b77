"""Data movement and conversion (PTX ISA): mov (with vector pack and unpack), cvt between every
integer and float type (PTX's rounding, saturation and NaN rules, f16 / bf16 and the packed
f16x2 / bf16x2 destinations), cvta between the generic and the shared / local windows, isspacep.

Loads, stores and shuffles, also "data movement" in the PTX ISA, are in :mod:`.memops`, which owns
memory and the other lanes.
"""
from __future__ import annotations

import numpy as np

from . import numerics as nm
from .isa import NP, UBITS, Unsupported, kind_of, reader, rounding, size_of, the_type, types_of, writer


def c_mov(ins, fn):
    t = the_type(ins)
    d, a = ins.args[:2]
    if d[0] == "vec":                      # unpack: mov.b64 {lo, hi}, %rd
        n = size_of(t)
        part = n // len(d[1])
        ra = reader(a, t, fn, ins)
        pt = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[part]
        ws = [writer(x, pt, fn, ins) for x in d[1]]

        def ex(st, idx):
            v = ra(st, idx).view(UBITS[n]).astype(np.uint64) if n <= 8 else None
            for k, w in enumerate(ws):
                w(st, idx, ((v >> np.uint64(8 * part * k)) & np.uint64((1 << (8 * part)) - 1)).astype(UBITS[part]))
        return ex
    if a[0] == "vec":                      # pack: mov.b32 %r, {lo, hi}
        n = size_of(t)
        part = n // len(a[1])
        pt = {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[part]
        rs = [reader(x, pt, fn, ins) for x in a[1]]
        wd = writer(d, t, fn, ins)

        def ex(st, idx):
            acc = np.zeros(idx.shape, np.uint64)
            for k, r in enumerate(rs):
                acc |= r(st, idx).astype(np.uint64) << np.uint64(8 * part * k)
            wd(st, idx, acc.astype(UBITS[n]).view(np.uint16 if t == "bf16" else NP[t]))
        return ex
    ra, wd = reader(a, t, fn, ins), writer(d, t, fn, ins)
    return lambda st, idx: wd(st, idx, ra(st, idx))


def c_cvt(ins, fn):
    ts = types_of(ins)
    if len(ts) != 2:
        raise Unsupported(ins, "cvt needs a destination and a source type")
    dt, stype = ts
    d, a = ins.args[:2]
    irnd = next((m for m in (".rni", ".rzi", ".rmi", ".rpi") if ins.has(m)), None)
    frnd = rounding(ins)
    sat = ins.has(".sat")
    ftz = ins.has(".ftz")
    dk, sk = kind_of(dt), kind_of(stype)
    if dt in ("f16x2", "bf16x2"):
        # cvt.rn.f16x2.f32 d, a, b: d.hi = a, d.lo = b
        ra, rb = reader(a, "f32", fn, ins), reader(ins.args[2], "f32", fn, ins)
        wd = writer(d, "b32", fn, ins)
        relu = ins.has(".relu")

        def ex(st, idx):
            hi, lo = ra(st, idx).astype(np.float64), rb(st, idx).astype(np.float64)
            if relu:
                hi, lo = np.where(hi < 0, 0.0, hi), np.where(lo < 0, 0.0, lo)
            if dt == "f16x2":
                h, l_ = nm.to_f16_bits(hi, frnd), nm.to_f16_bits(lo, frnd)
            else:
                h, l_ = nm.f64_to_bf16_bits(hi, frnd), nm.f64_to_bf16_bits(lo, frnd)
            wd(st, idx, l_.astype(np.uint32) | (h.astype(np.uint32) << np.uint32(16)))
        return ex
    rd = "b16" if stype in ("f16", "bf16") else stype
    ra = reader(a, rd, fn, ins)
    wt = "b16" if dt in ("f16", "bf16") else dt
    wd = writer(d, wt, fn, ins)

    def src_float(st, idx):
        v = ra(st, idx)
        if stype == "f16":
            return v.view(np.float16).astype(np.float64)
        if stype == "bf16":
            return nm.bf16_bits_to_f32(v).astype(np.float64)
        x = v.astype(np.float64)
        if ftz and stype == "f32":
            x = nm.ftz32(v).astype(np.float64)
        return x

    s_is_float = sk in "fh" or stype == "bf16"
    d_is_float = dk in "fh" or dt == "bf16"
    if s_is_float and d_is_float:
        def ex(st, idx):
            x = src_float(st, idx)
            if irnd:               # cvt.rni.f32.f32: round to an integral value
                x = {".rni": np.rint, ".rzi": np.trunc, ".rmi": np.floor, ".rpi": np.ceil}[irnd](x)
            if sat:
                x = np.clip(np.where(np.isnan(x), 0.0, x), 0.0, 1.0)
            if dt == "f32":
                r = nm.round_dd(x, np.zeros_like(x), np.float32, frnd)
                r = nm.canon32(r)
                wd(st, idx, nm.ftz32(r) if ftz else r)
            elif dt == "f64":
                wd(st, idx, x)
            elif dt == "f16":
                wd(st, idx, nm.to_f16_bits(x, frnd))
            else:
                wd(st, idx, nm.f64_to_bf16_bits(x, frnd))
        return ex
    if s_is_float:
        mode = irnd or ".rni"

        def ex(st, idx):
            wd(st, idx, nm.float_to_int(src_float(st, idx), NP[dt], mode, stype))
        return ex
    if d_is_float:
        def ex(st, idx):
            x = ra(st, idx)
            if dt in ("f32", "f64"):
                r = nm.int_to_float(x, NP[dt], frnd)
                wd(st, idx, nm.ftz32(r) if (ftz and dt == "f32") else r)
            else:
                v = x.astype(np.float64)
                wd(st, idx, nm.to_f16_bits(v, frnd) if dt == "f16" else nm.f64_to_bf16_bits(v, frnd))
        return ex
    # integer -> integer: sign- or zero-extend from the source, then truncate or saturate
    def ex(st, idx):
        x = ra(st, idx)
        if sat:
            info = np.iinfo(NP[dt])
            wide = x.astype(object) if x.dtype.itemsize == 8 else x.astype(np.int64)
            r = np.clip(wide, info.min, info.max).astype(NP[dt])
        else:
            wide = x.astype(np.int64) if sk == "s" else x.astype(np.uint64)
            r = wide.astype(NP[dt])
        wd(st, idx, r)
    return ex


def c_cvta(ins, fn):
    d, a = ins.args[:2]
    t = the_type(ins)
    space = next((m[1:] for m in ins.mods if m[1:] in ("global", "shared", "local", "const", "param")), None)
    to = ins.has(".to")
    ra = reader(a, t, fn, ins)
    wd = writer(d, t, fn, ins)
    return lambda st, idx: wd(st, idx, st.cvta(ra(st, idx).astype(np.uint64), space, to, ins).astype(NP[t]))


def c_isspacep(ins, fn):
    space = next(m[1:] for m in ins.mods if m[1:] in ("global", "shared", "local", "const", "param"))
    d, a = ins.args[:2]
    ra, wd = reader(a, "u64", fn, ins), writer(d, "pred", fn, ins)
    return lambda st, idx: wd(st, idx, st.isspacep(ra(st, idx), space))
