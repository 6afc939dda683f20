"""Unit tests for helpers.mcp_server: the course's FastMCP server, in-process (no subprocess)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from helpers import mcp_server


def test_lookups_answer_from_the_course_data():
    assert asyncio.run(mcp_server.lookup_weather("Paris")) == "Paris: sunny, 25 °C"
    assert asyncio.run(mcp_server.lookup_attraction("London")) == "London: the Tower of London"
    assert asyncio.run(mcp_server.lookup_weather("Atlantis")) == "Atlantis: unknown"


def test_lookup_traffic_raises_connection_error():
    with pytest.raises(ConnectionError, match="traffic service unreachable for Paris"):
        asyncio.run(mcp_server.lookup_traffic("Paris"))


def test_server_pid_is_the_process_id():
    assert mcp_server.server_pid() == os.getpid()


def test_build_server_registers_every_tool():
    server = mcp_server.build_server()
    listed = asyncio.run(server.list_tools())
    assert [tool.name for tool in listed] == [f.__name__ for f in mcp_server.TOOLS]


def test_server_answers_like_the_local_demo_tools():
    from helpers import tools

    for city in ("Paris", "London", "Rome"):
        assert asyncio.run(mcp_server.lookup_weather(city)) == asyncio.run(tools.fetch_weather(city, 0))
        assert asyncio.run(mcp_server.lookup_attraction(city)) == asyncio.run(tools.fetch_attraction(city, 0))
    assert mcp_server.DELAY == tools.DEFAULT_DELAY


def test_importing_the_module_does_not_import_mcp():
    code = "import sys, helpers.mcp_server; print('mcp' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


RESULT_TOOL_NAMES = [
    "temperature", "forecast", "weather_record", "weather_record_no_schema", "weather_data_only",
    "city_map", "city_guide", "city_report", "city_sounds", "find_order", "cancel_order", "fail_silently",
]


def test_the_results_server_registers_one_tool_per_result_shape():
    listed = asyncio.run(mcp_server.build_server(mcp_server.RESULTS_SERVER_NAME).list_tools())
    assert [tool.name for tool in listed] == RESULT_TOOL_NAMES
    schemas = {tool.name for tool in listed if tool.outputSchema}
    assert schemas == {"temperature", "forecast", "weather_record", "cancel_order"}


def test_result_tools_return_what_their_table_says():
    from mcp.server.fastmcp import Audio, Image
    from mcp.types import CallToolResult, EmbeddedResource, ResourceLink

    tools = {function.__name__: function for function, _ in mcp_server.result_tools()}
    assert tools["temperature"]("Paris") == 25
    assert tools["forecast"]("Paris") == ["Paris: sunny", "Paris: 25 °C"]
    assert tools["weather_record"]("London") == {"city": "London", "sky": "cloudy", "temp_c": 18}
    assert tools["weather_record_no_schema"]("London") == tools["weather_record"]("London")
    data_only = tools["weather_data_only"]("Paris")
    assert data_only.content == [] and data_only.structuredContent["temp_c"] == 25
    assert isinstance(tools["city_map"]("Paris"), Image)
    assert isinstance(tools["city_sounds"]("Paris"), Audio)
    guide = tools["city_guide"]("Paris").content
    assert guide[0].text == "Paris guide:" and isinstance(guide[1], EmbeddedResource)
    (link,) = tools["city_report"]("Paris").content
    assert isinstance(link, ResourceLink) and link.name == "report.pdf"
    order = tools["find_order"](42)
    assert isinstance(order, CallToolResult) and order.isError and order.structuredContent["order_id"] == 42
    with pytest.raises(LookupError, match="no order 42"):
        tools["cancel_order"](42)
    assert tools["fail_silently"]("Paris").isError and tools["fail_silently"]("Paris").content == []


def test_weather_record_has_annotations_temperature_meta_and_only_the_no_schema_twin_no_structured_output():
    from mcp.types import ToolAnnotations

    options = {function.__name__: opts for function, opts in mcp_server.result_tools()}
    assert {name: opts for name, opts in options.items() if opts} == {
        "temperature": {"meta": {"unit": "°C"}},
        "weather_record": {"annotations": ToolAnnotations(title="Weather record", readOnlyHint=True)},
        "weather_record_no_schema": {"structured_output": False}}
    listed = asyncio.run(mcp_server.build_server(mcp_server.RESULTS_SERVER_NAME).list_tools())
    assert {tool.name for tool in listed if tool.annotations} == {"weather_record"}
    assert {tool.name: tool.meta for tool in listed if tool.meta} == {"temperature": {"unit": "°C"}}


def test_the_png_is_a_one_pixel_png():
    assert mcp_server.PNG_1X1.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = mcp_server.PNG_1X1[16:20], mcp_server.PNG_1X1[20:24]  # the IHDR chunk
    assert int.from_bytes(width, "big") == int.from_bytes(height, "big") == 1


def test_build_server_refuses_an_unknown_name_and_lists_the_known_ones():
    with pytest.raises(ValueError, match="no MCP server named 'nope': use one of 'city-guide', "
                                         "'city-results', 'city-practice', 'city-lowlevel'"):
        mcp_server.build_server("nope")


def test_the_practice_server_has_a_bare_dict_tool_an_error_with_audio_and_a_list_of_text_content_tool():
    from mcp.types import TextContent

    listed = asyncio.run(mcp_server.build_server(mcp_server.PRACTICE_SERVER_NAME).list_tools())
    assert [(tool.name, tool.outputSchema is not None) for tool in listed] == [
        ("weather_as_dict", False), ("street_recording", False), ("forecast_blocks", True)]
    tools = {function.__name__: function for function, _ in mcp_server.practice_tools()}
    assert tools["weather_as_dict"]("Paris") == {"city": "Paris", "sky": "sunny", "temp_c": 25}
    recording = tools["street_recording"]("Paris")
    assert recording.isError and [item.type for item in recording.content] == ["text", "audio"]
    assert tools["forecast_blocks"]("Paris") == [TextContent(type="text", text="Paris: sunny"),
                                                 TextContent(type="text", text="Paris: 25 °C")]


def test_the_lowlevel_server_is_mcps_own_server_class_with_two_tools():
    from mcp.server.fastmcp import FastMCP
    from mcp.server.lowlevel import Server

    server = mcp_server.build_server(mcp_server.LOWLEVEL_SERVER_NAME)
    assert isinstance(server, Server) and not isinstance(server, FastMCP)
    assert server.name == "city-lowlevel"


def test_main_picks_the_server_named_on_the_command_line(monkeypatch):
    served = []

    class FakeServer:
        def __init__(self, name):
            self.name = name

        def run(self, transport):
            served.append((self.name, transport))

    monkeypatch.setattr(mcp_server, "build_server", FakeServer)
    monkeypatch.setitem(sys.modules, "rfc3987_syntax", None)  # what main() sets, undone after the test
    mcp_server.main([])
    mcp_server.main([mcp_server.RESULTS_SERVER_NAME])
    mcp_server.main([mcp_server.PRACTICE_SERVER_NAME])
    assert served == [("city-guide", "stdio"), ("city-results", "stdio"), ("city-practice", "stdio")]
