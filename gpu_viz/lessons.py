"""One object per animated lesson: its kernel file and region, its producers, its frames, its cases.

    from gpu_viz.lessons import VECTOR_ADD
    tr = VECTOR_ADD.trace(n=64, block=64)   # the silicon's record on a GPU, else the CPU model's
    VECTOR_ADD.show(tr)                     # the player, the taught source beside it

A lesson named ``<stem>`` reads ``kernels/<stem>.cu`` and wires ``gpu_viz.record.<stem>`` (GPU),
``gpu_viz.model.<stem>`` (CPU) and ``gpu_viz.frames.<stem>``: each producer module has a
``trace(*inputs, **launch)`` returning the same :class:`gpu_viz.trace.Trace`, each frames module
an ``animation(trace, source, ...)``.  A notebook asks the lesson; it never picks a producer.
Fresh random inputs come with their seed (``Trace.params["seed"]``), so a failing check replays.
A lesson without a kernel of its own (``latency``: a model of a warp scheduler) has no GPU
producer (``gpu=False``) and shows the kernel it models (``file``).

:data:`LESSONS` is the one list of lessons: each carries its own cases (:class:`LessonCases`), which
the tests, the players' cases, the sanitizer and the build checks read from it -- a new lesson is
its kernel, its producers, its frames, its notebook cells and its test file, and its entry here.

Producers: on a GPU the first; in CPU mode a lesson's :attr:`Lesson.cpu` lists the others in the
order :meth:`Lesson.trace` tries them (most: the emulator, then the model):

* ``"gpu"``: the traced kernel on the GPU (``record/<stem>.py``);
* ``"emulator"`` (CPU mode): the same ``record/<stem>.py`` and the same traced kernel, its PTX
  run by :mod:`gpu_viz.emulator` -- so what plays is the kernel the slide shows, and a learner who
  edits ``kernels/<stem>.cu`` sees the edit.  Used up to :data:`MAX_EMULATED_THREADS` threads (a few
  seconds of emulation);
* ``"model"``: the hand-written numpy model (``model/<stem>.py``): larger launches in CPU mode,
  and machines without NVRTC.  The tests hold emulator == model bit for bit, so the models stay as
  an independent check of the emulator and of the kernels.
"""
from __future__ import annotations

import dataclasses
import importlib
import types
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Tuple

import numpy as np

from . import backend, kernels
from .check import check_bool, check_int, new_seed, random_f32
from .model import banks as _bk
from .model import coalescing as _co
from .model import divergence as _dv
from .model import grid_stride as _gs
from .model import latency as _lat
from .model import rmsnorm_deck as _rd
from .model import scheduling as _sch
from .record import reduction_ladder as _rl
from .trace import Trace

#: A launch: keyword arguments of :meth:`Lesson.trace` (``seed`` among them where it matters).
Launch = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class LessonCases:
    """A lesson's own cases, plain data: what the tests (tests/test_lessons.py, test_record.py,
    test_kernels.py), the players' cases (tests/players_cases.py) and the sanitizer
    (scripts/sanitize/lessons.py) run for it, read from :data:`LESSONS`.  Launches are kept as
    read-only mappings.

    Attributes:
        small: ``Launch``: a small launch each CPU producer traces in about a second.  Its integer
            arguments, with the defaults of the lesson's ``inputs`` for the others, are the values
            the numpy-integer and bool argument tests use (every ``int``-defaulted argument of
            ``inputs`` is one).
        refused: ``Tuple[Tuple[Launch, str], ...]``, at least one: launches the trace must refuse
            at once (before any input is made or kernel launched), each with the words its error
            must hold -- the argument's name, or the product it breaks (``"grid * block"``): sizes
            past the limits, wrong types, non-finite floats, unknown names.
        largest: ``Launch``: the largest launch the limits allow; its player draws in seconds or
            refuses at once, naming its own limit.
        players: ``Tuple[Tuple[str, Launch, Mapping[str, Any]], ...]``, at least one: the players
            the notebooks show, as ``(name, launch, animation options)``; the names are unique
            across lessons (tests/test_players*.py draw, measure and play each).
        sanitize: ``Tuple[Launch, ...]``: launches the sanitizer runs on the GPU under
            compute-sanitizer, each compared bit for bit with the CPU producer (edge shapes: one
            thread, partial warps, nothing to do).  Required with a GPU producer; empty without one.
        entry_points: ``FrozenSet[str]``: the ``extern "C"`` kernels of the lesson's kernel file,
            the same in its plain and traced builds; empty when the file is not the lesson's own.
            Required with a GPU producer.
        max_registers: ``Tuple[Optional[int], Optional[int]]``: register ceilings of the kernel
            file's plain and traced builds on every architecture (None: no ceiling kept).
    """

    refused: Tuple[Tuple[Launch, str], ...]
    largest: Launch
    players: Tuple[Tuple[str, Launch, Mapping[str, Any]], ...]
    small: Launch = dataclasses.field(default_factory=dict)
    sanitize: Tuple[Launch, ...] = ()
    entry_points: FrozenSet[str] = frozenset()
    max_registers: Tuple[Optional[int], Optional[int]] = (None, None)

    def __post_init__(self):
        ro = types.MappingProxyType
        set_ = object.__setattr__   # frozen: the normalised copies replace what was passed
        set_(self, "small", ro(dict(self.small)))
        set_(self, "largest", ro(dict(self.largest)))
        set_(self, "refused", tuple((ro(dict(launch)), str(words)) for launch, words in self.refused))
        set_(self, "players", tuple((str(name), ro(dict(launch)), ro(dict(options)))
                                    for name, launch, options in self.players))
        set_(self, "sanitize", tuple(ro(dict(launch)) for launch in self.sanitize))
        set_(self, "entry_points", frozenset(self.entry_points))
        set_(self, "max_registers", tuple(self.max_registers))


