"""The production fused ops, public: ``gpu_viz.ops.rmsnorm`` and ``gpu_viz.ops.rmsnorm_gate``.

    from gpu_viz import ops
    y = ops.rmsnorm(x, weight, eps)              # x (..., N) fp32/fp16/bf16, torch CUDA or CuPy
    y = ops.rmsnorm_gate(x, gate, weight, eps)   # y = x * w * silu(gate) * rsqrt(mean(x^2) + eps)

The implementation is :mod:`gpu_viz.rmsnorm.fused` (kernels in ``kernels/rmsnorm_fused.cu``); the
float64 reference :mod:`gpu_viz.rmsnorm.reference`; the tolerances :mod:`gpu_viz.rmsnorm.tolerances`.
"""
from __future__ import annotations

import numpy as np

from .arrays import to_numpy64
from .rmsnorm import reference as _reference
from .rmsnorm.dtypes import DTYPES, bytes_moved, dtype_name  # noqa: F401
from .rmsnorm.fused import (FILE, LaunchConfig, choose_config, describe_kernel, fits_l2,  # noqa: F401
                            forced_config, get_kernel, kernel_name, kernel_names, kernel_report,
                            launch_config, rmsnorm, rmsnorm_gate)
from .rmsnorm.tolerances import GRAD_TOLERANCES, TOLERANCES  # noqa: F401

try:
    from .rmsnorm.fused import FusedRMSNorm, FusedRMSNormGate  # noqa: F401
except ImportError:  # pragma: no cover - without torch there are no nn.Module wrappers
    pass


def reference_rmsnorm(x, weight, eps: float = 1e-6) -> np.ndarray:
    """float64 numpy ``x * w / sqrt(mean(x^2) + eps)`` (:func:`gpu_viz.rmsnorm.reference.rmsnorm`)."""
    return to_numpy64(_reference.rmsnorm(x, weight, eps), "y")


def reference_rmsnorm_gate(x, gate, weight, eps: float = 1e-6) -> np.ndarray:
    """float64 numpy ``x * w * silu(g) / sqrt(mean(x^2) + eps)``."""
    return to_numpy64(_reference.rmsnorm(x, weight, eps, gate), "y")


def reference_grads(x, weight, grad, gate=None, eps: float = 1e-6):
    """float64 gradients of ``sum(y * grad)`` (:func:`gpu_viz.rmsnorm.reference.grads`)."""
    return _reference.grads(x, weight, grad, gate, eps)
