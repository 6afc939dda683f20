"""Library behaviour taught in notebooks/09_prebuilt_agents.ipynb.

`create_agent` (langchain 1.5) and `create_react_agent` (langgraph) run LangGraph's own ToolNode but
give it one tool call per graph task. Each test pins one consequence the lesson teaches, next to
lesson 04's hand-wired `tools_condition` loop (one ToolNode batch) running the same script.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import operator
import sys
import threading
import time
import warnings
from collections import Counter
from typing import Annotated, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware, wrap_tool_call
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp, is_invalid_resume
from langgraph.graph import END, START, MessagesState, StateGraph, add_messages
from langgraph.prebuilt import ToolNode, ToolRuntime, create_react_agent, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, ValidationError

from helpers.agents import conversation, route_after_model, tool_task_inputs
from helpers.batch import TimedToolArgs, make_timed_tools, tool_calls_message
from helpers.cities import weather_report
from helpers.history import AnswerSavedSaver
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import CallRecorder, Rendezvous, default_pool_size
from helpers.tools import make_city_tools

lesson = pytest.mark.lesson("09_prebuilt_agents")

QUESTION = {"messages": [("user", "What's the weather in Paris today, and what should I see there?")]}
BOTH = [{"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "lookup_attraction", "args": {"city": "Paris"}}]
SCRIPT = [BOTH, tool_results_summary]
THREAD = {"configurable": {"thread_id": "t"}}
L = 0.1
POOL = default_pool_size()  # what the interpreter gives ThreadPoolExecutor(): 3.13 counts usable CPUs only


def hand_wired(script, tools, *, checkpointer=None, **tool_node_options):
    """Lesson 04's loop around one ToolNode (the notebook's `hand_wired`)."""
    model = ScriptedChatModel(script=script).bind_tools(tools)

    def llm(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", llm)
    builder.add_node("tools", ToolNode(tools, **tool_node_options))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


def agent_for(script, tools, **options):
    return create_agent(ScriptedChatModel(script=script), tools, **options)


def both(script, tools, *, checkpointed=False):
    saver = InMemorySaver if checkpointed else (lambda: None)
    return {"batch": hand_wired(script, tools, checkpointer=saver()),
            "agent": agent_for(script, tools, checkpointer=saver())}


def city_tools():
    return make_city_tools(0.0, sync=True)


def types(messages):
    return [m.type for m in messages]


def timed_run(which, kind, n, *, call="ainvoke", max_concurrency=None, gate=None):
    recorder = CallRecorder()
    tools = make_timed_tools(n, L, kind=kind, recorder=recorder, gate=gate)
    script = [tool_calls_message(tools), "done"]
    graph = agent_for(script, tools) if which == "agent" else hand_wired(script, tools)
    config = {"max_concurrency": max_concurrency} if max_concurrency else {}
    if call == "invoke":
        graph.invoke(QUESTION, config)
    else:
        asyncio.run(graph.ainvoke(QUESTION, config))
    if gate is not None:
        assert gate.opened, f"at most {gate.most_waiting} calls ran at once, {gate.parties} expected"
    return recorder


def waited_for_a_free_slot(recorder):
    """The calls that started only after another call had ended."""
    calls = recorder.calls
    return [c.label for c in calls if any(other.end <= c.start for other in calls if other is not c)]


# -- section 1: the agent is the loop ------------------------------------------------------------
@lesson
def test_create_agent_runs_langgraphs_own_toolnode():
    node = agent_for(SCRIPT, city_tools()).get_graph().nodes["tools"].data
    assert type(node) is ToolNode
    assert list(node.tools_by_name) == ["lookup_weather", "lookup_attraction"]


@lesson
def test_create_agent_graph_has_model_and_tools_nodes():
    nodes = set(agent_for(SCRIPT, city_tools()).get_graph().nodes)
    assert nodes == {"__start__", "model", "tools", "__end__"}


@lesson
def test_create_agent_says_exactly_what_the_hand_wired_loop_says():
    tools = city_tools()
    from_agent = agent_for(SCRIPT, tools).invoke(QUESTION)["messages"]
    from_loop = hand_wired(SCRIPT, tools).invoke(QUESTION)["messages"]
    assert conversation(from_agent) == conversation(from_loop)
    assert [m.content for m in from_agent][2:] == ["Paris: sunny, 25 °C", "Paris: the Louvre",
                                                   "Paris: sunny, 25 °C; Paris: the Louvre"]


@lesson
@pytest.mark.timing
def test_create_agent_keeps_tool_messages_in_call_order_not_completion_order():
    def slow_then_fast(name, delay):
        async def wait(x: int) -> str:
            await asyncio.sleep(delay)
            return name
        return StructuredTool.from_function(coroutine=wait, name=name, description="wait")

    tools = [slow_then_fast("slow", 0.2), slow_then_fast("fast", 0.0)]
    out = asyncio.run(agent_for([tool_calls_message(tools), "done"], tools).ainvoke(QUESTION))
    assert [m.content for m in out["messages"][2:4]] == ["slow", "fast"]


# -- section 2: how the calls arrive -------------------------------------------------------------
@lesson
def test_create_agent_sends_one_task_per_call_each_a_one_call_list():
    inputs = tool_task_inputs(agent_for(SCRIPT, city_tools()), QUESTION)
    assert inputs == [
        [{"name": "lookup_weather", "args": {"city": "Paris"}, "id": "call_0_0", "type": "tool_call"}],
        [{"name": "lookup_attraction", "args": {"city": "Paris"}, "id": "call_0_1", "type": "tool_call"}],
    ]


@lesson
def test_hand_wired_loop_sends_one_task_with_the_whole_state():
    inputs = tool_task_inputs(hand_wired(SCRIPT, city_tools()), QUESTION)
    assert len(inputs) == 1
    assert types(inputs[0]["messages"]) == ["human", "ai"]


@lesson
def test_toolnode_answers_a_one_call_payload_with_a_messages_dict():
    payload = [{"name": "lookup_weather", "args": {"city": "Paris"}, "id": "c1", "type": "tool_call"}]
    out = ToolNode(city_tools()).invoke(payload, runtime=Runtime())
    assert set(out) == {"messages"}
    assert [(m.content, m.tool_call_id) for m in out["messages"]] == [("Paris: sunny, 25 °C", "c1")]


@lesson
def test_create_agent_tools_read_the_state_when_the_task_runs():
    seen = []

    @tool
    def count_messages(city: str, runtime: ToolRuntime) -> str:
        """Count the messages in the state."""
        seen.append(types(runtime.state["messages"]))
        return city

    script = [[{"name": "count_messages", "args": {"city": "Paris"}}], "done"]
    agent = agent_for(script, [count_messages])
    assert tool_task_inputs(agent, QUESTION) == [
        [{"name": "count_messages", "args": {"city": "Paris"}, "id": "call_0_0", "type": "tool_call"}]
    ]
    assert seen == [["human", "ai"]]


@lesson
def test_create_react_agent_warns_that_it_is_deprecated():
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with pytest.warns(LangGraphDeprecatedSinceV10, match="from langchain.agents import create_agent"):
        create_react_agent(ScriptedChatModel(script=SCRIPT), city_tools())


def react(version):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(ScriptedChatModel(script=SCRIPT), city_tools(), version=version)


@lesson
def test_create_react_agent_v1_sends_the_state_to_one_task():
    inputs = tool_task_inputs(react("v1"), QUESTION)
    assert len(inputs) == 1
    assert types(inputs[0]["messages"]) == ["human", "ai"]


@lesson
def test_create_react_agent_v2_sends_a_tool_call_with_context_per_call():
    inputs = tool_task_inputs(react("v2"), QUESTION)
    assert [payload["__type"] for payload in inputs] == ["tool_call_with_context"] * 2
    assert [payload["tool_call"]["name"] for payload in inputs] == ["lookup_weather", "lookup_attraction"]
    assert all(types(payload["state"]["messages"]) == ["human", "ai"] for payload in inputs)


CALL_A = {"name": "lookup_weather", "args": {"city": "Paris"}, "id": "a", "type": "tool_call"}
CALL_B = {"name": "lookup_attraction", "args": {"city": "Paris"}, "id": "b", "type": "tool_call"}
TWO_CALLS = {"messages": [HumanMessage("Paris?"), AIMessage("", tool_calls=[CALL_A, CALL_B])]}


@lesson
def test_create_agent_edge_returns_one_send_per_call_each_a_one_call_list():
    sends = route_after_model(agent_for(SCRIPT, city_tools()), TWO_CALLS)
    assert sends == [Send("tools", [CALL_A]), Send("tools", [CALL_B])]


@lesson
def test_create_react_agent_v2_edge_returns_one_send_per_call_with_the_state():
    sends = route_after_model(react("v2"), TWO_CALLS)
    assert [type(send) for send in sends] == [Send, Send] and {send.node for send in sends} == {"tools"}
    assert [send.arg["__type"] for send in sends] == ["tool_call_with_context"] * 2
    assert [send.arg["tool_call"] for send in sends] == [CALL_A, CALL_B]
    assert all(send.arg["state"]["messages"] == TWO_CALLS["messages"] for send in sends)


@lesson
def test_create_react_agent_v1_edge_routes_to_one_tools_task_no_send():
    assert route_after_model(react("v1"), TWO_CALLS) == "tools"


# -- section 3: concurrency ------------------------------------------------------------------------
# Soaked (`@pytest.mark.timing`): every "k at once" is proven by holding the calls at a
# `Rendezvous(k)` until k of them run together, so a stall of the machine cannot decide it.
@lesson
@pytest.mark.timing
def test_agent_sync_tools_run_at_most_the_graphs_default_pool_at_once():
    recorder = timed_run("agent", "sync", POOL + 1, call="invoke", gate=Rendezvous(POOL))
    assert recorder.max_in_flight() == POOL
    assert len(waited_for_a_free_slot(recorder)) == 1, "the last call waited for a thread of the graph's pool"
    assert len(recorder.workers()) == POOL + 1, "each call runs in its own one-call ToolNode pool"


@lesson
@pytest.mark.timing
def test_single_batch_sync_tools_share_one_pool():
    recorder = timed_run("loop", "sync", POOL + 1, call="invoke", gate=Rendezvous(POOL))
    assert recorder.max_in_flight() == POOL
    assert len(recorder.workers()) == POOL, "one batch, one pool of POOL threads"


@lesson
@pytest.mark.timing
def test_agent_sync_tools_under_ainvoke_run_in_the_loops_default_executor():
    recorder = timed_run("agent", "sync", POOL + 1, call="ainvoke", gate=Rendezvous(POOL))
    assert all(worker.startswith("asyncio_") for worker in recorder.workers()), "the loop's default executor"
    assert recorder.max_in_flight() == POOL, "at most the default pool's size at once"
    assert len(waited_for_a_free_slot(recorder)) == 1, "the last call waited for a thread of the loop's pool"


@lesson
@pytest.mark.timing
def test_agent_async_tools_all_run_at_once():
    recorder = timed_run("agent", "async", POOL + 1, gate=Rendezvous(POOL + 1))
    assert recorder.max_in_flight() == POOL + 1


@lesson
@pytest.mark.timing
@pytest.mark.parametrize(("kind", "call"), [("sync", "invoke"), ("sync", "ainvoke"), ("async", "ainvoke")])
def test_agent_honours_max_concurrency_on_every_path(kind, call):
    recorder = timed_run("agent", kind, 6, call=call, max_concurrency=2, gate=Rendezvous(2))
    assert recorder.max_in_flight() == 2
    assert len(waited_for_a_free_slot(recorder)) == 4, "four calls waited for a free slot"


@lesson
@pytest.mark.timing
@pytest.mark.parametrize(("kind", "call", "most"), [("sync", "invoke", 2), ("sync", "ainvoke", min(6, POOL)),
                                                     ("async", "ainvoke", 6)])
def test_single_batch_honours_max_concurrency_only_under_invoke(kind, call, most):
    recorder = timed_run("loop", kind, 6, call=call, max_concurrency=2, gate=Rendezvous(most))
    assert recorder.max_in_flight() == most


def _long_and_four_short(kind, recorder):
    """t00 ends only once t01..t04 have all ended (an event, not a duration)."""
    shorts_done = threading.Event()
    ended = []

    def finish(name):
        ended.append(name)
        if len(ended) == 4:
            shorts_done.set()

    if kind == "sync":
        def long_call(x: int) -> str:
            with recorder.span("t00"):
                shorts_done.wait(5)
            return "t00"

        def short(name):
            def body(x: int) -> str:
                with recorder.span(name):
                    time.sleep(0.02)
                finish(name)
                return name
            return {"func": body}
        long_spec = {"func": long_call}
    else:
        async def long_call(x: int) -> str:
            with recorder.span("t00"):
                deadline = time.monotonic() + 5
                while not shorts_done.is_set() and time.monotonic() < deadline:
                    await asyncio.sleep(0.005)
            return "t00"

        def short(name):
            async def body(x: int) -> str:
                with recorder.span(name):
                    await asyncio.sleep(0.02)
                finish(name)
                return name
            return {"coroutine": body}
        long_spec = {"coroutine": long_call}
    specs = [("t00", long_spec)] + [(f"t0{i}", short(f"t0{i}")) for i in range(1, 5)]
    return [StructuredTool.from_function(name=name, description="A timed call.",
                                         args_schema=TimedToolArgs, **spec) for name, spec in specs]


@lesson
@pytest.mark.timing  # soaked: the long call is released by an event, so no stall decides the order
@pytest.mark.parametrize(("kind", "call"), [("sync", "invoke"), ("sync", "ainvoke"), ("async", "ainvoke")])
def test_agent_max_concurrency_is_a_sliding_window(kind, call):
    recorder = CallRecorder()
    tools = _long_and_four_short(kind, recorder)
    agent = agent_for([tool_calls_message(tools), "done"], tools)
    config = {"max_concurrency": 2}
    agent.invoke(QUESTION, config) if call == "invoke" else asyncio.run(agent.ainvoke(QUESTION, config))
    calls = {c.label: c for c in recorder.calls}
    # Waves of two would start t02 only after t00 ended; the window ran all four while t00 ran:
    assert all(calls[f"t0{i}"].end <= calls["t00"].end for i in range(1, 5))
    assert recorder.max_in_flight() == 2


# -- section 4: interrupt, failure, Command.PARENT, error defaults ---------------------------------
RUNS: Counter = Counter()
SERVICE = {"up": False}


@tool
def lookup_weather(city: str) -> str:
    """Look up today's weather for a city, e.g. Paris."""
    RUNS["lookup_weather"] += 1
    return weather_report(city)


