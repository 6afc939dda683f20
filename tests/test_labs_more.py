"""Labs 05, 06 and 08 as a learner meets them: correct alternatives accepted, the wrong answers real
beginners write (and the tricks of one who wants past the check) rejected with a message naming the
mistake, and the faults — raises, returns None, hangs sync and async, wrong signature, prints a lot,
check run twice or before defining — turned into feedback."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import types
from collections import OrderedDict
from typing import Annotated

import nbformat
import pytest
from lab_checks import accepted, rejected
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Send, interrupt

from helpers.labs import NAMES, SOLUTIONS, CheckFailed, lab05, lab06, lab08, solution_namespace, solution_text

# == lab 05 =============================================================================================
SOL05 = solution_namespace("05")
SHAPES, CONTENTS = SOL05["SHAPES"], SOL05["CONTENTS"]


@pytest.mark.parametrize(
    "variant",
    [
        {
            "A": "[ToolMessage,ToolMessage]",
            "D": '[ Command( goto = "next" ), { "messages" : [ ToolMessage ] } ]',
        },
        {  # keyword order, Command.PARENT, Send(node=..., arg=None)
            "F": "[Command(goto=[Send(node='A', arg=None), Send('B', None), Send('B'), Send(node='C')], "
            "graph=Command.PARENT)]"
        },
        {  # Python objects instead of a string; class names as strings
            "A": [ToolMessage, ToolMessage],
            "B": {"messages": ["ToolMessage", "ToolMessage"]},
            "C": "{'messages': [ToolMessage(...), ToolMessage(...)]}",
        },
        {"F": "[Command(graph='__parent__', goto=[Send('A'), Send('B'), Send('B'), Send('C')])]"},
    ],
    ids=["spaces-and-quotes", "keyword-order-and-parent-spelling", "python-objects", "graph-as-string"],
)
def test_lab05_q1_accepts_every_spelling_of_the_right_shapes(variant, capsys):
    accepted(lab05.q1, {"SHAPES": {**SHAPES, **variant}}, capsys)


@pytest.mark.parametrize(
    ("variant", "phrases"),
    [
        ({"B": "[ToolMessage, ToolMessage]"}, ["its own input kind", "✘ B", "✔ A"]),
        (
            {"D": "{'messages': [ToolMessage, ToolMessage]}"},
            ["rule two (lesson 06", "✘ D", "lesson 06 § “1. Rule two: a Command makes the output a list”"],
        ),
        (
            {"F": "[Command(graph=PARENT, update={'messages': [ToolMessage]}, goto=[Send('A'), Send('B')])]"},
            ["updates DROPPED", "a LIST of Sends", "a bare Send or a tuple of Sends would be kept",
             "lesson 06 § “4. Command.PARENT with Send: merged into one Command”"],
        ),
        ({"F": "[Command(graph=PARENT, goto=[Send('A'), Send('B'), Send('C')])]"}, ["no de-duplication"]),
        ({"E": "[Command(update=[ToolMessage]), {'messages': [ToolMessage]}]"}, ["rule two with list input"]),
        ({"A": "{'messages': [ToolMessage, ToolMessage]}", "C": "[ToolMessage, ToolMessage]"}, ["2 of 6"]),
        (
            {"A": "", "F": None},
            ["'' (your prediction)", "None (your prediction)", "always returns something"],
        ),
    ],
    ids=[
        "toolcalls-as-list",
        "rule-two-forgotten",
        "parent-update-kept",
        "sends-deduplicated",
        "e-as-dict",
        "rule-one-swapped",
        "empty-and-none-are-answers",
    ],
)
def test_lab05_q1_explains_each_wrong_prediction(variant, phrases):
    message = rejected(lab05.q1, {"SHAPES": {**SHAPES, **variant}}, *phrases)
    assert "still to write" not in message
    assert message.count("✘") == sum(1 for k in variant)


def test_lab05_q1_feedback_instead_of_crashes_for_keys_types_and_placeholders():
    rejected(
        lab05.q1,
        {"SHAPES": {1: "x", **{k: "?" for k in "ABCDE"}}},
        "unexpected ['1']",
        "missing ['F']",
        "not numbers",
    )
    rejected(lab05.q1, {"SHAPES": dict(SHAPES, G="[ToolMessage]")}, "unexpected [\"'G'\"]")
    rejected(lab05.q1, {"SHAPES": list(SHAPES.values())}, "must be a dict", "a list")
    rejected(lab05.q1, {"SHAPES": None}, "must be a dict", "NoneType")
    message = rejected(
        lab05.q1, {"SHAPES": dict(SHAPES, C="?", E=" ? ")}, "2 prediction(s) still to write: C, E"
    )
    assert "✘" not in message  # an untouched stub is not graded as wrong
    rejected(lab05.q1, {"SHAPES": dict.fromkeys(lab05.CASES, "?")}, "6 prediction(s) still to write")


@pytest.mark.parametrize(
    "variant",
    [
        {"forecast": '{"city": "Paris", "temp": "25 \u00b0C"}', "count_sights": str(7)},
        {
            "forecast": json.dumps({"city": "Paris", "temp": "25 °C"}, ensure_ascii=False),
            "reserve": json.dumps(None),
        },
        {"cities": json.dumps(["Versailles", "Reims"])},
    ],
    ids=["escapes-in-source", "computed-with-json-dumps", "list-via-json"],
)
def test_lab05_q2_accepts_the_exact_contents_however_written(variant, capsys):
    accepted(lab05.q2, {"CONTENTS": {**CONTENTS, **variant}}, capsys)


@pytest.mark.parametrize(
    "mapping",
    [OrderedDict(reversed(list(CONTENTS.items()))), types.MappingProxyType(CONTENTS)],
    ids=["other-key-order", "a-read-only-mapping"],
)
def test_lab05_q2_accepts_any_mapping(mapping, capsys):
    accepted(lab05.q2, {"CONTENTS": mapping}, capsys)


@pytest.mark.parametrize(
    ("variant", "phrases"),
    [
        ({"forecast": "{'city': 'Paris', 'temp': '25 °C'}"}, ["json.dumps", "double quotes"]),
        ({"forecast": '{"city": "Paris", "temp": "25 \\u00b0C"}'}, ["ensure_ascii=False"]),
        ({"reserve": "None"}, ["'null'"]),
        ({"reserve": ""}, ["'null', not 'None' and not ''"]),
        ({"reserve": None}, ["you wrote the NoneType None", "always a str"]),
        ({"count_sights": 7}, ["you wrote the int 7", "always a str"]),
        ({"cities": "Versailles, Reims"}, ["not a list of content blocks"]),
        ({"cities": "['Versailles', 'Reims']"}, ["json.dumps", "langchain-core keeps a list of plain strings",
                                                 "ToolNode's own step"]),
    ],
    ids=[
        "python-repr",
        "ascii-escaped",
        "none-string",
        "empty-string",
        "none-value",
        "int-value",
        "joined-list",
        "list-repr",
    ],
)
def test_lab05_q2_explains_each_wrong_content(variant, phrases):
    message = rejected(lab05.q2, {"CONTENTS": {**CONTENTS, **variant}}, *phrases)
    assert message.count("✘") == len(variant) and message.count("✔") == 4 - len(variant)


def test_lab05_hints_name_who_encodes_what_and_only_a_list_of_sends_merges():
    """q2's second hint: langchain-core JSON-encodes a dict, an int or None; a list of plain strings is
    kept by langchain-core and JSON-encoded by ToolNode. q1's: only a goto that is a list of Sends."""
    content_hint = lab05.q2.hints[1]
    assert "anything that is not a str" not in content_hint
    assert "langchain-core JSON-encodes a dict, an int or None" in content_hint
    kept_then_encoded = "A list of plain strings it keeps as a list; ToolNode's own step then JSON-encodes it"
    assert kept_then_encoded in content_hint
    shape_hint = lab05.q1.hints[1]
    assert "all-Send" not in shape_hint and "goto is a list of Sends" in shape_hint
    assert "lesson 06's rules" in shape_hint


