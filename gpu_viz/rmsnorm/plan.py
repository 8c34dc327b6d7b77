"""What a benchmark record measures, and how long it takes: the shapes, the steps in order
(``gpu-viz bench --dry-run`` prints them) and the time model's estimate.  No GPU needed.
"""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

from ..measure import timing as bench
from .bench import DEFAULT_REPS, DTYPES, WIDE_CHECK_BYTES, dtype_name, fewest_bytes, post_check
from .dtypes import OPS, RMSNORM, RMSNORM_GATE
from .providers import CALL_PROVIDERS, PROVIDERS, WIDE_PROVIDERS, shared_compile_groups

#: The seed's four shapes (M, N) and its recorded H100 table (write-up 000, README at commit
#: d801038): fp16 rmsnorm_gate, "call"-like timing (events around a Python loop that
#: included output allocation), averaged over 100 (50 for the larger) calls.  NOT live.
SEED_SHAPES = ((128, 4096), (512, 4096), (1024, 4096), (1024, 8192))
SEED_H100 = {
    # the GPU is named once, by the column heading (gpu_viz.measure.records.SEED_H100)
    "source": ("the fused-gate write-up, quoting its README's run (80GB HBM3, PyTorch 2.4.0, "
               "CUDA 12.4, commit d801038); recorded by its author, not reproduced here"),
    "gpu": "NVIDIA H100 80GB HBM3",
    "rows": [  # (M, N, fused_us, eager_us, reported speedup)
        (128, 4096, 4.92, 55.72, 11.32),
        (512, 4096, 5.52, 87.37, 15.84),
        (1024, 4096, 8.54, 149.60, 17.52),
        (1024, 8192, 25.77, 294.51, 11.43),
    ],
}
#: The deck's own width: one block of 1024 threads on a row of 2048 numbers.
DECK_SHAPES = ((1, 2048), (4096, 2048))
#: Shapes of the full record: the seed's, then bandwidth-bound and small-N ones.
RECORD_SHAPES = SEED_SHAPES + ((4096, 4096), (16384, 4096), (32768, 8192), (1024, 768), (4096, 2048))
QUICK_SHAPES = ((128, 4096), (1024, 4096), (16384, 4096), (1024, 768))
#: The per-call rows' shapes: 1..1024 rows of 4096 features.
CALL_SHAPES = tuple((m, 4096) for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
#: Wide rows: ~1 GiB of fp16 traffic each.
WIDE_SHAPES = ((16384, 32768), (8192, 65536), (2048, 131072), (1024, 262144))
#: Timed samples per wide row.  Their spread is tight (the record nvidia-h200-2026-12-01-wide.json,
#: 30 replays: p10-p90 within ~1 % of the median at every shape) and each sample is ~0.5-10 ms, so 30
#: samples give the median to well under the 2 % the targets resolve, at a third of the time.
WIDE_REPS = 30
#: Batch invariance, checked in the record: rows of op(x[:m]) against op(x) bit for bit.
INVARIANCE_M = (1, 3, 64, 1000, 4096)
INVARIANCE_N = (768, 2048, 4096, 8192, 16384, 65536)


def record_plan(quick: bool = False) -> List[Tuple[str, List[Tuple[int, int]], Tuple[str, ...], Tuple[str, ...]]]:
    """What :func:`full_record` measures: (op, shapes, dtypes, providers) per step.

    Full: both ops over :data:`RECORD_SHAPES` in fp16 and bf16 (rmsnorm with deck4phase and,
    at the deck's shapes, too), rmsnorm in fp32 at 4096x4096.  Quick: :data:`QUICK_SHAPES`, fp16.
    """
    rms = ("eager", "native", "compile", "deck4phase", "fused", "liger")
    gate = PROVIDERS[RMSNORM_GATE]
    if quick:
        return [(RMSNORM, list(QUICK_SHAPES), ("float16",), rms),
                (RMSNORM_GATE, list(QUICK_SHAPES), ("float16",), gate)]
    deck_only = [s for s in DECK_SHAPES if s not in RECORD_SHAPES]
    return [(RMSNORM, list(RECORD_SHAPES) + deck_only, ("float16", "bfloat16"), rms),
            (RMSNORM, [(4096, 4096)], ("float32",), rms),
            (RMSNORM_GATE, list(RECORD_SHAPES), ("float16", "bfloat16"), gate)]


def call_plan() -> List[Tuple[str, List[Tuple[int, int]], Tuple[str, ...], Tuple[str, ...]]]:
    """The per-call rows (``"timing": "call"`` only): :data:`CALL_SHAPES` in fp16 and bf16,
    :data:`CALL_PROVIDERS`."""
    return [(op, list(CALL_SHAPES), ("float16", "bfloat16"), CALL_PROVIDERS[op]) for op in (RMSNORM, RMSNORM_GATE)]


def wide_plan() -> List[Tuple[str, List[Tuple[int, int]], Tuple[str, ...], Tuple[str, ...]]]:
    """The wide rows (both timings, :data:`WIDE_REPS` samples): :data:`WIDE_SHAPES` in fp16, bf16
    and fp32, every baseline of :data:`WIDE_PROVIDERS` at every (op, shape, dtype) -- eager,
    F.rms_norm (rmsnorm only: the gate has no native op), torch.compile (one compile per
    shape: no two wide shapes share N), and Liger where it runs."""
    return [(op, list(WIDE_SHAPES), DTYPES, WIDE_PROVIDERS[op]) for op in OPS]


#: Liger's RMSNorm launches one Triton block per row and refuses rows longer than this
#: ("exceeds the recommended Triton blocksize = 65536", in every fused record's skipped rows).
LIGER_MAX_N = 65536


def record_batches(quick: bool = False) -> List[Tuple]:
    """What :func:`full_record` runs, in order: ``(op, shapes, dtypes, providers, timings, reps)``
    per batch -- :func:`record_plan` (both timings), :func:`call_plan` ("call" only), then
    (not ``quick``) :func:`wide_plan` (both timings, :data:`WIDE_REPS`).  ``reps`` None means
    the run's ``--reps``."""
    both = (bench.KERNEL, bench.CALL)
    out = [(op, sh, d, p, both, None) for op, sh, d, p in record_plan(quick)]
    # the per-call batch leaves out what the record plan already timed per call (128, 512 and
    # 1024 x 4096 for native and fused): one row per key, those pairs timed in one batch
    timed = {(op, M, N, dtype_name(dt), p) for op, sh, d, ps in record_plan(quick)
             for (M, N) in sh for dt in d for p in ps}
    for op, sh, d, ps in call_plan():
        by_providers: Dict[Tuple[str, ...], List[Tuple[int, int]]] = {}
        for (M, N) in sh:
            left = tuple(p for p in ps if not all((op, M, N, dtype_name(dt), p) in timed for dt in d))
            if left:
                by_providers.setdefault(left, []).append((M, N))
        out += [(op, shapes, d, left, (bench.CALL,), None) for left, shapes in by_providers.items()]
    if not quick:
        out += [(op, sh, d, p, both, WIDE_REPS) for op, sh, d, p in wide_plan()]
    return out


def plan_steps(quick: bool = False, reps: int = DEFAULT_REPS, batches=None) -> List[Dict]:
    """Every (op, shape, dtype, provider) step :func:`full_record` takes, in order, as dicts:
    ``op, M, N, dtype, provider, timings, reps, compile`` (None, ``"per shape"``,
    ``"dynamic M: compiles"`` or ``"dynamic M: reuses"``, see :func:`shared_compile_groups`),
    ``note`` (e.g. Liger's refusal of N > :data:`LIGER_MAX_N`, expected) and ``est_s`` (the
    estimated seconds, :func:`estimate_step`).  ``batches`` defaults to :func:`record_batches`.
    No GPU needed (``gpu-viz bench --dry-run`` prints it)."""
    batches = record_batches(quick) if batches is None else batches
    steps = []
    for op, shapes, dtypes, providers, timings, r in batches:
        for (M, N) in shapes:
            for dt in dtypes:
                for p in providers:
                    steps.append({"op": op, "M": M, "N": N, "dtype": dtype_name(dt), "provider": p,
                                  "timings": tuple(timings), "reps": r or reps, "compile": None, "note": ""})
    groups = shared_compile_groups(steps)
    seen = set()
    for st in steps:
        key = (st["op"], st["N"], st["dtype"])
        if st["provider"] == "compile":
            if st["M"] >= 2 and key in groups:
                st["compile"] = "dynamic M: reuses" if key in seen else "dynamic M: compiles"
                seen.add(key)
            else:
                st["compile"] = "per shape"
        if st["provider"] == "liger" and st["N"] > LIGER_MAX_N:
            st["note"] = f"Liger refuses N > {LIGER_MAX_N} (expected: shown as skipped, not counted)"
        st["est_s"] = estimate_step(st)
    return steps


#: The time model of :func:`estimate_step`, seconds (an estimate).  Source: a least-squares fit of
#: ``compile`` and ``wide_check`` to two full H200 bench runs' wall times (benchmarks/NOTES.md,
#: "Time."), the rest set by hand; every committed fused record of this plan
#: took at most its ``estimate_s`` + 10 % (tests/test_rmsnorm_bench_plan.py).  A compile at 1.8 s
#: is less than the 5-10 s quoted for a cold compile; with 5 s the full plan would estimate
#: 530 s, with 7 s 615 s: watch ``estimate_s`` against ``wall_s``.
#: ``compile``: one torch.compile (dynamo + inductor + Triton, small graphs); ``step``: a
#: provider at a shape that fits in a few hundred MB (setup, two float64 checks, timing);
#: ``wide_inputs``: making the input sets of a 1-2 GiB shape; ``wide_check``: one float64
#: check of a 1-2 GiB output (128-256 blocks of rows, the first use of its kernels);
#: ``gc``: one ``gc.collect()`` with torch.compile's objects alive (0.21 s on a 2-CPU VM
#: with 450k objects; faster on the H200 host); ``setup``: copy bandwidth, launch floor,
#: kernel report; ``invariance``: :func:`batch_invariance` (54 cases).
EST_S = {"compile": 1.8, "step": 0.07, "wide_inputs": 0.5, "wide_check": 1.2, "gc": 0.06,
         "setup": 12.0, "invariance": 15.0}
#: Copy bandwidth the estimate assumes for timing wide rows (the H200's, GB/s) and the share of
#: it each provider reaches: the single-kernel ones ~85 %, eager's several passes over fp32
#: temporaries counted by their bytes (:func:`gpu_viz.rmsnorm.eager.eager_traffic`; the gate's
#: 13 kernels ~13x the fewest bytes in 16-bit, ~5.5x in fp32).
EST_COPY_GBPS = 4250.0
#: A shape whose fewest bytes exceed this is timed as "wide" by the estimate.
EST_WIDE_BYTES = WIDE_CHECK_BYTES


def _est_call_us(op: str, M: int, N: int, dtype: str, provider: str) -> float:
    """Estimated kernel time of one call (µs) for the time model: bytes over ~85 % of copy."""
    nbytes = fewest_bytes(op, M, N, dtype)
    if provider == "eager":
        if op == RMSNORM:
            from .eager import eager_traffic
            nbytes = sum(r + w for _, r, w in eager_traffic(M, N, dtype))
        else:
            nbytes *= 5.5 if dtype == "float32" else 13.0
    return nbytes / (0.85 * EST_COPY_GBPS * 1e3)


def estimate_step(step: Dict, gc_per_check: bool = False) -> float:
    """Estimated seconds of one :func:`plan_steps` step on an H200 (:data:`EST_S`; an estimate,
    not a measurement).  A compile that reuses a shared graph costs nothing; Liger at a row it
    refuses costs one failed call.  ``gc_per_check``: count the bench as the older records
    ran it (for the calibration against them): a ``gc.collect()`` after every
    check and every output checked again after timing."""
    op, M, N, dt, p = step["op"], step["M"], step["N"], step["dtype"], step["provider"]
    wide = fewest_bytes(op, M, N, dt) > EST_WIDE_BYTES
    if step.get("note") and p == "liger":
        return EST_S["step"]
    t = EST_S["compile"] if step.get("compile") in ("per shape", "dynamic M: compiles") else 0.0
    t += EST_S["gc"] * (2 if gc_per_check else 1)
    if wide:
        t += EST_S["wide_check"] * (2 if gc_per_check or post_check(p, op, M, N, dt) else 1)
        us = _est_call_us(op, M, N, dt, p)
        calls = 0
        for timing in step["timings"]:
            # kernel: a 3-replay pilot then reps replays of ~1 ms (at least one call); call: reps calls
            calls += (3 + step["reps"] * max(1, math.ceil(1000.0 / us))) if timing == bench.KERNEL else step["reps"]
        t += calls * us * 1e-6
    else:
        t += EST_S["step"]
    return t


def estimate(steps: Sequence[Dict], invariance: bool = True, gc_per_check: bool = False) -> Dict:
    """The estimated wall time of a :func:`full_record` run of ``steps`` (:func:`plan_steps`), s:
    ``{"total_s", "compiles", "steps", "by_part": {"setup", "invariance", "record", "call",
    "wide"}}`` -- an estimate from :data:`EST_S`, to be replaced by the run's ``wall_s``.
    Per (op, shape, dtype) of a wide shape it adds the inputs' making and (the checks run
    back to back) one collection; ``gc_per_check`` as in :func:`estimate_step`."""
    by = {"setup": EST_S["setup"], "invariance": EST_S["invariance"] if invariance else 0.0,
          "record": 0.0, "call": 0.0, "wide": 0.0}
    seen = set()
    for st in steps:
        wide = fewest_bytes(st["op"], st["M"], st["N"], st["dtype"]) > EST_WIDE_BYTES
        part = "wide" if wide else ("call" if tuple(st["timings"]) == (bench.CALL,) else "record")
        key = (st["op"], st["M"], st["N"], st["dtype"], st["timings"])
        if key not in seen:
            seen.add(key)
            if wide:
                by["wide"] += EST_S["wide_inputs"]
            if not gc_per_check:
                by[part] += EST_S["gc"]  # the one collection after the checks
        by[part] += estimate_step(st, gc_per_check)
    compiles = sum(st.get("compile") in ("per shape", "dynamic M: compiles") for st in steps)
    return {"total_s": round(sum(by.values()), 1), "compiles": compiles, "steps": len(steps),
            "by_part": {k: round(v, 1) for k, v in by.items()}}


def plan_text(quick: bool = False, reps: int = DEFAULT_REPS) -> str:
    """``gpu-viz bench --dry-run``: every step of :func:`plan_steps` (op, M x N, dtype,
    provider, timings, reps, compile, note, estimated s) and the estimated total (marked as
    an estimate).  No GPU needed."""
    steps = plan_steps(quick, reps)
    est = estimate(steps)
    head = (f"The steps `gpu-viz bench{' --quick' if quick else ''}` takes on a GPU; nothing is measured here. "
            f"{est['steps']} steps, estimated {est['total_s']:.0f} s on an H200 (an estimate, not a measurement).")
    lines = [head, "", f"{'op':12s} {'M x N':>13s} {'dtype':8s} {'provider':15s} {'timings':11s} {'reps':>4s} "
             f"{'est s':>6s}  compile / note"]
    for st in steps:
        extra = "; ".join(x for x in (st["compile"] and f"torch.compile {st['compile']}", st["note"]) if x)
        lines.append(f"{st['op']:12s} {str(st['M']) + 'x' + str(st['N']):>13s} {st['dtype']:8s} "
                     f"{st['provider']:15s} {'+'.join(st['timings']):11s} {st['reps']:>4d} {st['est_s']:6.2f}  {extra}")
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in est["by_part"].items())
    lines += ["", f"{est['steps']} steps, {est['compiles']} torch.compile compiles; estimated {est['total_s']:.0f} s "
              f"on an H200 ({parts}) -- an estimate from bench.EST_S, not a measurement"]
    return "\n".join(lines)
