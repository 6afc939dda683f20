"""Lab 14 as a learner meets it: for both exercises, correct answers written differently are accepted
and the mistakes beginners make (the retry outside the review, the batched review, a review keyed on
the names in the lab text, no retry, a retry that re-raises, too many attempts, the default backoff,
an edit the review refuses, no checkpointer; an error handler or an audit on the wrong side of the
retry, a ledger that misses what the model reads) are refused with a message that names the mistake.
A hang is cut, a learner exception is a verdict, and every run of a check has every hard case in it.
"""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from lab_checks import accepted, assert_verdicts, rejected, verdicts
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    InterruptOnConfig,
    ToolErrorMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.messages import ToolMessage

from helpers.labs import NAMES, SOLUTIONS, CheckFailed, lab14, solution_namespace
from helpers.labs import build as labs_build

SOL = solution_namespace("14")


def flagged(tools, value=True):
    return {t.name: value for t in tools if (t.metadata or {}).get("requires_approval")}


def review_of(tools, **options):
    return HumanInTheLoopMiddleware(interrupt_on=flagged(tools), interrupt_mode="per_call", **options)


# -- q1: correct answers written differently ---------------------------------------------------------
def jittered_defaults(model, tools, checkpointer):  # True for every decision, a short jittered backoff
    retry = ToolRetryMiddleware(initial_delay=0.05)
    return create_agent(model, tools, middleware=[review_of(tools), retry], checkpointer=checkpointer)


def error_handler_outside(model, tools, checkpointer):  # lesson 14 §6: handler outside, retry re-raises
    def readable(error, request):
        return f"{request.tool_call['name']} is down ({type(error).__name__})"

    middleware = [
        review_of(tools),
        ToolErrorMiddleware(readable),
        ToolRetryMiddleware(on_failure="error", initial_delay=0, jitter=False),
    ]
    return create_agent(model, tools, middleware=middleware, checkpointer=checkpointer)


def named_tools_and_callable(model, tools, checkpointer):  # every tool named, a callable on_failure
    config = InterruptOnConfig(allowed_decisions=["approve", "edit", "reject"], description="Payment")
    review = HumanInTheLoopMiddleware(
        interrupt_on={t.name: config for t in tools if t.metadata and t.metadata.get("requires_approval")},
        interrupt_mode="per_call",
    )
    retry = ToolRetryMiddleware(
        tools=[t.name for t in tools],
        retry_on=(ConnectionError, TimeoutError),
        on_failure=lambda error: f"gave up: {error}",
        backoff_factor=0,
        initial_delay=0.01,
    )
    return create_agent(model, tools, middleware=(review, retry), checkpointer=checkpointer)


class HandRetry(AgentMiddleware):
    """A retry written by hand, both hooks, answering the last failure with an error ToolMessage."""

    def _give_up(self, request, error):
        return ToolMessage(f"failed: {error}", tool_call_id=request.tool_call["id"], status="error")

    def wrap_tool_call(self, request, handler):
        for attempt in range(3):
            try:
                return handler(request)
            except ConnectionError as error:
                if attempt == 2:
                    return self._give_up(request, error)
        return None

    async def awrap_tool_call(self, request, handler):
        for attempt in range(3):
            try:
                return await handler(request)
            except ConnectionError as error:
                if attempt == 2:
                    return self._give_up(request, error)
        return None


def hand_written_retry(model, tools, checkpointer):
    return create_agent(model, tools, middleware=[review_of(tools), HandRetry()], checkpointer=checkpointer)


class Builder:
    """A callable object, as a learner who likes classes writes it."""

    def __call__(self, model, tools, checkpointer):
        return SOL["build_agent"](model, tools, checkpointer)


# -- q1: mistakes -------------------------------------------------------------------------------------
def retry_outside(model, tools, checkpointer):
    middleware = [ToolRetryMiddleware(initial_delay=0), review_of(tools)]
    return create_agent(model, tools, middleware=middleware, checkpointer=checkpointer)


def batched(model, tools, checkpointer):
    review = HumanInTheLoopMiddleware(interrupt_on=flagged(tools))
    return create_agent(
        model, tools, middleware=[review, ToolRetryMiddleware(initial_delay=0)], checkpointer=checkpointer
    )


def names_from_the_text(model, tools, checkpointer):
    review = HumanInTheLoopMiddleware(interrupt_on={"transfer": True}, interrupt_mode="per_call")
    return create_agent(
        model, tools, middleware=[review, ToolRetryMiddleware(initial_delay=0)], checkpointer=checkpointer
    )


def every_tool_reviewed(model, tools, checkpointer):
    review = HumanInTheLoopMiddleware(interrupt_on={t.name: True for t in tools}, interrupt_mode="per_call")
    return create_agent(
        model, tools, middleware=[review, ToolRetryMiddleware(initial_delay=0)], checkpointer=checkpointer
    )


