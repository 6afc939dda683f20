"""The llm → tools → llm loop that lessons 04 and 08 build by hand, for tests and checks to reuse."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


def tool_loop(
    model: Any,
    tools: Sequence[BaseTool],
    *,
    is_async: bool = False,
    tools_node: str = "tools",
    path_map: Mapping[str, str] | None = None,
    **tool_node_options: Any,
):
    """Compile seed 004's graph: `START → llm`, `llm → tools_condition → tools | END`, `tools → llm`.

    Args:
        model: a chat model with its tools already bound (`model.bind_tools(tools)`).
        tools: the tools `ToolNode` may run.
        is_async: give the graph an `async def` llm node that awaits `model.ainvoke`.
        tools_node: the tool node's name. `tools_condition` answers `"tools"`, so any other name
            needs a `path_map` (lesson 04 shows the error you get without one).
        path_map: passed to `add_conditional_edges`.
        **tool_node_options: passed to `ToolNode` (e.g. `handle_tool_errors=True`).

    Example:
        ```python
        tools = make_city_tools()
        graph = tool_loop(ScriptedChatModel(script=[...]).bind_tools(tools), tools)
        graph.invoke({"messages": [("user", "Weather in Paris?")]})
        ```

    Taught in `notebooks/04_tools_condition_loop.ipynb` (written out there, cell by cell).
    """
    if is_async:

        async def llm(state: MessagesState):
            return {"messages": [await model.ainvoke(state["messages"])]}

    else:

        def llm(state: MessagesState):
            return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("llm", llm)
    builder.add_node(tools_node, ToolNode(tools, **tool_node_options))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition, path_map)
    builder.add_edge(tools_node, "llm")
    return builder.compile()
