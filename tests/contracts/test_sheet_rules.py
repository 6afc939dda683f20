"""Cheat-sheet rules that no lesson's own contract module pins in exactly the form the sheet states.

`docs/cheatsheet.en.md` (ToolNode's rules) and `docs/cheatsheet-agent.en.md` (tools in a running
agent) cite the lessons' own contract tests wherever those exercise the rule as the sheet states it.
The tests here cover the rest: a form the sheet names that the lesson's tests leave out (every error
policy, not two of them; a graph inside a ToolNode's tool as well as inside a chain; an injected
parameter an `extra="forbid"` schema leaves out). Each is marked with the lesson that teaches the
rule, so a failure after an upgrade names both the lesson and the sheet's rule (the comment above
each group gives its number).
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
import warnings
from typing import Annotated, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.managed import RemainingSteps
from langgraph.prebuilt import InjectedStore, ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, interrupt
from pydantic import BaseModel, ConfigDict, ValidationError

from helpers.models import ScriptedChatModel

lesson_03 = pytest.mark.lesson("03_builtin_toolnode")
lesson_04 = pytest.mark.lesson("04_tools_condition_loop")
lesson_07 = pytest.mark.lesson("07_inside_toolnode")
lesson_08 = pytest.mark.lesson("08_interceptors")
lesson_10 = pytest.mark.lesson("10_mcp_tools")
lesson_14 = pytest.mark.lesson("15_what_a_tool_sees")
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


def answer_anything(error):  # an unannotated callable: handles every exception
    return f"handled {type(error).__name__}"


def only_validation_errors(error: ValidationError) -> str:
    return "handled a validation error"


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


# -- first sheet, rule 11: a resume value that fails its response_schema is never answered -----------
class Approval(BaseModel):
    approve: bool


@tool("delete_file")
def delete_file(path: str) -> str:
    """Delete a file once a human approves (the answer must match a schema)."""
    return f"approve={interrupt({'path': path}, response_schema=Approval).approve}"


POLICIES = {"default": None, "False": False, "True": True, "a string": "Tool failed.",
            "an unannotated callable": answer_anything, "ValidationError": ValidationError,
            "Exception": Exception, "an annotated callable": only_validation_errors}


@lesson_03
@pytest.mark.parametrize("wrapped", [False, True], ids=["no interceptor", "an interceptor"])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_resume_value_that_fails_its_response_schema_fails_the_run_under_every_policy(policy, wrapped):
    options = {} if POLICIES[policy] is None else {"handle_tool_errors": POLICIES[policy]}
    if wrapped:
        options["wrap_tool_call"] = passthrough
    graph = one_node_graph(ToolNode([delete_file], **options), checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in graph.invoke({"messages": [ai(call("delete_file", path="/x"))]}, thread)
    with pytest.raises(ValidationError):
        graph.invoke(Command(resume={"approve": "maybe"}), thread)
    assert graph.get_state(thread).next == ("tools",)  # still waiting: the human can answer again


# -- first sheet, rule 16: a limit on the outermost call reaches a graph inside a ToolNode's tool ------
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
def test_a_limit_passed_in_the_config_reaches_a_graph_run_inside_a_tool():
    assert limit_inside_a_graphs_tool() == 25
    assert limit_inside_a_graphs_tool({"recursion_limit": 50}) == 50


# -- first sheet, rule 28: a retry behind an unannotated callable policy gets the message ----------------
@lesson_08
def test_a_retry_wrapper_gets_an_error_message_under_an_unannotated_callable_policy():
    seen = []

    def retry(request, execute):
        for _ in range(2):
            try:
                result = execute(request)
            except ZeroDivisionError:
                seen.append("exception")
                continue
            seen.append(result.status)
            return result
        raise AssertionError("unreachable: the policy answered inside execute")

    node = ToolNode([divide], wrap_tool_call=retry, handle_tool_errors=answer_anything)
    (answer,) = node.invoke([ai(call("divide", a=1, b=0))], runtime=RT)
    assert seen == ["error"] and answer.content == "handled ZeroDivisionError"


# -- agent sheet, rule 29: execution_info and the node's tools in create_agent --------------------------
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
    assert info.task_id and info.checkpoint_id and info.checkpoint_ns.startswith("tools:")
    assert seen["tools"] == ["peek", "other"] and seen["server"] is None  # the node's tools, every one


# -- agent sheet, rule 30: a missing store behind InjectedStore, with an interceptor -------------------
@tool
def save_note(text: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Save a note."""
    store.put(("notes",), text, {"text": text})
    return "saved"


