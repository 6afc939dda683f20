"""Lab 08 — Guard dangerous tools (after `notebooks/08_interceptors.ipynb`).

q1: `build_graph(model, tools, checkpointer)`: the llm → tools loop with an approval step. A tool
    whose `metadata` says `{"requires_approval": True}` runs only after a human approved it through
    `interrupt()` / `Command(resume="yes")`; anything else rejects it, and the model is told. The
    approval cannot be bypassed — sync `invoke` or async `ainvoke`, a dangerous tool under another
    name, a batch with other calls — and resuming does not re-run side effects (an email is sent
    once).

The check drives a real graph with a checkpointer: approve (sync), reject (async), a renamed tool,
and a batch without dangerous calls (no pause at all).
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from helpers.history import unanswered_tool_calls
from helpers.labs import CheckFailed, Exercise, fail, run_async, section
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.tools import make_city_tools

LESSON = "08_interceptors"
APPROVAL = {"requires_approval": True}


class Effects:
    """What the tools really did: files deleted, emails sent (thread-safe)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def add(self, kind: str, value: str) -> None:
        with self._lock:
            getattr(self, kind).append(value)


def make_tools(effects: Effects | None = None, *, delete_name: str = "delete_file") -> list[BaseTool]:
    """`[lookup_weather, send_email, <delete tool>]`; the delete tool carries
    `metadata={"requires_approval": True}` whatever its name. Sync tools: they run under `invoke`
    and `ainvoke`."""
    effects = effects if effects is not None else Effects()
    weather = make_city_tools(delay=0, sync=True)[0]

    def send_email(to: str, text: str) -> str:
        """Send an email (a side effect that must happen once)."""
        effects.add("sent", to)
        return f"sent to {to}"

    def delete(path: str) -> str:
        """Delete a file for good."""
        effects.add("deleted", path)
        return f"deleted {path}"

    dangerous = StructuredTool.from_function(
        delete, name=delete_name, description="Delete a file for good.", metadata=dict(APPROVAL)
    )
    return [weather, StructuredTool.from_function(send_email), dangerous]


def _turn(delete_name: str | None) -> list[dict]:
    calls = [
        {"name": "lookup_weather", "args": {"city": "Paris"}},
        {"name": "send_email", "args": {"to": "ops@example.com", "text": "cleaning up"}},
    ]
    if delete_name:
        calls.append({"name": delete_name, "args": {"path": "/tmp/old.log"}})
    return calls


def _run(
    build_graph: Any,
    way: str,
    answer: str | None,
    delete_name: str | None = "delete_file",
    name_of_tool: str = "delete_file",
) -> tuple[Effects, dict, dict, Effects]:
    """Run one scenario; return (effects after the first run, first result, final result, effects)."""
    effects = Effects()
    tools = make_tools(effects, delete_name=name_of_tool)
    model = ScriptedChatModel(script=[_turn(delete_name), tool_results_summary]).bind_tools(tools)
    graph = build_graph(model, tools, InMemorySaver())
    thread = {"configurable": {"thread_id": f"lab08-{uuid.uuid4().hex[:8]}"}}
    start = {"messages": [("user", "Weather in Paris? Tell ops, and delete the old log.")]}

    def call(value):
        if way == "invoke":
            return graph.invoke(value, thread)
        return run_async(lambda: graph.ainvoke(value, thread))

    first = call(start)
    before = Effects()
    before.deleted, before.sent = list(effects.deleted), list(effects.sent)
    final = first
    if answer is not None and first.get("__interrupt__"):
        final = call(Command(resume=answer))
    return before, first, final, effects


