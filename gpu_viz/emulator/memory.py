"""The emulator's memory: global, shared and local address spaces of exact sizes, with red zones
between allocations so that a read past the end of one array is an error, not a read of the next.

Data path: an instruction's lanes' addresses --(:meth:`Space.locate`)--> (region, offset) per lane
or a fault --> bytes read or written in the region's numpy buffer, and, when checks are on, the
region's :class:`Shadow` (who last wrote and read each byte, in which barrier interval) --> races
and uninitialised reads.

Generic addresses (PTX's untyped ``ld`` / ``st``) map to one space by window:

    [0, 4 GiB)                 nothing: a null or small integer used as a pointer
    [SHARED_WINDOW, +4 GiB)    shared memory (offset = address - SHARED_WINDOW)
    [LOCAL_WINDOW, +4 GiB)     the thread's local memory
    [GLOBAL_BASE, ...)         global memory (allocations 256-byte aligned, 64 KiB apart)

Shared-memory variables sit 128 bytes apart (a multiple of the 32 banks x 4 bytes, so bank
numbers of each array are as on silicon).
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional, Tuple

import numpy as np

SHARED_WINDOW = 1 << 32
LOCAL_WINDOW = 1 << 33
WINDOW_SIZE = 1 << 32
GLOBAL_BASE = 0x7F00_0000_0000
ALLOC_ALIGN = 256
ALLOC_GAP = 1 << 16
SHARED_GAP = 128
#: Bytes in a global-memory sector and a cache line (the units coalescing is counted in).
SECTOR_BYTES = 32
LINE_BYTES = 128
#: Shared-memory banks and their width.
BANKS = 32
BANK_BYTES = 4
#: The most bytes of one region whose every byte is tracked for races and initialisation (the
#: shadow costs about 100 bytes a byte); larger arrays are not checked for races.
SHADOW_LIMIT = 1 << 20
#: The conflict kind of a plain read of bytes another thread's atomic wrote, unordered with it, whose
#: value an atomicCAS checks (the read of a compare-and-swap loop): a note, not a race.
ATOMIC_READ = "atomic-read"


@dataclasses.dataclass
class Region:
    """An allocation or variable: ``size`` bytes at ``base`` in its space.

    ``data`` is the region's bytes (a view of the caller's numpy array for device arrays, so a
    kernel's writes are the array's).  ``itemsize`` is the element size used to name an element
    in messages (``x[12]``).  ``initialized`` False: every byte starts unwritten (initcheck).
    """

    name: str
    base: int
    size: int
    data: np.ndarray
    itemsize: int = 1
    readonly: bool = False
    initialized: bool = True
    shadow: Optional["Shadow"] = None

    @property
    def end(self) -> int:
        return self.base + self.size

    def element(self, offset: int) -> str:
        """``name[k]`` for byte ``offset`` (with ``+b bytes`` when not on an element boundary)."""
        k, r = divmod(int(offset), self.itemsize)
        return f"{self.name}[{k}]" + (f" (+{r} bytes)" if r else "")

    def get_shadow(self) -> Optional["Shadow"]:
        if self.shadow is None and self.size <= SHADOW_LIMIT:
            self.shadow = Shadow(self.size, self.initialized)
        return self.shadow


class Shadow:
    """Who last wrote and read each byte of a region, for race and initcheck analysis.

    A thread is a global thread number ``gtid``; ``epoch`` is its block's count of completed
    barriers (block-local); ``seq`` the launch-wide number of the warp-instruction; ``wsync`` the
    writer's warp's count of ``__syncwarp``; ``pc`` the instruction's index (to name its line).
    """

    def __init__(self, size: int, initialized: bool):
        self.all_init = bool(initialized)     # every byte holds a defined value (no initcheck to do)
        self.init = np.full(size, bool(initialized))
        self.w_gtid = np.full(size, -1, np.int64)
        self.w_block = np.full(size, -1, np.int64)
        self.w_epoch = np.zeros(size, np.int64)
        self.w_seq = np.full(size, -1, np.int64)
        self.w_wsync = np.zeros(size, np.int64)
        self.w_pc = np.full(size, -1, np.int32)
        self.w_atomic = np.zeros(size, bool)
        self.r_gtid = np.full(size, -1, np.int64)
        self.r_block = np.full(size, -1, np.int64)
        self.r_epoch = np.zeros(size, np.int64)
        self.r_seq = np.full(size, -1, np.int64)
        self.r_wsync = np.zeros(size, np.int64)
        self.r_pc = np.full(size, -1, np.int32)
        self.r_multi = np.zeros(size, bool)


@dataclasses.dataclass
class Access:
    """Who is accessing: per lane of the instruction (arrays aligned with the addresses)."""

    gtid: np.ndarray       # int64 global thread numbers
    block: int             # the block's linear number
    warp: np.ndarray       # int64 warp (of the block) of each lane
    epoch: int             # the block's barrier epoch
    wsync: np.ndarray      # int64 each lane's warp's __syncwarp count
    seq: int               # this warp-instruction's launch-wide number
    pc: int
    atomic: bool = False
    #: a plain read whose value is the compare operand of an atom.cas (ptx.cas_checked_loads)
    cas_checked: bool = False


@dataclasses.dataclass
class Conflict:
    """A race found by :meth:`Space.check`: lane position ``pos`` (into the instruction's lanes),
    the region and byte offset, the earlier access (gtid, block, pc, was it a write) and the kind
    (race / lockstep / uninitialized, or :data:`ATOMIC_READ`: a compare-and-swap loop's plain read
    of what an unordered atomic wrote, a note)."""

    kind: str
    pos: int
    region: Region
    offset: int
    other_gtid: int = -1
    other_block: int = -1
    other_pc: int = -1
    other_write: bool = True
    this_write: bool = False


class Space:
    """A byte-addressed state space made of :class:`Region` s."""

    def __init__(self, name: str):
        self.name = name
        self.regions: List[Region] = []
        self._bases = np.zeros(0, np.uint64)
        self._ends = np.zeros(0, np.uint64)

    def add(self, region: Region) -> Region:
        self.regions.append(region)
        self.regions.sort(key=lambda r: r.base)
        self._bases = np.array([r.base for r in self.regions], np.uint64)
        self._ends = np.array([r.end for r in self.regions], np.uint64)
        return region

    def next_base(self, align: int, gap: int, start: int) -> int:
        top = max([start] + [r.end + gap for r in self.regions])
        return -(-top // align) * align

    def region_at(self, addr: int) -> Optional[Region]:
        for r in self.regions:
            if r.base <= addr < r.end:
                return r
        return None

    def nearest(self, addr: int) -> Tuple[Optional[Region], str]:
        """The region an out-of-bounds ``addr`` most likely meant, and where it fell relative to it."""
        best = None
        for r in self.regions:
            if addr >= r.end:
                d = addr - r.end
                if best is None or d < best[0]:
                    k = (addr - r.base) // r.itemsize
                    over = d // max(1, r.itemsize)
                    where = "just past the end" if over == 0 else f"{over + 1} elements past the end"
                    best = (d, r, f"{r.name}[{k}], {where} of {r.name} ({r.size // max(1, r.itemsize)} elements)")
            elif addr < r.base:
                d = r.base - addr
                if best is None or d < best[0]:
                    k = -(-d // r.itemsize)
                    best = (d, r, f"{r.name}[-{k}], before the start of {r.name}")
        if best is None:
            return None, ""
        return best[1], best[2]

    def locate(self, addrs: np.ndarray, nbytes: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each address: (region index, offset, ok).  ok is False where the ``nbytes`` at the
        address do not lie inside one region."""
        a = addrs.astype(np.uint64, copy=False)
        if len(self.regions) == 0:
            z = np.zeros(a.shape, np.int64)
            return z, z, np.zeros(a.shape, bool)
        k = np.searchsorted(self._bases, a, side="right").astype(np.int64) - 1
        kk = np.maximum(k, 0)
        ok = (k >= 0) & (a + np.uint64(nbytes) <= self._ends[kk])
        off = (a - self._bases[kk]).astype(np.int64)
        return kk, off, ok


def gather(data: np.ndarray, offsets: np.ndarray, nbytes: int) -> np.ndarray:
    """``nbytes``-byte little-endian words at byte ``offsets`` of ``data`` (uint8), as uint{8*nbytes}."""
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[nbytes]
    if offsets.size and data.size % nbytes == 0 and not (offsets % nbytes).any():
        return data.view(dt)[offsets // nbytes]
    b = data[offsets[:, None] + np.arange(nbytes)]
    return np.ascontiguousarray(b).view(dt).reshape(-1)


def scatter(data: np.ndarray, offsets: np.ndarray, bits: np.ndarray, nbytes: int) -> None:
    """Write ``bits`` (uint{8*nbytes}) at byte ``offsets``; in lane order, so the highest lane of
    a duplicate address lands (an arbitrary but fixed choice: on silicon it is undefined)."""
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[nbytes]
    bits = np.ascontiguousarray(bits, dtype=dt)
    if offsets.size and data.size % nbytes == 0 and not (offsets % nbytes).any():
        data.view(dt)[offsets // nbytes] = bits
        return
    data[offsets[:, None] + np.arange(nbytes)] = bits.view(np.uint8).reshape(-1, nbytes)


def bytes_of(offsets: np.ndarray, nbytes: int) -> np.ndarray:
    """Every byte position the accesses at ``offsets`` touch, (lanes, nbytes)."""
    return offsets[:, None] + np.arange(nbytes)


def check_read(shadow: Shadow, offsets: np.ndarray, nbytes: int, who: Access) -> List[Conflict]:
    """Update the shadow for a read; the races and uninitialised bytes it finds (one per lane)."""
    pos = bytes_of(offsets, nbytes)                   # (lanes, nbytes)
    out: List[Conflict] = []
    if not shadow.all_init:
        uninit = ~shadow.init[pos]
        if uninit.any():
            lanes = np.flatnonzero(uninit.any(axis=1))
            out += [Conflict("uninitialized", int(p), None, int(offsets[p])) for p in lanes[:4]]
    g = who.gtid[:, None]
    wg = shadow.w_gtid[pos]
    written = wg >= 0
    if written.any():                                # a read of bytes nothing wrote races with nothing
        same_block = shadow.w_block[pos] == who.block
        ordered = same_block & (shadow.w_epoch[pos] != who.epoch)
        unordered = written & (wg != g) & ~ordered
        # The read of a compare-and-swap loop (read, compute, atomicCAS with the value read as the
        # compare operand, retry when it changed) is no race error where only atomics wrote what it
        # read: PTX does not make a data race undefined behaviour (a weak load returns a value some
        # write stored, and an aligned atomic's store is never torn), and the atomicCAS stores only
        # if the value read is still there.  It is a note.  Any other plain read of what unordered
        # atomics wrote (counts read before a barrier) still races: its value is taken as final.
        by_atomic = shadow.w_atomic[pos] if who.cas_checked else np.zeros(pos.shape, bool)
        conflict = unordered & ~by_atomic
        if conflict.any():
            out += _classify(shadow, pos, conflict, who, write=False, reader=True)
        stale = unordered & by_atomic & ~conflict.any(axis=1, keepdims=True)
        if stale.any():
            out += [dataclasses.replace(c, kind=ATOMIC_READ)
                    for c in _classify(shadow, pos, stale, who, write=False, reader=True)]
    # record this read
    flat = pos.reshape(-1)
    gt = np.repeat(who.gtid, nbytes)
    fresh = (shadow.r_block[flat] != who.block) | (shadow.r_epoch[flat] != who.epoch) | (shadow.r_gtid[flat] < 0)
    multi = ~fresh & (shadow.r_gtid[flat] != gt)
    shadow.r_multi[flat] = np.where(fresh, False, shadow.r_multi[flat] | multi)
    shadow.r_gtid[flat] = gt
    shadow.r_block[flat] = who.block
    shadow.r_epoch[flat] = who.epoch
    shadow.r_seq[flat] = who.seq
    shadow.r_wsync[flat] = np.repeat(who.wsync, nbytes)
    shadow.r_pc[flat] = who.pc
    return out


def check_write(shadow: Shadow, offsets: np.ndarray, nbytes: int, who: Access) -> List[Conflict]:
    """Update the shadow for a write (or atomic); the races it finds (one per lane)."""
    pos = bytes_of(offsets, nbytes)
    out: List[Conflict] = []
    g = who.gtid[:, None]
    # write after write (bytes nobody wrote yet: no conflict, and no more gathers)
    wg = shadow.w_gtid[pos]
    written = wg >= 0
    if written.any():
        ordered = (shadow.w_block[pos] == who.block) & (shadow.w_epoch[pos] != who.epoch)
        both_atomic = shadow.w_atomic[pos] & who.atomic
        waw = written & (wg != g) & ~ordered & ~both_atomic & (shadow.w_seq[pos] != who.seq)
        if waw.any():
            out += _classify(shadow, pos, waw, who, write=True, reader=False)
    # write after read
    rg = shadow.r_gtid[pos]
    read = rg >= 0
    if read.any():
        r_ordered = (shadow.r_block[pos] == who.block) & (shadow.r_epoch[pos] != who.epoch)
        war = read & ((rg != g) | shadow.r_multi[pos]) & ~r_ordered & ~who.atomic & (shadow.r_seq[pos] != who.seq)
        if war.any():
            out += _classify(shadow, pos, war, who, write=True, reader=True)
    flat = pos.reshape(-1)
    if not shadow.all_init:
        shadow.init[flat] = True
    shadow.w_gtid[flat] = np.repeat(who.gtid, nbytes)
    shadow.w_block[flat] = who.block
    shadow.w_epoch[flat] = who.epoch
    shadow.w_seq[flat] = who.seq
    shadow.w_wsync[flat] = np.repeat(who.wsync, nbytes)
    shadow.w_pc[flat] = who.pc
    shadow.w_atomic[flat] = who.atomic
    return out


def _classify(shadow: Shadow, pos: np.ndarray, bad: np.ndarray, who: Access, write: bool,
              reader: bool) -> List[Conflict]:
    """Name each lane's first conflicting byte: a race between warps (or blocks), or lanes of one
    warp ordered only by lockstep execution (no __syncwarp between them)."""
    out = []
    lanes = np.flatnonzero(bad.any(axis=1))
    for p in lanes[:4]:
        b = int(np.argmax(bad[p]))
        at = pos[p, b]
        if reader and write:          # write after read: the earlier access is a read
            og, ob, opc, ows, owrite = (shadow.r_gtid[at], shadow.r_block[at], shadow.r_pc[at], shadow.r_wsync[at], False)
        else:
            og, ob, opc, ows, owrite = (shadow.w_gtid[at], shadow.w_block[at], shadow.w_pc[at], shadow.w_wsync[at], True)
        same_warp = ob == who.block and og // 32 == who.gtid[p] // 32   # gtid = block * padded threads + tid
        kind = "lockstep" if same_warp and ows == who.wsync[p] else "race"
        if same_warp and ows != who.wsync[p]:
            continue            # ordered by a __syncwarp of that warp
        out.append(Conflict(kind, int(p), None, int(at), int(og), int(ob), int(opc), owrite, write))
    return out


def sectors(addrs: np.ndarray, nbytes: int) -> int:
    """The distinct 32-byte sectors the accesses touch (one warp-instruction's global traffic)."""
    if addrs.size == 0:
        return 0
    first = addrs // SECTOR_BYTES
    last = (addrs + nbytes - 1) // SECTOR_BYTES
    if (first == last).all():
        return int(np.unique(first).size)
    return int(np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)])).size)


