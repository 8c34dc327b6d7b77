"""Calls, and what a kernel asks of the host: ``call`` of a device function (parameters through
per-thread param space, a frame on the SIMT stack, return values copied back at its end),
``printf`` (``vprintf``: the format string and argument buffer read from emulated memory,
formatted as CUDA's printf does), ``assert`` (``__assertfail``) and ``trap``.

A failed assert or a trap stops the launch (:class:`Aborted`), as on a GPU, after recording a
trap hazard.  Recursion, predicated calls, function pointers and other external functions are
refused by name.

Each function takes the :class:`~gpu_viz.emulator.block.Block` (``blk``) that runs the call.
"""
from __future__ import annotations

import re
import struct
from typing import Optional

import numpy as np

from . import hazards as hz
from . import isa
from . import memory as mem
from .simt import WARP, Entry, Warp, lanes_of


class Aborted(Exception):
    """The kernel stopped (``__trap()``, a failed ``assert``): the rest of the launch does not run."""


def call(blk, group, ins, idx, fn):
    """``call``: an external function (printf, assert) runs at once; a device function gets its
    parameters copied into its own param space and a frame entry on each warp's SIMT stack."""
    L = blk.L
    rets, callee = ins.args[0][1], ins.args[1][1]
    params = ins.args[2][1]
    sub = idx
    if ins.guard is not None:
        raise isa.Unsupported(ins, "a predicated call")
    target = L.module.functions.get(callee)
    if target is None:
        raise isa.Unsupported(ins, f"a call to {callee}, which is not in the module")
    if target.declared_only:
        _extern_call(blk, group, ins, sub, callee, params, rets)
        for w in group:
            w.stack[-1].pc = ins.index + 1
        return
    if any(e.func == callee for w in group for e in w.stack):
        # each frame of a recursive call needs its own registers and local depot; on a GPU it takes
        # a frame of the thread's stack (1 KiB by default, cudaLimitStackSize), which deep recursion
        # overflows.  (Recursion NVVM turns into a loop -- a tail call, an accumulating one -- has
        # no call left in the PTX and runs here, as it does on silicon, with no stack.)
        raise isa.Unsupported(ins, f"recursion: {callee} calls itself, which needs a stack frame a call (on a GPU "
                                   "the thread's stack is 1 KiB by default, cudaLimitStackSize; deep recursion "
                                   "overflows it) -- write it as a loop")
    for p_caller, p_callee in zip(params, target.params):
        buf = blk.tparams.get(p_caller)
        if buf is None:
            raise isa.Unsupported(ins, f"call parameter {p_caller} was never stored")
        dst = blk.tparams.setdefault(p_callee.name, np.zeros((L.tpad, p_callee.size), np.uint8))
        dst[sub] = buf[sub, :p_callee.size]
    for w in group:
        top = w.stack[-1]
        top.pc = ins.index + 1
        w.stack.append(Entry(callee, 0, top.mask, len(target.code),
                             call=(tuple(rets), tuple(r.name for r in target.retvals))))


def return_to_caller(blk, w: Warp) -> None:
    """A call frame reached its end: pop it and copy the callee's return values to the caller's
    (for the frame's lanes only)."""
    L = blk.L
    top = w.stack.pop()
    rets, retvals = top.call
    lanes = lanes_of(top.mask) + w.id * WARP
    for r_caller, r_callee in zip(rets, retvals):
        src = blk.tparams.get(r_callee)
        if src is None:
            continue
        dst = blk.tparams.setdefault(r_caller, np.zeros((L.tpad, src.shape[1]), np.uint8))
        dst[lanes, :src.shape[1]] = src[lanes]
    if not w.stack:
        w.state = "done"


def _extern_call(blk, group, ins, sub, callee, params, rets):
    """``vprintf`` (one line per thread) and ``__assertfail`` (a trap hazard, then :class:`Aborted`)."""
    L = blk.L
    if callee == "vprintf":
        fmt_ptr = _param_u64(blk, params[0], sub)
        args_ptr = _param_u64(blk, params[1], sub)
        for k, t in enumerate(sub.tolist()):
            L.printf.append(_format_printf(blk, int(fmt_ptr[k]), int(args_ptr[k]), t))
        if rets:
            blk.tparams.setdefault(rets[0], np.zeros((L.tpad, 4), np.uint8))
        return
    if callee == "__assertfail":
        msg_ptr = _param_u64(blk, params[0], sub)
        msg = _cstring(blk, int(msg_ptr[0]))
        t = int(sub[0])
        L.hazards.add(hz.Hazard(hz.TRAP, f"assert({msg}) failed: on a GPU the kernel stops with "
                                          f"'device-side assert triggered'",
                                L.where(blk, blk.cur_func, ins.index, t)))
        L.aborted = True
        raise Aborted()
    raise isa.Unsupported(ins, f"a call to the external function {callee}")


