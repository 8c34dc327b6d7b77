"""gpu_viz.lessons: one stem per lesson through every layer, so `ls` shows the data path."""
import importlib
from pathlib import Path

import pytest

from gpu_viz import backend, kernels, lessons

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_every_layer_carries_the_stem(stem):
    les = lessons.LESSONS[stem]
    assert (kernels.KERNEL_DIR / les.kernel_file).is_file()
    for layer in ("record", "model", "frames"):
        assert (ROOT / "gpu_viz" / layer / f"{stem}.py").is_file(), (layer, stem)
        assert hasattr(les.module(layer), "animation" if layer == "frames" else "trace"), (layer, stem)
    assert (ROOT / "tests" / f"test_{stem}.py").is_file()
    assert (ROOT / "notebooks" / f"{les.notebook}.ipynb").is_file()


@pytest.mark.parametrize("stem", list(lessons.LESSONS))
def test_trace_in_cpu_mode_is_the_labelled_model_and_plays(stem):
    if backend.has_gpu():
        pytest.skip("CPU-mode behaviour")
    les = lessons.LESSONS[stem]
    small = {"vector_add": {}, "divergence": {}, "grid_stride": {"n": 300},
             "scheduling": {"blocks": 120}, "rmsnorm_deck": {"d": 64, "block": 64}}[stem]
    tr = les.trace(seed=5, **small)
    assert tr.source == "model" and backend.MODEL_LABEL in tr.provenance
    an = les.animation(tr)
    assert len(an) >= 1 and an.provenance == tr.provenance
    if any(s.line for s in tr.steps):
        assert an.source == les.source_for(tr).text


def test_a_missing_module_of_ours_is_an_error_not_a_skip(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gpu_viz.frames.vector_add", None)
    with pytest.raises(ImportError):
        lessons.VECTOR_ADD.module("frames")


def test_bad_layer():
    with pytest.raises(ValueError, match="layer must be"):
        lessons.VECTOR_ADD.module("view")


def test_the_data_path_reads_off_the_file_names():
    """kernels/<stem>.cu -> gpu_viz/record|model|frames/<stem>.py for notebook 03's and 09's lessons."""
    names = {p.stem for p in (ROOT / "gpu_viz" / "record").glob("*.py")}
    assert {"vector_add", "divergence", "rmsnorm_deck", "reduction"} <= names
    assert importlib.import_module("gpu_viz.model.reduction").FILE == "reduction.cu"
