"""Library behaviour taught in notebooks/12_streaming_and_stopping.ipynb.

What a running agent shows and does around its tools: each stream mode's view of a tools step,
progress written from inside a tool, an inner chat model's tokens, and the four ways a run stops
(the step limit, `return_direct`, `ToolCallLimitMiddleware`, one call per turn). Each test pins
one statement of the lesson, in the form the lesson states it.
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, TypedDict

import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.errors import GraphRecursionError
from langgraph.managed import RemainingSteps
from langgraph.types import Command

from helpers.graphs import tool_loop
from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel

lesson = pytest.mark.lesson("12_streaming_and_stopping")
GO = {"messages": [HumanMessage("go")]}


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool
def set_flag(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Set a flag in the state (answers its call with a Command)."""
    return Command(update={"messages": [ToolMessage("flag set", tool_call_id=tool_call_id)]})


def _calls(*names_and_args):
    return [{"name": name, "args": args} for name, args in names_and_args]


MIXED = [_calls(("lookup", {"query": "Paris"}), ("set_flag", {})), "done"]
PLAIN = [_calls(("lookup", {"query": "Paris"}), ("lookup", {"query": "Rome"})), "done"]
FOREVER = [_calls(("lookup", {"query": f"page {i}"})) for i in range(40)]


def _loop(script, tools):
    return tool_loop(ScriptedChatModel(script=script).bind_tools(tools), tools)


def _react(model, tools, **options):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, **options)


def _updates(graph, node="tools"):
    return [update[node] for update in graph.stream(GO, stream_mode="updates") if node in update]


# -- 1. stream modes ---------------------------------------------------------------------------
@lesson
def test_a_batch_with_a_command_streams_its_tools_update_as_a_list_of_per_call_updates():
    (update,) = _updates(_loop(MIXED, [lookup, set_flag]))
    assert isinstance(update, list) and len(update) == 2
    assert [u["messages"][0].content for u in update] == ["found Paris", "flag set"]


@lesson
def test_a_batch_of_plain_results_streams_one_dict_update():
    (update,) = _updates(_loop(PLAIN, [lookup]))
    assert isinstance(update, dict)
    assert [m.content for m in update["messages"]] == ["found Paris", "found Rome"]


@lesson
def test_create_agent_streams_one_tools_update_per_call():
    from langchain.agents import create_agent

    updates = _updates(create_agent(ScriptedChatModel(script=MIXED), [lookup, set_flag]))
    assert len(updates) == 2 and all(isinstance(u, dict) and len(u["messages"]) == 1 for u in updates)
    assert sorted(u["messages"][0].content for u in updates) == ["flag set", "found Paris"]


@lesson
def test_messages_mode_emits_the_tool_messages_tagged_with_the_tools_node():
    seen = [(meta["langgraph_node"], type(m).__name__, m.content)
            for m, meta in _loop(PLAIN, [lookup]).stream(GO, stream_mode="messages") if m.content]
    assert seen == [("tools", "ToolMessage", "found Paris"), ("tools", "ToolMessage", "found Rome"),
                    ("llm", "AIMessageChunk", "done")]


@lesson
@pytest.mark.parametrize("build", ["tool_loop", "create_agent", "create_react_agent"])
def test_messages_mode_emits_the_tool_message_inside_a_commands_update(build):
    """A tool returning `Command(update={"messages": [ToolMessage(...)]})` still has its ToolMessage sent in
    "messages" mode, tagged with the tools node, beside a plain tool's (langgraph#4372, earlier #4111,
    reported it missing). Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain 1.5.2."""
    from langchain.agents import create_agent

    graph = {"tool_loop": lambda: _loop(MIXED, [lookup, set_flag]),
             "create_agent": lambda: create_agent(ScriptedChatModel(script=MIXED), [lookup, set_flag]),
             "create_react_agent": lambda: _react(ScriptedChatModel(script=MIXED), [lookup, set_flag]),
             }[build]()
    seen = sorted((meta["langgraph_node"], m.content) for m, meta in graph.stream(GO, stream_mode="messages")
                  if isinstance(m, ToolMessage))
    assert seen == [("tools", "flag set"), ("tools", "found Paris")]


def _answering_graph(copy_the_answer):
    from langgraph.graph import START, MessagesState, StateGraph

    def answer(state):
        message = ScriptedChatModel(script=["Hello there"]).invoke(state["messages"])
        return {"messages": [AIMessage(message.content) if copy_the_answer else message]}

    return StateGraph(MessagesState).add_node(answer).add_edge(START, "answer").compile()


@lesson
def test_messages_mode_does_not_send_again_a_returned_message_whose_tokens_it_streamed():
    stream = _answering_graph(False).stream(GO, stream_mode="messages")
    seen = [(type(m).__name__, m.content) for m, _ in stream if m.content]
    assert seen == [("AIMessageChunk", "Hello "), ("AIMessageChunk", "there")]


