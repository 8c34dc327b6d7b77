"""Check slides built on a GPU machine in headless Chromium here, and record the result.

Usage: python scripts/slides_record.py BUILD_DIR ENV_RECORD.json [--tag slides]
BUILD_DIR is a `gpu-viz slides` build made on the GPU machine (scripts/gpu-check's slides.tar.gz);
ENV_RECORD is that run's gpu-check record (its date, GPU, driver and versions are copied).
Runs tests/test_browser.py's course-deck checks on it (GPU_VIZ_SLIDES_BUILD) and writes
benchmarks/results/<gpu>-<date>-<tag>.json: every deck's execution (mode, GPU, seconds, error)
and the browser tests' outcome.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gpu_viz.measure import records  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", type=Path)
    ap.add_argument("env_record", type=Path)
    ap.add_argument("--tag", default="slides")
    args = ap.parse_args()
    env_rec = json.loads(args.env_record.read_text(encoding="utf-8"))
    manifest = json.loads((args.build / "manifest.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "browser.xml"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(ROOT / "tests" / "test_browser.py"), "-k", "course_deck",
                               f"--junitxml={junit}"],
                              env=dict(os.environ, GPU_VIZ_SLIDES_BUILD=str(args.build.resolve())),
                              capture_output=True, text=True, encoding="utf-8", errors="replace")
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        cases = []
        for c in suite.iter("testcase"):
            failed = c.find("failure") is not None or c.find("error") is not None
            skipped = c.find("skipped") is not None  # a deck this (partial) build does not contain
            cases.append({"test": c.get("name"), "passed": not failed and not skipped,
                          "outcome": "failed" if failed else "skipped" if skipped else "passed"})
    rec = {k: env_rec[k] for k in ("date", "gpu", "sm", "driver", "cuda", "torch", "cupy") if k in env_rec}
    rec.update(kind="slides-built-on-gpu", checked_here="headless Chromium, every request outside the build blocked",
               decks=[{k: d.get(k) for k in ("name", "mode", "gpu", "date", "seconds", "error")}
                      for d in manifest["decks"]],
               browser_tests=cases, browser_exit=proc.returncode, rows=[])
    print(proc.stdout[-1500:])
    print(records.save_record(rec, tag=args.tag, directory=ROOT / "benchmarks" / "results"))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
