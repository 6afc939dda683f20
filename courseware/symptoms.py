"""The symptom index, docs/symptoms.md: a way into the course from what a misbehaving agent shows.

    python -m courseware.symptoms             # is docs/symptoms.md up to date? (what `make stale` asks)
    python -m courseware.symptoms --write     # rewrite it (what `make regen` does)
    python -m courseware.symptoms --uncovered # the question rows no symptom lists yet

It is generated from docs/questions.md, never edited by hand. That file's `## Symptoms` section
holds one `### <what you see>` heading per symptom, a paragraph stating the rule behind it, and a
list of links, each one a link of the link column of a question row in the tables below it:

    ### A 400 about tool calls on the next message

    Every tool call in an `AIMessage` needs its `ToolMessage` ... (the rule, one or two sentences)

    - [langgraph#531](https://github.com/langchain-ai/langgraph/issues/531)

For each symptom the index states the rule, the rows' questions in their users' words (with their
links), the lesson sections that teach it and the practice that trains it:

- **sections** come from each row's "where taught" column: `12 § 2`, `12 §2 "A subsection"`,
  `12 § 2 ### A subsection`, `§ 3` (the lesson named before it), `03 § 7 ("A subsection")`,
  `10 § 4.1`; the number and the heading text are read from the notebook, the lesson from the
  course map (`courseware.course.LESSONS`), so a renumbered lesson or a renamed heading is followed
  by `make regen`. A lesson of the map that is not in this checkout yet (one being written) is
  linked without an anchor until it is;
- **labs**: each lab of the course map whose checks send a learner back to one of those sections
  (the `section(lesson, heading)` its checks name in `helpers/labs/labNN.py`; a lab that merely
  follows a teaching lesson may train something else, as lab 03 trains the error policy, not the
  concurrency lesson 03 also teaches);
- **a lesson's Practice questions** (`helpers.practice`) whose `section=` links one of the sections;
- **drills**: those the column names (`drill 45`, `Drills 57, 58`), and every drill of the drill
  bank whose "Taught in" line links one of the sections (a `##` section, or a heading under it).

Links into a notebook use JupyterLab's heading ids (the rendered heading, spaces as `-`, case kept;
see CONTRIBUTING, "Writing a lesson") and name the section in their text; `tests/test_links.py`
resolves every one, and `tests/test_symptoms.py` checks the index against this generator.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import quote, unquote

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "docs" / "questions.md"
INDEX = ROOT / "docs" / "symptoms.md"
SYMPTOMS_HEADING = "## Symptoms"

_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*((?:[^()\s]|\([^()\s]*\))+)\s*\)")
"""`[text](target)`; a target may hold balanced parentheses (an anchor such as `interrupt()`)."""
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.M | re.S)


# -- headings and their ids ----------------------------------------------------------------------------
def rendered(markdown: str) -> str:
    """A heading as it reads once rendered: code, emphasis, links and HTML reduced to their text."""
    text = re.sub(r"<[^>]+>", "", markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(`+)(.+?)\1", r"\2", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])[*_](?!\s)(.+?)(?<!\s)[*_](?![\w*])", r"\1", text)
    return text.replace("\\", "").strip()


def jupyterlab_anchor(heading: str) -> str:
    """The `#…` part of a link to a notebook heading, as JupyterLab names it: the rendered text with
    each space as `-`, case kept; parentheses, quotes and the like percent-encoded."""
    return quote(rendered(heading).replace(" ", "-"), safe="-._~:,'=?!*+;@$&/")


def github_slug(heading: str, seen: dict[str, int]) -> str:
    """GitHub's id for a Markdown heading (lower case, punctuation dropped, repeats numbered)."""
    slug = re.sub(r"[^\w\- ]", "", rendered(heading).lower()).replace(" ", "-")
    if slug in seen:
        seen[slug] += 1
        return f"{slug}-{seen[slug]}"
    seen[slug] = 0
    return slug


def _comparable(text: str) -> str:
    return " ".join(rendered(text).replace("`", "").lower().split())


@dataclass(frozen=True)
class Heading:
    level: int
    source: str  # the heading's Markdown, without the #s

    @property
    def text(self) -> str:
        return rendered(self.source)


