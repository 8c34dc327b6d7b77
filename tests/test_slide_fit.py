"""Every slide of every deck fits a projector: at 1280x720 and 1920x1080 in Chromium, no element past
the slide's edge, no slide taller than the screen, no text under 18 CSS px (SVG figures included),
no bitmap, no overlapping figure labels, no control that needs a kernel, speaker notes everywhere;
a title slide first and a takeaways slide last; -> and Space walk every slide in order; the PDFs.

The decks are the CPU build of tests/conftest_slides.py, or, with ``GPU_VIZ_SLIDES_BUILD=<dir>``,
a build made on the GPU machine (scripts/gpu-check) and checked here.  Failures name the deck, the
slide (h/v index) and the element.
"""
import os

import pytest

from conftest_slides import COURSE_NOTEBOOKS
from slide_fit import problems, slides
from test_browser import DeckPage, _serve

from gpu_viz import slides as gslides

pytestmark = pytest.mark.browser

VIEWPORTS = {"720p": (1280, 720), "1080p": (1920, 1080)}


def _deck_page(browser, built, name, viewport):
    if os.environ.get("GPU_VIZ_SLIDES_BUILD") and name not in {d.name for d in built.decks}:
        pytest.skip(f"{name} is not part of the build in GPU_VIZ_SLIDES_BUILD")
    deck = built.deck(name)
    assert deck.html is not None, f"{name}: no deck was rendered: {deck.error}"
    base, server = _serve(built.out_dir)
    dp = DeckPage(browser, base, viewport=viewport)
    dp.open_deck(deck.html.name)
    return dp, server


# ----------------------------------------------------------------------------- the checker itself
BROKEN_PAGE = """<html><head><style>
  body { margin: 0; } section { position: relative; width: 1280px; height: 720px; overflow: hidden;
                                font-size: 24px; }
</style></head><body><div class="slides"><section id="s">
  <h2>A title that fits</h2>
  <p style="font-size: 12px">tiny words</p>
  <pre style="width: 300px; overflow-x: auto; white-space: pre">a line far too long for its three hundred pixel box</pre>
  <div style="position: absolute; left: 1200px; top: 100px; width: 200px">runs off the right</div>
  <svg width="400" height="100" viewBox="0 0 800 200" style="width: 400px">
    <text x="10" y="50" font-size="24">label shrunk by half</text>
    <text x="10" y="150" font-size="40">first</text><text x="30" y="150" font-size="40">second</text>
  </svg>
  <img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==" style="width: 40px; height: 40px">
  <input type="range">
  <pre style="width: 150px; white-space: pre-wrap; font: 20px monospace">at 2026-12-02</pre>
  <table style="width: 420px; font: 20px monospace"><caption style="text-align: left">recorded on a GPU, a day (not live)</caption><tr><td>1</td></tr></table>
  <svg width="600" height="120"><g><text x="10" y="40" font-size="24">Data: recorded on a GPU, a day (not</text>
    <text x="10" y="80" font-size="24">live)</text></g></svg>
  <table style="font: 20px sans-serif"><tr><td>x</td></tr></table><p style="font-size: 28px">Data: a caption too big</p>
  <p style="font-size: 24px">total = nan</p>
  <div style="height: 900px">tall</div>
</section></div>
<script>window.Reveal = { getScale: () => 1, getCurrentSlide: () => document.getElementById('s') };</script>
</body></html>"""


