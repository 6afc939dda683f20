"""Library behaviour taught in notebooks/13_failure_and_recovery.ipynb.

A tool that raises mid-batch, a resume, a thread left with unanswered tool calls, a run cancelled
from outside: what the checkpoint holds, what runs again, and what the provider says. Side effects
are counted by a course-side recorder, never read from the state.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated

import pytest
from langchain_core.messages import HumanMessage, RemoveMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.prebuilt import ToolNode, tools_condition

from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel

lesson = pytest.mark.lesson("13_failure_and_recovery")
TURN = [[{"name": "charge", "args": {"amount": 5}}, {"name": "notify", "args": {"user": "ann"}}],
        "all done"]
ASK = {"messages": [HumanMessage("Charge ann 5 and tell her")]}


def _tools(effects, service):
    @tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        effects.append(f"charge {amount}")
        return f"charged {amount}"

    @tool
    def notify(user: str) -> str:
        """Notify the user."""
        effects.append(f"notify {user}")
        if not service["up"]:
            if service.get("fails_after", 0.1):  # as in the lesson: `charge`'s answer is saved first
                time.sleep(service.get("fails_after", 0.1))
            raise ConnectionError("notification service is down")
        return f"notified {user}"

    return [charge, notify]


def _batch(model, tools):
    llm = model.bind_tools(tools)
    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [llm.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=InMemorySaver())


def _agent(model, tools):
    from langchain.agents import create_agent

    return create_agent(model, tools, checkpointer=InMemorySaver())


def _crash(build, script=TURN):
    effects, service = [], {"up": False}
    graph = build(ScriptedChatModel(script=script), _tools(effects, service))
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ConnectionError):
        graph.invoke(ASK, config)
    return graph, config, effects, service


@lesson
def test_a_raise_in_a_toolnode_batch_leaves_every_call_unanswered_although_the_sibling_ran():
    graph, config, effects, _ = _crash(_batch)
    snapshot = graph.get_state(config)
    assert snapshot.next == ("tools",)
    assert sorted(effects) == ["charge 5", "notify ann"]
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_0", "call_0_1"]
    assert len(snapshot.tasks) == 1 and "ConnectionError" in str(snapshot.tasks[0].error)


REVERSED = [TURN[0][::-1], "all done"]  # notify listed first


def _crash_at_once(script, crashes=20):
    """Crash a fresh batch `crashes` times under invoke, notify failing at once: the effects of each."""
    outcomes = []
    for _ in range(crashes):
        effects, service = [], {"up": False, "fails_after": 0}
        graph = _batch(ScriptedChatModel(script=script), _tools(effects, service))
        config = {"configurable": {"thread_id": "t"}}
        with pytest.raises(ConnectionError):
            graph.invoke(ASK, config)
        assert unanswered_tool_calls(graph.get_state(config).values["messages"]) == ["call_0_0", "call_0_1"]
        outcomes.append(effects)
    return outcomes


@lesson
def test_under_invoke_a_batch_sibling_listed_before_the_failing_call_always_runs_and_loses_its_answer():
    # executor.map collects the results in list order: charge's is waited for before notify's error
    assert all("charge 5" in effects for effects in _crash_at_once(TURN))


@lesson
def test_under_invoke_a_batch_sibling_listed_after_a_call_that_fails_at_once_is_mostly_cancelled_unstarted():
    # a race the failing call almost always wins when it raises before waiting on anything (a
    # time.sleep(0) is enough to let the sibling's thread start): the pool's futures not yet started
    # are cancelled. Observed: none or one run in 20 crashes, also under two CPU hogs; pinned as
    # "in fewer than half", as the lesson prints it
    assert sum("charge 5" in effects for effects in _crash_at_once(REVERSED)) < 10


@lesson
def test_under_invoke_a_batch_sibling_already_running_when_a_call_fails_finishes_and_loses_its_answer():
    effects, charging, failing = [], threading.Event(), threading.Event()

    @tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        charging.set()
        assert failing.wait(10)
        effects.append(f"charge {amount}")
        return f"charged {amount}"

    @tool
    def notify(user: str) -> str:
        """Notify the user."""
        assert charging.wait(10)  # charge is running
        failing.set()
        raise ConnectionError("notification service is down")

    graph = _batch(ScriptedChatModel(script=REVERSED), [charge, notify])
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ConnectionError):
        graph.invoke(ASK, config)
    assert effects == ["charge 5"]
    assert unanswered_tool_calls(graph.get_state(config).values["messages"]) == ["call_0_0", "call_0_1"]


@lesson
def test_under_ainvoke_every_call_of_a_failing_batch_runs_and_loses_its_answer():
    effects, charged = [], threading.Event()

    @tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        effects.append(f"charge {amount}")
        charged.set()
        return f"charged {amount}"

    @tool
    def notify(user: str) -> str:
        """Notify the user."""
        raise ConnectionError("notification service is down")

    graph = _batch(ScriptedChatModel(script=REVERSED), [charge, notify])
    config = {"configurable": {"thread_id": "t"}}

    async def run():
        with pytest.raises(ConnectionError):
            await graph.ainvoke(ASK, config)
        assert await asyncio.to_thread(charged.wait, 10)  # started with the batch, so it finishes
        return await graph.aget_state(config)

    snapshot = asyncio.run(run())
    assert effects == ["charge 5"]
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_0", "call_0_1"]


@lesson
def test_create_agent_keeps_the_finished_calls_answer_and_only_the_failed_call_is_unanswered():
    graph, config, effects, _ = _crash(_agent)
    snapshot = graph.get_state(config)
    assert sorted(effects) == ["charge 5", "notify ann"]
    assert [m.content for m in snapshot.values["messages"] if isinstance(m, ToolMessage)] == ["charged 5"]
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_1"]
    assert sorted(task.error is None for task in snapshot.tasks) == [False, True]


@lesson
def test_resuming_a_batch_runs_every_call_of_it_again():
    graph, config, effects, service = _crash(_batch)
    service["up"], effects[:] = True, []
    assert graph.invoke(None, config)["messages"][-1].content == "all done"
    assert sorted(effects) == ["charge 5", "notify ann"]


@lesson
def test_resuming_create_agent_runs_only_the_failed_call_again():
    graph, config, effects, service = _crash(_agent)
    service["up"], effects[:] = True, []
    assert graph.invoke(None, config)["messages"][-1].content == "all done"
    assert effects == ["notify ann"]


def _crashed_on_the_wire(endpoint, build=_batch, service=None):
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                     use_responses_api=False, max_retries=0)
    graph = build(llm, _tools([], {"up": False} if service is None else service))
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ConnectionError):
        graph.invoke(ASK, config)
    return graph, config


@lesson
def test_a_new_message_on_a_thread_with_unanswered_calls_gets_the_providers_400():
    from langchain_openai.chat_models.base import OpenAIInvalidRequestError

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([TURN[0], "back on track"], check_history=True) as endpoint:
        graph, config = _crashed_on_the_wire(endpoint)
        rejected = "must be followed by tool messages.*call_0_0, call_0_1"
        with pytest.raises(OpenAIInvalidRequestError, match=rejected):
            graph.invoke({"messages": [HumanMessage("Never mind")]}, config)


def _repair(graph, config, text="not completed"):
    """The lesson's repair: each AIMessage followed by an answer for every call (existing or an error)."""
    messages = graph.get_state(config).values["messages"]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    repaired = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        repaired.append(message)
        for call in getattr(message, "tool_calls", []):
            error = ToolMessage(text, tool_call_id=call["id"], status="error")
            repaired.append(answers.get(call["id"]) or error)
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]},
                       as_node="tools")


