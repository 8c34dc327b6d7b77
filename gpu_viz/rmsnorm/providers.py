"""The benchmarks' providers: each way of computing an op, set up by name (Liger's shape: one
``setup_<op>`` per op), checked before anything is timed.

    op ``"rmsnorm"``: ``eager`` (the deck's module, :class:`gpu_viz.rmsnorm.eager.EagerRMSNorm`),
    ``native`` (``torch.nn.functional.rms_norm``), ``compile`` (``torch.compile(dynamic=False)``
    of the eager module, per shape, checked to have really compiled), ``deck4phase``
    (:func:`gpu_viz.rmsnorm.deck.four_phase`, block=1024), ``fused`` (:func:`gpu_viz.ops.rmsnorm`),
    ``liger`` (only if ``liger_kernel`` imports).
    op ``"rmsnorm_gate"``: ``eager`` (:func:`gpu_viz.rmsnorm.eager.eager_rmsnorm_gate`, the
    seed's baseline), ``compile`` (of that), ``fused`` (:func:`gpu_viz.ops.rmsnorm_gate`).

The harness that checks and times them is :mod:`gpu_viz.rmsnorm.bench`.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional, Sequence, Tuple

from .dtypes import RMSNORM, RMSNORM_GATE, dtype_name
from .dtypes import check_op as _check_op

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
#: (:func:`gpu_viz.rmsnorm.fused.launch.launch`).
CALL_PROVIDERS: Dict[str, Tuple[str, ...]] = {
    RMSNORM: ("native", "fused", "native_grad", "fused_grad", "fused_driver", "fused_cupy", "fused_unplanned"),
    RMSNORM_GATE: ("fused", "fused_grad"),
}
#: The baselines each wide (op, shape, dtype) is measured against (both timings).  ``liger`` is
#: optional: it refuses N >= 131072 ("exceeds the recommended Triton blocksize = 65536"), which
#: the record shows as a skipped row with Liger's message and :func:`summary_checks` does not
#: count against the fused op; the others are required (a missing one fails its check).
WIDE_PROVIDERS: Dict[str, Tuple[str, ...]] = {
    RMSNORM: ("eager", "native", "compile", "fused", "liger"),
    RMSNORM_GATE: ("eager", "compile", "fused"),
}
#: Providers that are optional: missing library -> skipped with the reason, never an error.
OPTIONAL_PROVIDERS = {"liger"}
#: The eps every provider is set up with unless told otherwise.
EPS = 1e-6


class ProviderUnavailable(RuntimeError):
    """An optional provider cannot run here (its library is missing); it is skipped, with this reason.
    The package's own providers never raise it: a missing module of ours is an error."""


class CompileFellBack(RuntimeError):
    """torch.compile did not produce one compiled graph for this shape (graph break, recompile
    limit, skipped frame): its timing would be eager's under the name "compile", so it is excluded."""


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


def clear_shared_compiles() -> None:
    """Forget the shared compiled baselines (a record's start and end)."""
    _SHARED_COMPILES.clear()


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
    from . import deck  # torch-importing modules: loaded when used
    from .fused import launch, op as fused
    from .fused.checks import validate
    check_providers(RMSNORM, (provider,))
    import torch

    if provider.startswith("fused"):
        launch.ensure_launcher()  # time the C++ launcher, not the build's stand-in

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
            saved, launch.LAUNCHER = launch.LAUNCHER, which
            try:
                return fused.rmsnorm(inp["x"], weight, eps)
            finally:
                launch.LAUNCHER = saved
        return via
    if provider == "fused_unplanned":
        return lambda inp: launch.launch(validate(RMSNORM, inp["x"], None, weight, eps))
    # liger
    liger = _liger_rms_norm()
    return lambda inp: liger(inp["x"], weight, eps)


def setup_rmsnorm_gate(provider: str, weight, eps: float = EPS, sample=None, compile_backend=None,
                       shared_compile: bool = False) -> Callable:
    """A callable ``f(inputs) -> y`` for rmsnorm_gate; ``inputs`` is ``{"x": (M, N), "gate": (M, N)}``.

    Same contract and errors as :func:`setup_rmsnorm`.
    """
    from . import eager  # torch-importing modules: loaded when used
    from .fused import launch, op as fused
    check_providers(RMSNORM_GATE, (provider,))
    if provider.startswith("fused"):
        launch.ensure_launcher()
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


def available(op: str, providers: Optional[Iterable[str]], drop_optional: bool = True) -> Tuple[str, ...]:
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
