"""The inner loop: everything one lesson (or one lab) can break, checked in seconds.

    make quick NB=notebooks/03_builtin_toolnode.ipynb   # = python -m courseware.quick notebooks/03_...
    make quick LAB=02                                     # the lab: solution, starter, its check's tests

For a lesson: the notebook under strict nbval, the contract tests marked with its lesson (wherever
they live: the drill bank's module pins some of lesson 03's rules), its lab's solution, and the
consistency tests it can break (times and navigation, hygiene, links, cheat-sheet citations, every
derived file). For a lab: its solution and starter, the tests of its check (`tests/test_lab_NN.py`
and the cases of `tests/test_labs*.py` that name it) and the same consistency tests. `make test`
stays the gate before a commit lands; this is the loop while writing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSISTENCY = ("tests/test_course.py", "tests/test_notebook_hygiene.py", "tests/test_links.py",
               "tests/test_cheatsheets.py", "tests/test_derived.py")
"""What a change to one notebook can break elsewhere; `--only-lesson` keeps the cases about it."""


def _lesson_for(path: str):
    from courseware.course import LESSONS

    name = Path(path).name
    for row in LESSONS:
        if Path(row.file).name == name or (row.lab and Path(row.lab).name == name):
            return row
    raise SystemExit(
        f"quick: {path} is not a lesson or a lab of the course map (courseware/course.py). Name one, "
        "e.g. make quick NB=notebooks/03_builtin_toolnode.ipynb or make quick LAB=02"
    )


def plan(notebook: str | None = None, lab: str | None = None) -> tuple[list[str], list[str]]:
    """The paths to run and the lesson/lab names `--only-lesson` keeps."""
    if lab:
        from courseware.course import LESSONS

        rows = [row for row in LESSONS if row.lab and (row.code == lab.zfill(2) or Path(row.lab).stem == lab)]
        if not rows:
            labs = " ".join(row.code for row in LESSONS if row.lab)
            raise SystemExit(f"quick: no lab {lab!r}; the labs are {labs} (make quick LAB=02)")
        row = rows[0]
        stem = Path(row.lab).stem
        paths = [row.lab_solution, *CONSISTENCY, "tests/test_labs.py", "tests/test_labs_more.py"]
        own = ROOT / "tests" / f"test_lab_{row.code}.py"
        if own.exists():
            paths.append(own.relative_to(ROOT).as_posix())
        return paths, [stem, f"lab{row.code}", f"lab_{row.code}"]
    row = _lesson_for(notebook)
    paths = [row.file, "tests/contracts", *CONSISTENCY]
    names = [row.name]
    if row.lab:
        paths.insert(1, row.lab_solution)
        names.append(Path(row.lab).stem)
    return paths, names


def command(notebook: str | None = None, lab: str | None = None, workers: int = 3) -> list[str]:
    paths, names = plan(notebook, lab)
    only = [arg for name in names for arg in ("--only-lesson", name)]
    return [sys.executable, "-m", "pytest", "-q", "-n", str(workers), "--dist", "loadfile", *only, *paths]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m courseware.quick", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", nargs="?", help="a lesson, e.g. notebooks/03_builtin_toolnode.ipynb")
    parser.add_argument("--lab", help="a lab's number or name instead, e.g. 02")
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.notebook and not args.lab:
        parser.error("name a lesson (make quick NB=notebooks/03_builtin_toolnode.ipynb) or a lab (LAB=02)")
    cmd = command(args.notebook, args.lab, args.workers)
    print(" ".join(Path(c).name if c == sys.executable else c for c in cmd[1:]), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""}).returncode


if __name__ == "__main__":
    raise SystemExit(main())
