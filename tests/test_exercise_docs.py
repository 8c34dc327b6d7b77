"""What the README and the exercises API's docstrings say about exercises holds: how an id names its
topic (the registering module, listed with the notebooks it serves) and when a verdict is not graded
(a kernel runs in the emulator in CPU mode: ok is None only when it cannot run, or no answer yet)."""
import re
from collections import defaultdict
from pathlib import Path

import pytest

from gpu_viz import backend, emulator, exercises as ex

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _id_paragraph():
    m = re.search(r"^Ids are `topic\.name`.*?(?=\n\n)", README, re.S | re.M)
    assert m, "the README's exercises section no longer says how ids are formed"
    return m.group(0)


def test_readme_names_every_topic_that_is_not_its_notebooks_stem():
    """The README says the topic is the notebook's stem without its number, and names each module for
    which that is not so, with its notebooks (memory_access serves notebooks 07 and 08)."""
    stems = defaultdict(set)
    for e in ex.exercises():
        stems[e.id.split(".", 1)[0]].add(e.notebook)
    para = re.sub(r"\s+", " ", _id_paragraph())
    assert "stem without its number" in para
    for topic, notebooks in stems.items():
        if notebooks != {f"{n[:2]}_{topic}" for n in notebooks}:
            assert f"`{topic}`" in para and all(f"`{n}`" in para for n in notebooks), (topic, sorted(notebooks))


def test_the_topic_rule_the_readme_states_would_be_caught():
    """The check above is not vacuous: this course has a module serving two notebooks."""
    stems = defaultdict(set)
    for e in ex.exercises():
        stems[e.id.split(".", 1)[0]].add(e.notebook)
    assert any(len(n) > 1 for n in stems.values())


def test_check_docstring_says_kernels_are_graded_in_cpu_mode():
    doc = re.sub(r"\s+", " ", ex.check.__doc__)
    assert "a kernel exercise in CPU mode" not in doc and "NVRTC" in doc
    assert "kernel exercise in CPU mode" not in re.sub(r"\s+", " ", ex.Verdict.__doc__)


@pytest.mark.skipif(not emulator.available(), reason="NVRTC is not installed (the emulator's compiler)")
def test_a_kernel_exercise_is_graded_in_cpu_mode(monkeypatch):
    """What the docstring says: in CPU mode the emulator grades a kernel (ok True or False, never None)."""
    monkeypatch.setattr(backend, "_cached", backend.Backend(mode="cpu", reason="test", cause=backend.CAUSE_FORCED_CPU))
    from gpu_viz.exercises.core import exercise_source

    assert ex.check("warps_simt.vector_add", exercise_source("vector_add.solution")).ok is True
    assert ex.check("warps_simt.vector_add", exercise_source("vector_add.start")).ok is False
