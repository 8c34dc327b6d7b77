"""The baselines as the sources write them: the deck's eager PyTorch module and the seed
write-up's eager RMSNorm + SiLU-gate expression, and what the eager chain costs.

* :class:`EagerRMSNorm` -- the deck's slide "The Naive Version", line for line: six to seven
  separate PyTorch ops, each a kernel launch that reads and writes VRAM on a GPU.
* :func:`eager_rmsnorm_gate` -- the seed's eager baseline for the gate.
* :func:`eager_ops`, :func:`eager_kernels` -- what the eager module dispatches (any device) and
  launches (CUDA, via ``torch.profiler``); :func:`eager_traffic` -- the logical bytes of each op.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from .. import backend
from ..check import check_int
from .dtypes import dtype_name, itemsize
from .reference import check_eps

try:  # torch is an optional dependency of the package; the eager baselines need it
    import torch
    from torch import nn

    _Module = nn.Module
except ImportError:  # pragma: no cover - the course environment has torch
    torch = None
    nn = None
    _Module = object


def describe(a) -> str:
    """``torch.Tensor of shape (2, 3), dtype torch.float16``-style text for error messages."""
    shape = getattr(a, "shape", None)
    dtype = getattr(a, "dtype", None)
    if shape is None:
        return type(a).__name__
    return f"{type(a).__module__.split('.')[0]}.{type(a).__name__} of shape {tuple(shape)}, dtype {dtype}"


# ---------------------------------------------------------------------------------------
# the deck's slide "The Naive Version: Eager PyTorch"

class EagerRMSNorm(_Module):
    """RMSNorm in eager PyTorch, exactly as the deck's slide shows it.

    Source: chapter_1/llama_inference.py, as shown in the deck.

    Args:
        d: features per row (the last dimension of x), >= 1.
        eps: added to the mean square before the rsqrt.
        device, dtype: of the ``weight`` parameter (shape ``(d,)``, initialised to ones).

    ``forward(x)``: x of shape ``(..., d)``; returns ``weight * x * rsqrt(mean(x^2) + eps)``.
    Note the deck's code promotes: ``x * <fp32 tensor>`` is fp32, so fp16/bf16 input gives an
    **fp32 output** (and writes twice the bytes).  On a GPU every line below is one or more
    kernel launches, each reading and writing VRAM (see :func:`eager_kernels`).

    Raises:
        ImportError: without torch.  ValueError: ``d < 1`` or a negative/non-finite ``eps``.
    """

    def __init__(self, d: int, eps: float = 1e-6, device=None, dtype=None):
        if torch is None:
            raise ImportError("EagerRMSNorm needs PyTorch: pip install torch")
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d must be a positive int (features per row), got {d!r}")
        check_eps(eps)
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(int(d), device=device, dtype=dtype))

    @classmethod
    def from_weight(cls, weight, eps: float = 1e-6) -> "EagerRMSNorm":
        """A module whose ``weight`` is a copy of the 1-D tensor ``weight`` (same device, dtype)."""
        if torch is None or not isinstance(weight, torch.Tensor) or weight.ndim != 1:
            raise ValueError(f"weight must be a 1-D torch tensor of shape (d,), got {describe(weight)}")
        m = cls(weight.shape[0], eps, device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            m.weight.copy_(weight)
        return m

    def forward(self, x):
        # fp32 for numerical stability
        v = x.float().pow(2) \
              .mean(-1, keepdim=True)
        xn = x * torch.rsqrt(v + self.eps)
        return self.weight * xn

    def extra_repr(self) -> str:
        return f"d={self.weight.shape[0]}, eps={self.eps}"



def eager_rmsnorm_gate(x, gate, weight, eps: float = 1e-6):
    """The fused-gate write-up's eager baseline for ``y = x * w * silu(g) * rsqrt(mean(x^2) + eps)``.

    The write-up describes it as "the matching PyTorch eager expression, which casts inputs to
    FP32, evaluates the operations separately, and converts the result to FP16"; its code is
    not in the write-up, so this spells that sentence out op by op.
    x, gate: (M, N); weight: (N,); returns x's dtype.
    """
    import torch

    xf, gf, wf = x.float(), gate.float(), weight.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    silu = gf * torch.sigmoid(gf)
    return (xf * wf * silu * inv_rms).to(x.dtype)


# ---------------------------------------------------------------------------------------
# what the eager version costs: ops dispatched, kernels launched, bytes moved

def eager_ops(module, x) -> List[str]:
    """The aten ops ``module(x)`` dispatches, in order (any device, CPU included).

    On a GPU each is (at least) one kernel launch that reads its inputs from VRAM and writes
    its output back.  fp32 input: 6 ops (pow, mean, add, rsqrt, mul, mul); fp16/bf16 input
    adds the ``x.float()`` cast (``_to_copy``).
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: List[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func.overloadpacket.__name__))
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), _Record() as rec:
        module(x)
    return rec.ops


def eager_kernels(module, x) -> List[str]:
    """Names of the CUDA kernels ``module(x)`` launches, via ``torch.profiler`` (GPU only).

    Runs ``module(x)`` once to warm up, then once under the profiler.
    Raises ``GPUUnavailable`` in CPU mode and ``ValueError`` if x is not a CUDA tensor.
    """
    backend.require_gpu("counting kernel launches")
    if not (isinstance(x, torch.Tensor) and x.is_cuda):
        raise ValueError(f"x must be a CUDA tensor to count kernel launches, got {describe(x)}")
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        module(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            module(x)
            torch.cuda.synchronize()
    names = []
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is not None and "CUDA" in str(dt) and not ev.name.startswith(("cuda", "Memcpy", "Memset")):
            names.append(ev.name)
    return names


def eager_traffic(M: int, d: int, dtype: str = "float32") -> List[Tuple[str, int, int]]:
    """Logical bytes each op of :class:`EagerRMSNorm` reads and writes for x of shape (M, d).

    Tensor sizes only (what each kernel must read and write if nothing stays in a cache);
    weight has x's dtype, every intermediate is fp32 (``x.float()``), so is the output.
    Returns ``[(op, bytes_read, bytes_written), ...]`` in dispatch order (see :func:`eager_ops`).
    Compare :func:`gpu_viz.rmsnorm.dtypes.bytes_moved` (what the fused kernel must move).
    Raises TypeError for an unsupported dtype, ValueError for M, d < 1.
    """
    s = itemsize(dtype)
    M, d = check_int("M", M, 1), check_int("d", d, 1)
    f, n = 4, M * d
    ops = [] if dtype_name(dtype) == "float32" else [("x.float() (_to_copy)", s * n, f * n)]
    return ops + [("pow(2)", f * n, f * n), ("mean(-1)", f * n, f * M), ("+ eps", f * M, f * M),
                  ("rsqrt", f * M, f * M), ("x * rsqrt", s * n + f * M, f * n),
                  ("weight * xn", f * n + s * d, f * n)]
