"""Library behaviour taught in notebooks/11_the_step_model.ipynb.

The machine underneath every tools case: a super-step plans its tasks (one per triggered node, one
per `Send`), runs them on the state as of the step's start, and applies their writes at the barrier
in task-path order (edge tasks by node name, then Send tasks by sender, each sender's in list order);
a checkpoint follows each barrier and a finished task's writes go to the saver at once as pending
writes; a resume runs again every task without a successful write (a failure or a pause leaves only
an `__error__` or `__interrupt__` record), from the top of its node, replaying answers by position and
keeping what was saved under the task's own checkpoint (a subgraph's finished steps); between two
questions of one node, `get_state().next` is still that node. The deep dives pin `durability=` (an
exception and a killed process, with saves that take time), a node's `retry_policy` beside a retry
around the call with `default_retry_on`'s classes, `@task` results replayed by call order on a
resume (saved but run again by a node retry's next attempt), and a node's `error_handler`: a node per
node from `add_node`, one shared node from `set_node_defaults`, a task of its own in the failed step
that does not fail it (no sibling cancelled, nothing raised; `get_state()` shows neither its task
nor its write), run again on a resume after a sibling's pause or failure with its first write
dropped (langgraph#9002), and bounded by no node timeout (langgraph#8842). Step -1 holds the input
outside `values`; a node timeout on a Send-fed ToolNode is refused under `invoke`.

Pinned: langgraph 1.2.24, langgraph-prebuilt 1.1.3, langchain 1.5.2, langchain-core 1.8.3. Run
beside the pins (the compatibility matrix's releases, each resolved as scripts/compat.py resolves it):
every test also holds on langgraph 1.1.10 (prebuilt 1.0.13, langchain 1.2.18), on langgraph 1.0.10
(prebuilt 1.0.8, langchain 1.2.10) and on the pins with langchain-core 1.8.0, with two exceptions:
node error handlers and node timeouts are new in langgraph 1.2 (their tests are skipped before it),
and on those releases (0.6.11 too) `next` was `()` between two questions of one node (langgraph#6956), so
`test_get_state_next_after_the_first_of_two_interrupts_in_one_node_is_still_that_node` fails there.
On langgraph 0.6.11 (prebuilt 0.6.5, langchain 0.3) the other step model, durability and `@task`
tests hold; `create_agent`,
`ToolRuntime` and `wrap_tool_call` do not exist there, and the two node-retry tests differ because
ToolNode's default then answered every error (`handle_tool_errors=True`), so the node never failed.
`make compat` records the same in docs/compatibility.md. One release in between differs: the yanked
0.6.9 (langgraph#6158, reverted in #6252) held back a task a partial resume map left unanswered, so
`test_a_map_answering_one_of_two_tasks_reruns_the_unanswered_task_which_asks_again` fails there.

Order is driven by events, never by sleeps; the only waits with a timeout are those that prove
something did *not* happen (they cost their timeout when the behaviour holds).
"""

import asyncio
import operator
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections import Counter
from typing import Annotated, NotRequired, TypedDict

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import InvalidUpdateError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, RetryPolicy, Send, interrupt
from pydantic import BaseModel, ValidationError

from helpers.models import ScriptedChatModel
from helpers.timing import CallRecorder

lesson = pytest.mark.lesson("11_the_step_model")
WAIT = 5.0  # seconds an event wait may take before the test fails (never reached when it holds)
NOT_HAPPENING = 0.5  # seconds to wait for something that must not happen


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


class Answers(TypedDict):
    answers: Annotated[list[str], operator.add]


def _thread(name: str) -> dict:
    return {"configurable": {"thread_id": name}}


# -- 1. one super-step ----------------------------------------------------------------------------
def _branches(checkpointer=None):
    """Section 1's graph: crawl (slow: it waits until lookup has finished), lookup, and summarise
    after lookup. Returns the graph and what each node read, what crawl saw, and the order of ends."""
    read: dict[str, list[str]] = {}
    ended: list[str] = []
    lookup_done = threading.Event()
    summarise_started = threading.Event()
    crawl_saw: dict[str, bool] = {}

    def crawl(state: Log):
        read["crawl"] = list(state["log"])
        assert lookup_done.wait(WAIT)
        # summarise follows lookup by an edge; if it could start before this step's barrier, it would
        # start now, while crawl is still running
        crawl_saw["summarise started"] = summarise_started.wait(NOT_HAPPENING)
        ended.append("crawl")
        return {"log": ["crawl"]}

    def lookup(state: Log):
        read["lookup"] = list(state["log"])
        ended.append("lookup")
        lookup_done.set()
        return {"log": ["lookup"]}

    def summarise(state: Log):
        summarise_started.set()
        read["summarise"] = list(state["log"])
        ended.append("summarise")
        return {"log": ["summarise"]}

    builder = StateGraph(Log)
    builder.add_node("crawl", crawl)
    builder.add_node("lookup", lookup)
    builder.add_node("summarise", summarise)
    builder.add_edge(START, "crawl")
    builder.add_edge(START, "lookup")
    builder.add_edge("lookup", "summarise")
    return builder.compile(checkpointer=checkpointer), read, crawl_saw, ended


@lesson
def test_a_node_of_the_next_step_does_not_start_before_the_slowest_task_of_this_step_ends():
    graph, _, crawl_saw, ended = _branches()
    graph.invoke({"log": []})
    assert crawl_saw == {"summarise started": False}
    assert ended == ["lookup", "crawl", "summarise"]


@lesson
def test_debug_events_put_the_two_branches_in_step_1_and_the_follower_in_step_2():
    graph, *_ = _branches()
    steps = sorted((event["step"], event["payload"]["name"])
                   for event in graph.stream({"log": []}, stream_mode="debug") if event["type"] == "task")
    assert steps == [(1, "crawl"), (1, "lookup"), (2, "summarise")]


@lesson
def test_tasks_of_one_step_read_the_state_as_of_the_steps_start_not_a_finished_siblings_write():
    graph, read, _, _ = _branches()
    graph.invoke({"log": []})
    # crawl read its input after lookup had finished and returned its write: still the empty list
    assert read == {"crawl": [], "lookup": [], "summarise": ["crawl", "lookup"]}


@lesson
def test_the_barrier_applies_edge_triggered_writes_by_node_name_not_by_finish_order():
    graph, _, _, ended = _branches()
    assert graph.invoke({"log": []})["log"] == ["crawl", "lookup", "summarise"]
    assert ended[:2] == ["lookup", "crawl"]  # lookup finished first


def _fan_out(order: list[str]):
    """A node `zz` triggered by an edge, and three Send tasks a, b, c that finish in `order`."""
    turns = {name: threading.Event() for name in "abc"}
    finished: list[str] = []

    def fetch(name: str):
        position = order.index(name)
        if position:
            assert turns[order[position - 1]].wait(WAIT)
        finished.append(name)
        turns[name].set()
        return {"log": [name]}

    builder = StateGraph(Log)
    builder.add_node("plan", lambda state: {})
    builder.add_node("zz", lambda state: {"log": ["zz"]})
    builder.add_node("fetch", fetch)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "zz")
    builder.add_conditional_edges("plan", lambda state: [Send("fetch", name) for name in "abc"], ["fetch"])
    return builder.compile(), finished


@lesson
@pytest.mark.parametrize("call", ["invoke", "ainvoke"])
def test_send_tasks_writes_land_after_edge_triggered_ones_in_the_order_of_the_senders_list(call):
    graph, finished = _fan_out(["c", "b", "a"])
    result = graph.invoke({"log": []}) if call == "invoke" else asyncio.run(graph.ainvoke({"log": []}))
    assert finished == ["c", "b", "a"]
    assert result["log"] == ["zz", "a", "b", "c"]


