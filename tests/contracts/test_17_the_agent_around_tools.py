"""Library behaviour taught in notebooks/17_the_agent_around_tools.ipynb.

`create_agent` as the graph it builds (a node per node-type middleware hook, what builds a tools
node, where the router and a jump go, one step per node, the graph without tools), structured output
as a tool (`ToolStrategy` with and without tools, `ProviderStrategy`, a bare schema,
`create_react_agent`'s extra call, the schema call's error turns, the empty tools array
`ProviderStrategy` sends without tools), three limits on one loop, the tools offered per model call
against the tools the tools node runs, a sub-agent called inside a tool (its memory per
`checkpointer=` mode and per parent, what a resume repeats, its own step limit), a `RunnableConfig`
parameter, the entry's jump to "model" that fails, and what a jump to "tools" runs.
Each test pins one statement of the lesson, in the form the lesson states it.

Pinned: langchain 1.5.2, langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain-core 1.8.3 (also the
newest releases on the index when this was written). Run beside the pins in environments resolved as
scripts/compat.py resolves its matrix: every test also holds on the pins with langchain-core 1.8.0;
on langgraph 1.1.10 (prebuilt 1.0.13, langchain 1.2.18) and langgraph 1.0.10 (prebuilt 1.0.8,
langchain 1.2.10) every test holds but those whose docstrings say otherwise for these releases; on
langgraph 1.0.0 (prebuilt 1.0.0, langchain 1.0.2) nineteen test cases differ, each docstring says how;
on langgraph 0.6.11 there is no `create_agent`. `make compat` records the same in
docs/compatibility.md. The tests of the empty tools array, of a sub-agent's resume and of the entry's
failing jump to "model" were checked on the pins only.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import warnings
from typing import Optional

import httpx
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ToolCallLimitMiddleware,
    before_model,
    wrap_model_call,
    wrap_tool_call,
)
from langchain.agents.structured_output import (
    ProviderStrategy,
    StructuredOutputValidationError,
    ToolStrategy,
)
from langchain.tools import ToolRuntime
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel

from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary

lesson = pytest.mark.lesson("17_the_agent_around_tools")
GO = {"messages": [HumanMessage("What is the weather in Paris?")]}


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 20 °C"


class Answer(BaseModel):
    city: str
    temp: int


ANSWER = {"name": "Answer", "args": {"city": "Paris", "temp": 20}}
WEATHER = {"name": "weather", "args": {"city": "Paris"}}
JSON_ANSWER = ['{"city": "Paris", "temp": 20}']


class Audit(AgentMiddleware):
    def before_agent(self, state, runtime):
        return None

    def before_model(self, state, runtime):
        return None

    def after_model(self, state, runtime):
        return None

    def after_agent(self, state, runtime):
        return None


class Offered(BaseCallbackHandler):
    """What each model call was offered: (tool names, tool_choice, response_format type)."""

    def __init__(self):
        self.calls = []

    def on_chat_model_start(self, serialized, messages, *, invocation_params=None, **kwargs):
        params = invocation_params or {}
        tools = [t["function"]["name"] for t in params.get("tools", [])]
        self.calls.append((tools, params.get("tool_choice"), params.get("response_format", {}).get("type")))


def _agent(script, tools, **options):
    return create_agent(ScriptedChatModel(script=script), tools, **options)


def _edges(agent):
    return {(e.source, e.target, e.conditional) for e in agent.get_graph().edges}


def _steps(agent, graph_input=GO):
    tasks = [(e["step"], e["payload"]["name"]) for e in agent.stream(graph_input, stream_mode="debug")
             if e["type"] == "task"]
    return [sorted(name for s, name in tasks if s == step) for step in range(1, tasks[-1][0] + 1)]


def _react(model, tools, **options):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, **options)


# -- 1. the graph create_agent builds ------------------------------------------------------------------
@lesson
def test_each_node_hook_of_a_middleware_is_a_node_named_after_it_and_wrap_hooks_are_not():
    @wrap_model_call
    def around_model(request, handler):
        return handler(request)

    @wrap_tool_call
    def around_tool(request, handler):
        return handler(request)

    audited = _agent(["done"], [weather], middleware=[Audit()])
    assert set(audited.get_graph().nodes) == {
        "__start__", "__end__", "model", "tools",
        "Audit.before_agent", "Audit.before_model", "Audit.after_model", "Audit.after_agent",
    }
    wrapped = _agent(["done"], [weather], middleware=[around_model, around_tool])
    assert set(wrapped.get_graph().nodes) == {"__start__", "__end__", "model", "tools"}


@lesson
def test_agent_hooks_sit_outside_the_loop_and_the_router_to_tools_leaves_the_after_model_that_runs_last():
    edges = _edges(_agent(["done"], [weather], middleware=[Audit()]))
    assert edges == {
        ("__start__", "Audit.before_agent", False), ("Audit.before_agent", "Audit.before_model", False),
        ("Audit.before_model", "model", False), ("model", "Audit.after_model", False),
        ("Audit.after_model", "tools", True), ("Audit.after_model", "Audit.before_model", True),
        ("Audit.after_model", "Audit.after_agent", True), ("tools", "Audit.before_model", True),
        ("Audit.after_agent", "__end__", False),
    }

    class First(AgentMiddleware):
        def after_model(self, state, runtime):
            return None

    class Second(AgentMiddleware):
        def after_model(self, state, runtime):
            return None

    two = _edges(_agent(["done"], [weather], middleware=[First(), Second()]))
    assert ("model", "Second.after_model", False) in two  # after_model hooks run in reverse list order
    assert ("Second.after_model", "First.after_model", False) in two
    assert ("First.after_model", "tools", True) in two      # the router leaves the one that runs last


@lesson
def test_a_before_model_that_can_jump_to_end_gets_an_edge_to_end_past_the_model():
    capped = _agent(["done"], [weather],
                          middleware=[ModelCallLimitMiddleware(run_limit=3)])
    edges = _edges(capped)
    assert ("ModelCallLimitMiddleware.before_model", "__end__", True) in edges
    assert ("ModelCallLimitMiddleware.before_model", "model", True) in edges


@lesson
def test_a_jump_to_end_goes_to_the_exit_so_an_after_agent_hook_still_runs():
    @before_model(can_jump_to=["end"])
    def stop_at_once(state, runtime):
        return {"jump_to": "end"}

    class Farewell(AgentMiddleware):
        def after_agent(self, state, runtime):
            return {"messages": [("ai", "goodbye")]}

    agent = _agent(["done"], [weather], middleware=[Farewell(), stop_at_once])
    assert ("stop_at_once.before_model", "Farewell.after_agent", True) in _edges(agent)
    assert agent.invoke(GO)["messages"][-1].content == "goodbye"


class AnswerEveryCall(AgentMiddleware):
    """An after_model that answers every call of the turn itself, so no call is left for `tools`."""

    def after_model(self, state, runtime):
        calls = state["messages"][-1].tool_calls
        if calls:
            return {"messages": [ToolMessage("blocked", tool_call_id=c["id"], name=c["name"], status="error")
                                 for c in calls]}
        return None


@lesson
def test_a_turn_whose_calls_are_all_answered_already_goes_back_to_the_loop_entry_not_to_the_exit():
    """The router exits only after a turn with no tool calls (or once a structured response is set); a
    turn whose calls an after_model answered goes back to the model, with no tools step."""
    agent = _agent([[WEATHER], "done"], [weather], middleware=[AnswerEveryCall()])
    assert ("AnswerEveryCall.after_model", "model", True) in _edges(agent)
    assert _steps(agent) == [["model"], ["AnswerEveryCall.after_model"]] * 2
    messages = agent.invoke(GO)["messages"][1:]
    assert [(type(m).__name__, m.content) for m in messages] == [
        ("AIMessage", ""), ("ToolMessage", "blocked"), ("AIMessage", "done")]


@lesson
def test_the_loop_entry_is_the_first_before_model_the_router_returns_there():
    """The drawn `Audit.after_model -.-> Audit.before_model`: a turn answered by middleware goes back
    to the first before_model, whose hooks run again."""
    class First(AgentMiddleware):
        def before_model(self, state, runtime):
            return None

    agent = _agent([[WEATHER], "done"], [weather], middleware=[First(), AnswerEveryCall()])
    assert _steps(agent) == [["First.before_model"], ["model"], ["AnswerEveryCall.after_model"],
                             ["First.before_model"], ["model"], ["AnswerEveryCall.after_model"]]


@lesson
def test_a_jump_to_model_lands_on_the_first_before_model_not_on_the_model_node():
    class First(AgentMiddleware):
        def before_model(self, state, runtime):
            return None

    from langchain.agents.middleware import after_model

    @after_model(can_jump_to=["model"])
    def again(state, runtime):
        if sum(m.type == "ai" for m in state["messages"]) < 2:
            return {"jump_to": "model"}
        return None

    agent = _agent(["one", "two"], [weather], middleware=[First(), again])
    targets = {target for source, target, _ in _edges(agent) if source == "again.after_model"}
    assert targets == {"First.before_model", "tools", "__end__"}
    assert _steps(agent) == [["First.before_model"], ["model"], ["again.after_model"],
                             ["First.before_model"], ["model"], ["again.after_model"]]


@lesson
def test_an_undeclared_jump_is_ignored_except_in_the_after_model_node_that_carries_the_router():
    """No `can_jump_to`: a before_model's jump and an after_model's that does not run last are ignored
    (`jump_to` is an ephemeral channel, read only by an edge that checks it); the router, on the
    after_model that runs last, obeys any `jump_to`."""
    class EndBeforeModel(AgentMiddleware):
        def before_model(self, state, runtime):
            return {"jump_to": "end"}

    class EndAfterModel(AgentMiddleware):
        def after_model(self, state, runtime):
            return {"jump_to": "end"}

    class Quiet(AgentMiddleware):
        def after_model(self, state, runtime):
            return None

    def contents(middleware):
        messages = _agent([[WEATHER], "done"], [weather], middleware=middleware).invoke(GO)["messages"][1:]
        return [m.content for m in messages]

    ran_on = ["", "Paris: 20 °C", "done"]
    assert contents([EndBeforeModel()]) == ran_on            # ignored: the model ran, and the tool
    assert contents([Quiet(), EndAfterModel()]) == ran_on    # EndAfterModel runs first: ignored
    assert contents([EndAfterModel()]) == [""]               # it carries the router: the run ends


@lesson
def test_without_tools_there_is_no_tools_node_and_the_model_goes_back_to_itself_or_to_the_exit():
    structured = _agent(["done"], [], response_format=ToolStrategy(Answer))
    assert "tools" not in structured.get_graph().nodes
    assert _edges(structured) == {("__start__", "model", False), ("model", "model", True),
                                  ("model", "__end__", True)}
    assert _edges(_agent(["done"], [])) == {("__start__", "model", False), ("model", "__end__", False)}


@lesson
@pytest.mark.parametrize("build", ["tools passed", "a middleware's tools", "a wrap_tool_call",
                                   "none of these"])
def test_a_tools_node_is_built_unless_the_agent_is_without_tools(build):
    """Without tools means none passed, none on a middleware's `.tools`, and no `wrap_tool_call`: any
    `wrap_tool_call` builds a (toolless) tools node, to run tools added per call (factory.py: `if
    available_tools or wrap_tool_call_wrapper or awrap_tool_call_wrapper`). Pinned: langchain 1.5.2;
    also langchain 1.2.18 and 1.2.10. Not on langchain 1.0.2, where a wrap_tool_call alone builds no
    tools node."""
    class WithWeather(AgentMiddleware):
        tools = [weather]

    @wrap_tool_call
    def log_calls(request, handler):
        return handler(request)

    options = {"tools passed": ([weather], []), "a middleware's tools": ([], [WithWeather()]),
               "a wrap_tool_call": ([], [log_calls]), "none of these": ([], [])}[build]
    agent = _agent(["done"], options[0], middleware=options[1])
    assert ("tools" in agent.get_graph().nodes) == (build != "none of these")


@lesson
def test_with_only_a_wrap_tool_call_a_plain_text_answer_under_tool_strategy_exits_with_none():
    """No tools passed, but a `wrap_tool_call`: the agent has a tools node, so its router exits after a
    plain-text turn (structured_response None) instead of going back to the model. Pinned: langchain
    1.5.2; also langchain 1.2.18 and 1.2.10 (which leave the key out: hence `.get`). Not on langchain
    1.0.2: no tools node, so the `model -> model` router sends the run back to the model."""
    @wrap_tool_call
    def log_calls(request, handler):
        return handler(request)

    offered = Offered()
    agent = _agent(["20 °C.", [ANSWER]], [], middleware=[log_calls], response_format=ToolStrategy(Answer))
    assert ("model", "tools", True) in _edges(agent)
    result = agent.invoke(GO, {"callbacks": [offered]})
    assert len(offered.calls) == 1 and result.get("structured_response") is None
    assert [m.content for m in result["messages"][1:]] == ["20 °C."]


@lesson
def test_without_tools_the_router_after_the_model_goes_back_to_the_loops_entry_the_first_before_model():
    """The `model -> model` router targets the loop's entry, here a before_model node, whose hook runs
    again. Pinned: langchain 1.5.2; also langchain 1.2.18, 1.2.10 and 1.0.2."""
    class First(AgentMiddleware):
        def before_model(self, state, runtime):
            return None

    agent = _agent(["20 °C.", [ANSWER]], [], middleware=[First()], response_format=ToolStrategy(Answer))
    assert ("model", "First.before_model", True) in _edges(agent)
    assert ("model", "model", True) not in _edges(agent)
    assert _steps(agent) == [["First.before_model"], ["model"], ["First.before_model"], ["model"]]


@lesson
@pytest.mark.parametrize("response_format", [None, ProviderStrategy(Answer)],
                         ids=["none", "ProviderStrategy"])
def test_without_tools_and_without_a_tool_strategy_schema_the_model_has_a_plain_edge_to_the_exit(
        response_format):
    """Only a ToolStrategy schema adds the `model -> model` router to an agent without tools;
    ProviderStrategy, like no response_format, leaves a plain edge. Pinned: langchain 1.5.2; also
    langchain 1.2.18, 1.2.10 and 1.0.2."""
    agent = _agent(JSON_ANSWER, [], response_format=response_format)
    assert _edges(agent) == {("__start__", "model", False), ("model", "__end__", False)}


@lesson
def test_each_node_on_the_path_takes_one_step_and_the_calls_of_one_turn_share_the_tools_step():
    two_calls = [[WEATHER, {"name": "weather", "args": {"city": "Rome"}}], "done"]
    agent = _agent(two_calls, [weather], middleware=[Audit()])
    assert _steps(agent) == [
        ["Audit.before_agent"], ["Audit.before_model"], ["model"], ["Audit.after_model"], ["tools", "tools"],
        ["Audit.before_model"], ["model"], ["Audit.after_model"], ["Audit.after_agent"],
    ]


@lesson
def test_with_audit_two_tool_turns_and_an_answer_take_thirteen_steps():
    """Practice question 1: 1 + 4 + 4 + 3 + 1."""
    script = [[{"name": "weather", "args": {"city": c}}] for c in ("Paris", "Rome")] + ["done"]
    agent = _agent(script, [weather], middleware=[Audit()])
    assert len(_steps(agent)) == 13


@lesson
def test_response_format_adds_a_tools_to_end_edge_and_a_model_to_model_edge():
    plain = _edges(_agent(["done"], [weather]))
    structured = _edges(_agent(["done"], [weather],
                                     response_format=ToolStrategy(Answer)))
    assert structured - plain == {("tools", "__end__", True), ("model", "model", True)}


# -- 2. structured output: the schema is one more tool --------------------------------------------------
@lesson
def test_tool_strategy_offers_the_schema_beside_the_tools_with_tool_choice_any():
    offered = Offered()
    agent = _agent([[ANSWER]], [weather], response_format=ToolStrategy(Answer))
    agent.invoke(GO, {"callbacks": [offered]})
    assert offered.calls == [(["weather", "Answer"], "any", None)]


@lesson
def test_the_model_node_answers_the_schema_call_sets_structured_response_and_no_tools_step_runs():
    agent = _agent([[ANSWER]], [weather], response_format=ToolStrategy(Answer))
    assert [node for update in agent.stream(GO, stream_mode="updates") for node in update] == ["model"]
    result = agent.invoke(GO)
    assert list(result) == ["messages", "structured_response"]
    assert result["structured_response"] == Answer(city="Paris", temp=20)
    answer = result["messages"][-1]
    assert isinstance(answer, ToolMessage)
    assert answer.content == "Returning structured response: city='Paris' temp=20"


@lesson
def test_a_schema_call_beside_a_real_call_runs_the_tool_and_ends_on_its_unread_tool_message():
    offered = Offered()
    agent = _agent([[WEATHER, ANSWER], "the model speaks again"], [weather],
                         response_format=ToolStrategy(Answer))
    result = agent.invoke(GO, {"callbacks": [offered]})
    assert [m.content for m in result["messages"][2:]] == [
        "Returning structured response: city='Paris' temp=20", "Paris: 20 °C"]
    assert len(offered.calls) == 1  # the model never read weather's result
    assert result["structured_response"] == Answer(city="Paris", temp=20)


@lesson
def test_a_plain_text_answer_under_tool_strategy_ends_the_run_with_no_structured_response():
    agent = _agent(["It is 20 °C in Paris."], [weather], response_format=ToolStrategy(Answer))
    result = agent.invoke(GO)
    assert [m.content for m in result["messages"][1:]] == ["It is 20 °C in Paris."]
    assert result.get("structured_response") is None


@lesson
def test_the_result_carries_structured_response_none_after_a_turn_that_produced_none():
    """Pinned langchain 1.5.2. langchain 1.2.18 and 1.2.10 (with langgraph 1.1.10 and 1.0.10) leave the
    key out instead: `KeyError: 'structured_response'` (rigras/minutAI#109)."""
    result = _agent(["It is 20 °C in Paris."], [weather], response_format=ToolStrategy(Answer)).invoke(GO)
    assert "structured_response" in result and result["structured_response"] is None


@lesson
def test_a_run_that_never_reached_the_model_leaves_structured_response_out():
    """No checkpointer, a before_model that jumps to the end at once: no model turn, no key. Pinned:
    langchain 1.5.2; also langchain 1.2.18, 1.2.10 and 1.0.2."""
    @before_model(can_jump_to=["end"])
    def stop_at_once(state, runtime):
        return {"jump_to": "end"}

    agent = _agent(["done"], [weather], middleware=[stop_at_once], response_format=ToolStrategy(Answer))
    result = agent.invoke(GO)
    assert list(result) == ["messages"]
    with pytest.raises(KeyError, match="structured_response"):
        result["structured_response"]  # noqa: B018 - the KeyError is the point


@lesson
def test_on_a_checkpointed_thread_a_run_refused_before_the_model_returns_the_threads_last_answer():
    """`ModelCallLimitMiddleware(thread_limit=1)` refuses the second question before the model: the
    result carries the first question's structured response, not this run's. Pinned: langchain 1.5.2;
    also langchain 1.2.18, 1.2.10 and 1.0.2."""
    agent = _agent([[ANSWER], [ANSWER]], [weather], response_format=ToolStrategy(Answer),
                   middleware=[ModelCallLimitMiddleware(thread_limit=1)], checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "answers"}}
    assert agent.invoke(GO, thread)["structured_response"] == Answer(city="Paris", temp=20)
    refused = agent.invoke({"messages": [HumanMessage("And in Rome?")]}, thread)
    assert refused["messages"][-1].content == "Model call limits exceeded: thread limit (1/1)"
    assert refused.get("structured_response") == Answer(city="Paris", temp=20)


