"""A throwaway JupyterLab server for the browser tests of the live notebook (tests/test_players_lab.py).

:func:`lab_server` starts ``python -m jupyterlab`` on a free 127.0.0.1 port in a temporary root,
token and XSRF check off, no browser, the app exposed to the page (``window.jupyterapp``, so a test
runs commands instead of hunting for menus), every Jupyter folder (config, data, runtime, settings,
workspaces) inside the temporary folder so that no user setting (say, "Save Widget State
Automatically") or saved workspace changes what is tested, and the kernel importing this checkout
in CPU mode.  It yields a :class:`Lab` and stops the server (then kills it) on the way out.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Seconds the server may take to answer its first request (a cold JupyterLab on 2 CPUs: ~5 s).
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running server: ``url`` (no trailing slash), ``root`` (its notebook folder), REST helpers."""

    def __init__(self, url: str, root: Path, proc: subprocess.Popen, log: Path):
        self.url, self.root, self.proc, self.log = url, root, proc, log

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> int:
        """Shut every running kernel down (REST, as the Kernel menu does); returns how many."""
        kernels = self.api("/api/kernels")
        for k in kernels:
            self.api(f"/api/kernels/{k['id']}", method="DELETE")
        return len(kernels)

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.is_file() else ""


@contextlib.contextmanager
def lab_server(tmp: Path):
    """Start JupyterLab with its root and every Jupyter folder under ``tmp``; yield a :class:`Lab`.

    Raises:
        RuntimeError: the server did not answer within :data:`START_TIMEOUT_S` (its log attached).
    """
    root = tmp / "notebooks"
    root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")):
        (tmp / sub).mkdir(exist_ok=True)
        env[var] = str(tmp / sub)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")] + env.get("PYTHONPATH", "").split(os.pathsep)).rstrip(os.pathsep)
    env["GPU_VIZ_FORCE_CPU"] = "1"
    port = _free_port()
    log = tmp / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}", "--IdentityProvider.token=",
           "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--ServerApp.open_browser=False", "--ServerApp.allow_root=True",
           "--ServerApp.terminals_enabled=False"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    lab = Lab(f"http://127.0.0.1:{port}", root, proc, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{lab.log_tail()}")
            try:
                lab.api("/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not answer in {START_TIMEOUT_S} s:\n{lab.log_tail()}")
                time.sleep(0.3)
        yield lab
    finally:
        if proc.poll() is None:
            with contextlib.suppress(Exception):
                lab.shutdown_kernels()
            os.killpg(proc.pid, signal.SIGTERM)       # its own session: the server and its kernels
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
