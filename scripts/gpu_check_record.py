"""Turn a gpu-check log folder into one record beside the benchmarks (DESIGN.md section 5).

Usage: python scripts/gpu_check_record.py LOGDIR [--tag gpu-check]
Writes benchmarks/results/<gpu>-<date>-<tag>.json: the run's environment, pytest's counts and
failures (with each part's exit status and whether every part reached its end), every
compute-sanitizer run's verdict, and every notebook's execution status.
"""
import argparse
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gpu_viz.measure import records  # noqa: E402


# pytest's exit statuses of a run that reached its end: all passed, some failed, none selected
_RAN_TO_THE_END = (0, 1, 5)


def pytest_parts(logdir: Path):
    """Each pytest part scripts/gpu-check ran (``pytest-gpu-<part>.exit``): ``{part: {"exit": n,
    "junit": bool}}``.  A part cut short by its time limit (exit 124) or stopped by an error leaves
    no JUnit file or a partial one; its exit status is what tells the reader."""
    parts = {}
    for path in sorted(logdir.glob("pytest-gpu-*.exit")):
        part = path.name[len("pytest-gpu-"):-len(".exit")]
        text = path.read_text(encoding="utf-8").strip()
        parts[part] = {"exit": int(text) if text.lstrip("-").isdigit() else text,
                       "junit": (logdir / f"pytest-gpu-{part}.xml").is_file()}
    return parts


def _finished(part) -> bool:
    """A part that reached its end: an exit status of one, and its JUnit file (none where nothing
    was selected)."""
    return part["exit"] in _RAN_TO_THE_END and (part["junit"] or part["exit"] == 5)


def pytest_summary(logdir: Path):
    """pytest's counts, failures and passed node ids from ``pytest-gpu.xml``, with each part's exit
    status; ``complete`` is False when any part did not reach its end.  None when no pytest ran."""
    xml = logdir / "pytest-gpu.xml"
    parts = pytest_parts(logdir)
    if not xml.is_file() and not parts:
        return None
    complete = all(_finished(p) for p in parts.values())
    if not xml.is_file():
        return {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "seconds": 0.0, "failed": [],
                "passed": [], "parts": parts, "complete": False}
    root = ET.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    failures, passed = [], []
    for case in suite.iter("testcase"):
        bad = False
        for kind in ("failure", "error"):
            el = case.find(kind)
            if el is not None:
                bad = True
                failures.append({"test": _node_id(case), "kind": kind, "message": (el.get("message") or "")[:300]})
        if not bad and case.find("skipped") is None:
            passed.append(_node_id(case))
    # "passed": every GPU test that passed, by pytest node id: what CPU mode cites where a notebook
    # cell needs a GPU (gpu_viz.measure.records.gpu_tests)
    return {"tests": int(suite.get("tests", 0)), "failures": int(suite.get("failures", 0)),
            "errors": int(suite.get("errors", 0)), "skipped": int(suite.get("skipped", 0)),
            "seconds": float(suite.get("time", 0)), "failed": failures, "passed": sorted(passed),
            "parts": parts, "complete": complete}


def _node_id(case) -> str:
    """A JUnit testcase as a pytest node id: classname ``tests.test_x`` -> ``tests/test_x.py::name``."""
    cls = case.get("classname") or ""
    mod, _, klass = cls.partition(".Test") if ".Test" in cls else (cls, "", "")
    path = mod.replace(".", "/") + ".py"
    return f"{path}::" + (f"Test{klass}::" if klass else "") + (case.get("name") or "")


def sanitizer_summary(logdir: Path):
    rows = []
    for log in sorted(logdir.glob("sanitize-*.log")):
        m = re.match(r"sanitize-(.+)-(memcheck|racecheck|synccheck|initcheck)\.log", log.name)
        if not m:
            continue
        text = log.read_text(encoding="utf-8", errors="replace")
        found = re.findall(r"(?:ERROR|RACECHECK) SUMMARY: (\d+) (?:error|hazard)", text)
        rows.append({"script": m.group(1), "tool": m.group(2),
                     "errors": int(found[-1]) if found else None,
                     "clean": bool(found) and int(found[-1]) == 0 and "Traceback" not in text})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir", type=Path)
    ap.add_argument("--tag", default="gpu-check")
    ap.add_argument("--phases", default="", help="the phases scripts/gpu-check ran (space-separated)")
    args = ap.parse_args()
    # what the run covered: its phases and scripts/gpu-check's GPU_CHECK_* variables (unset = all)
    scope = {"phases": args.phases.split() or "not given"}
    scope.update({k: os.environ[k] for k in ("GPU_CHECK_TESTS", "GPU_CHECK_SANITIZE", "GPU_CHECK_NOTEBOOKS",
                                             "GPU_CHECK_RECORDS") if k in os.environ})
    tests = pytest_summary(args.logdir)
    if tests and not tests["complete"]:
        cut = {part: p["exit"] for part, p in tests["parts"].items() if not _finished(p)}
        print(f"pytest did not reach its end (exit status by part: {cut}); the record says complete: false")
    rec = records.new_record(rows=[], kind="gpu-check", scope=scope,
                           pytest_gpu=tests,
                           sanitizer=sanitizer_summary(args.logdir))
    status = args.logdir / "notebooks.json"
    if status.is_file():
        import json
        rec["notebooks"] = json.loads(status.read_text(encoding="utf-8"))
    print(records.save_record(rec, tag=args.tag, directory=ROOT / "benchmarks" / "results"))


if __name__ == "__main__":
    main()
