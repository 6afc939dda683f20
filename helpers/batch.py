"""A batch of tool calls for concurrency demos: the AIMessage that asks for them, and N timed tools.

`tool_calls_message` writes the AIMessage a model would send; `make_timed_tools` builds N
independent tools (`t00`, `t01`, ...) that each wait a fixed delay inside a `CallRecorder` span,
in one of the three shapes that behave differently under ToolNode: a sync function, an async
function, or an `async def` that blocks the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any, Literal

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from helpers.timing import CallRecorder, Rendezvous

ToolKind = Literal["sync", "async", "blocking"]
KINDS: tuple[str, ...] = ("sync", "async", "blocking")


class TimedToolArgs(BaseModel):
    """The one argument every timed tool takes (shared, so building 64 tools stays instant)."""

    x: int = Field(description="Any integer; the tool ignores it.")


def tool_calls_message(calls: Sequence[tuple[str, Mapping[str, Any]] | BaseTool]) -> AIMessage:
    """Return the AIMessage a model sends to ask for these tool calls, ids `call-0`, `call-1`, ...

    Args:
        calls: `(name, args)` pairs, or tools (each is then called with `{"x": index}`, the
            argument `make_timed_tools` tools take).

    Example:
        ```python
        tool_calls_message([("lookup_weather", {"city": "Paris"})]).tool_calls
        # [{'name': 'lookup_weather', 'args': {'city': 'Paris'}, 'id': 'call-0', 'type': 'tool_call'}]
        ```

    Taught in `notebooks/03_builtin_toolnode.ipynb`.
    """
    tool_calls = []
    for index, call in enumerate(calls):
        name, args = (call.name, {"x": index}) if isinstance(call, BaseTool) else call
        tool_calls.append({"name": name, "args": dict(args), "id": f"call-{index}", "type": "tool_call"})
    return AIMessage(content="", tool_calls=tool_calls)


def make_timed_tools(
    n: int,
    delay: float | Sequence[float],
    *,
    kind: ToolKind = "async",
    recorder: CallRecorder | None = None,
    gate: Rendezvous | None = None,
) -> list[BaseTool]:
    """Return `n` independent tools `t00`, `t01`, ... that each wait `delay` seconds.

    Args:
        n: how many tools.
        delay: seconds each call waits; or one duration per tool (`n` of them), e.g.
            `[1.0, 0.2, 0.2, 0.2, 0.2]` for one long call and four short ones.
        kind: `"sync"` (a `def` that calls `time.sleep`: ToolNode runs it in a thread),
            `"async"` (an `async def` that awaits `asyncio.sleep`: overlaps on the event loop), or
            `"blocking"` (an `async def` that calls `time.sleep`: the trap that stalls the loop).
        recorder: if given, each call is recorded as a span labelled with the tool's name.
        gate: if given, each call first waits at this `helpers.timing.Rendezvous` (inside its
            span), so "k at once" is proven by events rather than by the clock. Not for
            `"blocking"` tools, which never run two at once.

    Example:
        ```python
        tools = make_timed_tools(8, 0.1, kind="sync", recorder=rec)
        ToolNode(tools).invoke([tool_calls_message(tools)], runtime=Runtime())
        ```

    Taught in `notebooks/03_builtin_toolnode.ipynb`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {KINDS}: pick how the tool waits.")
    if kind == "blocking" and gate is not None:
        raise ValueError("A gate would stall a blocking tool's event loop: use kind='sync' or 'async'.")
    delays = [float(delay)] * n if isinstance(delay, int | float) else [float(d) for d in delay]
    if len(delays) != n:
        raise ValueError(f"{len(delays)} delays for n={n} tools: give one delay, or one per tool.")
    return [_timed_tool(f"t{index:02d}", delays[index], kind, recorder, gate) for index in range(n)]


def _timed_tool(
    name: str, delay: float, kind: str, recorder: CallRecorder | None, gate: Rendezvous | None
) -> BaseTool:
    span = (lambda: recorder.span(name)) if recorder is not None else nullcontext
    description = f"Wait {delay} s ({kind}) and return the tool's name."

    if kind == "sync":

        def wait(x: int) -> str:
            with span():
                if gate is not None:
                    gate.wait()
                time.sleep(delay)
            return name

        return StructuredTool.from_function(
            func=wait, name=name, description=description, args_schema=TimedToolArgs
        )

    async def await_it(x: int) -> str:
        with span():
            if gate is not None:
                await gate.wait_async()
            if kind == "async":
                await asyncio.sleep(delay)
            else:
                time.sleep(delay)  # blocks the event loop: nothing else runs meanwhile
        return name

    return StructuredTool.from_function(
        coroutine=await_it, name=name, description=description, args_schema=TimedToolArgs
    )
