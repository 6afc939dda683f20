"""Build the handout: a static site of every lesson, lab, cheat sheet and guide, and one PDF.

    make handout            # build/handout/index.html and every PDF below
    make handout-day        # the site and the workshop day's PDFs only (minutes faster)
    .venv/bin/python scripts/build_handout.py --no-pdf
    .venv/bin/python scripts/build_handout.py --only day --only kit

The site is nbconvert's JupyterLab rendering of the committed, executed notebooks (outputs, plots,
errors as a learner saw them) plus the Markdown documents, laid out like the repository, so every
link between them keeps working. Nothing is fetched when a page opens: no CDN, no web font, no
MathJax or require.js; mermaid (graphs drawn by `show_graph`) ships in `assets/` as a classic
script, so the pages work opened from disk as well as served by `python -m http.server`. New
lessons, labs and documents appear without edits: the builder collects whatever exists.

The printed handout (`toolnode-lab-a4.pdf`, `toolnode-lab-letter.pdf`) is a cover, a contents page
with page numbers, every lesson from a new page, then the labs' guide, the cheat sheets and the
attendees' pre-flight note; code and output lines wrap at the margin, and the outputs of cells
tagged `answer` stay folded. Maintainer pages (the compatibility matrix, the benchmark tables, the
instructor's kit) are in the site only.

The workshop day's handout (`workshop-day-a4.pdf`, `workshop-day-letter.pdf`) is a cover with the
day's agenda, a contents page, the sections of each lesson the day's blocks run (courseware.workshop's
agenda: the lesson's title, Setup and those sections) and the day's lab, whole.

Each cheat sheet prints on its own (`cheatsheet-<en|zh|agent-en|agent-zh>-<a4|letter>.pdf`), without
the test ids the site shows: on one page when it fits with no text under 7 pt, else on two (the print
never shrinks below that). The run sheet (landscape) and the feedback form (portrait) print on one
page each (`run-sheet-a4.pdf`, `feedback-letter.pdf`, ...). Printing is done by
headless Chromium through Playwright once the graphs are drawn. It needs Chromium
(`/usr/bin/chromium`, or CHROMIUM=path), poppler (`pdfinfo`, `pdftotext`) and, for the Chinese
cheat sheet, a CJK font (Debian: `apt-get install chromium poppler-utils fonts-noto-cjk`).
"""

from __future__ import annotations

import argparse
import functools
import html
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "handout"
OUT = ROOT / "build" / "handout"
CACHE = ROOT / ".cache" / "handout"
MERMAID_VERSION = "11.12.0"
PDF_NAME = "toolnode-lab-a4.pdf"
PAPERS = {"a4": ("A4", "toolnode-lab-a4.pdf"), "letter": ("Letter", "toolnode-lab-letter.pdf")}
"""Printed formats: Playwright's paper name and the file written for each."""
DAY_PAPERS = {"a4": ("A4", "workshop-day-a4.pdf"), "letter": ("Letter", "workshop-day-letter.pdf")}
"""The workshop day's handout: the sections the day's blocks cover and the day's lab, per paper."""
PARTS = ("handout", "day", "sheets", "kit")
"""What `--only` can build: the full handout's PDFs, the day's, the cheat sheets, the run sheet and
feedback form (the site is always built)."""
LEGIBLE_PT = 7.0
"""No printed sheet has text smaller than this (points, on paper: CSS size × print scale)."""
KIT_SHEETS = {"run-sheet": ("docs/workshop/run-sheet.md", True),
              "feedback": ("docs/workshop/feedback.md", False)}
"""The instructor's one-page sheets, each printed as `<key>-a4.pdf` and `<key>-letter.pdf`; True:
landscape."""
PRINTED_DOCS = ("labs/README.md", "docs/cheatsheet.en.md", "docs/cheatsheet.zh.md",
                "docs/cheatsheet-agent.en.md", "docs/cheatsheet-agent.zh.md", "docs/workshop/preflight.md")
"""The documents printed after the lessons; every other document (the compatibility matrix, the
benchmark tables, the instructor's kit) is in the site only."""
CHEATSHEETS = {"en": "docs/cheatsheet.en.md", "zh": "docs/cheatsheet.zh.md",
               "agent-en": "docs/cheatsheet-agent.en.md", "agent-zh": "docs/cheatsheet-agent.zh.md"}
