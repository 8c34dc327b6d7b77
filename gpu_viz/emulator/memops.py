"""Executors for the instructions that touch memory or other lanes: ``ld`` / ``st`` / ``atom`` /
``red`` in every state space, and ``shfl.sync``, ``vote.sync``, ``activemask``, ``match.sync``,
``redux.sync``, ``elect.sync``, ``bar.warp.sync``.

Every access goes through :func:`access`: alignment, bounds (each allocation and shared variable
exactly, with red zones between), then, when the launch checks, the shadow memory (races between
threads with no barrier between them, reads of bytes nothing wrote) and, always, the counts a
coalescing or bank-conflict lesson needs (32-byte sectors per warp request, shared-memory
wavefronts).
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from . import hazards as hz
from . import isa
from . import memory as mem
from .ptx import Function, Instr

WARP = 32
SPACES = ("global", "shared", "local", "const", "param")


def _space(ins: Instr) -> Optional[str]:
    return next((m[1:] for m in ins.mods if m[1:] in SPACES), None)


def _vec(ins: Instr) -> int:
    for m in ins.mods:
        if m in (".v2", ".v4", ".v8"):
            return int(m[2:])
    return 1


def _addr_reader(op: tuple, fn: Function, ins: Instr, space: Optional[str]):
    """``r(st, idx)`` -> uint64 addresses of ``[base + offset]``, and the symbol name if the base is one."""
    if op[0] != "addr":
        raise isa.Unsupported(ins, f"an address operand, got {op}")
    base, off = op[1], np.uint64(op[2] & ((1 << 64) - 1))
    if base[0] == "reg":
        t = fn.regs.get(base[1])
        if t is None:
            raise isa.Unsupported(ins, f"register {base[1]} is not declared")
        rt = "u64" if isa.size_of(t) == 8 else "u32"
        r = isa.reader(base, rt, fn, ins)
        return (lambda st, idx: r(st, idx).astype(np.uint64) + off), None
    if base[0] == "sym":
        name = base[1]
        return (lambda st, idx: np.full(idx.shape, st.symbol_address(name, ins), np.uint64) + off), name
    if base[0] == "imm":
        return (lambda st, idx: np.full(idx.shape, np.uint64(op[2]), np.uint64)), None
    raise isa.Unsupported(ins, f"address base {base}")


def cas_compare_registers(fn: Function) -> frozenset:
    """The registers whose value reaches the compare operand of an ``atom.cas`` in ``fn``, directly
    or through ``mov`` copies (the loop-carried ``mov %r10, %r3`` of a compare-and-swap loop, and
    the ``mov.b32`` of ``__float_as_int``).  A plain load into one of them is a CAS loop's read: the
    atomicCAS checks that the value read is still there before it stores.  Cached on ``fn``."""
    got = getattr(fn, "_cas_compare_registers", None)
    if got is not None:
        return got
    regs = {ins.args[2][1] for ins in fn.code
            if ins.base == "atom" and ".cas" in ins.mods and len(ins.args) > 3 and ins.args[2][0] == "reg"}
    copies = [(ins.args[0][1], ins.args[1][1]) for ins in fn.code
              if ins.base == "mov" and ins.guard is None and len(ins.args) == 2
              and ins.args[0][0] == "reg" and ins.args[1][0] == "reg"]
    grew = bool(regs)
    while grew:
        grew = False
        for d, src in copies:
            if d in regs and src not in regs:
                regs.add(src)
                grew = True
    fn._cas_compare_registers = frozenset(regs)
    return fn._cas_compare_registers


def c_ld(ins: Instr, fn: Function):
    space = _space(ins)
    t = isa.the_type(ins)
    n = _vec(ins)
    nbytes = isa.size_of(t)
    dst, addr = ins.args[0], ins.args[1]
    dsts = dst[1] if dst[0] == "vec" else [dst]
    cas_checked = n == 1 and dst[0] == "reg" and dst[1] in cas_compare_registers(fn)
    if len(dsts) != n:
        raise isa.Unsupported(ins, "vector size and destination count differ")
    wt = "b16" if t in ("f16", "bf16") else t
    writers = [isa.writer(d, wt, fn, ins) for d in dsts]
    view = np.uint16 if wt == "b16" else isa.NP[wt]
    if space == "param":
        name, off = addr[1][1], addr[2]

        def ex(st, idx):
            bits = st.param_read(name, off, nbytes, n, idx, ins)
            for k, w in enumerate(writers):
                w(st, idx, bits[:, k].view(view))
        return ex
    ra, _ = _addr_reader(addr, fn, ins, space)

    def ex(st, idx):
        bits = access(st, ins, space, ra(st, idx), nbytes, n, idx, write=None, cas_checked=cas_checked)
        for k, w in enumerate(writers):
            w(st, idx, bits[:, k].view(view))
    return ex


def c_st(ins: Instr, fn: Function):
    space = _space(ins)
    t = isa.the_type(ins)
    n = _vec(ins)
    nbytes = isa.size_of(t)
    addr, src = ins.args[0], ins.args[1]
    srcs = src[1] if src[0] == "vec" else [src]
    rt = "b16" if t in ("f16", "bf16") else t
    readers = [isa.reader(s, rt, fn, ins) for s in srcs]
    ub = isa.UBITS[nbytes]
    if space == "param":
        name, off = addr[1][1], addr[2]

        def ex(st, idx):
            bits = np.stack([np.asarray(r(st, idx)).view(ub) if np.asarray(r(st, idx)).dtype.itemsize == nbytes
                             else np.asarray(r(st, idx)).astype(ub) for r in readers], axis=1)
            st.param_write(name, off, nbytes, bits, idx)
        return ex
    ra, _ = _addr_reader(addr, fn, ins, space)

    def ex(st, idx):
        vals = []
        for r in readers:
            v = np.asarray(r(st, idx))
            vals.append(v.view(ub) if v.dtype.itemsize == nbytes else v.astype(ub))
        access(st, ins, space, ra(st, idx), nbytes, n, idx, write=np.stack(vals, axis=1))
    return ex


_ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")


def c_atom(ins: Instr, fn: Function):
    space = _space(ins)
    t = isa.the_type(ins)
    op = next((m[1:] for m in ins.mods if m[1:] in _ATOM_OPS), None)
    if op is None:
        raise isa.Unsupported(ins, "atomic operation")
    nbytes = isa.size_of(t)
    is_red = ins.base == "red"
    if is_red:
        addr, b = ins.args[0], ins.args[1]
        dst, c = None, None
    else:
        dst, addr, b = ins.args[0], ins.args[1], ins.args[2]
        c = ins.args[3] if op == "cas" else None
    rt = "b16" if t in ("f16", "bf16") else t
    rb = isa.reader(b, rt, fn, ins)
    rc = isa.reader(c, rt, fn, ins) if c is not None else None
    wd = isa.writer(dst, rt, fn, ins) if dst is not None else None
    ra, _ = _addr_reader(addr, fn, ins, space)
    ub = isa.UBITS[nbytes]

    def combine(old_bits: np.ndarray, bv: np.ndarray, cv) -> np.ndarray:
        old = old_bits.view(np.uint16 if rt == "b16" else isa.NP[rt])
        if op == "add":
            if t == "f32":
                from .numerics import add_f32
                new = add_f32(old, bv)
            elif t in ("f16x2", "bf16x2", "f16", "bf16"):
                fake = Instr("add.rn." + t, "add", (".rn", "." + t), [], None, None, ins.text)
                return _half_add(fake, old_bits, bv.view(ub), t)
            else:
                with np.errstate(all="ignore"):
                    new = (old + bv).astype(old.dtype)
        elif op == "min":
            new = np.fmin(old, bv) if old.dtype.kind == "f" else np.minimum(old, bv)
        elif op == "max":
            new = np.fmax(old, bv) if old.dtype.kind == "f" else np.maximum(old, bv)
        elif op == "inc":
            new = np.where(old >= bv, 0, old + 1).astype(old.dtype)
        elif op == "dec":
            new = np.where((old == 0) | (old > bv), bv, old - 1).astype(old.dtype)
        elif op == "and":
            new = old & bv
        elif op == "or":
            new = old | bv
        elif op == "xor":
            new = old ^ bv
        elif op == "exch":
            new = bv
        else:
            new = np.where(old == bv, cv, old)
        return np.asarray(new).astype(old.dtype).view(ub)

    def ex(st, idx):
        bv = np.asarray(rb(st, idx))
        cv = np.asarray(rc(st, idx)) if rc is not None else None
        old = access(st, ins, space, ra(st, idx), nbytes, 1, idx, write=None, atomic=(combine, bv, cv))
        if wd is not None:
            wd(st, idx, old[:, 0].view(np.uint16 if rt == "b16" else isa.NP[rt]))
    return ex


def _half_add(fake, old_bits, b_bits, t):
    from . import numerics as nm
    from .half import pack, unpack
    xs, ys = unpack(old_bits, t), unpack(b_bits, t)
    res, los = [], []
    for x, y in zip(xs, ys):
        s, e = nm.two_sum(x, y)
        res.append(s)
        los.append(e)
    packed = pack(res, t, nm.RN, los)
    return np.asarray(packed).view(isa.UBITS[isa.size_of(t)])


# -- the one access path ----------------------------------------------------------------------------

def access(st, ins: Instr, space: Optional[str], addrs: np.ndarray, nbytes: int, nvec: int, idx: np.ndarray,
           write: Optional[np.ndarray], atomic=None, cas_checked: bool = False) -> np.ndarray:
    """Read (``write`` None), write (``write``: uint bits, (lanes, nvec)) or atomically update
    (``atomic``: (combine, b, c)) ``nvec`` elements of ``nbytes`` at each lane's address.
    ``cas_checked``: a read whose value an atomicCAS checks (:func:`cas_compare_registers`).

    Returns the bits read (or the old values of an atomic), (lanes, nvec); lanes whose access
    faulted read zeros and write nothing.  Faults become hazards on the launch.
    """
    L = st.L
    total = nbytes * nvec
    out = np.zeros((idx.size, nvec), isa.UBITS[nbytes])
    ok = np.ones(idx.size, bool)
    mis = (addrs % np.uint64(total)) != 0 if total > 1 else np.zeros(idx.size, bool)
    if mis.any():
        p = int(np.flatnonzero(mis)[0])
        _hazard(st, ins, idx[p], hz.MISALIGNED,
                f"{_verb(write, atomic)} {total} bytes at address 0x{int(addrs[p]):x}, which is not a multiple of "
                f"{total} (a misaligned address: on a GPU the launch fails with 'misaligned address')")
        ok &= ~mis
    # which space each lane's address is in
    if space is None:
        a = addrs
        sh = (a >= mem.SHARED_WINDOW) & (a < mem.SHARED_WINDOW + mem.WINDOW_SIZE)
        lo = (a >= mem.LOCAL_WINDOW) & (a < mem.LOCAL_WINDOW + mem.WINDOW_SIZE)
        gl = ~sh & ~lo
        parts = [("shared", sh, addrs - np.uint64(mem.SHARED_WINDOW)), ("local", lo, addrs - np.uint64(mem.LOCAL_WINDOW)),
                 ("global", gl, addrs)]
    else:
        sp = "global" if space == "const" else space
        parts = [(sp, np.ones(idx.size, bool), addrs)]
    for sp, sel, a in parts:
        sel = sel & ok
        if not sel.any():
            continue
        pos = np.flatnonzero(sel)
        if sp == "local":
            _local(st, ins, pos, a[pos], idx, nbytes, nvec, write, out, atomic)
        else:
            _spaced(st, ins, sp, pos, a[pos], idx, nbytes, nvec, write, out, atomic, cas_checked)
    if L.record:
        st._event(st.cur_func, ins.index, st.cur_warps, idx, addrs=addrs.copy(), space=space or "generic",
                  nbytes=total, write=write is not None or atomic is not None,
                  elements=_element_names(st, space, addrs), mem_threads=idx.copy())
    return out


def _element_names(st, space: Optional[str], addrs: np.ndarray) -> List[str]:
    """Each lane's access as ``name[k]`` (for the players), or its address when it is no element."""
    out = []
    for a in addrs.tolist():
        sp, off = space, a
        if space is None:
            if mem.SHARED_WINDOW <= a < mem.SHARED_WINDOW + mem.WINDOW_SIZE:
                sp, off = "shared", a - mem.SHARED_WINDOW
            elif mem.LOCAL_WINDOW <= a < mem.LOCAL_WINDOW + mem.WINDOW_SIZE:
                sp, off = "local", a - mem.LOCAL_WINDOW
            else:
                sp = "global"
        if sp == "local":
            out.append(f"local+{off}")
            continue
        r = (st.shared if sp == "shared" else st.L.device.space).region_at(off)
        out.append(r.element(off - r.base) if r is not None else f"0x{a:x}")
    return out


