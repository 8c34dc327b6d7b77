"""Notebook 03's divergence demo (kernels/divergence.cu): the CPU model's masks and paths, the
frames; on a GPU, model == silicon bit for bit, and what divergence costs."""
import numpy as np
import pytest

from gpu_viz.frames import divergence as frames
from gpu_viz.lessons import DIVERGENCE
from gpu_viz.model import divergence as model
from gpu_viz.record.divergence import reference


@pytest.mark.parametrize("n,block", [(64, 64), (64, 32), (70, 64), (45, 45), (1, 1), (200, 96)])
def test_divergence_model_masks(n, block, rng):
    x = rng.standard_normal(n).astype(np.float32)
    d = model.trace(x, block, iters=3, kernel="divergent_branch")
    lane = (np.arange(n) % block) % 32
    assert np.array_equal(d["branch"], lane & 1)
    for i in range(n):  # brute force: lanes of my hardware warp, alive, same branch
        blk, w = i // block, (i % block) // 32
        mates = [j for j in range(n) if j // block == blk and (j % block) // 32 == w and d["branch"][j] == d["branch"][i]]
        assert d["active"][i] == sum(1 << int(lane[j]) for j in mates)
    full = (np.arange(n) % block) // 32 < (block // 32)  # lanes of full warps of full blocks
    full &= np.arange(n) < (n // block) * block
    assert set(d["active"][full & (lane % 2 == 0)].tolist()) <= {0x55555555}
    assert set(d["active"][full & (lane % 2 == 1)].tolist()) <= {0xAAAAAAAA}
    u = model.trace(x, block, iters=3, kernel="uniform_branch")
    if block % 32 == 0 and n % 32 == 0:
        assert set(u["active"].tolist()) == {0xFFFFFFFF}


def test_divergence_paths_float32_exact():
    x = np.array([1.5, -2.25], np.float32)
    y = model.run_paths(x, np.array([0, 1]), iters=2)
    a = np.float32(1.5)
    for _ in range(2):
        a = np.float32(np.float32(a * np.float32(1.0001)) + np.float32(0.5))
    assert y[0] == a
    np.testing.assert_allclose(y, reference(x, np.array([0, 1]), 2), rtol=1e-6)


def test_bad_kernel_name():
    with pytest.raises(ValueError, match="kernel must be one of"):
        DIVERGENCE.trace(kernel="nope")


def test_frames_render():
    d = DIVERGENCE.trace(seed=3)
    assert len(frames.mask_groups(d)) == 4  # 2 warps x 2 paths
    an = DIVERGENCE.animation(d)
    assert len(an) == 5
    lit = {f.line for f in an.frames if f.line}
    src = DIVERGENCE.source()
    assert lit == {src.line_of("path_a("), src.line_of("path_b("), src.line_of("if (take_a)")}
    assert an.frames[-1].line == src.line_of("if (take_a)")   # the summary points at the branch


def test_mask_bits():
    assert frames.mask_bits(0x55555555) == "01" * 16


# -- GPU: model == silicon, and the cost ----------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("kernel", model.DIVERGENCE_KERNELS)
@pytest.mark.parametrize("n,block,iters", [(64, 64, 8), (64, 32, 0), (70, 64, 5), (200, 96, 3), (4096, 256, 16)])
def test_divergence_model_equals_silicon(kernel, n, block, iters, rng):
    x = rng.standard_normal(n).astype(np.float32)
    from gpu_viz.record import divergence as record

    gpu = record.trace(x, block, iters, kernel)
    cpu = model.trace(x, block, iters, kernel)
    cpu.assert_equal(gpu, names=("x", "y", "branch", "active", "lane", "warp", "block"))


@pytest.mark.gpu
@pytest.mark.timing
def test_divergence_costs_more_than_uniform():
    from gpu_viz.claims import divergence

    out = divergence.cost(n=1 << 20, block=256, iters=256, reps=20)
    assert out["divergent_branch"].timing == "kernel"
    assert out["ratio"] > 1.3, out
