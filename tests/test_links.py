"""Every link between the course's own files resolves: the file exists, and an `#anchor` names a
real heading of it.

Anchors follow the scheme of the place the link is followed in. A link written in a notebook is
clicked in JupyterLab, whose heading ids are the heading's text with each space replaced by `-`,
case kept (`## 8. Switching to a real model` → `#8.-Switching-to-a-real-model`, `## The course` →
`#The-course`); JupyterLab 4.6 scrolls a Markdown file to such an anchor, and does not match GitHub's
lower-case `#the-course`. A link written in a Markdown file is followed on GitHub (or in the
handout), whose ids are GitHub's slugs (`#the-course`), except links into a notebook, which only
JupyterLab follows to a heading. A link to a notebook of the course map that is not in this checkout
is skipped, as `tests/test_course.py` skips it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from courseware.course import LESSONS

ROOT = Path(__file__).resolve().parent.parent
MAPPED = {row.file for row in LESSONS}

SOURCES = sorted(
    [*ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), *ROOT.glob("labs/[0-9][0-9]_*.ipynb"),
     *ROOT.glob("labs/solutions/[0-9][0-9]_*.ipynb"), *ROOT.glob("docs/**/*.md"), *ROOT.glob("*.md"),
     *ROOT.glob("labs/*.md")]
)

_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1", re.S)
_LINK = re.compile(  # [text](target "title"); a target may hold balanced parentheses
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?((?:[^()\s<>]|\([^()\s]*\))+)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_HREF = re.compile(r"""<a\s[^>]*href=["']([^"']+)["']""", re.I)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


def _markdown_of(path: Path) -> list[str]:
    """The Markdown a file shows: a Markdown file's text; a notebook's markdown cells and the
    `text/markdown` outputs of its code cells."""
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    texts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            texts.append(source)
        for output in cell.get("outputs", []):
            markdown = output.get("data", {}).get("text/markdown")
            if markdown:
                texts.append("".join(markdown) if isinstance(markdown, list) else markdown)
    return texts


def links_of(path: Path) -> list[str]:
    """Every link target written in the file's Markdown (code blocks and code spans left out)."""
    found = []
    for text in _markdown_of(path):
        text = _CODE_SPAN.sub(" ", _FENCE.sub(" ", text))
        found += _LINK.findall(text) + _HREF.findall(text)
    return found


def _heading_text(markdown: str) -> str:
    """What a rendered heading reads: inline code, emphasis, links and HTML reduced to their text."""
    text = re.sub(r"<[^>]+>", "", markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(`+)(.+?)\1", r"\2", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])[*_](?!\s)(.+?)(?<!\s)[*_](?![\w*])", r"\1", text)
    return text.replace("\\", "").strip()


def headings_of(path: Path) -> list[str]:
    """The headings of a notebook's markdown cells, or of a Markdown file, as rendered text."""
    texts = _markdown_of(path) if path.suffix == ".md" else [
        "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "markdown"
    ]
    return [_heading_text(m.group(2)) for text in texts for m in _HEADING.finditer(_FENCE.sub(" ", text))]


def jupyterlab_id(heading: str) -> str:
    """JupyterLab 4's heading id: the rendered text, each space replaced by `-` (case kept)."""
    return heading.replace(" ", "-")


def github_ids(headings: list[str]) -> set[str]:
    """GitHub's heading slugs: lower case, punctuation dropped, spaces to `-`, repeats numbered."""
    seen: dict[str, int] = {}
    ids = set()
    for heading in headings:
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        ids.add(slug)
    return ids


def anchors_of(target: Path, followed_in_jupyterlab: bool) -> set[str]:
    headings = headings_of(target)
    if followed_in_jupyterlab or target.suffix == ".ipynb":
        return {jupyterlab_id(h) for h in headings}
    return github_ids(headings)


def broken_links(path: Path) -> list[str]:
    problems = []
    for href in links_of(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) or href.startswith("//"):
            continue  # a web address, mailto: and the like
        file_part, _, anchor = href.partition("#")
        target = (path.parent / unquote(file_part)).resolve() if file_part else path
        try:
            relative = str(target.relative_to(ROOT))
        except ValueError:
            problems.append(f"{href}: points outside the repository")
            continue
        if not target.exists():
            if relative not in MAPPED:
                problems.append(f"{href}: no such file {relative}")
            continue
        if not anchor or target.is_dir() or target.suffix not in (".md", ".ipynb"):
            continue
        anchors = anchors_of(target, followed_in_jupyterlab=path.suffix == ".ipynb")
        if unquote(anchor) not in anchors:
            scheme = "JupyterLab's" if path.suffix == ".ipynb" or target.suffix == ".ipynb" else "GitHub's"
            near = sorted(a for a in anchors if a.lower()[:12] == unquote(anchor).lower()[:12])
            problems.append(
                f"{href}: no heading of {relative} has the id #{anchor} under {scheme} scheme"
                + (f" (did you mean #{near[0]}?)" if near else "")
            )
    return problems


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_every_internal_link_and_anchor_resolves(path):
    problems = broken_links(path)
    assert not problems, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(problems)


def test_the_schemes():
    assert jupyterlab_id(_heading_text("8. Switching to a real `model`")) == "8.-Switching-to-a-real-model"
    assert github_ids(["The course", "The course", "How long things take?"]) == {
        "the-course", "the-course-1", "how-long-things-take"}
    assert links_of(ROOT / "README.md"), "the link scanner finds README's links"


_CELL_NUMBER = re.compile(r"\bcells? \d+(?:\s*(?:[–/-]|and)\s*\d+)?\b")


@pytest.mark.parametrize("source", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_no_cross_reference_names_a_cell_by_number(source):
    """A cell number goes stale the moment a cell is inserted above it: name the section instead."""
    found = [m.group(0) for text in _markdown_of(source) for m in _CELL_NUMBER.finditer(_FENCE.sub("", text))]
    assert not found, (
        f"{source.relative_to(ROOT)} refers to {found}: cell numbers move when a cell is inserted. Name "
        "the section instead (its heading's text, and a link to its anchor)."
    )
