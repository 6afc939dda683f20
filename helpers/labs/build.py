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
import functools
import hashlib
import importlib
import io
import json
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import nbformat

from courseware.nbtools import KERNELSPEC, RAISES, normalize
from helpers.labs import BEGIN, END, LABS, NAMES, ROOT, SOLUTIONS, STARTER, shorten

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
    return [
        stem
        for stem in NAMES.values()
        if not (LABS / f"{stem}.ipynb").exists()
        or (LABS / f"{stem}.ipynb").read_text(encoding="utf-8") != starter_text(stem)
    ]


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
            exercise._check(namespace, sources=[])
        record = {"exercise": key, "status": "passed", "detail": ""}
    except core.CheckFailed as exc:
        record = {"exercise": key, "status": "not yet", "detail": _detail(exc)}
    except BaseException as exc:  # noqa: BLE001 - a grade, whatever happened
        record = {"exercise": key, "status": "error", "detail": f"{type(exc).__name__}: {exc}"}
    print(GRADE_MARK + json.dumps(record, ensure_ascii=False))
    return record


# -- a pristine copy of the checks, loaded before any of the notebook's cells --------------------------
PRISTINE_CELL = (
    "# toolnode-lab grading: the course's checks, loaded before any cell of the notebook\n"
    "from helpers.labs.build import pristine_checks as _pristine_{token}\n"
    "_pristine_{token}({lab!r}, {token!r}, {hashes}, globals())\n"
    "del _pristine_{token}\n"
)
GRADE_CELL = "_grade_{token}({lab!r}, {key!r}, globals())\n"


