"""Notebook 13 (the fused RMSNorm + SiLU gate): its exercises."""
from __future__ import annotations

from . import core as _core
from .core import PREDICT, Exercise, register
from .numbers import GiB, _copy_GBps, _placeholder, _solution, grade_number

# == 10: the fused gate ===============================================================================

M10, N10 = 16384, 4096


def _check_bytes(answer):
    t = M10 * N10 * 2
    want = 3 * t + N10 * 2
    # a byte count is exact: a relative tolerance would hide w's 8 KiB beside 384 MiB
    return grade_number("fused_rmsnorm_gate.bytes", answer, want, 1e-9, "bytes: x and gate read, y written, w once (fp16)", {
        f"you left out the weight w: its {N10 * 2:,} bytes ({N10} fp16) are read too, once.": 3 * t,
        "you counted w once per row: it is read from memory once, then every row hits it in L1/L2.": 4 * t,
        "you left out the gate: the fused op reads x AND gate.": 2 * t + N10 * 2,
        "those are float32 sizes: the tensors are fp16.": 2 * want,
        "that counts the eager version's intermediates: fused, nothing but x, gate, w and y touches memory.": 5 * t + N10 * 2,
    }, [])


def _given_floor():
    """The bytes and the copy bandwidth to divide them by: measured now on a GPU; in CPU mode the
    bench record's copy -- the run that timed the fused kernel the checker shows -- else the
    hardware record's, each named."""
    facts = {"M": M10, "N": N10, "dtype": "float16", "bytes": 3 * M10 * N10 * 2 + N10 * 2}
    if _core.live():
        return {**facts, **_copy_GBps()}
    from ..measure import records

    rec = records.newest("*-fused.json")
    if rec and rec.get("copy_GBps"):
        return {**facts, "copy_GBps": float(rec["copy_GBps"]),
                "copy_source": f"the bench run's copy, {records.label(rec)}"}
    copy = _copy_GBps()
    return {**facts, **copy, "copy_source": f"the hardware record's copy, {copy['copy_source']}"}


def _fused_gate_us():
    if _core.live():
        import torch

        from .. import ops
        from ..check import assert_close
        from ..measure import timing

        x = torch.randn(M10, N10, device="cuda", dtype=torch.float16)
        gt = torch.randn_like(x)
        w = torch.randn(N10, device="cuda", dtype=torch.float16)
        y = ops.rmsnorm_gate(x, gt, w)
        from ..rmsnorm.reference import rmsnorm as reference
        from ..rmsnorm.tolerances import tolerance

        atol, rtol = tolerance("float16")
        assert_close("rmsnorm_gate y", y, reference(x, w, 1e-6, gate=gt), atol=atol, rtol=rtol)
        t = timing.time_graph(lambda i: ops.rmsnorm_gate(x, gt, w), reps=30)
        return t.median_us, "measured just now (CUDA graph replay; inputs not rotated, may sit partly in L2)"
    from ..measure import records

    rec = records.newest("*-fused.json")
    for r in (rec or {}).get("rows", []):
        if (r.get("op"), r.get("impl"), r.get("M"), r.get("N"), r.get("dtype"), r.get("timing")) == \
                ("rmsnorm_gate", "fused", M10, N10, "float16", "kernel"):
            return float(r["median_us"]), records.label(rec)
    return None, "no recorded fused-gate row at this shape"


def _check_floor(answer):
    g = _given_floor()
    want = g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6
    peak = _core.info().peak_bandwidth_GBps
    v = grade_number("fused_rmsnorm_gate.floor", answer, want, 0.02, "microseconds at the copy kernel's bandwidth", {
        "you used the spec sheet's peak bandwidth: the reference here is the measured copy kernel.":
            g["bytes"] / (peak * 1e9) * 1e6 if peak else None,
        "you divided by GiB/s: GB/s is 1e9 bytes per second.": g["bytes"] / (g["copy_GBps"] * GiB) * 1e6,
        "that is milliseconds: multiply by 1e3.": want / 1e3,
    }, [f"copy {g['copy_GBps']:,.0f} GB/s ({g['copy_source']})"])
    if v.ok:
        us, where = _fused_gate_us()
        if us is not None:
            share = 100 * want / us
            v.details.append(f"the fused kernel: {us:,.1f} µs ({where}): it moves its bytes at {share:.0f}% "
                             "of the copy kernel's bandwidth")
            if us < want:
                v.details.append(
                    f"it beat the copy reference by {share - 100:.1f}%: the reference is a 1:1 copy (one byte "
                    "read per byte written), not a hard floor. The gate reads two bytes (x, gate) per byte it "
                    "writes, and a read-heavy stream turns the DRAM bus around between reads and writes less "
                    "often than a copy, so it can move slightly more bytes per second.")
    return v


register(Exercise(
    "fused_rmsnorm_gate.bytes", "13_fused_rmsnorm_gate", PREDICT, "Bytes the fused gate must move",
    f"**Exercise.** `y = rmsnorm(x) * w * silu(gate)` with `x`, `gate` [{M10}, {N10}] fp16 and `w` [{N10}] "
    "fp16, fused into one kernel. The fewest bytes that must move?",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: bytes\nex.check('fused_rmsnorm_gate.bytes', answer)",
    f"from gpu_viz import exercises as ex\nM, N = {M10}, {N10}\nanswer = 3 * M * N * 2 + N * 2   # x, gate in; y out; w once\n"
    "ex.check('fused_rmsnorm_gate.bytes', answer).require()",
    "## 7. Long rows, one call at a time", lambda: {"M": M10, "N": N10, "dtype": "float16"}, _check_bytes,
    ("gate left out", "fp32 sizes", "eager intermediates")))

register(Exercise(
    "fused_rmsnorm_gate.floor", "13_fused_rmsnorm_gate", PREDICT, "The fused kernel at copy speed",
    "**Exercise: predict, then run.** If the fused kernel moved its bytes at the copy kernel's bandwidth "
    "(`copy_GBps` in the exercise's given values, with the record or run it comes from), how many "
    "microseconds would it take at this shape? "
    "That is a reference time, not a hard floor: the checker then shows the kernel's measured time.\n\n"
    "*Beside it: in the H200 record the fused gate ran slightly faster than this reference (the checker "
    "says by how much). A copy reads "
    "one byte per byte it writes; the gate reads two (x and gate) per byte of y, and a read-heavy stream "
    "turns the DRAM bus around between reads and writes less often, so it can move slightly more bytes "
    "per second than the copy that sets the reference.*",
    _placeholder("fused_rmsnorm_gate.floor", "microseconds"),
    _solution("fused_rmsnorm_gate.floor", "g['bytes'] / (g['copy_GBps'] * 1e9) * 1e6"),
    "## 7. Long rows, one call at a time", _given_floor, _check_floor,
    ("spec-sheet peak", "GiB/s", "milliseconds")))
