"""GPU producer of notebook 03's divergence demo: the traced build of ``kernels/divergence.cu``.

Data path: ``kernels/divergence.cu`` (traced build: each thread's branch and ``__activemask()``)
--(:func:`trace`)--> :class:`gpu_viz.trace.Trace`, the layout of ``gpu_viz.model.divergence.trace``
--> ``gpu_viz.frames.divergence``.  The cost of divergence (timed, plain build) is
``gpu_viz.claims.divergence``.
"""
from __future__ import annotations

import numpy as np

from .. import backend, kernels
from ..check import assert_close, assert_equal
from ..model import divergence as model
from ..trace import GPU_SOURCE, Trace

FILE = "divergence.cu"


def reference(x: np.ndarray, branch: np.ndarray, iters: int) -> np.ndarray:
    """float64 ``y``: each element's path (branch 0: ``model.PATH_A``, 1: ``model.PATH_B``, the
    kernel's float constants, as mul then add) ``iters`` times."""
    v = x.astype(np.float64)
    mul = np.where(branch == 0, float(model.PATH_A[0]), float(model.PATH_B[0]))
    add = np.where(branch == 0, float(model.PATH_A[1]), float(model.PATH_B[1]))
    for _ in range(iters):
        v = v * mul + add
    return v


#: (atol per iteration, rtol) of y against :func:`reference`: float32 rounding of each step.
Y_TOLERANCE = (1e-4, 1e-4)


def check_y(name: str, y, x, branch, iters: int, seed=None) -> None:
    """Raise AssertionError unless ``y`` matches :func:`reference` within :data:`Y_TOLERANCE`."""
    atol, rtol = Y_TOLERANCE
    assert_close(name, y, reference(x, branch, iters), atol=atol * (1 + iters), rtol=rtol, seed=seed)


def trace(x: np.ndarray, block: int = 64, iters: int = 8, kernel: str = "divergent_branch", *,
          seed=None) -> Trace:
    """Launch the traced ``kernel`` (divergent_branch | uniform_branch); Trace as the model's.

    Checks: every element's branch and active mask written, y against a float64 reference.

    Raises:
        GPUUnavailable in CPU mode; TypeError / ValueError for bad inputs; AssertionError if a
        record is missing or y is wrong.
    """
    x = model.as_f32("x", x)
    n = x.shape[0]
    n, block = model.check_launch(n, block, min_n=1)
    model.check_iters(iters)
    branch_ref = model.divergence_branch(n, block, kernel)
    cp = backend.require_cupy("the divergence demo")
    dx = cp.asarray(x)
    dy = cp.full(n, np.nan, cp.float32)
    br = cp.full(n, -1, cp.int32)
    act = cp.zeros(n, cp.uint32)
    kernels.bind_record(kernels.load(FILE, traced=True), [("branch", br), ("active", act)])
    kernels.function(FILE, kernel, traced=True)((-(-n // block),), (block,),
                                                 (dx, dy, np.int32(n), np.int32(iters)))
    y, branch, active = dy.get(), br.get(), act.get()
    assert_equal(f"{kernel}: branch", branch, branch_ref, seed=seed)
    if (active == 0).any():
        raise AssertionError(f"{kernel}: {int((active == 0).sum())} active masks never written")
    check_y(f"{kernel}: y", y, x, branch_ref, iters, seed)
    i = np.arange(n)
    return Trace(kernel=kernel, params={"n": n, "block": block, "iters": iters, "grid": -(-n // block),
                                        "seed": seed},
                 arrays={"x": x.copy(), "y": y, "branch": branch, "active": active,
                         "lane": ((i % block) % 32).astype(np.int32),
                         "warp": ((i % block) // 32).astype(np.int32), "block": (i // block).astype(np.int32)},
                 source=GPU_SOURCE, provenance=backend.live_label() + "; masks from __activemask()")
