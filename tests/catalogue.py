"""The kernel exercises' catalogue: ``tests/exercise_catalogue/<exercise id>/*.cu``, right and wrong
kernels, each headed ``// expect: correct`` or ``// expect: <a fragment of the message>``.  Found by
exercise id, so a new kernel exercise brings its own folder and nothing here changes."""
import re
from pathlib import Path
from typing import List, Tuple

from gpu_viz import exercises as ex
from gpu_viz.exercises.core import KERNEL

CATALOGUE = Path(__file__).resolve().parent / "exercise_catalogue"
#: Exercises graded by another's task on another starting code: fix_deck is the block_sum task (the
#: same kernel name, launches and checks) started from the deck's code, so one catalogue serves both.
SHARED = {"four_phase_trace.fix_deck": "four_phase_trace.block_sum"}


def kernel_exercises() -> List[str]:
    return [e.id for e in ex.exercises() if e.kind == KERNEL]


def folder(eid: str) -> Path:
    """The catalogue folder that grades exercise ``eid`` (its own, or the one it shares)."""
    return CATALOGUE / SHARED.get(eid, eid)


def entries(eid: str) -> List[Tuple[Path, str]]:
    """(kernel file, "correct" or the fragment its verdict must name) for exercise ``eid``."""
    out = []
    for f in sorted(folder(eid).glob("*.cu")):
        m = re.match(r"// expect: (.*)", f.read_text(encoding="utf-8"))
        assert m, f"{f}: no '// expect:' header"
        out.append((f, m.group(1).strip()))
    return out


def code_of(cell: str) -> str:
    """The CUDA source inside an exercise's code cell (``code = r'''...'''``)."""
    m = re.search(r"r'''\n?(.*?)'''", cell, re.S)
    assert m, cell[:200]
    return m.group(1)