STORE_ERROR = ("Cannot inject store into tools with InjectedStore annotations - "
               "please compile your graph with a store.")
CATCHING = {"True": True, "a string": "Tool failed.", "ValueError": ValueError, "KeyError": KeyError,
            "an unannotated callable": answer_anything, "an annotated callable": only_validation_errors}


@lesson_14
@pytest.mark.parametrize("path", ["invoke", "ainvoke"])
@pytest.mark.parametrize("policy", list(CATCHING))
def test_with_an_interceptor_every_policy_but_the_default_and_false_answers_a_missing_injected_store(
        policy, path):
    """The injection fails inside the interceptor's call of `execute`; what escapes the wrapper is
    answered under any policy but False and the default, whichever types it names (first sheet, rule 12)."""
    hook = {"wrap_tool_call": passthrough} if path == "invoke" else {"awrap_tool_call": apassthrough}
    graph = one_node_graph(ToolNode([save_note], handle_tool_errors=CATCHING[policy], **hook))
    request = {"messages": [ai(call("save_note", text="x"))]}
    result = graph.invoke(request) if path == "invoke" else asyncio.run(graph.ainvoke(request))
    answer = result["messages"][-1]
    assert answer.status == "error"
    assert STORE_ERROR in answer.content or answer.content.startswith(("Tool failed.", "handled"))


# -- agent sheet, rule 31: a typed ToolRuntime given a dataclass of another type ------------------------
@dataclasses.dataclass
class Ctx:
    user: str = "guest"


@dataclasses.dataclass
class OtherCtx:
    plan: str = "free"


@tool
def typed_runtime(runtime: ToolRuntime[Ctx]) -> str:
    """Show the context (typed annotation)."""
    return repr(runtime.context)


@lesson_14
def test_a_typed_tool_runtime_given_a_dataclass_of_another_type_raises_attribute_error():
    """Not the tool's code: serialising the tool's input for the callbacks expects a `Ctx`."""
    builder = StateGraph(MessagesState, context_schema=Ctx)
    builder.add_node("tools", ToolNode([typed_runtime]))
    builder.add_edge(START, "tools")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AttributeError, match="'OtherCtx' object has no attribute 'user'"):
            builder.compile().invoke({"messages": [ai(call("typed_runtime"))]}, context=OtherCtx())


# -- first sheet, rule 26: injected parameters an extra="forbid" args_schema leaves out ----------------
class ForbidQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str


def run_lookup(lookup):
    graph = one_node_graph(ToolNode([lookup]), store=InMemoryStore())
    return graph.invoke({"messages": [ai(call("lookup", query="q"))]})["messages"][-1]


@lesson_07
def test_under_extra_forbid_an_undeclared_injected_store_fails_with_an_empty_reason():
    @tool("lookup", args_schema=ForbidQuery)
    def lookup(query: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
        """Look a query up."""
        return "found"

    answer = run_lookup(lookup)
    assert (answer.status, answer.content) == (
        "error", "Error invoking tool 'lookup' with kwargs {'query': 'q'} with error:\n \n"
                 " Please fix the error and try again.")


@lesson_07
def test_under_extra_forbid_an_undeclared_tool_call_id_is_still_filled():
    """langchain-core fills it outside the schema's validation, so `extra` never sees it."""
    @tool("lookup", args_schema=ForbidQuery)
    def lookup(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Look a query up."""
        return f"{query} {tool_call_id}"

    answer = run_lookup(lookup)
    assert (answer.status, answer.content) == ("success", "q c1")


# -- agent sheet, rule 2: neither adapter setting catches what is no ToolException (a closed session) --
@lesson_10
@pytest.mark.parametrize("handle_tool_errors", [True, False])
def test_a_closed_session_raises_closed_resource_error_under_either_adapter_setting(handle_tool_errors):
    """An MCP tool called after its session closed raises anyio's ClosedResourceError whether the adapter
    handles tool errors or not: only a ToolException reaches the adapter's handler, and ToolNode's default
    policy lets it through. Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langgraph 1.2.24."""
    anyio = pytest.importorskip("anyio")
    pytest.importorskip("langchain_mcp_adapters", reason="langchain-mcp-adapters is not installed")
    from helpers.mcp_client import in_process_tools
    from helpers.mcp_server import SERVER_NAME

    async def call_after_close():
        async with in_process_tools(server=SERVER_NAME, handle_tool_errors=handle_tool_errors) as tools:
            pass
        await ToolNode(tools).ainvoke([ai(call("lookup_weather", city="Paris"))], runtime=RT)

    with pytest.raises(anyio.ClosedResourceError):
        asyncio.run(call_after_close())
