"""CPU model of ``kernels/banks.cu`` (notebook 07): each lane's shared-memory byte offset at every
recorded access, computed in numpy -- the same Trace as ``gpu_viz.record.banks`` (and the
emulator's run of the traced kernel).  Banks and wavefronts come from the offsets
(:mod:`gpu_viz.memory_access`), whoever produced them.

Cases (:data:`CASES`): ``shared_stride`` at one stride (one site: the read), and the two tiled
transposes (sites 0-3: the tile's stores, one per j; sites 4-7: its loads).
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Tuple

import numpy as np

from ..check import check_int
from ..trace import MODEL_SOURCE, Step, Trace

FILE = "banks.cu"
WARP = 32
TILE, ROWS = 32, 8
#: shared_stride's array: 1024 floats; one warp per block.
STRIDE_WORDS = 1024


@dataclasses.dataclass(frozen=True)
class Case:
    """One bank lesson case: ``kernel``, its source region, ``stride`` (shared_stride) and what it is."""

    name: str
    kernel: str
    region: str
    stride: int = 0
    words: str = ""


#: The cases, in the order the notebook shows them.
CASES: Dict[str, Case] = {c.name: c for c in (
    Case("stride 1", "shared_stride", "stride", 1, "lane l reads word l: 32 lanes, 32 banks"),
    Case("stride 2", "shared_stride", "stride", 2, "lane l reads word 2l: two lanes a bank"),
    Case("stride 4", "shared_stride", "stride", 4, "lane l reads word 4l: four lanes a bank"),
    Case("stride 32", "shared_stride", "stride", 32, "lane l reads word 32l: every lane in bank 0"),
    Case("stride 33", "shared_stride", "stride", 33, "lane l reads word 33l: odd stride, 32 banks"),
    Case("broadcast", "shared_stride", "stride", 0, "every lane reads word 0: one word, shared"),
    Case("tile 32x32", "transpose_tiled", "tiled", 0, "a column of a 32x32 tile: 32 words 32 apart"),
    Case("tile 32x33", "transpose_padded", "padded", 0, "a column of a 32x33 tile: 32 words 33 apart"),
)}
#: The largest transpose a bank trace records (rows x cols floats).
MAX_ELEMENTS = 1 << 16


def case(name) -> Case:
    """:data:`CASES` [name], or ValueError naming the cases."""
    if not isinstance(name, str) or name not in CASES:
        raise ValueError(f"case must be one of {list(CASES)}, got {name!r}")
    return CASES[name]


def check_launch(case_name, rows, cols) -> Tuple[Case, int, int, tuple, tuple]:
    """``(case, rows, cols, grid, block)`` checked (the transposes: 1 <= rows * cols <= MAX_ELEMENTS).

    Raises:
        TypeError / ValueError naming the argument.
    """
    c = case(case_name)
    rows = check_int("rows", rows, 1, MAX_ELEMENTS)
    cols = check_int("cols", cols, 1, MAX_ELEMENTS)
    if rows * cols > MAX_ELEMENTS:
        raise ValueError(f"rows * cols must be <= {MAX_ELEMENTS} floats for a trace, got {rows} * {cols}")
    if c.kernel == "shared_stride":
        return c, rows, cols, (1,), (WARP,)
    return c, rows, cols, (-(-cols // TILE), -(-rows // TILE)), (TILE, ROWS)


def sites(c: Case) -> int:
    """Access sites recorded: 1 (the strided read) or 8 (the tile's 4 stores and 4 loads)."""
    return 1 if c.kernel == "shared_stride" else 8


def offsets(c: Case, rows: int, cols: int) -> np.ndarray:
    """Byte offset in the shared array of every recorded access, int32 [sites * T] at index
    site * T + t (t: the thread's number in the grid, blocks in x-then-y order); -1 where the
    thread made no access (outside the matrix)."""
    _c, rows, cols, grid, block = check_launch(c.name, rows, cols)
    if c.kernel == "shared_stride":
        lane = np.arange(WARP)
        return ((lane * c.stride) & (STRIDE_WORDS - 1)).astype(np.int32) * 4
    gx, gy = grid
    nthreads = TILE * ROWS
    T = gx * gy * nthreads
    width = TILE + (1 if c.kernel == "transpose_padded" else 0)
    out = np.full(8 * T, -1, np.int32)
    tid = np.arange(nthreads)
    tx, ty = tid % TILE, tid // TILE
    for by in range(gy):
        for bx in range(gx):
            g = (by * gx + bx) * nthreads + tid
            for j4 in range(4):
                j = j4 * ROWS
                x, y = bx * TILE + tx, by * TILE + ty
                ok = (x < cols) & (y + j < rows)
                out[j4 * T + g[ok]] = (((ty + j) * width + tx) * 4)[ok]
                x, y = by * TILE + tx, bx * TILE + ty
                ok = (x < rows) & (y + j < cols)
                out[(4 + j4) * T + g[ok]] = ((tx * width + ty + j) * 4)[ok]
    return out


def params(c: Case, rows: int, cols: int, seed=None) -> dict:
    _c, rows, cols, grid, block = check_launch(c.name, rows, cols)
    threads = int(np.prod(grid)) * int(np.prod(block))
    return {"case": c.name, "kernel": c.kernel, "region": c.region, "stride": c.stride, "rows": rows, "cols": cols,
            "grid": list(grid), "block": list(block), "threads": threads, "sites": sites(c), "seed": seed}


def steps(c: Case, line=None) -> list:
    if c.kernel == "shared_stride":
        return [Step(f"lane l reads s[(l * {c.stride}) % 1024]", c.region, line, {"site": 0})]
    return ([Step(f"store row j = {8 * k}", c.region, line, {"site": k}) for k in range(4)]
            + [Step(f"load column j = {8 * k}", c.region, line, {"site": 4 + k}) for k in range(4)])


def expected_out(c: Case, x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """What ``out`` holds after the kernel."""
    if c.kernel == "shared_stride":
        lane = np.arange(WARP)
        return ((lane * c.stride) & (STRIDE_WORDS - 1)).astype(np.float32)
    return np.ascontiguousarray(x.reshape(rows, cols).T).reshape(-1)


def trace(x: np.ndarray, case: str = "tile 32x32", rows: int = 32, cols: int = 32, *, line=None, seed=None) -> Trace:
    """Model of the traced kernel of ``case``: every recorded access's shared offset, and out."""
    c, rows, cols, _grid, _block = check_launch(case, rows, cols)
    x = np.asarray(x)
    if x.dtype != np.float32 or x.shape != (rows * cols,):
        raise TypeError(f"x must be a 1-D float32 array of rows * cols = {rows * cols} elements, got {x.dtype} "
                        f"of shape {x.shape}")
    from .. import backend

    return Trace(kernel=c.kernel, params=params(c, rows, cols, seed),
                 arrays={"offsets": offsets(c, rows, cols), "out": expected_out(c, x, rows, cols)},
                 source=MODEL_SOURCE, provenance=backend.MODEL_LABEL, steps=steps(c, line))
