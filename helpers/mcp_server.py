"""The course's MCP servers, served over stdio with the official `mcp` package.

- `city-guide` (the default): the weather / attraction pair, a tool that fails server-side, and a
  tool that says which process answered.
- `city-results`: one tool per shape of result an MCP tool can give back — several text blocks, an
  image, an embedded resource, a resource link, structured content with and without an output
  schema, a returned error, a raised exception, audio (`result_tools()`).
- `city-practice`: shapes no other server has — two the lesson's Practice asks about, and a
  `-> list[TextContent]` tool for deep dive 6.2 (`practice_tools()`).
- `city-lowlevel`: written with `mcp`'s low-level `Server` instead of FastMCP — its errors read
  differently, and one tool answers with a JSON-RPC error instead of a result
  (`build_lowlevel_server()`).

    python -m helpers.mcp_server                # city-guide on stdin/stdout until stdin closes
    python -m helpers.mcp_server city-results   # another of the servers, by name

Start them from Python with `helpers.mcp_client`, never by hand in a notebook: the client starts the
process, talks to it, and ends it when its `async with` block ends.

Importing this module has no side effects and does not import `mcp`; `build_server()` and
`result_tools()` do.
"""

import asyncio
import base64
import os
import sys
from collections.abc import Callable
from typing import Any

from helpers.cities import ATTRACTIONS, WEATHER, attraction_report, weather_report

SERVER_NAME = "city-guide"
RESULTS_SERVER_NAME = "city-results"
PRACTICE_SERVER_NAME = "city-practice"
LOWLEVEL_SERVER_NAME = "city-lowlevel"
SERVER_NAMES = (SERVER_NAME, RESULTS_SERVER_NAME, PRACTICE_SERVER_NAME, LOWLEVEL_SERVER_NAME)
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


PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A one-pixel PNG: the picture `city_map` answers with."""


def _record(city: str) -> dict[str, Any]:
    sky, _, temp = WEATHER.get(city, "unknown, 0 °C").partition(", ")
    return {"city": city, "sky": sky, "temp_c": int(temp.split()[0])}


def result_tools() -> list[tuple[Callable[..., Any], dict[str, Any]]]:
    """Return the `city-results` server's tools as `(function, options for server.tool())` pairs.

    Each tool answers with one shape of MCP result (`CallToolResult`); FastMCP builds most of them
    from the return value and its annotation, three return a `CallToolResult` of their own:

    | tool | returns | MCP result |
    |---|---|---|
    | `temperature` | `int` | one text block `"25"`; `structuredContent={"result": 25}` (output schema); |
    | | | registered with `meta={"unit": "°C"}` (the listing's `_meta`) |
    | `forecast` | `list[str]` | two text blocks; `structuredContent={"result": [...]}` |
    | `weather_record` | a TypedDict | its JSON as text; `structuredContent` = the dict (output schema); |
    | | | registered with annotations (`ToolAnnotations(title=..., readOnlyHint=True)`) |
    | `weather_record_no_schema` | the same, `structured_output=False` | the same text only |
    | `weather_data_only` | `CallToolResult` | no content blocks, only `structuredContent` |
    | `city_map` | `Image` | one image block (base64 PNG) |
    | `city_guide` | `CallToolResult` | a text block and an embedded text resource |
    | `city_report` | `CallToolResult` | a resource link to a PDF (name, description, size) |
    | `city_sounds` | `Audio` | one audio block |
    | `find_order` | `CallToolResult` | `isError=True`, a text block and `structuredContent` |
    | `cancel_order` | raises `LookupError` | `isError=True`, FastMCP's `Error executing tool ...` text |
    | `fail_silently` | `CallToolResult` | `isError=True` and no content at all |

    Example:
        ```python
        for function, options in result_tools():
            server.tool(**options)(function)
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    from typing import TypedDict

    from mcp.server.fastmcp import Audio, Image
    from mcp.types import (
        CallToolResult,
        EmbeddedResource,
        ResourceLink,
        TextContent,
        TextResourceContents,
        ToolAnnotations,
    )

    class WeatherRecord(TypedDict):
        city: str
        sky: str
        temp_c: int

    def temperature(city: str) -> int:
        """Today's temperature in a city, in °C."""
        return _record(city)["temp_c"]

    def forecast(city: str) -> list[str]:
        """Today's sky and temperature in a city, one line each."""
        return [f"{city}: {part}" for part in WEATHER.get(city, "unknown").split(", ")]

    def weather_record(city: str) -> WeatherRecord:
        """Today's weather in a city as a record."""
        return _record(city)

    def weather_record_no_schema(city: str) -> WeatherRecord:
        """The same record, registered with structured_output=False."""
        return _record(city)

    def weather_data_only(city: str) -> CallToolResult:
        """The record as structured content, with no content blocks."""
        return CallToolResult(content=[], structuredContent=_record(city))

    def city_map(city: str) -> Image:
        """A map of a city."""
        return Image(data=PNG_1X1, format="png")

    def city_guide(city: str) -> CallToolResult:
        """A short guide to a city, with its introduction as an embedded resource."""
        intro = TextResourceContents(uri=f"guide://{city.lower()}/intro", mimeType="text/plain",
                                     text=f"{city}'s best-known sight: {ATTRACTIONS.get(city, 'unknown')}.")
        return CallToolResult(content=[
            TextContent(type="text", text=f"{city} guide:"),
            EmbeddedResource(type="resource", resource=intro),
        ])

    def city_report(city: str) -> CallToolResult:
        """A link to a city's PDF report."""
        return CallToolResult(content=[ResourceLink(
            type="resource_link", name="report.pdf", uri=f"https://example.com/{city.lower()}/report.pdf",
            mimeType="application/pdf", description=f"{city} in numbers", size=52_000,
        )])

    def city_sounds(city: str) -> Audio:
        """A recording of a city's streets."""
        return Audio(data=b"RIFF", format="wav")

    def find_order(order_id: int) -> CallToolResult:
        """Find an order by its number (every order is missing)."""
        return CallToolResult(
            isError=True,
            content=[TextContent(type="text", text=f"no order {order_id}")],
            structuredContent={"code": "not_found", "order_id": order_id},
        )

    def cancel_order(order_id: int) -> str:
        """Cancel an order by its number (every order is missing)."""
        raise LookupError(f"no order {order_id}")

    def fail_silently(city: str) -> CallToolResult:
        """Fail with no content at all."""
        return CallToolResult(isError=True, content=[])

    plain: dict[str, Any] = {}
    return [
        (temperature, {"meta": {"unit": "°C"}}), (forecast, plain),
        (weather_record, {"annotations": ToolAnnotations(title="Weather record", readOnlyHint=True)}),
        (weather_record_no_schema, {"structured_output": False}), (weather_data_only, plain),
        (city_map, plain), (city_guide, plain), (city_report, plain), (city_sounds, plain),
        (find_order, plain), (cancel_order, plain), (fail_silently, plain),
    ]


def practice_tools() -> list[tuple[Callable[..., Any], dict[str, Any]]]:
    """Return the `city-practice` server's tools as `(function, options for server.tool())` pairs.

    | tool | returns | MCP result |
    |---|---|---|
    | `weather_as_dict` | the record, as `-> dict` | its JSON as text; no `structuredContent` (no schema) |
    | `street_recording` | `CallToolResult` | `isError=True`, a text block and an audio block |
    | `forecast_blocks` | `list[TextContent]` | two text blocks; `structuredContent={"result": [...]}` |

    Example:
        ```python
        for function, options in practice_tools():
            server.tool(**options)(function)
        ```

    Taught in `notebooks/10_mcp_tools.ipynb` (its Practice).
    """
    from mcp.types import AudioContent, CallToolResult, TextContent

    def weather_as_dict(city: str) -> dict:
        """Today's weather in a city as a plain dict."""
        return _record(city)

    def street_recording(city: str) -> CallToolResult:
        """Record a city's streets (the microphone is off): an error, with what it did record."""
        return CallToolResult(isError=True, content=[
            TextContent(type="text", text=f"microphone off in {city}"),
            AudioContent(type="audio", data=base64.b64encode(b"RIFF").decode(), mimeType="audio/wav"),
        ])

    def forecast_blocks(city: str) -> list[TextContent]:
        """Today's sky and temperature in a city, as two MCP text blocks."""
        return [TextContent(type="text", text=f"{city}: {part}")
                for part in WEATHER.get(city, "unknown").split(", ")]

    return [(weather_as_dict, {}), (street_recording, {}), (forecast_blocks, {})]


SIGN_IN_URL = "https://example.com/sign-in"
"""Where `book_table` (`city-lowlevel`) asks the user to go before it can run."""


def build_lowlevel_server():
    """Return the `city-lowlevel` server: `mcp`'s low-level `Server`, with no FastMCP around it.

    Its tools, each with a hand-written JSON input schema that requires `city`:

    - `lookup_traffic` raises `ConnectionError`, like `city-guide`'s. The low-level server sends the
      exception's message alone as an `isError` result (FastMCP prefixes `Error executing tool
      <name>: `), and it validates the arguments itself: `Input validation error: ...`.
    - `book_table` raises `UrlElicitationRequiredError` (the user must open `SIGN_IN_URL` first). The
      server answers that with a JSON-RPC error, not a result, and the client raises `McpError`.

    Example:
        ```python
        async with in_process_tools(server=LOWLEVEL_SERVER_NAME) as tools:
            ...
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import UrlElicitationRequiredError

    server = Server(LOWLEVEL_SERVER_NAME)
    city_schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(name="lookup_traffic", description=lookup_traffic.__doc__, inputSchema=city_schema),
            types.Tool(name="book_table", inputSchema=city_schema,
                       description="Book a table at a city's best restaurant (the user must sign in first)."),
        ]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]):
        if name == "lookup_traffic":
            return [types.TextContent(type="text", text=await lookup_traffic(arguments["city"]))]
        if name == "book_table":
            raise UrlElicitationRequiredError([types.ElicitRequestURLParams(
                mode="url", message=f"Sign in to book a table in {arguments['city']}", url=SIGN_IN_URL,
                elicitationId="sign-in")])
        raise ValueError(f"unknown tool {name!r}")

    return server


