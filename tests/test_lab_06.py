"""Lab 06 against a determined learner: every check hands off to all sixteen parent nodes (twelve of
them named at random, capitalised), so a cap on the Sends, a filter on the lab's own node names or a
change of case is refused on every draw; correct hand-offs written differently pass; a check whose own
node list was shrunk still judges the learner's code, and a failure of the course's own parent graph
is said to be the course's. Every draw plays a lookup before a hand-off and one after it, so a
hand-off that reads one position of the turn is refused on every draw; a node function of the
parent's own (no subgraph, no `Command.PARENT`) is refused; a cap's verdict counts the node runs that
really happened. Each answer is judged on five draws (ten for the position attacks)."""

from __future__ import annotations

import random

from lab_checks import assert_verdicts, verdicts
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, Send

from helpers.labs import CheckFailed, lab06, solution_namespace

SOL = solution_namespace("06")
ROUTE_TO = SOL["route_to"]
SEEDS = range(5)


def this_turn(state) -> tuple[list, list[str]]:
    asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
    ids = {c["id"] for c in asked.tool_calls}
    answers = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id in ids]
    return answers, [n for c in asked.tool_calls if c["name"] == "route_to" for n in c["args"]["nodes"]]


def team(hand_off):
    def build_team(tools):
        graph = StateGraph(lab06.ParentState)
        graph.add_node("tools", ToolNode(tools))
        graph.add_node("hand_off", hand_off)
        graph.add_edge(START, "tools")
        graph.add_edge("tools", "hand_off")
        return graph.compile()

    return build_team


def sending(pick):
    """A hand-off node that Sends to `pick(nodes)` with every answer."""

    def hand_off(state):
        answers, nodes = this_turn(state)
        if not nodes:
            return {}
        return Command(
            graph=Command.PARENT, goto=[Send(n, None) for n in pick(nodes)], update={"messages": answers}
        )

    return hand_off


# -- correct, written differently ---------------------------------------------------------------------------
def names_goto(state):
    answers, nodes = this_turn(state)
    return Command(graph=Command.PARENT, goto=nodes, update={"messages": answers}) if nodes else {}


class Dedup:
    def __call__(self, state):
        answers, nodes = this_turn(state)
        if not nodes:
            return {"messages": []}
        sends = [Send(n, state) for n in dict.fromkeys(nodes)]
        return Command(graph=Command.PARENT, goto=sends, update={"messages": answers})


async def async_hand_off(state):
    answers, nodes = this_turn(state)
    goto = [Send(n, {"from": "team"}) for n in sorted(nodes)]
    return Command(graph=Command.PARENT, goto=goto, update={"messages": answers}) if nodes else {}


