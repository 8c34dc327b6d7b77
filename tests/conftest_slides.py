"""Session fixtures that build slide decks ONCE per test session, shared by every test module.

    def test_something(built_slides): ...   # tests/conftest.py registers both for every module

- ``built_slides``: every notebooks/NN_*.ipynb executed IN CPU MODE (GPU_VIZ_FORCE_CPU=1 for the
  kernels, on any machine) and rendered by :func:`gpu_viz.slides.build` into a temporary folder.  Returns a
  :class:`gpu_viz.slides.BuildResult`: ``result.deck("03_warps_simt").error`` is "" when the
  notebook executed top to bottom and rendered; ``.executed`` is the executed copy to inspect.
  tests/test_notebooks.py can use it instead of executing the notebooks a second time.
  With ``GPU_VIZ_SLIDES_BUILD=<dir>`` set, it is instead a build made elsewhere (e.g. the slides
  built live on the H200 by scripts/gpu-check), read back from its manifest: the same browser tests
  then check that build.
- ``selftest_slides``: tests/data/99_slides_selftest.ipynb built the same way (a few seconds).

The build is cached in this module, so importing the fixtures into several modules still builds
once.  Executing notebooks runs ``min(2, cpu count)`` kernels at a time.
"""
import os
from pathlib import Path

import pytest

from gpu_viz import slides

DATA = Path(__file__).resolve().parent / "data"
COURSE_NOTEBOOKS = [p.stem for p in slides.find_notebooks(slides.DEFAULT_NOTEBOOKS)]
_CACHE = {}


def _build(key, tmp_path_factory, notebooks_dir, **kwargs):
    if key not in _CACHE:
        out = tmp_path_factory.mktemp(f"slides_{key}")
        try:
            _CACHE[key] = slides.build(out_dir=out, notebooks_dir=notebooks_dir,
                                       jobs=min(2, os.cpu_count() or 1), **kwargs)
        except Exception as exc:  # remember the failure: every test using it fails the same way
            _CACHE[key] = exc
    if isinstance(_CACHE[key], Exception):
        raise _CACHE[key]
    return _CACHE[key]


@pytest.fixture(scope="session")
def built_slides(tmp_path_factory):
    """All course notebooks executed and rendered once (skips while notebooks/ has none)."""
    prebuilt = os.environ.get("GPU_VIZ_SLIDES_BUILD")
    if prebuilt:
        return slides.BuildResult.load(Path(prebuilt))
    if not COURSE_NOTEBOOKS:
        pytest.skip("notebooks/ has no NN_*.ipynb yet")
    return _build("course", tmp_path_factory, slides.DEFAULT_NOTEBOOKS, timeout=600, force_cpu=True)


@pytest.fixture(scope="session")
def selftest_slides(tmp_path_factory):
    """tests/data/99_slides_selftest.ipynb executed and rendered once."""
    return _build("selftest", tmp_path_factory, DATA, timeout=120, force_cpu=True)
