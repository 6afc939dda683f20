"""Build the handout: a static site of every lesson, lab, cheat sheet and guide, and one PDF.

    make handout            # build/handout/index.html and build/handout/toolnode-lab.pdf
    .venv/bin/python scripts/build_handout.py --no-pdf

The site is nbconvert's JupyterLab rendering of the committed, executed notebooks (outputs, plots,
errors as a learner saw them) plus the Markdown documents, laid out like the repository, so every
link between them keeps working. Nothing is fetched when a page opens: no CDN, no web font, no
MathJax or require.js; mermaid (graphs drawn by `show_graph`) ships in `assets/` as a classic
script, so the pages work opened from disk as well as served by `python -m http.server`. New
lessons, labs and documents appear without edits: the builder collects whatever exists.

The PDF is one page built from every lesson (one section each, starting on a new page), then the
cheat sheets and the workshop guide, printed by headless Chromium through Playwright once the
graphs are drawn. It needs Chromium (`/usr/bin/chromium`, or CHROMIUM=path) and, for the Chinese
cheat sheet, a CJK font (Debian: `apt-get install chromium fonts-noto-cjk`).
"""

from __future__ import annotations

import argparse
import functools
import html
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
PDF_NAME = "toolnode-lab.pdf"
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


def notebook_page(path: Path, links: list[tuple[str, str]]) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="handout", extra_template_basedirs=[str(HERE / "templates")])
    resources = {"handout_root": _root_prefix(target_of(path)), "handout_links": links,
                 "metadata": {"name": path.stem}}
    body, _ = exporter.from_filename(str(path), resources=resources)
    return body


def slug(text: str) -> str:
    """GitHub's heading anchor: `## The course` → `the-course` (so README links keep working)."""
    text = re.sub(r"<[^>]+>", "", html.unescape(text)).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def markdown_page(path: Path, links: list[tuple[str, str]]) -> str:
    import mistune

    class Renderer(mistune.HTMLRenderer):
        seen: dict[str, int] = {}

        def heading(self, text: str, level: int, **attrs) -> str:
            anchor = slug(text)
            count = self.seen.get(anchor, 0)
            self.seen[anchor] = count + 1
            anchor = f"{anchor}-{count}" if count else anchor
            return f'<h{level} id="{anchor}">{text}</h{level}>\n'

    text = path.read_text(encoding="utf-8")
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
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
            f"<title>{html.escape(title)}</title>\n"
            f'<link rel="stylesheet" href="{prefix}assets/handout.css">\n'
            f'<script src="{prefix}assets/mermaid.min.js"></script>\n'
            f'<script src="{prefix}assets/handout.js"></script>\n</head>\n<body>\n'
            f'<nav class="handout-nav"><a href="{prefix}index.html">toolnode-lab handout</a>'
            + (f" · {nav}" if nav else "") + "</nav>\n"
            f'<main class="handout-doc">\n{body}\n</main>\n</body>\n</html>\n')


def _main_of(page: str) -> str:
    match = re.search(r"<main[^>]*>(.*)</main>", page, flags=re.S)
    return match.group(1) if match else page


def _from_root(folder: Path, match: re.Match) -> str:
    return f'href="{os.path.normpath(folder / match.group(1)).replace(os.sep, "/")}"'


def print_page(pages: dict[Path, str], order: list[Path]) -> str:
    """All of `order` in one document, one section each (each starts a page when printed)."""
    first = pages[order[0]]
    head = re.search(r"<head>(.*?)</head>", first, flags=re.S).group(1)
    head = head.replace('href="../', 'href="').replace('src="../', 'src="')
    sections = []
    for target in order:
        body = _main_of(pages[target])
        # links inside the print page point at the site's pages, relative to the site root
        body = re.sub(r'href="(?!#|[a-z]+:)([^"]*)"', functools.partial(_from_root, target.parent), body)
        kind = "handout-doc" if target.parts[0] == "docs" else "jp-Notebook"
        sections.append(f'<section class="handout-section {kind}" id="{target.stem}">\n{body}\n</section>')
    head = re.sub(r"<title>.*?</title>", "<title>toolnode-lab handout</title>", head, flags=re.S)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>{head}</head>\n<body class="jp-Notebook" '
            f'data-jp-theme-light="true">\n<main>\n' + "\n".join(sections) + "\n</main>\n</body>\n</html>\n")


def index_page(kinds: dict[str, list[Path]]) -> str:
    """README rendered, followed by a list of everything in the handout."""
    readme = ROOT / "README.md"
    lines = [readme.read_text(encoding="utf-8"), "", "## In this handout", ""]
    titles = {"lessons": "Lessons", "labs": "Labs (starters)", "solutions": "Lab solutions",
              "docs": "Documents"}
    for kind, paths in kinds.items():
        if not paths:
            continue
        lines += [f"**{titles[kind]}**", ""]
        lines += [f"- [{p.stem.replace('_', ' ')}]({p.relative_to(ROOT).as_posix()})" for p in paths]
        lines += [""]
    lines += [f"**PDF**: [{PDF_NAME}]({PDF_NAME}) (every lesson, the cheat sheets and the guides)", ""]
    with tempfile.NamedTemporaryFile("w", suffix=".md", dir=ROOT, delete=False, encoding="utf-8") as tmp:
        tmp.write("\n".join(lines))
    try:
        page = markdown_page(Path(tmp.name), [])
    finally:
        os.unlink(tmp.name)
    return page


def print_pdf(print_html: Path, pdf: Path) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise HandoutError("The PDF is printed by Chromium through Playwright: `make handout` installs "
                           "it (or: .venv/bin/pip install playwright), then run it again.") from exc
    if not Path(CHROMIUM).exists():
        raise HandoutError(f"No Chromium at {CHROMIUM}: install it (Debian: apt-get install chromium) "
                           "or set CHROMIUM=/path/to/chromium.")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else route.abort())
        page.goto(print_html.as_uri())
        page.wait_for_function("document.body.dataset.mermaid === 'done'", timeout=60_000)
        page.pdf(path=str(pdf), format="A4", print_background=True, outline=True, tagged=True,
                 margin={"top": "12mm", "bottom": "12mm", "left": "10mm", "right": "10mm"})
        browser.close()


def build(out: Path = OUT, pdf: bool = True) -> dict[str, object]:
    kinds = sources()
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
    built = {target_of(p) for p in all_sources} | {Path("index.html"), Path(PDF_NAME)}
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
    order = [target_of(p) for p in lessons] + [target_of(p) for p in kinds["docs"]]
    print_html = out / "print.html"
    print_html.write_text(print_page(pages, order), encoding="utf-8")
    if pdf:
        print_pdf(print_html, out / PDF_NAME)
    return {"pages": len(pages), "sections": [t.stem for t in order], "out": out}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"where to build (default {OUT.relative_to(ROOT)})")
    parser.add_argument("--no-pdf", action="store_true", help="build the site only")
    args = parser.parse_args(argv)
    try:
        result = build(args.out, pdf=not args.no_pdf)
    except HandoutError as exc:
        sys.exit(f"handout: {exc}")
    shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
    print(f"handout: {result['pages']} pages in {shown}/ (open {shown}/index.html)"
          + ("" if args.no_pdf else f"; PDF {shown}/{PDF_NAME} with {len(result['sections'])} sections"))


if __name__ == "__main__":
    main()
