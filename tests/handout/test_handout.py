"""The handout works with no network: every page opened from disk (and served over http) in
headless Chromium with every non-local request blocked; graphs drawn, plots shown, no console
error, no broken internal link; the PDF has one section per lesson and its pages render."""

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


@pytest.fixture(scope="session")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=handout.CHROMIUM, args=handout.CHROMIUM_ARGS)
        yield chromium
        chromium.close()


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
    return sorted(p for p in out.rglob("*.html") if p.name != "print.html")


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
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"],
                          capture_output=True, text=True, check=True)
    return text.stdout.split("\f")


@pytest.mark.skipif(shutil.which("pdftotext") is None,
                    reason="needs poppler-utils (make handout-test installs it)")
def test_the_pdf_has_one_section_per_lesson_and_its_pages_render(site, tmp_path):
    out, result = site
    pdf = out / handout.PDF_NAME
    pages = _pdf_pages_text(pdf)
    firsts = [page.strip().splitlines()[0].strip() if page.strip() else "" for page in pages]
    for lesson in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        number = lesson.stem[:2]
        assert any(line.startswith(f"{number} —") for line in firsts), f"no page starts lesson {number}"
    subprocess.run(["pdftoppm", "-r", "40", "-f", "1", "-l", "1", "-png", str(pdf), str(tmp_path / "p")],
                   check=True)
    rendered = list(tmp_path.glob("p*.png"))
    assert rendered and rendered[0].stat().st_size > 1000
    zh = [p for p in handout.sources()["docs"] if ".zh" in p.name]
    if zh:
        title = next(line[2:].strip() for line in zh[0].read_text(encoding="utf-8").splitlines()
                     if line.startswith("# "))
        squeeze = functools.partial(re.sub, r"\s+", "")  # the PDF's text breaks lines between scripts
        assert any(squeeze(title) in squeeze(page) for page in pages), f"the PDF has no page with {title!r}"


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
