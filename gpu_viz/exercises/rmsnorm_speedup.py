"""Notebook 11 (RMSNorm's speed-up): its exercises."""
from __future__ import annotations

from typing import Dict

from ..claims import inflight
from . import core as _core
from .core import MEASURE, PREDICT, Exercise, Verdict, register
from .numbers import _placeholder, _solution, grade_number


def _check_block_08(block) -> int:
    """``block`` as a block size of the deck kernel: an int in 1..1024 (the block cap).

    Raises:
        ValueError / TypeError: naming ``block`` and what was expected.
    """
    from ..check import check_int

    return check_int("block", block, 1, _core.info().max_threads_per_block)


def _given_inflight(block: int = 1024):
    """The facts of rmsnorm_speedup.inflight at ``block`` threads per block (1..1024): notebook 11's Little's-law
    facts (:func:`gpu_viz.claims.inflight.facts_at`, which the claim quotes too).

    Raises:
        ValueError / TypeError: ``block`` is not a block size (an int in 1..1024).
    """
    return inflight.facts_at(_check_block_08(block))


_deck_measured_GBps = inflight.deck_GBps


def _check_inflight(answer, block: int = 1024):
    eid = "rmsnorm_speedup.inflight"
    try:
        block = _check_block_08(block)
    except (TypeError, ValueError) as exc:
        return Verdict(eid, False, f"{exc} (a block holds 1 to 1024 threads).")
    g = _given_inflight(block)
    want = g["resident_threads_per_sm"] * g["bytes_per_load"]
    need = g["copy_GBps"] * g["latency_ns"] / g["sm_count"]
    pred = min(g["copy_GBps"], want * g["sm_count"] / g["latency_ns"])
    # the facts' provenance (in CPU mode the committed record's GPU and date): copy and latency, once if one run
    sources = list(dict.fromkeys([g["copy_source"], g["latency_source"]]))
    d = [f"Little's law: this GPU needs {need:,.0f} B in flight per SM for {g['copy_GBps']:,.0f} GB/s; "
         f"{want:,} B predicts at most {pred:,.0f} GB/s ({100 * pred / g['copy_GBps']:.0f}% of copy) "
         f"[{'; '.join(sources)}]"]
    v = grade_number(eid, answer, want, 1e-9, "bytes in flight per SM", {
        "that counts one block only: the SM holds several blocks at once.": block * g["bytes_per_load"]
            if block * g["bytes_per_load"] != want else None,
        "those are float32 loads: the deck kernel loads fp16 x, 2 bytes per thread.": want * 2,
        "that is per warp: every resident thread has its own load in flight.": want / 32,
    }, [], reveal=d)   # d's Little's-law line quotes the answer: shown only once the learner has it
    if v.ok:
        gbps, where = _deck_measured_GBps(block)
        if gbps is not None:
            v.details.append(f"the deck kernel: {gbps:,.0f} GB/s ({where}) -- block size does not change the "
                             "bytes in flight once the SM is full of threads; wider loads (8 fp16 per thread) do.")
    return v


register(Exercise(
    "rmsnorm_speedup.inflight", "11_rmsnorm_speedup", MEASURE, "The deck kernel against Little's law",
    "**Exercise: change and measure.** A model of phase 1: each thread of the deck kernel has one 2-byte "
    "fp16 load of `x` in flight at a time (the compiler may overlap the loop's two loads, which would "
    "double it). With `g['resident_threads_per_sm']` threads resident per SM at "
    "`block = 1024`, how many bytes does one SM have in flight? Then change the block size: "
    "`ex.given('rmsnorm_speedup.inflight', block=256)` and `ex.check('rmsnorm_speedup.inflight', answer, block=256)`. Does it "
    "change the bytes in flight?",
    _placeholder("rmsnorm_speedup.inflight", "bytes in flight per SM"),
    _solution("rmsnorm_speedup.inflight", "g['resident_threads_per_sm'] * g['bytes_per_load']"),
    "## 2. Where data lives", _given_inflight, _check_inflight,
    ("one block only", "fp32 loads", "per warp")))


def _given_amdahl() -> Dict:
    """The norms' share of an eager decoder step and the fused norm's own speed-up, from the decoder
    record (fp16 prefill) when one is committed, else the deck's 7.2x and a share stated as an example."""
    from ..claims import decoder

    rec = decoder.recorded()
    rows = [r for r in (rec or {}).get("rows", []) if r.get("dtype") == "float16" and r.get("phase") == "prefill"
            and "median_us" in r]
    e = next((r for r in rows if r.get("impl") == "eager" and r.get("norm_share") is not None), None)
    f = next((r for r in rows if r.get("impl") == "fused" and r.get("norms_median_us")), None)
    if e and f:
        from ..measure import records

        return {"norm_share": float(e["norm_share"]), "norm_speedup": e["norms_median_us"] / f["norms_median_us"],
                "source": f"the decoder record, fp16 prefill, {records.label(rec)}"}
    return {"norm_share": 0.05, "norm_speedup": 7.2,
            "source": "an example: the deck's 7.2x and a 5% share (no decoder record is committed)"}


def _check_amdahl(answer):
    g = _given_amdahl()
    s, k = g["norm_share"], g["norm_speedup"]
    want = 1.0 / ((1.0 - s) + s / k)
    return grade_number("rmsnorm_speedup.amdahl", answer, want, 2e-3, "the whole step's speed-up", {
        "that is the norms' own speed-up: the rest of the step does not get faster.": k,
        "that is the Amdahl bound, for norms that take no time at all; yours still take 1/k of theirs.":
            1.0 / (1.0 - s),
        "you sped up the rest of the step instead of the norms: (1 - s) / k + s.": 1.0 / ((1.0 - s) / k + s),
        "that is the time saved as a fraction, s (1 - 1/k), not the speed-up.": s * (1.0 - 1.0 / k),
    }, [f"facts: {g['source']}"])


register(Exercise(
    "rmsnorm_speedup.amdahl", "11_rmsnorm_speedup", PREDICT, "What a faster norm gives the whole step",
    "**Exercise: predict.** The three norms take a fraction `g['norm_share']` of an eager decoder step, "
    "and the fused op makes them `g['norm_speedup']` times faster. How many times faster is the whole "
    "step (Amdahl's law)?",
    _placeholder("rmsnorm_speedup.amdahl", "the step's speed-up"),
    _solution("rmsnorm_speedup.amdahl", "1 / ((1 - g['norm_share']) + g['norm_share'] / g['norm_speedup'])"),
    "## Takeaways", _given_amdahl, _check_amdahl,
    ("the norms' own speed-up", "the Amdahl bound", "the wrong part sped up", "time saved")))
