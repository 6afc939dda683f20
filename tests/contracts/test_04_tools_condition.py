"""Library behaviour taught in notebooks/04_tools_condition_loop.ipynb."""

from __future__ import annotations

import asyncio
import typing

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from helpers.graphs import tool_loop
from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.openai_endpoint import ScriptedOpenAIEndpoint
from helpers.tools import make_city_tools, make_failing_tool

lesson = pytest.mark.lesson("04_tools_condition_loop")

ASKS = AIMessage("", tool_calls=[{"name": "lookup_weather", "args": {"city": "Paris"}, "id": "c1"}])
BOTH = [{"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "lookup_attraction", "args": {"city": "Paris"}}]
QUESTION = {"messages": [HumanMessage("What's the weather in Paris today, and what should I see there?")]}


def build_loop(llm, tools, *, node_name="tools", path_map=None, **tool_node_options):
    return tool_loop(llm, tools, is_async=True, tools_node=node_name, path_map=path_map, **tool_node_options)


def run(coro):
    return asyncio.run(coro)


def kinds(messages):
    return [type(m).__name__ for m in messages]


# -- tools_condition ----------------------------------------------------------------------------
@lesson
def test_tools_condition_routes_tool_calls_to_tools():
    assert tools_condition({"messages": [HumanMessage("q"), ASKS]}) == "tools"


@lesson
def test_tools_condition_ends_on_a_plain_ai_message():
    assert tools_condition({"messages": [HumanMessage("q"), AIMessage("done")]}) == "__end__"


@lesson
def test_tools_condition_ignores_tool_calls_that_are_not_in_the_last_message():
    answered = ToolMessage("r", tool_call_id="c1")
    assert tools_condition({"messages": [ASKS, answered]}) == "__end__"
    assert tools_condition({"messages": [ASKS, HumanMessage("never mind")]}) == "__end__"


@lesson
def test_tools_condition_accepts_a_bare_list():
    assert tools_condition([HumanMessage("q"), ASKS]) == "tools"


@lesson
def test_tools_condition_on_an_empty_conversation_raises():
    expected = r"^No messages found in input state to tool_edge: \{'messages': \[\]\}$"
    with pytest.raises(ValueError, match=expected):
        tools_condition({"messages": []})


@lesson
def test_tools_condition_on_an_empty_bare_list_raises_index_error():
    with pytest.raises(IndexError, match="list index out of range"):
        tools_condition([])


@lesson
def test_tools_condition_declares_its_two_targets():
    assert typing.get_type_hints(tools_condition)["return"] == typing.Literal["tools", "__end__"]


@lesson
def test_a_tool_node_not_named_tools_fails_at_compile():
    expected = r"^At 'llm' node, 'tools_condition' branch found unknown target 'tools'$"
    with pytest.raises(ValueError, match=expected):
        build_loop(ScriptedChatModel(script=[]), make_city_tools(0), node_name="action")


@lesson
def test_a_path_map_lets_the_tool_node_have_another_name():
    tools = make_city_tools(0)
    model = ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools)
    graph = build_loop(model, tools, node_name="action", path_map={"tools": "action", END: END})
    assert run(graph.ainvoke(QUESTION))["messages"][-1].content == "Paris: sunny, 25 °C; Paris: the Louvre"


# -- the loop -----------------------------------------------------------------------------------
@lesson
def test_the_loop_runs_model_tools_model_and_stops_on_a_plain_answer():
    tools = make_city_tools(0)
    model = ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools)
    messages = run(build_loop(model, tools).ainvoke(QUESTION))["messages"]
    assert kinds(messages) == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage", "AIMessage"]
    assert [m.tool_call_id for m in messages[2:4]] == ["call_0_0", "call_0_1"]