def check_guard(build_graph: Any) -> str:
    key = "q1"
    approval = section(LESSON, "Human approval with `interrupt()`")
    done = []
    scenarios = [
        ("approve, sync invoke", "invoke", "yes", "delete_file"),
        ("reject, async ainvoke", "ainvoke", "no", "delete_file"),
        ("a renamed dangerous tool (purge_cache), sync invoke", "invoke", "no", "purge_cache"),
    ]
    for label, way, answer, name in scenarios:
        try:
            before, first, final, effects = _run(build_graph, way, answer, name, name)
        except (CheckFailed, NotImplementedError):
            raise
        except Exception as exc:
            raise fail(
                f"{label}: the graph failed.",
                key=key,
                where=approval,
                expected="a pause for approval, then a finished run after Command(resume=...)",
                observed=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300],
            ) from None
        if before.deleted:
            raise fail(
                f"{label}: the file was deleted before anyone approved.",
                key=key,
                where=section(LESSON, "Pitfalls"),
                expected=f"a pause (an `__interrupt__` in the result) before {name} runs",
                observed=f"deleted {before.deleted} during the first run"
                + (
                    " — a guard keyed on the name 'delete_file' misses a renamed tool: decide by "
                    "the tool's metadata"
                    if name != "delete_file"
                    else " — under sync invoke an `awrap_tool_call` alone is skipped"
                    if way == "invoke"
                    else ""
                ),
            )
        if not first.get("__interrupt__"):
            raise fail(
                f"{label}: the run did not pause for approval.",
                key=key,
                where=approval,
                expected="an `__interrupt__` in the first result",
                observed=f"keys {sorted(first)}",
            )
        wanted = ["/tmp/old.log"] if answer == "yes" else []
        if effects.deleted != wanted:
            raise fail(
                f"{label}: the deletion did not follow the answer {answer!r}.",
                key=key,
                where=approval,
                expected=f"deleted == {wanted}",
                observed=f"deleted == {effects.deleted}"
                + (
                    " — ToolNode runs every call of the last AIMessage, answered or not: refuse "
                    "inside ToolNode (an interceptor on both paths)"
                    if effects.deleted
                    else ""
                ),
            )
        if len(effects.sent) != 1:
            raise fail(
                f"{label}: the email was sent {len(effects.sent)} times.",
                key=key,
                where=section(LESSON, "Human approval with `interrupt()`"),
                expected="send_email to run exactly once across the pause and the resume",
                observed=f"sent {effects.sent} — resuming re-runs the interrupted node from its start, "
                "so every call of its batch runs again: ask before any tool of the batch runs "
                "(e.g. in a node of its own before the tools)",
            )
        dangling = unanswered_tool_calls(final["messages"])
        last = final["messages"][-1]
        if dangling or not isinstance(last, AIMessage) or last.tool_calls:
            raise fail(
                f"{label}: the run did not finish with every call answered.",
                key=key,
                where=approval,
                expected="every tool call answered and a final answer from the model",
                observed=f"unanswered {dangling}, last message {type(last).__name__}",
            )
        if answer != "yes":
            refused = [m for m in final["messages"] if isinstance(m, ToolMessage) and m.name == name]
            if not refused or refused[-1].status != "error":
                raise fail(
                    f"{label}: the model was not told that the deletion was refused.",
                    key=key,
                    where=approval,
                    expected=f"an error ToolMessage answering {name}",
                    observed=f"{[(m.name, m.status, m.content) for m in refused]}",
                )
        done.append(label)
    before, first, final, effects = _run(build_graph, "invoke", None, None)
    if first.get("__interrupt__"):
        raise fail(
            "a batch with no dangerous call paused anyway.",
            key=key,
            where=approval,
            expected="no interrupt when no tool requires approval",
            observed=f"interrupted with {[i.value for i in first['__interrupt__']]}"[:300],
        )
    done.append("no dangerous call, no pause")
    return "; ".join(done) + " — approval enforced, side effects once."


q1 = Exercise(
    "08",
    "q1",
    ("build_graph",),
    check_guard,
    (
        "Decide by the tool, not by its name: `tool.metadata.get('requires_approval')`. And ask before "
        "any tool of the batch runs: resuming re-runs the interrupted node from its start.",
        "Put an `approve` node between the model and the ToolNode: it finds the calls whose tool requires "
        "approval, calls `interrupt(...)` once for them, and stores the approved call ids in the state. "
        "In the ToolNode, give BOTH `wrap_tool_call` and `awrap_tool_call` a guard that answers an "
        "unapproved dangerous call with `ToolMessage(..., status='error')` instead of running it. "
        "Route: llm → tools_condition → approve → tools → llm; compile with the checkpointer.",
    ),
)

__all__ = ["APPROVAL", "CheckFailed", "Effects", "make_tools", "q1"]
