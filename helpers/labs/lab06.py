"""Lab 06 — Hand off to the parent (after `notebooks/06_command_and_parent.ipynb`).

q1: a `route_to(nodes)` tool and `build_team(tools)`, a subgraph that lets the model hand control to
    parent nodes with `Command.PARENT` while the parent's history stays valid (every tool call
    answered) — also when the model calls another tool in the same turn, and on a later turn of the
    same thread.

The check draws one scenario per check and plays each of its cases on a real parent graph
(`agent → team`; parent nodes reached only by a Command from the team). The parent's nodes are the
lab's A, B, C and D plus twelve more whose names are drawn, so nothing the learner can reach decides
them. Every check plays, whatever the draw: the two hand-offs the lab shows; a hand-off to every one
of the sixteen nodes (one `route_to` call naming all of them, after another that asks for two of
them again), which no cap on the number of Sends survives; a lookup BEFORE a hand-off in one turn
and a lookup AFTER a hand-off in another (the second turn of one thread), so a hand-off that only
looks at the turn's first or last call fails on every draw; a lookup alone. The team must be a
compiled subgraph (a node function of the parent's own would reach the parent's nodes without
`Command.PARENT`, which is not the hand-off the lab practises). Cities, node names and call ids are
drawn.

Outcomes are recorded as they happen, by the course's side: each parent node reports to a recorder
when it runs, the lookup tool records each city it is really called for, and a Send to a node the
parent does not have is caught from langgraph's log for this run only. The cases that judge one
turn are small functions (`case_right_nodes`, `case_every_call_answered`, `case_lookup_answered`).

A node asked for by two calls of one turn may run once or twice: a `goto` list of node names
triggers each node once per step, one `Send` per request runs it once per request. Both are
accepted; a node nobody asked for, or one asked for and never run, is not. A failure of the
check's own scaffolding is said to be the course's, never the learner's.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import operator
import random
import re
import threading
import traceback
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.pregel import Pregel

from helpers import labs
from helpers.cities import WEATHER, weather_report
from helpers.history import unanswered_tool_calls
from helpers.labs import (
    Cases,
    CheckFailed,
    Exercise,
    LearnerRaised,
    fail,
    record_failure,
    run_learner,
    section,
)
from helpers.models import ScriptedChatModel
from helpers.tools import make_city_tools

LESSON = "06_command_and_parent"
LIMIT: float | None = None
"""Seconds one run of the learner's code may take before a hang is reported (None: labs.LIMIT)."""
NODES = ("A", "B", "C", "D")
"""The parent nodes the lab's own turns name; the check's parent has twelve more, drawn per check."""
MORE_NODES = (
    "Billing", "Support", "Sales", "Legal", "Audit", "Travel", "Search", "Triage", "Review", "Archive",
    "Translate", "Summary", "Budget", "Hotels", "Flights", "Maps", "News", "Events", "Museums", "Parks",
    "Trains", "Rentals", "Tickets", "Visas",
)  # fmt: skip
"""The names the check draws the parent's other nodes from (capitalised: `.lower()` and `.upper()`
both change them)."""
EXTRA = 12
"""How many more parent nodes each check draws: the hand-off to every node asks for 4 + EXTRA."""
HAND_OFF = "A hand-off that keeps the history valid"
STRING_GOTO = "With other calls in the batch, neither form is safe"
MERGED = "4. `Command.PARENT` with `Send`: merged into one Command"
COURSE_BUG = "a bug in the course's check, not in your code: please report it"

_SHOWN = (
    ("two hand-offs", (("route_to", ("A", "B")), ("route_to", ("B", "C")))),
    ("a hand-off and a lookup", (("route_to", ("A",)), ("lookup_weather", "Paris"))),
    ("a lookup alone", (("lookup_weather", "Paris"),)),
)
"""The three turns the lab shows: (label, ((tool, nodes or city), ...))."""