@lesson
def test_the_graph_draws_conditional_edges_to_tools_and_end():
    tools = make_city_tools(0)
    source = build_loop(ScriptedChatModel(script=[]), tools).get_graph().draw_mermaid()
    for edge in ("llm -.-> __end__;", "llm -.-> tools;", "tools --> llm;", "__start__ --> llm;"):
        assert edge in source


def stream_loop(mode):
    """Everything the two-turn city loop streams in `stream_mode=mode`."""
    tools = make_city_tools(0)
    graph = build_loop(ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools), tools)

    async def collect():
        return [item async for item in graph.astream(QUESTION, stream_mode=mode)]

    return run(collect())


@lesson
def test_updates_stream_yields_one_item_per_hop():
    updates = stream_loop("updates")
    assert [list(u) for u in updates] == [["llm"], ["tools"], ["llm"]]
    assert kinds(updates[1]["tools"]["messages"]) == ["ToolMessage", "ToolMessage"]


@lesson
def test_messages_stream_streams_the_model_even_when_the_node_calls_ainvoke():
    events = stream_loop("messages")
    llm = [m for m, meta in events if meta["langgraph_node"] == "llm"]
    tool = [m for m, meta in events if meta["langgraph_node"] == "tools"]
    assert all(isinstance(m, AIMessageChunk) for m in llm) and len(llm) > 2
    assert kinds(tool) == ["ToolMessage", "ToolMessage"]
    first_turn = [m for m in llm if m.id == "scripted-0"]
    merged = first_turn[0]
    for chunk in first_turn[1:]:
        merged = merged + chunk
    assert [c["args"] for c in merged.tool_calls] == [{"city": "Paris"}, {"city": "Paris"}]


@lesson
def test_a_single_chunks_tool_calls_are_incomplete_and_the_sum_is_complete():
    """langgraph#4853: a chunk's `tool_calls` parses only its own fragment."""
    model = ScriptedChatModel(script=[BOTH]).bind_tools(make_city_tools(0))

    async def collect():
        return [c async for c in model.astream("q")]

    chunks = run(collect())
    first = {"name": "lookup_weather", "args": {}, "id": "call_0_0", "type": "tool_call"}
    assert chunks[0].tool_calls == [first]
    assert chunks[1].tool_calls == [{"name": "", "args": {}, "id": None, "type": "tool_call"}]
    assert chunks[2].tool_calls == []
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert merged.tool_calls == model.invoke("q").tool_calls


# -- recursion_limit ----------------------------------------------------------------------------
@lesson
def test_the_default_recursion_limit_is_10007_not_25():
    from langgraph._internal._config import DEFAULT_RECURSION_LIMIT

    assert DEFAULT_RECURSION_LIMIT == 10007


@lesson
def test_ensure_config_shows_the_default_recursion_limit_without_a_private_import():
    from langgraph.utils.config import ensure_config

    assert ensure_config()["recursion_limit"] == 10007


@lesson
def test_langchain_cores_recursion_limit_default_is_still_25():
    from langchain_core.runnables.config import DEFAULT_RECURSION_LIMIT

    assert DEFAULT_RECURSION_LIMIT == 25


class Count(typing.TypedDict):
    n: int


def thirty_steps():
    """A graph that counts to 30, one superstep per count."""
    builder = StateGraph(Count)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda state: END if state["n"] >= 30 else "step")
    return builder.compile()


@lesson
def test_a_graph_invoked_directly_gets_langgraphs_default_limit():
    assert thirty_steps().invoke({"n": 0}) == {"n": 30}


@lesson
def test_a_graph_inside_a_chain_gets_langchain_cores_25():
    from langchain_core.runnables import RunnableLambda

    chain = RunnableLambda(lambda x: x) | thirty_steps()
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        chain.invoke({"n": 0})
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        asyncio.run(chain.ainvoke({"n": 0}))


@lesson
def test_a_graph_inside_a_runnable_lambda_gets_langchain_cores_25():
    from langchain_core.runnables import RunnableLambda

    graph = thirty_steps()
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        RunnableLambda(lambda x: graph.invoke(x)).invoke({"n": 0})


