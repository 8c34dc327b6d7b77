"""The fused RMSNorm (+ SiLU gate) against its baselines, live: the harness.

Data path: providers by name (:mod:`gpu_viz.rmsnorm.providers`) --> :func:`run` (check every
provider against the float64 reference on fresh random data, THEN time the ones that were right,
rotating buffers past L2) --> rows in DESIGN.md section 5's format.  What a record measures is
:mod:`gpu_viz.rmsnorm.plan`, the performance targets on a record :mod:`gpu_viz.rmsnorm.targets`,
the record itself :mod:`gpu_viz.rmsnorm.bench_record`; :mod:`gpu_viz.rmsnorm.report` shows rows
and records (tables, charts) and runs ``gpu-viz bench``.

Timings (both labelled in every row): ``"kernel"`` = CUDA-graph replay, the device time
alone; ``"call"`` = events around each call from Python, what a caller sees.

``GBps`` counts the fewest bytes the op must move (inputs read once, output written once):
rmsnorm ``2*M*N*size + N*size``; rmsnorm_gate adds ``M*N*size`` for the gate.
"""
from __future__ import annotations

import dataclasses
import gc
import math
import time
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from .. import backend, check
from ..measure import timing as bench
from .dtypes import RMSNORM, RMSNORM_GATE, bytes_moved, torch_dtype
from .dtypes import check_op as _check_op
from .dtypes import dtype_name as _dtype_name
from .providers import EPS, CompileFellBack, ProviderUnavailable, available, check_providers, setup
from .reference import rmsnorm as reference_f64
from .tolerances import tolerance

DEFAULT_REPS = 100
#: Per-call rows: a shape's providers share this many interleaved rounds of reps / CALL_ROUNDS
#: calls each (gpu_viz.measure.timing.time_calls_interleaved); their rows carry ``"rounds"``.
CALL_ROUNDS = 10
#: How a record's per-call windows were timed, saved in the record: "idle-start" = each provider's
#: window starts on an idle GPU (a synchronize before it).  Records without the key predate it:
#: a provider timed right after one whose kernels were still queued (eager's) could measure its
#: own kernel's pace instead of its cost per call (:func:`gpu_viz.rmsnorm.report.call_timing_caveat`).
CALL_WINDOWS = "idle-start"
ROW_KEYS = ("op", "impl", "M", "N", "dtype", "timing", "median_us", "p10_us", "p90_us", "GBps")
#: The harness's dtypes (a record's wide rows take every one).
DTYPES = ("float16", "bfloat16", "float32")
#: Above this many fewest bytes (1-2 GiB shapes) a torch or Liger baseline's output is checked once,
#: before timing (:func:`post_check`): a second float64 check there costs ~1 s each.
WIDE_CHECK_BYTES = 256 << 20


def dtype_name(dtype) -> str:
    """``"float16"`` / ``torch.float16`` / ``numpy.float16`` -> ``"float16"``
    (:func:`gpu_viz.rmsnorm.dtypes.dtype_name`, with a ValueError for the harness's arguments)."""
    try:
        return _dtype_name(dtype)
    except TypeError:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}") from None


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


