"""Every file the course generates from another, in one list: what is stale, and one command for all.

    make stale     # = python -m courseware.derived stale: each out-of-date item and the command that fixes it
    make regen     # = python -m courseware.derived regen: rewrite every derived file, in dependency order

A derived file is one a person should never have to keep in step by hand:

- versions in prose, from `requirements.txt` (`fix_versions` below);
- counts and lesson numbers in prose, from the course map (`fix_counts` below);
- each lesson's stated times and navigation line, from the estimator and the map;
- the lab starters `labs/NN_*.ipynb`, from `labs/solutions/` (`make labs-build`);
- README's course table and tracks (`python -m courseware.course --write-readme`);
- the workshop agenda and the facilitator's script (`make workshop-guide`);
- the doctor's sample in docs/workshop/preflight.md (`python -m courseware.doctor --update-sample`);
- docs/compatibility.md, from the record `make compat` writes (`python scripts/compat.py --table-only`);
- lesson 00's outputs, which show the map, the tracks and the agenda live
  (`make notebook NB=notebooks/00_start_here.ipynb`).

Prose facts are rewritten in place: a version that is not the pin (nor one of `HISTORICAL`, the
releases the course names on purpose) becomes the pin; a count or lesson number becomes the map's.
`tests/test_derived.py` fails while anything is stale and prints this module's report.
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
        from courseware.nbtools import _dumps, normalize

        path.write_text(_dumps(normalize(nb)), encoding="utf-8")
    return changed


def _markdown_of(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


# -- versions ----------------------------------------------------------------------------------------
PACKAGES = ("langgraph-prebuilt", "langgraph-checkpoint", "langgraph", "langchain-core", "langchain-openai",
            "langchain-mcp-adapters", "langchain", "openai", "pydantic", "jupyterlab", "nbval", "matplotlib",
            "mcp", "ipykernel", "nbconvert", "nbclient", "pytest")
HISTORICAL: dict[str, set[str]] = {
    # the compatibility matrix's releases (scripts/compat.py) and the releases a lesson names
    "langgraph": {"0.6.11", "1.0", "1.0.0", "1.0.10", "1.1.10"},
    "langgraph-prebuilt": {"1.0", "1.0.0", "1.0.1", "1.0.8", "1.0.11", "1.0.13"},
    "langchain-mcp-adapters": {"0.3.0"},
    # the doctor's drift examples in docs/workshop/preflight.md ("1.8.2 (want 1.8.3)")
    "langchain-core": {"1.8.2"},
}
"""Releases the prose names on purpose besides the pins. After a pin bump, a mention of the old pin
that should stay (a behaviour that changed there) goes here; every other one is rewritten."""
VERSION = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, PACKAGES))
                     + r")( |==)v?(\d+\.\d+(?:\.\d+)?)\b(?![.\d])")


def pins() -> dict[str, str]:
    """The lock's version of each package the prose may name (the first pin where markers differ)."""
    from courseware.platforms import read_lock

    found: dict[str, str] = {}
    for pin in read_lock():
        found.setdefault(pin.name, pin.version)
    return found


def _version_ok(package: str, version: str, pinned: dict[str, str]) -> bool:
    pin = pinned.get(package)
    if pin is None or version in HISTORICAL.get(package, ()):
        return True
    return version == pin or (version.count(".") == 1 and pin.startswith(version + "."))


def _drift_example(text: str, match: re.Match) -> bool:
    """`langchain-core 1.8.2 (want 1.8.3)`: the doctor's drift report quoted as an example."""
    return text[match.end():match.end() + 7] == " (want "


def fix_versions(text: str, pinned: dict[str, str]) -> tuple[str, list[str]]:
    """`text` with every stale version mention replaced by the pin, and those mentions."""
    stale_mentions = []

    def one(match: re.Match) -> str:
        package, sep, version = match.groups()
        if _version_ok(package, version, pinned) or _drift_example(text, match):
            return match.group(0)
        stale_mentions.append(f"'{match.group(0)}' (the lock pins {package} {pinned[package]})")
        return f"{package}{sep}{pinned[package]}"

    return VERSION.sub(one, text), stale_mentions


def version_problems() -> list[str]:
    pinned = pins()
    return [f"{_rel(path)}: {problem}" for path in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            for problem in fix_versions(_markdown_of(path), pinned)[1]]


def write_versions() -> list[str]:
    pinned = pins()
    return [_rel(p) for p in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            if _rewrite_markdown(p, lambda text: fix_versions(text, pinned)[0])]


# -- counts and lesson numbers -----------------------------------------------------------------------
WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen twenty").split()


def _as_before(old: str, value: int) -> str:
    """`value` written the way `old` was: digits, a word, or a capitalised word."""
    if old.isdigit():
        return f"{value:0{len(old)}d}" if old.startswith("0") else str(value)
    word = WORDS[value] if value < len(WORDS) else str(value)
    return word.capitalize() if old[:1].isupper() else word


