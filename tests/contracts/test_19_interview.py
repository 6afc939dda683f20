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
from dataclasses import dataclass
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.managed import RemainingSteps
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.nodes import CustomAsyncToolNode
from helpers.returns import output_shape
from helpers.timing import CallRecorder
from helpers.tools import make_city_tools, make_failing_tool

lesson = pytest.mark.lesson("20_drill_bank")
lesson_03 = pytest.mark.lesson("03_builtin_toolnode")
mock_interview = pytest.mark.lesson("19_mock_interview")
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
    # the long call holds one of the two first workers (which of the two threads notes its start
    # first is a race), and every short call ends while it still runs
    assert 0 in started[:2] and sorted(short_done) == [1, 2, 3, 4]


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


# -- the mock interview, question 1: what a failing call does to create_agent's other tasks ----------
@mock_interview
@pytest.mark.timing  # soaked: the failure waits for the sibling to start (an event), not for a delay
def test_under_ainvoke_a_failing_call_cancels_create_agents_async_sibling_and_the_retry_runs_it_again():
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    started, cancelled, service = [], [], {"up": False}

    @tool
    async def slow_weather(city: str) -> str:
        """Look up the weather, slowly."""
        started.append(city)
        try:
            await asyncio.sleep(0 if service["up"] else 5)
        except asyncio.CancelledError:
            cancelled.append(city)
            raise
        return f"{city}: sunny"

    @tool
    async def traffic(city: str) -> str:
        """Look up live traffic; the service may be down."""
        for _ in range(1000):  # fail only once the weather lookup is running (5 s at most)
            if started:
                break
            await asyncio.sleep(0.005)
        if not service["up"]:
            raise ConnectionError("traffic service unreachable")
        return f"{city}: light traffic"

    pair = [{"name": "slow_weather", "args": {"city": "Paris"}},
            {"name": "traffic", "args": {"city": "Paris"}}]
    agent = create_agent(ScriptedChatModel(script=[pair, tool_results_summary]), [slow_weather, traffic],
                         checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "q1"}}

    async def scenario():
        with pytest.raises(ConnectionError):
            await agent.ainvoke({"messages": [HumanMessage("Weather and traffic?")]}, thread)
        saved = [m.type for m in (await agent.aget_state(thread)).values["messages"]]
        service["up"] = True
        await agent.ainvoke(None, thread)
        return saved

    assert asyncio.run(scenario()) == ["human", "ai"]
    assert cancelled == ["Paris"] and started == ["Paris", "Paris"]


# -- question 2: an approval given to one hook only -----------------------------------------------
def approval_graph(**hook):
    from langgraph.checkpoint.memory import InMemorySaver

    deleted = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([delete_file], handle_tool_errors=True, **hook))
    builder.add_edge(START, "tools")
    return builder.compile(checkpointer=InMemorySaver()), deleted


def approve(request, execute):
    from langgraph.types import interrupt

    if interrupt(request.tool_call["args"]) != "yes":
        return ToolMessage("denied", tool_call_id=request.tool_call["id"], status="error")
    return execute(request)


async def approve_async(request, execute):
    from langgraph.types import interrupt

    if interrupt(request.tool_call["args"]) != "yes":
        return ToolMessage("denied", tool_call_id=request.tool_call["id"], status="error")
    return await execute(request)


DELETION = {"messages": [ask(("delete_file", {"path": "/tmp/a"}))]}


@mock_interview
def test_an_async_only_approval_is_skipped_under_invoke_and_the_deletion_runs_unasked():
    graph, deleted = approval_graph(awrap_tool_call=approve_async)
    result = graph.invoke(DELETION, {"configurable": {"thread_id": "a"}})
    assert "__interrupt__" not in result and deleted == ["/tmp/a"]


