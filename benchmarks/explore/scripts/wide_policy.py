#!/usr/bin/env python3
"""The wide-row policy (gpu_viz/rmsnorm/wide.py's POLICY tables) as the H200 explorations
proposed it: composed here from their records, written as one record, checked against the code.

    python benchmarks/explore/scripts/wide_policy.py check          # exit 1 where they differ
    python benchmarks/explore/scripts/wide_policy.py write [DIR]    # the record (default benchmarks/results)

How the runs compose (each later one over the earlier, in the order of RUNS):

* the persistent-mode run and the bigger-CTA run: their ``proposed_policy`` (per op, element size
  and bucket the shape with the least median summed over the dtypes of that size, every shape
  checked against float64 first);
* the ring runs, the occupancy runs, the late-gate run, the split2 run and the gate16 run: per
  (op, element size, N), the candidate (``ring:...`` rows) with the least summed median where it
  beat the policy's own kernel (``policy:...``) timed in the same run -- its shape, and for HYBRID
  its register chunks, weight distance, launch bound and gate read;
* the weight run: for every POLICY entry of mode SMEM or MBAR the weight-load variant with the
  least summed median (a: a chunk at a time, b: batched, c: with x, c2: c at the threads' bound).

The record (``<gpu>-<date>-wide-policy.json``, the date of the last run) holds the four tables and
the runs it came from; tests/test_rmsnorm_wide.py checks that the code's tables are the record's.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gpu_viz.rmsnorm import wide  # noqa: E402
from gpu_viz.rmsnorm.dtypes import DTYPES, OPS  # noqa: E402

EXPLORE = ROOT / "benchmarks" / "explore"
DTS = ("float32", "float16", "bfloat16")
#: The runs whose ``proposed_policy`` the policy starts from, in order.
PROPOSAL_RUNS = ("2026-12-02-wide-persistent/run1/persist-record.json",
                 "2026-12-03-wide-bigger-ctas/run1/persist-record.json")
#: The runs that timed candidates beside the policy's own kernel, in order.
CANDIDATE_RUNS = tuple(f"2026-12-02-wide-ring/run{i}/ring-record.json" for i in (1, 2, 3)) + tuple(
    f"2026-12-02-wide-occupancy/run{i}/ring-record.json" for i in (1, 2)) + (
    "2026-12-02-wide-late-gate/run1/ring-record.json", "2026-12-03-wide-split2/run2/ring-record.json",
    "2026-12-03-wide-gate16/run1/ring-record.json")
#: The run that timed the weight's loads of the shared-memory entries.
WEIGHT_RUN = "2026-12-02-wide-weight/run1/weight-record.json"
#: The ring modes those runs also timed (their kernels are retired: not in the policy).
RING_MODES = (7, 8)


def _load(rel: str) -> dict:
    rec = json.loads((EXPLORE / rel).read_text())
    assert rec["gpu"].startswith("NVIDIA H") and rec["sm"] == "sm_90" and not rec["failures"], rel
    return rec


def _parse_candidate(impl, op, size, n, configs):
    """(shape, (hreg, wdist, launch bound, gate read late)) of a candidate run's row name; None
    for a ring mode.  The second ring run's HYBRID rows predate hreg / wdist in the name (half the
    chunks in registers, the weight one chunk ahead), the ring runs' the bound in it: theirs is the
    one the record's ``configs`` holds for that row."""
    m = re.fullmatch(r"ring:(\d+)x(\d+)x(\d+)m(\d+)(?:r(\d+)|h(\d+)d(\d+)(g?)(?:b(\d+))?)?", impl)
    c, t, e, mode = (int(v) for v in m.group(1, 2, 3, 4))
    if mode in RING_MODES:
        return (c, t, e, mode), None
    chunks = e // (16 // size)
    hreg, wdist = (int(m.group(6)), int(m.group(7))) if m.group(6) else (chunks // 2, 1)
    late = m.group(8) == "g"
    if m.group(9):
        return (c, t, e, mode), (hreg, wdist, int(m.group(9)), late)
    bounds = {configs[f"{impl} {op} {dt} {n}"]["min_blocks"] for dt in DTS if DTYPES[dt][1] == size}
    assert len(bounds) == 1, (impl, bounds)
    return (c, t, e, mode), (hreg, wdist, bounds.pop(), late)


def _candidate_proposals():
    """Per (op, element size, N): the winning candidate's (shape, knobs) over the policy's kernel."""
    prop = {}
    for rel in CANDIDATE_RUNS:
        rec = _load(rel)
        assert not rec["skipped"], rel
        sums = {}
        for r in rec["rows"]:
            size = DTYPES[r["dtype"]][1]
            sums.setdefault((r["op"], size, r["N"]), {}).setdefault(r["impl"], []).append(r["median_us"])
        for (op, size, n), by in sums.items():
            ndt = len([d for d in DTS if DTYPES[d][1] == size])
            full = {impl: sum(v) for impl, v in by.items() if len(v) == ndt}
            cands = {impl: v for impl, v in full.items() if impl.startswith("ring:")}
            if not cands:
                continue
            best = min(cands, key=cands.get)
            policy = next(v for impl, v in full.items() if impl.startswith("policy:"))
            if cands[best] < policy:
                prop[(op, size, n)] = _parse_candidate(best, op, size, n, rec["configs"])
    return prop


def _weight_loads(policy):
    """POLICY_LOADS from the weight run, for ``policy``'s SMEM and MBAR entries."""
    rec = _load(WEIGHT_RUN)
    assert not rec["skipped"]
    loads = {op: {2: {}, 4: {}} for op in OPS}
    for op in OPS:
        for size, table in policy[op].items():
            for n, shape in table.items():
                if shape[3] not in wide.WLOAD_MODES:
                    continue
                dts = [d for d in DTS if DTYPES[d][1] == size]
                tag_shape = f"{shape[0]}x{shape[1]}x{shape[2]}m{shape[3]}"
                sums = {}
                for r in rec["rows"]:
                    tag, _, sh = r["impl"].partition(":")
                    if r["op"] == op and r["N"] == n and r["dtype"] in dts and sh == tag_shape and tag != "policy":
                        sums.setdefault(tag, []).append(r["median_us"])
                sums = {t: sum(v) for t, v in sums.items() if len(v) == len(dts)}
                assert set(sums) >= {"a", "b", "c"}, (op, size, n, sums)
                best = min(sums, key=sums.get)
                most = wide.sm_holds(shape[1], wide.smem_bytes_of(op, size, size, shape))
                choice = {"a": None, "b": (wide.WLOAD_BATCH, None), "c": (wide.WLOAD_EARLY, None),
                          "c2": (wide.WLOAD_EARLY, most)}[best]
                if choice is not None:
                    loads[op][size][n] = choice
    return {op: {s: t for s, t in by.items() if t} for op, by in loads.items()}


def compose() -> dict:
    """The four tables, as the runs propose them."""
    policy = {}
    for rel in PROPOSAL_RUNS:
        rec = _load(rel)
        assert rec["complete"], rel
        for op, by in rec["proposed_policy"].items():
            for size, t in by.items():
                for n, sh in t.items():
                    policy.setdefault(op, {}).setdefault(int(size), {})[int(n)] = tuple(sh)
    hybrid = {op: {2: {}, 4: {}} for op in OPS}
    late = {2: set(), 4: set()}
    for (op, size, n), (shape, knobs) in _candidate_proposals().items():
        assert knobs is not None, f"a ring kernel won at {op} {size} {n}: the ring modes are retired"
        policy[op][size][n] = shape
        hybrid[op][size][n] = knobs[:3]
        if knobs[3]:
            late[size].add(n)
    return {"policy": policy, "policy_loads": _weight_loads(policy), "policy_hybrid": hybrid,
            "policy_gate_late": {size: tuple(sorted(ns)) for size, ns in late.items()}}


def code_tables() -> dict:
    return {"policy": wide.POLICY, "policy_loads": wide.POLICY_LOADS, "policy_hybrid": wide.POLICY_HYBRID,
            "policy_gate_late": wide.POLICY_GATE_LATE}


def as_json(tables: dict) -> dict:
    """JSON's view of the tables (keys as strings, tuples as lists): what the record holds."""
    return json.loads(json.dumps(tables))


def record(tables: dict) -> dict:
    runs = PROPOSAL_RUNS + CANDIDATE_RUNS + (WEIGHT_RUN,)
    last = max((_load(r) for r in runs), key=lambda rec: rec["date"])  # the newest run names the record
    return {"date": last["date"], "gpu": last["gpu"], "sm": last["sm"], "driver": last.get("driver"),
            "cuda": last.get("cuda"), "torch": last.get("torch"), "cupy": last.get("cupy"),
            "what": "the wide-row path's policy (gpu_viz.rmsnorm.wide): per op, element size and row-length "
                    "bucket the fastest shape measured, composed from the runs below by "
                    "benchmarks/explore/scripts/wide_policy.py",
            "composed_from": [f"benchmarks/explore/{r}" for r in runs], **as_json(tables), "rows": []}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="the code's tables against the runs' proposals")
    w = sub.add_parser("write", help="write the record")
    w.add_argument("dir", nargs="?", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    tables = compose()
    if args.cmd == "check":
        ok = as_json(tables) == as_json(code_tables())
        print("the code's wide policy is the runs' proposal" if ok else
              f"differ:\n runs: {as_json(tables)}\n code: {as_json(code_tables())}")
        return 0 if ok else 1
    rec = record(tables)
    path = args.dir / f"{rec['gpu'].lower().replace(' ', '-')}-{rec['date']}-wide-policy.json"
    path.write_text(json.dumps(rec, indent=1) + "\n")
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