@tool
def book_table(city: str) -> str:
    """Book a table for dinner in a city, once a human approves."""
    RUNS["book_table"] += 1
    answer = interrupt(f"Book a table in {city}?")
    return f"{city}: table booked" if answer == "yes" else f"{city}: not booked"


@tool
def lookup_traffic(city: str) -> str:
    """Look up live traffic for a city, e.g. Paris."""
    RUNS["lookup_traffic"] += 1
    if not SERVICE["up"]:
        time.sleep(0.1)  # as in the lesson: the sibling's answer is saved well before the failure
        if (saved := SERVICE.get("saved")) is not None:
            saved.wait(5.0)  # and, where a test asks, only once it is in the checkpointer
        raise ConnectionError(f"traffic service unreachable for {city}")
    return f"{city}: light traffic"


BOOK = [{"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "book_table", "args": {"city": "Paris"}}]
TRAFFIC = [{"name": "lookup_weather", "args": {"city": "Paris"}},
           {"name": "lookup_traffic", "args": {"city": "Paris"}}]


def interrupted_then_resumed(which):
    RUNS.clear()
    graph = both([BOOK, tool_results_summary], [lookup_weather, book_table], checkpointed=True)[which]
    paused = graph.invoke(QUESTION, THREAD)
    saved = types(graph.get_state(THREAD).values["messages"])
    done = graph.invoke(Command(resume="yes"), THREAD)
    return paused, saved, dict(RUNS), done["messages"][-1].content


@lesson
def test_agent_resume_reruns_only_the_interrupted_call():
    paused, saved, runs, final = interrupted_then_resumed("agent")
    assert [i.value for i in paused["__interrupt__"]] == ["Book a table in Paris?"]
    assert saved == ["human", "ai", "tool"]
    assert runs == {"lookup_weather": 1, "book_table": 2}
    assert final == "Paris: sunny, 25 °C; Paris: table booked"


@lesson
def test_single_batch_resume_reruns_every_call():
    _, saved, runs, final = interrupted_then_resumed("batch")
    assert saved == ["human", "ai"]
    assert runs == {"lookup_weather": 2, "book_table": 2}
    assert final == "Paris: sunny, 25 °C; Paris: table booked"


@lesson
@pytest.mark.timing  # the siblings are slower than the interrupt, so the step must wait for them
@pytest.mark.parametrize("kind", ["async", "sync"])
def test_under_ainvoke_an_interrupt_lets_the_agents_siblings_finish_and_keeps_their_answers(kind):
    runs = Counter()

    async def slow_async(city: str) -> str:
        """Look up today's weather for a city, slowly."""
        runs["weather"] += 1
        await asyncio.sleep(0.5)
        return weather_report(city)

    def slow_sync(city: str) -> str:
        """Look up today's weather for a city, slowly."""
        runs["weather"] += 1
        time.sleep(0.5)
        return weather_report(city)

    weather = (StructuredTool.from_function(coroutine=slow_async, name="slow_weather") if kind == "async"
               else StructuredTool.from_function(func=slow_sync, name="slow_weather"))
    calls = [{"name": "slow_weather", "args": {"city": "Paris"}},
             {"name": "book_table", "args": {"city": "Paris"}}]
    graph = agent_for([calls, tool_results_summary], [weather, book_table], checkpointer=InMemorySaver())

    async def pause_then_resume():
        paused = await graph.ainvoke(QUESTION, THREAD)
        saved = types(graph.get_state(THREAD).values["messages"])
        done = await graph.ainvoke(Command(resume="yes"), THREAD)
        return paused, saved, done["messages"][-1].content

    paused, saved, final = asyncio.run(pause_then_resume())
    assert [i.value for i in paused["__interrupt__"]] == ["Book a table in Paris?"]
    assert saved == ["human", "ai", "tool"], "the slow sibling finished and its answer was saved"
    assert runs == {"weather": 1}, "and it did not run again on resume"
    assert final == "Paris: sunny, 25 °C; Paris: table booked"


def interrupt_rounds(which):
    two = [{"name": "book_table", "args": {"city": "Paris"}},
           {"name": "book_table", "args": {"city": "London"}}]
    graph = both([two, tool_results_summary], [book_table], checkpointed=True)[which]
    result, asked = graph.invoke(QUESTION, THREAD), []
    while "__interrupt__" in result:
        asked.append(sorted(i.value for i in result["__interrupt__"]))
        result = graph.invoke(Command(resume={i.id: "yes" for i in result["__interrupt__"]}), THREAD)
    return asked, result["messages"][-1].content


@lesson
def test_agent_surfaces_every_interrupt_of_a_turn_at_once():
    asked, final = interrupt_rounds("agent")
    assert asked == [["Book a table in London?", "Book a table in Paris?"]]
    assert final == "Paris: table booked; London: table booked"


@lesson
def test_single_batch_surfaces_one_interrupt_at_a_time():
    asked, final = interrupt_rounds("batch")
    assert asked == [["Book a table in Paris?"], ["Book a table in London?"]]
    assert final == "Paris: table booked; London: table booked"


def crash_then_retry(which, *, once_saved=False):
    """Crash a turn (traffic raises beside an instant weather lookup), then retry it. With
    `once_saved`, traffic raises only once weather's answer is in the checkpointer."""
    RUNS.clear()
    SERVICE["up"] = False
    script, tools = [TRAFFIC, tool_results_summary], [lookup_weather, lookup_traffic]
    if once_saved:
        SERVICE["saved"] = threading.Event()
        graph = agent_for(script, tools, checkpointer=AnswerSavedSaver("lookup_weather", SERVICE["saved"]))
    else:
        graph = both(script, tools, checkpointed=True)[which]
    try:
        with pytest.raises(ConnectionError, match="traffic service unreachable for Paris"):
            graph.invoke(QUESTION, THREAD)
    finally:
        SERVICE.pop("saved", None)
    saved = types(graph.get_state(THREAD).values["messages"])
    SERVICE["up"] = True
    final = graph.invoke(None, THREAD)["messages"][-1].content
    return saved, dict(RUNS), final


@lesson
@pytest.mark.timing  # its verdict depends on how threads are scheduled
def test_agent_keeps_a_sync_siblings_result_when_a_call_raises():
    # a sibling whose answer was saved before its neighbour failed keeps it, even with Python
    # switching threads as often as it can, and a retry re-runs only the failed call. "Saved" is
    # an event, not a delay: under heavy load a 0.1 s head start is not always enough (the race
    # test below forces the loss)
    with switching_threads_as_often_as_python_can():
        outcomes = [crash_then_retry("agent", once_saved=True) for _ in range(5)]
    assert all(o[0] == ["human", "ai", "tool"] for o in outcomes), [o[0] for o in outcomes]
    saved, runs, final = crash_then_retry("agent", once_saved=True)
    assert saved == ["human", "ai", "tool"]
    assert runs == {"lookup_weather": 1, "lookup_traffic": 2}
    assert final == "Paris: sunny, 25 °C; Paris: light traffic"


@contextlib.contextmanager
def switching_threads_as_often_as_python_can():
    """`sys.setswitchinterval(1e-6)` for the block: forces thread interleavings a test wants to meet."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def weather_beside_a_failure(delay, finished):
    """An agent whose turn runs a weather lookup of `delay` s (recording when it ended in `finished`)
    beside a traffic lookup that raises at once."""
    @tool
    def weather(city: str) -> str:
        """Look up today's weather for a city, after a delay."""
        time.sleep(delay)
        finished["at"] = time.perf_counter()
        return weather_report(city)

    @tool
    def broken_traffic(city: str) -> str:
        """Look up live traffic for a city (its service is down)."""
        raise ConnectionError(f"traffic service unreachable for {city}")

    calls = [{"name": "weather", "args": {"city": "Paris"}},
             {"name": "broken_traffic", "args": {"city": "Paris"}}]
    return agent_for([calls, tool_results_summary], [weather, broken_traffic], checkpointer=InMemorySaver())


@lesson
def test_under_invoke_the_failure_surfaces_only_after_a_slow_sibling_finished():
    finished = {}
    graph = weather_beside_a_failure(0.3, finished)
    with pytest.raises(ConnectionError):
        graph.invoke(QUESTION, THREAD)
    raised_at = time.perf_counter()
    assert "at" in finished and finished["at"] <= raised_at, "the failure surfaced after the sibling finished"


@lesson
@pytest.mark.timing  # its verdict depends on how threads are scheduled
def test_a_sibling_finishing_as_the_step_fails_can_lose_its_answer(caplog):
    # the sibling finishes while the failed step shuts down: its on_done callback submits the write to
    # an executor already shut down. Forced often by switching threads as often as Python can; one
    # loss is enough, so the races stop at the first. About 1 in 4 is lost idle; under the soak's load
    # every answer was once kept in 40 races (1 round in 50), which puts it near 1 in 11 there: all
    # kept in 300 would then be (10/11)**300, about 4e-13
    kept = []
    with switching_threads_as_often_as_python_can():
        for run in range(300):
            graph = weather_beside_a_failure(0.02, {})
            thread = {"configurable": {"thread_id": f"race-{run}"}}
            with pytest.raises(ConnectionError):
                graph.invoke(QUESTION, thread)
            kept.append(types(graph.get_state(thread).values["messages"]) == ["human", "ai", "tool"])
            if not kept[-1]:
                break
    assert not all(kept), f"every answer was kept in {len(kept)} forced races"
    assert "cannot schedule new futures after shutdown" in caplog.text


@lesson
def test_single_batch_loses_the_siblings_result_when_a_call_raises():
    saved, runs, final = crash_then_retry("batch")
    assert saved == ["human", "ai"]
    assert runs == {"lookup_weather": 2, "lookup_traffic": 2}
    assert final == "Paris: sunny, 25 °C; Paris: light traffic"


def async_sibling_fate(which):
    fate = {}

    @tool
    async def slow_weather(city: str) -> str:
        """Look up today's weather for a city, slowly."""
        try:
            await asyncio.sleep(2.0)  # far beyond the failure at 0.02 s, even with 0.3 s stalls
        except asyncio.CancelledError:
            fate["slow"] = "cancelled"
            raise
        fate["slow"] = "finished"
        return weather_report(city)

    @tool
    async def failing_traffic(city: str) -> str:
        """Look up live traffic for a city (its service is down)."""
        await asyncio.sleep(0.02)
        raise ConnectionError(f"traffic service unreachable for {city}")

    calls = [{"name": "slow_weather", "args": {"city": "Paris"}},
             {"name": "failing_traffic", "args": {"city": "Paris"}}]
    graph = both([calls, tool_results_summary], [slow_weather, failing_traffic], checkpointed=True)[which]

    async def run():
        with pytest.raises(ConnectionError):
            await graph.ainvoke(QUESTION, THREAD)
        deadline = time.monotonic() + 5
        while not fate and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    asyncio.run(run())
    return fate.get("slow"), types(graph.get_state(THREAD).values["messages"])


@lesson
@pytest.mark.parametrize("which", ["agent", "batch"])
def test_under_ainvoke_a_retry_repeats_the_async_sibling(which):
    starts, go = Counter(), {}

    @tool
    async def slow_weather(city: str) -> str:
        """Look up today's weather for a city, slowly."""
        starts["slow_weather"] += 1
        await go["event"].wait()  # waits until the retry: cancelled (agent) or left running (batch)
        return weather_report(city)

    @tool
    async def flaky_traffic(city: str) -> str:
        """Look up live traffic for a city (its service is down at first)."""
        if not go["event"].is_set():
            raise ConnectionError(f"traffic service unreachable for {city}")
        return f"{city}: light traffic"

    calls = [{"name": "slow_weather", "args": {"city": "Paris"}},
             {"name": "flaky_traffic", "args": {"city": "Paris"}}]
    graph = both([calls, tool_results_summary], [slow_weather, flaky_traffic], checkpointed=True)[which]

    async def fail_then_retry():
        go["event"] = asyncio.Event()
        with pytest.raises(ConnectionError):
            await graph.ainvoke(QUESTION, THREAD)
        saved = types(graph.get_state(THREAD).values["messages"])
        go["event"].set()
        final = (await graph.ainvoke(None, THREAD))["messages"][-1].content
        return saved, final

    saved, final = asyncio.run(fail_then_retry())
    assert saved == ["human", "ai"], "the run raised and saved no answer"
    assert starts["slow_weather"] == 2, "the retry ran the sibling again"
    assert final == "Paris: sunny, 25 °C; Paris: light traffic"


@lesson
@pytest.mark.timing
def test_agent_cancels_async_siblings_when_a_call_raises():
    assert async_sibling_fate("agent") == ("cancelled", ["human", "ai"])


@lesson
@pytest.mark.timing
def test_single_batch_lets_async_siblings_finish_and_drops_their_results():
    assert async_sibling_fate("batch") == ("finished", ["human", "ai"])


@lesson
@pytest.mark.timing  # the queued call stays queued while the others hold their threads (0.6 s, 1.0 s)
def test_under_invoke_siblings_still_queued_when_a_call_fails_are_dropped_and_rerun():
    starts, service, hold = Counter(), {"up": False}, {"Paris": 0.6, "London": 1.0, "Tokyo": 0.0}

    @tool
    def held_weather(city: str) -> str:
        """Look up today's weather for a city; it takes a while."""
        starts[city] += 1
        time.sleep(hold[city])
        return weather_report(city)

    @tool
    def failing_traffic(city: str) -> str:
        """Look up live traffic for a city (its service is down at first)."""
        if not service["up"]:
            time.sleep(0.1)
            raise ConnectionError(f"traffic service unreachable for {city}")
        return f"{city}: light traffic"

    calls = [{"name": "held_weather", "args": {"city": "Paris"}},
             {"name": "failing_traffic", "args": {"city": "Paris"}},
             {"name": "held_weather", "args": {"city": "London"}},  # right behind the failure: either way
             {"name": "held_weather", "args": {"city": "Tokyo"}}]
    agent = agent_for([calls, tool_results_summary], [held_weather, failing_traffic],
                      checkpointer=InMemorySaver())
    config = {**THREAD, "max_concurrency": 2}
    with pytest.raises(ConnectionError):
        agent.invoke(QUESTION, config)
    answers = " ".join(m.content for m in agent.get_state(THREAD).values["messages"] if m.type == "tool")
    before = Counter(starts)
    starts.clear()
    service["up"] = True
    agent.invoke(None, config)
    assert (before["Paris"], "Paris" in answers, starts["Paris"]) == (1, True, 0), "started: kept, not re-run"
    assert (before["Tokyo"], "Tokyo" in answers, starts["Tokyo"]) == (0, False, 1), "queued: dropped, re-run"


@lesson
@pytest.mark.parametrize("kind", ["async", "sync"])
def test_under_ainvoke_a_finished_sibling_is_kept_and_not_rerun(kind):
    starts, service, saved = Counter(), {"up": False}, threading.Event()

    def quick(city: str) -> str:
        """Look up today's weather for a city, quickly."""
        starts["quick_weather"] += 1
        return weather_report(city)

    async def aquick(city: str) -> str:
        return quick(city)

    weather = (StructuredTool.from_function(coroutine=aquick, name="quick_weather", description="Weather.")
               if kind == "async" else StructuredTool.from_function(func=quick, name="quick_weather"))

    @tool
    async def traffic_after_weather(city: str) -> str:
        """Look up live traffic for a city, once the weather's answer is saved."""
        starts["traffic_after_weather"] += 1
        deadline = time.monotonic() + 5
        while not saved.is_set() and time.monotonic() < deadline:  # an event, not a head start
            await asyncio.sleep(0.01)
        if not service["up"]:
            raise ConnectionError(f"traffic service unreachable for {city}")
        return f"{city}: light traffic"

    calls = [{"name": "quick_weather", "args": {"city": "Paris"}},
             {"name": "traffic_after_weather", "args": {"city": "Paris"}}]
    agent = agent_for([calls, tool_results_summary], [weather, traffic_after_weather],
                      checkpointer=AnswerSavedSaver("quick_weather", saved))

    async def fail_then_retry():
        with pytest.raises(ConnectionError):
            await agent.ainvoke(QUESTION, THREAD)
        kept = types(agent.get_state(THREAD).values["messages"])
        starts.clear()
        service["up"] = True
        await agent.ainvoke(None, THREAD)
        return kept

    assert asyncio.run(fail_then_retry()) == ["human", "ai", "tool"], "the finished sibling's answer is saved"
    assert dict(starts) == {"traffic_after_weather": 1}, "the retry runs only the failed call"


def plain_def_sibling_under_ainvoke(which):
    """A plain `def` booking (a side effect) beside a failing async call under `ainvoke`; then a retry."""
    booked = []  # the side effect: one entry per booking that really happened
    started, release = threading.Event(), threading.Event()
    service = {"up": False}

    @tool
    def book_table(city: str) -> str:
        """Book a table in a city (slow: it waits until the test releases it)."""
        started.set()  # a call whose thread never started would be dropped, not run: fail only after this
        release.wait(5)
        booked.append(city)
        return f"{city}: table booked"

    @tool
    async def check_traffic(city: str) -> str:
        """Check live traffic for a city (its service may be down); it answers once the booking runs."""
        deadline = time.monotonic() + 5
        while not started.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        if not service["up"]:
            raise ConnectionError(f"traffic service unreachable for {city}")
        return f"{city}: light traffic"

    calls = [{"name": "book_table", "args": {"city": "Paris"}},
             {"name": "check_traffic", "args": {"city": "Paris"}}]
    graph = both([calls, tool_results_summary], [book_table, check_traffic], checkpointed=True)[which]

    async def run():
        with pytest.raises(ConnectionError):
            await graph.ainvoke(QUESTION, THREAD)
        booked_when_raised = len(booked)
        release.set()  # the booking's thread is still running: let it finish
        deadline = time.monotonic() + 5
        while not booked and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        saved = types(graph.get_state(THREAD).values["messages"])
        service["up"] = True
        final = (await graph.ainvoke(None, THREAD))["messages"][-1].content
        return booked_when_raised, saved, list(booked), final

    return asyncio.run(run())


@lesson
@pytest.mark.timing  # soaked: the order is driven by events (the booking starts, then the check fails)
def test_agent_cancels_a_plain_def_siblings_task_but_its_thread_runs_on_and_a_retry_repeats_it():
    when_raised, saved, booked, final = plain_def_sibling_under_ainvoke("agent")
    assert when_raised == 0, "the error surfaced while the booking was still running"
    assert saved == ["human", "ai"], "its task was cancelled: the booking's result was not saved"
    assert booked == ["Paris", "Paris"], "yet its thread ran to the end, and the retry booked again"
    assert final == "Paris: table booked; Paris: light traffic"


@lesson
@pytest.mark.timing  # soaked: the order is driven by events (the booking starts, then the check fails)
def test_single_batch_lets_a_plain_def_sibling_finish_drops_its_result_and_a_retry_repeats_it():
    when_raised, saved, booked, final = plain_def_sibling_under_ainvoke("batch")
    assert when_raised == 0
    assert saved == ["human", "ai"]
    assert booked == ["Paris", "Paris"]
    assert final == "Paris: table booked; Paris: light traffic"


@tool
def hand_off(to: str) -> Command:
    """Hand the work to a worker of the parent graph: A or B."""
    return Command(graph=Command.PARENT, goto=[Send(to, {"note": to})])


class Parent(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    visited: Annotated[list[str], operator.add]


def parent_visits(which):
    hand_offs = [{"name": "hand_off", "args": {"to": "A"}}, {"name": "hand_off", "args": {"to": "B"}}]
    builder = StateGraph(Parent)
    builder.add_node("agent", both([hand_offs, tool_results_summary], [hand_off])[which])
    builder.add_node("A", lambda payload: {"visited": ["A"]})
    builder.add_node("B", lambda payload: {"visited": ["B"]})
    builder.add_edge(START, "agent")
    return builder.compile().invoke({"messages": QUESTION["messages"], "visited": []})["visited"]


@lesson
def test_single_batch_merges_parent_hand_offs():
    assert parent_visits("batch") == ["A", "B"]


@lesson
def test_agent_delivers_only_one_of_several_parent_hand_offs():
    assert parent_visits("agent") in (["A"], ["B"])


@tool
def hand_off_by_name(to: str) -> Command:
    """Hand the work to a worker of the parent graph by its name: A or B."""
    return Command(graph=Command.PARENT, goto=to)


def parent_visits_by_name(which):
    hand_offs = [{"name": "hand_off_by_name", "args": {"to": w}} for w in ("A", "B")]
    builder = StateGraph(Parent)
    builder.add_node("agent", both([hand_offs, tool_results_summary], [hand_off_by_name])[which])
    builder.add_node("A", lambda payload: {"visited": ["A"]})
    builder.add_node("B", lambda payload: {"visited": ["B"]})
    builder.add_edge(START, "agent")
    return builder.compile().invoke({"messages": QUESTION["messages"], "visited": []})["visited"]


@lesson
def test_single_batch_delivers_only_the_first_of_two_parent_hand_offs_by_name():
    assert parent_visits_by_name("batch") == ["A"], "only goto lists of Sends are merged"


@lesson
def test_agent_delivers_only_one_of_two_parent_hand_offs_by_name():
    assert parent_visits_by_name("agent") in (["A"], ["B"])


@tool
def finish(reason: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Stop the loop."""
    return Command(update={"messages": [ToolMessage(f"finished: {reason}", tool_call_id=tool_call_id)]},
                   goto=END)


FINISH = [{"name": "lookup_weather", "args": {"city": "Paris"}},
          {"name": "finish", "args": {"reason": "enough"}}]


@lesson
@pytest.mark.parametrize("which", ["batch", "agent"])
def test_a_goto_from_one_call_adds_a_destination_without_cancelling_the_edge_to_the_model(which):
    calls = FINISH
    graph = both([calls, tool_results_summary], [lookup_weather, finish])[which]
    messages = graph.invoke(QUESTION)["messages"]
    assert types(messages) == ["human", "ai", "tool", "tool", "ai"]
    assert messages[-1].content == "Paris: sunny, 25 °C; finished: enough"


@lesson
def test_each_agent_task_returns_its_own_update_while_the_batch_returns_one_list():
    calls = FINISH
    shapes = {}
    for which, graph in both([calls, tool_results_summary], [lookup_weather, finish]).items():
        shapes[which] = [type(update["tools"]).__name__
                         for update in graph.stream(QUESTION, stream_mode="updates") if "tools" in update]
    assert shapes == {"batch": ["list"], "agent": ["dict", "dict"]}


@lesson
def test_create_agent_has_no_handle_tool_errors_parameter():
    assert "handle_tool_errors" not in inspect.signature(create_agent).parameters


@lesson
def test_create_agent_does_not_accept_a_toolnode():
    with pytest.raises(TypeError, match="'ToolNode' object is not iterable"):
        create_agent(ScriptedChatModel(script=["hi"]), ToolNode(city_tools(), handle_tool_errors=True))


@lesson
def test_create_agent_turns_argument_errors_into_error_messages_by_default():
    script = [[{"name": "lookup_weather", "args": {}}], "done"]
    message = agent_for(script, city_tools()).invoke(QUESTION)["messages"][2]
    assert message.status == "error"
    assert message.content.startswith("Error invoking tool 'lookup_weather' with kwargs {} with error:")


@lesson
def test_tool_error_middleware_turns_chosen_exceptions_into_error_messages():
    def on_error(exc, request):
        if isinstance(exc, ConnectionError):
            return f"{request.tool_call['name']} is unavailable right now; answer without it."
        return None

    SERVICE["up"] = False
    agent = agent_for([TRAFFIC, tool_results_summary], [lookup_weather, lookup_traffic],
                      middleware=[ToolErrorMiddleware(on_error)])
    messages = agent.invoke(QUESTION)["messages"][2:4]
    assert [(m.status, m.content) for m in messages] == [
        ("success", "Paris: sunny, 25 °C"),
        ("error", "lookup_traffic is unavailable right now; answer without it."),
    ]


class Approval(BaseModel):
    ok: bool


@tool
def delete_file(path: str) -> str:
    """Delete a file once a human approves."""
    return "deleted" if interrupt(f"Delete {path}?", response_schema=Approval).ok else "kept"


def refused_resume_outcome(middleware):
    """Pause at the approval, resume with a value the schema refuses: 'paused' or what the model read."""
    script = [[{"name": "delete_file", "args": {"path": "notes.txt"}}], tool_results_summary]
    agent = agent_for(script, [delete_file], middleware=middleware, checkpointer=InMemorySaver())
    agent.invoke(QUESTION, THREAD)
    try:
        return agent.invoke(Command(resume={"ok": "perhaps"}), THREAD)["messages"][2].content
    except ValidationError as refused:
        assert is_invalid_resume(refused) and agent.get_state(THREAD).interrupts
        assert agent.invoke(Command(resume={"ok": True}), THREAD)["messages"][2].content == "deleted"
        return "paused"


def _answer_everything(exc, request):
    return f"{request.tool_call['name']} failed: {type(exc).__name__}"


@lesson
@pytest.mark.parametrize(("on_error", "outcome"), [
    (_answer_everything, "delete_file failed: ValidationError"),
    (lambda exc, request: None if is_invalid_resume(exc) else _answer_everything(exc, request), "paused"),
], ids=["catch-all", "none-for-an-invalid-resume"])
def test_tool_error_middleware_hands_a_refused_resume_value_to_on_error(on_error, outcome):
    assert refused_resume_outcome([ToolErrorMiddleware(on_error)]) == outcome


@lesson
@pytest.mark.parametrize(("also_invalid_resume", "outcome"), [
    (False, "delete_file failed: ValidationError"), (True, "paused")],
    ids=["graph-bubble-up-only", "and-is-invalid-resume"])
def test_a_wrapper_must_re_raise_a_refused_resume_value_besides_graph_bubble_up(also_invalid_resume, outcome):
    def guarded(request, execute):  # lesson 09, section 5's recipe
        try:
            return execute(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            if also_invalid_resume and is_invalid_resume(exc):
                raise
            return ToolMessage(_answer_everything(exc, request), tool_call_id=request.tool_call["id"],
                               status="error")

    assert refused_resume_outcome([wrap_tool_call(guarded)]) == outcome


# -- section 5: middleware is the interceptor -------------------------------------------------------
@lesson
def test_middleware_wrap_tool_call_sees_the_same_request_as_a_toolnode_interceptor():
    seen = []

    def record(request, execute):
        seen.append((request.tool_call["id"], request.tool_call["name"], request.tool.name,
                     sorted(request.state), types(request.state["messages"]), type(request.runtime).__name__))
        return execute(request)

    tools = city_tools()
    hand_wired(SCRIPT, tools, wrap_tool_call=record).invoke(QUESTION)
    from_batch, seen[:] = sorted(seen), []
    agent_for(SCRIPT, tools, middleware=[wrap_tool_call(record)]).invoke(QUESTION)
    assert sorted(seen) == from_batch
    assert from_batch[0] == ("call_0_0", "lookup_weather", "lookup_weather", ["messages"], ["human", "ai"],
                             "ToolRuntime")


async def deny_everything(request, execute):
    raise PermissionError("no tools today")


@lesson
def test_toolnode_silently_skips_an_async_only_interceptor_under_invoke():
    out = hand_wired(SCRIPT, city_tools(), awrap_tool_call=deny_everything).invoke(QUESTION)
    assert out["messages"][-1].content == "Paris: sunny, 25 °C; Paris: the Louvre"


@lesson
def test_create_agent_rejects_async_only_middleware_under_invoke():
    agent = agent_for(SCRIPT, city_tools(), middleware=[wrap_tool_call(deny_everything)])
    with pytest.raises(NotImplementedError, match="Synchronous implementation of wrap_tool_call"):
        agent.invoke(QUESTION)


@lesson
def test_create_agent_builds_with_a_mismatched_middleware_and_raises_only_at_the_first_tool_call():
    agent = agent_for(["no tools needed"], city_tools(), middleware=[wrap_tool_call(deny_everything)])
    assert agent.invoke(QUESTION)["messages"][-1].content == "no tools needed"  # built, ran, no tool call
    with pytest.raises(NotImplementedError, match="Synchronous implementation of wrap_tool_call"):
        agent_for(SCRIPT, city_tools(), middleware=[wrap_tool_call(deny_everything)]).invoke(QUESTION)


@lesson
def test_create_agent_takes_a_custom_state_schema_that_tools_read():
    from langchain.agents import AgentState

    class TripState(AgentState):
        budget: int

    @tool
    def plan(city: str, runtime: ToolRuntime) -> str:
        """Plan a day in a city within the trip's budget."""
        return f"{city} on {runtime.state['budget']} euros"

    agent = agent_for([[{"name": "plan", "args": {"city": "Paris"}}], tool_results_summary], [plan],
                      state_schema=TripState)
    out = agent.invoke({**QUESTION, "budget": 80})
    assert out["budget"] == 80 and out["messages"][2].content == "Paris on 80 euros"


@lesson
def test_create_agent_rejects_sync_only_middleware_under_ainvoke():
    def passthrough(request, execute):
        return execute(request)

    agent = agent_for(SCRIPT, make_city_tools(0.0), middleware=[wrap_tool_call(passthrough)])
    with pytest.raises(NotImplementedError, match="Asynchronous implementation of awrap_tool_call"):
        asyncio.run(agent.ainvoke(QUESTION))
