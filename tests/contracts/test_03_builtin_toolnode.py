"""Library behaviours lesson 03 (the built-in ToolNode) teaches, pinned one per test."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import threading
import time
import warnings

import pytest
from langchain_core.tools import StructuredTool, ToolException, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolInvocationError
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, ValidationError

from helpers.batch import TimedToolArgs, make_timed_tools, tool_calls_message
from helpers.timing import CallRecorder, Rendezvous, default_pool_size
from helpers.tools import make_city_tools, make_failing_tool

LESSON = "03_builtin_toolnode"
POOL = default_pool_size()  # what the interpreter gives ThreadPoolExecutor(): 3.13 counts usable CPUs only
L = 0.1


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    if b == 0:
        raise ValueError(f"cannot divide {a} by zero")
    return a / b


TRAFFIC = make_failing_tool(delay=0.0, sync=True)
ERROR_TOOLS = [add, divide, TRAFFIC]


def ask(name, args):
    return [tool_calls_message([(name, args)])]


def graph_of(node: ToolNode):
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def timed(n, kind, recorder, gate=None):
    tools = make_timed_tools(n, L, kind=kind, recorder=recorder, gate=gate)
    return ToolNode(tools), [tool_calls_message(tools)]


def waited_for_a_free_thread(recorder):
    """The calls that started only after another call had ended (a full pool made them wait)."""
    calls = recorder.calls
    return [c.label for c in calls if any(other.end <= c.start for other in calls if other is not c)]


# -- in a graph, and on its own ----------------------------------------------------------------


@pytest.mark.lesson(LESSON)
def test_in_a_graph_toolnode_answers_each_call_in_order():
    graph = graph_of(ToolNode(make_city_tools(delay=0.0)))
    message = tool_calls_message(
        [("lookup_weather", {"city": "Paris"}), ("lookup_attraction", {"city": "Paris"})]
    )
    result = asyncio.run(graph.ainvoke({"messages": [message]}))
    assert [(m.name, m.tool_call_id, m.content) for m in result["messages"][1:]] == [
        ("lookup_weather", "call-0", "Paris: sunny, 25 °C"),
        ("lookup_attraction", "call-1", "Paris: the Louvre"),
    ]


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("method", ["invoke", "ainvoke"])
def test_standalone_without_runtime_raises_the_n_a_error(method):
    node = ToolNode([add])
    with pytest.raises(ValueError) as error:
        if method == "invoke":
            node.invoke(ask("add", {"a": 1, "b": 2}))
        else:
            asyncio.run(node.ainvoke(ask("add", {"a": 1, "b": 2})))
    assert str(error.value) == "Missing required config key 'N/A' for 'tools'."


@pytest.mark.lesson(LESSON)
def test_the_cause_is_a_runtime_parameter_on_both_paths():
    assert list(inspect.signature(ToolNode._func).parameters) == ["self", "input", "config", "runtime"]
    assert list(inspect.signature(ToolNode._afunc).parameters) == ["self", "input", "config", "runtime"]


@pytest.mark.lesson(LESSON)
def test_runtime_keyword_fixes_invoke_and_ainvoke():
    node = ToolNode([add])
    assert node.invoke(ask("add", {"a": 1, "b": 2}), runtime=Runtime())[0].content == "3"
    assert asyncio.run(node.ainvoke(ask("add", {"a": 1, "b": 2}), runtime=Runtime()))[0].content == "3"


@pytest.mark.lesson(LESSON)
def test_bind_runtime_fixes_it_for_good():
    bound = ToolNode([add]).bind(runtime=Runtime())
    assert bound.invoke(ask("add", {"a": 2, "b": 2}))[0].content == "4"


@pytest.mark.lesson(LESSON)
def test_runtime_none_raises_attribute_error():
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'context'"):
        ToolNode([add]).invoke(ask("add", {"a": 1, "b": 2}), runtime=None)


@pytest.mark.lesson(LESSON)
def test_inside_a_graph_node_no_runtime_is_needed():
    node = ToolNode([add])

    async def run_tools(state: MessagesState):
        return await node.ainvoke(state)

    builder = StateGraph(MessagesState)
    builder.add_node("run_tools", run_tools)
    builder.add_edge(START, "run_tools")
    result = asyncio.run(builder.compile().ainvoke({"messages": ask("add", {"a": 1, "b": 2})}))
    assert result["messages"][-1].content == "3"


# -- concurrency ---------------------------------------------------------------------------------


@pytest.mark.lesson(LESSON)
def test_sync_path_builds_a_thread_pool_from_the_config():
    lines = [line.strip() for line in inspect.getsource(ToolNode._func).splitlines()]
    assert "with get_executor_for_config(config) as executor:" in lines


@pytest.mark.lesson(LESSON)
def test_each_sync_invoke_uses_a_new_thread_pool():
    recorder = CallRecorder()
    node, request = timed(2, "sync", recorder)
    node.invoke(request, runtime=Runtime())
    node.invoke(request, runtime=Runtime())
    assert len({worker.rsplit("_", 1)[0] for worker in recorder.workers()}) == 2


@pytest.mark.lesson(LESSON)
@pytest.mark.timing  # soaked: POOL calls are held at a gate until all of them run, so no stall decides it
def test_sync_invoke_runs_the_default_pool_size_at_once():
    recorder, gate = CallRecorder(), Rendezvous(POOL)
    node, request = timed(POOL + 1, "sync", recorder, gate)
    node.invoke(request, runtime=Runtime())
    assert gate.opened, f"at most {gate.most_waiting} calls ran at once; the default pool has {POOL} threads"
    assert recorder.max_in_flight() == POOL
    assert len(recorder.workers()) == POOL, "one pool of the default size"
    assert waited_for_a_free_thread(recorder) == [f"t{POOL:02d}"], "the last call waited for a thread"


@pytest.mark.lesson(LESSON)
def test_default_pool_size_is_the_interpreters_not_a_formula():
    # ToolNode's sync path builds `ThreadPoolExecutor(max_workers=None)`: the interpreter's choice.
    from concurrent.futures import ThreadPoolExecutor

    from langchain_core.runnables.config import get_executor_for_config

    with get_executor_for_config({}) as executor:
        assert isinstance(executor, ThreadPoolExecutor)
        assert executor._max_workers == POOL
    # ...which is the documented formula of this interpreter (3.13 counts only the CPUs it may use)
    cpus = os.process_cpu_count() if sys.version_info >= (3, 13) else os.cpu_count()
    assert min(32, cpus + 4) == POOL


def _long_and_four_short(recorder):
    """t00 ends only once t01..t04 have all ended (an event, not a duration); the short ones take 0.02 s."""
    shorts_done = threading.Event()
    ended = []

    def long_call(x: int) -> str:
        with recorder.span("t00"):
            shorts_done.wait(5)  # gives up after 5 s, and the test then fails on the order
        return "t00"

    def short_call(name):
        def body(x: int) -> str:
            with recorder.span(name):
                time.sleep(0.02)
            ended.append(name)
            if len(ended) == 4:
                shorts_done.set()
            return name
        return body

    bodies = [("t00", long_call)] + [(f"t0{i}", short_call(f"t0{i}")) for i in range(1, 5)]
    return [StructuredTool.from_function(func=body, name=name, description="A timed call.",
                                         args_schema=TimedToolArgs) for name, body in bodies]


@pytest.mark.lesson(LESSON)
@pytest.mark.timing  # soaked: the long call is released by an event, so no stall decides the order
def test_sync_pool_is_a_sliding_window_a_freed_thread_takes_the_next_call():
    recorder = CallRecorder()
    tools = _long_and_four_short(recorder)
    ToolNode(tools).invoke([tool_calls_message(tools)], config={"max_concurrency": 2}, runtime=Runtime())
    calls = {c.label: c for c in recorder.calls}
    long_call, shorts = calls["t00"], [calls[f"t0{i}"] for i in range(1, 5)]
    # Waves of 2 would start t02 only after t00 ended; the window started all four while t00 ran:
    assert all(short.end <= long_call.end for short in shorts)
    assert recorder.max_in_flight() == 2
    assert len({short.worker for short in shorts}) == 1, "one freed thread took every next call"
    assert shorts[0].worker != long_call.worker


@pytest.mark.lesson(LESSON)
def test_max_concurrency_in_the_config_sizes_the_pool():
    # the gate holds the first calls until two run together, so a stall cannot serialise them
    recorder, gate = CallRecorder(), Rendezvous(2)
    node, request = timed(4, "sync", recorder, gate)
    node.invoke(request, config={"max_concurrency": 2}, runtime=Runtime())
    assert gate.opened and recorder.max_in_flight() == 2


@pytest.mark.lesson(LESSON)
def test_graph_invoke_config_max_concurrency_reaches_the_node():
    recorder, gate = CallRecorder(), Rendezvous(2)
    node, request = timed(4, "sync", recorder, gate)
    graph_of(node).invoke({"messages": request}, config={"max_concurrency": 2})
    assert gate.opened and recorder.max_in_flight() == 2


@pytest.mark.lesson(LESSON)
def test_graph_with_config_max_concurrency_reaches_the_node():
    recorder, gate = CallRecorder(), Rendezvous(2)
    node, request = timed(4, "sync", recorder, gate)
    graph_of(node).with_config(max_concurrency=2).invoke({"messages": request})
    assert gate.opened and recorder.max_in_flight() == 2


def _run_graph(how, graph, state, **kwargs):
    if how == "invoke":
        return graph.invoke(state, **kwargs)
    if how == "ainvoke":
        return asyncio.run(graph.ainvoke(state, **kwargs))
    return list(graph.stream(state, **kwargs))


def _keyword_ignored(how):
    # proven by events, not the clock: three calls wait together at a rendezvous, which a limit of
    # 2 would never let happen (each call would then give up after the gate's timeout, unopened)
    recorder, gate = CallRecorder(), Rendezvous(3)
    node, request = timed(4, "sync", recorder, gate=gate)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run_graph(how, graph_of(node), {"messages": request}, max_concurrency=2)
    assert gate.opened and recorder.max_in_flight() > 2


@pytest.mark.lesson(LESSON)
def test_graph_invoke_max_concurrency_keyword_is_silently_ignored():
    _keyword_ignored("invoke")


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("how", ["ainvoke", "stream"])
def test_graph_ainvoke_and_stream_ignore_the_max_concurrency_keyword(how):
    _keyword_ignored(how)


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_standalone_toolnode_refuses_a_max_concurrency_keyword(how):
    """Unlike a compiled graph, `ToolNode.invoke` / `ainvoke` pass the keyword on to `_func` / `_afunc`,
    which take no such parameter: a TypeError before any tool runs."""
    recorder = CallRecorder()
    node, request = timed(2, "sync", recorder)
    private = "_func" if how == "invoke" else "_afunc"
    refused = rf"ToolNode\.{private}\(\) got an unexpected keyword argument 'max_concurrency'"
    with pytest.raises(TypeError, match=refused):
        if how == "invoke":
            node.invoke(request, runtime=Runtime(), max_concurrency=2)
        else:
            asyncio.run(node.ainvoke(request, runtime=Runtime(), max_concurrency=2))
    assert recorder.calls == []


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream"])
def test_graph_accepts_any_unknown_keyword_without_a_warning(how):
    node, request = timed(1, "sync", CallRecorder())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run_graph(how, graph_of(node), {"messages": request}, no_such_option=1)


@pytest.mark.lesson(LESSON)
def test_graph_ignores_max_concurrency_nested_in_configurable():
    recorder, gate = CallRecorder(), Rendezvous(3)
    node, request = timed(4, "sync", recorder, gate=gate)
    graph_of(node).invoke({"messages": request}, config={"configurable": {"max_concurrency": 2}})
    assert gate.opened and recorder.max_in_flight() > 2


@pytest.mark.lesson(LESSON)
def test_ainvoke_gathers_everything_and_ignores_max_concurrency():
    recorder = CallRecorder()
    node, request = timed(40, "async", recorder)
    asyncio.run(node.ainvoke(request, config={"max_concurrency": 2}, runtime=Runtime()))
    assert recorder.max_in_flight() > 2  # 40 on an idle machine; "more than the limit" survives a stall


@pytest.mark.lesson(LESSON)
def test_graph_ainvoke_ignores_max_concurrency():
    recorder = CallRecorder()
    node, request = timed(8, "async", recorder)
    asyncio.run(graph_of(node).ainvoke({"messages": request}, config={"max_concurrency": 2}))
    assert recorder.max_in_flight() > 2


def _one_send_per_call(state):
    return [Send("tools", [call]) for call in state["messages"][-1].tool_calls]


def _send_per_call_graph(tools):
    """A graph that hands each call of the last AIMessage to its own `tools` task, as create_agent does."""
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools))
    builder.add_conditional_edges(START, _one_send_per_call, ["tools"])
    return builder.compile()


@pytest.mark.lesson(LESSON)
def test_graph_ainvoke_max_concurrency_limits_one_send_per_call():
    """The graph's runner gates its tasks with `max_concurrency` under `ainvoke` too: with one `Send`
    per call each call is a task, so two run at once (the gate proves two did; the count, no more)."""
    recorder, gate = CallRecorder(), Rendezvous(2)
    tools = make_timed_tools(6, L, kind="async", recorder=recorder, gate=gate)
    graph = _send_per_call_graph(tools)
    result = asyncio.run(graph.ainvoke({"messages": [tool_calls_message(tools)]},
                                       config={"max_concurrency": 2}))
    assert gate.opened and recorder.max_in_flight() == 2
    assert len(result["messages"]) == 1 + 6  # every call answered


@pytest.mark.lesson(LESSON)
def test_graph_invoke_max_concurrency_limits_one_send_per_call():
    """Under `invoke` too the runner's pool runs at most `max_concurrency` tasks of a step."""
    recorder, gate = CallRecorder(), Rendezvous(2)
    tools = make_timed_tools(6, L, kind="sync", recorder=recorder, gate=gate)
    graph = _send_per_call_graph(tools)
    graph.invoke({"messages": [tool_calls_message(tools)]}, config={"max_concurrency": 2})
    assert gate.opened and recorder.max_in_flight() == 2