def refusals(*pairs: Tuple[str, Any]) -> Tuple[Tuple[Launch, str], ...]:
    """``(argument, value)`` pairs as :attr:`LessonCases.refused`: each launch sets one argument,
    whose name its error must hold."""
    return tuple(({arg: value}, arg) for arg, value in pairs)


@dataclasses.dataclass(frozen=True)
class Lesson:
    """A traced lesson.

    Attributes:
        stem: the name shared by ``kernels/<stem>.cu`` and ``gpu_viz.{record,model,frames}.<stem>``.
        notebook: the notebook that teaches it.
        regions: the regions of the kernel file its player shows (joined in order).
        claim: what the deck says, shown beside the live numbers.
        inputs: ``inputs(seed, **launch) -> (args, launch)``: fresh inputs for the producers; it
            checks every launch argument, naming the bad one.
        source_lines: ``source_lines(snippet, **launch) -> dict`` of extra producer keywords that
            point into the shown source (e.g. the lines its steps highlight).
        gpu: whether a GPU producer (``gpu_viz.record.<stem>``) exists; without one the lesson
            has no kernel of its own and its CPU producer is its model.
        file: the ``kernels/`` file its player shows when it is not ``<stem>.cu`` (for a lesson
            without a kernel of its own, the kernel it models).
        regions_for: ``regions_for(trace) -> regions`` when the code shown depends on the trace
            (the four phases: the guarded variant's phase 2 is reduce.cuh's).
        cpu: the CPU producers it may use, in the order CPU mode tries them: ``"emulator"`` (its
            GPU producer's kernel run from PTX: needs ``gpu``) and ``"model"`` (its
            ``gpu_viz.model.<stem>``); a producer forced with ``trace(producer=...)`` must be one.
        simulated: the arrays of the trace that only silicon knows (``%smid`` ...): in an emulated
            trace they come from the emulator's named model and are listed in ``Trace.simulated``.
        threads: ``threads(**launch) -> int``, the threads a launch runs (to choose the emulator).
        emulator_options: ``emulator_options(seed) -> dict`` of launch options for the emulated
            session (e.g. ``{"policy": "random", "seed": seed}``: seeded warp interleavings).
        cases: :class:`LessonCases` (keyword only): its test cases, refusals, largest launch,
            players, sanitizer launches and kernel entry points.

    Raises:
        ValueError: ``cpu`` names no producer, an unknown one, the emulator without a GPU
            producer, or a lesson without a GPU producer lacks a model.
    """

    stem: str
    notebook: str
    regions: Tuple[str, ...]
    claim: str
    inputs: Callable[..., Tuple[tuple, Dict]]
    source_lines: Optional[Callable[..., Dict]] = None
    gpu: bool = True
    file: Optional[str] = None
    regions_for: Optional[Callable[[Trace], Tuple[str, ...]]] = None
    cpu: Tuple[str, ...] = ("emulator", "model")
    simulated: Tuple[str, ...] = ()
    threads: Optional[Callable[..., int]] = None
    emulator_options: Optional[Callable[[int], Dict]] = None
    cases: LessonCases = dataclasses.field(kw_only=True, compare=False)

    def __post_init__(self):
        cpu = self.cpu
        if not cpu or len(set(cpu)) != len(cpu) or not set(cpu) <= {"emulator", "model"}:
            raise ValueError(f"{self.stem}: cpu must name 'emulator' and/or 'model' once each, got {cpu!r}")
        if "emulator" in cpu and not self.gpu:
            raise ValueError(f"{self.stem}: cpu names the emulator, which runs the GPU producer's kernel, "
                             "but gpu=False (no GPU producer)")
        if not isinstance(self.cases, LessonCases):
            raise TypeError(f"{self.stem}: cases must be a LessonCases, got {type(self.cases).__name__}")

    @property
    def kernel_file(self) -> str:
        """The ``kernels/`` file this lesson reads."""
        return self.file or f"{self.stem}.cu"

    def module(self, layer: str):
        """``gpu_viz.<layer>.<stem>`` for layer ``"record"``, ``"model"`` or ``"frames"``."""
        if layer not in ("record", "model", "frames"):
            raise ValueError(f"layer must be 'record', 'model' or 'frames', got {layer!r}")
        return importlib.import_module(f"gpu_viz.{layer}.{self.stem}")

    def source(self, *regions: str) -> "kernels.Snippet":
        """The taught code of the lesson (its :attr:`regions`, or the ones named)."""
        return kernels.snippet(self.kernel_file, *(regions or self.regions))

    def producer(self, **launch) -> str:
        """Which producer :meth:`trace` uses for ``launch``: "gpu", "emulator" or "model".

        Raises:
            ValueError: a lesson whose only CPU producer is the emulator (``cpu=("emulator",)``),
                asked for more than :data:`MAX_EMULATED_THREADS` threads in CPU mode.
            gpu_viz.emulator.NVRTCUnavailable (a RuntimeError): such a lesson in CPU mode without
                NVRTC (the emulator's compiler).
        """
        if self.gpu and backend.has_gpu():
            return "gpu"
        if self.cpu[0] == "model":      # cpu holds "emulator" and "model" at most once each, in order
            return "model"
        from . import emulator

        small = self.threads is None or self.threads(**launch) <= MAX_EMULATED_THREADS
        if emulator.available() and small:
            return "emulator"
        if "model" in self.cpu:
            return "model"
        if not emulator.available():
            raise emulator.NVRTCUnavailable(
                f"{self.stem}: CPU mode runs this lesson's kernel in the emulator, which needs NVRTC "
                f"({emulator.nvrtc.INSTALL}), or use a GPU runtime")
        raise ValueError(f"{self.stem}: in CPU mode the emulator runs at most {MAX_EMULATED_THREADS:,} threads "
                         f"for a trace (a few seconds), and this launch asks for {self.threads(**launch):,}: "
                         "choose a smaller one")

    def _model_for_missing_nvrtc(self, **launch) -> bool:
        """Whether CPU mode chose the model for ``launch`` only because NVRTC is missing: the
        emulator comes first in :attr:`cpu` and the launch is small enough for it."""
        if self.cpu[0] != "emulator" or backend.has_gpu():
            return False
        from . import emulator

        return not emulator.available() and (self.threads is None or self.threads(**launch) <= MAX_EMULATED_THREADS)

    def trace(self, seed: Optional[int] = None, producer: Optional[str] = None, missing_ok: bool = False,
              **launch) -> Trace | NotTraced:
        """Fresh inputs (``seed``: None = fresh entropy, kept in the Trace; else an int >= 0), then
        the silicon's record on a GPU; in CPU mode the emulator's run of the same traced kernel, or
        the CPU model's; its ``source`` and ``provenance`` say which (a model standing in for the
        emulator because NVRTC is missing says so, and what to install).  ``producer`` forces one
        ("gpu", "emulator", "model"): "gpu" needs a GPU producer, the others must be in :attr:`cpu`.

        ``missing_ok=True``: where the emulator is needed and NVRTC is missing, return a
        :class:`NotTraced` (falsy; it displays what is not shown and what to install, and
        :meth:`animation` / :meth:`show` show it) instead of raising.

        Returns:
            a :class:`gpu_viz.trace.Trace` (or, with ``missing_ok``, a :class:`NotTraced`).

        Raises:
            TypeError / ValueError: naming ``seed``, ``producer`` (one the lesson does not have
            included) or the launch argument that is not as expected.  GPUUnavailable:
            ``producer="gpu"`` in CPU mode.  gpu_viz.emulator.NVRTCUnavailable (a RuntimeError):
            the emulator is needed and NVRTC is missing, without ``missing_ok``.
        """
        missing_ok = check_bool("missing_ok", missing_ok)
        if not missing_ok:
            return self._trace(seed, producer, **launch)
        from .emulator import NVRTCUnavailable

        try:
            return self._trace(seed, producer, **launch)
        except NVRTCUnavailable as exc:
            case = (f"`{launch['kernel']}`" if isinstance(launch.get("kernel"), str) else
                    f"the `{launch['rung']}` rung" if isinstance(launch.get("rung"), str) else None)
            return NotTraced(self.stem, self.kernel_file, case, str(exc))

    def _trace(self, seed: Optional[int], producer: Optional[str], **launch) -> Trace:
        seed = new_seed() if seed is None else check_int("seed", seed, minimum=0)
        if producer is not None and producer not in PRODUCERS:
            raise ValueError(f"producer must be one of {PRODUCERS} or None, got {producer!r}")
        args, launch = self.inputs(seed, **launch)
        extra = self.source_lines(self.source(), **launch) if self.source_lines else {}
        which = producer or self.producer(**launch)
        if which == "gpu":
            if not self.gpu:
                raise ValueError(f"{self.stem} has no GPU producer (no kernel of its own): producer must be one of "
                                 f"{self.cpu}")
            backend.require_gpu(f"the {self.stem} trace on the GPU")
            return self.module("record").trace(*args, **launch, **extra, seed=seed)
        if which == "model":
            if "model" not in self.cpu:
                raise ValueError(f"{self.stem} has no CPU model: in CPU mode its kernel runs in the emulator "
                                 f"(producer='emulator')")
            tr = self.module("model").trace(*args, **launch, **extra, seed=seed)
            if launch.get("info") is not None:   # CPU mode: the modelled GPU's SM count, and where it came from
                tr = dataclasses.replace(tr, provenance=tr.provenance + _sm_count_source(tr.provenance))
            if producer is None and self._model_for_missing_nvrtc(**launch):
                tr = dataclasses.replace(tr, provenance=tr.provenance + EMULATOR_MISSING_NOTE)
            return tr
        if "emulator" not in self.cpu:
            raise ValueError(f"{self.stem}'s kernel does not run in the emulator: its CPU producer is its model "
                             f"(producer='model')")
        from . import emulator

        # the GPU the CPU model would model (_modelled_gpu) is the one the emulator's %smid spreads
        # blocks over: the same SM count, so an emulated trace and a modelled one tell one story
        modelled = launch.pop("info", None)
        options = {"sm_count": modelled.sm_count} if modelled is not None else {}
        if self.emulator_options:
            options.update(self.emulator_options(seed))
        with emulator.emulated(**options) as session:
            tr = self.module("record").trace(*args, **launch, **extra, seed=seed)
        return emulated_trace(tr, session, self.simulated, modelled)

    def source_for(self, trace: Trace) -> "kernels.Snippet":
        """The code the player shows beside ``trace`` (the lines its steps highlight)."""
        return self.source(*self.regions_for(trace)) if self.regions_for else self.source()

    def animation(self, trace: Trace | NotTraced, **options):
        """The lesson's :class:`gpu_viz.widgets.Animation` of ``trace`` (a :class:`NotTraced` is
        returned as it is: its ``show()`` says what is not shown and why).

        Raises:
            TypeError: ``trace`` is not a Trace.  ValueError: it lacks what this lesson's player
                reads (another lesson's trace), naming its kernel.
        """
        if isinstance(trace, NotTraced):      # trace(missing_ok=True) without NVRTC: the note is the player
            return trace
        if not isinstance(trace, Trace):
            raise TypeError(f"{self.stem}: trace must be a Trace (from {self.stem.upper()}.trace()), "
                            f"got {type(trace).__name__}")
        try:
            return self.module("frames").animation(trace, self.source_for(trace).text, **options)
        except KeyError as exc:  # an array or parameter this lesson's frames read is not in it
            missing = exc.args[0] if exc.args else exc
            raise ValueError(f"{self.stem}: the {self.stem} player cannot show this trace of kernel {trace.kernel!r} "
                             f"(no {missing!r} in it): is it another lesson's? Make it with "
                             f"{self.stem.upper()}.trace()") from exc

    def show(self, trace: Trace | NotTraced | None = None, **options) -> None:
        """Display the player of ``trace`` (default: a new :meth:`trace`; where that needs the emulator
        and NVRTC is missing, the note saying what to install)."""
        self.animation(trace if trace is not None else self.trace(missing_ok=True), **options).show()


