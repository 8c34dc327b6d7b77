"""CPU model of ``kernels/vector_add.cu`` (notebook 03): the same Trace as
``gpu_viz.record.vector_add``, in numpy.

Deterministic fields (indices, warps, lanes, values) are computed the way the kernel computes
them, in float32 with its rounding (one FADD), so a GPU test can assert model == silicon bit for
bit.  ``smid`` and ``hw_warpid`` are only known to silicon: here they come from :data:`SMID_MODEL`
and are listed in ``Trace.simulated``.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

import numpy as np

from .. import backend, device
from ..trace import MODEL_SOURCE, Step, Trace
from ..words import count

WARP = 32

_L4 = device.SPEC_SHEETS[device.DECK_GPU]


def smid_model(info: device.DeviceInfo) -> str:
    """How the CPU model invents the fields only silicon knows, for the GPU ``info`` it models
    (named on every figure)."""
    return (f"round-robin model over {info.name.replace('NVIDIA ', '')}'s {info.sm_count} SMs: block b runs on "
            f"SM b mod {info.sm_count}; %warpid = the warp's number inside its block")


#: :func:`smid_model` of the deck's L4 (the model's GPU when no other is named).
SMID_MODEL = smid_model(_L4)

#: The six warp-instructions of the deck, as source lines of region ``vector_add``
#: (label, text that identifies the line in kernels/vector_add.cu).
VECTOR_ADD_STEPS = (
    ("index: i = blockIdx.x * blockDim.x + threadIdx.x", "1 · which element"),
    ("bounds check: i < n sets a predicate per lane", "2 · bounds check"),
    ("LDG: load A[i], 32 lanes, one instruction", "3 · LDG"),
    ("LDG: load B[i], 32 lanes, one instruction", "4 · LDG"),
    ("FADD: c = a + b, 32 adds in one instruction", "5 · FADD"),
    ("STG: store C[i], 32 lanes, one instruction", "6 · STG"),
)

VECTOR_ADD_FIELDS = ("block", "thread", "index", "warp", "lane", "smid", "hw_warpid")


def check_launch(n: int, block: int, *, n_name: str = "n", min_n: int = 0) -> Tuple[int, int]:
    """Validate an element count and a block size; return them as Python ints (a numpy integer
    argument, unsigned or 32-bit, would wrap or overflow in the launch arithmetic).

    Raises:
        TypeError / ValueError naming the argument and what was expected.
    """
    for name, v in ((n_name, n), ("block", block)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    n, block = int(n), int(block)
    if n < min_n:
        raise ValueError(f"{n_name} must be >= {min_n}, got {n}")
    if n >= 2**31:
        raise ValueError(f"{n_name} must be < 2**31 (the kernel takes an int), got {n}")
    if not 1 <= block <= 1024:
        raise ValueError(f"block must be 1..1024 threads (CUDA's per-block cap), got {block}")
    return n, block


def as_f32(name: str, arr, n: Optional[int] = None) -> np.ndarray:
    a = np.asarray(arr)
    if a.ndim != 1 or a.dtype != np.float32:
        raise TypeError(f"{name} must be a 1-D float32 array, got shape {a.shape} dtype {a.dtype}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} must have {n} elements, got {a.shape[0]}")
    return a


def round_robin_smid(blocks: np.ndarray, sm_count: int) -> np.ndarray:
    """The round-robin model's SM for each block index: ``block mod sm_count``."""
    return (np.asarray(blocks) % sm_count).astype(np.int32)


def vector_add_steps(n_warps: int, region_lines) -> list:
    """The player's steps: launch, then each of the six instructions issued by warp 0, 1, ...

    ``region_lines[k]`` is the 1-based line in region ``vector_add`` of step k (or None).
    """
    steps = [Step(f"launch: {count(n_warps, 'warp')} resident, nothing issued yet", "vector_add", None,
                  {"step": -1, "warp": -1})]
    for k, (label, _needle) in enumerate(VECTOR_ADD_STEPS):
        for w in range(n_warps):
            steps.append(Step(f"warp {w} issues {label}", "vector_add", region_lines[k],
                              {"step": k, "warp": w}))
    return steps


def trace(A: np.ndarray, B: np.ndarray, block: int = 64, *, sm_count: Optional[int] = None,
          region_lines=None, seed: Optional[int] = None, info: Optional[device.DeviceInfo] = None) -> Trace:
    """Model of the traced ``vector_add``: C = A + B with one thread per element.

    Args:
        A, B: float32 arrays of shape [n].
        block: threads per block (1..1024); grid = ceil(n / block).
        sm_count: SMs of the round-robin model (default: ``info``'s).
        info: the GPU modelled (default: the deck's L4 spec sheet); the notebooks pass the GPU of
            the committed records (``gpu_viz.measure.records.lesson_device``), so the model and
            the recorded numbers beside it describe one GPU.
        region_lines: 6 source lines for the steps (default: None each).
        seed: the inputs' seed (kept in ``params``).

    Returns:
        Trace with arrays, for every launched thread t (T = grid * block):
        block, thread, index, warp, lane, smid, hw_warpid: int32 [T];
        a, b, c: float32 [T], NaN where index >= n; A, B: the float32 [n] inputs.
        ``smid`` and ``hw_warpid`` are simulated (:data:`SMID_MODEL`).
    """
    A = as_f32("A", A)
    n = A.shape[0]
    B = as_f32("B", B, n)
    n, block = check_launch(n, block, min_n=1)
    info = info or _L4
    sm_count = sm_count or info.sm_count
    sm_model = smid_model(info) if sm_count == info.sm_count else smid_model(
        dataclasses.replace(info, sm_count=sm_count))
    grid = -(-n // block)
    t = np.arange(grid * block, dtype=np.int64)
    blk = (t // block).astype(np.int32)
    thr = (t % block).astype(np.int32)
    idx = t.astype(np.int32)
    warp = thr // WARP
    lane = thr % WARP
    ok = idx < n
    a = np.full(t.shape, np.nan, np.float32)
    b = np.full(t.shape, np.nan, np.float32)
    c = np.full(t.shape, np.nan, np.float32)
    a[ok], b[ok] = A[idx[ok]], B[idx[ok]]
    c[ok] = a[ok] + b[ok]  # float32 + float32, rounded to nearest: the kernel's FADD
    arrays = {"block": blk, "thread": thr, "index": idx, "warp": warp.astype(np.int32),
              "lane": lane.astype(np.int32), "smid": round_robin_smid(blk, sm_count),
              "hw_warpid": warp.astype(np.int32), "a": a, "b": b, "c": c, "A": A.copy(), "B": B.copy()}
    lines = list(region_lines) if region_lines is not None else [None] * len(VECTOR_ADD_STEPS)
    n_warps = grid * (-(-block // WARP))
    return Trace(kernel="vector_add",
                 params={"n": n, "block": block, "grid": grid, "warps": n_warps, "sm_model": sm_model,
                         "seed": seed, "gpu": info.name},
                 arrays=arrays, source=MODEL_SOURCE, provenance=backend.MODEL_LABEL + "; " + sm_model,
                 steps=vector_add_steps(n_warps, lines), simulated=("smid", "hw_warpid"))
