"""Library behaviours lesson 02 (a hand-built async tool node) teaches, pinned one per test."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, ToolMessage, convert_to_openai_messages
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import ValidationError

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
