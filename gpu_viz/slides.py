"""`gpu-viz slides`: execute the course notebooks and render offline reveal.js decks.

Data path::

    notebooks/NN_topic.ipynb --(nbclient, widget state stored)--> <out>/executed/NN_topic.ipynb
        --(StaticPlayerPreprocessor + SlidesExporter, template slides/templates/gpu_viz_reveal)-->
        <out>/NN_topic.slides.html   and   <out>/index.html (every deck, its title, mode, GPU, date)

Offline: every script a deck loads (reveal.js, require.js, jQuery, MathJax 2, the
``@jupyter-widgets/html-manager`` embedder) comes from ``<out>/vendor/``, copied from
``slides/node_modules`` (``npm ci`` against the pinned ``slides/package-lock.json``), from
``--vendor-from DIR`` (an already-vendored folder, e.g. carried to a machine with no npm), or
kept when ``<out>/vendor/`` is already complete.  No request leaves the page.

Players: :meth:`gpu_viz.widgets.Animation.show` emits two outputs: a static HTML/JS player
(output metadata ``{"gpu_viz": {"player": true}}``), then its live twin, a widget view
(``{"gpu_viz": {"live": true}}``).  A deck has no kernel, so :class:`StaticPlayerPreprocessor`
drops the live twins (and any widget view left in a player output; the static player renders)
and prunes the stored widget state down to the models that other widget
outputs still reference (those render from the embedded state through the html-manager).

Mode: notebooks run in CPU mode when this machine has no usable GPU (they label that
themselves), live on a GPU otherwise; the index says which, and on what GPU, per deck.

Safety: ``<out>`` (and a separate ``--executed-dir``) is an :class:`gpu_viz.outdir.OwnedFolder`: the
build refuses a folder holding files it did not write (unless ``--force``, and even then never
overwrites or deletes one), writes every file whole, and lets one build write there at a time.
Notebooks execute in kernels started by this process (:func:`run_notebooks`), at most one per
notebook and core; one Ctrl-C or SIGTERM stops them all and writes nothing unfinished.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import fnmatch
import json
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .data import CHECKOUT, course_dir
from .deck_vendor import (BUILD_METADATA_KEY, NOTEBOOK_GLOB, VENDOR_REQUIRED, VENDOR_STAMP, VENDOR_URLS,  # noqa: F401
                          SlidesError, _earlier_build, _earlier_executed, vendor_complete,
                          _inside, vendor)
from .deck_preprocess import (CODE_CLASS, CODE_COLS, PLAYER_METADATA_KEY, SLIDE_HEIGHT, SLIDE_WIDTH,  # noqa: F401
                              WIDGET_STATE_MIME, WIDGET_VIEW_MIME, _LazyPreprocessor, code_outputs, drop_colab_badges,
                              glue_printed_words, inline_svg, is_printed_code, prune_widget_state, static_players,
                              SPEAKER_NOTES_KEY, expand_speaker_notes, fold_speaker_notes)
from .outdir import OwnedFolder

SLIDES_DIR = course_dir("slides", "_slides")
TEMPLATES_DIR = SLIDES_DIR / "templates"
TEMPLATE_NAME = "gpu_viz_reveal"
#: slides/build in a checkout; ./slides-build (the current folder) for an installed package
DEFAULT_OUT = SLIDES_DIR / "build" if CHECKOUT is not None else Path("slides-build")
DEFAULT_NOTEBOOKS = course_dir("notebooks", "_notebooks")

#: The smallest text a slide may show, in CSS px at that size (read from the back of a room).
MIN_TEXT_PX = 18
#: Cell tags honoured on slides: code hidden (output kept), or the whole cell left out.
HIDE_INPUT_TAGS = ("hide-input", "remove-input")
REMOVE_CELL_TAGS = ("remove-cell",)


# ----------------------------------------------------------------------------- decks
@dataclasses.dataclass
class Deck:
    """One notebook's deck.

    Attributes:
        name: the notebook stem, ``"03_warps_simt"``.
        title: the first ``# heading`` of the notebook (or its name).
        source: the notebook under notebooks/.
        executed: the executed copy (outputs, widget state) under ``executed_dir``.
        html: the rendered deck, ``<out>/<name>.slides.html`` (None if rendering failed).
        mode: ``"gpu"`` or ``"cpu"`` (how it was executed), or ``"not executed"``.
        gpu: the GPU's name in GPU mode, else None.
        date: ISO date of the execution.
        seconds: execution wall time, s.
        error: why execution or rendering failed, else "".
    """

    name: str
    title: str
    source: Path
    executed: Path
    html: Optional[Path] = None
    mode: str = "not executed"
    gpu: Optional[str] = None
    date: str = ""
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.html is not None

    def as_dict(self) -> Dict:
        d = dataclasses.asdict(self)
        for k in ("source", "executed", "html"):
            d[k] = str(d[k]) if d[k] is not None else None
        return d


@dataclasses.dataclass
class BuildResult:
    """What :func:`build` produced: the decks (in notebook order), the index, the vendor folder."""

    out_dir: Path
    executed_dir: Path
    index: Path
    decks: List[Deck]
    vendored: str

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.decks)

    @classmethod
    def load(cls, out_dir: Path) -> "BuildResult":
        """A build made earlier (elsewhere, e.g. on a GPU machine), read back from its ``manifest.json``.

        Paths in the manifest are re-rooted at ``out_dir``.  Raises ``FileNotFoundError`` without one.
        """
        out_dir = Path(out_dir)
        manifest = out_dir / "manifest.json"
        if not manifest.is_file():
            raise FileNotFoundError(f"no manifest.json in {out_dir}: not a `gpu-viz slides` build")
        decks = []
        for d in json.loads(manifest.read_text(encoding="utf-8"))["decks"]:
            html = out_dir / Path(d["html"]).name if d.get("html") else None
            decks.append(Deck(name=d["name"], title=d["title"], source=Path(d["source"]),
                              executed=out_dir / "executed" / Path(d["executed"]).name, html=html,
                              mode=d["mode"], gpu=d.get("gpu"), date=d.get("date", ""),
                              seconds=d.get("seconds", 0.0), error=d.get("error", "")))
        return cls(out_dir=out_dir, executed_dir=out_dir / "executed", index=out_dir / "index.html",
                   decks=decks, vendored="prebuilt")

    def deck(self, name: str) -> Deck:
        for d in self.decks:
            if d.name == name:
                return d
        raise KeyError(f"no deck named {name!r}; have {[d.name for d in self.decks]}")


def notebook_title(nb, fallback: str) -> str:
    """The first markdown ``# Title`` in ``nb`` (badges and links stripped), else ``fallback``."""
    if nb.metadata.get("title"):
        return str(nb.metadata["title"])
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            m = re.match(r"^#\s+(.+?)\s*#*\s*$", line)
            if m:
                return m.group(1)
    return fallback


