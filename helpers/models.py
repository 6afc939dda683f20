"""Chat models for the course: a scripted, offline tool-calling model by default, a real
OpenAI (or OpenAI-compatible) model only when one environment variable asks for it.

None of langchain-core's fake chat models implements `bind_tools`, so the course has its own:
`ScriptedChatModel` is a real `BaseChatModel` whose `bind_tools` converts tools exactly the way
`ChatOpenAI` does, and whose reply is picked by *where the conversation is*, not by a counter,
so any cell can be re-run and gives the same answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
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
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


class ScriptError(ValueError):
    """The script does not fit the conversation (too few turns, or a tool that is not bound)."""


def tool_results_summary(messages: list[BaseMessage]) -> str:
    """A final answer made of the ToolMessages since the last AI turn, joined with `；`.

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
    return "；".join(reversed(results)) or "（没有工具结果）"


class ScriptedChatModel(BaseChatModel):
    """A deterministic tool-calling chat model that answers from a script, with no network.

    Turn *k* of the script answers a conversation that already holds *k* AI messages, so the
    reply depends only on the messages passed in: re-running a cell, streaming, or calling from
    several threads gives the same answer. Tool-call ids are `call_<turn>_<index>` unless the
    script names them.

    Args:
        script: the replies, in order. Each is final text (`"done"`), a list of tool calls
            (`[{"name": "lookup_weather", "args": {"city": "杭州"}}]`), a ready `AIMessage`, or a
            function of the conversation that returns one of those.

    Example:
        ```python
        model = ScriptedChatModel(script=[
            [{"name": "lookup_weather", "args": {"city": "杭州"}}],
            tool_results_summary,
        ]).bind_tools(make_city_tools())
        model.invoke("杭州天气？").tool_calls
        # [{'name': 'lookup_weather', 'args': {'city': '杭州'}, 'id': 'call_0_0', 'type': 'tool_call'}]
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
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way `ChatOpenAI.bind_tools` does: as OpenAI tool schemas."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    # -- the one place a reply is decided ------------------------------------------------------
    def reply(self, messages: list[BaseMessage], tools: Sequence[Mapping] | None = None) -> AIMessage:
        """Return the scripted AIMessage for this conversation (no callbacks, no streaming)."""
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn >= len(self.script):
            raise ScriptError(
                f"ScriptedChatModel has {len(self.script)} scripted turn(s) but the conversation "
                f"already holds {turn} AI message(s). Add a turn to the script, or start from a "
                "fresh conversation."
            )
        step = self.script[turn]
        if callable(step) and not isinstance(step, AIMessage):
            step = step(messages)
        if isinstance(step, str):
            message = AIMessage(content=step)
        elif isinstance(step, AIMessage):
            message = step.model_copy()
        else:
            calls = [
                {
                    "name": spec["name"],
                    "args": dict(spec.get("args", {})),
                    "id": spec.get("id", f"call_{turn}_{index}"),
                    "type": "tool_call",
                }
                for index, spec in enumerate(step)
            ]
            message = AIMessage(content="", tool_calls=calls)
        self._check_tools(message, tools)
        if message.id is None:
            message.id = f"scripted-{turn}"
        message.response_metadata = {"model_name": "scripted", "finish_reason": (
            "tool_calls" if message.tool_calls else "stop")}
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

    # -- BaseChatModel hooks -------------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self.reply(messages, kwargs.get("tools"))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        # No I/O to wait for: answer on the event loop instead of in a thread pool.
        return self._generate(messages, stop, None, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Stream like an OpenAI model: text word by word, tool calls as argument chunks."""
        message = self.reply(messages, kwargs.get("tools"))
        pieces = [w + " " for w in str(message.content).split(" ")] if message.content else []
        if pieces:
            pieces[-1] = pieces[-1][:-1]
        for piece in pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        for index, call in enumerate(message.tool_calls):
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content="",
                    id=message.id,
                    tool_call_chunks=[
                        {
                            "name": call["name"],
                            "args": json.dumps(call["args"], ensure_ascii=False),
                            "id": call["id"],
                            "index": index,
                            "type": "tool_call_chunk",
                        }
                    ],
                )
            )
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="", id=message.id, response_metadata=message.response_metadata,
                chunk_position="last",
            )
        )

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs: Any):
        for chunk in self._stream(messages, stop, None, **kwargs):
            if run_manager:
                await run_manager.on_llm_new_token(str(chunk.message.content), chunk=chunk)
            yield chunk


class RealModelConfigError(RuntimeError):
    """The real-model switch is on but the settings it needs are missing."""


def real_model_requested(env: Mapping[str, str] | None = None) -> bool:
    """True when `TOOLNODE_LAB_MODEL=openai` asks for a real model instead of the scripted one."""
    env = os.environ if env is None else env
    choice = env.get(MODEL_ENV, "scripted").strip().lower()
    if choice not in {"", "scripted", "openai"}:
        raise RealModelConfigError(
            f"{MODEL_ENV}={choice!r} is not understood. Use {MODEL_ENV}=openai for a real model "
            f"(OpenAI, or an OpenAI-compatible server via OPENAI_BASE_URL), or unset it for the "
            "offline scripted model."
        )
    return choice == "openai"


def get_chat_model(script: Sequence[Turn] | None = None, *, env: Mapping[str, str] | None = None):
    """Return the course's chat model: scripted and offline unless `TOOLNODE_LAB_MODEL=openai`.

    With `TOOLNODE_LAB_MODEL=openai` it returns `ChatOpenAI`, configured from
    `OPENAI_API_KEY`, `OPENAI_BASE_URL` (any OpenAI-compatible server: Ollama, vLLM, LM Studio)
    and `TOOLNODE_LAB_MODEL_NAME` (default `gpt-4o-mini`). The script is then ignored: a real
    model decides for itself.

    Raises:
        RealModelConfigError: the switch is on but no key and no base URL are set.

    Taught in `notebooks/00_start_here.ipynb` and `notebooks/04_tools_condition_loop.ipynb`.
    """
    env = os.environ if env is None else env
    if not real_model_requested(env):
        return ScriptedChatModel(script=list(script or []))

    from langchain_openai import ChatOpenAI

    base_url = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE")
    api_key = env.get("OPENAI_API_KEY")
    if not api_key and not base_url:
        raise RealModelConfigError(
            f"{MODEL_ENV}=openai asks for a real model, but OPENAI_API_KEY is not set. Either "
            "set OPENAI_API_KEY=sk-... (OpenAI), or set OPENAI_BASE_URL=http://127.0.0.1:11434/v1 "
            f"(a local OpenAI-compatible server such as Ollama) and {MODEL_NAME_ENV}=<model>, or "
            f"unset {MODEL_ENV} to stay on the offline scripted model."
        )
    options: dict[str, Any] = {
        "model": env.get(MODEL_NAME_ENV, DEFAULT_OPENAI_MODEL),
        "api_key": api_key or "not-needed-for-a-local-server",
    }
    if base_url:
        # Local OpenAI-compatible servers speak /v1/chat/completions, not the Responses API.
        options.update(base_url=base_url, use_responses_api=False)
    return ChatOpenAI(**options)