@lesson
def test_three_sends_whose_first_finishes_last_give_their_writes_in_send_order():
    """Practice, first question: the list is ('a', 'b', 'c'), whatever the finish order."""
    graph, finished = _fan_out(["c", "b", "a"])
    assert [item for item in graph.invoke({"log": []})["log"] if item != "zz"] == ["a", "b", "c"]
    assert finished == ["c", "b", "a"]


@lesson
@pytest.mark.parametrize("form", ["router", "command"])
def test_send_tasks_of_two_senders_land_by_sender_name_each_senders_in_list_order_not_by_when_made(form):
    """`alpha` makes its Sends first, `Zeta` (which sorts first: code point order) after; each sends
    two. The Send tasks' writes land Zeta's first, each sender's in its list's order. The same for a
    router's Sends and a node's Command(goto=[Send, ...]).

    Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    made: list[str] = []
    alpha_made = threading.Event()

    def sends(name: str) -> list[Send]:
        made.append(name)
        if name == "alpha":
            alpha_made.set()
        return [Send("fetch", f"{name}-{n}") for n in (1, 2)]

    def sender(name: str):
        def node(state: Log):
            if name == "Zeta":
                assert alpha_made.wait(WAIT)  # Zeta makes its Sends only after alpha has made its own
            return Command(goto=sends(name)) if form == "command" else {}
        return node

    builder = StateGraph(Log)
    for name in ("alpha", "Zeta"):
        builder.add_node(name, sender(name))
        builder.add_edge(START, name)
        if form == "router":
            builder.add_conditional_edges(name, lambda state, name=name: sends(name), ["fetch"])
    builder.add_node("fetch", lambda item: {"log": [item]})
    assert builder.compile().invoke({"log": []})["log"] == ["Zeta-1", "Zeta-2", "alpha-1", "alpha-2"]
    assert made == ["alpha", "Zeta"]


class Status(TypedDict):
    status: str


@lesson
def test_two_send_tasks_writing_a_key_without_a_reducer_in_one_step_raise_invalid_update_error():
    clash = StateGraph(Status).add_node("set_status", lambda status: {"status": status})
    both = [Send("set_status", "paid"), Send("set_status", "shipped")]
    clash.add_conditional_edges(START, lambda state: both, ["set_status"])
    with pytest.raises(InvalidUpdateError, match="At key 'status': Can receive only one value per step"):
        clash.compile().invoke({"status": "new"})


# -- 2. a checkpoint after every step ----------------------------------------------------------------
@lesson
def test_the_history_holds_the_input_checkpoint_and_one_per_step_each_naming_the_next_tasks():
    graph, *_ = _branches(InMemorySaver())
    config = _thread("branches")
    graph.invoke({"log": []}, config)
    history = [(s.metadata["step"], s.metadata["source"], s.next, s.values.get("log"))
               for s in graph.get_state_history(config)]
    assert history == [
        (2, "loop", (), ["crawl", "lookup", "summarise"]),
        (1, "loop", ("summarise",), ["crawl", "lookup"]),
        (0, "loop", ("crawl", "lookup"), []),
        (-1, "input", ("__start__",), []),
    ]



@lesson
def test_the_input_checkpoint_holds_no_values_yet_the_start_task_of_step_0_writes_the_input():
    """Step -1 holds the input in the `__start__` channel, not in `values`, however much the input
    holds; step 0 (the `__start__` task) writes it into the state keys, so the first node runs in step 1.
    Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    graph = StateGraph(Log).add_node("n", lambda state: {"log": ["n"]}).add_edge(START, "n")
    graph = graph.compile(checkpointer=InMemorySaver())
    config = _thread("input")
    graph.invoke({"log": ["input"]}, config)
    history = list(graph.get_state_history(config))
    assert [(s.metadata["step"], s.metadata["source"], s.next, s.values["log"]) for s in history] == [
        (1, "loop", (), ["input", "n"]),
        (0, "loop", ("n",), ["input"]),
        (-1, "input", ("__start__",), []),
    ]
    saved_input = graph.checkpointer.get_tuple(history[-1].config).checkpoint["channel_values"]
    assert saved_input == {"__start__": {"log": ["input"]}}

def _jobs(runs: Counter, service: dict, charge_done: threading.Event):
    """Section 2's graph: Send tasks charge and notify; notify fails (once charge is done) while down."""

    def job(name: str):
        runs[name] += 1
        if name == "charge":
            charge_done.set()
        elif not service["up"]:
            assert charge_done.wait(WAIT)
            raise ConnectionError("notification service is down")
        return {"done": [name]}

    class Jobs(TypedDict):
        done: Annotated[list[str], operator.add]

    builder = StateGraph(Jobs).add_node("job", job)
    builder.add_conditional_edges(START, lambda state: [Send("job", name) for name in ("charge", "notify")],
                                  ["job"])
    return builder.compile(checkpointer=InMemorySaver())


def _failed_jobs():
    runs, service = Counter(), {"up": False}
    graph, config = _jobs(runs, service, threading.Event()), _thread("jobs")
    with pytest.raises(ConnectionError):
        graph.invoke({"done": []}, config)
    return graph, config, runs, service


@lesson
def test_a_failed_step_keeps_the_finished_tasks_write_pending_and_get_state_shows_it():
    graph, config, _, _ = _failed_jobs()
    snapshot = graph.get_state(config)
    assert snapshot.metadata["step"] == 0
    assert snapshot.next == ("job",)
    assert snapshot.values == {"done": ["charge"]}
    assert [(t.name, t.result, t.error) for t in snapshot.tasks] == [
        ("job", {"done": ["charge"]}, None),
        ("job", None, "ConnectionError('notification service is down')"),
    ]


@lesson
def test_the_checkpoint_itself_still_holds_the_steps_start_values_with_the_write_pending():
    graph, config, _, _ = _failed_jobs()
    checkpoint = graph.checkpointer.get_tuple(config)
    assert checkpoint.checkpoint["channel_values"].get("done") == []
    assert any(channel == "done" and value == ["charge"] for _, channel, value in checkpoint.pending_writes)


@lesson
def test_a_failed_task_leaves_an_error_record_among_the_pending_writes_not_a_state_write():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    graph, config, _, _ = _failed_jobs()
    writes = [(channel, value) for _, channel, value in graph.checkpointer.get_tuple(config).pending_writes]
    assert sorted(channel for channel, _ in writes) == ["__error__", "done"]
    assert ("done", ["charge"]) in writes


@lesson
def test_an_interrupted_task_leaves_an_interrupt_record_among_the_pending_writes_not_a_state_write():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    starts = Counter()
    graph, config = _one_task_per_item(["weather", "book"], starts), _thread("records")
    graph.invoke({"answers": []}, config)
    writes = [(channel, value) for _, channel, value in graph.checkpointer.get_tuple(config).pending_writes]
    assert sorted(channel for channel, _ in writes) == ["__interrupt__", "answers"]
    assert ("answers", ["weather"]) in writes


@lesson
def test_resuming_a_failed_step_runs_only_the_tasks_without_a_successful_write():
    graph, config, runs, service = _failed_jobs()
    service["up"] = True
    assert graph.invoke(None, config) == {"done": ["charge", "notify"]}
    assert runs == {"charge": 1, "notify": 2}


