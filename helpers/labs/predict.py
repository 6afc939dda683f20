"""Predict-and-check exercises: the learner writes a prediction per scenario, the check runs each live.

A lab that practises a lesson's rules asks for predictions, not code. Each exercise reads one dict
from the notebook, question name → prediction (a plain value), and its check runs every predicted
scenario on the installed libraries, then lists each question ✔ or ✘. A wrong prediction is shown
beside what the run gave, the rule that derives it and the lesson section that teaches it. A `'?'`
is "still to predict": its scenario does not run, so nothing is revealed before the learner commits.

The scenarios are the same small functions as a lesson's Practice questions (`helpers.practice`):
no argument, sync or `async def`, run in a worker thread under a time limit, returning the observed
answer as a plain value. Nothing is drawn at random: every question runs on every check, so a
check cannot pass on a lucky draw.

Example:
    ```python
    from helpers.labs.predict import PredictionLab

    lab = PredictionLab("04", "04_tools_condition_loop")

    @lab.question(
        "q1",
        ask="The model answers with an AIMessage whose tool_calls is []. Where does tools_condition route?",
        answers=("tools", "__end__"),
        rule="tools_condition routes to 'tools' only when the last AI message has tool calls.",
        heading="2. Routing on the last message",
    )
    def empty_tool_calls():
        ...
        return route          # "tools" or "__end__"

    q1 = lab.exercise("q1", "ROUTES", hints=("…", "…"))
    ```

In the lab notebook: `ROUTES = {"empty_tool_calls": "?", ...}` (the starter; the solution region
holds the predictions), then `q1.check()`; `lab.show("q1")` prints the questions.

Taught in labs/README.md (how labs work); used by labs 04, 07, 09, 10, 11, 17 and 18.
"""

from __future__ import annotations

import contextlib
import functools
import textwrap
from collections.abc import Callable
from typing import Any

from helpers.labs import Cases, CheckFailed, Exercise, section
from helpers.practice import (
    TIMEOUT,
    Question,
    _canonical,
    _clean,
    _Hung,
    _plain_problem,
    _run_limited,
    _show,
    _Sink,
)

STILL = "?"
"""The starter's placeholder: a question whose prediction is still `'?'` is not run."""
WIDTH = 100


