"""Players: one list of frames, one renderer, two players (DESIGN.md section 6).

Data path: Trace --> frames (``gpu_viz.frames.<stem>``: each frame's drawing is SVG markup written
from the trace's arrays with :mod:`gpu_viz.widgets.svg`) --> :class:`Animation` --> ``live()``
(ipywidgets: play, step, scrub, speed; the drawing in a ``widgets.HTML``) and ``static_html()``
(self-contained HTML + JS that swaps the same markup in exported reveal.js slides, no kernel,
nothing fetched).  Both players show the same source pane (:func:`source_view`: the kernel
lines around the frame's line, wrapped, the line highlighted), caption and provenance.

Size: a player fits a 1280x720 slide below its title: at most :data:`PLAYER_WIDTH` x
:data:`PLAYER_HEIGHT` CSS px with its controls, every text at least 18 px.

``Animation.show()`` (or a cell ending in the animation) emits TWO outputs: the static player
(``text/html``: what nbconvert, reveal.js decks, GitHub and a reopened notebook render), then the
live player as its own widget-view output.  The static copy's script hides it while its live twin
renders, and hides the twin's output while the twin is not live (a saved notebook reopened later:
no kernel, or the widget manager answers "model not found"), so one player shows either way.
Only ipywidgets API common to 7.7.1 (Colab) and 8 is used: Play, IntSlider, jslink, HBox/VBox,
HTML, Button, Layout.
"""
from __future__ import annotations

import dataclasses
import html
import io
import itertools
import json
import textwrap
from typing import Dict, List, Optional, Sequence

from . import svg as _svg

PLAYER_METADATA_KEY = "gpu_viz"
LIVE_MIME = "application/vnd.jupyter.widget-view+json"
#: The player's outer box, CSS px: a slide of 1280x720 below its title.
PLAYER_WIDTH, PLAYER_HEIGHT = 1200, 560
#: Gap between the drawing and the source pane, and the player's padding, CSS px.
GAP, PAD = 10, 4
#: The source pane: width (CSS px) and the most wrapped rows it shows at 18 px.
SOURCE_WIDTH = 392
SOURCE_FONT_PX = 18
#: Row height: 25 px, more than any deck theme's ``pre`` line height at 18 px (the course theme
#: forces 1.35 = 24.3 px), so the rows counted here always fit the pane.
SOURCE_LINE_PX = 25
SOURCE_ROWS = (_svg.HEIGHT - 10) // SOURCE_LINE_PX     # 8 px of padding and 2 of border inside the cap
#: Characters one wrapped row of the source pane holds (18 px monospace is ~0.61 em a character;
#: 16 px of padding).  Used to choose which lines fit; the browser wraps the text itself.
SOURCE_COLS = int((SOURCE_WIDTH - 16) / (0.61 * SOURCE_FONT_PX))
HIGHLIGHT = "#F0E442"   # Okabe-Ito yellow, and the line is bold too (never colour alone)
_ids = itertools.count()


@dataclasses.dataclass(frozen=True)
class Frame:
    """One frame of a player.

    Attributes:
        markup: the drawing: an ``<svg>`` (or HTML) fragment, at most
            :data:`gpu_viz.widgets.svg.WIDTH` x :data:`gpu_viz.widgets.svg.HEIGHT` CSS px.
        caption: what happens in this frame, in words.
        line: the 1-based line of the player's source to highlight, or None.
    """

    markup: str
    caption: str = ""
    line: Optional[int] = None

    def __post_init__(self):
        if not isinstance(self.markup, str) or not self.markup.strip():
            raise ValueError(f"Frame: markup must be a non-empty SVG/HTML string, got {self.markup!r:.60}")


def figure_png(fig, dpi: int = 80, tight: bool = True, close: bool = True) -> bytes:
    """Render a matplotlib figure to PNG bytes (and close it unless ``close=False``).

    For plots that are the point (timelines, staircases), not for animation frames.
    ``tight``: crop to the drawn area (a second layout pass: about twice the render time).
    """
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white", **({"bbox_inches": "tight"} if tight else {}))
    if close:
        plt.close(fig)
    return buf.getvalue()


def show_figure(fig, dpi: int = 80) -> None:
    """Display a matplotlib figure as a PNG whatever the backend (Agg included), then close it."""
    from IPython.display import Image, display

    display(Image(data=figure_png(fig, dpi=dpi), format="png"))


