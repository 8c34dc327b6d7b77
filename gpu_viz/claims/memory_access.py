"""Notebooks 07 and 08's numbers: where the bytes go, counted by the emulator anywhere and measured on a GPU.

CPU mode (anywhere NVRTC is installed), each figure labelled "emulated on the CPU from the
kernel's PTX":

* :func:`pattern_counts` -- sectors per request and efficiency of every coalescing pattern;
* :func:`bank_counts` -- wavefronts and bank conflicts of every bank case, and of reduce.cuh's smem[32];
* :func:`ladder_counts` -- each rung of the reduction: warp-instructions, divergent branches,
  wavefronts and bank conflicts, load requests and sectors (counts, not times), each rung's sum
  checked against float64;
* :func:`ladder_block_sizes` -- the tree rungs at blocks that are not a power of two: the sum they
  give and the hazard the emulator names;
* :func:`race_report` -- the emulator's hazard report of a racy kernel (the race, named).

What the notebooks show comes whole from the ``*_section`` functions (:func:`pattern_section`,
:func:`bank_section`, :func:`race_section`, :func:`ladder_section`, ...): without NVRTC (CPU mode
without ``gpu-viz[emulator]``) each says what it cannot show and what to install, where the
count functions above raise :class:`gpu_viz.emulator.NVRTCUnavailable`.

On a GPU (``gpu-viz record memory-access``, :func:`record`): the coalescing patterns' and the
rungs' GB/s beside the copy bandwidth of the same run (each result checked first), the sector and
bank counts derived from the addresses the traced kernels recorded on the silicon beside the
emulator's counts of the same launches, and each racy kernel's outcomes over :data:`RACE_RUNS`
runs.  ``gpu-viz record memory-counters`` (:func:`record_counters`, needs ``ncu``): Nsight Compute's
sector, request and bank-conflict counters of :func:`counter_launches` beside the emulator's; when
the profiler is refused the counters (``ERR_NVGPUCTRPERM``: common on rented GPUs and Colab), the
record says so, and why, instead.
"""
from __future__ import annotations

import subprocess
import sys
import traceback
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from .. import backend, kernels
from .. import memory_access as ma
from ..model import banks as banks_model
from ..model import coalescing as coal_model
from ..record import reduction_ladder as ladder

#: Launches of the emulator's count tables: loads per pattern, the ladder's n and block.
COUNT_LOADS, COUNT_BLOCK = 4096, 128
LADDER_N, LADDER_BLOCK = 4096, 256
#: Blocks the tree rungs are tried at in :func:`ladder_block_sizes` (powers of two and not).
TREE_BLOCKS = (64, 96, 100, 128, 192, 256)
#: Runs of each racy kernel on a GPU (the issue asks for >= 100).
RACE_RUNS = 200
#: The launch every race run uses, on the GPU and in the emulator alike.
RACE_LAUNCH = {"grid": 4, "block": 128, "nbins": 256, "n": 2048}
#: GPU timings: fp32 loads per coalescing pattern, bytes per fp16 pattern, floats the ladder sums.
BANDWIDTH_LOADS = 1 << 24
F16_BYTES = 1 << 27
LADDER_GPU_N = 1 << 25


def _emulator():
    from .. import emulator

    if not emulator.available():
        raise emulator.NVRTCUnavailable(f"the emulator needs NVRTC ({emulator.nvrtc.INSTALL})")
    return emulator


def can_emulate() -> bool:
    """Whether the emulator can run here (NVRTC found): the counts below need it; without it each
    ``*_section`` says what is not shown and what to install."""
    from .. import emulator

    return emulator.available()


def _not_shown(what: str) -> str:
    from ..emulator import nvrtc

    return nvrtc.not_shown(what)


def emulated_label() -> str:
    """What every CPU-mode count here is labelled (without NVRTC: that nothing was emulated, and why)."""
    from .. import emulator

    if not emulator.available():
        return f"nothing emulated here (the emulator needs NVRTC: {emulator.nvrtc.INSTALL})"
    return emulator.label(emulator.DEFAULT_ARCH)


# -- launches any runner can make ------------------------------------------------------------------

def _pattern_launch(name: str, n: int, block: int, rng) -> Dict:
    p = coal_model.pattern(name)
    _p, n, block, grid = coal_model.check_launch(name, n, block)
    x = rng.standard_normal(coal_model.x_elements(p, n)).astype(p.dtype)
    from ..record.coalescing import y_elements

    args: List = [("in", "x", x), ("out", "y", (y_elements(p, n), p.dtype)), ("scalar", np.int64(n))]
    if p.kernel == "read_strided":
        args += [("scalar", np.int32(p.stride)), ("scalar", np.int32(p.offset))]
    elif p.kernel in ("copy_thread_major", "copy_warp_major"):
        args += [("scalar", np.int32(p.per_thread))]
    return {"name": f"coalescing: {name}", "file": coal_model.FILE, "kernel": p.kernel, "grid": (grid,),
            "block": (block,), "shared_mem": 0, "args": args}


