"""The deck's RMSNorm finale: the eager module, the four-phase kernel, and their checks.

    y[r, i] = x[r, i] * rsqrt(mean_i(x[r, i]^2) + eps) * w[i]

Layers, thinnest first (data path: ``kernels/rmsnorm.cu`` --(:func:`four_phase`)--> output
--(:func:`check_close` against :func:`reference`)--> pass/fail):

* :class:`EagerRMSNorm` -- the deck's slide "The Naive Version", line for line: six to seven
  separate PyTorch ops, each a kernel launch that reads and writes VRAM on a GPU.
* :func:`four_phase` -- launches ``kernels/rmsnorm.cu`` (one block per row) on the caller's
  current stream; ``variant="deck"`` is the deck's code as shown, ``"guarded"`` is correct for
  any ``block`` in 32..1024 and any row length.
* :func:`reference` -- float64 numpy, the ground truth for every check.
* :func:`check_close` -- one comparison helper whose failure names the buffer, the first bad
  indices with both values, the mismatch count and NaN/inf disagreements.
* :func:`eager_ops`, :func:`eager_kernels` -- what the eager module dispatches (any device) and
  launches (CUDA, via ``torch.profiler``).
* :func:`deck_phase2_model` -- numpy model of the deck's phase 2 that shows its latent fault.

``gpu_viz.benchmarks`` calls :func:`four_phase` (provider "deck4phase") and
:class:`EagerRMSNorm` (provider "eager"): keep their names and signatures stable.
"""
from __future__ import annotations

import math
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import backend
from .arrays import framework as _framework
from .arrays import to_numpy64 as _to_numpy64

try:  # torch is an optional dependency of the package; this module's eager half needs it
    import torch
    from torch import nn

    _Module = nn.Module
except ImportError:  # pragma: no cover - the course environment has torch
    torch = None
    nn = None
    _Module = object

KERNEL_FILE = "rmsnorm.cu"

#: Variants of the kernel (see the header of kernels/rmsnorm.cu).
DECK = "deck"        # the deck's code as shown; right only at block=1024
GUARDED = "guarded"  # correct for any block in 32..1024 and any d >= 1
VARIANTS: Tuple[str, ...] = (DECK, GUARDED)

#: The deck's launch: one block of 1024 threads per row of 2048 features.
DECK_BLOCK = 1024
DECK_D = 2048
MIN_BLOCK, MAX_BLOCK = 32, 1024
#: Row length limit: the kernels' int loop index i + blockDim.x must not overflow.
MAX_D = 2**31 - 1 - MAX_BLOCK
#: Rows per launch limit: gridDim.x.
MAX_ROWS = 2**31 - 1

#: dtype name -> kernel entry-point suffix.
_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
DTYPES: Tuple[str, ...] = tuple(_SUFFIX)

#: (atol, rtol) per dtype for four_phase vs the float64 reference, fresh N(0, 1) data.
#: fp32: fp32 accumulation over up to 16384 terms and rsqrtf (<= 2 ulp) stay below ~1e-6
#: relative (a float32 CPU emulation of the kernel, d up to 16384, block 32..1024, summing the
#: partials sequentially -- worse than the kernel's tree), so 1e-5 leaves a 10x margin.
#: fp16 / bf16: the one final rounding costs at most half an ulp, 2^-11 (fp16) and 2^-8 (bf16)
#: relative; the tolerances are about twice that.
TOLERANCES: Dict[str, Tuple[float, float]] = {
    "float32": (1e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (8e-3, 8e-3),
}


# ---------------------------------------------------------------------------------------
# the eager module: the deck's slide "The Naive Version: Eager PyTorch"

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
        _check_eps(eps)
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(int(d), device=device, dtype=dtype))

    @classmethod
    def from_weight(cls, weight, eps: float = 1e-6) -> "EagerRMSNorm":
        """A module whose ``weight`` is a copy of the 1-D tensor ``weight`` (same device, dtype)."""
        if torch is None or not isinstance(weight, torch.Tensor) or weight.ndim != 1:
            raise ValueError(f"weight must be a 1-D torch tensor of shape (d,), got {_describe(weight)}")
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


# ---------------------------------------------------------------------------------------
# argument checks (all run before anything touches a GPU, so they are CPU-testable)

def _describe(a) -> str:
    shape = getattr(a, "shape", None)
    dtype = getattr(a, "dtype", None)
    if shape is None:
        return type(a).__name__
    return f"{type(a).__module__.split('.')[0]}.{type(a).__name__} of shape {tuple(shape)}, dtype {dtype}"


def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)):
        raise TypeError(f"eps must be a float, got {type(eps).__name__}")
    if not math.isfinite(float(eps)) or float(eps) < 0:
        raise ValueError(f"eps must be finite and >= 0, got {eps!r}")
    return float(eps)