#: The producers a lesson trace can come from (:meth:`Lesson.trace`).
PRODUCERS = ("gpu", "emulator", "model")


@dataclasses.dataclass(frozen=True)
class NotTraced:
    """What :meth:`Lesson.trace` returns with ``missing_ok=True`` when the trace needs the emulator
    and NVRTC is missing (CPU mode without ``gpu-viz[emulator]``): no data, only why.  Falsy.  In a
    notebook it displays (``show()``, or as a cell's value) what is not shown and what to install.

    Attributes:
        lesson: the lesson's stem.  file: its ``kernels/`` file.  case: what the launch asked for, in
        words ("`histogram_racy`", "the `strided` rung"), or None.  reason: the NVRTCUnavailable message.
    """

    lesson: str
    file: str
    case: Optional[str]
    reason: str

    def __bool__(self) -> bool:
        return False

    def text(self) -> str:
        """Markdown: what is not shown, why, and what to install."""
        from .emulator import nvrtc

        return nvrtc.not_shown(f"the animation of {self.case or 'the kernel'} ({self.file}) running",
                               "or run on a GPU, where the silicon records it")

    def _repr_markdown_(self) -> str:
        return self.text()

    def show(self) -> None:
        """Display :meth:`text` (where an Animation's ``show()`` would display its player)."""
        from IPython.display import Markdown, display

        display(Markdown(self.text()))


