"""Library behaviour taught in notebooks/14_approval_retry_and_order.ipynb.

`HumanInTheLoopMiddleware` (its interrupt, the decisions it accepts, what each leaves in the
history, what a resume re-runs) beside lesson 08's approval interceptor and `create_react_agent`'s
equivalents; `ToolRetryMiddleware` (attempts, `on_failure`, `retry_on`, `tools`) and `ModelRetryMiddleware`'s
`retry_on`; the `respond` decision; and the order in which several middlewares' hooks run, with what
that order changes; and where the retry's backoff waits (a worker thread under `invoke`, the event
loop under `ainvoke`), and which hooks run on which path. Every test runs the sync path (`invoke`),
as the lesson's sections do, unless its name says `ainvoke`. Side effects are counted by course-side
recorders.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import warnings
from collections import Counter
from types import SimpleNamespace

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ModelRetryMiddleware,
    ToolCallLimitMiddleware,
    ToolErrorMiddleware,
    ToolRetryMiddleware,
    hook_config,
)
from langchain.agents.middleware import tool_retry as tool_retry_module
from langchain.tools import ToolRuntime
from langchain_core.exceptions import ModelAuthenticationError, ModelError, ModelRateLimitError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.types import Command, interrupt
from pydantic import ValidationError

from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import Rendezvous, default_pool_size

lesson = pytest.mark.lesson("14_approval_retry_and_order")
ASK = {"messages": [HumanMessage("go")]}
FAST = {"initial_delay": 0, "jitter": False}
TURN = [
    {"name": "send_email", "args": {"to": "ann"}},
    {"name": "lookup_weather", "args": {"city": "Paris"}},
    {"name": "delete_file", "args": {"path": "/tmp/a.log"}},
    {"name": "delete_file", "args": {"path": "/tmp/b.log"}},
]
THREE = {
    "decisions": [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "bob"}}},
        {"type": "approve"},
        {"type": "reject"},
    ]
}


def _reviewed(ran, model_turns=None, before=(), after=()):
    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(f"send_email {to}")
        return f"sent to {to}"

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(f"delete_file {path}")
        return f"deleted {path}"

    @tool
    def lookup_weather(city: str) -> str:
        """Look up the weather."""
        ran.append(f"lookup_weather {city}")
        return f"{city}: sunny"

    def first_turn(messages):
        if model_turns is not None:
            model_turns["first"] += 1
        return TURN

    review = HumanInTheLoopMiddleware(
        interrupt_on={"send_email": True, "delete_file": {"allowed_decisions": ["approve", "reject"]}}
    )
    agent = create_agent(
        ScriptedChatModel(script=[first_turn, tool_results_summary]),
        [send_email, delete_file, lookup_weather],
        middleware=[*before, review, *after],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}}
    paused = agent.invoke(ASK, config)
    return agent, config, paused


# --- 1. The interrupt ------------------------------------------------------------------------------


@lesson
def test_batched_review_raises_one_interrupt_listing_the_interrupt_on_calls_in_order_without_ids():
    agent, config, paused = _reviewed([])
    [question] = paused["__interrupt__"]
    assert sorted(question.value) == ["action_requests", "review_configs"]
    requests, configs = question.value["action_requests"], question.value["review_configs"]
    assert [(r["name"], r["args"]) for r in requests] == [
        ("send_email", {"to": "ann"}),
        ("delete_file", {"path": "/tmp/a.log"}),
        ("delete_file", {"path": "/tmp/b.log"}),
    ]
    assert all(sorted(r) == ["args", "description", "name"] for r in requests)  # no tool-call id
    assert (
        requests[0]["description"]
        == "Tool execution requires approval\n\nTool: send_email\nArgs: {'to': 'ann'}"
    )
    assert configs == [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject", "respond"]},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]},
    ]


@lesson
def test_batched_review_runs_no_tool_before_the_decisions_and_waits_at_its_after_model_node():
    ran = []
    agent, config, _ = _reviewed(ran)
    assert ran == []
    assert agent.get_state(config).next == ("HumanInTheLoopMiddleware.after_model",)


@lesson
def test_interrupt_on_config_without_allowed_decisions_raises_when_built():
    with pytest.raises(
        ValueError,
        match=r"^Invalid `interrupt_on` config for tool 'delete_file': `allowed_decisions` must be a "
        r"non-empty list",
    ):
        HumanInTheLoopMiddleware(interrupt_on={"delete_file": {"allowed": ["approve", "reject"]}})


# --- 2. Answering a batch --------------------------------------------------------------------------


@lesson
def test_a_wrong_number_of_decisions_raises_value_error():
    agent, config, _ = _reviewed([])
    with pytest.raises(
        ValueError,
        match=r"^Number of human decisions \(1\) does not match number of hanging "
        r"tool calls \(3\)\.",
    ):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)


@lesson
def test_a_wrong_answer_is_saved_and_replayed_by_the_next_resume():
    agent, config, _ = _reviewed([])
    with pytest.raises(ValueError):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    with pytest.raises(ValueError, match=r"Number of human decisions \(1\)"):
        agent.invoke(Command(resume=THREE), config)  # the right count, on the same thread


@lesson
def test_update_state_as_the_model_node_restarts_the_review_and_a_right_answer_then_works():
    ran = []
    agent, config, _ = _reviewed(ran)
    with pytest.raises(ValueError):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    agent.update_state(config, None, as_node="model")
    assert "__interrupt__" in agent.invoke(None, config)
    agent.invoke(Command(resume=THREE), config)
    assert sorted(ran) == ["delete_file /tmp/a.log", "lookup_weather Paris", "send_email bob"]


@lesson
@pytest.mark.parametrize(
    "bad",
    [
        {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/tmp/c.log"}}},
        {"type": "yes"},
    ],
)
def test_a_decision_type_the_tool_does_not_allow_raises_value_error(bad):
    agent, config, _ = _reviewed([])
    with pytest.raises(
        ValueError,
        match=r"^Unexpected human decision: .* is not allowed for tool 'delete_file'\. "
        r"Expected one of \['approve', 'reject'\]",
    ):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}, bad, {"type": "approve"}]}), config)


@lesson
def test_decisions_are_matched_by_position_so_a_swapped_pair_of_allowed_types_hits_the_wrong_calls():
    ran = []
    agent, config, _ = _reviewed(ran)
    meant = [{"type": "approve"}, {"type": "approve"}, {"type": "reject"}]  # delete a.log, keep b.log
    agent.invoke(Command(resume={"decisions": [meant[0], meant[2], meant[1]]}), config)
    assert "delete_file /tmp/b.log" in ran and "delete_file /tmp/a.log" not in ran


@lesson
def test_resuming_with_a_bare_list_of_decisions_raises_type_error():
    agent, config, _ = _reviewed([])
    with pytest.raises(TypeError, match="list indices must be integers or slices, not str"):
        agent.invoke(Command(resume=[{"type": "approve"}] * 3), config)


# --- 3. What each decision leaves ------------------------------------------------------------------


def _decided():
    ran = []
    agent, config, _ = _reviewed(ran)
    done = agent.invoke(Command(resume=THREE), config)
    return ran, done["messages"]


@lesson
def test_edit_runs_the_reviewers_args_keeps_the_models_call_and_prefixes_a_notice():
    ran, messages = _decided()
    [ai] = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert ai.tool_calls[0]["args"] == {"to": "ann"}
    assert "send_email bob" in ran and "send_email ann" not in ran
    edited = next(m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_0_0")
    assert edited.status == "success"
    assert edited.content.startswith("Note: a human reviewer replaced this tool call before it ran.")
    assert edited.content.endswith(
        'Executed instead: send_email with arguments {"to": "bob"}.\n\nTool response:\nsent to bob'
    )


@lesson
def test_reject_runs_nothing_and_answers_with_an_error_tool_message_right_after_the_ai_message():
    ran, messages = _decided()
    assert "delete_file /tmp/b.log" not in ran
    [ai] = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert [c["id"] for c in ai.tool_calls] == ["call_0_0", "call_0_1", "call_0_2", "call_0_3"]  # kept
    after_ai = messages[messages.index(ai) + 1]
    assert (after_ai.tool_call_id, after_ai.status) == ("call_0_3", "error")
    assert after_ai.content == (
        "User rejected the tool call for `delete_file` with id call_0_3. The tool was not "
        "executed. Do not retry this tool call unless the user explicitly requests it."
    )
    assert [m.tool_call_id for m in messages if isinstance(m, ToolMessage)][1:] == [
        "call_0_0",
        "call_0_1",
        "call_0_2",
    ]


@lesson
def test_reject_with_a_message_quotes_the_reason():
    agent, config, _ = _reviewed([])
    decisions = [{"type": "approve"}, {"type": "approve"}, {"type": "reject", "message": "Keep it."}]
    done = agent.invoke(Command(resume={"decisions": decisions}), config)
    rejected = next(
        m for m in done["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "call_0_3"
    )
    assert rejected.content == "User rejected the tool call for `delete_file` with reason: Keep it."


@lesson
def test_unlisted_tools_run_once_after_the_decisions():
    ran = []
    agent, config, _ = _reviewed(ran)
    assert ran == []  # paused: the unlisted lookup waits with the others
    agent.invoke(Command(resume=THREE), config)
    assert ran.count("lookup_weather Paris") == 1


# --- 7. Deep dive: what a resume re-runs ------------------------------------------------------------------


@lesson
def test_a_resume_reruns_the_after_model_node_without_calling_the_model_again():
    ran, model_turns = [], Counter()
    agent, config, _ = _reviewed(ran, model_turns)
    with pytest.raises(ValueError):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    agent.update_state(config, None, as_node="model")
    agent.invoke(None, config)
    agent.invoke(Command(resume=THREE), config)
    assert model_turns["first"] == 1


def _pair_tools(counted):
    @tool
    def lookup(city: str) -> str:
        """Look up the weather."""
        counted["lookup"] += 1
        return f"{city}: sunny"

    @tool
    def remove(path: str) -> str:
        """Delete a file."""
        counted["remove"] += 1
        return f"deleted {path}"

    return [lookup, remove]


def _approval(request, execute):
    if request.tool_call["name"] == "remove" and interrupt({"approve?": request.tool_call["args"]}) != "yes":
        return ToolMessage("refused", tool_call_id=request.tool_call["id"], name="remove", status="error")
    return execute(request)


PAIR = [{"name": "lookup", "args": {"city": "Paris"}}, {"name": "remove", "args": {"path": "/tmp/a.log"}}]


def _build(design, tools):
    model = ScriptedChatModel(script=[PAIR, tool_results_summary])
    if design == "hitl":
        return create_agent(
            model,
            tools,
            checkpointer=InMemorySaver(),
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"remove": True})],
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if design == "breakpoint":
            return create_react_agent(model, tools, interrupt_before=["tools"], checkpointer=InMemorySaver())
        return create_react_agent(
            model, ToolNode(tools, wrap_tool_call=_approval), version=design, checkpointer=InMemorySaver()
        )


@lesson
@pytest.mark.parametrize(
    ("design", "resume", "at_pause", "in_all"),
    [
        ("hitl", Command(resume={"decisions": [{"type": "approve"}]}), {}, {"lookup": 1, "remove": 1}),
        ("breakpoint", None, {}, {"lookup": 1, "remove": 1}),
        ("v2", Command(resume="yes"), {"lookup": 1}, {"lookup": 1, "remove": 1}),
        ("v1", Command(resume="yes"), {"lookup": 1}, {"lookup": 2, "remove": 1}),
    ],
)
def test_what_each_approval_design_runs_before_the_pause_and_in_all(design, resume, at_pause, in_all):
    counted = Counter()
    graph, config = _build(design, _pair_tools(counted)), {"configurable": {"thread_id": design}}
    graph.invoke(ASK, config)
    assert dict(counted) == at_pause
    graph.invoke(resume, config)
    assert dict(counted) == in_all


@lesson
def test_a_static_breakpoint_returns_no_interrupt_key_and_waits_before_every_tools_task():
    graph = _build("breakpoint", _pair_tools(Counter()))
    config = {"configurable": {"thread_id": "b"}}
    assert "__interrupt__" not in graph.invoke(ASK, config)
    assert graph.get_state(config).next == ("tools", "tools")
    streamed = _build("breakpoint", _pair_tools(Counter()))
    updates = list(streamed.stream(ASK, {"configurable": {"thread_id": "s"}}, stream_mode="updates"))
    assert updates[-1] == {"__interrupt__": ()}  # an "updates" stream ends with an empty one


@lesson
def test_create_agent_pauses_without_a_checkpointer_but_cannot_resume():
    agent = create_agent(
        ScriptedChatModel(script=[PAIR, tool_results_summary]),
        _pair_tools(Counter()),
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"remove": True})],
    )
    assert "__interrupt__" in agent.invoke(ASK)
    with pytest.raises(RuntimeError, match=r"^Cannot use Command\(resume=\.\.\.\) without checkpointer$"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}))


# --- 4. ToolRetryMiddleware ------------------------------------------------------------------------


def _try_retry(middleware, fails=99, args=None, error=ConnectionError):
    attempts = Counter()

    @tool
    def fetch_rates(currency: str) -> str:
        """Fetch an exchange rate."""
        attempts[currency] += 1
        if attempts[currency] <= fails:
            raise error(f"rates service dropped attempt {attempts[currency]}")
        return f"{currency}: 1.08"

    call = [{"name": "fetch_rates", "args": {"currency": "EUR"} if args is None else args}]
    agent = create_agent(
        ScriptedChatModel(script=[call, tool_results_summary]), [fetch_rates], middleware=middleware
    )
    try:
        answer = agent.invoke(ASK)["messages"][2]
        return attempts["EUR"], answer.status, answer.content
    except Exception as escaped:  # noqa: BLE001 - the test reports what escaped
        return attempts["EUR"], "raised", f"{type(escaped).__name__}: {escaped}"


@lesson
def test_retry_defaults_are_two_retries_from_one_second_doubling_with_jitter():
    retry = ToolRetryMiddleware()
    assert (
        retry.max_retries,
        retry.initial_delay,
        retry.backoff_factor,
        retry.max_delay,
        retry.jitter,
        retry.on_failure,
    ) == (2, 1.0, 2.0, 60.0, True, "continue")


@lesson
def test_default_retry_on_retries_every_exception_but_a_model_error_that_is_not_retryable():
    default = inspect.signature(ToolRetryMiddleware.__init__).parameters["retry_on"].default
    assert default.__name__ == "default_retry_on"
    assert ToolRetryMiddleware().retry_on is default
    assert all(default(error) for error in (ValueError("x"), ConnectionError("x"), TimeoutError("x")))
    assert issubclass(ModelAuthenticationError, ModelError) and issubclass(ModelRateLimitError, ModelError)
    assert ModelRateLimitError("x").is_retryable and not ModelAuthenticationError("x").is_retryable
    assert default(ModelRateLimitError("x")) and not default(ModelAuthenticationError("x"))


@lesson
def test_by_default_a_model_authentication_error_is_raised_after_one_attempt_skipping_on_failure():
    outcome = _try_retry([ToolRetryMiddleware(on_failure="continue", **FAST)], error=ModelAuthenticationError)
    assert outcome == (1, "raised", "ModelAuthenticationError: rates service dropped attempt 1")


@lesson
def test_by_default_a_model_rate_limit_error_is_retried_and_answered_after_the_last_attempt():
    tries, status, content = _try_retry([ToolRetryMiddleware(**FAST)], error=ModelRateLimitError)
    assert (tries, status) == (3, "error")
    assert content == (
        "Tool 'fetch_rates' failed after 3 attempts with ModelRateLimitError: "
        "rates service dropped attempt 3. Please try again."
    )


@lesson
def test_retry_sleeps_one_then_two_seconds_by_default_and_not_after_the_last_attempt(monkeypatch):
    slept = []
    monkeypatch.setattr(tool_retry_module.time, "sleep", slept.append)
    assert _try_retry([ToolRetryMiddleware(jitter=False)])[0] == 3
    assert slept == [1.0, 2.0]
    slept.clear()
    assert _try_retry([ToolRetryMiddleware()])[0] == 3
    assert len(slept) == 2 and 0.75 <= slept[0] <= 1.25 and 1.5 <= slept[1] <= 2.5


def _waits(monkeypatch, **options):
    """The delays the middleware asks `time.sleep` for, recorded instead of slept (as the lesson does)."""
    asked = []
    monkeypatch.setattr(tool_retry_module, "time", SimpleNamespace(sleep=asked.append))
    _try_retry([ToolRetryMiddleware(**options)])
    return asked


@lesson
def test_backoff_factor_zero_waits_initial_delay_before_every_retry(monkeypatch):
    assert _waits(monkeypatch, backoff_factor=0, initial_delay=0.5, max_retries=3, jitter=False) == [0.5] * 3


@lesson
def test_jitter_is_added_after_the_max_delay_cap_so_a_wait_can_exceed_it_by_a_quarter(monkeypatch):
    capped = _waits(monkeypatch, initial_delay=60, max_retries=40)  # every delay is capped at 60 s
    assert len(capped) == 40
    assert all(45 <= wait <= 75 for wait in capped)
    assert max(capped) > 60  # all 40 at or under 60 has probability 2**-40
    assert _waits(monkeypatch, initial_delay=60, max_retries=40, jitter=False) == [60.0] * 40


@lesson
@pytest.mark.parametrize(
    ("options", "fails", "expected"),
    [
        ({}, 1, (2, "success", "EUR: 1.08")),
        (
            {},
            99,
            (
                3,
                "error",
                "Tool 'fetch_rates' failed after 3 attempts with ConnectionError: rates service "
                "dropped attempt 3. Please try again.",
            ),
        ),
        (
            {"max_retries": 4},
            99,
            (
                5,
                "error",
                "Tool 'fetch_rates' failed after 5 attempts with ConnectionError: "
                "rates service dropped attempt 5. Please try again.",
            ),
        ),
        ({"on_failure": "error"}, 99, (3, "raised", "ConnectionError: rates service dropped attempt 3")),
        (
            {"on_failure": lambda e: f"rates down ({type(e).__name__})"},
            99,
            (3, "error", "rates down (ConnectionError)"),
        ),
    ],
)
def test_retry_attempts_and_what_the_model_sees_after_the_last_failure(options, fails, expected):
    assert _try_retry([ToolRetryMiddleware(**options, **FAST)], fails=fails) == expected


@lesson
def test_an_exception_outside_retry_on_propagates_at_once_and_skips_on_failure():
    tries, status, content = _try_retry(
        [ToolRetryMiddleware(retry_on=(TimeoutError,), on_failure="continue", **FAST)]
    )
    assert (tries, status, content) == (1, "raised", "ConnectionError: rates service dropped attempt 1")


@lesson
def test_a_tool_outside_the_tools_filter_is_not_retried():
    assert _try_retry([ToolRetryMiddleware(tools=["search"], **FAST)])[:2] == (1, "raised")


@lesson
def test_an_argument_error_is_never_retried_it_comes_back_as_an_error_message():
    tries, status, content = _try_retry([ToolRetryMiddleware(**FAST)], args={})
    assert (tries, status) == (0, "error")
    assert content.startswith("Error invoking tool 'fetch_rates' with kwargs {} with error:")


# --- 15. Deep dive: what the retry lets through ----------------------------------------------------


@lesson
def test_an_interrupt_inside_a_retried_tool_propagates_at_once_and_the_resume_runs_the_tool_once_more():
    runs = Counter()

    @tool
    def charge(amount: int) -> str:
        """Charge a card, after asking."""
        runs["charge"] += 1
        return f"charged {amount}" if interrupt({"charge": amount}) == "yes" else "not charged"

    agent = create_agent(
        ScriptedChatModel(script=[[{"name": "charge", "args": {"amount": 5}}], tool_results_summary]),
        [charge],
        middleware=[ToolRetryMiddleware(**FAST)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "charge"}}
    assert "__interrupt__" in agent.invoke(ASK, config)
    assert runs["charge"] == 1
    assert agent.invoke(Command(resume="yes"), config)["messages"][2].content == "charged 5"
    assert runs["charge"] == 2


@lesson
def test_a_parent_command_raised_inside_a_retried_tool_propagates_and_is_not_retried():
    from langgraph.errors import ParentCommand

    runs = Counter()

    @tool
    def hand_off(reason: str) -> str:
        """Hand off by raising, as a subgraph run inside the tool would."""
        runs["hand_off"] += 1
        raise ParentCommand(Command(graph=Command.PARENT, goto="billing"))

    agent = create_agent(
        ScriptedChatModel(script=[[{"name": "hand_off", "args": {"reason": "refund"}}], "done"]),
        [hand_off],
        middleware=[ToolRetryMiddleware(**FAST)],
    )
    with pytest.raises(ParentCommand):
        agent.invoke(ASK)
    assert runs["hand_off"] == 1


@lesson
def test_a_returned_parent_command_comes_back_through_the_retry_as_a_result_after_one_attempt():
    seen, runs = [], Counter()

    class ResultTypes(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            result = handler(request)
            seen.append(type(result).__name__)
            return result

    @tool
    def to_billing(reason: str, runtime: ToolRuntime) -> Command:
        """Hand the conversation to billing."""
        runs["to_billing"] += 1
        handed = ToolMessage(f"handed to billing: {reason}", tool_call_id=runtime.tool_call_id)
        return Command(graph=Command.PARENT, goto="billing", update={"messages": [handed]})

    support = create_agent(
        ScriptedChatModel(script=[[{"name": "to_billing", "args": {"reason": "refund"}}], "done"]),
        [to_billing],
        middleware=[ResultTypes(), ToolRetryMiddleware(**FAST)],
    )
    desk = StateGraph(MessagesState)
    desk.add_node("support", support)
    desk.add_node("billing", lambda state: {"messages": [AIMessage("billing here")]})
    desk.add_edge(START, "support")
    desk.add_edge("support", END)
    desk.add_edge("billing", END)
    result = desk.compile().invoke(ASK)
    assert (seen, runs["to_billing"]) == (["Command"], 1)
    assert result["messages"][-1].content == "billing here"


# --- 5. Hook order ---------------------------------------------------------------------------------


class _Recorder(AgentMiddleware):
    def __init__(self, label, trace):
        super().__init__()
        self.label, self.trace = label, trace

    @property
    def name(self):
        return f"Recorder[{self.label}]"

    def before_agent(self, state, runtime):
        self.trace.append(f"{self.label}.before_agent")

    def before_model(self, state, runtime):
        self.trace.append(f"{self.label}.before_model")

    def after_model(self, state, runtime):
        self.trace.append(f"{self.label}.after_model")

    def after_agent(self, state, runtime):
        self.trace.append(f"{self.label}.after_agent")

    def wrap_model_call(self, request, handler):
        self.trace.append(f"{self.label}.wrap_model_call >")
        response = handler(request)
        self.trace.append(f"{self.label}.wrap_model_call <")
        return response

    def wrap_tool_call(self, request, handler):
        self.trace.append(f"{self.label}.wrap_tool_call >")
        result = handler(request)
        self.trace.append(f"{self.label}.wrap_tool_call <")
        return result


@lesson
def test_before_hooks_run_in_list_order_after_hooks_in_reverse_wrap_hooks_nest_first_outermost():
    trace = []

    @tool
    def weather(city: str) -> str:
        """Look up the weather."""
        trace.append("tool")
        return f"{city}: sunny"

    create_agent(
        ScriptedChatModel(script=[[{"name": "weather", "args": {"city": "Paris"}}], tool_results_summary]),
        [weather],
        middleware=[_Recorder("A", trace), _Recorder("B", trace)],
    ).invoke(ASK)
    model_call = [
        "A.before_model",
        "B.before_model",
        "A.wrap_model_call >",
        "B.wrap_model_call >",
        "B.wrap_model_call <",
        "A.wrap_model_call <",
        "B.after_model",
        "A.after_model",
    ]
    tool_call = [
        "A.wrap_tool_call >",
        "B.wrap_tool_call >",
        "tool",
        "B.wrap_tool_call <",
        "A.wrap_tool_call <",
    ]
    assert trace == [
        "A.before_agent",
        "B.before_agent",
        *model_call,
        *tool_call,
        *model_call,
        "B.after_agent",
        "A.after_agent",
    ]


@lesson
def test_across_a_pause_the_pausing_invocation_runs_only_before_agent_and_the_resume_only_after_agent():
    trace, ran = [], []
    agent, config, paused = _reviewed(ran, before=[_Recorder("A", trace)])
    assert "__interrupt__" in paused
    pausing = [entry for entry in trace if "agent" in entry]
    trace.clear()
    agent.invoke(Command(resume=THREE), config)
    assert pausing == ["A.before_agent"]
    assert [entry for entry in trace if "agent" in entry] == ["A.after_agent"]


class _AsyncRecorder(AgentMiddleware):
    def __init__(self, label, trace):
        super().__init__()
        self.label, self.trace = label, trace

    @property
    def name(self):
        return f"AsyncRecorder[{self.label}]"

    async def abefore_agent(self, state, runtime):
        self.trace.append(f"{self.label}.before_agent")

    async def abefore_model(self, state, runtime):
        self.trace.append(f"{self.label}.before_model")

    async def aafter_model(self, state, runtime):
        self.trace.append(f"{self.label}.after_model")

    async def aafter_agent(self, state, runtime):
        self.trace.append(f"{self.label}.after_agent")

    async def awrap_model_call(self, request, handler):
        self.trace.append(f"{self.label}.wrap_model_call >")
        response = await handler(request)
        self.trace.append(f"{self.label}.wrap_model_call <")
        return response

    async def awrap_tool_call(self, request, handler):
        self.trace.append(f"{self.label}.wrap_tool_call >")
        result = await handler(request)
        self.trace.append(f"{self.label}.wrap_tool_call <")
        return result


def _weather_agent(middleware, trace):
    @tool
    def weather(city: str) -> str:
        """Look up the weather."""
        trace.append("tool")
        return f"{city}: sunny"

    return create_agent(
        ScriptedChatModel(script=[[{"name": "weather", "args": {"city": "Paris"}}], tool_results_summary]),
        [weather],
        middleware=middleware,
    )


@lesson
def test_under_ainvoke_async_hooks_run_in_the_same_order_as_sync_hooks_under_invoke():
    sync_trace, async_trace = [], []
    _weather_agent([_Recorder("A", sync_trace), _Recorder("B", sync_trace)], sync_trace).invoke(ASK)
    recorders = [_AsyncRecorder("A", async_trace), _AsyncRecorder("B", async_trace)]
    async_agent = _weather_agent(recorders, async_trace)
    asyncio.run(async_agent.ainvoke(ASK))
    assert async_trace == sync_trace
    assert async_trace[:2] == ["A.before_agent", "B.before_agent"]
    assert async_trace[-2:] == ["B.after_agent", "A.after_agent"]


class _SyncNodeHooks(AgentMiddleware):
    def __init__(self, trace):
        super().__init__()
        self.trace = trace

    def before_agent(self, state, runtime):
        self.trace.append("before_agent")

    def before_model(self, state, runtime):
        self.trace.append("before_model")

    def after_model(self, state, runtime):
        self.trace.append("after_model")

    def after_agent(self, state, runtime):
        self.trace.append("after_agent")


@lesson
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
def test_sync_before_and_after_hooks_run_under_both_invoke_and_ainvoke(path):
    trace = []
    agent = _weather_agent([_SyncNodeHooks(trace)], trace)
    agent.invoke(ASK) if path == "invoke" else asyncio.run(agent.ainvoke(ASK))
    assert trace == ["before_agent", "before_model", "after_model", "tool", "before_model", "after_model",
                     "after_agent"]


class _SyncWrapTool(AgentMiddleware):
    def wrap_tool_call(self, request, handler):
        return handler(request)


class _SyncWrapModel(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request)


class _AsyncWrapTool(AgentMiddleware):
    async def awrap_tool_call(self, request, handler):
        return await handler(request)


class _AsyncWrapModel(AgentMiddleware):
    async def awrap_model_call(self, request, handler):
        return await handler(request)


class _AsyncBeforeModel(AgentMiddleware):
    async def abefore_model(self, state, runtime):
        return None


@lesson
@pytest.mark.parametrize(("middleware", "hook"), [(_SyncWrapTool, "awrap_tool_call"),
                                                  (_SyncWrapModel, "awrap_model_call")])
def test_a_sync_only_wrap_hook_raises_not_implemented_error_under_ainvoke(middleware, hook):
    trace = []
    with pytest.raises(NotImplementedError, match=f"^Asynchronous implementation of {hook} is not available"):
        asyncio.run(_weather_agent([middleware()], trace).ainvoke(ASK))
    assert _weather_agent([middleware()], trace).invoke(ASK)["messages"][-1].content == "Paris: sunny"


@lesson
@pytest.mark.parametrize(("middleware", "hook"), [(_AsyncWrapTool, "wrap_tool_call"),
                                                  (_AsyncWrapModel, "wrap_model_call")])
def test_an_async_only_wrap_hook_raises_not_implemented_error_under_invoke(middleware, hook):
    trace = []
    with pytest.raises(NotImplementedError, match=f"^Synchronous implementation of {hook} is not available"):
        _weather_agent([middleware()], trace).invoke(ASK)
    result = asyncio.run(_weather_agent([middleware()], trace).ainvoke(ASK))
    assert result["messages"][-1].content == "Paris: sunny"


@lesson
def test_an_async_only_before_model_hook_raises_type_error_under_invoke():
    trace = []
    with pytest.raises(TypeError, match='^No synchronous function provided to "abefore_model"'):
        _weather_agent([_AsyncBeforeModel()], trace).invoke(ASK)
    assert trace == []
    assert asyncio.run(_weather_agent([_AsyncBeforeModel()], trace).ainvoke(ASK))["messages"][-1].content == (
        "Paris: sunny"
    )


# --- 6. What the order changes ---------------------------------------------------------------------


class _LogResults(AgentMiddleware):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def wrap_tool_call(self, request, handler):
        try:
            result = handler(request)
        except Exception as error:
            self.log.append(type(error).__name__)
            raise
        self.log.append(result.status)
        return result


@lesson
def test_a_logger_outside_a_retry_sees_one_result_inside_it_sees_every_attempt():
    outside, inside = [], []
    assert _try_retry([_LogResults(outside), ToolRetryMiddleware(**FAST)], fails=2)[:2] == (3, "success")
    assert _try_retry([ToolRetryMiddleware(**FAST), _LogResults(inside)], fails=2)[:2] == (3, "success")
    assert outside == ["success"]
    assert inside == ["ConnectionError", "ConnectionError", "success"]


@lesson
def test_an_error_middleware_inside_a_retry_hides_the_exception_so_one_attempt_is_made():
    def readable(error, request):
        return f"{request.tool_call['name']} is down ({type(error).__name__})"

    outside = _try_retry([ToolErrorMiddleware(readable), ToolRetryMiddleware(on_failure="error", **FAST)])
    inside = _try_retry([ToolRetryMiddleware(**FAST), ToolErrorMiddleware(readable)])
    assert outside == (3, "error", "fetch_rates is down (ConnectionError)")
    assert inside == (1, "error", "fetch_rates is down (ConnectionError)")


@lesson
def test_an_error_middleware_outside_a_retry_that_continues_never_fires():
    def readable(error, request):
        return f"{request.tool_call['name']} is down ({type(error).__name__})"

    tries, status, content = _try_retry([ToolErrorMiddleware(readable), ToolRetryMiddleware(**FAST)])
    assert (tries, status) == (3, "error")
    assert content == (
        "Tool 'fetch_rates' failed after 3 attempts with ConnectionError: "
        "rates service dropped attempt 3. Please try again."
    )


def _questions_asked(order, fails):
    tries = Counter()

    @tool
    def transfer(amount: int) -> str:
        """Transfer money (the bank drops the first `fails` requests)."""
        tries["transfer"] += 1
        if tries["transfer"] <= fails:
            raise ConnectionError("the bank dropped the request")
        return f"transferred {amount}"

    review = HumanInTheLoopMiddleware(interrupt_on={"transfer": True}, interrupt_mode="per_call")
    retry = ToolRetryMiddleware(**FAST)
    agent = create_agent(
        ScriptedChatModel(script=[[{"name": "transfer", "args": {"amount": 5}}], tool_results_summary]),
        [transfer],
        middleware=[review, retry] if order == "review first" else [retry, review],
        checkpointer=InMemorySaver(),
    )
    config, asked = {"configurable": {"thread_id": "transfer"}}, 0
    result = agent.invoke(ASK, config)
    while "__interrupt__" in result:
        asked += 1
        result = agent.invoke(
            Command(resume={i.id: {"type": "approve"} for i in result["__interrupt__"]}), config
        )
    answer = next(m for m in reversed(result["messages"]) if isinstance(m, ToolMessage))
    return asked, tries["transfer"], answer.content.startswith("transferred 5")


@lesson
@pytest.mark.parametrize(
    ("fails", "review_first", "retry_first"),
    [
        (1, (1, 2, True), (2, 2, True)),
        (2, (1, 3, True), (2, 3, True)),
        (99, (1, 3, False), (3, 6, False)),
    ],
)
def test_per_call_review_inside_a_retry_asks_at_each_new_attempt_and_each_resume_reruns_the_earlier_ones(
    fails, review_first, retry_first
):
    assert _questions_asked("review first", fails) == review_first
    assert _questions_asked("retry first", fails) == retry_first


@lesson
def test_a_per_call_answer_of_a_type_not_allowed_raises_validation_error_before_it_is_saved():
    ran = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    agent = create_agent(
        ScriptedChatModel(script=[[TURN[2]], tool_results_summary]),
        [delete_file],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={"delete_file": {"allowed_decisions": ["approve", "reject"]}},
                interrupt_mode="per_call",
            )
        ],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "checked"}}
    [question] = agent.invoke(ASK, config)["__interrupt__"]
    with pytest.raises(ValidationError, match="Input tag 'edit' found using 'type' does not match"):
        agent.invoke(Command(resume={question.id: {"type": "edit", "edited_action": TURN[2]}}), config)
    assert ran == []
    result = agent.invoke(Command(resume={question.id: {"type": "approve"}}), config)
    assert ran == ["/tmp/a.log"] and "__interrupt__" not in result


# --- 8. Deep dive: create_react_agent's static breakpoint ------------------------------------------


def _at_breakpoint(counted):
    graph, config = _build("breakpoint", _pair_tools(counted)), {"configurable": {"thread_id": "b"}}
    graph.invoke(ASK, config)
    return graph, config, graph.get_state(config).values["messages"][-1]


@lesson
def test_answering_one_call_as_the_tools_node_skips_the_other_and_the_model_node_refuses_the_history():
    counted = Counter()
    graph, config, calls = _at_breakpoint(counted)
    refusal = ToolMessage("refused", tool_call_id=calls.tool_calls[1]["id"], name="remove", status="error")
    graph.update_state(config, {"messages": [refusal]}, as_node="tools")
    with pytest.raises(
        ValueError, match="^Found AIMessages with tool_calls that do not have a corresponding ToolMessage"
    ):
        graph.invoke(None, config)
    assert counted == {}


@lesson
def test_rewriting_the_ai_message_as_the_agent_node_runs_only_the_kept_call():
    counted = Counter()
    graph, config, calls = _at_breakpoint(counted)
    kept = AIMessage(
        id=calls.id,
        content="(remove refused by the user)",
        tool_calls=[c for c in calls.tool_calls if c["name"] != "remove"],
    )
    graph.update_state(config, {"messages": [kept]}, as_node="agent")
    assert graph.invoke(None, config)["messages"][-1].content == "Paris: sunny"
    assert counted == {"lookup": 1}


# --- 9. Deep dive: approval beside a call limit ----------------------------------------------------


@lesson
@pytest.mark.parametrize(("review_first", "blocked_while_asking"), [(True, ["call_0_2"]), (False, [])])
def test_the_review_asks_about_every_flagged_call_even_one_the_limit_blocks(
    review_first, blocked_while_asking
):
    counted = Counter()
    tools = _pair_tools(counted)
    review, limit = (
        HumanInTheLoopMiddleware(interrupt_on={"remove": True}),
        ToolCallLimitMiddleware(run_limit=2),
    )
    three = [{"name": "remove", "args": {"path": f"/tmp/{x}.log"}} for x in "abc"]
    agent = create_agent(
        ScriptedChatModel(script=[three, tool_results_summary]),
        tools,
        middleware=[review, limit] if review_first else [limit, review],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "limit"}}
    [ask] = agent.invoke(ASK, config)["__interrupt__"]
    assert len(ask.value["action_requests"]) == 3
    answered = [
        m.tool_call_id for m in agent.get_state(config).values["messages"] if isinstance(m, ToolMessage)
    ]
    assert answered == blocked_while_asking
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}] * 3}), config)
    assert counted["remove"] == 2


# --- 11. Deep dive: two ways past the batched review -----------------------------------------------


class _JumpToTools(AgentMiddleware):
    @hook_config(can_jump_to=["tools"])
    def after_model(self, state, runtime):
        last_ai = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        return {"jump_to": "tools"} if last_ai.tool_calls else None


@lesson
def test_jump_to_tools_listed_before_the_review_runs_the_rejected_call_and_answers_it_twice():
    ran = []
    agent, config, paused = _reviewed(ran, before=[_JumpToTools()])
    assert "__interrupt__" in paused
    agent.invoke(Command(resume=THREE), config)
    assert "delete_file /tmp/b.log" in ran  # rejected, and run anyway
    answers = [m for m in agent.get_state(config).values["messages"] if isinstance(m, ToolMessage)]
    assert [(m.status, m.content) for m in answers if m.tool_call_id == "call_0_3"] == [
        (
            "error",
            "User rejected the tool call for `delete_file` with id call_0_3. The tool was not "
            "executed. Do not retry this tool call unless the user explicitly requests it.",
        ),
        ("success", "deleted /tmp/b.log"),
    ]


@lesson
def test_jump_to_tools_listed_after_the_review_skips_it_and_every_call_runs_unasked():
    ran = []
    agent, config, paused = _reviewed(ran, after=[_JumpToTools()])
    assert "__interrupt__" not in paused
    assert sorted(ran) == [
        "delete_file /tmp/a.log",
        "delete_file /tmp/b.log",
        "lookup_weather Paris",
        "send_email ann",
    ]


@lesson
def test_a_batched_edit_may_name_another_tool_whose_own_config_is_not_consulted():
    ran = []
    agent, config, _ = _reviewed(ran)
    to_deletion = {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/etc/hosts"}}}
    decisions = [to_deletion, {"type": "approve"}, {"type": "reject"}]
    agent.invoke(Command(resume={"decisions": decisions}), config)
    assert sorted(ran) == ["delete_file /etc/hosts", "delete_file /tmp/a.log", "lookup_weather Paris"]


# --- 12. Deep dive: respond ------------------------------------------------------------------------


def _asked_user(asked, config):
    @tool
    def ask_user(question: str) -> str:
        """Ask the user a question."""
        asked.append(question)
        return "the tool ran"

    agent = create_agent(
        ScriptedChatModel(script=[[{"name": "ask_user", "args": {"question": "Which region?"}}], "done"]),
        [ask_user],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"ask_user": config})],
        checkpointer=InMemorySaver(),
    )
    thread = {"configurable": {"thread_id": "ask"}}
    agent.invoke(ASK, thread)
    return agent, thread


@lesson
@pytest.mark.parametrize("config", [{"allowed_decisions": ["respond"]}, True], ids=["respond-only", "True"])
def test_respond_answers_with_the_reviewers_message_as_a_success_tool_message_and_the_tool_never_runs(config):
    asked = []
    agent, thread = _asked_user(asked, config)
    decisions = [{"type": "respond", "message": "eu-west-1, please."}]
    messages = agent.invoke(Command(resume={"decisions": decisions}), thread)["messages"]
    assert asked == []
    ai, answer = messages[1:3]
    assert [(c["id"], c["name"]) for c in ai.tool_calls] == [("call_0_0", "ask_user")]  # kept
    assert isinstance(answer, ToolMessage)
    assert (answer.tool_call_id, answer.status) == ("call_0_0", "success")
    assert answer.content == "eu-west-1, please."  # verbatim, no notice in front
    assert answer.additional_kwargs == {
        "lc_source": "hitl_interrupt_decision",
        "lc_data": {"decision": "respond"},
    }
    assert messages[-1].content == "done"


@lesson
def test_respond_for_a_tool_whose_allowed_decisions_do_not_name_it_raises_value_error():
    ran = []
    agent, config, _ = _reviewed(ran)
    decisions = [{"type": "approve"}, {"type": "respond", "message": "Deleted."}, {"type": "approve"}]
    with pytest.raises(
        ValueError,
        match=r"^Unexpected human decision: \{'type': 'respond', 'message': 'Deleted\.'\}\. "
        r"Decision type 'respond' is not allowed for tool 'delete_file'\. "
        r"Expected one of \['approve', 'reject'\]",
    ):
        agent.invoke(Command(resume={"decisions": decisions}), config)
    assert ran == []


@lesson
def test_a_respond_only_config_refuses_approve_and_a_respond_without_message_raises_key_error():
    agent, thread = _asked_user([], {"allowed_decisions": ["respond"]})
    with pytest.raises(ValueError, match=r"Decision type 'approve' is not allowed for tool 'ask_user'"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), thread)
    agent, thread = _asked_user([], True)
    with pytest.raises(KeyError, match="message"):
        agent.invoke(Command(resume={"decisions": [{"type": "respond"}]}), thread)


# --- 13. Deep dive: ModelRetryMiddleware and retry_on ----------------------------------------------


def _model_retry(error, **options):
    calls = Counter()

    def turn(messages):
        calls["model"] += 1
        raise error("the model endpoint failed")

    retry = ModelRetryMiddleware(**options, **FAST)
    agent = create_agent(ScriptedChatModel(script=[turn]), [], middleware=[retry])
    try:
        last = agent.invoke(ASK)["messages"][-1]
        return calls["model"], type(last).__name__, last.content
    except Exception as escaped:
        return calls["model"], "raised", f"{type(escaped).__name__}: {escaped}"


@lesson
def test_model_retry_takes_tool_retrys_parameters_but_tools():
    tool_side = set(inspect.signature(ToolRetryMiddleware.__init__).parameters)
    model_side = set(inspect.signature(ModelRetryMiddleware.__init__).parameters)
    assert (tool_side - model_side, model_side - tool_side) == ({"tools"}, set())


@lesson
def test_model_retry_re_raises_an_exception_outside_retry_on_at_once_even_with_on_failure_continue():
    outcome = _model_retry(ValueError, retry_on=(TimeoutError,), on_failure="continue")
    assert outcome == (1, "raised", "ValueError: the model endpoint failed")


@lesson
def test_model_retry_continue_ends_the_run_with_an_ai_message_after_the_last_attempt():
    outcome = _model_retry(TimeoutError, retry_on=(TimeoutError,), on_failure="continue")
    assert outcome == (
        3,
        "AIMessage",
        "Model call failed after 3 attempts with TimeoutError: the model endpoint failed",
    )


# --- 14. Deep dive: where the backoff waits -------------------------------------------------------
def _failing_once(where):
    @tool
    def fetch_rate(currency: str) -> str:
        """Fetch an exchange rate (each currency's first attempt fails)."""
        where.append((currency, threading.get_ident()))
        if [c for c, _ in where].count(currency) == 1:
            raise ConnectionError("dropped")
        return f"{currency}: 1.08"

    @tool
    async def afetch_rate(currency: str) -> str:
        """Fetch an exchange rate (each currency's first attempt fails)."""
        return fetch_rate.func(currency)

    return fetch_rate, afetch_rate


def _backing_off(rate_tool, delay=0.05):
    calls = [{"name": rate_tool.name, "args": {"currency": c}} for c in ("EUR", "USD")]
    return create_agent(ScriptedChatModel(script=[calls, tool_results_summary]), [rate_tool],
                        middleware=[ToolRetryMiddleware(initial_delay=delay, jitter=False)])


@lesson
def test_under_invoke_the_backoff_is_time_sleep_on_the_worker_thread_that_runs_the_call(monkeypatch):
    where, slept = [], []
    real_sleep = tool_retry_module.time.sleep

    def recording_sleep(seconds):
        slept.append(threading.get_ident())
        real_sleep(seconds)

    monkeypatch.setattr(tool_retry_module.time, "sleep", recording_sleep)
    fetch_rate, _ = _failing_once(where)
    _backing_off(fetch_rate).invoke(ASK)
    threads = {currency: {t for c, t in where if c == currency} for currency in ("EUR", "USD")}
    assert len(where) == 4 and all(len(t) == 1 for t in threads.values())
    assert threading.get_ident() not in threads["EUR"] | threads["USD"]
    assert sorted(slept) == sorted(next(iter(t)) for t in threads.values())  # each slept on its own worker


@lesson
def test_under_invoke_a_call_backing_off_keeps_its_worker_so_a_bounded_pool_runs_the_next_call_after_it():
    where = []
    fetch_rate, _ = _failing_once(where)
    _backing_off(fetch_rate).invoke(ASK, {"max_concurrency": 1})
    first = where[0][0]
    assert [c for c, _ in where] == [first, first] + [c for c, _ in where[2:]] and where[2][0] != first


@lesson
def test_under_ainvoke_the_backoff_awaits_asyncio_sleep_on_the_loop_thread_and_holds_no_thread(monkeypatch):
    where, awaited = [], []
    real_sleep = asyncio.sleep

    async def recording_sleep(seconds, *args, **kwargs):
        awaited.append(threading.get_ident())
        return await real_sleep(seconds, *args, **kwargs)

    def no_blocking_sleep(seconds):
        raise AssertionError("time.sleep was called under ainvoke")

    monkeypatch.setattr(tool_retry_module.asyncio, "sleep", recording_sleep)
    monkeypatch.setattr(tool_retry_module.time, "sleep", no_blocking_sleep)
    _, afetch_rate = _failing_once(where)

    async def main():
        await _backing_off(afetch_rate).ainvoke(ASK)
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(where) == 4 and {t for _, t in where} == {loop_thread}
    assert loop_thread in awaited


@lesson
def test_under_invoke_backing_off_calls_fill_the_graphs_task_pool_and_one_more_waits_for_a_thread():
    pool = default_pool_size()
    gate, events, lock = Rendezvous(pool), [], threading.Lock()
    tries = Counter()

    @tool
    def fetch_rate(currency: str) -> str:
        """Fetch an exchange rate (each currency's first attempt fails)."""
        with lock:
            tries[currency] += 1
            first = tries[currency] == 1
            if first:
                events.append(("first attempt", currency))
        if first:
            gate.wait()  # the first `pool` calls are in flight together (forced)
            raise ConnectionError("dropped")
        with lock:
            events.append(("done", currency))
        return f"{currency}: 1.08"

    calls = [{"name": "fetch_rate", "args": {"currency": f"C{n}"}} for n in range(pool + 1)]
    create_agent(
        ScriptedChatModel(script=[calls, tool_results_summary]),
        [fetch_rate],
        middleware=[ToolRetryMiddleware(initial_delay=0.05, jitter=False)],
    ).invoke(ASK)
    assert gate.opened
    firsts = [i for i, (kind, _) in enumerate(events) if kind == "first attempt"]
    dones = [i for i, (kind, _) in enumerate(events) if kind == "done"]
    assert len(firsts) == len(dones) == pool + 1
    assert firsts[pool - 1] < dones[0] < firsts[pool]  # the extra call started only once a call was done
