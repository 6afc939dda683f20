"""Lab 02 — Build a tool node (after `notebooks/02_custom_async_tool_node.ipynb`).

q1: `MyToolNode(tools, *, timeout=None, max_concurrency=None)`, an async callable taking
    `{"messages": [...]}` and returning `{"messages": [ToolMessage, ...]}` for the tool calls of the
    LAST message.

The check draws one scenario (`_Check`: ids, names, the timeout, two concurrency limits, how many
calls, ...) and runs every case on it, each a small module-level function (`_case_*`, listed in
`CASES`) that raises `fail(...)`: unknown names (one that contains an allowed name), bad arguments,
a raising tool, a hanging tool (under the node's timeout and under a tenth of it), a tool that
raises its own `TimeoutError`, a slow call under `timeout=None`, 12–16 calls without a limit, two
different concurrency limits (so no constant of the learner's own passes both) and that each run
has its own, two turns of a real `StateGraph`, and an `interrupt()` inside a tool, which must pause
the graph through the node (a `GraphBubbleUp` let through, not answered as an error) and, on
resume, answer with the human's reply. Every case is on every run; only names and numbers vary.

What happened is read from the course's side as it happens: a `Probe` records every tool run
(started, returned, raised, cancelled, and whether it was still running when the node returned), a
`LoopWatch` the timers the node set and which one cut a call, and the graph's own
`astream(stream_mode="updates")` says what the node wrote and whether the run paused. Answers are
read only as plain `ToolMessage`s with `str` fields; time limits grow with the drawn work.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

import helpers.labs as core
from helpers.cities import attraction_report, weather_report
from helpers.labs import Cases, CheckFailed, Exercise, fail, run_learner, section, shorten

STEP = 0.02
TIMEOUT = 1.0
"""The node's deadline in the check (drawn within ±10 % of this): far above a call (0.02 s) plus a
0.3 s stall of a machine whose cores are both busy."""
HANG = 3.0
"""Seconds the hanging tool waits: far beyond the deadline, so a node that ignores it is seen."""
SHORTER = 10
"""A second node gets `timeout / SHORTER`: its hanging call must be cut that much sooner, so a
deadline of the learner's own (a number, not `self.timeout`) is seen."""
NO_DEADLINE = 1.5
"""Seconds a slow call takes in the `timeout=None` case: it must be waited for, not cut. Above the
largest deadline drawn (1.1 s), so `self.timeout or 1.0` is seen; a default above 1.5 s is not."""
LESSON = "02_custom_async_tool_node"
GATEWAY_MESSAGE = "upstream gateway timed out (the tool's own error)"
NODE = section(LESSON, "4. Production-minded: `CustomAsyncToolNode`")
ALLOW = section(LESSON, "2. The allow-list")
ERRORS = section(LESSON, "Errors answer their own call")
DEADLINE = section(LESSON, "A per-call deadline")
OWN_TIMEOUT = section(LESSON, "Our deadline, or the tool's own `TimeoutError`?")
LIMITED = section(LESSON, "A concurrency limit")
GRAPH = section(LESSON, "5. As a node in a `StateGraph`")
INTERRUPT = section(LESSON, "An interrupt passes through")
GATHER = section("01_sequential_vs_gather", "2. `asyncio.gather`: overlap the waits")


@dataclass
class Timer:
    """A timer the learner's node set on the check's loop (`loop.call_at`, which `call_later`,
    `asyncio.timeout`, `wait_for`, `wait` and anyio all use): when it was due and set, and, once it
    fired, the loop's wait and turn counts and its clock at that moment."""

    when: float
    set_at: float
    fired: int | None = None
    fired_turn: int = 0
    fired_at: float = 0.0


CAUSE_TURNS = 25
"""A timer caused a cancellation only if it fired at most this many turns of the loop before it:
a deadline's cut reaches the tool within 1 to 4 turns in every correct node the suite tries
(asyncio.timeout, wait_for, wait, call_later, anyio, a TaskGroup); a node that spins before it
cancels (`await asyncio.sleep(0)` in a loop) takes thousands."""
CAUSE_SECONDS = 0.7
"""... and at most this many seconds of the loop's clock before it: a stall of the machine (0.3 s)
can fall in those few turns, twice; a node that blocks the loop (`time.sleep`) after its
deadline fired, before it cancels, is not let through."""


class LoopWatch:
    """What the check's event loop did: every timer set on it, its turns, and how often it waited.

    The loop "waits" when it asks its selector for events with a timeout that is not 0: it had
    nothing ready to run. A timer that fired after the loop's last wait, a few turns before a
    cancellation, is what caused it: a loaded machine adds seconds, never a wait, so this needs
    no margin of time beyond `CAUSE_SECONDS`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.waits = self.turns = 0
        self.timers: list[Timer] = []
        selector = getattr(loop, "_selector", None)  # CPython's selector and proactor loops
        self.watching = selector is not None and hasattr(selector, "select")
        if not self.watching:
            return
        watch, call_at = self, loop.call_at

        class Counting:
            def __getattr__(self, name: str) -> Any:
                return getattr(selector, name)

            def select(self, timeout: float | None = None) -> Any:
                watch.turns += 1
                if timeout is None or timeout > 0:
                    watch.waits += 1
                return selector.select(timeout)

        @functools.wraps(call_at)
        def watched_call_at(when: Any, callback: Any, *args: Any, context: Any = None) -> Any:
            if (
                not isinstance(when, (int, float))
                or not callable(callback)
                or inspect.iscoroutinefunction(callback)
            ):
                return call_at(when, callback, *args, context=context)  # asyncio's own errors
            timer = Timer(float(when), loop.time())
            watch.timers.append(timer)
            return call_at(when, _Fired(callback, timer, watch, loop), *args, context=context)

        loop._selector = Counting()  # noqa: SLF001 - the loop is the check's own
        loop.call_at = watched_call_at  # type: ignore[method-assign]

    def causes(self, now: float) -> list[Timer]:
        """The timers that caused a cancellation seen at loop time `now`: fired since the loop last
        waited, within `CAUSE_TURNS` turns and `CAUSE_SECONDS`, and set for a time still to come (a
        timer set once its moment had passed, `loop.call_at(deadline, task.cancel)` long after
        `deadline`, is a late reaction, not the deadline)."""
        return [
            t
            for t in self.timers
            if t.fired == self.waits
            and self.turns - t.fired_turn <= CAUSE_TURNS
            and now - t.fired_at <= CAUSE_SECONDS
            and t.when >= t.set_at - 0.02
        ]


class _Fired:
    """A timer's callback, noting when it runs; equal to the callback it wraps (as asyncio's
    handles compare their callbacks)."""

    def __init__(
        self, callback: Any, timer: Timer, watch: LoopWatch, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.callback, self.timer, self.watch, self.loop = callback, timer, watch, loop

    def __call__(self, *args: Any) -> Any:
        self.timer.fired, self.timer.fired_turn = self.watch.waits, self.watch.turns
        self.timer.fired_at = self.loop.time()
        return self.callback(*args)

    def __eq__(self, other: object) -> bool:
        return self.callback == (other.callback if isinstance(other, _Fired) else other)

    def __hash__(self) -> int:
        return hash(self.callback)

    def __repr__(self) -> str:
        return repr(self.callback)


def watched_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop with a `LoopWatch` (as its `lab_watch`): the loop the check drives nodes on."""
    loop = asyncio.new_event_loop()
    loop.lab_watch = LoopWatch(loop)  # type: ignore[attr-defined]
    return loop


