"""The public fused ops (:func:`rmsnorm`, :func:`rmsnorm_gate`, :func:`rmsnorm_add`), their
``nn.Module`` wrappers, and :func:`kernel_report`: the top layer, public as :mod:`gpu_viz.ops`.

Each op has one entry, :func:`_call`: torch eager calls go to the plan of their operand layout
(:func:`.launch.fast`, through :class:`.autograd.EagerFn` where autograd records the call; the C++
launcher first once loaded), ``torch.compile`` to the custom op ``torch.ops.gpu_viz.<op>``, CuPy
arrays to :func:`.launch.launch` after :func:`.checks.validate`.
"""
from __future__ import annotations

import functools
import os
from typing import Dict, List, Optional, Sequence, Tuple

from ... import backend, kernels
from ...check import check_f32_arg
from ...check import check_int as _check_int
from ..dtypes import DTYPES, RMSNORM, RMSNORM_ADD, RMSNORM_GATE
from ..reference import check_eps as _check_eps
from .checks import validate
from . import launch as _launch
from .launch import _CPP, fast, get_kernel, launch
from .names import (CAST_FP32, CAST_ID, CAST_LLAMA, FILE, MAX_N, OP_ID, check_cast, compile_options, describe_kernel,
                    kernel_names)

try:  # torch is optional for the package: without it the ops take CuPy arrays only
    import torch

    from .autograd import EagerFn
except ImportError:  # pragma: no cover - the course environment has torch
    torch = None

_NUMBER = (float, int)
_SECOND = {RMSNORM_GATE: "gate", RMSNORM_ADD: "residual"}

if torch is not None:
    _is_compiling = torch.compiler.is_compiling
    _grad_enabled = torch.is_grad_enabled


def _compiled(op: str, x, x2, weight, eps, weight_offset, cast):
    """The call as torch.compile traces it: ``torch.ops.gpu_viz.<op>`` (whose implementation
    validates everything else, once per call, also when traced)."""
    eps, offset = _check_eps(eps), check_f32_arg("weight_offset", weight_offset)
    check_cast(cast)
    fn = getattr(torch.ops.gpu_viz, op)
    return fn(x, weight, eps, offset, cast == CAST_LLAMA) if x2 is None else fn(
        x, x2, weight, eps, offset, cast == CAST_LLAMA)


def _call(op: str, x, x2, weight, eps, weight_offset, cast):
    """Every public op's one entry: torch eager -> the plan (through :class:`.autograd.EagerFn` when
    autograd records the call), torch.compile -> ``torch.ops.gpu_viz.<op>``, CuPy ->
    :func:`.launch.launch`."""
    if op != RMSNORM and x2 is None:
        raise TypeError(f"{_SECOND[op]} must be a torch CUDA tensor or a CuPy array of x's shape, got None")
    if torch is not None and isinstance(x, torch.Tensor):
        Tensor = torch.Tensor
        # (explicit tests, no generators: this is the per-call path)
        if not (isinstance(weight, Tensor) and (x2 is None or isinstance(x2, Tensor))):
            validate(op, x, x2, weight, eps, weight_offset, cast)  # raises
        if _is_compiling():
            return _compiled(op, x, x2, weight, eps, weight_offset, cast)
        ext = _CPP["module"]  # the C++ launcher: the whole call, autograd node included, where it has the plan
        if ext is not None and _launch.LAUNCHER == "cpp" and type(eps) in _NUMBER and type(weight_offset) in _NUMBER:
            r = ext.call(OP_ID[op], x, x2, weight, eps, weight_offset, CAST_ID.get(cast, -1), True)
            if type(r) is not int:
                return r
        if not (x.is_cuda and weight.is_cuda and (x2 is None or x2.is_cuda)):
            validate(op, x, x2, weight, eps, weight_offset, cast)  # raises
        if _grad_enabled() and (x.requires_grad or weight.requires_grad or (x2 is not None and x2.requires_grad)):
            return EagerFn.apply(op, x, x2, weight, eps, weight_offset, cast)
        return fast(op, x, x2, weight, eps, weight_offset, cast)
    return launch(validate(op, x, x2, weight, eps, weight_offset, cast))