@mock_interview
def test_a_sync_only_approval_still_pauses_under_ainvoke():
    graph, deleted = approval_graph(wrap_tool_call=approve)
    result = asyncio.run(graph.ainvoke(DELETION, {"configurable": {"thread_id": "s"}}))
    assert [i.value for i in result["__interrupt__"]] == [{"path": "/tmp/a"}] and deleted == []


# -- question 7: progress while a tool runs, and a run that must end --------------------------------
@tool
def crawl(site: str) -> str:
    """Crawl a site, reporting each page."""
    from langgraph.config import get_stream_writer

    write = get_stream_writer()
    for page in (1, 2):
        write({"site": site, "page": page})
    return f"crawled {site}"


CRAWL_FOREVER = [[{"name": "crawl", "args": {"site": f"page{i}.org"}}] for i in range(50)]
CRAWL_IT = {"messages": [HumanMessage("Crawl it.")]}


@mock_interview
def test_stream_writer_progress_arrives_in_custom_mode_before_the_tools_update():
    from langchain.agents import create_agent

    once = [[{"name": "crawl", "args": {"site": "a.org"}}], "done"]
    agent = create_agent(ScriptedChatModel(script=once), [crawl])
    order = [mode if mode == "custom" else next(iter(chunk))
             for mode, chunk in agent.stream(CRAWL_IT, stream_mode=["updates", "custom"])]
    assert order == ["model", "custom", "custom", "tools", "model"]


@mock_interview
def test_create_agent_whose_model_never_stops_raises_graph_recursion_error_at_the_step_limit():
    from langchain.agents import create_agent
    from langgraph.errors import GraphRecursionError

    with pytest.raises(GraphRecursionError):
        agent = create_agent(ScriptedChatModel(script=CRAWL_FOREVER), [crawl])
        agent.invoke(CRAWL_IT, {"recursion_limit": 10})


@mock_interview
def test_a_call_budget_with_exit_end_runs_three_calls_answers_every_call_and_says_why():
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware

    agent = create_agent(ScriptedChatModel(script=CRAWL_FOREVER), [crawl],
                         middleware=[ToolCallLimitMiddleware(run_limit=3, exit_behavior="end")])
    messages = agent.invoke(CRAWL_IT)["messages"]
    crawled = [m for m in messages if isinstance(m, ToolMessage) and m.status == "success"]
    assert len(crawled) == 3 and unanswered_tool_calls(messages) == []
    assert messages[-1].content == "Tool call limit reached: run limit exceeded (4/3 calls)."


# -- question 8: a crash mid-turn, and the wedged thread -------------------------------------------
class Shop:
    """`create_agent` on the real ChatOpenAI client, talking to a local server that refuses a history
    with unanswered calls; `charge` works, `receipt` fails while its service is down."""

    SCRIPT = [[{"name": "charge", "args": {"amount": 5}}, {"name": "receipt", "args": {"user": "ann"}}],
              "All done."]

    def __init__(self, endpoint):
        from langchain.agents import create_agent
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.memory import InMemorySaver

        from helpers.models import loopback_client_options

        self.up, self.charges = False, []

        @tool
        def charge(amount: int) -> str:
            """Charge the customer."""
            self.charges.append(amount)
            return f"charged {amount}"

        @tool
        def receipt(user: str) -> str:
            """Send the receipt."""
            if not self.up:
                raise ConnectionError("receipt service is down")
            return f"receipt sent to {user}"

        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False, max_retries=0, **loopback_client_options())
        self.agent = create_agent(llm, [charge, receipt], checkpointer=InMemorySaver())

    def crash(self, thread_id):
        self.up, config = False, {"configurable": {"thread_id": thread_id}}
        with pytest.raises(ConnectionError):
            self.agent.invoke({"messages": [HumanMessage("Charge ann 5 and send her the receipt.")]}, config)
        return config


