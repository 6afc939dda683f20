"""Tally the attendees' pre-flight results: who is ready, on which platforms, and what fails.

    python scripts/doctor_tally.py DIR                 # one `make doctor` output per file in DIR
    python scripts/doctor_tally.py DIR --make-args     # only `PLATFORMS=... PYTHONS=...` for make usb

Each file is one attendee's `make doctor` output as they sent it (`ada.txt`: the file's name is the
attendee). It reads the report's own lines — `[ok  ] name: detail`, `[FAIL] name: detail`,
`[note] ...` and the verdict `ready: ...` / `NOT ready: ...` — and counts ready / not ready, the
platforms and Pythons (the `platform` line, mapped to `courseware.platforms.TARGETS`), and every
failing line with who has it. The platforms it names are the wheelhouse's for `make usb`; the
Pythons are the ones people will install with: their own when it is tested (3.11–3.13), otherwise
the one their doctor's fix names (`make setup PYTHON=python3.11`, Windows `py -3.11 …`), since
`make setup` makes their venv again with that one. A wheelhouse for Python 3.10 could not be
gathered (`make usb` refuses it) and would be no use to them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LINE = re.compile(r"^\[(ok  |FAIL|note)\] ([^:]+): (.*)$")
PLATFORM = re.compile(r"^(Linux|macOS|Windows) (\S+), Python (\d+)\.(\d+)")
FIX_PYTHON = re.compile(r"PYTHON=python(3\.\d+)|\bpy -(3\.\d+)|install Python (3\.\d+)")
"""The tested Python a doctor's fix tells an attendee outside 3.11–3.13 to use."""


@dataclass
class Report:
    """One attendee's doctor output, read back."""

    who: str
    ready: bool | None = None  # None: no verdict line (a cut-off paste)
    platform: str | None = None  # a courseware.platforms.TARGETS name, or the raw text if unknown
    python: str | None = None
    fix_python: str | None = None  # the Python the doctor's fix names (only for an untested Python)
    failures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)


def target_name(system: str, machine: str) -> str:
    from courseware.platforms import matching_target

    found = matching_target({"macOS": "Darwin"}.get(system, system), machine)
    return found.name if found else f"{system} {machine} (untested)"


def read_text(path: Path) -> str:
    """A doctor output as sent: UTF-8, or UTF-16 with its byte-order mark (what Windows PowerShell's
    `> doctor.txt` writes)."""
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def read_report(path: Path) -> Report:
    report = Report(path.stem)
    for raw in read_text(path).splitlines():
        line = raw.strip()
        if line.startswith("ready:"):
            report.ready = True
        elif line.lower().startswith("not ready:"):
            report.ready = False
        if line.startswith(("fix:", "NOT ready:")) and report.fix_python is None:
            named = FIX_PYTHON.search(line)
            if named:
                report.fix_python = next(group for group in named.groups() if group)
        match = LINE.match(line)
        if not match:
            continue
        mark, name, detail = match.groups()
        if name == "platform":
            where = PLATFORM.match(detail)
            if where:
                report.platform = target_name(where.group(1), where.group(2))
                report.python = f"{where.group(3)}.{where.group(4)}"
        if mark == "FAIL":
            report.failures.append((name, detail))
        elif mark == "note":
            report.notes.append((name, detail))
    if report.ready is None and report.failures:
        report.ready = False
    return report


def collect(folder: Path) -> list[Report]:
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix in (".txt", ".log", ""))
    return [read_report(p) for p in files]


def wheel_python(report: Report) -> str | None:
    """The Python this attendee will install with: theirs when tested, else the one their doctor's fix
    names, else the oldest tested one (what the doctor tells someone with none on PATH)."""
    from courseware.platforms import SUPPORTED_PYTHONS

    if report.python is None or report.python in SUPPORTED_PYTHONS:
        return report.python
    if report.fix_python in SUPPORTED_PYTHONS:
        return report.fix_python
    return SUPPORTED_PYTHONS[0]


def _by_version(versions) -> list[str]:
    return sorted(set(versions), key=lambda v: tuple(map(int, v.split("."))))


def make_args(reports: list[Report]) -> str:
    """`PLATFORMS=... PYTHONS=...` for `make usb` / `make offline-bundle`: every tested platform named,
    and the tested Python each attendee will install with (`wheel_python`)."""
    from courseware.platforms import TARGETS

    known = {t.name for t in TARGETS}
    platforms = sorted({r.platform for r in reports if r.platform in known})
    pythons = _by_version(p for p in map(wheel_python, reports) if p)
    return f"PLATFORMS={','.join(platforms)} PYTHONS={','.join(pythons)}"


def moving(reports: list[Report]) -> list[str]:
    """One line per untested Python in the room: who must install which tested one first."""
    moves: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in reports:
        target = wheel_python(r)
        if r.python and target and target != r.python:
            moves[(r.python, target)].append(r.who)
    return [f"  Python {old} -> {new}: {', '.join(sorted(who))}"
            for (old, new), who in sorted(moves.items(), key=lambda kv: tuple(map(int, kv[0][0].split("."))))]


def summary(reports: list[Report]) -> str:
    ready = [r for r in reports if r.ready]
    not_ready = [r for r in reports if r.ready is False]
    unknown = [r for r in reports if r.ready is None]
    lines = [f"{len(reports)} doctor reports: {len(ready)} ready, {len(not_ready)} not ready"
             + (f", {len(unknown)} without a verdict line (ask again): {', '.join(r.who for r in unknown)}"
                if unknown else "")]
    by_platform: dict[tuple[str, str], list[Report]] = defaultdict(list)
    for r in reports:
        by_platform[(r.platform or "unknown platform", r.python or "?")].append(r)
    lines += ["", "by platform (wheelhouse target, Python): ready / all"]
    for (plat, py), group in sorted(by_platform.items()):
        lines.append(f"  {plat:<24} {py:<5} {sum(bool(r.ready) for r in group)} / {len(group)}")
    failing: dict[str, list[str]] = defaultdict(list)
    for r in reports:
        for name, _ in r.failures:
            failing[name].append(r.who)
    if failing:
        lines += ["", "failing lines (check: count, who)"]
        for name, who in sorted(failing.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {name:<22} {len(who):>3}  {', '.join(sorted(who))}")
    notes = Counter(name for r in reports for name, _ in r.notes)
    if notes:
        lines += ["", "notes (not failures): " + ", ".join(f"{n} ×{c}" for n, c in notes.most_common())]
    moves = moving(reports)
    if moves:
        lines += ["", "untested Pythons: each moves to the one their doctor's fix names (the stick has",
                  "its wheels; ask them to apply that fix before the day)"]
        lines += moves
    lines += ["", f"for the USB stick: make usb {make_args(reports)}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a folder of doctor outputs, one file per attendee")
    parser.add_argument("--make-args", action="store_true", help="print only PLATFORMS=... PYTHONS=...")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder}: no such folder (one doctor output per file)", file=sys.stderr)
        return 2
    reports = collect(args.folder)
    if not reports:
        print(f"{args.folder}: no doctor outputs (.txt files) here", file=sys.stderr)
        return 1
    print(make_args(reports) if args.make_args else summary(reports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
