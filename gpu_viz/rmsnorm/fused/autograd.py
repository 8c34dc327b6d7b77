"""Gradients and torch's dispatcher: the fused ops as torch custom ops
(``torch.ops.gpu_viz.rmsnorm`` / ``rmsnorm_gate`` / ``rmsnorm_add``, with ``register_fake`` and
``register_autograd``, so ``torch.compile(fullgraph=True)`` and CUDA-graph capture accept them),
the eager autograd path (:class:`EagerFn`), and the backward every path shares (:func:`backward`,
also the C++ launcher's autograd node's: :func:`gpu_viz.rmsnorm.launcher.set_backward`).

The backward is a composite of fp32 torch ops, not a CUDA kernel of ours.
"""
from __future__ import annotations

from typing import Sequence, Tuple

from .. import launcher
from ..dtypes import RMSNORM, RMSNORM_ADD, RMSNORM_GATE
from .launch import fast
from .names import CAST_FP32, CAST_LLAMA

try:  # torch is optional for the package: without it the ops take CuPy arrays only
    import torch
except ImportError:  # pragma: no cover - the course environment has torch
    torch = None


def torch_backward(grad, x, weight, gate, eps: float, needs: Sequence[bool], offset: float = 0.0):
    """Gradients by a composite of fp32 torch ops (not a CUDA kernel of ours):

        a = x * silu(g) (or x),  r = rsqrt(mean(x^2) + eps),  y = a * w' * r,  w' = w + offset
        dx = r * (G w' s) - x r^3 mean(G w' a),   s = silu(g) (or 1)
        dw = sum_rows(G a r)
        dg = G x w' r silu'(g),   silu'(g) = sigmoid(g) (1 + g (1 - sigmoid(g)))

    The "llama" cast's intermediate rounding counts as the identity.  Returns grads in the
    inputs' dtypes (None where not needed).
    """
    N = x.shape[-1]
    xf = x.float().reshape(-1, N)
    G = grad.float().reshape(-1, N)
    wf = weight.float() + offset if offset else weight.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if gate is not None:
        gf = gate.float().reshape(-1, N)
        sig = torch.sigmoid(gf)
        s = gf * sig
    else:
        s = None
    a = xf * s if s is not None else xf
    Gw = G * wf
    dx = dw = dg = None
    if needs[0]:
        Gws = Gw * s if s is not None else Gw
        dx = (r * Gws - xf * r.pow(3) * (Gw * a).mean(-1, keepdim=True)).reshape(x.shape).to(x.dtype)
    if needs[1]:
        dw = (G * a * r).sum(0).to(weight.dtype)
    if gate is not None and needs[2]:
        dg = (Gw * xf * r * sig * (1.0 + gf * (1.0 - sig))).reshape(gate.shape).to(gate.dtype)
    return dx, dw, dg


def add_backward(grad_y, grad_h, h, x, residual, weight, eps: float, offset: float, needs: Sequence[bool]):
    """Gradients of the add op: y = rmsnorm(h), h = x + residual (both outputs used):
    dh = d rmsnorm / dh (grad_y) + grad_h, dx = dresidual = dh; dw as rmsnorm's."""
    need_h = needs[0] or needs[1]
    dh, dw, _ = torch_backward(grad_y, h, weight, None, eps, (need_h, needs[2]), offset)
    if need_h and grad_h is not None:
        dh = (dh.float() + grad_h.float())
    dx = dh.to(x.dtype) if needs[0] else None
    dr = dh.to(residual.dtype) if needs[1] else None
    return dx, dr, dw


def backward(op: str, grads, x, x2, weight, h, eps: float, offset: float, needs) -> Tuple:
    """``(dx, dx2, dweight)`` of an eager call (x2: the gate or the residual; h: the add op's
    second output); ``needs``: (x, x2, weight) need grads.  The Python and C++ autograd paths
    both come here."""
    nx, n2, nw = needs
    if op == RMSNORM_ADD:
        return add_backward(grads[0], grads[1], h, x, x2, weight, eps, offset, (nx, n2, nw))
    gate = x2 if op == RMSNORM_GATE else None
    dx, dw, d2 = torch_backward(grads[0], x, weight, gate, eps, (nx, nw, n2), offset)
    return dx, d2, dw


#: The ops in kernels/rmsnorm_launcher.cpp's numbering (names.OP_ID).
_OPS_BY_ID = (RMSNORM, RMSNORM_GATE, RMSNORM_ADD)


def ext_backward(op: int, grad_y, grad_h, x, x2, weight, h, eps: float, offset: float, needs):
    """The C++ autograd node's backward: ``(dx, dx2, dweight)`` (None where not needed), by the
    same composite as :class:`EagerFn`."""
    return backward(_OPS_BY_ID[op], (grad_y, grad_h), x, x2, weight, h, eps, offset, needs)


launcher.set_backward(ext_backward)


