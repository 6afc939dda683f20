"""Unit tests for helpers.nodes.CustomAsyncToolNode, and the check that it is lesson 02's code."""

from __future__ import annotations

import ast
import asyncio
import inspect
import operator
import textwrap
from pathlib import Path
from typing import Annotated, TypedDict

import nbformat
import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt, ParentCommand
from langgraph.graph import END, START, MessagesState, StateGraph, add_messages
from langgraph.types import Command, Interrupt, interrupt
from pydantic import BaseModel, ValidationError

import helpers.nodes
from helpers.batch import make_timed_tools, tool_calls_message
from helpers.nodes import CustomAsyncToolNode
from helpers.timing import CallRecorder
from helpers.tools import make_city_tools, make_failing_tool

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "notebooks" / "02_custom_async_tool_node.ipynb"


def run(node, message):
    return asyncio.run(node({"messages": [message]}))["messages"]


def _without_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def test_helper_is_the_code_lesson_02_builds():
    nb = nbformat.read(LESSON, as_version=4)
    cells = [
        c.source
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith("class CustomAsyncToolNode")
    ]
    assert len(cells) == 1, f"{LESSON.name} should define CustomAsyncToolNode in exactly one cell"
    helper = textwrap.dedent(inspect.getsource(helpers.nodes.CustomAsyncToolNode))
    assert _without_docstrings(ast.parse(cells[0])) == _without_docstrings(ast.parse(helper)), (
        "helpers/nodes.py and the notebook's CustomAsyncToolNode differ: change both together "
        "(the lesson teaches the helper's code)."
    )


def test_answers_every_call_in_order_with_its_id():
    messages = run(CustomAsyncToolNode(make_city_tools(delay=0.01)), tool_calls_message(
        [("lookup_attraction", {"city": "London"}), ("lookup_weather", {"city": "Paris"})]))
    assert [(m.name, m.tool_call_id, m.content, m.status) for m in messages] == [
        ("lookup_attraction", "call-0", "London: the Tower of London", "success"),
        ("lookup_weather", "call-1", "Paris: sunny, 25 °C", "success"),
    ]


@pytest.mark.timing  # all five must start before the first 0.05 s call ends
def test_calls_run_concurrently():
    recorder = CallRecorder()
    tools = make_timed_tools(5, 0.05, recorder=recorder)
    run(CustomAsyncToolNode(tools), tool_calls_message(tools))
    assert recorder.max_in_flight() == 5


def test_unknown_name_is_an_error_message_not_a_lookup():
    messages = run(CustomAsyncToolNode(make_city_tools(delay=0.01)), tool_calls_message([("print", {})]))
    assert messages[0].status == "error"
    assert messages[0].content == (
        "Error: 'print' is not an allowed tool; use one of: lookup_attraction, lookup_weather."
    )


def test_a_failing_tool_answers_only_its_own_call():
    tools = [*make_city_tools(delay=0.01), make_failing_tool(delay=0.01)]
    messages = run(CustomAsyncToolNode(tools), tool_calls_message(
        [("lookup_traffic", {"city": "Paris"}), ("lookup_weather", {"city": "Paris"})]))
    assert [m.status for m in messages] == ["error", "success"]
    assert messages[0].content == "Error: ConnectionError('traffic service unreachable for Paris')"


def test_bad_arguments_become_an_error_message():
    node = CustomAsyncToolNode(make_city_tools(delay=0.01))
    messages = run(node, tool_calls_message([("lookup_weather", {})]))
    assert messages[0].status == "error"
    assert "city" in messages[0].content and "Field required" in messages[0].content


