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
  some progress, a second model turn; in q2 also an import that fails before its first table, a tool
  that raises, an import that reports a retried table twice, a call a limit answers without running
  it, updates that are None, lists (a tool returned a `Command`) or dicts without messages. Both
  checks run a `create_agent` agent (one task per call) and a `ToolNode` loop.
- q1 relates each progress event to the work as it happens: the check's `load` writes a mark of its
  own to the same custom stream as each load begins, so the one ordered stream shows whether the
  event of table k - 1 came before table k was loaded (progress written late, all at the end or in
  a `finally`, comes after), whether each table was loaded at all (an event for a table never
  loaded reports work that did not happen), and each event must carry the rows that table's load
  returned. The check's own stream loop keeps what it received; nothing the tool is handed can
  add to it.
- What the learner's code is handed holds no state of the check's: `load` and the tools of q2's
  graphs are plain functions holding an opaque token; the scenario and the record of what ran live
  in a private registry (`_put`/`_get`), and are dropped when the check ends.
- q2's tools record every run: a summary read from a run streamed once per mode is refused. Which
  calls failed, failed before any progress, or never ran cannot be told from the messages alone
  (an error ToolMessage's text does not say it): only the "tools" mode says it.
- Only plain types are accepted: `type(x) is dict`, `str`, `int`, `list`, checked on every key and
  value before any other read (no `==`, hash, sort or class name of a learner's object is computed
  on the check's own thread); what the learner's code returned is compared after copying it into
  builtins built here. Everything else read from a learner's object (a tool's schema, its name when
  a graph is built) is read through `run_learner`.
- Expected values are computed inside the checks, from the scenario drawn for that check; nothing
  public returns them.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import threading
import weakref
from pathlib import Path
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ToolCallLimitMiddleware
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
    rng,
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
"""q1: seconds the check's `load` waits, before a call's first table, for the other calls to begin
(so they run at once), and, for a load made outside the tool's run (no stream to mark), for the
previous table's event. A correct tool pays nothing; a wait is paid once per check."""
BATON = 2.0
"""q2: seconds one of the check's tools waits for its turn to write (the check interleaves them)."""
WORDS = ("orders", "users", "events", "invoices", "stock", "visits", "refunds", "reviews", "carts")
_HERE = str(Path(__file__).resolve())
"""This file: an exception raised in it, while the learner's code ran the check's graph, is the
course's own fault, said as such."""


# == the registry: what a check hands the learner holds a token, never the check's state ===============
def _registry() -> tuple[Any, Any, Any]:
    """`put(state) -> token`, `get(token) -> state`, `drop(token)`, over one private dict.

    A check's `load` and the tools of its graphs hold only the token: the scenario they act out and
    the record of what they did are looked up here while the check runs, and dropped when it ends."""
    live: dict[str, Any] = {}
    lock = threading.Lock()

    def put(state: Any) -> str:
        token = secrets.token_hex(12)
        with lock:
            live[token] = state
        return token

    def get(token: str) -> Any:
        with lock:
            state = live.get(token)
        if state is None:
            raise RuntimeError("this belongs to a check that has ended: run the check again")
        return state

    def drop(token: str) -> None:
        with lock:
            live.pop(token, None)

    return put, get, drop


_put, _get, _drop = _registry()


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
    scenario = _sample_scenario()
    token = _put(_Q2State(scenario))
    graph = _q2_graph(scenario, True, token)
    weakref.finalize(graph, _drop, token)
    return graph, {"messages": [HumanMessage("Import the weekly batch.")]}


# == helpers shared by the checks: reading a learner's object without running its code ==================
def _name(kind: type) -> str:
    """A class's own name, read from the class itself (a metaclass's `__name__` is never called)."""
    return type.__dict__["__name__"].__get__(kind)


def _inherits(value: Any, base: type) -> bool:
    """`isinstance(value, base)` without calling `value.__class__` or a metaclass's hooks."""
    return any(kind is base for kind in type.__dict__["__mro__"].__get__(type(value)))


def _a(kind: type) -> str:
    """'a dict', 'an int': a class's own name with its article."""
    name = _name(kind)
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _plain(value: Any, depth: int = 0) -> str:
    """`value` shown without calling any of its methods unless it is a builtin plain value."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None)):
        return shorten(repr(value), 60)
    if depth > 2:
        return "…"
    if kind is dict:
        items = list(dict.items(value))[:6]
        return "{" + ", ".join(f"{_plain(k, depth + 1)}: {_plain(v, depth + 1)}" for k, v in items) + "}"
    if kind in (list, tuple):
        inner = ", ".join(_plain(v, depth + 1) for v in list(kind.__iter__(value))[:8])
        return f"[{inner}]" if kind is list else f"({inner})"
    return _a(kind)


def _ids(draw: random.Random, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        candidate = f"call_{draw.getrandbits(40):010x}"
        if candidate not in ids:
            ids.append(candidate)
    return ids


def _tables(draw: random.Random, count: int, taken: set[str]) -> tuple[str, ...]:
    names = []
    while len(names) < count:
        name = f"{draw.choice(WORDS)}_{draw.getrandbits(16):04x}"
        if name not in taken:
            taken.add(name)
            names.append(name)
    return tuple(names)


def _rows(draw: random.Random, count: int, used: set[int]) -> tuple[int, ...]:
    """`count` row counts, none drawn before in this scenario (so rows tell which table they are)."""
    rows: list[int] = []
    while len(rows) < count:
        value = draw.randint(100, 9999)
        if value not in used:
            used.add(value)
            rows.append(value)
    return tuple(rows)


class _Call:
    """One call the check's model asks for: its id, tables, the rows each load returns, the 1-based
    position of the table whose load raises (0: none), its role in the scenario, and (q2) the `done`
    of each progress event its tool writes, in order."""

    __slots__ = ("id", "tables", "rows", "fails_at", "role", "tool", "turn", "dones", "args")

    def __init__(
        self,
        id: str,
        tables: tuple,
        rows: tuple,
        fails_at: int,
        role: str,
        tool: str = "",
        turn: int = 1,
        dones: tuple[int, ...] | None = None,
    ):
        self.id, self.tables, self.rows, self.fails_at = id, tables, rows, fails_at
        self.role, self.tool, self.turn = role, tool, turn
        self.dones = tuple(range(1, self.reported + 1)) if dones is None else dones
        self.args: dict = {"tables": list(tables)}

    @property
    def reported(self) -> int:
        """How many tables report progress: all, or those before the failing one."""
        return self.fails_at - 1 if self.fails_at else len(self.tables)


class _ErrorsAsMessages(AgentMiddleware):
    """The middleware both checks give `create_agent`: a tool's exception becomes an error answer
    (sync and async: the learner may stream with `stream` or `astream`). Its text names the
    exception, not "Error": whether a call ran is for the "tools" mode to say."""

    @staticmethod
    def _answer(request: Any, error: Exception) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(
            f"{type(error).__name__}: {error}", tool_call_id=call["id"], name=call["name"], status="error"
        )

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except Exception as error:  # noqa: BLE001 - the call's answer says what went wrong
            return self._answer(request, error)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return await handler(request)
        except Exception as error:  # noqa: BLE001 - the call's answer says what went wrong
            return self._answer(request, error)


def _error_text(error: Exception) -> str:
    """What a `ToolNode` loop of the checks answers a tool's exception with (as the middleware)."""
    return f"{type(error).__name__}: {error}"


def _run_case(cases: Cases, name: str, case: Any, recorded: Any, seen: dict) -> None:
    """One case over what a run recorded: ✔, or ✘ in full for the first few mistakes and in one line
    for a mistake already explained (`record_failure`), so a verdict fits the first screen."""
    try:
        case(recorded)
    except CheckFailed as error:
        record_failure(cases, name, error, seen)
    else:
        cases.ok(name)


def _course_fault(error: BaseException) -> bool:
    """True when an exception the learner's code led to came from the check's own graph (its tools,
    its middleware) rather than from the learner's code or their use of a library."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    if frames and frames[-1] == _HERE:
        return True
    args = error.args if type(error) is NotImplementedError else ()
    text = args[0] if type(args) is tuple and args and type(args[0]) is str else ""
    return "implementation of" in text and "is not available" in text  # a middleware hook missing


# == q1: progress from a tool whose calls run at once ===================================================
def _q1_scenario(draw: random.Random) -> list[_Call]:
    """Four calls in one turn, in random order: two that import several tables, one with no tables,
    one whose load fails after at least one table."""
    ids, taken, used = _ids(draw, 4), set(), set()
    sizes = {"a long import": draw.randint(3, 4), "a short import": draw.randint(2, 3), "no tables": 0}
    calls = []
    for (role, size), call_id in zip(sizes.items(), ids, strict=False):
        tables = _tables(draw, size, taken)
        calls.append(_Call(call_id, tables, _rows(draw, size, used), 0, role))
    size = draw.randint(2, 3)
    tables = _tables(draw, size, taken)
    calls.append(_Call(ids[3], tables, _rows(draw, size, used), draw.randint(2, size), "a failing load"))
    draw.shuffle(calls)
    return calls


class _Mark:
    """What the check's `load` writes to the custom stream as a load begins. In the one ordered
    stream it shows whether the previous table's event came first; the check's stream loop takes
    it out before reading the tool's events."""

    __slots__ = ("token", "call", "k")

    def __init__(self, token: str, call: str, k: int) -> None:
        self.token, self.call, self.k = token, call, k


class _Loads:
    """The state of one run's `load` (thread-safe), kept in the registry, never handed out.

    Before a call's first table, `load` waits until every call with tables has begun, so the calls
    overlap (not on an event loop's thread: that would block the loop). A load made where there is no
    stream to mark (a thread of the tool's own) waits instead for the previous table's event, as the
    check's stream loop reports it (`got`), and records a late one. Either wait is at most `WAIT`,
    paid once per check (`patience`: the overlap's, the events', shared by a check's runs)."""

    __slots__ = ("calls", "where", "cond", "began", "busy", "got", "late", "unknown", "unmarked", "patience")

    def __init__(self, calls: list[_Call], patience: list[bool]) -> None:
        self.calls = calls
        self.where = {t: (c, k) for c in calls for k, t in enumerate(c.tables, 1)}
        self.cond = threading.Condition()
        self.began: set[str] = set()
        self.busy = {c.id for c in calls if c.tables}
        self.got: set[tuple[str, int]] = set()
        self.late: list[tuple[str, int]] = []
        self.unknown: list[str] = []
        self.unmarked: list[tuple[str, int]] = []
        self.patience = patience


def _on_a_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _make_load(token: str) -> Any:
    """The `load(table)` the check hands `make_import_tool`: a plain function holding a token."""

    def load(table: str) -> int:
        """Load one table and return how many rows it held."""
        return _q1_load(token, table)

    return load


def _q1_load(token: str, table: Any) -> int:
    state = _get(token)
    if type(table) is not str or table not in state.where:
        with state.cond:
            state.unknown.append(_plain(table))
        raise LookupError(f"there is no table {_plain(table)}")
    call, k = state.where[table]
    try:
        write = get_stream_writer()
    except Exception:  # noqa: BLE001 - called outside the tool's run: nothing to mark
        write = None
    on_a_loop = _on_a_loop()
    with state.cond:
        if k == 1:  # every call with tables in flight at once before any loads: they overlap
            state.began.add(call.id)
            state.cond.notify_all()
            if state.patience[0] and not on_a_loop:
                if not state.cond.wait_for(lambda: state.began >= state.busy, timeout=WAIT):
                    state.patience[0] = False  # the calls ran one after another: wait no more
        if write is None:
            state.unmarked.append((call.id, k))
            if k > 1 and (call.id, k - 1) not in state.got:
                if state.patience[1] and not on_a_loop:
                    state.cond.wait_for(lambda: (call.id, k - 1) in state.got, timeout=WAIT)
                if (call.id, k - 1) not in state.got:
                    state.late.append((call.id, k))
                    state.patience[1] = False  # late once is enough: wait no more
    if write is not None:
        write(_Mark(token, call.id, k))
    if k == call.fails_at:
        raise LoadError(f"table {table!r} is locked")
    return call.rows[k - 1]


def _event_problem(chunk: Any) -> str | None:
    """Why `chunk` is not a progress event of the shape asked for, or None. Reads nothing of it but
    its exact types until every key is a plain str (so no learner `__eq__`, `__hash__`, `__lt__`)."""
    if type(chunk) is not dict:
        return f"{_a(type(chunk))}, not a dict"
    keys = list(dict.keys(chunk))
    if any(type(k) is not str for k in keys):
        return f"keys {[_plain(k) for k in keys][:6]}, not exactly {list(KEYS)} (each a str)"
    if sorted(keys) != sorted(KEYS):
        return f"keys {sorted(keys)}, not exactly {list(KEYS)}"
    if type(chunk["call"]) is not str:
        return f"'call' is {_a(type(chunk['call']))}, not a str"
    for key in ("done", "total", "rows"):
        if type(chunk[key]) is not int:
            return f"{key!r} is {_a(type(chunk[key]))}, not an int"
    return None


def _async_only(tool: Any) -> bool:
    """A tool with a coroutine and no sync function: the check streams it with `astream`."""
    return getattr(tool, "func", None) is None and getattr(tool, "coroutine", None) is not None


def _q1_graph(tool: BaseTool, calls: list[_Call], agent: bool) -> Any:
    turn = [{"name": tool.name, "args": {"tables": list(c.tables)}, "id": c.id} for c in calls]
    model = ScriptedChatModel(script=[turn, "done"])
    if agent:
        return create_agent(model, [tool], middleware=[_ErrorsAsMessages()])
    return tool_loop(model.bind_tools([tool]), [tool], handle_tool_errors=_error_text)


def _q1_run(tool: BaseTool, calls: list[_Call], agent: bool, token: str) -> Any:
    """The check's own stream of the learner's tool, run through `run_learner` (building the graph
    reads the tool). Returns what it received, in order: ("load", call id, k) for the check's marks,
    ("event", chunk) for anything else on the custom stream, ("end", call id, event, status,
    message) when a call ends. An async-only tool is streamed with `astream`."""
    graph = _q1_graph(tool, calls, agent)
    state = _get(token)
    log: list[tuple] = []

    def take(mode: str, chunk: Any) -> None:
        if mode == "custom":
            if type(chunk) is _Mark and chunk.token is token:
                log.append(("load", chunk.call, chunk.k))
                return
            log.append(("event", chunk))
            if _event_problem(chunk) is None:
                with state.cond:
                    state.got.add((chunk["call"], chunk["done"]))
                    state.cond.notify_all()
        elif type(chunk) is dict and chunk.get("event") in ("tool-finished", "tool-error"):
            output = chunk.get("output")
            status = output.status if type(output) is ToolMessage else ""
            log.append(
                (
                    "end",
                    str(chunk["tool_call_id"]),
                    chunk["event"],
                    str(status),
                    str(chunk.get("message", "")),
                )
            )

    inputs = {"messages": [HumanMessage("Import the tables.")]}
    if _async_only(tool):

        async def run() -> list[tuple]:
            async for mode, chunk in graph.astream(inputs, stream_mode=["custom", "tools"]):
                take(mode, chunk)
            return log

        return run()
    for mode, chunk in graph.stream(inputs, stream_mode=["custom", "tools"]):
        take(mode, chunk)
    return log


class _Run:
    """What one streamed run of the learner's tool did, in the order the check's stream received it
    (its `log`), and what `load` recorded (unknown tables, loads without a mark, late ones)."""

    __slots__ = ("calls", "log", "late", "unknown", "unmarked")

    def __init__(self, calls: list[_Call], log: Any, state: _Loads) -> None:
        self.calls = calls
        self.log = list(log) if type(log) is list else []
        with state.cond:
            self.late, self.unknown = list(state.late), list(state.unknown)
            self.unmarked = list(state.unmarked)

    def chunks(self) -> list[Any]:
        """Every chunk the tool wrote, in order."""
        return [entry[1] for entry in self.log if entry[0] == "event"]

    def events(self, call_id: str) -> list[tuple[int, dict]]:
        """(position in the log, event) of every well-formed event naming `call_id`."""
        return [
            (i, e[1])
            for i, e in enumerate(self.log)
            if e[0] == "event" and _event_problem(e[1]) is None and e[1]["call"] == call_id
        ]

    def loads(self, call_id: str) -> list[int]:
        """The tables (1-based) `load` began for `call_id`, in order."""
        marked = [e[2] for e in self.log if e[0] == "load" and e[1] == call_id]
        return marked + [k for c, k in self.unmarked if c == call_id]

    def mark_at(self, call_id: str, k: int) -> int | None:
        return next((i for i, e in enumerate(self.log) if e[0] == "load" and e[1:] == (call_id, k)), None)

    def end(self, call_id: str) -> tuple[str, int, str, str]:
        """(event, position in the log, the answer's status, the error message) of the call's end."""
        for i, e in enumerate(self.log):
            if e[0] == "end" and e[1] == call_id:
                return e[2], i, e[3], e[4]
        return "", len(self.log), "", ""


def _mine(run: _Run, call: _Call) -> list[dict]:
    return [event for _, event in run.events(call.id)]


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


def _show_loads(loads: list[int]) -> str:
    return ", ".join(map(str, loads)) if loads else "none"


# -- q1's cases: each takes what one run recorded (`run`) -----------------------------------------------
def case_events_are_plain_dicts(run: _Run) -> None:
    for chunk in run.chunks():
        problem = _event_problem(chunk)
        if problem:
            raise fail(
                "a progress event is not the dict asked for",
                expected=f"every event a plain dict with exactly the keys {list(KEYS)}: 'call' a str, "
                "the rest ints",
                observed=f"{_plain(chunk)}: {problem}" if type(chunk) is dict else problem,
                why="a UI reads these keys from every chunk of the custom stream; write a plain dict",
                where=section(STREAMING, PROGRESS),
            )


def case_events_name_their_call(run: _Run) -> None:
    ids = {c.id for c in run.calls}
    owner = {rows: c for c in run.calls for rows in c.rows}  # the rows drawn are all different
    for chunk in run.chunks():
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


def case_one_event_per_table(run: _Run) -> None:
    for call in run.calls:
        if call.fails_at or not call.tables:
            continue
        mine, wanted = _mine(run, call), _expected(call)
        if mine != wanted:
            raise fail(
                f"the progress of {call.role} ({len(call.tables)} tables) is not one event per table",
                expected=f"{_show_events(wanted)} (done counted from 1, total the call's tables, rows what "
                "that table's load returned)",
                observed=_show_events(mine)
                if mine
                else "no event for this call reached the stream while it ran",
                why="each event reports the table just loaded: `done` its position from 1, `total` the "
                "number of tables, `rows` what `load(table)` returned for it",
                where=section(STREAMING, PROGRESS),
            )


def case_loads_each_table(run: _Run) -> None:
    if run.unknown:
        raise fail(
            "the tool loaded a table it was not given",
            expected="`load(table)` for each table of the call's `tables`, in order",
            observed=f"load({run.unknown[0]})",
            where=section(STREAMING, PROGRESS),
        )
    for call in run.calls:
        loads = run.loads(call.id)
        wanted = list(range(1, (call.fails_at or len(call.tables)) + 1))
        if call.fails_at and loads[: len(wanted)] == wanted:
            continue  # going on after the failing table: said by the failing load's case
        if loads != wanted:
            raise fail(
                f"the tool did not load each table of {call.role} once, in order",
                expected=f"`load(table)` for tables {_show_loads(wanted)} of its {len(call.tables)}, in "
                "order, each once",
                observed=f"loads of tables {_show_loads(loads)}",
                why="each event reports a table the tool loaded, with the rows that load returned: an "
                "event for a table never loaded (or loaded twice) reports work that did not happen",
                where=section(STREAMING, PROGRESS),
            )


def case_each_event_as_it_happens(run: _Run) -> None:
    for call in run.calls:
        events = run.events(call.id)
        for k in range(2, (call.fails_at or len(call.tables)) + 1):
            at = run.mark_at(call.id, k)
            before = [i for i, e in events if e["done"] == k - 1]
            if at is not None and before and before[0] > at:
                raise fail(
                    "progress is written late",
                    expected=f"the event for table {k - 1} of call {call.id} to be written before table {k} "
                    "is loaded",
                    observed=f"table {k} was loaded first; table {k - 1}'s event came after it",
                    why="write each event right after its table's load, inside the loop: events collected "
                    "and written at the end (or in a `finally`) arrive when the work is over",
                    where=section(STREAMING, PROGRESS),
                )
    if run.late:
        call_id, k = run.late[0]
        raise fail(
            "progress is written late",
            expected=f"the event for table {k - 1} of call {call_id} to arrive before table {k} is loaded",
            observed=f"table {k} was loaded while table {k - 1}'s event had not arrived",
            why="write each event right after its table's load, inside the loop: events collected and "
            "written at the end (or in a `finally`) arrive when the work is over",
            where=section(STREAMING, PROGRESS),
        )
    for call in run.calls:
        event, at, _, _ = run.end(call.id)
        after = [i for i, _ in run.events(call.id) if i > at]
        if event and after:
            raise fail(
                "progress arrived after its call had ended",
                expected=f"every event of call {call.id} before its {event!r} event",
                observed=f"{len(after)} event(s) after it",
                why="a tool's events are written while it runs; none can follow its end",
                where=section(STREAMING, PROGRESS),
            )


def case_nothing_to_do(run: _Run) -> None:
    for call in run.calls:
        if call.tables:
            continue
        mine = _mine(run, call)
        event, _, _, message = run.end(call.id)
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


def case_failing_load(run: _Run) -> None:
    for call in run.calls:
        if not call.fails_at:
            continue
        event, _, status, _ = run.end(call.id)
        beyond = [k for k in run.loads(call.id) if k > call.fails_at]
        if event != "tool-error":
            if event == "tool-finished" and status == "error":
                observed = "the tool returned an error ToolMessage: the call ended with tool-finished"
                why = (
                    "the model is told the import failed, but the call itself finished: the stream's "
                    "'tools' mode (and any UI following it) sees a success, and the tools node never saw an "
                    "error. Let the load's error leave the tool: the tools node answers it for you"
                )
            elif beyond:
                observed = (
                    f"the call ended with {event or 'no end event'}: after table {call.fails_at} failed the "
                    f"tool went on to load table {beyond[0]}"
                )
                why = (
                    "a table skipped is an import that did not happen, reported as a success: the model "
                    "and the stream are told the import worked. Let the error out (no try/except around "
                    "the load): the tools node answers it with an error"
                )
            else:
                observed = f"the call ended with {event or 'no end event'}"
                why = (
                    "an error caught inside the tool and returned as text reads as a success: the model "
                    "and the stream are told the import worked. Let it out (the tools node answers it "
                    "with an error)"
                )
            raise fail(
                "a failing load did not fail the call",
                expected="the load's error to leave the tool, so the call ends in an error (tool-error)",
                observed=observed,
                why=why,
                where=section(STREAMING, PROGRESS),
            )
        mine, wanted = _mine(run, call), _expected(call)
        if mine != wanted:
            raise fail(
                f"the call whose table {call.fails_at} fails reported the wrong progress",
                expected=f"{_show_events(wanted)}: the tables loaded before the failure, and no event for "
                f"table {call.fails_at}",
                observed=_show_events(mine) if mine else "no event for this call",
                why="a table is reported once its load has returned; the failing one never returned",
                where=section(STREAMING, PROGRESS),
            )


def case_other_calls_finish(run: _Run) -> None:
    for call in run.calls:
        if call.fails_at or not call.tables:
            continue
        event, _, _, message = run.end(call.id)
        if event != "tool-finished":
            raise fail(
                f"{call.role} did not finish",
                expected="the call to finish normally",
                observed=f"{event or 'no end event'}: {shorten(message, 160)}",
                why="the tools node answered it with an error: your tool raised (the message above says "
                "what)",
                where=section(STREAMING, PROGRESS),
            )


Q1_CASES = (
    ("every event is a plain dict with the four keys", case_events_are_plain_dicts),
    ("each event names its own call (calls of the same tool run at once)", case_events_name_their_call),
    ("one event per table, counted from 1, with the rows that table loaded", case_one_event_per_table),
    ("each table loaded once, in order", case_loads_each_table),
    ("each event arrives as its table is done, before the next load", case_each_event_as_it_happens),
    ("a call with no tables: no event, and it finishes", case_nothing_to_do),
    ("a failing load: the call fails, after the tables before it were reported", case_failing_load),
    ("every other call finishes", case_other_calls_finish),
)


def _model_args(tool: BaseTool) -> tuple[str, ...]:
    """The arguments the model is asked for (read through `run_learner`: the schema is the tool's)."""
    schema = tool.tool_call_schema.model_json_schema().get("properties", {})
    return tuple(str(name) for name in schema)


def _q1_tool(make_import_tool: Any, load: Any) -> BaseTool:
    tool = run_learner(make_import_tool, load, limit=LIMIT, name="make_import_tool")
    if not _inherits(tool, BaseTool):
        raise fail(
            "make_import_tool did not return a tool",
            key="q1",
            expected="a tool (`@tool def import_tables(tables: list[str], ...) -> str`) returned by "
            "make_import_tool",
            observed=_plain(tool),
            where=section(STREAMING, PROGRESS),
        )
    names = run_learner(_model_args, tool, limit=LIMIT, name="your tool's arguments (`tool_call_schema`)")
    names = sorted(names) if type(names) is tuple and all(type(n) is str for n in names) else ["?"]
    if names != ["tables"]:
        raise fail(
            "the tool's arguments are not what the model sends",
            key="q1",
            expected="the model sees one argument, `tables: list[str]` (the call id is injected, not sent)",
            observed=f"the model is asked for {names}",
            why="an argument the model must fill (a `call_id: str`) is one it cannot know: inject the id "
            "with `Annotated[str, InjectedToolCallId]` (or `runtime: ToolRuntime`), hidden from the model",
            where=section(COMMAND, CALL_ID),
        )
    return tool


def check_import_tool(make_import_tool: Any, *, seed: int | None = None) -> str:
    draw = rng(seed)
    cases, seen = Cases("q1"), {}
    patience = [True, True]
    for label, agent in (("create_agent (one task per call)", True), ("a ToolNode loop", False)):
        calls = _q1_scenario(draw)
        state = _Loads(calls, patience)
        token = _put(state)
        try:
            tool = _q1_tool(make_import_tool, _make_load(token))
            log = run_learner(_q1_run, tool, calls, agent, token, limit=LIMIT, name=f"your tool in {label}")
            run = _Run(calls, log, state)
        finally:
            _drop(token)
        for name, case in Q1_CASES:
            _run_case(cases, f"{label}: {name}", case, run, seen)
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
    calls[2].args = {"text": "batch imported"}
    return {
        "calls": calls,
        "baton": (),
        "import": "import_tables",
        "note": "notify",
        "mark": "mark_done",
        "check": "check_rows",
        "raises": (),
        "blocked": "",
    }


def _q2_scenario(draw: random.Random, agent: bool) -> dict:
    """Turn 1: two imports whose progress interleaves (one of them reports a retried table twice), one
    with no tables, one failing after one table, one failing before its first table, a call of a tool
    that raises, a call with no progress. Turn 2: another import, and a note (blocked by the limit in
    the agent; a tool returning a `Command` in the ToolNode loop). Order within each turn at random."""
    importer = draw.choice(("import_tables", "load_tables", "ingest"))
    note = draw.choice(("notify", "send_note", "ping_team"))
    mark = draw.choice(("mark_done", "set_flag", "tag_run"))
    check = draw.choice(("check_rows", "audit_rows", "verify_batch"))
    ids, taken = _ids(draw, 9), set()
    other = note if agent else mark

    def tables(n):
        names = _tables(draw, n, taken)
        return names, tuple(draw.randint(1, 9999) for _ in names)

    a, b = tables(draw.randint(3, 4)), tables(draw.randint(2, 3))
    f, g, c = tables(draw.randint(2, 3)), tables(draw.randint(1, 2)), tables(draw.randint(1, 2))
    again = draw.randint(1, len(a[0]) - 1)  # the table the long import retries and reports twice
    retried = tuple(range(1, again + 1)) + tuple(range(again, len(a[0]) + 1))
    first = [
        _Call(ids[0], *a, 0, f"the import that retried its table {again}", importer, 1, retried),
        _Call(ids[1], *b, 0, "a short import", importer, 1),
        _Call(ids[2], (), (), 0, "an import with no tables", importer, 1),
        _Call(ids[3], *f, 2, "an import whose second table fails", importer, 1),
        _Call(ids[4], *g, 1, "an import whose first table fails (no progress)", importer, 1),
        _Call(ids[5], (), (), 0, f"a call of `{other}` (no progress)", other, 1),
        _Call(ids[6], (), (), 0, f"a call of `{check}` (the tool raises)", check, 1),
    ]
    second = [
        _Call(ids[7], *c, 0, "the second turn's import", importer, 2),
        _Call(
            ids[8],
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
    for call in first + second:
        if call.tool == note:
            call.args = {"text": "batch imported"}
        elif call.tool == mark:
            call.args = {}
        elif call.tool == check:
            call.args = {"table": draw.choice(WORDS)}
    draw.shuffle(first)
    draw.shuffle(second)
    # the progress of turn 1's imports, interleaved: 1st event of each, then 2nd of each, ...
    reporting = [x for x in first if x.tool == importer and x.dones]
    baton = tuple((x.id, j) for j in range(1, 7) for x in reporting if j <= len(x.dones))
    return {
        "calls": first + second,
        "baton": baton,
        "import": importer,
        "note": note,
        "mark": mark,
        "check": check,
        "raises": (ids[6],),
        "blocked": ids[8] if agent else "",
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

    def counts(self) -> dict[str, int]:
        with self.cond:
            return dict(self.starts)

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


class _Q2State:
    """One q2 graph's scenario and record, kept in the registry: its tools hold only the token."""

    __slots__ = ("calls", "ran")

    def __init__(self, scenario: dict) -> None:
        self.calls = {c.id: c for c in scenario["calls"]}
        self.ran = _Ran(scenario["baton"])


def _q2_import(token: str, tables: list[str], call_id: str) -> str:
    state = _get(token)
    state.ran.start(call_id)
    call = state.calls[call_id]
    write = get_stream_writer()
    for j, done in enumerate(call.dones, 1):
        state.ran.my_turn((call_id, j))
        write({"call": call_id, "done": done, "total": len(tables), "rows": call.rows[done - 1]})
        state.ran.passed((call_id, j))
    if call.fails_at:
        raise LoadError(f"table {call.fails_at} is locked")
    return f"imported {len(tables)} tables"


def _q2_graph(scenario: dict, agent: bool, token: str) -> Any:
    """The graph q2 hands `summarize_run`: its tools are plain functions holding `token` (the
    scenario and the record of what ran are looked up in the registry)."""

    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        return _q2_import(token, tables, tool_call_id)

    def notify(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        _get(token).ran.start(tool_call_id)
        return "sent"

    def mark(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        _get(token).ran.start(tool_call_id)
        return Command(update={"messages": [ToolMessage("marked", tool_call_id=tool_call_id)]})

    def check(table: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        _get(token).ran.start(tool_call_id)
        raise RuntimeError(f"the row audit of {table!r} is over quota: try again in a minute")

    tools = [
        StructuredTool.from_function(import_tables, name=scenario["import"], description="Import tables."),
        StructuredTool.from_function(notify, name=scenario["note"], description="Send a note."),
        StructuredTool.from_function(mark, name=scenario["mark"], description="Mark the run done."),
        StructuredTool.from_function(check, name=scenario["check"], description="Audit a table's rows."),
    ]
    turns: dict[int, list] = {}
    for call in scenario["calls"]:
        turns.setdefault(call.turn, []).append({"name": call.tool, "args": dict(call.args), "id": call.id})
    model = ScriptedChatModel(script=[*turns.values(), "All imported."])
    if agent:
        limit = ToolCallLimitMiddleware(tool_name=scenario["note"], run_limit=1)
        return create_agent(model, tools, middleware=[_ErrorsAsMessages(), limit])
    return tool_loop(model.bind_tools(tools), tools, handle_tool_errors=_error_text)


def _truth(scenario: dict) -> dict[str, tuple[str, int, list[int], str]]:
    """What q2's summary must hold for `scenario`, built here and never returned to the notebook."""
    truth = {}
    for call in scenario["calls"]:
        if call.id == scenario["blocked"]:
            outcome = "not run"
        elif call.fails_at or call.id in scenario["raises"]:
            outcome = "error"
        else:
            outcome = "finished"
        truth[call.id] = (call.tool, call.turn, list(call.dones), outcome)
    return truth


def _summary_problem(summary: Any) -> str | None:
    """Why `summary` is not the plain dict of plain entries asked for, or None. Every key and value is
    checked for its exact type before anything else is read of it (no learner code runs here)."""
    if type(summary) is not dict:
        return f"{_a(type(summary))}" + (" (convert it: `dict(...)`)" if _inherits(summary, dict) else "")
    entries = list(dict.items(summary))
    for key, entry in entries:
        if type(key) is not str:
            return f"a key {_plain(key)} that is {_a(type(key))}, not a str (the call id)"
        if type(entry) is not dict:
            return f"{key!r} → {_a(type(entry))}, not a dict" + (
                " (convert it: `dict(...)`)" if _inherits(entry, dict) else ""
            )
        fields = list(dict.keys(entry))
        if any(type(k) is not str for k in fields):
            return f"{key!r} → keys {[_plain(k) for k in fields][:6]}, not exactly {list(FIELDS)}"
        if sorted(fields) != sorted(FIELDS):
            return f"{key!r} → keys {sorted(fields)}, not exactly {list(FIELDS)}"
        kinds = {"name": str, "turn": int, "progress": list, "outcome": str}
        for field, kind in kinds.items():
            if type(entry[field]) is not kind:
                return f"{key!r} → {field!r} is {_a(type(entry[field]))}, not {_a(kind)}"
        progress = list.copy(entry["progress"])
        if any(type(x) is not int for x in progress):
            return f"{key!r} → 'progress' holds {_plain(progress)}: the 'done' ints"
        if entry["outcome"] not in OUTCOMES:
            return f"{key!r} → 'outcome' {_plain(entry['outcome'])}, not one of {list(OUTCOMES)}"
    return None


def _copy(summary: dict) -> dict[str, tuple[str, int, list[int], str]]:
    """The learner's summary (already checked plain) copied into builtins built here."""
    return {
        str.__str__(k): (
            str.__str__(v["name"]),
            int(v["turn"]),
            [int(x) for x in list.copy(v["progress"])],
            str.__str__(v["outcome"]),
        )
        for k, v in dict.items(summary)
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
            repeated = len(set(progress)) < len(progress)
            raise fail(
                f"the progress of {seen.role(call_id)} is wrong",
                expected=f"{progress}: the 'done' of each custom event whose 'call' is {call_id}, in order",
                observed=str(got),
                why="the imports' events interleave (1 of one call, 1 of the other, 2, …): file each under "
                "its own 'call', not under the tool's name or the last call seen"
                + (
                    "; and copy each event's 'done' as it comes — a retried table is reported twice, so a "
                    "list rebuilt from the last 'done', sorted or made unique, is not what was reported"
                    if repeated
                    else ""
                ),
                where=section(STREAMING, PROGRESS),
            )


def case_outcomes(seen: _Seen) -> None:
    for call_id, (_, _, progress, outcome) in seen.truth.items():
        if call_id not in seen.summary:
            continue  # said by “every call listed”
        got = seen.summary[call_id][3]
        if got == outcome:
            continue
        why = {
            "not run": "the limit answered this call with an error ToolMessage without running it: no "
            "'tool-started' event came. Read the 'tools' mode: started, then finished or error",
            "error": "the tool ran and raised: the 'tools' mode says 'tool-started', then 'tool-error' for "
            "it"
            + (
                " — a call that failed before reporting any progress still ran, and an error ToolMessage's "
                "text does not say whether its call ran"
                if not progress
                else ""
            ),
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
        "each call's progress as reported, interleaved calls apart, a retried table twice",
        case_progress_per_call,
    ),
    ("each call's outcome: finished, error (also before any progress), or not run", case_outcomes),
)


def _raised(error: LearnerRaised) -> CheckFailed:
    """The verdict for an exception `summarize_run` led to: the learner's, or the course's own."""
    original = getattr(error, "original", None)
    if isinstance(original, BaseException) and _course_fault(original):
        return fail(
            "the check's own graph failed while your code streamed it",
            expected="the course's graph to run under `stream` and `astream` alike",
            observed=str(error),
            why="the error came from the course's tools or middleware, not from your code: a bug in the "
            "course — please report it (your answer may well be right)",
            where=section(STREAMING, MODES),
        )
    return fail(
        "summarize_run raised",
        expected="a summary, whatever the updates look like",
        observed=str(error),
        why="an update can be None (a middleware node that changed nothing), a dict without "
        "'messages' (one that changed other keys), or a list (a tool returned a Command): read each "
        "kind. A custom chunk belongs to the call its 'call' names",
        where=section(STREAMING, MODES),
    )


def _read(summarize_run: Any, label: str, agent: bool, draw: random.Random) -> _Seen:
    scenario = _q2_scenario(draw, agent)
    state = _Q2State(scenario)
    token = _put(state)
    inputs = {"messages": [HumanMessage(f"Import batch {draw.getrandbits(24):06x}.")]}
    try:
        graph = _q2_graph(scenario, agent, token)
        try:
            summary = run_learner(summarize_run, graph, inputs, limit=LIMIT, name="summarize_run")
        except StillAStub:
            raise
        except LearnerRaised as error:
            raise _raised(error) from None
        starts = state.ran.counts()
    finally:
        _drop(token)
    problem = _summary_problem(summary)
    if problem:
        raise fail(
            "summarize_run did not return the plain summary asked for",
            expected="a dict: call id → {'name': str, 'turn': int, 'progress': list of int, 'outcome': "
            "'finished' | 'error' | 'not run'}",
            observed=problem,
            where=section(STREAMING, MODES),
        )
    return _Seen(scenario, _copy(summary), starts)


def check_summary(summarize_run: Any, *, seed: int | None = None) -> str:
    draw = rng(seed)
    cases, said = Cases("q2"), {}
    for label, agent in (
        ("create_agent with a tool-call limit", True),
        ("a ToolNode loop with a tool returning a Command", False),
    ):
        try:
            seen = _read(summarize_run, label, agent, draw)
        except CheckFailed as error:
            if type(error) is not CheckFailed:
                raise
            cases.failure(label, error)
            continue
        for name, case in Q2_CASES:
            _run_case(cases, f"{label}: {name}", case, seen, said)
    return cases.result(
        "every call summarised from one streamed run — name, turn, progress as reported, and finished, "
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
