"""Labs: starters are generated from solutions; every check accepts its solution and rejects the
mistakes real users make, each with a message that says what was expected, what was observed and
where to look; starters fail only in their exercise and check cells; reset keeps a backup."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from typing import Annotated

import nbformat
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Send, interrupt

from helpers.labs import (
    LABS,
    NAMES,
    SOLUTIONS,
    CheckFailed,
    lab01,
    lab02,
    lab03,
    lab05,
    lab06,
    lab08,
    run_async,
    solution_regions,
    solution_text,
)
from helpers.labs import build as labs_build

MODULES = {"01": lab01, "02": lab02, "03": lab03, "05": lab05, "06": lab06, "08": lab08}


def solution_namespace(number: str) -> dict:
    """Execute the solution notebook's code (not its checks and hints) into a fresh namespace."""
    namespace: dict = {}
    for cell in nbformat.read(SOLUTIONS / f"{NAMES[number]}.ipynb", as_version=4).cells:
        if cell.cell_type != "code" or ".check(" in cell.source or ".hint(" in cell.source:
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        with contextlib.redirect_stdout(None):
            exec(compile(code, f"<{NAMES[number]}>", "exec"), namespace)  # noqa: S102 - our own notebook
    return namespace


def rejected(exercise, namespace: dict, *phrases: str) -> str:
    """Assert the check rejects `namespace` with a friendly message containing `phrases`."""
    with pytest.raises(CheckFailed) as info:
        exercise.check(namespace)
    message = str(info.value)
    for part in ("not yet", "expected:", "observed:", "look at:", *phrases):
        assert part in message, f"{part!r} missing from:\n{message}"
    assert len(message.splitlines()) <= 25, message
    return message


# -- the pair: starter generated from solution -----------------------------------------------------------
@pytest.mark.parametrize("stem", NAMES.values())
def test_committed_starter_is_generated_from_its_solution(stem):
    committed = (LABS / f"{stem}.ipynb").read_text(encoding="utf-8")
    assert committed == labs_build.starter_text(stem), (
        f"labs/{stem}.ipynb differs from what labs/solutions/{stem}.ipynb generates: run `make labs-build` "
        "(never edit a starter by hand)."
    )


@pytest.mark.parametrize("number", NAMES)
def test_every_exercise_has_a_region_a_check_and_hints(number):
    nb = nbformat.read(SOLUTIONS / f"{NAMES[number]}.ipynb", as_version=4)
    keys = {key for cell in nb.cells for key, _, _ in solution_regions(cell.source)}
    checked = {key for cell in nb.cells for key in labs_build.CHECK_CALL.findall(cell.source)}
    assert keys and keys == checked, (keys, checked)
    for key in keys:
        exercise = getattr(MODULES[number], key)
        assert len(exercise.hints) >= 2
        assert solution_text(number, key).strip()


def test_starter_stub_says_what_to_write():
    source = "def f(x):\n    # BEGIN SOLUTION q1: Return x doubled.\n    return 2 * x\n    # END SOLUTION\n"
    assert (
        labs_build.starter_source(source) == 'def f(x):\n    raise NotImplementedError("Return x doubled.")'
    )
    source = '# BEGIN SOLUTION q1: Fill in "?".\nA = 1\n# starter: A = "?"\n# END SOLUTION'
    assert labs_build.starter_source(source) == 'A = "?"\nraise NotImplementedError("Fill in \\"?\\".")'


def test_starter_links_point_from_labs():
    assert (
        labs_build.relink("[a](../../notebooks/x.ipynb) [b](../02_y.ipynb) [c](../README.md)")
        == "[a](../notebooks/x.ipynb) [b](02_y.ipynb) [c](README.md)"
    )


