"""Contract tests for lesson 08: interceptors (`wrap_tool_call` / `awrap_tool_call`) inside ToolNode —
logging, retry, deny-list, argument rewriting, approval with `interrupt()`, locks and deadlines, and
the two pitfalls — as the lesson teaches them.

Each test pins one behaviour of the pinned langgraph-prebuilt by running it (not the notebook).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import CallRecorder, Stopwatch
from helpers.tools import make_city_tools

lesson = pytest.mark.lesson("08_interceptors")
DELAY = 0.1


def call(name, id, **args):
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def ai(*calls):
    return AIMessage(content="", tool_calls=list(calls))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_delete_file():
    deleted: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file (pretend)."""
        deleted.append(path)
        return f"deleted {path}"

    return delete_file, deleted


def refusal(request):
    return ToolMessage("denied", name=request.tool_call["name"], tool_call_id=request.tool_call["id"],
                       status="error")


def one_node_graph(node, state=MessagesState, **compile_kwargs):
    builder = StateGraph(state)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    return builder.compile(**compile_kwargs)


# -- 3. interceptors --------------------------------------------------------------------------------

def make_flaky():
    attempts: Counter = Counter()

    @tool
    def flaky(city: str) -> str:
        """Fails twice, then works."""
        attempts[city] += 1
        if attempts[city] < 3:
            raise ConnectionError("dropped")
        return f"ok {attempts[city]}"

    return flaky, attempts


def retry(request, execute, tries=3):
    for attempt in range(1, tries + 1):
        try:
            return execute(request)
        except ConnectionError:
            if attempt == tries:
                raise


@lesson
def test_a_wrapper_may_call_execute_again_to_retry():
    flaky, attempts = make_flaky()
    node = ToolNode([flaky], wrap_tool_call=retry)
    out = node.invoke([ai(call("flaky", "1", city="x"))], runtime=Runtime())
    assert out[0].content == "ok 3" and attempts["x"] == 3


@lesson
def test_retry_sees_an_error_message_not_an_exception_when_errors_are_handled():
    flaky, attempts = make_flaky()
    node = ToolNode([flaky], wrap_tool_call=retry, handle_tool_errors=True)
    out = node.invoke([ai(call("flaky", "1", city="x"))], runtime=Runtime())
    assert out[0].status == "error" and attempts["x"] == 1


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    if b == 0:
        raise ValueError(f"cannot divide {a} by zero")
    return a / b


def passthrough(request, execute):
    return execute(request)


async def apassthrough(request, execute):
    return await execute(request)


def network_error(error: ConnectionError) -> str:
    return f"network problem: {error}"


def run_path(node, batch, path):
    return node.invoke(batch, runtime=Runtime()) if path == "invoke" else asyncio.run(
        node.ainvoke(batch, runtime=Runtime()))


WRAPPED = {"invoke": {"wrap_tool_call": passthrough}, "ainvoke": {"awrap_tool_call": apassthrough}}
DIVIDE_BY_ZERO = [ai(call("divide", "1", a=1, b=0))]


@lesson
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
@pytest.mark.parametrize("policy, content", [
    (ConnectionError, "Error: ValueError('cannot divide 1 by zero')\n Please fix your mistakes."),
    ((ConnectionError, KeyError), "Error: ValueError('cannot divide 1 by zero')\n Please fix your mistakes."),
    (network_error, "network problem: cannot divide 1 by zero"),
], ids=["type", "tuple", "annotated-callable"])
def test_with_an_interceptor_a_type_tuple_or_annotated_policy_answers_every_exception_that_escapes_it(
        policy, content, path):
    """Without an interceptor these policies let the ValueError raise (lesson 03's matrix). Around the
    wrapper, `_run_one`/`_arun_one` answer whatever escapes it whenever the policy is truthy: no check of
    the handled types (an annotated handler is called with any exception)."""
    with pytest.raises(ValueError):
        ToolNode([divide], handle_tool_errors=policy).invoke(DIVIDE_BY_ZERO, runtime=Runtime())
    node = ToolNode([divide], handle_tool_errors=policy, **WRAPPED[path])
    (answer,) = run_path(node, DIVIDE_BY_ZERO, path)
    assert (answer.status, answer.content) == ("error", content)


