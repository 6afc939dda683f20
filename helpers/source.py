"""Read the installed source of a library, live, so a lesson's excerpt can never drift from what runs.

A lesson that quotes a library's source by copying it goes stale at the next upgrade. `excerpt`
pulls the lines with `inspect` from the file Python actually imports, numbers them as they are
numbered in that file, and selects a slice by *content* (from the first line containing `start` to
the first line after it containing `end`), never by line numbers typed into the notebook. The
result prints as plain text, so strict nbval compares it: an upgrade that changes the code changes
the output and fails the notebook, which names the lesson to re-read.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SourceExcerpt:
    """Some consecutive lines of an installed source file, with their line numbers in that file.

    Attributes:
        name: what the lines belong to, e.g. `ToolNode._func`.
        path: the file, relative to the `sys.path` entry it was imported from
            (e.g. `langgraph/prebuilt/tool_node.py`), so it reads the same on every machine.
        first: the line number of the first line in that file (1-based).
        lines: the lines, dedented together, without line endings.

    Taught in `notebooks/07_inside_toolnode.ipynb`.
    """

    name: str
    path: str
    first: int
    lines: tuple[str, ...]

    @property
    def last(self) -> int:
        """The line number of the last line in the file."""
        return self.first + len(self.lines) - 1

    @property
    def text(self) -> str:
        """The code alone, without the header or the line numbers."""
        return "\n".join(self.lines)

    def __contains__(self, needle: str) -> bool:
        return needle in self.text

    def line_of(self, needle: str) -> int:
        """The file's line number of the first line in this excerpt that contains `needle`.

        Raises:
            ValueError: no line contains `needle`.
        """
        return self.first + _find(self.lines, needle, 0, self.name)

    def __str__(self) -> str:
        width = len(str(self.last))
        header = f"# {self.path}, lines {self.first}-{self.last} ({self.name})"
        numbered = [f"{self.first + i:>{width}} | {line}".rstrip() for i, line in enumerate(self.lines)]
        return "\n".join([header, *numbered])

    def __repr__(self) -> str:
        return f"<SourceExcerpt {self.name}: {self.path}, lines {self.first}-{self.last}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's text/plain: the numbered listing itself, which strict nbval compares.
        printer.text(str(self))


def _find(lines: tuple[str, ...] | list[str], needle: str, begin: int, name: str) -> int:
    for index in range(begin, len(lines)):
        if needle in lines[index]:
            return index
    raise ValueError(
        f"No line of {name} (from its line {begin + 1} on) contains {needle!r}. The installed "
        "version's source differs from the one this excerpt was written for: check the pinned "
        "versions (requirements.txt), then update the `start`/`end` text the lesson selects by."
    )


def relative_source_path(obj: Any) -> str:
    """Where `obj` is defined, relative to the `sys.path` entry it was imported from.

    Example:
        ```python
        relative_source_path(ToolNode)   # 'langgraph/prebuilt/tool_node.py'
        ```

    Taught in `notebooks/07_inside_toolnode.ipynb`.
    """
    file = Path(inspect.getsourcefile(inspect.unwrap(obj)) or "").resolve()
    roots = sorted(
        (Path(entry).resolve() for entry in sys.path if entry),
        key=lambda root: len(root.parts),
        reverse=True,
    )
    for root in roots:
        if root in file.parents:
            return file.relative_to(root).as_posix()
    return file.name


def excerpt(obj: Any, start: str | None = None, end: str | None = None) -> SourceExcerpt:
    """Return the installed source of a function, method or class, or a slice of it chosen by content.

    Args:
        obj: what to read, e.g. `ToolNode._func` (decorated functions are unwrapped).
        start: begin at the first line that contains this text (default: the first line).
        end: stop at the first line, from `start` on, that contains this text, and include it
            (default: the last line).

    Returns:
        A `SourceExcerpt` that prints as the numbered lines of the installed file.

    Raises:
        TypeError: `obj` has no Python source (a builtin, or an instance).
        ValueError: no line contains `start` or `end`: the installed version differs from the
            one the lesson was written for.

    Example:
        ```python
        excerpt(ToolNode._func, start="with get_executor_for_config", end="executor.map")
        # langgraph/prebuilt/tool_node.py, lines 843-845 (ToolNode._func)
        # 843 | with get_executor_for_config(config) as executor:
        # ...
        ```

    Taught in `notebooks/07_inside_toolnode.ipynb`.
    """
    target = inspect.unwrap(obj)
    name = getattr(target, "__qualname__", None) or repr(target)
    try:
        lines, first = inspect.getsourcelines(target)
    except (TypeError, OSError) as exc:
        raise TypeError(
            f"Cannot read the source of {name}: {exc}. Pass a function, method or class defined "
            "in a .py file (e.g. `ToolNode._func`), not an instance or a builtin."
        ) from exc
    lines = [line.rstrip("\n") for line in lines]
    begin = _find(lines, start, 0, name) if start is not None else 0
    stop = _find(lines, end, begin, name) if end is not None else len(lines) - 1
    chosen = textwrap.dedent("\n".join(lines[begin : stop + 1])).split("\n")
    return SourceExcerpt(name, relative_source_path(target), first + begin, tuple(chosen))
