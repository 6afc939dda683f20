"""Library behaviour the drill bank (lesson 20) and the mock interview (lesson 19) state beyond the lessons.

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
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

import pytest
from langchain_core.messages import HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import InjectedStore, ToolNode, ToolRuntime, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import CallRecorder
from helpers.tools import make_city_tools

drill_bank = pytest.mark.lesson("20_drill_bank")
mock_interview = pytest.mark.lesson("19_mock_interview")
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
    ("a bare Send, alone", Send("A", None), False, []),
    ("a bare Send, beside a call", Send("A", None), True, ["call_0_1"]),
    ("a tuple of Sends, alone", (Send("A", None),), False, []),
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
def _three_that_must_meet():
    """Three tools that each wait at one barrier (1 s), and a graph whose one node runs them."""
    barrier = threading.Barrier(3, timeout=1)

    def meet(x: int) -> str:
        barrier.wait()
        return "met"

    trio = [StructuredTool.from_function(meet, name=f"meet{i}", description="Meet.") for i in range(3)]
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(trio))
    builder.add_edge(START, "tools")
    return trio, builder.compile()


@drill_bank
def test_a_config_max_concurrency_of_one_breaks_a_barrier_of_three():
    trio, graph = _three_that_must_meet()
    with pytest.raises(threading.BrokenBarrierError):
        graph.invoke({"messages": [tool_calls_message(trio)]}, config={"max_concurrency": 1})


@drill_bank
def test_drill_11_a_nested_max_concurrency_is_ignored_and_toolnode_invoke_refuses_the_keyword():
    trio, graph = _three_that_must_meet()
    request = {"messages": [tool_calls_message(trio)]}
    nested = graph.invoke(request, config={"configurable": {"max_concurrency": 1}})
    assert [m.content for m in nested["messages"][1:]] == ["met"] * 3
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_concurrency'"):
        ToolNode(trio).invoke(request, max_concurrency=1, runtime=RT)


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


# == Sittings 7–9: streaming and stopping, failure and cancellation, middleware and tool definitions ==
GO = {"messages": [HumanMessage("go")]}


def agents_module():
    return pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")


def middleware_module():
    return pytest.importorskip(
        "langchain.agents.middleware", reason="langchain's middleware is not installed"
    )


@tool
def find(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool
def flag(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Set a flag (answers its call with a Command)."""
    return Command(update={"messages": [ToolMessage("flag set", tool_call_id=tool_call_id)]})


# -- sitting 7: streaming and stopping ---------------------------------------------------------------
@drill_bank
def test_drill_44_a_command_in_the_batch_streams_a_list_in_the_loop_and_one_dict_per_call_in_create_agent():
    from helpers.graphs import tool_loop

    turn = [[{"name": "find", "args": {"query": "Paris"}}, {"name": "flag", "args": {}}], "done"]
    loop = tool_loop(ScriptedChatModel(script=turn).bind_tools([find, flag]), [find, flag])
    agent = agents_module().create_agent(ScriptedChatModel(script=turn), [find, flag])
    loop_chunks = [u["tools"] for u in loop.stream(GO, stream_mode="updates") if "tools" in u]
    agent_chunks = [u["tools"] for u in agent.stream(GO, stream_mode="updates") if "tools" in u]
    assert len(loop_chunks) == 1 and isinstance(loop_chunks[0], list)
    with pytest.raises(TypeError):
        loop_chunks[0]["messages"]
    assert [len(u["messages"]) for u in loop_chunks[0]] == [1, 1]
    assert len(agent_chunks) == 2 and all(
        isinstance(c, dict) and len(c["messages"]) == 1 for c in agent_chunks
    )


@drill_bank
def test_drill_45_progress_streams_first_is_dropped_by_invoke_and_a_unit_test_gets_a_key_error():
    from langgraph.config import get_stream_writer

    from helpers.graphs import tool_loop

    @tool
    def crawl(site: str) -> str:
        """Crawl a site, reporting each page."""
        write = get_stream_writer()
        for page in (1, 2):
            write({"page": page})
        return f"crawled {site}"

    loop = tool_loop(
        ScriptedChatModel(script=[[{"name": "crawl", "args": {"site": "s"}}], "done"]).bind_tools([crawl]),
        [crawl],
    )
    order = [
        mode if mode == "custom" else next(iter(chunk))
        for mode, chunk in loop.stream(GO, stream_mode=["updates", "custom"])
    ]
    assert order == ["llm", "custom", "custom", "tools", "llm"]
    state = loop.invoke(GO)
    assert state["messages"][-2].content == "crawled s" and set(state) == {"messages"}
    assert not any("page" in str(m.content) for m in state["messages"])
    with pytest.raises(KeyError) as raised:
        crawl.invoke({"site": "s"})
    assert raised.value.args == ("__pregel_runtime",)


@drill_bank
def test_drill_46_an_inner_models_tokens_stream_under_tools_unless_tagged_nostream():
    from helpers.graphs import tool_loop

    inner = ScriptedChatModel(script=["a short summary"])

    def seen(quiet):
        @tool
        def summarise(url: str) -> str:
            """Summarise a page."""
            return (inner.with_config(tags=["nostream"]) if quiet else inner).invoke(url).content

        graph = tool_loop(
            ScriptedChatModel(script=[[{"name": "summarise", "args": {"url": "u"}}], "ok"]).bind_tools(
                [summarise]
            ),
            [summarise],
        )
        return [
            (meta["langgraph_node"], type(m).__name__, m.content)
            for m, meta in graph.stream(GO, stream_mode="messages")
            if m.content
        ]

    loud, quiet = seen(False), [("tools", "ToolMessage", "a short summary"), ("llm", "AIMessageChunk", "ok")]
    tokens = [r for r in loud if r[:2] == ("tools", "AIMessageChunk")]
    assert "".join(r[2] for r in tokens) == "a short summary" and loud == tokens + quiet
    assert seen(True) == quiet


@drill_bank
def test_drill_47_create_agent_raises_at_every_limit_and_create_react_agent_apologises_at_even_ones():
    import warnings

    from langgraph.errors import GraphRecursionError
    from langgraph.prebuilt import create_react_agent

    forever = [[{"name": "find", "args": {"query": f"p{i}"}}] for i in range(40)]

    def outcome(build, limit):
        try:
            return (
                build(ScriptedChatModel(script=forever), [find])
                .invoke(GO, {"recursion_limit": limit})["messages"][-1]
                .content
            )
        except GraphRecursionError:
            return "GraphRecursionError"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        react = {limit: outcome(create_react_agent, limit) for limit in range(4, 10)}
    agent = {limit: outcome(agents_module().create_agent, limit) for limit in range(4, 10)}
    sorry = "Sorry, need more steps to process this request."
    assert agent == dict.fromkeys(range(4, 10), "GraphRecursionError")
    assert react == {limit: sorry if limit % 2 == 0 else "GraphRecursionError" for limit in range(4, 10)}