@dataclasses.dataclass
class _Shape:
    """One (op, M, N, dtype) of a run: its input sets, and how its providers are checked."""

    op: str
    M: int
    N: int
    dt: str
    sets: List[Dict]
    eps: float
    device: object
    timers: _Timers
    seed: int
    verbose: bool

    @property
    def buffers(self) -> int:
        return len(self.sets)

    @property
    def key(self) -> Dict:
        return {"op": self.op, "M": self.M, "N": self.N, "dtype": self.dt}

    def release(self, collect: bool = True) -> None:
        """The poisoned blocks, the last output and any garbage (e.g. the last timing's graph) go
        back to the driver before the next timing, as in the recorded runs."""
        if str(self.device) != "cpu":
            import torch

            if collect:
                gc.collect()
            torch.cuda.empty_cache()

    def checked(self, fn, collect: bool = True) -> Tuple[bool, str]:
        """Poison, run, compare with float64 a block of rows at a time (:func:`check_rows`: no
        multi-GB float64 temporaries, which slowed every later timing in the process ~9 % on the
        H200), free the output (``collect``: and run the garbage collector, ~0.1-0.2 s with
        torch.compile's objects alive)."""
        import torch

        s0 = self.sets[0]
        try:
            _poison_pool(torch, self.M, self.N, self.device)
            y = fn(s0)
            self.timers.sync()
            return check_rows(self.op, y, s0["x"], s0["weight"], s0.get("gate"), self.eps, self.dt, seed=self.seed)
        finally:
            y = None
            self.release(collect)

    def skip(self, out: "Rows", impl: str, reason: str) -> None:
        out.skipped.append(dict(self.key, impl=impl, reason=reason))
        if self.verbose:
            print(f"  skip {self.op} {impl} {self.M}x{self.N} {self.dt}: {reason}")

    def caller(self, fn):
        return lambda i: fn(self.sets[i % self.buffers])


def _correct_providers(sh: _Shape, providers, out: "Rows", compile_backend, shared_compiles) -> List[Tuple]:
    """Step 1, correctness first: every provider set up and checked before anything is timed;
    ``(provider, fn)`` of the right ones, the others skipped with why."""
    ok_fns = []
    for p in providers:
        try:
            share = p == "compile" and sh.M >= 2 and (sh.op, sh.N, sh.dt) in shared_compiles
            fn = setup(sh.op, p, sh.sets[0]["weight"], sh.eps, sample=sh.sets[0], compile_backend=compile_backend,
                       shared_compile=share)
            # no garbage collection between these checks: nothing is timed until all are done, and
            # one collection below leaves the same state for the first timing
            ok, detail = sh.checked(fn, collect=False)
        except (ProviderUnavailable, CompileFellBack) as exc:
            ok, detail = False, str(exc)
        except Exception as exc:  # a provider that raises is reported, not fatal
            ok, detail = False, f"raised {type(exc).__name__}: {exc}"
        if not ok:
            sh.skip(out, p, detail)
            continue
        ok_fns.append((p, fn))
    sh.release()
    return ok_fns


def _time_kernels(sh: _Shape, ok_fns, reps: int, timed: Dict, failed: Dict) -> None:
    """Step 2a: kernel-only times, one provider after another (a pilot pass over the sets sizes
    the calls per graph replay)."""
    for p, fn in ok_fns:
        t0 = time.perf_counter()
        try:
            pilot = sh.timers.kernel(sh.caller(fn), 3, sh.buffers)  # one pass over the sets
            k = _calls_per_graph(sh.buffers, pilot.median_us)
            t = sh.timers.kernel(sh.caller(fn), reps, k)
            timed.setdefault(p, []).append(
                make_row(sh.op, p, sh.M, sh.N, sh.dt, t, buffers=sh.buffers, calls_per_graph=k))
        except Exception as exc:  # e.g. a launch CUDA-graph capture refuses: say so, go on
            failed[p] = f"timing failed: {type(exc).__name__}: {exc}"
            _sync_quietly(sh.timers)
        if sh.verbose:
            print(f"  {sh.op:12s} {p:10s} {sh.M:>6d}x{sh.N:<6d} {sh.dt:8s} "
                  f"{time.perf_counter() - t0:5.1f} s ({sh.buffers} buffer sets)")


def _keep_timed(sh: _Shape, ok_fns, timed: Dict, failed: Dict, out: "Rows") -> None:
    """Step 3: the timed rows kept, each of ours checked again after timing (a wrong output
    drops its rows), the failed timings skipped with why."""
    for p, fn in ok_fns:
        if p in failed:
            sh.skip(out, p, failed[p])
            continue
        out.extend(timed.get(p, []))
        if not post_check(p, sh.op, sh.M, sh.N, sh.dt):
            sh.release()  # a torch baseline at a wide shape: checked in full before timing
            continue
        try:  # every launch of ours checked: the output after timing is still right
            ok, detail = sh.checked(fn)
        except Exception as exc:
            ok, detail = False, f"raised {type(exc).__name__}: {exc}"
        if not ok:
            out[:] = [r for r in out if not (r["impl"] == p and r["M"] == sh.M and r["N"] == sh.N
                                             and r["dtype"] == sh.dt)]
            out.skipped.append(dict(sh.key, impl=p, reason="wrong after timing: " + detail))


