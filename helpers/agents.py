"""Look inside the prebuilt agents: what a run said, and what each tool task was handed.

`create_agent` (LangChain 1.x) and `create_react_agent` (LangGraph) run the same `ToolNode` as a
hand-wired `tools_condition` loop, but dispatch it differently. These helpers make the two
comparable: `conversation` strips a run's messages down to what was said (no ids, no metadata),
and `tool_task_inputs` records the payload each task of the tool node received.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage

Said = tuple[str, Any, tuple[tuple[str, tuple[tuple[str, Any], ...], str], ...]]
"""`(type, content, ((tool name, sorted args, call id), ...))`: one message, ids and metadata dropped."""


def conversation(messages: Iterable[BaseMessage]) -> list[Said]:
    """Return what each message said: its type, its content and its tool calls.

    Message ids (random for human and tool messages), response metadata and tool names on
    ToolMessages are left out, so two runs of the same script through two different graphs
    compare equal exactly when they exchanged the same messages.

    Args:
        messages: a run's messages, e.g. `graph.invoke(...)["messages"]`.

    Example:
        ```python
        conversation(agent.invoke(question)["messages"]) == conversation(loop.invoke(question)["messages"])
        # True: the agent and the hand-wired loop said the same things
        conversation([AIMessage("", tool_calls=[{"name": "f", "args": {"a": 1}, "id": "c1"}])])
        # [('ai', '', (('f', (('a', 1),), 'c1'),))]
        ```

    Taught in `notebooks/09_prebuilt_agents.ipynb`.
    """
    said: list[Said] = []
    for message in messages:
        calls = tuple(
            (call["name"], tuple(sorted(call["args"].items())), call["id"])
            for call in getattr(message, "tool_calls", None) or []
        )
        said.append((message.type, message.content, calls))
    return said


def tool_task_inputs(
    graph: Any,
    graph_input: Any,
    config: Mapping[str, Any] | None = None,
    *,
    node: str = "tools",
) -> list[Any]:
    """Run `graph` once and return the input of every task of `node`, in the order they started.

    Uses `stream_mode="tasks"`, which reports each task when it starts (with its input) and when
    it ends (with its result); only the starts are kept. A node reached by an edge gets the
    graph's state; a node reached by `Send(node, payload)` gets the payload — one task per `Send`.

    Args:
        graph: a compiled graph (an agent from `create_agent`, a hand-wired loop, ...).
        graph_input: what to pass to `graph.stream`, e.g. `{"messages": [("user", "...")]}`.
        config: the run's config (needed with a checkpointer: `{"configurable": {"thread_id": ...}}`).
        node: the node whose tasks to report.

    Raises:
        ValueError: the graph has no node called `node` (the message lists the ones it has).

    Example:
        ```python
        tool_task_inputs(agent, {"messages": [("user", "Paris?")]})
        # [[{'name': 'lookup_weather', ...}], [{'name': 'lookup_attraction', ...}]]: two tasks
        ```

    Taught in `notebooks/09_prebuilt_agents.ipynb`.
    """
    nodes = list(graph.get_graph().nodes)
    if node not in nodes:
        raise ValueError(f"The graph has no node {node!r}; its nodes are {nodes}. Pass node=<one of them>.")
    inputs = []
    for event in graph.stream(graph_input, config, stream_mode="tasks"):
        if event["name"] == node and "input" in event:
            inputs.append(event["input"])
    return inputs


def route_after_model(graph: Any, state: Mapping[str, Any], *, node: str = "tools") -> Any:
    """Return what the graph's conditional edge towards `node` returns for `state`, without running it.

    That edge decides how the tool calls reach the tools node: a node name (one task, fed the
    state), or a list of `Send`s (one task per `Send`, fed its payload). Reading the edge's own
    return value shows the exact form each prebuilt agent uses.

    Args:
        graph: a compiled graph whose model node has a conditional edge that can lead to `node`.
        state: the state to route, e.g. `{"messages": [HumanMessage(...), AIMessage(tool_calls=...)]}`.
        node: the tools node's name.

    Raises:
        ValueError: no conditional edge of the graph can lead to `node`.

    Example:
        ```python
        route_after_model(agent, state)
        # [Send(node='tools', arg=[{'name': 'lookup_weather', ...}]), Send(node='tools', arg=[...])]
        ```

    Taught in `notebooks/09_prebuilt_agents.ipynb`.
    """
    drawn = graph.get_graph()
    sources = {edge.source for edge in drawn.edges if edge.target == node and edge.conditional}
    for source in sources:
        for branch in graph.builder.branches.get(source, {}).values():
            return branch.path.invoke(state)
    raise ValueError(f"No conditional edge of this graph leads to {node!r}; pass node=<the tools node>.")
