"""Lab 08 — Guard dangerous tools (after `notebooks/08_interceptors.ipynb`).

q1: `build_graph(model, tools, checkpointer)`: the llm → tools loop with an approval step. A tool
    whose `metadata` says `{"requires_approval": True}` runs only after a human approved that call
    through `interrupt()` / `Command(resume="yes")`; anything else rejects it, and the model is told.
    The approval cannot be bypassed — sync `invoke` or async `ainvoke`, a dangerous tool under another
    name, a batch with other calls, a later turn — and resuming does not re-run side effects (an email
    is sent once). Inside the ToolNode a dangerous call runs only if its own id was approved.

The check drives a real graph with a checkpointer and counts what the tools really did (a recorder
the check owns): approve and reject under both `invoke` and `ainvoke`, a renamed tool, a batch with
no dangerous call (no pause at all), a second dangerous turn in the same thread (asked again), and
the ToolNode on its own, handed a dangerous call nobody approved after an approved turn. Paths and
city names are random, so nothing can be typed in; every run has a time limit.
"""

from __future__ import annotations

import functools
import inspect
import random
import threading
import uuid
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command

from helpers import labs
from helpers.cities import WEATHER
from helpers.history import unanswered_tool_calls
from helpers.labs import Cases, CheckFailed, Exercise, distinct, fail, record_failure, run_learner, section
from helpers.models import ScriptedChatModel, tool_results_summary
from helpers.tools import make_city_tools

LESSON = "08_interceptors"
APPROVAL = {"requires_approval": True}
LIMIT: float | None = None
"""Seconds one run of the learner's graph may take before a hang is reported (None: labs.LIMIT)."""
APPROVAL_HEADING = "3. Human approval with `interrupt()`"
RESUME_HEADING = "3.1 What a resume re-runs"
SYNC_PITFALL = "5.1 Only `awrap_tool_call`, then sync `invoke`: the wrapper is silently skipped"
PITFALLS = "5. The two interceptor pitfalls"
RENAMES = ("purge_cache", "wipe_disk", "drop_table")
"""Other names the check gives the dangerous tool (its metadata stays)."""


class Effects:
    """What the tools really did: files deleted, emails sent (thread-safe)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def add(self, kind: str, value: str) -> None:
        with self._lock:
            getattr(self, kind).append(value)


@functools.cache
def _schemas() -> dict[str, Any]:
    """The tools' argument schemas, built once (pydantic models are slow to create)."""

    def send_email(to: str, text: str) -> str:
        """Send an email (a side effect that must happen once)."""

    def delete(path: str) -> str:
        """Delete a file for good."""

    weather = make_city_tools(delay=0, sync=True)[0]
    return {
        "weather": weather,
        "send_email": StructuredTool.from_function(send_email).args_schema,
        "delete": StructuredTool.from_function(delete).args_schema,
    }


def make_tools(effects: Effects | None = None, *, delete_name: str = "delete_file") -> list[BaseTool]:
    """`[lookup_weather, send_email, <delete tool>]`; the delete tool carries
    `metadata={"requires_approval": True}` whatever its name. Sync tools: they run under `invoke`
    and `ainvoke`."""
    effects = effects if effects is not None else Effects()
    schemas = _schemas()

    def send_email(to: str, text: str) -> str:
        effects.add("sent", to)
        return f"sent to {to}"

    def delete(path: str) -> str:
        effects.add("deleted", path)
        return f"deleted {path}"

    email = StructuredTool(
        name="send_email",
        description="Send an email (a side effect that must happen once).",
        func=send_email,
        args_schema=schemas["send_email"],
    )
    dangerous = StructuredTool(
        name=delete_name,
        description="Delete a file for good.",
        func=delete,
        args_schema=schemas["delete"],
        metadata=dict(APPROVAL),
    )
    return [schemas["weather"], email, dangerous]


def _calls(rng: random.Random, delete_name: str | None, path: str) -> list[dict]:
    calls = [
        {"name": "lookup_weather", "args": {"city": rng.choice(sorted(WEATHER))}},
        {
            "name": "send_email",
            "args": {"to": f"ops-{rng.randint(10, 99)}@example.com", "text": "cleaning up"},
        },
    ]
    if delete_name:
        calls.append({"name": delete_name, "args": {"path": path}})
    rng.shuffle(calls)
    return calls


