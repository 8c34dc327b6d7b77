"""PTX instructions -> executors: each :class:`~gpu_viz.emulator.ptx.Instr` becomes a function
``ex(st, idx)`` that performs the instruction for the block's threads ``idx`` (an int64 array of
thread numbers inside the block, the active lanes of the warps issuing it together).

Registers are bit containers (``.pred`` bool, 16/32/64-bit unsigned arrays, one element per
thread); every instruction views them as its own type, as PTX does.  Arithmetic follows
:mod:`gpu_viz.emulator.numerics` (exact IEEE rounding, PTX's conversions and NaN).  Memory,
barriers, shuffles and votes call the machine state ``st`` (:mod:`gpu_viz.emulator.machine`).

An instruction this module does not know raises :class:`Unsupported` naming it; it is never
guessed.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

import numpy as np

from . import numerics as nm
from .ptx import TYPES, Function, Instr


class Unsupported(NotImplementedError):
    """An instruction (or form of one) the emulator does not execute.

    Attributes:
        instr: the PTX instruction.  why: what about it is not supported.  where: "file.cu line N"
            (empty until the program that ran it fills it in).
    """

    def __init__(self, ins: Instr, why: str = "", where: str = ""):
        self.instr = ins
        self.why = why
        self.where = where
        detail = "; ".join(x for x in (why, where) if x)
        super().__init__(f"the emulator does not support `{ins.text.split(';')[0].strip()}`"
                         + (f" ({detail})" if detail else ""))


NP = {"s8": np.int8, "u8": np.uint8, "b8": np.uint8, "s16": np.int16, "u16": np.uint16, "b16": np.uint16,
      "f16": np.float16, "bf16": np.uint16, "s32": np.int32, "u32": np.uint32, "b32": np.uint32,
      "f32": np.float32, "f16x2": np.uint32, "bf16x2": np.uint32, "tf32": np.uint32, "s64": np.int64,
      "u64": np.uint64, "b64": np.uint64, "f64": np.float64, "pred": np.bool_}
UBITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SBITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

Executor = Callable[[object, np.ndarray], None]


def size_of(t: str) -> int:
    return TYPES[t][0]


def kind_of(t: str) -> str:
    return TYPES[t][1]


def storage_dtype(t: str):
    """How a register declared ``.t`` is stored."""
    if t == "pred":
        return np.bool_
    n = size_of(t)
    if n not in (2, 4, 8):
        n = 4 if n < 4 else n
    return UBITS[n]


def types_of(ins: Instr) -> List[str]:
    """The type modifiers of ``ins`` in order ("cvt.rn.f32.s32" -> ["f32", "s32"])."""
    return [m[1:] for m in ins.mods if m[1:] in TYPES]


def the_type(ins: Instr) -> str:
    ts = types_of(ins)
    if not ts:
        raise Unsupported(ins, "no operand type")
    return ts[-1]


# -- operands -------------------------------------------------------------------------------------

def const_value(op: tuple, t: str, ins: Instr):
    """An immediate operand as a numpy scalar of PTX type ``t``."""
    dt = NP[t]
    k = kind_of(t)
    if op[0] == "imm":
        v = op[1]
        if k == "p":
            return np.bool_(v != 0)
        if k == "f":
            return dt(v)
        if k == "h":
            return np.float16(v)
        n = size_of(t)
        return np.array(v & ((1 << (8 * n)) - 1), UBITS[n]).view(SBITS[n] if k == "s" else UBITS[n])[()].astype(dt)
    if op[0] == "fimm":
        bits, ft = op[1], op[2]
        val = np.array(bits, np.uint32).view(np.float32)[()] if ft == "f32" else np.array(bits, np.uint64).view(np.float64)[()]
        if k == "f":
            return dt(val)
        if k == "h":
            return np.float16(val)
        n = size_of(t)
        if (ft == "f32" and n == 4) or (ft == "f64" and n == 8):
            return np.array(bits, UBITS[n])[()].astype(dt) if k != "s" else np.array(bits, UBITS[n]).view(SBITS[n])[()]
        return dt(val)
    if op[0] == "float":
        return dt(op[1]) if k in "fh" else dt(int(op[1]))
    raise Unsupported(ins, f"operand {op} is not a constant")


def reader(op: tuple, t: str, fn: Function, ins: Instr) -> Callable:
    """``r(st, idx)`` -> the operand's value for threads ``idx`` as PTX type ``t`` (numpy array)."""
    if op[0] == "sym" and op[1] in fn.regs:
        op = ("reg", op[1])                  # a register declared without % (inline asm)
    kind = op[0]
    dt = NP[t]
    if kind == "reg":
        name = op[1]
        if name not in fn.regs:
            raise Unsupported(ins, f"register {name} is not declared")
        st_t = fn.regs[name]
        if t == "pred" or st_t == "pred":
            if st_t == "pred" and t == "pred":
                return lambda st, idx: st.R[name][idx]
            if st_t == "pred":
                return lambda st, idx: st.R[name][idx].astype(dt)
            return lambda st, idx: st.R[name][idx] != 0
        ss = np.dtype(storage_dtype(st_t)).itemsize
        ts = size_of(t)
        if t == "bf16":
            dt = np.uint16
        if ss == ts:
            return lambda st, idx: st.R[name][idx].view(dt)
        if ss > ts:
            ub = UBITS[ts]
            return lambda st, idx: st.R[name][idx].astype(ub).view(dt)
        signed = kind_of(st_t) == "s"
        ub_src, ub_dst = UBITS[ss], UBITS[ts]

        def widen(st, idx):
            v = st.R[name][idx]
            v = v.view(SBITS[ss]).astype(SBITS[ts]).view(ub_dst) if signed else v.astype(ub_dst)
            return v.view(dt)
        del ub_src
        return widen
    if kind in ("imm", "fimm", "float"):
        c = const_value(op, t, ins)
        arr_dt = np.uint16 if t == "bf16" else dt
        return lambda st, idx: np.full(idx.shape, c, arr_dt)
    if kind == "sreg":
        name, comp = op[1], op[2]

        def sreg(st, idx):
            v = st.sreg(name, comp, idx, ins)
            return _retype(v, t)
        return sreg
    if kind == "sym":
        name = op[1]

        def sym(st, idx):
            return _retype(np.full(idx.shape, st.symbol_address(name, ins), np.uint64), t)
        return sym
    if kind == "not":
        r = reader(op[1], "pred", fn, ins)
        return lambda st, idx: ~r(st, idx)
    raise Unsupported(ins, f"operand {op[0]} cannot be read here")


