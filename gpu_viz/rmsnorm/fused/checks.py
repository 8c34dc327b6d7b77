"""A fused-op call, validated once: :func:`validate` turns the public op's arguments into a
:class:`Call` (a frozen dataclass naming the op) that the launch layer takes as it is.

Torch tensors and CuPy arrays are seen the same way (:class:`Operand`).  The checks' order:
kind, dtype, shape, strides, eps / weight_offset / cast, then device -- so the first four can be
checked on CPU tensors too, and a CPU tensor in CPU mode is told where the formula runs instead.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, Tuple

from ... import backend
from ...arrays import framework as _framework
from ...check import check_f32_arg
from ..dtypes import RMSNORM, RMSNORM_GATE, dtype_name
from ..reference import check_eps
from .names import CAST_FP32, CAST_LLAMA, check_cast, out_ext


@dataclasses.dataclass(frozen=True)
class Operand:
    """One operand: its name in messages, library ("torch" | "cupy"), the array (a lazily negated
    torch view resolved), dtype name, shape and strides in elements."""

    name: str
    fw: str
    array: object
    dtype: str
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]

    @property
    def device(self):
        """torch's device, or ("cuda", id) for CuPy."""
        return self.array.device if self.fw == "torch" else ("cuda", self.array.device.id)

    @property
    def device_index(self) -> int:
        return self.array.device.index if self.fw == "torch" else self.array.device.id

    @property
    def ptr(self) -> int:
        """The data pointer (an address on the device)."""
        return int(self.array.data_ptr()) if self.fw == "torch" else int(self.array.data.ptr)


@dataclasses.dataclass(frozen=True)
class Call:
    """A validated call: ``op`` (RMSNORM, RMSNORM_GATE or RMSNORM_ADD), x, the weight and x2 (the
    gate or the residual; None for rmsnorm), M rows of N, eps and weight_offset as the kernel's
    floats take them, and the cast."""

    op: str
    x: Operand
    weight: Operand
    x2: Optional[Operand]
    M: int
    N: int
    eps: float
    offset: float
    cast: str

    @property
    def dtype(self) -> str:
        return self.x.dtype

    @property
    def llama(self) -> bool:
        return self.cast == CAST_LLAMA

    @property
    def weight_dtype(self) -> Optional[str]:
        """The weight's dtype name where it is not x's (an fp32 weight), else None."""
        return self.weight.dtype if self.weight.dtype != self.x.dtype else None

    @property
    def out_ext(self) -> bool:
        """Whether the call needs the extended-output kernels (``_x``)."""
        return out_ext(self.offset, self.llama)


