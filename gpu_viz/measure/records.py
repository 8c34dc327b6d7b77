"""GPU records: one JSON file per run (DESIGN.md section 5), named ``<gpu-slug>-<date>[-tag].json``.

* :func:`environment`, :func:`new_record`, :func:`save_record` -- write a record of this run
  (date, GPU, sm, driver, CUDA, torch, CuPy) into a folder the caller names.
* :func:`results_dir`, :func:`load_records`, :func:`newest` -- the committed records the
  notebooks show in CPU mode: ``benchmarks/results/`` of a source checkout, or the copy the
  wheel ships (``gpu_viz/_results``), so an installed package (Colab) finds them too.
* :func:`label` -- the provenance of a record: "recorded on <GPU>, <date> (not live)".
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


def save_record(record: Dict, tag: str = "", directory: Optional[Path] = None) -> Path:
    """Write ``record`` to ``<directory>/<gpu-slug>-<date>[-tag].json`` and return the path.

    ``directory``: default the current folder (never the installed package); the course's
    committed records live in ``benchmarks/results/`` (pass it to add one there).
    """
    directory = Path(directory) if directory else Path.cwd()
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{gpu_slug(record['gpu'])}-{record['date']}{'-' + tag if tag else ''}.json"
    path = directory / name
    path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    return path


def load_records(pattern: str = "*.json", directory: Optional[Path] = None) -> List[Dict]:
    """Every committed record matching ``pattern`` (in :func:`results_dir` unless ``directory``),
    newest date first, each with its file name as ``"_file"``."""
    directory = Path(directory) if directory else results_dir()
    recs = []
    for p in sorted(directory.glob(pattern)):
        try:
            rec = json.loads(p.read_text())
        except ValueError:
            continue
        rec["_file"] = p.name
        recs.append(rec)
    return sorted(recs, key=lambda r: r.get("date", ""), reverse=True)


def newest(pattern: str, directory: Optional[Path] = None) -> Optional[Dict]:
    """The newest record matching ``pattern`` (see :func:`load_records`), or None."""
    recs = load_records(pattern, directory)
    return recs[0] if recs else None


def label(record: Dict) -> str:
    """The provenance of a saved record: ``recorded on <gpu>, <date> (not live)``."""
    return backend.recorded_label(record.get("gpu", "unknown GPU"), record.get("date", "unknown date"))


def gpu_tests(prefix: str, directory: Optional[Path] = None) -> Optional[Dict]:
    """The newest committed GPU test run (``*-gpu-check*.json`` with per-test outcomes) that ran
    tests whose pytest node id starts with ``prefix`` (e.g.
    ``"tests/test_reduction.py::test_block_reduce_every_block_size"``).

    Returns ``{"passed": n, "failed": n, "tests": [node ids], "label": "recorded on <gpu>, <date>
    (not live)"}``, or None when no committed run has such a test.  CPU mode cites it where a cell's
    check needs a GPU.
    """
    for rec in load_records("*-gpu-check*.json", directory):
        summary = rec.get("pytest_gpu") or {}
        passed = [t for t in summary.get("passed") or [] if t.startswith(prefix)]
        failed = [f["test"] for f in summary.get("failed") or [] if str(f.get("test", "")).startswith(prefix)]
        if passed or failed:
            return {"passed": len(passed), "failed": len(failed), "tests": passed + failed, "label": label(rec)}
    return None