def no_retry(model, tools, checkpointer):
    return create_agent(model, tools, middleware=[review_of(tools)], checkpointer=checkpointer)


def retry_reraises(model, tools, checkpointer):
    retry = ToolRetryMiddleware(on_failure="error", initial_delay=0)
    return create_agent(model, tools, middleware=[review_of(tools), retry], checkpointer=checkpointer)


def four_attempts(model, tools, checkpointer):
    retry = ToolRetryMiddleware(max_retries=3, initial_delay=0)
    return create_agent(model, tools, middleware=[review_of(tools), retry], checkpointer=checkpointer)


def default_backoff(model, tools, checkpointer):
    return create_agent(
        model, tools, middleware=[review_of(tools), ToolRetryMiddleware()], checkpointer=checkpointer
    )


def no_edit_allowed(model, tools, checkpointer):
    review = HumanInTheLoopMiddleware(
        interrupt_on=flagged(tools, {"allowed_decisions": ["approve", "reject"]}), interrupt_mode="per_call"
    )
    return create_agent(
        model, tools, middleware=[review, ToolRetryMiddleware(initial_delay=0)], checkpointer=checkpointer
    )


def no_checkpointer(model, tools, checkpointer):
    return create_agent(model, tools, middleware=[review_of(tools), ToolRetryMiddleware(initial_delay=0)])


def payments_only_retried(model, tools, checkpointer):
    names = [t.name for t in tools if (t.metadata or {}).get("requires_approval")]
    retry = ToolRetryMiddleware(tools=names, initial_delay=0)
    return create_agent(model, tools, middleware=[review_of(tools), retry], checkpointer=checkpointer)


class SyncOnlyRetry(HandRetry):
    awrap_tool_call = AgentMiddleware.awrap_tool_call


def sync_only_retry(model, tools, checkpointer):
    return create_agent(
        model, tools, middleware=[review_of(tools), SyncOnlyRetry()], checkpointer=checkpointer
    )


def test_lab14_q1_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "the solution": SOL["build_agent"],
        "defaults, True, a jittered 0.05 s backoff": jittered_defaults,
        "an error handler outside a re-raising retry": error_handler_outside,
        "every tool named, a callable on_failure, a tuple": named_tools_and_callable,
        "a hand-written retry": hand_written_retry,
        "a callable object": Builder(),
        "the retry outside the review": retry_outside,
        "the batched review": batched,
        "interrupt_on from the lab text": names_from_the_text,
        "every tool reviewed": every_tool_reviewed,
        "no retry": no_retry,
        "on_failure='error', no handler": retry_reraises,
        "max_retries=3": four_attempts,
        "the default backoff": default_backoff,
        "edit not allowed": no_edit_allowed,
        "no checkpointer": no_checkpointer,
        "only the payments retried": payments_only_retried,
        "a sync-only retry under ainvoke": sync_only_retry,
    }
    assert_verdicts(
        verdicts(lambda build: lab14.q1.check({"build_agent": build}), answers),
        {
            "the solution": (),
            "defaults, True, a jittered 0.05 s backoff": (),
            "an error handler outside a re-raising retry": (),
            "every tool named, a callable on_failure, a tuple": (),
            "a hand-written retry": (),
            "a callable object": (),
            "the retry outside the review": ("more than once", "list the review before the retry"),
            "the batched review": ("waited for the reviewer", "interrupt_mode='per_call'"),
            "interrupt_on from the lab text": ("was never put to the reviewer", "not by the names"),
            "every tool reviewed": ("asked about a rate lookup", "requires_approval"),
            "no retry": ("run crashed", "ConnectionError", "retry every tool"),
            "on_failure='error', no handler": ("run crashed", "on_failure='error'"),
            "max_retries=3": ("exactly 3 attempts", "4 attempt(s)", "max_retries counts"),
            "the default backoff": ("waited too long", "initial_delay"),
            "edit not allowed": ("run crashed", "allow 'edit'"),
            "no checkpointer": ("nowhere to go", "checkpointer"),
            "only the payments retried": ("run crashed", "retry every tool"),
            "a sync-only retry under ainvoke": ("under ainvoke the run crashed", "awrap_tool_call"),
        },
    )


