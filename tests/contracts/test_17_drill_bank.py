"""Library behaviour the drill bank (lesson 17) and the mock interview (lesson 16) state beyond the lessons.

Each test runs exactly the form the drill or the spoken answer states (a `Send` list where the rule is
about `Send`, the async path where it says "under ainvoke"), so an upgrade that changes it names the
notebook to update. Order and overlap are driven by events, not by sleeps.
"""

from __future__ import annotations

import asyncio
import inspect
import operator
import os
import subprocess
import sys
import threading
from typing import Annotated

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import CallRecorder
from helpers.tools import make_city_tools

drill_bank = pytest.mark.lesson("17_drill_bank")
mock_interview = pytest.mark.lesson("16_mock_interview")
RT = Runtime()


def default_pool_size() -> int:
    """ThreadPoolExecutor's default, computed the way the running interpreter computes it."""
    cpus = os.process_cpu_count() if hasattr(os, "process_cpu_count") else os.cpu_count()
    return min(32, (cpus or 1) + 4)


# -- Command.PARENT: the rule for each form ---------------------------------------------------------
class Team(MessagesState):
    visited: Annotated[list[str], operator.add]


def hand_off(goto):
    @tool("to_a")
    def to_a(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the work to the parent's node A."""
        answer = ToolMessage(content="handed off", tool_call_id=tool_call_id)
        return Command(graph=Command.PARENT, goto=goto, update={"messages": [answer]})
    return to_a


def parent_unanswered(goto, with_sibling):
    tools = [hand_off(goto)] + ([make_city_tools(delay=0, sync=True)[0]] if with_sibling else [])
    calls = [{"name": "to_a", "args": {"x": 1}}, {"name": "lookup_weather", "args": {"city": "Paris"}}]
    model = ScriptedChatModel(script=[calls[: 1 + with_sibling]]).bind_tools(tools)
    inner = StateGraph(Team)
    inner.add_node("tools", ToolNode(tools))
    inner.add_edge(START, "tools")
    outer = StateGraph(Team)
    outer.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    outer.add_node("team", inner.compile())
    outer.add_node("A", lambda state: {"visited": ["A"]})
    outer.add_edge(START, "agent")
    outer.add_edge("agent", "team")
    final = outer.compile().invoke({"messages": [HumanMessage("Hand off.")], "visited": []})
    return final["visited"], unanswered_tool_calls(final["messages"])


@drill_bank
@pytest.mark.parametrize(("form", "goto", "with_sibling", "unanswered"), [
    ("a Send list, alone", [Send("A", None)], False, ["call_0_0"]),
    ("a Send list, beside a call", [Send("A", None)], True, ["call_0_0", "call_0_1"]),
    ("a string goto, alone", "A", False, []),
    ("a string goto, beside a call", "A", True, ["call_0_1"]),
])
def test_which_calls_a_parent_hand_off_leaves_unanswered_in_the_parent(form, goto, with_sibling, unanswered):
    assert parent_unanswered(goto, with_sibling) == (["A"], unanswered), form


@mock_interview
def test_toolnode_drops_the_update_of_a_send_list_hand_off_even_alone_and_keeps_a_string_gotos():
    request = {"messages": [tool_calls_message([("to_a", {"x": 1})])]}
    assert ToolNode([hand_off([Send("A", None)])]).invoke(request, runtime=RT) == [
        Command(graph=Command.PARENT, goto=[Send("A", None)])]
    (kept,) = ToolNode([hand_off("A")]).invoke(request, runtime=RT)
    assert kept.goto == "A" and kept.update["messages"][0].tool_call_id == "call-0"


# -- approval ---------------------------------------------------------------------------------------
def deleting_tools(recorder, deleted):
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"
    return [make_city_tools(delay=0, recorder=recorder, sync=True)[0], delete_file]


@drill_bank
@mock_interview
def test_an_interrupt_in_an_interceptor_pauses_under_handle_tool_errors_true_after_the_safe_sibling_ran():
    recorder, deleted = CallRecorder(), []

    def approve(request, execute):
        if request.tool_call["name"] == "delete_file" and interrupt(request.tool_call["args"]) != "yes":
            return ToolMessage("denied", tool_call_id=request.tool_call["id"], status="error")
        return execute(request)

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(deleting_tools(recorder, deleted), wrap_tool_call=approve,
                                       handle_tool_errors=True))
    builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    batch = tool_calls_message([("lookup_weather", {"city": "Paris"}), ("delete_file", {"path": "/tmp/r"})])
    paused = graph.invoke({"messages": [batch]}, thread)
    assert "__interrupt__" in paused and deleted == [] and len(recorder.calls) == 1
    graph.invoke(Command(resume="yes"), thread)
    assert deleted == ["/tmp/r"] and len(recorder.calls) == 2


