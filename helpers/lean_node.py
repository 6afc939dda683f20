"""A lean async tool node: lesson 02's allow-list, error messages and timeout, without the per-call
machinery of langchain-core's `BaseTool.ainvoke` (callbacks, run managers, config plumbing,
signature inspection). `make bench` measures it beside `CustomAsyncToolNode` and `ToolNode` to
show where their per-call time goes.

Shown in `notebooks/03_builtin_toolnode.ipynb` (the benchmark section) and `docs/benchmark.md` (`make bench`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

from helpers.nodes import CustomAsyncToolNode


class LeanAsyncToolNode(CustomAsyncToolNode):
    """Run the last AIMessage's tool calls concurrently, calling each tool's coroutine directly.

    Keeps what lesson 02's `CustomAsyncToolNode` promises — only allow-listed names run, every
    failure (unknown name, bad arguments, an exception, the node's own deadline) answers its call
    alone with `ToolMessage(status="error")`, results come back in the order of the calls — and
    skips what a plain batch of async tools does not need: no callbacks or tracing events, no
    `RunnableConfig` passed to tools, no injected arguments (`InjectedState`, `ToolRuntime`), no
    `Command` returns, no interceptors. Tools must be `StructuredTool`s with a coroutine and a
    Pydantic `args_schema` (what `@tool` on an `async def` builds); arguments are validated and
    coerced by that schema, as `BaseTool` would.

    Args:
        tools: the tools a model may call, looked up by their `name`.
        timeout: seconds one call may take (`None`: no limit). Only this deadline produces the
            "took longer than" message; a `TimeoutError` the tool raises itself is a tool error.

    Example:
        ```python
        node = LeanAsyncToolNode(make_timed_tools(64, 0.05), timeout=1.0)
        update = await node({"messages": [ai_message]})
        update["messages"]   # one ToolMessage per tool call, in the order of the calls
        ```

    Shown in `notebooks/03_builtin_toolnode.ipynb` (the benchmark section); measured by `make bench`.
    """

    def __init__(self, tools: Sequence[BaseTool], *, timeout: float | None = None) -> None:
        super().__init__(tools, timeout=timeout)  # the allow-list: self.tools_by_name
        self.callables: dict[str, tuple[Any, type[BaseModel]]] = {}
        for tool in tools:
            coroutine, schema = getattr(tool, "coroutine", None), tool.args_schema
            if coroutine is None or not (isinstance(schema, type) and issubclass(schema, BaseModel)):
                raise TypeError(
                    f"LeanAsyncToolNode runs async StructuredTools with a Pydantic args_schema; "
                    f"{tool.name!r} is not one. Use CustomAsyncToolNode or ToolNode for it."
                )
            self.callables[tool.name] = (coroutine, schema)

    async def _run_one(self, call: dict[str, Any], limit: Any = None) -> ToolMessage:
        """One call, its coroutine awaited directly (`limit` is unused: no concurrency limit here)."""
        name = call["name"]
        entry = self.callables.get(name)
        if entry is None:
            allowed = ", ".join(sorted(self.tools_by_name))
            return self._error(call, f"Error: {name!r} is not an allowed tool; use one of: {allowed}.")
        coroutine, schema = entry
        args = call["args"]
        try:
            validated = schema.model_validate(args)
        except ValidationError as exc:
            return self._error(call, f"Error: invalid arguments for {name!r}: {exc.errors()[0]['msg']}.")
        kwargs = {field: getattr(validated, field) for field in args if field in schema.model_fields}
        deadline = asyncio.timeout(self.timeout) if self.timeout is not None else None
        try:
            async with deadline or contextlib.nullcontext():
                result = await coroutine(**kwargs)
        except TimeoutError as exc:
            if deadline is not None and deadline.expired():
                return self._error(call, f"Error: {name!r} took longer than {self.timeout} seconds.")
            return self._error(call, f"Error: {exc!r}")
        except Exception as exc:
            return self._error(call, f"Error: {exc!r}")
        content = result if isinstance(result, str) else str(result)
        return ToolMessage(content=content, name=name, tool_call_id=call["id"])