def _watch() -> LoopWatch | None:
    watch = getattr(asyncio.get_running_loop(), "lab_watch", None)
    return watch if isinstance(watch, LoopWatch) and watch.watching else None


@dataclass
class Run:
    """One run of a tool, as the course's probe saw it."""

    tool: str
    args: dict
    start: float
    end: float | None = None
    outcome: str = "running"  # "returned" | "raised" | "cancelled" | "running"
    started_at: float | None = None
    """The loop's clock when the tool started."""
    since: float | None = None
    """The loop's clock when the node was called (`Probe.since`)."""
    causes: list[Timer] | None = None
    """When cancelled on a watched loop: the timers that caused it (`LoopWatch.causes`)."""
    cancelled_at: float | None = None
    """The loop's clock when the tool saw its `CancelledError`."""

    def cut_by(self, timeout: float) -> tuple[str, float]:
        """Which timer cut this cancelled run, against a node `timeout`: (verdict, seconds).

        The node's own deadline is due `timeout` after the call began, which is between the node's
        call and the tool's start (a stall there can only move it later), plus a tenth of it for a
        deadline a node checks in steps. The seconds are counted from the node's call:
        - ("early", s): the cut itself came `s` seconds after the call, before `timeout` (on the
          loop's own clock: a loaded machine only makes a cut later);
        - ("its deadline", s): a timer due `s` seconds after the call, within that window, cut it;
        - ("late", s): the timer that cut it was due later than that;
        - ("untimed", 0.0): no timer explains the cut, or the loop is not watched (the check then
          times the cut).
        """
        if not self.causes or self.since is None or self.started_at is None or self.cancelled_at is None:
            return "untimed", 0.0
        if self.cancelled_at < self.since + timeout - 0.02:  # 0.02: a coarse clock's step (Windows)
            return "early", self.cancelled_at - self.since
        high = self.started_at + timeout * 1.1 + 0.005
        due = min(t.when for t in self.causes)
        return ("its deadline" if due <= high else "late"), due - self.since


class Probe:
    """Records every tool run (from any thread): when it started and how it ended."""

    def __init__(self) -> None:
        self.origin = time.perf_counter()
        self.runs: list[Run] = []
        self.since: float | None = None
        """The loop's clock when the node was last called (set by `_drive`)."""
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.perf_counter() - self.origin

    def tool(self, name: str, description: str, body: Any) -> BaseTool:
        """An async tool `name` whose coroutine `body(**args)` is recorded."""

        async def run(**kwargs: Any) -> str:
            loop = asyncio.get_running_loop()
            record = Run(name, dict(kwargs), self.now(), started_at=loop.time(), since=self.since)
            with self._lock:
                self.runs.append(record)
            try:
                value = await body(**kwargs)
            except asyncio.CancelledError:
                record.outcome = "cancelled"
                watch, record.cancelled_at = _watch(), loop.time()
                record.causes = None if watch is None else watch.causes(record.cancelled_at)
                raise
            except BaseException:
                record.outcome = "raised"
                raise
            else:
                record.outcome = "returned"
                return value
            finally:
                record.end = self.now()

        schema = _schema(name, body)
        return StructuredTool.from_function(
            coroutine=run, name=name, description=description, args_schema=schema, infer_schema=False
        )

    def of(self, name: str) -> list[Run]:
        return [r for r in self.runs if r.tool == name]

    def peak(self, runs: list[Run] | None = None) -> int:
        runs = self.runs if runs is None else runs
        events = sorted([(r.start, 1) for r in runs] + [(r.end or 1e9, -1) for r in runs])
        running = peak = 0
        for _, step in events:
            running += step
            peak = max(peak, running)
        return peak


_SCHEMAS_LOCK = threading.Lock()


def _schema(name: str, body: Any) -> Any:
    """The args schema of a tool `name` with `body`'s signature (built once: pydantic is slow).

    Built under a lock: langchain-core silences a pydantic deprecation warning around the build with
    `warnings.catch_warnings()`, which is not thread-safe, so two checks building schemas in two
    threads at once could let the warning through (as an error where warnings are errors).
    """
    with _SCHEMAS_LOCK:
        return _built_schema(_Keyed((name, str(inspect.signature(body))), body))


class _Keyed:
    """A tool body carried with the cache key it is looked up by (its name and signature)."""

    def __init__(self, key: tuple[str, str], body: Any) -> None:
        self.key, self.body = key, body

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Keyed) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


@functools.cache
def _built_schema(keyed: _Keyed) -> Any:
    name = keyed.key[0]
    return StructuredTool.from_function(coroutine=keyed.body, name=name, description=name).args_schema


SEARCH_NAMES = ("slow_search", "web_search", "search_archive", "deep_search", "crawl_pages")
"""Names the hanging tool is given (drawn per check, so no answer can single it out by name)."""


