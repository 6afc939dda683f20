"""The handout works with no network: every page opened from disk (and served over http) in
headless Chromium with every non-local request blocked; graphs drawn, plots shown, no console
error, no broken internal link. The printed handout (A4 and US Letter) opens with a cover and a
contents page whose page numbers are right, starts each lesson on a page, cuts no line at the
right edge, leaves maintainer pages out and keeps drill answers folded, breaks no word of the course
map's table, and counts on its cover what the course map holds. The workshop day's handout holds the
sections the day's blocks run and its lab, nothing else. Each cheat sheet prints on one or two pages of
A4 and of Letter without test ids and with no text under 7 pt (measured in Chromium); the run sheet
and the feedback form print on one page each. The site's front page is a learner's page."""

from __future__ import annotations

import functools
import html
import http.server
import importlib.util
import re
import shutil
import subprocess
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_handout", ROOT / "scripts" / "build_handout.py")
handout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(handout)

sync_api = pytest.importorskip("playwright.sync_api", reason="make handout-test installs playwright")


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("handout")
    result = handout.build(out, pdf=True)
    return out, result


def visit(browser, url: str, allowed: str):
    """Open url with every request outside `allowed` blocked; return (page, blocked, errors)."""
    page = browser.new_page()
    blocked, errors = [], []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.set_default_timeout(600_000)  # the print pages are some 30 MB: minutes on a busy machine
    page.route("**/*", route)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("document.body.dataset.mermaid === 'done'", timeout=60_000)
    page.wait_for_load_state("load")
    return page, blocked, errors


def test_the_site_holds_every_lesson_lab_and_document(site):
    out, _ = site
    kinds = handout.sources()
    for path in [p for paths in kinds.values() for p in paths]:
        assert (out / handout.target_of(path)).exists(), f"{path.relative_to(ROOT)} has no page"
    assert (out / "index.html").exists() and (out / "assets" / "mermaid.min.js").exists()


def _pages(out: Path) -> list[Path]:
    # print.html and print-<paper>.html are the PDFs' sources (checked by the print tests below)
    return sorted(p for p in out.rglob("*.html") if not p.name.startswith("print"))


def test_every_page_works_from_disk_with_the_network_blocked(site, browser):
    out, _ = site
    problems = []
    for html_file in _pages(out):
        page, blocked, errors = visit(browser, html_file.as_uri(), "file://")
        name = html_file.relative_to(out)
        problems += [f"{name}: blocked request {url}" for url in blocked]
        problems += [f"{name}: console error {text}" for text in errors]
        left = page.evaluate("""() => Array.from(document.querySelectorAll('pre.mermaid'))
                                .filter(el => !el.querySelector('svg')).length""")
        if left:
            problems.append(f"{name}: {left} graph(s) left as text")
        broken_images = page.evaluate("""() => Array.from(document.images)
                                         .filter(img => !img.complete || img.naturalWidth === 0).length""")
        if broken_images:
            problems.append(f"{name}: {broken_images} image(s) did not load")
        for href in page.evaluate("() => Array.from(document.querySelectorAll('a[href]'), a => a.href)"):
            parsed = urlparse(href)
            if parsed.scheme != "file":
                continue
            target = Path(unquote(parsed.path))
            if not target.exists():
                shown = target.relative_to(out) if target.is_relative_to(out) else target
                problems.append(f"{name}: broken link {shown}")
            elif parsed.fragment and target.suffix == ".html":
                found = re.findall(r'\bid="([^"]+)"', target.read_text(encoding="utf-8"))
                ids = {unquote(html.unescape(i)) for i in found}
                if unquote(parsed.fragment) not in ids:
                    problems.append(f"{name}: link to missing anchor {target.name}#{parsed.fragment}")
        page.close()
    assert not problems, "\n".join(problems)


def test_lessons_show_their_plots_and_graphs(site):
    out, _ = site
    lessons = sorted((out / "notebooks").glob("*.html"))
    text = {p.name: p.read_text(encoding="utf-8") for p in lessons}
    assert any('src="data:image/png;base64,' in t for t in text.values()), "no lesson shows a plot"
    assert any('class="jp-Mermaid"' in t for t in text.values()), "no lesson shows a graph"


