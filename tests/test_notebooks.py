"""Every notebook executes top to bottom: in CPU mode anywhere (CI), and live on a GPU (marked gpu).

CPU mode reads the one CPU-mode execution the slide build makes (``built_slides`` in
conftest_slides.py), so CI executes each notebook once.  The GPU run executes here and leaves
its copies in test-artifacts/executed-gpu/ for inspection.
"""
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from gpu_viz import backend

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ARTIFACTS = ROOT / "test-artifacts"


def execute(path: Path, mode: str) -> nbformat.NotebookNode:
    """Execute ``path`` in ``mode``: "gpu", "cpu" (GPU_VIZ_FORCE_CPU) or "cpu-no-nvrtc" (also
    GPU_VIZ_NO_EMULATOR: CPU mode as a machine without NVRTC runs it); the executed copy goes to
    test-artifacts/executed-<mode>/."""
    from gpu_viz.emulator import nvrtc

    if mode not in ("gpu", "cpu", "cpu-no-nvrtc"):
        raise ValueError(f"mode must be 'gpu', 'cpu' or 'cpu-no-nvrtc', got {mode!r}")
    nb = nbformat.read(path, as_version=4)
    env = dict(os.environ)
    env.pop(nvrtc.NO_EMULATOR_ENV, None)
    if mode == "gpu":
        env.pop(backend.FORCE_CPU_ENV, None)
    else:
        env[backend.FORCE_CPU_ENV] = "1"
    if mode == "cpu-no-nvrtc":
        env[nvrtc.NO_EMULATOR_ENV] = "1"
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    # nbclient starts the kernel with the parent's environment: set ours for the kernel process.
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
        out = ARTIFACTS / f"executed-{mode}"
        out.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / path.name)
    return nb


def _errors(nb):
    bad = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                bad.append(f"cell {i}: {o.get('ename')}: {o.get('evalue')}")
    return bad


def _text(nb):
    chunks = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            chunks.append(o.get("text", ""))
            chunks.extend(str(v) for k, v in o.get("data", {}).items() if k.startswith("text/"))
    return "\n".join(chunks)


def _executed_in_cpu_mode(built_slides, path):
    """The CPU-mode build's executed copy of ``path`` (the session's deck build), asserting it ran."""
    deck = built_slides.deck(path.stem)
    assert deck.mode == "cpu", f"{path.name} was built in {deck.mode!r} mode, expected a CPU-mode run"
    assert not deck.error, f"{path.name} failed in CPU mode:\n{deck.error[-3000:]}"
    return nbformat.read(deck.executed, as_version=4)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_cpu_mode(path, built_slides):  # noqa: F811
    nb = _executed_in_cpu_mode(built_slides, path)
    assert not _errors(nb)
    assert "CPU MODE" in _text(nb), f"{path.name}: the first cells must print the mode (gpu_viz.banner())"
    assert not _garbled_provenance(_text(nb)), f"{path.name}: {_garbled_provenance(_text(nb))}"
    assert not _raw_values(_text(nb)), f"{path.name}: Python values printed as they are: {_raw_values(_text(nb))}"
    assert not _ascii_units(_text(nb)), f"{path.name}: 'us' for µs: {_ascii_units(_text(nb))}"


# A provenance label already starts with its own verb phrase ("recorded on ...", "measured on ...",
# "CPU model, ..."): a sentence that puts "from"/"come from"/"by" in front of it reads wrong
# ("Measurements shown come from recorded on NVIDIA H200").
_GARBLED = re.compile(r"\b(?:from|by|of|on)\s+(?:recorded on|measured on|CPU model, no GPU)\b"
                      r"|\b(?:measured|recorded) \((?:measured|recorded) on\b")


def _outputs(nb):
    """``(where, text)`` of every output: its text, HTML, markdown and SVG."""
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            parts = [o.get("text", "")] + [str(v) for k, v in o.get("data", {}).items()
                                           if k.startswith("text/") or k == "image/svg+xml"]
            yield f"cell {i}", "\n".join(parts)


def one_gpu_problems(nb, stem):
    """CPU mode's rule: every output names only the GPU of the notebook's committed
    records (the deck's L4 only under records.DECK_L4, in its own column or panel), and the
    notebook shows each of its records' labels."""
    from gpu_viz.measure import records

    recs = records.lesson_records(stem)
    gpu = min(records.gpus_named(recs[0]["gpu"])) if recs else "L4"
    bad = records.one_gpu_problems(_outputs(nb), gpu)
    text = _text(nb)
    bad += [f"does not show the label of {r['_file']} ({records.label(r)})" for r in recs
            if records.label(r) not in text]
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_cpu_mode_shows_one_gpu_and_its_records(path, built_slides):  # noqa: F811
    nb = _executed_in_cpu_mode(built_slides, path)
    bad = one_gpu_problems(nb, path.stem)
    # the internal words the sources may not use may not reach the outputs either (titles, labels)
    from test_notebook_format import INTERNAL_WORDS

    bad += [f"{where}: internal word {m.group(0)!r}" for where, text in _outputs(nb)
            for m in re.finditer(INTERNAL_WORDS, text, re.I)]
    assert not bad, f"{path.name} in CPU mode: " + "; ".join(bad)


