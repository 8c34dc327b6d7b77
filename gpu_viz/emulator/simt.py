"""The SIMT stack: how a warp's 32 lanes follow one instruction stream.

Each :class:`Warp` keeps a stack of :class:`Entry` (function, pc, lane mask, reconvergence pc).
A branch on which the warp's lanes disagree splits the top entry: the fall-through lanes run
first, then the taken ones, and both pop off where they meet again, the branch's immediate
post-dominator (``ptx.reconvergence_points``); a call pushes a frame entry that returns at the
callee's end.  :mod:`gpu_viz.emulator.machine` says where this differs from Volta's independent
thread scheduling.

Lane masks are Python ints (bit k: lane k); :func:`lanes_of` and :func:`warp_masks` convert
between them and thread numbers, on the scheduler's hot path.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import numpy as np

from .ptx import EXIT

WARP = 32


@dataclasses.dataclass
class Entry:
    """One level of a warp's SIMT stack: lanes ``mask`` run ``func`` from ``pc`` until ``rpc``."""

    func: str
    pc: int
    mask: int
    rpc: int
    call: Optional[tuple] = None       # (caller rets, callee retvals) on a call frame's bottom entry


class Warp:
    """A warp: the lanes that exist and have exited (masks), its SIMT stack, its state ("run",
    "bar": waiting at a barrier, "done") and the instructions it issued."""

    __slots__ = ("id", "exists", "exited", "stack", "state", "bar", "issued", "wsync", "bar_pc", "bar_mask")

    def __init__(self, wid: int, exists: int, entry: str):
        self.id = wid
        self.exists = exists
        self.exited = 0
        self.stack: List[Entry] = [Entry(entry, 0, exists, EXIT)]
        self.state = "run"        # run | bar | done
        self.bar = None
        self.bar_pc = None
        self.bar_mask = 0
        self.issued = 0
        self.wsync = 0

    @property
    def live(self) -> int:
        return self.exists & ~self.exited

    def settle(self, ends: Dict[str, int]) -> None:
        """Pop entries that reached their reconvergence point or lost all lanes."""
        st = self.stack
        while st:
            top = st[-1]
            top.mask &= ~self.exited
            if top.mask == 0 or (top.pc == top.rpc and top.rpc != EXIT):
                if top.call is not None and top.mask != 0:
                    return                       # a call frame reached its end: the block returns from it
                st.pop()
                continue
            break
        if not st:
            self.state = "done"


_LANES = [np.array([b for b in range(32) if m >> b & 1], np.int64) for m in range(1 << 8)]


_LANES_OF: Dict[int, np.ndarray] = {}


def lanes_of(mask: int) -> np.ndarray:
    """Lane numbers set in a 32-bit mask, ascending (a shared read-only array: copy to modify)."""
    got = _LANES_OF.get(mask)
    if got is not None:
        return got
    parts = []
    for k in range(4):
        byte = (mask >> (8 * k)) & 0xFF
        if byte:
            parts.append(_LANES[byte] + 8 * k)
    got = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    got.flags.writeable = False
    if len(_LANES_OF) < 1 << 16:          # a launch meets few distinct masks; bound the cache anyway
        _LANES_OF[mask] = got
    return got


def warp_masks(threads: np.ndarray, nwarps: int) -> List[int]:
    """For thread numbers of a block: each warp's 32-bit mask of the lanes among them."""
    bits = np.zeros(nwarps * WARP, np.uint8)
    bits[threads] = 1
    return np.packbits(bits.reshape(nwarps, WARP), axis=1, bitorder="little").view("<u4").reshape(-1).tolist()


def mask_of(lanes: np.ndarray) -> int:
    """The 32-bit mask of lane numbers ``lanes``."""
    m = 0
    for b in np.asarray(lanes).tolist():
        m |= 1 << int(b)
    return m


def divergent(w: Warp) -> bool:
    """Whether the warp's current lanes are a strict part of the lanes that will meet again."""
    top = w.stack[-1]
    for e in reversed(w.stack[:-1]):
        if e.call is not None:
            return False
        return (e.mask & ~top.mask & ~w.exited) != 0
    return False


def lane_list(mask: int) -> str:
    """A mask's lanes as runs for a message: "0-3, 8, 10-31"."""
    lanes = lanes_of(mask).tolist()
    if not lanes:
        return "none"
    runs, start, prev = [], lanes[0], lanes[0]
    for x in lanes[1:] + [None]:
        if x is not None and x == prev + 1:
            prev = x
            continue
        runs.append(f"{start}" if start == prev else f"{start}-{prev}")
        if x is not None:
            start = prev = x
    return ", ".join(runs)