@lesson
@pytest.mark.parametrize("policy", [ConnectionError, (ConnectionError,)], ids=["type", "tuple"])
def test_with_only_awrap_tool_call_a_narrow_policy_answers_under_ainvoke_and_raises_under_invoke(policy):
    """The rule holds once the path runs a wrapper: `invoke` runs only `wrap_tool_call`, so an
    `awrap_tool_call` alone leaves it without one, and the policy answers only its own types there."""
    node = ToolNode([divide], handle_tool_errors=policy, awrap_tool_call=apassthrough)
    with pytest.raises(ValueError, match="cannot divide 1 by zero"):
        node.invoke(DIVIDE_BY_ZERO, runtime=Runtime())
    (answer,) = asyncio.run(node.ainvoke(DIVIDE_BY_ZERO, runtime=Runtime()))
    assert (answer.status, answer.content) == (
        "error", "Error: ValueError('cannot divide 1 by zero')\n Please fix your mistakes.")


@lesson
def test_with_only_wrap_tool_call_a_narrow_policy_answers_under_both_paths():
    """`ainvoke` falls back to the sync wrapper, so the path runs a wrapper either way."""
    node = ToolNode([divide], handle_tool_errors=(ConnectionError,), wrap_tool_call=passthrough)
    for path in ("invoke", "ainvoke"):
        (answer,) = run_path(node, DIVIDE_BY_ZERO, path)
        assert answer.status == "error" and answer.content.startswith("Error: ValueError(")


@lesson
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
@pytest.mark.parametrize("policy", ["default", False], ids=["default", "false"])
def test_with_an_interceptor_the_default_and_false_still_raise(policy, path):
    options = {} if policy == "default" else {"handle_tool_errors": policy}
    node = ToolNode([divide], **options, **WRAPPED[path])
    with pytest.raises(ValueError, match="cannot divide 1 by zero"):
        run_path(node, DIVIDE_BY_ZERO, path)


@lesson
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
def test_with_an_interceptor_the_default_still_answers_argument_errors(path):
    node = ToolNode([add], **WRAPPED[path])
    (answer,) = run_path(node, [ai(call("add", "1", a=1))], path)
    assert answer.status == "error" and answer.content.startswith("Error invoking tool 'add' with kwargs")


def key_error_only(error: KeyError) -> str:
    return f"missing key: {error}"


@lesson
@pytest.mark.parametrize("policy", [False, ValueError, (ValueError, KeyError), key_error_only],
                         ids=["false", "type", "tuple", "annotated-callable"])
def test_a_retry_wrapper_sees_the_exception_under_false_and_under_a_policy_that_does_not_cover_it(policy):
    flaky, attempts = make_flaky()
    node = ToolNode([flaky], wrap_tool_call=retry, handle_tool_errors=policy)
    out = node.invoke([ai(call("flaky", "1", city="x"))], runtime=Runtime())
    assert out[0].content == "ok 3" and attempts["x"] == 3


@lesson
@pytest.mark.parametrize("policy", [True, "tool failed", ConnectionError, network_error],
                         ids=["true", "string", "type", "annotated-callable"])
def test_a_retry_wrapper_gets_a_message_under_a_policy_that_covers_the_exception(policy):
    flaky, attempts = make_flaky()
    node = ToolNode([flaky], wrap_tool_call=retry, handle_tool_errors=policy)
    out = node.invoke([ai(call("flaky", "1", city="x"))], runtime=Runtime())
    assert out[0].status == "error" and attempts["x"] == 1


@lesson
def test_when_retries_run_out_a_policy_that_did_not_cover_the_exception_answers_it_anyway():
    flaky, attempts = make_flaky()
    node = ToolNode([flaky], wrap_tool_call=lambda r, e: retry(r, e, tries=2), handle_tool_errors=ValueError)
    out = node.invoke([ai(call("flaky", "1", city="x"))], runtime=Runtime())
    assert attempts["x"] == 2
    assert (out[0].status, out[0].content) == (
        "error", "Error: ConnectionError('dropped')\n Please fix your mistakes.")


@lesson
def test_a_wrapper_that_never_executes_short_circuits_the_tool():
    delete_file, deleted = make_delete_file()
    node = ToolNode([delete_file], wrap_tool_call=lambda request, execute: refusal(request))
    out = node.invoke([ai(call("delete_file", "1", path="/etc/hosts"))], runtime=Runtime())
    assert out[0].content == "denied" and deleted == []


@lesson
def test_a_wrapper_sees_no_tool_for_an_unknown_name():
    seen = []

    def spy(request, execute):
        seen.append(request.tool)
        return execute(request)

    out = ToolNode([add], wrap_tool_call=spy).invoke([ai(call("nope", "1"))], runtime=Runtime())
    assert seen == [None] and out[0].status == "error"


