"""The fused RMSNorm (+ SiLU gate) against its baselines, live: providers and the harness.

Data path: providers by name (one ``setup_<op>`` per op, Liger style) --> :func:`run`
(check every provider against the float64 reference on fresh random data, THEN time the ones
that were right, rotating buffers past L2) --> rows in DESIGN.md section 5's format -->
the performance checks (:func:`summary_checks`) --> :func:`full_record`
(one JSON record, :func:`gpu_viz.measure.records.save_record`); :mod:`gpu_viz.rmsnorm.report` shows
rows and records (tables, charts) and runs ``gpu-viz bench``.

Providers
    op ``"rmsnorm"``: ``eager`` (the deck's module, :class:`gpu_viz.rmsnorm.eager.EagerRMSNorm`),
    ``native`` (``torch.nn.functional.rms_norm``), ``compile`` (``torch.compile(dynamic=False)``
    of the eager module, per shape, checked to have really compiled), ``deck4phase``
    (:func:`gpu_viz.rmsnorm.deck.four_phase`, block=1024), ``fused``
    (:func:`gpu_viz.rmsnorm.fused.rmsnorm`), ``liger`` (only if ``liger_kernel`` imports).
    op ``"rmsnorm_gate"``: ``eager`` (:func:`gpu_viz.rmsnorm.eager.eager_rmsnorm_gate`, the
    seed's baseline), ``compile`` (of that), ``fused`` (:func:`gpu_viz.rmsnorm.fused.rmsnorm_gate`).

Timings (both labelled in every row): ``"kernel"`` = CUDA-graph replay, the device time
alone; ``"call"`` = events around each call from Python, what a caller sees.

``GBps`` counts the fewest bytes the op must move (inputs read once, output written once):
rmsnorm ``2*M*N*size + N*size``; rmsnorm_gate adds ``M*N*size`` for the gate.
"""
from __future__ import annotations

import dataclasses
import functools
import gc
import math
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import backend, check, kernels
from ..measure import records, timing as bench
from .dtypes import OPS, bytes_moved, check_op as _check_op, dtype_name as _dtype_name, torch_dtype
from .reference import rmsnorm as reference_f64
from .tolerances import tolerance

RMSNORM, RMSNORM_GATE = OPS

