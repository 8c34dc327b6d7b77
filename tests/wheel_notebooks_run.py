"""Runs INSIDE the fresh wheel venv of tests/test_wheel_colab.py (never under the dev venv).

Executes every notebook the installed package ships (``gpu_viz/_notebooks``) in CPU mode with
nbclient, each in a kernel of this venv, from a scratch folder (no checkout in sight), and logs
every lookup of a committed record the kernel makes: an IPython startup file wraps
``gpu_viz.measure.records.load_records`` (the one function every record lookup goes through) and
writes ``{"cell": execution_count, "pattern", "dir", "found": [files]}`` per call.

    python wheel_notebooks_run.py OUT_DIR [NOTEBOOK_STEM ...]

Writes OUT_DIR/<notebook>.ipynb (executed) and prints one JSON summary as its last line.
"""
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

KERNEL = "gpu-viz-wheel"
LOG_ENV = "GPU_VIZ_TEST_RECORD_LOG"

# Loaded by the kernel before the first cell (IPYTHONDIR/profile_default/startup/).
STARTUP = r'''
import json as _json, os as _os, sys as _sys
from importlib import metadata as _metadata
from gpu_viz.measure import records as _records

def _log(entry):
    with open(_os.environ["%(env)s"], "a") as f:
        f.write(_json.dumps(entry) + "\n")

_log({"kernel": {"executable": _sys.executable, "ipython": _metadata.version("ipython"),
                 "ipywidgets": _metadata.version("ipywidgets"), "records_module": _records.__file__}})

def _load_records_logged(pattern="*.json", directory=None, _inner=_records.load_records):
    recs = _inner(pattern, directory)
    _log({"cell": get_ipython().execution_count, "pattern": pattern,
          "dir": str(directory if directory is not None else _records.results_dir()),
          "found": [r.get("_file") for r in recs]})
    return recs

_records.load_records = _load_records_logged
''' % {"env": LOG_ENV}


def main(argv):
    out = Path(argv[0]).resolve()
    only = argv[1:]
    out.mkdir(parents=True, exist_ok=True)

    import gpu_viz
    import nbformat
    from gpu_viz import backend, data
    from gpu_viz.measure import records
    from jupyter_client.kernelspec import KernelSpecManager
    from nbclient import NotebookClient

    # A kernel spec of this venv's python under its own name (a user-wide "python3" may be another).
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL],
                   check=True, capture_output=True)
    spec_argv0 = KernelSpecManager().get_kernel_spec(KERNEL).argv[0]

    ipydir = out / "ipython"
    (ipydir / "profile_default" / "startup").mkdir(parents=True, exist_ok=True)
    (ipydir / "profile_default" / "startup" / "00-log-record-lookups.py").write_text(STARTUP)
    os.environ.update({"IPYTHONDIR": str(ipydir), backend.FORCE_CPU_ENV: "1", "MPLBACKEND": "Agg"})
    os.environ.pop("PYTHONPATH", None)

    shipped = data.course_dir("notebooks", "_notebooks")
    summary = {"python": sys.version.split()[0], "executable": sys.executable, "spec_argv0": spec_argv0,
               "gpu_viz": gpu_viz.__file__, "checkout": None if data.CHECKOUT is None else str(data.CHECKOUT),
               "results_dir": str(records.results_dir()), "notebooks_dir": str(shipped),
               "ipython": metadata.version("ipython"), "ipywidgets": metadata.version("ipywidgets"),
               "notebooks": {}}
    for path in sorted(shipped.glob("[0-9][0-9]_*.ipynb")):
        if only and path.stem not in only:
            continue
        log = out / f"{path.stem}.lookups.jsonl"
        log.unlink(missing_ok=True)
        os.environ[LOG_ENV] = str(log)
        nb = nbformat.read(path, as_version=4)
        run_dir = out / path.stem
        run_dir.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        failure = None
        try:
            NotebookClient(nb, timeout=600, kernel_name=KERNEL, allow_errors=True,
                           resources={"metadata": {"path": str(run_dir)}}).execute()
        except Exception as exc:  # a dead kernel or a timeout: report it, go on with the next notebook
            failure = f"{type(exc).__name__}: {str(exc)[-2000:]}"
        executed = out / path.name
        nbformat.write(nb, executed)
        entries = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
        summary["notebooks"][path.name] = {
            "seconds": round(time.perf_counter() - t0, 1), "executed": str(executed), "failure": failure,
            "kernel": next((e["kernel"] for e in entries if "kernel" in e), None),
            "lookups": [e for e in entries if "cell" in e]}
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv[1:])
