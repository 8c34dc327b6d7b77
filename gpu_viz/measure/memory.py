"""Measure the memory hierarchy of the GPU at hand: latency staircase, bandwidth, Little's law.

Data path: ``kernels/memory.cu`` (``pointer_chase``, ``stream_read``) --(launchers here, every
launch checked)--> :class:`LatencyPoint` / :class:`BandwidthPoint` --> figures in notebooks 01
and 04 (``gpu_viz.figures.memory``) and :func:`hardware_record` for ``benchmarks/results``.

* :func:`latency_staircase` -- one thread chases a random cyclic permutation over working sets
  of 4 KiB .. 1 GiB: the time per load steps up as the set outgrows L1, then L2 (DRAM beyond).
  Cycles come from ``clock64`` (SM clock), ns from ``%globaltimer``.  The chain is one random
  cycle with one node per ``stride_bytes`` (128 B: every load touches a new cache line), so
  neither caches' spatial locality nor a prefetcher helps.  Very large sets also miss the TLB.
* :func:`read_bandwidth` / :func:`bandwidth_vs_size` -- effective read bandwidth (bytes read
  once / kernel time, CUDA-graph replay via :func:`gpu_viz.measure.timing.time_graph`).  Buffers are
  NOT rotated here on purpose: a set that fits in L2 shows L2 bandwidth.
* :func:`occupancy_sweep` -- read bandwidth vs resident warps per SM, one 16-byte load in
  flight per thread: it rises with warps until enough bytes are in flight (Little's law).
* :func:`littles_law` -- bytes in flight = bandwidth x latency (pure arithmetic, CPU-safe).

Every measurement needs a GPU (``GPUUnavailable`` in CPU mode); nothing here fakes one.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import backend, device, kernels, occupancy
from ..check import check_int
from . import timing

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
FILE = "memory.cu"

#: Working-set sizes of the latency staircase: 4 KiB, 16 KiB, ..., 1 GiB (x4 steps).
CHASE_SIZES = tuple(4 * KiB * 4 ** k for k in range(10))
#: Bytes between two nodes of the chase (one node per 128-byte line).
CHASE_STRIDE = 128
#: Sizes of the bandwidth-vs-size curve: 64 KiB .. 1 GiB (x4 steps).
BANDWIDTH_SIZES = tuple(64 * KiB * 4 ** k for k in range(9))
#: Bytes one warp has in flight in ``stream_read`` (32 lanes x one float4).
BYTES_PER_WARP_LOAD = 32 * 16
#: The deck's claim for one global load.
DECK_LOAD_CYCLES = 200


def _pos_int(name: str, value, minimum: int = 1) -> int:
    return check_int(name, value, minimum)


def size_label(nbytes: float) -> str:
    """``4096`` -> ``"4 KiB"``, ``3 * 2**20`` -> ``"3 MiB"``."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if nbytes >= unit:
            v = nbytes / unit
            return f"{v:.0f} {name}" if abs(v - round(v)) < 1e-9 else f"{v:.1f} {name}"
    return f"{int(nbytes)} B"


def expected_level(size_bytes: int, info: Optional[device.DeviceInfo] = None) -> str:
    """Where a working set of ``size_bytes`` should live: ``"L1"``, ``"L2"``, ``"L2/DRAM"``, ``"DRAM"``.

    L1: <= 32 KiB (every sm_75+ SM has at least that much L1 next to shared memory);
    L2: <= half the L2 (H100/H200 split L2 in two halves); DRAM: > 2 x L2; between: mixed.
    """
    info = info or device.current()
    if size_bytes <= 32 * KiB:
        return "L1"
    if size_bytes <= info.l2_bytes // 2:
        return "L2"
    if size_bytes > 2 * info.l2_bytes:
        return "DRAM"
    return "L2/DRAM"