class PredictionLab:
    """The questions of one predict-and-check lab, grouped by exercise (`"q1"`, `"q2"`, ...).

    Args:
        lab: the lab's number, e.g. `"04"` (a key of `helpers.labs.NAMES`).
        lesson: the lesson notebook the rules come from, e.g. `"04_tools_condition_loop"`; a
            question may name another with `lesson=`.
    """

    __lab_api__ = frozenset({"show", "starter", "lab", "lesson", "where_taught"})
    """What a notebook may use of it (`lab.show("q1")`): its questions' scenarios are the answers, so
    a notebook that reads `lab.groups` is refused (`helpers.labs.guard.scan`)."""

    def __init__(self, lab: str, lesson: str) -> None:
        self.lab = lab
        self.lesson = lesson
        self.groups: dict[str, dict[str, Question]] = {}
        self.where: dict[str, str] = {}

    def __repr__(self) -> str:
        counts = ", ".join(f"{key}: {len(group)}" for key, group in self.groups.items())
        return f"PredictionLab({self.lab!r}, {counts})"

    # -- the lab author's side --------------------------------------------------------------------------
    def question(
        self,
        key: str,
        *,
        ask: str,
        answers: tuple[Any, ...] | None,
        rule: str,
        heading: str,
        lesson: str | None = None,
        timeout: float | None = None,
        kind: type = int,
    ) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        """Register the decorated scenario as a question of exercise `key`.

        Args:
            key: the exercise, `"q1"`, `"q2"`, ...
            ask: the scenario in words, ending in the question.
            answers: the allowed answers (plain values), or None for a free answer of type `kind`.
            rule: the rule that derives the answer (shown beside a wrong prediction).
            heading: the lesson heading that teaches it, exactly as the lesson writes it.
            lesson: the lesson notebook, if not the lab's own (`self.lesson`).
            timeout: seconds the scenario may run (default `helpers.practice.TIMEOUT`).
            kind: with `answers=None`: `int`, `str`, `bool`, `tuple` or `object`.
        """
        if answers is not None:
            if type(answers) not in (tuple, list) or not answers or _plain_problem(tuple(answers)):
                raise ValueError(f"`answers` must be a non-empty tuple of plain values, not {answers!r}")
            answers = tuple(answers)
        limit = TIMEOUT if timeout is None else float(timeout)
        notebook = lesson or self.lesson

        def register(scenario: Callable[[], Any]) -> Callable[[], Any]:
            name = scenario.__name__
            group = self.groups.setdefault(key, {})
            group[name] = Question(name, ask, answers, rule, f"{notebook}.ipynb", scenario, limit, kind)
            self.where[name] = f"{notebook}\0{heading}"
            return scenario

        return register

    def exercise(self, key: str, name: str, hints: tuple[str, ...]) -> Exercise:
        """The `Exercise` that checks the notebook's dict `name` against the questions of `key`."""
        if key not in self.groups:
            raise ValueError(f"no questions registered for {key}")
        return Exercise(self.lab, key, (name,), functools.partial(self._check, key, name), hints)

    # -- what the notebook shows ------------------------------------------------------------------------
    def show(self, key: str) -> None:
        """Print exercise `key`'s questions, numbered, each with its allowed answers."""
        for number, question in enumerate(self.groups[key].values(), 1):
            head = f"{number}. {question.name} — {' '.join(question.ask.split())}"
            print(textwrap.fill(head, width=WIDTH, subsequent_indent="   ", break_long_words=False))
            if question.answers is not None:
                print("   answers: " + ", ".join(_show(a) for a in question.answers))
            else:
                print(f"   answer: {_KINDS.get(question.kind, 'a plain value')}")

    def starter(self, key: str) -> dict[str, str]:
        """Every question of `key` with the placeholder, as the starter writes it."""
        return {name: STILL for name in self.groups[key]}

    def where_taught(self, name: str) -> str:
        notebook, heading = self.where[name].split("\0")
        return section(notebook, heading)

    # -- the check --------------------------------------------------------------------------------------
    def _check(self, key: str, var: str, predictions: Any) -> str:
        questions = self.groups[key]
        if type(predictions) is not dict:
            raise CheckFailed(
                f"{key} — not yet: `{var}` must be a dict, question name → your prediction, not "
                f"{_clean(_type_name(predictions), 40)}. Start again from the starter's "
                f"{{{', '.join(repr(n) + ': ' + repr(STILL) for n in list(questions)[:2])}, ...}}."
            )
        # plain `str` keys before anything hashes or compares them: a key of the learner's own class
        # could run its `__hash__` or `__eq__` (read only through `dict`'s and `type`'s own methods here)
        odd = [k for k in dict.keys(predictions) if type(k) is not str]
        if odd:
            raise CheckFailed(
                f"{key} — not yet: `{var}` has {len(odd)} key(s) that are not plain strings (a "
                f"{', a '.join(sorted({_clean(_type_name(k), 40) for k in odd}))}): write each question's "
                f"name as a plain string, e.g. {next(iter(questions))!r}."
            )
        predictions = {str.__str__(k): v for k, v in dict.items(predictions)}
        unknown = [k for k in predictions if k not in questions]
        if unknown:
            raise CheckFailed(
                f"{key} — not yet: `{var}` has {len(unknown)} key(s) that are not questions of this "
                f"exercise: {', '.join(_clean(repr(k), 40) for k in unknown[:5])}. Its questions: "
                f"{', '.join(questions)}."
            )
        if all(type(predictions.get(n)) is str and predictions[n] == STILL for n in questions):
            raise CheckFailed(
                f"{key} — not yet: every prediction in `{var}` is still {STILL!r}. Replace each with "
                f"your prediction (the questions are printed above), run the cell, then this check."
            )
        cases = Cases(key)
        for name, question in questions.items():
            self._one(cases, var, name, question, predictions)
        right = sum(c.passed for c in cases.items)
        return cases.result(f"all {right} predictions match what the runs gave")

    def _one(self, cases: Cases, var: str, name: str, question: Question, predictions: dict) -> None:
        if name not in predictions:
            cases.bad(name, expected=f"a prediction for `{name}` in `{var}`", observed="the key is missing")
            return
        value = predictions[name]
        if type(value) is str and value.strip() == STILL:
            still = f"still {STILL!r} (not run, so not revealed)"
            cases.bad(name, expected="your prediction", observed=still)
            return
        refusal = question.refusal(value)
        if refusal:
            cases.bad(name, expected="an allowed answer", observed=refusal)
            return
        observed = self._run(name, question)
        if _canonical(observed) == _canonical(value):
            cases.ok(name, f"{_show(value)}")
            return
        cases.bad(
            name,
            expected=f"{_show(observed)} (what the run gave)",
            observed=f"you predicted {_show(value)}",
            why=" ".join(question.rule.split()),
            where=self.where_taught(name),
        )

    def _run(self, name: str, question: Question) -> Any:
        """The scenario's answer; a scenario that fails is the course's bug, said as such."""
        course = "a bug in the course, not in your prediction: please report it"
        try:
            with contextlib.redirect_stdout(_Sink()), contextlib.redirect_stderr(_Sink()):
                observed = _run_limited(question.scenario, question.timeout, name)
        except _Hung:
            raise CheckFailed(
                f"the scenario `{name}` did not finish within {question.timeout:g} s — {course}"
            ) from None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the course's scenario broke: say so
            raise CheckFailed(
                f"the scenario `{name}` raised {type(exc).__name__}: {_clean(exc)} — {course}"
            ) from None
        if question.refusal(observed):
            raise CheckFailed(f"the scenario `{name}` gave {_clean(repr(observed), 80)} — {course}")
        return observed


def _type_name(value: Any) -> str:
    """The name of `value`'s class, read without its metaclass (whose `__name__` could be code)."""
    return type.__dict__["__name__"].__get__(type(value))


_KINDS = {int: "an int", str: "a str", bool: "True or False", tuple: "a tuple", object: "a plain value"}

__all__ = ["STILL", "PredictionLab"]
