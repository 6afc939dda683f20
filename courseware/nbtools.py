"""Maintainer commands for the course's notebooks: execute, normalise, check, reset.

    python -m courseware.nbtools run                 # every notebook, fresh kernel, top to bottom
    python -m courseware.nbtools run notebooks/03_*.ipynb
    python -m courseware.nbtools check               # what tests/test_notebook_hygiene.py checks
    python -m courseware.nbtools rerun notebooks/04_tools_condition_loop.ipynb
                                                  # no cell may break a cell above it
    python -m courseware.nbtools reset               # back up saved lessons, restore them from git

`make notebooks`, `make notebook NB=...`, `make rerun` and `make reset-lessons` call these. Never
edit outputs by hand: strict nbval compares every committed output with a fresh run.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
}
"""What ipykernel reports and JupyterLab writes into `metadata.language_info` (plus `version`):
a notebook stored with exactly this opens unmodified in JupyterLab."""
MAX_ERROR_LINES = 25
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
    """Machine-specific path prefixes in tracebacks, and what they are shown as (longest first).

    Each prefix is listed as written and, under the home folder, as IPython shows it (`~/...`).
    """
    paths = sysconfig.get_paths()
    prefixes = [
        (paths["purelib"], "site-packages"),
        (paths["platlib"], "site-packages"),
        (paths["stdlib"], f"python{sys.version_info[0]}.{sys.version_info[1]}"),
        (paths["platstdlib"], f"python{sys.version_info[0]}.{sys.version_info[1]}"),
        (str(ROOT), ""),
        (sys.prefix, "<python>"),
        (sys.base_prefix, "<python>"),
    ]
    home = os.path.expanduser("~")
    found: dict[str, str] = {}
    for prefix, shown in prefixes:
        for variant in {prefix, os.path.realpath(prefix)}:
            found.setdefault(variant.rstrip("/\\") + "/", shown + "/" if shown else "")
            if home not in ("/", "") and variant.startswith(home + os.sep):
                found.setdefault("~" + variant[len(home):].rstrip("/\\") + "/", shown + "/" if shown else "")
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _top_folders() -> list[str]:
    """The first folder of this checkout, the interpreter and the home folder (`/work`, `/opt`)."""
    tops = set()
    for path in (str(ROOT), sys.prefix, sys.base_prefix, os.path.expanduser("~"), tempfile.gettempdir()):
        parts = Path(path).parts
        if len(parts) > 1 and parts[0] == "/":
            tops.add(re.escape(parts[1]))
    return sorted(tops)


# Absolute or home-relative paths that name someone's machine: home folders, temp folders, Windows
# user folders, `~/`, and anything under the top folders this checkout and Python live in. A path
# the notebook's own code writes (a tool argument) is content, not a machine path: `check` ignores
# those.
MACHINE_PATH = re.compile(
    r"""(?<![\w.:/])(?:~[/\\]|/(?:home|Users|root|tmp|private|var/folders|opt|usr|srv|mnt|nix|"""
    + "|".join(_top_folders())
    + r""")/|[A-Za-z]:\\{1,2}(?:Users|Documents and Settings)\\)[^\s'"`:,)\]]*"""
)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def normalize_paths(text: str) -> str:
    """Rewrite this machine's paths in `text` the way committed tracebacks show them.

    `.../site-packages/langgraph/x.py` → `site-packages/langgraph/x.py`, the standard library
    (`~/.pyenv/versions/3.11.7/lib/python3.11/asyncio/...`) → `python3.11/asyncio/...`, this
    checkout → a repository-relative path, and any other home or temp folder → `.../`.
    Used by `normalize` on error outputs (nbval does not compare tracebacks).
    """
    for local, shown in _local_paths():
        text = text.replace(local, shown)
    pieces = re.split(f"({ANSI.pattern})", text)  # colour codes stay; paths between them change
    return "".join(
        piece if index % 2 else MACHINE_PATH.sub(_short_path, piece) for index, piece in enumerate(pieces)
    )


def _short_path(match: re.Match) -> str:
    return ".../" + match.group(0).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _merge_streams(outputs: list) -> list:
    merged: list = []
    for output in outputs:
        if (output.output_type == "stream" and merged and merged[-1].output_type == "stream"
                and merged[-1].name == output.name):
            merged[-1].text += output.text
        else:
            merged.append(output)
    return merged


REVEALS = re.compile(r"^reveal\(guess\b", re.M)
"""A cell's line that compares the learner's prediction with the run (helpers.practice.reveal)."""


