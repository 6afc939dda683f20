"""Library behaviour that the drill bank's answers and the cheat sheets' rules state, where no
lesson's own contract module pins it in exactly that form.

Each drill test is one drill's answer, run directly against the libraries, so an upgrade that changes
it names the drill bank as the place to update; each rule test names the lesson that teaches it.
"""

from __future__ import annotations

import asyncio
import operator
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.managed import RemainingSteps
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.nodes import CustomAsyncToolNode
from helpers.returns import output_shape
from helpers.timing import CallRecorder
from helpers.tools import make_city_tools, make_failing_tool

lesson = pytest.mark.lesson("17_drill_bank")
lesson_03 = pytest.mark.lesson("03_builtin_toolnode")
mock_interview = pytest.mark.lesson("16_mock_interview")
RT = Runtime()


def ask(*calls):
    return tool_calls_message(calls)


@lesson
@pytest.mark.timing
def test_gather_overlaps_waits_that_await_serialises():
    recorder = CallRecorder()
    weather, attraction = make_city_tools(delay=0.1, recorder=recorder)

    async def sequential():
        await weather.ainvoke({"city": "Paris"})
        await attraction.ainvoke({"city": "Paris"})

    async def concurrent():
        await asyncio.gather(weather.ainvoke({"city": "Paris"}), attraction.ainvoke({"city": "Paris"}))

    asyncio.run(sequential())
    assert not recorder.overlap() and recorder.wall >= 0.95 * recorder.busy
    recorder.reset()
    asyncio.run(concurrent())
    assert recorder.overlap() and recorder.wall < 0.75 * recorder.busy, (
        f"timing: gather took {recorder.wall:.2f} s for {recorder.busy:.2f} s of waits (machine overloaded?)"
    )


@lesson
def test_except_timeout_error_around_wait_for_blames_a_tools_own_timeout_error():
    @tool
    async def flaky_api(city: str) -> str:
        """Call an upstream API whose HTTP client times out."""
        raise TimeoutError("upstream read timed out")

    async def naive(timeout=None):  # the pattern drill 6 shows: wait_for + except TimeoutError
        try:
            return await asyncio.wait_for(flaky_api.ainvoke({"city": "x"}), timeout)
        except TimeoutError:
            return f"took longer than {timeout} seconds"

    assert asyncio.run(naive()) == "took longer than None seconds"
    update = asyncio.run(CustomAsyncToolNode([flaky_api])({"messages": [ask(("flaky_api", {"city": "x"}))]}))
    assert update["messages"][0].content == "Error: TimeoutError('upstream read timed out')"


