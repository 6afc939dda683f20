"""Lab 12 as a learner meets it: for each exercise, correct answers written differently are accepted,
and the wrong answers real beginners write — progress written late, events that do not name their
call, an error swallowed, a run streamed once per mode, updates read as always a dict, faked plain
types, a hang, an exception, the starter as generated — are refused with a message naming the
mistake."""

from __future__ import annotations

import asyncio
import json
import linecache
import re
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import nbformat
import pytest
from lab_checks import accepted, rejected
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, StructuredTool, tool
from langgraph.config import get_stream_writer

from helpers.labs import LABS, NAMES, CheckFailed, lab12, solution_namespace
from helpers.labs import build as labs_build

SOL = solution_namespace("12")


def starter_namespace() -> dict:
    """The generated starter's code cells (not its checks and hints), run as a learner runs them: the
    exercise cells stop at their stub, as they do in the notebook."""
    namespace: dict = {}
    for number, cell in enumerate(nbformat.read(LABS / f"{NAMES['12']}.ipynb", as_version=4).cells):
        if cell.cell_type != "code" or ".check(" in cell.source or ".hint(" in cell.source:
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        name = f"/tmp/ipykernel_12/{number}.py"  # named like a notebook cell, its lines readable
        linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)
        try:
            exec(compile(code, name, "exec"), namespace)  # noqa: S102 - the course's own starter
        except NotImplementedError:
            pass  # the demo lines after a stub: the cell is tagged raises-exception
    return namespace


def test_the_starter_is_generated_and_every_exercise_is_still_a_stub():
    committed = (LABS / f"{NAMES['12']}.ipynb").read_text(encoding="utf-8")
    assert committed == labs_build.starter_text(NAMES["12"])
    starter = starter_namespace()
    for exercise in (lab12.q1, lab12.q2):
        rejected(exercise, starter, "still raises NotImplementedError", "Replace that `raise` line")


def test_nothing_public_computes_an_answer():
    public = set(lab12.__all__)
    assert public == {"LoadError", "TableLoader", "batch_agent", "q1", "q2", "sample_run"}
    for name in ("KEYS", "FIELDS", "OUTCOMES", "WORDS"):
        assert type(getattr(lab12, name)) is tuple


# == q1: progress that names its call ===================================================================
def with_runtime(load):  # the runtime's own writer and call id
    @tool("bulk_import")
    def bulk(tables: list[str], runtime: ToolRuntime) -> str:
        """Import tables."""
        for i, table in enumerate(tables):
            rows = load(table)
            runtime.stream_writer(
                {"call": runtime.tool_call_id, "done": i + 1, "total": len(tables), "rows": rows}
            )
        return "ok"

    return bulk


def progress_writer():  # lesson 12's fallback: usable outside a graph too
    try:
        return get_stream_writer()
    except (KeyError, RuntimeError):
        return lambda chunk: None


