"""Where the CUDA headers are on this machine (``cuda_fp16.h``, and CUDA 13's CCCL folder with
``nv/target``): the pip wheels on ``sys.path``, then ``CUDA_HOME`` / ``CUDA_PATH``, then
``/usr/local/cuda*``.  Imports nothing of the package, so the emulator's compiler and the GPU
path's (:func:`gpu_viz.kernels.gpu_options`) both read it without importing each other."""
from __future__ import annotations

import functools
import glob
import os
import re
import sys
from typing import List, Optional, Tuple


def _candidates() -> List[str]:
    """Folders that may hold the CUDA headers, in the order they are preferred."""
    candidates = []
    for sp in sys.path:
        candidates += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "include")))
        candidates += sorted(glob.glob(os.path.join(sp, "nvidia", "cuda_runtime", "include")))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(os.path.join(os.environ[env], "include"))
    candidates += sorted(glob.glob("/usr/local/cuda*/include"))
    return candidates


@functools.lru_cache(maxsize=1)
def include_dirs() -> Tuple[str, ...]:
    """Directories holding ``cuda_fp16.h`` (and ``nv/target``): the pip wheels, then a toolkit."""
    found: List[str] = []
    for c in _candidates():
        if os.path.isfile(os.path.join(c, "cuda_fp16.h")) and c not in found:
            found.append(c)
            cccl = os.path.join(c, "cccl")
            if os.path.isdir(cccl):
                found.append(cccl)
            break
    return tuple(found)


@functools.lru_cache(maxsize=8)
def cccl_dir(cuda_major: int) -> Optional[str]:
    """The ``include/cccl`` folder (CUDA 13's home of ``nv/target``) of a CUDA ``cuda_major`` set of
    headers (its ``cuda_runtime_api.h`` says ``CUDART_VERSION``), searched among every candidate --
    a machine may hold the headers of two CUDA versions -- or None."""
    for c in _candidates():
        cccl, api = os.path.join(c, "cccl"), os.path.join(c, "cuda_runtime_api.h")
        if not (os.path.isdir(cccl) and os.path.isfile(api)):
            continue
        try:
            with open(api, encoding="utf-8", errors="replace") as f:
                m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", f.read())
        except OSError:
            continue
        if m and int(m.group(1)) // 1000 == cuda_major:
            return cccl
    return None