def _call(tool: str, target: Any) -> dict:
    """A fresh tool call (without its id) for `route_to(nodes)` or `lookup_weather(city)`."""
    if tool == "route_to":
        return {"name": "route_to", "args": {"nodes": list(target)}}
    return {"name": "lookup_weather", "args": {"city": target}}


def _shown(tool: str, target: Any) -> str:
    return f"route_to(nodes={list(target)!r})" if tool == "route_to" else f"lookup_weather(city={target!r})"


TURNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {label: tuple(_shown(tool, target) for tool, target in calls) for label, calls in _SHOWN}
)
"""The turns the lab shows, as the model's calls read: label → ("route_to(nodes=['A', 'B'])", ...)."""


class ParentState(TypedDict):
    """The parent's state, shared with the team subgraph: messages, and the parent nodes that ran
    (each parent node appends its name when it runs)."""

    messages: Annotated[list[AnyMessage], add_messages]
    visited: Annotated[list[str], operator.add]


# -- what happened, recorded as it happens (by the course's side only) ----------------------------------
class NodeRecorder:
    """Which parent nodes really ran, in order: written by the parent's own nodes, never by the learner's."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self._lock = threading.Lock()

    def node(self, name: str):
        def run(_state: Any) -> dict:
            with self._lock:
                self.ran.append(name)
            return {"visited": [name]}

        run.__name__ = f"parent_{name}"
        return run

    def take(self) -> list[str]:
        with self._lock:
            ran, self.ran = self.ran, []
        return ran


_RUN = contextvars.ContextVar("lab06_run", default=None)
"""The run a langgraph log record belongs to (checks may run side by side in tests)."""


class _UnknownSends(logging.Filter):
    """Catches langgraph's "Ignoring unknown node name x in pending sends" (a Send to a node the
    parent does not have) for one run: the check explains it instead of showing it as printed output."""

    PATTERN = re.compile(r"^Ignoring unknown node name (?P<node>.*) in pending sends$")

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        match = self.PATTERN.match(record.getMessage())
        if not match or _RUN.get() is not self:
            return True  # another run's record: its own filter (checks may run side by side) takes it
        self.nodes.append(match["node"])
        return False


@contextlib.contextmanager
def _catch_unknown_sends() -> Iterator[_UnknownSends]:
    caught = _UnknownSends()
    logger = logging.getLogger("langgraph")  # langgraph.pregel._log.logger
    logger.addFilter(caught)
    try:
        yield caught
    finally:
        logger.removeFilter(caught)


# -- the scenario: drawn once per check, the hard cases every time -------------------------------------
@dataclass(frozen=True)
class Scenario:
    """One check's draw: the parent's nodes and each case's turns (lists of calls, ids added later)."""

    nodes: tuple[str, ...]
    cases: tuple[tuple[str, tuple[tuple[dict, ...], ...]], ...]


def _every_node_turn(rng: random.Random, nodes: tuple[str, ...], lookup: dict) -> tuple[dict, ...]:
    """Two nodes asked for again, then one route_to call naming every node, its last one asked for
    once: a cap on the Sends (in total or per call) leaves out a node asked for once."""
    every = rng.sample(nodes, len(nodes))
    again = rng.sample(every[:-1], 2)
    calls = [_call("route_to", again), _call("route_to", every)]
    calls.insert(rng.randint(0, 2), lookup)
    return tuple(calls)


