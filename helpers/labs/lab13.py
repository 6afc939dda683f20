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

Every check observes outcomes from the course's side: the tools it hands over record what really
ran, its own stream reads what the tool wrote, and in q3 the local OpenAI-style endpoint
(`ScriptedOpenAIEndpoint(check_history=True)`, reached by the real `ChatOpenAI` client) gives the
verdict on the repaired history. Budgets, tool names, URLs, tokens and call ids are drawn at random
for every check, so nothing can be typed in; every run of learner code has a time limit. A check
also refuses a verdict obtained by rebinding its own code, its recorders or the endpoint
(`_make_guard`), by replacing the graph's methods, or by writing the checkpointer directly.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import random
import re
import threading
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.errors import GraphRecursionError

from helpers.graphs import tool_loop
from helpers.history import AnswerSavedSaver, unanswered_tool_calls
from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    distinct,
    fail,
    run_learner,
    run_limited,
    section,
    shorten,
)
from helpers.models import ScriptedChatModel

STREAMING = "12_streaming_and_stopping"
RECOVERY = "13_failure_and_recovery"
LIMIT: float | None = None
"""Seconds one run of the learner's code may take before a hang is reported (None: labs.LIMIT)."""

STEP_LIMIT = "3. The step limit: what each agent does"
BUDGET = "5. A tool-call budget: `ToolCallLimitMiddleware`"
PROGRESS = "2. Progress from inside a tool"
MODES = "1. What each stream mode shows of a tools step"
REPAIR = "3. A thread left with unanswered calls, and the provider's 400"
CRASH = "1. A tool raises mid-batch: what the thread holds"
RESUME = "2. Resume: what runs again"

SEARCH_NAMES = ("search", "web_search", "lookup_docs", "find_pages")
"""Names the check gives q1's tool (a guard keyed on one name fails the others)."""
PATIENCE = 8
"""q1: model turns beyond the budget after which a question is declared never-ending."""


class NeverStopped(RuntimeError):
    """Raised by q1's model when the agent keeps asking it long after the budget was spent."""


# == the check's own code: nothing the learner's code changes in it counts =============================
_GUARDED_MODULES = (
    "helpers.labs",
    "helpers.labs.lab13",
    "helpers.history",
    "helpers.graphs",
    "helpers.models",
    "helpers.openai_endpoint",
)
"""Modules whose functions and classes the checks rely on: rebinding one of them (or a method of a
class they define) during a check, or before it from a notebook cell, makes the check fail."""


def _is_code(value: Any) -> bool:
    return (
        inspect.isfunction(value)
        or inspect.isbuiltin(value)
        or inspect.ismethod(value)
        or isinstance(value, staticmethod | classmethod | property | type)
    )


def _guard_targets() -> list[tuple[str, Any]]:
    import importlib
    import sys

    from langgraph.checkpoint.memory import InMemorySaver as Saver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.prebuilt import ToolNode

    targets: list[tuple[str, Any]] = []
    for name in _GUARDED_MODULES:
        module = sys.modules.get(name) or importlib.import_module(name)
        targets.append((name, module))
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                targets.append((f"{name}.{value.__qualname__}", value))
    for cls in (Saver, CompiledStateGraph, ToolNode, StructuredTool):
        for base in cls.__mro__[:-1]:
            targets.append((f"{base.__module__}.{base.__qualname__}", base))
    return targets


def _reloaded(old: Any, new: Any) -> bool:
    """True when `new` is `old` defined again by a reload of the course's module, not a replacement."""
    from helpers.labs import _kind

    if type(old) is not type(new) or getattr(old, "__qualname__", None) != getattr(new, "__qualname__", 0):
        return False
    if isinstance(new, type):
        return new.__module__ == old.__module__
    fn = new.fget if isinstance(new, property) else getattr(new, "__func__", new)
    code = getattr(fn, "__code__", None)
    return code is not None and _kind(code.co_filename) in {"course", "library", "python"}


def _make_guard() -> tuple[Any, Any]:
    """(take, verify): `take()` records the checks' code as it is now (once, at import); `verify()`
    puts back whatever was rebound since and returns what it found, as readable names."""
    taken: list[tuple[str, Any, dict[str, Any]]] = []
    from helpers.labs import _CELL

    def take() -> None:
        taken.clear()
        for label, owner in _guard_targets():
            taken.append((label, owner, {k: v for k, v in vars(owner).items() if _is_code(v)}))

    def verify() -> list[str]:
        found = []
        for label, owner, code in taken:
            now = vars(owner)
            for name, value in list(code.items()):
                if now.get(name) is not value:
                    if name in now and _reloaded(value, now[name]):
                        code[name] = now[name]  # the module was reloaded (`labs report` does): its new code
                        continue
                    found.append(f"{label}.{name}")
                    setattr(owner, name, value)
                    continue
                fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                filename = getattr(getattr(fn, "__code__", None), "co_filename", "")
                if filename and _CELL.search(filename):  # replaced from a notebook cell before the import
                    found.append(f"{label}.{name}")
            added = [
                k for k, v in list(now.items()) if k not in code and _is_code(v) and not isinstance(v, type)
            ]
            for name in added:  # a method shadowing a base class's, a name shadowing a builtin
                found.append(f"{label}.{name}")
                with contextlib.suppress(AttributeError, TypeError):
                    delattr(owner, name)
        return found

    return take, verify


_take_guard, _verify_guard = _make_guard()


