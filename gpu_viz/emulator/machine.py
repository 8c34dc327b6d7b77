"""One kernel launch, executed warp by warp on the CPU.

Data path: :class:`~gpu_viz.emulator.ptx.Module` + launch shape + arguments --(:class:`Launch`)-->
blocks, each of warps of 32 lanes whose registers are numpy arrays --> :class:`Run` (hazards,
instruction and memory-access counts, printf output, an optional event log for the players).

SIMT model.  Each warp keeps a stack of (function, pc, lane mask, reconvergence pc).  A branch on
which the warp's lanes disagree splits it: the fall-through lanes run first, then the taken ones,
and they merge again at the branch's immediate post-dominator (``ptx.reconvergence_points``).  This
is the stack-based reconvergence of pre-Volta GPUs.  Volta and later (sm_70+, every GPU this course
targets) schedule threads independently: the two sides may interleave and need not merge where
the post-dominator is, so code that works only because lanes run in lockstep (shared memory
passed between lanes with no ``__syncwarp``) is reported as a hazard, not trusted.  The values a
correct kernel computes are the same under both models, with one exception: a kernel whose lanes
of ONE warp wait for each other (a spin lock taken by lanes of the same warp, a flag one lane sets
for another) relies on Volta's forward-progress guarantee; under stack reconvergence the waiting
side never yields to the lane it waits for, so the emulator stops it by its budget and says so (a
runaway hazard naming the lanes parked at the reconvergence point).

Warps whose next instruction is the same run it together (one numpy operation for all their
active lanes); otherwise the lowest pc runs first.  ``policy="random"`` instead runs one warp at
a time for a random number of instructions (seeded), so races show a distribution of outcomes.

The parts: this module sets a launch up (grid and block shape, arguments, shared and local memory
layout, register layout) and runs its blocks; :mod:`.block` holds one block's state and its warp
scheduler (and the simulated model of ``%smid``, ``%clock`` and ``%globaltimer``); :mod:`.simt`
the warps' SIMT stacks; :mod:`.barriers` and :mod:`.calls` the barrier, call, printf, assert and
trap instructions the block runs itself.
"""
from __future__ import annotations

import dataclasses
import struct
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import hazards as hz
from . import isa
from . import memory as mem
from .block import Block
from .calls import Aborted
from .ptx import Function, Module, Var
from .simt import WARP, mask_of, warp_masks

#: What other modules import from here (the warp-mask helpers are :mod:`.simt`'s).
__all__ = ["LaunchError", "Run", "InstrStats", "Launch", "MAX_THREADS_PER_BLOCK", "MAX_GRID", "SHARED_LIMIT",
           "DEFAULT_BUDGET", "DEFAULT_BLOCK_BUDGET", "DEFAULT_TIME_LIMIT", "WARP", "mask_of", "warp_masks"]

MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
#: Static + dynamic shared memory a block may use without opting in (bytes).
SHARED_LIMIT = 48 * 1024
#: Warp-instructions a launch may issue in all (the largest lesson launch the course emulates issues
#: about 3.8 million: notebook 04's divergence at n = 2^20).
DEFAULT_BUDGET = 20_000_000
#: Warp-instructions ONE block may issue: a loop that never ends is stopped in seconds (its block's
#: warps reach this long before a launch's total budget or the time limit).  The most one lesson
#: block issues is about a million (notebook 05's grid-stride loop over n = 2^20 on one warp, the
#: deck's RMSNorm of a 2^20 row on 1024 threads).
DEFAULT_BLOCK_BUDGET = 4_000_000
DEFAULT_TIME_LIMIT = 60.0


class LaunchError(ValueError):
    """A launch the GPU would refuse (bad shape, too much shared memory, wrong arguments), in the
    words of the CUDA error it stands for."""


@dataclasses.dataclass
class InstrStats:
    """Counts for one instruction (code index) of one function."""

    warp_instructions: int = 0
    thread_instructions: int = 0
    requests: int = 0            # global: warp-level memory requests
    sectors: int = 0             # global: 32-byte sectors touched
    bytes: int = 0               # global: bytes the active lanes asked for
    wavefronts: int = 0          # shared: wavefronts served
    ideal_wavefronts: int = 0    # shared: wavefronts with no bank conflict
    divergent: int = 0           # branches on which a warp's lanes disagreed
    shared_bytes: int = 0        # shared: bytes the active lanes asked for


