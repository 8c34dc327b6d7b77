"""Notebook 06's grid-stride loop (kernels/grid_stride.cu): it covers every element exactly once, for
any n and launch shape -- the CPU model, the lesson, the frames; on a GPU, model == silicon."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_viz.lessons import GRID_STRIDE
from gpu_viz.model import grid_stride as model


def _check_coverage(tr, n, grid, block):
    T = grid * block
    i = np.arange(n)
    assert np.array_equal(tr["visits"], np.ones(n, np.int32)), "every element exactly once"
    gthread = tr["block"].astype(np.int64) * block + tr["thread"]
    assert np.array_equal(gthread, i % T), "element i belongs to thread i mod T"
    assert np.array_equal(tr["pass"], (i // T).astype(np.int32)), "on pass i div T"
    assert (tr["thread"] < block).all() and (tr["block"] < grid).all()
    assert tr.params["passes"] == -(-n // T)
    assert len(tr.steps) == 1 + tr.params["passes"]


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 5000), grid=st.integers(1, 9), block=st.integers(1, 1024))
def test_model_covers_every_element_once(n, grid, block):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    tr = model.trace(x, 3.0, grid, block)
    _check_coverage(tr, n, grid, block)
    assert np.array_equal(tr["y"], np.float32(3.0) * x)


def test_deck_case_two_passes():
    tr = GRID_STRIDE.trace()
    assert tr.params["n"] == 2048 and tr.params["threads"] == 1024 and tr.params["passes"] == 2
    assert np.array_equal(tr["thread"][:1024], tr["thread"][1024:])  # the same threads come round


@pytest.mark.parametrize("n,grid,block", [(5, 2, 4), (1024, 1, 1024), (1025, 1, 1024), (0, 3, 32), (2500, 1, 1024)])
def test_model_edge_cases(n, grid, block):
    tr = GRID_STRIDE.trace(n=n, grid=grid, block=block, seed=n)
    _check_coverage(tr, n, grid, block)


def test_bad_shape_names_the_argument():
    with pytest.raises(ValueError, match="block must be 1..1024"):
        GRID_STRIDE.trace(block=0)
    with pytest.raises(ValueError, match="n must be >= 0"):
        GRID_STRIDE.trace(n=-1)
    with pytest.raises(TypeError, match="grid must be an int"):
        GRID_STRIDE.trace(grid=1.5)


def test_frames_render():
    tr = GRID_STRIDE.trace(n=2500)
    an = GRID_STRIDE.animation(tr)
    assert len(an) == 4 and all(f.markup.startswith("<svg") for f in an.frames)
    assert an.frames[1].line == GRID_STRIDE.source().line_of("y[i] =")
    assert an.frames[0].line == GRID_STRIDE.source().line_of("i += stride")


SHAPES = [(2048, 1, 1024), (1, 1, 1), (5, 2, 4), (1000, 1, 1024), (1025, 1, 1024), (2500, 3, 96),
          (100000, 7, 128), (0, 2, 64), (4096, 4, 1024), (33, 5, 33)]


@pytest.mark.gpu
@pytest.mark.parametrize("n,grid,block", SHAPES)
def test_model_equals_silicon(n, grid, block, rng):
    x = rng.standard_normal(n).astype(np.float32)
    from gpu_viz.record import grid_stride as record

    gpu = record.trace(x, 1.75, grid, block)
    cpu = model.trace(x, 1.75, grid, block)
    cpu.assert_equal(gpu, names=("x", "y", "block", "thread", "pass", "visits"))
    _check_coverage(gpu, n, grid, block)


@pytest.mark.gpu
@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 70000), grid=st.integers(1, 300), block=st.integers(1, 1024))
def test_silicon_covers_any_shape(n, grid, block):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    from gpu_viz.record import grid_stride as record

    gpu = record.trace(x, 2.0, grid, block)
    _check_coverage(gpu, n, grid, block)


@pytest.mark.gpu
def test_plain_kernel_scale():
    import cupy as cp

    from gpu_viz.record import grid_stride as record

    x = cp.random.standard_normal(1 << 20, dtype=cp.float32)
    y = record.scale(x, 0.5)
    assert cp.array_equal(y, x * cp.float32(0.5))
