"""Contract tests for notebooks/05_return_types.ipynb: ToolNode's input kinds and rule one.

Each test runs the pinned library directly; the live table's 24 rows are pinned one by one.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from datetime import date
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.errors import InvalidUpdateError
from langgraph.graph import START, StateGraph, add_messages
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command

from helpers.returns import RETURN_KINDS, SEED_CALLS, MessagesModel, make_input, output_shape
from helpers.seeds import SEED_000_RULE_ONE

lesson = pytest.mark.lesson("05_return_types")
RT = Runtime()


@tool
def foo(x: int, y: int) -> str:
    """A test tool foo."""
    return f"foo({x}, {y})"


@tool
def bar(x: int, y: int) -> str:
    """A test tool bar."""
    return f"bar({x}, {y})"


NODE = ToolNode([foo, bar])
MESSAGES = [AIMessage(content="", tool_calls=SEED_CALLS)]


def call(name: str, call_id: str, **args) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, type="tool_call")


@lesson
def test_seed_000_rule_one_output_reproduces_exactly():
    inputs = {
        "messages": MESSAGES,
        "tool_calls": SEED_CALLS,
        "dict": {"messages": MESSAGES},
        "state": MessagesModel(messages=MESSAGES),
    }
    printed = "\n".join(f"input-{k}: {NODE.invoke(v, runtime=RT)}" for k, v in inputs.items())
    assert printed == SEED_000_RULE_ONE


@lesson
def test_list_of_messages_gives_a_bare_list():
    assert output_shape(NODE.invoke(MESSAGES, runtime=RT)) == "[ToolMessage, ToolMessage]"


@lesson
@pytest.mark.parametrize("kind", ["list of ToolCalls", "dict", "Pydantic model"])
def test_every_other_input_gives_a_dict(kind):
    out = NODE.invoke(make_input(kind), runtime=RT)
    assert output_shape(out) == "{'messages': [ToolMessage, ToolMessage]}"


@lesson
def test_any_object_with_the_attribute_is_a_dict_input():
    @dataclass
    class Chat:
        messages: list

    assert list(NODE.invoke(Chat(messages=MESSAGES), runtime=RT)) == ["messages"]


@lesson
def test_only_the_last_item_decides_a_list_of_tool_calls():
    hand_written = [SEED_CALLS[0], {"name": "bar", "args": {"x": 3, "y": 4}, "id": "002"}]
    with pytest.raises(ValueError, match="^No AIMessage found in input$"):
        NODE.invoke(hand_written, runtime=RT)


@lesson
def test_custom_messages_key_names_the_output():
    node = ToolNode([foo, bar], messages_key="history")
    assert list(node.invoke({"history": MESSAGES}, runtime=RT)) == ["history"]


@lesson
def test_dict_without_the_messages_key_is_an_error():
    node = ToolNode([foo, bar], messages_key="history")
    with pytest.raises(ValueError, match="^No message found in input$"):
        node.invoke({"messages": MESSAGES}, runtime=RT)


@lesson
def test_empty_list_is_an_index_error():
    with pytest.raises(IndexError):
        NODE.invoke([], runtime=RT)


@lesson
def test_aimessage_without_calls_gives_an_empty_result():
    done = [AIMessage(content="All done.")]
    assert NODE.invoke(done, runtime=RT) == []
    assert NODE.invoke({"messages": done}, runtime=RT) == {"messages": []}


CONVERSATION = [
    HumanMessage("Run foo, then bar."),
    AIMessage("", tool_calls=[call("foo", "old", x=1, y=2)]),
    ToolMessage("foo(1, 2)", tool_call_id="old"),
    AIMessage("", tool_calls=[call("bar", "new", x=3, y=4)]),
    HumanMessage("Actually, never mind."),
]


@lesson
def test_toolnode_runs_the_most_recent_aimessage_even_when_messages_follow():
    assert [m.tool_call_id for m in NODE.invoke(CONVERSATION, runtime=RT)] == ["new"]


@lesson
def test_tools_condition_looks_only_at_the_last_message():
    assert tools_condition(CONVERSATION) == "__end__"
    assert tools_condition(CONVERSATION[:-1]) == "tools"


class WithAddMessages(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class WithOperatorAdd(TypedDict):
    messages: Annotated[list[AnyMessage], operator.add]


class NoReducer(TypedDict):
    messages: list[AnyMessage]


def tools_only(schema, node=NODE):
    builder = StateGraph(schema)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    return builder.compile()


START_MESSAGES = [HumanMessage("hi"), AIMessage("", tool_calls=[call("foo", "c1", x=5, y=6)])]


@lesson
@pytest.mark.parametrize("schema", [WithAddMessages, WithOperatorAdd])
def test_a_reducer_appends_the_tool_messages(schema):
    final = tools_only(schema).invoke({"messages": START_MESSAGES})
    assert [type(m).__name__ for m in final["messages"]] == ["HumanMessage", "AIMessage", "ToolMessage"]


@lesson
def test_without_a_reducer_the_update_overwrites():
    final = tools_only(NoReducer).invoke({"messages": START_MESSAGES})
    assert [type(m).__name__ for m in final["messages"]] == ["ToolMessage"]


@lesson
def test_a_list_state_with_a_reducer_appends_the_bare_list():
    final = tools_only(Annotated[list[AnyMessage], add_messages]).invoke(START_MESSAGES)
    assert [type(m).__name__ for m in final] == ["HumanMessage", "AIMessage", "ToolMessage"]


@lesson
def test_a_bare_list_into_a_dict_state_is_an_invalid_update():
    graph = tools_only(WithAddMessages, lambda state: NODE.invoke(state["messages"]))
    with pytest.raises(InvalidUpdateError, match="^Expected dict, got \\[ToolMessage"):
        graph.invoke({"messages": START_MESSAGES})


@tool
def text(city: str) -> str:
    """A string, quotes included."""
    return f'{city}: "sunny", 25 °C'


@tool
def blocks(city: str) -> list:
    """Content blocks."""
    return [{"type": "text", "text": f"{city}: sunny"}, {"type": "text", "text": f"{city}: the Louvre"}]


@tool
def names(city: str) -> list:
    """A list that is not content blocks."""
    return [city, "London"]


@tool
def weather(city: str) -> dict:
    """Weather as a dict."""
    return {"city": city, "sky": "sunny", "temp": "25 °C"}


@tool
def count(city: str) -> int:
    """A number."""
    return 42


@tool
def nothing(city: str) -> None:
    """Returns None."""


@tool
def when(city: str) -> date:
    """Not JSON-serialisable."""
    return date(2026, 1, 1)


@tool
def own_message(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Builds its own ToolMessage."""
    return ToolMessage(f"{city}: built by the tool", tool_call_id=tool_call_id)


