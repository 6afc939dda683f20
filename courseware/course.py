"""The course map: every lesson's number, notebook, title and the lab that follows it, and the
time estimator every stated time comes from.

The map is the one source for the course table and the tracks; the estimator is the one source for
every time. README's "The course" block is printed from them (`python -m courseware.course`; rewrite it
in place with `python -m courseware.course --write-readme`), lesson 00 shows them live, and
`tests/test_course.py` checks every notebook's `**Time:** about NN minutes.` line, each deep dive's
and sitting's `*About NN minutes.*` line, the navigation line and the "What's next" links against them.

Example:
    ```python
    from courseware.course import LESSONS, lesson, track_minutes, INTERVIEW_LESSONS
    lesson(3).minutes               # the core path's estimate, from the notebook itself
    lesson(3).lab                   # 'labs/03_error_policy.ipynb'
    lesson(3).lab_minutes           # the lab's estimate, from labs/solutions/03_error_policy.ipynb
    track_minutes(INTERVIEW_LESSONS)
    ```

Taught in `notebooks/00_start_here.ipynb`.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    """One row of the course map. Paths are relative to the repository root.

    The times are not stored: each is estimated from the notebook when asked (see `estimate_parts`).
    """

    number: int
    file: str
    title: str
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

    @property
    def exists(self) -> bool:
        """Whether the notebook is in this checkout."""
        return (ROOT / self.file).exists()

    @property
    def parts(self) -> Parts:
        """The notebook's core path, deep dives and sittings, each estimated."""
        return _parts_of(self.file)

    @property
    def minutes(self) -> int:
        """The core path's estimate: what the lesson's `**Time:**` line states."""
        return self.parts.core.minutes

    @property
    def deep_dive_minutes(self) -> int:
        """The optional deep dives, each rounded as it is stated, added up (0 if none)."""
        return sum(e.minutes for _, e in self.parts.deep_dives)

    @property
    def sitting_minutes(self) -> tuple[int, ...]:
        """Each sitting's estimate, in order (empty for a lesson without sittings)."""
        return tuple(e.minutes for _, e in self.parts.sittings)

    @property
    def lab_solution(self) -> str | None:
        """The lab's solution notebook, which the lab's time is estimated from."""
        return None if self.lab is None else self.lab.replace("labs/", "labs/solutions/", 1)

    @property
    def lab_minutes(self) -> int:
        """The lab's estimate (0 without a lab): its solution read, each exercise written and checked;
        a lab in sittings (the capstone) adds each sitting's."""
        if self.lab is None:
            return 0
        parts = _parts_of(self.lab_solution)
        return parts.core.minutes + sum(e.minutes for _, e in parts.sittings)


def _parts_of(file: str) -> Parts:
    path = _path(file)
    return _cached_parts(str(path), path.stat().st_mtime_ns)


