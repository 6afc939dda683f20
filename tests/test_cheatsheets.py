"""The cheat sheets cite real lessons and real tests: ToolNode's rules (`docs/cheatsheet.en.md`,
`docs/cheatsheet.zh.md`) and the rules of tools in a running agent (`docs/cheatsheet-agent.en.md`,
`docs/cheatsheet-agent.zh.md`).

Every rule line links the lesson section that shows it (`../notebooks/NN_x.ipynb#Heading-text`, the
anchor JupyterLab gives a heading: its text with spaces as `-`, backticks dropped) and names the
contract test that proves it (`tests/contracts/test_NN_x.py::test_name`). One test per sheet checks
every citation and lists each that broke, so a renamed heading, a moved notebook or a deleted test
fails with the exact citation and what to do about it.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAIRS = [(DOCS / "cheatsheet.en.md", DOCS / "cheatsheet.zh.md"),
         (DOCS / "cheatsheet-agent.en.md", DOCS / "cheatsheet-agent.zh.md")]
"""Each sheet in English and in Chinese: the two state the same rules with the same citations."""
SHEETS = [sheet for pair in PAIRS for sheet in pair]
MAX_LINES = 95  # one rule a line: the agent sheet's 51 rules in ten sections take 92. The print itself
# (scripts/build_handout.py, checked by `make handout-test`) puts each sheet on one page of A4 and of
# Letter when it fits with no text under 7 pt, else on two: the agent sheets take two
LESSON_LINK = re.compile(r"\]\((\.\./notebooks/[^)#\s]+\.ipynb)(?:#([^)\s]+))?\)")
TEST_ID = re.compile(r"`(tests/contracts/test_\w+\.py)::(test_\w+)(?:\[[^\]`]*\])?`")
NODE_ID = re.compile(r"`(tests/contracts/test_\w+\.py::test_\w+(?:\[[^\]`]*\])?)`")


def rule_lines(sheet: Path) -> list[tuple[int, str]]:
    """The numbered rules: lines that start with `1.`, `2.`, ... (the sheet's only ordered list)."""
    lines = sheet.read_text(encoding="utf-8").splitlines()
    return [(number, line) for number, line in enumerate(lines, 1) if re.match(r"\d+\. ", line)]


@functools.cache
def heading_anchors(notebook: Path) -> dict[str, str]:
    """Every markdown heading of a notebook, as JupyterLab anchors it → the heading's text (read once
    per run: some 500 citations point into 18 notebooks)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    anchors = {}
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            match = re.match(r"#{1,6} (.+)", line)
            if match:
                text = match.group(1).strip().replace("`", "")
                anchors[text.replace(" ", "-")] = text
    return anchors


@functools.cache
def defined_tests(path: Path) -> frozenset[str]:
    """The test functions a module defines, parsed once per run (a contract module takes ~30 ms)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    )


def citations() -> list[tuple[str, str, str, str]]:
    """(sheet:line, kind, target, anchor-or-test) for every citation in both sheets."""
    found = []
    for sheet in SHEETS:
        if not sheet.exists():
            continue
        for number, line in rule_lines(sheet):
            where = f"{sheet.relative_to(ROOT)}:{number}"
            for path, anchor in LESSON_LINK.findall(line):
                found.append((where, "lesson", path, unquote(anchor)))
            for path, name in TEST_ID.findall(line):
                found.append((where, "test", path, name))
    return found


CITATIONS = citations()


@pytest.mark.parametrize("sheet", SHEETS, ids=[s.name for s in SHEETS])
def test_the_sheet_exists_and_stays_short(sheet):
    assert sheet.exists(), f"{sheet.relative_to(ROOT)} is missing: the interview track links it."
    lines = sheet.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, (
        f"{sheet.relative_to(ROOT)} has {len(lines)} lines; two printed pages at 7 pt hold {MAX_LINES}. "
        "Cut a rule, or shorten one (make handout-test prints it)."
    )


@pytest.mark.parametrize("sheet", SHEETS, ids=[s.name for s in SHEETS])
def test_every_rule_cites_a_lesson_section_and_a_contract_test(sheet):
    problems = []
    for number, line in rule_lines(sheet):
        if not LESSON_LINK.search(line):
            problems.append(f"line {number}: no link to a lesson section (../notebooks/NN_x.ipynb#Heading)")
        if not TEST_ID.search(line):
            problems.append(f"line {number}: names no contract test (`tests/contracts/test_x.py::test_y`)")
    assert rule_lines(sheet), f"{sheet.name} has no numbered rules"
    assert not problems, f"{sheet.relative_to(ROOT)}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("pair", PAIRS, ids=[en.stem.removesuffix(".en") for en, _ in PAIRS])