# -- lab 01 ---------------------------------------------------------------------------------------------
@pytest.mark.timing
def test_lab01_rejects_sequential_calls_completion_order_and_a_skipped_dependency():
    # the solution's acceptance: strict nbval on labs/solutions/, and test_lab01_verdicts_survive_a_stall
    async def one_by_one(calls, tools_by_name):
        return [(c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]

    async def as_they_finish(calls, tools_by_name):
        done = []

        async def one(c):
            done.append((c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])))

        await asyncio.gather(*(one(c) for c in calls))
        return done

    rejected(lab01.q1, {"run_calls": one_by_one}, "did not overlap", "at most 1 call(s) in flight")
    rejected(lab01.q1, {"run_calls": as_they_finish}, "order of the calls", "completion order")

    async def countries_in_turn(countries, capital, weather, sight):
        lines = []
        for country in countries:
            city = await capital(country)
            forecast, landmark = await asyncio.gather(weather(city), sight(city))
            lines.append(f"{country}: {forecast}; {landmark}")
        return lines

    async def everything_at_once(countries, capital, weather, sight):
        found = await asyncio.gather(*(weather(c) for c in countries), *(sight(c) for c in countries))
        return [f"{c}: {found[i]}; {found[len(countries) + i]}" for i, c in enumerate(countries)]

    rejected(lab01.q2, {"trip_report": countries_in_turn}, "did not overlap", "one after another")
    rejected(lab01.q2, {"trip_report": everything_at_once}, "`unknown` means")


async def stall(after: float, seconds: float = 0.3) -> None:
    """Freeze the event loop for `seconds`, as a loaded machine does, `after` seconds from now."""
    await asyncio.sleep(after)
    time.sleep(seconds)


@pytest.mark.timing
@pytest.mark.parametrize("after", [0.005, 0.05], ids=["early", "late"])
def test_lab01_verdicts_survive_a_stall(after, capsys):
    ns = solution_namespace("01")

    async def run_calls(calls, tools_by_name):
        results, _ = await asyncio.gather(ns["run_calls"](calls, tools_by_name), stall(after))
        return results

    async def trip_report(countries, capital, weather, sight):
        lines, _ = await asyncio.gather(ns["trip_report"](countries, capital, weather, sight), stall(after))
        return lines

    lab01.q1.check({"run_calls": run_calls})
    lab01.q2.check({"trip_report": trip_report})
    assert capsys.readouterr().out.count("✔") == 2


@pytest.mark.timing
def test_lab02_verdict_survives_a_stall(capsys):
    node_class = solution_namespace("02")["MyToolNode"]

    class Stalled(node_class):
        async def __call__(self, state):
            update, _ = await asyncio.gather(super().__call__(state), stall(0.005))
            return update

    lab02.q1.check({"MyToolNode": Stalled})
    assert "✔ q1 passed" in capsys.readouterr().out


def test_checks_run_inside_a_running_event_loop(capsys):
    ns = solution_namespace("01")

    async def notebook_cell():  # a notebook cell runs inside the kernel's event loop
        lab01.q1.check(ns)
        return run_async(lambda: asyncio.sleep(0, "ran"))

    assert asyncio.run(notebook_cell()) == "ran"
    assert "✔ q1 passed" in capsys.readouterr().out


def test_a_missing_name_or_a_stub_is_not_yet_not_a_crash():
    with pytest.raises(CheckFailed, match="`run_calls` is not defined"):
        lab01.q1.check({})

    async def stub(calls, tools_by_name):
        raise NotImplementedError("Run every call at once.")

    with pytest.raises(CheckFailed, match="still raises NotImplementedError: Run every call at once"):
        lab01.q1.check({"run_calls": stub})


def test_hints_are_tiered(capsys):
    lab01.q1.hint()
    lab01.q1.hint(2)
    first, second = capsys.readouterr().out.split("Hint 2/2")
    assert "Hint 1/2" in first and "q1.hint(2)" in first and "gather" in second


