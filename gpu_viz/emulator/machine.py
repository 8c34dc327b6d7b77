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

Simulated (never measured): ``%smid`` (block b on SM b mod ``sm_count``), ``%warpid`` (the
warp's index in its block), ``%clock``/``%clock64`` (``CYCLES_PER_ISSUE`` per warp-instruction the
warp issued) and ``%globaltimer`` (``NS_PER_ISSUE`` per warp-instruction of the launch).
"""
from __future__ import annotations

import dataclasses
import re
import struct
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import hazards as hz
from . import isa
from . import memory as mem
from .ptx import EXIT, Function, Instr, Module, Var

WARP = 32
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)
#: Static + dynamic shared memory a block may use without opting in (bytes).
SHARED_LIMIT = 48 * 1024
#: The bytes every shared-memory word holds before a block writes it: the canonical quiet NaN
#: (0x7fc00000), so that a read of a slot nobody wrote shows as NaN (and as 2143289344 as an int).
SHARED_FILL = 0x7FC00000
CYCLES_PER_ISSUE = 4
NS_PER_ISSUE = 1
DEFAULT_BUDGET = 20_000_000
SIMULATED_SREGS = {"smid": "%smid", "warpid": "%warpid", "nwarpid": "%nwarpid", "nsmid": "%nsmid",
                   "clock": "%clock", "clock64": "%clock64", "clock_hi": "%clock_hi",
                   "globaltimer": "%globaltimer", "globaltimer_lo": "%globaltimer", "globaltimer_hi": "%globaltimer"}


class LaunchError(ValueError):
    """A launch the GPU would refuse (bad shape, too much shared memory, wrong arguments), in the
    words of the CUDA error it stands for."""


class Aborted(Exception):
    """The kernel stopped (``__trap()``, a failed ``assert``): the rest of the launch does not run."""


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

@dataclasses.dataclass
class Entry:
    func: str
    pc: int
    mask: int
    rpc: int
    call: Optional[tuple] = None       # (caller rets, callee retvals) on a call frame's bottom entry


class Warp:
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
                    return                       # a call frame reached its end: the machine returns
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
    m = 0
    for b in np.asarray(lanes).tolist():
        m |= 1 << int(b)
    return m


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
        budget: the most warp-instructions before the launch is stopped as a runaway.
        time_limit: the most seconds of emulation before the same.
        record: keep an event log (per warp-instruction group) for the players.
        sm_count: SMs of the simulated GPU (``%smid``, ``%nsmid``).
        concurrent_blocks: blocks interleaved at a time under the random policy.
    """

    def __init__(self, program, kernel: str, grid, block, args: Sequence, device, shared_mem: int = 0,
                 checks: bool = True, policy: str = "converged", seed: int = 0, budget: int = DEFAULT_BUDGET,
                 time_limit: float = 60.0, record: bool = False, sm_count: int = 58, concurrent_blocks: int = 4,
                 max_events: int = 200_000):
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
        self.budget = int(budget)
        self.time_limit = float(time_limit)
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