@lesson
@pytest.mark.parametrize(
    ("the_tool", "content", "name"),
    [
        (text, 'Paris: "sunny", 25 °C', "text"),
        (blocks, [{"type": "text", "text": "Paris: sunny"}, {"type": "text", "text": "Paris: the Louvre"}],
         "blocks"),
        (names, '["Paris", "London"]', "names"),
        (weather, '{"city": "Paris", "sky": "sunny", "temp": "25 °C"}', "weather"),
        (count, "42", "count"),
        (nothing, "null", "nothing"),
        (when, "2026-01-01", "when"),
        (own_message, "Paris: built by the tool", None),
    ],
    ids=["str-unchanged", "content-blocks-stay-a-list", "other-list-json", "dict-json-ensure-ascii-false",
         "int", "none-null", "date-str", "toolmessage-no-name"],
)
def test_plain_return_values_become_content(the_tool, content, name):
    [message] = ToolNode([the_tool]).invoke(
        [AIMessage("", tool_calls=[call(the_tool.name, "v", city="Paris")])], runtime=RT
    )
    assert (message.content, message.name) == (content, name)


def run_one(the_tool, call_id="v"):
    [message] = ToolNode([the_tool]).invoke(
        [AIMessage("", tool_calls=[call(the_tool.name, call_id, city="Paris")])], runtime=RT
    )
    return message


@lesson
def test_ensure_ascii_false_keeps_non_ascii_readable_where_plain_json_escapes_it():
    import json

    assert json.dumps({"temp": "25 °C"}) == '{"temp": "25 \\u00b0C"}'
    assert run_one(weather).content.endswith('"temp": "25 °C"}')


@lesson
def test_text_joins_text_blocks_without_a_separator_and_keeps_a_string():
    assert run_one(blocks).text == "Paris: sunnyParis: the Louvre"
    assert run_one(text).text == 'Paris: "sunny", 25 °C'


DAYS = [{"day": 1, "temp": 25}, {"day": 2, "temp": 23}, {"day": 3, "temp": 19}]


@tool(response_format="content_and_artifact")
def forecast(city: str):
    """Three days of forecast."""
    return f"{city}: 3 days, 19–25 °C", DAYS


@tool(response_format="content_and_artifact")
def forgot_the_artifact(city: str):
    """Returns only the content."""
    return f"{city}: 3 days"


