"""Cheat-sheet rules that no lesson's own contract module pins in exactly the form the sheet states.

`docs/cheatsheet.en.md` (ToolNode's rules) and `docs/cheatsheet-agent.en.md` (tools in a running
agent) state some rules more completely than the tests beside their lessons exercise them: a bare
`Send` beside the `Send` list, an error policy with an interceptor set, the step limit of a graph run
inside another runnable. Each test here runs one such rule in the form the sheet states it and is
marked with the lesson that teaches it, so a failure after an upgrade names both the lesson and the
sheet's rule (the comment above each group gives its number).
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import time
import uuid
import warnings
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph, add_messages
from langgraph.managed import RemainingSteps
from langgraph.prebuilt import InjectedStore, ToolNode, ToolRuntime, tools_condition
from langgraph.prebuilt.tool_node import ToolInvocationError
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command, Send
from pydantic import BaseModel

from helpers.history import unanswered_tool_calls
from helpers.models import ScriptedChatModel, tool_results_summary

lesson_03 = pytest.mark.lesson("03_builtin_toolnode")
lesson_04 = pytest.mark.lesson("04_tools_condition_loop")
lesson_06 = pytest.mark.lesson("06_command_and_parent")
lesson_07 = pytest.mark.lesson("07_inside_toolnode")
lesson_08 = pytest.mark.lesson("08_interceptors")
lesson_09 = pytest.mark.lesson("09_prebuilt_agents")
lesson_12 = pytest.mark.lesson("12_failure_and_recovery")
lesson_14 = pytest.mark.lesson("14_what_a_tool_sees")
RT = Runtime()


def call(name, id="c1", **args):
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def ai(*calls):
    return AIMessage(content="", tool_calls=list(calls))


def one_node_graph(node, **compile_options):
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    return builder.compile(**compile_options)


def passthrough(request, execute):
    return execute(request)


async def apassthrough(request, execute):
    return await execute(request)


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


# -- first sheet, rule 11: the default policy answers any ValidationError that escapes a tool ----------
class Reading(BaseModel):
    celsius: int


@tool
def parse_reading(raw: str) -> str:
    """Parse a sensor reading (validates in its body)."""
    return str(Reading(celsius=raw).celsius)


@lesson_03
def test_the_default_policy_answers_a_validation_error_raised_in_the_tools_body():
    (answer,) = ToolNode([parse_reading]).invoke([ai(call("parse_reading", raw="warm"))], runtime=RT)
    assert answer.status == "error"
    assert answer.content.startswith(
        "Error invoking tool 'parse_reading' with kwargs {'raw': 'warm'} with error:")
    assert answer.content.endswith(" Please fix the error and try again.")


# -- first sheet, rule 12: a type policy, ToolException, and an interceptor ----------------------------
@lesson_03
def test_tool_invocation_error_is_a_tool_exception_so_naming_tool_exception_keeps_argument_errors_answered():
    assert issubclass(ToolInvocationError, ToolException)
    node = ToolNode([divide], handle_tool_errors=ToolException)
    (answer,) = node.invoke([ai(call("divide", a=1))], runtime=RT)
    assert answer.status == "error" and answer.content.startswith("Error: ToolInvocationError(")
    with pytest.raises(ZeroDivisionError):  # a bug is not a ToolException: it still raises
        node.invoke([ai(call("divide", a=1, b=0))], runtime=RT)


def only_value_errors(error: ValueError) -> str:
    return "a value error"


@lesson_08
@pytest.mark.parametrize("policy", [KeyError, (KeyError, ValueError), only_value_errors],
                         ids=["type", "tuple", "annotated-callable"])
def test_with_an_interceptor_a_narrow_policy_answers_every_exception_escaping_the_wrapper(policy):
    request = [ai(call("divide", a=1, b=0))]
    with pytest.raises(ZeroDivisionError):  # without an interceptor the policy's types decide
        ToolNode([divide], handle_tool_errors=policy).invoke(request, runtime=RT)
    wrapped = ToolNode([divide], handle_tool_errors=policy, wrap_tool_call=passthrough)
    (answer,) = wrapped.invoke(request, runtime=RT)
    assert answer.status == "error"
    assert "ZeroDivisionError" in answer.content or answer.content == "a value error"


# -- first sheet, rule 28: what a retry interceptor sees, per policy ----------------------------------
def retry_recording(seen, tries=2):
    def retry(request, execute):
        for attempt in range(1, tries + 1):
            try:
                result = execute(request)
            except ZeroDivisionError:
                seen.append("exception")
                if attempt == tries:
                    raise
            else:
                seen.append(f"message ({result.status})")
                return result
    return retry


@lesson_08
@pytest.mark.parametrize("policy", ["default", False, (KeyError,)])
def test_a_retry_wrapper_sees_the_exception_under_any_policy_that_does_not_answer_it(policy):
    seen = []
    options = {} if policy == "default" else {"handle_tool_errors": policy}
    node = ToolNode([divide], wrap_tool_call=retry_recording(seen), **options)
    try:
        node.invoke([ai(call("divide", a=1, b=0))], runtime=RT)
    except ZeroDivisionError:
        pass
    assert seen == ["exception", "exception"]


@lesson_08
@pytest.mark.parametrize("policy", [True, "Tool failed.", (ZeroDivisionError,)])
def test_a_retry_wrapper_gets_an_error_message_under_a_policy_that_answers_the_exception(policy):
    seen = []
    node = ToolNode([divide], wrap_tool_call=retry_recording(seen), handle_tool_errors=policy)
    (answer,) = node.invoke([ai(call("divide", a=1, b=0))], runtime=RT)
    assert seen == ["message (error)"] and answer.status == "error"


# -- first sheet, rule 16: where the 10 007 default applies -------------------------------------------
class Budget(TypedDict):
    remaining_steps: RemainingSteps
    seen: int


def step_limit_probe():
    """A one-node graph that reports the step limit it runs under."""
    builder = StateGraph(Budget)
    builder.add_node("peek", lambda state: {"seen": state["remaining_steps"] + 1})
    builder.add_edge(START, "peek")
    return builder.compile()


PROBE = step_limit_probe()


@tool
def run_probe(x: int) -> int:
    """Run a graph and report its step limit."""
    return PROBE.invoke({"seen": 0})["seen"]


def limit_inside_a_graphs_tool(config=None):
    graph = one_node_graph(ToolNode([run_probe]))
    return int(graph.invoke({"messages": [ai(call("run_probe", x=1))]}, config)["messages"][-1].content)


@lesson_04
def test_a_graph_invoked_directly_gets_10007():
    assert PROBE.invoke({"seen": 0})["seen"] == 10007
    assert asyncio.run(PROBE.ainvoke({"seen": 0}))["seen"] == 10007


@lesson_04
@pytest.mark.parametrize("where", ["runnable", "chain", "tool", "a graph's tool", "batch"])
def test_a_graph_run_inside_a_runnable_a_chain_a_tool_or_batch_gets_langchain_cores_25(where):
    limit = {
        "runnable": lambda: RunnableLambda(lambda _: PROBE.invoke({"seen": 0})["seen"]).invoke(None),
        "chain": lambda: (RunnableLambda(lambda state: state) | PROBE).invoke({"seen": 0})["seen"],
        "tool": lambda: run_probe.invoke({"x": 1}),
        "a graph's tool": limit_inside_a_graphs_tool,
        "batch": lambda: PROBE.batch([{"seen": 0}])[0]["seen"],
    }[where]()
    assert limit == 25


@lesson_04
def test_a_limit_passed_in_the_config_reaches_a_graph_run_inside_a_tool():
    assert limit_inside_a_graphs_tool({"recursion_limit": 50}) == 50


# -- first sheet, rules 21, 23 and 24: PARENT Commands ------------------------------------------------
@lesson_06
def test_a_parent_command_with_an_update_and_no_tool_message_passes_toolnode_unchecked():
    @tool
    def escalate(x: int) -> Command:
        """Hand off to the parent, updating a counter but answering nothing."""
        return Command(graph=Command.PARENT, goto="A", update={"counter": 1})

    @tool
    def stay(x: int) -> Command:
        """The same update, to this graph."""
        return Command(goto="A", update={"counter": 1})

    out = ToolNode([escalate]).invoke({"messages": [ai(call("escalate", x=1))]}, runtime=RT)
    assert out == [Command(graph=Command.PARENT, goto="A", update={"counter": 1})]
    with pytest.raises(ValueError, match="Expected to have a matching ToolMessage in Command.update"):
        ToolNode([stay]).invoke({"messages": [ai(call("stay", x=1))]}, runtime=RT)


def parent_hand_off(goto):
    @tool("foo")
    def foo(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Hand the work to the parent graph, answering this call."""
        answer = ToolMessage(f"foo({x})", tool_call_id=tool_call_id)
        return Command(graph=Command.PARENT, goto=goto, update={"messages": [answer], "counter": 1})
    return foo


