"""Lab 10 as a learner meets it: predictions written differently but right pass; the wrong
predictions beginners make (lesson 03's policy applied to an MCP error, lesson 05's str content, a
policy keyed on the server's exception type, the conversion rule applied after an interceptor's own
ToolMessage, ...) are each refused with what the run gave, the rule and the section; what is not a
prediction (a '?', a str subclass, an always-equal object, a type, a missing or extra key, another
container) is named without running anything it should not."""

from __future__ import annotations

import pytest
from lab_checks import rejected

from helpers.labs import lab10, solution_namespace

RIGHT_NODE = {
    "invoke_with_catch_all": "ends, both answers error",
    "mixed_batch_under_ainvoke": "both success",
    "server_pid_content": "list",
    "traffic_with_every_default": "server text",
    "catch_connection_error": "raises _MCPToolExecutionError",
}
RIGHT_RESULTS = {
    "data_only_plain_call": "an empty list",
    "cleared_error": "success, with an artifact",
    "image_as_error": "one image block",
    "interceptor_own_message": "cache-1, a str",
    "elicitation_with_catch_all": "toolnode text",
}
LESSON = "10_mcp_tools.ipynb#"


def test_the_solution_passes_both_exercises(capsys):
    namespace = solution_namespace("10")
    lab10.q1.check(namespace)
    lab10.q2.check(namespace)
    out = capsys.readouterr().out
    assert "✔ q1 passed" in out and "✔ q2 passed" in out, out


@pytest.mark.parametrize(
    "node",
    [
        dict(RIGHT_NODE),
        dict(reversed(list(RIGHT_NODE.items()))),  # another key order
        {**RIGHT_NODE, "server_pid_content": " list ", "traffic_with_every_default": "server text\n"},
        dict(invoke_with_catch_all="ends, both answers error", mixed_batch_under_ainvoke="both success",
             server_pid_content="list", traffic_with_every_default="server text",
             catch_connection_error="raises _MCPToolExecutionError"),
    ],
    ids=["as written", "other order", "spaces around", "dict()"],
)
def test_right_predictions_written_differently_pass(node, capsys):
    lab10.q1.check({"NODE": node})
    assert "✔ q1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "results",
    [
        dict(sorted(RIGHT_RESULTS.items())),
        {**RIGHT_RESULTS, "interceptor_own_message": "  cache-1, a str"},
    ],
    ids=["other order", "spaces around"],
)
def test_right_results_written_differently_pass(results, capsys):
    lab10.q2.check({"RESULTS": results})
    assert "✔ q2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "named", "shown"),
    [
        # the lesson's own run remembered, the catch-all policy forgotten
        ({"invoke_with_catch_all": "raises NotImplementedError"}, "invoke_with_catch_all",
         "'ends, both answers error' (what the run gave)"),
        # "sync / async adapt automatically"
        ({"invoke_with_catch_all": "ends, both answers success"}, "invoke_with_catch_all",
         "'ends, both answers error' (what the run gave)"),
        # the rule turned around: a sync tool cannot run under ainvoke
        ({"mixed_batch_under_ainvoke": "lookup_hotel error, lookup_weather success"},
         "mixed_batch_under_ainvoke", "'both success' (what the run gave)"),
        ({"mixed_batch_under_ainvoke": "raises NotImplementedError"}, "mixed_batch_under_ainvoke",
         "'both success' (what the run gave)"),
        # lesson 05's rule for a local tool's int
        ({"server_pid_content": "str"}, "server_pid_content", "'list' (what the run gave)"),
        ({"server_pid_content": "int"}, "server_pid_content", "'list' (what the run gave)"),
        # lesson 03: ToolNode's default policy lets a tool's exception through
        ({"traffic_with_every_default": "raises ConnectionError"}, "traffic_with_every_default",
         "'server text' (what the run gave)"),
        ({"traffic_with_every_default": "toolnode text"}, "traffic_with_every_default",
         "'server text' (what the run gave)"),
        # a policy keyed on the server's exception type
        ({"catch_connection_error": "an error ToolMessage"}, "catch_connection_error",
         "'raises _MCPToolExecutionError' (what the run gave)"),
        ({"catch_connection_error": "raises ConnectionError"}, "catch_connection_error",
         "'raises _MCPToolExecutionError' (what the run gave)"),
    ],
)
def test_wrong_node_predictions_are_refused_with_the_run_the_rule_and_the_section(change, named, shown):
    message = rejected(lab10.q1, {"NODE": {**RIGHT_NODE, **change}}, named, shown, "why:", LESSON)
    assert message.count("✘") == 1, message