@lesson
def test_without_tools_a_model_that_keeps_answering_in_plain_text_is_called_at_every_step_until_the_limit():
    """One model call per step, each offered the schema alone: at a limit of 25, 25 billed calls, then
    GraphRecursionError; `create_agent` binds 9999 when none is passed. A ModelCallLimitMiddleware
    stops it at its limit. On langchain 1.2.10 and 1.0.2 create_agent bound no limit (the default
    applies)."""
    offered = Offered()
    agent = _agent(["It is 20 °C in Paris."] * 30, [], response_format=ToolStrategy(Answer))
    with pytest.raises(GraphRecursionError):
        agent.invoke(GO, {"recursion_limit": 25, "callbacks": [offered]})
    assert offered.calls == [(["Answer"], "any", None)] * 25
    assert agent.config["recursion_limit"] == 9999
    capped_offered = Offered()
    capped = _agent(["It is 20 °C in Paris."] * 30, [], response_format=ToolStrategy(Answer),
                    middleware=[ModelCallLimitMiddleware(run_limit=3)])
    result = capped.invoke(GO, {"callbacks": [capped_offered]})
    assert len(capped_offered.calls) == 3 and result.get("structured_response") is None
    assert result["messages"][-1].content == "Model call limits exceeded: run limit (3/3)"


