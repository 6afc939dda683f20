"""Chat models for the course: a scripted, offline tool-calling model by default, a real
OpenAI (or OpenAI-compatible) model only when one environment variable asks for it.

None of langchain-core's fake chat models implements `bind_tools`, so the course has its own:
`ScriptedChatModel` is a real `BaseChatModel` whose `bind_tools` converts tools exactly the way
`ChatOpenAI` does, and whose reply is picked by *where the conversation is*, not by a counter,
so any cell can be re-run and gives the same answer.
"""

from __future__ import annotations

import copy
import json
import os
import re
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

ToolCallSpec = Mapping[str, Any]
"""`{"name": ..., "args": {...}}` and optionally `"id"`: one tool call a scripted turn makes."""

Turn = str | AIMessage | Sequence[ToolCallSpec] | Callable[[list[BaseMessage]], Any]
"""One scripted reply: final text, a ready AIMessage, a list of tool calls, or a function of the
conversation that returns one of those."""

MODEL_ENV = "TOOLNODE_LAB_MODEL"
"""Set to `openai` to use a real model; unset (or `scripted`) keeps the offline scripted model."""
MODEL_NAME_ENV = "TOOLNODE_LAB_MODEL_NAME"
"""The model to ask for when the real-model switch is on (required with `OPENAI_BASE_URL`)."""
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""The model used on OpenAI itself when `TOOLNODE_LAB_MODEL_NAME` is not set."""

_TEXT_PIECE = re.compile(r"[^，。；：、,.;:!?！？\s]*[，。；：、,.;:!?！？\s]*")
_JSON_PIECE = re.compile(r"\w+|[^\w]+")


class ScriptError(ValueError):
    """The script does not fit the conversation (too few turns, or a tool that is not bound)."""


def tool_results_summary(messages: list[BaseMessage]) -> str:
    """A final answer made of the ToolMessages since the last AI turn, joined with `; `.

    Use it as the last turn of a script: `ScriptedChatModel(script=[calls, tool_results_summary])`.
    It reads each message's `.text`, so content blocks (MCP tools return a list of them) give the
    same answer as plain strings.

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.append(message.text)
    return "; ".join(reversed(results)) or "(no tool results)"


def turn_of(messages: Sequence[BaseMessage]) -> int:
    """The scripted turn that answers this conversation: how many AI messages it already holds.

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    return sum(isinstance(m, AIMessage) for m in messages)


def arguments_json(args: Mapping[str, Any]) -> str:
    """Tool-call arguments as the JSON string an OpenAI model sends (compact, UTF-8 kept).

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def split_text(text: str) -> list[str]:
    """Split a reply into the pieces a streaming model sends: one clause (up to punctuation) each.

    `"".join(split_text(text)) == text` always holds.
    """
    return [piece for piece in _TEXT_PIECE.findall(text) if piece]


def split_arguments(arguments: str) -> list[str]:
    """Split an arguments JSON string into token-like fragments, as OpenAI streams them.

    `'{"city":"Paris"}'` → `['{"', 'city', '":"', 'Paris', '"}']`.
    """
    return _JSON_PIECE.findall(arguments)


