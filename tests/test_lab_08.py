"""Lab 08 against a determined learner: every check rejects with "no", every other answer the module
lists and one drawn answer (so a deny-list of refusals fails on every draw), uses a
dangerous tool under a name drawn per check (never one the lab's text shows) and a harmless tool under
a drawn name, approves two deletions in one batch, approves one thread while another waits and is then
rejected, and hands the ToolNode alone an unapproved call while an approval is pending and with the
state an approved batch ran with. So `answer != "no"`, a guard keyed on the lab's tool names, one-use
tokens and flags are refused on EVERY draw (five draws here), while correct answers written
differently pass. Module constants are immutable."""

from __future__ import annotations

import random
import types

from lab_checks import assert_verdicts, verdicts
from langchain_core.messages import ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from helpers.labs import lab08, solution_namespace, solution_text

SOL = solution_namespace("08")
SEEDS = range(5)
LAB_TEXT_NAMES = {"delete_file", "purge_cache", "wipe_disk", "drop_table"}


def edited(*pairs: tuple[str, str]):
    source = solution_text("08", "q1")
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    namespace = {**SOL, "Command": Command}
    exec(compile(source, "<edited solution>", "exec"), namespace)  # noqa: S102 - the test's own edit
    return namespace["build_graph"]


APPROVED_IDS = 'return {"approved": [c["id"] for c in risky] if answer == "yes" else []}'
NEEDS = 'return bool((tool.metadata or {}).get("requires_approval"))'
GUARD_TEST = 'request.tool_call["id"] not in request.state.get("approved", [])'


def refusal(call):
    return ToolMessage("Refused.", name=call["name"], tool_call_id=call["id"], status="error")


class DecisionState(MessagesState):
    decisions: dict


def per_call_questions(model, tools, checkpointer):  # one interrupt per dangerous call, a dict of ids
    by_name = {t.name: t for t in tools}

    def approve(state):
        calls = state["messages"][-1].tool_calls
        risky = [c for c in calls if (by_name[c["name"]].metadata or {}).get("requires_approval") is True]
        return {"decisions": {c["id"]: interrupt({"approve": c["name"]}) == "yes" for c in risky}}

    def refuses(request):
        dangerous = (request.tool.metadata or {}).get("requires_approval") if request.tool else False
        return dangerous and not request.state.get("decisions", {}).get(request.tool_call["id"])

    def guard(request, execute):
        return refusal(request.tool_call) if refuses(request) else execute(request)

    async def aguard(request, execute):
        return refusal(request.tool_call) if refuses(request) else await execute(request)

    builder = StateGraph(DecisionState)
    builder.add_node("llm", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("approve", approve)
    builder.add_node("tools", ToolNode(tools, wrap_tool_call=guard, awrap_tool_call=aguard))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition, {"tools": "approve", END: END})
    builder.add_edge("approve", "tools")
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


def test_correct_guards_pass_on_every_draw():
    answers = {
        "solution": SOL["build_graph"],
        "one question per dangerous call": per_call_questions,
        "lenient yes": edited(
            (APPROVED_IDS, APPROVED_IDS.replace("answer ==", "str(answer).strip().lower() =="))
        ),
        "a sync guard alone": edited(("awrap_tool_call=aguard", "")),
        "metadata read with `is True`": edited(
            (NEEDS, NEEDS.replace("bool(", "(").replace('"))', '") is True)'))
        ),
    }
    for seed in SEEDS:
        results = verdicts(lambda build, seed=seed: lab08.check_guard(build, seed=seed), answers)
        assert_verdicts(results, dict.fromkeys(answers, ()))


def one_use_flag(model, tools, checkpointer):  # a closure flag, used up by the first dangerous call
    box = {"left": False}

    def take():
        left, box["left"] = box["left"], False
        return left

    build = edited(
        (APPROVED_IDS, 'box["left"] = answer == "yes"\n        return {"approved": []}'),
        (GUARD_TEST, "not take()"),
    )
    build.__globals__.update(box=box, take=take)
    return build(model, tools, checkpointer)


def token_taken_when_asking(model, tools, checkpointer):  # a counter raised when asking, lowered on "no"
    box = {"tokens": 0}

    def take():
        if box["tokens"] > 0:
            box["tokens"] -= 1
            return True
        return False

    build = edited(
        (
            'answer = interrupt([{"tool": c["name"], "args": c["args"]} for c in risky])',
            'box["tokens"] += len(risky)\n'
            '        answer = interrupt([{"tool": c["name"], "args": c["args"]} for c in risky])\n'
            '        if answer != "yes":\n            box["tokens"] -= len(risky)',
        ),
        (GUARD_TEST, "not take()"),
    )
    build.__globals__.update(box=box, take=take)
    return build(model, tools, checkpointer)


