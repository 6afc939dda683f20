"""Lab 11 — Predict the step (after `notebooks/11_the_step_model.ipynb`).

q1: `STEPS`: one super-step's plan, run and barrier on plain graphs — the order edge tasks' and
    `Send` tasks' writes land in, a node two edges reach at different steps, a fan-in after `Send`s,
    two equal values for a key without a reducer.
q2: `RESUMES`: checkpoints and resumes — the checkpoints of a fan-out and of a failed run, what a
    pause holds back, what a resume does not run again.
q3: `TOOLS`: the same rules applied to tools — the step limit of a two-turn agent, `max_concurrency`
    and steps, what a batch repeats after a failing call, how many calls a turn's interrupts stop.

Cases the lesson does not run, each derived from its rules (its Practice asks four others). Every
question is a predict-and-check question (`helpers.labs.predict`): its scenario runs live on every
check, and a wrong prediction is shown beside what the run gave, the rule and the section.
"""

from __future__ import annotations

import operator
import threading
import time
from collections import Counter
from typing import Annotated, TypedDict

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt

from helpers.graphs import tool_loop
from helpers.labs.predict import PredictionLab
from helpers.models import ScriptedChatModel

LESSON = "11_the_step_model"
_lab = PredictionLab("11", LESSON)
_STEP = "1. One super-step: plan, run, barrier"
_CHECKPOINT = "2. A checkpoint after every step"
_RESUME = "3. Interrupt and resume: what runs again"
_TOOLS = "4. What follows for tools"
_GO = {"messages": [HumanMessage("go")]}


class _Log(TypedDict):
    log: Annotated[list[str], operator.add]


class _Status(TypedDict):
    status: str


def _appends(name: str, seconds: float = 0.0):
    def node(state: _Log):
        time.sleep(seconds)
        return {"log": [name]}

    return node


def _thread(name: str) -> dict:
    return {"configurable": {"thread_id": name}}


# -- q1: one step: plan, run, barrier -----------------------------------------------------------------------
@_lab.question(
    "q1",
    ask="START has edges to three nodes: 'zeta' (instant), 'Alpha' (sleeps 0.1 s) and 'beta' (sleeps "
    "0.05 s). Each appends its name to a list with operator.add. The list after the step, as a tuple?",
    answers=None,
    kind=tuple,
    rule="The barrier applies edge-triggered writes by node name in code-point order (capitals before "
    "lower case), never in the order the tasks finished.",
    heading=_STEP,
)
def edge_order_by_name():
    graph = StateGraph(_Log)
    for name, seconds in (("zeta", 0.0), ("Alpha", 0.1), ("beta", 0.05)):
        graph.add_node(name, _appends(name, seconds))
        graph.add_edge(START, name)
    return tuple(graph.compile().invoke({"log": []})["log"])


@_lab.question(
    "q1",
    ask="In one step: an edge from START to 'zz_edge', and a router on START returning "
    "[Send('aa_send', 'one'), Send('aa_send', 'two')]. Each task appends its name (aa_send appends its "
    "input). The list after the step, as a tuple?",
    answers=None,
    kind=tuple,
    rule="Edge-triggered tasks' writes come first (by node name), then the Send tasks' (each sender's "
    "Sends in list order): a path, not a name, decides between the two kinds.",
    heading=_STEP,
)
def edges_before_sends():
    graph = StateGraph(_Log)
    graph.add_node("zz_edge", _appends("zz_edge"))
    graph.add_node("aa_send", lambda item: {"log": [item]})
    graph.add_edge(START, "zz_edge")
    graph.add_conditional_edges(
        START, lambda state: [Send("aa_send", "one"), Send("aa_send", "two")], ["aa_send"]
    )
    return tuple(graph.compile().invoke({"log": []})["log"])