@dataclass(frozen=True)
class Section:
    """A `##` heading of a notebook and the deeper headings under it."""

    heading: Heading
    subs: tuple[Heading, ...]

    @property
    def number(self) -> str | None:
        match = re.match(r"(\d+)\.\s", self.heading.text)
        return match.group(1) if match else None


def _markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "markdown"]


@cache
def _sections_cached(path: str, mtime_ns: int) -> tuple[Section, ...]:
    sections: list[tuple[Heading, list[Heading]]] = []
    for text in _markdown_cells(Path(path)):
        for match in _HEADING.finditer(_FENCE.sub(" ", text)):
            heading = Heading(len(match.group(1)), match.group(2))
            if heading.level == 2:
                sections.append((heading, []))
            elif heading.level > 2 and sections:
                sections[-1][1].append(heading)
    return tuple(Section(h, tuple(subs)) for h, subs in sections)


def sections_of(path: Path) -> tuple[Section, ...]:
    """The notebook's `##` sections, each with the headings under it, in order."""
    return _sections_cached(str(path), path.stat().st_mtime_ns)


# -- the course map ------------------------------------------------------------------------------------
def _lessons():
    from courseware.course import LESSONS

    return LESSONS


def _lesson_by_number(number: int):
    return next((row for row in _lessons() if row.number == number), None)


def _lesson_by_name(name: str):
    return next((row for row in _lessons() if row.name == name), None)


def _drill_bank():
    return next(row for row in _lessons() if row.title == "Drill bank")


@dataclass(frozen=True)
class Place:
    """Where something is taught: a lesson, one of its `##` sections, maybe a heading under it."""

    lesson: int
    section: int | None  # the index of the `##` section in the notebook (None: not in this checkout)
    sub: int | None = None  # the index of a heading under it
    wanted: str = ""  # what the column asked for, for a lesson not in this checkout

    def order(self) -> tuple:
        return (self.lesson, -1 if self.section is None else self.section,
                -1 if self.sub is None else self.sub, self.wanted)

    def link(self) -> str:
        """`[12 · 2. Progress from inside a tool](../notebooks/12_….ipynb#2.-Progress-…)`."""
        row = _lesson_by_number(self.lesson)
        target = f"../{row.file}"
        if self.section is None:
            return f"[{row.code} · {row.title}, {self.wanted}]({target})"
        section = sections_of(ROOT / row.file)[self.section]
        heading = section.heading if self.sub is None else section.subs[self.sub]
        text = _link_text(section.heading.source)
        if self.sub is not None:
            text += f" › {_link_text(heading.source)}"
        return f"[{row.code} · {text}]({target}#{jupyterlab_anchor(heading.source)})"


def _link_text(source: str) -> str:
    return rendered(source) if "[" in source or "]" in source else source


# -- where taught: "12 § 2. Title", "15 §6 deep dive, "Sub"", "§ 3", "drill 45", "Drills 57, 58" -------
_REF = re.compile(r"(?:(?<!\d)(?P<lesson>\d\d)\s*)?§\s*(?P<section>Sitting\s+\d+|\d+(?:\.\d+)?)")
_DRILLS = re.compile(r"\b[Dd]rills?\s+(?P<numbers>\d+(?:\s*(?:,|and)\s*\d+)*)")
_HINTS = re.compile(r'###\s+(?P<sub>[^;§"]+?)\s*(?=;|§|$)|"(?P<quoted>[^"]+)"|\((?P<paren>[^()"]+)\)')


@dataclass(frozen=True)
class Reference:
    lesson: int
    section: str  # "2", "4.1" or "Sitting 7"
    hints: tuple[str, ...]  # subsection names the column gives: ### X, "X", (X)


def parse_where_taught(cell: str) -> tuple[list[Reference], list[int]]:
    """The section references and drill numbers of a "where taught" cell."""
    refs = []
    lesson = None
    matches = list(_REF.finditer(cell))
    for i, match in enumerate(matches):
        if match.group("lesson"):
            lesson = int(match.group("lesson"))
        if lesson is None:
            continue
        end = matches[i + 1].start() if i + 1 < len(matches) else len(cell)
        tail = cell[match.end():end]
        # a lesson number right before the next §, as in "; 09 § 8", belongs to the next reference
        tail = re.sub(r"\d\d\s*$", "", tail)
        hints = tuple(h.strip() for m in _HINTS.finditer(tail) for h in m.groups() if h and h.strip())
        refs.append(Reference(lesson, " ".join(match.group("section").split()), hints))
    drills = [int(n) for m in _DRILLS.finditer(cell) for n in re.findall(r"\d+", m.group("numbers"))]
    return refs, drills