@lesson
def test_a_graph_inside_a_tool_gets_langchain_cores_25_even_inside_a_toolnode():
    from langchain_core.tools import tool

    graph = thirty_steps()

    @tool
    def count_to_thirty() -> int:
        """Count to thirty with the counting graph."""
        return graph.invoke({"n": 0})["n"]

    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        count_to_thirty.invoke({})
    outer = StateGraph(MessagesState)
    outer.add_node("tools", ToolNode([count_to_thirty], handle_tool_errors=False))
    outer.add_edge(START, "tools")
    call = AIMessage("", tool_calls=[{"name": "count_to_thirty", "args": {}, "id": "c1"}])
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        outer.compile().invoke({"messages": [call]})  # the outer graph's own default is 10007


def _count_to_thirty_tool(seen_limits):
    from langchain_core.tools import tool
    from langgraph.config import get_config

    graph = thirty_steps()

    @tool
    def count_to_thirty() -> int:
        """Count to thirty with the counting graph."""
        seen_limits.append(get_config()["recursion_limit"])
        return graph.invoke({"n": 0})["n"]

    return count_to_thirty


COUNT_SCRIPT = [[{"name": "count_to_thirty", "args": {}}], "done"]


@lesson
def test_a_graph_inside_a_create_agent_tool_gets_the_agents_own_9999():
    from langchain.agents import create_agent

    seen: list[int] = []
    agent = create_agent(ScriptedChatModel(script=COUNT_SCRIPT), [_count_to_thirty_tool(seen)])
    assert agent.config["recursion_limit"] == 9999
    answer = agent.invoke(QUESTION)["messages"][2]
    assert (answer.content, seen) == ("30", [9999])


@lesson
def test_a_graph_inside_a_tool_of_the_hand_wired_loop_gets_langchain_cores_25():
    seen: list[int] = []
    tool = _count_to_thirty_tool(seen)
    loop = build_loop(ScriptedChatModel(script=COUNT_SCRIPT).bind_tools([tool]), [tool])
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        run(loop.ainvoke(QUESTION))
    assert seen == [25]


@lesson
def test_a_graph_inside_a_create_react_agent_tool_gets_langchain_cores_25():
    import warnings

    from langgraph.prebuilt import create_react_agent

    seen: list[int] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated (lesson 09)
        react = create_react_agent(ScriptedChatModel(script=COUNT_SCRIPT), [_count_to_thirty_tool(seen)])
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        react.invoke(QUESTION)
    assert seen == [25]


@lesson
def test_a_graph_run_through_its_own_batch_gets_langchain_cores_25():
    with pytest.raises(GraphRecursionError, match="Recursion limit of 25 reached"):
        thirty_steps().batch([{"n": 0}])
    assert thirty_steps().batch([{"n": 0}], {"recursion_limit": 50}) == [{"n": 30}]


@lesson
def test_a_limit_on_the_outermost_call_reaches_the_graph_inside():
    from langchain_core.runnables import RunnableLambda

    chain = RunnableLambda(lambda x: x) | thirty_steps()
    assert chain.invoke({"n": 0}, {"recursion_limit": 50}) == {"n": 30}


@lesson
def test_a_graph_run_by_a_graph_node_keeps_langgraphs_default():
    graph = thirty_steps()
    outer = StateGraph(Count)
    outer.add_node("call", lambda state: graph.invoke(state))
    outer.add_edge(START, "call")
    assert outer.compile().invoke({"n": 0}) == {"n": 30}


