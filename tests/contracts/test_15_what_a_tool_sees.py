"""Library behaviour taught in notebooks/15_what_a_tool_sees.ipynb.

What a tool receives in each place it can run (`ToolRuntime`'s fields), the store with and without
one, `context_schema` and `context=`, the config and what a checkpointer keeps of it, the caller's
`ContextVar`s and thread-locals inside sync tools, shared state (a module dict, the store) under
concurrent calls, and the store from async tools. Every interleaving that matters is forced with a
gate (`helpers.timing.Rendezvous`), never left to luck.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import subprocess
import sys
import textwrap
import threading
import warnings
from typing import Annotated

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ToolErrorMiddleware, ToolRetryMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import InjectedToolArg, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, ToolRuntime
from langgraph.runtime import ExecutionInfo, Runtime
from langgraph.store.base import BaseStore
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import RetryPolicy
from pydantic import BaseModel, SecretStr, ValidationError
from typing_extensions import TypedDict

from helpers.models import ScriptedChatModel
from helpers.timing import Rendezvous

lesson = pytest.mark.lesson("15_what_a_tool_sees")
ASK = {"messages": [HumanMessage("go")]}
NO_OP_WRITER = Runtime().stream_writer


@dataclasses.dataclass
class UserContext:
    user: str = "guest"


@dataclasses.dataclass
class Plan:
    user: str = "guest"
    plan: str = "free"


def _call(name, id, **args):
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def _ai(*calls):
    return AIMessage(content="", tool_calls=list(calls))


def _one_tool_graph(tools, context_schema=None, **compile_options):
    builder = StateGraph(MessagesState, context_schema=context_schema)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "tools")
    return builder.compile(**compile_options)


def _react_agent(model, tools, **options):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, tools, **options)


AGENTS = {"create_agent": create_agent, "create_react_agent": _react_agent}


@tool
def peek(runtime: ToolRuntime[UserContext]) -> str:
    "Report what this call can see."
    info = runtime.execution_info
    return json.dumps({
        "state": sorted(runtime.state),
        "context": repr(runtime.context),
        "store": type(runtime.store).__name__,
        "writer_is_no_op": runtime.stream_writer is NO_OP_WRITER,
        "tool_call_id": runtime.tool_call_id,
        "tools": [t.name for t in runtime.tools],
        "thread_id": None if info is None else info.thread_id,
        "node_attempt": None if info is None else info.node_attempt,
        "server_info": repr(runtime.server_info),
        "configurable_thread_id": runtime.config.get("configurable", {}).get("thread_id"),
    })


IN_A_GRAPH = {"tools": ["peek"], "thread_id": "t-1", "node_attempt": 1, "server_info": "None",
              "configurable_thread_id": "t-1"}


@tool
def show_plan(runtime: ToolRuntime[Plan]) -> str:
    "Show the current user's plan."
    return repr(runtime.context)


def _agent_view(name, tool_, context_schema, **invoke_options):
    agent = AGENTS[name](ScriptedChatModel(script=[[{"name": tool_.name, "args": {}}], "done"]), [tool_],
                         context_schema=context_schema, store=InMemoryStore())
    return agent.invoke(ASK, {"configurable": {"thread_id": "t-1"}}, **invoke_options)["messages"][2].content


# -- 1. ToolRuntime's fields in five places -------------------------------------------------------
@lesson
def test_tool_runtime_has_nine_fields_and_the_last_three_have_defaults():
    fields = dataclasses.fields(ToolRuntime)
    assert [f.name for f in fields] == ["state", "context", "config", "stream_writer", "tool_call_id",
                                        "store", "tools", "execution_info", "server_info"]
    bare = ToolRuntime(state={}, context=None, config={}, stream_writer=NO_OP_WRITER, tool_call_id="t",
                       store=None)
    assert (bare.tools, bare.execution_info, bare.server_info) == ([], None, None)


@lesson
def test_execution_info_has_seven_fields():
    assert [f.name for f in dataclasses.fields(ExecutionInfo)] == [
        "checkpoint_id", "checkpoint_ns", "task_id", "thread_id", "run_id", "node_attempt",
        "node_first_attempt_time"]


@lesson
@pytest.mark.parametrize(("agent", "state"), [("create_agent", ["messages"]),
                                              ("create_react_agent", ["messages", "remaining_steps"])])
def test_in_each_prebuilt_agent_the_runtime_holds_the_runs_context_store_writer_and_config(agent, state):
    view = json.loads(_agent_view(agent, peek, UserContext, context=UserContext("ann")))
    assert view == {"state": state, "context": "UserContext(user='ann')", "store": "InMemoryStore",
                    "writer_is_no_op": False, "tool_call_id": "call_0_0", **IN_A_GRAPH}


@lesson
def test_in_a_hand_wired_graph_the_runtime_holds_the_compiled_store_and_the_runs_context():
    graph = _one_tool_graph([peek], UserContext, store=InMemoryStore())
    result = graph.invoke({"messages": [_ai(_call("peek", "c1"))]}, {"configurable": {"thread_id": "t-1"}},
                          context=UserContext("ann"))
    assert json.loads(result["messages"][-1].content) == {
        "state": ["messages"], "context": "UserContext(user='ann')", "store": "InMemoryStore",
        "writer_is_no_op": False, "tool_call_id": "c1", **IN_A_GRAPH}


@lesson
def test_a_standalone_toolnode_passes_what_runtime_holds_and_a_no_op_writer():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ToolNode([peek]).invoke({"messages": [_ai(_call("peek", "c1"))]},
                                         {"configurable": {"thread_id": "t-1"}},
                                         runtime=Runtime(context=UserContext("ann"), store=InMemoryStore()))
    view = json.loads(result["messages"][-1].content)
    assert view == {"state": ["messages"], "context": "UserContext(user='ann')", "store": "InMemoryStore",
                    "writer_is_no_op": True, "tool_call_id": "c1", "tools": ["peek"], "thread_id": None,
                    "node_attempt": None, "server_info": "None", "configurable_thread_id": "t-1"}
    assert NO_OP_WRITER({"anything": 1}) is None  # accepts anything, does nothing
    assert caught == []  # with a config passed, lesson 07's `metadata` serializer warning does not appear


@lesson
def test_a_direct_invoke_without_a_runtime_fails_with_runtime_field_required():
    with pytest.raises(ValidationError, match=r"runtime\n  Field required"):
        peek.invoke({})


@lesson
def test_a_direct_invoke_with_a_hand_built_tool_runtime_works():
    runtime = ToolRuntime(state={"messages": []}, context=UserContext("test"), config={},
                          stream_writer=NO_OP_WRITER, tool_call_id="t-1", store=InMemoryStore())
    view = json.loads(peek.invoke({"runtime": runtime}))
    assert view["context"] == "UserContext(user='test')" and view["tool_call_id"] == "t-1"
    assert (view["tools"], view["thread_id"]) == ([], None)


def _recording_tool(seen, fail_first=False):
    @tool
    def charge(amount: int, runtime: ToolRuntime) -> str:
        "Charge a card."
        info = runtime.execution_info
        seen.append((info.thread_id, info.task_id, info.node_attempt, info.run_id, runtime.tool_call_id))
        if fail_first and len(seen) == 1:
            raise ConnectionError("dropped")
        return f"charged {amount}"

    return charge


@lesson
def test_a_retried_node_keeps_its_task_id_and_counts_node_attempt():
    seen = []
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([_recording_tool(seen, fail_first=True)]),
                     retry_policy=RetryPolicy(initial_interval=0.01, retry_on=ConnectionError))
    builder.add_edge(START, "tools")
    result = builder.compile().invoke({"messages": [_ai(_call("charge", "p1", amount=5))]})
    assert result["messages"][-1].content == "charged 5"
    assert [s[2] for s in seen] == [1, 2] and seen[0][1] == seen[1][1]


@lesson
def test_a_step_resumed_from_its_checkpoint_keeps_its_task_id_with_node_attempt_one():
    seen = []
    graph = _one_tool_graph([_recording_tool(seen, fail_first=True)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "resume"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"messages": [_ai(_call("charge", "p1", amount=5))]}, config)
    assert graph.invoke(None, config)["messages"][-1].content == "charged 5"
    assert [s[2] for s in seen] == [1, 1] and seen[0][1] == seen[1][1] and seen[0][0] == "resume"


@lesson
def test_create_agent_gives_each_call_a_task_of_its_own():
    seen = []
    calls = [{"name": "charge", "args": {"amount": n}} for n in (1, 2)]
    create_agent(ScriptedChatModel(script=[calls, "done"]), [_recording_tool(seen)]).invoke(ASK)
    assert len({s[1] for s in seen}) == 2


@lesson
def test_run_id_is_none_unless_the_config_passes_one():
    import uuid

    seen = []
    graph = _one_tool_graph([_recording_tool(seen)])
    graph.invoke({"messages": [_ai(_call("charge", "p1", amount=5))]})
    run_id = uuid.uuid4()
    graph.invoke({"messages": [_ai(_call("charge", "p2", amount=5))]}, {"run_id": run_id})
    assert [s[3] for s in seen] == [None, str(run_id)]


# -- 2. The store ---------------------------------------------------------------------------------
@tool
def remember(fact: str, runtime: ToolRuntime[UserContext]) -> str:
    "Remember a fact about the current user."
    runtime.store.put(("facts", runtime.context.user), fact, {"fact": fact})
    return "saved"


@tool
def recall(runtime: ToolRuntime[UserContext]) -> str:
    "List what is known about the current user."
    return json.dumps([item.key for item in runtime.store.search(("facts", runtime.context.user))])


@lesson
def test_the_store_is_shared_by_every_thread_and_the_state_is_not():
    def turn(messages):
        text = messages[-1].content
        if text.startswith("remember "):
            return [{"name": "remember", "args": {"fact": text.removeprefix("remember ")}}]
        return [{"name": "recall", "args": {}}]

    agent = create_agent(ScriptedChatModel(script=[turn, "noted"]), [remember, recall],
                         context_schema=UserContext, store=InMemoryStore(), checkpointer=InMemorySaver())

    def ask(text, thread, user):
        return agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}},
                            context=UserContext(user))["messages"]

    ask("remember likes tea", "t-1", "ann")
    second = ask("what do you know?", "t-2", "ann")
    assert json.loads(second[2].content) == ["likes tea"] and len(second) == 4  # a fresh thread
    assert json.loads(ask("what do you know?", "t-3", "bob")[2].content) == []


@lesson
def test_a_hand_wired_graph_compiled_with_a_store_shares_it_across_threads():
    graph = _one_tool_graph([remember, recall], UserContext, store=InMemoryStore(),
                            checkpointer=InMemorySaver())

    def run(call, thread, user):
        return graph.invoke({"messages": [_ai(call)]}, {"configurable": {"thread_id": thread}},
                            context=UserContext(user))["messages"]

    run(_call("remember", "m1", fact="likes tea"), "t-1", "ann")
    second = run(_call("recall", "m2"), "t-2", "ann")
    assert json.loads(second[-1].content) == ["likes tea"] and len(second) == 2  # a fresh thread
    assert json.loads(run(_call("recall", "m3"), "t-3", "bob")[-1].content) == []


@tool
def save_note(text: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    "Save a note."
    store.put(("notes",), text, {"text": text})
    return "saved"


@tool
def save_note_maybe(text: str, store: Annotated[BaseStore | None, InjectedStore()] = None) -> str:
    "Save a note if there is a store."
    return "saved" if store else "no store"


STORE_ERROR = ("Cannot inject store into tools with InjectedStore annotations - "
               "please compile your graph with a store.")


@lesson
def test_injected_store_without_a_store_crashes_the_agent_with_a_value_error():
    agent = create_agent(ScriptedChatModel(script=[[{"name": "save_note", "args": {"text": "hi"}}], "ok"]),
                         [save_note])
    with pytest.raises(ValueError) as raised:
        agent.invoke(ASK)
    assert str(raised.value) == STORE_ERROR


@lesson
def test_an_optional_injected_store_without_a_store_still_raises():
    with pytest.raises(ValueError) as raised:
        _one_tool_graph([save_note_maybe]).invoke(
            {"messages": [_ai(_call("save_note_maybe", "n1", text="x"))]})
    assert str(raised.value) == STORE_ERROR


def _node_graph(node):
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    return builder.compile()


def _unchanged(request, execute):
    return execute(request)


async def _aunchanged(request, execute):
    return await execute(request)


@lesson
@pytest.mark.parametrize("handle_tool_errors",
                         [True, (ValueError,), lambda error: "handled", "a string", False])
@pytest.mark.parametrize("store_tool", [save_note, save_note_maybe], ids=["required", "optional"])
def test_without_an_interceptor_the_injected_store_value_error_escapes_every_handle_tool_errors_setting(
    store_tool, handle_tool_errors
):
    graph = _node_graph(ToolNode([store_tool], handle_tool_errors=handle_tool_errors))
    with pytest.raises(ValueError) as raised:
        graph.invoke({"messages": [_ai(_call(store_tool.name, "n1", text="x"))]})
    assert str(raised.value) == STORE_ERROR


@lesson
@pytest.mark.parametrize("store_tool", [save_note, save_note_maybe], ids=["required", "optional"])
def test_with_a_wrap_tool_call_true_answers_a_missing_injected_store_under_invoke(store_tool):
    graph = _node_graph(ToolNode([store_tool], handle_tool_errors=True, wrap_tool_call=_unchanged))
    reply = graph.invoke({"messages": [_ai(_call(store_tool.name, "n1", text="x"))]})["messages"][-1]
    assert reply.status == "error"
    assert reply.content == f"Error: ValueError('{STORE_ERROR}')\n Please fix your mistakes."


@tool
async def asave_note(text: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    "Save a note (async)."
    await store.aput(("notes",), text, {"text": text})
    return "saved"


@lesson
@pytest.mark.parametrize("store_tool", [save_note, asave_note], ids=["sync tool", "async tool"])
@pytest.mark.parametrize("options", [{"awrap_tool_call": _aunchanged}, {"wrap_tool_call": _unchanged}],
                         ids=["awrap_tool_call", "wrap_tool_call"])
def test_with_an_interceptor_under_ainvoke_true_answers_a_missing_injected_store(store_tool, options):
    graph = _node_graph(ToolNode([store_tool], handle_tool_errors=True, **options))
    result = asyncio.run(graph.ainvoke({"messages": [_ai(_call(store_tool.name, "n1", text="x"))]}))
    reply = result["messages"][-1]
    assert reply.status == "error" and STORE_ERROR in reply.content


@lesson
@pytest.mark.parametrize("policy", [{}, {"handle_tool_errors": False}], ids=["default policy", "False"])
def test_with_an_interceptor_the_default_policy_and_false_still_let_the_missing_store_error_through(policy):
    graph = _node_graph(ToolNode([save_note], wrap_tool_call=_unchanged, **policy))
    with pytest.raises(ValueError) as raised:
        graph.invoke({"messages": [_ai(_call("save_note", "n1", text="x"))]})
    assert str(raised.value) == STORE_ERROR


def _key_error_only(error: KeyError) -> str:
    return f"handled as a KeyError: {error!r}"


@lesson
@pytest.mark.parametrize("policy", [KeyError, (KeyError,), _key_error_only],
                         ids=["KeyError", "(KeyError,)", "a callable annotated KeyError"])
def test_behind_an_interceptor_a_policy_for_another_type_still_answers_a_missing_injected_store(policy):
    graph = _node_graph(ToolNode([save_note], handle_tool_errors=policy, wrap_tool_call=_unchanged))
    reply = graph.invoke({"messages": [_ai(_call("save_note", "n1", text="x"))]})["messages"][-1]
    assert reply.status == "error" and STORE_ERROR in reply.content
    with pytest.raises(ValueError, match="Cannot inject store"):  # without the interceptor it escapes
        _node_graph(ToolNode([save_note], handle_tool_errors=policy)).invoke(
            {"messages": [_ai(_call("save_note", "n1", text="x"))]})


@lesson
def test_in_create_agent_tool_retry_middleware_retries_a_missing_injected_store_then_tells_the_model():
    agent = create_agent(ScriptedChatModel(script=[[{"name": "save_note", "args": {"text": "hi"}}], "ok"]),
                         [save_note], middleware=[ToolRetryMiddleware(initial_delay=0)])
    reply = agent.invoke(ASK)["messages"][2]
    assert reply.status == "error"
    assert reply.content == (
        f"Tool 'save_note' failed after 3 attempts with ValueError: {STORE_ERROR}. Please try again.")


@lesson
def test_an_awrap_tool_call_alone_is_skipped_under_invoke_so_the_missing_store_error_escapes_true():
    graph = _node_graph(ToolNode([save_note], handle_tool_errors=True, awrap_tool_call=_aunchanged))
    with pytest.raises(ValueError) as raised:
        graph.invoke({"messages": [_ai(_call("save_note", "n1", text="x"))]})
    assert str(raised.value) == STORE_ERROR


@lesson
def test_in_create_agent_tool_error_middleware_answers_a_missing_injected_store_a_plain_wrapper_does_not():
    class Unchanged(AgentMiddleware):
        def wrap_tool_call(self, request, handler):
            return handler(request)

    def agent(middleware):
        return create_agent(ScriptedChatModel(script=[[{"name": "save_note", "args": {"text": "hi"}}], "ok"]),
                            [save_note], middleware=middleware)

    with pytest.raises(ValueError, match="Cannot inject store"):
        agent([Unchanged()]).invoke(ASK)
    reply = agent([ToolErrorMiddleware(lambda error, request: f"failed: {error}")]).invoke(ASK)["messages"][2]
    assert reply.status == "error" and reply.content == f"failed: {STORE_ERROR}"


@lesson
def test_without_a_store_runtime_store_and_get_store_are_none():
    @tool
    def store_kinds(runtime: ToolRuntime) -> str:
        "Report the store as the runtime and as get_store() see it."
        return f"{runtime.store!r} {get_store()!r}"

    result = _one_tool_graph([store_kinds]).invoke({"messages": [_ai(_call("store_kinds", "s1"))]})
    assert result["messages"][-1].content == "None None"


@lesson
def test_without_a_store_runtime_store_put_crashes_the_run_with_attribute_error():
    @tool
    def save_with_runtime(text: str, runtime: ToolRuntime) -> str:
        "Save a note through the runtime's store."
        runtime.store.put(("notes",), text, {"text": text})
        return "saved"

    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'put'"):
        _one_tool_graph([save_with_runtime]).invoke(
            {"messages": [_ai(_call("save_with_runtime", "s2", text="x"))]})
    builder = StateGraph(MessagesState)  # handle_tool_errors=True does catch this one
    builder.add_node("tools", ToolNode([save_with_runtime], handle_tool_errors=True))
    builder.add_edge(START, "tools")
    result = builder.compile().invoke({"messages": [_ai(_call("save_with_runtime", "s2", text="x"))]})
    reply = result["messages"][-1]
    assert reply.status == "error" and "'NoneType' object has no attribute 'put'" in reply.content


# -- 3. Context and config ------------------------------------------------------------------------
@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_no_context_gives_none_even_when_every_dataclass_field_has_a_default(agent):
    assert _agent_view(agent, show_plan, Plan) == "None"


@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_dict_context_is_coerced_into_the_dataclass_with_its_defaults(agent):
    assert _agent_view(agent, show_plan, Plan, context={"user": "bob"}) == "Plan(user='bob', plan='free')"
    assert _agent_view(agent, show_plan, Plan, context={}) == "Plan(user='guest', plan='free')"


@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_an_unknown_context_key_raises_type_error_before_any_node_runs(agent):
    ran = []

    @tool
    def show(runtime: ToolRuntime[Plan]) -> str:
        "Show the plan."
        ran.append(1)
        return "shown"

    def turn(messages):
        ran.append("model")
        return [{"name": "show", "args": {}}]

    model = ScriptedChatModel(script=[turn, "done"])
    built = AGENTS[agent](model, [show], context_schema=Plan)
    with pytest.raises(TypeError, match="unexpected keyword argument 'usr'") as raised:
        built.invoke(ASK, context={"usr": "ann"})
    assert ("Did you mean 'user'?" in str(raised.value)) == (sys.version_info >= (3, 13))
    assert ran == []


@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_context_of_the_wrong_type_is_passed_through_with_only_a_serializer_warning(agent):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = _agent_view(agent, show_plan, Plan, context="ann")
    assert seen == "'ann'"
    assert any("PydanticSerializationUnexpectedValue" in str(w.message) for w in caught)


@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_dict_context_with_a_value_of_the_wrong_type_is_coerced_unchecked(agent):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = _agent_view(agent, show_plan, Plan, context={"user": 123})
    assert seen == "Plan(user=123, plan='free')"
    assert any("PydanticSerializationUnexpectedValue" in str(w.message) for w in caught)


@tool
def show_plan_bare(runtime: ToolRuntime) -> str:
    "Show the current user's plan (bare annotation)."
    return repr(runtime.context)


CONTEXTS = {"none": {}, "a Plan": {"context": Plan("ann")}, "a dict": {"context": {"user": "bob"}},
            "a wrong value": {"context": {"user": 123}}, "a wrong type": {"context": "ann"}}


def _warned(tool_, **context):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _agent_view("create_agent", tool_, Plan, **context)
    return any("PydanticSerializationUnexpectedValue" in str(w.message) for w in caught)


@lesson
def test_a_bare_tool_runtime_warns_for_every_context_right_or_wrong_and_never_without_one():
    assert {label: _warned(show_plan_bare, **context) for label, context in CONTEXTS.items()} == {
        "none": False, "a Plan": True, "a dict": True, "a wrong value": True, "a wrong type": True}


@lesson
def test_a_typed_tool_runtime_warns_only_for_a_context_of_the_wrong_type():
    assert {label: _warned(show_plan, **context) for label, context in CONTEXTS.items()} == {
        "none": False, "a Plan": False, "a dict": False, "a wrong value": True, "a wrong type": True}


@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_typed_tool_runtime_given_another_dataclass_raises_attribute_error_before_the_tool_runs(agent):
    ran = []

    @tool
    def show(runtime: ToolRuntime[Plan]) -> str:
        "Show the plan."
        ran.append(runtime.context)
        return "shown"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AttributeError, match="^'UserContext' object has no attribute 'plan'"):
            _agent_view(agent, show, Plan, context=UserContext("ann"))
    assert ran == []


@lesson
def test_a_typed_tool_runtime_given_another_dataclass_is_answered_under_handle_tool_errors_true():
    builder = StateGraph(MessagesState, context_schema=Plan)
    builder.add_node("tools", ToolNode([show_plan], handle_tool_errors=True))
    builder.add_edge(START, "tools")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = builder.compile().invoke({"messages": [_ai(_call("show_plan", "p1"))]},
                                          context=UserContext("ann"))
    reply = result["messages"][-1]
    assert reply.status == "error" and "'UserContext' object has no attribute 'plan'" in reply.content


@lesson
@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_bare_tool_runtime_passes_a_dataclass_of_another_class_through_with_a_warning(agent):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = _agent_view(agent, show_plan_bare, Plan, context=UserContext("ann"))
    assert seen == "UserContext(user='ann')"
    assert any("PydanticSerializationUnexpectedValue" in str(w.message) for w in caught)


def _warned_fields(tool_, input_, *config):
    import re

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ToolNode([tool_]).invoke(input_, *config, runtime=Runtime(context=Plan()))
    return sorted({name for w in caught for name in re.findall(r"field_name='(\w+)'", str(w.message))})


@lesson
@pytest.mark.parametrize("tool_", [show_plan, show_plan_bare], ids=["ToolRuntime[Plan]", "bare ToolRuntime"])
def test_a_standalone_toolnode_without_a_config_warns_about_the_configs_metadata_for_any_tool_runtime(tool_):
    as_dict = {"messages": [_ai(_call(tool_.name, "c1"))]}
    assert "metadata" in _warned_fields(tool_, as_dict)
    assert "metadata" not in _warned_fields(tool_, as_dict, {"configurable": {"thread_id": "t-1"}})


@lesson
def test_a_standalone_toolnode_with_a_config_and_a_dict_judges_only_the_context():
    as_dict, config = {"messages": [_ai(_call("show_plan", "c1"))]}, {"configurable": {"thread_id": "t-1"}}
    assert _warned_fields(show_plan, as_dict, config) == []
    assert _warned_fields(show_plan, [_ai(_call("show_plan", "c1"))], config) == ["state"]  # a bare list


@lesson
def test_a_hand_wired_graph_handles_a_dataclass_context_as_the_agents_do():
    graph = _one_tool_graph([show_plan], Plan)

    def seen(**context):
        return graph.invoke({"messages": [_ai(_call("show_plan", "p1"))]}, **context)["messages"][-1].content

    assert seen() == "None"
    assert seen(context={}) == "Plan(user='guest', plan='free')"
    assert seen(context={"user": "bob"}) == "Plan(user='bob', plan='free')"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the serializer warning pinned above
        assert seen(context={"user": 123}) == "Plan(user=123, plan='free')"
    with pytest.raises(TypeError, match="unexpected keyword argument 'usr'"):
        seen(context={"usr": "ann"})


class PlanDict(TypedDict):
    user: str


@tool
def show_plan_dict(runtime: ToolRuntime[PlanDict]) -> str:
    "Show the plan (TypedDict context)."
    return repr(runtime.context)


@lesson
def test_a_typed_dict_context_is_neither_coerced_nor_checked():
    graph = _one_tool_graph([show_plan_dict], PlanDict)
    for context in ({"user": "bob"}, {"usr": "typo"}):
        result = graph.invoke({"messages": [_ai(_call("show_plan_dict", "p1"))]}, context=context)
        assert result["messages"][-1].content == repr(context)
    empty = graph.invoke({"messages": [_ai(_call("show_plan_dict", "p1"))]}, context={})
    assert empty["messages"][-1].content == "None"  # an empty dict arrives as None


class PlanModel(BaseModel):
    user: str = "guest"
    plan: str = "free"


@tool
def show_plan_model(runtime: ToolRuntime[PlanModel]) -> str:
    "Show the plan (pydantic context)."
    return repr(runtime.context)


@lesson
def test_a_pydantic_context_drops_an_unknown_key_and_rejects_a_wrong_type_before_any_node_runs():
    ran = []

    @tool
    def show(runtime: ToolRuntime[PlanModel]) -> str:
        "Show the plan."
        ran.append(1)
        return repr(runtime.context)

    graph = _one_tool_graph([show], PlanModel)
    typo = graph.invoke({"messages": [_ai(_call("show", "p1"))]}, context={"usr": "typo"})
    assert typo["messages"][-1].content == "PlanModel(user='guest', plan='free')"
    ran.clear()
    with pytest.raises(ValidationError, match="user\n  Input should be a valid string"):
        graph.invoke({"messages": [_ai(_call("show", "p1"))]}, context={"user": 123})
    assert ran == []


@dataclasses.dataclass
class Caller:
    user: str
    api_key: str = ""


@tool
def read_config(runtime: ToolRuntime[Caller]) -> str:
    "Report the parts of the config a tool may care about."
    config = runtime.config
    mine = {k: v for k, v in config["configurable"].items() if not k.startswith(("__", "checkpoint"))}
    return json.dumps({"configurable": mine, "tags": config["tags"],
                       "tenant": config["metadata"].get("tenant"), "context": repr(runtime.context)})


@lesson
def test_a_tool_reads_configurable_tags_and_metadata_but_configurable_never_becomes_context():
    graph = _one_tool_graph([read_config], Caller, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "c-1", "user": "ann"}, "tags": ["web"],
              "metadata": {"tenant": "acme"}}
    result = graph.invoke({"messages": [_ai(_call("read_config", "r1"))]}, config)
    seen = json.loads(result["messages"][-1].content)
    assert seen == {"configurable": {"thread_id": "c-1", "user": "ann"}, "tags": ["web"], "tenant": "acme",
                    "context": "None"}


@lesson
def test_a_checkpointer_writes_plain_configurable_and_metadata_values_into_checkpoint_metadata_not_context():
    @tool
    def ok() -> str:
        "Do nothing."
        return "ok"

    saver = InMemorySaver()
    graph = _one_tool_graph([ok], Caller, checkpointer=saver)
    graph.invoke({"messages": [_ai(_call("ok", "r1"))]},
                 {"configurable": {"thread_id": "c-1", "user": "ann", "api_key": "sk-test", "debug": True,
                                   "n": 3, "ratio": 0.5, "nested": {"k": "v"}, "secret": SecretStr("sk-s"),
                                   "__hidden": "x", "source": "forged", "tenant": "from-configurable"},
                  "metadata": {"token": "tok-test", "tenant": "acme"}})
    history = list(graph.get_state_history({"configurable": {"thread_id": "c-1"}}))
    assert [s.metadata["source"] for s in history] == ["loop", "loop", "input"]  # every checkpoint of the run
    for snapshot in history:
        kept = {k: v for k, v in snapshot.metadata.items() if k not in ("source", "step", "parents")}
        # str/int/float/bool values only; no thread_id, no __ keys, no clash with source/step/parents;
        # config["metadata"] wins over configurable
        assert kept == {"token": "tok-test", "tenant": "acme", "user": "ann", "api_key": "sk-test",
                        "debug": True, "n": 3, "ratio": 0.5}
    graph.invoke({"messages": [_ai(_call("ok", "r3"))]}, {"configurable": {"thread_id": "c-1"}})
    later = list(graph.get_state_history({"configurable": {"thread_id": "c-1"}}))
    assert [s.metadata.get("api_key") for s in later] == [None, None, None, "sk-test", "sk-test", "sk-test"]
    graph.invoke({"messages": [_ai(_call("ok", "r2"))]}, {"configurable": {"thread_id": "c-2"}},
                 context=Caller("ann", api_key="sk-ctx"))
    assert "sk-ctx" not in repr(saver.storage) + repr(saver.blobs) + repr(saver.writes)


@lesson
def test_the_loop_passes_no_config_values_to_put_the_checkpointer_copies_them():
    passed = []

    class RecordingSaver(InMemorySaver):
        def put(self, config, checkpoint, metadata, new_versions):
            passed.append(dict(metadata))
            return super().put(config, checkpoint, metadata, new_versions)

    @tool
    def ok() -> str:
        "Do nothing."
        return "ok"

    saver = RecordingSaver()
    graph = _one_tool_graph([ok], checkpointer=saver)
    graph.invoke({"messages": [_ai(_call("ok", "r1"))]},
                 {"configurable": {"thread_id": "c-1", "api_key": "sk-test"}, "metadata": {"token": "tok"}})
    assert passed and all("api_key" not in m and "token" not in m for m in passed)
    kept = graph.get_state({"configurable": {"thread_id": "c-1"}}).metadata
    assert kept["api_key"] == "sk-test" and kept["token"] == "tok"


# -- 4. contextvars and thread-locals ------------------------------------------------------------
request_id = contextvars.ContextVar("request_id", default="<unset>")
request_local = threading.local()


@tool
def probe(label: str) -> str:
    "Report what this thread can see of the caller's request id."
    seen = f"{request_id.get()} {getattr(request_local, 'id', '<unset>')}"
    request_id.set(f"changed by {label}")
    return seen


TWO_PROBES = {"messages": [_ai(_call("probe", "p1", label="p1"), _call("probe", "p2", label="p2"))]}


def _probes_and_caller(run):
    request_id.set("req-42")
    request_local.id = "req-42"
    try:
        return [m.content for m in run()["messages"][1:]], request_id.get()
    finally:
        del request_local.id


@lesson
def test_under_invoke_sync_tools_see_the_callers_contextvar_not_its_thread_local_and_changes_stay_inside():
    probe_graph = _one_tool_graph([probe])
    seen, caller = contextvars.copy_context().run(_probes_and_caller, lambda: probe_graph.invoke(TWO_PROBES))
    assert seen == ["req-42 <unset>", "req-42 <unset>"] and caller == "req-42"


@lesson
def test_under_ainvoke_sync_tools_see_the_callers_contextvar_not_its_thread_local_and_changes_stay_inside():
    probe_graph = _one_tool_graph([probe])

    async def main():
        request_id.set("req-42")
        request_local.id = "req-42"
        try:
            result = await probe_graph.ainvoke(TWO_PROBES)
        finally:
            del request_local.id
        return [m.content for m in result["messages"][1:]], request_id.get()

    seen, caller = asyncio.run(main())
    assert seen == ["req-42 <unset>", "req-42 <unset>"] and caller == "req-42"


@tool
async def aprobe(label: str) -> str:
    "Report what the event loop's thread can see of the caller's request id."
    return probe.func(label)


TWO_APROBES = {"messages": [_ai(_call("aprobe", "a1", label="a1"), _call("aprobe", "a2", label="a2"))]}


@lesson
def test_under_ainvoke_async_tools_see_the_callers_contextvar_and_thread_local_and_changes_stay_inside():
    graph = _one_tool_graph([aprobe])

    async def main():
        request_id.set("req-42")
        request_local.id = "req-42"
        try:
            result = await graph.ainvoke(TWO_APROBES)
        finally:
            del request_local.id
        return [m.content for m in result["messages"][1:]], request_id.get()

    seen, caller = asyncio.run(main())
    assert seen == ["req-42 req-42", "req-42 req-42"] and caller == "req-42"


@lesson
def test_under_invoke_a_one_task_step_runs_on_the_callers_thread_but_toolnodes_pool_moves_sync_tools():
    threads = {}

    @tool
    def where(label: str) -> str:
        "Report the thread."
        threads["tool"] = threading.get_ident()
        return "ok"

    def before(state):
        threads["node"] = threading.get_ident()
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("before", before)
    builder.add_node("tools", ToolNode([where]))
    builder.add_edge(START, "before")
    builder.add_edge("before", "tools")
    builder.compile().invoke({"messages": [_ai(_call("where", "w1", label="a"))]})
    assert threads["node"] == threading.get_ident() and threads["tool"] != threading.get_ident()


@lesson
def test_under_invoke_an_async_only_tool_cannot_run():
    with pytest.raises(NotImplementedError, match="StructuredTool does not support sync invocation"):
        _one_tool_graph([aprobe]).invoke(TWO_APROBES)


# -- 5. Shared state under concurrent calls ------------------------------------------------------
TWO_VISITS = {"messages": [_ai(_call("count_visit", "v1", page="home"),
                               _call("count_visit", "v2", page="home"))]}
TWO_RATES = {"messages": [_ai(_call("exchange_rate", "r1", currency="EUR"),
                              _call("exchange_rate", "r2", currency="EUR"))]}


@lesson
def test_sync_tools_under_invoke_lose_an_update_when_both_read_before_either_writes():
    counts, gate = {}, Rendezvous(2)

    @tool
    def count_visit(page: str) -> str:
        "Count a visit to a page."
        seen = counts.get(page, 0)
        gate.wait()
        counts[page] = seen + 1
        return "ok"

    _one_tool_graph([count_visit]).invoke(TWO_VISITS)
    assert gate.opened and counts == {"home": 1}


@lesson
def test_a_shared_threading_lock_across_read_and_write_keeps_both_updates():
    counts, gate, lock = {}, Rendezvous(2), threading.Lock()

    @tool
    def count_visit(page: str) -> str:
        "Count a visit to a page."
        gate.wait()
        with lock:
            seen = counts.get(page, 0)
            counts[page] = seen + 1
        return "ok"

    _one_tool_graph([count_visit]).invoke(TWO_VISITS)
    assert gate.opened and counts == {"home": 2}


@lesson
def test_two_calls_doing_get_then_put_on_one_store_item_lose_an_update():
    visits, gate = InMemoryStore(), Rendezvous(2)

    @tool
    def count_visit(page: str, runtime: ToolRuntime) -> str:
        "Count a visit to a page (in the store)."
        item = runtime.store.get(("visits",), page)
        seen = item.value["count"] if item else 0
        gate.wait()  # both calls have read before either writes
        runtime.store.put(("visits",), page, {"count": seen + 1})
        return "ok"

    _one_tool_graph([count_visit], store=visits).invoke(TWO_VISITS)
    assert gate.opened and visits.get(("visits",), "home").value == {"count": 1}


@lesson
def test_a_shared_lock_across_get_and_put_keeps_both_store_updates():
    visits, gate, lock = InMemoryStore(), Rendezvous(2), threading.Lock()

    @tool
    def count_visit(page: str, runtime: ToolRuntime) -> str:
        "Count a visit to a page (in the store)."
        gate.wait()
        with lock:
            item = runtime.store.get(("visits",), page)
            runtime.store.put(("visits",), page, {"count": (item.value["count"] if item else 0) + 1})
        return "ok"

    _one_tool_graph([count_visit], store=visits).invoke(TWO_VISITS)
    assert gate.opened and visits.get(("visits",), "home").value == {"count": 2}


@lesson
def test_an_item_per_call_keeps_every_visit_without_a_lock():
    visits, gate = InMemoryStore(), Rendezvous(2)

    @tool
    def count_visit(page: str, runtime: ToolRuntime) -> str:
        "Record a visit to a page: one item per call, nothing read first."
        gate.wait()
        runtime.store.put(("visits", page), runtime.tool_call_id, {"page": page})
        return "ok"

    _one_tool_graph([count_visit], store=visits).invoke(TWO_VISITS)
    assert gate.opened and sorted(i.key for i in visits.search(("visits", "home"))) == ["v1", "v2"]


@lesson
def test_base_store_offers_get_put_delete_search_and_no_compare_and_set():
    public = sorted(name for name in dir(BaseStore) if not name.startswith("_"))
    assert public == ["abatch", "adelete", "aget", "alist_namespaces", "aput", "asearch", "batch", "delete",
                      "get", "list_namespaces", "put", "search", "supports_ttl", "ttl_config"]


@lesson
def test_store_search_returns_at_most_ten_items_unless_given_a_limit():
    store = InMemoryStore()
    for n in range(12):
        store.put(("visits", "home"), f"v{n}", {"n": n})
    assert len(store.search(("visits", "home"))) == 10
    assert len(store.search(("visits", "home"), limit=100)) == 12


@lesson
def test_async_tools_under_ainvoke_check_then_act_across_an_await_both_fetch():
    cache, fetches, gate = {}, [], Rendezvous(2)

    @tool
    async def exchange_rate(currency: str) -> str:
        "Look up an exchange rate (cached)."
        if currency not in cache:
            await gate.wait_async()
            fetches.append(currency)
            cache[currency] = 1.08
        return "ok"

    asyncio.run(_one_tool_graph([exchange_rate]).ainvoke(TWO_RATES))
    assert gate.opened and fetches == ["EUR", "EUR"]


@lesson
def test_a_shared_asyncio_lock_across_check_await_and_act_fetches_once():
    cache, fetches, gate = {}, [], Rendezvous(2)

    async def main():
        lock = asyncio.Lock()

        @tool
        async def exchange_rate(currency: str) -> str:
            "Look up an exchange rate (cached)."
            await gate.wait_async()
            async with lock:
                if currency not in cache:
                    await asyncio.sleep(0)
                    fetches.append(currency)
                    cache[currency] = 1.08
            return "ok"

        await _one_tool_graph([exchange_rate]).ainvoke(TWO_RATES)

    asyncio.run(main())
    assert gate.opened and fetches == ["EUR"]


@lesson
def test_under_ainvoke_a_sibling_acquiring_a_threading_lock_held_across_an_await_blocks_the_holders_loop():
    lock, order = threading.Lock(), []

    async def main():
        arrived = asyncio.Event()

        @tool
        async def exchange_rate(currency: str) -> str:
            "Look up an exchange rate (a threading.Lock held across an await)."
            if lock.acquire(blocking=False):
                order.append("holder awaits")
                await asyncio.wait_for(arrived.wait(), timeout=5)
                order.append("holder resumed")
                lock.release()
            else:
                arrived.set()
                order.append(f"sibling acquired: {lock.acquire(timeout=0.3)}")
            return "ok"

        await _one_tool_graph([exchange_rate]).ainvoke(TWO_RATES)

    asyncio.run(main())
    # the holder was ready as soon as the sibling arrived, yet ran only after the sibling gave up
    assert order == ["holder awaits", "sibling acquired: False", "holder resumed"]


@tool
def upsert_memory(content: str, store: Annotated[BaseStore, InjectedToolArg]) -> str:
    "Save a memory."
    store.put(("memories",), content, {"content": content})
    return "saved"


@lesson
def test_a_store_annotated_injected_tool_arg_is_never_filled_in_and_the_model_is_asked_for_it():
    graph = _one_tool_graph([upsert_memory], store=InMemoryStore())
    result = graph.invoke({"messages": [_ai(_call("upsert_memory", "m1", content="likes tea"))]})
    reply = result["messages"][-1]
    assert reply.status == "error"
    assert reply.content == ("Error invoking tool 'upsert_memory' with kwargs {'content': 'likes tea'} "
                             "with error:\n store: Field required\n Please fix the error and try again.")


# -- Deep dive 7: async tools and the store -----------------------------------------------------
class AsyncOnlyStore(AsyncBatchedBaseStore):
    """An async store built like AsyncPostgresStore: every call runs on the loop that created it."""

    def __init__(self):
        super().__init__()
        self.memory = InMemoryStore()

    async def abatch(self, ops):
        return await self.memory.abatch(ops)


@tool
async def note_awaited(text: str, runtime: ToolRuntime) -> str:
    "Save a note (async tool, awaited store calls)."
    await runtime.store.aput(("notes",), text, {"text": text})
    return json.dumps([item.key for item in await runtime.store.asearch(("notes",))])


@tool
async def note_blocking(text: str, runtime: ToolRuntime) -> str:
    "Save a note (async tool, sync store call)."
    runtime.store.put(("notes",), text, {"text": text})
    return "saved"


@tool
def note_sync(text: str, runtime: ToolRuntime) -> str:
    "Save a note (sync tool, sync store call)."
    runtime.store.put(("notes",), text, {"text": text})
    return "saved"


def _save_with(saver, make_store):
    async def main():
        store = make_store()
        graph = _one_tool_graph([saver], store=store)
        reply = (await graph.ainvoke({"messages": [_ai(_call(saver.name, "a1", text="hi"))]}))["messages"][-1]
        return reply.content, await store.aget(("notes",), "hi")

    return asyncio.run(main())


@lesson
@pytest.mark.parametrize("make_store", [InMemoryStore, AsyncOnlyStore])
def test_an_async_tool_awaits_aput_and_asearch_on_any_store(make_store):
    content, item = _save_with(note_awaited, make_store)
    assert json.loads(content) == ["hi"] and item.value == {"text": "hi"}


@lesson
def test_an_in_memory_stores_sync_calls_work_inside_an_async_tool():
    content, item = _save_with(note_blocking, InMemoryStore)
    assert content == "saved" and item.value == {"text": "hi"}


@lesson
def test_a_sync_call_on_an_async_batched_store_inside_an_async_tool_raises_invalid_state_error():
    assert issubclass(AsyncOnlyStore, AsyncBatchedBaseStore)
    with pytest.raises(asyncio.InvalidStateError,
                       match=r"Synchronous calls to AsyncOnlyStore detected in the main event loop.*"
                             r"replace `store.put\(...\)` with `await store.aput\(...\)"):
        _save_with(note_blocking, AsyncOnlyStore)


@lesson
def test_a_sync_tool_under_ainvoke_hands_its_sync_call_to_the_async_stores_loop():
    content, item = _save_with(note_sync, AsyncOnlyStore)
    assert content == "saved" and item.value == {"text": "hi"}


HANG_PROGRAM = textwrap.dedent("""
    import asyncio, os, sys, threading
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, ToolRuntime
    from langgraph.store.base.batch import AsyncBatchedBaseStore
    from langgraph.store.memory import InMemoryStore

    class AsyncOnlyStore(AsyncBatchedBaseStore):
        def __init__(self):
            super().__init__()
            self.memory = InMemoryStore()
        async def abatch(self, ops):
            return await self.memory.abatch(ops)

    entered = threading.Event()

    @tool
    def note_sync(text: str, runtime: ToolRuntime) -> str:
        "Save a note."
        entered.set()
        runtime.store.put(("notes",), text, {"text": text})
        return "saved"

    def watchdog():
        entered.wait()
        if not done.wait(3):
            print("still waiting", flush=True)
            os._exit(0)

    done = threading.Event()
    threading.Thread(target=watchdog, daemon=True).start()

    async def main():
        builder = StateGraph(MessagesState)
        builder.add_node("tools", ToolNode([note_sync]))
        builder.add_edge(START, "tools")
        graph = builder.compile(store=AsyncOnlyStore())
        call = {"name": "note_sync", "args": {"text": "hi"}, "id": "a1", "type": "tool_call"}
        graph.invoke({"messages": [AIMessage("", tool_calls=[call])]})  # sync invoke on the loop's thread
        done.set()
        print("returned", flush=True)

    asyncio.run(main())
""")


@lesson
def test_a_sync_invoke_on_the_async_stores_own_loop_thread_hangs_a_sync_tools_store_call():
    result = subprocess.run([sys.executable, "-c", HANG_PROGRAM], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "still waiting", result.stdout + result.stderr
