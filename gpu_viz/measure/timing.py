"""Timing on the GPU, done one way everywhere (DESIGN.md section 5, METHOD.md).

* CUDA events on the *current* stream of the framework that launches the work
  (``torch.cuda.current_stream()`` or ``cupy.cuda.get_current_stream()``).
* Warm-up first (module load, NVRTC, torch.compile stay out of the numbers).
* Many repetitions; :class:`Timing` keeps median, p10, p90 (the spread) and the count.
* Two kinds of time, always labelled:
    - ``"kernel"``: CUDA-graph replay of ``calls_per_graph`` back-to-back calls, so launch
      and Python dispatch are gone: the device time of the work itself;
    - ``"call"``: events around each call as Python issues them back to back, what a
      Python caller sees (launch, dispatch, allocation), comparable with the seed's table.
* ``fn(i)`` gets the repetition index so it can rotate buffers: a bandwidth claim
  must not be an L2 claim (use :func:`rotation_count`).

Records (one JSON file per GPU run, DESIGN.md section 5) are :mod:`gpu_viz.measure.records`.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from typing import Callable, Dict, Sequence

import numpy as np

from .. import backend
from ..check import check_int

KERNEL = "kernel"
CALL = "call"


@dataclasses.dataclass(frozen=True)
class Timing:
    """Per-call time statistics in microseconds over ``n`` samples; ``timing`` is "kernel" or "call"."""

    median_us: float
    p10_us: float
    p90_us: float
    min_us: float
    n: int
    timing: str

    @classmethod
    def from_samples(cls, samples_us: Sequence[float], timing: str) -> "Timing":
        s = np.asarray(samples_us, dtype=np.float64)
        if s.size == 0:
            raise ValueError("Timing.from_samples: no samples")
        return cls(median_us=float(np.median(s)), p10_us=float(np.percentile(s, 10)),
                   p90_us=float(np.percentile(s, 90)), min_us=float(s.min()), n=int(s.size), timing=timing)

    def GBps(self, nbytes: float) -> float:
        """Effective bandwidth in GB/s (1e9 B/s) for ``nbytes`` moved per call, at the median."""
        return nbytes / (self.median_us * 1e-6) / 1e9


# -- frameworks: torch or cupy, same three operations -------------------------------------

class EmptyGraphError(RuntimeError):
    """The CUDA graph :func:`time_graph` captured holds no work, so its replays would time nothing."""


_EMPTY_GRAPH = ("time_graph: the captured CUDA graph is empty: fn launched no work on {stream}, the stream "
          "being captured (work launched through the other framework goes to its own stream: "
          "pass framework='{other}')")


def _graph_node_count(graph_handle: int):
    """Nodes in a ``cudaGraph_t`` (``cuGraphGetNodes``), or None where libcuda cannot answer."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    n = ctypes.c_size_t(0)
    rc = lib.cuGraphGetNodes(ctypes.c_void_p(graph_handle), None, ctypes.byref(n))
    return int(n.value) if rc == 0 else None


class _Torch:
    def __init__(self):
        import torch
        self.torch = torch

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def record(self, ev):
        ev.record(self.torch.cuda.current_stream())

    def sync(self):
        self.torch.cuda.synchronize()

    def elapsed_ms(self, a, b):
        return a.elapsed_time(b)

    def graph(self, body: Callable[[], None]):
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm the capture stream, as torch's docs advise
            body()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.cuda.graph(g):
                body()
        for w in caught:  # torch says so only in a warning; an empty graph would time nothing
            if "graph is empty" in str(w.message).lower():
                raise EmptyGraphError(_EMPTY_GRAPH.format(stream="torch's current stream", other="cupy"))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return g.replay


class _CuPy:
    def __init__(self):
        self.cupy = backend.require_cupy("timing")

    def event(self):
        return self.cupy.cuda.Event()

    def record(self, ev):
        ev.record(self.cupy.cuda.get_current_stream())

    def sync(self):
        self.cupy.cuda.get_current_stream().synchronize()

    def elapsed_ms(self, a, b):
        return self.cupy.cuda.get_elapsed_time(a, b)

    def graph(self, body: Callable[[], None]):
        cupy = self.cupy
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            body()  # warm
            stream.synchronize()
            stream.begin_capture()
            try:
                body()
            finally:
                g = stream.end_capture()
        if _graph_node_count(g.graph) == 0:
            raise EmptyGraphError(_EMPTY_GRAPH.format(stream="CuPy's current stream", other="torch"))

        def replay():
            g.launch(stream=cupy.cuda.get_current_stream())
        return replay


def _framework(name: str):
    backend.require_gpu("timing")
    if name == "torch":
        return _Torch()
    if name == "cupy":
        return _CuPy()
    raise ValueError(f"framework must be 'torch' or 'cupy', got {name!r}")


