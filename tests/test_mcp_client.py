"""Unit tests for helpers.mcp_client: start, use and always stop the course's MCP server."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from helpers.mcp_client import (
    MCPServerError,
    SessionPerCall,
    _only_leaf,
    in_process_tools,
    mcp_tools,
    open_session,
    process_running,
    server_connection,
    server_parameters,
)
from helpers.models import tool_results_summary

PID_CALL = {"messages": [AIMessage("", tool_calls=[
    {"name": "server_pid", "args": {}, "id": "call_pid", "type": "tool_call"}])]}


def test_server_parameters_run_the_server_module_with_this_interpreter():
    params = server_parameters()
    assert (params.command, params.args) == (sys.executable, ["-m", "helpers.mcp_server"])


def test_server_connection_is_a_stdio_connection_for_the_adapter():
    assert server_connection() == {
        "transport": "stdio", "command": sys.executable, "args": ["-m", "helpers.mcp_server"]}


def test_toolnode_runs_an_mcp_tool_and_the_server_is_gone_afterwards_even_when_the_block_fails():
    seen = {}

    async def run_then_fail():
        async with mcp_tools() as tools:
            output = await ToolNode(tools).ainvoke(PID_CALL, runtime=Runtime())
            seen["pid"] = int(output["messages"][0].text)
            seen["running_inside"] = process_running(seen["pid"])
            raise KeyError("a failing cell")

    with pytest.raises(KeyError, match="a failing cell"):  # the error itself, not an ExceptionGroup
        asyncio.run(run_then_fail())
    assert seen["running_inside"] is True
    assert process_running(seen["pid"]) is False


def test_a_server_that_cannot_start_raises_with_its_stderr_and_a_hint():
    async def start_missing_module():
        async with open_session("helpers.no_such_server"):
            pass

    with pytest.raises(MCPServerError) as caught:
        asyncio.run(start_missing_module())
    message = str(caught.value)
    assert "No module named helpers.no_such_server" in message
    assert "Run `python -m helpers.no_such_server` in a terminal" in message


def test_an_errlog_without_a_file_descriptor_fails_before_any_process_starts():
    async def start_with_string_errlog():
        async with open_session(errlog=io.StringIO()):
            pass

    with pytest.raises(io.UnsupportedOperation, match="fileno"):
        asyncio.run(start_with_string_errlog())


def test_session_per_call_starts_a_new_server_for_every_call_and_stops_each():
    async def two_calls():
        tools = await load_mcp_tools(SessionPerCall())
        node = ToolNode(tools)
        outputs = [await node.ainvoke(PID_CALL, runtime=Runtime()) for _ in range(2)]
        return [int(o["messages"][0].text) for o in outputs]

    pids = asyncio.run(two_calls())
    assert pids[0] != pids[1]
    assert not any(process_running(pid) for pid in pids)


def test_process_running_tells_a_live_process_from_an_exited_one():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_running(os.getpid()) is True
    assert process_running(child.pid) is False


def test_only_leaf_unwraps_single_member_groups_and_keeps_real_groups():
    leaf = ValueError("x")
    assert _only_leaf(ExceptionGroup("outer", [ExceptionGroup("inner", [leaf])])) is leaf
    assert _only_leaf(ExceptionGroup("two", [leaf, KeyError("y")])) is None


def test_tool_results_summary_reads_the_text_of_content_blocks():
    blocks = [{"type": "text", "text": "Paris: the Louvre", "id": "lc_0123456789"}]
    messages = [AIMessage("", tool_calls=[]), ToolMessage("Paris: sunny", tool_call_id="1"),
                ToolMessage(blocks, tool_call_id="2")]
    assert tool_results_summary(messages) == "Paris: sunny; Paris: the Louvre"


KILL_OWN_CLIENT = """
import asyncio, os
from helpers.mcp_client import open_session

async def main():
    async with open_session() as session:
        pid = (await session.call_tool("server_pid", {})).structuredContent["result"]
        print(pid, flush=True)
        os.kill(os.getpid(), 9)  # the client dies without any cleanup, like a killed kernel