def _error_answers(messages):
    missing = unanswered_tool_calls(messages)
    return [ToolMessage("not completed", tool_call_id=i, status="error") for i in missing]


@lesson
def test_answers_appended_after_a_new_question_are_still_rejected_by_the_provider():
    from langchain_openai.chat_models.base import OpenAIInvalidRequestError

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([TURN[0], "back on track"], check_history=True) as endpoint:
        graph, config = _crashed_on_the_wire(endpoint)
        with pytest.raises(OpenAIInvalidRequestError):
            graph.invoke({"messages": [HumanMessage("Never mind")]}, config)
        late = _error_answers(graph.get_state(config).values["messages"])
        graph.update_state(config, {"messages": late}, as_node="tools")
        assert unanswered_tool_calls(graph.get_state(config).values["messages"]) == []  # blind to order
        with pytest.raises(OpenAIInvalidRequestError, match="must be followed by tool messages"):
            graph.invoke(None, config)


@lesson
def test_rewriting_the_history_in_order_repairs_a_thread_a_new_question_landed_on():
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([TURN[0], "back on track"], check_history=True) as endpoint:
        graph, config = _crashed_on_the_wire(endpoint)
        with pytest.raises(Exception, match="must be followed by tool messages"):
            graph.invoke({"messages": [HumanMessage("Never mind")]}, config)
        graph.update_state(config, {"messages": _error_answers(graph.get_state(config).values["messages"])},
                           as_node="tools")
        _repair(graph, config)
        history = graph.get_state(config).values["messages"]
        assert [type(m).__name__ for m in history] == [
            "HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "HumanMessage"]
        assert graph.invoke(None, config)["messages"][-1].content == "back on track"


@lesson
def test_error_answers_alone_drop_create_agents_pending_answer():
    graph, config, _, _ = _crash(_agent)
    graph.update_state(config, {"messages": _error_answers(graph.get_state(config).values["messages"])},
                       as_node="tools")
    assert unanswered_tool_calls(graph.get_state(config).values["messages"]) == ["call_0_0"]


@lesson
def test_the_repair_keeps_create_agents_pending_answer_and_runs_nothing_again():
    graph, config, effects, _ = _crash(_agent)
    _repair(graph, config)
    messages = graph.get_state(config).values["messages"]
    assert [(m.tool_call_id, m.content) for m in messages if isinstance(m, ToolMessage)] == [
        ("call_0_0", "charged 5"), ("call_0_1", "not completed")]
    effects.clear()
    assert graph.invoke(None, config)["messages"][-1].content == "all done"
    assert effects == []


@lesson
def test_answers_appended_after_a_new_message_still_leave_the_history_rejected():
    from helpers.openai_endpoint import unanswered_on_the_wire

    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    wire = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "user", "content": "never mind"},
            {"role": "tool", "tool_call_id": "c1", "content": "late"}]
    assert unanswered_on_the_wire(wire) == ["c1"]
    assert unanswered_on_the_wire([wire[0], wire[1], wire[3], wire[2]]) == []


