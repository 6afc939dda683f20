"""The course map: every lesson's number, notebook, title, time and the lab that follows it.

This table is the one source for lesson times and the map. README's "The course" table is printed
from it (`python -m helpers.course`), lesson 00 shows it live, and `tests/test_course.py` checks
every notebook's `**Time:** about NN minutes.` line, its navigation line and its "What's next"
links against it.

Example:
    ```python
    from helpers.course import LESSONS, lesson
    lesson(3).minutes          # 35
    lesson(3).lab              # 'labs/03_error_policy.ipynb'
    sum(l.minutes for l in LESSONS)
    ```

Taught in `notebooks/00_start_here.ipynb`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    """One row of the course map. Paths are relative to the repository root."""

    number: int
    file: str
    title: str
    minutes: int
    lab: str | None
    teaches: str

    @property
    def code(self) -> str:
        """The two-digit number, e.g. `03`."""
        return f"{self.number:02d}"

    @property
    def name(self) -> str:
        """The notebook's file name without folder or suffix, e.g. `03_builtin_toolnode`."""
        return self.file.rsplit("/", 1)[-1].removesuffix(".ipynb")


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        0, 'notebooks/00_start_here.ipynb', 'Start here', 10, None,
        'the map and three tracks, the pre-flight check, offline vs real model, running and resetting',
    ),
    Lesson(
        1, 'notebooks/01_sequential_vs_gather.ipynb', 'Sequential vs asyncio.gather', 25,
        'labs/01_make_it_concurrent.ipynb',
        'timing and timelines, result vs completion order, dependent calls, '
        'failure semantics, scaling with N',
    ),
    Lesson(
        2, 'notebooks/02_custom_async_tool_node.ipynb', 'A hand-built tool node', 30,
        'labs/02_build_a_tool_node.ipynb',
        'tool-call anatomy, a name allow-list, errors → ToolMessage, timeouts, '
        'a concurrency limit, as a graph node',
    ),
    Lesson(
        3, 'notebooks/03_builtin_toolnode.ipynb', 'The built-in ToolNode', 35, 'labs/03_error_policy.ipynb',
        "in a graph and standalone (the 'N/A' error), thread-pool waves vs gather, "
        'max_concurrency, handle_tool_errors',
    ),
    Lesson(
        4, 'notebooks/04_tools_condition_loop.ipynb', 'The tools_condition loop', 35, None,
        'llm → tools → llm, routing, streaming, the real wire format via ChatOpenAI, '
        'switching to a real model',
    ),
    Lesson(
        5, 'notebooks/05_return_types.ipynb', 'Return-type rules', 30, 'labs/05_predict_return_types.ipynb',
        'the four input kinds, rule one, content conversion, reducers, a live input × return → output table',
    ),
    Lesson(
        6, 'notebooks/06_command_and_parent.ipynb', 'Command and Command.PARENT', 35,
        'labs/06_hand_off_to_parent.ipynb',
        'update/goto, validation errors, PARENT + Send merging, siblings in the batch, a real parent graph',
    ),
    Lesson(
        7, 'notebooks/07_inside_toolnode.ipynb', 'Inside ToolNode', 30, None,
        'the pinned source read live, the input payloads, ToolRuntime and injection',
    ),
    Lesson(
        8, 'notebooks/08_interceptors.ipynb', 'Interceptors', 30, 'labs/08_guard_dangerous_tools.ipynb',
        'wrap_tool_call / awrap_tool_call: logging, retry, deny-list, approval with interrupt(), pitfalls',
    ),
    Lesson(
        9, 'notebooks/09_prebuilt_agents.ipynb', 'The prebuilt agents', 35, None,
        'create_agent and create_react_agent: one Send per tool call, what that changes',
    ),
    Lesson(
        10, 'notebooks/10_mcp_tools.ipynb', 'MCP tools', 30, None,
        'a real local stdio MCP server → langchain-mcp-adapters → ToolNode; async-only; session cost',
    ),
    Lesson(
        11, 'notebooks/11_interview_walkthrough.ipynb', 'Interview walkthrough', 35, None,
        'predict-the-output drills verified live, myths vs facts, the cheat sheets',
    ),
)

COURSE_MAP_ANCHOR = "../README.md#the-course"

INTERVIEW_LESSONS: tuple[int, ...] = (1, 3, 5, 6, 8, 11)
"""The interview track: the rules (order and failure, ToolNode's concurrency and errors, return
shapes, `Command.PARENT`, interceptors), then lesson 11's drills."""