@drill_bank
@mock_interview
def test_human_in_the_loop_middleware_asks_once_for_every_flagged_call_before_any_tool_runs():
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    recorder, deleted = CallRecorder(), []
    calls = [{"name": "lookup_weather", "args": {"city": "Paris"}},
             {"name": "delete_file", "args": {"path": "/tmp/a"}},
             {"name": "delete_file", "args": {"path": "/tmp/b"}}]
    agent = agents.create_agent(ScriptedChatModel(script=[calls, tool_results_summary]),
                                deleting_tools(recorder, deleted),
                                middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_file": True})],
                                checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    (request,) = agent.invoke({"messages": [HumanMessage("go")]}, thread)["__interrupt__"]
    assert [a["args"]["path"] for a in request.value["action_requests"]] == ["/tmp/a", "/tmp/b"]
    assert recorder.calls == [] and deleted == []
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}, {"type": "reject"}]}), thread)
    assert len(recorder.calls) == 1 and deleted == ["/tmp/a"]



@drill_bank
@mock_interview
def test_human_in_the_loop_middleware_per_call_mode_asks_per_call_and_runs_safe_siblings_first():
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    recorder, deleted = CallRecorder(), []
    calls = [{"name": "lookup_weather", "args": {"city": "Paris"}},
             {"name": "delete_file", "args": {"path": "/tmp/a"}},
             {"name": "delete_file", "args": {"path": "/tmp/b"}}]
    middleware = HumanInTheLoopMiddleware(interrupt_on={"delete_file": True}, interrupt_mode="per_call")
    agent = agents.create_agent(ScriptedChatModel(script=[calls, tool_results_summary]),
                                deleting_tools(recorder, deleted), middleware=[middleware],
                                checkpointer=InMemorySaver())
    paused = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    assert sorted(i.value["args"]["path"] for i in paused["__interrupt__"]) == ["/tmp/a", "/tmp/b"]
    assert len(recorder.calls) == 1 and deleted == []  # the safe sibling already ran


# -- drills 11, 14 and 33: what the answers say, in full ---------------------------------------------
@drill_bank
def test_a_config_max_concurrency_of_one_breaks_a_barrier_of_three():
    barrier = threading.Barrier(3, timeout=1)

    def meet(x: int) -> str:
        barrier.wait()
        return "met"

    trio = [StructuredTool.from_function(meet, name=f"meet{i}", description="Meet.") for i in range(3)]
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(trio))
    builder.add_edge(START, "tools")
    with pytest.raises(threading.BrokenBarrierError):
        builder.compile().invoke({"messages": [tool_calls_message(trio)]}, config={"max_concurrency": 1})


@drill_bank
def test_an_async_only_tool_under_invoke_answers_with_the_full_error_text_under_true():
    weather = make_city_tools(delay=0.01)[0]
    question = [tool_calls_message([("lookup_weather", {"city": "Paris"})])]
    with pytest.raises(NotImplementedError) as raised:
        ToolNode([weather]).invoke(question, runtime=RT)
    assert str(raised.value) == "StructuredTool does not support sync invocation."
    (answer,) = ToolNode([weather], handle_tool_errors=True).invoke(question, runtime=RT)
    assert answer.content == ("Error: NotImplementedError('StructuredTool does not support sync invocation.')"
                              "\n Please fix your mistakes.")


