"""GPU producer of notebook 06's grid-stride loop: the traced build of ``kernels/grid_stride.cu``.

Data path: ``kernels/grid_stride.cu`` (traced build: who handled each element, on which pass)
--(:func:`trace`)--> :class:`gpu_viz.trace.Trace`, the layout of ``gpu_viz.model.grid_stride.trace``
--> ``gpu_viz.frames.grid_stride``.  :func:`scale` is the plain kernel as a library call.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import backend, device, kernels
from ..check import assert_close, assert_equal, check_f32
from ..model import grid_stride as model
from ..trace import GPU_SOURCE, Trace

FILE, KERNEL = "grid_stride.cu", "scale_grid_stride"


def trace(x: np.ndarray, alpha: float = 2.0, grid: int = 1, block: int = model.DECK_THREADS, *,
          body_line=None, loop_line=None, seed=None) -> Trace:
    """Launch the traced ``scale_grid_stride`` and return its Trace (the model's layout).

    Poisons y (NaN), block/thread/pass (-1) and zeroes visits before the launch; checks after it
    that every element was visited exactly once and y == alpha * x (float64 reference).

    Raises:
        GPUUnavailable in CPU mode; AssertionError on any wrong, missing or repeated element.
    """
    x = model.as_f32("x", x)
    n = x.shape[0]
    n, grid, block = model.check_shape(n, grid, block)
    a32 = check_f32("alpha", alpha)
    cp = backend.require_cupy("the traced grid-stride loop")
    size = max(n, 1)  # cupy cannot hand a kernel a zero-size buffer's pointer reliably
    dx = cp.asarray(x) if n else cp.zeros(1, cp.float32)
    dy = cp.full(size, np.nan, cp.float32)
    blk, thr, pss = (cp.full(size, -1, cp.int32) for _ in range(3))
    visits = cp.zeros(size, cp.int32)
    kernels.bind_record(kernels.load(FILE, traced=True),
                        [("block", blk), ("thread", thr), ("pass", pss), ("visits", visits)])
    kernels.function(FILE, KERNEL, traced=True)((grid,), (block,), (dx, dy, a32, np.int64(n)))
    y, blk, thr, pss, visits = (a.get()[:n] for a in (dy, blk, thr, pss, visits))
    assert_equal("visits (each element exactly once)", visits, np.ones(n, np.int32), seed=seed)
    assert_close("y", y, np.float64(a32) * x.astype(np.float64), rtol=2.0 ** -24, seed=seed)
    return Trace(kernel=KERNEL, params=model.params(n, grid, block, a32, seed),
                 arrays={"x": x.copy(), "y": y, "block": blk, "thread": thr, "pass": pss, "visits": visits},
                 source=GPU_SOURCE, provenance=backend.live_label(),
                 steps=model.grid_stride_steps(n, grid, block, body_line, loop_line))


def scale(x, alpha: float = 2.0, grid: Optional[int] = None, block: int = 256, out=None):
    """y = alpha * x with the plain ``scale_grid_stride`` kernel (a CuPy float32 array in, one out).

    ``grid`` defaults to 4 blocks per SM, whatever n: the loop covers the rest.  ``out``: a CuPy
    float32 array of x's shape to write into (no allocation: safe inside CUDA-graph capture).
    """
    cp = backend.require_cupy("scale()")
    if not isinstance(x, cp.ndarray) or x.dtype != cp.float32 or x.ndim != 1:
        raise TypeError(f"x must be a 1-D cupy float32 array, got {type(x).__name__}")
    _n, checked_grid, block = model.check_shape(int(x.size), grid or 1, block)
    a32 = check_f32("alpha", alpha)
    grid = checked_grid if grid else 4 * device.current().sm_count
    if out is not None and (not isinstance(out, cp.ndarray) or out.dtype != cp.float32 or out.shape != x.shape):
        raise TypeError(f"out must be a cupy float32 array of shape {x.shape}")
    y = cp.full_like(x, np.nan) if out is None else out
    if x.size:
        kernels.function(FILE, KERNEL)((grid,), (block,), (x, y, a32, np.int64(x.size)))
    return y
