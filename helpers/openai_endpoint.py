"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script.

It lets the real `ChatOpenAI` client (langchain-openai → openai SDK → HTTP) run end to end with no
network and no key, and it records every request and response, so a lesson can show the exact
JSON a model receives (the `tools` array) and sends back (`tool_calls`).

What it answers is decided by `helpers.models.ScriptedChatModel` — the same script, turn rule,
tool-call ids and streaming pieces as the offline model — so there is one source of truth.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from helpers.models import ScriptedChatModel, ScriptError, Turn, arguments_json, turn_of

CREATED = 0
"""The `created` timestamp of every response: fixed, so recorded responses print identically."""
USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
"""The `usage` of every response: the scripted server counts no tokens, but clients expect the field."""


@dataclass(frozen=True)
class Exchange:
    """One request the endpoint received and what it sent back.

    `response` is the JSON body, or for `stream=true` the list of JSON chunks sent as
    server-sent events (the final `data: [DONE]` line is not listed).
    """

    path: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any] | list[dict[str, Any]]


def wire_to_messages(wire: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """Turn a chat-completions `messages` array back into LangChain messages.

    Raises:
        ValueError: a message has a role chat completions does not define.
    """
    messages: list[BaseMessage] = []
    for item in wire:
        role, content = item.get("role"), item.get("content") or ""
        if role in {"system", "developer"}:
            messages.append(SystemMessage(content=content))
        elif role == "user":
            messages.append(HumanMessage(content=content))
        elif role == "assistant":
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"] or "{}"),
                    "id": call["id"],
                }
                for call in item.get("tool_calls") or []
            ]
            messages.append(AIMessage(content=content, tool_calls=calls))
        elif role == "tool":
            messages.append(ToolMessage(content=content, tool_call_id=item["tool_call_id"]))
        else:
            raise ValueError(f"unknown role {role!r} in the request's messages")
    return messages


def unanswered_on_the_wire(wire: Sequence[Mapping[str, Any]]) -> list[str]:
    """The tool-call ids of wire messages that no `tool` message answers before the next turn.

    Taught in `notebooks/13_failure_and_recovery.ipynb`.
    """
    missing: list[str] = []
    pending: list[str] = []
    for message in wire:
        if message.get("role") == "tool":
            pending = [call_id for call_id in pending if call_id != message.get("tool_call_id")]
            continue
        missing += pending
        calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
        pending = [call["id"] for call in calls]
    return missing + pending


def unrequested_on_the_wire(wire: Sequence[Mapping[str, Any]]) -> str | None:
    """OpenAI's 400 message for the first `tool` message that answers no call, or None.

    A `tool` message must follow an assistant message with `tool_calls` (directly, or after other
    `tool` messages answering it) and name one of its call ids. These are OpenAI's own wordings, its
    spelling included: a `tool` message with no such assistant message before it (an answer whose
    call was deleted, one appended after a user message), and one whose `tool_call_id` that message
    did not make.

    Taught in `notebooks/13_failure_and_recovery.ipynb`.
    """
    calls: list[str] | None = None  # the call ids of the assistant message the tool messages follow
    for message in wire:
        if message.get("role") != "tool":
            made = message.get("tool_calls") if message.get("role") == "assistant" else None
            calls = [call["id"] for call in made] if made else None
            continue
        if calls is None:
            return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.")
        if message.get("tool_call_id") not in calls:
            return (f"Invalid parameter: 'tool_call_id' of '{message.get('tool_call_id')}' not found in "
                    "'tool_calls' of previous message.")
    return None


def message_to_wire(message: AIMessage) -> dict[str, Any]:
    """An AIMessage as the `choices[0].message` object of a chat-completions response."""
    wire: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments_json(call["args"])},
            }
            for call in message.tool_calls
        ]
    return wire