def _message(calls: list[dict], rng: random.Random) -> AIMessage:
    """The model's turn with fresh random call ids (so no id can be typed in)."""
    return AIMessage(
        "", tool_calls=[{**c, "id": f"call_{rng.getrandbits(40):010x}", "type": "tool_call"} for c in calls]
    )


def _path(rng: random.Random) -> str:
    return f"/tmp/{rng.choice(['old', 'stale', 'big', 'spare'])}-{rng.randint(100, 999)}.log"


def _distinct_paths(rng: random.Random, count: int) -> list[str]:
    """`count` different paths: a later turn's file must not be one an earlier turn already deleted
    (the check would read that deletion as the later call running unapproved)."""
    return distinct(lambda: _path(rng), count)


def _way(graph: Any, way: str):
    """`call(value, thread)`: the learner's graph through `invoke` or `ainvoke`, under a time limit."""
    method = graph.invoke if way == "invoke" else graph.ainvoke

    def call(value: Any, thread: dict) -> dict:
        return run_learner(method, value, thread, limit=LIMIT, name=f"your graph's {way}")

    return call


def _build(build_graph: Any, model: Any, tools: list, rng: random.Random) -> Any:
    graph = run_learner(build_graph, model, tools, InMemorySaver(), limit=LIMIT, name="build_graph")
    if graph is None or not hasattr(graph, "invoke"):
        raise fail(
            "build_graph did not return a compiled graph.",
            expected="build_graph(model, tools, checkpointer) to return "
            "builder.compile(checkpointer=checkpointer)",
            observed=repr(graph)[:200],
            where=section(LESSON, APPROVAL_HEADING),
        )
    return graph