@drill_bank
def test_a_bare_tool_runtime_with_a_context_warns_on_every_call():
    import warnings
    from dataclasses import dataclass

    @dataclass
    class UserContext:
        user: str

    @tool
    def greet(city: str, runtime: ToolRuntime) -> str:
        """Greet the user."""
        return f"hello {runtime.context.user} from {city}"

    builder = StateGraph(MessagesState, context_schema=UserContext)
    builder.add_node("tools", ToolNode([greet]))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    per_call = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph.invoke({"messages": [tool_calls_message([("greet", {"city": "Paris"})])]},
                         context=UserContext("ann"))
        per_call.append([w for w in caught if "field_name='context'" in str(w.message)])
    assert all(per_call) and len(per_call[0]) == len(per_call[1])


# -- the sync path's pool ---------------------------------------------------------------------------
@drill_bank
def test_the_sync_path_runs_exactly_the_interpreters_default_pool_size_at_once():
    pool, recorder, full, arrived = default_pool_size(), CallRecorder(), threading.Event(), []

    def fill(x: int) -> str:
        with recorder.span(f"fill{x}"):
            arrived.append(x)
            if len(arrived) == pool:
                full.set()
            full.wait(timeout=5)
        return "ok"

    tools = [StructuredTool.from_function(fill, name=f"fill{i}", description="F.") for i in range(pool + 1)]
    ToolNode(tools).invoke([tool_calls_message(tools)], runtime=RT)
    assert full.is_set() and recorder.max_in_flight() == pool


@drill_bank
def test_the_sync_path_is_a_sliding_window_not_waves():
    done, shorts = threading.Event(), []

    def long_call(x: int) -> str:
        return "overlapped" if done.wait(timeout=5) else "waited for a wave"

    def short_call(x: int) -> str:
        shorts.append(x)
        if len(shorts) == 4:
            done.set()
        return "short"

    tools = [StructuredTool.from_function(long_call, name="long", description="Long."),
             *[StructuredTool.from_function(short_call, name=f"s{i}", description="S.") for i in range(4)]]
    answers = ToolNode(tools).invoke([tool_calls_message(tools)], config={"max_concurrency": 2}, runtime=RT)
    assert answers[0].content == "overlapped" and len(shorts) == 4


@drill_bank
def test_sync_tools_under_ainvoke_run_in_the_event_loops_default_executor():
    recorder = CallRecorder()
    tools = make_timed_tools(3, 0.01, kind="sync", recorder=recorder)

    async def scenario():
        await ToolNode(tools).ainvoke([tool_calls_message(tools)], runtime=RT)

    asyncio.run(scenario())
    assert recorder.workers() and all(worker.startswith("asyncio_") for worker in recorder.workers())


