"""The drawing kit every player frame is made with: SVG markup written from trace data.

A frame's drawing is one ``<svg>`` of :data:`WIDTH` x at most :data:`HEIGHT` CSS px, drawn at
scale 1 (its viewBox equals its size), so a font size here is the size on a 1280x720 slide.
Every text is at least :data:`MIN_FONT_PX` (18 CSS px, legible from the back of a room).
Colours are Okabe-Ito (colour-blind safe); every colour that carries meaning also has a word,
a letter or a mark beside it, never colour alone.
"""
from __future__ import annotations

import html
import itertools
import math
from typing import Iterable, List, Sequence

import numpy as np

#: Width of every frame's drawing, CSS px (the source pane takes the rest of a 1200 px player).
WIDTH = 760
#: The tallest a frame's drawing may be, CSS px (title, provenance, caption and controls take the
#: rest of a 560 px player).
HEIGHT = 360
#: No text smaller than this, CSS px.
MIN_FONT_PX = 18
#: Arial-metric fonts first (narrow digits: "0.53" fits a 40 px lane cell at 18 px).
FONT = "Liberation Sans, Arial, Helvetica, DejaVu Sans, sans-serif"
#: Inline style of every drawing: narrower than drawn, it scales down with the width and keeps its
#: aspect ratio (height follows the viewBox); it never grows past its drawn size.
SCALE_STYLE = "display:block;max-width:100%;height:auto"
#: Line height for text rows, CSS px.
ROW = 24

#: Okabe & Ito's colour-blind-safe palette.
ORANGE, SKY, GREEN, YELLOW, BLUE, VERMILLION, PURPLE, BLACK = (
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000")
GREY, LIGHT, INK, MUTED = "#BBBBBB", "#EEEEEE", "#111111", "#444444"
#: Cycle of fills for categories (waves, paths): the palette without black.
CYCLE = (SKY, ORANGE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE)
_ids = itertools.count()


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def fmt(v, width: int = 5) -> str:
    """A float in at most ``width`` characters (lane cells are narrow): 1234, 68.3, 0.53, -.04,
    27k, 1.2M; '–' for NaN (no value)."""
    if v is None or not np.isfinite(v):
        return "–"
    v = float(v)
    if abs(v) < 0.005:
        v = 0.0                      # "-0.00" would say nothing more, in more characters
    two = f"{v:.2f}"
    for s in (two, two.replace("0.", ".", 1) if abs(v) < 1 else two, f"{v:.1f}", f"{v:.0f}",
              f"{v / 1e3:.1f}k", f"{v / 1e3:.0f}k", f"{v / 1e6:.1f}M", f"{v / 1e6:.0f}M"):
        if len(s) <= width:
            return s
    return f"{v:.0e}".replace("e+0", "e").replace("e+", "e")


def lerp_colour(a: str, b: str, t: float) -> str:
    """The colour a fraction ``t`` (0..1) of the way from hex ``a`` to hex ``b``."""
    t = min(1.0, max(0.0, float(t)))
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02X}" for x, y in zip(ca, cb))


def ink_on(fill: str) -> str:
    """Black or white text, whichever reads on ``fill``."""
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "#FFFFFF" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else INK