def from_function(load):  # StructuredTool, the work in a function that takes the writer
    def run(tables, call_id, write):
        total = len(tables)
        for position in range(total):
            count = load(tables[position])
            write(dict(rows=count, total=total, done=position + 1, call=call_id))
        return f"{total} tables"

    def ingest(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        return run(tables, tool_call_id, progress_writer())

    return StructuredTool.from_function(ingest, description="Ingest tables.")


def early_return(load):  # returns early for no tables, a while loop
    @tool
    def load_all(tables: list[str], call: Annotated[str, InjectedToolCallId]) -> str:
        """Load every table."""
        if not tables:
            return "nothing to import"
        write, i = get_stream_writer(), 0
        while i < len(tables):
            rows = load(tables[i])
            i += 1
            write({"call": call, "done": i, "total": len(tables), "rows": rows})
        return "done"

    return load_all


def logs_and_reraises(load):  # catches the error to log it, then lets it out
    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            try:
                rows = load(table)
            except Exception:
                print("failed on", table)
                raise
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": rows})
        return "ok"

    return import_tables


@pytest.mark.parametrize(
    "make_import_tool",
    [SOL["make_import_tool"], with_runtime, from_function, early_return, logs_and_reraises],
    ids=[
        "solution",
        "tool-runtime",
        "structured-tool-fallback-writer",
        "early-return-while",
        "log-and-reraise",
    ],
)
def test_lab12_q1_accepts_progress_that_names_its_call(make_import_tool, capsys):
    accepted(lab12.q1, {"make_import_tool": make_import_tool}, capsys)


def importer(event, *, swallow=False, finally_=False, empty_event=False):
    """An import tool writing `event(call_id, done, total, rows)` — the shape of most mistakes."""

    def make_import_tool(load):
        @tool
        def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Import tables."""
            write, kept = get_stream_writer(), []
            if empty_event and not tables:
                write({"call": tool_call_id, "done": 0, "total": 0, "rows": 0})
            try:
                for done, table in enumerate(tables, 1):
                    rows = load(table)
                    (kept.append if finally_ else write)(event(tool_call_id, done, len(tables), rows, table))
            except Exception as error:
                if not swallow:
                    raise
                return f"failed: {error}"
            finally:
                for chunk in kept:
                    write(chunk)
            return "ok"

        return import_tables

    return make_import_tool


def right(call, done, total, rows, table):
    return {"call": call, "done": done, "total": total, "rows": rows}


class Counter:
    """One count shared by every call of the tool: `done` counts tables across calls."""

    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, call, done, total, rows, table):
        with self.lock:
            self.n += 1
            return {"call": call, "done": self.n, "total": total, "rows": rows}


def current_call(load):  # the call id kept in one variable the calls share
    current = {}

    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        current["id"] = tool_call_id
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            rows = load(table)
            write({"call": current["id"], "done": done, "total": len(tables), "rows": rows})
        return "ok"

    return import_tables


def asks_the_model(load):  # the call id as an argument the model must fill
    @tool
    def import_tables(tables: list[str], call_id: str) -> str:
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            write({"call": call_id, "done": done, "total": len(tables), "rows": load(table)})
        return "ok"

    return import_tables


class Rows(int):
    """An int subclass standing in for the rows."""


@pytest.mark.parametrize(
    ("make_import_tool", "phrases"),
    [
        (importer(right, finally_=True), ["progress is written late", "at the end (or in a `finally`)"]),
        (
            importer(lambda c, d, t, r, table: {"call": "import_tables", "done": d, "total": t, "rows": r}),
            ["do not name the call", "InjectedToolCallId"],
        ),
        (
            importer(lambda c, d, t, r, table: {"call": c, "done": d - 1, "total": t, "rows": r}),
            ["not one event per table", "counted from 1"],
        ),
        (
            importer(lambda c, d, t, r, table: {"call": c, "done": d, "total": d, "rows": r}),
            ["not one event per table", "`total` the number of tables"],
        ),
        (
            importer(lambda c, d, t, r, table: {"call": c, "done": d, "total": t, "rows": len(table)}),
            ["not one event per table", "`rows` what `load(table)` returned"],
        ),
        (importer(lambda c, d, t, r, table: {"call": c, "done": d, "total": t}), ["not the dict asked for"]),
        (
            importer(lambda c, d, t, r, table: json.dumps(right(c, d, t, r, table))),
            ["not the dict asked for", "a str, not a dict"],
        ),
        (
            importer(lambda c, d, t, r, table: {**right(c, d, t, r, table), "rows": Rows(r)}),
            ["not the dict asked for", "'rows' is a Rows, not an int"],
        ),
        (importer(right, swallow=True), ["a failing load did not fail the call", "reads as a success"]),
        (importer(right, empty_event=True), ["a call with no tables reported progress"]),
        (importer(Counter()), ["not one event per table"]),
        (current_call, ["do not name the call"]),
        (asks_the_model, ["arguments are not what the model sends", "['call_id', 'tables']"]),
        (lambda load: "import_tables", ["did not return a tool"]),
    ],
    ids=[
        "written-in-finally",
        "tool-name-as-call",
        "done-from-0",
        "total-is-done",
        "rows-from-the-name",
        "no-rows",
        "json-string",
        "int-subclass",
        "error-swallowed",
        "event-for-no-tables",
        "counter-shared-by-calls",
        "call-id-in-a-shared-variable",
        "call-id-from-the-model",
        "not-a-tool",
    ],
)
def test_lab12_q1_rejects_beginner_mistakes(make_import_tool, phrases):
    rejected(lab12.q1, {"make_import_tool": make_import_tool}, *phrases)


def test_lab12_q1_faults_become_feedback(monkeypatch, capsys):
    monkeypatch.setattr(lab12, "LIMIT", 0.5)
    never = threading.Event()

    def waits(load):
        never.wait()

    try:
        rejected(lab12.q1, {"make_import_tool": waits}, "did not return within 0.5 s")
    finally:
        never.set()

    def exits(load):
        raise SystemExit(3)

    rejected(lab12.q1, {"make_import_tool": exits}, "SystemExit")
    rejected(lab12.q1, {}, "`make_import_tool` is not defined")
    monkeypatch.setattr(lab12, "LIMIT", None)
    accepted(lab12.q1, SOL, capsys)  # usable after the hang


def test_lab12_q1_late_progress_is_refused_on_every_draw():
    for seed in range(4):
        with pytest.raises(CheckFailed, match="written late"):
            lab12.check_import_tool(importer(right, finally_=True), seed=seed)


# == q2: read a run's events ============================================================================
def entry(name, turn):
    return {"name": name, "turn": turn, "progress": [], "outcome": "not run"}


def requested(update):
    """The AIMessages with tool calls in one node's update, whatever its kind."""
    entries = update if isinstance(update, list) else [update]
    return [
        m
        for e in entries
        if isinstance(e, dict)
        for m in e.get("messages", [])
        if isinstance(m, AIMessage) and m.tool_calls
    ]


def from_values(graph, inputs):  # turns read from the whole state in "values" mode
    calls, ended = {}, {}
    for mode, chunk in graph.stream(inputs, stream_mode=["values", "custom", "tools"]):
        if mode == "values":
            asked = [m for m in chunk["messages"] if isinstance(m, AIMessage) and m.tool_calls]
            for turn, message in enumerate(asked, 1):
                for call in message.tool_calls:
                    calls.setdefault(call["id"], entry(call["name"], turn))
        elif mode == "custom":
            calls[chunk["call"]]["progress"].append(chunk["done"])
        elif chunk["event"] == "tool-finished":
            ended[chunk["tool_call_id"]] = "finished"
        elif chunk["event"] == "tool-error":
            ended[chunk["tool_call_id"]] = "error"
    for call_id, outcome in ended.items():
        calls[call_id]["outcome"] = outcome
    return calls


def with_defaultdicts(graph, inputs):  # defaultdicts while reading, plain dicts returned
    progress, started, ended, info, turn = defaultdict(list), set(), {}, {}, 0
    for mode, chunk in graph.stream(inputs, stream_mode=["tools", "updates", "custom"]):
        if mode == "custom":
            progress[chunk["call"]].append(chunk["done"])
        elif mode == "tools":
            if chunk["event"] == "tool-started":
                started.add(chunk["tool_call_id"])
            elif chunk["event"] in ("tool-finished", "tool-error"):
                ended[chunk["tool_call_id"]] = chunk["event"].removeprefix("tool-")
        else:
            for update in chunk.values():
                for message in requested(update):
                    turn += 1
                    info.update({c["id"]: (c["name"], turn) for c in message.tool_calls})
    outcome = {"finish": "finished", "finished": "finished", "error": "error"}
    return {
        call_id: {
            "name": name,
            "turn": turn,
            "progress": list(progress[call_id]),
            "outcome": outcome[ended[call_id]] if call_id in started else "not run",
        }
        for call_id, (name, turn) in info.items()
    }


class Reader:  # a class with a method per mode
    def __init__(self):
        self.calls, self.turn = {}, 0

    def updates(self, chunk):
        for _node, update in chunk.items():
            for message in requested(update):
                self.turn += 1
                for call in message.tool_calls:
                    self.calls[call["id"]] = entry(call["name"], self.turn)

    def custom(self, chunk):
        self.calls[chunk["call"]]["progress"].append(chunk["done"])

    def tools(self, chunk):
        kinds = {"tool-finished": "finished", "tool-error": "error"}
        if chunk["event"] in kinds:
            self.calls[chunk["tool_call_id"]]["outcome"] = kinds[chunk["event"]]


def with_a_class(graph, inputs):
    reader = Reader()
    for mode, chunk in graph.stream(inputs, stream_mode=["updates", "custom", "tools"]):
        getattr(reader, mode)(chunk)
    return reader.calls


@pytest.mark.parametrize(
    "summarize_run",
    [SOL["summarize_run"], from_values, with_defaultdicts, with_a_class],
    ids=["solution", "values-mode", "defaultdicts-converted", "a-class-per-mode"],
)
def test_lab12_q2_accepts_every_reading_of_one_run(summarize_run, capsys):
    accepted(lab12.q2, {"summarize_run": summarize_run}, capsys)


def reader(
    *,
    modes=("updates", "custom", "tools"),
    outcome_from="tools",
    key="id",
    turns="messages",
    progress="all",
    skip_quiet=False,
    returns=None,
):
    """A summarize_run with one thing done the way a beginner does it."""

    def summarize_run(graph, inputs):
        calls, turn, ids = {}, 0, {}
        for mode, chunk in graph.stream(inputs, stream_mode=list(modes)):
            if mode == "updates":
                for node, update in chunk.items():
                    if turns == "updates":
                        turn += node == "model" or node == "llm" or node == "tools"
                    for message in requested(update):
                        turn += turns == "messages"
                        for call in message.tool_calls:
                            ids[call["id"]] = call[key] if key == "name" else call["id"]
                            calls[ids[call["id"]]] = entry(call["name"], turn)
                    entries = update if isinstance(update, list) else [update]
                    for e in entries:
                        for m in (e or {}).get("messages", []) if isinstance(e, dict) else []:
                            if outcome_from == "status" and isinstance(m, ToolMessage):
                                calls[ids[m.tool_call_id]]["outcome"] = (
                                    "finished" if m.status == "success" else "error"
                                )
            elif mode == "custom":
                record = calls[ids[chunk["call"]]]
                if progress == "last":
                    record["progress"] = [chunk["done"]]
                else:
                    record["progress"].append(chunk["done"])
            elif mode == "tools" and outcome_from == "tools":
                if chunk["event"] in ("tool-finished", "tool-error"):
                    calls[ids[chunk["tool_call_id"]]]["outcome"] = (
                        "finished" if chunk["event"] == "tool-finished" else "error"
                    )
        if skip_quiet:
            calls = {k: v for k, v in calls.items() if v["progress"]}
        return returns(calls) if returns else calls

    return summarize_run


def per_mode(graph, inputs):  # one loop per mode: three runs
    calls, turn = {}, 0
    for chunk in graph.stream(inputs, stream_mode="updates"):
        for update in chunk.values():
            for message in requested(update):
                turn += 1
                for call in message.tool_calls:
                    calls[call["id"]] = entry(call["name"], turn)
    for chunk in graph.stream(inputs, stream_mode="custom"):
        calls[chunk["call"]]["progress"].append(chunk["done"])
    for chunk in graph.stream(inputs, stream_mode="tools"):
        if chunk["event"] in ("tool-finished", "tool-error"):
            calls[chunk["tool_call_id"]]["outcome"] = (
                "finished" if chunk["event"] == "tool-finished" else "error"
            )
    return calls


def update_is_a_dict(graph, inputs):  # update["messages"] on every update
    calls, turn = {}, 0
    for mode, chunk in graph.stream(inputs, stream_mode=["updates", "custom", "tools"]):
        if mode == "updates":
            for _node, update in chunk.items():
                for message in update["messages"]:
                    if isinstance(message, AIMessage) and message.tool_calls:
                        turn += 1
                        for call in message.tool_calls:
                            calls[call["id"]] = entry(call["name"], turn)
    return calls


def from_invoke(graph, inputs):  # the final state: no progress, no starts
    calls, turn = {}, 0
    for message in graph.invoke(inputs)["messages"]:
        if isinstance(message, AIMessage) and message.tool_calls:
            turn += 1
            for call in message.tool_calls:
                calls[call["id"]] = entry(call["name"], turn)
        elif isinstance(message, ToolMessage):
            calls[message.tool_call_id]["outcome"] = "finished" if message.status == "success" else "error"
    return calls


class Same(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def as_defaultdict(calls):
    result = defaultdict(dict)
    result.update(calls)
    return result


@pytest.mark.parametrize(
    ("summarize_run", "phrases"),
    [
        (per_mode, ["the graph ran 3 times", "Ask for several modes at once"]),
        (update_is_a_dict, ["summarize_run raised", "KeyError", "an update can be None"]),
        (
            reader(modes=("updates", "custom"), outcome_from="status"),
            ["never runs", "expected: 'not run'", "no 'tool-started' event"],
        ),
        (reader(key="name"), ["does not list every tool call"]),
        (reader(turns="updates"), ["wrong name or turn", "count those, not the updates"]),
        (reader(progress="last"), ["progress of", "is wrong"]),
        (reader(skip_quiet=True), ["does not list every tool call", "missing"]),
        (reader(modes=("updates", "custom")), ["outcome of", "is wrong"]),
        (
            reader(
                returns=lambda calls: {k: {**v, "progress": len(v["progress"])} for k, v in calls.items()}
            ),
            ["did not return the plain summary", "'progress' is an int, not a list"],
        ),
        (reader(returns=as_defaultdict), ["did not return the plain summary", "a defaultdict", "dict(...)"]),
        (
            reader(returns=lambda calls: {k: {**v, "outcome": Same("x")} for k, v in calls.items()}),
            ["did not return the plain summary", "'outcome' is a Same, not a str"],
        ),
        (reader(returns=lambda calls: sorted(calls.items())), ["did not return the plain summary", "a list"]),
        (from_invoke, ["progress of", "is wrong"]),
    ],
    ids=[
        "stream-per-mode",
        "update-always-a-dict",
        "outcome-from-status",
        "keyed-by-tool-name",
        "turns-counted-from-updates",
        "only-the-last-progress",
        "quiet-calls-left-out",
        "no-tools-mode",
        "progress-as-a-count",
        "defaultdict",
        "always-equal-str",
        "list-of-pairs",
        "invoke-not-stream",
    ],
)
def test_lab12_q2_rejects_beginner_mistakes(summarize_run, phrases):
    rejected(lab12.q2, {"summarize_run": summarize_run}, *phrases, max_lines=30)


def test_lab12_q2_faults_become_feedback(monkeypatch, capsys):
    monkeypatch.setattr(lab12, "LIMIT", 0.5)
    never = threading.Event()

    def waits(graph, inputs):
        never.wait()

    try:
        rejected(lab12.q2, {"summarize_run": waits}, "did not return within 0.5 s")
    finally:
        never.set()

    def exits(graph, inputs):
        raise GeneratorExit

    rejected(lab12.q2, {"summarize_run": exits}, "GeneratorExit")
    rejected(lab12.q2, {"summarize_run": lambda graph: {}}, "cannot be called")
    monkeypatch.setattr(lab12, "LIMIT", None)
    accepted(lab12.q2, SOL, capsys)


def test_lab12_q2_every_draw_holds_every_hard_case():
    import random

    for seed in range(20):
        for agent in (True, False):
            scenario = lab12._q2_scenario(random.Random(seed), agent)
            calls = scenario["calls"]
            first = [c for c in calls if c.turn == 1]
            assert len([c for c in first if c.tool == scenario["import"] and c.reported >= 2]) >= 2
            assert any(c.fails_at == 2 for c in first)
            assert any(c.fails_at == 1 and c.tool == scenario["import"] for c in first)  # error, no progress
            assert [c.turn for c in calls if c.id in scenario["raises"]] == [1]  # a tool that raises
            assert any(len(set(c.dones)) < len(c.dones) for c in first)  # a retried table reported twice
            assert any(c.tool == scenario["import"] and not c.tables for c in first)
            assert any(c.turn == 2 for c in calls)
            assert bool(scenario["blocked"]) is agent
            ids = [step[0] for step in scenario["baton"]]
            assert ids[0] != ids[1]  # the imports' events interleave


# == what a learner can reach: the check's `load` and tools hold a token, never its state ================
def test_lab12_what_the_learner_is_handed_holds_no_state_of_the_check():
    seen = {}

    def make_import_tool(load):
        seen["load"] = load
        return SOL["make_import_tool"](load)

    lab12.check_import_tool(make_import_tool, seed=1)
    load = seen["load"]
    assert type(load).__name__ == "function" and not hasattr(load, "__self__")
    assert all(type(cell.cell_contents) is str for cell in load.__closure__)  # a token, nothing else
    graph, _ = lab12.sample_run()
    for node_tool in graph.nodes["tools"].bound.tools_by_name.values():
        cells = node_tool.func.__closure__ or ()
        assert all(type(cell.cell_contents) is str for cell in cells), node_tool.name


def through_self(load):  # the check's load as a bound method: its `__self__`
    watch = load.__self__

    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        for i, table in enumerate(tables, 1):
            watch.receive({"call": tool_call_id, "done": i, "total": len(tables), "rows": load(table)})
        return "ok"

    return import_tables


def forges_the_record(load):  # reaches the check's state and marks its late events as received
    state = lab12._get(load.__closure__[0].cell_contents)

    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write, kept = get_stream_writer(), []
        try:
            for i, table in enumerate(tables, 1):
                with state.cond:
                    state.got.add((tool_call_id, i - 1))
                kept.append({"call": tool_call_id, "done": i, "total": len(tables), "rows": load(table)})
        finally:
            for event in kept:
                write(event)
        return "ok"

    return import_tables


def rows_without_loading(load):  # reads the rows from the check's scenario, never calls load
    state = lab12._get(load.__closure__[0].cell_contents)

    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write = get_stream_writer()
        call = next(c for c in state.calls if c.id == tool_call_id)
        for i, _table in enumerate(tables, 1):
            if i == call.fails_at:
                raise RuntimeError("locked")
            write({"call": tool_call_id, "done": i, "total": len(tables), "rows": call.rows[i - 1]})
        return "ok"

    return import_tables


@pytest.mark.parametrize(
    ("make_import_tool", "phrases"),
    [
        (through_self, ["AttributeError", "__self__"]),
        (forges_the_record, ["progress is written late", "came after it"]),
        (rows_without_loading, ["did not load each table", "loads of tables none"]),
    ],
    ids=["load-dunder-self", "forged-record-still-late", "rows-read-not-loaded"],
)
def test_lab12_q1_the_check_state_cannot_make_a_wrong_tool_pass(make_import_tool, phrases):
    for seed in range(3):
        with pytest.raises(CheckFailed) as info:
            lab12.check_import_tool(make_import_tool, seed=seed)
        for phrase in phrases:
            assert phrase in str(info.value), str(info.value)


# == q1: async tools, the failing table, an error answer returned ========================================
def async_only(load):  # an async tool: the check streams it with astream
    @tool
    async def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": load(table)})
        return "ok"

    return import_tables


def async_in_a_thread(load):  # an async tool awaiting each load in a thread (the context goes along)
    @tool
    async def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            rows = await asyncio.to_thread(load, table)
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": rows})
            await asyncio.sleep(0)
        return "ok"

    return import_tables


def loads_in_a_pool(load):  # each load run by a thread pool (no run context there: nothing to mark)
    pool = ThreadPoolExecutor(max_workers=4)

    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            rows = pool.submit(load, table).result()
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": rows})
        return "ok"

    return import_tables


@pytest.mark.parametrize(
    "make_import_tool",
    [async_only, async_in_a_thread, loads_in_a_pool],
    ids=["async-only", "to-thread", "loads-in-a-thread-pool"],
)
def test_lab12_q1_accepts_an_async_tool_or_loads_in_a_thread(make_import_tool, capsys):
    accepted(lab12.q1, {"make_import_tool": make_import_tool}, capsys)


def skips_the_failing_table(load):  # catches the load's error and goes on with the next table
    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write, done = get_stream_writer(), 0
        for table in tables:
            try:
                rows = load(table)
            except Exception:
                continue
            done += 1
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": rows})
        return "ok"

    return import_tables


def error_message_returned(load):  # answers the failure itself with an error ToolMessage
    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]):
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            try:
                rows = load(table)
            except Exception as error:
                return ToolMessage(
                    f"failed at table {done}: {error}", tool_call_id=tool_call_id, status="error"
                )
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": rows})
        return "ok"

    return import_tables


