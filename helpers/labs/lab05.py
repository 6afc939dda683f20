"""Lab 05 — Predict the return type (after `notebooks/05_return_types.ipynb`).

q1: `SHAPES`: for six input kind × tool return cases, the learner writes the shape ToolNode returns,
    in `helpers.returns.output_shape` notation (e.g. `{'messages': [ToolMessage, ToolMessage]}`).
q2: `CONTENTS`: for four tools returning a dict, an int, None and a list, the exact `content` string
    of the ToolMessage.

Both are checked by running a real ToolNode; every wrong prediction is explained with its rule.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from helpers.batch import tool_calls_message
from helpers.labs import CheckFailed, Exercise, fail, section
from helpers.returns import RETURN_KINDS, make_input, output_shape

LESSON = "05_return_types"
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
    "D": (
        "rule two: as soon as one tool returns a Command the output is a list — the Command as is, "
        "each plain result wrapped in the input's form ({'messages': [msg]} for a dict)",
        "6. The whole picture: a live table",
    ),
    "E": (
        "rule two with list input: the Command stays as is and bar's plain result becomes [ToolMessage]",
        "6. The whole picture: a live table",
    ),
    "F": (
        "PARENT Commands whose goto is all Sends are merged into ONE Command, appended last: the "
        "Sends concatenated (B twice, no de-duplication) and the updates DROPPED",
        "6. The whole picture: a live table",
    ),
}


def actual_shape(case: str) -> str:
    """Run ToolNode on `case` for real and name the shape of what it returns."""
    kind, returns = CASES[case]
    out = ToolNode(RETURN_KINDS[returns]()).invoke(make_input(kind), runtime=Runtime())
    return output_shape(out)


def _norm(shape: Any) -> str:
    return re.sub(r"\s+", "", str(shape)).replace('"', "'")


def _predictions(value: Any, keys: list[str], name: str, key: str) -> dict[str, Any]:
    if not isinstance(value, dict) or sorted(value) != sorted(keys):
        raise fail(
            f"`{name}` must be a dict with one prediction per case.",
            key=key,
            where="the exercise's table above",
            expected=f"keys {keys}",
            observed=f"{sorted(value) if isinstance(value, dict) else type(value).__name__}",
        )
    todo = [k for k in keys if value[k] in ("?", "", None, ...)]
    if todo:
        raise CheckFailed(
            f"{key} — not yet: {len(todo)} prediction(s) still to write: {', '.join(todo)}.\n"
            f"  Replace each '?' in {name} with your prediction, then run both cells again."
        )
    return value


def check_shapes(SHAPES: Any) -> str:  # noqa: N803 - the learner's constant
    key = "q1"
    predictions = _predictions(SHAPES, list(CASES), "SHAPES", key)
    wrong = []
    for case in CASES:
        real = actual_shape(case)
        if _norm(predictions[case]) != _norm(real):
            wrong.append((case, real))
    if wrong:
        lines = [
            f"{key} — not yet: {len(wrong)} of {len(CASES)} predictions differ from what ToolNode returned."
        ]
        for case, real in wrong[:3]:
            kind, returns = CASES[case]
            why, heading = WHY[case]
            lines += [
                f"  {case} ({kind}; {returns})",
                f"    expected: {real}",
                f"    observed: {predictions[case]}  (your prediction)",
                f"    why:      {why}",
                f"    look at:  {section(LESSON, heading)}",
            ]
        if len(wrong) > 3:
            lines.append(
                f"  … and {len(wrong) - 3} more ({', '.join(c for c, _ in wrong[3:])}): fix these first."
            )
        lines.append(f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()")
        raise CheckFailed("\n".join(lines))
    return f"all {len(CASES)} shapes predicted right — each checked against a real ToolNode."


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
    "json": "a value that is not a str is serialised with json.dumps(..., ensure_ascii=False): "
    "double quotes, a space after ':' and ',', '°' kept as is",
    "int": "an int is not a str: json.dumps(7) is '7' — a string",
    "none": "json.dumps(None) is 'null', not 'None' and not ''",
    "list": "a list of plain strings is not a list of content blocks: it is serialised with json.dumps",
}


def actual_contents() -> dict[str, str]:
    tools = make_content_tools()
    calls = tool_calls_message([(t.name, {"city": "Paris"}) for t in tools])
    out = ToolNode(tools).invoke([calls], runtime=Runtime())
    return {message.name: message.content for message in out}


def check_contents(CONTENTS: Any) -> str:  # noqa: N803
    key = "q2"
    names = [t.name for t in make_content_tools()]
    predictions = _predictions(CONTENTS, names, "CONTENTS", key)
    real = actual_contents()
    why = dict(zip(names, ("json", "int", "none", "list"), strict=True))
    wrong = [name for name in names if predictions[name] != real[name]]
    if wrong:
        lines = [
            f"{key} — not yet: {len(wrong)} of {len(names)} contents differ from what ToolNode produced."
        ]
        for name in wrong:
            lines += [
                f"  {name}",
                f"    expected: {real[name]!r}",
                f"    observed: {predictions[name]!r}  (your prediction)",
                f"    why:      {CONTENT_WHY[why[name]]}",
            ]
        lines.append(
            f"  look at:  {section(LESSON, '5. How plain return values become ToolMessage content')}"
        )
        lines.append(f"  stuck?    {key}.hint() for a nudge, {key}.hint(2) for more, {key}.solution()")
        raise CheckFailed("\n".join(lines))
    return f"all {len(names)} contents exact — each checked against a real ToolNode."


q1 = Exercise(
    "05",
    "q1",
    ("SHAPES",),
    check_shapes,
    (
        "Two rules decide. Rule one (no Command anywhere): a list of messages in → a bare list out; "
        "every other input → {'messages': [...]}. Rule two: one Command makes the whole output a list.",
        "Which input kinds count as 'list'? Only a list of messages: a list of ToolCall dicts is its own "
        "kind and comes back as a dict. Under rule two each plain result is wrapped the way rule one would "
        "wrap it alone. PARENT Commands with all-Send gotos merge into one Command, appended last, "
        "updates dropped.",
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
        "langchain-core calls json.dumps(value, ensure_ascii=False) for anything that is not a str "
        "(or a list of content blocks): so None becomes 'null', 7 becomes '7', and a dict keeps '°'.",
    ),
)

__all__ = ["CASES", "CheckFailed", "make_content_tools", "q1", "q2"]
