"""Notebook 01 (the whole chip): its exercises."""
from __future__ import annotations

from .. import backend
from . import core as _core
from .core import PREDICT, Exercise, register
from .numbers import GiB, MiB, _copy_GBps, _placeholder, _solution, grade_number

# == 01: the whole chip ==============================================================================

N01 = 1 << 26


def _given_bytes():
    return {"n": N01, "dtype": "float32", "op": "y = x + 1 (y a new array)"}


def _check_bytes(answer):
    n = N01
    want = 2 * 4 * n
    return grade_number("whole_chip.bytes", answer, want, 1e-3, "bytes that cross the memory bus", {
        "you counted one direction only: x is read AND y is written, both cross the memory bus.": 4 * n,
        "that is the element count: each float32 is 4 bytes.": n,
        "that counts the elements of x and y, not their bytes (x 4 bytes each).": 2 * n,
        "those are 2-byte elements: float32 is 4 bytes.": 2 * 2 * n,
        "that is MiB: the question asks for bytes.": want / MiB,
        "that is GiB: the question asks for bytes.": want / GiB,
    }, [])


def _given_time():
    return {"bytes": 2 * 4 * N01, **_copy_GBps()}


def _check_time(answer):
    g = _given_time()
    want = g["bytes"] / (g["copy_GBps"] * 1e9) * 1e6
    details = [f"copy bandwidth {g['copy_GBps']:,.0f} GB/s: {g['copy_source']}"]
    v = grade_number("whole_chip.time", answer, want, 0.02, "microseconds at the copy bandwidth", {
        "you divided by GiB/s (2^30): GB/s means 1e9 bytes per second.": g["bytes"] / (g["copy_GBps"] * GiB) * 1e6,
        "that is seconds: the question asks for microseconds.": want / 1e6,
        "that is milliseconds: the question asks for microseconds.": want / 1e3,
        "that moves only half the bytes: x is read and y written.": want / 2,
    }, details)
    if v.ok and _core.live():
        from ..measure import timing

        cp = backend.require_cupy("whole_chip.time's run")

        x = cp.random.standard_normal(N01, dtype=cp.float32)
        y = cp.empty_like(x)
        t = timing.time_calls(lambda i: cp.add(x, 1.0, out=y), reps=20, warmup=3, framework="cupy")
        if not bool(cp.all(y == x + 1)):
            raise AssertionError("whole_chip.time: y = x + 1 came back wrong on this GPU")
        v.details.append(f"measured just now: y = x + 1 took {t.median_us:,.0f} µs median "
                         f"(p10 {t.p10_us:,.0f}, p90 {t.p90_us:,.0f}), {100 * want / t.median_us:.0f}% of the copy roofline")
    return v


register(Exercise(
    "whole_chip.bytes", "01_whole_chip", PREDICT, "Bytes an op must move",
    "**Exercise: bytes an op must move.** `y = x + 1` over `n = 2**26` float32 elements, `y` a new "
    "array. What is the fewest number of bytes that must cross the memory bus? (The fewest: each input "
    "read once, each output written once.)",
    _placeholder("whole_chip.bytes", "bytes"), _solution("whole_chip.bytes", "2 * 4 * g['n']   # read x, write y, 4 bytes each"),
    "## The host link", _given_bytes, _check_bytes,
    ("one direction only", "element count", "fp16 bytes", "MiB not bytes")))

register(Exercise(
    "whole_chip.time", "01_whole_chip", PREDICT, "The copy roofline",
    "**Exercise: predict, then run.** At this GPU's device-to-device copy bandwidth (`g['copy_GBps']`, "
    "GB/s = 1e9 bytes/s), how many microseconds must `y = x + 1` over those bytes take at least? On a GPU "
    "the checker then times it.",
    _placeholder("whole_chip.time", "microseconds"),
    _solution("whole_chip.time", "g['bytes'] / (g['copy_GBps'] * 1e9) * 1e6"),
    "## The host link", _given_time, _check_time, ("GiB for GB", "seconds or ms", "half the bytes")))
