"""Lab 04, a predict-and-check lab: the solution's predictions pass; a wrong prediction is shown beside
what the run gave, with the rule and the lesson section; every scenario returns an allowed answer and
every heading it names is a real one; the predictions beginners make are each refused with the rule
that corrects them; a prediction that is not a plain, allowed value is refused without running.
"""

from __future__ import annotations

import pytest
from lab_checks import accepted, assert_predict_scenarios, rejected

from helpers.labs import NAMES, SOLUTIONS, lab04, solution_namespace
from helpers.labs import build as labs_build

SOL = solution_namespace("04")
EXERCISES = {"q1": "ROUTES", "q2": "HOPS", "q3": "LIMITS"}



@pytest.mark.parametrize("key", EXERCISES)
def test_lab04_the_solution_passes(key, capsys):
    accepted(getattr(lab04, key), SOL, capsys)


@pytest.mark.parametrize("key", EXERCISES)
def test_lab04_every_scenario_returns_an_allowed_answer_and_names_a_real_heading(key):
    assert_predict_scenarios(lab04.lab, key, SOL[EXERCISES[key]])


WRONG = {
    "q1": ("only_invalid_tool_calls", "tools", "Only `tool_calls` counts", "3. tools_condition: two answers"),
    "q2": ("tools_node_runs", 3, "however many calls it holds", "2. Building the loop"),
    "q3": ("thirty_in_a_node", "GraphRecursionError", "the run around it", "5. When the model never stops"),
}


@pytest.mark.parametrize("key", EXERCISES)
def test_lab04_a_wrong_prediction_shows_the_run_the_rule_and_the_section(key):
    name, wrong, rule, where = WRONG[key]
    predictions = {**SOL[EXERCISES[key]], name: wrong}
    message = rejected(getattr(lab04, key), {EXERCISES[key]: predictions}, "1 of", name, rule, where)
    assert f"you predicted {wrong!r}" in message, message
    assert "what the run gave" in message, message


def test_lab04_beginners_predictions_are_each_named():
    # reading the text, the fragment, the key: what a beginner expects tools_condition to look at
    routes = {
        **SOL["ROUTES"],
        "text_and_a_tool_call": "__end__",
        "a_streamed_fragment": "__end__",
        "a_history_key": "__end__",
        "a_tuple_of_messages": "tools",
    }
    message = rejected(lab04.q1, {"ROUTES": routes}, "4 of 6", "its text does not count")
    for phrase in ("parses only its own fragment", "messages_key='history'", "Only a list"):
        assert phrase in message, message
    # one tools step per call, one update per model turn, the ToolMessages forgotten
    hops = {**SOL["HOPS"], "tools_node_runs": 3, "updates_streamed": 3, "final_messages": 4}
    rejected(lab04.q2, {"HOPS": hops}, "3 of 6", "One update per node", "one ToolMessage per call")
    # the limit counted in model turns, the dangling call counted as answered
    rejected(lab04.q2, {"HOPS": {**SOL["HOPS"], "model_turns_at_limit_seven": 7}}, "4 model turns")
    rejected(
        lab04.q2, {"HOPS": {**SOL["HOPS"], "capped_tool_messages": 4}}, "leaving that turn's call unanswered"
    )
    # 10007 everywhere, or 25 everywhere
    everywhere_10007 = {**SOL["LIMITS"], "thirty_in_a_tool_ainvoke": "finishes", "runaway_in_a_chain": 5004}
    rejected(lab04.q3, {"LIMITS": everywhere_10007}, "2 of 6", "langchain-core's 25")
    everywhere_25 = {
        **SOL["LIMITS"],
        "thirty_in_a_node": "GraphRecursionError",
        "thirty_in_a_tool_limit_forty": "GraphRecursionError",
    }
    rejected(lab04.q3, {"LIMITS": everywhere_25}, "2 of 6", "langgraph's 10007", "reaches the tool")
    rejected(
        lab04.q3,
        {"LIMITS": {**SOL["LIMITS"], "thirty_in_a_node_limit_ten": "finishes"}},
        "reaches every graph inside it",
    )


def test_lab04_refuses_what_is_not_a_plain_allowed_answer():
    rejected(
        lab04.q1, {"ROUTES": {**SOL["ROUTES"], "a_tuple_of_messages": "ValueError"}}, "not one of the allowed"
    )
    rejected(lab04.q1, {"ROUTES": {**SOL["ROUTES"], "text_and_a_tool_call": "END"}}, "not one of the allowed")
    rejected(lab04.q2, {"HOPS": {**SOL["HOPS"], "final_messages": "7"}}, "a whole number")
    rejected(lab04.q2, {"HOPS": {**SOL["HOPS"], "updates_streamed": 5.0}}, "plain value")

    class Always(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    rejected(lab04.q3, {"LIMITS": {**SOL["LIMITS"], "twenty_in_a_chain": Always("x")}}, "plain value")
    rejected(lab04.q3, {"LIMITS": list(SOL["LIMITS"].values())}, "must be a dict")
    rejected(lab04.q3, {"LIMITS": dict.fromkeys(SOL["LIMITS"], "?")}, "still '?'")
    rejected(lab04.q1, {"ROUTES": {**SOL["ROUTES"], "typo": "tools"}}, "not questions of this exercise")


def test_lab04_a_question_left_open_is_not_run_nor_revealed():
    routes = {**SOL["ROUTES"], "a_history_key": "?"}
    message = rejected(lab04.q1, {"ROUTES": routes}, "1 of 6", "not run, so not revealed")
    assert "raises ValueError (what the run gave)" not in message, message


def test_lab04_starter_is_generated_and_still_a_stub():
    stem = NAMES["04"]
    assert (SOLUTIONS.parent / f"{stem}.ipynb").read_text(encoding="utf-8") == labs_build.starter_text(stem)
    assert set(labs_build.exercises("04")) == set(EXERCISES)
    for key in EXERCISES:
        assert len(getattr(lab04, key).hints) >= 2
        assert 4 <= len(lab04.lab.groups[key]) <= 6