def find_notebooks(notebooks_dir: Path, only: Optional[str] = None) -> List[Path]:
    """``NN_*.ipynb`` under ``notebooks_dir``, sorted; ``only`` is a glob or substring filter on the name.

    Raises:
        SlidesError: ``only`` given but holding no pattern (``""``, ``","``): it would select every deck.
    """
    paths = sorted(Path(notebooks_dir).glob(NOTEBOOK_GLOB))
    if only is not None:
        pats = [p.strip() for p in only.split(",") if p.strip()]
        if not pats:
            raise SlidesError(f"--only needs at least one pattern (e.g. '03' or '0[1-3]*'), got {only!r}")
        paths = [p for p in paths if any(_name_matches(p, pat) for pat in pats)]
    return paths


def _name_matches(path: Path, pat: str) -> bool:
    """A number ("10", "3") is a notebook's number (10_*, 03_*: not the "1024" of 05_block_1024_cap);
    anything else a glob on the name or a substring of the stem ("rmsnorm")."""
    if pat.isdigit():
        return path.stem.split("_", 1)[0].lstrip("0") == pat.lstrip("0")
    return fnmatch.fnmatch(path.name, pat) or fnmatch.fnmatch(path.stem, pat) or pat in path.stem


def _mode_now(force_cpu: bool = False):
    from . import backend

    if force_cpu:
        return backend.CPU, None
    b = backend.detect()
    return (backend.GPU, b.device_name) if b.is_gpu else (backend.CPU, None)


