"""Lab 04 — Predict the route (after `notebooks/04_tools_condition_loop.ipynb`).

A predict-and-check lab (`helpers.labs.predict.PredictionLab`): the learner writes one dict of
predictions per exercise, and each check runs every scenario live on the pinned libraries.

q1 (`ROUTES`): where `tools_condition` routes — or what it raises — for last messages and states the
    lesson does not show: text beside a tool call, only invalid tool calls, a streamed fragment, a
    state object, a conversation kept under another key, a tuple of messages.
q2 (`HOPS`): what lesson 04's loop does, counted: how often the tools node runs, how many updates a
    run streams, how many messages the state ends with, how many model turns stream, how many model
    turns a `recursion_limit` lets through.
q3 (`LIMITS`): which recursion limit a graph gets where it runs: in a chain, in a parent graph's node
    (invoked with and without a limit), in a tool under `ainvoke` or with a limit on the outer call,
    and how far a runaway loop gets inside a chain.

Each scenario builds its own graph from the lesson's parts (the scripted model, `ToolNode`,
`tools_condition`, the counting graph), runs in well under a second and returns a plain value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from helpers.labs.predict import PredictionLab
from helpers.models import ScriptedChatModel, tool_results_summary

LESSON = "04_tools_condition_loop"
CONDITION = "3. `tools_condition`: two answers, last message only"
HOPS_HEADING = "4. Watching the loop hop by hop"
NEVER_STOPS = "5. When the model never stops"
LOOP = "2. Building the loop"

ROUTED = ("tools", "__end__", "raises ValueError", "raises IndexError")
"""q1's allowed answers."""
ENDED = ("finishes", "GraphRecursionError")
"""q3's allowed answers (but its last question, a count)."""

lab = PredictionLab("04", LESSON)


# -- the scenarios' small parts ------------------------------------------------------------------------
@tool
def lookup_weather(city: str) -> str:
    """Look up today's weather for a city."""
    return f"{city}: sunny"


_WEATHER = {"name": "lookup_weather", "args": {"city": "Paris"}}
_ROME = {"name": "lookup_weather", "args": {"city": "Rome"}}
_TWO_ROUNDS = ([_WEATHER, _ROME], [_WEATHER], tool_results_summary)
"""Turn 0 asks for two calls, turn 1 for one more, turn 2 answers."""
_QUESTION = "What's the weather in Paris and Rome?"


def _route(state: Any) -> str:
    try:
        return tools_condition(state)
    except ValueError:
        return "raises ValueError"
    except IndexError:
        return "raises IndexError"


def _call(call_id: str = "c1") -> dict:
    return {"name": "lookup_weather", "args": {"city": "Paris"}, "id": call_id}


def _loop(script: list, counts: dict | None = None, route: Any = tools_condition) -> Any:
    """Lesson 04's loop: llm → tools_condition → tools → llm, the model's turns counted in `counts`."""
    model = ScriptedChatModel(script=list(script)).bind_tools([lookup_weather])
    counts = {} if counts is None else counts

    def llm(state: MessagesState) -> dict:
        counts["llm"] = counts.get("llm", 0) + 1
        return {"messages": [model.invoke(state["messages"])]}

    def tools(state: MessagesState) -> Any:
        counts["tools"] = counts.get("tools", 0) + 1
        return ToolNode([lookup_weather]).invoke(state)

    builder = StateGraph(MessagesState)
    builder.add_node("llm", llm)
    builder.add_node("tools", tools)
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", route)
    builder.add_edge("tools", "llm")
    return builder.compile()


def _ask() -> dict:
    return {"messages": [HumanMessage(_QUESTION)]}


class _Count(TypedDict):
    n: int


def _counter(to: int) -> Any:
    """Lesson 04's counting graph: one superstep per count, up to `to`."""
    builder = StateGraph(_Count)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda state: END if state["n"] >= to else "step")
    return builder.compile()


def _ended(run: Any) -> str:
    try:
        run()
    except GraphRecursionError:
        return "GraphRecursionError"
    return "finishes"


def _parent_of_counter(to: int) -> Any:
    """A one-node parent graph whose node invokes the counting graph."""
    inner = _counter(to)
    builder = StateGraph(_Count)
    builder.add_node("outer", lambda state: {"n": inner.invoke({"n": 0})["n"]})
    builder.add_edge(START, "outer")
    return builder.compile()