def resolve(ref: Reference) -> tuple[Place | None, str | None]:
    """The place a reference names, or a problem that says what is wrong with it."""
    row = _lesson_by_number(ref.lesson)
    if row is None:
        return None, (f"lesson {ref.lesson:02d} is not in the course map (courseware/course.py): write the "
                      "lesson's number as the map gives it")
    if not row.exists:
        return Place(ref.lesson, None, wanted=f"§ {ref.section}"), None
    sections = sections_of(ROOT / row.file)
    number, _, deeper = ref.section.partition(".")
    if ref.section.startswith("Sitting"):
        found = [i for i, s in enumerate(sections) if s.heading.text.startswith(ref.section + ":")]
    else:
        found = [i for i, s in enumerate(sections) if s.number == number]
    index = found[0] if found else None
    if index is None:
        return None, (f"{row.file} has no section {ref.section} (a `## {ref.section}. …` heading): write the "
                      "section's number as the lesson numbers it now")
    subs = sections[index].subs
    if deeper:
        numbered = [i for i, h in enumerate(subs) if re.match(rf"{re.escape(ref.section)}\.?\s", h.text)]
        if not numbered:
            return None, (f"{row.file} has no heading {ref.section} under section {number}: write the number "
                          "the lesson gives it")
        return Place(ref.lesson, index, numbered[0]), None
    for hint in ref.hints:  # a subsection named exactly, else a name (8+ characters) that begins one
        wanted = _comparable(hint)
        exact = [i for i, h in enumerate(subs) if _comparable(h.source) == wanted]
        begins = [i for i, h in enumerate(subs)
                  if len(wanted) > 8 and _comparable(h.source).startswith(wanted)]
        if exact or begins:
            return Place(ref.lesson, index, (exact or begins)[0]), None
    return Place(ref.lesson, index), None


# -- docs/questions.md: the rows and the symptoms -------------------------------------------------------
@dataclass(frozen=True)
class Row:
    line: int
    question: str
    links: tuple[tuple[str, str], ...]  # (label, url) of the link column
    link_cell: str
    taught: str


@dataclass
class Symptom:
    line: int
    title: str
    rule: str = ""
    links: list[tuple[int, str, str]] = field(default_factory=list)  # (line, label, url)


