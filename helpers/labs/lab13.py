"""Lab 13 — Stop, stream and recover (after `notebooks/13_failure_and_recovery.ipynb`).

q1: `build_agent(model, tools, budget, checkpointer)`: an agent that stops by itself when its model
    never does. At most `budget` tool calls run per question (a run); the run returns normally, with
    every call answered and an AIMessage without tool calls last; a second question on the same
    thread gets a budget of its own.
q2: `make_crawl_tool(fetch)` and `progress_events(graph, inputs)`: a slow tool that reports each
    page as it is fetched through the stream writer (`{"url": ..., "done": i, "total": n}`), and
    still works when it is called outside a graph; and a consumer that streams a graph and returns
    its custom chunks in order.
q3: `repair(graph, config)`: a thread left with unanswered tool calls, repaired so that the next
    question is accepted by the provider — without deleting what the thread holds, keeping the
    answers that exist and running no tool again.

One shape for every check: the checker draws ONE scenario (a frozen dataclass: names, budgets,
URLs, ids, amounts — never whether a hard case is present, every hard case is in every draw), then
runs small module-level case functions over it with `Cases`, each raising `fail(...)`.

Every check observes outcomes from the course's side, as they happen: q1's tools record each call
that really ran; q2's `fetch` records when each page's fetch starts and ends and the course's own
stream records when each progress chunk arrives, so an event is related to its page (and the next
page's fetch waits, a bounded time, for the previous page's event); in q3 a local OpenAI-style
endpoint (`ScriptedOpenAIEndpoint(check_history=True)`, reached by the real `ChatOpenAI` client,
started per check and never reachable from this module) gives the verdict on the repaired history.
What the learner's code returns is accepted only as plain builtins the check copies itself (no
subclasses, no always-equal objects). Time limits grow with the work drawn (pages, budgets). Draws
come from `helpers.labs.rng`; the module holds immutable constants only, and `helpers.labs` verifies
them and the checks' code before every verdict. q3 also refuses a repair that replaces the graph's
methods or parts, relaxes or calls the provider, or writes the checkpointer directly.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel

from helpers import labs
from helpers.graphs import tool_loop
from helpers.history import AnswerSavedSaver, unanswered_tool_calls
from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    distinct,
    fail,
    plain,
    plain_problem,
    rng,
    run_learner,
    run_limited,
    section,
    shorten,
)
from helpers.models import ScriptedChatModel

STREAMING = "12_streaming_and_stopping"
RECOVERY = "13_failure_and_recovery"
LIMIT: float | None = None
"""Seconds one run of the learner's code may take before a hang is reported (None: labs.LIMIT),
before the share each unit of drawn work adds (`_limit`)."""
UNIT_SHARE = 0.2
"""Each unit of work a check draws (a page to crawl, a call in the budget) adds this share of the
base limit to the run's limit: a correct slow crawl of five pages gets as long per page as one of
three."""
FETCH_TIME = 0.01
"""Seconds each of the check's fetches takes (fetches called at once overlap, every run)."""
ARRIVAL = 2.0
"""q2: seconds the next page's fetch waits for the previous page's progress to reach the course's
stream (a correct tool's chunk arrives in milliseconds; one written at the end never does)."""
PATIENCE = 8
"""q1: model turns beyond the budget after which a question is declared never-ending."""

STEP_LIMIT = "3. The step limit: what each agent does"
BUDGET = "5. A tool-call budget: `ToolCallLimitMiddleware`"
PROGRESS = "2. Progress from inside a tool"
REPAIR = "3. A thread left with unanswered calls, and the provider's 400"
CRASH = "1. A tool raises mid-batch: what the thread holds"
RESUME = "2. Resume: what runs again"

SEARCH_STEMS = ("web_search", "lookup_docs", "find_pages", "query_index", "search_kb")
"""Stems of the names q1 gives its tools (each case another, none the `search` of the lab's text)."""
SITES = ("docs", "blog", "shop", "wiki")


class NeverStopped(RuntimeError):
    """Raised by q1's model when the agent keeps asking it long after the budget was spent."""


def _limit(units: int = 0) -> float:
    """The time one run of learner code may take: the base limit, plus `UNIT_SHARE` of it for each
    unit of work drawn (a page, a budgeted call)."""
    base = LIMIT if LIMIT is not None else labs.LIMIT
    return base * (1 + UNIT_SHARE * units)


# == plain values: what the learner's code returns is copied into builtins the check builds ===========
class _NotPlain(Exception):
    """A value the learner's code returned is not made of plain builtins (`what` names the part)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _plain(value: Any) -> Any:
    """A copy of `value` rebuilt from exact builtins (`helpers.labs.plain`); `_NotPlain` says why not.

    Only `type(...)` and the builtins' own methods read it: a str subclass, an object whose `__eq__`
    always says True, or a dict subclass are refused, never compared."""
    problem = plain_problem(value)
    if problem is not None:
        raise _NotPlain(problem)
    return plain(value)


def _shown(value: Any, width: int = 200) -> str:
    """A learner's value as text without running its code: repr of plain builtins, else its type."""
    try:
        return shorten(repr(_plain(value)), width)
    except _NotPlain as error:
        return error.what


def _text(content: Any) -> str:
    """A message's text from plain content only: a str, or the text of its plain blocks joined."""
    if type(content) is str:
        return content
    if type(content) is list:
        parts = []
        for block in content:
            if type(block) is str:
                parts.append(block)
            elif type(block) is dict and type(block.get("text")) is str:
                parts.append(block["text"])
        return " ".join(parts)
    return ""


# == the arguments of the course's tools, declared once ====================================================
# (`StructuredTool.from_function` would infer them on every check, under a `warnings.catch_warnings()`
# that is not thread-safe: a check running beside another thread could let pydantic's deprecation
# warning through.)
class _SearchArgs(BaseModel):
    query: str


class _BeaconArgs(BaseModel):
    turn: int


class _ChargeArgs(BaseModel):
    amount: int


class _NotifyArgs(BaseModel):
    user: str


# == q1: a budget that stops a model that never stops ==================================================
class Ran:
    """What the tools really ran (thread-safe)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        with self._lock:
            self.calls.append(value)


def search_tool(name: str, ran: Ran) -> BaseTool:
    """A search tool named `name` that records every query it really runs."""

    def search(query: str) -> str:
        """Search the web for a query."""
        ran.add(query)
        return f"results for {query}"

    return StructuredTool.from_function(
        search, name=name, description="Search the web for a query.", args_schema=_SearchArgs
    )


def greedy_model(name: str, per_turn: int, budget: int, rng: random.Random, *, stop_after: int | None = None):
    """A scripted model that asks for `per_turn` calls of `name` every turn — forever, or until
    `stop_after` of its calls were answered in this question, when it answers in text."""
    answer = f"answer-{rng.getrandbits(24):06x}"

    def turn(messages: list[BaseMessage]) -> Any:
        last_question = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        since = messages[last_question:]
        asked = sum(isinstance(m, AIMessage) for m in since)
        answered = sum(isinstance(m, ToolMessage) and m.status != "error" for m in since)
        if stop_after is not None and answered >= stop_after:
            return answer
        if asked > budget + PATIENCE:
            raise NeverStopped(f"the model was asked {asked + 1} times in one question")
        return [{"name": name, "args": {"query": f"q{rng.getrandbits(32):08x}"}} for _ in range(per_turn)]

    return ScriptedChatModel(script=[turn] * 200), answer


@dataclass(frozen=True)
class _BudgetDraw:
    """One q1 check's scenario: every case every run, with its own tool name and budget."""

    names: tuple[str, ...]  # one tool name per case, none the lab text's `search`
    never_stops: int  # budget for the model that never stops (and its second question)
    batch: int  # an odd budget for two calls a turn
    stop_after: int  # calls after which a model answers by itself (budget 6)
    seed: int
    built: dict = field(default_factory=dict, compare=False)  # the first case's agent, for the second


def _draw_budget(rng: random.Random) -> _BudgetDraw:
    names = distinct(lambda: f"{rng.choice(SEARCH_STEMS)}_{rng.getrandbits(12):03x}", 4)
    return _BudgetDraw(
        names=tuple(names),
        never_stops=rng.choice((2, 3, 4)),
        batch=rng.choice((3, 5)),
        stop_after=rng.randint(1, 3),
        seed=rng.getrandbits(32),
    )


def _agent(build_agent: Any, model: Any, tools: list, budget: int, built: dict) -> tuple[Any, dict]:
    agent = run_learner(
        build_agent, model, tools, budget, InMemorySaver(), limit=_limit(), name="build_agent"
    )
    if not callable(inspect.getattr_static(agent, "invoke", None)):
        raise fail(
            "build_agent did not return an agent",
            expected="`build_agent(...)` to return a compiled graph, e.g. `create_agent(...)`",
            observed=_shown(agent),
            where=section(STREAMING, BUDGET),
        )
    if any(agent is before for before in built.setdefault("agents", [])):
        raise fail(
            "build_agent returned an agent it had built before",
            expected="a new agent for each call, made from the model, tools, budget and checkpointer given",
            observed="the same agent object as an earlier call (with another model, tools and budget)",
            why="an agent kept from an earlier call (a cache, a global) runs that call's model with that "
            "call's budget: build it inside `build_agent`, every time",
            where=section(STREAMING, BUDGET),
        )
    built["agents"].append(agent)
    return agent, {"configurable": {"thread_id": f"lab13-{uuid.uuid4().hex[:8]}"}}