def _never_answers(cancelled: list[str]):
    async def hang(city: str) -> str:
        """A service that never answers (waits on an event nobody sets)."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(city)
            raise
        return "unreachable"

    return StructuredTool.from_function(coroutine=hang, name="hang")


@pytest.mark.timing
def test_timeout_cancels_the_slow_call_only():
    # No sleeps to race: the slow call waits forever, the fast one not at all, and the deadline
    # (1 s) leaves the fast call a margin far beyond a 0.3 s stall.
    cancelled: list[str] = []
    tools = [_never_answers(cancelled), *make_city_tools(delay=0.0)]
    message = tool_calls_message([("hang", {"city": "Paris"}), ("lookup_weather", {"city": "Paris"})])
    messages = run(CustomAsyncToolNode(tools, timeout=1.0), message)
    assert [m.status for m in messages] == ["error", "success"]
    assert messages[0].content == "Error: 'hang' took longer than 1.0 seconds."
    assert cancelled == ["Paris"], "the slow call should have been cancelled, not left running"


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_a_timeout_error_the_tool_raises_is_an_ordinary_tool_error(timeout):
    async def read_forecast(city: str) -> str:
        """Fetch a forecast; its HTTP client gives up first."""
        raise TimeoutError(f"read timed out fetching {city}")

    tool = StructuredTool.from_function(coroutine=read_forecast)
    (message,) = run(
        CustomAsyncToolNode([tool], timeout=timeout),
        tool_calls_message([("read_forecast", {"city": "Paris"})]),
    )
    assert message.status == "error"
    assert message.content == "Error: TimeoutError('read timed out fetching Paris')"


def test_max_concurrency_caps_calls_in_flight():
    recorder = CallRecorder()
    tools = make_timed_tools(6, 0.03, recorder=recorder)
    run(CustomAsyncToolNode(tools, max_concurrency=2), tool_calls_message(tools))
    assert recorder.max_in_flight() == 2


def test_the_node_is_reusable_across_event_loops():
    node = CustomAsyncToolNode(make_city_tools(delay=0.01), max_concurrency=1)
    message = tool_calls_message([("lookup_weather", {"city": "Paris"})])
    assert run(node, message) == run(node, message)


class NodeWideLimit(CustomAsyncToolNode):
    """Lesson 02's deep dive 7 variant: one semaphore for every run, made in __init__."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=timeout, max_concurrency=max_concurrency)
        self.shared_limit = asyncio.Semaphore(max_concurrency)

    async def __call__(self, state):
        calls = state["messages"][-1].tool_calls
        outputs = await asyncio.gather(*(self._run_one(call, self.shared_limit) for call in calls))
        return {"messages": list(outputs)}


@pytest.mark.parametrize(("node_class", "in_flight"), [(CustomAsyncToolNode, 4), (NodeWideLimit, 2)])
def test_the_limit_is_per_run_a_semaphore_made_in_init_is_node_wide(node_class, in_flight):
    recorder = CallRecorder()
    tools = make_timed_tools(4, 0.03, recorder=recorder)
    node, message = node_class(tools, max_concurrency=2), tool_calls_message(tools)

    async def two_runs_at_once():
        await asyncio.gather(node({"messages": [message]}), node({"messages": [message]}))

    asyncio.run(two_runs_at_once())
    assert recorder.max_in_flight() == in_flight


def test_a_semaphore_made_in_init_fails_in_a_second_event_loop():
    tools = make_timed_tools(4, 0.01)
    node, message = NodeWideLimit(tools, max_concurrency=2), tool_calls_message(tools)
    run(node, message)  # a call waited: the semaphore is bound to that loop
    with pytest.raises(RuntimeError, match="is bound to a different event loop"):
        run(node, message)


def test_no_tool_calls_gives_no_messages():
    assert run(CustomAsyncToolNode(make_city_tools()), AIMessage(content="done")) == []


@pytest.mark.parametrize("state", [{"messages": []}, {"messages": [HumanMessage("hi")]}, {}])
def test_last_message_must_be_an_ai_message(state):
    with pytest.raises(ValueError, match="must be an AIMessage"):
        asyncio.run(CustomAsyncToolNode(make_city_tools())(state))


def test_results_are_tool_messages_with_the_tool_name():
    async def shout(text: str) -> dict:
        return {"text": text.upper()}

    tool = StructuredTool.from_function(coroutine=shout, name="shout", description="Shout.")
    (message,) = run(CustomAsyncToolNode([tool]), tool_calls_message([("shout", {"text": "hi"})]))
    assert isinstance(message, ToolMessage)
    assert (message.name, message.content) == ("shout", "{'text': 'HI'}")