@lesson
def test_a_model_that_never_stops_hits_graph_recursion_error_after_limit_supersteps():
    tools = make_city_tools(0)
    again = [{"name": "lookup_weather", "args": {"city": "Paris"}}]
    graph = build_loop(ScriptedChatModel(script=[again] * 100).bind_tools(tools), tools)
    hops: list[str] = []

    async def collect():
        async for update in graph.astream(QUESTION, {"recursion_limit": 6}, stream_mode="updates"):
            hops.extend(update)

    expected = r"^Recursion limit of 6 reached without hitting a stop condition"
    with pytest.raises(GraphRecursionError, match=expected):
        run(collect())
    assert hops == ["llm", "tools"] * 3


@lesson
def test_cutting_the_loop_in_the_route_leaves_a_dangling_tool_call():
    tools = make_city_tools(0)
    again = [{"name": "lookup_weather", "args": {"city": "Paris"}}]
    stubborn = ScriptedChatModel(script=[again] * 100).bind_tools(tools)
    def route(state):
        return END if sum(isinstance(m, AIMessage) for m in state["messages"]) > 3 else tools_condition(state)

    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [stubborn.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", route)
    builder.add_edge("tools", "llm")
    messages = run(builder.compile().ainvoke(QUESTION))["messages"]
    assert unanswered_tool_calls(messages) == ["call_3_0"]


@lesson
def test_a_last_turn_without_tools_ends_with_every_call_answered():
    tools = make_city_tools(0)
    again = [{"name": "lookup_weather", "args": {"city": "Paris"}}]
    stubborn = ScriptedChatModel(script=[again] * 100).bind_tools(tools)
    wrap_up_model = ScriptedChatModel(script=[tool_results_summary] * 10)

    def after_tools(state):
        return "wrap_up" if sum(isinstance(m, AIMessage) for m in state["messages"]) >= 3 else "llm"

    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [stubborn.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools))
    builder.add_node("wrap_up", lambda state: {"messages": [wrap_up_model.invoke(state["messages"])]})
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_conditional_edges("tools", after_tools, ["llm", "wrap_up"])
    builder.add_edge("wrap_up", END)
    messages = run(builder.compile().ainvoke(QUESTION))["messages"]
    assert unanswered_tool_calls(messages) == []
    assert kinds(messages[-2:]) == ["ToolMessage", "AIMessage"]
    assert messages[-1].tool_calls == [] and messages[-1].content == "Paris: sunny, 25 °C"


# -- seed 004 §10 -------------------------------------------------------------------------------
@lesson
def test_an_unknown_tool_name_is_an_error_message_not_an_exception_even_with_errors_off():
    tools = make_city_tools(0)
    old = tools[0].model_copy(update={"name": "get_weather"})
    model = ScriptedChatModel(
        script=[[{"name": "get_weather", "args": {"city": "Paris"}}], tool_results_summary]
    ).bind_tools([old])
    messages = run(build_loop(model, tools, handle_tool_errors=False).ainvoke(QUESTION))["messages"]
    reply = messages[2]
    assert (reply.status, reply.content) == (
        "error", "Error: get_weather is not a valid tool, try one of [lookup_weather, lookup_attraction].")
    assert kinds(messages)[-1] == "AIMessage"  # the loop went back to the model


@lesson
def test_by_default_a_tool_exception_crashes_the_loop():
    traffic, tools = make_failing_tool(0), make_city_tools(0)
    calls = [{"name": "lookup_traffic", "args": {"city": "Paris"}}, BOTH[0]]
    model = ScriptedChatModel(script=[calls, tool_results_summary]).bind_tools([traffic, *tools])
    with pytest.raises(ConnectionError, match="^traffic service unreachable for Paris"):
        run(build_loop(model, [traffic, *tools]).ainvoke(QUESTION))


@lesson
def test_handle_tool_errors_true_keeps_the_loop_and_the_siblings_result():
    traffic, tools = make_failing_tool(0), make_city_tools(0)
    calls = [{"name": "lookup_traffic", "args": {"city": "Paris"}}, BOTH[0]]
    model = ScriptedChatModel(script=[calls, tool_results_summary]).bind_tools([traffic, *tools])
    graph = build_loop(model, [traffic, *tools], handle_tool_errors=True)
    messages = run(graph.ainvoke(QUESTION))["messages"]
    failed, kept = messages[2:4]
    assert (failed.status, failed.content) == (
        "error",
        "Error: ConnectionError('traffic service unreachable for Paris')\n Please fix your mistakes.",
    )
    assert (kept.status, kept.content) == ("success", "Paris: sunny, 25 °C")