def _untouched(key: str, verify: Any) -> None:
    """Raise one `CheckFailed` when the learner's code changed the check's own code."""
    found = verify()
    if found:
        where = section(STREAMING, BUDGET)
        if key == "q2":
            where = section(STREAMING, PROGRESS)
        elif key == "q3":
            where = section(RECOVERY, REPAIR)
        raise fail(
            "the check's own code was changed by your code",
            key=key,
            expected="your code to leave the course's checks, recorders and endpoint as they are",
            observed=f"replaced: {', '.join(sorted(set(found)))[:220]} (the check put back what it could)",
            why="a check grades what your code does; a verdict obtained by rebinding the course's "
            "functions (monkeypatching) says nothing about it",
            where=where,
        )


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
        ran.add(query)
        return f"results for {query}"

    return StructuredTool.from_function(
        search, name=name, description="Search the web for a query.", args_schema=_schema("search")
    )


@functools.cache
def _schema(kind: str) -> type:
    """The argument schema of the course's `search(query)` or `beacon(turn)`, built once."""

    def search(query: str) -> str:
        return ""

    def beacon(turn: int) -> str:
        return ""

    return StructuredTool.from_function(
        {"search": search, "beacon": beacon}[kind], description="."
    ).args_schema


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


def _ask(agent: Any, thread: dict, text: str) -> list[BaseMessage]:
    result = run_learner(
        agent.invoke, {"messages": [HumanMessage(text)]}, thread, limit=LIMIT, name="your agent's invoke"
    )
    if not isinstance(result, dict) or not isinstance(result.get("messages"), list):
        raise fail(
            "the agent's invoke did not return the state",
            expected="`agent.invoke(...)` to return a dict with its 'messages'",
            observed=repr(result)[:200],
            where=section(STREAMING, BUDGET),
        )
    return result["messages"]


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
    """Ask one question; the calls that ran must be in [low, high], the history valid."""
    before = len(ran.calls)
    try:
        messages = _ask(agent, thread, f"Find everything about it ({label}).")
    except LearnerRaised as error:
        raise _raised(error, budget) from None
    count = len(ran.calls) - before
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
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or last.tool_calls:
        raise fail(
            "the run did not end with an answer",
            expected="an AIMessage without tool calls last (the model's answer, or the budget's notice)",
            observed=f"last message {type(last).__name__}: {str(getattr(last, 'content', ''))[:80]!r}",
            where=section(STREAMING, BUDGET),
        )
    if answer is not None and last.content != answer:
        raise fail(
            "the model's own answer is not the last message",
            expected=f"the model answered {answer!r} before the budget ran out: that answer ends the run",
            observed=f"{last.content!r}"[:200],
            where=section(STREAMING, BUDGET),
        )
    return messages


def _agent(build_agent: Any, model: Any, tools: list, budget: int) -> tuple[Any, dict]:
    agent = run_learner(build_agent, model, tools, budget, InMemorySaver(), limit=LIMIT, name="build_agent")
    if agent is None or not callable(getattr(agent, "invoke", None)):
        raise fail(
            "build_agent did not return an agent",
            expected="`build_agent(...)` to return a compiled graph, e.g. `create_agent(...)`",
            observed=repr(agent)[:200],
            where=section(STREAMING, BUDGET),
        )
    return agent, {"configurable": {"thread_id": f"lab13-{uuid.uuid4().hex[:8]}"}}


