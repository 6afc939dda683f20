"""Lab 15 — A tool that reads its context safely (after `notebooks/15_what_a_tool_sees.ipynb`).

q1: `save_note(text, runtime)`, a sync tool: the note goes into the store under
    `("notes", <the caller's user>)`, keyed by the call's id; the user comes from `runtime.context`;
    with no store or no context it answers the model with a message instead of crashing.
q2: `add_points(points, runtime)`: lesson 15's read-modify-write on the store, made safe with one
    lock shared by every call, so no update is lost when one user's calls run at once.
q3: `audit(event, runtime)`, an `async def` tool: each record carries the request id the web layer
    put in `REQUEST_ID` (a ContextVar) and goes to an async store through `aput`.

How the checks hold: every check runs several users' requests AT ONCE, each request a graph run
with its own `context=` and a batch of calls, the same user in two requests, under `invoke`
(a thread per request, sync tools in ToolNode's pool) and `ainvoke` (one event loop). What is drawn
at random is the names, texts, points, ids and request ids — never whether a hard case is there. The
store is the check's own and records every operation as it happens (which thread, what it read or
wrote, in what order, from which request); for q1 and q2 it holds each read until every call of the
wave has read, and each write until a call waiting on a lock has read (or no call arrived for a
moment), so a read-modify-write that can lose an update does lose it, on every run. Values are
judged only as plain builtins (`type(x) is str`, a `dict` of them). Each case is a small function
below; the checker runs them over one drawn scenario.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.store.base import GetOp, PutOp, SearchOp
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.memory import InMemoryStore

from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    StillAStub,
    describe_exception,
    fail,
    is_stub,
    rng,
    run_learner,
    section,
    shorten,
)

LESSON = "15_what_a_tool_sees"
FIELDS = "1. `ToolRuntime`, field by field, in five places"
STORE = "2. The store: memory that outlives the thread"
NO_STORE = "When the graph has no store"
CONTEXT = "3. Context and config: per-run data"
THREADS = "4. `contextvars` and thread-locals in the pool"
SHARED = "5. Shared state under concurrent calls"
NONE_STORE = "`runtime.store` when there is none"
ASYNC_STORE = "Async tools and the store"
ASYNC = "7. Deep dive: who copies the context, and async tools"

USERS = ("mia", "raj", "lea", "tom", "ines", "kofi", "yuki", "omar", "sara", "ivan")
"""The users a check draws (never the notebook's `ann` and `bob`)."""
TEXTS = (
    "likes tea", "flies on Fridays", "allergic to nuts", "prefers email", "works from Lisbon",
    "has a dog", "speaks Spanish", "is vegetarian", "plays chess", "takes the train",
)  # fmt: skip
EVENTS = ("login", "export", "search", "download", "upload", "logout", "share", "print")
IDLE = 0.15
"""Seconds the check's store holds a call when no other call arrives (the wave is then complete)."""
TRY_IDLE = 0.5
"""The same for `try_requests` in the notebook: longer, so its printed runs come out the same on a
busy laptop."""
NO_REQUEST = "<no request>"


@dataclasses.dataclass
class Caller:
    """The run's context: who is calling. Pass `context=Caller(user="ann")`."""

    user: str


_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar("_CALL", default=None)
"""The tool call a store operation belongs to, set by the check's interceptors around each call."""
REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST_ID", default=NO_REQUEST)
"""The web layer's request id, set for each request before it calls the agent (as middleware does)."""
request_local = threading.local()
"""The web layer sets `request_local.id` too, on the thread that handles the request."""


# -- the check's store: records every operation, holds each call until the wave has arrived -----------
class _Gate:
    """Holds each store call until `parties` reads have arrived, or no call arrived for `idle` s."""

    def __init__(self, parties: int, idle: float = IDLE) -> None:
        self.parties, self.idle, self.arrived, self.last = parties, idle, 0, time.monotonic()
        self._lock = threading.Lock()

    def _arrive(self, read: bool) -> None:
        with self._lock:
            self.arrived += read
            self.last = time.monotonic()

    def _open(self) -> bool:
        with self._lock:
            return self.arrived >= self.parties or time.monotonic() - self.last >= self.idle

    def wait(self, read: bool) -> None:
        self._arrive(read)
        while not self._open():
            time.sleep(0.005)


@dataclasses.dataclass(frozen=True)
class _Op:
    """One store operation as it happened: its order, kind, namespace, key, what it read or wrote, and
    the thread, request and tool call it came from."""

    seq: int
    kind: str  # "get", "put", "search", "answered" (the call's answer left the tool), ...
    namespace: tuple
    key: Any
    value: Any
    thread: int
    request: str
    call: str | None = None


class _Log:
    def __init__(self) -> None:
        self.ops: list[_Op] = []
        self._lock = threading.Lock()

    def add(self, kind: str, namespace: Any, key: Any, value: Any) -> None:
        with self._lock:
            self.ops.append(
                _Op(
                    len(self.ops),
                    kind,
                    namespace,
                    key,
                    value,
                    threading.get_ident(),
                    REQUEST_ID.get(),
                    _CALL.get(),
                )
            )


def _kind(op: Any) -> str:
    return {"GetOp": "get", "PutOp": "put", "SearchOp": "search"}.get(type(op).__name__, type(op).__name__)


class _Store(InMemoryStore):
    """An InMemoryStore that records each operation and holds the call at the gate: after a read until
    the other calls have read, before a write long enough for a call waiting on a lock to read first."""

    def __init__(self, gate: _Gate | None = None) -> None:
        super().__init__()
        self.log, self.gate = _Log(), gate

    def _record(self, ops: list, results: list) -> None:
        for op, result in zip(ops, results, strict=True):
            namespace = getattr(op, "namespace", getattr(op, "namespace_prefix", None))
            read = result.value if type(op) is GetOp and result is not None else None
            if type(op) is SearchOp:
                read = tuple((tuple(i.namespace), i.key, i.value) for i in result)
            self.log.add(
                _kind(op), namespace, getattr(op, "key", None), op.value if type(op) is PutOp else read
            )

    def _hold_reread(self, ops: list) -> None:
        """A call reading again what it has written already: hold that read until another call has
        written the same key (or a moment passed), so a total read again after the lock was released
        is the next call's, on every run."""
        call = _CALL.get()
        keys = {(op.namespace, op.key) for op in ops if type(op) is GetOp}
        mine = [
            op
            for op in self.log.ops
            if op.kind == "put" and op.call == call and (op.namespace, op.key) in keys
        ]
        if call is None or not mine:
            return
        start, deadline = len(self.log.ops), time.monotonic() + 3 * self.gate.idle
        while time.monotonic() < deadline:
            if any(
                op.kind == "put" and op.call != call and (op.namespace, op.key) in keys
                for op in self.log.ops[start:]
            ):
                return
            time.sleep(0.005)

    def batch(self, ops: Any) -> list:
        ops = list(ops)
        writes = self.gate is not None and any(type(op) is PutOp for op in ops)
        if self.gate is not None and not writes:
            self._hold_reread(ops)
        if writes:
            # before a write: a call waiting for a lock released just now reads first
            self.gate.wait(read=False)
        results = super().batch(ops)
        self._record(ops, results)
        if self.gate is not None and not writes:
            # after a read: every call of the wave reads before any of them writes
            self.gate.wait(read=True)
        return results

    async def abatch(self, ops: Any) -> list:
        return await asyncio.to_thread(self.batch, ops)

    def items(self) -> dict[tuple, Any]:
        """Everything stored: (namespace, key) → value, read without recording."""
        return _all_items(self)


def _all_items(store: InMemoryStore) -> dict[tuple, Any]:
    (items,) = InMemoryStore.batch(store, [SearchOp((), None, 100_000, 0, None)])
    return {(tuple(item.namespace), item.key): item.value for item in items}


class _AsyncStore(AsyncBatchedBaseStore):
    """An async store built like AsyncPostgresStore (every call runs on the loop that made it), that
    records each `aput` in the calling task, with the request id that task's context holds."""

    def __init__(self) -> None:
        super().__init__()
        self.memory, self.log = InMemoryStore(), _Log()

    async def abatch(self, ops: Any) -> list:
        return await self.memory.abatch(ops)

    async def aput(self, namespace: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> None:
        self.log.add("put", namespace, key, value)
        done = await super().aput(namespace, key, value, *args, **kwargs)
        self.log.add("stored", namespace, key, value)  # the write is in the store: `aput` has returned
        return done

    def items(self) -> dict[tuple, Any]:
        return _all_items(self.memory)

    def answered(self, call_id: Any) -> None:
        """The call's answer has just come back: record whether each write the call began is done."""
        began = [op for op in self.log.ops if op.kind == "put" and op.call == call_id]
        done = [op for op in self.log.ops if op.kind == "stored" and op.call == call_id]
        held = len(done) >= len(began) and (bool(done) or any(key == call_id for (_, key) in self.items()))
        self.log.add("answered", None, call_id, held)


# -- the scenario: several requests at once -----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Call:
    id: str
    user: str
    args: tuple  # ((name, value), ...)

    def arg(self, name: str) -> Any:
        return dict(self.args)[name]


@dataclasses.dataclass(frozen=True)
class _Request:
    user: str | None  # None: the request passes no context=
    request_id: str
    calls: tuple[_Call, ...]


@dataclasses.dataclass(frozen=True)
class _Scenario:
    requests: tuple[_Request, ...]
    seeds: tuple = ()  # q2: ((user, total), ...) already in the store

    @property
    def calls(self) -> list[_Call]:
        return [c for r in self.requests for c in r.calls]

    @property
    def users(self) -> list[str]:
        return sorted({r.user for r in self.requests if r.user})


def _ids(rng: random.Random, n: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < n:
        drawn = f"call_{rng.getrandbits(40):010x}"
        ids += [drawn] if drawn not in ids else []
    return ids


def _requests(rng: random.Random, plan: list[tuple[str, list[dict]]]) -> tuple[_Request, ...]:
    ids = iter(_ids(rng, sum(len(args) for _, args in plan)))
    requests = [
        _Request(
            user,
            f"req-{rng.getrandbits(24):06x}",
            tuple(_Call(next(ids), user, tuple(a.items())) for a in args),
        )
        for user, args in plan
    ]
    rng.shuffle(requests)
    return tuple(requests)


@dataclasses.dataclass
class _Outcome:
    """One request's result: the ToolMessages of its calls by call id, or the exception it raised."""

    request: _Request
    messages: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: BaseException | None = None


class _Escaped(Exception):
    """A SystemExit or GeneratorExit raised by the learner's tool under `ainvoke`, carried as an ordinary
    exception: raised in a task as it is, it would stop the event loop the requests share."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


def _interceptors(store: Any) -> tuple[Callable, Callable]:
    """The check's interceptors, sync (under `invoke`) and async (under `ainvoke`): every call runs as
    it would, its id set in `_CALL` so the store records which call each operation came from; under
    `ainvoke` a SystemExit or GeneratorExit becomes the request's outcome instead of stopping the loop,
    and an async store records whether the call's item was there when its answer came back."""

    def contain(request: Any, execute: Any) -> Any:
        token = _CALL.set(request.tool_call.get("id"))
        try:
            return execute(request)
        finally:
            _CALL.reset(token)

    async def acontain(request: Any, execute: Any) -> Any:
        token = _CALL.set(request.tool_call.get("id"))
        try:
            result = await execute(request)
        except (SystemExit, GeneratorExit) as exc:
            raise _Escaped(exc) from exc
        finally:
            _CALL.reset(token)
        if type(store) is _AsyncStore:
            store.answered(request.tool_call.get("id"))
        return result

    return contain, acontain


def _failure(exc: BaseException) -> BaseException:
    return exc.original if isinstance(exc, _Escaped) else exc


def _graph(tool: Any, store: Any) -> Any:
    builder = StateGraph(MessagesState, context_schema=Caller)
    contain, acontain = _interceptors(store)
    builder.add_node("tools", ToolNode([tool], wrap_tool_call=contain, awrap_tool_call=acontain))
    builder.add_edge(START, "tools")
    return builder.compile(store=store)


def _input(request: _Request, name: str) -> dict:
    calls = [{"name": name, "args": dict(c.args), "id": c.id, "type": "tool_call"} for c in request.calls]
    return {"messages": [AIMessage(content="", tool_calls=calls)]}


def _options(request: _Request) -> dict:
    return {} if request.user is None else {"context": Caller(user=request.user)}


def _collect(outcome: _Outcome, result: Any) -> None:
    for message in result["messages"][1:]:
        outcome.messages[getattr(message, "tool_call_id", None)] = message


def _serve_threads(graph: Any, requests: tuple[_Request, ...], name: str) -> list[_Outcome]:
    """The web layer under `invoke`: one thread per request, all at once; each sets its request id."""
    outcomes = [_Outcome(r) for r in requests]

    def handle(outcome: _Outcome) -> None:
        request = outcome.request
        REQUEST_ID.set(request.request_id)
        request_local.id = request.request_id
        try:
            _collect(outcome, graph.invoke(_input(request, name), **_options(request)))
        except BaseException as exc:  # noqa: BLE001 - every learner failure becomes a verdict
            outcome.error = _failure(exc)

    threads = [threading.Thread(target=handle, args=(o,), daemon=True) for o in outcomes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


async def _serve_loop(
    graph: Any, requests: tuple[_Request, ...], name: str, channels: tuple = ()
) -> list[_Outcome]:
    """The web layer under `ainvoke`: one task per request on one event loop, all at once. Every
    request sets its request id before any of them calls the graph (as concurrent requests do), in
    `REQUEST_ID` and `request_local`, and in the notebook's own copies of them (`channels`: a grading
    kernel loads the checks apart from the notebook's imports)."""
    outcomes = [_Outcome(r) for r in requests]
    ready, arrived = asyncio.Event(), [0]

    async def handle(outcome: _Outcome) -> None:
        request = outcome.request
        for channel in (REQUEST_ID, request_local, *channels):
            if type(channel) is contextvars.ContextVar:
                channel.set(request.request_id)
            else:
                channel.id = request.request_id
        arrived[0] += 1
        if arrived[0] == len(outcomes):
            ready.set()
        await ready.wait()
        try:
            _collect(outcome, await graph.ainvoke(_input(request, name), **_options(request)))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - every learner failure becomes a verdict
            outcome.error = _failure(exc)

    await asyncio.gather(*(handle(o) for o in outcomes))
    return outcomes


def _play(tool: Any, requests: tuple[_Request, ...], path: str, store: Any) -> list[_Outcome]:
    """Every request of the wave at once, under `invoke` or `ainvoke`, through the learner's tool."""
    graph = _graph(tool, store)
    name = getattr(tool, "name", "tool")
    if path == "invoke":
        return run_learner(_serve_threads, graph, requests, name, name=f"{name} (requests at once, invoke)")
    return run_learner(_serve_loop, graph, requests, name, name=f"{name} (requests at once, ainvoke)")


# -- what every check shares -------------------------------------------------------------------------
def _plain_str(value: Any) -> bool:
    return type(value) is str


def _visible_args(tool: Any) -> set[str]:
    try:
        return set(tool.tool_call_schema.model_json_schema().get("properties", {}))
    except Exception:  # noqa: BLE001 - a tool whose schema cannot be read is judged as having none
        return set()


def case_is_a_tool(tool: Any, name: str, args: set[str], *, coroutine: bool | None = None) -> None:
    """A `@tool` named `name`; the model sees exactly `args` (the runtime is hidden from it)."""
    if not isinstance(tool, BaseTool):
        raise fail(
            f"`{name}` must be a tool",
            expected=f"a tool made with `@tool` (a BaseTool named {name!r})",
            observed=f"a {type(tool).__name__}",
            where=section(LESSON, FIELDS),
            why="ToolNode injects a `ToolRuntime` into tools; decorate the function with `@tool`",
        )
    seen = _visible_args(tool)
    if tool.name != name or seen != args:
        extra = sorted(seen - args)
        raise fail(
            f"the model must see `{name}` with the arguments {sorted(args)} only",
            expected=f"a tool named {name!r} whose arguments, as the model sees them, are {sorted(args)}",
            observed=f"{tool.name!r} with {sorted(seen)}",
            where=section(LESSON, CONTEXT),
            why=f"{extra} would be filled in by the model: who is calling comes from the run's "
            "`runtime.context`, never from the model, and `runtime: ToolRuntime[Caller]` is hidden from it"
            if extra
            else "keep the signature the exercise gives (with `runtime: ToolRuntime[Caller]`)",
        )
    is_async = getattr(tool, "coroutine", None) is not None
    if coroutine is True and not is_async:
        raise fail(
            f"`{name}` must be an `async def` tool",
            expected="`@tool async def ...` awaiting the store's `a…` methods",
            observed="a sync tool",
            where=section(LESSON, ASYNC_STORE),
            why="the app awaits its agent on one event loop, and its store is an async store: write the "
            "tool as `async def` and `await runtime.store.aput(...)`",
        )
    if coroutine is False and getattr(tool, "func", None) is None:
        raise fail(
            f"`{name}` must be a sync tool",
            expected="`@tool def ...` (it runs in ToolNode's thread pool, under `invoke` and `ainvoke`)",
            observed="an async-only tool: under `invoke` it cannot run (StructuredTool does not support sync "
            "invocation)",
            where=section(LESSON, THREADS),
        )


def _error_verdict(outcome: _Outcome, what: str) -> CheckFailed:
    """A request that raised: what it raised, and the lesson's reason when it is a known mistake."""
    exc = outcome.error
    text = f"{type(exc).__name__}: {exc}"
    why, where = (
        "a tool's exception ends the whole run under ToolNode's default error policy",
        section(LESSON, STORE),
    )
    if isinstance(exc, KeyError) and ("configurable" in text or "user" in text):
        why, where = (
            "the user is not in `config['configurable']`: it comes from `runtime.context.user`",
            section(LESSON, CONTEXT),
        )
    elif "Cannot inject store" in text:
        why = (
            "`InjectedStore` raises before the tool runs when the graph has no store, and no error policy "
            "answers it: take the store from `runtime.store` and test `is None`"
        )
        where = section(LESSON, NO_STORE)
    elif "without a store" in what:
        why, where = (
            "`runtime.store` is None when the graph has no store: test it and return a message",
            section(LESSON, NONE_STORE),
        )
    elif "without context=" in what:
        why = "`runtime.context` is None when the run has no `context=`: test it and return a message"
        where = section(LESSON, CONTEXT)
    elif "InvalidStateError" in type(exc).__name__ or "Synchronous calls" in text:
        why = (
            "a sync store call (`put`, `get`) from an async tool runs on the event loop's thread, which an "
            "async store refuses: `await runtime.store.aput(...)`"
        )
        where = section(LESSON, ASYNC_STORE)
    elif "not support sync invocation" in text:
        why, where = (
            "an async-only tool cannot run under `invoke`: write it as `def`",
            section(LESSON, THREADS),
        )
    observed = describe_exception(exc)
    if isinstance(exc, SystemExit | GeneratorExit) and not observed.startswith("your code"):
        observed = f"your tool raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
    return fail(
        f"a request raised instead of answering its calls ({what})",
        expected="every call answered with a ToolMessage, the run finished",
        observed=observed,
        where=where,
        why=why,
    )


def _first_error(outcomes: list[_Outcome], what: str) -> None:
    for outcome in outcomes:
        if isinstance(outcome.error, KeyboardInterrupt):
            # the stop button, or the tool raised it in a request's thread: the check stops (the
            # framework says so in one line, CheckStopped), it gives no verdict
            raise KeyboardInterrupt from None
        if outcome.error is not None and is_stub(outcome.error):
            raise StillAStub(
                f"your code still raises NotImplementedError: {outcome.error} (the starter's stub line). "
                "Replace that `raise` line with your code, run the cell, then this check again.",
                outcome.error,
            )
        if outcome.error is not None:
            raise _error_verdict(outcome, what)


def _answers(outcomes: list[_Outcome]) -> dict[str, Any]:
    """Each call id → its ToolMessage; a call left unanswered is a verdict."""
    answers: dict[str, Any] = {}
    for outcome in outcomes:
        for call in outcome.request.calls:
            message = outcome.messages.get(call.id)
            if message is None:
                raise fail(
                    "a call was not answered",
                    expected=f"a ToolMessage for {call.id}",
                    observed=f"answers for {sorted(k for k in outcome.messages if k)}",
                    where=section(LESSON, FIELDS),
                )
            answers[call.id] = message
    return answers


def _content(message: Any, call: _Call) -> str:
    content = getattr(message, "content", None)
    if getattr(message, "status", "success") == "error" or not _plain_str(content):
        raise fail(
            "a call was answered with an error",
            expected=f"a str answer for {call.user}'s call {dict(call.args)}",
            observed=shorten(repr(content), 160) + f" (status={getattr(message, 'status', None)!r})",
            where=section(LESSON, FIELDS),
            why="the arguments the model sees must be the exercise's, nothing more",
        )
    return content


def _plain_dict(value: Any, fields: dict[str, type]) -> dict | None:
    """`value` as a dict of plain builtins built here, or None when it is not exactly that shape."""
    if type(value) is not dict or set(value) != set(fields):
        return None
    if any(type(value[k]) is not kind for k, kind in fields.items()):
        return None
    return {k: fields[k](value[k]) for k in fields}


# -- q1: save_note -------------------------------------------------------------------------------------
_CLAIM = re.compile(
    r"\b(saved|stored|noted|recorded|remembered|written|kept|added|done|ok|okay|success\w*)\b", re.I
)
_NEGATION = re.compile(
    r"\b(not|no|nothing|never|none|cannot|unable|failed|fail|without|error|missing|unavailable|sorry)\b|n't\b",
    re.I,
)
_CLAUSE = re.compile(r"[.,;:!?()\[\]\n—–]+|\s-\s|\b(?:but|so|because|as)\b", re.I)


def _names(name: str, said: str) -> bool:
    """`said` names `name` as a word ("Please" does not name "lea", "custom" does not name "tom")."""
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", said) is not None


def _claims_saved(said: str) -> bool:
    """A clause of `said` says the note was saved, with no negation in that clause."""
    return any(
        _CLAIM.search(clause) and not _NEGATION.search(clause) for clause in _CLAUSE.split(said) if clause
    )


def draw_notes(rng: random.Random) -> _Scenario:
    """Four requests at once: one user twice (the same text in both), two others, 2+1+2+2 calls."""
    one, two, three = rng.sample(USERS, 3)
    texts = rng.sample(TEXTS, 6)
    plan = [
        (one, [{"text": texts[0]}, {"text": texts[1]}]),
        (two, [{"text": texts[2]}]),
        (one, [{"text": texts[0]}]),  # the same user, the same text, another request
        (three, [{"text": texts[3]}, {"text": texts[4]}]),
    ]
    return _Scenario(_requests(rng, plan))


def _judge_notes(scenario: _Scenario, outcomes: list[_Outcome], store: _Store, path: str) -> None:
    _first_error(outcomes, f"{len(scenario.requests)} requests at once under `{path}`")
    answers = _answers(outcomes)
    for call in scenario.calls:
        said = _content(answers[call.id], call)
        others = [u for u in scenario.users if u != call.user and _names(u, said)]
        if not _names(call.user, said) or others:
            raise fail(
                "each call's answer names its own caller",
                expected=f"{call.user}'s call answered with a str naming {call.user!r}",
                observed=f"{said!r}",
                where=section(LESSON, CONTEXT),
                why="read the user from `runtime.context.user` inside the call: a value kept anywhere else "
                "(a global, a ContextVar or threading.local set in the notebook) is not this request's"
                if others or any(_names(u, said) for u in ("ann", "bob", "guest"))
                else "return a str that names the caller, e.g. `f'saved for {user}'`, the user read from "
                "`runtime.context.user`",
            )
    judge_items(scenario, store.items(), "notes", {"text": str}, lambda c: {"text": c.arg("text")})


def judge_items(
    scenario: _Scenario, items: dict, prefix: str, fields: dict[str, type], value: Callable[[_Call], dict]
) -> None:
    """The store holds exactly one item per call: `(prefix, user)`, the call's id, its value."""
    wanted = {((prefix, c.user), c.id): value(c) for c in scenario.calls}
    if not items:
        raise fail(
            "nothing was written to the store",
            expected=f"{len(wanted)} items, one per call, under ({prefix!r}, user)",
            observed="an empty store",
            where=section(LESSON, STORE),
            why="write through the run's store, `runtime.store` (an async tool awaits `runtime.store.aput`)",
        )
    odd = [(ns, k) for ns, k in items if type(k) is not str or any(type(part) is not str for part in ns)]
    if odd:
        ns, k = odd[0]
        raise fail(
            "namespaces and keys are plain strings",
            expected="a tuple of str as the namespace, a str as the key",
            observed=f"namespace parts {[type(p).__name__ for p in ns]}, key {type(k).__name__}",
            where=section(LESSON, STORE),
            why="use the str values themselves: `runtime.context.user` and `runtime.tool_call_id`",
        )
    spaces = sorted({ns for ns, _ in items} - {ns for ns, _ in wanted}, key=str)
    if spaces:
        strays = [ns for ns in spaces if tuple(ns[:1]) != (prefix,) or len(ns) != 2]
        raise fail(
            f"the items are under namespaces no caller of this wave has: {shorten(spaces, 120)}",
            expected=f"only {sorted({ns for ns, _ in wanted})}",
            observed=f"{len(items)} item(s), under {sorted({ns for ns, _ in items}, key=str)}",
            where=section(LESSON, STORE),
            why=f"the namespace is ({prefix!r}, user), the user read from `runtime.context.user` in the call"
            if strays
            else "a user this wave never had: the user must come from `runtime.context`, not from a value "
            "kept outside the call (a global, the notebook's ContextVar, a threading.local)",
        )
    by_value = {repr(v): ns for (ns, _), v in items.items()}
    moved = [
        c
        for c in scenario.calls
        if ((prefix, c.user), c.id) not in items
        and by_value.get(repr(value(c)), (prefix, c.user)) != (prefix, c.user)
    ]  # noqa: E501
    if moved:
        call = moved[0]
        raise fail(
            "an item landed in another user's namespace",
            expected=f"{call.user}'s call {call.id} writes under ({prefix!r}, {call.user!r})",
            observed=f"its item is under {by_value[repr(value(call))]} ({len(moved)} call(s) like it)",
            where=section(LESSON, THREADS),
            why="read the user inside each call from `runtime.context.user`; a module global or attribute "
            "set by one call is overwritten by the calls running beside it",
        )
    keys = sorted({k for (_, k) in items} - {k for (_, k) in wanted}, key=str)
    if keys or len(items) != len(wanted):
        raise fail(
            "each call must leave its own item, keyed by its call's id",
            expected=f"keys {sorted(c.id for c in scenario.calls)}",
            observed=f"{len(items)} item(s), keys {shorten(sorted(str(k) for _, k in items), 160)}",
            where=section(LESSON, SHARED),
            why="key each item by `runtime.tool_call_id`: one item per call, so two calls never overwrite "
            "each other (the same text twice, or two requests of one user at once) and a retried call "
            "writes the same item again",
        )
    for (space, key), expected in wanted.items():
        got = _plain_dict(items[(space, key)], fields)
        if got != expected:
            raise fail(
                "an item holds something else",
                expected=f"{expected} under {space}, {key!r}",
                observed=shorten(repr(items[(space, key)]), 160),
                where=section(LESSON, STORE),
                why=f"the value is a dict of exactly {sorted(fields)}, each a plain "
                f"{' / '.join(t.__name__ for t in fields.values())}",
            )


def case_notes_at_once(tool: Any, scenario: _Scenario, path: str) -> None:
    store = _Store(_Gate(len(scenario.calls)))
    outcomes = _play(tool, scenario.requests, path, store)
    _judge_notes(scenario, outcomes, store, path)


def case_notes_direct(tool: Any, scenario: _Scenario) -> None:
    """Called as a unit test calls it: a hand-built ToolRuntime, no graph; a plain str comes back."""
    call = scenario.calls[0]
    store = _Store()
    runtime = ToolRuntime(
        state={"messages": []}, context=Caller(user=call.user), config={},
        stream_writer=lambda _: None, tool_call_id=call.id, store=store,
    )  # fmt: skip
    try:
        result = run_learner(
            tool.invoke, {"text": call.arg("text"), "runtime": runtime}, name="save_note.invoke"
        )
    except LearnerRaised as error:
        if "__pregel_" not in str(error) and "outside of a runnable context" not in str(error):
            raise
        raise fail(
            "called directly, the tool looked for a graph run",
            expected="the tool works with the ToolRuntime it is handed",
            observed=shorten(str(error), 200),
            where=section(LESSON, FIELDS),
            why="`get_store()`, `get_runtime()` and `get_config()` read the graph run around the call, and a "
            "direct call (a unit test) has none: read `runtime.store` and `runtime.context`",
        ) from None
    if not _plain_str(result) or not _names(call.user, result):
        plain = _plain_str(result)
        raise fail(
            "called directly with a ToolRuntime, the tool returns a str naming the caller",
            expected=f"a str naming {call.user!r} (the user of the runtime's context)",
            observed=f"{type(result).__name__}: {shorten(repr(result), 120)}",
            where=section(LESSON, CONTEXT) if plain else section(LESSON, FIELDS),
            why=f"the runtime it was handed says the caller is {call.user!r}: read the user from "
            "`runtime.context.user` inside the call, not from a value kept outside it (a global, a "
            "ContextVar or threading.local set in the notebook)"
            if plain
            else "return a plain str (ToolNode turns anything else into text, a unit test does not)",
        )
    solo = _Scenario((_Request(call.user, "direct", (call,)),))
    judge_items(solo, store.items(), "notes", {"text": str}, lambda c: {"text": c.arg("text")})


def _one_missing(tool: Any, scenario: _Scenario, missing: str) -> tuple[Any, _Store]:
    """One call, on a graph without a store (`missing="store"`) or in a run without `context=`."""
    call = scenario.calls[-1]
    request = _Request(None if missing == "context" else call.user, "missing", (call,))
    kept = _Store()
    outcomes = _play(tool, (request,), "invoke", None if missing == "store" else kept)
    what = "a graph compiled without a store" if missing == "store" else "a run invoked without context="
    _first_error(outcomes, what)
    message = _answers(outcomes)[call.id]
    return message.content, kept


def case_notes_without_store(tool: Any, scenario: _Scenario) -> None:
    said, _ = _one_missing(tool, scenario, "store")
    if _plain_str(said) and _claims_saved(said):
        raise fail(
            "with no store, the answer says the note was saved",
            expected="a str answer that says nothing was saved and names the missing store (e.g. "
            "'Error: no store, the note was not saved')",
            observed=shorten(repr(said), 160) + " — and the graph has no store, so nothing was kept",
            where=section(LESSON, NONE_STORE),
            why="a store made inside the tool (`runtime.store or InMemoryStore()`) is thrown away when the "
            "call ends: the note is lost and the model believes it is kept. Test `runtime.store is None`, "
            "write nothing, and say so",
        )
    if not _plain_str(said) or not re.search(r"\bstore\b", said, re.I):
        raise fail(
            "with no store, the model is told the note was not saved",
            expected="a str answer that names the missing store (e.g. 'Error: no store ...')",
            observed=shorten(repr(said), 160),
            where=section(LESSON, NONE_STORE),
            why="`runtime.store` is None when the graph has no store: test it and return a message",
        )


def case_notes_without_context(tool: Any, scenario: _Scenario) -> None:
    said, store = _one_missing(tool, scenario, "context")
    if _plain_str(said) and not store.items() and _claims_saved(said):
        raise fail(
            "with no context=, the answer says the note was saved",
            expected="a str answer that says nothing was saved and names the missing context",
            observed=f"{shorten(repr(said), 120)}; 0 items written",
            where=section(LESSON, CONTEXT),
            why="nothing was written, and the model believes the note is kept: say it was not saved "
            "(e.g. 'Error: no context, the note was not saved')",
        )
    if not _plain_str(said) or "context" not in said.lower() or store.items():
        raise fail(
            "with no context=, nothing is saved and the model is told why",
            expected="a str answer that names the missing context, and nothing written",
            observed=f"{shorten(repr(said), 120)}; {len(store.items())} item(s) written",
            where=section(LESSON, CONTEXT),
            why="invoked without `context=`, `runtime.context` is None (a dataclass's defaults do not "
            "apply): test it, save nothing, and say so",
        )


def check_save_note(save_note: Any) -> str:
    scenario = draw_notes(rng())
    cases = Cases("q1")
    with cases.case("a tool the model calls with `text` only"):
        case_is_a_tool(save_note, "save_note", {"text"}, coroutine=False)
    if cases.failed:
        return cases.result("")
    cases.run("called directly with a hand-built ToolRuntime", lambda: case_notes_direct(save_note, scenario))
    for path in ("invoke", "ainvoke"):
        cases.run(
            f"4 requests of 3 users at once under `{path}` (one user twice, the same text twice)",
            lambda path=path: case_notes_at_once(save_note, scenario, path),
        )
    cases.run("a graph without a store", lambda: case_notes_without_store(save_note, scenario))
    cases.run("a run without context=", lambda: case_notes_without_context(save_note, scenario))
    return cases.result(
        f"all {len(cases.items)} cases passed: each note under its own caller and call id, requests at once "
        "under invoke and ainvoke, a direct call, no store and no context answered."
    )


q1 = Exercise(
    "15",
    "q1",
    ("save_note",),
    check_save_note,
    (
        "Everything the call needs is on `runtime`: `runtime.context.user` (who is calling), `runtime.store` "
        "and `runtime.tool_call_id`. Test `runtime.store is None` and `runtime.context is None` first.",
        '`runtime.store.put(("notes", user), runtime.tool_call_id, {"text": text})`, then return '
        '`f"saved for {user}"`; when the store or the context is missing, return a str that says which '
        "(`'Error: no store ...'`, `'Error: no context ...'`) without writing anything.",
    ),
)


# -- q2: add_points ------------------------------------------------------------------------------------
def draw_points(rng: random.Random) -> _Scenario:
    """Three requests at once: one user twice (2 + 1 calls, a total already stored), another (2 calls,
    none stored yet). Points are distinct within a user."""
    one, two = rng.sample(USERS, 2)
    a, b = rng.sample(range(1, 10), 3), rng.sample(range(1, 10), 2)
    plan = [
        (one, [{"points": a[0]}, {"points": a[1]}]),
        (two, [{"points": b[0]}, {"points": b[1]}]),
        (one, [{"points": a[2]}]),
    ]
    return _Scenario(_requests(rng, plan), seeds=((one, rng.randrange(10, 40)),))


_TOTAL = re.compile(r"has (-?\d+) points")


def _lost(store: _Store, user: str) -> str:
    """What the log shows of one user's total: how many calls read it before one of them wrote it."""
    worst, reads, seen = 1, 0, []
    for op in store.log.ops:
        if op.kind == "search" and tuple(op.namespace or ())[:1] in ((), ("scores",)):
            # a search under ('scores',) reads every user's total there
            value = next((v for ns, k, v in op.value if ns == ("scores",) and k == user), None)
        elif op.namespace == ("scores",) and op.key == user and op.kind in ("get", "put"):
            value = op.value
        else:
            continue
        if op.kind in ("get", "search"):
            reads += 1
            seen.append(value.get("total") if type(value) is dict else value)
            worst = max(worst, reads)
        else:
            reads = 0
    return (
        f"{worst} reads of {user}'s total (`get` or `search`: {shorten(seen[:worst], 60)}) came before any "
        "call wrote it"
        if worst > 1
        else ""
    )  # noqa: E501


def _judge_points(scenario: _Scenario, outcomes: list[_Outcome], store: _Store, path: str) -> None:
    _first_error(outcomes, f"{len(scenario.requests)} requests at once under `{path}`")
    answers = _answers(outcomes)
    items = store.items()
    seeds = dict(scenario.seeds)
    for user in scenario.users:
        calls = [c for c in scenario.calls if c.user == user]
        wanted = seeds.get(user, 0) + sum(c.arg("points") for c in calls)
        stored = items.get((("scores",), user))
        if stored is not None and _plain_dict(stored, {"total": int}) is None:
            shape = (
                f"a dict with the keys {sorted(map(str, stored))}, "
                f"'total' a {type(stored.get('total')).__name__}"
                if type(stored) is dict
                else f"a {type(stored).__name__}"
            )
            raise fail(
                f"{user}'s total is stored in another shape",
                expected="{'total': <int>} under ('scores',), the user: one key, 'total', a plain int",
                observed=f"{shorten(repr(stored), 80)} — {shape}",
                where=section(LESSON, SHARED),
                why="keep the value racy_add_points keeps, `{'total': total}` with an int total (points are "
                "ints: no float(), no other keys), so every reader of the store finds what it expects",
            )
        got = _plain_dict(stored, {"total": int})
        if got != {"total": wanted}:
            race = _lost(store, user)
            written = any(
                op.kind == "put" and op.namespace == ("scores",) and op.key == user for op in store.log.ops
            )
            raise fail(
                f"{user}'s total lost an update" if written else f"{user}'s total was never written back",
                expected=f"{{'total': {wanted}}} under ('scores',), {user!r}: {seeds.get(user, 0)} stored "
                f"before, then {' + '.join(str(c.arg('points')) for c in calls)} from {len(calls)} calls "
                "at once",
                observed=shorten(repr(items.get((("scores",), user))), 80) + (f"; {race}" if race else ""),
                where=section(LESSON, SHARED),
                why="both calls read before either wrote, and the last `put` wins: hold ONE lock, made once "
                "outside the tool and shared by every call, from the `get` to the `put`"
                if race
                else "start from the total the store holds, add this call's points, put it back"
                if written
                else "keep the total where racy_add_points keeps it, ('scores',) and the user: `get` it, "
                "add, `put` it back",
            )
        reported = []
        for call in calls:
            said = _content(answers[call.id], call)
            match = _TOTAL.search(said)
            reported.append((int(match.group(1)) if match else None, call.arg("points")))
            put = [
                op.value.get("total") if type(op.value) is dict else op.value
                for op in store.log.ops
                if op.kind == "put" and op.call == call.id and op.namespace == ("scores",) and op.key == user
            ]
            others = {
                op.value.get("total") if type(op.value) is dict else op.value
                for op in store.log.ops
                if op.kind == "put" and op.call not in (None, call.id) and op.key == user
            }
            if match and put and int(match.group(1)) != put[-1] and int(match.group(1)) in others:
                raise fail(
                    f"a call of {user}'s reported a total it did not write",
                    expected=f"the call adding {call.arg('points')} says '{user} has {put[-1]} points', the "
                    "total it put",
                    observed=f"{said!r}",
                    where=section(LESSON, SHARED),
                    why="the total was read again after the lock was released, when another call had "
                    "already added its points: report the total you computed and put under the lock",
                )
        total, chain = seeds.get(user, 0), True
        for value, points in sorted(reported, key=lambda r: (r[0] is None, r[0] or 0)):
            chain = chain and value == total + points
            total = value if value is not None else total
        if not chain:
            raise fail(
                f"the totals {user}'s calls reported do not add up one call after another",
                expected=f"each call says '{user} has N points' with N its own new total (from "
                f"{seeds.get(user, 0)}, adding {sorted(p for _, p in reported)} in some order)",
                observed=f"(total, points) {sorted(reported, key=str)}",
                where=section(LESSON, SHARED),
                why="compute the total inside the lock, from the `get` you did under it, and keep the "
                "answer's text `f'{user} has {total} points'`",
            )


def case_points_at_once(tool: Any, scenario: _Scenario, path: str) -> None:
    store = _Store(_Gate(len(scenario.calls)))
    for user, total in scenario.seeds:
        InMemoryStore.batch(store, [PutOp(("scores",), user, {"total": total})])  # not a call: not held
    outcomes = _play(tool, scenario.requests, path, store)
    _judge_points(scenario, outcomes, store, path)


def check_add_points(add_points: Any) -> str:
    scenario = draw_points(rng())
    cases = Cases("q2")
    with cases.case("a tool the model calls with `points` only"):
        case_is_a_tool(add_points, "add_points", {"points"}, coroutine=False)
    if cases.failed:
        return cases.result("")
    for path in ("invoke", "ainvoke"):
        cases.run(
            f"3 requests of 2 users at once under `{path}` (one user twice, one total already stored)",
            lambda path=path: case_points_at_once(add_points, scenario, path),
        )
    return cases.result(
        f"all {len(cases.items)} cases passed: no update lost and every reported total consistent, with one "
        "user's calls at once in one batch and in two requests, under invoke and ainvoke."
    )


q2 = Exercise(
    "15",
    "q2",
    ("add_points",),
    check_add_points,
    (
        "The loss happens between the `get` and the `put`: while one call holds the old total, another "
        "reads the same one. Only one call at a time may be between them.",
        "Make `SCORES_LOCK = threading.Lock()` once, at module level (one lock inside the tool is a new "
        "lock per call and stops nothing), and put the `get`, the addition and the `put` inside "
        "`with SCORES_LOCK:`. A sync tool runs in a thread pool: `threading.Lock`, not `asyncio.Lock`.",
    ),
)


# -- q3: audit ----------------------------------------------------------------------------------------
def draw_audit(rng: random.Random) -> _Scenario:
    """Four requests at once on one event loop: one user twice, 2+1+1+2 calls, request ids drawn."""
    one, two, three = rng.sample(USERS, 3)
    events = rng.sample(EVENTS, 6)
    plan = [
        (one, [{"event": events[0]}, {"event": events[1]}]),
        (two, [{"event": events[2]}]),
        (one, [{"event": events[3]}]),
        (three, [{"event": events[4]}, {"event": events[5]}]),
    ]
    return _Scenario(_requests(rng, plan))


def _request_of(scenario: _Scenario) -> dict[str, str]:
    return {c.id: r.request_id for r in scenario.requests for c in r.calls}


def case_audit_at_once(tool: Any, scenario: _Scenario, channels: tuple) -> None:
    async def serve() -> tuple[list[_Outcome], _AsyncStore]:
        store = _AsyncStore()
        return await _serve_loop(_graph(tool, store), scenario.requests, tool.name, channels), store

    outcomes, store = run_learner(serve, name="audit (requests at once, ainvoke)")
    _first_error(outcomes, f"{len(scenario.requests)} requests at once under `ainvoke`")
    answers = _answers(outcomes)
    for call in scenario.calls:
        _content(answers[call.id], call)
    early = [op.key for op in store.log.ops if op.kind == "answered" and not op.value]
    if early:
        raise fail(
            "the answer came before the write: await aput",
            expected="each call's record in the store by the time its answer comes back",
            observed=f"call {early[0]} answered with {shorten(repr(answers[early[0]].content), 60)} while "
            f"its record was not in the store yet ({len(early)} call(s) like it)",
            where=section(LESSON, ASYNC_STORE),
            why="`aput` not awaited (`asyncio.ensure_future(...)`, `create_task(...)`) runs later, if ever: "
            "the model is told it is done when it is not, and a failing write is never seen. "
            "`await runtime.store.aput(...)` before you answer",
        )
    rid = _request_of(scenario)
    items = store.items()
    # as it happened: the request whose task made each write (REQUEST_ID in that task at the time)
    wrote_from = {op.key: op.request for op in store.log.ops if op.kind == "put"}
    wrong = [
        (key, v.get("request")) for (_, key), v in items.items()
        if type(v) is dict and key in rid and v.get("request") != rid[key]
    ]  # fmt: skip
    if wrong and any(type(t) is not str for _, t in wrong):
        key, tag = next((k, t) for k, t in wrong if type(t) is not str)
        raise fail(
            "a record's request id is not a str",
            expected="each record tagged with the id of the request its call belongs to, a str",
            observed=f"call {key} tagged {tag!r} (a {type(tag).__name__})",
            where=section(LESSON, THREADS),
            why="the request id is `REQUEST_ID.get()`, read inside the call: it is always set, a str "
            "(`getattr(request_local, 'id', None)` and the like give None where the web layer set nothing)",
        )
    strange = [(k, t) for k, t in wrong if t != NO_REQUEST and t not in rid.values()]
    if strange:
        key, tag = strange[0]
        raise fail(
            "a record carries no request's id",
            expected="each record tagged with the id of the request its call belongs to",
            observed=f"call {key}, written from request {wrote_from.get(key, '?')}, tagged {tag!r}, an id no "
            f"request of this wave has ({len(strange)} record(s) like it)",
            where=section(LESSON, THREADS),
            why="the request id is the one the web layer set in `REQUEST_ID`: read `REQUEST_ID.get()` inside "
            "the call (the run's id or config is not the request's id)",
        )
    if wrong:
        key, tag = wrong[0]
        default = all(t == NO_REQUEST for _, t in wrong)
        raise fail(
            "a record carries another request's id",
            expected="each record tagged with the id of the request its call belongs to",
            observed=f"call {key}, written from request {wrote_from.get(key, '?')}, tagged {tag!r} "
            f"({len(wrong)} record(s) like it)",
            where=section(LESSON, THREADS) if default else section(LESSON, ASYNC),
            why=f"{NO_REQUEST!r} is the ContextVar's default: read `REQUEST_ID.get()` inside the call, not "
            "when the cell runs"
            if default
            else "a value every request on the loop shares — `request_local` (the loop's one thread) or a "
            "global — holds whichever request set it last. Read `REQUEST_ID.get()` in the call: each "
            "request's task has its own copy",
        )
    judge_items(
        scenario, items, "audit", {"event": str, "request": str},
        lambda c: {"event": c.arg("event"), "request": rid[c.id]},
    )  # fmt: skip


def case_channels(request_id: Any, local: Any) -> tuple:
    """The notebook's `REQUEST_ID` and `request_local`, which the web layer sets too: exactly a
    ContextVar named REQUEST_ID and a threading.local, else the setup cell's import was changed."""
    if type(request_id) is not contextvars.ContextVar or request_id.name != "REQUEST_ID":
        raise fail(
            "`REQUEST_ID` is not the web layer's ContextVar any more",
            expected="`REQUEST_ID` as the setup cell imports it (a ContextVar the web layer sets)",
            observed=f"a {type(request_id).__name__}",
            where=section(LESSON, THREADS),
            why="run the setup cell again, and do not rebind `REQUEST_ID`: read it with `REQUEST_ID.get()`",
        )
    if type(local) is not threading.local:
        raise fail(
            "`request_local` is not the web layer's threading.local any more",
            expected="`request_local` as the setup cell imports it",
            observed=f"a {type(local).__name__}",
            where=section(LESSON, THREADS),
        )
    return tuple(c for c in (request_id, local) if c is not REQUEST_ID and c is not request_local)


def check_audit(audit: Any, request_id: Any, local: Any) -> str:
    scenario = draw_audit(rng())
    cases = Cases("q3")
    with cases.case("an async tool the model calls with `event` only"):
        case_is_a_tool(audit, "audit", {"event"}, coroutine=True)
        channels = case_channels(request_id, local)
    if cases.failed:
        return cases.result("")
    cases.run(
        "4 requests of 3 users at once on one event loop (one user twice), an async store",
        lambda: case_audit_at_once(audit, scenario, channels),
    )
    return cases.result(
        "all 2 cases passed: each record under its caller and call id, tagged with its own request, "
        "written with `await aput` while four requests shared one event loop."
    )


q3 = Exercise(
    "15",
    "q3",
    ("audit", "REQUEST_ID", "request_local"),
    check_audit,
    (
        "Two values, two sources: who is calling comes from `runtime.context`, the request id from the "
        "web layer's `REQUEST_ID` ContextVar. An async tool awaits the store: "
        "`await runtime.store.aput(...)`.",
        '`await runtime.store.aput(("audit", runtime.context.user), runtime.tool_call_id, {"event": event, '
        '"request": REQUEST_ID.get()})`, read inside the call. Not `request_local.id`: under `ainvoke` every '
        "request's tasks run on the loop's one thread, so it holds whichever request set it last.",
    ),
)


# -- trying a tool from the notebook -------------------------------------------------------------------
def try_requests(tool: Any, requests: list, *, path: str = "invoke", store: bool = True) -> dict:
    """Run several requests through `tool` at once, as the checks do; return what happened.

    Args:
        tool: the tool to try.
        requests: `[(user, [args, ...]), ...]`, one graph run per request, each a batch of calls of
            `tool` with those arguments (`user=None`: a run without `context=`).
        path: `"invoke"` (a thread per request) or `"ainvoke"` (one event loop).
        store: False for a graph compiled without a store.

    Returns:
        `{"answers": [[content, ...] per request], "store": {(namespace, key): value}}`; a request
        that raised has the exception, described, in place of its answers.

    Example:
        ```python
        try_requests(save_note, [("ann", [{"text": "likes tea"}]), ("bob", [{"text": "has a cat"}])])
        ```
    """
    rng = random.Random(0)
    plan = [(user, [dict(a) for a in args]) for user, args in requests]
    ids = iter(_ids(rng, sum(len(a) for _, a in plan)))
    reqs = tuple(
        _Request(user, f"req-{n}", tuple(_Call(next(ids), user or "", tuple(a.items())) for a in args))
        for n, (user, args) in enumerate(plan, 1)
    )
    async_tool = getattr(tool, "func", None) is None and getattr(tool, "coroutine", None) is not None
    if async_tool and path == "ainvoke" and store:

        async def serve() -> tuple:
            kept = _AsyncStore()
            return await _serve_loop(_graph(tool, kept), reqs, tool.name), kept

        outcomes, kept = run_learner(serve, name=f"{tool.name} (try_requests)")
    else:
        kept = _Store(_Gate(sum(len(r.calls) for r in reqs), idle=TRY_IDLE)) if store else None
        outcomes = _play(tool, reqs, path, kept)
    return {
        "answers": [
            describe_exception(o.error)
            if o.error is not None
            else [o.messages[c.id].content for c in o.request.calls]
            for o in outcomes
        ],
        "store": dict(sorted(kept.items().items(), key=str)) if kept is not None else None,
    }


__all__ = ["REQUEST_ID", "Caller", "q1", "q2", "q3", "request_local", "try_requests"]
