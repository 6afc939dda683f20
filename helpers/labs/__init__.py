"""Self-checking labs: `q1.check()`, `q1.hint()`, `q1.solution()` for every exercise.

One module per lab (`helpers.labs.lab01` ... `lab13`, numbered by the lesson the lab follows). Each
exercise is an `Exercise`: its `check()` runs the learner's code for real (a real ToolNode, a real
graph, real timing read as ratios) and, when something is not right yet, raises ONE `CheckFailed`
listing every case it tried — passed ✔ or failed ✘, each failure with what was expected, what was
observed, where to look and a hint for that mistake — never a bare assertion.

The shared machinery every check uses:

- `run_learner(fn, *args, limit=LIMIT)` runs learner code under a time limit on every path (a sync
  callable in a daemon worker thread, a coroutine on a fresh event loop in that thread, so it also
  works from inside the notebook's running loop). A hang becomes `CheckFailed("your code did not
  return within N s …")` and leaves the kernel usable; a learner exception becomes feedback naming
  the exception and the learner's own line; a library's exception is named as the library's.
- `Cases(key)` collects every case a check tries and `cases.result(summary)` raises one
  `CheckFailed` listing them all when any failed.
- `Exercise.check()` reads the learner's names, bounds what the learner's code prints during the
  check, and turns anything unexpected into feedback — every exception, `SystemExit`,
  `GeneratorExit` and other `BaseException`s included; a `KeyboardInterrupt` stops it with one line
  (`CheckStopped`). Before and after the checker runs it verifies that nothing the check is made of
  was changed, runs the checker registered when the exercise was created, and scans the kernel's
  cells for code that reaches into a check (`helpers.labs.guard`; a `CheckTampered` verdict names
  what). The checker runs on a worker thread of its own, its own time limited (`OWN_LIMIT`, the
  runs of learner code it starts each under their own limit): a learner object whose `__eq__`,
  `__hash__` or `__name__` never returns is cut with a verdict. The path it takes is captured at
  import (`_make_check_path`), so rebinding a module attribute is a change it names, never a way
  round it.
- `plain(value, kind)` / `plain_problem(value, kind)` accept only plain builtins (no `str`
  subclasses, no always-equal objects, no `bool` for `int`); `rng()` draws from a generator no patch
  of `random` reaches; `scaled_limit(work)` is a time limit that grows with the work drawn.

    python -m helpers.labs build               # regenerate labs/NN_*.ipynb from labs/solutions/
    python -m helpers.labs report [DIR]        # grade lab notebooks with the course's own checks
    python -m helpers.labs reset N|all         # restore starters, keeping a backup in labs/backups/
    python -m helpers.labs restore N [BACKUP]  # bring a backup back
    python -m helpers.labs list                # the labs there are

Taught in `labs/README.md` (how labs work).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import io
import linecache
import re
import sysconfig
import textwrap
import threading
import time
import traceback
import types
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
HELPERS = ROOT / "helpers"
LABS = ROOT / "labs"
SOLUTIONS = LABS / "solutions"
NAMES = {
    "01": "01_make_it_concurrent",
    "02": "02_build_a_tool_node",
    "03": "03_error_policy",
    "04": "04_predict_the_route",
    "05": "05_predict_return_types",
    "06": "06_hand_off_to_parent",
    "07": "07_predict_what_a_tool_receives",
    "08": "08_guard_dangerous_tools",
    "09": "09_predict_the_agent",
    "10": "10_predict_mcp_results",
    "11": "11_predict_the_step",
    "12": "12_stream_progress_and_events",
    "13": "13_stop_stream_recover",
    "14": "14_order_the_middleware",
    "15": "15_context_under_concurrency",
    "16": "16_definitions_that_agree",
    "17": "17_predict_the_agent_loop",
    "18": "18_predict_what_you_observe",
    "19": "19_capstone_fix_the_agent",
}
"""Every lab by number (the lesson each one follows) → file stem in `labs/` and `labs/solutions/`."""

LIMIT = 10.0
"""Seconds a check waits for one run of the learner's code before it reports a hang. A correct
answer to any exercise returns in well under a second; 10 s survives a loaded laptop."""
MAX_OUTPUT_LINES = 8
"""How many lines of what the learner's code printed during a check are shown (the rest counted)."""
MAX_OBSERVED = 300
"""Characters of an observed value a message shows (cut at a word boundary, marked with …)."""

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION (?P<key>q\d+): (?P<stub>.+?)\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
STARTER = re.compile(r"^(?P<indent>\s*)# starter: ?(?P<code>.*)$")

from helpers.labs import guard as _guard  # noqa: E402 - the snapshot of what checks are made of
from helpers.labs.guard import rng  # noqa: E402,F401 - a random generator no patch of `random` reaches


class CheckFailed(Exception):
    """An exercise is not solved yet: the message says what was expected, what was observed, and
    where to look. Raised by `Exercise.check()`.

    Built by `fail(...)`, the fields are kept as attributes (`summary`, `expected`, `observed`,
    `where`, `why`) so `Cases` can list the failure among the other cases.
    """

    def __init__(self, message: str = "", **fields: str) -> None:
        super().__init__(message)
        self.fields = fields


class LearnerHung(CheckFailed):
    """The learner's code did not return within the check's time limit (`run_learner`); `stopped`
    says whether the run was cancelled (a coroutine) or may run on in its thread."""

    stopped: bool = False


class LearnerRaised(CheckFailed):
    """The learner's code raised (`run_learner`); `original` is the exception itself."""

    def __init__(self, message: str, original: BaseException) -> None:
        super().__init__(message)
        self.original = original


class StillAStub(LearnerRaised):
    """The learner's code reached its own `raise NotImplementedError(...)` stub line."""


class CheckStopped(CheckFailed):
    """The check was stopped by a `KeyboardInterrupt` (the kernel's stop button, or raised by the
    learner's code): one line says so, never a traceback."""


class CheckTampered(CheckFailed):
    """The check's own code, data or exercise fields were changed by code run in this kernel, or
    the learner's code reads them: it cannot judge. The message names what and how to fix it."""