@tool
def foo_goto(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """foo, then go to the node 'next'."""
    answer = ToolMessage(f"foo({x}, {y})", tool_call_id=tool_call_id)
    return Command(update={"messages": [answer]}, goto="next")


class RouteState(MessagesState):
    visited: Annotated[list[str], operator.add]


@lesson
def test_a_tools_goto_runs_beside_the_static_edge():
    builder = StateGraph(RouteState)
    builder.add_node("tools", ToolNode([foo_goto]))
    builder.add_node("after", lambda state: {"visited": ["after"]})
    builder.add_node("next", lambda state: {"visited": ["next"]})
    builder.add_edge(START, "tools")
    builder.add_edge("tools", "after")
    final = builder.compile().invoke({"messages": [ask(("foo_goto", {"x": 1, "y": 2}))], "visited": []})
    assert sorted(final["visited"]) == ["after", "next"]


@lesson
def test_the_default_recursion_limit_shows_as_remaining_steps():
    class Budget(TypedDict):
        remaining_steps: RemainingSteps
        seen: int

    builder = StateGraph(Budget)
    builder.add_node("peek", lambda state: {"seen": state["remaining_steps"]})
    builder.add_edge(START, "peek")
    assert builder.compile().invoke({"seen": 0})["seen"] + 1 == 10007


def hand_off(name, sends):
    @tool(name)
    def route(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the work to the parent graph."""
        answer = ToolMessage(content=f"{name}({x}, {y})", tool_call_id=tool_call_id)
        return Command(graph=Command.PARENT, goto=sends, update={"messages": [answer]})

    return route


SENDS_AB = [Send("A", None), Send("B", None)]
FINAL_CALLS = [
    {"name": "escalate", "args": {"x": 1, "y": 2}, "id": "001", "type": "tool_call"},
    {"name": "lookup_traffic", "args": {"city": "Paris"}, "id": "002", "type": "tool_call"},
]


@lesson
def test_a_parent_hand_off_with_a_failing_sibling():
    tools = [hand_off("escalate", SENDS_AB), make_failing_tool(delay=0, sync=True)]
    request = {"messages": [AIMessage(content="", tool_calls=FINAL_CALLS)]}
    with pytest.raises(ConnectionError):
        ToolNode(tools).invoke(request, runtime=RT)
    out = ToolNode(tools, handle_tool_errors=True).invoke(request, runtime=RT)
    assert [output_shape(item) for item in out] == [
        "{'messages': [ToolMessage]}",
        "Command(graph=PARENT, goto=[Send('A'), Send('B')])",
    ]
    assert out[0]["messages"][0].status == "error"
    assert out[1] == Command(graph=Command.PARENT, goto=SENDS_AB)


class Team(MessagesState):
    visited: Annotated[list[str], operator.add]


@lesson
def test_in_a_parent_graph_the_hand_off_runs_and_both_calls_stay_unanswered():
    tools = [hand_off("escalate", SENDS_AB), make_failing_tool(delay=0, sync=True)]
    script = [[{"name": c["name"], "args": c["args"]} for c in FINAL_CALLS]]
    model = ScriptedChatModel(script=script).bind_tools(tools)
    inner = StateGraph(Team)
    inner.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    inner.add_edge(START, "tools")
    outer = StateGraph(Team)
    outer.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    outer.add_node("team", inner.compile())
    for name in "AB":
        outer.add_node(name, lambda state, name=name: {"visited": [name]})
    outer.add_edge(START, "agent")
    outer.add_edge("agent", "team")
    final = outer.compile().invoke({"messages": [HumanMessage("Escalate.")], "visited": []})
    assert sorted(final["visited"]) == ["A", "B"]
    assert unanswered_tool_calls(final["messages"]) == ["call_0_0", "call_0_1"]


def _agent(recorder):
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    tools = make_timed_tools(3, 0.05, recorder=recorder)
    calls = [{"name": t.name, "args": {"x": i}} for i, t in enumerate(tools)]
    return agents.create_agent(ScriptedChatModel(script=[calls, tool_results_summary]), tools)


QUESTION = {"messages": [HumanMessage("Run all three.")]}


@lesson
def test_create_agent_runs_one_tools_task_per_call():
    agent = _agent(CallRecorder())

    async def updates():
        return [u async for u in agent.astream(QUESTION, stream_mode="updates") if "tools" in u]

    found = asyncio.run(updates())
    assert len(found) == 3 and all(len(u["tools"]["messages"]) == 1 for u in found)


@mock_interview
def test_create_agent_runs_its_calls_at_the_same_time():
    """Two plain `def` tools that return only when both are running: each is its own task, run together."""
    pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    from langchain.agents import create_agent

    barrier = threading.Barrier(2, timeout=5)

    def meet(x: int) -> str:
        barrier.wait()  # BrokenBarrierError unless both calls run at the same time
        return "met"

    tools = [StructuredTool.from_function(meet, name=f"meet{i}", description="Meet.") for i in range(2)]
    calls = [{"name": t.name, "args": {"x": i}} for i, t in enumerate(tools)]
    agent = create_agent(ScriptedChatModel(script=[calls, tool_results_summary]), tools)
    final = agent.invoke({"messages": [HumanMessage("Meet.")]})
    assert [m.content for m in final["messages"] if m.type == "tool"] == ["met", "met"]
    assert not barrier.broken


@lesson
def test_create_agent_honours_the_graph_max_concurrency():
    recorder = CallRecorder()
    asyncio.run(_agent(recorder).ainvoke(QUESTION, config={"max_concurrency": 1}))
    assert recorder.max_in_flight() == 1


@lesson
def test_mcp_tools_over_an_in_memory_session_are_async_only_and_answer_server_errors():
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp.shared.memory import create_connected_server_and_client_session

    from helpers.mcp_server import SERVER_NAME, build_server

    async def scenario():
        async with create_connected_server_and_client_session(build_server()) as session:
            tools = {t.name: t for t in await load_mcp_tools(session, server_name=SERVER_NAME)}
            node = ToolNode([tools["lookup_weather"], tools["lookup_traffic"]])
            with pytest.raises(NotImplementedError, match="does not support sync invocation"):
                node.invoke([ask(("lookup_weather", {"city": "Paris"}))], runtime=RT)
            both = ask(("lookup_weather", {"city": "Paris"}), ("lookup_traffic", {"city": "Paris"}))
            return await node.ainvoke([both], runtime=RT)

    weather, traffic = asyncio.run(scenario())
    assert isinstance(weather.content, list) and weather.text == "Paris: sunny, 25 °C"
    assert traffic.status == "error" and "traffic service unreachable for Paris" in traffic.text


@lesson
def test_get_tools_opens_a_new_session_for_each_tool_call(monkeypatch):
    """`client.get_tools()` without a session: one session to list the tools, then one per call."""
    from contextlib import asynccontextmanager

    import langchain_mcp_adapters.tools as adapter_tools
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from mcp.shared.memory import create_connected_server_and_client_session

    from helpers.mcp_server import build_server

    opened = []

    @asynccontextmanager
    async def counting_session(connection, **kwargs):
        opened.append(connection["transport"])
        async with create_connected_server_and_client_session(build_server()) as session:
            yield session

    monkeypatch.setattr(adapter_tools, "create_session", counting_session)
    client = MultiServerMCPClient({"city-guide": {"transport": "stdio", "command": sys.executable,
                                                  "args": ["-m", "helpers.mcp_server"]}})

    async def scenario():
        tools = {t.name: t for t in await client.get_tools()}
        listed = len(opened)
        for city in ("Paris", "Rome", "Oslo"):
            await tools["lookup_weather"].ainvoke({"city": city})
        return listed

    listed = asyncio.run(scenario())
    assert listed == 1 and len(opened) == 1 + 3


@lesson
def test_create_agent_resumes_only_the_interrupted_call():
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    recorder, deleted = CallRecorder(), []

    @tool
    def delete_after_approval(path: str) -> str:
        """Delete a file once a human approves."""
        if interrupt({"approve?": path}) != "yes":
            return "denied"
        deleted.append(path)
        return f"deleted {path}"

    calls = [{"name": "lookup_weather", "args": {"city": "Paris"}},
             {"name": "delete_after_approval", "args": {"path": "/tmp/report"}}]
    agent = agents.create_agent(
        ScriptedChatModel(script=[calls, tool_results_summary]),
        [make_city_tools(delay=0, recorder=recorder, sync=True)[0], delete_after_approval],
        checkpointer=InMemorySaver(),
    )
    thread = {"configurable": {"thread_id": "t"}}
    paused = agent.invoke({"messages": [HumanMessage("Weather, then clean up.")]}, thread)
    assert [i.value for i in paused["__interrupt__"]] == [{"approve?": "/tmp/report"}]
    agent.invoke(Command(resume="yes"), thread)
    assert len(recorder.calls) == 1 and deleted == ["/tmp/report"]


# -- cheat sheet rule 7: the sync path's thread pool ------------------------------------------------
def blocking_tools(count, started, release):
    """Sync tools that each note their start, then wait (at most 5 s) until `release()` says so."""
    def make(i):
        def run(x: int) -> str:
            started.append(i)
            if not release(i):
                raise AssertionError(f"call {i} waited 5 s for a release that never came")
            return f"t{i}"

        return StructuredTool.from_function(run, name=f"t{i}", description="wait")

    return [make(i) for i in range(count)]


@lesson_03
def test_the_sync_pool_is_a_sliding_window_not_waves():
    """One long call and four short ones, two workers: the short ones all finish while the long one
    still runs (a freed worker takes the next call). In waves, the third call would wait for the long
    one, which waits for the fourth short call: the long call would time out."""
    started, short_done, lock = [], [], threading.Lock()
    all_short_done = threading.Event()

    def release(i):
        if i == 0:  # the long call: ends only after every short call has ended
            return all_short_done.wait(5)
        with lock:
            short_done.append(i)
            if len(short_done) == 4:
                all_short_done.set()
        return True

    tools = blocking_tools(5, started, release)
    batch = {"messages": [ask(*((t.name, {"x": 0}) for t in tools))]}
    out = ToolNode(tools).invoke(batch, config={"max_concurrency": 2}, runtime=RT)
    assert [m.content for m in out["messages"]] == ["t0", "t1", "t2", "t3", "t4"]
    assert started[0] == 0 and sorted(short_done) == [1, 2, 3, 4]


def interpreter_pool_size():
    """The default size `ThreadPoolExecutor` computes: Python 3.13 counts the CPUs this process may
    use (`os.process_cpu_count()`), earlier versions every CPU of the machine (`os.cpu_count()`)."""
    cpus = os.process_cpu_count() if sys.version_info >= (3, 13) else os.cpu_count()
    return min(32, (cpus or 1) + 4)


@lesson_03
def test_the_default_pool_size_is_the_interpreters_own_formula():
    assert ThreadPoolExecutor()._max_workers == interpreter_pool_size()


@lesson_03
def test_without_max_concurrency_the_sync_path_runs_exactly_the_default_pool_size_at_once():
    """pool + 1 calls that each wait (0.8 s at most) for all of them to start: exactly `pool` run at
    once, then the last one starts when a worker frees up."""
    pool, started = interpreter_pool_size(), []
    everyone = threading.Event()

    def release(i):
        if len(started) == pool + 1:
            everyone.set()
        everyone.wait(0.8)
        return True

    in_flight, peak, lock = [0], [0], threading.Lock()

    def counted(i):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return release(i)
        finally:
            with lock:
                in_flight[0] -= 1

    tools = blocking_tools(pool + 1, started, counted)
    ToolNode(tools).invoke({"messages": [ask(*((t.name, {"x": 0}) for t in tools))]}, runtime=RT)
    assert peak[0] == pool


# -- cheat sheet rule 4: a hand-built node's allow-list and answers -----------------------------------
@pytest.mark.lesson("02_custom_async_tool_node")
def test_a_tool_node_answers_every_call_errors_too_by_its_tool_call_id():
    """A name outside the node's own list is answered, not looked up elsewhere; a raising tool is
    answered; every answer carries its call's id, in call order."""
    recorder = CallRecorder()
    weather, attraction = make_city_tools(delay=0, recorder=recorder)
    node = CustomAsyncToolNode([weather, make_failing_tool(delay=0)])
    calls = (("lookup_weather", {"city": "Paris"}), ("lookup_attraction", {"city": "Paris"}),
             ("lookup_traffic", {"city": "Paris"}))
    message = ask(*calls)
    out = asyncio.run(node({"messages": [message]}))["messages"]
    assert [m.tool_call_id for m in out] == [c["id"] for c in message.tool_calls]
    assert [m.status for m in out] == ["success", "error", "error"]
    assert [c.label for c in recorder.calls] == ["lookup_weather"]  # attraction exists, but not in this node
