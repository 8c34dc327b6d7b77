"""The decoder step (gpu_viz.claims.decoder): the layer against float64 on the CPU at a small
shape (the same code the GPU runs), the check catching a wrong norm, the conclusion read from the
rows, the record's schema; the full measurement on a GPU (marked gpu)."""
import copy

import pytest

torch = pytest.importorskip("torch")

from gpu_viz.check import MismatchError  # noqa: E402
from gpu_viz.claims import decoder as d  # noqa: E402

SMALL = d.Config(hidden=64, heads=4, kv_heads=2, intermediate=128)


@pytest.mark.parametrize("phase,B,T,S", [("prefill", 1, 16, 0), ("decode", 4, 1, 16)])
@pytest.mark.parametrize("variant", ["eager", "native"])
def test_step_matches_float64_on_cpu(phase, B, T, S, variant, seed):
    W = d.make_weights(SMALL, torch.float32, "cpu", seed)
    inp = d.make_inputs(SMALL, B, T, S, torch.float32, "cpu", seed)
    norm = d.norm_fn(variant)
    rep = d.check_variant(SMALL, W, inp, lambda i: d.step(SMALL, W, i, norm, S), S, "float32", variant)
    assert rep.ok and rep.n == B * T * SMALL.hidden


def test_check_catches_a_norm_without_its_weight(seed):
    W = d.make_weights(SMALL, torch.float32, "cpu", seed)
    inp = d.make_inputs(SMALL, 1, 16, 0, torch.float32, "cpu", seed)

    def no_weight(x, w, eps=d.EPS):
        return d.eager_rmsnorm(x, torch.ones_like(w), eps)

    with pytest.raises(MismatchError, match="decoder step"):
        d.check_variant(SMALL, W, inp, lambda i: d.step(SMALL, W, i, no_weight, 0), 0, "float32", "no weight")


def test_bad_config_and_variant_are_clear_errors():
    with pytest.raises(ValueError, match="kv_heads"):
        d.Config(hidden=64, heads=4, kv_heads=3)
    with pytest.raises(ValueError, match="variant must be one of"):
        d.norm_fn("triton")


def _rows():
    rows = []
    for phase, B, T, S, eager, fused, share in (("prefill", 1, 2048, 0, 5000.0, 4600.0, 0.10),
                                                 ("decode", 32, 1, 2048, 900.0, 860.0, 0.06)):
        for impl, us, norms in (("eager", eager, eager * share), ("fused", fused, eager * share / 6)):
            rows.append({"op": "decoder_step", "impl": impl, "phase": phase, "batch": B, "tokens": T, "kv_len": S,
                         "M": B * T, "N": 4096, "dtype": "float16", "timing": "call", "median_us": us,
                         "p10_us": us * 0.98, "p90_us": us * 1.02, "norms_median_us": norms,
                         "norm_share": norms / us, "check": "ok"})
    return rows


def test_conclusion_is_read_from_the_rows():
    rows = _rows()
    lines = d.conclusion(rows)
    assert len(lines) == 3
    assert "1.09x faster" in lines[0] and "10.0% of the eager step" in lines[0] and "1.11x" in lines[0]
    assert "6.0x" in lines[2] and "7.2x" in lines[2]
    faster = copy.deepcopy(rows)
    faster[1]["median_us"] = 2500.0
    assert "2.00x faster" in d.conclusion(faster)[0]
    assert "no eager and fused rows" in d.conclusion([r for r in rows if r["impl"] != "fused"])[0]
    other = [dict(r, dtype="bfloat16", median_us=r["median_us"] * 2) for r in rows]
    assert d.conclusion(rows + other) == lines and "bfloat16" in d.conclusion(rows + other, dtype="bfloat16")[0]


def test_record_schema():
    compiled = dict(_rows()[0], impl="compile", norms_median_us=None, norm_share=None)
    rec = {"date": "2026-12-01", "gpu": "NVIDIA H200", "sm": "sm_90", "rows": _rows() + [compiled],
           "conclusion": d.conclusion(_rows()), "deck_claim_speedup": d.DECK_CLAIM}
    assert d.check_record(rec) == []
    bad = copy.deepcopy(rec)
    bad["rows"][0]["op"] = "rmsnorm"
    bad["rows"][1].pop("norms_median_us")
    bad["rows"][2]["median_us"] = 1e9
    problems = d.check_record(bad)
    assert any("op must be" in p for p in problems) and any("norms_median_us" in p for p in problems)
    assert any("median outside" in p for p in problems)


def test_committed_decoder_record_is_sound():
    rec = d.recorded()
    if rec is None:
        pytest.skip("no committed decoder record yet (gpu-viz record decoder makes one on a GPU)")
    assert d.check_record(rec) == []


@pytest.mark.gpu
def test_decoder_measure_on_the_gpu():
    """The harness on the GPU at a smaller layer (the full record is `gpu-viz record decoder`, made by
    scripts/gpu-check's claims phase): every variant checked against float64 and timed, none fell back."""
    cfg = d.Config(hidden=1024, heads=8, kv_heads=2, intermediate=2816)
    rows = d.measure(cfg, dtype="float16", shapes=(("prefill", 1, 256, 0), ("decode", 4, 1, 256)), reps=5, warmup=2)
    errors = [(r["phase"], r["impl"], r["error"]) for r in rows if "error" in r]
    assert not errors, errors
    rec = {"date": "x", "gpu": "x", "sm": "x", "rows": rows, "conclusion": d.conclusion(rows),
           "deck_claim_speedup": d.DECK_CLAIM}
    assert d.check_record(rec) == [], d.check_record(rec)
    assert {(r["phase"], r["impl"]) for r in rows} == {(p, v) for p in ("prefill", "decode") for v in d.VARIANTS}