def _retype(v: np.ndarray, t: str) -> np.ndarray:
    """An unsigned integer array as PTX type ``t`` (truncating / zero-extending)."""
    if t == "pred":
        return v != 0
    n = size_of(t)
    b = v.astype(UBITS[n])
    return b.view(np.uint16 if t == "bf16" else NP[t])


def writer(op: tuple, t: str, fn: Function, ins: Instr) -> Callable:
    """``w(st, idx, value)``: write ``value`` (an array of PTX type ``t``) into the register."""
    if op[0] == "sym" and op[1] in fn.regs:
        op = ("reg", op[1])
    if op[0] == "sink":
        return lambda st, idx, v: None
    if op[0] != "reg":
        raise Unsupported(ins, f"cannot write to {op}")
    name = op[1]
    if name not in fn.regs:
        raise Unsupported(ins, f"register {name} is not declared")
    st_t = fn.regs[name]
    if st_t == "pred":
        return lambda st, idx, v: st.R[name].__setitem__(idx, np.asarray(v) != 0 if np.asarray(v).dtype != np.bool_ else v)
    if t == "pred":
        sd = storage_dtype(st_t)
        return lambda st, idx, v: st.R[name].__setitem__(idx, np.asarray(v).astype(sd))
    ts = size_of(t)
    ss = np.dtype(storage_dtype(st_t)).itemsize
    src_dt = np.uint16 if t == "bf16" else NP[t]
    signed = kind_of(t) == "s"
    ub_t, ub_s = UBITS[ts], UBITS[ss]

    def w(st, idx, v):
        bits = np.asarray(v, src_dt).view(ub_t)
        if ss > ts:
            bits = bits.view(SBITS[ts]).astype(SBITS[ss]).view(ub_s) if signed else bits.astype(ub_s)
        elif ss < ts:
            bits = bits.astype(ub_s)
        st.R[name][idx] = bits
    return w


