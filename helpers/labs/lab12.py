"""Lab 12 — Stream progress and read a run's events (after `notebooks/12_streaming_and_stopping.ipynb`).

q1: `make_import_tool(load)`: a tool that imports a list of tables with `load(table)` (which returns
    the rows it loaded) and, right after each table, writes `{"call": <its tool call id>, "done": i,
    "total": n, "rows": rows}` to the custom stream, so that a UI can tell the progress of calls that
    run at once apart. A load that raises is let out (the call ends in an error); no tables, no
    progress.
q2: `summarize_run(graph, inputs)`: stream a run once, in several modes, and return a plain summary
    of every tool call the model asked for: `{call_id: {"name", "turn", "progress", "outcome"}}`.

How the checks hold:

- Every check draws its scenario at random (call ids, table names, row counts, which call fails,
  the order of the calls in a turn), but every scenario holds every hard case: calls of the same tool
  that run at once and whose progress interleaves, a call with nothing to do, a call that fails after
  some progress, a second model turn, and in q2 a call a limit answers without running it, updates
  that are None, lists (a tool returned a `Command`) or dicts without messages. Both checks run a
  `create_agent` agent (one task per call) and a `ToolNode` loop.
- q1 relates each progress event to the work as it happens: the check's `load` for table k of a
  call waits until the check's own stream has received the progress of table k - 1, so progress
  written late (all at the end, in a `finally`) is seen as late, and each event must carry the rows
  that table's load returned, so progress written before the work cannot be right.
- q2's tools record every run: a summary read from a run streamed once per mode is refused.
- Only plain types are accepted: `type(x) is dict`, `str`, `int`, `list`, checked before any
  comparison; what the learner's code returned is compared after copying it into builtins built here.
- Expected values are computed inside the checks, from the scenario drawn for that check; nothing
  public returns them.
"""

from __future__ import annotations

import random
import threading
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolCallLimitMiddleware, wrap_tool_call
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.config import get_stream_writer
from langgraph.types import Command

from helpers.graphs import tool_loop
from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    StillAStub,
    fail,
    record_failure,
    run_learner,
    section,
    shorten,
)
from helpers.models import ScriptedChatModel

STREAMING = "12_streaming_and_stopping"
COMMAND = "06_command_and_parent"
MODES = "1. What each stream mode shows of a tools step"
PROGRESS = "2. Progress from inside a tool"
BUDGET = "5. A tool-call budget: `ToolCallLimitMiddleware`"
TOOLS_MODE = "7. Deep dive: the `tools` stream mode, and an agent inside a tool"
CALL_ID = "2. The matching ToolMessage, and where the id comes from"

KEYS = ("call", "done", "total", "rows")
"""The keys of one progress event, in the order the lab writes them."""
FIELDS = ("name", "turn", "progress", "outcome")
"""The keys of one call's entry in q2's summary."""
OUTCOMES = ("finished", "error", "not run")
"""q2: what became of a call."""
LIMIT: float | None = None
"""Seconds one run of the learner's code may take before a hang is reported (None: labs.LIMIT)."""
WAIT = 1.5
"""q1: seconds the check's `load` waits for the previous table's progress before calling it late. A
correct tool's event arrives within milliseconds; waiting is paid once per check, by late progress."""
BATON = 2.0
"""q2: seconds one of the check's tools waits for its turn to write (the check interleaves them)."""
WORDS = ("orders", "users", "events", "invoices", "stock", "visits", "refunds", "reviews", "carts")


# == what the notebook uses =============================================================================
class TableLoader:
    """The course's `load(table)`: loads one table and returns how many rows it held (an int).

    `loaded` is a copy of the tables loaded so far; a table named in `broken` raises `LoadError`.
    """

    def __init__(self, broken: tuple[str, ...] = ()) -> None:
        self.broken = tuple(broken)
        self._loaded: list[str] = []
        self._lock = threading.Lock()

    @property
    def loaded(self) -> list[str]:
        with self._lock:
            return list(self._loaded)

    def __call__(self, table: str) -> int:
        if table in self.broken:
            raise LoadError(f"table {table!r} is locked")
        with self._lock:
            self._loaded.append(table)
        return 100 + sum(map(ord, str(table))) % 900


class LoadError(RuntimeError):
    """A table that could not be loaded."""


def batch_agent(tool: BaseTool, batches: list[list[str]]) -> Any:
    """A `create_agent` agent whose model asks, in one turn, for one call of `tool` per batch of
    tables (all at once), then answers "done". Stream it to see your tool's progress."""
    turn = [{"name": tool.name, "args": {"tables": list(tables)}} for tables in batches]
    return create_agent(ScriptedChatModel(script=[turn, "done"]), [tool])


