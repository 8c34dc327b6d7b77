"""A throwaway JupyterHub on 127.0.0.1 for tests/test_classkit_hub.py: the class kit's own
``hub/jupyterhub_config.py`` (shared-password sign-in, local process spawner), on free ports, with
its state, the students' homes and nbgrader's exchange in a temporary folder.

Bounded and self-stopping: :func:`class_hub` starts the hub in a session of its own and, on the way
out (the test passed or not), records every process it started -- the hub, its proxy
(configurable-http-proxy), each student's server and their kernels, found as the hub's descendants
-- asks the hub to stop (it stops the servers and the proxy), then stops by PID (and by process
group) whatever is left, and reports any process that survived.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Set, Tuple

#: Seconds the hub may take to answer (a cold start on 2 shared cores: a few seconds).
START_TIMEOUT_S = 60
#: Seconds the hub may take to stop its servers and proxy before what is left is killed.
STOP_TIMEOUT_S = 30
PASSWORD = "a-room-password"


def _free_ports(n: int) -> List[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _stat(pid: int) -> Tuple[int, int, int]:
    """(parent pid, process group, start time in clock ticks) of ``pid`` from /proc."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read().decode("ascii", "replace")
    rest = data[data.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[2]), int(rest[19])


def descendants(root: int) -> Dict[int, Tuple[int, int]]:
    """Every live descendant of ``root`` (and ``root``): pid -> (process group, start time)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                table[int(entry)] = _stat(int(entry))
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in found:
            found[pid] = (table[pid][1], table[pid][2])
            todo += [p for p, (ppid, _g, _t) in table.items() if ppid == pid]
    return found


def _alive(pid: int, start: int) -> bool:
    """``pid`` still runs and is the process recorded (its start time matches: not a reused pid);
    a zombie (dead, not yet reaped by its parent) is not running."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[0]
        return _stat(pid)[2] == start and state not in ("Z", "X")
    except (OSError, ValueError, IndexError):
        return False


class Hub:
    """A running hub: ``url`` (no trailing slash), the kit folder, its state folder, the exchange."""

    def __init__(self, url: str, kit: Path, state: Path, exchange: Path, proc: subprocess.Popen, log: Path,
                 env: dict):
        self.url, self.kit, self.state, self.exchange, self.proc, self.log = url, kit, state, exchange, proc, log
        self.env = env
        self.seen: Dict[int, Tuple[int, int]] = {}

    def record(self) -> int:
        """Note every process the hub has started so far (clean-up stops them by PID); returns how
        many are running now."""
        now = descendants(self.proc.pid)
        self.seen.update(now)
        return len(now)

    def log_tail(self, n: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.is_file() else ""

    def home(self, user: str) -> Path:
        return self.state / "home" / user


def proxy_command() -> str:
    """configurable-http-proxy on PATH (npm install -g configurable-http-proxy), or ''."""
    return shutil.which("configurable-http-proxy") or ""


@contextlib.contextmanager
def class_hub(kit: Path, tmp: Path, singleuser_args: str = ""):
    """Start the kit's hub for a test; yield a :class:`Hub`; stop every process it started.

    Raises:
        RuntimeError: the hub did not answer within :data:`START_TIMEOUT_S` (its log attached).
    """
    state = tmp / "hub-state"
    exchange = tmp / "exchange"
    port, api_port, proxy_port = _free_ports(3)
    env = dict(os.environ)
    env.update(CLASS_HUB_PASSWORD=PASSWORD, CLASS_HUB_PORT=str(port), CLASS_HUB_API_PORT=str(api_port),
               CLASS_HUB_PROXY_API_PORT=str(proxy_port), CLASS_HUB_STATE=str(state), NBGRADER_EXCHANGE=str(exchange),
               CLASS_HUB_SINGLEUSER_ARGS=singleuser_args)
    if os.geteuid() == 0:  # CI runs as root in a throwaway container: let the hub serve as root there
        env["CLASS_HUB_ALLOW_ROOT"] = "1"
    # jupyterhub-singleuser and alembic from this environment, as an activated venv has them
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    log = tmp / "jupyterhub.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(kit / "hub" / "jupyterhub_config.py")],
                                cwd=kit, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(f"http://127.0.0.1:{port}", kit, state, exchange, proc, log, env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            hub.record()
            if proc.poll() is not None:
                raise RuntimeError(f"jupyterhub exited with {proc.returncode}:\n{hub.log_tail()}")
            try:
                with urllib.request.urlopen(hub.url + "/hub/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyterhub did not answer in {START_TIMEOUT_S} s:\n{hub.log_tail()}")
            time.sleep(0.5)
        yield hub
    finally:
        stop(hub)


def stop(hub: Hub) -> None:
    """Stop the hub (it stops the students' servers and the proxy), then every process it started
    that is still running, by PID and by process group; raise naming any that survived."""
    hub.record()
    mine = os.getpgrp()
    if hub.proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hub.proc.pid, signal.SIGTERM)
        try:
            hub.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
    left = {pid: (g, t) for pid, (g, t) in hub.seen.items() if _alive(pid, t)}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not left:
            break
        groups: Set[int] = {g for g, _t in left.values() if g != mine}
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        for g in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(g, sig)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p, t) for p, (_g, t) in left.items()):
            time.sleep(0.2)
        left = {pid: (g, t) for pid, (g, t) in left.items() if _alive(pid, t)}
    if hub.proc.poll() is None:
        hub.proc.kill()
        hub.proc.wait(timeout=10)
    if left:
        raise RuntimeError(f"processes the hub started survived SIGKILL: {sorted(left)}")
