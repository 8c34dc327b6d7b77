"""Bug class: a record whose numbers cannot be (a zero SM count, a negative bandwidth, an infinite
time, a string for a count) passed the schema, then a lesson divided by it (ZeroDivisionError in
kernel_scheduling.waves and latency_hiding.little) or graded against it (a negative copy bandwidth
made a negative time "right").

Every number :data:`records.VALUE_SCHEMAS` and :data:`records.COMMON_VALUES` list is corrupted in
turn, in a record of its kind: the record is skipped with a reason naming the field (with its row)
and its value; a zero where zero is allowed and a null where null is allowed still pass.  With a
bad record newest beside the committed ones, every numeric exercise and every text that reads a
record gives the older record's numbers, and nothing raises.
"""
import json
import math
import os
import re

import pytest

from gpu_viz import backend
from gpu_viz.measure import records

COMMITTED = records.results_dir()
GPU = {"gpu": "NVIDIA H200", "sm": "sm_90", "driver": "580.1", "cuda": "13.2", "cupy": "14.2.0", "torch": None}

#: Records of the kinds no GPU run has committed yet, in the shape their makers write
#: (gpu_viz/claims/memory_access.py record / record_counters, gpu_viz/claims/hit_rates.py record).
SYNTHETIC = {
    "memory-access": dict(GPU, failed=[], copy_GBps=4200.0, rows=[
        {"op": "coalescing", "impl": "copy_coalesced", "pattern": "coalesced", "width": 4, "loads": 1 << 24,
         "timing": "kernel", "median_us": 40.0, "p10_us": 39.5, "p90_us": 40.5, "bytes": 1 << 27, "GBps": 3355.4,
         "copy_GBps": 4200.0},
        {"op": "reduction_ladder", "impl": "reduce_shuffle", "rung": "shuffle", "n": 1 << 25, "block": 256,
         "grid": 1024, "timing": "kernel", "median_us": 45.0, "p10_us": 44.0, "p90_us": 46.0, "GBps": 2982.6,
         "copy_GBps": 4200.0, "checked": "equal to float64 (integer inputs)"},
        {"op": "recorded_addresses", "impl": "copy_coalesced", "case": "coalesced", "timing": "none",
         "gpu": {"requests": 128, "sectors": 512}, "emulated": {"requests": 128, "sectors": 512}, "equal": True},
        {"op": "race_runs", "impl": "histogram_racy", "timing": "none", "runs": 3, "grid": 4, "block": 128,
         "nbins": 256, "n": 2048, "what": "counts lost", "outcomes": [0, 5, 7], "right": 1}]),
    "memory-counters": dict(GPU, counters="read", reason="", tool="ncu", metrics=["m"], rows=[
        {"op": "ncu_counters", "impl": "copy_coalesced", "case": "coalesced", "timing": "ncu",
         "ncu": {"m": 512}, "emulated": {"m": 512}, "equal": True}]),
    "hit-rates": dict(GPU, tool="ncu", metrics=["m"], rows=[
        {"op": "hit_rate", "impl": "rownorm_reread", "level": "beyond L2", "M": 4096, "N": 4096, "timing": "ncu",
         "l1_hit_pct": 0.0, "l2_hit_pct": 12.5}]),
    # an untagged record: only COMMON_VALUES applies
    "t": dict(GPU, rows=[{"op": "x", "median_us": 2.0, "p10_us": 1.0, "p90_us": 3.0, "GBps": 10.0,
                          "copy_GBps": 20.0, "reps": 5}]),
}
_BASES = {}


def _base(tag):
    """A sound record of ``tag``: the newest committed one, else :data:`SYNTHETIC`'s (dated 2026-12-01)."""
    if tag not in _BASES:
        paths = sorted(COMMITTED.glob(f"*-{tag}.json"), key=lambda p: records._name_order(p.name))
        if paths:
            _BASES[tag] = (paths[-1].name, json.loads(paths[-1].read_text(encoding="utf-8")))
        else:
            _BASES[tag] = (f"nvidia-h200-2026-12-01-{tag}.json", dict(SYNTHETIC[tag], date="2026-12-01"))
    return _BASES[tag]