def sample_run() -> tuple[Any, dict]:
    """A small run to try `summarize_run` on: (graph, inputs). Two imports at once, then a second turn."""
    graph = _q2_graph(_sample_scenario(), agent=True)[0]
    return graph, {"messages": [HumanMessage("Import the weekly batch.")]}


# == helpers shared by the checks =======================================================================
def _plain(value: Any, depth: int = 0) -> str:
    """`value` shown without calling any of its methods unless it is a builtin plain value."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None)):
        return shorten(repr(value), 60)
    if depth > 2:
        return "…"
    if kind is dict:
        return (
            "{"
            + ", ".join(f"{_plain(k, depth + 1)}: {_plain(v, depth + 1)}" for k, v in list(value.items())[:6])
            + "}"
        )
    if kind in (list, tuple):
        inner = ", ".join(_plain(v, depth + 1) for v in list(value)[:8])
        return f"[{inner}]" if kind is list else f"({inner})"
    return f"a {kind.__name__}"


def _ids(rng: random.Random, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        candidate = f"call_{rng.getrandbits(40):010x}"
        if candidate not in ids:
            ids.append(candidate)
    return ids


def _tables(rng: random.Random, count: int, taken: set[str]) -> tuple[str, ...]:
    names = []
    while len(names) < count:
        name = f"{rng.choice(WORDS)}_{rng.getrandbits(16):04x}"
        if name not in taken:
            taken.add(name)
            names.append(name)
    return tuple(names)


def _rows(rng: random.Random, count: int, used: set[int]) -> tuple[int, ...]:
    """`count` row counts, none drawn before in this scenario (so rows tell which table they are)."""
    rows: list[int] = []
    while len(rows) < count:
        value = rng.randint(100, 9999)
        if value not in used:
            used.add(value)
            rows.append(value)
    return tuple(rows)


class _Call:
    """One call the check's model asks for: its id, tables, the rows each load returns, the 1-based
    position of the table whose load raises (0: none), and its role in the scenario."""

    __slots__ = ("id", "tables", "rows", "fails_at", "role", "tool", "turn")

    def __init__(
        self, id: str, tables: tuple, rows: tuple, fails_at: int, role: str, tool: str = "", turn: int = 1
    ):
        self.id, self.tables, self.rows, self.fails_at = id, tables, rows, fails_at
        self.role, self.tool, self.turn = role, tool, turn

    @property
    def reported(self) -> int:
        """How many tables report progress: all, or those before the failing one."""
        return self.fails_at - 1 if self.fails_at else len(self.tables)


def _errors_as_messages():
    """The middleware both checks give `create_agent`: a tool's exception becomes an error answer."""

    @wrap_tool_call
    def errors_as_messages(request, handler):
        try:
            return handler(request)
        except Exception as error:  # noqa: BLE001 - the call's answer says what went wrong
            return ToolMessage(f"Error: {error!r}", tool_call_id=request.tool_call["id"], status="error")

    return errors_as_messages


def _run_case(cases: Cases, name: str, case: Any, recorded: Any, seen: dict) -> None:
    """One case over what a run recorded: ✔, or ✘ in full for the first few mistakes and in one line
    for a mistake already explained (`record_failure`), so a verdict fits the first screen."""
    try:
        case(recorded)
    except CheckFailed as error:
        record_failure(cases, name, error, seen)
    else:
        cases.ok(name)


# == q1: progress from a tool whose calls run at once ===================================================
def _q1_scenario(rng: random.Random) -> list[_Call]:
    """Four calls in one turn, in random order: two that import several tables, one with no tables,
    one whose load fails after at least one table."""
    ids, taken, used = _ids(rng, 4), set(), set()
    sizes = {"a long import": rng.randint(3, 4), "a short import": rng.randint(2, 3), "no tables": 0}
    calls = []
    for (role, size), call_id in zip(sizes.items(), ids, strict=False):
        tables = _tables(rng, size, taken)
        calls.append(_Call(call_id, tables, _rows(rng, size, used), 0, role))
    size = rng.randint(2, 3)
    tables = _tables(rng, size, taken)
    calls.append(_Call(ids[3], tables, _rows(rng, size, used), rng.randint(2, size), "a failing load"))
    rng.shuffle(calls)
    return calls