"""The one-page sheets, each printed as `cheatsheet-<key>.pdf`: ToolNode's rules, then the rules of
the engine underneath and tools in a running agent (lessons 10–18), each in English and Chinese."""
SHEET_LABELS = {"en": "ToolNode (en)", "zh": "ToolNode (zh)", "agent-en": "a running agent (en)",
                "agent-zh": "a running agent (zh)"}
MARGIN = {"top": "12mm", "bottom": "14mm", "left": "12mm", "right": "12mm"}
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


class HandoutError(RuntimeError):
    """Something the handout build needs is missing; the message says how to get it."""


def sources(root: Path = ROOT) -> dict[str, list[Path]]:
    """What the handout holds, by kind, in reading order."""
    docs = sorted(p for p in (root / "docs").rglob("*.md")) if (root / "docs").exists() else []
    return {
        "lessons": sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")),
        "labs": sorted((root / "labs").glob("[0-9][0-9]_*.ipynb")),
        "solutions": sorted((root / "labs" / "solutions").glob("[0-9][0-9]_*.ipynb")),
        "docs": [p for p in [root / "labs" / "README.md", *docs] if p.exists()],
    }


def printed(kinds: dict[str, list[Path]], root: Path = ROOT) -> list[Path]:
    """What the printed handout holds, in order: the lessons, then PRINTED_DOCS that exist."""
    docs = [root / rel for rel in PRINTED_DOCS if (root / rel).exists()]
    return list(kinds["lessons"]) + docs


_CITATION = re.compile(r"\s*·\s*`tests/[^`]*`")


def strip_test_ids(markdown: str) -> str:
    """The printed cheat sheet's text: every ` · `tests/…`` citation removed (the site keeps them)."""
    return _CITATION.sub("", markdown)


def target_of(path: Path, root: Path = ROOT) -> Path:
    """Where a repository file lands in the site (relative): .ipynb and .md become .html."""
    rel = path.relative_to(root)
    if rel == Path("README.md"):
        return Path("index.html")
    return rel.with_suffix(".html") if rel.suffix in (".ipynb", ".md") else rel


def mermaid_js() -> Path:
    """mermaid's browser build, from the npm registry once, then from .cache/handout/."""
    cached = CACHE / f"mermaid-{MERMAID_VERSION}.min.js"
    if cached.exists():
        return cached
    npm = shutil.which("npm")
    if npm is None:
        raise HandoutError("The handout draws graphs with mermaid, fetched once from the npm registry: "
                           "install Node.js with npm (Debian: apt-get install npm), then run it again.")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([npm, "pack", f"mermaid@{MERMAID_VERSION}", "--silent", "--pack-destination", tmp],
                       check=True, capture_output=True, text=True)
        with tarfile.open(next(Path(tmp).glob("mermaid-*.tgz"))) as archive:
            member = archive.extractfile("package/dist/mermaid.min.js")
            cached.write_bytes(member.read())
    return cached


_HREF = re.compile(r'(<a\b[^>]*?\bhref=")([^"#][^"]*?|)(#[^"]*)?("[^>]*>)', re.IGNORECASE)


def rewrite_links(page: str, src: Path, built: set[Path], root: Path = ROOT) -> str:
    """Point links between repository files at their pages; unlink files the site does not have.

    A link to `02_x.ipynb` becomes `02_x.html`, `../README.md#the-course` becomes
    `../index.html#the-course`; a link to a file with no page (a test, the Makefile) keeps its text
    but loses its href, so no link in the site is broken.
    """
    here = target_of(src, root).parent

    def fix(match: re.Match) -> str:
        start, href, anchor, end = match.group(1), match.group(2), match.group(3) or "", match.group(4)
        if re.match(r"^[a-z][a-z0-9+.-]*:", href) or href == "":
            return match.group(0)
        repo_path = (src.parent / html.unescape(href)).resolve()
        if repo_path.is_dir() and (repo_path / "README.md").exists():
            repo_path = repo_path / "README.md"
        try:
            target = target_of(repo_path, root)
        except ValueError:  # outside the repository
            return f'<a class="handout-source" title="{html.escape(href)}"' + end[1:]
        if target not in built:
            title = html.escape(f"not in the handout: {target}")
            return f'<a class="handout-source" title="{title}"' + end[1:]
        return start + html.escape(os.path.relpath(target, here).replace(os.sep, "/")) + anchor + end

    return _HREF.sub(fix, page)


