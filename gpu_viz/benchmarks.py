"""The course's measurements: fused RMSNorm (+ SiLU gate) against its baselines, live.

Data path: providers by name (one ``setup_<op>`` per op, Liger style) --> :func:`run`
(check every provider against float64 on fresh random data, THEN time the ones that were
right, rotating buffers past L2) --> rows in DESIGN.md section 5's format --> :func:`table`,
:func:`bar_chart`, :func:`summary_checks` --> :func:`full_record` (one JSON record through
:func:`gpu_viz.bench.save_record`) and ``gpu-viz bench`` on the command line.

Providers
    op ``"rmsnorm"``: ``eager`` (the deck's module, :class:`gpu_viz.rmsnorm.EagerRMSNorm`),
    ``native`` (``torch.nn.functional.rms_norm``), ``compile`` (``torch.compile(dynamic=False)``
    of the eager module, per shape, checked to have really compiled), ``deck4phase``
    (:func:`gpu_viz.rmsnorm.four_phase`, block=1024), ``fused`` (:func:`gpu_viz.ops.rmsnorm`),
    ``liger`` (only if ``liger_kernel`` imports).
    op ``"rmsnorm_gate"``: ``eager`` (:func:`eager_rmsnorm_gate`, the seed's baseline),
    ``compile`` (of that), ``fused`` (:func:`gpu_viz.ops.rmsnorm_gate`).

Timings (both labelled in every row): ``"kernel"`` = CUDA-graph replay, the device time
alone; ``"call"`` = events around each call from Python, what a caller sees.

``GBps`` counts the fewest bytes the op must move (inputs read once, output written once):
rmsnorm ``2*M*N*size + N*size``; rmsnorm_gate adds ``M*N*size`` for the gate.
"""
from __future__ import annotations

import dataclasses
import html as _html
import gc
import math
import numbers
import os
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import backend, bench

RMSNORM = "rmsnorm"
RMSNORM_GATE = "rmsnorm_gate"
OPS = (RMSNORM, RMSNORM_GATE)

#: Providers per op, in display order.
PROVIDERS: Dict[str, Tuple[str, ...]] = {
    RMSNORM: ("eager", "native", "compile", "deck4phase", "fused", "liger"),
    RMSNORM_GATE: ("eager", "compile", "fused"),
}
#: Providers that are optional: missing library -> skipped with the reason, never an error.
OPTIONAL_PROVIDERS = {"liger"}

DTYPES = ("float16", "bfloat16", "float32")
#: Element size in bytes.
DTYPE_SIZE = {"float16": 2, "bfloat16": 2, "float32": 4}
#: (atol, rtol) of a provider's output against the float64 reference, by input dtype:
#: |out - ref| <= atol + rtol * |ref|.  Half precision rounds the output once (2^-11 rel) and
#: some baselines round an intermediate too (Liger's "llama" casting), so the bound allows
#: a few roundings; a lost reduction term (the seed's N=768 fault) is off by far more.
TOLERANCES = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-4)}

EPS = 1e-6
DEFAULT_REPS = 100

#: The seed's four shapes (M, N) and its recorded H100 table (write-up 000, README at commit
#: d801038): fp16 rmsnorm_gate, "call"-like timing (events around a Python loop that
#: included output allocation), averaged over 100 (50 for the larger) calls.  NOT live.
SEED_SHAPES = ((128, 4096), (512, 4096), (1024, 4096), (1024, 8192))
SEED_H100 = {
    "source": ("the seed's write-up, quoting its README's H100 80GB HBM3 run (PyTorch 2.4.0, "
               "CUDA 12.4, commit d801038); recorded by its author, not reproduced here"),
    "gpu": "NVIDIA H100 80GB HBM3",
    "rows": [  # (M, N, fused_us, eager_us, reported speedup)
        (128, 4096, 4.92, 55.72, 11.32),
        (512, 4096, 5.52, 87.37, 15.84),
        (1024, 4096, 8.54, 149.60, 17.52),
        (1024, 8192, 25.77, 294.51, 11.43),
    ],
}
#: The deck's own width: one block of 1024 threads on a row of 2048 numbers.
DECK_SHAPES = ((1, 2048), (4096, 2048))
#: Shapes of the full record (issue 5): the seed's, then bandwidth-bound and small-N ones.
RECORD_SHAPES = SEED_SHAPES + ((4096, 4096), (16384, 4096), (32768, 8192), (1024, 768), (4096, 2048))
#: Shapes where issue 5 asks for >= 90 % of copy bandwidth.
BANDWIDTH_SHAPES = ((16384, 4096), (32768, 8192))
BANDWIDTH_TARGET = 0.90
FLOOR_SHAPE = (128, 4096)
FLOOR_FACTOR = 1.5
QUICK_SHAPES = ((128, 4096), (1024, 4096), (16384, 4096), (1024, 768))

ROW_KEYS = ("op", "impl", "M", "N", "dtype", "timing", "median_us", "p10_us", "p90_us", "GBps")


class ProviderUnavailable(RuntimeError):
    """A provider cannot run here (its library or our op is missing); it is skipped, with this reason."""


class CompileFellBack(RuntimeError):
    """torch.compile did not produce one compiled graph for this shape (graph break, recompile
    limit, skipped frame): its timing would be eager's under the name "compile", so it is excluded."""


# -- validation ------------------------------------------------------------------------------

def _check_op(op: str) -> str:
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    return op


def dtype_name(dtype) -> str:
    """``"float16"`` / ``torch.float16`` / ``numpy.float16`` -> ``"float16"`` (the fused ops'
    :func:`gpu_viz.ops.dtype_name`); ValueError otherwise."""
    from .ops import dtype_name as ops_dtype_name

    try:
        return ops_dtype_name(dtype)
    except TypeError:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}") from None


def check_providers(op: str, providers: Optional[Iterable[str]]) -> Tuple[str, ...]:
    """Validate provider names for ``op``; ``None`` means all of them.

    Raises:
        ValueError: naming the unknown provider and the known ones.
    """
    _check_op(op)
    if providers is None:
        return PROVIDERS[op]
    if isinstance(providers, str):
        providers = (providers,)
    providers = tuple(providers)
    for p in providers:
        if p not in PROVIDERS[op]:
            raise ValueError(f"unknown provider {p!r} for op {op!r}; known providers: {PROVIDERS[op]}")
    if not providers:
        raise ValueError(f"providers must name at least one of {PROVIDERS[op]}")
    return providers


def check_shapes(shapes) -> List[Tuple[int, int]]:
    """``[(M, N), ...]`` with M >= 1 and N >= 1 (ints); ValueError naming the bad entry."""
    out = []
    for s in shapes:
        try:
            M, N = s
        except (TypeError, ValueError):
            raise ValueError(f"shapes must be (M, N) pairs, got {s!r}") from None
        if int(M) != M or int(N) != N or M < 1 or N < 1:
            raise ValueError(f"shapes: M and N must be positive integers, got {s!r}")
        out.append((int(M), int(N)))
    if not out:
        raise ValueError("shapes must hold at least one (M, N)")
    return out


def check_timings(timings) -> Tuple[str, ...]:
    if isinstance(timings, str):
        timings = (timings,)
    timings = tuple(timings)
    for t in timings:
        if t not in (bench.KERNEL, bench.CALL):
            raise ValueError(f"timings must be 'kernel' and/or 'call', got {t!r}")
    if not timings:
        raise ValueError("timings must name 'kernel' and/or 'call'")
    return timings


# -- byte accounting and rows ----------------------------------------------------------------

def fewest_bytes(op: str, M: int, N: int, dtype) -> int:
    """The fewest bytes one call must move: inputs read once, output written once.

    rmsnorm: x (M*N) + weight (N) read, y (M*N) written -> ``2*M*N*size + N*size``;
    rmsnorm_gate adds the gate (M*N*size).  ``size`` is the element size of ``dtype``.
    """
    size = DTYPE_SIZE[dtype_name(dtype)]
    n = 2 * M * N * size + N * size
    if _check_op(op) == RMSNORM_GATE:
        n += M * N * size
    return n


