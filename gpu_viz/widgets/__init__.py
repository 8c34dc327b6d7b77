"""Players fed by frames: ``live()`` (ipywidgets) and ``static_html()`` (no kernel needed)."""
from .player import Animation, Frame, figure_png, render_frames, show_figure  # noqa: F401