#: Added to a model trace's provenance where the emulator would have run the kernel but NVRTC is missing.
EMULATOR_MISSING_NOTE = ("; the emulator, which would run the kernel's own PTX here, needs NVRTC "
                         "(pip install 'gpu-viz[emulator]')")
#: The most threads a CPU-mode trace runs in the emulator (a few seconds on a 2-core machine);
#: larger launches come from the CPU model.
MAX_EMULATED_THREADS = 1 << 14


def _sm_count_source(provenance: str) -> str:
    """``"; SM count: <label>"``: where the SM count a CPU-mode trace spreads its blocks over came from
    (the committed hardware record, or the spec sheet: :func:`gpu_viz.measure.records.lesson_device`),
    or "" when ``provenance`` already names it."""
    from .measure import records

    label = records.lesson_device()[1]
    return "" if label in provenance else f"; SM count: {label}"


def emulated_trace(tr: Trace, session, simulated: Tuple[str, ...] = (), modelled=None) -> Trace:
    """A trace the GPU producer made inside ``emulator.emulated()``, relabelled: source "emulator",
    the emulator's provenance (with the simulated registers named, and ``modelled``, the
    :class:`gpu_viz.device.DeviceInfo` whose SMs they spread over, as ``params["gpu"]``),
    ``simulated`` arrays listed, and the launches' hazards and counts in ``params["emulator"]``."""
    import dataclasses as _dc

    from .trace import EMULATOR_SOURCE

    regs = sorted({r for run in session.runs for r in run.simulated})
    over = ""
    if modelled is not None:
        over = f" over {modelled.name.replace('NVIDIA ', '')}'s {modelled.sm_count} SMs"
    prov = session.label() + (f"; {', '.join(regs)} simulated{over} (the emulator's scheduling model)" if regs else "")
    if modelled is not None:
        prov += _sm_count_source(prov)
    info = {"warp_instructions": sum(r.warp_instructions for r in session.runs),
            "hazards": [h.text() for r in session.runs for h in r.hazards],
            "approximate": sorted({a for r in session.runs for a in r.approximate})}
    params = {**tr.params, "emulator": info, **({"gpu": modelled.name} if modelled is not None else {})}
    return _dc.replace(tr, source=EMULATOR_SOURCE, provenance=prov, simulated=tuple(simulated), params=params)


#: The most elements, threads or blocks one lesson trace records.  A trace keeps a record per
#: element (or block) and the CPU model computes every one; the lessons teach with 64-2048, and
#: past this there is nothing more to see, only minutes of work and gigabytes of memory.
MAX_TRACE = 1 << 20
#: The most blocks the scheduling lesson launches (32x the deck's 2048; its player takes seconds there).
MAX_BLOCKS = 1 << 16
#: The longest per-block work the scheduling lesson asks of the GPU (cycles of spin, FMAs).
MAX_SPIN_CYCLES = 10**7
MAX_FMA_ITERS = 10**6
#: Loop trips of each branch in the divergence lesson.
MAX_ITERS = 4096


def _modelled_gpu(launch: Dict) -> Dict:
    """``launch`` plus, in CPU mode, ``info``: the GPU the CPU model models, the one the committed
    records were made on (records.lesson_device), so a model's %smid and the recorded numbers
    beside it describe one GPU, the one its caption names."""
    if not backend.has_gpu():
        from .measure import records

        launch["info"] = records.lesson_device()[0]
    return launch


def _vector_add_inputs(seed: int, n: int = 64, block: int = 64):
    from .model import vector_add as m

    n, block = m.check_launch(n, block, min_n=1)
    check_int("n", n, 1, MAX_TRACE)
    return (random_f32(n, seed), random_f32(n, seed + 1)), _modelled_gpu({"block": block})


def _vector_add_lines(snip, **_launch) -> Dict:
    from .model import vector_add as m

    return {"region_lines": snip.lines_of([needle for _label, needle in m.VECTOR_ADD_STEPS])}


def _divergence_inputs(seed: int, n: int = 64, block: int = 64, iters: int = 8,
                       kernel: str = "divergent_branch"):
    from .model import vector_add as m

    n, block = m.check_launch(n, block, min_n=1)
    check_int("n", n, 1, MAX_TRACE)
    iters = check_int("iters", iters, 0, MAX_ITERS)
    return (random_f32(n, seed),), {"block": block, "iters": iters, "kernel": kernel}


