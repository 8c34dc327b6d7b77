"""Logic, shift and bit-field instructions (PTX ISA: logic and shift, and the bit-manipulating
integer instructions): and, or, xor, not, cnot, lop3 (any three-input truth table), shl, shr
(arithmetic for signed types), shf (funnel shift, .clamp / .wrap), popc, clz, brev, bfind, bfe,
bfi, and prmt (byte permute, every mode).

Shift counts past the width follow PTX (clamped, not C's undefined behaviour); bfe / bfi take
their position and length modulo 256 as PTX defines.
"""
from __future__ import annotations

import numpy as np

from .isa import NP, UBITS, Unsupported, binary, kind_of, reader, size_of, the_type, writer


def c_logic(ins, fn):
    t = the_type(ins)
    base = ins.base
    if base == "not" or base == "cnot":
        d, a = ins.args[:2]
        ra, wd = reader(a, t, fn, ins), writer(d, t, fn, ins)
        if t == "pred":
            return lambda st, idx: wd(st, idx, ~ra(st, idx))
        if base == "cnot":
            return lambda st, idx: wd(st, idx, (ra(st, idx) == 0).astype(NP[t]))
        return lambda st, idx: wd(st, idx, ~ra(st, idx))
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[base]
    return binary(ins, fn, f)


def c_lop3(ins, fn):
    d, a, b, c, lut = ins.args[:5]
    ra, rb, rc, wd = (reader(a, "b32", fn, ins), reader(b, "b32", fn, ins), reader(c, "b32", fn, ins),
                      writer(d, "b32", fn, ins))
    if lut[0] != "imm":
        raise Unsupported(ins, "a run-time truth table")
    L = lut[1]

    def ex(st, idx):
        x, y, z = ra(st, idx), rb(st, idx), rc(st, idx)
        r = np.zeros_like(x)
        for k in range(8):
            if L >> k & 1:
                r |= (x if k & 4 else ~x) & (y if k & 2 else ~y) & (z if k & 1 else ~z)
        wd(st, idx, r)
    return ex


def c_shift(ins, fn):
    t = the_type(ins)
    n = 8 * size_of(t)
    d, a, b = ins.args[:3]
    ra, rb, wd = reader(a, t, fn, ins), reader(b, "u32", fn, ins), writer(d, t, fn, ins)
    left = ins.base == "shl"
    signed = kind_of(t) == "s"

    def ex(st, idx):
        x, s = ra(st, idx), rb(st, idx).astype(np.int64)
        big = s >= n
        sc = np.minimum(s, n - 1).astype(x.dtype if x.dtype.kind == "u" else np.int64)
        if left:
            r = np.where(big, 0, x << sc.astype(x.dtype))
        elif signed:
            r = x >> np.minimum(s, n - 1).astype(x.dtype)       # sign fill, clamped
        else:
            r = np.where(big, 0, x >> sc.astype(x.dtype))
        wd(st, idx, np.asarray(r).astype(NP[t]))
    return ex