def rewrite_in_order(graph, config, text="not completed: the tool step crashed; it may have run"):
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    repaired = []
    for message in messages:
        if not isinstance(message, ToolMessage):
            repaired.append(message)
            repaired += [answers.get(c["id"]) or ToolMessage(text, tool_call_id=c["id"], status="error")
                         for c in getattr(message, "tool_calls", [])]
    update = {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}
    graph.update_state(config, update, as_node="tools")


@mock_interview
def test_a_crashed_create_agent_thread_waits_at_tools_and_a_resume_under_invoke_charges_once():
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint(Shop.SCRIPT, check_history=True) as endpoint:
        shop = Shop(endpoint)
        config = shop.crash("resumed")
        snapshot = shop.agent.get_state(config)
        assert snapshot.next == ("tools",) and len(unanswered_tool_calls(snapshot.values["messages"])) == 1
        shop.up = True
        assert shop.agent.invoke(None, config)["messages"][-1].content == "All done."
    assert shop.charges == [5]


@mock_interview
def test_a_new_message_on_the_crashed_thread_gets_a_400_until_the_history_is_rewritten_in_order():
    import openai

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint(Shop.SCRIPT, check_history=True) as endpoint:
        shop = Shop(endpoint)
        config = shop.crash("typed again")
        with pytest.raises(openai.BadRequestError) as refused:
            shop.agent.invoke({"messages": [HumanMessage("What is my balance?")]}, config)
        assert refused.value.status_code == 400
        assert "must be followed by tool messages responding to each 'tool_call_id'" in str(refused.value)
        rewrite_in_order(shop.agent, config)
        assert shop.agent.invoke(None, config)["messages"][-1].content == "All done."


# -- question 9: answering a batched approval -------------------------------------------------------
class Review:
    """A weather lookup, a deletion and an email in one turn; the last two need approval."""

    TURN = [{"name": "lookup_weather", "args": {"arg": "Paris"}},
            {"name": "delete_file", "args": {"arg": "/tmp/a.log"}},
            {"name": "send_email", "args": {"arg": "bob"}}]
    RIGHT = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "not today"}]}

    def __init__(self):
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.memory import InMemorySaver

        self.ran = []

        def recorded(name):
            def run(arg: str) -> str:
                self.ran.append(f"{name} {arg}")
                return f"{name}: done for {arg}"
            return StructuredTool.from_function(run, name=name, description=f"{name} (records each run).")

        self.agent = create_agent(
            ScriptedChatModel(script=[self.TURN, tool_results_summary]),
            [recorded("lookup_weather"), recorded("delete_file"), recorded("send_email")],
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_file": True, "send_email": True})],
            checkpointer=InMemorySaver())
        self.config = {"configurable": {"thread_id": "q9"}}
        (self.request,) = self.agent.invoke({"messages": [HumanMessage("Weather, clean up, tell Bob.")]},
                                            self.config)["__interrupt__"]


@mock_interview
def test_the_batched_interrupt_lists_only_the_flagged_calls_in_order_without_ids():
    review = Review()
    assert [(a["name"], "id" in a) for a in review.request.value["action_requests"]] == [
        ("delete_file", False), ("send_email", False)]
    assert review.ran == []


@mock_interview
def test_a_decision_per_call_raises_is_replayed_and_a_review_restarted_on_the_thread_takes_the_right_one():
    from langgraph.types import Command

    review = Review()
    wrong = r"Number of human decisions \(3\) does not match number of hanging tool calls \(2\)\."
    with pytest.raises(ValueError, match=wrong):
        review.agent.invoke(Command(resume={"decisions": [{"type": "approve"}] * 3}), review.config)
    with pytest.raises(ValueError, match=wrong):  # the right answer: the saved wrong one is replayed
        review.agent.invoke(Command(resume=Review.RIGHT), review.config)
    assert review.ran == []
    review.agent.update_state(review.config, None, as_node="model")
    assert "__interrupt__" in review.agent.invoke(None, review.config)
    review.agent.invoke(Command(resume=Review.RIGHT), review.config)
    assert sorted(review.ran) == ["delete_file /tmp/a.log", "lookup_weather Paris"]