def check_budget(
    build_agent: Any, *, seed: int | None = None, _verify: Any = _verify_guard, _report: Any = _untouched
) -> str:
    key = "q1"
    shape = "def build_agent(model, tools, budget, checkpointer): ... return create_agent(...)"
    if not callable(build_agent):
        raise fail(
            "`build_agent` must be a function.",
            key=key,
            expected=shape,
            observed=f"a {type(build_agent).__name__}",
            where=section(STREAMING, BUDGET),
        )
    try:
        inspect.signature(build_agent).bind(None, None, None, None)
    except TypeError:
        raise fail(
            "`build_agent` must take 4 arguments: the model, the tools, the budget and the checkpointer.",
            key=key,
            expected=shape,
            observed=f"build_agent{inspect.signature(build_agent)}",
            where=section(STREAMING, BUDGET),
        ) from None
    except ValueError:
        pass
    _report(key, _verify)
    rng = random.Random(seed)
    cases = Cases(key)
    state: dict[str, Any] = {}

    def never_stops() -> None:
        budget, name, ran = rng.choice((2, 4)), rng.choice(SEARCH_NAMES), Ran()
        model, _ = greedy_model(name, 1, budget, rng)
        agent, thread = _agent(build_agent, model, [search_tool(name, ran)], budget)
        state.update(agent=agent, thread=thread, ran=ran, budget=budget)
        _question(agent, thread, ran, budget=budget, low=budget, high=budget, label="first question")
        state["first"] = True

    def second_question() -> None:
        if "agent" not in state:
            raise CheckFailed("not tried: the case above built no agent")
        budget = state["budget"]
        messages = _question(
            state["agent"],
            state["thread"],
            state["ran"],
            budget=budget,
            low=budget,
            high=budget,
            # a thread-wide count is the likely cause only when the first question was right
            label="second question, same thread" if state.get("first") else "second question",
        )
        if not any(isinstance(m, HumanMessage) and "(first question)" in m.content for m in messages):
            raise fail(
                "the second question did not see the first",
                expected="the thread's history: the first question, its calls and answer, then the second",
                observed=f"{[type(m).__name__ for m in messages]}"[:200],
                why="without the checkpointer the agent keeps no thread: pass it on, "
                "`create_agent(..., checkpointer=checkpointer)` (and a `thread_limit` would then count the "
                "first question too)",
                where=section(STREAMING, BUDGET),
            )

    def budget_one() -> None:
        name, ran = rng.choice(SEARCH_NAMES), Ran()
        model, _ = greedy_model(name, 1, 1, rng)
        agent, thread = _agent(build_agent, model, [search_tool(name, ran)], 1)
        _question(agent, thread, ran, budget=1, low=1, high=1, label="budget 1")

    def batches() -> None:
        budget, name, ran = rng.choice((3, 5)), rng.choice(SEARCH_NAMES), Ran()
        model, _ = greedy_model(name, 2, budget, rng)
        agent, thread = _agent(build_agent, model, [search_tool(name, ran)], budget)
        _question(agent, thread, ran, budget=budget, low=budget - 1, high=budget, label="two calls a turn")

    def stops_by_itself() -> None:
        budget, name, ran = 6, rng.choice(SEARCH_NAMES), Ran()
        done = rng.randint(1, 3)
        model, answer = greedy_model(name, 1, budget, rng, stop_after=done)
        agent, thread = _agent(build_agent, model, [search_tool(name, ran)], budget)
        _question(
            agent,
            thread,
            ran,
            budget=budget,
            low=done,
            high=done,
            label="a model that answers",
            answer=answer,
        )

    cases.run(
        "a model that never stops, one call a turn: the budget's calls run, then the run ends", never_stops
    )
    cases.run("a second question on the same thread gets a budget of its own", second_question)
    cases.run("budget 1", budget_one)
    cases.run("two calls a turn, an odd budget: no call beyond it runs", batches)
    cases.run("a model that answers within the budget keeps its answer", stops_by_itself)
    _report(key, _verify)
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
    """The course's `fetch(url)`: records each fetch; raises on the URL named `broken`.

    `fetched` is a copy of the record: only a call of `fetch` adds to it."""

    def __init__(self, broken: str | None = None) -> None:
        self._fetched: list[str] = []
        self.broken = broken
        self._lock = threading.Lock()

    @property
    def fetched(self) -> list[str]:
        """The URLs fetched so far, in order (a copy)."""
        with self._lock:
            return list(self._fetched)

    def __call__(self, url: str) -> str:
        if url == self.broken:
            raise ConnectionError(f"{url} did not answer")
        with self._lock:
            self._fetched.append(url)
        return f"<html>{url}</html>"


def _urls(rng: random.Random, n: int) -> list[str]:
    """`n` different URLs: the broken page is found by URL, so a repeat of it earlier would fail the
    crawl there, too soon."""
    site = rng.choice(["docs", "blog", "shop", "wiki"])
    return distinct(lambda: f"https://{site}.example/{rng.getrandbits(20):05x}", n)


def expected_events(urls: list[str], upto: int | None = None) -> list[dict]:
    """The events q2's tool writes for `urls` (only the first `upto` pages when a later one fails)."""
    n = len(urls)
    return [{"url": u, "done": i, "total": n} for i, u in enumerate(urls[:upto] if upto else urls, 1)]


def _tool(make_crawl_tool: Any, fetch: Fetcher) -> BaseTool:
    tool = run_learner(make_crawl_tool, fetch, limit=LIMIT, name="make_crawl_tool")
    if not isinstance(tool, BaseTool):
        raise fail(
            "make_crawl_tool did not return a tool",
            expected="a tool (`@tool def crawl(urls: list[str]) -> str: ...`, returned by make_crawl_tool)",
            observed=repr(tool)[:200],
            where=section(STREAMING, PROGRESS),
        )
    return tool


def _streamed(tool: BaseTool, urls: list[str]) -> tuple[list[tuple[str, Any]], list[BaseMessage]]:
    """The course streams a graph that calls `tool` once: every (mode, chunk), and the final messages."""
    model = ScriptedChatModel(script=[[{"name": tool.name, "args": {"urls": urls}}], "done"]).bind_tools(
        [tool]
    )
    graph = tool_loop(model, [tool], handle_tool_errors=True)
    chunks: list[tuple[str, Any]] = []

    def run() -> list[BaseMessage]:
        messages: list[BaseMessage] = []
        for mode, chunk in graph.stream(
            {"messages": [HumanMessage("crawl")]}, stream_mode=["updates", "custom"]
        ):
            chunks.append((mode, chunk))
            if mode == "updates":
                for update in chunk.values():
                    items = update if isinstance(update, list) else [update]
                    for item in items:
                        if isinstance(item, dict):
                            messages.extend(item.get("messages", []))
        return messages

    messages = run_learner(run, limit=LIMIT, name="your tool, in a graph the course streams")
    return chunks, messages


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
    if [type(e) for e in got] != [dict] * len(got) or any(set(e) != {"url", "done", "total"} for e in got):
        return shown, "each chunk is the dict {'url': url, 'done': i, 'total': n}, i counted from 1"
    if [e["url"] for e in got] != [e["url"] for e in want]:
        return shown, f"the pages in the order they were fetched: {fetched}"
    return shown, "`done` counts pages from 1; `total` is the number of URLs"