def _tool_graph() -> tuple[Any, dict]:
    """A ToolNode graph (START → tools) and a state holding one call to a tool that counts to 30."""
    thirty = _counter(30)

    @tool
    def count_to_thirty() -> int:
        """Count to thirty with the counting graph."""
        return thirty.invoke({"n": 0})["n"]

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([count_to_thirty]))
    builder.add_edge(START, "tools")
    calls = [{"name": "count_to_thirty", "args": {}, "id": "c1"}]
    return builder.compile(), {"messages": [AIMessage("", tool_calls=calls)]}


# -- q1: where tools_condition routes -------------------------------------------------------------------
@lab.question(
    "q1",
    ask="The last message is AIMessage('Let me check the weather first.', tool_calls=[one call]): text and "
    "a tool call together. Where does tools_condition route?",
    answers=ROUTED,
    rule="tools_condition looks only at whether the last message has tool calls; its text does not count.",
    heading=CONDITION,
)
def text_and_a_tool_call() -> str:
    return _route(
        {"messages": [HumanMessage("q"), AIMessage("Let me check the weather first.", tool_calls=[_call()])]}
    )


@lab.question(
    "q1",
    ask="The model's JSON arguments did not parse: the last AIMessage has one entry in invalid_tool_calls "
    "and none in tool_calls. Where does tools_condition route?",
    answers=ROUTED,
    rule="Only `tool_calls` counts: an AIMessage whose calls are all invalid has none, so the run ends "
    "(and ToolNode would have nothing to run).",
    heading=CONDITION,
)
def only_invalid_tool_calls() -> str:
    broken = {"name": "lookup_weather", "args": '{"city": Par', "id": "c1", "error": "bad JSON"}
    last = AIMessage("", invalid_tool_calls=[{**broken, "type": "invalid_tool_call"}])
    return _route({"messages": [HumanMessage("q"), last]})


@lab.question(
    "q1",
    ask="Called on a streamed chunk: the last message is the second AIMessageChunk of a tool call, whose "
    "fragment is '{\"' (no name, no id). Where does tools_condition route?",
    answers=ROUTED,
    rule="A chunk's tool_calls parses only its own fragment: the second chunk gives one call named '' with "
    "no id — a tool call all the same, so 'tools'. Route on the sum of the chunks, never on one.",
    heading=HOPS_HEADING,
)
def a_streamed_fragment() -> str:
    fragment = AIMessageChunk(
        content="", tool_call_chunks=[tool_call_chunk(name=None, args='{"', id=None, index=0)]
    )
    return _route({"messages": [HumanMessage("q"), fragment]})


@lab.question(
    "q1",
    ask="The state is a dataclass with a `messages` field (not a dict), its last message an AIMessage with "
    "one tool call. Where does tools_condition route?",
    answers=ROUTED,
    rule="tools_condition reads a list, a dict's 'messages' key, or else the state's `messages` attribute: a "
    "dataclass or pydantic state works like a dict.",
    heading=CONDITION,
)
def a_dataclass_state() -> str:
    @dataclass
    class Conversation:
        messages: list = field(default_factory=list)

    return _route(Conversation([HumanMessage("q"), AIMessage("", tool_calls=[_call()])]))


@lab.question(
    "q1",
    ask="A graph whose state keeps the conversation under 'history' (no 'messages' key), wired with "
    "add_conditional_edges('llm', tools_condition). The model asks for a tool. What happens at the route?",
    answers=ROUTED,
    rule="tools_condition reads state['messages'] by default: with no such key it finds no messages and "
    "raises ValueError at run time (compile passes). Pass messages_key='history' to it.",
    heading=CONDITION,
)
def a_history_key() -> str:
    class History(TypedDict):
        history: list

    model = ScriptedChatModel(script=[[_WEATHER], "done"]).bind_tools([lookup_weather])
    builder = StateGraph(History)
    builder.add_node("llm", lambda state: {"history": state["history"] + [model.invoke(state["history"])]})
    builder.add_node("tools", lambda state: {"history": state["history"]})
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    graph = builder.compile()
    try:
        return _route_of_run(graph.invoke({"history": [HumanMessage("q")]}))
    except ValueError:
        return "raises ValueError"
    except IndexError:
        return "raises IndexError"


def _route_of_run(final: dict) -> str:
    last = final["history"][-1]
    return "tools" if getattr(last, "tool_calls", None) else "__end__"