def build_server(name: str = SERVER_NAME):
    """Return one of the course's servers with its tools registered (not yet running).

    `name` is `SERVER_NAME` (`city-guide`, the default: `TOOLS`), `RESULTS_SERVER_NAME`
    (`city-results`: `result_tools()`) or `PRACTICE_SERVER_NAME` (`city-practice`:
    `practice_tools()`), each a `FastMCP` server; or `LOWLEVEL_SERVER_NAME` (`city-lowlevel`), a
    low-level `mcp.server.lowlevel.Server` (`build_lowlevel_server()`).

    FastMCP turns each function into an MCP tool: the name and docstring become the tool's name and
    description, the type hints its JSON input schema (and, for a return type it can describe, an
    output schema). An exception raised by a tool is sent back to the client as a result with
    `isError=True`; the server keeps running.

    Raises:
        ValueError: an unknown server name (the message lists the known ones).

    Example:
        ```python
        server = build_server()
        [tool.name for tool in await server.list_tools()]
        # ['lookup_weather', 'lookup_attraction', 'lookup_traffic', 'server_pid']
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    if name not in SERVER_NAMES:
        raise ValueError(f"no MCP server named {name!r}: use one of {', '.join(map(repr, SERVER_NAMES))}")
    if name == LOWLEVEL_SERVER_NAME:
        return build_lowlevel_server()
    from mcp.server.fastmcp import FastMCP

    # Only warnings and errors reach stderr (the client's errlog file), not a line per request.
    server = FastMCP(name, log_level="WARNING")
    registered = {SERVER_NAME: lambda: [(function, {}) for function in TOOLS],
                  RESULTS_SERVER_NAME: result_tools, PRACTICE_SERVER_NAME: practice_tools}[name]()
    for function, options in registered:
        server.tool(**options)(function)
    return server


def main(argv: list[str] | None = None) -> None:
    """Serve one of the course's servers over stdio until the client closes stdin.

    `argv` (default: the command line's arguments) holds the server's name, or nothing for
    `city-guide`.

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    argv = sys.argv[1:] if argv is None else argv
    # `mcp` imports jsonschema, which builds IRI grammars at import time when the optional
    # `rfc3987-syntax` package is installed. The lock leaves it out (scripts/lock-overrides.txt), but
    # a plain `pip install -r requirements.txt` brings it back with JupyterLab's dependencies. This
    # server validates no IRIs, and skipping that import makes each start seconds faster there.
    sys.modules.setdefault("rfc3987_syntax", None)
    name = argv[0] if argv else SERVER_NAME
    server = build_server(name)
    if name != LOWLEVEL_SERVER_NAME:
        server.run("stdio")  # FastMCP's own runner
        return
    import anyio
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