def _root_prefix(target: Path) -> str:
    depth = len(target.parent.parts)
    return "../" * depth


def notebook_page(path: Path, links: list[tuple[str, str]], notebook=None) -> str:
    """A notebook's page; `notebook` (an nbformat node) replaces the file's cells (the day's print)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="handout", extra_template_basedirs=[str(HERE / "templates")])
    resources = {"handout_root": _root_prefix(target_of(path)), "handout_links": links,
                 "metadata": {"name": path.stem}}
    if notebook is None:
        body, _ = exporter.from_filename(str(path), resources=resources)
    else:
        body, _ = exporter.from_notebook_node(notebook, resources=resources)
    return body


def slug(text: str) -> str:
    """GitHub's heading anchor: `## The course` → `the-course` (so README links keep working)."""
    text = re.sub(r"<[^>]+>", "", html.unescape(text)).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def markdown_page(path: Path, links: list[tuple[str, str]], text: str | None = None,
                  body_class: str = "") -> str:
    import mistune

    class Renderer(mistune.HTMLRenderer):
        seen: dict[str, int] = {}

        def heading(self, text: str, level: int, **attrs) -> str:
            anchor = slug(text)
            count = self.seen.get(anchor, 0)
            self.seen[anchor] = count + 1
            anchor = f"{anchor}-{count}" if count else anchor
            return f'<h{level} id="{anchor}">{text}</h{level}>\n'

    text = path.read_text(encoding="utf-8") if text is None else text
    front = re.match(r"---\n(.*?)\n---\n", text, flags=re.S)  # YAML front matter (cheat sheets)
    meta = dict(re.findall(r"^(\w+):\s*\"?([^\"\n]*)\"?$", front.group(1), flags=re.M)) if front else {}
    text = text[front.end():] if front else text
    renderer = Renderer(escape=False)
    renderer.seen = {}
    render = mistune.create_markdown(renderer=renderer, plugins=["table", "strikethrough", "url"])
    body = render(text)
    # ```mermaid fences are graphs, not code
    body = re.sub(r'<pre><code class="language-mermaid">(.*?)</code></pre>',
                  lambda m: f'<pre class="mermaid">{m.group(1)}</pre>', body, flags=re.S)
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
    prefix = _root_prefix(target_of(path))
    lang = meta.get("lang") or ("zh-CN" if ".zh" in path.name else "en")
    nav = " · ".join(f'<a href="{href}">{html.escape(label)}</a>' for label, href in links)
    body_attr = f' class="{body_class}"' if body_class else ""
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
            f"<title>{html.escape(title)}</title>\n"
            f'<link rel="stylesheet" href="{prefix}assets/handout.css">\n'
            f'<script src="{prefix}assets/mermaid.min.js"></script>\n'
            f'<script src="{prefix}assets/handout.js"></script>\n</head>\n'
            f'<body{body_attr}>\n'
            f'<nav class="handout-nav"><a href="{prefix}index.html">toolnode-lab handout</a>'
            + (f" · {nav}" if nav else "") + "</nav>\n"
            f'<main class="handout-doc">\n{body}\n</main>\n</body>\n</html>\n')


def _main_of(page: str) -> str:
    match = re.search(r"<main[^>]*>(.*)</main>", page, flags=re.S)
    return match.group(1) if match else page


def _from_root(folder: Path, match: re.Match) -> str:
    return f'href="{os.path.normpath(folder / match.group(1)).replace(os.sep, "/")}"'


def title_of(path: Path) -> str:
    """A lesson's or document's title: its first `# ` heading (`01 — Sequential vs …`)."""
    if path.suffix == ".ipynb":
        import json

        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for line in source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
        return path.stem
    text = path.read_text(encoding="utf-8")
    return next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), path.stem)


def _plain(markdown_title: str) -> str:
    return re.sub(r"[`*]", "", markdown_title)


def _version_line() -> str:
    pins = {}
    req = ROOT / "requirements.txt"
    if req.exists():
        for line in req.read_text(encoding="utf-8").splitlines():
            match = re.match(r"^(langgraph|langgraph-prebuilt|langchain-core)==([\w.]+)", line)
            if match:
                pins[match.group(1)] = match.group(2)
    return " · ".join(f"{k} {v}" for k, v in pins.items())