def _turns(
    build_graph: Any,
    way: str,
    answers: list[str | None],
    rng: random.Random,
    delete_name: str = "delete_file",
) -> tuple[Any, dict, Effects]:
    """Play one turn per answer on one thread (answer None: a turn with no dangerous call, no pause
    expected); raise `CheckFailed` at the first problem. Returns (graph, thread, effects)."""
    effects = Effects()
    tools = make_tools(effects, delete_name=delete_name)
    paths = _distinct_paths(rng, len(answers))
    turns = [
        _calls(rng, delete_name if a is not None else None, p) for a, p in zip(answers, paths, strict=True)
    ]
    messages = [_message(calls, rng) for calls in turns]
    script: list[Any] = [m for message in messages for m in (message, tool_results_summary)]
    model = ScriptedChatModel(script=script).bind_tools(tools)
    graph = _build(build_graph, model, tools, rng)
    call = _way(graph, way)
    thread = {"configurable": {"thread_id": f"lab08-{uuid.uuid4().hex[:8]}"}}
    approval = section(LESSON, APPROVAL_HEADING)
    for number, (answer, path, message) in enumerate(zip(answers, paths, messages, strict=True), 1):
        turn = f"turn {number}: " if len(answers) > 1 else ""
        ids = {c["id"]: c["name"] for c in message.tool_calls}
        sent_before = len(effects.sent)
        first = call({"messages": [("user", f"Weather? Tell ops, and clean up ({number}).")]}, thread)
        if answer is None:
            if first.get("__interrupt__"):
                raise fail(
                    f"{turn}a batch with no dangerous call paused anyway",
                    expected="no interrupt when no tool of the batch requires approval",
                    observed=f"interrupted with {[i.value for i in first['__interrupt__']]}",
                    why="ask only for the calls whose tool's metadata says requires_approval",
                    where=approval,
                )
            final = first
        else:
            if path in effects.deleted:
                if number > 1:
                    why = (
                        "approval is per call: a 'yes' for an earlier call approves that call only — a flag "
                        "set once lets every later dangerous call through; ask again for each new call id"
                    )
                elif delete_name != "delete_file":
                    why = (
                        f"a guard keyed on the name 'delete_file' misses the same tool named {delete_name}: "
                        "decide by the tool's metadata (`tool.metadata.get('requires_approval')`)"
                    )
                elif way == "invoke":
                    why = (
                        "under sync invoke an `awrap_tool_call` alone is skipped: give the ToolNode a "
                        "`wrap_tool_call` too — and ask before the tools run"
                    )
                else:
                    why = "the tools ran before anyone was asked: ask in a step before the ToolNode runs"
                raise fail(
                    f"{turn}the file was deleted before anyone approved",
                    expected=f"a pause (an `__interrupt__` in the result) before {delete_name} runs",
                    observed=f"deleted {path} during the first run",
                    why=why,
                    where=section(LESSON, SYNC_PITFALL)
                    if why.startswith("under sync")
                    else section(LESSON, APPROVAL_HEADING),
                )
            if not first.get("__interrupt__"):
                raise fail(
                    f"{turn}the run did not pause for approval",
                    expected=f"an `__interrupt__` in the first result: {delete_name} requires approval",
                    observed=f"keys {sorted(first)}"
                    + (
                        " — approval is per call: a 'yes' for an earlier call approves that call only; a "
                        "flag set once lets every later dangerous call through"
                        if number > 1
                        else ""
                    ),
                    where=approval,
                )
            final = call(Command(resume=answer), thread)
            if final.get("__interrupt__"):
                raise fail(
                    f"{turn}the run paused again after the answer {answer!r}",
                    expected="one question per dangerous batch, then a finished run",
                    observed=f"a second interrupt: {[i.value for i in final['__interrupt__']]}"[:200],
                    why="resuming re-runs the interrupted node from its start: an `interrupt()` it reaches "
                    "again returns the answer — unless the node asks a new question each time",
                    where=section(LESSON, RESUME_HEADING),
                )
            answers_by_id = {m.tool_call_id: m for m in final["messages"] if isinstance(m, ToolMessage)}
            risky = next(c for c in message.tool_calls if c["name"] == delete_name)
            refusal = answers_by_id.get(risky["id"])
            if answer == "yes" and path not in effects.deleted:
                guard = "awrap_tool_call" if way == "ainvoke" else "wrap_tool_call"
                raise fail(
                    f"{turn}approved, but the file was not deleted",
                    expected=f"deleted {path} after Command(resume='yes')",
                    observed=f"deleted {effects.deleted}; {delete_name} answered "
                    f"{(refusal.status, refusal.content) if refusal else None}",
                    why=f"under {way} your `{guard}` refused an approved call: refuse only the calls whose "
                    "id was not approved — a guard that refuses everything is not an approval step",
                    where=approval,
                )
            if answer != "yes" and path in effects.deleted:
                raise fail(
                    f"{turn}the deletion did not follow the answer {answer!r}",
                    expected=f"{path} not deleted: any answer other than 'yes' rejects",
                    observed=f"deleted {path}",
                    why="ToolNode runs every call of the last AIMessage unless a guard inside it refuses"
                    + (
                        " — under sync invoke that is `wrap_tool_call`: an `awrap_tool_call` alone is skipped"
                        if way == "invoke"
                        else " (`awrap_tool_call` under ainvoke)"
                    )
                    + "; and `if answer:` is true for 'no' too: compare `answer == 'yes'`",
                    where=approval,
                )
            if answer != "yes" and (refusal is None or refusal.status != "error"):
                raise fail(
                    f"{turn}the model was not told that {delete_name} was refused",
                    expected=f"an error ToolMessage (status='error') answering {delete_name}",
                    observed=f"{(refusal.status, refusal.content) if refusal else 'no ToolMessage'}",
                    where=approval,
                )
        sent = effects.sent[sent_before:]
        if len(sent) != 1:
            raise fail(
                f"{turn}the email was sent {len(sent)} times",
                expected="send_email to run exactly once across the pause and the resume",
                observed=f"sent {sent}",
                why="resuming re-runs the interrupted node from its start, so every call of its batch runs "
                "again: ask before any tool of the batch runs (e.g. in a node of its own before the tools)",
                where=section(LESSON, RESUME_HEADING),
            )
        dangling = [i for i in unanswered_tool_calls(final["messages"]) if i in ids]
        last = final["messages"][-1]
        if dangling or not isinstance(last, AIMessage) or last.tool_calls:
            raise fail(
                f"{turn}the run did not finish with every call answered",
                expected="every tool call answered and a final answer from the model",
                observed=f"unanswered {[ids[i] for i in dangling]}, last message {type(last).__name__}",
                where=approval,
            )
    return graph, thread, effects