def _sibling_beside(trouble: str, call: str):
    """Edge tasks `charge` and `other`: `other` raises ConnectionError or calls interrupt(); `charge`
    is still running when the saver receives `other`'s record. Returns charge's fate and the state."""
    started = threading.Event()  # charge has started (so it is not a queued task the failure drops)
    recorded = threading.Event()  # the saver has received other's __error__ or __interrupt__ record
    returned = threading.Event()  # the run has returned or raised
    fate: dict[str, str] = {}

    class RecordingSaver(InMemorySaver):
        def put_writes(self, config, writes, task_id, task_path=""):
            super().put_writes(config, writes, task_id, task_path)
            if any(channel in ("__error__", "__interrupt__") for channel, _ in writes):
                recorded.set()

    def other(state: Log):
        assert started.wait(WAIT)
        if trouble == "raise":
            raise ConnectionError("notification service is down")
        return {"log": [interrupt("ok?")]}

    def charge(state: Log):
        started.set()
        assert recorded.wait(WAIT)
        # the run does not raise while a started sibling runs: the caller never sets returned
        fate["run returned first"] = returned.wait(NOT_HAPPENING) if trouble == "raise" else False
        fate["charge"] = "finished"
        return {"log": ["charge"]}

    async def acharge(state: Log):
        started.set()
        try:
            while not recorded.is_set():
                await asyncio.sleep(0.01)
            if trouble == "raise":
                await asyncio.sleep(WAIT)  # cancelled long before
            fate["charge"] = "finished"
            return {"log": ["charge"]}
        except asyncio.CancelledError:
            fate["charge"] = "cancelled"
            raise

    async def aother(state: Log):
        while not started.is_set():
            await asyncio.sleep(0.01)
        return other(state)

    builder = StateGraph(Log)
    builder.add_node("charge", charge if call == "invoke" else acharge)
    builder.add_node("other", other if call == "invoke" else aother)
    builder.add_edge(START, "charge")
    builder.add_edge(START, "other")
    graph, config = builder.compile(checkpointer=RecordingSaver()), _thread(f"{trouble} {call}")
    try:
        if call == "invoke":
            graph.invoke({"log": []}, config)
        else:
            asyncio.run(graph.ainvoke({"log": []}, config))
    except ConnectionError:
        pass
    returned.set()
    return fate, graph.get_state(config).values


@lesson
def test_under_invoke_a_sibling_still_running_when_a_task_fails_runs_to_its_end_and_its_write_is_saved():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11. (One finishing just
    as the failure surfaces can lose its write: lesson 09 pins that race.)"""
    fate, values = _sibling_beside("raise", "invoke")
    assert fate == {"run returned first": False, "charge": "finished"}
    assert values == {"log": ["charge"]}


@lesson
def test_under_ainvoke_a_sibling_still_running_when_a_task_fails_is_cancelled_and_nothing_is_saved():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    fate, values = _sibling_beside("raise", "ainvoke")
    assert fate == {"charge": "cancelled"}
    assert values == {"log": []}


@lesson
@pytest.mark.parametrize("call", ["invoke", "ainvoke"])
def test_a_sibling_still_running_when_a_task_calls_interrupt_finishes_and_its_write_is_saved(call):
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    fate, values = _sibling_beside("interrupt", call)
    assert fate["charge"] == "finished"
    assert values == {"log": ["charge"]}


# -- 3. interrupt and resume --------------------------------------------------------------------------
@lesson
def test_a_resumed_node_runs_again_from_its_top_and_gets_its_answers_by_position():
    starts = Counter()

    def ask_twice(state: Answers):
        starts["ask"] += 1
        first = interrupt("first question?")
        second = interrupt("second question?")
        return {"answers": [first, second]}

    graph = StateGraph(Answers).add_node(ask_twice).add_edge(START, "ask_twice")
    graph = graph.compile(checkpointer=InMemorySaver())
    config = _thread("asking")
    asked = [graph.invoke({"answers": []}, config)["__interrupt__"][0].value]
    asked.append(graph.invoke(Command(resume="A"), config)["__interrupt__"][0].value)
    result = graph.invoke(Command(resume="B"), config)
    assert asked == ["first question?", "second question?"]
    assert result["answers"] == ["A", "B"]
    assert starts["ask"] == 3


@lesson
def test_get_state_next_after_the_first_of_two_interrupts_in_one_node_is_still_that_node():
    """langgraph#6956. Pinned: langgraph 1.2.24. Differs on langgraph 1.1.10, 1.0.10 and 0.6.11, where
    `next` is `()` after the first resume although the node waits at its second question."""
    def ask_twice(state: Answers):
        return {"answers": [interrupt("first question?"), interrupt("second question?")]}

    graph = StateGraph(Answers).add_node(ask_twice).add_edge(START, "ask_twice")
    graph = graph.compile(checkpointer=InMemorySaver())
    config = _thread("asking")
    graph.invoke({"answers": []}, config)
    assert graph.get_state(config).next == ("ask_twice",)
    graph.invoke(Command(resume="A"), config)
    state = graph.get_state(config)
    assert state.next == ("ask_twice",)
    assert [i.value for i in state.interrupts] == ["second question?"]
    graph.invoke(Command(resume="B"), config)
    assert graph.get_state(config).next == ()


@lesson
def test_a_loop_of_three_interrupts_runs_its_rounds_nine_times_over_three_resumes():
    """Practice, second question: 1 + 2 + 3 + 3 rounds."""
    counter = Counter()

    def ask_three(state: Answers):
        answers = []
        for n in range(3):
            counter["rounds"] += 1
            answers.append(interrupt(f"question {n}?"))
        return {"answers": answers}

    graph = StateGraph(Answers).add_node(ask_three).add_edge(START, "ask_three")
    graph = graph.compile(checkpointer=InMemorySaver())
    config = _thread("rounds")
    graph.invoke({"answers": []}, config)
    for answer in "ABC":
        result = graph.invoke(Command(resume=answer), config)
    assert result["answers"] == ["A", "B", "C"]
    assert counter["rounds"] == 9


def _work(starts: Counter, asking=("book", "pay")):
    def work(item: str):
        starts[item] += 1
        if item in asking:
            return {"answers": [f"{item}: {interrupt(item + '?')}"]}
        return {"answers": [item]}
    return work


def _one_task_per_item(items, starts):
    graph = StateGraph(Answers).add_node("work", _work(starts))
    graph.add_conditional_edges(START, lambda state: [Send("work", item) for item in items], ["work"])
    return graph.compile(checkpointer=InMemorySaver())


def _one_task_for_all(items, starts):
    work = _work(starts)

    def work_all(state: Answers):
        return {"answers": [answer for item in items for answer in work(item)["answers"]]}

    graph = StateGraph(Answers).add_node(work_all).add_edge(START, "work_all")
    return graph.compile(checkpointer=InMemorySaver())


ITEMS = ["weather", "book", "sights"]


@lesson
def test_an_interrupt_in_one_send_task_leaves_its_siblings_finished_and_reruns_only_that_task():
    starts = Counter()
    graph, config = _one_task_per_item(ITEMS, starts), _thread("per item")
    graph.invoke({"answers": []}, config)
    result = graph.invoke(Command(resume="yes"), config)
    assert result["answers"] == ["weather", "book: yes", "sights"]
    assert starts == {"weather": 1, "book": 2, "sights": 1}


@lesson
def test_an_interrupt_in_a_task_that_runs_every_item_reruns_the_items_before_it():
    starts = Counter()
    graph, config = _one_task_for_all(ITEMS, starts), _thread("for all")
    graph.invoke({"answers": []}, config)
    result = graph.invoke(Command(resume="yes"), config)
    assert result["answers"] == ["weather", "book: yes", "sights"]
    assert starts == {"weather": 2, "book": 2, "sights": 1}


@lesson
def test_a_subgraph_invoked_inside_an_interrupted_node_keeps_its_finished_steps_on_resume():
    """The node's own code runs again from its top; the subgraph it calls resumes from its own
    checkpoint: its first step, finished before the pause, does not run again.

    Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    runs = Counter()

    def first(state: Answers):
        runs["subgraph: first"] += 1
        return {"answers": ["first"]}

    def ask(state: Answers):
        runs["subgraph: ask"] += 1
        return {"answers": [interrupt("ok?")]}

    subgraph = (StateGraph(Answers).add_node(first).add_node(ask)
                .add_edge(START, "first").add_edge("first", "ask").compile())

    def node(state: Answers):
        runs["node"] += 1
        return subgraph.invoke(state)

    graph = StateGraph(Answers).add_node(node).add_edge(START, "node").compile(checkpointer=InMemorySaver())
    config = _thread("subgraph")
    graph.invoke({"answers": []}, config)
    result = graph.invoke(Command(resume="yes"), config)
    assert result["answers"] == ["first", "yes"]
    assert runs == {"node": 2, "subgraph: first": 1, "subgraph: ask": 2}


