"""Lab 10 — Predict MCP results (after `notebooks/10_mcp_tools.ipynb`).

q1: `NODE`: five predictions from the core path — an MCP tool under `graph.invoke` with a catch-all
    policy, a local sync tool beside an MCP tool under `ainvoke`, the content type of an MCP answer,
    a server-side exception under every default, and a `ToolNode` policy keyed on the server's
    exception type.
q2: `RESULTS`: five predictions from deep dive 6's conversion rule — a plain call of a result with no
    content items, an interceptor that clears or sets `isError`, an interceptor that answers with its
    own `ToolMessage`, and a JSON-RPC error under a catch-all `ToolNode`.

Both are predict-and-check exercises (`helpers.labs.predict`): every scenario runs live on every
check, against the course's servers (`helpers.mcp_server`) carried in this process
(`helpers.mcp_client.in_process_tools`, no subprocess), and a wrong prediction is shown beside what
the run gave, the rule and the section.
"""

from __future__ import annotations

import asyncio

import langchain_mcp_adapters.tools  # noqa: F401 - loaded with the lab, so that no scenario waits for it
import mcp.server.fastmcp  # noqa: F401 - the same, for the servers
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from mcp import McpError

from helpers import mcp_server
from helpers.labs.predict import PredictionLab
from helpers.mcp_client import in_process_tools
from helpers.models import ScriptedChatModel, tool_results_summary

LESSON = "10_mcp_tools"
_lab = PredictionLab("10", LESSON)
_IN_TOOLNODE = "2. MCP tools in ToolNode"
_LOOP = "3. The llm → tools → llm loop"
_SERVER_ERRORS = "4.1 Server-side errors"
_RULE = "6.1 The conversion rule"
_NO_SETTING = "6.3 Errors: returned, raised, and the ones no setting catches"
_GUIDE = mcp_server.SERVER_NAME
_RESULTS = mcp_server.RESULTS_SERVER_NAME
_LOWLEVEL = mcp_server.LOWLEVEL_SERVER_NAME
_CALL_ID = "q"
_SERVER_TEXT = "server text"
_TOOLNODE_TEXT = "toolnode text"


