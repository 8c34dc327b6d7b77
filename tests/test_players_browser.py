"""Every animated lesson's static player inside a reveal.js page at 1280x720, in headless Chromium,
offline (every request that leaves the page's folder is blocked and fails the test).

Per player: it fits its slide below the title (at most 1200 x 560 CSS px with its controls), the
source pane is not clipped and the browser wraps none of its lines (its rows are the ones
``source_rows`` wrote), the drawing keeps its viewBox's aspect ratio within 1%, every visible text is at least 18 CSS px (SVG text included, measured
as drawn), step and play change the drawing (not only the counter), and after a click on a
player's button the deck's keys (→, Space, ←) still walk the deck.  Screenshots go to
test-artifacts/players/ (gitignored).

The deck page is a plain reveal.js 4 page (the vendored copy gpu_viz.slides uses, width 1280,
height 720, the course theme's CSS) with one player per slide, in a box as wide as a deck's output
area: the same static player HTML a built deck embeds, under the same style rules.
"""
import functools
import html
import http.server
import threading
from pathlib import Path

import pytest

from conftest_browser import in_ci
from gpu_viz import slides
from gpu_viz import deck_vendor
from gpu_viz.widgets.player import PLAYER_HEIGHT, PLAYER_WIDTH
from players_cases import CASES, KINDS

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "players"
W, H = 1280, 720
#: The width of a code cell's output in the course's decks at 1280 px (nbconvert's output area,
#: measured on the course's deck build): a player must keep its source pane beside the drawing in it.
DECK_OUTPUT_WIDTH = 1178


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    """A reveal.js page with every case's player on its own slide, served on 127.0.0.1."""
    out = tmp_path_factory.mktemp("players_deck")
    try:
        deck_vendor.vendor(out / "vendor")
    except slides.SlidesError as exc:
        if in_ci():
            pytest.fail(str(exc))
        pytest.skip(f"reveal.js is not vendored here: {exc}")
    # the course decks' theme, so that its rules for code, outputs and players apply here too
    theme_css = slides.TEMPLATES_DIR / slides.TEMPLATE_NAME / "gpu_viz_theme.css"
    theme = theme_css.read_text() if theme_css.is_file() else ""
    sections, names = [], []
    for name in CASES:
        for kind in KINDS:
            anim, _ = CASES[name](kind)
            names.append(f"{name}-{kind}")
            sections.append(f'<section data-case="{name}-{kind}"><h2 style="font-size:32px;margin:0 0 8px">'
                            f'{html.escape(name)} ({kind})</h2><div class="jp-Cell jp-CodeCell">'
                            f'<div class="jp-OutputArea-output" style="width:{DECK_OUTPUT_WIDTH}px">'
                            f'{anim.static_html()}</div></div></section>')
    (out / "index.html").write_text(f"""<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="vendor/reveal.js/dist/reveal.css">
<link rel="stylesheet" href="vendor/reveal.js/dist/theme/white.css"><style>{theme}</style></head>
<body><div class="reveal"><div class="slides">{''.join(sections)}<section><h2>the end</h2></section></div></div>
<script src="vendor/reveal.js/dist/reveal.js"></script>
<script>Reveal.initialize({{width: {W}, height: {H}, margin: 0.03, center: false, hash: false,
  transition: "none"}}).then(function() {{ window.gpuVizReady = true; }});</script></body></html>""")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", names
    server.shutdown()


@pytest.fixture
def page(browser, deck):
    base, _ = deck
    context = browser.new_context(viewport={"width": W, "height": H})
    pg = context.new_page()
    problems = []
    pg.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))

    def route(r):
        if r.request.url.startswith(base + "/") or r.request.url.startswith("data:"):
            r.continue_()
        else:
            problems.append(f"request leaving the page: {r.request.url}")
            r.abort()

    context.route("**/*", route)
    pg.goto(f"{base}/index.html")
    pg.wait_for_function("window.gpuVizReady === true", timeout=30000)
    yield pg, problems
    context.close()


#: Measures the current slide's player, in CSS px of the slide (reveal.js's scale divided out).
_MEASURE = """() => {
  var sec = Reveal.getCurrentSlide(), k = Reveal.getScale();
  var pl = sec.querySelector('.gpu-viz-player'), r = pl.getBoundingClientRect();
  var slide = sec.getBoundingClientRect();
  var src = pl.querySelector('pre.gpu-viz-source');
  var out = {w: r.width / k, h: r.height / k, right: r.right, bottom: r.bottom, vw: innerWidth, vh: innerHeight,
             slideBottom: slide.top + 720 * k, small: [], pane: null};
  if (src) {
    var s = src.getBoundingClientRect(), d = pl.querySelector('.gpu-viz-draw').getBoundingClientRect();
    out.beside = s.top < d.bottom && s.left >= d.right;
    out.pane = {sw: src.scrollWidth, cw: src.clientWidth, sh: src.scrollHeight, ch: src.clientHeight,
                inside: s.left >= r.left - 1 && s.right <= r.right + 1 && s.top >= r.top - 1 && s.bottom <= r.bottom + 1,
                wrapped: []};
    // the browser's line boxes against the rows the pane was written in: more means it wrapped
    src.querySelectorAll('span[data-line]').forEach(function(span) {
      var range = document.createRange(); range.selectNodeContents(span);
      var tops = new Set(Array.from(range.getClientRects()).filter(q => q.width > 0).map(q => Math.round(q.top)));
      if (tops.size > span.textContent.split('\\n').length) out.pane.wrapped.push(span.textContent.slice(0, 40));
    });
  }
  var svg = pl.querySelector('svg.gpu-viz-drawing');
  if (svg) { var b = svg.getBoundingClientRect(); out.aspect = (b.width / b.height) / (svg.viewBox.baseVal.width / svg.viewBox.baseVal.height); }
  var walker = document.createTreeWalker(pl, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    var node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest('script,style,option')) continue;
    var px;
    if (el instanceof SVGElement) {
      var svg = el.ownerSVGElement || el, scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      px = parseFloat(getComputedStyle(el).fontSize) * scale / k;
    } else {
      px = parseFloat(getComputedStyle(el).fontSize);
    }
    if (px < 17.99) out.small.push(node.textContent.trim().slice(0, 30) + ' @ ' + px.toFixed(1) + 'px');
  }
  return out; }"""


