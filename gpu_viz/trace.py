"""The Trace: what one traced kernel launch did, from the silicon or from the CPU model.

Data path: instrumented kernel (device buffers) or ``gpu_viz.model`` (numpy)
--> :class:`Trace` --> frames (``gpu_viz.widgets``) --> live / static player.

A trace is plain numpy arrays plus an ordered list of :class:`Step` labels.  Both
producers fill the same array names with the same shapes and dtypes, so a GPU test
can assert ``model_trace.assert_equal(gpu_trace)`` bit for bit.  Arrays that only
silicon can know (``%smid``, ``%globaltimer``, ``clock64``) are listed in
``simulated`` when the CPU model invented them from a named scheduling model.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

GPU_SOURCE = "gpu"
MODEL_SOURCE = "model"
EMULATOR_SOURCE = "emulator"
SOURCES = (GPU_SOURCE, EMULATOR_SOURCE, MODEL_SOURCE)


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a trace, as the player shows it.

    Attributes:
        label: what happened, in the deck's words ("shuffle, offset 16").
        region: the kernel source region (``gpu_viz.kernels.snippet``) it belongs to.
        line: 1-based line inside that region to highlight, or ``None``.
        data: small per-step values (indices into the trace's arrays, scalars).
    """

    label: str
    region: str = ""
    line: Optional[int] = None
    data: Dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Trace:
    """One kernel launch's record.

    Attributes:
        kernel: the traced kernel's name.
        params: launch configuration and inputs' description (``{"n": 64, "block": 32}``).
        arrays: name -> numpy array (shapes documented by each producer).
        steps: ordered steps for the player.
        source: ``"gpu"`` (the kernel recorded it on silicon), ``"emulator"`` (the same kernel's PTX
            ran in :mod:`gpu_viz.emulator`) or ``"model"`` (the CPU model computed it).
        provenance: the human label shown on every figure (``gpu_viz.backend.provenance``).
        simulated: names in ``arrays`` that come from a named model, not from silicon.
    """

    kernel: str
    params: Dict[str, Any]
    arrays: Dict[str, np.ndarray]
    source: str
    provenance: str
    steps: List[Step] = dataclasses.field(default_factory=list)
    simulated: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.source not in SOURCES:
            raise ValueError(f"Trace.source must be one of {SOURCES}, got {self.source!r}")

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.arrays[name]
        except KeyError:
            raise KeyError(f"trace of {self.kernel} has no array {name!r}; it has {sorted(self.arrays)}") from None

    def diff(self, other: "Trace", names: Optional[Iterable[str]] = None, limit: int = 5) -> List[str]:
        """Differences with ``other``, bit for bit (NaNs equal when their bits are); [] when equal."""
        problems = []
        names = list(names) if names is not None else sorted(set(self.arrays) | set(other.arrays))
        for name in names:
            if name not in self.arrays or name not in other.arrays:
                problems.append(f"{name}: present only in {'self' if name in self.arrays else 'other'}")
                continue
            a, b = np.asarray(self.arrays[name]), np.asarray(other.arrays[name])
            if a.shape != b.shape or a.dtype != b.dtype:
                problems.append(f"{name}: shape/dtype {a.shape}/{a.dtype} vs {b.shape}/{b.dtype}")
                continue
            if a.dtype.kind == "f":
                ua, ub = a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}")
                bad = np.argwhere(ua != ub)
            else:
                bad = np.argwhere(a != b)
            if len(bad):
                shown = ", ".join(f"{tuple(int(j) for j in i)}: {a[tuple(i)].item()!r} vs {b[tuple(i)].item()!r}"
                                  for i in bad[:limit])
                problems.append(f"{name}: {len(bad)} of {a.size} differ; first {shown}")
        return problems

    def assert_equal(self, other: "Trace", names: Optional[Iterable[str]] = None) -> None:
        """Raise ``AssertionError`` listing every array that differs (bit for bit) from ``other``."""
        problems = self.diff(other, names)
        if problems:
            raise AssertionError(
                f"traces of {self.kernel} differ ({self.source} vs {other.source}):\n  " + "\n  ".join(problems))