# -- lab 02 ---------------------------------------------------------------------------------------------
class WaitForNode:
    """Lesson 02's node as the source post writes it: `except TimeoutError` around `wait_for`."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        self.tools = {t.name: t for t in tools}
        self.timeout, self.max_concurrency = timeout, max_concurrency

    async def __call__(self, state):
        limit = asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else contextlib.nullcontext()
        calls = state["messages"][-1].tool_calls
        return {"messages": list(await asyncio.gather(*(self.one(c, limit) for c in calls)))}

    def limit_for(self, shared):
        return shared

    async def one(self, call, limit):
        def error(text):
            return ToolMessage(text, name=call["name"], tool_call_id=call["id"], status="error")

        tool_ = self.tools.get(call["name"])
        if tool_ is None:
            return error(f"Error: unknown tool; use one of: {', '.join(self.tools)}")
        async with self.limit_for(limit):
            try:
                result = await asyncio.wait_for(tool_.ainvoke(call["args"]), self.timeout)
            except TimeoutError:
                return error(f"Error: {call['name']} took longer than {self.timeout} s.")
            except Exception as exc:
                return error(f"Error: {exc!r}")
        return ToolMessage(str(result), name=call["name"], tool_call_id=call["id"])


@pytest.mark.timing
def test_lab02_rejects_crashes_confused_timeouts_and_fake_limits():
    # the solution's acceptance: strict nbval on labs/solutions/, and test_lab02_verdict_survives_a_stall
    class NoTryExcept(WaitForNode):  # the seed's minimal node: one failure sinks the batch
        async def one(self, call, limit):
            if call["name"] not in self.tools:
                return ToolMessage(
                    f"unknown; use one of {list(self.tools)}", tool_call_id=call["id"], status="error"
                )
            return ToolMessage(
                str(await self.tools[call["name"]].ainvoke(call["args"])), tool_call_id=call["id"]
            )

    class SemaphorePerCall(WaitForNode):
        def limit_for(self, shared):
            return asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else shared

    rejected(lab02.q1, {"MyToolNode": NoTryExcept}, "raised instead of answering", "ValidationError")
    rejected(
        lab02.q1,
        {"MyToolNode": WaitForNode},
        "own TimeoutError was reported as the node's timeout",
        "tell them apart",
    )

    class FixedTimeout(WaitForNode):  # timeouts told apart, but a semaphore per call
        async def one(self, call, limit):
            tool_ = self.tools.get(call["name"])
            if tool_ is None:
                return ToolMessage(
                    f"use one of: {', '.join(self.tools)}", tool_call_id=call["id"], status="error"
                )
            async with self.limit_for(limit):
                try:
                    async with asyncio.timeout(self.timeout) as scope:
                        result = await tool_.ainvoke(call["args"])
                except TimeoutError as exc:
                    text = "timed out" if scope.expired() else repr(exc)
                    return ToolMessage(text, tool_call_id=call["id"], status="error")
                except Exception as exc:
                    return ToolMessage(repr(exc), tool_call_id=call["id"], status="error")
            return ToolMessage(str(result), tool_call_id=call["id"])

    class FakeLimit(FixedTimeout, SemaphorePerCall):
        pass

    rejected(
        lab02.q1, {"MyToolNode": FakeLimit}, "max_concurrency=3 was not kept", "a Semaphore created per call"
    )


# -- lab 03 ---------------------------------------------------------------------------------------------
def test_lab03_accepts_the_solution_and_rejects_configurations_that_silently_differ(capsys):
    ns = solution_namespace("03")
    lab03.q1.check(ns)
    assert "✔ q1 passed" in capsys.readouterr().out
    solution = ns["build_node"]

    def with_true(tools):
        node = solution(tools)
        return ToolNode(
            tools,
            handle_tool_errors=True,
            wrap_tool_call=node._wrap_tool_call,
            awrap_tool_call=node._awrap_tool_call,
        )

    def async_only(tools):
        return ToolNode(tools, awrap_tool_call=solution(tools)._awrap_tool_call)

    def exception_tuple(tools):
        return ToolNode(tools, handle_tool_errors=(ConnectionError,))

    rejected(lab03.q1, {"build_node": with_true}, "the retry never saw an exception")
    rejected(lab03.q1, {"build_node": async_only}, "skipped by sync invoke")
    rejected(
        lab03.q1,
        {"build_node": exception_tuple},
        "bad arguments under invoke",
        "switches off the default answer to argument errors",
    )


def test_lab03_a_handler_for_everything_lets_the_bug_reach_the_model():
    def everything(tools):
        def retry(request, execute):
            return execute(request)

        return ToolNode(tools, handle_tool_errors=lambda e: f"failed: {e}", wrap_tool_call=retry)

    rejected(lab03.q1, {"build_node": everything}, "not what the policy says")


# -- lab 05 ---------------------------------------------------------------------------------------------
def test_lab05_accepts_right_predictions_and_explains_wrong_ones(capsys):
    ns = solution_namespace("05")
    lab05.q1.check(ns)
    lab05.q2.check(ns)
    assert capsys.readouterr().out.count("✔") == 2
    shapes = dict(
        ns["SHAPES"],
        B="[ToolMessage, ToolMessage]",
        F="[Command(graph=PARENT, update={'messages': [ToolMessage]}, goto=[Send('A'), Send('B')])]",
    )
    message = rejected(
        lab05.q1, {"SHAPES": shapes}, "2 of 6 predictions differ", "its own input kind", "updates DROPPED"
    )
    assert "look at:  lesson 05" in message
    shapes = dict(ns["SHAPES"], D="{'messages': [ToolMessage, ToolMessage]}")  # rule two forgotten
    rejected(lab05.q1, {"SHAPES": shapes}, "1 of 6 predictions differ", "rule two")
    contents = dict(ns["CONTENTS"], forecast="{'city': 'Paris', 'temp': '25 °C'}", reserve="None")
    rejected(lab05.q2, {"CONTENTS": contents}, "json.dumps", "'null'")
    contents = dict(
        ns["CONTENTS"], forecast='{"city": "Paris", "temp": "25 \\u00b0C"}', cities="Versailles, Reims"
    )
    rejected(lab05.q2, {"CONTENTS": contents}, "ensure_ascii=False", "not a list of content blocks")
    with pytest.raises(CheckFailed, match="6 prediction"):
        lab05.q1.check({"SHAPES": dict.fromkeys(lab05.CASES, "?")})


# -- lab 06 ---------------------------------------------------------------------------------------------
def test_lab06_accepts_the_solution_and_rejects_hand_offs_that_lose_messages(capsys):
    ns = solution_namespace("06")
    lab06.q1.check(ns)
    assert "✔ q1 passed" in capsys.readouterr().out

    @tool("route_to")
    def route_from_the_tool(nodes: list[str], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Ask the parent graph to run these nodes."""
        answer = ToolMessage("handing over", tool_call_id=tool_call_id)
        return Command(
            graph=Command.PARENT, goto=[Send(n, None) for n in nodes], update={"messages": [answer]}
        )

    def just_the_tool_node(tools):
        team = StateGraph(lab06.ParentState)
        team.add_node("tools", ToolNode(tools))
        team.add_edge(START, "tools")
        return team.compile()

    def forwarding(keep):
        def build_team(tools):
            def hand_off(state):
                asked = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
                answers = [m for m in state["messages"] if isinstance(m, ToolMessage) and keep(m)]
                sends = [
                    Send(n, None)
                    for c in asked.tool_calls
                    if c["name"] == "route_to"
                    for n in c["args"]["nodes"]
                ]
                if not sends:
                    return {}
                return Command(
                    graph=Command.PARENT,
                    goto=sends[0].node if keep is None else sends,
                    update={"messages": answers},
                )

            team = StateGraph(lab06.ParentState)
            team.add_node("tools", ToolNode(tools))
            team.add_node("hand_off", hand_off)
            team.add_edge(START, "tools")
            team.add_edge("tools", "hand_off")
            return team.compile()

        return build_team

    rejected(
        lab06.q1,
        {"route_to": route_from_the_tool, "build_team": just_the_tool_node},
        "no ToolMessage answers",
        "call_0_0 (route_to), call_0_1 (route_to)",
    )
    rejected(
        lab06.q1,
        {"route_to": ns["route_to"], "build_team": forwarding(lambda m: m.name == "route_to")},
        "a hand-off and a lookup",
        "call_0_1 (lookup_weather)",
    )


