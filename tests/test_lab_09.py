"""Lab 09, a predict-and-check lab: the solution's predictions pass; a wrong prediction is shown beside
what the run gave, with the rule and the lesson section; every scenario returns an allowed answer and
every heading it names is a real one; a prediction that is not a plain value, or not an allowed
answer, is refused without running the scenario.
"""

from __future__ import annotations

import pytest
from lab_checks import accepted, assert_predict_scenarios, rejected

from helpers.labs import NAMES, SOLUTIONS, lab09, solution_namespace
from helpers.labs import build as labs_build

SOL = solution_namespace("09")
EXERCISES = {"q1": "ARRIVALS", "q2": "PAUSES", "q3": "FAILURES"}



@pytest.mark.parametrize("key", EXERCISES)
def test_lab09_the_solution_passes(key, capsys):
    accepted(getattr(lab09, key), SOL, capsys)


@pytest.mark.parametrize("key", EXERCISES)
def test_lab09_every_scenario_returns_an_allowed_answer_and_names_a_real_heading(key):
    assert_predict_scenarios(lab09.lab, key, SOL[EXERCISES[key]])


WRONG = {
    "q1": ("tasks_for_four_calls_loop", 4, "one task, fed the whole state", "2. How the tool calls arrive"),
    "q2": (
        "rounds_three_bookings_agent",
        3,
        "every interrupt surfaces at once",
        "Two interrupts in one turn",
    ),
    "q3": ("saved_after_crash_agent", 0, "its write is saved", "8. Deep dive: a failing call"),
}


@pytest.mark.parametrize("key", EXERCISES)
def test_lab09_a_wrong_prediction_shows_the_run_the_rule_and_the_section(key):
    name, wrong, rule, where = WRONG[key]
    predictions = {**SOL[EXERCISES[key]], name: wrong}
    message = rejected(getattr(lab09, key), {EXERCISES[key]: predictions}, "1 of", name, rule, where)
    assert f"you predicted {wrong!r}" in message, message
    assert "what the run gave" in message, message


def test_lab09_beginners_predictions_are_each_named():
    # the batch's habits carried over to the agent, and the agent's to the batch
    batch_habits = {
        **SOL["PAUSES"],
        "lookups_across_pause_agent": 4,
        "rounds_three_bookings_agent": 3,
        "limit_under_ainvoke_agent": 5,
    }
    message = rejected(lab09.q2, {"PAUSES": batch_habits}, "3 of 6", "lookups_across_pause_agent")
    assert "rounds_three_bookings_agent" in message and "limit_under_ainvoke_agent" in message
    agent_habits = {
        **SOL["FAILURES"],
        "saved_after_crash_loop": 2,
        "value_error_no_middleware": "an error ToolMessage",
    }
    rejected(lab09.q3, {"FAILURES": agent_habits}, "2 of 6", "only argument errors")
    rejected(lab09.q1, {"ARRIVALS": {**SOL["ARRIVALS"], "answer_order_agent": "finish order"}}, "task order")
    rejected(
        lab09.q1, {"ARRIVALS": {**SOL["ARRIVALS"], "sends_after_one_answer": 3}}, "only the pending calls"
    )


def test_lab09_refuses_what_is_not_a_plain_allowed_answer():
    rejected(lab09.q1, {"ARRIVALS": {**SOL["ARRIVALS"], "react_v1_edge": "tools"}}, "not one of the allowed")
    rejected(lab09.q1, {"ARRIVALS": {**SOL["ARRIVALS"], "tasks_for_four_calls_agent": "4"}}, "a whole number")
    rejected(lab09.q2, {"PAUSES": {**SOL["PAUSES"], "rounds_three_bookings_loop": 3.0}}, "plain value")

    class Always(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    rejected(lab09.q2, {"PAUSES": {**SOL["PAUSES"], "rounds_three_bookings_loop": Always(1)}}, "plain value")
    rejected(lab09.q3, {"FAILURES": list(SOL["FAILURES"].values())}, "must be a dict")
    rejected(lab09.q3, {"FAILURES": dict.fromkeys(SOL["FAILURES"], "?")}, "still '?'")
    rejected(lab09.q3, {"FAILURES": {**SOL["FAILURES"], "typo": 1}}, "not questions of this exercise")


def test_lab09_starter_is_generated_and_still_a_stub():
    stem = NAMES["09"]
    assert (SOLUTIONS.parent / f"{stem}.ipynb").read_text(encoding="utf-8") == labs_build.starter_text(stem)
    assert set(labs_build.exercises("09")) == set(EXERCISES)
    for key in EXERCISES:
        assert len(getattr(lab09, key).hints) >= 2
        assert 4 <= len(lab09.lab.groups[key]) <= 6
