"""Notebook 10 (RMSNorm's four phases): its exercises."""
from __future__ import annotations

from typing import Dict

from ..claims import inflight
from .core import PREDICT, Exercise, register
from .numbers import MiB, _placeholder, _solution, grade_number

# == 08: RMSNorm ======================================================================================

M08, D08 = inflight.M, inflight.N


def _check_bytes(answer):
    x = M08 * D08 * 2
    want = 2 * x + D08 * 2
    # a byte count is exact: a relative tolerance would hide w's 4 KiB beside x's 64 MiB
    return grade_number("rmsnorm_four_phases.bytes", answer, want, 1e-9, "bytes that must move", {
        f"you left out the weight w: its {D08 * 2:,} bytes ({D08} fp16) are read too, once (every row "
        "then finds it in L1/L2).": 2 * x,
        "you counted w once per row: it is read from memory once, then every row hits it in L1/L2.": 3 * x,
        "you counted x twice: the kernel reads it twice, but the second read hits L1/L2; the fewest "
        "bytes count it once.": 3 * x + D08 * 2,
        "those are float32 sizes: the tensors are fp16.": 2 * (2 * x + D08 * 2),
        "you left out the output y: it is written to memory too.": x + D08 * 2,
        "that is MiB: the question asks for bytes.": want / MiB,
    }, [])


register(Exercise(
    "rmsnorm_four_phases.bytes", "10_rmsnorm_four_phases", PREDICT, "Bytes RMSNorm must move",
    f"**Exercise.** RMSNorm of `x` [{M08}, {D08}] fp16 with weight `w` [{D08}] fp16, output `y` like `x`. "
    "The fewest bytes that must move?",
    "from gpu_viz import exercises as ex\nanswer = None   # FILL ME IN: bytes\nex.check('rmsnorm_four_phases.bytes', answer)",
    f"from gpu_viz import exercises as ex\nM, d = {M08}, {D08}\nanswer = 2 * M * d * 2 + d * 2   # x in, y out, w once\n"
    "ex.check('rmsnorm_four_phases.bytes', answer).require()",
    "## 3. Four phases on the silicon", lambda: {"M": M08, "d": D08, "dtype": "float16"}, _check_bytes,
    ("x counted twice", "fp32 sizes", "output left out")))


def _given_warp_loads() -> Dict:
    return {"d": 3000, "block": 1024}


def _check_warp_loads(answer):
    g = _given_warp_loads()
    d, block = g["d"], g["block"]
    passes = -(-d // block)
    # a warp issues the load of a pass when any of its lanes still has an element: i = pass*block + t < d
    want = sum(-(-min(block, d - p * block) // 32) for p in range(passes))
    return grade_number("rmsnorm_four_phases.warp_loads", answer, want, 1e-9, "warp-load instructions of x in phase 1", {
        "that counts every warp on the last pass: a warp whose 32 lanes are all past d skips the load.":
            passes * (block // 32),
        "that is the element count: one warp-instruction loads 32 neighbouring elements.": d,
        "that is one thread's loads (the passes); the block has block / 32 warps issuing them.": passes,
    }, [f"phase 1 at d = {d}, block = {block}: {passes} passes of the grid-stride loop"])


register(Exercise(
    "rmsnorm_four_phases.warp_loads", "10_rmsnorm_four_phases", PREDICT, "Warp-loads in phase 1",
    "**Exercise: predict.** Phase 1 at `d = g['d']` features and `block = g['block']` threads: how many "
    "warp-level load instructions of `x` does the block issue (a warp issues a load when at least one "
    "of its lanes has an element)?",
    _placeholder("rmsnorm_four_phases.warp_loads", "warp-load instructions"),
    _solution("rmsnorm_four_phases.warp_loads", "-(-g['d'] // 32)   # each warp-load covers 32 neighbouring elements"),
    "### Phase 2", _given_warp_loads, _check_warp_loads,
    ("every warp on the last pass", "the element count", "one thread's loads")))
