"""Lab 11 as a learner meets it: predictions written differently but right pass; the wrong predictions
beginners make (writes in finish order, a node run once per edge or once per Send, equal values
accepted, a checkpoint per task, a pause that lets the next step run, a resume from the start, a
limit counted per call, a batch that keeps its finished calls) are each refused with what the run
gave, the rule and the section; what is not a prediction is named; every question's heading resolves
and every scenario gives an allowed answer."""

from __future__ import annotations

import pytest
from lab_checks import rejected

from helpers.labs import lab11, solution_namespace

RIGHT_STEPS = {
    "edge_order_by_name": ("Alpha", "beta", "zeta"),
    "edges_before_sends": ("zz_edge", "one", "two"),
    "join_reached_twice": 2,
    "fan_in_after_sends": 1,
    "same_value_twice": "InvalidUpdateError",
}
RIGHT_RESUMES = {
    "checkpoints_with_sends": 4,
    "checkpoints_after_failure": 3,
    "successor_waits_for_pause": 0,
    "earlier_step_not_rerun": 1,
}
RIGHT_TOOLS = {
    "limit_for_two_turns": 6,
    "steps_under_max_concurrency": 3,
    "batch_retry_runs": 2,
    "interrupts_of_one_turn": 2,
}


def test_the_solution_passes_every_exercise(capsys):
    namespace = solution_namespace("11")
    for exercise in (lab11.q1, lab11.q2, lab11.q3):
        exercise.check(namespace)
    out = capsys.readouterr().out
    assert all(f"✔ {key} passed" in out for key in ("q1", "q2", "q3")), out


@pytest.mark.parametrize(
    "steps",
    [
        dict(RIGHT_STEPS),
        {**RIGHT_STEPS, "edge_order_by_name": ["Alpha", "beta", "zeta"]},  # a list
        {**RIGHT_STEPS, "edges_before_sends": (" zz_edge", "one ", "two")},  # spaces
        {**RIGHT_STEPS, "same_value_twice": " InvalidUpdateError "},
        dict(sorted(RIGHT_STEPS.items())),
    ],
    ids=["as written", "a list", "spaces in a tuple", "spaces in a choice", "other order"],
)
def test_right_predictions_written_differently_pass(steps, capsys):
    lab11.q1.check({"STEPS": steps})
    assert "✔ q1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("exercise", "var", "right", "change"),
    [
        # writes in finish order
        (lab11.q1, "STEPS", RIGHT_STEPS, {"edge_order_by_name": ("zeta", "beta", "Alpha")}),
        # case-insensitive name order
        (lab11.q1, "STEPS", RIGHT_STEPS, {"edge_order_by_name": ("Alpha", "zeta", "beta")}),
        # by name across kinds
        (lab11.q1, "STEPS", RIGHT_STEPS, {"edges_before_sends": ("one", "two", "zz_edge")}),
        # two edges wait for each other
        (lab11.q1, "STEPS", RIGHT_STEPS, {"join_reached_twice": 1}),
        # once per Send
        (lab11.q1, "STEPS", RIGHT_STEPS, {"fan_in_after_sends": 3}),
        # equal values are fine
        (lab11.q1, "STEPS", RIGHT_STEPS, {"same_value_twice": "status is 'paid'"}),
        # a checkpoint per task
        (lab11.q2, "RESUMES", RIGHT_RESUMES, {"checkpoints_with_sends": 6}),
        # the input's checkpoint forgotten
        (lab11.q2, "RESUMES", RIGHT_RESUMES, {"checkpoints_with_sends": 3}),
        # the failed step checkpointed
        (lab11.q2, "RESUMES", RIGHT_RESUMES, {"checkpoints_after_failure": 4}),
        # the sibling's successor runs during the pause
        (lab11.q2, "RESUMES", RIGHT_RESUMES, {"successor_waits_for_pause": 1}),
        # a resume starts from the top of the graph
        (lab11.q2, "RESUMES", RIGHT_RESUMES, {"earlier_step_not_rerun": 3}),
        # a step per call
        (lab11.q3, "TOOLS", RIGHT_TOOLS, {"limit_for_two_turns": 10}),
        # the limit equal to the last step
        (lab11.q3, "TOOLS", RIGHT_TOOLS, {"limit_for_two_turns": 5}),
        # max_concurrency=1 as a step per call
        (lab11.q3, "TOOLS", RIGHT_TOOLS, {"steps_under_max_concurrency": 6}),
        # the batch keeps its finished call
        (lab11.q3, "TOOLS", RIGHT_TOOLS, {"batch_retry_runs": 1}),
        # the first interrupt stops the turn
        (lab11.q3, "TOOLS", RIGHT_TOOLS, {"interrupts_of_one_turn": 1}),
    ],
)
def test_wrong_predictions_are_refused_with_the_run_the_rule_and_the_section(exercise, var, right, change):
    (named,) = change
    message = rejected(
        exercise,
        {var: {**right, **change}},
        named,
        "(what the run gave)",
        "why:",
        "11_the_step_model.ipynb#",
        "you predicted",
    )
    assert message.count("✘") == 1, message


