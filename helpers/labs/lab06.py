"""Lab 06 — Hand off to the parent (after `notebooks/06_command_and_parent.ipynb`).

q1: a `route_to(nodes)` tool and `build_team(tools)`, a subgraph that lets the model hand control to
    parent nodes with `Command.PARENT` + `Send` while the parent's history stays valid (every tool
    call answered) — also when the model calls another tool in the same turn.

The check runs a real parent graph (`agent → team`, parent nodes A, B, C reached only by Send) for
three turns: two hand-offs, a hand-off next to `lookup_weather`, and `lookup_weather` alone.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from helpers.history import unanswered_tool_calls
from helpers.labs import CheckFailed, Exercise, fail, run_async, section
from helpers.models import ScriptedChatModel
from helpers.tools import make_city_tools

LESSON = "06_command_and_parent"


class ParentState(TypedDict):
    """The parent's state, shared with the team subgraph: messages, and the parent nodes that ran."""

    messages: Annotated[list[AnyMessage], add_messages]
    visited: Annotated[list[str], operator.add]


def build_parent(team: Any, tools: list, turn: list[dict]) -> Any:
    """Compile `START → agent → team`; A, B and C are reached only by a Command from the team.

    `agent` is a scripted model whose one turn is `turn` (a list of tool calls)."""
    model = ScriptedChatModel(script=[turn]).bind_tools(tools)
    parent = StateGraph(ParentState)
    parent.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    parent.add_node("team", team)
    for name in "ABC":
        parent.add_node(name, _visit(name))
    parent.add_edge(START, "agent")
    parent.add_edge("agent", "team")
    return parent.compile()


def _visit(name: str):
    return lambda _state: {"visited": [name]}


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
VISITS = {"two hand-offs": ["A", "B", "B", "C"], "a hand-off and a lookup": ["A"], "a lookup alone": []}


def run_turn(route_to: Any, build_team: Any, turn: str) -> dict:
    """Build the team around `[route_to, lookup_weather]`, run the parent for one scripted turn."""
    tools = [route_to, make_city_tools(delay=0)[0]]
    graph = build_parent(build_team(tools), tools, TURNS[turn])
    return run_async(lambda: graph.ainvoke({"messages": [HumanMessage("Split the work.")], "visited": []}))


def check_hand_off(route_to: Any, build_team: Any) -> str:
    key = "q1"
    where = section(LESSON, "A hand-off that keeps the history valid")
    if getattr(route_to, "name", None) != "route_to":
        raise fail(
            "`route_to` must be a tool named route_to.",
            key=key,
            where=where,
            expected="@tool\ndef route_to(nodes: list[str]) -> ...",
            observed=repr(route_to)[:200],
        )
    for turn in TURNS:
        try:
            final = run_turn(route_to, build_team, turn)
        except (CheckFailed, NotImplementedError):
            raise
        except Exception as exc:
            raise fail(
                f"the parent graph failed on the turn with {turn}.",
                key=key,
                where=where,
                expected="the parent to run to the end",
                observed=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300],
            ) from None
        visited = final.get("visited", [])
        dangling = unanswered_tool_calls(final["messages"])
        answers = [m for m in final["messages"] if isinstance(m, ToolMessage)]
        if sorted(visited) != sorted(VISITS[turn]):
            raise fail(
                f"turn with {turn}: the parent ran other nodes.",
                key=key,
                where=section(LESSON, "5. `Command.PARENT` with `Send`: merged into one Command"),
                expected=f"parent nodes {VISITS[turn]} (one Send per requested node)",
                observed=f"{visited}"
                + (
                    " — a string goto reaches one node; a list of Sends reaches each"
                    if len(visited) < len(VISITS[turn])
                    else ""
                ),
            )
        if dangling:
            names = {c["id"]: c["name"] for m in final["messages"] for c in getattr(m, "tool_calls", [])}
            lost = ", ".join(f"{i} ({names.get(i)})" for i in dangling)
            raise fail(
                f"turn with {turn}: the parent's history has tool calls no ToolMessage answers.",
                key=key,
                where=where,
                expected="every tool call of the parent's AIMessage answered by a ToolMessage in "
                "the parent's state (a chat API rejects the next request otherwise)",
                observed=f"unanswered: {lost} — only a PARENT Command's own update reaches the parent "
                "(and ToolNode's merge of PARENT + Send Commands drops even that); the other "
                "calls' ToolMessages stay behind in the subgraph",
            )
        if "lookup_weather" in {c["name"] for c in TURNS[turn]} and not any(
            m.content == "Paris: sunny, 25 °C" for m in answers
        ):
            raise fail(
                f"turn with {turn}: lookup_weather's answer did not reach the parent.",
                key=key,
                where=where,
                expected="ToolMessage('Paris: sunny, 25 °C') in the parent's messages",
                observed=f"{[m.content for m in answers]}",
            )
    return (
        "two hand-offs ran A, B, B, C; a hand-off next to a lookup ran A and kept the weather; a lookup "
        "alone handed nothing off — every tool call answered in the parent each time."
    )


q1 = Exercise(
    "06",
    "q1",
    ("route_to", "build_team"),
    check_hand_off,
    (
        "A PARENT Command leaves the subgraph at once and takes only its own update with it. So: answer "
        "every call first, then hand off once, carrying the answers.",
        "Let `route_to` return a plain string, so ToolNode answers every call normally. After the ToolNode, "
        "add a node that reads the last AIMessage's calls, collects the ToolMessages answering them, and "
        "returns `Command(graph=Command.PARENT, goto=[Send(n, None) for each requested node], "
        "update={'messages': answers})`. With no route_to call, return `{}` instead and let the subgraph end "
        "normally.",
    ),
)

__all__ = ["CheckFailed", "ParentState", "TURNS", "build_parent", "q1", "run_turn"]