# -- ChatOpenAI on the wire ---------------------------------------------------------------------
@pytest.fixture
def endpoint():
    with ScriptedOpenAIEndpoint([BOTH, tool_results_summary]) as running:
        yield running


@lesson
@pytest.mark.parametrize(("options", "expected"), [
    ({"model": "gpt-4o"}, None),
    ({"model": "gpt-5-pro"}, True),
    ({"model": "gpt-5-pro-2025-10-06"}, True),
    ({"model": "gpt-5.2-pro"}, True),
    ({"model": "gpt-5.4-pro"}, True),
    ({"model": "gpt-5.5-pro"}, True),
    ({"model": "gpt-5.6-sol"}, True),
    ({"model": "gpt-5.1-pro"}, None),
    ({"model": "o3-pro"}, None),
    ({"model": "o1-pro"}, None),
    ({"model": "gpt-5-codex"}, True),
    ({"model": "my-codex-model"}, True),
    ({"model": "gpt-6"}, None),
    ({"model": "gpt-oss:20b", "reasoning": {"effort": "low"}}, True),
    ({"model": "gpt-oss:20b", "include": ["reasoning.encrypted_content"]}, True),
    ({"model": "gpt-oss:20b", "truncation": "auto"}, True),
    ({"model": "gpt-oss:20b", "use_previous_response_id": True}, True),
    ({"model": "gpt-oss:20b", "output_version": "responses/v1"}, True),
    ({"model": "gpt-oss:20b", "context_management": [{"type": "compaction"}]}, True),
    ({"model": "GPT-5-PRO"}, None),  # the prefixes and "codex" are matched case-sensitively
    ({"model": "My-CODEX-model"}, None),
    ({"model": "gpt-oss:20b", "reasoning": {"effort": "low"}, "use_responses_api": False}, False),
])
def test_chatopenai_switches_to_the_responses_api_by_model_and_setting(options, expected):
    assert ChatOpenAI(api_key="unused", **options).use_responses_api is expected


@lesson
def test_a_responses_api_request_fails_on_a_chat_completions_only_server(endpoint):
    import openai

    switched = ChatOpenAI(model="gpt-oss:20b", reasoning={"effort": "low"}, base_url=endpoint.base_url,
                          api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError, match="no route POST /v1/responses"):
        switched.invoke("q")
    pinned = ChatOpenAI(model="gpt-oss:20b", reasoning_effort="low", base_url=endpoint.base_url,
                        api_key="unused", use_responses_api=False)
    pinned.bind_tools(make_city_tools(0)).invoke("q")
    assert endpoint.exchanges[-1].path.endswith("/chat/completions")


@lesson
def test_a_gpt_6_name_sends_a_request_with_tools_to_the_responses_api(endpoint):
    import openai

    gpt6 = ChatOpenAI(model="gpt-6", base_url=endpoint.base_url, api_key="unused", max_retries=0)
    assert gpt6.use_responses_api is None
    with pytest.raises(openai.NotFoundError, match="no route POST /v1/responses"):
        gpt6.bind_tools(make_city_tools(0)).invoke("q")
    endpoint.model = ScriptedChatModel(script=["plain prose"])
    assert gpt6.invoke("q").content == "plain prose"  # without tools: Chat Completions
    assert endpoint.exchanges[-1].path.endswith("/chat/completions")