def _verb(write, atomic) -> str:
    return "an atomic on" if atomic is not None else ("writes" if write is not None else "reads")


def _hazard(st, ins, t, kind, msg, other=None, details=None, severity="error"):
    L = st.L
    L.hazards.add(hz.Hazard(kind, msg, L.where(st, st.cur_func, ins.index, int(t)), other, severity=severity,
                            details=details or {}))


def _local(st, ins, pos, offs, idx, nbytes, nvec, write, out, atomic):
    size = st.local.shape[1]
    total = nbytes * nvec
    bad = offs + np.uint64(total) > np.uint64(size)
    if bad.any():
        p = pos[np.flatnonzero(bad)[0]]
        _hazard(st, ins, idx[p], hz.OUT_OF_BOUNDS,
                f"{_verb(write, atomic)} local memory at offset {int(offs[np.flatnonzero(bad)[0]])}, past the "
                f"thread's {size} bytes of local arrays (an index past the end of a local array?)")
        keep = ~bad
        pos, offs = pos[keep], offs[keep]
    threads = idx[pos]
    o = offs.astype(np.int64)
    for k in range(nvec):
        cols = o[:, None] + k * nbytes + np.arange(nbytes)
        if write is not None:
            st.local[threads[:, None], cols] = write[pos, k].astype(isa.UBITS[nbytes]).view(np.uint8).reshape(-1, nbytes)
        else:
            b = np.ascontiguousarray(st.local[threads[:, None], cols])
            out[pos, k] = b.view(isa.UBITS[nbytes]).reshape(-1)
    if atomic is not None:
        raise isa.Unsupported(ins, "atomics on local memory")


