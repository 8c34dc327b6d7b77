"""GPU records: one JSON file per run (DESIGN.md section 5), named ``<gpu-slug>-<date>[-tag].json``.

* :func:`environment`, :func:`new_record`, :func:`save_record` -- write a record of this run
  (date, GPU, sm, driver, CUDA, torch, CuPy) into a folder the caller names.
* :func:`results_dir`, :func:`load_records`, :func:`newest` -- the committed records the
  notebooks show in CPU mode: ``benchmarks/results/`` of a source checkout, or the copy the
  wheel ships (``gpu_viz/_results``), so an installed package (Colab) finds them too.
* :func:`problem` -- a record checked against :data:`RECORD_SCHEMA` and :data:`TAG_SCHEMAS`, and
  its numbers against :data:`VALUE_SCHEMAS` (which must be above zero, which may be zero).  A
  file that is not a usable record (unreadable, not JSON, not an object, dated in the future, no
  GPU, a hardware record whose ``device`` lacks a field, an SM count of 0, a negative bandwidth,
  ...) is left out and said aloud: once on
  stderr, by file and reason (:func:`skipped_records`), and in the label of the older record
  shown in its place (:func:`label`), so a stale number never passes for the newest one.
* :func:`gpu_tests`, :func:`test_outcome` -- what the newest committed GPU test run says of a test.
* :func:`label` -- the provenance of a record: "recorded on <GPU>, <date>, driver <v> (not live)".
* :func:`lesson_device` -- the ONE GPU a lesson's figures describe: this GPU live, else the GPU of
  the committed hardware record (:func:`recorded_hardware`, :func:`device_of`), else the deck's
  L4 spec sheet; with its label.
* :data:`LESSON_RECORDS`, :func:`lesson_records` -- which committed records each notebook shows in
  CPU mode (the notebook tests check that each one's label appears).
* :data:`DECK_L4`, :data:`REFERENCE_LABELS`, :func:`gpus_named` -- the one-GPU-per-figure rule: a
  figure or table with measured numbers names one GPU; another GPU's numbers (the deck's L4 spec
  sheet, the write-up's H100) appear only in a separate column or panel headed by one of
  :data:`REFERENCE_LABELS`.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import backend
from ..data import course_dir
from . import record_names

def results_dir() -> Path:
    """Where the committed records are: ``<repo>/benchmarks/results`` in a source checkout (an
    editable install), else ``gpu_viz/_results`` inside the installed wheel."""
    return course_dir("benchmarks/results", "_results")


def _driver_version() -> str:
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, encoding="utf-8", errors="replace",
                                 timeout=20).stdout.strip().splitlines()
            if out:
                return out[0].strip()
        except Exception:
            pass
    v = backend.driver_cuda_version(backend.require_cupy("reading the driver version")) or 0
    return f"CUDA driver API {v // 1000}.{(v % 1000) // 10}"


def environment() -> Dict:
    """Date, GPU, sm, driver, CUDA runtime, torch and CuPy versions of this run (GPU mode only)."""
    b = backend.require_gpu("a GPU record")
    cupy = backend.require_cupy("a GPU record")
    rv = cupy.cuda.runtime.runtimeGetVersion()
    env = {"date": backend.today(), "gpu": b.device_name, "sm": b.sm, "driver": _driver_version(),
           "cuda": f"{rv // 1000}.{(rv % 1000) // 10}", "cupy": cupy.__version__,
           "python": platform.python_version()}
    try:
        import torch
        env["torch"] = torch.__version__
    except ImportError:
        env["torch"] = None
    return env


def gpu_slug(name: str) -> str:
    """``"NVIDIA H200"`` -> ``"nvidia-h200"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def new_record(rows: List[Dict], **extra) -> Dict:
    """A record in DESIGN.md section 5's format: :func:`environment` + ``extra`` + ``rows``."""
    rec = environment()
    rec.update(extra)
    rec["rows"] = rows
    return rec


def save_record(record: Dict, tag: str = "", directory: Optional[Path] = None,
                replace: Optional[Path] = None) -> Path:
    """Write ``record`` to ``<directory>/<gpu-slug>-<date>[-tag].json`` and return the path.

    ``directory``: default the current folder (never the installed package); the course's
    committed records live in ``benchmarks/results/`` (pass it to add one there).  A record never
    replaces another: a second one of the same GPU, date and tag is ``<gpu-slug>-<date>.2[-tag].json``
    (then ``.3``, ...), and :func:`load_records` orders it after the first.  ``replace``: the path
    an earlier save of this same record returned (a run that saves as it goes, e.g.
    :func:`gpu_viz.rmsnorm.bench_record.full_record` after every shape): rewritten in place.

    The file is written whole: beside its name, then renamed, so a full disk or a kill mid-write
    never leaves a truncated record (that would be skipped, or an earlier save of a run lost).

    Raises:
        OSError: the folder cannot be written (no record file is left behind).
    """
    path = Path(replace) if replace is not None else _new_path(record, tag, directory)
    data = (json.dumps(record, indent=1, sort_keys=False) + "\n").encode("utf-8")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return path


