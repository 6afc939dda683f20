"""Every file the course generates from another, in one list: what is stale, and one command for all.

    make stale     # = python -m courseware.derived stale: each out-of-date item and the command that fixes it
    make regen     # = python -m courseware.derived regen: rewrite every derived file, in dependency order

A derived file is one a person should never have to keep in step by hand:

- versions in prose, from `requirements.txt` (`fix_versions` below);
- counts and lesson numbers in prose, from the course map (`fix_counts` below);
- each lesson's stated times and navigation lines, and the time column of labs/README.md, from the
  estimator and the map;
- the lab starters `labs/NN_*.ipynb`, from `labs/solutions/` (`make labs-build`);
- README's course table and tracks (`python -m courseware.course --write-readme`);
- the workshop kit printed from its plan: the guide's agenda, the facilitator's script, the run
  sheet, the feedback form, the notes template, the highlights notebooks (`make workshop-guide`);
- the doctor's sample in docs/workshop/preflight.md (`python -m courseware.doctor --update-sample`);
- docs/compatibility.md, from the record `make compat` writes (`python scripts/compat.py --table-only`);
- lesson 00's outputs, which show the map, the tracks and the agenda live
  (`make notebook NB=notebooks/00_start_here.ipynb`).

Prose facts are rewritten in place: a mention of the previous pin becomes the new pin (any other
version that is neither the pin, its X.Y series nor one of `HISTORICAL` is reported for a person to
decide); a count or lesson number becomes the map's. `tests/test_derived.py` fails while anything is
stale and names the command that fixes it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent

# -- where prose lives -------------------------------------------------------------------------------
PROSE_GLOBS = ("README.md", "CONTRIBUTING.md", "docs/**/*.md", "labs/README.md", "helpers/**/*.py",
               "courseware/**/*.py")
NOTEBOOK_GLOBS = ("notebooks/[0-9][0-9]_*.ipynb", "labs/solutions/[0-9][0-9]_*.ipynb")
GENERATED_ELSEWHERE = {"docs/compatibility.md", "docs/bench/results.md", "courseware/derived.py"}
"""Records of a run on other versions (their own commands write them), and this file's examples."""


