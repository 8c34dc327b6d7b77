"""Test-session plumbing that tests/conftest.py registers: replayable seeds and the nvcc of the build checks.

Seeds.  One run seed per session: $GPU_VIZ_SEED if set, else fresh; pytest's header says which
("gpu_viz run seed: N (replay: GPU_VIZ_SEED=N)").  Each test's seed is a hash of (run seed, node
id), so it depends on neither test order nor selection: `GPU_VIZ_SEED=N pytest 'NODEID'` gives a
failing test the inputs it failed on.  The ``seed`` fixture is that number and ``rng`` a NumPy
generator seeded with it; Hypothesis is seeded with the run seed (unless --hypothesis-seed is
given), so its examples replay too (under CI=true Hypothesis's own "ci" profile derandomizes it
instead: the same examples every run).  A failing test's report carries a "gpu_viz seed" section with
its seed and the replay command.

nvcc.  The build checks compile kernels/*.cu with nvcc and skip where there is none.  The one on
PATH is used; else the PyPI compiler in this interpreter's site-packages (nvidia/<pkg>/bin/nvcc,
which `make setup` installs where no nvcc is on PATH) is put on PATH before the test modules are
imported, since they look it up at import (``shutil.which("nvcc")``).  Under CI=true a test
skipped for want of nvcc fails instead: CI must run every build check.

Kept apart from conftest.py so that tests/test_test_infra.py can load exactly these hooks into
pytester runs.
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shlex
import shutil
import sys
from typing import Optional, Tuple

import pytest

SEED_ENV = "GPU_VIZ_SEED"
_RUN_SEED = pytest.StashKey[int]()
_NVCC = pytest.StashKey[Tuple[Optional[str], str]]()
# A skip whose reason names nvcc is a build check that found no compiler.
_NVCC_SKIP = re.compile(r"\bnvcc\b")


def in_ci() -> bool:
    """CI=true (as conftest_browser.py reads it): skips for a missing tool become failures."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


# ----------------------------------------------------------------------------------- seeds

def run_seed_from_env(environ=os.environ) -> int:
    """$GPU_VIZ_SEED (a non-negative integer), else a fresh 32-bit seed."""
    text = environ.get(SEED_ENV, "").strip()
    if not text:
        return int.from_bytes(os.urandom(4), "little")
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"{SEED_ENV} must be a non-negative integer (a run seed from pytest's header), "
                                f"got {text!r}")
    return value


def seed_for(run_seed: int, nodeid: str) -> int:
    """The seed of test ``nodeid`` in run ``run_seed``: 32 bits of SHA-256 over both."""
    digest = hashlib.sha256(f"{run_seed}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def replay_command(run_seed: int, nodeid: Optional[str] = None) -> str:
    cmd = f"{SEED_ENV}={run_seed} python -m pytest"
    return f"{cmd} {shlex.quote(nodeid)}" if nodeid else f"{SEED_ENV}={run_seed}"


def run_seed(config) -> int:
    return config.stash[_RUN_SEED]


# ------------------------------------------------------------------------------------ nvcc

def wheel_nvcc() -> Optional[str]:
    """nvcc from the PyPI wheels on sys.path: nvidia/cu13/bin/nvcc (nvidia-cuda-nvcc) or
    nvidia/cuda_nvcc/bin/nvcc (nvidia-cuda-nvcc-cu12); None if neither is installed."""
    for entry in dict.fromkeys(p for p in sys.path if p and os.path.isdir(p)):
        for hit in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "bin", "nvcc"))):
            if os.path.isfile(hit) and os.access(hit, os.X_OK):
                return hit
    return None


def provide_nvcc(environ=os.environ) -> Tuple[Optional[str], str]:
    """Make ``shutil.which("nvcc")`` find a compiler if one is installed: (path, where it came from).

    The one on PATH wins; else the wheel's bin/ goes to the front of ``environ["PATH"]``
    (nvcc finds its cicc, ptxas and headers relative to itself, through its nvcc.profile).
    """
    found = shutil.which("nvcc", path=environ.get("PATH"))
    if found:
        return found, "on PATH"
    hit = wheel_nvcc()
    if hit is None:
        return None, "none"
    environ["PATH"] = os.path.dirname(hit) + os.pathsep + environ.get("PATH", "")
    return hit, "PyPI wheel, put on PATH for this run"


# ----------------------------------------------------------------------------------- hooks

@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # tryfirst: before Hypothesis's own pytest_configure reads --hypothesis-seed.
    seed = run_seed_from_env()
    config.stash[_RUN_SEED] = seed
    if config.pluginmanager.hasplugin("hypothesispytest") and config.getoption("hypothesis_seed", None) is None:
        config.option.hypothesis_seed = str(seed)
    config.stash[_NVCC] = provide_nvcc()


def pytest_report_header(config):
    seed = run_seed(config)
    nvcc, where = config.stash[_NVCC]
    if nvcc:
        tool = f"gpu_viz nvcc: {nvcc} ({where})"
    else:
        tool = ("gpu_viz nvcc: none (the build checks skip; under CI=true they fail; "
                "`make setup` installs nvcc from PyPI)")
    return [f"gpu_viz run seed: {seed} (replay: {replay_command(seed)})", tool]


@pytest.fixture
def seed(request) -> int:
    """This test's seed, from the run seed and its node id (the same in every run with that run seed)."""
    return seed_for(run_seed(request.config), request.node.nodeid)


@pytest.fixture
def rng(seed):
    """A NumPy generator seeded with this test's ``seed``: fresh data each run, replayable failures."""
    import numpy as np

    return np.random.default_rng(seed)


def _nvcc_skip_reason(call) -> Optional[str]:
    exc = call.excinfo.value if call.excinfo is not None else None
    if not isinstance(exc, pytest.skip.Exception):
        return None
    msg = str(getattr(exc, "msg", exc))
    return msg if _NVCC_SKIP.search(msg) else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if rep.skipped and in_ci() and not hasattr(rep, "wasxfail") and shutil.which("nvcc") is None:
        reason = _nvcc_skip_reason(call)
        if reason is not None:
            rep.outcome = "failed"
            rep.longrepr = (f"CI=true: this build check may not skip ({reason!r}), and no nvcc was found "
                            "on PATH or in site-packages. `make setup` installs one from PyPI (NVCC_SPEC in "
                            "the Makefile) where none is on PATH; tests/conftest_infra.py puts it on PATH.")
    if rep.failed:
        seed = run_seed(item.config)
        rep.sections.append(("gpu_viz seed", f"test seed {seed_for(seed, item.nodeid)} (run seed {seed}); "
                                             f"replay: {replay_command(seed, item.nodeid)}"))
    return rep


def pytest_terminal_summary(terminalreporter, config):
    # The header is not printed under -q; a failing run names its seed at the end as well.
    failed = terminalreporter.stats.get("failed") or terminalreporter.stats.get("error")
    if config.option.verbose < 0 or failed:
        seed = run_seed(config)
        terminalreporter.write_line(f"gpu_viz run seed: {seed} (replay: {replay_command(seed)})")
