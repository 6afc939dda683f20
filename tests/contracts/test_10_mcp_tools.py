"""Library behaviour taught in notebooks/10_mcp_tools.ipynb: a real stdio MCP server (FastMCP),
loaded with langchain-mcp-adapters and run by ToolNode; and (deep dive 6) every shape of MCP result,
what the adapter makes of it and what ChatOpenAI sends the model.

Most tests read one shared recording: a single server session in which every scenario ran once
(`observed`), so the module starts a handful of server processes instead of one per test.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import re
import subprocess
import sys
import tempfile
import textwrap
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, convert_to_openai_messages
from langchain_core.tools import StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters import sessions
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from helpers import mcp_server
from helpers.graphs import tool_loop
from helpers.mcp_client import mcp_tools, open_session, process_running, server_connection, server_parameters
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.timing import CallRecorder
from helpers.tools import make_city_tools

lesson = pytest.mark.lesson("10_mcp_tools")

LC_ID = re.compile(r"lc_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
SIX = [(name, city) for city in ("Paris", "London", "Tokyo")
       for name in ("lookup_weather", "lookup_attraction")]
SCRIPT = [[{"name": "lookup_weather", "args": {"city": "Paris"}},
           {"name": "lookup_attraction", "args": {"city": "Paris"}}],
          tool_results_summary]
QUESTION = {"messages": [HumanMessage("What's the weather in Paris today, and what should I see there?")]}


def calls(*specs: tuple[str, dict]) -> dict:
    return {"messages": [AIMessage("", tool_calls=[
        {"name": name, "args": args, "id": f"call_{i}", "type": "tool_call"}
        for i, (name, args) in enumerate(specs)
    ])]}


TRAFFIC = calls(("lookup_traffic", {"city": "Paris"}))
NO_CITY = calls(("lookup_weather", {}))


def build_graph(tools, model):
    """Seed 004's graph: a sync llm node, ToolNode, tools_condition."""
    return tool_loop(model.bind_tools(tools), tools)


async def pid_of(tools) -> int:
    tool = next(t for t in tools if t.name == "server_pid")
    return int((await tool.ainvoke({}))[0]["text"])


async def outcome(awaitable):
    """The result, or the exception it raised (so one scenario cannot hide the others)."""
    try:
        return await awaitable
    except Exception as exc:  # noqa: BLE001 - recorded for the tests to inspect
        return exc


def outcome_sync(function, *args, **kwargs):
    """The same for a sync call."""
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - recorded for the tests to inspect
        return exc


@pytest.fixture(scope="module")
def observed() -> dict:
    """Run every single-session scenario once, in one server session, and record what happened."""

    async def scenario() -> dict:
        seen: dict = {}
        async with open_session() as session:
            tools = await load_mcp_tools(session)
            raising = await load_mcp_tools(session, handle_tool_errors=False)
            runtime = Runtime()
            seen["tools"] = tools
            seen["pid"] = await pid_of(tools)
            seen["running_inside"] = process_running(seen["pid"])
            seen["six"] = await ToolNode(tools).ainvoke(calls(*[(n, {"city": c}) for n, c in SIX]),
                                                         runtime=runtime)
            # The same six calls again, each recorded from the moment ToolNode hands it to the tool
            # until the server's answer is back: overlap is read from the spans, not the clock.
            recorder = CallRecorder()

            async def record(request, execute):
                with recorder.span(f"{request.tool_call['name']}({request.tool_call['args']['city']})"):
                    return await execute(request)

            await ToolNode(tools, awrap_tool_call=record).ainvoke(
                calls(*[(n, {"city": c}) for n, c in SIX]), runtime=runtime)
            seen["six_recorder"] = recorder
            seen["again"] = await ToolNode(tools).ainvoke(calls(("lookup_weather", {"city": "Paris"})),
                                                          runtime=runtime)
            seen["sync"] = await asyncio.to_thread(
                outcome_sync, ToolNode(tools).invoke, TRAFFIC, runtime=runtime)
            seen["loop"] = await build_graph(tools, ScriptedChatModel(script=SCRIPT)).ainvoke(QUESTION)
            seen["loop_sync"] = await asyncio.to_thread(
                outcome_sync, build_graph(tools, ScriptedChatModel(script=SCRIPT)).invoke, QUESTION)
            strict = ToolNode(tools, handle_tool_errors=False)
            seen["traffic"] = await strict.ainvoke(TRAFFIC, runtime=runtime)
            seen["no_city"] = await strict.ainvoke(NO_CITY, runtime=runtime)
            seen["raising_default"] = await outcome(ToolNode(raising).ainvoke(TRAFFIC, runtime=runtime))
            seen["raising_caught"] = await ToolNode(raising, handle_tool_errors=True).ainvoke(
                TRAFFIC, runtime=runtime)
        seen["local"] = await ToolNode(make_city_tools(delay=0.01)).ainvoke(
            calls(("lookup_weather", {"city": "Paris"})), runtime=Runtime())
        seen["closed"] = await outcome(ToolNode(tools).ainvoke(calls(("lookup_weather", {"city": "Paris"})),
                                                               runtime=Runtime()))
        seen["closed_caught"] = await ToolNode(tools, handle_tool_errors=True).ainvoke(
            calls(("lookup_weather", {"city": "Paris"})), runtime=Runtime())
        seen["running_after"] = process_running(seen["pid"])
        return seen

    return asyncio.run(scenario())


# -- the server ---------------------------------------------------------------------------------
@lesson
def test_fastmcp_derives_tool_names_descriptions_and_schemas_from_the_functions():
    listed = asyncio.run(mcp_server.build_server().list_tools())
    assert [t.name for t in listed] == ["lookup_weather", "lookup_attraction", "lookup_traffic", "server_pid"]
    weather = listed[0]
    assert weather.description == "Look up today's weather for a city, e.g. Paris."
    assert weather.inputSchema["properties"] == {"city": {"title": "City", "type": "string"}}
    assert weather.inputSchema["required"] == ["city"]


@lesson
def test_stdio_client_needs_an_errlog_with_a_file_descriptor():
    async def start_with_string_errlog():
        async with stdio_client(server_parameters(), errlog=io.StringIO()):
            pass

    with pytest.raises(io.UnsupportedOperation, match="fileno"):
        asyncio.run(start_with_string_errlog())