@dataclasses.dataclass
class Run:
    """What an emulated launch did.

    Attributes:
        kernel: the entry name.  grid, block: the launch shape (3-tuples).
        completed: every thread finished (False: a hang, the budget, or an abort).
        hazards: the :class:`~gpu_viz.emulator.hazards.HazardLog`.
        warp_instructions: warp-instructions issued in all.
        stats: {(function, code index): InstrStats}.
        printf: the lines ``printf`` wrote, in execution order.
        simulated: the special registers the kernel read that only silicon knows (their values here
            come from the named model in this module's docstring).
        approximate: opcodes whose results are computed correctly rounded, where silicon's are
            within PTX's stated error (``ex2.approx`` ...): values using them are not bit-exact.
        events: the event log (when recorded): one dict per warp-instruction group.
        seconds: wall time of the emulation.
    """

    kernel: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    completed: bool
    hazards: hz.HazardLog
    warp_instructions: int
    stats: Dict[Tuple[str, int], InstrStats]
    printf: List[str]
    simulated: Tuple[str, ...]
    approximate: Tuple[str, ...]
    events: Optional[List[dict]]
    seconds: float
    program: "object" = None

    @property
    def errors(self) -> List[hz.Hazard]:
        return self.hazards.errors()

    def line_of(self, function: str, pc: int) -> Optional[int]:
        return self.program.user_line(self.program.module.functions[function].code[pc]) if self.program else None

    def memory_summary(self) -> Dict[str, float]:
        """Global requests, sectors, sectors per request; shared wavefronts and bank conflicts."""
        req = sum(s.requests for s in self.stats.values())
        sec = sum(s.sectors for s in self.stats.values())
        byt = sum(s.bytes for s in self.stats.values())
        wf = sum(s.wavefronts for s in self.stats.values())
        ideal = sum(s.ideal_wavefronts for s in self.stats.values())
        return {"global_requests": req, "global_sectors": sec, "sectors_per_request": sec / req if req else 0.0,
                "global_bytes_requested": byt,
                "global_efficiency": byt / (32 * sec) if sec else 1.0,
                "shared_wavefronts": wf, "shared_bank_conflicts": wf - ideal}


# -- the SIMT stack -----------------------------------------------------------------------------------

# -- the launch ---------------------------------------------------------------------------------------

