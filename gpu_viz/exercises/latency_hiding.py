"""Notebook 04 (latency hiding): its exercises."""
from __future__ import annotations

import math

from . import core as _core
from .core import MEASURE, PREDICT, Exercise, Verdict, no_answer, register
from .numbers import _copy_GBps, _dram_latency, _placeholder, _solution, as_number, grade_number

# == 04: latency hiding ===============================================================================

COMPUTE_04 = 16
BUSY_04 = 0.9
#: The most warps per scheduler latency_hiding.hide simulates (no SM has more than 16; the slider stops at 64).
_MAX_WARPS_04 = 256


def _given_hide():
    lat = _dram_latency()
    i = _core.info()
    return {"latency_cycles": int(lat["latency_cycles"]), "latency_source": lat["latency_source"],
            "compute_per_load": COMPUTE_04, "target_busy": BUSY_04,
            "warps_per_scheduler_max": i.max_threads_per_sm // 32 // 4, "gpu": i.name}


def _fewest_warps(latency: int, compute: int, target: float) -> int:
    from ..model import latency as lm

    for w in range(1, 257):
        if lm.utilization(w, latency, compute) >= target:
            return w
    raise ValueError(f"no warp count up to 256 reaches {target:.0%} busy at {latency} cycles")


def _check_hide(answer):
    eid = "latency_hiding.hide"
    g = _given_hide()
    want = _fewest_warps(g["latency_cycles"], COMPUTE_04, BUSY_04)
    from ..model import latency as lm

    d = [f"the model (one scheduler, {COMPUTE_04} instructions per load, {g['latency_cycles']} cycles: "
         f"{g['latency_source']}) reaches {lm.utilization(want, g['latency_cycles'], COMPUTE_04):.0%} busy at {want} warps",
         f"{g['gpu']}: at most {g['warps_per_scheduler_max']} warps per scheduler (a quarter of the SM's)"]
    right = [d.pop(0)]   # "reaches N% busy at <the answer> warps": only once the learner has it
    v = as_number(eid, answer, "warps per scheduler")
    if v is None:
        return no_answer(eid, "the fewest warps per scheduler (try the slider)")
    if v < 1 or v != int(v):
        return Verdict(eid, False, f"{v:g}: a scheduler holds a whole number of warps, at least 1.", d)
    if v > _MAX_WARPS_04:
        return Verdict(eid, False, f"{v:g} warps: far more than any SM holds; the question asks for the fewest.", d)
    if v == want:
        fits = "fits" if want <= g["warps_per_scheduler_max"] else "does NOT fit: more work per load is needed"
        return Verdict(eid, True, f"{want} warps per scheduler; this GPU {fits}.", right + d)
    if v == want * 4 or v == (want - 1) * 4:
        return Verdict(eid, False, f"{v:g} is per SM: the model is ONE of the SM's four schedulers.", d)
    if v == math.ceil(g["latency_cycles"] / COMPUTE_04):
        return Verdict(eid, False, f"{v:g} = latency / compute: each warp also spends a cycle issuing its "
                       "load, so each covers compute + 1 cycles.", d)
    if v > want:
        return Verdict(eid, False, f"{v:g} warps keep it busy, but fewer do: the question asks for the fewest.", d)
    busy = lm.utilization(int(v), g["latency_cycles"], COMPUTE_04)
    # one decimal: 89.6 % must not print as "90 %" beside a 90 % target
    return Verdict(eid, False, f"with {v:g} warps the model is {100 * busy:.1f} % busy, short of the "
                   f"{BUSY_04:.0%} target.", d)


def _slider_04():
    # show_live: the slider with a static twin, so a reopened notebook says what it needs instead
    # of "model not found"
    return ("import ipywidgets as widgets\nfrom gpu_viz.model import latency as lm\n"
            "from gpu_viz.widgets import show_live\n"
            "warps = widgets.IntSlider(value=1, min=1, max=64, description='warps')\n"
            "busy = widgets.HTML()\n"
            "def show_busy(_=None):\n"
            "    busy.value = f\"{warps.value} warps: {lm.utilization(warps.value, g['latency_cycles'], "
            "g['compute_per_load']):.1%} busy\"\n"
            "warps.observe(show_busy, names='value'); show_busy()\n"
            "show_live(widgets.VBox([warps, busy]), '<p>A slider of warps per scheduler: run this cell to use it.</p>')\n")


register(Exercise(
    "latency_hiding.hide", "04_latency_hiding", MEASURE, "Warps to hide a load",
    "**Exercise: change and measure (the model).** One warp scheduler; each warp issues "
    f"`{COMPUTE_04}` instructions per load and every load takes `g['latency_cycles']` cycles. Move the "
    f"slider: what is the fewest number of warps that keeps the scheduler at least {BUSY_04:.0%} busy? "
    "Then compare with `g['warps_per_scheduler_max']`.",
    _placeholder("latency_hiding.hide", "warps per scheduler", _slider_04()),
    _solution("latency_hiding.hide", "next(w for w in range(1, 257) if lm.utilization(w, g['latency_cycles'], "
                         "g['compute_per_load']) >= g['target_busy'])",
              "from gpu_viz.model import latency as lm\n"),
    "## Measured: bandwidth vs resident warps per SM", _given_hide, _check_hide,
    ("per SM instead of per scheduler", "latency / compute without the issue cycle", "not the fewest")))


def _given_little():
    i = _core.info()
    return {**_copy_GBps(), **_dram_latency(), "sm_count": i.sm_count, "gpu": i.name}


def _check_little(answer):
    g = _given_little()
    want = g["copy_GBps"] * g["latency_ns"] / g["sm_count"]
    cyc_ns = g["latency_cycles"] / g["latency_ns"]
    return grade_number("latency_hiding.little", answer, want, 0.02, "bytes in flight per SM", {
        "that is the whole chip: divide by the SM count for one SM.": want * g["sm_count"],
        "you used the latency in cycles: 1 GB/s x 1 ns = 1 byte, so use nanoseconds.": want * cyc_ns,
        "that is KiB: the question asks for bytes.": want / 1024,
        "that is KB (or a unit prefix off): GB/s x ns is already bytes (1e9 B/s x 1e-9 s).": want / 1e3,
    }, [f"copy {g['copy_GBps']:,.0f} GB/s ({g['copy_source']}); DRAM latency {g['latency_ns']:,.0f} ns "
        f"({g['latency_source']}); {g['sm_count']} SMs"])


register(Exercise(
    "latency_hiding.little", "04_latency_hiding", PREDICT, "Little's law per SM",
    "**Exercise: Little's law.** To sustain the copy bandwidth `g['copy_GBps']` GB/s when a DRAM load "
    "takes `g['latency_ns']` ns, how many bytes must each SM have in flight?",
    _placeholder("latency_hiding.little", "bytes per SM"),
    _solution("latency_hiding.little", "g['copy_GBps'] * g['latency_ns'] / g['sm_count']"),
    "## Your turn, in the notebook", _given_little, _check_little,
    ("whole chip", "cycles not ns", "KiB", "1e3 off")))
