"""Shared test setup: the `gpu` marker skips (never fakes) without a usable GPU; seeds and nvcc
come from conftest_infra.py (one replayable run seed per session, the PyPI nvcc on PATH)."""
import pytest

from gpu_viz import backend

from conftest_browser import browser  # noqa: F401  (the one session Chromium, for every module)
from conftest_slides import built_slides, selftest_slides  # noqa: F401  (the session's slide builds)
from conftest_infra import (  # noqa: F401  (hooks and fixtures, registered by being named here)
    pytest_configure, pytest_report_header, pytest_runtest_makereport, pytest_terminal_summary, rng, seed)


def pytest_collection_modifyitems(config, items):
    if backend.has_gpu():
        return
    reason = f"needs a CUDA GPU; {backend.detect().describe()}"
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