class _Watch:
    """What one streamed run of the learner's tool did, recorded as it happened (thread-safe).

    `load` is handed to the learner's tool. Before the first table of a call it waits until every
    call with tables has begun (so the calls overlap); before table k it waits until the check's
    stream has received that call's progress for table k - 1, and records a late one. Either wait is
    at most `WAIT`, paid once per check. `receive` is called by the check's own stream loop for
    every custom chunk.
    """

    def __init__(self, calls: list[_Call], patience: list[bool]) -> None:
        self.calls = calls
        self.where = {t: (c, k) for c in calls for k, t in enumerate(c.tables, 1)}
        self.cond = threading.Condition()
        self.got: set[tuple[str, int]] = set()
        self.chunks: list[Any] = []  # every custom chunk, in arrival order
        self.loads: list[tuple[str, int]] = []  # (call id, k) in the order the loads began
        self.late: list[tuple[str, int]] = []  # (call id, k): table k began before k - 1 was reported
        self.unknown: list[str] = []
        self.ends: dict[str, tuple[str, int, str]] = {}  # call id → (event, chunks seen by then, message)
        self.busy = {c.id for c in calls if c.tables}
        self.began: set[str] = set()
        self.patience = patience  # shared by a check's runs: one wait for late progress per check

    def load(self, table: str) -> int:
        if type(table) is not str or table not in self.where:
            with self.cond:
                self.unknown.append(_plain(table))
            raise LookupError(f"there is no table {_plain(table)}")
        call, k = self.where[table]
        with self.cond:
            if k == 1:  # every call with tables in flight at once before any loads: they overlap
                self.began.add(call.id)
                self.cond.notify_all()
                if self.patience[0] and not self.cond.wait_for(lambda: self.began >= self.busy, timeout=WAIT):
                    self.patience[0] = False  # the calls ran one after another: wait no more
            if k > 1 and (call.id, k - 1) not in self.got:
                if self.patience[0]:
                    self.cond.wait_for(lambda: (call.id, k - 1) in self.got, timeout=WAIT)
                if (call.id, k - 1) not in self.got:
                    self.late.append((call.id, k))
                    self.patience[0] = False
            self.loads.append((call.id, k))
        if k == call.fails_at:
            raise LoadError(f"table {table!r} is locked")
        return call.rows[k - 1]

    def receive(self, chunk: Any) -> None:
        with self.cond:
            self.chunks.append(chunk)
            if _event_problem(chunk) is None:
                self.got.add((chunk["call"], chunk["done"]))
            self.cond.notify_all()

    def end(self, event: dict) -> None:
        with self.cond:
            self.ends[event["tool_call_id"]] = (
                event["event"],
                len(self.chunks),
                str(event.get("message", "")),
            )


def _event_problem(chunk: Any) -> str | None:
    """Why `chunk` is not a progress event of the shape asked for, or None."""
    if type(chunk) is not dict:
        return f"a {type(chunk).__name__}, not a dict"
    if tuple(sorted(chunk)) != tuple(sorted(KEYS)) or any(type(k) is not str for k in chunk):
        return f"keys {sorted(map(_plain, chunk))}, not exactly {list(KEYS)}"
    if type(chunk["call"]) is not str:
        return f"'call' is a {type(chunk['call']).__name__}, not a str"
    for key in ("done", "total", "rows"):
        if type(chunk[key]) is not int:
            return f"{key!r} is a {type(chunk[key]).__name__}, not an int"
    return None


def _q1_graph(tool: BaseTool, calls: list[_Call], agent: bool) -> Any:
    turn = [{"name": tool.name, "args": {"tables": list(c.tables)}, "id": c.id} for c in calls]
    model = ScriptedChatModel(script=[turn, "done"])
    if agent:
        return create_agent(model, [tool], middleware=[_errors_as_messages()])
    return tool_loop(model.bind_tools([tool]), [tool], handle_tool_errors=True)


def _q1_stream(graph: Any, watch: _Watch) -> None:
    """The check's own consumer: every custom chunk to `watch.receive`, every call's end to `watch.end`."""
    for mode, chunk in graph.stream(
        {"messages": [HumanMessage("Import the tables.")]}, stream_mode=["custom", "tools"]
    ):
        if mode == "custom":
            watch.receive(chunk)
        elif chunk.get("event") in ("tool-finished", "tool-error"):
            watch.end(chunk)


def _mine(watch: _Watch, call: _Call) -> list[dict]:
    return [c for c in watch.chunks if _event_problem(c) is None and c["call"] == call.id]


def _expected(call: _Call) -> list[dict]:
    n = len(call.tables)
    return [
        {"call": call.id, "done": k, "total": n, "rows": call.rows[k - 1]}
        for k in range(1, call.reported + 1)
    ]


def _show_events(events: list[dict]) -> str:
    return shorten(
        "[" + ", ".join(f"done {e['done']}/{e['total']} rows {e['rows']}" for e in events) + "]", 200
    )


# -- q1's cases: each takes what one run recorded (`watch`) ---------------------------------------------
def case_events_are_plain_dicts(watch: _Watch) -> None:
    for chunk in watch.chunks:
        problem = _event_problem(chunk)
        if problem:
            raise fail(
                "a progress event is not the dict asked for",
                expected=f"every event a plain dict with exactly the keys {list(KEYS)}: 'call' a str, "
                "the rest ints",
                observed=f"{_plain(chunk)}: {problem}",
                why="a UI reads these keys from every chunk of the custom stream; write a plain dict",
                where=section(STREAMING, PROGRESS),
            )