def _new_path(record: Dict, tag: str, directory: Optional[Path]) -> Path:
    """The first free ``<gpu-slug>-<date>[.N][-tag].json`` in ``directory`` (made if missing)."""
    directory = Path(directory) if directory else Path.cwd()
    directory.mkdir(parents=True, exist_ok=True)
    for seq in range(1, 10_000):
        day = record["date"] if seq == 1 else f"{record['date']}.{seq}"
        path = directory / f"{gpu_slug(record['gpu'])}-{day}{'-' + tag if tag else ''}.json"
        if not path.exists():
            return path
    raise FileExistsError(f"9999 records of {record['gpu']} on {record['date']} tagged {tag!r} in {directory}")


#: A record's file name: ``<gpu-slug>-<YYYY-MM-DD>[.N][-tag].json``.
_NAME = re.compile(r"-(\d{4}-\d{2}-\d{2})(?:\.(\d+))?(?:-(.+))?\.json$")
_sequence = record_names.sequence


def _order(rec: Dict):
    """Newest first: the record's date, then its sequence number on that date (the ``.N`` of
    :func:`save_record`'s file name; 1 without one)."""
    return rec.get("date", ""), record_names.sequence(rec.get("_file", ""))


def _name_order(name: str):
    """The order of a record by its file name alone (for a file that could not be used):
    ``(date, sequence)``, or None when the name carries no date."""
    m = _NAME.search(name)
    return (m.group(1), int(m.group(2) or 1)) if m else None


# -- the schema ------------------------------------------------------------------------------------
#: What every record holds (DESIGN.md section 5): key -> (kind, required).  Kinds: "date" (an ISO
#: date, not after today), "name" (a non-empty string), "text" (a string), "number" (int or float,
#: finite, not bool), "count" (an int >= 0), "object", "list", "list of objects", "device" (a
#: hardware record's :data:`DEVICE_SCHEMA`), "compute capability" ([major, minor]); "|null": or null.
RECORD_SCHEMA: Dict[str, Tuple[str, bool]] = {
    "date": ("date", True), "gpu": ("name", True), "sm": ("text", False), "driver": ("text|null", False),
    "cuda": ("text|null", False), "torch": ("text|null", False), "cupy": ("text|null", False),
    "rows": ("list of objects", False),
}
#: What a record of a tag (the ``-<tag>.json`` of its file name, or the tag's last word) holds
#: besides: the keys its readers (notebooks, figures, ``gpu-viz bench``) use without a fallback.
TAG_SCHEMAS: Dict[str, Dict[str, Tuple[str, bool]]] = {
    "hardware": {"device": ("device", True), "latency": ("list of objects", True),
                 "dram_latency": ("object", True), "bandwidth_vs_size": ("list of objects", True),
                 "occupancy_sweep": ("list of objects", True), "host_bandwidth": ("object", True),
                 "copy_GBps": ("number", True)},
    "fused": {"rows": ("list of objects", True), "copy_GBps": ("number", True),
              "launch_floor_us": ("number", True), "checks": ("list of objects", False),
              "skipped": ("list", False)},
    "divergence": {"rows": ("list of objects", True), "divergence_ratio": ("number", True)},
    "scheduling": {"rows": ("list of objects", True), "scheduling": ("object", True)},
    "decoder": {"rows": ("list of objects", True)},
    "probes": {"rows": ("list of objects", True)},
    "memory-access": {"rows": ("list of objects", True), "failed": ("list", False)},
    "memory-counters": {"rows": ("list of objects", True), "counters": ("name", True), "reason": ("text", False)},
}
#: A tool's report (no GPU in it: ``"tool": "ptxas"``, the compiler's register and spill report
#: of the fused kernels): its own fields instead of :data:`RECORD_SCHEMA`'s GPU and versions.
TOOL_SCHEMAS: Dict[str, Dict[str, Tuple[str, bool]]] = {
    "ptxas": {"date": ("date", True), "nvcc": ("name", True), "arches": ("list", True), "sources": ("list", True),
              "source_digest": ("name", True), "fused": ("object", True)},
}
#: A hardware record's ``device``: the :class:`gpu_viz.device.DeviceInfo` fields it carries.
DEVICE_SCHEMA: Dict[str, Tuple[str, bool]] = {
    "name": ("name", True), "compute_capability": ("compute capability", True), "sm_count": ("count", True),
    "fp32_cores_per_sm": ("count|null", True), "max_threads_per_block": ("count", True),
    "max_threads_per_sm": ("count", True), "max_blocks_per_sm": ("count", True), "warp_size": ("count", True),
    "regs_per_sm": ("count", True), "regs_per_block": ("count", True), "smem_per_sm_bytes": ("count", True),
    "smem_per_block_bytes": ("count", True), "smem_per_block_optin_bytes": ("count", True),
    "l2_bytes": ("count", True), "mem_bytes": ("count", True), "mem_bus_bits": ("count|null", True),
    "mem_clock_khz": ("count|null", True), "clock_khz": ("count|null", True), "source": ("text", False),
    "peak_bandwidth_override_GBps": ("number|null", False),
}


