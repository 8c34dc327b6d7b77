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

from .outdir import OwnedFolder
from .deck_preprocess import SLIDE_HEIGHT, SLIDE_WIDTH
from .deck_vendor import SlidesError, _earlier_build
from .slides import BuildResult, write_index

LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


#: The variable that names the Chromium to drive (else /usr/bin/chromium, else one on PATH).
CHROMIUM_ENV = "GPU_VIZ_CHROMIUM"


def chromium_path() -> Optional[str]:
    """The Chromium executable to drive: ``$GPU_VIZ_CHROMIUM`` when set, else ``/usr/bin/chromium``,
    else ``chromium`` / ``chromium-browser`` on PATH; None when there is none.

    Raises:
        SlidesError: ``$GPU_VIZ_CHROMIUM`` is set but names no executable file (it is never
            passed over silently for another browser).
    """
    named = os.environ.get(CHROMIUM_ENV)
    if named:
        found = shutil.which(named) if os.sep not in named else (named if Path(named).is_file() else None)
        if found is None or not Path(found).is_file():
            raise SlidesError(f"${CHROMIUM_ENV}={named!r}: no such file; set it to the Chromium executable "
                              f"(e.g. /usr/bin/chromium), or unset it")
        if not os.access(found, os.X_OK):
            raise SlidesError(f"${CHROMIUM_ENV}={named!r}: not an executable file; set it to the Chromium "
                              "executable, or unset it")
        return found
    for cand in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if cand and Path(cand).is_file():
            return cand
    return None


def _launch(pw, exe: str):
    """Chromium at ``exe`` through playwright; a browser that does not start is a SlidesError
    naming it (and ``$GPU_VIZ_CHROMIUM`` when that chose it), with playwright's first line."""
    try:
        return pw.chromium.launch(executable_path=exe, args=LAUNCH_ARGS)
    except Exception as exc:  # playwright's Error: a long log; its first line says what happened
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        chosen = f" (${CHROMIUM_ENV})" if os.environ.get(CHROMIUM_ENV) else ""
        raise SlidesError(f"Chromium at {exe}{chosen} did not start: {first[:300]}; set ${CHROMIUM_ENV} to a "
                          "working Chromium, or skip the PDFs with --no-pdf") from None


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

    Each PDF is written whole into a folder the build owns (:class:`gpu_viz.outdir.OwnedFolder`): a
    PDF of the same name that the build did not write is never replaced.

    Raises:
        FileNotFoundError: ``build_dir`` holds no ``gpu-viz slides`` build (no manifest.json).
        SlidesError: Chromium or playwright is missing or does not start, or a deck did not print.
        FolderError: the target folder holds files the build did not write, or a file cannot be written.
    """
    build = BuildResult.load(Path(build_dir))
    target = Path(out_dir) if out_dir is not None else build.out_dir
    decks = [d for d in build.decks if d.html is not None and d.html.is_file()]
    with OwnedFolder(target, "--out", adopt=_earlier_build) as folder:
        return _render(build, decks, folder, browser, target == build.out_dir)


def _render(build, decks, folder, browser, relink: bool) -> List[Path]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(build.out_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    made = []
    try:
        if browser is not None:
            for d in decks:
                made.append(_print_one(browser, base, d, folder))
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
                b = _launch(pw, exe)
                try:
                    for d in decks:
                        made.append(_print_one(b, base, d, folder))
                finally:
                    b.close()
    finally:
        server.shutdown()
    if relink:
        write_index(build.decks, build.out_dir, folder=folder)
    return made


def _print_one(browser, base, deck, folder: OwnedFolder) -> Path:
    name = deck.html.name.replace(".slides.html", ".pdf")

    def make(path: Path) -> None:
        try:
            _print_deck(browser, base, deck.html.name, path)
        except OSError:
            raise
        except Exception as exc:  # playwright's errors: say which deck, in one line
            first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
            raise SlidesError(f"{deck.name}: printing the deck to PDF failed: {first[:300]}") from exc

    return folder.produce(name, make)