@lesson
def test_content_and_artifact_splits_what_the_model_reads_from_what_code_keeps():
    from langchain_core.messages import convert_to_openai_messages

    message = run_one(forecast, "f1")
    assert message.content == "Paris: 3 days, 19–25 °C"
    assert message.artifact == DAYS
    assert convert_to_openai_messages([message]) == [
        {"role": "tool", "name": "forecast", "tool_call_id": "f1", "content": "Paris: 3 days, 19–25 °C"}
    ]


@lesson
def test_chatopenai_does_not_send_the_artifact():
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    message = run_one(forecast, "f1")
    asked = AIMessage("", tool_calls=[call("forecast", "f1", city="Paris")])
    with ScriptedOpenAIEndpoint(["unused", "done"]) as endpoint:
        ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                   use_responses_api=False).invoke([HumanMessage("q"), asked, message])
    wire = endpoint.requests[0]["messages"][-1]
    assert wire == {"content": "Paris: 3 days, 19–25 °C", "role": "tool", "tool_call_id": "f1"}


@lesson
def test_content_and_artifact_without_a_pair_is_an_error():
    with pytest.raises(ValueError, match="a two-tuple of the message content and raw tool output"):
        run_one(forgot_the_artifact)


LIST_KIND, TOOL_CALLS, DICT, MODEL = "list of messages", "list of ToolCalls", "dict", "Pydantic model"
PARENT_SENDS = "[Command(graph=PARENT, goto=[Send('A'), Send('B'), Send('B'), Send('C')])]"
DICT_WRAPPED = {
    "plain values": "{'messages': [ToolMessage, ToolMessage]}",
    "foo: Command(update=dict)": "[Command(update={'messages': [ToolMessage]}), {'messages': [ToolMessage]}]",
    "foo: Command(update=list)": "ValueError",
    "foo: Command(goto='next')": "[Command(goto='next'), {'messages': [ToolMessage]}]",
    "foo: [Command, ToolMessage]":
        "[Command(goto='audit'), {'messages': [ToolMessage]}, {'messages': [ToolMessage]}]",
    "both: PARENT + Sends": PARENT_SENDS,
}
LIVE_TABLE = {
    (LIST_KIND, "plain values"): "[ToolMessage, ToolMessage]",
    (LIST_KIND, "foo: Command(update=dict)"): "ValueError",
    (LIST_KIND, "foo: Command(update=list)"): "[Command(update=[ToolMessage]), [ToolMessage]]",
    (LIST_KIND, "foo: Command(goto='next')"): "[Command(goto='next'), [ToolMessage]]",
    (LIST_KIND, "foo: [Command, ToolMessage]"): "[Command(goto='audit'), [ToolMessage], [ToolMessage]]",
    (LIST_KIND, "both: PARENT + Sends"): "ValueError",
    **{(kind, label): shape for kind in (TOOL_CALLS, DICT, MODEL) for label, shape in DICT_WRAPPED.items()},
}
"""The notebook's closing table, row by row: (input kind, what the tools return) → output shape."""


@lesson
def test_the_table_covers_every_input_kind_and_return_kind():
    from helpers.returns import INPUT_KINDS

    assert set(LIVE_TABLE) == {(k, r) for k in INPUT_KINDS for r in RETURN_KINDS}


@lesson
@pytest.mark.parametrize(("kind", "returns"), list(LIVE_TABLE), ids=[f"{k} | {r}" for k, r in LIVE_TABLE])
def test_live_table_row(kind, returns):
    try:
        shape = output_shape(ToolNode(RETURN_KINDS[returns]()).invoke(make_input(kind), runtime=RT))
    except ValueError:
        shape = "ValueError"
    assert shape == LIVE_TABLE[(kind, returns)]


# -- content in two steps: langchain-core's BaseTool, then ToolNode's msg_content_output ------------
def paris_call(the_tool, call_id="p1") -> ToolCall:
    return call(the_tool.name, call_id, city="Paris")


def through_toolnode(the_tool):
    [message] = ToolNode([the_tool]).invoke([AIMessage("", tool_calls=[paris_call(the_tool)])], runtime=RT)
    return message


@lesson
def test_langchain_core_keeps_a_list_of_strings_as_a_list():
    assert names.invoke(paris_call(names)).content == ["Paris", "London"]


@lesson
def test_toolnode_turns_a_list_of_strings_into_a_json_string():
    assert through_toolnode(names).content == '["Paris", "London"]'