class ScriptedChatModel(BaseChatModel):
    """A deterministic tool-calling chat model that answers from a script, with no network.

    Turn *k* of the script answers a conversation that already holds *k* AI messages, so the
    reply depends only on the messages passed in: re-running a cell, streaming, or calling from
    several threads gives the same answer. Tool-call ids are `call_<turn>_<index>` and message
    ids `scripted-<turn>` unless the script names them.

    Like a real model it only calls tools it was given: `bind_tools` converts them with
    `convert_to_openai_tool` (as `ChatOpenAI` does), and a scripted call to a tool that is not
    bound raises `ScriptError`.

    Args:
        script: the replies, in order. Each is final text (`"done"`), a list of tool calls
            (`[{"name": "lookup_weather", "args": {"city": "Paris"}}]`), a ready `AIMessage`, or a
            function of the conversation that returns one of those.

    Example:
        ```python
        model = ScriptedChatModel(script=[
            [{"name": "lookup_weather", "args": {"city": "Paris"}}],
            tool_results_summary,
        ]).bind_tools(make_city_tools())
        model.invoke("Weather in Paris?").tool_calls
        # [{'name': 'lookup_weather', 'args': {'city': 'Paris'}, 'id': 'call_0_0', 'type': 'tool_call'}]
        ```

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """

    script: list[Any]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"script_turns": len(self.script)}

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | None = None,
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way `ChatOpenAI.bind_tools` does: as OpenAI tool schemas.

        The schemas are what the model "sees" (and what `ChatOpenAI` sends as the request's
        `tools` array); the script may only call tools named there.
        """
        formatted = [convert_to_openai_tool(tool, strict=strict) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    # -- the one place a reply is decided ------------------------------------------------------
    def reply(self, messages: Sequence[BaseMessage], tools: Sequence[Mapping] | None = None) -> AIMessage:
        """Return the scripted AIMessage for this conversation (no callbacks, no streaming).

        Args:
            messages: the conversation so far; its number of AI messages picks the turn.
            tools: the bound tool schemas (OpenAI format); scripted calls must name one of them.

        Raises:
            ScriptError: the script has no turn for this conversation, or it calls a tool that
                is not among `tools`.
        """
        messages = list(messages)
        turn = turn_of(messages)
        if turn >= len(self.script):
            raise ScriptError(
                f"ScriptedChatModel has {len(self.script)} scripted turn(s) but the conversation "
                f"already holds {turn} AI message(s). Add a turn to the script, or start from a "
                "fresh conversation."
            )
        step = self.script[turn]
        if callable(step):
            step = step(messages)
        if isinstance(step, str):
            message = AIMessage(content=step)
        elif isinstance(step, AIMessage):
            message = copy.deepcopy(step)  # never hand out (and let callers mutate) the script
        else:
            calls = [
                {
                    "name": spec["name"],
                    "args": copy.deepcopy(dict(spec.get("args", {}))),
                    "id": spec.get("id", f"call_{turn}_{index}"),
                    "type": "tool_call",
                }
                for index, spec in enumerate(step)
            ]
            message = AIMessage(content="", tool_calls=calls)
        self._check_tools(message, tools)
        if message.id is None:
            message.id = f"scripted-{turn}"
        message.response_metadata = {
            "model_name": "scripted",
            "finish_reason": "tool_calls" if message.tool_calls else "stop",
        }
        return message

    @staticmethod
    def _check_tools(message: AIMessage, tools: Sequence[Mapping] | None) -> None:
        if not message.tool_calls:
            return
        bound = [t["function"]["name"] for t in tools or []]
        for call in message.tool_calls:
            if call["name"] not in bound:
                hint = (
                    "No tools are bound: call `model.bind_tools([...])` first, as with a real model."
                    if not bound
                    else f"Bound tools: {bound}. Bind the tool, or fix the name in the script."
                )
                raise ScriptError(
                    f"The script calls tool {call['name']!r}, which is not bound to the model. {hint}"
                )

    def reply_chunks(
        self, messages: Sequence[BaseMessage], tools: Sequence[Mapping] | None = None
    ) -> Iterator[AIMessageChunk]:
        """The scripted reply as a streaming OpenAI model sends it.

        Text comes clause by clause; each tool call comes as a first chunk with its id, name and
        empty arguments, then its arguments JSON in token-like fragments; a last empty chunk
        carries the finish reason. Adding the chunks up gives `reply(messages, tools)` back.
        """
        message = self.reply(messages, tools)
        for piece in split_text(str(message.content)) if message.content else []:
            yield AIMessageChunk(content=piece, id=message.id)
        for index, call in enumerate(message.tool_calls):
            first = tool_call_chunk(name=call["name"], args="", id=call["id"], index=index)
            yield AIMessageChunk(content="", id=message.id, tool_call_chunks=[first])
            for fragment in split_arguments(arguments_json(call["args"])):
                rest = tool_call_chunk(name=None, args=fragment, id=None, index=index)
                yield AIMessageChunk(content="", id=message.id, tool_call_chunks=[rest])
        yield AIMessageChunk(
            content="",
            id=message.id,
            response_metadata=message.response_metadata,
            chunk_position="last",
        )

    # -- BaseChatModel hooks -------------------------------------------------------------------
    # langchain-core reports every streamed chunk to the callbacks (which is how LangGraph's
    # stream_mode="messages" sees them), so the hooks below must not report them again.
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self.reply(messages, kwargs.get("tools"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        # No I/O to wait for: answer on the event loop instead of in a thread pool.
        return self._generate(messages, stop, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self.reply_chunks(messages, kwargs.get("tools")):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._stream(messages, stop, **kwargs):
            yield chunk


class RealModelConfigError(RuntimeError):
    """The real-model switch is on but the settings it needs are missing or wrong."""


class RealModelUnavailableError(RealModelConfigError):
    """The real model was asked and did not answer usefully: no connection, key refused, unknown
    model, or a server that does not speak the OpenAI API. The message says what to do.

    Raised by the chat model `get_chat_model` returns (on `invoke`, `stream` and their async
    forms) and by `ping_model`. Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """


PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
"""The variables httpx (and so the openai SDK) reads a proxy from."""
LOCAL_SERVERS = (
    "Ollama: `ollama serve`, http://127.0.0.1:11434/v1; LM Studio: its local server, "
    "http://127.0.0.1:1234/v1; vLLM: `vllm serve <model>`, http://127.0.0.1:8000/v1"
)


def mask_url(url: str | None) -> str:
    """A URL safe to print: `http://user:pass@host/v1` → `http://user:***@host/v1`.

    Every message of the course that shows `OPENAI_BASE_URL` or a proxy URL goes through this, as
    the API key is never shown. Used by `get_chat_model` and `python -m courseware.doctor`.
    """
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return parts._replace(netloc=f"{user}:***@{netloc[1]}").geturl()


def is_loopback(url: str | None) -> bool:
    """True when `url` points at this machine (`127.0.0.1`, `localhost`, `::1`)."""
    import ipaddress

    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def proxy_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The proxy variables that are set, as `{name: masked URL}`."""
    env = os.environ if env is None else env
    return {name: mask_url(env[name]) for name in PROXY_VARS if env.get(name)}