def operand(name: str, a, fw_expected: Optional[str] = None) -> Operand:
    """``a`` as an :class:`Operand`.

    Raises:
        TypeError: not a torch tensor / CuPy array, another library than x's, an unsupported dtype.
        ValueError: a torch tensor without data; CuPy byte strides that are not whole elements.
    """
    if a is None:
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got None")
    fw = _framework(a)
    if fw is None:
        kind = type(a).__module__.split(".")[0] + "." + type(a).__name__
        host = " (host memory: move it to the GPU first)" if kind.startswith("numpy") else ""
        raise TypeError(f"{name} must be a torch CUDA tensor or a CuPy array, got {kind}{host}")
    if fw_expected is not None and fw != fw_expected:
        other = "torch.Tensor" if fw_expected == "torch" else "cupy.ndarray"
        raise TypeError(f"{name} is a {'torch.Tensor' if fw == 'torch' else 'cupy.ndarray'} but x is a "
                        f"{other}: pass all operands from the same library")
    dtype = a.dtype
    try:
        dt = dtype_name(dtype)
    except TypeError:
        raise TypeError(f"{name} has dtype {dtype}; expected float32, float16 or bfloat16 "
                        "(integer and float64 tensors are not accepted)") from None
    if fw == "torch":
        if a.is_neg():  # a lazily negated view (torch._neg_view): the kernels read memory, not the bit
            a = a.resolve_neg()
        if a.numel() and not a.data_ptr():  # e.g. a parameter whose storage was freed (resized to 0)
            raise ValueError(f"{name} has no data (its data pointer is null: storage freed or never "
                             "allocated); pass a tensor whose memory holds its values")
        shape, strides = tuple(a.shape), tuple(a.stride())
    else:
        item = a.dtype.itemsize
        shape = tuple(a.shape)
        if any(s % item for s in a.strides):
            raise ValueError(f"{name} has byte strides {a.strides} that are not multiples of its "
                             f"element size {item}")
        strides = tuple(s // item for s in a.strides)
    return Operand(name, fw, a, dt, shape, strides)


def _check_last_dim(op: Operand):
    # an empty array's strides mean nothing (CuPy reports (0, 0) for shape (0, N))
    if op.shape and op.shape[-1] > 1 and 0 not in op.shape and op.strides[-1] != 1:
        raise ValueError(f"{op.name} must be contiguous in its last dimension (stride 1), got stride "
                         f"{op.strides[-1]} for shape {op.shape}: pass {op.name}.contiguous()")


def _check_dtypes(xo: Operand, wo: Operand, go: Optional[Operand]):
    if go is not None and go.dtype != xo.dtype:
        raise TypeError(f"{go.name} has dtype {go.dtype} but x has {xo.dtype}: {go.name} must share x's "
                        f"dtype (cast with .to(x.dtype))")
    if wo.dtype != xo.dtype and wo.dtype != "float32":
        raise TypeError(f"weight has dtype {wo.dtype}; expected x's dtype ({xo.dtype}) or float32 "
                        f"(cast with .to(x.dtype) or .float())")


def _check_shapes(xo: Operand, wo: Operand, go: Optional[Operand]) -> int:
    """N, once x, the weight and x2 agree on it (and every last dimension has stride 1)."""
    if len(xo.shape) < 1:
        raise ValueError("x must have at least one dimension (..., N), got a 0-d scalar")
    N = xo.shape[-1]
    if N < 1:
        raise ValueError(f"x has shape {xo.shape}: its last dimension N must be >= 1")
    if wo.shape != (N,):
        raise ValueError(f"weight must have shape (N,) = ({N},) to match x of shape {xo.shape}, got "
                         f"{wo.shape}")
    if go is not None and go.shape != xo.shape:
        raise ValueError(f"{go.name} must have x's shape {xo.shape}, got {go.shape}")
    for o in (xo, wo, go):
        if o is not None:
            _check_last_dim(o)
    return N


def _check_devices(op: str, operands) -> None:
    """Every operand a CUDA tensor / CuPy array, all on one device."""
    dev = None
    for o in operands:
        if o is None:
            continue
        d = o.device
        if o.fw == "torch" and d.type != "cuda":
            where = (f"move it with {o.name}.cuda()" if backend.has_gpu() else
                     "this machine has no usable GPU, CPU mode: "
                     f"gpu_viz.ops.reference_rmsnorm{'_gate' if op == RMSNORM_GATE else ''} computes the "
                     "formula on the CPU, in float64")
            raise ValueError(f"{o.name} is on device {d}: the fused ops need CUDA tensors ({where})")
        if dev is None:
            dev = d
        elif d != dev:
            raise ValueError(f"{o.name} is on {d} but x is on {dev}: all operands must be on one device")


def validate(op: str, x, x2, weight, eps, weight_offset=0.0, cast: str = CAST_FP32) -> Call:
    """Every check of a call of ``op`` (``x2``: the gate for RMSNORM_GATE, the residual for
    RMSNORM_ADD, None for RMSNORM), in one place; the :class:`Call` the launch layer takes.

    Raises:
        TypeError / ValueError: as the public ops document (gpu_viz.ops.rmsnorm's Raises).
    """
    xo = operand("x", x)
    wo = operand("weight", weight, xo.fw)
    if (x2 is not None) != (op != RMSNORM):  # internal callers only: the public ops check x2 first
        raise ValueError(f"{op} takes {'no second input' if op == RMSNORM else 'a second input row'}")
    go = operand("gate" if op == RMSNORM_GATE else "residual", x2, xo.fw) if x2 is not None else None
    _check_dtypes(xo, wo, go)
    N = _check_shapes(xo, wo, go)
    eps = check_eps(eps)
    offset = check_f32_arg("weight_offset", weight_offset)
    check_cast(cast)
    _check_devices(op, (xo, wo, go))
    return Call(op, xo, wo, go, math.prod(xo.shape[:-1]), N, eps, offset, cast)