def check_progress(
    make_crawl_tool: Any,
    progress_events: Any,
    *,
    seed: int | None = None,
    _verify: Any = _verify_guard,
    _report: Any = _untouched,
) -> str:
    key = "q2"
    for name, fn, shape in (
        ("make_crawl_tool", make_crawl_tool, "def make_crawl_tool(fetch): ... return crawl"),
        ("progress_events", progress_events, "def progress_events(graph, inputs): ... return [chunks]"),
    ):
        if not callable(fn):
            raise fail(
                f"`{name}` must be a function.",
                key=key,
                expected=shape,
                observed=f"a {type(fn).__name__}",
                where=section(STREAMING, PROGRESS),
            )
    _report(key, _verify)
    rng = random.Random(seed)
    cases = Cases(key)

    def in_a_graph() -> None:
        urls, fetch = _urls(rng, rng.randint(3, 5)), Fetcher()
        chunks, messages = _streamed(_tool(make_crawl_tool, fetch), urls)
        got = [chunk for mode, chunk in chunks if mode == "custom"]
        want = expected_events(urls)
        if got != want:
            observed, why = _events_problem(got, want, fetch.fetched)
            raise fail(
                "the custom stream is not one event per page",
                expected=f"{want[:2]} … ({len(want)} events)",
                observed=observed,
                why=why,
                where=section(STREAMING, PROGRESS),
            )
        modes = [mode if mode == "custom" else next(iter(chunk)) for mode, chunk in chunks]
        if "tools" in modes and modes.index("tools") < max(i for i, m in enumerate(modes) if m == "custom"):
            raise fail(
                "progress came after the tool finished",
                expected="every custom chunk before the tools step's update",
                observed=f"{modes}",
                where=section(STREAMING, PROGRESS),
            )
        if fetch.fetched != urls:
            raise fail(
                "the tool did not fetch every page with `fetch`",
                expected=f"fetch called for {urls}, in order",
                observed=f"fetched {fetch.fetched}",
                where=section(STREAMING, PROGRESS),
            )
        answers = [m for m in messages if isinstance(m, ToolMessage)]
        if not answers or answers[0].status == "error":
            raise fail(
                "the tool failed in the graph",
                expected="a successful ToolMessage",
                observed=f"{answers[0].content if answers else 'no ToolMessage'}"[:200],
                where=section(STREAMING, PROGRESS),
            )

    def a_page_fails() -> None:
        urls = _urls(rng, 4)
        broken = rng.randint(1, 2)  # a page after it too
        fetch = Fetcher(broken=urls[broken])
        chunks, messages = _streamed(_tool(make_crawl_tool, fetch), urls)
        got = [chunk for mode, chunk in chunks if mode == "custom"]
        want = expected_events(urls, upto=broken)
        if got != want:
            observed, why = _events_problem(got, want, fetch.fetched)
            if not got:
                why = (
                    "the pages fetched before the failure were never reported: write each event right "
                    "after its page, not all of them at the end (and let the fetch error out)"
                )
            elif len(got) > len(want):
                why = "the failing page was not fetched: do not report it (or anything after it) as done"
            raise fail(
                f"page {broken + 1} of 4 fails: the {broken} page(s) before it were not reported as they ran",
                expected=f"{want}"[:200],
                observed=observed,
                why=why,
                where=section(STREAMING, PROGRESS),
            )
        answers = [m for m in messages if isinstance(m, ToolMessage)]
        if not answers or answers[0].status != "error":
            raise fail(
                f"page {broken + 1} of 4 fails: the tool reported success",
                expected="the fetch's ConnectionError to leave the tool (this check's ToolNode, built "
                "with `handle_tool_errors=True`, turns it into an error ToolMessage)",
                observed=f"{answers[0].content!r} [{answers[0].status}]" if answers else "no ToolMessage",
                why="a crawl that swallows the failure tells the model it has every page: let the error out",
                where=section(STREAMING, PROGRESS),
            )

    def outside() -> None:
        urls, fetch = _urls(rng, rng.randint(2, 3)), Fetcher()
        tool = _tool(make_crawl_tool, fetch)
        try:
            result = run_learner(
                tool.invoke, {"urls": urls}, limit=LIMIT, name="your tool's invoke, outside a graph"
            )
        except LearnerRaised as error:
            text = f"{type(error.original).__name__}: {error.original}"
            why = (
                "outside a graph the tool gets only its arguments: `tool.invoke({'urls': [...]})` must fetch "
                "the pages and return, with no graph, writer or tool call around it"
            )
            if "__pregel_runtime" in text or isinstance(error.original, KeyError | RuntimeError):
                why = (
                    "`get_stream_writer()` reads the writer from a graph run; outside one it raises "
                    "(KeyError: '__pregel_runtime' under `tool.invoke`, RuntimeError outside any runnable). "
                    "Fall back as lesson 12 §2 does: `try: write = get_stream_writer()` / "
                    "`except (KeyError, RuntimeError): write = lambda chunk: None` — moving the work into a "
                    "function that takes the writer is not enough while the tool still calls "
                    "`get_stream_writer()` unguarded"
                )
            elif "validation error" in text and "runtime" in text:
                why = (
                    "a `runtime: ToolRuntime` argument is injected only by ToolNode: `tool.invoke({...})` "
                    "outside a graph fails its validation. Use `get_stream_writer()` and catch its error, or "
                    "give it a default (`runtime: ToolRuntime = None`) and a writer that does nothing when "
                    "it is None"
                )
            raise fail(
                "called outside a graph, the tool raised",
                expected=f"`tool.invoke({{'urls': [...]}})` to fetch the {len(urls)} pages and return",
                observed=text[:200],
                why=why,
                where=section(STREAMING, PROGRESS),
            ) from None
        if fetch.fetched != urls:
            raise fail(
                "outside a graph, the tool did not fetch the pages",
                expected=f"fetched {urls}",
                observed=f"fetched {fetch.fetched}; returned {result!r}"[:200],
                where=section(STREAMING, PROGRESS),
            )

    def consumer() -> None:
        for turns in (1, 2):
            graph, want = _course_graph(rng, turns)

            got = run_learner(
                progress_events,
                graph,
                {"messages": [HumanMessage("go")]},
                limit=LIMIT,
                name="progress_events",
            )
            if got is not None and not isinstance(got, list | tuple | str | dict):
                got = run_learner(list, got, limit=LIMIT, name="progress_events")  # a generator: read it
            got = list(got) if isinstance(got, list | tuple) else got
            if got != want:
                why = "return the custom chunks themselves, in the order they arrived"
                if got and all(isinstance(g, tuple) and len(g) == 2 for g in got):
                    why = (
                        "with several stream modes each item is (mode, chunk): keep the chunks of mode "
                        "'custom'"
                    )
                elif not got:
                    why = (
                        "stream with `stream_mode='custom'` (or a list holding it): `invoke` and "
                        "'updates' drop them"
                    )
                raise fail(
                    f"progress_events on a graph of the course's ({turns} tool turn(s))",
                    expected=f"{want}"[:200],
                    observed=f"{got}"[:200],
                    why=why,
                    where=section(STREAMING, PROGRESS),
                )

    cases.run("in a graph: one event per page, in order, while the tool runs", in_a_graph)
    cases.run("a page fails: the pages before it were already reported", a_page_fails)
    cases.run("outside a graph: the tool still works", outside)
    cases.run("progress_events returns a graph's custom chunks, in order", consumer)
    _report(key, _verify)
    return cases.result(
        "progress streamed page by page (also up to a failure), the tool usable outside a graph, and the "
        "custom chunks read back in order."
    )


