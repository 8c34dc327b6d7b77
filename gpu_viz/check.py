"""Correctness, one way everywhere: seeded fresh random data and one comparison helper.

Used by the GPU producers (``gpu_viz.record``), the benchmark harness (``gpu_viz.rmsnorm.bench``),
the tests and the notebooks (the style of llm.c's ``validate_result`` and Liger's
``assert_verbose_allclose``):

* :func:`new_seed`, :func:`rng`, :func:`random_f32` -- fresh random inputs whose seed is known,
  so a failure names the seed that replays it.
* :func:`compare` -> :class:`Report`; :func:`assert_close` raises :class:`MismatchError` naming
  the buffer, the mismatch count, the first few (index, got, want), NaN / inf counts, the
  worst error and the seed.  numpy, CuPy and torch (any device: a torch tensor is compared on
  its own device, in float64) are all accepted.
* :func:`assert_equal` -- exact equality (bit for bit for floats: NaNs equal when their bits are).
* :func:`check_int` -- an int argument in range, or an error naming it.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import List, Optional, Tuple

import numpy as np

from .arrays import framework, to_numpy64


def check_int(name: str, value, minimum: Optional[int] = None, maximum: Optional[int] = None) -> int:
    """``value`` as an int, checked: TypeError unless an int (numpy ints included, bool not),
    ValueError outside ``minimum..maximum`` (either may be None), both naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and maximum is not None and not minimum <= value <= maximum:
        raise ValueError(f"{name} must be in [{minimum}, {maximum}], got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_bool(name: str, value, more: str = "") -> bool:
    """``value`` as a bool, checked: TypeError naming ``name`` unless a bool (numpy's included;
    ints are not), ``more`` added to the message (e.g. "or None (...)")."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool{' ' + more if more else ''}, got {type(value).__name__} {value!r}")
    return bool(value)


#: The largest finite float32; a float argument past it reaches a kernel as inf.
F32_MAX = 3.4028234663852886e38


def check_f32(name: str, value, minimum: Optional[float] = None) -> np.float32:
    """``value`` as the float32 a kernel's ``float`` argument receives, checked: TypeError unless a
    real number (bool not), ValueError unless finite within float32's range (``1e39`` would be
    inf there) and, when ``minimum`` is given, ``>= minimum``; both naming ``name``.  Plain Python
    until the final conversion, so torch.compile traces through the checks (see :func:`check_f32_arg`)."""
    return np.float32(check_f32_arg(name, value, minimum))


def check_f32_arg(name: str, value, minimum: Optional[float] = None) -> float:
    """:func:`check_f32`'s checks, returning ``float(value)`` (pure Python: torch.compile can trace it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a float, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v) or abs(v) > F32_MAX or (minimum is not None and v < minimum):
        bound = "" if minimum is None else f" and >= {minimum:g}"
        raise ValueError(f"{name} must be finite{bound} as a float32 (the kernel's float argument), got {value!r}")
    return v


def check_tolerance(name: str, value) -> float:
    """``value`` as a float tolerance, checked: TypeError unless a real number (bool not), ValueError
    unless finite and >= 0; both naming ``name``.  (Every comparison with a NaN tolerance is False,
    so ``atol=nan`` would pass every element; ``inf`` passes every finite one.)"""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def positive_int_arg(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the option in its error message)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def new_seed() -> int:
    """A fresh 32-bit seed from OS entropy."""
    return int.from_bytes(os.urandom(4), "little")


def rng(seed: Optional[int] = None) -> np.random.Generator:
    """A generator seeded with ``seed`` (None: :func:`new_seed`; else an int >= 0).

    Raises:
        TypeError / ValueError: naming ``seed`` when it is not an int >= 0.
    """
    return np.random.default_rng(new_seed() if seed is None else check_int("seed", seed, minimum=0))


