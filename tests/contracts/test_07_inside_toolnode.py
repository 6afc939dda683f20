"""Contract tests for lesson 07: ToolNode's internals, its input payloads and injection, as the lesson
teaches them (interceptors are lesson 08: test_08_interceptors.py).

Each test pins one behaviour of the pinned langgraph-prebuilt by running it (not the notebook).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import warnings
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode, ToolRuntime, create_react_agent
from langgraph.prebuilt.tool_node import _InjectedArgs
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, Send, interrupt
from langgraph.warnings import LangGraphDeprecatedSinceV10

from helpers.models import ScriptedChatModel
from helpers.source import excerpt
from helpers.timing import CallRecorder
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
@pytest.mark.timing
def test_sync_pool_is_sized_by_max_concurrency():
    recorder = CallRecorder()
    # 0.4 s calls: a 0.3 s stall of one worker still leaves the two calls of a wave overlapping.
    node = ToolNode(make_city_tools(delay=4 * DELAY, recorder=recorder, sync=True)[:1])
    batch = [ai(*(call("lookup_weather", f"c{i}", city="Paris") for i in range(4)))]
    node.invoke(batch, config={"max_concurrency": 2}, runtime=Runtime())
    assert recorder.max_in_flight() == 2


@lesson
@pytest.mark.timing
def test_async_path_gathers_every_call_ignoring_max_concurrency():
    recorder = CallRecorder()
    node = ToolNode(make_city_tools(delay=4 * DELAY, recorder=recorder)[:1])
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


@lesson
def test_interrupts_propagate_through_an_interceptor_when_every_error_is_handled():
    """On the pinned 1.1.3, also through `wrap_tool_call` under `handle_tool_errors=True` (the
    correction table's qualifier: on 1.0.8 and 1.0.13 that path turned the interrupt into an error
    message)."""
    @tool
    def ask(q: str) -> str:
        """Ask a human."""
        return interrupt(q)

    def passes_through(request, execute):
        return execute(request)

    node = ToolNode([ask], handle_tool_errors=True, wrap_tool_call=passes_through)
    graph = one_node_graph(node, checkpointer=InMemorySaver())
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


# -- 1.4 who sends which payload ----------------------------------------------------------------------

@lesson
def test_create_react_agent_sends_one_tool_call_with_context_per_tool_call():
    tools = make_city_tools(delay=0.01, sync=True)
    model = ScriptedChatModel(script=[
        [{"name": "lookup_weather", "args": {"city": "Paris"}},
         {"name": "lookup_attraction", "args": {"city": "Paris"}}],
        "done",
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        agent = create_react_agent(model, tools)  # default version="v2"
    tasks = agent.stream({"messages": [HumanMessage("hi")]}, stream_mode="tasks")
    payloads = [task["input"] for task in tasks if task["name"] == "tools" and "input" in task]
    assert [p["__type"] for p in payloads] == ["tool_call_with_context"] * 2
    assert sorted(p["tool_call"]["id"] for p in payloads) == ["call_0_0", "call_0_1"]
    assert all("messages" in p["state"] for p in payloads)


@lesson
def test_create_react_agent_is_deprecated_in_favour_of_langchain_agents():
    with pytest.warns(LangGraphDeprecatedSinceV10, match="langchain.agents"):
        create_react_agent(ScriptedChatModel(script=["done"]), [add])


@lesson
def test_a_one_call_list_is_a_tool_calls_input_and_answers_with_a_messages_dict():
    node = ToolNode([add])
    calls, kind = node._parse_input([call("add", "1", a=1, b=2)])
    assert kind == "tool_calls" and [c["id"] for c in calls] == ["1"]
    out = node.invoke([call("add", "1", a=1, b=2)], runtime=Runtime())
    assert out == {"messages": [ToolMessage("3", name="add", tool_call_id="1")]}


# -- 2.2 the runtime: recognised by name or by annotation -------------------------------------------

def model_sees(tool_):
    return convert_to_openai_tool(tool_)["function"]["parameters"]["properties"]


def run_in_graph(tool_, **args):
    graph = one_node_graph(ToolNode([tool_]))
    return graph.invoke({"messages": [ai(call(tool_.name, "1", **args))]})["messages"][-1]


@lesson
def test_the_toolruntime_annotation_alone_injects_and_hides_the_parameter():
    @tool
    def by_annotation(city: str, ctx: ToolRuntime) -> str:
        """Look up a city."""
        return type(ctx).__name__

    assert list(model_sees(by_annotation)) == ["city"]
    assert run_in_graph(by_annotation, city="Paris").content == "ToolRuntime"


@lesson
def test_the_name_runtime_alone_injects_but_the_model_still_sees_it():
    @tool
    def by_name(city: str, runtime) -> str:
        """Look up a city."""
        return type(runtime).__name__

    assert model_sees(by_name) == {"city": {"type": "string"}, "runtime": {}}
    assert run_in_graph(by_name, city="Paris", runtime="tonight").content == "ToolRuntime"


@lesson
def test_an_untyped_ordinary_argument_named_runtime_is_silently_replaced():
    @tool
    def schedule(task: str, runtime: Any) -> str:
        """Schedule a task for a time of day."""
        return type(runtime).__name__

    assert "runtime" in model_sees(schedule)
    reply = run_in_graph(schedule, task="backup", runtime="morning")
    assert reply.status == "success" and reply.content == "ToolRuntime"


@lesson
def test_a_typed_ordinary_argument_named_runtime_fails_with_an_empty_reason():
    @tool
    def schedule_backup(task: str, runtime: str) -> str:
        """Schedule a task for a time of day."""
        return f"{task} scheduled for the {runtime}"

    assert model_sees(schedule_backup)["runtime"] == {"type": "string"}
    direct = schedule_backup.invoke({"task": "backup", "runtime": "morning"})
    assert direct == "backup scheduled for the morning"
    reply = run_in_graph(schedule_backup, task="backup", runtime="morning")
    assert reply.status == "error"
    assert reply.content == (
        "Error invoking tool 'schedule_backup' with kwargs {'task': 'backup', 'runtime': 'morning'} "
        "with error:\n \n Please fix the error and try again."
    )


# -- 2.3 who fills InjectedToolCallId ----------------------------------------------------------------

@lesson
def test_toolnode_injects_state_store_and_runtime_but_not_the_tool_call_id():
    fields = [f.name for f in dataclasses.fields(_InjectedArgs)]
    assert fields[:3] == ["state", "store", "runtime"]
    assert not any("call" in name for name in fields)
    assert "InjectedToolCallId" not in excerpt(ToolNode._inject_tool_args)


@lesson
def test_langchain_core_fills_injected_tool_call_id_from_the_tool_calls_id():
    source = excerpt(StructuredTool._parse_input)
    assert "tool_input[k] = tool_call_id" in source
    message = note.invoke(call("note", "abc", text="hi", user="ann", messages=[], call_id="forged",
                               store=InMemoryStore()))
    assert message.content == "ann|abc|0"


@lesson
def test_invoking_an_injected_tool_call_id_tool_with_args_only_raises():
    with pytest.raises(ValueError, match="When tool includes an InjectedToolCallId argument, tool must "
                                         "always be invoked with a full model ToolCall"):
        note.invoke({"text": "hi", "user": "ann", "messages": [], "store": InMemoryStore()})


@lesson
def test_the_shape_the_error_message_suggests_uses_the_wrong_key():
    suggested = {"name": "note", "type": "tool_call", "tool_call_id": "abc",
                 "args": {"text": "hi", "user": "ann", "messages": [], "store": InMemoryStore()}}
    with pytest.raises(KeyError, match="'id'"):
        note.invoke(suggested)


@lesson
def test_a_custom_args_schema_no_longer_hides_injected_state():
    from pydantic import BaseModel

    class NoteArgs(BaseModel):
        text: str

    @tool(args_schema=NoteArgs)
    def short_note(text: str, user: Annotated[str, InjectedState("user")]) -> str:
        """Save a note."""
        return f"{user}: {text}"

    graph = one_node_graph(ToolNode([short_note]), state=NotesState)
    out = graph.invoke({"messages": [ai(call("short_note", "1", text="hi"))], "user": "ann"})
    assert out["messages"][-1].content == "ann: hi"


# -- 4.1 (cont.) injected parameters and a custom args_schema --------------------------------------
# langchain#33646 (fixed), langchain#34246: what a plain or extra="forbid" args_schema needs declared.

def _injected_kinds():
    return {
        "runtime": (ToolRuntime, lambda value: f"runtime {value.tool_call_id}"),
        "state": (Annotated[list, InjectedState("messages")], lambda value: f"state {len(value)}"),
        "store": (Annotated[BaseStore, InjectedStore()], lambda value: f"store {type(value).__name__}"),
        "call_id": (Annotated[str, InjectedToolCallId], lambda value: f"call_id {value}"),
    }


def _schema_tool(kind, *, declared, **config):
    from pydantic import ConfigDict, create_model

    annotation, show = _injected_kinds()[kind]
    fields = {"query": (str, ...), **({"injected": (annotation, ...)} if declared else {})}
    # a ToolRuntime or BaseStore field needs arbitrary_types_allowed, as the lesson says
    config = ConfigDict(**config, **({"arbitrary_types_allowed": True} if declared else {}))
    schema = create_model("QueryArgs", __config__=config, **fields)

    def body(query: str, injected) -> str:
        return show(injected)

    body.__annotations__ = {"query": str, "injected": annotation, "return": str}
    body.__doc__ = "Look a query up."
    return tool("lookup", args_schema=schema)(body)


def _through_toolnode(tool_, **options):
    graph = one_node_graph(ToolNode([tool_], **options), store=InMemoryStore())
    return graph.invoke({"messages": [ai(call("lookup", "c1", query="q"))]})["messages"][-1]


@lesson
@pytest.mark.parametrize("kind", ["runtime", "state", "store"])
def test_toolnodes_injections_reach_a_tool_whose_plain_args_schema_leaves_them_out(kind):
    tool_ = _schema_tool(kind, declared=False)
    reply = _through_toolnode(tool_)
    assert reply.status == "success" and reply.content.startswith(kind)
    assert list(convert_to_openai_tool(tool_)["function"]["parameters"]["properties"]) == ["query"]


@lesson
def test_an_undeclared_injected_tool_call_id_under_another_name_crashes_the_run_with_type_error():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'injected'"):
        _through_toolnode(_schema_tool("call_id", declared=False))


@lesson
@pytest.mark.parametrize("config", [{}, {"extra": "forbid"}, {"strict": True, "extra": "forbid"}])
def test_an_injected_tool_call_id_declared_in_the_args_schema_is_filled_and_hidden(config):
    tool_ = _schema_tool("call_id", declared=True, **config)
    assert _through_toolnode(tool_).content == "call_id c1"
    assert list(convert_to_openai_tool(tool_)["function"]["parameters"]["properties"]) == ["query"]


@lesson
@pytest.mark.parametrize("kind", ["runtime", "state"])
def test_extra_forbid_refuses_an_undeclared_injected_parameter_with_an_empty_reason(kind):
    reply = _through_toolnode(_schema_tool(kind, declared=False, extra="forbid"))
    assert reply.status == "error"
    assert reply.content == ("Error invoking tool 'lookup' with kwargs {'query': 'q'} with error:\n \n"
                             " Please fix the error and try again.")


@lesson
@pytest.mark.parametrize("kind", ["runtime", "state", "store", "call_id"])
def test_extra_forbid_accepts_every_injected_parameter_the_schema_declares(kind):
    tool_ = _schema_tool(kind, declared=True, strict=True, extra="forbid")
    reply = _through_toolnode(tool_)
    assert reply.status == "success" and reply.content.startswith(kind)
    assert list(convert_to_openai_tool(tool_)["function"]["parameters"]["properties"]) == ["query"]


@lesson
@pytest.mark.parametrize("kind", ["runtime", "store"])
def test_a_toolruntime_or_basestore_field_needs_arbitrary_types_allowed(kind):
    from pydantic import PydanticSchemaGenerationError, create_model

    with pytest.raises(PydanticSchemaGenerationError, match="arbitrary_types_allowed=True"):
        create_model("QueryArgs", query=(str, ...), injected=(_injected_kinds()[kind][0], ...))


# -- 1.2 the executor, exactly ---------------------------------------------------------------------

@lesson
def test_the_sync_pool_is_langchain_cores_context_thread_pool_executor():
    from concurrent.futures import ThreadPoolExecutor

    from langchain_core.runnables.config import ContextThreadPoolExecutor, get_executor_for_config

    assert ContextThreadPoolExecutor.__bases__ == (ThreadPoolExecutor,)
    with get_executor_for_config({"max_concurrency": 2}) as pool:
        assert type(pool) is ContextThreadPoolExecutor
    assert "max_workers=config.get(\"max_concurrency\")" in str(excerpt(get_executor_for_config))


def _runs_at_once(size, config=None):
    from helpers.batch import make_timed_tools, tool_calls_message
    from helpers.timing import Rendezvous

    recorder, gate = CallRecorder(), Rendezvous(size)
    tools = make_timed_tools(size + 1, 0.01, kind="sync", recorder=recorder, gate=gate)
    ToolNode(tools).invoke([tool_calls_message(tools)], config=config, runtime=Runtime())
    return gate.opened, recorder.max_in_flight()


@lesson
def test_without_max_concurrency_invoke_runs_pythons_default_pool_size_at_once():
    from helpers.timing import default_pool_size

    size = default_pool_size()
    assert _runs_at_once(size) == (True, size)


POOL_SIZE_IN_A_CHILD = """
import os, sys
from concurrent.futures import ThreadPoolExecutor
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
usable = len(os.sched_getaffinity(0))
print(os.cpu_count(), usable, ThreadPoolExecutor()._max_workers)
"""


@lesson
def test_the_default_pool_size_counts_every_cpu_on_3_11_and_3_12_and_only_usable_ones_from_3_13():
    """Lesson 07 section 1.2: min(32, os.cpu_count() + 4) on 3.11/3.12, whatever CPUs the process may
    use; from 3.13 os.process_cpu_count() counts only those. A child process pinned to one CPU shows
    which count the interpreter takes."""
    import os
    import subprocess
    import sys

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs a platform that can pin a process to one of several CPUs")
    out = subprocess.run([sys.executable, "-c", POOL_SIZE_IN_A_CHILD], capture_output=True, text=True,
                         check=True).stdout
    cpus, usable, size = map(int, out.split())
    assert usable == 1 < cpus
    counted = usable if sys.version_info >= (3, 13) else cpus
    assert size == min(32, counted + 4)


@lesson
def test_max_concurrency_is_exactly_the_number_of_sync_calls_at_once():
    assert _runs_at_once(2, {"max_concurrency": 2}) == (True, 2)


@lesson
def test_a_tool_on_a_pool_thread_runs_in_a_copy_of_the_callers_context():
    import contextvars

    who = contextvars.ContextVar("who", default="nobody")

    @tool
    def whoami(label: str) -> str:
        """Report the context variable and the thread."""
        return f"{who.get()} on {'main' if threading.current_thread() is threading.main_thread() else 'pool'}"

    who.set("ann")
    out = ToolNode([whoami]).invoke([ai(call("whoami", "1", label="x"))], runtime=Runtime())
    assert out[0].content == "ann on pool"


@lesson
def test_toolnode_redoes_the_content_basetool_built():
    @tool
    def cities(region: str) -> list:
        """Cities of a region."""
        return ["Paris", "Lyon"]

    assert cities.invoke(call("cities", "c1", region="FR")).content == ["Paris", "Lyon"]
    out = ToolNode([cities]).invoke([ai(call("cities", "c1", region="FR"))], runtime=Runtime())
    assert out[0].content == '["Paris", "Lyon"]'
    assert "msg_content_output(response.content)" in str(excerpt(ToolNode._normalize_tool_response))
