"""Build the workshop's slides and the live-coding copy, offline.

    make slides                        # build/slides/index.html, one deck per block, live/
    .venv/bin/python scripts/build_slides.py --live-only
    .venv/bin/python scripts/build_slides.py --font   # remake the CJK subset (fonts-noto-cjk)

The decks are nbconvert's `--to slides` (reveal.js) rendering of notebooks assembled from
`courseware.workshop`: the welcome's deck (the course, today's agenda, the code of conduct and who
to tell, from docs/workshop/code-of-conduct.md, housekeeping, sticky notes, pairs); one deck per
block that walks its steps through the lesson's own cells (each section's heading and opening prose,
the code, its committed output, figures as images at the slide's full width), packed onto slides
readable from the back of a room (body 30 px, code 24 px at 1280×800; a code cell or an output too
long for one slide continues on the next; a plain-text table shows as a table, every column, its
rows continued under the header again; a section typed live shows its intro, then the code to
type); a highlights block says to open its generated notebook and Run All where its plan does; the
wrap-up's homework (first items, the rest by link), where the handout is and how the solutions reach
people. Speaker notes (press `s`) carry the facilitator's script. reveal.js is fetched once from
the npm registry into `.cache/slides/` and copied next to the decks, loaded as classic scripts: the
decks work opened from disk (`file://`) with no network.
Chinese quotes render from `slides/fonts/slides-cjk-subset.woff`, a subset of Noto Sans CJK SC (SIL
OFL 1.1, `fonts/OFL.txt`) holding only the characters the decks use; the build stops, saying how to
remake it, when a lesson gains one it lacks.

The live-coding copy is the lesson of the step typed live (`workshop.typed_steps()`) with every
output cleared, the typed cell collapsed and an empty cell below it to type into, written to
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
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "slides"
OUT = ROOT / "build" / "slides"
CACHE = ROOT / ".cache" / "slides"
REVEAL_VERSION = "6.0.2"
REVEAL_FILES = ("dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "dist/plugin/notes.js",
                "LICENSE")

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


# -- the bundled CJK font ---------------------------------------------------------------------------
FONTS = HERE / "fonts"
CJK_FONT = FONTS / "slides-cjk-subset.woff"
CJK_FAMILY = "Slides CJK"
CJK_SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
CJK_SOURCE_INDEX = 2  # Noto Sans CJK SC in the collection
_CJK = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef\u300c\u300d]")


def cjk_characters(text: str) -> set[str]:
    """The characters of `text` the bundled font must hold (CJK ideographs and punctuation)."""
    return set(_CJK.findall(text))


def font_characters(path: Path = CJK_FONT) -> set[str]:
    from fontTools.ttLib import TTFont

    return {chr(code) for code in TTFont(path).getBestCmap()}


def make_font(characters: set[str], target: Path = CJK_FONT) -> Path:
    """Subset Noto Sans CJK SC (SIL OFL 1.1) to `characters` with fontTools' pyftsubset, as WOFF."""
    if not CJK_SOURCE.exists():
        raise SlidesError(f"the font subset is made from {CJK_SOURCE}: install it (Debian: apt-get install "
                          "fonts-noto-cjk), then run `scripts/build_slides.py --font` again.")
    from fontTools import subset

    target.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(sorted(characters))
    subset.main([str(CJK_SOURCE), f"--font-number={CJK_SOURCE_INDEX}", f"--text={text}",
                 "--flavor=woff", "--layout-features=*", "--no-hinting", "--desubroutinize",
                 f"--output-file={target}"])
    return target


