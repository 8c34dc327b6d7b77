"""What every exercise shares: the :class:`Verdict` a checker returns, the :class:`Exercise` a
notebook cell calls, the registry, and where the facts an exercise gives come from.

A checker grades an answer and, when it is wrong, names the likely mistake (GPU-Puzzles style:
"you divided by the threads of a block, not of an SM").  In CPU mode the facts and the run come
from the CPU models and the committed records (labelled with their GPU and date); on a GPU they
are read and run on the silicon.  Kernel exercises run on the silicon on a GPU and in the PTX
emulator in CPU mode; their verdict is ``ok is None`` only when the kernel cannot run here (no
GPU and no NVRTC to compile it for the emulator) or there is no answer yet.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Dict, List, Optional

from .. import backend, device

#: The kinds of exercise (DESIGN.md section 7).
PREDICT = "predict-then-run"
KERNEL = "write-the-kernel"
MEASURE = "change-and-measure"
KINDS = (PREDICT, KERNEL, MEASURE)


@dataclasses.dataclass
class Verdict:
    """A checker's answer.

    Attributes:
        exercise: the exercise id ("kernel_scheduling.doubling").
        ok: True (right), False (wrong: ``message`` names the likely mistake), None (not graded
            here: no answer yet, or a kernel exercise that cannot run here -- no GPU and no NVRTC
            for the emulator).
        message: one or two sentences for the learner.
        details: further lines (the run the answer was checked against, with its provenance).
        solution: the verdict of a reference solution (:meth:`require`): it shows as one labelled
            line, so a hidden solution cell run by "Run all" prints nothing the learner could take
            for the verdict on their own answer in the cell above.
    """

    exercise: str
    ok: Optional[bool]
    message: str
    details: List[str] = dataclasses.field(default_factory=list)
    solution: bool = dataclasses.field(default=False, compare=False)
    #: A short reason a verdict is not graded here ("needs a GPU runtime"), for the solution's line.
    not_graded_because: str = dataclasses.field(default="", compare=False)
    #: (task, program, case, inputs) of a kernel exercise's failing launch: :meth:`show` replays it.
    replay: object = dataclasses.field(default=None, compare=False, repr=False)

    def text(self) -> str:
        if self.solution:
            why = "passes" if self.ok else (
                f"not run here ({self.not_graded_because or self.message.split(';')[0].rstrip('.')})")
            return f"[{self.exercise}] reference solution: {why}"
        mark = {True: "correct", False: "not yet", None: "not graded"}[self.ok]
        return "\n".join([f"[{self.exercise}] {mark}: {self.message}"] + [f"  {d}" for d in self.details])

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:  # a notebook cell's last expression shows the verdict as text
        return self.text()

    def show(self, **options) -> None:
        """Play the learner's run of the launch this verdict is about (a kernel exercise), in the
        emulator, with the failing elements and lanes marked.  Prints why when there is none."""
        if self.replay is None:
            print(f"[{self.exercise}] no run to show (only kernel exercises that ran have one)")
            return
        from ..frames import run as run_frames

        run_frames.replay(self, **options).show()

    def require(self) -> "Verdict":
        """The reference solutions' check: raise AssertionError (the full verdict) when the answer
        is wrong; otherwise this verdict marked ``solution``, which shows as one line
        ("[kernel_scheduling.waves] reference solution: passes").  A verdict that could not be graded here
        (``ok is None``) passes, its line naming why."""
        if self.ok is False:
            raise AssertionError(self.text())
        return dataclasses.replace(self, solution=True)


@dataclasses.dataclass(frozen=True)
class Exercise:
    """One exercise.

    Attributes:
        id: "topic.name", topic the name of the module that registers it (``warps_simt``): an id
            survives a renumbering of the notebooks.
        notebook: the notebook stem it sits in ("09_kernel_scheduling").
        kind: one of :data:`KINDS`.
        title: a short name.
        task: the task text (markdown) the learner reads; ``{given}`` is not substituted, the
            exercise cell prints the facts with :func:`given`.
        placeholder: the learner's code cell (calls the checker with an unfilled answer).
        solution: the reference answer's cell (the tests execute it and require a pass).
        before: the notebook cell the exercise is inserted before (the first line of the heading
            that starts the next section); None = at the end.
        given: ``given() -> dict`` the facts the task needs (from this GPU or the record / model).
        check: ``check(answer, **options) -> Verdict``.
        mistakes: the classic wrong answers the checker names (for the report and the tests).
    """

    id: str
    notebook: str
    kind: str
    title: str
    task: str
    placeholder: str
    solution: str
    before: Optional[str]
    given: Callable[[], Dict]
    check: Callable[..., Verdict]
    mistakes: tuple = ()


REGISTRY: Dict[str, Exercise] = {}


def register(ex: Exercise) -> Exercise:
    """Add ``ex`` to the registry; called at import by the topic module that defines it.

    Raises:
        ValueError: an unknown kind, an id registered twice, or an id that does not start with the
            registering module's name ("warps_simt.vector_add" from ``warps_simt``).
    """
    import sys

    topic = sys._getframe(1).f_globals.get("__name__", "").rsplit(".", 1)[-1]
    if ex.id.split(".", 1)[0] != topic or "." not in ex.id:
        raise ValueError(f"exercise id {ex.id!r} must be '{topic}.<name>' (the module that registers it)")
    if ex.kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {ex.kind!r}")
    if ex.id in REGISTRY:
        raise ValueError(f"exercise {ex.id!r} is registered twice")
    REGISTRY[ex.id] = ex
    return ex


def get(exercise_id: str) -> Exercise:
    """The exercise ``exercise_id``; KeyError naming the ids that exist."""
    _load_all()
    if exercise_id not in REGISTRY:
        raise KeyError(f"no exercise {exercise_id!r}; exercises: {sorted(REGISTRY)}")
    return REGISTRY[exercise_id]


def _load_all() -> None:
    """Import every module of the package: each notebook's module registers its exercises (no list
    of them is kept anywhere)."""
    import importlib
    import pkgutil
    from pathlib import Path

    package = __name__.rsplit(".", 1)[0]
    for m in pkgutil.iter_modules([str(Path(__file__).resolve().parent)]):
        if not m.name.startswith("_"):
            importlib.import_module(f"{package}.{m.name}")


def exercise_source(name: str) -> str:
    """The CUDA of an exercise, ``kernels/exercises/<name>.cu`` (a starter, a solution, the deck's
    version), as on disk.

    Raises:
        FileNotFoundError: naming the files that exist.
    """
    from ..kernels import KERNEL_DIR

    path = KERNEL_DIR / "exercises" / f"{name}.cu"
    if not path.is_file():
        have = sorted(p.stem for p in (KERNEL_DIR / "exercises").glob("*.cu"))
        raise FileNotFoundError(f"no exercise source {name!r} in {path.parent}; there are {have}")
    return path.read_text(encoding="utf-8")


def exercises(notebook: Optional[str] = None) -> List[Exercise]:
    """Every exercise (of ``notebook``, a stem like "03_warps_simt"), in id order."""
    _load_all()
    return [REGISTRY[k] for k in sorted(REGISTRY) if notebook is None or REGISTRY[k].notebook == notebook]


# -- where the facts come from ---------------------------------------------------------------------

def live() -> bool:
    return backend.has_gpu()


def hardware_record() -> Optional[Dict]:
    """The newest committed hardware record (CPU mode's one GPU), or None."""
    from ..measure import records

    return records.recorded_hardware()[0]


def info() -> device.DeviceInfo:
    """The GPU an exercise is about: :func:`gpu_viz.measure.records.lesson_device` (this one on a
    GPU; in CPU mode the GPU of the newest committed hardware record, so the facts and the
    recorded numbers describe one GPU; else the deck's L4 spec sheet)."""
    from ..measure import records

    return records.lesson_device()[0]


def source_label() -> str:
    """Where an exercise's facts came from, for the verdict's details."""
    if live():
        return backend.live_label()
    rec = hardware_record()
    if rec:
        from ..measure import records

        return f"CPU mode: {records.label(rec)}, and the CPU models of that GPU"
    return backend.MODEL_LABEL


def no_answer(exercise_id: str, what: str) -> Verdict:
    return Verdict(exercise_id, None, f"no answer yet: replace the None with {what}.")


class AnswerKindError(TypeError, ValueError):
    """An answer of the wrong kind (a string for a number, a number for a pair, inf):
    :func:`gpu_viz.exercises.check` turns it into a "not yet" verdict naming what was expected."""


def as_number(exercise_id: str, answer, what: str) -> Optional[float]:
    """``answer`` as a finite float, or None when it is None.

    Raises:
        AnswerKindError: ``answer`` is not a number (a bool, a string), or is one that is no finite
            float (NaN, inf, ``10**400``, ``Decimal('1e999')``): the verdict names what was expected.
    """
    if answer is None:
        return None
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) and not hasattr(answer, "__float__"):
        raise AnswerKindError(f"{exercise_id}: the answer must be a number ({what}), got {type(answer).__name__} {answer!r}")
    try:
        v = float(answer)
    except (ArithmeticError, TypeError, ValueError):   # 10**400: OverflowError; Decimal('sNaN'): ValueError
        v = float("nan")
    if not math.isfinite(v):
        shown = repr(answer) if len(repr(answer)) <= 40 else f"{repr(answer)[:20]}...{repr(answer)[-8:]}"
        raise AnswerKindError(f"{exercise_id}: the answer must be a finite number ({what}), got {shown}")
    return v


