"""Unit tests for helpers.returns."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command, Send

from helpers.returns import (
    INPUT_KINDS,
    RETURN_KINDS,
    SEED_CALLS,
    MessagesModel,
    make_input,
    output_shape,
    text_table,
)


def test_make_input_builds_each_kind():
    built = {kind: make_input(kind) for kind in INPUT_KINDS}
    assert isinstance(built["list of messages"][0], AIMessage)
    assert built["list of ToolCalls"] == SEED_CALLS
    assert list(built["dict"]) == ["messages"]
    assert isinstance(built["Pydantic model"], MessagesModel)


def test_make_input_rejects_an_unknown_kind_and_lists_the_known_ones():
    with pytest.raises(ValueError, match="use one of"):
        make_input("tuple")


def test_return_kinds_make_fresh_foo_and_bar():
    for make_tools in RETURN_KINDS.values():
        first, second = make_tools(), make_tools()
        assert [t.name for t in first] == ["foo", "bar"]
        assert first[0] is not second[0]


def test_injected_id_is_hidden_from_the_model():
    foo = RETURN_KINDS["foo: Command(update=dict)"]()[0]
    assert set(foo.tool_call_schema.model_json_schema()["properties"]) == {"x", "y"}


@pytest.mark.parametrize(
    ("value", "shape"),
    [
        ([ToolMessage("a", tool_call_id="1")], "[ToolMessage]"),
        ({"messages": []}, "{'messages': []}"),
        (Command(goto="next"), "Command(goto='next')"),
        (Command(update=[ToolMessage("a", tool_call_id="1")]), "Command(update=[ToolMessage])"),
        (
            Command(graph=Command.PARENT, goto=[Send("A", None)]),
            "Command(graph=PARENT, goto=[Send('A')])",
        ),
        (Command(goto=Send("A", None)), "Command(goto=Send('A'))"),
        (Command(goto=["A", "B"]), "Command(goto=['A', 'B'])"),
        (
            Command(graph=Command.PARENT, goto=(Send("A", None), Send("B", None))),
            "Command(graph=PARENT, goto=(Send('A'), Send('B')))",
        ),
        (Command(goto=(Send("A", None),)), "Command(goto=(Send('A'),))"),
        (Command(goto=["A", Send("B", None)]), "Command(goto=['A', Send('B')])"),
        (42, "int"),
    ],
)
def test_output_shape(value, shape):
    assert output_shape(value) == shape


def test_text_table_aligns_columns():
    table = text_table(["a", "bb"], [("xxx", 1)])
    assert table.splitlines() == ["a    bb", "---  --", "xxx  1"]


def test_text_table_rejects_ragged_rows():
    with pytest.raises(ValueError, match="Every row needs 2 cells"):
        text_table(["a", "b"], [("only one",)])


def test_text_table_aligns_chinese_by_display_width():
    lines = text_table(["k", "v"], [("杭州", 1), ("ab", 2)]).splitlines()
    assert lines[2] == "杭州  1" and lines[3] == "ab    2"