# -- a failing sibling in create_agent --------------------------------------------------------------
def crash_then_retry(kind, call):
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    service, runs, release, finished, fate = {"up": False}, [], threading.Event(), threading.Event(), []

    @tool
    def lookup_traffic(city: str) -> str:
        """Look up live traffic for a city."""
        if not service["up"]:
            raise ConnectionError("down")
        return "light traffic"

    if kind == "async def":
        async def weather(city: str) -> str:
            try:
                await asyncio.sleep(0 if runs else 2)
            except asyncio.CancelledError:
                fate.append("cancelled")
                raise
            runs.append(city)
            return "sunny"
        weather_tool = StructuredTool.from_function(coroutine=weather, name="lookup_weather",
                                                    description="W.")
    else:
        def weather(city: str) -> str:
            if call == "ainvoke" and not runs:
                release.wait(timeout=5)
            runs.append(city)
            finished.set()
            return "sunny"
        weather_tool = StructuredTool.from_function(weather, name="lookup_weather", description="W.")

    script = [[{"name": "lookup_weather", "args": {"city": "Paris"}},
               {"name": "lookup_traffic", "args": {"city": "Paris"}}], tool_results_summary]
    agent = agents.create_agent(ScriptedChatModel(script=script), [weather_tool, lookup_traffic],
                                checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    question = {"messages": [HumanMessage("go")]}

    async def scenario():
        with pytest.raises(ConnectionError):
            agent.invoke(question, thread) if call == "invoke" else await agent.ainvoke(question, thread)
        release.set()
        if kind == "def":
            assert await asyncio.to_thread(finished.wait, 5)
        saved = [m.type for m in agent.get_state(thread).values["messages"]]
        at_crash, service["up"] = len(runs), True
        agent.invoke(None, thread) if call == "invoke" else await agent.ainvoke(None, thread)
        return saved, at_crash, len(runs), fate

    return asyncio.run(scenario())


@drill_bank
@pytest.mark.parametrize(("kind", "call", "expected"), [
    ("def", "invoke", (["human", "ai", "tool"], 1, 1, [])),
    ("async def", "ainvoke", (["human", "ai"], 0, 1, ["cancelled"])),
    ("def", "ainvoke", (["human", "ai"], 1, 2, [])),
])
def test_a_failing_sibling_in_create_agent_saved_cancelled_or_run_twice(kind, call, expected):
    assert crash_then_retry(kind, call) == expected


# -- recursion limit, deadlines, MCP ----------------------------------------------------------------
@drill_bank
def test_the_default_recursion_limit_comes_from_an_environment_variable():
    probe = "\n".join([
        "from typing import TypedDict", "from langgraph.graph import START, StateGraph",
        "from langgraph.managed import RemainingSteps", "class B(TypedDict):",
        "    remaining_steps: RemainingSteps", "    seen: int", "g = StateGraph(B)",
        "g.add_node('peek', lambda s: {'seen': s['remaining_steps']})", "g.add_edge(START, 'peek')",
        "print(g.compile().invoke({'seen': 0})['seen'] + 1)"])
    env = {**os.environ, "LANGGRAPH_DEFAULT_RECURSION_LIMIT": "50"}
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "50", run.stderr[-500:]


@drill_bank
@mock_interview
@pytest.mark.timing
def test_an_interceptor_deadline_reports_only_its_own_timeout_and_bounds_the_calls():
    slots, recorder = asyncio.Semaphore(2), CallRecorder()

    async def bounded(request, execute):
        call = request.tool_call
        async with slots:
            try:
                async with asyncio.timeout(0.5) as deadline:
                    return await execute(request)
            except TimeoutError as exc:
                text = "ours" if deadline.expired() else f"Error: {exc!r}"
                return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")

    @tool
    async def hangs(city: str) -> str:
        """Never answers."""
        await asyncio.sleep(30)
        return "never"

    @tool
    async def gives_up(city: str) -> str:
        """Times out on its own."""
        raise TimeoutError("upstream read timed out")

    quick = make_timed_tools(4, 0.2, recorder=recorder)
    node = ToolNode([*quick, hangs, gives_up], awrap_tool_call=bounded)

    async def scenario():
        await node.ainvoke([tool_calls_message(quick)], runtime=RT)
        both = tool_calls_message([("hangs", {"city": "P"}), ("gives_up", {"city": "P"})])
        return await node.ainvoke([both], runtime=RT)

    late = asyncio.run(scenario())
    assert recorder.max_in_flight() == 2
    assert [m.content for m in late] == ["ours", "Error: TimeoutError('upstream read timed out')"]


@drill_bank
def test_the_mcp_adapter_answers_server_errors_by_default_and_raises_a_tool_exception_when_told_not_to():
    from langchain_core.tools import ToolException
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp.shared.memory import create_connected_server_and_client_session

    from helpers.mcp_server import SERVER_NAME, build_server

    assert inspect.signature(load_mcp_tools).parameters["handle_tool_errors"].default is True
    question = [tool_calls_message([("lookup_traffic", {"city": "Paris"})])]

    async def scenario(**options):
        async with create_connected_server_and_client_session(build_server()) as session:
            tools = {t.name: t for t in await load_mcp_tools(session, server_name=SERVER_NAME, **options)}
            try:  # caught inside the session: leaving it re-raises through its task group
                return await ToolNode([tools["lookup_traffic"]]).ainvoke(question, runtime=RT)
            except Exception as exc:
                return exc

    (answer,) = asyncio.run(scenario())
    assert answer.status == "error" and "traffic service unreachable for Paris" in answer.text
    raised = asyncio.run(scenario(handle_tool_errors=False))
    assert isinstance(raised, ToolException) and "traffic service unreachable for Paris" in str(raised)
