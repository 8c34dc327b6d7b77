"""Players: one list of frames, two renderers (DESIGN.md section 6).

Data path: Trace --> frames (``gpu_viz.frames.<stem>``; :func:`render_frames` draws each with
matplotlib) -->
:class:`Animation` --> ``live()`` (ipywidgets: play, step, scrub, highlighted source line)
and ``static_html()`` (self-contained HTML + JS that plays in exported reveal.js slides and
on GitHub with no kernel).

``Animation.show()`` emits ONE output carrying both: the widget view for a live frontend
and the static HTML, which frontends without the widget manager (nbconvert, GitHub)
render.  Only ipywidgets API common to 7.7.1 (Colab) and 8 is used: Play, IntSlider,
jslink, HBox/VBox, Image, HTML, Button, Layout.
"""
from __future__ import annotations

import base64
import dataclasses
import html
import io
import itertools
import json
from typing import Callable, List, Optional, Sequence

PLAYER_METADATA_KEY = "gpu_viz"
_ids = itertools.count()


@dataclasses.dataclass(frozen=True)
class Frame:
    """One frame: a PNG image, a caption, and the 1-based source line to highlight (or None)."""

    png: bytes
    caption: str = ""
    line: Optional[int] = None


def figure_png(fig, dpi: int = 80, tight: bool = True, close: bool = True) -> bytes:
    """Render a matplotlib figure to PNG bytes (and close it unless ``close=False``).

    ``tight``: crop to the drawn area (a second layout pass: about twice the render time; a
    figure laid out by hand does not need it).
    """
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white", **({"bbox_inches": "tight"} if tight else {}))
    if close:
        plt.close(fig)
    return buf.getvalue()


def render_frames(draw: Callable[[int], "object"], count: int, captions: Sequence[str],
                  lines: Optional[Sequence[Optional[int]]] = None, dpi: int = 80,
                  tight: bool = True) -> List[Frame]:
    """Build frames by calling ``draw(i)`` (returns a matplotlib Figure) for i in range(count).

    ``tight``: see :func:`figure_png`.

    Raises:
        ValueError: if ``captions`` (or ``lines``) does not have ``count`` entries.
    """
    if len(captions) != count:
        raise ValueError(f"render_frames: captions has {len(captions)} entries, expected count={count}")
    if lines is not None and len(lines) != count:
        raise ValueError(f"render_frames: lines has {len(lines)} entries, expected count={count}")
    lines = list(lines) if lines is not None else [None] * count
    return [Frame(png=figure_png(draw(i), dpi=dpi, tight=tight), caption=captions[i], line=lines[i])
            for i in range(count)]


def show_figure(fig, dpi: int = 80) -> None:
    """Display a matplotlib figure as a PNG whatever the backend (Agg included), then close it."""
    from IPython.display import Image, display

    display(Image(data=figure_png(fig, dpi=dpi), format="png"))


def _source_html(source: str, line: Optional[int], dom_id: str = "") -> str:
    rows = []
    for i, text in enumerate(source.splitlines(), 1):
        style = "background:#ffe08a;font-weight:bold;" if i == line else ""
        rows.append(f'<span data-line="{i}" style="display:block;{style}">{html.escape(text) or " "}</span>')
    id_attr = f' id="{dom_id}"' if dom_id else ""
    return (f'<pre{id_attr} class="gpu-viz-source" style="font-size:13px;line-height:1.35;'
            f'margin:0;padding:6px;background:#f6f8fa;color:#111;overflow:auto">' + "".join(rows) + "</pre>")