#: Providers per op, in display order.
PROVIDERS: Dict[str, Tuple[str, ...]] = {
    RMSNORM: ("eager", "native", "compile", "deck4phase", "fused", "liger"),
    RMSNORM_GATE: ("eager", "compile", "fused"),
}
#: Providers timed per call only (the per-call rows): ``*_grad`` with a weight that requires
#: grad (autograd records the call; forward only), ``fused`` the default launcher (the C++ one
#: of :mod:`gpu_viz.rmsnorm.launcher`, built before timing), ``fused_driver`` the Python plan
#: launched with ctypes ``cuLaunchKernel``, ``fused_cupy`` the same plan launched through
#: CuPy's RawKernel, ``fused_unplanned`` the checks and launch of every call without a plan
#: (:func:`gpu_viz.rmsnorm.fused._launch`).
CALL_PROVIDERS: Dict[str, Tuple[str, ...]] = {
    RMSNORM: ("native", "fused", "native_grad", "fused_grad", "fused_driver", "fused_cupy", "fused_unplanned"),
    RMSNORM_GATE: ("fused", "fused_grad"),
}
#: The per-call rows' shapes: 1..1024 rows of 4096 features.
CALL_SHAPES = tuple((m, 4096) for m in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
#: Per call with a grad-requiring weight: within this factor of F.rms_norm's (issue 18).
CALL_GRAD_FACTOR = 1.5
#: Wide rows (issue 18): ~1 GiB of fp16 traffic each.
WIDE_SHAPES = ((16384, 32768), (8192, 65536), (2048, 131072), (1024, 262144))
#: The baselines each wide (op, shape, dtype) is measured against (both timings).  ``liger`` is
#: optional: it refuses N >= 131072 ("exceeds the recommended Triton blocksize = 65536"), which
#: the record shows as a skipped row with Liger's message and :func:`summary_checks` does not
#: count against the fused op; the others are required (a missing one fails its check).
WIDE_PROVIDERS: Dict[str, Tuple[str, ...]] = {
    RMSNORM: ("eager", "native", "compile", "fused", "liger"),
    RMSNORM_GATE: ("eager", "compile", "fused"),
}
#: Timed samples per wide row.  Their spread is tight (the wide run of 2026-12-01, 30 replays:
#: p10-p90 within ~1 % of the median at every shape) and each sample is ~0.5-10 ms, so 30
#: samples give the median to well under the 2 % the targets resolve, at a third of the time.
WIDE_REPS = 30
#: Item 3 (issue 18): the fused kernel-only medians may be at most this much slower than the
#: previous committed record's at the shapes both measured, after normalising by a baseline
#: measured in both runs (:func:`previous_record_checks`).
PREVIOUS_LIMIT = 0.02
#: Batch invariance, checked in the record: rows of op(x[:m]) against op(x) bit for bit.
INVARIANCE_M = (1, 3, 64, 1000, 4096)
INVARIANCE_N = (768, 2048, 4096, 8192, 16384, 65536)
#: Providers that are optional: missing library -> skipped with the reason, never an error.
OPTIONAL_PROVIDERS = {"liger"}

DTYPES = ("float16", "bfloat16", "float32")

EPS = 1e-6
DEFAULT_REPS = 100
#: Per-call rows: a shape's providers share this many interleaved rounds of reps / CALL_ROUNDS
#: calls each (gpu_viz.measure.timing.time_calls_interleaved); their rows carry ``"rounds"``.
CALL_ROUNDS = 10
#: How a record's per-call windows were timed, saved in the record: "idle-start" = each provider's
#: window starts on an idle GPU (a synchronize before it).  Records without the key predate it:
#: a provider timed right after one whose kernels were still queued (eager's) could measure its
#: own kernel's pace instead of its cost per call (:func:`gpu_viz.rmsnorm.report.call_timing_caveat`).
CALL_WINDOWS = "idle-start"

#: The seed's four shapes (M, N) and its recorded H100 table (write-up 000, README at commit
#: d801038): fp16 rmsnorm_gate, "call"-like timing (events around a Python loop that
#: included output allocation), averaged over 100 (50 for the larger) calls.  NOT live.
SEED_SHAPES = ((128, 4096), (512, 4096), (1024, 4096), (1024, 8192))
SEED_H100 = {
    # the GPU is named once, by the column heading (gpu_viz.measure.records.SEED_H100)
    "source": ("the fused-gate write-up, quoting its README's run (80GB HBM3, PyTorch 2.4.0, "
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
#: Shapes of the full record: the seed's, then bandwidth-bound and small-N ones.
RECORD_SHAPES = SEED_SHAPES + ((4096, 4096), (16384, 4096), (32768, 8192), (1024, 768), (4096, 2048))
#: Shapes where the fused ops must reach BANDWIDTH_TARGET of the copy bandwidth.
BANDWIDTH_SHAPES = ((16384, 4096), (32768, 8192))
BANDWIDTH_TARGET = 0.90
FLOOR_SHAPE = (128, 4096)
FLOOR_FACTOR = 1.5
QUICK_SHAPES = ((128, 4096), (1024, 4096), (16384, 4096), (1024, 768))

ROW_KEYS = ("op", "impl", "M", "N", "dtype", "timing", "median_us", "p10_us", "p90_us", "GBps")


class ProviderUnavailable(RuntimeError):
    """An optional provider cannot run here (its library is missing); it is skipped, with this reason.
    The package's own providers never raise it: a missing module of ours is an error."""


class CompileFellBack(RuntimeError):
    """torch.compile did not produce one compiled graph for this shape (graph break, recompile
    limit, skipped frame): its timing would be eager's under the name "compile", so it is excluded."""


# -- validation ------------------------------------------------------------------------------

def dtype_name(dtype) -> str:
    """``"float16"`` / ``torch.float16`` / ``numpy.float16`` -> ``"float16"``
    (:func:`gpu_viz.rmsnorm.dtypes.dtype_name`, with a ValueError for the harness's arguments)."""
    try:
        return _dtype_name(dtype)
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
    known = PROVIDERS[op] + tuple(p for p in CALL_PROVIDERS[op] if p not in PROVIDERS[op])
    for p in providers:
        if p not in known:
            raise ValueError(f"unknown provider {p!r} for op {op!r}; known providers: {known}")
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
    """:func:`gpu_viz.rmsnorm.dtypes.bytes_moved` for ``op`` ("rmsnorm" or "rmsnorm_gate")."""
    return bytes_moved(M, N, dtype_name(dtype), gate=_check_op(op) == RMSNORM_GATE)


def make_row(op: str, impl: str, M: int, N: int, dtype, t: "bench.Timing", **extra) -> Dict:
    """One row in DESIGN.md section 5's format from a :class:`gpu_viz.measure.timing.Timing`."""
    dt = dtype_name(dtype)
    row = {"op": op, "impl": impl, "M": int(M), "N": int(N), "dtype": dt, "timing": t.timing,
           "median_us": round(t.median_us, 4), "p10_us": round(t.p10_us, 4), "p90_us": round(t.p90_us, 4),
           "GBps": round(t.GBps(fewest_bytes(op, M, N, dt)), 2), "reps": t.n}
    row.update(extra)
    return row


def row_key(r: Dict) -> Tuple:
    """A row's identity: (op, impl, M, N, dtype, timing)."""
    return (r["op"], r["impl"], r["M"], r["N"], r["dtype"], r["timing"])


def unique_rows(rows: Iterable[Dict]) -> List[Dict]:
    """``rows`` with one row per :func:`row_key`: the first one measured.  Records made before
    :func:`record_batches` dropped repeats time 128, 512 and 1024 x 4096 per call twice (the
    record plan, then the per-call batch); the first is the one timed beside every other
    provider of its shape, so its speed-ups and its per-call pairs come from one batch.
    Every reader of a record (the checks, the tables, the charts) takes rows through this."""
    seen = set()
    out = []
    for r in rows:
        k = row_key(r)
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


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

#: :func:`check_rows` builds the float64 reference this many elements (rows x N) at a time.
CHECK_CHUNK_ELEMENTS = 1 << 22


def check_rows(op: str, out, x, weight, gate=None, eps: float = EPS, dtype=None,
               chunk_elements: int = CHECK_CHUNK_ELEMENTS, seed: Optional[int] = None) -> Tuple[bool, str]:
    """``out`` against the float64 reference (:func:`gpu_viz.rmsnorm.reference.rmsnorm`) with the
    one tolerance table, a block of rows at a time (:func:`gpu_viz.check.compare`, merged).

    ``x``, ``out`` (and ``gate``): the same shape (..., N); leading dimensions are flattened into
    rows (a 1-D tensor is one row).  ``dtype``: the tolerance class (default: x's dtype).  The
    float64 temporaries never exceed ``chunk_elements`` (>= 1) x ~6 x 8 bytes: on the H200 a
    whole-tensor float64 check of several GB slowed every later timing in the process by ~9 %
    (benchmarks/NOTES.md).

    Returns:
        (ok, the report's message).
    Raises:
        ValueError: ``chunk_elements`` < 1.  TypeError: a non-int ``chunk_elements``.
    """
    chunk_elements = check.check_int("chunk_elements", chunk_elements, 1)
    out = out.detach() if hasattr(out, "detach") else out  # a *_grad provider's output
    dtype = dtype or str(x.dtype).replace("torch.", "")
    if tuple(out.shape) != tuple(x.shape):
        return False, f"shape {tuple(out.shape)} != expected {tuple(x.shape)}"
    atol, rtol = tolerance(dtype)
    N = x.shape[-1] if x.dim() else 1
    x2, out2 = x.reshape(-1, N), out.reshape(-1, N)
    g2 = gate.reshape(-1, N) if gate is not None else None
    M = x2.shape[0]
    rows = max(1, chunk_elements // max(1, N))
    rep = check.Report(name=f"{op} {dtype}", atol=atol, rtol=rtol, seed=seed)
    for r0 in range(0, M, rows):
        sl = slice(r0, min(M, r0 + rows))
        ref = reference_f64(x2[sl], weight, eps, g2[sl] if g2 is not None else None)
        rep.merge(check.compare(rep.name, out2[sl], ref, atol=atol, rtol=rtol, row_offset=r0))
        del ref
    return rep.ok, rep.message()


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


def compile_checked(fn: Callable, sample_args: Sequence, backend_name: Optional[str] = None,
                    dynamic_rows: bool = False, reset: bool = True) -> Callable:
    """``torch.compile(fn, dynamic=False)`` for the shapes of ``sample_args``, checked.

    With ``reset`` (the default) dynamo is reset first (one compile per shape; no earlier
    shape's cache entry counts against the recompile limit, which is raised anyway).
    ``dynamic_rows``: dimension 0 (M, the rows) of the first sample argument is marked dynamic
    (``torch._dynamo.mark_dynamic``), so the one compiled graph serves every M >= 2 with the
    same trailing dimensions and dtypes; the sample's M must be >= 2 (dynamo specialises 0 and 1).
    Calls once to compile, then once more.  Passes when the first call compiled exactly one
    graph with no graph break and the second call compiled nothing new (the cached graph ran).
    ``backend_name`` defaults to inductor.

    Raises:
        CompileFellBack: with the dynamo counters, when any of that fails; a fallen-back
            baseline must never be reported as "compile".
        ValueError: ``dynamic_rows`` with a sample of fewer than 2 rows.
    """
    import torch
    from torch._dynamo.utils import counters

    _raise_limits(torch)
    torch._dynamo.config.suppress_errors = False  # a failed compile must raise, not run eager
    if reset:
        torch._dynamo.reset()
    if dynamic_rows:
        if sample_args[0].shape[0] < 2:
            raise ValueError(f"dynamic_rows needs a sample with M >= 2 rows, got shape {tuple(sample_args[0].shape)}")
        torch._dynamo.mark_dynamic(sample_args[0], 0)
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


def _own_code(fn: Callable, tag: str) -> Callable:
    """A copy of the plain function ``fn`` with its own code object (named ``<name>_<tag>``).

    Dynamo keeps its compiled graphs on the code object, so compiles of one function for
    several (op, N, dtype) would pile up in one cache, every call walking all their guards
    (and a dynamo reset for one would drop them all).  Its own code object per compile keeps
    one entry per cache, and lets the bench skip the reset."""
    import types

    name = f"{fn.__name__}_{tag}"
    return types.FunctionType(fn.__code__.replace(co_name=name), fn.__globals__, name,
                              fn.__defaults__, fn.__closure__)


def _rmsnorm_expr(x, w, eps):
    """The deck's eager module's forward (:class:`gpu_viz.rmsnorm.eager.EagerRMSNorm`) with the
    weight as an argument: the same ops in the same order (fp32 mean square, rsqrt, x * r,
    weight * that), so torch.compile of it is the compile of the deck's module."""
    import torch

    v = x.float().pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(v + eps))


def _gate_expr(x, gate, w, eps):
    """:func:`gpu_viz.rmsnorm.eager.eager_rmsnorm_gate` as a function of its tensors."""
    from .eager import eager_rmsnorm_gate

    return eager_rmsnorm_gate(x, gate, w, eps)


#: Compiled baselines shared by the shapes of one (op, N, dtype, eps, backend) group: see
#: :func:`shared_compile_groups`.  Filled by :func:`compiled_baseline`; cleared by
#: :func:`full_record` at its start and end.
_SHARED_COMPILES: Dict[Tuple, Callable] = {}


def compiled_baseline(op: str, sample: Dict, weight, eps: float = EPS, compile_backend=None,
                      shared: bool = False) -> Callable:
    """torch.compile of ``op``'s eager baseline, checked (:func:`compile_checked`): a callable
    ``f(inputs) -> y``.

    ``shared=False``: compiled for ``sample``'s shape alone (the (M, N) of ``sample["x"]``),
    as every compile was before.  ``shared=True``: one compile per (op, N, dtype, eps,
    backend) with M dynamic, reused by every later call with the same key and M >= 2; each
    later shape's first call must compile nothing (else CompileFellBack: it was not the
    shared graph that ran).  Either way the function compiled has its own code object
    (:func:`_own_code`) and dynamo is not reset, so other compiled baselines stay cached.

    Raises:
        CompileFellBack: the compile fell back, or a shared graph recompiled for a new shape.
        ValueError: ``shared`` with M < 2.
    """
    from torch._dynamo.utils import counters

    x = sample["x"]
    M, N = x.shape
    dt = dtype_name(x.dtype)
    gate = op == RMSNORM_GATE
    args = (x, sample["gate"], weight, eps) if gate else (x, weight, eps)

    def call(c):
        return (lambda inp: c(inp["x"], inp["gate"], weight, eps)) if gate else (lambda inp: c(inp["x"], weight, eps))

    expr = _gate_expr if gate else _rmsnorm_expr
    if not shared:
        return call(compile_checked(_own_code(expr, f"{N}_{dt}_M{M}"), args, compile_backend, reset=False))
    key = (op, N, dt, float(eps), compile_backend)
    c = _SHARED_COMPILES.get(key)
    if c is None:
        c = compile_checked(_own_code(expr, f"{N}_{dt}_dynM"), args, compile_backend, dynamic_rows=True, reset=False)
        _SHARED_COMPILES[key] = c
        return call(c)
    counters.clear()
    c(*args)
    again = _counter_totals(counters)
    if again["frames_total"]:
        raise CompileFellBack(f"torch.compile's shared graph for {op} N={N} {dt} compiled again at M={M} "
                              f"(its dynamic-M guards failed) [counters {again}]")
    return call(c)


#: False (the record's choice): torch.compile compiles each shape for itself (``dynamic=False``),
#: the strongest compiled baseline and the one the earlier records measured; True shares one
#: dynamic-M graph per (op, N, dtype) (:func:`shared_compile_groups`), ~36 s less device time.
SHARE_COMPILES = False


def shared_compile_groups(steps: Iterable[Dict]) -> frozenset:
    """The (op, N, dtype) groups whose ``compile`` steps share one dynamic-M compile: those with
    two or more distinct M >= 2 among ``steps`` (dicts with op, M, N, dtype, provider, as
    :func:`plan_steps` gives), where :data:`SHARE_COMPILES` is on (else none).  Every other
    compile step stays one compile for its own shape."""
    if not SHARE_COMPILES:
        return frozenset()
    ms: Dict[Tuple, set] = {}
    for s in steps:
        if s["provider"] == "compile" and s["M"] >= 2:
            ms.setdefault((s["op"], s["N"], s["dtype"]), set()).add(s["M"])
    return frozenset(k for k, v in ms.items() if len(v) >= 2)


def _liger_rms_norm():
    try:
        from liger_kernel.transformers.functional import liger_rms_norm
    except Exception as exc:  # ImportError, or a Triton too old for this GPU
        raise ProviderUnavailable(f"liger_kernel is not importable ({type(exc).__name__}: {exc})") from None
    return liger_rms_norm


def _deck_module(weight, eps: float):
    """The deck's eager module (:class:`gpu_viz.rmsnorm.eager.EagerRMSNorm`) holding ``weight``."""
    from . import eager  # torch-importing modules: loaded when used
    m = eager.EagerRMSNorm.from_weight(weight.detach(), eps)
    m.weight.requires_grad_(False)
    return m.eval()  # from_weight put it on weight's device


def setup_rmsnorm(provider: str, weight, eps: float = EPS, sample=None, compile_backend=None,
                  shared_compile: bool = False) -> Callable:
    """A callable ``f(inputs) -> y`` for rmsnorm by ``provider``; ``inputs`` is ``{"x": (M, N)}``.

    ``weight`` (N,) is held by the callable; ``sample`` (an inputs dict) is needed by
    ``"compile"`` (:func:`compiled_baseline`: the deck module's forward compiled for that shape,
    or with ``shared_compile`` one dynamic-M compile per (N, dtype), checked either way).

    Raises:
        ValueError: unknown provider (naming the known ones).
        ProviderUnavailable: the provider's code is not importable here.
        CompileFellBack: ``"compile"`` did not really compile.
    """
    from . import deck, fused  # torch-importing modules: loaded when used
    check_providers(RMSNORM, (provider,))
    import torch

    if provider.startswith("fused"):
        fused.ensure_launcher()  # time the C++ launcher, not the build's stand-in

    if provider == "eager":
        m = _deck_module(weight, eps)
        return lambda inp: m(inp["x"])
    if provider == "native":
        N = weight.shape[0]
        return lambda inp: torch.nn.functional.rms_norm(inp["x"], (N,), weight, eps)
    if provider == "compile":
        if sample is None:
            raise ValueError("setup_rmsnorm('compile') needs sample inputs to compile for their shape")
        return compiled_baseline(RMSNORM, sample, weight, eps, compile_backend, shared=shared_compile)
    if provider == "deck4phase":
        return lambda inp: deck.four_phase(inp["x"], weight, eps, block=deck.DECK_BLOCK)
    if provider == "fused":
        return lambda inp: fused.rmsnorm(inp["x"], weight, eps)
    if provider in ("native_grad", "fused_grad"):
        wg = weight.detach().clone().requires_grad_(True)
        if provider == "native_grad":
            N = weight.shape[0]
            return lambda inp: torch.nn.functional.rms_norm(inp["x"], (N,), wg, eps)
        return lambda inp: fused.rmsnorm(inp["x"], wg, eps)
    if provider in ("fused_cupy", "fused_driver"):
        which = provider.split("_")[1]

        def via(inp):
            saved, fused.LAUNCHER = fused.LAUNCHER, which
            try:
                return fused.rmsnorm(inp["x"], weight, eps)
            finally:
                fused.LAUNCHER = saved
        return via
    if provider == "fused_unplanned":
        return lambda inp: fused._launch(fused._validate(inp["x"], weight, None, eps))
    # liger
    liger = _liger_rms_norm()
    return lambda inp: liger(inp["x"], weight, eps)


def setup_rmsnorm_gate(provider: str, weight, eps: float = EPS, sample=None, compile_backend=None,
                       shared_compile: bool = False) -> Callable:
    """A callable ``f(inputs) -> y`` for rmsnorm_gate; ``inputs`` is ``{"x": (M, N), "gate": (M, N)}``.

    Same contract and errors as :func:`setup_rmsnorm`.
    """
    from . import eager, fused  # torch-importing modules: loaded when used
    check_providers(RMSNORM_GATE, (provider,))
    if provider.startswith("fused"):
        fused.ensure_launcher()
    if provider == "eager":
        return lambda inp: eager.eager_rmsnorm_gate(inp["x"], inp["gate"], weight, eps)
    if provider == "compile":
        if sample is None:
            raise ValueError("setup_rmsnorm_gate('compile') needs sample inputs to compile for their shape")
        return compiled_baseline(RMSNORM_GATE, sample, weight, eps, compile_backend, shared=shared_compile)
    if provider == "fused_grad":
        wg = weight.detach().clone().requires_grad_(True)
        return lambda inp: fused.rmsnorm_gate(inp["x"], inp["gate"], wg, eps)
    return lambda inp: fused.rmsnorm_gate(inp["x"], inp["gate"], weight, eps)


SETUP = {RMSNORM: setup_rmsnorm, RMSNORM_GATE: setup_rmsnorm_gate}


def setup(op: str, provider: str, weight, eps: float = EPS, sample=None, compile_backend=None,
          shared_compile: bool = False) -> Callable:
    """Dispatch to ``setup_<op>`` (see :func:`setup_rmsnorm`)."""
    kw = {"shared_compile": True} if shared_compile else {}  # stand-in setups need not take it
    return SETUP[_check_op(op)](provider, weight, eps, sample=sample, compile_backend=compile_backend, **kw)


# -- inputs ------------------------------------------------------------------------------------

def make_inputs(op: str, M: int, N: int, dtype, device, generator=None, count: int = 1) -> List[Dict]:
    """``count`` independent input sets ``{"x", "gate"?}`` of fresh random (never zero) data,
    plus the shared weight as element ``[0]["weight"]``: x ~ N(0, 1), gate ~ N(0, 2^2) (both
    tails of SiLU), weight ~ 1 + N(0, 0.5^2)."""
    import torch

    dt = torch_dtype(dtype_name(dtype))
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
    """How rows get their times; :func:`run` uses the GPU ones (gpu_viz.measure.timing)."""

    kernel: Callable  # (fn(i), reps, calls_per_graph) -> Timing
    call: Callable  # (fn(i), reps) -> Timing
    sync: Callable[[], None]
    #: ({provider: fn(i)}, reps) -> {provider: Timing}, the providers' calls in interleaved
    #: rounds; None: ``call`` for one provider after another
    calls: Optional[Callable] = None


def _gpu_timers() -> _Timers:
    import torch

    return _Timers(
        kernel=lambda fn, reps, k: bench.time_graph(fn, reps=reps, warmup=3, calls_per_graph=k),
        call=lambda fn, reps: bench.time_calls(fn, reps=reps, warmup=10),
        sync=torch.cuda.synchronize,
        calls=lambda fns, reps: bench.time_calls_interleaved(fns, reps=reps, rounds=CALL_ROUNDS, warmup=10))


def _calls_per_graph(buffers: int, pilot_us: float, target_us: float = 1000.0, most: int = 64) -> int:
    """Calls per captured graph: whole passes over the ``buffers`` (>= 1) rotated input sets
    (every set read equally often; with two or more sets, never one set twice in a row across
    replays), enough that one replay lasts ~``target_us`` of kernel time so the replay's own
    launch (a few µs) is amortised -- but at most ``most`` calls, rounded up to a whole pass
    (short calls: 64 x 2.3 µs = ~150 µs per replay).  ``pilot_us``: one call's kernel time (µs)
    from a short graph pilot.

    Too few calls per replay add the replay's launch to every call: the pilot is a graph's,
    not an as-called time, for that reason (benchmarks/NOTES.md).

    Raises:
        ValueError: ``buffers`` < 1, ``pilot_us`` not a finite number >= 0.
    """
    if buffers < 1:
        raise ValueError(f"buffers must be >= 1 (input sets to rotate over), got {buffers}")
    if not (math.isfinite(pilot_us) and pilot_us >= 0):
        raise ValueError(f"pilot_us must be a finite time >= 0 µs, got {pilot_us}")
    want = max(1, math.ceil(target_us / max(pilot_us, 0.5)))
    calls = max(buffers, min(want, most))
    return int(-(-calls // buffers) * buffers)


def _run(op: str, shapes, dtypes, providers, timings, reps: int, eps: float, device, timers: _Timers,
         l2_bytes: int, verbose: bool, compile_backend=None, seed: Optional[int] = None,
         shared_compiles: frozenset = frozenset()) -> Rows:
    import torch

    out = Rows()
    gen = torch.Generator(device=device)
    seed = check.new_seed() if seed is None else seed
    gen.manual_seed(seed)
    for (M, N) in shapes:
        for dt in dtypes:
            nbytes = fewest_bytes(op, M, N, dt)
            buffers = bench.rotation_count(nbytes, l2_bytes)
            sets = make_inputs(op, M, N, dt, device, generator=gen, count=buffers)
            weight = sets[0]["weight"]
            key = {"op": op, "M": M, "N": N, "dtype": dt}

            def release(collect: bool = True):
                # the poisoned blocks, the last output and any garbage (e.g. the last timing's
                # graph) go back to the driver before the next timing, as in the recorded runs
                if str(device) != "cpu":
                    if collect:
                        gc.collect()
                    torch.cuda.empty_cache()

            def checked(fn, collect: bool = True):
                """Poison, run, compare with float64 a block of rows at a time
                (:func:`check_rows`: no multi-GB float64 temporaries, which slowed every later
                timing in the process ~9 % on the H200), free the output (``collect``: and
                run the garbage collector, ~0.1-0.2 s with torch.compile's objects alive)."""
                try:
                    _poison_pool(torch, M, N, device)
                    y = fn(sets[0])
                    timers.sync()
                    return check_rows(op, y, sets[0]["x"], weight, sets[0].get("gate"), eps, dt, seed=seed)
                finally:
                    y = None
                    release(collect)

            ok_fns = []
            # 1. correctness first: every provider checked before anything is timed
            for p in providers:
                try:
                    share = p == "compile" and M >= 2 and (op, N, dt) in shared_compiles
                    fn = setup(op, p, weight, eps, sample=sets[0], compile_backend=compile_backend,
                               shared_compile=share)
                    # no garbage collection between these checks: nothing is timed until all
                    # are done, and one collection below leaves the same state for the first timing
                    ok, detail = checked(fn, collect=False)
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
            release()
            # 2. time the ones that were right, rotating over `buffers` input sets: kernel-only
            # times one provider after another; per-call times of all of them in interleaved
            # rounds (the host's speed drifts between windows of calls: each provider sees the same)
            def caller(fn):
                return lambda i: fn(sets[i % buffers])

            timed: Dict[str, List[Dict]] = {}
            failed: Dict[str, str] = {}
            for p, fn in ok_fns:
                if bench.KERNEL not in timings:
                    continue
                t0 = time.perf_counter()
                try:
                    pilot = timers.kernel(caller(fn), 3, buffers)  # one pass over the sets
                    k = _calls_per_graph(buffers, pilot.median_us)
                    t = timers.kernel(caller(fn), reps, k)
                    timed.setdefault(p, []).append(
                        make_row(op, p, M, N, dt, t, buffers=buffers, calls_per_graph=k))
                except Exception as exc:  # e.g. a launch CUDA-graph capture refuses: say so, go on
                    failed[p] = f"timing failed: {type(exc).__name__}: {exc}"
                    _sync_quietly(timers)
                if verbose:
                    print(f"  {op:12s} {p:10s} {M:>6d}x{N:<6d} {dt:8s} "
                          f"{time.perf_counter() - t0:5.1f} s ({buffers} buffer sets)")
            if bench.CALL in timings:
                live = [(p, fn) for p, fn in ok_fns if p not in failed]
                together, rounds = _time_calls_together(timers, live, caller, reps, failed)
                for p, t in together.items():
                    extra = {"buffers": buffers}
                    if rounds:  # timed in the same interleaved rounds as the shape's other providers
                        extra["rounds"] = rounds
                    timed.setdefault(p, []).append(make_row(op, p, M, N, dt, t, **extra))
            for p, fn in ok_fns:
                if p in failed:
                    out.skipped.append(dict(key, impl=p, reason=failed[p]))
                    if verbose:
                        print(f"  skip {op} {p} {M}x{N} {dt}: {failed[p]}")
                    continue
                out.extend(timed.get(p, []))
                if not post_check(p, op, M, N, dt):
                    release()  # a torch baseline at a wide shape: checked in full before timing
                    ok = True
                else:
                    # every launch of ours checked: the output after timing is still right
                    try:
                        ok, detail = checked(fn)
                    except Exception as exc:
                        ok, detail = False, f"raised {type(exc).__name__}: {exc}"
                if not ok:
                    out[:] = [r for r in out if not (r["impl"] == p and r["M"] == M and r["N"] == N
                                                     and r["dtype"] == dt)]
                    out.skipped.append(dict(key, impl=p, reason="wrong after timing: " + detail))
            sets = ok_fns = None  # this shape's buffers go before the next shape's are made
            if str(device) != "cpu":
                torch.cuda.empty_cache()
    add_speedups(out)
    return out


def _sync_quietly(timers: _Timers) -> None:
    try:
        timers.sync()
    except Exception:
        pass


def _time_calls_together(timers: _Timers, live, caller, reps: int, failed: Dict[str, str]) -> Tuple[Dict, int]:
    """Per-call :class:`Timing` of every ``(provider, fn)`` in ``live``, and the rounds they shared
    (0: one provider after another): in interleaved rounds (``timers.calls``, CALL_ROUNDS) where
    the timers have them and there are two or more providers.  If the rounds raise, the provider
    that raises on a call of its own is named in ``failed`` and the rounds run again without it;
    if none does (a failure only some calls hit), each provider is timed alone, and only one
    whose own timing raises is named in ``failed``."""
    while len(live) > 1 and timers.calls is not None:
        fns = {p: caller(fn) for p, fn in live}
        try:
            return timers.calls(fns, reps), CALL_ROUNDS
        except Exception:
            _sync_quietly(timers)
            bad = None
            for p, f in fns.items():  # who raises on a call of its own
                try:
                    f(0)
                    timers.sync()
                except Exception as exc2:
                    bad = p
                    failed[p] = f"timing failed: {type(exc2).__name__}: {exc2}"
                    _sync_quietly(timers)
                    break
            if bad is None:
                break  # a failure only some calls hit: each provider alone, below
            live = [(p, fn) for p, fn in live if p != bad]
    out = {}
    for p, fn in live:
        try:
            out[p] = timers.call(caller(fn), reps)
        except Exception as exc:
            failed[p] = f"timing failed: {type(exc).__name__}: {exc}"
            _sync_quietly(timers)
    return out, 0


def post_check(provider: str, op: str, M: int, N: int, dtype) -> bool:
    """Whether :func:`run` checks ``provider``'s output again after timing it: always for ours
    (``fused*``, ``deck4phase``) and at every shape whose fewest bytes fit
    :data:`EST_WIDE_BYTES`; not for the torch and Liger baselines at the 1-2 GiB wide shapes,
    whose full float64 check before timing stands (a second one there costs ~1 s each, ~60 s
    of the bench's 600 s budget)."""
    ours = provider.startswith("fused") or provider == "deck4phase"
    return ours or fewest_bytes(op, M, N, dtype) <= EST_WIDE_BYTES


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
        verbose: bool = False, seed: Optional[int] = None, shared_compiles: frozenset = frozenset()) -> Rows:
    """Check, then time, ``op`` for every (shape, dtype) and provider, live on this GPU.

    For each (M, N) in ``shapes`` and dtype in ``dtypes`` ("float16", "bfloat16", "float32"):
    fresh random inputs; every provider's output is compared with a float64 reference
    (:mod:`gpu_viz.rmsnorm.tolerances`); a provider that is wrong, unavailable or whose torch.compile fell
    back is NOT timed and goes to ``.skipped`` with the reason.  The rest are timed with
    ``reps`` (>= 1) samples per timing ("kernel": CUDA-graph replay of whole passes over the
    input sets, ~1 ms of kernel time per replay or 64 calls; "call": from Python),
    rotating through enough input sets that their traffic exceeds 3x the L2
    (:func:`gpu_viz.measure.timing.rotation_count`), and checked again afterwards.
    ``shared_compiles``: (op, N, dtype) groups whose ``compile`` provider reuses one dynamic-M
    compile (:func:`compiled_baseline`; :func:`full_record` passes
    :func:`shared_compile_groups` of its plan); elsewhere torch.compile compiles per shape.

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
    backend.require_gpu(f"gpu_viz.rmsnorm.bench.run({op!r})")
    from .. import device as _device

    providers = _available(op, providers, drop_optional=False) if providers is not None else _available(op, None)
    return _run(op, shapes, dtypes, providers, timings, reps, eps, "cuda", _gpu_timers(),
                _device.current().l2_bytes, verbose, seed=seed, shared_compiles=frozenset(shared_compiles))


def run_rmsnorm(shapes, dtypes=("float16",), providers=("eager", "native", "compile", "deck4phase", "fused"),
                timing=None, timings=(bench.KERNEL, bench.CALL), reps: int = DEFAULT_REPS, eps: float = EPS,
                verbose: bool = False) -> Rows:
    """:func:`run` for op "rmsnorm" (notebook 08's live speedup).  ``timing`` (one of "kernel",
    "call") overrides ``timings``.  Same returns and errors as :func:`run`."""
    if timing is not None:
        timings = (timing,)
    return run(RMSNORM, shapes, dtypes, providers, timings=timings, reps=reps, eps=eps, verbose=verbose)


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


def call_plan() -> List[Tuple[str, List[Tuple[int, int]], Tuple[str, ...], Tuple[str, ...]]]:
    """The per-call rows (``"timing": "call"`` only): :data:`CALL_SHAPES` in fp16 and bf16,
    :data:`CALL_PROVIDERS`."""
    return [(op, list(CALL_SHAPES), ("float16", "bfloat16"), CALL_PROVIDERS[op]) for op in (RMSNORM, RMSNORM_GATE)]


def wide_plan() -> List[Tuple[str, List[Tuple[int, int]], Tuple[str, ...], Tuple[str, ...]]]:
    """The wide rows (both timings, :data:`WIDE_REPS` samples): :data:`WIDE_SHAPES` in fp16, bf16
    and fp32, every baseline of :data:`WIDE_PROVIDERS` at every (op, shape, dtype) -- eager,
    F.rms_norm (rmsnorm only: the gate has no native op), torch.compile (one compile per
    shape: no two wide shapes share N), and Liger where it runs."""
    return [(op, list(WIDE_SHAPES), DTYPES, WIDE_PROVIDERS[op]) for op in OPS]


#: Liger's RMSNorm launches one Triton block per row and refuses rows longer than this
#: ("exceeds the recommended Triton blocksize = 65536", the record of 2026-12-01).
LIGER_MAX_N = 65536


def record_batches(quick: bool = False) -> List[Tuple]:
    """What :func:`full_record` runs, in order: ``(op, shapes, dtypes, providers, timings, reps)``
    per batch -- :func:`record_plan` (both timings), :func:`call_plan` ("call" only), then
    (not ``quick``) :func:`wide_plan` (both timings, :data:`WIDE_REPS`).  ``reps`` None means
    the run's ``--reps``."""
    both = (bench.KERNEL, bench.CALL)
    out = [(op, sh, d, p, both, None) for op, sh, d, p in record_plan(quick)]
    # the per-call batch leaves out what the record plan already timed per call (128, 512 and
    # 1024 x 4096 for native and fused): one row per key, those pairs timed in one batch
    timed = {(op, M, N, dtype_name(dt), p) for op, sh, d, ps in record_plan(quick)
             for (M, N) in sh for dt in d for p in ps}
    for op, sh, d, ps in call_plan():
        by_providers: Dict[Tuple[str, ...], List[Tuple[int, int]]] = {}
        for (M, N) in sh:
            left = tuple(p for p in ps if not all((op, M, N, dtype_name(dt), p) in timed for dt in d))
            if left:
                by_providers.setdefault(left, []).append((M, N))
        out += [(op, shapes, d, left, (bench.CALL,), None) for left, shapes in by_providers.items()]
    if not quick:
        out += [(op, sh, d, p, both, WIDE_REPS) for op, sh, d, p in wide_plan()]
    return out


def plan_steps(quick: bool = False, reps: int = DEFAULT_REPS, batches=None) -> List[Dict]:
    """Every (op, shape, dtype, provider) step :func:`full_record` takes, in order, as dicts:
    ``op, M, N, dtype, provider, timings, reps, compile`` (None, ``"per shape"``,
    ``"dynamic M: compiles"`` or ``"dynamic M: reuses"``, see :func:`shared_compile_groups`),
    ``note`` (e.g. Liger's refusal of N > :data:`LIGER_MAX_N`, expected) and ``est_s`` (the
    estimated seconds, :func:`estimate_step`).  ``batches`` defaults to :func:`record_batches`.
    No GPU needed (``gpu-viz bench --dry-run`` prints it)."""
    batches = record_batches(quick) if batches is None else batches
    steps = []
    for op, shapes, dtypes, providers, timings, r in batches:
        for (M, N) in shapes:
            for dt in dtypes:
                for p in providers:
                    steps.append({"op": op, "M": M, "N": N, "dtype": dtype_name(dt), "provider": p,
                                  "timings": tuple(timings), "reps": r or reps, "compile": None, "note": ""})
    groups = shared_compile_groups(steps)
    seen = set()
    for st in steps:
        key = (st["op"], st["N"], st["dtype"])
        if st["provider"] == "compile":
            if st["M"] >= 2 and key in groups:
                st["compile"] = "dynamic M: reuses" if key in seen else "dynamic M: compiles"
                seen.add(key)
            else:
                st["compile"] = "per shape"
        if st["provider"] == "liger" and st["N"] > LIGER_MAX_N:
            st["note"] = f"Liger refuses N > {LIGER_MAX_N} (expected: shown as skipped, not counted)"
        st["est_s"] = estimate_step(st)
    return steps


#: The time model of :func:`estimate_step`, seconds (an estimate, calibrated on the two full
#: H200 records of 2026-12-01: 212.8 s for :func:`record_plan` alone, 394.2 s with the per-call
#: and the old wide rows; :func:`estimate` reproduces both within 10 %, see the tests).
#: The two records fix ``compile`` and ``wide_check`` (least squares on the two totals, the rest
#: set by hand): 1.8 s a compile -- less than the 5-10 s quoted for a cold compile, which
#: the 212.8 s of 39 compiles cannot hold -- and 1.2 s a wide check.  With 5 s a compile the
#: full plan estimates 530 s, with 7 s 615 s: watch ``estimate_s`` against ``wall_s``.
#: ``compile``: one torch.compile (dynamo + inductor + Triton, small graphs); ``step``: a
#: provider at a shape that fits in a few hundred MB (setup, two float64 checks, timing);
#: ``wide_inputs``: making the input sets of a 1-2 GiB shape; ``wide_check``: one float64
#: check of a 1-2 GiB output (128-256 blocks of rows, the first use of its kernels);
#: ``gc``: one ``gc.collect()`` with torch.compile's objects alive (0.21 s on a 2-CPU VM
#: with 450k objects; faster on the H200 host); ``setup``: copy bandwidth, launch floor,
#: kernel report; ``invariance``: :func:`batch_invariance` (54 cases).
EST_S = {"compile": 1.8, "step": 0.07, "wide_inputs": 0.5, "wide_check": 1.2, "gc": 0.06,
         "setup": 12.0, "invariance": 15.0}
#: Copy bandwidth the estimate assumes for timing wide rows (the H200's, GB/s) and the share of
#: it each provider reaches: the single-kernel ones ~85 %, eager's several passes over fp32
#: temporaries counted by their bytes (:func:`gpu_viz.rmsnorm.eager.eager_traffic`; the gate's
#: 13 kernels ~13x the fewest bytes in 16-bit, ~5.5x in fp32).
EST_COPY_GBPS = 4250.0
#: A shape whose fewest bytes exceed this is timed as "wide" by the estimate.
EST_WIDE_BYTES = 256 << 20


def _est_call_us(op: str, M: int, N: int, dtype: str, provider: str) -> float:
    """Estimated kernel time of one call (µs) for the time model: bytes over ~85 % of copy."""
    nbytes = fewest_bytes(op, M, N, dtype)
    if provider == "eager":
        if op == RMSNORM:
            from .eager import eager_traffic
            nbytes = sum(r + w for _, r, w in eager_traffic(M, N, dtype))
        else:
            nbytes *= 5.5 if dtype == "float32" else 13.0
    return nbytes / (0.85 * EST_COPY_GBPS * 1e3)


def estimate_step(step: Dict, gc_per_check: bool = False) -> float:
    """Estimated seconds of one :func:`plan_steps` step on an H200 (:data:`EST_S`; an estimate,
    not a measurement).  A compile that reuses a shared graph costs nothing; Liger at a row it
    refuses costs one failed call.  ``gc_per_check``: count the bench as the older records
    ran it (for the calibration against them): a ``gc.collect()`` after every
    check and every output checked again after timing."""
    op, M, N, dt, p = step["op"], step["M"], step["N"], step["dtype"], step["provider"]
    wide = fewest_bytes(op, M, N, dt) > EST_WIDE_BYTES
    if step.get("note") and p == "liger":
        return EST_S["step"]
    t = EST_S["compile"] if step.get("compile") in ("per shape", "dynamic M: compiles") else 0.0
    t += EST_S["gc"] * (2 if gc_per_check else 1)
    if wide:
        t += EST_S["wide_check"] * (2 if gc_per_check or post_check(p, op, M, N, dt) else 1)
        us = _est_call_us(op, M, N, dt, p)
        calls = 0
        for timing in step["timings"]:
            # kernel: a 3-replay pilot then reps replays of ~1 ms (at least one call); call: reps calls
            calls += (3 + step["reps"] * max(1, math.ceil(1000.0 / us))) if timing == bench.KERNEL else step["reps"]
        t += calls * us * 1e-6
    else:
        t += EST_S["step"]
    return t


def estimate(steps: Sequence[Dict], invariance: bool = True, gc_per_check: bool = False) -> Dict:
    """The estimated wall time of a :func:`full_record` run of ``steps`` (:func:`plan_steps`), s:
    ``{"total_s", "compiles", "steps", "by_part": {"setup", "invariance", "record", "call",
    "wide"}}`` -- an estimate from :data:`EST_S`, to be replaced by the run's ``wall_s``.
    Per (op, shape, dtype) of a wide shape it adds the inputs' making and (the checks run
    back to back) one collection; ``gc_per_check`` as in :func:`estimate_step`."""
    by = {"setup": EST_S["setup"], "invariance": EST_S["invariance"] if invariance else 0.0,
          "record": 0.0, "call": 0.0, "wide": 0.0}
    seen = set()
    for st in steps:
        wide = fewest_bytes(st["op"], st["M"], st["N"], st["dtype"]) > EST_WIDE_BYTES
        part = "wide" if wide else ("call" if tuple(st["timings"]) == (bench.CALL,) else "record")
        key = (st["op"], st["M"], st["N"], st["dtype"], st["timings"])
        if key not in seen:
            seen.add(key)
            if wide:
                by["wide"] += EST_S["wide_inputs"]
            if not gc_per_check:
                by[part] += EST_S["gc"]  # the one collection after the checks
        by[part] += estimate_step(st, gc_per_check)
    compiles = sum(st.get("compile") in ("per shape", "dynamic M: compiles") for st in steps)
    return {"total_s": round(sum(by.values()), 1), "compiles": compiles, "steps": len(steps),
            "by_part": {k: round(v, 1) for k, v in by.items()}}


def plan_text(quick: bool = False, reps: int = DEFAULT_REPS) -> str:
    """``gpu-viz bench --dry-run``: every step of :func:`plan_steps` (op, M x N, dtype,
    provider, timings, reps, compile, note, estimated s) and the estimated total (marked as
    an estimate).  No GPU needed."""
    steps = plan_steps(quick, reps)
    est = estimate(steps)
    head = (f"The steps `gpu-viz bench{' --quick' if quick else ''}` takes on a GPU; nothing is measured here. "
            f"{est['steps']} steps, estimated {est['total_s']:.0f} s on an H200 (an estimate, not a measurement).")
    lines = [head, "", f"{'op':12s} {'M x N':>13s} {'dtype':8s} {'provider':15s} {'timings':11s} {'reps':>4s} "
             f"{'est s':>6s}  compile / note"]
    for st in steps:
        extra = "; ".join(x for x in (st["compile"] and f"torch.compile {st['compile']}", st["note"]) if x)
        lines.append(f"{st['op']:12s} {str(st['M']) + 'x' + str(st['N']):>13s} {st['dtype']:8s} "
                     f"{st['provider']:15s} {'+'.join(st['timings']):11s} {st['reps']:>4d} {st['est_s']:6.2f}  {extra}")
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in est["by_part"].items())
    lines += ["", f"{est['steps']} steps, {est['compiles']} torch.compile compiles; estimated {est['total_s']:.0f} s "
              f"on an H200 ({parts}) -- an estimate from bench.EST_S, not a measurement"]
    return "\n".join(lines)


def batch_invariance(Ns=INVARIANCE_N, Ms=INVARIANCE_M, dtypes=DTYPES, seed: Optional[int] = None) -> Dict:
    """The record's ``"batch_invariant"``: for each op (rmsnorm, rmsnorm_gate, rmsnorm_add),
    dtype and N, the rows of ``op(x[:m])`` against the same rows of ``op(x[:max(Ms)])`` bit for
    bit at every m, after ``op(x)``'s first rows passed the float64 check.

    Returns:
        ``{"ok": bool, "checked": [{"op", "dtype", "N", "M": [...], "ok", "detail"?}]}``.
    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    import torch

    from . import fused
    from .reference import rmsnorm_add as ref_add

    backend.require_gpu("the batch-invariance check")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(check.new_seed() if seed is None else seed)
    checked = []
    Mx = max(Ms)
    for op in ("rmsnorm", "rmsnorm_gate", "rmsnorm_add"):
        for dt in dtypes:
            tdt = torch_dtype(dt)
            for N in Ns:
                x = torch.randn(Mx, N, device="cuda", generator=gen).to(tdt)
                x2 = None if op == "rmsnorm" else (2 * torch.randn(Mx, N, device="cuda", generator=gen)).to(tdt)
                w = (1 + 0.5 * torch.randn(N, device="cuda", generator=gen)).to(tdt)

                def f(m):
                    if op == "rmsnorm":
                        return fused.rmsnorm(x[:m], w, EPS)
                    if op == "rmsnorm_gate":
                        return fused.rmsnorm_gate(x[:m], x2[:m], w, EPS)
                    return fused.rmsnorm_add(x[:m], x2[:m], w, EPS)[0]

                full = f(Mx)
                if op == "rmsnorm_add":
                    ref = ref_add(x[:64], x2[:64], w, EPS)[0]
                    atol, rtol = tolerance(dt)
                    ok_ref = check.compare(op, full[:64], ref, atol=atol, rtol=rtol).ok
                else:
                    ok_ref = check_rows(op, full[:64], x[:64], w, x2[:64] if x2 is not None else None, EPS, dt)[0]
                bad = [m for m in Ms[:-1] if not torch.equal(f(m).view(torch.uint8), full[:m].view(torch.uint8))]
                torch.cuda.synchronize()
                row = {"op": op, "dtype": dt, "N": N, "M": list(Ms), "ok": bool(ok_ref and not bad)}
                if not ok_ref:
                    row["detail"] = "op(x) failed the float64 check"
                elif bad:
                    row["detail"] = f"rows differ at M={bad}"
                checked.append(row)
                x = x2 = w = full = None
                torch.cuda.empty_cache()
    return {"ok": all(r["ok"] for r in checked), "checked": checked}


def kernel_report_any(arch: Optional[str] = None) -> Tuple[List[Dict], str]:
    """``fused.kernel_report()`` rows for one ``arch`` (default: this device's, or the deck's L4 in
    CPU mode) and where they came from: in CPU mode the committed ptxas report
    (:mod:`gpu_viz.rmsnorm.ptxas`) while it matches the kernels' code; else ptxas (with spills)
    where nvcc exists, else the live device's attributes (registers, no spill count).

    Raises:
        RuntimeError: neither source worked (both reasons).
    """
    from . import fused  # torch-importing modules: loaded when used
    from .. import device as _device

    arch = arch or _device.current().sm
    if not backend.has_gpu():   # CPU mode: the committed report while it matches the kernels (no compile)
        from . import ptxas

        rows, where = ptxas.fused_rows(arch)
        if rows:
            return rows, where
        print(f"{where}; compiling the fused kernels for {arch} with the local nvcc instead (a minute or two) ...",
              flush=True)
    try:
        return fused.kernel_report(source="ptxas", arches=[arch]), f"ptxas -v for {arch} (nvcc on this machine)"
    except Exception as exc:
        first = f"{type(exc).__name__}: {exc}"
    if backend.has_gpu():
        rows = [r for r in fused.kernel_report(source="device") if r.get("arch") == arch]
        return rows, f"cudaFuncGetAttributes on {backend.detect().device_name} (no spill count: {first[:120]})"
    raise RuntimeError(f"no kernel report: ptxas failed ({first[:300]}) and there is no GPU")


def kernel_resources(cases: Sequence[Tuple[str, int, int]], dtype="float16", info=None,
                     report: Optional[List[Dict]] = None) -> List[Dict]:
    """For each (op, M, N): the kernel the fused op launches for it on ``info`` (default
    ``device.current()``) -- ``fused.launch_config``'s, or, where ``fused.uses_wide`` sends the row
    to :mod:`gpu_viz.rmsnorm.wide`, its cluster kernel (variant "cluster") --, its registers and
    spills (``report`` rows, default :func:`kernel_report_any` for ``info``'s arch; a cluster
    kernel's from the local nvcc, none without one) and its occupancy from
    :func:`gpu_viz.occupancy.calculate` (a cluster kernel's with its dynamic shared memory; the
    cluster's own placement rules aside).

    Returns one dict per case: op, M, N, variant, kernel, block, rows_per_block (None for a
    cluster: a row spans ``cluster`` blocks), grid, registers, spill_stores_bytes,
    spill_loads_bytes, local_bytes, shared_bytes, blocks_per_sm, occupancy (0..1), limiter.
    """
    from . import fused  # torch-importing modules: loaded when used
    from .. import device as _device, occupancy

    info = info or _device.current()
    if report is None:
        report, _src = kernel_report_any(info.sm)
    by_name = {r["kernel"]: r for r in report if r.get("arch", info.sm) == info.sm}
    out = []
    for op, M, N in cases:
        gate = _check_op(op) == RMSNORM_GATE
        dynamic = 0
        if fused.uses_wide(op, N, dtype, tuple(info.compute_capability)):
            from . import wide

            wcfg = wide.config(N, dtype, tuple(info.compute_capability), gate=gate)
            cfg = {"variant": "cluster", "kernel": wcfg.kernel, "block": wcfg.threads, "rows_per_block": None,
                   "grid": None if wcfg.persistent else wide.launch_grid(wcfg, M)}
            r, dynamic = _wide_usage(wcfg, info.sm), wcfg.smem_bytes
        else:
            cfg = fused.launch_config(M, N, dtype, gate=gate)
            r = by_name.get(cfg["kernel"], {})
        row = {"op": op, "M": M, "N": N, "variant": cfg["variant"], "kernel": cfg["kernel"],
               "block": cfg["block"], "rows_per_block": cfg["rows_per_block"], "grid": cfg["grid"],
               "registers": r.get("registers"), "spill_stores_bytes": r.get("spill_stores_bytes"),
               "spill_loads_bytes": r.get("spill_loads_bytes"), "local_bytes": r.get("local_bytes"),
               "shared_bytes": r.get("shared_bytes")}
        if r.get("registers") is not None:
            occ = occupancy.calculate(info, cfg["block"], occupancy.KernelResources(
                cfg["kernel"], int(r["registers"]), int(r.get("shared_bytes") or 0)), dynamic)
            row.update(blocks_per_sm=occ.blocks_per_sm, occupancy=round(occ.occupancy, 3), limiter=occ.limiter)
        else:
            row.update(blocks_per_sm=None, occupancy=None, limiter="no report for this kernel")
        out.append(row)
    return out


@functools.lru_cache(maxsize=None)
def _wide_usage(cfg, arch: str) -> Dict:
    """ptxas's registers, spills and static shared memory of one cluster kernel for ``arch``
    (the local nvcc, once per configuration); without nvcc, on a GPU of that arch, the loaded
    kernel's registers and memory (no spill count), as :func:`kernel_report_any`; else {}."""
    from . import ptxas, wide
    from .. import device as _device

    if not backend.has_gpu():   # CPU mode: the committed report while it matches the kernels
        known = ptxas.wide_usage(cfg.kernel, arch)
        if known is not None:
            return known
    try:
        (u,) = kernels.nvcc_compile(wide.FILE, arch, cfg.options)
    except FileNotFoundError:
        if not (backend.has_gpu() and _device.current().sm == arch):
            return {}
        k = wide._kernel(cfg, backend.require_cupy("a kernel's attributes").cuda.runtime.getDevice())
        return {"registers": int(k.num_regs), "local_bytes": int(k.local_size_bytes),
                "shared_bytes": int(k.shared_size_bytes)}
    return {"registers": u.registers, "spill_stores_bytes": u.spill_stores_bytes,
            "spill_loads_bytes": u.spill_loads_bytes, "local_bytes": u.stack_frame_bytes, "shared_bytes": u.shared_bytes}


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
                verbose: bool = True, save: bool = True, previous: Optional[Dict] = "newest") -> Dict:
    """Measure the fused ops against every baseline in one run and save it as one record.

    In order: copy bandwidth (:func:`gpu_viz.measure.timing.copy_bandwidth`, 1 GiB), the launch
    floor (:func:`gpu_viz.measure.timing.launch_floor`), a bare copy kernel at :data:`FLOOR_SHAPE`
    fp16 (:func:`gpu_viz.measure.timing.copy_kernel_floor`), batch invariance, then :func:`run`
    over :func:`record_batches` (:func:`plan_steps` lists every step; ``gpu-viz bench --dry-run``
    prints them with the estimate): the record plan (both timings, ``reps`` >= 1 samples each),
    the per-call rows, and (not ``quick``) the wide rows with every baseline at every wide
    (op, shape, dtype), :data:`WIDE_REPS` samples.  Keys beyond DESIGN.md section 5:
    ``launch_floor_call_us``, ``copy_kernel_floor_us``, ``copy`` (its spread), ``kernels``
    (:func:`kernel_report_any` and :func:`kernel_resources` per launch: registers, spills,
    occupancy), ``skipped``, ``checks`` (:func:`summary_checks`), ``plan``, ``estimate_s``
    (the time model's estimate, beside the measured ``wall_s``), ``shared_compiles``,
    ``previous_record`` and ``vs_previous`` (:func:`previous_record_checks`), ``complete``,
    ``launcher`` (the C++ launcher's status: :func:`gpu_viz.rmsnorm.fused.ensure_launcher`).

    ``previous``: the record the fused kernel times are compared with (item 3 of issue 18);
    ``"newest"`` (default) loads :func:`newest_record` of ``tag`` from the committed records
    before anything is measured, used only if it was recorded on a GPU of the same name;
    None compares with nothing.  Saved through :func:`gpu_viz.measure.records.save_record`
    (``out`` directory, default the current folder) after every shape (``"complete": false``
    until the end, so a run cut short keeps what it measured) unless ``save=False``; the path is
    returned as ``record["_path"]`` (not in the file).

    Budget: one device command of at most 600 s on an H200.  Estimated ~430 s for the full
    record (:func:`estimate`, calibrated on the records of 2026-12-01), with torch.compile
    compiled per shape (:data:`SHARE_COMPILES` off: 39 compiles in the record plan and 24 at
    the wide shapes, each its own N).  What keeps it there: one garbage collection after a
    shape's checks instead of one per check; 30 samples for the wide rows, whose spread is
    tight.  Over budget, :data:`SHARE_COMPILES` saves ~36 s.

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    backend.require_gpu("the full benchmark record")
    t0 = time.perf_counter()
    plan = record_plan(quick)
    batches = record_batches(quick)
    steps_planned = plan_steps(quick, reps, batches)
    shared = shared_compile_groups(steps_planned)
    say = print if verbose else (lambda *a, **k: None)
    if isinstance(previous, str) and previous == "newest":
        previous = newest_record(tag)
    env_gpu = records.environment().get("gpu")
    if previous is not None and previous.get("gpu") != env_gpu:
        say(f"previous record {previous.get('_file')} is of {previous.get('gpu')}, not {env_gpu}: not compared")
        previous = None
    _SHARED_COMPILES.clear()
    say(f"{backend.live_label()}: copy bandwidth and launch floor ...")
    copy = bench.copy_bandwidth()
    floor = bench.launch_floor()
    from .. import device as _device

    fM, fN = FLOOR_SHAPE
    copy_floor = bench.copy_kernel_floor(fM * fN * 2, _device.current().l2_bytes)
    say(f"  copy {copy['GBps']:,.0f} GB/s; launch floor {floor['kernel'].median_us:.2f} µs (kernel), "
        f"{floor['call'].median_us:.2f} µs (call); copy kernel at {fM}x{fN} fp16 "
        f"{copy_floor.median_us:.2f} µs")
    from . import fused

    say("the C++ launcher (built now if it is not yet) ...")
    launcher_status = fused.ensure_launcher()
    say(f"  {launcher_status}")
    say("kernel report (registers, spills, occupancy) ...")
    kernels_section = _kernel_section(plan)
    est = estimate(steps_planned)
    record = records.new_record(
        [], copy_GBps=round(copy["GBps"], 1), launch_floor_us=round(floor["kernel"].median_us, 4),
        launch_floor_call_us=round(floor["call"].median_us, 4),
        copy_kernel_floor_us=round(copy_floor.median_us, 4),
        copy={"bytes": 1 << 30, "median_us": copy["timing"].median_us, "p10_us": copy["timing"].p10_us,
              "p90_us": copy["timing"].p90_us},
        kernels=kernels_section, skipped=[], providers_unavailable={},
        plan=[{"op": op, "shapes": [list(s) for s in shapes], "dtypes": list(d), "providers": list(p),
               "timings": list(tm), "reps": r or reps} for op, shapes, d, p, tm, r in batches],
        shared_compiles=[list(k) for k in sorted(shared)],
        estimate_s=est["total_s"], reps=reps, quick=bool(quick), complete=False, launcher=launcher_status,
        call_windows=CALL_WINDOWS)
    if previous is not None:
        record["previous_record"] = {"file": previous.get("_file"), "date": previous.get("date"),
                                     "gpu": previous.get("gpu"), "limit": PREVIOUS_LIMIT}
    rows = record.pop("rows")
    name_tag = "quick-" + tag if quick and tag else tag
    path = None

    def snapshot(final: bool):
        # rows last, as in DESIGN.md section 5; saved after every shape so a run cut short
        # still leaves its measurements (marked "complete": false)
        nonlocal path
        record.pop("rows", None)
        record["complete"] = final
        now = dict(record, rows=rows)
        if previous is not None:
            record["vs_previous"] = [{"check": c, "passed": ok, "detail": d}
                                     for c, ok, d in previous_record_checks(now, previous)]
            now = dict(record, rows=rows)
        record["checks"] = [{"check": c, "passed": ok, "detail": d} for c, ok, d in summary_checks(now)]
        record["wall_s"] = round(time.perf_counter() - t0, 1)
        record["rows"] = rows
        if save:
            path = records.save_record(record, tag=name_tag, directory=out, replace=path)  # one file a run

    say(f"plan: {est['steps']} steps, {est['compiles']} compiles, estimated {est['total_s']:.0f} s (an estimate)")
    say("batch invariance (bit for bit at M = 1, 3, 64, 1000 against 4096) ...")
    record["batch_invariant"] = batch_invariance(Ns=INVARIANCE_N[:3] if quick else INVARIANCE_N)
    for op, shapes, dtypes, providers, timings, r_reps in batches:
        if "liger" in providers:
            try:
                _liger_rms_norm()
            except ProviderUnavailable as exc:
                record["providers_unavailable"]["liger"] = str(exc)
        providers = _available(op, providers)
        say(f"{op}: {len(shapes)} shapes x {dtypes} x {providers}")
        for shape in shapes:
            r = run(op, [shape], dtypes, providers, timings=timings, reps=r_reps or reps, verbose=verbose,
                    shared_compiles=shared)
            rows += list(r)
            record["skipped"] += r.skipped
            snapshot(final=False)
    _SHARED_COMPILES.clear()
    snapshot(final=True)
    if save:
        record["_path"] = str(path)
        say(f"saved {path} ({record['wall_s']} s; estimated {record['estimate_s']} s)")
    return record


def newest_record(tag: str = "fused", include_quick: bool = False) -> Optional[Dict]:
    """The newest committed record whose file name ends in ``-<tag>.json``, complete and with
    rows (``--quick`` records only if ``include_quick``); None if there is none."""
    recs = records.load_records(f"*-{tag}.json") if tag else records.load_records()
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
    from . import fused  # torch-importing modules: loaded when used
    backend.require_gpu("the seed-defect checks")
    import torch

    dt = dtype_name(dtype)
    tdt = torch_dtype(dt)
    g = torch.Generator(device="cuda")
    seed = check.new_seed()
    g.manual_seed(seed)
    results = []

    def verdict(name, x, gate, w):
        y = fused.rmsnorm_gate(x, gate, w, eps)
        torch.cuda.synchronize()
        ok, detail = check_rows(RMSNORM_GATE, y, x, w, gate, eps, dt, seed=seed)
        y2 = fused.rmsnorm(x, w, eps)
        torch.cuda.synchronize()
        ok2, detail2 = check_rows(RMSNORM, y2, x, w, None, eps, dt, seed=seed)
        results.append((name, ok and ok2, f"rmsnorm_gate: {detail}; rmsnorm: {detail2}"))

    def rnd(*shape, scale=1.0):
        return (scale * torch.randn(*shape, device="cuda", generator=g)).to(tdt)

    for name, M, N in (("N=768: the write-up's 96-thread reduction lost terms", 64, 768),
                       ("N=12288 > 8192: the write-up had no path", 8, 12288),
                       ("N=65536: a very wide row", 2, 65536),
                       ("N=4100 (N % 8 != 0): the write-up required N % 8 == 0", 33, 4100),
                       ("N=1001 (odd)", 17, 1001)):
        verdict(name, rnd(M, N), rnd(M, N, scale=2.0), 1 + rnd(N, scale=0.5))
    M, N = 40, 4096
    base_x, base_g = rnd(M, N + 9), rnd(M, N + 9, scale=2.0)
    verdict("misaligned view x[:, 1:N+1] (2-byte offset, row stride N+9)", base_x[:, 1:N + 1],
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
        y = fused.rmsnorm_gate(x, gate, w, eps)
    s.synchronize()
    ok, detail = check_rows(RMSNORM_GATE, y, src, w, gate, eps, dt, seed=seed)
    results.append(("current stream: launched on the caller's side stream, after its writes", ok, detail))
    return results


# -- the performance targets, on a record ---------------------------------------------------------

def _find(rows, **key):
    for r in rows:
        if all(r.get(k) == v for k, v in key.items()):
            return r
    return None


def _has_wide(record: Dict) -> bool:
    """A full record (``"quick": false``) or any record with rows at a :data:`WIDE_SHAPES` shape."""
    return record.get("quick") is False or any((r.get("M"), r.get("N")) in WIDE_SHAPES
                                               for r in record.get("rows", []))


def _us(v: float) -> str:
    return f"{v:,.0f} µs" if v >= 100 else f"{v:.2f} µs"


def summary_checks(record: Dict, timing: str = bench.KERNEL, previous: Optional[Dict] = None
                   ) -> List[Tuple[str, bool, str]]:
    """The fused ops' performance targets evaluated on ``record`` (DESIGN.md section 5 format).

    1. fused >= 90 % of ``copy_GBps`` at 16384x4096 and 32768x8192 in fp16 and bf16, and (a
       full record, or one with wide rows) at every :data:`WIDE_SHAPES` shape in fp16, bf16
       and fp32, both ops;
    2. fused faster than ``native`` and ``compile`` at every (op, shape, dtype) where fused
       was measured (a missing or excluded baseline fails the check: it was not shown);
    3. (a full record, or one with wide rows) at every wide (op, shape, dtype) the baselines
       of :data:`WIDE_PROVIDERS` beside fused: eager, native (rmsnorm) and compile required;
       Liger where it runs -- a Liger that refused the shape (N > 65536), failed or is not
       installed is named in the detail with its reason and not counted against the check;
    4. fused at 128x4096 within 1.5x of ``launch_floor_us`` (both the kernel timing);
    5. (per-call rows, where the record has them) fused no slower than ``native`` per call at
       :data:`CALL_SHAPES`, and ``fused_grad`` within :data:`CALL_GRAD_FACTOR` x ``native_grad``;
    6. (where the record has it) ``batch_invariant["ok"]``;
    7. the fused kernel times against ``previous`` (:func:`previous_record_checks`), or, with
       no ``previous``, the record's own ``vs_previous`` checks (made by :func:`full_record`
       in the same run).

    Returns a list of (check, passed, detail).  Rows of ``timing`` ("kernel") are used for 1-4.
    """
    every = unique_rows(record.get("rows", []))
    rows = [r for r in every if r.get("timing") == timing]
    skipped = record.get("skipped", [])
    out: List[Tuple[str, bool, str]] = []
    copy = record.get("copy_GBps")
    wide = _has_wide(record)
    bw_points = [(s, d) for s in BANDWIDTH_SHAPES for d in ("float16", "bfloat16")]
    bw_points += [(s, d) for s in WIDE_SHAPES for d in DTYPES] if wide else []
    for op in OPS:
        for ((M, N), dt) in bw_points:
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
    if wide:
        out += _wide_baseline_checks(record, rows, skipped)
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
    calls = [r for r in every if r.get("timing") == bench.CALL and (r["M"], r["N"]) in CALL_SHAPES]
    for r in calls:
        if r["op"] != RMSNORM or r["impl"] not in ("fused", "fused_grad"):
            continue
        base, factor = ("native", 1.0) if r["impl"] == "fused" else ("native_grad", CALL_GRAD_FACTOR)
        name = f"rmsnorm {r['impl']} {r['M']}x{r['N']} {r['dtype']} per call: within {factor:g}x of {base}"
        br = _find(calls, op=RMSNORM, impl=base, M=r["M"], N=r["N"], dtype=r["dtype"])
        if br is None:
            out.append((name, False, f"{base} not measured"))
            continue
        out.append((name, r["median_us"] <= factor * br["median_us"],
                    f"{r['median_us']:.2f} µs vs {br['median_us']:.2f} µs ({r['median_us'] / br['median_us']:.2f}x)"))
    inv = record.get("batch_invariant")
    if inv is not None:
        bad = [c for c in inv.get("checked", []) if not c.get("ok")]
        out.append(("batch invariant: rows bit-identical at every M", bool(inv.get("ok")),
                    f"{len(inv.get('checked', [])) - len(bad)} of {len(inv.get('checked', []))} cases"
                    + (f"; failing: {bad[:3]}" if bad else "")))
    if previous is not None:
        out += previous_record_checks(record, previous)
    else:
        out += [(c["check"], bool(c["passed"]), c["detail"]) for c in record.get("vs_previous", [])]
    return out


def _wide_baseline_checks(record: Dict, rows: List[Dict], skipped: List[Dict]) -> List[Tuple[str, bool, str]]:
    """Check 3 of :func:`summary_checks`: the baselines beside fused at each wide (op, shape, dtype).

    Required baselines (not optional) must have a kernel row; Liger (optional) is shown with its
    time, or with why it has none -- its refusal of N > :data:`LIGER_MAX_N` ("refuses N = ..."
    and its message), a failure, or not installed -- and never fails the check."""
    out = []
    unavailable = record.get("providers_unavailable", {})
    for op in OPS:
        required = [p for p in WIDE_PROVIDERS[op] if p not in OPTIONAL_PROVIDERS and p != "fused"]
        optional = [p for p in WIDE_PROVIDERS[op] if p in OPTIONAL_PROVIDERS]
        wanted = ", ".join(required) + "".join(f"; {p} where it runs" for p in optional)
        for (M, N) in WIDE_SHAPES:
            for dt in DTYPES:
                key = dict(op=op, M=M, N=N, dtype=dt)
                name = f"{op} {M}x{N} {dt}: baselines beside fused ({wanted})"
                parts, missing = [], []
                for p in ["fused"] + required + optional:
                    r = _find(rows, impl=p, **key)
                    if r is not None:
                        parts.append(f"{p} {_us(r['median_us'])}")
                        continue
                    why = _find(skipped, impl=p, **key)
                    reason = (why["reason"] if why else unavailable.get(p, "not measured"))[:160]
                    if p in OPTIONAL_PROVIDERS:  # shown with its reason, not counted against us
                        refuses = f"refuses N = {N} " if why is not None and N > LIGER_MAX_N else ""
                        parts.append(f"{p}: {refuses}({reason}); not counted")
                    else:
                        missing.append(p)
                        parts.append(f"{p} not measured ({reason})")
                out.append((name, not missing, "; ".join(parts)))
    return out


def _median(rows: List[Dict], timing: str = bench.KERNEL, **key) -> Optional[float]:
    r = _find([x for x in rows if x.get("timing") == timing], **key)
    return r["median_us"] if r else None


def previous_record_checks(record: Dict, previous: Dict, limit: float = PREVIOUS_LIMIT,
                           timing: str = bench.KERNEL) -> List[Tuple[str, bool, str]]:
    """Item 3 of issue 18: the fused kernel-only medians of ``record`` against ``previous`` (an
    earlier record of the same GPU) at every (op, M, N, dtype) both measured; one check per
    (op, dtype) with such shapes, passed when no shape is more than ``limit`` (a fraction,
    default :data:`PREVIOUS_LIMIT` = 2 %) slower after normalisation.

    Normalisation: runs on the H200 drift by ~1 % (F.rms_norm moved -0.1..+1.2 % between two),
    so fused_now / fused_before is divided by the same ratio of a baseline measured in both
    runs: F.rms_norm's kernel median at the same (M, N, dtype) (the ``native`` rmsnorm row; the
    gate's shapes use it too), else the copy bandwidth (copy_before / copy_now).  The detail
    names the previous record and its date, the worst shape with its raw and normalised change
    and the baseline used, and every shape over the limit.

    Returns a list of (check, passed, detail); empty when the records share no fused shape.
    """
    out = []
    rows, prev_rows = unique_rows(record.get("rows", [])), unique_rows(previous.get("rows", []))
    where = f"{previous.get('_file') or 'the previous record'} ({previous.get('date', '?')})"
    copy_now, copy_prev = record.get("copy_GBps"), previous.get("copy_GBps")
    for op in OPS:
        for dt in DTYPES:
            cases = []
            for r in rows:
                if r.get("timing") != timing or r["impl"] != "fused" or r["op"] != op or r["dtype"] != dt:
                    continue
                key = dict(M=r["M"], N=r["N"], dtype=dt)
                before = _median(prev_rows, timing, op=op, impl="fused", **key)
                if not before:
                    continue
                n_now = _median(rows, timing, op=RMSNORM, impl="native", **key)
                n_prev = _median(prev_rows, timing, op=RMSNORM, impl="native", **key)
                if n_now and n_prev:
                    norm, by = n_now / n_prev, f"F.rms_norm {n_now:.2f} vs {n_prev:.2f} µs"
                elif copy_now and copy_prev:
                    norm, by = copy_prev / copy_now, f"copy {copy_now:,.0f} vs {copy_prev:,.0f} GB/s"
                else:
                    norm, by = 1.0, "no baseline in both runs: not normalised"
                raw = r["median_us"] / before
                cases.append((raw / norm, raw, r, before, by))
            if not cases:
                continue
            adj, raw, r, before, by = max(cases, key=lambda c: c[0])
            over = [c for c in cases if c[0] > 1 + limit]
            name = (f"{op} fused {dt}: kernel time at most {limit:.0%} slower than the last record "
                    f"at every shared shape")
            detail = (f"{len(cases)} shapes against {where}, normalised by F.rms_norm at the same shape "
                      f"measured in both runs (else by the copy bandwidth); worst {r['M']}x{r['N']}: "
                      f"{adj - 1:+.1%} (fused {r['median_us']:.2f} vs {before:.2f} µs, {raw - 1:+.1%}; {by})")
            if over:
                detail += "; over the limit: " + ", ".join(f"{c[2]['M']}x{c[2]['N']} {c[0] - 1:+.1%}"
                                                           for c in over[:6])
            out.append((name, not over, detail))
    return out