@lesson
def test_without_tools_a_plain_text_answer_sends_the_run_back_to_the_model():
    """Practice question 3: the model -> model router exits only once a structured response is set."""
    offered = Offered()
    agent = _agent(["20 °C.", [ANSWER]], [], response_format=ToolStrategy(Answer))
    result = agent.invoke(GO, {"callbacks": [offered]})
    assert len(offered.calls) == 2 and result["structured_response"] == Answer(city="Paris", temp=20)


# -- 3. three limits on one loop -------------------------------------------------------------------------
FOREVER = [[{"name": "fetch", "args": {"page": n}}] for n in range(40)]


def _limited_run(middleware, recursion_limit=None):
    fetched = []

    @tool
    def fetch(page: int) -> str:
        """Fetch one page."""
        fetched.append(page)
        return f"page {page}"

    agent = _agent(FOREVER, [fetch], middleware=middleware, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "limits"}, "recursion_limit": recursion_limit or 9999}
    try:
        agent.invoke({"messages": [HumanMessage("Fetch everything.")]}, config)
        how = "ends"
    except Exception as error:  # noqa: BLE001 - which one is the point
        how = type(error).__name__
    messages = agent.get_state(config).values["messages"]
    last = messages[-1].content or f"a call to {messages[-1].tool_calls[0]['name']}"
    return how, fetched, len(unanswered_tool_calls(messages)), last


def _both():
    return [ModelCallLimitMiddleware(run_limit=3), ToolCallLimitMiddleware(run_limit=2)]


MODEL_LIMIT_TEXT = "Model call limits exceeded: run limit (3/3)"