# -- lab 08 ---------------------------------------------------------------------------------------------
def _loop(model, tools, checkpointer, **tool_node_options):
    builder = StateGraph(MessagesState)
    builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode(tools, **tool_node_options))
    builder.add_edge(START, "llm")
    builder.add_conditional_edges("llm", tools_condition)
    builder.add_edge("tools", "llm")
    return builder.compile(checkpointer=checkpointer)


def _approval(dangerous):
    def ask(request):
        if dangerous(request) and interrupt({"approve?": request.tool_call["name"]}) != "yes":
            return ToolMessage(
                "The user refused.",
                name=request.tool_call["name"],
                tool_call_id=request.tool_call["id"],
                status="error",
            )
        return None

    def wrap(request, execute):
        return ask(request) or execute(request)

    async def awrap(request, execute):
        return ask(request) or await execute(request)

    return wrap, awrap


def test_lab08_accepts_the_solution_and_rejects_bypassable_or_repeating_guards(capsys):
    ns = solution_namespace("08")
    lab08.q1.check(ns)
    assert "✔ q1 passed" in capsys.readouterr().out

    wrap, awrap = _approval(lambda r: r.tool_call["name"] == "delete_file")  # lesson 08's interceptor
    rejected(
        lab08.q1,
        {"build_graph": lambda m, t, c: _loop(m, t, c, wrap_tool_call=wrap, awrap_tool_call=awrap)},
        "the email was sent 2 times",
        "re-runs the interrupted node",
    )
    wrap, awrap = _approval(lambda r: r.tool.metadata.get("requires_approval"))
    rejected(
        lab08.q1,
        {"build_graph": lambda m, t, c: _loop(m, t, c, awrap_tool_call=awrap)},
        "deleted before anyone approved",
        "awrap_tool_call` alone is skipped",
    )

    def refuse_in_the_approval_node(model, tools, checkpointer):  # ToolNode still runs the call
        def approve(state):
            risky = [c for c in state["messages"][-1].tool_calls if c["name"] == "delete_file"]
            if risky and interrupt("approve?") != "yes":
                return {
                    "messages": [
                        ToolMessage("refused", name=c["name"], tool_call_id=c["id"], status="error")
                        for c in risky
                    ]
                }
            return {}

        builder = StateGraph(MessagesState)
        builder.add_node("llm", lambda state: {"messages": [model.invoke(state["messages"])]})
        builder.add_node("approve", approve)
        builder.add_node("tools", ToolNode(tools))
        builder.add_edge(START, "llm")
        builder.add_conditional_edges("llm", tools_condition, {"tools": "approve", "__end__": "__end__"})
        builder.add_edge("approve", "tools")
        builder.add_edge("tools", "llm")
        return builder.compile(checkpointer=checkpointer)

    rejected(
        lab08.q1,
        {"build_graph": refuse_in_the_approval_node},
        "did not follow the answer 'no'",
        "ToolNode runs every call of the last AIMessage",
    )
    by_name = solution_namespace("08")  # the solution, with the danger decided by the tool's name
    source = solution_text("08", "q1").replace(
        'return bool((tool.metadata or {}).get("requires_approval"))', 'return tool.name == "delete_file"'
    )
    assert "delete_file" in source
    exec(compile(source, "<by name>", "exec"), by_name)  # noqa: S102 - our own solution, edited
    rejected(lab08.q1, by_name, "purge_cache", "decide by the tool's metadata")