def _invoke(runnable: Any, value: Any, config: Any = None) -> Any:
    return runnable.invoke(value, config)


_MESSAGES = (AIMessage, HumanMessage, ToolMessage, SystemMessage)


def _ask(agent: Any, thread: dict, text: str, budget: int) -> list[BaseMessage]:
    result = run_learner(
        _invoke,
        agent,
        {"messages": [HumanMessage(text)]},
        thread,
        limit=_limit(budget),
        name="your agent's invoke",
    )
    messages = result.get("messages") if type(result) is dict else None
    if type(messages) is not list or any(type(m) not in _MESSAGES for m in messages):
        raise fail(
            "the agent's invoke did not return the state",
            expected="`agent.invoke(...)` to return a dict with its 'messages' (LangChain messages)",
            observed=_shown(result)
            if type(messages) is not list
            else f"messages of types {[type(m).__name__ for m in messages]}"[:200],
            where=section(STREAMING, BUDGET),
        )
    return messages


def _raised(error: LearnerRaised, budget: int) -> CheckFailed:
    original = error.original
    if isinstance(original, NeverStopped):
        return fail(
            "the agent never stopped",
            expected=f"the run to end once {budget} tool call(s) ran",
            observed=f"{original} — the budget did not end the run",
            why="`exit_behavior='continue'` (the default) answers the calls over budget with an error and "
            "lets the model go on: a model that keeps asking goes on until the step limit raises "
            "(create_agent binds 9999). `exit_behavior='end'` ends the run (so would a second limit that "
            "ends it, e.g. a ModelCallLimitMiddleware with exit_behavior='end')",
            where=section(STREAMING, BUDGET),
        )
    if isinstance(original, GraphRecursionError):
        return fail(
            "the run hit the step limit and raised",
            expected="the run to return normally, every call answered",
            observed="GraphRecursionError: the recursion limit ended it, losing the result",
            why="`recursion_limit` stops a run by raising (create_agent has no fallback); a tool-call "
            "budget with `exit_behavior='end'` ends it with an answer",
            where=section(STREAMING, STEP_LIMIT),
        )
    if type(original).__name__ == "ToolCallLimitExceededError":
        return fail(
            "the budget raised instead of ending the run",
            expected="the run to return normally, every call answered",
            observed=f"ToolCallLimitExceededError: {original}"[:200],
            why="`exit_behavior='error'` raises before the turn's calls run, so a checkpointed thread ends "
            "in calls nobody answered; `'end'` answers them and stops",
            where=section(STREAMING, BUDGET),
        )
    return error


def _question(
    agent: Any,
    thread: dict,
    ran: Ran,
    *,
    budget: int,
    low: int,
    high: int,
    label: str,
    answer: str | None = None,
) -> list[BaseMessage]:
    """Ask one question; the calls that ran (the tool's own record) must be in [low, high], every
    call answered, an answer last."""
    before = len(ran.calls)
    try:
        messages = _ask(agent, thread, f"Find everything about it ({label}).", budget)
    except LearnerRaised as error:
        raise _raised(error, budget) from None
    count = len(ran.calls) - before
    _q1_within_budget(count, budget, low, high, label)
    _q1_every_call_answered(messages)
    _q1_ends_with_an_answer(messages, answer)
    return messages


def _q1_within_budget(count: int, budget: int, low: int, high: int, label: str) -> None:
    if count > high:
        raise fail(
            f"{count} tool calls ran with a budget of {budget}",
            expected=f"at most {high} call(s) run",
            observed=f"{count} ran",
            why="the budget counts calls per run: `run_limit=budget` — one more (or a limit not taken from "
            "`budget`) lets calls through",
            where=section(STREAMING, BUDGET),
        )
    if count < low:
        why = (
            "the budget is per question (a run): a count kept across the thread's questions (`thread_limit`, "
            "or a counter never reset) stops the second one early — use `run_limit`"
            if "same thread" in label
            else "calls within the budget must run: is the limit taken from `budget` (not one less)?"
        )
        raise fail(
            f"only {count} tool call(s) ran with a budget of {budget}",
            expected=f"{low} call(s) run" if low == high else f"between {low} and {high} calls run",
            observed=f"{count} ran",
            why=why,
            where=section(STREAMING, BUDGET),
        )


def _q1_every_call_answered(messages: list[BaseMessage]) -> None:
    dangling = unanswered_tool_calls(messages)
    if dangling:
        raise fail(
            "the run ended with tool calls nobody answered",
            expected="every tool call in the history answered",
            observed=f"{len(dangling)} unanswered call(s): {dangling}"[:200],
            why="ending the loop by routing to END after the model asked for tools leaves its calls "
            "unanswered, and the next model call fails with the provider's 400 — answer them (an error "
            "ToolMessage) before stopping, as `exit_behavior='end'` does",
            where=section(RECOVERY, REPAIR),
        )


def _q1_ends_with_an_answer(messages: list[BaseMessage], answer: str | None) -> None:
    last = messages[-1] if messages else None
    if type(last) is not AIMessage or last.tool_calls:
        raise fail(
            "the run did not end with an answer",
            expected="an AIMessage without tool calls last (the model's answer, or the budget's notice)",
            observed=f"last message {type(last).__name__}: {_text(getattr(last, 'content', ''))[:80]!r}",
            where=section(STREAMING, BUDGET),
        )
    if answer is not None and not (type(last.content) is str and last.content == answer):
        raise fail(
            "the model's own answer is not the last message",
            expected=f"the model answered {answer!r} before the budget ran out: that answer ends the run",
            observed=f"{_text(last.content)!r}"[:200],
            where=section(STREAMING, BUDGET),
        )


def _q1_never_stops(build_agent: Any, d: _BudgetDraw) -> None:
    """A model that never stops, one call a turn: exactly the budget's calls run, then the run ends."""
    budget, name, ran = d.never_stops, d.names[0], Ran()
    model, _ = greedy_model(name, 1, budget, rng(d.seed))
    agent, thread = _agent(build_agent, model, [search_tool(name, ran)], budget, d.built)
    d.built.update(agent=agent, thread=thread, ran=ran)
    _question(agent, thread, ran, budget=budget, low=budget, high=budget, label="first question")
    d.built["first"] = True


def _q1_second_question(build_agent: Any, d: _BudgetDraw) -> None:
    """The same thread, a second and a third question: a budget of its own each, and the first question in
    the history."""
    if "agent" not in d.built:
        raise CheckFailed("not tried: the case above built no agent")
    budget = d.never_stops
    messages = _question(
        d.built["agent"],
        d.built["thread"],
        d.built["ran"],
        budget=budget,
        low=budget,
        high=budget,
        # a thread-wide count is the likely cause only when the first question was right
        label="second question, same thread" if d.built.get("first") else "second question",
    )
    if not any(type(m) is HumanMessage and "(first question)" in _text(m.content) for m in messages):
        raise fail(
            "the second question did not see the first",
            expected="the thread's history: the first question, its calls and answer, then the second",
            observed=f"{[type(m).__name__ for m in messages]}"[:200],
            why="without the checkpointer the agent keeps no thread: pass it on, "
            "`create_agent(..., checkpointer=checkpointer)` (and a `thread_limit` would then count the "
            "first question too)",
            where=section(STREAMING, BUDGET),
        )
    # a third question on the thread: a thread-wide limit of twice the budget lets two questions
    # through, never three
    _question(
        d.built["agent"],
        d.built["thread"],
        d.built["ran"],
        budget=budget,
        low=budget,
        high=budget,
        label="third question, same thread",
    )


def _q1_budget_one(build_agent: Any, d: _BudgetDraw) -> None:
    """A budget of 1: one call runs."""
    name, ran = d.names[1], Ran()
    model, _ = greedy_model(name, 1, 1, rng(d.seed + 1))
    agent, thread = _agent(build_agent, model, [search_tool(name, ran)], 1, d.built)
    _question(agent, thread, ran, budget=1, low=1, high=1, label="budget 1")


def _q1_two_calls_a_turn(build_agent: Any, d: _BudgetDraw) -> None:
    """Two calls a turn and an odd budget: the last turn's second call is over budget and must not run."""
    budget, name, ran = d.batch, d.names[2], Ran()
    model, _ = greedy_model(name, 2, budget, rng(d.seed + 2))
    agent, thread = _agent(build_agent, model, [search_tool(name, ran)], budget, d.built)
    _question(agent, thread, ran, budget=budget, low=budget - 1, high=budget, label="two calls a turn")