_GUARANTEE = """Batch invariance: a row's output bits depend only on N, the dtypes, eps, weight_offset,
        cast, the weight and that row's values -- never on M, the row's position in x, its
        memory alignment, or whether the problem fits in L2 (one sum order per N: see
        kernels/rmsnorm_fused.cu, "Batch invariance"; tests/test_rmsnorm_fused.py checks it
        bit for bit at M = 1, 3, 64, 1000, 4096)."""


def rmsnorm(x, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = CAST_FP32):
    """Fused RMSNorm, one kernel: ``y = x * (weight + weight_offset) * rsqrt(mean(x^2, -1) + eps)``.

    Args:
        x: ``(..., N)`` torch CUDA tensor or CuPy array, float32 / float16 / bfloat16; the last
            dimension contiguous (stride 1), leading dimensions any strides (rows of a wider
            buffer, e.g. ``buf[:, :N]``, are read in place; leading dims that cannot merge into
            one row stride are copied first).  Any M = prod(leading dims) >= 0, any N >= 1.
        weight: ``(N,)``, same library and device, stride 1; x's dtype or float32 (e.g. an
            fp32 weight with bf16 x, as HF checkpoints ship it).
        eps: >= 0, added to the mean square (fp32 in the kernel).
        weight_offset: added to the weight in fp32 (Gemma's ``1 + w``: 1.0); default 0.
        cast: ``"fp32"`` (default): ``y = T(x * w * r)`` computed in fp32, rounded once to x's
            dtype T; ``"llama"``: HF LlamaRMSNorm's order, ``y = T(T(x * r) * w)``.

    Returns:
        y: x's shape, dtype (whatever the weight's) and library, contiguous; launched on the
        caller's current stream (``torch.cuda.current_stream()`` / CuPy's current stream)
        without host synchronisation.  M = 0 returns an empty y, no launch.  NaN/inf in a row
        make only that row NaN (or 0 where the formula gives 0).
        torch: differentiable in x and weight (backward: fp32 torch composite, not a fused
        kernel); ``torch.compile(fullgraph=True)`` and CUDA graphs accept it
        (``torch.ops.gpu_viz.rmsnorm``).
        {guarantee}

    Raises:
        TypeError: not a torch tensor / CuPy array, mixed libraries, unsupported dtypes, a
            weight neither x's dtype nor float32, non-float eps / weight_offset.
        ValueError: CPU tensors, operands on different devices, weight not of shape (N,),
            a last dimension with stride != 1, N == 0, negative or non-finite eps, a
            non-finite weight_offset, an unknown cast.
        GPUUnavailable: in CPU mode (after the checks above).
    """
    return _call(RMSNORM, x, None, weight, eps, weight_offset, cast)


def rmsnorm_gate(x, gate, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = CAST_FP32):
    """Fused RMSNorm + SiLU gate, one kernel:
    ``y = x * (weight + weight_offset) * silu(gate) * rsqrt(mean(x^2, -1) + eps)`` -- the
    statistic from x only.

    Args:
        x, gate: ``(..., N)``, same shape (strides may differ) and dtype, torch CUDA tensors or
            CuPy arrays, float32 / float16 / bfloat16, last dimension contiguous.
        weight: ``(N,)``, x's dtype or float32.  eps, weight_offset, cast: as in :func:`rmsnorm`
            ("llama" rounds ``x * silu(g) * r`` to x's dtype before the weight).

    Returns:
        y as in :func:`rmsnorm`; torch: differentiable in x, gate and weight (fp32 torch
        composite backward).  ``silu(g) = g / (1 + e^-g)`` with the fast ``__expf`` /
        ``__fdividef`` intrinsics (relative error <= ~1.5e-6 for |g| <= 8, inside
        ``TOLERANCES``; exactly -0 / NaN at the limits like the float64 formula).
        {guarantee}

    Raises:
        as :func:`rmsnorm`, and ValueError when gate's shape differs from x's, TypeError when
        its dtype does.
    """
    return _call(RMSNORM_GATE, x, gate, weight, eps, weight_offset, cast)


