"""The production fused ops, public: ``gpu_viz.ops.rmsnorm`` and ``gpu_viz.ops.rmsnorm_gate``.

    from gpu_viz import ops
    y = ops.rmsnorm(x, weight, eps)              # x (..., N) fp32/fp16/bf16, torch CUDA or CuPy
    y = ops.rmsnorm_gate(x, gate, weight, eps)   # y = x * w * silu(gate) * rsqrt(mean(x^2) + eps)
    y, h = ops.rmsnorm_add(x, residual, weight, eps)  # h = x + residual, y = rmsnorm(h)
    # weight: x's dtype or float32; weight_offset=1.0 for Gemma's (1 + w); cast="llama" for HF
    # LlamaRMSNorm's rounding order.  A row's bits never depend on M (batch-invariant).

The implementation is :mod:`gpu_viz.rmsnorm.fused` (its layers: names, config, checks, launch, autograd,
op; kernels in ``kernels/rmsnorm_fused.cu``); the
float64 reference :mod:`gpu_viz.rmsnorm.reference`; the tolerances :mod:`gpu_viz.rmsnorm.tolerances`.
"""
from __future__ import annotations

import numpy as np

from .arrays import to_numpy64
from .rmsnorm import reference as _reference
from .rmsnorm.dtypes import DTYPES, KERNEL_OPS, OPS, bytes_moved, dtype_name
from .rmsnorm.fused.config import (LaunchConfig, choose_config, fits_l2, forced_config, l2_bytes, launch_config,
                                   reduction_order)
from .rmsnorm.fused.launch import get_kernel, uses_wide
# the launch configuration's constants (launch_config's answers are in these terms)
from .rmsnorm.fused.names import (BLOCK, BLOCK_MAX_THREADS, BLOCK_TARGET_THREADS, CAST_FP32, CAST_LLAMA, CASTS,
                                  EPT_CHOICES, FILE, MAX_GRID_X, MAX_N, MULTI_VECTOR_BYTES_PER_THREAD,
                                  MULTI_VECTOR_ROW_BYTES, MULTI_VECTOR_TARGET_THREADS, SCALAR_BLOCK_EPT, WARP,
                                  WARP_ROW_MAX_N, WARP_ROW_MAX_N_VECTOR, WARP_ROWS_PER_BLOCK, WIDE, WIDE_THREADS,
                                  describe_kernel, kernel_name, kernel_names)
from .rmsnorm.fused.op import kernel_report, rmsnorm, rmsnorm_add, rmsnorm_gate
from .rmsnorm.tolerances import GRAD_TOLERANCES, TOLERANCES

__all__ = [
    "rmsnorm", "rmsnorm_gate", "rmsnorm_add", "CASTS", "CAST_FP32", "CAST_LLAMA", "KERNEL_OPS",
    "reduction_order", "uses_wide", "launch_config", "choose_config", "LaunchConfig", "forced_config", "fits_l2",
    "l2_bytes", "kernel_report", "kernel_name", "kernel_names", "describe_kernel", "get_kernel", "FILE",
    "bytes_moved", "dtype_name", "DTYPES", "OPS", "TOLERANCES", "GRAD_TOLERANCES",
    "reference_rmsnorm", "reference_rmsnorm_gate", "reference_grads",
    "WARP", "BLOCK", "WIDE", "WARP_ROW_MAX_N", "WARP_ROW_MAX_N_VECTOR", "WARP_ROWS_PER_BLOCK", "EPT_CHOICES",
    "SCALAR_BLOCK_EPT", "BLOCK_TARGET_THREADS", "MULTI_VECTOR_ROW_BYTES", "MULTI_VECTOR_BYTES_PER_THREAD",
    "MULTI_VECTOR_TARGET_THREADS", "BLOCK_MAX_THREADS", "WIDE_THREADS", "MAX_GRID_X", "MAX_N",
]

try:
    from .rmsnorm.fused.op import FusedRMSNorm, FusedRMSNormGate
    __all__ += ["FusedRMSNorm", "FusedRMSNormGate"]
except ImportError:  # pragma: no cover - without torch there are no nn.Module wrappers
    pass


def reference_rmsnorm(x, weight, eps: float = 1e-6, *, weight_offset: float = 0.0) -> np.ndarray:
    """float64 numpy ``x * (w + weight_offset) / sqrt(mean(x^2) + eps)``
    (:func:`gpu_viz.rmsnorm.reference.rmsnorm`)."""
    return to_numpy64(_reference.rmsnorm(x, weight, eps, weight_offset=weight_offset), "y")


def reference_rmsnorm_gate(x, gate, weight, eps: float = 1e-6, *, weight_offset: float = 0.0) -> np.ndarray:
    """float64 numpy ``x * (w + weight_offset) * silu(g) / sqrt(mean(x^2) + eps)``."""
    return to_numpy64(_reference.rmsnorm(x, weight, eps, gate, weight_offset=weight_offset), "y")


def reference_grads(x, weight, grad, gate=None, eps: float = 1e-6):
    """float64 gradients of ``sum(y * grad)`` (:func:`gpu_viz.rmsnorm.reference.grads`)."""
    return _reference.grads(x, weight, grad, gate, eps)