def _two_asking():
    starts = Counter()
    graph, config = _one_task_per_item(["book", "pay"], starts), _thread("pair")
    asked = graph.invoke({"answers": []}, config)["__interrupt__"]
    return graph, config, asked, starts


@lesson
def test_a_bare_resume_value_with_two_pending_interrupts_raises_runtime_error():
    graph, config, asked, _ = _two_asking()
    assert sorted(i.value for i in asked) == ["book?", "pay?"]
    with pytest.raises(RuntimeError, match="you must specify the interrupt id when resuming"):
        graph.invoke(Command(resume="yes"), config)


@lesson
def test_a_map_from_interrupt_id_to_answer_resumes_both_tasks():
    graph, config, asked, _ = _two_asking()
    result = graph.invoke(Command(resume={i.id: f"yes to {i.value}" for i in asked}), config)
    assert sorted(result["answers"]) == ["book: yes to book?", "pay: yes to pay?"]


@lesson
def test_a_map_answering_one_of_two_tasks_reruns_the_unanswered_task_which_asks_again():
    """Practice, third question: pay's body starts twice. (langgraph#6158 described holding such a
    task back until its answer comes; on the pins it runs, and asks again.)"""
    graph, config, asked, starts = _two_asking()
    book = next(i for i in asked if i.value == "book?")
    again = graph.invoke(Command(resume={book.id: "yes"}), config)
    assert [i.value for i in again["__interrupt__"]] == ["pay?"]
    assert starts == {"book": 2, "pay": 2}
    final = graph.invoke(Command(resume={i.id: "ok" for i in again["__interrupt__"]}), config)
    assert sorted(final["answers"]) == ["book: yes", "pay: ok"]
    assert starts == {"book": 2, "pay": 3}  # book's write was pending: it did not run again


@lesson
def test_a_partial_resume_map_under_ainvoke_also_reruns_the_unanswered_task():
    graph, config, asked, starts = _two_asking()
    book = next(i for i in asked if i.value == "book?")

    async def resume():
        return await graph.ainvoke(Command(resume={book.id: "yes"}), config)

    again = asyncio.run(resume())
    assert [i.value for i in again["__interrupt__"]] == ["pay?"]
    assert starts["pay"] == 2


# -- 4. what follows for tools --------------------------------------------------------------------------
def _note_tools(recorder: CallRecorder):
    from langgraph.prebuilt import ToolRuntime  # langgraph-prebuilt 1.0 and later

    @tool
    def write_note(text: str, runtime: ToolRuntime) -> Command:
        """Write a note to the state and to the store."""
        with recorder.span("write_note"):
            runtime.store.put(("notes",), "latest", {"text": text})
            answer = ToolMessage(f"noted {text}", tool_call_id=runtime.tool_call_id)
            return Command(update={"note": text, "messages": [answer]})

    @tool
    def read_note(runtime: ToolRuntime) -> str:
        """Read the note from the state and from the store."""
        with recorder.span("read_note"):
            stored = runtime.store.get(("notes",), "latest")
            in_store = stored.value["text"] if stored else None
            return f"state: {runtime.state.get('note')!r}, store: {in_store!r}"

    return write_note, read_note



def _ping_per_call_with_a_timeout():
    @tool
    def ping(x: int) -> str:
        """Ping."""
        return "pong"

    message = AIMessage("", tool_calls=[{"name": "ping", "args": {"x": 1}, "id": "c1"}])
    graph = StateGraph(MessagesState).add_node("tools", ToolNode([ping]), timeout=1.0)
    graph.add_conditional_edges(START, lambda state: [Send("tools", [c]) for c in message.tool_calls],
                                ["tools"])
    return graph.compile(), {"messages": [message]}


@lesson
def test_a_node_timeout_on_a_toolnode_fed_one_send_per_call_is_refused_under_invoke():
    """A node timeout bounds each call of a Send-fed tools node only under `ainvoke`; `invoke` refuses
    it when the run reaches the node (lesson 02 pins the per-call bound). Pinned: langgraph 1.2.24
    (node timeouts are new in 1.2)."""
    if not hasattr(StateGraph, "set_node_defaults"):
        pytest.skip("node timeouts are new in langgraph 1.2")
    graph, state = _ping_per_call_with_a_timeout()
    with pytest.raises(ValueError, match="Node timeouts are only supported for async nodes"):
        graph.invoke(state)
    result = asyncio.run(graph.ainvoke(state))
    assert [m.content for m in result["messages"]] == ["", "pong"]

def _note_state():
    from langchain.agents import AgentState

    class NoteState(AgentState):
        note: NotRequired[str]

    return NoteState


def _notes_run():
    from langchain.agents import create_agent

    recorder = CallRecorder()
    side_by_side = [{"name": "write_note", "args": {"text": "hello"}}, {"name": "read_note", "args": {}}]
    script = [side_by_side, [{"name": "read_note", "args": {}}], "done"]
    agent = create_agent(ScriptedChatModel(script=script), list(_note_tools(recorder)),
                         state_schema=_note_state(), store=InMemoryStore())
    messages = agent.invoke({"messages": [("user", "take a note")]}, {"max_concurrency": 1})["messages"]
    first, second = recorder.calls[:2]
    assert (first.label, second.label) == ("write_note", "read_note") and first.end <= second.start
    return messages


@lesson
def test_create_agent_a_siblings_command_update_is_invisible_to_a_call_run_after_it_in_the_same_step():
    assert _notes_run()[3].content.startswith("state: None")


@lesson
def test_create_agent_a_store_write_is_visible_at_once_to_a_sibling_that_runs_later_in_the_step():
    assert _notes_run()[3].content.endswith("store: 'hello'")


@lesson
def test_create_agent_a_siblings_command_update_is_visible_from_the_next_step():
    assert _notes_run()[5].content == "state: 'hello', store: 'hello'"


@lesson
def test_create_agent_injected_state_is_also_the_state_at_the_tools_steps_start():
    from langchain.agents import create_agent

    recorder = CallRecorder()
    write_note, _ = _note_tools(recorder)

    @tool
    def read_injected(state: Annotated[dict, InjectedState]) -> str:
        """Read the note from the injected state."""
        with recorder.span("read_injected"):
            return f"state: {state.get('note')!r}"

    calls = [{"name": "write_note", "args": {"text": "hello"}}, {"name": "read_injected", "args": {}}]
    agent = create_agent(ScriptedChatModel(script=[calls, "done"]), [write_note, read_injected],
                         state_schema=_note_state(), store=InMemoryStore())
    messages = agent.invoke({"messages": [("user", "take a note")]}, {"max_concurrency": 1})["messages"]
    first, second = recorder.calls
    assert (first.label, second.label) == ("write_note", "read_injected") and first.end <= second.start
    assert messages[3].content == "state: None"


def _set_note():
    from langgraph.prebuilt import ToolRuntime  # langgraph-prebuilt 1.0 and later

    @tool
    def set_note(text: str, runtime: ToolRuntime) -> Command:
        """Set the note."""
        answer = ToolMessage("ok", tool_call_id=runtime.tool_call_id)
        return Command(update={"note": text, "messages": [answer]})

    return set_note


TWO_NOTES = [[{"name": "set_note", "args": {"text": text}} for text in ("paid", "shipped")], "done"]


@lesson
def test_two_create_agent_calls_updating_a_key_without_a_reducer_fail_the_step_with_invalid_update_error():
    """Practice, fourth question."""
    from langchain.agents import create_agent

    agent = create_agent(ScriptedChatModel(script=TWO_NOTES), [_set_note()], state_schema=_note_state())
    with pytest.raises(InvalidUpdateError, match="At key 'note'"):
        agent.invoke({"messages": [("user", "update the order")]})


