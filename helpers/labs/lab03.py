"""Lab 03 — Meet an error policy (after `notebooks/03_builtin_toolnode.ipynb`).

q1: `build_node(tools) -> ToolNode` configured (`handle_tool_errors` and/or interceptors) so that:

1. bad arguments from the model go back to the model (an error ToolMessage);
2. `ConnectionError` (an upstream that is down) is retried once; if it fails again, the model gets an
   error ToolMessage saying `<tool> is unavailable`;
3. any other exception is a bug: it stops the run (it propagates out of the node), never retried;
4. an unknown tool name is answered with an error ToolMessage;
5. all of it under `invoke` and under `ainvoke`.

The check draws one scenario and runs a small case function (`_case_*`) per kind of failure over it,
each on a fresh ToolNode, under both `invoke` and `ainvoke`. What is drawn is the city, the ids, the
names of the unknown tools, the train service's answer and the name of one more outage service the
notebook does not show; what is NOT drawn is which kinds are tried: every run has every outage
service the notebook shows plus that extra one (so a retry keyed on service names fails every run),
the flaky service, the bug, bad arguments and two unknown names (one that looks like an allowed name).

Every tool records each attempt as it happens (`_Attempts`: how it ended, what it raised or
returned), so the verdict relates the node's answer to what the tools really did: the flaky
service's answer must be what its second attempt returned, the bug's exception must be the one the
tool raised. Answers are read only as the plain types the policy asks for (`type(m) is ToolMessage`,
`str` content, status and id). Every run is under a time limit, so a retry loop that never gives up
is reported as a hang (and then stopped by the tool itself), never hangs the notebook; an exception
of any kind from the learner's code (`SystemExit` included) is a verdict. It names the plausible
configurations that silently do something else (`handle_tool_errors=True` swallows the bug and
starves the retry; an exception tuple that does not cover `ToolInvocationError` (a `ToolException`)
switches off the argument-error answer; an async-only interceptor is skipped by `invoke`; a retry of
every error re-runs the bug).
"""

from __future__ import annotations

import functools
import inspect
import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

import helpers.labs as core
from helpers.cities import weather_report
from helpers.labs import (
    Case,
    Cases,
    CheckFailed,
    Exercise,
    LearnerHung,
    fail,
    run_learner,
    run_limited,
    section,
    shorten,
)

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
"""The outage tools the notebook shows; every check tries each of them."""
MORE_SERVICES = ("lookup_buses", "lookup_tides", "lookup_parking", "lookup_bikes", "lookup_flights")
"""Names the check draws one more outage service from (the notebook does not show it)."""
NEAR_NAMES = ("lookup_weather_v2", "lookup_weathers", "lookup_hotels")
OTHER_NAMES = ("book_flight", "cancel_hotel", "send_email")
CITIES = ("Paris", "London", "Tokyo")
GIVE_UP_AFTER = 50
"""Attempts after which the course's outage tool stops a retry loop that never gives up."""
POLICY = (
    ("bad arguments", "back to the model as an error ToolMessage"),
    (
        "ConnectionError twice",
        "retried once, then an error ToolMessage saying '<tool> is unavailable' "
        "(the tool's name, e.g. 'lookup_traffic is unavailable')",
    ),
    ("ConnectionError once", "retried once; the second try's answer reaches the model"),
    ("a bug (KeyError)", "stops the run: the KeyError propagates out of the node, not retried"),
    ("an unknown tool", "back to the model as an error ToolMessage"),
)
"""What each failure must lead to, as (failure, wanted) pairs."""
STOPPED = "(the check stopped this run)"
"""What a course tool answers, once stopped, to a loop that caught even `CheckGaveUp`."""


class CheckGaveUp(BaseException):
    """Raised by a course tool once the check has given up on a run (not an `Exception`, so a
    learner's `except Exception` retry loop ends)."""