# -- the scenarios' small parts ------------------------------------------------------------------------
def _calling(name: str, **args) -> dict:
    """The input of a ToolNode run outside a graph: one AIMessage with one call, id 'q'."""
    call = {"name": name, "args": args, "id": _CALL_ID, "type": "tool_call"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


async def _one_answer(tools, name: str, **options) -> ToolMessage:
    """ToolNode(tools, **options) runs one call of `name` for Paris (or order 42); its ToolMessage."""
    args = {"order_id": 42} if name in ("find_order", "cancel_order") else {"city": "Paris"}
    output = await ToolNode(tools, **options).ainvoke(_calling(name, **args), runtime=Runtime())
    return output["messages"][0]


def _loop(tools, model, **options):
    """Section 3's graph: llm → tools_condition → ToolNode(tools, **options) → llm."""
    llm = model.bind_tools(tools)

    def call_llm(state: MessagesState):
        return {"messages": [llm.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", call_llm)
    builder.add_node("tools", ToolNode(tools, **options))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    return builder.compile()


def _whose_text(message: ToolMessage) -> str:
    """Which layer wrote an error ToolMessage: FastMCP on the server, or ToolNode's policy."""
    text, failed = message.text, message.status == "error"
    if failed and text.startswith("Error executing tool "):
        return _SERVER_TEXT
    if failed and text.startswith("Error: ") and text.endswith("Please fix your mistakes."):
        return _TOOLNODE_TEXT
    return f"{message.status}: {text[:60]}"


@tool
def _lookup_hotel(city: str) -> str:
    """Find a hotel in a city."""
    return f"{city}: Hôtel du Louvre"


_lookup_hotel.name = "lookup_hotel"


async def _clear_error(request, handler):
    """An adapter interceptor: the server's result, marked as no error."""
    result = await handler(request)
    result.isError = False
    return result


async def _mark_error(request, handler):
    """An adapter interceptor: the server's result, marked as an error."""
    result = await handler(request)
    result.isError = True
    return result


async def _from_cache(request, handler):
    """An adapter interceptor that answers without calling the server, with a ToolMessage of its own."""
    return ToolMessage("from the cache", tool_call_id="cache-1")


# -- q1: MCP tools in ToolNode (the core path) -------------------------------------------------------------
@_lab.question(
    "q1",
    ask="Section 3's graph with city-guide's MCP tools, but ToolNode(tools, handle_tool_errors=True), run "
    "with graph.invoke. The model calls lookup_weather and lookup_attraction, then answers with what it "
    "read. How does the run go?",
    answers=("raises NotImplementedError", "ends, both answers error", "ends, both answers success"),
    rule="graph.invoke runs ToolNode's sync path, which calls tool.invoke; an MCP tool has a coroutine and "
    "no func, so every call raises NotImplementedError. A catch-all policy turns each into an error "
    "ToolMessage: the run ends, and no tool ever ran.",
    heading=_LOOP,
)
async def invoke_with_catch_all():
    script = [[{"name": "lookup_weather", "args": {"city": "Paris"}},
               {"name": "lookup_attraction", "args": {"city": "Paris"}}], tool_results_summary]
    async with in_process_tools(server=_GUIDE) as tools:
        graph = _loop(tools, ScriptedChatModel(script=script), handle_tool_errors=True)
        try:
            result = await asyncio.to_thread(graph.invoke, {"messages": [HumanMessage("Paris today?")]})
        except NotImplementedError:
            return "raises NotImplementedError"
    statuses = {message.status for message in result["messages"] if message.type == "tool"}
    return f"ends, both answers {statuses.pop()}" if len(statuses) == 1 else f"ends with {sorted(statuses)}"


@_lab.question(
    "q1",
    ask="One ToolNode holds city-guide's MCP tools and a local sync @tool lookup_hotel (a plain def). "
    "ToolNode.ainvoke gets one call of each: lookup_weather and lookup_hotel. What comes back?",
    answers=("both success", "lookup_hotel error, lookup_weather success",
             "lookup_hotel success, lookup_weather error", "raises NotImplementedError"),
    rule="The sync / async adaptation works one way: under ainvoke a sync tool runs in a thread, and an "
    "async-only MCP tool runs its coroutine. Only invoke fails, and only for the async-only tool.",
    heading=_LOOP,
)
async def mixed_batch_under_ainvoke():
    calls = AIMessage("", tool_calls=[
        {"name": "lookup_weather", "args": {"city": "Paris"}, "id": "w", "type": "tool_call"},
        {"name": "lookup_hotel", "args": {"city": "Paris"}, "id": "h", "type": "tool_call"},
    ])
    async with in_process_tools(server=_GUIDE) as tools:
        try:
            output = await ToolNode([*tools, _lookup_hotel]).ainvoke({"messages": [calls]}, runtime=Runtime())
        except NotImplementedError:
            return "raises NotImplementedError"
    status = {message.name: message.status for message in output["messages"]}
    if status["lookup_hotel"] == status["lookup_weather"]:
        return f"both {status['lookup_hotel']}"
    return f"lookup_hotel {status['lookup_hotel']}, lookup_weather {status['lookup_weather']}"


@_lab.question(
    "q1",
    ask="city-guide's server_pid is `def server_pid() -> int` on the server. ToolNode.ainvoke runs one "
    "call of it. What is type(message.content).__name__ of its ToolMessage?",
    answers=("int", "str", "list"),
    rule="The adapter turns every MCP content item into a content block, so an MCP answer's content is a "
    "list of blocks (one text block here), whatever the server function returned; the int is in the "
    "artifact, as {'result': ...}.",
    heading=_IN_TOOLNODE,
)
async def server_pid_content():
    async with in_process_tools(server=_GUIDE) as tools:
        message = await _one_answer(tools, "server_pid")
    return type(message.content).__name__


@_lab.question(
    "q1",
    ask="ToolNode(tools) with city-guide's tools, every default (the adapter's and ToolNode's), runs "
    "lookup_traffic, which raises ConnectionError on the server. What comes back? 'server text' = an "
    "error ToolMessage reading 'Error executing tool lookup_traffic: …'; 'toolnode text' = an error "
    "ToolMessage reading 'Error: …  Please fix your mistakes.'",
    answers=(_SERVER_TEXT, _TOOLNODE_TEXT, "raises ConnectionError", "raises a ToolException"),
    rule="The server sends the exception as an isError result with FastMCP's text; the adapter's own "
    "handler (handle_tool_errors=True, its default) answers it with an error ToolMessage, so no "
    "exception ever reaches ToolNode's policy.",
    heading=_SERVER_ERRORS,
)
async def traffic_with_every_default():
    async with in_process_tools(server=_GUIDE) as tools:
        try:
            return _whose_text(await _one_answer(tools, "lookup_traffic"))
        except ConnectionError:
            return "raises ConnectionError"
        except ToolException:
            return "raises a ToolException"


@_lab.question(
    "q1",
    ask="The adapter's handling off (handle_tool_errors=False), and ToolNode(tools, "
    "handle_tool_errors=(ConnectionError,)). lookup_traffic raises ConnectionError on the server. What "
    "happens?",
    answers=("an error ToolMessage", "raises ConnectionError", "raises _MCPToolExecutionError"),
    rule="Only the exception's text crosses the wire: the client never sees a ConnectionError. With its "
    "handling off the adapter raises _MCPToolExecutionError (a ToolException), which a policy for "
    "ConnectionError does not catch.",
    heading=_SERVER_ERRORS,
)
async def catch_connection_error():
    async with in_process_tools(server=_GUIDE, handle_tool_errors=False) as tools:
        try:
            message = await _one_answer(tools, "lookup_traffic", handle_tool_errors=(ConnectionError,))
        except ConnectionError:
            return "raises ConnectionError"
        except ToolException as error:
            return f"raises {type(error).__name__}"
    return "an error ToolMessage" if message.status == "error" else f"a {message.status!r} ToolMessage"


# -- q2: the conversion rule (deep dive 6) -------------------------------------------------------------
@_lab.question(
    "q2",
    ask="city-results' weather_data_only answers with no content items and the record as structured "
    "content. What does `await weather_data_only.ainvoke({'city': 'Paris'})` (plain arguments) return?",
    answers=("an empty list", "the record as a dict", "a (content, artifact) tuple", "None"),
    rule="A content_and_artifact tool called with plain arguments returns the content alone; the content "
    "has one block per MCP content item, none here. The record is only in the artifact, which a plain "
    "call drops.",
    heading=_RULE,
)
async def data_only_plain_call():
    async with in_process_tools(server=_RESULTS) as tools:
        answer = await next(t for t in tools if t.name == "weather_data_only").ainvoke({"city": "Paris"})
    if type(answer) is list and not answer:
        return "an empty list"
    if type(answer) is tuple:
        return "a (content, artifact) tuple"
    if type(answer) is dict:
        return "the record as a dict"
    return "None" if answer is None else repr(answer)


@_lab.question(
    "q2",
    ask="An adapter interceptor (tool_interceptors=, section 6.5) sets result.isError = False on "
    "city-results' find_order result (isError=True, text 'no order 42', structured content). "
    "ToolNode runs find_order: its ToolMessage?",
    answers=("success, with an artifact", "success, no artifact",
             "error, with an artifact", "error, no artifact"),
    rule="The interceptor sees MCP's result before the conversion. With isError False, rule 2 does not "
    "raise, so rule 3 reads the structured content: a success with {'structured_content': ...} as its "
    "artifact.",
    heading=_RULE,
)
async def cleared_error():
    async with in_process_tools(server=_RESULTS, tool_interceptors=[_clear_error]) as tools:
        message = await _one_answer(tools, "find_order")
    return f"{message.status}, {'with an' if message.artifact is not None else 'no'} artifact"


@_lab.question(
    "q2",
    ask="An adapter interceptor sets result.isError = True on city-results' city_map result (one image "
    "item, no text). ToolNode runs city_map; its ToolMessage has status 'error'. What is its content?",
    answers=("one image block", "one text block", "an empty list"),
    rule="Rule 1 makes the blocks first; rule 2 raises with them, and the adapter's handler answers with "
    "the blocks themselves, an image kept as an image. A placeholder text is only for an error with no "
    "content at all.",
    heading=_RULE,
)
async def image_as_error():
    async with in_process_tools(server=_RESULTS, tool_interceptors=[_mark_error]) as tools:
        message = await _one_answer(tools, "city_map")
    if message.status != "error" or type(message.content) is not list:
        return f"{message.status}: {message.content!r:.60}"
    if not message.content:
        return "an empty list"
    kinds = [block.get("type") for block in message.content]
    return f"one {kinds[0]} block" if len(kinds) == 1 else f"blocks {kinds}"


@_lab.question(
    "q2",
    ask="An adapter interceptor answers every call without calling the server: "
    "`return ToolMessage('from the cache', tool_call_id='cache-1')`. ToolNode runs temperature with "
    "call id 'q'. Its ToolMessage's tool_call_id, and is its content a str or a list (e.g. 'q, a list')?",
    answers=("q, a list", "q, a str", "cache-1, a list", "cache-1, a str"),
    rule="An interceptor's own ToolMessage skips the conversion rule: no blocks are made, and it passes "
    "through as it is, keeping its own tool_call_id (copy request.runtime.tool_call_id into it, or the "
    "call stays unanswered).",
    heading=_RULE,
)
async def interceptor_own_message():
    async with in_process_tools(server=_RESULTS, tool_interceptors=[_from_cache]) as tools:
        message = await _one_answer(tools, "temperature")
    return f"{message.tool_call_id}, a {type(message.content).__name__}"


@_lab.question(
    "q2",
    ask="city-lowlevel's book_table raises UrlElicitationRequiredError on the server. The adapter's "
    "defaults, and ToolNode(tools, handle_tool_errors=True). What comes back? 'server text' = an error "
    "ToolMessage with the server's own message; 'toolnode text' = one reading 'Error: McpError(…)  "
    "Please fix your mistakes.'",
    answers=(_SERVER_TEXT, _TOOLNODE_TEXT, "raises McpError"),
    rule="The server answers with a JSON-RPC error, not a result, and the session raises McpError: no "
    "ToolException, so the adapter's handler never sees it. A catch-all ToolNode policy catches any "
    "exception and writes its own text (handing the model a step only the user can take).",
    heading=_NO_SETTING,
)
async def elicitation_with_catch_all():
    async with in_process_tools(server=_LOWLEVEL) as tools:
        try:
            message = await _one_answer(tools, "book_table", handle_tool_errors=True)
        except McpError:
            return "raises McpError"
    if message.status == "error" and not message.text.startswith("Error: "):
        return _SERVER_TEXT
    return _whose_text(message)


q1 = _lab.exercise(
    "q1",
    "NODE",
    hints=(
        "Two questions for each case: which path runs the tool (invoke calls tool.invoke, ainvoke "
        "awaits tool.ainvoke), and which layer sees an error first — the server, the adapter's tool, or "
        "ToolNode's policy.",
        "Lesson 10 sections 2–4: MCP tools are async-only; an MCP answer is a list of blocks; the server "
        "sends only an exception's text, the adapter's default handler answers an isError result itself, "
        "and with it off the adapter raises _MCPToolExecutionError.",
    ),
)
q2 = _lab.exercise(
    "q2",
    "RESULTS",
    hints=(
        "Apply deep dive 6.1's three rules in order — blocks for every item, then an error raises, then "
        "the artifact — and ask what an interceptor changed before them, or whether it skipped them.",
        "A plain call returns the content alone; an error's handler answers with its blocks; an "
        "interceptor's own ToolMessage passes through as written; McpError is no ToolException "
        "(section 6.3).",
    ),
)


def show(key: str) -> None:
    """Print exercise `key`'s questions (`"q1"` or `"q2"`), numbered, with their allowed answers."""
    _lab.show(key)


__all__ = ["q1", "q2", "show"]
