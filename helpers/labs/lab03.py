"""Lab 03 — Meet an error policy (after `notebooks/03_builtin_toolnode.ipynb`).

q1: `build_node(tools) -> ToolNode` configured (`handle_tool_errors` and/or interceptors) so that:

1. bad arguments from the model go back to the model (an error ToolMessage);
2. `ConnectionError` (an upstream that is down) is retried once; if it fails again, the model gets an
   error ToolMessage saying `<tool> is unavailable`;
3. any other exception is a bug: it stops the run (it propagates out of the node);
4. an unknown tool name is answered with an error ToolMessage;
5. all of it under `invoke` and under `ainvoke`.

The check runs a real ToolNode case by case, both ways, and names the plausible configurations that
silently do something else (`handle_tool_errors=True` swallows the bug and starves the retry; an
exception tuple switches off the argument-error answer; an async-only interceptor is skipped by
`invoke`).
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from helpers.batch import tool_calls_message
from helpers.labs import CheckFailed, Exercise, fail, run_async, section
from helpers.tools import make_city_tools, make_failing_tool

LESSON = "03_builtin_toolnode"


class Attempts:
    """Counts calls per tool name, from any thread."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, name: str) -> int:
        with self._lock:
            self.counts[name] = self.counts.get(name, 0) + 1
            return self.counts[name]


def make_tools(attempts: Attempts | None = None) -> list[BaseTool]:
    """`lookup_weather`, `lookup_traffic` (always down: ConnectionError), `lookup_trains` (down on
    the first try, fine on the second) and `lookup_hotel` (a bug: KeyError). Sync tools, so they
    run under both `invoke` and `ainvoke`."""
    attempts = attempts or Attempts()
    weather = make_city_tools(delay=0, sync=True)[0]
    down = make_failing_tool(delay=0, sync=True)

    def counted(tool: BaseTool) -> BaseTool:
        inner = tool.func

        def run(city: str) -> str:
            attempts.add(tool.name)
            return inner(city)

        return StructuredTool.from_function(func=run, name=tool.name, description=tool.description)

    def lookup_trains(city: str) -> str:
        """Look up train departures for a city (its service drops the first request)."""
        if attempts.add("lookup_trains") == 1:
            raise ConnectionError("train service reset the connection")
        return f"{city}: trains every 10 minutes"

    def lookup_hotel(city: str) -> str:
        """Look up a hotel in a city (this tool has a bug)."""
        attempts.add("lookup_hotel")
        rooms: dict[str, int] = {}
        return f"{city}: {rooms['free']} rooms free"  # KeyError: a bug, not an outage

    return [
        counted(weather),
        counted(down),
        StructuredTool.from_function(lookup_trains),
        StructuredTool.from_function(lookup_hotel),
    ]


def _run(node: ToolNode, call: tuple[str, dict], way: str) -> list[Any]:
    batch = [tool_calls_message([call])]
    if way == "invoke":
        return node.invoke(batch, runtime=Runtime())
    return run_async(lambda: node.ainvoke(batch, runtime=Runtime()))


def _describe(out: Any) -> str:
    if isinstance(out, list) and out and isinstance(out[0], ToolMessage):
        return f"ToolMessage(status={out[0].status!r}, content={str(out[0].content)[:120]!r})"
    return repr(out)[:200]


POLICY = {
    "bad arguments": "back to the model as an error ToolMessage",
    "ConnectionError twice": "retried once, then an error ToolMessage saying 'lookup_traffic is unavailable'",
    "ConnectionError once": "retried once; the second try's answer reaches the model",
    "a bug (KeyError)": "stops the run: the KeyError propagates out of the node",
    "an unknown tool": "back to the model as an error ToolMessage",
}