def _registered(name: str) -> bool:
    """True when ``torch.ops.gpu_viz.<name>`` exists already (a reloaded module keeps the first
    registration instead of failing on a duplicate)."""
    try:
        getattr(torch.ops.gpu_viz, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def _cast(llama: bool) -> str:
    return CAST_LLAMA if llama else CAST_FP32


def _offset_of(inputs, at: int) -> float:
    return inputs[at] if len(inputs) > at else 0.0


if torch is not None and not _registered(RMSNORM):
    @torch.library.custom_op("gpu_viz::rmsnorm", mutates_args=())
    def _rmsnorm_op(x: torch.Tensor, weight: torch.Tensor, eps: float, weight_offset: float = 0.0,
                    llama: bool = False) -> torch.Tensor:
        return fast(RMSNORM, x, None, weight, eps, weight_offset, _cast(llama))

    @_rmsnorm_op.register_fake
    def _(x, weight, eps, weight_offset=0.0, llama=False):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def _rmsnorm_setup(ctx, inputs, output):
        x, weight, eps = inputs[:3]
        ctx.save_for_backward(x, weight)
        ctx.eps, ctx.offset = eps, _offset_of(inputs, 3)

    def _rmsnorm_bwd(ctx, grad):
        x, weight = ctx.saved_tensors
        dx, dw, _ = torch_backward(grad, x, weight, None, ctx.eps, ctx.needs_input_grad[:2], ctx.offset)
        return dx, dw, None, None, None

    _rmsnorm_op.register_autograd(_rmsnorm_bwd, setup_context=_rmsnorm_setup)

if torch is not None and not _registered(RMSNORM_GATE):
    @torch.library.custom_op("gpu_viz::rmsnorm_gate", mutates_args=())
    def _rmsnorm_gate_op(x: torch.Tensor, gate: torch.Tensor, weight: torch.Tensor, eps: float,
                         weight_offset: float = 0.0, llama: bool = False) -> torch.Tensor:
        return fast(RMSNORM_GATE, x, gate, weight, eps, weight_offset, _cast(llama))

    @_rmsnorm_gate_op.register_fake
    def _(x, gate, weight, eps, weight_offset=0.0, llama=False):
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    def _rmsnorm_gate_setup(ctx, inputs, output):
        x, gate, weight, eps = inputs[:4]
        ctx.save_for_backward(x, gate, weight)
        ctx.eps, ctx.offset = eps, _offset_of(inputs, 4)

    def _rmsnorm_gate_bwd(ctx, grad):
        x, gate, weight = ctx.saved_tensors
        nx, ng, nw = ctx.needs_input_grad[:3]
        dx, dw, dg = torch_backward(grad, x, weight, gate, ctx.eps, (nx, nw, ng), ctx.offset)
        return dx, dg, dw, None, None, None

    _rmsnorm_gate_op.register_autograd(_rmsnorm_gate_bwd, setup_context=_rmsnorm_gate_setup)

if torch is not None and not _registered(RMSNORM_ADD):
    @torch.library.custom_op("gpu_viz::rmsnorm_add", mutates_args=())
    def _rmsnorm_add_op(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                        weight_offset: float = 0.0, llama: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
        return fast(RMSNORM_ADD, x, residual, weight, eps, weight_offset, _cast(llama))

    @_rmsnorm_add_op.register_fake
    def _(x, residual, weight, eps, weight_offset=0.0, llama=False):
        return (torch.empty(x.shape, dtype=x.dtype, device=x.device),
                torch.empty(x.shape, dtype=x.dtype, device=x.device))

    def _rmsnorm_add_setup(ctx, inputs, output):
        x, residual, weight, eps = inputs[:4]
        ctx.save_for_backward(x, residual, weight, output[1])
        ctx.eps, ctx.offset = eps, _offset_of(inputs, 4)

    def _rmsnorm_add_bwd(ctx, grad_y, grad_h):
        x, residual, weight, h = ctx.saved_tensors
        dx, dr, dw = add_backward(grad_y, grad_h, h, x, residual, weight, ctx.eps, ctx.offset,
                                  ctx.needs_input_grad[:3])
        return dx, dr, dw, None, None, None

    _rmsnorm_add_op.register_autograd(_rmsnorm_add_bwd, setup_context=_rmsnorm_add_setup)


if torch is not None:
    class EagerFn(torch.autograd.Function):
        """The eager autograd path (no dispatcher round trip): the same plan launch forward and
        the same composite backward as the custom ops' ``register_autograd``."""

        @staticmethod
        def forward(ctx, op, x, x2, weight, eps, offset, cast):
            res = fast(op, x, x2, weight, eps, offset, cast)
            ctx.op, ctx.eps, ctx.offset = op, float(eps), float(offset)
            ctx.save_for_backward(x, x2, weight, res[1] if op == RMSNORM_ADD else None)
            return res

        @staticmethod
        def backward(ctx, *grads):
            x, x2, weight, h = ctx.saved_tensors
            dx, d2, dw = backward(ctx.op, grads, x, x2, weight, h, ctx.eps, ctx.offset, ctx.needs_input_grad[1:4])
            return None, dx, d2, dw, None, None, None