# -- notebooks for the decks -----------------------------------------------------------------------
ROWS = 17
"""What one slide holds, in rows of code (24 px type, 1.25 line height) under its heading; a line of
body text (30 px) counts 1.3 rows. The rendered decks are measured by tests/handout/test_slides.py."""
CODE_COLUMNS = 76
TEXT_COLUMNS = 62
ROW_PX = 30
"""A row's height in slide pixels (the slides are 1280×800 pixels, scaled to the screen)."""
CONTENT_PX = 1260
"""The width of a slide's content in slide pixels: a figure is shown at this width (as large as
fits: its height and what shares its slide at most `FIGURE_ROWS` rows)."""
FIGURE_ROWS = 19
"""A slide with a figure holds this many rows: a figure's height is known, not estimated as text's is."""
FIGURE_MARGIN = 0.4
TABLE_COLUMNS = 92
"""Characters of a table row across the slide (22 px monospace)."""
OUTPUT_MAX_LINES = 45
"""An output continues on as many slides as it needs, up to this many lines (three slides); a
longer one shows its first lines and says how many more the lesson holds."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(\"])")


def _md(text: str, slide_type: str = "slide"):
    import nbformat

    return nbformat.v4.new_markdown_cell(text, metadata={"slideshow": {"slide_type": slide_type}})


def _notes(text: str):
    return _md(text, "notes")


def _deck(cells: list, title: str):
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"title": title, "language_info": {"name": "python"}})
    nb.cells = cells
    return nb


def _rows(text: str, columns: int) -> int:
    return sum(max(1, -(-len(line) // columns)) for line in text.splitlines() or [""])


def _short(paragraph: str, limit: int = 230) -> str:
    """A paragraph cut to its first sentences under `limit` characters; a last sentence ending in a
    colon (it introduces the code below) is kept."""
    text = " ".join(paragraph.split())
    if len(text) <= limit:
        return text
    sentences = _SENTENCE.split(text)
    keep = [sentences[0]]
    for sentence in sentences[1:]:
        if len(" ".join(keep + [sentence])) > limit:
            break
        keep.append(sentence)
    if sentences[-1].endswith(":") and sentences[-1] not in keep:
        skipped = "…" if len(sentences) > 2 else ""  # an ellipsis only where sentences are left out
        keep = keep[:1] + [skipped, sentences[-1]] if len(keep[0]) + len(sentences[-1]) < 1.6 * limit \
            else ["…", sentences[-1]]
        keep = [k for k in keep if k]
    return " ".join(keep)


class Item:
    """One piece of a slide: text, code, an output or a figure, with its height in rows (a figure:
    also its width over its height, `aspect`, and the width it is shown at, in slide pixels)."""

    def __init__(self, kind: str, body: str, rows: float, sticky: bool = False, aspect: float = 0):
        self.kind, self.body, self.rows, self.sticky = kind, body, rows, sticky
        self.aspect, self.width = aspect, float(CONTENT_PX)


def _figure(png: str) -> Item:
    """A PNG figure at the content's full width, its height in rows from its aspect ratio."""
    import base64

    head = base64.b64decode(png[:32])
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    aspect = width / height if width and height else 2.0
    return Item("figure", png, CONTENT_PX / aspect / ROW_PX + FIGURE_MARGIN, aspect=aspect)


def _text_items(source: str) -> tuple[str, list[Item]]:
    """A markdown cell as (its `## ` heading or '', its prose items, each cut short)."""
    heading, items = "", []
    blocks = [b.strip() for b in re.split(r"\n\s*\n", source.strip()) if b.strip()]
    if blocks and blocks[0].startswith("## "):
        heading = blocks.pop(0).splitlines()[0][3:].strip()
    prose = [b for b in blocks if not b.startswith(("#", "|", "<", "```", "    ", ">"))]
    if not prose:
        return heading, items
    chosen = [prose[0]] if not prose[-1].rstrip().endswith(":") or len(prose) == 1 else [prose[0], prose[-1]]
    for block in chosen:
        if re.match(r"^(\d+\.|[-*]) ", block):  # a list: its first three items, each cut short
            entries: list[str] = []
            for line in block.splitlines():
                if re.match(r"^(\d+\.|[-*]) ", line):
                    entries.append(line)
                elif entries:  # an item's next line
                    entries[-1] += " " + line.strip()
            text = "\n".join(re.match(r"^(\d+\.|[-*]) ", e).group(0) + _short(e.split(" ", 1)[1], 120)
                             for e in entries[:3])
        else:
            text = _short(block)
        items.append(Item("text", text, 1.3 * _rows(text, TEXT_COLUMNS) + 0.4,
                          sticky=text.rstrip().endswith(":")))
    return heading, items


PREDICTION_LINE = re.compile(r"^· (no prediction yet|no guess written|you predict)\b.*\n?", re.M)
"""The lines `helpers.practice.predict` and `reveal` print for the notebook's reader: on the projector
the room says its prediction aloud, and the answer is the output above them."""


def _output_text(output: dict) -> str:
    if output["output_type"] == "stream":
        text = output["text"]
        text = PREDICTION_LINE.sub("", "".join(text) if isinstance(text, list) else text)
    elif output["output_type"] == "error":
        text = f"{output['ename']}: {output['evalue']}"
    else:
        data = output.get("data", {})
        text = data.get("text/markdown") or data.get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _display(line: str) -> str:
    """`line` with a NUL after each wide character, so that string positions are display columns
    (how `helpers.returns.text_table` aligns Chinese text)."""
    return "".join(c + ("\0" if unicodedata.east_asian_width(c) in "WF" else "") for c in line)