def make_row(op: str, impl: str, M: int, N: int, dtype, t: "bench.Timing", **extra) -> Dict:
    """One row in DESIGN.md section 5's format from a :class:`gpu_viz.bench.Timing`."""
    dt = dtype_name(dtype)
    row = {"op": op, "impl": impl, "M": int(M), "N": int(N), "dtype": dt, "timing": t.timing,
           "median_us": round(t.median_us, 4), "p10_us": round(t.p10_us, 4), "p90_us": round(t.p90_us, 4),
           "GBps": round(t.GBps(fewest_bytes(op, M, N, dt)), 2), "reps": t.n}
    row.update(extra)
    return row


def add_speedups(rows: List[Dict], baseline: str = "eager") -> List[Dict]:
    """Set ``speedup_vs_eager`` = baseline median / row median for rows of the same
    (op, M, N, dtype, timing); ``None`` where the baseline was not measured.  In place; returns rows."""
    base = {(r["op"], r["M"], r["N"], r["dtype"], r["timing"]): r["median_us"]
            for r in rows if r["impl"] == baseline}
    for r in rows:
        b = base.get((r["op"], r["M"], r["N"], r["dtype"], r["timing"]))
        r[f"speedup_vs_{baseline}"] = round(b / r["median_us"], 3) if b and r["median_us"] > 0 else None
    return rows


class Rows(list):
    """The rows of a run (a plain list of dicts) plus ``skipped``: one dict per (op, impl, M, N,
    dtype) that was not timed, with ``reason`` (wrong result, unavailable, compile fell back)."""

    def __init__(self, rows=(), skipped=()):
        super().__init__(rows)
        self.skipped: List[Dict] = list(skipped)


# -- the baselines and their setup -----------------------------------------------------------

def eager_rmsnorm_gate(x, gate, weight, eps: float = EPS):
    """The seed's eager baseline for ``y = x * w * silu(g) * rsqrt(mean(x^2) + eps)``.

    The seed describes it as "the matching PyTorch eager expression, which casts inputs to
    FP32, evaluates the operations separately, and converts the result to FP16" (write-up
    000, "The recorded H100 results"); its code is not in the write-up, so this spells that
    sentence out op by op.  x, gate: (M, N); weight: (N,); returns x's dtype.
    """
    import torch

    xf, gf, wf = x.float(), gate.float(), weight.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    silu = gf * torch.sigmoid(gf)
    return (xf * wf * silu * inv_rms).to(x.dtype)


def reference(op: str, x, weight, gate=None, eps: float = EPS):
    """float64 reference (torch, on x's device): rmsnorm or rmsnorm_gate of (M, N) inputs."""
    import torch

    x64, w64 = x.double(), weight.double()
    y = x64 * torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps) * w64
    if _check_op(op) == RMSNORM_GATE:
        g64 = gate.double()
        y = y * (g64 * torch.sigmoid(g64))
    return y


def compare(out, ref, dtype) -> Tuple[bool, str]:
    """Check ``out`` against the float64 ``ref`` with :data:`TOLERANCES` of ``dtype``.

    An element is wrong when it is further than ``atol + rtol * |ref|`` from the reference,
    when it is NaN/inf where the reference is finite, or when the reference is NaN/inf (a
    NaN/inf input row) and the output is not the same NaN/inf.

    Returns (ok, detail); detail names the mismatch count, NaN/inf count and the worst
    element with both values (llm.c validate_result / Liger assert_verbose_allclose style).
    """
    if tuple(out.shape) != tuple(ref.shape):
        return False, f"shape {tuple(out.shape)} != expected {tuple(ref.shape)}"
    tally = _Tally(dtype, ref.numel())
    tally.add(out, ref, 0)
    return tally.verdict()


class _Tally:
    """Mismatches of :func:`compare`, accumulated over blocks of rows (:func:`check_rows`)."""

    def __init__(self, dtype, numel: int):
        self.atol, self.rtol = TOLERANCES[dtype_name(dtype)]
        self.numel, self.n_bad, self.n_nonfinite, self.max_err, self.example = numel, 0, 0, 0.0, None

    def add(self, out, ref, row0: int) -> None:
        """Compare one block; its rows are numbered from ``row0`` in the detail."""
        import torch

        o = out.double()
        finite_o, finite_r = torch.isfinite(o), torch.isfinite(ref)
        same = (o == ref) | (torch.isnan(o) & torch.isnan(ref))
        both = finite_o & finite_r
        err = torch.where(both, (o - ref).abs(), torch.zeros_like(o))
        bad = torch.where(both, err > self.atol + self.rtol * ref.abs(), ~same)
        n_bad = int(bad.sum())
        self.n_bad += n_bad
        self.n_nonfinite += int((bad & ~finite_o).sum())
        if err.numel():
            self.max_err = max(self.max_err, float(err.max()))
        if n_bad and self.example is None:
            idx = int(torch.nonzero(bad.flatten())[0])  # the first mismatch
            row, col = divmod(idx, ref.shape[-1])
            self.example = (f"[{row + row0}, {col}]: got {float(o.flatten()[idx]):.6g}, "
                            f"expected {float(ref.flatten()[idx]):.6g}")

    def verdict(self) -> Tuple[bool, str]:
        tol = f"atol={self.atol:g}, rtol={self.rtol:g}"
        if self.n_bad == 0:
            return True, f"max |err| {self.max_err:.3g} within {tol}"
        return False, (f"{self.n_bad} of {self.numel} elements outside {tol} ({self.n_nonfinite} NaN/inf); "
                       f"e.g. {self.example}; max finite |err| {self.max_err:.3g}")


#: :func:`check_rows` builds the float64 reference this many elements (rows x N) at a time.
CHECK_CHUNK_ELEMENTS = 1 << 22


def check_rows(op: str, out, x, weight, gate=None, eps: float = EPS, dtype=None,
               chunk_elements: int = CHECK_CHUNK_ELEMENTS) -> Tuple[bool, str]:
    """``compare(out, reference(op, x, weight, gate, eps), dtype)``, a block of rows at a time.

    ``x``, ``out`` (and ``gate``): the same shape (..., N); leading dimensions are flattened
    into rows (a 1-D tensor is one row), as :func:`compare` numbers them.  ``dtype``: the
    tolerance class (default: x's dtype).  Same verdict and detail as the whole-tensor
    :func:`compare`, but the float64 temporaries never exceed ``chunk_elements`` (>= 1) x ~6 x
    8 bytes.  Why it matters: on the H200 (2026-11-29), after a whole-tensor float64 check at
    32768x8192 had allocated and freed several GB, the fused kernel and Liger's were timed ~9 %
    slower (292 / 287 µs instead of 267 / 266 µs) in the same process, even with the caching
    allocator emptied (benchmarks/NOTES.md, "Session 2").

    Raises:
        ValueError: ``chunk_elements`` < 1.  TypeError: a non-int ``chunk_elements``.
    """
    if isinstance(chunk_elements, bool) or not isinstance(chunk_elements, numbers.Integral):
        raise TypeError(f"chunk_elements must be an int, got {type(chunk_elements).__name__}")
    if chunk_elements < 1:
        raise ValueError(f"chunk_elements must be >= 1, got {chunk_elements}")
    dtype = dtype or str(x.dtype).replace("torch.", "")
    if tuple(out.shape) != tuple(x.shape):
        return False, f"shape {tuple(out.shape)} != expected {tuple(x.shape)}"
    N = x.shape[-1] if x.dim() else 1
    x2, out2 = x.reshape(-1, N), out.reshape(-1, N)
    g2 = gate.reshape(-1, N) if gate is not None else None
    M = x2.shape[0]
    rows = max(1, int(chunk_elements) // max(1, N))
    tally = _Tally(dtype, x2.numel())
    for r0 in range(0, M, rows):
        sl = slice(r0, min(M, r0 + rows))
        ref = reference(op, x2[sl], weight, g2[sl] if g2 is not None else None, eps)
        tally.add(out2[sl], ref, r0)
        del ref
    return tally.verdict()


def _raise_limits(torch) -> None:
    """Raise dynamo's recompile limit so per-shape compiles never hit it (DESIGN.md section 5)."""
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, max(int(getattr(cfg, name)), 4096))


