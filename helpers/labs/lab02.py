"""Lab 02 — Build a tool node (after `notebooks/02_custom_async_tool_node.ipynb`).

q1: `MyToolNode(tools, *, timeout=None, max_concurrency=None)`, an async callable taking
    `{"messages": [...]}` and returning `{"messages": [ToolMessage, ...]}`. The check drives it with
    unknown names, bad arguments, a raising tool, a hanging tool, a tool that raises its own
    `TimeoutError`, many calls, a concurrency limit, and inside a real `StateGraph`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, MessagesState, StateGraph

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.labs import CheckFailed, Exercise, fail, run_async, section
from helpers.labs.lab01 import speedup
from helpers.timing import CallRecorder, format_seconds
from helpers.tools import make_city_tools, make_failing_tool

STEP = 0.02
TIMEOUT = 1.0  # far above a call (0.02 s) plus 0.3 s stalls on a machine whose cores are both busy
HANG = 3.0
LESSON = "02_custom_async_tool_node"
GATEWAY_MESSAGE = "upstream gateway timed out (the tool's own error)"


def make_hanging_tool(seconds: float = HANG) -> BaseTool:
    """`slow_search(query)`: waits `seconds` (far longer than the node's timeout)."""

    async def slow_search(query: str) -> str:
        """Search slowly."""
        await asyncio.sleep(seconds)
        return f"results for {query}"

    return StructuredTool.from_function(coroutine=slow_search)


def make_gateway_tool() -> BaseTool:
    """`call_gateway(path)`: raises its OWN `TimeoutError` at once — not the node's timeout."""

    async def call_gateway(path: str) -> str:
        """Call an upstream gateway."""
        raise TimeoutError(GATEWAY_MESSAGE)

    return StructuredTool.from_function(coroutine=call_gateway)


def make_tools() -> list[BaseTool]:
    """The tools the notebook tries the node with: weather, attraction, a failing traffic tool,
    a hanging search and a gateway that raises its own TimeoutError."""
    return [
        *make_city_tools(delay=STEP),
        make_failing_tool(delay=0),
        make_hanging_tool(),
        make_gateway_tool(),
    ]


def _messages(node: Any, calls: list[tuple[str, dict]], key: str, where: str) -> list[ToolMessage]:
    ai = tool_calls_message(calls)

    async def go():
        return await node({"messages": [HumanMessage("go"), ai]})

    try:
        out = run_async(go)
    except CheckFailed:
        raise
    except NotImplementedError:
        raise
    except Exception as exc:
        names = [name for name, _ in calls]
        raise fail(
            f"the node raised instead of answering the calls {names}.",
            key=key,
            where=section(LESSON, "Errors answer their own call"),
            expected="one ToolMessage per call; a failure becomes "
            "ToolMessage(status='error') for that call alone",
            observed=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300],
        ) from None
    messages = out.get("messages") if isinstance(out, dict) else None
    if not isinstance(messages, list) or not all(isinstance(m, ToolMessage) for m in messages):
        raise fail(
            "the node must return {'messages': [ToolMessage, ...]}.",
            key=key,
            where=where,
            expected="{'messages': [ToolMessage(...), ...]}",
            observed=repr(out)[:300],
        )
    ids = [m.tool_call_id for m in messages]
    want = [c["id"] for c in ai.tool_calls]
    if ids != want:
        raise fail(
            "one answer per call, in call order, with the call's id.",
            key=key,
            where=where,
            expected=f"tool_call_ids {want}",
            observed=f"{ids}",
        )
    return messages


def _is_error(message: ToolMessage) -> bool:
    return message.status == "error"