@lru_cache(maxsize=64)
def _cached_parts(path: str, mtime_ns: int) -> Parts:
    return estimate_parts(path)


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        0, 'notebooks/00_start_here.ipynb', 'Start here', None,
        'the map and five tracks, the pre-flight check, offline vs real model, running and resetting',
    ),
    Lesson(
        1, 'notebooks/01_sequential_vs_gather.ipynb', 'Sequential vs asyncio.gather',
        'labs/01_make_it_concurrent.ipynb',
        'timing and timelines, result vs completion order, dependent calls, '
        'failure semantics, scaling with N',
    ),
    Lesson(
        2, 'notebooks/02_custom_async_tool_node.ipynb', 'A hand-built tool node',
        'labs/02_build_a_tool_node.ipynb',
        'tool-call anatomy, a name allow-list, errors → ToolMessage, timeouts, '
        'a concurrency limit, as a graph node',
    ),
    Lesson(
        3, 'notebooks/03_builtin_toolnode.ipynb', 'The built-in ToolNode', 'labs/03_error_policy.ipynb',
        "in a graph and standalone (the 'N/A' error), thread-pool waves vs gather, "
        'max_concurrency, handle_tool_errors',
    ),
    Lesson(
        4, 'notebooks/04_tools_condition_loop.ipynb', 'The tools_condition loop',
        'labs/04_predict_the_route.ipynb',
        'llm → tools → llm, routing, streaming, the real wire format via ChatOpenAI, '
        'switching to a real model',
    ),
    Lesson(
        5, 'notebooks/05_return_types.ipynb', 'Return-type rules', 'labs/05_predict_return_types.ipynb',
        'the four input kinds, rule one, content conversion, reducers, a live input × return → output table',
    ),
    Lesson(
        6, 'notebooks/06_command_and_parent.ipynb', 'Command and Command.PARENT',
        'labs/06_hand_off_to_parent.ipynb',
        'update/goto, validation errors, PARENT + Send merging, siblings in the batch, a real parent graph',
    ),
    Lesson(
        7, 'notebooks/07_inside_toolnode.ipynb', 'Inside ToolNode',
        'labs/07_predict_what_a_tool_receives.ipynb',
        'the pinned source read live, the input payloads, ToolRuntime and injection',
    ),
    Lesson(
        8, 'notebooks/08_interceptors.ipynb', 'Interceptors', 'labs/08_guard_dangerous_tools.ipynb',
        'wrap_tool_call / awrap_tool_call: logging, retry, deny-list, approval with interrupt(), pitfalls',
    ),
    Lesson(
        9, 'notebooks/09_prebuilt_agents.ipynb', 'The prebuilt agents', 'labs/09_predict_the_agent.ipynb',
        'create_agent and create_react_agent: one Send per tool call, what that changes',
    ),
    Lesson(
        10, 'notebooks/10_mcp_tools.ipynb', 'MCP tools', 'labs/10_predict_mcp_results.ipynb',
        'a real local stdio MCP server → langchain-mcp-adapters → ToolNode; async-only; session cost',
    ),
    Lesson(
        11, 'notebooks/11_the_step_model.ipynb', 'The step model',
        'labs/11_predict_the_step.ipynb',
        'one super-step: tasks, reads as of the step start, writes at the barrier; a checkpoint per step '
        'and pending writes; what interrupt() and a resume run again; durability, retry_policy, @task, '
        'error handlers',
    ),
    Lesson(
        12, 'notebooks/12_streaming_and_stopping.ipynb', 'Streaming and stopping',
        'labs/12_stream_progress_and_events.ipynb',
        'each stream mode during a tools step (the tools mode too), progress from a tool, the step '
        'limit per agent, return_direct, ToolCallLimitMiddleware, parallel_tool_calls',
    ),
    Lesson(
        13, 'notebooks/13_failure_and_recovery.ipynb', 'Failure, recovery and cancellation',
        'labs/13_stop_stream_recover.ipynb',
        'what a crashed thread holds, what a resume runs again (and a router that raises), repairing '
        'unanswered calls, cancellation, node timeouts and a drain',
    ),
    Lesson(
        14, 'notebooks/14_approval_retry_and_order.ipynb', 'Approval, retry and middleware order',
        'labs/14_order_the_middleware.ipynb',
        'HumanInTheLoopMiddleware beside an approval interceptor, ToolRetryMiddleware beside a retry '
        'interceptor, the order several middlewares run in',
    ),
    Lesson(
        15, 'notebooks/15_what_a_tool_sees.ipynb', 'What a tool sees',
        'labs/15_context_under_concurrency.ipynb',
        'ToolRuntime: state, store, context and config; InjectedStore without a store; context_schema; '
        'contextvars and thread-locals in the pool; shared state under concurrent calls',
    ),
    Lesson(
        16, 'notebooks/16_tool_definitions.ipynb', "How a tool's definition changes its run",
        'labs/16_definitions_that_agree.ipynb',
        'args_schema defaults and coercion, parse_docstring, duplicate names, content_and_artifact, '
        'callbacks in order under parallel calls',
    ),
    Lesson(
        17, 'notebooks/17_the_agent_around_tools.ipynb', 'The agent around the tools',
        'labs/17_predict_the_agent_loop.ipynb',
        "create_agent as the graph it builds, structured output, model and tool call limits, "
        'the tools offered per call, a sub-agent inside a tool, parameters injected by annotation',
    ),
    Lesson(
        18, 'notebooks/18_observing_a_run.ipynb', 'Observing a run', 'labs/18_predict_what_you_observe.ipynb',
        'astream_events v2 for a tools step, stream v2 parts, the tasks/debug/checkpoints modes, '
        'namespaces of nested graphs, the tools mode across an interrupt',
    ),
    Lesson(
        19, 'notebooks/19_mock_interview.ipynb', 'Mock interview', 'labs/19_capstone_fix_the_agent.ipynb',
        'the questions asked most (agents, approval, errors, concurrency, streaming and stopping, '
        'recovery, context, tool definitions), each verified live, '
        'with two-minute spoken answers',
    ),
    Lesson(
        20, 'notebooks/20_drill_bank.ipynb', 'Drill bank', None,
        'every predict-the-output drill, verified live, in sittings by topic, each linking its lesson',
    ),
)