def _param_u64(blk, name, sub) -> np.ndarray:
    """The first 8 bytes of call parameter ``name`` of threads ``sub``, as uint64 (a pointer)."""
    buf = blk.tparams[name]
    return buf[sub, :8].copy().view(np.uint64).reshape(-1)


def _cstring(blk, addr: int, limit: int = 4096) -> str:
    """The NUL-terminated string at generic address ``addr`` (at most ``limit`` bytes)."""
    out = bytearray()
    for k in range(limit):
        b = _read_byte(blk, addr + k)
        if b is None or b == 0:
            break
        out.append(b)
    return out.decode("utf-8", "replace")


def _read_byte(blk, addr: int, thread: int = 0) -> Optional[int]:
    """The byte at generic address ``addr`` (local memory: ``thread``'s), None outside every allocation."""
    if mem.LOCAL_WINDOW <= addr < mem.LOCAL_WINDOW + mem.WINDOW_SIZE:
        off = addr - mem.LOCAL_WINDOW
        return int(blk.local[thread, off]) if off < blk.local.shape[1] else None
    if mem.SHARED_WINDOW <= addr < mem.SHARED_WINDOW + mem.WINDOW_SIZE:
        off = addr - mem.SHARED_WINDOW
        return int(blk.shared_data[off]) if off < blk.shared_data.size else None
    r = blk.L.device.space.region_at(addr)
    return int(r.data[addr - r.base]) if r is not None else None


def _format_printf(blk, fmt_addr: int, args_addr: int, t: int) -> str:
    """Thread ``t``'s printf line: the format string, its arguments read from the argument buffer
    with CUDA's sizes and alignment (doubles and 64-bit integers 8 bytes, the rest 4)."""
    fmt = _cstring(blk, fmt_addr)
    pos = args_addr
    out = []
    i = 0
    spec = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+))?(hh|h|ll|l|z|j|t)?([diouxXeEfFgGcsp%])")
    for m in spec.finditer(fmt):
        out.append(fmt[i:m.start()])
        i = m.end()
        conv = m.group(5)
        if conv == "%":
            out.append("%")
            continue
        length = m.group(4) or ""
        if conv in "eEfFgG":
            size = 8
        elif conv in "sp" or length in ("ll", "l", "z", "j", "t"):
            size = 8
        else:
            size = 4
        pos = -(-pos // size) * size
        raw = bytes(_read_byte(blk, pos + k, t) or 0 for k in range(size))
        pos += size
        pyfmt = "%" + m.group(1) + (m.group(2) or "") + (("." + m.group(3)) if m.group(3) else "")
        if conv in "eEfFgG":
            out.append((pyfmt + conv) % struct.unpack("<d", raw)[0])
        elif conv == "s":
            out.append((pyfmt + "s") % _cstring(blk, int.from_bytes(raw, "little")))
        elif conv == "p":
            out.append("0x%x" % int.from_bytes(raw, "little"))
        elif conv == "c":
            out.append(chr(raw[0]))
        else:
            v = int.from_bytes(raw, "little", signed=conv in "di")
            out.append((pyfmt + ("d" if conv in "diu" else conv)) % v)
    out.append(fmt[i:])
    return "".join(out).rstrip("\n")


def trap(blk, group, ins, idx, fn):
    """``trap`` (``__trap()``): if any lane executes it, a trap hazard and :class:`Aborted`."""
    L = blk.L
    sub = idx
    if ins.guard is not None:
        g = blk.R[ins.guard[0]][idx]
        sub = idx[~g] if ins.guard[1] else idx[g]
    if sub.size == 0:
        for w in group:
            w.stack[-1].pc = ins.index + 1
        return
    L.hazards.add(hz.Hazard(hz.TRAP, "the kernel executed __trap(): on a GPU the launch fails with "
                                     "'unspecified launch failure'", L.where(blk, fn.name, ins.index, int(sub[0]))))
    L.aborted = True
    raise Aborted()