def test_lab14_q1_every_draw_holds_every_hard_case():
    shown = {t.name for t in lab14.make_tools()}
    for seed in range(40):
        scenario = lab14._draw(random.Random(seed))
        roles = sorted(c.role for c in scenario.calls)
        assert roles == ["down", "edited", "flaky", "lookup", "lookup", "plain", "rejected"], roles
        assert {c.tool for c in scenario.calls if c.decision} == set(scenario.flagged)
        assert (
            scenario.flagged[1] != "transfer"
            and sum(c.fails == 1 for c in scenario.calls if c.role == "lookup") == 1
        )
        assert len({c.key for c in scenario.calls}) == len({c.id for c in scenario.calls}) == 7
        # the second flagged tool and the unflagged one: drawn names, never one the lab prints
        assert scenario.plain and scenario.plain != scenario.flagged[1]
        assert not {scenario.plain, scenario.flagged[1]} & (shown | set(lab14.EXAMPLE_NAMES))
        plain = next(t for t in lab14._tools(scenario, lab14.Log()) if t.name == scenario.plain)
        assert plain.metadata == {"requires_approval": False}
    assert len({lab14._draw(random.Random(s)).flagged[1] for s in range(40)}) > 1
    assert len({lab14._draw(random.Random(s)).plain for s in range(40)}) > 1
    assert shown == {"transfer", "fetch_rate", *lab14.EXAMPLE_NAMES}


def printed_names(model, tools, checkpointer):  # the names make_tools() prints, typed in
    shown = {t.name for t in lab14.make_tools() if (t.metadata or {}).get("requires_approval")}
    review = HumanInTheLoopMiddleware(
        interrupt_on={t.name: True for t in tools if t.name in shown}, interrupt_mode="per_call"
    )
    return create_agent(
        model, tools, middleware=[review, ToolRetryMiddleware(initial_delay=0)], checkpointer=checkpointer
    )


def all_but_the_lookup(model, tools, checkpointer):  # every tool but fetch_rate
    review = HumanInTheLoopMiddleware(
        interrupt_on={t.name: True for t in tools if t.name != "fetch_rate"}, interrupt_mode="per_call"
    )
    return create_agent(
        model, tools, middleware=[review, ToolRetryMiddleware(initial_delay=0)], checkpointer=checkpointer
    )


def test_lab14_q1_a_review_keyed_on_names_is_refused_on_every_draw():
    answers = {
        "the names make_tools() prints": printed_names,
        "every tool but fetch_rate": all_but_the_lookup,
    }
    expected = {
        "the names make_tools() prints": ("was never put to the reviewer", "not by the names"),
        "every tool but fetch_rate": ("a tool that needs no approval", "'requires_approval': False"),
    }
    for seed in range(8):  # a pass on any seed fails the test
        results = verdicts(lambda build, seed=seed: lab14.check_agent(build, seed=seed), answers)
        assert_verdicts(results, expected)


def test_lab14_q1_flagged_lookups_are_named_not_blamed_on_batched_mode():
    (message,) = verdicts(lambda build: lab14.check_agent(build, seed=3), {"x": every_tool_reviewed}).values()
    assert "the rate lookups waited for the reviewer" in message, message
    assert "the lookups were flagged themselves" in message, message
    assert "interrupt_mode='batched'" not in message, message