def section(notebook: str, heading: str) -> str:
    """A lesson section as text: its title, the cell to scroll to, and a link to the notebook.

    JupyterLab 4.6 opens a link to `lesson.ipynb#Heading` at the notebook's top (the fragment is
    dropped), so the message also names the cell, counted from 1 as JupyterLab's status bar counts
    it ("Cell 23/48"). `heading` is the heading's text exactly as the notebook writes it (backticks
    included); tests/test_labs.py resolves every `section(...)` of helpers/labs/ to a real heading.
    """
    anchor = heading.replace("`", "").replace(" ", "-")
    cell = _heading_cell(notebook, heading)
    where = f", cell {cell}" if cell else ""
    return (
        f"lesson {notebook[:2]} § “{heading.replace('`', '')}”{where} "
        f"(../notebooks/{notebook}.ipynb#{anchor})"
    )


@functools.cache
def _heading_cell(notebook: str, heading: str) -> int | None:
    """The 1-based number of the cell that holds `heading`, or None if the lesson is not here."""
    import json

    path = ROOT / "notebooks" / f"{notebook}.ipynb"
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return None
    for number, cell in enumerate(cells, 1):
        source = cell.get("source", "")
        source = source if isinstance(source, str) else "".join(source)
        if cell.get("cell_type") == "markdown" and any(
            line.lstrip("#").strip() == heading for line in source.splitlines() if line.startswith("#")
        ):
            return number
    return None


def shorten(text: Any, width: int = MAX_OBSERVED) -> str:
    """`text` on one line, at most `width` characters, cut at a word boundary and marked `…`."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space > width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + " …"


def fail(
    summary: str, *, expected: str, observed: str, where: str, key: str = "", why: str = ""
) -> CheckFailed:
    """Build the one message shape every failed check uses (its fields kept for `Cases`)."""
    lines = [
        f"{key + ' — ' if key else ''}not yet: {summary}",
        f"  expected: {expected}",
        f"  observed: {observed}",
    ]
    if why:
        lines.append(f"  why:      {why}")
    lines.append(f"  look at:  {where}")
    if key:
        lines.append(f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()")
    return CheckFailed(
        "\n".join(lines), summary=summary, expected=expected, observed=observed, where=where, why=why
    )


# -- where an exception came from ---------------------------------------------------------------------
_LIBRARY_DIRS = tuple(
    str(Path(p).resolve())
    for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    if p
)
_CELL = re.compile(r"(ipykernel_\d+[/\\]\d+\.py$)|(^<ipython-input-)|(^<cell)")


def _kind(filename: str) -> str:
    """'learner', 'course', 'library' or 'python' for a frame's file."""
    if filename.startswith("<frozen"):
        return "python"
    if _CELL.search(filename):
        return "learner"
    if "site-packages" in filename or "dist-packages" in filename:
        return "library"
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return "learner"
    if path.is_relative_to(HELPERS):
        return "course"
    if filename.startswith("<frozen") or any(str(path).startswith(d) for d in _LIBRARY_DIRS):
        return "python"
    return "learner"  # a cell, a script or a test: code the learner (or a test playing one) wrote


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    try:
        from importlib.metadata import packages_distributions

        return packages_distributions()
    except Exception:  # noqa: BLE001 - a name is a nicety
        return {}


def _library_name(filename: str) -> str:
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            top = parts[parts.index(marker) + 1].removesuffix(".py")
            names = _distributions().get(top) or []
            # langgraph's modules ship in several distributions (langgraph, langgraph-prebuilt, …):
            # prefer langgraph-prebuilt for langgraph/prebuilt/, else the one named like the module
            rest = parts[parts.index(marker) + 2 : -1]
            wanted = [f"{top}-{rest[0]}"] if rest else []
            same = [n for w in (*wanted, top) for n in names if n.lower().replace("_", "-") == w.lower()]
            return (same or names or [top])[0]
    return "Python"


def _stdlib_module(filename: str) -> str:
    path = Path(filename)
    for base in _LIBRARY_DIRS:
        with contextlib.suppress(ValueError):
            return path.resolve().relative_to(base).parts[0].removesuffix(".py")
    return path.stem


def _where(frame: traceback.FrameSummary, frames: list[traceback.FrameSummary] = ()) -> str:
    name = (frame.name or "?").replace(".<locals>", "")
    if name.startswith("<"):  # a comprehension's frame: name the function around it
        named = [f for f in frames if f.filename == frame.filename and not f.name.startswith("<")]
        name = named[-1].name if named else name
    if _CELL.search(frame.filename):
        place = f"line {frame.lineno} of your cell"
    else:
        place = f"line {frame.lineno} of {Path(frame.filename).name}"
    line = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
    return f"`{name}`, {place}" + (f": `{shorten(line, 90)}`" if line else "")


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(exc.__traceback__)) if exc.__traceback__ else []


def is_stub(exc: BaseException) -> bool:
    """True when `exc` is a NotImplementedError raised by a learner's own `raise NotImplementedError`
    line (a starter's stub), not by a library or the course."""
    if not isinstance(exc, NotImplementedError):
        return False
    frames = _frames(exc)
    if not frames or _kind(frames[-1].filename) != "learner":
        return False
    line = (frames[-1].line or linecache.getline(frames[-1].filename, frames[-1].lineno or 0)).strip()
    return "raise NotImplementedError" in line


def describe_exception(exc: BaseException, name: str | None = None) -> str:
    """One or two lines naming an exception the learner's code led to, with the learner's frame.

    "your code raised KeyError: 'tool' in `run_calls`, line 3 of your cell: `...`", or, when it
    came from inside a library, "langchain-core raised NotImplementedError: … — called from your
    `node`, line 5 of your cell"."""
    text = f"{type(exc).__name__}: {shorten(exc, 200)}" if str(exc) else type(exc).__name__
    frames = _frames(exc)
    mine = [f for f in frames if _kind(f.filename) == "learner"]
    origin = _kind(frames[-1].filename) if frames else "learner"
    if origin == "learner":
        where = f" in {_where(mine[-1], mine)}" if mine else ""
        return f"your code raised {text}{where}"
    if origin == "course":
        source = f"the course's {Path(frames[-1].filename).relative_to(ROOT).as_posix()}"
    elif origin == "library":
        source = _library_name(frames[-1].filename)
    else:
        source = f"Python's {_stdlib_module(frames[-1].filename)}"
    called = f" — called from your {_where(mine[-1], mine)}" if mine else ""
    advice = ""
    if "does not support sync invocation" in str(exc):
        advice = ": this tool is async-only, use `await tool.ainvoke(...)`"
    elif isinstance(exc, NotImplementedError):
        advice = " (a NotImplementedError from a library, not your stub)"
    return f"{source} raised {text}{called}{advice}"