def _q1_answers_by_itself(build_agent: Any, d: _BudgetDraw) -> None:
    """A model that answers after `stop_after` calls, within a budget of 6: its answer ends the run."""
    budget, name, ran = 6, d.names[3], Ran()
    model, answer = greedy_model(name, 1, budget, rng(d.seed + 3), stop_after=d.stop_after)
    agent, thread = _agent(build_agent, model, [search_tool(name, ran)], budget, d.built)
    _question(
        agent,
        thread,
        ran,
        budget=budget,
        low=d.stop_after,
        high=d.stop_after,
        label="a model that answers",
        answer=answer,
    )


_Q1_CASES = (
    ("a model that never stops, one call a turn: the budget's calls run, then the run ends", _q1_never_stops),
    ("a second question on the same thread gets a budget of its own", _q1_second_question),
    ("budget 1", _q1_budget_one),
    ("two calls a turn, an odd budget: no call beyond it runs", _q1_two_calls_a_turn),
    ("a model that answers within the budget keeps its answer", _q1_answers_by_itself),
)


def _is_function(key: str, name: str, value: Any, shape: str, where: str) -> None:
    if not callable(value):
        raise fail(
            f"`{name}` must be a function.",
            key=key,
            expected=shape,
            observed=f"a {type(value).__name__}",
            where=where,
        )


def check_budget(build_agent: Any, *, seed: int | None = None) -> str:
    key, where = "q1", section(STREAMING, BUDGET)
    shape = "def build_agent(model, tools, budget, checkpointer): ... return create_agent(...)"
    _is_function(key, "build_agent", build_agent, shape, where)
    try:
        inspect.signature(build_agent).bind(None, None, None, None)
    except TypeError:
        raise fail(
            "`build_agent` must take 4 arguments: the model, the tools, the budget and the checkpointer.",
            key=key,
            expected=shape,
            observed=f"build_agent{inspect.signature(build_agent)}",
            where=where,
        ) from None
    except ValueError:
        pass
    draw, cases = _draw_budget(rng(seed)), Cases(key)
    for label, case in _Q1_CASES:
        cases.run(label, lambda case=case: case(build_agent, draw))
    return cases.result(
        "a model that never stops is stopped after its budget, per question, with every call answered "
        "and the run returning normally."
    )


q1 = Exercise(
    "13",
    "q1",
    ("build_agent",),
    check_budget,
    (
        "Lesson 12 §5: `ToolCallLimitMiddleware` counts tool calls and decides what happens at the limit. "
        "Which `exit_behavior` stops a model that keeps asking, and which limit counts per question?",
        "`create_agent(model, tools, checkpointer=checkpointer, middleware=[ToolCallLimitMiddleware("
        "run_limit=budget, exit_behavior='end')])` — 'continue' lets the model go on until the step limit "
        "raises, 'error' "
        "raises, and `thread_limit` would count the thread's earlier questions too.",
    ),
)


# == q2: progress from inside a slow tool, and reading it ==============================================
class Fetcher:
    """A `fetch(url)` for trying a crawl by hand: records each page it fetched, raises on `broken`.

    (The check hands your tool a `fetch` of its own that also records when each fetch starts and
    ends.)"""

    def __init__(self, broken: str | None = None) -> None:
        self._fetched: list[str] = []
        self._broken = broken
        self._lock = threading.Lock()

    @property
    def fetched(self) -> list[str]:
        """The URLs fetched so far, in order (a copy)."""
        with self._lock:
            return list(self._fetched)

    def __call__(self, url: str) -> str:
        if url == self._broken:
            raise ConnectionError(f"{url} did not answer")
        with self._lock:
            self._fetched.append(url)
        return f"<html>{url}</html>"


class _Crawl:
    """What happened during one run of the learner's crawl, in one order: each fetch's start and end
    (from the `fetch` the check hands over) and each custom chunk's arrival at the course's stream.

    With `live`, the fetch of page k+1 first waits (at most `ARRIVAL` s, once per check) until page
    k's progress has arrived, and notes when it had not: written right after each page it has, written
    at the end (a loop after the crawl, a `finally`) it never has."""

    def __init__(self, urls: list[str], broken: str | None, live: bool, patience: threading.Event) -> None:
        self.urls, self.broken, self.live = urls, broken, live
        self.patience = patience  # cleared after the first late event of a check: one wait per check
        self._order = itertools.count()
        self._cond = threading.Condition()
        self.started: list[tuple[str, int, int]] = []  # (url, when, chunks arrived by then)
        self.ended: dict[str, int] = {}  # url → when its fetch returned
        self.chunks: list[tuple[Any, int, frozenset[str]]] = []  # (plain chunk or _NotPlain, when, ended)
        self.late: tuple[int, str] | None = None  # (page number, url) whose fetch began too early
        self.flying: list[str] = []  # the fetches called and not returned yet
        self.overlap: tuple[str, str] | None = None  # (url, a url whose fetch was still running)

    def fetch(self) -> Any:
        """The `fetch(url)` handed to the learner's `make_crawl_tool`: nothing in it to read or change."""
        crawl = self

        def fetch(url: str) -> str:
            """Fetch one page (the course's stand-in for an HTTP GET)."""
            if type(url) is not str:
                raise TypeError(f"fetch(url) takes a URL string, not a {type(url).__name__}")
            crawl._enter(url)
            try:
                crawl._start(url)
                time.sleep(FETCH_TIME)  # a fetch takes a moment: fetches called at once overlap
                if url == crawl.broken:
                    raise ConnectionError(f"{url} did not answer")
                crawl._end(url)
            finally:
                crawl._leave(url)
            return f"<html>{url}</html>"

        return fetch

    def _enter(self, url: str) -> None:
        with self._cond:
            if self.flying and self.overlap is None:
                self.overlap = (url, self.flying[0])
            self.flying.append(url)

    def _leave(self, url: str) -> None:
        with self._cond:
            self.flying.remove(url)

    def _start(self, url: str) -> None:
        with self._cond:
            page = len(self.started)
            if self.live and page and self.patience.is_set():
                self._cond.wait_for(lambda: len(self.chunks) >= page, timeout=ARRIVAL)
            arrived = len(self.chunks)
            if self.live and arrived < page and self.late is None:
                self.late = (page, url)
                self.patience.clear()
            self.started.append((url, next(self._order), arrived))

    def _end(self, url: str) -> None:
        with self._cond:
            self.ended[url] = next(self._order)

    def arrived(self, chunk: Any) -> None:
        """The course's stream consumer received `chunk` from the custom stream."""
        try:
            value = _plain(chunk)
        except _NotPlain as error:
            value = error
        with self._cond:
            self.chunks.append((value, next(self._order), frozenset(self.ended)))
            self._cond.notify_all()

    @property
    def fetched(self) -> list[str]:
        return [url for url, _, _ in self.started if url in self.ended]

    def events(self) -> list[Any]:
        return [value for value, _, _ in self.chunks]


def _want(urls: list[str], upto: int | None = None) -> list[dict]:
    n = len(urls)
    return [{"url": u, "done": i, "total": n} for i, u in enumerate(urls[:upto] if upto else urls, 1)]


@dataclass(frozen=True)
class _CrawlDraw:
    """One q2 check's scenario: every case every run."""

    pages: tuple[str, ...]  # a crawl in a graph (3 to 5 pages)
    failing: tuple[str, ...]  # four pages, one of them broken, with pages before and after it
    broken: int  # index of the broken page in `failing` (1 or 2)
    outside: tuple[str, ...]  # pages crawled outside a graph
    tokens: tuple[tuple[tuple[str, ...], ...], ...]  # the course's graphs for progress_events: 1 and 2 turns
    patience: threading.Event = field(default_factory=threading.Event, compare=False)


def _urls(rng: random.Random, n: int) -> tuple[str, ...]:
    """`n` different URLs: the broken page is found by URL, so a repeat of it earlier would fail the
    crawl there, too soon."""
    site = rng.choice(SITES)
    return tuple(distinct(lambda: f"https://{site}.example/{rng.getrandbits(20):05x}", n))


def _draw_crawl(rng: random.Random) -> _CrawlDraw:
    def token() -> str:
        return f"t{rng.getrandbits(28):07x}"

    draw = _CrawlDraw(
        pages=_urls(rng, rng.randint(3, 5)),
        failing=_urls(rng, 4),
        broken=rng.randint(1, 2),
        outside=_urls(rng, rng.randint(2, 3)),
        tokens=tuple(
            tuple(tuple(token() for _ in range(rng.randint(2, 3))) for _ in range(turns)) for turns in (1, 2)
        ),
    )
    draw.patience.set()
    return draw


def _make_tool(make_crawl_tool: Any, fetch: Any, pages: int) -> BaseTool:
    tool = run_learner(make_crawl_tool, fetch, limit=_limit(pages), name="make_crawl_tool")
    if not issubclass(type(tool), BaseTool):
        raise fail(
            "make_crawl_tool did not return a tool",
            expected="a tool (`@tool def crawl(urls: list[str]) -> str: ...`, returned by make_crawl_tool)",
            observed=_shown(tool),
            where=section(STREAMING, PROGRESS),
        )
    return tool