# -- the values: which numbers must be above zero ------------------------------------------------
#: Numbers a reader divides by or grades against: "positive" (a count, size, clock, bandwidth, latency
#: or time: above zero) or "non-negative" (may be zero: an index, a spill, a limit the kernel hits,
#: a conflict count); "|null": or null (not measured).  Keyed by where the number sits: "a.b" a key
#: of an object, "a[].b" a key of every object of a list, "a.*" every value of an object, "a[]" every
#: element of a list.  A field that is there must be a finite number of its sign; one that is absent
#: is :data:`TAG_SCHEMAS`' business.  A record breaking one is skipped, the message naming the field
#: (with its row: ``rows[3].median_us``) and its value.
POSITIVE, NON_NEGATIVE = "positive", "non-negative"
_SIGNS = {POSITIVE: (lambda v: v > 0, "> 0"), NON_NEGATIVE: (lambda v: v >= 0, ">= 0")}


def _rules(sign: str, *paths: str) -> Dict[str, str]:
    return {path: sign for path in paths}


#: A timed measurement, wherever it sits (``rows[]``, ``copy``, ...): its times, bandwidths and reps.
_TIMED = ("median_us", "p10_us", "p90_us", "GBps", "copy_GBps", "reps")
#: Every GPU record's rows, whatever its tag.
COMMON_VALUES: Dict[str, str] = _rules(POSITIVE, *(f"rows[].{k}" for k in _TIMED))
#: A hardware record's ``device`` (:data:`DEVICE_SCHEMA`): every count, size and clock above zero.
DEVICE_VALUES: Dict[str, str] = {
    **_rules(POSITIVE, *(f"device.{k}" for k in (
        "sm_count", "max_threads_per_block", "max_threads_per_sm", "max_blocks_per_sm", "warp_size", "regs_per_sm",
        "regs_per_block", "smem_per_sm_bytes", "smem_per_block_bytes", "smem_per_block_optin_bytes", "l2_bytes",
        "mem_bytes"))),
    **_rules(POSITIVE + "|null", *(f"device.{k}" for k in (
        "fp32_cores_per_sm", "mem_bus_bits", "mem_clock_khz", "clock_khz", "peak_bandwidth_override_GBps",
        "peak_bandwidth_GBps"))),
}
_LOAD_CHAIN = ("size_bytes", "stride_bytes", "loads", "cycles_per_load", "ns_per_load")
_SWEEP = ("size_bytes", "GBps", "median_us", "p10_us", "p90_us", "blocks", "threads", "warps_per_sm")
_SCHEDULED = ("sm_count", "blocks", "resident_blocks_per_sm", "sms_used", "max_concurrent_blocks_per_sm", "waves",
              "makespan_us", "block_us_median")