def normalize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a copy with only what the course keeps: sources, tags, outputs, execution counts, and
    a cell's `jupyter` metadata (`{"outputs_hidden": true}` keeps an answer's output collapsed in
    JupyterLab until the learner opens it, or runs the cell). A cell that reveals a prediction
    (`reveal(guess, ...)`) always gets it: its committed output is the answer.

    Cell ids are kept, so inserting a cell changes no other cell's id; a cell with no id, an
    invalid one or a copy of an earlier cell's gets `cell-NN` from its position (the first such
    name not taken). Notebook metadata becomes the python3 kernelspec
    and the `language_info` ipykernel reports (so JupyterLab opens the notebook unmodified; the
    `version` of the kernel that ran it is kept); volatile output fields (`transient`, widget
    state) are dropped; consecutive stream outputs of one name are merged (a fresh run and a saved
    run split them differently); an SVG that JupyterLab rendered from a mermaid output is dropped
    (the mermaid text is the output); and tracebacks lose this machine's paths (`normalize_paths`).
    """
    nb = copy.deepcopy(nb)
    nb.nbformat, nb.nbformat_minor = 4, 5
    version = nb.get("metadata", {}).get("language_info", {}).get("version") or platform.python_version()
    info = {**copy.deepcopy(LANGUAGE_INFO), "version": version}
    nb.metadata = nbformat.from_dict({"kernelspec": dict(KERNELSPEC), "language_info": info})
    taken: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell.id = _stable_id(cell.get("id"), index, taken)
        tags = cell.get("metadata", {}).get("tags", [])
        jupyter = cell.get("metadata", {}).get("jupyter", {})
        kept = {"tags": list(tags)} if tags else {}
        if jupyter:
            kept["jupyter"] = copy.deepcopy(dict(jupyter))
        if cell.cell_type == "code" and REVEALS.search(cell.source):
            kept.setdefault("jupyter", {})["outputs_hidden"] = True
        cell.metadata = nbformat.from_dict(kept)
        if not cell.get("attachments"):
            cell.pop("attachments", None)
        if cell.cell_type != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        cell.outputs = _merge_streams(cell.get("outputs", []))
        for output in cell.outputs:
            output.pop("transient", None)
            if output.output_type == "error":
                output.traceback = [normalize_paths(line) for line in output.traceback]
            data = output.get("data", {})
            if "text/vnd.mermaid" in data and "image/svg+xml" in data:
                del data["image/svg+xml"]
            if "metadata" in output:
                output.metadata = nbformat.from_dict(
                    {k: v for k, v in output.metadata.items() if k.startswith("image/")}
                )
    return nb


_VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _stable_id(current: str | None, index: int, taken: set[str]) -> str:
    """The cell's own id when it is valid and not used by an earlier cell, else `cell-NN`."""
    if current and _VALID_ID.match(current) and current not in taken:
        taken.add(current)
        return current
    suffix = 0
    while (candidate := f"cell-{index:02d}" + (f"-{suffix}" if suffix else "")) in taken:
        suffix += 1
    taken.add(candidate)
    return candidate


SANITIZE_FILE = ROOT / "tests" / "nbval_sanitize.cfg"


@functools.cache
def _masks() -> tuple[tuple[re.Pattern, str], ...]:
    """The `regex:`/`replace:` pairs strict nbval masks outputs with (tests/nbval_sanitize.cfg)."""
    pairs, pattern = [], None
    for line in SANITIZE_FILE.read_text(encoding="utf-8").splitlines():
        if line.startswith("regex: "):
            pattern = re.compile(line[len("regex: "):])
        elif line.startswith("replace: ") and pattern is not None:
            pairs.append((pattern, line[len("replace: "):]))
            pattern = None
    return tuple(pairs)


def masked(text: str) -> str:
    """`text` as strict nbval compares it: durations, ratios, ids and addresses masked."""
    for pattern, replacement in _masks():
        text = pattern.sub(replacement, text)
    return text


def _comparable(outputs: list) -> str:
    """Outputs as nbval sees them: text masked, images left out (nbval does not compare PNG)."""
    shown = []
    for output in outputs:
        output = {k: v for k, v in output.items() if k not in ("execution_count", "metadata")}
        if "data" in output:
            output["data"] = {k: v for k, v in output["data"].items() if not k.startswith("image/")}
        shown.append(output)
    return masked(json.dumps(shown, sort_keys=True, ensure_ascii=False))