@lesson
def test_two_calls_of_one_toolnode_batch_updating_a_key_without_a_reducer_fail_the_step_too():
    set_note = _set_note()
    model = ScriptedChatModel(script=TWO_NOTES).bind_tools([set_note])
    loop = StateGraph(_note_state())
    loop.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    loop.add_node("tools", ToolNode([set_note]))
    loop.add_edge(START, "llm")
    loop.add_conditional_edges("llm", tools_condition)
    loop.add_edge("tools", "llm")
    with pytest.raises(InvalidUpdateError, match="At key 'note'"):
        loop.compile().invoke({"messages": [("user", "update the order")]})


@lesson
def test_create_agent_tool_messages_follow_the_order_of_the_calls_not_the_order_the_calls_finished():
    from langchain.agents import create_agent

    second_done = threading.Event()
    finished = []

    @tool
    def step(n: int) -> str:
        """A step that finishes after the second one."""
        if n == 1:
            assert second_done.wait(WAIT)
        finished.append(n)
        if n == 2:
            second_done.set()
        return f"step {n}"

    calls = [{"name": "step", "args": {"n": n}} for n in (1, 2)]
    agent = create_agent(ScriptedChatModel(script=[calls, "done"]), [step])
    messages = agent.invoke({"messages": [("user", "go")]})["messages"]
    assert finished == [2, 1]
    assert [m.content for m in messages if m.type == "tool"] == ["step 1", "step 2"]


# -- 5. deep dive: durability ---------------------------------------------------------------------------
class CountingSaver(InMemorySaver):
    def __init__(self):
        super().__init__()
        self.steps = []

    def put(self, config, checkpoint, metadata, new_versions):
        self.steps.append(metadata["step"])
        return super().put(config, checkpoint, metadata, new_versions)


def _chain_stopped_by_keyboard_interrupt(mode):
    class Jobs(TypedDict):
        done: Annotated[list[str], operator.add]

    def stop_here(state):
        raise KeyboardInterrupt

    chain = StateGraph(Jobs)
    chain.add_node("first", lambda state: {"done": ["first"]})
    chain.add_node("second", lambda state: {"done": ["second"]})
    chain.add_node("stop_here", stop_here)
    chain.add_edge(START, "first")
    chain.add_edge("first", "second")
    chain.add_edge("second", "stop_here")
    saver = CountingSaver()
    graph, config = chain.compile(checkpointer=saver), _thread(mode)
    with pytest.raises(KeyboardInterrupt):
        graph.invoke({"done": []}, config, durability=mode)
    return saver.steps, graph.get_state(config)


@lesson
@pytest.mark.parametrize("mode, steps", [("sync", [-1, 0, 1, 2]), ("async", [-1, 0, 1, 2]), ("exit", [2])])
def test_a_keyboard_interrupt_in_a_node_leaves_a_resumable_thread_under_every_durability_mode(mode, steps):
    saved, snapshot = _chain_stopped_by_keyboard_interrupt(mode)
    assert saved == steps
    assert snapshot.next == ("stop_here",)
    assert snapshot.values == {"done": ["first", "second"]}


@lesson
def test_durability_exit_saves_the_checkpoint_when_the_run_pauses_at_an_interrupt():
    saver = CountingSaver()
    graph = (StateGraph(Answers).add_node("first", lambda state: {"answers": ["first"]})
             .add_node("ask", lambda state: {"answers": [interrupt("ok?")]})
             .add_edge(START, "first").add_edge("first", "ask").compile(checkpointer=saver))
    config = _thread("exit, paused")
    graph.invoke({"answers": []}, config, durability="exit")
    assert saver.steps == [1]
    assert graph.get_state(config).next == ("ask",)
    assert graph.invoke(Command(resume="yes"), config, durability="exit")["answers"] == ["first", "yes"]


@lesson
def test_create_agents_graph_takes_durability_exit_and_saves_only_when_the_run_ends():
    from langchain.agents import create_agent

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    saver = CountingSaver()
    agent = create_agent(ScriptedChatModel(script=[[{"name": "lookup", "args": {"query": "a"}}], "done"]),
                         [lookup], checkpointer=saver)
    agent.invoke({"messages": [("user", "go")]}, _thread("agent, exit"), durability="exit")
    assert saver.steps == [3]  # input -1, start 0, model 1, tools 2, model 3: only the last is saved


def _saver_waiting_for_the_next_step(mode):
    """Whether step 1's node ran while the saver was still saving checkpoint 0 (the saver waits up to
    NOT_HAPPENING seconds for it)."""
    node_ran = threading.Event()
    seen = {}

    class SlowSaver(InMemorySaver):
        def put(self, config, checkpoint, metadata, new_versions):
            if metadata["step"] == 0:
                seen["node ran while checkpoint 0 was being saved"] = node_ran.wait(NOT_HAPPENING)
            return super().put(config, checkpoint, metadata, new_versions)

    def node(state: Log):
        node_ran.set()
        return {"log": ["node"]}

    graph = StateGraph(Log).add_node(node).add_edge(START, "node").compile(checkpointer=SlowSaver())
    options = {} if mode is None else {"durability": mode}
    graph.invoke({"log": []}, _thread("slow saver"), **options)
    return seen["node ran while checkpoint 0 was being saved"]


@lesson
@pytest.mark.parametrize("mode", [None, "async"])
def test_under_async_durability_the_default_the_next_step_runs_while_the_checkpoint_is_saved(mode):
    assert _saver_waiting_for_the_next_step(mode) is True


@lesson
def test_under_sync_durability_the_next_step_waits_until_the_checkpoint_is_saved():
    assert _saver_waiting_for_the_next_step("sync") is False


CRASH = textwrap.dedent('''
    import operator, os, sys, threading, time
    from typing import Annotated, TypedDict
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from langgraph.types import Send

    log_path, mode, slow = sys.argv[1], sys.argv[2], sys.argv[3]
    answer_committed = threading.Event()

    def log(line):
        with open(log_path, "a") as f:
            f.write(line + "\\n")

    class LoggingSaver(InMemorySaver):
        def put(self, config, checkpoint, metadata, new_versions):
            if slow == "checkpoints":
                time.sleep(0.2)
            saved = super().put(config, checkpoint, metadata, new_versions)
            log(f"checkpoint {metadata['step']} {checkpoint['id']}")
            return saved

        def put_writes(self, config, writes, task_id, task_path=""):
            charge = ("done", ["charge"]) in writes
            if charge and slow == "answer":
                time.sleep(2.0)  # the process dies first
            super().put_writes(config, writes, task_id, task_path)
            if charge:
                log(f"answer {config['configurable']['checkpoint_id']}")
                answer_committed.set()

    class Jobs(TypedDict):
        done: Annotated[list[str], operator.add]

    def job(name):
        if name == "crash":
            answer_committed.wait(0.5)
            os._exit(1)
        return {"done": [name]}

    builder = StateGraph(Jobs)
    builder.add_node("plan", lambda state: {"done": ["plan"]})
    builder.add_node("job", job)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", lambda state: [Send("job", "charge"), Send("job", "crash")],
                                  ["job"])
    builder.compile(checkpointer=LoggingSaver()).invoke(
        {"done": []}, {"configurable": {"thread_id": "t"}}, durability=mode)
''')


def _crash_in_a_child(mode, slow=""):
    """The lesson's deep dive 5: what a saver had committed when the process died in step 2, the
    crashing task having waited (at most 0.5 s) for charge's answer to be committed. Returns the
    committed checkpoints' steps, whether charge's answer was committed, and whether the checkpoint
    that answer belongs to was."""
    with tempfile.TemporaryDirectory() as folder:
        log_path = os.path.join(folder, "saved.log")
        open(log_path, "w").close()
        child = subprocess.run([sys.executable, "-c", CRASH, log_path, mode, slow], capture_output=True,
                               text=True, timeout=60)
        with open(log_path) as log:
            lines = [line.split() for line in log.read().splitlines()]
    assert child.returncode == 1, child.stderr  # os._exit(1), nothing raised
    checkpoints = {words[2]: int(words[1]) for words in lines if words[0] == "checkpoint"}
    answer = [words[1] for words in lines if words[0] == "answer"]
    return sorted(checkpoints.values()), bool(answer), bool(answer) and answer[0] in checkpoints