def draw_scenario(rng: random.Random) -> Scenario:
    shown_nodes = [n for _, calls in _SHOWN for tool, t in calls if tool == "route_to" for n in t]
    lab_nodes = tuple(
        dict.fromkeys([*shown_nodes, *NODES])
    )  # every node a shown turn names, whatever NODES says
    nodes = (*lab_nodes, *rng.sample([n for n in MORE_NODES if n not in lab_nodes], EXTRA))

    def some(k: int) -> list[str]:
        return rng.sample(nodes, k)

    def city() -> str:
        return rng.choice(sorted(WEATHER))

    shown = {label: tuple(_call(tool, t) for tool, t in calls) for label, calls in _SHOWN}
    near, alone, later = city(), city(), city()
    pair = [_call("lookup_weather", near), _call("route_to", some(rng.randint(1, 2)))]  # lookup first
    first = some(2)
    second = some(2)
    while set(second) == set(first):
        second = some(2)
    every = _every_node_turn(rng, nodes, _call("lookup_weather", city()))
    cases = (
        ("two hand-offs", (shown["two hand-offs"],)),
        (f"a hand-off to all {len(nodes)} parent nodes", (every,)),
        (f"a lookup ({near}), then a hand-off", (tuple(pair),)),
        (f"a lookup alone ({alone})", ((_call("lookup_weather", alone),),)),
        (
            "a second turn in the same thread (a hand-off, then a lookup)",
            ((_call("route_to", first),), (_call("route_to", second), _call("lookup_weather", later))),
        ),
    )
    return Scenario(nodes, cases)


def _message(calls: tuple[dict, ...], rng: random.Random) -> AIMessage:
    """The model's turn with fresh random call ids (so no id can be typed in)."""
    return AIMessage(
        "",
        tool_calls=[
            {**call, "args": {**call["args"]}, "id": f"call_{rng.getrandbits(40):010x}", "type": "tool_call"}
            for call in calls
        ],
    )


def _asked(calls: list[dict]) -> list[str]:
    return [node for c in calls if c["name"] == "route_to" for node in c["args"]["nodes"]]


def _plain(nodes: Counter) -> str:
    return ", ".join(f"{n}×{k}" if k > 1 else n for n, k in sorted(nodes.items())) or "none"


def _few(nodes: Counter, limit: int = 6) -> str:
    """`_plain`, cut after `limit` names (a hand-off to sixteen nodes stays readable)."""
    names = _plain(nodes).split(", ")
    return ", ".join(names[:limit]) + (f", … ({len(names)} in all)" if len(names) > limit else "")


# -- why the parent ran other nodes ------------------------------------------------------------------------
def _capped(seen: Counter, route_calls: list[dict]) -> str | None:
    """What the nodes that ran say about a cap, when they are exactly the first requests of the turn
    (or the first k of each route_to call): a sentence counting the node runs that really happened."""
    requests = [n for c in route_calls for n in c["args"]["nodes"]]
    runs, distinct = sum(seen.values()), len(seen)
    counted = f"{runs} node run(s)" + (f" ({distinct} distinct nodes)" if distinct != runs else "")
    for k in range(1, len(requests)):
        if set(seen) == set(requests[:k]):
            return (
                f"only {counted} happened for {len(requests)} requests, and they are the first ones asked for"
            )
    for k in range(1, max((len(c["args"]["nodes"]) for c in route_calls), default=0)):
        if set(seen) == {n for c in route_calls for n in c["args"]["nodes"][:k]}:
            return (
                f"only {counted} happened for {len(requests)} requests: the first {k} node(s) of each "
                "route_to call"
            )
    return None