def _first(obj, path):
    """``(where, container, key)`` of the first value at ``path`` ("a[].b", "a.*", "a[]") in ``obj``,
    walked here independently of records.py; None when the record has none."""
    steps = path.replace("[]", ".[]").split(".")

    def walk(node, steps, where):
        if not steps:
            return where
        step, rest = steps[0], steps[1:]
        if step == "[]":
            items = enumerate(node) if isinstance(node, list) else ()
            fmt = "{where}[{k}]"
        else:
            items = (node.items() if step == "*" else [(step, node[step])] if step in node else []) \
                if isinstance(node, dict) else ()
            fmt = "{where}.{k}" if where else "{k}"
        for k, child in items:
            if not rest:
                return fmt.format(where=where, k=k), node, k
            got = walk(child, rest, fmt.format(where=where, k=k))
            if got:
                return got
        return None

    return walk(obj, [s for s in steps if s], "")


def _kind(value):
    return {None: "null", True: "the boolean true"}.get(value) if value is None or value is True else (
        f"the string {value!r}" if isinstance(value, str) else f"the number {value!r}")


CASES = [(tag, path) for tag, rules in records.VALUE_SCHEMAS.items() for path in rules] + \
        [("t", path) for path in records.COMMON_VALUES]


def test_the_catalogue_covers_every_kind_the_course_reads():
    """Each tag the lessons show (LESSON_RECORDS) whose records hold numbers has a value schema."""
    shown = {t for tags in records.LESSON_RECORDS.values() for t in tags} - {"exercises"}
    assert shown <= set(records.VALUE_SCHEMAS), shown - set(records.VALUE_SCHEMAS)


@pytest.mark.parametrize("tag,path", CASES, ids=[f"{t}:{p}" for t, p in CASES])
def test_each_impossible_number_is_named_by_field_and_value(tag, path):
    name, rec = _base(tag)
    assert records.problem(rec, name) is None, "the sound record must pass"
    found = _first(rec, path)
    assert found, f"the {tag} record {name} has no {path}: the catalogue cannot corrupt it"
    where, holder, key = found
    rule = {**records.COMMON_VALUES, **records.VALUE_SCHEMAS.get(tag, {})}[path]
    positive = rule.startswith(records.POSITIVE)
    bad = [-1, -0.5, math.nan, math.inf, -math.inf, "12", True] + ([0] if positive else [])
    good = ([None] if rule.endswith("|null") else []) + ([0] if not positive else []) + [7]
    if not rule.endswith("|null"):
        bad.append(None)
    was = holder[key]
    try:
        for value in bad:
            holder[key] = value
            why = records.problem(rec, name)
            assert why and why.startswith(f"{where} is {_kind(value)}"), (value, why)
        for value in good:
            holder[key] = value
            assert records.problem(rec, name) is None, value
    finally:
        holder[key] = was


def test_device_of_refuses_a_device_with_no_sms():
    _name, rec = _base("hardware")
    bad = dict(rec, device=dict(rec["device"], sm_count=0))
    with pytest.raises(ValueError, match=r"device\.sm_count is the number 0, expected a finite number > 0"):
        records.device_of(bad)
    assert records.device_of(rec).sm_count == rec["device"]["sm_count"]


# ---------------------------------------------------------------------- a bad record newest, end to end
def _today_name(tag):
    return f"nvidia-h200-{backend.today()}.9-{tag}.json"


def _corrupt(tag, value):
    """A copy of ``tag``'s sound record, dated today (newest), its first number ``value`` (-5 where
    the field may be zero and ``value`` is 0); (file name, record, "<where> is <value>")."""
    _name, rec = _base(tag)
    rec = json.loads(json.dumps(rec))
    rules = {**records.COMMON_VALUES, **records.VALUE_SCHEMAS.get(tag, {})}
    path = next(p for p in rules if _first(rec, p))
    if value == 0 and not rules[path].startswith(records.POSITIVE):
        value = -5
    where, holder, key = _first(rec, path)
    holder[key] = value
    rec["date"] = backend.today()
    return _today_name(tag), rec, f"{where} is {_kind(value)}"