def _counter_totals(counters) -> Dict[str, int]:
    return {"frames_ok": int(counters["frames"].get("ok", 0)),
            "frames_total": int(counters["frames"].get("total", 0)),
            "graphs": int(counters["stats"].get("unique_graphs", 0)),
            "graph_breaks": int(sum(counters["graph_break"].values())),
            "recompile_limit": int(sum(v for k, v in counters["unimplemented"].items()
                                       if "recompile" in k.lower() or "cache size" in k.lower()))}


def compile_checked(fn: Callable, sample_args: Sequence, backend_name: Optional[str] = None) -> Callable:
    """``torch.compile(fn, dynamic=False)`` for the shapes of ``sample_args``, checked.

    Resets dynamo (one compile per shape; no earlier shape's cache entry counts against the
    recompile limit, which is raised anyway), calls once to compile, then once more.  Passes
    when the first call compiled exactly one graph with no graph break and the second call
    compiled nothing new (the cached graph ran).  ``backend_name`` defaults to inductor.

    Raises:
        CompileFellBack: with the dynamo counters, when any of that fails; a fallen-back
            baseline must never be reported as "compile".
    """
    import torch
    from torch._dynamo.utils import counters

    _raise_limits(torch)
    torch._dynamo.config.suppress_errors = False  # a failed compile must raise, not run eager
    torch._dynamo.reset()
    counters.clear()
    kwargs = {"dynamic": False}
    if backend_name:
        kwargs["backend"] = backend_name
    compiled = torch.compile(fn, **kwargs)
    compiled(*sample_args)
    first = _counter_totals(counters)
    compiled(*sample_args)
    second = _counter_totals(counters)
    problems = []
    if first["frames_ok"] < 1 or first["graphs"] < 1:
        problems.append("no frame was compiled (dynamo skipped it: eager ran)")
    if first["graph_breaks"]:
        problems.append(f"{first['graph_breaks']} graph break(s): part of it ran eagerly")
    if first["recompile_limit"]:
        problems.append("dynamo hit its recompile limit and fell back to eager")
    if first["graphs"] > 1:
        problems.append(f"{first['graphs']} graphs instead of one")
    if second["frames_total"] != first["frames_total"]:
        problems.append("the second call with the same shape compiled again (guards failed)")
    if problems:
        raise CompileFellBack("torch.compile fell back: " + "; ".join(problems) + f" [counters {first}]")
    return compiled


def _liger_rms_norm():
    try:
        from liger_kernel.transformers.functional import liger_rms_norm
    except Exception as exc:  # ImportError, or a Triton too old for this GPU
        raise ProviderUnavailable(f"liger_kernel is not importable ({type(exc).__name__}: {exc})") from None
    return liger_rms_norm


def _deck_module(weight, eps: float):
    """The deck's eager module (gpu_viz.rmsnorm.EagerRMSNorm) holding ``weight`` (its dtype/device)."""
    import torch

    try:
        from .rmsnorm import EagerRMSNorm
    except ImportError as exc:
        raise ProviderUnavailable(f"gpu_viz.rmsnorm.EagerRMSNorm is not available ({exc})") from None
    if hasattr(EagerRMSNorm, "from_weight"):
        m = EagerRMSNorm.from_weight(weight.detach(), eps)
    else:
        m = EagerRMSNorm(weight.shape[0], eps=eps)
        m.weight = torch.nn.Parameter(weight.detach().clone())
    m.weight.requires_grad_(False)
    return m.to(weight.device).eval()


def setup_rmsnorm(provider: str, weight, eps: float = EPS, sample=None, compile_backend=None) -> Callable:
    """A callable ``f(inputs) -> y`` for rmsnorm by ``provider``; ``inputs`` is ``{"x": (M, N)}``.

    ``weight`` (N,) is held by the callable; ``sample`` (an inputs dict) is needed by
    ``"compile"`` (compiled for that shape, then checked by :func:`compile_checked`).

    Raises:
        ValueError: unknown provider (naming the known ones).
        ProviderUnavailable: the provider's code is not importable here.
        CompileFellBack: ``"compile"`` did not really compile.
    """
    check_providers(RMSNORM, (provider,))
    import torch

    if provider == "eager":
        m = _deck_module(weight, eps)
        return lambda inp: m(inp["x"])
    if provider == "native":
        N = weight.shape[0]
        return lambda inp: torch.nn.functional.rms_norm(inp["x"], (N,), weight, eps)
    if provider == "compile":
        if sample is None:
            raise ValueError("setup_rmsnorm('compile') needs sample inputs to compile for their shape")
        m = _deck_module(weight, eps)
        c = compile_checked(m, (sample["x"],), compile_backend)
        return lambda inp: c(inp["x"])
    if provider == "deck4phase":
        try:
            from .rmsnorm import four_phase
        except ImportError as exc:
            raise ProviderUnavailable(f"gpu_viz.rmsnorm.four_phase is not available ({exc})") from None
        return lambda inp: four_phase(inp["x"], weight, eps, block=1024)
    if provider == "fused":
        try:
            from .ops import rmsnorm
        except ImportError as exc:
            raise ProviderUnavailable(f"gpu_viz.ops.rmsnorm is not available ({exc})") from None
        return lambda inp: rmsnorm(inp["x"], weight, eps)
    # liger
    liger = _liger_rms_norm()
    return lambda inp: liger(inp["x"], weight, eps)


def setup_rmsnorm_gate(provider: str, weight, eps: float = EPS, sample=None, compile_backend=None) -> Callable:
    """A callable ``f(inputs) -> y`` for rmsnorm_gate; ``inputs`` is ``{"x": (M, N), "gate": (M, N)}``.

    Same contract and errors as :func:`setup_rmsnorm`.
    """
    check_providers(RMSNORM_GATE, (provider,))
    if provider == "eager":
        return lambda inp: eager_rmsnorm_gate(inp["x"], inp["gate"], weight, eps)
    if provider == "compile":
        if sample is None:
            raise ValueError("setup_rmsnorm_gate('compile') needs sample inputs to compile for their shape")

        def expr(x, gate, w):
            return eager_rmsnorm_gate(x, gate, w, eps)

        c = compile_checked(expr, (sample["x"], sample["gate"], weight), compile_backend)
        return lambda inp: c(inp["x"], inp["gate"], weight)
    try:
        from .ops import rmsnorm_gate
    except ImportError as exc:
        raise ProviderUnavailable(f"gpu_viz.ops.rmsnorm_gate is not available ({exc})") from None
    return lambda inp: rmsnorm_gate(inp["x"], inp["gate"], weight, eps)


SETUP = {RMSNORM: setup_rmsnorm, RMSNORM_GATE: setup_rmsnorm_gate}


def setup(op: str, provider: str, weight, eps: float = EPS, sample=None, compile_backend=None) -> Callable:
    """Dispatch to ``setup_<op>`` (see :func:`setup_rmsnorm`)."""
    return SETUP[_check_op(op)](provider, weight, eps, sample=sample, compile_backend=compile_backend)


# -- inputs ------------------------------------------------------------------------------------

def _torch_dtype(name: str):
    import torch

    return {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}[name]