@lesson
@pytest.mark.parametrize(("middleware", "limit", "expected"), [
    pytest.param(lambda: [ModelCallLimitMiddleware(run_limit=3)], None,
                 ("ends", [0, 1, 2], 0, MODEL_LIMIT_TEXT), id="model limit 3"),
    pytest.param(lambda: [ModelCallLimitMiddleware(run_limit=3, exit_behavior="error")], None,
                 ("ModelCallLimitExceededError", [0, 1, 2], 0, "page 2"), id="model limit 3, error"),
    pytest.param(lambda: [ToolCallLimitMiddleware(run_limit=2, exit_behavior="error")], None,
                 ("ToolCallLimitExceededError", [0, 1], 1, "a call to fetch"), id="tool limit 2, error"),
    pytest.param(_both, None, ("ends", [0, 1], 0, MODEL_LIMIT_TEXT), id="both"),
    pytest.param(_both, 15, ("GraphRecursionError", [0, 1], 0, MODEL_LIMIT_TEXT), id="both, step limit 15"),
    pytest.param(_both, 12, ("GraphRecursionError", [0, 1], 1, "a call to fetch"), id="both, step limit 12"),
])
def test_which_limit_stops_an_endless_model_first_and_what_the_thread_holds(middleware, limit, expected):
    """The model limit checks before the model (every call answered), the tool limit after it
    (`"error"` leaves the turn unanswered), the step limit at any step; reaching step L raises even when
    that step finished the run (the `both, step limit 15` row). On langchain 1.0.2 the rows with a tool
    limit differ: its `"error"` left nothing unanswered and `both` ended on "Tool call limits exceeded:
    run limit (2/2)"."""
    assert _limited_run(middleware(), limit) == expected


# -- 4. the tools offered per call, and the tools that run --------------------------------------------------
class CallsAnyTool(ScriptedChatModel):
    def reply(self, messages, tools=None):
        return super().reply(messages, [convert_to_openai_tool(t) for t in (weather, refund, track)])


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@tool
def track(order: str) -> str:
    """Track an order."""
    return f"order {order}: shipped"


@wrap_model_call
def add_track(request, handler):
    return handler(request.override(tools=[*request.tools, track]))


@lesson
def test_a_tool_hidden_in_wrap_model_call_is_not_offered_and_still_runs_when_called():
    @wrap_model_call
    def hide_refund(request, handler):
        return handler(request.override(tools=[t for t in request.tools if t.name != "refund"]))

    offered = Offered()
    agent = create_agent(CallsAnyTool(script=[[{"name": "refund", "args": {"order": "A1"}}], "done"]),
                         [weather, refund], middleware=[hide_refund])
    refund_a1 = {"messages": [HumanMessage("Refund order A1.")]}
    messages = agent.invoke(refund_a1, {"callbacks": [offered]})["messages"]
    assert offered.calls == [(["weather"], None, None), (["weather"], None, None)]
    answers = [(m.content, m.status) for m in messages if isinstance(m, ToolMessage)]
    assert answers == [("refunded A1", "success")]


@lesson
def test_llm_tool_selector_middleware_narrows_the_offer_and_a_de_selected_tool_still_runs():
    """cognizant-ai-lab/neuro-san#1239, on the pins: the selector (a scripted selection model here)
    keeps `weather` only; the model calls `refund` anyway, and the tools node runs it."""
    from langchain.agents.middleware import LLMToolSelectorMiddleware

    selector = ScriptedChatModel(script=[[{"name": "ToolSelectionResponse", "args": {"tools": ["weather"]}}]])
    offered = Offered()
    agent = create_agent(CallsAnyTool(script=[[{"name": "refund", "args": {"order": "A1"}}], "done"]),
                         [weather, refund], middleware=[LLMToolSelectorMiddleware(model=selector)])
    refund_a1 = {"messages": [HumanMessage("Refund order A1.")]}
    messages = agent.invoke(refund_a1, {"callbacks": [offered]})["messages"]
    offered_to_the_agent = [tools for tools, _, _ in offered.calls if "ToolSelectionResponse" not in tools]
    assert offered_to_the_agent == [["weather"]] * 2
    assert [m.content for m in messages if isinstance(m, ToolMessage)] == ["refunded A1"]


@lesson
def test_the_tools_node_runs_the_tools_passed_to_create_agent_and_every_middlewares_tools():
    class WithTrack(AgentMiddleware):
        tools = [track]

    script = [[{"name": "track", "args": {"order": "A1"}}], "done"]
    agent = _agent(script, [weather], middleware=[WithTrack()])
    assert sorted(agent.get_graph().nodes["tools"].data.tools_by_name) == ["track", "weather"]
    (answer,) = [m for m in agent.invoke(GO)["messages"] if isinstance(m, ToolMessage)]
    assert (answer.content, answer.status) == ("order A1: shipped", "success")


@lesson
def test_the_sync_only_wrap_hooks_of_section_4_raise_not_implemented_under_ainvoke():
    """`@wrap_model_call` / `@wrap_tool_call` on a sync function define no `awrap_*` (lesson 14)."""
    @wrap_model_call
    def hide_refund(request, handler):
        return handler(request.override(tools=[t for t in request.tools if t.name != "refund"]))

    @wrap_tool_call
    def log_calls(request, handler):
        return handler(request)

    refund_a1 = [[{"name": "refund", "args": {"order": "A1"}}], "done"]
    agents = [create_agent(CallsAnyTool(script=refund_a1), [weather, refund], middleware=[hide_refund]),
              _agent([[WEATHER], "done"], [weather], middleware=[log_calls])]
    for agent in agents:
        assert agent.invoke(GO)["messages"][-1].content == "done"  # fine under invoke
        with pytest.raises(NotImplementedError, match=r"implementation of awrap_(model|tool)_call is not"):
            asyncio.run(agent.ainvoke(GO))


@lesson
def test_a_tool_added_in_wrap_model_call_that_the_agent_was_not_built_with_raises_before_the_model_call():
    """On langchain 1.0.2 a ValueError too, with another text ("Middleware returned unknown tool names")."""
    offered = Offered()
    agent = _agent(["done"], [weather], middleware=[add_track])
    with pytest.raises(ValueError, match=r"(?s)Middleware added tools that the agent doesn't know how "
                                         r"to execute\..*Unknown tools: \['track'\]"
                                         r".*Registered tools: \['weather'\]"):
        agent.invoke(GO, {"callbacks": [offered]})
    assert offered.calls == []


@lesson
def test_the_offer_check_skips_a_providers_built_in_dict_tool():
    """Only BaseTool instances are checked against the tools node; a dict tool (a provider's built-in,
    such as web search) added in wrap_model_call is bound and the model asked. Pinned: langchain 1.5.2;
    also langchain 1.2.18, 1.2.10 and 1.0.2."""
    bound = []

    class Binding(ScriptedChatModel):
        def bind_tools(self, tools, **kwargs):
            bound.append(list(tools))
            return super().bind_tools(tools, **kwargs)

    @wrap_model_call
    def add_search(request, handler):
        return handler(request.override(tools=[*request.tools, {"type": "web_search"}]))

    agent = create_agent(Binding(script=["done"]), [weather], middleware=[add_search])
    assert agent.invoke(GO)["messages"][-1].content == "done"
    assert bound[0][1:] == [{"type": "web_search"}]


@lesson
def test_a_tool_registered_at_build_and_filtered_per_call_is_offered_only_when_asked():
    @wrap_model_call
    def track_when_asked(request, handler):
        asked = any("order" in m.content for m in request.messages if m.type == "human")
        return handler(request.override(tools=[t for t in request.tools if t.name != "track" or asked]))

    def run(question, script):
        offered = Offered()
        agent = _agent(script, [weather, track], middleware=[track_when_asked])
        messages = agent.invoke({"messages": [HumanMessage(question)]}, {"callbacks": [offered]})["messages"]
        return offered.calls[0][0], [m.content for m in messages if isinstance(m, ToolMessage)]

    assert run("What is the weather in Paris?", ["20 °C."]) == (["weather"], [])
    track_call = [[{"name": "track", "args": {"order": "A1"}}], "done"]
    assert run("Where is my order A1?", track_call) == (["weather", "track"], ["order A1: shipped"])


