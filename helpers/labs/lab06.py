"""Lab 06 — Hand off to the parent (after `notebooks/06_command_and_parent.ipynb`).

q1: a `route_to(nodes)` tool and `build_team(tools)`, a subgraph that lets the model hand control to
    parent nodes with `Command.PARENT` while the parent's history stays valid (every tool call
    answered) — also when the model calls another tool in the same turn, and on a later turn of the
    same thread.

The check runs a real parent graph (`agent → team`; parent nodes A, B, C, D reached only by a
Command from the team) and watches the parent's nodes itself: each one reports to a recorder the
check owns, so only a node that really ran counts (not what the state's `visited` says). The turns
are the three shown in the lab plus two with random nodes, cities and call ids, and a second turn
of one thread.

A node asked for by two calls of one turn (B in the first turn) may run once or twice: a `goto`
list of node names triggers each node once per step, one `Send` per request runs it once per
request. Both are accepted; a node nobody asked for, or one asked for and never run, is not.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import operator
import random
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from helpers import labs
from helpers.cities import WEATHER, weather_report
from helpers.history import unanswered_tool_calls
from helpers.labs import Cases, CheckFailed, Exercise, fail, record_failure, run_learner, section
from helpers.models import ScriptedChatModel
from helpers.tools import make_city_tools

LESSON = "06_command_and_parent"
LIMIT: float | None = None
"""Seconds one run of the learner's code may take before a hang is reported (None: labs.LIMIT)."""
NODES = ("A", "B", "C", "D")
"""The parent's nodes a hand-off may reach."""
HAND_OFF = "A hand-off that keeps the history valid"
STRING_GOTO = "With other calls in the batch, neither form is safe"
MERGED = "4. `Command.PARENT` with `Send`: merged into one Command"


class ParentState(TypedDict):
    """The parent's state, shared with the team subgraph: messages, and the parent nodes that ran
    (each of A, B, C, D appends its name when it runs)."""

    messages: Annotated[list[AnyMessage], add_messages]
    visited: Annotated[list[str], operator.add]


class NodeRecorder:
    """Which parent nodes really ran: written by the parent's own nodes, never by the learner's."""

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


def build_parent(
    team: Any, tools: list, turns: list[Any], recorder: NodeRecorder | None = None, **compile_kw
):
    """Compile `START → agent → team`; A, B, C and D are reached only by a Command from the team.

    `agent` is a scripted model playing `turns` (one reply per invocation of the parent)."""
    recorder = recorder if recorder is not None else NodeRecorder()
    model = ScriptedChatModel(script=list(turns)).bind_tools(tools)
    parent = StateGraph(ParentState)
    parent.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    parent.add_node("team", team, destinations=NODES)
    for name in NODES:
        parent.add_node(name, recorder.node(name))
        parent.add_edge(name, END)
    parent.add_edge(START, "agent")
    parent.add_edge("agent", "team")
    return parent.compile(**compile_kw)


TURNS = {
    "two hand-offs": [
        {"name": "route_to", "args": {"nodes": ["A", "B"]}},
        {"name": "route_to", "args": {"nodes": ["B", "C"]}},
    ],
    "a hand-off and a lookup": [
        {"name": "route_to", "args": {"nodes": ["A"]}},
        {"name": "lookup_weather", "args": {"city": "Paris"}},
    ],
    "a lookup alone": [{"name": "lookup_weather", "args": {"city": "Paris"}}],
}
"""The three turns the lab shows; the check also plays random variants and a second turn."""


def _message(calls: list[dict], rng: random.Random) -> AIMessage:
    """The model's turn with fresh random call ids (so no id can be typed in)."""
    return AIMessage(
        "",
        tool_calls=[
            {**call, "id": f"call_{rng.getrandbits(40):010x}", "type": "tool_call"} for call in calls
        ],
    )


def _asked(calls: list[dict]) -> list[str]:
    return [node for c in calls if c["name"] == "route_to" for node in c["args"]["nodes"]]


def _random_turns(rng: random.Random) -> dict[str, list[list[dict]]]:
    """name → the model's turns (one list of calls per turn of the same thread)."""

    def some(k: int) -> list[str]:
        return sorted(rng.sample(NODES, k))

    city = rng.choice(sorted(WEATHER))
    lookup = {"name": "lookup_weather", "args": {"city": city}}
    hand_off = {"name": "route_to", "args": {"nodes": some(rng.randint(1, 2))}}
    first, second = some(2), None
    second = some(2)
    while set(second) == set(first):
        second = some(2)
    return {
        "two hand-offs": [TURNS["two hand-offs"]],
        "two hand-offs to random nodes": [
            [
                {"name": "route_to", "args": {"nodes": some(rng.randint(1, 2))}},
                {"name": "route_to", "args": {"nodes": some(rng.randint(1, 3))}},
            ]
        ],
        f"a hand-off and a lookup ({city})": [rng.sample([hand_off, lookup], 2)],
        f"a lookup alone ({rng.choice(sorted(WEATHER))})": [
            [{"name": "lookup_weather", "args": {"city": rng.choice(sorted(WEATHER))}}]
        ],
        "a second turn in the same thread": [
            [{"name": "route_to", "args": {"nodes": first}}],
            [{"name": "route_to", "args": {"nodes": second}}, lookup],
        ],
    }