@pytest.mark.lesson(LESSON)
def test_graph_ainvoke_without_max_concurrency_runs_every_send_at_once():
    recorder, gate = CallRecorder(), Rendezvous(6)
    tools = make_timed_tools(6, L, kind="async", recorder=recorder, gate=gate)
    graph = _send_per_call_graph(tools)
    asyncio.run(graph.ainvoke({"messages": [tool_calls_message(tools)]}))
    assert gate.opened and recorder.max_in_flight() == 6


@pytest.mark.lesson(LESSON)
@pytest.mark.timing  # soaked: POOL calls are held at a gate until all of them run, so no stall decides it
def test_sync_tools_under_ainvoke_run_in_the_default_thread_pool():
    recorder, gate = CallRecorder(), Rendezvous(POOL)
    node, request = timed(POOL + 1, "sync", recorder, gate)
    asyncio.run(node.ainvoke(request, config={"max_concurrency": 2}, runtime=Runtime()))
    assert gate.opened, f"at most {gate.most_waiting} ran at once; the loop's default pool has {POOL} threads"
    assert recorder.max_in_flight() == POOL, "the loop's pool bounds them; max_concurrency does not"
    assert len(recorder.workers()) == POOL
    assert all(worker.startswith("asyncio_") for worker in recorder.workers()), "the loop's default executor"
    assert len(waited_for_a_free_thread(recorder)) == 1