def check_node(MyToolNode: Any) -> str:  # noqa: N803 - the learner's class name
    key = "q1"
    where = section(LESSON, "4. Production-minded: `CustomAsyncToolNode`")
    done = []
    try:
        node = MyToolNode(make_tools(), timeout=TIMEOUT)
    except TypeError as exc:
        raise fail(
            "the node could not be built.",
            key=key,
            where=where,
            expected="MyToolNode(tools, timeout=0.1, max_concurrency=None) to work",
            observed=f"TypeError: {exc}",
        ) from None

    # 1. the allow-list
    [msg] = _messages(node, [("delete_everything", {"path": "/"})], key, where)
    if not _is_error(msg) or "lookup_weather" not in str(msg.content):
        raise fail(
            "an unknown tool name needs an error answer that names the allowed tools.",
            key=key,
            where=section(LESSON, "2. The allow-list"),
            expected="ToolMessage(status='error') whose content lists the allowed tools, e.g. "
            "'lookup_weather'",
            observed=f"status={msg.status!r}, content={msg.content!r}"[:300],
        )
    done.append("unknown name")

    # 2. bad arguments, 3. a raising tool, next to a good call
    msgs = _messages(
        node,
        [
            ("lookup_weather", {"town": "Paris"}),
            ("lookup_traffic", {"city": "Paris"}),
            ("lookup_weather", {"city": "Paris"}),
        ],
        key,
        where,
    )
    if not _is_error(msgs[0]):
        raise fail(
            "bad arguments need an error answer.",
            key=key,
            where=where,
            expected="ToolMessage(status='error') for lookup_weather(town='Paris')",
            observed=f"status={msgs[0].status!r}, content={msgs[0].content!r}"[:300],
        )
    if not _is_error(msgs[1]) or "unreachable" not in str(msgs[1].content):
        raise fail(
            "a tool's exception needs an error answer that says what went wrong.",
            key=key,
            where=section(LESSON, "Errors answer their own call"),
            expected="ToolMessage(status='error') containing the tool's error "
            "('traffic service unreachable for Paris')",
            observed=f"status={msgs[1].status!r}, content={msgs[1].content!r}"[:300],
        )
    if _is_error(msgs[2]) or msgs[2].content != "Paris: sunny, 25 °C":
        raise fail(
            "a good call next to failing ones must still succeed.",
            key=key,
            where=where,
            expected="ToolMessage('Paris: sunny, 25 °C') with status 'success'",
            observed=f"status={msgs[2].status!r}, content={msgs[2].content!r}"[:300],
        )
    done.append("bad args")
    done.append("raising tool")

    # 4. the tool's own TimeoutError is a tool error, not the node's timeout
    timeout_where = section(LESSON, "A per-call timeout")
    msgs = _messages(
        node, [("call_gateway", {"path": "/v1"}), ("lookup_attraction", {"city": "Paris"})], key, where
    )
    if not _is_error(msgs[0]) or "upstream gateway timed out" not in str(msgs[0].content):
        raise fail(
            "the tool's own TimeoutError was reported as the node's timeout.",
            key=key,
            where=timeout_where,
            expected=f"an error answer carrying the tool's message ({GATEWAY_MESSAGE!r})",
            observed=f"content={msgs[0].content!r} — an `except TimeoutError` around "
            "wait_for catches both; tell them apart",
        )
    done.append("the tool's own TimeoutError")

    # 5. many calls at once, 6. a concurrency limit
    recorder = CallRecorder()
    timed = make_timed_tools(12, STEP, recorder=recorder)
    node = MyToolNode(timed)
    _messages(node, [(t.name, {"x": i}) for i, t in enumerate(timed)], key, where)
    ratio, peak = speedup(recorder), recorder.max_in_flight()
    if peak < 6 or ratio < 3:
        raise fail(
            "twelve independent calls did not run together.",
            key=key,
            where=section("01_sequential_vs_gather", "2. `asyncio.gather`: overlap the waits"),
            expected="most of the 12 calls in flight at once (a speed-up of at least 3x)",
            observed=f"at most {peak} in flight, speed-up {ratio:.2f}x",
        )
    done.append("12 calls together")
    recorder.reset()
    node = MyToolNode(timed, max_concurrency=3)
    _messages(node, [(t.name, {"x": i}) for i, t in enumerate(timed[:9])], key, where)
    peak = recorder.max_in_flight()
    if not 2 <= peak <= 3:
        raise fail(
            "max_concurrency=3 was not kept." if peak > 3 else "the limit made the calls sequential.",
            key=key,
            where=section(LESSON, "A concurrency limit"),
            expected="2 or 3 of the 9 calls in flight at once, never more than 3",
            observed=f"{peak} in flight at once"
            + (" — a Semaphore created per call limits nothing: create one per node run" if peak > 3 else ""),
        )
    done.append("max_concurrency")

    # 7. a hanging tool is cut at the node's timeout; the call beside it still succeeds
    node = MyToolNode(make_tools(), timeout=TIMEOUT)
    start = time.perf_counter()
    msgs = _messages(
        node, [("slow_search", {"query": "tea"}), ("lookup_attraction", {"city": "Paris"})], key, where
    )
    took = time.perf_counter() - start
    if took > HANG * 0.9 or not _is_error(msgs[0]):
        raise fail(
            "a hanging tool must be cut off at the node's timeout.",
            key=key,
            where=timeout_where,
            expected=f"an error answer for slow_search after about {format_seconds(TIMEOUT)}",
            observed=f"the batch took {format_seconds(took)}; slow_search answered status={msgs[0].status!r}",
        )
    if _is_error(msgs[1]):
        raise fail(
            "a good call next to a hanging one must still succeed.",
            key=key,
            where=where,
            expected="ToolMessage('Paris: the Louvre')",
            observed=repr(msgs[1].content),
        )
    done.append("hanging tool")

    # 8. as a node in a real graph
    builder = StateGraph(MessagesState)
    builder.add_node("tools", MyToolNode(make_city_tools(delay=STEP)))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    ai = AIMessage(
        "",
        tool_calls=[{"name": "lookup_weather", "args": {"city": "Tokyo"}, "id": "g-1", "type": "tool_call"}],
    )
    final = run_async(lambda: graph.ainvoke({"messages": [HumanMessage("weather?"), ai]}))
    last = final["messages"][-1]
    if not isinstance(last, ToolMessage) or last.content != "Tokyo: light rain, 21 °C":
        raise fail(
            "inside a StateGraph the answer did not land in the state.",
            key=key,
            where=section(LESSON, "5. As a node in a `StateGraph`"),
            expected="the graph's last message: ToolMessage('Tokyo: light rain, 21 °C')",
            observed=repr(last)[:300],
        )
    done.append("in a StateGraph")
    return "; ".join(done) + " — all answered as expected."


q1 = Exercise(
    "02",
    "q1",
    ("MyToolNode",),
    check_node,
    (
        "Start from lesson 02's node: look each call's name up in a dict of allowed tools, run every call "
        "in its own coroutine with `asyncio.gather`, and make each coroutine return a ToolMessage whatever "
        "happens.",
        "Three details the check probes: (1) one `asyncio.Semaphore(max_concurrency)` per node run, "
        "shared by "
        "all calls — not one per call; (2) `asyncio.wait_for` raises `TimeoutError` both when the time is up "
        "and when the tool itself raises TimeoutError: use `async with asyncio.timeout(t) as scope:` and ask "
        "`scope.expired()`, or run the tool as a task and use `asyncio.wait`; (3) return errors as "
        "`ToolMessage(content, name=..., tool_call_id=call['id'], status='error')`.",
    ),
)

__all__ = ["CheckFailed", "GATEWAY_MESSAGE", "make_tools", "q1"]
