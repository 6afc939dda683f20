"""Lab 13 as a learner meets it: for each exercise, correct answers written differently are accepted,
and the wrong answers real beginners write — hard-coded output, faked outcomes, a hang, an exception,
the starter as generated — are rejected with a message that names the mistake."""

from __future__ import annotations

import asyncio
import linecache
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import nbformat
import pytest
from lab_checks import accepted, assert_verdicts, verdicts
from lab_checks import rejected as _rejected
from langchain.agents import create_agent
from langchain.agents.middleware import ToolCallLimitMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from pydantic.warnings import PydanticDeprecationWarning

from helpers.history import unanswered_tool_calls
from helpers.labs import LABS, NAMES, CheckFailed, guard, lab13, rng, solution_namespace
from helpers.labs import build as labs_build

SOL = solution_namespace("13")


def rejected(exercise, namespace: dict, *phrases: str) -> str:
    """The shared check (tests/lab_checks.py), with room for lab 13's longer verdicts."""
    return _rejected(exercise, namespace, *phrases, max_lines=30)


def judged(checker, answers: dict) -> dict[str, str]:
    """`verdicts` (every answer at once) with pydantic's deprecation warning ignored: answers that build
    `@tool`s in several threads at once trip langchain-core's `warnings.catch_warnings()`, which is not
    thread-safe (one thread restores the filters while another still relies on its "ignore")."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PydanticDeprecationWarning)
        return verdicts(checker, answers)


def starter_namespace() -> dict:
    """The generated starter's code cells (not its checks and hints), run as a learner runs them."""
    namespace: dict = {}
    for number, cell in enumerate(nbformat.read(LABS / f"{NAMES['13']}.ipynb", as_version=4).cells):
        if cell.cell_type != "code" or ".check(" in cell.source or ".hint(" in cell.source:
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        name = f"/tmp/ipykernel_12/{number}.py"  # named like a notebook cell, its lines readable
        linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)
        exec(compile(code, name, "exec"), namespace)  # noqa: S102 - the course's own starter
    return namespace


def test_the_starter_is_generated_and_every_exercise_is_still_a_stub():
    committed = (LABS / f"{NAMES['13']}.ipynb").read_text(encoding="utf-8")
    assert committed == labs_build.starter_text(NAMES["13"])
    starter = starter_namespace()
    for exercise in (lab13.q1, lab13.q2, lab13.q3):
        rejected(exercise, starter, "still raises NotImplementedError", "Replace that `raise` line")


# == q1: a budget ========================================================================================
def used_in_this_question(messages) -> int:
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    return sum(isinstance(m, ToolMessage) and m.status != "error" for m in messages[start:])


def hand_built(model, tools, budget, checkpointer):  # lesson 04's loop with a gate before the tools
    llm = model.bind_tools(tools)

    def call_model(state):
        return {"messages": [llm.invoke(state["messages"])]}

    def gate(state):
        calls = state["messages"][-1].tool_calls
        if used_in_this_question(state["messages"]) + len(calls) <= budget:
            return Command(goto="tools")
        refused = [ToolMessage("budget spent", tool_call_id=c["id"], status="error") for c in calls]
        return Command(goto=END, update={"messages": [*refused, AIMessage("Stopped: the budget is spent.")]})

    builder = StateGraph(MessagesState)
    builder.add_node("llm", call_model)
    builder.add_node("gate", gate, destinations=("tools", END))
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition, {"tools": "gate", END: END})
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


class BudgetedAgent:  # a callable object, the middleware named for the one tool, a tuple
    def __call__(self, model, tools, budget, checkpointer):
        limit = ToolCallLimitMiddleware(tool_name=tools[0].name, run_limit=budget, exit_behavior="end")
        return create_agent(model=model, tools=tools, checkpointer=checkpointer, middleware=(limit,))


def two_limits(model, tools, budget, checkpointer):  # a generous thread limit beside the run limit
    middleware = [ToolCallLimitMiddleware(thread_limit=100 * budget, run_limit=budget, exit_behavior="end")]
    return create_agent(model, tools, middleware=middleware, checkpointer=checkpointer)


@pytest.mark.parametrize(
    "build_agent",
    [SOL["build_agent"], hand_built, BudgetedAgent(), two_limits],
    ids=["solution", "hand-built-gate", "callable-object-per-tool", "thread-and-run-limit"],
)
def test_lab13_q1_accepts_every_budget_that_stops_the_run(build_agent, capsys):
    accepted(lab13.q1, {"build_agent": build_agent}, capsys)


def limited(**options):
    def build_agent(model, tools, budget, checkpointer):
        limit = ToolCallLimitMiddleware(**{k: budget if v == "budget" else v for k, v in options.items()})
        return create_agent(model, tools, middleware=[limit], checkpointer=checkpointer)

    return build_agent


def off_by_one(model, tools, budget, checkpointer):
    limit = ToolCallLimitMiddleware(run_limit=budget + 1, exit_behavior="end")
    return create_agent(model, tools, middleware=[limit], checkpointer=checkpointer)


def step_limit(model, tools, budget, checkpointer):  # "stop it with recursion_limit"
    agent = create_agent(model, tools, checkpointer=checkpointer)
    return agent.with_config(recursion_limit=2 * budget + 2)


