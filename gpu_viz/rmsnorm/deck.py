"""The deck's RMSNorm kernel (``kernels/rmsnorm_deck.cu``), launched: one block per row, four phases.

    y[r, i] = x[r, i] * rsqrt(mean_i(x[r, i]^2) + eps) * w[i]

:func:`four_phase` launches it on the caller's current stream; ``variant="deck"`` is the deck's
code as shown (right only with 1024 threads), ``"guarded"`` replaces its phase 2 with
reduce.cuh's block_reduce_sum (correct for any ``block`` and row length).  Notebooks 10 and 11 teach and
times it; its traced build is notebook 12's (``gpu_viz.record.rmsnorm_deck``).
"""
from __future__ import annotations

import math
import warnings
from typing import Dict

import numpy as np

from .. import backend, kernels
from ..arrays import framework as _framework
from ..arrays import launch
from ..model.rmsnorm_deck import DECK, FILE, GUARDED, VARIANTS, entry_point  # noqa: F401
from .dtypes import DTYPES, dtype_name
from .eager import describe as _describe
from .reference import check_eps

try:
    import torch
except ImportError:  # pragma: no cover - the course environment has torch
    torch = None

# FILE, DECK (the deck's code as shown: right only at block=1024), GUARDED (any block, any d >= 1)
# and VARIANTS come from the CPU model, the one place they are named.

#: The deck's launch: one block of 1024 threads per row of 2048 features.
DECK_BLOCK = 1024
DECK_D = 2048
MIN_BLOCK, MAX_BLOCK = 32, 1024
#: Row length limit: the kernels' int loop index i + blockDim.x must not overflow.
MAX_D = 2**31 - 1 - MAX_BLOCK
#: Rows per launch limit: gridDim.x.
MAX_ROWS = 2**31 - 1


# ---------------------------------------------------------------------------------------
# argument checks (all run before anything touches a GPU, so they are CPU-testable)

def _dtype_name(a) -> str:
    try:
        return dtype_name(a.dtype)
    except TypeError:
        return str(a.dtype).replace("torch.", "")


def _is_contiguous(a, fw: str) -> bool:
    return a.is_contiguous() if fw == "torch" else bool(a.flags.c_contiguous)


def _device_of(a, fw: str):
    """("cuda", index) or ("cpu", None)."""
    if fw == "torch":
        return (a.device.type, a.device.index)
    return ("cuda", a.device.id)


def validate(x, weight, eps=1e-6, block: int = DECK_BLOCK, variant: str = GUARDED, out=None) -> Dict:
    """Check :func:`four_phase`'s arguments; return ``{"fw", "dtype", "M", "d", "device"}``.

    Raises:
        TypeError: x/weight/out not a torch tensor or CuPy array, or not the same kind.
        ValueError: naming the argument -- variant, block range, eps, dtype, shape,
            contiguity, device (CPU tensor, or tensors on different GPUs).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise TypeError(f"block must be an int (threads per block), got {type(block).__name__}")
    if not MIN_BLOCK <= block <= MAX_BLOCK:
        raise ValueError(f"block must be in {MIN_BLOCK}..{MAX_BLOCK} threads (one block per row; "
                         f"1024 is the hardware cap), got {block}")
    check_eps(eps)
    fw = _framework(x)
    if fw is None:
        raise TypeError(f"x must be a torch.Tensor or cupy.ndarray on a CUDA device, got {_describe(x)}")
    if _framework(weight) != fw:
        raise TypeError(f"weight must be the same kind of array as x ({fw}), got {_describe(weight)}")
    dtype = _dtype_name(x)
    if dtype not in DTYPES:
        raise ValueError(f"x must have dtype float32, float16 or bfloat16, got {dtype}")
    if _dtype_name(weight) != dtype:
        raise ValueError(f"weight must have the same dtype as x ({dtype}), got {_dtype_name(weight)}")
    if x.ndim < 1:
        raise ValueError("x must have shape (M, d) (or (..., d)), got a 0-d scalar")
    d = int(x.shape[-1])
    if d < 1:
        raise ValueError(f"x must have at least one feature per row: shape {tuple(x.shape)} has d = 0")
    if d > MAX_D:
        raise ValueError(f"x has rows of d = {d} features; the kernel supports d <= {MAX_D}")
    M = math.prod(int(n) for n in x.shape[:-1])  # 1 for a 1-D x
    if M > MAX_ROWS:
        raise ValueError(f"x has {M} rows; one block per row allows at most {MAX_ROWS} (gridDim.x)")
    if tuple(weight.shape) != (d,):
        raise ValueError(f"weight must have shape (d,) = ({d},) to match x of shape "
                         f"{tuple(x.shape)}, got {tuple(weight.shape)}")
    if not _is_contiguous(x, fw):
        raise ValueError(f"x must be contiguous (row stride = d); got strides {tuple(x.stride() if fw == 'torch' else x.strides)} "
                         "-- pass x.contiguous()" + ("" if fw == "torch" else " / cupy.ascontiguousarray(x)"))
    if not _is_contiguous(weight, fw):
        raise ValueError("weight must be contiguous -- pass weight.contiguous()")
    if out is not None:
        if _framework(out) != fw:
            raise TypeError(f"out must be the same kind of array as x ({fw}), got {_describe(out)}")
        if tuple(out.shape) != tuple(x.shape) or _dtype_name(out) != dtype:
            raise ValueError(f"out must have x's shape {tuple(x.shape)} and dtype {dtype}, got "
                             f"{tuple(out.shape)} {_dtype_name(out)}")
        if not _is_contiguous(out, fw):
            raise ValueError("out must be contiguous")
    dev = _device_of(x, fw)
    if dev[0] != "cuda":
        raise ValueError(f"x must be on a CUDA device, got device {dev[0]!r} -- move it with x.cuda() "
                         "(the eager module and reference() run on CPU; the kernel does not)")
    if _device_of(weight, fw) != dev:
        raise ValueError(f"weight must be on the same device as x (cuda:{dev[1]}), got "
                         f"{_device_of(weight, fw)[0]}:{_device_of(weight, fw)[1]}")
    if out is not None and _device_of(out, fw) != dev:
        raise ValueError(f"out must be on the same device as x (cuda:{dev[1]})")
    return {"fw": fw, "dtype": dtype, "M": M, "d": d, "device": dev[1] or 0}



# ---------------------------------------------------------------------------------------
# launcher

def kernel_name(variant: str, dtype) -> str:
    """Entry point in kernels/rmsnorm_deck.cu: ``kernel_name("deck", "float16") == "rmsnorm_deck_f16"``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    try:
        suffix = DTYPES[dtype_name(dtype)][0]
    except TypeError:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}") from None
    return entry_point(variant, suffix)


