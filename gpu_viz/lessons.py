"""One object per traced lesson: its kernel file and region, its two producers, its frames.

    from gpu_viz.lessons import VECTOR_ADD
    tr = VECTOR_ADD.trace(n=64, block=64)   # the silicon's record on a GPU, else the CPU model's
    VECTOR_ADD.show(tr)                     # the player, the taught source beside it

A lesson named ``<stem>`` reads ``kernels/<stem>.cu`` and wires ``gpu_viz.record.<stem>`` (GPU),
``gpu_viz.model.<stem>`` (CPU) and ``gpu_viz.frames.<stem>``: each producer module has a
``trace(*inputs, **launch)`` returning the same :class:`gpu_viz.trace.Trace`, each frames module
an ``animation(trace, source, ...)``.  A notebook asks the lesson; it never picks a producer.
Fresh random inputs come with their seed (``Trace.params["seed"]``), so a failing check replays.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable, Dict, Optional, Tuple

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

    def trace(self, seed: Optional[int] = None, **launch) -> Trace:
        """Fresh inputs (``seed``: None = fresh entropy, kept in the Trace; else an int >= 0), then
        the silicon's record on a GPU, else the CPU model's; its ``provenance`` says which.

        Raises:
            TypeError / ValueError: naming ``seed`` or the launch argument that is not as expected.
        """
        seed = new_seed() if seed is None else check_int("seed", seed, minimum=0)
        args, launch = self.inputs(seed, **launch)
        extra = self.source_lines(self.source(), **launch) if self.source_lines else {}
        layer = "record" if self.gpu and backend.has_gpu() else "model"
        return self.module(layer).trace(*args, **launch, **extra, seed=seed)

    def source_for(self, trace: Trace) -> "kernels.Snippet":
        """The code the player shows beside ``trace`` (the lines its steps highlight)."""
        return self.source(*self.regions_for(trace)) if self.regions_for else self.source()

    def animation(self, trace: Trace, **options):
        """The lesson's :class:`gpu_viz.widgets.Animation` of ``trace``."""
        return self.module("frames").animation(trace, self.source_for(trace).text, **options)

    def show(self, trace: Optional[Trace] = None, **options) -> None:
        """Display the player of ``trace`` (default: a new :meth:`trace`)."""
        self.animation(trace if trace is not None else self.trace(), **options).show()


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

    m.check_launch(n, block, min_n=1)
    check_int("n", n, 1, MAX_TRACE)
    return (random_f32(n, seed), random_f32(n, seed + 1)), _modelled_gpu({"block": block})


def _vector_add_lines(snip, **_launch) -> Dict:
    from .model import vector_add as m

    return {"region_lines": snip.lines_of([needle for _label, needle in m.VECTOR_ADD_STEPS])}


def _divergence_inputs(seed: int, n: int = 64, block: int = 64, iters: int = 8,
                       kernel: str = "divergent_branch"):
    from .model import vector_add as m

    m.check_launch(n, block, min_n=1)
    check_int("n", n, 1, MAX_TRACE)
    check_int("iters", iters, 0, MAX_ITERS)
    return (random_f32(n, seed),), {"block": block, "iters": iters, "kernel": kernel}


def _grid_stride_inputs(seed: int, n: int = _gs.DECK_N, grid: int = 1, block: int = _gs.DECK_THREADS,
                        alpha: float = 2.0):
    from .model import grid_stride as m

    m.check_shape(n, grid, block)
    check_int("n", n, 0, MAX_TRACE)
    if grid * block > MAX_TRACE:
        raise ValueError(f"grid * block must be <= {MAX_TRACE} threads for a trace, got {grid} * {block}")
    return (random_f32(n, seed),), {"alpha": alpha, "grid": grid, "block": block}


def _grid_stride_lines(snip, **_launch) -> Dict:
    loop, body = snip.lines_of(["i += stride", "y[i] ="])
    return {"loop_line": loop, "body_line": body}


def _scheduling_inputs(seed: int, blocks: int = _sch.DECK_BLOCKS, threads: int = _sch.DEFAULT_THREADS,
                       spin_cycles: int = _sch.DEFAULT_SPIN, fma_iters: int = 0):
    check_int("blocks", blocks, 1, MAX_BLOCKS)
    check_int("spin_cycles", spin_cycles, 0, MAX_SPIN_CYCLES)
    check_int("fma_iters", fma_iters, 0, MAX_FMA_ITERS)
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


VECTOR_ADD = Lesson("vector_add", "03_warps_simt", ("vector_add",),
                    "64 elements need 64 threads -- exactly 2 warps; the whole vector is done in "
                    "six warp-instructions", _vector_add_inputs, _vector_add_lines)
DIVERGENCE = Lesson("divergence", "03_warps_simt", ("branch",),
                    "lanes that disagree on a branch run one side, then the other", _divergence_inputs)
GRID_STRIDE = Lesson("grid_stride", "06_grid_stride_loops", ("grid_stride",),
                     "2048 elements but only 1024 threads: each thread processes several elements in "
                     "sequence", _grid_stride_inputs, _grid_stride_lines)
SCHEDULING = Lesson("scheduling", "07_kernel_scheduling", ("scheduled_block",),
                    "Launch a grid of 2,048 blocks on 58 SMs. The GigaThread Engine fills all 58, and "
                    "the remaining blocks wait in a hardware queue.", _scheduling_inputs)
def _rmsnorm_deck_regions(trace: Trace) -> Tuple[str, ...]:
    from .model import rmsnorm_deck as m

    return m.SOURCE_REGIONS[trace.params["variant"]]


RMSNORM_DECK = Lesson("rmsnorm_deck", "09_four_phase_trace", ("phase1", "phase2", "phase3", "phase4"),
                      "One block of 1024 threads turns one row of 2048 numbers into its normalized "
                      "output, in four phases", _rmsnorm_deck_inputs, regions_for=_rmsnorm_deck_regions)

#: Every traced lesson, by stem.
LESSONS: Dict[str, Lesson] = {les.stem: les for les in (VECTOR_ADD, DIVERGENCE, GRID_STRIDE, SCHEDULING,
                                                         RMSNORM_DECK)}