def keep_unchanged_outputs(new: nbformat.NotebookNode, old: nbformat.NotebookNode) -> int:
    """Put back `old`'s outputs wherever a fresh run only changed what nbval masks.

    A cell keeps its committed outputs when its id and source are the same in both and the fresh
    outputs equal the committed ones once durations, ratios and ids are masked and images are left
    out (a timing plot is redrawn only when its cell changed). Only the execution count follows the
    fresh run (a cell inserted above moves it). So a regenerated notebook's diff shows what a person
    changed, not the clock. Returns how many cells kept their outputs.
    """
    before = {cell.get("id"): cell for cell in old.cells if cell.cell_type == "code"}
    kept = 0
    for cell in new.cells:
        previous = before.get(cell.get("id"))
        if cell.cell_type != "code" or previous is None or previous.source != cell.source:
            continue
        if cell.outputs != previous.outputs and _comparable(cell.outputs) == _comparable(previous.outputs):
            outputs = copy.deepcopy(previous.outputs)
            for output in outputs:
                if "execution_count" in output:
                    output.execution_count = cell.execution_count
            if outputs != cell.outputs:
                cell.outputs = outputs
                kept += 1
    return kept


def _code_signature(nb: nbformat.NotebookNode) -> list:
    return [(c.source, sorted(c.get("metadata", {}).get("tags", []))) for c in nb.cells
            if c.cell_type == "code"]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)


RUN_INPUTS = ("helpers", "requirements.txt", "tests/nbval_sanitize.cfg")
"""What a notebook's outputs depend on besides its own code cells."""


def needs_run(path: Path) -> str:
    """Why `path` must be executed again ("" when normalising it is enough).

    A notebook needs a run when its cells were not run top to bottom, when one of its code cells
    (source or tags) differs from the committed version, or when the helpers, the lock or nbval's
    masks have uncommitted changes (the committed notebook passed strict nbval with the committed
    helpers). A change to its Markdown alone needs none: the outputs still come from one clean run
    of the same code.
    """
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if [c.get("execution_count") for c in code] != list(range(1, len(code) + 1)):
        return "its cells were not run top to bottom"
    rel = path.relative_to(ROOT).as_posix()
    shown = git("show", f"HEAD:{rel}")
    if shown.returncode:
        return "it is not committed yet"
    if _code_signature(nbformat.reads(shown.stdout, as_version=4)) != _code_signature(nb):
        return "a code cell changed"
    inputs = git("diff", "--name-only", "HEAD", "--", *RUN_INPUTS).stdout.split()
    if inputs:
        return f"{inputs[0]} has uncommitted changes"
    return ""