# -- starters run: they fail only in exercise and check cells ----------------------------------------------
FORGET = """
for _name in [n for n in globals() if not n.startswith("_")
              and n not in ("In", "Out", "get_ipython", "exit", "quit")]:
    del globals()[_name]
"""  # a fresh namespace without `%reset -f`'s half second


def test_starters_fail_only_in_their_exercise_and_check_cells():
    """One kernel runs all six starters (each lab's names deleted before the next), then each is graded."""
    from nbclient import NotebookClient

    combined = nbformat.v4.new_notebook()
    spans = {}
    for stem in NAMES.values():
        starter = nbformat.read(LABS / f"{stem}.ipynb", as_version=4)
        solution = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
        exercises = {
            labs_build.starter_source(c.source) for c in solution.cells if solution_regions(c.source)
        }
        combined.cells.append(nbformat.v4.new_code_cell(FORGET))
        first = len(combined.cells)
        for cell in starter.cells:
            cell.metadata["exercise"] = cell.source in exercises
            combined.cells.append(cell)
        spans[stem] = (first, len(combined.cells))
    NotebookClient(
        combined,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(LABS)}},
    ).execute()

    for stem, (first, last) in spans.items():
        for cell in combined.cells[first:last]:
            if cell.cell_type != "code":
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            where = f"{stem} {cell.id}: {cell.source[:60]!r}"
            if labs_build.CHECK_CALL.search(cell.source):
                assert errors and errors[0].ename == "CheckFailed", where
                assert "not yet" in errors[0].evalue, (where, errors[0].evalue)
            elif cell.metadata.get("exercise"):
                assert not errors or errors[0].ename == "NotImplementedError", (where, errors)
            else:
                assert not errors, (where, [(e.ename, e.evalue) for e in errors])
        part = nbformat.v4.new_notebook(cells=combined.cells[first:last])
        results = labs_build.grade(part, stem)
        assert results and {r.status for r in results} == {"not yet"}, results