#: What each tag's readers compute from, by tag (as :data:`TAG_SCHEMAS`), besides :data:`COMMON_VALUES`.
VALUE_SCHEMAS: Dict[str, Dict[str, str]] = {
    "hardware": {
        **DEVICE_VALUES,
        **_rules(POSITIVE, *(f"latency[].{k}" for k in _LOAD_CHAIN), *(f"dram_latency.{k}" for k in _LOAD_CHAIN),
                 *(f"bandwidth_vs_size[].{k}" for k in _SWEEP), *(f"occupancy_sweep[].{k}" for k in _SWEEP),
                 *(f"littles_law.{k}" for k in ("bandwidth_GBps", "latency_ns", "sm_count", "bytes_per_warp",
                                                 "bytes_in_flight", "bytes_per_sm", "warps_per_sm", "loads_per_sm")),
                 "occupancy.*[].block_size", "occupancy.*[].regs_per_thread",
                 "copy_GBps", "host_bandwidth.h2d_GBps", "host_bandwidth.d2h_GBps", "host_bandwidth.bytes",
                 "launch_floor_us", "launch_floor_call_us", "seconds"),
        # a kernel too heavy for an SM fits 0 blocks: its occupancy and the limit it hits are 0
        **_rules(NON_NEGATIVE, *(f"occupancy.*[].{k}" for k in (
            "blocks_per_sm", "warps_per_sm", "occupancy", "smem_per_block_bytes", "limit_threads", "limit_blocks",
            "limit_registers", "limit_shared memory", "calculator_blocks_per_sm"))),
    },
    "probes": {
        **_rules(POSITIVE, "deck_shuffle_cycles", "rows[].steps[]", *(f"rows[].{k}" for k in (
            "cycles_per_step", "p10", "p90", "threads", "blocks", "sm_count", "resident_blocks_per_sm", "slots",
            "first_wave_blocks", "makespan_us", "block_us_median", "makespan_blocks", "bytes_per_lane",
            "bytes_per_warp", "size_bytes", "passes", "grid", "n", "M", "N", "bytes", "l2_bytes"))),
        # warp_order's block and SM are indices
        **_rules(NON_NEGATIVE, "rows[].block", "rows[].smid", "rows[].warpid[]", "rows[].clk_offset[]"),
    },
    "scheduling": {
        **_rules(POSITIVE, "scheduling.threads_per_block", *(f"scheduling.{k}" for k in _SCHEDULED),
                 "rows[].threads", *(f"rows[].{k}" for k in _SCHEDULED)),
        # a degenerate launch (no block time) has no observed waves
        **_rules(POSITIVE + "|null", "scheduling.waves_observed", "rows[].waves_observed"),
        **_rules(NON_NEGATIVE, "scheduling.spin_cycles", "scheduling.fma_iters", "scheduling.blocks_per_sm_min",
                 "scheduling.blocks_per_sm_max", "scheduling.blocks_per_sm_hist.*", "rows[].spin_cycles",
                 "rows[].blocks_per_sm_hist.*"),
    },
    "divergence": _rules(POSITIVE, "divergence_ratio", "rows[].n", "rows[].block", "rows[].iters"),
    "decoder": {
        **_rules(POSITIVE, "deck_claim_speedup", "config.*", *(f"rows[].{k}" for k in (
            "batch", "tokens", "M", "N", "layers", "norm_calls", "intermediate", "heads", "kv_heads"))),
        # a compiled step fuses its norms: no separate norm time
        **_rules(POSITIVE + "|null", *(f"rows[].{k}" for k in (
            "norms_median_us", "norms_p10_us", "norms_p90_us", "norm_share"))),
        **_rules(NON_NEGATIVE, "rows[].kv_len"),
    },
    "fused": {
        **_rules(POSITIVE, "copy_GBps", "launch_floor_us", "launch_floor_call_us", "copy_kernel_floor_us",
                 *(f"copy.{k}" for k in ("bytes", "median_us", "p10_us", "p90_us")),
                 *(f"rows[].{k}" for k in ("M", "N", "buffers", "calls_per_graph", "rounds")),
                 "kernels.report[].registers", "kernels.launches[].registers", *(f"kernels.launches[].{k}" for k in (
                     "M", "N", "block", "grid", "rows_per_block"))),
        **_rules(POSITIVE + "|null", "rows[].speedup_vs_eager"),
        **_rules(NON_NEGATIVE, *(f"kernels.{part}[].{k}" for part in ("report", "launches") for k in (
            "spill_stores_bytes", "spill_loads_bytes", "local_bytes", "shared_bytes")),
            "kernels.launches[].blocks_per_sm", "kernels.launches[].occupancy"),
    },
    "memory-access": {
        # a run whose bandwidth part failed has no copy
        **_rules(POSITIVE + "|null", "copy_GBps"),
        **_rules(POSITIVE, *(f"rows[].{k}" for k in ("width", "loads", "bytes", "n", "block", "grid", "runs",
                                                       "nbins"))),
        **_rules(NON_NEGATIVE, "rows[].right", "rows[].outcomes[]", "rows[].gpu.*", "rows[].emulated.*"),
    },
    "memory-counters": _rules(NON_NEGATIVE, "rows[].ncu.*", "rows[].emulated.*"),
    "hit-rates": {**_rules(POSITIVE, "rows[].M", "rows[].N"),
                  **_rules(NON_NEGATIVE + "|null", "rows[].l1_hit_pct", "rows[].l2_hit_pct")},
    "per-call-profile": _rules(POSITIVE, *(f"rows[].{k}" for k in (
        "M", "N", "native", "neg", "empty", "ours", "ours_fast", "ours_nolaunch", "launch_only"))),
}


def _path_tokens(path: str) -> List[str]:
    """``"occupancy.*[].block_size"`` -> ``["occupancy", "*", "[]", "block_size"]``."""
    return re.findall(r"\[\]|[^.\[\]]+", path)


def _values_at(obj, tokens: List[str], where: str = ""):
    """``(where, value)`` of every value at ``tokens`` in ``obj`` (``where``: ``rows[3].median_us``);
    a step that does not fit (a key absent, a list where an object is expected) yields nothing."""
    if not tokens:
        yield where, obj
        return
    tok, rest = tokens[0], tokens[1:]
    if tok == "[]":
        if isinstance(obj, list):
            for i, x in enumerate(obj):
                yield from _values_at(x, rest, f"{where}[{i}]")
    elif isinstance(obj, dict):
        for key in (obj if tok == "*" else [tok] if tok in obj else []):
            yield from _values_at(obj[key], rest, f"{where}.{key}" if where else str(key))