COURSE_MAP_ANCHOR = "../README.md#The-course"
"""JupyterLab's id for README's `## The course` (case kept; it does not match GitHub's `#the-course`)."""

INTERVIEW_LESSONS: tuple[int, ...] = (1, 3, 5, 6, 8, 19, 20)
"""The interview track: the rules (order and failure, ToolNode's concurrency and errors, return
shapes, `Command.PARENT`, interceptors), the mock interview, then the drill bank's sittings."""



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
    `[← 02 · A hand-built tool node](02_custom_async_tool_node.ipynb) · [Course map](../README.md#The-course)
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


def track_minutes(numbers: tuple[int, ...] | list[int] | None = None,
                  labs: bool | tuple[int, ...] = False) -> int:
    """A track's stated total: each lesson's core path plus its sittings (deep dives are optional
    and left out), and each lab when `labs` is true or names its lesson. All lessons by default.
    Each part is rounded as it is stated, so the total is the sum of the figures a learner reads
    (the pieces of `track_parts`)."""
    numbers = [row.number for row in LESSONS] if numbers is None else numbers
    return sum(minutes for _, minutes in track_parts(numbers, labs))


def total_minutes(numbers: list[int] | None = None) -> int:
    """Minutes for these lessons' core paths and sittings, without labs (all lessons by default)."""
    return track_minutes(numbers)


def deep_dive_minutes(numbers: tuple[int, ...] | list[int] | None = None) -> int:
    """The optional deep dives of these lessons (all by default), added up."""
    rows = LESSONS if numbers is None else [lesson(n) for n in numbers]
    return sum(row.deep_dive_minutes for row in rows)


def lab_minutes() -> int:
    """Every lab, added up."""
    return sum(row.lab_minutes for row in LESSONS)


PRACTICE_HEADING = "## Practice"
"""A lesson's predict-and-check section (`helpers.practice.PredictionSet`), part of its core path."""


def lesson_practice_minutes(row: Lesson) -> int:
    """The lesson's `## Practice` section as the estimator prices it (0 without one), rounded to
    the nearest minute: it is part of the core path's stated time, not added to it."""
    if not row.exists:
        return 0
    groups = _groups(_cells(row.file))
    pieces = [p for kind, heading, ps in groups if kind is None and ("## " + heading) == PRACTICE_HEADING
              for p in ps]
    return round(estimate_cells(pieces, margin=0).exact_minutes) if pieces else 0


PRACTICE_TITLES: tuple[str, ...] = ("Mock interview", "Drill bank")
"""Lessons that are practice from end to end: spoken answers to give, outputs to predict."""


def practice_minutes(numbers: tuple[int, ...] | list[int] | None = None, labs_only: bool = False) -> int:
    """Minutes of practice in these lessons (all by default): each lab; unless `labs_only`, also each
    lesson's Practice section (inside its core path) and the whole of the lessons that are practice
    from end to end (`PRACTICE_TITLES`: core path and sittings)."""
    rows = [row for row in LESSONS if row.exists] if numbers is None else [lesson(n) for n in numbers]
    total = 0
    for row in (r for r in rows if r.exists):
        total += row.lab_minutes
        if labs_only:
            continue
        if row.title in PRACTICE_TITLES:
            total += row.minutes + sum(row.sitting_minutes)
        else:
            total += lesson_practice_minutes(row)
    return total


def practice_share(numbers: tuple[int, ...] | list[int] | None = None, labs_only: bool = False) -> float:
    """Practice minutes over the self-paced track's minutes (lessons' core paths and sittings plus
    labs) for these lessons, all by default."""
    present = [row.number for row in LESSONS if row.exists] if numbers is None else list(numbers)
    total = track_minutes(present, labs=True)
    return practice_minutes(present, labs_only) / total if total else 0.0


