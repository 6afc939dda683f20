"""Lab 03 as a learner meets it: correct error policies written differently are accepted, and the
wrong answers beginners write (retrying everything, a hard-coded message, a wrong tool_call_id, a
bare-except retry loop, a retry keyed on the services' names, a made-up recovery, `sys.exit()` in an
interceptor, ...) are rejected with a message naming the mistake, on every run.
"""

from __future__ import annotations

import sys
import threading
import time

from lab_checks import assert_verdicts, rejected, verdicts
from langchain_core.messages import ToolMessage
from langgraph.prebuilt import ToolNode

import helpers.labs as core
from helpers.labs import lab03, solution_namespace


def _unavailable(request, text=None):
    name = request.tool_call["name"]
    return ToolMessage(
        text or f"{name} is unavailable, try again later.",
        name=name,
        tool_call_id=request.tool_call["id"],
        status="error",
    )


def retry_once_policy(tools):
    def retry_once(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def aretry_once(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return ToolNode(tools, wrap_tool_call=retry_once, awrap_tool_call=aretry_once)


class RetryPolicy:
    """A class with both wrappers as methods and a loop of attempts; other wording."""

    attempts = 2

    def wrap(self, request, execute):
        for _attempt in range(self.attempts):
            try:
                return execute(request)
            except ConnectionError as exc:
                last = exc
        return _unavailable(request, f"Sorry: {request.tool_call['name']} is unavailable ({last}).")

    async def awrap(self, request, execute):
        for _attempt in range(self.attempts):
            try:
                return await execute(request)
            except ConnectionError as exc:
                last = exc
        return _unavailable(request, f"Sorry: {request.tool_call['name']} is unavailable ({last}).")


def class_based(tools):
    policy = RetryPolicy()
    return ToolNode(tools, wrap_tool_call=policy.wrap, awrap_tool_call=policy.awrap)


def explicit_default(tools):
    """The default handler named explicitly, and the async wrapper delegating to a shared helper."""
    from langgraph.prebuilt.tool_node import _default_handle_tool_errors

    def decide(request, first_error, retry):
        try:
            return retry()
        except ConnectionError:
            return _unavailable(request)

    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError as exc:
            return decide(request, exc, lambda: execute(request))

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return ToolNode(
        tools, handle_tool_errors=_default_handle_tool_errors, wrap_tool_call=wrap, awrap_tool_call=awrap
    )


# -- wrong --------------------------------------------------------------------------------------------
def hard_coded_message(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return ToolMessage(
                    "lookup_traffic is unavailable", tool_call_id=request.tool_call["id"], status="error"
                )

    async def awrap(request, execute):
        return wrap(request, lambda r: None) if False else await _aw(request, execute)

    async def _aw(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return ToolMessage(
                    "lookup_traffic is unavailable", tool_call_id=request.tool_call["id"], status="error"
                )

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def retries_everything(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except Exception:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except Exception:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def retry_until_it_works(tools):
    def wrap(request, execute):
        while True:
            try:
                return execute(request)
            except ConnectionError:
                continue

    async def awrap(request, execute):
        while True:
            try:
                return await execute(request)
            except ConnectionError:
                continue

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def with_true(tools):
    node = retry_once_policy(tools)
    return ToolNode(
        tools,
        handle_tool_errors=True,
        wrap_tool_call=node._wrap_tool_call,
        awrap_tool_call=node._awrap_tool_call,
    )


def async_only(tools):
    return ToolNode(tools, awrap_tool_call=retry_once_policy(tools)._awrap_tool_call)


def sync_only(tools):
    return ToolNode(tools, wrap_tool_call=retry_once_policy(tools)._wrap_tool_call)


def exception_tuple(tools):
    return ToolNode(tools, handle_tool_errors=(ConnectionError,))


def handler_for_everything(tools):
    def retry(request, execute):
        return execute(request)

    return ToolNode(tools, handle_tool_errors=lambda e: f"failed: {e}", wrap_tool_call=retry)


def _retry_once_with(give_up):
    """Both wrappers retrying once; `give_up(request)` answers the second ConnectionError."""

    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return give_up(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return give_up(request)

    return wrap, awrap


def other_wordings(tools):  # the attacker's correct wordings, one per tool
    def give_up(request):
        name = request.tool_call["name"]
        text = f"Service {name} unavailable (connection failed twice)."
        if name == "lookup_ferries":
            text = f"{name} is currently unavailable, try again later."
        return _unavailable(request, text)

    wrap, awrap = _retry_once_with(give_up)
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def every_service_named(tools):  # the attacker's substring trick
    wrap, awrap = _retry_once_with(
        lambda request: _unavailable(
            request,
            "lookup_traffic is unavailable / lookup_ferries is unavailable / lookup_museums is unavailable",
        )
    )
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def wrong_tool_call_id(tools):
    wrap, awrap = _retry_once_with(
        lambda request: ToolMessage(
            f"{request.tool_call['name']} is unavailable", tool_call_id="unavailable", status="error"
        )
    )
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def retry_then_reraise(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            return execute(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            return await execute(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def never_executes_services(tools):
    def wrap(request, execute):
        name = request.tool_call["name"]
        if name in ("lookup_traffic", "lookup_ferries", "lookup_museums"):
            return ToolMessage(f"{name} is unavailable", tool_call_id=request.tool_call["id"], status="error")
        try:
            return execute(request)
        except ConnectionError:
            return execute(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=wrap)


def async_as_wrap_tool_call(tools):
    awrap = retry_once_policy(tools)._awrap_tool_call
    return ToolNode(tools, wrap_tool_call=awrap, awrap_tool_call=awrap)


def narrow_tuple_with_interceptor(tools):
    from langgraph.prebuilt.tool_node import ToolInvocationError

    node = retry_once_policy(tools)
    return ToolNode(
        tools,
        handle_tool_errors=(ToolInvocationError,),
        wrap_tool_call=node._wrap_tool_call,
        awrap_tool_call=node._awrap_tool_call,
    )


def bare_except_forever(tools):
    def wrap(request, execute):
        while True:
            try:
                return execute(request)
            except:  # noqa: E722 - the beginner's loop under test
                pass

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=retry_once_policy(tools)._awrap_tool_call)


def no_return(tools):
    ToolNode(tools)


def plain(tools):
    return ToolNode(tools)


def build_node_raises(tools):
    return ToolNode(tools, handle_tool_errors=handle)  # noqa: F821 - the learner's NameError


RELEASE = threading.Event()


def build_node_hangs(tools):
    RELEASE.wait()


def test_lab03_accepts_correct_alternatives_and_names_each_wrong_answer(monkeypatch):
    # the check's own limit is 10 s; 1 s here made a slow case read as a hang when three suites shared
    # 2 cores, so 2.5 s (only the hanging answers wait for it)
    monkeypatch.setattr(core, "LIMIT", 2.5)
    answers = {
        "two wrappers": retry_once_policy,
        "the solution": solution_namespace("03")["build_node"],
        "a class, a loop of two attempts, other wording": class_based,
        "the default handler named": explicit_default,
        "hard-coded outage message": hard_coded_message,
        "retries every error": retries_everything,
        "retry until it works": retry_until_it_works,
        "handle_tool_errors=True": with_true,
        "awrap_tool_call only": async_only,
        "an exception tuple": exception_tuple,
        "a handler for everything": handler_for_everything,
        "no interceptor": plain,
        "no return": no_return,
        "build_node raises": build_node_raises,
        "build_node hangs": build_node_hangs,
        "wrong signature": lambda: ToolNode([]),
        "other wordings of unavailable": other_wordings,
        "every service named": every_service_named,
        "a wrong tool_call_id": wrong_tool_call_id,
        "retry once, then re-raise": retry_then_reraise,
        "never calls execute for the services": never_executes_services,
        "an async def as wrap_tool_call": async_as_wrap_tool_call,
        "(ToolInvocationError,) and an interceptor": narrow_tuple_with_interceptor,
    }
    assert_verdicts(
        verdicts(lab03.check_policy, answers),
        {
            "two wrappers": (),
            "the solution": (),
            "a class, a loop of two attempts, other wording": (),
            "the default handler named": (),
            "hard-coded outage message": ("not the tool that failed", "request.tool_call['name']"),
            "retries every error": ("lookup_hotel ran 2 times", "catch only `ConnectionError`"),
            "retry until it works": (
                "a hang: no answer within 2.5 s",
                "a retry loop with no limit",
                "the course's tool then ended the loop",
                "not tried",
            ),
            "other wordings of unavailable": (),
            "every service named": ("which did not fail here", "not the tool that failed"),
            "a wrong tool_call_id": ("tool_call_id='unavailable'", "request.tool_call['id']"),
            "retry once, then re-raise": ("re-raised the second ConnectionError",),
            "never calls execute for the services": ("never ran: call `execute(request)`",),
            "an async def as wrap_tool_call": ("must be a plain `def`",),
            "(ToolInvocationError,) and an interceptor": ("answers EVERY exception that escapes it",),
            "handle_tool_errors=True": (
                "the retry never saw an exception",
                "turns every exception into a message",
            ),
            "awrap_tool_call only": ("skipped by sync invoke",),
            "an exception tuple": ("switches off the default answer to argument errors",),
            "a handler for everything": ("turns every exception into a message",),
            "no interceptor": ("ToolNode has no retry of its own",),
            "no return": (
                "None means `build_node` has no `return`",
                "build_node must return a ToolNode first",
            ),
            "build_node raises": ("your code raised NameError", "build_node_raises"),
            "build_node hangs": ("did not return within 2.5 s",),
            "wrong signature": ("cannot be called the way the exercise calls it",),
        },
    )
    RELEASE.set()  # free the thread the hanging build_node left behind


def test_lab03_a_bare_except_retry_loop_is_really_stopped(monkeypatch):
    """It caught even `CheckGaveUp` and went on burning a core while the message said it had ended."""
    monkeypatch.setattr(core, "LIMIT", 1.0)
    rejected(lab03.q1, {"build_node": bare_except_forever}, "a hang", "bare `except:`", "then ended the loop")
    start = time.process_time()
    time.sleep(0.5)
    assert time.process_time() - start < 0.2  # the loop is held still, not spinning


# -- what a determined learner tries: names instead of the exception, made-up answers, exits -------------
def _retry_if(should_retry):
    """Both wrappers retrying once only when `should_retry(request)`; otherwise one attempt."""

    def wrap(request, execute):
        if not should_retry(request):
            return execute(request)
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def awrap(request, execute):
        if not should_retry(request):
            return await execute(request)
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return wrap, awrap


def keyed_on_three_services(tools):
    wrap, awrap = _retry_if(
        lambda r: r.tool_call["name"] in ("lookup_traffic", "lookup_ferries", "lookup_trains")
    )
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def keyed_on_every_shown_name(tools):
    names = (*lab03.SERVICES, "lookup_trains")
    wrap, awrap = _retry_if(lambda r: r.tool_call["name"] in names)
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def keyed_on_the_tools_given(tools):  # correct: every tool it is given may be retried
    names = {t.name for t in tools}
    wrap, awrap = _retry_if(lambda r: r.tool_call["name"] in names)
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def made_up_recovery(tools):  # the flaky service "recovers" with a text of the learner's own
    def give_up(request):
        if request.tool_call["name"] == "lookup_trains":
            city = request.tool_call["args"]["city"]
            return ToolMessage(f"{city}: trains every 10 minutes", tool_call_id=request.tool_call["id"])
        return _unavailable(request)

    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            return give_up(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            return give_up(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def own_key_error(tools):  # the bug "propagates", as an exception of the learner's own
    def wrap(request, execute):
        try:
            return execute(request)
        except KeyError:
            raise KeyError("free") from None
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def awrap(request, execute):
        return wrap(request, lambda r: None) if False else await _aretry(request, execute)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=retry_once_policy(tools)._awrap_tool_call)


async def _aretry(request, execute):
    return await execute(request)


def exits_when_down(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            sys.exit(f"{request.tool_call['name']} is down")

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            sys.exit(f"{request.tool_call['name']} is down")

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def reraise_unless_connection(tools):  # correct: every exception caught, all but ConnectionError re-raised
    def wrap(request, execute):
        for attempt in (1, 2):
            try:
                return execute(request)
            except Exception as exc:
                if not isinstance(exc, ConnectionError):
                    raise
                if attempt == 2:
                    return _unavailable(request, f"{request.tool_call['name']} is unavailable: {exc}")

    async def awrap(request, execute):
        for attempt in (1, 2):
            try:
                return await execute(request)
            except Exception as exc:
                if not isinstance(exc, ConnectionError):
                    raise
                if attempt == 2:
                    return _unavailable(request, f"{request.tool_call['name']} is unavailable: {exc}")

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


class PolicyNode(ToolNode):
    """Correct: a ToolNode subclass carrying its retry as methods."""

    def __init__(self, tools):
        super().__init__(tools, wrap_tool_call=self.retry, awrap_tool_call=self.aretry)

    def retry(self, request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def aretry(self, request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)


def test_lab03_answers_keyed_on_names_made_up_or_exiting_are_refused_on_every_run():
    answers = {
        "the solution": solution_namespace("03")["build_node"],
        "keyed on the tools given": keyed_on_the_tools_given,
        "a ToolNode subclass": PolicyNode,
        "every exception caught, the others re-raised": reraise_unless_connection,
        "keyed on three named services": keyed_on_three_services,
        "keyed on every name the notebook shows": keyed_on_every_shown_name,
        "a made-up recovery": made_up_recovery,
        "a KeyError of its own": own_key_error,
        "sys.exit() when down": exits_when_down,
    }
    expected = {
        "the solution": (),
        "keyed on the tools given": (),
        "a ToolNode subclass": (),
        "every exception caught, the others re-raised": (),
        "keyed on three named services": (
            "ran once and its ConnectionError stopped the run",
            "whatever the tool's name",
        ),
        "keyed on every name the notebook shows": ("ran once and its ConnectionError stopped the run",),
        "a made-up recovery": ("is not one it gave", "without trying again"),
        "a KeyError of its own": ("the KeyError('free') lookup_hotel raised", "do not raise one of your own"),
        "sys.exit() when down": ("the run stopped: SystemExit", "`SystemExit` from your code stops more"),
    }
    for _ in range(3):  # refused on every draw, not on most
        assert_verdicts(verdicts(lab03.check_policy, answers), expected)


def test_lab03_every_draw_holds_every_kind_of_failure():
    for _ in range(200):
        scenario = lab03._draw(lab03._rng())
        kinds = [kind for kind, _, _ in scenario.calls()]
        assert set(lab03.SERVICES) < set(scenario.down) and len(scenario.down) == len(lab03.SERVICES) + 1
        assert set(kinds) == {kind for kind, _ in lab03.POLICY}
        assert scenario.unknown[0] in lab03.NEAR_NAMES and scenario.unknown[1] in lab03.OTHER_NAMES


def test_lab03_hands_out_no_answers_and_keeps_its_constants_immutable():
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(lab03))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                value = getattr(lab03, target.id)
                if target.id != "q1":
                    assert isinstance(value, str | int | float | tuple | frozenset), (target.id, type(value))
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            assert node.name in {"make_tools", "check_policy"}, node.name
