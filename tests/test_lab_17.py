"""Lab 17 as a learner meets it: predictions written differently but right pass; the wrong
predictions beginners make are each refused with what the run gave, the rule and the section; what
is not a prediction (a '?', a str subclass, an always-equal object, a missing or extra key, another
container) is named without running anything it should not."""

from __future__ import annotations

import pytest
from lab_checks import rejected

from helpers.labs import lab17, solution_namespace

RIGHT_STEPS = {"direct_answer_with_audit": 5, "two_after_model_hooks": 7,
               "tools_node_without_tools": "no", "tools_node_with_only_a_wrapper": "yes"}
RIGHT_OUTCOMES = {"schema_in_the_second_turn": 2, "model_limit_two": 2,
                  "tool_limit_one_two_calls": 1, "recursion_limit_six": 3}


def test_the_solution_passes_both_exercises(capsys):
    namespace = solution_namespace("17")
    lab17.q1.check(namespace)
    lab17.q2.check(namespace)
    out = capsys.readouterr().out
    assert "✔ q1 passed" in out and "✔ q2 passed" in out, out


@pytest.mark.parametrize(
    "steps",
    [
        dict(RIGHT_STEPS),
        dict(reversed(list(RIGHT_STEPS.items()))),  # another key order
        {**RIGHT_STEPS, "tools_node_without_tools": " no ", "tools_node_with_only_a_wrapper": "yes\n"},
        dict(direct_answer_with_audit=5, two_after_model_hooks=7, tools_node_without_tools="no",
             tools_node_with_only_a_wrapper="yes"),
    ],
    ids=["as written", "other order", "spaces around", "dict()"],
)
def test_right_predictions_written_differently_pass(steps, capsys):
    lab17.q1.check({"STEPS": steps})
    assert "✔ q1 passed" in capsys.readouterr().out


def test_right_outcomes_in_another_order_pass(capsys):
    lab17.q2.check({"OUTCOMES": dict(sorted(RIGHT_OUTCOMES.items()))})
    assert "✔ q2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "named", "shown"),
    [
        # counting only model and tools nodes, forgetting the hooks
        ({"direct_answer_with_audit": 1}, "direct_answer_with_audit", "5 (what the run gave)"),
        # before_agent and after_agent forgotten
        ({"direct_answer_with_audit": 3}, "direct_answer_with_audit", "5 (what the run gave)"),
        # one step per turn, whatever the hooks
        ({"two_after_model_hooks": 3}, "two_after_model_hooks", "7 (what the run gave)"),
        # "a tools node is always there"
        ({"tools_node_without_tools": "yes"}, "tools_node_without_tools", "'no' (what the run gave)"),
        ({"tools_node_with_only_a_wrapper": "no"}, "tools_node_with_only_a_wrapper",
         "'yes' (what the run gave)"),
    ],
)
def test_wrong_step_predictions_are_refused_with_the_run_the_rule_and_the_section(change, named, shown):
    message = rejected(lab17.q1, {"STEPS": {**RIGHT_STEPS, **change}}, named, shown, "why:",
                       "17_the_agent_around_tools.ipynb#1.-The-graph-create_agent-builds")
    assert message.count("✘") == 1, message


@pytest.mark.parametrize(
    ("change", "named", "shown"),
    [
        # "the model speaks once more after the schema"
        ({"schema_in_the_second_turn": 3}, "schema_in_the_second_turn", "2 (what the run gave)"),
        # a model limit of 2 read as 2 tool rounds plus the refused third
        ({"model_limit_two": 3}, "model_limit_two", "2 (what the run gave)"),
        # "the limit stops the turn, so nothing runs" / "both run, the limit stops the next turn"
        ({"tool_limit_one_two_calls": 0}, "tool_limit_one_two_calls", "1 (what the run gave)"),
        ({"tool_limit_one_two_calls": 2}, "tool_limit_one_two_calls", "1 (what the run gave)"),
        # six steps read as six tool calls
        ({"recursion_limit_six": 6}, "recursion_limit_six", "3 (what the run gave)"),
    ],
)
def test_wrong_outcome_predictions_are_refused_with_the_run_and_the_rule(change, named, shown):
    rejected(lab17.q2, {"OUTCOMES": {**RIGHT_OUTCOMES, **change}}, named, shown, "why:")


class Always(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class Anything:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize(
    ("steps", "phrase"),
    [
        ({name: "?" for name in RIGHT_STEPS}, "still '?'"),
        ({**RIGHT_STEPS, "two_after_model_hooks": "?"}, "not run, so not revealed"),
        ({**RIGHT_STEPS, "direct_answer_with_audit": "5"}, "whole number"),  # a str for an int
        ({**RIGHT_STEPS, "tools_node_without_tools": False}, "is not one of the allowed answers"),
        ({**RIGHT_STEPS, "tools_node_without_tools": Always("no")}, "plain value"),
        ({**RIGHT_STEPS, "direct_answer_with_audit": Anything()}, "plain value"),
        ({k: v for k, v in RIGHT_STEPS.items() if k != "two_after_model_hooks"}, "the key is missing"),
        ({**RIGHT_STEPS, "steps": 9}, "not questions of this exercise"),
        (list(RIGHT_STEPS.items()), "must be a dict"),
        (type("Mapping", (dict,), {})(RIGHT_STEPS), "must be a dict"),
    ],
    ids=["all ?", "one ?", "str for int", "bool for yes/no", "always-equal str", "always-equal object",
         "missing key", "extra key", "a list", "a dict subclass"],
)
def test_what_is_not_a_prediction_is_named(steps, phrase):
    rejected(lab17.q1, {"STEPS": steps}, phrase)


def test_a_question_left_at_question_mark_is_not_revealed():
    message = rejected(lab17.q1, {"STEPS": {**RIGHT_STEPS, "two_after_model_hooks": "?"}})
    assert "7" not in message.split("two_after_model_hooks", 1)[1].split("✔", 1)[0], message


def test_every_question_links_a_heading_of_its_lesson_and_its_scenario_gives_an_allowed_answer():
    for key, group in lab17._lab.groups.items():
        for name, question in group.items():
            assert "cell" in lab17._lab.where_taught(name), (key, name)  # the heading resolved
            assert question.refusal(question.scenario()) is None, (key, name)