# -- running the learner's code under a time limit ----------------------------------------------------
def _is_async_callable(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - an object's async __call__
    return call is not None and not inspect.isfunction(fn) and inspect.iscoroutinefunction(call)


def run_in_fresh_loop(
    make: Callable[[], Any], state: dict[str, Any], loop_factory: Callable[[], Any] | None = None
) -> Any:
    """`make()` on a new event loop of this thread, awaited if it returns an awaitable; the loop is
    closed after cancelling what is left. `state` gets the `"loop"` and the `"task"`, so that a
    watcher in another thread can cancel the run. Used by the lab checks and `helpers.practice`."""
    loop = (loop_factory or asyncio.new_event_loop)()
    state["loop"] = loop
    try:
        asyncio.set_event_loop(loop)

        async def main() -> Any:
            state["task"] = asyncio.current_task()
            value = make()
            if inspect.isawaitable(value):
                value = await value
            return value

        return loop.run_until_complete(main())
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=1.0))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def run_limited(
    fn: Callable[..., Any],
    *args: Any,
    limit: float | None = None,
    name: str | None = None,
    loop_factory: Callable[[], Any] | None = None,
    context: contextvars.Context | None = None,
    **kwargs: Any,
) -> Any:
    """Call `fn(*args, **kwargs)` in a daemon worker thread and wait at most `limit` seconds.

    With `context` (a `contextvars.copy_context()`), the worker runs in it, so `fn` sees the context
    variables its caller saw.

    A coroutine function, or a sync callable that returns an awaitable, runs on a fresh event loop
    in that thread (so this works from inside the notebook's running loop), made by `loop_factory`
    (default `asyncio.new_event_loop`: a check that watches the loop passes its own). The value is returned
    and an exception re-raised as it is; a run still going after `limit` raises `LearnerHung`
    (for a coroutine the check cancels it first). `run_learner` adds the learner-facing messages.
    """
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    limit = LIMIT if limit is None else limit
    state: dict[str, Any] = {}
    done = threading.Event()
    watch = getattr(_watching, "watch", None)  # the check's own run this thread belongs to, if any
    if watch is not None and watch.cancelled:
        raise KeyboardInterrupt  # the check was stopped: its background run goes no further

    def work() -> None:
        _watching.watch = watch  # a run started from this one pauses the check's own clock too
        try:
            if _is_async_callable(fn):
                state["value"] = run_in_fresh_loop(lambda: fn(*args, **kwargs), state, loop_factory)
            else:
                value = fn(*args, **kwargs)
                if inspect.isawaitable(value):
                    value = run_in_fresh_loop(lambda: value, state, loop_factory)
                state["value"] = value
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            state["error"] = exc
        finally:
            done.set()

    threads_before = set(threading.enumerate())
    target = work if context is None else functools.partial(context.run, work)
    worker = threading.Thread(target=target, name=f"lab-check:{label}", daemon=True)
    if watch is not None:
        watch.pause()
    try:
        worker.start()
        finished = done.wait(limit)
    finally:
        if watch is not None:
            watch.resume()
    if not finished:
        task, loop = state.get("task"), state.get("loop")
        stopped = False
        if task is not None and loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
            stopped = done.wait(1.0)
        # a sync function the learner's coroutine handed to a thread (`ainvoke` runs a sync node in
        # `asyncio_1`) is not stopped by cancelling the task: "cancelled" only when no thread is left
        for _ in range(10):
            left = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
            if not stopped or not left:
                break
            threading.Event().wait(0.05)
        stopped = stopped and not left
        after = (
            "The check cancelled it."
            if stopped
            else "It runs on in a background (daemon) thread that cannot be stopped from here "
            "and keeps running "
            "(using CPU, if it loops) until the kernel restarts (Kernel → Restart); the notebook stays "
            "usable."
        )
        hung = LearnerHung(
            f"your code did not return within {limit:g} s (`{label}`) — does it wait for something that "
            f"never happens? (a `while True` retry, an event nobody sets, a lock or a semaphore never "
            f"released, a sleep longer than the deadline) {after}",
            summary=f"`{label}` did not return within {limit:g} s",
        )
        hung.stopped = stopped
        raise hung
    if "error" in state:
        raise state["error"]
    return state.get("value")


class _Watch:
    """The clock of a check's own run (`_run_watched`): the time its thread spends outside the runs
    of learner code it starts (`run_limited`, `run_learner`), each of which has its own limit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.since = _monotonic()
        self.cancelled = False

    def pause(self) -> None:
        with self.lock:
            self.depth += 1

    def resume(self) -> None:
        with self.lock:
            self.depth -= 1
            self.since = _monotonic()

    def overdue(self, limit: float) -> float:
        """Seconds to wait before the own-time limit is reached (<= 0: reached)."""
        with self.lock:
            if self.depth > 0:
                return 0.25  # a run of learner code is under way: its own limit counts
            return limit - (_monotonic() - self.since)


_watching = threading.local()
"""`watch`: the `_Watch` of the check whose code runs on this thread (None outside a check)."""
_monotonic = time.monotonic
OWN_LIMIT = 10.0
"""Seconds a check's own code may run on end between the runs of learner code it starts, each of
which has its own limit: what it spends reading what the learner's code gave (its `__eq__`,
`__hash__`, `__len__`, a property, a class's `__name__`), which may be learner code too."""


def _stuck_in(thread: threading.Thread) -> str:
    """Where `thread` is now: the learner's frame, `your `__hash__`, line 3 of your cell: `...``."""
    import sys

    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return ""
    frames = traceback.extract_stack(frame)
    mine = [f for f in frames if _kind(f.filename) == "learner"]
    if mine:
        return f"your {_where(mine[-1], mine)}"
    last = frames[-1] if frames else None
    return f"the course's `{last.name}`, line {last.lineno} of {Path(last.filename).name}" if last else ""