def solution_output_problems(nb):
    """A hidden solution cell, run by "Run all", shows one labelled line and nothing else."""
    bad = []
    for i, cell in enumerate(nb.cells):
        if "solution" not in cell.metadata.get("tags", []):
            continue
        text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                       for o in cell.get("outputs", [])).strip()
        if "\n" in text or "] reference solution: " not in text:
            bad.append(f"cell {i}: {text[:120]!r}")
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_solution_cells_show_one_labelled_line(path, built_slides):  # noqa: F811
    bad = solution_output_problems(_executed_in_cpu_mode(built_slides, path))
    assert not bad, f"{path.name}: solution cells must print one 'reference solution' line: {bad}"


# Plumbing on a slide: the code's names, not the idea -- a module path ("gpu_viz.model.latency"), a test
# file or test id ("tests/test_x.py", "test_x.py::test_y"), a record's file name
# ("nvidia-h200-2026-12-01-fused.json"), a hedged plural ("block(s)", "pass(es)"), or a record's label
# nested in another parenthesis.  The slide says it in
# words ("the CPU model", "the GPU test suite", "the committed record"); the names go to the notes.
_PLUMBING = re.compile(r"\bgpu_viz\.[a-z_]+|\btests/\S+\.py\b|\b\w+\.py::\w+|\b[\w-]+-\d{4}-\d{2}-\d{2}[\w-]*\.json\b"
                       r"|\b(?:block|pass|warp|thread|row|wave|element|kernel|launch)\((?:s|es)\)"
                       # a record label inside another parenthesis: "(2 bytes per lane; recorded on ... (not live))"
                       r"|\([^()\n]*\b(?:recorded|measured) on [^()\n]*\(not live\)")


def _plumbing(text):
    return sorted({m.group(0) for m in _PLUMBING.finditer(text)})


def _shown_text(nb):
    """``(where, text)`` of what the deck shows: the markdown and outputs of cells that are not notes,
    skipped or removed (tagged remove-cell: notebook-only), with SVG text stripped of its tags."""
    for i, cell in enumerate(nb.cells):
        if (cell.metadata.get("slideshow", {}).get("slide_type") in ("notes", "skip")
                or "remove-cell" in cell.metadata.get("tags", [])):
            continue
        parts = [cell.source] if cell.cell_type == "markdown" else []
        for o in cell.get("outputs", []):
            parts.append(o.get("text", ""))
            parts += [re.sub(r"<[^>]+>", " ", str(v)) if k == "image/svg+xml" else str(v)
                      for k, v in o.get("data", {}).items() if k.startswith("text/") or k == "image/svg+xml"]
        yield f"cell {i}", "\n".join(parts)


def plumbing_problems(nb):
    return [f"{where}: {hit!r}" for where, text in _shown_text(nb) for hit in _plumbing(text)]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_cpu_mode_slides_show_no_plumbing(path, built_slides):  # noqa: F811
    bad = plumbing_problems(_executed_in_cpu_mode(built_slides, path))
    assert not bad, f"{path.name}: the code's names on a slide (say it in words; names go to the notes): {bad}"


def test_plumbing_check_catches_the_pattern():
    assert _plumbing("(gpu_viz.model.rmsnorm_deck: float32 numpy model)") == ["gpu_viz.model"]
    assert _plumbing("the full matrix is `pytest -m gpu tests/test_rmsnorm_deck.py`.") == ["tests/test_rmsnorm_deck.py"]
    assert _plumbing("(test_rmsnorm_bench.py::test_gpu_seed_defects_fixed runs them)") == [
        "test_rmsnorm_bench.py::test_gpu_seed_defects_fixed"]
    assert _plumbing("Showing the newest committed record, nvidia-h200-2026-12-01-fused.json: recorded on") == [
        "nvidia-h200-2026-12-01-fused.json"]
    assert _plumbing("fits, 1 block(s) per SM; 3 pass(es)") == ["block(s)", "pass(es)"]
    assert not _plumbing("the CPU model; the GPU test suite; 1 block per SM, 2 passes; kernels/reduce.cuh")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## A slide\nfrom `gpu_viz.rmsnorm.EagerRMSNorm`"),
                nbformat.v4.new_markdown_cell("notes: gpu_viz.ops.rmsnorm"),
                nbformat.v4.new_code_cell("x")]
    nb.cells[1].metadata["slideshow"] = {"slide_type": "notes"}
    nb.cells[2].metadata["tags"] = ["remove-cell"]
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="tests/test_x.py::test_y\n")]
    assert plumbing_problems(nb) == ["cell 0: 'gpu_viz.rmsnorm'"]


def _garbled_provenance(text):
    return sorted({m.group(0) for m in _GARBLED.finditer(text)})