def routed_team(tools):  # a conditional edge: hand off only when route_to was called
    graph = StateGraph(lab06.ParentState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_node("hand_off", names_goto)
    graph.add_edge(START, "tools")
    graph.add_conditional_edges("tools", lambda s: "hand_off" if this_turn(s)[1] else END, ["hand_off", END])
    return graph.compile()


def plain_route_to(nodes: list[str]) -> str:
    """Ask the parent graph to run these nodes."""
    return f"ok: {len(nodes)} node(s)"


PLAIN_ROUTE_TO = StructuredTool.from_function(plain_route_to, name="route_to")


def test_correct_hand_offs_pass_on_every_draw():
    answers = {
        "solution": (ROUTE_TO, SOL["build_team"]),
        "goto names": (ROUTE_TO, team(names_goto)),
        "class node, sends de-duplicated": (PLAIN_ROUTE_TO, team(Dedup())),
        "async node, sorted sends": (ROUTE_TO, team(async_hand_off)),
        "conditional edge": (PLAIN_ROUTE_TO, routed_team),
    }
    for seed in SEEDS:
        results = verdicts(lambda pair, seed=seed: lab06.check_hand_off(*pair, seed=seed), answers)
        assert_verdicts(results, dict.fromkeys(answers, ()))


# -- wrong: caps, the lab's names, a change of case, and the classic mistakes ----------------------------
LAB_NODES = ("A", "B", "C", "D")


def per_call_cap(state):
    answers, _ = this_turn(state)
    asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
    nodes = [n for c in asked.tool_calls if c["name"] == "route_to" for n in c["args"]["nodes"][:5]]
    return (
        Command(graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": answers})
        if nodes
        else {}
    )


def writes_visited(state):
    return {"visited": this_turn(state)[1]}


def test_wrong_hand_offs_are_refused_on_every_draw_with_the_mistake_named():
    cap = ("the parent ran other nodes", "is there a cap")
    answers = {
        "at most four Sends": (ROUTE_TO, team(sending(lambda nodes: nodes[:4]))),
        "at most ten Sends": (ROUTE_TO, team(sending(lambda nodes: nodes[:10]))),
        "de-duplicated, then at most eight": (
            ROUTE_TO,
            team(sending(lambda nodes: list(dict.fromkeys(nodes))[:8])),
        ),
        "five per route_to call": (ROUTE_TO, team(per_call_cap)),
        "only the lab's node names": (
            ROUTE_TO,
            team(sending(lambda nodes: [n for n in nodes if n in LAB_NODES])),
        ),
        "lower-cased names": (ROUTE_TO, team(sending(lambda nodes: [n.lower() for n in nodes]))),
        "upper-cased names": (ROUTE_TO, team(sending(lambda nodes: [n.upper() for n in nodes]))),
        "typed-in nodes": (ROUTE_TO, team(sending(lambda nodes: ["A", "B", "B", "C"]))),
        "string goto": (
            ROUTE_TO,
            team(
                lambda s: (
                    Command(
                        graph=Command.PARENT, goto=this_turn(s)[1][0], update={"messages": this_turn(s)[0]}
                    )
                    if this_turn(s)[1]
                    else {}
                )
            ),
        ),  # fmt: skip
        "writes visited": (ROUTE_TO, team(writes_visited)),
        "drops the lookup's answer": (
            ROUTE_TO,
            team(
                lambda s: (
                    Command(
                        graph=Command.PARENT,
                        goto=this_turn(s)[1],
                        update={"messages": [m for m in this_turn(s)[0] if m.name == "route_to"]},
                    )
                    if this_turn(s)[1]
                    else {}
                )
            ),
        ),  # fmt: skip
    }
    expected = {
        "at most four Sends": cap,
        "at most ten Sends": cap,
        "de-duplicated, then at most eight": cap,
        "five per route_to call": ("all 16 parent nodes", "is there a cap"),
        "only the lab's node names": ("all 16 parent nodes", "never ran"),
        "lower-cased names": ("Sends to unknown nodes", "the parent has no node of those names"),
        "upper-cased names": ("Sends to unknown nodes", "the parent has no node of those names"),
        "typed-in nodes": ("never type them in",),
        "string goto": ("a string `goto` reaches one node",),
        "writes visited": ("writing `visited` is not a hand-off",),
        "drops the lookup's answer": ("tool calls left unanswered", "(lookup_weather)"),
    }
    for seed in SEEDS:
        results = verdicts(lambda pair, seed=seed: lab06.check_hand_off(*pair, seed=seed), answers)
        assert_verdicts(results, expected)
        assert "all 16 parent nodes" in results["at most four Sends"]
        # the cap's verdict counts the node runs that really happened, not a per-call k
        assert "only 4 node run(s)" in results["at most four Sends"], results["at most four Sends"]
        assert "only 10 node run(s)" in results["at most ten Sends"], results["at most ten Sends"]
        assert "only 8 node run(s)" in results["de-duplicated, then at most eight"]


def hand_off_if(position):
    """A hand-off node that hands off only when the call at `position` of the turn is a route_to."""

    def hand_off(state):
        asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        if asked.tool_calls[position]["name"] != "route_to":
            return {}
        answers, nodes = this_turn(state)
        return Command(
            graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": answers}
        )

    return hand_off


def test_a_hand_off_that_looks_at_one_position_of_the_turn_is_refused_on_every_draw():
    answers = {
        "hands off only when route_to comes first": (ROUTE_TO, team(hand_off_if(0))),
        "hands off only when route_to comes last": (ROUTE_TO, team(hand_off_if(-1))),
    }
    expected = {
        "hands off only when route_to comes first": (", then a hand-off", "no parent node ran"),
        "hands off only when route_to comes last": ("a hand-off, then a lookup", "no parent node ran"),
    }
    for seed in range(10):  # a pass on any seed fails the test
        results = verdicts(lambda pair, seed=seed: lab06.check_hand_off(*pair, seed=seed), answers)
        assert_verdicts(results, expected)


def test_every_draw_plays_a_lookup_before_a_hand_off_and_one_after():
    for seed in range(200):
        scenario = lab06.draw_scenario(random.Random(seed))
        turns = [[c["name"] for c in turn] for _, case in scenario.cases for turn in case]
        mixed = [names for names in turns if "route_to" in names and "lookup_weather" in names]
        assert any(names.index("lookup_weather") < names.index("route_to") for names in mixed), turns
        assert any(names.index("lookup_weather") > names.index("route_to") for names in mixed), turns


def parent_level_team(tools):  # no subgraph, no Command.PARENT: a node function of the parent's own
    by_name = {t.name: t for t in tools}

    def team_node(state):
        asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        answers = [by_name[c["name"]].invoke(c) for c in asked.tool_calls]
        nodes = [n for c in asked.tool_calls if c["name"] == "route_to" for n in c["args"]["nodes"]]
        if not nodes:
            return {"messages": answers}
        return Command(goto=[Send(n, None) for n in nodes], update={"messages": answers})

    return team_node


def test_a_node_function_instead_of_a_subgraph_is_refused():
    for seed in range(3):
        try:
            lab06.check_hand_off(ROUTE_TO, parent_level_team, seed=seed)
        except CheckFailed as verdict:
            message = str(verdict)
        else:
            raise AssertionError("a node function without Command.PARENT passed")
        assert "build_team did not return a compiled subgraph" in message, message
        assert "a node function, not a subgraph" in message and "Command.PARENT" in message, message


def test_every_draw_has_a_hand_off_to_sixteen_nodes_that_ends_with_a_node_asked_for_once():
    for seed in range(200):
        scenario = lab06.draw_scenario(random.Random(seed))
        assert len(set(scenario.nodes)) == 16 and set(lab06.NODES) <= set(scenario.nodes)
        labels = [label for label, _ in scenario.cases]
        assert labels[1] == "a hand-off to all 16 parent nodes" and len(labels) == 5
        (every,) = scenario.cases[1][1]
        routes = [c["args"]["nodes"] for c in every if c["name"] == "route_to"]
        requests = [n for nodes in routes for n in nodes]
        assert set(routes[-1]) == set(scenario.nodes) and requests.count(requests[-1]) == 1
        assert all(n != n.lower() and n != n.upper() for n in scenario.nodes[4:])


def test_a_shrunk_node_list_does_not_blame_the_learner(monkeypatch):
    monkeypatch.setattr(lab06, "NODES", ("A",))
    for seed in range(2):
        assert "every asked-for parent node ran" in lab06.check_hand_off(
            ROUTE_TO, SOL["build_team"], seed=seed
        )


def test_a_failure_of_the_courses_parent_graph_is_said_to_be_the_courses(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("the course's graph is broken")

    monkeypatch.setattr(lab06, "build_parent", broken)
    try:
        lab06.check_hand_off(ROUTE_TO, SOL["build_team"], seed=0)
    except CheckFailed as verdict:
        message = str(verdict)
    else:
        raise AssertionError("a broken parent graph passed")
    assert "a bug in the course's check, not in your code" in message
    assert "ValueError: the course's graph is broken" in message and "Fix that line" not in message


def test_turns_and_nodes_are_immutable():
    assert type(lab06.NODES) is tuple and type(lab06.MORE_NODES) is tuple
    assert all(type(calls) is tuple for calls in lab06.TURNS.values())
    try:
        lab06.TURNS["x"] = ()  # type: ignore[index]
    except TypeError:
        pass
    else:
        raise AssertionError("TURNS can be changed")