@pytest.mark.lesson(LESSON)
def test_a_blocking_async_def_tool_serialises_ainvoke():
    recorder = CallRecorder()
    node, request = timed(3, "blocking", recorder)
    asyncio.run(node.ainvoke(request, runtime=Runtime()))
    assert recorder.max_in_flight() == 1


@pytest.mark.lesson(LESSON)
def test_a_blocking_async_def_tool_holds_the_loop_but_sync_tools_already_in_threads_keep_running():
    """Driven by events: each sync call works only once the blocking tool holds the loop, and the
    blocking tool (never awaiting) holds it until both sync calls have finished in their threads."""
    loop_held, finished = threading.Event(), []

    @tool
    def lookup_in_thread(city: str) -> str:
        """A plain def: ToolNode runs it in a thread."""
        loop_held.wait(5)
        finished.append(city)
        return city

    @tool
    async def blocking_lookup(city: str) -> str:
        """An async def that never awaits."""
        loop_held.set()
        give_up = time.perf_counter() + 5
        while len(finished) < 2 and time.perf_counter() < give_up:
            time.sleep(0.01)
        return f"{len(finished)} finished while the loop was held"

    calls = [("lookup_in_thread", {"city": "Paris"}), ("lookup_in_thread", {"city": "Rome"}),
             ("blocking_lookup", {"city": "Oslo"})]
    out = asyncio.run(ToolNode([lookup_in_thread, blocking_lookup]).ainvoke(
        [tool_calls_message(calls)], runtime=Runtime()))
    assert [m.content for m in out] == ["Paris", "Rome", "2 finished while the loop was held"]


