"""Contract tests for notebooks/06_command_and_parent.ipynb: rule two, Command validation,
Command.PARENT + Send merging, and what reaches a real parent graph.
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Literal, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.prebuilt import ToolNode, ToolRuntime, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel
from helpers.returns import SEED_CALLS, MessagesModel, output_shape
from helpers.seeds import SEED_000_GOTO_NEXT, SEED_000_PARENT_SEND
from helpers.source import excerpt

lesson = pytest.mark.lesson("06_command_and_parent")
RT = Runtime()


def call(name: str, call_id: str = "001", **args) -> ToolCall:
    return ToolCall(name=name, args=args or {"x": 1, "y": 2}, id=call_id, type="tool_call")


def as_dict(*calls: ToolCall) -> dict:
    return {"messages": [AIMessage("", tool_calls=list(calls))]}


def answer(text: str, call_id: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id=call_id)


@tool
def foo(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """A test tool foo."""
    return Command(update={"messages": [answer(f"foo({x}, {y})", tool_call_id)]}, goto="next")


@tool
def bar(x: int, y: int) -> str:
    """A test tool bar."""
    return f"bar({x}, {y})"


@tool
def foo_list(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Answers with a list update."""
    return Command(update=[answer(f"foo({x}, {y})", tool_call_id)])


def seed_inputs():
    messages = [AIMessage(content="", tool_calls=SEED_CALLS)]
    state = MessagesModel(messages=messages)
    return {"tool_calls": SEED_CALLS, "dict": {"messages": messages}, "state": state}


def printed(node: ToolNode) -> str:
    return "\n".join(f"input-{k}: {node.invoke(v, runtime=RT)}" for k, v in seed_inputs().items())


@lesson
def test_seed_000_goto_next_output_reproduces_exactly():
    assert printed(ToolNode([foo, bar])) == SEED_000_GOTO_NEXT


@lesson
def test_dict_update_with_list_input_is_an_error():
    with pytest.raises(ValueError, match="^Tools can provide a dict in Command.update only when using dict"):
        ToolNode([foo, bar]).invoke([AIMessage("", tool_calls=SEED_CALLS)], runtime=RT)


@lesson
def test_list_update_with_list_input_is_allowed():
    out = ToolNode([foo_list]).invoke([AIMessage("", tool_calls=[call("foo_list")])], runtime=RT)
    assert output_shape(out) == "[Command(update=[ToolMessage])]"


@lesson
@pytest.mark.parametrize("wrap", [as_dict, lambda c: [c]], ids=["dict", "tool_calls"])
def test_list_update_with_any_other_input_is_an_error(wrap):
    with pytest.raises(ValueError, match="^Tools can provide a list of messages in Command.update only"):
        ToolNode([foo_list]).invoke(wrap(call("foo_list")), runtime=RT)


@lesson
def test_one_command_makes_the_whole_output_a_list():
    plain = ToolNode([bar]).invoke(as_dict(call("bar", "002")), runtime=RT)
    mixed = ToolNode([foo, bar]).invoke(as_dict(call("foo"), call("bar", "002")), runtime=RT)
    assert output_shape(plain) == "{'messages': [ToolMessage]}"
    assert [output_shape(item) for item in mixed] == [
        "Command(update={'messages': [ToolMessage]}, goto='next')",
        "{'messages': [ToolMessage]}",
    ]


@lesson
def test_update_without_a_matching_tool_message_is_an_error():
    @tool
    def hard_coded(x: int, y: int) -> Command:
        """Answers a call id it guessed."""
        return Command(update={"messages": [answer("x", "001")]})

    with pytest.raises(ValueError, match="^Expected to have a matching ToolMessage in Command.update"):
        ToolNode([hard_coded]).invoke(as_dict(call("hard_coded", "call_7")), runtime=RT)


@lesson
def test_toolnode_names_the_matching_tool_message():
    [command] = ToolNode([foo]).invoke(as_dict(call("foo")), runtime=RT)
    assert command.update["messages"][0].name == "foo"


@tool
def foo_runtime(x: int, y: int, runtime: ToolRuntime) -> Command:
    """Reads its call id from the runtime."""
    return Command(update={"messages": [answer(f"foo({x}, {y})", runtime.tool_call_id)]})


