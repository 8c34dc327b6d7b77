"""What the notebooks say about themselves matches what they do and what the records hold.

Each test is a class of statement a reader caught being untrue: a note that names the wrong GPU
for CPU mode, a number quoted two ways with no word why, a claim no record backs.
"""
import re
from pathlib import Path

import nbformat
import pytest

from gpu_viz import backend
from gpu_viz.measure import records

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def texts(path):
    """(cell id, where, text) of a notebook's markdown and speaker notes."""
    nb = nbformat.read(str(path), as_version=4)
    for c in nb.cells:
        if c.cell_type == "markdown":
            yield c.get("id"), "markdown", c.source
        notes = c.metadata.get("speaker_notes")
        if notes:
            yield c.get("id"), "notes", notes


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_text_says_cpu_mode_uses_the_l4_when_a_record_names_another_gpu(path, monkeypatch):
    """In CPU mode the lessons describe the committed hardware record's GPU (records.lesson_device);
    a sentence about CPU mode must not say the L4 spec sheet is what runs, unless it is the
    fallback for a checkout with no record ("only when no record ...")."""
    monkeypatch.setattr(backend, "has_gpu", lambda: False)
    info, _ = records.lesson_device()
    if "L4" in info.name:
        pytest.skip("the committed records are an L4's")
    bad = []
    for cid, where, text in texts(path):
        for sentence in re.split(r"(?<=[.;])\s", text):
            fallback = re.search(r"\b(only when|without a record|when no record|if no record)", sentence)
            if "CPU mode" in sentence and re.search(r"\bL4 spec sheet|model of the L4|L4's", sentence) \
                    and not fallback:
                bad.append(f"{cid} ({where}): {sentence.strip()[:160]}")
    assert not bad, "\n".join(bad)