def check_policy(build_node: Any) -> str:
    key = "q1"
    matrix = section(LESSON, "The `handle_tool_errors` matrix")
    default = section(LESSON, "The default: argument errors are answered, everything else raises")
    pitfalls = section("08_interceptors", "Pitfalls")
    for way in ("invoke", "ainvoke"):
        cases = [
            ("bad arguments", ("lookup_weather", {"town": "Paris"})),
            ("ConnectionError twice", ("lookup_traffic", {"city": "Paris"})),
            ("ConnectionError once", ("lookup_trains", {"city": "Paris"})),
            ("a bug (KeyError)", ("lookup_hotel", {"city": "Paris"})),
            ("an unknown tool", ("book_flight", {"city": "Paris"})),
        ]
        for case, call in cases:
            attempts = Attempts()
            node = build_node(make_tools(attempts))
            if not isinstance(node, ToolNode):
                raise fail(
                    "`build_node` must return a ToolNode.",
                    key=key,
                    where=matrix,
                    expected="ToolNode(tools, ...)",
                    observed=repr(node)[:200],
                )
            where_case = f"{case} under {way}"
            try:
                out = _run(node, call, way)
            except CheckFailed:
                raise
            except Exception as exc:
                out, raised = None, exc
            else:
                raised = None
            tries = attempts.counts.get(call[0], 0)
            if case == "a bug (KeyError)":
                if raised is None:
                    raise fail(
                        f"{where_case}: the bug reached the model instead of stopping the run.",
                        key=key,
                        where=matrix,
                        expected=POLICY[case],
                        observed=_describe(out)
                        + " — handle_tool_errors=True (or a catch-all handler) turns every "
                        "exception into a message",
                    )
                if not _caused_by(raised, KeyError):
                    raise fail(
                        f"{where_case}: the run stopped with another exception.",
                        key=key,
                        where=default,
                        expected="KeyError('free')",
                        observed=f"{type(raised).__name__}: {raised}"[:200],
                    )
                continue
            if raised is not None:
                hint = ""
                if isinstance(raised, ConnectionError) and way == "invoke" and tries == 1:
                    hint = (
                        " — no retry ran under invoke: an `awrap_tool_call` alone is skipped by "
                        "sync invoke; give `wrap_tool_call` too"
                    )
                elif case == "bad arguments":
                    hint = (
                        " — an exception type, a tuple or a narrowly annotated handler switches off "
                        "the default answer to argument errors"
                    )
                raise fail(
                    f"{where_case}: the run stopped, but the policy says {POLICY[case]}.",
                    key=key,
                    where=pitfalls if "awrap" in hint else (matrix if hint else default),
                    expected=POLICY[case],
                    observed=f"{type(raised).__name__}: {' '.join(str(raised).split())}"[:160] + hint,
                )
            message = out[0] if isinstance(out, list) and out else None
            if not isinstance(message, ToolMessage):
                raise fail(
                    f"{where_case}: no ToolMessage came back.",
                    key=key,
                    where=matrix,
                    expected=POLICY[case],
                    observed=repr(out)[:200],
                )
            if case == "ConnectionError once":
                if message.status == "error" or tries != 2:
                    raise fail(
                        f"{where_case}: the retry did not happen.",
                        key=key,
                        where=section("08_interceptors", "Retry"),
                        expected=POLICY[case],
                        observed=f"{tries} attempt(s), then {_describe(out)}"
                        + (
                            " — with handle_tool_errors=True the failure is already a ToolMessage "
                            "inside `execute`, so your retry never sees an exception"
                            if tries == 1
                            else ""
                        ),
                    )
            elif case == "ConnectionError twice":
                if (
                    message.status != "error"
                    or "lookup_traffic is unavailable" not in str(message.content)
                    or tries != 2
                ):
                    raise fail(
                        f"{where_case}: not what the policy says.",
                        key=key,
                        where=section("08_interceptors", "Retry"),
                        expected=POLICY[case],
                        observed=f"{tries} attempt(s), then {_describe(out)}"
                        + (
                            " — the failure was already a ToolMessage inside `execute` "
                            "(handle_tool_errors=True, or one naming ConnectionError), so the retry "
                            "never saw an exception"
                            if tries == 1 and message.status == "error"
                            else ""
                        ),
                    )
            elif message.status != "error":
                raise fail(
                    f"{where_case}: expected an error answer.",
                    key=key,
                    where=matrix,
                    expected=POLICY[case],
                    observed=_describe(out),
                )
    return (
        "bad arguments answered, outage retried once then 'unavailable', a flaky call recovered, "
        "the bug stopped the run, unknown tool answered — under invoke and ainvoke."
    )


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    while exc is not None:
        if isinstance(exc, kind):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


q1 = Exercise(
    "03",
    "q1",
    ("build_node",),
    check_policy,
    (
        "The default `handle_tool_errors` already answers bad arguments and lets every other exception "
        "raise — keep it. What is missing is the retry, which an interceptor adds.",
        "Write a sync `wrap_tool_call(request, execute)` that calls `execute(request)`, on ConnectionError "
        "calls it once more, and on a second ConnectionError returns "
        "`ToolMessage(f\"{name} is unavailable ...\", tool_call_id=request.tool_call['id'], "
        "status='error')`; "
        "write the same as `async def` with `await execute(request)`, and pass both: "
        "`ToolNode(tools, wrap_tool_call=..., awrap_tool_call=...)`.",
    ),
)

__all__ = ["CheckFailed", "POLICY", "make_tools", "q1"]
