"""One benchmark record: :func:`full_record` measures the fused ops against every baseline
(:mod:`gpu_viz.rmsnorm.plan`'s batches through :func:`gpu_viz.rmsnorm.bench.run`), with the copy
bandwidth, the launch floor, batch invariance, the kernels' registers and occupancy and the
targets (:mod:`gpu_viz.rmsnorm.targets`), and saves it; :func:`newest_record` reads the newest.
"""
from __future__ import annotations

import functools
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .. import backend, check, kernels
from ..measure import records
from ..measure import timing as bench
from .bench import CALL_WINDOWS, DEFAULT_REPS, DTYPES, check_rows, dtype_name, run
from .dtypes import KERNEL_OPS, RMSNORM, RMSNORM_ADD, RMSNORM_GATE, torch_dtype
from .dtypes import check_op as _check_op
from .plan import INVARIANCE_M, INVARIANCE_N, estimate, plan_steps, record_batches, record_plan
from .providers import (EPS, ProviderUnavailable, _liger_rms_norm, available, clear_shared_compiles,
                        shared_compile_groups)
from .targets import FLOOR_SHAPE, PREVIOUS_LIMIT, previous_record_checks, summary_checks
from .tolerances import tolerance


def batch_invariance(Ns=INVARIANCE_N, Ms=INVARIANCE_M, dtypes=DTYPES, seed: Optional[int] = None) -> Dict:
    """The record's ``"batch_invariant"``: for each op (rmsnorm, rmsnorm_gate, rmsnorm_add),
    dtype and N, the rows of ``op(x[:m])`` against the same rows of ``op(x[:max(Ms)])`` bit for
    bit at every m, after ``op(x)``'s first rows passed the float64 check.

    Returns:
        ``{"ok": bool, "checked": [{"op", "dtype", "N", "M": [...], "ok", "detail"?}]}``.
    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    import torch

    from .fused import op as fused
    from .reference import rmsnorm_add as ref_add

    backend.require_gpu("the batch-invariance check")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(check.new_seed() if seed is None else seed)
    checked = []
    Mx = max(Ms)
    for op in KERNEL_OPS:
        for dt in dtypes:
            tdt = torch_dtype(dt)
            for N in Ns:
                x = torch.randn(Mx, N, device="cuda", generator=gen).to(tdt)
                x2 = None if op == RMSNORM else (2 * torch.randn(Mx, N, device="cuda", generator=gen)).to(tdt)
                w = (1 + 0.5 * torch.randn(N, device="cuda", generator=gen)).to(tdt)

                def f(m):
                    if op == RMSNORM:
                        return fused.rmsnorm(x[:m], w, EPS)
                    if op == RMSNORM_GATE:
                        return fused.rmsnorm_gate(x[:m], x2[:m], w, EPS)
                    return fused.rmsnorm_add(x[:m], x2[:m], w, EPS)[0]

                full = f(Mx)
                if op == RMSNORM_ADD:
                    ref = ref_add(x[:64], x2[:64], w, EPS)[0]
                    atol, rtol = tolerance(dt)
                    ok_ref = check.compare(op, full[:64], ref, atol=atol, rtol=rtol).ok
                else:
                    ok_ref = check_rows(op, full[:64], x[:64], w, x2[:64] if x2 is not None else None, EPS, dt)[0]
                bad = [m for m in Ms[:-1] if not torch.equal(f(m).view(torch.uint8), full[:m].view(torch.uint8))]
                torch.cuda.synchronize()
                row = {"op": op, "dtype": dt, "N": N, "M": list(Ms), "ok": bool(ok_ref and not bad)}
                if not ok_ref:
                    row["detail"] = "op(x) failed the float64 check"
                elif bad:
                    row["detail"] = f"rows differ at M={bad}"
                checked.append(row)
                x = x2 = w = full = None
                torch.cuda.empty_cache()
    return {"ok": all(r["ok"] for r in checked), "checked": checked}


def kernel_report_any(arch: Optional[str] = None) -> Tuple[List[Dict], str]:
    """``fused.kernel_report()`` rows for one ``arch`` (default: this device's, or the deck's L4 in
    CPU mode) and where they came from: in CPU mode the committed ptxas report
    (:mod:`gpu_viz.rmsnorm.ptxas`) while it matches the kernels' code; else ptxas (with spills)
    where nvcc exists, else the live device's attributes (registers, no spill count).

    Raises:
        RuntimeError: neither source worked (both reasons).
    """
    from .. import device as _device
    from .fused import op as fused  # torch-importing modules: loaded when used

    arch = arch or _device.current().sm
    if not backend.has_gpu():   # CPU mode: the committed report while it matches the kernels (no compile)
        from . import ptxas

        rows, where = ptxas.fused_rows(arch)
        if rows:
            return rows, where
        print(f"{where}; compiling the fused kernels for {arch} with the local nvcc instead (a minute or two) ...",
              flush=True)
    try:
        return fused.kernel_report(source="ptxas", arches=[arch]), f"ptxas -v for {arch} (nvcc on this machine)"
    except Exception as exc:
        first = f"{type(exc).__name__}: {exc}"
    if backend.has_gpu():
        rows = [r for r in fused.kernel_report(source="device") if r.get("arch") == arch]
        return rows, f"cudaFuncGetAttributes on {backend.detect().device_name} (no spill count: {first[:120]})"
    raise RuntimeError(f"no kernel report: ptxas failed ({first[:300]}) and there is no GPU")


def kernel_resources(cases: Sequence[Tuple[str, int, int]], dtype="float16", info=None,
                     report: Optional[List[Dict]] = None) -> List[Dict]:
    """For each (op, M, N): the kernel the fused op launches for it on ``info`` (default
    ``device.current()``) -- ``fused.launch_config``'s, or, where ``fused.uses_wide`` sends the row
    to :mod:`gpu_viz.rmsnorm.wide`, its cluster kernel (variant "cluster") --, its registers and
    spills (``report`` rows, default :func:`kernel_report_any` for ``info``'s arch; a cluster
    kernel's from the local nvcc, none without one) and its occupancy from
    :func:`gpu_viz.occupancy.calculate` (a cluster kernel's with its dynamic shared memory; the
    cluster's own placement rules aside).

    Returns one dict per case: op, M, N, variant, kernel, block, rows_per_block (None for a
    cluster: a row spans ``cluster`` blocks), grid, registers, spill_stores_bytes,
    spill_loads_bytes, local_bytes, shared_bytes, blocks_per_sm, occupancy (0..1), limiter.
    """
    from .. import device as _device, occupancy
    from .fused import config, launch  # torch-importing modules: loaded when used

    info = info or _device.current()
    if report is None:
        report, _src = kernel_report_any(info.sm)
    by_name = {r["kernel"]: r for r in report if r.get("arch", info.sm) == info.sm}
    out = []
    for op, M, N in cases:
        gate = _check_op(op) == RMSNORM_GATE
        dynamic = 0
        if launch.uses_wide(op, N, dtype, tuple(info.compute_capability)):
            from . import wide

            wcfg = wide.config(N, dtype, tuple(info.compute_capability), gate=gate)
            cfg = {"variant": "cluster", "kernel": wcfg.kernel, "block": wcfg.threads, "rows_per_block": None,
                   "grid": wide.launch_grid(wcfg, M)}
            r, dynamic = _wide_usage(wcfg, info.sm), wcfg.smem_bytes
        else:
            cfg = config.launch_config(M, N, dtype, gate=gate)
            r = by_name.get(cfg["kernel"], {})
        row = {"op": op, "M": M, "N": N, "variant": cfg["variant"], "kernel": cfg["kernel"],
               "block": cfg["block"], "rows_per_block": cfg["rows_per_block"], "grid": cfg["grid"],
               "registers": r.get("registers"), "spill_stores_bytes": r.get("spill_stores_bytes"),
               "spill_loads_bytes": r.get("spill_loads_bytes"), "local_bytes": r.get("local_bytes"),
               "shared_bytes": r.get("shared_bytes")}
        if r.get("registers") is not None:
            occ = occupancy.calculate(info, cfg["block"], occupancy.KernelResources(
                cfg["kernel"], int(r["registers"]), int(r.get("shared_bytes") or 0)), dynamic)
            row.update(blocks_per_sm=occ.blocks_per_sm, occupancy=round(occ.occupancy, 3), limiter=occ.limiter)
        else:
            row.update(blocks_per_sm=None, occupancy=None, limiter="no report for this kernel")
        out.append(row)
    return out


@functools.lru_cache(maxsize=None)
def _wide_usage(cfg, arch: str) -> Dict:
    """ptxas's registers, spills and static shared memory of one cluster kernel for ``arch``
    (the local nvcc, once per configuration); without nvcc, on a GPU of that arch, the loaded
    kernel's registers and memory (no spill count), as :func:`kernel_report_any`; else {}."""
    from . import ptxas, wide
    from .. import device as _device

    if not backend.has_gpu():   # CPU mode: the committed report while it matches the kernels
        known = ptxas.wide_usage(cfg.kernel, arch)
        if known is not None:
            return known

    try:
        (u,) = kernels.nvcc_compile(wide.FILE, arch, cfg.options)
    except FileNotFoundError:
        if not (backend.has_gpu() and _device.current().sm == arch):
            return {}
        k = wide._kernel(cfg, backend.require_cupy("a kernel's attributes").cuda.runtime.getDevice())
        return {"registers": int(k.num_regs), "local_bytes": int(k.local_size_bytes),
                "shared_bytes": int(k.shared_size_bytes)}
    return {"registers": u.registers, "spill_stores_bytes": u.spill_stores_bytes,
            "spill_loads_bytes": u.spill_loads_bytes, "local_bytes": u.stack_frame_bytes, "shared_bytes": u.shared_bytes}


def _kernel_section(plan) -> Dict:
    """The record's view of the kernels: per-arch report and, per (op, shape, dtype), the
    launch config with registers, spills and occupancy."""
    try:
        report, source = kernel_report_any()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    cases = []
    for op, shapes, dtypes, _p in plan:
        for dt in dtypes:
            try:
                cases += [dict(r, dtype=dtype_name(dt))
                          for r in kernel_resources([(op, M, N) for (M, N) in shapes], dt, report=report)]
            except Exception as exc:
                cases.append({"op": op, "dtype": dt, "error": f"{type(exc).__name__}: {exc}"})
    return {"source": source, "report": report, "launches": cases}


def full_record(quick: bool = False, out=None, tag: str = "fused", reps: int = DEFAULT_REPS,
                verbose: bool = True, save: bool = True, previous: Optional[Dict] = "newest") -> Dict:
    """Measure the fused ops against every baseline in one run and save it as one record.

    In order: copy bandwidth (:func:`gpu_viz.measure.timing.copy_bandwidth`, 1 GiB), the launch
    floor (:func:`gpu_viz.measure.timing.launch_floor`), a bare copy kernel at :data:`FLOOR_SHAPE`
    fp16 (:func:`gpu_viz.measure.timing.copy_kernel_floor`), batch invariance, then :func:`run`
    over :func:`record_batches` (:func:`plan_steps` lists every step; ``gpu-viz bench --dry-run``
    prints them with the estimate): the record plan (both timings, ``reps`` >= 1 samples each),
    the per-call rows, and (not ``quick``) the wide rows with every baseline at every wide
    (op, shape, dtype), :data:`WIDE_REPS` samples.  Keys beyond DESIGN.md section 5:
    ``launch_floor_call_us``, ``copy_kernel_floor_us``, ``copy`` (its spread), ``kernels``
    (:func:`kernel_report_any` and :func:`kernel_resources` per launch: registers, spills,
    occupancy), ``skipped``, ``checks`` (:func:`summary_checks`), ``plan``, ``estimate_s``
    (the time model's estimate, beside the measured ``wall_s``), ``shared_compiles``,
    ``previous_record`` and ``vs_previous`` (:func:`previous_record_checks`), ``complete``,
    ``launcher`` (the C++ launcher's status: :func:`gpu_viz.rmsnorm.fused.launch.ensure_launcher`).

    ``previous``: the record the fused kernel times are compared with (:func:`previous_record_checks`);
    ``"newest"`` (default) loads :func:`newest_record` of ``tag`` from the committed records
    before anything is measured, used only if it was recorded on a GPU of the same name;
    None compares with nothing.  Saved through :func:`gpu_viz.measure.records.save_record`
    (``out`` directory, default the current folder) after every shape (``"complete": false``
    until the end, so a run cut short keeps what it measured) unless ``save=False``; the path is
    returned as ``record["_path"]`` (not in the file).

    Budget: one device command of at most 600 s on an H200.  Estimated ~430 s for the full
    record (:func:`estimate`, checked against the committed records' ``wall_s``), with torch.compile
    compiled per shape (:data:`SHARE_COMPILES` off: 39 compiles in the record plan and 24 at
    the wide shapes, each its own N).  What keeps it there: one garbage collection after a
    shape's checks instead of one per check; 30 samples for the wide rows, whose spread is
    tight.  Over budget, :data:`SHARE_COMPILES` saves ~36 s.

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    backend.require_gpu("the full benchmark record")
    t0 = time.perf_counter()
    plan = record_plan(quick)
    batches = record_batches(quick)
    steps_planned = plan_steps(quick, reps, batches)
    shared = shared_compile_groups(steps_planned)
    say = print if verbose else (lambda *a, **k: None)
    if isinstance(previous, str) and previous == "newest":
        previous = newest_record(tag)
    env_gpu = records.environment().get("gpu")
    if previous is not None and previous.get("gpu") != env_gpu:
        say(f"previous record {previous.get('_file')} is of {previous.get('gpu')}, not {env_gpu}: not compared")
        previous = None
    clear_shared_compiles()
    say(f"{backend.live_label()}: copy bandwidth and launch floor ...")
    copy = bench.copy_bandwidth()
    floor = bench.launch_floor()
    from .. import device as _device

    fM, fN = FLOOR_SHAPE
    copy_floor = bench.copy_kernel_floor(fM * fN * 2, _device.current().l2_bytes)
    say(f"  copy {copy['GBps']:,.0f} GB/s; launch floor {floor['kernel'].median_us:.2f} µs (kernel), "
        f"{floor['call'].median_us:.2f} µs (call); copy kernel at {fM}x{fN} fp16 "
        f"{copy_floor.median_us:.2f} µs")
    from .fused import launch

    say("the C++ launcher (built now if it is not yet) ...")
    launcher_status = launch.ensure_launcher()
    say(f"  {launcher_status}")
    say("kernel report (registers, spills, occupancy) ...")
    kernels_section = _kernel_section(plan)
    est = estimate(steps_planned)
    record = records.new_record(
        [], copy_GBps=round(copy["GBps"], 1), launch_floor_us=round(floor["kernel"].median_us, 4),
        launch_floor_call_us=round(floor["call"].median_us, 4),
        copy_kernel_floor_us=round(copy_floor.median_us, 4),
        copy={"bytes": 1 << 30, "median_us": copy["timing"].median_us, "p10_us": copy["timing"].p10_us,
              "p90_us": copy["timing"].p90_us},
        kernels=kernels_section, skipped=[], providers_unavailable={},
        plan=[{"op": op, "shapes": [list(s) for s in shapes], "dtypes": list(d), "providers": list(p),
               "timings": list(tm), "reps": r or reps} for op, shapes, d, p, tm, r in batches],
        shared_compiles=[list(k) for k in sorted(shared)],
        estimate_s=est["total_s"], reps=reps, quick=bool(quick), complete=False, launcher=launcher_status,
        call_windows=CALL_WINDOWS)
    if previous is not None:
        record["previous_record"] = {"file": previous.get("_file"), "date": previous.get("date"),
                                     "gpu": previous.get("gpu"), "limit": PREVIOUS_LIMIT}
    rows = record.pop("rows")
    name_tag = "quick-" + tag if quick and tag else tag
    path = None

    def snapshot(final: bool):
        # rows last, as in DESIGN.md section 5; saved after every shape so a run cut short
        # still leaves its measurements (marked "complete": false)
        nonlocal path
        record.pop("rows", None)
        record["complete"] = final
        now = dict(record, rows=rows)
        if previous is not None:
            record["vs_previous"] = [{"check": c, "passed": ok, "detail": d}
                                     for c, ok, d in previous_record_checks(now, previous)]
            now = dict(record, rows=rows)
        record["checks"] = [{"check": c, "passed": ok, "detail": d} for c, ok, d in summary_checks(now)]
        record["wall_s"] = round(time.perf_counter() - t0, 1)
        record["rows"] = rows
        if save:
            path = records.save_record(record, tag=name_tag, directory=out, replace=path)  # one file a run

    say(f"plan: {est['steps']} steps, {est['compiles']} compiles, estimated {est['total_s']:.0f} s (an estimate)")
    say("batch invariance (bit for bit at M = 1, 3, 64, 1000 against 4096) ...")
    record["batch_invariant"] = batch_invariance(Ns=INVARIANCE_N[:3] if quick else INVARIANCE_N)
    for op, shapes, dtypes, providers, timings, r_reps in batches:
        if "liger" in providers:
            try:
                _liger_rms_norm()
            except ProviderUnavailable as exc:
                record["providers_unavailable"]["liger"] = str(exc)
        providers = available(op, providers)
        say(f"{op}: {len(shapes)} shapes x {dtypes} x {providers}")
        for shape in shapes:
            r = run(op, [shape], dtypes, providers, timings=timings, reps=r_reps or reps, verbose=verbose,
                    shared_compiles=shared)
            rows += list(r)
            record["skipped"] += r.skipped
            snapshot(final=False)
    clear_shared_compiles()
    snapshot(final=True)
    if save:
        record["_path"] = str(path)
        say(f"saved {path} ({record['wall_s']} s; estimated {record['estimate_s']} s)")
    return record


def newest_record(tag: str = "fused", include_quick: bool = False) -> Optional[Dict]:
    """The newest committed record whose file name ends in ``-<tag>.json``, complete and with
    rows (``--quick`` records only if ``include_quick``); None if there is none."""
    recs = records.load_records(f"*-{tag}.json") if tag else records.load_records()
    recs = [r for r in recs if r.get("rows") and r.get("complete", True) and (include_quick or not r.get("quick"))]
    return recs[0] if recs else None
