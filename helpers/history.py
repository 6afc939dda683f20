"""Check a message history the way a chat model's API will: every tool call needs an answer.

Taught in `notebooks/06_command_and_parent.ipynb`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver


def unanswered_tool_calls(messages: Sequence[BaseMessage]) -> list[str]:
    """Return the ids of tool calls that no `ToolMessage` anywhere in `messages` answers, in call order.

    A history with unanswered calls is rejected by chat-model APIs on the next model call
    (OpenAI: "An assistant message with 'tool_calls' must be followed by tool messages ...").
    Order is not checked: an answer that comes after a later question counts as an answer here,
    although a provider still rejects it (lesson 13; `helpers.openai_endpoint.unanswered_on_the_wire`
    checks the order).

    Example:
        ```python
        unanswered_tool_calls(graph.invoke(inputs)["messages"])   # [] when the history is valid
        ```

    Taught in `notebooks/06_command_and_parent.ipynb`; lesson 04 uses it to show a dangling call.
    """
    if isinstance(messages, dict) or not isinstance(messages, Sequence):
        raise TypeError(
            "unanswered_tool_calls() takes a list of messages; for a graph's state pass "
            "state['messages']."
        )
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return [
        call["id"]
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]


class AnswerSavedSaver(InMemorySaver):
    """An `InMemorySaver` that sets `saved` once an answer of the tool `name` is written.

    A test that needs "this call's answer was saved before its sibling failed" makes the failing
    tool wait on `saved`: an event instead of a head start, which a busy machine can overrun.

    Example:
        ```python
        saved = threading.Event()
        agent = create_agent(model, tools, checkpointer=AnswerSavedSaver("charge", saved))
        ```

    Used by lab 13's check (`helpers.labs.lab13`) and lesson 09's contract tests.
    """

    def __init__(self, name: str, saved: threading.Event) -> None:
        super().__init__()
        self.name, self.saved = name, saved

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        super().put_writes(config, writes, task_id, task_path)
        values = [v for _, value in writes for v in (value if isinstance(value, list) else [value])]
        if any(isinstance(v, ToolMessage) and v.name == self.name for v in values):
            self.saved.set()
