"""Which taught behaviours hold on which releases: the data behind `docs/compatibility.md`.

`make compat` (`scripts/compat.py`) runs the contract tests against a matrix of LangGraph releases
and stores each test's outcome per release in `docs/compatibility.json`; this module turns that
record into the table, and tells the doctor which lessons differ for the versions a learner has.

Taught in `docs/compatibility.md` (generated) and reported by `make doctor`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "compatibility.json"
PACKAGES = ("langgraph", "langgraph-prebuilt", "langchain-core", "langchain")
HOLDS, DIFFERS, ABSENT = "holds", "differs", "n/a"
_SITE = re.compile(r" [(][^)]*site-packages[^)]*[)]")  # "(/path/to/site-packages/...)" in messages
# Failures that mean "this release has no such API", not "the behaviour is different".
_ABSENT_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError")
_ABSENT_MESSAGES = {
    "unexpected keyword argument": "",
    # langchain-core < 1.0: `message.text` is a method; the course's helpers read the property
    "expected str instance, method found": "langchain-core < 1.0: the course's helpers need `message.text`",
}


def classify(record: Mapping | None) -> tuple[str, str]:
    """(status, what was observed) for one test's record on one release.

    Example:
        ```python
        classify({"outcome": "passed"})                       # ('holds', '')
        classify({"outcome": "failed", "exception": "AssertionError", "message": "assert 1 == 2"})
        # ('differs', 'assert 1 == 2')
        ```
    """
    if record is None:
        return ABSENT, "the test module could not be imported"
    outcome = record.get("outcome")
    if outcome == "passed":
        return HOLDS, ""
    message = record.get("message", "")
    if outcome in ("skipped", "collection-error"):
        return ABSENT, message
    exception = record.get("exception", "")
    if exception in _ABSENT_ERRORS:
        return ABSENT, message
    for fragment, reason in _ABSENT_MESSAGES.items():
        if fragment in message:
            return ABSENT, reason or message
    return DIFFERS, message


def statuses(data: Mapping) -> dict[str, dict[str, tuple[str, str]]]:
    """{test node id: {release name: (status, observed)}} for every test of the reference release."""
    reference = next(entry for entry in data["entries"] if entry.get("reference"))
    tests = [nodeid for nodeid, rec in reference["results"].items()
             if rec.get("outcome") != "collection-error"]
    table: dict[str, dict[str, tuple[str, str]]] = {}
    for nodeid in tests:
        row = {}
        for entry in data["entries"]:
            results = entry["results"]
            record = results.get(nodeid)
            if record is None:  # its module failed to import on this release
                module = nodeid.split("::", 1)[0]
                record = results.get(module) or None
            row[entry["name"]] = classify(record)
        table[nodeid] = row
    return table


def lesson_of(data: Mapping, nodeid: str) -> str:
    reference = next(entry for entry in data["entries"] if entry.get("reference"))
    return reference["results"][nodeid].get("lesson") or "(no lesson)"


def _short(nodeid: str) -> str:
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def _cell(status: str, observed: str, notes: list[str]) -> str:
    if status == HOLDS:
        return "✓"
    if status == ABSENT:
        return "n/a"
    notes.append(observed.replace("|", "\\|").replace("\n", " ")[:200])
    return f"✗ [{len(notes)}]"


def column_label(entry: Mapping, reference: Mapping | None = None) -> str:
    """A release's column header: its name, plus the langchain-core it ran with, which the name
    alone does not say; "newest" says when it resolved to exactly the pins.

    Example:
        ```python
        column_label({"name": "langgraph 1.1.10", "versions": {"langchain-core": "1.8.3"}})
        # 'langgraph 1.1.10 · core 1.8.3'
        ```
    """
    versions = entry.get("versions", {})
    label = entry["name"]
    if reference is not None and entry is not reference and entry.get("name") == "newest" and all(
            versions.get(p) == reference["versions"].get(p) for p in PACKAGES):
        return "newest (= the pins)"
    if versions.get("langchain-core") and "core" not in label:
        label += f" · core {versions['langchain-core']}"
    return label


def markdown(data: Mapping) -> str:
    """The whole of docs/compatibility.md, from the record `scripts/compat.py` wrote."""
    entries = data["entries"]
    names = [entry["name"] for entry in entries]
    reference = next(entry for entry in entries if entry.get("reference"))
    headers = [column_label(entry, reference) for entry in entries]
    table = statuses(data)
    lines = [
        "# Which taught behaviours hold on which releases",
        "",
        f"Generated by `make compat` on {data['date']} from the contract tests at commit "
        f"`{data['commit']}` ({data['seconds']:.0f} s on {data['cpus']} CPUs). Do not edit: re-run "
        "`make compat`. Each row is one contract test (one behaviour a lesson teaches); each column one "
        "release, installed in a throwaway environment with the releases it pulls in.",
        "",
        "✓ holds · ✗ differs (the note says what was observed) · n/a the release lacks an API the test "
        "uses (each test's imports are judged on their own: a name a release lacks makes only the tests "
        "that use it n/a).",
        "",
        "Every column's langchain-core is the one its release resolved to (shown in each header): the 1.x "
        "columns run today's langchain-core unless the header says otherwise, and one column keeps the "
        "pins with the oldest langchain-core the pinned packages accept. A \"newest\" column that "
        "resolved to exactly the pins says so.",
        "",
        "## The releases",
        "",
        "| release | " + " | ".join(PACKAGES) + " |",
        "|---|" + "---|" * len(PACKAGES),
    ]
    for entry in entries:
        versions = entry["versions"]
        label = column_label(entry, reference) + (" (the course's pins)" if entry.get("reference") else "")
        lines.append(f"| {label} | " + " | ".join(versions.get(p) or "—" for p in PACKAGES) + " |")
    lines += [f"\n{entry['name']}: {entry['note']}" for entry in entries if entry.get("note")]
    lines += ["", "## What changes across the matrix", ""]
    groups: dict[tuple[str, ...], list[str]] = {}
    for nodeid, row in table.items():
        states = tuple(row[name][0] for name in names)
        if set(states) != {HOLDS}:
            groups.setdefault(states, []).append(nodeid)
    symbol = {HOLDS: "✓", DIFFERS: "✗", ABSENT: "n/a"}
    if groups:
        lines += ["| behaviours | lessons | " + " | ".join(headers) + " |", "|---|---|" + "---|" * len(names)]
        for states, nodeids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lessons = sorted({lesson_of(data, nodeid)[:2] for nodeid in nodeids})
            what = (f"{len(nodeids)} tests" if len(nodeids) > 3
                    else ", ".join(f"`{_short(n)}`" for n in nodeids))
            lines.append(f"| {what} | {', '.join(lessons)} | " + " | ".join(symbol[s] for s in states) + " |")
    else:
        lines.append("Nothing: every behaviour holds on every release.")
    causes = []
    for entry in entries:
        found = sorted({rec["message"] for rec in entry["results"].values()
                        if rec.get("outcome") == "collection-error"})
        causes += [f"- {entry['name']}: {_SITE.sub('', cause)}" for cause in found]
    if causes:
        lines += ["", "Why whole test modules are n/a (their imports fail on that release):", "", *causes]
    by_lesson: dict[str, list[str]] = {}
    for nodeid in table:
        by_lesson.setdefault(lesson_of(data, nodeid), []).append(nodeid)
    for lesson in sorted(by_lesson):
        notes: list[str] = []
        anchor_note = f"[notebooks/{lesson}.ipynb](../notebooks/{lesson}.ipynb)"
        lines += ["", f"## {lesson}", "", f"Taught in {anchor_note}.", "",
                  "| behaviour (contract test) | " + " | ".join(headers) + " | holds from | holds until |",
                  "|---|" + "---|" * (len(names) + 2)]
        for nodeid in by_lesson[lesson]:
            row = table[nodeid]
            cells = [_cell(*row[name], notes) for name in names]
            holding = [name for name in names if row[name][0] == HOLDS]
            first, last = (holding[0], holding[-1]) if holding else ("—", "—")
            lines.append(f"| `{_short(nodeid)}` | " + " | ".join(cells) + f" | {first} | {last} |")
        if notes:
            lines += [""] + [f"[{index}] {note}" for index, note in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"


def installed_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """The installed versions of these packages (default: those the matrix varies); None if absent."""
    found = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def lessons_that_differ(
    versions: Mapping[str, str | None] | None = None, data: Mapping | None = None
) -> tuple[str | None, dict[str, int]]:
    """For these versions: (the matrix release they match, {lesson: behaviours that do not hold}).

    The match is the release with the same langgraph, langgraph-prebuilt and langchain-core
    versions, else the one with the same langgraph minor version; `(None, {})` when none matches
    or the record is missing. The reference release (the pins) always gives `{}`.

    Example:
        ```python
        old = {"langgraph": "0.6.11", "langgraph-prebuilt": "0.6.5", "langchain-core": "0.3.86"}
        lessons_that_differ(old)
        # ('langgraph 0.6.11', {'03_builtin_toolnode': 4, ...})
        ```
    """
    versions = dict(installed_versions() if versions is None else versions)
    if data is None:
        if not DATA.exists():
            return None, {}
        data = json.loads(DATA.read_text(encoding="utf-8"))
    keys = ("langgraph", "langgraph-prebuilt", "langchain-core")
    entries = data["entries"]
    match = next((e for e in entries if all(e["versions"].get(k) == versions.get(k) for k in keys)), None)
    if match is None:
        match = next((e for e in entries if not e.get("reference")
                      and _minor(e["versions"].get("langgraph")) == _minor(versions.get("langgraph"))), None)
    if match is None:
        return None, {}
    counts: dict[str, int] = {}
    for nodeid, row in statuses(data).items():
        if row[match["name"]][0] != HOLDS:
            lesson = lesson_of(data, nodeid)
            counts[lesson] = counts.get(lesson, 0) + 1
    return match["name"], dict(sorted(counts.items()))