class Svg:
    """An SVG drawing built element by element; :meth:`markup` closes it.

    Args:
        height: CSS px, at most :data:`HEIGHT`; the width is always :data:`WIDTH`.

    Raises:
        ValueError: ``height`` outside 1..:data:`HEIGHT`.
    """

    def __init__(self, height: int = HEIGHT):
        if not 1 <= height <= HEIGHT:
            raise ValueError(f"Svg: height must be 1..{HEIGHT} px (the player's budget), got {height}")
        self.height = int(height)
        self.parts: List[str] = []
        self._defs: List[str] = []

    def defs(self, markup: str) -> None:
        """Add to ``<defs>``; ids in it must come from :meth:`new_id` (unique on the page)."""
        self._defs.append(markup)

    @staticmethod
    def new_id(prefix: str = "gv") -> str:
        """An id no other drawing of this process uses (decks hold many players)."""
        return f"{prefix}{next(_ids)}"

    def rect(self, x, y, w, h, fill=LIGHT, stroke=None, sw=1.0, rx=3, opacity=None, dash=None, extra=""):
        a = f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" rx="{rx}" fill="{fill}"'
        if stroke:
            a += f' stroke="{stroke}" stroke-width="{sw}"'
        if opacity is not None:
            a += f' opacity="{opacity:.2f}"'
        if dash:
            a += f' stroke-dasharray="{dash}"'
        self.parts.append(a + (" " + extra if extra else "") + "/>")

    def text(self, x, y, s, size=MIN_FONT_PX, anchor="start", weight=None, fill=INK, cls=None, italic=False):
        """Text with its baseline at ``y``; ``size`` below :data:`MIN_FONT_PX` is refused."""
        if size < MIN_FONT_PX:
            raise ValueError(f"Svg.text: size must be >= {MIN_FONT_PX} px (legible on a slide), got {size}")
        a = f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
        if weight:
            a += f' font-weight="{weight}"'
        if italic:
            a += ' font-style="italic"'
        if cls:
            a += f' class="{cls}"'
        self.parts.append(a + f">{esc(s)}</text>")

    def line(self, x1, y1, x2, y2, stroke=INK, sw=2.0, dash=None, arrow=False):
        """A line; with ``arrow`` an arrowhead at (x2, y2)."""
        a = f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" stroke-width="{sw}"'
        if dash:
            a += f' stroke-dasharray="{dash}"'
        self.parts.append(a + "/>")
        if arrow:
            self.head(x1, y1, x2, y2, stroke)

    def curve(self, x1, y1, cx, cy, x2, y2, stroke=INK, sw=2.0, arrow=True):
        """A quadratic curve from (x1, y1) to (x2, y2) bent towards (cx, cy); arrowhead at the end."""
        self.parts.append(f'<path d="M{x1:.1f},{y1:.1f} Q{cx:.1f},{cy:.1f} {x2:.1f},{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{sw}" fill="none"/>')
        if arrow:
            self.head(cx, cy, x2, y2, stroke)

    def head(self, fx, fy, x, y, fill=INK, size=9.0):
        """An arrowhead at (x, y) pointing away from (fx, fy).  Drawn as a polygon, not an SVG
        marker: a marker is found by id, and a hidden slide's copy of that id would hide it."""
        dx, dy = x - fx, y - fy
        n = math.hypot(dx, dy) or 1.0
        ux, uy = dx / n, dy / n
        bx, by = x - ux * size, y - uy * size
        px, py = -uy * size * 0.5, ux * size * 0.5
        self.parts.append(f'<polygon points="{x:.1f},{y:.1f} {bx + px:.1f},{by + py:.1f} {bx - px:.1f},{by - py:.1f}" '
                          f'fill="{fill}"/>')

    def raw(self, markup: str) -> None:
        self.parts.append(markup)

    def cell(self, x, y, w, h, label="", fill=LIGHT, stroke=MUTED, sw=1.0, size=MIN_FONT_PX, weight=None,
             opacity=None, dash=None):
        """A box with centred text (a lane's register, a shared-memory slot)."""
        self.rect(x, y, w, h, fill=fill, stroke=stroke, sw=sw, opacity=opacity, dash=dash)
        if label != "":
            self.text(x + w / 2, y + h / 2 + size * 0.36, label, size=size, anchor="middle",
                      weight=weight, fill=ink_on(fill) if opacity is None or opacity > 0.6 else INK)

    def legend(self, x, y, items: Sequence[tuple], gap: int = 22) -> float:
        """A row of (fill, words) swatches starting at (x, baseline y); returns the x after it."""
        for fill, words in items:
            self.rect(x, y - 15, 18, 18, fill=fill, stroke=MUTED)
            self.text(x + 24, y, words)
            x += 24 + _text_px(words) + gap
        return x

    def markup(self) -> str:
        defs = f'<defs>{"".join(self._defs)}</defs>' if self._defs else ""
        return (f'<svg class="gpu-viz-drawing" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
                f'height="{self.height}" viewBox="0 0 {WIDTH} {self.height}" style="{SCALE_STYLE}" '
                f'font-family="{FONT}" role="img">'
                + defs + "".join(self.parts) + "</svg>")


def _text_px(s: str, size: float = MIN_FONT_PX) -> float:
    """A width estimate for sans-serif text (0.6 em a character): used to place legend swatches."""
    return 0.6 * size * len(str(s))


def lane_rows(svg: Svg, x0: float, y0: float, values: Sequence, *, cell_w: float = 40, cell_h: float = 32,
              per_row: int = 16, gap: float = 3, fills=None, labels=None, strokes=None, widths=None,
              opacities=None, row_label: bool = True) -> List[tuple]:
    """Draw ``len(values)`` cells ``per_row`` to a row (lanes 0-15 above 16-31), each with its value.

    ``fills`` / ``labels`` / ``strokes`` / ``widths`` / ``opacities``: per-cell overrides (None = the
    default).  With ``row_label`` each row starts with "0-15" / "16-31" to its left (the lane
    numbers).  Returns each cell's centre (x, y), for arrows.
    """
    centres = []
    n = len(values)
    for i in range(n):
        r, c = divmod(i, per_row)
        x, y = x0 + c * (cell_w + gap), y0 + r * (cell_h + gap)
        label = labels[i] if labels is not None else fmt(values[i])
        svg.cell(x, y, cell_w, cell_h, label, fill=(fills[i] if fills is not None else LIGHT),
                 stroke=(strokes[i] if strokes is not None else MUTED),
                 sw=(widths[i] if widths is not None else 1.0),
                 opacity=(opacities[i] if opacities is not None else None))
        centres.append((x + cell_w / 2, y + cell_h / 2))
    if row_label:
        for r in range(math.ceil(n / per_row)):
            lo, hi = r * per_row, min(n, (r + 1) * per_row) - 1
            svg.text(x0 - 6, y0 + r * (cell_h + gap) + cell_h / 2 + 6, f"{lo}-{hi}", anchor="end", fill=MUTED)
    return centres


def bits(values: Iterable[bool]) -> int:
    """An int whose bit k is values[k]."""
    out = 0
    for k, v in enumerate(values):
        out |= int(bool(v)) << k
    return out