@dataclass
class _Attempts:
    """Every attempt of every tool, from any thread, recorded as it happens: how often each tool
    ran, and what each attempt raised or returned. `stop()` makes the tools end a runaway loop."""

    counts: dict[str, int] = field(default_factory=dict)
    raised: dict[str, list[BaseException]] = field(default_factory=dict)
    returned: dict[str, list[str]] = field(default_factory=dict)
    stopped: bool = False
    caught_stop: bool = False
    """A loop caught even `CheckGaveUp` (a bare `except:`) and tried again."""
    _signalled: dict[int, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

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

    def raise_(self, name: str, error: BaseException) -> None:
        with self._lock:
            self.raised.setdefault(name, []).append(error)
        raise error

    def give(self, name: str, text: str) -> str:
        with self._lock:
            self.returned.setdefault(name, []).append(text)
        return text

    def stop(self) -> None:
        self.stopped = True


@functools.cache
def _args_schema(name: str) -> Any:
    """The args schema of a sync tool `name(city)`, built once (pydantic is slow)."""

    def run(city: str) -> str:
        return city

    return StructuredTool.from_function(func=run, name=name, description=name).args_schema


def _tool(func: Callable[[str], str], name: str, description: str) -> BaseTool:
    return StructuredTool.from_function(
        func=func, name=name, description=description, args_schema=_args_schema(name), infer_schema=False
    )


def _make_tools(attempts: _Attempts, down: tuple[str, ...], minutes: int) -> list[BaseTool]:
    """`lookup_weather`, the always-down services in `down` (ConnectionError), `lookup_trains`
    (down on the first try; the second answers "trains every `minutes` minutes") and `lookup_hotel`
    (a bug: KeyError). Sync tools, so they run under both `invoke` and `ainvoke`; every attempt is
    recorded in `attempts`."""

    def lookup_weather(city: str) -> str:
        if not attempts.add("lookup_weather"):
            return STOPPED
        return attempts.give("lookup_weather", weather_report(city))

    def outage(name: str) -> BaseTool:
        service = name.removeprefix("lookup_")

        def run(city: str) -> str:
            if not attempts.add(name):
                return STOPPED
            attempts.raise_(name, ConnectionError(f"{service} service unreachable for {city}"))

        return _tool(run, name, f"Look up live {service} for a city (its service is down).")

    def lookup_trains(city: str) -> str:
        count = attempts.add("lookup_trains")
        if not count:
            return STOPPED
        if count == 1:
            attempts.raise_("lookup_trains", ConnectionError("train service reset the connection"))
        return attempts.give("lookup_trains", f"{city}: trains every {minutes} minutes")

    def lookup_hotel(city: str) -> str:
        if not attempts.add("lookup_hotel"):
            return STOPPED
        rooms: dict[str, int] = {}
        try:
            return f"{city}: {rooms['free']} rooms free"  # KeyError: a bug, not an outage
        except KeyError as bug:
            attempts.raise_("lookup_hotel", bug)

    return [
        _tool(lookup_weather, "lookup_weather", "Look up today's weather for a city, e.g. Paris."),
        *(outage(name) for name in down),
        _tool(
            lookup_trains,
            "lookup_trains",
            "Look up train departures for a city (its service drops the first request).",
        ),
        _tool(lookup_hotel, "lookup_hotel", "Look up a hotel in a city (this tool has a bug)."),
    ]


def make_tools() -> list[BaseTool]:
    """The travel agent's tools as the notebook shows them (the check builds its own, recorded)."""
    return _make_tools(_Attempts(), SERVICES, 10)


# -- the drawn scenario -------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Scenario:
    """What one check draws: every kind of failure is in it, only names and values vary."""

    city: str
    down: tuple[str, ...]
    """Every service the notebook shows, and one more with a drawn name, in a drawn order."""
    unknown: tuple[str, str]
    """An unknown name that looks like an allowed one, and one that does not."""
    minutes: int
    """The flaky train service's second attempt answers "trains every `minutes` minutes"."""

    def calls(self) -> list[tuple[str, str, dict]]:
        """Every case as (kind, tool, args)."""
        city = {"city": self.city}
        return [
            ("bad arguments", "lookup_weather", {"town": self.city}),
            *(("ConnectionError twice", name, city) for name in self.down),
            ("ConnectionError once", "lookup_trains", city),
            ("a bug (KeyError)", "lookup_hotel", city),
            *(("an unknown tool", name, city) for name in self.unknown),
        ]


def _rng() -> random.Random:
    """The check's own generator (`helpers.labs.rng`): no patch of `random` reaches it."""
    return core.rng()


def _draw(rng: random.Random) -> _Scenario:
    down = [*SERVICES, rng.choice(MORE_SERVICES)]
    rng.shuffle(down)
    return _Scenario(
        city=rng.choice(CITIES),
        down=tuple(down),
        unknown=(rng.choice(NEAR_NAMES), rng.choice(OTHER_NAMES)),
        minutes=rng.randint(3, 59),
    )


@dataclass
class _Seen:
    """One case run through the learner's node: what it returned or raised, what the tools did."""

    kind: str
    tool: str
    way: str
    node: Any
    call_id: str
    attempts: _Attempts
    out: Any = None
    raised: BaseException | None = None

    @property
    def tries(self) -> int:
        return self.attempts.counts.get(self.tool, 0)

    def wanted(self) -> str:
        return dict(POLICY)[self.kind].replace(
            "'<tool> is unavailable' (the tool's name, e.g. 'lookup_traffic is unavailable')",
            f"'{self.tool} is unavailable'",
        )

    def has(self, interceptor: str) -> bool:
        return bool(getattr(self.node, interceptor, None))

    def has_interceptor(self) -> bool:
        return bool(
            getattr(self.node, "_wrap_tool_call", None) or getattr(self.node, "_awrap_tool_call", None)
        )


def _describe(out: Any) -> str:
    if type(out) is list and out and type(out[0]) is ToolMessage:
        return f"ToolMessage(status={out[0].status!r}, content={shorten(_plain_text(out[0].content), 120)!r})"
    return shorten(_repr(out), 200)


def _repr(value: Any) -> str:
    """`repr(value)`; a learner object whose `__repr__` raises is named, not raised."""
    try:
        text = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the learner's own __repr__
        return f"<a {type(value).__name__} whose repr() raised {type(exc).__name__}>"
    return text if type(text) is str else f"<a {type(value).__name__}>"


def _plain_text(content: Any) -> str:
    return content if type(content) is str else _repr(content)


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, kind):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _is_one_of(exc: BaseException | None, wanted: list[BaseException]) -> bool:
    """Is `exc` one of the `wanted` exception objects (the ones a tool raised), itself?"""
    return any(exc is w for w in wanted)


