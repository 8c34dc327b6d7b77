"""Which library an array belongs to, and its float64 host copy: shared by every op module.

``framework(a)`` -> ``"torch"``, ``"cupy"`` or ``None``; ``to_numpy64(a, name)`` -> a float64
numpy copy (what the float64 references compute on), from a torch tensor (any device), a CuPy
array, or anything numpy accepts.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

try:
    import torch
except ImportError:  # the CPU-only course runs without torch
    torch = None


def framework(a) -> Optional[str]:
    """``"torch"`` for a torch.Tensor, ``"cupy"`` for a CuPy array, else ``None`` (no import of CuPy)."""
    if torch is not None and isinstance(a, torch.Tensor):
        return "torch"
    mod = type(a).__module__ or ""
    if mod.startswith("cupy") and hasattr(a, "data") and hasattr(a, "strides"):
        return "cupy"
    return None


def to_numpy64(a, name: str) -> np.ndarray:
    """A float64 numpy copy of ``a`` (torch tensor on any device, CuPy array, numpy/list/scalar).

    Raises:
        TypeError: naming ``name`` when ``a`` is not an array numpy can read.
    """
    fw = framework(a)
    if fw == "torch":
        return a.detach().to(device="cpu", dtype=torch.float64).numpy()
    if fw == "cupy":
        import cupy

        return cupy.asnumpy(a).astype(np.float64)
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array (numpy, torch or CuPy), got {type(a).__name__}") from None