@lesson
def test_with_any_wrap_tool_call_an_added_tool_is_offered_and_its_call_answered_with_an_error():
    """Practice question 4: the check is skipped, the tools node answers a name it does not know. Not on
    langchain 1.0.2, which checks whatever middleware the agent has: the ValueError."""
    @wrap_tool_call
    def log_calls(request, handler):
        return handler(request)

    offered = Offered()
    agent = _agent([[{"name": "track", "args": {"order": "A1"}}], "done"],
                         [weather], middleware=[add_track, log_calls])
    messages = agent.invoke(GO, {"callbacks": [offered]})["messages"]
    assert offered.calls[0][0] == ["weather", "track"]
    (answer,) = [m for m in messages if isinstance(m, ToolMessage)]
    assert answer.status == "error"
    assert answer.content == "Error: track is not a valid tool, try one of [weather]."


@lesson
def test_a_wrap_tool_call_that_swaps_in_the_added_tool_runs_it():
    """The error message's option 2: with a `wrap_tool_call`, `request.override(tool=...)` runs a tool
    the agent was not built with (langgraph#6711). Not on langchain 1.0.2: the ValueError."""
    @wrap_tool_call
    def run_track(request, handler):
        if request.tool_call["name"] == "track":
            return handler(request.override(tool=track))
        return handler(request)

    script = [[{"name": "track", "args": {"order": "A1"}}], "done"]
    agent = _agent(script, [weather], middleware=[add_track, run_track])
    (answer,) = [m for m in agent.invoke(GO)["messages"] if isinstance(m, ToolMessage)]
    assert (answer.content, answer.status) == ("order A1: shipped", "success")


# -- 5. deep dive: ProviderStrategy, create_react_agent, wrong schema calls ----------------------------------
@lesson
def test_provider_strategy_sends_a_json_schema_response_format_and_parses_the_answer_text():
    offered = Offered()
    agent = _agent(['{"city": "Paris", "temp": 20}'], [weather],
                         response_format=ProviderStrategy(Answer))
    assert agent.invoke(GO, {"callbacks": [offered]})["structured_response"] == Answer(city="Paris", temp=20)
    assert offered.calls == [(["weather"], None, "json_schema")]


@lesson
def test_provider_strategy_without_tools_still_calls_bind_tools_with_an_empty_list_and_the_response_format():
    """Pinned: langchain 1.5.2 (`_get_bound_model` binds `final_tools` even when empty;
    langchain#37184, open; the proposed fixes, which call `model.bind` instead, were closed unmerged)."""
    bound = []

    class Binding(ScriptedChatModel):
        def bind_tools(self, tools, **kwargs):
            bound.append((list(tools), sorted(kwargs)))
            return super().bind_tools(tools, **kwargs)

    agent = create_agent(Binding(script=JSON_ANSWER), [], response_format=ProviderStrategy(Answer))
    assert agent.invoke(GO)["structured_response"] == Answer(city="Paris", temp=20)
    assert bound == [([], ["response_format"])]


def _chat_openai_request(response_format, tools=()):
    """The first request `ChatOpenAI` sends to the course's local OpenAI-compatible server."""
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    script = JSON_ANSWER if isinstance(response_format, ProviderStrategy) else [[ANSWER]]
    with ScriptedOpenAIEndpoint(script) as server:
        chat = ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="unused", use_responses_api=False)
        result = create_agent(chat, list(tools), response_format=response_format).invoke(GO)
    assert result["structured_response"] == Answer(city="Paris", temp=20)
    return server.requests[0]


@lesson
def test_chat_openai_sends_an_empty_tools_array_for_provider_strategy_without_tools():
    """Pinned: langchain 1.5.2, langchain-openai 1.7.4: the request carries `"tools": []` beside a
    json_schema `response_format` (vLLM 0.20+ rejects it: langchain#37184). No network: the local
    endpoint of helpers/openai_endpoint.py answers."""
    sent = _chat_openai_request(ProviderStrategy(Answer))
    assert sent["tools"] == [] and sent["response_format"]["type"] == "json_schema"


@lesson
def test_tool_strategy_without_tools_sends_chat_openai_the_schema_as_the_one_tool():
    """Pinned: langchain 1.5.2, langchain-openai 1.7.4: the workaround the lesson gives for a server
    that rejects an empty tools array."""
    sent = _chat_openai_request(ToolStrategy(Answer))
    assert [t["function"]["name"] for t in sent["tools"]] == ["Answer"] and "response_format" not in sent


@lesson
def test_a_bare_schema_is_tool_strategy_for_a_model_without_a_profile():
    assert ScriptedChatModel(script=[]).profile is None
    offered = Offered()
    agent = _agent([[ANSWER]], [weather], response_format=Answer)
    assert agent.invoke(GO, {"callbacks": [offered]})["structured_response"] == Answer(city="Paris", temp=20)
    assert offered.calls == [(["weather", "Answer"], "any", None)]


class NamedModel(ScriptedChatModel):
    model_name: str


PROFILED = {"structured_output": True}
PROVIDER_OFFER = (["weather"], None, "json_schema")
TOOL_OFFER = (["weather", "Answer"], "any", None)


def _bare_schema_offer(model, tools=(weather,)):
    """What the first model call was offered, once the run produced the structured answer."""
    offered = Offered()
    result = create_agent(model, list(tools), response_format=Answer).invoke(GO, {"callbacks": [offered]})
    return offered.calls[0] if result.get("structured_response") == Answer(city="Paris", temp=20) else None


@lesson
def test_a_bare_schema_is_provider_strategy_for_a_model_whose_profile_lists_structured_output():
    """On langchain 1.0.2 a bare schema is ToolStrategy for every model."""
    assert _bare_schema_offer(ScriptedChatModel(script=JSON_ANSWER, profile=PROFILED)) == PROVIDER_OFFER


@lesson
def test_a_bare_schema_is_provider_strategy_for_a_model_without_a_profile_named_on_the_built_in_list():
    """`FALLBACK_MODELS_WITH_STRUCTURED_OUTPUT` (langchain 1.5.2) lists gpt-4o, among others. On
    langchain 1.0.2 a bare schema is ToolStrategy for every model."""
    model = NamedModel(script=JSON_ANSWER, model_name="gpt-4o")
    assert model.profile is None
    assert _bare_schema_offer(model) == PROVIDER_OFFER


@lesson
def test_a_bare_schema_is_tool_strategy_for_gemini_before_3_in_an_agent_with_tools_despite_its_profile():
    """`_supports_provider_strategy` (langchain 1.5.2): a name containing "gemini" but not "gemini-3",
    in an agent with tools, gets ToolStrategy; without tools, or as gemini-3, ProviderStrategy. On
    langchain 1.2.10 every Gemini name with tools gets ToolStrategy, gemini-3 too; on 1.0.2 every
    model does."""
    assert _bare_schema_offer(NamedModel(script=[[ANSWER]], profile=PROFILED,
                                         model_name="gemini-2.5-flash")) == TOOL_OFFER
    assert _bare_schema_offer(NamedModel(script=JSON_ANSWER, profile=PROFILED,
                                         model_name="gemini-3-pro")) == PROVIDER_OFFER
    assert _bare_schema_offer(NamedModel(script=JSON_ANSWER, profile=PROFILED, model_name="gemini-2.5-flash"),
                              tools=()) == ([], None, "json_schema")


@lesson
def test_provider_strategy_raises_on_a_plain_text_answer():
    """On langchain 1.0.2 it raised a bare ValueError with the same text."""
    agent = _agent(["It is 20 °C in Paris."], [weather],
                         response_format=ProviderStrategy(Answer))
    with pytest.raises(StructuredOutputValidationError, match="Native structured output expected valid JSON"):
        agent.invoke(GO)
    assert "handle_errors" not in inspect.signature(ProviderStrategy).parameters  # no retry to ask for
    assert "handle_errors" in inspect.signature(ToolStrategy).parameters