@lesson
def test_messages_mode_sends_a_returned_copy_of_the_answer_whole_after_its_tokens():
    stream = _answering_graph(True).stream(GO, stream_mode="messages")
    seen = [(type(m).__name__, m.content) for m, _ in stream if m.content]
    assert seen == [("AIMessageChunk", "Hello "), ("AIMessageChunk", "there"), ("AIMessage", "Hello there")]


# -- 2. progress from inside a tool ------------------------------------------------------------
@tool
def crawl(site: str) -> str:
    """Crawl a site, reporting each page."""
    from langgraph.config import get_stream_writer

    write = get_stream_writer()
    for page in (1, 2, 3):
        write({"site": site, "page": page})
    return f"crawled {site}: 3 pages"


CRAWL = [_calls(("crawl", {"site": "example.org"})), "done"]


@lesson
def test_custom_chunks_from_a_tool_arrive_before_the_tools_update():
    events = [(mode, chunk if mode == "custom" else next(iter(chunk)))
              for mode, chunk in _loop(CRAWL, [crawl]).stream(GO, stream_mode=["updates", "custom"])]
    progress = [("custom", {"site": "example.org", "page": page}) for page in (1, 2, 3)]
    assert events == [("updates", "llm"), *progress, ("updates", "tools"), ("updates", "llm")]


@lesson
def test_the_stream_writer_is_a_no_op_without_custom_mode_and_never_touches_the_state():
    result = _loop(CRAWL, [crawl]).invoke(GO)
    assert result["messages"][-2].content == "crawled example.org: 3 pages"
    assert set(result) == {"messages"}


@lesson
def test_get_stream_writer_outside_a_graph_run_raises():
    with pytest.raises(KeyError, match="__pregel_runtime"):
        crawl.invoke({"site": "example.org"})
    with pytest.raises(RuntimeError, match="outside of a runnable context"):
        crawl.func("example.org")


@lesson
def test_a_tool_with_a_fallback_writer_runs_alone_and_still_streams_in_a_graph():
    from langgraph.config import get_stream_writer

    def progress_writer():
        try:
            return get_stream_writer()
        except (KeyError, RuntimeError):
            return lambda chunk: None

    @tool
    def crawl_anywhere(site: str) -> str:
        """Crawl a site, reporting each page."""
        write = progress_writer()
        for page in (1, 2, 3):
            write({"site": site, "page": page})
        return f"crawled {site}: 3 pages"

    assert crawl_anywhere.invoke({"site": "example.org"}) == "crawled example.org: 3 pages"
    assert crawl_anywhere.func("example.org") == "crawled example.org: 3 pages"
    graph = _loop([_calls(("crawl_anywhere", {"site": "example.org"})), "done"], [crawl_anywhere])
    pages = [{"site": "example.org", "page": p} for p in (1, 2, 3)]
    assert list(graph.stream(GO, stream_mode="custom")) == pages


@lesson
def test_an_inner_chat_models_tokens_stream_under_the_tools_node_unless_tagged_nostream():
    inner = ScriptedChatModel(script=["a short summary"])

    @tool
    def summarise(url: str) -> str:
        """Summarise a page."""
        return inner.invoke(f"Summarise {url}").content

    @tool
    def summarise_quietly(url: str) -> str:
        """Summarise a page quietly."""
        return inner.with_config(tags=["nostream"]).invoke(f"Summarise {url}").content

    def streamed(tool_):
        graph = _loop([_calls((tool_.name, {"url": "u"})), "ok"], [tool_])
        return [(meta["langgraph_node"], type(m)) for m, meta in graph.stream(GO, stream_mode="messages")
                if m.content]

    loud = streamed(summarise)
    assert ("tools", AIMessageChunk) in loud and loud.index(("tools", AIMessageChunk)) < loud.index(
        ("tools", ToolMessage))
    assert streamed(summarise_quietly) == [("tools", ToolMessage), ("llm", AIMessageChunk)]


# -- 3. the step limit -------------------------------------------------------------------------
def _at_limit(graph, limit):
    try:
        return graph.invoke(GO, {"recursion_limit": limit})["messages"][-1]
    except GraphRecursionError:
        return None


@lesson
@pytest.mark.parametrize("limit", [4, 5, 6, 7])
def test_create_agent_raises_at_the_step_limit(limit):
    from langchain.agents import create_agent

    assert _at_limit(create_agent(ScriptedChatModel(script=FOREVER), [lookup]), limit) is None