@lesson
def test_override_returns_a_new_request_with_the_new_arguments():
    seen = []

    def rewrite(request, execute):
        new = request.override(tool_call={**request.tool_call, "args": {"a": 10, "b": 20}})
        seen.append((request.tool_call["args"], new.tool_call["args"]))
        return execute(new)

    out = ToolNode([add], wrap_tool_call=rewrite).invoke([ai(call("add", "1", a=1, b=2))], runtime=Runtime())
    assert out[0].content == "30"
    assert seen == [({"a": 1, "b": 2}, {"a": 10, "b": 20})]


@lesson
def test_assigning_to_a_request_is_deprecated():
    def assign(request, execute):
        request.tool_call = {**request.tool_call, "args": {"a": 5, "b": 5}}
        return execute(request)

    node = ToolNode([add], wrap_tool_call=assign)
    with pytest.warns(DeprecationWarning, match="Use the override"):
        out = node.invoke([ai(call("add", "1", a=1, b=2))], runtime=Runtime())
    assert out[0].content == "10"


def approval(request, execute):
    if request.tool_call["name"] == "delete_file":
        if interrupt({"approve?": request.tool_call["args"]}) != "yes":
            return refusal(request)
    return execute(request)


def approval_graph(checkpointer):
    recorder = CallRecorder()
    delete_file, deleted = make_delete_file()
    tools = [make_city_tools(delay=0.01, recorder=recorder, sync=True)[0], delete_file]
    graph = one_node_graph(ToolNode(tools, wrap_tool_call=approval), checkpointer=checkpointer)
    batch = {"messages": [ai(call("lookup_weather", "1", city="Paris"), call("delete_file", "2", path="/x"))]}
    return graph, batch, recorder, deleted


