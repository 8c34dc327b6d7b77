"""Which library an array belongs to, its float64 host copy, and launching on its library's
current stream: shared by every op module.

``framework(a)`` -> ``"torch"``, ``"cupy"`` or ``None``; ``to_numpy64(a, name)`` -> a float64
numpy copy (what the float64 references compute on), from a torch tensor (any device), a CuPy
array, or anything numpy accepts; ``launch(kernel, grid, block, args, fw, device)`` -> a CuPy
kernel launched on torch's current stream (``fw == "torch"``) or CuPy's.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Optional

import numpy as np

from . import backend


def _torch():
    """torch if something has imported it, else None: a tensor cannot exist before torch does, so
    telling arrays apart never pays torch's import (a second or more) for the course's CPU paths."""
    return sys.modules.get("torch")


def framework(a) -> Optional[str]:
    """``"torch"`` for a torch.Tensor, ``"cupy"`` for a CuPy array, else ``None`` (imports neither)."""
    torch = _torch()
    if torch is not None and isinstance(a, torch.Tensor):
        return "torch"
    mod = type(a).__module__ or ""
    if mod.startswith("cupy") and hasattr(a, "data") and hasattr(a, "strides"):
        return "cupy"
    return None


class _StreamPtr:
    """What CuPy's ``RawKernel.__call__(..., stream=)`` reads: an object with ``.ptr``."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int):
        self.ptr = ptr


_RAW_STREAM_OK = [True]


def _torch_stream_ptr(device: int) -> int:
    """torch's current stream on ``device`` as a raw cudaStream_t (what Triton reads too);
    the public ``torch.cuda.current_stream`` where the C hook is missing."""
    torch = _torch()
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get is not None:
        return get(device)
    return torch.cuda.current_stream(device).cuda_stream


def launch(kernel, grid: int, block: int, args, fw: str, device: int) -> None:
    """Launch the ``cupy.RawKernel`` ``kernel`` with a 1-D ``grid`` x ``block`` on the caller's
    current stream: torch's for ``fw == "torch"`` (no host synchronisation, so CUDA-graph capture
    and torch's stream semantics hold), CuPy's otherwise; on CUDA device ``device``.

    For torch the raw stream handle goes straight to ``cuLaunchKernel`` (no CuPy stream object
    is made); a CuPy that refuses a handle object (TypeError/AttributeError, raised before any
    launch) gets ``cupy.cuda.Stream.from_external`` instead.
    """
    cupy = backend.require_cupy("a kernel launch")
    switch = cupy.cuda.runtime.getDevice() != device  # the common case needs no switch
    with (cupy.cuda.Device(device) if switch else contextlib.nullcontext()):
        if fw != "torch":
            kernel((grid,), (block,), args)  # CuPy's current stream
            return
        if _RAW_STREAM_OK[0]:
            try:
                kernel.kernel((grid,), (block,), args, shared_mem=0, stream=_StreamPtr(_torch_stream_ptr(device)))
                return
            except (TypeError, AttributeError):
                _RAW_STREAM_OK[0] = False
        ts = _torch().cuda.current_stream(device)
        if hasattr(cupy.cuda.Stream, "from_external"):
            stream = cupy.cuda.Stream.from_external(ts)
        else:  # CuPy < 14
            stream = cupy.cuda.ExternalStream(ts.cuda_stream, device)
        with stream:
            kernel((grid,), (block,), args)


def to_numpy64(a, name: str) -> np.ndarray:
    """A float64 numpy copy of ``a`` (torch tensor on any device, CuPy array, numpy/list/scalar).

    Raises:
        TypeError: naming ``name`` when ``a`` is not an array numpy can read (a string included)
            or holds complex values.
    """
    fw = framework(a)
    if fw == "torch":
        if a.is_complex():
            raise TypeError(f"{name} must hold real numbers, got a complex tensor ({a.dtype})")
        return a.detach().to(device="cpu", dtype=_torch().float64).numpy()
    if fw == "cupy":
        if a.dtype.kind == "c":
            raise TypeError(f"{name} must hold real numbers, got a complex array ({a.dtype})")
        return a.get().astype(np.float64)
    if isinstance(a, (str, bytes)):
        raise TypeError(f"{name} must be an array (numpy, torch or CuPy), got {type(a).__name__}")
    if np.iscomplexobj(a):  # float64 of a complex value drops its imaginary part: a wrong answer
        raise TypeError(f"{name} must hold real numbers, got complex values")
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array (numpy, torch or CuPy), got {type(a).__name__}") from None
