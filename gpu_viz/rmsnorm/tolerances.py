"""THE tolerance table of the RMSNorm family: how far an output may be from the float64
reference (:mod:`gpu_viz.rmsnorm.reference`), per storage dtype, for every provider the package
checks (its own kernels and the baselines alike).  An element passes when
``|got - want| <= atol + rtol * |want|`` (:func:`gpu_viz.check.compare`).

Derivation.  Every provider computes in fp32 and stores in the input's dtype.
  * fp16 / bf16: storing rounds once, at most half an ulp: u = 2^-11 (fp16) or 2^-8 (bf16)
    relative.  A provider may round once more on the way (e.g. x * rstd stored before the
    multiply by w, as Liger's "llama" casting does): 2u.  Twice that for margin: rtol = 4u,
    i.e. 1.95e-3 (fp16) and 1.56e-2 (bf16), written 2e-3 and 1.6e-2; atol the same, for
    outputs near zero where the relative error of the fp32 arithmetic below is all there is.
  * fp32: no storage rounding to speak of; the arithmetic is what counts: the sum of up to
    131072 squares in fp32 (each thread adds its N / blockDim terms in turn, then a tree of
    log2 blockDim levels), rsqrtf (<= 2 ulp) and the fast silu
    (__expf <= 2 + 1.2|g| ulp, __fdividef <= 2 ulp: ~12 ulp = 1.5e-6 at |g| = 8) give ~1e-6
    relative; 2e-5 leaves margin up to |g| ~ 100.
  * gradients: an fp32 composite rounded to the dtype, and the weight's gradient sums over all
    M rows: the same reasoning with about 5x the margin: 1e-4 (fp32) and 1e-2 (fp16), 6e-2
    (bf16, ~4x).
A lost reduction term (the seed's 96-thread fault) or a wrong row is off by far more than these.
"""
from __future__ import annotations

from typing import Dict, Tuple

from .dtypes import dtype_name

#: (atol, rtol) of an output against the float64 reference, by dtype name.
TOLERANCES: Dict[str, Tuple[float, float]] = {
    "float32": (2e-5, 2e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}
#: (atol, rtol) of the gradients against the float64 reference, by dtype name.
GRAD_TOLERANCES: Dict[str, Tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (6e-2, 6e-2),
}


def tolerance(dtype, grad: bool = False) -> Tuple[float, float]:
    """``(atol, rtol)`` for ``dtype`` (torch / numpy dtype or name); ``grad`` for gradients."""
    return (GRAD_TOLERANCES if grad else TOLERANCES)[dtype_name(dtype)]