@lesson
def test_an_error_inside_a_raw_stdio_session_comes_out_wrapped_in_exception_groups():
    async def fail_inside_a_session():
        with tempfile.TemporaryFile("w+") as errlog:
            async with (
                stdio_client(server_parameters(), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                raise KeyError("inside")

    with pytest.raises(BaseExceptionGroup) as caught:
        asyncio.run(fail_inside_a_session())
    error = caught.value
    while isinstance(error, BaseExceptionGroup):
        (error,) = error.exceptions
    assert isinstance(error, KeyError)


@lesson
def test_the_adapter_opens_stdio_sessions_without_an_errlog():
    source = inspect.getsource(sessions._create_stdio_session)
    calls = [line.strip() for line in source.splitlines() if "stdio_client(" in line]
    assert calls == ["stdio_client(server_params) as (read, write),"]


@lesson
def test_toolnode_runs_an_mcp_tool_and_the_server_is_gone_afterwards(observed):
    assert observed["running_inside"] is True
    assert observed["six"]["messages"][0].text == "Paris: sunny, 25 °C"
    assert observed["running_after"] is False


# -- the tools ----------------------------------------------------------------------------------
@lesson
def test_mcp_tools_are_async_only_structured_tools(observed):
    tools = observed["tools"]
    assert all(isinstance(t, StructuredTool) for t in tools)
    assert all(t.func is None and t.coroutine is not None for t in tools)


@lesson
def test_the_adapter_gives_a_plain_json_schema_as_args_schema(observed):
    weather = observed["tools"][0]
    assert isinstance(weather.args_schema, dict)
    assert weather.args_schema["required"] == ["city"]


@lesson
def test_sync_toolnode_invoke_of_an_mcp_tool_raises_not_implemented(observed):
    error = observed["sync"]
    assert isinstance(error, NotImplementedError)
    assert str(error) == "StructuredTool does not support sync invocation."


@lesson
def test_the_model_sees_an_mcp_tool_exactly_like_the_local_tool(observed):
    local = {t.name: t for t in make_city_tools()}
    for tool in observed["tools"][:2]:
        assert convert_to_openai_tool(tool) == convert_to_openai_tool(local[tool.name])


@lesson
def test_toolnode_ainvoke_answers_each_mcp_call_in_order(observed):
    assert [m.text for m in observed["six"]["messages"]] == [
        "Paris: sunny, 25 °C", "Paris: the Louvre", "London: cloudy, 18 °C", "London: the Tower of London",
        "Tokyo: light rain, 21 °C", "Tokyo: Senso-ji"]


@lesson
@pytest.mark.timing
def test_toolnode_ainvoke_runs_mcp_calls_concurrently_over_one_session(observed):
    # Every call was sent before the first answer came back: all six in flight at once, over one
    # session. Read from the recorded spans, so a stall of the machine cannot decide it.
    recorder = observed["six_recorder"]
    assert len(recorder.calls) == len(SIX)
    assert recorder.max_in_flight() == len(SIX)


# -- content blocks -----------------------------------------------------------------------------
@lesson
def test_mcp_content_is_a_list_of_text_blocks_with_random_lc_ids(observed):
    first = observed["six"]["messages"][0]
    again = observed["again"]["messages"][0]
    (block,) = first.content
    assert set(block) == {"type", "text", "id"} and block["type"] == "text"
    assert LC_ID.fullmatch(block["id"]) and LC_ID.fullmatch(again.content[0]["id"])
    assert block["id"] != again.content[0]["id"]


@lesson
def test_fastmcp_structured_output_arrives_as_the_artifact(observed):
    first = observed["six"]["messages"][0]
    assert first.artifact == {"structured_content": {"result": "Paris: sunny, 25 °C"}}


@lesson
def test_openai_format_of_an_mcp_tool_message_is_plain_text(observed):
    converted = convert_to_openai_messages(observed["six"]["messages"][0])
    assert converted == {"role": "tool", "name": "lookup_weather", "tool_call_id": "call_0",
                         "content": "Paris: sunny, 25 °C"}


def _sent_by_chatopenai(answer) -> dict:
    """The tool message the real ChatOpenAI client puts on the wire for `answer` (local endpoint)."""
    from langchain_openai import ChatOpenAI

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    call = AIMessage("", tool_calls=[{"name": "lookup_weather", "args": {"city": "Paris"}, "id": "call_0",
                                      "type": "tool_call"}])
    script = [[{"name": "lookup_weather", "args": {"city": "Paris"}}], "done"]
    with ScriptedOpenAIEndpoint(script) as endpoint:
        llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                         use_responses_api=False)
        llm.invoke([HumanMessage("Weather in Paris?"), call, answer])
    return endpoint.requests[0]["messages"][-1]


@lesson
def test_chatopenai_sends_an_mcp_tool_message_as_a_list_of_text_blocks_without_ids_or_artifact(observed):
    blocks = [{"type": "text", "text": "Paris: sunny, 25 °C"}]
    assert _sent_by_chatopenai(observed["six"]["messages"][0]) == {
        "role": "tool", "tool_call_id": "call_0", "content": blocks}


@lesson
def test_chatopenai_sends_a_local_tool_message_as_a_string(observed):
    local = observed["local"]["messages"][0]
    assert _sent_by_chatopenai(local) == {
        "role": "tool", "tool_call_id": "call_0", "content": "Paris: sunny, 25 °C"}


# -- the loop -----------------------------------------------------------------------------------
@lesson
def test_the_seed_graph_with_mcp_tools_answers_under_ainvoke(observed):
    assert observed["loop"]["messages"][-1].content == "Paris: sunny, 25 °C; Paris: the Louvre"


@lesson
def test_the_seed_graph_with_mcp_tools_fails_under_invoke(observed):
    error = observed["loop_sync"]
    assert isinstance(error, NotImplementedError)
    assert str(error) == "StructuredTool does not support sync invocation."


# -- server-side errors -------------------------------------------------------------------------
@lesson
def test_a_server_side_exception_arrives_as_an_error_message_made_by_the_adapter(observed):
    (message,) = observed["traffic"]["messages"]  # ToolNode(handle_tool_errors=False)
    assert message.status == "error"
    assert message.text == "Error executing tool lookup_traffic: traffic service unreachable for Paris"


@lesson
def test_missing_arguments_are_rejected_by_the_server_not_by_langchain(observed):
    (message,) = observed["no_city"]["messages"]  # ToolNode(handle_tool_errors=False)
    assert message.status == "error"
    assert message.text.startswith(
        "Error executing tool lookup_weather: 1 validation error for lookup_weatherArguments\ncity\n"
        "  Field required")


@lesson
def test_adapter_errors_off_and_the_default_toolnode_policy_raise(observed):
    error = observed["raising_default"]
    assert isinstance(error, ToolException)
    assert type(error).__name__ == "_MCPToolExecutionError"
    assert str(error) == "Error executing tool lookup_traffic: traffic service unreachable for Paris"


@lesson
def test_adapter_errors_off_and_toolnode_true_wraps_the_exception(observed):
    (message,) = observed["raising_caught"]["messages"]
    assert message.status == "error"
    assert message.content == (
        "Error: _MCPToolExecutionError('Error executing tool lookup_traffic: traffic service "
        "unreachable for Paris')\n Please fix your mistakes.")


# -- session cost -------------------------------------------------------------------------------
@lesson
def test_get_tools_starts_a_new_server_process_for_every_call():
    async def scenario():
        client = MultiServerMCPClient({mcp_server.SERVER_NAME: server_connection()})
        tools = await client.get_tools()
        return [await pid_of(tools) for _ in range(2)]

    pids = asyncio.run(scenario())
    assert pids[0] != pids[1]
    assert not any(process_running(pid) for pid in pids)


@lesson
def test_one_adapter_session_serves_every_call_from_one_process():
    async def scenario():
        client = MultiServerMCPClient({mcp_server.SERVER_NAME: server_connection()})
        async with client.session(mcp_server.SERVER_NAME) as session:
            tools = await load_mcp_tools(session)
            return [await pid_of(tools) for _ in range(3)]

    pids = asyncio.run(scenario())
    assert len(set(pids)) == 1
    assert not process_running(pids[0])


@lesson
def test_get_tools_documents_a_new_session_per_call():
    assert "A new session will be created for each tool call" in MultiServerMCPClient.get_tools.__doc__


# -- tools after their session, the adapter's defaults, the adapter's own client -------------------
@lesson
def test_a_tool_used_after_its_session_closed_raises_closed_resource_error(observed):
    import anyio

    assert isinstance(observed["closed"], anyio.ClosedResourceError)


@lesson
def test_a_closed_session_error_becomes_an_unfixable_message_under_a_catching_policy(observed):
    (message,) = observed["closed_caught"]["messages"]
    assert message.status == "error"
    assert message.content == "Error: ClosedResourceError()\n Please fix your mistakes."


@lesson
def test_the_adapter_handles_tool_errors_by_default():
    signature = inspect.signature(load_mcp_tools)
    assert signature.parameters["handle_tool_errors"].default is True


def _run_script(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@lesson
def test_stdio_client_takes_its_default_errlog_from_sys_stderr_at_import_time():
    # Imported while sys.stderr is the process's own; swapped for an in-memory stream afterwards, the
    # default is still the original one, and a server starts with it.
    assert _run_script("""
        import asyncio, io, sys
        from mcp.client.stdio import stdio_client
        import inspect
        from helpers.mcp_client import server_parameters

        default = inspect.signature(stdio_client).parameters["errlog"].default
        sys.stderr = io.StringIO()

        async def main():
            async with stdio_client(server_parameters()):
                return "started"

        outcome = asyncio.run(main())
        sys.stderr = sys.__stderr__
        print(default is sys.__stderr__, outcome)
    """) == "True started"


@lesson
def test_redirecting_sys_stderr_does_not_change_stdio_clients_default_errlog():
    import contextlib

    default = inspect.signature(stdio_client).parameters["errlog"].default
    with tempfile.TemporaryFile("w+") as real_file, contextlib.redirect_stderr(real_file):
        assert sys.stderr is real_file
        assert default is not sys.stderr


@lesson
def test_with_no_descriptor_at_import_a_later_redirect_to_a_real_file_still_fails_with_fileno():
    # The case of a kernel whose stderr has no descriptor: imported then, the default keeps that stream.
    assert _run_script("""
        import asyncio, io, sys, tempfile
        sys.stderr = io.StringIO()                      # no descriptor when mcp is imported
        from mcp.client.stdio import stdio_client
        from helpers.mcp_client import server_parameters

        async def main():
            async with stdio_client(server_parameters()):
                return "started"

        with tempfile.TemporaryFile("w+") as real_file:
            sys.stderr = real_file                       # a real file afterwards
            try:
                outcome = asyncio.run(main())
            except BaseException as error:  # noqa: BLE001 - the outcome is what we print
                outcome = type(error).__name__ + ": " + str(error)
            finally:
                sys.stderr = sys.__stderr__
        print(outcome)
    """) == "UnsupportedOperation: fileno"


@lesson
def test_ipykernel_gives_stderr_a_descriptor_only_on_linux_and_macos_and_not_under_pytest():
    from ipykernel import iostream

    source = inspect.getsource(iostream.OutStream.__init__)
    assert 'sys.platform.startswith("linux") or sys.platform.startswith("darwin")' in source
    assert '"PYTEST_CURRENT_TEST" not in os.environ' in source


@lesson
def test_the_adapters_own_client_works_as_written_in_a_script():
    script = textwrap.dedent("""
        import asyncio, sys
        from langchain_core.messages import AIMessage
        from langchain_mcp_adapters.client import MultiServerMCPClient
        from langgraph.prebuilt import ToolNode
        from langgraph.runtime import Runtime

        client = MultiServerMCPClient({"city-guide": {
            "transport": "stdio", "command": sys.executable, "args": ["-m", "helpers.mcp_server"]}})

        async def main():
            tools = await client.get_tools()
            calls = AIMessage("", tool_calls=[
                {"name": "lookup_weather", "args": {"city": "Paris"}, "id": "w", "type": "tool_call"}])
            result = await ToolNode(tools).ainvoke({"messages": [calls]}, runtime=Runtime())
            print([m.text for m in result["messages"]])

        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['Paris: sunny, 25 °C']"
    assert done.stderr == ""



# -- deep dive 6: MCP results in full (the city-results server) ------------------------------------
# Unless a docstring says otherwise, each test below holds on the pinned set: langchain-mcp-adapters
# 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24 (prebuilt 1.1.3), langchain 1.5.2,
# langchain-openai 1.7.4 and openai 3.57.0.
SHAPES = ["temperature", "forecast", "weather_record", "weather_record_no_schema", "weather_data_only",
          "city_map", "city_guide", "city_report", "find_order", "cancel_order", "fail_silently"]
REPORT_SCRIPT = [[{"name": "city_report", "args": {"city": "Paris"}}], tool_results_summary]


def shape_args(name: str) -> dict:
    return {"order_id": 42} if name in ("find_order", "cancel_order") else {"city": "Paris"}


def by_name(tools) -> dict:
    return {tool.name: tool for tool in tools}


def _endpoint_llm(endpoint):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused", use_responses_api=False,
                      max_retries=0)


async def links_as_text(request, handler):
    """The lesson's adapter interceptor: each resource link described in a text block."""
    from mcp.types import ResourceLink, TextContent

    result = await handler(request)
    def described(item):
        return f"{item.name} ({item.mimeType}, {item.size} bytes, {item.description}): {item.uri}"

    result.content = [
        TextContent(type="text", text=described(item)) if isinstance(item, ResourceLink) else item
        for item in result.content]
    return result


async def audio_as_text(request, handler):
    """The same pattern for an audio item: a text block says what was left out."""
    from mcp.types import AudioContent, TextContent

    result = await handler(request)
    result.content = [
        TextContent(type="text", text=f"({item.mimeType} audio left out)") if isinstance(item, AudioContent)
        else item
        for item in result.content]
    return result


@pytest.fixture(scope="module")
def shapes() -> dict:
    """Every scenario of deep dive 6, over two stdio sessions with the city-results server."""
    from langchain.agents import create_agent

    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    async def agent_run(model, tools, name):
        return await outcome(create_agent(model, tools).ainvoke({"messages": [HumanMessage(f"Use {name}.")]}))

    async def scenario() -> dict:
        seen: dict = {}
        async with open_session(server=mcp_server.RESULTS_SERVER_NAME) as session:
            seen["listed"] = {tool.name: tool for tool in (await session.list_tools()).tools}
            seen["raw"] = {name: await session.call_tool(name, shape_args(name)) for name in SHAPES}
            tools = await load_mcp_tools(session)
            raising = await load_mcp_tools(session, handle_tool_errors=False)
            seen["tools"] = tools
            output = await ToolNode(tools).ainvoke(calls(*[(name, shape_args(name)) for name in SHAPES]),
                                                   runtime=Runtime())
            seen["messages"] = {message.name: message for message in output["messages"]}
            seen["plain_find_order"] = await outcome(by_name(tools)["find_order"].ainvoke({"order_id": 42}))
            sounds = calls(("city_sounds", {"city": "Paris"}))
            seen["sounds_default"] = await outcome(ToolNode(tools).ainvoke(sounds, runtime=Runtime()))
            seen["sounds_caught"] = await ToolNode(tools, handle_tool_errors=True).ainvoke(
                sounds, runtime=Runtime())
            for label, loaded in (("handles", tools), ("raises", raising)):
                for name in ("find_order", "cancel_order", "city_sounds"):
                    model = ScriptedChatModel(script=[[{"name": name, "args": shape_args(name)}],
                                                      tool_results_summary])
                    seen[label, name] = await agent_run(model, loaded, name)
            with ScriptedOpenAIEndpoint(REPORT_SCRIPT) as endpoint:
                seen["report_run"] = await agent_run(_endpoint_llm(endpoint), tools, "city_report")
                seen["report_requests"] = len(endpoint.requests)
        interceptors = [links_as_text, audio_as_text]
        async with mcp_tools(server=mcp_server.RESULTS_SERVER_NAME, tool_interceptors=interceptors) as fixed:
            with ScriptedOpenAIEndpoint(REPORT_SCRIPT) as endpoint:
                seen["fixed_run"] = await agent_run(_endpoint_llm(endpoint), fixed, "city_report")
                seen["fixed_sent"] = endpoint.requests[1]["messages"][-1]["content"]
            seen["sounds_fixed"] = await ToolNode(fixed).ainvoke(sounds, runtime=Runtime())
        return seen

    return asyncio.run(scenario())


def _content_sent(answer):
    """The tool message's content in ChatOpenAI's request for `answer`, or the error raised instead."""
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    call = AIMessage("", tool_calls=[{"name": answer.name, "args": {}, "id": answer.tool_call_id,
                                      "type": "tool_call"}])
    with ScriptedOpenAIEndpoint([[{"name": answer.name, "args": {}}], "done"]) as endpoint:
        try:
            _endpoint_llm(endpoint).invoke([HumanMessage("Go on."), call, answer])
        except ValueError as error:
            return error
        return endpoint.requests[0]["messages"][-1]


def _kinds(content) -> list[str]:
    return [block["type"] for block in content]


def _without_ids(content) -> list[dict]:
    return [{key: value for key, value in block.items() if key != "id"} for block in content]


@lesson
def test_fastmcp_gives_an_output_schema_only_to_return_types_it_can_describe(shapes):
    """int, list[str], a TypedDict and str get one; structured_output=False, Image, Audio, a bare
    CallToolResult do not."""
    with_schema = {name for name, tool in shapes["listed"].items() if tool.outputSchema}
    assert with_schema == {"temperature", "forecast", "weather_record", "cancel_order"}


@lesson
def test_the_adapters_tools_are_content_and_artifact_tools_with_its_own_error_handler(shapes):
    assert {(type(t).__name__, t.response_format, t.handle_tool_error.__name__) for t in shapes["tools"]} == {
        ("StructuredTool", "content_and_artifact", "_handle_mcp_tool_error")}


@lesson
def test_each_mcp_content_item_becomes_one_block_of_its_kind_in_order(shapes):
    raw, messages = shapes["raw"], shapes["messages"]
    assert {name: [item.type for item in raw[name].content] for name in SHAPES} == {
        "temperature": ["text"], "forecast": ["text", "text"], "weather_record": ["text"],
        "weather_record_no_schema": ["text"], "weather_data_only": [], "city_map": ["image"],
        "city_guide": ["text", "resource"], "city_report": ["resource_link"], "find_order": ["text"],
        "cancel_order": ["text"], "fail_silently": []}
    assert {name: _kinds(messages[name].content) for name in SHAPES} == {
        "temperature": ["text"], "forecast": ["text", "text"], "weather_record": ["text"],
        "weather_record_no_schema": ["text"], "weather_data_only": [], "city_map": ["image"],
        "city_guide": ["text", "text"], "city_report": ["file"], "find_order": ["text"],
        "cancel_order": ["text"], "fail_silently": ["text"]}


@lesson
def test_several_text_items_stay_separate_blocks_and_text_joins_them_with_no_separator(shapes):
    forecast = shapes["messages"]["forecast"]
    assert _without_ids(forecast.content) == [{"type": "text", "text": "Paris: sunny"},
                                              {"type": "text", "text": "Paris: 25 °C"}]
    assert forecast.text == "Paris: sunnyParis: 25 °C"


@lesson
def test_an_image_item_becomes_a_base64_image_block(shapes):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3. The block's keys are
    type, id, base64 and mime_type, nothing else (printed in deep dive 6.2)."""
    (with_id,) = shapes["messages"]["city_map"].content
    assert set(with_id) == {"type", "id", "base64", "mime_type"} and LC_ID.fullmatch(with_id["id"])
    (block,) = _without_ids(shapes["messages"]["city_map"].content)
    data = shapes["raw"]["city_map"].content[0].data
    assert block == {"type": "image", "base64": data, "mime_type": "image/png"}


@lesson
def test_an_embedded_text_resource_becomes_a_plain_text_block_without_its_uri(shapes):
    assert _without_ids(shapes["messages"]["city_guide"].content) == [
        {"type": "text", "text": "Paris guide:"},
        {"type": "text", "text": "Paris's best-known sight: the Louvre."}]
    assert str(shapes["raw"]["city_guide"].content[1].resource.uri) == "guide://paris/intro"


@lesson
def test_a_resource_link_keeps_only_its_url_and_mime_type(shapes):
    """langchain-mcp-adapters#606 (open on 0.3.2): name, description and size are dropped."""
    link = shapes["raw"]["city_report"].content[0]
    assert (link.name, link.description, link.size) == ("report.pdf", "Paris in numbers", 52_000)
    assert _without_ids(shapes["messages"]["city_report"].content) == [
        {"type": "file", "url": "https://example.com/paris/report.pdf", "mime_type": "application/pdf"}]


@lesson
def test_a_returned_int_is_wrapped_by_fastmcp_and_arrives_as_the_artifact(shapes):
    temperature = shapes["messages"]["temperature"]
    assert shapes["raw"]["temperature"].structuredContent == {"result": 25}
    assert (temperature.text, temperature.artifact) == ("25", {"structured_content": {"result": 25}})


@lesson
def test_a_typed_record_arrives_as_the_artifact_and_as_json_text_for_the_model(shapes):
    record = {"city": "Paris", "sky": "sunny", "temp_c": 25}
    message = shapes["messages"]["weather_record"]
    assert message.artifact == {"structured_content": record}
    assert json.loads(message.text) == record


@lesson
def test_without_an_output_schema_the_same_text_comes_with_no_artifact(shapes):
    plain, typed = shapes["messages"]["weather_record_no_schema"], shapes["messages"]["weather_record"]
    assert shapes["raw"]["weather_record_no_schema"].structuredContent is None
    assert plain.artifact is None
    assert plain.text == typed.text


@lesson
def test_structured_content_without_content_items_gives_empty_content_and_the_artifact(shapes):
    message = shapes["messages"]["weather_data_only"]
    assert message.content == []
    assert message.artifact == {"structured_content": {"city": "Paris", "sky": "sunny", "temp_c": 25}}


@lesson
def test_a_returned_error_becomes_an_error_message_without_its_structured_content(shapes):
    """langchain-mcp-adapters#619 (open on 0.3.2): the adapter raises before it reads structuredContent."""
    assert shapes["raw"]["find_order"].structuredContent == {"code": "not_found", "order_id": 42}
    message = shapes["messages"]["find_order"]
    assert (message.status, message.text, message.artifact) == ("error", "no order 42", None)


@lesson
def test_a_raised_exception_arrives_as_fastmcps_error_text_without_structured_content(shapes):
    raw = shapes["raw"]["cancel_order"]
    assert raw.isError and raw.structuredContent is None
    message = shapes["messages"]["cancel_order"]
    assert (message.status, message.text, message.artifact) == (
        "error", "Error executing tool cancel_order: no order 42", None)


@lesson
def test_an_error_with_no_content_gets_the_adapters_placeholder_text(shapes):
    message = shapes["messages"]["fail_silently"]
    assert (message.status, message.text) == ("error", "MCP tool returned an error with empty content.")


@lesson
def test_a_plain_argument_call_of_an_error_tool_returns_its_blocks_without_raising(shapes):
    """The content_and_artifact rule (lesson 16) on the adapter's error answer: content alone, no status."""
    answer = shapes["plain_find_order"]
    assert isinstance(answer, list)
    assert _without_ids(answer) == [{"type": "text", "text": "no order 42"}]


@lesson
def test_create_agent_reads_returned_and_raised_errors_under_the_adapters_default(shapes):
    assert shapes["handles", "find_order"]["messages"][-1].text == "no order 42"
    assert shapes["handles", "cancel_order"]["messages"][-1].text == (
        "Error executing tool cancel_order: no order 42")
    tool_message = shapes["handles", "find_order"]["messages"][2]
    assert (tool_message.status, tool_message.artifact) == ("error", None)


@lesson
def test_create_agent_raises_the_adapters_tool_exception_when_it_does_not_handle_errors(shapes):
    for name, text in (("find_order", "no order 42"),
                       ("cancel_order", "Error executing tool cancel_order: no order 42")):
        error = shapes["raises", name]
        assert isinstance(error, ToolException) and type(error).__name__ == "_MCPToolExecutionError"
        assert str(error) == text


@lesson
def test_an_audio_block_raises_not_implemented_in_create_agent_under_either_adapter_setting(shapes):
    for label in ("handles", "raises"):
        error = shapes[label, "city_sounds"]
        assert isinstance(error, NotImplementedError)
        assert str(error).startswith(
            "AudioContent conversion to LangChain content blocks is not yet supported")


@lesson
def test_toolnodes_default_policy_lets_the_audio_error_through(shapes):
    assert isinstance(shapes["sounds_default"], NotImplementedError)


@lesson
def test_a_toolnode_that_catches_everything_turns_the_audio_error_into_a_message(shapes):
    (message,) = shapes["sounds_caught"]["messages"]
    assert message.status == "error"
    assert message.text.startswith("Error: NotImplementedError('AudioContent conversion")


@lesson
def test_handle_tool_errors_is_an_adapter_setting_true_by_default_in_each_entry_point():
    from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool

    for entry in (load_mcp_tools, MultiServerMCPClient.__init__, convert_mcp_tool_to_langchain_tool):
        assert inspect.signature(entry).parameters["handle_tool_errors"].default is True


@lesson
def test_chatopenai_sends_several_text_blocks_as_a_list_of_text_parts(shapes):
    assert _content_sent(shapes["messages"]["forecast"])["content"] == [
        {"type": "text", "text": "Paris: sunny"}, {"type": "text", "text": "Paris: 25 °C"}]


@lesson
def test_chatopenai_sends_an_image_block_as_an_image_url_part_in_the_tool_message(shapes):
    sent = _content_sent(shapes["messages"]["city_map"])
    data = shapes["raw"]["city_map"].content[0].data
    assert sent["role"] == "tool"
    assert sent["content"] == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]


@lesson
def test_chatopenai_refuses_a_file_url_before_sending(shapes):
    error = _content_sent(shapes["messages"]["city_report"])
    assert isinstance(error, ValueError)
    assert str(error) == "OpenAI Chat Completions does not support file URLs."


@lesson
def test_chatopenai_sends_empty_content_as_an_empty_list(shapes):
    assert _content_sent(shapes["messages"]["weather_data_only"])["content"] == []


@lesson
def test_chatopenai_sends_an_error_as_its_text_with_no_status_or_artifact(shapes):
    sent = _content_sent(shapes["messages"]["find_order"])
    assert sent == {"role": "tool", "tool_call_id": shapes["messages"]["find_order"].tool_call_id,
                    "content": [{"type": "text", "text": "no order 42"}]}


@lesson
def test_chatopenai_never_sends_the_artifact(shapes):
    sent = _content_sent(shapes["messages"]["weather_record"])
    assert set(sent) == {"role", "tool_call_id", "content"}
    assert "structured_content" not in json.dumps(sent)


@lesson
def test_the_openai_sdk_types_allow_only_text_parts_in_a_tool_message():
    """openai 3.57.0: a tool message's content is a str or text parts; a user message's may hold images."""
    from typing import get_args, get_type_hints

    from openai.types.chat import ChatCompletionToolMessageParam, ChatCompletionUserMessageParam

    def parts(param):
        part = get_args(get_args(get_type_hints(param)["content"])[1])[0]
        return [p.__name__ for p in get_args(part) or (part,)]

    assert parts(ChatCompletionToolMessageParam) == ["ChatCompletionContentPartTextParam"]
    assert "ChatCompletionContentPartImageParam" in parts(ChatCompletionUserMessageParam)


@lesson
def test_a_resource_link_makes_create_agents_next_chatopenai_call_raise(shapes):
    error = shapes["report_run"]
    assert isinstance(error, ValueError)
    assert str(error) == "OpenAI Chat Completions does not support file URLs."
    assert shapes["report_requests"] == 1  # the first model call went out; the second never did


@lesson
def test_an_adapter_interceptor_that_rewrites_resource_links_as_text_lets_the_run_finish(shapes):
    text = "report.pdf (application/pdf, 52000 bytes, Paris in numbers): https://example.com/paris/report.pdf"
    assert shapes["fixed_sent"] == [{"type": "text", "text": text}]
    assert shapes["fixed_run"]["messages"][-1].text == text


@lesson
def test_an_adapter_interceptor_that_replaces_an_audio_item_keeps_the_call_from_failing(shapes):
    (message,) = shapes["sounds_fixed"]["messages"]
    assert message.status == "success"
    assert message.text == "(audio/wav audio left out)"


# -- the cases behind the rules: the sync path under a catch-all policy, who writes an error's text,
# -- errors no adapter setting catches, the order of the conversion rules, interceptors that skip
# -- them, FastMCP's annotation rule, the Responses API path, and the client's own setting -----------
# Every test below holds on the pinned set: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core
# 1.8.3, langgraph 1.2.24 (prebuilt 1.1.3), langchain 1.5.2, langchain-openai 1.7.4, openai 3.57.0.
# Most run a server in this process (`in_process_tools`, or `mcp.shared.memory` for a server built
# here): no subprocess, milliseconds each.


def _one_call(name: str, **args) -> dict:
    call = {"name": name, "args": args, "id": "q", "type": "tool_call"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


def _run_with_tools(server, scenario, **load_options):
    """Run `scenario(tools)` with `server`'s tools, loaded in this process; return what it returns."""
    from helpers.mcp_client import in_process_tools

    async def main():
        if isinstance(server, str):
            async with in_process_tools(server=server, **load_options) as tools:
                return await scenario(tools)
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(server) as session:
            return await scenario(await load_mcp_tools(session, **load_options))

    return asyncio.run(main())


def _message_or_error(tool_node_options=None, name="", **args):
    async def scenario(tools):
        return await outcome(ToolNode(tools, **(tool_node_options or {})).ainvoke(_one_call(name, **args),
                                                                                  runtime=Runtime()))
    return scenario


# -- section 3: the sync path ----------------------------------------------------------------------
@lesson
def test_under_invoke_a_catch_all_toolnode_answers_every_mcp_call_with_the_sync_error():
    """Pinned: langgraph 1.2.24, langchain-core 1.8.3, langchain-mcp-adapters 0.3.2. The run does not
    fail: the model reads the NotImplementedError as the tool's answer, and no tool runs."""

    async def scenario(tools):
        graph = tool_loop(ScriptedChatModel(script=SCRIPT).bind_tools(tools), tools, handle_tool_errors=True)
        return await asyncio.to_thread(graph.invoke, QUESTION)

    result = _run_with_tools(mcp_server.SERVER_NAME, scenario)
    text = ("Error: NotImplementedError('StructuredTool does not support sync invocation.')\n"
            " Please fix your mistakes.")
    answers = [m for m in result["messages"] if m.type == "tool"]
    assert [(m.status, m.text) for m in answers] == [("error", text), ("error", text)]
    assert result["messages"][-1].text == f"{text}; {text}"


@lesson
def test_create_agent_invoke_of_mcp_tools_raises_not_implemented():
    """Pinned: langchain 1.5.2 (create_agent), langgraph 1.2.24, langchain-mcp-adapters 0.3.2."""
    from langchain.agents import create_agent

    async def scenario(tools):
        agent = create_agent(ScriptedChatModel(script=SCRIPT), tools)
        return await asyncio.to_thread(outcome_sync, agent.invoke, QUESTION)

    error = _run_with_tools(mcp_server.SERVER_NAME, scenario)
    assert isinstance(error, NotImplementedError)
    assert str(error) == "StructuredTool does not support sync invocation."


# -- section 4.1 and deep dive 6.3: who writes an error's text, and the error no setting catches -------
def _fastmcp_server_with_tool_error_and_elicitation():
    from mcp.server.fastmcp import FastMCP
    from mcp.server.fastmcp.exceptions import ToolError
    from mcp.shared.exceptions import UrlElicitationRequiredError

    server = FastMCP("errors", log_level="WARNING")

    @server.tool()
    def own_tool_error(city: str) -> str:
        """Raise FastMCP's own ToolError."""
        raise ToolError("my own text")

    @server.tool()
    def book_table(city: str) -> str:
        """Ask for a URL elicitation."""
        raise UrlElicitationRequiredError([])

    return server


@lesson
def test_fastmcp_prefixes_its_own_tool_error_too():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. FastMCP's
    Tool.run wraps every exception, a ToolError included."""
    result = _run_with_tools(_fastmcp_server_with_tool_error_and_elicitation(),
                             _message_or_error({"handle_tool_errors": False}, "own_tool_error", city="Paris"))
    (message,) = result["messages"]
    assert (message.status, message.text) == ("error", "Error executing tool own_tool_error: my own text")


@lesson
def test_a_lowlevel_server_sends_the_exceptions_message_alone():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    result = _run_with_tools(mcp_server.LOWLEVEL_SERVER_NAME,
                             _message_or_error({"handle_tool_errors": False}, "lookup_traffic", city="Paris"))
    (message,) = result["messages"]
    assert (message.status, message.text) == ("error", "traffic service unreachable for Paris")


@lesson
def test_a_lowlevel_server_rejects_missing_arguments_with_its_own_validation_text():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    result = _run_with_tools(mcp_server.LOWLEVEL_SERVER_NAME,
                             _message_or_error({"handle_tool_errors": False}, "lookup_traffic"))
    (message,) = result["messages"]
    assert message.status == "error"
    assert message.text == "Input validation error: 'city' is a required property"


@lesson
@pytest.mark.parametrize("handle_tool_errors", [True, False])
@pytest.mark.parametrize("kind", ["lowlevel", "fastmcp"])
def test_url_elicitation_required_raises_mcp_error_under_either_adapter_setting(kind, handle_tool_errors):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. The server
    answers with a JSON-RPC error (-32042), not an isError result; the session raises McpError, which is
    no ToolException, so ToolNode's default policy lets it through."""
    from mcp import McpError
    from mcp.types import URL_ELICITATION_REQUIRED

    server = (mcp_server.LOWLEVEL_SERVER_NAME if kind == "lowlevel"
              else _fastmcp_server_with_tool_error_and_elicitation())
    error = _run_with_tools(server, _message_or_error(None, "book_table", city="Paris"),
                            handle_tool_errors=handle_tool_errors)
    assert isinstance(error, McpError) and not isinstance(error, ToolException)
    assert str(error) == "URL elicitation required"
    assert error.error.code == URL_ELICITATION_REQUIRED == -32042
    if kind == "lowlevel":
        assert error.error.data["elicitations"][0]["url"] == mcp_server.SIGN_IN_URL


@lesson
def test_a_catch_all_toolnode_turns_the_elicitation_error_into_a_message_for_the_model():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    result = _run_with_tools(mcp_server.LOWLEVEL_SERVER_NAME,
                             _message_or_error({"handle_tool_errors": True}, "book_table", city="Paris"))
    (message,) = result["messages"]
    assert message.status == "error"
    assert message.text == "Error: McpError('URL elicitation required')\n Please fix your mistakes."


@lesson
def test_the_adapters_handler_returns_blocks_and_only_a_toolcall_makes_them_an_error_message():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. The handler
    answers with content blocks; BaseTool builds ToolMessage(status="error") because ToolNode calls with
    a ToolCall. Called with plain arguments, the tool returns the blocks."""
    from langchain_core.messages import ToolMessage

    async def scenario(tools):
        find_order = by_name(tools)["find_order"]
        call = {"name": "find_order", "args": {"order_id": 42}, "id": "q", "type": "tool_call"}
        return await find_order.ainvoke(call), await find_order.ainvoke({"order_id": 42})

    with_call, with_args = _run_with_tools(mcp_server.RESULTS_SERVER_NAME, scenario)
    assert isinstance(with_call, ToolMessage)
    assert (with_call.status, with_call.text, with_call.tool_call_id) == ("error", "no order 42", "q")
    assert isinstance(with_args, list)
    assert _without_ids(with_args) == [{"type": "text", "text": "no order 42"}]


# -- deep dive 6.1: the rules, in the order the code applies them ---------------------------------
def _rule_server():
    """Branches of the conversion rule that the city-results server does not show."""
    import base64

    from mcp.server.fastmcp import FastMCP
    from mcp.types import (
        BlobResourceContents,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
    )

    data = base64.b64encode(b"xyz").decode()
    server = FastMCP("rule", log_level="WARNING")

    @server.tool()
    def image_link() -> CallToolResult:
        """A resource link to a PNG."""
        return CallToolResult(content=[ResourceLink(type="resource_link", name="map.png",
                                                    uri="https://example.com/map.png", mimeType="image/png")])

    @server.tool()
    def blob_pdf() -> CallToolResult:
        """An embedded PDF."""
        return CallToolResult(content=[EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="file:///a.pdf", mimeType="application/pdf", blob=data))])

    @server.tool()
    def blob_png() -> CallToolResult:
        """An embedded PNG."""
        return CallToolResult(content=[EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="file:///a.png", mimeType="image/png", blob=data))])

    @server.tool()
    def error_with_image() -> CallToolResult:
        """An error whose only content is an image."""
        image = ImageContent(type="image", data=data, mimeType="image/png")
        return CallToolResult(isError=True, content=[image])

    @server.tool()
    def error_two_texts() -> CallToolResult:
        """An error with two text items."""
        return CallToolResult(isError=True, content=[TextContent(type="text", text="first"),
                                                     TextContent(type="text", text="second")])

    return server, data


@pytest.fixture(scope="module")
def rule_branches() -> dict:
    """Each tool of `_rule_server()` through a default ToolNode, under each adapter setting."""
    server, data = _rule_server()

    async def scenario(tools):
        seen = {}
        for tool in tools:
            seen[tool.name] = await outcome(ToolNode(tools).ainvoke(_one_call(tool.name), runtime=Runtime()))
        return seen

    seen = {"data": data}
    for handle in (True, False):
        seen[handle] = _run_with_tools(server, scenario, handle_tool_errors=handle)
    return seen


def _only_message(output):
    (message,) = output["messages"]
    return message


@lesson
def test_a_resource_link_with_an_image_mime_type_becomes_an_image_block_with_its_url(rule_branches):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    message = _only_message(rule_branches[True]["image_link"])
    assert _without_ids(message.content) == [
        {"type": "image", "url": "https://example.com/map.png", "mime_type": "image/png"}]


@lesson
def test_an_embedded_blob_becomes_an_image_or_a_file_block_by_its_mime_type_without_its_uri(rule_branches):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    data = rule_branches["data"]
    assert _without_ids(_only_message(rule_branches[True]["blob_png"]).content) == [
        {"type": "image", "base64": data, "mime_type": "image/png"}]
    assert _without_ids(_only_message(rule_branches[True]["blob_pdf"]).content) == [
        {"type": "file", "base64": data, "mime_type": "application/pdf"}]


@lesson
def test_an_error_result_keeps_its_image_block_in_the_error_message(rule_branches):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    message = _only_message(rule_branches[True]["error_with_image"])
    assert message.status == "error" and message.artifact is None
    assert _without_ids(message.content) == [
        {"type": "image", "base64": rule_branches["data"], "mime_type": "image/png"}]


@lesson
def test_with_the_handler_off_an_error_raises_with_its_texts_joined_by_newlines(rule_branches):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    error = rule_branches[False]["error_two_texts"]
    assert type(error).__name__ == "_MCPToolExecutionError" and str(error) == "first\nsecond"
    handled = _only_message(rule_branches[True]["error_two_texts"])
    assert _without_ids(handled.content) == [{"type": "text", "text": "first"},
                                             {"type": "text", "text": "second"}]


@lesson
def test_with_the_handler_off_an_error_with_no_text_says_how_many_blocks_it_had(rule_branches):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    error = rule_branches[False]["error_with_image"]
    assert type(error).__name__ == "_MCPToolExecutionError"
    assert str(error) == "MCP tool returned an error with no text content (1 non-text content block(s))."


@lesson
def test_with_the_handler_off_an_error_with_no_content_at_all_says_it_was_empty():
    """Rule 2: `fail_silently` answers isError=True with no content items; "no text content (N
    non-text ...)" is only for non-text blocks. Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0,
    langchain-core 1.8.3, langgraph 1.2.24."""
    error = _run_with_tools(mcp_server.RESULTS_SERVER_NAME,
                            _message_or_error(None, "fail_silently", city="Paris"),
                            handle_tool_errors=False)
    assert type(error).__name__ == "_MCPToolExecutionError" and isinstance(error, ToolException)
    assert str(error) == "MCP tool returned an error with empty content."


@lesson
@pytest.mark.parametrize("handle_tool_errors", [True, False])
def test_an_error_result_with_an_audio_item_raises_not_implemented_under_either_setting(handle_tool_errors):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. The blocks
    are converted before isError is read, so the handler never sees the error (the Practice's third
    question)."""
    error = _run_with_tools(mcp_server.PRACTICE_SERVER_NAME,
                            _message_or_error(None, "street_recording", city="Paris"),
                            handle_tool_errors=handle_tool_errors)
    assert isinstance(error, NotImplementedError) and not isinstance(error, ToolException)
    assert str(error).startswith("AudioContent conversion to LangChain content blocks is not yet supported")


# -- deep dive 6.1: an interceptor's own ToolMessage or Command skips the rule ---------------------
async def _reply_with_a_message(request, handler):
    from langchain_core.messages import ToolMessage

    await handler(request)
    return ToolMessage("the interceptor's answer", tool_call_id="its-own-id", artifact={"x": 1})


async def _reply_with_the_calls_id(request, handler):
    from langchain_core.messages import ToolMessage

    await handler(request)
    return ToolMessage("the interceptor's answer", tool_call_id=request.runtime.tool_call_id)


async def _reply_with_a_command(request, handler):
    from langchain_core.messages import ToolMessage
    from langgraph.types import Command

    await handler(request)
    return Command(update={"messages": [ToolMessage("from a Command", tool_call_id="q")]})


@lesson
@pytest.mark.parametrize("name", ["find_order", "city_sounds", "temperature"])
def test_an_interceptors_tool_message_is_used_as_it_is_with_its_own_tool_call_id(name):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. No isError
    check (find_order stays a success), no conversion (city_sounds' audio does not raise), no artifact of
    the adapter's."""
    args = {"order_id": 42} if name == "find_order" else {"city": "Paris"}
    result = _run_with_tools(mcp_server.RESULTS_SERVER_NAME, _message_or_error(None, name, **args),
                             tool_interceptors=[_reply_with_a_message])
    message = _only_message(result)
    assert (message.content, message.status, message.artifact, message.tool_call_id) == (
        "the interceptor's answer", "success", {"x": 1}, "its-own-id")


@lesson
def test_an_interceptor_can_copy_the_calls_id_from_the_requests_runtime():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    result = _run_with_tools(mcp_server.RESULTS_SERVER_NAME,
                             _message_or_error(None, "find_order", order_id=42),
                             tool_interceptors=[_reply_with_the_calls_id])
    assert _only_message(result).tool_call_id == "q"


@lesson
def test_an_interceptors_command_passes_through_the_adapter_untouched():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    from langgraph.types import Command

    result = _run_with_tools(mcp_server.RESULTS_SERVER_NAME,
                             _message_or_error(None, "city_sounds", city="Paris"),
                             tool_interceptors=[_reply_with_a_command])
    (command,) = result
    assert isinstance(command, Command)
    assert [m.content for m in command.update["messages"]] == ["from a Command"]


# -- section 2 and deep dive 6.1: FastMCP decides structured content by the annotation -----------------
def _annotation_server():
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("annotations", log_level="WARNING")

    def int_returning_a_string() -> int:
        return "25"

    def int_returning_a_word() -> int:
        return "sunny"

    def no_annotation():
        return {"temp": 25}

    def any_annotation() -> Any:
        return {"temp": 25}

    def bare_dict() -> dict:
        return {"temp": 25}

    def bare_list() -> list:
        return [25]

    def str_keyed_dict() -> dict[str, int]:
        return {"temp": 25}

    def int_keyed_dict() -> dict[int, int]:
        return {1: 25}

    def optional_int_returning_none() -> int | None:
        return None

    for function in (int_returning_a_string, int_returning_a_word, no_annotation, any_annotation, bare_dict,
                     bare_list, str_keyed_dict, int_keyed_dict, optional_int_returning_none):
        server.tool(description=function.__name__)(function)
    return server


@pytest.fixture(scope="module")
def by_annotation() -> dict:
    """Each tool of `_annotation_server()`: MCP's raw result and the adapter's ToolMessage."""
    from mcp.shared.memory import create_connected_server_and_client_session

    async def scenario():
        seen = {}
        async with create_connected_server_and_client_session(_annotation_server()) as session:
            tools = await load_mcp_tools(session)
            for tool in tools:
                raw = await session.call_tool(tool.name, {})
                output = await ToolNode(tools).ainvoke(_one_call(tool.name), runtime=Runtime())
                seen[tool.name] = (raw, _only_message(output))
        return seen

    return asyncio.run(scenario())


@lesson
@pytest.mark.parametrize("name", ["no_annotation", "any_annotation", "bare_dict", "bare_list"])
def test_no_structured_content_without_an_annotation_that_says_what_the_value_holds(by_annotation, name):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. Whatever
    the function returns: a dict from each of these gives no artifact."""
    raw, message = by_annotation[name]
    assert raw.structuredContent is None and message.artifact is None
    assert message.status == "success" and message.text


@lesson
def test_the_annotation_not_the_value_decides_the_wrapping(by_annotation):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. `-> int`
    returning "25" still sends {"result": 25}; a str-keyed dict goes as it is, an int-keyed one wrapped."""
    assert by_annotation["int_returning_a_string"][1].artifact == {"structured_content": {"result": 25}}
    assert by_annotation["str_keyed_dict"][1].artifact == {"structured_content": {"temp": 25}}
    assert by_annotation["int_keyed_dict"][1].artifact == {"structured_content": {"result": {"1": 25}}}


@lesson
def test_a_value_the_annotation_cannot_take_makes_the_call_an_error_result(by_annotation):
    """Pinned: mcp 1.30.0, langchain-mcp-adapters 0.3.2, langchain-core 1.8.3, langgraph 1.2.24. The
    annotation decides whether there is structured content, but FastMCP validates the value against it:
    `-> int` returning "sunny" is no result but an error (rule 2 then: a status "error" ToolMessage)."""
    raw, message = by_annotation["int_returning_a_word"]
    assert raw.isError and raw.structuredContent is None
    first_line = ("Error executing tool int_returning_a_word: "
                  "1 validation error for int_returning_a_wordOutput")
    assert raw.content[0].text.splitlines()[0] == first_line
    assert message.status == "error" and message.artifact is None and message.text.startswith(first_line)


@lesson
def test_an_optional_int_returning_none_sends_no_content_item_and_a_wrapped_none(by_annotation):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24."""
    raw, message = by_annotation["optional_int_returning_none"]
    assert raw.content == [] and raw.structuredContent == {"result": None}
    assert message.content == [] and message.artifact == {"structured_content": {"result": None}}


@lesson
def test_the_practice_servers_bare_dict_tool_gives_no_artifact():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24. The
    Practice's first question."""
    result = _run_with_tools(mcp_server.PRACTICE_SERVER_NAME,
                             _message_or_error(None, "weather_as_dict", city="Paris"))
    message = _only_message(result)
    assert message.artifact is None
    assert json.loads(message.text) == {"city": "Paris", "sky": "sunny", "temp_c": 25}


# -- deep dive 6.4: the file-URL refusal is the Chat Completions path's ------------------------------
def _responses_payload(answer) -> dict:
    """The last input item ChatOpenAI(use_responses_api=True) sends for `answer`: captured by an httpx
    transport that answers 400, so nothing leaves the machine."""
    import httpx
    import openai
    from langchain_openai import ChatOpenAI

    sent = []

    def capture(request):
        sent.append(json.loads(request.content))
        return httpx.Response(400, json={"error": {"message": "captured, not answered", "type": "test"}})

    llm = ChatOpenAI(model="gpt-4o", api_key="unused", use_responses_api=True, max_retries=0,
                     http_client=httpx.Client(transport=httpx.MockTransport(capture)))
    call = AIMessage("", tool_calls=[{"name": answer.name, "args": {}, "id": answer.tool_call_id,
                                      "type": "tool_call"}])
    with pytest.raises(openai.BadRequestError):
        llm.invoke([HumanMessage("Go on."), call, answer])
    (request,) = sent
    return request["input"][-1]


@lesson
def test_the_responses_api_path_sends_a_url_file_as_an_input_file_part_without_refusing_it(shapes):
    """Pinned: langchain-openai 1.7.4, langchain-core 1.8.3, openai 3.57.0."""
    report = shapes["messages"]["city_report"]
    assert _responses_payload(report) == {
        "type": "function_call_output", "call_id": report.tool_call_id,
        "output": [{"type": "input_file", "file_url": "https://example.com/paris/report.pdf"}]}


@lesson
def test_the_responses_api_path_sends_images_and_texts_as_input_parts(shapes):
    """Pinned: langchain-openai 1.7.4, langchain-core 1.8.3, openai 3.57.0."""
    data = shapes["raw"]["city_map"].content[0].data
    assert _responses_payload(shapes["messages"]["city_map"])["output"] == [
        {"type": "input_image", "image_url": f"data:image/png;base64,{data}"}]
    assert _responses_payload(shapes["messages"]["forecast"])["output"] == [
        {"type": "input_text", "text": "Paris: sunny"}, {"type": "input_text", "text": "Paris: 25 °C"}]


@lesson
def test_the_file_url_refusal_comes_from_langchain_cores_openai_block_translator(shapes):
    """Pinned: langchain-core 1.8.3, langchain-openai 1.7.4."""
    import traceback

    error = _content_sent(shapes["messages"]["city_report"])
    assert isinstance(error, ValueError)
    last = traceback.extract_tb(error.__traceback__)[-1]
    assert last.filename.replace("\\", "/").endswith("langchain_core/messages/block_translators/openai.py")


# -- deep dive 6.3: the client's handle_tool_errors is get_tools()'s ---------------------------------
@lesson
def test_the_clients_handle_tool_errors_applies_to_get_tools_not_to_load_mcp_tools_on_its_session():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langgraph 1.2.24.
    load_mcp_tools(session) takes its own setting, True by default."""

    async def scenario():
        client = MultiServerMCPClient({"r": server_connection(server=mcp_server.RESULTS_SERVER_NAME)},
                                      handle_tool_errors=False)
        find = calls(("find_order", {"order_id": 42}))
        from_get_tools = await outcome(ToolNode(await client.get_tools()).ainvoke(find, runtime=Runtime()))
        async with client.session("r") as session:
            on_session = await ToolNode(await load_mcp_tools(session)).ainvoke(find, runtime=Runtime())
        return from_get_tools, on_session

    from_get_tools, on_session = asyncio.run(scenario())
    assert type(from_get_tools).__name__ == "_MCPToolExecutionError" and str(from_get_tools) == "no order 42"
    assert (_only_message(on_session).status, _only_message(on_session).text) == ("error", "no order 42")


# -- deep dive 6.2: an annotation made of MCP content types still gets an output schema ------------
@lesson
def test_a_list_of_text_content_return_gets_an_output_schema_so_both_blocks_and_a_result_artifact():
    """Pinned: mcp 1.30.0, langchain-mcp-adapters 0.3.2, langchain-core 1.8.3, langgraph 1.2.24.
    FastMCP reads `-> list[TextContent]` like any annotation that says what the list holds: an output
    schema, the list wrapped as {"result": [...]}; the adapter keeps both text blocks, in order."""

    async def scenario(tools):
        listed = await mcp_server.build_server(mcp_server.PRACTICE_SERVER_NAME).list_tools()
        schema = next(tool for tool in listed if tool.name == "forecast_blocks").outputSchema
        output = await ToolNode(tools).ainvoke(_one_call("forecast_blocks", city="Paris"), runtime=Runtime())
        return schema, _only_message(output)

    schema, message = _run_with_tools(mcp_server.PRACTICE_SERVER_NAME, scenario)
    assert schema["required"] == ["result"] and schema["properties"]["result"]["type"] == "array"
    assert message.status == "success"
    assert _without_ids(message.content) == [{"type": "text", "text": "Paris: sunny"},
                                             {"type": "text", "text": "Paris: 25 °C"}]
    assert message.artifact == {"structured_content": {"result": [
        {"type": "text", "text": "Paris: sunny", "annotations": None, "_meta": None},
        {"type": "text", "text": "Paris: 25 °C", "annotations": None, "_meta": None}]}}


# -- deep dive 6.4: annotations become metadata; the output schema goes nowhere ---------------------
@lesson
def test_mcp_tool_annotations_become_the_tools_metadata_and_its_output_schema_goes_nowhere(shapes):
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langchain-openai 1.7.4.
    `weather_record` is listed with ToolAnnotations(title=..., readOnlyHint=True) and an output schema:
    the annotations are the LangChain tool's metadata (None for a tool without them); the output schema
    is neither in the metadata nor in what ChatOpenAI's bind_tools sends the model."""
    from helpers.openai_endpoint import ScriptedOpenAIEndpoint

    listing, tool = shapes["listed"]["weather_record"], by_name(shapes["tools"])["weather_record"]
    assert listing.annotations is not None and "temp_c" in listing.outputSchema["properties"]
    assert tool.metadata == {"title": "Weather record", "readOnlyHint": True, "destructiveHint": None,
                             "idempotentHint": None, "openWorldHint": None}
    assert by_name(shapes["tools"])["temperature"].metadata == {"_meta": {"unit": "°C"}}
    assert shapes["listed"]["temperature"].meta == {"unit": "°C"}
    assert by_name(shapes["tools"])["weather_record_no_schema"].metadata is None
    with ScriptedOpenAIEndpoint(["done"]) as endpoint:
        _endpoint_llm(endpoint).bind_tools([tool]).invoke("Weather in Paris?")
    (sent,) = endpoint.requests[0]["tools"]
    assert sent == {"type": "function", "function": {
        "name": "weather_record", "description": "Today's weather in a city as a record.",
        "parameters": {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}}}
    assert "temp_c" not in json.dumps(sent) + json.dumps(tool.metadata)


@lesson
def test_an_mcp_listings_title_and_icons_are_not_read_by_the_adapter():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0. A listing's fields besides name, description and
    inputSchema: only `annotations` and `_meta` reach the LangChain tool (its metadata)."""
    from mcp.server.fastmcp import FastMCP
    from mcp.types import Icon, Tool

    assert set(Tool.model_fields) == {"name", "title", "description", "inputSchema", "outputSchema", "icons",
                                      "annotations", "meta", "execution"}
    server = FastMCP("listing", log_level="WARNING")

    def shown(city: str) -> str:
        return city

    server.tool(title="Shown title", icons=[Icon(src="https://example.com/i.png")], description="d")(shown)
    (listing,) = asyncio.run(server.list_tools())
    assert listing.title == "Shown title" and listing.icons
    assert listing.annotations is None and listing.meta is None

    async def scenario(tools):
        return tools

    (tool,) = _run_with_tools(server._mcp_server, scenario)
    assert tool.metadata is None
    assert "Shown title" not in json.dumps(convert_to_openai_tool(tool)) and "example.com" not in str(tool)


@lesson
def test_an_mcp_tools_metadata_is_in_every_run_of_it_so_in_astream_events():
    """Pinned: langchain-mcp-adapters 0.3.2, mcp 1.30.0, langchain-core 1.8.3, langchain 1.5.2. BaseTool
    adds its `metadata` to each run's callback metadata: `on_tool_start` under create_agent has it."""
    from langchain.agents import create_agent

    async def scenario(tools):
        script = [[{"name": "temperature", "args": {"city": "Paris"}},
                   {"name": "weather_record", "args": {"city": "Paris"}}],
                  tool_results_summary]
        agent = create_agent(ScriptedChatModel(script=script), tools)
        return {e["name"]: e["metadata"] async for e in agent.astream_events(
            {"messages": [HumanMessage("go")]}, version="v2")
            if e["event"] in ("on_tool_start", "on_tool_end")}

    seen = _run_with_tools(mcp_server.RESULTS_SERVER_NAME, scenario)
    assert seen["temperature"]["_meta"] == {"unit": "°C"}
    assert seen["weather_record"]["title"] == "Weather record"
    assert seen["weather_record"]["readOnlyHint"] is True


@lesson
def test_langchains_beta_mcp_module_nests_annotations_and_meta_under_mcp_tool_and_needs_fastmcp():
    """Pinned: langchain 1.5.2 (its beta `langchain.mcp`, read as installed: importing it needs
    `fastmcp`, which the course does not install). Its `_tool_metadata` returns {"mcp": {"tool":
    {"annotations": ..., "_meta": ...}, "server": ...}}, not the adapter's flat dict."""
    import importlib.util
    import pathlib

    assert importlib.util.find_spec("fastmcp") is None
    with pytest.raises(ModuleNotFoundError, match="fastmcp"):
        import langchain.mcp  # noqa: F401
    package = pathlib.Path(importlib.util.find_spec("langchain").origin).parent
    source = (package / "mcp" / "tools.py").read_text()
    assert 'tool_meta["annotations"] = tool.annotations.model_dump(exclude_none=True)' in source
    assert 'tool_meta["_meta"] = tool.meta' in source and 'mcp["tool"] = tool_meta' in source
    assert 'return {"mcp": mcp} if mcp else None' in source
