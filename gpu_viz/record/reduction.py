"""GPU producer of notebook 12's reductions: ``kernels/reduction.cu`` (the seed write-up's halving
tree, its fix, and reduce.cuh's block_reduce_sum at any block size).

Data path: ``kernels/reduction.cu`` --(:func:`seed_reduce`, :func:`block_reduce`: NaN-poisoned
records, launch, read back)--> the arrays of ``gpu_viz.model.reduction`` --(:func:`trace`)-->
:class:`gpu_viz.trace.Trace` --> ``gpu_viz.frames.reduction``.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .. import backend, kernels
from ..trace import GPU_SOURCE, Trace
from ..model import reduction as model
from ..model.rmsnorm_deck import as_f32_vector

FILE = model.FILE
WARP = model.WARP
#: The record size the kernels are compiled with (the .cu file's #ifndef default is the same).
OPTIONS = (f"-DSEED_MAX_LEVELS={model.SEED_MAX_LEVELS}",)


def seed_reduce(partials, corrected: bool = False) -> Dict[str, np.ndarray]:
    """Launch ``seed_reduce_trace`` with one partial per thread (block = len(partials)).

    Returns:
        dict ``levels`` (10, block), ``finish`` (6, 32), ``out`` (block,), all float32 (NaN = not written),
        as ``model.seed_reduce`` (which adds ``weight``).

    Raises:
        GPUUnavailable: CPU mode.  ValueError: block outside 32..1024 (1..1024 when corrected).
    """
    p = as_f32_vector(partials, "partials")
    B = p.shape[0]
    lo = 1 if corrected else WARP
    if not lo <= B <= 1024:
        raise ValueError(f"partials must have length (block) in {lo}..1024 for corrected={corrected}, got {B}")
    cp = backend.require_cupy("the seed reduction trace")
    nan = np.float32(np.nan)
    levels = cp.full((model.SEED_MAX_LEVELS, B), nan, cp.float32)
    finish = cp.full((model.STEPS, WARP), nan, cp.float32)
    out = cp.full(B, nan, cp.float32)
    kernels.function(FILE, model.SEED_KERNEL, OPTIONS)((1,), (B,), (cp.asarray(p), np.int32(1 if corrected else 0),
                                                          levels, finish, out))
    return dict(levels=cp.asnumpy(levels), finish=cp.asnumpy(finish), out=cp.asnumpy(out))


def trace(partials, corrected: bool = False, *, seed: Optional[int] = None) -> Trace:
    """:func:`seed_reduce` as the lesson's Trace (``gpu_viz.model.reduction.trace``'s arrays and
    params), labelled with this GPU.

    Raises:
        GPUUnavailable: CPU mode (outside the emulator).  ValueError: as :func:`seed_reduce`.
    """
    p = as_f32_vector(partials, "partials")
    result = seed_reduce(p, corrected)
    return model.as_trace(p, result, corrected, seed, GPU_SOURCE, backend.live_label())


def block_reduce(values) -> np.ndarray:
    """kernels/reduce.cuh ``block_reduce_sum`` over one value per thread, called twice back to back.

    Args:
        values: (block,) float32, block in 1..1024.

    Returns:
        (2, block) float32: row 0 every thread's sum of ``values``, row 1 its sum of ``2 * values``.
    """
    v = as_f32_vector(values, "values")
    B = v.shape[0]
    if not 1 <= B <= 1024:
        raise ValueError(f"values must have length (block) in 1..1024, got {B}")
    cp = backend.require_cupy("block_reduce_sum")
    out = cp.full(2 * B, np.float32(np.nan), cp.float32)
    kernels.function(FILE, model.BLOCK_REDUCE_KERNEL, OPTIONS)((1,), (B,), (cp.asarray(v), out))
    return cp.asnumpy(out).reshape(2, B)
