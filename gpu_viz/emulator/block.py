"""One resident block: its warps, registers, shared and local memory, and the scheduler that
runs them.

:class:`Block` is the machine state ``st`` every executor receives (:mod:`.isa`): registers by
name (``R``), the special registers (:meth:`Block.sreg`, some from the simulated model below),
symbol addresses, generic-address windows, param space, the carry flag, and the hazard reports an
executor may raise.  Its scheduler (:meth:`Block.step`) picks the warps that run next, runs their
instructions together as one numpy operation per instruction, and hands control-flow
instructions (:data:`CONTROL`) to the branch and exit code here, to :mod:`.barriers` and to
:mod:`.calls`; the warps' SIMT stacks are :mod:`.simt`'s.

Simulated (never measured): ``%smid`` (block b on SM b mod ``sm_count``), ``%warpid`` (the
warp's index in its block), ``%clock``/``%clock64`` (``CYCLES_PER_ISSUE`` per warp-instruction the
warp issued) and ``%globaltimer`` (``NS_PER_ISSUE`` per warp-instruction of the launch).
"""
from __future__ import annotations

import re
import struct
from typing import Dict, List, Optional

import numpy as np

from . import barriers, calls
from . import hazards as hz
from . import isa
from . import memory as mem
from .ptx import EXIT, Instr, Var
from .simt import WARP, Entry, Warp, lane_list, lanes_of, mask_of, warp_masks

#: The bytes every shared-memory word holds before a block writes it: the canonical quiet NaN
#: (0x7fc00000), so that a read of a slot nobody wrote shows as NaN (and as 2143289344 as an int).
SHARED_FILL = 0x7FC00000
#: The simulated model: cycles per warp-instruction a warp issued (``%clock``), nanoseconds per
#: warp-instruction of the launch (``%globaltimer``), and the registers that only silicon knows.
CYCLES_PER_ISSUE = 4
NS_PER_ISSUE = 1
SIMULATED_SREGS = {"smid": "%smid", "warpid": "%warpid", "nwarpid": "%nwarpid", "nsmid": "%nsmid",
                   "clock": "%clock", "clock64": "%clock64", "clock_hi": "%clock_hi",
                   "globaltimer": "%globaltimer", "globaltimer_lo": "%globaltimer", "globaltimer_hi": "%globaltimer"}