@lesson
def test_interrupt_in_a_wrapper_pauses_and_resume_continues():
    graph, batch, _, deleted = approval_graph(InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke(batch, thread)
    assert [i.value for i in paused["__interrupt__"]] == [{"approve?": {"path": "/x"}}] and deleted == []
    graph.invoke(Command(resume="yes"), thread)
    assert deleted == ["/x"]


@lesson
def test_resuming_reruns_every_call_of_the_interrupted_batch():
    graph, batch, recorder, _ = approval_graph(InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    graph.invoke(batch, thread)
    assert len(recorder.calls) == 1
    graph.invoke(Command(resume="yes"), thread)
    assert len(recorder.calls) == 2


@lesson
def test_resume_without_a_checkpointer_raises():
    graph, batch, _, _ = approval_graph(None)
    assert "__interrupt__" in graph.invoke(batch)
    with pytest.raises(RuntimeError, match=r"Cannot use Command\(resume=...\) without checkpointer"):
        graph.invoke(Command(resume="yes"))


def timed_tool(recorder, name, seconds):
    async def run(key: str) -> str:
        with recorder.span(name):
            await asyncio.sleep(seconds)
        return f"{name}({key})"

    return StructuredTool.from_function(coroutine=run, name=name, description=name)


@lesson
@pytest.mark.timing
def test_an_async_wrapper_can_lock_one_tool_while_others_run_concurrently():
    recorder = CallRecorder()
    lock = asyncio.Lock()

    async def guard(request, execute):
        async with lock if request.tool_call["name"] == "write_db" else contextlib.nullcontext():
            return await execute(request)

    node = ToolNode([timed_tool(recorder, "write_db", DELAY), timed_tool(recorder, "read_api", DELAY)],
                    awrap_tool_call=guard)
    batch = [ai(call("write_db", "w1", key="a"), call("write_db", "w2", key="b"),
                call("read_api", "r1", key="x"))]
    asyncio.run(node.ainvoke(batch, runtime=Runtime()))
    writes = sorted((c for c in recorder.calls if c.label == "write_db"), key=lambda c: c.start)
    read = next(c for c in recorder.calls if c.label == "read_api")
    assert writes[0].end <= writes[1].start  # one write at a time (the lock, not the clock)
    assert read.start < writes[0].end  # the read ran alongside the first write


@lesson
@pytest.mark.timing
def test_an_async_wrapper_timeout_cancels_an_async_tool():
    recorder = CallRecorder()

    async def deadline(request, execute):
        try:
            async with asyncio.timeout(2 * DELAY) as cm:
                return await execute(request)
        except TimeoutError:
            if not cm.expired():
                raise  # the tool's own TimeoutError, not our deadline
            return refusal(request)

    node = ToolNode([timed_tool(recorder, "slow", 30 * DELAY)], awrap_tool_call=deadline)
    out = asyncio.run(node.ainvoke([ai(call("slow", "1", key="z"))], runtime=Runtime()))
    assert out[0].status == "error"
    assert recorder.calls[0].seconds < 10 * DELAY  # cut at 0.2 s, not 3 s


@lesson
def test_an_async_deadline_answers_a_sync_tool_on_time_while_its_thread_runs_on():
    """Driven by events: the sync tool works until released, after the deadline has answered."""
    release, done = threading.Event(), threading.Event()

    def until_released(key: str) -> str:
        release.wait(5)
        done.set()
        return "done"

    sync_tool = StructuredTool.from_function(func=until_released, name="slow", description="slow")

    async def deadline(request, execute):
        try:
            async with asyncio.timeout(2 * DELAY) as cm:
                return await execute(request)
        except TimeoutError:
            if not cm.expired():
                raise
            return refusal(request)

    async def scenario():
        (answer,) = await ToolNode([sync_tool], awrap_tool_call=deadline).ainvoke(
            [ai(call("slow", "1", key="z"))], runtime=Runtime())
        running_when_answered = not done.is_set()
        release.set()
        return answer, running_when_answered, await asyncio.to_thread(done.wait, 5)

    answer, running_when_answered, finished_later = asyncio.run(scenario())
    assert answer.content == "denied" and running_when_answered and finished_later


@lesson
def test_only_an_async_wrapper_is_silently_skipped_by_sync_invoke():
    delete_file, deleted = make_delete_file()

    async def deny(request, execute):
        return refusal(request)

    node = ToolNode([delete_file], awrap_tool_call=deny)
    batch = [ai(call("delete_file", "1", path="/etc/hosts"))]
    assert asyncio.run(node.ainvoke(batch, runtime=Runtime()))[0].content == "denied"
    assert node.invoke(batch, runtime=Runtime())[0].content == "deleted /etc/hosts"
    assert deleted == ["/etc/hosts"]


@lesson
@pytest.mark.timing
def test_only_a_sync_wrapper_serialises_sync_tools_under_ainvoke():
    plain, wrapped = CallRecorder(), CallRecorder()

    def batch_of(tools):
        return [ai(*(call(t.name, f"{t.name}-{i}", city="Paris") for t in tools for i in range(3)))]

    plain_tools = make_city_tools(delay=2 * DELAY, sync=True, recorder=plain)
    asyncio.run(ToolNode(plain_tools).ainvoke(batch_of(plain_tools), runtime=Runtime()))
    wrapped_tools = make_city_tools(delay=2 * DELAY, sync=True, recorder=wrapped)
    wrapped_node = ToolNode(wrapped_tools, wrap_tool_call=lambda request, execute: execute(request))
    with Stopwatch() as sw:
        asyncio.run(wrapped_node.ainvoke(batch_of(wrapped_tools), runtime=Runtime()))
    assert wrapped.max_in_flight() == 1  # one after another ...
    assert sw.seconds >= 6 * 2 * DELAY  # ... so never faster than the sum
    assert plain.max_in_flight() > 1  # without the wrapper they overlap in the loop's thread pool


@lesson
def test_only_a_sync_wrapper_runs_sync_tools_on_the_event_loop_thread():
    recorder = CallRecorder()
    tools = make_city_tools(delay=0.01, recorder=recorder, sync=True)
    node = ToolNode(tools, wrap_tool_call=lambda request, execute: execute(request))
    batch = [ai(*(call(t.name, t.name, city="Paris") for t in tools))]

    async def run():
        await node.ainvoke(batch, runtime=Runtime())
        return threading.current_thread().name

    loop_thread = asyncio.run(run())
    assert {worker.split(" / ")[0] for worker in recorder.workers()} == {loop_thread}


@lesson
@pytest.mark.parametrize("path, wrapper, on_the_loop_thread", [
    ("invoke", "wrap_tool_call", False),
    ("ainvoke", "wrap_tool_call", True),
    ("ainvoke", "awrap_tool_call", True),
])
def test_a_wrapper_runs_in_a_pool_thread_under_invoke_and_on_the_event_loop_thread_under_ainvoke(
        path, wrapper, on_the_loop_thread):
    seen, loop_thread = [], []

    def note(request, execute):
        seen.append(threading.current_thread())
        return execute(request)

    async def anote(request, execute):
        seen.append(threading.current_thread())
        return await execute(request)

    node = ToolNode([add], **{wrapper: note if wrapper == "wrap_tool_call" else anote})
    batch = [ai(call("add", "1", a=1, b=2))]
    if path == "invoke":
        node.invoke(batch, runtime=Runtime())
        loop_thread.append(threading.current_thread())  # no loop: the caller's thread
    else:
        async def run():
            loop_thread.append(threading.current_thread())
            await node.ainvoke(batch, runtime=Runtime())

        asyncio.run(run())
    assert (seen == loop_thread) is on_the_loop_thread


@lesson
def test_only_a_sync_wrapper_breaks_async_tools_under_ainvoke():
    node = ToolNode(make_city_tools(delay=0.01)[:1], wrap_tool_call=lambda r, execute: execute(r))
    with pytest.raises(NotImplementedError, match="StructuredTool does not support sync invocation."):
        asyncio.run(node.ainvoke([ai(call("lookup_weather", "1", city="Paris"))], runtime=Runtime()))


@lesson
def test_only_a_sync_wrapper_under_ainvoke_with_a_catching_policy_answers_async_tools_with_an_error():
    node = ToolNode(make_city_tools(delay=0.01)[:1], wrap_tool_call=lambda r, execute: execute(r),
                    handle_tool_errors=True)
    (answer,) = asyncio.run(node.ainvoke([ai(call("lookup_weather", "1", city="Paris"))], runtime=Runtime()))
    assert (answer.status, answer.content) == (
        "error", "Error: NotImplementedError('StructuredTool does not support sync invocation.')\n"
                 " Please fix your mistakes.")


@lesson
def test_an_async_only_tool_fails_under_invoke_with_or_without_a_sync_wrapper():
    batch = [ai(call("lookup_weather", "1", city="Paris"))]
    for options in ({}, {"wrap_tool_call": lambda r, execute: execute(r)}):
        node = ToolNode(make_city_tools(delay=0.01)[:1], **options)
        with pytest.raises(NotImplementedError, match="StructuredTool does not support sync invocation."):
            node.invoke(batch, runtime=Runtime())


@lesson
def test_with_both_wrappers_an_async_only_tool_runs_under_ainvoke():
    node = ToolNode(make_city_tools(delay=0.01)[:1], wrap_tool_call=lambda r, execute: execute(r),
                    awrap_tool_call=apassthrough)
    (answer,) = asyncio.run(node.ainvoke([ai(call("lookup_weather", "1", city="Paris"))], runtime=Runtime()))
    assert (answer.status, answer.content) == ("success", "Paris: sunny, 25 °C")


@lesson
def test_both_wrappers_cover_both_paths():
    delete_file, deleted = make_delete_file()

    async def deny_async(request, execute):
        return refusal(request)

    node = ToolNode([delete_file], wrap_tool_call=lambda r, execute: refusal(r), awrap_tool_call=deny_async)
    batch = [ai(call("delete_file", "1", path="/etc/hosts"))]
    assert node.invoke(batch, runtime=Runtime())[0].content == "denied"
    assert asyncio.run(node.ainvoke(batch, runtime=Runtime()))[0].content == "denied"
    assert deleted == []


# -- 3. approval: what a resume re-runs ---------------------------------------------------------------

def approval_loop(route=tools_condition, wrapper=None):
    """Lesson 08's llm -> tools -> llm loop: a lookup and a deletion in one turn; the deletion asks."""
    recorder, asked = CallRecorder(), []
    delete_file, deleted = make_delete_file()

    def approve(request, execute):
        if request.tool_call["name"] == "delete_file":
            asked.append(request.tool_call["id"])
            if interrupt({"approve?": request.tool_call["args"]}) != "yes":
                return refusal(request)
        return execute(request)

    tools = [make_city_tools(delay=0.01, recorder=recorder, sync=True)[0], delete_file]
    model = ScriptedChatModel(script=[
        [{"name": "lookup_weather", "args": {"city": "Paris"}},
         {"name": "delete_file", "args": {"path": "/x"}}],
        tool_results_summary,
    ]).bind_tools(tools)
    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools, wrap_tool_call=wrapper or approve))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", route, ["tools", END])
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=InMemorySaver()), recorder, asked, deleted