WORKSHOP_BLOCKS: tuple[tuple[str, int], ...] = (
    ("00 · tracks and the pre-flight check on screen", 10),
    ("01 · sequential vs gather: the timelines carry the argument", 25),
    ("02 · build the tool node live, cell by cell", 30),
    ("break", 10),
    ("03 · ToolNode: predict each timing and error before running it", 35),
    ("lab 03 · meet an error policy (pairs)", 15),
    ("04 · the tools_condition loop, streamed", 25),
    ("break", 10),
    ("05 + 06 highlights · the live table; Command.PARENT in a real parent graph", 15),
    ("wrap-up · 07–11 and the labs as homework", 5),
)
"""A three-hour workshop plan: (block, minutes), in order."""


def lesson(number: int) -> Lesson:
    """The lesson with this number; a clear error for one that does not exist."""
    for row in LESSONS:
        if row.number == number:
            return row
    raise KeyError(f"no lesson {number:02d}: the course has {LESSONS[0].code}–{LESSONS[-1].code}")


def neighbours(number: int) -> tuple[Lesson | None, Lesson | None]:
    """The previous and next lesson (None at either end of the course)."""
    index = [row.number for row in LESSONS].index(lesson(number).number)
    previous = LESSONS[index - 1] if index > 0 else None
    following = LESSONS[index + 1] if index + 1 < len(LESSONS) else None
    return previous, following


def navigation_line(number: int) -> str:
    """The line that ends a lesson's title cell: previous · course map · next.

    Example (for lesson 03), on one line:
    `[← 02 · A hand-built tool node](02_custom_async_tool_node.ipynb) · [Course map](../README.md#the-course)
    · [04 · The tools_condition loop →](04_tools_condition_loop.ipynb)`
    """
    previous, following = neighbours(number)
    parts = []
    if previous is not None:
        parts.append(f"[← {previous.code} · {previous.title}]({previous.name}.ipynb)")
    parts.append(f"[Course map]({COURSE_MAP_ANCHOR})")
    if following is not None:
        parts.append(f"[{following.code} · {following.title} →]({following.name}.ipynb)")
    return " · ".join(parts)


def total_minutes(numbers: list[int] | None = None) -> int:
    """Minutes for these lessons (all of them by default)."""
    rows = LESSONS if numbers is None else [lesson(n) for n in numbers]
    return sum(row.minutes for row in rows)


def markdown_table() -> str:
    """README's course table: one row per lesson, with its lab and time."""
    lines = ["| # | lesson | teaches | lab that follows | time |", "|---|---|---|---|---|"]
    for row in LESSONS:
        lab = f"[{row.lab.rsplit('/', 1)[-1].removesuffix('.ipynb')}]({row.lab})" if row.lab else ""
        lines.append(
            f"| {row.code} | [{row.title}]({row.file}) | {row.teaches} | {lab} | {row.minutes} min |"
        )
    return "\n".join(lines)


# -- the time estimate -----------------------------------------------------------------------------
# One estimator for every stated time: a lesson's, a lab's, a sitting's, a track's, a workshop block's.
# A learner reads the prose, reads and runs each code cell and looks at its output, answers the
# questions, predicts each drill before running it, writes each lab exercise. The constants are below;
# README's "How long things take" says where they come from.

WORDS_PER_MINUTE = 180
"""Reading speed for technical prose that is being learned, not skimmed."""
SECONDS_PER_CODE_CELL = 30
"""Run a cell, look at its output."""
SECONDS_PER_CODE_LINE = 3
"""Read a line of code before running it."""
SECONDS_PER_QUESTION = 30
"""Answer one *Check your understanding* question in your head."""
MINUTES_PER_DRILL = 1
"""Predict a drill's output before running it (on top of reading and running its cells)."""
MINUTES_PER_SPOKEN_ANSWER = 2
"""Say a two-minute interview answer out loud."""
MINUTES_PER_EXERCISE = 8
"""Write one lab exercise, run its check, read the feedback, fix once."""
RUN_MARGIN_MINUTES = 2
"""Open the notebook, start the kernel, wait for the slowest cells."""

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_TAG = re.compile(r"<[^>]+>")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_WORD = re.compile(r"[A-Za-z0-9_'’.+-]+|[\u3400-\u9fff]")
_DRILL = re.compile(r"^#{2,4} Drill\b", re.M)
_SPOKEN = re.compile(r"^#{2,4} Spoken answer\b", re.M)
_CHECK = re.compile(r"\b(q\d+)\.check\(")
_QUESTION = re.compile(r"^\s*(\d+[.)]|[-*]) ", re.M)