def test_wrong_guards_are_refused_on_every_draw_with_the_mistake_named():
    answers = {
        "approves all but 'no'": edited(
            (APPROVED_IDS, APPROVED_IDS.replace('answer == "yes"', 'answer != "no"'))
        ),
        "keyed on the lab's names": edited((NEEDS, f"return tool.name in {sorted(LAB_TEXT_NAMES)!r}")),
        "a state token, not ids": edited(
            (APPROVED_IDS, 'return {"approved": ["granted"] if answer == "yes" else []}'),
            (GUARD_TEST, '"granted" not in request.state.get("approved", [])'),
        ),
        "a one-use flag": one_use_flag,
        "a token taken when asking": token_taken_when_asking,
        "asks when 'requires_approval' is a key": edited(
            (NEEDS, 'return "requires_approval" in (tool.metadata or {})')
        ),
    }
    expected = {
        "approves all but 'no'": ("did not follow the answer", "`answer != 'no'` for 'not now'"),
        "keyed on the lab's names": ("a renamed dangerous tool", "decide by the tool's metadata"),
        "a state token, not ids": (
            "the ToolNode alone",
            "your ToolNode ran a dangerous call nobody approved",
        ),
        "a one-use flag": ("two deletions in one batch", "a one-use token"),
        "a token taken when asking": (
            "did not follow the answer",
            "nobody approved while an approval was pending",
        ),
        "asks when 'requires_approval' is a key": ("no dangerous call, no pause", "paused anyway"),
    }
    for seed in SEEDS:
        results = verdicts(lambda build, seed=seed: lab08.check_guard(build, seed=seed), answers)
        assert_verdicts(results, expected)


def test_a_list_of_refusals_is_refused_on_every_draw():
    answers = {
        # refuses "no", "", words starting with "n" and a few more: "later", "stop", … get through
        "a deny-list of refusals": edited(
            (
                APPROVED_IDS,
                'refused = not answer or answer.lower().startswith("n") or answer.lower() in '
                '{"cancel", "reject", "deny"}\n'
                '        return {"approved": [] if refused else [c["id"] for c in risky]}',
            )
        ),
        # every answer the module lists, refused by name: the answer drawn per check gets through
        "the module's answers, refused by name": edited(
            (
                APPROVED_IDS,
                f"refused = answer in {('no', *lab08.REJECTIONS)!r}\n"
                '        return {"approved": [] if refused else [c["id"] for c in risky]}',
            )
        ),
    }
    expected = dict.fromkeys(answers, ("did not follow the answer", "compare `answer == 'yes'`"))
    for seed in range(10):  # a pass on any seed fails the test
        results = verdicts(lambda build, seed=seed: lab08.check_guard(build, seed=seed), answers)
        assert_verdicts(results, expected)


def test_a_harmless_tool_refused_is_named_as_such_not_as_a_resume():
    every_tool = edited((NEEDS, "return True"))
    for seed in range(3):
        (message,) = verdicts(
            lambda build, seed=seed: lab08.check_guard(build, seed=seed), {"x": every_tool}
        ).values()
        assert "a tool without requires_approval was refused" in message, message
        assert "resuming re-runs" not in message and "sent 0 times" not in message, message


def test_no_checkpointer_is_a_verdict_that_names_the_fix_and_keeps_every_case():
    no_saver = edited(("return builder.compile(checkpointer=checkpointer)", "return builder.compile()"))
    message = verdicts(lambda build: lab08.check_guard(build, seed=0), {"x": no_saver})["x"]
    assert "not yet: 8 of 8 cases failed" in message, message
    assert "your graph has no checkpointer" in message, message
    assert "compile(checkpointer=checkpointer)" in message and "ValueError" not in message, message


def test_every_draw_rejects_with_every_answer_and_names_not_in_the_lab_text():
    lab = " ".join(solution_text("08", "q1").split()) + " ".join(lab08.q1.hints)
    for seed in range(300):
        scenario = lab08.draw_scenario(random.Random(seed))
        assert scenario.rejections[0] == "no" and len(set(scenario.rejections)) == len(lab08.REJECTIONS) + 2
        assert set(lab08.REJECTIONS) < set(scenario.rejections)
        held = scenario.rejections[-1]
        assert held not in lab08.REJECTIONS and held not in lab and not held.startswith("n")
        assert all(answer != "yes" for answer in scenario.rejections)
        assert scenario.renamed not in LAB_TEXT_NAMES and scenario.renamed not in lab
        assert scenario.harmless != scenario.renamed


def test_module_constants_are_immutable():
    assert isinstance(lab08.APPROVAL, types.MappingProxyType)
    assert all(type(getattr(lab08, n)) is tuple for n in ("VERBS", "OBJECTS", "REJECTIONS", "HOLDS", "CASES"))
    assert isinstance(lab08._schemas(), types.MappingProxyType)
    assert not hasattr(lab08, "RENAMES")
