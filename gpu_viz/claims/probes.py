"""``gpu-viz record probes``: measure on this GPU the claims notebooks 03, 06, 09, 10 and 12 make.

Each probe checks its own result and returns a JSON-able dict; :func:`record` runs them all,
logs a failing probe (its error in the record's ``failed``) and goes on with the others:

* :func:`shuffle_latency` -- cycles per dependent step of SHFL alone, SHFL.DOWN + FADD (the
  reduction's step), an LDS chain and an FFMA chain (``kernels/probes.cu`` chains, clock64, one
  warp, the slope between two step counts so the loop's entry and exit cancel).
* :func:`shfl_steps` -- every lane's value after each shuffle step (checked against the model).
* :func:`doubling_point` -- the makespan of SMs x resident and SMs x resident + 1 blocks of
  ``scheduled_block``, at 256 and 1024 threads, and how many blocks started in the first wave.
* :func:`warp_order` -- the %warpid, %smid and first-issue clock64 of a 64-thread block's warps.
* :func:`fp16_load` -- the width of one lane's fp16 load in the SASS, and so a warp's request.
* :func:`grid_stride` -- notebook 06: the grid-stride loop at 1, SMs and 4 x SMs blocks (kernel time).
* :func:`data_residency` -- notebook 10: an RMSNorm-like two-pass row op with x re-read from
  global memory in pass 2 vs staged in registers, in L2 and beyond it, beside the copy bandwidth.
* :func:`l2_bandwidth` -- a buffer a quarter of L2 re-read many times in one launch (L2), beside
  one pass over 1 GiB (DRAM): notebook 01's L2 label, not launch-bound.

Rows are DESIGN.md section 5 rows (``op`` = the probe); the file is
``<gpu-slug>-<date>-probes.json``.  :func:`recorded` reads the newest committed one (CPU mode).
"""
from __future__ import annotations

import traceback
from typing import Callable, Dict, List, Optional

import numpy as np

from .. import backend, kernels
from ..rmsnorm.reference import rmsnorm as rmsnorm_reference

FILE = "probes.cu"
CHAINS = ("chain_shfl", "chain_shfl_fadd", "chain_lds", "chain_ffma")
#: What each chain is, in the words of the teaching text.
CHAIN_LABELS = {"chain_shfl": "SHFL alone", "chain_shfl_fadd": "SHFL.DOWN + FADD (one reduction step)",
                "chain_lds": "LDS chain (shared-memory load)", "chain_ffma": "FFMA chain"}
#: Dependent steps of the short and the long run (multiples of the kernel's unroll, 16).
CHAIN_STEPS = (1024, 4096)
#: The deck's claim for one shuffle step.
DECK_SHUFFLE_CYCLES = 5
#: The threads per block the doubling probe uses.
DOUBLING_THREADS = (256, 1024)
DOUBLING_SPIN = 20000
#: A warp's lanes and an fp16 element's bytes.
WARP, F16_BYTES = 32, 2


def _fn(kernel: str):
    return kernels.function(FILE, kernel)


def shfl_steps(lanes) -> np.ndarray:
    """(6, 32) float32: every lane's value before and after each of the five shuffle steps, from
    ``shfl_steps`` on this GPU, checked bit for bit against :func:`gpu_viz.model.reduction.warp_shuffle_steps`.

    Raises:
        ValueError: ``lanes`` is not 32 values.  GPUUnavailable: CPU mode.  AssertionError: the
        silicon and the model differ.
    """
    from ..check import assert_equal
    from ..model import reduction as m

    v = np.asarray(lanes, np.float32).reshape(-1)
    if v.shape != (WARP,):
        raise ValueError(f"lanes must be 32 values (one per lane), got shape {np.shape(lanes)}")
    cp = backend.require_cupy("the shuffle-steps probe")
    out = cp.full(6 * WARP, np.nan, cp.float32)
    _fn("shfl_steps")((1,), (WARP,), (cp.asarray(v), out))
    got = cp.asnumpy(out).reshape(6, WARP)
    # the model with deck=True adds a lane's own value when lane + off > 31, as the kernel does
    want = m.warp_shuffle_steps(v[None, :], np.array([WARP]), deck=True)[0]
    assert_equal("shfl_steps (silicon vs model)", got, want)
    return got


