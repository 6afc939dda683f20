"""Lab 05 — Predict the return type (after `notebooks/05_return_types.ipynb`).

q1: `SHAPES`: for six input kind × tool return cases, the learner writes the shape ToolNode returns,
    in `helpers.returns.output_shape` notation (e.g. `{'messages': [ToolMessage, ToolMessage]}`).
    Cases A–C need lesson 05's rules; D–F need two that lesson 06 teaches (rule two, and the merge of
    `Command.PARENT` with a list of `Send`s), whose outputs lesson 05's closing table shows: the lab
    says so up front, and their explanations link lesson 06.
q2: `CONTENTS`: for four tools returning a dict, an int, None and a list, the exact `content` string
    of the ToolMessage.

Both are checked by running a real ToolNode inside the check, on every check: nothing this module
exports computes or holds an answer. Every case is reported (✔ or ✘), and every wrong prediction is
explained with its rule (one that does not parse as the notation is told so). Only the starter's
`"?"` counts as "still to write": `""` or `None` are predictions like any other (and explained when
wrong).

A prediction is read as plain data the check rebuilds itself: a `str` (exactly `str`, no subclass),
or the same shape written with lists, dicts, `None`, langchain's own message classes, `Command` and
`Send` (each of exactly those types). Anything else — a str subclass, an object with its own `==` or
`strip()`, a class that only carries a message class's name — is refused and named.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from helpers.batch import tool_calls_message
from helpers.labs import Cases, CheckFailed, Exercise, fail, run_learner, section
from helpers.returns import RETURN_KINDS, make_input, output_shape

LESSON = "05_return_types"
LATER_LESSON = "06_command_and_parent"
"""Where cases D–F's rules are taught (rule two, and the merge of Command.PARENT with a list of Sends)."""
CONTENT_HEADING = "5. How return values become ToolMessage content"
RULE_ONE = "2. Rule one: list in, list out"
INPUT_KINDS = "1. The four input kinds"
RULE_TWO = "1. Rule two: a Command makes the output a list"
MERGED = "4. `Command.PARENT` with `Send`: merged into one Command"

CASES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "A": ("list of messages", "plain values"),
        "B": ("list of ToolCalls", "plain values"),
        "C": ("Pydantic model", "plain values"),
        "D": ("dict", "foo: Command(goto='next')"),
        "E": ("list of messages", "foo: Command(update=list)"),
        "F": ("dict", "both: PARENT + Sends"),
    }
)
"""Case → (input kind from `helpers.returns.INPUT_KINDS`, what foo and bar return)."""

