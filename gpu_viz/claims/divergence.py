"""What divergence costs (notebook 03): divergent vs uniform branches of ``kernels/divergence.cu``,
kernel time by CUDA-graph replay, outputs checked against float64 first.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from .. import backend, kernels
from ..check import random_f32
from ..model import divergence as model
from ..record.divergence import FILE, check_y
from ..measure import timing


def cost(n: int = 1 << 22, block: int = 256, iters: int = 256, reps: int = 50) -> Dict:
    """Kernel time (:func:`gpu_viz.measure.timing.time_graph`) of divergent vs uniform branches.

    Same n threads, same work per thread (``iters`` mul+add on one path); the divergent kernel
    makes every warp run both paths.  Outputs are checked against float64 (every 61st element)
    before timing.

    Returns:
        {"divergent_branch": Timing, "uniform_branch": Timing, "ratio": divergent/uniform median,
         "n": n, "block": block, "iters": iters, "provenance": live label}
    Raises:
        GPUUnavailable in CPU mode.
    """
    n, block = model.check_launch(n, block, min_n=1)
    model.check_iters(iters)
    cp = backend.require_cupy("measuring the cost of divergence")
    x = random_f32(n)
    sample = np.arange(0, n, 61)   # the float64 reference on every 61st element keeps the check quick
    dx = cp.asarray(x)
    out: Dict = {"n": n, "block": block, "iters": iters}
    for k in model.DIVERGENCE_KERNELS:
        fn = kernels.function(FILE, k)
        dy = cp.full(n, np.nan, cp.float32)
        args = (dx, dy, np.int32(n), np.int32(iters))
        grid = (-(-n // block),)
        fn(grid, (block,), args)
        check_y(f"{k}: y (every 61st element)", dy.get()[sample], x[sample],
                model.divergence_branch(n, block, k)[sample], iters)
        out[k] = timing.time_graph(lambda i: fn(grid, (block,), args), framework="cupy", reps=reps)
    out["ratio"] = out["divergent_branch"].median_us / out["uniform_branch"].median_us
    out["provenance"] = backend.live_label()
    return out


def record_rows(out: Dict):
    """:func:`cost` as rows of a DESIGN.md section 5 record."""
    return [{"op": "divergence", "impl": k, "n": out["n"], "block": out["block"], "iters": out["iters"],
             "dtype": "float32", "timing": out[k].timing, "median_us": out[k].median_us,
             "p10_us": out[k].p10_us, "p90_us": out[k].p90_us} for k in model.DIVERGENCE_KERNELS]
