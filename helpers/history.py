"""Check a message history the way a chat model's API will: every tool call needs an answer.

Taught in `notebooks/06_command_and_parent.ipynb`.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage


def unanswered_tool_calls(messages: Sequence[BaseMessage]) -> list[str]:
    """Return the ids of tool calls that no `ToolMessage` anywhere in `messages` answers, in call order.

    A history with unanswered calls is rejected by chat-model APIs on the next model call
    (OpenAI: "An assistant message with 'tool_calls' must be followed by tool messages ...").
    Order is not checked: an answer that comes after a later question counts as an answer here,
    although a provider still rejects it (lesson 12; `helpers.openai_endpoint.unanswered_on_the_wire`
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