def test_grade_reads_passed_not_yet_and_error():
    def cell(source, error=None):
        c = nbformat.v4.new_code_cell(source)
        c.outputs = (
            [nbformat.v4.new_output("error", ename=error[0], evalue=error[1], traceback=[])] if error else []
        )
        return c

    nb = nbformat.v4.new_notebook(
        cells=[
            cell("q1.check()"),
            cell("q2.check()", ("CheckFailed", "q2 — not yet: the calls did not overlap.\n  expected: ...")),
            cell("x = 1 / 0", ("ZeroDivisionError", "division by zero")),
            cell("q3.check()", ("NameError", "name 'q3' is not defined")),
        ]
    )
    rows = [(r.exercise, r.status, r.detail) for r in labs_build.grade(nb, "lab.ipynb")]
    assert rows == [
        ("q1", "passed", ""),
        ("q2", "not yet", "the calls did not overlap."),
        ("q3", "error", "ZeroDivisionError: division by zero"),
    ]
    assert "1 of 3 exercises passed." in labs_build.table(labs_build.grade(nb, "lab.ipynb"))


def test_reset_restores_the_starter_and_backs_up_the_learners_file(tmp_path, monkeypatch):
    labs = tmp_path / "labs"
    labs.mkdir()
    monkeypatch.setattr(labs_build, "LABS", labs)
    monkeypatch.setattr(labs_build, "BACKUPS", labs / ".backups")
    mine = labs / f"{NAMES['01']}.ipynb"
    mine.write_text("my work", encoding="utf-8")
    path, backup = labs_build.reset("1", now=dt.datetime(2026, 11, 30, 15, 20, 0))
    assert path.read_text(encoding="utf-8") == labs_build.starter_text(NAMES["01"])
    assert backup == labs / ".backups" / f"{NAMES['01']}.2026-11-30T15-20-00.ipynb"
    assert backup.read_text(encoding="utf-8") == "my work"
    assert labs_build.reset("01") == (path, None)  # unchanged: nothing to back up
    with pytest.raises(SystemExit, match="the labs are 01, 02, 03, 05, 06, 08"):
        labs_build.reset("04")


def test_backups_are_ignored_by_git():
    assert ".backups/" in (LABS / ".gitignore").read_text(encoding="utf-8").split()