def sectors_per_warp(warps: np.ndarray, addrs: np.ndarray, nbytes: int) -> Tuple[int, int]:
    """(requests, sectors) of one instruction for all the warps issuing it: one request per warp,
    and per warp the distinct 32-byte sectors its lanes touch (:func:`sectors`), summed."""
    if addrs.size == 0:
        return 0, 0
    first = addrs // SECTOR_BYTES
    last = (addrs + nbytes - 1) // SECTOR_BYTES
    if (first != last).any():              # accesses that straddle sectors: every sector they touch
        span = int((last - first).max()) + 1
        touched = first[:, None] + np.arange(span)
        keep = touched <= last[:, None]
        sec = touched[keep]
        w = np.broadcast_to(warps[:, None], touched.shape)[keep]
    else:
        sec, w = first, warps
    # distinct (warp, sector) pairs, as one int64 key each (sectors of a 48-bit address space fit
    # 43 bits), counted after a sort (cheaper than np.unique for a warp-group's few hundred lanes)
    keys = np.sort((w.astype(np.int64) << 45) | sec.astype(np.int64))
    ws = np.sort(warps)
    return 1 + int(np.count_nonzero(ws[1:] != ws[:-1])), 1 + int(np.count_nonzero(keys[1:] != keys[:-1]))