def _files(globs: tuple[str, ...]) -> list[Path]:
    found = {p for pattern in globs for p in ROOT.glob(pattern) if p.is_file()}
    return sorted(p for p in found if p.relative_to(ROOT).as_posix() not in GENERATED_ELSEWHERE)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _rewrite_markdown(path: Path, fix: Callable[[str], str]) -> bool:
    """Apply `fix` to a Markdown file, or to every Markdown cell of a notebook; True when it changed."""
    if path.suffix != ".ipynb":
        text = path.read_text(encoding="utf-8")
        new = fix(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
        return new != text
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            new = fix(cell.source)
            changed |= new != cell.source
            cell.source = new
    if changed:
        from courseware.nbtools import write

        write(path, nb)
    return changed


def _markdown_of(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


# -- versions ----------------------------------------------------------------------------------------
HISTORICAL: dict[str, set[str]] = {
    # the compatibility matrix's releases (scripts/compat.py) and the releases a lesson names
    "langgraph": {"0.6", "0.6.11", "1.0", "1.0.0", "1.0.5", "1.0.6", "1.0.10", "1.1.4", "1.1.10", "1.2.20"},
    "langgraph-prebuilt": {"1.0", "1.0.0", "1.0.1", "1.0.2", "1.0.8", "1.0.11", "1.0.13", "1.1.0", "1.1.1",
                           "1.1.2"},
    "langchain-mcp-adapters": {"0.3.0"},
    "langchain-core": {"1.0.4", "1.8.2"},
}
"""Releases the prose names on purpose besides the pins (a behaviour that changed there, the release
matrix, the doctor's drift examples). `make stale` lists any other version that is not the pin or its
X.Y series; `make regen` rewrites only mentions of the previous pin (`previous_pins`)."""


def pins(text: str | None = None) -> dict[str, str]:
    """Each package's version in the lock (`text`, default requirements.txt; the first pin where
    markers differ), by canonical name."""
    from courseware.platforms import parse_lock, read_lock

    found: dict[str, str] = {}
    for pin in read_lock() if text is None else parse_lock(text, strict=False):
        found.setdefault(pin.name, pin.version)
    return found


def previous_pins() -> dict[str, str]:
    """The lock before its latest change: HEAD's while requirements.txt has uncommitted changes, else
    the one before the last commit that changed it ({} when git cannot say)."""
    from courseware.nbtools import git

    def shown(rev: str) -> str:
        run = git("show", f"{rev}:requirements.txt")
        return run.stdout if run.returncode == 0 else ""

    if git("status", "--porcelain", "--", "requirements.txt").stdout.strip():
        text = shown("HEAD")
    else:
        commits = git("log", "-2", "--format=%H", "--", "requirements.txt").stdout.split()
        text = shown(commits[1]) if len(commits) == 2 else ""
    return pins(text) if text else {}


def version_pattern(names) -> re.Pattern:
    """A package name (any case, `-` or `_`), white space or `==` (a line break too), an optional `v`,
    then X.Y or X.Y.Z; a full stop after it ends the sentence."""
    alternatives = sorted((re.sub(r"\\-", "[-_]", re.escape(n)) for n in names), key=len, reverse=True)
    return re.compile(r"(?<![\w/.-])(" + "|".join(alternatives) + r")(\s+|==)(v?)(\d+\.\d+(?:\.\d+)?)"
                      r"(?!\.?\d)(?![\w-])", re.I)


def _version_ok(package: str, version: str, pinned: dict[str, str]) -> bool:
    pin = pinned.get(package)
    if pin is None or version in HISTORICAL.get(package, ()):
        return True
    return version == pin or (version.count(".") == 1 and pin.startswith(version + "."))


def _drift_example(text: str, match: re.Match) -> bool:
    """`langchain-core 1.8.2 (want 1.8.3)`: the doctor's drift report quoted as an example."""
    return text[match.end():match.end() + 7] == " (want "


def fix_versions(text: str, pinned: dict[str, str],
                 previous: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """`text` with each mention of a previous pin replaced by the pin, and every stale mention.

    A mention is stale when it is neither the pin, nor its X.Y series, nor one of `HISTORICAL`.
    Only a mention of exactly the previous pin is rewritten; any other (an older series, a release
    the prose means on purpose) is left for a person: pin it, or add it to `HISTORICAL`.
    """
    from courseware.platforms import canonical

    previous = previous or {}
    stale_mentions = []

    def one(match: re.Match) -> str:
        name, sep, v, version = match.groups()
        package = canonical(name)
        if _version_ok(package, version, pinned) or _drift_example(text, match):
            return match.group(0)
        shown = " ".join(match.group(0).split())
        if previous.get(package) == version:
            stale_mentions.append(f"'{shown}' (the lock pins {package} {pinned[package]}; `make regen` "
                                  "rewrites it)")
            return f"{name}{sep}{v}{pinned[package]}"
        stale_mentions.append(f"'{shown}' (the lock pins {package} {pinned[package]}): write the pin, or "
                              f"add {version} to HISTORICAL in courseware/derived.py if the text means it")
        return match.group(0)

    return version_pattern(pinned).sub(one, text), stale_mentions


def version_problems() -> list[str]:
    pinned, previous = pins(), previous_pins()
    return [f"{_rel(path)}: {problem}" for path in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            for problem in fix_versions(_markdown_of(path), pinned, previous)[1]]


def write_versions() -> list[str]:
    pinned, previous = pins(), previous_pins()
    return [_rel(p) for p in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            if _rewrite_markdown(p, lambda text: fix_versions(text, pinned, previous)[0])]


# -- counts and lesson numbers -----------------------------------------------------------------------
_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
WORDS = tuple(_UNITS) + tuple(
    tens + (f"-{unit}" if unit != "zero" else "")
    for tens in ("twenty", "thirty") for unit in _UNITS[:10]
)
"""0–39 as words: `WORDS[21] == "twenty-one"`."""


def as_before(old: str, value: int) -> str:
    """`value` written the way `old` was: digits, a word, or a capitalised word."""
    if old.isdigit():
        return f"{value:0{len(old)}d}" if old.startswith("0") else str(value)
    word = WORDS[value] if value < len(WORDS) else str(value)
    return word.capitalize() if old[:1].isupper() else word


def course_facts() -> dict[str, int]:
    """The counts and lesson numbers prose states, from the course map (and the drill bank)."""
    from courseware.course import LESSONS

    by_title = {row.title: row.number for row in LESSONS}
    drills = LESSONS[by_title["Drill bank"]]
    text = _markdown_of(ROOT / drills.file)
    return {
        "notebooks": len(LESSONS),
        "labs": sum(1 for row in LESSONS if row.lab),
        "last": LESSONS[-1].number,
        "last teaching": min(by_title["Mock interview"], by_title["Drill bank"]) - 1,
        "mock interview": by_title["Mock interview"],
        "drill bank": by_title["Drill bank"],
        "drills": len(re.findall(r"^#{2,4} Drill\b", text, flags=re.M)),
        "sittings": len(re.findall(r"^## Sitting \d+:", text, flags=re.M)),
    }


NUMBER = r"(?P<n>\d+|" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")"
_ = r"\s+"  # a space in the prose, or a line break where it was wrapped
COUNT_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (fact, re.compile(pattern, re.I)) for fact, pattern in (
        # each names the course-level phrase exactly, so that ordinary prose ("these two notebooks")
        # never matches; the number is the group `n`, the rest is context that stays as it is
        ("notebooks", rf"\b{NUMBER}(?={_}notebooks(?::|{_}—|{_}\()\s*lessons{_}00)"),
        ("labs", rf"\ba{_}lab{_}after{_}{NUMBER}(?={_}lessons{_}\(a{_}starter)"),
        ("labs", rf"\b{NUMBER}(?={_}lessons{_}followed{_}by{_}a{_}lab\b)"),
        ("labs", rf"\bA{_}lab{_}follows{_}{NUMBER}(?={_}of{_}the{_}lessons\b)"),
        ("last teaching", rf"\blessons{_}00–(?P<n>\d\d)(?=,?{_}(?:the{_})?mock{_}interview)"),
        ("last teaching", rf"\){_}follow{_}lesson{_}(?P<n>\d\d)(?={_}in{_}order)"),
        ("last", rf"\b00{_}→{_}(?P<n>\d\d)(?={_}in{_}order)"),
        ("last", r"\b00_…\s+to\s+(?P<n>\d\d)(?=_…)"),
        ("mock interview", rf"\bmock{_}interview{_}\((?P<n>\d\d)(?=\))"),
        ("mock interview", rf"\bthe{_}mock{_}interview{_}(?P<n>\d\d)(?=,{_}the{_}drill{_}bank)"),
        ("drill bank", rf"\bdrill{_}bank{_}\((?P<n>\d\d)(?=\))"),
        ("drill bank", rf"\bdrill{_}bank's{_}sittings{_}\((?P<n>\d\d)(?=\))"),
        ("drill bank", rf",{_}the{_}drill{_}bank{_}(?P<n>\d\d)(?=\))"),
        ("drills", rf"\b(?P<n>\d+)(?={_}drills{_}in{_}\w+{_}sittings\b)"),
        ("drills", rf"\bis{_}(?P<n>\d+)(?={_}such{_}drills,{_}in{_}\w+{_}sittings\b)"),
        ("sittings", rf"\d{_}drills{_}in{_}{NUMBER}(?={_}sittings\b)"),
        ("sittings", rf"such{_}drills,{_}in{_}{NUMBER}(?={_}sittings\b)"),
        ("sittings", rf"\bthe{_}{NUMBER}(?={_}sittings{_}total\b)"),
    )
)
"""Each pattern's group `n` is a number the prose states; the fact it must equal comes from the map."""


def fix_counts(text: str, facts: dict[str, int]) -> tuple[str, list[str]]:
    """`text` with every count and lesson number the map decides set to the map's, and the old ones."""
    wrong = []
    for fact, pattern in COUNT_RULES:
        def one(match: re.Match, fact: str = fact) -> str:
            old = match.group("n")
            right = as_before(old, facts[fact])
            if old != right:
                context = " ".join(match.string[max(0, match.start() - 30):match.end() + 20].split())
                wrong.append(f"'…{context}…' says {old}; the course has {facts[fact]} ({fact})")
            start, end = match.span("n")
            whole = match.group(0)
            return whole[:start - match.start()] + right + whole[end - match.start():]
        text = pattern.sub(one, text)
    return text, wrong


_NOTEBOOK = r"(?!\.\./labs/|labs/)[^)\s]*?(?P<nn{n}>\d\d)_[a-z0-9_]+\.ipynb(?:#[^)\s]*)?"
LESSON_LINK = re.compile(
    r"\[(?P<pre>(?:[Ll]esson )?)(?P<code>\d\d)(?P<label>(?: · | §|, )[^\]]*)\]\((?P<target>"
    + _NOTEBOOK.format(n="") + r")\)"
    r"|\[(?P<text>[^\]]+)\]\((?P<target2>" + _NOTEBOOK.format(n="2") + r")\) \((?P<after>\d\d)\)"
    r"|(?P<pre3>\b[Ll]esson )(?P<code3>\d\d)(?P<mid3> \(\[[^\]]*\]\()(?P<target3>"
    + _NOTEBOOK.format(n="3") + r")\)"
)
"""A link to a lesson that states its number: `[03 · Title](03_x.ipynb)`, `[13 §10](13_x.ipynb#…)`,
`[lesson 05, section …](05_x.ipynb#…)`, `[title](16_x.ipynb) (16)` or `Lesson 07 ([section …](07_x.ipynb#…))`.
Links into `labs/` are left alone (a number after one is its minutes)."""


def fix_link_numbers(text: str) -> tuple[str, list[str]]:
    """`text` with the number a lesson link states set to the linked notebook's, and the old ones."""
    wrong = []

    def one(match: re.Match) -> str:
        group = match.groupdict()
        if group["code"] is not None:
            stated, linked = group["code"], group["nn"]
            right = f"[{group['pre']}{linked}{group['label']}]({group['target']})"
        elif group["after"] is not None:
            stated, linked = group["after"], group["nn2"]
            right = f"[{group['text']}]({group['target2']}) ({linked})"
        else:
            stated, linked = group["code3"], group["nn3"]
            right = f"{group['pre3']}{linked}{group['mid3']}{group['target3']})"
        if stated == linked:
            return match.group(0)
        wrong.append(f"'{match.group(0)[:70]}' says {stated}; it links {linked}")
        return right

    return LESSON_LINK.sub(one, text), wrong


def count_problems() -> list[str]:
    facts = course_facts()
    return [f"{_rel(path)}: {problem}" for path in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            for text in [_markdown_of(path)]
            for problem in fix_counts(text, facts)[1] + fix_link_numbers(text)[1]]


def write_counts() -> list[str]:
    facts = course_facts()
    return [_rel(p) for p in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            if _rewrite_markdown(p, lambda text: fix_link_numbers(fix_counts(text, facts)[0])[0])]


# -- each lesson's stated times and navigation line --------------------------------------------------
TIME_LINE = re.compile(r"(\*\*Time:\*\* about )(\d+)( minutes)")


def _lesson_fix(path: Path) -> Callable[[nbformat.NotebookNode], list[str]]:
    """A function that puts the estimator's times (and, for a lesson, the map's navigation line)
    into a notebook's Markdown cells and says what it changed."""
    from courseware.course import ABOUT, LESSONS, estimate_parts, navigation_line

    parts = estimate_parts(path)
    row = next((r for r in LESSONS if (ROOT / r.file) == path), None)
    lab = next((r for r in LESSONS if r.lab and (ROOT / r.lab_solution) == path), None)
    minutes = row.minutes if row is not None else lab.lab_minutes if lab is not None else None
    wanted = {heading: e.minutes for heading, e in parts.deep_dives + parts.sittings}

    def fix(nb: nbformat.NotebookNode) -> list[str]:
        changes: list[str] = []
        in_prerequisites = False
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown":
                continue
            source = cell.source
            if row is not None:  # the title cell's navigation line, and any repeated further down
                navigation = navigation_line(row.number)
                lines = source.split("\n")
                for number, line in enumerate(lines):
                    is_navigation = line.startswith(("[← ", "[Course map]")) and "[Course map]" in line
                    if is_navigation and line != navigation:
                        changes.append(f"cell {index}'s navigation line should be {navigation}")
                        lines[number] = navigation
                source = "\n".join(lines)
            if source.startswith("## "):
                in_prerequisites = source.startswith("## Prerequisites")
                heading = source.splitlines()[0][3:]
                if heading in wanted:
                    right = f"*About {wanted[heading]} minutes.*"
                    for stated in ABOUT.findall(source):
                        if int(stated) != wanted[heading]:
                            changes.append(f"'## {heading}' says *About {stated} minutes.*; its estimate "
                                           f"is {wanted[heading]}")
                    source = ABOUT.sub(right, source)
            if minutes is not None and (in_prerequisites or lab is not None):
                for stated in TIME_LINE.findall(source):
                    if int(stated[1]) != minutes:
                        changes.append(f"'**Time:** about {stated[1]} minutes' should be {minutes} (the "
                                       f"estimate of its {'core path' if row else 'exercises'})")
                source = TIME_LINE.sub(lambda m: f"{m.group(1)}{minutes}{m.group(3)}", source)
            cell.source = source
        return changes

    return fix


def lesson_line_problems() -> list[str]:
    return [f"{_rel(path)}: {change}" for path in _files(NOTEBOOK_GLOBS)
            for change in _lesson_fix(path)(nbformat.read(path, as_version=4))]


def write_lesson_lines() -> list[str]:
    from courseware.nbtools import write

    changed = []
    for path in _files(NOTEBOOK_GLOBS):
        nb = nbformat.read(path, as_version=4)
        if _lesson_fix(path)(nb):
            write(path, nb)
            changed.append(_rel(path))
    return changed


LABS_README = ROOT / "labs" / "README.md"
LAB_ROW = re.compile(r"^(\| \[(?P<code>\d\d) · [^\n]*\| )(?P<n>\d+)( min \|)$", re.M)
"""A row of labs/README.md's table: it links lab NN and ends with the lab's time."""


def fix_lab_table(text: str, minutes: dict[str, int]) -> tuple[str, list[str]]:
    """`text` with each lab row's time set to that lab's estimate, and the rows that were wrong."""
    wrong = []

    def one(match: re.Match) -> str:
        right = minutes.get(match.group("code"))
        if right is None or int(match.group("n")) == right:
            return match.group(0)
        wrong.append(f"lab {match.group('code')}: {match.group('n')} min, its estimate is {right}")
        return f"{match.group(1)}{right}{match.group(4)}"

    return LAB_ROW.sub(one, text), wrong


def _lab_minutes() -> dict[str, int]:
    from courseware.course import LESSONS

    return {row.code: row.lab_minutes for row in LESSONS if row.lab}


def lab_table_problems() -> list[str]:
    return [f"labs/README.md: {problem}"
            for problem in fix_lab_table(LABS_README.read_text(encoding="utf-8"), _lab_minutes())[1]]


def write_lab_table() -> list[str]:
    minutes = _lab_minutes()
    changed = _rewrite_markdown(LABS_README, lambda text: fix_lab_table(text, minutes)[0])
    return ["labs/README.md"] if changed else []


# -- the other generators, each with its own command -------------------------------------------------
def starter_problems() -> list[str]:
    from helpers.labs.build import stale_starters

    return [f"labs/{stem}.ipynb differs from what labs/solutions/{stem}.ipynb generates"
            for stem in stale_starters()]


def write_starters() -> list[str]:
    from helpers.labs.build import build, stale_starters

    stems = stale_starters()
    return [_rel(path) for path in build(stems)] if stems else []


def readme_problems() -> list[str]:
    from courseware.course import README_BEGIN, README_END, readme_block

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    begin, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    return [] if text[begin:end] == readme_block() else ["README.md: the course table or the tracks' totals"]


def write_readme() -> list[str]:
    from courseware.course import write_readme as write

    return ["README.md"] if write() else []


def guide_problems() -> list[str]:
    from courseware import workshop

    return workshop.problems()


def write_guide() -> list[str]:
    from courseware import workshop

    return workshop.write_all()


def _sample_state() -> tuple[bool, bool]:
    """(the committed sample differs from today's report, the doctor says ready here), from one run."""
    from courseware.doctor import committed_sample, mask_sample, run_checks

    report = run_checks(env={})
    return mask_sample(committed_sample()) != mask_sample(str(report)), report.ok


def sample_problems() -> list[str]:
    differs, ready = _sample_state()
    if not differs:
        return []
    if not ready:
        return ["docs/workshop/preflight.md: the doctor's sample differs, but the doctor fails on this "
                "machine, so it cannot be rewritten from here: `make setup` (then `make doctor` says ready), "
                "then `make regen`"]
    return ["docs/workshop/preflight.md: the doctor's sample report"]


def write_sample() -> list[str]:
    """Rewrite the sample only from a machine where the doctor says ready (a sample shows a healthy
    laptop; a venv that differs from the lock would write its failures into the guide)."""
    from courseware.doctor import update_sample

    differs, ready = _sample_state()
    if not (differs and ready):
        return []
    update_sample()
    return ["docs/workshop/preflight.md"]


def compat_problems() -> list[str]:
    from courseware.compat import DATA, markdown

    table = ROOT / "docs" / "compatibility.md"
    if not DATA.exists():
        return []
    wanted = markdown(json.loads(DATA.read_text(encoding="utf-8")))
    return [] if table.read_text(encoding="utf-8") == wanted else ["docs/compatibility.md: the table"]


def write_compat() -> list[str]:
    if not compat_problems():
        return []
    script = ROOT / "scripts" / "compat.py"
    subprocess.run([sys.executable, str(script), "--table-only"], cwd=ROOT, check=True)
    return ["docs/compatibility.md"]


LESSON_00 = "notebooks/00_start_here.ipynb"
SHOWS_THE_MAP = ("markdown_table(", "track_minutes(", "track_parts(", "agenda()", "INTERVIEW_LESSONS")


def _run_here(source: str, namespace: dict) -> list[dict]:
    """Run one of lesson 00's map cells in this process, as the kernel would show it: what it
    prints as a stream output and its last expression's Markdown as display data."""
    import ast
    import contextlib
    import io

    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("%"))
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, LESSON_00, "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), LESSON_00, "eval"), namespace) if last else None
    outputs = []
    if printed.getvalue():
        outputs.append({"name": "stdout", "output_type": "stream", "text": printed.getvalue()})
    if value is not None and hasattr(value, "_repr_markdown_"):
        outputs.append({"output_type": "display_data", "data": {"text/markdown": value._repr_markdown_(),
                                                                "text/plain": repr(value)}})
    return outputs


def _shown_text(outputs: list) -> list[str]:
    return ["".join(o.get("text") or o.get("data", {}).get("text/markdown", "")) for o in outputs]


def lesson00_problems() -> list[str]:
    """Lesson 00's cells that show the map, the tracks and the agenda, run here (no kernel) and
    compared with their committed text, masked as strict nbval masks it."""
    from courseware.nbtools import masked

    nb = nbformat.read(ROOT / LESSON_00, as_version=4)
    setup, *code = [cell for cell in nb.cells if cell.cell_type == "code"]
    namespace: dict = {}
    _run_here(setup.source, namespace)  # the Setup cell's imports
    out = []
    for cell in code:
        if any(k in cell.source for k in SHOWS_THE_MAP):
            fresh, committed = _shown_text(_run_here(cell.source, namespace)), _shown_text(cell.outputs)
            if [masked(t) for t in fresh] != [masked(t) for t in committed]:
                out.append(f"{LESSON_00}: the output of `{cell.source.splitlines()[0][:50]}` "
                           "(the map, the tracks or the agenda) is out of date")
    return out


def write_lesson00() -> list[str]:
    from courseware.nbtools import execute

    if not lesson00_problems():
        return []
    execute(ROOT / LESSON_00)
    return [LESSON_00]


@dataclass(frozen=True)
class Derived:
    """One kind of derived file: how to see that it is stale, how to rewrite it, and the command."""

    name: str
    command: str
    problems: Callable[[], list[str]]
    write: Callable[[], list[str]]


ITEMS: tuple[Derived, ...] = (
    Derived("versions in prose", "make regen", version_problems, write_versions),
    Derived("counts and lesson numbers in prose", "make regen", count_problems, write_counts),
    Derived("stated times and navigation lines", "make regen", lesson_line_problems, write_lesson_lines),
    Derived("the labs' times in labs/README.md", "make regen", lab_table_problems, write_lab_table),
    Derived("lab starters", "make labs-build", starter_problems, write_starters),
    Derived("README's course table", "python -m courseware.course --write-readme", readme_problems,
            write_readme),
    Derived("the workshop kit", "make workshop-guide", guide_problems, write_guide),
    Derived("the doctor's sample report", ".venv/bin/python -m courseware.doctor --update-sample",
            sample_problems, write_sample),
    Derived("compatibility table", ".venv/bin/python scripts/compat.py --table-only", compat_problems,
            write_compat),
    Derived("the symptom index", "make regen",
            lambda: __import__("courseware.symptoms", fromlist=["problems"]).problems(),
            lambda: __import__("courseware.symptoms", fromlist=["write"]).write()),
    Derived("lesson 00's live map", f"make notebook NB={LESSON_00}", lesson00_problems, write_lesson00),
)
"""In dependency order: prose first (a time line reads the estimate), then what reads the lessons."""


def stale(items: tuple[Derived, ...] = ITEMS) -> list[tuple[Derived, list[str]]]:
    """Each item that is out of date, with what is wrong in it."""
    found = []
    for item in items:
        problems = item.problems()
        if problems:
            found.append((item, problems))
    return found


def regen(items: tuple[Derived, ...] = ITEMS) -> list[str]:
    """Rewrite every derived file; the files that changed (twice over, until nothing moves)."""
    changed: list[str] = []
    for _ in range(3):
        round_changed = [f for item in items for f in item.write()]
        changed += [f for f in dict.fromkeys(round_changed) if f not in changed]
        if not round_changed:
            break
    return changed


def report(found: list[tuple[Derived, list[str]]]) -> str:
    """Every stale item with all that is wrong in it, and the command that fixes it."""
    if not found:
        return "nothing is stale: every derived file is up to date"
    lines = []
    for item, problems in found:
        also = "" if item.command == "make regen" else " (or `make regen` for everything)"
        lines.append(f"{item.name} — fix: {item.command}{also}")
        lines += [f"    {p}" for p in problems]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["regen"]:
        changed = regen()
        print("\n".join(f"wrote {f}" for f in changed) or "nothing to regenerate: all up to date")
        left = stale()
        if left:
            print(report(left))
            return 1
        return 0
    if args in ([], ["stale"]):
        found = stale()
        print(report(found))
        return 1 if found else 0
    print("usage: python -m courseware.derived [stale | regen]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