def course_files() -> dict[str, bytes]:
    """Every Python file of the course's helpers (the checks and what they are built on), by path
    relative to the repository: what a grading records before it runs a learner's notebook."""
    return {
        path.relative_to(ROOT).as_posix(): path.read_bytes()
        for path in sorted((ROOT / "helpers").rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def file_hashes(files: Mapping[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def _course_modules() -> dict[str, Any]:
    return {n: m for n, m in list(sys.modules.items()) if n == "helpers" or n.startswith("helpers.")}


def pristine_checks(lab: str, token: str, hashes: Mapping[str, str], namespace: dict) -> None:
    """Load lab `lab`'s checks afresh (in the grading kernel, before any cell of the learner's
    notebook runs) and keep them where the notebook's imports do not reach: the notebook's own
    `from helpers.labs.labNN import ...` gets copies of its own. Each module's file must have the hash
    the grading process recorded (else every grade says so); bytecode is compiled anew from those
    files. Puts the grader `_grade_<token>(lab, key, globals())` in `namespace`."""
    saved = _course_modules()
    for name in saved:
        del sys.modules[name]
    cache = tempfile.mkdtemp(prefix="toolnode-lab-pristine-")
    old_prefix = sys.pycache_prefix
    sys.pycache_prefix = cache  # no bytecode from disk: compiled from the files just hashed
    meta_path = list(sys.meta_path)
    problems: list[str] = []
    try:
        importlib.invalidate_caches()
        importlib.import_module(f"helpers.labs.lab{lab}")
        fresh_build = importlib.import_module("helpers.labs.build")
    except Exception as exc:  # noqa: BLE001 - said in every grade of this notebook
        problems.append(f"the course's checks could not be loaded: {type(exc).__name__}: {shorten(exc, 160)}")
        fresh_build = None
    finally:
        sys.pycache_prefix = old_prefix
        sys.meta_path[:] = meta_path  # the pristine guard's import hook stays out of the notebook's imports
        shutil.rmtree(cache, ignore_errors=True)
    pristine = _course_modules()
    for name, module in pristine.items():
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            relative = Path(path).resolve().relative_to(ROOT).as_posix()
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except (OSError, ValueError):
            problems.append(f"{name}: its file could not be read")
            continue
        if hashes.get(relative) != digest:
            problems.append(
                f"{relative} is not the file the grading recorded (changed on disk since: restore it, "
                "e.g. git checkout helpers/, and grade again)"
            )
    for name in pristine:
        del sys.modules[name]
    sys.modules.update(saved)
    stdout = sys.stdout
    if fresh_build is None:
        namespace[f"_grade_{token}"] = functools.partial(_cannot_grade, problems, stdout)
        return
    namespace[f"_grade_{token}"] = fresh_build._grader(pristine, problems, stdout)


def _cannot_grade(problems: list[str], stdout: Any, lab: str, key: str, namespace: Any) -> None:
    record = {"exercise": key, "status": "error", "detail": "; ".join(problems)[:300]}
    stdout.write(GRADE_MARK + json.dumps(record, ensure_ascii=False) + "\n")
    stdout.flush()


@contextlib.contextmanager
def _modules(pristine: dict[str, Any]):
    """`sys.modules` holds the pristine course modules inside the block (a check's own imports at
    run time get them), the notebook's after."""
    notebook = _course_modules()
    for name in notebook:
        sys.modules.pop(name, None)
    sys.modules.update(pristine)
    try:
        yield
    finally:
        for name, module in _course_modules().items():
            pristine.setdefault(name, module)  # imported during the check: fresh from disk, kept
            sys.modules.pop(name, None)
        sys.modules.update(notebook)


def _grader(pristine: dict[str, Any], problems: list[str], stdout: Any) -> Any:
    """The grading function the pristine copy of this module hands the kernel."""

    def grade_one(lab: str, key: str, namespace: dict) -> dict[str, str]:
        if problems:
            record = {"exercise": key, "status": "error", "detail": "; ".join(problems)[:300]}
        else:
            with _modules(pristine):
                core = pristine["helpers.labs"]
                exercise = getattr(pristine[f"helpers.labs.lab{lab}"], key)
                try:
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        exercise._check(namespace, sources=[])  # the report scans the notebook's cells
                    record = {"exercise": key, "status": "passed", "detail": ""}
                except core.CheckStopped:
                    detail = (
                        f"the check was stopped (KeyboardInterrupt: it took longer than {EXERCISE_TIMEOUT} s "
                        "and was interrupted, or the notebook's code raised it)"
                    )
                    record = {"exercise": key, "status": "error", "detail": detail}
                except core.CheckFailed as exc:
                    record = {"exercise": key, "status": "not yet", "detail": _detail(exc)}
                except BaseException as exc:  # noqa: BLE001 - a grade, whatever happened
                    record = {
                        "exercise": key,
                        "status": "error",
                        "detail": f"{type(exc).__name__}: {shorten(exc, 200)}",
                    }
        stdout.write(GRADE_MARK + json.dumps(record, ensure_ascii=False) + "\n")
        stdout.flush()
        return record

    return grade_one


def lab_of(path: Path) -> str | None:
    """The lab number a notebook's file name names (`01_make_it_concurrent-ana.ipynb` → `01`)."""
    for number, stem in NAMES.items():
        if stem in path.stem:
            return number
    return None


def grading_notebook(
    nb: nbformat.NotebookNode, lab: str, hashes: Mapping[str, str] | None = None
) -> nbformat.NotebookNode:
    """The learner's notebook without its check cells, after a cell that loads a pristine copy of
    the course's checks (`pristine_checks`, given the course files' `hashes`), then one course check
    cell per exercise, which grades with that copy."""
    token = secrets.token_hex(8)
    hashes = file_hashes(course_files()) if hashes is None else hashes
    graded = copy.deepcopy(nb)
    graded.cells = [c for c in graded.cells if not (c.cell_type == "code" and CHECK_CALL.search(c.source))]
    for cell in graded.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata["grading"] = "learner"
    literal = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(hashes.items())) + "}"
    first = nbformat.v4.new_code_cell(PRISTINE_CELL.format(token=token, lab=lab, hashes=literal))
    first.metadata["grading"] = "pristine"
    graded.cells.insert(0, first)
    for key in exercises(lab):
        cell = nbformat.v4.new_code_cell(GRADE_CELL.format(token=token, lab=lab, key=key))
        cell.metadata["grading"] = key
        graded.cells.append(cell)
    return graded


def grade(nb: nbformat.NotebookNode, name: str) -> list[Result]:
    """Per-exercise results read from an executed grading notebook's course check cells."""
    results: list[Result] = []
    broken = ""
    for cell in nb.cells:
        key = cell.get("metadata", {}).get("grading")
        if cell.cell_type == "code" and key == "pristine":
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if errors:
                broken = (
                    f"the course's checks could not be loaded: {errors[0].get('ename', '')}: "
                    + str(errors[0].get("evalue", "")).strip()
                )
            continue
        if cell.cell_type != "code" or key in (None, "learner"):
            continue
        if broken:
            results.append(Result(name, key, "error", broken))
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
    return EXERCISE_TIMEOUT if key not in (None, "learner") else CELL_TIMEOUT  # "pristine" too: imports


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


def tampering(nb: nbformat.NotebookNode) -> list[Any]:
    """The places in a notebook's own code cells (not its check cells) that read or write a check's
    internals (`helpers.labs.guard.scan`), each with its 1-based cell number in the notebook."""
    from helpers.labs import guard

    numbered = [
        (number, cell.source)
        for number, cell in enumerate(nb.cells, 1)
        if cell.cell_type == "code" and not CHECK_CALL.search(cell.source)
    ]
    findings = guard.scan(source for _, source in numbered)
    return [(numbered[f.cell - 1][0], f) for f in findings]


def _tampered(results: list[Result], found: list[Any]) -> list[Result]:
    """Each exercise a finding concerns (all of them, unless it names one) graded `not yet`."""
    out = []
    for result in results:
        mine = [(n, f) for n, f in found if f.exercise in (None, result.exercise)]
        if not mine or result.exercise == "-":
            out.append(result)
            continue
        number, first = mine[0]
        detail = (
            f"your cells reach into the check (cell {number}, line {first.line}: "
            f"`{shorten(first.code, 60)}` — "
            f"{first.what}); answers must come from your own code"
        )
        out.append(Result(result.notebook, result.exercise, "not yet", detail))
    return out


def changed_course_files(before: Mapping[str, bytes]) -> list[str]:
    """The course files that differ from `before` (changed, deleted or added) — read only: a grading
    never writes the course's files."""
    now = course_files()
    return sorted(name for name in set(before) | set(now) if before.get(name) != now.get(name))


def grade_notebook(path: Path, name: str, files: Mapping[str, bytes] | None = None) -> list[Result]:
    """Grade one learner's notebook: its own cells, then the course's check for each exercise, run
    by a pristine copy of the checks loaded before the notebook's first cell from the course files
    as `files` holds them (what `report` read when it started; default: now). Cells that reach into
    the checks get a verdict naming them; when a file the checks load is no longer as in `files`
    (a notebook's cells wrote it), the grades say so (`error`)."""
    lab = lab_of(Path(path))
    if lab is None:
        return [Result(name, "-", "error", "not a lab notebook (its name names no lab)")]
    files = course_files() if files is None else files
    try:
        learner = nbformat.read(path, as_version=4)
        nb = grading_notebook(learner, lab, file_hashes(files))
        executed = run_notebook(Path(path), nb)
    except Exception as exc:  # noqa: BLE001 - a file that is not a notebook, a kernel that died
        return [Result(name, "-", "error", f"{type(exc).__name__}: {shorten(exc, 120)}")]
    # a file the checks load that is no longer as `files` holds it (a notebook graded earlier wrote it)
    # makes the pristine cell refuse: its grades say which, for this notebook and every later one
    return _tampered(grade(executed, name), tampering(learner))


def report(folder: Path) -> list[Result]:
    results: list[Result] = []
    root = Path(folder)
    files = course_files()  # the checks every notebook of this report is graded with
    for path in lab_notebooks(root):
        name = str(path.relative_to(root)) if root.is_dir() else path.name
        results += grade_notebook(path, name, files)
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
    fresh = fresh_starter(stem)
    saved = None
    if path.exists() and path.read_text(encoding="utf-8") != fresh:
        saved = backup(path, now=now)
    path.write_text(fresh, encoding="utf-8")
    return path, saved


def fresh_starter(stem: str) -> str:
    """Lab `stem`'s starter as the course ships it: generated from its solution, or — in a copy
    without `labs/solutions/` (a USB stick, a release without solutions) — the starter committed in
    git. Raises `SystemExit` with one line saying what to do when there is neither."""
    if (SOLUTIONS / f"{stem}.ipynb").exists():
        return starter_text(stem)
    try:
        shown = subprocess.run(
            ["git", "show", f"HEAD:labs/{stem}.ipynb"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        shown = None
    if shown is not None and shown.returncode == 0 and shown.stdout.strip():
        return shown.stdout
    raise SystemExit(
        f"Cannot reset lab {stem[:2]} here: this copy has no labs/solutions/{stem}.ipynb and no git history "
        f"to take the starter from — copy labs/{stem}.ipynb from the course's download (or its repository) "
        "over yours; your file is unchanged."
    )


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
    if current is not None and current != source.read_text(encoding="utf-8"):
        try:
            starter = fresh_starter(stem)
        except SystemExit:
            starter = None  # no starter to compare with: keep a backup of the replaced file
        if current != starter:
            saved = backup(path)
    shutil.copy2(source, path)
    return path, source, saved


OPEN_TAB_WARNING = (
    "If this lab is open in JupyterLab, close its tab now without saving (or use File → Revert "
    "Notebook to Checkpoint / reload it): an open tab's next save or autosave writes your old version "
    "back over the file."
)