def rmsnorm_add(x, residual, weight, eps: float = 1e-6, *, weight_offset: float = 0.0, cast: str = CAST_FP32):
    """Fused residual add + RMSNorm, one kernel (vLLM's ``fused_add_rms_norm``, out of place):
    ``h = x + residual`` (rounded to x's dtype), ``y = h * (weight + weight_offset) *
    rsqrt(mean(h^2, -1) + eps)``; reads x and residual once, writes h and y once.

    Args:
        x, residual: ``(..., N)``, same shape and dtype (strides may differ), last dimension
            contiguous.  weight, eps, weight_offset, cast: as in :func:`rmsnorm`.

    Returns:
        ``(y, h)``: both x's shape and dtype, contiguous; torch: differentiable in x, residual
        and weight through both outputs.  {guarantee}

    Raises:
        as :func:`rmsnorm`, and ValueError / TypeError when residual's shape / dtype differ
        from x's.
    """
    return _call(RMSNORM_ADD, x, residual, weight, eps, weight_offset, cast)


for _f in (rmsnorm, rmsnorm_gate, rmsnorm_add):
    _f.__doc__ = _f.__doc__.replace("{guarantee}", _GUARANTEE)


# ---------------------------------------------------------------------------------------
# nn.Module wrappers (the thinnest layer: a weight parameter and eps)

if torch is not None:
    class FusedRMSNorm(torch.nn.Module):
        """``y = rmsnorm(x, self.weight, self.eps, weight_offset=..., cast=...)`` with a learnable
        ``weight`` of shape (N,); ``forward(x, residual)`` returns ``rmsnorm_add``'s ``(y, h)``.

        Loads an HF ``LlamaRMSNorm`` state dict unchanged (its one entry is ``weight``; pass
        ``cast="llama"`` for its cast order), and a Gemma-style one with ``weight_offset=1.0``
        (Gemma stores w and scales by ``1 + w``).

        Args:
            N: features per row, >= 1.  eps: >= 0.  device, dtype: of the weight (ones, or
            zeros with a weight_offset of 1 -- the identity either way); the weight may be
            float32 with fp16/bf16 activations.  weight_offset, cast: as in :func:`rmsnorm`.
        ``forward(x)``: x ``(..., N)`` CUDA tensor; see :func:`rmsnorm`.
        """

        def __init__(self, N: int, eps: float = 1e-6, device=None, dtype=None, *, weight_offset: float = 0.0,
                     cast: str = CAST_FP32):
            super().__init__()
            N = _check_int("N", N, 1, MAX_N)
            self.eps = _check_eps(eps)
            self.weight_offset = check_f32_arg("weight_offset", weight_offset)
            self.cast = check_cast(cast)
            if dtype is not None and dtype not in (torch.float32, torch.float16, torch.bfloat16):
                raise TypeError(f"dtype (of the weight) must be torch.float32, torch.float16 or "
                                f"torch.bfloat16, got {dtype}")
            init = torch.zeros if self.weight_offset == 1.0 else torch.ones
            self.weight = torch.nn.Parameter(init(N, device=device, dtype=dtype))

        def forward(self, x, residual=None):
            if residual is not None:
                return rmsnorm_add(x, residual, self.weight, self.eps, weight_offset=self.weight_offset,
                                   cast=self.cast)
            return rmsnorm(x, self.weight, self.eps, weight_offset=self.weight_offset, cast=self.cast)

        def extra_repr(self) -> str:
            more = f", weight_offset={self.weight_offset:g}" if self.weight_offset else ""
            more += f", cast={self.cast!r}" if self.cast != CAST_FP32 else ""
            return f"N={self.weight.shape[0]}, eps={self.eps:g}{more}"

    class FusedRMSNormGate(FusedRMSNorm):
        """``y = rmsnorm_gate(x, gate, self.weight, self.eps, ...)``; ``forward(x, gate)``."""

        def forward(self, x, gate):
            return rmsnorm_gate(x, gate, self.weight, self.eps, weight_offset=self.weight_offset, cast=self.cast)