asyncio.run(main())
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_the_server_exits_on_its_own_when_its_client_is_killed():
    client = subprocess.run([sys.executable, "-c", KILL_OWN_CLIENT], capture_output=True, text=True)
    assert client.returncode == -9, client.stderr
    pid = int(client.stdout)
    for _ in range(50):  # its stdin closed with the client: it exits within moments
        if not process_running(pid):
            break
        time.sleep(0.1)
    assert process_running(pid) is False


def test_server_parameters_and_connection_name_another_server_after_the_module():
    params = server_parameters(server="city-results")
    assert params.args == ["-m", "helpers.mcp_server", "city-results"]
    assert server_connection(server="city-results")["args"] == ["-m", "helpers.mcp_server", "city-results"]


def _without_ids(content):
    return [{key: value for key, value in block.items() if key != "id"} for block in content]


def test_in_process_tools_answer_like_the_same_server_over_stdio():
    from helpers.mcp_server import RESULTS_SERVER_NAME, build_server

    async def every_answer(tools_context):
        listed = await build_server(RESULTS_SERVER_NAME).list_tools()
        calls = AIMessage("", tool_calls=[
            {"name": tool.name, "id": tool.name, "type": "tool_call",
             "args": {"order_id": 42} if "order_id" in tool.inputSchema["properties"] else {"city": "Paris"}}
            for tool in listed if tool.name != "city_sounds"])
        async with tools_context as tools:
            output = await ToolNode(tools).ainvoke({"messages": [calls]}, runtime=Runtime())
        return [(m.name, _without_ids(m.content), m.status, m.artifact) for m in output["messages"]]

    over_stdio = asyncio.run(every_answer(mcp_tools(server=RESULTS_SERVER_NAME)))
    in_process = asyncio.run(every_answer(in_process_tools()))
    assert in_process == over_stdio
    assert len(over_stdio) == 11


def test_in_process_tools_pass_load_options_to_the_adapter():
    async def load():
        async with in_process_tools(handle_tool_errors=False) as tools:
            return {tool.name: tool.handle_tool_error for tool in tools}

    assert set(asyncio.run(load()).values()) == {False}


def test_an_error_inside_an_in_process_block_comes_out_as_itself():
    async def fail():
        async with in_process_tools():
            raise KeyError("a failing cell")

    with pytest.raises(KeyError, match="a failing cell"):
        asyncio.run(fail())


def test_a_server_name_the_module_does_not_know_fails_the_start_with_its_stderr():
    async def start():
        async with open_session(server="no-such-server"):
            pass

    with pytest.raises(MCPServerError) as caught:
        asyncio.run(start())
    message = str(caught.value)
    assert "no MCP server named 'no-such-server'" in message
    assert "Run `python -m helpers.mcp_server no-such-server` in a terminal" in message


def test_the_lowlevel_server_answers_the_same_over_stdio_and_in_process():
    from mcp import McpError

    from helpers.mcp_server import LOWLEVEL_SERVER_NAME

    async def answers(tools_context):
        seen = []
        async with tools_context as tools:
            for name, args in (("lookup_traffic", {"city": "Paris"}), ("lookup_traffic", {}),
                               ("book_table", {"city": "Paris"})):
                call = {"name": name, "args": args, "id": "c", "type": "tool_call"}
                try:
                    output = await ToolNode(tools).ainvoke({"messages": [AIMessage("", tool_calls=[call])]},
                                                           runtime=Runtime())
                    (message,) = output["messages"]
                    seen.append((message.status, message.text))
                except McpError as error:
                    seen.append(("McpError", str(error)))
        return seen

    expected = [("error", "traffic service unreachable for Paris"),
                ("error", "Input validation error: 'city' is a required property"),
                ("McpError", "URL elicitation required")]
    assert asyncio.run(answers(mcp_tools(server=LOWLEVEL_SERVER_NAME))) == expected
    assert asyncio.run(answers(in_process_tools(server=LOWLEVEL_SERVER_NAME))) == expected
