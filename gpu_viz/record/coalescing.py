"""GPU producer of notebook 07's coalescing lesson: the traced build of ``kernels/coalescing.cu``.

Data path: ``kernels/coalescing.cu`` (traced build: every load's address, ``rec.addr``)
--(:func:`trace`)--> :class:`gpu_viz.trace.Trace` (each load's byte offset into x: the address
minus x's) --> :mod:`gpu_viz.memory_access` (sectors per request) and
``gpu_viz.frames.coalescing``.  The layout is ``gpu_viz.model.coalescing.trace``'s; inside
:func:`gpu_viz.emulator.emulated` the same code runs the kernel's PTX on the CPU.
"""
from __future__ import annotations

import numpy as np

from .. import backend, kernels
from ..check import assert_equal
from ..model import coalescing as model
from ..trace import GPU_SOURCE, Trace


def launch_args(p: "model.Pattern", dx, dy, n: int) -> tuple:
    """The kernel arguments of pattern ``p`` after x and y (n loads)."""
    if p.kernel == "read_strided":
        return (dx, dy, np.int64(n), np.int32(p.stride), np.int32(p.offset))
    if p.kernel in ("copy_thread_major", "copy_warp_major"):
        return (dx, dy, np.int64(n), np.int32(p.per_thread))
    return (dx, dy, np.int64(n))


def y_elements(p: "model.Pattern", n: int) -> int:
    """Elements of y (of ``p.dtype``) the kernel writes."""
    return {"copy_f16x2": 2 * n, "copy_f16x8": 8 * n}.get(p.kernel, n)


def trace(x: np.ndarray, pattern: str = "stride 1", n: int = 256, block: int = 128, *, line=None,
          seed=None) -> Trace:
    """Launch the traced kernel of ``pattern`` (:data:`gpu_viz.model.coalescing.PATTERNS`) for ``n``
    loads and return its Trace: ``offsets`` (int64: each load's byte offset into x, -1 where a
    thread made none) and ``y``.

    Poisons y (NaN) and the address record (all ones) before the launch; checks after it that y
    holds exactly the elements the pattern reads.

    Raises:
        TypeError / ValueError: a bad pattern, n, block or x (naming it).  GPUUnavailable in CPU
        mode (outside the emulator).  AssertionError: y or an address came back wrong.
    """
    p, n, block, grid = model.check_launch(pattern, n, block)
    x = np.asarray(x)
    if x.ndim != 1 or x.dtype != np.dtype(p.dtype) or x.size != model.x_elements(p, n):
        raise TypeError(f"x must be a 1-D {p.dtype} array of {model.x_elements(p, n)} elements for pattern "
                        f"{p.name!r}, got {x.dtype} of shape {x.shape}")
    cp = backend.require_cupy("the traced coalescing kernels")
    T = grid * block
    dx = cp.asarray(x)
    dy = cp.full(y_elements(p, n), np.nan, getattr(cp, p.dtype))
    addr = cp.full(p.per_thread * T, np.iinfo(np.uint64).max, cp.uint64)
    kernels.bind_record(kernels.load(model.FILE, traced=True), [("addr", addr)])
    # the fp16 kernels take x as __half2 / uint4: the same bytes, only the pointer is passed
    kernels.function(model.FILE, p.kernel, traced=True)((grid,), (block,), launch_args(p, dx, dy, n))
    got = addr.get()
    y = dy.get()
    base = int(dx.data.ptr)
    unset = got == np.iinfo(np.uint64).max
    offsets = np.where(unset, -1, got.astype(np.int64) - base).astype(np.int64)
    assert_equal("y (the elements the pattern reads)", y.view(np.uint16) if p.dtype == "float16" else y,
                 model.expected_y(p, x, n).view(np.uint16) if p.dtype == "float16" else model.expected_y(p, x, n),
                 seed=seed)
    return Trace(kernel=p.kernel, params=model.params(p, n, grid, block, seed), arrays={"offsets": offsets, "y": y},
                 source=GPU_SOURCE, provenance=backend.live_label(), steps=model.steps(p, n, grid, block, line))