def test_the_site_works_served_over_http(site, browser):
    out, _ = site
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        lesson = sorted((out / "notebooks").glob("*.html"))[-1].relative_to(out).as_posix()
        for path in ("index.html", lesson):
            page, blocked, errors = visit(browser, base + path, base)
            assert not blocked and not errors, (path, blocked, errors)
            page.close()
    finally:
        server.shutdown()
        server.server_close()


def _pdf_pages_text(pdf: Path) -> list[str]:
    return handout.page_texts(pdf)


needs_poppler = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                   reason="needs poppler-utils (make handout-test installs it)")


@needs_poppler
@pytest.mark.parametrize("paper", list(handout.PAPERS))
def test_the_pdf_has_one_section_per_lesson_and_its_pages_render(site, tmp_path, paper):
    out, result = site
    pdf = out / handout.PAPERS[paper][1]
    pages = _pdf_pages_text(pdf)
    firsts = [page.strip().splitlines()[0].strip() if page.strip() else "" for page in pages]
    for lesson in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        number = lesson.stem[:2]
        assert any(line.startswith(f"{number} —") for line in firsts), f"no page starts lesson {number}"
    last = len(pages) - (1 if not pages[-1].strip() else 0)
    for first, final in ((1, 3), (last // 2, last // 2 + 1), (last, last)):
        subprocess.run(["pdftoppm", "-r", "40", "-f", str(first), "-l", str(final), "-png", str(pdf),
                        str(tmp_path / f"p{first}")], check=True)
    rendered = sorted(tmp_path.glob("p*.png"))
    assert len(rendered) >= 5 and all(png.stat().st_size > 1000 for png in rendered)
    zh = [p for p in handout.sources()["docs"] if ".zh" in p.name]
    if zh:
        title = next(line[2:].strip() for line in zh[0].read_text(encoding="utf-8").splitlines()
                     if line.startswith("# "))
        squeeze = functools.partial(re.sub, r"\s+", "")  # the PDF's text breaks lines between scripts
        assert any(squeeze(title) in squeeze(page) for page in pages), f"the PDF has no page with {title!r}"


@needs_poppler
def test_the_two_papers_are_a4_and_us_letter(site):
    out, _ = site
    sizes = {}
    for key, (_, name) in handout.PAPERS.items():
        info = subprocess.run(["pdfinfo", str(out / name)], capture_output=True, text=True, check=True).stdout
        sizes[key] = re.search(r"Page size:\s+([\d.]+) x ([\d.]+) pts", info).groups()
    # A4 is 595.3 x 841.9 pt (Chromium rounds to whole CSS pixels), Letter 612 x 792
    for key, want in (("a4", (595.3, 841.9)), ("letter", (612, 792))):
        got = [float(v) for v in sizes[key]]
        assert all(abs(g - w) < 2 for g, w in zip(got, want, strict=True)), sizes


@needs_poppler
@pytest.mark.parametrize("paper", list(handout.PAPERS))
def test_a_cover_then_a_contents_page_whose_numbers_are_right(site, paper):
    out, result = site
    pages = _pdf_pages_text(out / handout.PAPERS[paper][1])
    assert "toolnode-lab" in pages[0] and "hands-on course" in pages[0]
    assert pages[1].strip().startswith("Contents")
    starts = result["pdf"][paper]["starts"]
    assert None not in starts, list(zip(result["titles"], starts, strict=True))
    squeeze = functools.partial(re.sub, r"\W+", "")
    for title, start in zip(result["titles"], starts, strict=True):
        plain = squeeze(re.sub(r"[`*]", "", title)).lower()[:30]
        top = squeeze("".join(pages[start - 1].strip().splitlines()[:3])).lower()
        assert plain in top, f"{title!r} is listed at page {start}, which starts {top[:60]!r}"
        # the contents line: its text starts with the title (spacing aside: pdftotext spaces CJK
        # characters its own way) and ends with the page number
        want = squeeze(re.sub(r"[`*]", "", title))[:12]
        rows = [ln for ln in pages[1].splitlines() if squeeze(ln).startswith(want)]
        number = re.search(r"(\d+)\s*$", rows[0]) if rows else None
        assert number and int(number.group(1)) == start, (title, rows)


@needs_poppler
def test_maintainer_pages_stay_out_of_the_print(site):
    out, result = site
    text = "\f".join(_pdf_pages_text(out / handout.PAPERS["a4"][1]))
    assert "tests/contracts/" not in text, "the printed cheat sheets keep their test ids"
    for rel in ("docs/compatibility.md", "docs/benchmark.md", "docs/workshop/README.md"):
        path = ROOT / rel
        if path.exists():
            assert handout.title_of(path) not in text, f"{rel} is printed"
            assert (out / handout.target_of(path)).exists(), f"{rel} is missing from the site"


CUT = """(limit) => {
  const out = [];
  const sel = 'main pre, main code, main table, main img, main svg, main .jp-OutputArea-output';
  for (const el of document.querySelectorAll(sel)) {
    if (el.closest('details:not([open])')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    const scroll = el.tagName === 'PRE' ? el.scrollWidth - el.clientWidth : 0;
    if (r.right - limit > 1 || scroll > 1) {
      const where = el.closest('section') ? el.closest('section').id : '?';
      out.push(`${where}: <${el.tagName.toLowerCase()}> ${Math.round(r.right - limit)} px past the edge: `
               + el.textContent.trim().slice(0, 60));
    }
  }
  return out;
}"""


def _cut_lines(browser, print_html: Path, extra_css: str = "") -> list[str]:
    # the printable width of A4 (the narrower paper) inside the handout's margins, in CSS pixels
    width = round((210 - 24) / 25.4 * 96)
    page = browser.new_page(viewport={"width": width, "height": 1100})
    page.set_default_timeout(600_000)
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.emulate_media(media="print")
    page.goto(print_html.as_uri())
    page.wait_for_function("document.body.dataset.mermaid === 'done'", timeout=60_000)
    if extra_css:
        page.add_style_tag(content=extra_css)
    found = page.evaluate(CUT, page.evaluate("document.documentElement.clientWidth"))
    found += [f"image did not load: {src}" for src in page.evaluate(
        "() => Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")]
    page.close()
    return found


def test_no_printed_line_runs_off_the_right_edge(site, browser):
    out, _ = site
    for name in ("print.html", "print-day.html"):  # the full handout, the day's
        cut = _cut_lines(browser, out / name)
        assert not cut, f"{name}: {len(cut)} block(s) cut at the edge:\n" + "\n".join(cut[:20])
    # the check sees cut lines when there are some: without the print CSS's wrapping it finds them
    unwrapped = ("pre, code { white-space: pre !important; overflow-wrap: normal !important;"
                 " font-size: 14px !important }")
    assert _cut_lines(browser, out / "print.html", unwrapped)


SHEETS = [f"{key}-{paper}" for key in handout.CHEATSHEETS for paper in handout.PAPERS]
KIT = [f"{key}-{paper}" for key in handout.KIT_SHEETS for paper in handout.PAPERS]
PAPER_POINTS = {"a4": (595.3, 841.9), "letter": (612, 792)}


def paper_size(pdf: Path) -> tuple[float, float]:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return tuple(float(v) for v in re.search(r"Page size:\s+([\d.]+) x ([\d.]+) pts", info).groups())


def smallest_printed_pt(browser, html_file: Path, scale: float) -> tuple[float, str]:
    """The smallest text of the page as printed: its computed font size (print media) × the print
    scale, in points; and that text."""
    page = browser.new_page()
    page.set_default_timeout(120_000)
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    page.emulate_media(media="print")
    page.goto(html_file.as_uri())
    page.wait_for_function("document.body.dataset.mermaid === 'done'", timeout=60_000)
    px, text = page.evaluate("""() => {
      let least = [Infinity, ''];
      for (const el of document.querySelectorAll('body *')) {
        const own = Array.from(el.childNodes).filter(n => n.nodeType === 3)
          .map(n => n.textContent).join('').trim();
        if (!own || !el.getClientRects().length) continue;
        const size = parseFloat(getComputedStyle(el).fontSize);
        if (size < least[0]) least = [size, own.slice(0, 40)];
      }
      return least;
    }""")
    page.close()
    return px * 0.75 * scale, text


@needs_poppler
@pytest.mark.parametrize("sheet", SHEETS)
def test_each_cheat_sheet_fits_two_pages(site, sheet):
    out, result = site
    if sheet not in result["sheets"]:
        pytest.skip(f"no sheet {sheet}")
    info = result["sheets"][sheet]
    pages = handout.pdf_pages(out / info["file"])
    assert info["pages"] == pages <= 2, f"{info['file']}: {pages} pages"


@needs_poppler
@pytest.mark.parametrize("sheet", SHEETS)
def test_each_cheat_sheet_prints_legibly_without_test_ids(site, browser, sheet):
    out, result = site
    lang, paper = sheet.rsplit("-", 1)
    if sheet not in result["sheets"]:
        pytest.skip(f"no {handout.CHEATSHEETS[lang]}")
    info = result["sheets"][sheet]
    pdf = out / info["file"]
    assert pdf.name == f"cheatsheet-{lang}-{paper}.pdf"
    got = paper_size(pdf)
    assert all(abs(g - w) < 2 for g, w in zip(got, PAPER_POINTS[paper], strict=True)), (pdf.name, got)
    pt, text = smallest_printed_pt(browser, info["html"], info["scale"])
    assert pt >= handout.LEGIBLE_PT - 0.01, f"{pdf.name}: {text!r} at {pt:.2f} pt (scale {info['scale']})"
    text = "\n".join(_pdf_pages_text(pdf))
    assert "tests/" not in text and "test_" not in text
    source = (ROOT / handout.CHEATSHEETS[lang]).read_text(encoding="utf-8")
    rules = re.findall(r"^(\d+)\. ", source, re.M)
    assert rules and f"{rules[-1]}." in text, "the last rule is not printed"
    site_page = (out / handout.target_of(ROOT / handout.CHEATSHEETS[lang])).read_text(encoding="utf-8")
    assert "tests/contracts/" in site_page, "the site's cheat sheet keeps its test ids"


@needs_poppler
@pytest.mark.parametrize("sheet", KIT)
def test_the_run_sheet_and_feedback_form_print_on_one_page(site, browser, sheet):
    out, result = site
    key, paper = sheet.rsplit("-", 1)
    rel, landscape = handout.KIT_SHEETS[key]
    if not (ROOT / rel).exists():
        pytest.skip(f"no {rel}")
    info = result["kit"][sheet]
    pdf = out / info["file"]
    assert pdf.name == f"{key}-{paper}.pdf" and handout.pdf_pages(pdf) == 1, pdf.name
    width, height = paper_size(pdf)
    want = PAPER_POINTS[paper][::-1] if landscape else PAPER_POINTS[paper]
    assert abs(width - want[0]) < 2 and abs(height - want[1]) < 2, (pdf.name, width, height)
    pt, text = smallest_printed_pt(browser, info["html"], info["scale"])
    assert pt >= handout.LEGIBLE_PT - 0.01, f"{pdf.name}: {text!r} prints at {pt:.2f} pt"
    printed = re.sub(r"\s+", " ", _pdf_pages_text(pdf)[0])
    source = (ROOT / rel).read_text(encoding="utf-8")
    # the last table row with words (a row of `<br>` is room to write by hand)
    rows = [[re.sub(r"<[^>]+>", "", c).strip() for c in ln.strip().strip("|").split("|")]
            for ln in source.splitlines() if ln.startswith("|") and not re.fullmatch(r"\|[\s:|-]*", ln)]
    last_words = [c for row in rows for c in row if c][-1]
    assert handout.title_of(ROOT / rel) in printed and last_words in printed, (pdf.name, last_words)


def _day_headings() -> tuple[set[str], set[str]]:
    """The `## ` headings the day's handout must print, and those of the same notebooks it must not."""
    from courseware import workshop

    want, other = set(), set()
    for path, indices in handout.day_parts():
        for heading, cells in workshop.sections(workshop.cells_of(path)):
            if not heading:
                continue
            (want if indices is None or set(cells) <= set(indices) else other).add(heading)
    return want, other - want


@needs_poppler
@pytest.mark.parametrize("paper", list(handout.DAY_PAPERS))
def test_the_days_handout_holds_the_days_sections_and_lab_and_nothing_else(site, paper):
    from courseware import workshop

    out, result = site
    pdf = out / handout.DAY_PAPERS[paper][1]
    pages = _pdf_pages_text(pdf)
    squeeze = functools.partial(re.sub, r"\W+", "")
    lines = [squeeze(line).lower() for page in pages for line in page.splitlines()]
    # a heading is printed when a line, or two lines (a long one wraps), hold exactly its text
    shown = set(lines) | {a + b for a, b in zip(lines, lines[1:], strict=False)}

    def printed(heading: str) -> bool:
        return squeeze(re.sub(r"[`*]", "", heading)).lower() in shown

    blocks = [b for b in workshop.agenda() if b.part is not None]
    labs = {b.part.notebook for b in blocks if b.kind == "lab"}
    assert labs and all(handout.title_of(ROOT / lab) in result["day_titles"] for lab in labs)
    want, other = _day_headings()
    for block in blocks:
        assert set(block.sections) <= want, (block.title, block.sections)
    missing = [h for h in want if not printed(h)]
    assert not missing, f"the day's handout lacks {missing}"
    extra = [h for h in other if printed(h)]
    assert not extra, f"the day's handout prints sections the day does not run: {extra}"
    # a lesson is printed when a page starts with its title (each starts a page)
    tops = {squeeze(page.strip().splitlines()[0]).lower() for page in pages if page.strip()}
    day_notebooks = {(ROOT / b.part.notebook).name for b in blocks}
    for lesson in handout.sources()["lessons"]:
        title = squeeze(re.sub(r"[`*]", "", handout.title_of(lesson))).lower()
        assert (title in tops) == (lesson.name in day_notebooks), lesson.name
    # the cover's agenda, every lesson from a new page at its listed number, and a sane length
    assert "workshop day" in pages[0] and all(b.title.split(" · ")[0] in pages[0] for b in blocks)
    starts = result["day"][paper]["starts"]
    assert None not in starts and starts == sorted(starts), starts
    full = handout.pdf_pages(out / handout.PAPERS[paper][1])
    count = handout.pdf_pages(pdf)
    assert 2 + len(result["day_titles"]) <= count <= 80 < full, (count, full)


def _course_map_words() -> list[str]:
    """Every word of the course map's table as the handout shows it (lesson 00 §1's table)."""
    import mistune

    from courseware.course import markdown_table

    table = mistune.html(markdown_table(start="notebooks"))
    cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", table, flags=re.S)
    words = {w for cell in cells for w in html.unescape(re.sub(r"<[^>]+>", "", cell)).split()}
    # a hyphenated compound may break after its hyphen; every part of it must be whole
    return sorted({part.strip("(),.;:'\"") for w in words for part in w.split("-")} - {""})


@needs_poppler
@pytest.mark.parametrize("pdf_name", [handout.PAPERS["a4"][1], handout.PAPERS["letter"][1],
                                      handout.DAY_PAPERS["a4"][1], handout.DAY_PAPERS["letter"][1]])
def test_the_course_map_table_breaks_no_word(site, pdf_name):
    out, _ = site
    pages = _pdf_pages_text(out / pdf_name)
    words = _course_map_words()
    holding = [i for i, page in enumerate(pages) if re.search(r"\bteaches\b", page) and "time" in page]
    assert holding, f"{pdf_name}: no page shows the course map"
    raw = subprocess.run(["pdftotext", "-raw", "-f", str(holding[0] + 1), "-l", str(holding[-1] + 2),
                          str(out / pdf_name), "-"], capture_output=True, text=True, check=True).stdout
    tokens = {t.strip("(),.;:'\"") for line in raw.splitlines() for t in re.split(r"[\s-]+", line)}
    split = [w for w in words if w not in tokens]
    assert not split, f"{pdf_name}: table words split across lines: {split[:20]}"


@needs_poppler
@pytest.mark.parametrize("paper", list(handout.PAPERS))
def test_the_cover_counts_what_the_course_map_holds(site, paper):
    from courseware.course import LESSONS
    from courseware.derived import WORDS

    out, _ = site
    cover = re.sub(r"\s+", " ", _pdf_pages_text(out / handout.PAPERS[paper][1])[0])
    notebooks, labs = len(LESSONS), sum(1 for row in LESSONS if row.lab)
    assert f"{WORDS[notebooks].capitalize()} notebooks" in cover, cover
    assert f"{WORDS[labs]} self-checking labs" in cover, cover
    assert "the mock interview and the drill bank" in cover


def test_strip_test_ids_leaves_the_rule_and_its_link():
    line = ("1. `gather` overlaps. [01 §2](../notebooks/01.ipynb#x) · `tests/contracts/test_01.py::test_a`"
            " · `tests/contracts/test_11.py::test_b`")
    assert handout.strip_test_ids(line) == "1. `gather` overlaps. [01 §2](../notebooks/01.ipynb#x)"


def test_answer_cells_are_folded(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("print(42)", metadata={"tags": ["answer"]})
    answer.outputs = [nbformat.v4.new_output("stream", name="stdout", text="THE-ANSWER 42\n")]
    other = nbformat.v4.new_code_cell("print(1)")
    other.outputs = [nbformat.v4.new_output("stream", name="stdout", text="VISIBLE 1\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# 99 — t"), answer, other]
    import tempfile

    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as inside:  # pages are laid out from ROOT
        path = Path(inside) / "99_answer_fold_probe.ipynb"
        nbformat.write(nb, path)
        page = handout.notebook_page(path, [])
    folded = re.search(r"<details class=\"handout-answer\">(.*?)</details>", page, re.S)
    assert folded and "THE-ANSWER 42" in folded.group(1)
    assert "VISIBLE 1" not in folded.group(1) and "VISIBLE 1" in page
    assert "<details class=\"handout-answer\" open" not in page


def test_every_answer_cell_of_the_lessons_is_folded_in_the_site(site):
    out, _ = site
    nbformat = pytest.importorskip("nbformat")
    for lesson in handout.sources()["lessons"]:
        tagged = [c for c in nbformat.read(lesson, as_version=4).cells
                  if c.cell_type == "code" and "answer" in c.metadata.get("tags", []) and c.outputs]
        page = (out / handout.target_of(lesson)).read_text(encoding="utf-8")
        assert page.count('<details class="handout-answer">') == len(tagged), lesson.name


def test_the_front_page_is_a_learners_page(site):
    out, _ = site
    page = (out / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2 id=\"([^\"]+)\">", page)
    assert "the-course" in headings and "in-this-handout" in headings, headings
    for maintainer in ("maintaining", "benchmarks", "compatibility-across-releases", "pinned-versions",
                       "layout", "troubleshooting"):
        assert maintainer not in headings, maintainer
    for lesson in handout.sources()["lessons"]:
        assert handout.target_of(lesson).as_posix() in page, lesson.name
    for name in [n for _, n in [*handout.PAPERS.values(), *handout.DAY_PAPERS.values()]] + [
            "cheatsheet-en-a4.pdf", "cheatsheet-agent-zh-letter.pdf"]:
        assert f'href="{name}"' in page, name


def test_the_chinese_cheat_sheet_names_an_installed_cjk_font(site, browser):
    out, _ = site
    zh = [p for p in handout.sources()["docs"] if ".zh" in p.name]
    if not zh:
        pytest.skip("no Chinese document in the handout")
    page, _, _ = visit(browser, (out / handout.target_of(zh[0])).as_uri(), "file://")
    family = page.evaluate("() => getComputedStyle(document.body).fontFamily")
    lang = page.evaluate("() => document.documentElement.lang")
    page.close()
    assert lang.startswith("zh") and "Noto Sans CJK SC" in family, (lang, family)
    installed = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    assert installed.strip(), "no CJK font installed: the PDF shows boxes (apt-get install fonts-noto-cjk)"