# -- the answer every case but the bug reads ----------------------------------------------------------
def _answer(seen: _Seen) -> ToolMessage:
    """The node's one answer, as a plain ToolMessage for the call's id; else `fail(...)` naming why."""
    wanted = seen.wanted()
    if seen.raised is not None:
        raise _stopped(seen)
    out = seen.out
    message = out[0] if type(out) is list and len(out) == 1 else None
    if type(message) is not ToolMessage:
        raise fail("", expected=wanted, observed=_describe(out), where=MATRIX)
    plain = all(type(v) is str for v in (message.content, message.status, message.tool_call_id))
    if not plain:
        raise fail(
            "",
            expected=f"{wanted}, as a ToolMessage with plain `str` content",
            observed=f"content of type {type(message.content).__name__}: {_describe(out)}",
            where=RETRY,
            why="the model reads plain text: build the answer's content as a `str` (an f-string)",
        )
    if message.tool_call_id != seen.call_id:
        raise fail(
            "",
            expected=f"{wanted}, answering the call's id {seen.call_id!r}",
            observed=f"tool_call_id={message.tool_call_id!r}: {_describe(out)}",
            where=RETRY,
            why="set `tool_call_id=request.tool_call['id']`: the model matches each answer to its call by id",
        )
    return message


def _stopped(seen: _Seen) -> CheckFailed:
    """The verdict for a case whose run stopped with an exception where the policy wants an answer."""
    raised, tool, tries, way = seen.raised, seen.tool, seen.tries, seen.way
    why, where = "", DEFAULT
    if isinstance(raised, SystemExit | GeneratorExit):
        why = (
            f"`{type(raised).__name__}` from your code stops more than the node (`sys.exit()` ends the "
            "program): return a ToolMessage, or let the tool's own exception propagate"
        )
        where = RETRY
    elif _caused_by(raised, ConnectionError) and tries == 2 and seen.kind == "ConnectionError twice":
        why = (
            "your retry re-raised the second ConnectionError: catch it too and return "
            "`ToolMessage(f\"{name} is unavailable …\", tool_call_id=request.tool_call['id'], "
            "status='error')`"
        )
        where = RETRY
    elif _caused_by(raised, CheckGaveUp):
        why, where = f"{tool} was tried {tries} times: a retry loop with no limit; retry once", RETRY
    elif _caused_by(raised, ConnectionError) and tries == 1 and not seen.has_interceptor():
        why = "ToolNode has no retry of its own: add an interceptor (`wrap_tool_call`, `awrap_tool_call`)"
        where = RETRY
    elif (
        _caused_by(raised, ConnectionError)
        and tries == 1
        and way == "invoke"
        and not seen.has("_wrap_tool_call")
    ):
        why = (
            "no retry ran under invoke: an `awrap_tool_call` alone is skipped by sync invoke; "
            "give `wrap_tool_call` too"
        )
        where = SKIPPED
    elif (
        _caused_by(raised, ConnectionError)
        and tries == 1
        and way == "ainvoke"
        and not seen.has("_awrap_tool_call")
    ):
        why, where = "no retry ran under ainvoke: give `awrap_tool_call` too", PITFALLS
    elif _caused_by(raised, ConnectionError) and tries == 1:
        why = (
            "the service ran once and its ConnectionError stopped the run: your interceptor ran but did not "
            "retry it — retry every ConnectionError once, whatever the tool's name"
        )
        where = RETRY
    elif seen.kind == "bad arguments":
        why = (
            "an exception type, a tuple or a narrowly annotated handler that does not cover "
            "ToolInvocationError (a ToolException) switches off the default answer to argument errors"
        )
        where = MATRIX
    return fail(
        "",
        expected=seen.wanted(),
        observed=f"the run stopped: {type(raised).__name__}: {shorten(_repr_exc(raised), 140)}",
        where=where,
        why=why,
    )