def test_fit_checker_names_every_kind_of_defect(browser, tmp_path):
    """The check can fail: a page built to break each rule yields one finding per rule, naming the
    element; the same page with the defects removed yields none but the missing notes."""
    (tmp_path / "broken.html").write_text(BROKEN_PAGE)
    base, server = _serve(tmp_path)
    dp = DeckPage(browser, base)
    try:
        dp.page.goto(f"{base}/broken.html")
        found = problems(dp.page)
        text = "\n".join(found)
        assert "taller than the screen" in text
        assert 'text 12.0 px: p "tiny words"' in text
        assert "text 12.0 px: text \"label shrunk by half\"" in text   # 24 user units at scale 1/2
        assert "content cut or scrolling" in text and "a line far too long" in text
        assert "past the edge" in text and "runs off the right" in text
        assert 'labels overlap: "first" / "second"' in text
        assert "raster image" in text
        assert "control needs a kernel" in text and "input" in text
        assert "no speaker notes" in text
        assert "caption larger than its table (28 px vs 20 px)" in text and "a Data: a caption" not in text
        assert "a value reads nan" in text
        assert 'word broken across lines: "2026-12-02" in pre' in text   # at a hyphen, not a space
        assert 'lone word on the last line: "live)" in caption' in text
        assert 'lone word on the last line: "live)" in svg text "Data: recorded on a GPU, a day' in text
        assert not any("A title that fits" in p for p in found)
        dp.page.set_content("""<section id="s" style="width:1280px;height:720px;font-size:24px">
            <h2>Fine</h2><p>big enough</p><aside class="notes">say this</aside></section>
            <script>window.Reveal = { getScale: () => 1,
                                      getCurrentSlide: () => document.getElementById('s') };</script>""")
        assert problems(dp.page) == []
        dp.page.set_content("""<section id="s" style="width:1280px;height:720px;font-size:24px">
            <h2>A figure that printed nothing</h2><div class="jp-OutputArea"></div>
            <aside class="notes">say this</aside></section>
            <script>window.Reveal = { getScale: () => 1,
                                      getCurrentSlide: () => document.getElementById('s') };</script>""")
        assert [p.split(":")[0] for p in problems(dp.page)] == ["only a title"], problems(dp.page)
        # a CPU build's dead slide: nothing but what did not run
        dp.page.set_content("""<section id="s" style="width:1280px;height:720px;font-size:24px">
            <h2>Both variants, on the GPU</h2><pre>CPU mode: the kernels were not launched.</pre>
            <aside class="notes">say this</aside></section>
            <script>window.Reveal = { getScale: () => 1,
                                      getCurrentSlide: () => document.getElementById('s') };</script>""")
        assert [p.split(":")[0] for p in problems(dp.page)] == ["says only what did not run"], problems(dp.page)
    finally:
        dp.close()
        server.shutdown()


THEME_PAGE = """<html><head><style id="theme">{theme}</style>
<style>/* reveal.js's own rules the theme must beat */ .reveal pre {{ width: 90%; margin: 20px auto; }}</style>
<style id="greedy" media="not all">/* line breaking as it was before the theme chose it */
  .reveal * {{ text-wrap-style: auto !important; }}</style>
</head><body><div class="reveal"><div class="slides"><section id="s" style="width: 1280px; height: 720px">
  <h2>Printed text and captions</h2>
  <div class="jp-OutputArea-output"><pre id="prose"></pre></div>
  <div class="jp-OutputArea-output"><table style="width: 560px"><caption id="cap"></caption><tr><td>1</td></tr></table></div>
  <div class="jp-RenderedHTMLCommon jp-RenderedHTML jp-OutputArea-output"><pre class="gv-code" id="code"></pre></div>
  <aside class="notes">say this</aside>
</section></div></div>
<script>window.Reveal = {{ getScale: () => 1, getCurrentSlide: () => document.getElementById('s') }};</script>
</body></html>"""


def test_theme_gives_printed_text_the_slide_width_and_wraps_captions_evenly(browser, tmp_path):
    """Bug classes, on the course theme: a <pre> drawn at reveal.js's 90 % wrapped lines that fit the
    slide; a caption or printed paragraph left a lone short word ("live)") on its last line; printed
    code (gpu_viz.slides.code_outputs) wrapped at the slide's edge.  With the theme: a printed block
    spans the slide's width, a row of CODE_COLS characters of code fits and a longer one shows as
    cut, never wrapped; and a caption or printed paragraph that the checker flags with a lone last
    word under greedy line breaking (found by growing it word by word) has none with the theme's."""
    theme = (gslides.TEMPLATES_DIR / gslides.TEMPLATE_NAME / "gpu_viz_theme.css").read_text()
    (tmp_path / "theme.html").write_text(THEME_PAGE.format(theme=theme))
    base, server = _serve(tmp_path)
    dp = DeckPage(browser, base)
    page = dp.page
    try:
        page.goto(f"{base}/theme.html")
        widths = page.evaluate("""() => { const pre = document.getElementById('prose');
            return [pre.getBoundingClientRect().width, pre.parentElement.getBoundingClientRect().width]; }""")
        assert abs(widths[0] - widths[1]) < 1, f"a printed block narrower than the slide: {widths}"
        set_code = "(t) => { document.getElementById('code').textContent = t; }"
        row = "    float c = a + b;" + " " * 20 + "// " + "x" * (gslides.CODE_COLS - 43)
        assert len(row) == gslides.CODE_COLS
        page.evaluate(set_code, row)
        assert page.evaluate("getComputedStyle(document.getElementById('code')).whiteSpace") == "pre"
        assert problems(page) == [], "a row of CODE_COLS characters must fit the slide"
        page.evaluate(set_code, row + " and more words")
        assert any("content cut" in p and "pre.gv-code" in p for p in problems(page)), problems(page)
        page.evaluate(set_code, "x")
        for target in ("cap", "prose"):
            found = None
            for n in range(4, 60):
                text = " ".join(["recorded on NVIDIA H200"] + ["word"] * n + ["(not live)."])
                page.evaluate("([id, t]) => { for (const e of ['cap', 'prose']) "
                              "document.getElementById(e).textContent = e === id ? t : ''; }", [target, text])
                page.evaluate("document.getElementById('greedy').media = 'all'")
                bare = [p for p in problems(page) if "lone word" in p]
                page.evaluate("document.getElementById('greedy').media = 'not all'")
                if bare:
                    found = text
                    break
            assert found, f"{target}: no text left a lone word even without the theme"
            assert [p for p in problems(page) if "lone word" in p] == [], (target, found)
    finally:
        dp.close()
        server.shutdown()


