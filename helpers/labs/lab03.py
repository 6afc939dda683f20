"""Lab 03 — Meet an error policy (after `notebooks/03_builtin_toolnode.ipynb`).

q1: `build_node(tools) -> ToolNode` configured (`handle_tool_errors` and/or interceptors) so that:

1. bad arguments from the model go back to the model (an error ToolMessage);
2. `ConnectionError` (an upstream that is down) is retried once; if it fails again, the model gets an
   error ToolMessage saying `<tool> is unavailable`;
3. any other exception is a bug: it stops the run (it propagates out of the node), never retried;
4. an unknown tool name is answered with an error ToolMessage;
5. all of it under `invoke` and under `ainvoke`.

The check runs a real ToolNode case by case, both ways, and counts from the course's side how often
each tool really ran (`Attempts`). Which services are down and the unknown name are drawn at random
for every check, so a hard-coded outage message fails; every run is under a time limit, so a retry
loop that never gives up is reported as a hang (and then stopped by the tool itself), never hangs
the notebook. It names the plausible configurations that silently do something else
(`handle_tool_errors=True` swallows the bug and starves the retry; an exception tuple that does not
cover `ToolInvocationError` (a `ToolException`) switches off the argument-error answer; an async-only
interceptor is skipped by `invoke`; a retry of every error re-runs the bug).
"""

from __future__ import annotations

import inspect
import random
import re
import threading
import time
import uuid
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

import helpers.labs as core
from helpers.labs import (
    Case,
    Cases,
    CheckFailed,
    Exercise,
    LearnerHung,
    run_learner,
    run_limited,
    section,
    shorten,
)
from helpers.tools import make_city_tools

LESSON = "03_builtin_toolnode"
MATRIX = section(LESSON, "The `handle_tool_errors` matrix")
DEFAULT = section(LESSON, "The default: argument errors are answered, everything else raises")
UNKNOWN = section(LESSON, "Unknown tool names are never raised")
RETRY = section("08_interceptors", "6. Deep dive: Retry, and the error policy it depends on")
PITFALLS = section("08_interceptors", "5. The two interceptor pitfalls")
SKIPPED = section(
    "08_interceptors", "5.1 Only `awrap_tool_call`, then sync `invoke`: the wrapper is silently skipped"
)
SERVICES = ("lookup_traffic", "lookup_ferries", "lookup_museums")
"""The outage tools a check draws two from (the notebook shows `lookup_traffic`)."""
GIVE_UP_AFTER = 50
"""Attempts after which the course's outage tool stops a retry loop that never gives up."""


_WEATHER = make_city_tools(delay=0, sync=True)[0]


STOPPED = "(the check stopped this run)"
"""What a course tool answers, once stopped, to a loop that caught even `CheckGaveUp`."""


class CheckGaveUp(BaseException):
    """Raised by a course tool once the check has given up on a run (not an `Exception`, so a
    learner's `except Exception` retry loop ends)."""