# -- question 10: what a tool may know about its caller ---------------------------------------------
@dataclass
class Caller:
    user: str
    token: str


@tool
def my_orders(status: str, runtime: ToolRuntime[Caller]) -> str:
    """List the signed-in user's orders with this status."""
    return f"{runtime.context.user}: 2 {status} orders"


def caller_agent():
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    script = [[{"name": "my_orders", "args": {"status": "open", "user": "mallory"}}], "done"]
    agent = create_agent(ScriptedChatModel(script=script), [my_orders], context_schema=Caller,
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "q10", "api_key": "sk-in-configurable"}}
    messages = agent.invoke({"messages": [HumanMessage("My open orders?")]}, config,
                            context=Caller(user="ann", token="sk-in-context"))["messages"]
    return agent, config, messages, my_orders


@mock_interview
def test_the_context_reaches_a_typed_tool_runtime_the_model_cannot_see_and_a_made_up_user_is_dropped():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ToolRuntime[Caller] with the right context: no serializer warning
        _, _, messages, my_orders = caller_agent()
    assert messages[1].tool_calls[0]["args"] == {"status": "open", "user": "mallory"}
    assert messages[2].content == "ann: 2 open orders"
    assert list(my_orders.tool_call_schema.model_json_schema()["properties"]) == ["status"]


@mock_interview
def test_the_checkpointer_saves_a_configurable_value_in_every_checkpoints_metadata_and_never_the_context():
    agent, config, _, _ = caller_agent()
    saved = [snapshot.metadata for snapshot in agent.get_state_history(config)]
    assert saved and all(m.get("api_key") == "sk-in-configurable" for m in saved)
    assert not any("sk-in-context" in str(m) for m in saved)
    assert not any("sk-in-context" in str(s.values) for s in agent.get_state_history(config))


# -- question 11: how a tool's definition reaches the model -----------------------------------------
def refund(order_id: str, amount: int = 0) -> str:
    """Refund an order.

    Raises:
        PermissionError: when the order is too old.

    Args:
        order_id: The order to refund, e.g. "A-17".
        amount: How much to refund, in cents; 0 refunds everything.
    """
    return f"refunded {amount or 'everything'} of {order_id}"


@mock_interview
def test_a_plain_tool_sends_the_whole_docstring_and_parse_docstring_sends_argument_descriptions_and_raises():
    from langchain_core.utils.function_calling import convert_to_openai_tool

    plain = convert_to_openai_tool(tool(refund))["function"]
    parsed = convert_to_openai_tool(tool(refund, parse_docstring=True))["function"]
    assert "Args:" in plain["description"] and not any(
        "description" in p for p in plain["parameters"]["properties"].values())
    folded = " ".join(parsed["description"].split())  # whitespace differs between Python 3.12 and 3.13
    assert folded == "Refund an order. Raises: PermissionError: when the order is too old."
    order_id = parsed["parameters"]["properties"]["order_id"]
    assert order_id["description"] == 'The order to refund, e.g. "A-17".'


@mock_interview
def test_a_coercible_argument_is_coerced_and_one_that_is_not_is_read_back_as_an_error_message():
    answers = ToolNode([tool(refund, parse_docstring=True)]).invoke(
        [ask(("refund", {"order_id": "A-17", "amount": "250"}),
             ("refund", {"order_id": "A-17", "amount": "ten"}))], runtime=RT)
    assert [(a.status, a.content.splitlines()[0]) for a in answers] == [
        ("success", "refunded 250 of A-17"),
        ("error", "Error invoking tool 'refund' with kwargs {'order_id': 'A-17', 'amount': 'ten'} "
                  "with error:")]
    assert answers[1].content.endswith(
        " amount: Input should be a valid integer, unable to parse string as an integer\n"
        " Please fix the error and try again.")