def kernel_config():
    """traitlets config for the kernel manager that nbclient starts for each notebook.

    ipykernel >= 7.4 logs "[IPKernelApp] WARNING | Kernel is running over TCP without encryption"
    once per kernel unless the manager provisions CurveZMQ keys.  jupyter_client's documented
    setting ``KernelManager.transport_encryption = "auto"`` provisions them when the kernelspec
    declares ``supported_encryption: curve`` (ipykernel's does), so the warning goes away because
    its cause does: nothing is filtered, a kernel's real warnings and errors still print.  With a
    jupyter_client older than that setting, or a pyzmq without CurveZMQ, the config is empty (those
    kernels run as before).
    """
    from traitlets.config import Config

    cfg = Config()
    try:
        import zmq
        from jupyter_client.manager import KernelManager
    except ImportError:
        return cfg
    if "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve"):
        cfg.KernelManager.transport_encryption = "auto"
    return cfg


class BuildInterrupted(Exception):
    """The build was stopped by a signal: Ctrl-C (SIGINT), SIGTERM or SIGHUP.  Nothing it had not
    finished was written; ``signum`` is the signal's number (the CLI exits 128 + signum)."""

    def __init__(self, signum: int):
        self.signum = signum
        name = {signal.SIGINT: "Ctrl-C (SIGINT)"}.get(signum) or signal.Signals(signum).name
        super().__init__(f"stopped by {name}: every deck, index and manifest already in the output folder is as "
                         "it was before this build (a file is only ever replaced whole)")


@contextlib.contextmanager
def _stopped_by_signals():
    """Turn SIGTERM and SIGHUP (and Ctrl-C's KeyboardInterrupt) into :class:`BuildInterrupted` in
    the main thread, for the duration of a build; the previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise BuildInterrupted(signum)

    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]
    before = {s: signal.signal(s, stop) for s in wanted}
    try:
        yield
    except KeyboardInterrupt:
        raise BuildInterrupted(signal.SIGINT) from None
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def effective_jobs(requested: int, notebooks: int, gpu: bool = False) -> int:
    """How many notebooks execute at once: ``requested``, at most one per notebook and one per
    usable core (each runs its own kernel process); one on a GPU (timings must not be shared)."""
    if gpu:
        return 1
    return max(1, min(int(requested), int(notebooks), usable_cores()))


#: ANSI escape sequences (colours, cursor moves) as IPython writes them into tracebacks.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape codes (the colours of an IPython traceback)."""
    return _ANSI.sub("", text)


def failure_text(nb, exc: BaseException) -> str:
    """One line saying why a notebook's execution failed: the exception's type and message and the
    cell it came from (``ValueError: learner typo (cell 4: raise ValueError('learner typo'))``),
    without escape codes; from the notebook's error output, else from ``exc``."""
    def first_line(cell) -> str:
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        return next((ln.strip() for ln in src.splitlines() if ln.strip()), "")[:120]

    def one_line(text) -> str:
        return " ".join(strip_ansi(str(text)).split())

    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                value = one_line(out.get("evalue", "")) or "(no message)"
                return f"{out.get('ename', 'Error')}: {value} (cell {i}: {first_line(cell)})"
    # no error output: a timeout or a dead kernel; the cell that was running has started but not ended
    running = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"
               and "iopub.execute_input" in c.get("metadata", {}).get("execution", {})
               and "shell.execute_reply" not in c.get("metadata", {}).get("execution", {})]
    where = f" (cell {running[-1]}: {first_line(nb.cells[running[-1]])})" if running else ""
    message = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else "") or "(no message)"
    return f"{type(exc).__name__}: {message}{where}"


