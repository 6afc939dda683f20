"""Library behaviour taught in notebooks/18_observing_a_run.ipynb.

Where each observation channel reports a tools step: the stream modes (`tasks`, `tools`, `updates`,
`values`, `checkpoints`, `debug`), `astream_events(version="v2")` for the node's run and its tools'
runs (a failing tool handled or not, the filters, the metadata), the namespaces of nested graphs (a
sub-agent inside a tool, a subgraph node), `version="v2"` stream parts and `GraphOutput`, and every
channel across an `interrupt()` and its resume. Each test pins one statement of the lesson, in the
form the lesson states it (the async path where it says `astream_events`). Orders between
concurrent tasks are driven by events, never by sleeps.

Every test holds on the pinned set (langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain 1.5.2,
langchain-core 1.8.3); its docstring names what upstream changed it where that is known.
"""

from __future__ import annotations

import asyncio
import inspect
import operator
import threading
import typing
import warnings
from typing import Annotated

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Command, GraphOutput, interrupt

from helpers.graphs import tool_loop
from helpers.models import ScriptedChatModel, tool_results_summary

lesson = pytest.mark.lesson("18_observing_a_run")
GO = {"messages": [HumanMessage("go")]}
STEP_MODES = ["checkpoints", "tasks", "tools", "updates", "values"]


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool
def flaky(query: str) -> str:
    """A lookup whose service is down."""
    raise ConnectionError("service down")


@tool
def delete(path: str) -> str:
    """Delete a file once a person approves."""
    return f"deleted {path}" if interrupt(f"delete {path}?") == "yes" else f"kept {path}"


@tool
def crawl(site: str) -> str:
    """Crawl a site."""
    return f"crawled {site}"


@tool
def research(topic: str) -> str:
    """Research a topic with a sub-agent."""
    script = [_turn(("crawl", {"site": f"{topic}.org"})), f"notes on {topic}"]
    researcher = create_agent(ScriptedChatModel(script=script), [crawl], name="researcher")
    return researcher.invoke({"messages": [HumanMessage(topic)]})["messages"][-1].content


def _turn(*calls):
    return [{"name": name, "args": args} for name, args in calls]


def _thread(name="t"):
    return {"configurable": {"thread_id": name}}


def _agent(calls, tools, checkpointer=True, **options):
    saver = InMemorySaver() if checkpointer else None
    return create_agent(ScriptedChatModel(script=[_turn(*calls), tool_results_summary]), tools,
                        checkpointer=saver, **options)


def _flaky_loop(*calls, **options):
    model = ScriptedChatModel(script=[_turn(*calls), tool_results_summary]).bind_tools([lookup, flaky])
    return tool_loop(model, [lookup, flaky], **options)


def _org(tool_=research):
    script = [_turn((tool_.name, {"topic": "a"})), "team answer"]
    team = create_agent(ScriptedChatModel(script=script), [tool_], name="team")
    return StateGraph(MessagesState).add_node("team", team).add_edge(START, "team").compile(
        checkpointer=InMemorySaver())


def _task_id(segment):
    return segment.split(":", 1)[1]


def _events(graph, inputs=GO, config=None, **options):
    async def main():
        return [event async for event in graph.astream_events(inputs, config, version="v2", **options)]

    return asyncio.run(main())


def _step_runs(graph):
    """(name, parent's name) → its events, for every run whose metadata names the `tools` node; and
    the exception the run raised (None if it went on)."""

    async def main():
        names, runs = {}, {}
        try:
            async for event in graph.astream_events(GO, version="v2"):
                names[event["run_id"]] = event["name"]
                if event["metadata"].get("langgraph_node") == "tools":
                    run = (event["name"], names[event["parent_ids"][-1]])
                    runs.setdefault(run, []).append(event["event"])
        except ConnectionError as error:
            return runs, error
        return runs, None

    return asyncio.run(main())


def _timeline(graph, inputs=GO, config=None):
    """(mode, chunk) for every chunk of the five step modes, task ids left as they are."""
    return list(graph.stream(inputs, config or _thread(), stream_mode=STEP_MODES))


# -- 1. where every observation comes from ---------------------------------------------------------------
@lesson
def test_each_channel_reports_its_point_of_a_tools_step_in_order():
    """Around one tools task: its start, the tool's events, its update, its result, then values and
    the next checkpoint. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    chunks = _timeline(_agent([("lookup", {"query": "Paris"})], [lookup]))
    start = next(i for i, (m, c) in enumerate(chunks) if m == "tasks" and c["name"] == "tools")
    seen = []
    for mode, chunk in chunks[start:start + 7]:
        if mode == "tasks":
            seen.append(("tasks", "start" if "input" in chunk else "result"))
        elif mode == "tools":
            seen.append(("tools", chunk["event"]))
        elif mode == "checkpoints":
            seen.append(("checkpoints", chunk["metadata"]["step"]))
        else:
            seen.append((mode, list(chunk) if mode == "updates" else len(chunk["messages"])))
    assert seen == [("tasks", "start"), ("tools", "tool-started"), ("tools", "tool-finished"),
                    ("updates", ["tools"]), ("tasks", "result"), ("values", 3), ("checkpoints", 2)]


@lesson
@pytest.mark.parametrize("mode", ["values", "checkpoints"])
def test_astream_events_sends_values_or_checkpoints_as_the_roots_on_chain_stream_if_passed_as_stream_mode(
    mode,
):
    """Section 1's table: the barrier's and the checkpoint's chunks reach `astream_events` only as
    the root run's `on_chain_stream`, and only when passed as `stream_mode`; the same chunks as
    `stream()` sends. Pinned: langgraph 1.2.24, langchain 1.5.2, langchain-core 1.8.3."""
    def key(chunk):
        return len(chunk["messages"]) if mode == "values" else (chunk["metadata"]["step"], chunk["next"])

    def roots(events):
        return [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream" and not e["parent_ids"]]

    agent = _agent([("lookup", {"query": "a"})], [lookup])
    streamed = [key(c) for c in agent.stream(GO, _thread("s"), stream_mode=mode)]
    assert [key(c) for c in roots(_events(agent, config=_thread("e"), stream_mode=mode))] == streamed
    assert len(streamed) == (4 if mode == "values" else 5)
    without = roots(_events(agent, config=_thread("n")))  # the default, "updates", instead
    assert [list(c) for c in without] == [["model"], ["tools"], ["model"]]


@lesson
def test_a_checkpoint_lists_the_next_steps_tasks_by_the_ids_the_tasks_mode_then_reports():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    chunks = _timeline(_agent([("lookup", {"query": "Paris"})], [lookup]))
    checkpoints = [c for m, c in chunks if m == "checkpoints"]
    starts = [(c["name"], c["id"]) for m, c in chunks if m == "tasks" and "input" in c]
    planned = [(t["name"], t["id"]) for c in checkpoints for t in c["tasks"] if t["name"] != "__start__"]
    assert planned == starts == [(name, starts[i][1]) for i, name in enumerate(["model", "tools", "model"])]
    assert [c["metadata"]["step"] for c in checkpoints] == [-1, 0, 1, 2, 3]


@lesson
def test_messages_mode_sends_a_returned_tool_message_as_its_task_ends_just_before_its_update():
    """Under create_agent: the tool's events, then the ToolMessage the task returned, its update, its
    result. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _agent([("lookup", {"query": "Paris"})], [lookup])
    seen = []
    for mode, chunk in agent.stream(GO, _thread(), stream_mode=["tasks", "tools", "messages", "updates"]):
        if mode == "messages" and chunk[0].type == "tool":
            seen.append(("messages", chunk[0].content))
        elif mode == "tools":
            seen.append(("tools", chunk["event"]))
        elif mode == "updates" and "tools" in chunk:
            seen.append(("updates", "tools"))
        elif mode == "tasks" and chunk["name"] == "tools":
            seen.append(("tasks", "start" if "input" in chunk else "result"))
    assert seen == [("tasks", "start"), ("tools", "tool-started"), ("tools", "tool-finished"),
                    ("messages", "found Paris"), ("updates", "tools"), ("tasks", "result")]