def one_send_per_call(state):
    last = state["messages"][-1]
    return [Send("tools", [c]) for c in last.tool_calls] if last.tool_calls else END


QUESTION = {"messages": [("user", "Weather in Paris? And delete the old log file.")]}


@lesson
def test_lines_before_interrupt_run_again_on_resume():
    graph, _, asked, deleted = approval_loop()
    thread = {"configurable": {"thread_id": "t"}}
    graph.invoke(QUESTION, thread)
    assert asked == ["call_0_1"]
    graph.invoke(Command(resume="yes"), thread)
    assert asked == ["call_0_1", "call_0_1"] and deleted == ["/x"]


@lesson
def test_one_send_per_call_confines_the_rerun_to_the_call_that_asked():
    graph, recorder, asked, deleted = approval_loop(route=one_send_per_call)
    thread = {"configurable": {"thread_id": "t"}}
    graph.invoke(QUESTION, thread)
    done = graph.invoke(Command(resume="yes"), thread)
    assert len(recorder.calls) == 1  # the lookup ran once
    assert len(asked) == 2 and deleted == ["/x"]
    assert done["messages"][-1].content == "Paris: sunny, 25 °C; deleted /x"


@lesson
def test_a_broad_except_around_interrupt_swallows_the_pause():
    caught = []

    def careless(request, execute):
        if request.tool_call["name"] == "delete_file":
            try:
                interrupt("approve?")
            except Exception as error:  # noqa: BLE001 - the mistake the lesson shows
                caught.append(type(error).__name__)
                return refusal(request)
        return execute(request)

    graph, _, _, deleted = approval_loop(wrapper=careless)
    result = graph.invoke(QUESTION, {"configurable": {"thread_id": "t"}})
    assert "__interrupt__" not in result and caught == ["GraphInterrupt"] and deleted == []