@lesson
def test_deleting_the_aimessage_leaves_create_agents_kept_answer_orphaned_and_the_provider_refuses_it():
    from langchain_openai.chat_models.base import OpenAIInvalidRequestError

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([TURN[0], "back on track"], check_history=True) as endpoint:
        graph, config = _crashed_on_the_wire(endpoint, build=_agent)
        kept = [m for m in graph.get_state(config).values["messages"] if not getattr(m, "tool_calls", None)]
        assert [type(m).__name__ for m in kept] == ["HumanMessage", "ToolMessage"]  # charge's answer kept
        graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]},
                           as_node="tools")
        refused = "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"
        with pytest.raises(OpenAIInvalidRequestError, match=refused):
            graph.invoke({"messages": [HumanMessage("Never mind")]}, config)


def _slow_tools(finished, sync_done, release):
    """Two slow tools. The sync one's work ends only when `release` is set, so whether it finished
    before the run was cut off is decided by the test, not by how fast the machine is."""
    @tool
    async def slow_async(query: str) -> str:
        """Search slowly (async)."""
        await asyncio.sleep(30)
        finished.append("slow_async")
        return "async result"

    @tool
    def slow_sync(query: str) -> str:
        """Search slowly (sync)."""
        release.wait(30)
        finished.append("slow_sync")
        sync_done.set()
        return "sync result"

    return [slow_async, slow_sync]