# -- instruction families -------------------------------------------------------------------------

def _rounding(ins: Instr, default=nm.RN) -> str:
    for r in nm.ROUNDINGS:
        if ins.has(r):
            return r
    return default


def _int_binary(ins, fn, f):
    t = the_type(ins)
    d, a, b = ins.args[:3]
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)

    def ex(st, idx):
        with np.errstate(all="ignore"):
            wd(st, idx, f(ra(st, idx), rb(st, idx)).astype(NP[t]))
    return ex


def c_add(ins, fn):
    t = the_type(ins)
    k = kind_of(t)
    if ins.has(".cc") or ins.base in ("addc", "subc"):
        return _carry_add(ins, fn, t)
    sub = ins.base == "sub"
    if k == "f" and t == "f32":
        mode, ftz, sat = _rounding(ins), ins.has(".ftz"), ins.has(".sat")
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
        if _rounding(ins) != nm.RN:
            raise Unsupported(ins, "f64 rounding modes other than .rn")
        return _int_binary(ins, fn, (lambda x, y: x - y) if sub else (lambda x, y: x + y))
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return _half_op(ins, fn, t, "sub" if sub else "add")
    if ins.has(".sat") and t == "s32":
        return _int_binary(ins, fn, lambda x, y: np.clip(x.astype(np.int64) - y if sub else x.astype(np.int64) + y,
                                                         -2**31, 2**31 - 1))
    return _int_binary(ins, fn, (lambda x, y: x - y) if sub else (lambda x, y: x + y))


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
        mode, ftz, sat = _rounding(ins), ins.has(".ftz"), ins.has(".sat")
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
        return _int_binary(ins, fn, lambda x, y: x * y)
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return _half_op(ins, fn, t, "mul")
    n = size_of(t)
    signed = k == "s"
    if ins.has(".wide"):
        wt = {2: "s32" if signed else "u32", 4: "s64" if signed else "u64"}[n]
        ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, wt, fn, ins)
        return lambda st, idx: wd(st, idx, ra(st, idx).astype(NP[wt]) * rb(st, idx).astype(NP[wt]))
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
    if ins.has(".hi"):
        return lambda st, idx: wd(st, idx, nm.mul_hi(ra(st, idx), rb(st, idx), 8 * n, signed))
    return _int_binary(ins, fn, lambda x, y: x * y)


def c_mad(ins, fn):
    t = the_type(ins)
    if t in ("f32", "f64") or ins.base == "fma" or t in ("f16", "bf16", "f16x2", "bf16x2"):
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
        mode, ftz, sat = _rounding(ins), ins.has(".ftz"), ins.has(".sat")

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
        if _rounding(ins) != nm.RN:
            raise Unsupported(ins, "f64 rounding modes other than .rn")
        return lambda st, idx: wd(st, idx, nm.fma_f64(ra(st, idx), rb(st, idx), rc(st, idx)))
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return _half_op(ins, fn, t, "fma")
    raise Unsupported(ins)


# half precision: scalar f16 / bf16 (one value in 16 bits) and x2 (two in 32 bits, low half first)

def _half_lanes(bits: np.ndarray, t: str) -> List[np.ndarray]:
    """float64 values of each half of a packed or scalar 16-bit float operand."""
    if t in ("f16", "bf16"):
        parts = [bits.view(np.uint16) if bits.dtype != np.uint16 else bits]
    else:
        b = bits.view(np.uint32)
        parts = [(b & np.uint32(0xFFFF)).astype(np.uint16), (b >> np.uint32(16)).astype(np.uint16)]
    if t.startswith("bf16"):
        return [nm.bf16_bits_to_f32(p).astype(np.float64) for p in parts]
    return [p.view(np.float16).astype(np.float64) for p in parts]