@_lab.question(
    "q1",
    ask="START → a → b → join and START → x → join (two add_edge calls into 'join'). How many times does "
    "'join' run?",
    answers=None,
    rule="A step's tasks are the nodes the previous step's writes triggered: x (step 1) triggers join in "
    "step 2, b (step 2) triggers it again in step 3. Two separate edges do not wait for each other.",
    heading=_STEP,
)
def join_reached_twice():
    runs = Counter()

    def join(state: _Log):
        runs["join"] += 1
        return {"log": ["join"]}

    graph = StateGraph(_Log).add_node("join", join)
    for name in ("a", "b", "x"):
        graph.add_node(name, _appends(name))
    for start, end in ((START, "a"), ("a", "b"), ("b", "join"), (START, "x"), ("x", "join")):
        graph.add_edge(start, end)
    graph.compile().invoke({"log": []})
    return runs["join"]


@_lab.question(
    "q1",
    ask="A router sends three Sends to 'fetch'; an edge fetch → report. How many times does 'report' run?",
    answers=None,
    rule="The three fetch tasks run in one step; at its barrier their writes trigger the edge to report, "
    "and the next step plans report once: a node is one task per step unless Sends ask for more.",
    heading=_STEP,
)
def fan_in_after_sends():
    runs = Counter()

    def report(state: _Log):
        runs["report"] += 1
        return {"log": ["report"]}

    graph = StateGraph(_Log).add_node("fetch", lambda item: {"log": [item]}).add_node("report", report)
    graph.add_conditional_edges(START, lambda state: [Send("fetch", n) for n in ("a", "b", "c")], ["fetch"])
    graph.add_edge("fetch", "report")
    graph.compile().invoke({"log": []})
    return runs["report"]


@_lab.question(
    "q1",
    ask="Two Sends to 'set_status' in one step, both writing the SAME value: {'status': 'paid'}. "
    "'status' has no reducer. What becomes of the run?",
    answers=("status is 'paid'", "InvalidUpdateError"),
    rule="A key without a reducer takes one value per step: the barrier counts the writes, it does not "
    "compare them, so two equal values still fail the step.",
    heading=_STEP,
)
def same_value_twice():
    graph = StateGraph(_Status).add_node("set_status", lambda value: {"status": value})
    graph.add_conditional_edges(START, lambda state: [Send("set_status", "paid")] * 2, ["set_status"])
    try:
        return f"status is {graph.compile().invoke({'status': 'new'})['status']!r}"
    except Exception as error:  # noqa: BLE001 - the answer is the error's name
        return type(error).__name__


# -- q2: checkpoints and resume -------------------------------------------------------------------------
@_lab.question(
    "q2",
    ask="With a checkpointer: a router on START sends three Sends to 'fetch', then fetch → report. How "
    "many checkpoints does the thread's history hold after the run?",
    answers=None,
    rule="One checkpoint per step: the input's (step -1), step 0, then one after each barrier — the three "
    "fetch tasks share one step, report has the next.",
    heading=_CHECKPOINT,
)
def checkpoints_with_sends():
    graph = (
        StateGraph(_Log)
        .add_node("fetch", lambda item: {"log": [item]})
        .add_node("report", _appends("report"))
    )
    graph.add_conditional_edges(START, lambda state: [Send("fetch", n) for n in ("a", "b", "c")], ["fetch"])
    graph.add_edge("fetch", "report")
    compiled = graph.compile(checkpointer=InMemorySaver())
    compiled.invoke({"log": []}, _thread("sends"))
    return len(list(compiled.get_state_history(_thread("sends"))))


@_lab.question(
    "q2",
    ask="With a checkpointer: START → a → b, and b raises. How many checkpoints does the history hold "
    "after the run raised?",
    answers=None,
    rule="A checkpoint is saved at a step's barrier; the failed step never reached it. The history holds "
    "the input's, step 0's and step 1's (after a).",
    heading=_CHECKPOINT,
)
def checkpoints_after_failure():
    def b(state: _Log):
        raise ConnectionError("b's service is down")

    graph = StateGraph(_Log).add_node("a", _appends("a")).add_node("b", b)
    compiled = graph.add_edge(START, "a").add_edge("a", "b").compile(checkpointer=InMemorySaver())
    try:
        compiled.invoke({"log": []}, _thread("fails"))
    except ConnectionError:
        pass
    return len(list(compiled.get_state_history(_thread("fails"))))