def _dtype_name(a) -> str:
    # torch.float16 -> "float16"; cupy/numpy dtype('float16') -> "float16"
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
    _check_eps(eps)
    fw = _framework(x)
    if fw is None:
        raise TypeError(f"x must be a torch.Tensor or cupy.ndarray on a CUDA device, got {_describe(x)}")
    if _framework(weight) != fw:
        raise TypeError(f"weight must be the same kind of array as x ({fw}), got {_describe(weight)}")
    dtype = _dtype_name(x)
    if dtype not in _SUFFIX:
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
# launcher and public op

_kernel_cache: Dict[Tuple[str, str, int], object] = {}
_stream_cache: Dict[Tuple[int, int], object] = {}


def kernel_name(variant: str, dtype: str) -> str:
    """Entry point in kernels/rmsnorm.cu: ``kernel_name("deck", "float16") == "rmsnorm_deck_f16"``."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if dtype not in _SUFFIX:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return f"rmsnorm_{variant}_{_SUFFIX[dtype]}"


def get_kernel(variant: str, dtype: str, device: int = 0):
    """The compiled ``cupy.RawKernel`` (NVRTC, this GPU's arch; cached); ``.num_regs`` etc. are the compiler's."""
    key = (variant, dtype, device)
    k = _kernel_cache.get(key)
    if k is None:
        import cupy

        from . import kernels

        with cupy.cuda.Device(device):
            k = kernels.function(KERNEL_FILE, kernel_name(variant, dtype))
        _kernel_cache[key] = k
    return k


def _torch_stream(device: int):
    """CuPy view of torch's current stream on ``device`` (cached by pointer)."""
    import cupy

    ptr = torch.cuda.current_stream(device).cuda_stream
    key = (ptr, device)
    s = _stream_cache.get(key)
    if s is None:
        s = cupy.cuda.Stream.null if ptr == 0 else cupy.cuda.ExternalStream(ptr, device)
        _stream_cache[key] = s
    return s


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
    import cupy

    with cupy.cuda.Device(dev):
        if fw == "torch":
            args = (np.uint64(x.data_ptr()), np.uint64(weight.data_ptr()), np.uint64(out.data_ptr())) + scalars
            with _torch_stream(dev):
                kern((M,), (int(block),), args)
        else:
            kern((M,), (int(block),), (x, weight, out) + scalars)  # CuPy's current stream
    return out


def _cupy_empty_like(x):
    import cupy

    with cupy.cuda.Device(x.device.id):
        return cupy.empty_like(x)


# ---------------------------------------------------------------------------------------
# reference and comparison

def reference(x, weight, eps: float = 1e-6) -> np.ndarray:
    """RMSNorm in float64 numpy: ``x / sqrt(mean(x^2, -1) + eps) * weight``.

    Args:
        x: ``(..., d)`` numpy / torch (any device, any float dtype) / CuPy array; its values are
            taken exactly (bf16 and fp16 widen to float64 without rounding).
        weight: ``(d,)``.
    Returns:
        float64 numpy array of x's shape.
    Raises:
        TypeError, ValueError: unsupported type, mismatched shapes, bad eps.
    """
    eps = _check_eps(eps)
    x64, w64 = _to_numpy64(x, "x"), _to_numpy64(weight, "weight")
    if x64.ndim < 1 or w64.shape != (x64.shape[-1],):
        raise ValueError(f"weight must have shape (d,) = ({x64.shape[-1] if x64.ndim else '?'},) to match x "
                         f"of shape {x64.shape}, got {w64.shape}")
    ms = np.mean(x64 * x64, axis=-1, keepdims=True)
    return x64 / np.sqrt(ms + eps) * w64


class MismatchError(AssertionError):
    """Raised by :func:`check_close`; ``report`` holds the counts and first bad indices."""

    def __init__(self, message: str, report: Dict):
        super().__init__(message)
        self.report = report


def check_close(got, ref, atol: float, rtol: float, name: str = "y", show: int = 5) -> Dict:
    """Compare ``got`` with the float64 ``ref``: ``|got - ref| <= atol + rtol * |ref|`` everywhere.

    NaN or inf in ``got`` where ``ref`` is finite counts as a mismatch (so a NaN-poisoned
    output that a kernel never wrote fails).

    Returns:
        ``{"n": elements, "max_abs_err": ..., "max_rel_err": ...}`` on success.
    Raises:
        MismatchError: naming ``name``, the number of mismatches, NaN/inf counts and the first
            ``show`` bad indices with both values.
        ValueError: shapes differ.
    """
    g = _to_numpy64(got, name)
    r = np.asarray(ref, dtype=np.float64)
    if g.shape != r.shape:
        raise ValueError(f"{name}: shape {g.shape} differs from the reference's {r.shape}")
    err = np.abs(g - r)
    finite = np.isfinite(g)
    bad = ~finite | (err > atol + rtol * np.abs(r))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(r) > 0, err / np.abs(r), err)
    report = {"n": int(g.size),
              "max_abs_err": float(np.max(err[finite], initial=0.0)),
              "max_rel_err": float(np.max(rel[finite], initial=0.0))}
    nbad = int(bad.sum())
    if nbad:
        idx = np.argwhere(bad)[:show]
        pairs = "; ".join(f"{tuple(int(i) for i in ix)}: got {float(g[tuple(ix)])!r}, expected {float(r[tuple(ix)])!r}"
                          for ix in idx)
        report.update(mismatches=nbad, nan=int(np.isnan(g).sum()), inf=int(np.isinf(g).sum()),
                      first=[tuple(int(i) for i in ix) for ix in idx])
        raise MismatchError(
            f"{name}: {nbad} of {g.size} elements outside atol={atol:g} + rtol={rtol:g}*|ref| "
            f"({report['nan']} NaN, {report['inf']} inf in {name}; max abs err over finite "
            f"{report['max_abs_err']:.3g}); first: {pairs}", report)
    return report