@lesson
@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("limit", [4, 5, 6, 7])
def test_create_react_agent_apologises_at_an_even_limit_and_raises_at_an_odd_one(limit, version):
    # model and tools one step each (no pre or post model hook): the model runs on the odd steps
    last = _at_limit(_react(ScriptedChatModel(script=FOREVER), [lookup], version=version), limit)
    if limit % 2:
        assert last is None
    else:
        assert isinstance(last, AIMessage)
        assert last.content == "Sorry, need more steps to process this request."


@lesson
def test_nodes_that_run_at_once_share_one_step_create_agents_tools_tasks_of_one_turn():
    from langchain.agents import create_agent

    agent = create_agent(ScriptedChatModel(script=PLAIN), [lookup])
    steps = [(event["step"], event["payload"]["name"])
             for event in agent.stream(GO, stream_mode="debug") if event["type"] == "task"]
    assert steps == [(1, "model"), (2, "tools"), (2, "tools"), (3, "model")]


def _no_change(state):
    return {}


@lesson
@pytest.mark.parametrize("limit", [3, 4, 5, 6, 7, 8, 9])
def test_with_a_pre_model_hook_create_react_agent_apologises_only_when_its_model_runs_on_step_l_minus_1(limit):  # noqa: E501
    # hook on steps 1, 4, 7, ..., model on 2, 5, 8, ..., tools on 3, 6, 9, ...: the model runs on
    # step L - 1 exactly when L is a multiple of 3
    last = _at_limit(_react(ScriptedChatModel(script=FOREVER), [lookup], pre_model_hook=_no_change), limit)
    if limit % 3 == 0:
        assert last is not None and last.content == "Sorry, need more steps to process this request."
    else:
        assert last is None


@lesson
@pytest.mark.parametrize("limit", [3, 4, 5, 6, 7, 8, 9])
def test_with_a_post_model_hook_create_react_agent_raises_at_every_limit(limit):
    assert _at_limit(_react(ScriptedChatModel(script=FOREVER), [lookup], post_model_hook=_no_change),
                     limit) is None


class CountingState(TypedDict):
    n: Annotated[int, operator.add]
    remaining_steps: RemainingSteps


LOOP = (("a", "b"), ("b", "a"))
"""a → b → a → … : one node a step, until the limit."""


def _counting_graph(seen, edges=LOOP):
    """Nodes a, b and c, each recording (name, remaining_steps); START → a, then `edges`."""
    from langgraph.graph import START, StateGraph

    def node(name):
        def run(state):
            seen.append((name, state["remaining_steps"]))
            return {"n": 1}
        return run

    builder = StateGraph(CountingState)
    for name in ("a", "b", "c"):
        builder.add_node(name, node(name))
    builder.add_edge(START, "a")
    for source, target in edges:
        builder.add_edge(source, target)
    return builder.compile()


@lesson
def test_remaining_steps_counts_down_one_per_step_and_a_run_may_not_reach_its_limit():
    seen = []
    with pytest.raises(GraphRecursionError):
        _counting_graph(seen).invoke({"n": 0}, {"recursion_limit": 5})
    assert [left for _, left in seen] == [4, 3, 2, 1, 0]


@lesson
def test_a_run_that_reaches_step_l_raises_even_when_that_step_would_have_finished_it():
    from langgraph.graph import END

    seen = []
    graph = _counting_graph(seen, edges=(("a", "b"), ("b", "c"), ("c", END)))
    with pytest.raises(GraphRecursionError):
        graph.invoke({"n": 0}, {"recursion_limit": 3})
    assert seen == [("a", 2), ("b", 1), ("c", 0)]  # step L ran, and its run raised all the same
    seen.clear()
    graph.invoke({"n": 0}, {"recursion_limit": 4})
    assert seen == [("a", 3), ("b", 2), ("c", 1)]


@lesson
def test_nodes_that_run_in_the_same_step_see_the_same_remaining_steps():
    seen = []
    fan_out = _counting_graph(seen, edges=(("a", "b"), ("a", "c"), ("b", "a")))  # b and c share a step
    with pytest.raises(GraphRecursionError):
        fan_out.invoke({"n": 0}, {"recursion_limit": 4})
    assert sorted(seen) == sorted([("a", 3), ("b", 2), ("c", 2), ("a", 1), ("b", 0), ("c", 0)])


@lesson
def test_at_an_odd_limit_create_react_agent_apologises_and_the_run_still_raises():
    from langgraph.checkpoint.memory import InMemorySaver

    agent = _react(ScriptedChatModel(script=FOREVER), [lookup], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 5}
    with pytest.raises(GraphRecursionError):
        agent.invoke(GO, config)
    messages = agent.get_state(config).values["messages"]
    assert messages[-1].content == "Sorry, need more steps to process this request."
    assert unanswered_tool_calls(messages) == []


