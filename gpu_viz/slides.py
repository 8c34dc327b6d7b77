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
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import fnmatch
import functools
import importlib.util
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from .check import positive_int_arg
from .data import CHECKOUT, course_dir

SLIDES_DIR = course_dir("slides", "_slides")
TEMPLATES_DIR = SLIDES_DIR / "templates"
TEMPLATE_NAME = "gpu_viz_reveal"
#: slides/build in a checkout; ./slides-build (the current folder) for an installed package
DEFAULT_OUT = SLIDES_DIR / "build" if CHECKOUT is not None else Path("slides-build")
DEFAULT_NOTEBOOKS = course_dir("notebooks", "_notebooks")
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
BUILD_METADATA_KEY = "gpu_viz_build"
PLAYER_METADATA_KEY = "gpu_viz"  # same key as gpu_viz.widgets.player.PLAYER_METADATA_KEY
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"

#: What each deck loads, relative to the deck (decks sit beside vendor/).
VENDOR_URLS = {
    "reveal_url_prefix": "vendor/reveal.js",
    "require_js_url": "vendor/requirejs/require.js",
    "jquery_url": "vendor/jquery/jquery.min.js",
    "mathjax_url": "vendor/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
    "widget_renderer_url": "vendor/html-manager/embed-amd.js",
}

#: npm package -> (destination under vendor/, files/folders to copy from the package).
#: Only what the decks load: MathJax 2 is pruned to the TeX -> CommonHTML path.
VENDOR_FILES = {
    "reveal.js": ("reveal.js", ["dist/reveal.js", "dist/reveal.css", "dist/reset.css", "dist/theme",
                                "plugin/notes/notes.js", "LICENSE"]),
    "requirejs": ("requirejs", ["require.js"]),
    "jquery": ("jquery", ["dist/jquery.min.js", "LICENSE.txt"]),
    "mathjax": ("mathjax", ["MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js", "extensions",
                            "jax/input/TeX", "jax/output/CommonHTML", "jax/output/PreviewHTML",
                            "jax/element", "fonts/HTML-CSS/TeX/woff", "localization/en", "LICENSE"]),
    "@jupyter-widgets/html-manager": ("html-manager", ["dist/embed-amd.js", "dist/*.woff", "dist/*.woff2",
                                                       "dist/*.ttf", "dist/*.eot", "dist/*.svg"]),
}
#: The files whose presence means a vendor/ folder is complete (checked before reuse).
VENDOR_REQUIRED = [
    "reveal.js/dist/reveal.js", "reveal.js/plugin/notes/notes.js", "reveal.js/dist/theme/white.css",
    "requirejs/require.js", "jquery/jquery.min.js", "mathjax/MathJax.js",
    "mathjax/config/TeX-AMS_CHTML-full.js", "html-manager/embed-amd.js",
]
VENDOR_STAMP = "VENDORED.json"
#: The slide in CSS px: a 720p projector's screen (reveal.js scales it by 1.5 to fill 1920x1080).
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
#: The smallest text a slide may show, in CSS px at that size (read from the back of a room).
MIN_TEXT_PX = 18
#: Cell tags honoured on slides: code hidden (output kept), or the whole cell left out.
HIDE_INPUT_TAGS = ("hide-input", "remove-input")
REMOVE_CELL_TAGS = ("remove-cell",)


class SlidesError(RuntimeError):
    """A slide build step failed; the message says which and what to do."""


# ----------------------------------------------------------------------------- vendoring
def vendor_complete(vendor_dir: Path) -> bool:
    """True when ``vendor_dir`` holds every file a deck loads (see ``VENDOR_REQUIRED``)."""
    vendor_dir = Path(vendor_dir)
    return all((vendor_dir / rel).is_file() for rel in VENDOR_REQUIRED)


def _stamp_matches(vendor_dir: Path, slides_dir: Path) -> bool:
    """True when ``vendor_dir`` was vendored from the versions ``slides_dir/package.json`` pins."""
    try:
        stamp = json.loads((vendor_dir / VENDOR_STAMP).read_text())["packages"]
        pins = json.loads((slides_dir / "package.json").read_text())["dependencies"]
    except (OSError, ValueError, KeyError):
        return False
    return stamp == pins