def random_f32(n: int, seed: Optional[int] = None, scale: float = 1.0) -> np.ndarray:
    """Fresh random float32 [n] values (standard normal x scale): never zeros, never a pattern.

    Raises:
        TypeError / ValueError: naming ``n`` (an int >= 0), ``seed`` (see :func:`rng`) or
            ``scale`` (a number finite as a float32).
    """
    n, scale = check_int("n", n, minimum=0), check_f32_arg("scale", scale)
    return (rng(seed).standard_normal(n) * scale).astype(np.float32)


@dataclasses.dataclass
class Report:
    """What :func:`compare` found.

    Attributes:
        name: the buffer compared.  n: elements compared.  atol, rtol: the tolerance.
        mismatches: elements outside ``atol + rtol * |want|`` (NaN/inf included, see :func:`compare`).
        nan, inf: NaN / inf elements of ``got`` where ``want`` is not the same value.
        max_abs_err, max_rel_err: over the elements where both are finite.
        first: up to ``show`` mismatches as ``(index, got, want)``.
        seed: the seed of the inputs, if the caller gave it.
    """

    name: str
    n: int = 0
    atol: float = 0.0
    rtol: float = 0.0
    mismatches: int = 0
    nan: int = 0
    inf: int = 0
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    first: List[Tuple[Tuple[int, ...], float, float]] = dataclasses.field(default_factory=list)
    seed: Optional[int] = None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def merge(self, other: "Report", show: int = 5) -> "Report":
        """Add ``other`` (a later block of the same comparison) into this report; returns self."""
        self.n += other.n
        self.mismatches += other.mismatches
        self.nan += other.nan
        self.inf += other.inf
        self.max_abs_err = max(self.max_abs_err, other.max_abs_err)
        self.max_rel_err = max(self.max_rel_err, other.max_rel_err)
        self.first = (self.first + other.first)[:show]
        return self

    def message(self) -> str:
        """One line: the verdict, the counts, the first mismatches, the seed."""
        tol = f"atol={self.atol:g} + rtol={self.rtol:g}*|want|"
        seed = f"; seed {self.seed}" if self.seed is not None else ""
        if self.ok:
            return (f"{self.name}: all {self.n} within {tol} (max |err| {self.max_abs_err:.3g}, "
                    f"max rel {self.max_rel_err:.3g}){seed}")
        shown = "; ".join(f"{idx}: got {g!r}, want {w!r}" for idx, g, w in self.first)
        return (f"{self.name}: {self.mismatches} of {self.n} elements outside {tol} ({self.nan} NaN, "
                f"{self.inf} inf in {self.name} where the reference differs: never written?); max finite "
                f"|err| {self.max_abs_err:.3g}; first: {shown}{seed}")


class MismatchError(AssertionError):
    """Raised by :func:`assert_close`; ``report`` is the :class:`Report`."""

    def __init__(self, report: Report):
        super().__init__(report.message())
        self.report = report


def _as_float64(a, name: str):
    """``a`` as float64 in its own library where that is torch (stays on its device), else numpy."""
    if framework(a) == "torch":
        return a.detach().double(), "torch"
    return to_numpy64(a, name), "numpy"


