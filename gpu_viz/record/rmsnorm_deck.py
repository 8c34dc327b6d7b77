"""GPU producer of notebook 12's four phases: the traced build of ``kernels/rmsnorm_deck.cu``.

Data path: ``kernels/rmsnorm_deck.cu`` (traced build, one block, one row, float) --(:func:`trace`:
NaN-poisoned record buffers, launch, read back)--> :class:`gpu_viz.trace.Trace`, the layout of
``gpu_viz.model.rmsnorm_deck.trace`` --> ``gpu_viz.frames.rmsnorm_deck``.
"""
from __future__ import annotations

import numpy as np

from .. import backend, kernels
from ..check import check_f32
from ..model import rmsnorm_deck as model
from ..trace import GPU_SOURCE, Trace

FILE = model.FILE
WARP = model.WARP


def default_inputs(d: int = 2048, seed: int = 0):
    """A random row and weight, float32 (d,) each: x ~ N(0, 1), w ~ 1 + 0.1 N(0, 1).

    Raises:
        ValueError: ``d`` is not a positive integer (the row length).
    """
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d (the row length) must be a positive integer, got {d!r}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(d).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
    return x, w


def trace(x, w=None, block: int = 1024, eps: float = model.DEFAULT_EPS, variant: str = model.GUARDED,
          prefill: bool = True, *, seed=None) -> Trace:
    """Launch the traced ``rmsnorm_<variant>_f32`` on one row and return what it recorded.

    Args: as :func:`gpu_viz.model.rmsnorm_deck.trace` (x, w: (d,) float32).

    Returns:
        :class:`Trace` with source ``"gpu"``, the same arrays (shapes, dtypes) and steps as the model.

    Raises:
        GPUUnavailable: CPU mode.  ValueError: bad arguments (see ``model.check_launch``).
    """
    x = model.as_f32_vector(x, "x")
    d, block = model.check_launch(x.shape[0], block, variant)
    check_f32("eps", eps, minimum=0.0)
    w = np.ones(d, dtype=np.float32) if w is None else model.as_f32_vector(w, "w", d)
    cp = backend.require_cupy("recording the four-phase trace")  # every argument checked first
    nw = (block + WARP - 1) // WARP
    nan = np.float32(np.nan)
    bufs = dict(y=cp.full(d, nan, cp.float32), local=cp.full(block, nan, cp.float32),
                warp_lanes=cp.full((nw, model.STEPS, WARP), nan, cp.float32),
                smem=cp.full(WARP, nan, cp.float32), w0_lanes=cp.full((model.STEPS, WARP), nan, cp.float32),
                scalars=cp.full(4, nan, cp.float32))
    x_d, w_d = cp.asarray(x), cp.asarray(w)
    kernels.bind_record(kernels.load(FILE, traced=True),
                        [("local", bufs["local"]), ("warp_lanes", bufs["warp_lanes"]), ("smem", bufs["smem"]),
                         ("w0_lanes", bufs["w0_lanes"]), ("scalars", bufs["scalars"]), ("prefill", int(bool(prefill)))])
    kernels.function(FILE, model.KERNELS[variant], traced=True)(
        (1,), (block,), (x_d, w_d, bufs["y"], np.int32(d), np.float32(eps)))
    cp.cuda.get_current_stream().synchronize()
    arrays = {k: cp.asnumpy(v) for k, v in bufs.items()}
    arrays.update(x=x, w=w)
    params = model.launch_params(d, block, eps, variant, prefill, seed)
    return Trace(kernel=model.KERNELS[variant], params=params, arrays=arrays, source=GPU_SOURCE,
                 provenance=backend.live_label(), steps=model.steps(params))
