"""Tests for helpers.agents (taught in notebooks/09_prebuilt_agents.ipynb)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from helpers.agents import conversation, route_after_model, tool_task_inputs
from helpers.graphs import tool_loop
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.tools import make_city_tools

BOTH = [{"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "lookup_attraction", "args": {"city": "Paris"}}]


def test_conversation_keeps_type_content_and_tool_calls():
    messages = [
        HumanMessage("Paris?", id="h1"),
        AIMessage("", tool_calls=[{"name": "f", "args": {"b": 2, "a": 1}, "id": "c1"}], id="a1"),
        ToolMessage("ok", tool_call_id="c1", name="f", id="t1"),
        AIMessage("done", response_metadata={"model_name": "x"}),
    ]
    assert conversation(messages) == [
        ("human", "Paris?", ()),
        ("ai", "", (("f", (("a", 1), ("b", 2)), "c1"),)),
        ("tool", "ok", ()),
        ("ai", "done", ()),
    ]


def test_conversation_ignores_ids_and_metadata():
    one = [HumanMessage("q", id="x"), AIMessage("a", id="y", response_metadata={"k": 1})]
    two = [HumanMessage("q", id="z"), AIMessage("a")]
    assert conversation(one) == conversation(two)


def test_conversation_tells_different_tool_calls_apart():
    one = AIMessage("", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}])
    two = AIMessage("", tool_calls=[{"name": "f", "args": {"a": 2}, "id": "c1"}])
    assert conversation([one]) != conversation([two])


def test_tool_task_inputs_of_a_hand_wired_loop_is_one_state_per_step():
    tools = make_city_tools(0.0, sync=True)
    loop = tool_loop(ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools), tools)
    inputs = tool_task_inputs(loop, {"messages": [("user", "Paris?")]})
    assert len(inputs) == 1
    assert set(inputs[0]) == {"messages"}


def test_tool_task_inputs_names_the_nodes_when_the_node_is_missing():
    tools = make_city_tools(0.0, sync=True)
    loop = tool_loop(ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools), tools)
    with pytest.raises(ValueError, match=r"no node 'nope'.*'llm'"):
        tool_task_inputs(loop, {"messages": [("user", "Paris?")]}, node="nope")


def test_route_after_model_of_the_hand_wired_loop_is_the_node_name():
    tools = make_city_tools(0.0, sync=True)
    loop = tool_loop(ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools), tools)
    ai = AIMessage("", tool_calls=[{"name": "lookup_weather", "args": {"city": "Paris"}, "id": "a"}])
    assert route_after_model(loop, {"messages": [HumanMessage("Paris?"), ai]}) == "tools"


def test_route_after_model_names_the_missing_node():
    tools = make_city_tools(0.0, sync=True)
    loop = tool_loop(ScriptedChatModel(script=[BOTH, tool_results_summary]).bind_tools(tools), tools)
    with pytest.raises(ValueError, match="No conditional edge"):
        route_after_model(loop, {"messages": []}, node="nowhere")
