"""PDFs of the built decks: reveal.js print mode (``?print-pdf``) through headless Chromium.

Data path::

    <out>/NN_topic.slides.html --(Chromium, playwright, page.pdf at the slide's 1280x720)--> <out>/NN_topic.pdf

One page per slide (the deck template sets ``pdfMaxPagesPerSlide: 1`` and shows fragments at once),
speaker notes left out.  ``gpu-viz slides`` calls :func:`render` after building (``make slides``);
``gpu-viz slides --no-pdf`` skips it.  Chromium: ``$GPU_VIZ_CHROMIUM``, else ``/usr/bin/chromium``,
else ``chromium`` on PATH; the Python package ``playwright`` drives it.
"""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path
from typing import List, Optional

from .slides import SLIDE_HEIGHT, SLIDE_WIDTH, BuildResult, SlidesError, write_index

LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> Optional[str]:
    """The Chromium executable to drive, or None."""
    for cand in (os.environ.get("GPU_VIZ_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).is_file():
            return cand
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


#: Print mode shows each static player at the frame its Animation chose to print (``data-print-frame``:
#: the one that teaches -- by default the last, the finished state, not the first, where often
#: nothing has happened yet; a queue draining prints mid-way).  Returns each player's
#: [frame shown, frames, frame chosen] after the move.
PRINT_FRAME_JS = """() => Array.from(document.querySelectorAll('.gpu-viz-player')).map(p => {
  const r = p.querySelector('input[type=range]');
  const n = parseInt(p.dataset.frames || '1', 10);
  const want = p.dataset.printFrame !== undefined ? parseInt(p.dataset.printFrame, 10) : n - 1;
  if (r) { r.value = want; r.dispatchEvent(new Event('input', {bubbles: true})); }
  return [parseInt(p.dataset.frame || '0', 10), n, want];
})"""


def show_print_frames(page) -> List[List[int]]:
    """Move every static player on ``page`` (a playwright page) to the frame it prints; returns
    each player's [frame shown, frames, frame chosen]."""
    return page.evaluate(PRINT_FRAME_JS)


def _print_deck(browser, base: str, html_name: str, pdf_path: Path) -> None:
    # Only requests to the local build pass: a deck that needs the network fails to print.
    context = browser.new_context(viewport={"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT})
    try:
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith((base, "data:", "blob:"))
                      else r.abort())
        page = context.new_page()
        page.goto(f"{base}/{html_name}?print-pdf", wait_until="load")
        page.wait_for_function("window.gpuVizReady === true", timeout=60000)
        page.wait_for_timeout(800)  # MathJax typesets after reveal.js is ready
        show_print_frames(page)
        page.pdf(path=str(pdf_path), width=f"{SLIDE_WIDTH}px", height=f"{SLIDE_HEIGHT}px",
                 print_background=True, margin={"top": "0", "right": "0", "bottom": "0", "left": "0"})
    finally:
        context.close()


def render(build_dir: Path, *, browser=None, out_dir: Optional[Path] = None) -> List[Path]:
    """Print every deck of the build in ``build_dir`` to ``<out_dir or build_dir>/NN_topic.pdf``.

    ``browser``: an already launched playwright Chromium (the test session's); else one is launched.
    Returns the PDF paths (in deck order) and, when writing into the build, relinks its index page
    to them.

    Raises:
        FileNotFoundError: ``build_dir`` holds no ``gpu-viz slides`` build (no manifest.json).
        SlidesError: Chromium or playwright is missing, or a deck did not print.
    """
    build = BuildResult.load(Path(build_dir))
    target = Path(out_dir) if out_dir is not None else build.out_dir
    target.mkdir(parents=True, exist_ok=True)
    decks = [d for d in build.decks if d.html is not None and d.html.is_file()]
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(build.out_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    made = []
    try:
        if browser is not None:
            for d in decks:
                made.append(_print_one(browser, base, d, target))
        else:
            exe = chromium_path()
            if exe is None:
                raise SlidesError("PDFs need Chromium: none at $GPU_VIZ_CHROMIUM, /usr/bin/chromium or on "
                                  "PATH (apt-get install chromium), or skip them with --no-pdf")
            try:
                from playwright.sync_api import sync_playwright
            except ImportError as exc:
                raise SlidesError(f"PDFs need the playwright package ({exc}): pip install playwright, "
                                  "or skip them with --no-pdf") from None
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path=exe, args=LAUNCH_ARGS)
                try:
                    for d in decks:
                        made.append(_print_one(b, base, d, target))
                finally:
                    b.close()
    finally:
        server.shutdown()
    if target == build.out_dir:
        write_index(build.decks, build.out_dir)
    return made


def _print_one(browser, base, deck, target: Path) -> Path:
    pdf_path = target / deck.html.name.replace(".slides.html", ".pdf")
    try:
        _print_deck(browser, base, deck.html.name, pdf_path)
    except Exception as exc:  # playwright's errors: say which deck
        raise SlidesError(f"{deck.name}: printing the deck to PDF failed: {exc}") from exc
    return pdf_path