STEP_MARKERS = re.compile(r"\breveal\(|\bpractice\.(?:predict|check)\(|\bq\d+\.check\(")
"""A code cell holding one of these is a practice step: a prediction recorded before its reveal
(`helpers.practice.reveal`), a Practice set's predictions or check, or a lab exercise's check."""
MAX_PRACTICE_GAP = 15
"""Estimated minutes a lesson's core path may run without a practice step (its *Check your
understanding* questions count as one)."""


def practice_gaps(path: str | Path) -> list[float]:
    """The estimated minutes of a notebook's core path between practice steps: from its start to
    the first step, between steps, and from the last step to *Check your understanding* (or the end).
    A step counts from the start of its cell, where the learner writes the prediction."""
    gaps, run = [], 0.0
    for kind, _, pieces in _groups(_cells(path)):
        if kind is not None:
            continue
        for piece in pieces:
            if piece["cell_type"] == "markdown" and piece["source"].startswith(QUESTIONS_HEADING):
                gaps.append(round(run, 1))
                return gaps
            minutes = estimate_cells([piece], margin=0).exact_minutes
            if piece["cell_type"] == "code" and STEP_MARKERS.search(piece["source"]):
                gaps.append(round(run, 1))  # the learner predicts on reaching the cell
                run = 0.0
            run += minutes
    gaps.append(round(run, 1))
    return gaps


def hours(minutes: int) -> str:
    """`"7 h 25 min"` for 445."""
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def time_cell(row: Lesson) -> str:
    """The time a course table states for a lesson: the core path, then deep dives or sittings."""
    if not row.exists:
        return "—"
    text = f"{row.minutes} min"
    if row.deep_dive_minutes:
        text += f" + optional deep dives {row.deep_dive_minutes} min"
    if row.sitting_minutes:
        text += " + sittings " + " + ".join(str(m) for m in row.sitting_minutes) + " min"
    return text


def _rel(path: str, start: str) -> str:
    return os.path.relpath(path, start).replace(os.sep, "/") if start else path


def markdown_table(start: str = "") -> str:
    """The course table: one row per lesson, with its lab and the times.

    Links are relative to the folder `start` (the repository root by default; `"notebooks"` for a
    lesson)."""
    lines = ["| # | lesson | teaches | lab that follows | time |", "|---|---|---|---|---|"]
    for row in LESSONS:
        lab = ""
        if row.lab:
            lab = f"[{row.lab.rsplit('/', 1)[-1].removesuffix('.ipynb')}]({_rel(row.lab, start)})"
            lab += f" · {row.lab_minutes} min" if (ROOT / row.lab_solution).exists() else ""
        title = f"[{row.title}]({_rel(row.file, start)})"
        lines.append(f"| {row.code} | {title} | {row.teaches} | {lab} | {time_cell(row)} |")
    return "\n".join(lines)


ESSENTIALS_LESSONS: tuple[int, ...] = (1, 3, 5, 6, 9)
"""The essentials track, an afternoon with its labs, for a newcomer: why independent calls should
overlap, what the built-in `ToolNode` does with them and with their errors, what each return becomes,
how a tool hands off to the parent graph, and how `create_agent` runs the same calls (one `Send` per
call)."""

ESSENTIALS_LABS: tuple[int, ...] = (1, 6)
"""The labs the essentials track does: lab 01, and lab 06, which needs lesson 06 (lab 03 needs lesson
08's interceptors, lab 05's cases D–F lesson 06's rules; both are left for later)."""

RUNNING_AGENT_LESSONS: tuple[int, ...] = (11, 12, 13, 14, 15, 16, 17, 18)
"""The running-agent track, for a learner who has done lessons 00-10 (or the essentials): the step
model underneath, streaming and limits, failure and recovery, approval and retry, what a tool sees, how
its definition changes its run, the agent around the tools and how to observe a run."""


