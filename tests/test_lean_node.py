"""LeanAsyncToolNode keeps the hand-built node's promises while skipping BaseTool's machinery."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.tools import tool

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.lean_node import LeanAsyncToolNode


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def read_timeout(url: str) -> str:
    """Fail the way an HTTP client's read timeout does."""
    raise TimeoutError(f"read timed out: {url}")


@tool
async def hang(x: int) -> str:
    """Never answer in time."""
    await asyncio.sleep(10)
    return "late"


def run(node, calls):
    return asyncio.run(node({"messages": [tool_calls_message(calls)]}))["messages"]


def test_answers_every_call_in_order_and_coerces_args_like_basetool():
    out = run(LeanAsyncToolNode([add]), [("add", {"a": "2", "b": 3}), ("add", {"a": 1, "b": 1})])
    assert [(m.content, m.tool_call_id, m.status) for m in out] == [
        ("5", "call-0", "success"), ("2", "call-1", "success")]


def test_unknown_names_bad_args_and_exceptions_answer_their_call_alone():
    out = run(LeanAsyncToolNode([add, read_timeout]),
              [("rm", {}), ("add", {"a": 1}), ("read_timeout", {"url": "u"}), ("add", {"a": 1, "b": 2})])
    assert [m.status for m in out] == ["error", "error", "error", "success"]
    assert out[0].content == "Error: 'rm' is not an allowed tool; use one of: add, read_timeout."
    assert out[1].content == "Error: invalid arguments for 'add': Field required."
    # the tool's own TimeoutError is a tool error, not the node's deadline
    assert out[2].content == "Error: TimeoutError('read timed out: u')"


@pytest.mark.timing
def test_only_the_nodes_own_deadline_says_took_longer():
    out = run(LeanAsyncToolNode([hang, read_timeout], timeout=0.05),
              [("hang", {"x": 1}), ("read_timeout", {"url": "u"})])
    assert out[0].content == "Error: 'hang' took longer than 0.05 seconds."
    assert out[1].content == "Error: TimeoutError('read timed out: u')"


def test_refuses_tools_it_cannot_run_and_says_what_to_use():
    with pytest.raises(TypeError, match="Use CustomAsyncToolNode or ToolNode"):
        LeanAsyncToolNode(make_timed_tools(1, 0.0, kind="sync"))