def _run_watched(fn: Callable[..., Any], *args: Any, key: str, limit: float | None = None) -> Any:
    """`fn(*args)` (a check's own code, which reads the learner's values) in a daemon worker thread of
    the caller's context; its value, or its exception re-raised. The check's own time is limited
    (`OWN_LIMIT`, not counting the runs of learner code it starts, limited each on its own): past
    it, the check gives a verdict naming where it was stuck, and the kernel stays usable. A
    `KeyboardInterrupt` in the caller (the stop button) stops the run at its next learner run."""
    limit = OWN_LIMIT if limit is None else limit
    watch = _Watch()
    state: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        _watching.watch = watch
        try:
            state["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            state["error"] = exc
        finally:
            _watching.watch = None
            done.set()

    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(work,), name=f"lab-check:{key}", daemon=True)
    worker.start()
    try:
        while not done.is_set():
            wait = watch.overdue(limit)
            if wait <= 0:
                break
            done.wait(wait)
    except BaseException:
        watch.cancelled = True
        raise
    if not done.is_set():
        watch.cancelled = True
        where = _stuck_in(worker)
        course = where.startswith("the course's")
        if course:
            text = (
                f"the check's own code did not finish within {limit:g} s (stuck in {where}) — a bug in "
                "the course, not in your code: please report it"
            )
        else:
            text = (
                f"your code did not return within {limit:g} s while the check read what it gave"
                f"{' (in ' + where + ')' if where else ''} — an `__eq__`, `__hash__`, `__len__`, "
                "`__iter__`, a property or a class's `__name__` that waits or loops forever? It runs on in "
                "a background (daemon) thread that cannot be stopped from here until the kernel restarts "
                "(Kernel → Restart); the notebook stays usable."
            )
        raise LearnerHung(text, summary=f"did not return within {limit:g} s while the check read it")
    if "error" in state:
        raise state["error"]
    return state.get("value")


