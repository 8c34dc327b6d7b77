"""Writes tests/data/99_slides_selftest.ipynb: a tiny notebook exercising everything a deck must show.

A gpu_viz player (static in slides, its code hidden by the "hide-input" tag), a plain ipywidgets slider (rendered from stored widget state),
math (MathJax), a code cell with text output, a speaker-notes cell, a skipped cell and the standard
header.  Run: .venv/bin/python tests/data/make_selftest.py
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "scripts"))
from nbkit import code, header, md, notes, write  # noqa: E402

PLAYER = '''
from gpu_viz import provenance
from gpu_viz.widgets import Animation, Frame, svg

SOURCE = "int i = blockIdx.x * blockDim.x + threadIdx.x;\\nif (i < n) c[i] = a[i] + b[i];"

def draw(k):
    d = svg.Svg(height=80)
    for j, v in enumerate([k + 1, 2, 3, 4 - k]):
        d.cell(10 + 60 * j, 30, 50, 40, str(v), fill=svg.SKY)
    d.text(10, 22, f"frame {k}")
    return d.markup()

anim = Animation([Frame(draw(k), cap, line) for k, (cap, line) in enumerate([("load", 1), ("add", 2), ("store", 2)])],
                 title="self-test player", provenance=provenance(), source=SOURCE, interval_ms=200)
anim.show()
'''

cells = header("99", "slides_selftest", "Slides self-test",
               "Checks the deck build: players, widgets, math, notes.") + [
    md("## Math\n\nRMS of a row: $\\mathrm{rms}(x) = \\sqrt{\\tfrac{1}{N}\\sum_i x_i^2 + \\epsilon}$", "slide"),
    notes("Speaker notes: say that the epsilon keeps the division finite."),
    md("## A player", "slide"),
    code(PLAYER, "-", tags=["hide-input"]),
    notes("Speaker notes: the static player plays with no kernel."),
    md("## A plain widget", "slide"),
    code("import ipywidgets as w\nw.IntSlider(value=7, min=0, max=10, description='blocks')", "-"),
    md("## Text output", "subslide"),
    # a line longer than the slide is wide, and an unbreakable identifier: both must wrap on the
    # projector, not be cut off at the right edge (tests/test_browser.py)
    code("print('warp size:', 32)\n"
         "# a line longer than the slide is wide must wrap on the projector, not be cut off at the right edge: "
         "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, dynamic_shared_memory_bytes)\n"
         "LONG_NAME = 'an_unbreakable_identifier_that_is_far_wider_than_any_slide_could_ever_show_on_one_line_"
         "without_wrapping_it'", "-"),
    code("print('this cell is skipped on slides')", "skip"),
]

if __name__ == "__main__":
    print(write(str(HERE / "99_slides_selftest.ipynb"), cells))