@lesson
@pytest.mark.parametrize("the_tool", [foo, foo_runtime], ids=["InjectedToolCallId", "ToolRuntime"])
def test_injected_arguments_are_hidden_from_the_model(the_tool):
    assert set(the_tool.tool_call_schema.model_json_schema()["properties"]) == {"x", "y"}


@lesson
def test_tool_runtime_gets_the_call_id_but_warns_outside_a_graph():
    with pytest.warns(UserWarning, match="Pydantic serializer warnings"):
        [command] = ToolNode([foo_runtime]).invoke(as_dict(call("foo_runtime", "call_8")), runtime=RT)
    assert command.update["messages"][0].tool_call_id == "call_8"


@lesson
def test_tool_runtime_does_not_warn_inside_a_graph():
    class Chat(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    builder = StateGraph(Chat)
    builder.add_node("tools", ToolNode([foo_runtime]))
    builder.add_edge(START, "tools")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        final = builder.compile().invoke(as_dict(call("foo_runtime", "call_9")))
    assert final["messages"][-1].tool_call_id == "call_9"


@lesson
def test_goto_only_command_is_not_validated():
    @tool
    def jump(x: int, y: int) -> Command:
        """Only says where to go."""
        return Command(goto="summarise")

    assert ToolNode([jump]).invoke(as_dict(call("jump")), runtime=RT) == [Command(goto="summarise")]


@lesson
def test_a_list_of_commands_and_one_answer_is_flattened():
    @tool
    def note_and_answer(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> list:
        """Writes a note, then answers."""
        return [Command(update={"notes": ["n"]}), answer("noted", tool_call_id)]

    out = ToolNode([note_and_answer, bar]).invoke(
        as_dict(call("note_and_answer"), call("bar", "002")), runtime=RT
    )
    assert [output_shape(item) for item in out] == [
        "Command(update={'notes': [str]})",
        "{'messages': [ToolMessage]}",
        "{'messages': [ToolMessage]}",
    ]


@lesson
@pytest.mark.parametrize("answers", [0, 2])
def test_a_list_needs_exactly_one_answer(answers):
    @tool
    def many(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> list:
        """Answers `answers` times."""
        return [Command(goto="x")] + [answer("a", tool_call_id) for _ in range(answers)]

    expected = f"returned a list with {answers} messages bound to tool_call_id '001'"
    with pytest.raises(ValueError, match=expected):
        ToolNode([many]).invoke(as_dict(call("many")), runtime=RT)


@lesson
def test_an_answer_inside_a_commands_list_update_is_not_counted_with_a_message_list_input():
    """langgraph#8924: the count looks at ToolMessages in the list and in dict updates only."""
    @tool
    def answer_in_update(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> list:
        """Answers inside a Command's list update."""
        return [Command(goto="audit"), Command(update=[answer("noted", tool_call_id)])]

    with pytest.raises(ValueError, match="returned a list with 0 messages bound to tool_call_id '001'"):
        message = AIMessage("", tool_calls=[call("answer_in_update")])
        ToolNode([answer_in_update]).invoke([message], runtime=RT)


@lesson
def test_an_answer_as_a_toolmessage_in_the_list_is_counted_with_a_message_list_input():
    @tool
    def answer_in_list(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> list:
        """Answers with a ToolMessage in the list."""
        return [Command(goto="audit"), answer("noted", tool_call_id)]

    out = ToolNode([answer_in_list]).invoke([AIMessage("", tool_calls=[call("answer_in_list")])], runtime=RT)
    assert [output_shape(item) for item in out] == ["Command(goto='audit')", "[ToolMessage]"]


def parent_tool(name: str, goto, **extra):
    @tool(name)
    def route(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Sends the parent graph somewhere."""
        update = {"messages": [answer(f"{name}({x}, {y})", tool_call_id)], **extra}
        return Command(graph=Command.PARENT, goto=goto, update=update)

    return route


SENDS_AB = [Send("A", None), Send("B", None)]
SENDS_BC = [Send("B", None), Send("C", None)]


@lesson
def test_seed_000_parent_send_output_reproduces_exactly():
    node = ToolNode([parent_tool("foo", SENDS_AB), parent_tool("bar", SENDS_BC)])
    assert printed(node) == SEED_000_PARENT_SEND


@lesson
def test_parent_sends_are_concatenated_without_deduplication():
    node = ToolNode([parent_tool("foo", SENDS_AB), parent_tool("bar", SENDS_BC)])
    [merged] = node.invoke(as_dict(call("foo"), call("bar", "002")), runtime=RT)
    assert [send.node for send in merged.goto] == ["A", "B", "B", "C"]


@lesson
def test_parent_send_update_is_dropped_even_for_a_single_command():
    [merged] = ToolNode([parent_tool("foo", SENDS_AB)]).invoke(as_dict(call("foo")), runtime=RT)
    assert merged == Command(graph=Command.PARENT, goto=SENDS_AB)


@lesson
def test_merged_command_comes_last_and_string_goto_is_kept_with_its_update():
    node = ToolNode([parent_tool("foo", SENDS_AB), parent_tool("escalate", "boss"), bar])
    out = node.invoke(as_dict(call("foo", "001"), call("escalate", "002"), call("bar", "003")), runtime=RT)
    assert [output_shape(item) for item in out] == [
        "Command(graph=PARENT, update={'messages': [ToolMessage]}, goto='boss')",
        "{'messages': [ToolMessage]}",
        "Command(graph=PARENT, goto=[Send('A'), Send('B')])",
    ]


@lesson
def test_parent_command_update_is_still_checked_against_the_input_kind():
    with pytest.raises(ValueError, match="^Tools can provide a dict in Command.update only"):
        ToolNode([parent_tool("foo", SENDS_AB)]).invoke([AIMessage("", tool_calls=[call("foo")])], runtime=RT)


# -- which goto forms the merge takes: only a list made entirely of Sends ---------------------------
@lesson
def test_a_bare_send_parent_command_is_not_merged_and_keeps_its_update():
    [kept] = ToolNode([parent_tool("foo", Send("A", None))]).invoke(as_dict(call("foo")), runtime=RT)
    assert output_shape(kept) == "Command(graph=PARENT, update={'messages': [ToolMessage]}, goto=Send('A'))"


@lesson
def test_a_tuple_of_sends_parent_command_is_not_merged_and_keeps_its_update():
    node = ToolNode([parent_tool("foo", (Send("A", None), Send("B", None)))])
    [kept] = node.invoke(as_dict(call("foo")), runtime=RT)
    assert output_shape(kept) == (
        "Command(graph=PARENT, update={'messages': [ToolMessage]}, goto=(Send('A'), Send('B')))"
    )


@lesson
def test_a_list_mixing_a_node_name_and_a_send_is_not_merged_and_keeps_its_update():
    [kept] = ToolNode([parent_tool("foo", ["A", Send("B", None)])]).invoke(as_dict(call("foo")), runtime=RT)
    assert output_shape(kept) == (
        "Command(graph=PARENT, update={'messages': [ToolMessage]}, goto=['A', Send('B')])"
    )


@lesson
def test_an_empty_goto_list_parent_command_is_merged_and_loses_its_update():
    """all() of an empty list is true: `goto=[]` passes the merge test, so its update is dropped."""
    [merged] = ToolNode([parent_tool("foo", [])]).invoke(as_dict(call("foo")), runtime=RT)
    assert merged == Command(graph=Command.PARENT, goto=[])
    assert output_shape(merged) == "Command(graph=PARENT)"


@tool("foo")
def parent_without_goto(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Updates the parent graph, naming no node (goto left out)."""
    return Command(graph=Command.PARENT, update={"messages": [answer(f"foo({x}, {y})", tool_call_id)],
                                                  "counter": 1})


@lesson
def test_a_parent_command_without_goto_is_not_merged_and_keeps_its_update():
    """Leaving goto out is not an empty list: Command's default goto is (), a tuple."""
    assert Command().goto == ()
    [kept] = ToolNode([parent_without_goto]).invoke(as_dict(call("foo")), runtime=RT)
    assert output_shape(kept) == "Command(graph=PARENT, update={'messages': [ToolMessage], 'counter': int})"


@lesson
def test_the_merge_condition_is_a_list_made_entirely_of_sends():
    source = excerpt(ToolNode._combine_tool_outputs, start="output.graph is Command.PARENT",
                     end="all(isinstance(send, Send)")
    assert [line.strip() for line in source.lines] == [
        "output.graph is Command.PARENT",
        "and isinstance(output.goto, list)",
        "and all(isinstance(send, Send) for send in output.goto)",
    ]


@lesson
def test_a_parent_command_with_an_update_and_no_answer_passes_toolnode_unchecked():
    """Only a Command for the current graph (graph=None) must answer its call; a PARENT one is not
    checked, so its call can stay unanswered without any error."""
    @tool
    def counts(x: int, y: int) -> Command:
        """Hands over and sets a counter, answering nothing."""
        return Command(graph=Command.PARENT, goto="A", update={"counter": 1})

    [kept] = ToolNode([counts]).invoke(as_dict(call("counts")), runtime=RT)
    assert kept == Command(graph=Command.PARENT, goto="A", update={"counter": 1})


class ParentState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    counter: int
    visited: Annotated[list[str], operator.add]


def visit(name, writes_answers=False, shows_arg=False):
    """A parent node that records its visit; with `writes_answers`, it also writes the answer a
    `Send` brought it (its input is then the Send's argument, not the parent's state); with
    `shows_arg`, it records the argument a `Send` brought it next to its name."""
    def node(arg):
        update = {"visited": [f"{name} got {arg}" if shows_arg else name]}
        if writes_answers and isinstance(arg, dict) and "answer" in arg:
            update["messages"] = [arg["answer"]]
        return update

    return node


def build_parent(script, team_tools, hand_off=None, handle_tool_errors=None, writes_answers=False,
                 shows_arg=False):
    model = ScriptedChatModel(script=[script]).bind_tools(team_tools)
    policy = {} if handle_tool_errors is None else {"handle_tool_errors": handle_tool_errors}
    team = StateGraph(ParentState)
    team.add_node("tools", ToolNode(team_tools, **policy))
    team.add_edge(START, "tools")
    if hand_off is not None:
        team.add_node("hand_off", hand_off)
        team.add_edge("tools", "hand_off")
    parent = StateGraph(ParentState)
    parent.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    parent.add_node("team", team.compile(), destinations=("A", "B", "C"))
    for name in "ABC":
        parent.add_node(name, visit(name, writes_answers, shows_arg))
        parent.add_edge(name, END)
    parent.add_edge(START, "agent")
    parent.add_edge("agent", "team")
    return parent.compile()


FOO_BAR = [{"name": "foo", "args": {"x": 1, "y": 2}}, {"name": "bar", "args": {"x": 3, "y": 4}}]
START_STATE = {"messages": [HumanMessage("Split the work.")], "counter": 0, "visited": []}


@lesson
def test_in_a_parent_graph_sends_run_update_is_lost_and_calls_dangle():
    tools = [parent_tool("foo", SENDS_AB, counter=1), parent_tool("bar", SENDS_BC, counter=1)]
    final = build_parent(FOO_BAR, tools).invoke(START_STATE)
    assert final["visited"] == ["A", "B", "B", "C"]
    assert final["counter"] == 0
    assert unanswered_tool_calls(final["messages"]) == ["call_0_0", "call_0_1"]


@lesson
def test_only_the_first_parent_command_of_a_node_reaches_the_parent():
    tools = [parent_tool("foo", "A", counter=1), parent_tool("bar", "C", counter=1)]
    final = build_parent(FOO_BAR, tools).invoke(START_STATE)
    assert (final["visited"], final["counter"]) == (["A"], 1)
    assert unanswered_tool_calls(final["messages"]) == ["call_0_1"]


@lesson
def test_merged_send_handoffs_come_last_so_a_string_handoff_wins_whatever_the_call_order():
    """The Send hand-off is called first, but ToolNode appends the merged Send Command last: the string
    hand-off is the first PARENT Command of the output, so only its node runs and the Sends never do."""
    tools = [parent_tool("foo", [Send("A", None)], counter=1), parent_tool("bar", "C", counter=1)]
    final = build_parent(FOO_BAR, tools).invoke(START_STATE)
    assert (final["visited"], final["counter"]) == (["C"], 1)
    assert unanswered_tool_calls(final["messages"]) == ["call_0_0"]


@lesson
def test_one_command_from_a_plain_node_hands_off_with_its_update():
    @tool
    def route_to(nodes: list[str]) -> str:
        """Ask the parent graph to run these nodes."""
        return "handing over to " + ", ".join(nodes)

    def hand_off(state):
        asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        ids = {c["id"] for c in asked.tool_calls}
        answers = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id in ids]
        sends = [Send(node, None) for c in asked.tool_calls for node in c["args"]["nodes"]]
        update = {"messages": answers, "counter": len(answers)}
        return Command(graph=Command.PARENT, goto=sends, update=update)

    routes = [
        {"name": "route_to", "args": {"nodes": ["A", "B"]}},
        {"name": "route_to", "args": {"nodes": ["B", "C"]}},
    ]
    final = build_parent(routes, [route_to], hand_off).invoke(START_STATE)
    assert final["visited"] == ["A", "B", "B", "C"]
    assert final["counter"] == 2
    assert unanswered_tool_calls(final["messages"]) == []


@lesson
@pytest.mark.parametrize("script", [FOO_BAR, FOO_BAR[::-1]], ids=["handoff-first", "sibling-first"])
def test_a_parent_handoff_loses_the_siblings_tool_message(script):
    """langgraph#7129: the first PARENT Command raises out of the subgraph; the batch's rest is lost."""
    final = build_parent(script, [parent_tool("foo", "A", counter=1), bar]).invoke(START_STATE)
    assert (final["visited"], final["counter"]) == (["A"], 1)
    bar_call = next(c["id"] for c in final["messages"][1].tool_calls if c["name"] == "bar")
    assert unanswered_tool_calls(final["messages"]) == [bar_call]
    assert [m.name for m in final["messages"] if isinstance(m, ToolMessage)] == ["foo"]


# -- one hand-off, per form: alone in its batch, and with siblings --------------------------------
def outcome(final):
    return final["visited"], final["counter"], unanswered_tool_calls(final["messages"])


@lesson
def test_a_string_goto_handoff_alone_in_its_batch_keeps_its_update():
    final = build_parent(FOO_BAR[:1], [parent_tool("foo", "A", counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == (["A"], 1, [])


@lesson
def test_a_send_list_handoff_alone_in_its_batch_loses_its_update_and_its_answer():
    """The Send form is merged, and the merge drops the update even for one Command."""
    tools = [parent_tool("foo", [Send("A", None), Send("B", None)], counter=1), bar]
    final = build_parent(FOO_BAR[:1], tools).invoke(START_STATE)
    assert outcome(final) == (["A", "B"], 0, ["call_0_0"])
    assert not [m for m in final["messages"] if isinstance(m, ToolMessage)]


@lesson
def test_an_empty_goto_list_handoff_alone_in_its_batch_runs_no_node_and_leaves_its_call_unanswered():
    final = build_parent(FOO_BAR[:1], [parent_tool("foo", [], counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == ([], 0, ["call_0_0"])


@lesson
def test_a_parent_command_without_goto_alone_in_its_batch_updates_the_parent_and_answers_its_call():
    final = build_parent(FOO_BAR[:1], [parent_without_goto, bar]).invoke(START_STATE)
    assert outcome(final) == ([], 1, [])
    assert [m.content for m in final["messages"] if isinstance(m, ToolMessage)] == ["foo(1, 2)"]


@lesson
def test_an_empty_goto_list_handoff_with_a_sibling_leaves_every_call_unanswered():
    final = build_parent(FOO_BAR, [parent_tool("foo", [], counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == ([], 0, ["call_0_0", "call_0_1"])


@lesson
def test_a_parent_command_without_goto_with_a_sibling_loses_the_siblings_answer():
    final = build_parent(FOO_BAR, [parent_without_goto, bar]).invoke(START_STATE)
    assert outcome(final) == ([], 1, ["call_0_1"])


@lesson
def test_a_send_list_handoff_with_a_sibling_leaves_every_call_unanswered():
    tools = [parent_tool("foo", [Send("A", None)], counter=1), bar]
    final = build_parent(FOO_BAR, tools).invoke(START_STATE)
    assert outcome(final) == (["A"], 0, ["call_0_0", "call_0_1"])


@lesson
def test_a_list_of_node_names_is_not_merged_and_keeps_its_update():
    """A safe form for a lone hand-off that needs no payload: the update and the answer arrive."""
    final = build_parent(FOO_BAR[:1], [parent_tool("foo", ["A", "B"], counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == (["A", "B"], 1, [])


@lesson
def test_a_node_name_listed_twice_runs_once():
    final = build_parent(FOO_BAR[:1], [parent_tool("foo", ["A", "A"], counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == (["A"], 1, [])


@lesson
def test_a_list_of_node_names_still_loses_a_siblings_answer():
    final = build_parent(FOO_BAR, [parent_tool("foo", ["A", "B"], counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == (["A", "B"], 1, ["call_0_1"])


@lesson
def test_a_bare_send_handoff_alone_in_its_batch_keeps_its_update_and_delivers_its_argument():
    """The simplest valid hand-off that carries data: the Send's arg is the node's input, the update
    (with the tool's answer) arrives."""
    tools = [parent_tool("foo", Send("A", {"x": 1, "y": 2}), counter=1), bar]
    final = build_parent(FOO_BAR[:1], tools, shows_arg=True).invoke(START_STATE)
    assert outcome(final) == (["A got {'x': 1, 'y': 2}"], 1, [])
    assert [m.content for m in final["messages"] if isinstance(m, ToolMessage)] == ["foo(1, 2)"]


@lesson
def test_a_tuple_of_sends_handoff_alone_in_its_batch_keeps_its_update():
    tools = [parent_tool("foo", (Send("A", None), Send("B", None)), counter=1), bar]
    final = build_parent(FOO_BAR[:1], tools).invoke(START_STATE)
    assert outcome(final) == (["A", "B"], 1, [])


@lesson
def test_a_bare_send_handoff_with_a_sibling_still_loses_the_siblings_answer():
    final = build_parent(FOO_BAR, [parent_tool("foo", Send("A", None), counter=1), bar]).invoke(START_STATE)
    assert outcome(final) == (["A"], 1, ["call_0_1"])


@lesson
def test_a_send_that_carries_the_answer_to_a_parent_node_that_writes_it_keeps_the_history_valid():
    @tool
    def foo(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hands off to A and B; A's Send carries this call's answer."""
        answer_message = answer(f"foo({x}, {y})", tool_call_id)
        return Command(graph=Command.PARENT, goto=[Send("A", {"answer": answer_message}), Send("B", None)])

    final = build_parent(FOO_BAR[:1], [foo, bar], writes_answers=True).invoke(START_STATE)
    assert outcome(final) == (["A", "B"], 0, [])
    assert [m.content for m in final["messages"] if isinstance(m, ToolMessage)] == ["foo(1, 2)"]


@lesson
def test_a_tool_returning_its_answer_beside_a_parent_send_command_still_loses_the_answer():
    @tool
    def foo(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> list:
        """Returns the answer and a Send hand-off as a list."""
        return [Command(graph=Command.PARENT, goto=[Send("A", None)]), answer(f"foo({x}, {y})", tool_call_id)]

    final = build_parent(FOO_BAR[:1], [foo, bar]).invoke(START_STATE)
    assert outcome(final) == (["A"], 0, ["call_0_0"])


@lesson
def test_a_parent_send_handoff_with_a_failing_sibling():
    """The default policy raises before anything reaches the parent; `True` answers the sibling with
    an error message in ToolNode's output, which the hand-off then leaves behind."""
    from helpers.tools import make_failing_tool

    failing = make_failing_tool(delay=0, sync=True)
    tools = [parent_tool("foo", SENDS_AB, counter=1), failing]
    sibling = ToolCall(name=failing.name, args={"city": "Paris"}, id="002", type="tool_call")
    calls = [call("foo", "001"), sibling]
    with pytest.raises(ConnectionError):
        ToolNode(tools).invoke(as_dict(*calls), runtime=RT)
    out = ToolNode(tools, handle_tool_errors=True).invoke(as_dict(*calls), runtime=RT)
    assert [output_shape(item) for item in out] == [
        "{'messages': [ToolMessage]}",
        "Command(graph=PARENT, goto=[Send('A'), Send('B')])",
    ]
    assert out[0]["messages"][0].status == "error"
    script = [FOO_BAR[0], {"name": failing.name, "args": {"city": "Paris"}}]
    final = build_parent(script, tools, handle_tool_errors=True).invoke(START_STATE)
    assert outcome(final) == (["A", "B"], 0, ["call_0_0", "call_0_1"])


@lesson
def test_destinations_draw_the_edges_a_subgraph_node_may_take():
    from helpers.display import show_graph

    source = str(show_graph(build_parent(FOO_BAR, [bar])))
    assert all(f"team -.-> {n};" in source for n in "ABC"), source


@lesson
def test_a_subgraph_node_cannot_name_its_parents_nodes_in_its_annotation():
    def hands_over(state: ParentState) -> Command[Literal["A"]]:
        return Command(graph=Command.PARENT, goto="A")

    inner = StateGraph(ParentState)
    inner.add_node("hands_over", hands_over)
    inner.add_edge(START, "hands_over")
    with pytest.raises(ValueError, match="Found edge ending at unknown node `A`"):
        inner.compile()


# -- who fills InjectedToolCallId, and goto next to fixed edges ---------------------------------
@lesson
def test_langchain_core_fills_injected_tool_call_id_from_the_tool_call_without_toolnode():
    direct = foo.invoke(ToolCall(name="foo", args={"x": 1, "y": 2, "tool_call_id": "forged"},
                                 id="call_42", type="tool_call"))
    assert direct.update["messages"][0].tool_call_id == "call_42"


@lesson
def test_invoking_an_injected_tool_call_id_tool_with_plain_args_is_an_error():
    with pytest.raises(ValueError, match="tool must always be invoked with a full model ToolCall"):
        foo.invoke({"x": 1, "y": 2})


class Visits(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    visited: Annotated[list[str], operator.add]


def finishing_loop(finish_tool, after_tools=None):
    model = ScriptedChatModel(script=[[{"name": "finish", "args": {"reason": "done"}}], "Anything else?"])
    llm = model.bind_tools([finish_tool])
    builder = StateGraph(Visits)
    builder.add_node("llm", lambda state: {"messages": [llm.invoke(state["messages"])], "visited": ["llm"]})
    builder.add_node("tools", ToolNode([finish_tool]))
    builder.add_node("wrap_up", lambda state: {"visited": ["wrap_up"]})
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    if after_tools is None:
        builder.add_edge("tools", "llm")
    else:
        builder.add_conditional_edges("tools", after_tools, ["llm", "wrap_up"])
    builder.add_edge("wrap_up", END)
    return builder.compile().invoke({"messages": [HumanMessage("bye")], "visited": []})


@lesson
def test_a_tools_goto_does_not_cancel_the_fixed_edge_both_run():
    """langgraph#5829: Command.goto adds a destination next to the node's static edge."""
    @tool
    def finish(reason: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """End."""
        return Command(goto="wrap_up", update={"messages": [answer("finishing", tool_call_id)]})

    assert finishing_loop(finish)["visited"] == ["llm", "llm", "wrap_up"]


@lesson
def test_a_conditional_edge_after_tools_routes_once():
    @tool
    def finish(reason: str) -> str:
        """End."""
        return "finishing"

    def after_tools(state):
        return "wrap_up" if state["messages"][-1].name == "finish" else "llm"

    assert finishing_loop(finish, after_tools)["visited"] == ["llm", "wrap_up"]


# -- the next turn after an unanswered call ----------------------------------------------------------
DANGLING = [
    HumanMessage("Split the work."),
    AIMessage("", tool_calls=[call("foo", "call_0_0"), call("bar", "call_0_1", x=3, y=4)]),
    HumanMessage("And now?"),
]


def report(sent):
    return f"unanswered: {unanswered_tool_calls(sent)}"


@lesson
def test_create_react_agent_refuses_a_history_with_an_unanswered_call_before_the_model():
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        agent = create_react_agent(ScriptedChatModel(script=[report, report]), [bar])
    refused = "^Found AIMessages with tool_calls that do not have a corresponding"
    with pytest.raises(ValueError, match=refused):
        agent.invoke({"messages": DANGLING})


@lesson
def test_create_agent_sends_a_history_with_an_unanswered_call_to_the_model():
    from langchain.agents import create_agent

    agent = create_agent(ScriptedChatModel(script=[report, report]), [bar])
    final = agent.invoke({"messages": DANGLING})
    assert final["messages"][-1].content == "unanswered: ['call_0_0', 'call_0_1']"


@lesson
def test_a_parent_command_with_an_update_and_no_answer_leaves_its_call_unanswered_in_the_parent():
    @tool
    def foo(x: int, y: int) -> Command:
        """Hands over to A and sets a counter, answering nothing."""
        return Command(graph=Command.PARENT, goto="A", update={"counter": 1})

    final = build_parent(FOO_BAR[:1], [foo, bar]).invoke(START_STATE)
    assert outcome(final) == (["A"], 1, ["call_0_0"])
