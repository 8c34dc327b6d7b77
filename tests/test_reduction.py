"""The faults the four-phase trace teaches (notebook 12), each on the CPU model and on the GPU.

a. the deck's phase 2 sums uninitialised shared slots when the block has fewer than 32 warps;
b. the seed write-up's halving-tree reduction (our reconstruction) loses partials at 96 threads;
c. kernels/reduce.cuh's block_reduce_sum is exact for EVERY block size 1..1024.
"""
import numpy as np
import pytest

from gpu_viz.model import reduction as red
from gpu_viz.model import rmsnorm_deck as m
from gpu_viz.record import reduction as rred
from gpu_viz.record import rmsnorm_deck as rdeck
from gpu_viz.rmsnorm import reference

F32 = np.float32


def _ints(rng, n):
    """Integer-valued floats in 1..7: sums are exact in float32, and a lost or doubled one shows."""
    return rng.integers(1, 8, size=n).astype(F32)


# ---------------------------------------------------------------------------------------------
# a. the deck's smem[tid]

@pytest.mark.parametrize("block", [32, 64, 96, 256, 992])
def test_deck_sums_exactly_the_stale_slots(rng, block):
    x = rng.standard_normal(2048).astype(F32)
    deck = m.trace(x, block=block, variant="deck", prefill=True)
    good = m.trace(x, block=block, variant="guarded", prefill=True)
    nw = block // 32
    # warp 0 read every slot: the nw partials, then the 32 - nw garbage values
    assert np.array_equal(deck["w0_lanes"][0, :nw], good["w0_lanes"][0, :nw])
    assert np.array_equal(deck["w0_lanes"][0, nw:], m.prefill_value(np.arange(nw, 32)))
    stale = float(np.sum(m.prefill_value(np.arange(nw, 32)), dtype=np.float64))
    extra = float(deck["scalars"][0]) - float(good["scalars"][0])
    assert abs(extra - stale) <= 1e-5 * (stale + float(good["scalars"][0]))
    assert not np.allclose(deck["y"], good["y"], rtol=1e-3)


def test_deck_is_right_at_32_warps(rng):
    x = rng.standard_normal(2048).astype(F32)
    deck = m.trace(x, block=1024, variant="deck", prefill=True)
    good = m.trace(x, block=1024, prefill=True)
    assert deck.diff(good, ["y", "scalars"]) == []


def test_without_prefill_the_model_says_unknown():
    t = m.trace(np.ones(256), block=256, variant="deck", prefill=False)
    assert np.isnan(t["scalars"]).all() and np.isnan(t["y"]).all()
    assert set(m.unknowable(t.params)) == {"smem", "w0_lanes", "scalars", "y"}
    assert m.unknowable(m.trace(np.ones(256), block=256, prefill=False).params) == ()


# ---------------------------------------------------------------------------------------------
# b. the seed's halving tree

def test_seed_reduction_at_96_threads_loses_threads_32_to_47_and_80_to_95():
    lost = red.lost_partials(96)
    assert lost.tolist() == list(range(32, 48)) + list(range(80, 96))
    r = red.seed_reduce(np.ones(96, F32))
    assert r["out"][0] == 64 and np.all(r["out"] == 64)
    assert r["weight"].tolist() == [0 if t in set(lost.tolist()) else 1 for t in range(96)]


def test_seed_reduction_loses_exactly_the_partials_it_claims(rng):
    for block in (32, 40, 64, 96, 100, 128, 200, 256, 768, 1000, 1024):
        p = _ints(rng, block)
        r = red.seed_reduce(p)
        expected = float(np.dot(r["weight"], p.astype(np.float64)))
        assert float(r["out"][0]) == expected, block
        lost = red.lost_partials(block)
        assert (lost.size == 0) == (block & (block - 1) == 0), block   # power of two <=> nothing lost
        if lost.size:
            assert float(r["out"][0]) < float(p.sum(dtype=np.float64))


def test_seed_weights_are_right_for_every_block_size_it_accepts():
    for block in range(32, 1025):
        w = red.seed_reduce(np.ones(block, F32))["weight"]
        assert w.min() >= 0 and w.max() <= 1, block    # lost or once, never doubled into lane 0
        assert red.seed_reduce(np.ones(block, F32))["out"][0] == w.sum(), block