async def _run_notebook(source: Path, timeout: int, kernel_name: str, force_cpu: bool, clients: list):
    """Execute ``source`` top to bottom with nbclient (widget state stored); ``(nb, info)``."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    from . import backend

    nb = nbformat.read(str(source), as_version=4)
    mode, gpu = _mode_now(force_cpu)
    env = dict(os.environ)
    if force_cpu:
        env[backend.FORCE_CPU_ENV] = "1"
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, store_widget_state=True,
                            resources={"metadata": {"path": str(Path(source).parent.resolve())}},
                            config=kernel_config())
    clients.append(client)
    t0 = time.perf_counter()
    error = ""
    try:
        await client.async_execute(env=env)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        error = failure_text(nb, exc)
    except Exception as exc:  # kernel failed to start, etc.
        error = f"{type(exc).__name__}: {' '.join(strip_ansi(str(exc)).split())}"
    seconds = time.perf_counter() - t0
    info = {"mode": mode, "gpu": gpu, "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(seconds, 1), "error": error}
    nb.metadata[BUILD_METADATA_KEY] = {k: v for k, v in info.items() if k != "error"}
    if error:
        nb.metadata[BUILD_METADATA_KEY]["error"] = error[:2000]
    return nb, info


#: How long an interrupted build waits for its kernels to shut down (they die with this process
#: anyway: ipykernel polls its parent's pid).
KERNEL_STOP_S = 20


def run_notebooks(jobs: Sequence[Tuple[Path, int, bool]], at_once: int = 1, kernel_name: str = "python3"):
    """Execute each ``(source, timeout, force_cpu)``, ``at_once`` at a time; ``[(nb, info)]`` in order.

    Every notebook runs in its own kernel process, started and watched from one event loop in a
    helper thread of this process: no worker processes to outlive it (the kernels themselves stop
    when this process ends).  A signal in the main thread (Ctrl-C, or SIGTERM through
    :func:`_stopped_by_signals`) cancels every notebook at once, shuts their kernels down and
    propagates; nothing is returned for a run cut short.
    """
    import asyncio

    results: list = [None] * len(jobs)
    clients: list = []
    loop = asyncio.new_event_loop()

    async def main():
        gate = asyncio.Semaphore(max(1, at_once))

        async def one(k, source, timeout, force_cpu):
            async with gate:
                results[k] = await _run_notebook(Path(source), timeout, kernel_name, force_cpu, clients)

        await asyncio.gather(*(one(k, *job) for k, job in enumerate(jobs)))

    task = loop.create_task(main())
    failure: list = []

    def work():
        # nbclient's own SIGINT/SIGTERM handlers need the main thread: here they stand down, so a
        # signal reaches this build instead of only ending the current notebook's kernel
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(task)
        except BaseException as exc:  # noqa: BLE001 -- handed to the main thread
            failure.append(exc)
        finally:
            # nbclient's helper tasks (its kernel-alive poll) end with the loop, not after it
            rest = asyncio.all_tasks(loop)
            for t in rest:
                t.cancel()
            loop.run_until_complete(asyncio.gather(*rest, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    worker = threading.Thread(target=work, name="gpu-viz-notebooks", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except BaseException:
        for client in clients:
            client.shutdown_kernel = "immediate"
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(task.cancel)
        worker.join(KERNEL_STOP_S)
        raise
    finally:
        _stop_kernels(clients)
    if failure and not isinstance(failure[0], asyncio.CancelledError):
        raise failure[0]
    return results


def _stop_kernels(clients) -> None:
    """After :func:`run_notebooks`: no kernel of ours is left running, and nbclient's exit hooks
    (which would shut down, at interpreter exit, a kernel already shut down) are withdrawn."""
    import atexit

    for client in clients:
        atexit.unregister(client._cleanup_kernel)
        process = getattr(getattr(getattr(client, "km", None), "provisioner", None), "process", None)
        if process is not None and process.poll() is None:
            try:  # the kernel leads its own session (jupyter_client starts it so): its group goes too
                os.killpg(process.pid, signal.SIGKILL)
            except (AttributeError, OSError):
                with contextlib.suppress(OSError):
                    process.kill()


def execute_notebook(source: Path, executed: Path, timeout: int = 600, kernel_name: str = "python3",
                     force_cpu: bool = False) -> Dict:
    """Execute ``source`` top to bottom with nbclient (widget state stored); write ``executed``.

    The kernel runs with the notebook's folder as working directory and this process's
    environment, plus ``GPU_VIZ_FORCE_CPU=1`` when ``force_cpu``.  The executed copy is written
    (whole: beside its name, then renamed) even when a cell fails, so the error can be read in it.

    Returns:
        ``{"mode", "gpu", "date", "seconds", "error"}``; ``error`` is "" on success, else one line:
        the exception's type, message and cell (:func:`failure_text`).
    """
    import nbformat

    nb, info = run_notebooks([(Path(source), timeout, force_cpu)], 1, kernel_name)[0]
    _write_whole(Path(executed), nbformat.writes(nb).encode("utf-8"))
    return info


def _write_whole(path: Path, data: bytes) -> None:
    """``data`` at ``path``, written beside it and renamed into place (never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def exporter():
    """The configured nbconvert SlidesExporter (vendored URLs, course template, static players)."""
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    c = Config()
    se = c.SlidesExporter
    for key, url in VENDOR_URLS.items():
        setattr(se, key, url)
    se.extra_template_basedirs = [str(TEMPLATES_DIR)]
    se.template_name = TEMPLATE_NAME
    se.reveal_theme = "white"        # base theme; slides/templates/.../gpu_viz_theme.css overrides it
    se.reveal_number = "c/t"         # slide numbers: current / total
    se.reveal_transition = "none"    # nothing moves on a projector but the content
    se.reveal_scroll = False         # no scrolling slides: every slide fits (tests/test_slide_fit.py)
    se.reveal_width = str(SLIDE_WIDTH)
    se.reveal_height = str(SLIDE_HEIGHT)
    se.exclude_input_prompt = True
    se.exclude_output_prompt = True
    # one output per stream run: a print split across flushes would show as two blocks with a
    # blank line between them (a line taller on the slide)
    se.preprocessors = ["nbconvert.preprocessors.CoalesceStreamsPreprocessor", _LazyPreprocessor.get(),
                        "nbconvert.preprocessors.TagRemovePreprocessor"]
    # cell tags a notebook can use to keep a slide readable: hide a long setup cell's code, or the cell
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_input_tags = set(HIDE_INPUT_TAGS)
    c.TagRemovePreprocessor.remove_cell_tags = set(REMOVE_CELL_TAGS)
    if not (TEMPLATES_DIR / TEMPLATE_NAME / "index.html.j2").is_file():
        raise SlidesError(f"slide template missing: {TEMPLATES_DIR / TEMPLATE_NAME}/index.html.j2")
    return SlidesExporter(config=c)


def deck_html(executed: Path, name: str, title: Optional[str] = None) -> str:
    """One executed notebook as a reveal.js deck (HTML loading ``vendor/`` beside it), checked offline;
    ``name`` is the deck's file name (``NN_topic.slides.html``)."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    if title:
        nb.metadata["title"] = title
    # before nbconvert groups cells into slides (its reveal metadata pass runs ahead of any
    # configured preprocessor): the notes of a removed cell stay on its slide
    expand_speaker_notes(nb)
    body, _resources = exporter().from_notebook_node(nb, resources={"metadata": {"name": Path(name).stem}})
    _check_offline(body, name)
    return body


def render_deck(executed: Path, out_html: Path, title: Optional[str] = None) -> Path:
    """Render one executed notebook to ``out_html`` (:func:`deck_html`), written whole."""
    out_html = Path(out_html)
    _write_whole(out_html, deck_html(executed, out_html.name, title).encode("utf-8"))
    return out_html


_REMOTE = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//|import\s+\w+\s+from\s+["']https?://""")


