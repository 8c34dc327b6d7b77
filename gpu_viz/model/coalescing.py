"""CPU model of ``kernels/coalescing.cu`` (notebook 07): each lane's byte offset into x for every
load, computed in numpy -- the same Trace as ``gpu_viz.record.coalescing`` (and the emulator's run
of the traced kernel).  The sector and bank counts come from the offsets
(:mod:`gpu_viz.memory_access`), whoever produced them.

A pattern (:data:`PATTERNS`) names the kernel, its launch arguments and the width of a lane's load.
Every pattern does ``n`` loads: one per thread (one-trip kernels) or ``per_thread`` per thread.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Tuple

import numpy as np

from ..check import check_int
from ..trace import MODEL_SOURCE, Step, Trace

FILE = "coalescing.cu"
WARP = 32


@dataclasses.dataclass(frozen=True)
class Pattern:
    """One access pattern of ``kernels/coalescing.cu``.

    Attributes:
        name: what the notebook calls it.  kernel: the kernel.  region: its source region.
        width: bytes one lane loads.  dtype: the element type of x and y (numpy name).
        stride, offset: read_strided's arguments (elements).  per_thread: loads per thread (K).
        words: what the pattern is, in a phrase.
    """

    name: str
    kernel: str
    region: str
    width: int
    dtype: str = "float32"
    stride: int = 1
    offset: int = 0
    per_thread: int = 1
    words: str = ""


#: The patterns, in the order the notebook shows them.
PATTERNS: Dict[str, Pattern] = {p.name: p for p in (
    Pattern("stride 1", "read_strided", "strided", 4, words="lane l reads x[l]: 128 consecutive bytes"),
    Pattern("stride 2", "read_strided", "strided", 4, stride=2, words="lane l reads x[2l]: every other float"),
    Pattern("stride 4", "read_strided", "strided", 4, stride=4, words="lane l reads x[4l]"),
    Pattern("stride 32", "read_strided", "strided", 4, stride=32, words="lane l reads x[32l]: one float per line"),
    Pattern("misaligned", "read_strided", "strided", 4, offset=1, words="lane l reads x[l + 1]: shifted by 4 bytes"),
    Pattern("thread-major", "copy_thread_major", "thread_major", 4, per_thread=8,
            words="thread t copies its own 8 consecutive floats: lanes 32 bytes apart"),
    Pattern("warp-major", "copy_warp_major", "warp_major", 4, per_thread=8,
            words="the same copy, consecutive lanes on consecutive floats"),
    Pattern("AoS", "aos_x", "aos", 4, words="x of {x, y, z} structs: lanes 12 bytes apart"),
    Pattern("SoA", "soa_x", "aos", 4, words="x alone, side by side"),
    Pattern("fp16", "copy_f16", "widths", 2, dtype="float16", words="2 bytes a lane (__half)"),
    Pattern("half2", "copy_f16x2", "widths", 4, dtype="float16", words="4 bytes a lane (__half2)"),
    Pattern("16-byte", "copy_f16x8", "widths", 16, dtype="float16", words="16 bytes a lane (8 halves, uint4)"),
)}
#: The most loads a coalescing trace records (the lesson draws a few warps of it).
MAX_N = 1 << 16


def pattern(name) -> Pattern:
    """:data:`PATTERNS` [name], or ValueError naming the patterns."""
    if not isinstance(name, str) or name not in PATTERNS:
        raise ValueError(f"pattern must be one of {list(PATTERNS)}, got {name!r}")
    return PATTERNS[name]


def check_launch(pattern_name, n, block) -> Tuple[Pattern, int, int, int]:
    """``(pattern, n, block, grid)`` checked: n loads (1..:data:`MAX_N`; a multiple of per_thread),
    block 1..1024.  Raises TypeError / ValueError naming the argument."""
    p = pattern(pattern_name)
    n = check_int("n", n, 1, MAX_N)
    block = check_int("block", block, 1, 1024)
    if n % p.per_thread:
        raise ValueError(f"n must be a multiple of {p.per_thread} for pattern {p.name!r} ({p.per_thread} loads a "
                         f"thread), got {n}")
    threads = n // p.per_thread
    return p, n, block, -(-threads // block)


def element_bytes(p: Pattern) -> int:
    """Bytes of one element of x as the kernel indexes it (a Particle is 12, a uint4 16)."""
    return {"aos_x": 12, "copy_f16x8": 16, "copy_f16x2": 4}.get(p.kernel, np.dtype(p.dtype).itemsize)


def x_elements(p: Pattern, n: int) -> int:
    """Elements of the host array x (of ``p.dtype``) the pattern reads."""
    if p.kernel == "read_strided":
        return (n - 1) * p.stride + p.offset + 1
    if p.kernel == "aos_x":
        return 3 * n
    if p.kernel == "copy_f16x2":
        return 2 * n
    if p.kernel == "copy_f16x8":
        return 8 * n
    return n


def offsets(p: Pattern, n: int, grid: int, block: int) -> np.ndarray:
    """Byte offset into x of every load, int64 [trips * T] at index k * T + t (thread t of the grid's
    T = grid * block threads, trip k); -1 where a thread made no load (past the end)."""
    T = grid * block
    K = p.per_thread
    out = np.full(K * T, -1, np.int64)
    t = np.arange(T, dtype=np.int64)
    for k in range(K):
        if p.kernel == "copy_thread_major":
            i = t * K + k
        elif p.kernel == "copy_warp_major":
            i = k * T + t
        else:
            i = t
        live = i < n
        if p.kernel == "read_strided":
            byte = (i * p.stride + p.offset) * 4
        else:
            byte = i * element_bytes(p)
        out[k * T + t[live]] = byte[live]
    return out


def params(p: Pattern, n: int, grid: int, block: int, seed=None) -> dict:
    """The Trace's ``params`` (every producer)."""
    return {"pattern": p.name, "kernel": p.kernel, "region": p.region, "width": p.width, "dtype": p.dtype,
            "stride": p.stride, "offset": p.offset, "per_thread": p.per_thread, "n": n, "grid": grid,
            "block": block, "threads": grid * block, "seed": seed}