def track_parts(numbers: tuple[int, ...] | list[int],
                labs: bool | tuple[int, ...] = True) -> list[tuple[str, int]]:
    """Each stated piece of a track in order, as (label, minutes): a lesson's core path, its sittings,
    then its lab when `labs` is true or names the lesson. `sum` of the minutes is
    `track_minutes(numbers, labs)`."""
    pieces = []
    for row in (lesson(n) for n in numbers if lesson(n).exists):
        pieces.append((f"{row.code} {row.title}", row.minutes))
        pieces += [(f"{row.code} sitting {i}", m) for i, m in enumerate(row.sitting_minutes, 1)]
        wanted = labs if isinstance(labs, bool) else row.number in labs
        if wanted and row.lab and row.lab_minutes:
            pieces.append((f"lab {row.code}", row.lab_minutes))
    return pieces


def _sum_text(numbers, labs: bool | tuple[int, ...]) -> str:
    return " + ".join(f"{label.split()[0] if not label.startswith('lab') else label} {m}"
                      for label, m in track_parts(numbers, labs))


def _missing(numbers) -> str:
    gone = [lesson(n).code for n in numbers if not lesson(n).exists]
    return f" (not counted, not in this checkout: {', '.join(gone)})" if gone else ""


def tracks_markdown() -> str:
    """The two tracks whose totals come from the estimator, as README states them."""
    present = [row.number for row in LESSONS if row.exists]
    interview = [n for n in INTERVIEW_LESSONS if lesson(n).exists]
    core, labs, dives = track_minutes(present), lab_minutes(), deep_dive_minutes(present)
    interview_total = track_minutes(interview)
    sittings = " + ".join(
        f"{lesson(n).code} {lesson(n).minutes}" + "".join(f" + {m}" for m in lesson(n).sitting_minutes)
        for n in interview
    )
    return "\n".join([
        f"- *Self-paced learner* — {LESSONS[0].code} → {LESSONS[-1].code} in order, each lab when its "
        f"lesson sends you there: {core + labs} minutes (about {hours(core + labs)}): {core} minutes of "
        f"lessons (core paths and sittings) and {labs} of labs"
        f"{_missing(row.number for row in LESSONS)}. Practice — the labs, the lessons' *Practice* "
        f"sections, the mock interview and the drill bank — is {practice_minutes(present)} of those "
        f"minutes ({round(100 * practice_share(present))} %; the labs alone "
        f"{round(100 * practice_share(present, labs_only=True))} %). "
        f"The deep dives are optional: {dives} minutes more. "
        "Answer each lesson's *Check your understanding* before moving on.",
        "- *Interview candidate* — the rules in lessons "
        + ", ".join(lesson(n).code for n in INTERVIEW_LESSONS[:-2])
        + ", predicting each cell's output before running it, then the mock interview "
        f"({lesson(INTERVIEW_LESSONS[-2]).code}) and the drill bank's sittings "
        f"({lesson(INTERVIEW_LESSONS[-1]).code}): {interview_total} minutes in all ({sittings})"
        f"{_missing(INTERVIEW_LESSONS)}, no sitting over {MAX_SITTING_MINUTES} minutes.",
        "- *Essentials* — for a newcomer with an afternoon: lessons "
        + ", ".join(lesson(n).code for n in ESSENTIALS_LESSONS)
        + ", with labs " + " and ".join(lesson(n).code for n in ESSENTIALS_LABS)
        + f": {track_minutes(ESSENTIALS_LESSONS, labs=ESSENTIALS_LABS)} minutes "
        f"(about {hours(track_minutes(ESSENTIALS_LESSONS, labs=ESSENTIALS_LABS))}: "
        f"{_sum_text(ESSENTIALS_LESSONS, ESSENTIALS_LABS)}){_missing(ESSENTIALS_LESSONS)}.",
        f"- *Running agent* — after lessons 00–{RUNNING_AGENT_LESSONS[0] - 1:02d} (or the essentials), "
        "what happens to tools inside a "
        "running agent: lessons "
        + ", ".join(lesson(n).code for n in RUNNING_AGENT_LESSONS)
        + f" and their labs: {track_minutes(RUNNING_AGENT_LESSONS, labs=True)} minutes "
        f"(about {hours(track_minutes(RUNNING_AGENT_LESSONS, labs=True))}: "
        f"{_sum_text(RUNNING_AGENT_LESSONS, True)}){_missing(RUNNING_AGENT_LESSONS)}.",
    ])


README_BEGIN = "<!-- course-map: printed by `python -m courseware.course`; do not edit by hand -->"
README_END = "<!-- /course-map -->"