def _repr_exc(exc: BaseException | None) -> str:
    try:
        return str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the learner's own exception class
        return f"<{type(exc).__name__}>"


# -- one small function per kind of failure -----------------------------------------------------------
def _case_bad_arguments(seen: _Seen) -> str:
    message = _answer(seen)
    if message.status != "error":
        raise fail("", expected=seen.wanted(), observed=_describe(seen.out), where=MATRIX)
    if seen.attempts.counts.get("lookup_weather", 0):
        raise fail("", expected=seen.wanted(), observed="lookup_weather ran", where=MATRIX)
    return ""


def _case_unknown(seen: _Seen) -> str:
    message = _answer(seen)
    if message.status != "error":
        raise fail("", expected=seen.wanted(), observed=_describe(seen.out), where=UNKNOWN)
    return ""


def _case_flaky(seen: _Seen) -> str:
    """Retried once, and the answer is what the second attempt really returned."""
    message, tries = _answer(seen), seen.tries
    returned = seen.attempts.returned.get(seen.tool, [])
    if message.status == "error" or tries != 2 or not returned or returned[-1] not in message.content:
        raise fail(
            "",
            expected=seen.wanted() + (f": {returned[-1]!r}" if returned else ""),
            observed=f"{tries} attempt(s), then {_describe(seen.out)}",
            where=RETRY,
            why=_one_attempt_why(seen, made_up=message.status != "error") if tries == 1 else "",
        )
    return "retried once, recovered"


def _case_outage(seen: _Seen, services: tuple[str, ...]) -> str:
    """Two attempts that both raised, then an error answer naming this tool (and no other)."""
    message, tries, tool = _answer(seen), seen.tries, seen.tool
    content = message.content
    says = _says_unavailable(content, tool)
    others = [s for s in services if s != tool and re.search(rf"\b{s}\b", content)]
    both_failed = len(seen.attempts.raised.get(tool, [])) == tries
    if message.status == "error" and says and not others and tries == 2 and both_failed:
        return "retried once, then unavailable"
    why = ""
    if tries == 0:
        why = (
            f"{tool} never ran: call `execute(request)`, and answer 'unavailable' only after it "
            "failed twice — not from the tool's name"
        )
    elif tries == 1 and message.status == "error":
        why = _one_attempt_why(seen)
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
    raise fail(
        "",
        expected=seen.wanted(),
        observed=f"{tries} attempt(s), then {_describe(seen.out)}",
        where=RETRY,
        why=why,
    )


