"""Players fed by frames: ``live()`` (ipywidgets) and ``static_html()`` (no kernel needed); ``svg``
is the kit the frames draw with."""
from . import svg  # noqa: F401
from .player import Animation, Frame, Still, figure_png, show_figure, show_live, source_view  # noqa: F401