def readme_block() -> str:
    """README's generated block: the course table and the tracks' totals, between two markers."""
    return f"{README_BEGIN}\n{markdown_table()}\n\n{tracks_markdown()}\n{README_END}"


def write_readme(path: Path = ROOT / "README.md") -> bool:
    """Replace README's generated block with `readme_block()`; True if the file changed."""
    text = path.read_text(encoding="utf-8")
    begin, end = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    new = text[:begin] + readme_block() + text[end:]
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


# -- the time estimate -----------------------------------------------------------------------------
# One estimator for every stated time: a lesson's, a lab's, a deep dive's, a sitting's, a track's.
# A learner reads the prose, reads and runs each code cell and looks at its output, answers the
# questions, predicts each drill before running it, writes each lab exercise. The constants are below;
# README's "How long things take" says what they cover and how they were calibrated.

WORDS_PER_MINUTE = 180
"""Reading speed for technical prose that is being learned, not skimmed."""
SECONDS_PER_CODE_CELL = 30
"""Run a cell, look at its output."""
SECONDS_PER_CODE_LINE = 3
"""Read a line of code before running it (code cells and fenced code in markdown)."""
SECONDS_PER_PREDICTION = 15
"""Predict a code cell's output before running it, as every lesson asks (not in labs, where the
learner writes the code, nor in a drill, whose prediction `MINUTES_PER_DRILL` prices)."""
SECONDS_PER_OUTPUT_LINE = 2
"""Read one line of a code cell's committed output (a figure counts as `OUTPUT_LINES_PER_FIGURE`)."""
OUTPUT_LINES_PER_FIGURE = 5
"""A plot or diagram is read like this many lines of output."""
SECONDS_PER_ERROR = 60
"""An error raised on purpose (a cell tagged `raises-exception`): read the error, find its cause."""
SECONDS_PER_QUESTION = 30
"""Answer one *Check your understanding* question in your head (its answer is read as prose)."""
MINUTES_PER_DRILL = 1
"""Predict a drill's output before running it (on top of reading and running its cells)."""
MINUTES_PER_SPOKEN_ANSWER = 2
"""Say a two-minute interview answer out loud."""
MINUTES_PER_EXERCISE = 8
"""Write one lab exercise, run its check, read the feedback, fix once."""
RUN_MARGIN_MINUTES = 2
"""Open the notebook, start the kernel, wait for the slowest cells (once per sitting)."""
MAX_SITTING_MINUTES = 45
"""No core path, deep dive, sitting or lab may be stated at more than this."""

_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.M | re.S)
_TAG = re.compile(r"<[^>]+>")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_'’.+-]*|[\u3400-\u9fff]")
_DRILL = re.compile(r"^#{2,4} Drill\b", re.M)
_SPOKEN = re.compile(r"^#{2,4} Spoken answer\b", re.M)
_CHECK = re.compile(r"\b(q\d+)\.check\(")
_QUESTION = re.compile(r"^(?:\d+[.)]|[-*+]) +\S")
_H2 = re.compile(r"^## ", re.M)
_HEADING = re.compile(r"^#{2,3} ", re.M)
QUESTIONS_HEADING = "## Check your understanding"