class Animation:
    """Frames plus the context every player shows: title, provenance, the kernel source.

    Args:
        frames: the frames, in order (at least one).
        title: shown above the player.
        provenance: where the data came from ("measured on NVIDIA L4 (sm_89) just now",
            "CPU model, no GPU", "recorded on NVIDIA H200, 2026-11-29"); always shown.
        source: kernel source text whose ``Frame.line`` is highlighted, or None.
        interval_ms: play speed, milliseconds per frame.

    Raises:
        ValueError: no frames, or a frame's ``line`` outside ``source``.
    """

    def __init__(self, frames: Sequence[Frame], *, title: str, provenance: str,
                 source: Optional[str] = None, interval_ms: int = 800):
        if not frames:
            raise ValueError("Animation: frames is empty; a player needs at least one frame")
        n_lines = len(source.splitlines()) if source else 0
        for i, f in enumerate(frames):
            if source and f.line is not None and not (1 <= f.line <= n_lines):
                raise ValueError(f"Animation: frame {i} highlights line {f.line}, but source has {n_lines} lines")
        self.frames = list(frames)
        self.title, self.provenance, self.source = title, provenance, source
        self.interval_ms = int(interval_ms)

    def __len__(self):
        return len(self.frames)

    # -- static: plays with no kernel --------------------------------------------------
    def static_html(self) -> str:
        """Self-contained HTML + inline JS player (buttons, range slider, play/pause)."""
        uid = f"gvp{next(_ids)}_{id(self) & 0xFFFF:x}"
        imgs = [base64.b64encode(f.png).decode() for f in self.frames]
        meta = [{"caption": f.caption, "line": f.line} for f in self.frames]
        src = _source_html(self.source, self.frames[0].line, f"{uid}-src") if self.source else ""
        n = len(self.frames)
        return f"""
<div class="gpu-viz-player" id="{uid}" data-frames="{n}" style="font-family:sans-serif;max-width:100%">
  <div style="font-weight:bold">{html.escape(self.title)}</div>
  <div class="gpu-viz-provenance" style="font-size:12px;color:#555">Data: {html.escape(self.provenance)}</div>
  <div style="display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap">
    <img id="{uid}-img" style="max-width:640px;width:100%" src="data:image/png;base64,{imgs[0]}"/>
    {f'<div style="flex:1;min-width:280px">{src}</div>' if src else ''}
  </div>
  <div class="gpu-viz-caption" id="{uid}-cap" style="min-height:1.4em;margin:4px 0">{html.escape(meta[0]['caption'])}</div>
  <div style="display:flex;gap:6px;align-items:center">
    <button type="button" data-act="first" title="first frame">&#x21E4;</button>
    <button type="button" data-act="prev" title="step back">&#x25C0;</button>
    <button type="button" data-act="play" title="play / pause">&#x25B6;</button>
    <button type="button" data-act="next" title="step forward">&#x25B6;&#x25B6;</button>
    <button type="button" data-act="last" title="last frame">&#x21E5;</button>
    <input type="range" min="0" max="{n - 1}" value="0" id="{uid}-range" style="flex:1"/>
    <span id="{uid}-pos">1 / {n}</span>
  </div>
</div>
<script>
(function() {{
  var root = document.getElementById("{uid}");
  if (!root || root.dataset.ready) return; root.dataset.ready = "1";
  var imgs = {json.dumps(imgs)}, meta = {json.dumps(meta)}, i = 0, timer = null;
  var img = document.getElementById("{uid}-img"), cap = document.getElementById("{uid}-cap");
  var rng = document.getElementById("{uid}-range"), pos = document.getElementById("{uid}-pos");
  var src = document.getElementById("{uid}-src");
  function show(k) {{
    i = Math.max(0, Math.min(imgs.length - 1, k));
    img.src = "data:image/png;base64," + imgs[i]; cap.textContent = meta[i].caption;
    rng.value = i; pos.textContent = (i + 1) + " / " + imgs.length; root.dataset.frame = i;
    if (src) {{
      var rows = src.querySelectorAll("span[data-line]");
      for (var r = 0; r < rows.length; r++) {{
        var on = meta[i].line !== null && (r + 1) === meta[i].line;
        rows[r].style.background = on ? "#ffe08a" : ""; rows[r].style.fontWeight = on ? "bold" : "";
        if (on && src.scrollHeight > src.clientHeight) {{  // a height-capped source pane follows the line
          var top = rows[r].offsetTop - (rows[r].offsetParent === src ? 0 : src.offsetTop);
          src.scrollTop = Math.max(0, top - src.clientHeight / 3);
        }}
      }}
    }}
  }}
  function stop() {{ if (timer) {{ clearInterval(timer); timer = null; }} }}
  root.addEventListener("click", function(ev) {{
    var b = ev.target.closest("button"); if (!b) return; ev.stopPropagation();
    var a = b.dataset.act;
    if (a === "play") {{
      if (timer) {{ stop(); return; }}
      if (i >= imgs.length - 1) show(0);
      timer = setInterval(function() {{ if (i >= imgs.length - 1) stop(); else show(i + 1); }}, {self.interval_ms});
    }} else {{ stop(); show(a === "first" ? 0 : a === "last" ? imgs.length - 1 : a === "prev" ? i - 1 : i + 1); }}
  }});
  rng.addEventListener("input", function() {{ stop(); show(parseInt(rng.value, 10)); }});
  show(0);
}})();
</script>"""

    # -- live: ipywidgets -------------------------------------------------------------
    def live(self):
        """An ipywidgets player: Play + IntSlider (jslinked), step buttons, image, source."""
        import ipywidgets as w

        n = len(self.frames)
        play = w.Play(value=0, min=0, max=n - 1, step=1, interval=self.interval_ms, description="play")
        slider = w.IntSlider(value=0, min=0, max=n - 1, step=1, description="frame",
                             continuous_update=True, layout=w.Layout(width="60%"))
        w.jslink((play, "value"), (slider, "value"))
        back, fwd = w.Button(description="◀ step"), w.Button(description="step ▶")
        image = w.Image(value=self.frames[0].png, format="png", layout=w.Layout(max_width="640px"))
        caption = w.HTML(value=html.escape(self.frames[0].caption))
        source = w.HTML(value=_source_html(self.source, self.frames[0].line) if self.source else "")

        def update(change):
            f = self.frames[change["new"]]
            image.value = f.png
            caption.value = html.escape(f.caption)
            if self.source:
                source.value = _source_html(self.source, f.line)

        slider.observe(update, names="value")
        back.on_click(lambda _b: setattr(slider, "value", max(0, slider.value - 1)))
        fwd.on_click(lambda _b: setattr(slider, "value", min(n - 1, slider.value + 1)))
        header = w.HTML(value=f"<b>{html.escape(self.title)}</b><br>"
                              f"<span style='font-size:12px;color:#555'>Data: {html.escape(self.provenance)}</span>")
        body = w.HBox([image, source]) if self.source else image
        box = w.VBox([header, body, caption, w.HBox([play, back, fwd, slider])])
        box.add_class("gpu-viz-live-player")
        return box

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {"text/plain": f"<Animation {self.title!r}: {len(self)} frames; {self.provenance}>",
                  "text/html": self.static_html()}
        try:
            widget = self.live()
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2, "version_minor": 0, "model_id": widget.model_id}
        except Exception:  # no ipywidgets or no kernel comm: the static player alone
            pass
        return bundle, {PLAYER_METADATA_KEY: {"player": True, "frames": len(self)}}

    def show(self):
        """Display the player (live widget where a widget manager runs, static HTML elsewhere)."""
        from IPython.display import display

        display(self)
