"""Lab 05 against a determined learner: nothing the notebook imports computes or holds an answer;
a prediction is read as plain data (a str subclass whose `strip()` or `==` lies, a class named like the
answer, an always-equal object are refused and named); correct predictions written differently pass;
the beginner's wrong predictions are explained; an exception raised by the learner's own mapping is a
verdict. The checks draw nothing, so every run is the same run: each answer is still judged twice."""

from __future__ import annotations

import inspect
import json
import types
from collections import OrderedDict

import pytest
from lab_checks import assert_verdicts, rejected, verdicts
from langchain_core.messages import ToolMessage
from langgraph.types import Command, Send

from helpers.labs import lab05, solution_namespace

SOL = solution_namespace("05")
SHAPES, CONTENTS = SOL["SHAPES"], SOL["CONTENTS"]


class LyingStr(str):
    """A str that says the right thing when stripped, compared or hashed."""

    def __init__(self, value):
        self.value = value

    def strip(self, *args):
        return SHAPES[self.value] if self.value in SHAPES else CONTENTS[self.value]

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 0


def named_like(answer: str) -> type:
    """A class whose __name__ is the expected answer."""
    return type(answer, (), {})


class RaisingMapping(dict):
    """A mapping whose lookups raise what the learner's code raises."""

    def __init__(self, data, error):
        super().__init__(data)
        self.error = error

    def keys(self):
        raise self.error


def shapes(**changes):
    return {"SHAPES": {**SHAPES, **changes}}


def contents(**changes):
    return {"CONTENTS": {**CONTENTS, **changes}}


def judge(exercise, answers: dict) -> dict[str, str]:
    """Each answer's verdict, judged twice: the two verdicts must agree (nothing is drawn)."""
    first = verdicts(lambda ns: exercise.run(ns), answers)
    again = verdicts(lambda ns: exercise.run(ns), answers)
    assert first == again
    return first


def test_q1_accepts_right_shapes_however_written():
    answers = {
        "solution": {"SHAPES": SHAPES},
        "spaces and quotes": shapes(
            A="[ToolMessage,ToolMessage]", D='[ Command( goto = "next" ), { "messages" : [ ToolMessage ] } ]'
        ),
        "keyword order and PARENT": shapes(
            F="[Command(goto=[Send(node='A', arg=None), Send('B', None), Send('B'), Send(node='C')], "
            "graph=Command.PARENT)]"
        ),
        "python objects": shapes(
            A=[ToolMessage, ToolMessage],
            E=[Command(update=[ToolMessage]), [ToolMessage]],
            F=[
                Command(
                    graph=Command.PARENT, goto=[Send("A", 0), Send("B", 1), Send("B", None), Send("C", 2)]
                )
            ],
        ),
        "a read-only mapping": {"SHAPES": types.MappingProxyType(dict(reversed(list(SHAPES.items()))))},
    }
    assert_verdicts(judge(lab05.q1, answers), dict.fromkeys(answers, ()))


def test_q1_refuses_fakes_and_beginner_mistakes_every_time():
    right_b = SHAPES["B"]
    answers = {
        "str subclass whose strip() lies": shapes(B=LyingStr("B")),
        "class named like the answer": shapes(B=named_like(right_b)),
        "classes named like messages": shapes(A=[named_like("ToolMessage"), named_like("ToolMessage")]),
        "always-equal object": shapes(C=AlwaysEqual()),
        "list subclass": shapes(A=type("L", (list,), {})(["ToolMessage", "ToolMessage"])),
        "tool calls read as a list": shapes(B="[ToolMessage, ToolMessage]"),
        "rule two forgotten": shapes(D="{'messages': [ToolMessage, ToolMessage]}"),
        "parent update kept": shapes(
            F="[Command(graph=PARENT, update={'messages': [ToolMessage]}, goto=[Send('A'), Send('B')])]"
        ),
        "sends de-duplicated": shapes(F="[Command(graph=PARENT, goto=[Send('A'), Send('B'), Send('C')])]"),
        "not the notation": shapes(A="two ToolMessages"),
        "keys as names": {"SHAPES": {**{k.lower(): v for k, v in SHAPES.items()}}},
        "a list": {"SHAPES": list(SHAPES.values())},
        "mapping raising SystemExit": {"SHAPES": RaisingMapping(SHAPES, SystemExit(0))},
        "mapping raising GeneratorExit": {"SHAPES": RaisingMapping(SHAPES, GeneratorExit())},
    }
    assert_verdicts(
        judge(lab05.q1, answers),
        {
            "str subclass whose strip() lies": ("✘ B", "a LyingStr (a subclass of str)", "plain data"),
            "class named like the answer": ("✘ B", "a class of your own", "not langchain's message class"),
            "classes named like messages": ("✘ A", "a class of your own ('ToolMessage')"),
            "always-equal object": ("✘ C", "a AlwaysEqual: write the shape as a str"),
            "list subclass": ("✘ A", "a L: write the shape as a str"),
            "tool calls read as a list": ("its own input kind", "✘ B", "✔ A"),
            "rule two forgotten": ("rule two (lesson 06", "✘ D"),
            "parent update kept": ("updates DROPPED", "a LIST of Sends"),
            "sends de-duplicated": ("no de-duplication",),
            "not the notation": ("does not parse as the notation",),
            "keys as names": ("missing ['A', 'B', 'C', 'D', 'E', 'F']", "unexpected"),
            "a list": ("must be a dict", "a list"),
            "mapping raising SystemExit": ("your code raised SystemExit", "in `keys`"),
            "mapping raising GeneratorExit": ("your code raised GeneratorExit", "in `keys`"),
        },
    )