def _nodes_problem(
    ran: list[str],
    calls: list[dict],
    claimed: list[str],
    earlier: list[str],
    history: list | None = None,
    unknown: list[str] = (),
    nodes: tuple[str, ...] = NODES,
) -> tuple[str, str] | None:
    """(observed, why) when the parent ran other nodes than the turn asked for; None when right."""
    asked, seen = Counter(_asked(calls)), Counter(ran)
    before = list(history or [])
    if history is not None:
        history.append((asked, seen))
    missing = sorted(set(asked) - set(seen))
    extra = sorted(set(seen) - set(asked))
    too_often = sorted(n for n in seen if n in asked and seen[n] > asked[n])
    if not (missing or extra or too_often):
        return None
    observed = f"parent nodes that ran: {_few(seen)}" + (
        f"; never ran: {', '.join(missing[:6])}" if missing else ""
    )
    route_calls = [c for c in calls if c["name"] == "route_to"]
    cap = _capped(seen, route_calls) if missing and seen else None
    if unknown:
        observed += f"; Sends to unknown nodes {sorted(set(unknown))[:6]} (langgraph ignores them)"
        why = (
            "the parent has no node of those names: hand off to exactly the names route_to received (its "
            f"nodes are named {', '.join(NODES)}, plus {len(nodes) - len(NODES)} drawn for this check: "
            f"{', '.join(nodes[len(NODES) : len(NODES) + 3])}, …)"
        )
    elif missing and not seen and set(asked) <= set(claimed):
        why = (
            f"the parent's `visited` says {claimed[:6]}, but those nodes never ran: writing `visited` is "
            "not a hand-off — the check watches the parent's nodes themselves; hand over with "
            "`Command(graph=Command.PARENT, goto=...)`"
        )
    elif earlier and set(seen) == set(earlier) != set(asked):
        why = (
            f"the nodes of the previous turn ran ({_few(seen)}): the hand-off "
            "read an old AIMessage — take the LAST AIMessage of the history (this turn's calls)"
        )
    elif seen and any(ran_then == seen and asked_then != asked for asked_then, ran_then in before):
        why = (
            f"the same nodes ({_few(seen)}) ran whatever the turn asked for: read the targets from this "
            "turn's route_to calls (`call['args']['nodes']`), never type them in"
        )
    elif missing and not seen:
        why = (
            "no parent node ran: the team ended without handing off, or its Command named no node — from a "
            "node of your own, a `Command(graph=Command.PARENT, update=...)` without `goto` (or with "
            "`goto=[]`) only updates the parent's state; from a tool, `goto=[]` is even merged by ToolNode "
            "like a list of Sends, and its update is lost. Name the nodes: `goto=[Send(node, ...) for each "
            "node]` or a list of node names"
        )
    elif missing and len(route_calls) > 1 and set(seen) == set(route_calls[0]["args"]["nodes"]):
        why = (
            "only the first route_to call's nodes ran: hand off to the nodes of every route_to call of "
            "the turn"
        )
    elif missing and len(seen) == 1 and len(asked) > 1:
        why = (
            "one node ran where several were asked for: a string `goto` reaches one node; a list — of "
            "`Send`s or of node names — reaches each"
        )
    elif cap:
        why = (
            f"{cap}: is there a cap (a slice such as `nodes[:4]`, a maximum number of Sends)? Hand off to "
            "every node asked for, however many"
        )
    elif extra:
        why = (
            f"{extra[:6]} ran though no call asked for them: read the targets from this turn's route_to "
            "calls (`call['args']['nodes']`), never type them in"
        )
    elif too_often:
        why = (
            f"{too_often[:6]} ran more often than asked for: one Send per requested node, no more (a node "
            "asked for by two calls may run once or twice)"
        )
    else:
        why = f"{missing[:6]} were asked for but never ran: one Send (or one name in goto) per requested node"
    return observed, why


# -- one turn, as the course saw it, and the cases that judge it -----------------------------------------
@dataclass
class Turn:
    """One turn of a case: what the model asked for and what the course's side recorded meanwhile."""

    prefix: str  # "turn 2: " in a case of several turns, else ""
    message: AIMessage
    ran: list[str]
    claimed: list[str]
    unknown: list[str]
    looked_up: list[str]
    messages: list
    nodes: tuple[str, ...]

    @property
    def calls(self) -> list[dict]:
        return self.message.tool_calls


def case_right_nodes(turn: Turn, earlier: list[str], history: list) -> None:
    """Every node a route_to call of this turn asked for ran, and no other."""
    problem = _nodes_problem(turn.ran, turn.calls, turn.claimed, earlier, history, turn.unknown, turn.nodes)
    if problem:
        asked = _asked(turn.calls)
        observed, why = problem
        raise fail(
            f"{turn.prefix}the parent ran other nodes",
            expected=f"parent nodes {_few(Counter(asked))} to run, no other"
            + (" (a node asked for twice may run once or twice)" if len(set(asked)) < len(asked) else ""),
            observed=observed,
            why=why,
            where=section(LESSON, MERGED),
        )


