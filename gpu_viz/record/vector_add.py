"""GPU producer of notebook 03's vector add: the traced build of ``kernels/vector_add.cu``.

Data path: ``kernels/vector_add.cu`` (traced build) --(:func:`trace`: poison, launch, read back,
check)--> :class:`gpu_viz.trace.Trace`, the layout of ``gpu_viz.model.vector_add.trace``
--> ``gpu_viz.frames.vector_add``.
"""
from __future__ import annotations

import numpy as np

from .. import backend, kernels
from ..check import assert_close, assert_equal
from ..model import vector_add as model
from ..trace import GPU_SOURCE, Trace

FILE, KERNEL = "vector_add.cu", "vector_add"
REC_FIELDS = len(model.VECTOR_ADD_FIELDS)
#: The record layout the traced build is compiled with (the .cu file's #ifndef default is the same).
OPTIONS = (f"-DVA_REC_FIELDS={REC_FIELDS}",)


def trace(A: np.ndarray, B: np.ndarray, block: int = 64, *, region_lines=None, seed=None) -> Trace:
    """Launch the traced ``vector_add`` on the GPU and return its Trace (the model's layout).

    Every record is poisoned (-1, NaN) before the launch, and after it: every launched thread
    wrote its record, C == A + B against a float64 reference, and no thread touched i >= n.

    Args:
        A, B: float32 [n]; block: threads per block (1..1024).
        region_lines: the 6 steps' source lines (``gpu_viz.lessons.VECTOR_ADD``).
        seed: the inputs' seed, named in any mismatch.

    Raises:
        GPUUnavailable in CPU mode; TypeError / ValueError for bad inputs; AssertionError if the
        launch left a wrong or unwritten value.
    """
    A = model.as_f32("A", A)
    n = A.shape[0]
    B = model.as_f32("B", B, n)
    n, block = model.check_launch(n, block, min_n=1)
    cp = backend.require_cupy("the traced vector add")
    grid = -(-n // block)
    T = grid * block
    dA, dB = cp.asarray(A), cp.asarray(B)
    dC = cp.full(n, np.nan, cp.float32)
    rec = cp.full(T * REC_FIELDS, -1, cp.int32)
    vals = cp.full(T * 3, np.nan, cp.float32)
    kernels.bind_record(kernels.load(FILE, OPTIONS, traced=True), [("thread", rec), ("vals", vals)])
    kernels.function(FILE, KERNEL, OPTIONS, traced=True)((grid,), (block,), (dA, dB, dC, np.int32(n)))
    cp.cuda.get_current_stream().synchronize()
    rec = rec.get().reshape(T, REC_FIELDS)
    vals = vals.get().reshape(T, 3)
    C = dC.get()
    assert_close("C", C, A.astype(np.float64) + B.astype(np.float64), rtol=2.0 ** -24, seed=seed)
    if (rec[:, :5] < 0).any():
        raise AssertionError("vector_add (traced): some launched thread did not write its record")
    if not np.isnan(vals[n:]).all():
        raise AssertionError("vector_add (traced): a thread with i >= n loaded or stored a value")
    arrays = {name: np.ascontiguousarray(rec[:, k]) for k, name in enumerate(model.VECTOR_ADD_FIELDS)}
    arrays.update(a=np.ascontiguousarray(vals[:, 0]), b=np.ascontiguousarray(vals[:, 1]),
                  c=np.ascontiguousarray(vals[:, 2]), A=A.copy(), B=B.copy())
    assert_equal("c[i] == C[i]", arrays["c"][:n], C, seed=seed)
    n_warps = grid * (-(-block // model.WARP))
    lines = list(region_lines) if region_lines is not None else [None] * len(model.VECTOR_ADD_STEPS)
    return Trace(kernel=KERNEL,
                 params={"n": n, "block": block, "grid": grid, "warps": n_warps, "sm_model": None, "seed": seed},
                 arrays=arrays, source=GPU_SOURCE,
                 provenance=backend.live_label() + "; %smid and %warpid read on the SM",
                 steps=model.vector_add_steps(n_warps, lines))
