"""Text files are read and written as UTF-8 whatever the locale, and the command line prints its
tables on a terminal that cannot show every character.

Bug class: ``Path.read_text()`` / ``open()`` without an encoding use the locale's, so under a
Latin-1 locale (and cp1252 on Windows) ``kernels/*.cu`` read as mojibake: ``VECTOR_ADD.trace()``
raised ValueError (its step lines were not found) and notebook 03 failed; ``gpu-viz bench``'s
tables raised UnicodeEncodeError on a Latin-1 terminal.
"""
import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "gpu_viz").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")])


def _kw(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _text_mode(call: ast.Call, mode_pos: int) -> bool:
    mode = _kw(call, "mode") or (call.args[mode_pos] if len(call.args) > mode_pos else None)
    if mode is None:
        return True  # "r": text
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "b" in mode.value)


def locale_dependent_io(tree: ast.AST):
    """``(line, what)`` of every call in ``tree`` that reads or writes text in the locale's encoding:
    ``open(...)`` in a text mode, ``.read_text()`` / ``.write_text()``, and ``subprocess`` calls
    with ``text=True`` / ``universal_newlines=True``, each without ``encoding=``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _kw(node, "encoding") is not None:
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open" and _text_mode(node, 1):
            found.append((node.lineno, "open()"))
        elif isinstance(f, ast.Attribute) and f.attr in ("read_text", "write_text") and \
                len(node.args) < (2 if f.attr == "write_text" else 1):  # (an encoding given by position)
            found.append((node.lineno, f".{f.attr}()"))
        elif isinstance(f, ast.Attribute) and f.attr == "open" and _text_mode(node, 0) and not (
                isinstance(f.value, ast.Name) and f.value.id in ("os", "tarfile", "zipfile", "webbrowser")):
            found.append((node.lineno, ".open()"))
        elif isinstance(f, ast.Attribute) and f.attr in ("run", "Popen", "check_output", "check_call") and any(
                k.arg in ("text", "universal_newlines") and isinstance(k.value, ast.Constant) and k.value.value
                for k in node.keywords):
            found.append((node.lineno, f"subprocess.{f.attr}(text=True)"))
    return sorted(found)


def test_every_text_file_is_read_and_written_as_utf8():
    bad = [f"{p.relative_to(ROOT)}:{line}: {what} without encoding="
           for p in SOURCES for line, what in locale_dependent_io(ast.parse(p.read_text(encoding="utf-8")))]
    assert not bad, "text I/O in the locale's encoding (pass encoding=\"utf-8\"):\n" + "\n".join(bad)


def test_the_io_check_catches_the_pattern():
    code = textwrap.dedent("""
        open(p); open(p, "w"); open(p, "rb"); open(p, encoding="utf-8")
        path.read_text(); path.write_text(s, encoding="utf-8"); path.open("w"); path.open("rb")
        path.read_text("utf-8"); path.write_text(s, "utf-8"); path.write_text(s)
        subprocess.run(cmd, text=True); subprocess.run(cmd, text=True, encoding="utf-8"); os.open(p, 0)
    """)
    assert sorted(w for _line, w in locale_dependent_io(ast.parse(code))) == sorted(
        ["open()", "open()", ".read_text()", ".open()", ".write_text()", "subprocess.run(text=True)"])


@pytest.fixture(scope="module")
def latin1_env(tmp_path_factory):
    """The environment of a process under a Latin-1 locale (en_US.ISO-8859-1, compiled by localedef
    into a temporary LOCPATH, so the machine's locales are untouched), UTF-8 mode off."""
    if sys.platform != "linux" or shutil.which("localedef") is None:
        pytest.skip("needs glibc's localedef to make a Latin-1 locale")
    where = tmp_path_factory.mktemp("locales")
    name = "en_US.ISO-8859-1"
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(where / name)],
                          capture_output=True, text=True, encoding="utf-8", errors="replace")
    if not (where / name).is_dir():
        pytest.skip(f"localedef could not make {name} (no en_US locale source?): {made.stderr[-300:]}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIOENCODING", "PYTHONUTF8"))}
    env.update(LOCPATH=str(where), LC_ALL=name, LANG=name, PYTHONUTF8="0")
    probe = subprocess.run([sys.executable, "-c", "import locale, sys; print(locale.getpreferredencoding(False), "
                            "sys.stdout.encoding)"], env=env, capture_output=True, text=True, encoding="latin-1")
    assert probe.stdout.split() == ["ISO-8859-1", "iso8859-1"], probe.stdout + probe.stderr
    return env


def _run_latin1(env, code: str):
    return subprocess.run([sys.executable, "-X", "utf8=0", "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, timeout=300)


def test_kernel_sources_and_a_lesson_trace_under_a_latin1_locale(latin1_env):
    proc = _run_latin1(latin1_env, """
        from gpu_viz import kernels
        from gpu_viz.lessons import VECTOR_ADD
        assert kernels.read_source("vector_add.cu") == kernels.kernel_path("vector_add.cu").read_bytes().decode("utf-8")
        tr = VECTOR_ADD.trace(seed=3)
        print("steps", len(tr.steps))
    """)
    assert proc.returncode == 0, proc.stderr.decode("latin-1")[-2000:]
    assert b"steps" in proc.stdout


def test_bench_tables_print_on_a_latin1_terminal(latin1_env):
    """`gpu-viz bench`'s printing path (the measurement stubbed: no GPU here) on a Latin-1 stdout:
    the table's dashes and bounds come out as ASCII, no UnicodeEncodeError."""
    proc = _run_latin1(latin1_env, """
        import sys
        from gpu_viz import backend, cli
        from gpu_viz.measure import records
        from gpu_viz.rmsnorm import bench_record
        rec = records.newest("*-fused.json")
        backend.has_gpu = lambda: True
        backend.live_label = lambda: "measured on a stand-in GPU just now"
        bench_record.full_record = lambda **kw: dict(rec, _path="stand-in.json")
        sys.exit(cli.main(["bench"]))
    """)
    out, err = proc.stdout.decode("latin-1"), proc.stderr.decode("latin-1")
    assert proc.returncode == 0, err[-2000:]
    assert "UnicodeEncodeError" not in err and "checks passed" in out, err[-2000:]
    # a cell with no baseline ("\u2014", not in Latin-1) reads "--"; "\u00b5s" (in Latin-1) stays
    assert re.search(r"rmsnorm_gate .* -- ", out) and "eager \u00b5s" in out, out[:1500]
