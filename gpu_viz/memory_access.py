"""What each warp touched: the lanes' addresses of one memory instruction -> the 32-byte sectors and
128-byte lines of global memory, or the shared-memory banks and wavefronts.

Data path: lanes' byte offsets (recorded by a traced kernel on a GPU with ``TRACE``, computed by a
CPU model, or executed by :mod:`gpu_viz.emulator`) --(:func:`global_request` / :func:`shared_request`,
one warp at a time; :func:`requests` for a whole launch)--> counts --> the coalescing and bank
players (``gpu_viz.frames.coalescing`` / ``banks``) and the tables of notebooks 07 and 08.  The same
functions the emulator counts with (:mod:`gpu_viz.emulator.memory`), so a count derived on a GPU
from recorded addresses and the emulator's own count of the same instruction can be compared
number for number; :func:`run_counts` reads the emulator's counts per instruction and
:func:`ncu_counts` sums them as Nsight Compute's counters name them.

The rules (every GPU this course targets, sm_75..sm_90; NVIDIA's Nsight Compute Kernel Profiling
Guide, "Memory Tables", and the CUDA C++ Programming Guide, "Shared Memory" of compute capability
5.x and later):

* global memory moves in **sectors** of 32 bytes, four to a 128-byte **line**; a warp's load or
  store is one **request**, which touches every sector holding a byte some active lane asked for.
  32 lanes x 4 bytes, consecutive and 128-byte aligned: 4 sectors; the same shifted by 4 bytes: 5;
  lanes 128 bytes apart: 32.  **Efficiency** = bytes asked for / (32 x sectors touched).
* shared memory is 32 **banks** of 4 bytes (byte offset b is in bank (b / 4) mod 32).  A 32-bit
  access is served in one **wavefront** per distinct 4-byte word of its busiest bank (lanes asking
  for the same word share it: a broadcast); 64-bit accesses are served a half-warp at a time, 128-bit
  a quarter-warp at a time (ideal: 2 and 4 wavefronts).  **Bank conflicts** = wavefronts - ideal,
  which is how ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum`` counts them.

Where a generation differs: Kepler (sm_3x, not targeted) had an optional 8-byte bank mode; on
sm_70/sm_75 a 128-bit shared load whose lanes pair up on the same addresses can take 2 wavefronts
instead of 4 (NVIDIA's forum answer on "Unexpected shared memory bank conflict"); the count here
keeps 4 (it over-counts that case, and says nothing there is a conflict).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence

import numpy as np

from .emulator import memory as _mem

SECTOR_BYTES = _mem.SECTOR_BYTES
LINE_BYTES = _mem.LINE_BYTES
BANKS = _mem.BANKS
BANK_BYTES = _mem.BANK_BYTES
WARP = 32
#: The widths a lane's access may have, bytes.
WIDTHS = (1, 2, 4, 8, 16)

#: Nsight Compute's counters, and what the emulator's counts stand for in each.
NCU_METRICS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "warp requests of global loads",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "32-byte sectors those loads touched",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "warp requests of global stores",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "32-byte sectors those stores touched",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "wavefronts of shared loads",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "bank conflicts of shared loads",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "wavefronts of shared stores",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "bank conflicts of shared stores",
}


def _offsets(name: str, offsets) -> np.ndarray:
    a = np.asarray(offsets)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a 1-D array of integer byte offsets, got {a.dtype} of shape {a.shape}")
    if a.size and a.min() < 0:
        raise ValueError(f"{name} must be byte offsets >= 0, got {int(a.min())}")
    return a.astype(np.int64)


def _width(nbytes) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or int(nbytes) not in WIDTHS:
        raise ValueError(f"nbytes must be one of {WIDTHS} (the bytes one lane accesses), got {nbytes!r}")
    return int(nbytes)


def _lanes(lanes, n: int) -> np.ndarray:
    a = np.arange(n, dtype=np.int64) if lanes is None else np.asarray(lanes, np.int64)
    if a.shape != (n,):
        raise ValueError(f"lanes must hold one lane number per offset ({n}), got shape {a.shape}")
    if a.size and (a.min() < 0 or a.max() >= WARP or np.unique(a).size != a.size):
        raise ValueError(f"lanes must be distinct lane numbers 0..31, got {a.tolist()}")
    return a


@dataclasses.dataclass(frozen=True)
class GlobalRequest:
    """One warp's global load or store.

    Attributes:
        lanes: the active lanes (int64, ascending as given).  offsets: each lane's byte offset.
        nbytes: bytes per lane.  sectors: the sector numbers touched (offset // 32, ascending).
        lines: the 128-byte lines touched.
    """

    lanes: np.ndarray
    offsets: np.ndarray
    nbytes: int
    sectors: np.ndarray
    lines: np.ndarray

    @property
    def bytes(self) -> int:
        """Bytes the active lanes asked for."""
        return int(self.lanes.size) * self.nbytes

    @property
    def efficiency(self) -> float:
        """Bytes asked for / bytes of the sectors moved (1.0: nothing wasted)."""
        return self.bytes / (SECTOR_BYTES * self.sectors.size) if self.sectors.size else 1.0


def global_request(offsets, nbytes: int, lanes=None) -> GlobalRequest:
    """The sectors and lines one warp's access touches.

    Args:
        offsets: each active lane's byte offset (int array, >= 0; offsets from a 128-byte aligned
            base, as every CUDA allocation's first byte is).
        nbytes: bytes per lane (1, 2, 4, 8 or 16).
        lanes: their lane numbers (default 0, 1, ...).

    Raises:
        TypeError / ValueError: naming the argument that is not as described.
    """
    o = _offsets("offsets", offsets)
    nb = _width(nbytes)
    if o.size > WARP:
        raise ValueError(f"offsets must be one warp's lanes (at most {WARP}), got {o.size}")
    ln = _lanes(lanes, o.size)
    first, last = o // SECTOR_BYTES, (o + nb - 1) // SECTOR_BYTES
    sec = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first.tolist(), last.tolist())])
                    if o.size else np.zeros(0, np.int64))
    lines = np.unique(sec // (LINE_BYTES // SECTOR_BYTES))
    return GlobalRequest(ln, o, nb, sec.astype(np.int64), lines.astype(np.int64))


@dataclasses.dataclass(frozen=True)
class SharedRequest:
    """One warp's shared-memory access.

    Attributes:
        lanes, offsets, nbytes: as given.  banks: each lane's first bank.  words: each lane's first
        4-byte word (offset // 4).  wavefronts, ideal: as :func:`gpu_viz.emulator.memory.bank_wavefronts`
        counts them.  phases: each lane's phase (0 for 32-bit accesses; the half-warp for 64-bit,
        the quarter-warp for 128-bit).
    """

    lanes: np.ndarray
    offsets: np.ndarray
    nbytes: int
    banks: np.ndarray
    words: np.ndarray
    phases: np.ndarray
    wavefronts: int
    ideal: int

    @property
    def conflicts(self) -> int:
        """Wavefronts beyond the ideal: ncu's ``l1tex__data_bank_conflicts_*``."""
        return self.wavefronts - self.ideal

    def ways(self) -> int:
        """The busiest bank's distinct words in one phase (1: conflict-free; 32: every lane in one bank)."""
        best = 0
        for ph in np.unique(self.phases).tolist():
            sel = self.phases == ph
            words = np.unique(self.words[sel])
            best = max(best, int(np.bincount(words % BANKS, minlength=BANKS).max()))
        return best


def shared_request(offsets, nbytes: int, lanes=None) -> SharedRequest:
    """The banks and wavefronts of one warp's shared-memory access (arguments as :func:`global_request`)."""
    o = _offsets("offsets", offsets)
    nb = _width(nbytes)
    if o.size > WARP:
        raise ValueError(f"offsets must be one warp's lanes (at most {WARP}), got {o.size}")
    ln = _lanes(lanes, o.size)
    wf, ideal = _mem.bank_wavefronts(ln, o, nb)
    per_phase = WARP // (nb // BANK_BYTES) if nb > BANK_BYTES else WARP
    return SharedRequest(ln, o, nb, (o // BANK_BYTES) % BANKS, o // BANK_BYTES, ln // per_phase, int(wf), int(ideal))


def requests(threads, offsets, nbytes: int, space: str = "global") -> List:
    """One request per warp of a launch's access: ``threads`` are the accessing threads' numbers in
    their block (or in the grid: warps are ``threads // 32``), ``offsets`` their byte offsets.
    Returns :class:`GlobalRequest` s (``space="global"``) or :class:`SharedRequest` s ("shared"), in
    warp order.

    Raises:
        ValueError: ``space`` not "global" or "shared", or threads and offsets of different lengths.
    """
    if space not in ("global", "shared"):
        raise ValueError(f"space must be 'global' or 'shared', got {space!r}")
    t = np.asarray(threads, np.int64)
    o = _offsets("offsets", offsets)
    if t.shape != o.shape:
        raise ValueError(f"threads and offsets must have one entry each per access, got {t.shape} and {o.shape}")
    make = global_request if space == "global" else shared_request
    warps = t // WARP
    order = np.argsort(warps, kind="stable")
    t, o, warps = t[order], o[order], warps[order]
    cuts = np.flatnonzero(np.diff(warps)) + 1
    return [make(oo, nbytes, lanes=tt % WARP) for tt, oo in zip(np.split(t, cuts), np.split(o, cuts)) if tt.size]


def summary(reqs: Sequence) -> Dict[str, float]:
    """Totals over requests: global (``requests``, ``sectors``, ``sectors_per_request``, ``bytes``,
    ``efficiency``) or shared (``requests``, ``wavefronts``, ``ideal``, ``conflicts``,
    ``wavefronts_per_request``)."""
    reqs = list(reqs)
    if reqs and isinstance(reqs[0], SharedRequest):
        wf = sum(r.wavefronts for r in reqs)
        ideal = sum(r.ideal for r in reqs)
        return {"requests": len(reqs), "wavefronts": wf, "ideal": ideal, "conflicts": wf - ideal,
                "wavefronts_per_request": wf / len(reqs)}
    sec = sum(int(r.sectors.size) for r in reqs)
    byt = sum(r.bytes for r in reqs)
    return {"requests": len(reqs), "sectors": sec, "sectors_per_request": sec / len(reqs) if reqs else 0.0,
            "bytes": byt, "efficiency": byt / (SECTOR_BYTES * sec) if sec else 1.0}


# -- the emulator's own counts -------------------------------------------------------------------------

_OPS = {"ld": "ld", "ldu": "ld", "st": "st", "atom": "atom", "red": "red"}


def _space_of(ins) -> Optional[str]:
    return next((m[1:] for m in ins.mods if m[1:] in ("global", "shared", "local", "const", "param")), None)


def run_counts(run, line: Optional[int] = None) -> List[Dict]:
    """The emulator's memory counts of ``run`` (an :class:`gpu_viz.emulator.Run`), one row per
    instruction that touched global or shared memory: ``{"function", "pc", "line", "op" ("ld", "st",
    "atom", "red"), "space" ("global" / "shared"), "width" (bytes per lane), "requests", "sectors",
    "bytes" (asked for by the active lanes), "sectors_per_request", "efficiency", "wavefronts", "ideal",
    "conflicts", "text"}``.  ``line``:
    only the instructions of that source line."""
    from .emulator import isa

    rows = []
    for (fname, pc), s in sorted(run.stats.items()):
        ins = run.program.module.functions[fname].code[pc]
        op = _OPS.get(ins.base)
        if op is None or not (s.requests or s.wavefronts):
            continue
        src = run.program.user_line(ins)
        if line is not None and src != line:
            continue
        vec = next((int(m[2:]) for m in ins.mods if m in (".v2", ".v4", ".v8")), 1)
        try:
            width = isa.size_of(isa.the_type(ins)) * vec
        except Exception:  # noqa: BLE001  (an instruction without one type: the width is not shown)
            width = None
        space = "global" if s.requests else "shared"
        row = {"function": fname, "pc": pc, "line": src, "op": op, "space": space, "width": width,
               "text": " ".join(ins.text.split()), "requests": s.requests if space == "global" else
               s.warp_instructions, "sectors": s.sectors, "wavefronts": s.wavefronts, "ideal": s.ideal_wavefronts,
               "conflicts": s.wavefronts - s.ideal_wavefronts}
        row["bytes"] = s.bytes if space == "global" else s.shared_bytes
        row["sectors_per_request"] = s.sectors / s.requests if s.requests else 0.0
        row["efficiency"] = s.bytes / (SECTOR_BYTES * s.sectors) if s.sectors else 1.0
        rows.append(row)
    return rows


def ncu_counts(run) -> Dict[str, int]:
    """``run``'s counts summed as Nsight Compute's :data:`NCU_METRICS` name them (loads and stores
    of global memory, loads and stores of shared memory; atomics are counted by other metrics)."""
    out = dict.fromkeys(NCU_METRICS, 0)
    for r in run_counts(run):
        if r["op"] not in ("ld", "st"):
            continue
        if r["space"] == "global":
            out[f"l1tex__t_requests_pipe_lsu_mem_global_op_{r['op']}.sum"] += r["requests"]
            out[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{r['op']}.sum"] += r["sectors"]
        else:
            out[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{r['op']}.sum"] += r["wavefronts"]
            out[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{r['op']}.sum"] += r["conflicts"]
    return out