def _bank_launches(rng) -> List[Dict]:
    out = []
    for c in banks_model.CASES.values():
        if c.kernel == "shared_stride":
            out.append({"name": f"banks: {c.name}", "file": banks_model.FILE, "kernel": c.kernel, "grid": (1,),
                        "block": (32,), "shared_mem": 0, "args": [("out", "out", (32, "float32")),
                                                                  ("scalar", np.int32(c.stride))]})
    rows = cols = 256
    m = rng.standard_normal(rows * cols).astype(np.float32)
    for k, what in (("transpose_naive", "naive transpose"), ("transpose_tiled", "32x32 tile"),
                    ("transpose_padded", "32x33 tile")):
        out.append({"name": f"banks: {what}", "file": banks_model.FILE, "kernel": k,
                    "grid": (cols // 32, rows // 32), "block": (32, 8), "shared_mem": 0,
                    "args": [("in", "in", m), ("out", "out", (rows * cols, "float32")),
                             ("scalar", np.int32(rows)), ("scalar", np.int32(cols))]})
    x = rng.standard_normal(4096).astype(np.float32)
    out.append({"name": "banks: reduce.cuh smem[32]", "file": banks_model.FILE, "kernel": "block_sum_smem32",
                "grid": (1,), "block": (256,), "shared_mem": 0,
                "args": [("in", "x", x), ("out", "out", (1, "float32")), ("scalar", np.int32(x.size))]})
    return out


def _ladder_launch(rung: str, x: np.ndarray, block: int) -> Dict:
    grid = ladder.grid_for(rung, x.size, block)
    shared = 4 * block if rung not in ("shuffle", "vector") else 0
    return {"name": f"ladder: {rung}", "file": ladder.FILE, "kernel": ladder.KERNEL[rung], "grid": (grid,),
            "block": (block,), "shared_mem": shared,
            "args": [("in", "x", x), ("out", "out", (grid, "float32")), ("scalar", np.int64(x.size))]}


def counter_launches(seed: int = 0) -> List[Dict]:
    """The launches whose counts are compared with Nsight Compute's (:func:`record_counters`): every
    coalescing pattern (:data:`COUNT_LOADS` loads), every bank case, three 256 x 256 transposes,
    reduce.cuh's block sum, every rung of the ladder (:data:`LADDER_N` floats).  Inputs from ``seed``."""
    rng = np.random.default_rng(seed)
    out = [_pattern_launch(name, COUNT_LOADS, COUNT_BLOCK, rng) for name in coal_model.PATTERNS]
    out += _bank_launches(rng)
    x = rng.standard_normal(LADDER_N).astype(np.float32)
    out += [_ladder_launch(r, x, LADDER_BLOCK) for r, _k, _w in ladder.RUNGS]
    return out


def emulate(spec: Dict, **options):
    """Run one launch spec in the emulator (untraced build); ``(run, {name: output array})``."""
    em = _emulator()
    prog = em.compile_file(spec["file"])
    dev = em.Device()
    args, outs = [], {}
    for a in spec["args"]:
        if a[0] == "in":
            args.append(dev.asarray(a[2], name=a[1]))
        elif a[0] == "out":
            shape, dtype = a[2]
            d = dev.full(shape, np.nan if np.dtype(dtype).kind == "f" else 0, np.dtype(dtype), name=a[1])
            outs[a[1]] = d
            args.append(d)
        else:
            args.append(a[1])
    run = prog.launch(spec["kernel"], spec["grid"], spec["block"], args, device=dev, shared_mem=spec["shared_mem"],
                      **options)
    return run, {k: v.get() for k, v in outs.items()}


def launch_on_gpu(spec: Dict) -> Dict[str, np.ndarray]:
    """Run one launch spec on this GPU (untraced build, through CuPy); its outputs."""
    cp = backend.require_cupy("a memory-access launch")
    args, outs = [], {}
    for a in spec["args"]:
        if a[0] == "in":
            args.append(cp.asarray(a[2]))
        elif a[0] == "out":
            shape, dtype = a[2]
            d = cp.full(shape, np.nan if np.dtype(dtype).kind == "f" else 0, dtype=np.dtype(dtype))
            outs[a[1]] = d
            args.append(d)
        else:
            args.append(a[1])
    kernels.function(spec["file"], spec["kernel"])(spec["grid"], spec["block"], tuple(args),
                                                   shared_mem=spec["shared_mem"])
    return {k: v.get() for k, v in outs.items()}


# -- CPU mode: the emulator's counts ----------------------------------------------------------------

def _load_rows(run, kernel: str, op: str = "ld", space: str = "global") -> List[Dict]:
    return [r for r in ma.run_counts(run) if r["function"] == kernel and r["op"] == op and r["space"] == space]


def pattern_counts(n: int = COUNT_LOADS, block: int = COUNT_BLOCK, seed: int = 0) -> List[Dict]:
    """Each coalescing pattern's loads of x, in the emulator: ``pattern``, ``width`` (bytes a lane),
    ``requests``, ``sectors``, ``sectors_per_request``, ``ideal`` (sectors a coalesced request of that
    width needs), ``efficiency``, ``requests_per_KiB``, ``words`` (what the pattern is)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, p in coal_model.PATTERNS.items():
        run, _ = emulate(_pattern_launch(name, n, block, rng))
        loads = _load_rows(run, p.kernel)
        req = sum(r["requests"] for r in loads)
        sec = sum(r["sectors"] for r in loads)
        byt = n * p.width
        rows.append({"pattern": name, "width": p.width, "requests": req, "sectors": sec,
                     "sectors_per_request": sec / req, "ideal": -(-32 * p.width // ma.SECTOR_BYTES),
                     "efficiency": byt / (ma.SECTOR_BYTES * sec), "requests_per_KiB": req / (byt / 1024),
                     "words": p.words})
    return rows


def bank_counts(seed: int = 0) -> List[Dict]:
    """Each bank launch's shared loads and stores in the emulator: ``name``, ``op``, ``requests``
    (warp-instructions), ``wavefronts``, ``ideal``, ``conflicts``, ``wavefronts_per_request``."""
    rows = []
    for spec in _bank_launches(np.random.default_rng(seed)):
        run, _ = emulate(spec)
        for op in ("st", "ld"):
            rs = [r for r in ma.run_counts(run) if r["space"] == "shared" and r["op"] == op]
            if not rs:
                continue
            req = sum(r["requests"] for r in rs)
            wf = sum(r["wavefronts"] for r in rs)
            ideal = sum(r["ideal"] for r in rs)
            rows.append({"name": spec["name"].split(": ", 1)[1], "kernel": spec["kernel"], "op": op, "requests": req,
                         "wavefronts": wf, "ideal": ideal, "conflicts": wf - ideal,
                         "wavefronts_per_request": wf / req if req else 0.0})
    return rows


def ladder_counts(n: int = LADDER_N, block: int = LADDER_BLOCK, seed: int = 0) -> List[Dict]:
    """Each rung in the emulator over n fresh floats: ``rung``, ``what`` changed, ``blocks``,
    ``warp_instructions``, ``divergent`` (branches on which a warp's lanes disagreed),
    ``shared_wavefronts``, ``bank_conflicts``, ``load_requests``, ``load_sectors``, ``sum``,
    ``float64``, ``ok`` (equal: the inputs are small integers, :func:`gpu_viz.record.reduction_ladder.exact_inputs`,
    so every partial is exact)."""
    x = ladder.exact_inputs(n, seed)
    rows = []
    for rung, kernel, what in ladder.RUNGS:
        spec = _ladder_launch(rung, x, block)
        run, outs = emulate(spec)
        total = float(outs["out"].astype(np.float64).sum())
        want = float(x.astype(np.float64).sum())
        loads = _load_rows(run, kernel)
        rows.append({"rung": rung, "what": what, "blocks": spec["grid"][0], "warp_instructions": run.warp_instructions,
                     "divergent": sum(s.divergent for s in run.stats.values()),
                     "shared_wavefronts": sum(s.wavefronts for s in run.stats.values()),
                     "bank_conflicts": sum(s.wavefronts - s.ideal_wavefronts for s in run.stats.values()),
                     "load_requests": sum(r["requests"] for r in loads),
                     "load_sectors": sum(r["sectors"] for r in loads),
                     "sum": total, "float64": want, "ok": total == want,
                     "hazards": [h.text() for h in run.hazards.errors()][:2]})
    return rows


def ladder_block_sizes(blocks: Sequence[int] = TREE_BLOCKS, seed: int = 0) -> List[Dict]:
    """The tree rungs (1-3) and the shuffle rung as one block of each size over as many floats:
    ``rung``, ``block``, ``sum``, ``float64``, ``ok``, ``hazard`` (the emulator's first error, or "")."""
    rows = []
    for b in blocks:
        x = ladder.exact_inputs(int(b), seed + int(b))
        for rung in ("interleaved", "strided", "sequential", "shuffle"):
            spec = _ladder_launch(rung, x, int(b))
            spec["grid"] = (1,)
            spec["args"][1] = ("out", "out", (1, "float32"))
            run, outs = emulate(spec)
            total = float(outs["out"][0])
            want = float(x.astype(np.float64).sum())
            errs = run.hazards.errors()
            rows.append({"rung": rung, "block": int(b), "sum": total, "float64": want,
                         "ok": total == want and not errs,
                         "hazard": errs[0].text() if errs else ""})
    return rows


def race_report(kernel: str = "histogram_racy", seed: int = 1) -> Dict:
    """One emulated run of a ``kernels/races.cu`` kernel (random warp interleaving, ``seed``), with
    its arrays named as in the source: ``{"kernel", "outcome", "hazards": [text of each kind's first],
    "race": the first race's sentence or "", "accesses": [{"access", "line", "block", "thread", "warp",
    "lane"}: the race's two accesses]}``."""
    from ..record import races

    em = _emulator()
    prog = em.compile_file(races.FILE)
    dev = em.Device()
    L = RACE_LAUNCH
    if kernel in races.HISTOGRAMS:
        keys = np.random.default_rng(seed).integers(0, L["nbins"], L["n"]).astype(np.int32)
        k, b = dev.asarray(keys, name="keys"), dev.zeros(L["nbins"], np.int32, name="bins")
        args = (k, np.int64(keys.size), b) + ((np.int32(L["nbins"]),) if kernel == "histogram_private" else ())
        run = prog.launch(kernel, L["grid"], L["block"], args, device=dev, policy="random", seed=seed,
                          shared_mem=4 * L["nbins"] if kernel == "histogram_private" else 0)
        outcome = f"{int(keys.size - b.get().sum())} of {keys.size} counts lost"
    else:
        n = L["grid"] * L["block"]
        x = races.reversal_input(seed, 0, n)
        y = dev.full(n, np.nan, np.float32, name="y")
        run = prog.launch(kernel, L["grid"], L["block"], (dev.asarray(x, name="x"), y), device=dev, policy="random",
                          seed=seed)
        want = x.reshape(L["grid"], L["block"])[:, ::-1].reshape(-1)
        outcome = f"{int((y.get() != want).sum())} of {n} elements wrong"
    firsts: Dict[str, object] = {}
    for h in run.hazards:
        firsts.setdefault(h.kind, h)
    first = firsts.get("race") or firsts.get("uninitialized")
    accesses = [("this access", first.where), ("the other", first.other)] if first is not None else []
    return {"kernel": kernel, "outcome": outcome, "hazards": [h.text() for h in firsts.values()],
            "race": first.message if first is not None else "",
            "accesses": [{"access": name, "line": w.line, "block": w.block[0], "thread": w.thread[0], "warp": w.warp,
                          "lane": w.lane} for name, w in accesses if w is not None],
            "label": emulated_label()}


# -- on a GPU ----------------------------------------------------------------------------------------

def _time_kernel(fn, grid, block, args, shared_mem=0, reps: int = 30):
    from ..measure.timing import time_graph

    return time_graph(lambda i: fn(grid, block, args, shared_mem=shared_mem), framework="cupy", reps=reps,
                      calls_per_graph=5)


def bandwidth(reps: int = 30) -> List[Dict]:
    """Each coalescing pattern timed on this GPU (kernel time, CUDA-graph replay), its copy checked
    first; GB/s counts the bytes the copy must move (useful x read once, y written once), beside the
    device-to-device copy of the same run (``copy_GBps``).  fp32 patterns: :data:`BANDWIDTH_LOADS`
    loads; fp16 patterns: :data:`F16_BYTES` bytes each way."""
    from ..measure.timing import copy_bandwidth
    from ..record.coalescing import launch_args, y_elements

    cp = backend.require_cupy("the coalescing bandwidths")
    copy = copy_bandwidth(nbytes=1 << 29, reps=20, framework="cupy")["GBps"]
    rows = []
    for name, p in coal_model.PATTERNS.items():
        n = BANDWIDTH_LOADS if p.dtype == "float32" else F16_BYTES // p.width
        x = cp.random.standard_normal(coal_model.x_elements(p, n), dtype=cp.float32).astype(p.dtype)
        y = cp.full(y_elements(p, n), np.nan, dtype=p.dtype)
        threads = n // p.per_thread
        block = 256
        grid = -(-threads // block)
        fn = kernels.function(coal_model.FILE, p.kernel)
        args = launch_args(p, x, y, n)
        fn((grid,), (block,), args)
        want = coal_model.expected_y(p, x, n, xp=cp)        # checked on the device: x may be 2 GiB
        if not bool(cp.array_equal(y.view(cp.uint16), want.view(cp.uint16))):
            raise AssertionError(f"bandwidth: {name} copied the wrong elements")
        t = _time_kernel(fn, (grid,), (block,), args, reps=reps)
        useful = 2 * n * p.width
        rows.append({"op": "coalescing", "impl": p.kernel, "pattern": name, "width": p.width, "loads": n,
                     "timing": "kernel", "median_us": round(t.median_us, 3), "p10_us": round(t.p10_us, 3),
                     "p90_us": round(t.p90_us, 3), "bytes": useful, "GBps": round(t.GBps(useful), 1),
                     "copy_GBps": round(copy, 1)})
    return rows


def ladder_timings(n: int = LADDER_GPU_N, block: int = 256, reps: int = 30) -> List[Dict]:
    """Each rung on this GPU over n floats (small integers: every partial exact): its sum checked
    against float64 first, exactly, then timed (kernel time of the one pass that writes the partials;
    GB/s = 4 n bytes / time), beside the copy of the run."""
    from ..measure.timing import copy_bandwidth

    cp = backend.require_cupy("the reduction ladder timings")
    copy = copy_bandwidth(nbytes=1 << 29, reps=20, framework="cupy")["GBps"]
    xh = ladder.exact_inputs(n)                # integers: every rung's sum must equal float64's exactly
    x = cp.asarray(xh)
    rows = []
    for rung, kernel, _what in ladder.RUNGS:
        res = ladder.run(x, rung, block)
        ladder.check_total(f"rung {rung} over {n} floats", res["total"], xh, exact=True)
        grid = res["grid"]
        out = cp.full(grid, np.nan, cp.float32)
        fn = kernels.function(ladder.FILE, kernel)
        shared = 4 * block if rung not in ("shuffle", "vector") else 0
        t = _time_kernel(fn, (grid,), (block,), (x, out, np.int64(n)), shared_mem=shared, reps=reps)
        rows.append({"op": "reduction_ladder", "impl": kernel, "rung": rung, "n": n, "block": block, "grid": grid,
                     "timing": "kernel", "median_us": round(t.median_us, 3), "p10_us": round(t.p10_us, 3),
                     "p90_us": round(t.p90_us, 3), "GBps": round(t.GBps(4 * n), 1), "copy_GBps": round(copy, 1),
                     "checked": "equal to float64 (integer inputs)"})
    return rows


def recorded_addresses(seed: int = 0) -> List[Dict]:
    """Each coalescing pattern and bank case traced on this GPU: the sector (bank) counts derived
    from the addresses its lanes recorded on the silicon, beside the emulator's own count of the same
    traced launch on the CPU (per load instruction).  ``equal`` says whether they agree."""
    from ..frames import banks as bank_frames
    from ..frames import coalescing as coal_frames
    from ..lessons import BANKS, COALESCING

    backend.require_gpu("the recorded addresses")
    rows = []
    for name in coal_model.PATTERNS:
        tr = COALESCING.trace(seed=seed, producer="gpu", pattern=name, n=COUNT_LOADS, block=COUNT_BLOCK)
        got = coal_frames.summary(tr)
        emu = COALESCING.trace(seed=seed, producer="emulator", pattern=name, n=COUNT_LOADS, block=COUNT_BLOCK)
        want = coal_frames.summary(emu)
        rows.append({"op": "recorded_addresses", "impl": tr.kernel, "case": name, "timing": "none",
                     "gpu": {k: got[k] for k in ("requests", "sectors")},
                     "emulated": {k: want[k] for k in ("requests", "sectors")},
                     "equal": (got["requests"], got["sectors"]) == (want["requests"], want["sectors"])
                     and np.array_equal(tr["offsets"], emu["offsets"])})
    for name in banks_model.CASES:
        shape = {} if name.startswith(("stride", "broadcast")) else {"rows": 64, "cols": 96}
        tr = BANKS.trace(seed=seed, producer="gpu", case=name, **shape)
        emu = BANKS.trace(seed=seed, producer="emulator", case=name, **shape)
        got, want = bank_frames.summary(tr), bank_frames.summary(emu)
        rows.append({"op": "recorded_addresses", "impl": tr.kernel, "case": name, "timing": "none",
                     "gpu": {k: got[k] for k in ("requests", "wavefronts", "ideal")},
                     "emulated": {k: want[k] for k in ("requests", "wavefronts", "ideal")},
                     "equal": (got["wavefronts"], got["ideal"]) == (want["wavefronts"], want["ideal"])
                     and np.array_equal(tr["offsets"], emu["offsets"])})
    return rows


def race_distributions(runs: int = RACE_RUNS, seed: int = 0) -> List[Dict]:
    """Each ``kernels/races.cu`` kernel run ``runs`` times on this GPU (:data:`RACE_LAUNCH`): its
    outcome per run (counts lost, or elements wrong)."""
    from ..frames import races as race_frames
    from ..lessons import RACES
    from ..record import races

    rows = []
    L = RACE_LAUNCH
    for kernel in races.KERNELS:
        tr = RACES.trace(seed=seed, producer="gpu", kernel=kernel, runs=runs, grid=L["grid"], block=L["block"],
                         nbins=L["nbins"], n=L["n"])
        o = race_frames.outcomes(tr)
        rows.append({"op": "race_runs", "impl": kernel, "timing": "none", "runs": runs, **{k: L[k] for k in L},
                     "what": race_frames.what(tr), "outcomes": [int(v) for v in o],
                     "right": int((o == 0).sum())})
    return rows


PARTS: Dict[str, Callable] = {"bandwidth": bandwidth, "ladder": ladder_timings, "addresses": recorded_addresses,
                              "races": race_distributions}


def record(out=None):
    """Every GPU part (:data:`PARTS`), a failing part logged in the record's ``failed``; saves
    ``<gpu>-<date>-memory-access.json`` into ``out`` and returns its path."""
    from ..measure import records

    backend.require_gpu("the memory-access record")
    rows, failed = [], []
    for name, fn in PARTS.items():
        try:
            rows += fn()
            print(f"memory-access {name}: ok")
        except Exception as exc:  # noqa: BLE001  (each part is independent: log and go on)
            failed.append({"part": name, "error": f"{type(exc).__name__}: {exc}",
                           "traceback": traceback.format_exc().splitlines()[-4:]})
            print(f"memory-access {name}: FAILED {type(exc).__name__}: {exc}")
    copy = next((r["copy_GBps"] for r in rows if "copy_GBps" in r), None)
    return records.save_record(records.new_record(rows, failed=failed, copy_GBps=copy), tag="memory-access",
                               directory=out)


# -- Nsight Compute ----------------------------------------------------------------------------------

#: What ncu prints when the driver refuses a non-admin the performance counters.
COUNTERS_REFUSED = ("ERR_NVGPUCTRPERM", "permission to access NVIDIA GPU Performance Counters")


def launch_counters_child(seed: int = 0) -> None:
    """The process ncu profiles: every :func:`counter_launches` launch once, untraced, in order."""
    for spec in counter_launches(seed):
        launch_on_gpu(spec)
    backend.require_cupy("the counter launches").cuda.get_current_stream().synchronize()


def parse_ncu_csv(text: str) -> List[Dict[str, float]]:
    """``ncu --csv --metrics ...`` output -> one ``{"kernel": name, metric: value, ...}`` per profiled
    launch, in launch order (ncu's ``==PROF==`` lines before the header are skipped).

    Raises:
        ValueError: no CSV header (a line with "Metric Name").
    """
    from ..measure import ncu

    return ncu.launches(text, {m: m for m in ma.NCU_METRICS})


def counters(ncu: Optional[str] = None, seed: int = 0) -> Dict:
    """Profile :func:`launch_counters_child` under ncu and compare each launch's counters with the
    emulator's (:func:`gpu_viz.memory_access.ncu_counts`).

    Returns ``{"counters": "read", "rows": [...]}``, or ``{"counters": "blocked", "reason": ...}``
    when ncu is missing or the driver refused the counters.
    """
    ncu = ncu or kernels.find_tool("ncu")
    if not ncu:
        return {"counters": "blocked", "reason": "ncu (Nsight Compute) is not installed on this machine"}
    specs = counter_launches(seed)
    names = sorted({s["kernel"] for s in specs})
    cmd = [ncu, "--csv", "--print-units", "base", "--metrics", ",".join(ma.NCU_METRICS),
           "--kernel-name", "regex:^(" + "|".join(names) + ")$", sys.executable, "-m", "gpu_viz.claims.memory_access",
           "--launch-counters", str(seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=900)
    text = (proc.stdout or "") + "\n" + (proc.stderr or "")
    if any(s in text for s in COUNTERS_REFUSED):
        line = next((ln.strip() for ln in text.splitlines() if any(s in ln for s in COUNTERS_REFUSED)), "")
        return {"counters": "blocked", "reason": f"the driver refused the performance counters: {line[:300]}"}
    if proc.returncode != 0:
        tail = " | ".join(text.strip().splitlines()[-3:])
        return {"counters": "blocked", "reason": f"ncu failed ({proc.returncode}): {tail[:400]}"}
    got = parse_ncu_csv(proc.stdout)
    if [g["kernel"] for g in got] != [s["kernel"] for s in specs]:
        return {"counters": "blocked", "reason": f"ncu profiled {[g['kernel'] for g in got]}, expected "
                                                 f"{[s['kernel'] for s in specs]}"}
    rows = []
    for spec, g in zip(specs, got):
        run, _ = emulate(spec)
        emu = ma.ncu_counts(run)
        measured = {m: int(g[m]) for m in ma.NCU_METRICS if m in g}
        rows.append({"op": "ncu_counters", "impl": spec["kernel"], "case": spec["name"], "timing": "ncu",
                     "ncu": measured, "emulated": {m: emu[m] for m in measured},
                     "equal": all(measured[m] == emu[m] for m in measured)})
    return {"counters": "read", "rows": rows}


def record_counters(out=None):
    """:func:`counters` on this GPU, saved as ``<gpu>-<date>-memory-counters.json`` (with the reason
    when the counters could not be read); the path."""
    from ..measure import records

    backend.require_gpu("the memory-counters record")
    res = counters()
    rows = res.get("rows", [])
    rec = records.new_record(rows, counters=res["counters"], reason=res.get("reason", ""), tool="ncu",
                             metrics=list(ma.NCU_METRICS))
    print(f"memory-counters: {res['counters']}" + (f" ({res['reason']})" if res.get("reason") else
                                                 f", {sum(r['equal'] for r in rows)} of {len(rows)} launches equal"))
    return records.save_record(rec, tag="memory-counters", directory=out)


# -- what the notebook shows -------------------------------------------------------------------------

def recorded(tag: str):
    """``(record, label)`` of the newest committed ``*-<tag>.json`` (``memory-access`` or
    ``memory-counters``), or ``(None, why)``: :func:`gpu_viz.measure.records.missing`'s clause (a
    GPU measures memory-access in the cell itself; the counters come only from the record)."""
    from ..measure import records

    rec, label = records.recorded(tag)
    if rec is None:
        return None, records.missing(tag, live=tag != "memory-counters")
    return rec, label


if __name__ == "__main__" and "--launch-counters" in sys.argv:
    launch_counters_child(int(sys.argv[sys.argv.index("--launch-counters") + 1]))


# -- the notebook's text: each table or sentence with where its numbers came from ------------------------

def _absent(rec: Optional[Dict], label: str, what: str) -> str:
    """Why a section has no GPU numbers, as one lower-case clause: :func:`recorded`'s ``label`` (the
    record is missing, and the command that makes it) when ``rec`` is None, else that the record
    holds no ``what`` (a part of its run that failed says so: the record's ``failed``)."""
    if rec is None:
        return label
    failed = "; ".join(f"{f.get('part')} failed: {f.get('error')}" for f in rec.get("failed") or []
                       if isinstance(f, dict))
    return f"the GPU record has no {what}" + (f" ({failed})" if failed else "") + f". Data: {label}"


def _pct(f: float) -> str:
    v = 100.0 * f
    return f"{v:.0f} %" if abs(v - round(v)) < 0.05 else f"{v:.1f} %"


def pattern_table(rows: Sequence[Dict]) -> str:
    """Markdown: one row per coalescing pattern (:func:`pattern_counts`)."""
    out = ["| pattern | bytes a lane | sectors per request | coalesced needs | bytes used | warp loads per KiB |",
           "|---|---|---|---|---|---|"]
    out += [f"| {r['pattern']} | {r['width']} | **{r['sectors_per_request']:.1f}** | {r['ideal']} | "
            f"{_pct(r['efficiency'])} | {r['requests_per_KiB']:.0f} |" for r in rows]
    return "\n".join(out)


def bank_table(rows: Sequence[Dict], names: Optional[Sequence[str]] = None) -> str:
    """Markdown: the shared loads (and the transposes' stores) of :func:`bank_counts`."""
    out = ["| case | access | wavefronts per request | bank conflicts |", "|---|---|---|---|"]
    for r in rows:
        if names is not None and r["name"] not in names:
            continue
        if r["kernel"] == "shared_stride" and r["op"] == "st":
            continue
        access = "load" if r["op"] == "ld" else "store"
        out.append(f"| {r['name']} | {access} | **{r['wavefronts_per_request']:.1f}** | "
                   f"{r['conflicts']:,} |")
    return "\n".join(out)


def ladder_table(rows: Sequence[Dict]) -> str:
    """Markdown: the rungs' emulated counts (:func:`ladder_counts`)."""
    out = ["| rung | blocks | warp-instructions | divergent branches | bank conflicts | load requests | "
           "sum = float64 |", "|---|---|---|---|---|---|---|"]
    for k, r in enumerate(rows, 1):
        out.append(f"| {k}. {r['rung']} | {r['blocks']} | {r['warp_instructions']:,} | {r['divergent']:,} | "
                   f"{r['bank_conflicts']:,} | {r['load_requests']:,} | {'yes' if r['ok'] else '**NO**'} |")
    return "\n".join(out)


def block_sizes_table(rows: Sequence[Dict]) -> str:
    """Markdown: the tree rungs at blocks that are and are not a power of two (:func:`ladder_block_sizes`)."""
    rungs = list(dict.fromkeys(r["rung"] for r in rows))
    blocks = list(dict.fromkeys(r["block"] for r in rows))
    at = {(r["rung"], r["block"]): r for r in rows}
    out = ["| block | " + " | ".join(rungs) + " |", "|---|" + "---|" * len(rungs)]
    for b in blocks:
        cells = []
        for rung in rungs:
            r = at[(rung, b)]
            cells.append("right" if r["ok"] else ("**reads past s[]**" if "past the end" in r["hazard"] else
                                                  f"**wrong** ({r['sum']:.3g}, want {r['float64']:.3g})"))
        out.append(f"| {b} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def pattern_section() -> str:
    """Markdown: :func:`pattern_table` of :func:`pattern_counts` with its label -- or, without
    NVRTC, what is not shown and what to install."""
    if not can_emulate():
        return _not_shown("the emulator's count of the sectors each coalescing pattern's loads move")
    rows = pattern_counts()
    return (pattern_table(rows) + f"\n\n{rows[0]['requests']} warp loads a pattern. Data: {emulated_label()}")


def bank_section(names: Optional[Sequence[str]] = None, words: str = "") -> str:
    """Markdown: :func:`bank_table` of :func:`bank_counts` (the cases in ``names``, default all), then
    ``words`` (what the reader should see in it), then its label -- or, without NVRTC, ``words`` after
    what is not shown and what to install."""
    if not can_emulate():
        what = ", ".join(names) if names else "every case"
        note = _not_shown(f"the emulator's count of the bank conflicts ({what})")
        return note + (f"\n\n{words}" if words else "")
    return (bank_table(bank_counts(), names=names) + (f"\n\n{words}" if words else "")
            + f"\n\nData: {emulated_label()}")


def sources_section() -> str:
    """Markdown: the three sources of the memory counts -- the emulator's tables (or why they are not
    shown), the addresses recorded on silicon (:func:`addresses_section`) and Nsight Compute's
    counters (:func:`counters_section`)."""
    emulated = ("the tables above, from the kernels' PTX." if can_emulate() else
                "not here (the emulator needs NVRTC: `pip install 'gpu-viz[emulator]'`).")
    return (f"**Emulated**: {emulated}\n\n**On silicon** (the addresses the kernels recorded): "
            f"{addresses_section()}\n\n**Nsight Compute**: {counters_section()}")


def race_section(kernel: str = "histogram_racy", seed: int = 1) -> str:
    """Markdown: one emulated run of ``kernel`` (:func:`race_report`): its outcome, the race the
    emulator names, and the two accesses -- or, without NVRTC, what is not shown and what to install."""
    if not can_emulate():
        return _not_shown(f"the emulator's report of the race in `{kernel}` (the line and the two threads)")
    rep = race_report(kernel, seed)
    rows = "\n".join(f"| {a['access']} | {a['line']} | {a['block']} | {a['thread']} | {a['warp']} | {a['lane']} |"
                     for a in rep["accesses"])
    race = f"\n\n> {rep['race'].split(': the result')[0]}." if rep["race"] else "\n\nNo race reported."
    table = ("\n\n| access | line | block | thread | warp | lane |\n|---|---|---|---|---|---|\n" + rows
             if rows else "")
    return f"One run: {rep['outcome']}.{race}{table}\n\nData: {rep['label']}"


def race_runs_section(traces: Sequence) -> str:
    """Markdown: one row per race trace (``RACES.trace(...)``: runs, runs right, the outcomes' min /
    median / max), labelled with the first's provenance.  A :class:`gpu_viz.lessons.NotTraced` among
    them (``missing_ok=True`` without NVRTC): what is not shown and what to install instead."""
    from ..frames import races as race_frames
    from ..lessons import NotTraced

    if not traces:
        raise ValueError("traces must hold at least one RACES trace")
    missing = [t for t in traces if isinstance(t, NotTraced)]
    if missing:
        return _not_shown("the outcomes of each kernel's emulated runs")
    rows = [race_frames.summary(t) for t in traces]
    return ("| kernel | runs | right | outcome: min / median / max |\n|---|---|---|---|\n"
            + "\n".join(f"| {r['kernel']} | {r['runs']} | **{r['right']}** | {r['min']} / {r['median']:g} / "
                        f"{r['max']} {r['what']} |" for r in rows)
            + f"\n\nData: {traces[0].provenance}")


def ladder_section() -> str:
    """Markdown: :func:`ladder_table` of :func:`ladder_counts` with its launch and label -- or,
    without NVRTC, what is not shown and what to install."""
    if not can_emulate():
        return _not_shown("the emulator's counts of each rung (warp-instructions, divergent branches, "
                          "bank conflicts, load requests)")
    return (ladder_table(ladder_counts()) + f"\n\n{LADDER_N:,} floats, blocks of {LADDER_BLOCK}. "
            f"Data: {emulated_label()}")


def block_sizes_section() -> str:
    """Markdown: :func:`block_sizes_table` of :func:`ladder_block_sizes` with its label -- or, without
    NVRTC, what is not shown and what to install."""
    if not can_emulate():
        return _not_shown("the emulator's run of each tree rung at blocks that are not a power of two")
    return (block_sizes_table(ladder_block_sizes())
            + f"\n\nOne block over as many floats as threads. Data: {emulated_label()}")


def _traffic_words(counts: Sequence[Dict]) -> str:
    """What the emulated counts say about time, with no clock: the bytes a pattern's sectors move per
    byte it uses (1 / efficiency), the ratio a timing shows where no cache catches the rest."""
    strided = [r for r in counts if r["pattern"].startswith("stride")]
    worst = max(strided or counts, key=lambda r: 1 / r["efficiency"])
    k = f"{1 / worst['efficiency']:.3g}x"
    return (f"Without a clock, the emulator's counts say what a timing would: at {worst['pattern']} the loads of "
            f"x move {k} the bytes they use, so where no cache catches the rest, reading x takes {k} as long as "
            f"reading it coalesced. Data: {emulated_label()}")


def bandwidth_section(counts: Optional[Sequence[Dict]] = None) -> str:
    """Markdown: the coalescing patterns' GB/s beside the copy -- measured now on a GPU, else the
    committed record's; in CPU mode without a record, what the emulated ``counts``
    (:func:`pattern_counts`' rows; counted here when None and NVRTC is found) say instead, and what
    to run to make one."""
    if backend.has_gpu():
        rows, label = bandwidth(reps=20), backend.live_label()
    else:
        rec, label = recorded("memory-access")
        rows = [r for r in (rec or {}).get("rows", []) if r.get("op") == "coalescing"]
        if not rows:
            if counts is None and can_emulate():
                counts = pattern_counts()
            return (f"*GB/s: {_absent(rec, label, 'coalescing timings')}.*"
                    + (f"\n\n{_traffic_words(counts)}" if counts else ""))
    copy = rows[0]["copy_GBps"]
    out = ["| pattern | bytes a lane | median µs | GB/s (useful bytes) | share of copy |", "|---|---|---|---|---|"]
    out += [f"| {r['pattern']} | {r['width']} | {r['median_us']:,.1f} | {r['GBps']:,.0f} | "
            f"**{_pct(r['GBps'] / copy)}** |" for r in rows]
    return ("\n".join(out) + f"\n\nCopy: {copy:,.0f} GB/s in the same run. Kernel time by CUDA-graph replay; GB/s "
            f"counts the bytes the copy must move (useful x once, y once). Data: {label}")


def addresses_section() -> str:
    """Markdown: the sector and bank counts derived from the addresses the silicon recorded, beside
    the emulator's -- live on a GPU, else the committed record's; in CPU mode without one, a clause
    (lower case: it follows :func:`sources_section`'s heading) naming the command that makes it."""
    if backend.has_gpu():
        rows, label = recorded_addresses(), backend.live_label()
    else:
        rec, label = recorded("memory-access")
        rows = [r for r in (rec or {}).get("rows", []) if r.get("op") == "recorded_addresses"]
        if not rows:
            return f"{_absent(rec, label, 'recorded addresses')}."
    same = sum(bool(r["equal"]) for r in rows)
    bad = [r["case"] for r in rows if not r["equal"]]
    return (f"Counted from the addresses the traced kernels recorded on the GPU, and by the emulator from the same "
            f"launches' PTX: **{same} of {len(rows)} cases agree** number for number"
            + (f" (they differ at {', '.join(bad)})" if bad else "") + f". Data: {label}")


def counters_section() -> str:
    """Markdown: what Nsight Compute's counters said (the committed record), or why they are absent
    (without a record: a clause, lower case, to follow :func:`sources_section`'s heading)."""
    rec, label = recorded("memory-counters")
    if rec is None:
        return f"{label}."
    if rec.get("counters") != "read":
        why = rec.get("reason") or "no reason given"
        return (f"Nsight Compute could not read the counters on {rec['gpu']} ({why}): "
                f"the counts above are the derived ones alone. Data: {label}")
    rows = rec.get("rows", [])
    same = sum(bool(r["equal"]) for r in rows)
    bad = [r["case"] for r in rows if not r["equal"]]
    return (f"Nsight Compute's `l1tex__t_sectors_pipe_lsu_mem_global_op_ld`, `..._requests_...` and "
            f"`l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld` / `_st` beside the emulator's counts of the "
            f"same launches: **{same} of {len(rows)} launches agree** on every counter"
            + (f" (they differ at {', '.join(bad)})" if bad else "") + f". Data: {label}")


def race_record_section() -> str:
    """Markdown: the silicon's race distributions (the committed record's, or none).  It follows
    notebook 08's own heading ("**On silicon** (at least 100 runs a kernel): "), so it names no
    heading of its own and, without a record, is one clause naming the command that makes one."""
    if backend.has_gpu():
        return "on this GPU the players above are the silicon's own runs."
    rec, label = recorded("memory-access")
    rows = [r for r in (rec or {}).get("rows", []) if r.get("op") == "race_runs"]
    if not rows:
        return f"{_absent(rec, label, 'race runs')}."
    out = [f"each kernel's runs on {rec.get('gpu', 'the GPU')}:", "",
           "| kernel | runs | right | outcomes (min / median / max) |", "|---|---|---|---|"]
    for r in rows:
        o = np.asarray(r["outcomes"])
        out.append(f"| {r['impl']} | {r['runs']} | {r['right']} | {int(o.min())} / {np.median(o):g} / {int(o.max())} "
                   f"{r['what']} |")
    return "\n".join(out) + f"\n\nData: {label}"


def _ladder_words(counts: Sequence[Dict]) -> str:
    """The emulated rungs' warp-instructions against the first rung's, with no clock."""
    first, last = counts[0], counts[-1]
    return (f"Without a clock, the emulator's counts: rung {first['rung']} issues {first['warp_instructions']:,} "
            f"warp-instructions, rung {last['rung']} {last['warp_instructions']:,} "
            f"({first['warp_instructions'] / last['warp_instructions']:.1f}x fewer). Counts are not times: a GPU's "
            f"timing says what each rung waits on. Data: {emulated_label()}")


def ladder_timing_section(counts: Optional[Sequence[Dict]] = None) -> str:
    """Markdown: the rungs timed on a GPU (each checked against float64 first) -- live, or recorded;
    in CPU mode without a record, what the emulated ``counts`` (:func:`ladder_counts`' rows; counted
    here when None and NVRTC is found) say instead."""
    if backend.has_gpu():
        rows, label = ladder_timings(reps=20), backend.live_label()
    else:
        rec, label = recorded("memory-access")
        rows = [r for r in (rec or {}).get("rows", []) if r.get("op") == "reduction_ladder"]
        if not rows:
            if counts is None and can_emulate():
                counts = ladder_counts()
            return (f"*Each rung's time: {_absent(rec, label, 'rung timings')}.*"
                    + (f"\n\n{_ladder_words(counts)}" if counts else ""))
    copy = rows[0]["copy_GBps"]
    out = ["| rung | median µs | GB/s | share of copy |", "|---|---|---|---|"]
    out += [f"| {r['rung']} | {r['median_us']:,.1f} | {r['GBps']:,.0f} | **{_pct(r['GBps'] / copy)}** |" for r in rows]
    return ("\n".join(out) + f"\n\n{rows[0]['n']:,} floats, blocks of {rows[0]['block']}; each rung's sum checked "
            f"against float64 before it was timed; copy {copy:,.0f} GB/s in the same run. Data: {label}")


#: The CUDA C++ Programming Guide's throughput table: warp shuffle, results per clock cycle per SM
#: (compute capability 5.x to 9.0): 32, i.e. one warp-wide shuffle per clock per SM.
SHUFFLE_RESULTS_PER_CLOCK = 32
SCHEDULERS_PER_SM = 4


def shuffle_section() -> str:
    """Markdown: the deck's "~5 cycles a shuffle step", placed between latency (measured chains:
    live or the probes record) and throughput (the programming guide's table)."""
    from . import probes

    rows, label = probes.current("latency_chain")
    per_sched = SCHEDULERS_PER_SM * 32 // SHUFFLE_RESULTS_PER_CLOCK
    throughput = (f"Throughput, from the CUDA C++ Programming Guide's table: {SHUFFLE_RESULTS_PER_CLOCK} shuffle "
                  f"results per clock per SM, one warp-wide shuffle a clock, so each of the {SCHEDULERS_PER_SM} "
                  f"schedulers can issue one every {per_sched} cycles -- close to the deck's "
                  f"~{probes.DECK_SHUFFLE_CYCLES}, which is an issue rate, not a wait.")
    if not rows:
        return throughput + f" *The latency is measured by the probes record: {label}.*"
    c = {r["impl"]: r["cycles_per_step"] for r in rows}
    return (f"Latency, timed as a chain of dependent steps in one warp: SHFL alone "
            f"**{c.get('chain_shfl', float('nan')):.0f}** "
            f"cycles, SHFL.DOWN + FADD (one reduction step) **{c.get('chain_shfl_fadd', float('nan')):.0f}** cycles. "
            f"Data: {label}.\n\n{throughput} A reduction's five steps depend on each other: they pay the latency, "
            f"about 5 x {c.get('chain_shfl_fadd', float('nan')):.0f} cycles, unless other warps fill the gaps.")