def _spaced(st, ins, sp, pos, a, idx, nbytes, nvec, write, out, atomic, cas_checked=False):
    L = st.L
    space = L.device.space if sp == "global" else st.shared
    total = nbytes * nvec
    ridx, offs, ok = space.locate(a, total)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        p = bad[0]
        addr = int(a[p])
        if sp == "global" and addr < (1 << 32):
            what = (f"{_verb(write, atomic)} address 0x{addr:x}, which is no allocation: "
                    + ("a null pointer" if addr < 4096 else "an integer used as a pointer?"))
        else:
            region, where = space.nearest(addr)
            if region is not None:
                what = f"{_verb(write, atomic)} {where}"
            else:
                what = f"{_verb(write, atomic)} {sp} address 0x{addr:x}, which is no allocation"
        extra = "" if sp == "global" else " (shared memory)"
        _hazard(st, ins, idx[pos[p]], hz.OUT_OF_BOUNDS,
                f"{what}{extra}: an access out of bounds (on a GPU: 'illegal address', or a silent read of "
                "whatever lies there)", details={"lanes_out": int(bad.size), "address": addr,
                                                  "space": sp})
        keep = ok
        pos, a, ridx, offs = pos[keep], a[keep], ridx[keep], offs[keep]
    if pos.size == 0:
        return
    threads = idx[pos]
    _count_traffic(st, ins, sp, threads, a, total)
    r0 = int(ridx[0])
    one_region = bool((ridx == r0).all())             # the usual case: every lane in one array
    for r_i in ([r0] if one_region else np.unique(ridx).tolist()):
        region = space.regions[r_i]
        if one_region:
            o, ps, th = offs, pos, threads
        else:
            sel = ridx == r_i
            o, ps, th = offs[sel], pos[sel], threads[sel]
        if st.L.checks:
            _check(st, ins, region, o, th, total, write is not None or atomic is not None, atomic is not None, write,
                   ps, idx, cas_checked)
        if atomic is not None:
            _atomic(region, o, nbytes, ps, out, atomic)
            continue
        for k in range(nvec):
            ok_ = o + k * nbytes
            if write is not None:
                if region.readonly:
                    _hazard(st, ins, th[0], hz.OUT_OF_BOUNDS, f"writes {region.name}, which is read-only memory")
                    continue
                mem.scatter(region.data, ok_, write[ps, k], nbytes)
            else:
                out[ps, k] = mem.gather(region.data, ok_, nbytes)