def chunk_to_delta(chunk: AIMessageChunk, first: bool) -> dict[str, Any]:
    """One streamed AIMessageChunk as the `delta` of a `chat.completion.chunk`."""
    calls = []
    for piece in chunk.tool_call_chunks:
        call: dict[str, Any] = {"index": piece["index"]}
        if piece.get("id"):
            call.update(id=piece["id"], type="function")
        function = {"name": piece["name"]} if piece.get("name") else {}
        function["arguments"] = piece.get("args") or ""
        call["function"] = function
        calls.append(call)
    delta: dict[str, Any] = {"role": "assistant", "content": None if calls else ""} if first else {}
    if chunk.content:
        delta["content"] = chunk.content
    if calls:
        delta["tool_calls"] = calls
    return delta


class ScriptedOpenAIEndpoint:
    """A local OpenAI-compatible server that answers `POST /v1/chat/completions` from a script.

    JSON responses and `stream=true` server-sent events (text deltas and tool-call deltas, the
    usage chunk when `stream_options.include_usage` asks for it) are both supported, as is
    `GET /v1/models`. It listens on 127.0.0.1 on a free port chosen by the OS, in a background
    thread. When a proxy is set (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`), starting it adds
    `127.0.0.1` to `NO_PROXY`/`no_proxy` in this process, so a client built afterwards (a plain
    `ChatOpenAI`, httpx, requests) talks to it directly instead of sending it to the proxy. A
    request the script cannot answer (too few turns, a tool the request did not send) gets an
    OpenAI-style 400 error whose message says why.

    Args:
        script: the turns, exactly as for `ScriptedChatModel`.
        check_history: reject, as OpenAI does, a request whose history has an assistant message
            with `tool_calls` not followed by a tool message for each call id, or a tool message
            that answers no call of the assistant message before it (a 400 with OpenAI's wording;
            the first check runs first). Off by default, so lessons can send any history on
            purpose.

    Example:
        ```python
        with ScriptedOpenAIEndpoint(script) as endpoint:
            llm = ChatOpenAI(model="gpt-4o", base_url=endpoint.base_url, api_key="unused",
                             use_responses_api=False).bind_tools(tools)
            llm.invoke("Weather in Paris?")
            endpoint.requests[0]["tools"]     # the JSON schemas the model received
        ```

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """

    def __init__(self, script: Sequence[Turn], *, check_history: bool = False) -> None:
        self.model = ScriptedChatModel(script=list(script))
        self.check_history = check_history
        self._exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ScriptedOpenAIEndpoint:
        """Start serving in a daemon thread (idempotent); returns `self`."""
        if self._server is None:
            server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            server.daemon_threads = True
            server.endpoint = self  # type: ignore[attr-defined]
            server.handle_error = self._handle_error  # type: ignore[method-assign]
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},  # how long stop() may wait
                name="scripted-openai-endpoint",
                daemon=True,
            )
            self._thread.start()
            bypass_proxy_for("127.0.0.1")
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = self._thread = None

    def __enter__(self) -> ScriptedOpenAIEndpoint:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`: pass it as `base_url` or `OPENAI_BASE_URL`."""
        if self._server is None:
            raise RuntimeError("The endpoint is not running: use `with ScriptedOpenAIEndpoint(...)` "
                               "or call `.start()` first.")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # -- what was said -------------------------------------------------------------------------
    @property
    def exchanges(self) -> list[Exchange]:
        """Every request and response so far, in the order the requests arrived."""
        with self._lock:
            return list(self._exchanges)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completions requests received, in order."""
        return [e.request for e in self.exchanges]

    def reset(self) -> None:
        """Forget the recorded exchanges."""
        with self._lock:
            self._exchanges.clear()

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def _handle_error(self, request: Any, client_address: Any) -> None:
        # socketserver would print the traceback to stderr; a broken client connection is not
        # the lesson's business, and anything else already became a 500 response.
        pass

    # -- answering -----------------------------------------------------------------------------
    def answer(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        """Decide the response to one chat-completions request body: (status, JSON or chunks)."""
        if self.check_history and (missing := unanswered_on_the_wire(body.get("messages") or [])):
            return 400, _error(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                + ", ".join(missing))
        if self.check_history and (unrequested := unrequested_on_the_wire(body.get("messages") or [])):
            return 400, _error(unrequested)
        try:
            messages = wire_to_messages(body.get("messages") or [])
            tools = body.get("tools")
            head = {"id": f"chatcmpl-scripted-{turn_of(messages)}", "created": CREATED,
                    "model": body.get("model", "scripted")}
            if not body.get("stream"):
                message = self.model.reply(messages, tools)
                return 200, {
                    **head,
                    "object": "chat.completion",
                    "choices": [{
                        "index": 0,
                        "message": message_to_wire(message),
                        "logprobs": None,
                        "finish_reason": message.response_metadata["finish_reason"],
                    }],
                    "usage": dict(USAGE),
                }
            chunks = list(self._stream_chunks(head, messages, tools))
            if (body.get("stream_options") or {}).get("include_usage"):
                chunks.append({**head, "object": "chat.completion.chunk", "choices": [],
                               "usage": dict(USAGE)})
            return 200, chunks
        except (ScriptError, ValueError, KeyError, TypeError) as exc:
            return 400, _error(str(exc))

    def _stream_chunks(self, head, messages, tools) -> Iterator[dict[str, Any]]:
        for index, chunk in enumerate(self.model.reply_chunks(messages, tools)):
            finish = chunk.response_metadata.get("finish_reason")
            yield {
                **head,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": chunk_to_delta(chunk, first=index == 0),
                             "logprobs": None, "finish_reason": finish}],
            }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked transfer for the event stream
    timeout = 30  # a client that stops mid-request gives its thread back eventually
    server_version = "ScriptedOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # the default writes every request to stderr, which strict nbval compares

    @property
    def endpoint(self) -> ScriptedOpenAIEndpoint:
        return self.server.endpoint  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": "scripted", "object": "model", "created": CREATED, "owned_by": "toolnode-lab"}
            ]})
        else:
            self._send_json(404, _error(f"no route GET {self.path}; try GET /v1/models"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error(
                f"no route POST {self.path}: this server speaks /v1/chat/completions only "
                "(with ChatOpenAI, pass use_responses_api=False)"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self._send_json(400, _error(f"the request body is not JSON: {exc}"))
            return
        try:
            status, payload = self.endpoint.answer(body)
        except Exception as exc:  # the client must get an answer, never a hang
            status, payload = 500, _error(f"{type(exc).__name__}: {exc}")
        self.endpoint._record(Exchange(self.path, body, status, payload))
        if isinstance(payload, list):
            self._send_events(payload)
        else:
            self._send_json(status, payload)

    def end_headers(self) -> None:
        # One request per connection: a pooled keep-alive connection would outlive the event loop
        # of an `asyncio.run` that opened it, and its client would fail on the next run.
        self.send_header("Connection", "close")
        self.close_connection = True
        super().end_headers()

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks]
        for event in [*events, "data: [DONE]\n\n"]:
            data = event.encode()
            self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def bypass_proxy_for(host: str, env: dict[str, str] | None = None) -> bool:
    """Add `host` to `NO_PROXY` and `no_proxy` when a proxy is set and does not already skip it.

    httpx (under the openai SDK), requests and curl send every request through `HTTP_PROXY` /
    `HTTPS_PROXY` / `ALL_PROXY` unless `NO_PROXY` names the host, so with a proxy configured a
    server on 127.0.0.1 answers "Connection error". Called by `ScriptedOpenAIEndpoint.start`.

    Returns:
        True when the environment was changed.
    """
    env = os.environ if env is None else env
    if not any(env.get(name) for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
                                          "ALL_PROXY", "all_proxy")):
        return False
    changed = False
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h.strip() for h in env.get(name, "").split(",") if h.strip()]
        if host not in hosts and "*" not in hosts:
            env[name] = ",".join([*hosts, host])
            changed = True
    return changed


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
