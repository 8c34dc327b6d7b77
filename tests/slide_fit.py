"""What "fits the projector" means, as one JavaScript check run on a reveal.js slide in Chromium.

``problems(page)`` returns, for the slide reveal.js shows now, one line per defect:

- ``past the edge``: an element (the outermost one) drawn outside the 1280x720 slide box, or a box
  whose content is cut or scrolls (``scrollWidth > clientWidth`` with overflow hidden/auto);
- ``taller than the screen``: the slide's content is taller than the slide;
- ``text N px``: visible text under ``MIN_TEXT_PX`` CSS px at the slide's size -- HTML text by its
  computed font size, SVG text by its font size times the SVG's scale on the screen (a figure shrunk
  to fit shrinks its labels too);
- ``raster image``: an <img>/<canvas> on a slide (the text inside a bitmap cannot be checked:
  figures are drawn as SVG);
- ``labels overlap``: two <text> boxes of one SVG figure overlap;
- ``control needs a kernel``: an input/slider/button outside a gpu_viz player (a deck has no kernel,
  so it would do nothing);
- ``no speaker notes``;
- ``word broken``: a line of code or printed text (a <pre>) wraps anywhere but at a space: inside
  a word ("%%warpi" / "d;") or after a hyphen inside a date or number ("2026-" / "12-02");
- ``lone word on the last line``: a wrapped caption, paragraph, list item or printed line, or a
  multi-row SVG label, ends on one short word ("(not" / "live)");
- ``only a title``: the slide shows its heading and nothing else (e.g. a figure whose cell printed
  nothing: a kernel with a headless matplotlib backend draws no output);
- ``says only what did not run``: every text block is a "not run / SKIPPED" line and nothing else
  is shown (a CPU build's dead slide: show a recorded figure with its label, or the model's run);
- ``a value reads nan``: a number shown as nan ("total = nan");
- ``caption larger than its table``: the paragraph right after a table in a bigger font than it.

Used by tests/test_slide_fit.py on every slide of every deck; its own behaviour is tested there
on a page built to break each rule.
"""
from gpu_viz.slides import MIN_TEXT_PX