def case_every_call_answered(turn: Turn) -> None:
    """Every tool call of the turn is answered by a ToolMessage in the parent's state."""
    names = {c["id"]: c["name"] for c in turn.calls}
    dangling = [i for i in unanswered_tool_calls(turn.messages) if i in names]
    if dangling:
        raise fail(
            f"{turn.prefix}tool calls left unanswered in the parent",
            expected="every tool call of the parent's AIMessage answered by a ToolMessage in the "
            "parent's state (a chat API rejects the next request otherwise)",
            observed="unanswered: " + ", ".join(f"{i} ({names[i]})" for i in dangling),
            why="only the first PARENT Command a node produces reaches the parent, with at most its own "
            "update (from a tool whose goto is a list of Sends, ToolNode's merge drops even that); the "
            "other calls' ToolMessages stay behind in the subgraph — answer every call first, then hand "
            "off once from a node of your own that carries every answer",
            where=section(LESSON, STRING_GOTO),
        )


def case_lookup_answered(turn: Turn) -> None:
    """Each lookup really ran (recorded by the tool) and its answer reached the parent unchanged."""
    answers = {m.tool_call_id: m for m in turn.messages if isinstance(m, ToolMessage)}
    for call in turn.calls:
        if call["name"] != "lookup_weather":
            continue
        city, answer = call["args"]["city"], answers.get(call["id"])
        really = city in turn.looked_up
        if not really or answer is None or answer.content != weather_report(city):
            raise fail(
                f"{turn.prefix}lookup_weather's answer did not reach the parent",
                expected=f"lookup_weather really called for {city}, its answer {weather_report(city)!r} "
                "in the parent's messages",
                observed=f"tool called: {'yes' if really else 'no'}; answer in the parent: "
                f"{answer.content if answer is not None else None!r}",
                why="the lookup's ToolMessage must reach the parent as ToolNode wrote it: carry it in "
                "the hand-off's update (or end the subgraph normally when there is nothing to hand off)",
                where=section(LESSON, HAND_OFF),
            )


# -- playing a case on the course's parent graph ------------------------------------------------------------
def build_parent(
    team: Any, tools: list, turns: list[Any], recorder: NodeRecorder | None = None,
    nodes: tuple[str, ...] = NODES, **compile_kw,
):  # fmt: skip
    """Compile `START → agent → team`; the `nodes` are reached only by a Command from the team.

    `agent` is a scripted model playing `turns` (one reply per invocation of the parent)."""
    recorder = recorder if recorder is not None else NodeRecorder()
    model = ScriptedChatModel(script=list(turns)).bind_tools(tools)
    parent = StateGraph(ParentState)
    parent.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    parent.add_node("team", team, destinations=tuple(nodes))
    for name in nodes:
        parent.add_node(name, recorder.node(name))
        parent.add_edge(name, END)
    parent.add_edge(START, "agent")
    parent.add_edge("agent", "team")
    return parent.compile(**compile_kw)


def _course_bug(what: str, exc: BaseException) -> CheckFailed:
    return fail(
        f"the check's own {what} failed",
        expected="the course's parent graph to run your team",
        observed=f"{type(exc).__name__}: {labs.shorten(exc, 200)}",
        why=COURSE_BUG,
        where="labs/README.md (how labs work)",
    )


def _the_courses_fault(exc: BaseException) -> bool:
    """True when `exc` started in the course's own code and no frame of the learner's is on the way."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    kinds = [labs._kind(f.filename) for f in frames]
    return bool(kinds) and kinds[-1] == "course" and "learner" not in kinds


@functools.cache
def _weather_schema() -> Any:
    return make_city_tools(delay=0, sync=True)[0].args_schema


def _weather_tool(calls: list[str]) -> BaseTool:
    """The course's `lookup_weather`, recording each city it was really called for."""

    def lookup_weather(city: str) -> str:
        calls.append(city)
        return weather_report(city)

    return StructuredTool(
        name="lookup_weather",
        description="Look up today's weather for a city, e.g. Paris.",
        func=lookup_weather,
        args_schema=_weather_schema(),
    )


