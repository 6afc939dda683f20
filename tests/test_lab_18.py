"""Lab 18 as a learner meets it: predictions written differently but right pass; the wrong
predictions beginners make (per step where the mode speaks per task, a start without an end, the
input's checkpoint forgotten, ...) are each refused with what the run gave, the rule and the section;
what is not a prediction is named."""

from __future__ import annotations

import pytest
from lab_checks import rejected

from helpers.labs import lab18, solution_namespace

RIGHT_CHANNELS = {"updates_naming_tools": 3, "values_chunks": 4, "task_chunks": 10,
                  "tool_messages_in_messages_mode": 3}
EVENTS = "tools_events_for_a_raising_call"
RIGHT_FAILURES = {"tools_events_for_a_raising_call": ("tool-started", "tool-error"),
                  "checkpoints_two_tool_turns": 7, "events_named_lookup": 6}


def test_the_solution_passes_both_exercises(capsys):
    namespace = solution_namespace("18")
    lab18.q1.check(namespace)
    lab18.q2.check(namespace)
    out = capsys.readouterr().out
    assert "✔ q1 passed" in out and "✔ q2 passed" in out, out


@pytest.mark.parametrize(
    "failures",
    [
        dict(RIGHT_FAILURES),
        {**RIGHT_FAILURES, "tools_events_for_a_raising_call": ["tool-started", "tool-error"]},  # a list
        {**RIGHT_FAILURES, "tools_events_for_a_raising_call": (" tool-started", "tool-error ")},
        dict(sorted(RIGHT_FAILURES.items())),
    ],
    ids=["as written", "a list", "spaces", "other order"],
)
def test_right_predictions_written_differently_pass(failures, capsys):
    lab18.q2.check({"FAILURES": failures})
    assert "✔ q2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "named", "shown"),
    [
        # one tools update per step
        ({"updates_naming_tools": 1}, "updates_naming_tools", "3 (what the run gave)"),
        ({"values_chunks": 3}, "values_chunks", "4 (what the run gave)"),  # the starting state forgotten
        ({"values_chunks": 6}, "values_chunks", "4 (what the run gave)"),  # one per task
        ({"task_chunks": 5}, "task_chunks", "10 (what the run gave)"),  # starts only
        ({"task_chunks": 4}, "task_chunks", "10 (what the run gave)"),  # the batch as one task
        ({"tool_messages_in_messages_mode": 1}, "tool_messages_in_messages_mode", "3 (what the run gave)"),
    ],
)
def test_wrong_channel_predictions_are_refused_with_the_run_the_rule_and_the_section(change, named, shown):
    message = rejected(lab18.q1, {"CHANNELS": {**RIGHT_CHANNELS, **change}}, named, shown, "why:",
                       "18_observing_a_run.ipynb#")
    assert message.count("✘") == 1, message


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({EVENTS: ("tool-started",)}, EVENTS),
        ({EVENTS: ("tool-started", "tool-finished")}, EVENTS),
        ({EVENTS: ("tool-error", "tool-started")}, EVENTS),
        ({"checkpoints_two_tool_turns": 5}, "checkpoints_two_tool_turns"),  # steps only
        ({"checkpoints_two_tool_turns": 6}, "checkpoints_two_tool_turns"),  # step 0 forgotten
        ({"events_named_lookup": 3}, "events_named_lookup"),  # one event per call
        ({"events_named_lookup": 8}, "events_named_lookup"),  # the tools node counted too
    ],
)
def test_wrong_failure_predictions_are_refused(change, named):
    rejected(lab18.q2, {"FAILURES": {**RIGHT_FAILURES, **change}}, named, "(what the run gave)", "why:")


class Always(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize(
    ("failures", "phrase"),
    [
        ({name: "?" for name in RIGHT_FAILURES}, "still '?'"),
        ({**RIGHT_FAILURES, "tools_events_for_a_raising_call": "tool-started, tool-error"}, "a tuple"),
        ({**RIGHT_FAILURES, "tools_events_for_a_raising_call": (Always("tool-started"), "tool-error")},
         "plain value"),
        ({**RIGHT_FAILURES, "checkpoints_two_tool_turns": 7.0}, "not a float"),
        ({**RIGHT_FAILURES, "checkpoints_two_tool_turns": True}, "whole number"),
        ({k: v for k, v in RIGHT_FAILURES.items() if k != "events_named_lookup"}, "the key is missing"),
    ],
    ids=["all ?", "a str for a tuple", "always-equal str", "a float", "a bool", "missing key"],
)
def test_what_is_not_a_prediction_is_named(failures, phrase):
    rejected(lab18.q2, {"FAILURES": failures}, phrase)


def test_every_question_links_a_heading_of_its_lesson_and_its_scenario_gives_an_allowed_answer():
    from helpers.practice import _run_limited

    for key, group in lab18._lab.groups.items():
        for name, question in group.items():
            assert "cell" in lab18._lab.where_taught(name), (key, name)
            assert question.refusal(_run_limited(question.scenario, 10, name)) is None, (key, name)