def _check_offline(body: str, name: str) -> None:
    """Refuse a deck whose markup would load anything from the network (links to click are fine)."""
    for m in _REMOTE.finditer(body):
        start = body.rfind("<", 0, m.start())
        tag = body[start:start + 8].lower()
        if tag.startswith("<a ") or tag.startswith("<a\n"):
            continue  # a hyperlink (the Colab badge's target) is not a load
        snippet = body[max(0, m.start() - 80): m.end() + 80]
        raise SlidesError(f"{name}: the deck would load a remote resource: ...{snippet}...")


# ----------------------------------------------------------------------------- index
#: The index's words for a deck executed in CPU mode: most chapters show the CPU model's traces;
#: the measured ones (their notebook calls gpu_viz.banner(recorded=True)) show committed GPU records.
CPU_TRACES_LABEL = "CPU mode (no GPU; model traces, nothing timed)"
CPU_RECORDS_LABEL = "CPU mode (no GPU; committed GPU records shown, nothing timed)"


def _shows_records(source: Path) -> bool:
    """Whether the notebook at ``source`` is a measured chapter: its banner cell says so
    (``gpu_viz.banner(recorded=True)``).  An unreadable source counts as not."""
    try:
        from . import RECORDED_BANNER_CALL

        return RECORDED_BANNER_CALL in Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def index_html(decks: Sequence[Deck], out_dir: Path, built_at: Optional[str] = None) -> str:
    """The index page of ``decks`` in ``out_dir``: each deck with its title, mode, GPU, date, PDF
    (when one is there) and, for a failed one, why."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True)
    tmpl = env.get_template("index.html.j2")
    rows = []
    for d in decks:
        rows.append({
            "name": d.name, "title": d.title,
            "href": d.html.name if d.html is not None else None,
            "pdf": (d.html.name.replace(".slides.html", ".pdf")
                    if d.html is not None and (Path(out_dir) / d.html.name.replace(".slides.html", ".pdf")).is_file()
                    else None),
            "mode": ("GPU: " + (d.gpu or "?")) if d.mode == "gpu" else (
                (CPU_RECORDS_LABEL if _shows_records(d.source) else CPU_TRACES_LABEL) if d.mode == "cpu" else d.mode),
            "date": d.date, "error": strip_ansi(d.error).splitlines()[0][:300] if d.error else "",
        })
    return tmpl.render(decks=rows, built_at=built_at or _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC"))


def write_index(decks: Sequence[Deck], out_dir: Path, built_at: Optional[str] = None,
                folder: Optional[OwnedFolder] = None) -> Path:
    """Write ``out_dir/index.html`` (:func:`index_html`), whole, through ``folder`` (the build's
    output folder), else claiming ``out_dir`` for it: an ``index.html`` the build did not write is
    never replaced (FolderError)."""
    page = index_html(decks, out_dir, built_at)
    if folder is not None:
        return folder.write_text("index.html", page)
    with OwnedFolder(Path(out_dir), "--out", force=True, adopt=_earlier_build) as owned:
        return owned.write_text("index.html", page)


# ----------------------------------------------------------------------------- build
def _with_earlier_decks(built: Sequence[Deck], out_dir: Path) -> List[Deck]:
    """``built`` plus the decks of an earlier build in ``out_dir`` that this one did not rebuild and
    whose page is still there, by name: a build of some decks (``--only``) keeps the index and the
    manifest listing all of them, each with its own mode, GPU and date."""
    try:
        earlier = BuildResult.load(out_dir).decks
    except (FileNotFoundError, ValueError, KeyError, TypeError):  # none, or not one we can read
        earlier = []
    names = {d.name for d in built}
    kept = [d for d in earlier if d.name not in names and d.html is not None and d.html.is_file()]
    return sorted([*built, *kept], key=lambda d: d.name)


def _check_roles(out_dir: Path, notebooks_dir: Path, executed_dir: Path, execute: bool, explicit: bool) -> None:
    """A build's inputs are never its outputs: the notebooks folder is not the output folder, and the
    executed copies are never written into the notebooks folder (nor, for an ``--executed-dir`` the
    user gave, anywhere under it).

    Raises:
        SlidesError: naming the arguments.
    """
    if not notebooks_dir.exists():
        return
    if out_dir.resolve() == notebooks_dir.resolve():
        raise SlidesError(f"--out {out_dir} is the notebooks folder (--notebooks {notebooks_dir}): the decks would "
                          "be written among the sources; choose another --out")
    same = executed_dir.resolve() == notebooks_dir.resolve()
    if execute and (same or (explicit and _inside(executed_dir, notebooks_dir))):
        raise SlidesError(f"--executed-dir {executed_dir} is the notebooks folder or inside it (--notebooks "
                          f"{notebooks_dir}): the executed copies, with their outputs, would replace or sit among "
                          "the sources; choose a folder outside it (default: OUT/executed)")


def build(out_dir: Path = DEFAULT_OUT, notebooks_dir: Path = DEFAULT_NOTEBOOKS, only: Optional[str] = None,
          execute: bool = True, executed_dir: Optional[Path] = None, timeout: int = 600, jobs: int = 1,
          vendor_from: Optional[Path] = None, force_cpu: bool = False, log=print, force: bool = False) -> BuildResult:
    """Execute (unless ``execute=False``) and render every ``NN_*.ipynb``; write the index.

    The build writes only into folders it owns (:class:`gpu_viz.outdir.OwnedFolder`): ``out_dir``
    (and ``executed_dir`` when it lies elsewhere) must be new, empty, or hold only files an earlier
    build wrote, unless ``force``; a file it did not write is never overwritten or deleted.  Each
    file is written whole, so a failed or interrupted build leaves every earlier deck as it was.

    Args:
        out_dir: where decks, ``index.html``, ``vendor/`` and ``manifest.json`` go.
        notebooks_dir: where the ``NN_topic.ipynb`` sources are.
        only: comma-separated globs/substrings of notebook names (``"03*,rmsnorm"``).
        execute: False renders the executed copies already in ``executed_dir``.
        executed_dir: executed notebooks (default ``out_dir/executed``); never the notebooks folder.
        timeout: per-cell timeout, s.
        jobs: notebooks executed at once (each in its own kernel), at most one per notebook and per
            core (:func:`effective_jobs`); CPU mode only, a GPU build runs one at a time so that no
            notebook's timings are disturbed by another's kernels.
        vendor_from: a complete vendor folder to copy instead of npm (see :func:`vendor`).
        force_cpu: execute in CPU mode even on a GPU machine (``GPU_VIZ_FORCE_CPU=1`` for the kernels).
        force: build into a folder that holds files the build did not write (they stay untouched).

    Returns:
        :class:`BuildResult`; a deck whose notebook failed still gets a page (showing the error
        cell) and its ``error`` is set.

    Raises:
        SlidesError: no notebook matched, an input is an output, an executed copy is missing with
            ``execute=False``, or the JavaScript cannot be vendored.
        FolderError: the output folder holds files the build did not write, another build is
            writing there, or a file cannot be written (the path and the system's reason).
        BuildInterrupted: Ctrl-C, SIGTERM or SIGHUP; nothing unfinished was written.
    """
    import nbformat

    if str(out_dir) == "":
        raise SlidesError("--out is empty: name the output folder (e.g. --out slides-build)")
    out_dir, notebooks_dir = Path(out_dir), Path(notebooks_dir)
    explicit = executed_dir is not None
    executed_dir = Path(executed_dir) if executed_dir else out_dir / "executed"
    _check_roles(out_dir, notebooks_dir, executed_dir, execute, explicit)
    sources = find_notebooks(notebooks_dir, only)
    if not sources:
        raise SlidesError(f"no notebook matches {NOTEBOOK_GLOB!r}"
                          + (f" and --only {only!r}" if only else "") + f" in {notebooks_dir}")
    decks = []
    for src in sources:
        nb = nbformat.read(str(src), as_version=4)
        decks.append(Deck(name=src.stem, title=notebook_title(nb, src.stem), source=src,
                          executed=executed_dir / src.name))
    if not execute:
        for d in decks:
            if not d.executed.is_file():
                raise SlidesError(f"--no-execute: no executed copy of {d.source.name} in {executed_dir}; "
                                  "build once without --no-execute (or point --executed-dir at one)")
            meta = nbformat.read(str(d.executed), as_version=4).metadata.get(BUILD_METADATA_KEY, {})
            d.mode, d.gpu = meta.get("mode", "not executed"), meta.get("gpu")
            d.date, d.seconds, d.error = meta.get("date", ""), meta.get("seconds", 0.0), meta.get("error", "")

    with _stopped_by_signals(), contextlib.ExitStack() as stack:
        out = stack.enter_context(OwnedFolder(out_dir, "--out", force=force, adopt=_earlier_build))
        if out.adopted:
            log(f"[slides] {out_dir}: an earlier build's {out.adopted} files taken as this build's own")
        if execute and _inside(executed_dir, out_dir):
            executed_in, executed_prefix = out, executed_dir.resolve().relative_to(out_dir.resolve()).as_posix()
        elif execute:
            executed_in = stack.enter_context(OwnedFolder(executed_dir, "--executed-dir", force=force,
                                                          adopt=_earlier_executed))
            executed_prefix = ""
        how = vendor(out_dir / "vendor", vendor_from=vendor_from, folder=out)
        log(f"[slides] vendor/: {how} ({out_dir / 'vendor'})")

        if execute:
            mode, gpu = _mode_now(force_cpu)
            at_once = effective_jobs(jobs, len(decks), gpu=bool(gpu))
            if gpu and jobs > 1:
                log(f"[slides] GPU mode: executing one notebook at a time (--jobs {jobs} ignored): notebooks that "
                    "share a GPU would disturb each other's timings")
            elif at_once < jobs:
                log(f"[slides] --jobs {jobs}: {at_once} at a time ({len(decks)} notebook(s), "
                    f"{usable_cores()} core(s))")
            log(f"[slides] executing {len(decks)} notebook(s) in {'GPU mode on ' + str(gpu) if gpu else 'CPU mode'}"
                f", {at_once} at a time")
            ran = run_notebooks([(d.source, timeout, force_cpu) for d in decks], at_once)
            for d, (nb, info) in zip(decks, ran):
                d.mode, d.gpu, d.date, d.seconds, d.error = (info["mode"], info["gpu"], info["date"],
                                                             info["seconds"], info["error"])
                rel = f"{executed_prefix}/{d.executed.name}" if executed_prefix else d.executed.name
                executed_in.write_bytes(rel, nbformat.writes(nb).encode("utf-8"))
                log(f"[slides]   {d.name}: {'FAILED: ' + d.error if d.error else 'ok'} in {d.seconds:.1f} s")

        for d in decks:
            name = f"{d.name}.slides.html"
            try:
                body = deck_html(d.executed, name, title=d.title)
            except Exception as exc:  # nbconvert's errors: the deck is reported, the build goes on
                d.html = None
                d.error = ((d.error + "\n") if d.error else "") + (
                    f"render failed: {type(exc).__name__}: {' '.join(strip_ansi(str(exc)).split())}")
            else:
                d.html = out.write_text(name, body)
            log(f"[slides]   {d.name}: {'deck ' + str(d.html) if d.html else 'NO DECK: ' + d.error}")
        listed = _with_earlier_decks(decks, out_dir) if only else decks
        index = write_index(listed, out_dir, folder=out)
        out.write_text("manifest.json", json.dumps({"decks": [d.as_dict() for d in listed]}, indent=1) + "\n")
    log(f"[slides] index: {index}")
    return BuildResult(out_dir=out_dir, executed_dir=executed_dir, index=index, decks=decks, vendored=how)


def __getattr__(name):  # StaticPlayerPreprocessor, built on first use (gpu_viz.deck_preprocess)
    if name == "StaticPlayerPreprocessor":
        return _LazyPreprocessor.get()
    raise AttributeError(name)