def make_tools(
    probe: Probe | None = None, *, nonce: str = "", hang: float | None = None, search: str = "slow_search"
) -> list[BaseTool]:
    """The five tools the lab's node is tried with: weather, attraction, a failing traffic tool,
    a hanging search named `search` and a gateway that raises its own TimeoutError (recorded by
    `probe`)."""
    probe = probe or Probe()
    hang = HANG if hang is None else hang
    tag = f" [{nonce}]" if nonce else ""

    async def lookup_weather(city: str) -> str:
        await asyncio.sleep(STEP)
        return weather_report(city)

    async def lookup_attraction(city: str) -> str:
        await asyncio.sleep(STEP)
        return attraction_report(city)

    async def lookup_traffic(city: str) -> str:
        raise ConnectionError(f"traffic service unreachable for {city}{tag}")

    async def slow_search(query: str) -> str:
        await asyncio.sleep(hang)
        return f"results for {query}"

    async def call_gateway(path: str) -> str:
        raise TimeoutError(f"{GATEWAY_MESSAGE}{tag}")

    return [
        probe.tool("lookup_weather", "Look up today's weather for a city, e.g. Paris.", lookup_weather),
        probe.tool("lookup_attraction", "Look up the main attraction of a city.", lookup_attraction),
        probe.tool(
            "lookup_traffic", "Look up live traffic for a city (its service is down).", lookup_traffic
        ),
        probe.tool(search, "Search the web.", slow_search),
        probe.tool(
            "call_gateway", "Call an upstream gateway (it raises its own TimeoutError).", call_gateway
        ),
    ]


def make_timed(probe: Probe, n: int) -> list[BaseTool]:
    async def wait(x: int) -> str:
        await asyncio.sleep(STEP * 2)
        return f"done {x}"

    return [probe.tool(f"t{i:02d}", "Wait a little.", wait) for i in range(n)]


class Batch:
    """An AIMessage asking for `calls` (`(name, args)`), ids drawn at random."""

    def __init__(self, rng: random.Random, calls: list[tuple[str, dict]]) -> None:
        self.ids = [f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:10]}" for _ in calls]
        self.ai = AIMessage(
            "",
            tool_calls=[
                {"name": n, "args": dict(a), "id": i, "type": "tool_call"}
                for i, (n, a) in zip(self.ids, calls, strict=True)
            ],
        )


@dataclass
class Outcome:
    messages: list[ToolMessage]
    seconds: float
    running_at_return: list[str]


def _drive(node: Any, probe: Probe, history: list, *, limit: float | None = None) -> Any:
    """Run `await node({"messages": history})` on a fresh loop; note what was still running."""

    state = {"messages": list(history)}
    try:
        inspect.signature(node).bind(state)
    except TypeError as exc:
        raise fail(
            "your node cannot be called as `node(state)`",
            expected="`async def __call__(self, state)`: one argument, the graph's state",
            observed=f"your node's signature is {core._signature(node) or '?'}: {exc}",
            where=NODE,
            why="LangGraph and the check call the node with the state alone: keep the signature the "
            "exercise gives",
        ) from None
    except ValueError:
        pass

    async def your_node() -> tuple[Any, float, list[str]]:
        start = time.perf_counter()
        probe.since = asyncio.get_running_loop().time()
        out = node(state)
        if not inspect.isawaitable(out):
            raise fail(
                "the node must be awaitable: `async def __call__(self, state)`",
                expected="`await node(state)` to give {'messages': [...]}",
                observed=f"node(state) returned {shorten(_repr(out), 120)} without awaiting anything",
                where=NODE,
                why="a plain `def __call__` cannot run the calls together with `asyncio.gather`",
            )
        out = await out
        took = time.perf_counter() - start
        for _ in range(3):  # a `task.cancel()` without awaiting the task is delivered on the next turns
            await asyncio.sleep(0)
        return out, took, [r.tool for r in probe.runs if r.outcome == "running"]

    return run_learner(your_node, limit=limit, name="your node", loop_factory=watched_loop)


def _repr(value: Any) -> str:
    """`repr(value)`; a learner object whose `__repr__` raises is named, not raised."""
    try:
        text = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the learner's own __repr__
        return f"<a {type(value).__name__} whose repr() raised {type(exc).__name__}>"
    return text if type(text) is str else f"<a {type(value).__name__}>"


def _plain(m: Any) -> bool:
    """A ToolMessage of the plain kind the exercise asks for: the class itself, `str` fields."""
    return type(m) is ToolMessage and all(type(v) is str for v in (m.content, m.status, m.tool_call_id))


def _outcome(
    node: Any, probe: Probe, history: list, ids: list[str], *, limit: float | None = None
) -> Outcome:
    """Drive the node; raise `CheckFailed` (via `fail`) unless it answered exactly `ids` in order,
    each with a plain ToolMessage."""
    out, took, running = _drive(node, probe, history, limit=limit)
    messages = out.get("messages") if type(out) is dict else None
    if type(messages) is not list or not all(_plain(m) for m in messages):
        odd = [m for m in messages if not _plain(m)] if type(messages) is list else []
        raise fail(
            "the node must return {'messages': [ToolMessage, ...]}",
            expected="{'messages': [ToolMessage(...), ...]}: a dict, a list, ToolMessages with `str` content",
            observed=f"an answer that is a {type(odd[0]).__name__}: {shorten(_repr(odd[0]), 200)}"
            if odd
            else shorten(_repr(out)),
            where=NODE,
            why="None means `__call__` has no `return`"
            if out is None
            else "build each answer as `ToolMessage(str(result), name=..., tool_call_id=call['id'])`"
            if odd
            else "",
        )
    got = [m.tool_call_id for m in messages]
    if got != ids:
        extra = [i for i in got if i not in ids]
        raise fail(
            "one answer per call of the last message, in call order, with the call's id",
            expected=f"tool_call_ids {ids}",
            observed=f"{got}",
            where=NODE,
            why="the extra answers are for calls of an EARLIER AIMessage: answer only "
            "`state['messages'][-1].tool_calls`"
            if extra and any(i.startswith("call_") for i in extra)
            else (
                "the right answers in completion order: keep the order of the calls (`gather` does)"
                if sorted(got) == sorted(ids)
                else ""
            ),
        )
    return Outcome(messages, took, running)