def steps(p: Pattern, n: int, grid: int, block: int, line=None) -> list:
    """The player's steps: one per warp request drawn (warp w of the grid, trip k)."""
    T = grid * block
    out = []
    for k in range(p.per_thread):
        for w in range(-(-T // WARP)):
            out.append(Step(f"warp {w}, trip {k}" if p.per_thread > 1 else f"warp {w}", p.region, line,
                            {"warp": w, "trip": k}))
    return out


def trace(x: np.ndarray, pattern: str = "stride 1", n: int = 256, block: int = 128, *, line=None,
          seed=None) -> Trace:
    """Model of the traced kernel of ``pattern`` on ``x``: every load's byte offset, and y (the
    elements loaded, in the kernel's order)."""
    p, n, block, grid = check_launch(pattern, n, block)
    x = np.asarray(x)
    if x.ndim != 1 or x.dtype != np.dtype(p.dtype) or x.size != x_elements(p, n):
        raise TypeError(f"x must be a 1-D {p.dtype} array of {x_elements(p, n)} elements for pattern {p.name!r}, got "
                        f"{x.dtype} of shape {x.shape}")
    off = offsets(p, n, grid, block)
    return Trace(kernel=p.kernel, params=params(p, n, grid, block, seed),
                 arrays={"offsets": off, "y": expected_y(p, x, n)}, source=MODEL_SOURCE,
                 provenance=_model_label(), steps=steps(p, n, grid, block, line))


def expected_y(p: Pattern, x, n: int, xp=np):
    """What y holds after the kernel (y's dtype: float32, or float16 for the fp16 patterns); ``xp``
    is the array module of x (numpy, or cupy for a check on the device)."""
    if p.kernel == "read_strided":
        return x[xp.arange(n, dtype=xp.int64) * p.stride + p.offset].copy()
    if p.kernel == "aos_x":
        return x[0::3][:n].copy()
    return x.copy()


def _model_label() -> str:
    from .. import backend

    return backend.MODEL_LABEL
