"""Show graphs and messages in JupyterLab, offline and in a form strict nbval can compare."""

from __future__ import annotations

from typing import Any


class MermaidGraph:
    """A mermaid diagram that JupyterLab (4.1+) renders offline; its text is what nbval compares.

    It is published as Markdown with a mermaid fence, not as `text/vnd.mermaid`: JupyterLab writes
    the SVG it renders for a `text/vnd.mermaid` output back into the notebook, so a lesson would
    open as modified and a saved one would carry a dated SVG. A fence renders the same and is
    stored as text.
    """

    def __init__(self, source: str) -> None:
        self.source = source

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        return {"text/markdown": f"```mermaid\n{self.source.rstrip()}\n```", "text/plain": self.source}

    def __str__(self) -> str:
        return self.source


def show_graph(graph: Any, *, xray: bool | int = False) -> MermaidGraph:
    """Return a compiled LangGraph graph as mermaid that renders offline.

    Never leave a compiled graph as the last expression of a cell: its own display calls the
    mermaid.ink web service (`draw_mermaid_png`), which fails without a network. Use this instead.

    Example:
        ```python
        show_graph(graph)   # renders the diagram in JupyterLab; plain mermaid text elsewhere
        ```

    Taught in `notebooks/02_custom_async_tool_node.ipynb`.
    """
    drawable = graph.get_graph(xray=xray) if hasattr(graph, "get_graph") else graph
    return MermaidGraph(drawable.draw_mermaid())
