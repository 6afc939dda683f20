"""The course's MCP server: the weather / attraction pair, a tool that fails server-side, and a
tool that says which process answered — served over stdio with the official `mcp` package.

    python -m helpers.mcp_server      # speaks MCP on stdin/stdout until stdin closes

Start it from Python with `helpers.mcp_client`, never by hand in a notebook: the client starts the
process, talks to it, and ends it when its `async with` block ends.

Importing this module has no side effects and does not import `mcp`; `build_server()` does.
"""

from __future__ import annotations

import asyncio
import os
import sys

from helpers.cities import attraction_report, weather_report

SERVER_NAME = "city-guide"
DELAY = 0.1
"""Seconds each lookup waits, standing in for the upstream API (the same as `helpers.tools`)."""



async def lookup_weather(city: str) -> str:
    """Look up today's weather for a city, e.g. Paris."""
    await asyncio.sleep(DELAY)
    return weather_report(city)


async def lookup_attraction(city: str) -> str:
    """Look up the best-known sight of a city, e.g. Paris."""
    await asyncio.sleep(DELAY)
    return attraction_report(city)


async def lookup_traffic(city: str) -> str:
    """Look up live traffic for a city (its service is down)."""
    await asyncio.sleep(DELAY)
    raise ConnectionError(f"traffic service unreachable for {city}")


def server_pid() -> int:
    """Return the id of the server process that answered this call."""
    return os.getpid()


TOOLS = [lookup_weather, lookup_attraction, lookup_traffic, server_pid]


def build_server():
    """Return the course's `FastMCP` server with its four tools registered (not yet running).

    FastMCP turns each function into an MCP tool: the name and docstring become the tool's name and
    description, the type hints its JSON input schema. An exception raised by a tool is sent back to
    the client as a result with `isError=True`; the server keeps running.

    Example:
        ```python
        server = build_server()
        [tool.name for tool in await server.list_tools()]
        # ['lookup_weather', 'lookup_attraction', 'lookup_traffic', 'server_pid']
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    from mcp.server.fastmcp import FastMCP

    # Only warnings and errors reach stderr (the client's errlog file), not a line per request.
    server = FastMCP(SERVER_NAME, log_level="WARNING")
    for function in TOOLS:
        server.tool()(function)
    return server


def main() -> None:
    """Serve the course's tools over stdio until the client closes stdin.

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    # `mcp` imports jsonschema, which builds IRI grammars at import time when the optional
    # `rfc3987-syntax` package is installed. The lock leaves it out (scripts/lock-overrides.txt), but
    # a plain `pip install -r requirements.txt` brings it back with JupyterLab's dependencies. This
    # server validates no IRIs, and skipping that import makes each start seconds faster there.
    sys.modules.setdefault("rfc3987_syntax", None)
    build_server().run("stdio")


if __name__ == "__main__":
    main()
