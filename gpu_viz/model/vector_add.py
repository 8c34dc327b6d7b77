"""CPU models of ``kernels/vector_add.cu`` and ``kernels/divergence.cu``: the same Trace, in numpy.

Deterministic fields (indices, warps, lanes, values, branches, active masks) are computed the
way the kernels compute them, warp by warp, in float32 with the kernels' rounding
(``__fadd_rn``, ``__fmul_rn``), so a GPU test can assert model == silicon bit for bit.
``smid`` and ``hw_warpid`` are only known to silicon: here they come from
:data:`SMID_MODEL` and are listed in ``Trace.simulated``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import backend, device
from ..trace import MODEL_SOURCE, Step, Trace

WARP = 32

#: How the CPU model invents the fields only silicon knows (named on every figure).
SMID_MODEL = ("round-robin model, L4's 58 SMs: block b runs on SM b mod 58; "
              "%warpid = the warp's number inside its block")

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


def check_launch(n: int, block: int, *, n_name: str = "n", min_n: int = 0) -> None:
    """Validate an element count and a block size.

    Raises:
        TypeError / ValueError naming the argument and what was expected.
    """
    for name, v in ((n_name, n), ("block", block)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if n < min_n:
        raise ValueError(f"{n_name} must be >= {min_n}, got {n}")
    if n >= 2**31:
        raise ValueError(f"{n_name} must be < 2**31 (the kernel takes an int), got {n}")
    if not 1 <= block <= 1024:
        raise ValueError(f"block must be 1..1024 threads (CUDA's per-block cap), got {block}")


def _as_f32(name: str, arr, n: Optional[int] = None) -> np.ndarray:
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
    steps = [Step("launch: %d warp(s) resident, nothing issued yet" % n_warps, "vector_add", None,
                  {"step": -1, "warp": -1})]
    for k, (label, _needle) in enumerate(VECTOR_ADD_STEPS):
        for w in range(n_warps):
            steps.append(Step(f"warp {w} issues {label}", "vector_add", region_lines[k],
                              {"step": k, "warp": w}))
    return steps


def vector_add(A: np.ndarray, B: np.ndarray, block: int = 64, *, sm_count: Optional[int] = None,
               region_lines=None) -> Trace:
    """Model of ``vector_add_traced``: C = A + B with one thread per element.

    Args:
        A, B: float32 arrays of shape [n].
        block: threads per block (1..1024); grid = ceil(n / block).
        sm_count: SMs of the round-robin model (default: the L4's 58, device.SPEC_SHEETS).
        region_lines: 6 source lines for the steps (default: None each).

    Returns:
        Trace with arrays, for every launched thread t (T = grid * block):
        block, thread, index, warp, lane, smid, hw_warpid: int32 [T];
        a, b, c: float32 [T], NaN where index >= n; A, B: the float32 [n] inputs.
        ``smid`` and ``hw_warpid`` are simulated (:data:`SMID_MODEL`).
    """
    A = _as_f32("A", A)
    n = A.shape[0]
    B = _as_f32("B", B, n)
    check_launch(n, block, min_n=1)
    sm_count = sm_count or device.SPEC_SHEETS["L4"].sm_count
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
    c[ok] = a[ok] + b[ok]  # float32 + float32, round to nearest: __fadd_rn
    arrays = {"block": blk, "thread": thr, "index": idx, "warp": warp.astype(np.int32),
              "lane": lane.astype(np.int32), "smid": round_robin_smid(blk, sm_count),
              "hw_warpid": warp.astype(np.int32), "a": a, "b": b, "c": c, "A": A.copy(), "B": B.copy()}
    lines = list(region_lines) if region_lines is not None else [None] * len(VECTOR_ADD_STEPS)
    n_warps = grid * (-(-block // WARP))
    return Trace(kernel="vector_add_traced",
                 params={"n": n, "block": block, "grid": grid, "warps": n_warps, "sm_model": SMID_MODEL},
                 arrays=arrays, source=MODEL_SOURCE, provenance=backend.MODEL_LABEL + "; " + SMID_MODEL,
                 steps=vector_add_steps(n_warps, lines), simulated=("smid", "hw_warpid"))


# -- divergence.cu ---------------------------------------------------------------------------

DIVERGENCE_KERNELS = ("divergent_branch", "uniform_branch")
PATH_A = (np.float32(1.0001), np.float32(0.5))
PATH_B = (np.float32(0.9999), np.float32(-0.25))


def check_iters(iters) -> None:
    """Raises ValueError unless ``iters`` is an int >= 0 (loop trips of each path)."""
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 0:
        raise ValueError(f"iters must be an int >= 0, got {iters!r}")


def run_paths(x: np.ndarray, branch: np.ndarray, iters: int) -> np.ndarray:
    """y = path_a(x) where branch == 0, path_b(x) where branch == 1, float32 mul then add each step."""
    v = np.asarray(x, np.float32).copy()
    mul = np.where(branch == 0, PATH_A[0], PATH_B[0]).astype(np.float32)
    add = np.where(branch == 0, PATH_A[1], PATH_B[1]).astype(np.float32)
    for _ in range(iters):
        v = (v * mul).astype(np.float32)
        v = (v + add).astype(np.float32)
    return v


def divergence_branch(n: int, block: int, kernel: str) -> np.ndarray:
    """Branch (0 = path A, 1 = path B) each element takes in ``kernel``: int32 [n]."""
    if kernel not in DIVERGENCE_KERNELS:
        raise ValueError(f"kernel must be one of {DIVERGENCE_KERNELS}, got {kernel!r}")
    i = np.arange(n, dtype=np.int64)
    if kernel == "divergent_branch":
        lane = (i % block) % WARP
        return (lane & 1).astype(np.int32)
    return ((i >> 5) & 1).astype(np.int32)


def active_masks(n: int, block: int, branch: np.ndarray) -> np.ndarray:
    """__activemask() seen by each element's thread inside its branch: uint32 [n].

    The hardware warp of element i is (i // block, (i % block) // 32); its lanes still running
    are those with i < n (the others returned); inside a branch the active lanes are the running
    lanes of that warp that took the same branch.
    """
    i = np.arange(n, dtype=np.int64)
    hw_warp = (i // block) * 64 + (i % block) // WARP   # a unique id per (block, warp); 64 >= 1024/32
    lane = (i % block) % WARP
    bit = (np.uint32(1) << lane.astype(np.uint32)).astype(np.uint32)
    key = hw_warp * 2 + branch
    masks = np.zeros(n, np.uint32)
    if n:
        uniq, inv = np.unique(key, return_inverse=True)
        acc = np.zeros(uniq.shape, np.uint32)
        np.bitwise_or.at(acc, inv, bit)
        masks = acc[inv]
    return masks


def divergence(x: np.ndarray, block: int = 64, iters: int = 8, kernel: str = "divergent_branch") -> Trace:
    """Model of ``divergent_branch`` / ``uniform_branch`` with record = 1.

    Args:
        x: float32 [n] input.
        block: threads per block (1..1024).
        iters: loop trips of each path (>= 0).
        kernel: "divergent_branch" (branch on lane parity) or "uniform_branch" (on warp parity).

    Returns:
        Trace with x, y: float32 [n]; branch: int32 [n]; active: uint32 [n]; lane, warp: int32 [n].
    """
    x = _as_f32("x", x)
    n = x.shape[0]
    check_launch(n, block, min_n=1)
    check_iters(iters)
    branch = divergence_branch(n, block, kernel)
    i = np.arange(n)
    arrays = {"x": x.copy(), "y": run_paths(x, branch, iters), "branch": branch,
              "active": active_masks(n, block, branch),
              "lane": ((i % block) % WARP).astype(np.int32), "warp": ((i % block) // WARP).astype(np.int32),
              "block": (i // block).astype(np.int32)}
    return Trace(kernel=kernel, params={"n": n, "block": block, "iters": iters, "grid": -(-n // block)},
                 arrays=arrays, source=MODEL_SOURCE,
                 provenance=backend.MODEL_LABEL + "; active masks from the SIMT model (lanes of a warp "
                 "that take the same branch run together)")