def case_events_name_their_call(watch: _Watch) -> None:
    ids = {c.id for c in watch.calls}
    owner = {rows: c for c in watch.calls for rows in c.rows}  # the rows drawn are all different
    for chunk in watch.chunks:
        if _event_problem(chunk) is not None:
            continue
        other = owner.get(chunk["rows"])
        if chunk["call"] in ids and (other is None or other.id == chunk["call"]):
            continue
        known = chunk["call"] in ids
        raise fail(
            "progress events do not name the call that made them",
            expected=f"'call' to be the id of the tool call reporting, one of {sorted(ids)}"
            + (f": {other.id} loaded those {chunk['rows']} rows" if other else ""),
            observed=f"'call': {_plain(chunk['call'])}"
            + (f", for rows {other.role} loaded" if other and known else ""),
            why="calls of the same tool run at once and their events interleave: only the call's own id "
            "tells them apart — each call's own, not one kept where the calls share it. A tool receives it "
            "as an injected argument (`tool_call_id: Annotated[str, InjectedToolCallId]`, or "
            "`runtime.tool_call_id`)",
            where=section(COMMAND, CALL_ID),
        )


def case_one_event_per_table(watch: _Watch) -> None:
    for call in watch.calls:
        if call.fails_at or not call.tables:
            continue
        mine, wanted = _mine(watch, call), _expected(call)
        if mine != wanted:
            raise fail(
                f"the progress of {call.role} ({len(call.tables)} tables) is not one event per table",
                expected=f"{_show_events(wanted)} (done counted from 1, total the call's tables, rows what "
                "that table's load returned)",
                observed=_show_events(mine) if mine else "no event for this call",
                why="each event reports the table just loaded: `done` its position from 1, `total` the "
                "number of tables, `rows` what `load(table)` returned for it",
                where=section(STREAMING, PROGRESS),
            )


def case_each_event_as_it_happens(watch: _Watch) -> None:
    if watch.late:
        call_id, k = watch.late[0]
        raise fail(
            "progress is written late",
            expected=f"the event for table {k - 1} of call {call_id} to arrive before table {k} is loaded",
            observed=f"table {k} was loaded while table {k - 1}'s event had not arrived",
            why="write each event right after its table's load, inside the loop: events collected and "
            "written at the end (or in a `finally`) arrive when the work is over",
            where=section(STREAMING, PROGRESS),
        )
    for call in watch.calls:
        event, seen, _ = watch.ends.get(call.id, ("", 0, ""))
        after = [c for c in watch.chunks[seen:] if _event_problem(c) is None and c["call"] == call.id]
        if event and after:
            raise fail(
                "progress arrived after its call had ended",
                expected=f"every event of call {call.id} before its {event!r} event",
                observed=f"{len(after)} event(s) after it",
                why="a tool's events are written while it runs; none can follow its end",
                where=section(STREAMING, PROGRESS),
            )


def case_nothing_to_do(watch: _Watch) -> None:
    for call in watch.calls:
        if call.tables:
            continue
        mine = [c for c in watch.chunks if type(c) is dict and c.get("call") == call.id]
        event, _, message = watch.ends.get(call.id, ("", 0, ""))
        if mine:
            raise fail(
                "a call with no tables reported progress",
                expected="no event: one event per table loaded, and it loaded none",
                observed=_plain(mine[0]),
                where=section(STREAMING, PROGRESS),
            )
        if event != "tool-finished":
            raise fail(
                "a call with no tables did not finish",
                expected="the call to finish normally (its answer: nothing to import)",
                observed=f"{event or 'no end event'} {shorten(message, 120)}",
                why="an empty list is a batch with no work, not an error: `total` would be 0, so nothing "
                "divides by it",
                where=section(STREAMING, PROGRESS),
            )


def case_failing_load(watch: _Watch) -> None:
    for call in watch.calls:
        if not call.fails_at:
            continue
        mine, wanted = _mine(watch, call), _expected(call)
        if mine != wanted:
            raise fail(
                f"the call whose table {call.fails_at} fails reported the wrong progress",
                expected=f"{_show_events(wanted)}: the tables loaded before the failure",
                observed=_show_events(mine) if mine else "no event for this call",
                why="a table is reported once its load has returned; the failing one never returned",
                where=section(STREAMING, PROGRESS),
            )
        event, _, message = watch.ends.get(call.id, ("", 0, ""))
        if event != "tool-error":
            raise fail(
                "a failing load did not fail the call",
                expected="the load's error to leave the tool, so the call ends in an error",
                observed=f"the call ended with {event or 'no end event'}",
                why="an error caught inside the tool and returned as text reads as a success: the model and "
                "the stream are told the import worked. Let it out (the tools node answers it with an error)",
                where=section(STREAMING, PROGRESS),
            )


