"""Notebook 08's reduction ladder (kernels/reduction_ladder.cu): every rung's sum equals float64 at
power-of-two blocks (the shuffle rungs at any block), the tree rungs' recorded adders are the
textbook's, the emulator's counts order the rungs as Harris's ladder says, the power-of-two tree's
failure at other block sizes is named; on a GPU (marked gpu) the same on silicon."""
import numpy as np
import pytest

from gpu_viz import backend, emulator
from gpu_viz.claims import memory_access as claims
from gpu_viz.frames import reduction_ladder as frames
from gpu_viz.lessons import REDUCTION_LADDER
from gpu_viz.record import reduction_ladder as record

needs_emulator = pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")
RUNGS = [r for r, _k, _w in record.RUNGS]


def _expected_adders(rung, block, step):
    t = np.arange(block)
    if rung == "interleaved":
        return t % (2 << step) == 0
    if rung == "strided":
        return 2 * (1 << step) * t < block
    return t < block >> (step + 1)


@needs_emulator
@pytest.mark.parametrize("rung", record.TREE_RUNGS)
@pytest.mark.parametrize("block", [2, 32, 64, 128, 1024])
def test_tree_trace_records_the_textbook_adders_and_the_float64_sum(rung, block):
    x = np.random.default_rng(block).standard_normal(block).astype(np.float32)
    with emulator.emulated() as session:
        tr = record.trace(x, rung, block)
    assert tr.params["steps"] == block.bit_length() - 1
    for s in range(tr.params["steps"]):
        assert np.array_equal(tr["adds"][s].astype(bool), _expected_adders(rung, block, s)), (rung, s)
    record.check_total("trace", float(tr["total"][0]), x, depth=block.bit_length())
    assert not session.runs[0].hazards.errors()


@needs_emulator
@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("n, block", [(1, 64), (1000, 64), (4096, 256), (5003, 128), (3000, 1024)])
def test_every_rung_sums_to_float64(rung, n, block):
    x = record.exact_inputs(n, seed=n)
    spec = claims._ladder_launch(rung, x, block)
    run, outs = claims.emulate(spec)
    record.check_total(f"{rung} n={n} block={block}", float(outs["out"].astype(np.float64).sum()), x, exact=True)
    assert not run.hazards.errors()


@needs_emulator
def test_the_counts_climb_the_ladder():
    rows = {r["rung"]: r for r in claims.ladder_counts()}
    assert all(r["ok"] for r in rows.values())
    assert rows["interleaved"]["divergent"] > 4 * rows["strided"]["divergent"]        # rung 1 diverges
    assert rows["strided"]["bank_conflicts"] > 0 == rows["interleaved"]["bank_conflicts"] == \
        rows["sequential"]["bank_conflicts"]                                           # rung 2 conflicts
    assert rows["sequential"]["warp_instructions"] < rows["strided"]["warp_instructions"]
    assert rows["first add"]["blocks"] * 2 == rows["sequential"]["blocks"]
    assert rows["first add"]["warp_instructions"] < rows["sequential"]["warp_instructions"]
    assert rows["shuffle"]["warp_instructions"] < rows["first add"]["warp_instructions"]
    assert rows["vector"]["load_requests"] * 4 == rows["shuffle"]["load_requests"]     # 16 B a lane
    assert rows["vector"]["load_sectors"] == rows["shuffle"]["load_sectors"]


@needs_emulator
def test_the_power_of_two_tree_fails_at_other_blocks_and_the_failure_is_named():
    rows = claims.ladder_block_sizes(blocks=(96, 128))
    at = {(r["rung"], r["block"]): r for r in rows}
    for rung in ("interleaved", "strided"):
        assert not at[(rung, 96)]["ok"] and "past the end of s (96 elements)" in at[(rung, 96)]["hazard"]
    assert not at[("sequential", 96)]["ok"] and at[("sequential", 96)]["hazard"] == ""      # silently wrong
    assert at[("sequential", 96)]["sum"] != at[("sequential", 96)]["float64"]
    assert all(at[(r, 128)]["ok"] for r in ("interleaved", "strided", "sequential", "shuffle"))
    assert at[("shuffle", 96)]["ok"]
    assert "**wrong**" in claims.block_sizes_table(rows) and "**reads past s[]**" in claims.block_sizes_table(rows)


def test_the_player_marks_divergent_warps_and_refuses_large_blocks():
    if backend.has_gpu():
        pytest.skip("CPU-mode traces")
    tr = REDUCTION_LADDER.trace(seed=2, rung="interleaved", block=128)
    an = REDUCTION_LADDER.animation(tr)
    assert len(an) == 7 and "4 of 4 busy warps divergent" in an.frames[0].caption
    seq = REDUCTION_LADDER.trace(seed=2, rung="sequential", block=128)
    assert "0 of 2 busy warps divergent" in REDUCTION_LADDER.animation(seq).frames[0].caption
    strided = REDUCTION_LADDER.trace(seed=2, rung="strided", block=128)
    for t in (tr, seq, strided):     # each rung's player highlights its own add, in its own region
        src = REDUCTION_LADDER.source_for(t).text.splitlines()
        assert "__fadd_rn(s[" in src[REDUCTION_LADDER.animation(t).frames[0].line - 1]
    assert frames.step_stats("strided", 128, 0, strided["adds"][0])["worst"] == 2     # lanes 2 words apart
    big = REDUCTION_LADDER.trace(seed=2, rung="sequential", block=256)
    with pytest.raises(ValueError, match="at most 128"):
        REDUCTION_LADDER.animation(big)


def test_an_exact_check_catches_one_lost_value_a_tolerance_would_miss():
    x = record.exact_inputs(1 << 16, seed=3)
    total = float(x.astype(np.float64).sum())
    lost = total - float(x[x != 0][0])
    with pytest.raises(AssertionError, match="must be equal"):
        record.check_total("one value lost", lost, x, exact=True)
    record.check_total("the right sum", total, x, exact=True)


@pytest.mark.parametrize("kw, err", [({"rung": "shuffle"}, "rung must be one of"), ({"block": 96}, "power of two"),
                                     ({"block": 2048}, "block must be")])
def test_bad_launches_are_named(kw, err):
    with pytest.raises((TypeError, ValueError), match=err):
        REDUCTION_LADDER.trace(seed=1, **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("rung", RUNGS)
@pytest.mark.parametrize("n, block", [(1, 64), (5003, 128), (1 << 20, 256), (3_000_017, 1024)])
def test_every_rung_sums_to_float64_on_silicon(rung, n, block):
    import cupy as cp

    x = record.exact_inputs(n, seed=n)
    res = record.run(cp.asarray(x), rung, block)
    record.check_total(f"{rung} n={n} block={block}", res["total"], x, exact=True)


@pytest.mark.gpu
@pytest.mark.parametrize("rung", record.TREE_RUNGS)
def test_silicon_tree_equals_the_emulators(rung):
    gpu = REDUCTION_LADDER.trace(seed=7, producer="gpu", rung=rung, block=128)
    emu = REDUCTION_LADDER.trace(seed=7, producer="emulator", rung=rung, block=128)
    assert gpu.diff(emu, names=("adds", "slots", "total")) == []
