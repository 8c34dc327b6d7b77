"""A deck's notebook, prepared for reveal.js: the Colab badge dropped, players made static (their
live twins dropped, the widget state pruned to what the remaining views use), figures inlined as
SVG, printed code turned into unwrapped blocks.  :class:`StaticPlayerPreprocessor` (an nbconvert
preprocessor, built on first use: nbconvert imports are slow) runs them all.
"""
from __future__ import annotations

import functools
import html
import re
from pathlib import Path
from typing import Iterable, Optional

from .data import course_dir
from .deck_vendor import SlidesError

#: The slide in CSS px: a 720p projector's screen (reveal.js scales it by 1.5 to fill 1920x1080).
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
PLAYER_METADATA_KEY = "gpu_viz"  # same key as gpu_viz.widgets.player.PLAYER_METADATA_KEY
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"

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