@lab.question(
    "q1",
    ask="tools_condition is given a tuple of messages, (HumanMessage, AIMessage with one tool call), "
    "instead of a list. Where does it route?",
    answers=ROUTED,
    rule="Only a list is read as the messages themselves; a tuple is neither a list nor a dict and has no "
    "`messages` attribute, so no messages are found: ValueError.",
    heading=CONDITION,
)
def a_tuple_of_messages() -> str:
    return _route((HumanMessage("q"), AIMessage("", tool_calls=[_call()])))


# -- q2: the loop, counted ------------------------------------------------------------------------------
_SCRIPT_TEXT = "The scripted model asks for two calls at once, then for one more, then answers."


@lab.question(
    "q2",
    ask=f"{_SCRIPT_TEXT} How many times does the `tools` node run?",
    answers=None,
    kind=int,
    rule="One tools step per model turn with tool calls, however many calls it holds: ToolNode runs a "
    "turn's calls together.",
    heading=LOOP,
)
def tools_node_runs() -> int:
    counts: dict = {}
    _loop(_TWO_ROUNDS, counts).invoke(_ask())
    return counts.get("tools", 0)


@lab.question(
    "q2",
    ask=f"{_SCRIPT_TEXT} How many items does stream_mode='updates' yield?",
    answers=None,
    kind=int,
    rule="One update per node that finished: llm, tools, llm, tools, llm.",
    heading=HOPS_HEADING,
)
def updates_streamed() -> int:
    return len(list(_loop(_TWO_ROUNDS).stream(_ask(), stream_mode="updates")))


@lab.question(
    "q2",
    ask=f"{_SCRIPT_TEXT} How many messages does the final state hold, the question included?",
    answers=None,
    kind=int,
    rule="The question, then each AIMessage and one ToolMessage per call: 1 + (1 + 2) + (1 + 1) + 1.",
    heading=LOOP,
)
def final_messages() -> int:
    return len(_loop(_TWO_ROUNDS).invoke(_ask())["messages"])


@lab.question(
    "q2",
    ask=f"{_SCRIPT_TEXT} Streamed with stream_mode='messages', how many distinct message ids do the "
    "AIMessageChunks carry?",
    answers=None,
    kind=int,
    rule="Every model turn is streamed as chunks of one message id; ToolMessages come whole. Three turns, "
    "three ids.",
    heading=HOPS_HEADING,
)
def streamed_model_turns() -> int:
    ids = {
        chunk.id
        for chunk, _ in _loop(_TWO_ROUNDS).stream(_ask(), stream_mode="messages")
        if isinstance(chunk, AIMessageChunk)
    }
    return len(ids)


@lab.question(
    "q2",
    ask="A model scripted to ask for the weather on every turn, run with {'recursion_limit': 7}. How many "
    "model turns run before GraphRecursionError?",
    answers=None,
    kind=int,
    rule="Each hop is a superstep and the limit counts them: llm, tools, llm, ... — 7 steps hold 4 model "
    "turns and 3 tool rounds (the lesson's 6 held 3 and 3).",
    heading=NEVER_STOPS,
)
def model_turns_at_limit_seven() -> int:
    counts: dict = {}
    try:
        _loop([[_WEATHER]] * 50, counts).invoke(_ask(), {"recursion_limit": 7})
    except GraphRecursionError:
        pass
    return counts.get("llm", 0)


@lab.question(
    "q2",
    ask="The same never-stopping model, routed by the lesson's at_most_three_rounds (END once the state "
    "holds more than three AIMessages, else tools_condition). How many ToolMessages does the final state "
    "hold?",
    answers=None,
    kind=int,
    rule="The route is asked after each model turn: after turns 1-3 it sends their calls to the tools; "
    "after the fourth it ends, leaving that turn's call unanswered — three ToolMessages.",
    heading=NEVER_STOPS,
)
def capped_tool_messages() -> int:
    def at_most_three_rounds(state: MessagesState) -> str:
        rounds = sum(isinstance(m, AIMessage) for m in state["messages"])
        return END if rounds > 3 else tools_condition(state)

    final = _loop([[_WEATHER]] * 50, route=at_most_three_rounds).invoke(_ask())
    return sum(isinstance(m, ToolMessage) for m in final["messages"])