def _grid_stride_inputs(seed: int, n: int = _gs.DECK_N, grid: int = 1, block: int = _gs.DECK_THREADS,
                        alpha: float = 2.0):
    from .model import grid_stride as m

    n, grid, block = m.check_shape(n, grid, block)
    check_int("n", n, 0, MAX_TRACE)
    if grid * block > MAX_TRACE:
        raise ValueError(f"grid * block must be <= {MAX_TRACE} threads for a trace, got {grid} * {block}")
    return (random_f32(n, seed),), {"alpha": alpha, "grid": grid, "block": block}


def _grid_stride_lines(snip, **_launch) -> Dict:
    loop, body = snip.lines_of(["i += stride", "y[i] ="])
    return {"loop_line": loop, "body_line": body}


def _scheduling_inputs(seed: int, blocks: int = _sch.DECK_BLOCKS, threads: int = _sch.DEFAULT_THREADS,
                       spin_cycles: int = _sch.DEFAULT_SPIN, fma_iters: int = 0):
    # Python ints from here on: numpy integers would wrap in the model's products
    blocks, threads = check_int("blocks", blocks, 1, MAX_BLOCKS), check_int("threads", threads)
    spin_cycles = check_int("spin_cycles", spin_cycles, 0, MAX_SPIN_CYCLES)
    fma_iters = check_int("fma_iters", fma_iters, 0, MAX_FMA_ITERS)
    launch = {"blocks": blocks, "threads": threads, "spin_cycles": spin_cycles, "fma_iters": fma_iters}
    return (), _modelled_gpu(launch)


def _rmsnorm_deck_inputs(seed: int, d: int = 2048, block: int = 1024, variant: str = _rd.GUARDED,
                         prefill: bool = True, eps: float = _rd.DEFAULT_EPS, x=None, w=None):
    from .record.rmsnorm_deck import default_inputs

    if x is None:
        check_int("d", d, 1, MAX_TRACE)
        x, w_default = default_inputs(d, seed)
        w = w_default if w is None else w
    return (x, w), {"block": block, "variant": variant, "prefill": prefill, "eps": eps}