def c_shf(ins, fn):
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = (reader(a, "b32", fn, ins), reader(b, "b32", fn, ins), reader(c, "u32", fn, ins),
                      writer(d, "b32", fn, ins))
    left = ins.has(".l")
    wrap = ins.has(".wrap")

    def ex(st, idx):
        lo, hi = ra(st, idx).astype(np.uint64), rb(st, idx).astype(np.uint64)
        s = rc(st, idx).astype(np.uint64)
        s = s & np.uint64(31) if wrap else np.minimum(s, np.uint64(32))
        v = (hi << np.uint64(32)) | lo
        r = (v << s) >> np.uint64(32) if left else (v >> s)
        wd(st, idx, (r & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    return ex


def c_bitops(ins, fn):
    """popc, clz, brev, bfind, fns-free bit queries."""
    t = the_type(ins)
    n = 8 * size_of(t)
    d, a = ins.args[:2]
    ra = reader(a, t, fn, ins)
    base = ins.base
    if base == "brev":
        wd = writer(d, t, fn, ins)

        def ex(st, idx):
            x = ra(st, idx).view(UBITS[n // 8]).astype(np.uint64)
            r = np.zeros_like(x)
            for k in range(n):
                r |= ((x >> np.uint64(k)) & np.uint64(1)) << np.uint64(n - 1 - k)
            wd(st, idx, r.astype(UBITS[n // 8]).view(NP[t]))
        return ex
    wd = writer(d, "u32", fn, ins)
    if base == "popc":
        def ex(st, idx):
            x = ra(st, idx).view(UBITS[n // 8])
            wd(st, idx, np.unpackbits(x.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1).astype(np.uint32))
        return ex
    if base == "clz":
        def ex(st, idx):
            x = ra(st, idx).view(UBITS[n // 8]).astype(np.uint64)
            r = np.full(x.shape, n, np.uint32)
            for k in range(n - 1, -1, -1):
                hit = ((x >> np.uint64(k)) & np.uint64(1)).astype(bool) & (r == n)
                r[hit] = n - 1 - k
            wd(st, idx, r)
        return ex
    if base == "bfind":
        signed = kind_of(t) == "s"
        shiftamt = ins.has(".shiftamt")

        def ex(st, idx):
            x = ra(st, idx)
            u = x.view(UBITS[n // 8]).astype(np.uint64)
            if signed:
                u = np.where(x < 0, ~u & np.uint64((1 << n) - 1), u)
            r = np.full(x.shape, 0xFFFFFFFF, np.uint32)
            for k in range(n - 1, -1, -1):
                hit = ((u >> np.uint64(k)) & np.uint64(1)).astype(bool) & (r == 0xFFFFFFFF)
                r[hit] = k
            if shiftamt:
                r = np.where(r == 0xFFFFFFFF, r, np.uint32(n - 1) - r).astype(np.uint32)
            wd(st, idx, r)
        return ex
    raise Unsupported(ins)


def c_bfe(ins, fn):
    t = the_type(ins)
    n = 8 * size_of(t)
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = reader(a, t, fn, ins), reader(b, "u32", fn, ins), reader(c, "u32", fn, ins), writer(d, t, fn, ins)
    signed = kind_of(t) == "s"

    msb = n - 1

    def ex(st, idx):
        # PTX's definition, bit by bit: d[i] = a[pos + i] for i < len and pos + i <= msb, else the
        # sign bit a[min(pos + len - 1, msb)] (.s) or 0 (.u, or len == 0).  (A field reaching past
        # the msb, len >= width included, repeats the msb for .s.)
        x = ra(st, idx).view(UBITS[n // 8]).astype(np.uint64)
        pos = rb(st, idx).astype(np.int64) & 0xFF
        ln = rc(st, idx).astype(np.int64) & 0xFF
        one = np.uint64(1)
        if signed:
            sbit = (x >> np.minimum(pos + ln - 1, msb).clip(0).astype(np.uint64)) & one
            sbit = np.where(ln == 0, np.uint64(0), sbit)
        else:
            sbit = np.zeros_like(x)
        out = np.zeros_like(x)
        for i in range(n):
            take = (i < ln) & (pos + i <= msb)
            bit = np.where(take, (x >> np.minimum(pos + i, msb).astype(np.uint64)) & one, sbit)
            out |= bit << np.uint64(i)
        wd(st, idx, out.astype(UBITS[n // 8]).view(NP[t]))
    return ex


def c_bfi(ins, fn):
    t = the_type(ins)
    n = 8 * size_of(t)
    d, f, b, c, e = ins.args[:5]
    rf, rb, rc, re_, wd = (reader(f, t, fn, ins), reader(b, t, fn, ins), reader(c, "u32", fn, ins),
                           reader(e, "u32", fn, ins), writer(d, t, fn, ins))

    def ex(st, idx):
        out = []
        for fv, bv, p, L in zip(rf(st, idx), rb(st, idx), rc(st, idx), re_(st, idx)):
            fv, bv, p, L = int(fv), int(bv), int(p) & 0xFF, int(L) & 0xFF
            m = ((1 << L) - 1) << p if p < n else 0
            out.append(((bv & ~m) | ((fv << p) & m)) & ((1 << n) - 1))
        wd(st, idx, np.array(out, UBITS[n // 8]).view(NP[t]))
    return ex


def c_prmt(ins, fn):
    d, a, b, c = ins.args[:4]
    ra, rb, rc, wd = (reader(a, "b32", fn, ins), reader(b, "b32", fn, ins), reader(c, "b32", fn, ins),
                      writer(d, "b32", fn, ins))
    mode = next((m for m in (".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16") if ins.has(m)), None)

    def ex(st, idx):
        x, y, s = ra(st, idx), rb(st, idx), rc(st, idx)
        by = np.stack([(x >> np.uint32(8 * k)) & np.uint32(0xFF) for k in range(4)] +
                      [(y >> np.uint32(8 * k)) & np.uint32(0xFF) for k in range(4)], axis=1).astype(np.uint32)
        rows = np.arange(len(x))
        out = np.zeros(len(x), np.uint32)
        if mode is None:
            for k in range(4):
                sel = (s >> np.uint32(4 * k)) & np.uint32(0xF)
                v = by[rows, (sel & 7).astype(np.int64)]
                sign = (sel & 8) != 0
                v = np.where(sign, np.where((v & 0x80) != 0, np.uint32(0xFF), np.uint32(0)), v)
                out |= v.astype(np.uint32) << np.uint32(8 * k)
        else:
            sel = (s & np.uint32(3)).astype(np.int64)
            tables = {".f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
                      ".b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
                      ".rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
                      ".ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
                      ".ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
                      ".rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]]}[mode]
            tab = np.array(tables)[sel]
            for k in range(4):
                out |= by[rows, tab[:, k]] << np.uint32(8 * k)
        wd(st, idx, out)
    return ex
