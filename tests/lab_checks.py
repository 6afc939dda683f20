"""What the lab-check test modules share: a check passes a namespace, or refuses it with a message
that names the mistake and fits one screen; and many answers run through one check at once, each
verdict held to what it must say."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.labs import CheckFailed, guard

# The lab tests patch limits, draws and helpers on purpose (`monkeypatch.setattr(lab02, "HANG", 1.8)`):
# the checks' verification of their own code is off for them, and on inside `with guard.enforced():`
# (tests/test_lab_tamper.py, where learner-style tampering must get its verdict).
guard.relax_for_tests()


def accepted(exercise, namespace: dict, capsys) -> str:
    """The check passes `namespace`; returns what it printed."""
    exercise.check(namespace)
    out = capsys.readouterr().out
    assert f"✔ {exercise.key} passed" in out, out
    return out


def rejected(exercise, namespace: dict, *phrases: str, max_lines: int = 25) -> str:
    """The check refuses `namespace` with a message holding every phrase (and never crashes)."""
    with pytest.raises(CheckFailed) as info:
        exercise.check(namespace)
    message = str(info.value)
    assert "not yet" in message, message
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} missing from:\n{message}"
    assert "Traceback" not in message, message
    assert len(message.splitlines()) <= max_lines, message  # the verdict fits the first screen
    return message


def verdicts(checker, answers: dict) -> dict[str, str]:
    """Run `checker(answer)` for every answer at once; 'PASS' or the CheckFailed message."""

    def one(answer):
        try:
            checker(answer)
        except CheckFailed as exc:
            return str(exc)
        return "PASS"

    with ThreadPoolExecutor(max_workers=6) as pool:  # more would make the CPU, not the checks, the limit
        futures = {name: pool.submit(one, answer) for name, answer in answers.items()}
        return {name: future.result() for name, future in futures.items()}


def assert_verdicts(results: dict[str, str], expected: dict[str, tuple[str, ...]]) -> None:
    """`expected[name]` is () for an accepted answer, else the phrases its message must contain."""
    problems = []
    for name, phrases in expected.items():
        got = results[name]
        if not phrases:
            if got != "PASS":
                problems.append(f"{name}: a correct answer was refused:\n{got}")
            continue
        if got == "PASS":
            problems.append(f"{name}: a wrong answer passed")
            continue
        problems += [f"{name}: {p!r} missing from:\n{got}" for p in ("not yet", *phrases) if p not in got]
    assert not problems, "\n\n".join(problems)


def assert_predict_scenarios(lab, key: str, predictions: dict) -> None:
    """Every scenario of a predict-and-check exercise returns an allowed answer equal to the
    solution's `predictions`, and names a heading its lesson really has."""
    import asyncio
    import inspect

    import nbformat

    from helpers.labs import ROOT

    headings: dict[str, set[str]] = {}
    for name, question in lab.groups[key].items():
        value = question.scenario()
        if inspect.isawaitable(value):
            value = asyncio.run(value)
        assert question.refusal(value) is None, (name, value)
        assert value == predictions[name], (name, value)
        notebook, heading = lab.where[name].split("\0")
        if notebook not in headings:
            cells = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4).cells
            headings[notebook] = {line.lstrip("#").strip() for cell in cells if cell.cell_type == "markdown"
                                  for line in cell.source.splitlines() if line.startswith("#")}
        assert heading in headings[notebook], (name, heading)