@_lab.question(
    "q2",
    ask="With a checkpointer: START → ask and START → work, then work → after. 'ask' calls interrupt(). "
    "When the first invoke returns (paused), how many times has 'after' run?",
    answers=None,
    rule="An interrupt stops its task; its sibling runs to its end, but the step does not reach its "
    "barrier, so the next step — 'after' — is not planned until a resume finishes this one.",
    heading=_RESUME,
)
def successor_waits_for_pause():
    runs = Counter()

    def after(state: _Log):
        runs["after"] += 1
        return {"log": ["after"]}

    graph = StateGraph(_Log).add_node("ask", lambda state: {"log": [interrupt("ok?")]})
    graph.add_node("work", _appends("work")).add_node("after", after)
    graph.add_edge(START, "ask").add_edge(START, "work").add_edge("work", "after")
    graph.compile(checkpointer=InMemorySaver()).invoke({"log": []}, _thread("paused"))
    return runs["after"]


@_lab.question(
    "q2",
    ask="With a checkpointer: START → prep → ask. 'prep' counts its runs; 'ask' calls interrupt() twice. "
    "You resume twice, one answer each time. How many times has 'prep' run in all?",
    answers=None,
    rule="A resume plans the step it paused in again: steps before it are in checkpoints and do not run "
    "again; only the interrupted task runs from its top.",
    heading=_RESUME,
)
def earlier_step_not_rerun():
    runs = Counter()

    def prep(state: _Log):
        runs["prep"] += 1
        return {"log": ["prep"]}

    def ask(state: _Log):
        return {"log": [interrupt("first?"), interrupt("second?")]}

    graph = StateGraph(_Log).add_node("prep", prep).add_node("ask", ask)
    compiled = graph.add_edge(START, "prep").add_edge("prep", "ask").compile(checkpointer=InMemorySaver())
    compiled.invoke({"log": []}, _thread("prep"))
    for answer in ("A", "B"):
        compiled.invoke(Command(resume=answer), _thread("prep"))
    return runs["prep"]


# -- q3: tools, derived --------------------------------------------------------------------------------------
@tool("lookup")
def _lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def _turn(name: str, count: int, prefix: str) -> list[dict]:
    return [{"name": name, "args": {"query": f"{prefix}{i}"}} for i in range(count)]


@_lab.question(
    "q3",
    ask="create_agent; the model calls lookup three times in one turn, three times again in a second "
    "turn, then answers. The smallest recursion_limit with which the run returns instead of raising?",
    answers=None,
    rule="A turn's calls are tasks of one step, so the run has five steps (model, tools, model, tools, "
    "model); a run that reaches step L raises, so L must be one more than the last step.",
    heading=_TOOLS,
)
def limit_for_two_turns():
    script = [_turn("lookup", 3, "a"), _turn("lookup", 3, "b"), "done"]
    for limit in range(1, 20):
        agent = create_agent(ScriptedChatModel(script=script), [_lookup])
        try:
            agent.invoke(_GO, {"recursion_limit": limit})
        except GraphRecursionError:
            continue
        return limit
    return 0


@_lab.question(
    "q3",
    ask="create_agent run with {'max_concurrency': 1}; the model calls lookup four times in one turn, "
    "then answers. The highest step number in the 'debug' stream's task events?",
    answers=None,
    rule="max_concurrency bounds how many tasks of a step run at once, not the steps: the four tools "
    "tasks still share one step, after the model's (1) and before the answer's (3).",
    heading=_TOOLS,
)
def steps_under_max_concurrency():
    agent = create_agent(ScriptedChatModel(script=[_turn("lookup", 4, "q"), "done"]), [_lookup])
    events = agent.stream(_GO, {"max_concurrency": 1}, stream_mode="debug")
    return max(event["step"] for event in events if event["type"] == "task")