def _streamed(make_crawl_tool: Any, crawl: _Crawl) -> tuple[list[str], list[BaseMessage]]:
    """The course streams a graph that calls the learner's tool once; each custom chunk goes to
    `crawl.arrived` as it comes. Returns the order of the stream's items ('custom' or the node an
    update came from) and the messages of the updates."""
    tool = _make_tool(make_crawl_tool, crawl.fetch(), len(crawl.urls))
    order: list[str] = []
    messages: list[BaseMessage] = []

    def run() -> None:
        name = tool.name
        model = ScriptedChatModel(script=[[{"name": name, "args": {"urls": list(crawl.urls)}}], "done"])
        graph = tool_loop(model.bind_tools([tool]), [tool], handle_tool_errors=True)
        for mode, chunk in graph.stream(
            {"messages": [HumanMessage("crawl")]}, stream_mode=["updates", "custom"]
        ):
            if mode == "custom":
                crawl.arrived(chunk)
                order.append("custom")
                continue
            for node, update in chunk.items():
                order.append(node)
                for item in update if isinstance(update, list) else [update]:
                    if isinstance(item, dict):
                        messages.extend(item.get("messages", []))

    run_learner(run, limit=_limit(len(crawl.urls)) + ARRIVAL, name="your tool, in a graph the course streams")
    return order, messages


def _events_problem(got: list, want: list[dict], fetched: list[str]) -> tuple[str, str]:
    """(observed, why) for custom events that are not what the tool should have written."""
    if not got:
        return (
            "no custom chunk at all",
            "write with the graph's stream writer: `write = get_stream_writer()` inside the tool, then "
            "`write({...})` after each page — `print` and the state never reach `stream_mode='custom'`",
        )
    shown = f"{got}"[:180]
    if len(got) == 1 and len(want) > 1:
        return shown, "one chunk per page, written as each page is fetched — not one summary"
    if any(type(e) is not dict or set(e) != {"url", "done", "total"} for e in got):
        return shown, "each chunk is the dict {'url': url, 'done': i, 'total': n}, i counted from 1"
    if [e["url"] for e in got] != [e["url"] for e in want]:
        return shown, f"the pages in the order they were fetched: {fetched}"
    return shown, "`done` counts pages from 1; `total` is the number of URLs"


_CHUNK_TYPES = (("url", str), ("done", int), ("total", int))
"""Each progress chunk's keys and their exact types (an int is not a float, nor a bool)."""


def _q2_chunks_are_plain(crawl: _Crawl) -> None:
    odd = [value for value in crawl.events() if isinstance(value, _NotPlain)]
    if odd:
        raise fail(
            "a progress chunk is not a plain dict",
            expected="each chunk a plain dict of str and int, e.g. {'url': url, 'done': 1, 'total': 3}",
            observed=f"{odd[0].what} written to the stream writer",
            why="a consumer (a UI, a log) reads the chunk as data: write a plain `dict`, not an object of "
            "your own",
            where=section(STREAMING, PROGRESS),
        )
    keys = {key for key, _ in _CHUNK_TYPES}
    for value in crawl.events():
        if type(value) is not dict or set(value) != keys:
            continue  # not the chunk's shape at all: the events' own case says what it should be
        wrong = [
            (key, type(value[key]).__name__) for key, kind in _CHUNK_TYPES if type(value[key]) is not kind
        ]
        if wrong:
            raise fail(
                "a progress chunk holds a value of another type",
                expected="{'url': <str>, 'done': <int>, 'total': <int>}, "
                "e.g. {'url': url, 'done': 1, 'total': 3}",
                observed=f"{_shown(value, 120)}: " + ", ".join(f"{k} a {name}" for k, name in wrong),
                why="`done` and `total` count pages: ints (`enumerate(urls, 1)` and `len(urls)`), not "
                "floats or bools; `url` is the URL string fetched",
                where=section(STREAMING, PROGRESS),
            )


def _q2_one_page_at_a_time(crawl: _Crawl) -> None:
    if crawl.overlap is None:
        return
    url, other = crawl.overlap
    raise fail(
        "pages fetched at once, not in order",
        expected="one `fetch` at a time, each page's event written before the next page's fetch",
        observed=f"`fetch({url!r})` was called while `fetch({other!r})` was still running",
        why="fetched in parallel (a thread pool, `pool.map`), the pages finish in any order and the events "
        "come in bursts after them: `done` then says nothing about what is fetched. Loop over the URLs: "
        "`fetch(url)`, then `write({...})`",
        where=section(STREAMING, PROGRESS),
    )


def _q2_one_event_per_page(crawl: _Crawl, want: list[dict], summary: str, failing: bool = False) -> None:
    got = crawl.events()
    if got == want:
        return
    observed, why = _events_problem(got, want, crawl.fetched)
    if failing and not got:
        why = (
            "the pages fetched before the failure were never reported: write each event right after its "
            "page, not all of them at the end (and let the fetch error out)"
        )
    elif failing and len(got) > len(want):
        why = "the failing page was not fetched: do not report it (or anything after it) as done"
    raise fail(
        summary,
        expected=f"{want[:2]} … ({len(want)} events)" if len(want) > 2 else f"{want}",
        observed=observed,
        why=why,
        where=section(STREAMING, PROGRESS),
    )


def _q2_each_event_after_its_page(crawl: _Crawl) -> None:
    for value, _, ended in crawl.chunks:
        if value["url"] not in ended:
            raise fail(
                "progress was reported before its page was fetched",
                expected=f"the event for {value['url']} after `fetch({value['url']!r})` returned",
                observed="the event arrived while that page was not fetched yet",
                why="report a page once it is fetched: `fetch(url)` first, then `write({...})`",
                where=section(STREAMING, PROGRESS),
            )


def _q2_each_event_before_the_next_page(crawl: _Crawl) -> None:
    if crawl.late is None:
        return
    page, url = crawl.late
    raise fail(
        f"page {page}'s progress had not arrived when page {page + 1}'s fetch began",
        expected=f"the event for page {page} written right after it was fetched, before `fetch` of "
        f"page {page + 1} ({url})",
        observed=f"when page {page + 1}'s fetch began, {crawl.started[page][2]} of the {page} event(s) "
        f"before it had arrived (the check waited {ARRIVAL:g} s for them)",
        why="progress is worth something only while the tool runs: write each page's event as soon as it "
        "is fetched — events collected and written at the end (after the loop, or in a `finally`) reach "
        "the user only when the crawl is over",
        where=section(STREAMING, PROGRESS),
    )


def _q2_progress_before_the_update(order: list[str]) -> None:
    last = max((i for i, item in enumerate(order) if item == "custom"), default=-1)
    if "tools" in order and order.index("tools") < last:
        raise fail(
            "progress came after the tool finished",
            expected="every custom chunk before the tools step's update",
            observed=f"{order}",
            where=section(STREAMING, PROGRESS),
        )


def _q2_fetched_every_page(crawl: _Crawl) -> None:
    if crawl.fetched != list(crawl.urls):
        raise fail(
            "the tool did not fetch every page with `fetch`",
            expected=f"fetch called for {list(crawl.urls)}, in order",
            observed=f"fetched {crawl.fetched}",
            where=section(STREAMING, PROGRESS),
        )


def _answer(messages: list[BaseMessage]) -> ToolMessage | None:
    return next((m for m in messages if type(m) is ToolMessage), None)


def _q2_in_a_graph(answer: tuple, d: _CrawlDraw) -> None:
    """The course streams a graph that runs the tool: one event per page, each between its page's fetch
    and the next, all before the tools step's update."""
    crawl = _Crawl(list(d.pages), None, True, d.patience)
    order, messages = _streamed(answer[0], crawl)
    _q2_one_page_at_a_time(crawl)
    _q2_chunks_are_plain(crawl)
    _q2_one_event_per_page(crawl, _want(list(d.pages)), "the custom stream is not one event per page")
    _q2_each_event_after_its_page(crawl)
    _q2_each_event_before_the_next_page(crawl)
    _q2_progress_before_the_update(order)
    _q2_fetched_every_page(crawl)
    reply = _answer(messages)
    if reply is None or reply.status == "error":
        raise fail(
            "the tool failed in the graph",
            expected="a successful ToolMessage",
            observed=_text(reply.content)[:200] if reply else "no ToolMessage",
            where=section(STREAMING, PROGRESS),
        )


def _q2_a_page_fails(answer: tuple, d: _CrawlDraw) -> None:
    """Page 2 or 3 of 4 fails: the pages before it were reported as they ran, nothing after, and the
    error reaches the model."""
    urls, broken = list(d.failing), d.broken
    crawl = _Crawl(urls, urls[broken], True, d.patience)
    _, messages = _streamed(answer[0], crawl)
    summary = f"page {broken + 1} of 4 fails: the {broken} page(s) before it were not reported as they ran"
    _q2_one_page_at_a_time(crawl)
    _q2_chunks_are_plain(crawl)
    _q2_one_event_per_page(crawl, _want(urls, upto=broken), summary, failing=True)
    _q2_each_event_after_its_page(crawl)
    _q2_each_event_before_the_next_page(crawl)
    reply = _answer(messages)
    if reply is None or reply.status != "error":
        raise fail(
            f"page {broken + 1} of 4 fails: the tool reported success",
            expected="the fetch's ConnectionError to leave the tool (this check's ToolNode, built "
            "with `handle_tool_errors=True`, turns it into an error ToolMessage)",
            observed=f"{_text(reply.content)!r} [{reply.status}]" if reply else "no ToolMessage",
            why="a crawl that swallows the failure tells the model it has every page: let the error out",
            where=section(STREAMING, PROGRESS),
        )


