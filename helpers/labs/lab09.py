"""Lab 09 — Predict the agent (after `notebooks/09_prebuilt_agents.ipynb`).

A predict-and-check lab (`helpers.labs.predict.PredictionLab`): the learner writes one dict of
predictions per exercise, and each check runs every scenario live on the pinned libraries.

q1 (`ARRIVALS`): how the model's calls reach the tools node — tasks per turn in `create_agent` and
    in a hand-wired loop, the calls an edge still sends when one is already answered, the edge of
    `create_react_agent` v1, the order of the answers when the calls finish in another order.
q2 (`PAUSES`): what one task per call changes for `interrupt()` and `max_concurrency` — how often
    siblings run across a pause, how many rounds of questions three interrupts take, how many calls
    a limit lets run at once under `ainvoke`.
q3 (`FAILURES`): errors and middleware — what a crash keeps, which exceptions reach the model, a
    sync-only middleware under `ainvoke` with and without a tool call.

Each scenario is the lesson's model applied to a case the lesson does not run: more calls, an
answered call, calls that finish out of order, a third interrupt, another limit, another exception.
Every scenario builds its own graphs and tools, runs in well under a second and returns a plain value.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections import Counter
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from helpers.agents import route_after_model, tool_task_inputs
from helpers.batch import make_timed_tools, tool_calls_message
from helpers.labs.predict import PredictionLab
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import CallRecorder

LESSON = "09_prebuilt_agents"
ARRIVE = "2. How the tool calls arrive"
CONCURRENCY = "3. Concurrency under this dispatch"
BOUND = "What bounds it: `max_concurrency`"
INTERRUPT = "`interrupt()` in one of two calls"
MIDDLEWARE = "5. Middleware is ToolNode's interceptor"
SIBLINGS = "8. Deep dive: a failing call's siblings"
REACT = "`create_react_agent`, v1 and v2"
TWO_INTERRUPTS = "Two interrupts in one turn"
DEFAULTS = "Error-handling defaults"
ASK = {"messages": [("user", "Plan my day in Paris.")]}

lab = PredictionLab("09", LESSON)


def _loop(script: list, tools: list[BaseTool], checkpointer: Any = None) -> Any:
    """Lesson 04's loop around one ToolNode: llm → tools_condition → tools → llm."""
    model = ScriptedChatModel(script=script).bind_tools(tools)

    def llm(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", llm)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


def _graph(which: str, script: list, tools: list[BaseTool], checkpointer: Any = None) -> Any:
    if which == "agent":
        return create_agent(ScriptedChatModel(script=script), tools, checkpointer=checkpointer)
    return _loop(script, tools, checkpointer)


def _city_tools(counts: Counter) -> list[BaseTool]:
    @tool
    def lookup_weather(city: str) -> str:
        """Look up today's weather for a city."""
        counts["lookup_weather"] += 1
        return f"{city}: sunny"

    @tool
    def lookup_museum(city: str) -> str:
        """Look up a museum in a city."""
        counts["lookup_museum"] += 1
        return f"{city}: the Louvre"

    @tool
    def book_table(city: str) -> str:
        """Book a table, once a human approves."""
        counts["book_table"] += 1
        return f"{city}: booked" if interrupt(f"Book a table in {city}?") == "yes" else f"{city}: not booked"

    return [lookup_weather, lookup_museum, book_table]


# -- q1: how the calls arrive -------------------------------------------------------------------------
@lab.question(
    "q1",
    ask="create_agent, and a model turn that asks for four tool calls at once (four timed tools). How many "
    "tasks does the `tools` node run for that turn?",
    answers=None,
    kind=int,
    rule="create_agent's edge returns one Send('tools', [tool_call]) per pending call: one task per call.",
    heading=ARRIVE,
)
def tasks_for_four_calls_agent() -> int:
    tools = make_timed_tools(4, 0.0, kind="sync")
    agent = _graph("agent", [tool_calls_message(tools), "done"], tools)
    return len(tool_task_inputs(agent, ASK))


@lab.question(
    "q1",
    ask="The same four calls through lesson 04's hand-wired loop (tools_condition → one ToolNode). How many "
    "tasks does its `tools` node run for that turn?",
    answers=None,
    kind=int,
    rule="tools_condition returns the node name: one task, fed the whole state; ToolNode runs the batch.",
    heading=ARRIVE,
)
def tasks_for_four_calls_loop() -> int:
    tools = make_timed_tools(4, 0.0, kind="sync")
    loop = _graph("loop", [tool_calls_message(tools), "done"], tools)
    return len(tool_task_inputs(loop, ASK))


@lab.question(
    "q1",
    ask="The state ends with an AIMessage of three tool calls and a ToolMessage that already answers the "
    "second (as a reviewer's rejection leaves it). How many Sends does create_agent's edge return?",
    answers=None,
    kind=int,
    rule="The edge sends only the pending calls: those no ToolMessage in the state answers yet.",
    heading=ARRIVE,
)
def sends_after_one_answer() -> int:
    tools = make_timed_tools(3, 0.0, kind="sync")
    agent = _graph("agent", ["done"], tools)
    turn = tool_calls_message(tools)
    answered = ToolMessage("rejected", tool_call_id=turn.tool_calls[1]["id"], status="error")
    routed = route_after_model(agent, {"messages": [HumanMessage("go"), turn, answered]})
    return len(routed) if isinstance(routed, list) else 0


@lab.question(
    "q1",
    ask="create_react_agent(version='v1') and a turn of three tool calls. What does its edge after the model "
    "return?",
    answers=("a node name", "one Send per call", "one Send for the batch"),
    rule="v1 routes by name: one `tools` task fed the state, ToolNode runs the whole batch (v2 sends one "
    "ToolCallWithContext per call).",
    heading=REACT,
)
def react_v1_edge() -> str:
    from langgraph.prebuilt import create_react_agent

    tools = make_timed_tools(3, 0.0, kind="sync")
    # create_react_agent is deprecated and warns (lesson 09); built in a namespace of its own, so the
    # silenced warning is recorded there and not in this module
    namespace = {"build": create_react_agent, "model": ScriptedChatModel(script=["done"]), "tools": tools}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        react = eval("build(model, tools, version='v1')", namespace)  # noqa: S307 - our own expression
    routed = route_after_model(react, {"messages": [HumanMessage("go"), tool_calls_message(tools)]})
    if isinstance(routed, str):
        return "a node name"
    return "one Send per call" if len(routed) > 1 else "one Send for the batch"


@lab.question(
    "q1",
    ask="create_agent under invoke, three sync calls: the first takes 0.15 s, the others answer at once. In "
    "which order are their ToolMessages in the final state?",
    answers=("call order", "finish order"),
    rule="Each task's write is applied at the end of the step in task order, which follows the calls: the "
    "answers come back in call order, as from one ToolNode batch.",
    heading=ARRIVE,
)
def answer_order_agent() -> str:
    tools = make_timed_tools(3, [0.15, 0.0, 0.0], kind="sync")
    turn = tool_calls_message(tools)
    final = _graph("agent", [turn, "done"], tools).invoke(ASK)
    ids = [m.tool_call_id for m in final["messages"] if isinstance(m, ToolMessage)]
    return "call order" if ids == [c["id"] for c in turn.tool_calls] else "finish order"


# -- q2: interrupts and limits ------------------------------------------------------------------------
def _pause_and_resume(which: str, calls: list[dict]) -> tuple[Counter, int]:
    """Run one turn to its pause(s), answer 'yes' to every question; (bodies started, rounds)."""
    counts: Counter = Counter()
    graph = _graph(which, [calls, tool_results_summary], _city_tools(counts), InMemorySaver())
    thread = {"configurable": {"thread_id": "lab09"}}
    result, rounds = graph.invoke(ASK, thread), 0
    while "__interrupt__" in result and rounds < 10:
        rounds += 1
        result = graph.invoke(Command(resume={i.id: "yes" for i in result["__interrupt__"]}), thread)
    return counts, rounds


PAIR_AND_BOOKING = [
    {"name": "lookup_weather", "args": {"city": "Paris"}},
    {"name": "lookup_museum", "args": {"city": "Paris"}},
    {"name": "book_table", "args": {"city": "Paris"}},
]
THREE_BOOKINGS = [{"name": "book_table", "args": {"city": c}} for c in ("Paris", "Lyon", "Nice")]


@lab.question(
    "q2",
    ask="create_agent with a checkpointer; the model asks for the weather, a museum and a booking at once; "
    "the booking calls interrupt(). Pause, resume with 'yes'. How many times did the two lookups' bodies "
    "start in all (both lookups together)?",
    answers=None,
    kind=int,
    rule="Each call is its own task: the lookups finish and are saved while the graph waits; the resume "
    "re-runs only the interrupted task.",
    heading=INTERRUPT,
)
def lookups_across_pause_agent() -> int:
    counts, _ = _pause_and_resume("agent", PAIR_AND_BOOKING)
    return counts["lookup_weather"] + counts["lookup_museum"]


@lab.question(
    "q2",
    ask="The same turn through the hand-wired loop (one ToolNode batch), paused and resumed the same way. "
    "How many times did the two lookups' bodies start in all?",
    answers=None,
    kind=int,
    rule="One task for the batch: the interrupt loses the whole task's results, and the resume re-runs the "
    "node from its start — every call of the batch again.",
    heading=INTERRUPT,
)
def lookups_across_pause_loop() -> int:
    counts, _ = _pause_and_resume("loop", PAIR_AND_BOOKING)
    return counts["lookup_weather"] + counts["lookup_museum"]


@lab.question(
    "q2",
    ask="Three bookings in one turn, each calling interrupt(), through the hand-wired loop under "
    "invoke. Each round answers every question asked with 'yes'. How many rounds until the run finishes?",
    answers=None,
    kind=int,
    rule="The batch surfaces one interrupt at a time (under invoke, the first in call order); each resume "
    "re-runs the batch and reaches the next one.",
    heading=TWO_INTERRUPTS,
)
def rounds_three_bookings_loop() -> int:
    return _pause_and_resume("loop", THREE_BOOKINGS)[1]


@lab.question(
    "q2",
    ask="The same three bookings through create_agent. How many rounds?",
    answers=None,
    kind=int,
    rule="One task per call: every interrupt surfaces at once, each with its own id, and one resume answers "
    "them all.",
    heading=TWO_INTERRUPTS,
)
def rounds_three_bookings_agent() -> int:
    return _pause_and_resume("agent", THREE_BOOKINGS)[1]


async def _most_at_once(which: str, limit: int, n: int) -> int:
    recorder = CallRecorder()
    tools = make_timed_tools(n, 0.1, kind="async", recorder=recorder)
    graph = _graph(which, [tool_calls_message(tools), "done"], tools)
    await graph.ainvoke(ASK, {"max_concurrency": limit})
    return recorder.max_in_flight()


@lab.question(
    "q2",
    ask="Five async tools of 0.1 s through create_agent, `await agent.ainvoke(q, {'max_concurrency': 3})`. "
    "How many calls run at once, at most?",
    answers=None,
    kind=int,
    rule="The graph applies max_concurrency to the tasks it runs, and in create_agent every call is a task: "
    "the limit holds under ainvoke too.",
    heading=BOUND,
)
async def limit_under_ainvoke_agent() -> int:
    return await _most_at_once("agent", 3, 5)


@lab.question(
    "q2",
    ask="The same five async tools through the hand-wired loop, `ainvoke` with max_concurrency=3. How many "
    "run at once, at most?",
    answers=None,
    kind=int,
    rule="One task holds the whole batch, and ToolNode.ainvoke gathers every call: the limit bounds tasks, "
    "not the calls inside one.",
    heading=BOUND,
)
async def limit_under_ainvoke_loop() -> int:
    return await _most_at_once("loop", 3, 5)


# -- q3: errors and middleware ------------------------------------------------------------------------
def _saved_after_crash(which: str) -> int:
    counts: Counter = Counter()

    @tool
    def lookup_traffic(city: str) -> str:
        """Look up live traffic (the service is down)."""
        time.sleep(0.15)
        raise ConnectionError(f"traffic service unreachable for {city}")

    tools = [*_city_tools(counts)[:2], lookup_traffic]
    calls = [
        {"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "lookup_museum", "args": {"city": "Paris"}},
        {"name": "lookup_traffic", "args": {"city": "Paris"}},
    ]
    graph = _graph(which, [calls, tool_results_summary], tools, InMemorySaver())
    thread = {"configurable": {"thread_id": "lab09"}}
    try:
        graph.invoke(ASK, thread)
    except ConnectionError:
        pass
    return sum(isinstance(m, ToolMessage) for m in graph.get_state(thread).values["messages"])


@lab.question(
    "q3",
    ask="create_agent with a checkpointer, under invoke: two instant lookups and a traffic lookup that "
    "raises ConnectionError after 0.15 s, in one turn. The run crashes. How many ToolMessages does the "
    "checkpoint hold?",
    answers=None,
    kind=int,
    rule="Each finished call is its own task, and its write is saved even though a sibling failed: only the "
    "failed call (and any still queued) is missing.",
    heading=SIBLINGS,
)
def saved_after_crash_agent() -> int:
    return _saved_after_crash("agent")


@lab.question(
    "q3",
    ask="The same turn through the hand-wired loop with a checkpointer. How many ToolMessages does the "
    "checkpoint hold after the crash?",
    answers=None,
    kind=int,
    rule="One task for the batch: the failure fails the whole task, and none of its results is saved.",
    heading=SIBLINGS,
)
def saved_after_crash_loop() -> int:
    return _saved_after_crash("loop")


def _one_call_outcome(make_tool: Any, args: dict) -> str:
    @tool
    def lookup_weather(city: str) -> str:
        """Look up today's weather for a city."""
        return make_tool(city)

    agent = create_agent(
        ScriptedChatModel(script=[[{"name": "lookup_weather", "args": args}], tool_results_summary]),
        [lookup_weather],
    )
    try:
        final = agent.invoke(ASK)
    except Exception:  # noqa: BLE001 - which exception it is does not matter here
        return "the run raises"
    answer = next(m for m in final["messages"] if isinstance(m, ToolMessage))
    return "an error ToolMessage" if answer.status == "error" else "a success ToolMessage"


def _raise_value_error(city: str) -> str:
    raise ValueError(f"no forecast for {city}")


@lab.question(
    "q3",
    ask="create_agent without middleware; the tool raises ValueError('no forecast for Paris'). What happens?",
    answers=("the run raises", "an error ToolMessage", "a success ToolMessage"),
    rule="create_agent keeps ToolNode's default error handling: only argument errors become error "
    "ToolMessages; every other exception crashes the run.",
    heading=DEFAULTS,
)
def value_error_no_middleware() -> str:
    return _one_call_outcome(_raise_value_error, {"city": "Paris"})


@lab.question(
    "q3",
    ask="create_agent without middleware; the model calls the tool with {'town': 'Paris'} instead of "
    "{'city': ...}. What happens?",
    answers=("the run raises", "an error ToolMessage", "a success ToolMessage"),
    rule="An argument that does not fit the tool's schema is a validation error, which ToolNode's default "
    "turns into an error ToolMessage the model can correct.",
    heading=DEFAULTS,
)
def wrong_argument_name() -> str:
    return _one_call_outcome(lambda city: f"{city}: sunny", {"town": "Paris"})


class _SyncOnly(AgentMiddleware):
    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)


async def _sync_only_under_ainvoke(script: list) -> str:
    counts: Counter = Counter()
    agent = create_agent(ScriptedChatModel(script=script), _city_tools(counts)[:1], middleware=[_SyncOnly()])
    try:
        await agent.ainvoke(ASK)
    except NotImplementedError:
        return "raises NotImplementedError"
    return "answers"


@lab.question(
    "q3",
    ask="A middleware with only a sync `wrap_tool_call`, run with `await agent.ainvoke(...)`, and a "
    "model that answers without calling any tool. What happens?",
    answers=("answers", "raises NotImplementedError"),
    rule="A wrap hook that does not fit the call style raises when a tool call reaches it — not when the "
    "agent is built, nor on a turn without tool calls.",
    heading=MIDDLEWARE,
)
async def sync_only_middleware_no_tool() -> str:
    return await _sync_only_under_ainvoke(["No tools needed."])


@lab.question(
    "q3",
    ask="The same sync-only middleware under ainvoke, and a model that calls the tool once. What happens?",
    answers=("answers", "raises NotImplementedError"),
    rule="Under ainvoke the agent calls the async chain, awrap_tool_call; a middleware with only the sync "
    "hook has none, so the first tool call raises (the mirror of section 5's async-only case under invoke).",
    heading=MIDDLEWARE,
)
async def sync_only_middleware_tool_call() -> str:
    return await _sync_only_under_ainvoke([[{"name": "lookup_weather", "args": {"city": "Paris"}}], "done"])


q1 = lab.exercise(
    "q1",
    "ARRIVALS",
    hints=(
        "Ask of each graph: what does the edge after the model return — a node name (one task, fed the "
        "state) or a list of Sends (one task per Send)?",
        "create_agent: one Send('tools', [call]) per call no ToolMessage answers yet; the hand-wired loop "
        "and create_react_agent v1: the name 'tools', one task. The writes of a step are applied in task "
        "order.",
    ),
)
q2 = lab.exercise(
    "q2",
    "PAUSES",
    hints=(
        "A graph task is what LangGraph checkpoints, interrupts and limits. Count tasks, then ask what "
        "happens to each.",
        "create_agent: finished siblings are saved across a pause, every interrupt surfaces at once, "
        "max_concurrency bounds the calls. One ToolNode batch: the resume re-runs the batch, one interrupt "
        "per round, and under ainvoke the limit does not reach the calls inside the task.",
    ),
)
q3 = lab.exercise(
    "q3",
    "FAILURES",
    hints=(
        "Which task failed, and what had the others written? And which exceptions does ToolNode's default "
        "error handling turn into messages?",
        "create_agent keeps finished siblings' answers after a crash; the batch keeps none. Only argument "
        "errors become error ToolMessages by default. A wrap hook that does not fit the call style raises at "
        "the first tool call.",
    ),
)

__all__ = ["lab", "q1", "q2", "q3"]

_UNUSED = (asyncio, threading, AIMessage)  # imported for the scenarios' readers; kept explicit
