"""Library behaviours lesson 02 (a hand-built async tool node) teaches, pinned one per test."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from langchain_core.messages import AIMessage, ToolMessage, convert_to_openai_messages
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphBubbleUp, GraphInterrupt, NodeTimeoutError, ParentCommand, is_invalid_resume
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, ValidationError

LESSON = "02_custom_async_tool_node"


async def lookup_weather(city: str) -> str:
    """Look up the weather."""
    return f"{city}: sunny, 25 °C"


WEATHER = StructuredTool.from_function(coroutine=lookup_weather)
CALL = {"name": "lookup_weather", "args": {"city": "Paris"}, "id": "call-weather", "type": "tool_call"}


@pytest.mark.lesson(LESSON)
def test_a_tool_call_is_name_args_id_and_type():
    message = AIMessage(content="", tool_calls=[CALL])
    assert message.tool_calls == [CALL]
    assert set(message.tool_calls[0]) == {"name", "args", "id", "type"}


@pytest.mark.lesson(LESSON)
def test_tool_message_without_tool_call_id_raises_key_error():
    with pytest.raises(KeyError, match="tool_call_id"):
        ToolMessage(content="Paris: sunny, 25 °C")


@pytest.mark.lesson(LESSON)
def test_tool_messages_before_validator_indexes_tool_call_id_before_the_required_field_check():
    validator = ToolMessage.__pydantic_decorators__.model_validators["coerce_args"]
    assert validator.info.mode == "before"
    with pytest.raises(KeyError) as missing:  # not pydantic's "Field required": that check never ran
        ToolMessage.model_validate({"content": "Paris: sunny, 25 °C"})
    assert not isinstance(missing.value, ValidationError)


@pytest.mark.lesson(LESSON)
def test_wire_format_links_the_answer_by_tool_call_id():
    answer = ToolMessage(content="ok", name="lookup_weather", tool_call_id="call-weather")
    assistant, tool = convert_to_openai_messages([AIMessage(content="", tool_calls=[CALL]), answer])
    assert assistant["tool_calls"][0]["id"] == "call-weather"
    assert assistant["tool_calls"][0]["function"] == {
        "name": "lookup_weather",
        "arguments": '{"city": "Paris"}',
    }
    assert tool == {"role": "tool", "name": "lookup_weather", "tool_call_id": "call-weather", "content": "ok"}


@pytest.mark.lesson(LESSON)
def test_ainvoke_with_args_returns_the_raw_result():
    assert asyncio.run(WEATHER.ainvoke({"city": "Paris"})) == "Paris: sunny, 25 °C"


@pytest.mark.lesson(LESSON)
def test_ainvoke_with_missing_args_raises_a_validation_error():
    with pytest.raises(ValidationError, match="1 validation error for lookup_weather"):
        asyncio.run(WEATHER.ainvoke({}))


@pytest.mark.lesson(LESSON)
def test_an_exception_inside_a_tool_propagates_unchanged():
    async def lookup_traffic(city: str) -> str:
        """Look up traffic."""
        raise ConnectionError(f"traffic service unreachable for {city}")

    tool = StructuredTool.from_function(coroutine=lookup_traffic)
    with pytest.raises(ConnectionError, match="traffic service unreachable for Paris"):
        asyncio.run(tool.ainvoke({"city": "Paris"}))


def _graph_with_async_callable_node():
    class Node:
        async def __call__(self, state):
            call = state["messages"][-1].tool_calls[0]
            return {"messages": [ToolMessage(content="ok", name=call["name"], tool_call_id=call["id"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("tools", Node())
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


@pytest.mark.lesson(LESSON)
def test_an_async_callable_instance_works_as_a_node_under_ainvoke():
    graph = _graph_with_async_callable_node()
    result = asyncio.run(graph.ainvoke({"messages": [AIMessage(content="", tool_calls=[CALL])]}))
    assert [type(m).__name__ for m in result["messages"]] == ["AIMessage", "ToolMessage"]
    assert result["messages"][1].tool_call_id == "call-weather"


@pytest.mark.lesson(LESSON)
def test_an_async_only_node_fails_under_sync_invoke():
    with pytest.raises(TypeError, match='No synchronous function provided to "tools"'):
        _graph_with_async_callable_node().invoke({"messages": [AIMessage(content="", tool_calls=[CALL])]})


async def _read_timeout(city: str) -> str:
    """A forecast service whose HTTP client gives up first: the tool itself raises TimeoutError."""
    raise TimeoutError(f"read timed out fetching {city}")


@pytest.mark.lesson(LESSON)
def test_except_timeout_error_around_wait_for_also_catches_the_tools_own_timeout():
    # Why lesson 02's node does not use `except TimeoutError` to mean "our deadline passed".
    async def main():
        try:
            await asyncio.wait_for(_read_timeout("Paris"), None)  # no deadline at all
        except TimeoutError as exc:
            return repr(exc)

    assert asyncio.run(main()) == "TimeoutError('read timed out fetching Paris')"


@pytest.mark.lesson(LESSON)
def test_asyncio_timeout_expired_tells_our_deadline_from_the_tools_own_timeout():
    async def main(coroutine, seconds):
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                await coroutine
        except TimeoutError:
            return deadline.expired()

    never = asyncio.Event()
    assert asyncio.run(main(_read_timeout("Paris"), 5.0)) is False  # the tool's own TimeoutError
    assert asyncio.run(main(never.wait(), 0.01)) is True  # our deadline passed


@pytest.mark.lesson(LESSON)
def test_runnable_lambda_gives_a_node_a_sync_and_an_async_path():
    from langchain_core.runnables import RunnableLambda

    def answer(state):
        call = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage(content="ok", name=call["name"], tool_call_id=call["id"])]}

    async def aanswer(state):
        return answer(state)

    builder = StateGraph(MessagesState)
    builder.add_node("tools", RunnableLambda(answer, afunc=aanswer))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile()
    request = {"messages": [AIMessage(content="", tool_calls=[CALL])]}
    assert graph.invoke(request)["messages"][-1].content == "ok"
    assert asyncio.run(graph.ainvoke(request))["messages"][-1].content == "ok"


@pytest.mark.lesson(LESSON)
def test_asyncio_run_refuses_to_start_inside_a_running_loop():
    async def inner():
        return "ok"

    async def outer():
        pending = inner()
        try:
            with pytest.raises(RuntimeError, match="cannot be called from a running event loop"):
                asyncio.run(pending)
        finally:
            pending.close()

    asyncio.run(outer())


@pytest.mark.lesson(LESSON)
def test_a_semaphore_binds_to_the_first_loop_that_waits_on_it_not_where_it_is_made():
    """Python >= 3.10: created outside any loop; usable from any loop until a coroutine has to
    wait on it; from then on, waiting in another loop raises."""
    limit = asyncio.Semaphore(1)

    async def use():
        async with limit:
            await asyncio.sleep(0.01)

    async def contend():
        await asyncio.gather(use(), use())

    asyncio.run(use())
    asyncio.run(use())  # nobody waited: not bound yet, a second loop is fine
    asyncio.run(contend())  # one coroutine waited: bound to this loop
    with pytest.raises(RuntimeError, match="is bound to a different event loop"):
        asyncio.run(contend())


@pytest.mark.lesson(LESSON)
def test_a_bound_semaphore_works_on_another_loop_until_a_call_there_has_to_wait():
    limit = asyncio.Semaphore(2)

    async def use():
        async with limit:
            await asyncio.sleep(0.01)

    async def calls(n):
        await asyncio.gather(*(use() for _ in range(n)))

    asyncio.run(calls(4))  # two of four calls waited: bound to this loop
    asyncio.run(calls(2))  # another loop, two calls on two permits: nobody waits, no error
    with pytest.raises(RuntimeError, match="is bound to a different event loop"):
        asyncio.run(calls(4))  # another loop, and a call has to wait


# -- LangGraph's control flow travels as exceptions (§4, change 4; §5) -------------------------


async def _ask_first(path: str) -> str:
    """Delete a file once a human approves."""
    return "deleted" if interrupt(f"Delete {path}?") == "yes" else "kept"


ASK_FIRST = StructuredTool.from_function(coroutine=_ask_first, name="delete_file")
DELETE_CALL = {"name": "delete_file", "args": {"path": "notes.txt"}, "id": "call-delete", "type": "tool_call"}


@pytest.mark.lesson(LESSON)
def test_a_nodes_except_exception_turns_an_interrupt_into_an_error_message():
    class CatchAll:
        async def __call__(self, state):
            call = state["messages"][-1].tool_calls[0]
            try:
                content = await ASK_FIRST.ainvoke(call["args"])
            except Exception as exc:  # GraphInterrupt is an Exception
                content = f"Error: {exc!r}"
            return {"messages": [ToolMessage(content=content, name=call["name"], tool_call_id=call["id"])]}

    assert issubclass(GraphInterrupt, Exception) and issubclass(ParentCommand, GraphBubbleUp)
    builder = StateGraph(MessagesState)
    builder.add_node("tools", CatchAll())
    builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    result = asyncio.run(graph.ainvoke({"messages": [AIMessage(content="", tool_calls=[DELETE_CALL])]},
                                       {"configurable": {"thread_id": "t"}}))
    assert "__interrupt__" not in result, "the run did not pause"
    assert result["messages"][-1].content.startswith("Error: GraphInterrupt(")


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("handle_tool_errors", [True, Exception])
def test_toolnode_re_raises_every_graph_bubble_up_whatever_its_error_policy(handle_tool_errors):
    async def hand_off(city: str) -> str:
        """A tool whose inner graph hands off to the parent graph."""
        raise ParentCommand(Command(graph=Command.PARENT, goto="A"))

    node = ToolNode([StructuredTool.from_function(coroutine=hand_off)], handle_tool_errors=handle_tool_errors)
    call = {"name": "hand_off", "args": {"city": "Paris"}, "id": "call-0", "type": "tool_call"}
    with pytest.raises(ParentCommand):
        asyncio.run(node.ainvoke({"messages": [AIMessage(content="", tool_calls=[call])]}, runtime=Runtime()))


@pytest.mark.lesson(LESSON)
def test_toolnode_re_raises_a_resume_value_the_interrupts_schema_refused():
    class Approval(BaseModel):
        ok: bool

    async def approve(path: str) -> str:
        """Delete a file once a human approves."""
        return "deleted" if interrupt(f"Delete {path}?", response_schema=Approval).ok else "kept"

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([StructuredTool.from_function(coroutine=approve, name="delete_file")],
                                       handle_tool_errors=True))
    builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}

    async def main():
        paused = await graph.ainvoke({"messages": [AIMessage(content="", tool_calls=[DELETE_CALL])]}, thread)
        assert paused["__interrupt__"]
        with pytest.raises(ValidationError) as refused:
            await graph.ainvoke(Command(resume={"ok": "perhaps"}), thread)
        assert is_invalid_resume(refused.value)
        return await graph.ainvoke(Command(resume={"ok": True}), thread)

    assert asyncio.run(main())["messages"][-1].content == "deleted"


@pytest.mark.lesson(LESSON)
def test_a_tool_that_returns_a_command_hands_it_back_from_ainvoke_as_a_plain_value():
    """Nothing is raised: a node must look at the result to see the hand-off (ToolNode does)."""
    async def hand_off(to: str) -> Command:
        """Hand the work to a worker of the parent graph."""
        return Command(graph=Command.PARENT, goto=to)

    result = asyncio.run(StructuredTool.from_function(coroutine=hand_off).ainvoke({"to": "A"}))
    assert isinstance(result, Command) and result.graph == Command.PARENT and result.goto == "A"
    assert str(result) == "Command(graph='__parent__', goto='A')"


@pytest.mark.lesson(LESSON)
def test_resuming_runs_the_hand_built_node_from_its_start_so_every_call_of_the_batch_runs_again():
    from helpers.nodes import CustomAsyncToolNode

    runs = []

    async def check_weather(city: str) -> str:
        """Look up the weather (counts its runs)."""
        runs.append(city)
        return f"{city}: sunny"

    builder = StateGraph(MessagesState)
    weather = StructuredTool.from_function(coroutine=check_weather)
    builder.add_node("tools", CustomAsyncToolNode([ASK_FIRST, weather]))
    builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    weather_call = {"name": "check_weather", "args": {"city": "Paris"}, "id": "call-weather",
                    "type": "tool_call"}
    batch = AIMessage(content="", tool_calls=[DELETE_CALL, weather_call])

    async def main():
        paused = await graph.ainvoke({"messages": [batch]}, thread)
        assert [m.type for m in paused["messages"]] == ["ai"], "the sibling's answer is not kept"
        return await graph.ainvoke(Command(resume="yes"), thread)

    resumed = asyncio.run(main())
    assert [m.content for m in resumed["messages"][1:]] == ["deleted", "Paris: sunny"]
    assert runs == ["Paris", "Paris"], "the sibling ran in the paused run and again on resume"


# -- LangGraph's own timeouts bound one task or one step (§4; deep dive 6) ---------------------


async def _hang(city: str) -> str:
    """A service that never answers."""
    await asyncio.Event().wait()


HANG_CALL = {"name": "_hang", "args": {"city": "Paris"}, "id": "call-hang", "type": "tool_call"}
STUCK = {"messages": [AIMessage(content="", tool_calls=[HANG_CALL, CALL])]}


def _tools_only(node, **options):
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node, **options)
    builder.add_edge(START, "tools")
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.lesson(LESSON)
@pytest.mark.timing
def test_a_node_timeout_fails_the_whole_toolnode_step_under_ainvoke():
    graph = _tools_only(ToolNode([StructuredTool.from_function(coroutine=_hang), WEATHER]), timeout=0.5)
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(NodeTimeoutError) as timed_out:
        asyncio.run(graph.ainvoke(STUCK, thread))
    assert (timed_out.value.kind, timed_out.value.timeout) == ("run", 0.5)
    saved = [m.type for m in graph.get_state(thread).values["messages"]]
    assert saved == ["ai"], "the weather's answer is lost"


def _model_then_tools(calls, *, per_call, **options):
    """A model node asking for `calls`, then a ToolNode: fed the state, or one Send per call."""
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [AIMessage(content="", tool_calls=calls)]})
    builder.add_node("tools", ToolNode([StructuredTool.from_function(coroutine=_hang), WEATHER]), **options)
    builder.add_edge(START, "model")
    if per_call:
        builder.add_conditional_edges("model", lambda state: [Send("tools", [c]) for c in calls], ["tools"])
    else:
        builder.add_edge("model", "tools")
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.lesson(LESSON)
@pytest.mark.timing
@pytest.mark.parametrize(("per_call", "saved"), [(False, ["ai"]), (True, ["ai", "tool"])],
                         ids=["one-task-for-the-batch", "one-send-per-call"])
def test_a_node_timeout_bounds_one_task_so_under_a_send_per_call_the_finished_answer_is_kept(per_call, saved):
    graph = _model_then_tools([HANG_CALL, CALL], per_call=per_call, timeout=0.5)
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(NodeTimeoutError):
        asyncio.run(graph.ainvoke({"messages": []}, thread))
    assert [m.type for m in graph.get_state(thread).values["messages"]] == saved


@pytest.mark.lesson(LESSON)
@pytest.mark.timing
@pytest.mark.parametrize(("per_call", "saved"), [(False, ["ai"]), (True, ["ai", "tool"])],
                         ids=["one-task-for-the-batch", "one-send-per-call"])
def test_a_step_timeout_keeps_what_finished_tasks_wrote(per_call, saved):
    graph = _model_then_tools([HANG_CALL, CALL], per_call=per_call)
    graph.step_timeout = 0.5
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(TimeoutError):
        asyncio.run(graph.ainvoke({"messages": []}, thread))
    assert [m.type for m in graph.get_state(thread).values["messages"]] == saved


@pytest.mark.lesson(LESSON)
def test_a_plain_def_node_with_a_timeout_is_refused_at_compile():
    builder = StateGraph(MessagesState)
    builder.add_node("tools", lambda state: {"messages": []}, timeout=0.5)  # add_node accepts it
    builder.add_edge(START, "tools")
    with pytest.raises(ValueError, match="Node timeouts are only supported for async nodes"):
        builder.compile()


@pytest.mark.lesson(LESSON)
def test_a_node_timeout_is_refused_under_invoke_when_the_run_reaches_the_node():
    ran = []

    def model(state):
        ran.append("model")
        return {"messages": [AIMessage(content="", tool_calls=[CALL])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([WEATHER]), timeout=0.5)
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    graph = builder.compile()  # building accepts it
    with pytest.raises(ValueError, match="Node timeouts are only supported for async nodes"):
        graph.invoke({"messages": []})
    assert ran == ["model"], "the step before the tools node had already run"


@pytest.mark.lesson(LESSON)
@pytest.mark.timing
def test_step_timeout_fails_the_whole_step_at_the_deadline_under_ainvoke():
    graph = _tools_only(ToolNode([StructuredTool.from_function(coroutine=_hang), WEATHER]))
    graph.step_timeout = 0.5
    thread = {"configurable": {"thread_id": "t"}}
    with pytest.raises(TimeoutError):
        asyncio.run(graph.ainvoke(STUCK, thread))
    assert [m.type for m in graph.get_state(thread).values["messages"]] == ["ai"]


@pytest.mark.lesson(LESSON)
@pytest.mark.timing
def test_step_timeout_under_invoke_raises_only_once_the_sync_call_returns():
    returned = threading.Event()

    def slow_weather(city: str) -> str:
        """Look up the weather, slowly."""
        time.sleep(1.0)
        returned.set()
        return "sunny"

    graph = _tools_only(ToolNode([StructuredTool.from_function(func=slow_weather)]))
    graph.step_timeout = 0.3
    call = {"name": "slow_weather", "args": {"city": "Paris"}, "id": "call-slow", "type": "tool_call"}
    with pytest.raises(TimeoutError):
        graph.invoke({"messages": [AIMessage(content="", tool_calls=[call])]},
                     {"configurable": {"thread_id": "t"}})
    assert returned.is_set(), "the TimeoutError surfaced only after the thread's call returned"


# -- a sync twin's worker thread and the run's context (deep dive 6) ---------------------------


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("copy_context", [False, True])
def test_a_sync_twins_thread_keeps_the_runs_config_and_callbacks_only_in_a_copied_context(copy_context):
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.runnables import RunnableLambda
    from langgraph.config import get_config

    async def whose(city: str) -> str:
        """Look up the weather for the signed-in user."""
        return get_config()["configurable"].get("user", "nobody")

    class Starts(BaseCallbackHandler):
        count = 0

        def on_tool_start(self, *args, **kwargs):
            Starts.count += 1

    tool = StructuredTool.from_function(coroutine=whose)

    async def node(state):
        call = state["messages"][-1].tool_calls[0]
        content = await tool.ainvoke(call["args"])
        return {"messages": [ToolMessage(content=content, name=call["name"], tool_call_id=call["id"])]}

    def twin(state):
        with ThreadPoolExecutor(max_workers=1) as worker:
            if copy_context:
                return worker.submit(contextvars.copy_context().run, asyncio.run, node(state)).result()
            return worker.submit(asyncio.run, node(state)).result()

    builder = StateGraph(MessagesState)
    builder.add_node("tools", RunnableLambda(twin, afunc=node))
    builder.add_edge(START, "tools")
    call = {"name": "whose", "args": {"city": "Paris"}, "id": "call-0", "type": "tool_call"}
    result = builder.compile().invoke({"messages": [AIMessage(content="", tool_calls=[call])]},
                                      {"configurable": {"user": "Ann"}, "callbacks": [Starts()]})
    assert (result["messages"][-1].content, Starts.count) == (("Ann", 1) if copy_context else ("nobody", 0))


# -- a node-wide cap (deep dive 7) --------------------------------------------------------------


async def _cancel_a_waiter(enter, leave, waiting):
    """One permit: hold it, cancel a second call once it waits (`waiting` is set), let go."""
    holding, let_go = asyncio.Event(), asyncio.Event()

    async def holder():
        await enter()
        holding.set()
        await let_go.wait()
        leave()

    async def waiter():
        await enter()
        leave()

    held = asyncio.create_task(holder())
    await holding.wait()
    waiting.clear()
    pending = asyncio.create_task(waiter())
    while not waiting.is_set():  # driven by the waiter itself, not by a delay
        await asyncio.sleep(0.005)
    await asyncio.sleep(0)
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    let_go.set()
    await held


@pytest.mark.lesson(LESSON)
def test_a_cancelled_to_thread_acquire_still_takes_the_permit_and_nobody_gives_it_back():
    permits, in_acquire, acquired = threading.BoundedSemaphore(1), threading.Event(), []

    def blocking_acquire():
        in_acquire.set()  # from here on the job runs: cancelling the task cannot stop it
        permits.acquire()
        acquired.append("permit")

    async def main():
        await _cancel_a_waiter(lambda: asyncio.to_thread(blocking_acquire), permits.release, in_acquire)
        deadline = time.monotonic() + 5
        while len(acquired) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert len(acquired) == 2, "the cancelled call's thread took the permit once the holder let go"

    asyncio.run(main())
    assert not permits.acquire(blocking=False), "the permit was lost"


@pytest.mark.lesson(LESSON)
def test_a_cancelled_wait_on_an_asyncio_semaphore_takes_no_permit():
    permits, waiting = asyncio.Semaphore(1), threading.Event()

    async def enter():
        waiting.set()
        await permits.acquire()

    async def main():
        await _cancel_a_waiter(enter, permits.release, waiting)
        return permits.locked()

    assert asyncio.run(main()) is False


@pytest.mark.lesson(LESSON)
@pytest.mark.timing
@pytest.mark.parametrize(("waiting", "outcome"), [(1, "finished"), (2, "stuck")])
def test_calls_waiting_in_to_thread_acquire_can_hold_every_thread_of_the_loops_pool(waiting, outcome):
    """As many waiters as pool threads: the permit holder's sync work never gets a thread."""
    permits, pool_size = threading.BoundedSemaphore(1), 2
    verdict = Future()

    async def one():
        await asyncio.to_thread(permits.acquire)
        try:
            await asyncio.to_thread(time.sleep, 0.01)  # a plain `def` tool under ainvoke
        finally:
            permits.release()

    async def main():
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(pool_size))
        try:
            async with asyncio.timeout(1.0):
                await asyncio.gather(*(one() for _ in range(1 + waiting)))  # one holds the permit
            verdict.set_result("finished")
        except TimeoutError:
            verdict.set_result("stuck")

    with ThreadPoolExecutor(max_workers=1) as worker:
        closed = worker.submit(asyncio.run, main())
        verdict.result(timeout=30)
        while not closed.done():  # free the blocked threads so the loop can close
            with contextlib.suppress(ValueError):
                permits.release()
            time.sleep(0.01)
    assert verdict.result() == outcome