def _run_shape(sh: _Shape, providers, timings, reps: int, out: "Rows", compile_backend, shared_compiles) -> None:
    """Check, then time, one shape's providers into ``out``: the right ones timed, rotating over
    the input sets; per-call times of all of them in interleaved rounds (the host's speed drifts
    between windows of calls: each provider sees the same)."""
    ok_fns = _correct_providers(sh, providers, out, compile_backend, shared_compiles)
    timed: Dict[str, List[Dict]] = {}
    failed: Dict[str, str] = {}
    if bench.KERNEL in timings:
        _time_kernels(sh, ok_fns, reps, timed, failed)
    if bench.CALL in timings:
        live = [(p, fn) for p, fn in ok_fns if p not in failed]
        together, rounds = _time_calls_together(sh.timers, live, sh.caller, reps, failed)
        for p, t in together.items():
            extra = {"buffers": sh.buffers}
            if rounds:  # timed in the same interleaved rounds as the shape's other providers
                extra["rounds"] = rounds
            timed.setdefault(p, []).append(make_row(sh.op, p, sh.M, sh.N, sh.dt, t, **extra))
    _keep_timed(sh, ok_fns, timed, failed, out)


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
            buffers = bench.rotation_count(fewest_bytes(op, M, N, dt), l2_bytes)
            sets = make_inputs(op, M, N, dt, device, generator=gen, count=buffers)
            _run_shape(_Shape(op, M, N, dt, sets, eps, device, timers, seed, verbose), providers, timings, reps,
                       out, compile_backend, shared_compiles)
            sets = None  # this shape's buffers go before the next shape's are made
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
    :data:`WIDE_CHECK_BYTES`; not for the torch and Liger baselines at the 1-2 GiB wide shapes,
    whose full float64 check before timing stands (a second one there costs ~1 s each, ~60 s
    of the bench's 600 s budget)."""
    ours = provider.startswith("fused") or provider == "deck4phase"
    return ours or fewest_bytes(op, M, N, dtype) <= WIDE_CHECK_BYTES


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

    providers = available(op, providers, drop_optional=False) if providers is not None else available(op, None)
    return _run(op, shapes, dtypes, providers, timings, reps, eps, "cuda", _gpu_timers(),
                _device.current().l2_bytes, verbose, seed=seed, shared_compiles=frozenset(shared_compiles))


def run_rmsnorm(shapes, dtypes=("float16",), providers=("eager", "native", "compile", "deck4phase", "fused"),
                timing=None, timings=(bench.KERNEL, bench.CALL), reps: int = DEFAULT_REPS, eps: float = EPS,
                verbose: bool = False) -> Rows:
    """:func:`run` for op "rmsnorm" (notebook 11's live speedup).  ``timing`` (one of "kernel",
    "call") overrides ``timings``.  Same returns and errors as :func:`run`."""
    if timing is not None:
        timings = (timing,)
    return run(RMSNORM, shapes, dtypes, providers, timings=timings, reps=reps, eps=eps, verbose=verbose)


def seed_defect_checks(dtype="float16", eps: float = EPS) -> List[Tuple[str, bool, str]]:
    """Each defect the seed's write-up lists, run through our ops and checked against float64.

    N=768 (seed: 96 threads, lost reduction terms), N > 8192 (seed: no path), N % 8 != 0
    (seed: required N % 8 == 0), a misaligned view with a row stride (seed: assumed 16-byte
    aligned contiguous rows), the caller's current stream (seed: default stream).  Returns
    (defect, passed, detail) per case.

    Raises:
        gpu_viz.backend.GPUUnavailable: in CPU mode.
    """
    from .fused import op as fused  # torch-importing modules: loaded when used
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
