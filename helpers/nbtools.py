"""Maintainer commands for the course's notebooks: execute, normalise, check.

    python -m helpers.nbtools run                 # every notebook, fresh kernel, top to bottom
    python -m helpers.nbtools run notebooks/03_*.ipynb
    python -m helpers.nbtools check               # what tests/test_notebook_hygiene.py checks

`make notebooks` and `make notebook NB=...` call these. Never edit outputs by hand: strict nbval
compares every committed output with a fresh run.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import sysconfig
import time
from collections.abc import Iterable
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
OPENING = ["Review", "Goals", "Prerequisites", "Setup"]
CLOSING = ["Recap", "Check your understanding", "What's next"]
RAISES = "raises-exception"
MAX_BYTES = 400_000
# Settings that must not leak into a regeneration (or a test run, see tests/conftest.py): outputs
# always come from the offline scripted model, with no tracing and matplotlib's inline backend.
TRACING_VARS = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")
OFFLINE_ENV_UNSET = ("TOOLNODE_LAB_MODEL", "MPLBACKEND", *TRACING_VARS)


def course_notebooks(root: Path = ROOT) -> list[Path]:
    """Every notebook strict nbval runs: the lessons, then the lab solutions."""
    found = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    found += sorted((root / "labs" / "solutions").glob("*.ipynb"))
    return found


def _local_paths() -> list[tuple[str, str]]:
    """Machine-specific path prefixes in tracebacks, and what they are shown as."""
    return [(sysconfig.get_paths()["purelib"] + "/", "site-packages/"), (f"{ROOT}/", "")]


def normalize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a copy with only what the course keeps: sources, tags, outputs, execution counts.

    Cell ids become `cell-NN` (stable diffs), notebook metadata becomes the plain python3
    kernelspec, volatile output fields (`transient`, widget state) are dropped, and tracebacks
    show `site-packages/...` and repository-relative paths instead of this machine's.
    """
    nb = copy.deepcopy(nb)
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata = nbformat.from_dict(
        {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    )
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index:02d}"
        tags = cell.get("metadata", {}).get("tags", [])
        cell.metadata = nbformat.from_dict({"tags": list(tags)} if tags else {})
        if not cell.get("attachments"):
            cell.pop("attachments", None)
        if cell.cell_type != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        for output in cell.get("outputs", []):
            output.pop("transient", None)
            if output.output_type == "error":
                for local, shown in _local_paths():
                    output.traceback = [line.replace(local, shown) for line in output.traceback]
            if "metadata" in output:
                output.metadata = nbformat.from_dict(
                    {k: v for k, v in output.metadata.items() if k.startswith("image/")}
                )
    return nb


def _dumps(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def execute(path: Path, timeout: int = 180) -> float:
    """Run `path` in a fresh python3 kernel, top to bottom, normalise it and write it back.

    Cells tagged `raises-exception` may (and must) raise; any other error stops the run and the
    file is left untouched. Returns the seconds the run took.
    """
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    saved = {key: os.environ.pop(key) for key in OFFLINE_ENV_UNSET if key in os.environ}
    start = time.perf_counter()
    try:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    finally:
        os.environ.update(saved)
    seconds = time.perf_counter() - start
    nb = normalize(nb)
    problems = check(nb)
    if problems:
        raise RuntimeError(f"{path}: the fresh run is not fit to commit:\n  " + "\n  ".join(problems))
    path.write_text(_dumps(nb), encoding="utf-8")
    return seconds


def _headings(nb: nbformat.NotebookNode) -> list[str]:
    heads = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heads += [m.strip() for m in re.findall(r"^##\s+(.+)$", cell.source, flags=re.M)]
    return heads


def check(nb: nbformat.NotebookNode, raw: str | None = None) -> list[str]:
    """List what makes a notebook unfit to commit (empty list: fine).

    Checks that it was executed top to bottom in one run (counts 1..n, none missing), that it is
    normalised (when `raw`, the file's text, is given), that it opens with Review → Goals →
    Prerequisites → Setup and closes with Recap → Check your understanding → What's next, that
    exactly the cells tagged `raises-exception` show an error, and that nothing volatile or
    heavy (stderr, SVG, oversized outputs) was stored.
    """
    problems: list[str] = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    if counts != list(range(1, len(code) + 1)):
        problems.append(
            f"execution counts are {counts}, not 1..{len(code)}: regenerate with "
            "`make notebook NB=<path>` (one clean top-to-bottom run)"
        )
    if raw is not None and raw != _dumps(normalize(nb)):
        problems.append("not normalised: regenerate with `make notebook NB=<path>`")

    heads = _headings(nb)
    wanted = OPENING + CLOSING
    positions = []
    for name in wanted:
        hits = [i for i, h in enumerate(heads) if h.startswith(name)]
        if not hits:
            problems.append(f"missing the '## {name}' section (every notebook has {wanted})")
        else:
            positions.append(hits[0])
    if len(positions) == len(wanted) and positions != sorted(positions):
        problems.append(f"sections out of order: want {wanted}")
    if heads and positions and len(positions) == len(wanted):
        if not heads[0].startswith("Review") or not heads[-1].startswith("What's next"):
            problems.append("the notebook must open with '## Review' and end with '## What's next'")

    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tagged = RAISES in cell.metadata.get("tags", [])
        types = [o.output_type for o in cell.outputs]
        if tagged and "error" not in types:
            problems.append(f"cell {index} is tagged {RAISES} but raised nothing")
        if not tagged and "error" in types:
            problems.append(f"cell {index} shows an error but is not tagged {RAISES}")
        for output in cell.outputs:
            if output.output_type == "stream" and output.name == "stderr":
                problems.append(
                    f"cell {index} wrote to stderr (warnings break strict nbval): {output.text[:120]!r}"
                )
            if "image/svg+xml" in output.get("data", {}):
                problems.append(f"cell {index} stores SVG (nbval compares it and it embeds a date): use PNG")
        if re.search(r"^\s*[%!]pip\b", cell.source, flags=re.M):
            problems.append(f"cell {index} installs packages: the environment does that (make lab)")
    size = len(nbformat.writes(nb).encode())
    if size > MAX_BYTES:
        problems.append(f"{size} bytes: keep figures small (dpi) and graphs as mermaid text")
    return problems


def _expand(paths: Iterable[str]) -> list[Path]:
    chosen = [Path(p) for p in paths]
    return chosen or course_notebooks()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.nbtools", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute, normalise and write notebooks")
    run.add_argument("paths", nargs="*")
    chk = sub.add_parser("check", help="report notebooks that are not fit to commit")
    chk.add_argument("paths", nargs="*")
    args = parser.parse_args(argv)

    failed = 0
    for path in _expand(args.paths):
        if not path.exists():
            print(f"{path}: no such notebook", file=sys.stderr)
            failed += 1
            continue
        if args.command == "run":
            try:
                seconds = execute(path)
            except Exception as exc:  # report every notebook, then fail
                print(f"FAILED {path}: {exc}", file=sys.stderr)
                failed += 1
            else:
                print(f"ran {path} in {seconds:.1f} s")
        else:
            raw = path.read_text(encoding="utf-8")
            problems = check(nbformat.reads(raw, as_version=4), raw)
            for problem in problems:
                print(f"{path}: {problem}")
            failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
