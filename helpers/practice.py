"""Predict, then check: a lesson's Practice questions, each answered by running its scenario live.

A lesson's Practice section asks about cases it did not show but its model derives. Each question
is a small scenario function that runs the case on the installed libraries and returns what
happened as a plain value. The learner writes a prediction for each; `check()` runs the scenarios,
compares, and for a wrong prediction shows what really happened, the rule that derives it and the
section that teaches it. Nothing is stored ahead: the answers exist only as what the scenarios
return when they run, and a scenario runs only for a question that has a prediction.

Example:
    ```python
    from helpers.practice import PredictionSet
    practice = PredictionSet("11_the_step_model")

    @practice.question(
        ask="Two tasks run in one step; the first writes 1. What does the second read?",
        answers=("0", "1"),
        rule="Each task reads the state as of the step's start; writes are applied at the barrier.",
        section="11_the_step_model.ipynb#2.-Reads-and-writes",
    )
    def reads_at_step_start():
        ...                      # build and run the graph
        return observed          # "0" or "1"

    practice.predict(reads_at_step_start=None)   # the learner replaces None with "0" or "1"
    practice.check()
    ```

What `check()` prints, question by question in the order they were defined:

- `Q1 · name — ask`, then
- no prediction yet: `record a prediction first: practice.predict(name=...)` (the scenario does
  not run, so nothing is revealed);
- `✓ you predicted '1'; the run gave '1'`, or `✗ ...` followed by the rule and a link to the
  section that teaches it;
- a scenario that raises, hangs past its time limit or returns something that is not an allowed
  answer: one line saying the scenario itself failed (a bug in the course, not in the prediction),
  then the next question;
- last, a tally: `2 of 4 right; 1 not yet predicted`.

`check()` returns a `Results` (a dict: question name → True, False, or None when there is no
verdict) and keeps it as `practice.results`. A `Results` displays nothing in a notebook, so the
printed report is the check cell's whole output (`print(practice.results)` shows the dict); in
tests and labs it compares like a dict.

Predictions are plain values: a `str`, an `int`, a `bool`, `None` (no prediction), or a tuple or
list of those; anything else (a `str` subclass, an object with its own `==`) is refused. A question
lists its allowed answers, or takes a free answer of one type (`kind=`, `int` unless it says
otherwise); a prediction outside them is refused when it is made, with what to write instead. Two
answers match when they are the same kind of value and equal — `True` is not `1`, `"1"` is not
`1` — with surrounding whitespace of a `str` ignored, and a list equal to the tuple with the same
items.

Scenarios run in a daemon worker thread under a time limit (`timeout=`, default `TIMEOUT`); an
`async def` scenario runs on a fresh event loop in that thread, so `check()` works inside a
Jupyter kernel, whose own loop is already running. What a scenario prints (stdout or stderr)
while it runs is not shown.

Taught in notebooks/11_the_step_model.ipynb.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import io
import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.labs import LearnerHung, run_limited

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

TIMEOUT = 10.0
"""Seconds a scenario may run before `check()` reports it as hung. A Practice scenario takes well
under a second; 10 s survives a loaded laptop."""

WIDTH = 100
"""Characters per printed line (the question's text is wrapped to it)."""

_PLAIN_SCALARS = (str, int, bool, type(None))
_KIND_NAMES = {
    int: "a whole number, e.g. 2",
    str: "a str, e.g. 'text'",
    bool: "True or False",
    tuple: "a tuple, e.g. ('a', 'b')",
}
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


class PracticeError(ValueError):
    """A helper error from `PredictionSet`: a prediction or a question that cannot be used as
    written. The message says what to write instead."""


# -- plain values ------------------------------------------------------------------------------------
def _plain_problem(value: Any) -> str | None:
    """Why `value` is not a plain answer value, or None when it is one."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return None
    if kind in (tuple, list):
        for item in value:
            problem = _plain_problem(item)
            if problem:
                return problem
        return None
    return _a(kind.__name__)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _canonical(value: Any) -> Any:
    """A key two plain values share exactly when they count as the same answer."""
    kind = type(value)
    if kind is str:
        return ("str", value.strip())
    if kind in (tuple, list):
        return ("seq", tuple(_canonical(item) for item in value))
    return (kind.__name__, value)


def _show(value: Any) -> str:
    """A plain value as the learner would write it (a str with its quotes; a list as a tuple)."""
    if type(value) is str:
        return repr(value.strip())
    if type(value) in (tuple, list):
        items = [_show(item) for item in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return repr(value)


def _clean(text: Any, width: int = 200) -> str:
    """One line, at most `width` characters, memory addresses masked (so the report is deterministic)."""
    text = _ADDRESS.sub("0x…", " ".join(str(text).split()))
    return text if len(text) <= width else text[: width - 2].rstrip() + " …"


# -- running a scenario under a time limit ---------------------------------------------------------------
class _Hung(Exception):
    """The scenario did not return within its time limit; `stopped` says whether it was cancelled."""

    def __init__(self, stopped: bool) -> None:
        super().__init__()
        self.stopped = stopped


def _quiet_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda loop, context: None)  # no "never retrieved" noise on stderr
    return loop


def _run_limited(fn: Callable[[], Any], timeout: float, name: str) -> Any:
    """`fn()` run by the lab checks' `run_limited` (a coroutine on a fresh, quiet loop), in the
    calling cell's context: its value, its exception re-raised, or `_Hung` after `timeout` seconds."""
    try:
        return run_limited(
            fn,
            limit=timeout,
            name=f"practice:{name}",
            loop_factory=_quiet_loop,
            context=contextvars.copy_context(),
        )
    except LearnerHung as hung:
        raise _Hung(hung.stopped) from None


class _Sink(io.TextIOBase):
    """Swallows what a scenario prints, so the report alone is the output."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


# -- sections ---------------------------------------------------------------------------------------------
@functools.cache
def _headings(notebook: str) -> dict[str, str]:
    """Every markdown heading of `notebooks/<notebook>` by its JupyterLab anchor."""
    try:
        cells = json.loads((NOTEBOOKS / notebook).read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return {}
    found: dict[str, str] = {}
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        source = source if isinstance(source, str) else "".join(source)
        for line in source.splitlines():
            if line.startswith("#"):
                heading = line.lstrip("#").strip().replace("`", "")
                found.setdefault(heading.replace(" ", "-"), heading)
    return found


def _section_link(section: str) -> str:
    """`[lesson 11, section "2. Reads and writes"](11_the_step_model.ipynb#2.-Reads-and-writes)`."""
    notebook, _, anchor = section.partition("#")
    name = Path(notebook).name
    lesson = f"lesson {name[:2]}" if name[:2].isdigit() else name.removesuffix(".ipynb")
    if not anchor:
        return f"[{lesson}]({section})"
    heading = _headings(name).get(anchor) or anchor.replace("-", " ")
    return f'[{lesson}, section "{heading}"]({section})'


# -- questions and results --------------------------------------------------------------------------------
@dataclass
class Question:
    """One Practice question: its scenario and what `check()` prints about it (see `question`)."""

    name: str
    ask: str
    answers: tuple[Any, ...] | None
    rule: str
    section: str
    scenario: Callable[[], Any]
    timeout: float
    kind: type = int

    def refusal(self, value: Any) -> str | None:
        """Why `value` cannot be an answer to this question (None when it can)."""
        problem = _plain_problem(value)
        if problem:
            example = f" — e.g. {_show(self.answers[0])}" if self.answers else ""
            return (
                f"write the answer as a plain value (a str, int, bool, or a tuple of them), "
                f"not {problem}{example}"
            )
        if self.answers is not None:
            if _canonical(value) in [_canonical(a) for a in self.answers]:
                return None
            shown = ", ".join(_show(a) for a in self.answers)
            same_text = [a for a in self.answers if str(a).strip() == str(value).strip()]
            hint = f" (did you mean {_show(same_text[0])}? the kind of value counts)" if same_text else ""
            return (
                f"{_show(value)} is not one of the allowed answers: {shown}{hint}. Write one of them exactly."
            )
        if self.kind is object or type(value) is self.kind or {type(value), self.kind} <= {tuple, list}:
            return None
        return (
            f"write the answer as {_KIND_NAMES.get(self.kind, 'a ' + self.kind.__name__)}, "
            f"not {_show(value)} ({_a(type(value).__name__)})"
        )


class Results(dict):
    """What `check()` found: question name → True (right), False (wrong) or None (no verdict).

    `right`, `wrong`, `unpredicted` and `failed` (the scenario itself failed) list the names;
    `stopped` is True when the check was interrupted. In a notebook a `Results` displays nothing
    (the printed report is the output; `print(results)` shows the dict); elsewhere it shows as a
    dict.

    Example:
        ```python
        results = practice.check()
        results["reads_at_step_start"]    # True, False or None
        results.unpredicted               # ["…", …]
        ```

    Taught in notebooks/11_the_step_model.ipynb.
    """

    def __init__(self) -> None:
        super().__init__()
        self.right: list[str] = []
        self.wrong: list[str] = []
        self.unpredicted: list[str] = []
        self.failed: list[str] = []
        self.stopped = False

    def _ipython_display_(self) -> None:
        """Show nothing: `check()` has printed the report already."""

    def tally(self) -> str:
        """`2 of 4 right; 1 not yet predicted` (and how many scenarios could not be checked)."""
        parts = [f"{len(self.right)} of {len(self)} right"]
        if self.unpredicted:
            parts.append(f"{len(self.unpredicted)} not yet predicted")
        if self.failed:
            parts.append(f"{len(self.failed)} could not be checked (the course's bug, see above)")
        return "; ".join(parts)


class PredictionSet:
    """A lesson's Practice questions, the learner's predictions, and the live check.

    Args:
        name: the lesson's notebook name, e.g. `"11_the_step_model"` (shown in messages).

    Example:
        ```python
        practice = PredictionSet("11_the_step_model")

        @practice.question(ask="…", answers=("0", "1"), rule="…",
                           section="11_the_step_model.ipynb#2.-Reads-and-writes")
        def reads_at_step_start():
            return "1"

        practice.predict(reads_at_step_start="1")
        practice.check()          # Q1 · reads_at_step_start — …  ✓ …  1 of 1 right
        ```

    Taught in notebooks/11_the_step_model.ipynb.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.questions: dict[str, Question] = {}
        self.predictions: dict[str, Any] = {}
        self.results = Results()

    def __repr__(self) -> str:
        return f"PredictionSet({self.name!r}: {len(self.questions)} questions)"

    # -- the lesson author's side -------------------------------------------------------------------
    def question(
        self,
        *,
        ask: str,
        answers: tuple[Any, ...] | list[Any] | None,
        rule: str,
        section: str,
        timeout: float | None = None,
        kind: type = int,
    ) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        """Register the decorated scenario as a question (the function is returned unchanged).

        Args:
            ask: the scenario in words, ending in the question the learner answers.
            answers: the allowed answers (plain values), or None for a free answer of type `kind`.
            rule: the lesson's rule that derives the answer (shown after a wrong prediction).
            section: where it is taught, `"NN_lesson.ipynb#Heading-anchor"` (JupyterLab's id:
                the heading's text, spaces replaced by `-`, case kept).
            timeout: seconds the scenario may run (default `TIMEOUT`).
            kind: with `answers=None`, the type a free answer has: `int` (the default), `str`,
                `bool`, `tuple` (a list is accepted as the same), or `object` for any plain value.
                A prediction of another type is refused when it is made.

        Returns:
            A decorator. The scenario takes no arguments (sync or `async def`), runs the case live
            and returns the observed answer as a plain value. Defining a question again under
            the same name (re-running its cell) replaces it in place.

        Example:
            ```python
            @practice.question(ask="How many steps does one tool round take?", answers=None,
                               rule="…", section="11_the_step_model.ipynb#1.-Steps")
            def steps_per_round():
                return len(list(graph.stream(inputs, stream_mode="debug"))) // 2
            ```
        """
        if answers is not None:
            if type(answers) not in (tuple, list) or not answers:
                raise PracticeError(
                    f"`answers` must be a tuple of the allowed answers (or None for a free answer), "
                    f"not {_clean(repr(answers), 80)}"
                )
            problem = _plain_problem(answers)
            if problem:
                raise PracticeError(
                    f"`answers` holds {problem}: write each allowed answer as a plain value "
                    "(a str, int, bool or a tuple of them)"
                )
            answers = tuple(answers)
        if not section or "#" not in section:
            raise PracticeError(
                f"`section` must link a heading: 'NN_lesson.ipynb#Heading-anchor', not {section!r}"
            )
        if kind not in (int, str, bool, tuple, object):
            raise PracticeError(f"`kind` must be int, str, bool, tuple or object, not {kind!r}")
        limit = TIMEOUT if timeout is None else float(timeout)

        def register(scenario: Callable[[], Any]) -> Callable[[], Any]:
            name = scenario.__name__
            if not name.isidentifier():
                raise PracticeError(f"a question's scenario needs a `def` name, not {name!r}")
            self.questions[name] = Question(name, ask, answers, rule, section, scenario, limit, kind)
            return scenario

        return register

    # -- the learner's side -------------------------------------------------------------------------
    def predict(self, **predictions: Any) -> None:
        """Record predictions by question name; `None` means no prediction yet.

        Every name and value is checked before any is recorded, so a refused call changes nothing.

        Args:
            **predictions: question name → a plain value (a str, int, bool, or a tuple of them):
                one of the question's allowed answers when it lists them, else of its `kind`.

        Raises:
            PracticeError: an unknown name (the message lists the known ones), a value that is not
                plain (a str subclass, an object with its own `==`), one not among the answers, or
                one of another kind than a free answer's.

        Example:
            ```python
            practice.predict(reads_at_step_start="0", steps_per_round=2)
            ```
        """
        for name, value in predictions.items():
            question = self.questions.get(name)
            if question is None:
                known = ", ".join(self.questions) or "(none defined yet: run the question cells first)"
                raise PracticeError(
                    f"{self.name} has no question named `{name}`. Its questions: {known}. "
                    f"Fix the name in practice.predict(...) and run the cell again."
                ) from None
            refusal = None if value is None else question.refusal(value)
            if refusal:
                raise PracticeError(f"`{name}`: {refusal}") from None
        for name, value in predictions.items():
            self.predictions[name] = value

    def check(self) -> Results:
        """Run each predicted question's scenario live, compare, and print the report.

        Returns:
            A `Results` (also kept as `self.results`): question name → True, False or None. In a
            notebook it displays nothing after the report.

        Example:
            ```python
            practice.check()
            # Q1 · reads_at_step_start — Two tasks run in one step; …
            #    ✗ you predicted '0'; the run gave '1'
            #      rule: Each task reads the state as of the step's start; …
            #      read: [lesson 11, section "2. Reads and writes"](11_the_step_model.ipynb#2.-Reads-…)
            # 0 of 1 right
            ```
        """
        results = Results()
        self.results = results
        for name in self.questions:
            results[name] = None
        if not self.questions:
            print(f"{self.name} has no Practice questions yet: run the question cells above first.")
            return results
        for number, question in enumerate(self.questions.values(), 1):
            try:
                self._check_one(number, question, results)
            except KeyboardInterrupt:
                results.stopped = True
                print("check stopped")
                return results
        print(results.tally())
        return results

    def _check_one(self, number: int, question: Question, results: Results) -> None:
        name = question.name
        head = f"Q{number} · {name} — {' '.join(question.ask.split())}"
        print(textwrap.fill(head, width=WIDTH, subsequent_indent="   ", break_long_words=False))
        predicted = self.predictions.get(name)
        if predicted is None:
            results.unpredicted.append(name)
            print(f"   record a prediction first: practice.predict({name}=...)")
            return
        failed = f"   ⚠ the scenario itself failed ({name}): "
        course = " — a bug in the course, not in your prediction; please report it."
        try:
            with contextlib.redirect_stdout(_Sink()), contextlib.redirect_stderr(_Sink()):
                observed = _run_limited(question.scenario, question.timeout, name)
        except KeyboardInterrupt:
            raise
        except _Hung as hung:
            results.failed.append(name)
            after = (
                "" if hung.stopped else " (it may run on in a background thread; the notebook stays usable)"
            )
            print(f"{failed}it did not finish within {question.timeout:g} s{after}{course}")
            return
        except BaseException as exc:  # noqa: BLE001 - the course's scenario broke: say so, go on
            results.failed.append(name)
            text = f"{type(exc).__name__}: {_clean(exc)}" if str(exc) else type(exc).__name__
            print(f"{failed}{text}{course}")
            return
        if question.refusal(observed):
            results.failed.append(name)
            problem = _plain_problem(observed)
            what = (
                f"{problem}, not a plain value"
                if problem
                else f"{_clean(_show(observed), 80)}, which is not a possible answer"
            )
            print(f"{failed}it returned {what}{course}")
            return
        if _canonical(observed) == _canonical(predicted):
            results[name] = True
            results.right.append(name)
            print(f"   ✓ you predicted {_show(predicted)}; the run gave {_show(observed)}")
            return
        results[name] = False
        results.wrong.append(name)
        print(f"   ✗ you predicted {_show(predicted)}; the run gave {_show(observed)}")
        rule = textwrap.fill(
            "rule: " + " ".join(question.rule.split()),
            width=WIDTH,
            initial_indent="     ",
            subsequent_indent="           ",
            break_long_words=False,
        )
        print(rule)
        print(f"     read: {_section_link(question.section)}")


# -- a prediction inside a lesson's cell ----------------------------------------------------------------
UNWRITTEN = "?"
"""What a lesson's `guess = predict("?")` line holds until the learner writes a prediction."""


def predict(guess: Any) -> Any:
    """Print the learner's prediction as the cell's first line of output, and return it unchanged.

    The first line of a cell that asks for a prediction is `guess = predict("?")  # your prediction:
    ...`. Its output starts with this line, so a committed notebook, whose revealing cells open with
    their output folded (JupyterLab previews a folded output by its first line), shows the prompt
    rather than the answer. The cell's last line, `reveal(guess, observed)`, compares.

    Args:
        guess: the learner's prediction, or `"?"` while none is written.

    Returns:
        `guess`, unchanged.

    Example:
        ```python
        guess = predict(2)  # your prediction: how many calls are in flight at once? 1 or 2
        # · you predict 2
        ```

    Taught in notebooks/01_sequential_vs_gather.ipynb.
    """
    if guess is None or (type(guess) is str and guess.strip() == UNWRITTEN):
        print("· no prediction yet: write it in place of the ?, then run the cell")
    elif problem := _plain_problem(guess):
        print(f"· write the prediction as a plain value (a str, int, bool or a tuple of them), not {problem}")
    else:
        print(f"· you predict {_show(guess)}")
    return guess



def reveal(guess: Any, observed: Any) -> None:
    """Print one line comparing the learner's `guess` with what the cell observed.

    A lesson asks for a prediction inside the very cell that reveals the answer: the cell's first
    line is `guess = predict("?")  # your prediction: ...`, the learner writes a prediction there
    before running it, and the cell ends with `reveal(guess, observed)`. Both are compared as plain
    values (as `PredictionSet` compares them: surrounding spaces of a `str` ignored, `True` is not
    `1`).

    Args:
        guess: the learner's prediction; `"?"` (or None) when none was written.
        observed: what the cell's run gave, as a plain value.

    Example:
        ```python
        guess = predict("overlap")  # your prediction: "overlap" or "one after another"
        observed = "overlap" if elapsed < 0.3 else "one after another"
        reveal(guess, observed)
        # ✓ you predicted 'overlap'; the run gave 'overlap'
        ```

    Taught in notebooks/01_sequential_vs_gather.ipynb.
    """
    shown = _show(observed) if not _plain_problem(observed) else _clean(repr(observed), 80)
    if guess is None or (type(guess) is str and guess.strip() == UNWRITTEN):
        print(f"· no guess written; the run gave {shown}")
        return
    problem = _plain_problem(guess)
    if problem:
        print(f"· write the guess as a plain value (a str, int, bool or a tuple of them), not {problem}; "
              f"the run gave {shown}")
        return
    mark = "✓" if not _plain_problem(observed) and _canonical(guess) == _canonical(observed) else "✗"
    print(f"{mark} you predicted {_show(guess)}; the run gave {shown}")


__all__ = [
    "TIMEOUT", "UNWRITTEN", "PracticeError", "PredictionSet", "Question", "Results", "predict", "reveal",
]