# ----------------------------------------------------------------------------- every course deck
@pytest.mark.slow
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("name", COURSE_NOTEBOOKS)
def test_every_slide_fits(browser, built_slides, name, viewport):
    width, height = VIEWPORTS[viewport]
    dp, server = _deck_page(browser, built_slides, name, {"width": width, "height": height})
    try:
        page = dp.page
        expected_scale = min(width / gslides.SLIDE_WIDTH, height / gslides.SLIDE_HEIGHT)
        assert abs(page.evaluate("Reveal.getScale()") - expected_scale) < 1e-3, \
            f"{name}: the slide is not scaled to the {viewport} screen"
        found = []
        for h, v in slides(page):
            page.evaluate(f"Reveal.slide({h}, {v})")
            page.wait_for_timeout(60)
            found += [f"{name} slide {h}/{v}: {p}" for p in problems(page)]
        assert not found, f"{len(found)} defects at {viewport}:\n" + "\n".join(found)
        dp.assert_clean(f"{name} at {viewport}")
    finally:
        dp.close()
        server.shutdown()


@pytest.mark.slow
def test_navigation_arrows_wear_no_code_box(browser, built_slides):
    """reveal.js marks its live navigation arrows with the class ``highlight``, which code blocks
    carry too: the theme's code box (grey background, accent bar) must stay inside the slides,
    or a grey box with a bar sits behind the arrow and over the slide number."""
    name = COURSE_NOTEBOOKS[0]
    dp, server = _deck_page(browser, built_slides, name, {"width": 1280, "height": 720})
    try:
        page = dp.page
        page.evaluate("Reveal.slide(0, 0)")
        page.wait_for_timeout(100)
        arrows = page.evaluate("""[...document.querySelectorAll('.reveal .controls button')].map(b => {
            const cs = getComputedStyle(b);
            return [b.className, cs.backgroundColor, cs.borderLeftWidth]; })""")
        assert any("highlight" in c for c, *_ in arrows), arrows  # reveal.js marked one: the case under test
        box = [a for a in arrows if a[1] not in ("rgba(0, 0, 0, 0)", "transparent") or a[2] not in ("0px", "")]
        assert not box, f"{name}: navigation arrows styled as code boxes: {box}"
    finally:
        dp.close()
        server.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("name", COURSE_NOTEBOOKS)
def test_title_slide_first_takeaways_last(browser, built_slides, name):
    dp, server = _deck_page(browser, built_slides, name, {"width": 1280, "height": 720})
    try:
        page = dp.page
        page.evaluate("Reveal.slide(0, 0)")
        assert page.evaluate("!!Reveal.getCurrentSlide().querySelector('h1')"), f"{name}: slide 1 has no title (h1)"
        last = slides(page)[-1]
        page.evaluate(f"Reveal.slide({last[0]}, {last[1]})")
        heading = page.evaluate("(Reveal.getCurrentSlide().querySelector('h1, h2, h3') || {}).textContent || ''")
        assert "takeaway" in heading.lower(), f"{name}: the last slide is {heading!r}, not the takeaways"
    finally:
        dp.close()
        server.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("key", ["ArrowRight", "Space"])
@pytest.mark.parametrize("name", COURSE_NOTEBOOKS)
def test_keys_walk_every_slide_in_order(browser, built_slides, name, key):
    """-> and Space visit every slide, vertical ones included, in the order of the deck."""
    dp, server = _deck_page(browser, built_slides, name, {"width": 1280, "height": 720})
    try:
        page = dp.page
        order = [tuple(s) for s in slides(page)]
        page.evaluate("Reveal.slide(0, 0)")
        seen = []
        for _ in range(len(order) + page.evaluate("document.querySelectorAll('.reveal .fragment').length") + 2):
            i = page.evaluate("(() => { const i = Reveal.getIndices(); return [i.h, i.v || 0]; })()")
            if not seen or seen[-1] != tuple(i):
                seen.append(tuple(i))
            if tuple(i) == order[-1] and page.evaluate("Reveal.isLastSlide()"):
                break
            page.keyboard.press(key)
            page.wait_for_timeout(30)
        assert seen == order, f"{name}: {key} visited {seen}, the deck is {order}"
    finally:
        dp.close()
        server.shutdown()