def _tool_nodes(graph: Any) -> list[ToolNode]:
    builder = getattr(graph, "builder", None)
    nodes = getattr(builder, "nodes", {}) or {}
    return [spec.runnable for spec in nodes.values() if isinstance(getattr(spec, "runnable", None), ToolNode)]


def _tool_messages(out: Any) -> list[ToolMessage]:
    """The ToolMessages a ToolNode returned: a dict, a list, or Commands carrying them in their update."""
    items = out.get("messages", []) if isinstance(out, dict) else out if isinstance(out, list) else [out]
    found: list[ToolMessage] = []
    for item in items:
        if isinstance(item, ToolMessage):
            found.append(item)
        elif isinstance(item, dict):
            found.extend(_tool_messages(item))
        elif isinstance(item, Command):
            update = item.update
            if isinstance(update, list | tuple):  # [("messages", [...]), ...]
                update = (
                    {k: v for k, v in update if isinstance(k, str)}
                    if all(isinstance(p, list | tuple) and len(p) == 2 for p in update)
                    else {}
                )
            if isinstance(update, dict):
                messages = update.get("messages", [])
                found.extend(_tool_messages(messages if isinstance(messages, list) else [messages]))
    return found


def _probe(build_graph: Any, rng: random.Random) -> None:
    """After an approved turn, hand the ToolNode alone a dangerous call nobody approved: the approved
    turn's batch again, in the same order and for the same file (so approval by position or by file
    fails too), with new ids. The call ran if the tools deleted a file once more."""
    graph, thread, effects = _turns(build_graph, "invoke", ["yes"], rng)
    tool_nodes = _tool_nodes(graph)
    if not tool_nodes:
        raise fail(
            "no ToolNode among your graph's nodes",
            expected="the tools run by a ToolNode added as a node: "
            "`builder.add_node('tools', ToolNode(...))`",
            observed=f"nodes {sorted(getattr(getattr(graph, 'builder', None), 'nodes', {}))}",
            where=section(LESSON, APPROVAL_HEADING),
        )
    values = dict(graph.get_state(thread).values)
    flags = sorted(k for k, v in values.items() if v is True)
    positions = sorted(
        k for k, v in values.items() if isinstance(v, list) and v and all(type(x) is int for x in v)
    )
    approved = next(
        (m for m in reversed(values["messages"]) if isinstance(m, AIMessage) and m.tool_calls), None
    )
    batch = [{"name": c["name"], "args": dict(c["args"])} for c in (approved.tool_calls if approved else [])]
    if not any(c["name"] == "delete_file" for c in batch):
        batch = [{"name": "delete_file", "args": {"path": _path(rng)}}]
    path = next(c["args"].get("path") for c in batch if c["name"] == "delete_file")
    files = sorted(k for k, v in values.items() if isinstance(v, list) and path in v)
    for way in ("invoke", "ainvoke"):
        message = _message(batch, rng)
        risky = next(c for c in message.tool_calls if c["name"] == "delete_file")
        state = {**values, "messages": [*values["messages"], message]}
        node = tool_nodes[0]
        method = node.invoke if way == "invoke" else node.ainvoke
        deletions = len(effects.deleted)
        out = run_learner(method, state, runtime=Runtime(), limit=LIMIT, name=f"your ToolNode's {way}")
        ran = len(effects.deleted) > deletions
        answer = next((m for m in _tool_messages(out) if m.tool_call_id == risky["id"]), None)
        if ran or answer is None or answer.status != "error":
            if flags:
                why = (
                    f"the state's {flags} is True — a yes/no flag still says yes for a call nobody saw: "
                    "store the approved call ids and let the guard check `request.tool_call['id']`"
                )
            elif positions:
                why = (
                    f"the state's {positions} holds positions in the batch: a new call at the same position "
                    "is not the call the human approved — store the approved call ids and let the guard "
                    "check `request.tool_call['id']`"
                )
            elif files:
                why = (
                    f"the state's {files} holds the approved file: a new call for the same file is not the "
                    "call the human approved — store the approved call ids and let the guard check "
                    "`request.tool_call['id']`"
                )
            else:
                why = (
                    "the decision must be binding inside the ToolNode: one guard given as both "
                    "`wrap_tool_call` and `awrap_tool_call` (never `awrap_tool_call` alone: `invoke` skips "
                    "it) that runs a dangerous call only if its id was approved"
                )
            raise fail(
                f"under {way}, your ToolNode ran a dangerous call nobody approved",
                expected=f"an error ToolMessage for a new delete_file call (id {risky['id']}), no deletion",
                observed=f"deleted {path} again" if ran else f"answered {answer!r}"[:200],
                why=why,
                where=section(LESSON, APPROVAL_HEADING),
            )