class Block:
    """A resident block: its warps, registers, shared and local memory, barriers.

    ``L`` is the :class:`~gpu_viz.emulator.machine.Launch` it belongs to (not imported here: the
    launch creates its blocks), ``linear`` the block's index in the grid.
    """

    def __init__(self, L, linear: int):
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
            if barriers.release(self):
                return "more"
            waiting = [w for w in self.warps if w.state == "bar"]
            if waiting:
                barriers.deadlock(self, waiting)
                return "stuck"
            return "done"
        if L.over_budget() or sum(w.issued for w in self.warps) > L.block_budget:
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
                calls.return_to_caller(self, w)
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

    def _skip(self, group, ins, idx, fn):
        for w in group:
            w.stack[-1].pc = ins.index + 1

    # -- a launch that does not finish --------------------------------------------------------------

    def _runaway(self) -> None:
        """The launch ran past its budget or time limit: a runaway hazard naming the line that ran
        most (and the lanes parked at a reconvergence point, if the loop may wait for them)."""
        L = self.L
        hot = max(L.stats.items(), key=lambda kv: kv[1].warp_instructions, default=None)
        mine = sum(w.issued for w in self.warps)
        if L.issued > L.budget:
            limit, msg = "budget", f"did not finish in {L.budget:,} warp-instructions"
        elif mine > L.block_budget:
            limit, msg = "block_budget", (f"did not finish: block {self.linear}'s warps issued {mine:,} "
                                          f"warp-instructions, more than the {L.block_budget:,} one block may issue")
        else:
            limit, msg = "time_limit", (f"did not finish in {L.time_limit:g} s of emulation ({L.issued:,} "
                                        "warp-instructions)")
        if L.default_limits.get(limit):
            # the caller left the limit at its default: say how to give a long kernel more (a grader
            # that chose its limits has its learners' kernels stopped without this)
            msg += f" (the default limit: a longer kernel can pass launch(..., {limit}=...))"
        t = 0
        f, pc = L.kernel, 0
        details = {"budget": L.budget, "block_budget": L.block_budget, "issued": L.issued, "limit": limit}
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
                msg += (f". Lanes {lane_list(lanes)} of warp {w.id} have left the loop and wait at line {at} for the "
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

    def check_mask(self, ins: Instr, idx: np.ndarray, masks: np.ndarray, what: str,
                   exited_ok: bool = False) -> None:
        """Hazards of a *_sync's member mask: a lane outside it executing, or a named lane that is
        not executing this instruction (exited, on the other side of a branch, or not in the block).

        ``what``: the CUDA intrinsic (``__shfl_down_sync``); each message names it and the PTX
        instruction (``shfl.sync.down.b32``).  ``exited_ok``: lanes that exited, or that a partial
        warp does not have (never launched: exited from the start), may be in the mask -- true of
        ``__syncwarp`` (bar.warp.sync), which waits for the NON-EXITED lanes of its mask (CUDA
        Programming Guide); not of a shuffle, whose value from such a lane is undefined.
        """
        L = self.L
        lanes = L.lane[idx]
        warps = L.warp_of[idx]
        facts = {"instruction": ins.op, "intrinsic": what}
        what = f"{what} ({ins.op})"
        inside = ((masks >> lanes.astype(np.uint64)) & np.uint64(1)).astype(bool)
        if not inside.all():
            t = int(idx[np.flatnonzero(~inside)[0]])
            L.hazards.add(hz.Hazard(hz.SHUFFLE_MASK, f"{what}: lane {t % WARP} executes it but is not in its member "
                                    f"mask 0x{int(masks[np.flatnonzero(~inside)[0]]):08x}",
                                    L.where(self, self.cur_func, self.cur_pc, t), details=dict(facts)))
        for w, m in sorted(set(zip(warps.tolist(), masks.tolist()))):   # every mask of every warp
            sel = warps == w
            act = mask_of(lanes[sel])
            missing = m & ~act
            if missing:
                warp = self.warps[w]
                gone = missing & ~warp.exists
                exited = missing & warp.exited & warp.exists
                elsewhere = missing & ~gone & ~exited
                if exited_ok:
                    # lanes waiting on the other side of a branch that leads them out of the kernel
                    # with no bar.warp.sync on the way (`if (i >= n) return;`) exit before they could
                    # meet this one: exited lanes too, for the waiting
                    elsewhere &= ~self._leaving_lanes(warp)
                    gone = exited = 0
                    if not elsewhere:
                        continue
                why = []
                if gone:
                    why.append(f"lanes {lane_list(gone)} do not exist (the block has {L.nthreads} threads, so warp "
                               f"{w} has {bin(warp.exists).count('1')})")
                if exited:
                    why.append(f"lanes {lane_list(exited)} have exited")
                if elsewhere:
                    why.append(f"lanes {lane_list(elsewhere)} are on the other side of a branch")
                t = w * WARP + int(lanes_of(act)[0])
                L.hazards.add(hz.Hazard(
                    hz.SHUFFLE_MASK, f"{what} with mask 0x{m:08x}: " + "; ".join(why) + " -- a *_sync mask must "
                    "name exactly the lanes that execute it (undefined behaviour otherwise, even when the "
                    "result happens to be right)", L.where(self, self.cur_func, self.cur_pc, t),
                    details={"mask": m, "active": act, "missing": missing,
                             "absent_only": bool(gone) and not exited and not elsewhere, **facts}))


    def _leaving_lanes(self, warp: Warp) -> int:
        """The lanes of ``warp`` parked below the running entry of its SIMT stack (the other side of
        a branch, within the running function) whose every path leads to the kernel's exit with no
        ``bar.warp.sync`` (nor call) on the way."""
        funcs = self.L.module.functions
        out, placed = 0, warp.stack[-1].mask
        for e in reversed(warp.stack[:-1]):          # a lane resumes at the nearest entry holding it
            if e.call is not None:
                break
            lanes = e.mask & ~placed
            placed |= e.mask
            fn = funcs[e.func]
            if lanes and fn.entry and 0 <= e.pc < len(fn.code) and exits_without_warp_sync(fn, e.pc):
                out |= lanes
        return out


def exits_without_warp_sync(fn, pc: int) -> bool:
    """Whether every path of kernel ``fn`` from code index ``pc`` ends at ``ret`` / ``exit`` without
    passing a ``bar.warp.sync`` or a call (conservative: an indirect branch answers False).  Cached
    on ``fn`` by ``pc``."""
    cache = fn.__dict__.setdefault("_exits_without_warp_sync", {})
    if pc in cache:
        return cache[pc]
    seen, todo, ok = set(), [pc], True
    while todo and ok:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if not 0 <= i < len(fn.code):
            continue                             # past the last instruction: the kernel's end
        ins = fn.code[i]
        if (ins.base == "bar" and ".warp" in ins.mods) or ins.base in ("call", "brx"):
            ok = False
        elif ins.base in ("ret", "exit"):
            if ins.guard is not None:
                todo.append(i + 1)
        elif ins.base == "bra":
            todo.append(fn.labels[ins.args[0][1]])
            if ins.guard is not None:
                todo.append(i + 1)
        else:
            todo.append(i + 1)
    cache[pc] = ok
    return ok


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
CONTROL = {"bra": Block._branch, "ret": Block._ret, "exit": Block._exit, "call": calls.call,
           "bar": barriers.bar, "barrier": barriers.bar, "trap": calls.trap, "brkpt": Block._skip}