def case_other_calls_finish(watch: _Watch) -> None:
    for call in watch.calls:
        if call.fails_at or not call.tables:
            continue
        event, _, message = watch.ends.get(call.id, ("", 0, ""))
        if event != "tool-finished":
            raise fail(
                f"{call.role} did not finish",
                expected="the call to finish normally",
                observed=f"{event or 'no end event'}: {shorten(message, 160)}",
                why="the tools node answered it with an error: your tool raised (the message above says "
                "what)",
                where=section(STREAMING, PROGRESS),
            )
    if watch.unknown:
        raise fail(
            "the tool loaded a table it was not given",
            expected="`load(table)` for each table of the call's `tables`, in order",
            observed=f"load({watch.unknown[0]})",
            where=section(STREAMING, PROGRESS),
        )


Q1_CASES = (
    ("every event is a plain dict with the four keys", case_events_are_plain_dicts),
    ("each event names its own call (calls of the same tool run at once)", case_events_name_their_call),
    ("one event per table, counted from 1, with the rows that table loaded", case_one_event_per_table),
    ("each event arrives as its table is done, before the next load", case_each_event_as_it_happens),
    ("a call with no tables: no event, and it finishes", case_nothing_to_do),
    ("a failing load: the tables before it reported, then the call fails", case_failing_load),
    ("every other call finishes", case_other_calls_finish),
)


def _q1_tool(make_import_tool: Any, load: Any) -> BaseTool:
    tool = run_learner(make_import_tool, load, limit=LIMIT, name="make_import_tool")
    if not isinstance(tool, BaseTool):
        raise fail(
            "make_import_tool did not return a tool",
            key="q1",
            expected="a tool (`@tool def import_tables(tables: list[str], ...) -> str`) returned by "
            "make_import_tool",
            observed=_plain(tool),
            where=section(STREAMING, PROGRESS),
        )
    schema = tool.tool_call_schema.model_json_schema().get("properties", {})
    if set(schema) != {"tables"}:
        raise fail(
            "the tool's arguments are not what the model sends",
            key="q1",
            expected="the model sees one argument, `tables: list[str]` (the call id is injected, not sent)",
            observed=f"the model is asked for {sorted(schema)}",
            why="an argument the model must fill (a `call_id: str`) is one it cannot know: inject the id "
            "with `Annotated[str, InjectedToolCallId]` (or `runtime: ToolRuntime`), hidden from the model",
            where=section(COMMAND, CALL_ID),
        )
    return tool


def check_import_tool(make_import_tool: Any, *, seed: int | None = None) -> str:
    rng = random.Random(seed)
    cases, seen = Cases("q1"), {}
    patience = [True]
    for label, agent in (("create_agent (one task per call)", True), ("a ToolNode loop", False)):
        calls = _q1_scenario(rng)
        watch = _Watch(calls, patience)
        tool = _q1_tool(make_import_tool, watch.load)
        graph = _q1_graph(tool, calls, agent)
        run_learner(_q1_stream, graph, watch, limit=LIMIT, name=f"your tool in {label}")
        for name, case in Q1_CASES:
            _run_case(cases, f"{label}: {name}", case, watch, seen)
        if cases.failed:
            break  # the second graph would repeat the same mistakes
    return cases.result(
        "each call's progress streamed table by table as it was loaded, named by its call id — also for "
        "interleaved calls, a call with no tables and a failing load."
    )


q1 = Exercise(
    "12",
    "q1",
    ("make_import_tool",),
    check_import_tool,
    (
        "Lesson 12 §2: `get_stream_writer()` inside the tool writes to the custom stream. Which call is "
        "reporting? Lesson 06 §2: a tool can be given its own call id without the model sending it.",
        "`@tool def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) "
        "-> str:` "
        "then `write = get_stream_writer()` and, in the loop, `rows = load(table)` followed at once by "
        "`write({'call': tool_call_id, 'done': i, 'total': len(tables), 'rows': rows})`. No try/except "
        "around the load: its error must end the call.",
    ),
)


# == q2: read a run's events ============================================================================
def _sample_scenario() -> dict:
    calls = [
        _Call("call_a", ("orders", "users"), (120, 45), 0, "", "import_tables", 1),
        _Call("call_b", ("events",), (900,), 0, "", "import_tables", 1),
        _Call("call_c", (), (), 0, "", "notify", 2),
    ]
    return {
        "calls": calls,
        "baton": (),
        "import": "import_tables",
        "note": "notify",
        "mark": "mark_done",
        "blocked": "",
    }