def _padded(n: int, block: int) -> int:
    return -(-n // block) * block


#: Past every size limit of every lesson.
_HUGE = 10**9

VECTOR_ADD = Lesson("vector_add", "03_warps_simt", ("vector_add",),
                    "64 elements need 64 threads -- exactly 2 warps; the whole vector is done in "
                    "six warp-instructions", _vector_add_inputs, _vector_add_lines,
                    simulated=("smid", "hw_warpid"),
                    threads=lambda n=64, block=64, **_: _padded(n, block),
                    cases=LessonCases(
                        refused=refusals(("n", _HUGE), ("n", 0), ("n", 64.0), ("block", 0), ("block", 2048)),
                        largest={"n": MAX_TRACE, "block": 256},
                        players=(("vector_add", {"seed": 11, "n": 64, "block": 64}, {}),),
                        sanitize=tuple({"n": n, "block": b} for n, b in ((64, 64), (1, 1), (70, 64), (1000, 96),
                                                                         (33, 1024))),
                        entry_points={"vector_add"}, max_registers=(32, 32)))
DIVERGENCE = Lesson("divergence", "03_warps_simt", ("branch",),
                    "lanes that disagree on a branch run one side, then the other", _divergence_inputs,
                    threads=lambda n=64, block=64, iters=8, **_: _padded(n, block) * max(1, iters // 8),
                    cases=LessonCases(
                        refused=refusals(("n", _HUGE), ("n", -5), ("n", 64.0), ("block", 2048), ("iters", _HUGE),
                                         ("iters", -1), ("kernel", "nope")),
                        largest={"n": MAX_TRACE, "block": 256},
                        players=(("divergence", {"seed": 12, "n": 64, "block": 64, "iters": 8}, {}),),
                        sanitize=tuple({"kernel": k, "n": n, "block": b, "iters": i} for k in _dv.DIVERGENCE_KERNELS
                                       for n, b, i in ((64, 64, 4), (70, 64, 3), (45, 45, 2), (300, 128, 5))),
                        entry_points={"divergent_branch", "uniform_branch"}, max_registers=(32, 32)))
GRID_STRIDE = Lesson("grid_stride", "06_grid_stride_loops", ("grid_stride",),
                     "2048 elements but only 1024 threads: each thread processes several elements in "
                     "sequence", _grid_stride_inputs, _grid_stride_lines,
                     threads=lambda n=_gs.DECK_N, grid=1, block=_gs.DECK_THREADS, **_: max(n, grid * block),
                     cases=LessonCases(
                         small={"n": 300, "grid": 2, "block": 128},
                         refused=refusals(("n", _HUGE), ("n", -1), ("grid", 1.5), ("block", 0), ("alpha", float("nan")),
                                          ("alpha", float("inf")), ("alpha", 1e39), ("alpha", "2"))
                         + (({"grid": 4096, "block": 1024}, "grid * block"),),   # 4M threads: past the trace limit
                         largest={"n": MAX_TRACE, "grid": 1024, "block": 1024},
                         players=(("grid_stride", {"seed": 13, "n": 2500, "grid": 1, "block": 1024}, {}),),
                         # n < threads, n % threads != 0, n == 0
                         sanitize=tuple({"n": n, "grid": g, "block": b, "alpha": 1.5} for n, g, b in (
                             (2048, 1, 1024), (5, 2, 4), (1025, 1, 1024), (0, 2, 64), (2500, 3, 96))),
                         entry_points={"scale_grid_stride"}, max_registers=(32, 64)))
SCHEDULING = Lesson("scheduling", "09_kernel_scheduling", ("scheduled_block",),
                    "Launch a grid of 2,048 blocks on 58 SMs. The GigaThread Engine fills all 58, and "
                    "the remaining blocks wait in a hardware queue.", _scheduling_inputs, cpu=("model",),
                    cases=LessonCases(
                        small={"blocks": 120, "threads": 128, "spin_cycles": 1000},
                        refused=refusals(("blocks", _HUGE), ("blocks", 0), ("threads", 2000),
                                         ("spin_cycles", _HUGE * 1000), ("spin_cycles", -1), ("spin_cycles", 1.5),
                                         ("fma_iters", _HUGE)),
                        largest={"blocks": MAX_BLOCKS, "threads": 1024},
                        players=(("scheduling", {"seed": 19, "blocks": 2048, "threads": 256, "spin_cycles": 20000},
                                  {"frames": 10}),),
                        # small grids, short spins (the producer checks smid < SMs and monotone timers)
                        sanitize=tuple({"blocks": g, "threads": t, "spin_cycles": s, "fma_iters": f}
                                       for g, t, s, f in ((64, 128, 2000, 0), (7, 32, 0, 100), (130, 1024, 500, 10))),
                        entry_points={"scheduled_block"}, max_registers=(32, None)))
def _rmsnorm_deck_regions(trace: Trace) -> Tuple[str, ...]:
    from .model import rmsnorm_deck as m

    return m.SOURCE_REGIONS[trace.params["variant"]]


RMSNORM_DECK = Lesson("rmsnorm_deck", "12_four_phase_trace", ("phase1", "phase2", "phase3", "phase4"),
                      "One block of 1024 threads turns one row of 2048 numbers into its normalized "
                      "output, in four phases", _rmsnorm_deck_inputs, regions_for=_rmsnorm_deck_regions,
                      threads=lambda d=2048, block=1024, **_: max(d, block),
                      cases=LessonCases(
                          small={"d": 64, "block": 64},
                          refused=refusals(("d", _HUGE), ("d", 0), ("block", 2048), ("eps", -1.0), ("eps", float("nan")),
                                           ("eps", float("inf")), ("eps", True), ("variant", "nope")),
                          largest={"d": MAX_TRACE, "block": 1024},
                          players=(("rmsnorm_deck", {"seed": 9, "d": 2048, "block": 1024}, {"warp": 5}),
                                   ("rmsnorm_deck_stale", {"seed": 4, "d": 2048, "block": 256, "variant": "deck",
                                                           "prefill": True},
                                    {"kinds": ("handoff", "w0"), "title": "The deck's phase 2 at 256 threads"})),
                          # guarded at any block; the deck's variant with prefill, or at 32 warps (below that,
                          # without prefill, it reads shared memory nobody wrote by design: initcheck says so)
                          sanitize=tuple({"d": d, "block": b, "variant": _rd.GUARDED, "prefill": pre}
                                         for d in (1, 33, 2048) for b in (1, 33, 96, 1024) for pre in (True, False))
                          + tuple({"d": d, "block": b, "variant": "deck", "prefill": pre}
                                  for d, b, pre in ((2048, 96, True), (300, 1024, False), (2048, 1024, True))),
                          entry_points={f"rmsnorm_{v}_{t}" for v in ("deck", "guarded") for t in ("f32", "f16", "bf16")},
                          max_registers=(64, 64)))

def _coalescing_inputs(seed: int, pattern: str = "stride 2", n: int = 256, block: int = 128):
    from .model import coalescing as m

    p, n, block, _grid = m.check_launch(pattern, n, block)
    x = random_f32(m.x_elements(p, n), seed).astype(p.dtype)
    return (x,), {"pattern": p.name, "n": n, "block": block}


#: The line of each coalescing kernel's load, as a needle in its region.
_COALESCING_LOADS = {"read_strided": "y[i] = *p", "copy_thread_major": "y[i] = x[i]", "copy_warp_major": "y[i] = x[i]",
                     "aos_x": "p[i].x", "soa_x": "px[i]", "copy_f16": "2 bytes a lane", "copy_f16x2": "4 bytes a lane",
                     "copy_f16x8": "16 bytes a lane"}


def _coalescing_lines(_snip, pattern: str = "stride 2", **_launch) -> Dict:
    from .model import coalescing as m

    p = m.pattern(pattern)
    return {"line": kernels.snippet(m.FILE, p.region).line_of(_COALESCING_LOADS[p.kernel])}


def _banks_inputs(seed: int, case: str = "tile 32x32", rows: int = 32, cols: int = 32):
    from .model import banks as m

    c, rows, cols, _grid, _block = m.check_launch(case, rows, cols)
    return (random_f32(rows * cols, seed),), {"case": c.name, "rows": rows, "cols": cols}


_BANK_LOADS = {"shared_stride": "= s[idx]", "transpose_tiled": "// a column: 1 bank", "transpose_padded": "// 32 banks"}


def _banks_lines(_snip, case: str = "tile 32x32", **_launch) -> Dict:
    from .model import banks as m

    c = m.case(case)
    return {"line": kernels.snippet(m.FILE, c.region).line_of(_BANK_LOADS[c.kernel])}


def _banks_threads(case: str = "tile 32x32", rows: int = 32, cols: int = 32, **_) -> int:
    from .model import banks as m

    _c, _r, _k, grid, block = m.check_launch(case, rows, cols)
    return int(np.prod(grid)) * int(np.prod(block))


def _races_inputs(seed: int, kernel: str = "histogram_racy", runs: int = 30, grid: int = 4, block: int = 128,
                  nbins: int = 256, n: int = 2048):
    from .record import races as r

    kernel, runs, grid, block, nbins = r.check_launch(kernel, runs, grid, block, nbins)
    n = check_int("n", n, 1, r.MAX_KEYS)
    keys = np.random.default_rng(seed).integers(0, nbins, n).astype(np.int32)
    return (keys,), {"kernel": kernel, "runs": runs, "grid": grid, "block": block, "nbins": nbins}


_RACE_LINES = {"histogram_racy": "bins[keys[i]] += 1", "histogram_atomic": "atomicAdd(&bins",
               "histogram_private": "atomicAdd(&local", "reverse_racy": "y[base + t] = s[",
               "reverse_synced": "__syncthreads();"}


def _races_lines(_snip, kernel: str = "histogram_racy", **_launch) -> Dict:
    from .record import races as r

    return {"line": kernels.snippet(r.FILE, kernel).line_of(_RACE_LINES[kernel])} if kernel in _RACE_LINES else {}


def _races_threads(runs: int = 30, grid: int = 4, block: int = 128, **_) -> int:
    return int(runs) * int(grid) * int(block)


def _ladder_inputs(seed: int, rung: str = "sequential", block: int = 64):
    from .record import reduction_ladder as r

    if rung not in r.TREE_RUNGS:
        raise ValueError(f"rung must be one of {r.TREE_RUNGS} (the tree rungs, whose steps are recorded), got {rung!r}")
    block = r.check_block(block)
    return (random_f32(block, seed),), {"rung_name": rung, "block": block}


def _ladder_lines(_snip, rung_name: str = "sequential", **_launch) -> Dict:
    from .record import reduction_ladder as r

    return {"line": kernels.snippet(r.FILE, rung_name).line_of("__fadd_rn(s[")}


COALESCING = Lesson("coalescing", "07_coalescing_and_banks", ("strided",),
                    "A warp's 32 loads of 4 consecutive bytes are one request for 4 sectors of 32 bytes; "
                    "spread them out and the same request moves up to 32", _coalescing_inputs, _coalescing_lines,
                    regions_for=lambda tr: (tr.params["region"],),
                    threads=lambda pattern="stride 2", n=256, block=128, **_: int(n),
                    cases=LessonCases(
                        small={"n": 64, "block": 64},
                        refused=refusals(("n", _HUGE), ("n", 0), ("n", 64.0), ("block", 2048), ("pattern", "nope")),
                        largest={"n": 1 << 16, "block": 1024},
                        players=(("coalescing", {"seed": 14, "pattern": "misaligned", "n": 256, "block": 128}, {}),),
                        sanitize=tuple({"pattern": name, "n": p.per_thread * k, "block": b}
                                       for name, p in _co.PATTERNS.items() for k, b in ((40, 32), (1000, 256))),
                        entry_points={"read_strided", "copy_thread_major", "copy_warp_major", "aos_x", "soa_x",
                                      "copy_f16", "copy_f16x2", "copy_f16x8"}))
BANKS = Lesson("banks", "07_coalescing_and_banks", ("tiled",),
               "Shared memory is 32 banks of 4 bytes: 32 lanes reading one bank take 32 wavefronts, "
               "a padded tile takes one", _banks_inputs, _banks_lines,
               regions_for=lambda tr: (tr.params["region"],), threads=_banks_threads,
               cases=LessonCases(
                   refused=refusals(("rows", _HUGE), ("cols", 0), ("rows", 1.5), ("case", "nope")),
                   largest={"rows": 256, "cols": 256},
                   players=(("banks", {"seed": 15, "case": "tile 32x32", "rows": 64, "cols": 96}, {}),),
                   # the transposes at edge shapes (partial tiles, one row)
                   sanitize=tuple({"case": name, "rows": r, "cols": c} for name, k in _bk.CASES.items()
                                  for r, c in (((32, 32),) if k.kernel == "shared_stride" else
                                               ((32, 32), (64, 96), (33, 70), (1, 5)))),
                   entry_points={"shared_stride", "transpose_naive", "transpose_tiled", "transpose_padded",
                                 "block_sum_smem32"}))
RACES = Lesson("races", "08_races_and_reduction", ("histogram_racy",),
               "bins[k]++ from many threads loses counts, a different number each run; atomicAdd loses none",
               _races_inputs, _races_lines, regions_for=lambda tr: (tr.kernel,), cpu=("emulator",),
               threads=_races_threads,
               emulator_options=lambda seed: {"policy": "random", "seed": seed},
               cases=LessonCases(
                   small={"kernel": "histogram_atomic", "runs": 2, "grid": 2, "block": 64, "nbins": 16, "n": 100},
                   refused=refusals(("runs", _HUGE), ("runs", 0), ("grid", _HUGE), ("block", 2048), ("nbins", 0),
                                    ("n", 0), ("kernel", "nope")),
                   # the largest launch CPU mode emulates (MAX_EMULATED_THREADS)
                   largest={"kernel": "histogram_atomic", "runs": 16, "grid": 8, "block": 128},
                   players=(("races", {"seed": 16, "kernel": "histogram_racy", "runs": 8, "grid": 4, "block": 128,
                                       "nbins": 256, "n": 2048}, {}),),
                   # the correct kernels only: the racy ones race by design (notebook 08 shows their
                   # outcomes), and racecheck rightly reports them
                   sanitize=({"kernel": "histogram_atomic", "runs": 3, "grid": 7, "block": 96, "nbins": 256, "n": 5000},
                             {"kernel": "histogram_private", "runs": 3, "grid": 7, "block": 96, "nbins": 256, "n": 5000},
                             {"kernel": "reverse_synced", "runs": 3, "grid": 5, "block": 200}),
                   entry_points={"histogram_racy", "histogram_atomic", "histogram_private", "reverse_racy",
                                 "reverse_synced"}))
REDUCTION_LADDER = Lesson("reduction_ladder", "08_races_and_reduction", ("sequential",),
                          "Each rung of the reduction changes one thing: divergence, bank conflicts, idle "
                          "threads, then shuffles and wide loads", _ladder_inputs, _ladder_lines,
                          regions_for=lambda tr: (tr.params["rung"],), cpu=("emulator",),
                          threads=lambda rung="sequential", block=64, **_: int(block),
                          cases=LessonCases(
                              small={"block": 32},
                              refused=refusals(("block", 96), ("block", 2048), ("block", 64.0), ("rung", "nope")),
                              largest={"block": 1024},
                              players=(("reduction_ladder", {"seed": 17, "rung": "strided", "block": 128}, {}),),
                              sanitize=tuple({"rung": r, "block": 128} for r in _rl.TREE_RUNGS),
                              entry_points={"reduce_interleaved", "reduce_strided", "reduce_sequential",
                                            "reduce_first_add", "reduce_shuffle", "reduce_vector"}))


def _reduction_inputs(seed: int, block: int = 96, corrected: bool = False, values: str = "ones"):
    corrected = check_bool("corrected", corrected)
    lo = 1 if corrected else 32
    block = check_int("block", block)
    if not lo <= block <= 1024:
        raise ValueError(f"block must be in [{lo}, 1024] for corrected={corrected}, got {block}"
                         + ("" if corrected else " (the seed's wrapper never picks fewer than 32 threads)"))
    if values not in REDUCTION_VALUES:
        raise ValueError(f"values must be one of {REDUCTION_VALUES}, got {values!r}")
    partials = np.ones(block, np.float32) if values == "ones" else random_f32(block, seed)
    return (partials,), {"corrected": corrected}


#: The partials of the reduction lesson: every one 1.0 (the total counts the partials that arrive:
#: the notebook's), or standard normal float32 from the seed.
REDUCTION_VALUES = ("ones", "random")

REDUCTION = Lesson("reduction", "12_four_phase_trace", ("seed_tree",),
                   "A halving tree that stops at 32 slots drops partials when the block is not a power of two: "
                   "at 96 threads, 32 of the 96 never reach the total", _reduction_inputs,
                   regions_for=lambda tr: ("fixed_tree" if tr.params["corrected"] else "seed_tree",),
                   # CPU mode shows the model (as notebook 12 always has); the emulator runs the same
                   # kernel from its PTX when asked, and the tests hold the two equal
                   cpu=("model", "emulator"), threads=lambda block=96, **_: int(block),
                   cases=LessonCases(
                       small={"block": 64},
                       refused=refusals(("block", 31), ("block", 2048), ("block", 64.0), ("corrected", 1),
                                        ("values", "nope"))
                       + (({"block": 0, "corrected": True}, "block"),),
                       largest={"block": 1024},
                       players=(("reduction", {"seed": 18, "block": 96}, {}),
                                ("reduction_fixed", {"seed": 18, "block": 96, "corrected": True}, {})),
                       sanitize=tuple({"block": b, "corrected": c, "values": "random"} for b, c in (
                           (32, False), (96, False), (1000, False), (1, True), (96, True), (1024, True))),
                       entry_points={"seed_reduce_trace", "block_reduce_all"}, max_registers=(64, None)))

#: The most warps the latency lesson puts on one warp scheduler (today's SMs hold at most 64 warps,
#: 16 per scheduler; more leaves room to ask how many would hide a long load).
MAX_SCHEDULER_WARPS = 256
#: The most warp-cycles (warps x cycles: the trace's states) one latency trace records.
MAX_WARP_CYCLES = 1 << 26


def _latency_inputs(seed: int, n_warps: int = 8, latency_cycles: int = 200, compute_per_load: int = 16,
                    loads_per_warp: int = 3, policy: str = "greedy", latency_source: str = "the deck's ~200 cycles"):
    n_warps = check_int("n_warps", n_warps, 1, MAX_SCHEDULER_WARPS)
    latency_cycles = check_int("latency_cycles", latency_cycles, 1)
    compute_per_load = check_int("compute_per_load", compute_per_load, 1)
    loads_per_warp = check_int("loads_per_warp", loads_per_warp, 1)
    if not isinstance(policy, str) or policy not in _lat.POLICIES:
        raise ValueError(f"policy must be one of {_lat.POLICIES}, got {policy!r}")
    if not isinstance(latency_source, str) or not latency_source.strip():
        raise TypeError(f"latency_source must be a non-empty str (where the latency came from), got {latency_source!r}")
    cycles = _lat.cycles_bound(n_warps, latency_cycles, compute_per_load, loads_per_warp)
    if cycles > _lat.MAX_CYCLES or n_warps * cycles > MAX_WARP_CYCLES:
        raise ValueError(
            f"n_warps={n_warps}, latency_cycles={latency_cycles}, compute_per_load={compute_per_load} and "
            f"loads_per_warp={loads_per_warp} may run {cycles:,} cycles ({n_warps * cycles:,} warp-cycles): a trace "
            f"holds at most {_lat.MAX_CYCLES:,} cycles and {MAX_WARP_CYCLES:,} warp-cycles; choose fewer warps, "
            "loads or cycles")
    return (), {"n_warps": n_warps, "latency_cycles": latency_cycles, "compute_per_load": compute_per_load,
                "loads_per_warp": loads_per_warp, "policy": policy, "latency_source": latency_source}


LATENCY = Lesson("latency", "04_latency_hiding", ("stream_read_loop",),
                 "While one warp waits hundreds of cycles for its load, the scheduler issues from the others: "
                 "with enough warps the cores never idle", _latency_inputs,
                 # no kernel of its own: a MODEL of one warp scheduler, beside the loop its warps run
                 gpu=False, file="memory.cu", cpu=("model",),
                 cases=LessonCases(
                     refused=refusals(("n_warps", _HUGE), ("n_warps", 0), ("n_warps", 8.0), ("latency_cycles", _HUGE),
                                      ("latency_cycles", 0), ("compute_per_load", 0), ("compute_per_load", _HUGE),
                                      ("loads_per_warp", _HUGE), ("loads_per_warp", 2.0), ("policy", "fifo"),
                                      ("latency_source", 3)),
                     largest={"n_warps": 64, "latency_cycles": 1000, "compute_per_load": 16, "loads_per_warp": 450},
                     players=(("latency", {"seed": 20, "n_warps": 8, "latency_cycles": 200, "compute_per_load": 16,
                                           "loads_per_warp": 2}, {"count": 12}),)))

#: Every animated lesson, by stem: the one list the tests, the players, the sanitizer and the build
#: checks read.
LESSONS: Dict[str, Lesson] = {les.stem: les for les in (VECTOR_ADD, DIVERGENCE, LATENCY, GRID_STRIDE, SCHEDULING,
                                                         RMSNORM_DECK, REDUCTION, COALESCING, BANKS, RACES,
                                                         REDUCTION_LADDER)}