WHY: Mapping[str, tuple[str, str]] = {
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
WHY = MappingProxyType(WHY)
"""Cases A–C: lesson 05's rules → (why, the lesson 05 section that teaches it)."""
WHY_LATER: Mapping[str, tuple[str, str]] = {
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
WHY_LATER = MappingProxyType(WHY_LATER)
"""Cases D–F: rules lesson 06 teaches (lesson 05's closing table only shows their outputs) →
(why, the lesson 06 section that teaches it)."""
DETAILED = 3
"""Wrong predictions explained in full; later ones take one line each (the verdict fits one screen)."""
TODO = "?"
"""The starter's placeholder: the only value read as "still to write"."""
CONTENT_NAMES = ("forecast", "count_sights", "reserve", "cities")
"""The content tools, in the order the lab shows them."""
_CONTENT_WHY: Mapping[str, str] = MappingProxyType(
    {
        "forecast": "a dict is not a str: langchain-core serialises it with json.dumps(..., "
        "ensure_ascii=False): double quotes, a space after ':' and ',', '°' kept as is",
        "count_sights": "an int is not a str: langchain-core's json.dumps(7) is '7' — a string",
        "reserve": "json.dumps(None) is 'null', not 'None' and not ''",
        "cities": "langchain-core keeps a list of plain strings as a list, but it is not a list of "
        "content blocks, so ToolNode's own step serialises it with json.dumps(..., ensure_ascii=False)",
    }
)
"""Content tool → the rule that makes its content."""

# What the check runs, bound once: rebinding a name in `helpers.returns` later changes nothing here.
_RETURNS: Mapping[str, Callable[[], list[BaseTool]]] = MappingProxyType(
    {returns: RETURN_KINDS[returns] for _, returns in CASES.values()}
)
_MESSAGE_CLASSES = (
    (ToolMessage, "ToolMessage"),
    (AIMessage, "AIMessage"),
    (HumanMessage, "HumanMessage"),
    (SystemMessage, "SystemMessage"),
)
"""The message classes a prediction may hold as objects, each with the name the notation uses."""


# -- the real answers: computed inside the check, on every check --------------------------------------
def _real_shapes() -> dict[str, str]:
    """Each case run through a real ToolNode, its output named in the notation."""
    shapes = {}
    for case, (kind, returns) in CASES.items():
        out = ToolNode(_RETURNS[returns]()).invoke(make_input(kind), runtime=Runtime())
        shapes[case] = output_shape(out)
    return shapes


def _content_tools() -> list[BaseTool]:
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


def make_content_tools() -> list[BaseTool]:
    """`forecast` returns a dict, `count_sights` an int, `reserve` None, `cities` a list of str."""
    return _content_tools()


def _real_contents() -> dict[str, str]:
    """Each content tool's ToolMessage content, from a real ToolNode."""
    tools = _content_tools()
    calls = tool_calls_message([(t.name, {"city": "Paris"}) for t in tools])
    out = ToolNode(tools).invoke([calls], runtime=Runtime())
    return {message.name: message.content for message in out}


# -- reading a prediction: plain data only, every spelling of the same shape the same -----------------
class _NotPlain(Exception):
    """A prediction holds something that is not plain data of the notation (the message says what)."""


def _type_name(value: Any) -> str:
    return type.__dict__["__name__"].__get__(type(value))  # not a metaclass's own __name__


def _notation(value: Any, depth: int = 0) -> str:
    """`value` written in the notation, rebuilt from plain parts only; `_NotPlain` otherwise."""
    kind = type(value)
    if depth > 12:
        raise _NotPlain("a prediction nested deeper than any ToolNode output")
    if kind is str:
        return value
    if value is None:
        return "None"
    if kind is list or kind is tuple:
        return "[" + ", ".join(_notation(v, depth + 1) for v in value) + "]"
    if kind is dict:
        if any(type(k) is not str for k in value):
            raise _NotPlain("a dict whose keys are not all plain str")
        return "{" + ", ".join(f"{k!r}: {_notation(v, depth + 1)}" for k, v in value.items()) + "}"
    for cls, name in _MESSAGE_CLASSES:
        if value is cls:
            return name
    if kind is Send:
        if type(value.node) is not str:
            raise _NotPlain("a Send whose node is not a plain str")
        return f"Send({value.node!r})"
    if kind is Command:
        return _command_notation(value, depth)
    if issubclass(kind, str):
        raise _NotPlain(f"a {_type_name(value)} (a subclass of str): write a plain str literal")
    if issubclass(kind, type):
        raise _NotPlain(
            f"a class of your own ({type.__dict__['__name__'].__get__(value)!r}), not langchain's message "
            "class: write the shape as a str"
        )
    raise _NotPlain(f"a {_type_name(value)}: write the shape as a str")


def _command_notation(value: Command, depth: int) -> str:
    graph, update, goto = value.graph, value.update, value.goto
    if graph is not None and type(graph) is not str:
        raise _NotPlain("a Command whose graph is not a plain str")
    parts = ["graph=PARENT"] if graph == Command.PARENT else []
    if update is not None:
        parts.append(f"update={_notation(update, depth + 1)}")
    if type(goto) is str and goto:
        parts.append(f"goto={goto!r}")
    elif type(goto) is not str and goto is not None and (type(goto) not in (list, tuple) or goto):
        parts.append(f"goto={_notation(goto, depth + 1)}")
    return f"Command({', '.join(parts)})"


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


def _parses(text: str) -> bool:
    """True when a prediction reads as Python (the notation's syntax), whatever shape it names."""
    try:
        ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _canonical(text: str) -> str:
    """One spelling per shape: spaces, quote style, keyword order, `Command.PARENT` vs `PARENT` and
    `Send(node='A', arg=None)` vs `Send('A')` do not matter."""
    text = text.strip()
    if len(text) > 2000:
        return text  # longer than any shape here: compared as written, never parsed
    try:
        tree = ast.parse(text, mode="eval")
        return ast.dump(_Canonical().visit(tree), annotate_fields=False, include_attributes=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "".join(text.split()).replace('"', "'")


def _copy_mapping(value: Any) -> dict[Any, Any]:
    """The learner's mapping as a plain dict (runs the mapping's own methods: `run_learner` calls it)."""
    return {key: value[key] for key in list(value.keys())}


def _read(value: Any, keys: tuple[str, ...], name: str, key: str) -> dict[str, Any]:
    """The learner's dict as a plain dict of predictions, its keys checked; "still to write" only for
    the starter's '?'."""
    where = "the exercise's cell above (the starter's dict)"
    if type(value) is dict:
        found = dict(value)
    elif issubclass(type(value), Mapping):  # not isinstance: that reads the object's own __class__
        found = run_learner(_copy_mapping, value, name=f"reading your {name}")
    else:
        raise fail(
            f"`{name}` must be a dict with one prediction per case.",
            key=key,
            where=where,
            expected=f"a dict with the keys {list(keys)}",
            observed=f"a {_type_name(value)}",
        )
    names = [k for k in found if type(k) is str]
    missing = [k for k in keys if k not in names]
    extra = [k for k in names if k not in keys] + [k for k in found if type(k) is not str]
    if missing or extra:
        hint = ""
        if any(type(k) is not str for k in extra):
            hint = " — the keys are the strings of the table above (quotes included), not numbers or names"
        shown = sorted(repr(k) if type(k) in (str, int, float, bool) else f"a {_type_name(k)}" for k in extra)
        raise fail(
            f"`{name}` must have exactly one prediction per case.",
            key=key,
            where=where,
            expected=f"the keys {list(keys)}",
            observed=(f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {shown}" if extra else "")
            + hint,
        )
    predictions = {k: found[k] for k in keys}
    todo = [k for k, v in predictions.items() if v is ... or (type(v) is str and v.strip() == TODO)]
    if todo:
        raise CheckFailed(
            f"{key} — not yet: {len(todo)} prediction(s) still to write: {', '.join(todo)}.\n"
            f"  Replace each '?' in {name} with your prediction, then run both cells again.\n"
            f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()"
        )
    return predictions


# -- q1: shapes ----------------------------------------------------------------------------------------
def _taught(case: str) -> str:
    """The lesson section that teaches `case`'s rule."""
    if case in ("A", "C"):
        return section(LESSON, RULE_ONE)
    if case == "B":
        return section(LESSON, INPUT_KINDS)
    if case in ("D", "E"):
        return section(LATER_LESSON, RULE_TWO)
    return section(LATER_LESSON, MERGED)


def case_shape(cases: Cases, case: str, mine: Any, real: str, shown: set[str]) -> None:
    """One shape prediction: right, or wrong with its rule (named once per section)."""
    kind, returns = CASES[case]
    label = f"{case} ({kind}; {returns})"
    try:
        text = _notation(mine)
    except _NotPlain as problem:
        cases.bad(
            label,
            expected=real,
            observed=f"{problem} (your prediction)",
            why="a prediction is plain data: the check reads only a str or lists, dicts, Command, Send "
            "and langchain's message classes themselves, each of exactly that type",
        )
        return
    if _canonical(text) == _canonical(real):
        cases.ok(label, real)
        return
    if len(cases.failed) >= DETAILED:
        cases.bad(f"{label} — expected {real} (the why once the cases above pass)", expected="", observed="")
        return
    why = (WHY.get(case) or WHY_LATER[case])[0]
    if mine is None or not text.strip():
        why = f"{why} (ToolNode always returns something: a list or a dict)"
    elif not _parses(text):
        why = (
            "your prediction does not parse as the notation: write it as a Python expression of "
            "lists, dicts, message class names, `Command(...)` and `Send(...)`, like the expected line"
        )
    where = _taught(case)
    observed = repr(mine) if type(mine) is str else text
    cases.bad(
        label,
        expected=real,
        observed=f"{observed} (your prediction)",
        why=why,
        where="" if where in shown else where,
    )
    shown.add(where)


def check_shapes(SHAPES: Any) -> str:  # noqa: N803 - the learner's constant
    key = "q1"
    predictions = _read(SHAPES, tuple(CASES), "SHAPES", key)
    real = _real_shapes()
    cases, shown = Cases(key), set()
    for case in CASES:
        case_shape(cases, case, predictions[case], real[case], shown)
    return cases.result(f"all {len(CASES)} shapes predicted right — each checked against a real ToolNode.")


# -- q2: contents --------------------------------------------------------------------------------------
def case_content(cases: Cases, name: str, mine: Any, real: str) -> None:
    """One content prediction: exactly the str ToolNode wrote, or the rule that makes it."""
    if type(mine) is str and mine == real:  # a str subclass could make `==` say anything
        cases.ok(name, repr(real))
        return
    reason = _CONTENT_WHY[name]
    if issubclass(type(mine), str):
        reason = f"write a plain str literal, not a {_type_name(mine)} (a subclass of str) — {reason}"
        observed = repr(str.__str__(mine))
    elif mine is None or type(mine) in (int, float, bool, list, tuple, dict):
        observed = repr(mine)
        reason = (
            f"you wrote the {_type_name(mine)} {observed}: a ToolMessage's content here is always a str "
            f"(the model reads text) — {reason}"
        )
    elif type(mine) is not str:
        observed = f"a {_type_name(mine)}"
        reason = f"a ToolMessage's content here is always a str (the model reads text) — {reason}"
    else:
        observed = repr(mine)
    cases.bad(
        name,
        expected=repr(real),
        observed=f"{observed} (your prediction)",
        why=reason,
        where=section(LESSON, CONTENT_HEADING) if not cases.failed else "",
    )


def check_contents(CONTENTS: Any) -> str:  # noqa: N803
    key = "q2"
    predictions = _read(CONTENTS, CONTENT_NAMES, "CONTENTS", key)
    real = _real_contents()
    cases = Cases(key)
    for name in CONTENT_NAMES:
        case_content(cases, name, predictions[name], real[name])
    return cases.result(f"all {len(CONTENT_NAMES)} contents exact — each checked against a real ToolNode.")


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

__all__ = ["CASES", "CheckFailed", "make_content_tools", "q1", "q2"]
