"""Every notebooks/*.ipynb is committed in the course's format (scripts/strip_notebooks.py rules).

No outputs or execution counts, valid nbformat, slideshow metadata on every cell, the standard
header (Colab badge + install cell from nbkit.COURSE_REPO + banner), speaker notes in cell metadata
(never cells of their own in the learner's way).
Fix a failing notebook with `python scripts/strip_notebooks.py` (outputs) or by regenerating it
with scripts/nbkit.py (header, metadata).
"""
import copy
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import nbkit  # noqa: E402
import strip_notebooks  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SELFTEST = ROOT / "tests" / "data" / "99_slides_selftest.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_format(path):
    nb = nbformat.read(str(path), as_version=4)
    problems = strip_notebooks.check_notebook(nb, path.name)
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


def test_notebooks_are_stored_as_nbformat_writes_them():
    """Canonical JSON (what nbformat.write produces), so diffs stay small and reviewable."""
    for path in NOTEBOOKS:
        text = path.read_text()
        assert text == nbformat.writes(nbformat.reads(text, as_version=4)) + "\n", \
            f"{path.name} is not in canonical nbformat JSON; rewrite it with scripts/nbkit.py or strip_notebooks.py"


def test_selftest_notebook_passes_the_rules():
    assert strip_notebooks.check_notebook(nbformat.read(str(SELFTEST), as_version=4), SELFTEST.name) == []


def _broken(mutate):
    nb = nbformat.read(str(SELFTEST), as_version=4)
    mutate(nb)
    return strip_notebooks.check_notebook(nb, SELFTEST.name)


def test_rules_catch_outputs_and_execution_counts():
    def add_output(nb):
        cell = nb.cells[2]
        cell.execution_count = 3
        cell.outputs = [nbformat.v4.new_output("stream", text="GPU mode: NVIDIA L4\n")]
    problems = _broken(add_output)
    assert any("cell 2 has outputs" in p for p in problems) and any("execution count" in p for p in problems)


def test_rules_catch_missing_slideshow_metadata_notes_and_header():
    assert any("cell 3 has no slideshow" in p for p in _broken(lambda nb: nb.cells[3].metadata.clear()))
    no_notes = _broken(lambda nb: [c.metadata.pop(nbkit.SPEAKER_NOTES_KEY, None) for c in nb.cells])
    assert any("no speaker notes" in p for p in no_notes)
    # a notes cell of its own sits in the learner's notebook: the rule names it (notes go to metadata)
    notes_cell = _broken(lambda nb: nb.cells.insert(4, nbkit.notes("say this")))
    assert any("cell 4 is a speaker-notes cell in the learner's way" in p for p in notes_cell)
    other_repo = _broken(lambda nb: nb.cells[1].__setitem__("source", nb.cells[1].source.replace(
        nbkit.COURSE_REPO, "someone/else")))
    assert any("cell 1 is not the install cell" in p for p in other_repo)
    no_badge = _broken(lambda nb: nb.cells[0].__setitem__("source", "# Title only"))
    assert any("Colab badge" in p for p in no_badge)
    assert strip_notebooks.check_notebook(nbformat.read(str(SELFTEST), as_version=4), "selftest.ipynb")


def test_rules_take_either_banner_header_and_nothing_else():
    """Bug class: the header rule knew one banner call only, so a measured chapter's
    banner(recorded=True) -- what nbkit.header(recorded=True) writes -- failed it.  Both of
    nbkit's headers pass; a cell 2 without a banner call does not."""
    for recorded in (False, True):
        cells = nbkit.header("08", "rmsnorm_speedup", "T", recorded=recorded)
        assert ("recorded=True" in cells[2].source) == recorded

        def swap(nb, cells=cells):
            nb.cells[2] = cells[2]
        assert not any("cell 2" in p for p in _broken(swap)), recorded
    import gpu_viz

    assert nbkit.BANNER_CALLS[True] == gpu_viz.RECORDED_BANNER_CALL  # what the slides index looks for
    no_banner = _broken(lambda nb: nb.cells[2].__setitem__("source", "import gpu_viz\ngpu_viz.doctor.report();"))
    assert any("cell 2 does not call gpu_viz.banner()" in p for p in no_banner)


def test_strip_removes_what_an_execution_adds():
    nb = nbformat.read(str(SELFTEST), as_version=4)
    dirty = copy.deepcopy(nb)
    dirty.cells[2].outputs = [nbformat.v4.new_output("stream", text="x")]
    dirty.cells[2].execution_count = 1
    dirty.cells[2].metadata["execution"] = {"iopub.status.busy": "2026-11-29T16:00:00Z"}
    dirty.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    dirty.metadata["gpu_viz_build"] = {"mode": "cpu"}
    strip_notebooks.strip(dirty)
    assert dirty == nb


def test_strip_script_check_mode(tmp_path, capsys):
    good = tmp_path / SELFTEST.name
    good.write_text(SELFTEST.read_text())
    assert strip_notebooks.main(["--check", str(good)]) == 0
    nb = nbformat.read(str(good), as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="x")]
    nbformat.write(nb, str(good))
    assert strip_notebooks.main(["--check", str(good)]) == 1
    assert "has outputs" in capsys.readouterr().out
    assert strip_notebooks.main([str(good)]) == 0          # strips in place
    assert strip_notebooks.main(["--check", str(good)]) == 0


