"""THE float64 reference of the RMSNorm family: every check in the package compares against this.

    rmsnorm(x, w, eps)              = x * w / sqrt(mean(x^2, -1) + eps)
    rmsnorm(x, w, eps, gate=g)      = x * w * silu(g) / sqrt(mean(x^2, -1) + eps),  silu(g) = g / (1 + e^-g)
    grads(x, w, grad_y, gate, eps)  = d sum(y * grad_y) / d {x, weight, gate}

Inputs are read exactly (fp16 and bf16 widen to float64 without rounding).  A torch tensor is
computed on its own device in float64 (the harness checks GPU outputs there, a block of rows at a
time); anything else (numpy, CuPy, lists) in numpy.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from ..arrays import framework, to_numpy64
from ..check import check_f32_arg


def check_eps(eps) -> float:
    """``eps`` as a float; TypeError unless a number, ValueError unless finite and >= 0 as the
    float32 every kernel receives (``1e39`` is inf there: the output would be all zeros)."""
    return check_f32_arg("eps", eps, minimum=0.0)


def _float64(a, name: str, like=None, detach: bool = True):
    """``a`` in float64, in x's library: ``like`` (x in float64) decides when given -- torch on its
    device, or numpy -- else ``a``'s own kind does (torch stays torch, anything else is numpy).
    ``detach=False`` keeps a torch tensor in its autograd graph (:func:`grads`)."""
    kind = framework(a if like is None else like)
    if kind == "torch":
        import torch

        dev = a.device if like is None else like.device
        t = a if framework(a) == "torch" else torch.as_tensor(to_numpy64(a, name))
        return (t.detach() if detach else t).to(device=dev, dtype=torch.float64)
    return to_numpy64(a, name)


def rmsnorm(x, weight, eps: float = 1e-6, gate=None, *, weight_offset: float = 0.0, cast: str = "fp32"):
    """float64 RMSNorm (and the SiLU gate) of ``x`` ``(..., N)`` with ``weight`` ``(N,)``:
    ``x * (w + weight_offset) * [silu(g)] / sqrt(mean(x^2) + eps)``.

    ``cast="llama"`` (torch x only): HF LlamaRMSNorm's order in float64 terms,
    ``round_T(x * [silu(g)] / sqrt(...)) * (w + weight_offset)`` with T = x's dtype -- the one
    intermediate rounding HF's ``hidden_states.to(input_dtype)`` makes, everything else exact.

    Returns:
        float64 of x's shape: a torch tensor on x's device (outside any autograd graph) when x is
        a torch tensor, else numpy; weight and gate follow x, whatever their kind.  NaN/inf in a
        row give that row what the formula gives (NaN, or 0 where it gives 0).

    Raises:
        TypeError: not an array of real numbers (a string, complex values), a non-number eps.
        ValueError: x without a last dimension of N >= 1 (a 0-d x, N = 0), weight not (N,), gate
            not x's shape, a negative or non-finite eps.
    """
    return _rmsnorm(x, weight, eps, gate, detach=True, offset=weight_offset, cast=cast)


def rmsnorm_add(x, residual, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = "fp32"):
    """The add op's reference: ``h = x + residual`` rounded to x's dtype (x and residual torch
    tensors of one dtype: torch's own add, which computes in fp32 and rounds once, as the
    kernel does), then ``(rmsnorm(h) in float64, h)``."""
    h = x.detach() + residual.detach()
    return rmsnorm(h, weight, eps, weight_offset=weight_offset, cast=cast), h


def _rmsnorm(x, weight, eps, gate, detach: bool, offset: float = 0.0, cast: str = "fp32"):
    """:func:`rmsnorm`; ``detach=False``: differentiable in torch tensors (for :func:`grads`)."""
    if cast not in ("fp32", "llama"):
        raise ValueError(f"cast must be 'fp32' or 'llama', got {cast!r}")
    if cast == "llama" and framework(x) != "torch":
        raise TypeError("cast='llama' needs x as a torch tensor (its dtype is the rounding's)")
    eps = check_eps(eps)
    in_dtype = getattr(x, "dtype", None)
    x64 = _float64(x, "x", detach=detach)
    if x64.ndim < 1 or x64.shape[-1] < 1:
        raise ValueError(f"x must have shape (..., N) with N >= 1, got {tuple(x64.shape)}")
    w64 = _float64(weight, "weight", like=x64, detach=detach)
    if tuple(w64.shape) != tuple(x64.shape[-1:]):
        raise ValueError(f"weight must have shape (N,) = {tuple(x64.shape[-1:])} to match x of shape "
                         f"{tuple(x64.shape)}, got {tuple(w64.shape)}")
    torch_ = framework(x64) == "torch"
    if offset:
        w64 = w64 + offset
    with np.errstate(invalid="ignore", over="ignore"):
        ms = (x64 * x64).mean(-1, keepdim=True) if torch_ else np.mean(x64 * x64, axis=-1, keepdims=True)
        y = x64 / ((ms + eps) ** 0.5)
        if gate is not None:
            g64 = _float64(gate, "gate", like=x64, detach=detach)
            if tuple(g64.shape) != tuple(x64.shape):
                raise ValueError(f"gate must have x's shape {tuple(x64.shape)}, got {tuple(g64.shape)}")
            y = y * (g64 / (1.0 + (-g64).exp() if torch_ else 1.0 + np.exp(-g64)))
        if cast == "llama":
            y = y.to(in_dtype).to(y.dtype)
        y = y * w64
    return y


def grads(x, weight, grad, gate=None, eps: float = 1e-6) -> Dict[str, np.ndarray]:
    """float64 gradients of ``sum(y * grad)`` for ``y = rmsnorm(x, weight, eps, gate)``, by torch
    autograd on the CPU in float64.

    Returns:
        ``{"x": ..., "weight": ..., "gate": ...}`` (no "gate" without one), numpy float64.

    Raises:
        ImportError: without torch.
    """
    import torch

    t = {k: torch.from_numpy(to_numpy64(v, k)).requires_grad_(True)
         for k, v in (("x", x), ("weight", weight), ("gate", gate)) if v is not None}
    y = _rmsnorm(t["x"], t["weight"], eps, t.get("gate"), detach=False)
    (y * torch.from_numpy(to_numpy64(grad, "grad"))).sum().backward()
    return {k: v.grad.numpy() for k, v in t.items()}