def get_kernel(variant: str, dtype, device: int = 0):
    """The compiled ``cupy.RawKernel`` (NVRTC, this GPU's arch; cached); ``.num_regs`` etc. are the compiler's."""
    return kernels.function(FILE, kernel_name(variant, dtype), device=device)


def four_phase(x, weight, eps: float = 1e-6, block: int = DECK_BLOCK, variant: str = GUARDED, out=None):
    """RMSNorm by the deck's four-phase kernel: one block of ``block`` threads per row.

    Args:
        x: ``(M, d)`` (or ``(..., d)``) torch CUDA tensor or CuPy array, contiguous,
            float32 / float16 / bfloat16 (bfloat16: torch only, CuPy has no bf16 dtype).
        weight: ``(d,)``, same kind, dtype and device as x.
        eps: added to the mean square (fp32 in the kernel).
        block: threads per block, 32..1024 (the deck: 1024).
        variant: ``"guarded"`` (correct for any block and d) or ``"deck"`` (the deck's code as
            shown: correct only at block=1024; anything less reads uninitialised shared
            memory -- a warning says so).
        out: optional output array (x's shape, dtype, kind, device); else one is allocated.

    Returns:
        y, same shape, dtype and kind as x, written by a kernel launched on the caller's
        *current* stream (``torch.cuda.current_stream()`` for tensors, CuPy's current stream
        for CuPy arrays); no host synchronisation, so it can be captured in a CUDA graph.
        M = 0 returns an empty y without a launch.

    Raises:
        TypeError / ValueError: see :func:`validate`.
        GPUUnavailable: in CPU mode.
    """
    info = validate(x, weight, eps, block, variant, out)
    if variant == DECK and block != DECK_BLOCK:
        warnings.warn(f"variant='deck' with block={block}: the deck's phase 2 reads smem[tid] for all "
                      f"tid < 32, but only {math.ceil(block / 32)} warps wrote theirs -- the total includes "
                      "uninitialised shared memory" + (" and a full-mask shuffle over missing lanes"
                                                       if block % 32 else "") +
                      "; use variant='guarded'", RuntimeWarning, stacklevel=2)
    backend.require_gpu("four_phase (the RMSNorm kernel)")
    fw, M, d, dev = info["fw"], info["M"], info["d"], info["device"]
    if out is None:
        out = torch.empty_like(x) if fw == "torch" else _cupy_empty_like(x)
    if M == 0:
        return out
    kern = get_kernel(variant, info["dtype"], dev)
    scalars = (np.int32(d), np.float32(eps))
    if fw == "torch":
        args = (np.uint64(x.data_ptr()), np.uint64(weight.data_ptr()), np.uint64(out.data_ptr())) + scalars
    else:
        args = (x, weight, out) + scalars
    launch(kern, M, int(block), args, fw, dev)
    return out


def _cupy_empty_like(x):
    cupy = backend.require_cupy("four_phase")
    with cupy.cuda.Device(x.device.id):
        return cupy.empty_like(x)
