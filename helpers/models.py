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
            f"OPENAI_BASE_URL={base_url!r} is not an http(s) URL. Set it to the server's "
            "OpenAI-compatible root, e.g. OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (Ollama)."
        )
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise RealModelConfigError(
            f"Nothing answers at OPENAI_BASE_URL={base_url} ({type(exc).__name__}). Start the "
            "server (Ollama: `ollama serve`, http://127.0.0.1:11434/v1; LM Studio: its local "
            "server, http://127.0.0.1:1234/v1; vLLM: `vllm serve <model>`, "
            "http://127.0.0.1:8000/v1), or fix OPENAI_BASE_URL, or unset "
            f"{MODEL_ENV} to stay on the offline scripted model."
        ) from None


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

    The script is then ignored: a real model decides for itself.

    Args:
        script: the scripted model's turns (see `ScriptedChatModel`).
        env: where to read the settings (default `os.environ`).
        check: with a base URL, first check that something listens there (`check_server`).

    Raises:
        RealModelConfigError: the switch is on but a setting is missing, or the server at
            `OPENAI_BASE_URL` cannot be reached. The message says what to set.

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

    from langchain_openai import ChatOpenAI

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
            f"OPENAI_BASE_URL={base_url} is set, so name the model that server serves: "
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
    return ChatOpenAI(**options)