SLOW = [[{"name": "slow_async", "args": {"query": "a"}}, {"name": "slow_sync", "args": {"query": "b"}}],
        "done"]


@lesson
@pytest.mark.timing
def test_cancelling_ainvoke_from_outside_stops_async_tools_and_sync_threads_run_on():
    from langchain.agents import create_agent

    finished, sync_done, release = [], threading.Event(), threading.Event()
    graph = create_agent(ScriptedChatModel(script=SLOW), _slow_tools(finished, sync_done, release),
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}

    async def run():
        with pytest.raises(TimeoutError):
            # 2 s to reach the tools even on a loaded machine
            await asyncio.wait_for(graph.ainvoke({"messages": [HumanMessage("go")]}, config), 2.0)
        right_after = list(finished)
        release.set()  # the sync tool's work ends now, after the caller gave up
        assert await asyncio.to_thread(sync_done.wait, 10)
        return right_after, (await graph.aget_state(config))

    right_after, snapshot = asyncio.run(run())
    assert right_after == [] and finished == ["slow_sync"]
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_0", "call_0_1"]


def _timed_graph(tools, seconds, is_async=True):
    llm = ScriptedChatModel(script=SLOW).bind_tools(tools)

    async def call_model_async(state):
        return {"messages": [await llm.ainvoke(state["messages"])]}

    def call_model(state):
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", call_model_async if is_async else call_model)
    builder.add_node("tools", ToolNode(tools), timeout=seconds)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=InMemorySaver())


@lesson
@pytest.mark.timing
def test_a_node_timeout_on_the_tools_node_raises_and_cancels_the_same_way():
    from langgraph.errors import NodeTimeoutError

    finished, sync_done, release = [], threading.Event(), threading.Event()
    graph = _timed_graph(_slow_tools(finished, sync_done, release), 1.0)
    config = {"configurable": {"thread_id": "t"}}

    async def run():
        with pytest.raises(NodeTimeoutError, match="exceeded its run timeout"):
            await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
        assert finished == []
        release.set()
        assert await asyncio.to_thread(sync_done.wait, 10)
        return await graph.aget_state(config)

    snapshot = asyncio.run(run())
    assert finished == ["slow_sync"]
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_0", "call_0_1"]


@lesson
def test_a_node_timeout_is_refused_on_the_sync_path():
    graph = _timed_graph(_slow_tools([], threading.Event(), threading.Event()), 1.0, is_async=False)
    with pytest.raises(ValueError, match="Node timeouts are only supported for async nodes"):
        graph.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})


@lesson
def test_a_node_timeout_on_a_plain_def_node_is_refused_when_the_graph_is_compiled():
    def plain_node(state):
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("work", plain_node, timeout=5.0)  # add_node accepts it
    builder.add_edge(START, "work")
    with pytest.raises(ValueError, match=r"only supported for async nodes.*Node 'work' is sync"):
        builder.compile()


@lesson
def test_a_timed_toolnode_compiles_and_under_invoke_is_refused_only_when_its_step_is_reached():
    model_calls, finished, release = [], [], threading.Event()
    release.set()  # were a tool to run after all, it would not wait
    tools = _slow_tools(finished, threading.Event(), release)
    llm = ScriptedChatModel(script=SLOW).bind_tools(tools)

    def call_model(state):
        model_calls.append("llm")
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", call_model)
    builder.add_node("tools", ToolNode(tools), timeout=1.0)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    graph = builder.compile(checkpointer=InMemorySaver())  # accepted: ToolNode has an async side
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError, match=r"only supported for async nodes.*Node 'tools' is sync"):
        graph.invoke({"messages": [HumanMessage("go")]}, config)
    snapshot = graph.get_state(config)
    assert model_calls == ["llm"] and finished == []  # the model ran (and was billed); no tool did
    assert snapshot.next == ("tools",)
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_0", "call_0_1"]