class Launch:
    """Set up and run one launch of ``kernel`` of ``program`` on ``device``.

    Args:
        program: a loaded :class:`gpu_viz.emulator.Program`.
        kernel: the entry's name.
        grid, block: 1-3 ints each.
        args: one per kernel parameter: device arrays (their address), numpy scalars (their bytes).
        device: the :class:`gpu_viz.emulator.Device` whose global memory the kernel sees.
        shared_mem: dynamic shared memory bytes (``extern __shared__``).
        checks: track races and uninitialised reads (slower; on by default).
        policy: "converged" (warps at the same pc run together; deterministic) or "random".
        seed: the random policy's seed.
        budget: the most warp-instructions (all warps together) before the launch is stopped as a
            runaway (:data:`DEFAULT_BUDGET`).
        block_budget: the most warp-instructions one block's warps may issue before the same
            (:data:`DEFAULT_BLOCK_BUDGET`).
        time_limit: the most seconds of emulation before the same (:data:`DEFAULT_TIME_LIMIT`).
        record: keep an event log (per warp-instruction group) for the players.
        sm_count: SMs of the simulated GPU (``%smid``, ``%nsmid``).
        concurrent_blocks: blocks interleaved at a time under the random policy.
    """

    def __init__(self, program, kernel: str, grid, block, args: Sequence, device, shared_mem: int = 0,
                 checks: bool = True, policy: str = "converged", seed: int = 0, budget: int = DEFAULT_BUDGET,
                 time_limit: float = DEFAULT_TIME_LIMIT, record: bool = False, sm_count: int = 58,
                 concurrent_blocks: int = 4, max_events: int = 200_000, block_budget: int = DEFAULT_BLOCK_BUDGET):
        self.program = program
        self.module: Module = program.module
        if kernel not in self.module.functions or not self.module.functions[kernel].entry:
            raise LaunchError(f"no kernel named {kernel!r} in the module; its kernels: {self.module.entries}")
        self.fn: Function = self.module.functions[kernel]
        self.kernel = kernel
        self.grid = _dims("grid", grid, MAX_GRID)
        self.block = _dims("block", block, (MAX_THREADS_PER_BLOCK, MAX_THREADS_PER_BLOCK, 64))
        nthreads = self.block[0] * self.block[1] * self.block[2]
        if nthreads > MAX_THREADS_PER_BLOCK:
            raise LaunchError(f"invalid configuration argument: a block of {self.block} is {nthreads} threads; "
                              f"a block holds at most {MAX_THREADS_PER_BLOCK}")
        if self.fn.max_threads is not None and nthreads > self.fn.max_threads:
            raise LaunchError(f"too many resources requested for launch: {kernel} was compiled with "
                              f"__launch_bounds__({self.fn.max_threads}) but the block has {nthreads} threads")
        if policy not in ("converged", "random"):
            raise ValueError(f"policy must be 'converged' or 'random', got {policy!r}")
        if not isinstance(shared_mem, (int, np.integer)) or isinstance(shared_mem, bool) or shared_mem < 0:
            raise ValueError(f"shared_mem must be a non-negative int (bytes), got {shared_mem!r}")
        self.nthreads = nthreads
        self.nwarps = -(-nthreads // WARP)
        self.tpad = self.nwarps * WARP
        self.device = device
        self.checks = checks
        self.policy = policy
        self.rng = np.random.default_rng(seed)
        for arg, v in (("budget", budget), ("block_budget", block_budget)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{arg} must be a positive int (warp-instructions), got {v!r}")
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.number)) \
                or not time_limit > 0:
            raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
        self.budget = int(budget)
        self.block_budget = int(block_budget)
        self.time_limit = float(time_limit)
        #: which limits are at their defaults (a runaway then says how to raise the one it hit)
        self.default_limits = {"budget": self.budget == DEFAULT_BUDGET, "block_budget": self.block_budget ==
                               DEFAULT_BLOCK_BUDGET, "time_limit": self.time_limit == DEFAULT_TIME_LIMIT}
        self.record = record
        self.max_events = max_events
        self.sm_count = int(sm_count)
        self.concurrent_blocks = max(1, int(concurrent_blocks))
        self.hazards = hz.HazardLog()
        self.stats: Dict[Tuple[str, int], InstrStats] = {}
        self.stat_rows: Dict[str, List[Optional[InstrStats]]] = {}
        self.printf: List[str] = []
        self.simulated = set()
        self.approximate = set()
        self.events: Optional[List[dict]] = [] if record else None
        self.issued = 0
        self.seq = 0
        self.pc_counts: Dict[Tuple[str, int], int] = {}
        self.globals = program.globals_on(device)
        self.kparams = self._kernel_params(args)
        self.functions = self._reachable()
        self.shared_layout, self.shared_bytes, self.shared_span = self._shared_layout(int(shared_mem))
        if self.shared_bytes > SHARED_LIMIT:
            raise LaunchError(f"too many resources requested for launch: {self.shared_bytes} bytes of shared memory "
                              f"per block (static + dynamic); the limit without opting in is {SHARED_LIMIT}")
        self.dynamic_shared = int(shared_mem)
        self.local_layout, self.local_bytes = self._local_layout()
        self.execs = {name: program.executors(name, self) for name in self.functions}
        # registers of each function grouped by storage type (Block allocates one buffer per group)
        self.reg_layout: Dict[str, List[Tuple[type, List[str]]]] = {}
        for f in self.functions:
            groups: Dict[type, List[str]] = {}
            for r, t in self.module.functions[f].regs.items():
                groups.setdefault(isa.storage_dtype(t), []).append(r)
            self.reg_layout[f] = list(groups.items())
        self.ends = {name: len(self.module.functions[name].code) for name in self.functions}
        tid = np.arange(self.tpad, dtype=np.int64)
        bx, by = self.block[0], self.block[1]
        self.tid = (tid % bx, (tid // bx) % by, tid // (bx * by))
        self.lane = tid % WARP
        self.warp_of = tid // WARP
        self.aborted = False
        self.t0 = time.perf_counter()

    # -- setup ----------------------------------------------------------------------------------

    def _reachable(self) -> List[str]:
        seen, todo = [], [self.kernel]
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.append(f)
            for ins in self.module.functions[f].code:
                if ins.base == "call":
                    callee = ins.args[1][1]
                    fnc = self.module.functions.get(callee)
                    if fnc is not None and not fnc.declared_only:
                        todo.append(callee)
        return seen

    def _kernel_params(self, args) -> Dict[str, bytes]:
        params = self.fn.params
        if len(args) != len(params):
            raise LaunchError(f"{self.kernel} takes {len(params)} arguments, got {len(args)}")
        out = {}
        for k, (p, a) in enumerate(zip(params, args)):
            out[p.name] = _param_bytes(k, p, a, self.kernel)
        return out

    def _shared_layout(self, dynamic: int):
        """Shared variables of every reachable function (and the module's), 128 bytes apart; the
        dynamic (extern) array last, 16-byte aligned.  Returns (layout, bytes used, span)."""
        layout: Dict[str, Tuple[int, Var]] = {}
        off, used = 0, 0
        shared_vars = [v for v in self.module.variables.values() if v.space == "shared" and not v.extern]
        for f in self.functions:
            shared_vars += self.module.functions[f].shared
        for v in shared_vars:
            if v.name in layout:
                continue
            off = -(-off // max(v.align, 1)) * max(v.align, 1)
            layout[v.name] = (off, v)
            used = -(-used // max(v.align, 1)) * max(v.align, 1) + v.size
            off += v.size + mem.SHARED_GAP
        ext = [v for v in self.module.variables.values() if v.space == "shared" and v.extern]
        off = -(-off // 16) * 16
        for v in ext:
            layout[v.name] = (off, dataclasses.replace(v, size=dynamic))
        if ext:
            used = -(-used // 16) * 16 + dynamic
            off += dynamic + mem.SHARED_GAP
        elif dynamic:
            used += dynamic
        return layout, used, off

    def _local_layout(self):
        layout, off = {}, 0
        for f in self.functions:
            for v in self.module.functions[f].locals:
                off = -(-off // max(v.align, 1)) * max(v.align, 1)
                layout[(f, v.name)] = off
                off += v.size
        return layout, off

    # -- running --------------------------------------------------------------------------------

    def run(self) -> Run:
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        completed = True
        try:
            if self.policy == "random" and nblocks > 1:
                completed = self._run_interleaved(nblocks)
            else:
                for b in range(nblocks):
                    blk = Block(self, b)
                    if not blk.run_to_end():
                        completed = False
                        break
        except Aborted:
            completed = False
        except isa.Unsupported as exc:
            # found while running (a special register, bar.red ...): name the source line as the
            # executors' compile does
            raise self.program.located(exc) from None
        return Run(kernel=self.kernel, grid=self.grid, block=self.block, completed=completed and not self.aborted,
                   hazards=self.hazards, warp_instructions=self.issued, stats=self.stats, printf=self.printf,
                   simulated=tuple(sorted(self.simulated)), approximate=tuple(sorted(self.approximate)),
                   events=self.events, seconds=time.perf_counter() - self.t0, program=self.program)

    def _run_interleaved(self, nblocks: int) -> bool:
        pending = list(range(nblocks))
        active: List[Block] = []
        while pending or active:
            while pending and len(active) < self.concurrent_blocks:
                active.append(Block(self, pending.pop(0)))
            blk = active[int(self.rng.integers(len(active)))]
            state = blk.step()
            if state == "done":
                active.remove(blk)
            elif state == "stuck":
                return False
        return True

    def over_budget(self) -> bool:
        return self.issued > self.budget or (time.perf_counter() - self.t0) > self.time_limit

    def stat(self, func: str, pc: int) -> InstrStats:
        key = (func, pc)
        s = self.stats.get(key)
        if s is None:
            s = self.stats[key] = InstrStats()
            row = self.stat_rows.get(func)
            if row is not None:
                row[pc] = s
        return s

    def stat_row(self, func: str, n: int) -> List[Optional[InstrStats]]:
        """The function's :class:`InstrStats` by code index (None until the instruction runs): the
        scheduler's fast path to :meth:`stat`."""
        row = self.stat_rows.get(func)
        if row is None:
            row = self.stat_rows[func] = [self.stats.get((func, pc)) for pc in range(n)]
        return row

    # -- where, for hazards ------------------------------------------------------------------------

    def where(self, block: "Block", func: str, pc: int, t: int) -> hz.Where:
        ins = self.module.functions[func].code[pc] if 0 <= pc < len(self.module.functions[func].code) else None
        line, inl = self.program.user_line_and_origin(ins) if ins is not None else (None, None)
        return hz.Where(line=line, file=self.program.source_name, block=block.index3, thread=(
            int(self.tid[0][t]), int(self.tid[1][t]), int(self.tid[2][t])), warp=int(t // WARP),
            lane=int(t % WARP), instruction=ins.text if ins is not None else "", inlined_from=inl)


def _dims(name: str, v, limits) -> Tuple[int, int, int]:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (int(v),)
    if not isinstance(v, (tuple, list)) or not 1 <= len(v) <= 3:
        raise LaunchError(f"{name} must be an int or a tuple of 1-3 ints, got {v!r}")
    out = []
    for k, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise LaunchError(f"{name}[{k}] must be an int, got {x!r}")
        if not 1 <= int(x) <= limits[k]:
            raise LaunchError(f"invalid configuration argument: {name}[{k}] = {int(x)} must be in 1..{limits[k]}")
        out.append(int(x))
    while len(out) < 3:
        out.append(1)
    return tuple(out)


def _param_bytes(k: int, p: Var, a, kernel: str) -> bytes:
    """A kernel argument as the bytes of its parameter."""
    size = p.size
    if hasattr(a, "address") and hasattr(a, "region"):       # a DeviceArray (runtime): its address
        if size != 8:
            raise LaunchError(f"argument {k} of {kernel} is a device array (a pointer, 8 bytes) but the parameter "
                              f"is {size} bytes")
        return struct.pack("<Q", a.address)
    if isinstance(a, np.ndarray) and a.ndim == 0:
        a = a[()]
    if isinstance(a, np.ndarray):
        raise LaunchError(f"argument {k} of {kernel} is a host numpy array; copy it to the device first "
                          f"(device.asarray) -- a kernel can only read device memory")
    if isinstance(a, np.generic):
        b = a.tobytes()
        if len(b) != size:
            raise LaunchError(f"argument {k} of {kernel} is {a.dtype} ({len(b)} bytes) but the parameter is "
                              f"{size} bytes (.{p.type}); pass np.{'int32' if size == 4 else 'int64'}(...) or the "
                              f"matching type")
        return b
    if isinstance(a, bool):
        raise LaunchError(f"argument {k} of {kernel} is a bool; pass a numpy integer of the parameter's size")
    if isinstance(a, int):
        kind = p.type[0]
        if kind == "f":
            raise LaunchError(f"argument {k} of {kernel} is a Python int but the parameter is .{p.type}; pass a float")
        if size not in (1, 2, 4, 8):
            raise LaunchError(f"argument {k} of {kernel}: cannot pass an int as a {size}-byte parameter")
        lo = -(1 << (8 * size - 1))
        if not lo <= a < (1 << (8 * size)):
            raise LaunchError(f"argument {k} of {kernel} = {a} does not fit the {size}-byte parameter")
        return (a & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    if isinstance(a, float):
        if p.type == "f32":
            return struct.pack("<f", a)
        if p.type == "f64":
            return struct.pack("<d", a)
        raise LaunchError(f"argument {k} of {kernel} is a float but the parameter is .{p.type}")
    if isinstance(a, (bytes, bytearray)) and len(a) == size:
        return bytes(a)
    raise LaunchError(f"argument {k} of {kernel} ({type(a).__name__}) cannot be passed; pass a device array or a "
                      f"numpy scalar of the parameter's type")


# -- one block --------------------------------------------------------------------------------------