@lesson
def test_messages_mode_in_a_toolnode_batch_every_tool_message_waits_for_the_whole_batch():
    """One ToolNode task: no ToolMessage is sent before every call of the batch has finished.
    Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    model = ScriptedChatModel(script=[_turn(("lookup", {"query": "a"}), ("crawl", {"site": "b"})), "done"])
    graph = tool_loop(model.bind_tools([lookup, crawl]), [lookup, crawl])
    seen = []
    for mode, chunk in graph.stream(GO, stream_mode=["tools", "messages"]):
        if mode == "tools" and chunk["event"] == "tool-finished":
            seen.append("finished")
        elif mode == "messages" and chunk[0].type == "tool":
            seen.append("message")
    assert seen == ["finished", "finished", "message", "message"]


def _race():
    quick_seen = threading.Event()

    @tool
    def quick(query: str) -> str:
        """Answer at once."""
        return "quick answer"

    @tool
    def slow(query: str) -> str:
        """Answer once the caller has seen quick's update; give up after 2 s."""
        return "released" if quick_seen.wait(timeout=2) else "timed out"

    agent = create_agent(ScriptedChatModel(script=[_turn(("quick", {"query": "a"}), ("slow", {"query": "b"})),
                                                   "done"]), [quick, slow])
    seen = []
    for mode, chunk in agent.stream(GO, stream_mode=["updates", "values"]):
        if mode == "values":
            seen.append(("values", len(chunk["messages"])))
        elif "tools" in chunk:
            seen.append(("updates", chunk["tools"]["messages"][0].content))
            quick_seen.set()
    return seen


@lesson
def test_an_update_is_sent_when_its_task_ends_while_a_sibling_task_still_runs():
    """`slow` returns only after the consumer has seen `quick`'s update. Pinned: langgraph 1.2.24,
    langchain 1.5.2."""
    updates = [text for kind, text in _race() if kind == "updates"]
    assert updates == ["quick answer", "released"]


@lesson
def test_values_is_sent_only_at_the_barrier_after_every_task_of_the_step():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    seen = _race()
    first, second = (i for i, (kind, _) in enumerate(seen) if kind == "updates")
    assert second == first + 1 and seen[second + 1] == ("values", 4)