def _state(m: ToolMessage) -> str:
    return f"status={m.status!r}, content={shorten(m.content, 160)!r}"


DEADLINE_WORDS = re.compile(
    r"longer than|too long|more than|deadline|timed out|time ?limit|\btime-?out\b|exceeded|"
    r"did not finish|didn't finish|ran out of time",
    re.IGNORECASE,
)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)")
"""A number standing alone (not a digit inside a hex id such as the nonce)."""


def _mentions_deadline(text: str, timeout: float) -> bool:
    """Does `text` speak of the node's deadline: the timeout as a number, or words of a time limit?"""
    numbers = [float(n) for n in NUMBER.findall(text)]
    return any(abs(n - timeout) < 0.005 for n in numbers) or bool(DEADLINE_WORDS.search(text))


def _template(text: str, *remove: str) -> str:
    """`text` with the tool-specific parts removed, to compare two answers' wording."""
    for part in sorted(remove, key=len, reverse=True):
        if part:
            text = text.replace(part, "")
    text = re.sub(r"\w*(Error|Exception)\((.|\n)*?\)", "", text)
    return re.sub(r"[\W\d_]+", " ", text).strip().lower()


def _deadline_verdict(cuts: list[tuple[str, float, float, float | None]]) -> str | None:
    """None if both hanging calls were cut at the node's own `timeout`, else what went wrong.

    `cuts` are (verdict, delay) of `Run.cut_by`, the node's timeout and the cut's length, for the
    node built with `timeout` and the one built with a tenth of it. A cut judged by its timer needs
    no margin of time. One no timer explains ("untimed": a loop the check cannot watch, or a cut
    that came from another thread) is timed instead: a stall (0.3 s) between the deadline's start
    and the tool's can shorten it by as much, and stalls after it lengthen it (three allowed on the
    long cut, two on the short one); and the short cut must come well before the long one, so a
    number of the learner's own (the same for both) is seen. A floor such as `max(timeout, 0.5)`
    is seen only by the timers.
    """
    for way, delay, value, _cut in cuts:
        if way == "early":
            return (
                f"with timeout={value:g} it was cut {delay:.2f} s after the node was called: a deadline "
                "shorter than the timeout"
            )
        if way == "late":
            return (
                f"with timeout={value:g} a timer due {delay:.2f} s after the node was called cut it: a "
                "deadline longer than the timeout, or a wait after it"
            )
    (way, _, timeout, cut), (short_way, _, short, cut_short) = cuts
    if way == "untimed" and not timeout - 0.35 <= cut <= timeout + 0.9:
        return f"timed, as no timer explains it: {cut:.2f} s is not about {timeout:g} s"
    if short_way == "untimed" and cut_short is not None and cut_short > short + 0.65:
        return f"timed, as no timer explains it: {cut_short:.2f} s is not about {short:g} s"
    if "untimed" in (way, short_way) and cut_short is not None and cut_short > cut * 0.75:
        return "timed, as no timer explains it: the cut did not come sooner with a tenth of the timeout"
    return None


# -- the drawn scenario every case shares --------------------------------------------------------------
CITIES = ("Paris", "London", "Tokyo")
NEAR_NAMES = ("lookup_weather_v2", "admin_lookup_weather", "lookup_weathers")
"""Unknown names that contain or resemble an allowed one (one is drawn every run)."""
APPROVAL_NAMES = ("delete_file", "send_payment", "drop_table", "close_account")
"""Names the tool that asks a human first (`interrupt()`) is given (drawn every run)."""
LIMITS = (2, 3, 4, 5)
"""Two different concurrency limits are drawn from these every run, so no constant passes both."""
MANY = (12, 16)
"""How many independent calls the run without a limit gets (drawn in this range)."""


@dataclass
class _Check:
    """One check: what it drew (names, ids, the timeout, two limits, ...) and what the cases share.

    Every case runs on every check; only names, ids, delays and numbers are drawn."""

    MyToolNode: Any  # noqa: N815 - the learner's class
    rng: random.Random
    nonce: str
    timeout: float
    search: str
    """The hanging tool's name."""
    city: str
    other: str
    near: str
    approval: str
    limits: tuple[int, int]
    many: int
    probe: Probe = field(default_factory=Probe)
    node: Any = None
    """The learner's node built with `timeout` around the five tools (recorded by `probe`)."""
    deadline_text: str = ""
    """What the node answered the hanging call (set by the deadline case)."""
    limited: dict = field(default_factory=dict)
    """The first limit's node, probe and tools (set by the limit case once it holds)."""

    def tools(self, probe: Probe | None = None, **kwargs: Any) -> list[BaseTool]:
        return make_tools(probe or self.probe, nonce=self.nonce, search=self.search, **kwargs)

    def batch(self, calls: list[tuple[str, dict]]) -> Batch:
        return Batch(self.rng, calls)

    def build(self, tools: list[BaseTool], **kwargs: Any) -> Any:
        return run_learner(self.MyToolNode, tools, name="MyToolNode", **kwargs)


def _draw(MyToolNode: Any) -> _Check:  # noqa: N803 - the learner's class name
    rng = core.rng()  # the check's own generator: no patch of `random` reaches it
    city, other = rng.sample(CITIES, 2)
    return _Check(
        MyToolNode,
        rng,
        nonce=uuid.UUID(int=rng.getrandbits(128)).hex[:6],
        timeout=round(TIMEOUT * rng.uniform(0.9, 1.1), 2),
        search=rng.choice(SEARCH_NAMES),
        city=city,
        other=other,
        near=rng.choice(NEAR_NAMES),
        approval=rng.choice(APPROVAL_NAMES),
        limits=tuple(rng.sample(LIMITS, 2)),
        many=rng.randint(*MANY),
    )


def _limit(seconds: float) -> float:
    """A run's time limit: the course's, or more when the drawn work done one call after another is long."""
    return core.scaled_limit(seconds)