# ---------------------------------------------------------------------------------------
# what the compiler decided

@functools.lru_cache(maxsize=None)
def _ptxas_rows(arch: str) -> Tuple:
    """ptxas rows for ``arch``: one nvcc per module (dtype, the fp32-weight builds of fp16 / bf16,
    each also as the extended-output build), as many at once as there are CPUs."""
    from concurrent.futures import ThreadPoolExecutor

    builds = [(dt, w32, ext) for dt in DTYPES for w32 in ((False,) if dt == "float32" else (False, True))
              for ext in (False, True)]
    with ThreadPoolExecutor(min(len(builds), os.cpu_count() or 1)) as pool:
        parts = pool.map(lambda b: kernels.nvcc_compile(FILE, arch, compile_options(*b)), builds)
        return tuple(u for part in parts for u in part)


def kernel_report(source: str = "auto", arches: Optional[Sequence[str]] = None) -> List[Dict]:
    """Registers and spills of every kernel in ``kernels/rmsnorm_fused.cu``.

    Args:
        source: ``"ptxas"`` (local nvcc, ``-Xptxas -v``, for each of ``arches``; no GPU needed),
            ``"device"`` (NVRTC for the live GPU, ``cudaFuncGetAttributes``), or ``"auto"``
            (device on a GPU, else ptxas).
        arches: for ptxas, default ``gpu_viz.kernels.ARCHES`` (sm_75, sm_80, sm_89, sm_90).

    Returns:
        one dict per (kernel, arch): ``kernel``, ``op``, ``variant``, ``dtype``, ``vec``,
        ``ept``, ``arch``, ``registers``, ``spill_stores_bytes``, ``spill_loads_bytes`` (ptxas;
        None from the device), ``local_bytes`` (stack frame / local memory per thread),
        ``shared_bytes``, ``max_threads_per_block`` (device only, else None), ``source``.

    Raises:
        ValueError: unknown source.  FileNotFoundError: ptxas without nvcc.
        GPUUnavailable: ``"device"`` in CPU mode.
    """
    if source == "auto":
        source = "device" if backend.has_gpu() else "ptxas"
    rows = []
    if source == "ptxas":
        for arch in arches or kernels.ARCHES:
            for u in _ptxas_rows(arch):
                rows.append({"kernel": u.kernel, **describe_kernel(u.kernel), "arch": u.arch,
                             "registers": u.registers, "spill_stores_bytes": u.spill_stores_bytes,
                             "spill_loads_bytes": u.spill_loads_bytes, "local_bytes": u.stack_frame_bytes,
                             "shared_bytes": u.shared_bytes, "max_threads_per_block": None,
                             "source": "ptxas"})
    elif source == "device":
        b = backend.require_gpu("kernel_report(source='device')")
        for name in kernel_names():
            d = describe_kernel(name)
            k = get_kernel(name, d["dtype"], b.device_id)
            rows.append({"kernel": name, **d, "arch": b.sm, "registers": int(k.num_regs),
                         "spill_stores_bytes": None, "spill_loads_bytes": None,
                         "local_bytes": int(k.local_size_bytes), "shared_bytes": int(k.shared_size_bytes),
                         "max_threads_per_block": int(k.max_threads_per_block), "source": "device"})
    else:
        raise ValueError(f"source must be 'auto', 'ptxas' or 'device', got {source!r}")
    return rows