def test_q2_accepts_right_contents_however_written():
    answers = {
        "solution": {"CONTENTS": CONTENTS},
        "computed with json.dumps": contents(
            forecast=json.dumps({"city": "Paris", "temp": "25 °C"}, ensure_ascii=False),
            reserve=json.dumps(None),
            cities=json.dumps(["Versailles", "Reims"]),
        ),
        "escapes in source": contents(
            forecast='{"city": "Paris", "temp": "25 \u00b0C"}', count_sights=str(7)
        ),
        "an OrderedDict in another order": {"CONTENTS": OrderedDict(reversed(list(CONTENTS.items())))},
    }
    assert_verdicts(judge(lab05.q2, answers), dict.fromkeys(answers, ()))


def test_q2_refuses_fakes_and_beginner_mistakes_every_time():
    answers = {
        "str subclass equal to everything": {"CONTENTS": {k: LyingStr(k) for k in CONTENTS}},
        "always-equal object": contents(reserve=AlwaysEqual()),
        "python repr of the dict": contents(forecast="{'city': 'Paris', 'temp': '25 °C'}"),
        "ascii escaped": contents(forecast='{"city": "Paris", "temp": "25 \\u00b0C"}'),
        "None as a string": contents(reserve="None"),
        "None itself": contents(reserve=None),
        "the int": contents(count_sights=7),
        "list repr": contents(cities="['Versailles', 'Reims']"),
    }
    assert_verdicts(
        judge(lab05.q2, answers),
        {
            "str subclass equal to everything": ("4 of 4 cases failed", "a subclass of str"),
            "always-equal object": ("✘ reserve", "a AlwaysEqual", "always a str"),
            "python repr of the dict": ("double quotes",),
            "ascii escaped": ("ensure_ascii=False",),
            "None as a string": ("'null'",),
            "None itself": ("you wrote the NoneType None", "always a str"),
            "the int": ("you wrote the int 7",),
            "list repr": ("ToolNode's own step",),
        },
    )


def test_nothing_the_notebook_imports_computes_or_holds_an_answer():
    """`SHAPES = {k: lab05.actual_shape(k) ...}` and `CONTENTS = lab05.actual_contents()` passed: no
    public function returns an answer, whatever it is called with, and no public constant holds one."""
    answers = {a for a in (*SHAPES.values(), *CONTENTS.values()) if len(a) > 4}  # not '7' or 'null'
    for name in dir(lab05):
        if name.startswith("_") or name in ("q1", "q2"):
            continue
        value = getattr(lab05, name)
        if inspect.ismodule(value) or (inspect.isclass(value) and value.__module__ != lab05.__name__):
            continue
        if inspect.isfunction(value) and value.__module__ == lab05.__name__:
            for args in [(), *[(case,) for case in lab05.CASES], *[(tool,) for tool in CONTENTS]]:
                try:
                    got = value(*args)
                except Exception:  # noqa: BLE001 - a function that needs other arguments
                    continue
                assert not any(answer in repr(got) for answer in answers), (name, args, got)
        elif not callable(value):
            assert not any(answer in repr(value) for answer in answers), (name, value)
    assert not hasattr(lab05, "actual_shape") and not hasattr(lab05, "actual_contents")


def test_module_constants_are_immutable():
    for name in ("CASES", "WHY", "WHY_LATER", "CONTENT_NAMES"):
        value = getattr(lab05, name)
        assert isinstance(value, tuple | str | types.MappingProxyType), (name, type(value))
        with pytest.raises(TypeError):
            value["A"] = ("x", "y")  # type: ignore[index]


def test_a_stub_and_a_placeholder_are_still_to_write():
    message = rejected(lab05.q1, shapes(C="?", E=" ? "), "2 prediction(s) still to write: C, E")
    assert "✘" not in message
    rejected(lab05.q2, {"CONTENTS": dict.fromkeys(CONTENTS, "?")}, "4 prediction(s) still to write")
