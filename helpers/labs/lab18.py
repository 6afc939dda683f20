"""Lab 18 — Predict what you observe (after `notebooks/18_observing_a_run.ipynb`).

q1: `CHANNELS`: one `create_agent` turn of three tool calls, read through four stream modes: how
    many chunks or messages each reports — cases lesson 18 does not run, derived from where each
    observation comes from (a task's write, the state after a step, a task's start and end).
q2: `FAILURES`: a raising call read through the `"tools"` mode, the checkpoints of a two-turn run, and
    `astream_events` filtered by a tool's name.

Both are predict-and-check exercises (`helpers.labs.predict`): every scenario runs live on every
check, and a wrong prediction is shown beside what the run gave, the rule and the section.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from helpers.labs.predict import PredictionLab
from helpers.models import ScriptedChatModel

LESSON = "18_observing_a_run"
_lab = PredictionLab("18", LESSON)
_GO = {"messages": [HumanMessage("go")]}
_WHERE = "1. Where every observation comes from"
_EVENTS = "2. `astream_events` for a tools step"
_TASKS = "3. Tasks, checkpoints and debug"


@tool("lookup")
def _lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool("flaky")
def _flaky(query: str) -> str:
    """A lookup whose service is down."""
    raise ConnectionError("service down")


def _turn(*calls):
    return [{"name": name, "args": args} for name, args in calls]


def _three_calls(**options):
    """create_agent whose model calls lookup three times in one turn, then answers 'done'."""
    script = [_turn(*[("lookup", {"query": q}) for q in ("a", "b", "c")]), "done"]
    return create_agent(ScriptedChatModel(script=script), [_lookup], **options)


# -- q1: one turn of three calls, channel by channel ------------------------------------------------------
@_lab.question(
    "q1",
    ask="create_agent; the model calls lookup three times in one turn, then answers. stream_mode='updates': "
    "how many chunks name the 'tools' node?",
    answers=None,
    rule="'updates' reports each task's write when the task finishes; create_agent sends each call to the "
    "tools node as its own task (one Send per call).",
    heading=_WHERE,
)
def updates_naming_tools():
    return sum("tools" in chunk for chunk in _three_calls().stream(_GO, stream_mode="updates"))


@_lab.question(
    "q1",
    ask="The same run, stream_mode='values': how many chunks?",
    answers=None,
    rule="'values' reports the whole state at the start and after every step, once the step's writes "
    "are applied at the barrier: the three tools tasks share one step.",
    heading=_WHERE,
)
def values_chunks():
    return len(list(_three_calls().stream(_GO, stream_mode="values")))


@_lab.question(
    "q1",
    ask="The same run, stream_mode='tasks': how many chunks?",
    answers=None,
    rule="'tasks' reports every task twice, when it starts (with its input) and when it ends (with its "
    "result or error): two model tasks and three tools tasks.",
    heading=_TASKS,
)
def task_chunks():
    return len(list(_three_calls().stream(_GO, stream_mode="tasks")))


@_lab.question(
    "q1",
    ask="The same run, stream_mode='messages': how many ToolMessages arrive?",
    answers=None,
    rule="'messages' sends each message a node writes, when its task ends: every call's ToolMessage, "
    "one per tools task.",
    heading=_WHERE,
)
def tool_messages_in_messages_mode():
    return sum(message.type == "tool" for message, _ in _three_calls().stream(_GO, stream_mode="messages"))


# -- q2: a failure, checkpoints, a filtered event stream -----------------------------------------------------
@_lab.question(
    "q2",
    ask="create_agent whose model calls flaky (it raises ConnectionError; create_agent's default error "
    "handling). stream_mode='tools': which events arrive for the call before the run raises? A tuple, "
    "e.g. ('tool-started', 'tool-finished').",
    answers=None,
    kind=tuple,
    rule="The 'tools' mode reports a call's start and how it ended, error included, as it happens; the "
    "error then propagates out of the tools step and ends the run.",
    heading=_WHERE,
)
def tools_events_for_a_raising_call():
    agent = create_agent(ScriptedChatModel(script=[_turn(("flaky", {"query": "x"})), "done"]), [_flaky])
    events = []
    try:
        for chunk in agent.stream(_GO, stream_mode="tools"):
            events.append(chunk["event"])
    except ConnectionError:
        pass
    return tuple(events)


@_lab.question(
    "q2",
    ask="A checkpointed create_agent; the model calls lookup once in each of two turns, then answers. "
    "stream_mode='checkpoints': how many checkpoints arrive?",
    answers=None,
    rule="A checkpoint for the input (step -1), one after the step that writes it into the channels "
    "(step 0), then one after every step: model, tools, model, tools, model.",
    heading=_TASKS,
)
def checkpoints_two_tool_turns():
    script = [_turn(("lookup", {"query": "a"})), _turn(("lookup", {"query": "b"})), "done"]
    agent = create_agent(ScriptedChatModel(script=script), [_lookup], checkpointer=InMemorySaver())
    return len(list(agent.stream(_GO, {"configurable": {"thread_id": "lab18"}}, stream_mode="checkpoints")))


@_lab.question(
    "q2",
    ask="The three-call run, astream_events(version='v2', include_names=['lookup']): how many events?",
    answers=None,
    rule="Each tool call is a run named after its tool, with a start and an end event; include_names keeps "
    "the runs with that name, not the nodes above them.",
    heading=_EVENTS,
)
async def events_named_lookup():
    return len([e async for e in _three_calls().astream_events(_GO, version="v2", include_names=["lookup"])])


q1 = _lab.exercise(
    "q1",
    "CHANNELS",
    hints=(
        "Ask what each mode reports and when: a task's write when it ends ('updates'), the state after "
        "each step ('values'), each task's start and end ('tasks'), each written message ('messages').",
        "Count the tasks first: create_agent makes a model task per turn and one tools task per call, and "
        "the three tools tasks share one step.",
    ),
)
q2 = _lab.exercise(
    "q2",
    "FAILURES",
    hints=(
        "A raising call still reports its start and its end; a checkpoint follows every step; an event "
        "filter by name keeps runs with that name.",
        "Checkpoints: the input's (step -1), step 0's, then one per step of two tool turns and an answer; "
        "events: each of three lookup runs has a start and an end.",
    ),
)


def show(key: str) -> None:
    """Print exercise `key`'s questions (`"q1"` or `"q2"`), numbered, with their allowed answers."""
    _lab.show(key)


__all__ = ["q1", "q2", "show"]