def ends_unanswered(model, tools, budget, checkpointer):  # route to END once the budget is used
    llm = model.bind_tools(tools)

    def route(state):
        if not state["messages"][-1].tool_calls or used_in_this_question(state["messages"]) >= budget:
            return END
        return "tools"

    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [llm.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", route, ["tools", END])
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


def thread_limit_twice(model, tools, budget, checkpointer):  # lets two questions through, not three
    limit = ToolCallLimitMiddleware(run_limit=budget, thread_limit=2 * budget, exit_behavior="end")
    return create_agent(model, tools, middleware=[limit], checkpointer=checkpointer)


def built_once():  # the first agent kept and handed out again
    kept = []

    def build_agent(model, tools, budget, checkpointer):
        if not kept:
            limit = ToolCallLimitMiddleware(run_limit=budget, exit_behavior="end")
            kept.append(create_agent(model, tools, middleware=[limit], checkpointer=checkpointer))
        return kept[0]

    return build_agent


@pytest.mark.parametrize(
    ("build_agent", "phrases"),
    [
        (lambda model, tools, budget, checkpointer: create_agent(model, tools), ["the agent never stopped"]),
        (thread_limit_twice, ["✘ a second question", "only 0 tool call(s) ran", "use `run_limit`"]),
        (built_once(), ["built before", "build it inside `build_agent`, every time"]),
        (
            limited(run_limit="budget"),
            ["never stopped", "exit_behavior='continue'", "`exit_behavior='end'` ends"],
        ),
        (limited(run_limit="budget", exit_behavior="error"), ["raised instead of ending", "ToolCallLimit"]),
        (limited(thread_limit="budget", exit_behavior="end"), ["✘ a second question", "use `run_limit`"]),
        (off_by_one, ["tool calls ran with a budget of", "`run_limit=budget`"]),
        (limited(run_limit=3, exit_behavior="end"), ["✘ budget 1", "with a budget of 1"]),
        (step_limit, ["hit the step limit and raised", "GraphRecursionError"]),
        (ends_unanswered, ["tool calls nobody answered", "provider's 400"]),
        (lambda model, tools, budget, checkpointer: None, ["did not return an agent"]),
    ],
    ids=[
        "no-budget",
        "thread-limit-twice-the-budget",
        "an-agent-built-once",
        "exit-continue",
        "exit-error",
        "thread-limit",
        "off-by-one",
        "hard-coded-budget",
        "recursion-limit",
        "end-with-calls-unanswered",
        "returns-none",
    ],
)
def test_lab13_q1_rejects_budgets_that_do_not_stop_or_lose_the_history(build_agent, phrases):
    message = rejected(lab13.q1, {"build_agent": build_agent}, *phrases)
    assert "13_failure_and_recovery" in message or "12_streaming_and_stopping" in message


@pytest.mark.parametrize(
    ("exercise", "namespace", "cause"),
    [
        (lab13.q1, {"build_agent": limited(run_limit="budget")}, "`exit_behavior='continue'` (the default)"),
        (
            lab13.q1,
            {"build_agent": limited(run_limit="budget", exit_behavior="error")},
            "`exit_behavior='error'` raises",
        ),
    ],
    ids=["exit-continue", "exit-error"],
)
def test_lab13_a_cause_shared_by_several_cases_is_explained_once(exercise, namespace, cause):
    message = rejected(exercise, namespace, cause)
    assert message.count(cause) == 1, message
    assert message.count("why:      as above") >= 2, message  # each later case keeps its own observation


def test_lab13_q1_hard_coding_fails_whatever_the_budget_drawn():
    for seed, fixed in enumerate((1, 2, 3, 4, 5)):  # budget 1 and a budget of 2 or 4 are always asked
        with pytest.raises(CheckFailed):
            lab13.check_budget(limited(run_limit=fixed, exit_behavior="end"), seed=seed)


def test_lab13_q1_faults_become_feedback(monkeypatch, capsys):
    monkeypatch.setattr(lab13, "LIMIT", 0.4)
    never = threading.Event()

    def waits(model, tools, budget, checkpointer):
        never.wait()

    try:
        message = rejected(lab13.q1, {"build_agent": waits}, "did not return within 0.4 s", "build_agent")
    finally:
        never.set()
    assert "not tried" in message  # one hang costs one time limit
    rejected(lab13.q1, {"build_agent": lambda model, tools, budget, checkpointer: {}["agent"]}, "KeyError")
    rejected(lab13.q1, {"build_agent": lambda model, tools, budget: None}, "must take 4 arguments")
    rejected(lab13.q1, {"build_agent": "create_agent"}, "must be a function")
    rejected(lab13.q1, {}, "`build_agent` is not defined")
    monkeypatch.setattr(lab13, "LIMIT", None)
    accepted(lab13.q1, SOL, capsys)  # usable after the hang


# == q2: progress from a slow tool ======================================================================
def crawl_pages(urls, fetch, write):  # lesson 12's fix: the work takes the writer
    for done, url in enumerate(urls, 1):
        fetch(url)
        write({"url": url, "done": done, "total": len(urls)})
    return f"{len(urls)} pages"


def plain_function_tool(fetch):
    def crawl(urls: list[str]) -> str:
        try:
            write = get_stream_writer()
        except Exception:  # noqa: BLE001 - outside a graph
            write = print
        return crawl_pages(urls, fetch, write)

    return StructuredTool.from_function(crawl, name="crawl_site", description="Crawl pages.")


def filtered_events(graph, inputs):  # two modes, keep the custom ones
    return [
        chunk for mode, chunk in graph.stream(inputs, stream_mode=["updates", "custom"]) if mode == "custom"
    ]


def generated_events(graph, inputs):  # a generator
    yield from graph.stream(inputs, stream_mode="custom")


def writer_each_time(fetch):  # asks for the writer on every page
    @tool
    def fetch_pages(urls: list[str]) -> str:
        """Fetch pages."""
        for i, url in enumerate(urls):
            fetch(url)
            try:
                get_stream_writer()({"url": url, "done": i + 1, "total": len(urls)})
            except KeyError:
                pass
        return "ok"

    return fetch_pages


@pytest.mark.parametrize(
    ("make_crawl_tool", "progress_events"),
    [
        (SOL["make_crawl_tool"], SOL["progress_events"]),
        (plain_function_tool, filtered_events),
        (writer_each_time, generated_events),
    ],
    ids=["solution", "plain-function-and-two-modes", "writer-per-page-and-a-generator"],
)
def test_lab13_q2_accepts_every_way_of_streaming_progress(make_crawl_tool, progress_events, capsys):
    accepted(lab13.q2, {"make_crawl_tool": make_crawl_tool, "progress_events": progress_events}, capsys)


def q2(make_crawl_tool=None, progress_events=None) -> dict:
    return {
        "make_crawl_tool": make_crawl_tool or SOL["make_crawl_tool"],
        "progress_events": progress_events or SOL["progress_events"],
    }


def silent(fetch):  # fetches, never reports
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        for url in urls:
            fetch(url)
        return "done"

    return crawl


def at_the_end(fetch):  # progress collected, written once the crawl is over
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except KeyError:
            write = None
        events = []
        for i, url in enumerate(urls, 1):
            fetch(url)
            events.append({"url": url, "done": i, "total": len(urls)})
        for event in events:
            if write:
                write(event)
        return "done"

    return crawl


def one_summary(fetch):
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        for url in urls:
            fetch(url)
        try:
            get_stream_writer()({"url": urls[-1], "done": len(urls), "total": len(urls)})
        except KeyError:
            pass
        return "done"

    return crawl


def unguarded(fetch):  # lesson 12's first crawl: fine in a graph, KeyError outside
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        write = get_stream_writer()
        for i, url in enumerate(urls, 1):
            fetch(url)
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def with_runtime(fetch):
    @tool
    def crawl(urls: list[str], runtime: ToolRuntime) -> str:
        """Crawl."""
        for i, url in enumerate(urls, 1):
            fetch(url)
            runtime.stream_writer({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def from_zero(fetch):
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except KeyError:
            return "no graph"
        for i, url in enumerate(urls):
            fetch(url)
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def skips_failures(fetch):  # a failing page is skipped and the crawl goes on
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except KeyError:
            write = lambda chunk: None  # noqa: E731
        for i, url in enumerate(urls, 1):
            try:
                fetch(url)
            except ConnectionError:
                continue
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def stops_quietly(fetch):  # a failing page ends the crawl with a success
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except KeyError:
            write = lambda chunk: None  # noqa: E731
        for i, url in enumerate(urls, 1):
            try:
                fetch(url)
            except ConnectionError:
                break
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def written_by_hand(graph, inputs):  # events made up from the final state, no stream
    messages = graph.invoke(inputs)["messages"]
    return [{"url": m.content, "done": 1, "total": 1} for m in messages if isinstance(m, ToolMessage)]


def written_in_finally(fetch):  # progress kept in a list and written in a `finally`: right events, too late
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except (KeyError, RuntimeError):
            write = lambda chunk: None  # noqa: E731
        events = []
        try:
            for i, url in enumerate(urls, 1):
                fetch(url)
                events.append({"url": url, "done": i, "total": len(urls)})
        finally:
            for event in events:
                write(event)
        return "done"

    return crawl


def written_before_fetching(fetch):  # "page i of n" announced, then fetched
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except (KeyError, RuntimeError):
            write = lambda chunk: None  # noqa: E731
        for i, url in enumerate(urls, 1):
            write({"url": url, "done": i, "total": len(urls)})
            fetch(url)
        return "done"

    return crawl


class AlwaysEqual:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class EqualList(list):
    def __eq__(self, other):
        return True


class Url(str):
    pass


def always_equal_chunks(fetch):  # each page fetched, an object equal to anything written for it
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except (KeyError, RuntimeError):
            write = lambda chunk: None  # noqa: E731
        for url in urls:
            fetch(url)
            write(AlwaysEqual())
        return "done"

    return crawl


def str_subclass_urls(fetch):  # the right dicts, the URL a str subclass
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except (KeyError, RuntimeError):
            write = lambda chunk: None  # noqa: E731
        for i, url in enumerate(urls, 1):
            fetch(url)
            write({"url": Url(url), "done": i, "total": len(urls)})
        return "done"

    return crawl


def typed_chunks(done, total):  # each page fetched and reported, `done` and `total` of other types
    def make_crawl_tool(fetch):
        @tool
        def crawl(urls: list[str]) -> str:
            """Crawl."""
            try:
                write = get_stream_writer()
            except (KeyError, RuntimeError):
                write = lambda chunk: None  # noqa: E731
            for i, url in enumerate(urls, 1):
                fetch(url)
                write({"url": url, "done": done(i), "total": total(len(urls))})
            return "done"

        return crawl

    return make_crawl_tool


def in_parallel(fetch):  # a thread pool fetches every page, the events written in order as results come
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl in parallel."""
        try:
            write = get_stream_writer()
        except (KeyError, RuntimeError):
            write = lambda chunk: None  # noqa: E731
        with ThreadPoolExecutor(4) as pool:
            for i, (url, _) in enumerate(zip(urls, pool.map(fetch, urls), strict=True), 1):
                write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def one_and_the_rest(graph, inputs):  # SystemExit raised while the check reads the chunks
    yield from graph.stream(inputs, stream_mode="custom")
    raise SystemExit(0)


Q2_WRONG = {
    "no-writer": (q2(silent), ["no custom chunk at all", "get_stream_writer()"]),
    "written-at-the-end": (
        q2(at_the_end),
        [
            "✘ in a graph",
            "page 1's progress had not arrived when page 2's fetch began",
            "✘ a page fails",
            "never reported",
        ],
    ),
    "written-in-finally": (
        q2(written_in_finally),
        ["✘ in a graph", "page 1's progress had not arrived when page 2's fetch began", "in a `finally`"],
    ),
    "written-before-fetching": (
        q2(written_before_fetching),
        ["✘ a page fails", "the failing page was not fetched"],
    ),
    "one-summary-chunk": (q2(one_summary), ["one chunk per page"]),
    "get-stream-writer-unguarded": (
        q2(unguarded),
        [
            "✘ outside a graph",
            "KeyError",
            "__pregel_runtime",
            "lesson 12 §2",
            "except (KeyError, RuntimeError): write = lambda chunk: None",
        ],
    ),
    "tool-runtime": (q2(with_runtime), ["✘ outside a graph", "injected only by ToolNode"]),
    "done-from-zero": (q2(from_zero), ["`done` counts pages from 1"]),
    "failures-skipped": (q2(skips_failures), ["the failing page was not fetched"]),
    "failure-swallowed": (q2(stops_quietly), ["the tool reported success", "let the error out"]),
    "always-equal-chunks": (q2(always_equal_chunks), ["not a plain dict", "AlwaysEqual"]),
    "str-subclass-urls": (q2(str_subclass_urls), ["not a plain dict", "Url"]),
    "events-written-by-hand": (
        q2(progress_events=written_by_hand),
        ["✘ progress_events", "return the custom chunks themselves"],
    ),
    "mode-chunk-pairs": (
        q2(
            progress_events=lambda graph, inputs: list(
                graph.stream(inputs, stream_mode=["custom", "updates"])
            )
        ),
        ["(mode, chunk)"],
    ),
    "updates-mode": (
        q2(progress_events=lambda graph, inputs: list(graph.stream(inputs, stream_mode="updates"))),
        ["✘ progress_events"],
    ),
    "always-equal-result": (
        q2(progress_events=lambda graph, inputs: AlwaysEqual()),
        ["AlwaysEqual", "plain list"],
    ),
    "always-equal-items": (
        q2(progress_events=lambda graph, inputs: [AlwaysEqual()] * 3),
        ["AlwaysEqual", "plain list"],
    ),
    "equal-list-subclass": (
        q2(progress_events=lambda graph, inputs: EqualList(graph.stream(inputs, stream_mode="custom"))),
        ["EqualList", "plain list"],
    ),
    "system-exit-while-read": (q2(progress_events=one_and_the_rest), ["✘ progress_events", "SystemExit"]),
    "returns-a-string": (q2(lambda fetch: "crawl"), ["did not return a tool"]),
    "float-counts": (q2(typed_chunks(float, float)), ["holds a value of another type", "done a float"]),
    "bool-total": (q2(typed_chunks(int, lambda n: True)), ["holds a value of another type", "total a bool"]),
    "float-total": (q2(typed_chunks(int, float)), ["holds a value of another type", "total a float"]),
}


def test_lab13_q2_pages_fetched_at_once_are_refused_whatever_the_draw():
    for seed in range(5):
        message = _rejected_progress(in_parallel, seed)
        assert "pages fetched at once, not in order" in message and "pool.map" in message, message


def _rejected_progress(make_crawl_tool, seed):
    with pytest.raises(CheckFailed) as info:
        lab13.check_progress(make_crawl_tool, SOL["progress_events"], seed=seed)
    return str(info.value)


def test_lab13_q2_rejects_progress_that_is_missing_late_faked_or_breaks_outside():
    """Every wrong answer at once (each costs at most one wait for a late event): refused, named."""
    results = judged(
        lambda ns: lab13.check_progress(ns["make_crawl_tool"], ns["progress_events"]),
        {name: ns for name, (ns, _) in Q2_WRONG.items()},
    )
    link = ("12_streaming_and_stopping",)  # an exception of the learner's is named by its own line instead
    assert_verdicts(
        results,
        {
            name: (*phrases, *link * ("raised" not in results[name]))
            for name, (_, phrases) in Q2_WRONG.items()
        },
    )
    for name, message in results.items():
        assert "Traceback" not in message and len(message.splitlines()) <= 30, (name, message)


def test_lab13_q2_faults_become_feedback(monkeypatch, capsys):
    monkeypatch.setattr(lab13, "LIMIT", 0.4)

    async def waits(graph, inputs):  # an async consumer that waits forever
        await asyncio.Event().wait()

    message = rejected(
        lab13.q2, q2(progress_events=waits), "did not return within 0.4 s", "The check cancelled it"
    )
    assert message.count("✔") == 3

    def raising(graph, inputs):
        return inputs["message"]

    rejected(lab13.q2, q2(progress_events=raising), "KeyError: 'message'", "raising")
    rejected(
        lab13.q2, {"make_crawl_tool": SOL["make_crawl_tool"], "progress_events": None}, "must be a function"
    )
    rejected(lab13.q2, {"make_crawl_tool": SOL["make_crawl_tool"]}, "`progress_events` is not defined")
    monkeypatch.setattr(lab13, "LIMIT", None)
    accepted(lab13.q2, SOL, capsys)
    accepted(lab13.q2, SOL, capsys)  # twice, the same verdict


# == q3: repair a crashed thread =======================================================================
def insert_where_missing(graph, config):  # nothing unanswered: leave it; else insert answers by index
    messages = list(graph.get_state(config).values["messages"])
    if not unanswered_tool_calls(messages):
        return
    by_id = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    rest = [m for m in messages if not isinstance(m, ToolMessage)]
    for m in reversed([m for m in rest if isinstance(m, AIMessage) and m.tool_calls]):
        at = rest.index(m) + 1
        rest[at:at] = [
            by_id.get(c["id"]) or ToolMessage("Failed: unknown outcome", tool_call_id=c["id"], status="error")
            for c in m.tool_calls
        ]
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *rest]}, as_node="tools")


class Repairer:  # a class, another wording, the tool's name on each answer
    def __init__(self, text):
        self.text = text

    def __call__(self, graph, config):
        messages = graph.get_state(config).values["messages"]
        answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
        fixed = []
        for m in (m for m in messages if not isinstance(m, ToolMessage)):
            fixed.append(m)
            for call in m.tool_calls if isinstance(m, AIMessage) else []:
                fixed.append(
                    answers.get(call["id"])
                    or ToolMessage(self.text, name=call["name"], tool_call_id=call["id"], status="error")
                )
        update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)] + fixed}
        graph.update_state(config, update, as_node="tools")


Q3_RIGHT = {
    "solution": SOL["repair"],
    "insert-where-missing": insert_where_missing,
    "callable-object": Repairer("The tool step crashed; this call may or may not have run."),
    "unsure-whether": Repairer(
        "Unsure whether the charge was done or the message sent; check before retrying."
    ),
    "no-answer-recorded": Repairer("No answer recorded: the tool step stopped before it was done."),
    "step-died": Repairer("Error: the tool step died before this call was done."),
}


def test_lab13_q3_accepts_every_repair_that_keeps_the_thread(capsys):
    accepted(lab13.q3, {"repair": SOL["repair"]}, capsys)  # through the exercise, as a learner runs it
    assert_verdicts(judged(lab13.check_repair, Q3_RIGHT), {name: () for name in Q3_RIGHT})


def appended(graph, config):  # error answers added at the end (lesson 13's first try)
    messages = graph.get_state(config).values["messages"]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    late = [
        ToolMessage("not completed", tool_call_id=c["id"], status="error")
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["id"] not in answered
    ]
    if late:
        graph.update_state(config, {"messages": late}, as_node="tools")


def deletes_the_calls(graph, config):  # the fake: remove the AIMessage nobody answered
    messages = graph.get_state(config).values["messages"]
    gone = [RemoveMessage(id=m.id) for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    gone += [RemoveMessage(id=m.id) for m in messages if isinstance(m, ToolMessage)]
    if gone:
        graph.update_state(config, {"messages": gone}, as_node="tools")


def starts_over(graph, config):
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]}, as_node="tools")


def claims_success(graph, config):
    Repairer("done")(graph, config)
    messages = graph.get_state(config).values["messages"]
    fixed = [
        m.model_copy(update={"status": "success"})
        if isinstance(m, ToolMessage) and m.status == "error"
        else m
        for m in messages
    ]
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools")


def every_call_an_error(graph, config):  # rewrites every call's answer, the finished ones too
    messages = graph.get_state(config).values["messages"]
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        fixed += [
            ToolMessage("not completed", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools")


def resumes_first(graph, config):  # "just run it again", then the lesson's repair if that fails
    try:
        graph.invoke(None, config)
    except ConnectionError:
        pass
    SOL["repair"](graph, config)


def erases_the_calls(graph, config):  # the fake: same message id, its tool calls gone, answers kept
    messages = graph.get_state(config).values["messages"]
    fixed = []
    for m in messages:
        if isinstance(m, ToolMessage):
            continue
        fixed.append(m.model_copy(update={"tool_calls": []}) if isinstance(m, AIMessage) else m)
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools")


def rewritten(graph, config, text):
    """The lesson's rewrite: every call followed by its answer, `text` (an error) where it had none."""
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        for call in getattr(m, "tool_calls", []):
            missing = ToolMessage(text, tool_call_id=call["id"], status="error")
            fixed.append(answers.get(call["id"]) or missing)
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]


def without_as_node(graph, config):  # the lesson's rewrite, written without `as_node`
    graph.update_state(config, {"messages": rewritten(graph, config, "failed")})


def apologises(graph, config):  # the repair, then an apology added to every thread
    SOL["repair"](graph, config)
    graph.update_state(config, {"messages": [AIMessage("Sorry, something went wrong.")]}, as_node="tools")


def last_turn_only(graph, config):  # answers the calls of the last AIMessage with calls, not earlier ones
    messages = graph.get_state(config).values["messages"]
    turns = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        for call in getattr(m, "tool_calls", []):
            if call["id"] in answers:
                fixed.append(answers[call["id"]])
            elif m is turns[-1]:
                fixed.append(ToolMessage("failed", tool_call_id=call["id"], status="error"))
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools")


def adds_a_stray_answer(graph, config):  # the repair, plus a note answering a call nobody made
    SOL["repair"](graph, config)
    messages = graph.get_state(config).values["messages"]
    fixed = []
    for m in messages:
        fixed.append(m)
        if isinstance(m, AIMessage) and m.tool_calls:
            fixed.append(ToolMessage("retry scheduled", tool_call_id="call_orphan", status="error"))
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools")


def resumes_and_gives_up(graph, config):  # "just run it again", the error swallowed, nothing else
    try:
        graph.invoke(None, config)
    except ConnectionError:
        pass


def commands_the_rewrite(graph, config):  # the rewrite sent as a Command input: the graph runs again
    try:
        update = {"messages": rewritten(graph, config, "not completed")}
        graph.invoke(Command(update=update, goto=END), config)
    except ConnectionError:
        pass


def asks_again_first(graph, config):  # a new question on the broken thread, then the lesson's repair
    try:
        graph.invoke({"messages": [HumanMessage("retry")]}, config)
    except Exception:  # noqa: BLE001 - the provider's 400
        pass
    SOL["repair"](graph, config)


def hard_coded_ids(graph, config):
    answers = [ToolMessage("not completed", tool_call_id=i, status="error") for i in ("call_0_0", "call_0_1")]
    graph.update_state(config, {"messages": answers}, as_node="tools")


Q3_WRONG = {
    "appended-at-the-end": (
        appended,
        [
            "✘ the user asked again",
            "refused by the provider",
            "did not have response messages",
            "an answer the thread held was lost",
        ],
    ),
    "deletes-the-calls": (deletes_the_calls, ["deleted messages of the thread", "hides the problem"]),
    "starts-over": (starts_over, ["deleted messages of the thread"]),
    "claims-success": (claims_success, ["success answer", "status='error'"]),
    "replaces-existing-answers": (
        every_call_an_error,
        ["✘ create_agent", "an answer that existed was replaced"],
    ),
    "resumes-first": (resumes_first, ["ran tools again", "a payment may run again"]),
    "erases-the-calls": (
        erases_the_calls,
        ["rewrote a question or a model turn", "erasing an AIMessage's tool calls"],
    ),
    "without-as-node": (without_as_node, ["✘ create_agent", "`update_state` failed", "as_node='tools'"]),
    "apology-everywhere": (apologises, ["✘ a thread with nothing to repair", "no extra message"]),
    "last-turn-only": (last_turn_only, ["✘ two crashed turns", "an earlier turn's calls too"]),
    "hard-coded-ids": (hard_coded_ids, ["still unanswered", "no answer for"]),
    "stray-answer": (adds_a_stray_answer, ["an answer to a call nobody made", "call_orphan"]),
    "no-problem-done": (Repairer("no problem: done"), ["success answer"]),
    "error-free-completed": (Repairer("Error-free: notify completed"), ["success answer"]),
    "empty-answers": (Repairer(""), ["says nothing", "empty answers"]),
    "invisible-answers": (Repairer("\u200b."), ["says nothing", "empty answers"]),
    "all-good": (Repairer("all good"), ["success answer"]),
    "went-through": (Repairer("payment went through"), ["success answer"]),
    "without-failure": (Repairer("Completed without failure"), ["success answer"]),
    "resumes-and-gives-up": (resumes_and_gives_up, ["ran tools again", "a payment may run again"]),
    "command-input": (commands_the_rewrite, ["ran tools again"]),
    "asks-again-first": (asks_again_first, ["the repair ran the graph", "source input"]),
    "does-nothing": (lambda graph, config: None, ["still unanswered", "a 400"]),
}


def test_lab13_q3_rejects_repairs_that_fake_lose_or_rerun():
    """Every wrong repair at once: refused, the mistake named, the lesson linked."""
    results = judged(lab13.check_repair, {name: repair for name, (repair, _) in Q3_WRONG.items()})
    assert_verdicts(
        results, {name: (*phrases, "13_failure_and_recovery") for name, (_, phrases) in Q3_WRONG.items()}
    )
    for name, message in results.items():
        assert "Traceback" not in message and len(message.splitlines()) <= 30, (name, message)


def test_lab13_q3_faults_become_feedback(monkeypatch, capsys):
    monkeypatch.setattr(lab13, "LIMIT", 0.4)
    never = threading.Event()

    def waits(graph, config):
        never.wait()

    try:
        message = rejected(lab13.q3, {"repair": waits}, "did not return within 0.4 s", "`repair`")
    finally:
        never.set()
    assert "not tried" in message

    def raising(graph, config):
        return graph.get_state(config).values["history"]

    rejected(lab13.q3, {"repair": raising}, "KeyError: 'history'", "raising")
    rejected(lab13.q3, {"repair": None}, "must be a function")
    monkeypatch.setattr(lab13, "LIMIT", None)

    def chatty(graph, config):
        for i in range(200):
            print("repairing", i)
        SOL["repair"](graph, config)

    out = accepted(lab13.q3, {"repair": chatty}, capsys)
    assert "more line(s) not shown" in out


# == attempts written after the lab: other right answers, and fakes that must not pass ====================
def counting_middleware(model, tools, budget, checkpointer):  # a middleware of one's own, no ToolCallLimit
    from langchain.agents.middleware import AgentMiddleware, hook_config

    class Budget(AgentMiddleware):
        @hook_config(can_jump_to=["end"])
        def after_model(self, state, runtime):
            calls = state["messages"][-1].tool_calls
            if not calls or used_in_this_question(state["messages"]) + len(calls) <= budget:
                return None
            refused = [ToolMessage("budget spent", tool_call_id=c["id"], status="error") for c in calls]
            return {"messages": [*refused, AIMessage("Stopped: the budget is spent.")], "jump_to": "end"}

    return create_agent(model, tools, middleware=[Budget()], checkpointer=checkpointer)


def by_id(graph, config):  # the later messages taken out by id, answers written, the later ones put back
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    broken = [
        i
        for i, m in enumerate(messages)
        if isinstance(m, AIMessage) and any(c["id"] not in answers for c in m.tool_calls)
    ]
    if not broken:
        return
    later = [m for m in messages[broken[0] + 1 :] if not isinstance(m, ToolMessage)]
    if later:
        graph.update_state(config, {"messages": [RemoveMessage(id=m.id) for m in later]}, as_node="tools")
    fixed = []
    for m in [messages[broken[0]], *later]:
        fixed += [m] if m is not messages[broken[0]] else []
        fixed += [
            answers.get(c["id"]) or ToolMessage("unknown outcome", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    graph.update_state(config, {"messages": fixed}, as_node="tools")


async def awaited_repair(graph, config):  # the async API
    messages = (await graph.aget_state(config)).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        fixed += [
            answers.get(c["id"]) or ToolMessage("failed", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    await graph.aupdate_state(
        config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools"
    )


def runtime_with_default(fetch):  # `runtime.stream_writer`, a default for calls outside a graph
    @tool
    def crawl(urls: list[str], runtime: ToolRuntime = None) -> str:
        """Crawl."""
        write = runtime.stream_writer if runtime is not None else (lambda chunk: None)
        for i, url in enumerate(urls, 1):
            fetch(url)
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


async def async_events(graph, inputs):
    return [chunk async for chunk in graph.astream(inputs, stream_mode="custom")]


def bulk_repair(graph, config):  # `bulk_update_state`, one update as the tools node
    from langgraph.types import StateUpdate

    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        fixed += [
            answers.get(c["id"]) or ToolMessage("failed", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    update = StateUpdate({"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, "tools")
    graph.bulk_update_state(config, [[update]])


def nothing_outside(fetch):  # the missing writer caught by returning at once
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except KeyError:
            return ""
        for i, url in enumerate(urls, 1):
            fetch(url)
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def test_lab13_accepts_other_right_answers(capsys):
    accepted(lab13.q1, {"build_agent": counting_middleware}, capsys)
    accepted(lab13.q2, q2(runtime_with_default, async_events), capsys)
    accepted(lab13.q3, {"repair": by_id}, capsys)
    accepted(lab13.q3, {"repair": awaited_repair}, capsys)
    accepted(lab13.q3, {"repair": bulk_repair}, capsys)


def no_checkpointer(limit: str):  # the checkpointer forgotten: each question a thread of its own
    def build_agent(model, tools, budget, checkpointer):
        middleware = [ToolCallLimitMiddleware(**{limit: budget}, exit_behavior="end")]
        return create_agent(model, tools, middleware=middleware)

    return build_agent


def budget_minus_one(model, tools, budget, checkpointer):
    limit = ToolCallLimitMiddleware(run_limit=budget - 1, exit_behavior="end")
    return create_agent(model, tools, middleware=[limit], checkpointer=checkpointer)


def printed(fetch):  # progress printed, not streamed
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        for i, url in enumerate(urls, 1):
            fetch(url)
            print({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def reports_without_fetching(fetch):  # the progress written, the pages never fetched
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        try:
            write = get_stream_writer()
        except KeyError:
            write = lambda chunk: None  # noqa: E731
        for i, url in enumerate(urls, 1):
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def runtime_required(fetch):
    @tool
    def crawl(urls: list[str], runtime: ToolRuntime) -> str:
        """Crawl."""
        try:
            write = runtime.stream_writer
        except AttributeError:
            write = lambda chunk: None  # noqa: E731
        for i, url in enumerate(urls, 1):
            fetch(url)
            write({"url": url, "done": i, "total": len(urls)})
        return "done"

    return crawl


def relaxes_the_endpoint(graph, config):  # the provider found through its server's thread, told not to look
    for thread in threading.enumerate():
        server = getattr(getattr(thread, "_target", None), "__self__", None)
        if hasattr(server, "endpoint"):
            server.endpoint.check_history = False
    appended(graph, config)


def fakes_invoke(graph, config):  # the graph's invoke replaced by one that answers from the script
    appended(graph, config)
    graph.invoke = lambda inputs, config=None, **kw: {"messages": [AIMessage("Your balance is fine.")]}


def swaps_the_checkpointer(graph, config):  # a fresh, empty checkpointer: no thread, nothing unanswered
    from langgraph.checkpoint.memory import InMemorySaver

    graph.checkpointer = InMemorySaver()


def resumes_only(graph, config):
    graph.invoke(None, config)


def writes_the_checkpointer(graph, config):  # the right history, put straight into the checkpointer
    import copy

    saver, current = graph.checkpointer, graph.checkpointer.get_tuple(config)
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        fixed += [
            answers.get(c["id"]) or ToolMessage("failed", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    checkpoint = copy.deepcopy(current.checkpoint)
    checkpoint["channel_values"]["messages"] = fixed
    version = saver.get_next_version(checkpoint["channel_versions"]["messages"], None)
    checkpoint["channel_versions"]["messages"] = version
    saver.put(current.config, checkpoint, current.metadata, {"messages": version})


def fresh_ids(graph, config):  # copies of every message without their ids
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m.model_copy(update={"id": None}))
        fixed += [
            answers.get(c["id"]) or ToolMessage("failed", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node="tools")


def as_the_model(graph, config):  # the lesson's rewrite, written as the model's node
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    fixed = []
    for m in (m for m in messages if not isinstance(m, ToolMessage)):
        fixed.append(m)
        fixed += [
            answers.get(c["id"]) or ToolMessage("failed", tool_call_id=c["id"], status="error")
            for c in getattr(m, "tool_calls", [])
        ]
    node = "model" if "model" in graph.nodes else "llm"
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *fixed]}, as_node=node)


@pytest.mark.parametrize(
    ("exercise", "namespace", "phrases", "absent"),
    [
        (
            lab13.q1,
            {"build_agent": no_checkpointer("run_limit")},
            ["did not see the first", "checkpointer=checkpointer"],
            [],
        ),
        (lab13.q1, {"build_agent": no_checkpointer("thread_limit")}, ["did not see the first"], []),
        (lab13.q1, {"build_agent": budget_minus_one}, ["not one less"], ["thread_limit"]),
        (lab13.q2, q2(printed), ["no custom chunk at all", "`print` and the state never reach"], []),
        (lab13.q2, q2(reports_without_fetching), ["reported before its page was fetched"], []),
        (lab13.q2, q2(nothing_outside), ["✘ outside a graph", "did not fetch the pages"], []),
        (lab13.q2, q2(runtime_required), ["✘ outside a graph", "runtime: ToolRuntime = None"], []),
        (lab13.q3, {"repair": relaxes_the_endpoint}, ["changed the graph or the provider"], []),
        (lab13.q3, {"repair": fakes_invoke}, ["changed the graph or the provider", "invoke"], []),
        (
            lab13.q3,
            {"repair": swaps_the_checkpointer},
            ["changed the graph or the provider", "checkpointer"],
            [],
        ),
        (lab13.q3, {"repair": resumes_only}, ["ran tools again", "invoke(None, config)"], []),
        (lab13.q3, {"repair": writes_the_checkpointer}, ["did not go through `update_state`"], []),
        (lab13.q3, {"repair": fresh_ids}, ["new ids"], []),
        (
            lab13.q3,
            {"repair": as_the_model},
            ["`update_state` failed", "as_node='tools'"],
            [],
        ),
        (
            lab13.q3,
            {"repair": lambda g, c: Repairer("Done: charged and notified.")(g, c)},
            ["success answer"],
            [],
        ),
    ],
    ids=[
        "no-checkpointer",
        "thread-limit-without-checkpointer",
        "budget-minus-one",
        "progress-printed",
        "reports-without-fetching",
        "returns-nothing-outside",
        "runtime-required",
        "relaxes-the-endpoint",
        "replaces-graph-invoke",
        "swaps-the-checkpointer",
        "resumes-only",
        "writes-the-checkpointer",
        "fresh-ids",
        "as-the-model-node",
        "error-status-success-words",
    ],
)
def test_lab13_rejects_later_attempts(exercise, namespace, phrases, absent):
    message = rejected(exercise, namespace, *phrases)
    for phrase in absent:
        assert phrase not in message, message


def test_lab13_slow_but_correct_answers_pass_within_the_limit(monkeypatch, capsys):
    monkeypatch.setattr(lab13, "LIMIT", 2.0)

    def slow_repair(graph, config):
        time.sleep(0.3)
        SOL["repair"](graph, config)

    accepted(lab13.q3, {"repair": slow_repair}, capsys)


def test_lab13_progress_pages_are_all_different_so_the_broken_one_fails_where_it_is_drawn():
    """Seed 1521001 drew the broken page's URL twice (pages 2 and 3): the crawl failed a page early
    and the solution was refused (about once in 700,000 checks)."""
    ns = solution_namespace("13")
    assert lab13.check_progress(ns["make_crawl_tool"], ns["progress_events"], seed=1521001)


# == the classes of attack on these checks: each refused on every draw ===================================
def keyed_on_the_lab_text(model, tools, budget, checkpointer):  # the budget only for the lab text's `search`
    limit = ToolCallLimitMiddleware(tool_name="search", run_limit=budget, exit_behavior="end")
    return create_agent(model, tools, middleware=[limit], checkpointer=checkpointer)


def test_lab13_q1_a_budget_keyed_on_the_lab_texts_tool_name_fails_every_draw():
    for seed in range(3):
        with pytest.raises(CheckFailed, match="the agent never stopped"):
            lab13.check_budget(keyed_on_the_lab_text, seed=seed)


def test_lab13_every_draw_holds_every_hard_case():
    for seed in range(300):
        budget = lab13._draw_budget(rng(seed))
        assert len(set(budget.names)) == 4 and "search" not in budget.names
        assert budget.never_stops >= 2 and budget.batch % 2 == 1 and 1 <= budget.stop_after < 6
        crawl = lab13._draw_crawl(rng(seed))
        assert 3 <= len(crawl.pages) <= 5 and len(set(crawl.pages)) == len(crawl.pages)
        assert len(crawl.failing) == 4 and crawl.broken in (1, 2)  # pages before and after the broken one
        assert [len(graph) for graph in crawl.tokens] == [1, 2]
        assert lab13._draw_repair(rng(seed)).kinds == tuple(kind for _, kind in lab13._KINDS)


def test_lab13_time_limits_grow_with_the_pages_drawn(monkeypatch, capsys):
    """A correct crawl that takes 0.3 s a page passes whether 3 or 5 pages are drawn, though five pages
    take longer than the base limit."""
    monkeypatch.setattr(lab13, "LIMIT", 1.0)

    def slow(fetch):
        crawl = SOL["make_crawl_tool"](lambda url: (time.sleep(0.3), fetch(url))[1])
        return crawl

    seed = next(s for s in range(100) if len(lab13._draw_crawl(rng(s)).pages) == 5)
    assert 5 * 0.3 > lab13.LIMIT
    assert lab13.check_progress(slow, SOL["progress_events"], seed=seed)


def rebinds(target, name, value, then):
    """An answer that rebinds one of the check's names (as a cell could), then answers with `then`."""

    def answer(*args):
        setattr(target, name, value)
        return then(*args)

    return answer


def faked_result(*args, **kwargs):
    return "all passed"


TAMPERING = {
    "search-stems": (
        lab13.q1,
        lab13,
        "SEARCH_STEMS",
        ("search",) * 5,
        {"build_agent": keyed_on_the_lab_text},
    ),
    "success-words": (lab13.q3, lab13, "_SUCCESS", re.compile("$^"), {"repair": Repairer("done")}),
    "arrival": (lab13.q2, lab13, "ARRIVAL", 0.0, q2(written_in_finally)),
    "the-checks-question": (
        lab13.q1,
        lab13,
        "_question",
        faked_result,
        {"build_agent": keyed_on_the_lab_text},
    ),
    "cases-result": (lab13.q2, lab13.Cases, "result", faked_result, q2(written_in_finally)),
    "the-recorder": (lab13.q3, lab13._Effects, "add", faked_result, {"repair": resumes_first}),
}


@pytest.mark.parametrize("attack", TAMPERING, ids=list(TAMPERING))
@pytest.mark.parametrize("when", ["before-the-check", "from-the-answer"])
def test_lab13_a_wrong_answer_with_the_checks_code_or_constants_rebound_gets_no_pass(attack, when, capsys):
    """Rebinding a constant, a function or a recorder of the check (SEARCH_STEMS, _SUCCESS, ARRIVAL, …)
    makes the check refuse to judge, naming what was changed; put back, the next check judges again."""
    exercise, target, name, value, namespace = TAMPERING[attack]
    original = vars(target)[name]
    key = next(iter(namespace))
    if when == "before-the-check":
        setattr(target, name, value)
    else:
        namespace = {**namespace, key: rebinds(target, name, value, namespace[key])}
    try:
        with guard.enforced():
            rejected(exercise, namespace, "cannot judge", name)
    finally:
        setattr(target, name, original)
    with guard.enforced():
        accepted(exercise, SOL, capsys)


def test_lab13_the_module_holds_no_state_and_hands_out_no_answer():
    """Module constants are immutable; no client, cache or answer lives at module level."""
    import types

    from helpers.labs import Exercise

    for name, value in vars(lab13).items():
        if name.startswith("__") or name in ("LIMIT", "annotations"):
            continue
        immutable = type(value) in (str, int, float, bool, tuple, frozenset, re.Pattern, type(None))
        code = callable(value) or isinstance(value, types.ModuleType)
        assert immutable or code or type(value) is Exercise, (name, type(value))
        assert not hasattr(value, "cache_info"), name  # no functools cache holding the check's objects
    assert set(lab13.__all__) == {"Fetcher", "Ran", "greedy_model", "q1", "q2", "q3", "search_tool"}


HONEST = (
    "not completed: the tool step crashed; it may have run",
    "Error: the tool step crashed before notify finished.",
    "ConnectionError raised; nothing was sent.",
    "The notification service was down, so the message was never sent.",
    "Tool call interrupted by a crash; unknown whether the payment was processed.",
    "Error: charge did not complete (the run stopped mid-step)",
    "Failed: the step ended before the call finished",
    "Unknown outcome: the step died before anything was confirmed.",
    "Error - no result was saved; the payment may or may not have gone through",
    "Sent? Unknown — the tool step crashed.",
    "The request was sent, no reply came back",
    "Interrupted: whether the card was charged is unknown.",
    "Completed: unknown.",
    "Sent: unclear, the step crashed",
    "Error: the tool step crashed. Retry it to get it done.",
    "Error: the tool step crashed. Run it again to make sure the user is notified.",
    "Error: the step crashed. Ask the user to check their account to see it was processed.",
    "Crashed mid-step: call it again to confirm the payment went through.",
    "Interrupted. Verify the charge was processed before you tell the user it is done.",
)
CLAIMS = (
    "done",
    "Done: charged and notified.",
    "Error: done",
    "Success! (error status because of the crash)",
    "The charge was processed successfully.",
    "Notification sent.",
    "Completed without failure",
    "no problem: done",
    "Error-free: notify completed",
    "It worked, no exception was raised",
    "The call finished before the crash",
    "Finished. (marked as an error because of the crash)",
    "payment went through",
    "all good",
    "Payment probably went through.",
    "The user was likely notified",
    "Error: the step crashed. Charged.",
    "Success: it was charged",
)
SAYS_NO_DOUBT = (
    "ok?",
    "notify {'user': 'cy'}",
    "charge {'amount': 92}",
    "Payment probably went through.",
    "?",
)


def test_lab13_q3_an_honest_error_passes_and_a_claim_of_success_does_not():
    assert [text for text in HONEST if lab13._claims_success(text)] == []
    assert [text for text in CLAIMS if not lab13._claims_success(text)] == []
    assert lab13._claims_success([{"type": "text", "text": "Notification sent."}])
    # an answer the repair writes must hold a word of failure or doubt (status='error' alone is not enough)
    assert [text for text in HONEST if not lab13._DOUBTS.search(text)] == []
    assert [text for text in SAYS_NO_DOUBT if lab13._DOUBTS.search(text)] == []


def test_lab13_q3_error_answers_that_say_finished_or_sent_are_accepted():
    answers = {text: Repairer(text) for text in HONEST[1:5]}
    assert_verdicts(judged(lab13.check_repair, answers), {text: () for text in answers})


def test_lab13_q3_error_answers_that_claim_success_are_refused():
    answers = {text: Repairer(text) for text in CLAIMS[2:7]}
    assert_verdicts(judged(lab13.check_repair, answers), {text: ("success answer",) for text in answers})


def test_lab13_q3_honest_error_texts_with_what_to_do_next_are_accepted():
    answers = {text: Repairer(text) for text in HONEST[12:17]}
    assert_verdicts(judged(lab13.check_repair, answers), {text: () for text in answers})


def test_lab13_q3_hedged_or_silent_error_answers_are_refused():
    hedged = {
        text: Repairer(text) for text in ("Payment probably went through.", "The user was likely notified")
    }
    silent = {text: Repairer(text) for text in ("ok?", "notify or charge {'args': '...'}")}
    assert_verdicts(
        judged(lab13.check_repair, {**hedged, **silent}),
        {
            **{text: ("success answer",) for text in hedged},
            **{text: ("does not say the call may have failed", "status='error' alone") for text in silent},
        },
    )


def interrupts(*args):
    raise KeyboardInterrupt


def interrupting_tool(fetch):
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        raise KeyboardInterrupt

    return crawl


@pytest.mark.parametrize(
    ("checker", "answer"),
    [
        (lab13.check_budget, (interrupts,)),
        (lab13.check_progress, (interrupting_tool, SOL["progress_events"])),
        (lab13.check_progress, (SOL["make_crawl_tool"], interrupts)),
        (lab13.check_repair, (interrupts,)),
    ],
    ids=["build-agent", "tool-in-a-graph", "progress-events", "repair"],
)
def test_lab13_a_keyboard_interrupt_in_the_learners_code_stops_the_check_as_it_is(checker, answer):
    """The check neither swallows nor rewraps it: the framework ends it in one line."""
    with pytest.raises(KeyboardInterrupt):
        checker(*answer)


@pytest.mark.parametrize(
    ("exercise", "namespace"),
    [
        (lab13.q1, {"build_agent": interrupts}),
        (lab13.q2, q2(interrupting_tool)),
        (lab13.q3, {"repair": interrupts}),
    ],
    ids=["q1", "q2", "q3"],
)
def test_lab13_a_keyboard_interrupt_ends_in_one_line(exercise, namespace):
    from helpers import labs

    stopped = getattr(labs, "CheckStopped", None)
    if stopped is None:
        pytest.skip("helpers.labs has no one-line verdict for a KeyboardInterrupt")
    with pytest.raises(stopped) as info:
        exercise.check(namespace)
    assert len(str(info.value).splitlines()) == 1 and "KeyboardInterrupt" in str(info.value)


def raises_system_exit(*args):
    raise SystemExit(3)


def generator_exit_tool(fetch):
    @tool
    def crawl(urls: list[str]) -> str:
        """Crawl."""
        raise GeneratorExit

    return crawl


@pytest.mark.parametrize(
    ("exercise", "namespace", "phrase"),
    [
        (lab13.q1, {"build_agent": raises_system_exit}, "SystemExit"),
        (lab13.q2, q2(generator_exit_tool), "GeneratorExit"),
        (lab13.q3, {"repair": raises_system_exit}, "SystemExit"),
    ],
    ids=["q1-system-exit", "q2-generator-exit", "q3-system-exit"],
)
def test_lab13_system_exit_and_generator_exit_are_verdicts(exercise, namespace, phrase):
    rejected(exercise, namespace, phrase)
