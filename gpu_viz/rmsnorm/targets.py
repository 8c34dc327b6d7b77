"""The fused ops' performance targets, evaluated on a record (DESIGN.md section 5 format): the
share of the copy bandwidth, faster than each baseline, the launch floor, per call, batch
invariance, and no slower than the previous record.  Pure Python over the record's rows.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..measure import timing as bench
from .bench import DTYPES, unique_rows
from .dtypes import OPS, RMSNORM, RMSNORM_GATE
from .plan import CALL_SHAPES, LIGER_MAX_N, WIDE_SHAPES
from .providers import OPTIONAL_PROVIDERS, WIDE_PROVIDERS

#: Shapes where the fused ops must reach BANDWIDTH_TARGET of the copy bandwidth.
BANDWIDTH_SHAPES = ((16384, 4096), (32768, 8192))
BANDWIDTH_TARGET = 0.90
FLOOR_SHAPE = (128, 4096)
FLOOR_FACTOR = 1.5
#: Per call with a grad-requiring weight: within this factor of F.rms_norm's.
CALL_GRAD_FACTOR = 1.5
#: The fused kernel-only medians may be at most this much slower than the
#: previous committed record's at the shapes both measured, after normalising by a baseline
#: measured in both runs (:func:`previous_record_checks`).
PREVIOUS_LIMIT = 0.02


def _find(rows, **key):
    for r in rows:
        if all(r.get(k) == v for k, v in key.items()):
            return r
    return None


def _has_wide(record: Dict) -> bool:
    """A full record (``"quick": false``) or any record with rows at a :data:`WIDE_SHAPES` shape."""
    return record.get("quick") is False or any((r.get("M"), r.get("N")) in WIDE_SHAPES
                                               for r in record.get("rows", []))


def _us(v: float) -> str:
    return f"{v:,.0f} µs" if v >= 100 else f"{v:.2f} µs"


def summary_checks(record: Dict, timing: str = bench.KERNEL, previous: Optional[Dict] = None
                   ) -> List[Tuple[str, bool, str]]:
    """The fused ops' performance targets evaluated on ``record`` (DESIGN.md section 5 format).

    1. fused >= 90 % of ``copy_GBps`` at 16384x4096 and 32768x8192 in fp16 and bf16, and (a
       full record, or one with wide rows) at every :data:`WIDE_SHAPES` shape in fp16, bf16
       and fp32, both ops;
    2. fused faster than ``native`` and ``compile`` at every (op, shape, dtype) where fused
       was measured (a missing or excluded baseline fails the check: it was not shown);
    3. (a full record, or one with wide rows) at every wide (op, shape, dtype) the baselines
       of :data:`WIDE_PROVIDERS` beside fused: eager, native (rmsnorm) and compile required;
       Liger where it runs -- a Liger that refused the shape (N > 65536), failed or is not
       installed is named in the detail with its reason and not counted against the check;
    4. fused at 128x4096 within 1.5x of ``launch_floor_us`` (both the kernel timing);
    5. (per-call rows, where the record has them) fused no slower than ``native`` per call at
       :data:`CALL_SHAPES`, and ``fused_grad`` within :data:`CALL_GRAD_FACTOR` x ``native_grad``;
    6. (where the record has it) ``batch_invariant["ok"]``;
    7. the fused kernel times against ``previous`` (:func:`previous_record_checks`), or, with
       no ``previous``, the record's own ``vs_previous`` checks (made by :func:`full_record`
       in the same run).

    Returns a list of (check, passed, detail).  Rows of ``timing`` ("kernel") are used for 1-4.
    """
    every = unique_rows(record.get("rows", []))
    rows = [r for r in every if r.get("timing") == timing]
    skipped = record.get("skipped", [])
    wide = _has_wide(record)
    out = _bandwidth_checks(rows, record.get("copy_GBps"), wide) + _baseline_checks(rows, skipped)
    if wide:
        out += _wide_baseline_checks(record, rows, skipped)
    out += _floor_checks(record, rows) + _per_call_checks(every) + _invariance_check(record)
    if previous is not None:
        out += previous_record_checks(record, previous)
    else:
        out += [(c["check"], bool(c["passed"]), c["detail"]) for c in record.get("vs_previous", [])]
    return out


def _bandwidth_checks(rows: List[Dict], copy, wide: bool) -> List[Tuple[str, bool, str]]:
    """Check 1: fused >= BANDWIDTH_TARGET of the copy at BANDWIDTH_SHAPES (fp16, bf16) and, with
    wide rows, at every WIDE_SHAPES shape in every dtype, both ops."""
    out = []
    bw_points = [(s, d) for s in BANDWIDTH_SHAPES for d in ("float16", "bfloat16")]
    bw_points += [(s, d) for s in WIDE_SHAPES for d in DTYPES] if wide else []
    for op in OPS:
        for ((M, N), dt) in bw_points:
            name = f"{op} fused {M}x{N} {dt}: >= {BANDWIDTH_TARGET:.0%} of copy bandwidth"
            r = _find(rows, op=op, impl="fused", M=M, N=N, dtype=dt)
            if r is None or not copy:
                out.append((name, False, "not measured" if r is None else "no copy_GBps in the record"))
                continue
            share = r["GBps"] / copy
            out.append((name, share >= BANDWIDTH_TARGET,
                        f"{r['GBps']:,.0f} GB/s = {share:.1%} of copy {copy:,.0f} GB/s"))
    return out


def _baseline_checks(rows: List[Dict], skipped: List[Dict]) -> List[Tuple[str, bool, str]]:
    """Check 2: fused faster than native and compile (the gate: compile) wherever fused was
    measured; a missing baseline fails, with why it was skipped."""
    out = []
    baselines = {RMSNORM: ("native", "compile"), RMSNORM_GATE: ("compile",)}
    for r in rows:
        if r["impl"] != "fused":
            continue
        for b in baselines[r["op"]]:
            name = f"{r['op']} {r['M']}x{r['N']} {r['dtype']}: fused faster than {b}"
            br = _find(rows, op=r["op"], impl=b, M=r["M"], N=r["N"], dtype=r["dtype"])
            if br is None:
                why = _find(skipped, op=r["op"], impl=b, M=r["M"], N=r["N"], dtype=r["dtype"])
                out.append((name, False, f"{b} not measured" + (f": {why['reason'][:160]}" if why else "")))
                continue
            out.append((name, r["median_us"] < br["median_us"],
                        f"fused {r['median_us']:.2f} µs vs {b} {br['median_us']:.2f} µs "
                        f"({br['median_us'] / r['median_us']:.2f}x)"))
    return out


def _floor_checks(record: Dict, rows: List[Dict]) -> List[Tuple[str, bool, str]]:
    """Check 4: fused at FLOOR_SHAPE within FLOOR_FACTOR x the launch floor (with a bare copy
    kernel's time beside it, where the record has one)."""
    out = []
    floor = record.get("launch_floor_us")
    M, N = FLOOR_SHAPE
    for op in OPS:
        for dt in ("float16", "bfloat16"):
            name = f"{op} fused {M}x{N} {dt}: within {FLOOR_FACTOR}x of the launch floor"
            r = _find(rows, op=op, impl="fused", M=M, N=N, dtype=dt)
            if r is None or not floor:
                out.append((name, False, "not measured" if r is None else "no launch_floor_us in the record"))
                continue
            detail = f"{r['median_us']:.2f} µs = {r['median_us'] / floor:.2f}x the floor {floor:.2f} µs"
            bare = record.get("copy_kernel_floor_us")
            if bare:  # context: the least any kernel moving x -> y of this shape takes
                detail += (f"; a bare copy kernel moving the same x -> y bytes: {bare:.2f} µs = "
                           f"{bare / floor:.2f}x")
            out.append((name, r["median_us"] <= FLOOR_FACTOR * floor, detail))
    return out


def _per_call_checks(every: List[Dict]) -> List[Tuple[str, bool, str]]:
    """Check 5: rmsnorm per call at CALL_SHAPES, fused within 1x of native, fused_grad within
    CALL_GRAD_FACTOR x native_grad."""
    out = []
    calls = [r for r in every if r.get("timing") == bench.CALL and (r["M"], r["N"]) in CALL_SHAPES]
    for r in calls:
        if r["op"] != RMSNORM or r["impl"] not in ("fused", "fused_grad"):
            continue
        base, factor = ("native", 1.0) if r["impl"] == "fused" else ("native_grad", CALL_GRAD_FACTOR)
        name = f"rmsnorm {r['impl']} {r['M']}x{r['N']} {r['dtype']} per call: within {factor:g}x of {base}"
        br = _find(calls, op=RMSNORM, impl=base, M=r["M"], N=r["N"], dtype=r["dtype"])
        if br is None:
            out.append((name, False, f"{base} not measured"))
            continue
        out.append((name, r["median_us"] <= factor * br["median_us"],
                    f"{r['median_us']:.2f} µs vs {br['median_us']:.2f} µs ({r['median_us'] / br['median_us']:.2f}x)"))
    return out


def _invariance_check(record: Dict) -> List[Tuple[str, bool, str]]:
    """Check 6: the record's batch-invariance cases, where it has them."""
    inv = record.get("batch_invariant")
    if inv is None:
        return []
    bad = [c for c in inv.get("checked", []) if not c.get("ok")]
    return [("batch invariant: rows bit-identical at every M", bool(inv.get("ok")),
             f"{len(inv.get('checked', [])) - len(bad)} of {len(inv.get('checked', []))} cases"
             + (f"; failing: {bad[:3]}" if bad else ""))]


def _wide_baseline_checks(record: Dict, rows: List[Dict], skipped: List[Dict]) -> List[Tuple[str, bool, str]]:
    """Check 3 of :func:`summary_checks`: the baselines beside fused at each wide (op, shape, dtype).

    Required baselines (not optional) must have a kernel row; Liger (optional) is shown with its
    time, or with why it has none -- its refusal of N > :data:`LIGER_MAX_N` ("refuses N = ..."
    and its message), a failure, or not installed -- and never fails the check."""
    out = []
    unavailable = record.get("providers_unavailable", {})
    for op in OPS:
        required = [p for p in WIDE_PROVIDERS[op] if p not in OPTIONAL_PROVIDERS and p != "fused"]
        optional = [p for p in WIDE_PROVIDERS[op] if p in OPTIONAL_PROVIDERS]
        wanted = ", ".join(required) + "".join(f"; {p} where it runs" for p in optional)
        for (M, N) in WIDE_SHAPES:
            for dt in DTYPES:
                key = dict(op=op, M=M, N=N, dtype=dt)
                name = f"{op} {M}x{N} {dt}: baselines beside fused ({wanted})"
                parts, missing = [], []
                for p in ["fused"] + required + optional:
                    r = _find(rows, impl=p, **key)
                    if r is not None:
                        parts.append(f"{p} {_us(r['median_us'])}")
                        continue
                    why = _find(skipped, impl=p, **key)
                    reason = (why["reason"] if why else unavailable.get(p, "not measured"))[:160]
                    if p in OPTIONAL_PROVIDERS:  # shown with its reason, not counted against us
                        refuses = f"refuses N = {N} " if why is not None and N > LIGER_MAX_N else ""
                        parts.append(f"{p}: {refuses}({reason}); not counted")
                    else:
                        missing.append(p)
                        parts.append(f"{p} not measured ({reason})")
                out.append((name, not missing, "; ".join(parts)))
    return out


def _median(rows: List[Dict], timing: str = bench.KERNEL, **key) -> Optional[float]:
    r = _find([x for x in rows if x.get("timing") == timing], **key)
    return r["median_us"] if r else None


def previous_record_checks(record: Dict, previous: Dict, limit: float = PREVIOUS_LIMIT,
                           timing: str = bench.KERNEL) -> List[Tuple[str, bool, str]]:
    """The fused kernel-only medians of ``record`` against ``previous`` (an
    earlier record of the same GPU) at every (op, M, N, dtype) both measured; one check per
    (op, dtype) with such shapes, passed when no shape is more than ``limit`` (a fraction,
    default :data:`PREVIOUS_LIMIT` = 2 %) slower after normalisation.

    Normalisation: runs on the H200 drift by ~1 % (F.rms_norm moved -0.1..+1.2 % between two),
    so fused_now / fused_before is divided by the same ratio of a baseline measured in both
    runs: F.rms_norm's kernel median at the same (M, N, dtype) (the ``native`` rmsnorm row; the
    gate's shapes use it too), else the copy bandwidth (copy_before / copy_now).  The detail
    names the previous record and its date, the worst shape with its raw and normalised change
    and the baseline used, and every shape over the limit.

    Returns a list of (check, passed, detail); empty when the records share no fused shape.
    """
    out = []
    rows, prev_rows = unique_rows(record.get("rows", [])), unique_rows(previous.get("rows", []))
    where = f"{previous.get('_file') or 'the previous record'} ({previous.get('date', '?')})"
    copy_now, copy_prev = record.get("copy_GBps"), previous.get("copy_GBps")
    for op in OPS:
        for dt in DTYPES:
            cases = []
            for r in rows:
                if r.get("timing") != timing or r["impl"] != "fused" or r["op"] != op or r["dtype"] != dt:
                    continue
                key = dict(M=r["M"], N=r["N"], dtype=dt)
                before = _median(prev_rows, timing, op=op, impl="fused", **key)
                if not before:
                    continue
                n_now = _median(rows, timing, op=RMSNORM, impl="native", **key)
                n_prev = _median(prev_rows, timing, op=RMSNORM, impl="native", **key)
                if n_now and n_prev:
                    norm, by = n_now / n_prev, f"F.rms_norm {n_now:.2f} vs {n_prev:.2f} µs"
                elif copy_now and copy_prev:
                    norm, by = copy_prev / copy_now, f"copy {copy_now:,.0f} vs {copy_prev:,.0f} GB/s"
                else:
                    norm, by = 1.0, "no baseline in both runs: not normalised"
                raw = r["median_us"] / before
                cases.append((raw / norm, raw, r, before, by))
            if not cases:
                continue
            adj, raw, r, before, by = max(cases, key=lambda c: c[0])
            over = [c for c in cases if c[0] > 1 + limit]
            name = (f"{op} fused {dt}: kernel time at most {limit:.0%} slower than the last record "
                    f"at every shared shape")
            detail = (f"{len(cases)} shapes against {where}, normalised by F.rms_norm at the same shape "
                      f"measured in both runs (else by the copy bandwidth); worst {r['M']}x{r['N']}: "
                      f"{adj - 1:+.1%} (fused {r['median_us']:.2f} vs {before:.2f} µs, {raw - 1:+.1%}; {by})")
            if over:
                detail += "; over the limit: " + ", ".join(f"{c[2]['M']}x{c[2]['N']} {c[0] - 1:+.1%}"
                                                           for c in over[:6])
            out.append((name, not over, detail))
    return out