NOTE = {"note": "from foo"}  # the data a Send carries to its node
GOTO_FORMS = {"a bare Send": Send("A", NOTE), "a tuple of Sends": (Send("A", NOTE), Send("B", NOTE)),
              "a list of Sends": [Send("A", NOTE), Send("B", NOTE)]}


@lesson_06
@pytest.mark.parametrize("form", list(GOTO_FORMS))
def test_only_a_list_of_sends_is_merged_and_loses_its_update(form):
    goto = GOTO_FORMS[form]
    (out,) = ToolNode([parent_hand_off(goto)]).invoke({"messages": [ai(call("foo", x=1))]}, runtime=RT)
    if form == "a list of Sends":
        assert out == Command(graph=Command.PARENT, goto=goto)  # merged: the update is gone
    else:
        assert out.goto == goto and out.update["counter"] == 1  # kept as returned, update included
        assert out.update["messages"][0].tool_call_id == "c1"


class Parent(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    counter: int
    visited: Annotated[list[str], operator.add]


def parent_graph(hand_off):
    model = ScriptedChatModel(script=[[{"name": "foo", "args": {"x": 1}}]]).bind_tools([hand_off])
    team = StateGraph(Parent)
    team.add_node("tools", ToolNode([hand_off]))
    team.add_edge(START, "tools")
    parent = StateGraph(Parent)
    parent.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    parent.add_node("team", team.compile(), destinations=("A", "B"))
    for name in "AB":  # each records its visit and the note its Send brought
        parent.add_node(name, lambda arg, name=name: {"visited": [f"{name}: {arg.get('note')}"]})
        parent.add_edge(name, END)
    parent.add_edge(START, "agent")
    parent.add_edge("agent", "team")
    return parent.compile()


@lesson_06
@pytest.mark.parametrize("form", ["a bare Send", "a tuple of Sends"])
def test_a_bare_send_or_a_tuple_handoff_alone_in_its_batch_arrives_whole_in_the_parent(form):
    final = parent_graph(parent_hand_off(GOTO_FORMS[form])).invoke(
        {"messages": [HumanMessage("Hand it over.")], "counter": 0, "visited": []})
    assert final["counter"] == 1 and unanswered_tool_calls(final["messages"]) == []
    expected = ["A: from foo"] if form == "a bare Send" else ["A: from foo", "B: from foo"]
    assert final["visited"] == expected


# -- first sheet, rule 26: an InjectedToolCallId a plain args_schema leaves out -----------------------
class QueryArgs(BaseModel):
    query: str


@lesson_07
def test_an_injected_call_id_named_tool_call_id_is_filled_though_a_plain_args_schema_leaves_it_out():
    @tool("lookup", args_schema=QueryArgs)
    def lookup(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Look a query up."""
        return f"{query} {tool_call_id}"

    graph = one_node_graph(ToolNode([lookup]))
    assert graph.invoke({"messages": [ai(call("lookup", query="q"))]})["messages"][-1].content == "q c1"


@lesson_07
def test_under_any_other_name_an_undeclared_injected_call_id_crashes_the_run_with_a_type_error():
    @tool("lookup", args_schema=QueryArgs)
    def lookup(query: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Look a query up."""
        return f"{query} {call_id}"

    graph = one_node_graph(ToolNode([lookup]))
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'call_id'"):
        graph.invoke({"messages": [ai(call("lookup", query="q"))]})


# -- agent sheet, rule 9: under ainvoke, create_agent's retry repeats the cancelled siblings ----------
@lesson_09
@pytest.mark.timing  # soaked: the failure waits for the sibling to start (an event), not for a delay
def test_under_ainvoke_a_failure_cancels_an_unfinished_async_sibling_and_the_retry_runs_it_again():
    from langchain.agents import create_agent

    started, fate, service = [], [], {"up": False}

    @tool
    async def slow_weather(city: str) -> str:
        """Look up the weather, slowly."""
        started.append(city)
        try:
            await asyncio.sleep(0 if service["up"] else 5)
        except asyncio.CancelledError:
            fate.append("cancelled")
            raise
        return "sunny"

    @tool
    async def traffic(city: str) -> str:
        """Look up live traffic; its service may be down."""
        deadline = time.monotonic() + 5
        while not started and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        if not service["up"]:
            raise ConnectionError("traffic service unreachable")
        return "light"

    calls = [{"name": "slow_weather", "args": {"city": "Paris"}},
             {"name": "traffic", "args": {"city": "Paris"}}]
    agent = create_agent(ScriptedChatModel(script=[calls, tool_results_summary]), [slow_weather, traffic],
                         checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}

    async def scenario():
        with pytest.raises(ConnectionError):
            await agent.ainvoke({"messages": [HumanMessage("go")]}, thread)
        saved = [m.type for m in (await agent.aget_state(thread)).values["messages"]]
        service["up"] = True
        await agent.ainvoke(None, thread)
        return saved

    assert asyncio.run(scenario()) == ["human", "ai"]
    assert fate == ["cancelled"] and started == ["Paris", "Paris"]


# -- agent sheet, rule 12: when a node timeout is refused ---------------------------------------------
@lesson_12
def test_a_plain_def_node_with_a_timeout_is_refused_when_the_graph_is_compiled():
    builder = StateGraph(MessagesState)
    builder.add_node("plain", lambda state: {}, timeout=1.0)  # accepted here ...
    builder.add_edge(START, "plain")
    with pytest.raises(ValueError, match="only supported for async nodes.*Node 'plain' is sync"):
        builder.compile()  # ... refused here, before anything runs


@lesson_12
def test_an_async_node_timeout_under_invoke_is_refused_only_when_its_step_is_reached():
    @tool
    def quick(x: int) -> str:
        """Answer at once."""
        return "ok"

    model_calls = []
    llm = ScriptedChatModel(script=[[{"name": "quick", "args": {"x": 1}}], "done"]).bind_tools([quick])

    def model(state):
        model_calls.append(1)
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", model)
    builder.add_node("tools", ToolNode([quick]), timeout=1.0)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    graph = builder.compile(checkpointer=InMemorySaver())  # compiles: ToolNode is an async node
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError, match="Node timeouts are only supported for async nodes.*Node 'tools'"):
        graph.invoke({"messages": [HumanMessage("go")]}, config)
    snapshot = graph.get_state(config)
    assert model_calls == [1] and [m.type for m in snapshot.values["messages"]] == ["human", "ai"]
    assert snapshot.next == ("tools",)


# -- agent sheet, rule 22: ToolRuntime's fields ------------------------------------------------------
@lesson_14
def test_tool_runtime_has_nine_fields_tools_execution_info_and_server_info_among_them():
    assert [f.name for f in dataclasses.fields(ToolRuntime)] == [
        "state", "context", "config", "stream_writer", "tool_call_id", "store", "tools",
        "execution_info", "server_info"]


@lesson_14
def test_execution_info_carries_the_thread_run_and_task_ids_and_the_node_attempt():
    from langchain.agents import create_agent

    seen = {}

    @tool
    def peek(runtime: ToolRuntime) -> str:
        """Report what the runtime says about this execution."""
        seen.update(info=runtime.execution_info, tools=[t.name for t in runtime.tools],
                    server=runtime.server_info)
        return "ok"

    @tool
    def other(x: int) -> str:
        """Another tool of the same agent."""
        return "other"

    run_id = uuid.uuid4()
    agent = create_agent(ScriptedChatModel(script=[[{"name": "peek", "args": {}}], "done"]), [peek, other],
                         checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t-1"}, "run_id": run_id})
    info = seen["info"]
    assert (info.thread_id, info.run_id, info.node_attempt) == ("t-1", str(run_id), 1)
    assert info.task_id and info.checkpoint_ns.startswith("tools:")
    assert seen["tools"] == ["peek", "other"] and seen["server"] is None  # the node's tools, every one


# -- agent sheet, rule 23: a missing store behind InjectedStore, with and without an interceptor ----
@tool
def save_note(text: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Save a note."""
    store.put(("notes",), text, {"text": text})
    return "saved"


STORE_ERROR = ("Cannot inject store into tools with InjectedStore annotations - "
               "please compile your graph with a store.")


@lesson_14
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
def test_with_an_interceptor_and_true_a_missing_injected_store_is_answered_with_an_error_message(path):
    hook = {"wrap_tool_call": passthrough} if path == "invoke" else {"awrap_tool_call": apassthrough}
    request = {"messages": [ai(call("save_note", text="x"))]}
    with pytest.raises(ValueError) as raised:  # without an interceptor: a crash, even under True
        graph = one_node_graph(ToolNode([save_note], handle_tool_errors=True))
        graph.invoke(request) if path == "invoke" else asyncio.run(graph.ainvoke(request))
    assert str(raised.value) == STORE_ERROR
    graph = one_node_graph(ToolNode([save_note], handle_tool_errors=True, **hook))
    result = graph.invoke(request) if path == "invoke" else asyncio.run(graph.ainvoke(request))
    answer = result["messages"][-1]
    assert answer.status == "error" and answer.content.startswith(f"Error: ValueError({STORE_ERROR!r})")


@lesson_14
def test_with_an_interceptor_under_the_default_policy_a_missing_injected_store_still_crashes():
    graph = one_node_graph(ToolNode([save_note], wrap_tool_call=passthrough))
    with pytest.raises(ValueError) as raised:
        graph.invoke({"messages": [ai(call("save_note", text="x"))]})
    assert str(raised.value) == STORE_ERROR


# -- agent sheet, rule 24: the serializer warning, bare and typed -------------------------------------
@dataclasses.dataclass
class Ctx:
    user: str = "guest"


@dataclasses.dataclass
class OtherCtx:
    plan: str = "free"


@tool
def bare_runtime(runtime: ToolRuntime) -> str:
    """Show the context (bare annotation)."""
    return repr(runtime.context)


@tool
def typed_runtime(runtime: ToolRuntime[Ctx]) -> str:
    """Show the context (typed annotation)."""
    return repr(runtime.context)


def context_run(tool_, context):
    builder = StateGraph(MessagesState, context_schema=Ctx)
    builder.add_node("tools", ToolNode([tool_]))
    builder.add_edge(START, "tools")
    graph = builder.compile()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = graph.invoke({"messages": [ai(call(tool_.name))]}, context=context)
    warned = any("PydanticSerializationUnexpectedValue" in str(w.message) for w in caught)
    return out["messages"][-1].content, warned


@lesson_14
@pytest.mark.parametrize("context", [Ctx("ann"), "ann", {"user": "ann"}], ids=["Ctx", "str", "dict"])
def test_a_bare_tool_runtime_warns_for_every_context_right_or_wrong(context):
    assert context_run(bare_runtime, context)[1]


@lesson_14
def test_a_typed_tool_runtime_is_silent_for_the_right_context_and_warns_for_a_wrong_one():
    assert context_run(typed_runtime, Ctx("ann")) == ("Ctx(user='ann')", False)
    assert context_run(typed_runtime, {"user": "ann"}) == ("Ctx(user='ann')", False)  # coerced first
    assert context_run(typed_runtime, "ann") == ("'ann'", True)  # passed through, with the warning


@lesson_14
def test_a_typed_tool_runtime_given_a_dataclass_of_another_type_raises_attribute_error():
    with pytest.raises(AttributeError, match="'OtherCtx' object has no attribute 'user'"):
        context_run(typed_runtime, OtherCtx())