@drill_bank
def test_drill_48_return_direct_beside_another_call_stops_create_react_agent_but_not_create_agent():
    import warnings

    from langgraph.graph import END
    from langgraph.prebuilt import create_react_agent

    @tool
    def finish(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Answer, then try to end the run."""
        return Command(update={"messages": [ToolMessage(text, tool_call_id=tool_call_id)]}, goto=END)

    @tool(return_direct=True)
    def final_answer(text: str) -> str:
        """Give the final answer."""
        return text

    turns = {
        "alone": [{"name": "final_answer", "args": {"text": "42"}}],
        "beside": [
            {"name": "final_answer", "args": {"text": "42"}},
            {"name": "find", "args": {"query": "x"}},
        ],
    }
    endings = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, turn in turns.items():
            for name, build in (("agent", agents_module().create_agent), ("react", create_react_agent)):
                messages = build(ScriptedChatModel(script=[turn, "again"]), [final_answer, find]).invoke(GO)[
                    "messages"
                ]
                endings[label, name] = (
                    type(messages[-1]).__name__,
                    sum(isinstance(m, ToolMessage) for m in messages),
                )
        for name, build in (("agent", agents_module().create_agent), ("react", create_react_agent)):
            script = [[{"name": "finish", "args": {"text": "42"}}], "again"]
            messages = build(ScriptedChatModel(script=script), [finish]).invoke(GO)["messages"]
            endings["goto_end", name] = (type(messages[-1]).__name__, messages[-1].content)
    assert endings["alone", "agent"] == endings["alone", "react"] == ("ToolMessage", 1)
    assert endings["beside", "agent"] == ("AIMessage", 2) and endings["beside", "react"] == ("ToolMessage", 2)
    assert endings["goto_end", "agent"] == endings["goto_end", "react"] == ("AIMessage", "again")


@drill_bank
@pytest.mark.parametrize(
    ("exit_behavior", "fetched_pages", "unanswered"),
    [("continue", ["a"], 0), ("end", [], 0), ("error", [], 2)],
)
def test_drill_49_a_one_call_budget_fetches_one_none_or_none_and_error_leaves_the_turn_unanswered(
    exit_behavior, fetched_pages, unanswered
):
    middleware = middleware_module()
    from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError

    fetched = []

    @tool
    def fetch_page(url: str) -> str:
        """Fetch a page."""
        fetched.append(url)
        return f"fetched {url}"

    greedy = [
        [{"name": "fetch_page", "args": {"url": "a"}}, {"name": "fetch_page", "args": {"url": "b"}}],
        "final answer",
    ]
    agent = agents_module().create_agent(
        ScriptedChatModel(script=greedy),
        [fetch_page],
        checkpointer=InMemorySaver(),
        middleware=[middleware.ToolCallLimitMiddleware(run_limit=1, exit_behavior=exit_behavior)],
    )
    config = {"configurable": {"thread_id": exit_behavior}}
    if exit_behavior == "error":
        with pytest.raises(ToolCallLimitExceededError):
            agent.invoke(GO, config)
    else:
        agent.invoke(GO, config)
    messages = agent.get_state(config).values["messages"]
    assert fetched == fetched_pages and len(unanswered_tool_calls(messages)) == unanswered


@drill_bank
def test_drill_50_parallel_tool_calls_false_is_sent_and_toolnode_runs_both_calls_a_server_returns_at_once():
    from langchain_openai import ChatOpenAI

    from helpers.graphs import tool_loop
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    both_started = threading.Barrier(2, timeout=5)

    @tool
    def lookup(query: str) -> str:
        """Look something up (returns only once the turn's other call has started too)."""
        both_started.wait()
        return f"found {query}"

    script = [
        [
            {"name": "lookup", "args": {"query": "the city"}},
            {"name": "lookup", "args": {"query": "its weather"}},
        ],
        "done",
    ]
    with ScriptedOpenAIEndpoint(script) as endpoint:
        llm = ChatOpenAI(
            model="gpt-4o", base_url=endpoint.base_url, api_key="unused", use_responses_api=False
        )
        messages = tool_loop(llm.bind_tools([lookup], parallel_tool_calls=False), [lookup]).invoke(GO)[
            "messages"
        ]
        sent = endpoint.requests[0]["parallel_tool_calls"]
    assert sent is False
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == [
        "found the city",
        "found its weather",
    ]


# -- sitting 8: failure, recovery and cancellation ---------------------------------------------------
class Payments:
    """`take_payment` always works, `send_receipt` fails while the service is down; `paid` records."""

    TURN = [
        [{"name": "take_payment", "args": {"amount": 5}}, {"name": "send_receipt", "args": {"user": "ann"}}],
        "all done",
    ]

    def __init__(self):
        self.paid, self.paid_for, self.up = [], [], False
        self.went_through = threading.Event()  # the down service fails only once the payment went through

        @tool
        def take_payment(amount: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Charge the customer."""
            self.paid.append(amount)
            self.paid_for.append(tool_call_id)
            self.went_through.set()
            return f"charged {amount}"

        @tool
        def send_receipt(user: str) -> str:
            """Send the receipt."""
            if not self.up:
                self.went_through.wait(5)
                raise ConnectionError("receipt service is down")
            return f"receipt sent to {user}"

        self.tools = [take_payment, send_receipt]

    def batch(self, model):
        llm = model.bind_tools(self.tools)
        builder = StateGraph(MessagesState)
        builder.add_node("llm", lambda state: {"messages": [llm.invoke(state["messages"])]})
        builder.add_node("tools", ToolNode(self.tools))
        builder.add_edge(START, "llm")
        builder.add_conditional_edges("llm", tools_condition)
        builder.add_edge("tools", "llm")
        return builder.compile(checkpointer=InMemorySaver())

    def agent(self, model):
        return agents_module().create_agent(model, self.tools, checkpointer=InMemorySaver())

    def crash(self, design, model=None):
        self.went_through.clear()
        graph = getattr(self, design)(model or ScriptedChatModel(script=self.TURN))
        config = {"configurable": {"thread_id": design}}
        with pytest.raises(ConnectionError):
            graph.invoke({"messages": [HumanMessage("Charge ann 5")]}, config)
        return graph, config


@drill_bank
@pytest.mark.parametrize(
    ("design", "answered", "unanswered"), [("batch", [], 2), ("agent", ["charged 5"], 1)]
)
def test_drill_51_a_mid_batch_raise_keeps_no_answer_in_the_batch_and_the_finished_one_in_create_agent(
    design, answered, unanswered
):
    shop = Payments()
    graph, config = shop.crash(design)
    snapshot = graph.get_state(config)
    messages = snapshot.values["messages"]
    assert snapshot.next == ("tools",) and shop.paid == [5]
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == answered
    assert len(unanswered_tool_calls(messages)) == unanswered


@drill_bank
@pytest.mark.parametrize(("design", "payments"), [("batch", 2), ("agent", 1)])
def test_drill_52_resuming_charges_twice_with_the_batch_and_once_with_create_agent(design, payments):
    shop = Payments()
    graph, config = shop.crash(design)
    shop.up = True
    assert graph.invoke(None, config)["messages"][-1].content == "all done"
    assert len(shop.paid) == payments and len(set(shop.paid_for)) == 1  # a re-run keeps its call id


def repair_history(graph, config):
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    repaired = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        repaired.append(message)
        for call in getattr(message, "tool_calls", []):
            repaired.append(
                answers.get(call["id"])
                or ToolMessage("not completed", tool_call_id=call["id"], status="error")
            )
    graph.update_state(
        config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}, as_node="tools"
    )


@drill_bank
def test_drill_53_a_crashed_thread_gets_a_400_appending_answers_fails_rewriting_works():
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    shop = Payments()
    with ScriptedOpenAIEndpoint([Payments.TURN[0], "back on track"], check_history=True) as endpoint:
        llm = ChatOpenAI(
            model="gpt-4o",
            base_url=endpoint.base_url,
            api_key="unused",
            use_responses_api=False,
            max_retries=0,
        )
        graph, config = shop.crash("batch", model=llm)
        with pytest.raises(Exception) as first:
            graph.invoke({"messages": [HumanMessage("What is my balance?")]}, config)
        late = [
            ToolMessage("not completed", tool_call_id=i, status="error")
            for i in unanswered_tool_calls(graph.get_state(config).values["messages"])
        ]
        graph.update_state(config, {"messages": late}, as_node="tools")
        with pytest.raises(Exception) as appended:
            graph.invoke(None, config)
        repair_history(graph, config)
        assert graph.invoke(None, config)["messages"][-1].content == "back on track"
    assert first.value.status_code == 400
    assert "must be followed by tool messages responding to each 'tool_call_id'" in str(first.value)
    assert appended.value.status_code == 400


@drill_bank
def test_drill_54_a_timeout_around_ainvoke_cancels_the_async_tool_while_the_sync_tools_thread_finishes():
    done, thread_started, release, thread_done = [], threading.Event(), threading.Event(), threading.Event()

    async def scenario():
        async_started = asyncio.Event()

        @tool
        async def async_search(query: str) -> str:
            """Search (async)."""
            async_started.set()
            await asyncio.Event().wait()
            done.append("async_search")
            return "a"

        @tool
        def thread_search(query: str) -> str:
            """Search (sync)."""
            thread_started.set()
            release.wait(5)
            done.append("thread_search")
            thread_done.set()
            return "b"

        script = [
            [
                {"name": "async_search", "args": {"query": "a"}},
                {"name": "thread_search", "args": {"query": "b"}},
            ],
            "done",
        ]
        agent = agents_module().create_agent(
            ScriptedChatModel(script=script), [async_search, thread_search], checkpointer=InMemorySaver()
        )
        config = {"configurable": {"thread_id": "deadline"}}

        async def trigger(deadline):
            await async_started.wait()
            await asyncio.to_thread(thread_started.wait, 5)
            deadline.reschedule(asyncio.get_running_loop().time())

        with pytest.raises(TimeoutError):
            async with asyncio.timeout(None) as deadline:
                waiter = asyncio.ensure_future(trigger(deadline))
                await agent.ainvoke({"messages": [HumanMessage("search")]}, config)
        await waiter
        at_timeout = list(done)
        release.set()
        assert await asyncio.to_thread(thread_done.wait, 5)
        snapshot = await agent.aget_state(config)
        return at_timeout, list(done), len(unanswered_tool_calls(snapshot.values["messages"]))

    assert asyncio.run(scenario()) == ([], ["thread_search"], 2)


@drill_bank
def test_drill_55_three_agent_runs_one_failing_under_gather_return_exceptions_and_a_task_group():
    create_agent = agents_module().create_agent

    async def scenario():
        finished, go = [], asyncio.Event()

        @tool
        async def greet_user(user: str) -> str:
            """Greet the user."""
            if user == "bob":
                raise ConnectionError("down")
            await go.wait()
            finished.append(user)
            return f"hello {user}"

        def runs():
            finished.clear()
            go.clear()
            return [
                create_agent(
                    ScriptedChatModel(script=[[{"name": "greet_user", "args": {"user": u}}], "done"]),
                    [greet_user],
                ).ainvoke({"messages": [HumanMessage(u)]})
                for u in ("ann", "bob", "cy")
            ]

        tasks = [asyncio.ensure_future(r) for r in runs()]
        with pytest.raises(ConnectionError):
            await asyncio.gather(*tasks)
        gather_at_raise = sorted(finished)
        go.set()
        await asyncio.wait([t for t in tasks if not t.done()], timeout=5)
        gather_later = sorted(finished)

        pending = runs()
        go.set()
        outcomes = [type(o).__name__ for o in await asyncio.gather(*pending, return_exceptions=True)]
        with_exceptions = sorted(finished)

        pending = runs()
        try:
            async with asyncio.TaskGroup() as group:
                group_tasks = [group.create_task(r) for r in pending]
        except* ConnectionError as failures:
            group_raised = type(failures).__name__
        go.set()
        await asyncio.sleep(0)
        return (
            gather_at_raise,
            gather_later,
            outcomes,
            with_exceptions,
            group_raised,
            [t.cancelled() for t in group_tasks],
            sorted(finished),
        )

    assert asyncio.run(scenario()) == (
        [],
        ["ann", "cy"],
        ["dict", "ConnectionError", "dict"],
        ["ann", "cy"],
        "ExceptionGroup",
        [True, False, True],
        [],
    )


@drill_bank
def test_drill_56_a_node_timeout_is_refused_under_sync_invoke_and_raises_node_timeout_error_under_ainvoke():
    from langgraph.errors import NodeTimeoutError

    paid, billed = [], []

    @tool
    def take_payment(amount: int) -> str:
        """Charge the customer."""
        paid.append(amount)
        return f"charged {amount}"

    model = ScriptedChatModel(script=[[{"name": "take_payment", "args": {"amount": 1}}], "paid"])
    llm = model.bind_tools([take_payment])

    def priced_llm(state):
        billed.append("model call")
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", priced_llm)
    builder.add_node("tools", ToolNode([take_payment]), timeout=1.0)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    graph = builder.compile(checkpointer=InMemorySaver())  # ToolNode is an async node: the graph compiles
    thread = {"configurable": {"thread_id": "timed"}}
    with pytest.raises(ValueError, match="only supported for async nodes"):
        graph.invoke({"messages": [HumanMessage("Charge 1")]}, thread)
    assert billed == ["model call"] and paid == []  # refused at the tools step, after the model ran
    waiting = graph.get_state(thread)
    assert waiting.next == ("tools",) and unanswered_tool_calls(waiting.values["messages"]) == ["call_0_0"]
    with pytest.raises(ValueError, match="only supported for async nodes"):
        graph.invoke(None, thread)  # the same refusal on every sync resume
    assert asyncio.run(graph.ainvoke(None, thread))["messages"][-1].content == "paid" and paid == [1]

    plain_node = StateGraph(MessagesState)
    plain_node.add_node("note", lambda state: {}, timeout=1.0)
    plain_node.add_edge(START, "note")
    with pytest.raises(ValueError, match="Node 'note' is sync"):
        plain_node.compile()  # a plain def node: refused before anything runs

    hung = []

    @tool
    async def never_answers(x: int) -> str:
        """Waits until cancelled."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            hung.append("cancelled")
            raise

    stalled = StateGraph(MessagesState)
    stalled.add_node("tools", ToolNode([never_answers]), timeout=0.2)
    stalled.add_edge(START, "tools")
    with pytest.raises(NodeTimeoutError):
        asyncio.run(
            stalled.compile().ainvoke({"messages": [tool_calls_message([("never_answers", {"x": 1})])]})
        )
    assert hung == ["cancelled"]


# -- sitting 9: approval, retry, middleware order, what a tool sees, tool definitions -----------------
class Reviewed:
    """`erase` and `mail` need approval, `peek` does not; `ran` records what really ran."""

    def __init__(self):
        self.ran = []

        def recording(name, verb):
            def run(arg: str) -> str:
                self.ran.append(f"{name} {arg}")
                return f"{verb} {arg}"

            return run

        self.tools = [
            StructuredTool.from_function(
                recording("erase", "erased"), name="erase", description="Erase a file."
            ),
            StructuredTool.from_function(
                recording("mail", "mailed"), name="mail", description="Send an email."
            ),
            StructuredTool.from_function(recording("peek", "peeked"), name="peek", description="Look up."),
        ]
        turn = [
            {"name": "erase", "args": {"arg": "/tmp/a"}},
            {"name": "mail", "args": {"arg": "ann"}},
            {"name": "peek", "args": {"arg": "x"}},
        ]
        self.agent = agents_module().create_agent(
            ScriptedChatModel(script=[turn, tool_results_summary]),
            self.tools,
            checkpointer=InMemorySaver(),
            middleware=[
                middleware_module().HumanInTheLoopMiddleware(interrupt_on={"erase": True, "mail": True})
            ],
        )
        self.config = {"configurable": {"thread_id": "reviewed"}}


@drill_bank
def test_drill_57_one_decision_for_two_flagged_calls_raises_and_the_saved_resume_is_replayed():
    reviewed = Reviewed()
    paused = reviewed.agent.invoke(GO, reviewed.config)["__interrupt__"]
    assert len(paused) == 1 and [a["name"] for a in paused[0].value["action_requests"]] == ["erase", "mail"]
    assert reviewed.ran == []
    with pytest.raises(
        ValueError, match=r"Number of human decisions \(1\) does not match number of hanging tool calls \(2\)"
    ):
        reviewed.agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), reviewed.config)
    with pytest.raises(ValueError, match=r"\(1\) does not match"):
        reviewed.agent.invoke(Command(resume={"decisions": [{"type": "approve"}] * 2}), reviewed.config)
    assert reviewed.ran == []
    # the repair, on the same thread: restart the review step, pause again, answer right
    reviewed.agent.update_state(reviewed.config, None, as_node="model")
    assert "__interrupt__" in reviewed.agent.invoke(None, reviewed.config)
    reviewed.agent.invoke(Command(resume={"decisions": [{"type": "approve"}] * 2}), reviewed.config)
    assert sorted(reviewed.ran) == ["erase /tmp/a", "mail ann", "peek x"]


@drill_bank
def test_drill_58_an_edit_runs_the_reviewers_call_the_message_keeps_the_models_a_reject_is_answered():
    reviewed = Reviewed()
    reviewed.agent.invoke(GO, reviewed.config)
    decisions = [
        {"type": "edit", "edited_action": {"name": "erase", "args": {"arg": "/tmp/b"}}},
        {"type": "reject", "message": "no emails today"},
    ]
    history = reviewed.agent.invoke(Command(resume={"decisions": decisions}), reviewed.config)["messages"]
    answers = {m.name: m for m in history if isinstance(m, ToolMessage)}
    assert sorted(reviewed.ran) == ["erase /tmp/b", "peek x"]
    assert history[1].tool_calls[0]["args"] == {"arg": "/tmp/a"} and len(history[1].tool_calls) == 3
    assert answers["mail"].status == "error" and "no emails today" in answers["mail"].content
    assert answers["erase"].status == "success" and "erased /tmp/b" in answers["erase"].content
    assert answers["erase"].content.startswith("Note: a human reviewer replaced")
    assert unanswered_tool_calls(history) == []


def retry_outcome(exception, **options):
    tries = []

    @tool
    def failing(city: str) -> str:
        """Always fails."""
        tries.append(city)
        raise exception("dropped")

    retry = middleware_module().ToolRetryMiddleware(initial_delay=0, jitter=False, **options)
    agent = agents_module().create_agent(
        ScriptedChatModel(script=[[{"name": "failing", "args": {"city": "Paris"}}], tool_results_summary]),
        [failing],
        middleware=[retry],
    )
    try:
        last = agent.invoke(GO)["messages"][-2]
        return len(tries), last.status, last.content
    except Exception as exc:
        return len(tries), "raised", type(exc).__name__


@drill_bank
def test_drill_59_tool_retry_tries_three_times_unlisted_errors_escape_on_failure_error_raises():
    assert retry_outcome(ConnectionError) == (
        3,
        "error",
        "Tool 'failing' failed after 3 attempts with ConnectionError: dropped. Please try again.",
    )
    assert retry_outcome(ValueError, retry_on=(ConnectionError,)) == (1, "raised", "ValueError")
    assert retry_outcome(ConnectionError, on_failure="error") == (3, "raised", "ConnectionError")


@drill_bank
def test_drill_59_by_default_a_model_authentication_error_is_not_retried():
    from langchain_core.exceptions import ModelAuthenticationError

    assert retry_outcome(ModelAuthenticationError) == (1, "raised", "ModelAuthenticationError")


@drill_bank
def test_drill_60_two_middlewares_run_before_hooks_in_order_after_hooks_reversed_and_wrap_hooks_nested():
    AgentMiddleware = middleware_module().AgentMiddleware
    hooks = []

    class Named(AgentMiddleware):
        def __init__(self, label):
            super().__init__()
            self.label = label

        @property
        def name(self):
            return self.label

        def before_model(self, state, runtime):
            hooks.append(f"{self.label}.before_model")

        def after_model(self, state, runtime):
            hooks.append(f"{self.label}.after_model")

        def wrap_model_call(self, request, handler):
            hooks.append(f"{self.label}.model(")
            response = handler(request)
            hooks.append(f"{self.label}.model)")
            return response

        def wrap_tool_call(self, request, handler):
            hooks.append(f"{self.label}.tool(")
            result = handler(request)
            hooks.append(f"{self.label}.tool)")
            return result

    agents_module().create_agent(
        ScriptedChatModel(script=[[{"name": "find", "args": {"query": "x"}}], "done"]),
        [find],
        middleware=[Named("A"), Named("B")],
    ).invoke(GO)
    turn = [
        "A.before_model",
        "B.before_model",
        "A.model(",
        "B.model(",
        "B.model)",
        "A.model)",
        "B.after_model",
        "A.after_model",
    ]
    assert hooks == turn + ["A.tool(", "B.tool(", "B.tool)", "A.tool)"] + turn


@drill_bank
@pytest.mark.parametrize("hook", ["wrap_model_call", "wrap_tool_call"])
def test_drill_60_under_ainvoke_a_sync_only_wrap_hook_raises_not_implemented_error(hook):
    AgentMiddleware = middleware_module().AgentMiddleware

    def passing(self, request, handler):
        return handler(request)

    SyncOnly = type("SyncOnly", (AgentMiddleware,), {hook: passing})
    agent = agents_module().create_agent(
        ScriptedChatModel(script=[[{"name": "find", "args": {"query": "x"}}], "done"]),
        [find],
        middleware=[SyncOnly()],
    )
    assert agent.invoke(GO)["messages"][-1].content == "done"
    with pytest.raises(NotImplementedError, match=f"awrap_{hook.removeprefix('wrap_')}"):
        asyncio.run(agent.ainvoke(GO))


@dataclass
class Prefs:
    """A context schema whose field has a default (drill 61)."""

    units: str = "metric"


@drill_bank
def test_drill_61_no_store_gives_none_or_raises_and_context_defaults_are_not_applied():
    from langgraph.store.memory import InMemoryStore

    @tool
    def via_runtime(note: str, runtime: ToolRuntime[Prefs]) -> str:
        """Save a note."""
        return f"store={type(runtime.store).__name__} context={runtime.context!r}"

    @tool
    def injected(note: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Save a note."""
        return f"store={type(store).__name__}"

    def agent(note_tool, **options):
        return agents_module().create_agent(
            ScriptedChatModel(script=[[{"name": note_tool.name, "args": {"note": "x"}}], "done"]),
            [note_tool],
            context_schema=Prefs,
            **options,
        )

    assert agent(via_runtime).invoke(GO)["messages"][-2].content == "store=NoneType context=None"
    with pytest.raises(ValueError, match="compile your graph with a store"):
        agent(injected).invoke(GO)
    assert agent(injected, store=InMemoryStore()).invoke(GO)["messages"][-2].content == "store=InMemoryStore"
    assert (
        agent(via_runtime).invoke(GO, context={"units": "imperial"})["messages"][-2].content
        == "store=NoneType context=Prefs(units='imperial')"
    )


@drill_bank
def test_drill_62_a_context_var_reaches_sync_tools_on_both_paths_a_thread_local_only_async_ones():
    import contextvars

    request_id = contextvars.ContextVar("request_id", default="unset")
    local = threading.local()

    def seen():
        return f"var={request_id.get()} local={getattr(local, 'rid', 'unset')}"

    sync_reader = StructuredTool.from_function(
        lambda x: seen(), name="sync_reader", description="Read (sync)."
    )

    async def read_async(x: str) -> str:
        return seen()

    async_reader = StructuredTool.from_function(
        coroutine=read_async, name="async_reader", description="Read (async)."
    )
    request_id.set("r-42")
    local.rid = "r-42"
    via_invoke = ToolNode([sync_reader]).invoke(
        [tool_calls_message([("sync_reader", {"x": "1"})])], runtime=RT
    )

    async def scenario():
        return await ToolNode([sync_reader, async_reader]).ainvoke(
            [tool_calls_message([("sync_reader", {"x": "1"}), ("async_reader", {"x": "1"})])], runtime=RT
        )

    via_ainvoke = asyncio.run(scenario())
    assert via_invoke[0].content == "var=r-42 local=unset"
    assert [m.content for m in via_ainvoke] == ["var=r-42 local=unset", "var=r-42 local=r-42"]


@drill_bank
def test_drill_63_defaults_apply_strings_coerce_fractions_fail_parse_docstring_fills_the_schema():
    def define(parse):
        def top(city: str, count: int = 3) -> str:
            """Top sights of a city.

            Args:
                city: The city's English name.
                count: How many sights.
            """
            return f"{city}: {count!r}"

        return tool(top, parse_docstring=parse)

    plain, parsed = define(False), define(True)

    def answer(args):
        (message,) = ToolNode([plain]).invoke([tool_calls_message([("top", args)])], runtime=RT)
        return message.status, message.content

    assert answer({"city": "Paris"}) == ("success", "Paris: 3")
    assert answer({"city": "Paris", "count": "5"}) == ("success", "Paris: 5")
    fraction = answer({"city": "Paris", "count": 2.5})
    assert fraction[0] == "error"
    assert "Input should be a valid integer, got a number with a fractional part" in fraction[1]
    assert plain.tool_call_schema.model_json_schema()["properties"]["count"]["default"] == 3
    assert "Args:" in plain.description
    assert "description" not in plain.tool_call_schema.model_json_schema()["properties"]["count"]
    assert parsed.description == "Top sights of a city."
    assert (
        parsed.tool_call_schema.model_json_schema()["properties"]["count"]["description"]
        == "How many sights."
    )
    with pytest.raises(ValueError, match="Arg town in docstring not found in function signature"):

        @tool(parse_docstring=True)
        def mismatched(city: str) -> str:
            """Top sights.

            Args:
                town: not the parameter's name.
            """
            return city


@drill_bank
def test_drill_64_create_agent_runs_the_last_of_two_same_named_tools_silently_and_sends_only_its_definition():
    import warnings

    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    look = StructuredTool.from_function(
        lambda account: f"looked up {account}", name="account_action", description="Look up."
    )
    close = StructuredTool.from_function(
        lambda account: f"closed {account}", name="account_action", description="Close."
    )
    script = [[{"name": "account_action", "args": {"account": "a7"}}], "done"]
    with ScriptedOpenAIEndpoint(script) as endpoint:
        llm = ChatOpenAI(
            model="gpt-4o", base_url=endpoint.base_url, api_key="unused", use_responses_api=False
        )
        agent = agents_module().create_agent(llm, [look, close])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert agent.invoke(GO)["messages"][-2].content == "closed a7"
        sent = [t["function"]["description"] for t in endpoint.requests[0]["tools"]]
    assert caught == [] and sent == ["Close."]
    bound = ScriptedChatModel(script=["x"]).bind_tools([look, close]).kwargs["tools"]
    assert [t["function"]["description"] for t in bound] == ["Look up.", "Close."]


@drill_bank
def test_drill_65_content_and_artifact_keeps_the_rows_on_the_message_and_sends_only_the_content():
    from langchain_openai import ChatOpenAI

    from helpers.graphs import tool_loop
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    @tool(response_format="content_and_artifact")
    def search_rows(query: str):
        """Search the table."""
        rows = [{"id": i} for i in range(1000)]
        return f"{len(rows)} rows", rows

    @tool(response_format="content_and_artifact")
    def no_tuple(query: str):
        """Returns a plain string."""
        return "only content"

    with ScriptedOpenAIEndpoint([[{"name": "search_rows", "args": {"query": "all"}}], "ok"]) as endpoint:
        llm = ChatOpenAI(
            model="gpt-4o", base_url=endpoint.base_url, api_key="unused", use_responses_api=False
        )
        messages = tool_loop(llm.bind_tools([search_rows]), [search_rows]).invoke(GO)["messages"]
        on_wire = [m for m in endpoint.requests[1]["messages"] if m["role"] == "tool"]
    assert len(messages[2].artifact) == 1000 and messages[2].content == "1000 rows"
    assert on_wire == [{"role": "tool", "content": "1000 rows", "tool_call_id": messages[2].tool_call_id}]
    with pytest.raises(ValueError, match="two-tuple"):
        ToolNode([no_tuple]).invoke([tool_calls_message([("no_tuple", {"query": "q"})])], runtime=RT)


@drill_bank
def test_drill_66_an_error_the_policy_answers_fires_on_tool_error_and_never_on_tool_end():
    from langchain_core.callbacks import BaseCallbackHandler

    class Events(BaseCallbackHandler):
        def __init__(self):
            self.events = []

        def on_tool_start(self, serialized, input_str, **kwargs):
            self.events.append(("start", serialized["name"]))

        def on_tool_end(self, output, **kwargs):
            self.events.append(("end", output.name))

        def on_tool_error(self, error, **kwargs):
            self.events.append(("error", type(error).__name__))

    @tool
    def drops(x: str) -> str:
        """Always drops the connection."""
        raise ConnectionError("down")

    events = Events()
    answered = ToolNode([find, drops], handle_tool_errors=True).invoke(
        [tool_calls_message([("find", {"query": "x"}), ("drops", {"x": "1"})])],
        config={"callbacks": [events]},
        runtime=RT,
    )
    assert [m.status for m in answered] == ["success", "error"]
    assert sorted(events.events) == [
        ("end", "find"),
        ("error", "ConnectionError"),
        ("start", "drops"),
        ("start", "find"),
    ]
    assert events.events.index(("start", "find")) < events.events.index(("end", "find"))


# -- sitting 10: the engine underneath, the agent around the tools, observing a run ------------------
@drill_bank
def test_drill_67_updates_arrive_as_calls_finish_the_state_keeps_call_order_the_model_reads_both():
    """`slow_search` returns only once the consumer has seen `quick_lookup`'s update, so the order is
    forced by an event. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    quick_seen = threading.Event()

    @tool
    def slow_search(query: str) -> str:
        """Search slowly."""
        return "slow answer" if quick_seen.wait(timeout=2) else "timed out"

    @tool
    def quick_lookup(query: str) -> str:
        """Look something up at once."""
        return "quick answer"

    def read_by_the_model(messages):
        return "read: " + ", ".join(m.content for m in messages if m.type == "tool")

    turn = [{"name": "slow_search", "args": {"query": "a"}}, {"name": "quick_lookup", "args": {"query": "b"}}]
    agent = agents_module().create_agent(ScriptedChatModel(script=[turn, read_by_the_model]),
                                         [slow_search, quick_lookup])
    streamed, final = [], None
    for mode, chunk in agent.stream(GO, stream_mode=["updates", "values"]):
        if mode == "values":
            final = chunk["messages"]
        elif "tools" in chunk:
            streamed.append(chunk["tools"]["messages"][0].content)
            quick_seen.set()
    assert streamed == ["quick answer", "slow answer"]
    assert [m.content for m in final if m.type == "tool"] == ["slow answer", "quick answer"]
    assert final[-1].content == "read: slow answer, quick answer"


@drill_bank
def test_drill_67_two_create_agent_calls_setting_a_key_without_a_reducer_raise_invalid_update_error():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    from langgraph.errors import InvalidUpdateError

    agents = agents_module()

    class StatusState(agents.AgentState):
        status: NotRequired[str]

    @tool
    def set_status(value: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Set the order's status."""
        return Command(update={"status": value, "messages": [ToolMessage("ok", tool_call_id=tool_call_id)]})

    turn = [{"name": "set_status", "args": {"value": value}} for value in ("paid", "shipped")]
    agent = agents.create_agent(ScriptedChatModel(script=[turn, "done"]), [set_status],
                                state_schema=StatusState)
    with pytest.raises(InvalidUpdateError, match="At key 'status': Can receive only one value per step"):
        agent.invoke(GO)


def _attempts_under_the_default_retry_on(error):
    from langgraph.types import RetryPolicy

    attempts = []

    def parse(state: MessagesState):
        attempts.append(1)
        if len(attempts) == 1:
            raise error
        return {}

    graph = StateGraph(MessagesState).add_node(
        "parse", parse, retry_policy=RetryPolicy(initial_interval=0.01))
    try:
        graph.add_edge(START, "parse").compile().invoke({"messages": []})
        return len(attempts), "succeeded"
    except Exception as raised:  # noqa: BLE001 - which one is the point
        return len(attempts), type(raised).__name__


@drill_bank
def test_drill_68_retry_policy_retries_a_connection_error_but_not_a_timeout_or_a_validation_error():
    """`RetryPolicy()` with no `retry_on` (langgraph#6027). Pinned: langgraph 1.2.24."""
    from pydantic import BaseModel, ValidationError

    class OrderForm(BaseModel):
        amount: int

    with pytest.raises(ValidationError) as invalid:
        OrderForm(amount="five")
    assert _attempts_under_the_default_retry_on(ConnectionError("reset")) == (2, "succeeded")
    assert _attempts_under_the_default_retry_on(TimeoutError("slow")) == (1, "TimeoutError")
    assert _attempts_under_the_default_retry_on(invalid.value) == (1, "ValidationError")


@drill_bank
def test_drill_68_a_node_retry_on_a_toolnode_batch_charges_the_card_again():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    from langgraph.types import RetryPolicy

    charged, drops = [], {"left": 1}

    @tool
    def charge_once(amount: int) -> str:
        """Charge the card."""
        charged.append(amount)
        return f"charged {amount}"

    @tool
    def mail_receipt(to: str) -> str:
        """Mail the receipt (its first attempt drops the connection)."""
        if drops["left"]:
            drops["left"] -= 1
            raise ConnectionError("dropped")
        return f"mailed {to}"

    graph = StateGraph(MessagesState).add_node(
        "tools", ToolNode([charge_once, mail_receipt]), retry_policy=RetryPolicy(initial_interval=0.01))
    calls = tool_calls_message([("charge_once", {"amount": 5}), ("mail_receipt", {"to": "ann"})])
    result = graph.add_edge(START, "tools").compile().invoke({"messages": [calls]})
    assert charged == [5, 5] and [m.content for m in result["messages"][1:]] == ["charged 5", "mailed ann"]


@drill_bank
def test_drill_69_a_schema_call_beside_a_tool_call_ends_on_the_unread_tool_message_plain_text_gives_none():
    """Pinned: langchain 1.5.2, langgraph 1.2.24."""
    from langchain.agents.structured_output import ToolStrategy
    from langgraph.errors import GraphRecursionError
    from pydantic import BaseModel

    agents = agents_module()

    class Trip(BaseModel):
        city: str
        price: int

    @tool
    def find_flight(city: str) -> str:
        """Find the cheapest flight to a city."""
        return f"{city}: 120 EUR"

    trip_call = {"name": "Trip", "args": {"city": "Rome", "price": 99}}
    both = [[{"name": "find_flight", "args": {"city": "Rome"}}, trip_call], "the model speaks again"]
    result = agents.create_agent(ScriptedChatModel(script=both), [find_flight],
                                 response_format=ToolStrategy(Trip)).invoke(GO)
    assert [m.type for m in result["messages"][1:]] == ["ai", "tool", "tool"]
    assert result["messages"][-1].content == "Rome: 120 EUR"
    assert result["structured_response"] == Trip(city="Rome", price=99)
    calls = []

    def plain_text(messages):
        calls.append(len(messages))
        return "Rome, 120 EUR."

    plain = agents.create_agent(ScriptedChatModel(script=[plain_text] * 12), [find_flight],
                                response_format=ToolStrategy(Trip)).invoke(GO)
    assert plain["structured_response"] is None and plain["messages"][-1].content == "Rome, 120 EUR."
    calls.clear()
    talker = agents.create_agent(ScriptedChatModel(script=[plain_text] * 12), [],
                                 response_format=ToolStrategy(Trip))
    with pytest.raises(GraphRecursionError):
        talker.invoke(GO, {"recursion_limit": 10})
    assert len(calls) == 10


@drill_bank
def test_drill_70_a_tool_hidden_from_the_model_still_runs_and_one_added_for_it_raises_before_the_model():
    """Pinned: langchain 1.5.2, langgraph 1.2.24."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    agents, middleware = agents_module(), middleware_module()
    refunds = []

    @tool
    def refund_order(order: str) -> str:
        """Refund an order."""
        refunds.append(order)
        return f"refunded {order}"

    @tool
    def track_order(order: str) -> str:
        """Track an order."""
        return f"order {order}: shipped"

    class CallsAnyTool(ScriptedChatModel):
        def reply(self, messages, tools=None):
            return super().reply(messages, [convert_to_openai_tool(t) for t in (find, refund_order)])

    @middleware.wrap_model_call
    def hide_refunds(request, handler):
        return handler(request.override(tools=[t for t in request.tools if t.name != "refund_order"]))

    @middleware.wrap_model_call
    def offer_tracking(request, handler):
        return handler(request.override(tools=[*request.tools, track_order]))

    script = [[{"name": "refund_order", "args": {"order": "A1"}}], "done"]
    messages = agents.create_agent(CallsAnyTool(script=script), [find, refund_order],
                                   middleware=[hide_refunds]).invoke(GO)["messages"]
    assert refunds == ["A1"] and messages[2].content == "refunded A1"
    asked = []

    def answer(messages):
        asked.append(len(messages))
        return "done"

    adding = agents.create_agent(ScriptedChatModel(script=[answer]), [find], middleware=[offer_tracking])
    with pytest.raises(ValueError, match=r"Unknown tools: \['track_order'\]"):
        adding.invoke(GO)
    assert asked == []


@drill_bank
def test_drill_71_sub_agents_stream_under_their_outer_tasks_or_one_task_and_a_counter_in_a_batch():
    """langgraph#6714. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    from helpers.graphs import tool_loop

    agents = agents_module()

    @tool
    def crawl_site(site: str) -> str:
        """Crawl a site."""
        return f"crawled {site}"

    @tool
    def research(topic: str) -> str:
        """Research a topic with a sub-agent."""
        script = [[{"name": "crawl_site", "args": {"site": f"{topic}.org"}}], f"notes on {topic}"]
        sub_agent = agents.create_agent(ScriptedChatModel(script=script), [crawl_site])
        return sub_agent.invoke({"messages": [HumanMessage(topic)]})["messages"][-1].content

    two_topics = [[{"name": "research", "args": {"topic": t}} for t in ("a", "b")], tool_results_summary]
    lead = agents.create_agent(ScriptedChatModel(script=two_topics), [research])
    call_of_task, inner = {}, {}
    for namespace, mode, chunk in lead.stream(GO, stream_mode=["tasks", "tools"], subgraphs=True):
        if mode == "tasks" and not namespace and chunk["name"] == "tools" and "input" in chunk:
            call_of_task[chunk["id"]] = chunk["input"][0]["id"]
        elif mode == "tools" and namespace and chunk["event"] == "tool-started":
            inner[namespace] = (chunk["tool_call_id"], chunk["input"]["site"])
    mapped = sorted((len(ns), call_of_task[ns[0].split(":", 1)[1]], found) for ns, found in inner.items())
    assert mapped == [(1, "call_0_0", ("call_0_0", "a.org")), (1, "call_0_1", ("call_0_0", "b.org"))]
    batch = tool_loop(ScriptedChatModel(script=two_topics).bind_tools([research]), [research])
    namespaces = {ns for ns, _ in batch.stream(GO, stream_mode="tools", subgraphs=True) if ns}
    assert sorted(tuple(s.split(":")[0] for s in ns) for ns in namespaces) == [("tools",), ("tools", "1")]
    assert len({ns[0] for ns in namespaces}) == 1


@drill_bank
def test_drill_72_invoke_v2_gives_a_graph_output_only_for_values_as_a_string_and_a_dict_read_warns():
    """langgraph#7796. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    import warnings

    agents = agents_module()

    @tool
    def delete_report(path: str) -> str:
        """Delete a report once a person approves."""
        return f"deleted {path}" if interrupt(f"delete {path}?") == "yes" else f"kept {path}"

    def asking(thread, **options):
        script = [[{"name": "delete_report", "args": {"path": "q3.pdf"}}], tool_results_summary]
        agent = agents.create_agent(ScriptedChatModel(script=script), [delete_report],
                                    checkpointer=InMemorySaver())
        return agent.invoke(GO, {"configurable": {"thread_id": thread}}, **options)

    v1 = asking("v1")
    v2 = asking("v2", version="v2")
    v2_updates = asking("v2 updates", version="v2", stream_mode="updates")
    v2_listed = asking("v2 listed", version="v2", stream_mode=["values"])
    assert type(v1) is dict and "__interrupt__" in v1
    assert type(v2).__name__ == "GraphOutput" and list(v2.value) == ["messages"]
    assert [i.value for i in v2.interrupts] == ["delete q3.pdf?"]
    assert isinstance(v2_updates, list)
    assert v2_updates[-1]["data"]["__interrupt__"][0].value == "delete q3.pdf?"
    assert isinstance(v2_listed, list) and {p["type"] for p in v2_listed} == {"values"}
    assert len(v2_listed[-1]["interrupts"]) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages = v2["messages"]
    assert caught[0].category.__name__ == "LangGraphDeprecatedSinceV11" and messages == v2.value["messages"]


def _mcp_results_tools(**load_options):
    """The course's `city-results` MCP server, in this process, its tools loaded by the adapter."""
    pytest.importorskip("langchain_mcp_adapters", reason="langchain-mcp-adapters is not installed")
    from helpers.mcp_client import in_process_tools
    from helpers.mcp_server import RESULTS_SERVER_NAME

    return in_process_tools(server=RESULTS_SERVER_NAME, **load_options)


def _chat_openai(endpoint):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused", use_responses_api=False)


@drill_bank
def test_drill_73_an_mcp_error_keeps_no_artifact_and_chatopenai_sends_only_the_blocks():
    """langchain-mcp-adapters#619. Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-openai
    1.7.4, langchain-core 1.8.3."""
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    calls = tool_calls_message([("find_order", {"order_id": 42}), ("weather_record", {"city": "Paris"}),
                                ("weather_data_only", {"city": "Paris"})])

    async def answers():
        async with _mcp_results_tools() as tools:
            return await ToolNode(tools).ainvoke([calls], runtime=RT)

    error, record, data_only = asyncio.run(answers())
    assert (error.status, error.text, error.artifact) == ("error", "no order 42", None)
    assert record.status == "success" and data_only.status == "success" and data_only.content == []
    assert record.artifact == {"structured_content": {"city": "Paris", "sky": "sunny", "temp_c": 25}}
    with ScriptedOpenAIEndpoint(["unused", "ok"]) as endpoint:
        _chat_openai(endpoint).invoke([HumanMessage("Go on."), calls, error, record, data_only])
    sent = [m for m in endpoint.requests[0]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in sent] == [[{"type": "text", "text": "no order 42"}],
                                           [{"type": "text", "text": record.text}], []]
    assert all(set(m) == {"role", "content", "tool_call_id"} for m in sent)


@drill_bank
@pytest.mark.parametrize("load_options", [{}, {"handle_tool_errors": False}], ids=["defaults", "errors off"])
def test_drill_74_a_resource_link_makes_create_agents_next_chatopenai_call_raise_under_either_setting(
        load_options):
    """langchain-mcp-adapters#606, #591. Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0,
    langchain-openai 1.7.4, langchain 1.5.2."""
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    script = [[{"name": "city_report", "args": {"city": "Paris"}}], tool_results_summary]

    async def run():
        async with _mcp_results_tools(**load_options) as tools:
            with ScriptedOpenAIEndpoint(script) as endpoint:
                agent = agents_module().create_agent(_chat_openai(endpoint), tools)
                with pytest.raises(ValueError, match="OpenAI Chat Completions does not support file URLs"):
                    await agent.ainvoke({"messages": [HumanMessage("Where is the report on Paris?")]})
        return len(endpoint.requests)

    assert asyncio.run(run()) == 1  # the tool ran; the next model call was refused before it was sent


@drill_bank
def test_drill_74_an_adapter_interceptor_that_writes_resource_links_as_text_lets_the_run_finish():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-openai 1.7.4, langchain 1.5.2."""
    from mcp.types import ResourceLink, TextContent

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    async def links_as_text(request, handler):
        result = await handler(request)
        result.content = [TextContent(type="text", text=f"{item.name}: {item.uri}")
                          if isinstance(item, ResourceLink) else item for item in result.content]
        return result

    script = [[{"name": "city_report", "args": {"city": "Paris"}}], tool_results_summary]

    async def run():
        async with _mcp_results_tools(tool_interceptors=[links_as_text]) as tools:
            with ScriptedOpenAIEndpoint(script) as endpoint:
                agent = agents_module().create_agent(_chat_openai(endpoint), tools)
                result = await agent.ainvoke({"messages": [HumanMessage("Where is the report on Paris?")]})
        return result, len(endpoint.requests)

    result, requests = asyncio.run(run())
    assert requests == 2 and result["messages"][-1].text == "report.pdf: https://example.com/paris/report.pdf"