def cover_counts() -> str:
    """The cover's count of notebooks and labs, from the course map (e.g. "Eighteen notebooks …")."""
    from courseware.derived import as_before, course_facts

    facts = course_facts()
    notebooks, labs = as_before("Eighteen", facts["notebooks"]), as_before("seven", facts["labs"])
    return (f"{notebooks} notebooks (lessons 00–{facts['last teaching']:02d}, the mock interview and "
            f"the drill bank), {labs} self-checking labs")


def contents(entries: list[tuple[str, str, int | None]]) -> str:
    """The contents page (title → page)."""
    rows = "\n".join(
        f'<li><a href="#{anchor}"><span class="toc-title">{html.escape(_plain(title))}</span>'
        f'<span class="toc-page">{page or ""}</span></a></li>'
        for title, anchor, page in entries)
    return (f'<section class="handout-contents" id="contents">\n<h1>Contents</h1>\n<ol class="toc">\n'
            f'{rows}\n</ol>\n</section>')


def cover_and_contents(entries: list[tuple[str, str, int | None]]) -> str:
    """The printed handout's first two pages: a cover, then the contents (title → page)."""
    return (
        '<section class="handout-cover">\n<h1 class="cover-title">toolnode-lab</h1>\n'
        '<p class="cover-subtitle">How LangGraph executes tools: a hands-on course</p>\n'
        f'<p class="cover-lines">{html.escape(cover_counts())} run offline with a scripted model, '
        'with the interview cheat sheets.<br>Every output in this handout is what the committed '
        'notebooks printed on the pinned versions.</p>\n'
        f'<p class="cover-pins">{html.escape(_version_line())}</p>\n'
        '<p class="cover-how">Run it: <code>make lab</code> in the repository · answers of the '
        'drills are folded: open them on your laptop after you have predicted.</p>\n</section>\n'
        + contents(entries))


def day_cover_and_contents(entries: list[tuple[str, str, int | None]]) -> str:
    """The day's handout's first two pages: a cover with the day's agenda, then the contents."""
    from courseware import workshop

    rows = "\n".join(
        f"<tr><td>{workshop.clock(b.start)}</td><td>{html.escape(_plain(b.title))}</td>"
        f"<td>{b.minutes or ''}</td></tr>" for b in workshop.agenda())
    return (
        '<section class="handout-cover handout-day-cover">\n<h1 class="cover-title">toolnode-lab</h1>\n'
        '<p class="cover-subtitle">The workshop day: the sections we run together, and the lab</p>\n'
        f'<table class="day-agenda"><thead><tr><th>clock</th><th>block</th><th>min</th></tr></thead>'
        f'<tbody>\n{rows}\n<tr><td>{workshop.clock(workshop.total())}</td><td>end</td><td></td></tr>'
        '</tbody></table>\n'
        '<p class="cover-how">Run it: <code>make lab</code> in the repository. Every lesson in full, '
        'with its deep dives, is in the full handout and the site.</p>\n</section>\n'
        + contents(entries))


def print_page(pages: dict[Path, str], order: list[Path], titles: list[str],
               page_numbers: list[int | None] | None = None, front=cover_and_contents,
               title: str = "toolnode-lab handout") -> str:
    """Cover, contents (`front`), then all of `order` in one document, one section each (each
    starts a page)."""
    first = pages[order[0]]
    head = re.search(r"<head>(.*?)</head>", first, flags=re.S).group(1)
    head = head.replace('href="../', 'href="').replace('src="../', 'src="')
    sections = []
    anchors = []
    for target in order:
        body = _main_of(pages[target])
        # links inside the print page point at the site's pages, relative to the site root
        body = re.sub(r'href="(?!#|[a-z]+:)([^"]*)"', functools.partial(_from_root, target.parent), body)
        body = re.sub(r'src="(?!#|[a-z]+:)([^"]*)"',
                      lambda m, folder=target.parent: _from_root(folder, m).replace("href=", "src=", 1), body)
        kind = "handout-doc" if target.parts[0] in ("docs", "labs") else "jp-Notebook"
        anchor = "print-" + target.with_suffix("").as_posix().replace("/", "-")
        anchors.append(anchor)
        lang = ' lang="zh-CN"' if ".zh" in target.name else ""
        sections.append(f'<section class="handout-section {kind}" id="{anchor}"{lang}>\n{body}\n</section>')
    numbers = page_numbers or [None] * len(order)
    front = front(list(zip(titles, anchors, numbers, strict=True)))
    head = re.sub(r"<title>.*?</title>", f"<title>{html.escape(title)}</title>", head, flags=re.S)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>{head}</head>\n'
            f'<body class="jp-Notebook handout-print" data-jp-theme-light="true">\n<main>\n{front}\n'
            + "\n".join(sections) + "\n</main>\n</body>\n</html>\n")