@pytest.mark.lesson(LESSON)
def test_an_async_only_tool_fails_under_sync_invoke():
    node = ToolNode(make_city_tools(delay=0.0))
    with pytest.raises(NotImplementedError) as error:
        node.invoke(ask("lookup_weather", {"city": "Paris"}), runtime=Runtime())
    assert str(error.value) == "StructuredTool does not support sync invocation."


# -- errors --------------------------------------------------------------------------------------

ARG_ERROR = (
    "Error invoking tool 'add' with kwargs {'a': 1} with error:\n b: Field required\n"
    " Please fix the error and try again."
)


def _any(e):
    return f"handled {type(e).__name__}"


def _network(e: ConnectionError) -> str:
    return f"network problem: {e}"


DEFAULT = ToolNode.__init__.__kwdefaults__["handle_tool_errors"]
SETTINGS = {
    "default": DEFAULT,
    "True": True,
    "False": False,
    "str": "Tool failed.",
    "callable": _any,
    "callable(ConnectionError)": _network,
    "ConnectionError": ConnectionError,
    "tuple": (ConnectionError, ValueError),
}
FAILURES = {
    "bad args": ("add", {"a": 1}),
    "ValueError": ("divide", {"a": 1, "b": 0}),
    "ConnectionError": ("lookup_traffic", {"city": "Paris"}),
}
# setting -> what each failure gives: the error ToolMessage's text, or the exception type raised
MATRIX = {
    "default": (ARG_ERROR, ValueError, ConnectionError),
    "True": (
        f"Error: ToolInvocationError({ARG_ERROR!r})\n Please fix your mistakes.",
        "Error: ValueError('cannot divide 1 by zero')\n Please fix your mistakes.",
        "Error: ConnectionError('traffic service unreachable for Paris')\n Please fix your mistakes.",
    ),
    "False": (ToolInvocationError, ValueError, ConnectionError),
    "str": ("Tool failed.", "Tool failed.", "Tool failed."),
    "callable": ("handled ToolInvocationError", "handled ValueError", "handled ConnectionError"),
    "callable(ConnectionError)": (
        ToolInvocationError,
        ValueError,
        "network problem: traffic service unreachable for Paris",
    ),
    "ConnectionError": (
        ToolInvocationError,
        ValueError,
        "Error: ConnectionError('traffic service unreachable for Paris')\n Please fix your mistakes.",
    ),
    "tuple": (
        ToolInvocationError,
        "Error: ValueError('cannot divide 1 by zero')\n Please fix your mistakes.",
        "Error: ConnectionError('traffic service unreachable for Paris')\n Please fix your mistakes.",
    ),
}