def test_lab05_cases_d_to_f_link_the_lesson_that_teaches_their_rules():
    assert set(lab05.WHY) | set(lab05.WHY_LATER) == set(lab05.CASES)
    assert set(lab05.WHY_LATER) == {"D", "E", "F"}
    assert "all Sends" not in lab05.WHY_LATER["F"][0] and "LIST of Sends" in lab05.WHY_LATER["F"][0]


def test_lab05_checks_before_defining_twice_and_after_fixing(capsys):
    rejected(lab05.q1, {}, "`SHAPES` is not defined", "Run the exercise cell")
    rejected(lab05.q2, {"CONTENTS": dict(CONTENTS, reserve="None")}, "'null'")
    accepted(lab05.q2, {"CONTENTS": CONTENTS}, capsys)
    accepted(lab05.q2, {"CONTENTS": CONTENTS}, capsys)  # twice: the same verdict
    assert lab05.q2.passed


# == lab 06 =============================================================================================
SOL06 = solution_namespace("06")
ROUTE_TO = SOL06["route_to"]


def answers_and_nodes(state) -> tuple[list, list[str]]:
    asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
    ids = {c["id"] for c in asked.tool_calls}
    answers = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id in ids]
    return answers, [n for c in asked.tool_calls if c["name"] == "route_to" for n in c["args"]["nodes"]]


def team(hand_off=None):
    """`build_team` with `tools → hand_off` (or the ToolNode alone)."""

    def build_team(tools):
        graph = StateGraph(lab06.ParentState)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "tools")
        if hand_off is not None:
            graph.add_node("hand_off", hand_off)
            graph.add_edge("tools", "hand_off")
        return graph.compile()

    return build_team


def goto_names(state):  # B asked for twice runs once: accepted, the lab says so
    answers, nodes = answers_and_nodes(state)
    if not nodes:
        return {}
    return Command(graph=Command.PARENT, goto=nodes, update={"messages": answers})


