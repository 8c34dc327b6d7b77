"""The fused ops (public as :mod:`gpu_viz.ops`): RMSNorm, RMSNorm + SiLU gate and the fused residual
add, one kernel each (``kernels/rmsnorm_fused.cu``), in thin layers, each importing only those below:

* :mod:`.names` -- the kernel file's names, launch constants, casts and flags (data);
* :mod:`.config` -- which kernel, block and grid a problem gets (pure Python);
* :mod:`.checks` -- a call validated once: :func:`~.checks.validate` -> a frozen :class:`~.checks.Call`;
* :mod:`.launch` -- the one launcher of a Call, and the eager per-call plans (replayed in C++ by
  :mod:`gpu_viz.rmsnorm.launcher` once it is built);
* :mod:`.autograd` -- the torch custom ops, the eager autograd path and the backward;
* :mod:`.op` -- the public ops, their ``nn.Module`` wrappers and the kernels' register report.

    rmsnorm(x, weight, eps)            y = x * w * rsqrt(mean(x^2) + eps)
    rmsnorm_gate(x, gate, weight, eps) y = x * w * silu(g) * rsqrt(mean(x^2) + eps)   (statistic from x)
    rmsnorm_add(x, residual, weight)   h = x + residual, y = rmsnorm(h)
"""