# -- the cases: each reads the drawn check and raises `fail(...)` ---------------------------------------
def _case_unknown_names(c: _Check) -> None:
    """Never run anything for an unknown name; answer it with the allowed tools."""
    allowed = [t.name for t in c.tools(Probe())]
    batch = c.batch(
        [
            (c.near, {"city": c.other}),
            ("delete_everything", {"path": "/"}),
            ("lookup_weather", {"city": c.city}),
        ]
    )
    before = len(c.probe.runs)
    got = _outcome(c.node, c.probe, [HumanMessage("go"), batch.ai], batch.ids)
    ran = c.probe.runs[before:]
    if len(ran) > 1:
        raise fail(
            "a tool ran for an unknown name",
            expected=f"nothing run for {c.near!r} or 'delete_everything'; lookup_weather run once",
            observed=f"runs: {[f'{r.tool}({r.args})' for r in ran]}",
            where=ALLOW,
            why="look the name up exactly (`tools_by_name.get(name)`): a name that merely contains, "
            "or resembles, an allowed one must not run it",
        )
    for m, name in zip(got.messages[:2], (c.near, "delete_everything"), strict=True):
        missing = [a for a in allowed if a not in m.content]
        if m.status != "error" or missing:
            raise fail(
                f"the answer to the unknown name {name!r} must be an error listing the allowed tools",
                expected=f"status='error' and every allowed name ({', '.join(allowed)}) in the content",
                observed=_state(m) + (f"; missing: {', '.join(missing)}" if missing else ""),
                where=ALLOW,
                why="the model can only correct itself if it sees which tools exist",
            )
    if got.messages[2].status == "error" or got.messages[2].content != weather_report(c.city):
        raise fail(
            "the allowed call beside the unknown ones must succeed",
            expected=f"ToolMessage({weather_report(c.city)!r})",
            observed=_state(got.messages[2]),
            where=ALLOW,
        )


def _case_failures(c: _Check) -> None:
    """Bad arguments and a raising tool answer their own call; the call beside them succeeds."""
    batch = c.batch(
        [
            ("lookup_weather", {"town": c.city}),
            ("lookup_traffic", {"city": c.other}),
            ("lookup_attraction", {"city": c.city}),
        ]
    )
    got = _outcome(c.node, c.probe, [HumanMessage("go"), batch.ai], batch.ids)
    bad_args, raised, good = got.messages
    if bad_args.status != "error":
        raise fail(
            "bad arguments need an error answer",
            expected="ToolMessage(status='error') for lookup_weather(town=...)",
            observed=_state(bad_args),
            where=ERRORS,
        )
    text = f"traffic service unreachable for {c.other} [{c.nonce}]"
    if raised.status != "error" or text not in raised.content:
        raise fail(
            "a tool's exception needs an error answer carrying the exception's own text",
            expected=f"status='error', content containing {text!r}",
            observed=_state(raised),
            where=ERRORS,
            why="put the exception's text in the answer (`repr(exc)` or `str(exc)`), not a message of "
            "your own: the model must see what went wrong"
            if raised.status == "error"
            else "",
        )
    if good.status == "error" or good.content != attraction_report(c.city):
        raise fail(
            "a good call next to failing ones must still succeed",
            expected=f"ToolMessage({attraction_report(c.city)!r}), status 'success'",
            observed=_state(good),
            where=ERRORS,
        )


def _hanging_run(c: _Check) -> tuple[Outcome, Run, ToolMessage]:
    """The hanging call beside a good one, through the node built with `timeout`; the good call
    must succeed and the hanging one must have run."""
    batch = c.batch([(c.search, {"query": "tea"}), ("lookup_attraction", {"city": c.city})])
    before = len(c.probe.runs)
    got = _outcome(c.node, c.probe, [HumanMessage("go"), batch.ai], batch.ids, limit=_limit(HANG))
    search = next((r for r in c.probe.runs[before:] if r.tool == c.search), None)
    slow, good = got.messages
    if search is None:
        raise fail(
            f"the hanging tool {c.search} never ran",
            expected=f"{c.search} run, then cut off (cancelled) after about {c.timeout:g} s",
            observed=f"{c.search} was answered without being run: {_state(slow)}",
            where=DEADLINE,
            why="the check draws the hanging tool's name: run every allowed call and let the deadline "
            "(`async with asyncio.timeout(timeout)`) decide, not the tool's name",
        )
    if good.status == "error" or good.content != attraction_report(c.city):
        raise fail(
            "a good call next to a hanging one must still succeed",
            expected=f"ToolMessage({attraction_report(c.city)!r})",
            observed=_state(good),
            where=DEADLINE,
        )
    return got, search, slow


def _case_hanging(c: _Check) -> None:
    """The hanging call is cancelled at the node's own deadline, and its answer says so."""
    got, search, slow = _hanging_run(c)
    name = c.search
    if search.outcome == "returned":
        raise fail(
            "the node waited for the hanging tool to finish",
            expected=f"{name} cut off after about {c.timeout:g} s (the node's timeout)",
            observed=f"the batch took {got.seconds:.1f} s; {name} answered {_state(slow)}",
            where=DEADLINE,
            why="the node ignored `timeout`: wrap each call in `async with asyncio.timeout(timeout)`",
        )
    if name in got.running_at_return:
        raise fail(
            "the hanging call was answered but never cancelled",
            expected=f"{name} cancelled at the deadline (the tool sees CancelledError)",
            observed=f"{name} was still running when the node returned ({_state(slow)})",
            where=DEADLINE,
            why="`asyncio.wait(..., timeout=...)` only stops WAITING: cancel the pending task "
            "(`task.cancel()`), or use `asyncio.timeout`, which cancels for you",
        )
    if search.outcome != "cancelled":
        raise fail(
            "the hanging call must be cancelled at the deadline",
            expected=f"{name} cancelled (the tool sees CancelledError)",
            observed=f"{name} ended as {search.outcome!r}; answered {_state(slow)}",
            where=DEADLINE,
        )
    if slow.status != "error" or not _mentions_deadline(slow.content, c.timeout):
        raise fail(
            "the deadline's answer must be an error that says the call took too long",
            expected=f"status='error', content saying it took longer than {c.timeout:g} s (the timeout, "
            "or words such as 'took longer than', 'timed out', 'deadline', 'time limit')",
            observed=_state(slow),
            where=DEADLINE,
        )
    c.deadline_text = slow.content
    _case_deadline_is_the_timeout(c, search)


