"""Start the course's MCP server (`helpers.mcp_server`) as a stdio subprocess and load its tools
with `langchain-mcp-adapters`, so that it works in any kernel and never outlives its `async with`.

Two things make this more than three lines of `mcp` code:

- **A real errlog file.** `mcp.client.stdio.stdio_client` hands the server's stderr to
  `subprocess`, which needs a real file descriptor. Its default is `sys.stderr`; ipykernel gives a
  kernel's `sys.stderr` a descriptor only on Linux and macOS and not under pytest, so in JupyterLab on
  Windows and in a kernel run by nbval starting the server fails with
  `io.UnsupportedOperation: fileno`. Every session here writes the server's stderr to a temporary
  file instead, and quotes that file when the server fails to start.
- **Cleanup, always.** The server is a child process owned by an `async with` block: when the block
  ends, normally or by an exception, the client closes the server's stdin and waits for it to exit
  (terminating it if it does not). An error raised inside the block comes out as itself, not wrapped
  in the `ExceptionGroup` that the transport's task group would otherwise add.

Taught in `notebooks/10_mcp_tools.ipynb`.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from helpers.mcp_server import RESULTS_SERVER_NAME, SERVER_NAME

STARTUP_TIMEOUT = 30.0
"""Seconds the server may take to answer the MCP handshake before the start counts as failed."""


class MCPServerError(RuntimeError):
    """The MCP server process did not complete the handshake; the message quotes its stderr."""


def server_parameters(module: str = "helpers.mcp_server", *, server: str | None = None):
    """Return the `StdioServerParameters` that start `python -m <module> [server]` with this interpreter.

    Using `sys.executable` (not a bare `python`) makes the server run in the same environment as
    the notebook, where `helpers` and `mcp` are installed. `server` names one of the module's
    servers (`helpers.mcp_server.SERVER_NAMES`: `city-guide`, the default, then `city-results`,
    `city-practice` and `city-lowlevel`).

    Example:
        ```python
        async with stdio_client(server_parameters(), errlog=errlog_file) as (read, write):
            ...
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", module, *([server] if server else [])])


def server_connection(module: str = "helpers.mcp_server", *, server: str | None = None) -> dict[str, Any]:
    """Return the same server as a `MultiServerMCPClient` connection (`transport="stdio"`).

    Example:
        ```python
        client = MultiServerMCPClient({SERVER_NAME: server_connection()})
        tools = await client.get_tools()   # a new server process for every tool call
        ```

    The adapter's own stdio sessions use `stdio_client`'s default errlog, `sys.stderr`: fine in a
    script and in JupyterLab on Linux and macOS, `io.UnsupportedOperation: fileno` in a kernel on
    Windows or under nbval. Notebooks use `mcp_tools()` instead.

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    params = server_parameters(module, server=server)
    return {"transport": "stdio", "command": params.command, "args": list(params.args)}


def _only_leaf(error: BaseException) -> BaseException | None:
    """The one exception inside nested single-member exception groups, else None."""
    while isinstance(error, BaseExceptionGroup):
        if len(error.exceptions) != 1:
            return None
        error = error.exceptions[0]
    return error


def _stderr_text(errlog) -> str:
    errlog.flush()
    errlog.seek(0)
    text = errlog.read().strip()
    return text[-2000:] if text else "(the server wrote nothing to stderr)"


@asynccontextmanager
async def open_session(
    module: str = "helpers.mcp_server", *, server: str | None = None, errlog=None
) -> AsyncIterator[Any]:
    """Start the MCP server as a subprocess and yield an initialised `mcp.ClientSession`.

    The process lives exactly as long as the `async with` block. Its stderr goes to `errlog`, a
    temporary file unless you pass an open file of your own (it must have a real file descriptor:
    `io.StringIO` does not). `server` picks one of the module's servers (see `server_parameters`).

    Raises:
        MCPServerError: the server did not complete the MCP handshake (its stderr is quoted).
        io.UnsupportedOperation: `errlog` has no file descriptor.

    Example:
        ```python
        async with open_session() as session:
            result = await session.call_tool("lookup_weather", {"city": "Paris"})
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    own_errlog = errlog is None
    if own_errlog:
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8")
    leaf = None
    try:
        async with (
            stdio_client(server_parameters(module, server=server), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            try:
                with anyio.fail_after(STARTUP_TIMEOUT):
                    await session.initialize()
            except Exception as exc:
                command = " ".join(["python", "-m", module, *([server] if server else [])])
                raise MCPServerError(
                    f"The MCP server `{command}` did not start ({type(exc).__name__}: {exc}). "
                    f"Its stderr:\n{_stderr_text(errlog)}\nRun `{command}` in a terminal to "
                    "see the problem; check that the module exists in this environment."
                ) from exc
            yield session
    except BaseExceptionGroup as group:
        leaf = _only_leaf(group)
        if leaf is None:
            raise
    finally:
        if own_errlog:
            errlog.close()
    if leaf is not None:
        # Raised outside the `except` block, so the error is not chained to the group that holds
        # it. Raised inside, IPython showed it as plain text on stderr instead of as an error.
        raise leaf


@asynccontextmanager
async def mcp_tools(
    module: str = "helpers.mcp_server", *, server: str | None = None, **load_options: Any
) -> AsyncIterator[list]:
    """Start the server, yield its tools as LangChain tools bound to ONE persistent session.

    `load_options` go to `langchain_mcp_adapters.tools.load_mcp_tools` (e.g.
    `handle_tool_errors=False`). The tools work only inside the block: afterwards the server is gone.
    `server` picks one of the module's servers (see `server_parameters`).

    Example:
        ```python
        async with mcp_tools() as tools:
            result = await ToolNode(tools).ainvoke({"messages": [ai_message]}, runtime=Runtime())
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    from langchain_mcp_adapters.tools import load_mcp_tools

    async with open_session(module, server=server) as session:
        yield await load_mcp_tools(session, server_name=server or SERVER_NAME, **load_options)


@asynccontextmanager
async def in_process_tools(server: str = RESULTS_SERVER_NAME, **load_options: Any) -> AsyncIterator[list]:
    """Yield the tools of one of `helpers.mcp_server`'s servers, run in THIS process.

    The same server as `mcp_tools(server=...)` (any name in `helpers.mcp_server.SERVER_NAMES`, the
    low-level `city-lowlevel` too) and the same MCP messages, carried by in-memory streams
    (`mcp.shared.memory`) instead of a child process's stdin and stdout: no process to start, so a
    session opens in milliseconds (the Practice scenarios use it), and no errlog. `load_options` go
    to `load_mcp_tools`. The tools work only inside the block.

    Example:
        ```python
        async with in_process_tools(handle_tool_errors=False) as tools:
            await ToolNode(tools).ainvoke({"messages": [ai_message]}, runtime=Runtime())
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp.shared.memory import create_connected_server_and_client_session

    from helpers.mcp_server import build_server

    leaf = None
    try:
        async with create_connected_server_and_client_session(build_server(server)) as session:
            yield await load_mcp_tools(session, server_name=server, **load_options)
    except BaseExceptionGroup as group:
        leaf = _only_leaf(group)
        if leaf is None:
            raise
    if leaf is not None:
        raise leaf


class SessionPerCall:
    """A stand-in for `mcp.ClientSession` that starts a fresh server for every request.

    It has the two methods `load_mcp_tools` and its tools use, `list_tools` and `call_tool`; each
    opens its own `open_session()`, so every tool call pays for a process start, an MCP handshake
    and a shutdown. That is what `MultiServerMCPClient.get_tools()` does, with a real errlog file.

    Example:
        ```python
        tools = await load_mcp_tools(SessionPerCall())
        await tools[0].ainvoke({"city": "Paris"})   # starts and stops one server process
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """

    def __init__(self, module: str = "helpers.mcp_server") -> None:
        self.module = module

    async def list_tools(self, cursor: str | None = None, **options: Any):
        async with open_session(self.module) as session:
            return await session.list_tools(cursor=cursor, **options)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None, **options: Any):
        async with open_session(self.module) as session:
            return await session.call_tool(name, arguments, **options)


def process_running(pid: int) -> bool:
    """True while a process with this id exists and has not exited (zombies count as exited).

    Example:
        ```python
        async with open_session() as session:
            pid = (await session.call_tool("server_pid", {})).structuredContent["result"]
            process_running(pid)   # True
        process_running(pid)       # False: the block ended the server
        ```

    Taught in `notebooks/10_mcp_tools.ipynb`.
    """
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