@lesson
def test_toolnode_redoes_the_content_of_a_toolmessage_the_tool_returns():
    @tool
    def own_list(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Builds its own ToolMessage with a list of strings as content."""
        return ToolMessage([city, "London"], tool_call_id=tool_call_id)

    assert own_list.invoke(paris_call(own_list)).content == ["Paris", "London"]
    message = through_toolnode(own_list)
    assert (message.content, message.name) == ('["Paris", "London"]', None)


@lesson
def test_the_content_block_types_are_langchain_cores_fixed_set_used_by_both_steps():
    from langchain_core.tools import base
    from langgraph.prebuilt import tool_node

    assert base.TOOL_MESSAGE_BLOCK_TYPES == (
        "text", "image_url", "image", "json", "search_result", "custom_tool_call_output", "document", "file",
    )
    assert tool_node.TOOL_MESSAGE_BLOCK_TYPES is base.TOOL_MESSAGE_BLOCK_TYPES


@lesson
def test_toolnodes_content_rule_keeps_only_lists_of_typed_blocks():
    from langgraph.prebuilt.tool_node import msg_content_output

    from helpers.source import excerpt

    source = excerpt(msg_content_output, start="if isinstance(output, str) or (", end="return str(output)")
    assert 'x.get("type") in TOOL_MESSAGE_BLOCK_TYPES' in str(source)
    assert msg_content_output(["a", "b"]) == '["a", "b"]'
    assert msg_content_output([{"type": "image", "url": "u"}]) == [{"type": "image", "url": "u"}]


@lesson
def test_a_block_type_outside_the_set_is_json_after_both_steps():
    @tool
    def audio(city: str) -> list:
        """A content block of a type outside the set."""
        return [{"type": "audio", "base64": "UklGRg=="}]

    expected = '[{"type": "audio", "base64": "UklGRg=="}]'
    assert audio.invoke(paris_call(audio)).content == expected
    assert through_toolnode(audio).content == expected


@lesson
def test_a_tuple_of_content_blocks_becomes_a_list():
    @tool
    def pair(city: str) -> tuple:
        """Two text blocks, as a tuple."""
        return ({"type": "text", "text": "a"}, {"type": "text", "text": "b"})

    assert through_toolnode(pair).content == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]


@lesson
def test_an_empty_list_answers_with_empty_content_not_a_json_string():
    """langchain#30578: an empty list counts as an (empty) list of content blocks in both steps."""
    @tool
    def nothing_found(city: str) -> list:
        """Finds nothing."""
        return []

    assert nothing_found.invoke(paris_call(nothing_found)).content == []
    assert through_toolnode(nothing_found).content == []


# -- the fifth input kind, and what each kind hands a tool -------------------------------------------
@tool
def count_messages(x: int, y: int, messages: Annotated[list, InjectedState("messages")]) -> str:
    """Counts the messages in the state."""
    return f"{len(messages)} message(s)"


COUNTING_CALLS = [call("count_messages", "001", x=1, y=2)]
TWO_MESSAGES = [HumanMessage("hi"), AIMessage("", tool_calls=COUNTING_CALLS)]


@lesson
def test_a_tool_call_with_context_payload_answers_with_a_dict_and_hands_over_its_own_state():
    payload = {"__type": "tool_call_with_context", "tool_call": COUNTING_CALLS[0],
               "state": {"messages": TWO_MESSAGES}}
    out = ToolNode([count_messages]).invoke(payload, runtime=RT)
    assert output_shape(out) == "{'messages': [ToolMessage]}"
    assert out["messages"][0].content == "2 message(s)"


@lesson
@pytest.mark.parametrize("kind", ["list of messages", "dict", "Pydantic model"])
def test_injected_state_messages_reads_the_input_of_each_message_kind(kind):
    out = ToolNode([count_messages]).invoke(make_input(kind, COUNTING_CALLS), runtime=RT)
    message = out[0] if isinstance(out, list) else out["messages"][0]
    assert message.content == "1 message(s)"


@lesson
def test_a_standalone_list_of_tool_calls_hands_its_tools_an_empty_state():
    @tool
    def state_seen(x: int, y: int, state: Annotated[dict, InjectedState]) -> str:
        """Reports the state it is handed."""
        return repr(state)

    out = ToolNode([state_seen]).invoke([call("state_seen", "001", x=1, y=2)], runtime=RT)
    assert out["messages"][0].content == "{}"


@lesson
def test_injected_state_messages_raises_on_a_standalone_list_of_tool_calls():
    with pytest.raises(KeyError, match="messages"):
        ToolNode([count_messages]).invoke(COUNTING_CALLS, runtime=RT)


@lesson
def test_inside_a_graph_a_list_of_tool_calls_reads_the_graphs_state():
    node = ToolNode([count_messages])
    graph = tools_only(WithAddMessages, lambda state: node.invoke(COUNTING_CALLS))
    assert graph.invoke({"messages": TWO_MESSAGES})["messages"][-1].content == "2 message(s)"


# -- who sends the fifth kind: create_react_agent v2 only ------------------------------------------
def tools_task_inputs(version: str | None) -> list[str]:
    """What each `tools` task of a create_react_agent run receives, for one turn with two calls."""
    import inspect
    import warnings

    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    from helpers.models import ScriptedChatModel

    model = ScriptedChatModel(script=[[{"name": "foo", "args": {"x": 1, "y": 2}},
                                       {"name": "bar", "args": {"x": 3, "y": 4}}], "done"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        options = {} if version is None else {"version": version}
        agent = create_react_agent(model, [foo, bar], **options)
    assert inspect.signature(create_react_agent).parameters["version"].default == "v2"
    kinds = []
    for task in agent.stream({"messages": [HumanMessage("hi")]}, stream_mode="tasks"):
        if task["name"] == "tools" and "input" in task:
            payload = task["input"]
            is_dict = isinstance(payload, dict)
            kinds.append(payload.get("__type", "the state") if is_dict else type(payload).__name__)
    return kinds


@lesson
@pytest.mark.parametrize("version", [None, "v2"], ids=["default", "v2"])
def test_create_react_agent_sends_one_tool_call_with_context_per_call_under_its_default_v2(version):
    assert tools_task_inputs(version) == ["tool_call_with_context", "tool_call_with_context"]


@lesson
def test_create_react_agent_v1_sends_the_state_once():
    assert tools_task_inputs("v1") == ["the state"]


# -- the ToolMessages step 2 leaves alone -----------------------------------------------------------
@lesson
@pytest.mark.parametrize("input_kind", ["list of messages", "dict"])
def test_toolnode_leaves_the_content_of_a_toolmessage_inside_a_commands_update_alone(input_kind):
    as_list = input_kind == "list of messages"

    @tool
    def in_update(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Answers inside a Command's update, with a list of strings as content."""
        answer = ToolMessage([city, "London"], tool_call_id=tool_call_id)
        return Command(update=[answer] if as_list else {"messages": [answer]})

    message = AIMessage("", tool_calls=[paris_call(in_update)])
    [command] = ToolNode([in_update]).invoke([message] if as_list else {"messages": [message]}, runtime=RT)
    answer = command.update[0] if as_list else command.update["messages"][0]
    assert answer.content == ["Paris", "London"]


@lesson
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
def test_toolnode_leaves_the_content_of_a_toolmessage_an_interceptor_returns_alone(path):
    import asyncio

    def answers_itself(request, execute):
        return ToolMessage(["Paris", "London"], tool_call_id=request.tool_call["id"], name="names")

    async def answers_itself_async(request, execute):
        return answers_itself(request, execute)

    node = ToolNode([names], wrap_tool_call=answers_itself, awrap_tool_call=answers_itself_async)
    message = [AIMessage("", tool_calls=[paris_call(names)])]
    if path == "invoke":
        [answer] = node.invoke(message, runtime=RT)
    else:
        [answer] = asyncio.run(node.ainvoke(message, runtime=RT))
    assert answer.content == ["Paris", "London"]


@lesson
def test_toolnode_redoes_the_content_of_a_toolmessage_in_a_returned_list():
    @tool
    def listed(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> list:
        """Returns a Command and its answer in a list; the answer's content is a list of strings."""
        return [Command(goto="audit"), ToolMessage([city, "London"], tool_call_id=tool_call_id)]

    out = ToolNode([listed]).invoke([AIMessage("", tool_calls=[paris_call(listed)])], runtime=RT)
    assert out[1][0].content == '["Paris", "London"]'


# -- lab 05's check question 1: a dict output and the state it goes into ----------------------------
@lesson
def test_a_list_of_tool_calls_output_is_accepted_by_a_dict_state():
    graph = tools_only(WithAddMessages, lambda state: NODE.invoke(SEED_CALLS))
    assert [type(m).__name__ for m in graph.invoke({"messages": [HumanMessage("hi")]})["messages"]] == [
        "HumanMessage", "ToolMessage", "ToolMessage"]


@lesson
def test_a_list_of_tool_calls_output_into_a_message_list_state_is_a_value_error():
    builder = StateGraph(Annotated[list[AnyMessage], add_messages])
    builder.add_node("tools", lambda state: NODE.invoke(SEED_CALLS))
    builder.add_edge(START, "tools")
    with pytest.raises(ValueError, match="Message dict must contain 'role' and 'content' keys") as caught:
        builder.compile().invoke([HumanMessage("hi")])
    assert not isinstance(caught.value, InvalidUpdateError)
