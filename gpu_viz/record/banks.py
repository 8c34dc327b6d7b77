"""GPU producer of notebook 07's bank lesson: the traced build of ``kernels/banks.cu``.

Data path: ``kernels/banks.cu`` (traced build: each lane's shared-memory byte offset at every
recorded access, ``rec.off``) --(:func:`trace`)--> :class:`gpu_viz.trace.Trace` -->
:mod:`gpu_viz.memory_access` (banks, wavefronts) and ``gpu_viz.frames.banks``.  The layout is
``gpu_viz.model.banks.trace``'s; inside :func:`gpu_viz.emulator.emulated` the same code runs the
kernel's PTX on the CPU.
"""
from __future__ import annotations

import numpy as np

from .. import backend, kernels
from ..check import assert_equal
from ..model import banks as model
from ..trace import GPU_SOURCE, Trace


def trace(x: np.ndarray, case: str = "tile 32x32", rows: int = 32, cols: int = 32, *, line=None,
          seed=None) -> Trace:
    """Launch the traced kernel of ``case`` (:data:`gpu_viz.model.banks.CASES`) and return its
    Trace: ``offsets`` (int32 [sites * T]: each recorded access's byte offset in its shared array,
    -1 where a thread made none) and ``out``.

    x is the rows x cols matrix the transposes read (float32, row-major; ``shared_stride`` ignores it).
    Poisons out (NaN) and the record (-1) before the launch; checks out after it.

    Raises:
        TypeError / ValueError: a bad case, rows, cols or x (naming it).  GPUUnavailable in CPU
        mode (outside the emulator).  AssertionError: out came back wrong.
    """
    c, rows, cols, grid, block = model.check_launch(case, rows, cols)
    x = np.asarray(x)
    if x.dtype != np.float32 or x.shape != (rows * cols,):
        raise TypeError(f"x must be a 1-D float32 array of rows * cols = {rows * cols} elements, got {x.dtype} "
                        f"of shape {x.shape}")
    cp = backend.require_cupy("the traced bank kernels")
    threads = int(np.prod(grid)) * int(np.prod(block))
    off = cp.full(model.sites(c) * threads, -1, cp.int32)
    kernels.bind_record(kernels.load(model.FILE, traced=True), [("off", off)])
    fn = kernels.function(model.FILE, c.kernel, traced=True)
    if c.kernel == "shared_stride":
        out = cp.full(model.WARP, np.nan, cp.float32)
        fn(grid, block, (out, np.int32(c.stride)))
    else:
        out = cp.full(rows * cols, np.nan, cp.float32)
        fn(grid, block, (cp.asarray(x), out, np.int32(rows), np.int32(cols)))
    got = out.get()
    assert_equal(f"out of {c.kernel}", got, model.expected_out(c, x, rows, cols), seed=seed)
    return Trace(kernel=c.kernel, params=model.params(c, rows, cols, seed), arrays={"offsets": off.get(), "out": got},
                 source=GPU_SOURCE, provenance=backend.live_label(), steps=model.steps(c, line))