def _course_dir(tmp_path, bad=()):
    """The committed records (linked), the synthetic ones of the kinds not committed, and ``bad``."""
    tmp_path.mkdir(exist_ok=True)
    for p in COMMITTED.glob("*.json"):
        os.symlink(p, tmp_path / p.name)
    for tag in ("memory-access", "memory-counters", "hit-rates"):
        name, rec = _base(tag)
        (tmp_path / name).write_text(json.dumps(rec), encoding="utf-8")
    for name, rec in bad:
        (tmp_path / name).write_text(json.dumps(rec, allow_nan=True), encoding="utf-8")
    return tmp_path


def _everything():
    """Every numeric exercise's facts and verdicts, and every text that reads a record: what a
    CPU-mode learner sees (numbers only for the facts: a label may add which newer record was skipped)."""
    import gpu_viz.exercises as ex
    from gpu_viz.claims import memory_access as ma
    from gpu_viz.claims import text
    from gpu_viz.measure import facts

    seen = {}
    for e in ex.exercises():
        if e.kind == "write-the-kernel":
            continue
        g = ex.given(e.id)
        seen[e.id] = {k: v for k, v in g.items() if isinstance(v, (int, float))}
        for answer in (1, 2, 100, 0.5, -3):
            seen[(e.id, answer)] = ex.check(e.id, answer).ok
    for fn in ("shuffle_step", "doubling_point", "fp16_load", "warp_order", "data_residency", "decoder_step",
               "l2_bandwidth", "latency_hiding", "block_cap", "deck_littles_law", "constant_and_l1", "three_forces"):
        seen[fn] = getattr(text, fn)()
    for fn in ("race_record_section", "addresses_section", "counters_section", "shuffle_section"):
        seen[fn] = getattr(ma, fn)()
    seen["bandwidth_section"] = ma.bandwidth_section(counts=[])
    seen["ladder_timing_section"] = ma.ladder_timing_section(counts=[])
    seen["copy"], seen["dram"] = facts.copy_GBps()["copy_GBps"], facts.dram_latency()["latency_ns"]
    seen["device"] = records.lesson_device()[0].sm_count
    return seen


@pytest.mark.parametrize("value", [0, -5, "12", math.inf])
def test_with_a_bad_record_newest_of_every_kind_the_course_shows_the_older_ones(tmp_path, monkeypatch, value):
    """The tester's case and its class: a newest record of each kind with an impossible number
    (the hardware one: sm_count 0 and copy_GBps -5).  Each is skipped, naming the field and value;
    the readers fall back to the older record, and its label says which newer one was skipped and
    why; every exercise and text gives the numbers it gives without the bad records, and nothing
    raises."""
    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    clean = _course_dir(tmp_path / "clean")
    monkeypatch.setattr(records, "results_dir", lambda: clean)
    want = _everything()

    bad = {tag: _corrupt(tag, value) for tag in records.VALUE_SCHEMAS}
    name, hw, said = bad["hardware"]
    assert said.startswith("device.sm_count is ")
    hw["copy_GBps"] = -5
    broken = _course_dir(tmp_path / "broken", [(n, r) for n, r, _said in bad.values()])
    monkeypatch.setattr(records, "results_dir", lambda: broken)
    for tag, (name, _rec, said) in bad.items():
        rec = records.newest(f"*-{tag}.json")
        assert rec is not None and rec["_file"] != name, tag
        assert f"the newer record {name} was skipped ({said}" in records.label(rec), (tag, records.label(rec))
    got = _everything()
    assert got["whole_chip.time"]["copy_GBps"] > 0
    # the same numbers and words; a label (the "Data: ..." line, a label elsewhere) now says
    # which newer record was skipped, and why
    note = re.compile(r"; the newer record \S+ was skipped \([^()]*\)")
    assert any(note.search(v) for v in got.values() if isinstance(v, str))

    def same(v):
        return re.sub(r"Data: [^\n]*", "Data: ...", note.sub("", v)) if isinstance(v, str) else v

    assert [(k, got[k]) for k in want if same(got[k]) != same(want[k])] == []