def approve_two_deletions(route_per_call):
    delete_file, deleted = make_delete_file()

    def approve(request, execute):
        if interrupt({"approve?": request.tool_call["args"]}) != "yes":
            return refusal(request)
        return execute(request)

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([delete_file], wrap_tool_call=approve))
    if route_per_call:
        builder.add_conditional_edges(START, one_send_per_call, ["tools", END])
    else:
        builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    two = ai(call("delete_file", "d1", path="/a"), call("delete_file", "d2", path="/b"))
    result, questions = graph.invoke({"messages": [two]}, thread), []
    while "__interrupt__" in result:
        questions.append(len(result["__interrupt__"]))
        result = graph.invoke(Command(resume={i.id: "yes" for i in result["__interrupt__"]}), thread)
    return questions, sorted(deleted)


@lesson
def test_two_approvals_in_one_toolnode_batch_pause_twice_and_rerun_an_approved_call():
    questions, deleted = approve_two_deletions(route_per_call=False)
    assert questions == [1, 1]
    assert len(deleted) == 3 and set(deleted) == {"/a", "/b"}  # one approved deletion ran twice


@lesson
def test_two_approvals_in_one_toolnode_task_an_answer_goes_to_the_call_that_reaches_interrupt_first():
    """Events force the order a busy machine may produce: the call about /b reaches interrupt() before
    the call about /a on every run. The pause shows /a's question (executor.map raises in call order),
    but the resume values are handed out in the order the threads reach interrupt()."""
    delete_file, deleted = make_delete_file()
    b_asked = threading.Event()

    def approve_b_first(request, execute):
        if request.tool_call["id"] == "d1":
            b_asked.wait(5)
        try:
            answer = interrupt({"approve?": request.tool_call["args"]["path"]})
        finally:
            if request.tool_call["id"] == "d2":
                b_asked.set()
        return execute(request) if answer == "yes" else refusal(request)

    node = ToolNode([delete_file], wrap_tool_call=approve_b_first)
    graph = one_node_graph(node, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}

    def run(value):
        b_asked.clear()
        return graph.invoke(value, thread)

    two = ai(call("delete_file", "d1", path="/a"), call("delete_file", "d2", path="/b"))
    first = run({"messages": [two]})
    assert [i.value for i in first["__interrupt__"]] == [{"approve?": "/a"}]
    second = run(Command(resume={i.id: "yes" for i in first["__interrupt__"]}))
    assert deleted == ["/b"], "the 'yes' to the question about /a deleted /b"
    assert [i.value for i in second["__interrupt__"]] == [{"approve?": "/a"}]
    done = run(Command(resume={i.id: "no" for i in second["__interrupt__"]}))
    assert deleted == ["/b", "/b"] and "__interrupt__" not in done  # /b was never asked about


@lesson
def test_two_approvals_with_one_send_per_call_pause_once_and_run_each_call_once():
    questions, deleted = approve_two_deletions(route_per_call=True)
    assert questions == [2] and deleted == ["/a", "/b"]


# -- 3.4 interrupts and the error policy: which releases pause ---------------------------------------

def unannotated_handler(error):
    return f"handled {type(error).__name__}"


def annotated_handler(error: Exception) -> str:
    return f"handled {type(error).__name__}"


