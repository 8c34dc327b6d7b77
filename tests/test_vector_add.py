"""Notebook 03's vector add (kernels/vector_add.cu): the CPU model, the lesson's steps, the frames;
on a GPU, model == silicon bit for bit."""
import numpy as np
import pytest

from gpu_viz.frames import vector_add as frames
from gpu_viz.lessons import VECTOR_ADD
from gpu_viz.model import vector_add as model


# -- CPU: the model ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,block", [(64, 64), (64, 32), (1, 1), (70, 64), (100, 96), (33, 1024), (3000, 256)])
def test_vector_add_model_indices_and_values(n, block, rng):
    A = rng.standard_normal(n).astype(np.float32)
    B = rng.standard_normal(n).astype(np.float32)
    tr = model.trace(A, B, block)
    T = -(-n // block) * block
    for name in model.VECTOR_ADD_FIELDS:
        assert tr[name].shape == (T,) and tr[name].dtype == np.int32, name
    assert np.array_equal(tr["index"], tr["block"] * block + tr["thread"])
    assert np.array_equal(tr["warp"], tr["thread"] // 32)
    assert np.array_equal(tr["lane"], tr["thread"] % 32)
    ok = tr["index"] < n
    assert np.isnan(tr["c"][~ok]).all()
    assert np.array_equal(tr["c"][ok], (A + B)[tr["index"][ok]])
    np.testing.assert_allclose(tr["c"][ok], A.astype(np.float64) + B.astype(np.float64), rtol=2 ** -24)
    assert set(tr.simulated) == {"smid", "hw_warpid"}
    assert (tr["smid"] < 58).all()


def _step_lines():
    return VECTOR_ADD.source().lines_of([needle for _label, needle in model.VECTOR_ADD_STEPS])


def test_deck_claim_two_warps_six_instructions():
    tr = VECTOR_ADD.trace(n=64, block=64, seed=1)
    assert tr.params["warps"] == 2 and tr.params["seed"] == 1
    assert len(np.unique(tr["warp"])) == 2
    assert len(tr.steps) == 1 + 6 * 2
    lines = [s.line for s in tr.steps[1:]]
    assert lines[0::2] == _step_lines() and len(set(_step_lines())) == 6


def test_the_taught_source_hides_the_trace_lines():
    snip = VECTOR_ADD.source()
    assert "TRACE" not in snip.text and "TRACE(record_thread(i));" in snip.traced_text
    assert snip.text.count("\n") == snip.traced_text.count("\n") - 2


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="block must be 1..1024"):
        VECTOR_ADD.trace(n=64, block=2048)
    with pytest.raises(ValueError, match="n must be >= 1"):
        VECTOR_ADD.trace(n=0)
    with pytest.raises(TypeError, match="A must be a 1-D float32"):
        model.trace(np.zeros(4), np.zeros(4, np.float32))


def test_frames_render():
    tr = VECTOR_ADD.trace(seed=2)
    an = VECTOR_ADD.animation(tr)
    assert len(an) == 13 and all(f.markup.startswith("<svg") for f in an.frames)
    assert any(label in an.static_html() for label in ("CPU model", "measured on", "emulated on the CPU"))
    assert an.source == VECTOR_ADD.source().text


def test_captions_say_each_thing_once():
    """A frame's caption is the model's step label as it is: no phrase added on top of a label
    that already says it (a player once read "..., one instruction: one instruction, all 32 lanes")."""
    an = VECTOR_ADD.animation(VECTOR_ADD.trace(seed=3))
    for f in an.frames:
        for phrase in ("one instruction", "32 lanes", "issues"):
            assert f.caption.count(phrase) <= 1, f.caption


def test_sass_roles_name_the_six_steps():
    roles = dict(frames.classify_sass("/*0000*/  FADD R0, R2, R3\n/*0010*/  STG.E [R4], R0\n/*0020*/  NOP"))
    assert roles["/*0000*/  FADD R0, R2, R3"].startswith("5 add")
    assert roles["/*0010*/  STG.E [R4], R0"].startswith("6 store")
    assert roles["/*0020*/  NOP"].startswith("setup")


def test_sass_roles_fit_beside_a_sass_line():
    """Notebook 03 prints each role beside its SASS line on one slide row: no role longer than
    SASS_ROLE_CHARS (a longer one wrapped, or was cut mid-word, on the projected slide)."""
    long = [r for _, r in frames.SASS_ROLES if len(r) > frames.SASS_ROLE_CHARS]
    assert not long, long


# -- GPU: model == silicon ---------------------------------------------------------------------

DETERMINISTIC_VA = ("block", "thread", "index", "warp", "lane", "a", "b", "c", "A", "B")


@pytest.mark.gpu
@pytest.mark.parametrize("n,block", [(64, 64), (64, 32), (70, 64), (1, 1), (1000, 96), (5000, 1024)])
def test_vector_add_model_equals_silicon(n, block, rng):
    from gpu_viz import device

    A = rng.standard_normal(n).astype(np.float32)
    B = rng.standard_normal(n).astype(np.float32)
    from gpu_viz.record import vector_add as record

    gpu = record.trace(A, B, block, region_lines=_step_lines())
    cpu = model.trace(A, B, block, region_lines=_step_lines())
    cpu.assert_equal(gpu, names=DETERMINISTIC_VA)
    assert gpu.source == "gpu" and gpu.simulated == ()
    sms = device.current().sm_count
    assert (gpu["smid"] >= 0).all() and (gpu["smid"] < sms).all()
    assert (gpu["hw_warpid"] >= 0).all() and (gpu["hw_warpid"] < 64).all()
    # every thread of one block reports one SM
    for b in np.unique(gpu["block"]):
        assert len(np.unique(gpu["smid"][gpu["block"] == b])) == 1
    assert [s.label for s in cpu.steps] == [s.label for s in gpu.steps]


def test_player_draws_the_last_warp_where_the_guard_bites():
    """Bug class: the player drew warps 0-1 only, though notebook 03's exercise asks about the last
    warp (n = 100, block = 96: 6 warps, the last with no useful lane).  With more warps than bands,
    the first and the last are drawn, the launch frame first."""
    from gpu_viz.frames import vector_add as fr

    tr = VECTOR_ADD.trace(n=100, block=96)
    assert fr.drawn_warps(tr) == [0, tr.params["warps"] - 1]
    an = VECTOR_ADD.animation(tr)
    assert an.frames[0].caption.startswith("launch")
    assert f"warp {tr.params['warps'] - 1} (last)" in an.frames[-1].markup
    assert fr.drawn_warps(VECTOR_ADD.trace(n=64, block=64)) == [0, 1]