@pytest.mark.lesson(LESSON)
def test_the_default_is_a_function_not_true():
    assert DEFAULT is not True
    assert DEFAULT.__name__ == "_default_handle_tool_errors"


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("setting", list(MATRIX))
@pytest.mark.parametrize("failure", list(FAILURES))
def test_handle_tool_errors_matrix(setting, failure):
    expected = MATRIX[setting][list(FAILURES).index(failure)]
    node = ToolNode(ERROR_TOOLS, handle_tool_errors=SETTINGS[setting])
    request = ask(*FAILURES[failure])
    if isinstance(expected, type):
        with pytest.raises(expected):
            node.invoke(request, runtime=Runtime())
    else:
        (answer,) = node.invoke(request, runtime=Runtime())
        assert (answer.status, answer.content) == ("error", expected)


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_an_unknown_tool_name_is_answered_never_raised(setting):
    node = ToolNode(ERROR_TOOLS, handle_tool_errors=SETTINGS[setting])
    (answer,) = node.invoke(ask("nope", {}), runtime=Runtime())
    assert answer.status == "error"
    assert answer.content == "Error: nope is not a valid tool, try one of [add, divide, lookup_traffic]."


@pytest.mark.lesson(LESSON)
def test_with_an_interceptor_an_unknown_tool_name_reaches_the_wrapper_with_no_tool():
    seen = []

    def passthrough(request, execute):
        seen.append(request.tool)
        return execute(request)

    (answer,) = ToolNode(ERROR_TOOLS, wrap_tool_call=passthrough).invoke(ask("nope", {}), runtime=Runtime())
    assert seen == [None]  # the wrapper runs first; execute answers the unknown name
    assert (answer.status, answer.content) == (
        "error",
        "Error: nope is not a valid tool, try one of [add, divide, lookup_traffic].",
    )

    def audit(request, execute):  # reads the tool before calling execute
        if request.tool.metadata and request.tool.metadata.get("dangerous"):
            raise PermissionError(request.tool.name)
        return execute(request)

    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'metadata'"):
        ToolNode(ERROR_TOOLS, wrap_tool_call=audit).invoke(ask("nope", {}), runtime=Runtime())


@pytest.mark.lesson(LESSON)
def test_a_coercible_argument_is_coerced():
    (answer,) = ToolNode([add]).invoke(ask("add", {"a": "3", "b": 4}), runtime=Runtime())
    assert (answer.status, answer.content) == ("success", "7")