def make_inputs(op: str, M: int, N: int, dtype, device, generator=None, count: int = 1) -> List[Dict]:
    """``count`` independent input sets ``{"x", "gate"?}`` of fresh random (never zero) data,
    plus the shared weight as element ``[0]["weight"]``: x ~ N(0, 1), gate ~ N(0, 2^2) (both
    tails of SiLU), weight ~ 1 + N(0, 0.5^2)."""
    import torch

    dt = _torch_dtype(dtype_name(dtype))
    g = generator
    sets = []
    for _ in range(count):
        s = {"x": torch.randn(M, N, device=device, generator=g).to(dt)}
        if op == RMSNORM_GATE:
            s["gate"] = (2 * torch.randn(M, N, device=device, generator=g)).to(dt)
        sets.append(s)
    weight = (1 + 0.5 * torch.randn(N, device=device, generator=g)).to(dt)
    for s in sets:
        s["weight"] = weight
    return sets


def _poison_pool(torch, M: int, N: int, device) -> None:
    """Leave NaN-filled blocks of the output's possible sizes in the caching allocator, so a
    provider's freshly allocated output starts as NaN, not as another provider's right answer."""
    if str(device) == "cpu":
        return
    try:
        for dt in (torch.float32, torch.float16):
            p = torch.full((M, N), float("nan"), dtype=dt, device=device)
            del p
    except RuntimeError:  # out of memory on a small GPU: the poison is best effort
        torch.cuda.empty_cache()


# -- the run ------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Timers:
    """How rows get their times; :func:`run` uses the GPU ones (gpu_viz.bench)."""

    kernel: Callable  # (fn(i), reps, calls_per_graph) -> Timing
    call: Callable  # (fn(i), reps) -> Timing
    sync: Callable[[], None]


def _gpu_timers() -> _Timers:
    import torch

    return _Timers(
        kernel=lambda fn, reps, k: bench.time_graph(fn, reps=reps, warmup=3, calls_per_graph=k),
        call=lambda fn, reps: bench.time_calls(fn, reps=reps, warmup=10),
        sync=torch.cuda.synchronize)


def _calls_per_graph(buffers: int, pilot_us: float, target_us: float = 1000.0, most: int = 64) -> int:
    """Calls per captured graph: whole passes over the ``buffers`` (>= 1) rotated input sets
    (every set read equally often; with two or more sets, never one set twice in a row across
    replays), enough that one replay lasts ~``target_us`` of kernel time so the replay's own
    launch (a few µs) is amortised -- but at most ``most`` calls, rounded up to a whole pass
    (short calls: 64 x 2.3 µs = ~150 µs per replay).  ``pilot_us``: one call's kernel time (µs)
    from a short graph pilot.

    Raises:
        ValueError: ``buffers`` < 1, ``pilot_us`` not a finite number >= 0.

    Session 3's record took the pilot from as-called timing (Python overhead included) with a
    200 µs target: 2 calls per replay at fp32 4096x4096 (one pass over 2 sets) and 1 at
    32768x8192, which added ~1-2 µs per call to every provider there (H200, 2026-11-29:
    fused 262.2 -> 259.9 µs, Liger 264.0 -> 261.9 with 4 calls; benchmarks/NOTES.md).
    """
    if buffers < 1:
        raise ValueError(f"buffers must be >= 1 (input sets to rotate over), got {buffers}")
    if not (math.isfinite(pilot_us) and pilot_us >= 0):
        raise ValueError(f"pilot_us must be a finite time >= 0 µs, got {pilot_us}")
    want = max(1, math.ceil(target_us / max(pilot_us, 0.5)))
    calls = max(buffers, min(want, most))
    return int(-(-calls // buffers) * buffers)


def _run(op: str, shapes, dtypes, providers, timings, reps: int, eps: float, device, timers: _Timers,
         l2_bytes: int, verbose: bool, compile_backend=None, seed: Optional[int] = None) -> Rows:
    import torch

    out = Rows()
    gen = torch.Generator(device=device)
    gen.manual_seed(int.from_bytes(os.urandom(4), "little") if seed is None else seed)
    for (M, N) in shapes:
        for dt in dtypes:
            nbytes = fewest_bytes(op, M, N, dt)
            buffers = bench.rotation_count(nbytes, l2_bytes)
            sets = make_inputs(op, M, N, dt, device, generator=gen, count=buffers)
            weight = sets[0]["weight"]
            key = {"op": op, "M": M, "N": N, "dtype": dt}

            def checked(fn):
                """Poison, run, compare with float64 a block of rows at a time
                (:func:`check_rows`: no multi-GB float64 temporaries, which slowed every later
                timing in the process ~9 % on the H200), free the output."""
                try:
                    _poison_pool(torch, M, N, device)
                    y = fn(sets[0])
                    timers.sync()
                    return check_rows(op, y, sets[0]["x"], weight, sets[0].get("gate"), eps, dt)
                finally:
                    y = None
                    if str(device) != "cpu":
                        # the poisoned blocks, this output and any garbage (e.g. the last timing's
                        # graph) go back to the driver before the next timing, as in the recorded run
                        gc.collect()
                        torch.cuda.empty_cache()

            ok_fns = []
            # 1. correctness first: every provider checked before anything is timed
            for p in providers:
                try:
                    fn = setup(op, p, weight, eps, sample=sets[0], compile_backend=compile_backend)
                    ok, detail = checked(fn)
                except (ProviderUnavailable, CompileFellBack) as exc:
                    ok, detail = False, str(exc)
                except Exception as exc:  # a provider that raises is reported, not fatal
                    ok, detail = False, f"raised {type(exc).__name__}: {exc}"
                if not ok:
                    out.skipped.append(dict(key, impl=p, reason=detail))
                    if verbose:
                        print(f"  skip {op} {p} {M}x{N} {dt}: {detail}")
                    continue
                ok_fns.append((p, fn))
            # 2. time the ones that were right, rotating over `buffers` input sets
            for p, fn in ok_fns:
                def call(i, fn=fn):
                    return fn(sets[i % buffers])
                t0 = time.perf_counter()
                try:
                    new_rows = []
                    for timing in timings:
                        if timing == bench.KERNEL:
                            pilot = timers.kernel(call, 3, buffers)  # one pass over the sets
                            k = _calls_per_graph(buffers, pilot.median_us)
                            t = timers.kernel(call, reps, k)
                            extra = {"buffers": buffers, "calls_per_graph": k}
                        else:
                            t = timers.call(call, reps)
                            extra = {"buffers": buffers}
                        new_rows.append(make_row(op, p, M, N, dt, t, **extra))
                except Exception as exc:  # e.g. a launch CUDA-graph capture refuses: say so, go on
                    out.skipped.append(dict(key, impl=p, reason=f"timing failed: {type(exc).__name__}: {exc}"))
                    if verbose:
                        print(f"  skip {op} {p} {M}x{N} {dt}: timing failed: {exc}")
                    try:
                        timers.sync()
                    except Exception:
                        pass
                    continue
                out.extend(new_rows)
                # every launch checked: the output after timing is still right
                try:
                    ok, detail = checked(fn)
                except Exception as exc:
                    ok, detail = False, f"raised {type(exc).__name__}: {exc}"
                if not ok:
                    out[:] = [r for r in out if not (r["impl"] == p and r["M"] == M and r["N"] == N
                                                     and r["dtype"] == dt)]
                    out.skipped.append(dict(key, impl=p, reason="wrong after timing: " + detail))
                if verbose:
                    print(f"  {op:12s} {p:10s} {M:>6d}x{N:<6d} {dt:8s} "
                          f"{time.perf_counter() - t0:5.1f} s ({buffers} buffer sets)")
            del sets, ok_fns
            if str(device) != "cpu":
                torch.cuda.empty_cache()
    add_speedups(out)
    return out


def _available(op: str, providers: Optional[Iterable[str]], drop_optional: bool = True) -> Tuple[str, ...]:
    """``providers`` (None: all of ``op``'s), validated, without optional ones that cannot import."""
    providers = check_providers(op, providers)
    chosen = []
    for p in providers:
        if p in OPTIONAL_PROVIDERS and drop_optional:
            try:
                _liger_rms_norm()
            except ProviderUnavailable:
                continue
        chosen.append(p)
    return tuple(chosen)


def run(op: str, shapes, dtypes=("float16",), providers: Optional[Iterable[str]] = None,
        timings=(bench.KERNEL, bench.CALL), reps: int = DEFAULT_REPS, eps: float = EPS,
        verbose: bool = False, seed: Optional[int] = None) -> Rows:
    """Check, then time, ``op`` for every (shape, dtype) and provider, live on this GPU.

    For each (M, N) in ``shapes`` and dtype in ``dtypes`` ("float16", "bfloat16", "float32"):
    fresh random inputs; every provider's output is compared with a float64 reference
    (:data:`TOLERANCES`); a provider that is wrong, unavailable or whose torch.compile fell
    back is NOT timed and goes to ``.skipped`` with the reason.  The rest are timed with
    ``reps`` (>= 1) samples per timing ("kernel": CUDA-graph replay of whole passes over the
    input sets, ~1 ms of kernel time per replay or 64 calls; "call": from Python),
    rotating through enough input sets that their traffic exceeds 3x the L2
    (:func:`gpu_viz.bench.rotation_count`), and checked again afterwards.

    Returns:
        :class:`Rows`: dicts with :data:`ROW_KEYS` (times in µs, GBps = fewest bytes /
        median, 1e9 B/s) plus ``reps``, ``buffers``, ``calls_per_graph`` (kernel rows) and
        ``speedup_vs_eager`` (eager median / this median, same timing; None without eager).

    Raises:
        ValueError: unknown op, provider, dtype, timing or a bad shape (before any GPU work).
        gpu_viz.backend.GPUUnavailable: in CPU mode (nothing is timed without a GPU).
    """
    _check_op(op)
    shapes = check_shapes(shapes)
    dtypes = tuple(dtype_name(d) for d in ([dtypes] if isinstance(dtypes, str) else dtypes))
    timings = check_timings(timings)
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if providers is not None:
        check_providers(op, providers)
    backend.require_gpu(f"benchmarks.run({op!r})")
    from . import device as _device

    providers = _available(op, providers, drop_optional=False) if providers is not None else _available(op, None)
    return _run(op, shapes, dtypes, providers, timings, reps, eps, "cuda", _gpu_timers(),
                _device.current().l2_bytes, verbose, seed=seed)


def run_rmsnorm(shapes, dtypes=("float16",), providers=("eager", "native", "compile", "deck4phase", "fused"),
                timing=None, timings=(bench.KERNEL, bench.CALL), reps: int = DEFAULT_REPS, eps: float = EPS,
                verbose: bool = False) -> Rows:
    """:func:`run` for op "rmsnorm" (notebook 08's live speedup).  ``timing`` (one of "kernel",
    "call") overrides ``timings``.  Same returns and errors as :func:`run`."""
    if timing is not None:
        timings = (timing,)
    return run(RMSNORM, shapes, dtypes, providers, timings=timings, reps=reps, eps=eps, verbose=verbose)


# -- tables and charts ---------------------------------------------------------------------------

def _fmt(v, spec="{:,.2f}"):
    return "—" if v is None else spec.format(v)


class Table:
    """A table of rows: ``html()`` for notebooks (also its rich display), ``markdown()`` and
    ``plain()`` (``str()``) for the CLI.  ``caption`` carries the provenance."""

    def __init__(self, header: List[str], body: List[List[str]], caption: str = ""):
        self.header, self.body, self.caption = header, body, caption

    def markdown(self) -> str:
        lines = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(r) + " |" for r in self.body]
        if self.caption:
            lines += ["", f"*{self.caption}*"]
        return "\n".join(lines)

    def plain(self) -> str:
        widths = [max(len(h), *(len(r[i]) for r in self.body)) if self.body else len(h)
                  for i, h in enumerate(self.header)]
        fmt = "  ".join("{:>%d}" % w for w in widths)
        lines = [fmt.format(*self.header), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*r) for r in self.body]
        if self.caption:
            lines.append(self.caption)
        return "\n".join(lines)

    def html(self) -> str:
        e = _html.escape
        head = "".join(f"<th style='text-align:right;padding:2px 8px'>{e(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td style='text-align:right;padding:2px 8px'>{e(c)}</td>"
                                        for c in r) + "</tr>" for r in self.body)
        cap = f"<caption style='caption-side:bottom;text-align:left'>{e(self.caption)}</caption>" \
            if self.caption else ""
        return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    _repr_html_ = html

    def __str__(self):
        return self.plain()

    __repr__ = __str__