POLICIES = {"default": None, "true": True, "false": False, "string": "tool failed",
            "unannotated-callable": unannotated_handler, "annotated-callable": annotated_handler,
            "exception": Exception, "tuple": (Exception,)}


@lesson
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
@pytest.mark.parametrize("asks", ["interceptor", "tool"])
def test_interrupt_through_an_interceptor_pauses_even_with_handle_tool_errors_true(asks, policy, path):
    """Holds on langgraph-prebuilt 1.1.3 under every form of error policy, both for sync invoke with
    `wrap_tool_call` and async ainvoke with `awrap_tool_call`; it holds from 1.1.1 on (1.1.1 and 1.1.2
    checked: each release's tool_node.py run beside the pinned langgraph). Every earlier release with
    interceptors checked that way (1.0.2 to 1.0.13, 1.1.0) turned the GraphInterrupt into an error
    ToolMessage on the interceptor path under a catching policy: no pause, the human never asked
    (langgraph#8217, #8394)."""
    delete_file, deleted = make_delete_file()
    if asks == "tool":
        @tool("delete_file")
        def delete_file(path: str) -> str:  # noqa: F811 - the tool asks, the wrapper only passes through
            """Delete a file (pretend) once a human approves."""
            if interrupt({"approve?": path}) != "yes":
                return "denied"
            deleted.append(path)
            return f"deleted {path}"

        wrapper = lambda request, execute: execute(request)  # noqa: E731
    else:
        wrapper = approval

    async def awrapper(request, execute):
        if asks == "interceptor" and interrupt({"approve?": request.tool_call["args"]}) != "yes":
            return refusal(request)
        return await execute(request)

    options = {} if policy is None else {"handle_tool_errors": policy}
    wrappers = {"wrap_tool_call": wrapper} if path == "invoke" else {"awrap_tool_call": awrapper}
    node = ToolNode([delete_file], **wrappers, **options)
    graph = one_node_graph(node, checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}

    def run(value):
        return graph.invoke(value, thread) if path == "invoke" else asyncio.run(graph.ainvoke(value, thread))

    paused = run({"messages": [ai(call("delete_file", "d1", path="/x"))]})
    answers = [m for m in paused["messages"] if isinstance(m, ToolMessage)]
    assert answers == [], f"the pause became an answer: {answers[0].content[:60]!r}"
    assert "__interrupt__" in paused and deleted == []
    run(Command(resume="yes"))
    assert deleted == ["/x"]


@lesson
def test_under_ainvoke_a_safe_call_started_before_the_pause_finishes_after_the_pause_is_returned():
    """Driven by events: the lookup works until released, which happens only once `ainvoke` has returned
    the pause; ToolNode's gather raised the GraphInterrupt without cancelling it."""
    delete_file, deleted = make_delete_file()
    released, finished = asyncio.Event(), []

    async def lookup_until_released(city: str) -> str:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(released.wait(), 5)
        finished.append(released.is_set())
        return f"{city}: sunny"

    lookup = StructuredTool.from_function(coroutine=lookup_until_released, name="lookup_weather",
                                          description="Look up the weather.")

    async def aapproval(request, execute):
        if request.tool_call["name"] == "delete_file" and interrupt("approve?") != "yes":
            return refusal(request)
        return await execute(request)

    node = ToolNode([lookup, delete_file], awrap_tool_call=aapproval)
    graph = one_node_graph(node, checkpointer=InMemorySaver())

    async def scenario():
        turn = ai(call("lookup_weather", "1", city="Paris"), call("delete_file", "2", path="/x"))
        paused = await graph.ainvoke({"messages": [turn]}, {"configurable": {"thread_id": "t"}})
        finished_at_the_pause = list(finished)
        released.set()
        for _ in range(500):
            if finished:
                break
            await asyncio.sleep(0.01)
        return paused, finished_at_the_pause

    paused, finished_at_the_pause = asyncio.run(scenario())
    assert "__interrupt__" in paused and deleted == []
    assert finished_at_the_pause == [] and finished == [True], "finished after the pause, once released"


# -- 4. HumanInTheLoopMiddleware (langchain 1.5.2): approval before any tool runs -----------------------