@pytest.mark.lesson(LESSON)
def test_an_extra_argument_is_dropped():
    (answer,) = ToolNode([add]).invoke(ask("add", {"a": 1, "b": 2, "c": 99}), runtime=Runtime())
    assert (answer.status, answer.content) == ("success", "3")


@pytest.mark.lesson(LESSON)
def test_an_uncoercible_argument_is_an_error_message():
    (answer,) = ToolNode([add]).invoke(ask("add", {"a": "three", "b": 4}), runtime=Runtime())
    assert answer.status == "error"
    assert answer.content.startswith(
        "Error invoking tool 'add' with kwargs {'a': 'three', 'b': 4} with error:\n a: Input should be"
    )


def _failing_batch(sync, recorder, delay):
    batch = [
        *make_city_tools(delay=delay, recorder=recorder, sync=sync),
        make_failing_tool(delay=0.0, recorder=recorder, sync=sync),
    ]
    return ToolNode(batch), [tool_calls_message([(t.name, {"city": "Paris"}) for t in batch])]


@pytest.mark.lesson(LESSON)
def test_sync_path_raises_only_after_every_sibling_finished():
    """Every call here has a thread (three calls, a default pool of at least five): the pool waits for
    the calls already running. Calls still queued for a thread never run (the next test)."""
    recorder = CallRecorder()
    node, request = _failing_batch(True, recorder, 0.2)
    with pytest.raises(ConnectionError):
        node.invoke(request, runtime=Runtime())
    raised_at = time.perf_counter() - recorder.origin
    assert sorted(c.label for c in recorder.calls if c.end <= raised_at) == [
        "lookup_attraction",
        "lookup_traffic",
        "lookup_weather",
    ]


@pytest.mark.lesson(LESSON)
@pytest.mark.timing  # the call the freed thread takes (if any) runs 0.6 s: the cancel lands meanwhile
def test_sync_path_cancels_the_calls_still_queued_when_a_call_fails():
    """One thread, the failing call first: the error reaches `executor.map`, which cancels every call
    still queued. The freed thread may take the next call before that (a race it usually wins); the
    calls behind it never run."""
    recorder = CallRecorder()
    behind = make_timed_tools(3, 0.6, kind="sync", recorder=recorder)
    node = ToolNode([make_failing_tool(delay=0.05, sync=True), *behind])
    request = [tool_calls_message([("lookup_traffic", {"city": "Paris"}), *behind])]
    with pytest.raises(ConnectionError):
        node.invoke(request, config={"max_concurrency": 1}, runtime=Runtime())
    time.sleep(0.1)  # nothing is left to start: the node returned only after its pool shut down
    assert {c.label for c in recorder.calls} <= {"t00"}, "t01 and t02 were queued and must never run"


@pytest.mark.lesson(LESSON)
@pytest.mark.timing  # the error must surface before the 0.6 s siblings end (a 0.3 s stall fits)
def test_async_path_raises_at_once_and_the_siblings_keep_running():
    recorder = CallRecorder()
    node, request = _failing_batch(False, recorder, 0.6)

    async def scenario():
        with pytest.raises(ConnectionError):
            await node.ainvoke(request, runtime=Runtime())
        finished_when_raised = [c.label for c in recorder.calls]
        for _ in range(100):  # wait for the siblings (at most 5 s), without guessing how long
            if len(recorder.calls) == 3:
                break
            await asyncio.sleep(0.05)
        return finished_when_raised, sorted(c.label for c in recorder.calls)

    when_raised, later = asyncio.run(scenario())
    assert when_raised == ["lookup_traffic"]
    assert later == ["lookup_attraction", "lookup_traffic", "lookup_weather"]


@tool
def query_server(city: str) -> str:
    """Ask a remote server; it reports an error."""
    raise ToolException(f"server error for {city}")


@tool
def read_forecast(city: str) -> str:
    """Fetch a forecast; the HTTP client's read timeout fires first."""
    raise TimeoutError(f"read timed out fetching {city}")


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("failing, error", [(query_server, ToolException), (read_forecast, TimeoutError)])
def test_tool_exception_and_a_tools_own_timeout_crash_under_the_default(failing, error):
    with pytest.raises(error):
        ToolNode([failing]).invoke(ask(failing.name, {"city": "Paris"}), runtime=Runtime())
    (answer,) = ToolNode([failing], handle_tool_errors=True).invoke(
        ask(failing.name, {"city": "Paris"}), runtime=Runtime()
    )
    assert answer.status == "error" and answer.content.startswith(f"Error: {error.__name__}(")