def _team(build_team: Any, tools: list) -> Any:
    """The learner's compiled team, or a verdict saying what build_team returned instead."""
    where = section(LESSON, HAND_OFF)
    team = run_learner(build_team, tools, limit=LIMIT, name="build_team")
    expected = "build_team(tools) to return the compiled subgraph"
    if team is None:
        raise fail("build_team returned None.", expected=expected, observed="None",
                   why="did `build_team` end without `return team.compile()`?", where=where)  # fmt: skip
    if isinstance(team, StateGraph):
        raise fail(
            "build_team returned the builder, not the compiled subgraph.",
            expected=expected,
            observed=f"a {type(team).__name__} (not compiled)",
            why="a StateGraph is only the plan: the parent can add it as a node once it is compiled — "
            "end `build_team` with `return team.compile()`",
            where=where,
        )
    if not isinstance(team, Pregel):
        plain = callable(team) or isinstance(team, Runnable)
        raise fail(
            "build_team did not return a compiled subgraph.",
            expected=expected + ": a StateGraph over ParentState, compiled, whose hand-off leaves it with "
            "`Command(graph=Command.PARENT, goto=...)`",
            observed=f"a {type(team).__name__}" + (" (a node function, not a subgraph)" if plain else ""),
            why="a function added to the parent is a node of the parent itself: its `Command(goto=...)` "
            "reaches the parent's nodes without `Command.PARENT`, and the trap this lab is about (a "
            "PARENT Command leaving a subgraph with other calls' answers behind) never happens — build "
            "the team as a subgraph (its ToolNode and your hand-off node) and end `build_team` with "
            "`return team.compile()`"
            if plain
            else "the parent adds what build_team returns as a node: end `build_team` with "
            "`return team.compile()`",
            where=where,
        )
    return team


def _saved(graph: Any, thread: dict, caught: _UnknownSends) -> dict:
    """The parent's saved state (reading it logs the pending Sends again: they go to `caught`)."""

    def read() -> dict:
        _RUN.set(caught)
        return dict(graph.get_state(thread).values)

    return contextvars.copy_context().run(read)


def _run_turn(graph: Any, thread: dict, number: int, caught: _UnknownSends) -> dict:
    """One turn of the parent graph under the time limit; the log records of this run go to `caught`."""

    async def the_parent_graph_with_your_team() -> dict:
        _RUN.set(caught)
        return await graph.ainvoke({"messages": [HumanMessage(f"Split the work ({number}).")]}, thread)

    try:
        return run_learner(
            the_parent_graph_with_your_team, limit=LIMIT, name="the parent graph with your team"
        )
    except LearnerRaised as error:
        if _the_courses_fault(error.original):
            raise _course_bug("parent graph", error.original) from None
        raise


def play(
    route_to: Any, build_team: Any, scenario: Scenario, turns: tuple, rng: random.Random, history: list
) -> None:
    """Play one case's `turns` on one thread of a fresh parent graph; each turn is judged by the case
    functions, the first failure raised as `CheckFailed`."""
    looked_up: list[str] = []
    tools = [route_to, _weather_tool(looked_up)]
    team = _team(build_team, tools)
    recorder = NodeRecorder()
    messages = [_message(calls, rng) for calls in turns]
    try:
        graph = build_parent(team, tools, messages, recorder, scenario.nodes, checkpointer=InMemorySaver())
    except TypeError as exc:
        if "Expected a Runnable" not in str(exc):
            raise _course_bug("parent graph", exc) from None
        raise fail(
            "build_team did not return a compiled subgraph.",
            expected="build_team(tools) to return the compiled subgraph",
            observed=f"a {type(team).__name__}",
            why="the parent adds what build_team returns as a node: end `build_team` with "
            "`return team.compile()`",
            where=section(LESSON, HAND_OFF),
        ) from None
    except Exception as exc:  # noqa: BLE001 - the course's own graph: said to be the course's
        raise _course_bug("parent graph", exc) from None
    thread = {"configurable": {"thread_id": f"lab06-{uuid.uuid4().hex[:8]}"}}
    earlier: list[str] = []
    for number, message in enumerate(messages, 1):
        seen_cities = len(looked_up)
        with _catch_unknown_sends() as caught:
            before = len(_saved(graph, thread, caught).get("visited", []))
            _run_turn(graph, thread, number, caught)
            saved = _saved(graph, thread, caught)  # judged from what the course's graph saved
        turn = Turn(
            prefix=f"turn {number}: " if len(messages) > 1 else "",
            message=message,
            ran=recorder.take(),
            claimed=list(saved.get("visited", []))[before:],
            unknown=caught.nodes,
            looked_up=looked_up[seen_cities:],
            messages=list(saved.get("messages", [])),
            nodes=scenario.nodes,
        )
        case_right_nodes(turn, earlier, history)
        case_every_call_answered(turn)
        case_lookup_answered(turn)
        earlier = _asked(turn.calls)