def check_guard(build_graph: Any, *, seed: int | None = None) -> str:
    key = "q1"
    shape = (
        "def build_graph(model, tools, checkpointer): ... return builder.compile(checkpointer=checkpointer)"
    )
    if not callable(build_graph):
        raise fail(
            "`build_graph` must be a function.",
            key=key,
            expected=shape,
            observed=f"a {type(build_graph).__name__}: {build_graph!r}"[:200],
            where=section(LESSON, APPROVAL_HEADING),
        )
    try:
        inspect.signature(build_graph).bind(None, None, None)
    except TypeError:
        raise fail(
            "`build_graph` must take 3 arguments: the model, the tools and the checkpointer.",
            key=key,
            expected=shape,
            observed=f"build_graph{inspect.signature(build_graph)}",
            where=section(LESSON, APPROVAL_HEADING),
        ) from None
    except ValueError:  # no signature to read: let the call decide
        pass
    rng = random.Random(seed)
    renamed = rng.choice(RENAMES)
    scenarios = [
        ("approve, sync invoke", lambda: _turns(build_graph, "invoke", ["yes"], rng)),
        ("approve, async ainvoke", lambda: _turns(build_graph, "ainvoke", ["yes"], rng)),
        ("reject, async ainvoke", lambda: _turns(build_graph, "ainvoke", ["no"], rng)),
        ("reject, sync invoke", lambda: _turns(build_graph, "invoke", [rng.choice(["no", "not now"])], rng)),
        (
            f"a renamed dangerous tool ({renamed}), rejected, sync invoke",
            lambda: _turns(build_graph, "invoke", ["no"], rng, delete_name=renamed),
        ),
        ("no dangerous call, no pause", lambda: _turns(build_graph, "invoke", [None], rng)),
        (
            "a second dangerous turn in one thread: approve, then reject",
            lambda: _turns(build_graph, "ainvoke", ["yes", "no"], rng),
        ),
        (
            "the ToolNode alone refuses a call nobody approved (invoke and ainvoke)",
            lambda: _probe(build_graph, rng),
        ),
    ]
    cases, seen = Cases(key), {}
    for label, play in scenarios:
        if cases.hung is not None:
            cases.run(label, lambda: None)  # recorded as not tried
            continue
        try:
            play()
        except labs.StillAStub:
            raise
        except CheckFailed as error:
            record_failure(cases, label, error, seen)
        else:
            cases.ok(label)
    return cases.result(
        "approve and reject under invoke and ainvoke, a renamed tool, a batch with nothing dangerous, a "
        "second turn asked again, and the ToolNode alone refusing an unapproved call — approval by call id, "
        "side effects once."
    )


q1 = Exercise(
    "08",
    "q1",
    ("build_graph",),
    check_guard,
    (
        "Decide by the tool, not by its name: `tool.metadata.get('requires_approval')`. Ask before any tool "
        "of the batch runs: resuming re-runs the interrupted node from its start. And approve calls, not "
        "turns: keep the ids of the calls the human approved.",
        "Put an `approve` node between the model and the ToolNode: it finds the calls whose tool requires "
        "approval, calls `interrupt(...)` once for them, and stores the approved call ids in the state. "
        "In the ToolNode, give one guard as both `wrap_tool_call` and `awrap_tool_call` (lesson 08, 5.2: "
        "a sync guard alone passes here only because these tools are sync, and under `ainvoke` it runs "
        "them one at a time; never `awrap_tool_call` alone, which `invoke` skips): it answers a dangerous "
        "call whose id is not approved with `ToolMessage(..., status='error')` instead of running it. "
        "Route: llm → tools_condition → approve → tools → llm; compile with the checkpointer.",
    ),
)

__all__ = ["APPROVAL", "CheckFailed", "Effects", "make_tools", "q1"]
