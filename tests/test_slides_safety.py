"""`gpu-viz slides` never loses a user's file, never outlives a Ctrl-C, never passes a broken build
off as a good one.

Bug classes, each tried as a hostile user would:
- data loss: a build deleted a foreign ``OUT/vendor/`` (a Go or PHP one), overwrote a user's
  ``index.html`` / ``manifest.json``, built into the current folder for ``--out ""``, wrote executed
  copies over the source notebooks (``--executed-dir notebooks``), deleted its own
  ``--vendor-from`` source inside ``OUT/vendor``;
- runaway processes: ``--jobs N`` started N workers whatever the number of notebooks; workers
  outlived SIGTERM to the build;
- Ctrl-C ended only the current notebook (or was swallowed), the build went on and replaced the
  last good deck;
- a full disk left half a deck under its final name, and the message named no path;
- two builds into one folder both exited 0 with a deck missing from the index;
- a failing build still created its output folder;
- failure reports were a slice of an ANSI-coloured traceback; a bad ``$GPU_VIZ_CHROMIUM`` gave a
  traceback or was ignored.
"""
import errno
import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from gpu_viz import cli, outdir, slides
from gpu_viz.outdir import FolderError, OwnedFolder

ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def fake_vendor(tmp_path_factory) -> Path:
    """A complete vendor folder (every file a deck loads, stand-in contents, the pinned stamp):
    what --vendor-from takes; no npm needed."""
    v = tmp_path_factory.mktemp("vendor_src") / "vendor"
    for rel in slides.VENDOR_REQUIRED:
        (v / rel).parent.mkdir(parents=True, exist_ok=True)
        (v / rel).write_text(f"/* stand-in for {rel} */\n", encoding="utf-8")
    pins = json.loads((slides.SLIDES_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    (v / slides.VENDOR_STAMP).write_text(json.dumps({"packages": pins}), encoding="utf-8")
    return v


def _notebook(folder: Path, name: str, *code: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nb = new_notebook(cells=[new_markdown_cell(f"# {name}", metadata={"slideshow": {"slide_type": "slide"}}),
                             *(new_code_cell(c, metadata={"slideshow": {"slide_type": "-"}}) for c in code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return path


def _digests(folder: Path, ledger: bool = True) -> dict:
    """Every file under ``folder`` (hidden ones too; the lock file, which holds the last claimer's
    pid, left out; the ledger too unless ``ledger``) -> its SHA-256."""
    skip = {outdir.LOCK} | (set() if ledger else {outdir.LEDGER})
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in skip}


def _slides(*args) -> list:
    return ["slides", "--no-pdf", *map(str, args)]


def _render_only(tmp_path, fake_vendor, out, *extra):
    """A build that renders an unexecuted notebook (--no-execute: no kernel, a few seconds)."""
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_first", "print(1)")
    return cli.main(_slides("--notebooks", nbs, "--out", out, "--no-execute", "--executed-dir", nbs,
                            "--vendor-from", fake_vendor, *extra))


# ----------------------------------------------------------------------------- the owned folder
def test_a_folder_with_foreign_files_is_refused_and_left_as_it_was(tmp_path):
    out = tmp_path / "out"
    (out / "vendor" / "github.com" / "pkg").mkdir(parents=True)
    (out / "vendor" / "github.com" / "pkg" / "x.go").write_text("package pkg\n", encoding="utf-8")
    (out / "index.html").write_text("<p>mine</p>", encoding="utf-8")
    before = _digests(out)
    with pytest.raises(FolderError) as exc:
        OwnedFolder(out, "--out").claim()
    msg = str(exc.value)
    assert "--out" in msg and "2 file(s) a gpu-viz build did not write" in msg and "vendor/github.com/pkg/x.go" in msg
    assert "index.html" in msg and "--force" in msg
    assert _digests(out) == before and sorted(os.listdir(out)) == ["index.html", "vendor"]


def test_force_builds_beside_foreign_files_but_never_overwrites_or_deletes_one(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("<p>mine</p>", encoding="utf-8")
    with OwnedFolder(out, "--out", force=True) as folder:
        folder.write_text("deck.html", "ours")
        with pytest.raises(FolderError, match=r"will not overwrite .*index\.html: a gpu-viz build did not write it"):
            folder.write_text("index.html", "ours")
        assert folder.remove("index.html") is False
        folder.write_text("deck.html", "ours again")   # ours: replaced
        assert folder.remove("deck.html") is True
    assert (out / "index.html").read_text(encoding="utf-8") == "<p>mine</p>" and not (out / "deck.html").exists()


def test_a_file_of_ours_edited_since_is_foreign(tmp_path):
    out = tmp_path / "out"
    with OwnedFolder(out) as folder:
        folder.write_text("index.html", "ours")
    OwnedFolder(out).claim().release()   # unchanged: ours
    (out / "index.html").write_text("edited by hand", encoding="utf-8")
    with pytest.raises(FolderError, match="changed since the build wrote it"):
        OwnedFolder(out).claim()
    with OwnedFolder(out, force=True) as folder:
        with pytest.raises(FolderError, match="will not overwrite"):
            folder.write_text("index.html", "ours")
    assert (out / "index.html").read_text(encoding="utf-8") == "edited by hand"


def test_a_second_writer_is_refused_naming_the_first(tmp_path):
    first = OwnedFolder(tmp_path / "out").claim()
    try:
        with pytest.raises(FolderError, match=rf"another gpu-viz build \(process {os.getpid()}\) is writing there"):
            OwnedFolder(tmp_path / "out").claim()
    finally:
        first.release()
    OwnedFolder(tmp_path / "out").claim().release()   # free again


def test_a_failure_before_any_write_leaves_no_folder_behind(tmp_path):
    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(RuntimeError, match="boom"):
        with OwnedFolder(out):
            raise RuntimeError("boom")
    assert not (tmp_path / "a").exists()
    existing = tmp_path / "empty"
    existing.mkdir()
    with pytest.raises(RuntimeError):
        with OwnedFolder(existing):
            raise RuntimeError("boom")
    assert existing.is_dir() and os.listdir(existing) == []


@pytest.mark.parametrize("where", ["the deck", "the ledger"])
def test_a_write_that_fails_keeps_the_earlier_file_and_names_the_path(tmp_path, monkeypatch, where):
    """The simulated full disk (the tmpfs test below makes a real one where the machine allows)."""
    out = tmp_path / "out"
    with OwnedFolder(out) as folder:
        folder.write_text("deck.html", "the good deck")
    before = _digests(out)
    real_open = open

    def full_disk(path, mode="r", *a, **kw):
        f = real_open(path, mode, *a, **kw)
        if "w" in mode and (where == "the ledger" or not str(path).endswith(outdir.LEDGER)) \
                and outdir.STAGING in str(path):
            f.close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return f

    monkeypatch.setattr(outdir, "open", full_disk, raising=False)
    with pytest.raises(FolderError) as exc:
        with OwnedFolder(out) as folder:
            folder.write_text("deck.html", "half a new deck")
    msg = str(exc.value)
    assert "No space left on device" in msg and str(out) in msg and "(" not in msg.split(":")[0], msg
    assert exc.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert _digests(out, ledger=False) == {k: v for k, v in before.items() if k != outdir.LEDGER}
    assert not (out / outdir.STAGING).exists()
    with OwnedFolder(out) as folder:   # still ours: the next build goes on
        folder.write_text("deck.html", "the next deck")


def test_paths_outside_the_folder_or_its_bookkeeping_are_refused(tmp_path):
    with OwnedFolder(tmp_path / "out") as folder:
        for bad in ("../x", "/etc/passwd", outdir.LEDGER, f"{outdir.STAGING}/x"):
            with pytest.raises(ValueError):
                folder.write_text(bad, "x")


# ----------------------------------------------------------------------------- the build's arguments
def test_out_empty_is_an_error_naming_it_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nbs", "01_first", "print(1)")
    assert cli.main(_slides("--notebooks", "nbs", "--out", "")) == 2
    assert "--out is empty" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["nbs"]
    with pytest.raises(slides.SlidesError, match="--out is empty"):
        slides.build(out_dir="", notebooks_dir=tmp_path / "nbs")


@pytest.mark.parametrize("executed", ["the notebooks folder", "a folder inside it"])
def test_executed_copies_never_go_into_the_notebooks_folder(tmp_path, capsys, executed):
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_first", "print(1)")
    before = _digests(nbs)
    target = nbs if executed == "the notebooks folder" else nbs / "executed"
    assert cli.main(_slides("--notebooks", nbs, "--out", tmp_path / "out", "--executed-dir", target)) == 2
    err = capsys.readouterr().err
    assert "--executed-dir" in err and "notebooks folder" in err and "Traceback" not in err
    assert _digests(nbs) == before and not (tmp_path / "out").exists()


def test_out_is_never_the_notebooks_folder(tmp_path, capsys):
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_first", "print(1)")
    assert cli.main(_slides("--notebooks", nbs, "--out", nbs, "--force")) == 2
    assert "is the notebooks folder" in capsys.readouterr().err and sorted(os.listdir(nbs)) == ["01_first.ipynb"]


def test_vendor_from_inside_the_outputs_vendor_is_refused_and_kept(tmp_path, fake_vendor, capsys):
    out = tmp_path / "out"
    assert _render_only(tmp_path, fake_vendor, out) == 0
    inside = out / "vendor" / "reveal.js"
    before = _digests(out)
    assert cli.main(_slides("--vendor-only", "--out", out, "--vendor-from", inside)) == 2
    assert "inside the output's vendor folder" in capsys.readouterr().err
    assert _digests(out) == before
    # the output's own vendor folder as the source: kept as it is
    assert cli.main(_slides("--vendor-only", "--out", out, "--vendor-from", out / "vendor")) == 0
    assert "vendor/ kept" in capsys.readouterr().out and _digests(out) == before


def test_a_foreign_vendor_folder_is_never_deleted(tmp_path, fake_vendor, capsys):
    """A Go vendor/ in OUT: refused, untouched; with --force the decks' files go beside it."""
    out = tmp_path / "out"
    go = out / "vendor" / "github.com" / "pkg" / "x.go"
    go.parent.mkdir(parents=True)
    go.write_text("package pkg\n", encoding="utf-8")
    assert _render_only(tmp_path, fake_vendor, out) == 2
    assert "vendor/github.com/pkg/x.go" in capsys.readouterr().err
    assert [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()] == ["vendor/github.com/pkg/x.go"]
    assert _render_only(tmp_path, fake_vendor, out, "--force") == 0
    assert go.read_text(encoding="utf-8") == "package pkg\n" and slides.vendor_complete(out / "vendor")
    # a vendor refresh replaces only its own files
    assert cli.main(_slides("--vendor-only", "--out", out, "--vendor-from", fake_vendor, "--force")) == 0
    assert go.is_file()


def test_user_files_named_like_the_build_s_are_never_overwritten(tmp_path, fake_vendor, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("<p>my index</p>", encoding="utf-8")
    (out / "manifest.json").write_text('{"mine": true}', encoding="utf-8")
    (out / "executed").mkdir()
    (out / "executed" / "01_first.ipynb").write_text("{}", encoding="utf-8")
    before = _digests(out)
    assert _render_only(tmp_path, fake_vendor, out) == 2
    assert "3 file(s) a gpu-viz build did not write" in capsys.readouterr().err and _digests(out) == before
    assert _render_only(tmp_path, fake_vendor, out, "--force") == 2   # index.html is theirs: refused
    assert "will not overwrite" in capsys.readouterr().err
    assert {k: v for k, v in _digests(out).items() if k in before} == before


def test_a_build_made_before_the_ledger_is_taken_as_the_build_s_own(tmp_path, fake_vendor, capsys):
    """An earlier build's folder (manifest.json listing decks, a stamped vendor/, no ledger) is
    rebuilt in place, as before; a foreign file beside it is still foreign."""
    out = tmp_path / "out"
    assert _render_only(tmp_path, fake_vendor, out) == 0
    (out / outdir.LEDGER).unlink()
    assert _render_only(tmp_path, fake_vendor, out) == 0
    (out / outdir.LEDGER).unlink()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    assert _render_only(tmp_path, fake_vendor, out) == 2
    assert "notes.txt" in capsys.readouterr().err


def test_a_build_that_fails_before_writing_creates_no_folder(tmp_path, fake_vendor, monkeypatch, capsys):
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_first", "print(1)")
    out = tmp_path / "new" / "out"
    assert cli.main(_slides("--notebooks", nbs, "--out", out, "--only", "99")) == 2   # no notebook matches
    # vendoring fails (as without npm) after the folder was claimed
    def no_npm(*args, **kwargs):
        raise slides.SlidesError("the decks' JavaScript is not vendored yet and npm is not installed")

    monkeypatch.setattr(slides, "vendor", no_npm)
    assert cli.main(_slides("--notebooks", nbs, "--out", out, "--no-execute", "--executed-dir", nbs)) == 2
    assert "npm is not installed" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


# ----------------------------------------------------------------------------- workers
@pytest.mark.parametrize("requested,notebooks,cores,gpu,want", [
    (100000, 2, 16, False, 2), (100000, 50, 16, False, 16), (3, 50, 16, False, 3), (1, 11, 2, False, 1),
    (8, 11, 16, True, 1), (0, 5, 4, False, 1)])
def test_the_notebooks_at_once_are_capped_by_notebooks_and_cores(monkeypatch, requested, notebooks, cores, gpu, want):
    monkeypatch.setattr(slides, "usable_cores", lambda: cores)
    assert slides.effective_jobs(requested, notebooks, gpu=gpu) == want


# ----------------------------------------------------------------------------- failure reports
_ANSI_TB = ["\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
            "\x1b[0;31mValueError\x1b[0m                                Traceback (most recent call last)",
            "Cell \x1b[0;32mIn[1], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;28;01mraise\x1b[39;00m ...",
            "\x1b[0;31mValueError\x1b[0m: learner typo"]


def test_a_failure_is_reported_as_type_message_and_cell_without_escape_codes():
    from nbclient.exceptions import CellExecutionError
    from nbformat.v4 import new_output

    nb = new_notebook(cells=[new_markdown_cell("# t"), new_code_cell("x = 1"),
                             new_code_cell("\n  raise ValueError('learner typo')  # here\nmore()", outputs=[
                                 new_output("error", ename="ValueError", evalue="learner \x1b[1mtypo\x1b[0m",
                                            traceback=_ANSI_TB)])])
    exc = CellExecutionError("\n".join(_ANSI_TB), "ValueError", "learner typo")
    text = slides.failure_text(nb, exc)
    assert text == "ValueError: learner typo (cell 2: raise ValueError('learner typo')  # here)"
    assert slides.strip_ansi("".join(_ANSI_TB)).count("\x1b") == 0
    # no error output (a timeout): the exception and the cell that was running
    nb.cells[2].outputs = []
    nb.cells[2].metadata["execution"] = {"iopub.execute_input": "t0"}
    nb.cells[1].metadata["execution"] = {"iopub.execute_input": "t0", "shell.execute_reply": "t1"}
    text = slides.failure_text(nb, TimeoutError("\x1b[31mA cell timed out while it was being executed, after 5 seconds.\nmore"))
    assert text == ("TimeoutError: A cell timed out while it was being executed, after 5 seconds. "
                    "(cell 2: raise ValueError('learner typo')  # here)")
    deck = slides.Deck("01_x", "x", Path("x.ipynb"), Path("y.ipynb"), mode="cpu", error="\x1b[31mValueError\x1b[0m: t\nmore")
    page = slides.index_html([deck], Path("."))
    assert "\x1b" not in page and "ValueError: t" in page


# ----------------------------------------------------------------------------- the PDF printer's browser
def test_a_bad_chromium_variable_is_an_error_naming_it(monkeypatch, tmp_path):
    from gpu_viz import pdf

    monkeypatch.setenv(pdf.CHROMIUM_ENV, str(tmp_path / "no-such-chromium"))
    with pytest.raises(slides.SlidesError, match=r"\$GPU_VIZ_CHROMIUM=.*no-such-chromium.*no such file"):
        pdf.chromium_path()
    not_exec = tmp_path / "chromium"
    not_exec.write_text("", encoding="utf-8")
    not_exec.chmod(0o644)
    monkeypatch.setenv(pdf.CHROMIUM_ENV, str(not_exec))
    if not os.access(not_exec, os.X_OK):  # (root may execute anything)
        with pytest.raises(slides.SlidesError, match="not an executable file"):
            pdf.chromium_path()
    monkeypatch.setenv(pdf.CHROMIUM_ENV, "/bin/true")
    assert pdf.chromium_path() == "/bin/true"


def test_a_bad_chromium_variable_stops_the_pdfs_with_a_clear_line(monkeypatch, tmp_path, fake_vendor, capsys):
    from gpu_viz import pdf

    monkeypatch.setenv(pdf.CHROMIUM_ENV, str(tmp_path / "nothing"))
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_first", "print(1)")
    rc = cli.main(["slides", "--notebooks", str(nbs), "--out", str(tmp_path / "out"), "--no-execute",
                   "--executed-dir", str(nbs), "--vendor-from", str(fake_vendor)])
    err = capsys.readouterr().err
    assert rc == 2 and "$GPU_VIZ_CHROMIUM=" in err and "the decks are built, the PDFs are not" in err
    assert "Traceback" not in err and (tmp_path / "out" / "01_first.slides.html").is_file()


def test_a_chromium_that_does_not_start_is_an_error_naming_it(monkeypatch):
    """A browser that does not start (here: playwright's error for $GPU_VIZ_CHROMIUM=/bin/true, as it
    reads, with its log) is one line naming the executable and the variable, not a traceback.
    (Tests start no Playwright of their own: tests/test_browser.py; this one stands in for it.)"""
    from types import SimpleNamespace

    from gpu_viz import pdf

    def launch(executable_path, args):
        raise RuntimeError("BrowserType.launch: Target page, context or browser has been closed\n"
                           "Browser logs:\n\n<launching> /bin/true --headless ...\n<launched> pid=1")

    monkeypatch.setenv(pdf.CHROMIUM_ENV, "/bin/true")
    pw = SimpleNamespace(chromium=SimpleNamespace(launch=launch))
    with pytest.raises(slides.SlidesError) as exc:
        pdf._launch(pw, pdf.chromium_path())
    assert str(exc.value) == ("Chromium at /bin/true ($GPU_VIZ_CHROMIUM) did not start: BrowserType.launch: Target "
                              "page, context or browser has been closed; set $GPU_VIZ_CHROMIUM to a working "
                              "Chromium, or skip the PDFs with --no-pdf")


# ----------------------------------------------------------------------------- a full disk
@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs (root, Linux), unmounted after; skips where it cannot be mounted."""
    where = tmp_path / "disk"
    where.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); the simulated full disk is tested instead")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_disk_keeps_the_good_deck_and_names_the_path(tmp_path, fake_vendor, small_disk, capsys):
    out = small_disk / "out"
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_first", "print(1)")
    args = _slides("--notebooks", nbs, "--out", out, "--no-execute", "--executed-dir", nbs, "--vendor-from", fake_vendor)
    assert cli.main(args) == 0
    before = _digests(out)
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    with open(small_disk / "filler", "wb") as f:   # leave 32 KiB: the ~300 KB deck cannot fit
        f.write(b"\0" * max(0, free - 32 * 1024))
    _notebook(nbs, "01_first", "print('a bigger deck')", "print(2)")
    capsys.readouterr()
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(out / "01_first.slides.html") in err, err
    assert "Traceback" not in err and "(28," not in err
    assert _digests(out, ledger=False) == {k: v for k, v in before.items() if k != outdir.LEDGER}, \
        "a full disk changed or left a half-written file in the build"
    assert not (out / outdir.STAGING).exists()


# ----------------------------------------------------------------------------- signals and concurrent builds (real builds)
def _kernels_of(pid: int) -> list:
    """The kernel processes a build started (jupyter_client gives each JPY_PARENT_PID=<its pid>)."""
    found = []
    for env in glob.glob("/proc/[0-9]*/environ"):
        try:
            if f"JPY_PARENT_PID={pid}\0".encode() in Path(env).read_bytes():
                found.append(int(env.split("/")[2]))
        except OSError:
            continue
    return found


def _start_build(nbs, out, *extra):
    return subprocess.Popen([sys.executable, "-m", "gpu_viz.cli", *_slides("--notebooks", nbs, "--out", out, *extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                            cwd=ROOT, start_new_session=True)


def _wait_for_kernels(proc, n=1, limit=60):
    t0 = time.time()
    while time.time() - t0 < limit and len(_kernels_of(proc.pid)) < n:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert len(_kernels_of(proc.pid)) >= n, "the build started no kernel"


def _gone(pid, limit=10):
    t0 = time.time()
    while time.time() - t0 < limit and _kernels_of(pid):
        time.sleep(0.2)
    return _kernels_of(pid) == []


needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="finds kernels through /proc (Linux)")


@pytest.mark.slow
@needs_proc
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_one_signal_stops_the_build_keeps_the_good_decks_and_leaves_no_kernel(tmp_path, fake_vendor, sig, code):
    """A real signal to a real build: SIGINT as the terminal sends Ctrl-C (to the build's process
    group), SIGTERM as a job manager does.  The build stops at once, exits 128 + the signal, every
    file of the earlier build is as it was, and no kernel is left running."""
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    _notebook(nbs, "01_first", "print('first')")
    _notebook(nbs, "02_second", "print('second')")
    first = subprocess.run([sys.executable, "-m", "gpu_viz.cli", *_slides("--notebooks", nbs, "--out", out,
                            "--vendor-from", fake_vendor)], capture_output=True, text=True, encoding="utf-8", cwd=ROOT)
    assert first.returncode == 0, first.stderr
    before = _digests(out)
    _notebook(nbs, "02_second", "import time\ntime.sleep(120)")
    proc = _start_build(nbs, out, "--jobs", "2")
    _wait_for_kernels(proc)
    time.sleep(1.0)
    t0 = time.time()
    os.killpg(proc.pid, sig) if sig == signal.SIGINT else proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert time.time() - t0 < 30 and "stopped by" in err and "Traceback" not in err, err
    assert _gone(proc.pid), f"kernels left running: {_kernels_of(proc.pid)}"
    assert _digests(out) == before


@pytest.mark.slow
@needs_proc
def test_kernels_die_with_a_killed_build(tmp_path, fake_vendor):
    """SIGKILL (the OOM killer) leaves the build no time to clean up: its kernels still end
    (ipykernel watches its parent), no worker processes are left behind."""
    nbs = tmp_path / "nbs"
    _notebook(nbs, "01_slow", "import time\ntime.sleep(120)")
    proc = _start_build(nbs, tmp_path / "out", "--vendor-from", fake_vendor)
    _wait_for_kernels(proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert _gone(proc.pid, limit=15), f"kernels outlived the build: {_kernels_of(proc.pid)}"


@pytest.mark.slow
@needs_proc
def test_jobs_beyond_the_notebooks_start_one_kernel_per_notebook(tmp_path, fake_vendor):
    nbs = tmp_path / "nbs"
    for k in (1, 2):
        _notebook(nbs, f"0{k}_slow", "import time\ntime.sleep(4)")
    proc = _start_build(nbs, tmp_path / "out", "--jobs", "100000", "--vendor-from", fake_vendor)
    most = 0
    while proc.poll() is None:
        most = max(most, len(_kernels_of(proc.pid)))
        time.sleep(0.1)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "--jobs 100000:" in out and "at a time" in out and 1 <= most <= 2, (most, out)


@pytest.mark.slow
@needs_proc
def test_two_builds_into_one_folder_never_both_pass_with_a_deck_missing(tmp_path, fake_vendor):
    """The second build into a folder another build is writing refuses at once (exit 2, naming the
    first's process); the first finishes and lists every deck it built."""
    nbs_a, nbs_b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    _notebook(nbs_a, "01_first", "import time\ntime.sleep(6)")
    _notebook(nbs_b, "02_second", "print(2)")
    a = _start_build(nbs_a, out, "--vendor-from", fake_vendor)
    _wait_for_kernels(a)
    b = subprocess.run([sys.executable, "-m", "gpu_viz.cli", *_slides("--notebooks", nbs_b, "--out", out,
                        "--vendor-from", fake_vendor)], capture_output=True, text=True, encoding="utf-8",
                       cwd=ROOT, timeout=120)
    _out, err_a = a.communicate(timeout=120)
    assert a.returncode == 0, err_a
    assert b.returncode == 2 and f"another gpu-viz build (process {a.pid}) is writing there" in b.stderr, b.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [d["name"] for d in manifest["decks"]] == ["01_first"] and 'href="01_first.slides.html"' in \
        (out / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_failing_notebook_reports_its_exception_and_cell(tmp_path, fake_vendor, capsys):
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    _notebook(nbs, "01_broken", "x = 1", "raise ValueError('learner typo')")
    assert cli.main(_slides("--notebooks", nbs, "--out", out, "--vendor-from", fake_vendor, "--timeout", "60")) == 1
    err = capsys.readouterr().err
    line = next(ln for ln in err.splitlines() if "FAILED" in ln)
    assert line == "gpu-viz slides: 01_broken FAILED: ValueError: learner typo (cell 2: raise ValueError('learner typo'))"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "ValueError: learner typo (cell 2: raise ValueError(&#39;learner typo&#39;))" in index
    assert "\x1b" not in index and "\x1b" not in (out / "manifest.json").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_separate_executed_dir_is_owned_like_out(tmp_path, fake_vendor, capsys):
    """--executed-dir outside OUT is an output too: rebuilt in place, an earlier build's copies
    (no ledger yet) taken as the build's own, a notebook the user keeps there never replaced."""
    nbs, out, exe = tmp_path / "nbs", tmp_path / "out", tmp_path / "executed"
    _notebook(nbs, "01_first", "print(1)")
    args = _slides("--notebooks", nbs, "--out", out, "--executed-dir", exe, "--vendor-from", fake_vendor)
    assert cli.main(args) == 0 and (exe / "01_first.ipynb").is_file()
    (exe / outdir.LEDGER).unlink()
    assert cli.main(args) == 0
    (exe / outdir.LEDGER).unlink()
    mine = exe / "01_first.ipynb"
    mine.write_text(nbformat.writes(new_notebook()), encoding="utf-8")   # the user's own, same name
    before = mine.read_bytes()
    assert cli.main(args) == 2 and "--executed-dir" in capsys.readouterr().err
    assert cli.main(args + ["--force"]) == 2 and "will not overwrite" in capsys.readouterr().err
    assert mine.read_bytes() == before


def test_a_full_disk_during_the_javascript_copy_names_the_file(tmp_path, fake_vendor, small_disk, capsys):
    """The vendor copy on a full disk: one line naming the file and the system's reason (it was
    9.6 KB of Python tuples from shutil.copytree), and no half-copied file under its name."""
    import shutil

    big = tmp_path / "vendor"
    shutil.copytree(fake_vendor, big)
    (big / "mathjax" / "MathJax.js").write_bytes(b"/* big */" + b" " * (2 << 20))
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    with open(small_disk / "filler", "wb") as f:   # leave 1 MiB: the 2 MiB file cannot fit
        f.write(b"\0" * max(0, free - (1 << 20)))
    out = small_disk / "out"
    assert cli.main(_slides("--vendor-only", "--out", out, "--vendor-from", big)) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"gpu-viz slides: could not write {out / 'vendor' / 'mathjax' / 'MathJax.js'}: No space left on "
                   "device (the disk is full: free some space and build again; the earlier file is unchanged)"), err
    assert not (out / "vendor" / "mathjax" / "MathJax.js").exists() and not (out / outdir.STAGING).exists()
