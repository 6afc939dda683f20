"""`python -m helpers.labs build | report [DIR] | reset N|all` (the Makefile's labs targets)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.labs import LABS, NAMES, ROOT
from helpers.labs.build import build, report, reset, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.labs")
    sub = parser.add_subparsers(dest="command", required=True)
    bld = sub.add_parser("build", help="regenerate labs/NN_*.ipynb (starters) from labs/solutions/")
    bld.add_argument("numbers", nargs="*", help=f"lab numbers ({', '.join(NAMES)}); default: all")
    rep = sub.add_parser("report", help="run lab notebooks headless; print a per-exercise table")
    rep.add_argument(
        "folder",
        nargs="?",
        default=str(LABS),
        help="a learner's labs/ (default) or a folder of collected notebooks",
    )
    res = sub.add_parser("reset", help="restore starters, keeping a backup of the learner's file")
    res.add_argument("number", help=f"a lab number ({', '.join(NAMES)}) or 'all'")
    args = parser.parse_args(argv)

    if args.command == "build":
        unknown = [n for n in args.numbers if n not in NAMES]
        if unknown:
            print(f"No lab {unknown[0]!r}: the labs are {', '.join(NAMES)}.", file=sys.stderr)
            return 2
        for path in build([NAMES[n] for n in args.numbers] or None):
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if args.command == "report":
        folder = Path(args.folder)
        if not folder.exists():
            print(f"{folder}: no such folder or notebook", file=sys.stderr)
            return 2
        results = report(folder)
        if not results:
            print(f"No lab notebooks in {folder} (names contain e.g. {NAMES['01']}).")
            return 1
        print(table(results))
        return 0
    numbers = list(NAMES) if args.number == "all" else [args.number]
    for number in numbers:
        path, backup = reset(number)
        saved = f" (your version saved as {backup.relative_to(ROOT)})" if backup else " (it was unchanged)"
        print(f"restored {path.relative_to(ROOT)}{saved}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