# -- q3: which limit a graph gets -----------------------------------------------------------------------
@lab.question(
    "q3",
    ask="The counting graph counts to 20 (one superstep per count), run inside a chain: "
    "(RunnableLambda(lambda x: x) | graph).invoke({'n': 0}). What happens?",
    answers=ENDED,
    rule="Inside a chain the graph takes the chain's limit, langchain-core's 25: twenty steps fit.",
    heading=NEVER_STOPS,
)
def twenty_in_a_chain() -> str:
    return _ended(lambda: (RunnableLambda(lambda x: x) | _counter(20)).invoke({"n": 0}))


@lab.question(
    "q3",
    ask="A parent graph with one node that calls counting_graph.invoke(...) (counting to 30); the parent is "
    "invoked directly, with no config. What happens?",
    answers=ENDED,
    rule="A graph invoked in a node takes the limit of the run around it: the parent, invoked directly, "
    "has langgraph's 10007.",
    heading=NEVER_STOPS,
)
def thirty_in_a_node() -> str:
    return _ended(lambda: _parent_of_counter(30).invoke({"n": 0}))


@lab.question(
    "q3",
    ask="The same parent graph (its node counts to 30), invoked with {'recursion_limit': 10}. What happens?",
    answers=ENDED,
    rule="A limit passed to the outermost call reaches every graph inside it: the inner graph gets 10 too.",
    heading=NEVER_STOPS,
)
def thirty_in_a_node_limit_ten() -> str:
    return _ended(lambda: _parent_of_counter(30).invoke({"n": 0}, {"recursion_limit": 10}))


@lab.question(
    "q3",
    ask="The lesson's ToolNode graph whose tool counts to 30, run with await graph.ainvoke(...) instead of "
    "invoke. What happens?",
    answers=ENDED,
    rule="The tool's run gets langchain-core's 25 under ainvoke as under invoke: thirty steps do not fit.",
    heading=NEVER_STOPS,
)
async def thirty_in_a_tool_ainvoke() -> str:
    graph, state = _tool_graph()
    try:
        await graph.ainvoke(state)
    except GraphRecursionError:
        return "GraphRecursionError"
    return "finishes"


@lab.question(
    "q3",
    ask="The same ToolNode graph, invoked with {'recursion_limit': 40}. What happens?",
    answers=ENDED,
    rule="The outer call's limit reaches the tool, and the graph it invokes: forty steps hold thirty.",
    heading=NEVER_STOPS,
)
def thirty_in_a_tool_limit_forty() -> str:
    graph, state = _tool_graph()
    return _ended(lambda: graph.invoke(state, {"recursion_limit": 40}))


@lab.question(
    "q3",
    ask="Lesson 04's loop with the never-stopping model, run inside a chain (RunnableLambda | loop), with no "
    "config. How many model turns run before GraphRecursionError?",
    answers=None,
    kind=int,
    rule="In a chain the loop gets langchain-core's 25 supersteps: llm, tools, llm, ... 25 steps hold 13 "
    "model turns and 12 tool rounds.",
    heading=NEVER_STOPS,
)
def runaway_in_a_chain() -> int:
    counts: dict = {}
    try:
        (RunnableLambda(lambda x: x) | _loop([[_WEATHER]] * 50, counts)).invoke(_ask())
    except GraphRecursionError:
        pass
    return counts.get("llm", 0)


q1 = lab.exercise(
    "q1",
    "ROUTES",
    hints=(
        "tools_condition does two things: find the messages (a list, a dict's 'messages' key, or a "
        "`messages` attribute), then ask whether the LAST one has tool_calls.",
        "Text beside a call does not matter; invalid_tool_calls are not tool_calls; one chunk parses only "
        "its fragment (the second chunk still parses to a call named ''); a tuple is not a list; a missing "
        "'messages' key raises ValueError.",
    ),
)
q2 = lab.exercise(
    "q2",
    "HOPS",
    hints=(
        "Write the run out hop by hop — llm, tools, llm, ... — and count what each hop adds.",
        "One tools step per model turn with calls; one update per hop; one ToolMessage per call; one "
        "message id per streamed model turn. A recursion_limit of N lets N hops run, starting with llm.",
    ),
)
q3 = lab.exercise(
    "q3",
    "LIMITS",
    hints=(
        "Ask of each graph: what runs around it, and what limit does that pass down?",
        "Invoked directly: 10007. In a chain, a tool of a ToolNode graph, or batch: langchain-core's 25, "
        "under invoke and ainvoke. In a node of a graph: the parent run's limit. A limit on the outermost "
        "call reaches every graph inside.",
    ),
)

__all__ = ["ENDED", "ROUTED", "lab", "q1", "q2", "q3"]
