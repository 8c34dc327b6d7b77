"""Shared test setup: the `gpu` marker skips (never fakes) without a usable GPU."""
import os

import pytest

from gpu_viz import backend

from conftest_browser import browser  # noqa: F401  (the one session Chromium, for every module)


def pytest_collection_modifyitems(config, items):
    if backend.has_gpu():
        return
    reason = f"needs a CUDA GPU; {backend.detect().describe()}"
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    """A fresh, seeded generator per test (fresh random data, reproducible failures)."""
    import numpy as np

    return np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
