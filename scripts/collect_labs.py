"""Collect learners' lab notebooks from a folder and show, on one screen, who is stuck where.

    python scripts/collect_labs.py DIR              # make collect DIR=/media/usb/collected
    python scripts/collect_labs.py DIR --json out.json

DIR is a shared drive or a USB stick's folder with one subfolder per learner (`ada/labs/01_….ipynb`)
or files prefixed with the learner's name (`ada_01_make_it_concurrent.ipynb`, `ada-01_….ipynb`).
No network is needed. The notebooks are copied to a staging folder as `<learner>/<lab>.ipynb`
and the labs report runs them headless (`python -m helpers.labs report STAGING --json FILE`; a
`helpers.labs` without `--json` is called in-process instead, and without either the plain
report is printed). Then one line per learner, one mark per exercise (✔ passed, · not yet,
✗ error, blank: not handed in), and under it each exercise with who has not passed it and the
first line of what the check said.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MARKS = {"passed": "✔", "not yet": "·", "error": "✗"}


def lab_stems() -> dict[str, str]:
    from helpers.labs import NAMES

    return dict(NAMES)


def discover(folder: Path) -> list[tuple[str, str, Path]]:
    """(learner, lab stem, path) for every lab notebook in folder: the learner is the first
    subfolder, or for a file at the top the part of its name before the lab's stem."""
    folder = Path(folder)
    stems = lab_stems().values()
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder)
        if {".ipynb_checkpoints", "backups", "solutions"} & set(rel.parts):
            continue
        stem = next((s for s in stems if s in path.stem), None)
        if stem is None:
            continue
        if len(rel.parts) > 1:
            learner = rel.parts[0]
        else:
            learner = path.stem.split(stem, 1)[0].rstrip("_- .") or "unnamed"
        found.append((learner, stem, path))
    return found


def stage(found: list[tuple[str, str, Path]], staging: Path) -> None:
    for learner, stem, path in found:
        target = staging / learner / f"{stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # two copies of one lab: keep the newest
            if target.stat().st_mtime >= path.stat().st_mtime:
                continue
        shutil.copy2(path, target)


def _rows(data) -> list[dict]:
    rows = data.get("results", data.get("exercises", [])) if isinstance(data, dict) else data
    return [dict(r) for r in rows]


def run_report(staging: Path) -> tuple[list[dict] | None, str]:
    """The labs report's rows (notebook, exercise, status, detail) and how they were obtained."""
    out = staging / "report.json"
    cmd = [sys.executable, "-m", "helpers.labs", "report", str(staging), "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.exists():
        return _rows(json.loads(out.read_text(encoding="utf-8"))), "helpers.labs report --json"
    if "unrecognized arguments" in done.stderr or "--json" in done.stderr:
        try:
            from dataclasses import asdict

            from helpers.labs.build import report

            return [asdict(r) for r in report(staging)], "helpers.labs.build.report (no --json here)"
        except ImportError:
            plain = subprocess.run(cmd[:5], capture_output=True, text=True, cwd=ROOT)
            return None, plain.stdout + plain.stderr
    return None, done.stdout + done.stderr


def learner_of(notebook: str) -> str:
    return Path(notebook).parts[0] if len(Path(notebook).parts) > 1 else "?"


def exercise_key(row: dict) -> str:
    lab = re.search(r"(\d\d)_", Path(row["notebook"]).name)
    return f"{lab.group(1) if lab else '??'} {row['exercise']}"


def summary(rows: list[dict], learners: list[str]) -> str:
    """The one-screen view: a grid of learners × exercises, then who is stuck on each exercise."""
    grid: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        grid[learner_of(row["notebook"])][exercise_key(row)] = row
    exercises = sorted({exercise_key(r) for r in rows if r["exercise"] != "-"})
    width = max([len(n) for n in learners] + [7])
    head = " " * (width + 2) + " ".join(f"{e:>6}" for e in exercises)
    lines = [head]
    for learner in learners:
        marks = []
        for ex in exercises:
            row = grid[learner].get(ex)
            marks.append(f"{MARKS.get(row['status'], '?') if row else '':>6}")
        broken = [r for k, r in grid[learner].items() if r["exercise"] == "-"]
        passed = sum(r["status"] == "passed" for r in grid[learner].values())
        extra = f"  ✗ notebook did not run: {broken[0]['detail'][:50]}" if broken else ""
        lines.append(f"{learner:<{width}}  " + " ".join(marks) + f"   {passed}/{len(exercises)}{extra}")
    lines += ["", "stuck (not passed yet), per exercise:"]
    for ex in exercises:
        stuck = [(n, grid[n][ex]) for n in learners if ex in grid[n] and grid[n][ex]["status"] != "passed"]
        if not stuck:
            continue
        details = defaultdict(list)
        for name, row in stuck:
            details[(row["detail"] or row["status"]).splitlines()[0][:70]].append(name)
        lines.append(f"  {ex}: {len(stuck)} of {sum(ex in grid[n] for n in learners)}")
        for detail, names in sorted(details.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"      {', '.join(names)} — {detail}")
    total = sum(r["status"] == "passed" for r in rows if r["exercise"] != "-")
    lines += ["", f"{len(learners)} learners, {total} of {sum(r['exercise'] != '-' for r in rows)} "
              "exercises passed (✔ passed · not yet ✗ error)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="the collected folder (a subfolder or a name_ prefix each)")
    parser.add_argument("--json", type=Path, help="also write the rows, with the learner, to this file")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder}: no such folder", file=sys.stderr)
        return 2
    found = discover(args.folder)
    if not found:
        print(f"No lab notebooks in {args.folder} (names contain e.g. 01_make_it_concurrent).")
        return 1
    learners = sorted({learner for learner, _, _ in found})
    print(f"collect: {len(found)} notebooks from {len(learners)} learners; running them headless "
          "(about 20 s each)…", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        stage(found, staging)
        rows, how = run_report(staging)
    if rows is None:
        print("The labs report gave no table; its output:\n" + how)
        return 1
    print(summary(rows, learners))
    if args.json:
        for row in rows:
            row["learner"] = learner_of(row["notebook"])
        args.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
