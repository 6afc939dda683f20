"""The workshop's slides work with no network: `scripts/build_slides.py` builds an opening deck and
one deck per agenda block; each opened from disk in headless Chromium with every non-local request
blocked starts reveal.js, renders every slide with content, and no request fails."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from courseware import workshop

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_slides", ROOT / "scripts" / "build_slides.py")
slides = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slides)

sync_api = pytest.importorskip("playwright.sync_api", reason="make handout-test installs playwright")


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    return out, slides.build(out)


def test_a_deck_for_every_block_but_the_breaks(decks):
    out, result = decks
    blocks = [b for b in workshop.agenda() if b.kind != "break"]
    assert len(result["decks"]) == len(blocks)
    assert (out / "index.html").exists()
    for rel in slides.REVEAL_FILES:
        assert (out / "reveal.js" / rel).exists(), rel
    for html_file in out.glob("[0-9][0-9]-*.html"):
        text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html_file.read_text(encoding="utf-8"))
        assert "unpkg.com" not in text and "cdn" not in text.lower(), html_file.name
        assert 'src="reveal.js/dist/reveal.js"' in text


def test_every_slide_renders_from_disk_with_the_network_blocked(decks, browser):
    out, result = decks
    problems = []
    for stem in result["decks"] + ["index"]:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        failed = []

        def route(r, failed=failed):
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                failed.append(f"blocked {r.request.url}")
                r.abort()

        page.route("**/*", route)
        page.on("requestfailed", lambda r, failed=failed: failed.append(f"failed {r.url}"))
        page.on("console", lambda m, failed=failed: failed.append(f"console {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e, failed=failed: failed.append(f"error {e}"))
        page.goto((out / f"{stem}.html").as_uri())
        if stem == "index":
            links = page.evaluate("() => Array.from(document.querySelectorAll('a'), a => a.href)")
            assert len(links) == len(result["decks"])
            problems += [f"index: {f}" for f in failed]
            page.close()
            continue
        page.wait_for_function("document.body.dataset.reveal === 'ready'", timeout=30_000)
        indices = page.evaluate("""() => Reveal.getSlides().map(s => Reveal.getIndices(s))""")
        total = page.evaluate("Reveal.getTotalSlides()")
        if total < 2:
            problems.append(f"{stem}: only {total} slide(s)")
        for index in indices:
            page.evaluate(f"Reveal.slide({index['h']}, {index.get('v') or 0})")
            shown = page.evaluate("""() => { const s = Reveal.getCurrentSlide();
                const r = s.getBoundingClientRect();
                return {text: s.innerText.trim().length, w: r.width, h: r.height,
                        visible: getComputedStyle(s).display !== 'none'}; }""")
            if not (shown["text"] > 0 and shown["w"] > 0 and shown["h"] > 0 and shown["visible"]):
                problems.append(f"{stem}: slide {index} is empty or hidden ({shown})")
        problems += [f"{stem}: {f}" for f in failed]
        page.close()
    assert not problems, "\n".join(problems)


# -- readable from the back of the room --------------------------------------------------------------
BODY_PX, CODE_PX, TABLE_PX = 28, 22, 20
"""Rendered sizes at 1280×800, reveal.js's scale applied: body text, code and output, tables. The
Carpentries ask for text "large enough to be read from the back of the room"
(https://carpentries.github.io/instructor-training/17-live.html); these are the kit's numbers for a
projected 1280×800 screen."""

MEASURE = """() => {
  const scale = Reveal.getScale();
  const slide = Reveal.getCurrentSlide();
  const box = document.querySelector('.reveal .slides').getBoundingClientRect();
  const out = {body: [], code: [], table: [], overflow: [], colon: [], images: [], figures: []};
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest('aside.notes') || el.closest('h1,h2,h3')) continue;
    if (el.closest('section') !== slide && !slide.contains(el.closest('section'))) continue;
    const px = parseFloat(getComputedStyle(el).fontSize) * scale;
    const kind = el.closest('pre,code') ? 'code' : el.closest('table') ? 'table' : 'body';
    out[kind].push([Math.round(px * 10) / 10, node.textContent.trim().slice(0, 40)]);
  }
  const pad = 2;
  for (const el of slide.querySelectorAll('*')) {
    if (el.closest('aside.notes')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.bottom > box.bottom + pad || r.right > box.right + pad || \
r.left < box.left - pad || r.top < box.top - pad)
      out.overflow.push(el.tagName + ' ' + (el.textContent || '').trim().slice(0, 50));
  }
  const blocks = Array.from(slide.querySelectorAll('p, li, pre, div.highlight, table, img'))
    .filter(el => !el.closest('aside.notes') && !el.parentElement.closest('li, pre, div.highlight, table'));
  blocks.forEach((el, i) => {
    if (!el.matches('p, li') || !/[:：]$/.test(el.textContent.trim())) return;
    const next = blocks[i + 1];
    if (!next || !next.matches('pre, div.highlight, img, table, ul, ol, li')) \
out.colon.push(el.textContent.trim().slice(-60));
  });
  for (const img of slide.querySelectorAll('img')) {
    out.images.push(img.complete && img.naturalWidth > 0);
    const content = img.closest('.jp-RenderedMarkdown') || slide;
    out.figures.push(Math.round(100 * img.getBoundingClientRect().width / content.clientWidth / scale) / 100);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def measured(decks, browser):
    out, result = decks
    seen = {}
    for stem in result["decks"]:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
        page.goto((out / f"{stem}.html").as_uri())
        page.wait_for_function("document.body.dataset.reveal === 'ready'", timeout=30_000)
        page.evaluate("document.fonts.ready.then(() => true)")
        for index in page.evaluate("() => Reveal.getSlides().map(s => Reveal.getIndices(s))"):
            page.evaluate(f"Reveal.slide({index['h']}, {index.get('v') or 0})")
            seen[(stem, index["h"], index.get("v") or 0)] = page.evaluate(MEASURE)
        page.close()
    return seen


def test_text_is_readable_from_the_back_of_the_room(measured):
    small = []
    for where, m in measured.items():
        small += [f"{where} body {px}px: {t}" for px, t in m["body"] if px < BODY_PX]
        small += [f"{where} code {px}px: {t}" for px, t in m["code"] if px < CODE_PX]
        small += [f"{where} table {px}px: {t}" for px, t in m["table"] if px < TABLE_PX]
    sizes = {k: sorted({px for m in measured.values() for px, _ in m[k]}) for k in ("body", "code", "table")}
    print("rendered sizes (px):", {k: (v[0], v[-1]) for k, v in sizes.items() if v})
    assert not small, "\n".join(small[:20])
    assert sizes["table"], "the agenda table is on a slide"


def test_nothing_overflows_a_slide(measured):
    over = [f"{where}: {e}" for where, m in measured.items() for e in m["overflow"]]
    assert not over, "\n".join(over[:20])


def test_no_slide_ends_on_a_colon_without_what_it_introduces(measured):
    colons = [f"{where}: …{c}" for where, m in measured.items() for c in m["colon"]]
    assert not colons, "\n".join(colons)


def test_slides_show_code_outputs_and_figures(decks, measured):
    out, result = decks
    code = sum(1 for m in measured.values() if m["code"])
    figures = [ok for m in measured.values() for ok in m["images"]]
    assert code >= 30, f"only {code} slides with code"
    assert len(figures) >= 2 and all(figures), figures
    text = "".join((out / f"{s}.html").read_text(encoding="utf-8") for s in result["decks"])
    assert 'class="output"' in text and 'class="error"' in text
    wrap = next(s for s in result["decks"] if "wrap-up" in s)
    wrap_text = (out / f"{wrap}.html").read_text(encoding="utf-8")
    assert "docs/workshop/solutions.md" in wrap_text and "`labs/solutions/`" not in wrap_text
    opening = (out / f"{result['decks'][0]}.html").read_text(encoding="utf-8")
    assert "Green" in opening and "Red" in opening and "lid half down" not in opening
    for block in workshop.agenda():
        if block.highlights:
            assert block.highlights in text and "Run All" in text
            assert "Run Selected" not in text


FIGURE_WIDTH = 0.8
"""A figure spans at least this share of the slide's content width (its axis labels readable)."""


def test_figures_span_the_content_width(measured):
    widths = [(where, w) for where, m in measured.items() for w in m["figures"]]
    print("figure widths (share of the content):", sorted(w for _, w in widths))
    assert widths, "the decks show the lessons' figures"
    narrow = [f"{where}: {w:.0%} of the content width" for where, w in widths if w < FIGURE_WIDTH]
    assert not narrow, "\n".join(narrow)


def test_the_chinese_quotes_render_from_the_bundled_font(decks, browser):
    out, result = decks
    chars = "".join(sorted(result["characters"]))
    assert len(chars) > 20, "the lessons quote the Chinese posts"
    assert not set(chars) - slides.font_characters(), "the subset lacks characters: --font"
    font = slides.CJK_FONT
    assert font.stat().st_size < 100_000 and (font.parent / "OFL.txt").exists()
    stem = next(s for s in result["decks"] if s.startswith("03-"))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.goto((out / f"{stem}.html").as_uri())
    page.wait_for_function("document.body.dataset.reveal === 'ready'", timeout=30_000)
    faces = page.evaluate(f"""async () => {{
        const faces = await document.fonts.load('30px "{slides.CJK_FAMILY}"', {chars!r});
        return faces.map(f => [f.family, f.status]); }}""")
    assert faces and all(status == "loaded" for _, status in faces), faces
    assert page.evaluate(f"document.fonts.check('30px \"{slides.CJK_FAMILY}\"', {chars!r})")
    # not tofu: the bundled face draws each character differently from the missing-glyph box
    widths = page.evaluate(f"""() => {{
        const c = document.createElement('canvas').getContext('2d');
        c.font = '30px "{slides.CJK_FAMILY}"';
        return Array.from({chars!r}).map(ch => {{ c.clearRect(0, 0, 60, 60); c.fillText(ch, 0, 40);
          const d = c.getImageData(0, 0, 60, 60).data; let h = 0;
          for (let i = 3; i < d.length; i += 4) h = (h * 31 + d[i]) % 1000003; return h; }});
    }}""")
    assert len(set(widths)) > 0.9 * len(chars), "several characters draw the same glyph: tofu"
    page.close()