def table(rows: Sequence[Dict], provenance: str = "", layout: str = "wide", copy_GBps: Optional[float] = None,
          impls: Optional[Sequence[str]] = None) -> Table:
    """Rows as a :class:`Table`.

    ``layout="wide"``: one line per (op, M, N, dtype, timing), a column per impl with its
    median µs and speed-up vs eager.  ``layout="long"``: one line per row with p10-p90,
    GB/s and (given ``copy_GBps``) the share of copy bandwidth.  ``provenance`` is the caption.
    """
    rows = list(rows)
    if layout not in ("wide", "long"):
        raise ValueError(f"layout must be 'wide' or 'long', got {layout!r}")
    if layout == "long":
        header = ["op", "impl", "M x N", "dtype", "timing", "median µs", "p10–p90 µs", "GB/s"]
        if copy_GBps:
            header.append("% of copy")
        header.append("vs eager")
        body = []
        for r in rows:
            line = [r["op"], r["impl"], f"{r['M']}x{r['N']}", r["dtype"], r["timing"], _fmt(r["median_us"]),
                    f"{r['p10_us']:,.2f}–{r['p90_us']:,.2f}", _fmt(r["GBps"], "{:,.0f}")]
            if copy_GBps:
                line.append(f"{100 * r['GBps'] / copy_GBps:.0f}%")
            line.append(_fmt(r.get("speedup_vs_eager"), "{:.2f}x"))
            body.append(line)
        return Table(header, body, provenance)
    order = [p for op in OPS for p in PROVIDERS[op]]
    present = sorted({r["impl"] for r in rows}, key=lambda p: order.index(p) if p in order else 99)
    if impls is not None:
        present = [p for p in impls if p in present]
    groups: Dict[Tuple, Dict[str, Dict]] = {}
    for r in rows:
        groups.setdefault((r["op"], r["M"], r["N"], r["dtype"], r["timing"]), {})[r["impl"]] = r
    header = ["op", "M x N", "dtype", "timing"] + [f"{p} µs" for p in present]
    body = []
    for (op, M, N, dt, timing), by in groups.items():
        line = [op, f"{M}x{N}", dt, timing]
        for p in present:
            r = by.get(p)
            if r is None:
                line.append("—")
            else:
                s = r.get("speedup_vs_eager")
                line.append(_fmt(r["median_us"]) + (f" ({s:.1f}x)" if s and p != "eager" else ""))
        body.append(line)
    return Table(header, body, provenance)


def record_provenance(record: Dict) -> str:
    """The label of a saved record: ``recorded on <gpu>, <date> (not live)``."""
    return backend.recorded_label(record.get("gpu", "unknown GPU"), record.get("date", "unknown date"))


def _provenance_or_live(provenance: Optional[str]) -> str:
    if provenance:
        return provenance
    if backend.has_gpu():
        return backend.live_label()
    raise ValueError("provenance is required in CPU mode: rows without a GPU come from a record; pass "
                     "record_provenance(record)")