CHECK_JS = r"""(minPx) => {
  const MAX_LONE = 6;   // characters: a last line of one word this short reads as a leftover
  const MAX_PRINTED_LINES = 4;   // printed lines a slide may show as raw text
  const MAX_PROSE_LINES = 5;     // lines of one output paragraph
  const scale = Reveal.getScale ? Reveal.getScale() : 1;
  const sec = Reveal.getCurrentSlide();
  const out = [];
  if (!sec) return ['no current slide'];
  const box = sec.getBoundingClientRect();
  const name = (el) => {
    let s = el.tagName.toLowerCase();
    const cls = (typeof el.className === 'string') ? el.className.trim().split(/\s+/).filter(Boolean) : [];
    if (cls.length) s += '.' + cls.slice(0, 2).join('.');
    const t = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60);
    return s + (t ? ' "' + t + '"' : '');
  };
  const skip = (el) => el.closest('aside.notes, script, style, .MJX_Assistive_MathML, .MathJax_Preview, .MathJax_Hidden');
  const shown = (el) => {
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden') return false;
    const r = el.getBoundingClientRect();
    return r.width > 1 && r.height > 1;
  };
  // 1. the slide's own height
  const over = sec.scrollHeight - sec.clientHeight;
  if (over > 2) out.push('taller than the screen by ' + Math.round(over / scale) + ' px');
  // 2. elements past the slide's edge, or cut inside their own box (outermost only)
  const reported = new Set();
  const tol = 1.5;
  for (const el of sec.querySelectorAll('*')) {
    if (skip(el) || !shown(el)) continue;
    // inside an <svg> only the <svg> box counts: it clips its content (a log-axis bar's path to
    // -infinity has a huge box that is never drawn), and figure text is checked below
    if (el instanceof SVGElement && !(el instanceof SVGSVGElement)) continue;
    let anc = el.parentElement, dup = false;
    while (anc && anc !== sec) { if (reported.has(anc)) { dup = true; break; } anc = anc.parentElement; }
    if (dup) continue;
    const r = el.getBoundingClientRect();
    if (r.right > box.right + tol || r.bottom > box.bottom + tol || r.left < box.left - tol || r.top < box.top - tol) {
      const by = Math.max(r.right - box.right, r.bottom - box.bottom, box.left - r.left, box.top - r.top) / scale;
      out.push('past the edge by ' + Math.round(by) + ' px: ' + name(el));
      reported.add(el);
      continue;
    }
    const cs = getComputedStyle(el);
    const cutX = cs.overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 2;
    const cutY = cs.overflowY !== 'visible' && el.scrollHeight > el.clientHeight + 2 && el !== sec;
    if (cutX || cutY) {
      out.push('content cut or scrolling (' + (cutX ? 'width ' + el.scrollWidth + ' > ' + el.clientWidth : '')
               + (cutY ? ' height ' + el.scrollHeight + ' > ' + el.clientHeight : '') + '): ' + name(el));
      reported.add(el);
    }
  }
  // 3. text size, HTML and SVG
  const walker = document.createTreeWalker(sec, NodeFilter.SHOW_TEXT);
  const small = new Map();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.nodeValue.trim()) continue;
    const el = n.parentElement;
    if (!el || skip(el) || !shown(el)) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    if (el instanceof SVGElement) {
      const m = el.getScreenCTM();
      if (m) px = px * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)) / scale;
    }
    if (px < minPx - 0.05 && !small.has(el)) small.set(el, px);
  }
  for (const [el, px] of small) out.push('text ' + px.toFixed(1) + ' px: ' + name(el));
  // 4. bitmaps
  for (const el of sec.querySelectorAll('img, canvas')) {
    if (skip(el) || !shown(el)) continue;
    out.push('raster image (its text cannot be checked; draw it as SVG): ' + name(el)
             + ' ' + (el.getAttribute('src') || '').slice(0, 30));
  }
  // 5. overlapping labels inside one SVG figure
  for (const svg of sec.querySelectorAll('svg')) {
    if (skip(svg) || !shown(svg) || svg.parentElement.closest('svg')) continue;
    const boxes = [];
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim() || !shown(t)) continue;
      boxes.push([t, t.getBoundingClientRect()]);
    }
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i][1], b = boxes[j][1];
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 2 && h > 2 && w * h > 0.15 * Math.min(a.width * a.height, b.width * b.height))
        out.push('labels overlap: "' + boxes[i][0].textContent.trim().slice(0, 30) + '" / "'
                 + boxes[j][0].textContent.trim().slice(0, 30) + '"');
    }
  }
  // 6. controls that need a kernel
  for (const el of sec.querySelectorAll('input, select, textarea, button, .widget-slider, .jupyter-widgets.widget-inline-hbox')) {
    if (skip(el) || el.closest('.gpu-viz-player') || !shown(el)) continue;
    out.push('control needs a kernel (inert in a deck): ' + name(el));
  }
  // 7. speaker notes
  const notes = sec.querySelector('aside.notes');
  if (!notes || !notes.textContent.trim()) out.push('no speaker notes');
  // 8. a <pre> line wrapped anywhere but at a space: inside a word ("%%warpi" / "d;"), or after a
  //    hyphen inside a date or a number ("2026-" / "12-02", "2e-" / "05")
  const broken = new Set();
  for (const pre of sec.querySelectorAll('pre')) {
    if (skip(pre) || !shown(pre) || broken.size >= 3) continue;
    const tw = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let n = tw.nextNode(); n; n = tw.nextNode()) {
      const t = n.textContent, range = document.createRange();
      let prevTop = null;   // the line of the last character drawn, when it was not a space
      for (let i = 0; i < t.length; i++) {
        if (/\s/.test(t[i])) { prevTop = null; continue; }
        range.setStart(n, i); range.setEnd(n, i + 1);
        const rects = range.getClientRects();
        if (!rects.length) { prevTop = null; continue; }
        const top = rects[0].top;
        if (prevTop !== null && top > prevTop + 2) {
          const s0 = t.lastIndexOf(' ', i), e0 = t.indexOf(' ', i);
          broken.add(t.slice(s0 + 1, e0 < 0 ? t.length : e0).trim().slice(0, 40) + '" in ' + name(pre).split(' ')[0]);
          break;
        }
        prevTop = top;
      }
      if (broken.size >= 3) break;
    }
  }
  for (const w of broken) out.push('word broken across lines: "' + w);
  // 9. a heading and nothing else: visible text outside the headings, or a figure, or a table
  const heading = 'h1, h2, h3, h4, h5, h6';
  let body = false;
  const texts = document.createTreeWalker(sec, NodeFilter.SHOW_TEXT);
  for (let n = texts.nextNode(); n && !body; n = texts.nextNode()) {
    const el = n.parentElement;
    if (!el || skip(el) || el.closest(heading) || !n.textContent.trim()) continue;
    body = shown(el);
  }
  for (const el of sec.querySelectorAll('svg, img, canvas, table, .gpu-viz-player')) {
    if (!body && !skip(el) && !el.closest(heading) && shown(el)) body = true;
  }
  if (!body && sec.querySelector(heading)) {
    out.push('only a title: ' + name(sec.querySelector(heading)) + ' and nothing below it');
  }
  // 10. a lone short word on the last line of a wrapped caption, paragraph or printed line
  //     ("(not" / "live)"): HTML text by its drawn lines, an SVG label by its rows (one <text> each)
  const lone = [];
  const MATH = '.MathJax, .MathJax_CHTML, .MathJax_Display, .mjx-chtml, mjx-container';
  const lastLine = (el, pre) => {
    const paras = [[]];
    const tw = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = tw.nextNode(); n; n = tw.nextNode()) {
      if (!n.parentElement || skip(n.parentElement) || n.parentElement.closest(MATH)) continue;
      const t = n.textContent, range = document.createRange();
      for (let i = 0; i < t.length; i++) {
        if (pre && t[i] === '\n') { paras.push([]); continue; }
        range.setStart(n, i); range.setEnd(n, i + 1);
        const rects = range.getClientRects();
        if (rects.length) paras[paras.length - 1].push([t[i], rects[0]]);
      }
    }
    const found = [];
    for (const p of paras) {
      // a new line starts where the text goes back to the left, lower down (inline code or a
      // superscript on the same line only shifts the top)
      const lines = [];
      let prev = null;
      for (const [ch, r] of p) {
        if (prev === null || (r.left < prev.left - 1 && r.top > prev.top + 2)) lines.push('');
        lines[lines.length - 1] += ch;
        prev = r;
      }
      if (lines.length < 2) continue;
      const last = lines[lines.length - 1].trim();
      if (last && !/\s/.test(last) && last.length <= MAX_LONE) found.push(last);
    }
    return found;
  };
  for (const el of sec.querySelectorAll('caption, figcaption, .gv-provenance, p, li, pre')) {
    if (skip(el) || !shown(el) || lone.length >= 3 || el.closest('.gpu-viz-player')) continue;
    const pre = el.tagName === 'PRE';
    // text blocks only; math is laid out in boxes of its own, not lines of text
    if (!pre && el.querySelector('p, li, ul, ol, div, table, pre, svg, ' + MATH)) continue;
    for (const w of lastLine(el, pre)) lone.push('"' + w + '" in ' + name(el).split(' ')[0]);
  }
  for (const svg of sec.querySelectorAll('svg')) {
    if (skip(svg) || !shown(svg) || svg.parentElement.closest('svg')) continue;
    for (const g of svg.querySelectorAll('g')) {
      const rows = [...g.children].filter(c => c.tagName.toLowerCase() === 'text' && c.textContent.trim());
      if (rows.length < 2) continue;
      const last = rows[rows.length - 1], prev = rows[rows.length - 2];
      const w = last.textContent.trim();
      if (!/\s/.test(w) && w.length <= MAX_LONE
          && last.getBoundingClientRect().width < prev.getBoundingClientRect().width / 3)
        lone.push('"' + w + '" in svg text "' + prev.textContent.trim().slice(0, 30) + '"');
    }
  }
  for (const w of lone) out.push('lone word on the last line: ' + w);
  // 11. a slide that says only what did not run (a CPU build's dead slide): every text block
  //     outside the headings is a "not run / not launched / SKIPPED" line, and there is no figure,
  //     table or player to look at
  const NOT_RUN = /\b(not (run|launched|measured|timed|attempted)|NOT (run|launched|measured|timed|attempted)|SKIPPED|(was|were) NOT|needs a GPU|nothing (was|is) (timed|measured|run|launched))\b/;
  // the slide's outputs when it has any (a status line under an introduction is still a dead
  // output), else its text
  const outs = [...sec.querySelectorAll('.jp-OutputArea-output')].filter(el => !skip(el) && shown(el));
  const blocks = (outs.length ? outs : [...sec.querySelectorAll('p, li, pre, td, caption')]).filter(
      el => !skip(el) && shown(el) && !el.closest(heading) && !el.closest('.gpu-viz-player')
            && (outs.length || !el.querySelector('p, li, pre')) && el.textContent.trim());
  const visual = [...sec.querySelectorAll('svg, img, canvas, table, .gpu-viz-player')].some(
      el => !skip(el) && shown(el) && !el.closest(heading));
  // a block is dead when each of its lines (or sentences) says what did not run
  // (a provenance "Data: ... nothing was measured" is a label, not a line of content either way)
  const dead = (el) => {
    const lines = el.innerText.split(/\n|(?<=\.)\s+(?=[A-Z])/).map(t => t.replace(/\b[Dd]ata:.*$/, '').trim())
                              .filter(Boolean);
    // a line that quotes a recorded run ("recorded on ...", "30 of 30 passed") says something
    return lines.length > 0 && lines.every(t => NOT_RUN.test(t) && !/\brecorded on\b|\b\d+ of \d+\b/.test(t));
  };
  const title = sec.querySelector('h1');   // the title slide's banner says the mode: that is its job
  if (blocks.length && !visual && !title && blocks.every(dead)) {
    out.push('says only what did not run: ' + name(blocks[0]));
  }
  // 12. a value that reads nan ("total = nan"): a computation shown with nothing to show
  const nanText = document.createTreeWalker(sec, NodeFilter.SHOW_TEXT);
  for (let n = nanText.nextNode(); n; n = nanText.nextNode()) {
    const el = n.parentElement;
    if (!el || skip(el) || !shown(el)) continue;
    // a printed float: "= nan", ": nan", a lone "nan" (Python's); "NaN" in prose is a word
    const m = n.textContent.match(/(^|[\s=:(,])nan(?=[\s,;).]|$)/);
    if (m) { out.push('a value reads nan: ' + name(el)); break; }
  }
  // 13. a caption larger than the table it captions: the paragraph right after a table, in the
  //     same output, drawn in a bigger font than the table's cells
  for (const t of sec.querySelectorAll('table')) {
    if (skip(t) || !shown(t)) continue;
    const next = t.nextElementSibling;
    if (!next || next.tagName !== 'P' || !shown(next)) continue;
    const cell = t.querySelector('td, th') || t;
    const ft = parseFloat(getComputedStyle(cell).fontSize), fp = parseFloat(getComputedStyle(next).fontSize);
    if (fp > ft + 0.5) out.push('caption larger than its table (' + Math.round(fp) + ' px vs ' + Math.round(ft)
                                + ' px): ' + name(next));
  }
  // 14. a wall of raw output: printed text (not code, not a player's source) more than
  //     MAX_PRINTED_LINES lines tall on the slide -- a table or a figure says it better
  //     (code shown as code -- a listing, a highlighted block -- is the point of its slide; the
  //     title slide's banner says the mode), and an output paragraph of more than MAX_PROSE_LINES
  //     lines: a claim said as a wall of prose
  if (!sec.querySelector('h1')) {
    for (const el of sec.querySelectorAll('.jp-OutputArea-output pre, .jp-OutputArea-output p')) {
      if (skip(el) || !shown(el) || el.closest('.gpu-viz-player, .highlight') || el.classList.contains('gv-code')) continue;
      const prose = el.tagName === 'P';
      const lh = parseFloat(getComputedStyle(el).lineHeight) || 24;
      const lines = Math.round((el.getBoundingClientRect().height / scale - (prose ? 0 : 8)) / lh);
      if (lines > (prose ? MAX_PROSE_LINES : MAX_PRINTED_LINES))
        out.push('a wall of ' + (prose ? 'prose' : 'raw output') + ' (' + lines + ' lines): ' + name(el));
    }
  }
  return out;
}"""


def slides(page):
    """Every slide's (h, v) index, in presentation order."""
    return page.evaluate("""() => Reveal.getSlides().map(s => { const i = Reveal.getIndices(s);
                                                               return [i.h, i.v || 0]; })""")


def problems(page, min_px: float = MIN_TEXT_PX):
    """The defects of the slide shown now (list of str, empty when it fits)."""
    return page.evaluate(CHECK_JS, min_px)