def _case_deadline_is_the_timeout(c: _Check, search: Run) -> None:
    """A node built with a tenth of the timeout cuts that much sooner: the deadline is `timeout`."""
    short = round(c.timeout / SHORTER, 3)
    local = Probe()
    quick = c.build(c.tools(local), timeout=short)
    alone = c.batch([(c.search, {"query": "tea"})])
    again = _outcome(quick, local, [HumanMessage("go"), alone.ai], alone.ids, limit=_limit(HANG))
    rerun = next((r for r in local.runs if r.tool == c.search), None)
    cut = search.end - search.start
    cut_short = None if rerun is None or rerun.end is None else rerun.end - rerun.start
    if rerun is None:
        seen, verdict = "never run", ""
    elif c.search in again.running_at_return:
        ended = "still running" if cut_short is None else f"{rerun.outcome} after {cut_short:.2f} s"
        seen, verdict = f"{ended} when the node returned", "it was not cancelled"
    elif rerun.outcome != "cancelled":
        seen = f"{rerun.outcome} after {cut_short:.2f} s"
        verdict = "it was never cut" if rerun.outcome == "returned" else ""
    else:
        seen = f"cancelled after {cut_short:.2f} s"
        verdict = _deadline_verdict(
            [(*search.cut_by(c.timeout), c.timeout, cut), (*rerun.cut_by(short), short, cut_short)]
        )
    if verdict is None:
        return
    raise fail(
        "the deadline must be the node's `timeout`",
        expected=f"the hanging call cut after about {c.timeout:g} s with timeout={c.timeout:g}, and "
        f"after about {short:g} s with timeout={short:g}",
        observed=f"cut after {cut:.2f} s, and then {seen}" + (f": {verdict}" if verdict else ""),
        where=DEADLINE,
        why="use the `timeout` the node was built with (`self.timeout`), not a number of your own "
        "or one derived from it"
        + ("; cancel every call whose deadline has passed" if verdict == "it was not cancelled" else ""),
    )


def _case_own_timeout(c: _Check) -> None:
    """The tool's own TimeoutError is the tool's error, not the node's deadline (with and without one)."""
    for label, subject in (("with a timeout", c.node), ("with timeout=None", None)):
        if subject is None:
            subject = c.build(c.tools())
        batch = c.batch([("call_gateway", {"path": "/v1"}), ("lookup_weather", {"city": c.city})])
        gate = _outcome(subject, c.probe, [HumanMessage("go"), batch.ai], batch.ids).messages[0]
        text, said = f"{GATEWAY_MESSAGE} [{c.nonce}]", gate.content
        same = bool(c.deadline_text) and _template(said, text, "call_gateway", "/v1") == _template(
            c.deadline_text, c.search, "tea"
        )
        own = said.replace(text, "").replace(repr(text)[1:-1], "")  # the tool's words are not the node's
        claims = _mentions_deadline(own, c.timeout) or (subject is not c.node and "none" in said.lower())
        if gate.status != "error" or text not in said or same or claims:
            raise fail(
                f"the tool's own TimeoutError ({label}) must be reported as the tool's error",
                expected=f"status='error' with the tool's message {text!r}, and no word of the node's "
                "deadline",
                observed=_state(gate),
                where=OWN_TIMEOUT,
                why="`except TimeoutError` around `asyncio.wait_for` catches the tool's own TimeoutError "
                "too, so it is answered as if the deadline had passed: ask `scope.expired()` of "
                "`asyncio.timeout`"
                if same or claims
                else "carry the exception's own text into the answer",
            )


def _case_no_deadline(c: _Check) -> None:
    """With timeout=None a slow call is waited for, not cut."""
    local = Probe()
    subject = c.build(c.tools(local, hang=NO_DEADLINE))
    batch = c.batch([(c.search, {"query": "tea"})])
    got = _outcome(subject, local, [HumanMessage("go"), batch.ai], batch.ids, limit=_limit(NO_DEADLINE))
    run = next((r for r in local.runs if r.tool == c.search), None)
    answer = got.messages[0]
    if run is None or run.outcome != "returned" or answer.status == "error":
        raise fail(
            "with timeout=None no call is cut off",
            expected=f"{c.search} runs its {NO_DEADLINE:g} s and is answered with its result",
            observed=f"{c.search} "
            + ("never ran" if run is None else f"ended as {run.outcome!r}")
            + f"; answered {_state(answer)}",
            where=DEADLINE,
            why="`timeout=None` means no deadline (`asyncio.timeout(None)` never expires): do not put "
            "a default of your own in its place",
        )


def _case_together(c: _Check) -> None:
    """Many independent calls, no limit: every call started before the first one finished."""
    local = Probe()
    timed = make_timed(local, c.many)
    subject = c.build(timed)
    batch = c.batch([(t.name, {"x": i}) for i, t in enumerate(timed)])
    _outcome(subject, local, [HumanMessage("go"), batch.ai], batch.ids, limit=_limit(c.many * STEP * 2))
    first_end = min((r.end for r in local.runs if r.end is not None), default=0.0)
    late = [r.tool for r in local.runs if r.start >= first_end]
    if late:
        peak = local.peak()
        raise fail(
            f"{c.many} independent calls did not run together",
            expected="every call started before the first one finished",
            observed=f"{len(late)} of {c.many} started later (at most {peak} in flight)",
            where=GATHER,
            why="run every call in its own coroutine and `asyncio.gather` them"
            if peak <= 1
            else f"never more than {peak} at once without a limit: with `max_concurrency=None` apply no "
            "cap of your own (`contextlib.nullcontext()` in place of the semaphore)",
        )


def _limit_why(k: int, n: int, peak: int) -> str:
    if peak == n:
        return (
            f"all {n} ran at once: no limit was applied (no semaphore, a new Semaphore per "
            "call, which limits nothing, or the whole `gather` inside one `async with`)"
        )
    if peak > k:
        return (
            f"more than the limit: {peak} at once with max_concurrency={k} — a number of your own in "
            "place of `max_concurrency`, or a semaphore not shared by every call of the run?"
        )
    if peak == k - 1:
        extra = (
            ", or one call at a time (a `Semaphore(1)` of your own, or the calls awaited one by one)"
            if peak == 1
            else ""
        )
        return f"fewer than the limit: an off-by-one (`Semaphore(max_concurrency - 1)`?){extra}"
    if peak == 1:
        return (
            "one call at a time: a `Semaphore(1)` of your own, or the calls awaited one by one "
            "instead of gathered"
        )
    return f"fewer than the limit: {peak} of {k} at once — a limit of your own in place of `max_concurrency`?"