def compare(name: str, got, want, *, atol: float = 0.0, rtol: float = 0.0, seed: Optional[int] = None,
            show: int = 5, row_offset: int = 0) -> Report:
    """Compare ``got`` with the reference ``want`` (same shape); never raises on a mismatch.

    An element passes when both are finite and ``|got - want| <= atol + rtol * |want|``, or when
    both are the same value (equal infinities, or both NaN).  So NaN or inf where the reference
    is finite fails (a NaN-poisoned output a kernel never wrote), and a reference NaN/inf (a
    NaN/inf input row) needs the same NaN/inf.  ``row_offset`` is added to the first index in
    the report (a block of rows of a larger comparison, see :meth:`Report.merge`).

    Raises:
        ValueError: the shapes differ, or ``atol`` / ``rtol`` is not a finite number >= 0 (a NaN
            tolerance would pass every element).  TypeError: not an array, or a tolerance that is
            not a real number.
    """
    atol, rtol = check_tolerance("atol", atol), check_tolerance("rtol", rtol)
    g, kind = _as_float64(got, name)
    w, _ = _as_float64(want, "want")
    if kind == "torch" and framework(w) != "torch":
        import torch

        w = torch.as_tensor(w, dtype=torch.float64, device=g.device)
    elif kind == "numpy" and framework(w) == "torch":
        w = w.cpu().numpy()
    if tuple(g.shape) != tuple(w.shape):
        raise ValueError(f"{name}: shape {tuple(g.shape)} differs from the reference's {tuple(w.shape)}")
    if kind == "torch":
        import torch as xp

        zero = xp.zeros((), dtype=g.dtype, device=g.device)
        finite_g, finite_w, nan_g, inf_g = xp.isfinite(g), xp.isfinite(w), xp.isnan(g), xp.isinf(g)
        same = (g == w) | (nan_g & xp.isnan(w))
        both = finite_g & finite_w
        err = xp.where(both, (xp.where(both, g, zero) - xp.where(both, w, zero)).abs(), zero)
        scale = xp.where(both, w, zero).abs()
    else:
        xp = np
        finite_g, finite_w, nan_g, inf_g = np.isfinite(g), np.isfinite(w), np.isnan(g), np.isinf(g)
        same = (g == w) | (nan_g & np.isnan(w))
        both = finite_g & finite_w
        err = np.abs(np.where(both, g, 0.0) - np.where(both, w, 0.0))
        scale = np.abs(np.where(both, w, 0.0))
    bad = xp.where(both, err > atol + rtol * scale, ~same)
    rel = err / xp.where(scale > 0, scale, 1 + 0 * scale)
    rep = Report(name=name, n=int(g.numel() if kind == "torch" else g.size), atol=float(atol),
                 rtol=float(rtol), seed=seed)
    rep.mismatches = int(bad.sum())
    if rep.n:
        rep.max_abs_err = float(err.max())
        rep.max_rel_err = float(rel.max())
    if rep.mismatches:
        rep.nan = int((bad & nan_g).sum())
        rep.inf = int((bad & inf_g).sum())
        idx = (xp.nonzero(bad.reshape(-1))[0] if kind == "numpy" else
               xp.nonzero(bad.reshape(-1)).reshape(-1))[:show]
        shape = tuple(g.shape)
        gf, wf = g.reshape(-1), w.reshape(-1)
        for i in [int(k) for k in idx]:
            index = tuple(int(v) for v in np.unravel_index(i, shape)) if shape else ()
            if index:
                index = (index[0] + row_offset,) + index[1:]
            rep.first.append((index, float(gf[i]), float(wf[i])))
    return rep


def assert_close(name: str, got, want, *, atol: float = 0.0, rtol: float = 0.0, seed: Optional[int] = None,
                 show: int = 5) -> Report:
    """:func:`compare`, raising :class:`MismatchError` (an AssertionError) on any mismatch.

    Returns:
        the :class:`Report` when every element passes.
    """
    rep = compare(name, got, want, atol=atol, rtol=rtol, seed=seed, show=show)
    if not rep.ok:
        raise MismatchError(rep)
    return rep


def assert_equal(name: str, got, want, *, seed: Optional[int] = None, show: int = 5) -> None:
    """Raise AssertionError unless ``got`` equals ``want`` exactly: integers by value, floats bit
    for bit (NaNs equal when their bits are), same shape and dtype."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        raise AssertionError(f"{name}: shape {g.shape} but expected {w.shape}")
    if g.dtype.kind == "f" or w.dtype.kind == "f":
        if g.dtype != w.dtype:
            raise AssertionError(f"{name}: dtype {g.dtype} but expected {w.dtype}")
        gv, wv = g.view(f"u{g.dtype.itemsize}"), w.view(f"u{w.dtype.itemsize}")
    else:
        gv, wv = g, w
    bad = np.argwhere(gv != wv)
    if len(bad):
        shown = ", ".join(f"{tuple(int(k) for k in i)}: got {g[tuple(i)]!r} want {w[tuple(i)]!r}"
                          for i in bad[:show])
        seed_text = f"; seed {seed}" if seed is not None else ""
        raise AssertionError(f"{name}: {len(bad)} of {g.size} differ; first {shown}{seed_text}")
