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

from dataclasses import dataclass


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


if __name__ == "__main__":
    print(markdown_table())
