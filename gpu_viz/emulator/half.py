"""Half precision (PTX ISA: half precision floating-point and comparison instructions): f16 and
bf16, scalar (one value in 16 bits) and packed x2 (two in 32 bits, the low half first).

Each half is widened to float64, where the operation is exact (a product of two 11-bit
significands, or a sum kept as a double-double by :func:`~gpu_viz.emulator.numerics.two_sum`),
then rounded once to the format (:func:`pack`), as silicon does.  :mod:`.arith` and
:mod:`.compare` dispatch their half-precision forms here; :mod:`.memops` uses the same
unpacking for ``atom.add`` on halves.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from . import numerics as nm
from .isa import Unsupported, reader, rounding, writer

#: The 16-bit float types, scalar and packed.
HALF_TYPES = ("f16", "bf16", "f16x2", "bf16x2")


def unpack(bits: np.ndarray, t: str) -> List[np.ndarray]:
    """float64 values of each half of a packed or scalar 16-bit float operand."""
    if t in ("f16", "bf16"):
        parts = [bits.view(np.uint16) if bits.dtype != np.uint16 else bits]
    else:
        b = bits.view(np.uint32)
        parts = [(b & np.uint32(0xFFFF)).astype(np.uint16), (b >> np.uint32(16)).astype(np.uint16)]
    if t.startswith("bf16"):
        return [nm.bf16_bits_to_f32(p).astype(np.float64) for p in parts]
    return [p.view(np.float16).astype(np.float64) for p in parts]


def pack(vals: List[np.ndarray], t: str, mode: str, exact_lo: Optional[List[np.ndarray]] = None) -> np.ndarray:
    """float64 values (one array per half; ``exact_lo``: the low parts of double-double results)
    rounded in ``mode`` to the 16-bit format and packed as ``t``'s bits."""
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


def compile_op(ins, fn, t, what):
    """add, sub, mul, fma, min, max, neg, abs on f16 / bf16 / f16x2 / bf16x2 (``.relu``, ``.sat``)."""
    mode = rounding(ins)
    n_in = {"add": 2, "sub": 2, "mul": 2, "fma": 3, "min": 2, "max": 2, "neg": 1, "abs": 1}[what]
    d = ins.args[0]
    rt = "b16" if t in ("f16", "bf16") else "b32"
    rs = [reader(op, rt, fn, ins) for op in ins.args[1:1 + n_in]]
    wd = writer(d, rt, fn, ins)
    relu = ins.has(".relu")
    sat = ins.has(".sat")

    def ex(st, idx):
        ops = [unpack(r(st, idx), t) for r in rs]
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
        packed = pack(res, t, mode, los)
        wd(st, idx, packed.view(np.uint16) if rt == "b16" else packed)
    return ex


def compile_unary(ins, fn, t):
    """neg and abs, and ``ex2.approx`` / ``tanh.approx`` (computed correctly rounded, noted as
    approximate) on the 16-bit float types."""
    base = ins.base
    if base in ("neg", "abs"):
        return compile_op(ins, fn, t, base)
    d, a = ins.args[:2]
    if base in ("ex2", "tanh") and ins.has(".approx"):
        rt = "b16" if t in ("f16", "bf16") else "b32"
        r16, w16 = reader(a, rt, fn, ins), writer(d, rt, fn, ins)
        f = np.exp2 if base == "ex2" else np.tanh

        def ex(st, idx):
            parts = unpack(r16(st, idx), t)
            with np.errstate(all="ignore"):
                vals = [f(p) for p in parts]
            st.note_approx(ins)
            packed = pack(vals, t, nm.RN)
            w16(st, idx, packed.view(np.uint16) if rt == "b16" else packed)
        return ex
    raise Unsupported(ins)


def operand_values(ins, fn, op, t):
    """A reader of a 16-bit float operand (or both halves of an x2 one) as float64 arrays."""
    r = reader(op, "b16" if t in ("f16", "bf16") else "b32", fn, ins)
    ftz = ins.has(".ftz")

    def values(st, idx):
        parts = unpack(r(st, idx), t)
        if ftz and t.startswith("f16"):       # f16 subnormals (|x| < 2^-14) flush to a zero of the same sign
            parts = [np.where((p != 0) & (np.abs(p) < 2.0 ** -14), np.copysign(0.0, p), p) for p in parts]
        return parts
    return values