def _chain_cycles(kernel: str, steps: int) -> int:
    cp = backend.require_cupy("the latency chains")
    seed = np.r_[np.arange(WARP, dtype=np.float32) % 7, np.float32(0.999), np.float32(0.001)]
    if kernel == "chain_shfl_fadd":
        # v += shfl_down(v, 1) doubles lane 31 every step (it reads itself): thousands of steps overflow
        # any nonzero start to inf.  Zeros keep the chain finite; the hardware's dependency is the same.
        seed[:WARP] = 0.0
    seed = cp.asarray(seed)
    out = cp.full(1, np.nan, cp.float32)
    cyc = cp.full(1, -1, cp.int64)
    _fn(kernel)((1,), (WARP,), (np.int32(steps), seed, out, cyc))
    c = int(cyc.get()[0])
    if c <= 0 or not np.isfinite(float(out.get()[0])):
        raise AssertionError(f"{kernel}: no cycle count or a non-finite chain value (cycles {c})")
    return c


def shuffle_latency(reps: int = 7) -> List[Dict]:
    """Cycles per dependent step of each chain: median over ``reps`` of
    (cycles(long) - cycles(short)) / (long - short).  One row per chain."""
    short, long_ = CHAIN_STEPS
    rows = []
    for k in CHAINS:
        _chain_cycles(k, short)  # warm-up: load + JIT
        per = []
        for _ in range(reps):
            a, b = _chain_cycles(k, short), _chain_cycles(k, long_)
            per.append((b - a) / (long_ - short))
        s = np.asarray(per)
        if not (s > 0).all():
            raise AssertionError(f"{k}: the longer chain was not slower ({per})")
        rows.append({"op": "latency_chain", "impl": k, "what": CHAIN_LABELS[k], "timing": "clock64",
                     "steps": [short, long_], "cycles_per_step": round(float(np.median(s)), 2),
                     "p10": round(float(np.percentile(s, 10)), 2), "p90": round(float(np.percentile(s, 90)), 2),
                     "reps": reps})
    return rows


def first_wave(trace) -> int:
    """Blocks that started before any block ended (the first wave, as the silicon ran it)."""
    t0, t1 = trace["t_start"].astype(np.float64), trace["t_end"].astype(np.float64)
    return int((t0 < t1.min()).sum())


def doubling_point() -> List[Dict]:
    """At each of :data:`DOUBLING_THREADS`: makespans at SMs x resident (R) and R + 1 blocks, and
    the first-wave size at SMs x resident and at the deck's 2048 blocks.  One row per launch."""
    from ..frames import scheduling as fr
    from ..record import scheduling as rec

    from .. import device

    info = device.current()
    rows = []
    for threads in DOUBLING_THREADS:
        resident = rec.resident_blocks(threads)
        slots = info.sm_count * resident
        for blocks in (slots, slots + 1, 2048):
            tr = rec.trace(blocks=blocks, threads=threads, spin_cycles=DOUBLING_SPIN)
            s = fr.summary(tr)
            rows.append({"op": "doubling_point", "impl": "scheduled_block", "threads": threads, "blocks": blocks,
                         "timing": "globaltimer", "sm_count": info.sm_count, "resident_blocks_per_sm": resident,
                         "slots": slots, "first_wave_blocks": first_wave(tr),
                         "makespan_us": round(s["makespan_us"], 3), "block_us_median": round(s["block_us_median"], 3),
                         "makespan_blocks": round(s["makespan_us"] / s["block_us_median"], 2)})
    return rows