@dataclass(frozen=True)
class Estimate:
    """What a stretch of notebook asks of a learner, and the minutes that takes.

    Example:
        ```python
        from courseware.course import estimate
        e = estimate("notebooks/01_sequential_vs_gather.ipynb")
        e.words, e.code_cells, e.questions, e.minutes
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
    predictions: int = 0
    output_lines: int = 0
    errors: int = 0

    @property
    def exact_minutes(self) -> float:
        """The estimate before rounding."""
        return (
            self.words / WORDS_PER_MINUTE
            + (self.code_cells * SECONDS_PER_CODE_CELL + self.code_lines * SECONDS_PER_CODE_LINE
               + self.questions * SECONDS_PER_QUESTION + self.predictions * SECONDS_PER_PREDICTION
               + self.output_lines * SECONDS_PER_OUTPUT_LINE + self.errors * SECONDS_PER_ERROR) / 60
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
    """Words a learner reads in markdown: fenced code, HTML tags and link targets left out.

    A word starts with a letter or digit (a lone `-` bullet or `|` is not one); each CJK character
    counts as one word.
    """
    text = _LINK_TARGET.sub("]", _TAG.sub(" ", _FENCE.sub(" ", markdown)))
    return len(_WORD.findall(text))


def fenced_code_lines(markdown: str) -> int:
    """Non-blank lines inside fenced code blocks (the fences themselves left out)."""
    lines = 0
    for block in _FENCE.finditer(markdown):
        body = block.group(0).splitlines()[1:-1]
        lines += len([ln for ln in body if ln.strip()])
    return lines


def _source(cell) -> str:
    return _text(cell["source"])


def _pieces(cells: list) -> list[dict]:
    """The cells, with every markdown cell cut before each `## ` heading line (outside fences).

    A section heading in the middle of a markdown cell starts a new section all the same. Pieces
    may be given again (`estimate_parts` groups pieces, then estimates each group): a piece keeps
    its tags."""
    pieces = []
    for cell in cells:
        source = _source(cell)
        if cell["cell_type"] != "markdown":
            tags = cell["tags"] if "tags" in cell else cell.get("metadata", {}).get("tags", [])
            pieces.append({"cell_type": cell["cell_type"], "source": source,
                           "outputs": cell.get("outputs", []), "tags": tags})
            continue
        fences = [m.span() for m in _FENCE.finditer(source)]
        cuts = [m.start() for m in _H2.finditer(source)
                if m.start() > 0 and not any(a <= m.start() < b for a, b in fences)]
        for begin, end in zip([0, *cuts], [*cuts, len(source)], strict=True):
            if source[begin:end].strip():
                pieces.append({"cell_type": "markdown", "source": source[begin:end]})
    return pieces


def _question_lines(markdown: str, in_details: bool) -> tuple[int, bool]:
    """Top-level list items outside `<details>` (the answers) and fences; the `<details>` state after."""
    count = 0
    for line in _FENCE.sub(" ", markdown).splitlines():
        if "<details" in line:
            in_details = True
        if not in_details and _QUESTION.match(line):
            count += 1
        if "</details>" in line:
            in_details = False
    return count, in_details


def output_lines(outputs: list) -> int:
    """Lines a learner reads in a code cell's outputs: text as printed, an error's first 3 lines,
    a figure (a plot, or a graph drawn as mermaid) as `OUTPUT_LINES_PER_FIGURE`."""
    lines = 0
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            lines += len(_text(output.get("text", "")).splitlines())
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            diagram = _text(data.get("text/markdown", "")).lstrip().startswith("```mermaid")
            if diagram or any(key.startswith("image/") for key in data):
                lines += OUTPUT_LINES_PER_FIGURE
            elif "text/plain" in data:
                lines += len(_text(data["text/plain"]).splitlines())
        elif kind == "error":
            lines += 3
    return lines


def _text(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def estimate_cells(cells: list, margin: float = RUN_MARGIN_MINUTES, predict: bool = True) -> Estimate:
    """The estimate for a list of notebook cells (dicts as in the .ipynb file, or nbformat nodes).

    *Check your understanding* questions are the top-level items of any list (`1.`, `1)`, `-`, `*`,
    `+`) in that section, outside its `<details>` answers, wherever in a cell the heading stands.
    With `predict`, each code cell outside a drill adds a prediction (lessons ask for one before every
    run; a lab, where the learner writes the code, is estimated with `predict=False`). The committed
    outputs are read too, and each cell tagged `raises-exception` adds the time to find its cause.
    """
    words = code_cells = code_lines = questions = drills = spoken = 0
    predictions = outputs = errors = 0
    exercises: set[str] = set()
    in_questions = in_details = in_drill = False
    for piece in _pieces(cells):
        source = piece["source"]
        if piece["cell_type"] == "markdown":
            words += prose_words(source)
            code_lines += fenced_code_lines(source)
            found_drills = len(_DRILL.findall(source))
            drills += found_drills
            spoken += len(_SPOKEN.findall(source))
            if found_drills:
                in_drill = True
            elif _HEADING.search(_FENCE.sub(" ", source)):
                in_drill = False
            if source.startswith("## "):
                in_questions = source.startswith(QUESTIONS_HEADING)
                in_details = False
            if in_questions:
                found, in_details = _question_lines(source, in_details)
                questions += found
        elif piece["cell_type"] == "code":
            code_cells += 1
            code_lines += len([ln for ln in source.splitlines() if ln.strip()])
            exercises.update(_CHECK.findall(source))
            predictions += predict and not in_drill
            outputs += output_lines(piece.get("outputs", []))
            errors += "raises-exception" in piece.get("tags", [])
    return Estimate(words, code_cells, code_lines, questions, drills, spoken, len(exercises), margin,
                    predictions, outputs, errors)


def _path(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_absolute():
        path = ROOT / path
    if not path.exists():
        listed = [row.file for row in LESSONS]
        raise FileNotFoundError(f"{path.name}: no such notebook; the course map lists {listed}")
    return path


def _cells(path: str | Path) -> list:
    return json.loads(_path(path).read_text(encoding="utf-8"))["cells"]


def estimate(path: str | Path) -> Estimate:
    """The estimate for a whole notebook (a path relative to the repository root, or absolute).

    Taught in `notebooks/00_start_here.ipynb`.
    """
    return estimate_cells(_cells(path), predict=not is_lab(path))


_PART = re.compile(r"^## (?:(?P<n>\d+)\. )?(?P<kind>Deep dive|Sitting \d+): (?P<title>.+)$")
ABOUT = re.compile(r"^\*About (\d+) minutes\.\*$", re.M)
"""The line a deep dive's or sitting's heading cell states its time on."""


@dataclass(frozen=True)
class Parts:
    """A notebook split the way a learner sits through it.

    `core` is every `##` section that is neither a deep dive nor a sitting (for a lesson: the core
    path, margin included). `deep_dives` are the optional `## N. Deep dive: title` sections (no
    margin: they are read in the same sitting or later in the same notebook); `sittings` are
    `## Sitting N: title` sections, each opened on its own (margin included). Each deep dive's or
    sitting's heading cell states its time on a line of its own: `*About NN minutes.*`
    Each entry of `deep_dives` and `sittings` is `(heading without "## ", estimate)`.
    """

    core: Estimate
    deep_dives: tuple[tuple[str, Estimate], ...]
    sittings: tuple[tuple[str, Estimate], ...]

    @property
    def total_minutes(self) -> int:
        """Core plus every deep dive and sitting, each rounded as it is stated."""
        return self.core.minutes + sum(e.minutes for _, e in self.deep_dives + self.sittings)


def _groups(cells: list) -> list[tuple[str | None, str, list]]:
    """(kind, heading, pieces) per `##` section; kind is "Deep dive", "Sitting" or None."""
    groups: list[tuple[str | None, str, list]] = [(None, "", [])]
    for piece in _pieces(cells):
        source = piece["source"]
        if piece["cell_type"] == "markdown" and source.startswith("## "):
            heading = source.splitlines()[0]
            match = _PART.match(heading)
            kind = None if match is None else match.group("kind").split()[0]
            groups.append(({"Deep": "Deep dive", "Sitting": "Sitting"}.get(kind), heading[3:], []))
        groups[-1][2].append(piece)
    return groups


def is_lab(path: str | Path) -> bool:
    """Whether a notebook is a lab (a starter or a solution): the learner writes its code."""
    path = _path(path)
    return (path.relative_to(ROOT).parts[0] if path.is_relative_to(ROOT) else path.parent.name) == "labs"


def estimate_parts(path: str | Path) -> Parts:
    """Split a notebook into its core path, optional deep dives and sittings, and estimate each."""
    groups = _groups(_cells(path))
    predict = not is_lab(path)
    core = [c for kind, _, cs in groups if kind is None for c in cs]
    return Parts(
        estimate_cells(core, predict=predict),
        tuple((t, estimate_cells(cs, margin=0, predict=predict)) for k, t, cs in groups if k == "Deep dive"),
        tuple((t, estimate_cells(cs, predict=predict)) for k, t, cs in groups if k == "Sitting"),
    )


def stated_part_minutes(path: str | Path) -> dict[str, list[int]]:
    """Each deep dive's and sitting's heading → the minutes its `*About NN minutes.*` lines state."""
    stated = {}
    for kind, heading, pieces in _groups(_cells(path)):
        if kind is not None:
            stated[heading] = [int(n) for n in ABOUT.findall(pieces[0]["source"])]
    return stated


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-readme"]:
        print("README.md", "updated" if write_readme() else "already up to date")
    else:
        print(readme_block())