@lesson
def test_under_invoke_even_an_async_def_node_with_a_timeout_is_refused_when_its_step_is_reached():
    ran = []

    def first(state):
        ran.append("first")
        return {}

    async def timed(state):
        ran.append("timed")
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("first", first)
    builder.add_node("timed", timed, timeout=1.0)
    builder.add_edge(START, "first")
    builder.add_edge("first", "timed")
    graph = builder.compile()  # accepted: the node is async
    with pytest.raises(ValueError, match=r"only supported for async nodes.*Node 'timed' is sync"):
        graph.invoke({"messages": [HumanMessage("go")]})
    assert ran == ["first"]
    assert asyncio.run(graph.ainvoke({"messages": [HumanMessage("go")]})) is not None  # fine under ainvoke
    assert ran == ["first", "first", "timed"]


# step_timeout, the graph-wide deadline of each step (deep dive 7)
def _report_graph(report_done, finish):
    @tool
    def slow_report(query: str) -> str:
        """Build a report (slow)."""
        finish()
        report_done.set()
        return "report ready"

    script = [[{"name": "slow_report", "args": {"query": "sales"}}], "report sent"]
    graph = _batch(ScriptedChatModel(script=script), [slow_report])
    graph.step_timeout = 0.5  # an attribute of the compiled graph; compile() takes no such argument
    return graph


@lesson
@pytest.mark.timing
def test_step_timeout_under_invoke_raises_only_after_the_steps_sync_tool_returned():
    report_done = threading.Event()
    graph = _report_graph(report_done, lambda: time.sleep(1.5))  # three times the deadline
    with pytest.raises(TimeoutError, match="Timed out"):
        graph.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    assert report_done.is_set()


@lesson
@pytest.mark.timing
def test_after_a_step_timeout_under_invoke_the_thread_looks_finished_but_a_resume_runs_the_model():
    report_done = threading.Event()
    graph = _report_graph(report_done, lambda: time.sleep(1.5))
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(TimeoutError):
        graph.invoke({"messages": [HumanMessage("go")]}, config)
    snapshot = graph.get_state(config)
    assert snapshot.next == ()
    assert unanswered_tool_calls(snapshot.values["messages"]) == []
    assert [(task.name, task.error) for task in snapshot.tasks] == [("tools", None)]
    assert graph.invoke(None, config)["messages"][-1].content == "report sent"


@lesson
@pytest.mark.timing
def test_step_timeout_under_ainvoke_raises_at_the_deadline_cancels_the_step_and_the_sync_thread_runs_on():
    finished, sync_done, release = [], threading.Event(), threading.Event()
    tools = _slow_tools(finished, sync_done, release)
    graph = _batch(ScriptedChatModel(script=SLOW), tools)
    graph.step_timeout = 0.5
    config = {"configurable": {"thread_id": "t"}}

    async def run():
        with pytest.raises(TimeoutError):
            await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
        right_after = list(finished)
        release.set()  # the sync tool's work ends only now, after the deadline
        assert await asyncio.to_thread(sync_done.wait, 10)
        return right_after, await graph.aget_state(config)

    right_after, snapshot = asyncio.run(run())
    assert right_after == [] and finished == ["slow_sync"]
    assert snapshot.next == ("tools",)
    assert unanswered_tool_calls(snapshot.values["messages"]) == ["call_0_0", "call_0_1"]


# TimeoutPolicy(idle_timeout=...): a node that makes no progress (deep dive 7)
def _crawl_graph(report: str | None):
    from langchain_core.messages import AIMessage
    from langgraph.config import get_stream_writer
    from langgraph.runtime import get_runtime
    from langgraph.types import TimeoutPolicy

    @tool
    async def crawl(pages: int) -> str:
        """Crawl pages one by one."""
        write = get_stream_writer()
        for page in range(pages):
            await asyncio.sleep(0.1)
            if report == "writer":
                write({"page": page})
            elif report == "heartbeat":
                get_runtime().heartbeat()
        return f"crawled {pages} pages"

    graph = (StateGraph(MessagesState)
             .add_node("tools", ToolNode([crawl]), timeout=TimeoutPolicy(idle_timeout=1.0))
             .add_edge(START, "tools").compile())
    call = AIMessage("", tool_calls=[{"name": "crawl", "args": {"pages": 15}, "id": "crawl"}])
    return graph, {"messages": [call]}


