"""The ONE headless Chromium of a test session, shared by every browser test (tests/conftest.py
registers the ``browser`` fixture for all modules).

Playwright's sync API may run only once at a time per thread: a second ``sync_playwright()`` opened
while this session-scoped one is alive fails with "using Playwright Sync API inside the asyncio
loop".  So no test module starts its own; they take ``browser`` (tests/test_browser.py checks
that ``sync_playwright`` appears in this file only).

Chromium: $GPU_VIZ_CHROMIUM, else /usr/bin/chromium, else `chromium` on PATH.  Missing, browser
tests skip on a developer machine and FAIL in CI (CI=true): .ci/run installs it.
"""
import os

import pytest

from gpu_viz.pdf import LAUNCH_ARGS, chromium_path  # noqa: F401  (one definition: the PDF builder's)


def in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def browser():
    """A launched playwright Chromium, one per session; every browser test uses this one."""
    exe = chromium_path()
    if exe is None:
        msg = ("Chromium not found (looked at $GPU_VIZ_CHROMIUM, /usr/bin/chromium, PATH); "
               "install it with `apt-get install chromium` (.ci/run does)")
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.fail(f"the playwright Python package is missing ({exc}); pip install -e '.[dev]'")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=LAUNCH_ARGS)
        yield b
        b.close()
