"""Build the workshop's slides and the live-coding copy of lesson 02, offline.

    make slides                        # build/slides/index.html, one deck per block, live/
    .venv/bin/python scripts/build_slides.py --live-only

The decks are nbconvert's `--to slides` (reveal.js) rendering of notebooks assembled from the
course's own sources: the opening deck from README's introduction, the agenda of
`courseware.workshop` and lesson 00's map; one short deck per agenda block from the cells of the
notebook parts that block covers (its title, the headings and opening prose of each section, a
lab's task), with the facilitator script's notes as speaker notes (press `s`). reveal.js is
fetched once from the npm registry into `.cache/slides/` and copied next to the decks, loaded as
classic scripts: the decks work opened from disk (`file://`) with no network.

The live-coding copy is lesson 02 with every code cell emptied and every output cleared, except
the Setup section's cells (imports and `%xmode`, not worth typing in front of a room), written to
`build/slides/live/`. Regenerated on every build, never edited by hand.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "slides"
OUT = ROOT / "build" / "slides"
CACHE = ROOT / ".cache" / "slides"
REVEAL_VERSION = "6.0.2"
REVEAL_FILES = ("dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "dist/plugin/notes.js",
                "LICENSE")
LIVE_LESSON = "notebooks/02_custom_async_tool_node.ipynb"

sys.path.insert(0, str(ROOT))


class SlidesError(RuntimeError):
    """Something the slides need is missing; the message says how to get it."""


def reveal_js() -> Path:
    """reveal.js's browser files, from the npm registry once, then from .cache/slides/."""
    cached = CACHE / f"reveal.js-{REVEAL_VERSION}"
    if all((cached / rel).exists() for rel in REVEAL_FILES):
        return cached
    npm = shutil.which("npm")
    if npm is None:
        raise SlidesError("The slides use reveal.js, fetched once from the npm registry: install Node.js "
                          "with npm (Debian: apt-get install npm), then run it again.")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([npm, "pack", f"reveal.js@{REVEAL_VERSION}", "--silent", "--pack-destination", tmp],
                       check=True, capture_output=True, text=True)
        with tarfile.open(next(Path(tmp).glob("reveal.js-*.tgz"))) as archive:
            for rel in REVEAL_FILES:
                member = archive.extractfile(f"package/{rel}")
                (cached / rel).parent.mkdir(parents=True, exist_ok=True)
                (cached / rel).write_bytes(member.read())
    return cached


# -- notebooks for the decks -----------------------------------------------------------------------
def _md(text: str, slide_type: str = "slide"):
    import nbformat

    return nbformat.v4.new_markdown_cell(text, metadata={"slideshow": {"slide_type": slide_type}})


def _notes(text: str):
    return _md(text, "notes")


def _first_paragraphs(source: str, limit: int = 2) -> str:
    """A markdown cell cut to its heading and first paragraphs (slides stay short)."""
    blocks = [b for b in re.split(r"\n\s*\n", source.strip()) if b.strip()]
    keep, prose = [], 0
    for block in blocks:
        keep.append(block)
        if not block.lstrip().startswith("#"):
            prose += 1
        if prose >= limit:
            break
    return "\n\n".join(keep)


def _deck(cells: list, title: str):
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"title": title, "language_info": {"name": "python"}})
    nb.cells = cells
    return nb


def _title_slide(block, workshop) -> str:
    end = workshop.clock(block.start + block.minutes)
    lines = [f"# {block.title}", "",
             f"**{workshop.clock(block.start)}–{end}** · {block.minutes} minutes · {block.does}"]
    if block.part is not None:
        lines += ["", f"`{block.part.notebook}`: Setup; " + "; ".join(block.sections)]
    if block.run_cells:
        counts = workshop.execution_counts(block.part.notebook, list(block.run_cells))
        lines += ["", "Run only the cells " + ", ".join(f"[{n}]" for n in counts)
                  + " (select them, *Run → Run Selected Cells*)."]
    return "\n".join(lines)