def close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * abs(b)


#: How far off a wrong number is, said as a band (upper bound of ``max(v / want, want / v)``, words),
#: never as the ratio itself: "1 is 127x too small" gives the answer away (1 x 127).  The bands are
#: wide and their edges are not the factors unit slips make (2, 10, 1e3, 1e6), so a unit slip lands
#: well inside one and its band names the slip to look for.
_BANDS = (
    (1.5, "but within 1.5x: recheck each factor"),
    (3.0, "off by 1.5x to 3x: a missing or extra small factor (read and written? the element's bytes?)"),
    (30.0, "off by 3x to 30x: a missing or extra factor, or a power of ten"),
    (300.0, "off by 30x to 300x: a factor or a unit is off"),
    (3e4, "off by 300x to 30,000x: a unit prefix is off (milli for micro, K for none?)"),
    (3e7, "off by 30,000x to 30,000,000x: two unit prefixes are off (micro for none, M for none?)"),
)


def far_off(v: float, want: float) -> str:
    """How far ``v`` is from ``want`` (both non-zero, same sign), in words: "too small, off by 3x to
    30x: ..." (the direction, a band and the slip it suggests), never a ratio from which ``want``
    follows."""
    ratio = v / want
    direction = "too large" if ratio > 1 else "too small"
    off = max(ratio, 1 / ratio)
    for top, words in _BANDS:
        if off < top:
            return f"{direction}, {words}"
    return f"{direction}, off by more than {_BANDS[-1][0]:,.0f}x: recheck the formula and every unit"


