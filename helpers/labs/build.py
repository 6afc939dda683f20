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

`report` grades learners' notebooks with the course's own checks (never the learner's check cells);
`reset` and `restore` replace a learner's notebook, keeping a visible backup in `labs/backups/`.

Taught in `labs/README.md`.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import datetime as _dt
import importlib
import io
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import nbformat

from courseware.nbtools import KERNELSPEC, RAISES, normalize
from helpers.labs import BEGIN, END, LABS, NAMES, SOLUTIONS, STARTER, shorten

SOLUTION_ONLY = "solution-only"
SOLUTION_BANNER = "**Solution notebook.**"
"""The text that opens every solution notebook; a starter never carries it."""
BACKUPS = LABS / "backups"
"""Where `reset` and `restore` keep the learner's previous version (visible in JupyterLab; git ignores it)."""
CHECK_CALL = re.compile(r"^\s*(q\d+)\.check\(", flags=re.M)
GRADE_MARK = "@@toolnode-lab-grade "
EXERCISE_TIMEOUT = 150
"""Seconds one grading cell (one exercise) may take; a check bounds each run of learner code itself."""
CELL_TIMEOUT = 60
"""Seconds one of the learner's own cells may take before the kernel is interrupted and the run goes on."""


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
        if SOLUTION_BANNER in cell.source:
            raise ValueError(
                f"a cell of the solution ({cell.source.strip()[:60]!r}…) would reach the starter with the "
                f"solution's banner: tag it `{SOLUTION_ONLY}` in the solution notebook, then "
                "`make labs-build`"
            )
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


def stale_starters() -> list[str]:
    """The labs whose committed starter differs from what their solution generates."""
    return [stem for stem in NAMES.values()
            if not (LABS / f"{stem}.ipynb").exists()
            or (LABS / f"{stem}.ipynb").read_text(encoding="utf-8") != starter_text(stem)]


def build(stems: Iterable[str] | None = None) -> list[Path]:
    """Write every starter (or the named ones); return the paths written."""
    written = []
    for stem in stems or NAMES.values():
        path = LABS / f"{stem}.ipynb"
        path.write_text(starter_text(stem), encoding="utf-8")
        written.append(path)
    return written


# -- grading lab notebooks with the course's checks --------------------------------------------------
@dataclass(frozen=True)
class Result:
    notebook: str
    exercise: str  # "q1", ... — or "-" for a notebook that could not be graded at all
    status: str  # "passed" | "not yet" | "error"
    detail: str


def exercises(lab: str) -> list[str]:
    """The exercise keys of lab `lab`, from the course's module (not from the learner's notebook)."""
    from helpers.labs import Exercise

    module = importlib.import_module(f"helpers.labs.lab{lab}")
    return sorted(k for k, v in vars(module).items() if isinstance(v, Exercise))


def _detail(exc: BaseException) -> str:
    fields = getattr(exc, "fields", {}) or {}
    if fields.get("summary"):
        text = fields["summary"]
    else:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        text = lines[0] if lines else type(exc).__name__
    text = re.sub(r"^q\d+ — ", "", text).removeprefix("not yet: ")
    return text.replace("your code still raises NotImplementedError: ", "still a stub: ")


def grade_exercise(lab: str, key: str, namespace: Mapping[str, Any]) -> dict[str, str]:
    """Run the course's check `key` of lab `lab` on `namespace`; print and return one grade record.

    The check module is reloaded first, so nothing the notebook changed in it counts."""
    import helpers.labs as core

    importlib.reload(core)
    module = importlib.reload(importlib.import_module(f"helpers.labs.lab{lab}"))
    exercise = getattr(module, key)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exercise.check(namespace)
        record = {"exercise": key, "status": "passed", "detail": ""}
    except core.CheckFailed as exc:
        record = {"exercise": key, "status": "not yet", "detail": _detail(exc)}
    except BaseException as exc:  # noqa: BLE001 - a grade, whatever happened
        record = {"exercise": key, "status": "error", "detail": f"{type(exc).__name__}: {exc}"}
    print(GRADE_MARK + json.dumps(record, ensure_ascii=False))
    return record


def lab_of(path: Path) -> str | None:
    """The lab number a notebook's file name names (`01_make_it_concurrent-ana.ipynb` → `01`)."""
    for number, stem in NAMES.items():
        if stem in path.stem:
            return number
    return None


def grading_notebook(nb: nbformat.NotebookNode, lab: str) -> nbformat.NotebookNode:
    """The learner's notebook without its check cells, then one course check cell per exercise."""
    graded = copy.deepcopy(nb)
    graded.cells = [c for c in graded.cells if not (c.cell_type == "code" and CHECK_CALL.search(c.source))]
    for cell in graded.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata["grading"] = "learner"
    for key in exercises(lab):
        cell = nbformat.v4.new_code_cell(
            f"from helpers.labs.build import grade_exercise as __grade\n__grade({lab!r}, {key!r}, globals())"
        )
        cell.metadata["grading"] = key
        graded.cells.append(cell)
    return graded


def grade(nb: nbformat.NotebookNode, name: str) -> list[Result]:
    """Per-exercise results read from an executed grading notebook's course check cells."""
    results: list[Result] = []
    for cell in nb.cells:
        key = cell.get("metadata", {}).get("grading")
        if cell.cell_type != "code" or key in (None, "learner"):
            continue
        record = None
        for output in cell.get("outputs", []):
            for line in str(output.get("text", "")).splitlines():
                if line.startswith(GRADE_MARK):
                    record = json.loads(line.removeprefix(GRADE_MARK))
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if record is not None:
            results.append(Result(name, record["exercise"], record["status"], record["detail"]))
        elif errors:
            ename = errors[0].get("ename", "")
            detail = (
                f"the check took longer than {EXERCISE_TIMEOUT} s and was interrupted"
                if ename == "CellTimeout"
                else f"{ename}: {str(errors[0].get('evalue', '')).strip()}"
            )
            results.append(Result(name, key, "error", detail))
        else:
            results.append(Result(name, key, "error", "the check printed no grade"))
    return results


def cell_timeout(cell: nbformat.NotebookNode) -> int:
    """Seconds `run_notebook` gives `cell`: `EXERCISE_TIMEOUT` for a grading cell, else `CELL_TIMEOUT`."""
    key = cell.get("metadata", {}).get("grading")
    return EXERCISE_TIMEOUT if key not in (None, "learner") else CELL_TIMEOUT


def run_notebook(path: Path, nb: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """Execute a notebook in a fresh kernel, carrying on past errors and past a cell that hangs
    (interrupted after `cell_timeout(cell)` s). The kernel's
    own log (its TCP warning) is kept out of the report."""
    from nbclient import NotebookClient

    nb = nb if nb is not None else nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout_func=cell_timeout,
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        # no per-cell timestamps: a grade needs none, and nbclient makes them with
        # datetime.utcnow(), deprecated since Python 3.12 (an error where warnings are errors)
        record_timing=False,
        error_on_timeout={
            "ename": "CellTimeout",
            "evalue": "the cell did not finish in time",
            "traceback": [],
        },
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    with tempfile.TemporaryFile() as log:
        client.execute(stderr=log, stdout=subprocess.DEVNULL)
    return nb


def lab_notebooks(folder: Path) -> list[Path]:
    """The lab notebooks in `folder` (recursively for an instructor's collection), sorted."""
    folder = Path(folder)
    if folder.is_file():
        return [folder]
    skip = {".ipynb_checkpoints", ".backups", "backups"}
    found = [
        p
        for p in folder.rglob("*.ipynb")
        if not skip & set(p.relative_to(folder).parts)
        and "solutions" not in p.relative_to(folder).parts
        and lab_of(p) is not None
    ]
    return sorted(found)


def grade_notebook(path: Path, name: str) -> list[Result]:
    """Grade one learner's notebook: its own cells, then the course's check for each exercise."""
    lab = lab_of(Path(path))
    if lab is None:
        return [Result(name, "-", "error", "not a lab notebook (its name names no lab)")]
    try:
        nb = grading_notebook(nbformat.read(path, as_version=4), lab)
        executed = run_notebook(Path(path), nb)
    except Exception as exc:  # noqa: BLE001 - a file that is not a notebook, a kernel that died
        return [Result(name, "-", "error", f"{type(exc).__name__}: {shorten(exc, 120)}")]
    return grade(executed, name)


def report(folder: Path) -> list[Result]:
    results: list[Result] = []
    root = Path(folder)
    for path in lab_notebooks(root):
        name = str(path.relative_to(root)) if root.is_dir() else path.name
        results += grade_notebook(path, name)
    return results


def totals(results: list[Result]) -> tuple[int, int, int]:
    """(exercises passed, exercises graded, notebooks that could not be graded)."""
    real = [r for r in results if r.exercise != "-"]
    return sum(r.status == "passed" for r in real), len(real), sum(r.exercise == "-" for r in results)


def table(results: list[Result], width: int = 90) -> str:
    """The per-exercise table `make labs` prints (details cut at a word, marked …)."""
    from helpers.returns import text_table

    rows = [(r.notebook, r.exercise, r.status, shorten(r.detail, width)) for r in results]
    passed, graded, broken = totals(results)
    tail = f"\n\n{passed} of {graded} exercises passed."
    if broken:
        tail += f" {broken} notebook(s) could not be graded (rows marked '-')."
    return text_table(["notebook", "exercise", "status", "detail"], rows) + tail


def write_json(results: list[Result], path: Path) -> Path:
    passed, graded, broken = totals(results)
    data = {
        "exercises": graded,
        "passed": passed,
        "notebooks_not_graded": broken,
        "results": [asdict(r) for r in results],
    }
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return Path(path)


def write_csv(results: list[Result], path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["notebook", "exercise", "status", "detail"])
        for r in results:
            writer.writerow([r.notebook, r.exercise, r.status, r.detail])
    return Path(path)


# -- reset and restore -----------------------------------------------------------------------------------
def _number(number: str) -> str:
    number = f"{int(number):02d}" if str(number).isdigit() else str(number)
    if number not in NAMES:
        raise SystemExit(f"No lab {number!r}: the labs are {', '.join(NAMES)} (make reset-lab N=01).")
    return number


def backup(path: Path, *, now: _dt.datetime | None = None) -> Path:
    """Copy `path` into `labs/backups/` under a name no other backup has, even within one second:
    `01_make_it_concurrent.2026-11-30T15-20-00.123456.ipynb` (a counter is added if need be)."""
    BACKUPS.mkdir(parents=True, exist_ok=True)
    stamp = (now or _dt.datetime.now()).strftime("%Y-%m-%dT%H-%M-%S.%f")
    target = BACKUPS / f"{path.stem}.{stamp}.ipynb"
    count = 1
    while target.exists():
        count += 1
        target = BACKUPS / f"{path.stem}.{stamp}-{count}.ipynb"
    shutil.copy2(path, target)
    return target


def backups(number: str) -> list[Path]:
    """Lab `number`'s backups, oldest first."""
    stem = NAMES[_number(number)]
    found = list(BACKUPS.glob(f"{stem}.*.ipynb")) if BACKUPS.exists() else []
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


def reset(number: str, *, now: _dt.datetime | None = None) -> tuple[Path, Path | None]:
    """Restore `labs/NN_*.ipynb` to its starter; back the learner's file up first.

    Returns `(starter path, backup path or None)`. Backups go to `labs/backups/` (git ignores it),
    named with a timestamp down to the microsecond, e.g.
    `01_make_it_concurrent.2026-11-30T15-20-00.123456.ipynb`.
    """
    stem = NAMES[_number(number)]
    path = LABS / f"{stem}.ipynb"
    fresh = starter_text(stem)
    saved = None
    if path.exists() and path.read_text(encoding="utf-8") != fresh:
        saved = backup(path, now=now)
    path.write_text(fresh, encoding="utf-8")
    return path, saved


def restore(number: str, which: str | None = None) -> tuple[Path, Path, Path | None]:
    """Put a backup of lab `number` back in `labs/` (the newest, or `which`: a file name or path).

    The current file is backed up first, so a restore can be undone the same way. Returns
    `(lab path, backup restored, backup of the replaced file or None)`."""
    number = _number(number)
    stem = NAMES[number]
    if which:
        source = Path(which)
        if not source.exists():
            source = BACKUPS / Path(which).name
        if not source.exists():
            names = ", ".join(p.name for p in backups(number)) or "none yet"
            raise SystemExit(f"No backup {which!r}. Lab {number}'s backups in {BACKUPS}: {names}.")
    else:
        found = backups(number)
        if not found:
            raise SystemExit(f"Lab {number} has no backup in {BACKUPS} yet (a reset makes one).")
        source = found[-1]
    path = LABS / f"{stem}.ipynb"
    saved = None
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current is not None and current not in (source.read_text(encoding="utf-8"), starter_text(stem)):
        saved = backup(path)
    shutil.copy2(source, path)
    return path, source, saved


OPEN_TAB_WARNING = (
    "If this lab is open in JupyterLab, close its tab now without saving (or use File → Revert "
    "Notebook to Checkpoint / reload it): an open tab's next save or autosave writes your old version "
    "back over the file."
)