def time_calls(fn: Callable[[int], object], *, reps: int = 200, warmup: int = 20,
               framework: str = "torch") -> Timing:
    """As-called-from-Python time: events around each of ``reps`` back-to-back calls ``fn(i)``.

    Returns a "call" :class:`Timing` in µs.  Raises ``GPUUnavailable`` in CPU mode and
    ``ValueError`` for ``reps < 1``.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    fw = _framework(framework)
    for i in range(warmup):
        fn(i)
    fw.sync()
    starts = [fw.event() for _ in range(reps)]
    ends = [fw.event() for _ in range(reps)]
    for i in range(reps):
        fw.record(starts[i])
        fn(i)
        fw.record(ends[i])
    fw.sync()
    return Timing.from_samples([1e3 * fw.elapsed_ms(a, b) for a, b in zip(starts, ends)], CALL)


def time_calls_interleaved(fns: Dict[str, Callable[[int], object]], *, reps: int = 200, rounds: int = 10,
                           warmup: int = 20, framework: str = "torch") -> Dict[str, Timing]:
    """As-called-from-Python times of several callables, side by side: ``min(rounds, reps)``
    rounds, each timing a window of back-to-back calls of every ``fns[name](i)`` (events around
    each call, as :func:`time_calls`; the ``reps`` calls split over the rounds, the first
    ``reps % rounds`` rounds one call longer), the order of the callables rotated every round and
    two untimed calls and a synchronize before each one's window.  A host whose speed drifts
    between windows of calls (seen on the H200 machines: two bands ~1.6x apart) then shifts every
    callable alike, where timing them one after another can put one in a fast window and the next
    in a slow one.  The synchronize keeps one callable's queued GPU work out of the next one's
    samples: a call whose start event waits behind that work measures only its own kernel (on the
    H200, F.rms_norm at 1024x4096 after eager's window: 10 µs "per call" against 14-15 µs).

    Returns ``{name: Timing}`` ("call"), each from exactly ``reps`` samples.
    Raises ``GPUUnavailable`` in CPU mode, ``TypeError`` for a non-integer ``reps`` / ``rounds``
    and ``ValueError`` for no callables, ``reps < 1`` or ``rounds < 1``.
    """
    if not fns:
        raise ValueError("fns must name at least one callable")
    reps, rounds = check_int("reps", reps), check_int("rounds", rounds)
    if reps < 1 or rounds < 1:
        raise ValueError(f"reps and rounds must be >= 1, got {reps}, {rounds}")
    fw = _framework(framework)
    names = list(fns)
    rounds = min(rounds, reps)
    bounds = [r * (reps // rounds) + min(r, reps % rounds) for r in range(rounds + 1)]  # round r: [b_r, b_r+1)
    for name in names:
        for i in range(warmup):
            fns[name](i)
    fw.sync()
    events = {name: [(fw.event(), fw.event()) for _ in range(reps)] for name in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            fn, pairs = fns[name], events[name]
            fn(0)
            fn(1)
            fw.sync()  # the window starts on an idle GPU: no work queued by the callable before
            for i in range(bounds[r], bounds[r + 1]):
                fw.record(pairs[i][0])
                fn(i)
                fw.record(pairs[i][1])
        fw.sync()
    return {name: Timing.from_samples([1e3 * fw.elapsed_ms(a, b) for a, b in pairs], CALL)
            for name, pairs in events.items()}


def time_graph(fn: Callable[[int], object], *, reps: int = 100, warmup: int = 3,
               calls_per_graph: int = 20, framework: str = "torch") -> Timing:
    """Kernel-only time: capture ``calls_per_graph`` calls ``fn(0..k-1)`` in a CUDA graph and
    time ``reps`` replays with events; each sample is replay time / ``calls_per_graph`` (µs).

    ``fn`` must be capturable: launch on ``framework``'s current stream, no host sync.

    Raises:
        ValueError: ``reps`` or ``calls_per_graph`` below 1, an unknown ``framework``.
        EmptyGraphError: ``fn`` launched nothing on the captured stream (e.g. a CuPy kernel
            timed with ``framework="torch"``).
        GPUUnavailable: in CPU mode.
    """
    if reps < 1 or calls_per_graph < 1:
        raise ValueError(f"reps and calls_per_graph must be >= 1, got {reps}, {calls_per_graph}")
    fw = _framework(framework)

    def body():
        for j in range(calls_per_graph):
            fn(j)

    replay = fw.graph(body)
    for _ in range(warmup):
        replay()
    fw.sync()
    starts = [fw.event() for _ in range(reps)]
    ends = [fw.event() for _ in range(reps)]
    for i in range(reps):
        fw.record(starts[i])
        replay()
        fw.record(ends[i])
    fw.sync()
    return Timing.from_samples([1e3 * fw.elapsed_ms(a, b) / calls_per_graph for a, b in zip(starts, ends)],
                               KERNEL)


def rotation_count(bytes_per_call: int, l2_bytes: int, factor: float = 3.0, cap: int = 64) -> int:
    """How many distinct buffer sets to rotate through so their total exceeds ``factor`` x L2."""
    if bytes_per_call <= 0:
        raise ValueError(f"bytes_per_call must be positive, got {bytes_per_call}")
    return int(min(cap, max(1, math.ceil(factor * l2_bytes / bytes_per_call))))


def copy_bandwidth(nbytes: int = 1 << 30, reps: int = 50, framework: str = "torch") -> Dict:
    """Device-to-device copy bandwidth: bytes read + bytes written over the median time.

    ``nbytes`` per buffer (default 1 GiB, far beyond any L2).  Returns
    ``{"GBps": ..., "timing": Timing}``; the practical roofline for a memory-bound kernel.
    """
    fw = _framework(framework)
    if framework == "torch":
        torch = fw.torch
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
        dst = torch.empty_like(src)
        t = time_calls(lambda i: dst.copy_(src), reps=reps, warmup=5, framework=framework)
    else:
        cp = fw.cupy
        src = cp.random.randint(0, 255, nbytes, dtype=cp.uint8)
        dst = cp.empty_like(src)
        t = time_calls(lambda i: dst.__setitem__(slice(None), src), reps=reps, warmup=5, framework=framework)
    return {"GBps": t.GBps(2 * nbytes), "timing": t}


_EMPTY = r'extern "C" __global__ void gpu_viz_empty() {}'


def launch_floor() -> Dict[str, Timing]:
    """An empty kernel's time, both ways: ``{"kernel": graph replay, "call": from Python}`` (µs)."""
    cupy = backend.require_cupy("the launch floor")
    k = cupy.RawKernel(_EMPTY, "gpu_viz_empty")

    def fn(i):
        k((1,), (32,), ())

    return {KERNEL: time_graph(fn, framework="cupy", reps=200),
            CALL: time_calls(fn, framework="cupy", reps=500)}


_COPY16 = r'''
extern "C" __global__ void gpu_viz_copy16(uint4* __restrict__ y, const uint4* __restrict__ x, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}'''


def copy_kernel_floor(nbytes: int, l2_bytes: int, block: int = 512, reps: int = 200) -> Timing:
    """Kernel-only time (µs, graph replay) of the least a kernel that reads ``nbytes`` and
    writes ``nbytes`` can do: one 16-byte load and one store per thread, nothing else.

    The buffer pairs rotate (:func:`rotation_count` over ``l2_bytes``) so the reads come from
    DRAM, as in the benchmark rows.  The floor under any row-wise kernel of that size, e.g.
    RMSNorm at 128x4096 fp16 (``nbytes`` = 1 MiB; benchmarks/NOTES.md has the H200's numbers).
    The copy is checked (bit-exact) after timing.

    Raises:
        TypeError: a non-int argument.  ValueError: ``nbytes`` not a positive multiple of 16,
        ``l2_bytes`` < 0, ``block`` outside 32..1024, ``reps`` < 1.
        GPUUnavailable: in CPU mode.  AssertionError: the copy came out wrong.
    """
    for name, value in (("nbytes", nbytes), ("l2_bytes", l2_bytes), ("block", block), ("reps", reps)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    nbytes, l2_bytes, block, reps = int(nbytes), int(l2_bytes), int(block), int(reps)
    if nbytes <= 0 or nbytes % 16:
        raise ValueError(f"nbytes must be a positive multiple of 16 (one uint4 per thread), got {nbytes}")
    if l2_bytes < 0:
        raise ValueError(f"l2_bytes must be >= 0 (the L2 size, to rotate beyond it), got {l2_bytes}")
    if not 32 <= block <= 1024:
        raise ValueError(f"block must be in 32..1024 threads, got {block}")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    cupy = backend.require_cupy("the copy-kernel floor")
    k = cupy.RawKernel(_COPY16, "gpu_viz_copy16")
    sets = rotation_count(2 * nbytes, l2_bytes)
    n = nbytes // 16
    src = [cupy.random.randint(0, 255, nbytes, dtype=cupy.uint8) for _ in range(sets)]
    dst = [cupy.zeros(nbytes, dtype=cupy.uint8) for _ in range(sets)]
    grid = -(-n // block)

    def fn(i):
        j = i % sets
        k((grid,), (block,), (dst[j], src[j], cupy.int64(n)))

    t = time_graph(fn, framework="cupy", reps=reps, calls_per_graph=max(sets, 20))
    cupy.cuda.get_current_stream().synchronize()
    assert all(bool((d == s_).all()) for d, s_ in zip(dst, src)), "the copy kernel copied wrong"
    return t