def _facts() -> dict[str, int]:
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


NUMBER = r"(\d+|" + "|".join(WORDS) + r")"
COUNT_RULES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (fact, re.compile(pattern, re.I)) for fact, pattern in (
        ("notebooks", rf"\b{NUMBER}(?= notebooks\b)"),
        ("labs", rf"(?<=\ba lab after ){NUMBER}(?= lessons\b)"),
        ("labs", rf"\b{NUMBER}(?= lessons followed by a lab\b)"),
        ("last teaching", r"(?<=\blessons 00–)(\d\d)(?=,? (?:the )?mock interview)"),
        ("last teaching", r"(?<=\bfollow lesson )(\d\d)(?= in order)"),
        ("last", r"(?<=\b00 → )(\d\d)\b"),
        ("last", r"(?<=\b00_… to )(\d\d)(?=_…)"),
        ("mock interview", r"(?<=\bmock interview \()(\d\d)(?=\))"),
        ("mock interview", r"(?<=\bthe mock interview )(\d\d)\b"),
        ("drill bank", r"(?<=\bdrill bank \()(\d\d)(?=\))"),
        ("drill bank", r"(?<=\bdrill bank's sittings \()(\d\d)(?=\))"),
        ("drill bank", r"(?<=\bthe drill bank )(\d\d)\b"),
        ("drills", r"\b(\d+)(?= (?:such )?drills,? in \w+ sittings\b)"),
        ("sittings", rf"(?<=drills in ){NUMBER}(?= sittings\b)"),
        ("sittings", rf"(?<=drills, in ){NUMBER}(?= sittings\b)"),
        ("sittings", rf"(?<=\bthe ){NUMBER}(?= sittings total\b)"),
    )
)
"""Each pattern's one group is a number the prose states; the fact it must equal comes from the map."""


def fix_counts(text: str, facts: dict[str, int]) -> tuple[str, list[str]]:
    """`text` with every count and lesson number the map decides set to the map's, and the old ones."""
    wrong = []
    for fact, pattern in COUNT_RULES:
        def one(match: re.Match, fact: str = fact) -> str:
            right = _as_before(match.group(1), facts[fact])
            if match.group(1) != right:
                context = match.string[max(0, match.start() - 30):match.end() + 20].replace("\n", " ")
                wrong.append(f"'…{context}…' says {match.group(1)}; the course has {facts[fact]} ({fact})")
            return right
        text = pattern.sub(one, text)
    return text, wrong


_NOTEBOOK = r"[^)\s]*?(?P<nn{n}>\d\d)_[a-z0-9_]+\.ipynb(?:#[^)\s]*)?"
LESSON_LINK = re.compile(
    r"\[(?P<code>\d\d)(?P<label> · [^\]]*)\]\((?P<target>" + _NOTEBOOK.format(n="") + r")\)"
    r"|\[(?P<text>[^\]]+)\]\((?P<target2>" + _NOTEBOOK.format(n="2") + r")\) \((?P<after>\d\d)\)"
)
"""A link to a lesson that states its number: `[03 · Title](03_x.ipynb)` or `[title](16_x.ipynb) (16)`."""


def fix_link_numbers(text: str) -> tuple[str, list[str]]:
    """`text` with the number a lesson link states set to the linked notebook's, and the old ones."""
    wrong = []

    def one(match: re.Match) -> str:
        if match.group("code") is not None:
            if match.group("code") == match.group("nn"):
                return match.group(0)
            wrong.append(f"'{match.group(0)[:70]}' says {match.group('code')}; it links {match.group('nn')}")
            return f"[{match.group('nn')}{match.group('label')}]({match.group('target')})"
        if match.group("after") == match.group("nn2"):
            return match.group(0)
        wrong.append(f"'{match.group(0)[:70]}' says ({match.group('after')}); it links {match.group('nn2')}")
        return f"[{match.group('text')}]({match.group('target2')}) ({match.group('nn2')})"

    return LESSON_LINK.sub(one, text), wrong


def count_problems() -> list[str]:
    facts = _facts()
    return [f"{_rel(path)}: {problem}" for path in _files(PROSE_GLOBS) + _files(NOTEBOOK_GLOBS)
            for text in [_markdown_of(path)]
            for problem in fix_counts(text, facts)[1] + fix_link_numbers(text)[1]]


def write_counts() -> list[str]:
    facts = _facts()
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
    wanted = {heading: e.minutes for heading, e in parts.deep_dives + parts.sittings}

    def fix(nb: nbformat.NotebookNode) -> list[str]:
        changes = []
        in_prerequisites = False
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown":
                continue
            source = cell.source
            if row is not None and index == 0:
                lines = source.rstrip("\n").split("\n")
                navigation = navigation_line(row.number)
                if lines[-1].startswith(("[← ", "[Course map]")) and lines[-1] != navigation:
                    changes.append(f"the title cell's navigation line should be {navigation}")
                    lines[-1] = navigation
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
            if row is not None and in_prerequisites:
                for stated in TIME_LINE.findall(source):
                    if int(stated[1]) != row.minutes:
                        changes.append(f"'**Time:** about {stated[1]} minutes' should be {row.minutes} (the "
                                       "estimate of the core path)")
                source = TIME_LINE.sub(lambda m: f"{m.group(1)}{row.minutes}{m.group(3)}", source)
            cell.source = source
        return changes

    return fix