@_lab.question(
    "q3",
    ask="A ToolNode batch behind tools_condition (lesson 04's loop), with a checkpointer: one turn calls "
    "charge and notify; notify raises the first time. After invoke(None, config) retries, how many times "
    "has charge's body run?",
    answers=None,
    rule="A ToolNode batch is one task: nothing of a failed task is pending, so the retry runs the whole "
    "batch again, charge included (create_agent's task per call would keep charge's answer).",
    heading=_TOOLS,
)
def batch_retry_runs():
    runs = Counter()
    down = threading.Event()
    down.set()

    @tool
    def charge(query: str) -> str:
        """Charge the customer."""
        runs["charge"] += 1
        return "charged"

    @tool
    def notify(query: str) -> str:
        """Notify the customer."""
        runs["notify"] += 1
        if down.is_set():
            time.sleep(0.05)
            raise ConnectionError("notification service is down")
        return "notified"

    turn = [{"name": "charge", "args": {"query": "5"}}, {"name": "notify", "args": {"query": "5"}}]
    model = ScriptedChatModel(script=[turn, "done"]).bind_tools([charge, notify])
    graph = tool_loop(model, [charge, notify])
    graph = graph.builder.compile(checkpointer=InMemorySaver())
    try:
        graph.invoke(_GO, _thread("batch"))
    except ConnectionError:
        pass
    down.clear()
    graph.invoke(None, _thread("batch"))
    return runs["charge"]


@_lab.question(
    "q3",
    ask="create_agent with a checkpointer; one turn calls 'approve' twice, and approve calls interrupt(). "
    "How many interrupts does the first invoke return under '__interrupt__'?",
    answers=None,
    rule="Each call is its own task; an interrupt stops only its own task, and its siblings run to their "
    "end: both calls ask, and the run returns both questions.",
    heading=_RESUME,
)
def interrupts_of_one_turn():
    @tool
    def approve(query: str) -> str:
        """Ask a human to approve."""
        return f"{query}: {interrupt(query + '?')}"

    turn = [{"name": "approve", "args": {"query": q}} for q in ("refund", "ship")]
    agent = create_agent(ScriptedChatModel(script=[turn, "done"]), [approve], checkpointer=InMemorySaver())
    return len(agent.invoke(_GO, _thread("approvals"))["__interrupt__"])


q1 = _lab.exercise(
    "q1",
    "STEPS",
    hints=(
        "For each run, list the tasks of each step first: the nodes the previous step's writes triggered, "
        "plus one task per Send. Then apply the barrier: edge tasks by name, then Send tasks.",
        "Code-point order puts 'Alpha' before 'beta' before 'zeta'; edge tasks' writes before Send tasks'; "
        "'join' is planned once for each step whose writes trigger it; the barrier counts a key's writes.",
    ),
)
q2 = _lab.exercise(
    "q2",
    "RESUMES",
    hints=(
        "A checkpoint per barrier (plus the input's and step 0's); a failed or paused step has not reached "
        "its barrier. A resume plans the paused step again.",
        "Count the steps: three Sends share one. A pause keeps the next step from being planned; the steps "
        "before it are saved and not run again.",
    ),
)
q3 = _lab.exercise(
    "q3",
    "TOOLS",
    hints=(
        "create_agent: a model step, then one tools step for all of a turn's calls. A ToolNode batch is one "
        "task; create_agent's calls are one task each.",
        "Five steps need a limit of six; max_concurrency does not add steps; a failed batch keeps nothing; "
        "each call's interrupt stops only its own task.",
    ),
)


def show(key: str) -> None:
    """Print exercise `key`'s questions (`"q1"`, `"q2"` or `"q3"`), numbered, with their allowed answers."""
    _lab.show(key)


__all__ = ["q1", "q2", "q3", "show"]