def _half_pack(vals: List[np.ndarray], t: str, mode: str, exact_lo: Optional[List[np.ndarray]] = None) -> np.ndarray:
    out = []
    for k, v in enumerate(vals):
        lo = exact_lo[k] if exact_lo is not None else np.zeros_like(v)
        if t.startswith("bf16"):
            if exact_lo is not None and np.any(lo != 0):
                # fma: round the double-double to float32 by round-to-odd, then to bf16
                r32 = nm.round_dd(v, lo, np.float32, nm.RZ)
                inexact = (r32.astype(np.float64) != v) | (lo != 0)
                b = r32.view(np.uint32).copy()
                b[inexact & np.isfinite(v)] |= np.uint32(1)
                out.append(nm.f32_bits_to_bf16(b, mode))
            else:
                out.append(nm.f64_to_bf16_bits(v, mode))
        else:
            r = nm.round_dd(v, lo, np.float16, mode)
            b = r.view(np.uint16).copy()
            b[np.isnan(v)] = nm.F16_CANONICAL_NAN
            out.append(b)
    if t in ("f16", "bf16"):
        return out[0].view(np.float16) if t == "f16" else out[0]
    return (out[0].astype(np.uint32) | (out[1].astype(np.uint32) << np.uint32(16)))


def _half_op(ins, fn, t, what):
    mode = _rounding(ins)
    n_in = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "min": 2, "max": 2, "neg": 1, "abs": 1}[what]
    d = ins.args[0]
    rt = "b16" if t in ("f16", "bf16") else "b32"
    rs = [reader(op, rt, fn, ins) for op in ins.args[1:1 + n_in]]
    wd = writer(d, rt, fn, ins)
    relu = ins.has(".relu")
    sat = ins.has(".sat")

    def ex(st, idx):
        ops = [_half_lanes(r(st, idx), t) for r in rs]
        res, los = [], []
        for k in range(len(ops[0])):
            xs = [o[k] for o in ops]
            lo = np.zeros_like(xs[0])
            with np.errstate(all="ignore"):
                if what == "add":
                    v, lo = nm.two_sum(xs[0], xs[1])
                elif what == "sub":
                    v, lo = nm.two_sum(xs[0], -xs[1])
                elif what == "mul":
                    v = xs[0] * xs[1]                      # exact: at most 22 bits
                elif what == "fma":
                    v, lo = nm.two_sum(xs[0] * xs[1], xs[2])
                elif what in ("min", "max"):
                    v = np.fmin(xs[0], xs[1]) if what == "min" else np.fmax(xs[0], xs[1])
                elif what == "neg":
                    v = -xs[0]
                else:
                    v = np.abs(xs[0])
            if relu:
                v = np.where(v < 0, 0.0, v)
            if sat:
                v = np.clip(np.where(np.isnan(v), 0.0, v), 0.0, 1.0)
            res.append(v)
            los.append(lo)
        packed = _half_pack(res, t, mode, los)
        wd(st, idx, packed.view(np.uint16) if rt == "b16" else packed)
    return ex


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
        mode = _rounding(ins)

        def ex(st, idx):
            x, y = ra(st, idx), rb(st, idx)
            if ftz:
                x, y = nm.ftz32(x), nm.ftz32(y)
            r = nm.div_f32(x, y, mode)
            wd(st, idx, nm.ftz32(r) if ftz else r)
        return ex
    if t == "f64":
        if _rounding(ins) != nm.RN:
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
    if t in ("f16", "bf16", "f16x2", "bf16x2") and base in ("neg", "abs"):
        return _half_op(ins, fn, t, base)
    if t in ("f16", "f16x2", "bf16", "bf16x2"):
        if base in ("ex2", "tanh") and ins.has(".approx"):
            rt = "b16" if t in ("f16", "bf16") else "b32"
            r16, w16 = reader(a, rt, fn, ins), writer(d, rt, fn, ins)
            f = np.exp2 if base == "ex2" else np.tanh

            def ex(st, idx):
                parts = _half_lanes(r16(st, idx), t)
                with np.errstate(all="ignore"):
                    vals = [f(p) for p in parts]
                st.note_approx(ins)
                packed = _half_pack(vals, t, nm.RN)
                w16(st, idx, packed.view(np.uint16) if rt == "b16" else packed)
            return ex
        raise Unsupported(ins)
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
        mode = _rounding(ins)

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
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return _half_op(ins, fn, t, ins.base)
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
        return _int_binary(ins, fn, lambda x, y: np.maximum(np.minimum(x, y) if is_min else np.maximum(x, y), 0))
    return _int_binary(ins, fn, np.minimum if is_min else np.maximum)


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
    return _int_binary(ins, fn, f)


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


