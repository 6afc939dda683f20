"""Lab 07, a predict-and-check lab: the solution's predictions pass; a wrong prediction is shown beside
what the run gave, with the rule and the lesson section; every scenario returns an allowed answer and
every heading it names is a real one; the predictions beginners make (the pool, the limit and the
shape habits of lessons 03 and 05 carried over, the model's values trusted) are each named.
"""

from __future__ import annotations

import pytest
from lab_checks import accepted, assert_predict_scenarios, rejected

from helpers.labs import lab07, solution_namespace

SOL = solution_namespace("07")
EXERCISES = {"q1": "BATCH", "q2": "PAYLOADS", "q3": "INJECTION"}



@pytest.mark.parametrize("key", EXERCISES)
def test_lab07_the_solution_passes(key, capsys):
    accepted(getattr(lab07, key), SOL, capsys)


@pytest.mark.parametrize("key", EXERCISES)
def test_lab07_every_scenario_returns_an_allowed_answer_and_names_a_real_heading(key):
    assert 4 <= len(lab07.lab.groups[key]) <= 6
    assert_predict_scenarios(lab07.lab, key, SOL[EXERCISES[key]])


WRONG = {
    "q1": ("sync_tools_under_ainvoke", 2, "never sized by max_concurrency", "1.3 _afunc"),
    "q2": (
        "list_of_tool_calls_shape",
        "a list",
        "input type 'tool_calls', not 'list'",
        "2.3 _combine_tool_outputs",
    ),
    "q3": ("runtime_named_with_a_default", "the job ran with runtime=5", "NAMED runtime", "3.2 Recognised"),
}


@pytest.mark.parametrize("key", EXERCISES)
def test_lab07_a_wrong_prediction_shows_the_run_the_rule_and_the_section(key):
    name, wrong, rule, where = WRONG[key]
    predictions = {**SOL[EXERCISES[key]], name: wrong}
    message = rejected(getattr(lab07, key), {EXERCISES[key]: predictions}, "1 of", name, rule, where)
    assert f"you predicted {wrong!r}" in message, message
    assert "what the run gave" in message, message


def test_lab07_beginners_predictions_are_each_named():
    # lesson 03's pool and limit carried over to every path, and one tool per function
    habits = {
        **SOL["BATCH"],
        "tools_after_a_duplicate": 3,
        "pools_for_three_invokes": 1,
        "async_limit_under_ainvoke": 2,
        "sync_tools_under_ainvoke": 2,
    }
    message = rejected(lab07.q1, {"BATCH": habits}, "4 of 6", "tools_after_a_duplicate", "keyed by name")
    for name in ("pools_for_three_invokes", "async_limit_under_ainvoke", "sync_tools_under_ainvoke"):
        assert f"✘ {name}" in message, message

    # lesson 05's "a list in, a list out" taken for any list, every call of the history answered
    shapes = {
        **SOL["PAYLOADS"],
        "calls_of_the_latest_message": 3,
        "list_of_tool_calls_shape": "a list",
        "send_payload_calls": 3,
        "send_payload_state": "no note",
    }
    message = rejected(lab07.q2, {"PAYLOADS": shapes}, "4 of 6", "LATEST AIMessage", "[payload['tool_call']]")
    assert "✘ send_payload_state" in message, message

    # the model's values trusted, the schema taken for the whole story
    trusting = {
        **SOL["INJECTION"],
        "model_sees_plan": ("city", "ctx", "days"),
        "forged_store": "str",
        "runtime_outside_the_schema": "an error ToolMessage",
        "forged_state_field": "admin/1",
    }
    message = rejected(lab07.q3, {"INJECTION": trusting}, "4 of 6", "strips every injected key")
    for name in ("model_sees_plan", "runtime_outside_the_schema", "forged_state_field"):
        assert f"✘ {name}" in message, message


def test_lab07_a_prediction_that_is_not_an_allowed_plain_value_is_refused_without_running():
    ran = []
    question = lab07.lab.groups["q2"]["list_of_tool_calls_shape"]
    original = question.scenario
    try:
        question.scenario = lambda: ran.append(1) or original()
        odd = {**SOL["PAYLOADS"], "list_of_tool_calls_shape": "dict"}
        rejected(lab07.q2, {"PAYLOADS": odd}, "not one of the allowed answers", "'a dict'")
        rejected(
            lab07.q1,
            {"BATCH": {**SOL["BATCH"], "pools_for_three_invokes": "3"}},
            "write the answer as a whole number",
        )
        rejected(lab07.q3, {"INJECTION": {**SOL["INJECTION"], "model_sees_plan": "city, days"}}, "a tuple")
    finally:
        question.scenario = original
    assert not ran


def test_lab07_a_question_left_at_its_placeholder_is_not_run():
    starter = {name: "?" for name in SOL["PAYLOADS"]}
    rejected(lab07.q2, {"PAYLOADS": starter}, "still '?'")
    one_left = {**SOL["PAYLOADS"], "send_payload_state": "?"}
    message = rejected(lab07.q2, {"PAYLOADS": one_left}, "1 of 6", "not run, so not revealed")
    assert "from the payload" not in message, message
