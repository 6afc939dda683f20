"""Lab 05 — Predict the return type (after `notebooks/05_return_types.ipynb`).

q1: `SHAPES`: for six input kind × tool return cases, the learner writes the shape ToolNode returns,
    in `helpers.returns.output_shape` notation (e.g. `{'messages': [ToolMessage, ToolMessage]}`).
    Cases A–C need lesson 05's rules; D–F need two that lesson 06 teaches (rule two, and the merge of
    `Command.PARENT` with a list of `Send`s), whose outputs lesson 05's closing table shows: the lab
    says so up front, and their explanations link lesson 06.
q2: `CONTENTS`: for four tools returning a dict, an int, None and a list, the exact `content` string
    of the ToolMessage.

Both are checked by running a real ToolNode; every case is reported (✔ or ✘), and every wrong
prediction is explained with its rule (one that does not parse as the notation is told so). Only the
starter's `"?"` counts as "still to write": `""` or `None` are predictions like any other (and
explained when wrong).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from helpers.batch import tool_calls_message
from helpers.labs import Cases, CheckFailed, Exercise, fail, section
from helpers.returns import RETURN_KINDS, make_input, output_shape

LESSON = "05_return_types"
LATER_LESSON = "06_command_and_parent"
"""Where cases D–F's rules are taught (rule two, and the merge of Command.PARENT with a list of Sends)."""
CONTENT_HEADING = "5. How return values become ToolMessage content"
CASES: dict[str, tuple[str, str]] = {
    "A": ("list of messages", "plain values"),
    "B": ("list of ToolCalls", "plain values"),
    "C": ("Pydantic model", "plain values"),
    "D": ("dict", "foo: Command(goto='next')"),
    "E": ("list of messages", "foo: Command(update=list)"),
    "F": ("dict", "both: PARENT + Sends"),
}
"""Case → (input kind from `helpers.returns.INPUT_KINDS`, what foo and bar return)."""

WHY = {
    "A": (
        "rule one: no Command, and the input was a list of messages, so a bare list of "
        "ToolMessages comes back",
        "2. Rule one: list in, list out",
    ),
    "B": (
        "a list of ToolCall dicts is its own input kind, not a 'list of messages': its output is "
        "the dict form, {'messages': [...]}",
        "1. The four input kinds",
    ),
    "C": (
        "rule one: any input that is not a list of messages (dict, Pydantic model, ...) gives "
        "{'messages': [...]}",
        "2. Rule one: list in, list out",
    ),
}
"""Cases A–C: lesson 05's rules → (why, the lesson 05 section that teaches it)."""
WHY_LATER = {
    "D": (
        "rule two (lesson 06; lesson 05's table shows this row): as soon as one tool returns a Command "
        "the output is a list — the Command as is, each plain result wrapped in the input's form "
        "({'messages': [msg]} for a dict)",
        "1. Rule two: a Command makes the output a list",
    ),
    "E": (
        "rule two with list input (lesson 06; lesson 05's table shows this row): the Command stays as "
        "is and bar's plain result becomes [ToolMessage]",
        "1. Rule two: a Command makes the output a list",
    ),
    "F": (
        "PARENT Commands whose goto is a LIST of Sends are merged into ONE Command, appended last: the "
        "Sends concatenated (B twice, no de-duplication) and the updates DROPPED (a bare Send or a "
        "tuple of Sends would be kept, update included)",
        "4. `Command.PARENT` with `Send`: merged into one Command",
    ),
}
"""Cases D–F: rules lesson 06 teaches (lesson 05's closing table only shows their outputs) →
(why, the lesson 06 section that teaches it)."""
DETAILED = 3
"""Wrong predictions explained in full; later ones take one line each (the verdict fits one screen)."""
TODO = "?"
"""The starter's placeholder: the only value read as "still to write"."""


@functools.cache
def actual_shape(case: str) -> str:
    """Run ToolNode on `case` for real and name the shape of what it returns (once per kernel)."""
    kind, returns = CASES[case]
    out = ToolNode(RETURN_KINDS[returns]()).invoke(make_input(kind), runtime=Runtime())
    return output_shape(out)