def _npm_ci(slides_dir: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise SlidesError(
            "the decks' JavaScript is not vendored yet and npm is not installed. Either install Node.js/npm "
            "(then `gpu-viz slides` runs `npm ci` in slides/), or pass --vendor-from DIR with a vendor/ "
            "folder built elsewhere (e.g. slides/build/vendor copied from a machine that has npm).")
    if not (slides_dir / "package-lock.json").is_file():
        raise SlidesError(f"{slides_dir}/package-lock.json is missing; it pins the vendored npm packages")
    print(f"[slides] npm ci in {slides_dir} (pinned by package-lock.json)", flush=True)
    proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=slides_dir,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SlidesError(f"`npm ci` failed in {slides_dir} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def _copy_package(node_modules: Path, package: str, vendor_dir: Path) -> None:
    dest_name, items = VENDOR_FILES[package]
    src_root = node_modules / package
    if not src_root.is_dir():
        raise SlidesError(f"npm package {package!r} is missing from {node_modules}; run `npm ci` in slides/")
    for item in items:
        matches = sorted(src_root.glob(item)) if any(c in item for c in "*?[") else [src_root / item]
        for src in matches:
            if not src.exists():
                if item == "LICENSE" or item.endswith(".txt"):
                    continue
                raise SlidesError(f"{src} is missing from npm package {package!r}; the pinned version changed?")
            # dist/x.js -> <dest>/x.js for jquery and html-manager (flat), keep layout for the others
            rel = src.relative_to(src_root)
            if dest_name in ("jquery", "html-manager") and rel.parts[0] == "dist":
                rel = Path(*rel.parts[1:])
            dst = vendor_dir / dest_name / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.map", "*.esm.js", "unpacked"))
            else:
                shutil.copy2(src, dst)


def vendor(vendor_dir: Path, vendor_from: Optional[Path] = None, slides_dir: Path = SLIDES_DIR,
           refresh: bool = False) -> str:
    """Make ``vendor_dir`` hold every script the decks load; return how ("kept", "copied", "npm").

    Order: copy ``vendor_from`` when given (a complete vendor folder); else keep a complete
    ``vendor_dir`` (unless ``refresh``); else copy from ``slides_dir/node_modules``; else copy the
    already-vendored ``slides_dir/build/vendor`` (e.g. carried to a machine with no npm); else run
    ``npm ci`` (pinned by ``slides_dir/package-lock.json``) and copy from node_modules.

    Raises:
        SlidesError: ``vendor_from`` incomplete, or no node_modules and no npm (the message says
            what to do).
    """
    vendor_dir = Path(vendor_dir)
    if vendor_from is not None:
        vendor_from = Path(vendor_from)
        if not vendor_complete(vendor_from):
            missing = [r for r in VENDOR_REQUIRED if not (vendor_from / r).is_file()]
            raise SlidesError(f"--vendor-from {vendor_from}: not a complete vendor folder, missing {missing}")
        if vendor_from.resolve() != vendor_dir.resolve():
            if vendor_dir.exists():
                shutil.rmtree(vendor_dir)
            shutil.copytree(vendor_from, vendor_dir)
        return "copied"
    if not refresh and vendor_complete(vendor_dir):
        return "kept"
    node_modules = slides_dir / "node_modules"
    how = "copied"
    have_modules = all((node_modules / p).is_dir() for p in VENDOR_FILES)
    carried = slides_dir / "build" / "vendor"
    if (not have_modules and vendor_complete(carried) and _stamp_matches(carried, slides_dir)
            and carried.resolve() != vendor_dir.resolve()):
        if vendor_dir.exists():
            shutil.rmtree(vendor_dir)
        shutil.copytree(carried, vendor_dir)
        return "copied"
    if not have_modules:
        _npm_ci(slides_dir)
        how = "npm"
    if vendor_dir.exists():
        shutil.rmtree(vendor_dir)
    vendor_dir.mkdir(parents=True)
    versions = {}
    for package in VENDOR_FILES:
        _copy_package(node_modules, package, vendor_dir)
        meta = json.loads((node_modules / package / "package.json").read_text())
        versions[package] = meta.get("version")
    (vendor_dir / VENDOR_STAMP).write_text(json.dumps({"packages": versions}, indent=1) + "\n")
    return how


# ----------------------------------------------------------------------------- preprocessing
def _referenced_models(value, found: set) -> None:
    if isinstance(value, str):
        if value.startswith("IPY_MODEL_"):
            found.add(value[len("IPY_MODEL_"):])
    elif isinstance(value, dict):
        for v in value.values():
            _referenced_models(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _referenced_models(v, found)


def prune_widget_state(nb) -> int:
    """Keep only the widget models reachable from the widget views left in ``nb``'s outputs.

    Drops ``nb.metadata.widgets`` entirely when no widget view is left.  Returns the number of
    models removed.  (The players' frames live in their Image models: dropping those keeps decks
    small.)
    """
    widgets = nb.metadata.get("widgets")
    if not widgets or WIDGET_STATE_MIME not in widgets:
        return 0
    state = widgets[WIDGET_STATE_MIME].get("state", {})
    roots = set()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            view = out.get("data", {}).get(WIDGET_VIEW_MIME)
            if view and "model_id" in view:
                roots.add(view["model_id"])
    keep, todo = set(), [m for m in roots if m in state]
    while todo:
        mid = todo.pop()
        if mid in keep:
            continue
        keep.add(mid)
        refs: set = set()
        _referenced_models(state[mid].get("state", {}), refs)
        todo.extend(r for r in refs if r in state and r not in keep)
    removed = len(state) - len(keep)
    if not keep:
        del nb.metadata["widgets"]
    else:
        widgets[WIDGET_STATE_MIME]["state"] = {k: v for k, v in state.items() if k in keep}
    return removed


_COLAB_BADGE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)[ \t]*\n?")


def drop_colab_badges(nb) -> int:
    """Remove the "Open in Colab" badge from markdown cells (its image is remote; a deck is offline)."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            new, n = _COLAB_BADGE.subn("", cell.source)
            if n:
                cell.source, count = new.lstrip("\n"), count + n
    return count


def _is_player(output) -> bool:
    meta = output.get("metadata", {}).get(PLAYER_METADATA_KEY)
    return isinstance(meta, dict) and bool(meta.get("player"))


def _is_live_twin(output) -> bool:
    meta = output.get("metadata", {}).get(PLAYER_METADATA_KEY)
    return isinstance(meta, dict) and bool(meta.get("live"))


def static_players(nb) -> int:
    """Keep only the static HTML player of every gpu_viz player: drop the live twin outputs
    (``{"gpu_viz": {"live": True}}``, :meth:`gpu_viz.widgets.Animation.show`) and any widget view
    left in a player output.

    Returns how many player outputs were found.  Raises :class:`SlidesError` for a player output
    without ``text/html`` (nothing would render).
    """
    count = 0
    for i, cell in enumerate(nb.cells):
        if "outputs" in cell:
            cell["outputs"] = [o for o in cell["outputs"] if not _is_live_twin(o)]
        for out in cell.get("outputs", []):
            if out.get("output_type") not in ("display_data", "execute_result") or not _is_player(out):
                continue
            data = out.get("data", {})
            if "text/html" not in data:
                raise SlidesError(f"cell {i}: a gpu_viz player output has no text/html static player")
            data.pop(WIDGET_VIEW_MIME, None)
            count += 1
    return count


_SVG_PROLOGUE = re.compile(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", re.S)


def inline_svg(nb) -> int:
    """Figure outputs (``image/svg+xml``, what :func:`gpu_viz.figures.style.use` makes matplotlib emit)
    become inline ``<svg>`` markup in the deck instead of an ``<img>``: their labels stay text the
    browser lays out, so the slide-fit test measures them (an ``<img>`` is a bitmap to it).

    Returns how many outputs were converted.
    """
    count = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            svg = data.get("image/svg+xml")
            if out.get("output_type") not in ("display_data", "execute_result") or svg is None or _is_player(out):
                continue
            svg = "".join(svg) if isinstance(svg, list) else svg
            data["text/html"] = '<div class="gv-figure">' + _SVG_PROLOGUE.sub("", svg, count=1) + "</div>"
            for mime in ("image/svg+xml", "image/png", "text/plain"):
                data.pop(mime, None)
            count += 1
    return count


#: Printed code on a slide (:func:`code_outputs`): the characters one row holds -- the slide's
#: width less the theme's section padding (40 + 52 px) and the block's bar and padding (6 + 2 x 8
#: px), at the theme's output font (19 px DejaVu Sans Mono, 0.602 em a character).
CODE_FONT_PX = 19
CODE_COLS = int((SLIDE_WIDTH - 40 - 52 - 6 - 2 * 8) / (0.602 * CODE_FONT_PX))
#: The class of a printed-code block in a deck (the theme never wraps it: white-space: pre).
CODE_CLASS = "gv-code"


@functools.lru_cache(maxsize=1)
def _course_source_lines() -> frozenset:
    """Every non-blank line, stripped, of the course's sources: ``kernels/`` and the package's
    Python files (what a notebook prints with ``Snippet.text`` or ``inspect.getsource``)."""
    found = set()
    roots = [(course_dir("kernels", "_kernels"), ("*.cu", "*.cuh", "*.cpp", "*.h")),
             (Path(__file__).resolve().parent, ("**/*.py",))]
    for root, patterns in roots:
        for pattern in patterns:
            for path in Path(root).glob(pattern):
                try:
                    found.update(ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip())
                except (OSError, UnicodeDecodeError):
                    continue
    return frozenset(found)


def is_printed_code(text: str, source_lines: Optional[Iterable[str]] = None) -> bool:
    """Whether printed ``text`` is source code: at least two non-blank lines, every one of them a
    line of the course's sources (:func:`_course_source_lines`, or ``source_lines``)."""
    known = _course_source_lines() if source_lines is None else frozenset(source_lines)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return len(lines) >= 2 and all(ln in known for ln in lines)


def code_outputs(nb, source_lines: Optional[Iterable[str]] = None, cols: int = CODE_COLS) -> int:
    """Printed source code (a stdout output :func:`is_printed_code` recognises, e.g.
    ``print(kernels.snippet(...).text)``) becomes a ``<pre class="gv-code">`` block that the
    deck never wraps: a line longer than ``cols`` characters is broken here instead, at a space,
    its continuation indented and marked as the players mark it
    (:func:`gpu_viz.widgets.player.source_rows`), so no line of code goes on at the slide's edge
    as if it were a new one.  Returns how many outputs were converted."""
    from nbformat.v4 import new_output

    from .widgets.player import source_rows

    known = _course_source_lines() if source_lines is None else frozenset(source_lines)
    count = 0
    for outputs, k, text in list(_printed(nb)):
        if not is_printed_code(text, known):
            continue
        rows = [r for line in text.rstrip("\n").split("\n") for r in source_rows(line, cols)]
        markup = f'<pre class="{CODE_CLASS}">' + html.escape("\n".join(rows), quote=False) + "</pre>"
        outputs[k] = new_output("display_data", data={"text/html": markup, "text/plain": text})
        count += 1
    return count


def _printed(nb):
    """``(outputs, k, text)`` for every stdout output ``outputs[k]`` of ``nb``, its text joined."""
    for cell in nb.cells:
        outputs = cell.get("outputs", [])
        for k, out in enumerate(outputs):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                t = out.get("text", "")
                yield outputs, k, "".join(t) if isinstance(t, list) else t


def glue_printed_words(nb) -> int:
    """Printed text (stdout outputs) that a slide wraps keeps its names and numbers whole
    (:func:`gpu_viz.words.keep_whole`): the spaces of :data:`gpu_viz.words.NO_BREAK` ("NVIDIA
    H200") and of a short parenthesis ("(the shapes it has)") become no-break spaces and a hyphen
    inside a word, date or number is followed by a word joiner, so the browser never breaks a line
    at "2026-" / "12-02", "2e-" / "05" or "(the" / "shapes it has)" (the marks are invisible; the
    text reads the same).  Returns how many outputs changed."""
    from .words import keep_whole

    count = 0
    for outputs, k, text in _printed(nb):
        glued = keep_whole(text)
        if glued != text:
            outputs[k]["text"] = glued
            count += 1
    return count


#: Cell metadata holding the speaker notes of the slide the cell is on (markdown).  Notes live
#: there, not as cells of their own, so a learner's notebook is not interleaved with "give the
#: class a few minutes"; :func:`expand_speaker_notes` puts them back for the deck.
SPEAKER_NOTES_KEY = "speaker_notes"
#: Cells whose metadata never carries notes: the exercise cells gpu_viz/exercises/cells.py rewrites.
_GENERATED_TAGS = ("exercise", "solution")


def _notes_text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def expand_speaker_notes(nb) -> int:
    """Insert after every cell with :data:`SPEAKER_NOTES_KEY` metadata a markdown cell of
    slide_type ``notes`` holding them (what nbconvert's reveal.js exporter turns into the slide's
    speaker notes).  In place; the number of notes cells inserted."""
    from nbformat.v4 import new_markdown_cell

    cells, added = [], 0
    for cell in nb.cells:
        cells.append(cell)
        text = _notes_text(cell.get("metadata", {}).get(SPEAKER_NOTES_KEY)).strip()
        if text:
            cells.append(new_markdown_cell(text, metadata={"slideshow": {"slide_type": "notes"}}))
            added += 1
    nb.cells = cells
    return added


def fold_speaker_notes(nb) -> int:
    """The inverse of :func:`expand_speaker_notes`: move each notes cell (slide_type ``notes``)
    into the :data:`SPEAKER_NOTES_KEY` metadata of the nearest cell above it that is not an
    exercise or solution cell (those are regenerated), appending to notes already there.  In
    place; the number of notes cells folded.

    Raises:
        ValueError: a notes cell with no cell above it to carry it.
    """
    cells, folded = [], 0
    for cell in nb.cells:
        if cell.get("metadata", {}).get("slideshow", {}).get("slide_type") != "notes":
            cells.append(cell)
            continue
        host = next((c for c in reversed(cells)
                     if not set(c.get("metadata", {}).get("tags", [])) & set(_GENERATED_TAGS)), None)
        if host is None:
            raise ValueError(f"a notes cell with no cell above it to carry it: {_notes_text(cell.source)[:60]!r}")
        text = _notes_text(cell.source).strip()
        before = _notes_text(host.metadata.get(SPEAKER_NOTES_KEY)).strip()
        host.metadata[SPEAKER_NOTES_KEY] = f"{before}\n\n{text}" if before else text
        folded += 1
    nb.cells = cells
    return folded


def _nbconvert_preprocessor_base():
    from nbconvert.preprocessors import Preprocessor

    return Preprocessor


class _LazyPreprocessor:
    """Builds :class:`StaticPlayerPreprocessor` on first use (nbconvert imports are slow)."""

    _cls = None

    @classmethod
    def get(cls):
        if cls._cls is None:
            base = _nbconvert_preprocessor_base()

            class StaticPlayerPreprocessor(base):
                """nbconvert preprocessor: static players for gpu_viz outputs, inline SVG figures,
                printed code as unwrapped blocks, pruned widget state."""

                def preprocess(self, nb, resources):
                    drop_colab_badges(nb)
                    static_players(nb)
                    inline_svg(nb)
                    code_outputs(nb)
                    glue_printed_words(nb)
                    prune_widget_state(nb)
                    return nb, resources

            cls._cls = StaticPlayerPreprocessor
        return cls._cls


def __getattr__(name):  # module attribute StaticPlayerPreprocessor, built lazily
    if name == "StaticPlayerPreprocessor":
        return _LazyPreprocessor.get()
    raise AttributeError(name)


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
        for d in json.loads(manifest.read_text())["decks"]:
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


def execute_notebook(source: Path, executed: Path, timeout: int = 600, kernel_name: str = "python3",
                     force_cpu: bool = False) -> Dict:
    """Execute ``source`` top to bottom with nbclient (widget state stored); write ``executed``.

    The kernel runs with the notebook's folder as working directory and this process's
    environment, plus ``GPU_VIZ_FORCE_CPU=1`` when ``force_cpu``.  The executed copy is written
    even when a cell fails, so the error can be read in it.

    Returns:
        ``{"mode", "gpu", "date", "seconds", "error"}``; ``error`` is "" on success.
    """
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
    t0 = time.perf_counter()
    error = ""
    try:
        client.execute(env=env)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        error = f"{type(exc).__name__}: {str(exc)[-3000:]}"
    except Exception as exc:  # kernel failed to start, etc.
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    info = {"mode": mode, "gpu": gpu, "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": round(seconds, 1), "error": error}
    nb.metadata[BUILD_METADATA_KEY] = {k: v for k, v in info.items() if k != "error"}
    if error:
        nb.metadata[BUILD_METADATA_KEY]["error"] = error[:2000]
    executed.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(executed))
    return info


def _execute_job(args):
    source, executed, timeout, force_cpu = args
    return execute_notebook(Path(source), Path(executed), timeout=timeout, force_cpu=force_cpu)


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


def render_deck(executed: Path, out_html: Path, title: Optional[str] = None) -> Path:
    """Render one executed notebook to ``out_html`` (a reveal.js deck loading ``vendor/`` beside it)."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    if title:
        nb.metadata["title"] = title
    # before nbconvert groups cells into slides (its reveal metadata pass runs ahead of any
    # configured preprocessor): the notes of a removed cell stay on its slide
    expand_speaker_notes(nb)
    body, _resources = exporter().from_notebook_node(nb, resources={"metadata": {"name": out_html.stem}})
    _check_offline(body, out_html.name)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_html.write_text(body, encoding="utf-8")
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


def write_index(decks: Sequence[Deck], out_dir: Path, built_at: Optional[str] = None) -> Path:
    """Write ``out_dir/index.html`` linking every deck with its title, mode, GPU and date."""
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
            "date": d.date, "error": d.error.splitlines()[0][:300] if d.error else "",
        })
    page = tmpl.render(decks=rows, built_at=built_at or _dt.datetime.now(_dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC"))
    index = Path(out_dir) / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


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


def build(out_dir: Path = DEFAULT_OUT, notebooks_dir: Path = DEFAULT_NOTEBOOKS, only: Optional[str] = None,
          execute: bool = True, executed_dir: Optional[Path] = None, timeout: int = 600, jobs: int = 1,
          vendor_from: Optional[Path] = None, force_cpu: bool = False, log=print) -> BuildResult:
    """Execute (unless ``execute=False``) and render every ``NN_*.ipynb``; write the index.

    Args:
        out_dir: where decks, ``index.html``, ``vendor/`` and ``manifest.json`` go.
        notebooks_dir: where the ``NN_topic.ipynb`` sources are.
        only: comma-separated globs/substrings of notebook names (``"03*,rmsnorm"``).
        execute: False renders the executed copies already in ``executed_dir``.
        executed_dir: executed notebooks (default ``out_dir/executed``).
        timeout: per-cell timeout, s.
        jobs: notebooks executed in parallel (separate kernels); CPU mode only, a GPU build runs one
            at a time so that no notebook's timings are disturbed by another's kernels.
        vendor_from: a complete vendor folder to copy instead of npm (see :func:`vendor`).
        force_cpu: execute in CPU mode even on a GPU machine (``GPU_VIZ_FORCE_CPU=1`` for the kernels).

    Returns:
        :class:`BuildResult`; a deck whose notebook failed still gets a page (showing the error
        cell) and its ``error`` is set.

    Raises:
        SlidesError: no notebook matched, an executed copy is missing with ``execute=False``,
            or the JavaScript cannot be vendored.
    """
    import nbformat

    out_dir = Path(out_dir)
    executed_dir = Path(executed_dir) if executed_dir else out_dir / "executed"
    sources = find_notebooks(Path(notebooks_dir), only)
    if not sources:
        raise SlidesError(f"no notebook matches {NOTEBOOK_GLOB!r}"
                          + (f" and --only {only!r}" if only else "") + f" in {notebooks_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    how = vendor(out_dir / "vendor", vendor_from=vendor_from)
    log(f"[slides] vendor/: {how} ({out_dir / 'vendor'})")

    decks = []
    for src in sources:
        nb = nbformat.read(str(src), as_version=4)
        decks.append(Deck(name=src.stem, title=notebook_title(nb, src.stem), source=src,
                          executed=executed_dir / src.name))
    if execute:
        mode, gpu = _mode_now(force_cpu)
        if gpu and jobs > 1:
            log(f"[slides] GPU mode: executing one notebook at a time (--jobs {jobs} ignored): notebooks that "
                "share a GPU would disturb each other's timings")
            jobs = 1
        log(f"[slides] executing {len(decks)} notebook(s) in {'GPU mode on ' + str(gpu) if gpu else 'CPU mode'}"
            f", {jobs} at a time")
        jobs_args = [(str(d.source), str(d.executed), timeout, force_cpu) for d in decks]
        if jobs > 1 and len(decks) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                infos = list(pool.map(_execute_job, jobs_args))
        else:
            infos = [_execute_job(a) for a in jobs_args]
        for d, info in zip(decks, infos):
            d.mode, d.gpu, d.date, d.seconds, d.error = (info["mode"], info["gpu"], info["date"],
                                                         info["seconds"], info["error"])
            log(f"[slides]   {d.name}: {'FAILED' if d.error else 'ok'} in {d.seconds:.1f} s")
    else:
        for d in decks:
            if not d.executed.is_file():
                raise SlidesError(f"--no-execute: no executed copy of {d.source.name} in {executed_dir}; "
                                  "build once without --no-execute (or point --executed-dir at one)")
            meta = nbformat.read(str(d.executed), as_version=4).metadata.get(BUILD_METADATA_KEY, {})
            d.mode, d.gpu = meta.get("mode", "not executed"), meta.get("gpu")
            d.date, d.seconds, d.error = meta.get("date", ""), meta.get("seconds", 0.0), meta.get("error", "")

    for d in decks:
        try:
            d.html = render_deck(d.executed, out_dir / f"{d.name}.slides.html", title=d.title)
        except Exception as exc:
            d.html = None
            d.error = (d.error + "\n" if d.error else "") + f"render failed: {type(exc).__name__}: {exc}"
        log(f"[slides]   {d.name}: {'deck ' + str(d.html) if d.html else 'NO DECK: ' + d.error}")
    listed = _with_earlier_decks(decks, out_dir) if only else decks
    index = write_index(listed, out_dir)
    (out_dir / "manifest.json").write_text(json.dumps({"decks": [d.as_dict() for d in listed]}, indent=1) + "\n")
    log(f"[slides] index: {index}")
    return BuildResult(out_dir=out_dir, executed_dir=executed_dir, index=index, decks=decks, vendored=how)


# ----------------------------------------------------------------------------- CLI
def _os_error_message(exc: OSError, out: Path) -> str:
    """One line for an OSError of the build: names --out when the path is (in) the output folder."""
    what = exc.strerror or str(exc)
    path = Path(exc.filename) if exc.filename else None
    try:
        in_out = path is not None and (path.resolve() == out.resolve() or out.resolve() in path.resolve().parents
                                       or path.resolve() in out.resolve().parents)
    except (OSError, RuntimeError):
        in_out = False
    if in_out:
        return (f"cannot create or write the output folder --out {out}: {what} ({path}); "
                "pass --out a folder you can write")
    return f"{what}" + (f": {path}" if path else "")


def _check_out(out: Path) -> Optional[str]:
    """Create ``out`` and try writing in it; an error message naming --out, or None when it is usable."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".gpu-viz-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(out)
        return _os_error_message(exc, out)
    return None


def _cli(args) -> int:
    out = Path(args.out)
    problem = _check_out(out)
    if problem:
        print(f"gpu-viz slides: {problem}", file=sys.stderr)
        return 2
    vendor_from = Path(args.vendor_from) if args.vendor_from else None
    try:
        if args.vendor_only:
            how = vendor(out / "vendor", vendor_from=vendor_from, refresh=vendor_from is None)
            print(f"vendor/ {how}: {out / 'vendor'}")
            return 0
        result = build(out_dir=out, notebooks_dir=Path(args.notebooks), only=args.only,
                       execute=not args.no_execute, executed_dir=Path(args.executed_dir) if args.executed_dir
                       else None, timeout=args.timeout, jobs=args.jobs, vendor_from=vendor_from,
                       force_cpu=args.cpu)
    except SlidesError as exc:
        print(f"gpu-viz slides: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"gpu-viz slides: {_os_error_message(exc, out)}", file=sys.stderr)
        return 2
    failed = [d for d in result.decks if not d.ok]
    for d in failed:
        print(f"gpu-viz slides: {d.name} FAILED: {d.error[:1500]}", file=sys.stderr)
    print(f"{len(result.decks) - len(failed)} of {len(result.decks)} decks built; open {result.index}")
    if not args.no_pdf and len(failed) < len(result.decks):
        from . import pdf

        if pdf.chromium_path() is None or importlib.util.find_spec("playwright") is None:
            # the decks are built; the PDFs are the one part that needs a browser
            print("gpu-viz slides: PDFs skipped: they need Chromium (apt-get install chromium, or set "
                  "$GPU_VIZ_CHROMIUM) and the playwright package; the decks are built", file=sys.stderr)
            return 1 if failed else 0
        try:
            made = pdf.render(out)
        except SlidesError as exc:
            print(f"gpu-viz slides: {exc}", file=sys.stderr)
            return 2
        print(f"{len(made)} PDFs written beside the decks (one page per slide)")
    return 1 if failed else 0


#: What ``gpu-viz slides --help`` says (the module docstring is for the package's readers).
CLI_DESCRIPTION = """\
Execute the course notebooks (live on a GPU, in CPU mode without one) and render each as an
offline reveal.js deck at 1280x720: NN_topic.slides.html, its PDF (one page per slide; needs
Chromium), and index.html linking them all.  Open index.html in a browser, no server needed.
In a deck: -> / Space next slide, <- back, S speaker notes, F full screen, Esc overview."""


def register_cli(subparsers) -> None:
    """Add the ``slides`` subcommand to ``gpu-viz``."""
    p = subparsers.add_parser("slides", help="execute the notebooks and render offline reveal.js decks",
                              description=CLI_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(DEFAULT_OUT), help=f"output folder (default: {DEFAULT_OUT})")
    p.add_argument("--notebooks", default=str(DEFAULT_NOTEBOOKS), help="folder of NN_topic.ipynb notebooks")
    p.add_argument("--only", metavar="PATTERN", help="comma-separated notebook numbers (10), globs (0[1-3]*) or substrings of names (rmsnorm)")
    p.add_argument("--no-execute", action="store_true", help="render the executed copies already built")
    p.add_argument("--executed-dir", help="where executed notebooks go / are read (default: OUT/executed)")
    p.add_argument("--timeout", type=positive_int_arg, default=600, help="per-cell timeout in seconds, >= 1 (default 600)")
    p.add_argument("--jobs", type=positive_int_arg, default=1, help="notebooks executed in parallel, >= 1 (default 1)")
    p.add_argument("--vendor-only", action="store_true",
                   help="only (re)build OUT/vendor (the decks' JavaScript, from npm); execute and render nothing")
    p.add_argument("--cpu", action="store_true", help="execute in CPU mode even on a GPU machine")
    p.add_argument("--no-pdf", action="store_true",
                   help="skip the PDFs (reveal.js print mode through headless Chromium; needs playwright)")
    p.add_argument("--vendor-from", metavar="DIR",
                   help="copy the vendored JavaScript from DIR (a complete vendor/ folder) instead of npm")
    p.set_defaults(func=_cli)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="gpu-viz")
    register_cli(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args(["slides"] + sys.argv[1:])
    sys.exit(a.func(a))
