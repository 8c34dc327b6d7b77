"""Where the course's files are: in a source checkout (an editable install) beside the package,
in an installed wheel inside it (pyproject.toml's force-include ships them there).

    kernels/              -> gpu_viz/_kernels          (the CUDA C)
    benchmarks/results/   -> gpu_viz/_results          (the committed GPU records)
    notebooks/            -> gpu_viz/_notebooks        (the course)
    slides/ (templates and the npm pins) -> gpu_viz/_slides
"""
from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parent
#: The checkout's root when the package runs from one (None in a wheel install).
CHECKOUT = PKG.parent if (PKG.parent / "pyproject.toml").is_file() and (PKG.parent / "kernels").is_dir() else None


def course_dir(checkout: str, shipped: str) -> Path:
    """``<checkout root>/<checkout>`` in a source checkout, else ``gpu_viz/<shipped>`` (the wheel's copy)."""
    if CHECKOUT is not None and (CHECKOUT / checkout).is_dir():
        return CHECKOUT / checkout
    return PKG / shipped