def grade_number(exercise_id: str, answer, want: float, rtol: float, what: str,
                 mistakes: Dict[str, float], details: List[str], small_count: bool = False) -> Verdict:
    """Grade a number: right within ``rtol``; else the first of ``mistakes`` (message -> the value
    that mistake gives) it matches, else its direction and how far off it is as a band
    (:func:`far_off`; ``small_count``: the direction alone, for a count small enough that any band
    narrows it to a few candidates)."""
    v = as_number(exercise_id, answer, what)
    if v is None:
        return Verdict(exercise_id, None, f"no answer yet: replace the None with {what}.", details)
    if close(v, want, rtol):
        return Verdict(exercise_id, True, f"{v:,.6g} is right ({what}).", details)
    for msg, value in mistakes.items():
        if value is not None and close(v, value, max(rtol, 1e-9)):
            return Verdict(exercise_id, False, f"{v:,.6g}: {msg}", details)
    if v == 0 or want == 0 or (v < 0) != (want < 0):
        how = "is not it" if v == 0 else "has the wrong sign" if want != 0 else "is off"
        return Verdict(exercise_id, False, f"{v:,.6g} {how} ({what}); recheck each factor and its unit.", details)
    if small_count:
        size = f"{'too large' if v > want else 'too small'}: recheck each factor"
    else:
        size = far_off(v, want)
    return Verdict(exercise_id, False, f"{v:,.6g} ({what}) is {size}.", details)
