"""`python -m helpers.labs build | report [DIR] | reset N|all | restore N [BACKUP] | list` (the
Makefile's labs targets)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.labs import LABS, NAMES, ROOT
from helpers.labs.build import (
    OPEN_TAB_WARNING,
    backups,
    build,
    report,
    reset,
    restore,
    table,
    write_csv,
    write_json,
)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.labs")
    sub = parser.add_subparsers(dest="command", required=True)
    bld = sub.add_parser("build", help="regenerate labs/NN_*.ipynb (starters) from labs/solutions/")
    bld.add_argument("numbers", nargs="*", help=f"lab numbers ({', '.join(NAMES)}); default: all")
    rep = sub.add_parser(
        "report",
        help="grade lab notebooks with the course's own checks (the notebooks' check cells are not run)",
    )
    rep.add_argument(
        "folder",
        nargs="?",
        default="",
        help="a learner's labs/ (default) or a folder of collected notebooks (searched recursively)",
    )
    rep.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    rep.add_argument("--csv", metavar="FILE", help="also write the results as CSV")
    res = sub.add_parser("reset", help="restore starters, keeping a backup of the learner's file")
    res.add_argument("number", help=f"a lab number ({', '.join(NAMES)}) or 'all'")
    lst = sub.add_parser("list", help="the labs: number and notebook, one a line")
    lst.add_argument("--numbers", action="store_true", help="only the numbers, on one line")
    rst = sub.add_parser("restore", help="put a backup from labs/backups/ back (the newest by default)")
    rst.add_argument("number", help=f"a lab number ({', '.join(NAMES)})")
    rst.add_argument("backup", nargs="?", help="a backup's file name or path (default: the newest)")
    args = parser.parse_args(argv)

    if args.command == "build":
        unknown = [n for n in args.numbers if n not in NAMES]
        if unknown:
            print(f"No lab {unknown[0]!r}: the labs are {', '.join(NAMES)}.", file=sys.stderr)
            return 2
        for path in build([NAMES[n] for n in args.numbers] or None):
            print(f"wrote {_shown(path)}")
        return 0
    if args.command == "report":
        folder = Path(args.folder) if args.folder else LABS
        if not folder.exists():
            print(f"{folder}: no such folder or notebook", file=sys.stderr)
            return 2
        results = report(folder)
        if not results:
            print(f"No lab notebooks in {folder} (names contain e.g. {NAMES['01']}).")
            return 1
        print(table(results))
        if args.json:
            print(f"wrote {write_json(results, Path(args.json))}")
        if args.csv:
            print(f"wrote {write_csv(results, Path(args.csv))}")
        return 0
    if args.command == "list":
        here = [n for n, stem in NAMES.items() if (LABS / f"{stem}.ipynb").exists()]
        if args.numbers:
            print(" ".join(here))
        else:
            for number in here:
                print(f"{number}  labs/{NAMES[number]}.ipynb")
        return 0
    if args.command == "restore":
        path, source, saved = restore(args.number, args.backup)
        kept = f"; the version it replaced is saved as {_shown(saved)}" if saved else ""
        print(f"restored {_shown(path)} from {_shown(source)}{kept}")
        print(OPEN_TAB_WARNING)
        return 0
    numbers = list(NAMES) if args.number == "all" else [args.number]
    for number in numbers:
        path, saved = reset(number)
        note = f" (your version saved as {_shown(saved)})" if saved else " (it was unchanged)"
        print(f"restored {_shown(path)} to its starter{note}")
    if any(backups(n) for n in numbers):
        print(
            "Bring a version back with: python -m helpers.labs restore NN [BACKUP] "
            f"(backups in {_shown(LABS / 'backups')}/)"
        )
    print(OPEN_TAB_WARNING)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