# comparison and selection

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
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
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


def _half_values(ins, fn, op, t):
    """A reader of a 16-bit float operand (or both halves of an x2 one) as float64 arrays."""
    r = reader(op, "b16" if t in ("f16", "bf16") else "b32", fn, ins)
    ftz = ins.has(".ftz")

    def values(st, idx):
        parts = _half_lanes(r(st, idx), t)
        if ftz and t.startswith("f16"):       # f16 subnormals (|x| < 2^-14) flush to a zero of the same sign
            parts = [np.where((p != 0) & (np.abs(p) < 2.0 ** -14), np.copysign(0.0, p), p) for p in parts]
        return parts
    return values


def _setp_half(ins, fn, t, cmp, bop):
    """setp on f16 / bf16 (one predicate), and on f16x2 / bf16x2: p from the lower halves, q from
    the upper ones (PTX's p|q for the packed types)."""
    dst, a, b = ins.args[:3]
    ra, rb = _half_values(ins, fn, a, t), _half_values(ins, fn, b, t)
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
    ra, rb = _half_values(ins, fn, a, t), _half_values(ins, fn, b, t)
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
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
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


def c_copysign(ins, fn):
    t = the_type(ins)
    d, a, b = ins.args[:3]
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)
    return lambda st, idx: wd(st, idx, np.copysign(rb(st, idx), ra(st, idx)))


# data movement

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
    frnd = _rounding(ins)
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
            wd(st, idx, nm.float_to_int(src_float(st, idx), NP[dt], mode))
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


def c_nop(ins, fn):
    return lambda st, idx: None


#: base opcode -> compiler of executors.  Memory, synchronisation and warp-level operations are
#: compiled by the machine (it owns memory and the warps).
COMPILERS: Dict[str, Callable[[Instr, Function], Executor]] = {
    "add": c_add, "sub": c_add, "addc": c_add, "subc": c_add, "mul": c_mul, "mad": c_mad, "fma": c_fma,
    "mul24": c_mul24, "mad24": c_mul24, "div": c_div, "rem": c_div, "abs": c_unary_float,
    "neg": c_unary_float, "rcp": c_unary_float, "sqrt": c_unary_float, "rsqrt": c_unary_float,
    "sin": c_unary_float, "cos": c_unary_float, "lg2": c_unary_float, "ex2": c_unary_float,
    "tanh": c_unary_float, "min": c_minmax, "max": c_minmax, "and": c_logic, "or": c_logic,
    "xor": c_logic, "not": c_logic, "cnot": c_logic, "lop3": c_lop3, "shl": c_shift, "shr": c_shift,
    "shf": c_shf, "popc": c_bitops, "clz": c_bitops, "brev": c_bitops, "bfind": c_bitops, "bfe": c_bfe,
    "bfi": c_bfi, "prmt": c_prmt, "sad": c_sad, "dp4a": c_dp, "dp2a": c_dp, "setp": c_setp, "set": c_set,
    "selp": c_selp, "slct": c_slct, "testp": c_testp, "copysign": c_copysign, "mov": c_mov, "cvt": c_cvt,
    "cvta": c_cvta, "isspacep": c_isspacep, "prefetch": c_nop, "prefetchu": c_nop, "membar": c_nop,
    "fence": c_nop, "nanosleep": c_nop, "pmevent": c_nop, "applypriority": c_nop, "discard": c_nop,
}