# -- latency: the pointer chase -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class LatencyPoint:
    """Latency of one dependent load with a working set of ``size_bytes``.

    Attributes:
        size_bytes: working set (bytes spanned by the chain).
        stride_bytes: bytes between nodes.
        loads: timed loads per repetition.
        cycles_per_load: median SM cycles (``clock64``) per load.
        ns_per_load: median ns (``%globaltimer``) per load.
        level: :func:`expected_level` of the size alone (:func:`classify_levels` reads the
            measurement instead).
    """

    size_bytes: int
    stride_bytes: int
    loads: int
    cycles_per_load: float
    ns_per_load: float
    level: str

    @property
    def clock_GHz(self) -> float:
        """The SM clock during the chase, cycles / ns."""
        return self.cycles_per_load / self.ns_per_load

    def row(self) -> Dict:
        return {"size_bytes": self.size_bytes, "stride_bytes": self.stride_bytes, "loads": self.loads,
                "cycles_per_load": round(self.cycles_per_load, 2), "ns_per_load": round(self.ns_per_load, 2),
                "level": self.level}


def chase_permutation(nodes: int, seed: int = 0) -> np.ndarray:
    """The visiting order of the chase: a random permutation of ``nodes`` node numbers (int64).

    The chain goes order[0] -> order[1] -> ... -> order[-1] -> order[0]: ONE cycle through every
    node, so the chase covers the whole working set before it repeats.
    """
    nodes = _pos_int("nodes", nodes, 2)
    return np.random.default_rng(seed).permutation(nodes).astype(np.int64)


def chase_next(order: np.ndarray, stride_elems: int, total_elems: int) -> np.ndarray:
    """The ``next`` array (uint32, ``total_elems`` long; non-node slots 0) for a visiting order (CPU, tests)."""
    nxt = np.zeros(total_elems, dtype=np.uint32)
    nxt[order * stride_elems] = np.roll(order, -1) * stride_elems
    return nxt


