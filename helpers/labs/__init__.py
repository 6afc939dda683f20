"""Self-checking labs: `q1.check()`, `q1.hint()`, `q1.solution()` for every exercise.

One module per lab (`helpers.labs.lab01` ... `lab08`, numbered by the lesson the lab follows). Each
exercise is an `Exercise`: its `check()` runs the learner's code for real (a real ToolNode, a real
graph, real timing read as ratios) and, when something is not right yet, raises `CheckFailed` with
what was expected, what was observed and the lesson section to re-read — never a bare assertion.

Checks work inside a running event loop (a notebook's top-level `await` loop): the learner's
coroutines run on a fresh loop in a worker thread, so `q1.check()` is an ordinary call everywhere.

    python -m helpers.labs build          # regenerate labs/NN_*.ipynb from labs/solutions/
    python -m helpers.labs report [DIR]   # run lab notebooks headless, print a per-exercise table
    python -m helpers.labs reset N|all    # restore starters, keeping a backup of the learner's file

Taught in `labs/README.md` (how labs work).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import textwrap
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
LABS = ROOT / "labs"
SOLUTIONS = LABS / "solutions"
NAMES = {
    "01": "01_make_it_concurrent",
    "02": "02_build_a_tool_node",
    "03": "03_error_policy",
    "05": "05_predict_return_types",
    "06": "06_hand_off_to_parent",
    "08": "08_guard_dangerous_tools",
}
"""The six labs by number (the lesson each one follows) → file stem in `labs/` and `labs/solutions/`."""

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION (?P<key>q\d+): (?P<stub>.+?)\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
STARTER = re.compile(r"^(?P<indent>\s*)# starter: ?(?P<code>.*)$")


class CheckFailed(Exception):
    """An exercise is not solved yet: the message says what was expected, what was observed, and
    where to look. Raised by `Exercise.check()`."""


def section(notebook: str, heading: str) -> str:
    """A lesson section as text and a link JupyterLab opens at that heading (from `labs/`)."""
    anchor = heading.replace("`", "").replace(" ", "-")
    return f"lesson {notebook[:2]} § “{heading.replace('`', '')}” (../notebooks/{notebook}.ipynb#{anchor})"


def fail(summary: str, *, expected: str, observed: str, where: str, key: str = "") -> CheckFailed:
    """Build the one message shape every failed check uses."""
    lines = [
        f"{key + ' — ' if key else ''}not yet: {summary}",
        f"  expected: {expected}",
        f"  observed: {observed}",
        f"  look at:  {where}",
    ]
    if key:
        lines.append(f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()")
    return CheckFailed("\n".join(lines))


def run_async(make: Callable[[], Awaitable[Any]], timeout: float = 60.0) -> Any:
    """Run the coroutine `make()` creates, also when called from inside a running event loop.

    With no loop running in this thread, `asyncio.run`; inside one (a notebook cell), a fresh loop
    in a worker thread, waited for here. Exceptions are re-raised in the caller.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_bounded(make, timeout))
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(_bounded(make, timeout))
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="lab-check", daemon=True)
    worker.start()
    worker.join(timeout + 5)
    if "error" in box:
        raise box["error"]
    if "value" not in box:
        raise CheckFailed(f"the check did not finish within {timeout:.0f} s: does your code wait forever?")
    return box["value"]


async def _bounded(make: Callable[[], Awaitable[Any]], timeout: float) -> Any:
    return await asyncio.wait_for(make(), timeout)


@dataclass
class Exercise:
    """One exercise of a lab: the names it reads from the notebook, its checker, its hints.

    Args:
        lab: the lab's number, e.g. `"01"`.
        key: `"q1"`, `"q2"`, ... (the region name in the solution notebook).
        names: the names the learner defines (looked up in the notebook's globals).
        checker: `checker(*values) -> str` runs them for real; returns a one-line summary when they
            are right, raises `CheckFailed` (built with `fail`) when not.
        hints: tiered hints, a nudge first, then more.
    """

    lab: str
    key: str
    names: tuple[str, ...]
    checker: Callable[..., str]
    hints: tuple[str, ...]
    passed: bool = field(default=False, init=False)

    def values(self, namespace: Mapping[str, Any]) -> list[Any]:
        values = []
        for name in self.names:
            if name not in namespace:
                raise CheckFailed(
                    f"{self.key} — not yet: `{name}` is not defined.\n"
                    f"  Run the exercise cell above (replace its `raise NotImplementedError(...)` with your "
                    f"code first), then this check again."
                )
            values.append(namespace[name])
        return values

    def check(self, namespace: Mapping[str, Any] | None = None) -> None:
        """Run the learner's code for real; print a confirmation, or raise `CheckFailed`."""
        if namespace is None:
            namespace = inspect.currentframe().f_back.f_globals  # the notebook's names
        try:
            summary = self.checker(*self.values(namespace))
        except CheckFailed:
            self.passed = False
            raise
        except NotImplementedError as exc:
            self.passed = False
            raise CheckFailed(
                f"{self.key} — not yet: your code still raises NotImplementedError: {exc}\n"
                f"  Replace that `raise` line with your code, run the cell, then this check again.\n"
                f"  stuck?    {self.key}.hint() for a nudge, {self.key}.hint(2) for more"
            ) from None
        self.passed = True
        print(f"✔ {self.key} passed: {summary}")

    def hint(self, level: int = 1) -> None:
        """Print hint `level` (1: a nudge; higher: more)."""
        level = max(1, min(level, len(self.hints)))
        more = f"  (more: {self.key}.hint({level + 1}))" if level < len(self.hints) else ""
        text = (
            f"Hint {level}/{len(self.hints)} for {self.key}: {' '.join(self.hints[level - 1].split())}{more}"
        )
        print(textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False))

    def solution(self) -> None:
        """Print the solution, read from `labs/solutions/` (the single source of truth)."""
        print(f"Solution for {self.key} (from labs/solutions/{NAMES[self.lab]}.ipynb):\n")
        print(solution_text(self.lab, self.key))


def solution_regions(source: str) -> list[tuple[str, str, list[str]]]:
    """The solution regions of one cell: `(key, stub sentence, solution lines)` in order."""
    regions, current = [], None
    for line in source.splitlines():
        if current is None:
            match = BEGIN.match(line)
            if match:
                current = (match["key"], match["stub"], [])
        elif END.match(line):
            regions.append(current)
            current = None
        elif not STARTER.match(line):
            current[2].append(line)
    if current is not None:
        raise ValueError(f"a `# BEGIN SOLUTION {current[0]}` region has no `# END SOLUTION` line")
    return regions


def solution_text(lab: str, key: str) -> str:
    """The solution notebook's cells that hold region `key`, markers removed."""
    import nbformat

    path = SOLUTIONS / f"{NAMES[lab]}.ipynb"
    if not path.exists():
        return f"(no {path.name} here: solutions ship with the course repository, in labs/solutions/)"
    found = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code" and any(k == key for k, _, _ in solution_regions(cell.source)):
            found.append(
                "\n".join(
                    line
                    for line in cell.source.splitlines()
                    if not (BEGIN.match(line) or END.match(line) or STARTER.match(line))
                )
            )
    return "\n\n".join(found) or f"(no region {key} in {path.name})"
