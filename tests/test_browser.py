"""The exported decks in a real headless Chromium (playwright driving /usr/bin/chromium).

Every request not to the local build is blocked and counted as a failure, so a deck that would
need the network fails here.  Per deck: loads with no console error and no failed request,
every slide reachable through the Reveal API, speaker notes present, a static player advances
frames, screenshots of the first slides in test-artifacts/slides/<deck>/ (gitignored).

The ``browser`` fixture is the one session Chromium of tests/conftest_browser.py (shared with every
other browser test; a second Playwright would clash with it).  Chromium missing, these tests
skip on a developer machine and FAIL in CI (CI=true): .ci/run installs it.
"""
import functools
import http.server
import os
import re
import threading
from pathlib import Path

import pytest

from conftest_slides import COURSE_NOTEBOOKS

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "slides"
SCREENSHOT_SLIDES = 3


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(directory):
    """Serve ``directory`` on 127.0.0.1 (a random free port); returns (base_url, server)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


class DeckPage:
    """A page whose every request is checked: local ones pass, anything else is blocked and recorded."""

    def __init__(self, browser, base, viewport=None):
        self.base = base
        self.context = browser.new_context(viewport=viewport or {"width": 1280, "height": 720})
        self.page = self.context.new_page()
        self.errors, self.failed, self.blocked = [], [], []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.context.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.base + "/") or url.startswith("data:") or url.startswith("blob:"):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def open_deck(self, name):
        self.page.goto(f"{self.base}/{name}", wait_until="load")
        self.page.wait_for_function("window.gpuVizReady === true", timeout=30000)
        self.page.wait_for_timeout(500)  # MathJax and the widget manager finish after reveal.js

    def assert_clean(self, what):
        problems = []
        if self.blocked:
            problems.append(f"requests leaving the build: {self.blocked[:5]}")
        if self.failed:
            problems.append(f"failed requests: {self.failed[:5]}")
        if self.errors:
            problems.append(f"console errors: {self.errors[:5]}")
        assert not problems, f"{what}: " + "; ".join(problems)

    def close(self):
        self.context.close()


def _walk_all_slides(dp, name):
    """Visit every slide with Reveal.next(); screenshot the first few.  Returns slides visited."""
    page = dp.page
    total = page.evaluate("Reveal.getTotalSlides()")
    assert total >= 1, f"{name}: reveal.js found no slides"
    page.evaluate("Reveal.slide(0, 0)")
    shots = ARTIFACTS / Path(name).stem.replace(".slides", "")
    shots.mkdir(parents=True, exist_ok=True)
    seen = set()
    steps = total + page.evaluate("document.querySelectorAll('.reveal .slides .fragment').length") + 5
    for k in range(steps):
        idx = page.evaluate("JSON.stringify(Reveal.getIndices())")
        seen.add(idx)
        if k < SCREENSHOT_SLIDES:
            page.wait_for_timeout(150)
            page.screenshot(path=str(shots / f"slide-{k + 1:02d}.png"))
        if page.evaluate("Reveal.isLastSlide()"):
            break
        page.evaluate("Reveal.next()")
    # fragments can add steps, never remove slides: every slide's index was visited
    slide_indices = {s for s in seen}
    assert len(slide_indices) >= total, f"{name}: reached {len(slide_indices)} of {total} slides"
    assert page.evaluate("Reveal.isLastSlide()"), f"{name}: never reached the last slide"
    return total


def _check_players(dp, name):
    """Every static player on the page: step forward changes data-frame, play advances by itself, last jumps."""
    page = dp.page
    players = page.locator(".gpu-viz-player")
    count = players.count()
    for i in range(count):
        player = players.nth(i)
        frames = int(player.get_attribute("data-frames"))
        # go to the player's slide so it is visible and clickable
        page.evaluate("""(el) => { var s = el.closest('section'); var ix = Reveal.getIndices(s);
                                   Reveal.slide(ix.h, ix.v); }""", player.element_handle())
        page.wait_for_timeout(100)
        assert player.get_attribute("data-frame") == "0", f"{name}: player {i} did not start at frame 0"
        if frames < 2:
            continue
        player.locator("button[data-act=next]").click()
        page.wait_for_function("(el) => el.dataset.frame === '1'", arg=player.element_handle(), timeout=5000)
        player.locator("button[data-act=first]").click()
        assert player.get_attribute("data-frame") == "0"
        player.locator("button[data-act=play]").click()   # plays on its own: the frame moves past 1
        page.wait_for_function("(el) => parseInt(el.dataset.frame, 10) >= 2 || "
                               f"el.dataset.frame === '{frames - 1}'", arg=player.element_handle(), timeout=15000)
        player.locator("button[data-act=last]").click()   # stops playing, jumps to the end
        assert player.get_attribute("data-frame") == str(frames - 1)
        # a source pane taller than its cap scrolls so the highlighted line is in view
        hidden = page.evaluate("""(el) => {
            var src = el.querySelector('pre.gpu-viz-source'); if (!src) return false;
            var on = Array.from(src.querySelectorAll('span[data-line]')).filter(s => s.style.fontWeight === 'bold');
            if (!on.length) return false;
            var top = on[0].offsetTop - (on[0].offsetParent === src ? 0 : src.offsetTop);
            return top < src.scrollTop || top > src.scrollTop + src.clientHeight; }""", player.element_handle())
        assert not hidden, f"{name}: player {i}'s highlighted source line is scrolled out of view"
    return count


_TOO_WIDE_JS = """() => {
    var sec = Reveal.getCurrentSlide(); if (!sec) return [];
    var box = sec.getBoundingClientRect(), out = [];
    var items = sec.querySelectorAll('.jp-CodeCell .jp-InputArea-editor pre, .jp-CodeCell .jp-InputArea, div.gpu-viz-player');
    items.forEach(function (el) {
        if (el.closest('aside.notes') || el.offsetParent === null) return;
        var r = el.getBoundingClientRect(), what = el.className + ': ' + el.textContent.trim().slice(0, 60);
        if (el.scrollWidth > el.clientWidth + 1)
            out.push(what + ' (scrollWidth ' + el.scrollWidth + ' > clientWidth ' + el.clientWidth + ')');
        else if (r.right > box.right + 1 || el.scrollWidth > sec.clientWidth)
            out.push(what + ' (wider than its slide)');
    });
    return out; }"""


def _too_wide(dp):
    """Every slide: code cell inputs and players that are wider than the slide (their right part would
    be cut off by the section's overflow-x: hidden, or need a scrollbar).  Returns descriptions."""
    page = dp.page
    page.evaluate("Reveal.slide(0, 0)")
    problems = []
    for _ in range(page.evaluate("Reveal.getTotalSlides()") + 5):
        page.wait_for_timeout(50)
        idx = page.evaluate("JSON.stringify(Reveal.getIndices())")
        problems += [f"slide {idx}: {p}" for p in page.evaluate(_TOO_WIDE_JS)]
        if page.evaluate("Reveal.isLastSlide()"):
            break
        page.evaluate("Reveal.next()")
    return problems


# ----------------------------------------------------------------------------- self-test deck
@pytest.fixture
def selftest_page(browser, selftest_slides):
    base, server = _serve(selftest_slides.out_dir)
    dp = DeckPage(browser, base)
    yield dp
    dp.close()
    server.shutdown()


def test_selftest_deck_in_chromium(selftest_page):
    dp = selftest_page
    dp.open_deck("99_slides_selftest.slides.html")
    page = dp.page
    assert page.evaluate("Reveal.hasPlugin('notes')"), "the notes plugin (speaker view on 's') is not loaded"
    assert page.locator("aside.notes").count() == 2
    assert page.locator(".slide-number").count() == 1
    total = _walk_all_slides(dp, "99_slides_selftest.slides.html")
    assert total >= 5
    # math was typeset by the vendored MathJax
    page.wait_for_function("document.querySelectorAll('.MathJax_CHTML, mjx-container, .mjx-chtml').length > 0",
                           timeout=15000)
    # the plain IntSlider was rendered from the embedded widget state by the vendored html-manager
    page.wait_for_selector(".widget-slider, .jupyter-widget-slider, .widget-hslider", state="attached",
                           timeout=15000)
    assert _check_players(dp, "99_slides_selftest") == 1
    dp.assert_clean("99_slides_selftest deck")


def test_selftest_code_inputs_and_players_fit_their_slide(selftest_page):
    """Bug class: content wider than its slide is cut off at the right edge.  The self-test deck has a
    code cell with a long comment line and a long unbreakable identifier: both must wrap."""
    dp = selftest_page
    dp.open_deck("99_slides_selftest.slides.html")
    assert dp.page.locator(".jp-CodeCell .jp-InputArea-editor pre", has_text="LONG_NAME").count() == 1
    assert _too_wide(dp) == []


def test_selftest_speaker_view_opens(selftest_page):
    dp = selftest_page
    dp.open_deck("99_slides_selftest.slides.html")
    with dp.context.expect_page(timeout=10000) as popup:
        dp.page.keyboard.press("s")
    notes_window = popup.value
    notes_window.wait_for_load_state()
    notes_window.wait_for_selector(".speaker-controls-notes, #speaker-controls, .speaker-controls",
                                   state="attached", timeout=10000)
    notes_window.close()


def test_index_page_links_every_deck(browser, selftest_slides):
    base, server = _serve(selftest_slides.out_dir)
    dp = DeckPage(browser, base)
    try:
        dp.page.goto(f"{base}/index.html")
        hrefs = dp.page.eval_on_selector_all("#decks a", "els => els.map(e => e.getAttribute('href'))")
        assert hrefs == [d.html.name for d in selftest_slides.decks]
        dp.page.click("#decks a")
        dp.page.wait_for_function("window.gpuVizReady === true", timeout=30000)
        dp.assert_clean("index -> deck")
    finally:
        dp.close()
        server.shutdown()


# ----------------------------------------------------------------------------- course decks
@pytest.mark.slow
@pytest.mark.parametrize("name", COURSE_NOTEBOOKS)
def test_course_deck_in_chromium(browser, built_slides, name):
    if os.environ.get("GPU_VIZ_SLIDES_BUILD") and name not in {d.name for d in built_slides.decks}:
        # a build made elsewhere of some notebooks only (scripts/gpu-check GPU_CHECK_NOTEBOOKS):
        # its manifest names what it built; a deck it lists but did not render still fails
        pytest.skip(f"{name} is not part of the build in GPU_VIZ_SLIDES_BUILD")
    deck = built_slides.deck(name)
    assert deck.html is not None, f"{name}: no deck was rendered: {deck.error}"
    base, server = _serve(built_slides.out_dir)
    dp = DeckPage(browser, base)
    try:
        dp.open_deck(deck.html.name)
        assert dp.page.evaluate("Reveal.hasPlugin('notes')")
        assert dp.page.locator("aside.notes").count() >= 1, f"{name}: no speaker notes"
        _walk_all_slides(dp, deck.html.name)
        _check_players(dp, name)
        assert _too_wide(dp) == [], f"{name}: content wider than its slide"
        dp.assert_clean(f"{name} deck")
    finally:
        dp.close()
        server.shutdown()


def test_checks_catch_a_remote_request_and_a_script_error(browser, tmp_path):
    """The harness itself: a page that loads from a CDN or throws must not pass assert_clean."""
    (tmp_path / "bad.html").write_text(
        '<html><body><script src="https://cdn.example.org/x.js"></script>'
        '<script>window.gpuVizReady = true; throw new Error("boom");</script></body></html>')
    base, server = _serve(tmp_path)
    dp = DeckPage(browser, base)
    try:
        dp.page.goto(f"{base}/bad.html")
        dp.page.wait_for_timeout(300)
        with pytest.raises(AssertionError) as info:
            dp.assert_clean("bad page")
        assert "cdn.example.org" in str(info.value) and "boom" in str(info.value)
    finally:
        dp.close()
        server.shutdown()


def test_selftest_deck_opens_from_a_file_url(browser, selftest_slides):
    """Double-clicking a deck (file://, no server) works too: math, widgets, players, no errors."""
    dp = DeckPage(browser, "file://" + str(selftest_slides.out_dir.resolve()))
    try:
        dp.open_deck("99_slides_selftest.slides.html")
        _walk_all_slides(dp, "file-url-99_slides_selftest")
        dp.page.wait_for_selector(".widget-slider", state="attached", timeout=15000)
        assert _check_players(dp, "99_slides_selftest (file://)") == 1
        dp.assert_clean("99_slides_selftest deck over file://")
    finally:
        dp.close()


def test_only_one_place_starts_playwright():
    """Bug class: a test module starting its own Playwright while the session browser is alive
    fails ("Sync API inside the asyncio loop") -- but only when both run in one session.  Every
    browser test must take the shared ``browser`` fixture of tests/conftest_browser.py."""
    tests = Path(__file__).resolve().parent
    pattern = re.compile("|".join(("sync" + "_playwright", "playwright" + r"\.sync_api", r"\.chromium\.launch\(")))
    offenders = sorted(str(p.relative_to(tests)) for p in tests.rglob("*.py")
                       if p.name != "conftest_browser.py" and pattern.search(p.read_text()))
    assert offenders == [], f"start no browser of your own, use the `browser` fixture: {offenders}"