def block_deck(block, workshop):
    """A short deck for one block: its title slide, one slide per section it covers, the checkpoint."""
    script = workshop.SCRIPT.get(block.title, {})
    cells = [_md(_title_slide(block, workshop))]
    if script:
        cells.append(_notes("\n\n".join(f"**{k}**: {v}" for k, v in script.items()
                                         if isinstance(v, str))))
    if block.part is not None:
        source = workshop.cells_of(block.part.notebook)
        for heading, indices in workshop.sections(source):
            if heading not in block.sections:
                continue
            markdown = [source[i] for i in indices if source[i]["cell_type"] == "markdown"]
            if not markdown:
                continue
            limit = 4 if block.kind == "lab" else 2
            cells.append(_md(_first_paragraphs(workshop._source(markdown[0]), limit)))
            if block.kind == "lab":
                for extra in markdown[1:3]:
                    cells.append(_md(_first_paragraphs(workshop._source(extra), 3), "subslide"))
    end = workshop.clock(block.start + block.minutes)
    checkpoint = script.get("checkpoint", "the room is ready for the next block")
    cells.append(_md(f"## Checkpoint · {end}\n\n{checkpoint}"))
    return _deck(cells, block.title)


def opening_deck(workshop):
    """The opening: what the course is, today's agenda, the rules of the room, the pre-flight check."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    intro = readme.split("\n## ", 1)[0].split("\n", 1)[-1].strip()
    rows = ["| time | block | min |", "|---|---|---|"]
    for b in workshop.agenda():
        rows.append(f"| {workshop.clock(b.start)} | {b.title} | {b.minutes} |")
    cells = [
        _md("# toolnode-lab\n\n## How LangGraph executes tools: a three-hour workshop"),
        _md("## What this is\n\n" + _first_paragraphs(intro, 2)),
        _md("## Today\n\n" + "\n".join(rows)),
        _notes(workshop.SCRIPT.get("opening", {}).get("say", "")),
        _md("## How the room works\n\n"
            "- Everything runs **offline**: a scripted model, no key, no network.\n"
            "- Predict first, then run. Timings are ratios: yours differ from mine and still pass.\n"
            "- Stuck? A helper comes to you: put your laptop lid half down, or raise a hand.\n"
            "- Labs in pairs; `q1.check()` says what it expected, what it saw and where to look.\n"
            "- The handout (HTML and PDF) and the cheat sheets are on the USB stick."),
        _md("## Pre-flight: everyone runs this now\n\n```bash\nmake doctor\n```\n\n"
            "The last line must read `ready: the course runs offline here`. Anything else: a helper."),
    ]
    return _deck(cells, "Opening")


def wrap_up_deck(block, workshop):
    """The last deck: the homework in order, the cheat sheets, the feedback form."""
    from courseware.course import LESSONS

    titles = {row.file: f"{row.code} · {row.title}" for row in LESSONS}
    items = []
    for path in workshop.HOMEWORK:
        label = titles.get(path) or f"lab {Path(path).stem[:2]} · {Path(path).stem[3:].replace('_', ' ')}"
        items.append(f"1. {label} (`{path}`)")
    cells = [
        _md(_title_slide(block, workshop)),
        _md("## Homework, in this order\n\n" + "\n".join(items[:8])),
        _md("## Then\n\n" + "\n".join(items[8:])),
        _md("## Take home\n\n- the cheat sheets: one page each, English and 中文\n"
            "- the handout: every lesson with its outputs, from disk, no network\n"
            "- solutions: `labs/solutions/` in the repository; `q1.solution()` in a lab"),
        _md("## Feedback\n\nFive minutes, on paper or on the form's page: what worked, what did not, "
            "what to cut, what to add. Thank you."),
    ]
    return _deck(cells, block.title)


def decks(workshop) -> list[tuple[str, str, object]]:
    """(file stem, title, notebook) for every block except breaks; the first opens with the
    opening deck (the course, today's agenda, the rules of the room, the pre-flight check)."""
    out = []
    for i, block in enumerate(workshop.agenda(), start=1):
        if block.kind == "break":
            continue
        stem = f"{i:02d}-" + re.sub(r"[^a-z0-9]+", "-", block.title.lower()).strip("-")[:40].strip("-")
        nb = wrap_up_deck(block, workshop) if block.kind == "wrap-up" else block_deck(block, workshop)
        if block.start == 0:
            opening = opening_deck(workshop)
            opening.cells += nb.cells
            nb = opening
        out.append((stem, block.title, nb))
    return out


def export(nb, target: Path) -> None:
    from nbconvert import SlidesExporter

    exporter = SlidesExporter(template_name="workshop-slides",
                              extra_template_basedirs=[str(HERE / "templates")],
                              reveal_url_prefix="reveal.js", reveal_theme="white", exclude_input_prompt=True)
    for cell in nb.cells:  # nbconvert reads each cell's slide type from here
        cell.metadata.setdefault("slideshow", {"slide_type": "slide"})
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": target.stem}})
    target.write_text(body, encoding="utf-8")


# -- the live-coding copy --------------------------------------------------------------------------
def live_copy(source: Path = ROOT / LIVE_LESSON, dest_dir: Path = OUT / "live") -> Path:
    """Lesson 02 for live coding: code cells emptied (Setup's kept), every output cleared."""
    import nbformat

    nb = nbformat.read(source, as_version=4)
    in_setup = False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            in_setup = cell.source.splitlines()[0].strip() == "## Setup"
        if cell.cell_type == "code":
            if not in_setup:
                cell.source = ""
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    nb.cells[0].source = nb.cells[0].source.rstrip() + (
        "\n\n*Live-coding copy: the code cells are empty, to be typed in front of the room; the lesson "
        f"with its code and outputs is `{LIVE_LESSON}`.*")
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / source.name
    nbformat.write(nb, target)
    return target


def index_page(built: list[tuple[str, str]], workshop) -> str:
    starts = {b.title: (b.start, b.minutes) for b in workshop.agenda()}
    rows = []
    for stem, title in built:
        start, minutes = starts.get(title, (0, 0))
        when = f"{workshop.clock(start)}–{workshop.clock(start + minutes)}" if title in starts else "0:00"
        rows.append(f'<li><a href="{stem}.html">{html.escape(title)}</a> <span>{when}</span></li>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>toolnode-lab workshop slides</title>\n"
            "<style>body{font-family:system-ui,sans-serif;max-width:40em;margin:2em auto;line-height:1.6}"
            "li span{color:#666;margin-left:.5em}</style>\n</head>\n<body>\n"
            "<h1>toolnode-lab · workshop slides</h1>\n<ol>\n" + "\n".join(rows) + "\n</ol>\n"
            "<p>Press <kbd>s</kbd> in a deck for the speaker notes, <kbd>f</kbd> for full screen. "
            "The live-coding copy of lesson 02 is <code>live/02_custom_async_tool_node.ipynb</code>: "
            "open it in JupyterLab from the repository.</p>\n</body>\n</html>\n")


def build(out: Path = OUT) -> dict[str, object]:
    from courseware import workshop

    if out.exists():
        shutil.rmtree(out)
    (out / "reveal.js").mkdir(parents=True)
    reveal = reveal_js()
    for rel in REVEAL_FILES:
        (out / "reveal.js" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(reveal / rel, out / "reveal.js" / rel)
    shutil.copy(HERE / "workshop.css", out / "reveal.js" / "workshop.css")
    built = []
    for stem, title, nb in decks(workshop):
        export(nb, out / f"{stem}.html")
        built.append((stem, title))
    (out / "index.html").write_text(index_page(built, workshop), encoding="utf-8")
    live = live_copy(dest_dir=out / "live")
    return {"decks": [stem for stem, _ in built], "out": out, "live": live}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="where to build (default build/slides)")
    parser.add_argument("--live-only", action="store_true", help="only write the live-coding copy")
    args = parser.parse_args(argv)
    if args.live_only:
        print(f"slides: wrote {live_copy(dest_dir=args.out / 'live')}")
        return
    try:
        result = build(args.out)
    except SlidesError as exc:
        sys.exit(f"slides: {exc}")
    print(f"slides: {len(result['decks'])} decks in {args.out}/ (open {args.out}/index.html); "
          f"live-coding copy {result['live']}")


if __name__ == "__main__":
    main()