def _plain(nodes: Counter) -> str:
    return ", ".join(f"{n}×{k}" if k > 1 else n for n, k in sorted(nodes.items())) or "none"


class _UnknownSends(logging.Filter):
    """Catches langgraph's "Ignoring unknown node name x in pending sends" (a Send to a node the
    parent does not have): the check explains it instead of showing it as printed output."""

    PATTERN = re.compile(r"^Ignoring unknown node name (?P<node>.*) in pending sends$")

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        match = self.PATTERN.match(record.getMessage())
        if match:
            self.nodes.append(match["node"])
            return False
        return True


@contextlib.contextmanager
def _catch_unknown_sends() -> Iterator[_UnknownSends]:
    caught = _UnknownSends()
    logger = logging.getLogger("langgraph")  # langgraph.pregel._log.logger
    logger.addFilter(caught)
    try:
        yield caught
    finally:
        logger.removeFilter(caught)


def _nodes_problem(
    ran: list[str],
    calls: list[dict],
    claimed: list[str],
    earlier: list[str],
    history: list | None = None,
    unknown: list[str] = (),
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
    observed = f"parent nodes that ran: {_plain(seen)}"
    route_calls = [c for c in calls if c["name"] == "route_to"]
    if unknown:
        observed += f"; Sends to unknown nodes {sorted(set(unknown))} (langgraph ignores them)"
        why = (
            f"the parent has no node of those names: its nodes are named {', '.join(NODES)} — hand off to "
            "exactly the names route_to received"
        )
    elif missing and not seen and set(asked) <= set(claimed):
        why = (
            f"the parent's `visited` says {claimed}, but those nodes never ran: writing `visited` is not a "
            "hand-off — the check watches the parent's nodes themselves; hand over with "
            "`Command(graph=Command.PARENT, goto=...)`"
        )
    elif earlier and set(seen) == set(earlier) != set(asked):
        why = (
            f"the nodes of the previous turn ran ({_plain(seen)}): the hand-off "
            "read an old AIMessage — take the LAST AIMessage of the history (this turn's calls)"
        )
    elif seen and any(ran_then == seen and asked_then != asked for asked_then, ran_then in before):
        why = (
            f"the same nodes ({_plain(seen)}) ran whatever the turn asked for: read the targets from this "
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
    elif extra:
        why = (
            f"{extra} ran though no call asked for them: read the targets from this turn's route_to calls "
            "(`call['args']['nodes']`), never type them in"
        )
    elif too_often:
        why = (
            f"{too_often} ran more often than asked for: one Send per requested node, no more (a node asked "
            "for by two calls may run once or twice)"
        )
    else:
        why = f"{missing} were asked for but never ran: one Send (or one name in goto) per requested node"
    return observed, why


def _signature_problem(fn: Any, name: str, n: int, shape: str) -> CheckFailed | None:
    if not callable(fn):
        return fail(
            f"`{name}` must be a function.",
            key="q1",
            where=section(LESSON, HAND_OFF),
            expected=shape,
            observed=f"a {type(fn).__name__}: {fn!r}"[:200],
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


def _play(
    route_to: Any, build_team: Any, turns: list[list[dict]], rng: random.Random, history: list | None = None
) -> None:
    """Play `turns` on one thread of a fresh parent graph; raise `CheckFailed` at the first problem."""
    where = section(LESSON, HAND_OFF)
    weather_calls: list[str] = []
    tools = [route_to, _weather_tool(weather_calls)]
    team = run_learner(build_team, tools, limit=LIMIT, name="build_team")
    if team is None:
        raise fail(
            "build_team returned None.",
            expected="build_team(tools) to return the compiled subgraph",
            observed="None",
            why="did `build_team` end without `return team.compile()`?",
            where=where,
        )
    if isinstance(team, StateGraph):
        raise fail(
            "build_team returned the builder, not the compiled subgraph.",
            expected="build_team(tools) to return the compiled subgraph",
            observed=f"a {type(team).__name__} (not compiled)",
            why="a StateGraph is only the plan: the parent can add it as a node once it is compiled — "
            "end `build_team` with `return team.compile()`",
            where=where,
        )
    recorder = NodeRecorder()
    messages = [_message(calls, rng) for calls in turns]
    try:
        graph = build_parent(team, tools, messages, recorder, checkpointer=InMemorySaver())
    except TypeError as exc:
        if "Expected a Runnable" not in str(exc):
            raise
        raise fail(
            "build_team did not return a compiled subgraph.",
            expected="build_team(tools) to return the compiled subgraph",
            observed=f"a {type(team).__name__}: {team!r}"[:200],
            why="the parent adds what build_team returns as a node: end `build_team` with "
            "`return team.compile()`",
            where=where,
        ) from None
    thread = {"configurable": {"thread_id": f"lab06-{uuid.uuid4().hex[:8]}"}}
    earlier: list[str] = []
    for number, (calls, asked_message) in enumerate(zip(turns, messages, strict=True), 1):
        turn = f"turn {number}: " if len(turns) > 1 else ""
        start = {"messages": [HumanMessage(f"Split the work ({number}).")]}
        before = len(graph.get_state(thread).values.get("visited", []))
        with _catch_unknown_sends() as unknown:
            final = run_learner(
                graph.ainvoke, start, thread, limit=LIMIT, name="the parent graph with your team"
            )
        ran = recorder.take()
        claimed = list(final.get("visited", []))[before:]
        problem = _nodes_problem(ran, calls, claimed, earlier, history, unknown.nodes)
        ids = {c["id"]: c["name"] for c in asked_message.tool_calls}
        dangling = [i for i in unanswered_tool_calls(final["messages"]) if i in ids]
        answers = {m.tool_call_id: m for m in final["messages"] if isinstance(m, ToolMessage)}
        if problem:
            observed, why = problem
            raise fail(
                f"{turn}the parent ran other nodes",
                expected=f"parent nodes {_plain(Counter(_asked(calls)))} to run, no other"
                + (
                    " (a node asked for twice may run once or twice)"
                    if len(set(_asked(calls))) < len(_asked(calls))
                    else ""
                ),
                observed=observed,
                why=why,
                where=section(LESSON, MERGED),
            )
        if dangling:
            raise fail(
                f"{turn}tool calls left unanswered in the parent",
                expected="every tool call of the parent's AIMessage answered by a ToolMessage in the "
                "parent's state (a chat API rejects the next request otherwise)",
                observed="unanswered: " + ", ".join(f"{i} ({ids[i]})" for i in dangling),
                why="only the first PARENT Command a node produces reaches the parent, with at most its own "
                "update (from a tool whose goto is a list of Sends, ToolNode's merge drops even that); the "
                "other calls' ToolMessages stay behind in the subgraph — answer every call first, then hand "
                "off once from a node of your own that carries every answer",
                where=section(LESSON, STRING_GOTO),
            )
        for call in asked_message.tool_calls:
            if call["name"] != "lookup_weather":
                continue
            city = call["args"]["city"]
            answer = answers.get(call["id"])
            really = city in weather_calls
            if not really or answer is None or answer.content != weather_report(city):
                raise fail(
                    f"{turn}lookup_weather's answer did not reach the parent",
                    expected=f"lookup_weather really called for {city}, its answer {weather_report(city)!r} "
                    "in the parent's messages",
                    observed=f"tool called: {'yes' if really else 'no'}; answer in the parent: "
                    f"{answer.content if answer is not None else None!r}",
                    why="the lookup's ToolMessage must reach the parent as ToolNode wrote it: carry it in "
                    "the hand-off's update (or end the subgraph normally when there is nothing to hand off)",
                    where=where,
                )
        earlier = _asked(calls)


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
            observed=repr(route_to)[:200],
        )
    problem = _signature_problem(
        build_team, "build_team", 1, "def build_team(tools): ... return team.compile()"
    )
    if problem:
        raise problem
    rng = random.Random(seed)
    cases, seen, history = Cases(key), {}, []
    for label, turns in _random_turns(rng).items():
        nodes = _plain(Counter(_asked(turns[-1])))
        detail = (f"ran {nodes}" if nodes != "none" else "no hand-off") + ", every call answered"
        if cases.hung is not None:
            cases.run(label, lambda: None)  # recorded as not tried
            continue
        try:
            _play(route_to, build_team, turns, rng, history)
        except labs.StillAStub:
            raise
        except CheckFailed as error:
            record_failure(cases, label, error, seen)
        else:
            cases.ok(label, detail)
    return cases.result(
        "every asked-for parent node ran and no other (seen by the parent's own nodes); a lookup's answer "
        "reached the parent next to a hand-off and alone; a second turn handed off its own nodes — every "
        "tool call answered in the parent each time."
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