@lesson
def test_create_react_agent_asks_for_the_structure_in_one_more_model_call_after_the_loop():
    offered = Offered()
    model = ScriptedChatModel(script=[[WEATHER], "It is 20 °C.", [ANSWER]])
    agent = _react(model, [weather], response_format=Answer)
    result = agent.invoke(GO, {"callbacks": [offered]})
    assert [n for n in agent.get_graph().nodes if not n.startswith("__")] == [
        "agent", "tools", "generate_structured_response"]
    assert offered.calls == [(["weather"], None, None), (["weather"], None, None), (["Answer"], "any", None)]
    assert [m.content for m in result["messages"][1:]] == ["", "Paris: 20 °C", "It is 20 °C."]
    assert result["structured_response"] == Answer(city="Paris", temp=20)


@lesson
def test_create_react_agent_asks_chat_openai_for_the_structure_with_a_response_format_and_no_tool():
    """The extra call is `model.with_structured_output(schema)`: ChatOpenAI's default method is
    json_schema (langchain-openai 1.7.4), so the request carries a response_format and no tools; the
    scripted model (BaseChatModel's default) gets the schema as its only tool instead (test above).
    Requests are answered by an httpx MockTransport: no network."""
    from langchain_openai import ChatOpenAI

    sent = []

    def reply(request):
        body = json.loads(request.content)
        sent.append(body)
        text = '{"city": "Paris", "temp": 20}' if "response_format" in body else "It is 20 °C."
        message = {"role": "assistant", "content": text}
        return httpx.Response(200, json={
            "id": f"chatcmpl-{len(sent)}", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    model = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test",
                       http_client=httpx.Client(transport=httpx.MockTransport(reply)))
    result = _react(model, [weather], response_format=Answer).invoke(GO)
    assert result["structured_response"] == Answer(city="Paris", temp=20)
    loop_call, structure_call = sent
    assert [t["function"]["name"] for t in loop_call["tools"]] == ["weather"]
    assert "tools" not in structure_call and structure_call["response_format"]["type"] == "json_schema"


WARM = {"name": "Answer", "args": {"city": "Paris", "temp": "warm"}}
ROME = {"name": "Answer", "args": {"city": "Rome", "temp": 25}}


def _schema_run(script, strategy=None):
    agent = _agent(script, [weather], response_format=strategy or ToolStrategy(Answer))
    result = agent.invoke(GO)
    return result["messages"][1:], result.get("structured_response")


@lesson
def test_two_schema_calls_are_each_answered_with_an_error_text_of_status_success_and_the_model_asked_again():
    messages, structured = _schema_run([[ANSWER, ROME], [ANSWER]])
    errors = [m for m in messages[1:3]]
    assert all(m.status == "success" and m.content.startswith(
        "Error: Model incorrectly returned multiple structured responses (Answer, Answer)") for m in errors)
    assert all(m.content.endswith("Please fix your mistakes.") for m in errors)
    assert isinstance(messages[3], AIMessage) and structured == Answer(city="Paris", temp=20)
    assert unanswered_tool_calls(messages) == []


@lesson
def test_an_invalid_schema_call_is_answered_with_an_error_text_and_retried():
    messages, structured = _schema_run([[WARM], [ANSWER]])
    assert messages[1].status == "success"
    assert messages[1].content.startswith("Error: Failed to parse structured output for tool 'Answer'")
    assert structured == Answer(city="Paris", temp=20)


@lesson
def test_handle_errors_false_raises_instead_of_retrying():
    with pytest.raises(StructuredOutputValidationError):
        _schema_run([[WARM], [ANSWER]], ToolStrategy(Answer, handle_errors=False))


@lesson
def test_an_invalid_schema_call_beside_a_real_call_ends_the_run_without_the_retry():
    """langchain#40423 (open on the pins): the retry text is not an error, so the router after the tools
    step ends the run."""
    messages, structured = _schema_run([[WEATHER, WARM], [ANSWER]])
    assert messages[1].content.startswith("Error: Failed to parse structured output")
    assert messages[-1].content == "Paris: 20 °C" and structured is None


# -- 6. deep dive: limits per run and per thread ------------------------------------------------------------
def _three_questions(limit, checkpointer):
    @tool
    def fetch(page: int) -> str:
        """Fetch one page."""
        return f"page {page}"

    script = [turn for n in range(3) for turn in ([{"name": "fetch", "args": {"page": n}}], f"answer {n}")]
    agent = _agent(script, [fetch], middleware=[limit], checkpointer=checkpointer)
    thread = {"configurable": {"thread_id": "questions"}}
    return [agent.invoke({"messages": [HumanMessage(f"question {n}")]}, thread)["messages"][-1].content
            for n in range(3)]


THREAD_LIMIT_TEXT = "Model call limits exceeded: thread limit (3/3)"


@lesson
def test_a_thread_limit_never_fires_without_a_checkpointer():
    assert _three_questions(ModelCallLimitMiddleware(thread_limit=3), None) == ["answer 0"] * 3


@lesson
def test_a_thread_limit_counts_model_calls_across_the_runs_of_a_checkpointed_thread():
    assert _three_questions(ModelCallLimitMiddleware(thread_limit=3), InMemorySaver()) == [
        "answer 0", THREAD_LIMIT_TEXT, THREAD_LIMIT_TEXT]


@lesson
def test_a_run_limit_starts_from_zero_every_run_on_a_checkpointed_thread():
    assert _three_questions(ModelCallLimitMiddleware(run_limit=3), InMemorySaver()) == [
        "answer 0", "answer 1", "answer 2"]


# -- 7. deep dive: a sub-agent inside a tool ---------------------------------------------------------
def _seen(messages):
    return "saw " + ", ".join(m.content for m in messages if m.type == "human")


def _ask_tool(helper, helper_config=None):
    @tool
    def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return helper.invoke({"messages": [HumanMessage(question)]}, helper_config)["messages"][-1].content

    return ask_helper


def _parent_of(helper, saver, helper_config=None):
    def ask_turn(messages):
        return [{"name": "ask_helper", "args": {"question": messages[-1].content}}]

    return _agent([ask_turn, tool_results_summary] * 3,
                        [_ask_tool(helper, helper_config)], checkpointer=saver)


def _namespaces(saver):
    return sorted({ns.split(":")[0] + (":<task id>" if ":" in ns else "")
                   for ns in (c.config["configurable"]["checkpoint_ns"] for c in saver.list(None))})


def _memory_row(options, helper_config=None, parent_saver=True):
    saver = InMemorySaver() if parent_saver else None
    parent = _parent_of(_agent([_seen] * 5, [], **options), saver, helper_config)
    said = [parent.invoke({"messages": [HumanMessage(q)]},
                          {"configurable": {"thread_id": t}})["messages"][-1].content
            for t, q in (("a", "first"), ("a", "second"), ("b", "third"))]
    return said, _namespaces(saver) if saver else None


EACH_CALL_EMPTY = ["saw first", "saw second", "saw third"]


@lesson
@pytest.mark.parametrize(("mode", "expected"), [
    (None, (EACH_CALL_EMPTY, ["", "tools:<task id>"])),
    (True, (["saw first", "saw first, second", "saw third"], ["", "tools"])),
    (False, (EACH_CALL_EMPTY, [""])),
], ids=["None", "True", "False"])
def test_what_a_sub_agent_remembers_and_where_it_checkpoints_per_checkpointer_mode(mode, expected):
    """langgraph 1.2.24: the parent lends its saver; `None` uses it under `tools:<task id>` (a fresh
    namespace per call), `True` under `tools` (one history per parent thread), `False` not at all."""
    options = {} if mode is None else {"checkpointer": mode}
    assert _memory_row(options) == expected


@lesson
def test_a_sub_agents_own_saver_is_ignored_inside_the_parents_run():
    """langgraph 1.2.24 (`Pregel._resolve_checkpointer`): the saver a parent lends wins."""
    own = InMemorySaver()
    assert _memory_row({"checkpointer": own}) == (EACH_CALL_EMPTY, ["", "tools:<task id>"])
    assert list(own.list(None)) == []


@lesson
@pytest.mark.parametrize("mode", ["own saver", True], ids=["own saver", "True"])
def test_under_a_parent_without_a_saver_a_sub_agent_keeps_nothing_its_own_saver_and_true_alike(mode):
    """langgraph 1.2.24: the parent lends what it has, here none; it replaces the sub-agent's own saver,
    and `checkpointer=True` raises nothing and remembers nothing."""
    own = InMemorySaver()
    assert _memory_row({"checkpointer": own if mode == "own saver" else mode}, parent_saver=False) == (
        EACH_CALL_EMPTY, None)
    assert list(own.list(None)) == []


@lesson
def test_a_sub_agent_with_its_own_saver_and_thread_id_remembers_across_parent_threads():
    """langgraph 1.2.24 (an explicit thread_id starts a root lineage: a LangGraph 1.2 change)."""
    row = _memory_row({"checkpointer": InMemorySaver()}, {"configurable": {"thread_id": "helper"}})
    assert row == (["saw first", "saw first, second", "saw first, second, third"], [""])


@lesson
def test_checkpointer_true_is_refused_for_a_sub_agent_run_as_a_root_graph():
    helper = _agent([_seen], [], checkpointer=True)
    with pytest.raises(RuntimeError, match="checkpointer=True cannot be used for root graphs"):
        helper.invoke({"messages": [HumanMessage("q")]}, {"configurable": {"thread_id": "helper"}})


@lesson
def test_two_calls_of_one_turn_write_to_the_one_tools_namespace_of_a_checkpointer_true_helper():
    def two_questions(messages):
        return [{"name": "ask_helper", "args": {"question": q}} for q in messages[-1].content.split(" and ")]

    saver = InMemorySaver()
    helper = _agent([_seen] * 5, [], checkpointer=True)
    parent = _agent([two_questions, tool_results_summary], [_ask_tool(helper)],
                          checkpointer=saver)
    parent.invoke({"messages": [HumanMessage("A and B")]}, {"configurable": {"thread_id": "pair"}})
    assert _namespaces(saver) == ["", "tools"]


@lesson
@pytest.mark.parametrize(("mode", "helper_model_calls"), [(None, 2), (True, 2), (False, 3)],
                         ids=["None", "True", "False"])
def test_a_sub_agent_interrupted_inside_a_tool_resumes_from_its_own_checkpoint_unless_checkpointer_false(
        mode, helper_model_calls):
    """Pinned: langgraph 1.2.24, langchain 1.5.2. The parent's tool task runs again from its top on
    resume and invokes the sub-agent again; with the parent's saver lent (`None`, `True`) the sub-agent
    resumes from its own checkpoint, so its model call before the interrupt is not repeated (one for
    the approval turn, one after it); `False` keeps no checkpoint and it starts over (deepagents#420).
    Either way the interrupted tool starts twice and the run finishes with the answer."""
    from langgraph.types import Command, interrupt

    starts = []

    @tool
    def approve(action: str) -> str:
        """Ask a human to approve an action."""
        starts.append(action)
        return f"{action}: {interrupt(f'approve {action}?')}"

    options = {} if mode is None else {"checkpointer": mode}
    helper = _agent([[{"name": "approve", "args": {"action": "deploy"}}], "deployed"], [approve], **options)
    offered = Offered()
    parent = _parent_of(helper, InMemorySaver())
    config = {"configurable": {"thread_id": "deploy"}, "callbacks": [offered]}
    asked = parent.invoke({"messages": [HumanMessage("deploy")]}, config)["__interrupt__"][0].value
    answer = parent.invoke(Command(resume="yes"), config)["messages"][-1].content
    assert (asked, answer, len(starts)) == ("approve deploy?", "deployed", 2)
    assert sum(tools == ["approve"] for tools, _, _ in offered.calls) == helper_model_calls


@tool
def read_limit(runtime: ToolRuntime) -> str:
    """Report the step limit this run has."""
    return str(runtime.config["recursion_limit"])


def _limit_inside(build, helper_config=None):
    model = ScriptedChatModel(script=[[{"name": "read_limit", "args": {}}], tool_results_summary])
    helper = build(model, [read_limit])
    return _parent_of(helper, None, helper_config).invoke({"messages": [HumanMessage("go")]},
                                                          {"recursion_limit": 12})["messages"][-1].content


@lesson
@pytest.mark.parametrize(("build", "helper_config", "limit"), [
    pytest.param(create_agent, None, "9999", id="create_agent"),
    pytest.param(_react, None, "12", id="create_react_agent"),
    pytest.param(create_agent, {"recursion_limit": 7}, "7", id="create_agent invoked with a limit"),
])
def test_the_step_limit_a_sub_agent_runs_under(build, helper_config, limit):
    """create_agent's bound 9999 wins over the parent's inherited limit; create_react_agent binds none
    and inherits it; a config passed to the sub-agent's own invoke wins over both. On langchain 1.2.10
    and 1.0.2 create_agent bound no limit yet: its sub-agent inherits the parent's 12 (on 1.0.2 the
    create_react_agent case also fails: its tools node does not inject `ToolRuntime` there)."""
    assert _limit_inside(build, helper_config) == limit


@lesson
def test_a_create_agent_sub_agent_is_not_stopped_by_the_parents_recursion_limit():
    """Twenty tool rounds (41 steps) inside a parent run limited to 12 steps. Not on langchain 1.2.10
    and 1.0.2, whose create_agent bound no limit: the parent's 12 stops the sub-agent there."""
    rounds = [[{"name": "read_limit", "args": {}}] for _ in range(20)] + ["inner done"]
    helper = _agent(rounds, [read_limit])

    @tool
    def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        messages = helper.invoke({"messages": [HumanMessage(question)]})["messages"]
        return f"{sum(isinstance(m, ToolMessage) for m in messages)} calls, then {messages[-1].content}"

    parent = _agent([[{"name": "ask_helper", "args": {"question": "go"}}],
                                                    tool_results_summary], [ask_helper])
    assert parent.invoke(GO, {"recursion_limit": 12})["messages"][-1].content == "20 calls, then inner done"
    with pytest.raises(GraphRecursionError):  # the same helper, given the parent's 12 explicitly
        helper.invoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 12})