@pytest.mark.parametrize("check", [False, True])
def test_strip_script_bad_paths_are_clear_errors(tmp_path, capsys, check):
    """Bug class: a path the script cannot read (missing, a folder, not a notebook) escaping as a
    traceback.  Each exits 2 with one line naming the path."""
    not_json = tmp_path / "not_json.ipynb"
    not_json.write_text("this is not JSON")
    for path in ("/nonexistent.ipynb", str(tmp_path), str(not_json)):
        assert strip_notebooks.main((["--check"] if check else []) + [path]) == 2, path
        err = capsys.readouterr().err
        assert path in err and "Traceback" not in err, err


def test_strip_script_missing_path_from_the_command_line(tmp_path):
    import subprocess

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "strip_notebooks.py"), "/nonexistent.ipynb"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "/nonexistent.ipynb" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_set_repo_rewrites_badge_and_install_cell(tmp_path):
    nb = nbformat.read(str(SELFTEST), as_version=4)
    for i in (0, 1):
        nb.cells[i].source = nb.cells[i].source.replace(nbkit.COURSE_REPO, "old-owner/old-name")
    assert strip_notebooks.check_notebook(nb, SELFTEST.name)
    assert strip_notebooks.set_repo(nb, SELFTEST.name)
    assert strip_notebooks.check_notebook(nb, SELFTEST.name) == []


@pytest.mark.parametrize("text", [
    "## 3. The same table, live",
    "3. The same table, live on this GPU",
    "timing method. Here, measured live, against stronger baselines:",
    "5. The live speed-up: eager, `F.rms_norm`, `torch.compile`",
    "checked against float64 and timed live against its baselines.",
    "checked against float64 and timed\nlive against its baselines.",   # hard-wrapped markdown
    "Measurements are live on this GPU.",
    "The numbers below are live.",
    "Each provider is benchmarked live.",
    "The live results, on this GPU:",
    "A live-timed comparison",
    "Timed live against the seed's recorded H100 numbers.",               # 'recorded' is not CPU mode
])
def test_rules_catch_a_live_claim_without_cpu_mode(text):
    """Bug class: markdown that says the numbers are measured live, shown unchanged in CPU mode
    (where nothing is timed and the table is a committed record): notebooks 11 and 13 had these
    five lines.  Each is flagged alone, and passes once the cell says what CPU mode shows."""
    def put(nb, extra=""):
        nb.cells[3].cell_type = "markdown"
        nb.cells[3].source = text + extra
        nb.cells[3].pop("outputs", None)
        nb.cells[3].pop("execution_count", None)
    problems = _broken(put)
    assert any("cell 3 says" in p and "CPU mode" in p for p in problems), problems
    assert _broken(lambda nb: put(nb, "\nIn CPU mode nothing is timed: the committed record, labelled.")) == []


@pytest.mark.parametrize("text", ["kernel parameters live in the constant bank",
                                  "one keeping 64 values live:", "Live only (needs a running kernel)",
                                  "The tables live in `benchmarks/results/`.",
                                  "The timing helpers live in `gpu_viz/measure/timing.py`."])
def test_live_rule_leaves_other_senses_of_live_alone(text):
    def put(nb):
        nb.cells[3].cell_type = "markdown"
        nb.cells[3].source = text
        nb.cells[3].pop("outputs", None)
        nb.cells[3].pop("execution_count", None)
    assert _broken(put) == []


def test_live_rule_reads_list_sources_and_missing_sources():
    """Bug class: a check that assumes a cell's source is one string.  A notebook loaded with
    nbformat.from_dict keeps each cell's source as a list of lines (and a hand-made cell may have
    none): every rule joins the lines, flags the claim, never raises."""
    import json

    nb = nbformat.from_dict(json.loads(SELFTEST.read_text()))
    assert all(isinstance(c.source, list) for c in nb.cells[:3])
    assert strip_notebooks.check_notebook(nb, SELFTEST.name) == []
    nb.cells[3] = nbformat.from_dict({"cell_type": "markdown", "id": "live-claim", "metadata": {"slideshow": {"slide_type": "-"}},
                                      "source": ["## 3. The same table,\n", "live"]})
    assert any("cell 3 says" in p for p in strip_notebooks.check_notebook(nb, SELFTEST.name))
    nb.cells[3] = nbformat.from_dict({"cell_type": "markdown", "id": "live-claim", "metadata": {"slideshow": {"slide_type": "-"}}})
    problems = strip_notebooks.check_notebook(nb, SELFTEST.name)
    assert not any("cell 3 says" in p for p in problems)


