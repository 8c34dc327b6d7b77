"""Where the CUDA headers are on this machine (``cuda_fp16.h``, and CUDA 13's CCCL folder with
``nv/target``): the pip wheels on ``sys.path``, then ``CUDA_HOME`` / ``CUDA_PATH``, then
``/usr/local/cuda*``.  Imports nothing of the package, so the emulator's compiler and the GPU
path's (:func:`gpu_viz.kernels.gpu_options`) both read it without importing each other."""
from __future__ import annotations

import functools
import glob
import os
import sys
from typing import List, Tuple


@functools.lru_cache(maxsize=1)
def include_dirs() -> Tuple[str, ...]:
    """Directories holding ``cuda_fp16.h`` (and ``nv/target``): the pip wheels, then a toolkit."""
    found: List[str] = []
    candidates = []
    for sp in sys.path:
        candidates += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "include")))
        candidates += sorted(glob.glob(os.path.join(sp, "nvidia", "cuda_runtime", "include")))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(os.path.join(os.environ[env], "include"))
    candidates += sorted(glob.glob("/usr/local/cuda*/include"))
    for c in candidates:
        if os.path.isfile(os.path.join(c, "cuda_fp16.h")) and c not in found:
            found.append(c)
            cccl = os.path.join(c, "cccl")
            if os.path.isdir(cccl):
                found.append(cccl)
            break
    return tuple(found)