@lesson
def test_the_gpt_6_check_lower_cases_the_name(endpoint):
    import openai

    gpt6 = ChatOpenAI(model="GPT-6", base_url=endpoint.base_url, api_key="unused", max_retries=0)
    assert gpt6.use_responses_api is None
    with pytest.raises(openai.NotFoundError, match="no route POST /v1/responses"):
        gpt6.bind_tools(make_city_tools(0)).invoke("q")


@lesson
@pytest.mark.parametrize("per_request", [
    {"tools": [{"type": "web_search_preview"}]},
    {"context_management": [{"type": "compaction"}]},
    {"include": ["reasoning.encrypted_content"]},
    {"previous_response_id": "resp_1"},
    {"reasoning": {"effort": "low"}},
    {"text": {"verbosity": "low"}},
    {"truncation": "auto"},
], ids=["builtin-tool", "context_management", "include", "previous_response_id", "reasoning", "text",
        "truncation"])
def test_a_request_with_a_builtin_tool_or_a_responses_only_argument_goes_to_the_responses_api(
        endpoint, per_request):
    import openai

    client = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused", max_retries=0)
    assert client.use_responses_api is None  # nothing settled when the client was made
    endpoint.model = ScriptedChatModel(script=["plain prose"] * 2)
    assert client.invoke("q").content == "plain prose"
    assert endpoint.exchanges[-1].path.endswith("/chat/completions")
    with pytest.raises(openai.NotFoundError, match="no route POST /v1/responses"):
        if "tools" in per_request:
            client.bind_tools(per_request["tools"]).invoke("q")
        else:
            client.invoke("q", **per_request)


@lesson
def test_tool_choice_none_keeps_the_tools_in_the_request_and_forbids_calls(endpoint):
    endpoint.model = ScriptedChatModel(script=["plain prose"])
    tools = make_city_tools(0)
    chat(endpoint).bind_tools(tools, tool_choice="none").invoke("q")
    request = endpoint.requests[0]
    assert request["tool_choice"] == "none"
    assert request["tools"] == [convert_to_openai_tool(t) for t in tools]


def chat(endpoint):
    return ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused", use_responses_api=False)


@lesson
def test_chatopenai_sends_bound_tools_as_the_tools_array(endpoint):
    tools = make_city_tools(0)
    chat(endpoint).bind_tools(tools).invoke("q")
    request = endpoint.requests[0]
    assert sorted(request) == ["messages", "model", "stream", "tools"]
    assert request["tools"] == [convert_to_openai_tool(t) for t in tools]


@lesson
def test_chatopenai_without_bind_tools_sends_no_tools_key(endpoint):
    endpoint.model = ScriptedChatModel(script=["plain prose"])
    assert chat(endpoint).invoke("q").content == "plain prose"
    assert sorted(endpoint.requests[0]) == ["messages", "model", "stream"]


@lesson
def test_chatopenai_parses_json_string_arguments_into_args(endpoint):
    reply = chat(endpoint).bind_tools(make_city_tools(0)).invoke("q")
    wire = endpoint.exchanges[0].response["choices"][0]["message"]["tool_calls"][0]
    assert isinstance(wire["function"]["arguments"], str)
    assert reply.tool_calls[0]["args"] == {"city": "Paris"}


@lesson
def test_chatopenai_sends_tool_results_back_as_role_tool_with_the_call_id(endpoint):
    tools = make_city_tools(0)
    run(build_loop(chat(endpoint).bind_tools(tools), tools).ainvoke(QUESTION))
    second = endpoint.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
    assert second[1]["content"] is None
    assert [c["id"] for c in second[1]["tool_calls"]] == [m["tool_call_id"] for m in second[2:]]


@lesson
def test_chatopenai_streams_under_messages_mode(endpoint):
    tools = make_city_tools(0)
    graph = build_loop(chat(endpoint).bind_tools(tools), tools)

    async def collect():
        return [e async for e in graph.astream(QUESTION, stream_mode="messages")]

    run(collect())
    assert [r["stream"] for r in endpoint.requests] == [True, True]