def _goto(pg, name):
    pg.evaluate("""(name) => { var s = document.querySelector('section[data-case="' + name + '"]');
                   var ix = Reveal.getIndices(s); Reveal.slide(ix.h, ix.v); }""", name)
    pg.wait_for_timeout(80)


def _drawing(pg):
    return pg.evaluate("() => Reveal.getCurrentSlide().querySelector('.gpu-viz-draw').innerHTML")


def _frame(pg, case=None):
    """The frame the player shows: the current slide's, or case ``case``'s."""
    sel = f'section[data-case="{case}"] .gpu-viz-player' if case else None
    return int(pg.evaluate("(sel) => (sel ? document.querySelector(sel) : Reveal.getCurrentSlide()"
                           ".querySelector('.gpu-viz-player')).dataset.frame", sel))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_player_fits_reads_and_plays(page, name, kind):
    pg, problems = page
    case = f"{name}-{kind}"
    _goto(pg, case)
    player = pg.locator(f'section[data-case="{case}"] .gpu-viz-player')
    n = int(player.get_attribute("data-frames"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    drawings = [_drawing(pg)]
    for k in range(n):
        m = pg.evaluate(_MEASURE)
        assert m["w"] <= PLAYER_WIDTH + 0.5 and m["h"] <= PLAYER_HEIGHT + 0.5, f"{case} frame {k}: {m['w']}x{m['h']}"
        assert m["right"] <= m["vw"] and m["bottom"] <= min(m["vh"], m["slideBottom"]) + 0.5, \
            f"{case} frame {k}: the player runs past the slide ({m})"
        assert not m["small"], f"{case} frame {k}: text under 18 CSS px: {m['small'][:5]}"
        pane = m["pane"]
        assert pane is not None, f"{case}: no source pane"
        assert m["beside"], f"{case}: the source pane wrapped below the drawing in a {DECK_OUTPUT_WIDTH} px output"
        assert pane["sw"] <= pane["cw"] + 1 and pane["sh"] <= pane["ch"] + 1 and pane["inside"], \
            f"{case} frame {k}: source pane clipped ({pane})"
        assert not pane["wrapped"], f"{case} frame {k}: the browser wrapped source lines {pane['wrapped'][:3]}"
        assert abs(m["aspect"] - 1) <= 0.01, f"{case} frame {k}: drawing stretched (aspect x{m['aspect']:.3f})"
        lit = pg.evaluate("() => Array.from(Reveal.getCurrentSlide().querySelectorAll("
                          "'pre.gpu-viz-source span[data-line]')).filter(s => s.style.fontWeight === 'bold').length")
        assert lit <= 1
        if k in (0, n - 1):
            pg.screenshot(path=str(ARTIFACTS / f"{case}-{k + 1:02d}.png"))
        if k < n - 1:
            player.locator("button[data-act=next]").click()
            assert _frame(pg) == k + 1
            drawings.append(_drawing(pg))
            assert drawings[-1] != drawings[-2], f"{case}: step {k} -> {k + 1} did not change the drawing"
    # play from the start: the drawing moves by itself
    player.locator("button[data-act=first]").click()
    start = _drawing(pg)
    player.locator("button[data-act=play]").click()
    pg.wait_for_function(f"() => parseInt(document.querySelector('section[data-case=\"{case}\"] .gpu-viz-player')"
                         ".dataset.frame, 10) >= 2", timeout=15000)
    assert _drawing(pg) != start
    player.locator("button[data-act=play]").click()        # pause
    assert not problems, problems


def test_deck_keys_still_walk_the_deck_after_a_click_in_a_player(page, deck):
    pg, problems = page
    _, names = deck
    case = names[0]
    _goto(pg, case)
    h0 = pg.evaluate("Reveal.getIndices().h")
    player = pg.locator(f'section[data-case="{case}"] .gpu-viz-player')
    player.locator("button[data-act=next]").click()
    assert _frame(pg) == 1
    pg.keyboard.press("ArrowRight")
    pg.wait_for_timeout(100)
    assert pg.evaluate("Reveal.getIndices().h") == h0 + 1, "→ after a click in a player did not move the deck"
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_timeout(100)
    assert pg.evaluate("Reveal.getIndices().h") == h0
    assert _frame(pg, case) == 1, "← moved the deck and must not step the player"
    player.locator("button[data-act=play]").click()         # play, then Space: the deck moves, no re-click
    player.locator("button[data-act=play]").click()
    frame = _frame(pg, case)
    pg.keyboard.press(" ")
    pg.wait_for_timeout(100)
    assert pg.evaluate("Reveal.getIndices().h") == h0 + 1, "Space after a click in a player did not move the deck"
    assert _frame(pg, case) == frame, "Space re-clicked the player's button"
    _goto(pg, case)
    pg.locator(f'section[data-case="{case}"] input[type=range]').fill("2")   # a scrub, then →
    pg.locator(f'section[data-case="{case}"] input[type=range]').dispatch_event("change")
    pg.keyboard.press("ArrowRight")
    pg.wait_for_timeout(100)
    assert pg.evaluate("Reveal.getIndices().h") == h0 + 1, "→ after scrubbing a player did not move the deck"
    assert not problems, problems
