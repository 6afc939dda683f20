"""The two assertions the lab-check test modules share: a check passes a namespace, or refuses it
with a message that names the mistake and fits one screen."""

from __future__ import annotations

import pytest

from helpers.labs import CheckFailed


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