def _readme_section(text: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    return match.group(1).strip() if match else ""


def index_page(kinds: dict[str, list[Path]]) -> str:
    """The learner's front page: what the course is, the course map and tracks (README's
    "The course"), and the handout's contents. No maintainer sections."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    title = next((ln for ln in readme.splitlines() if ln.startswith("# ")), "# toolnode-lab")
    intro = readme.split("\n## ", 1)[0].split("\n", 1)[-1].strip()
    lines = [title, "", intro, "", '<a id="The-course"></a>', "", "## The course", "",
             _readme_section(readme, "The course"), "",
             "## In this handout", ""]
    titles = {"lessons": "Lessons", "labs": "Labs (starters)", "solutions": "Lab solutions"}
    for kind in ("lessons", "labs", "solutions"):
        paths = kinds.get(kind) or []
        if not paths:
            continue
        lines += [f"**{titles[kind]}**", ""]
        lines += [f"- [{_plain(title_of(p))}]({p.relative_to(ROOT).as_posix()})" for p in paths]
        lines += [""]
    learner_docs = [ROOT / rel for rel in PRINTED_DOCS if (ROOT / rel).exists()]
    if learner_docs:
        lines += ["**Guides and cheat sheets**", ""]
        lines += [f"- [{_plain(title_of(p))}]({p.relative_to(ROOT).as_posix()})" for p in learner_docs]
        lines += [""]
    cheats = " · ".join(f"{SHEET_LABELS[key]} [A4](cheatsheet-{key}-a4.pdf), "
                        f"[Letter](cheatsheet-{key}-letter.pdf)"
                        for key, rel in CHEATSHEETS.items() if (ROOT / rel).exists())
    lines += ["**To print**", "",
              f"- the handout: [A4]({PAPERS['a4'][1]}) · [US Letter]({PAPERS['letter'][1]}) "
              "(cover, contents, every lesson, the labs' guide, the cheat sheets, the pre-flight note)",
              f"- the workshop day: [A4]({DAY_PAPERS['a4'][1]}) · [US Letter]({DAY_PAPERS['letter'][1]}) "
              "(the day's agenda, the lesson sections it runs, its lab)",
              f"- the cheat sheets, one or two pages each: {cheats}", ""]
    with tempfile.NamedTemporaryFile("w", suffix=".md", dir=ROOT, delete=False, encoding="utf-8") as tmp:
        tmp.write("\n".join(lines))
    try:
        page = markdown_page(Path(tmp.name), [])
    finally:
        os.unlink(tmp.name)
    return page


def _browser(p):
    if not Path(CHROMIUM).exists():
        raise HandoutError(f"No Chromium at {CHROMIUM}: install it (Debian: apt-get install chromium) "
                           "or set CHROMIUM=/path/to/chromium.")
    return p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise HandoutError("The PDF is printed by Chromium through Playwright: `make handout` installs "
                           "it (or: .venv/bin/pip install playwright), then run it again.") from exc
    return sync_playwright


def _open_offline(browser, html_file: Path):
    page = browser.new_page()
    page.set_default_timeout(600_000)  # the full handout is some 30 MB: minutes on a busy machine
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
               else route.abort())
    page.goto(html_file.as_uri())
    page.wait_for_function("document.body.dataset.mermaid === 'done'", timeout=60_000)
    return page


FOOTER = ('<div style="width:100%;font-size:8px;color:#666;text-align:center;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


def pdf_pages(pdf: Path) -> int:
    """The page count of a PDF (poppler's pdfinfo)."""
    if shutil.which("pdfinfo") is None:
        raise HandoutError("Checking the PDFs needs poppler (Debian: apt-get install poppler-utils).")
    out = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", out, re.M).group(1))


def page_texts(pdf: Path) -> list[str]:
    """Each page's text (poppler's pdftotext)."""
    out = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    return out.split("\f")


def _squeeze(text: str) -> str:
    return re.sub(r"\W+", "", text).lower()


def start_pages(pdf: Path, titles: list[str]) -> list[int | None]:
    """The page each section starts on: the first page, after the contents, whose top line is its title."""
    texts = page_texts(pdf)
    found, after = [], 2
    for title in titles:
        want = _squeeze(_plain(title))[:40]
        page = next((i + 1 for i, t in enumerate(texts) if i + 1 > after
                     and want and want in _squeeze("".join(t.strip().splitlines()[:3]))), None)
        found.append(page)
        after = page or after
    return found


def _pdf(page, pdf: Path, paper: str) -> None:
    page.pdf(path=str(pdf), format=paper, print_background=True, outline=True, tagged=True,
             display_header_footer=True, header_template="<span></span>", footer_template=FOOTER,
             margin=MARGIN)


_SET_PAGES = """(numbers) => document.querySelectorAll('.handout-contents .toc-page')
    .forEach((el, i) => { el.textContent = numbers[i] == null ? '' : String(numbers[i]); })"""


def print_pdfs(print_html: Path, out: Path, titles: list[str], papers: dict = PAPERS) -> dict[str, dict]:
    """Print the handout once per paper, in two passes: print, read the page each section starts
    on, write those numbers into the contents page, print again. The page is loaded (and its
    graphs drawn) once; the contents' numbers take no more room than its blanks, so nothing moves."""
    result = {}
    with _playwright()() as p:
        browser = _browser(p)
        page = _open_offline(browser, print_html)
        for key, (paper, name) in papers.items():
            page.evaluate(_SET_PAGES, [None] * len(titles))
            _pdf(page, out / name, paper)
            numbers = start_pages(out / name, titles)
            page.evaluate(_SET_PAGES, numbers)
            _pdf(page, out / name, paper)
            result[key] = {"file": name, "pages": pdf_pages(out / name), "starts": numbers}
        browser.close()
    return result


SMALLEST_TEXT = """() => {
  // the smallest font size (CSS px) of any text shown on the page
  let least = Infinity;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!node.textContent.trim() || !el || !el.getClientRects().length) continue;
    least = Math.min(least, parseFloat(getComputedStyle(el).fontSize));
  }
  return least;
}"""


SHEET_MARGIN = {"top": "7mm", "bottom": "7mm", "left": "8mm", "right": "8mm"}
LARGEST_SCALE = 1.3
"""A sheet with room to spare prints larger, up to this print scale."""


def print_fitted(html_file: Path, pdf: Path, paper: str = "A4", landscape: bool = False,
                 max_pages: int = 1) -> dict:
    """Print a sheet on as few pages as it takes at a legible size (no text under LEGIBLE_PT), as
    large as those pages allow (print scale up to LARGEST_SCALE).

    Returns {"pages", "scale", "smallest_pt"}. A sheet that takes more than `max_pages` pages at the
    smallest legible size is printed so, on the pages it takes (`build` names it: fewer words are
    the fix); it is never shrunk below LEGIBLE_PT."""
    with _playwright()() as p:
        browser = _browser(p)
        page = _open_offline(browser, html_file)
        page.emulate_media(media="print")
        smallest = page.evaluate(SMALLEST_TEXT)

        def at(scale: float) -> int:
            page.pdf(path=str(pdf), format=paper, landscape=landscape, print_background=True,
                     scale=scale, margin=SHEET_MARGIN)
            return pdf_pages(pdf)

        floor = math.ceil(LEGIBLE_PT / (smallest * 0.75) * 100) / 100  # CSS px are 0.75 pt at scale 1
        fewest = at(floor)
        scale = floor
        if fewest <= max_pages:  # the largest scale that keeps that page count
            for candidate in (round(LARGEST_SCALE - 0.04 * i, 2) for i in range(100)):
                if candidate <= floor:
                    break
                if at(candidate) <= fewest:
                    scale = candidate
                    break
            if scale == floor:
                at(floor)
        browser.close()
    return {"pages": pdf_pages(pdf), "scale": scale, "smallest_pt": round(smallest * 0.75 * scale, 2)}


def cheatsheet_pages(out: Path, built: set[Path]) -> dict[str, Path]:
    """The print-only cheat sheets (no test ids, two columns), next to their site pages
    (`docs/cheatsheet.en.print.html`), their links pointing at the site's pages."""
    made = {}
    for lang, rel in CHEATSHEETS.items():
        src = ROOT / rel
        if not src.exists():
            continue
        text = strip_test_ids(src.read_text(encoding="utf-8"))
        page = rewrite_links(markdown_page(src, [], text=text, body_class="handout-sheet"), src, built)
        target = out / target_of(src).with_suffix(".print.html")
        target.write_text(page, encoding="utf-8")
        made[lang] = target
    return made


def kit_pages(out: Path, built: set[Path]) -> dict[str, Path]:
    """The run sheet and feedback form as print pages (`docs/workshop/run-sheet.print.html`)."""
    made = {}
    for key, (rel, landscape) in KIT_SHEETS.items():
        src = ROOT / rel
        if not src.exists():
            continue
        kind = "handout-kit landscape" if landscape else "handout-kit"
        page = rewrite_links(markdown_page(src, [], body_class=kind), src, built)
        target = out / target_of(src).with_suffix(".print.html")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
        made[key] = target
    return made


def day_parts(root: Path = ROOT) -> list[tuple[Path, list[int] | None]]:
    """The workshop day's notebooks, in the agenda's order (courseware.workshop): each lesson with
    the cells its blocks cover (the title cell, Setup and the blocks' sections), each lab whole."""
    from courseware import workshop

    parts: dict[str, set[int] | None] = {}
    for block in workshop.agenda():
        if block.part is None:
            continue
        notebook = block.part.notebook
        if block.kind == "lab" or notebook.startswith("labs/"):
            parts[notebook] = None
            continue
        cells = workshop.cells_of(notebook)
        title = workshop.sections(cells)[0][1]  # the cells above the first `## ` section
        chosen = parts.setdefault(notebook, set())
        if chosen is not None:
            chosen.update(title, workshop.selected(block.part)[1])
    return [(root / nb, sorted(ix) if ix is not None else None) for nb, ix in parts.items()]


def day_notebook(path: Path, indices: list[int] | None):
    """A lesson cut to the day's cells (a lab stays whole), with a line naming what is left out."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    if indices is None:
        return nb
    from courseware import workshop

    kept = [nb.cells[i] for i in indices]
    heads = [h for h, ix in workshop.sections(workshop.cells_of(path)) if h and set(ix) <= set(indices)]
    note = nbformat.v4.new_markdown_cell(
        "*The workshop's sections of this lesson: " + "; ".join(heads) + ". The whole lesson is in "
        "the full handout and the site.*")
    nb.cells = kept[:1] + [note] + kept[1:]
    return nb


def build(out: Path = OUT, pdf: bool = True, solutions: bool = True,
          only: tuple[str, ...] = PARTS) -> dict[str, object]:
    kinds = sources()
    if not solutions:  # the workshop's copy: solutions are revealed by the instructor
        kinds["solutions"] = []
    if out.exists():
        shutil.rmtree(out)
    (out / "assets").mkdir(parents=True)
    shutil.copy(mermaid_js(), out / "assets" / "mermaid.min.js")
    for asset in (HERE / "assets").iterdir():
        shutil.copy(asset, out / "assets" / asset.name)
    for asset in (ROOT / "docs").rglob("*"):  # images the lessons and documents show (docs/bench/*.png)
        if asset.suffix.lower() in (".png", ".svg", ".jpg", ".jpeg"):
            (out / asset.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(asset, out / asset.relative_to(ROOT))
    all_sources = [p for paths in kinds.values() for p in paths]
    pdfs = ({name for _, name in [*PAPERS.values(), *DAY_PAPERS.values()]}
            | {f"{stem}-{paper}.pdf" for stem in [*(f"cheatsheet-{k}" for k in CHEATSHEETS), *KIT_SHEETS]
               for paper in PAPERS})
    built = {target_of(p) for p in all_sources} | {Path("index.html")} | {Path(n) for n in pdfs}
    pages: dict[Path, str] = {}
    lessons = kinds["lessons"]
    for path in all_sources:
        target = target_of(path)
        up = _root_prefix(target)
        links = [("Lessons", f"{up}index.html#in-this-handout")]
        if path in lessons:
            i = lessons.index(path)
            if i > 0:
                links.insert(0, (f"← {lessons[i - 1].stem[:2]}", f"{lessons[i - 1].stem}.html"))
            if i + 1 < len(lessons):
                links.append((f"{lessons[i + 1].stem[:2]} →", f"{lessons[i + 1].stem}.html"))
        page = notebook_page(path, links) if path.suffix == ".ipynb" else markdown_page(path, links)
        pages[target] = rewrite_links(page, path, built)
    pages[Path("index.html")] = rewrite_links(index_page(kinds), ROOT / "README.md", built)
    for target, page in pages.items():
        (out / target).parent.mkdir(parents=True, exist_ok=True)
        (out / target).write_text(page, encoding="utf-8")
    order_src = printed(kinds)
    order = [target_of(p) for p in order_src]
    titles = [title_of(p) for p in order_src]
    print_html = out / "print.html"
    printed_pages = dict(pages)  # the printed cheat sheets drop their test ids (the site keeps them)
    for rel in CHEATSHEETS.values():
        src = ROOT / rel
        if src.exists():
            text = strip_test_ids(src.read_text(encoding="utf-8"))
            printed_pages[target_of(src)] = rewrite_links(markdown_page(src, [], text=text), src, built)
    print_html.write_text(print_page(printed_pages, order, titles), encoding="utf-8")
    day = day_parts()
    day_pages = {target_of(path): rewrite_links(notebook_page(path, [], day_notebook(path, ix)), path, built)
                 for path, ix in day}
    day_order = [target_of(path) for path, _ in day]
    day_titles = [title_of(path) for path, _ in day]
    (out / "print-day.html").write_text(
        print_page(day_pages, day_order, day_titles, front=day_cover_and_contents,
                   title="toolnode-lab: the workshop day"), encoding="utf-8")
    sheets = cheatsheet_pages(out, built)
    kit = kit_pages(out, built)
    result: dict[str, object] = {"pages": len(pages), "sections": [t.stem for t in order], "out": out,
                                 "titles": titles, "pdf": {}, "sheets": {}, "day_titles": day_titles,
                                 "day_sections": [t.stem for t in day_order], "day": {}, "kit": {}}
    if not pdf:
        return result
    if "handout" in only:
        result["pdf"] = print_pdfs(print_html, out, titles)
    if "day" in only:
        result["day"] = print_pdfs(out / "print-day.html", out, day_titles, DAY_PAPERS)
    for part, pages_of, max_pages in (("sheets", sheets, 2), ("kit", kit, 1)):
        if part not in only:
            continue
        for key, html_file in pages_of.items():
            source, landscape = KIT_SHEETS[key] if part == "kit" else (CHEATSHEETS[key], False)
            stem = f"cheatsheet-{key}" if part == "sheets" else key
            for paper_key, (paper, _) in PAPERS.items():
                name = f"{stem}-{paper_key}.pdf"
                fitted = print_fitted(html_file, out / name, paper, landscape, max_pages)
                if fitted["pages"] > max_pages:
                    print(f"handout: {name} takes {fitted['pages']} pages at {LEGIBLE_PT:g} pt, more than "
                          f"{max_pages}: shorten {source} (fewer words)",
                          file=sys.stderr)
                result[part][f"{key}-{paper_key}"] = {"file": name, "paper": paper_key, "html": html_file,
                                                      **fitted}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"where to build (default {OUT.relative_to(ROOT)})")
    parser.add_argument("--no-pdf", action="store_true", help="build the site only")
    parser.add_argument("--without-solutions", action="store_true",
                        help="leave the lab solutions out (the workshop's USB copy)")
    parser.add_argument("--only", action="append", choices=PARTS,
                        help="print only these PDFs (repeatable): handout (the full one, the slow part), "
                             "day (the workshop day's sections and lab), sheets (the cheat sheets), "
                             "kit (the run sheet and feedback form); the site is always built")
    args = parser.parse_args(argv)
    try:
        result = build(args.out, pdf=not args.no_pdf, solutions=not args.without_solutions,
                       only=tuple(args.only or PARTS))
    except HandoutError as exc:
        sys.exit(f"handout: {exc}")
    shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
    print(f"handout: {result['pages']} pages in {shown}/ (open {shown}/index.html)")
    for info in [*result["pdf"].values(), *result["day"].values(), *result["sheets"].values(),
                 *result["kit"].values()]:
        size = (args.out / info["file"]).stat().st_size / 1e6
        print(f"  {shown}/{info['file']}: {info['pages']} page(s), {size:.1f} MB")


if __name__ == "__main__":
    main()