# A table cell or a sentence that shows a Python value as Python prints it: a list ("[124]",
# "+[0, 2]"), None, a numpy scalar's repr.  The reader sees the numbers written out instead.
_RAW_CELL = re.compile(r"^[+-]?\[[-+\d.,e ]*\]$|^(?:None|nan|NaN)$|np\.(?:float|int)\d+\(|array\(")


def _raw_values(text):
    bad = set()
    for line in text.splitlines():
        if line.count("|") >= 2 and not set(line.replace("|", "").strip()) <= set("-: "):
            bad.update(c.strip() for c in line.strip().strip("|").split("|") if _RAW_CELL.search(c.strip()))
        bad.update(m.group(0) for m in re.finditer(r"np\.(?:float|int)\d+\([^)]*\)|\+\[[\d, ]+\]|\[\(\d+, \d+\)", line))
        # a dict ("{'threads': 1"), a nested list ("[[3.0, 4.0]"), a list of numbers ("[264, 272, 280]")
        bad.update(m.group(0) for m in re.finditer(r"\{'[\w ]+': [-\d.]+|\[\[[-\d.]+, [-\d.]+\]|(?<![+\w\[])\[-?\d[\d.]*(?:, -?\d[\d.]*)+\]|(?<=\s)\[\](?=[;,.]|\s|$)", line))
    return sorted(bad)


def _ascii_units(text):
    """Microseconds written "us" ("10.8 us"): the course writes µs."""
    return sorted(set(re.findall(r"\d us\b", text)))


def test_raw_values_check_catches_the_pattern():
    assert _ascii_units("264 blocks 10.8 us, 265 blocks 20.9 µs") == ["8 us"]
    assert _raw_values("| 0 | 0..31 | [124] | [2] |") == ["[124]", "[2]"]
    assert _raw_values("first issue +[0, 2] cycles") == ["+[0, 2]"]
    assert _raw_values("| rate | None |") == ["None"]
    assert _raw_values("value np.float64(1.5)") == ["np.float64(1.5)"]
    assert _raw_values("the record has no [(512, 2048), (16384, 2048)] rows") == ["[(512, 2048)"]
    assert _raw_values("limits per resource: {'threads': 2, 'blocks': 32}") == ["{'threads': 2"]
    assert _raw_values("x = [[3.0, 4.0], [1.0, -1.0]]") == ["[1.0, -1.0]", "[[3.0, 4.0]"]
    assert _raw_values("221 widths lose partials; the first: [264, 272, 280] ...") == ["[264, 272, 280]"]
    assert _raw_values("65 shapes checked, 0 wrong []; data: CPU model") == ["[]"]
    assert not _raw_values("| 0 | 0..31 | 124 | 2, 3 |\n|---|---|\nx[i] = y[i] + z[i]\nsmem[32]; w[0:2]")


def test_garbled_provenance_check_catches_the_pattern():
    assert _garbled_provenance("cycle; measured (measured on NVIDIA H200 (sm_90) just now)")
    assert _garbled_provenance("Measurements shown come from recorded on NVIDIA H200, 2026-11-29 (not live).")
    assert _garbled_provenance("Data by measured on NVIDIA L4 (sm_89) just now")
    assert not _garbled_provenance("Measurements shown: recorded on NVIDIA H200, 2026-11-29 (not live).")
    assert not _garbled_provenance("64 bytes (two sectors). Data: recorded on NVIDIA H200, 2026-12-01 (not live).")
    # on a slide, a label inside another parenthesis reads as a garble too
    assert _plumbing("%warpid 1, 2 (recorded on NVIDIA H200, 2026-12-01, driver 580.159.04 (not live))")
    assert _plumbing("(2 bytes per lane; recorded on NVIDIA H200, 2026-12-01 (not live)), so a warp")
    assert not _plumbing("64 bytes (two sectors). Data: recorded on NVIDIA H200, 2026-12-01 (not live).")
    assert not _garbled_provenance("Data: CPU model, no GPU: computed in numpy, nothing was measured")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_provenance_label_follows_a_preposition_in_the_source(path):
    """Bug class, without executing: an f-string that puts 'from'/'by'/'on' right before a label
    placeholder ({record_label}, {backend.live_label()}, {backend.provenance()}, ...)."""
    src = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    bad = re.findall(r"\b(?:from|by|of|on)\s+\{[^}]*(?:label|provenance)[^}]*\}", src)
    assert not bad, f"{path.name}: a provenance label reads 'recorded on ...': drop the preposition in {bad}"


@pytest.mark.gpu
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_live_on_the_gpu(path):
    try:
        nb = execute(path, "gpu")
    except CellExecutionError as exc:
        pytest.fail(f"{path.name} failed on the GPU:\n{str(exc)[-3000:]}")
    assert not _errors(nb)
    text = _text(nb)
    assert "GPU mode:" in text and backend.detect().device_name in text
    assert not _garbled_provenance(text), f"{path.name}: {_garbled_provenance(text)}"
    assert not _raw_values(text), f"{path.name}: Python values printed as they are: {_raw_values(text)}"
    assert not _ascii_units(text), f"{path.name}: 'us' for µs: {_ascii_units(text)}"
