"""Unit tests for helpers.history."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from helpers.history import unanswered_tool_calls


def ai(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": i} for i in ids])


def test_answered_calls_are_not_reported():
    assert unanswered_tool_calls([HumanMessage("hi"), ai("1"), ToolMessage("ok", tool_call_id="1")]) == []


def test_unanswered_calls_are_reported_in_call_order():
    history = [ai("1", "2"), ToolMessage("ok", tool_call_id="2"), ai("3")]
    assert unanswered_tool_calls(history) == ["1", "3"]


def test_a_state_dict_is_rejected_with_a_hint():
    with pytest.raises(TypeError, match=r"state\['messages'\]"):
        unanswered_tool_calls({"messages": []})