#: Marks a source line's continuation row (a line too long for the pane goes on at a space, never
#: inside a token, indented past the line's own indent: an end-of-line comment stays with its code).
CONTINUATION = "\u21aa "


def source_rows(text: str, cols: Optional[int] = None) -> List[str]:
    """The rows one source line takes in the pane: itself when it fits ``cols`` characters
    (default :data:`SOURCE_COLS`), else broken at spaces only, each continuation row indented two
    more than the line and marked :data:`CONTINUATION`.  A token longer than a row stays whole
    (the pane scrolls sideways rather than cut it).  The decks' printed code is broken the same
    way (:func:`gpu_viz.slides.code_outputs`)."""
    cols = SOURCE_COLS if cols is None else cols
    text = text.expandtabs(4).rstrip()
    if len(text) <= cols:
        return [text]
    indent = " " * (len(text) - len(text.lstrip()) + 2)
    return textwrap.wrap(text, width=cols, subsequent_indent=indent + CONTINUATION, break_long_words=False,
                         break_on_hyphens=False, replace_whitespace=False) or [text]


def _rows(text: str) -> int:
    """Rows ``text`` takes in the source pane (:func:`source_rows`)."""
    return len(source_rows(text))


def _code_part(text: str) -> str:
    """A source line without its ``//`` comment (string literals are rare in kernels; a ``//``
    inside one would only make the statement look shorter)."""
    return text.split("//", 1)[0]