def _atomic(region, offs, nbytes, ps, out, atomic):
    combine, bv, cv = atomic
    ub = isa.UBITS[nbytes]
    b = bv[ps]
    c = cv[ps] if cv is not None else None
    if np.unique(offs).size == offs.size:
        old = mem.gather(region.data, offs, nbytes)
        new = combine(old, b, c)
        mem.scatter(region.data, offs, new, nbytes)
        out[ps, 0] = old
        return
    for k in range(offs.size):                    # lanes one after the other, in lane order
        o = offs[k:k + 1]
        old = mem.gather(region.data, o, nbytes)
        new = combine(old, b[k:k + 1], c[k:k + 1] if c is not None else None)
        mem.scatter(region.data, o, np.asarray(new, ub), nbytes)
        out[ps[k], 0] = old[0]


def _count_traffic(st, ins, sp, threads, addrs, total):
    """Per warp of the instruction: global requests and sectors; shared wavefronts (all the warps
    of a group at once: :func:`memory.sectors_per_warp` and :func:`memory.wavefronts_per_warp`)."""
    L = st.L
    s = L.stat(st.cur_func, ins.index)
    warps = threads // WARP
    if sp == "global":
        s.bytes += int(threads.size) * total
        requests, sectors = mem.sectors_per_warp(warps, addrs.astype(np.int64), total)
        s.requests += requests
        s.sectors += sectors
    else:
        wf, ideal = mem.wavefronts_per_warp(warps, threads % WARP, addrs.astype(np.int64), total)
        s.wavefronts += wf
        s.ideal_wavefronts += ideal
        s.shared_bytes += int(threads.size) * total   # apart: global efficiency counts global bytes only


