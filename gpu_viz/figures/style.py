"""The course's figure style for a projected slide, and a checker that a figure meets it.

A deck slide is 1280x720 CSS px with about 1150 x 540 px for a figure under its title.
matplotlib's SVG maps 1 inch = 72 pt = 96 CSS px, so a figure at natural size fits when its
size is at most :data:`MAX_FIGSIZE_IN` inches, and its text is readable from the back of a
room (18 CSS px or more) when every font is at least :data:`MIN_FONT_PT` points.

* :func:`use` -- notebooks: SVG inline figures with real ``<text>``, large fonts, Okabe-Ito
  colours, white background.  Call it from the setup cell; calling it again changes nothing.
* :func:`check` / :func:`assert_readable` -- what is wrong with a figure: too large, text too
  small, texts overlapping, text past the figure's edge.
* :func:`context`, :func:`subplots`, :func:`add_data_line` -- what the figure functions in this
  package draw with, so their figures meet the rule whether or not :func:`use` was called.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import math
import re
from typing import Dict, List, Sequence, Tuple

#: Largest figure, (width, height) in inches: 1152 x 528 CSS px in matplotlib's SVG.
MAX_FIGSIZE_IN: Tuple[float, float] = (12.0, 5.5)
#: Smallest visible text, in points: 18 CSS px.
MIN_FONT_PT: float = 13.5
#: matplotlib's mathtext scale for super- and subscripts (``SHRINK_FACTOR`` in matplotlib's _mathtext).
MATHTEXT_SCRIPT_SCALE: float = 0.7

#: CSS px per point in matplotlib's SVG (96 px per inch / 72 pt per inch).
PX_PER_PT = 96 / 72

#: Font sizes the package's figures use (points), all at or above MIN_FONT_PT.
SMALL_PT = 14.0   # tick labels, legends, the Data: line
BODY_PT = 15.0    # labels and text in diagrams
TITLE_PT = 18.0

#: Okabe & Ito's colour-blind-safe palette (Color Universal Design, 2002), in its usual order.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, BLACK = OKABE_ITO
GREY = "#5f5f5f"          # secondary text: dark enough to read on a projector
PROVENANCE_COLOR = "#444444"

#: Overlap below this, in CSS px on each axis, is not reported: glyph boxes touch, ink does not.
OVERLAP_TOLERANCE_PX = 1.0
#: The least space between neighbouring tick labels of one axis, in ems of their font: labels
#: side by side closer than that read as one ("1024×40961024×8192") even where their boxes do
#: not overlap (a word space is about 0.3 em).
TICK_GAP_EM = 0.5
#: The same for labels stacked as lines (y labels, turned x labels across their slant): the
#: space between two lines of text set at 1.2 em.
TICK_LINE_GAP_EM = 0.2


def rc_params() -> Dict:
    """The rcParams :func:`use` sets (a fresh dict each call)."""
    from cycler import cycler

    return {
        "svg.fonttype": "none",           # keep text as <text> so a browser lays it out and measures it
        "font.size": BODY_PT,
        "axes.titlesize": TITLE_PT,
        "axes.labelsize": BODY_PT,
        "xtick.labelsize": SMALL_PT,
        "ytick.labelsize": SMALL_PT,
        "legend.fontsize": SMALL_PT,
        "legend.title_fontsize": SMALL_PT,
        "figure.titlesize": TITLE_PT,
        "axes.titlepad": 12.0,            # clear of a y tick label at the top of the axes
        "axes.prop_cycle": cycler(color=list(OKABE_ITO)),
        "figure.facecolor": "white",
        "axes.facecolor": "white",
        "savefig.facecolor": "white",
        "axes.linewidth": 1.2,
        "lines.linewidth": 2.5,
        "lines.markersize": 8,
    }


#: matplotlib backends that draw to no screen: in a Jupyter kernel :func:`use` replaces them
#: with the inline backend.
_HEADLESS_BACKENDS = frozenset({"agg", "svg", "pdf", "ps", "cairo", "pgf", "template"})


def use() -> None:
    """Set the course's figure style for this Python session (notebooks call it once).

    Updates matplotlib's rcParams (:func:`rc_params`) and, inside IPython, makes the inline
    backend emit SVG.  In a Jupyter kernel whose backend draws to no screen (``MPLBACKEND=Agg``
    in the environment, as GPU job scripts set it), it switches to the inline backend first:
    there ``plt.show()`` would otherwise print nothing and every figure would be missing from
    the notebook and its deck.  An interactive backend the user chose (ipympl, Qt) is kept.
    Outside IPython only the rcParams change.  Safe to call again.
    """
    import matplotlib

    matplotlib.rcParams.update(rc_params())
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    if getattr(shell, "kernel", None) is not None and matplotlib.get_backend().lower() in _HEADLESS_BACKENDS:
        shell.run_line_magic("matplotlib", "inline")
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("svg")
    _fit_figures_to_the_output(shell)


#: The style on the root ``<svg>`` of a figure's HTML rendering: as wide as drawn, narrower when the
#: output area is (JupyterLab's is ~1,000 px beside a 1,152 px figure), aspect ratio kept.
FIT_STYLE = "max-width:100%;height:auto"
_SVG_ROOT = re.compile(r"<svg\b")


def fit_html(svg_text: str) -> str:
    """A figure's SVG as HTML that scales down to the output's width (:data:`FIT_STYLE` on the root
    element; never wider than drawn).  What a notebook shows; the decks keep the drawn size."""
    body = re.sub(r"^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?", "", svg_text, count=1, flags=re.S)
    body = _SVG_ROOT.sub(f'<svg style="{FIT_STYLE}"', body, count=1)
    return f'<div class="gv-figure-fit" style="max-width:100%">{body}</div>'


def _fit_figures_to_the_output(shell) -> None:
    """Give every matplotlib figure an HTML rendering (:func:`fit_html`) beside its SVG: frontends
    prefer HTML, so a figure fits the output area instead of running past its right edge (the
    players scale the same way).  The SVG is drawn once per display and shared by both."""
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    svg_fmt = formatters["image/svg+xml"]
    draw = svg_fmt.lookup_by_type(Figure) if Figure in svg_fmt.type_printers else None
    if draw is None or getattr(draw, "_gv_shared", False):
        return
    stash = {}

    def as_html(fig):
        text = draw(fig)
        if not text:
            return None
        stash[id(fig)] = text
        return fit_html(text)

    def as_svg(fig):
        text = stash.pop(id(fig), None)
        return text if text is not None else draw(fig)

    as_svg._gv_shared = True
    svg_fmt.for_type(Figure, as_svg)
    formatters["text/html"].for_type(Figure, as_html)


@contextlib.contextmanager
def context():
    """rcParams of :func:`use` for the duration of a ``with`` block (the session's are restored)."""
    import matplotlib

    with matplotlib.rc_context(rc_params()):
        yield


def styled(func):
    """Decorator: run a figure function inside :func:`context`, so that every text it creates
    takes the course's sizes whatever the session's rcParams are."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with context():
            return func(*args, **kwargs)

    return wrapper


def subplots(*args, figsize=(MAX_FIGSIZE_IN[0], MAX_FIGSIZE_IN[1]), **kwargs):
    """``plt.subplots`` in the course's style; tick label sizes are fixed on each axes so that
    ticks created later, outside :func:`context`, keep them.

    Raises:
        ValueError: ``figsize`` larger than :data:`MAX_FIGSIZE_IN`.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if figsize[0] > MAX_FIGSIZE_IN[0] or figsize[1] > MAX_FIGSIZE_IN[1]:
        raise ValueError(f"figsize {tuple(figsize)} in exceeds the slide's {MAX_FIGSIZE_IN} in")
    with context():
        fig, axes = plt.subplots(*args, figsize=figsize, **kwargs)
    for ax in np.atleast_1d(axes).ravel():
        ax.tick_params(which="both", labelsize=SMALL_PT)
    return fig, axes


def wrap(text: str, width_in: float, fontsize: float = SMALL_PT) -> str:
    """``text`` wrapped to lines that fit ``width_in`` inches at ``fontsize`` points.

    Uses 0.55 em per character, about DejaVu Sans's average over mixed text; :func:`check`
    measures the result.  Each part is wrapped evenly (:func:`gpu_viz.words.wrap_even`): as few
    lines as a plain wrap, none of them a lone word such as "live)" under a caption, and a name
    kept with what it names ("NVIDIA H200")."""
    from .. import words

    chars = max(10, int(width_in * 72 / (0.55 * fontsize)))
    return "\n".join("\n".join(words.wrap_even(part, chars)) for part in text.split("\n"))


def add_data_line(fig, text: str, fontsize: float = SMALL_PT) -> float:
    """Write the provenance line ``text`` (``"Data: ..."``) across the bottom of ``fig``, wrapped
    to its width; returns the height it takes, as a fraction of the figure's height (pass it
    as the bottom of a layout rectangle)."""
    w, h = fig.get_size_inches()
    wrapped = wrap(text, w - 0.2, fontsize)
    lines = wrapped.count("\n") + 1
    fig.text(0.1 / w, 0.06 / h, wrapped, fontsize=fontsize, color=PROVENANCE_COLOR, va="bottom", ha="left")
    return (lines * fontsize * 1.25 + 8) / (h * 72)


# -- the checker --------------------------------------------------------------------------------

@contextlib.contextmanager
def _recording_drawn_texts(drawn: List):
    """Record every Text artist that actually draws (visible, non-empty, in view) while active."""
    from matplotlib.text import Text

    original = Text.draw

    def draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    Text.draw = draw
    try:
        yield
    finally:
        Text.draw = original


def _renderer(fig):
    get = getattr(fig.canvas, "get_renderer", None)
    if get is not None:
        return get()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return FigureCanvasAgg(fig).get_renderer()


def _short(text: str, n: int = 40) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= n else one[: n - 3] + "...")