def text_table(text: str) -> tuple[list[str], list[str], list[list[str]], list[str]] | None:
    """A plain-text table in an output (a header, a rule of dashes per column, rows aligned under
    it, as `helpers.returns.text_table` and tabulate print them) as (the lines before it, its
    header, its rows, the lines after it); None when the output holds none."""
    lines = text.splitlines()
    for k in range(1, len(lines)):
        if not re.fullmatch(r"-+(  +-+)+", lines[k].rstrip()):
            continue
        starts = [m.start() for m in re.finditer(r"-+", lines[k])]

        def cells(line: str, starts: list[int] = starts) -> list[str] | None:
            shown = _display(line)
            if shown[:starts[0]].strip() or any(shown[s - 2:s].strip() for s in starts[1:]):
                return None  # something runs across a column's edge: not a row
            return [shown[a:b].replace("\0", "").strip()
                    for a, b in zip(starts, starts[1:] + [None], strict=True)]

        header = cells(lines[k - 1])
        if header is None or not all(header):
            continue
        rows = []
        for line in lines[k + 1:]:
            row = cells(line) if line.strip() else None
            if row is None:
                break
            rows.append(row)
        if rows:
            return lines[:k - 1], header, rows, lines[k + 1 + len(rows):]
    return None


def _table_rows(header: list[str], rows: list[list[str]]) -> list[float]:
    """Each row's height in slide rows (the header's first), its widest cells wrapping: columns
    keep their own width while the table fits `TABLE_COLUMNS`, else share what is left."""
    natural = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    room = TABLE_COLUMNS - 2 * len(header)  # each cell's padding
    widths = list(natural)
    while sum(widths) > room:
        widest = max(range(len(widths)), key=widths.__getitem__)
        widths[widest] = max(8, widths[widest] - (sum(widths) - room))
        if widths[widest] == 8:
            break
    return [1.07 * max(max(1, -(-len(c) // w)) for c, w in zip(row, widths, strict=True)) + 0.05
            for row in [header] + rows]


def _output_items(text: str, kind: str = "output") -> list[Item]:
    """An output, whole: a plain-text table as a table (every column; its rows continue on the
    next slides under the header again), the rest as preformatted text continuing on the next
    slides (an output longer than `OUTPUT_MAX_LINES` shows that many lines and says how many more
    the lesson holds)."""
    import html as _html

    table = text_table(text) if kind == "output" else None
    if table:
        before, header, rows, after = table
        items = _output_items("\n".join(before)) if "\n".join(before).strip() else []
        heights = _table_rows(header, rows)
        chunks: list[list[int]] = [[]]
        budget = ROWS - 1 - heights[0]
        parts = -(-sum(heights[1:]) // budget)  # as few slides as fit, rows shared evenly
        share = sum(heights[1:]) / parts
        for n, h in enumerate(heights[1:]):
            if chunks[-1] and sum(heights[1 + i] for i in chunks[-1]) + h > min(budget, share + 1.2):
                chunks.append([])
            chunks[-1].append(n)
        head = "".join(f"<th>{_html.escape(c)}</th>" for c in header)
        for chunk in chunks:
            body = "".join("<tr>" + "".join(f"<td>{_html.escape(c)}</td>" for c in rows[n]) + "</tr>"
                           for n in chunk)
            items.append(Item("table", f'<table class="output"><thead><tr>{head}</tr></thead>'
                                       f"<tbody>{body}</tbody></table>",
                              heights[0] + sum(heights[1 + n] for n in chunk) + 0.6))
        if "\n".join(after).strip():
            items += _output_items("\n".join(after))
        return items
    lines = text.splitlines()
    if len(lines) > OUTPUT_MAX_LINES:
        more = len(lines) - (OUTPUT_MAX_LINES - 1)
        lines = lines[:OUTPUT_MAX_LINES - 1] + [f"… {more} more lines in the lesson"]
    budget = ROWS - 2
    total = _rows("\n".join(lines), CODE_COLUMNS)
    share = total / -(-total // budget)
    chunks: list[list[str]] = [[]]
    for line in lines:
        if chunks[-1] and _rows("\n".join(chunks[-1] + [line]), CODE_COLUMNS) > min(budget, share + 1):
            chunks.append([])
        chunks[-1].append(line)
    return [Item(kind, f'<pre class="{kind}">{_html.escape(chr(10).join(chunk))}</pre>',
                 _rows("\n".join(chunk), CODE_COLUMNS) + 0.8) for chunk in chunks]


def _code_items(cell: dict, workshop, first: float = 0) -> list[Item]:
    """A code cell as its code (split into slide-sized parts, the first at most `first` rows when
    given) and its committed outputs."""
    source = workshop._source(cell).rstrip()
    items: list[Item] = []
    lines = source.splitlines()
    part: list[str] = []
    for line in lines + [None]:
        budget = (first or ROWS - 3) if not items else ROWS - 3
        if line is not None and _rows("\n".join(part + [line]), CODE_COLUMNS) <= budget:
            part.append(line)
            continue
        carry: list[str] = []
        blanks = [k for k, text in enumerate(part) if not text.strip()]
        if line is not None and blanks and blanks[-1] > len(part) // 3:  # cut at a blank line
            part, carry = part[:blanks[-1]], part[blanks[-1] + 1:]
        if part:
            items.append(Item("code", "\n".join(part), _rows("\n".join(part), CODE_COLUMNS) + 0.8))
        part = carry + ([line] if line is not None else [])
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "image/png" in data:
            png = data["image/png"]
            png = "".join(png) if isinstance(png, list) else png
            items.append(_figure(png.strip()))
            continue
        text = _output_text(output).rstrip("\n")
        if not text.strip():
            continue
        markdown = output.get("data", {}).get("text/markdown")
        if markdown and "\n|" in "\n" + text:  # a table: its first rows, links as their text, short cells
            rows = [ln for ln in text.splitlines() if ln.startswith("|")]
            def cells(line):
                out = []
                for c in line.strip("|").split("|"):
                    c = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", c.strip())
                    out.append(c if len(c) <= 28 else c[:28].rsplit(" ", 1)[0] + " …")
                return out
            keep = rows[:2 + 7]
            table = "\n".join("| " + " | ".join(cells(r)) + " |" for r in keep)
            if len(rows) > len(keep):
                table += f"\n\n*… {len(rows) - len(keep)} more rows in the lesson*"
            items.append(Item("table", table, 1.6 * len(keep) + 1.5))
            continue
        kind = "error" if output["output_type"] == "error" else "output"
        items += _output_items(text, kind)
    return items


def _render(item: Item) -> str:
    if item.kind == "code":
        return f"```python\n{item.body}\n```"
    if item.kind == "figure":
        width = "100%" if item.width >= CONTENT_PX else f"{item.width:.0f}px"
        return (f'<img class="figure" alt="the cell\'s figure" style="width: {width}" '
                f'src="data:image/png;base64,{item.body}">')
    return item.body


def _pack(heading: str, items: list[Item], label: str = "", continued: str = "") -> list[str]:
    """Items onto slides of at most `ROWS` rows, a text ending in a colon kept with what follows it
    (code or output), so no slide ends on a colon; each slide under the section's heading (the next
    ones under `continued`, or the heading, then "(continued)")."""
    # strict=False: with no items the second list is still [None] (1 against 0)
    for item, after in zip(items, items[1:] + [None], strict=False):
        if item.sticky and (after is None or after.kind == "text"):  # what it introduces is elsewhere
            item.body, item.sticky = item.body.rstrip()[:-1] + ".", False
    groups: list[list[Item]] = []
    for item in items:
        if groups and groups[-1][-1].sticky:
            groups[-1].append(item)
        else:
            groups.append([item])
    slides: list[list[Item]] = [[]]
    for group in groups:
        used = sum(i.rows for i in slides[-1])
        size = sum(i.rows for i in group)
        limit = FIGURE_ROWS if any(i.kind == "figure" for i in slides[-1] + group) else ROWS
        if slides[-1] and used + size > limit:
            slides.append([])
        slides[-1].extend(group)
    for slide in slides:  # a figure too tall for its slide: as wide as fits
        over = sum(i.rows for i in slide) - FIGURE_ROWS
        for figure in [i for i in slide if i.kind == "figure"][:1]:
            if over > 0:
                figure.rows -= over
                figure.width = min(CONTENT_PX, (figure.rows - FIGURE_MARGIN) * ROW_PX * figure.aspect)
    out = []
    for n, slide in enumerate(s for s in slides if s):
        title = (continued or heading) + " (continued)" if n else heading
        top = f"### {title}" + (f' <span class="step">{label}</span>' if label and not n else "")
        out.append("\n\n".join([top] + [_render(i) for i in slide]))
    return out


def _title_slide(block, workshop) -> str:
    lines = [f"# {block.title}", "",
             f"**{workshop.clock(block.start)}–{workshop.clock(block.end)}** · {block.minutes} minutes"
             + (f" ({block.teaching} teaching, {block.exercises} exercises)" if block.exercises else "")]
    if block.objectives:
        lines += ["", "You will be able to:", ""] + [f"- {o}" for o in block.objectives]
    return "\n".join(lines)


def _where(block, step, workshop) -> str:
    return workshop._where_label(block, step.where)


TYPE_IT = Item("text", "In the live-coding copy, type it in the empty cell under the lesson's collapsed "
                       "one, saying each line:", 2.6, sticky=True)


def _typed_after_intro(block, typed: set[str], workshop) -> list[tuple[object, list[int], str]]:
    """(step, its cell indices, the section's heading if another step holds it) in the plan's order,
    except that a section's cells before the cell typed live (its heading and intro) go with the typed
    step, so they come before its typing slides even when the plan lists the section's shown step
    after the typed one."""
    steps = [[step, list(workshop.step_cells(block, step)), ""] for step in block.steps]
    source = workshop.cells_of(block.part.notebook)
    for k, (step, indices, _) in enumerate(steps):
        if step.where not in typed or not indices:
            continue
        section = step.where.split(" ", 1)[0]
        for later in steps[k + 1:]:
            if later[0].where.split(" ", 1)[0] != section or later[0].where in typed:
                continue
            early = [i for i in later[1] if i < indices[0] and source[i]["cell_type"] == "markdown"]
            later[1] = [i for i in later[1] if i not in early]
            heads = [_text_items(workshop._source(source[i]))[0] for i in early
                     if source[i]["cell_type"] == "markdown"]
            later[2] = next((h for h in heads if h), later[2])
            indices[:0] = early
    return [(step, indices, section) for step, indices, section in steps if indices]


def block_deck(block, workshop):
    """One block's deck: its title and objectives, then each step's cells in order (the section's
    heading and opening prose, the code, its committed output and figures), the key points and the
    checkpoint. Speaker notes (press `s`) carry the facilitator's script."""
    script = workshop.SCRIPT.get(block.title, {})
    cells = [_md(_title_slide(block, workshop))]
    if script:
        cells.append(_notes("\n\n".join(f"**{k}**: {v}" for k, v in script.items() if isinstance(v, str))))
    run_all = _md(f"## Everyone: Run All\n\nOpen `{block.highlights}` (file browser: docs → workshop → "
                  "highlights), then *Run → Run All Cells*.\n\nIt holds only this block's cells and the "
                  "earlier ones they need.")
    if block.highlights and not any(s.where == "Setup" for s in block.steps):
        cells.append(run_all)
    typed = {s.where for b, s in workshop.typed_steps([block])}
    source = workshop.cells_of(block.part.notebook)
    mode_label = {"show": "on the projector", "type": "typed live", "own": "everyone runs it",
                  "pairs": "in pairs"}
    plan = _typed_after_intro(block, typed, workshop)
    for step, indices, section in plan:
        if block.highlights and step.where == "Setup":  # Run All when the plan gets there
            cells.append(run_all)
        heading, items = "", []
        introduces: list[Item] = []  # the prose of the markdown cell just before, if it ends on a colon
        for i in indices:
            cell = source[i]
            if cell["cell_type"] == "markdown":
                head, prose = _text_items(workshop._source(cell))
                heading = heading or head
                items += prose
                introduces = prose if prose and prose[-1].sticky else []
                continue
            if cell["cell_type"] == "code" and workshop._source(cell).strip():
                tags = cell.get("metadata", {}).get("tags", [])
                if "nbval-ignore-output" in tags and step.where == "Setup":
                    # the versions cell: not for the projector, nor the sentence that introduces it
                    items = [item for item in items if item not in introduces]
                elif step.where in typed:  # its code after the intro and TYPE_IT, the rest on the next
                    above = sum(i.rows for i in items if i.kind == "text") + TYPE_IT.rows + 0.8
                    items += _code_items(cell, workshop, first=ROWS - above if ROWS - above >= 5 else 0)
                else:
                    items += _code_items(cell, workshop)
            introduces = []
        where = _where(block, step, workshop)
        heading = heading or section or ("Setup" if step.where == "Setup" else where[:1].upper() + where[1:])
        where = heading if heading.lower() == where.lower() else where
        mode = mode_label.get(step.mode, step.mode)
        label = mode if heading == where else f"{where} · {mode}"  # no "Setup Setup · …"
        continued = ""
        if step.where in typed:
            continued = f"Typed live: {where}"
            if heading == where:  # no section intro before it
                heading, label = continued, ""
            items = [i for i in items if i.kind == "text"] + [
                Item(TYPE_IT.kind, TYPE_IT.body, TYPE_IT.rows, sticky=True)] + [
                i for i in items if i.kind == "code"]
        for k, slide in enumerate(_pack(heading, items, label, continued)):
            cells.append(_md(slide, "slide" if k == 0 else "subslide"))
        if step.note:
            cells.append(_notes(f"**{where} · {mode}**: {workshop.render(step.note)}"))
    if block.key_points:
        cells.append(_md("## Key points\n\n" + "\n".join(f"- {p}" for p in block.key_points)))
    checkpoint = script.get("checkpoint", "the room is ready for the next block")
    cells.append(_md(f"## Checkpoint · {workshop.clock(block.end)}\n\n"
                     f"{checkpoint[:1].upper()}{checkpoint[1:]}."))
    return _deck(cells, block.title)


CONDUCT = ROOT / "docs" / "workshop" / "code-of-conduct.md"
CONTACT_MISSING = "<name and contact: write them in docs/workshop/code-of-conduct.md>"


def _conduct_rules(text: str | None = None) -> list[str]:
    """The three rules' bold names from docs/workshop/code-of-conduct.md."""
    text = CONDUCT.read_text(encoding="utf-8") if text is None else text
    return re.findall(r"^\d+\. \*\*(.+?)\*\*", text, flags=re.M)


def conduct_contact(text: str | None = None) -> str:
    """Who to tell, as the instructor filled it into docs/workshop/code-of-conduct.md: the words after
    "in person or privately (…):" in its "If anything makes this room unwelcoming" paragraph. Still the
    template's `<name and contact …>`, that placeholder, so the slide shows it is not filled in."""
    text = CONDUCT.read_text(encoding="utf-8") if text is None else text
    paragraph = next((" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if "unwelcoming" in p), "")
    found = (re.search(r"privately(?: \([^)]*\))?:\s*(.+?)\.\s+We will", paragraph)
             or re.search(r"privately(?: \([^)]*\))?:\s*(.+?)\.?$", paragraph))
    contact = found.group(1).strip().strip("`").strip() if found else ""
    return contact or CONTACT_MISSING


def opening_deck(block, workshop):
    """The welcome: what the course is, today's agenda, the code of conduct and housekeeping, the
    sticky notes, pairs and JupyterLab started."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    intro = readme.split("\n## ", 1)[0].split("\n", 1)[-1].strip()
    rows = ["| time | block | min |", "|---|---|---|"]
    for b in workshop.agenda():
        rows.append(f"| {workshop.clock(b.start)} | {b.title.split(' · ')[0]} | {b.minutes} |")
    prose = [b for b in re.split(r"\n\s*\n", intro)
             if b.strip() and not b.lstrip().startswith(("#", "<", "[!", "![", ">"))]
    script = workshop.SCRIPT.get(block.title, {})
    cells = [
        _md("# toolnode-lab\n\n## How LangGraph executes tools: a three-hour workshop\n\n"
            f"{workshop.clock(block.start)}–{workshop.clock(workshop.LENGTH)}, breaks at the times shown"),
        _notes(script.get("say", "")),
        _md("## What this is\n\n" + (_short(prose[0], 330) if prose else "")),
        _md("## Today\n\n" + "\n".join(rows)),
        _md("## Code of conduct\n\n"
            + "\n".join(f"- {rule}" for rule in _conduct_rules()) + "\n"
            "- Anything unwelcoming: tell me or any helper, in person or privately, or "
            f'<span class="contact">{html.escape(conduct_contact())}</span>.\n'),
        _md("## Housekeeping\n\n- Exits, toilets, water: as shown on the wall.\n"
            "- No Wi-Fi and no API key needed today.\n"
            "- Questions and links: the shared notes."),
        _md("## Sticky notes\n\n"
            "- **Green** on your lid: done, all good.\n"
            "- **Red** on your lid: stuck. A helper comes to you.\n"
            "- At each break: a **minute card**, one thing that worked, one that did not."),
        _md("## Pairs, then JupyterLab\n\n- One laptop runs, the other reads the prediction aloud.\n\n"
            "```bash\nmake lab\n```\n\nThen open `notebooks/00_start_here.ipynb`."),
        _md(f"## Checkpoint · {workshop.clock(block.end)}\n\n"
            f"{script.get('checkpoint', '')[:1].upper()}{script.get('checkpoint', '')[1:]}."),
    ]
    return _deck(cells, block.title)


def wrap_up_deck(block, workshop):
    """The last deck: the feedback form, the homework (its first items, the rest by link), the
    cheat sheets, how the solutions reach people."""
    from courseware.course import LESSONS

    titles = {row.file: f"{row.code} · {row.title}" for row in LESSONS}
    items = []
    for path in workshop.HOMEWORK:
        label = titles.get(path) or f"lab {Path(path).stem[:2]} · {Path(path).stem[3:].replace('_', ' ')}"
        items.append(label)
    first = 5
    cells = [
        _md(_title_slide(block, workshop)),
        _md("## Feedback first\n\nFive minutes: the form on paper, and a last minute card. What worked, "
            "what did not, what to cut, what to add."),
        _md("## Homework, in this order\n\n" + "\n".join(f"1. {t}" for t in items[:first])
            + f"\n\n…then {len(items) - first} more, each lesson followed by its lab: the list is in "
              "`docs/workshop/README.md` (*homework*) and the shared notes."),
        _md("## Take home\n\n- the cheat sheets, English and 中文, to print\n"
            "- the handout: on the stick, in `handout/`: copy it at a break, or build it at home with "
            "`make handout`\n"
            "- the solutions: in the course repository (its address is in the shared notes). Clone it "
            "afresh at home, then `q1.solution()` prints them; a copy from the stick has none, and "
            "`git pull` there brings none (`docs/workshop/solutions.md`)"),
        _md("## Thank you"),
    ]
    return _deck(cells, block.title)


def decks(workshop) -> list[tuple[str, str, object]]:
    """(file stem, title, notebook) for every block but the breaks; the welcome's is the opening deck."""
    out = []
    for i, block in enumerate(workshop.agenda(), start=1):
        if block.kind == "break":
            continue
        stem = f"{i:02d}-" + re.sub(r"[^a-z0-9]+", "-", block.title.lower()).strip("-")[:40].strip("-")
        if block.kind == "welcome":
            nb = opening_deck(block, workshop)
        elif block.kind == "wrap-up":
            nb = wrap_up_deck(block, workshop)
        else:
            nb = block_deck(block, workshop)
        out.append((stem, block.title, nb))
    return out


def deck_text(nb) -> str:
    return "\n".join(c.source for c in nb.cells)


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
def _typed(workshop) -> list[tuple[object, object, int]]:
    """(block, step, cell index) for every step typed live (`workshop.typed_steps()`)."""
    return [(b, s, workshop.step_cells(b, s)[0]) for b, s in workshop.typed_steps()]


def live_lesson(workshop=None) -> str:
    if workshop is None:
        from courseware import workshop
    return _typed(workshop)[0][0].part.notebook


def live_copy(source: Path | None = None, dest_dir: Path = OUT / "live") -> Path:
    """The lesson of the block typed live, for live coding: each typed cell collapsed (its source
    hidden, one click shows it) with an empty cell below it to type into; every output cleared."""
    import nbformat

    from courseware import workshop

    typed = [t for t in _typed(workshop)]
    source = source or ROOT / typed[0][0].part.notebook
    nb = nbformat.read(source, as_version=4)
    original = workshop.cells_of(ROOT / typed[0][0].part.notebook)
    wanted = {workshop._source(original[i]) for b, s, i in typed
              if (ROOT / b.part.notebook).resolve() == (ROOT / typed[0][0].part.notebook).resolve()}
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
        cells.append(cell)
        if cell.cell_type == "code" and cell.source in wanted:
            cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            cell.metadata["jupyter"]["outputs_hidden"] = True
            name = next(iter(workshop._names(cell.source)[0] & {s.where.split(" ", 1)[-1]
                                                               for _, s, _ in typed}), "it")
            note = nbformat.v4.new_markdown_cell(
                f"**Type `{name}` here**, in the empty cell below, saying each line. The lesson's cell "
                "above is collapsed: click its bar to show it if you fall behind, or run it instead.")
            note.metadata["live_copy"] = "note"
            typed_cell = nbformat.v4.new_code_cell("")
            typed_cell.metadata["live_copy"] = "type here"
            cells += [note, typed_cell]
    nb.cells = cells
    lesson = source.relative_to(ROOT) if source.is_relative_to(ROOT) else source.name
    nb.cells[0].source = nb.cells[0].source.rstrip() + (
        "\n\n*Live-coding copy: every output cleared; the cell typed in the room is collapsed, with an "
        f"empty cell below it to type into. The lesson itself is `{lesson}`.*")
    for i, cell in enumerate(nb.cells):  # ids unique and stable
        cell.id = f"live-{i}" if cell.metadata.get("live_copy") else cell.get("id", f"live-{i}")
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / source.name
    nbformat.write(nb, target)
    return target


def index_page(built: list[tuple[str, str]], workshop) -> str:
    starts = {b.title: (b.start, b.minutes) for b in workshop.agenda()}
    rows = []
    for stem, title in built:
        start, minutes = starts.get(title, (0, 0))
        when = f"{workshop.clock(start)}–{workshop.clock(start + minutes)}"
        rows.append(f'<li><a href="{stem}.html">{html.escape(title)}</a> <span>{when}</span></li>')
    live = Path(live_lesson(workshop)).name
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>toolnode-lab workshop slides</title>\n"
            "<style>body{font-family:system-ui,sans-serif;max-width:40em;margin:2em auto;line-height:1.6}"
            "li span{color:#666;margin-left:.5em}</style>\n</head>\n<body>\n"
            "<h1>toolnode-lab · workshop slides</h1>\n<ol>\n" + "\n".join(rows) + "\n</ol>\n"
            "<p>Press <kbd>s</kbd> in a deck for the speaker notes, <kbd>f</kbd> for full screen. "
            f"The live-coding copy is <code>live/{live}</code>: open it in JupyterLab from the "
            "repository.</p>\n</body>\n</html>\n")


def build(out: Path = OUT) -> dict[str, object]:
    from pygments.formatters import HtmlFormatter

    from courseware import workshop

    all_decks = decks(workshop)
    needed = set().union(*(cjk_characters(deck_text(nb)) for _, _, nb in all_decks))
    missing = needed - font_characters() if CJK_FONT.exists() else needed
    if missing:
        raise SlidesError(f"the bundled font {CJK_FONT.relative_to(ROOT)} lacks {''.join(sorted(missing))}: "
                          "run `.venv/bin/python scripts/build_slides.py --font` and commit it.")
    if out.exists():
        shutil.rmtree(out)
    (out / "reveal.js").mkdir(parents=True)
    reveal = reveal_js()
    for rel in REVEAL_FILES:
        (out / "reveal.js" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(reveal / rel, out / "reveal.js" / rel)
    css = (HERE / "workshop.css").read_text(encoding="utf-8")
    css += "\n/* code colours: pygments' default style */\n" + HtmlFormatter().get_style_defs(".highlight")
    (out / "reveal.js" / "workshop.css").write_text(css, encoding="utf-8")
    (out / "reveal.js" / "fonts").mkdir()
    for path in FONTS.iterdir():
        shutil.copy(path, out / "reveal.js" / "fonts" / path.name)
    built = []
    for stem, title, nb in all_decks:
        export(nb, out / f"{stem}.html")
        built.append((stem, title))
    (out / "index.html").write_text(index_page(built, workshop), encoding="utf-8")
    live = live_copy(dest_dir=out / "live")
    return {"decks": [stem for stem, _ in built], "out": out, "live": live, "characters": needed}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT, help="where to build (default build/slides)")
    parser.add_argument("--live-only", action="store_true", help="only write the live-coding copy")
    parser.add_argument("--font", action="store_true",
                        help=f"remake {CJK_FONT.relative_to(ROOT)} from the characters the decks use")
    args = parser.parse_args(argv)
    try:
        if args.font:
            from courseware import workshop

            chars = set().union(*(cjk_characters(deck_text(nb)) for _, _, nb in decks(workshop)))
            target = make_font(chars)
            print(f"slides: {target.relative_to(ROOT)}: {len(chars)} characters, "
                  f"{target.stat().st_size // 1024} KB")
            return
        if args.live_only:
            print(f"slides: wrote {live_copy(dest_dir=args.out / 'live')}")
            return
        result = build(args.out)
    except SlidesError as exc:
        sys.exit(f"slides: {exc}")
    print(f"slides: {len(result['decks'])} decks in {args.out}/ (open {args.out}/index.html); "
          f"live-coding copy {result['live']}")


if __name__ == "__main__":
    main()
