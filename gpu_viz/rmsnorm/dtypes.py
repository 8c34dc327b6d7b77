"""The RMSNorm family's names -- its ops and the dtypes they take -- and the fewest bytes an op
must move.

The ops' names are defined here once (:data:`RMSNORM`, :data:`RMSNORM_GATE`, :data:`RMSNORM_ADD`):
they name the kernels, the records' rows and the C++ launcher's op numbers.  :func:`dtype_name` is
the one spelling of a dtype for the whole family: ``"float32"``, ``"float16"`` or ``"bfloat16"``
from a torch / numpy / CuPy dtype or a name.
"""
from __future__ import annotations

import functools
from typing import Dict, Tuple

import numpy as np

from ..check import check_int

#: dtype name -> (kernel suffix, bytes per element, elements per 16-byte vector, -DRMSNORM_DTYPES bit)
DTYPES: Dict[str, Tuple[str, int, int, int]] = {
    "float32": ("f32", 4, 4, 1),
    "float16": ("f16", 2, 8, 2),
    "bfloat16": ("bf16", 2, 8, 4),
}
#: The ops: y = rmsnorm(x); y = rmsnorm(x) * silu(gate); (y, h) with h = x + residual, y = rmsnorm(h).
RMSNORM, RMSNORM_GATE, RMSNORM_ADD = "rmsnorm", "rmsnorm_gate", "rmsnorm_add"
#: The two public formulas (what the benchmarks and the wide-row path take).
OPS: Tuple[str, ...] = (RMSNORM, RMSNORM_GATE)
#: Every op the fused kernel file defines: the two formulas and the fused residual add.
KERNEL_OPS: Tuple[str, ...] = OPS + (RMSNORM_ADD,)
_ALIASES = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def dtype_name(dtype) -> str:
    """``"float16"`` for torch.float16, numpy/CuPy float16, ``"float16"`` / ``"half"`` / ``"fp16"``, etc.

    Raises:
        TypeError: a dtype other than float32 / float16 / bfloat16, naming the ones accepted.
    """
    try:  # memoised: this sits on every call's path
        return _dtype_name(dtype)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        return _dtype_name.__wrapped__(dtype)


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype) -> str:
    if isinstance(dtype, type) and issubclass(dtype, np.generic) or isinstance(dtype, np.dtype):
        dtype = np.dtype(dtype).name
    name = str(dtype).replace("torch.", "")
    name = _ALIASES.get(name, name)
    if name not in DTYPES:
        raise TypeError(f"dtype {dtype} is not supported: expected float32, float16 or bfloat16")
    return name


def itemsize(dtype) -> int:
    """Bytes per element of ``dtype``."""
    return DTYPES[dtype_name(dtype)][1]


def torch_dtype(dtype):
    """The ``torch.dtype`` of a dtype name (or anything :func:`dtype_name` reads): imports torch."""
    import torch

    return getattr(torch, dtype_name(dtype))


def check_op(op: str) -> str:
    """``op`` if it is ``"rmsnorm"`` or ``"rmsnorm_gate"``; ValueError naming both otherwise."""
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    return op


def bytes_moved(M: int, N: int, dtype, gate: bool = False) -> int:
    """The fewest bytes one call must move: x (and gate) read once, y written once, w read once:
    ``(2 or 3) * M * N * size + N * size`` (DESIGN.md section 5's ``GBps`` counts these).

    Raises:
        TypeError / ValueError: a non-int or negative M, N < 1, an unsupported dtype.
    """
    M, N = check_int("M", M, 0), check_int("N", N, 1)
    return itemsize(dtype) * ((3 if gate else 2) * M * N + N)