def _outside_why(error: LearnerRaised) -> str:
    text = f"{type(error.original).__name__}: {error.original}"
    if "__pregel_runtime" in text or isinstance(error.original, KeyError | RuntimeError):
        return (
            "`get_stream_writer()` reads the writer from a graph run; outside one it raises "
            "(KeyError: '__pregel_runtime' under `tool.invoke`, RuntimeError outside any runnable). "
            "Fall back as lesson 12 §2 does: `try: write = get_stream_writer()` / "
            "`except (KeyError, RuntimeError): write = lambda chunk: None` — moving the work into a "
            "function that takes the writer is not enough while the tool still calls "
            "`get_stream_writer()` unguarded"
        )
    if "validation error" in text and "runtime" in text:
        return (
            "a `runtime: ToolRuntime` argument is injected only by ToolNode: `tool.invoke({...})` "
            "outside a graph fails its validation. Use `get_stream_writer()` and catch its error, or "
            "give it a default (`runtime: ToolRuntime = None`) and a writer that does nothing when "
            "it is None"
        )
    return (
        "outside a graph the tool gets only its arguments: `tool.invoke({'urls': [...]})` must fetch "
        "the pages and return, with no graph, writer or tool call around it"
    )


def _q2_outside(answer: tuple, d: _CrawlDraw) -> None:
    """`tool.invoke({"urls": [...]})` with no graph around it fetches the pages and returns."""
    urls = list(d.outside)
    crawl = _Crawl(urls, None, False, d.patience)
    tool = _make_tool(answer[0], crawl.fetch(), len(urls))
    try:
        run_learner(
            _invoke, tool, {"urls": urls}, limit=_limit(len(urls)), name="your tool's invoke, outside a graph"
        )
    except LearnerRaised as error:
        raise fail(
            "called outside a graph, the tool raised",
            expected=f"`tool.invoke({{'urls': [...]}})` to fetch the {len(urls)} pages and return",
            observed=f"{type(error.original).__name__}: {error.original}"[:200],
            why=_outside_why(error),
            where=section(STREAMING, PROGRESS),
        ) from None
    if crawl.fetched != urls:
        raise fail(
            "outside a graph, the tool did not fetch the pages",
            expected=f"fetched {urls}",
            observed=f"fetched {crawl.fetched}",
            where=section(STREAMING, PROGRESS),
        )


def _course_graph(tokens: tuple[tuple[str, ...], ...]) -> Any:
    """A graph whose tool writes the drawn tokens (nowhere in the state), one tool turn per group."""

    def beacon(turn: int) -> str:
        """Send a few beacons."""
        write = get_stream_writer()
        for i, token in enumerate(tokens[turn]):
            write({"token": token, "step": i})
        return f"turn {turn} done"

    tool = StructuredTool.from_function(
        beacon, name="beacon", description="Send a few beacons.", args_schema=_BeaconArgs
    )
    script = [[{"name": "beacon", "args": {"turn": t}}] for t in range(len(tokens))] + ["over"]
    return tool_loop(ScriptedChatModel(script=script).bind_tools([tool]), [tool])


def _read_all(value: Any) -> Any:
    """A generator's items, in a list (an async generator's too), or `value` itself."""
    if inspect.isgenerator(value) or type(value) in (map, filter, zip, enumerate, reversed):
        return list(value)
    if inspect.isasyncgen(value):

        async def drain() -> list:
            return [item async for item in value]

        return drain()
    return value


def _q2_consumer(answer: tuple, d: _CrawlDraw) -> None:
    """`progress_events` on the course's graphs (one and two tool turns) returns their custom chunks in
    order, as plain values."""
    for tokens in d.tokens:
        want = [{"token": token, "step": i} for turn in tokens for i, token in enumerate(turn)]
        got = run_learner(
            answer[1],
            _course_graph(tokens),
            {"messages": [HumanMessage("go")]},
            limit=_limit(),
            name="progress_events",
        )
        got = run_learner(_read_all, got, limit=_limit(), name="progress_events")
        summary = f"progress_events on a graph of the course's ({len(tokens)} tool turn(s))"
        pairs = type(got) in (list, tuple) and got and all(type(g) is tuple and len(g) == 2 for g in got)
        if pairs:
            why = "with several stream modes each item is (mode, chunk): keep the chunks of mode 'custom'"
        else:
            why = "return the custom chunks themselves, in the order they arrived"
        try:
            got = _plain(got)
        except _NotPlain as error:
            raise fail(
                summary,
                expected="a list of the custom chunks (plain dicts), e.g. `list(graph.stream(inputs, "
                "stream_mode='custom'))`",
                observed=f"{error.what} (in what progress_events returned)",
                why=why
                if pairs
                else "return the chunks themselves in a plain list (a generator is read "
                "too): an object of your own, or a subclass of list, dict or str, is not what a caller can "
                "rely on",
                where=section(STREAMING, PROGRESS),
            ) from None
        if type(got) in (list, tuple) and list(got) == want:
            continue
        if not got:
            why = (
                "stream with `stream_mode='custom'` (or a list holding it): `invoke` and 'updates' drop them"
            )
        raise fail(
            summary,
            expected=f"{want}"[:200],
            observed=f"{got}"[:200],
            why=why,
            where=section(STREAMING, PROGRESS),
        )


_Q2_CASES = (
    ("in a graph: one event per page, each as its page is fetched", _q2_in_a_graph),
    ("a page fails: the pages before it were already reported", _q2_a_page_fails),
    ("outside a graph: the tool still works", _q2_outside),
    ("progress_events returns a graph's custom chunks, in order", _q2_consumer),
)


def check_progress(
    make_crawl_tool: Any,
    progress_events: Any,
    *,
    seed: int | None = None,
) -> str:
    key, where = "q2", section(STREAMING, PROGRESS)
    _is_function(
        key, "make_crawl_tool", make_crawl_tool, "def make_crawl_tool(fetch): ... return crawl", where
    )
    _is_function(
        key,
        "progress_events",
        progress_events,
        "def progress_events(graph, inputs): ... return [chunks]",
        where,
    )
    draw, cases, answer = _draw_crawl(rng(seed)), Cases(key), (make_crawl_tool, progress_events)
    for label, case in _Q2_CASES:
        cases.run(label, lambda case=case: case(answer, draw))
    return cases.result(
        "progress streamed page by page as each page is fetched (also up to a failure), the tool usable "
        "outside a graph, and the custom chunks read back in order."
    )


q2 = Exercise(
    "13",
    "q2",
    ("make_crawl_tool", "progress_events"),
    check_progress,
    (
        "Lesson 12 §2: `get_stream_writer()` inside a tool, `stream_mode='custom'` to read what it wrote. "
        "Outside a graph there is no writer: what does the call raise, and what can the tool use instead?",
        "In the tool: `try: write = get_stream_writer()` / `except (KeyError, RuntimeError): write = lambda "
        "chunk: None`, then for each page `fetch(url)` and `write({'url': url, 'done': i, 'total': n})`. "
        "`progress_events`: `return list(graph.stream(inputs, stream_mode='custom'))`.",
    ),
)