class Attempts:
    """Counts calls per tool name, from any thread; `stop()` makes the tools end a runaway loop."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.stopped = False
        self.caught_stop = False
        """A loop caught even `CheckGaveUp` (a bare `except:`) and tried again."""
        self._signalled: dict[int, int] = {}
        self._lock = threading.Lock()

    def add(self, name: str) -> int:
        """Count one attempt; once stopped: raise `CheckGaveUp`, and to a loop that caught it, answer
        (0: the tool then returns `STOPPED` normally, which ends `return execute(request)` loops)."""
        if self.stopped:
            me = threading.get_ident()
            with self._lock:
                seen = self._signalled.get(me, 0)
                self._signalled[me] = seen + 1
            if not seen:
                raise CheckGaveUp("the check gave up on this run")
            self.caught_stop = True
            if seen > 1:
                time.sleep(1.0)  # a loop that goes on even after an answer: keep it (nearly) still
            return 0
        with self._lock:
            self.counts[name] = self.counts.get(name, 0) + 1
            count = self.counts[name]
        if count > 10:
            time.sleep(0.005)  # a tight retry loop: keep it from burning a core
        if count > GIVE_UP_AFTER * 100:
            raise CheckGaveUp("too many attempts")
        return count

    def stop(self) -> None:
        self.stopped = True


def make_tools(
    attempts: Attempts | None = None, down: tuple[str, ...] = ("lookup_traffic",)
) -> list[BaseTool]:
    """`lookup_weather`, the always-down services in `down` (ConnectionError), `lookup_trains`
    (down on the first try, fine on the second) and `lookup_hotel` (a bug: KeyError). Sync tools,
    so they run under both `invoke` and `ainvoke`."""
    attempts = attempts or Attempts()
    weather = _WEATHER

    def counted_weather(city: str) -> str:
        if not attempts.add("lookup_weather"):
            return STOPPED
        return weather.func(city)

    def outage(name: str) -> BaseTool:
        service = name.removeprefix("lookup_")

        def run(city: str) -> str:
            if not attempts.add(name):
                return STOPPED
            raise ConnectionError(f"{service} service unreachable for {city}")

        return _tool(run, name, f"Look up live {service} for a city (its service is down).")

    def lookup_trains(city: str) -> str:
        """Look up train departures for a city (its service drops the first request)."""
        count = attempts.add("lookup_trains")
        if not count:
            return STOPPED
        if count == 1:
            raise ConnectionError("train service reset the connection")
        return f"{city}: trains every 10 minutes"

    def lookup_hotel(city: str) -> str:
        """Look up a hotel in a city (this tool has a bug)."""
        if not attempts.add("lookup_hotel"):
            return STOPPED
        rooms: dict[str, int] = {}
        return f"{city}: {rooms['free']} rooms free"  # KeyError: a bug, not an outage

    return [
        _tool(counted_weather, "lookup_weather", weather.description),
        *(outage(name) for name in down),
        _tool(lookup_trains, "lookup_trains", lookup_trains.__doc__),
        _tool(lookup_hotel, "lookup_hotel", lookup_hotel.__doc__),
    ]


_SCHEMAS: dict[str, Any] = {}


def _tool(func: Any, name: str, description: str) -> BaseTool:
    """A sync tool `name(city)`; its args schema is built once (pydantic is slow)."""
    if name not in _SCHEMAS:
        _SCHEMAS[name] = StructuredTool.from_function(
            func=func, name=name, description=description
        ).args_schema
    return StructuredTool.from_function(
        func=func, name=name, description=description, args_schema=_SCHEMAS[name], infer_schema=False
    )


POLICY = {
    "bad arguments": "back to the model as an error ToolMessage",
    "ConnectionError twice": "retried once, then an error ToolMessage saying '<tool> is unavailable' "
    "(the tool's name, e.g. 'lookup_traffic is unavailable')",
    "ConnectionError once": "retried once; the second try's answer reaches the model",
    "a bug (KeyError)": "stops the run: the KeyError propagates out of the node, not retried",
    "an unknown tool": "back to the model as an error ToolMessage",
}


def _describe(out: Any) -> str:
    if isinstance(out, list) and out and isinstance(out[0], ToolMessage):
        return f"ToolMessage(status={out[0].status!r}, content={shorten(out[0].content, 120)!r})"
    return shorten(repr(out), 200)


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, kind):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _ended(attempts: Attempts, worker: threading.Thread | None) -> bool:
    """After `stop()`: did the run really end (worker thread gone, no attempt any more)?"""
    before = sum(attempts.counts.values())
    if worker is not None:
        worker.join(1.0)
    time.sleep(0.1)
    return worker is not None and not worker.is_alive() and sum(attempts.counts.values()) == before


def _run(
    node: ToolNode, call: tuple[str, dict], call_id: str, way: str, attempts: Attempts
) -> tuple[Any, BaseException | None]:
    """Run one call through the node under `way`; return `(output, exception)`; a hang is `LearnerHung`
    (its `.ended` says whether the run then really stopped)."""
    name, args = call
    batch = [
        AIMessage("", tool_calls=[{"name": name, "args": dict(args), "id": call_id, "type": "tool_call"}])
    ]
    seen: dict[str, threading.Thread] = {}

    def go() -> Any:
        seen["worker"] = threading.current_thread()  # run_limited's worker thread
        return (
            node.invoke(batch, runtime=Runtime())
            if way == "invoke"
            else node.ainvoke(batch, runtime=Runtime())
        )

    try:
        out = run_limited(go, name=f"your node under {way}")
    except LearnerHung as hung:
        attempts.stop()  # the course's tools end the loop at its next attempt
        hung.ended = _ended(attempts, seen.get("worker"))
        raise
    except CheckFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - the policy decides which exceptions are right
        return None, exc
    return out, None


def _one_case(
    cases: Cases,
    build_node: Any,
    way: str,
    case: str,
    call: tuple[str, dict],
    down: tuple[str, ...],
    rng: random.Random | None = None,
) -> bool | None:
    """Try one case; False when `build_node` itself gave no ToolNode (then no case can run)."""
    name = f"{case} ({call[0]}) under {way}"
    rng = rng or random.Random()
    wanted_policy = POLICY[case].replace(
        "'<tool> is unavailable' (the tool's name, e.g. 'lookup_traffic is unavailable')",
        f"'{call[0]} is unavailable'",
    )
    attempts = Attempts()
    try:
        node = run_learner(build_node, make_tools(attempts, down), name="build_node")
    except CheckFailed as error:
        cases.failure(name, error)
        return False
    if not isinstance(node, ToolNode):
        cases.bad(
            name,
            expected="build_node(tools) returns ToolNode(tools, ...)",
            observed=shorten(repr(node), 200),
            where=MATRIX,
            why="None means `build_node` has no `return`" if node is None else "",
        )
        return False
    call_id = f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:10]}"
    try:
        out, raised = _run(node, call, call_id, way, attempts)
    except LearnerHung as hung:
        tries, tool = attempts.counts.get(call[0], 0), call[0]
        cases.hung = Case(name, False)
        if getattr(hung, "ended", False):
            after = "the course's tool then ended the loop, so the notebook stays usable"
        else:
            after = (
                "it runs on in a background thread the check cannot stop (using CPU if it loops) until "
                "Kernel → Restart; the notebook stays usable"
            )
        why = ""
        if tries > 2:
            why = (
                "a retry loop with no limit (`while True: try: return execute(request) …`) never gives up on "
                "a service that stays down: retry ONCE, then answer 'unavailable'"
            )
            if attempts.caught_stop:
                why += (
                    "; and catch `ConnectionError` only: your `except` caught even the course's stop signal "
                    "(a bare `except:` or `except BaseException`)"
                )
        cases.bad(
            name,
            expected=wanted_policy,
            observed=f"a hang: no answer within {core.LIMIT:g} s; {tool} was tried {tries} times meanwhile "
            f"({after})",
            where=RETRY,
            why=why,
        )
        return
    tries = attempts.counts.get(call[0], 0)
    tool = call[0]
    if isinstance(out, list) and out and inspect.iscoroutine(out[0]):
        for item in out:
            if inspect.iscoroutine(item):
                item.close()
        plain = way == "invoke"
        cases.bad(
            name,
            expected=wanted_policy,
            observed=f"the node's answer is an un-awaited coroutine: {shorten(repr(out), 120)}",
            where=SKIPPED if plain else PITFALLS,
            why="`wrap_tool_call` must be a plain `def` (sync invoke calls it without awaiting): give the "
            "`async def` as `awrap_tool_call`"
            if plain
            else "your `awrap_tool_call` returned a coroutine without awaiting it: `return await "
            "execute(request)`, in an `async def`",
        )
        return
    if case == "a bug (KeyError)":
        if raised is None:
            cases.bad(
                name,
                expected=wanted_policy,
                observed=_describe(out),
                where=MATRIX,
                why="handle_tool_errors=True (or a catch-all handler) turns every exception into a message; "
                "and once an interceptor is given, ToolNode answers EVERY exception that escapes it whenever "
                "`handle_tool_errors` is anything but False or the default — an exception type or tuple "
                "too: keep the default"
                if getattr(node, "_handle_tool_errors", True) is not True
                and (getattr(node, "_wrap_tool_call", None) or getattr(node, "_awrap_tool_call", None))
                else "handle_tool_errors=True (or a catch-all handler) turns every exception into a message",
            )
        elif not _caused_by(raised, KeyError):
            cases.bad(
                name,
                expected="KeyError('free')",
                observed=f"{type(raised).__name__}: {raised}",
                where=DEFAULT,
            )
        elif tries != 1:
            cases.bad(
                name,
                expected=wanted_policy,
                observed=f"lookup_hotel ran {tries} times before the KeyError stopped the run",
                where=RETRY,
                why="your retry catches every exception: catch only `ConnectionError`, a bug fails the same "
                "way every time",
            )
        else:
            cases.ok(name)
        return
    if raised is not None:
        why, where = "", DEFAULT
        if _caused_by(raised, ConnectionError) and tries == 2 and case == "ConnectionError twice":
            why = (
                "your retry re-raised the second ConnectionError: catch it too and return "
                "`ToolMessage(f\"{name} is unavailable …\", tool_call_id=request.tool_call['id'], "
                "status='error')`"
            )
            where = RETRY
        elif _caused_by(raised, CheckGaveUp):
            why = f"{tool} was tried {tries} times: a retry loop with no limit; retry once"
            where = RETRY
        elif (
            _caused_by(raised, ConnectionError)
            and tries == 1
            and not (getattr(node, "_wrap_tool_call", None) or getattr(node, "_awrap_tool_call", None))
        ):
            why = "ToolNode has no retry of its own: add an interceptor (`wrap_tool_call`, `awrap_tool_call`)"
            where = RETRY
        elif _caused_by(raised, ConnectionError) and way == "invoke" and tries == 1:
            why = (
                "no retry ran under invoke: an `awrap_tool_call` alone is skipped by sync invoke; "
                "give `wrap_tool_call` too"
            )
            where = SKIPPED
        elif _caused_by(raised, ConnectionError) and way == "ainvoke" and tries == 1:
            why = "no retry ran under ainvoke: give `awrap_tool_call` too"
            where = PITFALLS
        elif case == "bad arguments":
            why = (
                "an exception type, a tuple or a narrowly annotated handler that does not cover "
                "ToolInvocationError (a ToolException) switches off the default answer to argument errors"
            )
            where = MATRIX
        cases.bad(
            name,
            expected=wanted_policy,
            observed=f"the run stopped: {type(raised).__name__}: {shorten(raised, 140)}",
            where=where,
            why=why,
        )
        return
    message = out[0] if isinstance(out, list) and out else None
    if not isinstance(message, ToolMessage):
        cases.bad(name, expected=wanted_policy, observed=shorten(repr(out), 200), where=MATRIX)
        return
    if message.tool_call_id != call_id:
        cases.bad(
            name,
            expected=f"{wanted_policy}, answering the call's id {call_id!r}",
            observed=f"tool_call_id={message.tool_call_id!r}: {_describe(out)}",
            where=RETRY,
            why="set `tool_call_id=request.tool_call['id']`: the model matches each answer to its call by id",
        )
        return
    if case == "ConnectionError once":
        if message.status == "error" or tries != 2 or "trains every 10 minutes" not in str(message.content):
            cases.bad(
                name,
                expected=wanted_policy,
                observed=f"{tries} attempt(s), then {_describe(out)}",
                where=RETRY,
                why="with handle_tool_errors=True (or one naming ConnectionError) the failure is already a "
                "ToolMessage inside `execute`, so your retry never sees an exception"
                if tries == 1
                else "",
            )
        else:
            cases.ok(name, "retried once, recovered")
        return
    if case == "ConnectionError twice":
        content = str(message.content)
        says = _says_unavailable(content, tool)
        others = [s for s in SERVICES if s != tool and re.search(rf"\b{s}\b", content)]
        if message.status != "error" or not says or others or tries != 2:
            why = ""
            if tries == 0:
                why = (
                    f"{tool} never ran: call `execute(request)`, and answer 'unavailable' only after it "
                    "failed twice — not from the tool's name"
                )
            elif tries == 1 and message.status == "error":
                why = (
                    "the failure was already a ToolMessage inside `execute` (handle_tool_errors=True, or one "
                    "naming ConnectionError), so the retry never saw an exception"
                )
            elif tries == 2 and (others or not says):
                why = (
                    f"the message names {', '.join(others)}, which did not fail here — not the tool that "
                    "failed alone: build it from `request.tool_call['name']`"
                    if others
                    else "say which tool is unavailable, in these words: "
                    "`f\"{request.tool_call['name']} is unavailable …\"`"
                )
            elif tries == 2 and message.status != "error":
                why = "the unavailable answer needs `status='error'`"
            elif tries > 2:
                why = f"{tool} ran {tries} times: the policy retries once (two attempts in all)"
            cases.bad(
                name,
                expected=wanted_policy,
                observed=f"{tries} attempt(s), then {_describe(out)}",
                where=RETRY,
                why=why,
            )
        else:
            cases.ok(name, "retried once, then unavailable")
        return
    if message.status != "error":
        cases.bad(
            name,
            expected=wanted_policy,
            observed=_describe(out),
            where=UNKNOWN if "unknown" in case else MATRIX,
        )
    elif case == "bad arguments" and attempts.counts.get("lookup_weather", 0):
        cases.bad(name, expected=wanted_policy, observed="lookup_weather ran", where=MATRIX)
    else:
        cases.ok(name)


def _says_unavailable(content: str, tool: str) -> bool:
    """'<tool> is unavailable', or another wording that names the tool, then says 'unavailable'."""
    return bool(re.search(rf"\b{re.escape(tool)}\b.*\bunavailable\b", content, re.IGNORECASE | re.DOTALL))


def check_policy(build_node: Any) -> str:
    cases = Cases("q1")
    rng = random.Random()
    down = tuple(rng.sample(SERVICES, 2))
    city = rng.choice(["Paris", "London", "Tokyo"])
    unknown = rng.choice(["book_flight", "lookup_weather_v2", "cancel_hotel"])
    for way in ("invoke", "ainvoke"):
        for case, call in [
            ("bad arguments", ("lookup_weather", {"town": city})),
            ("ConnectionError twice", (down[0], {"city": city})),
            ("ConnectionError twice", (down[1], {"city": city})),
            ("ConnectionError once", ("lookup_trains", {"city": city})),
            ("a bug (KeyError)", ("lookup_hotel", {"city": city})),
            ("an unknown tool", (unknown, {"city": city})),
        ]:
            if cases.hung is not None:
                break
            if _one_case(cases, build_node, way, case, call, down, rng) is False:
                cases.items.append(
                    Case(
                        "the remaining cases",
                        False,
                        observed="not tried: build_node must return a ToolNode first",
                    )
                )
                return cases.result("")
    if cases.hung is not None:
        cases.items.append(
            Case("the remaining cases", False, observed=f"not tried: “{cases.hung.name}” hung")
        )
    return cases.result(
        "bad arguments answered; both outages retried once then 'unavailable'; a flaky call recovered; "
        "the bug stopped the run unretried; an unknown tool answered — under invoke and ainvoke."
    )


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
        "status='error')` with `name = request.tool_call['name']`; "
        "write the same as `async def` with `await execute(request)`, and pass both: "
        "`ToolNode(tools, wrap_tool_call=..., awrap_tool_call=...)`.",
    ),
)

__all__ = ["POLICY", "CheckFailed", "make_tools", "q1"]