def wavefronts_per_warp(warps: np.ndarray, lanes: np.ndarray, offsets: np.ndarray,
                        nbytes: int) -> Tuple[int, int]:
    """(wavefronts, ideal) of one shared-memory instruction for all the warps issuing it: per
    warp, what :func:`bank_wavefronts` counts, summed."""
    if offsets.size == 0:
        return 0, 0
    per_phase = 32 // max(1, nbytes // BANK_BYTES) if nbytes > BANK_BYTES else 32
    group = warps.astype(np.int64) * (32 // per_phase) + lanes.astype(np.int64) // per_phase   # (warp, phase)
    words = (offsets[:, None] + np.arange(0, max(nbytes, 1), BANK_BYTES)) // BANK_BYTES
    g = np.broadcast_to(group[:, None], words.shape).reshape(-1)
    pairs = np.unique((g << 40) | words.reshape(-1).astype(np.int64))      # distinct (group, word)
    pg, pw = pairs >> 40, pairs & ((1 << 40) - 1)
    groups, gi = np.unique(pg, return_inverse=True)
    per_bank = np.bincount(gi * BANKS + pw % BANKS, minlength=groups.size * BANKS).reshape(groups.size, BANKS)
    return int(per_bank.max(axis=1).sum()), int(groups.size)


def lines(addrs: np.ndarray, nbytes: int) -> int:
    """The distinct 128-byte lines the accesses touch."""
    if addrs.size == 0:
        return 0
    first = addrs // LINE_BYTES
    last = (addrs + nbytes - 1) // LINE_BYTES
    return int(np.unique(np.concatenate([first, last])).size)


def bank_wavefronts(lanes: np.ndarray, offsets: np.ndarray, nbytes: int) -> Tuple[int, int]:
    """(wavefronts, ideal) for one warp's shared-memory access.

    A 32-bit access is served in one wavefront unless two lanes touch different 4-byte words of
    the same bank (the same word is a broadcast); each extra distinct word in the busiest bank
    costs a wavefront.  64- and 128-bit accesses are served per half- and quarter-warp (16 and 8
    lanes each carry 8 and 16 bytes), so their ideal is 2 and 4 wavefronts.  Sub-word accesses
    count the words they fall in.
    """
    if offsets.size == 0:
        return 0, 0
    per_phase = 32 // max(1, nbytes // BANK_BYTES) if nbytes > BANK_BYTES else 32
    phases = lanes // per_phase
    total, ideal = 0, 0
    for ph in np.unique(phases):
        sel = phases == ph
        words = np.unique(((offsets[sel][:, None] + np.arange(0, max(nbytes, 1), BANK_BYTES)) // BANK_BYTES).reshape(-1))
        banks = words % BANKS
        total += int(np.bincount(banks, minlength=BANKS).max())
        ideal += 1
    return total, ideal
