"""What an emulated launch found wrong, in the learner's words: the four compute-sanitizer tools'
classes (memcheck, racecheck, initcheck, synccheck), plus the ones only an emulator can name
(a shuffle that reads a lane outside its mask, a loop that never ends).

Each :class:`Hazard` names the kind, the source line, the block, warp and lane, and, for a race,
both accesses.  ``severity`` is ``"error"`` (undefined behaviour: a grader fails the kernel) or
``"note"`` (worth saying, not a fault by itself).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

# The kinds, one per class of fault.
OUT_OF_BOUNDS = "out-of-bounds"          # memcheck: an address outside every allocation
MISALIGNED = "misaligned"                # memcheck: an address not a multiple of the access size
RACE = "race"                            # racecheck: two threads, one location, no barrier between
LOCKSTEP = "lockstep"                    # racecheck: lanes of one warp, ordered only by lockstep
SAME_INSTRUCTION = "same-instruction"    # lanes of one instruction storing different values to one place
UNINITIALIZED = "uninitialized"          # initcheck: a read of memory nothing wrote
BARRIER_DIVERGENCE = "barrier-divergence"  # synccheck: a barrier some threads never reach
SHUFFLE_MASK = "shuffle-mask"            # a *_sync whose mask names lanes that are not there
SHUFFLE_SOURCE = "shuffle-source"        # a shuffle reading a lane outside the mask / not active
RUNAWAY = "runaway"                      # did not finish within the instruction budget
DIVISION_BY_ZERO = "division-by-zero"    # an integer division by zero (undefined in PTX)
TRAP = "trap"                            # __trap(), assert() failing, brkpt
NARROW_INDEX = "narrow-index"            # a 32-bit index that wraps before it is widened

KINDS = (OUT_OF_BOUNDS, MISALIGNED, RACE, LOCKSTEP, SAME_INSTRUCTION, UNINITIALIZED,
         BARRIER_DIVERGENCE, SHUFFLE_MASK, SHUFFLE_SOURCE, RUNAWAY, DIVISION_BY_ZERO, TRAP, NARROW_INDEX)

#: The compute-sanitizer tool that reports each kind on silicon (None: only the emulator).
SANITIZER_TOOL = {OUT_OF_BOUNDS: "memcheck", MISALIGNED: "memcheck", RACE: "racecheck", LOCKSTEP: "racecheck",
                  SAME_INSTRUCTION: "racecheck", UNINITIALIZED: "initcheck", BARRIER_DIVERGENCE: "synccheck",
                  SHUFFLE_MASK: "synccheck", SHUFFLE_SOURCE: None, RUNAWAY: None, DIVISION_BY_ZERO: None,
                  TRAP: "memcheck", NARROW_INDEX: None}


@dataclasses.dataclass(frozen=True)
class Where:
    """One access or event: source line (``line`` in ``file``, 1-based; None if unknown), the
    block (x, y, z), thread index (x, y, z), warp and lane, and the PTX instruction."""

    line: Optional[int]
    file: str
    block: Tuple[int, int, int]
    thread: Tuple[int, int, int]
    warp: int
    lane: int
    instruction: str = ""
    inlined_from: Optional[str] = None   # "reduce.cuh:60" when the line is a call site

    def text(self) -> str:
        at = f"line {self.line}" if self.line is not None else "an unknown line"
        if self.inlined_from:
            at += f" (in {self.inlined_from})"
        blk = ", ".join(str(v) for v in self.block) if any(self.block[1:]) else str(self.block[0])
        thr = ", ".join(str(v) for v in self.thread) if any(self.thread[1:]) else str(self.thread[0])
        return f"{at}, block {blk}, thread {thr} (warp {self.warp}, lane {self.lane})"


@dataclasses.dataclass(frozen=True)
class Hazard:
    """A fault found in an emulated launch.

    Attributes:
        kind: one of :data:`KINDS`.
        message: one sentence in the learner's terms (what happened, where).
        where: the access or event it was found at.
        other: the other access of a race (None otherwise).
        severity: "error" or "note".
        details: small facts for graders and players (addresses, element indices, lane sets).
    """

    kind: str
    message: str
    where: Optional[Where] = None
    other: Optional[Where] = None
    severity: str = "error"
    details: Dict = dataclasses.field(default_factory=dict, compare=False, hash=False)

    @property
    def tool(self) -> Optional[str]:
        """The compute-sanitizer tool that reports this on silicon, or None.  racecheck looks at
        shared memory only and initcheck at global memory only, so a race in global memory (or an
        uninitialised shared read) is the emulator's alone."""
        space = self.details.get("space")
        if self.kind in (RACE, LOCKSTEP, SAME_INSTRUCTION) and space == "global":
            return None
        # measured on an H200 (sm_90): synccheck flags neither a __syncthreads() the block's other
        # threads skip on their way out (exited threads count as arrived on sm_70+) nor a full-mask
        # shuffle in a partial warp whose missing lanes were never launched
        if self.kind == BARRIER_DIVERGENCE and "missing" in self.details:
            return None
        if self.kind == SHUFFLE_MASK and self.details.get("absent_only"):
            return None
        if self.kind == UNINITIALIZED and space == "shared":
            return None
        return SANITIZER_TOOL.get(self.kind)

    def text(self) -> str:
        s = self.message
        if self.where is not None:
            s += f" [{self.where.text()}]"
        if self.other is not None:
            s += f" [other access: {self.other.text()}]"
        return s

    def __str__(self) -> str:
        return self.text()


class HazardLog:
    """The hazards of one launch, at most ``per_kind`` of each kind and severity (the rest are
    counted; notes never crowd out the errors of their kind)."""

    def __init__(self, per_kind: int = 8):
        self.per_kind = per_kind
        self.items: List[Hazard] = []
        self.counts: Dict[str, int] = {}
        self._seen = set()

    def add(self, h: Hazard, key=None) -> None:
        """Record ``h`` unless one with the same ``key`` (default: kind, line) is already there."""
        key = key if key is not None else (h.kind, h.where.line if h.where else None, h.message)
        self.counts[h.kind] = self.counts.get(h.kind, 0) + 1
        if key in self._seen:
            return
        self._seen.add(key)
        if sum(1 for x in self.items if x.kind == h.kind and x.severity == h.severity) < self.per_kind:
            self.items.append(h)

    def errors(self) -> List[Hazard]:
        return [h for h in self.items if h.severity == "error"]

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)