# ---------------------------------------------------------------------------------------
# what the eager version costs: ops dispatched, kernels launched

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
        raise ValueError(f"x must be a CUDA tensor to count kernel launches, got {_describe(x)}")
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


#: Bytes per element by dtype name.
DTYPE_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def eager_traffic(M: int, d: int, dtype: str = "float32") -> List[Tuple[str, int, int]]:
    """Logical bytes each op of :class:`EagerRMSNorm` reads and writes for x of shape (M, d).

    Tensor sizes only (what each kernel must read and write if nothing stays in a cache);
    weight has x's dtype, every intermediate is fp32 (``x.float()``), so is the output.
    Returns ``[(op, bytes_read, bytes_written), ...]`` in dispatch order (see :func:`eager_ops`).
    Compare :func:`four_phase_traffic`.  Raises ValueError for an unknown dtype or M, d < 1.
    """
    s = _size(dtype)
    if M < 1 or d < 1:
        raise ValueError(f"M and d must be >= 1, got M={M}, d={d}")
    f, n = 4, M * d
    ops = [] if dtype == "float32" else [("x.float() (_to_copy)", s * n, f * n)]
    return ops + [("pow(2)", f * n, f * n), ("mean(-1)", f * n, f * M), ("+ eps", f * M, f * M),
                  ("rsqrt", f * M, f * M), ("x * rsqrt", s * n + f * M, f * n),
                  ("weight * xn", f * n + s * d, f * n)]


def four_phase_traffic(M: int, d: int, dtype: str = "float32") -> Tuple[int, int]:
    """(bytes_read, bytes_written) the fused kernel must move: x and w once in, y once out.

    (Phase 4 reads x a second time; for the deck's rows of a few KB that re-read hits L1/L2.)
    """
    s = _size(dtype)
    return s * M * d + s * d, s * M * d


def _size(dtype: str) -> int:
    if dtype not in DTYPE_SIZE:
        raise ValueError(f"dtype must be one of {tuple(DTYPE_SIZE)}, got {dtype!r}")
    return DTYPE_SIZE[dtype]


# ---------------------------------------------------------------------------------------
# the deck's latent fault, modelled

def deck_phase2_model(local: Sequence[float], stale_smem: Optional[Sequence[float]] = None) -> Dict:
    """What the deck's phase 2 computes, in float32, warp-synchronously (numpy).

    Args:
        local: the per-thread partial sums, length blockDim (a multiple of 32, 32..1024; a
            partial warp's full-mask shuffle is undefined, so it is not modelled).
        stale_smem: what the 32 ``smem`` slots held before the kernel wrote them (default:
            zeros).  Warps that exist overwrite their slot; the others keep it.
    Returns:
        ``{"total": thread 0's total, "nwarps": ..., "stale_read": slots read but never
        written, "correct": the sum of the warps' partials in the same order}``.
    Raises:
        ValueError: blockDim not a multiple of 32 in 32..1024, or stale_smem not 32 values.
    """
    v = np.asarray(local, dtype=np.float32)
    n = v.size
    if n % 32 or not 32 <= n <= 1024:
        raise ValueError(f"local must have blockDim = a multiple of 32 in 32..1024 values, got {n}")
    smem = np.zeros(32, np.float32) if stale_smem is None else np.asarray(stale_smem, np.float32).copy()
    if smem.shape != (32,):
        raise ValueError(f"stale_smem must hold 32 values (one per possible warp), got shape {smem.shape}")

    def warp_tree(lanes):  # the 5 shuffle steps; lane l adds lane l+off (0 past the warp end)
        lanes = lanes.copy()
        for off in (16, 8, 4, 2, 1):
            shifted = np.concatenate([lanes[off:], np.zeros(off, np.float32)])
            lanes = (lanes + shifted).astype(np.float32)
        return lanes[0]

    nwarps = n // 32
    partials = np.array([warp_tree(v[w * 32:(w + 1) * 32]) for w in range(nwarps)], np.float32)
    smem[:nwarps] = partials
    total = warp_tree(smem)  # tid < 32 reads smem[tid] for ALL 32 slots
    padded = np.zeros(32, np.float32)
    padded[:nwarps] = partials
    return {"total": float(total), "nwarps": nwarps, "stale_read": list(range(nwarps, 32)),
            "correct": float(warp_tree(padded))}