# -- reading a prediction: every spelling of the same shape is the same shape --------------------------
class _Canonical(ast.NodeTransformer):
    """`Command.PARENT` / `'__parent__'` → `PARENT`; `Send(node='A', arg=None)` → `Send('A')`;
    keyword order ignored; `ToolMessage(...)` or `'ToolMessage'` → `ToolMessage`."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # noqa: N802 - ast's visitor names
        if node.attr == "PARENT":
            return ast.Name("PARENT", ast.Load())
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:  # noqa: N802
        if node.value == "__parent__":
            return ast.Name("PARENT", ast.Load())
        if isinstance(node.value, str) and node.value.endswith("Message"):
            return ast.Name(node.value, ast.Load())
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:  # noqa: N802
        self.generic_visit(node)
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name == "Send":
            target = (
                node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "node"), None)
            )
            return ast.Call(ast.Name("Send", ast.Load()), [target] if target is not None else [], [])
        if name == "Command":
            keywords = [
                k for k in node.keywords if not (isinstance(k.value, ast.Constant) and k.value.value is None)
            ]
            return ast.Call(node.func, node.args, sorted(keywords, key=lambda k: k.arg or ""))
        if name and name.endswith("Message"):
            return ast.Name(name, ast.Load())
        return node


def _render(value: Any) -> str:
    """A prediction written as Python objects (classes, lists, dicts) in `output_shape` notation."""
    if isinstance(value, str):
        return value
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Send):
        return f"Send({value.node!r})"
    if isinstance(value, Command):  # its fields rendered here: `update=[ToolMessage]` may hold classes
        parts = ["graph=PARENT"] if value.graph == Command.PARENT else []
        if value.update is not None:
            parts.append(f"update={_render(value.update)}")
        if isinstance(value.goto, str) and value.goto:
            parts.append(f"goto={value.goto!r}")
        elif value.goto:
            parts.append(f"goto={_render(value.goto)}")
        return f"Command({', '.join(parts)})"
    return repr(value)


def parses(shape: Any) -> bool:
    """True when a prediction reads as Python (the notation's syntax), whatever shape it names."""
    try:
        ast.parse(_render(shape).strip(), mode="eval")
    except SyntaxError:
        return False
    return True


def canonical(shape: Any) -> str:
    """One spelling per shape: spaces, quote style, keyword order, `Command.PARENT` vs `PARENT` and
    `Send(node='A', arg=None)` vs `Send('A')` do not matter."""
    text = _render(shape).strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return "".join(text.split()).replace('"', "'")
    return ast.dump(_Canonical().visit(tree), annotate_fields=False, include_attributes=False)


def _predictions(value: Any, keys: list[str], name: str, key: str) -> Mapping[str, Any]:
    """The learner's dict, its keys checked; "still to write" only for the starter's '?'."""
    if not isinstance(value, Mapping):
        raise fail(
            f"`{name}` must be a dict with one prediction per case.",
            key=key,
            where="the exercise's cell above (the starter's dict)",
            expected=f"a dict with the keys {keys}",
            observed=f"a {type(value).__name__}: {value!r}"[:200],
        )
    missing = [k for k in keys if k not in value]
    extra = [k for k in value if k not in keys]
    if missing or extra:
        hint = ""
        if any(not isinstance(k, str) for k in extra):
            hint = " — the keys are the strings of the table above (quotes included), not numbers or names"
        raise fail(
            f"`{name}` must have exactly one prediction per case.",
            key=key,
            where="the exercise's cell above (the starter's dict)",
            expected=f"the keys {keys}",
            observed=(f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {sorted(map(repr, extra))}" if extra else "")
            + hint,
        )
    todo = [k for k in keys if value[k] is ... or (isinstance(value[k], str) and value[k].strip() == TODO)]
    if todo:
        raise CheckFailed(
            f"{key} — not yet: {len(todo)} prediction(s) still to write: {', '.join(todo)}.\n"
            f"  Replace each '?' in {name} with your prediction, then run both cells again.\n"
            f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()"
        )
    return value


def check_shapes(SHAPES: Any) -> str:  # noqa: N803 - the learner's constant
    key = "q1"
    predictions = _predictions(SHAPES, list(CASES), "SHAPES", key)
    cases, shown = Cases(key), set()
    for case, (kind, returns) in CASES.items():
        real, mine = actual_shape(case), predictions[case]
        label = f"{case} ({kind}; {returns})"
        if canonical(mine) == canonical(real):
            cases.ok(label, real)
            continue
        if len(cases.failed) >= DETAILED:
            cases.bad(
                f"{label} — expected {real} (the why once the cases above pass)", expected="", observed=""
            )
            continue
        if case in WHY:
            why, heading = WHY[case]
            where = section(LESSON, heading)
        else:
            why, later_heading = WHY_LATER[case]
            where = section(LATER_LESSON, later_heading)
        if mine is None or (isinstance(mine, str) and not mine.strip()):
            why = f"{why} (ToolNode always returns something: a list or a dict)"
        elif not parses(mine):
            why = (
                "your prediction does not parse as the notation: write it as a Python expression of "
                "lists, dicts, message class names, `Command(...)` and `Send(...)`, like the expected line"
            )
        cases.bad(
            label,
            expected=real,
            observed=f"{mine!r} (your prediction)",
            why=why,
            where="" if where in shown else where,
        )
        shown.add(where)
    return cases.result(f"all {len(CASES)} shapes predicted right — each checked against a real ToolNode.")


def make_content_tools() -> list[BaseTool]:
    """`forecast` returns a dict, `count_sights` an int, `reserve` None, `cities` a list of str."""

    @tool
    def forecast(city: str) -> dict:
        """Today's forecast for a city."""
        return {"city": city, "temp": "25 °C"}

    @tool
    def count_sights(city: str) -> int:
        """How many sights a city has."""
        return 7

    @tool
    def reserve(city: str) -> None:
        """Reserve a table; returns nothing."""
        return None

    @tool
    def cities(city: str) -> list:
        """Cities near a city."""
        return ["Versailles", "Reims"]

    return [forecast, count_sights, reserve, cities]


CONTENT_WHY = {
    "json": "a dict is not a str: langchain-core serialises it with json.dumps(..., ensure_ascii=False): "
    "double quotes, a space after ':' and ',', '°' kept as is",
    "int": "an int is not a str: langchain-core's json.dumps(7) is '7' — a string",
    "none": "json.dumps(None) is 'null', not 'None' and not ''",
    "list": "langchain-core keeps a list of plain strings as a list, but it is not a list of content "
    "blocks, so ToolNode's own step serialises it with json.dumps(..., ensure_ascii=False)",
}


@functools.cache
def _contents() -> tuple[tuple[str, str], ...]:
    tools = make_content_tools()
    calls = tool_calls_message([(t.name, {"city": "Paris"}) for t in tools])
    out = ToolNode(tools).invoke([calls], runtime=Runtime())
    return tuple((message.name, message.content) for message in out)


def actual_contents() -> dict[str, str]:
    """Each content tool's ToolMessage content, from a real ToolNode (run once per kernel)."""
    return dict(_contents())


def check_contents(CONTENTS: Any) -> str:  # noqa: N803
    key = "q2"
    names = [t.name for t in make_content_tools()]
    predictions = _predictions(CONTENTS, names, "CONTENTS", key)
    real = actual_contents()
    why = dict(zip(names, ("json", "int", "none", "list"), strict=True))
    cases, where = Cases(key), section(LESSON, CONTENT_HEADING)
    for name in names:
        mine = predictions[name]
        if type(mine) is str and mine == real[name]:  # a str subclass could make `==` say anything
            cases.ok(name, repr(real[name]))
            continue
        reason = CONTENT_WHY[why[name]]
        if isinstance(mine, str) and type(mine) is not str:
            reason = f"write a plain str literal, not a {type(mine).__name__} (a subclass of str) — {reason}"
            mine = str.__str__(mine)
        elif not isinstance(mine, str):
            reason = (
                f"you wrote the {type(mine).__name__} {mine!r}: a ToolMessage's content here is always a str "
                f"(the model reads text) — {reason}"
            )
        cases.bad(
            name, expected=repr(real[name]), observed=f"{mine!r} (your prediction)", why=reason, where=where
        )
        where = ""  # one link is enough
    return cases.result(f"all {len(names)} contents exact — each checked against a real ToolNode.")


q1 = Exercise(
    "05",
    "q1",
    ("SHAPES",),
    check_shapes,
    (
        "Two rules decide. Rule one (no Command anywhere): a list of messages in → a bare list out; "
        "every other input → {'messages': [...]}. Rule two: one Command makes the whole output a list.",
        "Which input kinds count as 'list'? Only a list of messages: a list of ToolCall dicts is its own "
        "kind and comes back as a dict. Cases D-F are lesson 06's rules (lesson 05's table shows them): "
        "under rule two each plain result is wrapped the way rule one would wrap it alone, and PARENT "
        "Commands whose goto is a list of Sends merge into one Command, appended last, updates dropped.",
    ),
)
q2 = Exercise(
    "05",
    "q2",
    ("CONTENTS",),
    check_contents,
    (
        "Content is always a string here. Ask: is the return value already a str? If not, which "
        "function turns it into one?",
        "Two steps. langchain-core JSON-encodes a dict, an int or None with json.dumps(value, "
        "ensure_ascii=False): None becomes 'null', 7 becomes '7', a dict keeps '°'. A list of plain "
        "strings it keeps as a list; ToolNode's own step then JSON-encodes it, as it is not content blocks.",
    ),
)

__all__ = ["CASES", "CheckFailed", "canonical", "make_content_tools", "q1", "q2"]