class Always(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize(
    ("steps", "phrase"),
    [
        ({name: "?" for name in RIGHT_STEPS}, "still '?'"),
        ({**RIGHT_STEPS, "edge_order_by_name": "Alpha, beta, zeta"}, "a tuple"),
        ({**RIGHT_STEPS, "edge_order_by_name": (Always("Alpha"), "beta", "zeta")}, "plain value"),
        ({**RIGHT_STEPS, "join_reached_twice": 2.0}, "not a float"),
        ({**RIGHT_STEPS, "join_reached_twice": True}, "whole number"),
        ({**RIGHT_STEPS, "same_value_twice": "an error"}, "not one of the allowed answers"),
        ({k: v for k, v in RIGHT_STEPS.items() if k != "fan_in_after_sends"}, "the key is missing"),
        ({**RIGHT_STEPS, "join_twice": 2}, "not questions of this exercise"),
    ],
    ids=[
        "all ?",
        "a str for a tuple",
        "always-equal str",
        "a float",
        "a bool",
        "not an allowed answer",
        "missing key",
        "unknown key",
    ],
)
def test_what_is_not_a_prediction_is_named(steps, phrase):
    rejected(lab11.q1, {"STEPS": steps}, phrase)


def test_a_heading_that_does_not_resolve_is_caught():
    """The check below finds a question whose heading is not the lesson's, word for word."""
    from helpers.labs.predict import PredictionLab

    scratch = PredictionLab("11", lab11.LESSON)
    scratch.question(
        "q1", ask="?", answers=None, rule="r", heading="1. One super-step: plan, run and barrier"
    )(lambda: 1)
    (name,) = scratch.where
    assert "cell" not in scratch.where_taught(name)


def test_every_question_links_a_heading_of_its_lesson_and_its_scenario_gives_an_allowed_answer():
    from helpers.practice import _run_limited

    right = {**RIGHT_STEPS, **RIGHT_RESUMES, **RIGHT_TOOLS}
    names = set()
    for key, group in lab11._lab.groups.items():
        for name, question in group.items():
            names.add(name)
            assert "cell" in lab11._lab.where_taught(name), (key, name)
            observed = _run_limited(question.scenario, 10, name)
            assert question.refusal(observed) is None, (key, name, observed)
            assert observed == right[name] or list(observed) == list(right[name]), (name, observed)
            assert 4 <= len(group) <= 6, key
    assert names == set(right)


class Key:
    """A prediction key whose hash raises: the check reads it, the verdict says so."""

    def __init__(self, error):
        self.error = error
        self.hashed = 0

    def __hash__(self):
        self.hashed += 1
        if self.hashed > 1:  # the first hash is the dict's own, when the learner builds it
            raise self.error
        return 12345

    def __eq__(self, other):
        return self is other


@pytest.mark.parametrize(
    "error", [ValueError("bad"), SystemExit(3), GeneratorExit()], ids=lambda e: type(e).__name__
)
def test_a_prediction_key_that_raises_gets_a_verdict(error):
    rejected(lab11.q1, {"STEPS": {**RIGHT_STEPS, Key(error): 1}})  # a verdict, never a crash