def bar_chart(rows: Sequence[Dict], provenance: Optional[str] = None, timing: str = bench.KERNEL,
              op: Optional[str] = None, dtype: Optional[str] = None, metric: str = "median_us", ax=None,
              copy_GBps: Optional[float] = None):
    """Grouped bars: one group per shape, one bar per impl, of ``metric`` ("median_us",
    "GBps" or "speedup_vs_eager") for one ``timing`` (and optionally one ``op`` / ``dtype``).

    The title states the provenance: ``provenance`` (e.g. :func:`record_provenance`), or the
    live label when a GPU is here.  With ``metric="GBps"`` and ``copy_GBps``, the copy
    bandwidth measured in the same run is drawn as the practical roofline.  Returns the
    matplotlib Figure.

    Raises:
        ValueError: no rows match, an unknown metric, or no provenance in CPU mode.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    label = _provenance_or_live(provenance)
    if metric not in ("median_us", "GBps", "speedup_vs_eager"):
        raise ValueError(f"metric must be 'median_us', 'GBps' or 'speedup_vs_eager', got {metric!r}")
    sel = [r for r in rows if r["timing"] == timing and (op is None or r["op"] == op)
           and (dtype is None or r["dtype"] == dtype_name(dtype)) and r.get(metric) is not None]
    if not sel:
        raise ValueError(f"bar_chart: no rows with timing={timing!r}, op={op!r}, dtype={dtype!r}")
    order = [p for o in OPS for p in PROVIDERS[o]]
    impls = sorted({r["impl"] for r in sel}, key=lambda p: order.index(p) if p in order else 99)
    groups = list(dict.fromkeys((r["op"], r["M"], r["N"], r["dtype"]) for r in sel))
    vals = {(r["op"], r["M"], r["N"], r["dtype"], r["impl"]): r[metric] for r in sel}
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) * max(1, len(impls)) / 2.5), 3.8))
    else:
        fig = ax.figure
    x = np.arange(len(groups))
    w = 0.8 / len(impls)
    for j, p in enumerate(impls):
        ys = [vals.get(g + (p,), np.nan) for g in groups]
        ax.bar(x + (j - (len(impls) - 1) / 2) * w, ys, w, label=p)
    multi_op = len({g[0] for g in groups}) > 1
    multi_dt = len({g[3] for g in groups}) > 1
    ax.set_xticks(x)
    ax.set_xticklabels([(f"{g[0]}\n" if multi_op else "") + f"{g[1]}x{g[2]}" + (f"\n{g[3]}" if multi_dt else "")
                        for g in groups], fontsize=8)
    ylabel = {"median_us": f"median time per call, µs ({timing} timing)",
              "GBps": "effective bandwidth, GB/s (fewest bytes / median)",
              "speedup_vs_eager": "speed-up over eager (x)"}[metric]
    ax.set_ylabel(ylabel, fontsize=8)
    if metric == "median_us":
        ax.set_yscale("log")
    if metric == "GBps" and copy_GBps:
        ax.axhline(copy_GBps, color="k", ls="--", lw=1)
        ax.annotate(f"device-to-device copy {copy_GBps:,.0f} GB/s", (0, copy_GBps), xytext=(2, 3),
                    textcoords="offset points", fontsize=7)
    what = " / ".join(sorted({g[0] for g in groups}))
    ax.set_title(f"{what}, {timing} timing — {label}", fontsize=9)
    ax.legend(fontsize=8, ncol=min(len(impls), 6))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def seed_comparison(rows: Sequence[Dict], provenance: str, dtype: str = "float16") -> Table:
    """The seed's recorded H100 numbers beside ours for rmsnorm_gate at :data:`SEED_SHAPES`.

    Columns: the seed's fused / eager / speed-up (recorded by its author, "call"-like timing),
    then ours as called (comparable with the seed's) and kernel-only.  ``provenance`` labels ours.
    """
    dt = dtype_name(dtype)
    mine = {(r["M"], r["N"], r["impl"], r["timing"]): r for r in rows
            if r["op"] == RMSNORM_GATE and r["dtype"] == dt}

    def cell(M, N, impl, timing):
        r = mine.get((M, N, impl, timing))
        return "—" if r is None else f"{r['median_us']:,.2f}"

    def speed(M, N, timing):
        r = mine.get((M, N, "fused", timing))
        return "—" if r is None or not r.get("speedup_vs_eager") else f"{r['speedup_vs_eager']:.1f}x"

    header = ["M x N", "seed fused µs", "seed eager µs", "seed speed-up",
              "ours call: fused", "eager", "compile", "speed-up",
              "ours kernel: fused", "eager", "compile", "speed-up"]
    body = []
    for (M, N, f, e, sp) in SEED_H100["rows"]:
        line = [f"{M}x{N}", f"{f:.2f}", f"{e:.2f}", f"{sp:.2f}x"]
        for timing in (bench.CALL, bench.KERNEL):
            line += [cell(M, N, "fused", timing), cell(M, N, "eager", timing), cell(M, N, "compile", timing),
                     speed(M, N, timing)]
        body.append(line)
    cap = (f"seed: {SEED_H100['source']}. ours ({dt}): {provenance}. "
           "µs per call, median; speed-up = eager / fused.")
    return Table(header, body, cap)


# -- issue 5's targets on a record ------------------------------------------------------------------

def _find(rows, **key):
    for r in rows:
        if all(r.get(k) == v for k, v in key.items()):
            return r
    return None


def summary_checks(record: Dict, timing: str = bench.KERNEL) -> List[Tuple[str, bool, str]]:
    """Issue 5's targets evaluated on ``record`` (DESIGN.md section 5 format).

    1. fused >= 90 % of ``copy_GBps`` at 16384x4096 and 32768x8192, fp16 and bf16, both ops;
    2. fused faster than ``native`` and ``compile`` at every (op, shape, dtype) where fused
       was measured (a missing or excluded baseline fails the check: it was not shown);
    3. fused at 128x4096 within 1.5x of ``launch_floor_us`` (both the kernel timing).

    Returns a list of (check, passed, detail).  Rows of ``timing`` ("kernel") are used.
    """
    rows = [r for r in record.get("rows", []) if r.get("timing") == timing]
    skipped = record.get("skipped", [])
    out: List[Tuple[str, bool, str]] = []
    copy = record.get("copy_GBps")
    for op in OPS:
        for (M, N) in BANDWIDTH_SHAPES:
            for dt in ("float16", "bfloat16"):
                name = f"{op} fused {M}x{N} {dt}: >= {BANDWIDTH_TARGET:.0%} of copy bandwidth"
                r = _find(rows, op=op, impl="fused", M=M, N=N, dtype=dt)
                if r is None or not copy:
                    out.append((name, False, "not measured" if r is None else "no copy_GBps in the record"))
                    continue
                share = r["GBps"] / copy
                out.append((name, share >= BANDWIDTH_TARGET,
                            f"{r['GBps']:,.0f} GB/s = {share:.1%} of copy {copy:,.0f} GB/s"))
    baselines = {RMSNORM: ("native", "compile"), RMSNORM_GATE: ("compile",)}
    for r in rows:
        if r["impl"] != "fused":
            continue
        for b in baselines[r["op"]]:
            name = f"{r['op']} {r['M']}x{r['N']} {r['dtype']}: fused faster than {b}"
            br = _find(rows, op=r["op"], impl=b, M=r["M"], N=r["N"], dtype=r["dtype"])
            if br is None:
                why = _find(skipped, op=r["op"], impl=b, M=r["M"], N=r["N"], dtype=r["dtype"])
                out.append((name, False, f"{b} not measured" + (f": {why['reason'][:160]}" if why else "")))
                continue
            out.append((name, r["median_us"] < br["median_us"],
                        f"fused {r['median_us']:.2f} µs vs {b} {br['median_us']:.2f} µs "
                        f"({br['median_us'] / r['median_us']:.2f}x)"))
    floor = record.get("launch_floor_us")
    for op in OPS:
        for dt in ("float16", "bfloat16"):
            M, N = FLOOR_SHAPE
            name = f"{op} fused {M}x{N} {dt}: within {FLOOR_FACTOR}x of the launch floor"
            r = _find(rows, op=op, impl="fused", M=M, N=N, dtype=dt)
            if r is None or not floor:
                out.append((name, False, "not measured" if r is None else "no launch_floor_us in the record"))
                continue
            detail = f"{r['median_us']:.2f} µs = {r['median_us'] / floor:.2f}x the floor {floor:.2f} µs"
            bare = record.get("copy_kernel_floor_us")
            if bare:  # context: the least any kernel moving x -> y of this shape takes
                detail += (f"; a bare copy kernel moving the same x -> y bytes: {bare:.2f} µs = "
                           f"{bare / floor:.2f}x")
            out.append((name, r["median_us"] <= FLOOR_FACTOR * floor, detail))
    return out


def checks_table(checks: Sequence[Tuple[str, bool, str]]) -> Table:
    """:func:`summary_checks` output as a :class:`Table`."""
    return Table(["check", "passed", "detail"], [[c, "yes" if p else "NO", d] for c, p, d in checks])


# -- the full record -----------------------------------------------------------------------------

def record_plan(quick: bool = False) -> List[Tuple[str, List[Tuple[int, int]], Tuple[str, ...], Tuple[str, ...]]]:
    """What :func:`full_record` measures: (op, shapes, dtypes, providers) per step.

    Full: both ops over :data:`RECORD_SHAPES` in fp16 and bf16 (rmsnorm with deck4phase and,
    at the deck's shapes, too), rmsnorm in fp32 at 4096x4096.  Quick: :data:`QUICK_SHAPES`, fp16.
    """
    rms = ("eager", "native", "compile", "deck4phase", "fused", "liger")
    gate = PROVIDERS[RMSNORM_GATE]
    if quick:
        return [(RMSNORM, list(QUICK_SHAPES), ("float16",), rms),
                (RMSNORM_GATE, list(QUICK_SHAPES), ("float16",), gate)]
    deck_only = [s for s in DECK_SHAPES if s not in RECORD_SHAPES]
    return [(RMSNORM, list(RECORD_SHAPES) + deck_only, ("float16", "bfloat16"), rms),
            (RMSNORM, [(4096, 4096)], ("float32",), rms),
            (RMSNORM_GATE, list(RECORD_SHAPES), ("float16", "bfloat16"), gate)]


def kernel_report_any(arch: Optional[str] = None) -> Tuple[List[Dict], str]:
    """``ops.kernel_report()`` rows for one ``arch`` (default: this device's, or the deck's L4 in
    CPU mode) and where they came from: ptxas (with spills) where nvcc exists, else the live
    device's attributes (registers, no spill count).

    Raises:
        ImportError: gpu_viz.ops missing.  RuntimeError: neither source worked (both reasons).
    """
    from . import device as _device, ops

    arch = arch or _device.current().sm
    try:
        return ops.kernel_report(source="ptxas", arches=[arch]), f"ptxas -v for {arch} (nvcc on this machine)"
    except Exception as exc:
        first = f"{type(exc).__name__}: {exc}"
    if backend.has_gpu():
        rows = [r for r in ops.kernel_report(source="device") if r.get("arch") == arch]
        return rows, f"cudaFuncGetAttributes on {backend.detect().device_name} (no spill count: {first[:120]})"
    raise RuntimeError(f"no kernel report: ptxas failed ({first[:300]}) and there is no GPU")


def kernel_resources(cases: Sequence[Tuple[str, int, int]], dtype="float16", info=None,
                     report: Optional[List[Dict]] = None) -> List[Dict]:
    """For each (op, M, N): the kernel ``ops.launch_config`` picks, its registers and spills
    (``report`` rows, default :func:`kernel_report_any` for ``info``'s arch) and its occupancy on
    ``info`` (default ``device.current()``) from :func:`gpu_viz.occupancy.calculate`.

    Returns one dict per case: op, M, N, variant, kernel, block, rows_per_block, grid,
    registers, spill_stores_bytes, spill_loads_bytes, local_bytes, shared_bytes,
    blocks_per_sm, occupancy (0..1), limiter.
    """
    from . import device as _device, occupancy, ops

    info = info or _device.current()
    if report is None:
        report, _src = kernel_report_any(info.sm)
    by_name = {r["kernel"]: r for r in report if r.get("arch", info.sm) == info.sm}
    out = []
    for op, M, N in cases:
        cfg = ops.launch_config(M, N, dtype, gate=(_check_op(op) == RMSNORM_GATE))
        r = by_name.get(cfg["kernel"], {})
        row = {"op": op, "M": M, "N": N, "variant": cfg["variant"], "kernel": cfg["kernel"],
               "block": cfg["block"], "rows_per_block": cfg["rows_per_block"], "grid": cfg["grid"],
               "registers": r.get("registers"), "spill_stores_bytes": r.get("spill_stores_bytes"),
               "spill_loads_bytes": r.get("spill_loads_bytes"), "local_bytes": r.get("local_bytes"),
               "shared_bytes": r.get("shared_bytes")}
        if r.get("registers") is not None:
            occ = occupancy.calculate(info, cfg["block"], occupancy.KernelResources(
                cfg["kernel"], int(r["registers"]), int(r.get("shared_bytes") or 0)))
            row.update(blocks_per_sm=occ.blocks_per_sm, occupancy=round(occ.occupancy, 3), limiter=occ.limiter)
        else:
            row.update(blocks_per_sm=None, occupancy=None, limiter="no report for this kernel")
        out.append(row)
    return out


def _kernel_section(plan) -> Dict:
    """The record's view of the kernels: per-arch report and, per (op, shape, dtype), the
    launch config with registers, spills and occupancy."""
    try:
        report, source = kernel_report_any()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    cases = []
    for op, shapes, dtypes, _p in plan:
        for dt in dtypes:
            try:
                cases += [dict(r, dtype=dtype_name(dt))
                          for r in kernel_resources([(op, M, N) for (M, N) in shapes], dt, report=report)]
            except Exception as exc:
                cases.append({"op": op, "dtype": dt, "error": f"{type(exc).__name__}: {exc}"})
    return {"source": source, "report": report, "launches": cases}


def full_record(quick: bool = False, out=None, tag: str = "fused", reps: int = DEFAULT_REPS,
                verbose: bool = True, save: bool = True) -> Dict:
    """Measure everything issue 5 asks for in one run and save it as one record.

    In order: copy bandwidth (:func:`gpu_viz.bench.copy_bandwidth`, 1 GiB), the launch floor
    (:func:`gpu_viz.bench.launch_floor`), a bare copy kernel at :data:`FLOOR_SHAPE` fp16
    (:func:`gpu_viz.bench.copy_kernel_floor`), then :func:`run` over :func:`record_plan` (both timings, ``reps`` >= 100
    samples each).  Keys beyond DESIGN.md section 5: ``launch_floor_call_us``,
    ``copy_kernel_floor_us``, ``copy``
    (its spread), ``kernels`` (:func:`kernel_report_any` and :func:`kernel_resources` per
    launch: registers, spills, occupancy), ``skipped``, ``checks``
    (:func:`summary_checks`), ``plan``, ``wall_s``, ``complete``.  Saved through
    :func:`gpu_viz.bench.save_record` (``out`` directory, default benchmarks/results/) after
    every shape (``"complete": false`` until the end, so a run cut short keeps what it
    measured) unless ``save=False``; the path is returned as ``record["_path"]`` (not in the file).

    Budget: under 4 minutes on an H200 (torch.compile per shape is most of it).

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    backend.require_gpu("the full benchmark record")
    t0 = time.perf_counter()
    plan = record_plan(quick)
    say = print if verbose else (lambda *a, **k: None)
    say(f"{backend.live_label()}: copy bandwidth and launch floor ...")
    copy = bench.copy_bandwidth()
    floor = bench.launch_floor()
    from . import device as _device

    fM, fN = FLOOR_SHAPE
    copy_floor = bench.copy_kernel_floor(fM * fN * 2, _device.current().l2_bytes)
    say(f"  copy {copy['GBps']:,.0f} GB/s; launch floor {floor['kernel'].median_us:.2f} µs (kernel), "
        f"{floor['call'].median_us:.2f} µs (call); copy kernel at {fM}x{fN} fp16 "
        f"{copy_floor.median_us:.2f} µs")
    say("kernel report (registers, spills, occupancy) ...")
    kernels_section = _kernel_section(plan)
    record = bench.new_record(
        [], copy_GBps=round(copy["GBps"], 1), launch_floor_us=round(floor["kernel"].median_us, 4),
        launch_floor_call_us=round(floor["call"].median_us, 4),
        copy_kernel_floor_us=round(copy_floor.median_us, 4),
        copy={"bytes": 1 << 30, "median_us": copy["timing"].median_us, "p10_us": copy["timing"].p10_us,
              "p90_us": copy["timing"].p90_us},
        kernels=kernels_section, skipped=[], providers_unavailable={},
        plan=[{"op": op, "shapes": [list(s) for s in shapes], "dtypes": list(d), "providers": list(p)}
              for op, shapes, d, p in plan],
        reps=reps, quick=bool(quick), complete=False)
    rows = record.pop("rows")
    name_tag = "quick-" + tag if quick and tag else tag
    path = None

    def snapshot(final: bool):
        # rows last, as in DESIGN.md section 5; saved after every shape so a run cut short
        # still leaves its measurements (marked "complete": false)
        nonlocal path
        record.pop("rows", None)
        record["complete"] = final
        record["checks"] = [{"check": c, "passed": ok, "detail": d}
                            for c, ok, d in summary_checks(dict(record, rows=rows))]
        record["wall_s"] = round(time.perf_counter() - t0, 1)
        record["rows"] = rows
        if save:
            path = bench.save_record(record, tag=name_tag, directory=out)

    for op, shapes, dtypes, providers in plan:
        if "liger" in providers:
            try:
                _liger_rms_norm()
            except ProviderUnavailable as exc:
                record["providers_unavailable"]["liger"] = str(exc)
        providers = _available(op, providers)
        say(f"{op}: {len(shapes)} shapes x {dtypes} x {providers}")
        for shape in shapes:
            r = run(op, [shape], dtypes, providers, reps=reps, verbose=verbose)
            rows += list(r)
            record["skipped"] += r.skipped
            snapshot(final=False)
    snapshot(final=True)
    if save:
        record["_path"] = str(path)
        say(f"saved {path} ({record['wall_s']} s)")
    return record


def newest_record(tag: str = "fused", include_quick: bool = False) -> Optional[Dict]:
    """The newest committed record whose file name ends in ``-<tag>.json``, complete and with
    rows (``--quick`` records only if ``include_quick``); None if there is none."""
    recs = bench.load_records(f"*-{tag}.json") if tag else bench.load_records()
    recs = [r for r in recs if r.get("rows") and r.get("complete", True) and (include_quick or not r.get("quick"))]
    return recs[0] if recs else None


# -- the seed's defects, checked live -------------------------------------------------------------

def seed_defect_checks(dtype="float16", eps: float = EPS) -> List[Tuple[str, bool, str]]:
    """Each defect the seed's write-up lists, run through our ops and checked against float64.

    N=768 (seed: 96 threads, lost reduction terms), N > 8192 (seed: no path), N % 8 != 0
    (seed: required N % 8 == 0), a misaligned view with a row stride (seed: assumed 16-byte
    aligned contiguous rows), the caller's current stream (seed: default stream).  Returns
    (defect, passed, detail) per case.

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    backend.require_gpu("the seed-defect checks")
    import torch
    from . import ops

    dt = dtype_name(dtype)
    tdt = _torch_dtype(dt)
    g = torch.Generator(device="cuda")
    g.manual_seed(int.from_bytes(os.urandom(4), "little"))
    results = []

    def check(name, x, gate, w):
        y = ops.rmsnorm_gate(x, gate, w, eps)
        torch.cuda.synchronize()
        ok, detail = compare(y, reference(RMSNORM_GATE, x, w, gate, eps), dt)
        y2 = ops.rmsnorm(x, w, eps)
        torch.cuda.synchronize()
        ok2, detail2 = compare(y2, reference(RMSNORM, x, w, None, eps), dt)
        results.append((name, ok and ok2, f"rmsnorm_gate: {detail}; rmsnorm: {detail2}"))

    def rnd(*shape, scale=1.0):
        return (scale * torch.randn(*shape, device="cuda", generator=g)).to(tdt)

    for name, M, N in (("N=768: the seed's 96-thread reduction lost terms", 64, 768),
                       ("N=12288 > 8192: the seed had no path", 8, 12288),
                       ("N=65536: a very wide row", 2, 65536),
                       ("N=4100 (N % 8 != 0): the seed required N % 8 == 0", 33, 4100),
                       ("N=1001 (odd)", 17, 1001)):
        check(name, rnd(M, N), rnd(M, N, scale=2.0), 1 + rnd(N, scale=0.5))
    M, N = 40, 4096
    base_x, base_g = rnd(M, N + 9), rnd(M, N + 9, scale=2.0)
    check("misaligned view x[:, 1:N+1] (2-byte offset, row stride N+9)", base_x[:, 1:N + 1],
          base_g[:, 1:N + 1], 1 + rnd(N, scale=0.5))
    # current stream: x is written on a side stream after a ~ms spin; launched on the default
    # stream, the op would read the NaN that x held before.
    M, N = 256, 4096
    src, gate, w = rnd(M, N), rnd(M, N, scale=2.0), 1 + rnd(N, scale=0.5)
    x = torch.full((M, N), float("nan"), device="cuda", dtype=tdt)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(5_000_000)
        x.copy_(src)
        y = ops.rmsnorm_gate(x, gate, w, eps)
    s.synchronize()
    ok, detail = compare(y, reference(RMSNORM_GATE, src, w, gate, eps), dt)
    results.append(("current stream: launched on the caller's side stream, after its writes", ok, detail))
    return results


# -- command line ----------------------------------------------------------------------------------

def _cmd_bench(args) -> int:
    if not backend.has_gpu():
        print(f"gpu-viz bench needs a CUDA GPU: {backend.detect().describe()}")
        rec = newest_record()
        if rec:
            print(f"The newest committed record is {rec['_file']} ({record_provenance(rec)}).")
        return 2
    record = full_record(quick=args.quick, out=args.out, tag=args.tag, reps=args.reps)
    rows = record["rows"]
    print()
    print(table(rows, provenance=backend.live_label()).plain())
    if record["skipped"]:
        print("\nNot timed:")
        for s in record["skipped"]:
            print(f"  {s['op']} {s['impl']} {s['M']}x{s['N']} {s['dtype']}: {s['reason'][:200]}")
    print("\nIssue 5's targets (kernel timing):")
    checks = [(c["check"], c["passed"], c["detail"]) for c in record["checks"]]
    print(checks_table(checks).plain())
    print(f"\n{sum(p for _, p, _ in checks)} of {len(checks)} checks passed; record: {record.get('_path')}")
    return 1 if args.strict and not all(p for _, p, _ in checks) else 0


def register_cli(subparsers) -> None:
    """Add ``gpu-viz bench [--quick] [--out DIR] [--tag T] [--reps N] [--strict]``."""
    p = subparsers.add_parser("bench", help="measure fused RMSNorm (+gate) vs eager, F.rms_norm, "
                                            "torch.compile; save a record")
    p.add_argument("--quick", action="store_true", help="a few shapes, fp16 only")
    p.add_argument("--out", default=None, help="directory for the JSON record (default benchmarks/results/)")
    p.add_argument("--tag", default="fused", help="record file suffix (default: fused)")
    from .slides import _positive_int  # argparse type, as for `gpu-viz slides --jobs`

    p.add_argument("--reps", type=_positive_int, default=DEFAULT_REPS,
                   help="timed samples per row, >= 1 (default 100)")
    p.add_argument("--strict", action="store_true", help="exit 1 if any of issue 5's targets is missed")
    p.set_defaults(func=_cmd_bench)