@dataclass(frozen=True)
class Estimate:
    """What a stretch of notebook asks of a learner, and the minutes that takes.

    Example:
        ```python
        from helpers.course import estimate
        e = estimate("notebooks/01_sequential_vs_gather.ipynb")
        e.words, e.code_cells, e.minutes   # (1973, 22, 35)
        ```
    """

    words: int = 0
    code_cells: int = 0
    code_lines: int = 0
    questions: int = 0
    drills: int = 0
    spoken_answers: int = 0
    exercises: int = 0
    margin: float = RUN_MARGIN_MINUTES
    parts: tuple = field(default=(), compare=False)

    @property
    def exact_minutes(self) -> float:
        """The estimate before rounding."""
        return (
            self.words / WORDS_PER_MINUTE
            + (self.code_cells * SECONDS_PER_CODE_CELL + self.code_lines * SECONDS_PER_CODE_LINE
               + self.questions * SECONDS_PER_QUESTION) / 60
            + self.drills * MINUTES_PER_DRILL
            + self.spoken_answers * MINUTES_PER_SPOKEN_ANSWER
            + self.exercises * MINUTES_PER_EXERCISE
            + self.margin
        )

    @property
    def minutes(self) -> int:
        """The stated time: rounded to the nearest 5 minutes, at least 5."""
        return round_to_five(self.exact_minutes)


def round_to_five(minutes: float) -> int:
    """Round to the nearest multiple of 5 (halves up), never below 5."""
    return max(5, int(math.floor(minutes / 5 + 0.5)) * 5)


def prose_words(markdown: str) -> int:
    """Words a learner reads in a markdown cell: fenced code, HTML tags and link targets left out."""
    text = _LINK_TARGET.sub("]", _TAG.sub(" ", _FENCE.sub(" ", markdown)))
    return len(_WORD.findall(text))


def estimate_cells(cells: list[dict], margin: float = RUN_MARGIN_MINUTES) -> Estimate:
    """The estimate for a list of notebook cells (dicts as in the .ipynb file, or nbformat nodes)."""
    words = code_cells = code_lines = questions = drills = spoken = 0
    exercises: set[str] = set()
    in_questions = False
    for cell in cells:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += prose_words(source)
            fenced = "\n".join(m.group(0) for m in _FENCE.finditer(source))
            fences = 2 * len(_FENCE.findall(source))
            code_lines += max(0, len([ln for ln in fenced.splitlines() if ln.strip()]) - fences)
            drills += len(_DRILL.findall(source))
            spoken += len(_SPOKEN.findall(source))
            if source.lstrip().startswith("## "):
                in_questions = source.lstrip().startswith("## Check your understanding")
            if in_questions:
                questions += len(_QUESTION.findall(_FENCE.sub(" ", source)))
        elif cell["cell_type"] == "code":
            code_cells += 1
            code_lines += len([ln for ln in source.splitlines() if ln.strip()])
            exercises.update(_CHECK.findall(source))
    return Estimate(words, code_cells, code_lines, questions, drills, spoken, len(exercises), margin)


def estimate(path: str | Path) -> Estimate:
    """The estimate for a whole notebook (a path relative to the repository root, or absolute).

    Taught in `notebooks/00_start_here.ipynb`.
    """
    path = Path(path)
    if not path.is_absolute():
        path = ROOT / path
    if not path.exists():
        listed = [row.file for row in LESSONS]
        raise FileNotFoundError(f"{path.name}: no such notebook; the course map lists {listed}")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return estimate_cells(cells)


_PART = re.compile(r"^## (?:\d+\. )?(Deep dive|Sitting \d+): ")


@dataclass(frozen=True)
class Parts:
    """A notebook split the way a learner sits through it.

    `core` is every `##` section that is neither a deep dive nor a sitting (for a lesson: the core
    path, margin included). `deep_dives` are the optional `## N. Deep dive: title` sections (no
    margin: they are read in the same sitting or later in the same notebook); `sittings` are
    `## Sitting N: title` sections, each opened on its own (margin included). Each deep dive's or
    sitting's heading cell states its time on a line of its own: `*About NN minutes.*`
    """

    core: Estimate
    deep_dives: tuple[tuple[str, Estimate], ...]
    sittings: tuple[tuple[str, Estimate], ...]

    @property
    def total_minutes(self) -> int:
        """Core plus every deep dive and sitting, each rounded as it is stated."""
        return self.core.minutes + sum(e.minutes for _, e in self.deep_dives + self.sittings)


def estimate_parts(path: str | Path) -> Parts:
    """Split a notebook into its core path, optional deep dives and sittings, and estimate each."""
    path = Path(path)
    if not path.is_absolute():
        path = ROOT / path
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    groups: list[tuple[str | None, str, list]] = [(None, "", [])]
    for cell in cells:
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.startswith("## "):
            heading = source.splitlines()[0]
            match = _PART.match(heading)
            groups.append((match.group(1).split()[0] if match else None, heading[3:], []))
        groups[-1][2].append(cell)
    core = [c for kind, _, cs in groups if kind is None for c in cs]
    return Parts(
        estimate_cells(core),
        tuple((t, estimate_cells(cs, margin=0)) for k, t, cs in groups if k == "Deep"),
        tuple((t, estimate_cells(cs)) for k, t, cs in groups if k == "Sitting"),
    )


if __name__ == "__main__":
    print(markdown_table())