# -- 8. deep dive: a RunnableConfig parameter --------------------------------------------------------
def _thread_in(config):
    return None if config is None else config["configurable"].get("thread_id")


@tool
def exact(city: str, config: RunnableConfig) -> str:
    """The weather, noted under the run's thread."""
    return f"thread={_thread_in(config)}"


@tool
def optional(city: str, config: Optional[RunnableConfig] = None) -> str:  # noqa: UP045 - the spelling under test
    """The weather, noted under the run's thread."""
    return f"thread={_thread_in(config)}"


@tool
def union(city: str, config: RunnableConfig | None = None) -> str:
    """The weather, noted under the run's thread."""
    return f"thread={_thread_in(config)}"


@tool
def defaulted(city: str, config: RunnableConfig = None) -> str:
    """The weather, noted under the run's thread."""
    return f"thread={_thread_in(config)}"


@lesson
@pytest.mark.parametrize(("spelling", "model_sees", "reads"), [
    (exact, ["city"], "thread=ann-1"),
    (optional, ["city", "config"], "thread=None"),
    (union, ["city", "config"], "thread=None"),
    (defaulted, ["city"], "thread=ann-1"),
], ids=["exact", "Optional", "union", "defaulted"])
def test_only_an_exact_runnable_config_annotation_is_injected_and_hidden(spelling, model_sees, reads):
    """langchain-core 1.8.3 compares the hint with `is RunnableConfig`; an optional spelling is an
    ordinary argument, and even the value the model sends for it is discarded (langchain#34803, open)."""
    shown = list(convert_to_openai_tool(spelling)["function"]["parameters"]["properties"])
    assert shown == model_sees
    forged = {"config": {"configurable": {"thread_id": "mallory-1"}}} if "config" in shown else {}
    args = {"city": "Paris"} | forged
    agent = _agent([[{"name": spelling.name, "args": args}], "done"], [spelling])
    assert agent.invoke(GO, {"configurable": {"thread_id": "ann-1"}})["messages"][2].content == reads