def _value_problem(rule: str, value) -> Optional[str]:
    """Why ``value`` breaks ``rule`` ("positive", "non-negative", "|null"), or None."""
    if value is None and rule.endswith("|null"):
        return None
    test, words = _SIGNS[rule.split("|")[0]]
    if (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and test(value)):
        return None
    return f"is {_json_kind(value)}, expected a finite number {words}"


def _values_problem(record: Dict, rules: Dict[str, str]) -> Optional[str]:
    """The first number of ``record`` that breaks ``rules`` (see :data:`VALUE_SCHEMAS`), in words."""
    for path, rule in rules.items():
        for where, value in _values_at(record, _path_tokens(path)):
            why = _value_problem(rule, value)
            if why:
                return f"{where} {why}"
    return None


def _json_kind(value) -> str:
    """A JSON value's kind in words, for a message: ``a list``, ``null``, ``the string '...'``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def _kind_problem(kind: str, value) -> Optional[str]:
    """Why ``value`` is not of ``kind`` (see :data:`RECORD_SCHEMA`), or None."""
    if kind.endswith("|null"):
        return None if value is None else _kind_problem(kind[:-len("|null")], value)
    if kind == "date":
        if not isinstance(value, str):
            return f"is {_json_kind(value)}, not a date (YYYY-MM-DD)"
        try:
            day = _dt.date.fromisoformat(value)
        except ValueError:
            return f"is {value!r}, not a date (YYYY-MM-DD)"
        latest = _dt.datetime.now(_dt.timezone.utc).date() + _dt.timedelta(days=1)  # a timezone ahead
        return f"is {value}, in the future (today is {backend.today()})" if day > latest else None
    if kind == "device":
        if not isinstance(value, dict):
            return f"is {_json_kind(value)}, not an object of the GPU's attributes"
        return _fields_problem(value, DEVICE_SCHEMA, "device.")
    integer = isinstance(value, int) and not isinstance(value, bool)
    checks = {
        "text": lambda v: isinstance(v, str),
        "name": lambda v: isinstance(v, str) and bool(v.strip()),
        "number": lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)
                             and abs(v) != float("inf") and v == v),
        "count": lambda v: integer and v >= 0,
        "object": lambda v: isinstance(v, dict),
        "list": lambda v: isinstance(v, list),
        "list of objects": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
        "compute capability": lambda v: (isinstance(v, (list, tuple)) and len(v) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v)),
    }
    if kind not in checks:  # a kind the table does not know: a bug in the schema, not in the record
        raise ValueError(f"records: unknown schema kind {kind!r}")
    return None if checks[kind](value) else f"is {_json_kind(value)}, expected {kind}"


def _fields_problem(obj: Dict, schema: Dict[str, Tuple[str, bool]], prefix: str = "") -> Optional[str]:
    missing = [k for k, (_kind, required) in schema.items() if required and k not in obj]
    if missing:
        return f"has no {', '.join(repr(prefix + k) for k in missing)}"
    for key, (kind, _required) in schema.items():
        if key in obj:
            why = _kind_problem(kind, obj[key])
            if why:  # a nested object's problem already names its field ("device.sm_count ...")
                return why if why.startswith(f"{key}.") else f"{prefix}{key} {why}"
    return None


def record_tag(name: str) -> str:
    """The tag of a record's file name (``nvidia-h200-2026-12-01-hardware.json`` -> ``"hardware"``,
    ``...-quick-fused.json`` -> ``"quick-fused"``); "" without one."""
    m = _NAME.search(name)
    return (m.group(3) or "") if m else ""


def problem(record, name: str = "") -> Optional[str]:
    """Why ``record`` (a parsed JSON value, from the file ``name``) is not a usable record, or None.

    Checks :data:`RECORD_SCHEMA`, then the :data:`TAG_SCHEMAS` entry of the file's tag (or of the
    tag's last word: a ``quick-fused`` record is a ``fused`` one), or the hardware entry for a
    record with a ``device``; then its numbers: :data:`COMMON_VALUES` and the tag's
    :data:`VALUE_SCHEMAS` (a zero SM count, a negative bandwidth, an infinite time: the message
    names the field and its value, e.g. ``device.sm_count is the number 0, expected a finite
    number > 0``).
    """
    if not isinstance(record, dict):
        return f"not a JSON object but {_json_kind(record)}"
    if record.get("tool") in TOOL_SCHEMAS:
        return _fields_problem(record, TOOL_SCHEMAS[record["tool"]])
    why = _fields_problem(record, RECORD_SCHEMA)
    if why:
        return why
    kind = _schema_tag(record, name)
    why = _fields_problem(record, TAG_SCHEMAS[kind]) if kind in TAG_SCHEMAS else None
    return why or _values_problem(record, {**COMMON_VALUES, **VALUE_SCHEMAS.get(kind, {})})


def _schema_tag(record: Dict, name: str) -> str:
    """The tag whose schemas ``record`` (from the file ``name``) answers to: its file's tag, or that
    tag's last word (a ``quick-fused`` record is a ``fused`` one); a record with a ``device`` and no
    known tag is a hardware one; "" for none."""
    tag = record_tag(name)
    for t in (tag, tag.rsplit("-", 1)[-1]):
        if t in TAG_SCHEMAS or t in VALUE_SCHEMAS:
            return t
    return "hardware" if "device" in record else ""


# -- reading ---------------------------------------------------------------------------------------
#: Every record file skipped so far in this process, ``(path, reason)``: each is said once on stderr.
_SKIPPED: Dict[Tuple[str, str], None] = {}


def skipped_records() -> List[Tuple[str, str]]:
    """``(path, reason)`` of every record file left out so far, in the order first met."""
    return list(_SKIPPED)


def _read(path: Path):
    """``(record, None)`` for a usable record file, else ``(None, reason)``."""
    try:
        if path.is_dir():
            return None, "a folder, not a record file"
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    try:
        rec = json.loads(text)
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    why = problem(rec, path.name)
    return (None, why) if why else (rec, None)


def _scan(pattern: str, directory: Optional[Path]):
    """``(usable records newest first, skipped [(file name, reason)])`` of the files matching ``pattern``."""
    directory = Path(directory) if directory else results_dir()
    recs, skipped = [], []
    for p in sorted(directory.glob(pattern)):
        rec, why = _read(p)
        if why is not None:
            skipped.append((p.name, why))
            if (str(p), why) not in _SKIPPED:
                _SKIPPED[(str(p), why)] = None
                print(f"gpu-viz: the record {p} is skipped: {why}", file=sys.stderr, flush=True)
            continue
        rec["_file"] = p.name
        recs.append(rec)
    for rec in recs:  # a skipped run of the same tag at or after this one: its label will say so
        mine, tag = (rec.get("date", ""), _sequence(rec["_file"])), record_tag(rec["_file"])
        newer = [(n, why) for n, why in skipped if record_tag(n) == tag
                 and (_name_order(n) is None or _name_order(n) >= mine)]
        if newer:
            rec["_skipped_newer"] = newer
    return sorted(recs, key=_order, reverse=True), skipped


def load_records(pattern: str = "*.json", directory: Optional[Path] = None) -> List[Dict]:
    """Every usable committed record matching ``pattern`` (in :func:`results_dir` unless
    ``directory``), newest first (date, then the same day's sequence number), each with its file
    name as ``"_file"``.  A file that is not a usable record (unreadable, not JSON, a folder, or
    :func:`problem`) is left out and said once on stderr, by path and reason; this never raises.

    A record with a skipped file of its own tag dated at or after it (by the date and run in the
    file's name) carries those as ``"_skipped_newer"`` ``[(file, reason)]``, and its :func:`label`
    says so: its numbers may not be the newest run's."""
    return _scan(pattern, directory)[0]


def newest(pattern: str, directory: Optional[Path] = None) -> Optional[Dict]:
    """The newest usable record matching ``pattern`` (see :func:`load_records`), or None."""
    recs = load_records(pattern, directory)
    return recs[0] if recs else None


def skipped_note(pattern: str, directory: Optional[Path] = None) -> str:
    """The files matching ``pattern`` that are skipped, in words: ``"the record X was skipped
    (why)"``, ``; ``-joined; "" when none is."""
    return "; ".join(f"the record {n} was skipped ({why})" for n, why in _scan(pattern, directory)[1])


def label(record: Dict) -> str:
    """The provenance of a saved record: ``recorded on <gpu>, <date>[, run N], driver <v> (not live)``.

    ``run N``: the record is its GPU's Nth of that date and tag (``<date>.N`` in its file name), so
    two runs of one day never read alike.  A record :func:`newest` chose over a newer file it had
    to skip says so after the label: ``...; the newer record <file> was skipped (<why>)``.
    """
    date = record.get("date", "unknown date")
    seq = _sequence(record.get("_file", ""))
    text = backend.recorded_label(record.get("gpu", "unknown GPU"), f"{date}, run {seq}" if seq > 1 else date,
                                  record.get("driver"))
    newer = record.get("_skipped_newer")
    if newer:
        text += "; " + "; ".join(f"the newer record {n} was skipped ({why})" for n, why in newer)
    return text


#: The heading of a column or panel that shows the deck's L4 numbers beside another GPU's.
DECK_L4 = "the deck's L4 (spec sheet)"
#: The heading of the seed write-up's H100 columns (notebook 13).
SEED_H100 = "the write-up's H100 (its author's run)"
#: Headings that may name a second GPU in a figure or table: each heads its own column or panel.
REFERENCE_LABELS = (DECK_L4, SEED_H100)

#: The data line of a table that compares spec sheets only (no measured numbers): it may name many GPUs.
SPEC_COMPARISON = "Data: vendor spec sheets"

#: Which committed records (``*-<tag>.json``) each notebook shows in CPU mode, by topic (the notebook's
#: stem without its number, so a renumbering leaves this alone).
LESSON_RECORDS: Dict[str, tuple] = {
    "whole_chip": ("hardware", "probes"), "streaming_multiprocessor": ("hardware",),
    "warps_simt": ("divergence", "probes", "exercises"), "latency_hiding": ("hardware",),
    "block_1024_cap": ("hardware",), "grid_stride_loops": ("exercises",),
    "coalescing_and_banks": ("memory-access", "memory-counters"), "races_and_reduction": ("memory-access", "probes"),
    "kernel_scheduling": ("scheduling", "probes"), "rmsnorm_four_phases": ("probes",), "rmsnorm_speedup": ("decoder",),
    "four_phase_trace": ("probes", "exercises"), "fused_rmsnorm_gate": ("fused",),
    "recap": ("hardware", "scheduling", "divergence", "fused"),
}


def topic(notebook: str) -> str:
    """A notebook's topic: its stem without the number ("09_kernel_scheduling" -> "kernel_scheduling");
    a topic is returned as it is."""
    m = re.match(r"\d\d_(.+)$", notebook)
    return m.group(1) if m else notebook


def missing(what: str, directory: Optional[Path] = None, live: bool = True) -> str:
    """What CPU mode says where a figure's record is not committed (or every committed one is
    skipped: which, and why), in one clause for a learner: it starts in lower case, to follow a
    cell's own words ("Measured: " + missing("probes")), and names the command that makes the
    record.  ``live``: a GPU measures it in the cell itself (False: only the record has it, e.g.
    Nsight Compute's counters).

    The instructor's step, kept out of the learner's text: on a GPU, ``gpu-viz record <what> --out
    benchmarks/results``, then commit the file (README, "GPU results").
    """
    note = skipped_note(f"*-{what}.json", directory)
    head = f"no usable record ({note})" if note else "not recorded yet"
    how = ("on a GPU this cell measures it live, and an instructor makes the record with" if live else
           "an instructor records them on a GPU with")
    return f"{head}; {how} `gpu-viz record {what}`"


def recorded(tag: str, directory: Optional[Path] = None):
    """``(record, label)`` of the newest committed ``*-<tag>.json``, or ``(None, None)``."""
    rec = newest(f"*-{tag}.json", directory)
    return (rec, label(rec)) if rec else (None, None)


def lesson_records(notebook: str, directory: Optional[Path] = None) -> List[Dict]:
    """The newest committed record of each tag :data:`LESSON_RECORDS` lists for ``notebook``
    (a stem such as ``"09_kernel_scheduling"``); tags with no committed record are left out."""
    tags = LESSON_RECORDS.get(topic(notebook), ())
    found = (newest(f"*-{t}.json", directory) for t in tags)
    return [r for r in found if r is not None]


_GPU_NAME = re.compile(r"\b(?:NVIDIA\s+|Tesla\s+)?(L4|L40S?|T4|A10G?|A100|H100|H200|H20|B200|GB200|V100|RTX\s?\w+)\b")


def gpus_named(text: str) -> set:
    """The GPU models ``text`` names (``{"H200", "L4"}``), leaving out the :data:`REFERENCE_LABELS`
    headings: the test of the one-GPU-per-figure rule.  ``text`` may be HTML or SVG (entities decoded,
    :func:`gpu_viz.words.keep_whole`'s marks taken out)."""
    import html

    from .. import words

    text = words.plain(html.unescape(text))  # a rendered table's word joiners and no-break spaces
    for ref in REFERENCE_LABELS:
        text = text.replace(ref, "")
    return {m.group(1).replace(" ", "") for m in _GPU_NAME.finditer(text)}


def one_gpu_problems(outputs, gpu: str) -> List[str]:
    """Every output (``(where, text)`` pairs) that names a GPU other than ``gpu`` (a model, "H200")
    outside a :data:`REFERENCE_LABELS` heading; a spec-sheet comparison with no measured number
    (:data:`SPEC_COMPARISON`, no "recorded on" / "measured on") may name several."""
    bad = []
    for where, text in outputs:
        if SPEC_COMPARISON in text and "recorded on" not in text and "measured on" not in text:
            continue
        other = gpus_named(text) - {gpu}
        if other:
            bad.append(f"{where} names {sorted(other)} beside {gpu}")
    return bad


# -- which GPU a lesson describes: answered here, once -------------------------------------------

def recorded_hardware():
    """The newest committed hardware record (``benchmarks/results/*-hardware.json``) and its label.

    Returns:
        ``(record, label)`` with ``label = backend.recorded_label(gpu, date)``, or ``(None, None)``.
    """
    rec = newest("*-hardware.json")
    if rec is None:
        return None, None
    return rec, label(rec)


def device_of(record: Dict):
    """The :class:`gpu_viz.device.DeviceInfo` stored in a hardware record (``record["device"]``),
    its ``source`` naming the record (never "live": it was live when recorded, it is not now).

    Raises:
        ValueError: the record has no ``device`` entry, or one that lacks a field, holds a value
            of the wrong kind (:data:`DEVICE_SCHEMA`) or a count, size or clock that is not above
            zero (:data:`DEVICE_VALUES`); the message names it.
    """
    import dataclasses

    from .. import device

    name = record.get("_file", "the record") if isinstance(record, dict) else "the record"
    if not isinstance(record, dict) or "device" not in record:
        raise ValueError(f"device_of: {name} has no 'device' entry (not a hardware record?)")
    why = _kind_problem("device", record["device"]) or _values_problem(record, DEVICE_VALUES)
    if why:
        raise ValueError(f"device_of: {name}: {why}")
    d = dict(record["device"])
    fields = {f.name for f in dataclasses.fields(device.DeviceInfo)}
    kw = {k: v for k, v in d.items() if k in fields}
    kw["compute_capability"] = tuple(kw["compute_capability"])
    # "recorded on <gpu>, <date>, driver <v> (not live), read by cudaDeviceGetAttribute"
    how = str(d.get("source", "?"))
    how = how[len("live: "):] if how.startswith("live: ") else how
    kw["source"] = f"{label(dict(record, gpu=record.get('gpu', d.get('name', '?'))))}, read by {how}"
    return device.DeviceInfo(**kw)


def lesson_device():
    """``(DeviceInfo, label)`` of the one GPU a lesson's figures describe: this GPU on a GPU (live
    label); in CPU mode the GPU of the newest committed hardware record (its label), so its spec
    and its measurements are one GPU; else the deck's L4 spec sheet (the CPU model's label)."""
    from .. import device

    if backend.has_gpu():
        return device.current(), backend.live_label()
    info, lab = recorded_device()
    if info is not None:
        return info, lab
    note = skipped_note("*-hardware.json")  # a hardware record there is, but not a usable one: say so
    return device.spec_sheet(device.DECK_GPU), backend.MODEL_LABEL + (
        f"; {note}: the CPU models use the deck's L4 spec sheet instead" if note else "")


def recorded_device():
    """``(DeviceInfo, label)`` of the GPU the newest committed hardware record was made on, or
    ``(None, None)``."""
    rec, lab = recorded_hardware()
    if rec and rec.get("device"):
        return device_of(rec), lab
    return None, None


def gpu_tests(prefix: str, directory: Optional[Path] = None) -> Optional[Dict]:
    """The newest committed GPU test run (``*-gpu-check*.json`` with per-test outcomes) that ran
    tests whose pytest node id starts with ``prefix`` (e.g.
    ``"tests/test_reduction.py::test_block_reduce_every_block_size"``).

    Returns ``{"passed": n, "failed": n, "tests": [node ids], "label": "recorded on <gpu>, <date>
    (not live)"}``, or None when no committed run has such a test.  CPU mode cites it where a cell's
    check needs a GPU.
    """
    for rec in load_records("*-gpu-check*.json", directory):
        passed, failed = _outcomes(rec)
        passed, failed = [t for t in passed if t.startswith(prefix)], [t for t in failed if t.startswith(prefix)]
        if passed or failed:
            return {"passed": len(passed), "failed": len(failed), "tests": passed + failed, "label": label(rec)}
    return None


def test_outcome(record: Dict, node_id: str) -> str:
    """What a committed GPU test run (a ``*-gpu-check*.json`` record) says of one pytest node id:
    ``"passed"``, ``"FAILED"`` or ``"not in that run"`` (skipped, deselected, or in a part cut short;
    the record's ``pytest_gpu["complete"]`` says whether every part reached its end)."""
    passed, failed = _outcomes(record)
    return "passed" if node_id in passed else "FAILED" if node_id in failed else "not in that run"


def _outcomes(record: Dict):
    """(passed, failed): the node ids of a GPU test run record's passed and failed tests (its
    failures are ``{"test": id, "kind": ..., "message": ...}``)."""
    summary = record.get("pytest_gpu") or {}
    return summary.get("passed") or [], [str(f.get("test", "")) for f in summary.get("failed") or []]