@lesson
@pytest.mark.timing
def test_an_idle_timeout_stops_a_node_that_makes_no_progress():
    from langgraph.errors import NodeTimeoutError

    graph, inputs = _crawl_graph(report=None)  # 1.5 s of work, no progress in between
    with pytest.raises(NodeTimeoutError, match="idle timeout") as stopped:
        asyncio.run(graph.ainvoke(inputs))
    assert stopped.value.kind == "idle"


@lesson
@pytest.mark.timing
@pytest.mark.parametrize("report", ["writer", "heartbeat"])
def test_an_idle_timeout_spares_a_node_that_reports_progress_through_the_stream_writer_or_a_heartbeat(report):
    graph, inputs = _crawl_graph(report=report)  # 1.5 s of work, progress every 0.1 s
    started = time.monotonic()
    result = asyncio.run(graph.ainvoke(inputs))
    assert result["messages"][-1].content == "crawled 15 pages"
    assert time.monotonic() - started > 1.0  # it ran past the idle timeout


@lesson
def test_an_idempotent_tool_keyed_on_the_call_id_runs_its_side_effect_once():
    done, effects = set(), []

    @tool
    def charge_once(amount: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Charge at most once per call."""
        if tool_call_id in done:
            return f"already charged {amount}"
        done.add(tool_call_id)
        effects.append(amount)
        return f"charged {amount}"

    call = {"name": "charge_once", "args": {"amount": 5}, "id": "call_7", "type": "tool_call"}
    assert [charge_once.invoke(call).content for _ in range(2)] == ["charged 5", "already charged 5"]
    assert effects == [5]


# -- 3. (cont.) a new message on a crashed thread, per prebuilt agent ---------------------------
def _react_agent(model, tools):
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, checkpointer=InMemorySaver())


NEW_QUESTION = {"messages": [HumanMessage("Never mind, what is my balance?")]}


def _counting(asked):
    """A second model turn that records each conversation it is asked to answer."""

    def answer(messages):
        asked.append([type(m).__name__ for m in messages])
        return "your balance is 0"

    return answer


@lesson
def test_a_new_message_on_a_crashed_create_agent_thread_runs_nothing_again_and_drops_the_pending_answer():
    asked: list = []
    graph, config, effects, service = _crash(_agent, script=[TURN[0], _counting(asked)])
    assert unanswered_tool_calls(graph.get_state(config).values["messages"]) == ["call_0_1"]
    effects.clear()
    service["up"] = True
    messages = graph.invoke(NEW_QUESTION, config)["messages"]
    assert effects == []
    assert asked == [["HumanMessage", "AIMessage", "HumanMessage"]]  # the model got the broken history
    assert unanswered_tool_calls(messages) == ["call_0_0", "call_0_1"]
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage"]


@lesson
def test_a_new_message_on_a_crashed_create_agent_thread_gets_the_providers_400_naming_both_calls():
    from langchain_openai.chat_models.base import OpenAIInvalidRequestError

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    service = {"up": False}
    with ScriptedOpenAIEndpoint([TURN[0], "back on track"], check_history=True) as endpoint:
        graph, config = _crashed_on_the_wire(endpoint, _agent, service)
        assert len(endpoint.requests) == 1
        assert unanswered_tool_calls(graph.get_state(config).values["messages"]) == ["call_0_1"]
        service["up"] = True
        rejected = "400.*did not have response messages: call_0_0, call_0_1"
        with pytest.raises(OpenAIInvalidRequestError, match=rejected):
            graph.invoke(NEW_QUESTION, config)
        assert len(endpoint.requests) == 2
    snapshot = graph.get_state(config)
    history = snapshot.values["messages"]
    assert [type(m).__name__ for m in history] == ["HumanMessage", "AIMessage", "HumanMessage"]
    assert unanswered_tool_calls(history) == ["call_0_0", "call_0_1"]
    assert snapshot.next == ("model",)


@lesson
def test_create_react_agent_refuses_a_new_message_on_a_crashed_thread_before_calling_its_model():
    asked: list = []
    graph, config, effects, service = _crash(_react_agent, script=[TURN[0], _counting(asked)])
    effects.clear()
    service["up"] = True
    with pytest.raises(ValueError, match="Found AIMessages with tool_calls that do not have a corresponding"):
        graph.invoke(NEW_QUESTION, config)
    assert effects == []
    assert asked == []  # the model was never called
    history = graph.get_state(config).values["messages"]
    assert [type(m).__name__ for m in history] == ["HumanMessage", "AIMessage", "HumanMessage"]


@lesson
def test_create_react_agent_sends_no_request_for_a_new_message_on_a_crashed_thread():
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    service = {"up": False}
    with ScriptedOpenAIEndpoint([TURN[0], "back on track"], check_history=True) as endpoint:
        graph, config = _crashed_on_the_wire(endpoint, _react_agent, service)
        service["up"] = True
        with pytest.raises(ValueError, match="INVALID_CHAT_HISTORY"):
            graph.invoke(NEW_QUESTION, config)
        assert len(endpoint.requests) == 1  # only the turn that crashed


# A routing function (add_conditional_edges) that raises: langgraph#8834.
def _order_graph(ran, routing):
    from typing import TypedDict

    from langgraph.graph import END

    class Order(TypedDict):
        total: int

    def price(state):
        ran.append("price")
        return {"total": state["total"] + 5}

    def pick_route(state):
        ran.append("route")
        if not routing["up"]:
            raise RuntimeError("shipping service is down")
        return "ship"

    def ship(state):
        ran.append("ship")
        return {}

    builder = StateGraph(Order)
    builder.add_node("price", price)
    builder.add_node("ship", ship)
    builder.add_edge(START, "price")
    builder.add_conditional_edges("price", pick_route, ["ship", END])
    builder.add_edge("ship", END)
    return builder.compile(checkpointer=InMemorySaver())


def _router_crash():
    ran, routing = [], {"up": False}
    graph = _order_graph(ran, routing)
    config = {"configurable": {"thread_id": "order"}}
    with pytest.raises(RuntimeError, match="shipping service is down"):
        graph.invoke({"total": 0}, config)
    routing["up"] = True
    return graph, config, ran


@lesson
def test_a_conditional_router_that_raises_leaves_next_empty_and_a_task_with_the_error():
    graph, config, ran = _router_crash()
    snapshot = graph.get_state(config)
    assert snapshot.next == ()
    assert snapshot.values == {"total": 5}
    assert [(t.name, t.error, t.result) for t in snapshot.tasks] == [
        ("price", "RuntimeError('shipping service is down')", {"total": 5})]
    assert ran == ["price", "route"]


@lesson
def test_resuming_after_a_conditional_router_raised_returns_without_routing_or_running_the_next_node():
    graph, config, ran = _router_crash()
    ran.clear()
    assert graph.invoke(None, config) == {"total": 5}
    assert ran == []  # neither the router nor `ship` ran
    assert graph.get_state(config).next == ()


@lesson
def test_update_state_as_the_routers_node_after_the_resume_routes_again_and_runs_the_next_node():
    graph, config, ran = _router_crash()
    assert graph.get_state(config).next == ()
    ran.clear()
    assert graph.invoke(None, config) == {"total": 5} and ran == []  # the resume did not route
    graph.update_state(config, None, as_node="price")
    assert graph.get_state(config).next == ("ship",)
    assert graph.invoke(None, config) == {"total": 5}
    assert ran == ["route", "ship"]  # `price` did not run again


@lesson
def test_before_any_resume_update_state_needs_the_failed_tasks_result_or_the_nodes_write_is_lost():
    graph, config, ran = _router_crash()
    failed = [task for task in graph.get_state(config).tasks if task.error]
    graph.update_state(config, failed[0].result, as_node="price")
    ran.clear()
    assert graph.invoke(None, config) == {"total": 5}
    assert ran == ["ship"]
    # the same with None routes from the checkpoint without `price`'s pending write
    graph, config, ran = _router_crash()
    graph.update_state(config, None, as_node="price")
    assert graph.get_state(config).next == ("ship",)
    assert graph.invoke(None, config) == {"total": 0}


# A drain: RunControl.request_drain (langgraph 1.2, langgraph#7274).
STEPS = [[{"name": "job_step", "args": {"n": n}}] for n in (1, 2, 3)] + ["all three steps done"]


@lesson
def test_a_drain_under_ainvoke_lets_the_running_tool_finish_raises_graph_drained_and_resumes_cleanly():
    from langchain.agents import create_agent
    from langgraph.errors import GraphDrained
    from langgraph.runtime import RunControl

    done = []

    async def run():
        started, release = asyncio.Event(), asyncio.Event()

        @tool
        async def job_step(n: int) -> str:
            """Do one step of a long job."""
            started.set()
            await release.wait()
            done.append(n)
            return f"step {n} done"

        graph = create_agent(ScriptedChatModel(script=STEPS), [job_step], checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "drained"}}
        control = RunControl()
        task = asyncio.create_task(graph.ainvoke({"messages": [HumanMessage("go")]}, config, control=control))
        await started.wait()
        control.request_drain("user pressed stop")
        release.set()
        with pytest.raises(GraphDrained) as stop:
            await task
        assert stop.value.reason == "user pressed stop"
        assert done == [1]  # the running tool finished; no later step started
        snapshot = await graph.aget_state(config)
        assert snapshot.next == ("model",)
        assert unanswered_tool_calls(snapshot.values["messages"]) == []
        result = await graph.ainvoke(None, config)
        assert done == [1, 2, 3]
        assert result["messages"][-1].content == "all three steps done"

    asyncio.run(run())


@lesson
def test_a_drain_under_sync_invoke_requested_from_another_thread_stops_the_same_way():
    from langchain.agents import create_agent
    from langgraph.errors import GraphDrained
    from langgraph.runtime import RunControl

    done, started, release = [], threading.Event(), threading.Event()

    @tool
    def job_step(n: int) -> str:
        """Do one step of a long job."""
        started.set()
        assert release.wait(10)
        done.append(n)
        return f"step {n} done"

    graph = create_agent(ScriptedChatModel(script=STEPS), [job_step], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "drained"}}
    control = RunControl()

    def press_stop():
        assert started.wait(10)
        control.request_drain("sigterm")
        release.set()

    stopper = threading.Thread(target=press_stop)
    stopper.start()
    with pytest.raises(GraphDrained, match="Graph drained: sigterm"):
        graph.invoke({"messages": [HumanMessage("go")]}, config, control=control)
    stopper.join()
    assert done == [1]
    snapshot = graph.get_state(config)
    assert snapshot.next == ("model",)
    assert unanswered_tool_calls(snapshot.values["messages"]) == []
    assert graph.invoke(None, config)["messages"][-1].content == "all three steps done"
    assert done == [1, 2, 3]


@lesson
def test_a_drained_run_control_stops_the_next_run_it_is_passed_before_its_first_step():
    from langchain.agents import create_agent
    from langgraph.errors import GraphDrained
    from langgraph.runtime import RunControl

    done, model_turns = [], []

    @tool
    async def job_step(n: int) -> str:
        """Do one step of a long job."""
        done.append(n)
        return f"step {n} done"

    def counting(messages):
        model_turns.append(len(messages))
        return STEPS[len(model_turns) - 1]

    graph = create_agent(ScriptedChatModel(script=[counting] * 4), [job_step], checkpointer=InMemorySaver())
    control = RunControl()
    control.request_drain("user pressed stop")  # a control drained by an earlier run

    async def run():
        with pytest.raises(GraphDrained, match="user pressed stop"):
            await graph.ainvoke({"messages": [HumanMessage("run the job again")]},
                                {"configurable": {"thread_id": "again"}}, control=control)

    asyncio.run(run())
    assert done == [] and model_turns == []