def test_index_page_says_what_the_keys_do(built_slides):
    text = (built_slides.out_dir / "index.html").read_text()
    assert "Space" in text and "→" in text and "every slide" in text, "the index does not say what the keys do"


# ----------------------------------------------------------------------------- PDFs
@pytest.mark.slow
def test_pdf_of_every_deck(browser, built_slides, tmp_path):
    """Print mode through Chromium: one page per slide, each page the slide's 16:9 size (a slide
    that overflowed its page would add pages), for every deck built; the players print at the
    frame each chose (pdf.show_print_frames), and no page's content touches the page's left edge."""
    from gpu_viz import pdf

    pypdf = pytest.importorskip("pypdf")
    made = pdf.render(built_slides.out_dir, browser=browser, out_dir=tmp_path)
    decks = [d for d in built_slides.decks if d.html is not None]
    assert sorted(p.name for p in made) == sorted(d.html.name.replace(".slides.html", ".pdf") for d in decks)
    base, server = _serve(built_slides.out_dir)
    dp = DeckPage(browser, base, viewport={"width": 1280, "height": 720})
    players = 0
    try:
        for d, path in zip(sorted(decks, key=lambda d: d.html.name), sorted(made)):
            dp.open_deck(d.html.name)
            shown = pdf.show_print_frames(dp.page)
            assert all(f == want for f, _n, want in shown), f"{d.html.name}: players not at their print frame: {shown}"
            players += len(shown)
            total = dp.page.evaluate("Reveal.getTotalSlides()")
            reader = pypdf.PdfReader(str(path))
            assert len(reader.pages) == total, f"{path.name}: {len(reader.pages)} pages for {total} slides"
            for k, page in enumerate(reader.pages):
                w, h = float(page.mediabox.width), float(page.mediabox.height)
                assert abs(w / h - 16 / 9) < 0.01, f"{path.name} page {k + 1}: {w}x{h} is not 16:9"
        assert players or not any(n.startswith(("03_", "09_")) for n in (d.html.name for d in decks)), \
            "no static player found in the decks that have players"
    finally:
        dp.close()
        server.shutdown()


def test_print_mode_keeps_the_margin_and_prints_the_frame_that_teaches(browser, built_slides):
    """Bug classes of the PDFs: every page's content sat flush against its left edge (reveal.js's
    print mode wraps a slide in a .pdf-page the theme's padding rule missed), and 09's player printed
    its last frame, every SM empty.  In print mode no page's text starts within 30 px of its left
    edge, and 09's player shows the frame it chose, one with blocks running."""
    from gpu_viz import pdf

    deck = built_slides.deck("09_kernel_scheduling")
    base, server = _serve(built_slides.out_dir)
    dp = DeckPage(browser, base, viewport={"width": 1280, "height": 720})
    try:
        dp.page.goto(f"{base}/{deck.html.name}?print-pdf", wait_until="load")
        dp.page.wait_for_function("window.gpuVizReady === true", timeout=60000)
        dp.page.wait_for_timeout(500)
        lefts = dp.page.evaluate("""() => Array.from(document.querySelectorAll('.pdf-page')).map(pg => {
            const box = pg.getBoundingClientRect(); let min = Infinity;
            const tw = document.createTreeWalker(pg, NodeFilter.SHOW_TEXT);
            for (let n = tw.nextNode(); n; n = tw.nextNode()) {
              const el = n.parentElement;
              if (!n.textContent.trim() || !el || el.closest('aside.notes, script, style, .slide-number')) continue;
              const r = document.createRange(); r.selectNodeContents(n);
              for (const q of r.getClientRects()) if (q.width > 0) min = Math.min(min, q.left - box.left);
            }
            return min; })""")
        assert lefts and min(lefts) >= 30, f"text within {min(lefts):.0f} px of a page's left edge: {lefts}"
        shown = pdf.show_print_frames(dp.page)
        assert shown and all(f == want for f, _n, want in shown), shown
        caption = dp.page.locator(".gpu-viz-player .gpu-viz-caption").first.inner_text()
        assert "running" in caption and "all 2,048 blocks done" not in caption, caption
    finally:
        dp.close()
        server.shutdown()