@lesson
@pytest.mark.parametrize("spelling", [optional, union], ids=["Optional", "union"])
def test_an_optional_config_is_offered_to_the_model_as_the_whole_runnable_config_schema(spelling):
    schema = convert_to_openai_tool(spelling)["function"]["parameters"]["properties"]["config"]
    fields = next(option["properties"] for option in schema["anyOf"] if option.get("type") == "object")
    assert {"tags", "metadata", "callbacks", "configurable", "recursion_limit"} <= set(fields)


@lesson
def test_an_ordinary_argument_named_config_never_reaches_the_function():
    """langchain#34029: the keyword `config` is kept for the run's config."""
    @tool
    def add_config(config: str) -> str:
        """Add a configuration file, by name."""
        return f"added {config}"

    assert list(convert_to_openai_tool(add_config)["function"]["parameters"]["properties"]) == ["config"]
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'config'"):
        add_config.invoke({"config": "app.yaml"})
    agent = _agent([[{"name": "add_config", "args": {"config": "app.yaml"}}], "done"],
                         [add_config])
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'config'"):
        agent.invoke(GO)  # not an argument error: the default error policy lets it crash the run


# -- 9. deep dive: jumps that fail -------------------------------------------------------------------
@lesson
@pytest.mark.parametrize("tools", [[weather], []], ids=["one tool", "no tools"])
def test_a_jump_to_model_from_the_loops_entry_raises_key_error_naming_the_hook(tools):
    """Pinned: langchain 1.5.2 (`_add_middleware_edge` leaves `model_destination` out of the path map
    of the hook that is itself the loop's entry; langchain#40136, open). The agent builds; the run
    raises."""
    @before_model(can_jump_to=["model", "end"])
    def jump_to_model(state, runtime):
        return {"jump_to": "model"}

    agent = _agent(["done"], tools, middleware=[jump_to_model])
    assert {target for source, target, _ in _edges(agent) if source == "jump_to_model.before_model"} == {
        "model", "__end__"}
    with pytest.raises(KeyError, match="jump_to_model.before_model"):
        agent.invoke(GO)


@lesson
def test_a_jump_to_model_from_a_later_before_model_goes_back_to_the_entry():
    """Pinned: langchain 1.5.2: only the entry's own jump fails; a later before_model's goes to the
    first before_model, whose hook runs again."""
    class First(AgentMiddleware):
        def before_model(self, state, runtime):
            return None

    jumped = []

    @before_model(can_jump_to=["model"])
    def jump_once(state, runtime):
        jumped.append(True)
        return {"jump_to": "model"} if len(jumped) == 1 else None

    agent = _agent(["done"], [], middleware=[First(), jump_once])
    assert _steps(agent) == [["First.before_model"], ["jump_once.before_model"],
                             ["First.before_model"], ["jump_once.before_model"], ["model"]]


@lesson
@pytest.mark.parametrize("then", ["another before_model", "the model"])
def test_an_entry_hook_that_may_jump_to_model_and_returns_none_leads_on_by_its_default_edge(then):
    """The fix for the failing entry jump: return None, and the hook's default edge leads to the next
    before_model, else to the model. Pinned: langchain 1.5.2; also langchain 1.2.18, 1.2.10 and 1.0.2."""
    @before_model(can_jump_to=["model", "end"])
    def entry(state, runtime):
        return None

    class Next(AgentMiddleware):
        def before_model(self, state, runtime):
            return None

    middleware = [entry, Next()] if then == "another before_model" else [entry]
    agent = _agent(["done"], [weather], middleware=middleware)
    following = ["Next.before_model"] if then == "another before_model" else []
    assert _steps(agent) == [["entry.before_model"], *[[n] for n in following], ["model"]]


def _counted_tool(runs):
    @tool
    def counted(city: str) -> str:
        """The weather in a city, counted."""
        runs.append(city)
        return f"{city}: 20 °C"

    return counted


def _jump_to_tools_at(length):
    @before_model(can_jump_to=["tools"])
    def to_tools(state, runtime):
        return {"jump_to": "tools"} if len(state["messages"]) == length else None

    return to_tools


@lesson
def test_a_jump_to_tools_before_any_model_turn_raises_no_ai_message_found():
    """A jump to "tools" names the node (`_resolve_jump` returns "tools", no Send): the ToolNode reads
    the whole state and finds no AIMessage. Pinned: langchain 1.5.2, langgraph-prebuilt 1.1.3; also
    langchain 1.2.18, 1.2.10 and 1.0.2."""
    runs = []
    agent = _agent([[{"name": "counted", "args": {"city": "Paris"}}], "done"], [_counted_tool(runs)],
                   middleware=[_jump_to_tools_at(1)])
    with pytest.raises(ValueError, match="No AIMessage found in input"):
        agent.invoke(GO)
    assert runs == []


@lesson
def test_a_jump_to_tools_in_an_agent_without_tools_is_refused_when_the_agent_is_built():
    """The jump edge lists "tools", which is no node: compiling the graph fails. Pinned: langchain 1.5.2,
    langgraph 1.2.24; also langchain 1.2.18, 1.2.10 and 1.0.2."""
    with pytest.raises(ValueError, match=r"At 'to_tools\.before_model' node, 'jump_edge' branch found "
                                         r"unknown target 'tools'"):
        _agent(["done"], [], middleware=[_jump_to_tools_at(1)])


@lesson
@pytest.mark.parametrize("calls", [1, 2], ids=["one call", "two calls"])
def test_a_jump_to_tools_after_an_answered_turn_runs_every_call_of_the_last_ai_message_again(calls):
    """The ToolNode, given the whole state, runs each call of the last AIMessage, answered or not: every
    tool runs twice, and each call gets a second ToolMessage. Pinned: langchain 1.5.2, langgraph-prebuilt
    1.1.3; also langchain 1.2.18, 1.2.10 and 1.0.2."""
    runs = []
    cities = ["Paris", "Rome"][:calls]
    turn = [{"name": "counted", "args": {"city": c}} for c in cities]
    agent = _agent([turn, "done"], [_counted_tool(runs)], middleware=[_jump_to_tools_at(2 + calls)])
    messages = agent.invoke(GO)["messages"]
    assert sorted(runs) == sorted(cities * 2)
    answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(answers) == sorted(c["id"] for c in messages[1].tool_calls for _ in range(2))
    assert messages[-1].content == "done"


@lesson
def test_a_hook_that_writes_an_ai_message_with_calls_and_jumps_to_tools_runs_exactly_those_calls():
    """The hook's update is applied before its jump edge reads the state: the tools node runs the calls
    of the AIMessage the hook wrote, and the loop goes on to the model. Pinned: langchain 1.5.2;
    also langchain 1.2.18, 1.2.10 and 1.0.2."""
    runs = []

    @before_model(can_jump_to=["tools"])
    def call_directly(state, runtime):
        if len(state["messages"]) == 1:
            call = {"name": "counted", "args": {"city": "Oslo"}, "id": "direct-1"}
            return {"messages": [AIMessage("", tool_calls=[call])], "jump_to": "tools"}
        return None

    offered = Offered()
    agent = _agent(["(the hook's turn)", "done"], [_counted_tool(runs)], middleware=[call_directly])
    messages = agent.invoke(GO, {"callbacks": [offered]})["messages"][1:]
    assert runs == ["Oslo"] and len(offered.calls) == 1
    assert [(type(m).__name__, m.content) for m in messages] == [
        ("AIMessage", ""), ("ToolMessage", "Oslo: 20 °C"), ("AIMessage", "done")]