def loopback_client_options() -> dict[str, Any]:
    """`ChatOpenAI` options that make it ignore proxy settings: for a server on this machine.

    httpx sends every request through `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` unless `NO_PROXY`
    names the host, so with a corporate proxy set a local server (Ollama, the course's scripted
    endpoint) fails with "Connection error". A client built with `trust_env=False` never asks a
    proxy; `http_socket_options=()` keeps langchain-openai from wrapping it in its own transport.

    Example:
        ```python
        ChatOpenAI(model="qwen2.5", base_url="http://127.0.0.1:11434/v1", api_key="unused",
                   **loopback_client_options())
        ```

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    import openai

    return {
        "http_client": openai.DefaultHttpxClient(trust_env=False),
        "http_async_client": openai.DefaultAsyncHttpxClient(trust_env=False),
        "http_socket_options": (),
    }


def _where(base_url: str | None) -> str:
    return f"OPENAI_BASE_URL={mask_url(base_url)}" if base_url else "OpenAI (https://api.openai.com/v1)"


def _unreachable(base_url: str | None, error: BaseException, env: Mapping[str, str]) -> str:
    """The message for a real model that could not be reached: what to check, in order."""
    if base_url and is_loopback(base_url):
        todo = f"Start the server ({LOCAL_SERVERS}), or fix OPENAI_BASE_URL"
    else:
        proxies = proxy_settings(env)
        via = f" (requests go through the proxy {', '.join(f'{k}={v}' for k, v in proxies.items())}: " \
              "check it too)" if proxies else ""
        todo = f"Check this machine's network connection{via}"
        todo += ", or fix OPENAI_BASE_URL" if base_url else ""
    return (
        f"The real model at {_where(base_url)} did not answer ({type(error).__name__}: {error}). {todo}; "
        "`python -m courseware.doctor` tests the settings with one real request. Or unset "
        f"{MODEL_ENV} and restart the kernel to run the lesson on the offline scripted model."
    )


def _explain(error: BaseException, base_url: str | None, model: str, env: Mapping[str, str]) -> str:
    import openai

    where = _where(base_url)
    offline = f"or unset {MODEL_ENV} and restart the kernel to use the offline scripted model"
    if isinstance(error, openai.AuthenticationError):
        return (f"The real model at {where} refused the API key (401). Set OPENAI_API_KEY to a valid "
                f"key, {offline}.")
    if isinstance(error, openai.NotFoundError):
        return (f"{where} answered 404 for model {model!r}: set {MODEL_NAME_ENV} to a model that server "
                "serves (Ollama: `ollama list`), and check that OPENAI_BASE_URL is its OpenAI-compatible "
                f"root (it usually ends in /v1), {offline}.")
    return _unreachable(base_url, error, env)


def real_model_requested(env: Mapping[str, str] | None = None) -> bool:
    """True when `TOOLNODE_LAB_MODEL=openai` asks for a real model instead of the scripted one.

    Raises:
        RealModelConfigError: the variable holds something other than `openai` or `scripted`.

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    env = os.environ if env is None else env
    choice = env.get(MODEL_ENV, "scripted").strip().lower()
    if choice not in {"", "scripted", "openai"}:
        raise RealModelConfigError(
            f"{MODEL_ENV}={choice!r} is not understood. Use {MODEL_ENV}=openai for a real model "
            f"(OpenAI, or an OpenAI-compatible server via OPENAI_BASE_URL), or unset it for the "
            "offline scripted model."
        )
    return choice == "openai"