def _cells(line: str) -> list[str]:
    """A table row's cells; `\\|` is a `|` inside a cell."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip() for p in parts[1:-1]]


def _unescape(cell: str) -> str:
    return cell.replace("\\|", "|")


def parse_questions(text: str) -> tuple[list[Row], list[Symptom], list[str]]:
    """The question rows of every table, the symptoms, and what is wrong in the symptoms section."""
    lines = text.split("\n")
    rows: list[Row] = []
    symptoms: list[Symptom] = []
    problems: list[str] = []
    columns: dict[str, int] | None = None
    in_symptoms = False
    for number, line in enumerate(lines, 1):
        if line.startswith("## "):
            in_symptoms = line.strip() == SYMPTOMS_HEADING
            columns = None
            continue
        if in_symptoms:
            _symptom_line(number, line, symptoms, problems)
            continue
        if not line.startswith("|"):
            columns = None
            continue
        cells = _cells(line)
        if columns is None:
            names = [c.lower() for c in cells]
            if "link" in names and "where taught" in names:
                columns = {name: i for i, name in enumerate(names)}
                columns["question"] = next((i for i, n in enumerate(names) if n.startswith("question")), 0)
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the |---| line
        link_cell = cells[columns["link"]]
        rows.append(Row(
            number, _unescape(cells[columns["question"]]),
            tuple((label, url) for label, url in _LINK.findall(link_cell)),
            _unescape(link_cell), _unescape(cells[columns["where taught"]]),
        ))
    for symptom in symptoms:
        where = f"docs/questions.md line {symptom.line}: symptom \"{symptom.title}\""
        if not symptom.rule:
            problems.append(f"{where} states no rule: write one or two sentences under its heading, "
                            "before its list of question links")
        if not symptom.links:
            problems.append(f"{where} lists no question: add a line `- [label](url)` for each row of the "
                            "tables that shows it (copy the link from the row's link column)")
    titles = [s.title for s in symptoms]
    for title in sorted({t for t in titles if titles.count(t) > 1}):
        problems.append(f"docs/questions.md: two symptoms are called \"{title}\": merge them, or name "
                        "each by what a user sees")
    return rows, symptoms, problems


def _symptom_line(number: int, line: str, symptoms: list[Symptom], problems: list[str]) -> None:
    stripped = line.strip()
    if line.startswith("### "):
        symptoms.append(Symptom(number, line[4:].strip()))
    elif not symptoms or not stripped:
        return  # the section's own introduction, or a blank line
    elif stripped.startswith(("- ", "* ")):
        link = _LINK.fullmatch(stripped[2:].strip())
        if link is None:
            problems.append(f"docs/questions.md line {number}: \"{stripped}\" under the symptom "
                            f"\"{symptoms[-1].title}\" is not a question link: write `- [label](url)`, the "
                            "link exactly as a row's link column has it")
        else:
            symptoms[-1].links.append((number, link.group(1), link.group(2)))
    elif symptoms[-1].links:
        problems.append(f"docs/questions.md line {number}: text after the question links of the symptom "
                        f"\"{symptoms[-1].title}\": put the rule above the list, and nothing below it")
    else:
        symptoms[-1].rule = f"{symptoms[-1].rule}\n{stripped}" if symptoms[-1].rule else stripped


# -- the drill bank and the labs ------------------------------------------------------------------------
@dataclass(frozen=True)
class Drill:
    number: int
    source: str  # the heading's Markdown, "Drill 45. Progress from a tool, …"
    places: tuple[Place, ...]  # the sections its "Taught in" line links

    def link(self) -> str:
        bank = _drill_bank()
        return f"[{_link_text(self.source)}](../{bank.file}#{jupyterlab_anchor(self.source)})"


def _place_of_link(target: str) -> Place | None:
    """The section a link into a lesson points at (its `##` section for a deeper heading)."""
    file_part, _, anchor = target.partition("#")
    row = _lesson_by_name(Path(file_part).name.removesuffix(".ipynb"))
    if row is None or not row.exists or not anchor:
        return None
    anchor = unquote(anchor)
    for index, section in enumerate(sections_of(ROOT / row.file)):
        if section.heading.text.replace(" ", "-") == anchor:
            return Place(row.number, index)
        for sub, heading in enumerate(section.subs):
            if heading.text.replace(" ", "-") == anchor:
                return Place(row.number, index, sub)
    return None


def drills() -> dict[int, Drill]:
    """Every drill of the drill bank by number, with the places its "Taught in" line links."""
    bank = _drill_bank()
    if not bank.exists:
        return {}
    found = {}
    for text in _markdown_cells(ROOT / bank.file):
        heading = re.search(r"^#{2,4} (Drill (\d+)\..*?)\s*$", text, re.M)
        if heading is None:
            continue
        taught = re.search(r"Taught in:(.*?)(?:</sub>|$)", text, re.S)
        places = [_place_of_link(target) for _, target in _LINK.findall(taught.group(1))] if taught else []
        found[int(heading.group(2))] = Drill(int(heading.group(2)), heading.group(1),
                                             tuple(p for p in places if p is not None))
    return found


@dataclass(frozen=True)
class Lab:
    code: str
    file: str
    title: str
    places: tuple[Place, ...]  # the sections its checks send a learner back to

    def link(self) -> str:
        return f"[Lab {self.code} · {self.title}](../{self.file})"


def _check_sections(module: Path) -> list[tuple[str, str]]:
    """(lesson, heading) of every `section(lesson, heading)` a lab's checks name with constants."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}

    def value(arg: ast.expr) -> str | None:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
        return constants.get(arg.id) if isinstance(arg, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "section" and len(node.args) == 2:
            lesson, heading = (value(a) for a in node.args)
            if lesson and heading:
                found.append((lesson, heading))
    return found


def labs() -> list[Lab]:
    """Every lab of the course map, with the sections its checks name."""
    found = []
    for row in _lessons():
        if not row.lab:
            continue
        module = ROOT / "helpers" / "labs" / f"lab{row.code}.py"
        places = []
        for lesson, heading in _check_sections(module) if module.exists() else []:
            target = f"{lesson}.ipynb#{heading.replace('`', '').replace(' ', '-')}"
            place = _place_of_link(target)
            if place is not None:
                places.append(Place(place.lesson, place.section))
        title = row.lab.rsplit("/", 1)[-1]
        if (ROOT / row.lab).exists():
            first = _markdown_cells(ROOT / row.lab)[0].split("\n", 1)[0]
            title = re.sub(r"^#\s*Lab\s+\d+\s*[—-]\s*", "", first).strip() or title
        found.append(Lab(row.code, row.lab, title, tuple(places)))
    return found


@dataclass(frozen=True)
class Question:
    """A predict-and-check question of a lesson's Practice section."""

    lesson: int
    ask: str
    place: Place  # the section its `section=` links

    def link(self) -> str:
        row = _lesson_by_number(self.lesson)
        return f"[{row.code} · Practice](../{row.file}#Practice): {' '.join(self.ask.split())}"


def practice_questions() -> list[Question]:
    """Every `@practice.question(ask=..., section=...)` of the lessons in this checkout, in course order."""
    found = []
    for row in _lessons():
        if not row.exists:
            continue
        cells = json.loads((ROOT / row.file).read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if cell["cell_type"] != "code" or ".question(" not in source:
                continue
            lines = source.split("\n")  # IPython's % and ! lines are not Python
            code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "question"):
                    continue
                words = {k.arg: k.value.value for k in node.keywords
                         if isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)}
                place = _place_of_link(words.get("section", ""))
                if "ask" in words and place is not None:
                    found.append(Question(row.number, words["ask"], Place(place.lesson, place.section)))
    return found


