"""A hand-built async tool node: the one lesson 02 writes out, kept here so code outside the
notebook (`make bench`, which compares it with ToolNode) runs exactly what lesson 02 taught.

The code of `CustomAsyncToolNode` below is the same code as the final version built in
`notebooks/02_custom_async_tool_node.ipynb` (`tests/test_nodes.py` checks that, docstrings aside).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp, is_invalid_resume


class CustomAsyncToolNode:
    """Run every tool call of the last AIMessage concurrently; answer each with a ToolMessage.

    Only tools registered by name can run (the allow-list): a model never reaches arbitrary
    Python by naming it. Each call's failure, unknown name or timeout becomes a
    `ToolMessage(status="error")` for that call alone, so one bad call does not sink the batch.
    Only the node's own deadline produces the "took longer than" message: a `TimeoutError` the
    tool raises itself (an HTTP client's read timeout) is reported like any other tool error.
    LangGraph's control flow is not an error and passes through, as in ToolNode: an `interrupt()`
    (`GraphInterrupt`), a `ParentCommand` raised by a graph run inside a tool — every
    `GraphBubbleUp` — and a resume value that fails its interrupt's `response_schema`.
    A `Command` a tool *returns* is not handled: like any result it becomes the ToolMessage's text
    (`str(result)`), so its update or hand-off is lost; give such tools to ToolNode (lesson 06).

    Args:
        tools: the tools a model may call, looked up by their `name`.
        timeout: seconds one call may take before it is cancelled and answered with an error
            (`None`: no limit).
        max_concurrency: how many calls may run at the same moment (`None`: all at once).

    Example:
        ```python
        node = CustomAsyncToolNode(make_city_tools(), timeout=1.0, max_concurrency=4)
        update = await node({"messages": [ai_message]})
        update["messages"]   # one ToolMessage per tool call, in the order of the calls
        ```

    Taught in `notebooks/02_custom_async_tool_node.ipynb`.
    """

    def __init__(
        self,
        tools: Sequence[BaseTool],
        *,
        timeout: float | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        self.tools_by_name = {tool.name: tool for tool in tools}  # the allow-list
        self.timeout = timeout
        self.max_concurrency = max_concurrency

    async def __call__(self, state: dict[str, Any]) -> dict[str, list[ToolMessage]]:
        """Run the last AIMessage's tool calls; return `{"messages": [ToolMessage, ...]}`."""
        messages = state.get("messages", [])
        if not messages or not isinstance(messages[-1], AIMessage):
            raise ValueError(
                "The last message must be an AIMessage with tool calls: route to this node "
                "only after the model asked for tools (e.g. with tools_condition)."
            )
        limit = (
            asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else contextlib.nullcontext()
        )
        outputs = await asyncio.gather(*(self._run_one(call, limit) for call in messages[-1].tool_calls))
        return {"messages": list(outputs)}

    async def _run_one(self, call: dict[str, Any], limit: Any) -> ToolMessage:
        """Run one tool call; every way it can go wrong becomes an error ToolMessage."""
        name = call["name"]
        tool = self.tools_by_name.get(name)
        if tool is None:  # 1. not on the allow-list: never look it up anywhere else
            allowed = ", ".join(sorted(self.tools_by_name))
            return self._error(call, f"Error: {name!r} is not an allowed tool; use one of: {allowed}.")
        async with limit:  # 3. at most max_concurrency calls inside this block at once
            deadline = asyncio.timeout(self.timeout)  # 2. this call's own deadline (None: none)
            try:
                async with deadline:  # cancels the call when time is up
                    result = await tool.ainvoke(call["args"])
            except GraphBubbleUp:  # 4. interrupt(), Command.PARENT: LangGraph's control flow
                raise
            except Exception as exc:
                if is_invalid_resume(exc):  # 4. a resume value the interrupt's schema refused
                    raise
                if deadline.expired():  # 2. only our own deadline gives the timeout message
                    return self._error(call, f"Error: {name!r} took longer than {self.timeout} seconds.")
                return self._error(call, f"Error: {exc!r}")  # 1. an error answers this call only
        return ToolMessage(content=str(result), name=name, tool_call_id=call["id"])

    @staticmethod
    def _error(call: dict[str, Any], text: str) -> ToolMessage:
        return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")