def _case_bug(seen: _Seen) -> str:
    """The KeyError the tool raised propagates out of the node, after exactly one attempt."""
    raised, tries = seen.raised, seen.tries
    if raised is None:
        catch_all = "handle_tool_errors=True (or a catch-all handler) turns every exception into a message"
        keeps = getattr(seen.node, "_handle_tool_errors", True) is not True and seen.has_interceptor()
        raise fail(
            "",
            expected=seen.wanted(),
            observed=_describe(seen.out),
            where=MATRIX,
            why=catch_all
            + "; and once an interceptor is given, ToolNode answers EVERY exception that escapes it whenever "
            "`handle_tool_errors` is anything but False or the default — an exception type or tuple "
            "too: keep the default"
            if keeps
            else catch_all,
        )
    if not _is_one_of(raised, seen.attempts.raised.get(seen.tool, [])):
        raise fail(
            "",
            expected="the KeyError('free') lookup_hotel raised",
            observed=f"{type(raised).__name__}: {shorten(_repr_exc(raised), 140)}",
            where=DEFAULT,
            why=_stopped(seen).fields.get("why", "")
            if isinstance(raised, SystemExit | GeneratorExit)
            else "let the tool's own exception propagate: do not raise one of your own in its place",
        )
    if tries != 1:
        raise fail(
            "",
            expected=seen.wanted(),
            observed=f"lookup_hotel ran {tries} times before the KeyError stopped the run",
            where=RETRY,
            why="your retry catches every exception: catch only `ConnectionError`, a bug fails the same "
            "way every time",
        )
    return ""


def _one_attempt_why(seen: _Seen, *, made_up: bool = False) -> str:
    """Why a ConnectionError tool ran once and was answered: the node's handler answered it inside
    `execute`, or the learner's interceptor gave up after one attempt."""
    handle = getattr(seen.node, "_handle_tool_errors", None)
    kinds = handle if type(handle) is tuple else (handle,)
    default = getattr(handle, "__name__", "") == "_default_handle_tool_errors"
    inside = (
        handle is True
        or type(handle) is str
        or (callable(handle) and not isinstance(handle, type) and not default)
        or any(isinstance(k, type) and issubclass(ConnectionError, k) for k in kinds)
    )
    if inside:
        return (
            "the failure was already a ToolMessage inside `execute` (handle_tool_errors=True, or one "
            "naming ConnectionError), so the retry never saw an exception"
        )
    if made_up:
        return (
            "the service ran once and failed, so that answer is not one it gave: call "
            "`execute(request)` a second time and pass on what it returns"
        )
    return (
        "the service ran once: your interceptor answered its first ConnectionError without trying again — "
        "call `execute(request)` a second time, and answer from what that attempt gives"
    )


def _says_unavailable(content: str, tool: str) -> bool:
    """'<tool> is unavailable', or another wording that names the tool, then says 'unavailable'."""
    return bool(re.search(rf"\b{re.escape(tool)}\b.*\bunavailable\b", content, re.IGNORECASE | re.DOTALL))


# -- running one case ---------------------------------------------------------------------------------
def _ended(attempts: _Attempts, worker: threading.Thread | None) -> bool:
    """After `stop()`: did the run really end (worker thread gone, no attempt any more)?"""
    before = sum(attempts.counts.values())
    if worker is not None:
        worker.join(1.0)
    time.sleep(0.1)
    return worker is not None and not worker.is_alive() and sum(attempts.counts.values()) == before


def _run(seen: _Seen, args: dict) -> None:
    """Run one call through the node under `seen.way`; fill `seen.out` or `seen.raised`. A hang is
    `LearnerHung` (its `.ended` says whether the run then really stopped)."""
    batch = [
        AIMessage(
            "", tool_calls=[{"name": seen.tool, "args": dict(args), "id": seen.call_id, "type": "tool_call"}]
        )
    ]
    threads: dict[str, threading.Thread] = {}
    node = seen.node

    def go() -> Any:
        threads["worker"] = threading.current_thread()  # run_limited's worker thread
        if seen.way == "invoke":
            return node.invoke(batch, runtime=Runtime())
        return node.ainvoke(batch, runtime=Runtime())

    try:
        seen.out = run_limited(go, name=f"your node under {seen.way}")
    except LearnerHung as hung:
        seen.attempts.stop()  # the course's tools end the loop at its next attempt
        hung.ended = _ended(seen.attempts, threads.get("worker"))
        raise
    except CheckFailed:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the policy decides which exceptions are right
        seen.raised = exc