def _names_a_notebook_imports_and_rebinds(nb):
    """(cell, name) for every name a code cell binds (assignment, loop, comprehension) that an import
    of the same notebook bound: a loop variable called `timing` shadows `from gpu_viz.measure import
    timing` for every later cell, which then fails only on the path that uses the module."""
    import ast

    imported, rebound = set(), []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imported |= {a.asname or a.name.split(".")[0] for a in node.names}
        for node in ast.walk(tree):
            targets = ([node.target] if isinstance(node, (ast.For, ast.comprehension)) else
                       node.targets if isinstance(node, ast.Assign) else [])
            rebound += [(i, n.id) for t in targets for n in ast.walk(t)
                        if isinstance(n, ast.Name) and n.id in imported]
    return rebound


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_rebinds_an_imported_name(path):
    nb = nbformat.read(path, as_version=4)
    assert _names_a_notebook_imports_and_rebinds(nb) == []


def test_the_rebinding_check_catches_a_shadowed_module():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("from gpu_viz.measure import timing"),
                                         nbformat.v4.new_code_cell("for timing in ('kernel', 'call'):\n    pass")])
    assert _names_a_notebook_imports_and_rebinds(nb) == [(1, "timing")]


# ----------------------------------------------------------------------------- a notebook is also a talk
INTERNAL_WORDS = r"\bthe seed\b|\bseed's\b|\bseed write-up\b|\bissue \d+|\btiming chapter\b|\bsession \d+\b"


def _slide_groups(nb):
    """The cells of each slide (a cell typed slide/subslide starts one), skipped and removed cells left out."""
    groups = []
    for c in nb.cells:
        st = c.metadata.get("slideshow", {}).get("slide_type", "-")
        if st in ("slide", "subslide") or not groups:
            groups.append([])
        if st != "skip" and "remove-cell" not in c.metadata.get("tags", []):
            groups[-1].append(c)
    return [g for g in groups if g]


def talk_problems(nb):
    """Every slide has speaker notes, a heading and no plumbing on screen: a code cell the deck shows
    has its input hidden (``hide-input``) unless it is one short teaching line; the deck opens on a
    title (``# ...``) and closes on its takeaways; no words from the project's own history."""
    import re

    from gpu_viz.slides import expand_speaker_notes

    problems = []
    nb = copy.deepcopy(nb)
    expand_speaker_notes(nb)     # the deck's view: each cell's speaker_notes become the slide's notes
    groups = _slide_groups(nb)
    for k, g in enumerate(groups):
        shown = [c for c in g if c.metadata.get("slideshow", {}).get("slide_type") != "notes"]
        first = next((c.source.splitlines()[0] for c in shown if c.source.strip()), "")
        if not any(c.metadata.get("slideshow", {}).get("slide_type") == "notes" for c in g):
            problems.append(f"slide {k + 1} ({first[:50]!r}): no notes cell")
        if not any(c.cell_type == "markdown" and re.search(r"^#{1,3} ", c.source, re.M) for c in shown):
            problems.append(f"slide {k + 1} ({first[:50]!r}): no heading")
        for c in shown:
            if (c.cell_type == "code" and "hide-input" not in c.metadata.get("tags", [])
                    and len(c.source.strip().splitlines()) > 2):
                problems.append(f"slide {k + 1}: a {len(c.source.splitlines())}-line code cell is projected: "
                                f"{c.source.splitlines()[0][:50]!r} (tag it hide-input)")
    if groups and not re.search(r"^# ", "\n".join(c.source for c in groups[0] if c.cell_type == "markdown"), re.M):
        problems.append("the first slide has no title (# ...)")
    if groups and not any(c.source.startswith("## Takeaways") for c in groups[-1]):
        problems.append("the last slide is not '## Takeaways'")
    for c in nb.cells:
        if c.cell_type == "markdown":
            for m in re.finditer(INTERNAL_WORDS, c.source, re.I):
                problems.append(f"internal word {m.group(0)!r}: ...{c.source[max(0, m.start() - 30):m.end() + 20]!r}...")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_reads_as_a_talk(path):
    problems = talk_problems(nbformat.read(str(path), as_version=4))
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


def test_talk_rules_catch_each_defect():
    """The rules can fail: a notebook with a slide without notes or heading, a projected 3-line code
    cell, no takeaways and an internal word gets one finding for each."""
    v4 = nbformat.v4

    def cell(c, st, tags=()):
        c.metadata["slideshow"] = {"slide_type": st}
        if tags:
            c.metadata["tags"] = list(tags)
        return c

    nb = v4.new_notebook(cells=[
        cell(v4.new_markdown_cell("# Title\n\nAs the seed said."), "slide"),
        cell(v4.new_markdown_cell("notes"), "notes"),
        cell(v4.new_markdown_cell("no heading here"), "slide"),
        cell(v4.new_code_cell("a = 1\nb = 2\nprint(a + b)"), "-"),
        cell(v4.new_code_cell("hidden = 1\nhidden += 1\nprint(hidden)"), "-", ["hide-input"]),
    ])
    found = "\n".join(talk_problems(nb))
    assert "slide 2" in found and "no notes cell" in found and "no heading" in found
    assert "3-line code cell is projected: 'a = 1'" in found and "'hidden = 1'" not in found
    assert "the last slide is not '## Takeaways'" in found
    assert "internal word 'the seed'" in found