def _check(st, ins, region, offs, threads, total, is_write, is_atomic, write, ps, idx, cas_checked=False):
    L = st.L
    if is_write and write is not None and offs.size > 1:
        _same_instruction(st, ins, region, offs, threads, total, write[ps])
    sh = region.get_shadow()
    if sh is None:
        return
    warp = threads // WARP
    wsync = np.fromiter((w.wsync for w in st.warps), np.int64, len(st.warps))[warp]
    who = mem.Access(gtid=st.gtid0 + threads, block=st.linear, warp=warp, epoch=st.epoch, wsync=wsync,
                     seq=L.seq, pc=ins.index, atomic=is_atomic, cas_checked=cas_checked)
    o = offs.astype(np.int64)
    found = []
    if is_atomic:
        # an atomic reads the old value: reading bytes nothing wrote is an uninitialised read
        unset = ~sh.init[mem.bytes_of(o, total)].all(axis=1)
        found += [mem.Conflict("uninitialized", int(p), None, int(o[p])) for p in np.flatnonzero(unset)[:1]]
    found += mem.check_write(sh, o, total, who) if is_write else mem.check_read(sh, o, total, who)
    for c in found[:2]:
        t = int(threads[c.pos])
        el = region.element(c.offset if c.kind != "uninitialized" else c.offset)
        space = "shared" if any(region is r for r in st.shared.regions) else "global"
        if c.kind == "uninitialized":
            sp = "shared memory" if space == "shared" else "memory"
            _hazard(st, ins, t, hz.UNINITIALIZED,
                    f"reads {el}, which nothing in this block wrote (uninitialised {sp}: on a GPU it holds whatever "
                    "was there before)", details={"region": region.name, "element": el, "space": space})
            continue
        other = _other_where(st, c)
        if c.kind == mem.ATOMIC_READ:
            # one note a line: every lane of a compare-and-swap loop reads what another's atomic wrote
            L.hazards.add(hz.Hazard(
                hz.RACE, f"thread {int(L.tid[0][t])} (warp {t // WARP}) reads {el} with a plain load while thread "
                f"{other.thread[0]} (warp {other.warp}{'' if c.other_block == st.linear else ', block ' + str(other.block[0])}) "
                f"updates it with an atomic (line {other.line}): not a race error, because the value read is "
                "the compare operand of an atomicCAS, which stores only if it is still there (a compare-and-swap "
                "loop tries again otherwise)",
                L.where(st, st.cur_func, ins.index, t), other, severity="note",
                details={"region": region.name, "element": el, "space": space, "atomic_read": True}),
                key=(hz.RACE, "note", ins.index))
            continue
        kind = hz.LOCKSTEP if c.kind == "lockstep" else hz.RACE
        this_acc = "writes" if c.this_write else "reads"
        other_acc = "wrote" if c.other_write else "read"
        if kind == hz.LOCKSTEP:
            msg = (f"{el}: lane {t % WARP} {this_acc} it after lane {other.lane} of the same warp {other_acc} it "
                   f"(line {other.line}) with no __syncwarp() between: this only works while the warp's lanes run "
                   "in lockstep, which Volta and later GPUs do not promise")
        else:
            same_block = c.other_block == st.linear
            between = "no __syncthreads() between them" if same_block else "in another block (blocks are not ordered)"
            msg = (f"a race on {el}: thread {t % L.nthreads if False else int(L.tid[0][t])} (warp {t // WARP}) "
                   f"{this_acc} it while thread {other.thread[0]} (warp {other.warp}"
                   f"{'' if same_block else ', block ' + str(other.block[0])}) {other_acc} it at line {other.line}, "
                   f"{between}: the result depends on which runs first")
        _hazard(st, ins, t, kind, msg, other, details={"region": region.name, "element": el, "space": space})