@lesson
def test_a_process_killed_mid_step_under_sync_durability_has_committed_every_step_and_the_siblings_answer():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    assert _crash_in_a_child("sync") == ([-1, 0, 1], True, True)


@lesson
def test_a_process_killed_mid_step_under_exit_durability_has_committed_nothing():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    assert _crash_in_a_child("exit") == ([], False, False)


@lesson
def test_a_process_killed_mid_step_under_async_durability_has_committed_a_prefix_of_the_steps():
    """Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    steps, answer, _ = _crash_in_a_child("async")
    assert steps == [-1, 0, 1][:len(steps)]
    assert answer


@lesson
def test_under_async_durability_an_answer_can_be_committed_against_a_checkpoint_never_committed():
    """Checkpoints that take 0.2 s each to commit: the crash comes once charge's answer is committed,
    against checkpoint 1, which is not.

    Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    steps, answer, its_checkpoint = _crash_in_a_child("async", "checkpoints")
    assert steps == [-1, 0, 1][:len(steps)] and 1 not in steps
    assert (answer, its_checkpoint) == (True, False)


@lesson
def test_under_sync_durability_a_finished_tasks_answer_is_committed_in_the_background_and_a_crash_can_lose_it():  # noqa: E501
    """Only the checkpoint is awaited under "sync" (langgraph#8039): a crash while charge's answer is
    still being committed loses it, though every checkpoint is committed.

    Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    assert _crash_in_a_child("sync", "answer") == ([-1, 0, 1], False, False)


# -- 6. deep dive: a node's retry policy beside a tool's retry -------------------------------------
PAYMENT = AIMessage("", tool_calls=[
    {"name": "charge_card", "args": {"amount": 5}, "id": "c1"},
    {"name": "send_receipt", "args": {"email": "ann@example.com"}, "id": "c2"},
])
RETRY = RetryPolicy(initial_interval=0.01, retry_on=ConnectionError)


def _payment_tools(attempts: Counter):
    drops = {"left": 1}

    @tool
    def charge_card(amount: int) -> str:
        """Charge the card."""
        attempts["charge_card"] += 1
        return f"charged {amount}"

    @tool
    def send_receipt(email: str) -> str:
        """Send the receipt (its first attempt loses the connection)."""
        attempts["send_receipt"] += 1
        if drops["left"]:
            drops["left"] -= 1
            raise ConnectionError("the mail server dropped the connection")
        return f"sent to {email}"

    return [charge_card, send_receipt]


def _tools_graph(tool_node, *, per_call=False, **node_options):
    graph = StateGraph(MessagesState).add_node("tools", tool_node, **node_options)
    if per_call:
        graph.add_conditional_edges(START, lambda state: [Send("tools", [c]) for c in PAYMENT.tool_calls],
                                    ["tools"])
    else:
        graph.add_edge(START, "tools")
    return graph.compile()


def _retry_the_call(request, execute):
    for attempt in range(3):
        try:
            return execute(request)
        except ConnectionError:
            if attempt == 2:
                raise


def _answers(graph):
    return [m.content for m in graph.invoke({"messages": [PAYMENT]})["messages"][1:]]


@lesson
def test_a_node_retry_policy_on_a_toolnode_batch_runs_every_call_of_the_batch_again():
    attempts = Counter()
    graph = _tools_graph(ToolNode(_payment_tools(attempts)), retry_policy=RETRY)
    assert _answers(graph) == ["charged 5", "sent to ann@example.com"]
    assert attempts == {"charge_card": 2, "send_receipt": 2}


@lesson
def test_a_node_retry_policy_with_one_send_per_call_runs_only_the_failed_call_again():
    attempts = Counter()
    graph = _tools_graph(ToolNode(_payment_tools(attempts)), per_call=True, retry_policy=RETRY)
    assert _answers(graph) == ["charged 5", "sent to ann@example.com"]
    assert attempts == {"charge_card": 1, "send_receipt": 2}


@lesson
def test_a_retry_around_the_call_in_an_interceptor_runs_only_the_failed_call_again():
    attempts = Counter()
    graph = _tools_graph(ToolNode(_payment_tools(attempts), wrap_tool_call=_retry_the_call))
    assert _answers(graph) == ["charged 5", "sent to ann@example.com"]
    assert attempts == {"charge_card": 1, "send_receipt": 2}


class _Order(BaseModel):
    amount: int


def _validation_error():
    try:
        _Order(amount="five")
    except ValidationError as invalid:
        return invalid


def _httpx_status_error(status):
    httpx = pytest.importorskip("httpx")
    request = httpx.Request("GET", "https://api.example.com")
    return httpx.HTTPStatusError(str(status), request=request,
                                 response=httpx.Response(status, request=request))


def _requests_http_error(status):
    requests = pytest.importorskip("requests")
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError(str(status), response=response)


RETRY_ON_CASES = [
    ("ConnectionError", lambda: ConnectionError("reset"), True),
    ("ConnectionRefusedError", lambda: ConnectionRefusedError("refused"), True),
    ("TimeoutError", lambda: TimeoutError("slow"), False),
    ("requests ConnectionError", lambda: pytest.importorskip("requests").ConnectionError("reset"), False),
    ("requests Timeout", lambda: pytest.importorskip("requests").Timeout("slow"), False),
    ("httpx ConnectError", lambda: pytest.importorskip("httpx").ConnectError("reset"), True),
    ("httpx ReadTimeout", lambda: pytest.importorskip("httpx").ReadTimeout("slow"), True),
    ("httpx status 503", lambda: _httpx_status_error(503), True),
    ("httpx status 404", lambda: _httpx_status_error(404), False),
    ("requests HTTPError 404", lambda: _requests_http_error(404), True),  # langgraph#8802
    ("ValueError", lambda: ValueError("bad"), False),
    ("ValidationError", _validation_error, False),
    ("RuntimeError", lambda: RuntimeError("boom"), False),
    ("KeyError", lambda: KeyError("city"), False),
    ("Exception", lambda: Exception("anything else"), True),
]


@lesson
@pytest.mark.parametrize("name, make_error, retried", RETRY_ON_CASES,
                         ids=[case[0] for case in RETRY_ON_CASES])
def test_default_retry_on_decides_by_class(name, make_error, retried):
    """The built-in ConnectionError family: retried; httpx.HTTPStatusError: a 5xx only; requests'
    HTTPError: every status (an error response is falsy); OSError (TimeoutError, requests'
    ConnectionError and Timeout), ValueError, RuntimeError, LookupError...: not; unlisted classes
    (httpx's ConnectError, ReadTimeout): retried. The httpx and requests cases skip where those
    packages are missing (default_retry_on itself imports both on these releases).

    Pinned: langgraph 1.2.24; also holds on langgraph 1.1.10, 1.0.10 and 0.6.11."""
    from langgraph.types import default_retry_on

    assert default_retry_on(make_error()) is retried


@lesson
def test_a_node_under_the_default_retry_policy_is_not_retried_when_it_raises_a_validation_error():
    """langgraph#6027: one attempt, not three."""
    attempts = Counter()

    def parse(state: Log):
        attempts["parse"] += 1
        _Order(amount="five")

    graph = (StateGraph(Log).add_node("parse", parse, retry_policy=RetryPolicy(initial_interval=0.01))
             .add_edge(START, "parse").compile())
    with pytest.raises(ValidationError):
        graph.invoke({"log": []})
    assert attempts["parse"] == 1


# -- 7. deep dive: @task ---------------------------------------------------------------------------
def _approval_loop(script, tools):
    model = ScriptedChatModel(script=script).bind_tools(tools)
    loop = StateGraph(MessagesState)
    loop.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    loop.add_node("tools", ToolNode(tools))
    loop.add_edge(START, "llm")
    loop.add_conditional_edges("llm", tools_condition)
    loop.add_edge("tools", "llm")
    return loop.compile(checkpointer=InMemorySaver())


@tool
def confirm(what: str) -> str:
    """Ask a human to confirm."""
    return f"{what}: {interrupt(what + '?')}"


def _payments_after_a_resume(inline: bool):
    from langgraph.func import task

    payments = Counter()

    @task
    def take_payment(amount: int) -> str:
        payments["taken"] += 1
        return f"charged {amount}"

    @tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        payments["charge body"] += 1
        if inline:
            payments["taken"] += 1
            return f"charged {amount}"
        return take_payment(amount).result()

    calls = [{"name": "charge", "args": {"amount": 5}}, {"name": "confirm", "args": {"what": "ship"}}]
    graph, config = _approval_loop([calls, "done"], [charge, confirm]), _thread("charge")
    graph.invoke({"messages": [("user", "charge and ship")]}, config)
    result = graph.invoke(Command(resume="yes"), config)
    assert [m.content for m in result["messages"] if m.type == "tool"] == ["charged 5", "ship: yes"]
    return payments


@lesson
def test_a_task_called_inside_a_tool_is_not_run_again_when_its_batch_resumes():
    assert _payments_after_a_resume(inline=False) == {"charge body": 2, "taken": 1}


@lesson
def test_a_side_effect_made_inline_in_a_tool_runs_again_when_its_batch_resumes():
    assert _payments_after_a_resume(inline=True) == {"charge body": 2, "taken": 2}


def _two_charges(build):
    """Two charges (5 and 7) that reach their @task in the order `goes_first` says; 7 first on the
    first run, 5 first on the resume. Returns {call id: the answer after the resume}."""
    from langgraph.func import task

    goes_first = {"amount": 7}
    turn = {"event": threading.Event()}

    @task
    def take_payment(amount: int) -> str:
        return f"charged {amount}"

    @tool
    def charge_in_turn(amount: int) -> str:
        """Charge the customer."""
        if amount != goes_first["amount"]:
            assert turn["event"].wait(WAIT)
        receipt = take_payment(amount)
        if amount == goes_first["amount"]:
            turn["event"].set()
        return receipt.result()

    script = [[{"name": "charge_in_turn", "args": {"amount": amount}} for amount in (5, 7)]
              + [{"name": "confirm", "args": {"what": "ship"}}], "done"]
    graph, config = build(script, [charge_in_turn, confirm]), _thread("two charges")
    graph.invoke({"messages": [("user", "charge twice and ship")]}, config)
    goes_first["amount"], turn["event"] = 5, threading.Event()
    result = graph.invoke(Command(resume="yes"), config)
    return {m.tool_call_id: m.content for m in result["messages"] if m.type == "tool"}


@lesson
def test_task_results_are_matched_by_call_order_so_sibling_tools_of_a_batch_can_get_each_others():
    answers = _two_charges(_approval_loop)
    assert (answers["call_0_0"], answers["call_0_1"]) == ("charged 7", "charged 5")


@lesson
def test_under_create_agent_each_call_keeps_its_own_task_result_across_a_resume():
    from langchain.agents import create_agent

    def build(script, tools):
        return create_agent(ScriptedChatModel(script=script), tools, checkpointer=InMemorySaver())

    answers = _two_charges(build)
    assert (answers["call_0_0"], answers["call_0_1"]) == ("charged 5", "charged 7")


@lesson
def test_a_change_a_task_makes_to_a_mutable_argument_is_not_replayed_on_resume():
    """langgraph#6603: build results from the task's return value."""
    from langgraph.func import task

    @task
    def append_step(steps: list) -> int:
        steps.append("done")
        return len(steps)

    seen = []

    def node(state: Answers):
        steps: list = []
        count = append_step(steps).result()
        seen.append((count, len(steps)))
        return {"answers": [interrupt("ok?")]}

    graph = StateGraph(Answers).add_node(node).add_edge(START, "node").compile(checkpointer=InMemorySaver())
    config = _thread("mutable")
    graph.invoke({"answers": []}, config)
    graph.invoke(Command(resume="yes"), config)
    assert seen == [(1, 1), (1, 0)]  # the resume got the saved return value; the list stayed empty



@lesson
def test_a_task_called_in_a_failed_attempt_is_saved_but_a_node_retry_runs_it_again():
    """A failed attempt's own writes are discarded, but a `@task` it called is saved as a pending write;
    the next attempt does not reuse it: a retry restarts the numbering of interrupt()s, not of task
    calls, so the call gets the next number and runs again. Pinned: langgraph 1.2.24; also holds on
    langgraph 1.1.10, 1.0.10 and 0.6.11."""
    from langgraph.func import task

    runs, saved = Counter(), []

    @task
    def pay(amount: int) -> str:
        runs["pay"] += 1
        return f"paid {amount}"

    def node(state: Log):
        runs["node"] += 1
        receipt = pay(5).result()
        if runs["node"] == 1:
            raise ConnectionError("dropped after paying")
        return {"log": [receipt]}

    class Spy(InMemorySaver):
        def put_writes(self, config, writes, task_id, task_path=""):
            saved.extend((task_path, channel) for channel, _ in writes)
            return super().put_writes(config, writes, task_id, task_path)

    retry = RetryPolicy(initial_interval=0.01, retry_on=ConnectionError)
    graph = StateGraph(Log).add_node("n", node, retry_policy=retry).add_edge(START, "n")
    assert graph.compile(checkpointer=Spy()).invoke({"log": []}, _thread("retry")) == {"log": ["paid 5"]}
    assert runs == {"node": 2, "pay": 2}
    task_results = [path for path, channel in saved if channel == "__return__"]
    assert len(task_results) == 2 and task_results[0] != task_results[1]

# -- 8. deep dive: a node's error handler --------------------------------------------------------------
# `add_node(..., error_handler=...)` and `set_node_defaults` are new in langgraph 1.2: on older releases
# these tests are skipped.
needs_error_handlers = pytest.mark.skipif(
    not hasattr(StateGraph, "set_node_defaults"), reason="node error handlers are new in langgraph 1.2"
)


def _handled_fan_out(handler, sibling):
    """Deep dive 8's graph: START fans out to `a`, which raises and has `handler`, and to `b`, which
    calls interrupt() ("interrupt") or raises until told not to ("raise"). Returns the graph, its saver,
    the run counts and the sibling's switch."""
    runs = Counter()
    sibling_up = {"up": False}

    def a(state: Log):
        runs["a"] += 1
        raise ValueError("a failed")

    def b(state: Log):
        runs["b"] += 1
        if sibling == "interrupt":
            return {"log": [f"b: {interrupt('ok?')}"]}
        if not sibling_up["up"]:
            raise ConnectionError("b is down")
        return {"log": ["b"]}

    saver = InMemorySaver()
    graph = StateGraph(Log).add_node("a", a, error_handler=handler(runs)).add_node("b", b)
    graph = graph.add_edge(START, "a").add_edge(START, "b").compile(checkpointer=saver)
    return graph, saver, runs, sibling_up


def _counting_handler(runs):
    def handler(state: Log):
        runs["handler"] += 1
        return {"log": [f"handler #{runs['handler']}"]}

    return handler


@lesson
@needs_error_handlers
def test_an_error_handler_runs_in_the_failed_steps_task_list_and_its_write_lands_at_that_steps_barrier():
    """Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""
    runs = Counter()
    graph = StateGraph(Log).add_node("a", lambda state: runs.update(["a"]) or 1 / 0,
                                     error_handler=_counting_handler(runs))
    graph = graph.add_edge(START, "a").compile(checkpointer=InMemorySaver())
    config = _thread("handled alone")
    assert graph.invoke({"log": []}, config) == {"log": ["handler #1"]}
    history = [(s.metadata["step"], s.next, s.values["log"]) for s in graph.get_state_history(config)]
    assert history == [(1, (), ["handler #1"]), (0, ("a",), []), (-1, ("__start__",), [])]


@lesson
@needs_error_handlers
def test_a_failed_task_with_a_handler_leaves_an_error_record_and_a_source_marker_beside_the_handlers_write():
    """Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""
    graph, saver, runs, _ = _handled_fan_out(_counting_handler, "interrupt")
    config = _thread("handled")
    graph.invoke({"log": []}, config)
    saved = {channel: value for _, channel, value in saver.get_tuple(config).pending_writes}
    assert set(saved) == {"__error__", "__error_source_node__", "__interrupt__", "log"}
    assert saved["__error_source_node__"] == "a"
    assert saved["log"] == ["handler #1"]
    state = graph.get_state(config)
    assert state.metadata["step"] == 0 and state.next == ("a", "b")
    assert runs == {"a": 1, "b": 1, "handler": 1}


@lesson
@needs_error_handlers
def test_on_resume_after_a_siblings_interrupt_the_error_handler_runs_again_and_its_first_write_is_dropped():
    """langgraph#9002 (open). Pinned: langgraph 1.2.24 (error handlers are new in 1.2). When it is
    fixed, the handler's saved write is kept and it does not run again: update deep dive 8."""
    graph, _, runs, _ = _handled_fan_out(_counting_handler, "interrupt")
    config = _thread("handled")
    graph.invoke({"log": []}, config)
    result = graph.invoke(Command(resume="yes"), config)
    assert result["log"] == ["handler #2", "b: yes"]
    assert runs == {"a": 1, "b": 2, "handler": 2}


@lesson
@needs_error_handlers
def test_on_invoke_none_after_a_sibling_raised_the_error_handler_runs_again_too():
    """langgraph#9002 (open). Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""
    graph, _, runs, sibling = _handled_fan_out(_counting_handler, "raise")
    config = _thread("handled")
    with pytest.raises(ConnectionError):
        graph.invoke({"log": []}, config)
    sibling["up"] = True
    assert graph.invoke(None, config)["log"] == ["handler #2", "b"]
    assert runs == {"a": 1, "b": 2, "handler": 2}


def _alerting_handler(alerts, error_types):
    from langgraph.errors import NodeError
    from langgraph.func import task

    @task
    def send_alert(node: str) -> str:
        alerts["sent"] += 1
        return f"alert about {node}"

    def build(runs):
        def handler(state: Log, error: NodeError):
            runs["handler"] += 1
            error_types.append(type(error.error).__name__)
            return {"log": [send_alert(error.node).result()]}

        return handler

    return build


@lesson
@needs_error_handlers
def test_a_task_called_in_an_error_handler_is_not_run_again_when_the_handler_reruns_on_resume():
    """Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""
    alerts, error_types = Counter(), []
    graph, _, runs, _ = _handled_fan_out(_alerting_handler(alerts, error_types), "interrupt")
    config = _thread("alerting")
    graph.invoke({"log": []}, config)
    assert graph.invoke(Command(resume="yes"), config)["log"] == ["alert about a", "b: yes"]
    assert runs["handler"] == 2 and alerts == {"sent": 1}


@lesson
@needs_error_handlers
def test_on_the_handlers_rerun_node_error_error_is_the_saved_record_a_string_not_the_exception():
    """Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""
    alerts, error_types = Counter(), []
    graph, _, _, _ = _handled_fan_out(_alerting_handler(alerts, error_types), "interrupt")
    config = _thread("alerting")
    graph.invoke({"log": []}, config)
    graph.invoke(Command(resume="yes"), config)
    assert error_types == ["ValueError", "str"]


class _X(TypedDict, total=False):
    x: int


@lesson
@needs_error_handlers
@pytest.mark.parametrize("where", ["set_node_defaults", "add_node"])
def test_a_node_timeout_does_not_bound_the_nodes_error_handler(where):
    """langgraph#8842 (open) for `set_node_defaults`, documented to cover error handlers; a timeout
    given to `add_node` belongs to that node's task. Pinned: langgraph 1.2.24 (new in 1.2). The
    handler outlives the timeout tenfold and still returns."""
    from langgraph.errors import NodeTimeoutError

    async def bad(state: _X):
        raise ValueError("boom")

    async def slow_handler(state: _X):
        await asyncio.sleep(NOT_HAPPENING)  # ten times the timeout
        return {"x": 1}

    graph, timeout = StateGraph(_X), NOT_HAPPENING / 10
    if where == "set_node_defaults":
        graph = graph.set_node_defaults(timeout=timeout).add_node("bad", bad, error_handler=slow_handler)
    else:
        graph = graph.add_node("bad", bad, error_handler=slow_handler, timeout=timeout)
    graph = graph.add_edge(START, "bad").compile()
    try:
        result = asyncio.run(graph.ainvoke({"x": 0}))
    except NodeTimeoutError as error:
        pytest.fail(f"the timeout reached the handler: {error}")
    assert result == {"x": 1}


@lesson
@needs_error_handlers
def test_add_node_makes_one_handler_node_per_node_set_node_defaults_one_shared_node():
    """Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""

    def bad(state: Log):
        raise ValueError("bad")

    def handler(state: Log):
        return {"log": ["handled"]}

    own = StateGraph(Log).add_node("bad", bad, error_handler=handler)
    own.add_node("worse", bad, error_handler=handler)
    shared = StateGraph(Log).set_node_defaults(error_handler=handler)
    shared.add_node("bad", bad).add_node("worse", bad)
    for graph in (own, shared):
        graph.add_edge(START, "bad").add_edge(START, "worse")
    assert sorted(own.compile().nodes) == ["__error_handler__bad", "__error_handler__worse", "__start__",
                                           "bad", "worse"]
    assert sorted(shared.compile().nodes) == ["__default_error_handler__", "__start__", "bad", "worse"]


@lesson
@needs_error_handlers
def test_under_ainvoke_a_failure_routed_to_a_handler_raises_nothing_and_its_sibling_is_not_cancelled():
    """Unlike an unhandled failure (section 2), a handled one does not fail the step: the sibling
    waits for the handler to have run, then finishes. Pinned: langgraph 1.2.24 (new in 1.2)."""
    fate = {}

    async def run():
        handled = asyncio.Event()

        async def a(state: Log):
            raise ValueError("a failed")

        async def handler(state: Log):
            handled.set()
            return {"log": ["handler"]}

        async def b(state: Log):
            try:
                await asyncio.wait_for(handled.wait(), WAIT)
            except asyncio.CancelledError:
                fate["b"] = "cancelled"
                raise
            fate["b"] = "finished"
            return {"log": ["b"]}

        graph = StateGraph(Log).add_node("a", a, error_handler=handler).add_node("b", b)
        return await graph.add_edge(START, "a").add_edge(START, "b").compile().ainvoke({"log": []})

    result = asyncio.run(run())
    assert fate == {"b": "finished"}
    assert sorted(result["log"]) == ["b", "handler"]


@lesson
@needs_error_handlers
def test_while_the_step_is_unfinished_get_state_shows_the_failed_tasks_error_not_the_handlers_task_or_write():
    """A finished sibling's pending write shows in `get_state().values` (section 2); the handler's does
    not, and its task is not listed. Pinned: langgraph 1.2.24 (error handlers are new in 1.2)."""
    graph, saver, _, _ = _handled_fan_out(_counting_handler, "interrupt")
    config = _thread("handled")
    graph.invoke({"log": []}, config)
    assert ("log", ["handler #1"]) in [(c, v) for _, c, v in saver.get_tuple(config).pending_writes]
    state = graph.get_state(config)
    assert state.values == {"log": []}
    assert [(t.name, t.result, t.error) for t in state.tasks] == [
        ("a", None, "ValueError('a failed')"),
        ("b", None, None),
    ]