def _dumps(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def execute(path: Path, timeout: int = 180) -> float:
    """Run `path` in a fresh python3 kernel, top to bottom, normalise it and write it back.

    Cells tagged `raises-exception` may (and must) raise; any other error stops the run and the
    file is left untouched. Outputs that changed only where nbval masks them keep their committed
    text (`keep_unchanged_outputs`). Returns the seconds the run took.
    """
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    committed = normalize(nb)
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
    keep_unchanged_outputs(nb, committed)
    problems = check(nb)
    if problems:
        raise RuntimeError(f"{path}: the fresh run is not fit to commit:\n  " + "\n  ".join(problems))
    path.write_text(_dumps(nb), encoding="utf-8")
    return seconds


def write(path: Path, nb: nbformat.NotebookNode) -> bool:
    """Write `nb` to `path` normalised; True when the file changed."""
    path = Path(path)
    text = _dumps(normalize(nb))
    changed = not path.exists() or path.read_text(encoding="utf-8") != text
    if changed:
        path.write_text(text, encoding="utf-8")
    return changed


def tidy(path: Path) -> bool:
    """Normalise `path` in place without running it; True when the file changed."""
    return write(path, nbformat.read(path, as_version=4))


def _headings(nb: nbformat.NotebookNode) -> list[str]:
    heads = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heads += [m.strip() for m in re.findall(r"^##\s+(.+)$", cell.source, flags=re.M)]
    return heads


def machine_paths(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    """`(cell index, path)` for every absolute or home-relative machine path in an output.

    Paths that the notebook's own sources contain (a tool argument such as `/tmp/old.log`) are
    lesson content and are not reported. Used by `check`.
    """
    sources = "\n".join(cell.source for cell in nb.cells)
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            texts = [output.get("text", ""), output.get("evalue", ""), *output.get("traceback", [])]
            texts += [v for v in output.get("data", {}).values() if isinstance(v, str)]
            for text in texts:
                text = ANSI.sub("", text if isinstance(text, str) else "".join(text))
                for match in MACHINE_PATH.finditer(text):
                    if match.group(0) not in sources:
                        found.append((index, match.group(0)))
    return found


def _without_version(text: str) -> str:
    return re.sub(r'("language_info": \{[^}]*?"version": )"[^"]*"', r'\1""', text, flags=re.S)


def check(nb: nbformat.NotebookNode, raw: str | None = None) -> list[str]:
    """List what makes a notebook unfit to commit (empty list: fine).

    Checks that it was executed top to bottom in one run (counts 1..n, none missing), that it is
    normalised (when `raw`, the file's text, is given; the Python version in `language_info` may
    differ), that it opens with Review → Goals → Prerequisites → Setup and closes with Recap →
    Check your understanding → What's next, that exactly the cells tagged `raises-exception` show
    an error, that no error output is longer than 25 lines, that no output shows a machine path,
    and that nothing volatile or heavy (stderr, SVG, oversized outputs) was stored.
    """
    problems: list[str] = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    if counts != list(range(1, len(code) + 1)):
        problems.append(
            f"execution counts are {counts}, not 1..{len(code)}: regenerate with "
            "`make notebook NB=<path>` (one clean top-to-bottom run)"
        )
    if raw is not None and _without_version(raw) != _without_version(_dumps(normalize(nb))):
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
            if output.output_type == "error":
                lines = "\n".join(output.get("traceback", [])).count("\n") + 1
                if lines > MAX_ERROR_LINES:
                    problems.append(
                        f"cell {index}'s error output is {lines} lines (at most {MAX_ERROR_LINES}: the "
                        "cause must be on the first screen): run `%xmode Minimal` in the Setup cell "
                        "(and say that `%xmode Context` brings full tracebacks back), then regenerate"
                    )
        if re.search(r"^\s*[%!]pip\b", cell.source, flags=re.M):
            problems.append(f"cell {index} installs packages: the environment does that (make lab)")
    by_cell: dict[int, list[str]] = {}
    for index, path in machine_paths(nb):
        if path not in by_cell.setdefault(index, []):
            by_cell[index].append(path)
    for index, paths in by_cell.items():
        more = f" and {len(paths) - 2} more" if len(paths) > 2 else ""
        problems.append(
            f"cell {index} shows a machine path ({', '.join(map(repr, paths[:2]))}{more}): print paths "
            "relative to the repository (or `Path.name`); tracebacks are normalised by "
            "`make notebook NB=<path>`"
        )
    size = len(nbformat.writes(nb).encode())
    if size > MAX_BYTES:
        problems.append(f"{size} bytes: keep figures small (dpi) and graphs as mermaid text")
    return problems


def _has_error(cell: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    return next((o for o in cell.get("outputs", []) if o.output_type == "error"), None)


def rerun(path: Path, fraction: float = 0.5, timeout: int = 180) -> list[str]:
    """Check that no cell breaks a cell above it: run `path` top to bottom, then re-run the code
    cells of its first `fraction` again in the same kernel, and list each cell that newly fails.

    A learner scrolls back and re-runs an earlier cell after running the whole lesson; if a later
    cell rebound a name (`tools = ...`) or changed shared state, that earlier cell now breaks.
    The first half is re-run bottom up (from its last cell back to the top), so each cell meets
    the state the cells below it left, as when a learner re-runs that one cell.
    Nothing is written to `path`. Used by `make rerun NB=...` and `python -m courseware.nbtools rerun`.

    Returns:
        One line per cell that ran fine the first time and raises on the re-run (empty: fine).
    """
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    for index in code:
        nb.cells[index].outputs, nb.cells[index].execution_count = [], None
    saved = {key: os.environ.pop(key) for key in OFFLINE_ENV_UNSET if key in os.environ}
    problems = []
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel():
            for index in code:
                client.execute_cell(nb.cells[index], index)
            first_failed = {index for index in code if _has_error(nb.cells[index])}
            for index in reversed(code[: max(1, round(len(code) * fraction))]):
                again = copy.deepcopy(nb.cells[index])
                again.outputs = []
                client.execute_cell(again, index)
                error = _has_error(again)
                if error is not None and index not in first_failed:
                    problems.append(
                        f"cell {index} passes top to bottom but fails when re-run after the whole "
                        f"notebook: {error.ename}: {error.evalue[:200]} — a later cell changed a name "
                        "or state it relies on: give the later one its own name, or rebuild it here"
                    )
    finally:
        os.environ.update(saved)
    return problems


def reset_lessons(root: Path = ROOT, folder: str = "notebooks") -> tuple[list[Path], Path | None]:
    """Back up the lessons a learner changed (ran and saved in JupyterLab), then restore them from git.

    Saving a lesson stores the learner's outputs, execution counts and JupyterLab's rendered
    graphs; strict nbval and the hygiene check compare the committed run, so `make test` then
    fails. This puts the committed lessons back and keeps the learner's copies in
    `saved-lessons/<date-time>/`. Used by `make reset-lessons`.

    Returns:
        The restored notebooks (repository-relative) and the backup folder (None: nothing changed).

    Raises:
        RuntimeError: `root` is not a git checkout (then download the course again).
    """
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(
                f"`git {' '.join(args)}` failed in {root.name}: {result.stderr.strip()}. Resetting the "
                "lessons needs a git checkout: `git clone` the course again, or copy the notebooks "
                "from a fresh download."
            )
        return result.stdout

    changed = []
    for line in git("status", "--porcelain", "--untracked-files=no", "--", folder).splitlines():
        name = line[3:].strip().strip('"')
        if name.endswith(".ipynb"):
            changed.append(Path(name))
    if not changed:
        return [], None
    backup = root / "saved-lessons" / time.strftime("%Y%m%d-%H%M%S")
    backup.mkdir(parents=True, exist_ok=True)
    for name in changed:
        if (root / name).exists():
            shutil.copy2(root / name, backup / name.name)
    git("checkout", "HEAD", "--", *map(str, changed))
    return changed, backup


def _expand(paths: Iterable[str]) -> list[Path]:
    chosen = [Path(p) for p in paths]
    return chosen or course_notebooks()



@functools.cache
def _changed_since_commit(path: Path) -> bool:
    """True when git says the file differs from the last commit (a lesson saved from JupyterLab)."""
    try:
        result = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--", str(path)],
                                capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 1


def saved_lesson_note(path: Path) -> str:
    """What a failing check of a lesson says first when the learner saved that lesson ("" if not).

    Used by the nbval report in tests/conftest.py and by tests/test_notebook_hygiene.py.
    """
    path = Path(path)
    if path.parent.name != "notebooks" or not _changed_since_commit(path):
        return ""
    return (
        f"{path.relative_to(ROOT)} differs from the committed lesson (was it run and saved in "
        "JupyterLab?). The checks compare the committed run: `make reset-lessons` backs up your "
        "copies to saved-lessons/ and restores the lessons; then run `make test` again. "
        "(Maintainers: regenerate with `make notebook NB=<path>` instead.)"
    )

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m courseware.nbtools", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute, normalise and write notebooks")
    run.add_argument("paths", nargs="*")
    run.add_argument("--fresh", action="store_true",
                     help="run even when only Markdown changed since the last commit")
    chk = sub.add_parser("check", help="report notebooks that are not fit to commit")
    chk.add_argument("paths", nargs="*")
    again = sub.add_parser("rerun", help="run top to bottom, re-run the first half: no cell may break "
                                         "a cell above it (nothing is written)")
    again.add_argument("paths", nargs="*")
    sub.add_parser("reset", help="back up the lessons you saved, then restore them from git")
    args = parser.parse_args(argv)

    if args.command == "reset":
        restored, backup = reset_lessons()
        if not restored:
            print("nothing to reset: every lesson in notebooks/ is as committed")
        else:
            print(f"restored {len(restored)} lesson(s) from git: " + ", ".join(p.name for p in restored))
            print(f"your copies are in {backup.relative_to(ROOT)}/")
        return 0

    failed = 0
    for path in _expand(args.paths):
        if not path.exists():
            print(f"{path}: no such notebook", file=sys.stderr)
            failed += 1
            continue
        if args.command == "run":
            why = "asked for a fresh run" if args.fresh else needs_run(path)
            if not why:
                tidy(path)
                print(f"normalised {path}: only its Markdown changed, so its outputs stand "
                      "(FRESH=1 runs it anyway)")
                continue
            try:
                seconds = execute(path)
            except Exception as exc:  # report every notebook, then fail
                print(f"FAILED {path}: {exc}", file=sys.stderr)
                failed += 1
            else:
                print(f"ran {path} in {seconds:.1f} s ({why})")
        elif args.command == "rerun":
            start = time.perf_counter()
            problems = rerun(path)
            for problem in problems:
                print(f"{path}: {problem}")
            print(f"{'FAILED' if problems else 'ok'} {path}: re-ran the first half in "
                  f"{time.perf_counter() - start:.1f} s")
            failed += bool(problems)
        else:
            raw = path.read_text(encoding="utf-8")
            problems = check(nbformat.reads(raw, as_version=4), raw)
            for problem in problems:
                print(f"{path}: {problem}")
            failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
