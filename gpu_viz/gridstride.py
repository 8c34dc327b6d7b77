"""Grid-stride loops (notebook 06): who handled which element, on which pass.

Data path: ``kernels/grid_stride.cu`` (``scale_grid_stride_traced``) --(:func:`grid_stride_gpu`)-->
:class:`gpu_viz.trace.Trace` --> ``gpu_viz.frames_gridstride`` --> Animation.  Without a GPU,
``gpu_viz.model.grid_stride`` runs the same loop in numpy: every field is deterministic, so the
model's Trace and the silicon's are equal bit for bit.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import backend, kernels
from .model import grid_stride as model
from .trace import GPU_SOURCE, Trace
from .traced import check_close, check_equal, random_f32, region_lines

FILE, REGION = "grid_stride.cu", "grid_stride"
DECK_CLAIM = "2048 elements but only 1024 threads: each thread processes several elements in sequence"


def source_lines():
    """(loop line, body line): 1-based lines in region ``grid_stride`` the player highlights."""
    loop, body = region_lines(FILE, REGION, ["i += stride", "y[i] ="])
    return loop, body


def grid_stride_gpu(x: np.ndarray, alpha: float = 2.0, grid: int = 1, block: int = model.DECK_THREADS) -> Trace:
    """Launch ``scale_grid_stride_traced`` and return its Trace (the model's layout).

    Poisons y (NaN), block/thread/pass (-1) and zeroes visits before the launch; checks after it
    that every element was visited exactly once and y == alpha * x (float64 reference).

    Raises:
        GPUUnavailable in CPU mode; AssertionError on any wrong, missing or repeated element.
    """
    import cupy as cp

    backend.require_gpu("the traced grid-stride loop")
    x = np.asarray(x)
    if x.ndim != 1 or x.dtype != np.float32:
        raise TypeError(f"x must be a 1-D float32 array, got shape {x.shape} dtype {x.dtype}")
    n = x.shape[0]
    model.check_shape(n, grid, block)
    a32 = np.float32(alpha)
    size = max(n, 1)  # cupy cannot hand a kernel a zero-size buffer's pointer reliably
    dx = cp.asarray(x) if n else cp.zeros(1, cp.float32)
    dy = cp.full(size, np.nan, cp.float32)
    blk, thr, pss = (cp.full(size, -1, cp.int32) for _ in range(3))
    visits = cp.zeros(size, cp.int32)
    fn = kernels.function(FILE, "scale_grid_stride_traced")
    fn((grid,), (block,), (dx, dy, a32, np.int64(n), blk, thr, pss, visits))
    y, blk, thr, pss, visits = (a.get()[:n] for a in (dy, blk, thr, pss, visits))
    check_equal("visits (each element exactly once)", visits, np.ones(n, np.int32))
    check_close("y", y, np.float64(a32) * x.astype(np.float64), rtol=2.0 ** -24)
    loop, body = source_lines()
    return Trace(kernel="scale_grid_stride_traced",
                 params={"n": n, "grid": grid, "block": block, "threads": grid * block,
                         "passes": model.passes(n, grid * block), "alpha": float(a32)},
                 arrays={"x": x.copy(), "y": y, "block": blk, "thread": thr, "pass": pss, "visits": visits},
                 source=GPU_SOURCE, provenance=backend.live_label(),
                 steps=model.grid_stride_steps(n, grid, block, body, loop))


def grid_stride_trace(n: int = model.DECK_N, grid: int = 1, block: int = model.DECK_THREADS,
                      alpha: float = 2.0, seed: Optional[int] = None) -> Trace:
    """y = alpha * x over ``n`` fresh random floats with ``grid`` x ``block`` threads: live or model.

    Defaults are the deck's: n = 2048 elements, one block of 1024 threads (2 passes).
    """
    model.check_shape(n, grid, block)
    x = random_f32(n, seed)
    if backend.has_gpu():
        return grid_stride_gpu(x, alpha, grid, block)
    loop, body = source_lines()
    return model.grid_stride(x, alpha, grid, block, body_line=body, loop_line=loop)


def scale(x, alpha: float = 2.0, grid: Optional[int] = None, block: int = 256, out=None):
    """y = alpha * x with the plain ``scale_grid_stride`` kernel (a CuPy float32 array in, one out).

    ``grid`` defaults to 4 blocks per SM, whatever n: the loop covers the rest.  ``out``: a CuPy
    float32 array of x's shape to write into (no allocation: safe inside CUDA-graph capture).
    """
    import cupy as cp
    from . import device

    backend.require_gpu("scale()")
    if not isinstance(x, cp.ndarray) or x.dtype != cp.float32 or x.ndim != 1:
        raise TypeError(f"x must be a 1-D cupy float32 array, got {type(x).__name__}")
    model.check_shape(int(x.size), grid or 1, block)
    grid = grid or 4 * device.current().sm_count
    if out is not None and (not isinstance(out, cp.ndarray) or out.dtype != cp.float32 or out.shape != x.shape):
        raise TypeError(f"out must be a cupy float32 array of shape {x.shape}")
    y = cp.full_like(x, np.nan) if out is None else out
    if x.size:
        kernels.function(FILE, "scale_grid_stride")((grid,), (block,), (x, y, np.float32(alpha), np.int64(x.size)))
    return y