def hitl_agent(flagged=("delete_file",)):
    """create_agent with HumanInTheLoopMiddleware: a lookup and two deletions in one turn."""
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    recorder = CallRecorder()
    delete_file, deleted = make_delete_file()
    calls = [{"name": "lookup_weather", "args": {"city": "Paris"}},
             {"name": "delete_file", "args": {"path": "/a"}},
             {"name": "delete_file", "args": {"path": "/b"}}]
    agent = agents.create_agent(
        ScriptedChatModel(script=[calls, tool_results_summary]),
        [make_city_tools(delay=0, recorder=recorder, sync=True)[0], delete_file],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={name: True for name in flagged})],
        checkpointer=InMemorySaver(),
    )
    return agent, recorder, deleted


HITL_QUESTION = {"messages": [("user", "Weather in Paris? And delete /a and /b.")]}
THREAD = {"configurable": {"thread_id": "t"}}


@lesson
def test_hitl_middleware_asks_once_for_every_flagged_call_before_any_tool_runs():
    agent, recorder, deleted = hitl_agent()
    paused = agent.invoke(HITL_QUESTION, THREAD)
    [pause] = paused["__interrupt__"]
    assert [(a["name"], a["args"]) for a in pause.value["action_requests"]] == [
        ("delete_file", {"path": "/a"}), ("delete_file", {"path": "/b"})]
    assert recorder.calls == [] and deleted == []  # not even the safe lookup ran


@lesson
def test_hitl_middleware_approve_runs_each_call_once():
    agent, recorder, deleted = hitl_agent()
    agent.invoke(HITL_QUESTION, THREAD)
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}, {"type": "approve"}]}), THREAD)
    assert len(recorder.calls) == 1 and sorted(deleted) == ["/a", "/b"]  # one task per call: any order


@lesson
def test_hitl_middleware_edit_runs_the_reviewers_arguments_and_tells_the_model():
    agent, _, deleted = hitl_agent()
    agent.invoke(HITL_QUESTION, THREAD)
    edit = {"type": "edit", "edited_action": {"name": "delete_file", "args": {"path": "/a.bak"}}}
    done = agent.invoke(Command(resume={"decisions": [edit, {"type": "approve"}]}), THREAD)
    assert sorted(deleted) == ["/a.bak", "/b"]
    answer = next(m for m in done["messages"] if isinstance(m, ToolMessage) and "/a.bak" in m.content)
    assert "a human reviewer replaced this tool call" in answer.content


@lesson
def test_hitl_middleware_reject_answers_with_an_error_message_and_never_runs_the_tool():
    agent, recorder, deleted = hitl_agent()
    agent.invoke(HITL_QUESTION, THREAD)
    reject = {"type": "reject", "message": "Keep /b."}
    done = agent.invoke(Command(resume={"decisions": [{"type": "approve"}, reject]}), THREAD)
    assert deleted == ["/a"] and len(recorder.calls) == 1
    answers = [m for m in done["messages"] if isinstance(m, ToolMessage)]
    refusal_message = next(m for m in answers if "Keep /b." in m.content)
    assert refusal_message.status == "error"
    assert unanswered_tool_calls(done["messages"]) == []


@lesson
def test_hitl_middleware_needs_one_decision_per_flagged_call():
    agent, _, deleted = hitl_agent()
    agent.invoke(HITL_QUESTION, THREAD)
    with pytest.raises(ValueError, match=r"Number of human decisions \(1\) does not match"):
        agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
    assert deleted == []


@lesson
def test_hitl_middleware_per_call_asks_as_each_flagged_call_starts_and_safe_calls_run_once():
    """`interrupt_mode="per_call"`: one interrupt per flagged call, inside the tool-call chain, so the
    safe lookup runs before the pause and not again on resume (the default "batched" runs nothing)."""
    agents = pytest.importorskip("langchain.agents", reason="langchain (create_agent) is not installed")
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    recorder = CallRecorder()
    delete_file, deleted = make_delete_file()
    calls = [{"name": "lookup_weather", "args": {"city": "Paris"}},
             {"name": "delete_file", "args": {"path": "/a"}}]
    agent = agents.create_agent(
        ScriptedChatModel(script=[calls, tool_results_summary]),
        [make_city_tools(delay=0, recorder=recorder, sync=True)[0], delete_file],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_file": True}, interrupt_mode="per_call")],
        checkpointer=InMemorySaver(),
    )
    [pause] = agent.invoke(HITL_QUESTION, THREAD)["__interrupt__"]
    assert (pause.value["name"], pause.value["args"]) == ("delete_file", {"path": "/a"})
    assert len(recorder.calls) == 1 and deleted == []  # the safe call already ran
    agent.invoke(Command(resume={pause.id: {"type": "approve"}}), THREAD)
    assert len(recorder.calls) == 1 and deleted == ["/a"]  # and did not run again