def _signature(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return ""


def run_learner(
    fn: Callable[..., Any],
    *args: Any,
    limit: float | None = None,
    name: str | None = None,
    loop_factory: Callable[[], Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Run learner code under a time limit on every path; turn whatever goes wrong into feedback.

    - returns what `fn(*args, **kwargs)` returns (awaited, on a fresh loop, if it is a coroutine);
    - a hang → `LearnerHung` ("your code did not return within N s — …"), the kernel still usable;
    - the learner's stub line → `StillAStub`;
    - any other exception → `LearnerRaised` naming the exception and the learner's frame
      ("your code raised KeyError: 'tool' in `run_calls`, line 3 of your cell"), or the library
      it came from with the learner's call site. `.original` keeps the exception.
    """
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    if not callable(fn):
        raise LearnerRaised(
            f"`{label}` is a {type(fn).__name__} ({shorten(repr(fn), 80)}), not a function: define it with "
            "`def` or `async def`",
            TypeError(f"{type(fn).__name__} is not callable"),
        )
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise LearnerRaised(
            f"your `{label}{_signature(fn)}` cannot be called the way the exercise calls it "
            f"({len(args)} argument(s)"
            f"{', ' + ', '.join(f'{k}=' for k in kwargs) if kwargs else ''}): {exc} — keep the signature "
            "the exercise gives",
            exc,
        ) from None
    except ValueError:
        pass  # no signature to read (a builtin): let the call tell
    try:
        return run_limited(fn, *args, limit=limit, name=name, loop_factory=loop_factory, **kwargs)
    except CheckFailed:
        raise
    except BaseException as exc:  # noqa: BLE001 - every learner failure becomes feedback
        if isinstance(exc, KeyboardInterrupt):
            raise
        if is_stub(exc):
            raise StillAStub(
                f"your code still raises NotImplementedError: {exc} (the starter's stub line). "
                "Replace that `raise` line with your code, run the cell, then this check again.",
                exc,
            ) from None
        raise LearnerRaised(describe_exception(exc, name), exc) from None


def scaled_limit(work: float, *, factor: float = 3.0, slack: float = 2.0) -> float:
    """A time limit that scales with the work a check drew: `max(LIMIT, factor * work + slack)`.

    `work` is the seconds a correct answer spends on the drawn scenario when it does the work one
    item at a time (the delays summed: pages to fetch, calls to make), so a correct but sequential
    answer never times out because a draw happened to be long, and a hang is still cut:

        delays = [rng.choice((0.05, 0.1, 0.2)) for _ in urls]
        events = run_learner(crawl, urls, limit=scaled_limit(sum(delays)))
    """
    return max(LIMIT, factor * float(work) + slack)


def run_async(make: Callable[[], Awaitable[Any]], timeout: float | None = None) -> Any:
    """Run the coroutine `make()` creates under a time limit, also from inside a running loop.

    Exceptions are re-raised as they are; a hang raises `LearnerHung`. (`run_limited` for a
    coroutine factory; kept for the checks written before `run_learner`.)
    """
    return run_limited(make, limit=timeout, name=getattr(make, "__name__", None))


def distinct(draw: Callable[[], Any], count: int) -> list[Any]:
    """`count` values of `draw()`, all different: a value already drawn is drawn again (so `draw`
    must be able to give `count` different values).

    For a check that finds an event by a random value it drew (the file lab 08's tool deletes, the
    page lab 13's crawl breaks on): a repeat would read as the wrong one.
    """
    values: list[Any] = []
    while len(values) < count:
        value = draw()
        if value not in values:
            values.append(value)
    return values


# -- every case a check tries --------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    passed: bool
    detail: str = ""
    expected: str = ""
    observed: str = ""
    where: str = ""
    why: str = ""


class Cases:
    """Every case one check tries, passed ✔ or failed ✘; `result()` raises one `CheckFailed`.

        cases = Cases("q1")
        cases.ok("unknown name", "answered with the allowed tools")
        cases.bad("bad arguments", expected=..., observed=..., where=..., why="...")
        with cases.case("a raising tool"):      # a `fail(...)` raised inside becomes a failed case
            ...
        return cases.result("all answered")     # raises when any case failed

    After a case hung (`LearnerHung`), `cases.hung` is set and `run()` skips the rest, so one
    hang costs one time limit, not one per case.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.items: list[Case] = []
        self.hung: Case | None = None

    def record(
        self,
        name: str,
        passed: bool,
        *,
        detail: str = "",
        expected: str = "",
        observed: str = "",
        where: str = "",
        why: str = "",
    ) -> bool:
        self.items.append(
            Case(name, passed, detail, str(expected), shorten(observed) if observed else "", where, why)
        )
        return passed

    def ok(self, name: str, detail: str = "") -> bool:
        return self.record(name, True, detail=detail)

    def bad(self, name: str, *, expected: str, observed: str, where: str = "", why: str = "") -> bool:
        return self.record(name, False, expected=expected, observed=observed, where=where, why=why)

    def failure(self, name: str, error: CheckFailed) -> bool:
        """Record a `CheckFailed` (from `fail(...)`, `run_learner` or a nested check) as a failed case."""
        if isinstance(error, StillAStub):
            raise error  # the whole exercise is still a stub: say that once, not per case
        f = getattr(error, "fields", {}) or {}
        if isinstance(error, LearnerHung):
            self.hung = Case(name, False)
            if not f.get("expected"):  # shown whole: its end says whether a thread is left running
                self.items.append(Case(name, False, observed=" ".join(str(error).split())))
                return False
        if f.get("expected"):
            return self.bad(
                name if not f.get("summary") else f"{name}: {f['summary']}",
                expected=f["expected"],
                observed=f.get("observed", ""),
                where=f.get("where", ""),
                why=f.get("why", ""),
            )
        return self.bad(name, expected="", observed=str(error), where="", why="")

    @contextlib.contextmanager
    def case(self, name: str, detail: str = "") -> Iterator[None]:
        """`with cases.case(name):` — passes unless a `CheckFailed` is raised inside."""
        try:
            yield
        except StillAStub:
            raise  # the whole exercise is still a stub: say that once, not per case
        except CheckFailed as error:
            self.failure(name, error)
        else:
            self.ok(name, detail)

    def run(self, name: str, fn: Callable[[], Any], detail: str = "") -> Any:
        """Run one case: `fn()` returns (passed, optional value) or raises `CheckFailed`. Skipped
        (recorded as not tried) after an earlier case hung."""
        if self.hung is not None:
            self.items.append(Case(name, False, observed=f"not tried: “{self.hung.name}” hung first"))
            return None
        with self.case(name, detail):
            return fn()
        return None

    @property
    def failed(self) -> list[Case]:
        return [c for c in self.items if not c.passed]

    def text(self) -> str:
        """Each case on a line; a failing one with its expected, observed, why and where to look. A
        cause shared by several failing cases (the same why and section) is explained once: later
        cases show their own expected and observed, then `why: as above`."""
        lines, last, explained = [], None, set()
        for c in self.items:
            if c.passed:
                lines.append(f"  ✔ {c.name}" + (f" — {c.detail}" if c.detail else ""))
                continue
            same = (c.expected, c.observed, c.why, c.where)
            if same == last:  # "(as above)" only when there is something above to repeat
                lines.append(f"  ✘ {c.name}" + (" (as above)" if c.expected or c.observed else ""))
                continue
            last = same
            lines.append(f"  ✘ {c.name}")
            if c.expected:
                lines.append(f"      expected: {c.expected}")
            if c.observed:
                lines.append(f"      observed: {c.observed}")
            if c.why and (c.why, c.where) in explained:
                lines.append("      why:      as above")
                continue
            explained.add((c.why, c.where))
            if c.why:
                lines.append(f"      why:      {c.why}")
            if c.where:
                lines.append(f"      look at:  {c.where}")
        return "\n".join(lines)

    def result(self, summary: str) -> str:
        """`summary` when every case passed; else raise one `CheckFailed` listing every case."""
        if not self.failed:
            return summary
        n, total = len(self.failed), len(self.items)
        first = self.failed[0]
        raise CheckFailed(
            f"{self.key} — not yet: {n} of {total} case{'s' if total != 1 else ''} failed.\n"
            + self.text()
            + f"\n{_stuck(self.key)}",
            summary=f"{n} of {total} cases failed (first: {first.name})",
            expected=first.expected,
            observed=first.observed,
            where=first.where,
            why=first.why,
        )


def _stuck(key: str) -> str:
    return f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()"


# -- output the learner's code prints during a check ----------------------------------------------------
class _BoundedOutput(io.TextIOBase):
    """Keeps the first `MAX_OUTPUT_LINES` lines written to it and counts the rest."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.lines = 0
        self._partial = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            text = self._partial + str(text)
            *complete, self._partial = text.split("\n")
            for line in complete:
                self.lines += 1
                if len(self.kept) < MAX_OUTPUT_LINES:
                    self.kept.append(line[:160])
            if len(self._partial) > 10_000:  # one endless line
                self._partial = self._partial[:160]
        return len(text)

    def summary(self) -> str:
        if self._partial:
            self.write("\n")
        if not self.lines:
            return ""
        shown = "\n".join(f"    | {line}" for line in self.kept)
        more = (
            f"\n    | … {self.lines - len(self.kept)} more line(s) not shown"
            if self.lines > len(self.kept)
            else ""
        )
        return f"  (your code printed {self.lines} line(s) during the check:)\n{shown}{more}"


@contextlib.contextmanager
def bounded_output() -> Iterator[_BoundedOutput]:
    """Capture what is printed (any thread) while the check runs; `summary()` shows a bounded part."""
    sink = _BoundedOutput()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield sink


@dataclass
class Exercise:
    """One exercise of a lab: the names it reads from the notebook, its checker, its hints.

    Args:
        lab: the lab's number, e.g. `"01"`.
        key: `"q1"`, `"q2"`, ... (the region name in the solution notebook).
        names: the names the learner defines (looked up in the notebook's globals).
        checker: `checker(*values) -> str` runs them for real (learner code through `run_learner`);
            returns a one-line summary when they are right, raises `CheckFailed` (from `fail` or
            `Cases.result`) when not. Kept in the guard's registry when the exercise is created; the
            `checker` attribute then holds an opaque stand-in (`sealed_checker`), so nothing the notebook
            holds leads to the checker or the data it is bound to.
        hints: tiered hints, a nudge first, then more.
    """

    lab: str
    key: str
    names: tuple[str, ...]
    checker: Callable[..., str]
    hints: tuple[str, ...]
    passed: bool = field(default=False, init=False)
    __lab_api__ = (
        _guard.EXERCISE_API
    )  # what a notebook may use of it (`q1.check()`, ...); the scan refuses the rest

    def __post_init__(self) -> None:
        # the fields as created, and the class: the check runs these, whatever the attributes say later
        _guard.register(self, sealed_checker)

    def _fields(self) -> Any:
        return _guard.registered(self) or self

    def values(self, namespace: Mapping[str, Any]) -> list[Any]:
        return _read_values(self._fields(), namespace)

    def run(self, namespace: Mapping[str, Any], sources: list[str] | None = None) -> str:
        """The checker's summary, or `CheckFailed` — whatever the learner's code does.

        Before and after the checker runs, the check verifies that nothing it is made of was
        changed (`helpers.labs.guard`), and it scans the learner's code (`sources`: the cells to
        read; by default the cells this kernel ran, and `namespace["In"]`) for code that reads or
        writes a check's internals. Either gives a `CheckTampered` verdict instead of a grade."""
        return _PATH["run"](self, namespace, sources)

    def _judge(self, fields: Any, values: list[Any]) -> str:
        """The registered checker on `values`, every exception turned into a verdict (run on the
        check's own worker thread, `_run_watched`)."""
        return _PATH["judge"](fields, values)

    def check(self, namespace: Mapping[str, Any] | None = None) -> None:
        """Run the learner's code for real; print a confirmation, or raise `CheckFailed`.

        What the learner's code prints meanwhile is captured: a few lines are shown, the rest
        counted, so the verdict stays on screen. Safe to run twice, or before the cell defining
        the names ran (it says which cell to run). Whatever the learner's code raises ends in a
        verdict; a `KeyboardInterrupt` (the stop button) ends it with one line."""
        raise NotImplementedError  # replaced below by the check path (`_make_check_path`)

    def _check(self, namespace: Mapping[str, Any], sources: list[str] | None) -> None:
        raise NotImplementedError  # replaced below by the check path (`_make_check_path`)

    def hint(self, level: int = 1) -> None:
        """Print hint `level` (1: a nudge; higher: more)."""
        hints = self._fields().hints
        level = max(1, min(level, len(hints)))
        more = f"  (more: {self.key}.hint({level + 1}))" if level < len(hints) else ""
        text = f"Hint {level}/{len(hints)} for {self.key}: {' '.join(hints[level - 1].split())}{more}"
        print(textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False))

    def solution(self) -> None:
        """Print the solution, read from `labs/solutions/` (the single source of truth)."""
        print(f"Solution for {self.key} (from labs/solutions/{NAMES[self.lab]}.ipynb):\n")
        print(solution_text(self.lab, self.key))


def sealed_checker(*args: Any, **kwargs: Any) -> str:
    """What an exercise's public `checker` attribute holds: the checker runs only through `check()`."""
    raise CheckFailed("an exercise's checker runs only through its `check()`: call `q1.check()`")


def _read_values(fields: Any, namespace: Mapping[str, Any]) -> list[Any]:
    values = []
    for name in fields.names:
        if name not in namespace:
            raise CheckFailed(
                f"{fields.key} — not yet: `{name}` is not defined.\n"
                f"  Run the exercise cell above (replace its `raise NotImplementedError(...)` with your "
                f"code first), then this check again."
            )
        values.append(namespace[name])
    return values


def _judge_values(fields: Any, values: list[Any]) -> str:
    key = fields.key
    stuck = _stuck(key)
    try:
        summary = fields.checker(*values)
    except StillAStub as exc:
        raise CheckFailed(f"{key} — not yet: {exc}\n{stuck}") from None
    except LearnerHung as exc:
        raise CheckFailed(f"{key} — not yet: {exc}\n{stuck}") from None
    except LearnerRaised as exc:
        raise CheckFailed(
            f"{key} — not yet: {exc}\n"
            "  Fix that line (`%xmode Context` shows the whole traceback when you run the function "
            f"yourself), then this check again.\n{stuck}"
        ) from None
    except CheckFailed:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - learner code called outside run_learner
        # SystemExit, GeneratorExit, CancelledError included: raised by an object the check reads
        # (its __eq__, __iter__, __len__, __repr__, a property) as much as by a function it calls
        if is_stub(exc):
            raise CheckFailed(
                f"{key} — not yet: your code still raises NotImplementedError: {exc} (the starter's "
                f"stub line). Replace that `raise` line with your code, run the cell, then this check "
                f"again.\n{stuck}"
            ) from None
        raise CheckFailed(f"{key} — not yet: {_describe_safely(exc)}\n{stuck}") from None
    if type(summary) is not str:  # a checker returns its own text; anything else came from elsewhere
        summary = "all cases passed"
    return summary


def _read_and_judge(fields: Any, namespace: Mapping[str, Any]) -> str:
    """On the check's own thread: the learner's names read (a mapping of theirs may be code too), then
    judged."""
    return _judge_values(fields, _read_values(fields, namespace))


def _describe_safely(exc: BaseException) -> str:
    """`describe_exception`, or the exception's type alone when even its text raises."""
    try:
        return describe_exception(exc)
    except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
        return f"your code raised {type(exc).__name__} (its message could not be read)"


FIX_TAMPERING = (
    "restart the kernel (Kernel → Restart Kernel…), take out the line(s) that change or read the "
    "course's modules, run the cells again, then this check"
)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 2] + " …"


def _tampered(key: str, found: list[str]) -> CheckTampered:
    """The verdict for a check whose own code, data or exercise changed (`found` names what); built with
    builtins only: `shorten` may be what was changed."""
    shown = ", ".join(found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
    why = (
        "a check grades what your code does; a check whose own code, data or draws were changed by code "
        "run in this kernel says nothing about it, so it does not judge"
    )
    return CheckTampered(
        f"{key} — not yet: this check cannot judge: code run in this kernel changed what it is made of.\n"
        f"  changed:  {_cut(shown, 400)}\n"
        f"  fix:      {FIX_TAMPERING}.\n"
        f"  why:      {why}.",
        summary=f"the check's own code or data was changed: {_cut(shown, 120)}",
        expected="the course's checks as they were imported",
        observed=f"changed: {_cut(shown, 200)}",
        where="restart the kernel and run the cells again",
        why=why,
    )


def _refuse_tampering(exercise: Exercise, key: str) -> None:
    """Raise `CheckTampered` when anything the check is made of is no longer as it was imported."""
    found = _PATH["changes"](exercise)
    if found:
        raise _PATH["tampered"](key, found)


def _refuse_reaching_in(key: str, namespace: Any, sources: list[str] | None) -> None:
    """Raise `CheckTampered` when the learner's code reads or writes a check's internals."""
    if sources is None:
        sources = _guard.kernel_cells()
        history = namespace.get("In") if type(namespace) is dict else None
        if type(history) is list:
            sources = sources + [s for s in history if type(s) is str]
    if not sources:
        return
    findings = [f for f in _guard.scan(sources) if f.exercise in (None, key)]
    if not findings:
        return
    lines = [f"  line {f.line}: `{shorten(f.code, 90)}` — {f.what}" for f in findings[:4]]
    if len(findings) > 4:
        lines.append(f"  … and {len(findings) - 4} more")
    first = findings[0]
    raise CheckTampered(
        f"{key} — not yet: your code reads or changes the check's own internals, so the check does not "
        "judge it.\n"
        + "\n".join(lines)
        + "\n  fix:      answers must come from your own code: take those lines out, restart the kernel "
        "(Kernel → Restart Kernel…) and run the cells again.",
        summary=f"your code reaches into the check: `{shorten(first.code, 60)}` ({first.what})",
        expected="answers computed by your own code, using only what the lab's Setup cell imports",
        observed=f"line {first.line}: {first.what}",
        where="the lab's Setup cell: what it imports is what an exercise may use",
        why="a verdict on the check's own internals says nothing about your code",
    )


def _make_check_path() -> dict[str, Any]:
    """The path every `q1.check()` takes, its functions captured here once, at import: a notebook that
    rebinds a module attribute (`guard.changes`, `helpers.labs._refuse_tampering`, `Exercise._judge`)
    or swaps an exercise's class changes something the first step verifies, never the path itself.

    1. verify (`guard.changes`: the course's modules, the standard library and library classes the
       checks drive, the exercise's registered fields and class) — nothing else has run yet;
    2. scan the kernel's cells for code that reaches into a check;
    3. read the learner's names and run the registered checker on the check's own worker thread
       (`_run_watched`): a hang in anything it reads of the learner's is cut with a verdict;
    4. verify again, then the verdict."""
    changes, registered = _guard.changes, _guard.registered
    tampered, refuse_reaching_in, read_and_judge, judge = (
        _tampered,
        _refuse_reaching_in,
        _read_and_judge,
        _judge_values,
    )
    run_watched, output, stuck_text, describe = _run_watched, bounded_output, _stuck, _describe_safely
    check_failed, check_tampered, check_stopped, learner_hung = (
        CheckFailed,
        CheckTampered,
        CheckStopped,
        LearnerHung,
    )
    getframe = __import__("sys")._getframe
    print_, type_ = print, type

    def fields_of(exercise: Any) -> Any:
        fields = registered(exercise)
        if fields is None:  # not made by Exercise(...): nothing registered to run
            raise check_failed("this object was not created as an exercise of the course: nothing to check")
        return fields

    def verify(exercise: Any, key: str) -> None:
        found = changes(exercise)
        if found:
            raise tampered(key, found)

    def run(exercise: Any, namespace: Mapping[str, Any], sources: list[str] | None) -> str:
        fields = fields_of(exercise)
        verify(exercise, fields.key)
        refuse_reaching_in(fields.key, namespace, sources)
        try:
            summary = run_watched(read_and_judge, fields, namespace, key=fields.key)
        except learner_hung as exc:
            verify(exercise, fields.key)
            raise check_failed(
                f"{fields.key} — not yet: {exc}\n{stuck_text(fields.key)}", **exc.fields
            ) from None
        except check_failed as verdict:
            verify(exercise, fields.key)  # a check changed while it ran cannot fail you either
            raise verdict.with_traceback(None) from None
        verify(exercise, fields.key)
        return summary

    def check_in(exercise: Any, namespace: Mapping[str, Any], sources: list[str] | None) -> None:
        fields = fields_of(exercise)
        key = fields.key
        verify(exercise, key)  # before anything the exercise's attributes or class say runs
        exercise.passed = False
        try:
            with output() as printed:
                try:
                    summary = run(exercise, namespace, sources)
                except check_failed as exc:
                    error = exc
                else:
                    error = None
            shown = printed.summary()
        except KeyboardInterrupt:
            raise check_stopped(
                f"{key} — check stopped: KeyboardInterrupt (the stop button, or your code raised it) before "
                f"a verdict; run the check again."
            ) from None
        except BaseException as exc:  # noqa: BLE001 - whatever escaped, a verdict
            raise check_failed(f"{key} — not yet: {describe(exc)}\n{stuck_text(key)}") from None
        if error is not None:
            if shown and not isinstance(error, check_stopped):
                kind = type_(error) if type_(error) in (check_failed, check_tampered) else check_failed
                raise kind(f"{error}\n{shown}", **error.fields) from None
            raise error.with_traceback(None) from None
        if shown:
            print_(shown)
        exercise.passed = True
        print_(f"✔ {key} passed: {summary}")

    def check(self: Any, namespace: Mapping[str, Any] | None = None) -> None:
        if namespace is None:
            namespace = getframe(1).f_globals  # the notebook's names
        check_in(self, namespace, None)

    def judge_method(self: Any, fields: Any, values: list[Any]) -> str:
        return judge(fields, values)

    check.__doc__ = Exercise.check.__doc__
    for fn, name in ((check, "check"), (check_in, "_check")):
        fn.__qualname__, fn.__name__, fn.__module__ = f"Exercise.{name}", name, __name__
    return {
        "check": check,
        "_check": check_in,
        "run": run,
        "judge": judge,
        "changes": changes,
        "tampered": tampered,
    }


_PATH = _make_check_path()
Exercise.check = _PATH["check"]
Exercise._check = _PATH["_check"]
_PATH = types.MappingProxyType(_PATH)


# -- plain values -------------------------------------------------------------------------------------------
_PLAIN = (str, int, float, bool, type(None), bytes)
_CONTAINERS = (list, tuple, dict, set, frozenset)


def _an(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def plain_problem(value: Any, kind: Any = None, _depth: int = 0) -> str | None:
    """Why `value` is not a plain value of `kind`, or None when it is one.

    Plain means built of `str`, `int`, `float`, `bool`, `None`, `bytes`, and `list`, `tuple`, `dict`,
    `set`, `frozenset` of those, each of EXACTLY that type: a `str` subclass, an object whose `==`
    says yes to everything, `True` where an `int` is asked for, are not plain. `kind` is a type
    (`str`), a tuple of types, a generic alias (`list[str]`, `dict[str, int]`, `tuple[str, ...]`), or
    None for any plain value. Reads `value` only through the builtins' own methods."""
    import typing

    if _depth > 20:
        return "a value nested more than 20 levels deep"
    actual = type(value)
    name = getattr(actual, "__name__", "object")
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is not None and origin is None:
        kinds = kind if type(kind) is tuple else (kind,)
        kinds = tuple(type(None) if k is None else k for k in kinds)
        if actual not in kinds:
            wanted = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
            if actual is bool:
                return f"{value!r} (a bool), not {_an(wanted)}"
            if any(isinstance(value, k) for k in kinds if isinstance(k, type)):
                return f"{_an(name)}, which only looks like {_an(wanted)}: write a plain {wanted}"
            return f"{_an(name)}, not {_an(wanted)}"
    elif origin is not None:
        if actual is not origin:
            return f"{_an(name)}, not {_an(origin.__name__)}"
    if actual not in _PLAIN and actual not in _CONTAINERS:
        return f"{_an(name)}, not a plain value (str, int, float, bool, None, list, tuple, dict, set)"
    if actual in (list, tuple, set, frozenset):
        items = list(actual.__iter__(value)) if actual is not list else list.copy(value)
        for index, item in enumerate(items):
            if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
                item_kind = args[index] if index < len(args) else object
                if index >= len(args):
                    return f"a tuple of {len(items)} items, not {len(args)}"
            else:
                item_kind = args[0] if args else None
            problem = plain_problem(item, None if item_kind is object else item_kind, _depth + 1)
            if problem:
                return f"item {index}: {problem}"
        if (
            origin is tuple
            and args
            and not (len(args) == 2 and args[1] is Ellipsis)
            and len(items) != len(args)
        ):
            return f"a tuple of {len(items)} items, not {len(args)}"
    if actual is dict:
        key_kind, value_kind = (args + (None, None))[:2] if args else (None, None)
        for key, item in dict.items(value):
            problem = plain_problem(key, key_kind, _depth + 1)
            if problem:
                return f"key {shorten(repr(key) if type(key) in _PLAIN else name, 40)}: {problem}"
            problem = plain_problem(item, value_kind, _depth + 1)
            if problem:
                return f"the value of {shorten(repr(key), 40)}: {problem}"
    return None


def _rebuilt(value: Any) -> Any:
    actual = type(value)
    if actual in (list, tuple, set, frozenset):
        items = list.copy(value) if actual is list else list(actual.__iter__(value))
        return actual(_rebuilt(item) for item in items)
    if actual is dict:
        return {_rebuilt(k): _rebuilt(v) for k, v in dict.items(value)}
    if actual is str:
        return str.__str__(value)
    return value  # int, float, bool, None, bytes: exact builtin types, immutable


def plain(value: Any, kind: Any = None, *, name: str = "your value", key: str = "", where: str = "") -> Any:
    """`value` rebuilt from builtins the check constructs itself, once `plain_problem` finds it plain;
    else a `CheckFailed` naming what it is instead. Compare THIS, never the learner's object:

        answer = plain(run_learner(fn, ...), list[str], name="`run_calls`' result", key="q1")
    """
    problem = plain_problem(value, kind)
    if problem is None:
        return _rebuilt(value)
    wanted = getattr(kind, "__name__", None) or (str(kind) if kind is not None else "a plain value")
    raise fail(
        f"{name} is {problem}",
        key=key,
        expected=f"a plain {wanted}, built from Python's own types",
        observed=problem,
        why="the check compares plain values it rebuilds itself: a subclass or an object with its own "
        "`==` could say it equals anything",
        where=where or "the exercise's instructions: what it asks you to return",
    )


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


__all__ = [
    "LIMIT",
    "NAMES",
    "Case",
    "Cases",
    "CheckFailed",
    "CheckStopped",
    "CheckTampered",
    "Exercise",
    "LearnerHung",
    "LearnerRaised",
    "StillAStub",
    "bounded_output",
    "describe_exception",
    "distinct",
    "fail",
    "is_stub",
    "plain",
    "plain_problem",
    "record_failure",
    "rng",
    "run_async",
    "run_in_fresh_loop",
    "run_learner",
    "run_limited",
    "scaled_limit",
    "section",
    "shorten",
    "solution_namespace",
]


DETAILED = 3
"""Failed cases shown in full (expected, observed, why, where); later ones take one line each, so a
verdict fits on the first screen."""


def record_failure(cases: Cases, label: str, error: CheckFailed, seen: dict) -> None:
    """Record a failed case; a mistake already explained above, or one past the first few, takes one line.

    Used by checks that run several scenarios (labs 06 and 08), so their verdict fits on one screen.
    """
    if isinstance(error, LearnerHung):
        cases.failure(label, error)  # marks the rest "not tried": one hang costs one time limit
        return
    fields = getattr(error, "fields", {}) or {}
    summary = fields.get("summary", "")
    name = f"{label}: {summary}" if summary else label
    why, observed = fields.get("why", ""), fields.get("observed", "") or str(error)
    for kind in ("why", "observed", "where"):
        seen.setdefault(kind, set())
    if (why and why in seen["why"]) or observed in seen["observed"]:
        cases.bad(f"{name} — the same mistake as above", expected="", observed="")
        return
    seen["why"].add(why)
    seen["observed"].add(observed)
    if seen.get("detailed", 0) >= DETAILED:
        cases.bad(f"{name} (the details once the cases above pass)", expected="", observed="")
        return
    seen["detailed"] = seen.get("detailed", 0) + 1
    if not fields.get("expected"):  # a hang or an exception of the learner's: its message says it all
        cases.failure(label, error)
        return
    where = fields.get("where", "")
    if where in seen["where"]:
        where = ""  # one link per section is enough
    seen["where"].add(where)
    cases.bad(name, expected=fields["expected"], observed=observed, where=where, why=why)


def solution_namespace(number: str) -> dict:
    """Execute lab `number`'s solution code (not its checks and hints) into a fresh namespace.

    What the lab tests grade as a learner's correct answer: `q1.check(solution_namespace("01"))`.
    """
    import contextlib

    import nbformat

    namespace: dict = {}
    for cell in nbformat.read(SOLUTIONS / f"{NAMES[number]}.ipynb", as_version=4).cells:
        if cell.cell_type != "code" or ".check(" in cell.source or ".hint(" in cell.source:
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        with contextlib.redirect_stdout(None):
            exec(compile(code, f"<{NAMES[number]}>", "exec", dont_inherit=True), namespace)  # noqa: S102 - our own notebook
    return namespace


_guard.install()  # last: snapshot this module as imported, and every course module imported after it