def test_corrected_tree_counts_every_partial_once_at_every_block_size(rng):
    for block in range(1, 1025):
        p = _ints(rng, block)
        r = red.seed_reduce(p, corrected=True)
        assert np.all(r["weight"] == 1), block
        assert float(r["out"][0]) == float(p.sum(dtype=np.float64)), block


def test_seed_reduce_rejects_blocks_its_wrapper_never_launches():
    with pytest.raises(ValueError, match="partials"):
        red.seed_reduce(np.ones(31, F32))
    with pytest.raises(ValueError, match="partials"):
        red.seed_reduce(np.ones(1025, F32), corrected=True)


# ---------------------------------------------------------------------------------------------
# c. reduce.cuh, every block size

def test_model_block_reduce_exact_for_every_block_size(rng):
    for block in range(1, 1025):
        v = _ints(rng, block)
        total, lanes, w0 = red.block_reduce_sum(v)
        assert float(total) == float(v.sum(dtype=np.float64)), block


def test_block_reduce_matches_the_four_phase_total(rng):
    x = rng.standard_normal(5000).astype(F32)
    for block in (1, 33, 96, 1024):
        t = m.trace(x, block=block)
        assert red.block_reduce_sum(t["local"])[0] == t["scalars"][0]


# ---------------------------------------------------------------------------------------------
# GPU

@pytest.mark.gpu
@pytest.mark.parametrize("block", [32, 64, 96, 256, 992])
def test_gpu_deck_reads_the_prefilled_slots(rng, block):
    x = rng.standard_normal(2048).astype(F32)
    gpu = rdeck.trace(x, block=block, variant="deck", prefill=True)
    nw = block // 32
    assert np.array_equal(gpu["w0_lanes"][0, nw:], m.prefill_value(np.arange(nw, 32)))
    m.trace(x, block=block, variant="deck", prefill=True).assert_equal(gpu)
    good = rdeck.trace(x, block=block, variant="guarded", prefill=True)
    ref = reference.rmsnorm(x, np.ones_like(x))
    assert np.max(np.abs(good["y"] - ref)) <= m.output_rtol(2048, block) * np.max(np.abs(ref))
    assert not np.allclose(gpu["y"], ref, rtol=1e-3)


@pytest.mark.gpu
def test_gpu_seed_reduction_equals_model_and_loses_partials(rng):
    for block in (32, 40, 96, 100, 256, 768, 1000, 1024):
        p = rng.standard_normal(block).astype(F32)
        for corrected in (False, True):
            gpu = rred.seed_reduce(p, corrected)
            cpu = red.seed_reduce(p, corrected)
            for k in ("levels", "finish", "out"):
                assert np.array_equal(gpu[k].view(np.uint32), cpu[k].view(np.uint32)), (block, corrected, k)
    assert np.all(rred.seed_reduce(np.ones(96, F32))["out"] == 64)
    assert np.all(rred.seed_reduce(np.ones(96, F32), corrected=True)["out"] == 96)


@pytest.mark.gpu
def test_gpu_corrected_tree_exact_for_every_block_size(rng):
    for block in range(1, 1025):
        p = _ints(rng, block)
        out = rred.seed_reduce(p, corrected=True)["out"]
        assert np.all(out == p.sum(dtype=np.float64)), block


@pytest.mark.gpu
def test_gpu_block_reduce_sum_exact_for_every_block_size(rng):
    bad = []
    for block in range(1, 1025):
        v = _ints(rng, block)
        out = rred.block_reduce(v)
        exact = float(v.sum(dtype=np.float64))
        if not (np.all(out[0] == exact) and np.all(out[1] == 2 * exact)):
            bad.append(f"block={block}: got {np.unique(out[0])[:4]} / {np.unique(out[1])[:4]}, expected {exact}")
    assert not bad, "\n".join(bad[:10])


@pytest.mark.gpu
@pytest.mark.parametrize("block", [1, 7, 32, 33, 96, 1000, 1024])
def test_gpu_block_reduce_sum_in_the_documented_order(rng, block):
    v = rng.standard_normal(block).astype(F32)
    out = rred.block_reduce(v)
    total = red.block_reduce_sum(v)[0]
    assert np.all(out[0].view(np.uint32) == np.asarray(total, F32).view(np.uint32))