def _lesson_notebooks() -> list[Path]:
    return _files(NOTEBOOK_GLOBS)


def lesson_line_problems() -> list[str]:
    return [f"{_rel(path)}: {change}" for path in _lesson_notebooks()
            for change in _lesson_fix(path)(nbformat.read(path, as_version=4))]


def write_lesson_lines() -> list[str]:
    from courseware.nbtools import _dumps, normalize

    changed = []
    for path in _lesson_notebooks():
        nb = nbformat.read(path, as_version=4)
        if _lesson_fix(path)(nb):
            path.write_text(_dumps(normalize(nb)), encoding="utf-8")
            changed.append(_rel(path))
    return changed


# -- the other generators, each with its own command -------------------------------------------------
def starter_problems() -> list[str]:
    from helpers.labs.build import starter_text

    out = []
    for solution in sorted((ROOT / "labs" / "solutions").glob("[0-9][0-9]_*.ipynb")):
        starter = ROOT / "labs" / solution.name
        if not starter.exists() or starter.read_text(encoding="utf-8") != starter_text(solution.stem):
            out.append(f"{_rel(starter)} differs from what {_rel(solution)} generates")
    return out


def write_starters() -> list[str]:
    from helpers.labs.build import starter_text

    changed = []
    for solution in sorted((ROOT / "labs" / "solutions").glob("[0-9][0-9]_*.ipynb")):
        starter = ROOT / "labs" / solution.name
        text = starter_text(solution.stem)
        if not starter.exists() or starter.read_text(encoding="utf-8") != text:
            starter.write_text(text, encoding="utf-8")
            changed.append(_rel(starter))
    return changed


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

    out = []
    guide = (ROOT / "docs" / "workshop" / "README.md").read_text(encoding="utf-8")
    start = guide.index(workshop.BEGIN_MARK) + len(workshop.BEGIN_MARK)
    if guide[start:guide.index(workshop.END_MARK)] != "\n" + workshop.markdown_table() + "\n":
        out.append("docs/workshop/README.md: the agenda table (a block's estimate, or the cells it runs, "
                   "moved with the lessons)")
    facilitator = ROOT / "docs" / "workshop" / "facilitator.md"
    if not facilitator.exists() or facilitator.read_text(encoding="utf-8") != workshop.facilitator_markdown():
        out.append("docs/workshop/facilitator.md: the facilitator's script (its times or the cells it "
                   "names moved with the lessons)")
    return out


def write_guide() -> list[str]:
    from courseware import workshop

    changed = ["docs/workshop/README.md"] if workshop.write_guide() else []
    facilitator = ROOT / "docs" / "workshop" / "facilitator.md"
    text = workshop.facilitator_markdown()
    if not facilitator.exists() or facilitator.read_text(encoding="utf-8") != text:
        facilitator.write_text(text, encoding="utf-8")
        changed.append(_rel(facilitator))
    return changed


def sample_problems() -> list[str]:
    from courseware.doctor import committed_sample, mask_sample, run_checks, sample_report

    if mask_sample(committed_sample()) == mask_sample(sample_report()):
        return []
    if not run_checks(env={}).ok:
        return ["docs/workshop/preflight.md: the doctor's sample differs, but the doctor fails on this "
                "machine, so it cannot be rewritten from here: `make setup` (then `make doctor` says ready), "
                "then `make regen`"]
    return ["docs/workshop/preflight.md: the doctor's sample report"]


def write_sample() -> list[str]:
    """Rewrite the sample only from a machine where the doctor says ready (a sample shows a healthy
    laptop; a venv that differs from the lock would write its failures into the guide)."""
    from courseware.doctor import run_checks, update_sample

    problems = sample_problems()
    if not problems or not run_checks(env={}).ok:
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
SHOWS_THE_MAP = ("markdown_table(", "track_minutes(", "agenda()", "INTERVIEW_LESSONS")


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
    Derived("lab starters", "make labs-build", starter_problems, write_starters),
    Derived("README's course table", "python -m courseware.course --write-readme", readme_problems,
            write_readme),
    Derived("workshop agenda and script", "make workshop-guide", guide_problems, write_guide),
    Derived("the doctor's sample report", ".venv/bin/python -m courseware.doctor --update-sample",
            sample_problems, write_sample),
    Derived("compatibility table", ".venv/bin/python scripts/compat.py --table-only", compat_problems,
            write_compat),
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
        changed += [f for f in round_changed if f not in changed]
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