def drawn_texts(fig) -> List:
    """The Text artists ``fig`` draws (titles, tick labels, legend texts, annotations, fig.text),
    in drawing order; invisible ones, empty strings and ticks outside the view are left out."""
    drawn: List = []
    renderer = _renderer(fig)
    with _recording_drawn_texts(drawn):
        fig.draw(renderer)
    return list(dict.fromkeys(drawn))


def plain_log_ticks(ax, x: bool = True, y: bool = True) -> None:
    """Tick labels of log axes as plain text ("64", "1e-07") instead of mathtext's 10^k, whose
    exponent is drawn at 70% size (under the slide's smallest text at any readable base size)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for on, axis in ((x, ax.xaxis), (y, ax.yaxis)):
        if on and axis.get_scale() == "log":
            axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}" if 1e-3 <= v < 1e6 else f"{v:.0e}"))
            axis.set_minor_formatter(NullFormatter())


def check(fig) -> List[str]:
    """What keeps ``fig`` from being readable on the projector; ``[]`` when nothing does.

    Reports, one string each: a size over :data:`MAX_FIGSIZE_IN` inches; every drawn text under
    :data:`MIN_FONT_PT` points; every pair of drawn texts whose boxes overlap by more than
    :data:`OVERLAP_TOLERANCE_PX` CSS px both ways; every pair of neighbouring tick labels of one
    axis closer than :data:`TICK_GAP_EM` (side by side) or :data:`TICK_LINE_GAP_EM` (stacked) of
    their font; every text reaching past the figure's edge;
    every legend covering a bar of its axes.  Boxes are measured with the figure's own renderer
    after a full draw.
    """
    problems: List[str] = []
    w, h = fig.get_size_inches()
    if w > MAX_FIGSIZE_IN[0] + 1e-9 or h > MAX_FIGSIZE_IN[1] + 1e-9:
        problems.append(f"figure is {w:g} x {h:g} in ({w * 96:.0f} x {h * 96:.0f} CSS px); "
                        f"the most is {MAX_FIGSIZE_IN[0]:g} x {MAX_FIGSIZE_IN[1]:g} in")
    texts = drawn_texts(fig)
    renderer = _renderer(fig)
    css = 96 / fig.dpi  # CSS px per display pixel
    for t in texts:
        size = t.get_fontsize()
        # mathtext draws super- and subscripts (log-axis ticks' 10^-7) at 70% of the text's size
        raw = t.get_text()
        if "$" in raw and ("^" in raw or "_" in raw):
            size *= MATHTEXT_SCRIPT_SCALE
        if size < MIN_FONT_PT - 1e-9:
            problems.append(f"text {_short(t.get_text())} is {size:g} pt ({size * PX_PER_PT:.1f} CSS px); "
                            f"the least is {MIN_FONT_PT:g} pt")
    boxes = [(t, t.get_window_extent(renderer)) for t in texts]
    fig_w, fig_h = w * fig.dpi, h * fig.dpi
    for t, b in boxes:
        past = max(-b.x0, -b.y0, b.x1 - fig_w, b.y1 - fig_h) * css
        if past > OVERLAP_TOLERANCE_PX:
            problems.append(f"text {_short(t.get_text())} reaches {past:.0f} CSS px past the figure's edge")
    for (t1, b1), (t2, b2) in itertools.combinations(boxes, 2):
        dx = (min(b1.x1, b2.x1) - max(b1.x0, b2.x0)) * css
        dy = (min(b1.y1, b2.y1) - max(b1.y0, b2.y0)) * css
        if dx > OVERLAP_TOLERANCE_PX and dy > OVERLAP_TOLERANCE_PX:
            problems.append(f"texts {_short(t1.get_text())} and {_short(t2.get_text())} overlap "
                            f"({dx:.0f} x {dy:.0f} CSS px)")
    problems += [f"tick labels {_short(a)} and {_short(b)} are {gap:.0f} CSS px apart; the least is "
                 f"{least:.0f}" for ax in fig.axes for a, b, gap, least in crowded_ticks(ax, renderer, drawn=texts)]
    for ax in fig.axes:
        for covered in legend_covers(ax, renderer):
            problems.append(f"the legend covers a bar ({covered})")
    return problems


def crowded_ticks(ax, renderer=None, which: str = "xy", drawn=None) -> List[tuple]:
    """Neighbouring major tick labels of ``ax`` (x labels side by side, y labels one above the
    other; ``which``: "x", "y" or "xy") closer than :data:`TICK_GAP_EM` of their font side by
    side or :data:`TICK_LINE_GAP_EM` stacked (y labels, turned x labels across their slant), as
    ``(text, text, gap, least)`` with the gap and the least in CSS px (a negative gap: they
    overlap); ``[]`` where none are.  Only labels drawn (visible, non-empty, inside the view)
    count: ``drawn``, the figure's :func:`drawn_texts` where the caller has them (else one draw)."""
    if which not in ("x", "y", "xy"):
        raise ValueError(f"which must be 'x', 'y' or 'xy', got {which!r}")
    renderer = renderer or _renderer(ax.figure)
    drawn = {id(t) for t in (drawn_texts(ax.figure) if drawn is None else drawn)}
    css = 96 / ax.figure.dpi
    out = []
    for axis, lo, hi, across in ((ax.xaxis, "x0", "x1", ("y0", "y1")), (ax.yaxis, "y0", "y1", ("x0", "x1"))):
        if axis.axis_name not in which:
            continue
        labels = [t for t in axis.get_ticklabels() if id(t) in drawn]
        boxes = sorted(((t, t.get_window_extent(renderer)) for t in labels), key=lambda tb: getattr(tb[1], lo))
        for (t1, b1), (t2, b2) in zip(boxes, boxes[1:]):
            if min(getattr(b1, across[1]), getattr(b2, across[1])) <= max(getattr(b1, across[0]), getattr(b2, across[0])):
                continue  # not side by side (x labels on different rows, y labels in different columns)
            gap = (getattr(b2, lo) - getattr(b1, hi)) * css
            em = max(t1.get_fontsize(), t2.get_fontsize()) * PX_PER_PT
            least = (TICK_GAP_EM if axis is ax.xaxis else TICK_LINE_GAP_EM) * em
            turn = math.radians(t1.get_rotation() % 180)
            if axis is ax.xaxis and t1.get_rotation() == t2.get_rotation() and math.sin(turn) > 0.1:
                # turned labels lie side by side along their slant: the gap across it is the
                # anchors' (right ends') distance times the sine, less a label's height (1.2 em a line)
                lines = max(t1.get_text().count("\n"), t2.get_text().count("\n")) + 1
                gap = abs(b2.x1 - b1.x1) * css * math.sin(turn) - lines * 1.2 * em
                least = TICK_LINE_GAP_EM * em
            if gap < least:
                out.append((t1.get_text(), t2.get_text(), gap, least))
    return out


