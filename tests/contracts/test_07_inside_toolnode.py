"""Contract tests for lesson 07: ToolNode's internals, injection and interceptors, as the lesson teaches them.

Each test pins one behaviour of the pinned langgraph-prebuilt by running it (not the notebook).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import warnings
from collections import Counter
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, Send, interrupt

from helpers.source import excerpt
from helpers.timing import CallRecorder, Stopwatch
from helpers.tools import make_city_tools

lesson = pytest.mark.lesson("07_inside_toolnode")
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
    builder = StateGraph(state, context_schema=compile_kwargs.pop("context_schema", None))
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    return builder.compile(**compile_kwargs)


# -- 1. the source and the execution path --------------------------------------------------------

@lesson
def test_sync_path_creates_and_shuts_down_a_new_thread_pool_per_invoke():
    @tool
    def where_am_i(label: str) -> str:
        """Report the worker thread."""
        return threading.current_thread().name

    node = ToolNode([where_am_i])
    batch = [ai(call("where_am_i", "1", label="x"))]
    pools = [{m.content.rsplit("_", 1)[0] for m in node.invoke(batch, runtime=Runtime())} for _ in range(2)]
    alive = {t.name.rsplit("_", 1)[0] for t in threading.enumerate()}
    assert pools[0] != pools[1]
    assert not (pools[0] | pools[1]) & alive


@lesson
def test_sync_pool_is_sized_by_max_concurrency():
    recorder = CallRecorder()
    node = ToolNode(make_city_tools(delay=DELAY, recorder=recorder, sync=True)[:1])
    batch = [ai(*(call("lookup_weather", f"c{i}", city="Paris") for i in range(4)))]
    node.invoke(batch, config={"max_concurrency": 2}, runtime=Runtime())
    assert recorder.max_in_flight() == 2


@lesson
def test_async_path_gathers_every_call_ignoring_max_concurrency():
    recorder = CallRecorder()
    node = ToolNode(make_city_tools(delay=DELAY, recorder=recorder)[:1])
    batch = [ai(*(call("lookup_weather", f"c{i}", city="Paris") for i in range(4)))]
    asyncio.run(node.ainvoke(batch, config={"max_concurrency": 1}, runtime=Runtime()))
    assert recorder.max_in_flight() == 4


@lesson
def test_func_and_afunc_differ_only_in_pool_versus_gather():
    sync_lines, async_lines = excerpt(ToolNode._func).lines, excerpt(ToolNode._afunc).lines
    only_sync = set(sync_lines) - set(async_lines)
    only_async = set(async_lines) - set(sync_lines)
    assert any("get_executor_for_config(config)" in line for line in only_sync)
    assert any("await asyncio.gather(" in line for line in only_async)
    assert len(only_sync) <= 6 and len(only_async) <= 6


@lesson
def test_duplicate_tool_names_silently_keep_the_last_tool():
    @tool("add")
    def add_plus_one(a: int, b: int) -> int:
        """Add, plus one."""
        return a + b + 1

    node = ToolNode([add, add_plus_one])
    assert list(node.tools_by_name) == ["add"]
    assert node.invoke([ai(call("add", "1", a=1, b=2))], runtime=Runtime())[0].content == "4"


@lesson
def test_plain_functions_become_structured_tools_keyed_by_name():
    def multiply(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    node = ToolNode([multiply])
    assert type(node.tools_by_name["multiply"]) is StructuredTool


@lesson
def test_parse_input_recognises_each_input_kind():
    weather_call = call("add", "c1", a=1, b=2)
    message = ai(weather_call)

    class StateObject:
        messages = [message]

    node = ToolNode([add])
    kinds = [
        node._parse_input(value)[1]
        for value in (
            [message],
            [message, HumanMessage("later")],
            [weather_call],
            {"messages": [message]},
            StateObject(),
            {"__type": "tool_call_with_context", "tool_call": weather_call, "state": {}},
        )
    ]
    assert kinds == ["list", "list", "tool_calls", "dict", "dict", "tool_calls"]


@lesson
def test_basetool_turns_a_tool_call_input_into_a_toolmessage():
    assert add.invoke({"a": 1, "b": 2}) == 3
    message = add.invoke(call("add", "001", a=1, b=2))
    assert isinstance(message, ToolMessage)
    assert (message.content, message.name, message.tool_call_id) == ("3", "add", "001")


@lesson
def test_toolnode_rejects_a_raw_non_message_response_as_a_bug():
    node = ToolNode([add])
    with pytest.raises(TypeError, match="returned unexpected type"):
        node._normalize_tool_response(3, call("add", "1"), "list")


@lesson
def test_combine_merges_parent_sends_last_and_drops_their_update():
    node = ToolNode([add])
    m1 = ToolMessage("a", tool_call_id="1")
    p1 = Command(graph=Command.PARENT, goto=[Send("A", None), Send("B", None)], update={"n": 1})
    p2 = Command(graph=Command.PARENT, goto=[Send("B", None), Send("C", None)])
    out = node._combine_tool_outputs([p1, m1, p2], "dict")
    assert out[0] == {"messages": [m1]}
    assert out[-1].graph == Command.PARENT and out[-1].update is None
    assert [s.node for s in out[-1].goto] == ["A", "B", "B", "C"]


@lesson
def test_interrupts_propagate_even_when_every_error_is_handled():
    @tool
    def ask(q: str) -> str:
        """Ask a human."""
        return interrupt(q)

    graph = one_node_graph(ToolNode([ask], handle_tool_errors=True), checkpointer=InMemorySaver())
    result = graph.invoke({"messages": [ai(call("ask", "1", q="ok?"))]}, {"configurable": {"thread_id": "t"}})
    assert [i.value for i in result["__interrupt__"]] == ["ok?"]


# -- 2. injection -----------------------------------------------------------------------------------

@dataclasses.dataclass
class UserContext:
    user: str


@tool
def remember(fact: str, runtime: ToolRuntime[UserContext]) -> str:
    """Remember a fact about the current user."""
    runtime.store.put(("facts", runtime.context.user), runtime.tool_call_id, {"fact": fact})
    runtime.stream_writer({"call": runtime.tool_call_id})
    return f"{runtime.context.user}:{runtime.tool_call_id}:{len(runtime.state['messages'])}"


@tool
def remember_bare(fact: str, runtime: ToolRuntime) -> str:
    """Remember a fact (bare annotation)."""
    return f"{runtime.context.user}:{fact}"


class NotesState(MessagesState):
    user: str


@tool
def note(
    text: str,
    user: Annotated[str, InjectedState("user")],
    messages: Annotated[list, InjectedState("messages")],
    call_id: Annotated[str, InjectedToolCallId],
    store: Annotated[BaseStore, InjectedStore()],
) -> str:
    """Save a note for the current user."""
    return f"{user}|{call_id}|{len(messages)}"


@lesson
def test_toolruntime_lists_its_fields():
    names = [f.name for f in dataclasses.fields(ToolRuntime)]
    assert names[:7] == ["state", "context", "config", "stream_writer", "tool_call_id", "store", "tools"]


@lesson
def test_toolruntime_carries_context_store_writer_state_and_its_own_call_id():
    store = InMemoryStore()
    graph = one_node_graph(ToolNode([remember]), context_schema=UserContext, store=store)
    batch = {"messages": [ai(call("remember", "r1", fact="tea"), call("remember", "r2", fact="Paris"))]}
    custom, updates = [], []
    for mode, chunk in graph.stream(batch, context=UserContext("ann"), stream_mode=["custom", "updates"]):
        (custom if mode == "custom" else updates).append(chunk)
    contents = [m.content for m in updates[0]["tools"]["messages"]]
    assert contents == ["ann:r1:1", "ann:r2:1"]
    assert sorted(e["call"] for e in custom) == ["r1", "r2"]
    assert sorted(item.key for item in store.search(("facts", "ann"))) == ["r1", "r2"]


@lesson
def test_injected_arguments_are_hidden_from_the_model_schema():
    def model_sees(tool_):
        return convert_to_openai_tool(tool_)["function"]["parameters"]["properties"]

    assert model_sees(remember) == {"fact": {"type": "string"}}
    assert list(model_sees(note)) == ["text"]


@lesson
def test_forged_injected_arguments_are_stripped_by_toolnode():
    forged = call("note", "n1", text="hi", user="admin", call_id="forged", messages=[])
    graph = one_node_graph(ToolNode([note]), state=NotesState, store=InMemoryStore())
    result = graph.invoke({"messages": [ai(forged)], "user": "ann"})
    assert result["messages"][-1].content == "ann|n1|1"


@lesson
def test_a_direct_tool_invoke_takes_forged_state_values_as_given():
    forged = call("note", "n1", text="hi", user="admin", call_id="forged", messages=[])
    message = note.invoke({**forged, "args": {**forged["args"], "store": InMemoryStore()}})
    assert message.content == "admin|n1|0"  # the call id comes from the call itself


@lesson
def test_argument_errors_report_the_models_kwargs_and_no_injected_fields():
    graph = one_node_graph(ToolNode([note]), state=NotesState, store=InMemoryStore())
    result = graph.invoke({"messages": [ai(call("note", "n2", user="admin"))], "user": "ann"})
    assert result["messages"][-1].status == "error"
    assert result["messages"][-1].content == (
        "Error invoking tool 'note' with kwargs {'user': 'admin'} with error:\n"
        " text: Field required\n"
        " Please fix the error and try again."
    )


def serializer_warnings(tool_, context):
    graph = one_node_graph(ToolNode([tool_]), context_schema=UserContext, store=InMemoryStore())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph.invoke({"messages": [ai(call(tool_.name, "1", fact="x"))]}, context=context)
    return [w for w in caught if "serializ" in str(w.message)]


@lesson
def test_bare_toolruntime_with_a_context_warns_from_pydantic():
    caught = serializer_warnings(remember_bare, UserContext("ann"))
    assert caught and all(w.category is UserWarning for w in caught)


@lesson
def test_typed_toolruntime_does_not_warn():
    assert serializer_warnings(remember, UserContext("ann")) == []


@lesson
def test_standalone_invoke_of_a_toolruntime_tool_warns_about_config_metadata():
    node = ToolNode([remember])
    runtime = Runtime(context=UserContext("ann"), store=InMemoryStore())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = node.invoke({"messages": [ai(call("remember", "r1", fact="x"))]}, runtime=runtime)
    assert out["messages"][0].content == "ann:r1:1"
    assert any("field_name='metadata'" in str(w.message) for w in caught)


@lesson
def test_standalone_invoke_of_an_injected_state_tool_does_not_warn():
    node = ToolNode([note])
    state = {"messages": [ai(call("note", "n1", text="hi"))], "user": "ann"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = node.invoke(state, runtime=Runtime(store=InMemoryStore()))
    assert out["messages"][0].content == "ann|n1|1" and caught == []


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
    writes = [c for c in recorder.calls if c.label == "write_db"]
    read = next(c for c in recorder.calls if c.label == "read_api")
    assert writes[0].end <= writes[1].start + 0.01  # one write at a time
    assert read.start < writes[0].end  # the read ran alongside the first write


@lesson
def test_an_async_wrapper_timeout_cancels_an_async_tool():
    recorder = CallRecorder()

    async def deadline(request, execute):
        try:
            return await asyncio.wait_for(execute(request), 2 * DELAY)
        except TimeoutError:
            return refusal(request)

    node = ToolNode([timed_tool(recorder, "slow", 10 * DELAY)], awrap_tool_call=deadline)
    out = asyncio.run(node.ainvoke([ai(call("slow", "1", key="z"))], runtime=Runtime()))
    assert out[0].status == "error"
    assert recorder.calls[0].seconds < 5 * DELAY


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
def test_only_a_sync_wrapper_serialises_sync_tools_under_ainvoke():
    tools = make_city_tools(delay=DELAY, sync=True)
    batch = [ai(*(call(t.name, f"{t.name}-{i}", city="Paris") for t in tools for i in range(2)))]
    wrapped_node = ToolNode(tools, wrap_tool_call=lambda request, execute: execute(request))
    with Stopwatch() as plain:
        asyncio.run(ToolNode(tools).ainvoke(batch, runtime=Runtime()))
    with Stopwatch() as wrapped:
        asyncio.run(wrapped_node.ainvoke(batch, runtime=Runtime()))
    assert wrapped.seconds >= 4 * DELAY
    assert wrapped.seconds > 2 * plain.seconds


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
def test_only_a_sync_wrapper_breaks_async_tools_under_ainvoke():
    node = ToolNode(make_city_tools(delay=0.01)[:1], wrap_tool_call=lambda r, execute: execute(r))
    with pytest.raises(NotImplementedError, match="StructuredTool does not support sync invocation."):
        asyncio.run(node.ainvoke([ai(call("lookup_weather", "1", city="Paris"))], runtime=Runtime()))


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