def _hang_verdict(seen: _Seen, hung: LearnerHung) -> CheckFailed:
    tries, tool = seen.tries, seen.tool
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
        if seen.attempts.caught_stop:
            why += (
                "; and catch `ConnectionError` only: your `except` caught even the course's stop signal "
                "(a bare `except:` or `except BaseException`)"
            )
    return fail(
        "",
        expected=seen.wanted(),
        observed=f"a hang: no answer within {core.LIMIT:g} s; {tool} was tried {tries} times meanwhile "
        f"({after})",
        where=RETRY,
        why=why,
    )


def _coroutine_verdict(seen: _Seen) -> CheckFailed | None:
    """An interceptor that returned a coroutine instead of an answer (an `async def` as the sync one)."""
    out = seen.out
    if not (type(out) is list and out and inspect.iscoroutine(out[0])):
        return None
    for item in out:
        if inspect.iscoroutine(item):
            item.close()
    plain = seen.way == "invoke"
    return fail(
        "",
        expected=seen.wanted(),
        observed=f"the node's answer is an un-awaited coroutine: {shorten(_repr(out), 120)}",
        where=SKIPPED if plain else PITFALLS,
        why="`wrap_tool_call` must be a plain `def` (sync invoke calls it without awaiting): give the "
        "`async def` as `awrap_tool_call`"
        if plain
        else "your `awrap_tool_call` returned a coroutine without awaiting it: `return await "
        "execute(request)`, in an `async def`",
    )


def _try_case(
    seen_failures: dict,
    cases: Cases,
    build_node: Any,
    scenario: _Scenario,
    way: str,
    kind: str,
    tool: str,
    args: dict,
    rng: random.Random,
) -> bool:
    """Build a fresh node, run one case, judge it; False when `build_node` gave no ToolNode."""
    name = f"{kind} ({tool}) under {way}"
    attempts = _Attempts()
    tools = _make_tools(attempts, scenario.down, scenario.minutes)
    try:
        node = run_learner(build_node, tools, name="build_node")
    except CheckFailed as error:
        cases.failure(name, error)
        return False
    if not isinstance(node, ToolNode):
        cases.bad(
            name,
            expected="build_node(tools) returns ToolNode(tools, ...)",
            observed=shorten(_repr(node), 200),
            where=MATRIX,
            why="None means `build_node` has no `return`" if node is None else "",
        )
        return False
    call_id = f"call_{uuid.UUID(int=rng.getrandbits(128)).hex[:10]}"
    seen = _Seen(kind, tool, way, node, call_id, attempts)
    try:
        _run(seen, args)
    except LearnerHung as hung:
        core.record_failure(cases, name, _hang_verdict(seen, hung), seen_failures)
        cases.hung = Case(name, False)
        return True
    judge = {
        "bad arguments": _case_bad_arguments,
        "ConnectionError twice": lambda s: _case_outage(s, scenario.down),
        "ConnectionError once": _case_flaky,
        "a bug (KeyError)": _case_bug,
        "an unknown tool": _case_unknown,
    }[kind]
    try:
        coroutine = _coroutine_verdict(seen)
        if coroutine is not None:
            raise coroutine
        detail = judge(seen)
    except CheckFailed as error:
        core.record_failure(cases, name, error, seen_failures)
    else:
        cases.ok(name, detail)
    return True


def check_policy(build_node: Any) -> str:
    cases = Cases("q1")
    rng = _rng()
    scenario = _draw(rng)
    seen_failures: dict = {}
    for way in ("invoke", "ainvoke"):
        for kind, tool, args in scenario.calls():
            if cases.hung is not None:
                break
            if not _try_case(seen_failures, cases, build_node, scenario, way, kind, tool, args, rng):
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
        f"bad arguments answered; all {len(scenario.down)} outages retried once then 'unavailable'; a "
        "flaky call recovered; the bug stopped the run unretried; unknown tools answered — under invoke "
        "and ainvoke."
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

__all__ = ("POLICY", "CheckFailed", "make_tools", "q1")