def check_server(base_url: str, *, timeout: float = 2.0) -> None:
    """Fail fast, with what to set, when nothing listens at an OpenAI-compatible base URL.

    Opens (and closes) one TCP connection to the URL's host and port: no request is sent.

    Raises:
        RealModelConfigError: the URL is not http(s), or nothing accepts connections there.

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise RealModelConfigError(
            f"OPENAI_BASE_URL={mask_url(base_url)!r} is not an http(s) URL. Set it to the server's "
            "OpenAI-compatible root, e.g. OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (Ollama)."
        )
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise RealModelConfigError(
            f"Nothing answers at OPENAI_BASE_URL={mask_url(base_url)} ({type(exc).__name__}). Start the "
            f"server ({LOCAL_SERVERS}), or fix OPENAI_BASE_URL, or unset "
            f"{MODEL_ENV} to stay on the offline scripted model."
        ) from None


def _course_chat_openai():
    """`ChatOpenAI` whose connection and key errors say what to do (built on first use)."""
    global _CourseChatOpenAI
    if _CourseChatOpenAI is not None:
        return _CourseChatOpenAI
    import openai
    from langchain_openai import ChatOpenAI

    errors = (openai.APIConnectionError, openai.AuthenticationError, openai.NotFoundError)

    class CourseChatOpenAI(ChatOpenAI):
        """`ChatOpenAI` from `get_chat_model`: the same model, with errors that name the fix.

        A connection failure, a refused key or an unknown model raises
        `RealModelUnavailableError` (chained to the SDK's error) instead of a bare
        `Connection error.`. Taught in `notebooks/04_tools_condition_loop.ipynb`.
        """

        def _course_error(self, error: BaseException) -> RealModelUnavailableError:
            return RealModelUnavailableError(
                _explain(error, self.openai_api_base, self.model_name, os.environ))

        def _generate(self, *args: Any, **kwargs: Any):
            try:
                return super()._generate(*args, **kwargs)
            except errors as error:
                raise self._course_error(error) from error

        async def _agenerate(self, *args: Any, **kwargs: Any):
            try:
                return await super()._agenerate(*args, **kwargs)
            except errors as error:
                raise self._course_error(error) from error

        def _stream(self, *args: Any, **kwargs: Any):
            try:
                yield from super()._stream(*args, **kwargs)
            except errors as error:
                raise self._course_error(error) from error

        async def _astream(self, *args: Any, **kwargs: Any):
            try:
                async for chunk in super()._astream(*args, **kwargs):
                    yield chunk
            except errors as error:
                raise self._course_error(error) from error

    _CourseChatOpenAI = CourseChatOpenAI
    return CourseChatOpenAI


_CourseChatOpenAI = None


def ping_model(env: Mapping[str, str] | None = None, *, timeout: float = 5.0) -> str:
    """Make one cheap real request to the model the real-model switch selects; say what answered.

    Lists the server's models (`GET /models`) and checks that `TOOLNODE_LAB_MODEL_NAME` is among
    them; a server that does not list models must answer a one-token chat completion instead.
    A TCP connection alone proves nothing: any web server accepts one. Used by
    `python -m courseware.doctor`.

    Returns:
        What answered, e.g. `OPENAI_BASE_URL=http://127.0.0.1:11434/v1 lists 'qwen2.5'`.

    Raises:
        RealModelConfigError: a setting is missing (see `get_chat_model`).
        RealModelUnavailableError: no answer, key refused, unknown model, or not an OpenAI API.
    """
    import openai

    env = os.environ if env is None else env
    model = get_chat_model(env=env, check=False)
    base_url, name = model.openai_api_base, model.model_name
    where = _where(base_url)
    options: dict[str, Any] = {"timeout": timeout, "max_retries": 0}
    if base_url and is_loopback(base_url):
        options["http_client"] = openai.DefaultHttpxClient(trust_env=False, timeout=timeout)
    client = openai.OpenAI(api_key=model.openai_api_key.get_secret_value(), base_url=base_url, **options)
    offline = f"or unset {MODEL_ENV} to stay on the offline scripted model"
    try:
        with client:
            try:
                names = [item.id for item in client.models.list()]
            except (openai.APIConnectionError, openai.AuthenticationError) as error:
                raise RealModelUnavailableError(_explain(error, base_url, name, env)) from None
            except openai.APIError as listing:
                status = getattr(listing, "status_code", type(listing).__name__)
                try:
                    client.chat.completions.create(
                        model=name, max_tokens=1, messages=[{"role": "user", "content": "Say OK"}])
                except (openai.APIConnectionError, openai.AuthenticationError) as error:
                    raise RealModelUnavailableError(_explain(error, base_url, name, env)) from None
                except openai.APIError as error:
                    answer = getattr(error, "status_code", type(error).__name__)
                    raise RealModelUnavailableError(
                        f"{where} answers, but not as an OpenAI-compatible API: GET /models gave {status} "
                        f"and POST /chat/completions gave {answer}. Set OPENAI_BASE_URL to the server's "
                        f"OpenAI-compatible root ({LOCAL_SERVERS}: note the /v1), {offline}."
                    ) from None
                return f"{where} answered a one-token chat completion from {name!r}"
    except RealModelUnavailableError:
        raise
    except Exception as error:  # a reply that is not the API at all (HTML, bad JSON)
        raise RealModelUnavailableError(
            f"{where} answered something that is not the OpenAI API ({type(error).__name__}: "
            f"{str(error)[:120]}). Set OPENAI_BASE_URL to the server's OpenAI-compatible root "
            f"({LOCAL_SERVERS}), {offline}."
        ) from None
    if not all(isinstance(item, str) for item in names):
        raise RealModelUnavailableError(f"{where} does not list models as the OpenAI API does: "
                                        f"set OPENAI_BASE_URL to its OpenAI-compatible root, {offline}.")
    if name not in names:
        shown = ", ".join(map(repr, names[:8])) + (" ..." if len(names) > 8 else "")
        raise RealModelUnavailableError(
            f"{where} answers but does not serve {name!r} (it lists {shown or 'no models'}). Set "
            f"{MODEL_NAME_ENV} to one of them (Ollama: `ollama pull {name}` first), {offline}."
        )
    return f"{where} answered and lists {name!r}"


def get_chat_model(
    script: Sequence[Turn] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    check: bool = True,
):
    """Return the course's chat model: scripted and offline unless `TOOLNODE_LAB_MODEL=openai`.

    With `TOOLNODE_LAB_MODEL=openai` it returns `ChatOpenAI`, configured from:

    - OpenAI itself: `OPENAI_API_KEY` (required) and `TOOLNODE_LAB_MODEL_NAME`
      (default `gpt-4o-mini`);
    - any OpenAI-compatible server (Ollama, vLLM, LM Studio): `OPENAI_BASE_URL` (or
      `OPENAI_API_BASE`) and `TOOLNODE_LAB_MODEL_NAME` (both required; the key is optional).
      Such servers speak `/v1/chat/completions`, so the Responses API is switched off.

    The script is then ignored: a real model decides for itself. A server on this machine is
    reached directly, whatever `HTTP_PROXY`/`HTTPS_PROXY` say (`loopback_client_options`), and a
    model that cannot be reached raises `RealModelUnavailableError` saying what to do, not a bare
    `Connection error.`.

    Args:
        script: the scripted model's turns (see `ScriptedChatModel`).
        env: where to read the settings (default `os.environ`).
        check: with a base URL, first check that something listens there (`check_server`).

    Raises:
        RealModelConfigError: the switch is on but a setting is missing, or the server at
            `OPENAI_BASE_URL` cannot be reached. The message says what to set (a password in
            the URL is shown as `***`).

    Example:
        ```python
        model = get_chat_model(SCRIPT)          # ScriptedChatModel: offline, no key
        # TOOLNODE_LAB_MODEL=openai OPENAI_BASE_URL=http://127.0.0.1:11434/v1 \\
        #   TOOLNODE_LAB_MODEL_NAME=qwen2.5 jupyter lab    → ChatOpenAI against Ollama
        ```

    Taught in `notebooks/04_tools_condition_loop.ipynb`.
    """
    env = os.environ if env is None else env
    if not real_model_requested(env):
        return ScriptedChatModel(script=list(script or []))

    base_url = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE")
    api_key = env.get("OPENAI_API_KEY")
    name = env.get(MODEL_NAME_ENV)
    stay_offline = f"or unset {MODEL_ENV} to stay on the offline scripted model"
    if not api_key and not base_url:
        raise RealModelConfigError(
            f"{MODEL_ENV}=openai asks for a real model, but OPENAI_API_KEY is not set. Either "
            "set OPENAI_API_KEY=sk-... (OpenAI), or set OPENAI_BASE_URL=http://127.0.0.1:11434/v1 "
            f"(a local OpenAI-compatible server such as Ollama) and {MODEL_NAME_ENV}=<model>, "
            f"{stay_offline}."
        )
    if base_url and not name:
        raise RealModelConfigError(
            f"OPENAI_BASE_URL={mask_url(base_url)} is set, so name the model that server serves: "
            f"{MODEL_NAME_ENV}=<model> (Ollama: see `ollama list`; vLLM: the name given to "
            f"`vllm serve`; LM Studio: the loaded model's identifier), {stay_offline}."
        )
    options: dict[str, Any] = {
        "model": name or DEFAULT_OPENAI_MODEL,
        "api_key": api_key or "not-needed-for-a-local-server",
    }
    if base_url:
        if check:
            check_server(base_url)
        options.update(base_url=base_url, use_responses_api=False)
        if is_loopback(base_url):
            options.update(loopback_client_options())  # a proxy must not see 127.0.0.1
    return _course_chat_openai()(**options)