# -- the index ------------------------------------------------------------------------------------------
@dataclass
class Entry:
    symptom: Symptom
    rows: list[Row]
    places: list[Place]
    labs: list[Lab]
    questions: list[Question]
    drills: list[Drill]


def entries(text: str | None = None) -> tuple[list[Entry], list[str]]:
    """Each symptom with its rows, sections, labs and drills; and every problem found on the way."""
    text = QUESTIONS.read_text(encoding="utf-8") if text is None else text
    rows, symptoms, problems = parse_questions(text)
    by_url: dict[str, list[Row]] = {}
    for row in rows:
        for _, url in row.links:
            by_url.setdefault(url, []).append(row)
    all_drills, all_labs, all_questions = drills(), labs(), practice_questions()
    out = []
    for symptom in symptoms:
        chosen: list[Row] = []
        for line, label, url in symptom.links:
            if url not in by_url:
                problems.append(
                    f"docs/questions.md line {line}: the symptom \"{symptom.title}\" lists [{label}]({url}), "
                    "which no question row links: add a row for that question to the table of the lesson "
                    "that answers it (question, link, what they got wrong, where taught), or copy the "
                    "link exactly from the row's link column, or remove the line")
            chosen += [row for row in by_url.get(url, []) if row not in chosen]
        places: list[Place] = []
        named: list[int] = []
        for row in chosen:
            refs, numbers = parse_where_taught(row.taught)
            bank = _drill_bank().number
            for ref in refs:
                if ref.lesson == bank:
                    continue  # the drill bank is practice; its drills name where they are taught
                place, problem = resolve(ref)
                if problem:
                    problems.append(f"docs/questions.md line {row.line}: where taught \"{row.taught}\": "
                                    f"{problem}")
                elif place not in places:
                    places.append(place)
            for number in numbers:
                if number not in all_drills:
                    if all_drills:
                        problems.append(f"docs/questions.md line {row.line}: where taught names drill "
                                        f"{number}, which the drill bank does not have: write the drill's "
                                        "number as its heading gives it")
                    continue
                named.append(number)
                places += [p for p in all_drills[number].places if p not in places]
            if not refs and not numbers:
                problems.append(f"docs/questions.md line {row.line}: where taught \"{row.taught}\" names no "
                                "section: write it as `NN § K. Title` (and `drill N` for a drill)")
        places.sort(key=Place.order)
        sections = {(p.lesson, p.section) for p in places if p.section is not None}
        entry_labs = [lab for lab in all_labs if any((p.lesson, p.section) in sections for p in lab.places)]
        entry_questions = [q for q in all_questions if (q.place.lesson, q.place.section) in sections]
        entry_drills = [d for n, d in sorted(all_drills.items())
                        if n in named or any((p.lesson, p.section) in sections for p in d.places)]
        out.append(Entry(symptom, chosen, places, entry_labs, entry_questions, entry_drills))
    return out, problems