# -- 2. astream_events for a tools step -----------------------------------------------------------------
@lesson
def test_astream_events_a_tool_that_raises_ends_in_on_tool_error_even_when_toolnode_answers_it():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain-core 1.8.3 (`on_tool_error`
    reaches `astream_events` since langchain#30709)."""
    runs, raised = _step_runs(_flaky_loop(("lookup", {"query": "a"}), ("flaky", {"query": "b"}),
                                          handle_tool_errors=True))
    assert raised is None
    assert runs[("flaky", "tools")] == ["on_tool_start", "on_tool_error"]
    assert runs[("lookup", "tools")] == ["on_tool_start", "on_tool_end"]


@lesson
def test_astream_events_a_handled_error_lets_the_node_run_stream_and_end_with_the_error_message():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain-core 1.8.3."""
    graph = _flaky_loop(("lookup", {"query": "a"}), ("flaky", {"query": "b"}), handle_tool_errors=True)
    runs, _ = _step_runs(graph)
    assert runs[("tools", "LangGraph")] == ["on_chain_start", "on_chain_stream", "on_chain_end"]
    (end,) = [e for e in _events(graph, include_names=["tools"]) if e["event"] == "on_chain_end"]
    contents = [m.content for m in end["data"]["output"]["messages"]]
    assert contents == ["found a", "Error: ConnectionError('service down')\n Please fix your mistakes."]


@lesson
def test_astream_events_the_error_message_toolnode_writes_is_in_no_tool_event():
    """langgraph#6018 looked for it there. Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    graph = _flaky_loop(("flaky", {"query": "b"}), handle_tool_errors=True)
    tool_events = _events(graph, include_types=["tool"])
    assert [e["event"] for e in tool_events] == ["on_tool_start", "on_tool_error"]
    assert not any(isinstance(value, ToolMessage) for e in tool_events for value in e["data"].values())


@lesson
def test_astream_events_an_unhandled_tool_error_stops_the_node_run_with_no_end_event_and_raises():
    """No `on_chain_end` and no chain error event; the exception leaves the `async for`.
    Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain-core 1.8.3."""
    runs, raised = _step_runs(_flaky_loop(("flaky", {"query": "b"})))
    assert isinstance(raised, ConnectionError)
    assert runs == {("flaky", "tools"): ["on_tool_start", "on_tool_error"],
                    ("tools", "LangGraph"): ["on_chain_start"]}


@lesson
def test_astream_events_parent_ids_list_every_run_above_root_first():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain-core 1.8.3."""
    events = _events(_flaky_loop(("lookup", {"query": "a"})))
    names = {e["run_id"]: e["name"] for e in events}
    (start,) = [e for e in events if e["event"] == "on_tool_start"]
    assert [names[run] for run in start["parent_ids"]] == ["LangGraph", "tools"]


@lesson
def test_astream_events_on_tool_start_carries_only_the_input():
    """No `tool_call_id` (langchain#34869, which would add it, was closed unmerged).
    Pinned: langchain-core 1.8.3."""
    events = _events(_flaky_loop(("lookup", {"query": "a"})))
    (start,) = [e for e in events if e["event"] == "on_tool_start"]
    assert start["data"] == {"input": {"query": "a"}}


@lesson
def test_astream_events_on_tool_end_output_is_the_tool_message_with_its_call_id():
    """Pinned: langchain-core 1.8.3, langgraph-prebuilt 1.1.3."""
    events = _events(_flaky_loop(("lookup", {"query": "a"})))
    (end,) = [e for e in events if e["event"] == "on_tool_end"]
    assert sorted(end["data"]) == ["input", "output"]
    assert isinstance(end["data"]["output"], ToolMessage) and end["data"]["output"].tool_call_id == "call_0_0"


@tool
def set_flag(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Set a flag."""
    return Command(update={"messages": [ToolMessage("flag set", tool_call_id=tool_call_id)]})


@lesson
@pytest.mark.parametrize("agent", ["tool_loop", "create_agent"])
def test_astream_events_on_tool_end_output_is_the_command_a_tool_returned(agent):
    """Pinned: langchain-core 1.8.3, langgraph-prebuilt 1.1.3, langchain 1.5.2."""
    script = [_turn(("set_flag", {})), "done"]
    if agent == "tool_loop":
        graph = tool_loop(ScriptedChatModel(script=script).bind_tools([set_flag]), [set_flag])
    else:
        graph = create_agent(ScriptedChatModel(script=script), [set_flag])
    (end,) = [e for e in _events(graph) if e["event"] == "on_tool_end"]
    assert isinstance(end["data"]["output"], Command)


@lesson
def test_a_callback_handler_gets_the_tool_call_id_at_on_tool_start():
    """Unlike the `on_tool_start` event of `astream_events`. Pinned: langchain-core 1.8.3,
    langgraph-prebuilt 1.1.3."""
    class Starts(BaseCallbackHandler):
        def __init__(self):
            self.ids = []

        def on_tool_start(self, serialized, input_str, **kwargs):
            self.ids.append(kwargs.get("tool_call_id"))

    handler = Starts()
    _flaky_loop(("lookup", {"query": "a"})).invoke(GO, {"callbacks": [handler]})
    assert handler.ids == ["call_0_0"]


@lesson
def test_astream_events_on_tool_error_data_carries_error_input_and_tool_call_id():
    """`tool_call_id` since langchain#33731. Pinned: langchain-core 1.8.3."""
    events = _events(_flaky_loop(("flaky", {"query": "b"}), handle_tool_errors=True))
    (error,) = [e for e in events if e["event"] == "on_tool_error"]
    assert sorted(error["data"]) == ["error", "input", "tool_call_id"]
    assert isinstance(error["data"]["error"], ConnectionError) and error["data"]["tool_call_id"] == "call_0_0"


@lesson
def test_astream_events_an_event_matching_any_include_filter_is_kept():
    """Pinned: langchain-core 1.8.3, langgraph 1.2.24."""
    graph = _flaky_loop(("lookup", {"query": "a"}))
    by_type = {e["name"] for e in _events(graph, include_types=["tool"])}
    by_name = {e["name"] for e in _events(graph, include_names=["tools"])}
    both = {e["name"] for e in _events(graph, include_types=["tool"], include_names=["tools"])}
    assert (by_type, by_name, both) == ({"lookup"}, {"tools"}, {"lookup", "tools"})


@lesson
def test_astream_events_a_run_carries_its_own_tags_and_the_configs_but_not_its_nodes_step_tag():
    """The config's tags reach every run; the `tools` node's `graph:step:2` does not reach the tools
    in it. Pinned: langchain-core 1.8.3, langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    @tool
    def remote(query: str) -> str:
        """A lookup on a remote service."""
        return f"found {query}"

    remote.tags = ["remote"]
    model = ScriptedChatModel(script=[_turn(("lookup", {"query": "a"}), ("remote", {"query": "b"})), "done"])
    graph = tool_loop(model.bind_tools([lookup, remote]), [lookup, remote])
    tagged = _events(graph, config={"tags": ["ui"]}, include_tags=["remote"])
    assert {e["name"] for e in tagged} == {"remote"}
    assert all(e["tags"] == ["seq:step:1", "ui", "remote"] for e in tagged)
    every = _events(graph, config={"tags": ["ui"]})
    assert all("ui" in e["tags"] for e in every)
    (node,) = {tuple(e["tags"]) for e in every if e["name"] == "tools"}
    assert node == ("graph:step:2", "ui")
    tool_tags = [e["tags"] for e in every if e["event"].startswith("on_tool")]
    assert tool_tags and all(not any(t.startswith("graph:") for t in tags) for tags in tool_tags)


@lesson
def test_astream_events_a_nodes_sequence_tags_each_run_directly_under_it_with_its_place_not_the_runs_below():
    """`seq:step:1` on each tool run directly under the `tools` node (the node's own code is the first
    step of its sequence); a sub-agent a tool runs does not inherit it.
    Pinned: langchain-core 1.8.3, langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain 1.5.2."""
    graph = _flaky_loop(("lookup", {"query": "a"}), ("flaky", {"query": "b"}), handle_tool_errors=True)
    tool_tags = {e["name"]: e["tags"] for e in _events(graph) if e["event"] == "on_tool_start"}
    assert tool_tags == {"lookup": ["seq:step:1"], "flaky": ["seq:step:1"]}
    agent = create_agent(ScriptedChatModel(script=[_turn(("research", {"topic": "a"})), "ok"]), [research])
    (researcher,) = [e for e in _events(agent)
                     if e["event"] == "on_chain_start" and e["name"] == "researcher"]
    assert researcher["tags"] == []


@lesson
def test_astream_events_with_config_tags_reach_every_run_below():
    """Pinned: langchain-core 1.8.3, langgraph 1.2.24, langchain 1.5.2."""
    agent = create_agent(ScriptedChatModel(script=[_turn(("lookup", {"query": "a"})), "ok"]), [lookup])
    events = _events(agent.with_config(tags=["agent"]))
    assert {e["name"] for e in events} >= {"LangGraph", "model", "tools", "lookup", "ScriptedChatModel"}
    assert all("agent" in e["tags"] for e in events)


@lesson
def test_astream_events_a_tools_own_tags_do_not_reach_a_tool_or_a_sub_agent_it_calls():
    """Tagging a tool does not tag what it runs; the config's tags do reach it.
    Pinned: langchain-core 1.8.3, langgraph 1.2.24, langchain 1.5.2."""
    @tool
    def lookup_twice(query: str) -> str:
        """Look something up, then research it with a sub-agent."""
        return lookup.invoke({"query": query}) + research.invoke({"topic": query})

    lookup_twice.tags = ["outer"]
    script = [_turn(("lookup_twice", {"query": "a"})), "ok"]
    agent = create_agent(ScriptedChatModel(script=script), [lookup_twice])
    events = _events(agent, config={"tags": ["ui"]})
    names = {e["run_id"]: e["name"] for e in events}
    below = [e for e in events if "lookup_twice" in [names.get(run) for run in e["parent_ids"]]]
    assert {e["name"] for e in below} >= {"lookup", "research", "researcher", "crawl", "ScriptedChatModel"}
    assert all("outer" not in e["tags"] and "ui" in e["tags"] for e in below)
    assert all("outer" in e["tags"] for e in events if e["name"] == "lookup_twice")


@lesson
def test_astream_events_excluding_a_node_by_name_keeps_the_tool_runs_inside_it():
    """Practice question 3. Pinned: langchain-core 1.8.3, langgraph 1.2.24."""
    graph = _flaky_loop(("lookup", {"query": "a"}), ("flaky", {"query": "b"}), handle_tool_errors=True)
    kept = {(e["event"], e["name"]) for e in _events(graph, exclude_names=["tools"])}
    assert {("on_tool_start", "lookup"), ("on_tool_end", "lookup")} <= kept
    assert not any(name == "tools" for _, name in kept)


@lesson
def test_astream_events_metadata_names_the_node_its_step_and_its_triggers():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    (start,) = [e for e in _events(_flaky_loop(("lookup", {"query": "a"}))) if e["event"] == "on_tool_start"]
    meta = start["metadata"]
    assert (meta["langgraph_node"], meta["langgraph_step"], meta["langgraph_triggers"]) == (
        "tools", 2, ("branch:to:tools",))


# -- 3. tasks, checkpoints and debug --------------------------------------------------------------------
def _crash_debug():
    agent = _agent([("flaky", {"query": "b"})], [flaky])
    events = []
    with pytest.raises(ConnectionError):
        for event in agent.stream(GO, _thread("crash"), stream_mode="debug"):
            events.append(event)
    return agent, events


@lesson
def test_debug_mode_is_checkpoints_and_tasks_each_wrapped_with_its_step():
    """A checkpoint's step is the step that ended; a task's, the step it runs in.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    _, events = _crash_debug()
    assert all(sorted(e) == ["payload", "step", "timestamp", "type"] for e in events)
    assert [(e["step"], e["type"], e["payload"].get("name")) for e in events] == [
        (-1, "checkpoint", None), (0, "checkpoint", None), (1, "task", "model"), (1, "task_result", "model"),
        (1, "checkpoint", None), (2, "task", "tools"), (2, "task_result", "tools")]


@lesson
def test_a_failing_tasks_result_carries_the_exception_object_though_typed_as_a_str():
    """`TaskResultPayload.error` is annotated `str | None`. langgraph#5764 found the result missing
    when "debug" was the only mode (langgraph#6984 proposed a fix); streamed on the pins.
    Pinned: langgraph 1.2.24."""
    from langgraph.types import TaskResultPayload

    _, events = _crash_debug()
    error = events[-1]["payload"]["error"]
    assert isinstance(error, ConnectionError) and events[-1]["payload"]["result"] == {}
    assert typing.get_type_hints(TaskResultPayload)["error"] == str | None


@lesson
def test_no_checkpoint_follows_a_failed_step():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    _, events = _crash_debug()
    assert [e["step"] for e in events if e["type"] == "checkpoint"] == [-1, 0, 1]


@lesson
def test_the_thread_keeps_a_failed_tasks_error_as_a_string_on_the_pending_task():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent, events = _crash_debug()
    snapshot = agent.get_state(_thread("crash"))
    (task,) = snapshot.tasks
    assert snapshot.next == ("tools",) and task.id == events[-1]["payload"]["id"]
    assert task.error == "ConnectionError('service down')"


@lesson
def test_create_agents_tools_task_input_is_its_one_call_and_a_toolnodes_the_state():
    """Pinned: langgraph 1.2.24, langchain 1.5.2, langgraph-prebuilt 1.1.3."""
    _, events = _crash_debug()
    (tools_start,) = [e["payload"] for e in events if e["type"] == "task" and e["payload"]["name"] == "tools"]
    assert [call["id"] for call in tools_start["input"]] == ["call_0_0"]
    (loop_start,) = [c for c in _flaky_loop(("lookup", {"query": "a"})).stream(GO, stream_mode="tasks")
                     if c["name"] == "tools" and "input" in c]
    assert isinstance(loop_start["input"], dict) and "messages" in loop_start["input"]


@lesson
def test_tasks_mode_gives_debugs_task_payloads_without_the_wrapper():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    def strip(payload):
        return {key: value for key, value in payload.items() if key not in ("id", "input", "result")}

    agent = _agent([("lookup", {"query": "a"})], [lookup], checkpointer=False)
    tasks = [strip(c) for c in agent.stream(GO, stream_mode="tasks")]
    debug = [strip(e["payload"]) for e in agent.stream(GO, stream_mode="debug") if e["type"] != "checkpoint"]
    assert tasks == debug and len(tasks) == 6


@lesson
def test_tasks_mode_never_reports_the_inputs_start_task_though_step_minus_one_names_it():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    chunks = _timeline(_agent([("lookup", {"query": "a"})], [lookup]))
    first = next(c for m, c in chunks if m == "checkpoints")
    assert first["metadata"]["step"] == -1 and [t["name"] for t in first["tasks"]] == ["__start__"]
    names = [c["name"] for m, c in chunks if m == "tasks"]
    assert names == ["model", "model", "tools", "tools", "model", "model"]
    debug = _agent([("lookup", {"query": "a"})], [lookup]).stream(GO, _thread(), stream_mode="debug")
    assert all(e["payload"]["name"] != "__start__" for e in debug if e["type"] != "checkpoint")


@lesson
def test_a_task_start_and_a_task_result_carry_these_keys():
    """A start: id, name, input, triggers, metadata; a result: id, name, error, result, interrupts.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _agent([("lookup", {"query": "a"})], [lookup], checkpointer=False)
    chunks = list(agent.stream(GO, stream_mode="tasks"))
    assert {tuple(sorted(c)) for c in chunks if "input" in c} == {
        ("id", "input", "metadata", "name", "triggers")}
    assert {tuple(sorted(c)) for c in chunks if "input" not in c} == {
        ("error", "id", "interrupts", "name", "result")}


@lesson
def test_checkpoints_mode_payloads_equal_debugs_checkpoint_payloads():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    chunks = list(_agent([("lookup", {"query": "a"})], [lookup]).stream(
        GO, _thread(), stream_mode=["checkpoints", "debug"]))
    checkpoints = [c for m, c in chunks if m == "checkpoints"]
    debug = [c["payload"] for m, c in chunks if m == "debug" and c["type"] == "checkpoint"]
    assert len(checkpoints) == 5 and checkpoints == debug


@lesson
def test_checkpoints_mode_sends_nothing_without_a_checkpointer():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _agent([("lookup", {"query": "a"})], [lookup], checkpointer=False)
    assert list(agent.stream(GO, stream_mode="checkpoints")) == []
    assert [e["type"] for e in agent.stream(GO, stream_mode="debug")].count("checkpoint") == 0


@lesson
def test_a_checkpoint_event_holds_most_of_get_states_fields():
    """All but `created_at` and `interrupts`; its tasks are dicts {id, name, interrupts, state}.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _agent([("lookup", {"query": "a"})], [lookup])
    checkpoints = list(agent.stream(GO, _thread(), stream_mode="checkpoints"))
    assert len(checkpoints) == 5
    assert sorted(checkpoints[2]) == ["config", "metadata", "next", "parent_config", "tasks", "values"]
    fields = set(agent.get_state(_thread())._fields)
    assert fields - set(checkpoints[2]) == {"created_at", "interrupts"} and set(checkpoints[2]) <= fields
    assert checkpoints[2]["metadata"] == {"source": "loop", "step": 1, "parents": {}}
    assert checkpoints[2]["next"] == ["tools"] and sorted(checkpoints[2]["tasks"][0]) == [
        "id", "interrupts", "name", "state"]


def _fails_once():
    calls = []

    @tool
    def flaky_once(query: str) -> str:
        """A lookup whose service is down the first time."""
        calls.append(query)
        if len(calls) == 1:
            raise ConnectionError("service down")
        return "ok"

    return flaky_once


def _sent_again(kind):
    """A checkpointed agent whose turn calls `lookup` and a tool that stops the step (`flaky_once`
    raises the first time; `delete` interrupts); then the retry (`None`) or the resume. Returns the
    checkpoints the second call sent and the thread's history length before and after it."""
    second = _fails_once() if kind == "retry" else delete
    second_args = {"query": "b"} if kind == "retry" else {"path": "x"}
    agent = _agent([("lookup", {"query": "a"}), (second.name, second_args)], [lookup, second])
    config = _thread(kind)
    try:
        agent.invoke(GO, config)
    except ConnectionError:
        pass
    before = len(list(agent.get_state_history(config)))
    again = None if kind == "retry" else Command(resume="yes")
    sent = list(agent.stream(again, config, stream_mode="checkpoints"))
    return sent, before, len(list(agent.get_state_history(config)))


@lesson
@pytest.mark.parametrize("kind", ["resume", "retry"])
def test_a_resume_or_a_retry_sends_the_checkpoint_it_starts_from_again_without_saving_it_twice(kind):
    """Steps 1, 2, 3 are sent; only 2 and 3 are new in the thread's history.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    sent, before, after = _sent_again(kind)
    assert [c["metadata"]["step"] for c in sent] == [1, 2, 3] and after - before == 2


@lesson
@pytest.mark.parametrize("kind", ["resume", "retry"])
def test_in_a_checkpoint_sent_again_a_finished_tasks_dict_adds_result_a_failed_ones_has_error_not_interrupts(
    kind,
):
    """A fresh checkpoint's task dicts are {id, name, interrupts, state}; in the one sent again the
    finished sibling's adds `result`, the failed task's has `error` and no `interrupts`, the
    interrupted task's lists its interrupt. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    sent, _, _ = _sent_again(kind)
    finished, stopped = sent[0]["tasks"]
    assert sorted(finished) == ["id", "interrupts", "name", "result", "state"]
    assert [m.content for m in finished["result"]["messages"]] == ["found a"]
    if kind == "retry":
        assert sorted(stopped) == ["error", "id", "name", "state"] and "service down" in stopped["error"]
    else:
        assert sorted(stopped) == ["id", "interrupts", "name", "state"]
        assert [i["value"] for i in stopped["interrupts"]] == ["delete x?"]
    assert all(sorted(t) == ["id", "interrupts", "name", "state"] for c in sent[1:] for t in c["tasks"])


@lesson
def test_a_run_that_fails_in_its_second_tools_step_sends_five_checkpoints_first():
    """Practice question 2: input (step -1), then steps 0 to 3; the failing step 4 has none.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    script = [_turn(("lookup", {"query": "a"})), _turn(("flaky", {"query": "b"})), "done"]
    agent = create_agent(ScriptedChatModel(script=script), [lookup, flaky], checkpointer=InMemorySaver())
    seen = []
    with pytest.raises(ConnectionError):
        for checkpoint in agent.stream(GO, _thread(), stream_mode="checkpoints"):
            seen.append(checkpoint["metadata"]["step"])
    assert seen == [-1, 0, 1, 2, 3]


# -- 4. namespaces ------------------------------------------------------------------------------------------
def _two_topics():
    return [_turn(("research", {"topic": "a"}), ("research", {"topic": "b"})), tool_results_summary]


@lesson
def test_a_sub_agent_in_a_tool_streams_under_the_outer_tools_tasks_id_which_maps_to_its_call():
    """Under create_agent each call is its own task (langgraph#6714). Pinned: langgraph 1.2.24,
    langchain 1.5.2."""
    lead = create_agent(ScriptedChatModel(script=_two_topics()), [research])
    call_of_task, site_of_call = {}, {}
    for namespace, mode, chunk in lead.stream(GO, stream_mode=["tasks", "tools"], subgraphs=True):
        if mode == "tasks" and not namespace and chunk["name"] == "tools" and "input" in chunk:
            call_of_task[chunk["id"]] = chunk["input"][0]["id"]
        elif mode == "tools" and namespace and chunk["event"] == "tool-started":
            assert len(namespace) == 1 and namespace[0].startswith("tools:")
            site_of_call[call_of_task[_task_id(namespace[0])]] = chunk["input"]["site"]
    assert site_of_call == {"call_0_0": "a.org", "call_0_1": "b.org"}


@lesson
def test_in_one_toolnode_task_a_second_nested_graph_adds_a_counter_segment():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    batch = tool_loop(ScriptedChatModel(script=_two_topics()).bind_tools([research]), [research])
    namespaces = {ns for ns, _ in batch.stream(GO, stream_mode="tools", subgraphs=True) if ns}
    (first,) = [ns for ns in namespaces if len(ns) == 1]
    assert namespaces == {first, (first[0], "1")} and first[0].startswith("tools:")


@lesson
def test_later_nested_graphs_in_one_task_get_counter_segments_1_then_2_in_the_order_they_started():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    @tool
    def research_thrice(topic: str) -> str:
        """Research three sites, one after another."""
        return " ".join(research.invoke({"topic": f"{topic}{n}"}) for n in range(3))

    agent = create_agent(ScriptedChatModel(script=[_turn(("research_thrice", {"topic": "t"})), "ok"]),
                         [research_thrice])
    site_of = {}
    for ns, chunk in agent.stream(GO, stream_mode="tools", subgraphs=True):
        if ns and chunk["event"] == "tool-started":
            site_of[ns[1:]] = chunk["input"]["site"]
    assert site_of == {(): "t0.org", ("1",): "t1.org", ("2",): "t2.org"}


@lesson
def test_three_sub_agents_in_one_toolnode_task_stream_under_the_task_then_1_then_2():
    """Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    three = [_turn(*[("research", {"topic": t}) for t in "abc"]), tool_results_summary]
    batch = tool_loop(ScriptedChatModel(script=three).bind_tools([research]), [research])
    namespaces = {ns for ns, _ in batch.stream(GO, stream_mode="tools", subgraphs=True) if ns}
    (first,) = [ns for ns in namespaces if len(ns) == 1]
    assert namespaces == {first, (first[0], "1"), (first[0], "2")}


@lesson
def test_each_level_of_nesting_adds_a_segment_and_every_mode_carries_it():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    modes_at = {}
    for namespace, mode, _ in _org().stream(GO, _thread(), subgraphs=True, stream_mode=[
            "values", "updates", "messages", "tools", "tasks", "checkpoints", "debug"]):
        modes_at.setdefault(tuple(segment.split(":")[0] for segment in namespace), set()).add(mode)
    every = {"values", "updates", "messages", "tools", "tasks", "checkpoints", "debug"}
    assert modes_at == {(): every - {"messages", "tools"}, ("team",): every, ("team", "tools"): every}


@lesson
def test_a_nested_graphs_checkpoints_are_saved_under_its_namespace():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    pairs = [(ns, chunk["config"]["configurable"]["checkpoint_ns"])
             for ns, chunk in _org().stream(GO, _thread(), stream_mode="checkpoints", subgraphs=True)]
    assert {len(ns) for ns, _ in pairs} == {0, 1, 2}
    assert all(saved_ns == "|".join(ns) for ns, saved_ns in pairs)


@lesson
def test_nested_graphs_checkpoints_are_saved_in_the_parents_checkpointer():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    org = _org()
    org.invoke(GO, _thread("org"))
    saved = {t.config["configurable"]["checkpoint_ns"] for t in org.checkpointer.list(_thread("org"))}
    levels = {tuple(segment.split(":")[0] for segment in ns.split("|")) if ns else () for ns in saved}
    assert levels == {(), ("team",), ("team", "tools")}


@lesson
def test_a_second_nested_graph_in_one_call_inside_a_subgraph_node_has_three_segments():
    """Practice question 1: the namespace that ends in '1' has three segments.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    @tool
    def research_twice(topic: str) -> str:
        """Research a topic twice."""
        return research.invoke({"topic": topic}) + research.invoke({"topic": topic})

    stream = _org(research_twice).stream(GO, _thread(), stream_mode="tools", subgraphs=True)
    namespaces = {ns for ns, _ in stream}
    (counted,) = [ns for ns in namespaces if ns and ns[-1] == "1"]
    assert len(counted) == 3 and counted[:2] in namespaces and max(map(len, namespaces)) == 3


def _model_starts():
    return [e for e in _events(_org(), config=_thread("events"), include_types=["chat_model"])
            if e["event"] == "on_chat_model_start"]


@lesson
def test_langgraph_checkpoint_ns_is_the_stream_namespace_plus_the_tasks_own_segment():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    streamed = {ns for ns, _ in _org().stream(GO, _thread(), stream_mode="messages", subgraphs=True)}
    paths = [tuple(e["metadata"]["langgraph_checkpoint_ns"].split("|")) for e in _model_starts()]
    assert [(len(p), p[-1].split(":")[0]) for p in paths] == [
        (2, "model"), (3, "model"), (3, "model"), (2, "model")]
    assert {tuple(s.split(":")[0] for s in p[:-1]) for p in paths} == {
        tuple(s.split(":")[0] for s in ns) for ns in streamed}


@lesson
def test_langgraph_checkpoint_ns_and_the_messages_namespace_agree_event_by_event():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    for ns, (_, meta) in _org().stream(GO, _thread(), stream_mode="messages", subgraphs=True):
        assert tuple(meta["langgraph_checkpoint_ns"].split("|")[:-1]) == ns


@lesson
def test_langgraph_checkpoint_ns_minus_its_last_segment_is_the_namespace_with_a_counter_segment_too():
    """Under one ToolNode task, the second sub-agent's path carries the counter. Pinned: langgraph
    1.2.24, langgraph-prebuilt 1.1.3."""
    batch = tool_loop(ScriptedChatModel(script=_two_topics()).bind_tools([research]), [research])
    namespaces = set()
    for ns, (_, meta) in batch.stream(GO, stream_mode="messages", subgraphs=True):
        assert tuple(meta["langgraph_checkpoint_ns"].split("|")[:-1]) == ns
        namespaces.add(ns)
    assert any(ns and ns[-1] == "1" for ns in namespaces)


@lesson
def test_under_a_toolnode_batch_parent_ids_lead_to_the_outer_tool_run_whose_end_carries_the_call_id():
    """The namespace cannot name the call there; `astream_events` can. Pinned: langgraph 1.2.24,
    langgraph-prebuilt 1.1.3, langchain-core 1.8.3."""
    batch = tool_loop(ScriptedChatModel(script=_two_topics()).bind_tools([research]), [research])
    events = _events(batch)
    call_of_run = {e["run_id"]: e["data"]["output"].tool_call_id for e in events
                   if e["event"] == "on_tool_end" and e["name"] == "research"}
    site_of_call = {}
    for e in events:
        if e["event"] == "on_tool_start" and e["name"] == "crawl":
            (outer,) = [run for run in e["parent_ids"] if run in call_of_run]
            site_of_call[call_of_run[outer]] = e["data"]["input"]["site"]
    assert site_of_call == {"call_0_0": "a.org", "call_0_1": "b.org"}


@lesson
def test_metadata_checkpoint_ns_keeps_the_outermost_nested_namespace():
    """Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    starts = _model_starts()
    outer = {e["metadata"]["checkpoint_ns"] for e in starts}
    assert len(outer) == 1 and outer.pop().startswith("team:")
    assert any(e["metadata"]["langgraph_checkpoint_ns"].count("|") == 2 for e in starts)


@lesson
def test_lc_agent_name_is_the_name_given_to_create_agent():
    """deepagents#469's advice. Pinned: langchain 1.5.2."""
    names = [e["metadata"]["lc_agent_name"] for e in _model_starts()]
    assert names == ["team", "researcher", "researcher", "team"]


@lesson
def test_parent_ids_of_an_inner_model_run_pass_through_the_outer_tool_run():
    """Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    events = _events(_org(), config=_thread("events"))
    names = {e["run_id"]: e["name"] for e in events}
    inner = next(e for e in events if e["event"] == "on_chat_model_start"
                 and e["metadata"].get("lc_agent_name") == "researcher")
    assert [names[run] for run in inner["parent_ids"]] == [
        "LangGraph", "team", "team", "tools", "research", "researcher", "model"]


# -- 5. version="v2" -------------------------------------------------------------------------------------
COMBINATIONS = [{"stream_mode": "updates"}, {"stream_mode": ["updates", "tools"]},
                {"stream_mode": "updates", "subgraphs": True},
                {"stream_mode": ["updates", "tools"], "subgraphs": True}]


def _first(stream):
    item = next(stream)
    stream.close()
    return item


@lesson
@pytest.mark.parametrize("options", COMBINATIONS, ids=["mode", "modes", "mode+subgraphs", "modes+subgraphs"])
def test_stream_v2_yields_a_type_ns_data_part_whatever_the_modes_and_subgraphs(options):
    """langgraph#7102. Pinned: langgraph 1.2.24."""
    part = _first(create_agent(ScriptedChatModel(script=_two_topics()), [research]).stream(
        GO, **options, version="v2"))
    assert isinstance(part, dict) and sorted(part) == ["data", "ns", "type"] and part["type"] == "updates"


@lesson
def test_stream_v1_is_the_default_and_its_shape_depends_on_modes_and_subgraphs():
    """Pinned: langgraph 1.2.24."""
    assert inspect.signature(Pregel.stream).parameters["version"].default == "v1"
    lead = create_agent(ScriptedChatModel(script=_two_topics()), [research])
    shapes = []
    for options in COMBINATIONS:
        item = _first(lead.stream(GO, **options))
        is_tuple = isinstance(item, tuple)
        shapes.append(tuple(type(x).__name__ for x in item) if is_tuple else type(item).__name__)
    assert shapes == ["dict", ("str", "dict"), ("tuple", "dict"), ("tuple", "str", "dict")]


def _deleter():
    return _agent([("delete", {"path": "notes.txt"})], [delete])


@lesson
def test_a_v2_values_part_carries_the_interrupts():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    parts = list(_deleter().stream(GO, _thread(), stream_mode="values", version="v2"))
    assert all(sorted(p) == ["data", "interrupts", "ns", "type"] for p in parts)
    assert parts[0]["interrupts"] == ()
    assert [i.value for i in parts[-1]["interrupts"]] == ["delete notes.txt?"]


@lesson
def test_invoke_v2_returns_a_graph_output_with_the_state_and_the_interrupts_apart():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    result = _deleter().invoke(GO, _thread(), version="v2")
    assert isinstance(result, GraphOutput) and list(result.value) == ["messages"]
    assert [i.value for i in result.interrupts] == ["delete notes.txt?"]


@lesson
def test_invoke_v2_with_another_stream_mode_returns_the_list_of_parts():
    """langgraph#7796, documented by langgraph#7886. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    result = _deleter().invoke(GO, _thread(), version="v2", stream_mode="updates")
    assert isinstance(result, list)
    assert [(p["type"], list(p["data"])) for p in result] == [
        ("updates", ["model"]), ("updates", ["__interrupt__"])]


@lesson
def test_invoke_v2_with_values_given_in_a_list_returns_the_list_of_parts():
    """A `GraphOutput` only for `stream_mode="values"` given as a string, the default.
    Pinned: langgraph 1.2.24, langchain 1.5.2."""
    result = _deleter().invoke(GO, _thread(), version="v2", stream_mode=["values"])
    assert isinstance(result, list) and [p["type"] for p in result] == ["values", "values", "values"]
    assert [i.value for i in result[-1]["interrupts"]] == ["delete notes.txt?"]


@lesson
def test_invoke_v1_puts_the_interrupt_into_the_state_dict():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    result = _deleter().invoke(GO, _thread())
    assert isinstance(result, dict) and list(result) == ["messages", "__interrupt__"]


@lesson
def test_reading_a_graph_output_like_the_v1_dict_works_but_warns():
    """Pinned: langgraph 1.2.24."""
    from langgraph.warnings import LangGraphDeprecatedSinceV11

    result = _deleter().invoke(GO, _thread(), version="v2")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        messages = result["messages"]
    assert messages == result.value["messages"]
    assert [w.category for w in caught] == [LangGraphDeprecatedSinceV11]


@lesson
def test_a_filtered_event_streams_first_event_carries_the_graphs_input_and_its_end_none():
    """langchain-core's v2 stream writes the run's input into the first event it yields and drops
    `input` from that run's end; a filter that leaves out the graph's own events moves that onto a
    tool. Found on the pinned langchain-core 1.8.3 (`tracers/event_stream.py`); no upstream issue
    seen."""
    graph = _flaky_loop(("lookup", {"query": "a"}))
    plain = {e["event"]: e["data"] for e in _events(graph) if e["name"] == "lookup"}
    filtered = {e["event"]: e["data"] for e in _events(graph, include_types=["tool"])}
    assert list(plain["on_tool_start"]["input"]) == ["query"]
    assert sorted(plain["on_tool_end"]) == ["input", "output"]
    assert list(filtered["on_tool_start"]["input"]) == ["messages"]
    assert sorted(filtered["on_tool_end"]) == ["output"]


@lesson
def test_sync_stream_events_at_v2_raises_and_points_to_astream_events_or_v3():
    """`version="v3"` is documented as experimental. Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    assert "experimental and may change" in " ".join(Pregel.stream_events.__doc__.split())
    hint = r"Use astream_events\(\) for v1/v2, or stream_events\(version='v3'\)"
    with pytest.raises(NotImplementedError, match=hint):
        _deleter().stream_events(GO, _thread(), version="v2")


# -- 6. deep dive: every channel across an interrupt and its resume -------------------------------------
def _approval_runs():
    agent = _deleter()
    run = _timeline(agent, GO, _thread("approval"))
    return agent, run, _timeline(agent, Command(resume="yes"), _thread("approval"))


@lesson
def test_tools_mode_an_interrupted_call_has_a_start_and_no_end():
    """Once reported as a tool-error (langgraph#8218); fixed on the pins. Pinned: langgraph 1.2.24."""
    _, run, _ = _approval_runs()
    assert [(c["tool_call_id"], c["event"]) for m, c in run if m == "tools"] == [("call_0_0", "tool-started")]


@lesson
def test_tools_mode_on_resume_the_same_call_starts_again_then_finishes():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    _, _, resume = _approval_runs()
    assert [(c["tool_call_id"], c["event"]) for m, c in resume if m == "tools"] == [
        ("call_0_0", "tool-started"), ("call_0_0", "tool-finished")]


@lesson
def test_at_an_interrupt_updates_and_values_carry_it_the_task_result_lists_it_and_no_checkpoint_is_saved():
    """`values` surfaces it since langgraph#6141. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    _, run, _ = _approval_runs()
    start = next(i for i, (m, c) in enumerate(run) if m == "tasks" and c["name"] == "tools")
    after = run[start:]
    assert [m for m, _ in after] == ["tasks", "tools", "updates", "values", "tasks"]
    assert [i.value for i in after[2][1]["__interrupt__"]] == ["delete notes.txt?"]
    assert "__interrupt__" in after[3][1]
    assert [i["value"] for i in after[4][1]["interrupts"]] == ["delete notes.txt?"]
    assert after[4][1]["error"] is None


@lesson
def test_no_checkpoint_is_saved_at_an_interrupt():
    """The thread's history ends at step 1's checkpoint. Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _deleter()
    agent.invoke(GO, _thread("history"))
    assert [s.metadata["step"] for s in agent.get_state_history(_thread("history"))] == [1, 0, -1]
    assert agent.get_state(_thread("history")).next == ("tools",)


@lesson
def test_a_resume_resends_the_interrupted_steps_checkpoint_and_restarts_the_same_task():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    _, run, resume = _approval_runs()
    last_saved = [c for m, c in run if m == "checkpoints"][-1]
    first_sent = next(c for m, c in resume if m == "checkpoints")
    assert [m for m, _ in resume[:3]] == ["values", "checkpoints", "tasks"]
    assert first_sent["config"] == last_saved["config"] and first_sent["metadata"]["step"] == 1
    started = [c["id"] for m, c in run + resume if m == "tasks" and c["name"] == "tools" and "input" in c]
    assert len(started) == 2 and started[0] == started[1]


@lesson
def test_on_resume_a_finished_siblings_task_is_announced_and_replayed_as_cached_without_running():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _agent([("lookup", {"query": "a"}), ("delete", {"path": "notes.txt"})], [lookup, delete])
    agent.invoke(GO, _thread("both"))
    starts, results, tool_calls, cached = [], [], [], []
    resume = agent.stream(Command(resume="yes"), _thread("both"), stream_mode=["tasks", "tools", "updates"])
    for mode, chunk in resume:
        if mode == "tasks" and chunk["name"] == "tools":
            (starts if "input" in chunk else results).append(chunk["id"])
        elif mode == "tools":
            tool_calls.append(chunk["tool_call_id"])
        elif "tools" in chunk:
            cached.append((chunk["tools"]["messages"][0].content, chunk.get("__metadata__")))
    assert len(starts) == 2 and results == [starts[1]]
    assert set(tool_calls) == {"call_0_1"}
    assert cached == [("found a", {"cached": True}), ("deleted notes.txt", None)]


@lesson
def test_on_resume_the_task_announced_but_not_run_is_the_finished_siblings_call():
    """Pinned: langgraph 1.2.24, langchain 1.5.2."""
    agent = _agent([("lookup", {"query": "a"}), ("delete", {"path": "notes.txt"})], [lookup, delete])
    agent.invoke(GO, _thread("both"))
    chunks = [c for c in agent.stream(Command(resume="yes"), _thread("both"), stream_mode="tasks")
              if c["name"] == "tools"]
    calls = {c["id"]: [call["name"] for call in c["input"]] for c in chunks if "input" in c}
    results = {c["id"] for c in chunks if "input" not in c}
    assert sorted(calls.values()) == [["delete"], ["lookup"]]
    assert [calls[i] for i in calls if i not in results] == [["lookup"]]


@lesson
def test_a_toolnode_batch_resumed_after_an_interrupt_starts_every_call_again():
    """Practice question 4. Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3."""
    model = ScriptedChatModel(script=[_turn(("lookup", {"query": "a"}), ("delete", {"path": "x"}))])
    graph = StateGraph(MessagesState).add_node("tools", ToolNode([lookup, delete])).add_edge(START, "tools")
    graph = graph.compile(checkpointer=InMemorySaver())
    starts = []
    for command in ({"messages": [model.bind_tools([lookup, delete]).invoke("go")]}, Command(resume="yes")):
        starts += [e["tool_call_id"] for e in graph.stream(command, _thread(), stream_mode="tools")
                   if e["event"] == "tool-started"]
    assert sorted(starts) == ["call_0_0", "call_0_0", "call_0_1", "call_0_1"]


@lesson
def test_each_successive_interrupt_surfaces_as_interrupt_in_an_updates_stream():
    """A tool interrupting on each of two model turns: the run and the first resume each end with
    `__interrupt__` (a forum user saw none the second time, forum.langchain.com/t/.../936); the second
    resume finishes. Pinned: langgraph 1.2.24, langchain 1.5.2."""

    @tool
    def confirm(step: str) -> str:
        """Ask a person to confirm a step."""
        return f"{step}: {interrupt(f'confirm {step}?')}"

    script = [_turn(("confirm", {"step": "one"})), _turn(("confirm", {"step": "two"})), "all done"]
    agent = create_agent(ScriptedChatModel(script=script), [confirm], checkpointer=InMemorySaver())
    streams = [[(key, [i.value for i in chunk[key]] if key == "__interrupt__" else None)
                for chunk in agent.stream(command, _thread("twice"), stream_mode="updates") for key in chunk]
               for command in (GO, Command(resume="yes"), Command(resume="yes"))]
    assert streams == [[("model", None), ("__interrupt__", ["confirm one?"])],
                       [("tools", None), ("model", None), ("__interrupt__", ["confirm two?"])],
                       [("tools", None), ("model", None)]]


# -- 8. output from inside a node -----------------------------------------------------------------
def _custom_output_graph():
    from langchain_core.callbacks import dispatch_custom_event
    from langgraph.config import get_stream_writer

    def conversation(state):
        get_stream_writer()({"custom_llm_chunk": "The 49ers"})
        dispatch_custom_event("my_event", {"via": "a callback"})
        return {}

    return StateGraph(MessagesState).add_node(conversation).add_edge(START, "conversation").compile()


def _events(graph, inputs=GO, **options):
    async def main():
        return [e async for e in graph.astream_events(inputs, version="v2", **options)]

    return asyncio.run(main())


@lesson
def test_astream_events_without_stream_mode_carries_no_writer_chunk():
    """langgraph#6330. Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    assert not any("custom_llm_chunk" in str(e["data"]) for e in _events(_custom_output_graph()))


@lesson
def test_astream_events_with_stream_mode_custom_carries_a_writer_chunk_as_the_roots_on_chain_stream_without_node_metadata():  # noqa: E501
    """The chunk comes as an `on_chain_stream` of the root run, named "LangGraph", whose metadata has no
    `langgraph_node` (langgraph#6330 asks for it). Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    (event,) = [e for e in _events(_custom_output_graph(), stream_mode="custom")
                if "custom_llm_chunk" in str(e["data"])]
    assert (event["event"], event["name"], event["parent_ids"]) == ("on_chain_stream", "LangGraph", [])
    assert event["data"] == {"chunk": {"custom_llm_chunk": "The 49ers"}}
    assert "langgraph_node" not in event["metadata"]


@lesson
def test_astream_events_roots_on_chain_stream_carries_the_default_updates_mode_when_no_mode_is_passed():
    """Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    root = [e["data"]["chunk"] for e in _events(_custom_output_graph())
            if e["event"] == "on_chain_stream" and not e["parent_ids"]]
    assert root == [{"conversation": None}]


@lesson
@pytest.mark.parametrize("options", [{}, {"stream_mode": "custom"}])
def test_dispatch_custom_event_gives_an_on_custom_event_with_the_nodes_metadata(options):
    """Pinned: langgraph 1.2.24, langchain-core 1.8.3."""
    (event,) = [e for e in _events(_custom_output_graph(), **options) if e["event"] == "on_custom_event"]
    assert (event["name"], event["data"]) == ("my_event", {"via": "a callback"})
    assert event["metadata"]["langgraph_node"] == "conversation"


class _Pair(typing.TypedDict, total=False):
    a: int
    b: int


def _inner_chunks(outer_run, pass_config=False, **mode):
    inner = (StateGraph(_Pair).add_node("n1", lambda state: {"a": 1}).add_node("n2", lambda state: {"b": 2})
             .add_edge(START, "n1").add_edge("n1", "n2").compile())
    collected = []

    async def outer(state, config):
        passed = {"config": config} if pass_config else {}
        collected.append([chunk async for chunk in inner.astream({"a": 0}, **passed, **mode)])
        return {}

    graph = StateGraph(_Pair).add_node(outer).add_edge(START, "outer").compile()

    async def main():
        if outer_run == "astream_events":
            async for _ in graph.astream_events({"a": 0}, version="v2"):
                pass
        else:
            async for _ in graph.astream({"a": 0}, stream_mode=outer_run):
                pass

    asyncio.run(main())
    (chunks,) = collected
    return chunks


@lesson
@pytest.mark.parametrize("outer_run", ["astream_events", "values", "updates"])
def test_a_graph_streamed_inside_a_node_yields_the_mode_its_caller_passed(outer_run):
    """Whatever the outer run streams (langgraph#2351 saw "values" forced under astream_events; fixed by
    langgraph#4806). Pinned: langgraph 1.2.24."""
    assert _inner_chunks(outer_run, stream_mode="updates") == [{"n1": {"a": 1}}, {"n2": {"b": 2}}]


@lesson
@pytest.mark.parametrize("outer_run", ["astream_events", "values", "updates"])
def test_a_graph_streamed_inside_a_node_without_a_mode_yields_updates(outer_run):
    """A compiled StateGraph's default stream mode, not the outer run's, when the inner call gets no
    config. Pinned: langgraph 1.2.24."""
    assert _inner_chunks(outer_run) == [{"n1": {"a": 1}}, {"n2": {"b": 2}}]


@lesson
@pytest.mark.parametrize("outer_run", ["astream_events", "values", "updates"])
def test_a_graph_streamed_inside_a_node_given_the_nodes_config_and_no_mode_yields_values(outer_run):
    """The node's config holds its task id, and `stream()` defaults to "values" for a graph called as
    a node ("if being called as a node in another graph, default to values mode"). Pinned: langgraph
    1.2.24."""
    assert _inner_chunks(outer_run, pass_config=True) == [{"a": 0}, {"a": 1}, {"a": 1, "b": 2}]


@lesson
@pytest.mark.parametrize("outer_run", ["astream_events", "values"])
def test_a_graph_streamed_inside_a_node_given_the_nodes_config_and_a_mode_yields_that_mode(outer_run):
    """Since langgraph#4806 (for langgraph#2351) a mode passed wins over the node default. Pinned:
    langgraph 1.2.24."""
    chunks = _inner_chunks(outer_run, pass_config=True, stream_mode="updates")
    assert chunks == [{"n1": {"a": 1}}, {"n2": {"b": 2}}]


@lesson
def test_a_compiled_state_graph_streams_updates_by_default_and_invoke_returns_values():
    """Pinned: langgraph 1.2.24."""
    graph = StateGraph(_Pair).add_node("n1", lambda state: {"a": 1}).add_edge(START, "n1").compile()
    assert graph.stream_mode == "updates"
    assert list(graph.stream({"b": 0})) == [{"n1": {"a": 1}}]
    assert graph.invoke({"b": 0}) == {"a": 1, "b": 0}


class _Log(typing.TypedDict):
    log: Annotated[list, operator.add]


def _handoff():
    def s2(state):
        return Command(graph=Command.PARENT, goto="after", update={"log": ["s2"]})

    sub = (StateGraph(_Log).add_node("s1", lambda state: {"log": ["s1"]}).add_node(s2)
           .add_edge(START, "s1").add_edge("s1", "s2").compile())
    return (StateGraph(_Log).add_node("sub", sub, destinations=("after",))
            .add_node("after", lambda state: {"log": ["after"]}).add_edge(START, "sub").compile())


@lesson
def test_command_parent_from_a_subgraph_node_has_no_chunk_under_the_subgraphs_namespace():
    """Its update comes as the parent node's (langgraph#3362; the fix proposed in langgraph#8193 was
    closed). Pinned: langgraph 1.2.24."""
    chunks = [(tuple(s.split(":")[0] for s in ns), chunk)
              for ns, chunk in _handoff().stream({"log": []}, stream_mode="updates", subgraphs=True)]
    assert chunks == [(("sub",), {"s1": {"log": ["s1"]}}), ((), {"sub": {"log": ["s2"]}}),
                      ((), {"after": {"log": ["after"]}})]


@lesson
def test_command_parent_does_not_carry_the_subgraphs_earlier_writes_up():
    """Only the Command's update reaches the parent (langgraph#3362). Pinned: langgraph 1.2.24."""
    assert _handoff().invoke({"log": []})["log"] == ["s2", "after"]
