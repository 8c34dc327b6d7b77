"""CPU model of ``kernels/divergence.cu`` (notebook 03): which path each thread takes and the
``__activemask()`` it sees there, the same Trace as ``gpu_viz.record.divergence``.

Branches and masks are deterministic (the lanes of a warp that take the same branch run
together), and the paths run in float32 with the kernel's rounding (``__fmul_rn`` then
``__fadd_rn``), so a GPU test asserts model == silicon bit for bit.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..check import check_int
from ..trace import MODEL_SOURCE, Trace
from .vector_add import WARP, as_f32, check_launch

DIVERGENCE_KERNELS = ("divergent_branch", "uniform_branch")
PATH_A = (np.float32(1.0001), np.float32(0.5))
PATH_B = (np.float32(0.9999), np.float32(-0.25))


def check_iters(iters) -> None:
    """TypeError unless ``iters`` is an int, ValueError unless >= 0 (loop trips of each path)."""
    check_int("iters", iters, 0)


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


def trace(x: np.ndarray, block: int = 64, iters: int = 8, kernel: str = "divergent_branch", *,
          seed=None) -> Trace:
    """Model of the traced ``divergent_branch`` / ``uniform_branch``.

    Args:
        x: float32 [n] input.
        block: threads per block (1..1024).
        iters: loop trips of each path (>= 0).
        kernel: "divergent_branch" (branch on lane parity) or "uniform_branch" (on warp parity).
        seed: the input's seed (kept in ``params``).

    Returns:
        Trace with x, y: float32 [n]; branch: int32 [n]; active: uint32 [n]; lane, warp: int32 [n].
    """
    x = as_f32("x", x)
    n = x.shape[0]
    n, block = check_launch(n, block, min_n=1)
    check_iters(iters)
    branch = divergence_branch(n, block, kernel)
    i = np.arange(n)
    arrays = {"x": x.copy(), "y": run_paths(x, branch, iters), "branch": branch,
              "active": active_masks(n, block, branch),
              "lane": ((i % block) % WARP).astype(np.int32), "warp": ((i % block) // WARP).astype(np.int32),
              "block": (i // block).astype(np.int32)}
    return Trace(kernel=kernel, params={"n": n, "block": block, "iters": iters, "grid": -(-n // block), "seed": seed},
                 arrays=arrays, source=MODEL_SOURCE,
                 provenance=backend.MODEL_LABEL + "; active masks from the SIMT model (lanes of a warp "
                 "that take the same branch run together)")