def _case_limited(c: _Check) -> None:
    """max_concurrency=k: exactly k calls in flight at once, for both limits drawn."""
    peaks = []
    for k in c.limits:
        local = Probe()
        timed = make_timed(local, 3 * k)
        subject = c.build(timed, max_concurrency=k)
        batch = c.batch([(t.name, {"x": i}) for i, t in enumerate(timed)])
        _outcome(subject, local, [HumanMessage("go"), batch.ai], batch.ids, limit=_limit(3 * k * STEP * 2))
        peaks.append(local.peak())
        if peaks[-1] == k and not c.limited:
            c.limited.update(node=subject, probe=local, timed=timed, k=k)
    wrong = [(k, peak) for k, peak in zip(c.limits, peaks, strict=True) if peak != k]
    if not wrong:
        return
    k, peak = wrong[0]
    same = peaks[0] == peaks[1] and peak not in (1, 3 * k)
    raise fail(
        f"max_concurrency={k} means {k} calls at once",
        expected=f"exactly {k} of the {3 * k} calls in flight at once, never more",
        observed=f"{peak} in flight at once"
        + (f", and {peaks[0]} with max_concurrency={c.limits[0]} too" if same else ""),
        where=LIMITED,
        why=f"the same {peak} at once whatever the limit: a number of your own in place of "
        "`max_concurrency` (`asyncio.Semaphore(max_concurrency)`)"
        if same
        else _limit_why(k, 3 * k, peak),
    )


def _case_per_run(c: _Check) -> None:
    """Two runs of one node at once: each has its own limit."""
    subject, local, timed, k = (c.limited[key] for key in ("node", "probe", "timed", "k"))
    local.runs.clear()
    one = c.batch([(t.name, {"x": i}) for i, t in enumerate(timed)])
    two = c.batch([(t.name, {"x": 100 + i}) for i, t in enumerate(timed)])

    async def two_runs() -> list:
        return await asyncio.gather(
            subject({"messages": [HumanMessage("a"), one.ai]}),
            subject({"messages": [HumanMessage("b"), two.ai]}),
        )

    try:
        run_learner(two_runs, name="two runs of your node", limit=_limit(6 * k * STEP * 2))
    except CheckFailed as error:
        if "bound to a different event loop" in str(error):
            raise fail(
                "the node failed when it ran in a second event loop",
                expected="the same node instance usable in any event loop",
                observed=shorten(str(error), 200),
                where=LIMITED,
                why="a Semaphore made in `__init__` binds to the first event loop that waits on it; "
                "create it in `__call__`, one per run",
            ) from None
        raise
    first = [r for r in local.runs if r.args.get("x", 0) < 100]
    second = [r for r in local.runs if r.args.get("x", 0) >= 100]
    both, each = local.peak(), max(local.peak(first), local.peak(second))
    if each > k or both <= k:
        raise fail(
            f"with max_concurrency={k}, each run of the node may have {k} calls at once",
            expected=f"two runs at once: up to {k} calls of each in flight ({2 * k} together)",
            observed=f"{both} in flight together, at most {each} of one run",
            where=LIMITED,
            why="one Semaphore for every run (made in `__init__`) makes two runs share one limit; "
            "the lab's limit is per run: create the semaphore in `__call__`"
            if both <= k
            else "",
        )