class HandOff:  # a class instead of a function, Sends de-duplicated, the state passed on
    def __call__(self, state):
        answers, nodes = answers_and_nodes(state)
        if not nodes:
            return {"messages": []}
        return Command(
            graph=Command.PARENT,
            goto=[Send(n, state) for n in dict.fromkeys(nodes)],
            update={"messages": answers},
        )


async def async_hand_off(state):  # an async node
    answers, nodes = answers_and_nodes(state)
    return (
        Command(graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": answers})
        if nodes
        else {}
    )


def conditional_team(tools):  # hand off only when route_to was called; else end right after the tools
    def routed(state):
        return "hand_off" if answers_and_nodes(state)[1] else END

    graph = StateGraph(lab06.ParentState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_node("hand_off", goto_names)
    graph.add_edge(START, "tools")
    graph.add_conditional_edges("tools", routed, ["hand_off", END])
    return graph.compile()


def plain_route_to(nodes: list[str]) -> str:
    """Ask the parent graph to run these nodes."""
    return f"ok, {nodes}"


plain_route_to.__name__ = "route_to"


@pytest.mark.parametrize(
    ("route_to", "build_team"),
    [
        (ROUTE_TO, SOL06["build_team"]),
        (ROUTE_TO, team(goto_names)),
        (StructuredTool.from_function(plain_route_to), team(HandOff())),
        (plain_route_to, team(async_hand_off)),
        (ROUTE_TO, conditional_team),
    ],
    ids=[
        "solution",
        "goto-names-b-once",
        "class-node-dedup-sends",
        "plain-function-async-node",
        "conditional-edge",
    ],
)
def test_lab06_accepts_every_correct_hand_off(route_to, build_team, capsys):
    accepted(lab06.q1, {"route_to": route_to, "build_team": build_team}, capsys)


def writes_visited(state):  # the trick: claim the nodes ran, never hand off
    return {"visited": answers_and_nodes(state)[1]}


def no_goto(state):  # a Command.PARENT with no goto (and `visited` written to look right)
    answers, nodes = answers_and_nodes(state)
    return Command(graph=Command.PARENT, update={"messages": answers, "visited": nodes}) if nodes else {}


def no_goto_quiet(state):
    answers, nodes = answers_and_nodes(state)
    return Command(graph=Command.PARENT, update={"messages": answers}) if nodes else {}


def empty_goto(state):  # a node's goto=[]: only the update arrives, no node runs
    answers, nodes = answers_and_nodes(state)
    return Command(graph=Command.PARENT, goto=[], update={"messages": answers}) if nodes else {}


def string_goto(state):
    answers, nodes = answers_and_nodes(state)
    return Command(graph=Command.PARENT, goto=nodes[0], update={"messages": answers}) if nodes else {}


def first_call_only(state):
    asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
    answers, _ = answers_and_nodes(state)
    first = next((c for c in asked.tool_calls if c["name"] == "route_to"), None)
    if first is None:
        return {}
    return Command(
        graph=Command.PARENT,
        goto=[Send(n, None) for n in first["args"]["nodes"]],
        update={"messages": answers},
    )


def hard_coded(state):
    answers, nodes = answers_and_nodes(state)
    goto = [Send(n, None) for n in ["A", "B", "B", "C"]]
    return Command(graph=Command.PARENT, goto=goto, update={"messages": answers}) if nodes else {}


def first_ai_message(state):  # next(...) over the history, not reversed: the first turn's calls forever
    asked = next(m for m in state["messages"] if isinstance(m, AIMessage))
    nodes = [n for c in asked.tool_calls if c["name"] == "route_to" for n in c["args"]["nodes"]]
    answers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    return (
        Command(graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": answers})
        if nodes
        else {}
    )


def only_route_answers(state):  # forwards route_to's answers, drops the lookup's
    answers, nodes = answers_and_nodes(state)
    answers = [m for m in answers if m.name == "route_to"]
    return (
        Command(graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": answers})
        if nodes
        else {}
    )


@tool("route_to")
def route_from_the_tool(nodes: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Ask the parent graph to run these nodes."""
    answer = ToolMessage("handing over", tool_call_id=tool_call_id)
    return Command(graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": [answer]})


@tool("route_to")
def route_nowhere_from_the_tool(
    nodes: list[str], tool_call_id: Annotated[str, InjectedToolCallId]
) -> Command:
    """Ask the parent graph to run these nodes (but name none: goto=[])."""
    answer = ToolMessage("handing over", tool_call_id=tool_call_id)
    return Command(graph=Command.PARENT, goto=[], update={"messages": [answer]})


@pytest.mark.parametrize(
    ("route_to", "build_team", "phrases"),
    [
        (
            ROUTE_TO,
            team(writes_visited),
            ["writing `visited` is not a hand-off", "parent nodes that ran: none"],
        ),
        (ROUTE_TO, team(no_goto), ["but those nodes never ran"]),
        (ROUTE_TO, team(no_goto_quiet), ["without `goto`", "only updates the parent's state"]),
        (ROUTE_TO, team(string_goto), ["a string `goto` reaches one node"]),
        (ROUTE_TO, team(first_call_only), ["only the first route_to call's nodes ran"]),
        (ROUTE_TO, team(hard_coded), ["never type them in"]),
        (
            ROUTE_TO,
            team(first_ai_message),
            ["a second turn in the same thread", "the nodes of the previous turn ran", "LAST AIMessage"],
        ),
        (ROUTE_TO, team(only_route_answers), ["tool calls left unanswered", "(lookup_weather)"]),
        (
            route_from_the_tool,
            team(),
            ["tool calls left unanswered", "(route_to)", "a list of Sends, ToolNode's merge drops even that",
             "hand off once from a node of your own"],
        ),
        (
            ROUTE_TO,
            team(empty_goto),
            ["no parent node ran", "(or with `goto=[]`) only updates the parent's state"],
        ),
        (
            route_nowhere_from_the_tool,
            team(),
            ["no parent node ran", "from a tool, `goto=[]` is even merged by ToolNode", "its update is lost"],
        ),
    ],
    ids=[
        "writes-visited",
        "no-goto-claims-visited",
        "no-goto",
        "string-goto",
        "first-call-only",
        "hard-coded",
        "first-ai-message",
        "drops-the-lookup",
        "parent-command-from-the-tool",
        "empty-goto-from-a-node",
        "empty-goto-from-the-tool",
    ],
)
def test_lab06_rejects_what_does_not_really_hand_off(route_to, build_team, phrases):
    message = rejected(lab06.q1, {"route_to": route_to, "build_team": build_team}, *phrases)
    assert "✘" in message and "of 5 cases failed" in message


def test_lab06_texts_say_only_a_list_of_sends_from_a_tool_loses_its_update():
    """The lab's own words: the merge takes a tool's goto that is a list of Sends (or []), not any
    PARENT + Send Command, and the unused, stale heading constant is gone."""
    import inspect

    source = inspect.getsource(lab06)
    assert "merge of PARENT + Send Commands drops" not in source
    assert not hasattr(lab06, "REAL_PARENT")
    solution = nbformat.read(SOLUTIONS / "06_hand_off_to_parent.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in solution.cells if cell.cell_type == "markdown")
    assert "moves control, never data" not in text and "drops every update" not in text
    assert "Lesson 06 (§4 and §5)" in text


def test_lab06_hard_coding_fails_whatever_the_random_draw():
    for seed in range(3):
        with pytest.raises(CheckFailed, match="never type them in"):
            lab06.check_hand_off(ROUTE_TO, team(hard_coded), seed=seed)


def test_lab06_refuses_the_wrong_tool_and_the_wrong_signature():
    hand_over = StructuredTool.from_function(plain_route_to, name="hand_over")
    rejected(lab06.q1, {"route_to": hand_over, "build_team": SOL06["build_team"]}, "a tool named route_to")
    rejected(
        lab06.q1, {"route_to": ROUTE_TO, "build_team": lambda: None}, "must take 1 argument", "build_team()"
    )
    rejected(lab06.q1, {"route_to": ROUTE_TO, "build_team": "team"}, "must be a function")


def test_lab06_faults_become_feedback(monkeypatch, capsys):
    monkeypatch.setattr(lab06, "LIMIT", 0.4)

    def raising(tools):
        return {"tools": tools}["team"]

    rejected(
        lab06.q1,
        {"route_to": ROUTE_TO, "build_team": raising},
        "your code raised KeyError: 'team'",
        "`raising`",
    )
    rejected(
        lab06.q1,
        {"route_to": ROUTE_TO, "build_team": lambda tools: None},
        "build_team returned None",
        "return team.compile()",
    )
    never = threading.Event()

    def waits(state):
        never.wait()

    try:
        message = rejected(
            lab06.q1,
            {"route_to": ROUTE_TO, "build_team": team(waits)},
            "did not return within 0.4 s",
            "not tried",
        )
    finally:
        never.set()  # the worker the check had to leave behind
    assert message.count("✘") == 5 and message.count("(as above)") == 3  # one hang costs one time limit

    async def waits_async(state):
        await asyncio.Event().wait()

    rejected(
        lab06.q1,
        {"route_to": ROUTE_TO, "build_team": team(waits_async)},
        "did not return within 0.4 s",
        "The check cancelled it",
    )

    monkeypatch.setattr(lab06, "LIMIT", None)  # the course's own limit for the runs that must pass

    def chatty(state):
        for i in range(500):
            print("state is", i)
        return goto_names(state)

    out = accepted(lab06.q1, {"route_to": ROUTE_TO, "build_team": team(chatty)}, capsys)
    assert "more line(s) not shown" in out and len(out.splitlines()) < 20
    rejected(lab06.q1, {"route_to": ROUTE_TO}, "`build_team` is not defined")
    accepted(lab06.q1, SOL06, capsys)  # the kernel is still usable, and twice gives the same verdict
    accepted(lab06.q1, SOL06, capsys)


def test_lab06_says_whether_b_runs_twice():
    lab = nbformat.read(SOLUTIONS / f"{NAMES['06']}.ipynb", as_version=4)
    text = "\n".join(c.source for c in lab.cells if c.cell_type == "markdown")
    assert "once or twice" in text
    assert "Reach one node only: `A`, not `B`, `B`, `C`." not in text


# == lab 08 =============================================================================================
SOL08 = solution_namespace("08")


def risky_calls(state, tools):
    by_name = {t.name: t for t in tools}
    return [
        c
        for c in state["messages"][-1].tool_calls
        if (by_name[c["name"]].metadata or {}).get("requires_approval")
    ]


def refusal(call):
    return ToolMessage("Refused: not approved.", name=call["name"], tool_call_id=call["id"], status="error")


def loop(model, tools, checkpointer, *, approve=None, state=MessagesState, **tool_node_options):
    builder = StateGraph(state)
    builder.add_node("llm", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode(tools, **tool_node_options))
    builder.add_edge(START, "llm")
    if approve is None:
        builder.add_conditional_edges("llm", tools_condition)
    else:
        builder.add_node("approve", approve)
        builder.add_conditional_edges("llm", tools_condition, {"tools": "approve", "__end__": END})
        builder.add_edge("approve", "tools")
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


def guards(allowed):
    """wrap/awrap that refuse a dangerous call unless `allowed(request)`."""

    def refuse(request):
        tool_ = request.tool
        if tool_ is not None and (tool_.metadata or {}).get("requires_approval") and not allowed(request):
            return refusal(request.tool_call)
        return None

    def wrap(request, execute):
        return refuse(request) or execute(request)

    async def awrap(request, execute):
        return refuse(request) or await execute(request)

    return wrap, awrap


class IdsState(MessagesState):
    approved: list[str]


class FlagState(MessagesState):
    approved: bool


class DictState(MessagesState):
    decisions: dict


def solution_edited(old: str, new: str) -> dict:
    source = solution_text("08", "q1")
    assert old in source, old
    namespace = dict(SOL08)
    exec(compile(source.replace(old, new), "<edited solution>", "exec"), namespace)  # noqa: S102
    return namespace


class Guard:  # a class with both hooks instead of two functions
    def __init__(self, approved_key):
        self.key = approved_key

    def refuses(self, request):
        dangerous = request.tool is not None and (request.tool.metadata or {}).get("requires_approval")
        return dangerous and request.tool_call["id"] not in request.state.get(self.key, {})

    def __call__(self, request, execute):
        return refusal(request.tool_call) if self.refuses(request) else execute(request)

    async def asynchronous(self, request, execute):
        return refusal(request.tool_call) if self.refuses(request) else await execute(request)


def with_decisions(model, tools, checkpointer):  # one interrupt per risky call, a dict of decisions
    def approve(state):
        decisions = {
            c["id"]: interrupt({"approve?": c["name"], "args": c["args"]}) == "yes"
            for c in risky_calls(state, tools)
        }
        return {"decisions": {i: ok for i, ok in decisions.items() if ok}}

    guard = Guard("decisions")
    return loop(
        model,
        tools,
        checkpointer,
        approve=approve,
        state=DictState,
        wrap_tool_call=guard,
        awrap_tool_call=guard.asynchronous,
    )


def routing_approve(model, tools, checkpointer):  # the approval node routes with Command(goto=...)
    def approve(state):
        risky = risky_calls(state, tools)
        ok = risky and interrupt([c["args"] for c in risky]) == "yes"
        return Command(goto="tools", update={"approved": [c["id"] for c in risky] if ok else []})

    wrap, awrap = guards(lambda r: r.tool_call["id"] in r.state.get("approved", []))
    builder = StateGraph(IdsState)
    builder.add_node("llm", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("approve", approve, destinations=("tools",))
    builder.add_node("tools", ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition, {"tools": "approve", "__end__": END})
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.parametrize(
    "namespace",
    [
        SOL08,
        {"build_graph": with_decisions},
        {"build_graph": routing_approve},
        solution_edited(
            'return {"approved": [c["id"] for c in risky] if answer == "yes" else []}',
            'return {"approved": [c["id"] for c in risky] if str(answer).strip().lower() == "yes" else []}',
        ),
    ],
    ids=["solution", "class-guard-dict-of-decisions", "approval-node-routes-with-command", "lenient-yes"],
)
def test_lab08_accepts_every_approval_by_call_id(namespace, capsys):
    accepted(lab08.q1, namespace, capsys)


def boolean_approval(model, tools, checkpointer):  # a yes/no flag, reset on every risky turn
    def approve(state):
        risky = risky_calls(state, tools)
        if not risky:
            return {}
        return {"approved": interrupt("approve?") == "yes"}

    wrap, awrap = guards(lambda r: r.state.get("approved") is True)
    return loop(
        model,
        tools,
        checkpointer,
        approve=approve,
        state=FlagState,
        wrap_tool_call=wrap,
        awrap_tool_call=awrap,
    )


def asked_once(model, tools, checkpointer):  # a flag set once and never asked again
    def approve(state):
        if state.get("approved") or not risky_calls(state, tools):
            return {}
        return {"approved": interrupt("approve?") == "yes"}

    wrap, awrap = guards(lambda r: r.state.get("approved") is True)
    return loop(
        model,
        tools,
        checkpointer,
        approve=approve,
        state=FlagState,
        wrap_tool_call=wrap,
        awrap_tool_call=awrap,
    )


def refuses_everything_async(model, tools, checkpointer):
    wrap, _ = guards(lambda r: r.tool_call["id"] in r.state.get("approved", []))

    async def awrap(request, execute):  # "safe": never runs a dangerous call
        if (request.tool.metadata or {}).get("requires_approval"):
            return refusal(request.tool_call)
        return await execute(request)

    def approve(state):
        risky = risky_calls(state, tools)
        return {"approved": [c["id"] for c in risky] if risky and interrupt("ok?") == "yes" else []}

    return loop(
        model,
        tools,
        checkpointer,
        approve=approve,
        state=IdsState,
        wrap_tool_call=wrap,
        awrap_tool_call=awrap,
    )


def truthy_answer(model, tools, checkpointer):  # `if answer:` approves "no" too
    return solution_edited('if answer == "yes" else []', "if answer else []")["build_graph"](
        model, tools, checkpointer
    )


def rewrites_the_message(model, tools, checkpointer):  # refuses outside the ToolNode only
    def approve(state):
        risky = risky_calls(state, tools)
        if not risky or interrupt("approve?") == "yes":
            return {}
        last = state["messages"][-1]
        kept = [c for c in last.tool_calls if c not in risky]
        return {"messages": [last.model_copy(update={"tool_calls": kept}), *[refusal(c) for c in risky]]}

    return loop(model, tools, checkpointer, approve=approve)


def interrupt_in_the_wrapper(model, tools, checkpointer):  # lesson 08 §3's interceptor
    def ask(request):
        if (request.tool.metadata or {}).get("requires_approval") and interrupt("approve?") != "yes":
            return refusal(request.tool_call)
        return None

    def wrap(request, execute):
        return ask(request) or execute(request)

    async def awrap(request, execute):
        return ask(request) or await execute(request)

    return loop(model, tools, checkpointer, wrap_tool_call=wrap, awrap_tool_call=awrap)


def async_only(model, tools, checkpointer):
    _, awrap = guards(lambda r: r.tool_call["id"] in r.state.get("approved", []))
    return solution_edited("wrap_tool_call=guard, awrap_tool_call=aguard", "awrap_tool_call=aguard")[
        "build_graph"
    ](model, tools, checkpointer)


BY_NAME = solution_edited(
    'return bool((tool.metadata or {}).get("requires_approval"))', 'return tool.name == "delete_file"'
)


@pytest.mark.parametrize(
    ("namespace", "phrases"),
    [
        ({"build_graph": boolean_approval}, ["the ToolNode alone", "['approved'] is True", "a yes/no flag"]),
        (
            {"build_graph": asked_once},
            [
                "second dangerous turn",
                "turn 2: the file was deleted before anyone approved",
                "approval is per call",
            ],
        ),
        (
            {"build_graph": refuses_everything_async},
            ["approve, async ainvoke", "refused an approved call", "`awrap_tool_call`"],
        ),
        ({"build_graph": truthy_answer}, ["did not follow the answer 'no'", "`if answer:` is true for 'no'"]),
        (
            {"build_graph": rewrites_the_message},
            ["your ToolNode ran a dangerous call nobody approved", "binding inside the ToolNode"],
        ),
        (
            {"build_graph": interrupt_in_the_wrapper},
            ["the email was sent 2 times", "re-runs the interrupted node"],
        ),
        (
            {"build_graph": async_only},
            ["reject, sync invoke", "did not follow the answer", "an `awrap_tool_call` alone is skipped"],
        ),
        (BY_NAME, ["a renamed dangerous tool", "keyed on the name 'delete_file'", "metadata"]),
        (
            {"build_graph": lambda m, t, c: loop(m, t, c)},
            ["deleted before anyone approved", "ask in a step before the ToolNode runs"],
        ),
    ],
    ids=[
        "boolean-approval",
        "asked-once-flag-forever",
        "async-guard-refuses-everything",
        "truthy-answer",
        "refuses-outside-the-tool-node",
        "interrupt-in-the-wrapper",
        "async-only-guard",
        "by-name",
        "no-guard",
    ],
)
def test_lab08_rejects_guards_that_can_be_bypassed_or_that_refuse_everything(namespace, phrases):
    rejected(lab08.q1, namespace, *phrases)


def test_lab08_faults_become_feedback_and_the_kernel_stays_usable(monkeypatch, capsys):
    monkeypatch.setattr(lab08, "LIMIT", 0.4)
    never = threading.Event()

    def waits_for_a_human(model, tools, checkpointer):  # an approval that waits on an event
        def approve(state):
            if risky_calls(state, tools):
                never.wait()
            return {}

        return loop(model, tools, checkpointer, approve=approve)

    try:
        message = rejected(
            lab08.q1,
            {"build_graph": waits_for_a_human},
            "did not return within 0.4 s",
            "your graph's invoke",
            "does it wait for something",
        )
    finally:
        never.set()
    assert message.count("✘") == 8 and message.count("(as above)") == 6  # the rest not tried

    def waits_async(model, tools, checkpointer):
        async def approve(state):
            if risky_calls(state, tools):
                await asyncio.Event().wait()
            return {}

        return loop(model, tools, checkpointer, approve=approve)

    rejected(lab08.q1, {"build_graph": waits_async}, "did not return within 0.4 s")

    def raising(model, tools, checkpointer):
        return loop(model, tools, checkpointer, approve=lambda state: state["approval"])

    rejected(lab08.q1, {"build_graph": raising}, "KeyError: 'approval'", "<lambda>")
    rejected(
        lab08.q1, {"build_graph": lambda model, tools, checkpointer: None}, "did not return a compiled graph"
    )
    rejected(
        lab08.q1,
        {"build_graph": lambda model, tools: None},
        "must take 3 arguments",
        "build_graph(model, tools)",
    )
    rejected(lab08.q1, {}, "`build_graph` is not defined")

    monkeypatch.setattr(lab08, "LIMIT", None)  # the course's own limit for the runs that must pass

    def chatty(model, tools, checkpointer):
        for i in range(300):
            print("building", i)
        return SOL08["build_graph"](model, tools, checkpointer)

    out = accepted(lab08.q1, {"build_graph": chatty}, capsys)
    assert "more line(s) not shown" in out
    accepted(lab08.q1, SOL08, capsys)  # usable after a hang, and twice the same verdict
    accepted(lab08.q1, SOL08, capsys)


# == findings of the second attack (answers from /tmp/attack-b) ===========================================
def test_cases_text_says_as_above_only_when_something_is_above():
    from helpers.labs import Cases

    cases = Cases("q1")
    cases.bad("first — the same mistake as above", expected="", observed="")
    cases.bad("second — the same mistake as above", expected="", observed="")
    cases.bad("third", expected="x", observed="y")
    cases.bad("fourth", expected="x", observed="y")
    text = cases.text()
    assert "  ✘ second — the same mistake as above\n" in text and "above (as above)" not in text
    assert "  ✘ fourth (as above)" in text


def test_a_langgraph_exception_is_named_as_langgraphs():
    from helpers.labs import describe_exception

    with pytest.raises(TypeError) as info:
        StateGraph(MessagesState).add_node("team", StateGraph(MessagesState))
    assert describe_exception(info.value).startswith("langgraph raised TypeError"), describe_exception(
        info.value
    )


def test_lab05_q1_accepts_python_objects_with_a_command_holding_classes(capsys):
    shapes = {  # the attacker's answer: a Command whose update holds the class itself
        "A": [ToolMessage, ToolMessage],
        "B": {"messages": [ToolMessage, ToolMessage]},
        "C": {"messages": [ToolMessage, ToolMessage]},
        "D": [Command(goto="next"), {"messages": [ToolMessage]}],
        "E": [Command(update=[ToolMessage]), [ToolMessage]],
        "F": [
            Command(
                graph=Command.PARENT,
                goto=[Send("A", None), Send("B", None), Send("B", None), Send("C", None)],
            )
        ],
    }
    accepted(lab05.q1, {"SHAPES": shapes}, capsys)


def test_lab05_q1_says_a_prediction_does_not_parse():
    message = rejected(
        lab05.q1, {"SHAPES": {**SHAPES, "A": "[ToolMessage x2]"}}, "does not parse as the notation"
    )
    assert "rule one" not in message


def test_lab05_q2_refuses_a_str_subclass_that_equals_everything():
    class Any_(str):  # noqa: N801 - the attacker's name
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    message = rejected(
        lab05.q2, {"CONTENTS": {k: Any_("x") for k in CONTENTS}}, "4 of 4 cases failed", "a subclass of str"
    )
    assert "✔" not in message


def lowercase_sends(state):  # the attacker's Send(node.lower(), None)
    answers, nodes = answers_and_nodes(state)
    goto = [Send(n.lower(), None) for n in nodes]
    return Command(graph=Command.PARENT, goto=goto, update={"messages": answers}) if nodes else {}


def test_lab06_names_the_parents_nodes_when_sends_go_to_unknown_ones():
    message = rejected(
        lab06.q1,
        {"route_to": ROUTE_TO, "build_team": team(lowercase_sends)},
        "its nodes are named A, B, C, D",
        "unknown nodes",
    )
    assert "your code printed" not in message and "Ignoring unknown node name" not in message
    assert "without `goto`" not in message


def test_lab06_an_uncompiled_team_is_told_to_compile():
    def uncompiled(tools):  # the attacker's `return team`
        graph = StateGraph(lab06.ParentState)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "tools")
        return graph

    message = rejected(lab06.q1, {"route_to": ROUTE_TO, "build_team": uncompiled}, "return team.compile()")
    assert "langgraph-prebuilt" not in message and "Expected a Runnable" not in message


def test_lab06_first_route_to_call_only_is_named_so_also_with_one_node():
    calls = [
        {"name": "route_to", "args": {"nodes": ["D"]}},
        {"name": "route_to", "args": {"nodes": ["A", "C"]}},
    ]
    observed, why = lab06._nodes_problem(["D"], calls, [], [])
    assert "only the first route_to call's nodes ran" in why and "string `goto`" not in why
    for seed in range(4):  # the attacker's answer, whatever the random draw
        with pytest.raises(CheckFailed) as info:
            lab06.check_hand_off(ROUTE_TO, team(first_call_only), seed=seed)
        assert "a string `goto` reaches one node" not in str(info.value)


def test_a_sync_hang_under_ainvoke_is_not_said_to_be_cancelled(monkeypatch):
    monkeypatch.setattr(lab06, "LIMIT", 0.4)
    never = threading.Event()

    def waits(state):  # a sync node: ainvoke runs it in a worker thread (asyncio_1) no cancel stops
        never.wait()

    try:
        message = rejected(
            lab06.q1,
            {"route_to": ROUTE_TO, "build_team": team(waits)},
            "cannot be stopped",
            "Kernel → Restart",
        )
    finally:
        never.set()
    assert "cancelled" not in message


def solution08_edited(*pairs: tuple[str, str]) -> dict:
    source = solution_text("08", "q1")
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    namespace = {**SOL08, "Command": Command}
    exec(compile(source, "<edited solution>", "exec"), namespace)  # noqa: S102
    return namespace


REFUSAL = (
    '            return ToolMessage("Refused: a human did not approve this call.", '
    'name=request.tool_call["name"],\n'
    '                               tool_call_id=request.tool_call["id"], status="error")'
)


@pytest.mark.parametrize(
    "namespace",
    [
        solution08_edited(
            (
                REFUSAL,
                '            return Command(update={"messages": [ToolMessage("Refused.", '
                'name=request.tool_call["name"],\n'
                '                               tool_call_id=request.tool_call["id"], status="error")]})',
            )
        ),
        solution08_edited(("awrap_tool_call=aguard", "")),
    ],
    ids=["refusal-as-a-command", "wrap-tool-call-only"],
)
def test_lab08_accepts_a_command_refusal_and_a_sync_guard_alone(namespace, capsys):
    accepted(lab08.q1, namespace, capsys)


def test_lab08_approval_by_file_fails_and_the_approved_turns_own_deletion_is_not_the_probes():
    """The probe hands the ToolNode the approved call again, for the same file, under a new id: a
    guard that approved the file runs it (the file is deleted once more). The solution, whose guard
    checks ids, is refused nothing, though that file was deleted by the approved turn itself (which a
    probe looking the file up in the deletions once read as its own call: about 1 check in 1,800)."""
    by_file = solution08_edited(
        (
            'return {"approved": [c["id"] for c in risky] if answer == "yes" else []}',
            'return {"approved": [c["args"]["path"] for c in risky] if answer == "yes" else []}',
        ),
        (
            'request.tool_call["id"] not in request.state.get("approved", [])',
            'request.tool_call["args"].get("path") not in request.state.get("approved", [])',
        ),
    )
    for seed in range(4):
        with pytest.raises(CheckFailed, match="holds the approved file") as info:
            lab08.check_guard(by_file["build_graph"], seed=seed)
        assert "again" in str(info.value)
        lab08._probe(SOL08["build_graph"], random.Random(seed))


def test_lab08_approval_by_position_always_fails():
    namespace = solution08_edited(  # the attacker's answer: approve the batch positions of the risky calls
        ("approved: list[str]", "approved: list[int]"),
        (
            'return {"approved": [c["id"] for c in risky] if answer == "yes" else []}',
            'return {"approved": [i for i, c in enumerate(calls) if c in risky] if answer == "yes" else []}',
        ),
        (
            'request.tool_call["id"] not in request.state.get("approved", [])',
            '[c["id"] for c in request.state["messages"][-1].tool_calls].index(request.tool_call["id"]) '
            'not in request.state.get("approved", [])',
        ),
    )
    for seed in range(6):
        with pytest.raises(CheckFailed, match="holds positions in the batch"):
            lab08.check_guard(namespace["build_graph"], seed=seed)


def test_lab08_text_recommends_one_guard_as_both_wrappers_though_the_check_accepts_a_sync_one_alone():
    """Lesson 08, 5.2: give both wrappers. The check accepts a sync guard alone (this lab's tools are
    sync), so the text recommends both and says why, without demanding them."""
    lab = nbformat.read(SOLUTIONS / f"{NAMES['08']}.ipynb", as_version=4)
    text = "\n".join(c.source for c in lab.cells if c.cell_type == "markdown") + " ".join(lab08.q1.hints)
    flat = " ".join(text.split())
    assert "one guard given as both `wrap_tool_call` and `awrap_tool_call`" in flat
    assert "A sync guard alone would pass this check only because these tools are sync" in flat
    assert "with **both**" not in text and "BOTH" not in text
    assert "never `awrap_tool_call` alone" in text


def test_lab08_turns_of_one_thread_delete_different_files():
    """Two turns that drew the same file would read turn 1's approved deletion as turn 2 running
    unapproved; the paths of one thread are drawn distinct."""
    import random

    for seed in range(3000):
        paths = lab08._distinct_paths(random.Random(seed), 3)
        assert len(set(paths)) == 3, (seed, paths)