def legend_covers(ax, renderer=None, clearance_px: float = 0.0) -> List[str]:
    """The bars (visible rectangles of ``ax.patches`` with a finite, non-zero height) whose drawn
    box the legend of ``ax`` overlaps by more than :data:`OVERLAP_TOLERANCE_PX` CSS px both ways
    (with ``clearance_px``: or comes within that many CSS px of from above), each as
    ``"x=..., top=..."`` in data units; ``[]`` without a legend."""
    leg = ax.get_legend()
    if leg is None or not leg.get_visible():
        return []
    renderer = renderer or _renderer(ax.figure)
    css = 96 / ax.figure.dpi
    lb = leg.get_window_extent(renderer)
    out = []
    for p in ax.patches:
        h = p.get_height() if hasattr(p, "get_height") else 0
        if not p.get_visible() or not h or not math.isfinite(h):  # a missing value is a NaN bar
            continue
        b = p.get_window_extent(renderer)
        dx = (min(lb.x1, b.x1) - max(lb.x0, b.x0)) * css
        dy = (min(lb.y1, b.y1) - max(lb.y0, b.y0)) * css + clearance_px
        if dx > OVERLAP_TOLERANCE_PX and dy > OVERLAP_TOLERANCE_PX:
            out.append(f"x={p.get_x() + p.get_width() / 2:.2f}, top={p.get_y() + p.get_height():.3g}")
    return out


def assert_readable(fig) -> None:
    """Raise if :func:`check` finds anything.

    Raises:
        ValueError: listing every problem :func:`check` found.
    """
    problems = check(fig)
    if problems:
        raise ValueError(f"figure is not readable on a 1280x720 slide ({len(problems)} problems):\n  "
                         + "\n  ".join(problems))


def figure_text_sizes(fig) -> Sequence[float]:
    """The font sizes (points) of the texts ``fig`` draws, smallest first."""
    return sorted(t.get_fontsize() for t in drawn_texts(fig))