def test_lab14_q1_faults_become_feedback(monkeypatch, capsys):
    def raises(model, tools, checkpointer):
        return {t.name: t for t in tools}["delete_file"]

    rejected(lab14.q1, {"build_agent": raises}, "your code raised KeyError", "delete_file")
    rejected(lab14.q1, {"build_agent": "agent"}, "must be a function")
    rejected(lab14.q1, {"build_agent": lambda model, tools, checkpointer: None}, "did not return an agent")
    rejected(lab14.q1, {}, "`build_agent` is not defined")

    class Sleeps(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            time.sleep(2)
            return handler(request)

        async def awrap_tool_call(self, request, handler):
            await asyncio.sleep(2)
            return await handler(request)

    def hangs(model, tools, checkpointer):
        return create_agent(model, tools, middleware=[Sleeps()], checkpointer=checkpointer)

    monkeypatch.setattr(lab14, "LIMIT", 0.5)
    rejected(lab14.q1, {"build_agent": hangs}, "did not return within 0.5 s")

    def exits(model, tools, checkpointer):
        raise SystemExit(3)

    rejected(lab14.q1, {"build_agent": exits}, "SystemExit")
    monkeypatch.setattr(lab14, "LIMIT", None)
    accepted(lab14.q1, SOL, capsys)  # usable after the hang


# -- q2 ------------------------------------------------------------------------------------------------
def test_lab14_q2_accepts_both_orders_and_names_each_wrong_one():
    answers = {
        "the solution": SOL["ORDER"],
        "errors outside the review": ["ledger", "errors", "review", "retry", "audit"],
        "a tuple": ("ledger", "review", "errors", "retry", "audit"),
        "the retry outside the review": ["ledger", "retry", "review", "errors", "audit"],
        "the error handler inside the retry": ["ledger", "review", "retry", "errors", "audit"],
        "the audit outside the retry": ["ledger", "review", "errors", "audit", "retry"],
        "the ledger inside the review": ["review", "ledger", "errors", "retry", "audit"],
        "the ledger inside the error handler": ["errors", "ledger", "review", "retry", "audit"],
        "the list reversed": ["audit", "retry", "errors", "review", "ledger"],
        "one name missing": ["ledger", "review", "retry", "audit"],
        "a name twice": ["ledger", "review", "errors", "retry", "audit", "audit"],
        "one string": "ledger, review, errors, retry, audit",
        "the starter": ["?"],
    }
    assert_verdicts(
        verdicts(lambda order: lab14.q2.check({"ORDER": order}), answers),
        {
            "the solution": (),
            "errors outside the review": (),
            "a tuple": (),
            "the retry outside the review": ("the retry and the error handler", "list errors before retry"),
            "the error handler inside the retry": ("1 attempt(s)", "list errors before retry"),
            "the audit outside the retry": ("one row per attempt", "inside the retry"),
            "the ledger inside the review": ("not what the model read", "rejected ones"),
            "the ledger inside the error handler": ("not what the model read", "raised"),
            "the list reversed": ("list errors before retry",),
            "one name missing": ("exactly once", "missing ['errors']"),
            "a name twice": ("exactly once", "twice ['audit']"),
            "one string": ("must be a list", "a str"),
            "the starter": ("exactly once", "unknown ['?']"),
        },
    )


def test_lab14_q2_a_review_inside_the_retry_is_named():
    # the error handler stays outside the retry, so the retry really retries and re-asks
    for order in (
        ["ledger", "errors", "retry", "review", "audit"],
        ["ledger", "errors", "retry", "audit", "review"],
    ):
        message = rejected(lab14.q2, {"ORDER": order})
        assert "more than once" in message and "list review before retry" in message, message
        # errors is already before retry: the verdict must not tell the learner to move it there
        assert "list errors before retry" not in message, message
        assert "the reviewer was asked" in message and "`review` is inside `retry`" in message, message


def test_lab14_q2_accepts_only_plain_names():
    class Name(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    rejected(lab14.q2, {"ORDER": [Name(n) for n in SOL["ORDER"]]}, "must be a name (a str)", "a Name")


# -- the pair ------------------------------------------------------------------------------------------
def test_lab14_starter_is_generated_and_still_a_stub():
    stem = NAMES["14"]
    assert (SOLUTIONS.parent / f"{stem}.ipynb").read_text(encoding="utf-8") == labs_build.starter_text(stem)
    assert set(labs_build.exercises("14")) == {"q1", "q2"}
    for exercise in (lab14.q1, lab14.q2):
        assert len(exercise.hints) >= 2


def _down_run(times: list[float]) -> tuple[lab14.Run, lab14.Scenario]:
    """A turn whose bank stays down: three attempts at `times`, then an error answer."""
    call = lab14.Call("call_1", "transfer_money", "ACC-1000", 10, "down", 99, "approve")
    log = lab14.Log()
    log.runs = [(0, call.key, call.amount, t) for t in times]
    log.questions = [(0, call.id)]
    run = lab14.Run("invoke", log, answers=((call.id, "error", "bank down"),))
    return run, lab14.Scenario(("transfer_money",), (call,))


@pytest.mark.parametrize(
    ("times", "too_long"),
    [
        ([0.0, 0.06, 0.17], False),  # initial_delay=0.05, doubling: what the lab asks for
        ([0.0, 0.12, 0.37], False),  # initial_delay=0.1 at the top of its jitter
        ([0.0, 0.81, 0.92], False),  # 0.05 s, the machine stalled 0.75 s in the first wait
        ([0.0, 0.06, 0.97], False),  # ... or in the second
        ([0.0, 0.9, 1.15], False),  # 0.1 s at the top of its jitter, a stall in the first wait
        ([0.0, 0.38, 0.76], True),  # a constant 0.5 s (backoff_factor=0) at the bottom of its jitter
        ([0.0, 0.4, 0.8], True),  # the default 1 s capped by max_delay=0.4
        ([0.0, 0.5, 1.5], True),  # initial_delay=0.5, doubling
        ([0.0, 0.76, 2.27], True),  # the default 1 s backoff at the bottom of its jitter
        ([0.0, 1.0, 2.0], True),  # a constant 1 s
    ],
)
def test_a_long_wait_is_one_both_gaps_show_so_one_stall_drops_out(times, too_long):
    run, scenario = _down_run(times)
    if too_long:
        with pytest.raises(CheckFailed, match="waited too long"):
            lab14.case_permanent_failure_three_attempts(run, scenario)
    else:
        lab14.case_permanent_failure_three_attempts(run, scenario)