def _q2_scenario(rng: random.Random, agent: bool) -> dict:
    """Turn 1: two imports whose progress interleaves, one with no tables, one failing after one
    table, a call with no progress. Turn 2: another import, and a note (blocked by the limit in the
    agent; a tool returning a `Command` in the ToolNode loop). Order within each turn at random."""
    importer = rng.choice(("import_tables", "load_tables", "ingest"))
    note = rng.choice(("notify", "send_note", "ping_team"))
    mark = rng.choice(("mark_done", "set_flag", "tag_run"))
    ids, taken = _ids(rng, 7), set()
    other = note if agent else mark

    def tables(n):
        names = _tables(rng, n, taken)
        return names, tuple(rng.randint(1, 9999) for _ in names)

    a, b = tables(rng.randint(3, 4)), tables(rng.randint(2, 3))
    f, c = tables(rng.randint(2, 3)), tables(rng.randint(1, 2))
    first = [
        _Call(ids[0], *a, 0, "a long import", importer, 1),
        _Call(ids[1], *b, 0, "a short import", importer, 1),
        _Call(ids[2], (), (), 0, "an import with no tables", importer, 1),
        _Call(ids[3], *f, 2, "an import whose second table fails", importer, 1),
        _Call(ids[4], (), (), 0, f"a `{other}` call (no progress)", other, 1),
    ]
    second = [
        _Call(ids[5], *c, 0, "the second turn's import", importer, 2),
        _Call(
            ids[6],
            (),
            (),
            0,
            f"the second `{note}` (over its limit of 1: never runs)"
            if agent
            else f"the second `{mark}` call",
            other,
            2,
        ),
    ]
    rng.shuffle(first)
    rng.shuffle(second)
    # the progress of turn 1's imports, interleaved: 1 of each, then 2 of each, ...
    reporting = [x for x in first if x.tool == importer and x.reported]
    baton = tuple((x.id, k) for k in range(1, 6) for x in reporting if k <= x.reported)
    return {
        "calls": first + second,
        "baton": baton,
        "import": importer,
        "note": note,
        "mark": mark,
        "blocked": ids[6] if agent else "",
    }


class _Ran:
    """q2: every time one of the check's tools started, by call id (thread-safe), and the baton that
    interleaves the imports' progress."""

    def __init__(self, baton: tuple) -> None:
        self.cond = threading.Condition()
        self.starts: dict[str, int] = {}
        self.baton = baton
        self.at = 0

    def start(self, call_id: str) -> None:
        with self.cond:
            self.starts[call_id] = self.starts.get(call_id, 0) + 1

    def my_turn(self, step: tuple[str, int]) -> None:
        if step not in self.baton:
            return
        index = self.baton.index(step)
        with self.cond:
            self.cond.wait_for(lambda: self.at >= index, timeout=BATON)

    def passed(self, step: tuple[str, int]) -> None:
        with self.cond:
            if step in self.baton and self.baton.index(step) == self.at:
                self.at += 1
            self.cond.notify_all()