def _same_instruction(st, ins, region, offs, threads, total, vals):
    """Lanes of one instruction storing different values to the same place."""
    o = offs.astype(np.int64)
    order = np.argsort(o, kind="stable")
    so = o[order]
    dup = np.flatnonzero(so[1:] == so[:-1])
    if dup.size == 0:
        return
    v = vals.reshape(vals.shape[0], -1)
    for d in dup[:64]:
        i, j = order[d], order[d + 1]
        if (threads[i] // WARP) != (threads[j] // WARP) and st.L.policy == "converged":
            continue        # different warps at once: a cross-warp race, reported by the shadow
        if not np.array_equal(v[i], v[j]):
            t = int(threads[j])
            _hazard(st, ins, t, hz.SAME_INSTRUCTION,
                    f"lanes {int(threads[i]) % WARP} and {t % WARP} of warp {t // WARP} store different values to "
                    f"{region.element(int(o[i]))} in one instruction: which one lands is undefined (guard the store "
                    "so that one lane writes, e.g. `if (lane == 0)`)",
                    details={"element": region.element(int(o[i])),
                             "space": "shared" if any(region is r for r in st.shared.regions) else "global"})
            return


def _other_where(st, c) -> hz.Where:
    L = st.L
    b = c.other_block
    t = int(c.other_gtid - b * L.tpad)
    g = L.grid
    idx3 = (b % g[0], (b // g[0]) % g[1], b // (g[0] * g[1]))
    f = st.cur_func
    code = L.module.functions[f].code
    ins = code[c.other_pc] if 0 <= c.other_pc < len(code) else None
    line, inl = L.program.user_line_and_origin(ins) if ins is not None else (None, None)
    return hz.Where(line=line, file=L.program.source_name, block=idx3,
                    thread=(int(L.tid[0][t]), int(L.tid[1][t]), int(L.tid[2][t])), warp=t // WARP, lane=t % WARP,
                    instruction=ins.text if ins is not None else "", inlined_from=inl)


# -- warp-level operations -----------------------------------------------------------------------------

def _masks(op, fn, ins):
    if op is None:
        return lambda st, idx: np.full(idx.shape, 0xFFFFFFFF, np.uint64)
    r = isa.reader(op, "b32", fn, ins)
    return lambda st, idx: r(st, idx).astype(np.uint64)


def c_shfl(ins: Instr, fn: Function):
    mode = next(m[1:] for m in ins.mods if m[1:] in ("up", "down", "bfly", "idx"))
    d, a, b, c = ins.args[:4]
    rmask = _masks(ins.args[4] if len(ins.args) > 4 else None, fn, ins)
    ra, rb, rc = isa.reader(a, "b32", fn, ins), isa.reader(b, "u32", fn, ins), isa.reader(c, "u32", fn, ins)
    if d[0] == "pair":
        wd, wp = isa.writer(d[1], "b32", fn, ins), isa.writer(d[2], "pred", fn, ins)
    else:
        wd, wp = isa.writer(d, "b32", fn, ins), None
    name = {"up": "__shfl_up_sync", "down": "__shfl_down_sync", "bfly": "__shfl_xor_sync", "idx": "__shfl_sync"}[mode]

    def ex(st, idx):
        L = st.L
        masks = rmask(st, idx)
        st.check_mask(ins, idx, masks, name)
        lane = L.lane[idx]
        bv = rb(st, idx).astype(np.int64) & 31
        cv = rc(st, idx).astype(np.int64)
        cval = cv & 31
        seg = (cv >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bv
            pval = j >= max_lane
        elif mode == "down":
            j = lane + bv
            pval = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bv
            pval = j <= max_lane
        else:
            j = min_lane | (bv & ~seg)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        src_t = (idx - lane) + j
        # the value: every lane's operand a, read for the source lanes (inactive ones hold what their
        # register holds: undefined on silicon, reported)
        vals = ra(st, src_t)
        active = st.active_in(idx)
        in_mask = ((masks >> j.astype(np.uint64)) & np.uint64(1)).astype(bool)
        bad = pval & (~active[src_t] | ~in_mask)
        if bad.any():
            p = int(np.flatnonzero(bad)[0])
            why = "not active here" if not active[src_t[p]] else "not in the member mask"
            _hazard(st, ins, idx[p], hz.SHUFFLE_SOURCE, severity="note",
                    msg=f"{name} ({ins.op}): lane {int(lane[p])} reads lane {int(j[p])}'s value, but lane {int(j[p])} is {why}: "
                        "the value it gets is undefined (harmless when the code ignores it, as reduce.cuh does "
                        "for partners past the last lane)")
        wd(st, idx, vals)
        if wp is not None:
            wp(st, idx, pval)
    return ex


def _per_warp_bits(st, idx, bits: np.ndarray) -> np.ndarray:
    """For each lane of ``idx``: the OR over its warp's lanes (in ``idx``) of ``bits`` (uint64)."""
    w = st.L.warp_of[idx]
    acc = np.zeros(st.L.nwarps, np.uint64)
    np.bitwise_or.at(acc, w, bits.astype(np.uint64))
    return acc[w]


def c_vote(ins: Instr, fn: Function):
    mode = next(m[1:] for m in ins.mods if m[1:] in ("all", "any", "uni", "ballot"))
    d, p = ins.args[0], ins.args[1]
    rmask = _masks(ins.args[2] if len(ins.args) > 2 else None, fn, ins)
    rp = isa.reader(p, "pred", fn, ins)
    wd = isa.writer(d, "b32" if mode == "ballot" else "pred", fn, ins)
    name = {"all": "__all_sync", "any": "__any_sync", "uni": "__uni_sync", "ballot": "__ballot_sync"}[mode]

    def ex(st, idx):
        L = st.L
        masks = rmask(st, idx)
        st.check_mask(ins, idx, masks, name)
        lane = L.lane[idx].astype(np.uint64)
        pv = rp(st, idx)
        bit = np.uint64(1) << lane
        # each lane votes among the lanes of ITS member mask: groups of one warp with different masks
        # (cooperative groups' tiles: 0x0000ffff and 0xffff0000) execute one instruction together
        ones = _per_warp_bits(st, idx, np.where(pv, bit, np.uint64(0))) & masks
        members = _per_warp_bits(st, idx, bit) & masks
        if mode == "ballot":
            wd(st, idx, ones.astype(np.uint32))
        elif mode == "all":
            wd(st, idx, ones == members)
        elif mode == "any":
            wd(st, idx, ones != 0)
        else:
            wd(st, idx, (ones == members) | (ones == 0))
    return ex


def c_activemask(ins: Instr, fn: Function):
    wd = isa.writer(ins.args[0], "b32", fn, ins)

    def ex(st, idx):
        lane = st.L.lane[idx].astype(np.uint64)
        wd(st, idx, _per_warp_bits(st, idx, np.uint64(1) << lane).astype(np.uint32))
    return ex


def c_match(ins: Instr, fn: Function):
    mode = next(m[1:] for m in ins.mods if m[1:] in ("any", "all"))
    t = isa.the_type(ins)
    d, a = ins.args[0], ins.args[1]
    rmask = _masks(ins.args[2] if len(ins.args) > 2 else None, fn, ins)
    ra = isa.reader(a, t, fn, ins)
    if d[0] == "pair":
        wd, wp = isa.writer(d[1], "b32", fn, ins), isa.writer(d[2], "pred", fn, ins)
    else:
        wd, wp = isa.writer(d, "b32", fn, ins), None

    def ex(st, idx):
        L = st.L
        masks = rmask(st, idx)
        st.check_mask(ins, idx, masks, "__match_" + mode + "_sync")
        v = ra(st, idx)
        lane = L.lane[idx]
        warp = L.warp_of[idx]
        res = np.zeros(idx.size, np.uint32)
        allp = np.zeros(idx.size, bool)
        for w in np.unique(warp).tolist():
            sel = np.flatnonzero(warp == w)
            for k in sel:
                m = int(masks[k])                     # each lane matches among its own mask's lanes
                members = [q for q in sel if m >> int(lane[q]) & 1]
                same = [q for q in members if v[q] == v[k]]
                bits = 0
                for q in same:
                    bits |= 1 << int(lane[q])
                if mode == "any":
                    res[k] = bits
                else:
                    every = len(same) == len(members)
                    res[k] = m if every else 0
                    allp[k] = every
        wd(st, idx, res)
        if wp is not None:
            wp(st, idx, allp)
    return ex


def c_redux(ins: Instr, fn: Function):
    op = next(m[1:] for m in ins.mods if m[1:] in ("add", "min", "max", "and", "or", "xor"))
    t = isa.the_type(ins)
    d, a = ins.args[0], ins.args[1]
    rmask = _masks(ins.args[2] if len(ins.args) > 2 else None, fn, ins)
    ra, wd = isa.reader(a, t, fn, ins), isa.writer(d, t, fn, ins)

    def ex(st, idx):
        L = st.L
        masks = rmask(st, idx)
        st.check_mask(ins, idx, masks, "__reduce_" + op + "_sync")
        v = ra(st, idx)
        warp = L.warp_of[idx]
        lane = L.lane[idx].astype(np.uint64)
        out = np.empty_like(v)
        # one reduction per (warp, member mask): the lanes of a mask reduce among themselves (two
        # 16-lane tiles of one warp run one redux.sync with masks 0x0000ffff and 0xffff0000)
        for w, m in set(zip(warp.tolist(), masks.tolist())):
            group = (warp == w) & (masks == m)
            sel = (warp == w) & (((np.uint64(m) >> lane) & np.uint64(1)) != 0)
            x = v[sel]
            with np.errstate(all="ignore"):
                r = {"add": lambda z: z.sum(dtype=z.dtype), "min": np.min, "max": np.max,
                     "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce}[op](x)
            out[group] = r
        wd(st, idx, out)
    return ex


def c_elect(ins: Instr, fn: Function):
    d = ins.args[0]
    rmask = _masks(ins.args[1] if len(ins.args) > 1 else None, fn, ins)
    if d[0] == "pair":
        wd, wp = isa.writer(d[1], "b32", fn, ins), isa.writer(d[2], "pred", fn, ins)
    else:
        wd, wp = isa.writer(d, "b32", fn, ins), None

    def ex(st, idx):
        masks = rmask(st, idx)
        lane = st.L.lane[idx]
        warp = st.L.warp_of[idx]
        leader = np.zeros(idx.size, bool)
        first = {}
        for k, (w, ln) in enumerate(zip(warp.tolist(), lane.tolist())):
            if int(masks[k]) >> ln & 1 and w not in first:
                first[w] = ln
                leader[k] = True
        if wd is not None:
            wd(st, idx, np.array([first.get(w, 0) for w in warp.tolist()], np.uint32))
        if wp is not None:
            wp(st, idx, leader)
    return ex


def c_warpsync(ins: Instr, fn: Function):
    rmask = _masks(ins.args[0] if ins.args else None, fn, ins)

    def ex(st, idx):
        masks = rmask(st, idx)
        st.check_mask(ins, idx, masks, "__syncwarp", exited_ok=True)
        for w in np.unique(st.L.warp_of[idx]).tolist():
            st.warps[w].wsync += 1
    return ex


def c_bar_warp(ins: Instr, fn: Function):
    if ins.has(".warp"):
        return c_warpsync(ins, fn)
    raise isa.Unsupported(ins)


COMPILERS = {"ld": c_ld, "ldu": c_ld, "st": c_st, "atom": c_atom, "red": c_atom, "shfl": c_shfl, "vote": c_vote,
             "activemask": c_activemask, "match": c_match, "redux": c_redux, "elect": c_elect}
