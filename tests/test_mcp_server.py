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