def warp_order(threads: int = 64, blocks: int = 4) -> List[Dict]:
    """%warpid, %smid and the first-issue clock64 of each warp of ``blocks`` blocks of ``threads``.
    One row per block: ``warpid`` and ``clk_offset`` (cycles after the block's first warp) per warp."""
    cp = backend.require_cupy("the warp-order probe")
    warps = -(-threads // WARP)
    buf = cp.full(3 * blocks * warps, -1, cp.int64)
    _fn("warp_order")((1,), (threads,), (buf,))  # warm-up
    buf.fill(-1)
    _fn("warp_order")((blocks,), (threads,), (buf,))
    r = cp.asnumpy(buf).reshape(blocks, warps, 3)
    if (r < 0).any():
        raise AssertionError("warp_order: a warp wrote no record")
    rows = []
    for b in range(blocks):
        clk = r[b, :, 2]
        rows.append({"op": "warp_order", "impl": "warp_order", "threads": threads, "block": b, "timing": "clock64",
                     "smid": int(r[b, 0, 1]), "warpid": [int(v) for v in r[b, :, 0]],
                     "clk_offset": [int(v) for v in clk - clk.min()],
                     "same_sm": bool((r[b, :, 1] == r[b, 0, 1]).all())})
    return rows


def fp16_load() -> Dict:
    """The fp16 load of ``load_f16`` in this GPU's SASS: its opcode, bytes per lane, bytes per warp.

    Raises:
        RuntimeError: no SASS (no cuobjdump) or no global load found in it.
    """
    import re

    from .. import disasm

    text, label = disasm.sass(FILE, "load_f16")
    if not text:
        raise RuntimeError(f"fp16_load: {label}")
    m = re.search(r"\bLDG\.E(\.[\w.]+)?", text)
    if not m:
        raise RuntimeError("fp16_load: no LDG in the SASS of load_f16")
    op = m.group(0)
    width = 2 if ".U16" in op or ".16" in op else 4 if ".32" in op or op == "LDG.E" else None
    if width is None:
        raise RuntimeError(f"fp16_load: the load {op!r} has an unknown width")
    return {"op": "fp16_load", "impl": "load_f16", "timing": "sass", "sass": op, "sass_source": label,
            "bytes_per_lane": width, "bytes_per_warp": WARP * width}


#: Passes over the L2-sized buffer in one launch (enough that the launch is a few percent).
L2_PASSES = 64


def _reread(nbytes: int, passes: int, reps: int = 20) -> Dict:
    """Time ``reread`` over ``nbytes`` of small-integer floats (exact sums), ``passes`` times; checked."""
    from .. import device
    from ..measure.timing import time_calls

    cp = backend.require_cupy("the re-read bandwidth probe")
    info = device.current()
    n4 = nbytes // 16
    host = np.random.default_rng().integers(0, 4, 4 * n4).astype(np.float32)
    x = cp.asarray(host)
    threads, blocks = 256, info.sm_count * (info.max_threads_per_sm // 256)
    out = cp.full(threads * blocks, np.nan, cp.float32)
    fn = _fn("reread")
    args = (x, np.int64(n4), np.int32(passes), out)
    t = time_calls(lambda i: fn((blocks,), (threads,), args), reps=reps, warmup=3, framework="cupy")
    # check: each thread's sum is passes x the sum of its float4s (small integers: exact in fp32)
    per4 = host.reshape(n4, 4).sum(1, dtype=np.float64)
    want = np.bincount(np.arange(n4) % (threads * blocks), weights=per4, minlength=threads * blocks) * passes
    got = cp.asnumpy(out)
    if not np.array_equal(got.astype(np.float64), want):
        bad = int(np.argmax(got != want))
        raise AssertionError(f"reread: out[{bad}] = {got[bad]}, want {want[bad]}")
    return {"size_bytes": int(n4 * 16), "passes": passes, "median_us": round(t.median_us, 3),
            "p10_us": round(t.p10_us, 3), "p90_us": round(t.p90_us, 3),
            "GBps": round(t.GBps(n4 * 16 * passes), 1), "blocks": blocks, "threads": threads}


def l2_bandwidth() -> List[Dict]:
    """Two rows: a buffer of a quarter of L2 (at most 8 MiB) read :data:`L2_PASSES` times in one
    launch, and 1 GiB read once; GB/s counts every pass's bytes."""
    from .. import device

    info = device.current()
    small = min(8 << 20, info.l2_bytes // 4)
    rows = []
    for level, nbytes, passes in (("L2", small, L2_PASSES), ("DRAM", 1 << 30, 1)):
        r = _reread(nbytes, passes)
        rows.append({"op": "reread_bandwidth", "impl": "reread", "level": level, "timing": "call",
                     "loads": REREAD_LOADS, **r})
    return rows


#: How ``reread`` loads (recorded with its rows): ld.global.cg, cached in L2 and not in L1.  A row
#: without it comes from the earlier probe, whose L1-cacheable loads let each SM re-read its share
#: from L1 (:func:`reread_measures_l2`).
REREAD_LOADS = "ld.global.cg (L2, not L1)"


def level_bandwidths(rows: List[Dict]) -> Dict[str, float]:
    """``{level: GB/s}`` of the ``reread_bandwidth`` rows that measured the level they name: DRAM
    always, L2 only from the probe that bypasses L1 (:func:`reread_measures_l2`).  What a figure
    may write on its L2 and DRAM boxes."""
    out = {}
    for r in rows:
        if r.get("op", "reread_bandwidth") == "reread_bandwidth" and (r["level"] != "L2" or reread_measures_l2(r)):
            out[r["level"]] = r["GBps"]
    return out


def reread_measures_l2(row: Dict) -> bool:
    """Whether a ``reread_bandwidth`` row of level L2 measured L2: only the probe that bypasses L1
    (:data:`REREAD_LOADS`) did; the earlier one's loads were L1-cacheable, and each SM's share of
    the buffer (tens of KB) fit its L1, so its figure is mostly L1's."""
    return row.get("loads") == REREAD_LOADS


#: Notebook 06: the grid-stride scale over 2**24 floats at one block, one block per SM, four per SM.
GRID_STRIDE_N = 1 << 24


def grid_stride(n: int = GRID_STRIDE_N, block: int = 1024, reps: int = 30) -> List[Dict]:
    """``scale_grid_stride`` (kernels/grid_stride.cu) over ``n`` floats at grids of 1, SMs and
    4 x SMs blocks of ``block``: kernel time by CUDA-graph replay, each result checked (y == x / 2).
    One row per grid; GB/s counts 8 bytes per element (read x, write y)."""
    from .. import device
    from ..record import grid_stride as producer
    from ..measure.timing import time_graph

    cp = backend.require_cupy("the grid-stride timing")
    x = cp.random.standard_normal(n, dtype=cp.float32)
    sms = device.current().sm_count
    fn = kernels.function("grid_stride.cu", "scale_grid_stride")
    rows = []
    for grid in (1, sms, 4 * sms):
        y = producer.scale(x, 0.5, grid=grid, block=block)
        if not bool(cp.array_equal(y, x * cp.float32(0.5))):
            raise AssertionError(f"grid_stride: wrong result with grid={grid}")
        args = (x, y, np.float32(0.5), np.int64(n))
        t = time_graph(lambda i: fn((grid,), (block,), args), framework="cupy", reps=reps, calls_per_graph=5)
        rows.append({"op": "grid_stride", "impl": "scale_grid_stride", "grid": grid, "block": block, "n": n,
                     "sm_count": sms, "timing": "kernel", "median_us": round(t.median_us, 3),
                     "p10_us": round(t.p10_us, 3), "p90_us": round(t.p90_us, 3), "GBps": round(t.GBps(8 * n), 1)})
    return rows


#: Notebook 10's "where data lives": the two-pass row op at one row shape, two row counts: the
#: in-L2 one (x 8 MiB, x + y 16 MiB: well inside a 48-60 MB L2 between repetitions) and one
#: beyond L2 (x 256 MiB).  One block of RESIDENCY_BLOCK threads per row, STAGE_ITEMS = 4 per thread.
RESIDENCY_N, RESIDENCY_BLOCK, RESIDENCY_EPS = 4096, 1024, 1e-6
RESIDENCY_ROWS = (("in L2", 512), ("beyond L2", 16384))
RESIDENCY_KERNELS = {"rownorm_reread": "x re-read from global memory (L1/L2) in pass 2",
                     "rownorm_staged": "x staged in registers between the passes"}
STAGE_ITEMS = 4


def rownorm(kernel: str, x, w, eps: float = RESIDENCY_EPS, block: int = RESIDENCY_BLOCK):
    """Run ``kernel`` (a key of :data:`RESIDENCY_KERNELS`) over the rows of CuPy float32 ``x`` [M, N].

    Raises:
        ValueError: unknown kernel, or a row longer than the staged kernel's registers hold.
    """
    if kernel not in RESIDENCY_KERNELS:
        raise ValueError(f"kernel must be one of {sorted(RESIDENCY_KERNELS)}, got {kernel!r}")
    cp = backend.require_cupy("the row kernels")
    M, N = x.shape
    if kernel == "rownorm_staged" and N > STAGE_ITEMS * block:
        raise ValueError(f"rownorm_staged holds {STAGE_ITEMS} x {block} elements per row, got N = {N}")
    y = cp.full((M, N), np.nan, cp.float32)
    if M:
        _fn(kernel)((M,), (block,), (x, w, y, np.int32(N), np.float32(eps)))
    return y


def data_residency(reps: int = 50) -> List[Dict]:
    """Both row kernels at :data:`RESIDENCY_ROWS`, each checked against the course's float64 RMSNorm (:func:`gpu_viz.rmsnorm.reference.rmsnorm`)
    (float32 tolerance), kernel time by CUDA-graph replay, and the device-to-device copy bandwidth
    of the same run.  GB/s counts the fewest bytes: x read once, y written once, w once."""
    from .. import device
    from ..rmsnorm.tolerances import tolerance
    from ..measure.timing import copy_bandwidth, time_graph

    cp = backend.require_cupy("the data-residency probe")
    info = device.current()
    copy = copy_bandwidth(nbytes=1 << 29, reps=20, framework="cupy")["GBps"]
    atol, rtol = tolerance("float32")
    N, rows = RESIDENCY_N, []
    w = (1 + 0.5 * cp.random.standard_normal(N, dtype=cp.float32)).astype(cp.float32)
    for level, M in RESIDENCY_ROWS:
        x = cp.random.standard_normal((M, N), dtype=cp.float32)
        want = rmsnorm_reference(cp.asnumpy(x[:64]), cp.asnumpy(w), RESIDENCY_EPS)
        nbytes = 2 * M * N * 4 + N * 4
        for kernel in RESIDENCY_KERNELS:
            y = rownorm(kernel, x, w)
            got = cp.asnumpy(y[:64]).astype(np.float64)
            err = np.abs(got - want) - (atol + rtol * np.abs(want))
            if not np.isfinite(got).all() or (err > 0).any():
                raise AssertionError(f"{kernel} at [{M}, {N}]: max error {np.nanmax(np.abs(got - want)):.3g} "
                                     f"over the float32 tolerance (atol {atol}, rtol {rtol})")
            if not bool(cp.isfinite(y).all()):
                raise AssertionError(f"{kernel} at [{M}, {N}]: a row was not written")
            fn = _fn(kernel)
            args = (x, w, y, np.int32(N), np.float32(RESIDENCY_EPS))
            t = time_graph(lambda i: fn((M,), (RESIDENCY_BLOCK,), args), framework="cupy", reps=reps,
                           calls_per_graph=10)
            rows.append({"op": "data_residency", "impl": kernel, "what": RESIDENCY_KERNELS[kernel], "level": level,
                         "M": M, "N": N, "dtype": "float32", "block": RESIDENCY_BLOCK, "timing": "kernel",
                         "median_us": round(t.median_us, 3), "p10_us": round(t.p10_us, 3),
                         "p90_us": round(t.p90_us, 3), "GBps": round(t.GBps(nbytes), 1), "bytes": nbytes,
                         "copy_GBps": round(copy, 1), "l2_bytes": info.l2_bytes})
    return rows


PROBES: Dict[str, Callable] = {"shuffle_latency": shuffle_latency, "doubling_point": doubling_point,
                               "warp_order": warp_order, "fp16_load": fp16_load, "l2_bandwidth": l2_bandwidth,
                               "grid_stride": grid_stride, "data_residency": data_residency}


def run_all(probes=None) -> Dict:
    """Run each probe; a failing one is logged (name, error, traceback tail) and skipped.

    Returns ``{"rows": [...], "failed": [{"probe", "error"}], "shfl_steps_checked": bool}``.
    """
    rows, failed = [], []
    for name in (probes or PROBES):
        try:
            out = PROBES[name]()
            rows.extend(out if isinstance(out, list) else [out])
            print(f"probe {name}: ok")
        except Exception as exc:  # noqa: BLE001  (each probe is independent: log and go on)
            failed.append({"probe": name, "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc().splitlines()[-4:]})
            print(f"probe {name}: FAILED {type(exc).__name__}: {exc}")
    checked = True
    try:
        shfl_steps(np.random.default_rng().integers(-8, 9, WARP).astype(np.float32))
    except Exception as exc:  # noqa: BLE001
        checked = False
        failed.append({"probe": "shfl_steps", "error": f"{type(exc).__name__}: {exc}"})
    return {"rows": rows, "failed": failed, "shfl_steps_checked": checked}


def record(out=None):
    """Run every probe on this GPU and save ``<gpu>-<date>-probes.json`` into ``out``; the path."""
    from ..measure import records

    backend.require_gpu("the probes record")
    res = run_all()
    rec = records.new_record(res["rows"], failed=res["failed"], shfl_steps_checked=res["shfl_steps_checked"],
                             deck_shuffle_cycles=DECK_SHUFFLE_CYCLES)
    return records.save_record(rec, tag="probes", directory=out)


REQUIRED_ROW_KEYS = {"latency_chain": ("impl", "cycles_per_step", "p10", "p90", "reps"),
                     "doubling_point": ("threads", "blocks", "slots", "first_wave_blocks", "makespan_us",
                                        "block_us_median", "resident_blocks_per_sm", "sm_count"),
                     "warp_order": ("threads", "block", "warpid", "clk_offset", "smid", "same_sm"),
                     "fp16_load": ("sass", "bytes_per_lane", "bytes_per_warp"),
                     "reread_bandwidth": ("level", "size_bytes", "passes", "median_us", "p10_us", "p90_us", "GBps"),
                     "grid_stride": ("grid", "block", "n", "median_us", "p10_us", "p90_us", "GBps"),
                     "data_residency": ("impl", "level", "M", "N", "median_us", "p10_us", "p90_us", "GBps",
                                        "copy_GBps")}


def check_record(rec: Dict) -> List[str]:
    """Every way ``rec`` breaks the probes record's schema; [] when it is sound."""
    problems = [f"missing {k!r}" for k in ("date", "gpu", "sm", "rows", "failed") if k not in rec]
    for i, row in enumerate(rec.get("rows", [])):
        keys = REQUIRED_ROW_KEYS.get(row.get("op"))
        if keys is None:
            problems.append(f"row {i}: unknown op {row.get('op')!r}")
            continue
        problems += [f"row {i} ({row['op']}): missing {k!r}" for k in keys if k not in row]
        if row["op"] == "latency_chain" and not row.get("cycles_per_step", 0) > 0:
            problems.append(f"row {i}: cycles_per_step must be > 0")
    return problems


def recorded(directory=None) -> Optional[Dict]:
    """The newest committed probes record, or None."""
    from ..measure import records

    return records.newest("*-probes.json", directory)


def _rows(rec: Dict, op: str) -> List[Dict]:
    return [r for r in rec.get("rows", []) if r.get("op") == op]


def current(op: str) -> tuple:
    """``(rows, label)`` of probe ``op``: measured now on a GPU, else from the committed record
    (label "recorded on <GPU>, <date> (not live)"); ``([], why)`` when neither has it."""
    from ..measure import records

    if backend.has_gpu():
        fn = {"latency_chain": shuffle_latency, "doubling_point": doubling_point, "warp_order": warp_order,
              "fp16_load": lambda: [fp16_load()], "reread_bandwidth": l2_bandwidth, "grid_stride": grid_stride,
              "data_residency": data_residency}[op]
        return fn(), backend.live_label()
    rec = recorded()
    if rec is None:
        return [], "no committed probes record (make one on a GPU: gpu-viz record probes --out benchmarks/results)"
    rows = _rows(rec, op)
    return rows, records.label(rec) if rows else f"the probes record of {rec.get('gpu')} has no {op} rows"