# LangGraph's control flow travels as exceptions; the node must let it through as ToolNode does
# (langgraph/prebuilt/tool_node.py re-raises every GraphBubbleUp and an invalid resume).


class Approval(BaseModel):
    ok: bool


@tool
async def delete_file(path: str) -> str:
    """Delete a file once a human approves."""
    answer = interrupt(f"Delete {path}?", response_schema=Approval)
    return f"deleted {path}" if answer.ok else f"kept {path}"


def _approval_graph():
    builder = StateGraph(MessagesState)
    builder.add_node("tools", CustomAsyncToolNode([delete_file, *make_city_tools(delay=0.0)]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile(checkpointer=InMemorySaver())


DELETE = tool_calls_message([("delete_file", {"path": "notes.txt"}), ("lookup_weather", {"city": "Paris"})])


def test_an_interrupt_pauses_the_graph_and_resume_answers_the_call():
    graph, thread = _approval_graph(), {"configurable": {"thread_id": "approval"}}

    async def pause_then_resume():
        paused = await graph.ainvoke({"messages": [DELETE]}, thread)
        resumed = await graph.ainvoke(Command(resume={"ok": True}), thread)
        return paused, resumed

    paused, resumed = asyncio.run(pause_then_resume())
    assert [i.value for i in paused["__interrupt__"]] == ["Delete notes.txt?"]
    assert [m.type for m in paused["messages"]] == ["ai"], "nothing answered while the graph waits"
    assert [(m.tool_call_id, m.status, m.content) for m in resumed["messages"][1:]] == [
        ("call-0", "success", "deleted notes.txt"),
        ("call-1", "success", "Paris: sunny, 25 °C"),
    ]


def test_a_resume_value_the_interrupts_schema_refuses_raises_and_can_be_answered_again():
    graph, thread = _approval_graph(), {"configurable": {"thread_id": "bad-resume"}}

    async def resume_badly_then_well():
        await graph.ainvoke({"messages": [DELETE]}, thread)
        with pytest.raises(ValidationError, match="1 validation error for Approval"):
            await graph.ainvoke(Command(resume={"ok": "perhaps"}), thread)
        return await graph.ainvoke(Command(resume={"ok": False}), thread)

    assert asyncio.run(resume_badly_then_well())["messages"][1].content == "kept notes.txt"


@pytest.mark.parametrize(
    "signal",
    [GraphInterrupt([Interrupt(value="approve?")]), ParentCommand(Command(graph=Command.PARENT, goto="A"))],
    ids=["GraphInterrupt", "ParentCommand"],
)
def test_langgraphs_control_flow_exceptions_pass_through_the_node(signal):
    async def hand_off(city: str) -> str:
        """A tool whose inner graph interrupts or hands off to the parent graph."""
        raise signal

    node = CustomAsyncToolNode([StructuredTool.from_function(coroutine=hand_off)])
    with pytest.raises(type(signal)):
        run(node, tool_calls_message([("hand_off", {"city": "Paris"})]))


class _Parent(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    visited: Annotated[list[str], operator.add]


def test_a_returned_command_is_not_handled_it_becomes_text_and_the_hand_off_is_lost():
    """The documented limit (lesson 02, section 5): only a raised ParentCommand passes through."""
    @tool
    async def hand_off(to: str) -> Command:
        """Hand the work to a worker of the parent graph."""
        return Command(graph=Command.PARENT, goto=to)

    sub = StateGraph(MessagesState)
    sub.add_node("tools", CustomAsyncToolNode([hand_off]))
    sub.add_edge(START, "tools")
    parent = StateGraph(_Parent)
    parent.add_node("agent", sub.compile())
    parent.add_node("A", lambda state: {"visited": ["A"]})
    parent.add_edge(START, "agent")
    call = tool_calls_message([("hand_off", {"to": "A"})])
    out = asyncio.run(parent.compile().ainvoke({"messages": [call], "visited": []}))
    assert out["visited"] == [], "the parent never hears of the hand-off"
    answer = out["messages"][-1]
    assert (answer.status, answer.content) == ("success", "Command(graph='__parent__', goto='A')")
