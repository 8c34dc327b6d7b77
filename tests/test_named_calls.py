"""Every call the course tells a learner to type resolves.

The banner, the notebooks and the README name calls like ``gpu_viz.doctor.report()``.  A learner
types them after ``import gpu_viz`` (or after the import the text itself shows), so each dotted
name must resolve from a fresh interpreter that ran only that import: no AttributeError.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import gpu_viz

ROOT = Path(__file__).resolve().parents[1]
#: ``gpu_viz.a.b(`` in prose or code: a call the text asks for (not an ``import gpu_viz.a`` line).
CALL = re.compile(r"(?<![\w.])(gpu_viz(?:\.\w+)+)\(")


def _printed_advice():
    """(where, text) of what the package prints to a learner unasked: the banner (both CPU-mode
    wordings) and the doctor's report."""
    import contextlib
    import io

    from gpu_viz import doctor

    for recorded in (False, True):
        with contextlib.redirect_stdout(io.StringIO()):
            yield f"gpu_viz.banner(recorded={recorded})", gpu_viz.banner(recorded=recorded)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        doctor.report(show=True)
    yield "gpu_viz.doctor.report()", out.getvalue()


def _notebook_texts():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            src = "".join(cell["source"])
            notes = cell.get("metadata", {}).get("speaker_notes")
            for text in (src, "".join(notes) if isinstance(notes, list) else notes or ""):
                yield f"{path.name} cell {i}", text


def named_calls():
    """{dotted name: [where it is named]} over what the package prints, the notebooks and the README."""
    found = {}
    sources = list(_printed_advice()) + list(_notebook_texts()) + [("README.md", (ROOT / "README.md").read_text())]
    for where, text in sources:
        for line in text.splitlines():
            if re.match(r"\s*(from|import)\s", line):
                continue
            for name in CALL.findall(line):
                found.setdefault(name, []).append(where)
    return found


def test_the_scan_finds_the_banners_doctor_call():
    """The scan is not vacuous: the banner's advice is among the names it checks."""
    assert "gpu_viz.doctor.report" in named_calls()


def test_every_named_call_resolves_after_import_gpu_viz():
    names = named_calls()
    probe = ("import gpu_viz, functools, json\nbad = {}\n"
             f"for name in {sorted(names)!r}:\n"
             "    try:\n        functools.reduce(getattr, name.split('.')[1:], gpu_viz)\n"
             "    except AttributeError as exc:\n        bad[name] = str(exc)\n"
             "print(json.dumps(bad))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={"GPU_VIZ_FORCE_CPU": "1", "PATH": "/usr/bin:/bin"})
    bad = json.loads(out.stdout.strip().splitlines()[-1])
    assert not bad, "\n".join(f"{n} (named in {names[n][0]}): {e}" for n, e in bad.items())


def test_submodules_list_every_subpackage_and_module():
    """gpu_viz.SUBMODULES (reached lazily after ``import gpu_viz``) names every module of the package."""
    have = {p.stem for p in (ROOT / "gpu_viz").glob("*.py") if p.stem != "__init__"}
    have |= {p.parent.name for p in (ROOT / "gpu_viz").glob("*/__init__.py")}
    assert set(gpu_viz.SUBMODULES) == have


def test_unknown_attribute_still_raises():
    try:
        gpu_viz.no_such_module
    except AttributeError as exc:
        assert "no_such_module" in str(exc)
    else:
        raise AssertionError("gpu_viz.no_such_module resolved")