@pytest.mark.parametrize(
    ("change", "named", "shown", "where"),
    [
        # the structured content taken for the answer, or the pair a ToolCall turns into a message
        ({"data_only_plain_call": "the record as a dict"}, "data_only_plain_call", "'an empty list'",
         "6.1-The-conversion-rule"),
        ({"data_only_plain_call": "a (content, artifact) tuple"}, "data_only_plain_call", "'an empty list'",
         "6.1-The-conversion-rule"),
        # "the server said error, so it stays an error"
        ({"cleared_error": "error, no artifact"}, "cleared_error", "'success, with an artifact'",
         "6.1-The-conversion-rule"),
        # the structured content thought lost with the error
        ({"cleared_error": "success, no artifact"}, "cleared_error", "'success, with an artifact'",
         "6.1-The-conversion-rule"),
        # the exception's message (no text content) taken for what the handler answers
        ({"image_as_error": "one text block"}, "image_as_error", "'one image block'",
         "6.1-The-conversion-rule"),
        # the rule applied to the interceptor's ToolMessage, or the call's id filled in for it
        ({"interceptor_own_message": "q, a list"}, "interceptor_own_message", "'cache-1, a str'",
         "6.1-The-conversion-rule"),
        ({"interceptor_own_message": "q, a str"}, "interceptor_own_message", "'cache-1, a str'",
         "6.1-The-conversion-rule"),
        # "no setting catches it" read as "not even a catch-all ToolNode"
        ({"elicitation_with_catch_all": "raises McpError"}, "elicitation_with_catch_all", "'toolnode text'",
         "6.3-Errors"),
        # the adapter's handler thought to answer it
        ({"elicitation_with_catch_all": "server text"}, "elicitation_with_catch_all", "'toolnode text'",
         "6.3-Errors"),
    ],
)
def test_wrong_result_predictions_are_refused_with_the_run_the_rule_and_the_section(change, named, shown,
                                                                                    where):
    message = rejected(lab10.q2, {"RESULTS": {**RIGHT_RESULTS, **change}}, named,
                       f"{shown} (what the run gave)", "why:", LESSON + where)
    assert message.count("✘") == 1, message


class Always(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class Anything:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize(
    ("node", "phrase"),
    [
        ({name: "?" for name in RIGHT_NODE}, "still '?'"),
        ({**RIGHT_NODE, "server_pid_content": "?"}, "not run, so not revealed"),
        ({**RIGHT_NODE, "server_pid_content": list}, "plain value"),  # the type, not its name
        ({**RIGHT_NODE, "invoke_with_catch_all": True}, "is not one of the allowed answers"),
        ({**RIGHT_NODE, "traffic_with_every_default": "an error ToolMessage"},
         "is not one of the allowed answers"),
        ({**RIGHT_NODE, "traffic_with_every_default": Always("server text")}, "plain value"),
        ({**RIGHT_NODE, "catch_connection_error": Anything()}, "plain value"),
        ({k: v for k, v in RIGHT_NODE.items() if k != "mixed_batch_under_ainvoke"}, "the key is missing"),
        ({**RIGHT_NODE, "bare_dict_artifact": "None"}, "not questions of this exercise"),
        (list(RIGHT_NODE.items()), "must be a dict"),
        (type("Mapping", (dict,), {})(RIGHT_NODE), "must be a dict"),
    ],
    ids=["all ?", "one ?", "a type", "bool for a str", "not an answer", "always-equal str",
         "always-equal object", "missing key", "extra key", "a list", "a dict subclass"],
)
def test_what_is_not_a_prediction_is_named(node, phrase):
    rejected(lab10.q1, {"NODE": node}, phrase)


def test_a_question_left_at_question_mark_is_not_revealed():
    message = rejected(lab10.q2, {"RESULTS": {**RIGHT_RESULTS, "image_as_error": "?"}})
    assert "one image block" not in message.split("image_as_error", 1)[1].split("✔", 1)[0], message


def test_every_question_links_a_heading_of_its_lesson_and_its_scenario_gives_an_allowed_answer():
    from helpers.practice import _run_limited

    for key, group in lab10._lab.groups.items():
        for name, question in group.items():
            assert "cell" in lab10._lab.where_taught(name), (key, name)  # the heading resolved
            assert question.refusal(_run_limited(question.scenario, 10, name)) is None, (key, name)


def test_the_notebook_imports_the_checks_and_show_only():
    assert lab10.__all__ == ["q1", "q2", "show"]
