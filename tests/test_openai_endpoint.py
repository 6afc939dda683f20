"""helpers.openai_endpoint: the real ChatOpenAI client → ToolNode → ChatOpenAI loop, offline."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from helpers.graphs import tool_loop
from helpers.models import get_chat_model, tool_results_summary
from helpers.openai_endpoint import (
    ScriptedOpenAIEndpoint,
    message_to_wire,
    unanswered_on_the_wire,
    unrequested_on_the_wire,
    wire_to_messages,
)
from helpers.tools import make_city_tools

BOTH = [{"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "lookup_attraction", "args": {"city": "Paris"}}]
SCRIPT = [BOTH, tool_results_summary]
ANSWER = "Paris: sunny, 25 °C; Paris: the Louvre"


@pytest.fixture
def endpoint():
    with ScriptedOpenAIEndpoint(SCRIPT) as running:
        yield running


def chat(endpoint, **options):
    return ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                      use_responses_api=False, **options)


def assert_full_loop(messages, endpoint, tools):
    kinds = [type(m).__name__ for m in messages]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage"]
    assert [m.tool_call_id for m in messages[2:4]] == ["call_0_0", "call_0_1"]
    assert messages[-1].content == ANSWER
    first, second = endpoint.requests
    assert first["tools"] == [convert_to_openai_tool(t) for t in tools]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in second["messages"][2:]] == ["call_0_0", "call_0_1"]


def test_sync_loop_through_the_real_client(endpoint):
    tools = make_city_tools(0.01, sync=True)
    graph = tool_loop(chat(endpoint).bind_tools(tools), tools)
    out = graph.invoke({"messages": [("user", "Weather and sights in Paris?")]})
    assert_full_loop(out["messages"], endpoint, tools)
    assert [e.request["stream"] for e in endpoint.exchanges] == [False, False]


def test_async_loop_through_the_real_client(endpoint):
    tools = make_city_tools(0.01)
    graph = tool_loop(chat(endpoint).bind_tools(tools), tools, is_async=True)
    out = asyncio.run(graph.ainvoke({"messages": [("user", "Weather and sights in Paris?")]}))
    assert_full_loop(out["messages"], endpoint, tools)


def test_streamed_loop_through_the_real_client(endpoint):
    tools = make_city_tools(0.01, sync=True)
    graph = tool_loop(chat(endpoint).bind_tools(tools), tools)
    events = list(graph.stream({"messages": [("user", "q")]}, stream_mode="messages"))
    assert [e.request["stream"] for e in endpoint.exchanges] == [True, True]
    llm_chunks = [m for m, meta in events if meta["langgraph_node"] == "llm"]
    first_id = llm_chunks[0].id
    calls = sum((m for m in llm_chunks[1:] if m.id == first_id), llm_chunks[0]).tool_calls
    assert [(c["name"], c["args"], c["id"]) for c in calls] == [
        ("lookup_weather", {"city": "Paris"}, "call_0_0"),
        ("lookup_attraction", {"city": "Paris"}, "call_0_1"),
    ]
    text = "".join(m.content for m in llm_chunks if m.id != first_id)
    assert text == ANSWER


def test_async_streamed_loop_through_the_real_client(endpoint):
    tools = make_city_tools(0.01)
    graph = tool_loop(chat(endpoint).bind_tools(tools), tools, is_async=True)

    async def collect():
        return [e async for e in graph.astream({"messages": [("user", "q")]}, stream_mode="updates")]

    updates = asyncio.run(collect())
    assert [next(iter(u)) for u in updates] == ["llm", "tools", "llm"]
    assert updates[-1]["llm"]["messages"][0].content == ANSWER


def test_get_chat_model_honours_openai_base_url(endpoint, monkeypatch):
    monkeypatch.setenv("TOOLNODE_LAB_MODEL", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", endpoint.base_url)
    monkeypatch.setenv("TOOLNODE_LAB_MODEL_NAME", "qwen2.5")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    tools = make_city_tools(0.01, sync=True)
    out = tool_loop(get_chat_model().bind_tools(tools), tools).invoke({"messages": [("user", "q")]})
    assert out["messages"][-1].content == ANSWER
    assert [e.request["model"] for e in endpoint.exchanges] == ["qwen2.5", "qwen2.5"]


def test_the_response_carries_tool_calls_as_openai_sends_them(endpoint):
    chat(endpoint).bind_tools(make_city_tools(0)).invoke("q")
    response = endpoint.exchanges[0].response
    assert response["choices"][0]["finish_reason"] == "tool_calls"
    assert response["choices"][0]["message"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_0_0", "type": "function",
             "function": {"name": "lookup_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_0_1", "type": "function",
             "function": {"name": "lookup_attraction", "arguments": '{"city":"Paris"}'}},
        ],
    }


def test_a_stream_sends_tool_call_deltas_then_the_finish_reason(endpoint):
    list(chat(endpoint).bind_tools(make_city_tools(0)).stream("q"))
    chunks = endpoint.exchanges[0].response
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "call_0_0", "type": "function",
         "function": {"name": "lookup_weather", "arguments": ""}}]}
    arguments = "".join(d["tool_calls"][0]["function"]["arguments"]
                        for d in deltas if d.get("tool_calls") and d["tool_calls"][0]["index"] == 0)
    assert arguments == '{"city":"Paris"}'
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "tool_calls"


def test_usage_chunk_only_when_asked(endpoint):
    tools = make_city_tools(0)
    list(chat(endpoint, stream_usage=True).bind_tools(tools).stream("hi"))
    list(chat(endpoint).bind_tools(tools).stream("hi"))
    with_usage, without = endpoint.exchanges
    assert with_usage.request["stream_options"] == {"include_usage": True}
    assert with_usage.response[-1]["choices"] == [] and "usage" in with_usage.response[-1]
    assert "stream_options" not in without.request
    assert all(c["choices"] for c in without.response)


def test_a_tool_call_the_request_did_not_bind_is_a_400_that_says_why(endpoint):
    with pytest.raises(openai.BadRequestError, match="call `model.bind_tools"):
        chat(endpoint).invoke("q")  # no bind_tools: the request has no `tools`
    assert "tools" not in endpoint.requests[0]
    assert endpoint.exchanges[0].status == 400


def test_running_out_of_script_is_a_400(endpoint):
    done = [HumanMessage("q"), AIMessage("a"), HumanMessage("again"), AIMessage("b"), HumanMessage("more")]
    with pytest.raises(openai.BadRequestError, match="Add a turn to the script"):
        chat(endpoint).invoke(done)


def test_models_route_and_unknown_routes(endpoint):
    with urllib.request.urlopen(f"{endpoint.base_url}/models", timeout=5) as response:
        assert json.load(response)["data"][0]["id"] == "scripted"
    request = urllib.request.Request(f"{endpoint.base_url}/responses", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 404
    assert "use_responses_api=False" in json.load(info.value)["error"]["message"]


def test_reset_forgets_the_exchanges(endpoint):
    chat(endpoint).bind_tools(make_city_tools(0)).invoke("q")
    endpoint.reset()
    assert endpoint.exchanges == []


def test_stop_closes_the_port_and_base_url_needs_a_running_server():
    endpoint = ScriptedOpenAIEndpoint(SCRIPT)
    with pytest.raises(RuntimeError, match=r"call `.start\(\)` first"):
        _ = endpoint.base_url
    with endpoint:
        port = int(endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    endpoint.stop()  # idempotent


def test_wire_conversion_round_trips_tool_calls():
    message = AIMessage("", tool_calls=[{"name": "f", "args": {"城市": "杭州"}, "id": "c1"}])
    wire = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            message_to_wire(message), {"role": "tool", "content": "r", "tool_call_id": "c1"}]
    system, user, ai, tool = wire_to_messages(wire)
    assert (system.content, user.content) == ("s", "u")
    assert ai.tool_calls == message.tool_calls
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == "c1"
    with pytest.raises(ValueError, match="unknown role 'robot'"):
        wire_to_messages([{"role": "robot", "content": ""}])


def test_one_client_works_across_event_loops(endpoint):
    # Each request gets its own connection, so a connection pooled under one `asyncio.run`
    # is never reused (and found dead) under the next.
    llm = chat(endpoint).bind_tools(make_city_tools(0))
    first = asyncio.run(llm.ainvoke("q"))
    second = asyncio.run(llm.ainvoke("q"))
    assert first.tool_calls == second.tool_calls


# -- check_history: the histories OpenAI refuses ----------------------------------------------------
CALLED = AIMessage("", tool_calls=[{"name": "lookup_weather", "args": {"city": "Paris"}, "id": "call_1"}])


def _sent(endpoint, history):
    """What the endpoint (check_history=True) answers to `history`, through the real client."""
    try:
        chat(endpoint, max_retries=0).bind_tools(make_city_tools()).invoke(history)
    except openai.BadRequestError:
        pass
    return endpoint.exchanges[-1].status, endpoint.exchanges[-1].response


@pytest.mark.parametrize("history, message", [
    ([HumanMessage("q"), CALLED, HumanMessage("again")],
     "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
     "'tool_call_id'. The following tool_call_ids did not have response messages: call_1"),
    ([HumanMessage("q"), ToolMessage("sunny", tool_call_id="call_1"), HumanMessage("again")],
     "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
     "'tool_calls'."),
    ([HumanMessage("q"), CALLED, ToolMessage("sunny", tool_call_id="call_1"), HumanMessage("again"),
      ToolMessage("sunny", tool_call_id="call_1")],
     "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
     "'tool_calls'."),
    ([HumanMessage("q"), CALLED, ToolMessage("sunny", tool_call_id="call_2")],
     "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
     "'tool_call_id'. The following tool_call_ids did not have response messages: call_1"),
    ([HumanMessage("q"), CALLED, ToolMessage("sunny", tool_call_id="call_1"),
      ToolMessage("sunny", tool_call_id="call_2")],
     "Invalid parameter: 'tool_call_id' of 'call_2' not found in 'tool_calls' of previous message."),
], ids=["unanswered", "orphan", "appended-after-a-question", "wrong-id-first-check-wins", "stray"])
def test_check_history_refuses_what_openai_refuses_with_its_wording(history, message):
    with ScriptedOpenAIEndpoint(["never sent"], check_history=True) as checking:
        status, response = _sent(checking, history)
    assert status == 400
    assert response["error"]["message"] == message


def test_check_history_accepts_a_history_whose_every_call_is_answered_right_after_it():
    history = [HumanMessage("q"), CALLED, ToolMessage("sunny", tool_call_id="call_1"), AIMessage("Sunny."),
               HumanMessage("thanks")]
    with ScriptedOpenAIEndpoint(["unused", "unused", "you are welcome"], check_history=True) as checking:
        status, response = _sent(checking, history)
    assert status == 200
    assert response["choices"][0]["message"]["content"] == "you are welcome"


def test_the_wire_checks_read_roles_and_ids_only():
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    wire = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "a", "content": "x"}]
    assert unanswered_on_the_wire(wire) == [] and unrequested_on_the_wire(wire) is None
    orphan = unrequested_on_the_wire(wire[:1] + wire[2:])
    assert orphan.startswith("Invalid parameter: messages with role 'tool'")