def pointer_chase(size_bytes: int, *, stride_bytes: int = CHASE_STRIDE, steps: int = 2048,
                  warm_steps: Optional[int] = None, repeats: int = 3, seed: int = 0) -> LatencyPoint:
    """Latency of a dependent load over a working set of ``size_bytes`` (one thread, one block).

    Args:
        size_bytes: working set, a multiple of ``stride_bytes``, at least 2 nodes, < 16 GiB.
        stride_bytes: bytes between nodes (multiple of 4; 128 = one node per cache line).
        steps: timed loads per repetition.
        warm_steps: loads before timing; default a full lap when the set fits in 1.5 x L2
            (capped at 2^20), else 4096.
        repeats: launches; the median per-load time is reported.
        seed: the permutation's seed.

    Raises:
        GPUUnavailable: in CPU mode.
        ValueError: bad sizes.  RuntimeError: the chase ended on the wrong node (a wrong result).
    """
    cp = backend.require_cupy("the pointer-chase latency measurement")

    size_bytes = _pos_int("size_bytes", size_bytes)
    stride_bytes = _pos_int("stride_bytes", stride_bytes, 4)
    steps = _pos_int("steps", steps)
    repeats = _pos_int("repeats", repeats)
    if stride_bytes % 4:
        raise ValueError(f"stride_bytes must be a multiple of 4 (one uint32 per node), got {stride_bytes}")
    if size_bytes % stride_bytes or size_bytes < 2 * stride_bytes:
        raise ValueError(f"size_bytes must be a multiple of stride_bytes={stride_bytes} holding >= 2 nodes, "
                         f"got {size_bytes}")
    if size_bytes // 4 >= 2 ** 32:
        raise ValueError(f"size_bytes must be < 16 GiB (32-bit node indices), got {size_bytes}")
    info = device.current()
    nodes, s = size_bytes // stride_bytes, stride_bytes // 4
    if warm_steps is None:
        warm_steps = min(nodes, 1 << 20) if size_bytes <= 1.5 * info.l2_bytes else 4096
    warm_steps = _pos_int("warm_steps", warm_steps, 0)

    order = chase_permutation(nodes, seed)
    buf = cp.empty(size_bytes // 4, dtype=cp.uint32)
    order_d = cp.asarray(order)
    buf[order_d * s] = (cp.roll(order_d, -1) * s).astype(cp.uint32)
    del order_d
    # A set larger than the L2 must miss on every timed load: each repetition walks fresh nodes
    # further along the cycle (never a line an earlier repetition touched), after a write over
    # 2 x L2 of scratch memory has evicted what the set-up scatter left in the L2.
    beyond_l2 = size_bytes > 1.5 * info.l2_bytes
    lap = warm_steps + steps
    if beyond_l2 and repeats * lap > nodes:
        raise ValueError(f"pointer_chase: {repeats} repeats x {lap} loads revisit nodes of a {nodes}-node set; "
                         "lower steps/warm_steps/repeats or grow size_bytes")
    scratch = cp.empty(max(1, 2 * info.l2_bytes // 4), dtype=cp.uint32) if beyond_l2 else None

    kernel = kernels.function(FILE, "pointer_chase")
    out_index = cp.empty(1, dtype=cp.uint32)
    out_cycles = cp.empty(1, dtype=cp.int64)
    out_ns = cp.empty(1, dtype=cp.uint64)
    cyc, ns = [], []
    for r in range(repeats):
        pos = r * lap if beyond_l2 else 0
        start = int(order[pos % nodes] * s)
        expect = int(order[(pos + lap) % nodes] * s)
        if scratch is not None:
            scratch.fill(r)
        out_index.fill(0xFFFFFFFF)
        out_cycles.fill(-1)
        out_ns.fill(0)
        kernel((1,), (1,), (buf, np.uint32(start), np.int32(warm_steps), np.int32(steps),
                              out_index, out_cycles, out_ns))
        cp.cuda.get_current_stream().synchronize()
        got = int(out_index.get()[0])
        if got != expect:
            raise RuntimeError(f"pointer_chase({size_label(size_bytes)}): ended at index {got}, expected {expect}"
                               " -- the chain or the kernel is wrong")
        c, t = int(out_cycles.get()[0]), int(out_ns.get()[0])
        if c <= 0 or t <= 0:
            raise RuntimeError(f"pointer_chase({size_label(size_bytes)}): timers read cycles={c}, ns={t}")
        cyc.append(c / steps)
        ns.append(t / steps)
    del buf, scratch
    return LatencyPoint(size_bytes=size_bytes, stride_bytes=stride_bytes, loads=steps,
                        cycles_per_load=float(np.median(cyc)), ns_per_load=float(np.median(ns)),
                        level=expected_level(size_bytes, info))


def latency_staircase(sizes: Sequence[int] = CHASE_SIZES, **kwargs) -> List[LatencyPoint]:
    """:func:`pointer_chase` for each working-set size (default 4 KiB .. 1 GiB; ~1-3 s on an H200).

    Sizes larger than a quarter of the free GPU memory are skipped.
    """
    cp = backend.require_cupy("the latency staircase")

    free, _total = cp.cuda.runtime.memGetInfo()
    return [pointer_chase(int(sz), **kwargs) for sz in sizes if sz <= free // 4]


def dram_latency(**kwargs) -> LatencyPoint:
    """One global load that misses every cache: the chase over max(256 MiB, 4 x L2)."""
    info = device.current()
    size = max(256 * MiB, 1 << math.ceil(math.log2(4 * info.l2_bytes)))
    return pointer_chase(size, **kwargs)


# -- bandwidth: stream_read ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class BandwidthPoint:
    """Effective read bandwidth of ``stream_read`` over ``size_bytes``.

    Attributes:
        size_bytes: bytes read per call.
        GBps: size_bytes / median kernel time (1e9 B/s).
        median_us, p10_us, p90_us: kernel time per call ("kernel" timing: CUDA-graph replay).
        blocks, threads: launch configuration.
        warps_per_sm: resident warps per SM if the grid is spread evenly over the SMs.
    """

    size_bytes: int
    GBps: float
    median_us: float
    p10_us: float
    p90_us: float
    blocks: int
    threads: int
    warps_per_sm: float
    timing: str = timing.KERNEL

    def row(self) -> Dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in dataclasses.asdict(self).items()}


def _reference_check(x, sums, threads_total: int, what: str):
    """Block sums of stream_read vs a float64 sum, within the float32 summation error bound."""
    cp = backend.require_cupy(what)

    ref = float(cp.sum(x, dtype=cp.float64).get())
    got_parts = sums.get().astype(np.float64)
    if not np.all(np.isfinite(got_parts)):
        bad = int(np.flatnonzero(~np.isfinite(got_parts))[0])
        raise RuntimeError(f"{what}: block_sums[{bad}] = {got_parts[bad]} (not written, or NaN/inf)")
    got = float(got_parts.sum())
    n4 = x.size // 4
    iters = -(-n4 // threads_total)
    # per-thread recursive sum of (iters + 3) terms, then <= 10 levels of the block reduction
    bound = (iters + 3 + 10) * 2.0 ** -24 * 1.01 * float(cp.sum(cp.abs(x), dtype=cp.float64).get()) + 1e-30
    if not abs(got - ref) <= bound:
        raise RuntimeError(f"{what}: sum of block sums {got!r} vs float64 reference {ref!r}: "
                           f"|diff| = {abs(got - ref):.3g} > bound {bound:.3g}")


def _fresh(n_floats: int, seed: int = 0):
    cp = backend.require_cupy("fresh random data on the GPU")

    rs = cp.random.RandomState(seed)
    return rs.uniform(0.5, 1.5, n_floats, dtype=cp.float32)


def stream_read_sums(x, blocks: int, threads: int, what: str = "stream_read"):
    """Launch ``stream_read`` once on ``x`` (a CuPy float32 array, size a multiple of 4) with
    ``blocks`` x ``threads``; the block sums (NaN-poisoned first) are checked against a float64
    sum and returned (CuPy float32 array of ``blocks``).

    Raises:
        RuntimeError: a sum outside the float32 error bound, or a block that wrote nothing.
        GPUUnavailable: in CPU mode.
    """
    cp = backend.require_cupy(what)

    if x.dtype != cp.float32 or x.size % 4:
        raise ValueError(f"x must be float32 with a size that is a multiple of 4, got {x.dtype} x {x.size}")
    kernel = kernels.function(FILE, "stream_read")
    sums = cp.full(blocks, cp.nan, dtype=cp.float32)
    kernel((blocks,), (threads,), (x, np.int64(x.size // 4), sums))
    cp.cuda.get_current_stream().synchronize()
    _reference_check(x, sums, blocks * threads, what)
    return sums


def _stream_read_run(x, blocks: int, threads: int, *, size_bytes: int, warps_per_sm: float,
                     reps: int = 20) -> BandwidthPoint:
    kernel = kernels.function(FILE, "stream_read")
    n4 = np.int64(x.size // 4)
    what = f"stream_read({size_label(size_bytes)}, {blocks}x{threads})"
    sums = stream_read_sums(x, blocks, threads, what)
    peak = device.current().peak_bandwidth_GBps or 1000.0
    # aim for ~1 ms per graph replay (low occupancy runs slower than peak)
    est_us = 3.0 + size_bytes / (peak * 1e3) * max(1.0, 32.0 / max(warps_per_sm, 0.5))
    calls = int(min(20, max(1, round(1000.0 / est_us))))

    def fn(i):
        kernel((blocks,), (threads,), (x, n4, sums))

    t = timing.time_graph(fn, reps=reps, warmup=2, calls_per_graph=calls, framework="cupy")
    # the replays overwrote the sums: check them again (same inputs, same answer)
    _reference_check(x, sums, blocks * threads, what + " after timing")
    return BandwidthPoint(size_bytes=size_bytes, GBps=t.GBps(size_bytes), median_us=t.median_us,
                          p10_us=t.p10_us, p90_us=t.p90_us, blocks=blocks, threads=threads,
                          warps_per_sm=warps_per_sm)


def read_bandwidth(size_bytes: int, *, threads: int = 256, blocks_per_sm: Optional[int] = None,
                   seed: int = 0) -> BandwidthPoint:
    """Effective read bandwidth of ``stream_read`` over ``size_bytes`` (a multiple of 16).

    Grid = SMs x ``blocks_per_sm`` (default: as many as the occupancy API says fit), block =
    ``threads``.  The result is checked against a float64 sum before and after timing.

    Raises:
        GPUUnavailable: in CPU mode.  ValueError: bad sizes.  RuntimeError: a wrong sum.
    """
    backend.require_gpu("the read-bandwidth measurement")

    size_bytes = _pos_int("size_bytes", size_bytes, 16)
    if size_bytes % 16:
        raise ValueError(f"size_bytes must be a multiple of 16 (float4 loads), got {size_bytes}")
    threads = _pos_int("threads", threads)
    info = device.current()
    occupancy.check_launch(threads, info=info)
    if blocks_per_sm is None:
        blocks_per_sm = occupancy.live_blocks_per_sm(kernels.function(FILE, "stream_read"), threads)
    blocks_per_sm = _pos_int("blocks_per_sm", blocks_per_sm)
    x = _fresh(size_bytes // 4, seed)
    blocks = info.sm_count * blocks_per_sm
    return _stream_read_run(x, blocks, threads, size_bytes=size_bytes,
                            warps_per_sm=blocks_per_sm * (-(-threads // 32)))


def bandwidth_vs_size(sizes: Sequence[int] = BANDWIDTH_SIZES, **kwargs) -> List[BandwidthPoint]:
    """:func:`read_bandwidth` for each size (default 64 KiB .. 1 GiB; no rotation: small sets sit in L2)."""
    cp = backend.require_cupy("bandwidth vs size")

    free, _total = cp.cuda.runtime.memGetInfo()
    return [read_bandwidth(int(sz), **kwargs) for sz in sizes if sz <= free // 4]


def sweep_configs(info: Optional[device.DeviceInfo] = None,
                  warps_per_sm: Optional[Sequence[int]] = None) -> List[Dict]:
    """Launch shapes giving each resident-warps-per-SM value: ``[{"warps_per_sm", "blocks_per_sm", "threads"}]``.

    Up to 16 warps: one block of 32 x w threads per SM; above, w/16 blocks of 512 threads
    (w must then be a multiple of 16).  Values above the SM's warp limit are dropped.
    """
    info = info or device.current()
    max_warps = info.max_threads_per_sm // info.warp_size
    if warps_per_sm is None:
        warps_per_sm = [w for w in (1, 2, 4, 8, 16, 32, 48, 64) if w <= max_warps]
    out = []
    for w in warps_per_sm:
        w = _pos_int("warps_per_sm", w)
        if w > max_warps:
            continue
        if w <= 16:
            out.append({"warps_per_sm": w, "blocks_per_sm": 1, "threads": 32 * w})
        elif w % 16 == 0:
            out.append({"warps_per_sm": w, "blocks_per_sm": w // 16, "threads": 512})
        else:
            raise ValueError(f"warps_per_sm above 16 must be a multiple of 16, got {w}")
    return out


def occupancy_sweep(warps_per_sm: Optional[Sequence[int]] = None, size_bytes: Optional[int] = None,
                    seed: int = 0) -> List[BandwidthPoint]:
    """Read bandwidth vs resident warps per SM over a set far larger than L2 (DRAM bandwidth).

    Grid = SMs x blocks per SM, so every SM holds the same warps if the block scheduler spreads
    the grid evenly (it fills SMs breadth first).  One 16-byte load in flight per thread, so
    bytes in flight per SM = warps x 512.

    Raises:
        GPUUnavailable: in CPU mode.  RuntimeError: a wrong sum.
    """
    backend.require_gpu("the occupancy sweep")
    info = device.current()
    if size_bytes is None:
        size_bytes = max(256 * MiB, 1 << math.ceil(math.log2(4 * info.l2_bytes)))
    size_bytes = _pos_int("size_bytes", size_bytes, 16)
    x = _fresh(size_bytes // 4, seed)
    points = []
    for cfg in sweep_configs(info, warps_per_sm):
        points.append(_stream_read_run(x, info.sm_count * cfg["blocks_per_sm"], cfg["threads"],
                                       size_bytes=size_bytes, warps_per_sm=cfg["warps_per_sm"], reps=7))
    return points


# -- Little's law ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class LittlesLaw:
    """Bytes in flight = bandwidth x latency, per GPU and per SM.

    Attributes:
        bandwidth_GBps, latency_ns: the inputs.
        bytes_in_flight: across the GPU (B/ns x ns = B).
        bytes_per_sm: ``bytes_in_flight / sm_count``.
        warps_per_sm: warps per SM needed when each warp has ``bytes_per_warp`` in flight.
        loads_per_sm: 16-byte loads in flight per SM.
    """

    bandwidth_GBps: float
    latency_ns: float
    sm_count: int
    bytes_per_warp: int
    bytes_in_flight: float
    bytes_per_sm: float
    warps_per_sm: float
    loads_per_sm: float

    def explain(self) -> str:
        return (f"{self.bandwidth_GBps:,.0f} GB/s x {self.latency_ns:,.0f} ns = "
                f"{self.bytes_in_flight / 1e6:,.2f} MB in flight across the GPU = "
                f"{self.bytes_per_sm / 1024:,.1f} KiB per SM ({self.sm_count} SMs) = "
                f"{self.loads_per_sm:,.0f} sixteen-byte loads per SM = "
                f"{self.warps_per_sm:,.1f} warps per SM each with one {self.bytes_per_warp}-byte warp-load in flight")


def littles_law(bandwidth_GBps: float, latency_ns: float, sm_count: int,
                bytes_per_warp: int = BYTES_PER_WARP_LOAD) -> LittlesLaw:
    """Little's law for memory: to sustain ``bandwidth_GBps`` when a load takes ``latency_ns``,
    ``bandwidth x latency`` bytes must be in flight (1 GB/s x 1 ns = 1 byte).

    Raises:
        ValueError: a non-positive or non-finite input, naming it.
    """
    for name, v in (("bandwidth_GBps", bandwidth_GBps), ("latency_ns", latency_ns)):
        if not (isinstance(v, (int, float, np.floating)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")
    sm_count = _pos_int("sm_count", sm_count)
    bytes_per_warp = _pos_int("bytes_per_warp", bytes_per_warp)
    total = float(bandwidth_GBps) * float(latency_ns)
    per_sm = total / sm_count
    return LittlesLaw(bandwidth_GBps=float(bandwidth_GBps), latency_ns=float(latency_ns), sm_count=sm_count,
                      bytes_per_warp=bytes_per_warp, bytes_in_flight=total, bytes_per_sm=per_sm,
                      warps_per_sm=per_sm / bytes_per_warp, loads_per_sm=per_sm / 16)


# -- the record ------------------------------------------------------------------------------------------

def host_bandwidth(nbytes: int = 256 * MiB, reps: int = 5) -> Dict[str, float]:
    """Host <-> GPU copy bandwidth over PCIe (or NVLink-C2C), pinned host memory, async copies.

    ``cudaMemcpyAsync`` on the current stream, timed by :func:`gpu_viz.measure.timing.time_calls` ("call"
    timing: events around each copy).  The round trip host -> GPU -> host is checked byte for byte.

    Returns:
        ``{"h2d_GBps": ..., "d2h_GBps": ..., "bytes": nbytes}`` (GB/s = 1e9 B/s, at the median).

    Raises:
        GPUUnavailable: in CPU mode.  RuntimeError: the round trip changed a byte.
    """
    cp = backend.require_cupy("the host-to-GPU bandwidth measurement")

    nbytes = _pos_int("nbytes", nbytes)
    rt = cp.cuda.runtime
    src_mem = cp.cuda.alloc_pinned_memory(nbytes)
    dst_mem = cp.cuda.alloc_pinned_memory(nbytes)
    src = np.frombuffer(src_mem, dtype=np.uint8, count=nbytes)
    dst = np.frombuffer(dst_mem, dtype=np.uint8, count=nbytes)
    src[:] = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8)
    dst[:] = ~src[:]                                   # poisoned: every byte differs from src
    dev = cp.empty(nbytes, dtype=cp.uint8)

    def h2d(i=0):
        rt.memcpyAsync(dev.data.ptr, src_mem.ptr, nbytes, rt.memcpyHostToDevice,
                       cp.cuda.get_current_stream().ptr)

    def d2h(i=0):
        rt.memcpyAsync(dst_mem.ptr, dev.data.ptr, nbytes, rt.memcpyDeviceToHost,
                       cp.cuda.get_current_stream().ptr)

    t_h2d = timing.time_calls(h2d, reps=reps, warmup=1, framework="cupy")
    t_d2h = timing.time_calls(d2h, reps=reps, warmup=1, framework="cupy")
    cp.cuda.get_current_stream().synchronize()
    if not np.array_equal(src, dst):
        bad = int(np.flatnonzero(src != dst)[0])
        raise RuntimeError(f"host_bandwidth: byte {bad} came back as {dst[bad]}, sent {src[bad]}")
    return {"h2d_GBps": t_h2d.GBps(nbytes), "d2h_GBps": t_d2h.GBps(nbytes), "bytes": nbytes}


def hardware_record() -> Dict:
    """Run the measurements of notebooks 01, 04 and 05 (< 60 s on an H200) and return them as a dict.

    Pass it on as ``records.save_record(records.new_record(rows=[], **hardware_record()), tag="hardware")``
    (``gpu-viz record hardware`` does).
    Keys: ``device`` (live attributes), ``latency`` (staircase rows), ``dram_latency``,
    ``bandwidth_vs_size``, ``occupancy_sweep``, ``littles_law``, ``occupancy`` (CUDA API vs
    calculator, per kernel, block sizes 32..1024), ``copy_GBps``, ``host_bandwidth`` (PCIe
    h2d/d2h), ``launch_floor_us``, ``seconds``.

    Raises:
        GPUUnavailable: in CPU mode.
    """
    backend.require_gpu("the hardware record")

    t0 = time.perf_counter()
    info = device.current()
    stairs = latency_staircase()
    dram = dram_latency()
    bw = bandwidth_vs_size()
    sweep = occupancy_sweep()
    copy = timing.copy_bandwidth(nbytes=GiB if info.mem_bytes >= 8 * GiB else 256 * MiB, reps=20,
                                framework="cupy")
    floor = timing.launch_floor()
    host = host_bandwidth()
    best = max(p.GBps for p in sweep)
    law = littles_law(best, dram.ns_per_load, info.sm_count)
    occ = {}
    for name, k in occupancy.occupancy_kernels().items():
        live = occupancy.live_table(k, name=name)
        calc = occupancy.table(info, occupancy.KernelResources.of(k, name))
        occ[name] = [{**l.row(), "calculator_blocks_per_sm": c.blocks_per_sm} for l, c in zip(live, calc)]
    return {
        "device": info.as_dict(),
        "latency": [p.row() for p in stairs],
        "dram_latency": dram.row(),
        "bandwidth_vs_size": [p.row() for p in bw],
        "occupancy_sweep": [p.row() for p in sweep],
        "littles_law": dataclasses.asdict(law),
        "occupancy": occ,
        "copy_GBps": round(copy["GBps"], 1),
        "host_bandwidth": {k: round(v, 2) for k, v in host.items()},
        "launch_floor_us": round(floor[timing.KERNEL].median_us, 3),
        "launch_floor_call_us": round(floor[timing.CALL].median_us, 3),
        "seconds": round(time.perf_counter() - t0, 1),
    }


# -- recorded runs and summaries (CPU-safe) ---------------------------------------------------------

def _as_row(p) -> Dict:
    return p.row() if hasattr(p, "row") else dict(p)


def classify_levels(points: Sequence, l2_bytes: int) -> List[str]:
    """Name the level each staircase point was served from, from the measurement itself.

    "L1": within 1.5x the fastest point (and <= 1 MiB); "DRAM": the set is > 2 x L2; otherwise
    "L2" when the set is <= L2 / 2, else "L2/DRAM" (part of the set fits).  Same order as ``points``.
    """
    rows = [_as_row(p) for p in points]
    if not rows:
        return []
    fastest = min(r["cycles_per_load"] for r in rows)
    out = []
    for r in rows:
        size = r["size_bytes"]
        if r["cycles_per_load"] <= 1.5 * fastest and size <= MiB:
            out.append("L1")
        elif size > 2 * l2_bytes:
            out.append("DRAM")
        elif size <= l2_bytes // 2:
            out.append("L2")
        else:
            out.append("L2/DRAM")
    return out


def summarize_levels(points: Sequence, l2_bytes: int, dram=None) -> Dict[str, Dict]:
    """One latency per level from a staircase (LatencyPoints or their ``row()`` dicts).

    L1: the smallest working set; L2: the largest set classified "L2" (:func:`classify_levels`);
    DRAM: ``dram`` (a LatencyPoint or its row: :func:`dram_latency`, the one DRAM latency the
    course quotes everywhere, so a figure and notebook 04 never show two numbers for it), else
    the largest set, if classified "DRAM".  Returns ``{"L1": {"cycles", "ns", "size_bytes"}, ...}``
    (levels without a point are left out).
    """
    rows = sorted((_as_row(p) for p in points), key=lambda r: r["size_bytes"])
    levels = classify_levels(rows, l2_bytes)
    out = {}

    def put(level, r):
        out[level] = {"cycles": r["cycles_per_load"], "ns": r["ns_per_load"], "size_bytes": r["size_bytes"]}

    if rows:
        put("L1", rows[0])
        l2 = [r for r, lv in zip(rows, levels) if lv == "L2"]
        if l2:
            put("L2", l2[-1])
        if dram is not None:
            put("DRAM", _as_row(dram))
        elif levels[-1] == "DRAM":
            put("DRAM", rows[-1])
    return out
