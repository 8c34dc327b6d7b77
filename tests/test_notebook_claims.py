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


def test_the_prefill_shows_only_after_it_is_explained():
    """Bug class: notebook 09's first player drew shared memory pre-filled with 1000 + slot two
    sections before the text that explains the prefill.  Every four-phase trace a cell draws before
    that explanation asks for no prefill."""
    nb = nbformat.read(str(ROOT / "notebooks" / "09_four_phase_trace.ipynb"), as_version=4)
    explained = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "1000 + s" in c.source)
    early = [c.source for c in nb.cells[:explained] if c.cell_type == "code" and "RMSNORM_DECK.trace(" in c.source]
    assert early, "no player before the explanation: the check would be empty"
    for src in early:
        for call in re.findall(r"RMSNORM_DECK\.trace\([^)]*\)", src):
            assert "prefill=False" in call, call


def test_every_kernel_listing_shows_the_taught_kernel():
    """Bug class: notebook 09's listing carried the traced build's record lines (``6 - __ffs(off)``,
    ``rec_levels[...]``).  No notebook shows ``traced_text``, and every region the notebooks and the
    lessons' players list is free of record writes."""
    from gpu_viz import kernels
    from gpu_viz.lessons import LESSONS

    shown = set()
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        for c in nb.cells:
            if c.cell_type != "code":
                continue
            assert "traced_text" not in c.source, f"{path.name}: a cell shows the traced build"
            shown |= set(re.findall(r"snippet\(\s*\"([\w.]+)\"\s*,\s*\"(\w+)\"", c.source))
    for lesson in LESSONS.values():
        shown |= {(lesson.kernel_file, r) for r in lesson.regions}
    shown |= {("reduction.cu", "seed_tree"), ("reduction.cu", "fixed_tree")}
    assert len(shown) > 8
    for file, region in sorted(shown):
        text = kernels.snippet(file, region).text
        bad = re.findall(r"\bTRACE\w*\(|\brec(?:\.|_)\w+|__ffs\(", text)
        assert not bad, f"{file}:{region} shows record lines: {bad}"