def _signature_problem(fn: Any, name: str, n: int, shape: str) -> CheckFailed | None:
    if not callable(fn):
        return fail(
            f"`{name}` must be a function.",
            key="q1",
            where=section(LESSON, HAND_OFF),
            expected=shape,
            observed=f"a {type(fn).__name__}",
        )
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        return fail(
            f"`{name}` must take {n} argument(s).",
            key="q1",
            where=section(LESSON, HAND_OFF),
            expected=shape,
            observed=f"{name}{inspect.signature(fn)}",
        )
    except ValueError:  # no signature to read (a builtin): let the call decide
        return None
    return None


def check_hand_off(route_to: Any, build_team: Any, *, seed: int | None = None) -> str:
    key = "q1"
    where = section(LESSON, HAND_OFF)
    name = getattr(route_to, "name", None) or getattr(route_to, "__name__", None)
    if name != "route_to":
        raise fail(
            "`route_to` must be a tool named route_to.",
            key=key,
            where=where,
            expected="@tool\ndef route_to(nodes: list[str]) -> ...",
            observed=f"a {type(route_to).__name__} named {name!r}"[:200],
        )
    problem = _signature_problem(
        build_team, "build_team", 1, "def build_team(tools): ... return team.compile()"
    )
    if problem:
        raise problem
    rng = random.Random(seed)
    scenario = draw_scenario(rng)
    cases, seen, history = Cases(key), {}, []
    for label, turns in scenario.cases:
        nodes = _few(Counter(_asked(list(turns[-1]))), 4)
        detail = (f"ran {nodes}" if nodes != "none" else "no hand-off") + ", every call answered"
        if cases.hung is not None:
            cases.run(label, lambda: None)  # recorded as not tried
            continue
        try:
            play(route_to, build_team, scenario, turns, rng, history)
        except labs.StillAStub:
            raise
        except CheckFailed as error:
            record_failure(cases, label, error, seen)
        else:
            cases.ok(label, detail)
    return cases.result(
        f"every asked-for parent node ran and no other (seen by the parent's own nodes), also all "
        f"{len(scenario.nodes)} at once; a lookup's answer reached the parent before a hand-off, after "
        "one and alone; "
        "a second turn handed off its own nodes — every tool call answered in the parent each time."
    )


q1 = Exercise(
    "06",
    "q1",
    ("route_to", "build_team"),
    check_hand_off,
    (
        "A PARENT Command leaves the subgraph at once and takes at most its own update with it (a tool's "
        "goto that is a list of Sends loses even that). So: answer every call first, then hand off once, "
        "carrying the answers.",
        "Let `route_to` return a plain string, so ToolNode answers every call normally. After the ToolNode, "
        "add a node that reads the LAST AIMessage's calls, collects the ToolMessages answering them, and "
        "returns `Command(graph=Command.PARENT, goto=[Send(n, None) for each requested node], "
        "update={'messages': answers})`. With no route_to call, return `{}` instead and let the subgraph end "
        "normally.",
    ),
)

__all__ = ["NODES", "CheckFailed", "NodeRecorder", "ParentState", "TURNS", "build_parent", "q1"]