def _q2_graph(scenario: dict, agent: bool) -> tuple[Any, _Ran]:
    calls = {c.id: c for c in scenario["calls"]}
    ran = _Ran(scenario["baton"])

    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        ran.start(tool_call_id)
        call = calls[tool_call_id]
        write = get_stream_writer()
        for k, _table in enumerate(tables, 1):
            if k == call.fails_at:
                raise LoadError(f"table {k} is locked")
            ran.my_turn((tool_call_id, k))
            write({"call": tool_call_id, "done": k, "total": len(tables), "rows": call.rows[k - 1]})
            ran.passed((tool_call_id, k))
        return f"imported {len(tables)} tables"

    def notify(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        ran.start(tool_call_id)
        return "sent"

    def mark(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        ran.start(tool_call_id)
        return Command(update={"messages": [ToolMessage("marked", tool_call_id=tool_call_id)]})

    tools = [
        StructuredTool.from_function(import_tables, name=scenario["import"], description="Import tables."),
        StructuredTool.from_function(notify, name=scenario["note"], description="Send a note."),
        StructuredTool.from_function(mark, name=scenario["mark"], description="Mark the run done."),
    ]

    def args(call: _Call) -> dict:
        if call.tool == scenario["import"]:
            return {"tables": list(call.tables)}
        return {"text": "batch imported"} if call.tool == scenario["note"] else {}

    turns: dict[int, list] = {}
    for call in scenario["calls"]:
        turns.setdefault(call.turn, []).append({"name": call.tool, "args": args(call), "id": call.id})
    model = ScriptedChatModel(script=[*turns.values(), "All imported."])
    if agent:
        limit = ToolCallLimitMiddleware(tool_name=scenario["note"], run_limit=1)
        return create_agent(model, tools, middleware=[_errors_as_messages(), limit]), ran
    return tool_loop(model.bind_tools(tools), tools, handle_tool_errors=True), ran


def _truth(scenario: dict) -> dict[str, tuple[str, int, list[int], str]]:
    """What q2's summary must hold for `scenario`, built here and never returned to the notebook."""
    truth = {}
    for call in scenario["calls"]:
        outcome = "not run" if call.id == scenario["blocked"] else "error" if call.fails_at else "finished"
        truth[call.id] = (call.tool, call.turn, list(range(1, call.reported + 1)), outcome)
    return truth


def _summary_problem(summary: Any) -> str | None:
    """Why `summary` is not the plain dict of plain entries asked for, or None."""
    if type(summary) is not dict:
        return f"a {type(summary).__name__}" + (
            " (convert it: `dict(...)`)" if isinstance(summary, dict) else ""
        )
    for key, entry in list(summary.items()):
        if type(key) is not str:
            return f"a key {_plain(key)} that is a {type(key).__name__}, not a str (the call id)"
        if type(entry) is not dict:
            return f"{key!r} → a {type(entry).__name__}, not a dict" + (
                " (convert it: `dict(...)`)" if isinstance(entry, dict) else ""
            )
        if sorted(map(_plain, entry)) != sorted(map(_plain, FIELDS)) or any(
            type(k) is not str for k in entry
        ):
            return f"{key!r} → keys {sorted(map(_plain, entry))}, not exactly {list(FIELDS)}"
        kinds = {"name": str, "turn": int, "progress": list, "outcome": str}
        for field, kind in kinds.items():
            if type(entry[field]) is not kind:
                return f"{key!r} → {field!r} is a {type(entry[field]).__name__}, not a {kind.__name__}"
        if any(type(x) is not int for x in entry["progress"]):
            return f"{key!r} → 'progress' holds {_plain(entry['progress'])}: the 'done' ints"
        if entry["outcome"] not in OUTCOMES:
            return f"{key!r} → 'outcome' {_plain(entry['outcome'])}, not one of {list(OUTCOMES)}"
    return None


def _copy(summary: dict) -> dict[str, tuple[str, int, list[int], str]]:
    """The learner's summary (already checked plain) copied into builtins built here."""
    return {
        str(k): (str(v["name"]), int(v["turn"]), [int(x) for x in v["progress"]], str(v["outcome"]))
        for k, v in summary.items()
    }


class _Seen:
    """One run of the learner's `summarize_run` on one graph: the scenario, what it returned (copied
    into builtins), and how often each of the graph's tools started."""

    __slots__ = ("scenario", "summary", "starts", "truth")

    def __init__(self, scenario: dict, summary: dict, starts: dict) -> None:
        self.scenario, self.summary, self.starts = scenario, summary, starts
        self.truth = _truth(scenario)

    def role(self, call_id: str) -> str:
        return next(c.role for c in self.scenario["calls"] if c.id == call_id)


# -- q2's cases: each takes one run (`seen`) ------------------------------------------------------------
def case_ran_once(seen: _Seen) -> None:
    runs = max(seen.starts.values(), default=0)
    if runs == 0:
        raise fail(
            "the graph never ran",
            expected="`summarize_run` to stream the graph it is given (once) and read its events",
            observed="none of the graph's tools started",
            where=section(STREAMING, PROGRESS),
        )
    if runs > 1:
        raise fail(
            f"the graph ran {runs} times",
            expected="one run, streamed once with every mode it needs (`stream_mode=[...]`)",
            observed=f"each tool call ran {runs} times: an import ran twice is two imports",
            why="every `graph.stream(...)` is a new run that calls every tool again. Ask for several modes "
            "at once: each chunk then comes as `(mode, chunk)`, in the order it happened",
            where=section(STREAMING, PROGRESS),
        )


def case_every_call_listed(seen: _Seen) -> None:
    missing = [k for k in seen.truth if k not in seen.summary]
    extra = [k for k in seen.summary if k not in seen.truth]
    if missing or extra:
        raise fail(
            "the summary does not list every tool call the model asked for",
            expected=f"one entry per call id: {sorted(seen.truth)}",
            observed=(f"missing {', '.join(f'{k} ({seen.role(k)})' for k in missing[:3])}" if missing else "")
            + (f"; keys that are no call id: {[_plain(k) for k in extra[:3]]}" if extra else ""),
            why="the calls are in the model's AIMessages (the 'updates' of its node): list each one there, "
            "keyed by its id — calls of the same tool, a call that reported nothing and one that never ran "
            "included",
            where=section(STREAMING, MODES),
        )


def case_names_and_turns(seen: _Seen) -> None:
    for call_id, (name, turn, _, _) in seen.truth.items():
        if call_id not in seen.summary:
            continue  # said by “every call listed”
        got = seen.summary[call_id]
        if (got[0], got[1]) != (name, turn):
            raise fail(
                f"{seen.role(call_id)} has the wrong name or turn",
                expected=f"name {name!r}, turn {turn} (the model turn that asked for it, counted from 1)",
                observed=f"name {got[0]!r}, turn {got[1]}",
                why="a turn is one AIMessage with tool calls; count those, not the updates: a create_agent "
                "run sends one tools update per call, and middleware nodes send updates of their own",
                where=section(STREAMING, MODES),
            )


def case_progress_per_call(seen: _Seen) -> None:
    for call_id, (_, _, progress, _) in seen.truth.items():
        if call_id not in seen.summary:
            continue  # said by “every call listed”
        got = seen.summary[call_id][2]
        if got != progress:
            raise fail(
                f"the progress of {seen.role(call_id)} is wrong",
                expected=f"{progress}: the 'done' of each custom event whose 'call' is {call_id}, in order",
                observed=str(got),
                why="the imports' events interleave (1 of one call, 1 of the other, 2, …): file each under "
                "its own 'call', not under the tool's name or the last call seen",
                where=section(STREAMING, PROGRESS),
            )


def case_outcomes(seen: _Seen) -> None:
    for call_id, (_, _, _, outcome) in seen.truth.items():
        if call_id not in seen.summary:
            continue  # said by “every call listed”
        got = seen.summary[call_id][3]
        if got == outcome:
            continue
        why = {
            "not run": "the limit answered this call with an error ToolMessage without running it: no "
            "'tool-started' event came. Read the 'tools' mode: started, then finished or error",
            "error": "the tool raised: the 'tools' mode says 'tool-error' for it (and its ToolMessage has "
            "status 'error')",
            "finished": "the call started and ended with 'tool-finished'",
        }[outcome]
        raise fail(
            f"the outcome of {seen.role(call_id)} is wrong",
            expected=repr(outcome),
            observed=repr(got),
            why=why,
            where=section(STREAMING, TOOLS_MODE),
        )


Q2_CASES = (
    ("the graph streamed once", case_ran_once),
    ("every call listed by its id", case_every_call_listed),
    ("each call's tool name and model turn", case_names_and_turns),
    (
        "each call's progress, interleaved calls apart, none for a call that reported none",
        case_progress_per_call,
    ),
    ("each call's outcome: finished, error, or not run", case_outcomes),
)


def _read(summarize_run: Any, label: str, agent: bool, rng: random.Random) -> _Seen:
    scenario = _q2_scenario(rng, agent)
    graph, ran = _q2_graph(scenario, agent)
    inputs = {"messages": [HumanMessage(f"Import batch {rng.getrandbits(24):06x}.")]}
    try:
        summary = run_learner(summarize_run, graph, inputs, limit=LIMIT, name="summarize_run")
    except StillAStub:
        raise
    except LearnerRaised as error:
        raise fail(
            "summarize_run raised",
            expected="a summary, whatever the updates look like",
            observed=str(error),
            why="an update can be None (a middleware node that changed nothing), a dict without "
            "'messages' (one that changed other keys), or a list (a tool returned a Command): read each "
            "kind. A custom chunk belongs to the call its 'call' names",
            where=section(STREAMING, MODES),
        ) from None
    problem = _summary_problem(summary)
    if problem:
        raise fail(
            "summarize_run did not return the plain summary asked for",
            expected="a dict: call id → {'name': str, 'turn': int, 'progress': list of int, 'outcome': "
            "'finished' | 'error' | 'not run'}",
            observed=problem,
            where=section(STREAMING, MODES),
        )
    return _Seen(scenario, _copy(summary), dict(ran.starts))


def check_summary(summarize_run: Any, *, seed: int | None = None) -> str:
    rng = random.Random(seed)
    cases, said = Cases("q2"), {}
    for label, agent in (
        ("create_agent with a tool-call limit", True),
        ("a ToolNode loop with a tool returning a Command", False),
    ):
        try:
            seen = _read(summarize_run, label, agent, rng)
        except CheckFailed as error:
            if type(error) is not CheckFailed:
                raise
            cases.failure(label, error)
            continue
        for name, case in Q2_CASES:
            _run_case(cases, f"{label}: {name}", case, seen, said)
    return cases.result(
        "every call summarised from one streamed run — name, turn, interleaved progress, and finished, "
        "error or not run — on create_agent and on a ToolNode loop."
    )


q2 = Exercise(
    "12",
    "q2",
    ("summarize_run",),
    check_summary,
    (
        "One `graph.stream(inputs, stream_mode=['updates', 'custom', 'tools'])`: each chunk is "
        "`(mode, chunk)`. The calls come from the model's AIMessages in 'updates', the progress from "
        "'custom', and whether a call started, finished or failed from 'tools' (lesson 12 §7).",
        "Start every call as 'not run' when its AIMessage arrives (turn += 1 per AIMessage with tool "
        "calls; an update may be None or a list: lesson 12 §1); append `chunk['done']` to "
        "`calls[chunk['call']]['progress']`; on 'tool-finished' / 'tool-error' set 'finished' / 'error'.",
    ),
)

__all__ = ["LoadError", "TableLoader", "batch_agent", "q1", "q2", "sample_run"]