def _graph(node: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    return builder.compile(checkpointer=InMemorySaver())


def _case_in_a_graph(c: _Check) -> None:
    """Two turns of a real StateGraph: only the last AIMessage's calls are answered."""
    graph = _graph(c.build(c.tools(Probe())))
    turn1 = c.batch([("lookup_weather", {"city": c.city})])
    turn2 = c.batch([("lookup_attraction", {"city": c.other}), ("lookup_weather", {"city": c.other})])
    config = {"configurable": {"thread_id": uuid.UUID(int=c.rng.getrandbits(128)).hex}}

    async def two_turns() -> list[list]:
        written = []
        for turn in ([HumanMessage("weather?"), turn1.ai], [HumanMessage("and there?"), turn2.ai]):
            updates = []
            async for chunk in graph.astream({"messages": turn}, config, stream_mode="updates"):
                updates += (chunk.get("tools") or {}).get("messages", [])
            written.append(updates)
        return written

    first, second = run_learner(two_turns, name="the graph with your node")
    for n, (got, ids) in enumerate(zip((first, second), [turn1.ids, turn2.ids], strict=True), start=1):
        got_ids = [m.tool_call_id if _plain(m) else None for m in got]
        if got_ids != ids:
            raise fail(
                f"turn {n}: the node's update in the graph answers other calls",
                expected=f"the tools node writes answers to {ids}",
                observed=f"it wrote answers to {got_ids}",
                where=GRAPH,
                why="the second turn's history holds the first turn's AIMessage too: answer only the "
                "LAST message's tool calls, not every AIMessage"
                if n == 2 and set(turn1.ids) & set(got_ids)
                else "",
            )
    wanted = [attraction_report(c.other), weather_report(c.other)]
    if [m.content for m in second] != wanted:
        raise fail(
            "turn 2: the answers did not land in the graph's state",
            expected=f"{wanted}",
            observed=shorten([m.content for m in second]),
            where=GRAPH,
        )


def _case_interrupt(c: _Check) -> None:
    """`interrupt()` inside a tool pauses the graph through the node (GraphBubbleUp is let through),
    and on resume the tool's answer carries the human's reply."""
    probe = Probe()
    question, reply = f"{c.approval} [{c.nonce}]: go ahead?", f"ok-{c.rng.randint(100, 999)}"

    async def ask_first(item: str) -> str:
        answer = interrupt(question)  # raises GraphInterrupt; on resume returns the reply
        return f"{item} done, approved: {answer}"

    tools = [*c.tools(probe), probe.tool(c.approval, "Ask a human before acting.", ask_first)]
    graph = _graph(c.build(tools, timeout=c.timeout))
    batch = c.batch([(c.approval, {"item": c.nonce}), ("lookup_weather", {"city": c.city})])
    config = {"configurable": {"thread_id": uuid.UUID(int=c.rng.getrandbits(128)).hex}}

    async def pause_then_resume() -> tuple[list, list]:
        runs = []
        for given in ({"messages": [HumanMessage("go"), batch.ai]}, Command(resume=reply)):
            runs.append([chunk async for chunk in graph.astream(given, config, stream_mode="updates")])
        return runs[0], runs[1]

    try:
        paused, resumed = run_learner(pause_then_resume, name="the graph with your node")
    except core.LearnerRaised as error:
        wrapped = getattr(error, "original", None)
        if isinstance(wrapped, BaseExceptionGroup) and wrapped.subgroup(GraphBubbleUp) is not None:
            raise fail(
                "an interrupt() inside a tool must pause the graph, through your node",
                expected=f"the run paused, asking {question!r} (its `__interrupt__`)",
                observed=f"the run failed: {type(wrapped).__name__}: {shorten(str(wrapped), 120)}",
                where=INTERRUPT,
                why="a TaskGroup wraps what its tasks raise in an ExceptionGroup, which LangGraph does not "
                "read as an interrupt: unwrap it (`except* GraphBubbleUp as group: raise "
                "group.exceptions[0]`), or gather the calls with `asyncio.gather`",
            ) from None
        raise
    asked = [i.value for chunk in paused if "__interrupt__" in chunk for i in chunk["__interrupt__"]]
    written = [m for chunk in paused for m in (chunk.get("tools") or {}).get("messages", [])]
    first = next((r for r in probe.runs if r.tool == c.approval), None)
    if not (len(asked) == 1 and type(asked[0]) is str and asked[0] == question):
        answer = next((m for m in written if _plain(m) and m.tool_call_id == batch.ids[0]), None)
        raise fail(
            "an interrupt() inside a tool must pause the graph, through your node",
            expected=f"the run paused, asking {question!r} (its `__interrupt__`)",
            observed=(f"no pause; {c.approval} was answered {_state(answer)}" if answer else "no pause")
            + (
                f" ({c.approval} {first.outcome} on its first run)" if first else f" ({c.approval} never ran)"
            ),
            where=INTERRUPT,
            why="`interrupt()` pauses a run by raising GraphInterrupt, a `GraphBubbleUp` — an Exception, so "
            "`except Exception` turns it into an error answer and no human is asked: re-raise "
            "`GraphBubbleUp` (from `langgraph.errors`) before `except Exception`"
            if answer is not None and answer.status == "error"
            else "",
        )
    done = [m for chunk in resumed for m in (chunk.get("tools") or {}).get("messages", [])]
    wanted = f"{c.nonce} done, approved: {reply}"
    got = next((m for m in done if _plain(m) and m.tool_call_id == batch.ids[0]), None)
    if got is None or got.status == "error" or got.content != wanted:
        raise fail(
            "on resume the tool's answer must carry the human's reply",
            expected=f"ToolMessage({wanted!r}) for {c.approval}",
            observed=_state(got) if got else f"answers: {shorten([_repr(m) for m in done], 200)}",
            where=INTERRUPT,
        )


CASES = (
    ("unknown names are never run, answered with the allowed tools", _case_unknown_names),
    ("bad arguments and a raising tool answer their own call; the good call succeeds", _case_failures),
    ("a hanging call is cancelled at the deadline ({timeout:g} s)", _case_hanging),
    ("the tool's own TimeoutError is the tool's error, not the deadline", _case_own_timeout),
    ("with timeout=None a slow call is waited for", _case_no_deadline),
    ("{many} calls run together", _case_together),
    ("max_concurrency={limits[0]} and ={limits[1]}: that many calls at once", _case_limited),
    ("the limit is per run: two runs at once get {limited[k]} each", _case_per_run),
    ("two turns of a StateGraph: only the last message's calls answered", _case_in_a_graph),
    ("an interrupt() inside a tool passes through the node, and resumes", _case_interrupt),
)
"""Every case, in order, with its title (filled in from the drawn check)."""


def check_node(MyToolNode: Any) -> str:  # noqa: N803 - the learner's class name
    cases = Cases("q1")
    c = _draw(MyToolNode)
    try:
        c.node = c.build(c.tools(), timeout=c.timeout)
    except CheckFailed as error:
        cases.failure(f"MyToolNode(tools, timeout={c.timeout!r}) builds", error)
        return cases.result("")
    for title, case in CASES:
        if case is _case_per_run and not c.limited:
            continue  # judged once the limit itself holds
        cases.run(title.format(**vars(c)), functools.partial(case, c))
    return cases.result(
        f"all {len(cases.items)} cases passed: allow-list, errors, a deadline that cancels (the node's own), "
        f"the tool's own TimeoutError, none with timeout=None, {MANY[0]} or more calls together, two "
        "concurrency limits, per run, two graph turns, an interrupt let through."
    )


q1 = Exercise(
    "02",
    "q1",
    ("MyToolNode",),
    check_node,
    (
        "Start from lesson 02's node: look each call's name up in a dict of allowed tools, run every call "
        "in its own coroutine with `asyncio.gather`, and make each coroutine return a ToolMessage whatever "
        "happens.",
        "Four details the check probes: (1) one `asyncio.Semaphore(max_concurrency)` per run of the node, "
        "made in `__call__` and shared by all its calls — not one per call, not one in `__init__`; "
        "(2) `asyncio.wait_for` raises `TimeoutError` both when the time is up and when the tool itself "
        "raises TimeoutError: use `async with asyncio.timeout(t) as scope:` and ask `scope.expired()`; "
        "(3) return errors as `ToolMessage(content, name=..., tool_call_id=call['id'], status='error')` with "
        "the exception's text; (4) `interrupt()` pauses a run by raising `GraphInterrupt`, a "
        "`GraphBubbleUp`: re-raise `GraphBubbleUp` (from `langgraph.errors`) before `except Exception`.",
    ),
)

__all__ = ("GATEWAY_MESSAGE", "CheckFailed", "Probe", "make_tools", "q1")
