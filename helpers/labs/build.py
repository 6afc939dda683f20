"""Generate starters from solutions, run lab notebooks headless, restore starters.

The solution notebook `labs/solutions/NN_topic.ipynb` is the single source of truth. In a code
cell, a region

    # BEGIN SOLUTION q1: Run the calls together with asyncio.gather.
    ...the solution...
    # starter: CODE        (optional: CODE appears in the starter only)
    # END SOLUTION

becomes, in the starter `labs/NN_topic.ipynb`, the `# starter:` lines followed by
`raise NotImplementedError("Run the calls together with asyncio.gather.")` at the region's
indentation. Cells tagged `solution-only` are dropped; every output and count is cleared.

Taught in `labs/README.md`.
"""

from __future__ import annotations

import copy
import datetime as _dt
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from helpers.labs import BEGIN, END, LABS, NAMES, SOLUTIONS, STARTER
from helpers.nbtools import KERNELSPEC, RAISES, normalize

SOLUTION_ONLY = "solution-only"
BACKUPS = LABS / ".backups"
CHECK_CALL = re.compile(r"^\s*(q\d+)\.check\(", flags=re.M)


def starter_source(source: str) -> str:
    """One cell's source with every solution region replaced by its stub."""
    out: list[str] = []
    inside = None
    for line in source.splitlines():
        if inside is None:
            match = BEGIN.match(line)
            if match:
                inside = match
            else:
                out.append(line)
        elif END.match(line):
            sentence = inside["stub"].replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'{inside["indent"]}raise NotImplementedError("{sentence}")')
            inside = None
        else:
            starter = STARTER.match(line)
            if starter:
                out.append(starter["indent"] + starter["code"])
    if inside is not None:
        raise ValueError(f"a `# BEGIN SOLUTION {inside['key']}` region has no `# END SOLUTION` line")
    return "\n".join(out)


def relink(markdown: str) -> str:
    """Links written from `labs/solutions/` rewritten for the starter one folder up."""
    markdown = re.sub(r"\]\(\.\./(?!\.\./)", "](", markdown)
    return markdown.replace("](../../", "](../")


def starter_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner's starter built from a solution notebook: stubs in, outputs out."""
    nb = copy.deepcopy(solution)
    nb.cells = [c for c in nb.cells if SOLUTION_ONLY not in c.get("metadata", {}).get("tags", [])]
    for cell in nb.cells:
        if cell.cell_type == "code":
            if any(map(BEGIN.match, cell.source.splitlines())) or CHECK_CALL.search(cell.source):
                # JupyterLab's "Run All" goes on past a cell tagged raises-exception: a learner sees
                # every exercise's state, not just the first stub's.
                tags = cell.metadata.setdefault("tags", [])
                if RAISES not in tags:
                    tags.append(RAISES)
            cell.source = starter_source(cell.source)
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            cell.source = relink(cell.source)
    nb = normalize(nb)
    nb.metadata.kernelspec = dict(KERNELSPEC)
    return nb


def starter_text(stem: str) -> str:
    """What `labs/<stem>.ipynb` must contain: generated from `labs/solutions/<stem>.ipynb`."""
    solution = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    return nbformat.writes(starter_notebook(solution)) + "\n"


def build(stems: Iterable[str] | None = None) -> list[Path]:
    """Write every starter (or the named ones); return the paths written."""
    written = []
    for stem in stems or NAMES.values():
        path = LABS / f"{stem}.ipynb"
        path.write_text(starter_text(stem), encoding="utf-8")
        written.append(path)
    return written


# -- running lab notebooks headless ------------------------------------------------------------------
@dataclass(frozen=True)
class Result:
    notebook: str
    exercise: str
    status: str  # "passed" | "not yet" | "error"
    detail: str


def _first_line(output: dict) -> str:
    text = str(output.get("evalue", "")).strip().splitlines()
    return f"{output.get('ename')}: {text[0] if text else ''}"


