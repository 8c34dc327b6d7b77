"""The instruction set the emulator executes: each PTX base opcode it knows, mapped to the compiler
that turns an instruction of it into an executor (:mod:`.isa` describes the contract).

Memory, synchronisation and warp-level instructions are compiled by :mod:`.memops` (it owns
memory and the warps), and control flow (``bra``, ``call``, ``ret``, ``exit``, ``bar``, ``trap``)
is run by the block itself (:data:`gpu_viz.emulator.block.CONTROL`).  An opcode in none of these
tables is refused by name (:class:`~gpu_viz.emulator.isa.Unsupported`).
"""
from __future__ import annotations

from typing import Callable, Dict

from .arith import (c_add, c_copysign, c_div, c_dp, c_fma, c_mad, c_minmax, c_mul, c_mul24, c_sad,
                    c_unary_float)
from .bits import c_bfe, c_bfi, c_bitops, c_lop3, c_logic, c_prmt, c_shf, c_shift
from .compare import c_selp, c_set, c_setp, c_slct, c_testp
from .convert import c_cvt, c_cvta, c_isspacep, c_mov
from .isa import Executor
from .ptx import Function, Instr


def c_nop(ins, fn):
    """Hints and orderings with no effect on an emulated run (prefetch, membar, fence, nanosleep ...):
    the emulator's memory is always coherent, and its time is counted in instructions."""
    return lambda st, idx: None


#: base opcode -> compiler of executors.
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