def loads_twice(load):  # loads each table again to be sure
    @tool
    def import_tables(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Import tables."""
        write = get_stream_writer()
        for done, table in enumerate(tables, 1):
            load(table)
            write({"call": tool_call_id, "done": done, "total": len(tables), "rows": load(table)})
        return "ok"

    return import_tables


def test_lab12_q1_a_skipped_failing_table_is_named_on_every_draw():
    for seed in range(8):
        with pytest.raises(CheckFailed) as info:
            lab12.check_import_tool(skips_the_failing_table, seed=seed)
        message = str(info.value)
        assert "a failing load did not fail the call" in message, message
        assert "written late" not in message, message


@pytest.mark.parametrize(
    ("make_import_tool", "phrases", "absent"),
    [
        (
            error_message_returned,
            ["did not fail the call", "returned an error ToolMessage", "'tools' mode"],
            ["told the import worked"],
        ),
        (loads_twice, ["did not load each table", "loads of tables 1, 1, 2"], []),
    ],
    ids=["error-toolmessage-returned", "loads-twice"],
)
def test_lab12_q1_names_what_the_tool_did(make_import_tool, phrases, absent):
    message = rejected(lab12.q1, {"make_import_tool": make_import_tool}, *phrases)
    for phrase in absent:
        assert phrase not in message, message


# == learner objects are read only through run_learner, never on the check's own thread ==================
ON_CHECK_THREAD: list[str] = []


def on_check_thread(what):
    """Record `what` when it runs on the check's own thread (the caller's, or the one the framework
    runs the check's own code on), not in a run of learner code (`run_learner`'s worker, a tool's)."""
    current = threading.current_thread()
    if current is threading.main_thread() or re.fullmatch(r"lab-check:q\d+", current.name):
        ON_CHECK_THREAD.append(what)


class NamedMeta(type):
    @property
    def __name__(cls):
        on_check_thread("a metaclass __name__")
        return "Event"


class Event(dict, metaclass=NamedMeta):
    pass


class Key:
    def __hash__(self):
        on_check_thread("a key's __hash__")
        return hash("call")

    def __eq__(self, other):
        on_check_thread("a key's __eq__")
        return other == "call"

    def __lt__(self, other):
        on_check_thread("a key's __lt__")
        return False

    __gt__ = __lt__


def event_class_name(load):
    return importer(lambda c, d, t, r, table: Event(call=c, done=d, total=t, rows=r))(load)


def event_odd_key(load):
    return importer(lambda c, d, t, r, table: {Key(): c, "done": d, "total": t, "rows": r})(load)


class Schema(StructuredTool):
    @property
    def tool_call_schema(self):
        threading.Event().wait(30)


def schema_hangs(load):
    def ingest(tables: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        return "ok"

    return Schema.from_function(ingest, name="ingest", description="Ingest.")


def test_lab12_q1_reads_learner_objects_only_through_run_learner(monkeypatch):
    ON_CHECK_THREAD.clear()
    rejected(
        lab12.q1, {"make_import_tool": event_class_name}, "not the dict asked for", "an Event, not a dict"
    )
    rejected(lab12.q1, {"make_import_tool": event_odd_key}, "not the dict asked for", "(each a str)")
    assert ON_CHECK_THREAD == []
    monkeypatch.setattr(lab12, "LIMIT", 0.5)
    rejected(lab12.q1, {"make_import_tool": schema_hangs}, "did not return within 0.5 s", "tool_call_schema")


class Odd:
    @property
    def __class__(self):
        on_check_thread("an object's __class__")
        return dict


def test_lab12_q2_reads_learner_objects_only_through_run_learner():
    ON_CHECK_THREAD.clear()

    def odd(graph, inputs):
        list(graph.stream(inputs))
        return Odd()

    def named(graph, inputs):
        return Event(SOL["summarize_run"](graph, inputs))

    def odd_keys(graph, inputs):
        summary = SOL["summarize_run"](graph, inputs)
        return {
            k: {Key(): v["name"], **{f: v[f] for f in ("turn", "progress", "outcome")}}
            for k, v in summary.items()
        }

    rejected(lab12.q2, {"summarize_run": odd}, "did not return the plain summary", "an Odd")
    rejected(lab12.q2, {"summarize_run": named}, "did not return the plain summary", "an Event", "dict(...)")
    rejected(lab12.q2, {"summarize_run": odd_keys}, "did not return the plain summary", "not exactly")
    assert ON_CHECK_THREAD == []


# == q2: astream, outcomes only the "tools" mode tells, progress as reported, the graph's tools ==========
async def with_astream(graph, inputs):  # async, `astream`: the check's middleware has an async hook
    calls, turn = {}, 0
    async for mode, chunk in graph.astream(inputs, stream_mode=["updates", "custom", "tools"]):
        if mode == "updates":
            for update in chunk.values():
                for message in requested(update):
                    turn += 1
                    for call in message.tool_calls:
                        calls[call["id"]] = entry(call["name"], turn)
        elif mode == "custom":
            calls[chunk["call"]]["progress"].append(chunk["done"])
        elif chunk["event"] in ("tool-finished", "tool-error"):
            calls[chunk["tool_call_id"]]["outcome"] = (
                "finished" if chunk["event"] == "tool-finished" else "error"
            )
    return calls


def test_lab12_q2_accepts_astream(capsys):
    accepted(lab12.q2, {"summarize_run": with_astream}, capsys)


def test_lab12_q2_a_course_error_is_said_as_the_course_s(monkeypatch):
    monkeypatch.delattr(lab12._ErrorsAsMessages, "awrap_tool_call")  # as the check was: no async hook
    message = rejected(
        lab12.q2, {"summarize_run": with_astream}, "the check's own graph failed", "a bug in the course"
    )
    assert "an update can be None" not in message, message


def outcome_guessed(guess):
    """A summarize_run without the "tools" mode: the outcome guessed from each ToolMessage."""

    def summarize_run(graph, inputs):
        calls, turn = {}, 0
        for mode, chunk in graph.stream(inputs, stream_mode=["updates", "custom"]):
            if mode == "custom":
                calls[chunk["call"]]["progress"].append(chunk["done"])
                continue
            for update in chunk.values():
                for message in requested(update):
                    turn += 1
                    for call in message.tool_calls:
                        calls[call["id"]] = entry(call["name"], turn)
                for e in update if isinstance(update, list) else [update]:
                    for m in e.get("messages", []) if isinstance(e, dict) else []:
                        if isinstance(m, ToolMessage):
                            record = calls[m.tool_call_id]
                            record["outcome"] = "finished" if m.status == "success" else guess(m, record)
        return calls

    return summarize_run


def progress_rebuilt(rebuild):
    def summarize_run(graph, inputs):
        calls = SOL["summarize_run"](graph, inputs)
        for record in calls.values():
            record["progress"] = rebuild(record["progress"])
        return calls

    return summarize_run


def from_the_tools_closures(graph, inputs):  # the tester's reading of the graph's tools
    calls, turn = {}, 0
    for message in graph.invoke(inputs)["messages"]:
        if isinstance(message, AIMessage) and message.tool_calls:
            turn += 1
            for call in message.tool_calls:
                calls[call["id"]] = entry(call["name"], turn)
    for node_tool in graph.nodes["tools"].bound.tools_by_name.values():
        function = node_tool.func
        space = dict(
            zip(
                function.__code__.co_freevars,
                [c.cell_contents for c in function.__closure__ or ()],
                strict=False,
            )
        )
        if "calls" in space and "ran" in space:
            for call_id, call in space["calls"].items():
                calls[call_id]["progress"] = list(range(1, call.reported + 1))
                if call_id in space["ran"].starts:
                    calls[call_id]["outcome"] = "error" if call.fails_at else "finished"
    return calls


@pytest.mark.parametrize(
    ("summarize_run", "phrases"),
    [
        (
            outcome_guessed(lambda m, record: "error" if record["progress"] else "not run"),
            ["outcome of", "expected: 'error'", "observed: 'not run'", "before reporting any progress"],
        ),
        (
            outcome_guessed(lambda m, record: "error" if str(m.content).startswith("Error") else "not run"),
            ["outcome of", "expected: 'error'", "does not say whether its call ran"],
        ),
        (
            progress_rebuilt(lambda progress: list(range(1, progress[-1] + 1)) if progress else []),
            ["progress of the import that retried its table", "a retried table is reported twice"],
        ),
        (progress_rebuilt(lambda progress: sorted(set(progress))), ["retried", "made unique"]),
        (from_the_tools_closures, ["progress of", "is wrong"]),
    ],
    ids=[
        "no-progress-means-not-run",
        "error-text-means-error",
        "range-to-last",
        "sorted-set",
        "tools-closures",
    ],
)
def test_lab12_q2_refuses_what_only_looks_like_the_run(summarize_run, phrases):
    for seed in range(3):
        with pytest.raises(CheckFailed) as info:
            lab12.check_summary(summarize_run, seed=seed)
        for phrase in phrases:
            assert phrase in str(info.value), str(info.value)
