"""One object per traced lesson: its kernel file and region, its two producers, its frames.

    from gpu_viz.lessons import VECTOR_ADD
    tr = VECTOR_ADD.trace(n=64, block=64)   # the silicon's record on a GPU, else the CPU model's
    VECTOR_ADD.show(tr)                     # the player, the taught source beside it

A lesson named ``<stem>`` reads ``kernels/<stem>.cu`` and wires ``gpu_viz.record.<stem>`` (GPU),
``gpu_viz.model.<stem>`` (CPU) and ``gpu_viz.frames.<stem>``: each producer module has a
``trace(*inputs, **launch)`` returning the same :class:`gpu_viz.trace.Trace`, each frames module
an ``animation(trace, source, ...)``.  A notebook asks the lesson; it never picks a producer.
Fresh random inputs come with their seed (``Trace.params["seed"]``), so a failing check replays.

Producers, in the order :meth:`Lesson.trace` tries them:

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
from typing import Callable, Dict, Optional, Tuple

import numpy as np

from . import backend, kernels
from .check import check_int, new_seed, random_f32
from .model import grid_stride as _gs
from .model import rmsnorm_deck as _rd
from .model import scheduling as _sch
from .trace import Trace


@dataclasses.dataclass(frozen=True)
class Lesson:
    """A traced lesson.

    Attributes:
        stem: the name shared by ``kernels/<stem>.cu`` and ``gpu_viz.{record,model,frames}.<stem>``.
        notebook: the notebook that teaches it.
        regions: the regions of ``kernels/<stem>.cu`` its player shows (joined in order).
        claim: what the deck says, shown beside the live numbers.
        inputs: ``inputs(seed, **launch) -> (args, launch)``: fresh inputs for the producers.
        source_lines: ``source_lines(snippet, **launch) -> dict`` of extra producer keywords that
            point into the shown source (e.g. the lines its steps highlight).
        gpu: whether a GPU producer exists.
        file: the kernel file when it is not ``<stem>.cu``.
        regions_for: ``regions_for(trace) -> regions`` when the code shown depends on the trace
            (the four phases: the guarded variant's phase 2 is reduce.cuh's).
        cpu: the CPU producers to use, in order ("emulator", "model").
        simulated: the arrays of the trace that only silicon knows (``%smid`` ...): in an emulated
            trace they come from the emulator's named model and are listed in ``Trace.simulated``.
        threads: ``threads(**launch) -> int``, the threads a launch runs (to choose the emulator).
        emulator_options: ``emulator_options(seed) -> dict`` of launch options for the emulated
            session (e.g. ``{"policy": "random", "seed": seed}``: seeded warp interleavings).
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
            RuntimeError: such a lesson in CPU mode without NVRTC (the emulator's compiler).
        """
        if self.gpu and backend.has_gpu():
            return "gpu"
        if "emulator" in self.cpu and self.gpu:
            from . import emulator

            small = self.threads is None or self.threads(**launch) <= MAX_EMULATED_THREADS
            if emulator.available() and small:
                return "emulator"
            if "model" not in self.cpu:
                if not emulator.available():
                    raise RuntimeError(f"{self.stem}: CPU mode runs this lesson's kernel in the emulator, which needs "
                                       "NVRTC (pip install 'gpu-viz[emulator]'), or use a GPU runtime")
                raise ValueError(f"{self.stem}: in CPU mode the emulator runs at most {MAX_EMULATED_THREADS:,} threads "
                                 f"for a trace (a few seconds), and this launch asks for {self.threads(**launch):,}: "
                                 "choose a smaller one")
        return "model"

    def trace(self, seed: Optional[int] = None, producer: Optional[str] = None, **launch) -> Trace:
        """Fresh inputs (``seed``: None = fresh entropy, kept in the Trace; else an int >= 0), then
        the silicon's record on a GPU; in CPU mode the emulator's run of the same traced kernel, or
        the CPU model's; its ``source`` and ``provenance`` say which.  ``producer`` forces one
        ("gpu", "emulator", "model").

        Raises:
            TypeError / ValueError: naming ``seed``, ``producer`` or the launch argument that is not
            as expected.  GPUUnavailable: ``producer="gpu"`` in CPU mode.
        """
        seed = new_seed() if seed is None else check_int("seed", seed, minimum=0)
        if producer is not None and producer not in PRODUCERS:
            raise ValueError(f"producer must be one of {PRODUCERS} or None, got {producer!r}")
        args, launch = self.inputs(seed, **launch)
        extra = self.source_lines(self.source(), **launch) if self.source_lines else {}
        which = producer or self.producer(**launch)
        if which == "gpu":
            backend.require_gpu(f"the {self.stem} trace on the GPU")
            return self.module("record").trace(*args, **launch, **extra, seed=seed)
        if which == "model":
            if "model" not in self.cpu:
                raise ValueError(f"{self.stem} has no CPU model: in CPU mode its kernel runs in the emulator "
                                 f"(producer='emulator')")
            return self.module("model").trace(*args, **launch, **extra, seed=seed)
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

    def animation(self, trace: Trace, **options):
        """The lesson's :class:`gpu_viz.widgets.Animation` of ``trace``.

        Raises:
            TypeError: ``trace`` is not a Trace.  ValueError: it lacks what this lesson's player
                reads (another lesson's trace), naming its kernel.
        """
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

    def show(self, trace: Optional[Trace] = None, **options) -> None:
        """Display the player of ``trace`` (default: a new :meth:`trace`)."""
        self.animation(trace if trace is not None else self.trace(), **options).show()


#: The producers a lesson trace can come from (:meth:`Lesson.trace`).
PRODUCERS = ("gpu", "emulator", "model")
#: The most threads a CPU-mode trace runs in the emulator (a few seconds on a 2-core machine);
#: larger launches come from the CPU model.
MAX_EMULATED_THREADS = 1 << 14


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


VECTOR_ADD = Lesson("vector_add", "03_warps_simt", ("vector_add",),
                    "64 elements need 64 threads -- exactly 2 warps; the whole vector is done in "
                    "six warp-instructions", _vector_add_inputs, _vector_add_lines,
                    simulated=("smid", "hw_warpid"),
                    threads=lambda n=64, block=64, **_: _padded(n, block))
DIVERGENCE = Lesson("divergence", "03_warps_simt", ("branch",),
                    "lanes that disagree on a branch run one side, then the other", _divergence_inputs,
                    threads=lambda n=64, block=64, iters=8, **_: _padded(n, block) * max(1, iters // 8))
GRID_STRIDE = Lesson("grid_stride", "06_grid_stride_loops", ("grid_stride",),
                     "2048 elements but only 1024 threads: each thread processes several elements in "
                     "sequence", _grid_stride_inputs, _grid_stride_lines,
                     threads=lambda n=_gs.DECK_N, grid=1, block=_gs.DECK_THREADS, **_: max(n, grid * block))
SCHEDULING = Lesson("scheduling", "09_kernel_scheduling", ("scheduled_block",),
                    "Launch a grid of 2,048 blocks on 58 SMs. The GigaThread Engine fills all 58, and "
                    "the remaining blocks wait in a hardware queue.", _scheduling_inputs, cpu=("model",))
def _rmsnorm_deck_regions(trace: Trace) -> Tuple[str, ...]:
    from .model import rmsnorm_deck as m

    return m.SOURCE_REGIONS[trace.params["variant"]]


RMSNORM_DECK = Lesson("rmsnorm_deck", "12_four_phase_trace", ("phase1", "phase2", "phase3", "phase4"),
                      "One block of 1024 threads turns one row of 2048 numbers into its normalized "
                      "output, in four phases", _rmsnorm_deck_inputs, regions_for=_rmsnorm_deck_regions,
                      threads=lambda d=2048, block=1024, **_: max(d, block))

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
                    threads=lambda pattern="stride 2", n=256, block=128, **_: int(n))
BANKS = Lesson("banks", "07_coalescing_and_banks", ("tiled",),
               "Shared memory is 32 banks of 4 bytes: 32 lanes reading one bank take 32 wavefronts, "
               "a padded tile takes one", _banks_inputs, _banks_lines,
               regions_for=lambda tr: (tr.params["region"],), threads=_banks_threads)
RACES = Lesson("races", "08_races_and_reduction", ("histogram_racy",),
               "bins[k]++ from many threads loses counts, a different number each run; atomicAdd loses none",
               _races_inputs, _races_lines, regions_for=lambda tr: (tr.kernel,), cpu=("emulator",),
               threads=_races_threads,
               emulator_options=lambda seed: {"policy": "random", "seed": seed})
REDUCTION_LADDER = Lesson("reduction_ladder", "08_races_and_reduction", ("sequential",),
                          "Each rung of the reduction changes one thing: divergence, bank conflicts, idle "
                          "threads, then shuffles and wide loads", _ladder_inputs, _ladder_lines,
                          regions_for=lambda tr: (tr.params["rung"],), cpu=("emulator",),
                          threads=lambda rung="sequential", block=64, **_: int(block))

#: Every traced lesson, by stem.
LESSONS: Dict[str, Lesson] = {les.stem: les for les in (VECTOR_ADD, DIVERGENCE, GRID_STRIDE, SCHEDULING,
                                                         RMSNORM_DECK, COALESCING, BANKS, RACES,
                                                         REDUCTION_LADDER)}
