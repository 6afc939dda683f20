"""Tally the attendees' pre-flight results: who is ready, on which platforms, and what fails.

    python scripts/doctor_tally.py DIR                 # one `make doctor` output per file in DIR
    python scripts/doctor_tally.py DIR --make-args     # only `PLATFORMS=... PYTHONS=...` for make usb

Each file is one attendee's `make doctor` output as they sent it (`ada.txt`: the file's name is the
attendee). It reads the report's own lines — `[ok  ] name: detail`, `[FAIL] name: detail`,
`[note] ...` and the verdict `ready: ...` / `NOT ready: ...` — and counts ready / not ready, the
platforms and Pythons (the `platform` line, mapped to `courseware.platforms.TARGETS`), and every
failing line with who has it. The platforms it names are the wheelhouse's for `make usb`.
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


@dataclass
class Report:
    """One attendee's doctor output, read back."""

    who: str
    ready: bool | None = None  # None: no verdict line (a cut-off paste)
    platform: str | None = None  # a courseware.platforms.TARGETS name, or the raw text if unknown
    python: str | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)


def target_name(system: str, machine: str) -> str:
    from courseware.platforms import matching_target

    found = matching_target({"macOS": "Darwin"}.get(system, system), machine)
    return found.name if found else f"{system} {machine} (untested)"


def read_report(path: Path) -> Report:
    report = Report(path.stem)
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith("ready:"):
            report.ready = True
        elif line.lower().startswith("not ready:"):
            report.ready = False
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


def make_args(reports: list[Report]) -> str:
    """`PLATFORMS=... PYTHONS=...` for `make usb` / `make offline-bundle`: every tested platform named."""
    from courseware.platforms import TARGETS

    known = {t.name for t in TARGETS}
    platforms = sorted({r.platform for r in reports if r.platform in known})
    pythons = sorted({r.python for r in reports if r.python}, key=lambda v: tuple(map(int, v.split("."))))
    return f"PLATFORMS={','.join(platforms)} PYTHONS={','.join(pythons)}"


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