# -- q3: does an answer written for a call nobody answered claim that the call worked? -----------------
_REASSURANCE = re.compile(
    r"\b(?:no|without|zero|never|nothing|none)\s+(?:fail\w*|errors?|problems?|issues?|exceptions?|crash\w*)"
    r"(?:\s+(?:was|were|is|has been)\s+(?:raised|thrown|seen|reported|found))?\b"
    r"|\b(?:did|does|has|have|was|were)\s*(?:n[o']t|n’t)\s+(?:fail\w*|crash\w*|error\w*)"
    r"|\bnot a problem\b|\berror[- ]free\b",
    re.I,
)
"""Phrases that deny a failure ('no problem', 'without errors', 'did not fail'): they say it worked."""
_WHEN = re.compile(
    r"\b(?:before|prior to)\s+(?:the|a|an|its|any)?\s*"
    r"(?:crash\w*|failure|error|exception|outage|interrupt\w*)\b",
    re.I,
)
"""'before the crash': says when something happened, not whether it failed."""
_CLAUSES = re.compile(r"[.;:!()\[\]\n—–]+|\s-\s")
"""Where one statement of an answer ends (a comma does not end one: 'sent, no reply came back')."""
_SUCCESS = re.compile(
    r"\b(?:done|success\w*|succeed(?:ed|s)?|complete[ds]?|finish(?:ed|es)?|processed|confirmed|"
    r"went through|gone through|"
    r"paid|charged|notified|sent|delivered|worked|all good|(?:ok|okay|fine)(?!\s+to\b))\b",
    re.I,
)
"""Words that say a call did its work."""
_DOUBT = (
    r"\b(?:not|no|never|nothing|none|neither|nor|without|unable|cannot|yet|before|may|might|maybe|perhaps|"
    r"possibly|whether|if|unknown|unclear|uncertain|unconfirmed|unverified|unsure|"
    r"fail\w*|\w*errors?|exceptions?|crash\w*|rais(?:e|ed|es|ing)|down|time[sd]?\s*out|timeout|interrupt\w*|"
    r"abort\w*|cancel\w*|refus\w*|reject\w*|died|dead|lost|stopp?ed|broke\w*|unavailable|unreachable|"
    r"missing|incomplete|unfinished|partial\w*|retr(?:y|ied|ies|ying)|again|re-?run|check\w*|verify|"
    r"make\s+sure|ensure|to\s+(?:get|see|make|confirm|verify|find\s+out|learn|know|be\s+sure))\b|n[’']t\b"
)
_UNSURE = re.compile(_DOUBT + r"|\?", re.I)
"""Words that put a statement's outcome in doubt or say what failed ('not sent', 'crashed before it
finished', 'unknown whether', 'ConnectionError'), or say what to do to find out or finish ('retry it
to get it done', 'check the account to see it was processed', 'make sure the user is notified').
'probably' and 'likely' are not among them: 'payment probably went through' claims it did."""
_DOUBTS = re.compile(_DOUBT, re.I)
_COLON_DOUBT = re.compile(r":(?=\s*(?:" + _DOUBT + r"))", re.I)
"""A colon before a word of doubt joins the two ('Completed: unknown' is one statement)."""
"""The same words without a bare '?': an answer written for a call nobody answered holds one."""


def _says_something(content: Any) -> bool:
    """False for an empty answer, or one of punctuation and invisible characters only."""
    return bool(re.search(r"\w{2,}", _text(content)))


def _claims_success(content: Any) -> bool:
    """True when one statement of the answer says the call worked ('done', 'charged 42', 'sent, no
    errors') with nothing in that statement that doubts it or says what failed: 'Error: the step
    crashed before notify finished' and 'ConnectionError raised; nothing was sent' are honest, 'Error:
    done' and 'Finished. (marked as an error because of the crash)' are not."""
    text = _WHEN.sub(" ", _REASSURANCE.sub(" ok ", _text(content)))
    text = _COLON_DOUBT.sub(" ", text)  # 'Completed: unknown': what follows the colon doubts what precedes
    return any(_SUCCESS.search(part) and not _UNSURE.search(part) for part in _CLAUSES.split(text))