@pytest.mark.lesson(LESSON)
def test_a_tools_own_handle_tool_error_answers_its_tool_exception():
    forgiving = query_server.model_copy(update={"handle_tool_error": True})
    (answer,) = ToolNode([forgiving]).invoke(ask("query_server", {"city": "Paris"}), runtime=Runtime())
    assert (answer.status, answer.content) == ("error", "server error for Paris")


@pytest.mark.lesson(LESSON)
def test_toolnode_has_no_timeout_parameter():
    assert "timeout" not in inspect.signature(ToolNode.__init__).parameters


@pytest.mark.lesson(LESSON)
def test_constructor_signature():
    parameters = inspect.signature(ToolNode.__init__).parameters
    assert list(parameters) == [
        "self", "tools", "name", "tags", "handle_tool_errors", "messages_key", "wrap_tool_call",
        "awrap_tool_call",
    ]
    assert {k: parameters[k].default for k in ("name", "tags", "messages_key")} == {
        "name": "tools", "tags": None, "messages_key": "messages",
    }


# -- an async-only tool under invoke, per policy (deep dive 8) ---------------------------------

ASYNC_ONLY = "StructuredTool does not support sync invocation."


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("setting", ["default", "False", "ConnectionError"])
def test_an_async_only_tool_under_invoke_raises_unless_the_policy_covers_it(setting):
    node = ToolNode(make_city_tools(delay=0.0), handle_tool_errors=SETTINGS[setting])
    with pytest.raises(NotImplementedError, match=ASYNC_ONLY):
        node.invoke(ask("lookup_weather", {"city": "Paris"}), runtime=Runtime())


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("setting, content", [
    ("True", f"Error: NotImplementedError({ASYNC_ONLY!r})\n Please fix your mistakes."),
    ("str", "Tool failed."),
    ("callable", "handled NotImplementedError"),
])
def test_an_async_only_tool_under_invoke_is_an_error_message_under_a_catching_policy(setting, content):
    node = ToolNode(make_city_tools(delay=0.0), handle_tool_errors=SETTINGS[setting])
    (answer,) = node.invoke(ask("lookup_weather", {"city": "Paris"}), runtime=Runtime())
    assert (answer.status, answer.content) == ("error", content)


# -- what the default answers: any ValidationError that escapes the tool --------------------------


class Forecast(BaseModel):
    city: str
    temperature: float


@tool
def parse_forecast(city: str) -> str:
    """Parse the forecast service's reply."""
    reply = {"city": city, "temperature": "warm"}  # the service sent a word, not a number
    return Forecast(**reply).model_dump_json()


BODY_ERROR = (
    "Error invoking tool 'parse_forecast' with kwargs {'city': 'Paris'} with error:\n"
    " temperature: Input should be a valid number, unable to parse string as a number\n"
    " Please fix the error and try again."
)


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("method", ["invoke", "ainvoke"])
def test_the_default_answers_a_validation_error_raised_in_the_tools_body(method):
    """The arguments were right; the body's own pydantic error still comes back as an argument error."""
    node = ToolNode([parse_forecast])
    request = ask("parse_forecast", {"city": "Paris"})
    if method == "invoke":
        (answer,) = node.invoke(request, runtime=Runtime())
    else:
        (answer,) = asyncio.run(node.ainvoke(request, runtime=Runtime()))
    assert (answer.status, answer.content) == ("error", BODY_ERROR)


def _pydantic_v1_tools():
    import pydantic.v1 as pydantic_v1

    class AddArgsV1(pydantic_v1.BaseModel):
        a: int
        b: int

    @tool(args_schema=AddArgsV1)
    def add_v1(a: int, b: int) -> int:
        """Add two integers (arguments checked by a pydantic.v1 model)."""
        return a + b

    class ForecastV1(pydantic_v1.BaseModel):
        city: str
        temperature: float

    @tool
    def parse_forecast_v1(city: str) -> str:
        """Parse the forecast service's reply with a pydantic.v1 model."""
        return ForecastV1(city=city, temperature="warm").json()

    return [add_v1, parse_forecast_v1], pydantic_v1.ValidationError


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("method", ["invoke", "ainvoke"])
@pytest.mark.parametrize("name, args", [("add_v1", {"a": 1}), ("parse_forecast_v1", {"city": "Paris"})],
                         ids=["v1-args-schema-missing-argument", "v1-model-in-the-body"])
