"""Facts read off a kernel's PTX without running it (what the compiler kept, not what the source
says): loops whose index is a 32-bit integer that is widened to address memory.

A grid-stride loop ``for (int i = start; i < n; i += stride)`` compiles to a 32-bit ``add`` of the
index to itself inside the loop and a ``mul.wide`` / ``cvt`` that widens it for the address.  For
``n`` near 2^31, ``i + stride`` overflows a 32-bit int (undefined behaviour in C++; it wraps on
silicon) before the bound test: the loop then runs on with a negative index.  With a 64-bit index
(``long long``, ``size_t``) the PTX keeps the index in a 64-bit register and none of this is found.
"""
from __future__ import annotations

import dataclasses
from typing import List

from .ptx import Function

_WIDEN = ("mul", "cvt", "mad")


@dataclasses.dataclass(frozen=True)
class NarrowIndex:
    """A loop index kept in 32 bits and widened for addressing: ``register`` updated at code index
    ``pc`` (source ``line``), widened at ``widened_pc``."""

    register: str
    pc: int
    line: int
    widened_pc: int


def narrow_induction(program, kernel: str) -> List[NarrowIndex]:
    """The 32-bit loop indices of ``kernel`` (and the device functions it calls) that are widened
    to 64 bits inside their loop to form an address."""
    out: List[NarrowIndex] = []
    seen = set()
    todo = [kernel]
    while todo:
        name = todo.pop()
        if name in seen or name not in program.module.functions:
            continue
        seen.add(name)
        fn = program.module.functions[name]
        out += _narrow_in(program, fn)
        todo += [ins.args[1][1] for ins in fn.code if ins.base == "call"]
    return out


def _narrow_in(program, fn: Function) -> List[NarrowIndex]:
    found = []
    for ins in fn.code:
        if ins.base != "bra":
            continue
        head = fn.labels[ins.args[0][1]]
        tail = ins.index
        if head > tail:
            continue                       # not a back edge
        body = fn.code[head:tail + 1]
        for add in body:
            if add.base != "add" or not any(m in (".s32", ".u32") for m in add.mods):
                continue
            d, a, b = add.args[:3]
            if d[0] != "reg" or not (a == d or b == d):
                continue
            reg = d[1]
            for use in body:
                if use.base in _WIDEN and (use.has(".wide") or any(m in (".s64", ".u64") for m in use.mods[:1])):
                    srcs = use.args[1:]
                    if any(s == ("reg", reg) for s in srcs):
                        found.append(NarrowIndex(reg, add.index, program.user_line(add) or 0, use.index))
                        break
    return found