# == q3: repair a thread left with unanswered calls ===================================================
class _Effects:
    """What q3's tools really did (thread-safe)."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        with self._lock:
            self.done.append(value)


def _payment_tools(effects: _Effects, up: bool, saved: threading.Event | None = None) -> list[BaseTool]:
    """`charge` (a payment that must happen once) and `notify` (its service down unless `up`).

    With `saved` (set by `AnswerSavedSaver` once `charge`'s answer is in the checkpointer), `notify` raises
    only after that: a crashed `create_agent` step then always keeps `charge`'s answer. Waiting for
    `charge` to return is not enough. A sibling that finishes while the failed step is shutting down
    loses its answer (its write is submitted to an executor already shut down: `RuntimeError: cannot
    schedule new futures after shutdown` in the log), and then `repair` would see another thread.
    """

    def charge(amount: int) -> str:
        """Charge the customer."""
        effects.add(f"charge {amount}")
        return f"charged {amount}"

    def notify(user: str) -> str:
        """Notify the user."""
        effects.add(f"notify {user}")
        if not up:
            if saved is not None:
                saved.wait(10.0)
            raise ConnectionError("notification service is down")
        return f"notified {user}"

    return [
        StructuredTool.from_function(charge, args_schema=_ChargeArgs),
        StructuredTool.from_function(notify, args_schema=_NotifyArgs),
    ]


class _Wire:
    """One q3 check's provider: a local OpenAI-style endpoint that checks the history as OpenAI does,
    and the real `ChatOpenAI` client talking to it. Made per check and closed after it; each case puts
    the turns it scripts in `turns`."""

    def __init__(self) -> None:
        from langchain_openai import ChatOpenAI

        from helpers.openai_endpoint import ScriptedOpenAIEndpoint

        self.turns: list[Any] = []
        script = [lambda messages, k=k: self.turns[k] for k in range(6)]
        self.endpoint = ScriptedOpenAIEndpoint(script, check_history=True).start()
        self.llm = ChatOpenAI(
            model="gpt-4o",
            base_url=self.endpoint.base_url,
            api_key="unused",
            use_responses_api=False,
            max_retries=0,
            timeout=10,
        )

    def close(self) -> None:
        self.endpoint.stop()


@dataclass(frozen=True)
class _RepairDraw:
    """One q3 check's scenario: the five threads, every run, each with its own amount, user and ids."""

    kinds: tuple[str, ...]
    amounts: tuple[int, ...]
    users: tuple[str, ...]
    seed: int


_KINDS = (
    ("a ToolNode batch that crashed: both calls unanswered", "batch"),
    ("create_agent that crashed: one answer kept, one call unanswered", "create_agent"),
    ("the user asked again before the repair (the 400 already met)", "asked again"),
    ("two crashed turns (a lenient server let the thread go on)", "crashed twice"),
    ("a thread with nothing to repair stays as it is", "healthy"),
)


def _draw_repair(rng: random.Random) -> _RepairDraw:
    return _RepairDraw(
        kinds=tuple(kind for _, kind in _KINDS),
        amounts=tuple(rng.randint(2, 99) for _ in _KINDS),
        users=tuple(rng.choice(("ann", "bo", "cy", "di", "ed")) for _ in _KINDS),
        seed=rng.getrandbits(32),
    )


@dataclass
class _Thread:
    """One crashed (or healthy) thread, as it was before the repair; `after` is read after it."""

    kind: str
    graph: Any
    config: dict
    wire: _Wire
    effects: _Effects
    ids: list[str]  # every call id of the crashed turns
    kept: dict[str, ToolMessage]  # the answers the thread held
    replies: list[str]  # what the model answers next
    before: list[BaseMessage] = field(default_factory=list)
    effects_before: list[str] = field(default_factory=list)
    checkpoint_before: Any = None
    graph_before: dict = field(default_factory=dict)
    endpoint_before: set = field(default_factory=set)
    exchanges_before: int = 0
    after: list[BaseMessage] = field(default_factory=list)

    @property
    def answers(self) -> list[ToolMessage]:
        return [m for m in self.after if isinstance(m, ToolMessage)]

    @property
    def originals(self) -> list[BaseMessage]:
        return [m for m in self.before if not isinstance(m, ToolMessage)]


def _crash(d: _RepairDraw, index: int, wire: _Wire) -> _Thread:
    """Thread `index` of the draw, crashed. The create_agent thread must keep `charge`'s answer (the
    case it names): on a machine so loaded that the answer was lost, the same thread is built again."""
    for _ in range(3):
        t = _crashed(d, index, wire)
        if t.kind != "create_agent" or t.kept:
            return t
    raise RuntimeError(
        "lab 13's create_agent case lost charge's answer before the repair ran, three times: "
        "re-run the check; if it keeps happening, run `make doctor`"
    )


def _crashed(d: _RepairDraw, index: int, wire: _Wire) -> _Thread:
    """Build thread `index` of the draw the way a real one breaks: the model asks for `charge` and
    `notify` in one turn, `notify`'s service is down (up in the healthy thread)."""
    from langchain.agents import create_agent

    kind, amount, user = d.kinds[index], d.amounts[index], d.users[index]
    draw = rng(d.seed + index)

    def turn() -> AIMessage:
        calls = [
            {"name": "charge", "args": {"amount": amount}, "id": f"call_{draw.getrandbits(40):010x}"},
            {"name": "notify", "args": {"user": user}, "id": f"call_{draw.getrandbits(40):010x}"},
        ]
        draw.shuffle(calls)
        return AIMessage("", tool_calls=[{**c, "type": "tool_call"} for c in calls])

    crashed = [turn() for _ in range(2 if kind == "crashed twice" else 1)]
    replies = [f"reply-{draw.getrandbits(24):06x}" for _ in range(5)]
    wire.turns[:] = [*crashed, *replies]
    wire.endpoint.reset()
    effects = _Effects()
    if kind == "create_agent":
        saved = threading.Event()
        tools = _payment_tools(effects, False, saved)
        graph = create_agent(wire.llm, tools, checkpointer=AnswerSavedSaver("charge", saved))
    else:
        tools = _payment_tools(effects, kind == "healthy")
        graph = tool_loop(wire.llm.bind_tools(tools), tools).builder.compile(checkpointer=InMemorySaver())
    t = _Thread(
        kind,
        graph,
        {"configurable": {"thread_id": f"lab13-{uuid.uuid4().hex[:8]}"}},
        wire,
        effects,
        [c["id"] for message in crashed for c in message.tool_calls],
        {},
        replies,
    )
    run_limited(_first_turns, t, user, amount, limit=30, name="the course's crashed turn")
    t.before = graph.get_state(t.config).values["messages"]
    t.kept = {m.tool_call_id: m for m in t.before if isinstance(m, ToolMessage)}
    t.effects_before = list(effects.done)
    t.checkpoint_before = graph.checkpointer.get_tuple(t.config)
    t.graph_before = dict(vars(graph))
    t.endpoint_before = set(vars(wire.endpoint))
    t.exchanges_before = len(wire.endpoint.exchanges)
    return t


def _first_turns(t: _Thread, user: str, amount: int) -> None:
    """The thread's history up to the repair, written by running the graph (the course's own code)."""
    with contextlib.suppress(ConnectionError):
        t.graph.invoke({"messages": [HumanMessage(f"Charge {user} {amount} and tell them")]}, t.config)
    if t.kind == "asked again":
        with contextlib.suppress(Exception):  # the provider's 400, as a real thread meets it
            t.graph.invoke({"messages": [HumanMessage("Hello? Did it work?")]}, t.config)
    if t.kind == "crashed twice":  # a lenient server let the thread go on, and it crashed again
        t.wire.endpoint.check_history = False
        try:
            with contextlib.suppress(ConnectionError):
                t.graph.invoke({"messages": [HumanMessage("Try again, please")]}, t.config)
        finally:
            t.wire.endpoint.check_history = True


def _run_repair(repair: Any, t: _Thread) -> None:
    """Run the learner's repair on the thread; what it raised, told in the lesson's terms."""
    try:
        run_learner(repair, t.graph, t.config, limit=_limit(), name="repair")
    except LearnerRaised as error:
        _q3_no_tool_ran(t, f", then {error}")
        if "update_state" in str(error) and "langgraph raised" in str(error):
            why = (
                "LangGraph could not apply the update as the node it names — without `as_node` it picks the "
                "node that wrote last, which fails on a thread that stopped mid-step: write as "
                "`as_node='tools'` (both graphs have that node, and writing as it makes the model answer "
                "next)"
            )
            if "delete a message with an ID that doesn't exist" in str(error):
                why = (
                    "`get_state` shows create_agent's finished answer as a pending write, which is not in "
                    "the checkpoint, so a RemoveMessage for its id fails: rewrite the whole history instead, "
                    "`[RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]`, with `as_node='tools'`"
                )
            raise fail(
                "`update_state` failed on this thread",
                expected="`graph.update_state(config, {...}, as_node='tools')` to write the repaired history",
                observed=str(error)[:200],
                why=why,
                where=section(RECOVERY, REPAIR),
            ) from None
        raise


def _q3_graph_and_provider_untouched(t: _Thread) -> None:
    graph, endpoint = t.graph, t.wire.endpoint
    changed = sorted(  # a method shadowed or the graph's parts swapped (not a name or a flag)
        k
        for k in {*t.graph_before, *vars(graph)}
        if vars(graph).get(k) is not t.graph_before.get(k)
        and (callable(vars(graph).get(k)) or k in {"checkpointer", "nodes", "channels", "store", "builder"})
    )
    for k in changed:
        if k in t.graph_before:
            setattr(graph, k, t.graph_before[k])
        else:
            delattr(graph, k)
    relaxed = set(vars(endpoint)) != t.endpoint_before or endpoint.check_history is not True
    endpoint.check_history = True
    asked = len(endpoint.exchanges) != t.exchanges_before and not _runs(t)  # a run is named below
    if not (changed or relaxed or asked):
        return
    raise fail(
        "the repair changed the graph or the provider, not the thread",
        expected="only the thread's state changed (through `graph.update_state`)",
        observed=f"changed: {changed}"[:200]
        if changed
        else "changed: the endpoint"
        if relaxed
        else "the model was called during the repair",
        why="replacing the graph's methods or checkpointer, relaxing the endpoint's history check or "
        "calling the model yourself fakes the verdict: the next question must be accepted by the provider "
        "as it is",
        where=section(RECOVERY, REPAIR),
    )


def _q3_no_tool_ran(t: _Thread, then: str = "") -> None:
    if t.effects.done != t.effects_before:
        raise fail(
            "the repair ran tools again",
            expected="no tool runs during a repair",
            observed=f"ran again: {t.effects.done[len(t.effects_before) :]}{then}"[:220],
            why="resuming (`graph.invoke(None, config)`) re-runs the failed step — a payment may run "
            "again, and the service is still down: write the answers with `update_state` instead",
            where=section(RECOVERY, RESUME),
        )


def _runs(t: _Thread) -> list[str]:
    """The sources of the checkpoints a run of the graph wrote since the crash ('input', 'loop')."""
    return sorted(
        {
            str(c.metadata.get("source"))
            for c in t.graph.checkpointer.list(t.config)
            if c.checkpoint["id"] > t.checkpoint_before.checkpoint["id"]
            and c.metadata.get("source") in ("input", "loop")
        }
    )


def _q3_graph_not_run(t: _Thread) -> None:
    ran = _runs(t)
    if ran:
        raise fail(
            "the repair ran the graph (or wrote as its input)",
            expected="only `graph.update_state(config, ..., as_node='tools')`: the check asks the next "
            "question itself",
            observed=f"the repair wrote checkpoints of a run (source {', '.join(ran)})",
            why="a new input on the broken thread goes to the provider, which refuses it, and it drops "
            "create_agent's pending answer: repair with `update_state` alone",
            where=section(RECOVERY, REPAIR),
        )


def _snapshot(messages: list[BaseMessage]) -> list[tuple[str, str, str, str]]:
    return [(type(m).__name__, m.id or "", _text(m.content), getattr(m, "status", "")) for m in messages]


def _q3_through_update_state(t: _Thread) -> None:
    t.after = t.graph.get_state(t.config).values["messages"]
    now = t.graph.checkpointer.get_tuple(t.config)
    if _snapshot(t.after) != _snapshot(t.before) and (
        now.checkpoint["id"] == t.checkpoint_before.checkpoint["id"] or now.metadata.get("source") != "update"
    ):
        raise fail(
            "the repair did not go through `update_state`",
            expected="the repaired history written by `graph.update_state(config, ..., as_node='tools')`",
            observed=f"the thread's latest checkpoint: {now.metadata}"[:200],
            why="a checkpoint written straight to the checkpointer skips the graph's bookkeeping (channel "
            "versions, the node it counts as written by); `update_state` is the graph's own way to write "
            "a state",
            where=section(RECOVERY, REPAIR),
        )


def _q3_healthy_unchanged(t: _Thread) -> None:
    if t.kind != "healthy" or _snapshot(t.after) == _snapshot(t.before):
        return
    kinds_before, kinds_after = [type(m).__name__ for m in t.before], [type(m).__name__ for m in t.after]
    raise fail(
        "a thread with nothing to repair was changed",
        expected="the same messages, in the same order (every call already answered)",
        observed=f"{kinds_before} became {kinds_after}"
        if kinds_before != kinds_after
        else "the same kinds of message, with other ids, contents or statuses",
        why="a thread whose calls are all answered needs nothing: write answers only for calls nobody "
        "answered — no extra message, no second answer",
        where=section(RECOVERY, REPAIR),
    )


def _q3_history_kept(t: _Thread) -> None:
    """Every question and model turn still there, with its id, in its order, unchanged."""
    after_ids = [m.id for m in t.after]
    lost = [m for m in t.originals if m.id not in after_ids]
    copied = {(type(m), _text(m.content)) for m in t.after}
    if lost and all((type(m), _text(m.content)) in copied for m in lost):
        raise fail(
            "the repair gave the thread's messages new ids",
            expected="every question and model turn kept as it is, its id included",
            observed=shorten(
                f"new ids for: {[(type(m).__name__, _text(m.content)[:30]) for m in lost]}", 200
            ),
            why="copies without their ids are new messages to the thread (the originals deleted): put the "
            "messages `get_state` returned back themselves",
            where=section(RECOVERY, REPAIR),
        )
    if lost:
        raise fail(
            "the repair deleted messages of the thread",
            expected="every question and every model turn kept (the history is the conversation)",
            observed=f"gone: {[(type(m).__name__, _text(m.content)[:30] or 'tool calls') for m in lost]}",
            why="deleting the AIMessage that made the calls hides the problem and loses what the model "
            "asked for — and an answer that exists then follows no call, which the provider refuses too: "
            "answer its calls instead",
            where=section(RECOVERY, REPAIR),
        )
    original_ids = [m.id for m in t.originals]
    if [i for i in after_ids if i in set(original_ids)] != original_ids:
        raise fail(
            "the repair changed the order of the conversation",
            expected="questions and model turns in their original order",
            observed=f"{[type(m).__name__ for m in t.after]}",
            where=section(RECOVERY, REPAIR),
        )
    by_id = {m.id: m for m in t.after}

    def shape(m: BaseMessage) -> tuple:
        return type(m), _text(m.content), [c["id"] for c in getattr(m, "tool_calls", [])]

    changed = [m for m in t.originals if shape(by_id[m.id]) != shape(m)]
    if changed:
        raise fail(
            "the repair rewrote a question or a model turn",
            expected="every question and model turn as it was, its tool calls included",
            observed=f"changed: {[(type(m).__name__, m.id) for m in changed]}"[:200],
            why="erasing an AIMessage's tool calls hides them from the provider and loses what the model "
            "asked for: keep the calls and answer them",
            where=section(RECOVERY, REPAIR),
        )


def _counts(t: _Thread) -> dict[str, int]:
    return {i: sum(m.tool_call_id == i for m in t.answers) for i in t.ids}


def _q3_calls_answered(t: _Thread) -> None:
    """The calls nobody answered have an answer now, and an answer the thread held is still there."""
    counts = _counts(t)
    still = [i for i, n in counts.items() if n == 0 and i not in t.kept]
    if still and len(still) == len(t.ids) - len(t.kept):
        raise fail(
            "the calls nobody answered are still unanswered",
            expected="an error ToolMessage for each of them, right after the AIMessage that made it",
            observed=f"no answer for {still}",
            why="the provider refuses every later question on this thread with a 400 until each call is "
            "answered",
            where=section(RECOVERY, REPAIR),
        )
    dropped = [i for i in t.kept if counts.get(i) == 0]
    if dropped:
        raise fail(
            "an answer the thread held was lost",
            expected=f"{[_text(t.kept[i].content) for i in dropped]} kept for {dropped}",
            observed="no answer for it after the repair",
            why="`create_agent` keeps a finished call's answer only as a pending write (shown by get_state); "
            "any `update_state` drops pending writes — write that answer back with the rest, as the lesson's "
            "repair does by rewriting the whole history",
            where=section(RECOVERY, REPAIR),
        )


def _q3_one_answer_each(t: _Thread) -> None:
    """No answer to a call nobody made, one answer per call, an existing answer unchanged."""
    stray = [m.tool_call_id for m in t.answers if m.tool_call_id not in t.ids]
    if stray:
        raise fail(
            "the repair added an answer to a call nobody made",
            expected=f"answers only for the calls {t.ids}",
            observed=f"answers for {stray}"[:200],
            why="a provider refuses a tool message that answers no call of the AIMessage before it "
            "(OpenAI with a 400): answer each call by its own id, and add no answer of your own",
            where=section(RECOVERY, REPAIR),
        )
    counts = _counts(t)
    if any(n != 1 for n in counts.values()):
        raise fail(
            "not every call has exactly one answer",
            expected="one ToolMessage per tool call",
            observed=", ".join(f"{i}: {n}" for i, n in counts.items()),
            why="every call of every AIMessage needs an answer — an earlier turn's calls too, not only the "
            "last one's"
            if 0 in counts.values()
            else "answer the calls nobody answered — once each; an answered call keeps its own answer",
            where=section(RECOVERY, REPAIR),
        )
    for call_id, old in t.kept.items():
        new = next(m for m in t.answers if m.tool_call_id == call_id)
        if (_text(new.content), new.status) != (_text(old.content), old.status):
            raise fail(
                "an answer that existed was replaced",
                expected=f"{_text(old.content)!r} kept for {call_id}",
                observed=f"{_text(new.content)!r} [{new.status}]",
                why="`create_agent` keeps a finished call's answer (a pending write, shown in get_state): "
                "keep it and answer only the calls without one",
                where=section(RECOVERY, CRASH),
            )


def _q3_new_answers_honest(t: _Thread) -> None:
    """Each answer the repair wrote says something, with status='error', and claims no success."""
    written = [m for m in t.answers if m.tool_call_id not in t.kept]
    empty = [m.tool_call_id for m in written if not _says_something(m.content)]
    if empty:
        raise fail(
            "an answer written by the repair says nothing",
            expected="an error ToolMessage saying the call may not have run",
            observed=f"empty answers for {empty}",
            why="the model reads only the answer's text: an empty one tells it nothing of what happened",
            where=section(RECOVERY, REPAIR),
        )
    invented = [m for m in written if m.status != "error" or _claims_success(m.content)]
    silent = [m for m in written if not _DOUBTS.search(_text(m.content))]
    if silent and not invented:
        raise fail(
            "an answer written by the repair does not say the call may have failed",
            expected="an error ToolMessage whose text says what failed or that the call may not have run",
            observed=f"{[(_text(m.content), m.status) for m in silent]}"[:200],
            why="status='error' alone is a flag the model may not weigh: its text must say the outcome is "
            "unknown (e.g. 'not completed: the tool step crashed; it may have run'); an echo of the call or "
            "'ok?' tells it nothing",
            where=section(RECOVERY, REPAIR),
        )
    if invented:
        raise fail(
            "a call nobody answered was given a success answer",
            expected="an error ToolMessage (status='error', saying what failed or that it may not have run) "
            "for each call without an answer",
            observed=f"{[(_text(m.content), m.status) for m in invented]}"[:200],
            why="the thread cannot know whether the call did its work: say so with status='error' "
            "(e.g. 'not completed: the tool step crashed; it may have run'), never 'done'",
            where=section(RECOVERY, REPAIR),
        )


def _q3_provider_accepts(t: _Thread) -> None:
    """The check asks the next question itself: the endpoint must answer 200, no old call runs again,
    and the model's reply comes last."""
    t.wire.endpoint.reset()

    def next_turn() -> list[BaseMessage]:
        return t.graph.invoke({"messages": [HumanMessage("What is my balance?")]}, t.config)["messages"]

    try:
        final = run_limited(next_turn, limit=30, name="the next question")
    except Exception as error:  # noqa: BLE001 - the provider's verdict
        rejected = [e for e in t.wire.endpoint.exchanges if e.status != 200]
        said = rejected[0].response["error"]["message"] if rejected else f"{type(error).__name__}: {error}"
        raise fail(
            "the next question was refused by the provider",
            expected="a 200 from the endpoint for the next question",
            observed=f"400: {said}"[:220],
            why="each AIMessage's calls must be answered right after it, before any other message: "
            "appended after a later question the answers are still missing to the provider",
            where=section(RECOVERY, REPAIR),
        ) from None
    if t.effects.done != t.effects_before:
        raise fail(
            "the next question ran the old calls again",
            expected="no tool call of the crashed turn runs again",
            observed=f"ran again: {t.effects.done[len(t.effects_before) :]}",
            where=section(RECOVERY, RESUME),
        )
    if not isinstance(final[-1], AIMessage) or _text(final[-1].content) not in t.replies:
        raise fail(
            "the next question did not reach the model",
            expected="the model's reply last",
            observed=f"{type(final[-1]).__name__}: {_text(final[-1].content)[:80]!r}",
            where=section(RECOVERY, REPAIR),
        )


_REPAIR_CHECKS = (
    _q3_graph_and_provider_untouched,
    _q3_no_tool_ran,
    _q3_graph_not_run,
    _q3_through_update_state,
    _q3_healthy_unchanged,
    _q3_history_kept,
    _q3_calls_answered,
    _q3_one_answer_each,
    _q3_new_answers_honest,
    _q3_provider_accepts,
)
"""What a repaired thread must hold, in the order a verdict names it (each reads `_Thread`)."""


def _repair_case(repair: Any, d: _RepairDraw, index: int, wire: _Wire) -> None:
    t = _crash(d, index, wire)
    _run_repair(repair, t)
    for check in _REPAIR_CHECKS:
        check(t)


def check_repair(repair: Any, *, seed: int | None = None) -> str:
    key = "q3"
    _is_function(
        key,
        "repair",
        repair,
        "def repair(graph, config): ... graph.update_state(config, ..., as_node='tools')",
        section(RECOVERY, REPAIR),
    )
    draw, cases, wire = _draw_repair(rng(seed)), Cases(key), _Wire()
    try:
        for index, (label, _) in enumerate(_KINDS):
            cases.run(label, lambda index=index: _repair_case(repair, draw, index, wire))
    finally:
        wire.close()
    return cases.result(
        "every crashed thread accepted by the provider again — history kept, existing answers kept, error "
        "answers for the rest, no tool run twice — and a healthy thread left alone."
    )


q3 = Exercise(
    "13",
    "q3",
    ("repair",),
    check_repair,
    (
        "Lesson 13 §3: a provider looks for each call's answer right after the AIMessage that made it. "
        "Rewrite the history in order instead of appending — and keep the answers that exist.",
        "Read `graph.get_state(config).values['messages']`; build a new list: every message except "
        "ToolMessages, and after each AIMessage one answer per call (the existing ToolMessage, or "
        "`ToolMessage('not completed: it may have run', tool_call_id=..., status='error')`). Write it with "
        "`graph.update_state(config, {'messages': [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}, "
        "as_node='tools')`.",
    ),
)

__all__ = ["Fetcher", "Ran", "greedy_model", "q1", "q2", "q3", "search_tool"]
