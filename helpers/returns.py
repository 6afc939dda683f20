"""What ToolNode returns: name the shape of an output, build each kind of input, and tools that
return each kind of value, so a lesson's table and its contract tests run the very same cases.

Taught in `notebooks/05_return_types.ipynb`.
"""

from __future__ import annotations

import operator
import unicodedata
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.types import Command, Send
from pydantic import BaseModel


class MessagesModel(BaseModel):
    """A Pydantic state with a `messages` field, as in seed 000 (its `State`).

    Taught in `notebooks/05_return_types.ipynb`.
    """

    messages: Annotated[list[AnyMessage], operator.add]


SEED_CALLS: list[ToolCall] = [
    ToolCall(name="foo", args={"x": 1, "y": 2}, id="001", type="tool_call"),
    ToolCall(name="bar", args={"x": 3, "y": 4}, id="002", type="tool_call"),
]
"""Seed 000's two tool calls: `foo(1, 2)` with id `001`, `bar(3, 4)` with id `002`."""

INPUT_KINDS: tuple[str, ...] = ("list of messages", "list of ToolCalls", "dict", "Pydantic model")
"""The four kinds of input ToolNode accepts, in the order seed 000 shows them."""


def make_input(kind: str, calls: Sequence[ToolCall] = SEED_CALLS) -> Any:
    """Wrap tool calls as one of the four input kinds ToolNode accepts.

    Args:
        kind: one of `INPUT_KINDS`.
        calls: the tool calls; an `AIMessage` carries them for every kind but "list of ToolCalls".

    Example:
        ```python
        make_input("dict")   # {'messages': [AIMessage(content='', tool_calls=[...])]}
        ```

    Taught in `notebooks/05_return_types.ipynb`.
    """
    messages = [AIMessage(content="", tool_calls=list(calls))]
    builders: dict[str, Callable[[], Any]] = {
        "list of messages": lambda: messages,
        "list of ToolCalls": lambda: list(calls),
        "dict": lambda: {"messages": messages},
        "Pydantic model": lambda: MessagesModel(messages=messages),
    }
    if kind not in builders:
        raise ValueError(f"Unknown input kind {kind!r}: use one of {INPUT_KINDS}.")
    return builders[kind]()


def _plain(name: str) -> BaseTool:
    def body(x: int, y: int) -> str:
        return f"{name}({x}, {y})"

    body.__name__ = name
    body.__doc__ = f"A test tool {name}."
    return tool(body)


def _commanding(name: str, make: Callable[[int, int, str], Any]) -> BaseTool:
    def body(x: int, y: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        return make(x, y, tool_call_id)

    body.__name__ = name
    body.__doc__ = f"A test tool {name} that returns a Command."
    return tool(body)


def _answer(name: str, x: int, y: int, call_id: str) -> ToolMessage:
    return ToolMessage(f"{name}({x}, {y})", tool_call_id=call_id)


RETURN_KINDS: dict[str, Callable[[], list[BaseTool]]] = {
    "plain values": lambda: [_plain("foo"), _plain("bar")],
    "foo: Command(update=dict)": lambda: [
        _commanding("foo", lambda x, y, i: Command(update={"messages": [_answer("foo", x, y, i)]})),
        _plain("bar"),
    ],
    "foo: Command(update=list)": lambda: [
        _commanding("foo", lambda x, y, i: Command(update=[_answer("foo", x, y, i)])),
        _plain("bar"),
    ],
    "foo: Command(goto='next')": lambda: [
        _commanding("foo", lambda x, y, i: Command(goto="next")),
        _plain("bar"),
    ],
    "foo: [Command, ToolMessage]": lambda: [
        _commanding("foo", lambda x, y, i: [Command(goto="audit"), _answer("foo", x, y, i)]),
        _plain("bar"),
    ],
    "both: PARENT + Sends": lambda: [
        _commanding("foo", lambda x, y, i: Command(
            graph=Command.PARENT, goto=[Send("A", None), Send("B", None)],
            update={"messages": [_answer("foo", x, y, i)]})),
        _commanding("bar", lambda x, y, i: Command(
            graph=Command.PARENT, goto=[Send("B", None), Send("C", None)],
            update={"messages": [_answer("bar", x, y, i)]})),
    ],
}
"""What the two tools `foo` and `bar` return, by label → a factory of fresh `[foo, bar]`.

Tools that answer their own call get the id through `InjectedToolCallId`, never hard-coded.
Taught in `notebooks/05_return_types.ipynb` (the table) and `notebooks/06_command_and_parent.ipynb`."""


def output_shape(value: Any) -> str:
    """Describe a ToolNode output by its structure, leaving out contents and ids.

    Example:
        ```python
        output_shape({"messages": [ToolMessage("42", tool_call_id="1")]})
        # "{'messages': [ToolMessage]}"
        output_shape([Command(graph=Command.PARENT, goto=[Send("A", None)])])
        # "[Command(graph=PARENT, goto=[Send('A')])]"
        output_shape(Command(graph=Command.PARENT, goto=(Send("A", None), Send("B", None))))
        # "Command(graph=PARENT, goto=(Send('A'), Send('B')))"
        ```

    Taught in `notebooks/05_return_types.ipynb`.
    """
    if isinstance(value, list):
        return "[" + ", ".join(output_shape(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {output_shape(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Send):
        return f"Send({value.node!r})"
    if isinstance(value, Command):
        parts = []
        if value.graph == Command.PARENT:
            parts.append("graph=PARENT")
        if value.update is not None:
            parts.append(f"update={output_shape(value.update)}")
        if value.goto:
            parts.append(f"goto={_goto_shape(value.goto)}")
        return f"Command({', '.join(parts)})"
    return type(value).__name__  # messages by class name, e.g. ToolMessage


def _goto_shape(goto: Any) -> str:
    """A Command's `goto` as written: node names quoted, `Send`s by node, a tuple kept a tuple."""
    if isinstance(goto, str):
        return repr(goto)
    if isinstance(goto, Send):
        return output_shape(goto)
    if isinstance(goto, tuple):
        inner = ", ".join(_goto_shape(g) for g in goto)
        return f"({inner},)" if len(goto) == 1 else f"({inner})"
    if isinstance(goto, list):
        return "[" + ", ".join(_goto_shape(g) for g in goto) + "]"
    return output_shape(goto)


def _width(text: str) -> int:
    """Columns `text` takes in a monospace font: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Format rows as a plain-text table with aligned columns (what strict nbval compares).

    Columns are aligned by display width, so rows with Chinese text line up too.

    Example:
        ```python
        print(text_table(["input", "output"], [("list", "[ToolMessage]")]))
        ```

    Taught in `notebooks/05_return_types.ipynb`.
    """
    if any(len(row) != len(headers) for row in rows):
        raise ValueError(f"Every row needs {len(headers)} cells, one per header: {list(headers)}.")
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c + " " * (w - _width(c)) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