def test_both_languages_state_the_same_rules_with_the_same_citations(pair):
    english, chinese = ([LESSON_LINK.findall(line) + TEST_ID.findall(line) for _, line in rule_lines(s)]
                        for s in pair)
    assert len(english) == len(chinese), (
        f"{pair[0].name} has {len(english)} rules, {pair[1].name} {len(chinese)}: keep them in step"
    )
    for index, (en, zh) in enumerate(zip(english, chinese, strict=True), 1):
        assert en == zh, f"rule {index} cites {en} in English but {zh} in Chinese"


@pytest.mark.parametrize("sheet", [zh for _, zh in PAIRS], ids=[zh.name for _, zh in PAIRS])
def test_the_chinese_sheet_declares_a_cjk_font_for_printing(sheet):
    text = sheet.read_text(encoding="utf-8")
    front_matter = text.split("---", 2)[1] if text.startswith("---") else ""
    assert re.search(r"^CJKmainfont: .+", front_matter, re.M), (
        f"docs/{sheet.name} needs a `CJKmainfont:` line in its front matter, "
        "or its Chinese prints as boxes"
    )


def citation_problem(where: str, kind: str, target: str, detail: str) -> str | None:
    """What is wrong with one citation, in words that say how to fix it (None: it resolves)."""
    if kind == "lesson":
        notebook = (DOCS / target).resolve()
        shown = notebook.relative_to(ROOT) if notebook.is_relative_to(ROOT) else target
        if not notebook.exists():
            return (f"{where} links {shown}, which does not exist: fix the file name in the link "
                    f"(the course map in README.md has the names).")
        anchors = heading_anchors(notebook)
        if detail not in anchors:
            return (f"{where} links {shown}#{detail}, but {shown} has no heading "
                    f"'{detail.replace('-', ' ')}'. Its headings are:\n    "
                    + "\n    ".join(anchors.values()))
        return None
    path = ROOT / target
    if not path.exists():
        return f"{where} names {target}::{detail}, but {target} does not exist."
    if detail not in defined_tests(path):
        return f"{where} names {target}::{detail}, but {target} defines no test '{detail}'."
    return None


@pytest.mark.parametrize("sheet", SHEETS, ids=[s.name for s in SHEETS])
def test_every_citation_exists(sheet):
    """Every lesson section and contract test a sheet's rules cite exists; one failure lists them all."""
    where = str(sheet.relative_to(ROOT))
    cited = [c for c in CITATIONS if c[0].startswith(where + ":")]
    problems = [p for c in cited if (p := citation_problem(*c))]
    assert cited, f"{where} cites nothing"
    assert not problems, (f"{len(problems)} of {len(cited)} citations do not resolve:\n  "
                          + "\n  ".join(problems))


def cited_modules() -> list[str]:
    return sorted({target for _, kind, target, _ in CITATIONS if kind == "test"})


@functools.cache
def collected_by_a_fresh_pytest() -> frozenset[str]:
    """The node ids pytest collects from every contract module the sheets cite (one subprocess)."""
    modules = cited_modules()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-o", "addopts=", *modules],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    ids = frozenset(line.strip() for line in run.stdout.splitlines() if "::" in line)
    assert ids, f"pytest collected nothing from {modules}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    return ids


@functools.cache
def collected_node_ids(session: pytest.Session) -> frozenset[str]:
    """What this session collected, when it collected every cited module unfiltered (the whole suite,
    also on each xdist worker); otherwise a fresh `pytest --collect-only` of those modules."""
    config = session.config
    filtered = config.getoption("keyword", "") or config.getoption("markexpr", "")
    ids = frozenset(item.nodeid for item in session.items)
    if not filtered and all(any(i.startswith(module + "::") for i in ids) for module in cited_modules()):
        return ids
    return collected_by_a_fresh_pytest()


NODE_CITATIONS = [
    (f"{sheet.relative_to(ROOT)}:{number}", node)
    for sheet in SHEETS if sheet.exists()
    for number, line in rule_lines(sheet)
    for node in NODE_ID.findall(line)
]


@pytest.mark.parametrize("sheet", SHEETS, ids=[s.name for s in SHEETS])
def test_every_cited_test_is_collected(sheet, request):
    where = str(sheet.relative_to(ROOT))
    cited = [(w, node) for w, node in NODE_CITATIONS if w.startswith(where + ":")]
    collected = collected_node_ids(request.session) if cited else frozenset()
    missing = [
        f"{w} names {node}, but pytest does not collect it (run `pytest --collect-only -q "
        f"{node.split('::')[0]}`): the test may be nested, misnamed, or its module may fail to import."
        for w, node in cited
        if node not in collected
        and not ("[" not in node and any(c.startswith(node + "[") for c in collected))
    ]
    assert not missing, (f"{len(missing)} of {len(cited)} cited tests are not collected:\n  "
                         + "\n  ".join(missing))
