"""GPU records: one JSON file per run (DESIGN.md section 5), named ``<gpu-slug>-<date>[-tag].json``.

* :func:`environment`, :func:`new_record`, :func:`save_record` -- write a record of this run
  (date, GPU, sm, driver, CUDA, torch, CuPy) into a folder the caller names.
* :func:`results_dir`, :func:`load_records`, :func:`newest` -- the committed records the
  notebooks show in CPU mode: ``benchmarks/results/`` of a source checkout, or the copy the
  wheel ships (``gpu_viz/_results``), so an installed package (Colab) finds them too.
* :func:`gpu_tests`, :func:`test_outcome` -- what the newest committed GPU test run says of a test.
* :func:`label` -- the provenance of a record: "recorded on <GPU>, <date>, driver <v> (not live)".
* :func:`lesson_device` -- the ONE GPU a lesson's figures describe: this GPU live, else the GPU of
  the committed hardware record, else the deck's L4 spec sheet; with its label.
* :data:`LESSON_RECORDS`, :func:`lesson_records` -- which committed records each notebook shows in
  CPU mode (the notebook tests check that each one's label appears).
* :data:`DECK_L4`, :data:`REFERENCE_LABELS`, :func:`gpus_named` -- the one-GPU-per-figure rule: a
  figure or table with measured numbers names one GPU; another GPU's numbers (the deck's L4 spec
  sheet, the write-up's H100) appear only in a separate column or panel headed by one of
  :data:`REFERENCE_LABELS`.
"""
from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from .. import backend
from ..data import course_dir

def results_dir() -> Path:
    """Where the committed records are: ``<repo>/benchmarks/results`` in a source checkout (an
    editable install), else ``gpu_viz/_results`` inside the installed wheel."""
    return course_dir("benchmarks/results", "_results")


def _driver_version() -> str:
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
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
    :func:`gpu_viz.rmsnorm.bench.full_record` after every shape): rewritten in place.
    """
    path = Path(replace) if replace is not None else _new_path(record, tag, directory)
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
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


_SEQ = re.compile(r"-\d{4}-\d{2}-\d{2}\.(\d+)(?:-|\.json$)")


def _order(rec: Dict):
    """Newest first: the record's date, then its sequence number on that date (the ``.N`` of
    :func:`save_record`'s file name; 1 without one)."""
    m = _SEQ.search(rec.get("_file", ""))
    return rec.get("date", ""), int(m.group(1)) if m else 1


def load_records(pattern: str = "*.json", directory: Optional[Path] = None) -> List[Dict]:
    """Every committed record matching ``pattern`` (in :func:`results_dir` unless ``directory``),
    newest first (date, then the same day's sequence number), each with its file name as ``"_file"``."""
    directory = Path(directory) if directory else results_dir()
    recs = []
    for p in sorted(directory.glob(pattern)):
        try:
            rec = json.loads(p.read_text())
        except ValueError:
            continue
        rec["_file"] = p.name
        recs.append(rec)
    return sorted(recs, key=_order, reverse=True)


def newest(pattern: str, directory: Optional[Path] = None) -> Optional[Dict]:
    """The newest record matching ``pattern`` (see :func:`load_records`), or None."""
    recs = load_records(pattern, directory)
    return recs[0] if recs else None


def label(record: Dict) -> str:
    """The provenance of a saved record: ``recorded on <gpu>, <date>, driver <v> (not live)``."""
    return backend.recorded_label(record.get("gpu", "unknown GPU"), record.get("date", "unknown date"),
                                  record.get("driver"))


#: The heading of a column or panel that shows the deck's L4 numbers beside another GPU's.
DECK_L4 = "the deck's L4 (spec sheet)"
#: The heading of the seed write-up's H100 columns (notebook 10).
SEED_H100 = "the write-up's H100 (its author's run)"
#: Headings that may name a second GPU in a figure or table: each heads its own column or panel.
REFERENCE_LABELS = (DECK_L4, SEED_H100)

#: The data line of a table that compares spec sheets only (no measured numbers): it may name many GPUs.
SPEC_COMPARISON = "Data: vendor spec sheets"

#: Which committed records (``*-<tag>.json``) each notebook shows in CPU mode, by notebook prefix.
LESSON_RECORDS: Dict[str, tuple] = {
    "01": ("hardware", "probes"), "02": ("hardware",), "03": ("divergence", "probes", "exercises"), "04": ("hardware",),
    "05": ("hardware",), "06": ("exercises",), "07": ("scheduling", "probes"),
    "08_rmsnorm_four_phases": ("probes",), "08_rmsnorm_speedup": ("decoder",), "09": ("probes", "exercises"),
    "10": ("fused",), "11": ("hardware", "scheduling", "divergence", "fused"),
}


def missing(what: str) -> str:
    """The line CPU mode prints where a figure's record is not committed: how to make it."""
    return (f"no committed record yet: run `gpu-viz record {what} --out benchmarks/results` on a GPU "
            "(and commit the file) to show it here")


def recorded(tag: str, directory: Optional[Path] = None):
    """``(record, label)`` of the newest committed ``*-<tag>.json``, or ``(None, None)``."""
    rec = newest(f"*-{tag}.json", directory)
    return (rec, label(rec)) if rec else (None, None)


def lesson_records(notebook: str, directory: Optional[Path] = None) -> List[Dict]:
    """The newest committed record of each tag :data:`LESSON_RECORDS` lists for ``notebook``
    (a stem such as ``"07_kernel_scheduling"``); tags with no committed record are left out."""
    tags = next((v for k, v in sorted(LESSON_RECORDS.items(), key=lambda kv: -len(kv[0]))
                 if notebook.startswith(k)), ())
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
    return device.spec_sheet(device.DECK_GPU), backend.MODEL_LABEL


def recorded_device():
    """``(DeviceInfo, label)`` of the GPU the newest committed hardware record was made on, or
    ``(None, None)``."""
    rec = newest("*-hardware.json")
    if rec and rec.get("device"):
        from .memory import recorded_device as from_record

        return from_record(rec), label(rec)
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