@lesson
def test_create_agent_at_an_odd_limit_leaves_a_checkpointed_thread_with_an_unanswered_call():
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    agent = create_agent(ScriptedChatModel(script=FOREVER), [lookup], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 5}
    with pytest.raises(GraphRecursionError):
        agent.invoke(GO, config)
    assert unanswered_tool_calls(agent.get_state(config).values["messages"]) == ["call_2_0"]


# -- 4. return_direct --------------------------------------------------------------------------
@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the user the final answer."""
    return text


DIRECT_TURNS = {
    "direct alone": _calls(("final_answer", {"text": "42"})),
    "direct + lookup": _calls(("final_answer", {"text": "42"}), ("lookup", {"query": "x"})),
    "two direct": _calls(("final_answer", {"text": "a"}), ("final_answer", {"text": "b"})),
}


def _direct_run(build, turn):
    agent = build(ScriptedChatModel(script=[turn, "the model speaks again"]), [final_answer, lookup])
    return agent.invoke(GO)["messages"]


@lesson
@pytest.mark.parametrize("label", list(DIRECT_TURNS))
def test_create_react_agent_stops_when_any_call_of_the_batch_is_return_direct(label):
    messages = _direct_run(_react, DIRECT_TURNS[label])
    assert isinstance(messages[-1], ToolMessage)
    assert sum(isinstance(m, ToolMessage) for m in messages) == len(DIRECT_TURNS[label])  # every call ran


@lesson
@pytest.mark.parametrize("label", list(DIRECT_TURNS))
def test_create_agent_stops_only_when_every_call_of_the_batch_is_return_direct(label):
    from langchain.agents import create_agent

    messages = _direct_run(create_agent, DIRECT_TURNS[label])
    assert sum(isinstance(m, ToolMessage) for m in messages) == len(DIRECT_TURNS[label])  # every call ran
    if label == "direct + lookup":
        assert isinstance(messages[-1], AIMessage) and messages[-1].content == "the model speaks again"
    else:
        assert isinstance(messages[-1], ToolMessage)


# -- 5. ToolCallLimitMiddleware ----------------------------------------------------------------
def _budget_run(exit_behavior=None, **limits):
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware

    ran = []

    @tool
    def fetch(query: str) -> str:
        """Fetch a page."""
        ran.append(query)
        return f"fetched {query}"

    script = [_calls(("fetch", {"query": "a"}), ("fetch", {"query": "b"})), _calls(("fetch", {"query": "c"})),
              "final answer"]
    options = {"exit_behavior": exit_behavior} if exit_behavior else {}
    agent = create_agent(ScriptedChatModel(script=script), [fetch],
                         middleware=[ToolCallLimitMiddleware(**limits, **options)])
    return agent.invoke(GO)["messages"], ran


@lesson
@pytest.mark.parametrize("exit_behavior", [None, "continue"])
def test_tool_call_limit_continue_blocks_calls_over_budget_and_lets_the_model_go_on(exit_behavior):
    messages, ran = _budget_run(exit_behavior, run_limit=1)
    assert ran == ["a"]
    errors = [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert [m.tool_call_id for m in errors] == ["call_0_1", "call_1_0"]
    assert all("Tool call limit exceeded" in m.content for m in errors)
    assert messages[-1].content == "final answer" and unanswered_tool_calls(messages) == []


@lesson
def test_tool_call_limit_end_runs_nothing_of_the_crossing_turn_and_answers_every_call():
    messages, ran = _budget_run("end", run_limit=1)
    assert ran == []
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert {m.tool_call_id for m in tool_messages} == {"call_0_0", "call_0_1"}
    assert all(m.status == "error" for m in tool_messages)
    assert isinstance(messages[-1], AIMessage) and "run limit exceeded (2/1 calls)" in messages[-1].content
    assert unanswered_tool_calls(messages) == []


@lesson
def test_tool_call_limit_error_raises_before_any_tool_of_that_turn_runs_and_leaves_its_calls_unanswered():
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware
    from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
    from langgraph.checkpoint.memory import InMemorySaver

    ran = []

    @tool
    def fetch(query: str) -> str:
        """Fetch a page."""
        ran.append(query)
        return f"fetched {query}"

    script = [_calls(("fetch", {"query": "a"}), ("fetch", {"query": "b"})), "final answer"]
    agent = create_agent(ScriptedChatModel(script=script), [fetch], checkpointer=InMemorySaver(),
                         middleware=[ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")])
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ToolCallLimitExceededError, match=r"run limit exceeded \(2/1 calls\)"):
        agent.invoke(GO, config)
    assert ran == []
    assert unanswered_tool_calls(agent.get_state(config).values["messages"]) == ["call_0_0", "call_0_1"]


@lesson
def test_a_thread_limit_counts_calls_across_runs_of_one_thread():
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    ran = []

    @tool
    def fetch(query: str) -> str:
        """Fetch a page."""
        ran.append(query)
        return f"fetched {query}"

    script = [_calls(("fetch", {"query": "x"})), "one", _calls(("fetch", {"query": "y"})), "two"]
    agent = create_agent(ScriptedChatModel(script=script), [fetch],
                         middleware=[ToolCallLimitMiddleware(thread_limit=1)], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("first")]}, thread)
    second = agent.invoke({"messages": [HumanMessage("second")]}, thread)["messages"]
    assert ran == ["x"]
    assert second[-2].status == "error" and "Tool call limit exceeded" in second[-2].content


# -- 6. parallel_tool_calls ---------------------------------------------------------------------
@lesson
def test_parallel_tool_calls_false_is_a_field_of_the_request_chatopenai_sends():
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([_calls(("lookup", {"query": "Paris"}))]) as endpoint:
        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False)
        llm.bind_tools([lookup], parallel_tool_calls=False).invoke("Weather in Paris?")
        llm.bind_tools([lookup]).invoke("Weather in Paris?")
        first, second = endpoint.requests
    assert first["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in second


@lesson
def test_toolnode_runs_every_call_a_server_returns_despite_parallel_tool_calls_false():
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    two = [_calls(("lookup", {"query": "the city"}), ("lookup", {"query": "its weather"})), "done"]
    with ScriptedOpenAIEndpoint(two) as endpoint:  # a server that ignores the field
        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False)
        graph = tool_loop(llm.bind_tools([lookup], parallel_tool_calls=False), [lookup])
        messages = graph.invoke(GO)["messages"]
        assert endpoint.requests[0]["parallel_tool_calls"] is False
    assert len(messages[1].tool_calls) == 2
    answers = [m.content for m in messages if isinstance(m, ToolMessage)]
    assert answers == ["found the city", "found its weather"]


# -- 3. (cont.) the limit an agent runs with when none is passed -------------------------------
@lesson
def test_create_agent_binds_a_recursion_limit_of_9999_and_create_react_agent_binds_none():
    from langchain.agents import create_agent

    assert create_agent(ScriptedChatModel(script=["hi"]), [lookup]).config["recursion_limit"] == 9999
    assert _react(ScriptedChatModel(script=["hi"]), [lookup]).config is None
    with pytest.raises(GraphRecursionError):  # a limit passed at invoke wins over the bound one
        create_agent(ScriptedChatModel(script=FOREVER), [lookup]).invoke(GO, {"recursion_limit": 4})


@lesson
def test_each_before_or_after_model_hook_takes_a_step_per_turn_and_a_wrap_model_call_none():
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware, before_model, wrap_model_call

    @wrap_model_call
    def passthrough(request, handler):
        return handler(request)

    @before_model
    def look(state, runtime):
        return None

    def turns(middleware, limit):
        agent = create_agent(ScriptedChatModel(script=FOREVER), [lookup], middleware=middleware)
        count = 0
        with pytest.raises(GraphRecursionError):
            for update in agent.stream(GO, {"recursion_limit": limit}, stream_mode="updates"):
                count += "model" in update
        return count

    hook = ToolCallLimitMiddleware(run_limit=100)  # one after_model hook
    at_12 = [turns([], 12), turns([passthrough], 12), turns([hook], 12), turns([look, hook], 12)]
    assert at_12 == [6, 6, 4, 3]
    assert [turns([], 13), turns([hook], 13)] == [7, 5]


# -- 6. (cont.) parallel_tool_calls through the prebuilt agents --------------------------------
def _parallel_flag_sent(build):
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    with ScriptedOpenAIEndpoint([_calls(("lookup", {"query": "Paris"})), "done"]) as endpoint:
        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False)
        build(llm).invoke(GO)
        return [request.get("parallel_tool_calls", "not sent") for request in endpoint.requests]


@lesson
def test_create_agent_drops_parallel_tool_calls_bound_on_its_model_and_create_react_agent_keeps_it():
    from langchain.agents import create_agent

    def bound(llm):
        return llm.bind_tools([lookup], parallel_tool_calls=False)

    assert _parallel_flag_sent(lambda llm: create_agent(bound(llm), [lookup])) == ["not sent", "not sent"]
    assert _parallel_flag_sent(lambda llm: _react(bound(llm), [lookup])) == [False, False]


@lesson
def test_a_wrap_model_call_middleware_setting_model_settings_sends_parallel_tool_calls_false():
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_model_call

    @wrap_model_call
    def one_call_per_turn(request, handler):
        settings = {**request.model_settings, "parallel_tool_calls": False}
        return handler(request.override(model_settings=settings))

    sent = _parallel_flag_sent(lambda llm: create_agent(llm, [lookup], middleware=[one_call_per_turn]))
    assert sent == [False, False]


@lesson
def test_create_agent_sends_parallel_tool_calls_false_set_in_the_clients_model_kwargs():
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    def build(llm):
        client = ChatOpenAI(model="gpt-4o", base_url=llm.openai_api_base, api_key="unused",
                            use_responses_api=False, model_kwargs={"parallel_tool_calls": False})
        return create_agent(client, [lookup])

    assert _parallel_flag_sent(build) == [False, False]


# -- 7. deep dive: the tools stream mode, an agent inside a tool --------------------------------
def _crawl_with_deltas():
    @tool
    def crawl_with_deltas(site: str, runtime: ToolRuntime) -> str:
        """Crawl a site, streaming each page on the tools channel."""
        for page in (1, 2):
            runtime.emit_output_delta({"page": page})
        return f"crawled {site}: 2 pages"

    return crawl_with_deltas


@lesson
def test_the_tools_stream_mode_reports_each_calls_start_deltas_and_finish_or_error():
    crawl_with_deltas = _crawl_with_deltas()

    @tool
    def crawl_down(site: str) -> str:
        """A crawler whose service is down."""
        raise ConnectionError("crawler is down")

    graph = _loop([_calls(("crawl_with_deltas", {"site": "a"}), ("crawl_down", {"site": "b"})), "done"],
                  [crawl_with_deltas, crawl_down])
    events: dict[str, list] = {}
    with pytest.raises(ConnectionError):
        for event in graph.stream(GO, stream_mode="tools"):
            events.setdefault(event["tool_call_id"], []).append(event)
    assert [e["event"] for e in events["call_0_0"]] == [
        "tool-started", "tool-output-delta", "tool-output-delta", "tool-finished"]
    assert [e["delta"] for e in events["call_0_0"][1:3]] == [{"page": 1}, {"page": 2}]
    assert events["call_0_0"][0]["tool_name"] == "crawl_with_deltas"
    assert [e["event"] for e in events["call_0_1"]] == ["tool-started", "tool-error"]
    assert events["call_0_1"][1]["message"] == "crawler is down"


@lesson
def test_tool_error_is_streamed_also_when_toolnode_answers_the_error_and_the_run_goes_on():
    @tool
    def crawl_down(site: str) -> str:
        """A crawler whose service is down."""
        raise ConnectionError("crawler is down")

    graph = tool_loop(ScriptedChatModel(script=[_calls(("crawl_down", {"site": "b"})), "done"])
                      .bind_tools([crawl_down]), [crawl_down], handle_tool_errors=True)
    events, last = [], None
    for mode, chunk in graph.stream(GO, stream_mode=["tools", "values"]):
        if mode == "tools":
            events.append(chunk["event"])
        else:
            last = chunk["messages"]
    assert events == ["tool-started", "tool-error"]
    assert [m.status for m in last if isinstance(m, ToolMessage)] == ["error"]
    assert isinstance(last[-1], AIMessage) and last[-1].content == "done"


@lesson
def test_the_stream_mode_type_hint_does_not_list_tools_yet_although_the_stream_accepts_it():
    from typing import get_args

    from langgraph.types import StreamMode

    assert "tools" not in get_args(StreamMode)
    graph = _loop([_calls(("lookup", {"query": "x"})), "done"], [lookup])
    events = [event["event"] for event in graph.stream(GO, stream_mode="tools")]
    assert events == ["tool-started", "tool-finished"]


@lesson
def test_emit_output_delta_is_a_no_op_without_the_tools_stream_mode():
    crawl_with_deltas = _crawl_with_deltas()
    graph = _loop([_calls(("crawl_with_deltas", {"site": "a"})), "done"], [crawl_with_deltas])
    assert graph.invoke(GO)["messages"][-2].content == "crawled a: 2 pages"
    chunks = list(graph.stream(GO, stream_mode="custom"))
    assert chunks == []


@lesson
def test_a_tool_taking_a_runtime_invoked_alone_needs_a_tool_runtime_passed():
    from pydantic import ValidationError

    crawl_with_deltas = _crawl_with_deltas()
    with pytest.raises(ValidationError, match=r"runtime\n  Field required"):
        crawl_with_deltas.invoke({"site": "a"})
    runtime = ToolRuntime(state={}, context=None, config={}, stream_writer=lambda chunk: None,
                          tool_call_id="test-call", store=None)
    assert crawl_with_deltas.invoke({"site": "a", "runtime": runtime}) == "crawled a: 2 pages"


def _crawl_anywhere_with_deltas():
    @tool
    def crawl_anywhere_with_deltas(site: str, runtime: ToolRuntime = None) -> str:
        """Crawl a site, streaming each page on the tools channel when a tools node runs it."""
        for page in (1, 2):
            if runtime is not None:
                runtime.emit_output_delta({"page": page})
        return f"crawled {site}: 2 pages, runtime given: {runtime is not None}"

    return crawl_anywhere_with_deltas


@lesson
def test_a_runtime_defaulting_to_none_stays_out_of_the_models_schema_and_lets_the_tool_run_alone():
    from langchain_core.utils.function_calling import convert_to_openai_tool

    crawl_ = _crawl_anywhere_with_deltas()
    assert list(crawl_.tool_call_schema.model_json_schema()["properties"]) == ["site"]
    assert list(convert_to_openai_tool(crawl_)["function"]["parameters"]["properties"]) == ["site"]
    assert crawl_.invoke({"site": "a"}) == "crawled a: 2 pages, runtime given: False"


@lesson
def test_a_runtime_defaulting_to_none_is_still_injected_by_toolnode_and_its_deltas_stream():
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    graph = StateGraph(MessagesState).add_node("tools", ToolNode([_crawl_anywhere_with_deltas()])) \
        .add_edge(START, "tools").compile()
    call = AIMessage("", tool_calls=[{"name": "crawl_anywhere_with_deltas", "args": {"site": "a"},
                                      "id": "test-call"}])
    deltas, answers = [], []
    for mode, chunk in graph.stream({"messages": [call]}, stream_mode=["tools", "updates"]):
        if mode == "tools" and chunk["event"] == "tool-output-delta":
            deltas.append(chunk["delta"])
        elif mode == "updates":
            answers += [m.content for m in chunk["tools"]["messages"]]
    assert deltas == [{"page": 1}, {"page": 2}]
    assert answers == ["crawled a: 2 pages, runtime given: True"]


@lesson
def test_a_hand_built_tool_runtimes_stream_writer_receives_no_output_delta():
    received = []
    runtime = ToolRuntime(state={}, context=None, config={}, stream_writer=received.append,
                          tool_call_id="test-call", store=None)
    assert _crawl_with_deltas().invoke({"site": "a", "runtime": runtime}) == "crawled a: 2 pages"
    assert received == []


@lesson
def test_a_one_node_toolnode_graph_streamed_in_tools_mode_carries_each_delta():
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    graph = StateGraph(MessagesState).add_node("tools", ToolNode([_crawl_with_deltas()])) \
        .add_edge(START, "tools").compile()
    call = AIMessage("", tool_calls=[{"name": "crawl_with_deltas", "args": {"site": "a"}, "id": "test-call"}])
    events = list(graph.stream({"messages": [call]}, stream_mode="tools"))
    assert [e["delta"] for e in events if e["event"] == "tool-output-delta"] == [{"page": 1}, {"page": 2}]
    assert {e["tool_call_id"] for e in events} == {"test-call"}


def _research_loop():
    from langchain.agents import create_agent

    inner_agent = create_agent(ScriptedChatModel(script=[_calls(("crawl", {"site": "x"})), "inner summary"]),
                               [crawl])

    @tool
    def research(topic: str) -> str:
        """Delegate the research to an agent."""
        return inner_agent.invoke({"messages": [HumanMessage(topic)]})["messages"][-1].content

    return _loop([_calls(("research", {"topic": "t"})), "ok"], [research])


@lesson
def test_under_subgraphs_an_inner_and_an_outer_call_share_a_tool_call_id_and_differ_by_namespace():
    graph = _research_loop()
    flat = [(event["tool_call_id"], event["event"]) for event in graph.stream(GO, stream_mode="tools")]
    assert flat == [("call_0_0", "tool-started"), ("call_0_0", "tool-finished")]
    nested = [(bool(namespace), event["tool_call_id"], event["event"], event.get("tool_name"))
              for namespace, event in graph.stream(GO, stream_mode="tools", subgraphs=True)]
    assert nested == [(False, "call_0_0", "tool-started", "research"),
                      (True, "call_0_0", "tool-started", "crawl"),
                      (True, "call_0_0", "tool-finished", None),
                      (False, "call_0_0", "tool-finished", None)]


@lesson
def test_an_agent_inside_a_tool_streams_nothing_of_its_own_unless_subgraphs_is_true():
    from langchain.agents import create_agent

    inner_agent = create_agent(ScriptedChatModel(script=[_calls(("crawl", {"site": "x"})), "inner summary"]),
                               [crawl])

    @tool
    def research(topic: str) -> str:
        """Delegate the research to an agent."""
        return inner_agent.invoke({"messages": [HumanMessage(topic)]})["messages"][-1].content

    graph = _loop([_calls(("research", {"topic": "t"})), "ok"], [research])
    flat = list(graph.stream(GO, stream_mode=["custom", "messages"]))
    assert [mode for mode, _ in flat if mode == "custom"] == []
    assert [m.content for mode, (m, _) in flat if m.content] == ["inner summary", "ok"]
    nested = list(graph.stream(GO, stream_mode=["custom", "messages"], subgraphs=True))
    inner = [(mode, chunk) for namespace, mode, chunk in nested if namespace]
    assert [chunk["page"] for mode, chunk in inner if mode == "custom"] == [1, 2, 3]
    assert "".join(m.content for mode, (m, meta) in inner
                   if mode == "messages" and meta["langgraph_node"] == "model") == "inner summary"


# -- 8. Deep dive: a model that does not stream, and the text of a blocked call -----------------
def _whole_answer_model():
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class WholeAnswer(BaseChatModel):
        """A chat model that implements only `_generate`."""

        @property
        def _llm_type(self) -> str:
            return "whole-answer"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            return ChatResult(generations=[ChatGeneration(message=AIMessage("Hello there friend"))])

    return WholeAnswer()


def _messages_mode_pieces(model):
    from langchain.agents import create_agent

    return [(type(chunk).__name__, chunk.content) for chunk, _ in
            create_agent(model, []).stream({"messages": [HumanMessage("hi")]}, stream_mode="messages")]


@lesson
def test_a_model_that_streams_arrives_in_messages_mode_as_chunks():
    pieces = _messages_mode_pieces(ScriptedChatModel(script=["Hello there friend"]))
    assert len(pieces) > 1 and {kind for kind, _ in pieces} == {"AIMessageChunk"}
    assert "".join(text for _, text in pieces) == "Hello there friend"


@lesson
@pytest.mark.parametrize("which", ["only _generate", "disable_streaming=True"])
def test_a_model_without_stream_or_with_streaming_disabled_arrives_in_messages_mode_as_one_message(which):
    model = (_whole_answer_model() if which == "only _generate"
             else ScriptedChatModel(script=["Hello there friend"], disable_streaming=True))
    assert _messages_mode_pieces(model) == [("AIMessage", "Hello there friend")]


def _budget_words():
    from langchain.agents.middleware import AgentState, after_model

    @after_model
    def budget_words(state: AgentState, runtime) -> dict | None:
        last_ai = max(i for i, m in enumerate(state["messages"]) if isinstance(m, AIMessage))
        blocked = [m for m in state["messages"][last_ai + 1:]
                   if isinstance(m, ToolMessage) and m.status == "error"]
        return ({"messages": [m.model_copy(update={"content": "budget used up"}) for m in blocked]}
                if blocked else None)

    return budget_words


def _worded_run(order):
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware, wrap_tool_call

    from helpers.models import tool_results_summary

    ran, wrapped = [], []

    @tool
    def fetch(query: str) -> str:
        """Fetch a page."""
        ran.append(query)
        return f"fetched {query}"

    @wrap_tool_call
    def watch(request, handler):
        wrapped.append(request.tool_call["args"]["query"])
        return handler(request)

    limit, words = ToolCallLimitMiddleware(run_limit=1), _budget_words()
    middleware = [words, limit, watch] if order == "before" else [limit, words, watch]
    script = [[{"name": "fetch", "args": {"query": "a"}}, {"name": "fetch", "args": {"query": "b"}}],
              [{"name": "fetch", "args": {"query": "c"}}], tool_results_summary]
    agent = create_agent(ScriptedChatModel(script=script), [fetch], middleware=middleware)
    messages = agent.invoke(GO)["messages"]
    return ran, wrapped, messages


@lesson
def test_tool_call_limit_middleware_has_no_parameter_for_the_blocked_calls_text():
    import inspect

    from langchain.agents.middleware import ToolCallLimitMiddleware

    assert set(inspect.signature(ToolCallLimitMiddleware.__init__).parameters) == {
        "self", "tool_name", "thread_limit", "run_limit", "exit_behavior"}


@lesson
def test_wrap_tool_call_never_sees_a_call_the_limit_blocked():
    ran, wrapped, _ = _worded_run("before")
    assert ran == ["a"] and wrapped == ["a"]


@lesson
def test_an_after_model_hook_listed_before_the_limit_rewrites_the_blocked_calls_text_the_model_reads():
    ran, _, messages = _worded_run("before")
    assert ran == ["a"]
    assert messages[-1].content == "budget used up"  # what the model read for call `c`
    blocked = [m.content for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert blocked == ["budget used up", "budget used up"]
    assert unanswered_tool_calls(messages) == []


@lesson
def test_an_after_model_hook_listed_after_the_limit_runs_first_and_changes_nothing():
    ran, _, messages = _worded_run("after")
    assert ran == ["a"]
    assert messages[-1].content == "Tool call limit exceeded. Do not make additional tool calls."