def grade(nb: nbformat.NotebookNode, name: str) -> list[Result]:
    """Per-exercise results of an executed lab notebook (read from its check cells' outputs)."""
    results: list[Result] = []
    first_error = None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        keys = CHECK_CALL.findall(cell.source)
        if not keys:
            if errors and first_error is None and errors[0].get("ename") != "NotImplementedError":
                first_error = _first_line(errors[0])
            continue
        for key in keys:
            if not errors:
                results.append(Result(name, key, "passed", ""))
            elif errors[0].get("ename") in ("CheckFailed", "NotImplementedError"):
                detail = str(errors[0].get("evalue", "")).strip().splitlines()[0]
                detail = detail.removeprefix(f"{key} — ").removeprefix("not yet: ")
                detail = detail.replace("your code still raises NotImplementedError: ", "still a stub: ")
                results.append(Result(name, key, "not yet", detail))
            else:
                results.append(Result(name, key, "error", first_error or _first_line(errors[0])))
    return results


def run_notebook(path: Path, timeout: int = 120) -> nbformat.NotebookNode:
    """Execute a lab notebook top to bottom in a fresh kernel, carrying on past errors."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    return nb


def lab_notebooks(folder: Path) -> list[Path]:
    """The lab notebooks in `folder` (recursively for an instructor's collection), sorted."""
    folder = Path(folder)
    if folder.is_file():
        return [folder]
    found = [
        p
        for p in folder.rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
        and ".backups" not in p.parts
        and "solutions" not in p.relative_to(folder).parts
        and any(stem in p.stem for stem in NAMES.values())
    ]
    return sorted(found)


def table(results: list[Result]) -> str:
    """The per-exercise table `make labs` prints."""
    from helpers.returns import text_table

    rows = [(r.notebook, r.exercise, r.status, r.detail[:90]) for r in results]
    passed = sum(r.status == "passed" for r in results)
    return (
        text_table(["notebook", "exercise", "status", "detail"], rows)
        + f"\n\n{passed} of {len(results)} exercises passed."
    )


def report(folder: Path) -> list[Result]:
    results: list[Result] = []
    root = Path(folder)
    for path in lab_notebooks(root):
        name = str(path.relative_to(root)) if root.is_dir() else path.name
        try:
            nb = run_notebook(path)
        except Exception as exc:  # a kernel that died, a cell over the timeout: report, go on
            results.append(Result(name, "-", "error", f"{type(exc).__name__}: {str(exc).strip()[:80]}"))
            continue
        results += grade(nb, name) or [Result(name, "-", "error", "no check cells found (q1.check())")]
    return results


# -- reset ---------------------------------------------------------------------------------------------
def reset(number: str, *, now: _dt.datetime | None = None) -> tuple[Path, Path | None]:
    """Restore `labs/NN_*.ipynb` to its starter; back the learner's file up first.

    Returns `(starter path, backup path or None)`. Backups go to `labs/.backups/` (ignored by git),
    named with a timestamp, e.g. `01_make_it_concurrent.2026-11-30T15-20-00.ipynb`.
    """
    number = f"{int(number):02d}" if str(number).isdigit() else str(number)
    if number not in NAMES:
        raise SystemExit(f"No lab {number!r}: the labs are {', '.join(NAMES)} (make reset-lab N=01).")
    stem = NAMES[number]
    path = LABS / f"{stem}.ipynb"
    fresh = starter_text(stem)
    backup = None
    if path.exists() and path.read_text(encoding="utf-8") != fresh:
        BACKUPS.mkdir(exist_ok=True)
        stamp = (now or _dt.datetime.now()).strftime("%Y-%m-%dT%H-%M-%S")
        backup = BACKUPS / f"{stem}.{stamp}.ipynb"
        shutil.copy2(path, backup)
    path.write_text(fresh, encoding="utf-8")
    return path, backup