def test_the_default_does_not_answer_a_pydantic_v1_validation_error(name, args, method):
    """ToolNode catches pydantic v2's ValidationError only; pydantic.v1's is another class, so the
    default re-raises it like any exception: even a missing argument never reaches the model."""
    tools, v1_error = _pydantic_v1_tools()
    assert not issubclass(v1_error, ValidationError)
    node = ToolNode(tools)
    with pytest.raises(v1_error):
        if method == "invoke":
            node.invoke(ask(name, args), runtime=Runtime())
        else:
            asyncio.run(node.ainvoke(ask(name, args), runtime=Runtime()))


@pytest.mark.lesson(LESSON)
def test_a_validation_error_from_the_body_reaches_the_policy_as_a_tool_invocation_error():
    with pytest.raises(ToolInvocationError) as error:
        ToolNode([parse_forecast], handle_tool_errors=False).invoke(
            ask("parse_forecast", {"city": "Paris"}), runtime=Runtime())
    assert isinstance(error.value.source, ValidationError)


@pytest.mark.lesson(LESSON)
def test_tool_invocation_error_is_a_tool_exception_not_a_validation_error():
    assert issubclass(ToolInvocationError, ToolException)
    assert not issubclass(ToolInvocationError, ValueError)  # so not a pydantic ValidationError either


@pytest.mark.lesson(LESSON)
def test_naming_tool_exception_keeps_argument_errors_answered():
    (answer,) = ToolNode(ERROR_TOOLS, handle_tool_errors=ToolException).invoke(
        ask("add", {"a": 1}), runtime=Runtime())
    assert (answer.status, answer.content) == (
        "error", f"Error: ToolInvocationError({ARG_ERROR!r})\n Please fix your mistakes.")
    with pytest.raises(ValueError):  # ...and a ValueError, not covered, still raises
        ToolNode(ERROR_TOOLS, handle_tool_errors=ToolException).invoke(
            ask("divide", {"a": 1, "b": 0}), runtime=Runtime())


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("setting", [ValidationError, ValueError])
def test_naming_validation_error_or_value_error_does_not_answer_argument_errors(setting):
    with pytest.raises(ToolInvocationError):
        ToolNode([add], handle_tool_errors=setting).invoke(ask("add", {"a": 1}), runtime=Runtime())


# -- the pinned MCP adapter answers a server error itself ------------------------------------------


class _ErrorReportingSession:
    """Stands in for an MCP session whose server answers every call with an `isError` result."""

    async def call_tool(self, name, arguments, progress_callback=None):
        from mcp.types import CallToolResult, TextContent

        text = f"server error for {arguments['city']}"
        return CallToolResult(content=[TextContent(type="text", text=text)], isError=True)


def _mcp_tool(**options):
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
    from mcp.types import Tool

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return convert_mcp_tool_to_langchain_tool(
        _ErrorReportingSession(), Tool(name="query_server", description="Ask a server.", inputSchema=schema),
        **options)


@pytest.mark.lesson(LESSON)
def test_with_the_pinned_mcp_adapters_default_a_server_error_is_an_error_message():
    (answer,) = asyncio.run(ToolNode([_mcp_tool()]).ainvoke(ask("query_server", {"city": "Paris"}),
                                                            runtime=Runtime()))
    assert answer.status == "error" and answer.text == "server error for Paris"


@pytest.mark.lesson(LESSON)
def test_with_the_adapters_errors_off_a_server_error_is_a_tool_exception_the_default_reraises():
    with pytest.raises(ToolException, match="server error for Paris"):
        asyncio.run(ToolNode([_mcp_tool(handle_tool_errors=False)]).ainvoke(
            ask("query_server", {"city": "Paris"}), runtime=Runtime()))


class _Approval(BaseModel):
    approve: bool


@tool("delete_file")
def _asks_with_a_schema(path: str) -> str:
    """Delete a file once a human approves (the answer must match a schema)."""
    from langgraph.types import interrupt

    return f"approve={interrupt({'path': path}, response_schema=_Approval).approve}"


@pytest.mark.lesson(LESSON)
@pytest.mark.parametrize("setting", ["default", "True"])
def test_a_resume_value_that_fails_its_response_schema_is_never_answered(setting):
    """The one ValidationError the default does not answer: it fails the run so the human can answer again."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([_asks_with_a_schema], handle_tool_errors=SETTINGS[setting]))
    builder.add_edge(START, "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in graph.invoke({"messages": ask("delete_file", {"path": "/x"})}, thread)
    with pytest.raises(ValidationError):
        graph.invoke(Command(resume={"approve": "maybe"}), thread)
    assert graph.invoke(Command(resume={"approve": True}), thread)["messages"][-1].content == "approve=True"
