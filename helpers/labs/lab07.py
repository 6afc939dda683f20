"""Lab 07 — Predict what a tool receives (after `notebooks/07_inside_toolnode.ipynb`).

A predict-and-check lab (`helpers.labs.predict.PredictionLab`): the learner writes one dict of
predictions per exercise, and each check runs every scenario live on the pinned libraries.

q1 (`BATCH`): what `__init__`, `_func` and `_afunc` make of a batch — tools kept by name, the tools a
    `ToolRuntime` lists, a thread pool per `invoke`, what `max_concurrency` bounds under `invoke` and
    under `ainvoke`, for async tools and for sync ones.
q2 (`PAYLOADS`): what `_parse_input` and `_combine_tool_outputs` make of an input — which calls run,
    what shape comes back for a list of tool calls or a state object, what a `Send` payload runs and
    which state its tool reads, one `ToolRuntime` per call.
q3 (`INJECTION`): what the model is shown and what ToolNode fills in — `ToolRuntime` beside an
    ordinary default, an ordinary argument named `runtime`, a forged store, a runtime or a call id
    that an `args_schema` leaves out.

Each scenario is the lesson's model applied to a case the lesson does not run: a third tool, another
limit, sync tools under `ainvoke`, a list of tool calls, a `Send` payload's state, a default value, a
store. Every scenario builds its own tools and nodes, runs in well under a second and returns a plain
value.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from helpers.batch import make_timed_tools, tool_calls_message
from helpers.labs.predict import PredictionLab
from helpers.timing import CallRecorder, Rendezvous

LESSON = "07_inside_toolnode"
INIT = "1.1 `__init__`: tools by name, injected arguments worked out once"
FUNC = "1.2 `_func`: one `ToolRuntime` per call, then a thread pool"
AFUNC = "1.3 `_afunc`: the same steps, with `asyncio.gather` instead of a pool"
PARSE = "2.1 `_parse_input`: which calls run, and what shape the answer takes"
COMBINE = "2.3 `_combine_tool_outputs`: rules one and two, and the PARENT merge"
CAN_RECEIVE = "3. What a tool can receive"
RUNTIME = "3.1 `ToolRuntime`: everything at once"
NAME_OR_ANNOTATION = "3.2 Recognised by its name *or* by its annotation"
SINGLE = "4.1 The single-purpose annotations"
FORGED = "4.2 Forged injected arguments are stripped"
DELAY = 0.15
_CONFIG = {"configurable": {"thread_id": "lab07"}}
"""A config for a ToolNode run on its own: without one, a `ToolRuntime` tool warns (lesson 15)."""

lab = PredictionLab("07", LESSON)


def _call(name: str, id: str, **args: Any) -> dict:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def _ai(*calls: dict) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


def _one_tool_graph(tool_: Any, state: Any = MessagesState, **compile_options: Any) -> Any:
    builder = StateGraph(state)
    builder.add_node("tools", ToolNode([tool_]))
    builder.add_edge(START, "tools")
    return builder.compile(**compile_options)


def _named(name: str, answer: str) -> Any:
    def run(city: str) -> str:
        return answer

    run.__doc__ = f"Look up {name} for a city."
    return tool(name)(run)


def _in_flight(n: int, path: str, kind: str, limit: int | None) -> int:
    """The most calls of `n` in flight at once. Each waits at a gate until `limit` calls (under `invoke`,
    whose pool it sizes) or all `n` (under `ainvoke`) wait together, so overlap is shown by events."""
    parties = limit if path == "invoke" and limit else n
    recorder, gate = CallRecorder(), Rendezvous(parties, timeout=1.0)
    tools = make_timed_tools(n, DELAY, kind=kind, recorder=recorder, gate=gate)
    node, batch = ToolNode(tools), [tool_calls_message(tools)]
    config = {"max_concurrency": limit} if limit else None
    if path == "invoke":
        node.invoke(batch, config=config, runtime=Runtime())
    else:
        asyncio.run(node.ainvoke(batch, config=config, runtime=Runtime()))
    return recorder.max_in_flight()


# -- q1: the batch -------------------------------------------------------------------------------------
@lab.question(
    "q1",
    ask="ToolNode([lookup_weather, lookup_museum, another tool also named 'lookup_weather']). How many tools "
    "does the node hold (len(node.tools_by_name))?",
    answers=None,
    kind=int,
    rule="__init__ keeps the tools in a dict keyed by name: a second tool with a name already there replaces "
    "the first, silently.",
    heading=INIT,
)
def tools_after_a_duplicate() -> int:
    node = ToolNode(
        [
            _named("lookup_weather", "sunny"),
            _named("lookup_museum", "Louvre"),
            _named("lookup_weather", "rain"),
        ]
    )
    return len(node.tools_by_name)


@lab.question(
    "q1",
    ask="A tool `count_tools` returns len(runtime.tools), in ToolNode([count_tools, lookup_weather, "
    "lookup_museum]); the model calls count_tools alone. What does it return?",
    answers=None,
    kind=int,
    rule="_func builds every ToolRuntime with tools=list(self.tools_by_name.values()): all the node's tools, "
    "the calling one included, whatever the batch calls.",
    heading=FUNC,
)
def tools_a_runtime_lists() -> int:
    @tool
    def count_tools(runtime: ToolRuntime) -> int:
        "Count the tools of this node."
        return len(runtime.tools)

    node = ToolNode([count_tools, _named("lookup_weather", "sunny"), _named("lookup_museum", "Louvre")])
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    result = graph.compile().invoke({"messages": [_ai(_call("count_tools", "c1"))]})
    return int(result["messages"][-1].content)


@lab.question(
    "q1",
    ask="The same ToolNode invoked three times in a row with `invoke`, two sync calls each. How many "
    "different thread pools ran the six calls?",
    answers=None,
    kind=int,
    rule="get_executor_for_config is a context manager that creates a new ContextThreadPoolExecutor for each "
    "invoke and shuts it down at the end of the `with` block.",
    heading=FUNC,
)
def pools_for_three_invokes() -> int:
    @tool
    def where(label: str) -> str:
        "Report the pool this call runs in."
        return threading.current_thread().name.rsplit("_", 1)[0]

    node = ToolNode([where])
    pools = set()
    for n in range(3):
        batch = [_ai(_call("where", f"a{n}", label="a"), _call("where", f"b{n}", label="b"))]
        pools |= {m.content for m in node.invoke(batch, runtime=Runtime())}
    return len(pools)


@lab.question(
    "q1",
    ask="invoke with config={'max_concurrency': 3} and six sync calls that each wait for the others. At most "
    "how many are in flight at once?",
    answers=None,
    kind=int,
    rule="Under invoke the pool is ContextThreadPoolExecutor(max_workers=config.get('max_concurrency')): "
    "three threads, so three calls at a time.",
    heading=FUNC,
)
def sync_limit_under_invoke() -> int:
    return _in_flight(6, "invoke", "sync", 3)


@lab.question(
    "q1",
    ask="ainvoke with config={'max_concurrency': 2} and five async calls that each wait for the others. At "
    "most how many are in flight at once?",
    answers=None,
    kind=int,
    rule="_afunc runs one coroutine per call under asyncio.gather, with no executor: max_concurrency, which "
    "only sizes the sync path's pool, limits nothing here.",
    heading=AFUNC,
)
def async_limit_under_ainvoke() -> int:
    return _in_flight(5, "ainvoke", "async", 2)


@lab.question(
    "q1",
    ask="ainvoke with config={'max_concurrency': 2} and four SYNC calls that each wait for the others. At "
    "most how many are in flight at once?",
    answers=None,
    kind=int,
    rule="_afunc has no pool of its own: each sync tool is awaited through its ainvoke, which hands it "
    "to the event loop's default executor — never sized by max_concurrency.",
    heading=AFUNC,
)
def sync_tools_under_ainvoke() -> int:
    return _in_flight(4, "ainvoke", "sync", 2)


# -- q2: payloads --------------------------------------------------------------------------------------
@tool
def echo(city: str) -> str:
    "Echo a city."
    return city


@lab.question(
    "q2",
    ask="Input: [AIMessage(calls c1), ToolMessage(answering c1), AIMessage(calls c2, c3)] to "
    "ToolNode([echo]).invoke. How many ToolMessages come back?",
    answers=None,
    kind=int,
    rule="_parse_input takes the calls of the LATEST AIMessage only; earlier turns are history.",
    heading=PARSE,
)
def calls_of_the_latest_message() -> int:
    messages = [
        _ai(_call("echo", "c1", city="Paris")),
        ToolMessage("Paris", tool_call_id="c1"),
        _ai(_call("echo", "c2", city="Rome"), _call("echo", "c3", city="Oslo")),
    ]
    return len(ToolNode([echo]).invoke(messages, runtime=Runtime()))


@lab.question(
    "q2",
    ask="Input: a plain list of two tool-call dicts, [ToolCall, ToolCall] (no message). What shape comes "
    "back?",
    answers=("a list", "a dict"),
    rule="A list whose last item is a tool-call dict has input type 'tool_calls', not 'list'; rule one "
    "returns the bare list only for 'list': anything else gets {'messages': [...]}.",
    heading=COMBINE,
)
def list_of_tool_calls_shape() -> str:
    out = ToolNode([echo]).invoke(
        [_call("echo", "c1", city="Paris"), _call("echo", "c2", city="Rome")], runtime=Runtime()
    )
    return "a list" if type(out) is list else "a dict"


@dataclasses.dataclass
class _Chat:
    messages: list


@lab.question(
    "q2",
    ask="Input: a dataclass instance whose `messages` field holds [HumanMessage, AIMessage(calls c1, c2)]. "
    "What shape comes back?",
    answers=("a list", "a dict"),
    rule="An object with a `messages` attribute has input type 'dict' (the same branch as a state dict): the "
    "answer is {'messages': [...]}.",
    heading=PARSE,
)
def state_object_shape() -> str:
    chat = _Chat(
        [HumanMessage("go"), _ai(_call("echo", "c1", city="Paris"), _call("echo", "c2", city="Rome"))]
    )
    out = ToolNode([echo]).invoke(chat, runtime=Runtime())
    return "a list" if type(out) is list else "a dict"


def _send_payload() -> dict:
    turn = _ai(*(_call("echo", f"c{n}", city=c) for n, c in enumerate(("Paris", "Rome", "Oslo"))))
    state = {"messages": [HumanMessage("go"), turn], "note": "from the payload"}
    return {"__type": "tool_call_with_context", "tool_call": turn.tool_calls[1], "state": state}


@lab.question(
    "q2",
    ask="A Send payload {'__type': 'tool_call_with_context', 'tool_call': <the second of three calls>, "
    "'state': <a state whose last AIMessage holds all three>}. How many ToolMessages come back?",
    answers=None,
    kind=int,
    rule="The tool_call_with_context branch returns [payload['tool_call']] at once: one call, whatever the "
    "state's messages hold.",
    heading=PARSE,
)
def send_payload_calls() -> int:
    out = ToolNode([echo]).invoke(_send_payload(), runtime=Runtime())
    return len(out["messages"])


@lab.question(
    "q2",
    ask="The same Send payload; its state also holds note='from the payload'. The tool returns "
    "runtime.state.get('note', 'no note'). What does it return?",
    answers=("from the payload", "no note"),
    rule="_extract_state gives a Send payload's call the payload's `state` (create_react_agent v2 relies on "
    "it): the call sees the state that was sent with it.",
    heading=PARSE,
)
def send_payload_state() -> str:
    @tool("echo")
    def note_of(city: str, runtime: ToolRuntime) -> str:
        "Report the state's note."
        return runtime.state.get("note", "no note")

    out = ToolNode([note_of]).invoke(_send_payload(), config=_CONFIG, runtime=Runtime())
    return out["messages"][0].content


@lab.question(
    "q2",
    ask="Three calls of one tool in one batch; each call keeps the ToolRuntime it received. How many "
    "different ToolRuntime objects are kept?",
    answers=None,
    kind=int,
    rule="_func builds one ToolRuntime per call (its own tool_call_id and config), before any call runs.",
    heading=FUNC,
)
def runtimes_per_batch() -> int:
    kept: list = []

    @tool
    def keep(city: str, runtime: ToolRuntime) -> str:
        "Keep the runtime."
        kept.append(runtime)
        return city

    batch = [_ai(*(_call("keep", f"k{n}", city="Paris") for n in range(3)))]
    ToolNode([keep]).invoke({"messages": batch}, config=_CONFIG, runtime=Runtime())
    return len({id(r) for r in kept})


# -- q3: injection -------------------------------------------------------------------------------------
@dataclasses.dataclass
class _Ctx:
    user: str


def _model_sees(tool_: Any) -> tuple:
    return tuple(convert_to_openai_tool(tool_)["function"]["parameters"].get("properties", {}))


@lab.question(
    "q3",
    ask="@tool def plan(city: str, ctx: ToolRuntime[Ctx], days: int = 2). Which parameters is the model "
    "offered, in order? (a tuple of names, e.g. ('a', 'b'))",
    answers=None,
    kind=tuple,
    rule="A ToolRuntime annotation hides its parameter from the model whatever its name; an ordinary "
    "parameter with a default is still offered.",
    heading=NAME_OR_ANNOTATION,
)
def model_sees_plan() -> tuple:
    @tool
    def plan(city: str, ctx: ToolRuntime[_Ctx], days: int = 2) -> str:
        "Plan a trip."
        return f"{days} days in {city}"

    return _model_sees(plan)


@lab.question(
    "q3",
    ask="@tool def wait_for(job: str, runtime: int = 5) — `runtime` meant as seconds. The model calls "
    "it with {'job': 'backup'} only. What does the model read back through ToolNode?",
    answers=("the job ran with runtime=5", "the job ran with a ToolRuntime", "an error ToolMessage"),
    rule="ToolNode injects the ToolRuntime into any parameter NAMED runtime, default or not; the int "
    "annotation refuses it, so the call is answered with an error (and one without a reason).",
    heading=NAME_OR_ANNOTATION,
)
def runtime_named_with_a_default() -> str:
    @tool
    def wait_for(job: str, runtime: int = 5) -> str:
        "Wait for a job; `runtime` is how many seconds."
        return f"{job} ran with {type(runtime).__name__}"

    reply = _one_tool_graph(wait_for).invoke({"messages": [_ai(_call("wait_for", "w1", job="backup"))]})
    message = reply["messages"][-1]
    if message.status == "error":
        return "an error ToolMessage"
    return (
        "the job ran with runtime=5" if message.content.endswith("int") else "the job ran with a ToolRuntime"
    )


@lab.question(
    "q3",
    ask="A tool with store: Annotated[BaseStore, InjectedStore()] returns type(store).__name__; the graph is "
    "compiled with an InMemoryStore, and the model sends {'store': 'my-store'} in the args. What does "
    "the tool return?",
    answers=("InMemoryStore", "str"),
    rule="_inject_tool_args strips every injected key from the model's arguments, then adds the trusted "
    "values: the graph's store.",
    heading=CAN_RECEIVE,
)
def forged_store() -> str:
    @tool
    def which_store(text: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
        "Report the store this call got."
        return type(store).__name__

    graph = _one_tool_graph(which_store, store=InMemoryStore())
    forged = _call("which_store", "s1", text="hi", store="my-store")
    return graph.invoke({"messages": [_ai(forged)]})["messages"][-1].content


class _QueryArgs(BaseModel):
    query: str


@lab.question(
    "q3",
    ask="@tool(args_schema=QueryArgs) — QueryArgs has only `query` — on def search(query: str, runtime: "
    "ToolRuntime), returning type(runtime).__name__. Run through ToolNode in a graph: what does the model "
    "read?",
    answers=("ToolRuntime", "an error ToolMessage"),
    rule="What ToolNode injects (state, store, runtime) reaches the tool even when a plain args_schema "
    "leaves it out: the injection is added to the call after the schema was read.",
    heading=SINGLE,
)
def runtime_outside_the_schema() -> str:
    @tool(args_schema=_QueryArgs)
    def search(query: str, runtime: ToolRuntime) -> str:
        "Search."
        return type(runtime).__name__

    message = _one_tool_graph(search).invoke({"messages": [_ai(_call("search", "q1", query="tea"))]})[
        "messages"
    ][-1]
    return "an error ToolMessage" if message.status == "error" else message.content


@lab.question(
    "q3",
    ask="The same schema on def tag(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) — the "
    "parameter named exactly tool_call_id this time — returning it, run through ToolNode in a graph. What "
    "happens?",
    answers=("it returns the call's id", "an error ToolMessage", "the run raises"),
    rule="langchain-core fills the call id into a field the args_schema declares, or into a parameter named "
    "exactly `tool_call_id`: this one gets it (a `call_id` the schema leaves out would not).",
    heading=SINGLE,
)
def tool_call_id_outside_the_schema() -> str:
    @tool(args_schema=_QueryArgs)
    def tag(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        "Tag a query with its call id."
        return tool_call_id

    try:
        message = _one_tool_graph(tag).invoke({"messages": [_ai(_call("tag", "t1", query="tea"))]})[
            "messages"
        ][-1]
    except TypeError:
        return "the run raises"
    if message.status == "error":
        return "an error ToolMessage"
    return "it returns the call's id" if message.content == "t1" else "an error ToolMessage"


@lab.question(
    "q3",
    ask="def note(text: str, user: Annotated[str, InjectedState('user')], limit: int = 3), in a graph whose "
    "state has user='ann'; the model sends {'text': 'hi', 'user': 'admin', 'limit': 1}. The tool returns "
    "f'{user}/{limit}'. What does it return?",
    answers=("ann/1", "admin/1", "ann/3", "admin/3"),
    rule="Only the injected key is replaced: `user` comes from the state (the model's value is stripped), "
    "while `limit`, an ordinary argument, keeps the model's value.",
    heading=FORGED,
)
def forged_state_field() -> str:
    class Notes(MessagesState):
        user: str

    @tool
    def note(text: str, user: Annotated[str, InjectedState("user")], limit: int = 3) -> str:
        "Save a note for the current user."
        return f"{user}/{limit}"

    forged = _call("note", "n1", text="hi", user="admin", limit=1)
    graph = _one_tool_graph(note, state=Notes)
    return graph.invoke({"messages": [_ai(forged)], "user": "ann"})["messages"][-1].content


q1 = lab.exercise(
    "q1",
    "BATCH",
    hints=(
        "Follow the source: `__init__` fills a dict by name; `_func` builds the runtimes, then a pool from "
        "`get_executor_for_config(config)`; `_afunc` replaces only the pool, with `asyncio.gather`.",
        "A dict keeps one tool per name; every runtime lists all the node's tools; a new pool per invoke, "
        "sized by max_concurrency; under ainvoke nothing of ToolNode's is sized by it, for async tools or "
        "for sync ones (each goes through its own ainvoke to the loop's executor).",
    ),
)
q2 = lab.exercise(
    "q2",
    "PAYLOADS",
    hints=(
        "Run each input through `_parse_input`'s four branches: which calls does it return, and which input "
        "type? Then `_combine_tool_outputs`: only the 'list' type gets a bare list back.",
        "Calls come from the latest AIMessage; a list ending in a tool-call dict is 'tool_calls'; an object "
        "with `.messages` is 'dict'; a Send payload runs its one call with the state it carries; one "
        "ToolRuntime is built per call.",
    ),
)
q3 = lab.exercise(
    "q3",
    "INJECTION",
    hints=(
        "Two questions each time: what does the model's schema show, and what does ToolNode (or "
        "langchain-core) write into the call's arguments before the tool runs?",
        "The ToolRuntime goes to a parameter annotated ToolRuntime OR named runtime; injected keys the "
        "model sends are stripped and replaced; ToolNode's injections ignore the args_schema, the call id "
        "does not.",
    ),
)

__all__ = ["lab", "q1", "q2", "q3"]
