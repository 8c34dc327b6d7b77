"""The executor contract and the operands: what every instruction family builds on.

A PTX instruction (:class:`~gpu_viz.emulator.ptx.Instr`) is compiled once into an executor
``ex(st, idx)`` that performs it for the block's threads ``idx`` (an int64 array of thread numbers
inside the block, the active lanes of the warps issuing it together); ``st`` is the machine state
(:class:`gpu_viz.emulator.block.Block`: registers, memory, special registers, hazards).

Registers are bit containers (``.pred`` bool, 16/32/64-bit unsigned arrays, one element per
thread); every instruction views them as its own type, as PTX does: :func:`reader` and
:func:`writer` do that viewing, widening and truncating once per operand, when the instruction is
compiled.

The families, by the PTX ISA's chapters, each a module of compilers (``c_<opcode>(ins, fn)``):
:mod:`.arith` (integer and floating-point arithmetic), :mod:`.half` (f16 / bf16, scalar and
packed), :mod:`.bits` (logic, shifts, bit fields), :mod:`.compare` (comparison, selection,
classification), :mod:`.convert` (data movement and conversion); :mod:`.opcodes` maps each base
opcode to its compiler.  Memory, synchronisation and warp-level instructions are compiled by
:mod:`.memops`, control flow is run by the block.

An instruction the emulator does not know raises :class:`Unsupported` naming it; it is never
guessed.
"""
from __future__ import annotations

from typing import Callable, List

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


# -- shared by the families -----------------------------------------------------------------------

def rounding(ins: Instr, default=nm.RN) -> str:
    """The rounding modifier of ``ins`` (``.rn`` ...), else ``default``."""
    for r in nm.ROUNDINGS:
        if ins.has(r):
            return r
    return default


def binary(ins, fn, f):
    """An executor of ``d = f(a, b)``, computed by numpy in the instruction's own type (integers
    wrap around; f64 is numpy's IEEE arithmetic, round to nearest even)."""
    t = the_type(ins)
    d, a, b = ins.args[:3]
    ra, rb, wd = reader(a, t, fn, ins), reader(b, t, fn, ins), writer(d, t, fn, ins)

    def ex(st, idx):
        with np.errstate(all="ignore"):
            wd(st, idx, f(ra(st, idx), rb(st, idx)).astype(NP[t]))
    return ex