class Block:
    """A resident block: its warps, registers, shared and local memory, barriers."""

    def __init__(self, L: Launch, linear: int):
        self.L = L
        self.linear = linear
        g = L.grid
        self.index3 = (linear % g[0], (linear // g[0]) % g[1], linear // (g[0] * g[1]))
        self.fregs: Dict[str, Dict[str, np.ndarray]] = {}
        for f, groups in L.reg_layout.items():
            regs = {}
            for dtype, names in groups:          # one zeroed buffer per storage type, a row per register
                buf = np.zeros((len(names), L.tpad), dtype)
                for k, r in enumerate(names):
                    regs[r] = buf[k]
            self.fregs[f] = regs
        self.R = self.fregs[L.kernel]
        self.warps = []
        for w in range(L.nwarps):
            n = min(WARP, L.nthreads - w * WARP)
            self.warps.append(Warp(w, (1 << n) - 1 if n < 32 else 0xFFFFFFFF, L.kernel))
        self.epoch = 0
        fill = np.frombuffer(struct.pack("<I", SHARED_FILL), np.uint8)
        span = max(L.shared_span, 16)
        self.shared_data = np.tile(fill, -(-span // 4))[:span].copy()
        self.shared = mem.Space("shared")
        for name, (off, v) in L.shared_layout.items():
            self.shared.add(mem.Region(name=_demangle(name), base=off, size=v.size,
                                       data=self.shared_data[off:off + v.size], itemsize=_itemsize(v),
                                       initialized=False))
        self.local = np.zeros((L.tpad, max(L.local_bytes, 1)), np.uint8)
        self.tparams: Dict[str, np.ndarray] = {}
        self.cc = np.zeros(L.tpad, bool)
        self.gtid0 = linear * L.tpad
        self.cur_func = L.kernel
        self.cur_pc = 0
        self.cur_warps: List[Warp] = []
        self.pending = 0                  # instructions the running group issued, not yet in Warp.issued
        self.arrivals: Dict[int, int] = {}
        self.exited_since_barrier = 0
        self.sm = linear % L.sm_count

    # -- state accessors used by executors ---------------------------------------------------------

    def sreg(self, name: str, comp: str, idx: np.ndarray, ins: Instr) -> np.ndarray:
        L = self.L
        c = "xyz".index(comp) if comp in ("x", "y", "z") else 0
        if name in SIMULATED_SREGS:
            L.simulated.add(SIMULATED_SREGS[name])
        if name == "tid":
            return L.tid[c][idx].astype(np.uint64)
        if name == "ntid":
            return np.full(idx.shape, L.block[c], np.uint64)
        if name == "ctaid":
            return np.full(idx.shape, self.index3[c], np.uint64)
        if name == "nctaid":
            return np.full(idx.shape, L.grid[c], np.uint64)
        if name == "laneid":
            return L.lane[idx].astype(np.uint64)
        if name in ("warpid",):
            return L.warp_of[idx].astype(np.uint64)
        if name == "nwarpid":
            return np.full(idx.shape, 64, np.uint64)
        if name == "smid":
            return np.full(idx.shape, self.sm, np.uint64)
        if name == "nsmid":
            return np.full(idx.shape, L.sm_count, np.uint64)
        if name == "warpsize":
            return np.full(idx.shape, WARP, np.uint64)
        if name == "gridid":
            return np.full(idx.shape, 1, np.uint64)
        if name in ("clock", "clock64", "clock_hi"):
            ws = L.warp_of[idx]
            # instructions issued: those counted so far, plus the running group's not yet added
            v = np.array([self.warps[w].issued + self.pending for w in ws.tolist()], np.uint64) \
                * np.uint64(CYCLES_PER_ISSUE)
            v = v + np.uint64(self.linear * 1000)
            return (v >> np.uint64(32)) if name == "clock_hi" else v
        if name.startswith("globaltimer"):
            v = np.full(idx.shape, L.issued * NS_PER_ISSUE, np.uint64)
            return (v >> np.uint64(32)) if name == "globaltimer_hi" else v
        if name.startswith("lanemask_"):
            lane = L.lane[idx].astype(np.uint64)
            one = np.uint64(1)
            eq = one << lane
            return {"eq": eq, "lt": eq - one, "le": (eq << one) - one, "gt": ~((eq << one) - one) & np.uint64(0xFFFFFFFF),
                    "ge": ~(eq - one) & np.uint64(0xFFFFFFFF)}[name.split("_")[1]]
        if name == "dynamic_smem_size":
            return np.full(idx.shape, L.dynamic_shared, np.uint64)
        if name in ("total_smem_size", "aggr_smem_size"):
            return np.full(idx.shape, L.shared_bytes, np.uint64)
        raise isa.Unsupported(ins, f"special register %{name}")

    def symbol_address(self, name: str, ins: Instr) -> int:
        L = self.L
        if name in L.shared_layout:
            return L.shared_layout[name][0]
        if (self.cur_func, name) in L.local_layout:
            return L.local_layout[(self.cur_func, name)]
        if name in L.globals:
            return L.globals[name].base
        if name in L.kparams:
            raise isa.Unsupported(ins, "taking the address of a kernel parameter")
        fnc = L.module.functions.get(name)
        if fnc is not None:
            raise isa.Unsupported(ins, "function pointers")
        raise isa.Unsupported(ins, f"unknown symbol {name}")

    def cvta(self, a: np.ndarray, space: str, to: bool, ins: Instr) -> np.ndarray:
        if space == "global" or space is None:
            return a
        win = {"shared": mem.SHARED_WINDOW, "local": mem.LOCAL_WINDOW}.get(space)
        if win is None:
            return a
        return (a - np.uint64(win)) if to else (a + np.uint64(win))

    def isspacep(self, a: np.ndarray, space: str) -> np.ndarray:
        a = a.astype(np.uint64)
        sh = (a >= mem.SHARED_WINDOW) & (a < mem.SHARED_WINDOW + mem.WINDOW_SIZE)
        lo = (a >= mem.LOCAL_WINDOW) & (a < mem.LOCAL_WINDOW + mem.WINDOW_SIZE)
        return {"shared": sh, "local": lo, "global": a >= mem.GLOBAL_BASE}.get(space, np.zeros(a.shape, bool))

    def param_read(self, name: str, off: int, nbytes: int, nvec: int, idx: np.ndarray, ins: Instr) -> np.ndarray:
        """``ld.param``: a kernel parameter (the same for every thread) or a call parameter (per thread)."""
        ub = isa.UBITS[nbytes]
        total = nbytes * nvec
        if name in self.L.kparams:
            raw = self.L.kparams[name]
            if off + total > len(raw):
                raise isa.Unsupported(ins, f"a read past the end of parameter {name}")
            row = np.frombuffer(raw[off:off + total], ub)
            return np.broadcast_to(row, (idx.size, nvec)).copy()
        buf = self.tparams.get(name)
        if buf is None:
            # a parameter nobody stored: the callee's own params are filled by the call
            buf = self.tparams.setdefault(name, np.zeros((self.L.tpad, max(total + off, 8)), np.uint8))
        if buf.shape[1] < off + total:
            grown = np.zeros((self.L.tpad, off + total), np.uint8)
            grown[:, :buf.shape[1]] = buf
            buf = self.tparams[name] = grown
        b = np.ascontiguousarray(buf[idx, off:off + total])
        return b.view(ub).reshape(idx.size, nvec)

    def param_write(self, name: str, off: int, nbytes: int, bits: np.ndarray, idx: np.ndarray) -> None:
        total = nbytes * bits.shape[1]
        buf = self.tparams.get(name)
        if buf is None or buf.shape[1] < off + total:
            grown = np.zeros((self.L.tpad, max(off + total, 8)), np.uint8)
            if buf is not None:
                grown[:, :buf.shape[1]] = buf
            buf = self.tparams[name] = grown
        buf[idx, off:off + total] = np.ascontiguousarray(bits).view(np.uint8).reshape(idx.size, total)

    def carry(self, idx):
        return self.cc[idx]

    def set_carry(self, idx, v):
        self.cc[idx] = v

    def note_approx(self, ins: Instr) -> None:
        self.L.approximate.add(ins.base + ".approx")

    def division_by_zero(self, ins: Instr, idx: np.ndarray, zero: np.ndarray) -> None:
        t = int(idx[np.flatnonzero(zero)[0]])
        self.L.hazards.add(hz.Hazard(hz.DIVISION_BY_ZERO, "an integer division by zero (the result is undefined in "
                                     "PTX; this emulator gives all ones)",
                                     self.L.where(self, self.cur_func, self.cur_pc, t), severity="error"))

    # -- the scheduler ------------------------------------------------------------------------------

    def run_to_end(self) -> bool:
        while True:
            state = self.step()
            if state == "done":
                return True
            if state == "stuck":
                return False

    def step(self) -> str:
        """Run one group of warps for a while; "more", "done" or "stuck" (deadlock / budget)."""
        L = self.L
        runnable = [w for w in self.warps if w.state == "run"]
        for w in runnable:
            self._settle(w)
        runnable = [w for w in self.warps if w.state == "run"]
        if not runnable:
            if self._release_barriers():
                return "more"
            waiting = [w for w in self.warps if w.state == "bar"]
            if waiting:
                self._deadlock(waiting)
                return "stuck"
            return "done"
        if L.over_budget():
            self._runaway()
            return "stuck"
        if L.policy == "random":
            w = runnable[int(L.rng.integers(len(runnable)))]
            group = [w]
            quantum = int(L.rng.integers(1, 8))
        else:
            key = min((w.stack[-1].func != L.kernel, w.stack[-1].pc) for w in runnable)
            group = [w for w in runnable if (w.stack[-1].func != L.kernel, w.stack[-1].pc) == key]
            f0 = group[0].stack[-1].func
            group = [w for w in group if w.stack[-1].func == f0]
            quantum = None
        self._run_group(group, quantum)
        return "more"

    def _settle(self, w: Warp) -> None:
        while True:
            w.settle(self.L.ends)
            if w.state == "done" or not w.stack:
                w.state = "done"
                return
            top = w.stack[-1]
            if top.call is not None and top.pc == top.rpc:
                self._return(w)
                continue
            if top.pc == EXIT:
                # lanes waiting for an exit that never comes: they have finished
                w.exited |= top.mask
                self.exited_since_barrier |= 0
                continue
            return

    def _run_group(self, group: List[Warp], quantum: Optional[int]) -> None:
        L = self.L
        top0 = group[0].stack[-1]
        func, pc = top0.func, top0.pc
        fn = L.module.functions[func]
        code = fn.code
        exs = L.execs[func]
        self.R = self.fregs[func]
        self.cur_func = func
        self.cur_warps = group
        if len(group) == 1:
            w0 = group[0]
            idx = lanes_of(w0.stack[-1].mask) + w0.id * WARP
        else:
            idx = np.concatenate([lanes_of(w.stack[-1].mask) + w.id * WARP for w in group])
        stops = {w.stack[-1].rpc for w in group}
        nw = len(group)
        nidx = int(idx.size)
        stats = L.stat_row(func, len(code))
        R = self.R
        record = L.record
        steps = 0
        end = len(code)
        self.pending = 0
        # The executors compute PTX's defined results with numpy; overflow, NaN and inf along the
        # way are the emulated arithmetic, not errors: numpy's floating-point warnings stay off.
        with np.errstate(all="ignore"):
            while True:
                if pc in stops or pc >= end:
                    break
                ins = code[pc]
                self.cur_pc = pc
                ex = exs[pc]
                kind = CONTROL.get(ins.base) if ex is None else None
                if kind is not None:
                    for w in group:
                        w.stack[-1].pc = pc
                        w.issued += steps
                    self.pending = 0
                    kind(self, group, ins, idx, fn)
                    self._count(stats, func, pc, nw, group, nidx)
                    return
                sub = idx
                guard = ins.guard
                if guard is not None:
                    g = R[guard[0]][idx]
                    sub = idx[~g] if guard[1] else idx[g]
                if sub.size:
                    L.seq += 1
                    ex(self, sub)
                    if record:
                        self._event(func, pc, group, sub)
                # the group's warps issued one more instruction (added to Warp.issued at the end:
                # %clock reads add Block.pending meanwhile)
                L.issued += nw
                s = stats[pc] if stats[pc] is not None else L.stat(func, pc)
                s.warp_instructions += nw
                s.thread_instructions += int(sub.size)
                pc += 1
                steps += 1
                self.pending = steps
                if quantum is not None and steps >= quantum:
                    break
                if L.issued > L.budget:
                    break
        for w in group:
            w.stack[-1].pc = pc
            w.issued += steps
        self.pending = 0

    def _count(self, stats, func, pc, nw, group, nidx) -> None:
        L = self.L
        L.issued += nw
        for w in group:
            w.issued += 1
        s = stats[pc] if stats[pc] is not None else L.stat(func, pc)
        s.warp_instructions += nw
        s.thread_instructions += nidx

    def _event(self, func, pc, group, sub, **extra) -> None:
        L = self.L
        if L.events is None or len(L.events) >= L.max_events:
            return
        ins = L.module.functions[func].code[pc]
        ev = {"seq": L.seq, "block": self.linear, "func": func, "pc": pc, "line": L.program.user_line(ins),
              "op": ins.op, "text": ins.text, "warps": [w.id for w in group],
              "masks": [int(mask_of(sub[(sub // WARP) == w.id] % WARP)) for w in group]}
        if ins.args and ins.args[0][0] == "reg" and ins.base not in ("st", "red", "bar"):
            name = ins.args[0][1]
            arr = self.R.get(name)
            if arr is not None:
                t = L.module.functions[func].regs.get(name, "b32")
                ev["dst"] = name
                ev["values"] = _as_values(arr[sub], t)
                ev["threads"] = sub.copy()
        ev.update(extra)
        if L.events and L.events[-1]["seq"] == L.seq and L.events[-1]["pc"] == pc:
            L.events[-1].update(ev)          # the same execution: a memory access logged it first
        else:
            L.events.append(ev)

    # -- control flow -------------------------------------------------------------------------------

    def _branch(self, group, ins, idx, fn, target: Optional[int] = None):
        L = self.L
        pc = ins.index
        if target is None:
            target = fn.labels[ins.args[0][1]]
        if ins.guard is None:
            for w in group:
                w.stack[-1].pc = target
            return
        g = self.R[ins.guard[0]][idx]
        taken = warp_masks(idx[~g] if ins.guard[1] else idx[g], L.nwarps)
        rpc = fn.reconverge.get(pc, EXIT)
        if rpc == EXIT and not fn.entry:
            rpc = len(fn.code)        # a device function's lanes meet again where it returns
        for w in group:
            top = w.stack[-1]
            m_t = taken[w.id] & top.mask
            if m_t == top.mask:
                top.pc = target
            elif not m_t:
                top.pc = pc + 1
            else:
                L.stat(top.func, pc).divergent += 1
                m_n = top.mask & ~m_t
                top.pc = rpc
                w.stack.append(Entry(top.func, target, m_t, rpc))
                w.stack.append(Entry(top.func, pc + 1, m_n, rpc))

    def _exit(self, group, ins, idx, fn):
        """`exit`, and `ret` in the kernel: the lanes (guard true) finish."""
        sub = idx
        if ins.guard is not None:
            g = self.R[ins.guard[0]][idx]
            sub = idx[~g] if ins.guard[1] else idx[g]
        leaving = warp_masks(sub, self.L.nwarps)
        for w in group:
            top = w.stack[-1]
            m = leaving[w.id] & top.mask
            w.exited |= m
            self.exited_since_barrier |= m << (32 * w.id)
            if top.mask & ~m:
                top.pc = ins.index + 1
            self._settle(w)

    def _ret(self, group, ins, idx, fn):
        if fn.entry:
            return self._exit(group, ins, idx, fn)
        return self._branch(group, ins, idx, fn, target=len(fn.code))

    def _call(self, group, ins, idx, fn):
        L = self.L
        rets, callee = ins.args[0][1], ins.args[1][1]
        params = ins.args[2][1]
        sub = idx
        if ins.guard is not None:
            raise isa.Unsupported(ins, "a predicated call")
        target = L.module.functions.get(callee)
        if target is None:
            raise isa.Unsupported(ins, f"a call to {callee}, which is not in the module")
        if target.declared_only:
            self._extern_call(group, ins, sub, callee, params, rets)
            for w in group:
                w.stack[-1].pc = ins.index + 1
            return
        if any(e.func == callee for w in group for e in w.stack):
            raise isa.Unsupported(ins, "recursion")
        for p_caller, p_callee in zip(params, target.params):
            buf = self.tparams.get(p_caller)
            if buf is None:
                raise isa.Unsupported(ins, f"call parameter {p_caller} was never stored")
            dst = self.tparams.setdefault(p_callee.name, np.zeros((L.tpad, p_callee.size), np.uint8))
            dst[sub] = buf[sub, :p_callee.size]
        for w in group:
            top = w.stack[-1]
            top.pc = ins.index + 1
            w.stack.append(Entry(callee, 0, top.mask, len(target.code),
                                 call=(tuple(rets), tuple(r.name for r in target.retvals))))

    def _return(self, w: Warp) -> None:
        L = self.L
        top = w.stack.pop()
        rets, retvals = top.call
        lanes = lanes_of(top.mask) + w.id * WARP
        for r_caller, r_callee in zip(rets, retvals):
            src = self.tparams.get(r_callee)
            if src is None:
                continue
            dst = self.tparams.setdefault(r_caller, np.zeros((L.tpad, src.shape[1]), np.uint8))
            dst[lanes, :src.shape[1]] = src[lanes]
        if not w.stack:
            w.state = "done"

    def _extern_call(self, group, ins, sub, callee, params, rets):
        L = self.L
        if callee == "vprintf":
            fmt_ptr = self._param_u64(params[0], sub)
            args_ptr = self._param_u64(params[1], sub)
            for k, t in enumerate(sub.tolist()):
                L.printf.append(self._format_printf(int(fmt_ptr[k]), int(args_ptr[k]), t))
            if rets:
                self.tparams.setdefault(rets[0], np.zeros((L.tpad, 4), np.uint8))
            return
        if callee == "__assertfail":
            msg_ptr = self._param_u64(params[0], sub)
            msg = self._cstring(int(msg_ptr[0]))
            t = int(sub[0])
            L.hazards.add(hz.Hazard(hz.TRAP, f"assert({msg}) failed: on a GPU the kernel stops with "
                                              f"'device-side assert triggered'",
                                    L.where(self, self.cur_func, ins.index, t)))
            L.aborted = True
            raise Aborted()
        raise isa.Unsupported(ins, f"a call to the external function {callee}")

    def _param_u64(self, name, sub) -> np.ndarray:
        buf = self.tparams[name]
        return buf[sub, :8].copy().view(np.uint64).reshape(-1)

    def _cstring(self, addr: int, limit: int = 4096) -> str:
        out = bytearray()
        for k in range(limit):
            b = self._read_byte(addr + k)
            if b is None or b == 0:
                break
            out.append(b)
        return out.decode("utf-8", "replace")

    def _read_byte(self, addr: int, thread: int = 0) -> Optional[int]:
        if mem.LOCAL_WINDOW <= addr < mem.LOCAL_WINDOW + mem.WINDOW_SIZE:
            off = addr - mem.LOCAL_WINDOW
            return int(self.local[thread, off]) if off < self.local.shape[1] else None
        if mem.SHARED_WINDOW <= addr < mem.SHARED_WINDOW + mem.WINDOW_SIZE:
            off = addr - mem.SHARED_WINDOW
            return int(self.shared_data[off]) if off < self.shared_data.size else None
        r = self.L.device.space.region_at(addr)
        return int(r.data[addr - r.base]) if r is not None else None

    def _format_printf(self, fmt_addr: int, args_addr: int, t: int) -> str:
        fmt = self._cstring(fmt_addr)
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
            raw = bytes(self._read_byte(pos + k, t) or 0 for k in range(size))
            pos += size
            pyfmt = "%" + m.group(1) + (m.group(2) or "") + (("." + m.group(3)) if m.group(3) else "")
            if conv in "eEfFgG":
                out.append((pyfmt + conv) % struct.unpack("<d", raw)[0])
            elif conv == "s":
                out.append((pyfmt + "s") % self._cstring(int.from_bytes(raw, "little")))
            elif conv == "p":
                out.append("0x%x" % int.from_bytes(raw, "little"))
            elif conv == "c":
                out.append(chr(raw[0]))
            else:
                v = int.from_bytes(raw, "little", signed=conv in "di")
                out.append((pyfmt + ("d" if conv in "diu" else conv)) % v)
        out.append(fmt[i:])
        return "".join(out).rstrip("\n")

    def _trap(self, group, ins, idx, fn):
        L = self.L
        sub = idx
        if ins.guard is not None:
            g = self.R[ins.guard[0]][idx]
            sub = idx[~g] if ins.guard[1] else idx[g]
        if sub.size == 0:
            for w in group:
                w.stack[-1].pc = ins.index + 1
            return
        L.hazards.add(hz.Hazard(hz.TRAP, "the kernel executed __trap(): on a GPU the launch fails with "
                                         "'unspecified launch failure'", L.where(self, fn.name, ins.index, int(sub[0]))))
        L.aborted = True
        raise Aborted()

    def _skip(self, group, ins, idx, fn):
        for w in group:
            w.stack[-1].pc = ins.index + 1

    # -- barriers -------------------------------------------------------------------------------------

    def _bar(self, group, ins, idx, fn):
        """bar.sync / barrier.sync / bar.arrive / bar.red: the group's active lanes arrive."""
        L = self.L
        mods = ins.mods
        arrive_only = ".arrive" in mods
        red = ".red" in mods
        args = ins.args
        if red:
            raise isa.Unsupported(ins, "bar.red (__syncthreads_count/and/or)")
        bid = 0
        if args:
            a0 = args[0]
            if a0[0] != "imm":
                vals = isa.reader(a0, "u32", fn, ins)(self, idx)
                bid = int(vals[0])
            else:
                bid = a0[1]
        count = None
        if len(args) > 1:
            c = args[1]
            count = int(isa.reader(c, "u32", fn, ins)(self, idx)[0]) if c[0] != "imm" else c[1]
        for w in group:
            top = w.stack[-1]
            if top.mask != w.live and len(w.stack) > 1 and _divergent(w):
                L.hazards.add(hz.Hazard(
                    hz.BARRIER_DIVERGENCE,
                    "__syncthreads() inside a branch on which the lanes of one warp disagree: only lanes "
                    f"{_lane_list(top.mask)} of warp {w.id} reached it (every live thread of the block must reach "
                    "the same barrier)", L.where(self, fn.name, ins.index, w.id * WARP + int(lanes_of(top.mask)[0]))))
            self.arrivals[bid] = self.arrivals.get(bid, 0) + bin(top.mask).count("1")
            if arrive_only:
                top.pc = ins.index + 1
            else:
                w.state = "bar"
                w.bar = (bid, count)
                w.bar_pc = (fn.name, ins.index)
                w.bar_mask = top.mask

    def _release_barriers(self) -> bool:
        """Complete every barrier whose participants have all arrived; True if any warp resumed."""
        L = self.L
        waiting = [w for w in self.warps if w.state == "bar"]
        if not waiting:
            return False
        by_bar: Dict[int, List[Warp]] = {}
        for w in waiting:
            by_bar.setdefault(w.bar[0], []).append(w)
        live = sum(bin(w.live).count("1") for w in self.warps)
        resumed = False
        for bid, ws in by_bar.items():
            count = ws[0].bar[1]
            arrived = self.arrivals.get(bid, 0)
            need = count if count is not None else live
            if arrived < need:
                continue
            # every live thread is here (or the counted number): complete the barrier
            if count is None and self.exited_since_barrier:
                n_left = bin(self.exited_since_barrier).count("1")
                f, pc = ws[0].bar_pc
                t = ws[0].id * WARP + int(lanes_of(ws[0].bar_mask)[0])
                L.hazards.add(hz.Hazard(
                    hz.BARRIER_DIVERGENCE,
                    f"__syncthreads() was reached by {arrived} of the block's {arrived + n_left} threads: "
                    f"{n_left} had already returned without reaching it (every thread of the block must reach "
                    "every __syncthreads(); on sm_70+ silicon the barrier usually completes anyway, but the "
                    "CUDA programming model leaves it undefined)", L.where(self, f, pc, t),
                    details={"arrived": arrived, "missing": n_left}))
            # the block's threads met at barrier `bid`, but at different bar.sync instructions (the
            # two arms of an if/else each with its own __syncthreads()): silicon counts arrivals per
            # barrier, so it completes there, but CUDA requires every thread to reach the same
            # __syncthreads().  (Named barriers with a thread count are the producer/consumer idiom,
            # where different instructions are the point: not reported.)
            places = sorted({w.bar_pc for w in ws})
            if count is None and len(places) > 1:
                lines = [L.program.user_line(L.module.functions[f].code[pc]) for f, pc in places]
                w0 = next(w for w in ws if w.bar_pc == places[0])
                L.hazards.add(hz.Hazard(
                    hz.BARRIER_DIVERGENCE,
                    f"the block's threads met at {len(places)} different __syncthreads() (lines "
                    f"{', '.join(str(x) for x in lines)}): every thread must reach the same __syncthreads() "
                    "(on sm_70+ silicon they release each other, but the CUDA programming model leaves it undefined; "
                    "is one inside a branch the block's threads do not all take?)",
                    L.where(self, places[0][0], places[0][1], w0.id * WARP + int(lanes_of(w0.bar_mask)[0])),
                    details={"lines": lines}))
            self.epoch += 1
            self.arrivals[bid] = 0
            self.exited_since_barrier = 0
            for w in ws:
                w.state = "run"
                w.bar = None
                w.stack[-1].pc = w.bar_pc[1] + 1
                resumed = True
        return resumed

    def _deadlock(self, waiting: List[Warp]) -> None:
        L = self.L
        w0 = waiting[0]
        f, pc = w0.bar_pc
        arrived_lanes = sum(bin(w.bar_mask).count("1") for w in waiting)
        live = sum(bin(w.live).count("1") for w in self.warps)
        others = sorted({w.bar_pc for w in waiting} - {w0.bar_pc})
        where_else = ""
        if others:
            lines = [str(L.program.user_line(L.module.functions[ff].code[pp])) for ff, pp in others]
            where_else = f"; the others wait at a different __syncthreads() (line {', '.join(lines)})"
        L.hazards.add(hz.Hazard(
            hz.BARRIER_DIVERGENCE,
            f"the block hangs: __syncthreads() was reached by {arrived_lanes} of {live} live threads{where_else}. "
            "Every thread of the block must reach the same __syncthreads(); on a GPU this kernel would hang or "
            "give undefined results", L.where(self, f, pc, w0.id * WARP + int(lanes_of(w0.bar_mask)[0]))))

    def _runaway(self) -> None:
        L = self.L
        hot = max(L.stats.items(), key=lambda kv: kv[1].warp_instructions, default=None)
        msg = f"did not finish in {L.budget:,} warp-instructions"
        if L.issued <= L.budget:
            msg = f"did not finish in {L.time_limit:g} s of emulation ({L.issued:,} warp-instructions)"
        t = 0
        f, pc = L.kernel, 0
        details = {"budget": L.budget, "issued": L.issued}
        if hot is not None:
            (f, pc), s = hot
            line = L.program.user_line(L.module.functions[f].code[pc])
            nblocks = L.grid[0] * L.grid[1] * L.grid[2]
            details.update(line=line, executions=s.warp_instructions, warps=nblocks * L.nwarps)
            msg += (f": line {line} ran {s.warp_instructions:,} times -- a loop that never ends? (does its "
                    "variable advance, and can its condition become false?)")
            w = next((w for w in self.warps if w.state == "run"), self.warps[0])
            t = w.id * WARP + (int(lanes_of(w.stack[-1].mask)[0]) if w.stack and w.stack[-1].mask else 0)
            parked = self._parked(w)
            if parked:
                lanes, at = parked
                msg += (f". Lanes {_lane_list(lanes)} of warp {w.id} have left the loop and wait at line {at} for the "
                        "others: if the looping lanes wait for them (a lock or flag held by a lane of the same warp), "
                        "the kernel needs Volta's independent thread scheduling, which this emulator does not model "
                        "(it reconverges lanes as pre-Volta GPUs did); on sm_70+ such a kernel can finish")
        L.hazards.add(hz.Hazard(hz.RUNAWAY, msg, L.where(self, f, pc, t), details=details))

    def _parked(self, w: Warp):
        """(lanes, line) of a warp's lanes that finished their side of a branch and wait at its
        reconvergence point while the running lanes loop; None if there are none.  The entry that
        waits at the merge (its pc is the top's reconvergence pc) holds them, less the lanes of
        sibling entries still to run."""
        st = w.stack
        top = st[-1]
        pending = 0
        for e in reversed(st[:-1]):
            if e.call is not None and e is not st[0]:
                return None
            if e.pc == top.rpc:
                parked = e.mask & ~top.mask & ~pending & ~w.exited
                if not parked or e.pc == EXIT:
                    return None
                code = self.L.module.functions[e.func].code
                return parked, (self.L.program.user_line(code[e.pc]) if 0 <= e.pc < len(code) else None)
            pending |= e.mask
        return None

    # -- warp-level synchronous operations -------------------------------------------------------------

    def active_in(self, idx: np.ndarray) -> np.ndarray:
        a = np.zeros(self.L.tpad, bool)
        a[idx] = True
        return a

    def check_mask(self, ins: Instr, idx: np.ndarray, masks: np.ndarray, what: str) -> None:
        """Hazards of a *_sync's member mask: a lane outside it executing, or a named lane that is
        not executing this instruction (exited, on the other side of a branch, or not in the block)."""
        L = self.L
        lanes = L.lane[idx]
        warps = L.warp_of[idx]
        inside = ((masks >> lanes.astype(np.uint64)) & np.uint64(1)).astype(bool)
        if not inside.all():
            t = int(idx[np.flatnonzero(~inside)[0]])
            L.hazards.add(hz.Hazard(hz.SHUFFLE_MASK, f"{what}: lane {t % WARP} executes it but is not in its member "
                                    f"mask 0x{int(masks[np.flatnonzero(~inside)[0]]):08x}",
                                    L.where(self, self.cur_func, self.cur_pc, t)))
        for w, m in sorted(set(zip(warps.tolist(), masks.tolist()))):   # every mask of every warp
            sel = warps == w
            act = mask_of(lanes[sel])
            missing = m & ~act
            if missing:
                warp = self.warps[w]
                gone = missing & ~warp.exists
                exited = missing & warp.exited & warp.exists
                elsewhere = missing & ~gone & ~exited
                why = []
                if gone:
                    why.append(f"lanes {_lane_list(gone)} do not exist (the block has {L.nthreads} threads, so warp "
                               f"{w} has {bin(warp.exists).count('1')})")
                if exited:
                    why.append(f"lanes {_lane_list(exited)} have exited")
                if elsewhere:
                    why.append(f"lanes {_lane_list(elsewhere)} are on the other side of a branch")
                t = w * WARP + int(lanes_of(act)[0])
                L.hazards.add(hz.Hazard(
                    hz.SHUFFLE_MASK, f"{what} with mask 0x{m:08x}: " + "; ".join(why) + " -- a *_sync mask must "
                    "name exactly the lanes that execute it (undefined behaviour otherwise, even when the "
                    "result happens to be right)", L.where(self, self.cur_func, self.cur_pc, t),
                    details={"mask": m, "active": act, "missing": missing}))


def _divergent(w: Warp) -> bool:
    """Whether the warp's current lanes are a strict part of the lanes that will meet again."""
    top = w.stack[-1]
    for e in reversed(w.stack[:-1]):
        if e.call is not None:
            return False
        return (e.mask & ~top.mask & ~w.exited) != 0
    return False


def _lane_list(mask: int) -> str:
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


def _as_values(bits: np.ndarray, t: str) -> np.ndarray:
    if t == "pred":
        return bits.astype(bool)
    if t == "f32":
        return bits.view(np.float32).copy()
    if t == "f64":
        return bits.view(np.float64).copy()
    if t.startswith("s"):
        n = bits.dtype.itemsize
        return bits.view({2: np.int16, 4: np.int32, 8: np.int64}[n]).copy()
    return bits.copy()


def _demangle(name: str) -> str:
    """``_ZZ9block_sumE4smem`` -> ``smem`` (a function's static local), else the name."""
    m = re.match(r"^_ZZ\d+\w*?E(\d+)(\w+)$", name)
    if m:
        n = int(m.group(1))
        return m.group(2)[:n]
    m = re.match(r"^_ZZ.*E(\d+)([A-Za-z_]\w*)$", name)
    if m:
        return m.group(2)[:int(m.group(1))]
    return name


def _itemsize(v: Var) -> int:
    return 4 if v.type == "b8" and v.align >= 4 else max(1, {"b8": 1}.get(v.type, isa.size_of(v.type)))


# Control-flow and synchronisation instructions, handled by the block (not by executors).
CONTROL = {"bra": Block._branch, "ret": Block._ret, "exit": Block._exit, "call": Block._call,
           "bar": Block._bar, "barrier": Block._bar, "trap": Block._trap, "brkpt": Block._skip}