def _course_graph(rng: random.Random, turns: int) -> tuple[Any, list]:
    """A graph whose tool writes random tokens (nowhere in the state): the chunks expected back."""
    tokens = [[f"t{rng.getrandbits(28):07x}" for _ in range(rng.randint(2, 3))] for _ in range(turns)]

    def beacon(turn: int) -> str:
        write = get_stream_writer()
        for i, token in enumerate(tokens[turn]):
            write({"token": token, "step": i})
        return f"turn {turn} done"

    tool = StructuredTool.from_function(
        beacon, name="beacon", description="Send a few beacons.", args_schema=_schema("beacon")
    )
    script = [[{"name": "beacon", "args": {"turn": t}}] for t in range(turns)] + ["over"]
    graph = tool_loop(ScriptedChatModel(script=script).bind_tools([tool]), [tool])
    want = [{"token": token, "step": i} for turn in tokens for i, token in enumerate(turn)]
    return graph, want


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


# == q3: repair a thread left with unanswered calls ===================================================
class Effects:
    """What q3's tools really did (thread-safe)."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        with self._lock:
            self.done.append(value)


def payment_tools(effects: Effects, service: dict, saved: threading.Event | None = None) -> list[BaseTool]:
    """`charge` (a payment that must happen once) and `notify` (down while `service['up']` is False).

    With `saved` (set by `AnswerSavedSaver` once `charge`'s answer is in the checkpointer), `notify` raises
    only after that: a crashed `create_agent` step then always keeps `charge`'s answer. Waiting for
    `charge` to return is not enough. A sibling that finishes while the failed step is shutting down
    loses its answer (its write is submitted to an executor already shut down: `RuntimeError: cannot
    schedule new futures after shutdown` in the log), and then `repair` would see another thread.
    """

    def charge(amount: int) -> str:
        effects.add(f"charge {amount}")
        return f"charged {amount}"

    def notify(user: str) -> str:
        effects.add(f"notify {user}")
        if not service["up"]:
            if saved is not None:
                saved.wait(5.0)
            raise ConnectionError("notification service is down")
        return f"notified {user}"

    charge_schema, notify_schema = _payment_schemas()
    return [
        StructuredTool.from_function(charge, description="Charge the customer.", args_schema=charge_schema),
        StructuredTool.from_function(notify, description="Notify the user.", args_schema=notify_schema),
    ]


@functools.cache
def _payment_schemas() -> tuple[type, type]:
    """The argument schemas of `charge` and `notify`, built once (a schema costs a pydantic model)."""

    def charge(amount: int) -> str:
        return ""

    def notify(user: str) -> str:
        return ""

    return tuple(StructuredTool.from_function(f, description=".").args_schema for f in (charge, notify))


@functools.cache
def _payment_wire() -> tuple[dict, ...]:
    """`charge` and `notify` as the OpenAI tool definitions `bind_tools` sends, converted once."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return tuple(convert_to_openai_tool(t) for t in payment_tools(Effects(), {"up": True}))


def _snapshot(messages: list[BaseMessage]) -> list[tuple[str, str, str, str]]:
    return [(type(m).__name__, m.id or "", str(m.content), getattr(m, "status", "")) for m in messages]


_WIRE: dict[str, Any] = {}
_WIRE_LOCK = threading.Lock()


def _wire() -> dict[str, Any]:
    """One local OpenAI-style endpoint (`check_history=True`) and one `ChatOpenAI` client for every q3
    case, started on first use: a client costs a fresh TLS context, a case only its requests. The
    turns each case scripts go in `current["turns"]`."""
    with _WIRE_LOCK:
        if "llm" not in _WIRE:
            from langchain_openai import ChatOpenAI

            from helpers.openai_endpoint import ScriptedOpenAIEndpoint

            current: dict[str, Any] = {"turns": []}
            script = [lambda messages, k=k: current["turns"][k] for k in range(6)]
            endpoint = ScriptedOpenAIEndpoint(script, check_history=True).start()
            llm = ChatOpenAI(
                model="gpt-4o",
                base_url=endpoint.base_url,
                api_key="unused",
                use_responses_api=False,
                max_retries=0,
                timeout=10,
            )
            _WIRE.update(endpoint=endpoint, llm=llm, current=current)
        return _WIRE


SUCCESS = re.compile(
    r"\b(done|ok|okay|success\w*|succeeded|completed?|finished|processed|confirmed|went through|paid|"
    r"charged|notified|sent|worked|all good|fine)\b",
    re.I,
)
REASSURANCE = re.compile(
    r"\b(?:no|without|zero)\s+(?:fail\w*|errors?|problems?|issues?)\b|\bnot a problem\b|\berror-free\b", re.I
)
"""Phrases that deny a failure ('no problem', 'without errors'): a claim of success, not doubt."""
DOUBT = re.compile(
    r"\b(?:not|no|never|may|might|maybe|perhaps|possibly|unknown|unclear|uncertain|unconfirmed|unverified|"
    r"unsure|unable|unanswered|cannot|can't|couldn't|don't know|whether|fail\w*|crash\w*|interrupted|died|"
    r"stopped|lost)\b|\?",
    re.I,
)
"""Words that put the outcome in doubt ('not completed', 'may have run', 'unsure whether')."""


def _content_text(content: Any) -> str:
    """An answer's text: a string, or the text of its content blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        blocks = [b for b in content if isinstance(b, (str, dict))]
        return " ".join(b if isinstance(b, str) else str(b.get("text", "")) for b in blocks)
    return str(content)


def _says_something(content: Any) -> bool:
    """False for an empty answer, or one of punctuation and invisible characters only."""
    return bool(re.search(r"\w{2,}", _content_text(content)))


def _claims_success(content: Any) -> bool:
    """True for an answer that says the call worked ('done', 'charged 42', 'no problem') with no
    doubt in it."""
    text = _content_text(content)
    reassured = bool(REASSURANCE.search(text))
    text = REASSURANCE.sub(" ", text)
    return (reassured or bool(SUCCESS.search(text))) and not DOUBT.search(text)


def _repair_case(repair: Any, rng: random.Random, kind: str) -> None:
    from langchain.agents import create_agent

    amount, user = rng.randint(2, 99), rng.choice(["ann", "bo", "cy", "di"])

    def turn() -> AIMessage:
        calls = [
            {"name": "charge", "args": {"amount": amount}, "id": f"call_{rng.getrandbits(40):010x}"},
            {"name": "notify", "args": {"user": user}, "id": f"call_{rng.getrandbits(40):010x}"},
        ]
        rng.shuffle(calls)
        return AIMessage("", tool_calls=[{**c, "type": "tool_call"} for c in calls])

    crashed = [turn() for _ in range(2 if kind == "crashed twice" else 1)]
    ids = [c["id"] for message in crashed for c in message.tool_calls]
    replies = [f"reply-{rng.getrandbits(24):06x}" for _ in range(5)]
    wire = _wire()
    endpoint, llm = wire["endpoint"], wire["llm"]
    wire["current"]["turns"] = [*crashed, *replies]
    effects, service = Effects(), {"up": kind == "healthy"}
    if kind == "create_agent":
        saved = threading.Event()
        tools = payment_tools(effects, service, saved)
        graph = create_agent(llm, tools, checkpointer=AnswerSavedSaver("charge", saved))
    else:
        tools = payment_tools(effects, service)
        bound = llm.bind_tools(list(_payment_wire()))  # the same request as `bind_tools(tools)`
        graph = tool_loop(bound, tools).builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"lab13-{uuid.uuid4().hex[:8]}"}}

    def first_turn() -> None:
        try:
            graph.invoke({"messages": [HumanMessage(f"Charge {user} {amount} and tell them")]}, config)
        except ConnectionError:
            pass
        if kind == "asked again":
            try:
                graph.invoke({"messages": [HumanMessage("Hello? Did it work?")]}, config)
            except Exception:  # noqa: BLE001 - the provider's 400, as a real thread meets it
                pass
        if kind == "crashed twice":  # a lenient server let the thread go on, and it crashed again
            endpoint.check_history = False
            try:
                graph.invoke({"messages": [HumanMessage("Try again, please")]}, config)
            except ConnectionError:
                pass
            finally:
                endpoint.check_history = True

    run_limited(first_turn, limit=30, name="the course's crashed turn")
    before = graph.get_state(config).values["messages"]
    kept = {m.tool_call_id: m for m in before if isinstance(m, ToolMessage)}
    if kind == "create_agent" and not kept:  # the case must be the one it names (see payment_tools)
        raise RuntimeError(
            "lab 13's create_agent case lost charge's answer before the repair ran: "
            "re-run the check; if it keeps happening, run `make doctor`"
        )
    effects_before = list(effects.done)
    checkpoint_before = graph.checkpointer.get_tuple(config)
    graph_before = dict(vars(graph))
    endpoint_before = set(vars(endpoint))

    try:
        run_learner(repair, graph, config, limit=LIMIT, name="repair")
    except LearnerRaised as error:
        if effects.done != effects_before:
            raise fail(
                "the repair ran tools again",
                expected="no tool runs during a repair",
                observed=f"ran again: {effects.done[len(effects_before) :]}, then {error}"[:220],
                why="resuming (`graph.invoke(None, config)`) re-runs the failed step — a payment may run "
                "again, and the service is still down: write the answers with `update_state` instead",
                where=section(RECOVERY, RESUME),
            ) from None
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
    changed_graph = sorted(  # a method shadowed or the graph's parts swapped (not a name or a flag)
        k
        for k in {*graph_before, *vars(graph)}
        if vars(graph).get(k) is not graph_before.get(k)
        and (callable(vars(graph).get(k)) or k in {"checkpointer", "nodes", "channels", "store", "builder"})
    )
    if changed_graph or set(vars(endpoint)) != endpoint_before or endpoint.check_history is not True:
        for k in changed_graph:
            if k in graph_before:
                setattr(graph, k, graph_before[k])
            else:
                delattr(graph, k)
        endpoint.check_history = True
        raise fail(
            "the repair changed the graph or the provider, not the thread",
            expected="only the thread's state changed (through `graph.update_state`)",
            observed=f"changed: {changed_graph or 'the endpoint'}"[:200],
            why="replacing the graph's methods or checkpointer, or relaxing the endpoint's history check, "
            "fakes the verdict: the next question must be accepted by the provider as it is",
            where=section(RECOVERY, REPAIR),
        )
    if effects.done != effects_before:
        raise fail(
            "the repair ran tools again",
            expected="no tool runs during a repair",
            observed=f"ran again: {effects.done[len(effects_before) :]}",
            why="resuming re-runs the failed step (a payment may run again, and the service is still "
            "down): write the answers with `update_state` instead",
            where=section(RECOVERY, RESUME),
        )
    ran = sorted(
        {
            str(t.metadata.get("source"))
            for t in graph.checkpointer.list(config)
            if t.checkpoint["id"] > checkpoint_before.checkpoint["id"]
            and t.metadata.get("source") in ("input", "loop")
        }
    )
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
    after = graph.get_state(config).values["messages"]
    where = section(RECOVERY, REPAIR)
    checkpoint_after = graph.checkpointer.get_tuple(config)
    if _snapshot(after) != _snapshot(before) and (
        checkpoint_after.checkpoint["id"] == checkpoint_before.checkpoint["id"]
        or checkpoint_after.metadata.get("source") != "update"
    ):
        raise fail(
            "the repair did not go through `update_state`",
            expected="the repaired history written by `graph.update_state(config, ..., as_node='tools')`",
            observed=f"the thread's latest checkpoint: {checkpoint_after.metadata}"[:200],
            why="a checkpoint written straight to the checkpointer skips the graph's bookkeeping (channel "
            "versions, the node it counts as written by); `update_state` is the graph's own way to write "
            "a state",
            where=where,
        )
    if kind == "healthy" and _snapshot(after) != _snapshot(before):
        raise fail(
            "a thread with nothing to repair was changed",
            expected="the same messages, in the same order (every call already answered)",
            observed=f"{[type(m).__name__ for m in before]} became {[type(m).__name__ for m in after]}"
            if [type(m) for m in before] != [type(m) for m in after]
            else "the same kinds of message, with other ids, contents or statuses",
            why="a thread whose calls are all answered needs nothing: write answers only for calls nobody "
            "answered — no extra message, no second answer",
            where=where,
        )
    originals = [m for m in before if not isinstance(m, ToolMessage)]
    after_ids = [m.id for m in after]
    lost = [m for m in originals if m.id not in after_ids]
    copied = {(type(m), str(m.content)) for m in after}
    if lost and all((type(m), str(m.content)) in copied for m in lost):
        raise fail(
            "the repair gave the thread's messages new ids",
            expected="every question and model turn kept as it is, its id included",
            observed=shorten(f"new ids for: {[(type(m).__name__, str(m.content)[:30]) for m in lost]}", 200),
            why="copies without their ids are new messages to the thread (the originals deleted): put the "
            "messages `get_state` returned back themselves",
            where=where,
        )
    if lost:
        raise fail(
            "the repair deleted messages of the thread",
            expected="every question and every model turn kept (the history is the conversation)",
            observed=f"gone: {[(type(m).__name__, str(m.content)[:30] or 'tool calls') for m in lost]}",
            why="deleting the AIMessage that made the calls hides the problem and loses what the model "
            "asked for — and an answer that exists then follows no call, which the provider refuses too: "
            "answer its calls instead",
            where=where,
        )
    if [i for i in after_ids if i in {m.id for m in originals}] != [m.id for m in originals]:
        raise fail(
            "the repair changed the order of the conversation",
            expected="questions and model turns in their original order",
            observed=f"{[type(m).__name__ for m in after]}",
            where=where,
        )
    by_id = {m.id: m for m in after}
    changed = [
        m
        for m in originals
        if (type(by_id[m.id]), by_id[m.id].content, [c["id"] for c in getattr(by_id[m.id], "tool_calls", [])])
        != (type(m), m.content, [c["id"] for c in getattr(m, "tool_calls", [])])
    ]
    if changed:
        raise fail(
            "the repair rewrote a question or a model turn",
            expected="every question and model turn as it was, its tool calls included",
            observed=f"changed: {[(type(m).__name__, m.id) for m in changed]}"[:200],
            why="erasing an AIMessage's tool calls hides them from the provider and loses what the model "
            "asked for: keep the calls and answer them",
            where=where,
        )
    answers = [m for m in after if isinstance(m, ToolMessage)]
    counts = {i: sum(m.tool_call_id == i for m in answers) for i in ids}
    still = [i for i, n in counts.items() if n == 0 and i not in kept]
    if still and len(still) == len(ids) - len(kept):
        raise fail(
            "the calls nobody answered are still unanswered",
            expected="an error ToolMessage for each of them, right after the AIMessage that made it",
            observed=f"no answer for {still}",
            why="the provider refuses every later question on this thread with a 400 until each call is "
            "answered",
            where=where,
        )
    dropped = [i for i in kept if counts.get(i) == 0]
    if dropped:
        raise fail(
            "an answer the thread held was lost",
            expected=f"{[kept[i].content for i in dropped]} kept for {dropped}",
            observed="no answer for it after the repair",
            why="`create_agent` keeps a finished call's answer only as a pending write (shown by get_state); "
            "any `update_state` drops pending writes — write that answer back with the rest, as the lesson's "
            "repair does by rewriting the whole history",
            where=section(RECOVERY, REPAIR),
        )
    stray = [m.tool_call_id for m in answers if m.tool_call_id not in ids]
    if stray:
        raise fail(
            "the repair added an answer to a call nobody made",
            expected=f"answers only for the calls {ids}",
            observed=f"answers for {stray}"[:200],
            why="a provider refuses a tool message that answers no call of the AIMessage before it "
            "(OpenAI with a 400): answer each call by its own id, and add no answer of your own",
            where=where,
        )
    if any(n != 1 for n in counts.values()):
        raise fail(
            "not every call has exactly one answer",
            expected="one ToolMessage per tool call",
            observed=", ".join(f"{i}: {n}" for i, n in counts.items()),
            why="every call of every AIMessage needs an answer — an earlier turn's calls too, not only the "
            "last one's"
            if 0 in counts.values()
            else "answer the calls nobody answered — once each; an answered call keeps its own answer",
            where=where,
        )
    for call_id, old in kept.items():
        new = next(m for m in answers if m.tool_call_id == call_id)
        if (new.content, new.status) != (old.content, old.status):
            raise fail(
                "an answer that existed was replaced",
                expected=f"{old.content!r} kept for {call_id}",
                observed=f"{new.content!r} [{new.status}]",
                why="`create_agent` keeps a finished call's answer (a pending write, shown in get_state): "
                "keep it and answer only the calls without one",
                where=section(RECOVERY, CRASH),
            )
    empty = [m.tool_call_id for m in answers if m.tool_call_id not in kept and not _says_something(m.content)]
    if empty:
        raise fail(
            "an answer written by the repair says nothing",
            expected="an error ToolMessage saying the call may not have run",
            observed=f"empty answers for {empty}",
            why="the model reads only the answer's text: an empty one tells it nothing of what happened",
            where=where,
        )
    invented = [
        m
        for m in answers
        if m.tool_call_id not in kept and (m.status != "error" or _claims_success(m.content))
    ]
    if invented:
        raise fail(
            "a call nobody answered was given a success answer",
            expected="an error ToolMessage (status='error', saying it may not have run) for each call "
            "without an answer",
            observed=f"{[(m.content, m.status) for m in invented]}"[:200],
            why="the thread cannot know whether the call did its work: say so with status='error' "
            "(e.g. 'not completed: the tool step crashed; it may have run'), never 'done'",
            where=where,
        )
    endpoint.reset()

    def next_turn() -> list[BaseMessage]:
        return graph.invoke({"messages": [HumanMessage("What is my balance?")]}, config)["messages"]

    try:
        final = run_limited(next_turn, limit=30, name="the next question")
    except Exception as error:  # noqa: BLE001 - the provider's verdict
        rejected = [e for e in endpoint.exchanges if e.status != 200]
        said = rejected[0].response["error"]["message"] if rejected else f"{type(error).__name__}: {error}"
        raise fail(
            "the next question was refused by the provider",
            expected="a 200 from the endpoint for the next question",
            observed=f"400: {said}"[:220],
            why="each AIMessage's calls must be answered right after it, before any other message: "
            "appended after a later question the answers are still missing to the provider",
            where=where,
        ) from None
    if effects.done != effects_before:
        raise fail(
            "the next question ran the old calls again",
            expected="no tool call of the crashed turn runs again",
            observed=f"ran again: {effects.done[len(effects_before) :]}",
            where=section(RECOVERY, RESUME),
        )
    if not isinstance(final[-1], AIMessage) or final[-1].content not in replies:
        raise fail(
            "the next question did not reach the model",
            expected="the model's reply last",
            observed=f"{type(final[-1]).__name__}: {str(final[-1].content)[:80]!r}",
            where=where,
        )


def check_repair(
    repair: Any, *, seed: int | None = None, _verify: Any = _verify_guard, _report: Any = _untouched
) -> str:
    key = "q3"
    if not callable(repair):
        raise fail(
            "`repair` must be a function.",
            key=key,
            expected="def repair(graph, config): ... graph.update_state(config, ..., as_node='tools')",
            observed=f"a {type(repair).__name__}",
            where=section(RECOVERY, REPAIR),
        )
    _report(key, _verify)
    rng = random.Random(seed)
    cases = Cases(key)
    for label, kind in (
        ("a ToolNode batch that crashed: both calls unanswered", "batch"),
        ("create_agent that crashed: one answer kept, one call unanswered", "create_agent"),
        ("the user asked again before the repair (the 400 already met)", "asked again"),
        ("two crashed turns (a lenient server let the thread go on)", "crashed twice"),
        ("a thread with nothing to repair stays as it is", "healthy"),
    ):
        cases.run(label, lambda kind=kind: _repair_case(repair, rng, kind))
    _report(key, _verify)
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

__all__ = ["Effects", "Fetcher", "Ran", "expected_events", "payment_tools", "q1", "q2", "q3", "search_tool"]

_take_guard()