def statement_start(source: str, line: int) -> int:
    """The 1-based first line of the statement ``line`` (1-based) belongs to: ``line`` itself, or
    the line above it where a bracket it closes was opened (``i += stride) {`` belongs to its
    ``for (`` three lines up).  The pane shows a frame's line with the start of its statement."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return line
    depth = 0
    for k in range(line, 0, -1):
        code = _code_part(lines[k - 1])
        depth += code.count(")") + code.count("]") - code.count("(") - code.count("[")
        if depth <= 0:
            return k
    return line


def source_window(source: str, line: Optional[int]) -> tuple:
    """The 1-based lines ``(first, last)`` of ``source`` the pane shows for ``line``: all of them
    when they fit :data:`SOURCE_ROWS` wrapped rows, else a window around ``line`` that fits,
    leaving a row for each "lines above / below" marker: from the start of ``line``'s statement
    (:func:`statement_start`: a loop's increment is shown with its ``for``) or a third of the pane
    above it, whichever reaches higher, then downwards, then upwards with what is left."""
    lines = source.splitlines() or [""]
    n = len(lines)
    if sum(_rows(t) for t in lines) <= SOURCE_ROWS:
        return 1, n
    budget = SOURCE_ROWS - 2
    centre = min(max(line or 1, 1), n)
    first = last = centre
    used = _rows(lines[centre - 1])
    # the statement's first lines, as far as they fit with the line itself
    start = statement_start(source, centre)
    while first > start and used + _rows(lines[first - 2]) <= budget:
        first -= 1
        used += _rows(lines[first - 1])
    above_target = max(budget // 3, used - _rows(lines[centre - 1]))
    # grow upwards to a third of the budget, then downwards, then upwards again with what is left
    while first > 1 and used + _rows(lines[first - 2]) <= above_target + _rows(lines[centre - 1]):
        first -= 1
        used += _rows(lines[first - 1])
    while last < n and used + _rows(lines[last]) <= budget:
        last += 1
        used += _rows(lines[last - 1])
    while first > 1 and used + _rows(lines[first - 2]) <= budget:
        first -= 1
        used += _rows(lines[first - 1])
    return first, last


def source_view(source: str, line: Optional[int]) -> str:
    """The source pane's HTML for a frame: the lines of :func:`source_window`, each laid out as
    :func:`source_rows` (``white-space: pre``: the browser never wraps, so no row starts inside a
    token and an end-of-line comment stays on its line's rows), line ``line`` highlighted (yellow
    and bold), line numbers of the elided parts said in words."""
    lines = source.splitlines() or [""]
    first, last = source_window(source, line)
    rows = []
    if first > 1:
        above = "line 1" if first == 2 else f"lines 1-{first - 1}"
        rows.append(f'<span class="gv-elided" style="display:block;color:#444">… {above} above</span>')
    for i in range(first, last + 1):
        on = i == line
        style = f"display:block;background:{HIGHLIGHT};font-weight:bold;" if on else "display:block;"
        text = "\n".join(source_rows(lines[i - 1]))
        rows.append(f'<span data-line="{i}" style="{style}">{html.escape(text) or " "}</span>')
    if last < len(lines):
        rows.append('<span class="gv-elided" style="display:block;color:#444">… '
                    + (f"line {last + 1}" if last + 1 == len(lines) else f"lines {last + 1}-{len(lines)}")
                    + " below</span>")
    return (f'<pre class="gpu-viz-source" style="box-sizing:border-box;width:{SOURCE_WIDTH}px;'
            f'max-width:100%;max-height:{_svg.HEIGHT}px;overflow-x:auto;overflow-y:hidden;font-size:{SOURCE_FONT_PX}px;'
            f'line-height:{SOURCE_LINE_PX}px;white-space:pre;margin:0;padding:4px 8px;'
            f'font-family:Liberation Mono,DejaVu Sans Mono,monospace;background:#F4F4F4;color:#111;border:1px solid #BBB;border-radius:4px">' + "".join(rows) + "</pre>")


def _key(line: Optional[int]) -> str:
    """The static player's key of a source view: the line number, "" for none (as its JS forms it)."""
    return "" if line is None else str(line)


#: The content width a player needs to keep its source pane beside the drawing (narrower, as in a
#: notebook's output area, the pane goes below it).
CONTENT_WIDTH = _svg.WIDTH + GAP + SOURCE_WIDTH + 2 * PAD
#: The narrowest the drawing gets beside the source pane (scaled down, aspect kept) before the
#: pane goes below it: a 1440 px JupyterLab with its file browser open keeps the pane beside.
DRAW_MIN_WIDTH = 480

#: Style of the player's text (scoped to one player by its id in :meth:`Animation.static_html`).
_BOX = (f"box-sizing:border-box;max-width:{PLAYER_WIDTH}px;font-family:{_svg.FONT};"
        f"font-size:18px;line-height:22px;color:#111;text-align:left;padding:{PAD}px")


def in_notebook() -> bool:
    """Whether an IPython shell runs here (Jupyter, Colab, nbclient, the IPython prompt) to display
    rich output; a plain ``python`` script or prompt has none."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def _outside_notebook(summary: str, html_call: str) -> str:
    """What ``show()`` prints where no notebook can draw: the object in one line, and how to keep
    its drawing as a web page (``html_call``: the method that returns its HTML)."""
    return (f"{summary}\n(drawn in a notebook: Jupyter or Colab. Here, keep it as a web page: "
            f"pathlib.Path('player.html').write_text({html_call}, encoding='utf-8'))")


class Still:
    """One drawing with its title and provenance, for a picture that does not move (no controls).

    Args:
        markup: an SVG drawing (:mod:`gpu_viz.widgets.svg`).
        title: shown above it.
        provenance: where the data came from; always shown.

    Raises:
        ValueError: empty ``markup``.
    """

    def __init__(self, markup: str, *, title: str, provenance: str):
        if not isinstance(markup, str) or not markup.strip():
            raise ValueError("Still: markup must be a non-empty SVG/HTML string")
        self.markup, self.title, self.provenance = markup, title, provenance

    def _repr_html_(self) -> str:
        return (f'<div class="gpu-viz-still" style="{_BOX}">' + Animation._header(self)
                + f'<div style="margin-top:4px">{self.markup}</div></div>')

    def show(self) -> None:
        """Display it (HTML: notebooks, nbconvert and decks render it alike); outside a notebook,
        one line saying what it is (:func:`in_notebook`)."""
        from IPython.display import HTML, display

        if not in_notebook():
            print(_outside_notebook(f"<Still {self.title!r}; {self.provenance}>", "still._repr_html_()"))
            return
        display(HTML(self._repr_html_()))


class Animation:
    """Frames plus the context every player shows: title, provenance, the kernel source.

    Args:
        frames: the frames, in order (at least one).
        title: shown above the player.
        provenance: where the data came from ("measured on NVIDIA L4 (sm_89) just now",
            "CPU model, no GPU", "recorded on NVIDIA H200, 2026-11-29"); shown with every frame.
        source: kernel source text whose ``Frame.line`` is highlighted, or None.
        interval_ms: play speed, milliseconds per frame (50..10000).
        print_frame: the frame a printed deck (PDF) shows: the one that teaches (default: the
            last, the finished state; a queue draining prints mid-way, not "every SM empty").

    Raises:
        ValueError: no frames, a frame's ``line`` outside ``source``, ``interval_ms`` or
            ``print_frame`` out of range.
    """

    def __init__(self, frames: Sequence[Frame], *, title: str, provenance: str,
                 source: Optional[str] = None, interval_ms: int = 900, print_frame: Optional[int] = None):
        if not frames:
            raise ValueError("Animation: frames is empty; a player needs at least one frame")
        if not all(isinstance(f, Frame) for f in frames):
            raise TypeError("Animation: frames must be Frame objects (from gpu_viz.widgets)")
        n_lines = len(source.splitlines()) if source else 0
        for i, f in enumerate(frames):
            if source and f.line is not None and not (1 <= f.line <= n_lines):
                raise ValueError(f"Animation: frame {i} highlights line {f.line}, but source has {n_lines} lines")
        if not 50 <= int(interval_ms) <= 10000:
            raise ValueError(f"Animation: interval_ms must be 50..10000 ms per frame, got {interval_ms}")
        if print_frame is None:
            print_frame = len(frames) - 1
        if isinstance(print_frame, bool) or not isinstance(print_frame, int) or not 0 <= print_frame < len(frames):
            raise ValueError(f"Animation: print_frame must be a frame index 0..{len(frames) - 1}, got {print_frame!r}")
        self.print_frame = print_frame
        self.frames = list(frames)
        self.title, self.provenance, self.source = title, provenance, source
        self.interval_ms = int(interval_ms)

    def __len__(self):
        return len(self.frames)

    def _header(self) -> str:
        return (f'<div class="gpu-viz-title" style="font-weight:bold;font-size:20px;line-height:24px">'
                f'{html.escape(self.title)}</div>'
                f'<div class="gpu-viz-provenance" style="color:#333;font-size:18px">Data: '
                f'{html.escape(self.provenance)}</div>')

    def _counter(self, k: int) -> str:
        """The frame counter's words for 0-based frame ``k``: "frame 1 of 12"."""
        return f"frame {k + 1} of {len(self.frames)}"

    # -- static: plays with no kernel --------------------------------------------------
    def static_html(self, live_id: Optional[str] = None) -> str:
        """Self-contained HTML + inline JS player: first / back / play-pause / forward / last,
        a scrub range, a speed choice, the counter "frame k of n".  The drawing and source pane
        of each frame are the same markup the live player shows (deduplicated).  Buttons give
        the keyboard back after a click (blur), so reveal.js's keys keep walking the deck.

        ``live_id``: the id of the live twin :meth:`show` displays right after this output (its
        box carries the class ``gpu-viz-live-<live_id>``).  While the twin is rendered, this
        copy hides; while it is not (a saved notebook reopened: no kernel, or the widget manager
        says "model not found"), the twin's output hides and this copy plays."""
        uid = f"gvp{next(_ids)}"
        markups: Dict[str, int] = {}
        views: Dict[str, str] = {}
        meta = []
        for f in self.frames:
            m = markups.setdefault(f.markup, len(markups))
            if self.source:
                views.setdefault(_key(f.line), source_view(self.source, f.line))
            meta.append({"m": m, "c": f.caption, "l": f.line})
        marks = list(markups)
        n = len(self.frames)
        first = self.frames[0]
        btn = ("font-size:18px;line-height:22px;min-width:44px;padding:4px 8px;margin:0;border:1px solid #888;"
               "border-radius:4px;background:#F4F4F4;color:#111;cursor:pointer")
        speeds = "".join(f'<option value="{s}"{" selected" if s == 1 else ""}>{s}x</option>' for s in (0.5, 1, 2, 4))
        live_attr = f' data-live="{html.escape(live_id)}"' if live_id else ""
        return f"""
<div class="gpu-viz-player" id="{uid}" data-frames="{n}" data-frame="0" data-print-frame="{self.print_frame}"{live_attr} style="{_BOX}">
  {self._header()}
  <div class="gpu-viz-controls" style="display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:4px">
    <button type="button" style="{btn}" data-act="first" title="first frame">|&#x25C0;</button>
    <button type="button" style="{btn}" data-act="prev" title="step back">&#x25C0;</button>
    <button type="button" style="{btn}" data-act="play" title="play / pause">&#x25B6;</button>
    <button type="button" style="{btn}" data-act="next" title="step forward">&#x25B6;&#x25B6;</button>
    <button type="button" style="{btn}" data-act="last" title="last frame">&#x25B6;|</button>
    <input type="range" min="0" max="{n - 1}" value="0" id="{uid}-range" aria-label="frame" style="flex:1;min-width:120px"/>
    <span id="{uid}-pos" class="gpu-viz-counter" style="min-width:130px;text-align:right">{self._counter(0)}</span>
    <label style="font-size:18px">speed <select id="{uid}-speed" style="font-size:18px">{speeds}</select></label>
  </div>
  <div class="gpu-viz-caption" id="{uid}-cap" style="min-height:44px">{html.escape(first.caption)}</div>
  {_body(first.markup, views[_key(first.line)] if self.source else None, uid)}
</div>
<script>
(function() {{
  var root = document.getElementById("{uid}");
  if (!root || root.dataset.ready) return; root.dataset.ready = "1";
  var M = {json.dumps(marks)}, S = {json.dumps(views)}, F = {json.dumps(meta)};
  var i = 0, timer = null, base = {self.interval_ms};
  var draw = document.getElementById("{uid}-draw"), cap = document.getElementById("{uid}-cap");
  var rng = document.getElementById("{uid}-range"), pos = document.getElementById("{uid}-pos");
  var src = document.getElementById("{uid}-src"), speed = document.getElementById("{uid}-speed");
  var playBtn = root.querySelector("button[data-act=play]");
  function show(k) {{
    var prev = F[i];
    i = Math.max(0, Math.min(F.length - 1, k));
    if (F[i].m !== prev.m || draw.dataset.m === undefined) {{ draw.innerHTML = M[F[i].m]; draw.dataset.m = F[i].m; }}
    if (src) src.innerHTML = S[F[i].l === null ? "" : String(F[i].l)];
    cap.textContent = F[i].c; rng.value = i; pos.textContent = "frame " + (i + 1) + " of " + F.length;
    root.dataset.frame = i;
  }}
  function stop() {{ if (timer) {{ clearInterval(timer); timer = null; }} playBtn.innerHTML = "&#x25B6;"; }}
  function play() {{
    if (i >= F.length - 1) show(0);
    timer = setInterval(function() {{ if (i >= F.length - 1) stop(); else show(i + 1); }},
                        base / parseFloat(speed.value));
    playBtn.innerHTML = "&#x275A;&#x275A;";
  }}
  root.addEventListener("click", function(ev) {{
    var b = ev.target.closest("button"); if (!b || !root.contains(b)) return;
    var a = b.dataset.act;
    if (a === "play") {{ if (timer) stop(); else play(); }}
    else {{ stop(); show(a === "first" ? 0 : a === "last" ? F.length - 1 : a === "prev" ? i - 1 : i + 1); }}
    b.blur();   // the deck's keys (arrows, space) go back to reveal.js, not to this button
  }});
  rng.addEventListener("input", function() {{ stop(); show(parseInt(rng.value, 10)); }});
  rng.addEventListener("change", function() {{ rng.blur(); }});
  speed.addEventListener("change", function() {{ if (timer) {{ clearInterval(timer); timer = null; play(); }} speed.blur(); }});
  show(0);
{twin_sync_js("root")}
}})();
</script>"""

    # -- live: ipywidgets -------------------------------------------------------------
    def live(self, live_id: Optional[str] = None):
        """An ipywidgets player: Play + IntSlider (jslinked), step buttons, a speed slider
        (ms per frame, jslinked to Play), the counter "frame k of n"; the drawing and source
        pane in one ``widgets.HTML`` laid out as the static player lays them out.  The box has
        the classes ``gpu-viz-live-player`` and, given ``live_id``, ``gpu-viz-live-<live_id>``
        (what its static twin looks for)."""
        import ipywidgets as w

        n = len(self.frames)
        play = w.Play(value=0, min=0, max=n - 1, step=1, interval=self.interval_ms, description="play")
        slider = w.IntSlider(value=0, min=0, max=n - 1, step=1, description="frame", readout=False,
                             continuous_update=True, layout=w.Layout(width="300px"))
        w.jslink((play, "value"), (slider, "value"))
        speed = w.IntSlider(value=self.interval_ms, min=100, max=3000, step=100, description="ms/frame",
                            layout=w.Layout(width="300px"))
        w.jslink((speed, "value"), (play, "interval"))
        back, fwd = w.Button(description="◀ step"), w.Button(description="step ▶")
        counter = w.HTML(value=self._counter_html(0))
        body = w.HTML(value=self._live_body(0), layout=w.Layout(width="100%"))
        caption = w.HTML(value=self._caption_html(0))

        def update(change):
            k = change["new"]
            body.value = self._live_body(k)
            caption.value = self._caption_html(k)
            counter.value = self._counter_html(k)

        slider.observe(update, names="value")
        back.on_click(lambda _b: setattr(slider, "value", max(0, slider.value - 1)))
        fwd.on_click(lambda _b: setattr(slider, "value", min(n - 1, slider.value + 1)))
        header = w.HTML(value=f'<div style="{_BOX}">{self._header()}</div>')
        controls = w.HBox([play, back, fwd, slider, counter, speed], layout=w.Layout(flex_flow="row wrap"))
        # the controls and the caption above the drawing: in a short window (1024x768) stepping
        # never needs a scroll between the buttons and what they change
        box = w.VBox([header, controls, caption, body], layout=w.Layout(max_width=f"{PLAYER_WIDTH}px"))
        box.add_class("gpu-viz-live-player")
        if live_id:
            box.add_class(f"gpu-viz-live-{live_id}")
        return box

    def _live_body(self, k: int) -> str:
        f = self.frames[k]
        return (f'<div style="{_BOX};padding:0">'
                + _body(f.markup, source_view(self.source, f.line) if self.source else None) + "</div>")

    def _caption_html(self, k: int) -> str:
        return f'<div style="font-size:18px;line-height:22px">{html.escape(self.frames[k].caption)}</div>'

    def _counter_html(self, k: int) -> str:
        return f'<span class="gpu-viz-counter" style="font-size:18px;line-height:28px">{self._counter(k)}</span>'

    def _bundle(self, live_id: Optional[str] = None):
        data = {"text/plain": f"<Animation {self.title!r}: {len(self)} frames; {self.provenance}>",
                "text/html": self.static_html(live_id)}
        return data, {PLAYER_METADATA_KEY: {"player": True, "frames": len(self)}}

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The static player alone (what any frontend renders, kernel or not); :meth:`show`
        (and a cell ending in the animation) adds the live twin."""
        return self._bundle()

    def _ipython_display_(self):
        """Two outputs: the static player (``text/html``, saved with the notebook, rendered by
        every frontend and by nbconvert), then the live player as its own widget-view output,
        marked ``{"gpu_viz": {"live": True}}`` in its metadata (decks drop it).  The static copy
        hides while the live one renders, and the other way round in a reopened notebook."""
        from IPython.display import display

        live_id = f"gvl{next(_ids)}"
        try:
            widget = self.live(live_id)
        except Exception:  # no ipywidgets or no kernel comm: the static player alone
            widget = None
        data, meta = self._bundle(live_id if widget is not None else None)
        display(data, raw=True, metadata=meta)
        if widget is not None:
            display({"text/plain": f"<live player of {self.title!r}>",
                     LIVE_MIME: {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}},
                    raw=True, metadata={PLAYER_METADATA_KEY: {"live": True}})

    def show(self):
        """Display the player: the static one, and the live one where a widget manager runs
        (each hides while the other shows; see :meth:`_ipython_display_`).  Outside a notebook (a
        script, a plain Python prompt) there is nothing to draw it: one line says what it is and
        how to keep it, instead of its whole HTML on the terminal."""
        if not in_notebook():
            print(_outside_notebook(self._bundle()[0]["text/plain"], "animation.static_html()"))
            return
        self._ipython_display_()


#: The output containers of the frontends a learner uses: JupyterLab 3 and 4 and Notebook 7
#: (``.jp-OutputArea-child``), the classic notebook with ipywidgets 7 (``.output_area``).
_OUTPUT_CONTAINERS = ".jp-OutputArea-child, .output_area"


def twin_sync_js(root: str) -> str:
    """JavaScript (inside a function where ``root`` names the static copy's element, which carries
    ``data-live="<live_id>"``) that keeps exactly one of a static copy and its live twin visible.
    The twin is the widget output displayed right after the static one; its box carries the
    class ``gpu-viz-live-<live_id>`` once a widget manager has rendered it.  While it is rendered
    the static copy hides; while it is not -- a saved notebook reopened, where the manager writes
    "Error displaying widget: model not found" (ipywidgets 8) or "A Jupyter widget could not be
    displayed because the widget state could not be found" (ipywidgets 7), or no manager at all --
    the twin's output hides and the static copy shows.  In a frontend whose outputs live in
    separate frames (Colab) the copy can only see its own frame: it hides while the twin is live
    in that frame, and shows otherwise."""
    return f"""  var twin = {root}.dataset.live;
  if (twin) (function() {{
    var tries = 0;
    function sync() {{
      var out = {root}.closest("{_OUTPUT_CONTAINERS}"), next = out && out.nextElementSibling;
      var live = document.querySelector(".gpu-viz-live-" + twin);
      (out || {root}).style.display = live ? "none" : "";
      if (next && live && next.contains(live)) next.style.display = "";   // the twin is live: it shows
      else if (next && !live) next.style.display = "none";                 // it is not: its output hides
      return out;
    }}
    function watch() {{
      var out = sync(), area = out ? out.parentNode : document.body;
      if (!out && {root}.isConnected === false && tries++ < 100) {{ setTimeout(watch, 50); return; }}
      new MutationObserver(sync).observe(area, {{childList: true, subtree: true}});
    }}
    watch();
  }})();"""


def show_live(widget, fallback_html: str) -> None:
    """Display a live ipywidgets ``widget`` with a static HTML twin, as a player is shown: the
    twin (``fallback_html``: what the widget shows, or says, without a kernel) first, then the
    widget as its own output; exactly one of them is visible in any frontend, a reopened notebook
    included (:func:`twin_sync_js`).  Without ipywidgets' comm (no kernel) only the twin is shown.

    Raises:
        TypeError: ``fallback_html`` is not a string.
    """
    from IPython.display import display

    if not isinstance(fallback_html, str):
        raise TypeError(f"fallback_html must be an HTML string, got {type(fallback_html).__name__}")
    live_id = f"gvl{next(_ids)}"
    uid = f"gvs{next(_ids)}"
    try:
        widget.add_class(f"gpu-viz-live-{live_id}")
        model_id = widget.model_id
    except Exception:  # no comm: the twin alone
        model_id = None
    live_attr = f' data-live="{live_id}"' if model_id else ""
    display({"text/html": f'<div class="gpu-viz-static" id="{uid}"{live_attr}>{fallback_html}</div>'
                          f'<script>(function() {{ var root = document.getElementById("{uid}"); if (!root) return;\n'
                          f'{twin_sync_js("root")}\n}})();</script>',
             "text/plain": "(an interactive control: run the cell with a kernel to use it)"}, raw=True)
    if model_id:
        display({"text/plain": "<live control>", LIVE_MIME: {"version_major": 2, "version_minor": 0,
                                                            "model_id": model_id}},
                raw=True, metadata={PLAYER_METADATA_KEY: {"live": True}})


def _body(markup: str, view: Optional[str], uid: Optional[str] = None) -> str:
    """The drawing and the source pane side by side, the pane below the drawing where the output
    is narrower than :data:`CONTENT_WIDTH` minus the drawing's shrink room.  The drawing scales
    with the width and keeps its aspect ratio (:data:`gpu_viz.widgets.svg.SCALE_STYLE` on the SVG,
    never larger than drawn); nothing stretches it to the pane's height (``align-items:
    flex-start``)."""
    ids = (f' id="{uid}-draw"', f' id="{uid}-src"') if uid else ("", "")
    src = (f'<div{ids[1]} class="gpu-viz-source-pane" style="flex:0 1 {SOURCE_WIDTH}px;min-width:0;max-width:100%">'
           f'{view}</div>') if view is not None else ""
    return (f'<div class="gpu-viz-body" style="display:flex;gap:{GAP}px;align-items:flex-start;flex-wrap:wrap;margin:4px 0">'
            f'<div{ids[0]} class="gpu-viz-draw" style="flex:1 1 {DRAW_MIN_WIDTH}px;max-width:{_svg.WIDTH}px;min-width:0">'
            f'{markup}</div>{src}</div>')