HEADER = """\
# What you see, and where the course teaches it

<!-- Generated by `python -m courseware.symptoms` from docs/questions.md: edit that file (its
"Symptoms" section), then run `make regen`. `make stale` says when this file is out of date. -->

Your agent misbehaves today? Find what you see below. Each symptom states the rule behind it, the
real users' questions that show it (in their words, with their threads), the lesson sections that
teach the rule with live cells on the pinned releases, and the practice that trains it: a lab, a
lesson's predict-and-check questions, the drill bank's drills.
Every question, and what its asker got wrong, is in [questions.md](questions.md).

A link to a lesson names its section: JupyterLab opens a notebook at its top, so open the table of
contents (the list icon in the left sidebar) and click the section the link names.
"""


def markdown(text: str | None = None) -> tuple[str, list[str]]:
    """docs/symptoms.md as the generator writes it, and the problems found in docs/questions.md."""
    found, problems = entries(text)
    seen: dict[str, int] = {}
    github_slug(rendered(HEADER.split("\n", 1)[0][2:]), seen)
    contents = [f"- [{_link_text(e.symptom.title)}](#{github_slug(e.symptom.title, seen)})" for e in found]
    parts = [HEADER.rstrip("\n"), "\n".join(contents)]
    for entry in found:
        block = [f"## {entry.symptom.title}", "", entry.symptom.rule, "", "**What users asked**", ""]
        for row in entry.rows:
            block.append(f"- {row.question} — {row.link_cell}")
        block += ["", "**Where it is taught**", ""]
        block += [f"- {place.link()}" for place in entry.places] or ["- (no section named yet)"]
        block += ["", "**Practice**", ""]
        block += [f"- {lab.link()}" for lab in entry.labs]
        block += [f"- {question.link()}" for question in entry.questions]
        block += [f"- {drill.link()}" for drill in entry.drills]
        if not entry.labs and not entry.questions and not entry.drills:
            block.append("- No lab, practice question or drill trains this yet: the sections above, and "
                         "their *Check your understanding*.")
        parts.append("\n".join(block))
    return "\n\n".join(parts) + "\n", problems


def uncovered(text: str | None = None) -> list[Row]:
    """The question rows with a link that no symptom lists."""
    text = QUESTIONS.read_text(encoding="utf-8") if text is None else text
    rows, symptoms, _ = parse_questions(text)
    listed = {url for s in symptoms for _, _, url in s.links}
    return [row for row in rows if row.links and not listed & {url for _, url in row.links}]


def problems() -> list[str]:
    """What `make stale` reports: the index out of date, and what in docs/questions.md stops it."""
    wanted, found = markdown()
    current = INDEX.read_text(encoding="utf-8") if INDEX.exists() else ""
    stale = [] if current == wanted else ["docs/symptoms.md differs from what docs/questions.md generates"]
    return stale + found


def write() -> list[str]:
    """Rewrite docs/symptoms.md when it differs; the files written."""
    wanted, _ = markdown()
    if INDEX.exists() and INDEX.read_text(encoding="utf-8") == wanted:
        return []
    INDEX.write_text(wanted, encoding="utf-8")
    return ["docs/symptoms.md"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--write"]:
        print("\n".join(f"wrote {f}" for f in write()) or "docs/symptoms.md is up to date")
        left = problems()
    elif args == ["--uncovered"]:
        rows = uncovered()
        for row in rows:
            print(f"docs/questions.md line {row.line}: {row.links[0][0]} — {row.question[:80]}")
        print(f"{len(rows)} question rows with a link are under no symptom")
        return 0
    elif not args:
        left = problems()
    else:
        print("usage: python -m courseware.symptoms [--write | --uncovered]", file=sys.stderr)
        return 2
    print("\n".join(left) or "docs/symptoms.md is up to date")
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
