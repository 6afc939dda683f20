# ruff: noqa: B905 - the learner answers below are written the way learners write them
"""Labs: starters are generated from solutions; the shared check machinery (a time limit on every
path, learner and library exceptions named with the learner's line, every case listed, bounded
output); for every exercise of labs 01-03, correct alternatives a learner writes are accepted and
the wrong answers beginners write (hard-coded output, partial concurrency, the substring trick,
skipped cancellation, a faked outcome, ...) are rejected with a message naming the mistake; every
`look at` names a real heading; `report` grades with the course's own checks; reset and restore
keep visible, distinct backups.

The learner answers below run concurrently (their checks mostly wait), so the whole set stays fast.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import functools
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langgraph.prebuilt import ToolNode

import helpers.labs as core
from helpers.labs import (
    LABS,
    NAMES,
    ROOT,
    SOLUTIONS,
    Cases,
    CheckFailed,
    Exercise,
    lab01,
    lab02,
    lab03,
    lab05,
    lab06,
    lab08,
    lab12,
    run_async,
    run_learner,
    solution_namespace,
    solution_regions,
    solution_text,
)
from helpers.labs import __main__ as labs_cli
from helpers.labs import build as labs_build
from helpers.nodes import CustomAsyncToolNode

MODULES = {"01": lab01, "02": lab02, "03": lab03, "05": lab05, "06": lab06, "08": lab08, "12": lab12}


def rejected(exercise, namespace: dict, *phrases: str) -> str:
    """Assert the check rejects `namespace` with a friendly message containing `phrases`."""
    with pytest.raises(CheckFailed) as info:
        exercise.check(namespace)
    message = str(info.value)
    for part in ("not yet", *phrases):
        assert part in message, f"{part!r} missing from:\n{message}"
    return message


def verdicts(checker, answers: dict) -> dict[str, str]:
    """Run `checker(answer)` for every answer at once; 'PASS' or the CheckFailed message."""

    def one(answer):
        try:
            checker(answer)
        except CheckFailed as exc:
            return str(exc)
        return "PASS"

    with ThreadPoolExecutor(max_workers=6) as pool:  # more would make the CPU, not the checks, the limit
        futures = {name: pool.submit(one, answer) for name, answer in answers.items()}
        return {name: future.result() for name, future in futures.items()}


def assert_verdicts(results: dict[str, str], expected: dict[str, tuple[str, ...]]) -> None:
    """`expected[name]` is () for an accepted answer, else the phrases its message must contain."""
    problems = []
    for name, phrases in expected.items():
        got = results[name]
        if not phrases:
            if got != "PASS":
                problems.append(f"{name}: a correct answer was refused:\n{got}")
            continue
        if got == "PASS":
            problems.append(f"{name}: a wrong answer passed")
            continue
        problems += [f"{name}: {p!r} missing from:\n{got}" for p in ("not yet", *phrases) if p not in got]
    assert not problems, "\n\n".join(problems)


# -- the pair: starter generated from solution -----------------------------------------------------------
@pytest.mark.parametrize("stem", NAMES.values())
def test_committed_starter_is_generated_from_its_solution(stem):
    committed = (LABS / f"{stem}.ipynb").read_text(encoding="utf-8")
    assert committed == labs_build.starter_text(stem), (
        f"labs/{stem}.ipynb differs from what labs/solutions/{stem}.ipynb generates: run `make labs-build` "
        "(never edit a starter by hand)."
    )


@pytest.mark.parametrize("number", NAMES)
def test_every_exercise_has_a_region_a_check_a_hint_cell_and_hints(number):
    nb = nbformat.read(SOLUTIONS / f"{NAMES[number]}.ipynb", as_version=4)
    keys = {key for cell in nb.cells for key, _, _ in solution_regions(cell.source)}
    checked = {key for cell in nb.cells for key in labs_build.CHECK_CALL.findall(cell.source)}
    assert keys and keys == checked == set(labs_build.exercises(number)), (keys, checked)
    for key in keys:
        exercise = getattr(MODULES[number], key)
        assert len(exercise.hints) >= 2
        assert solution_text(number, key).strip()
    if number in ("01", "02", "03"):
        hinted = {c.source.split(".")[0] for c in nb.cells if c.cell_type == "code" and ".hint(" in c.source}
        assert hinted == keys, f"lab {number}: every exercise gets a `qN.hint()` cell ({hinted} vs {keys})"


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


# -- every "look at" names a real heading --------------------------------------------------------------
def _headings(notebook: str) -> set[str]:
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return {
        line.lstrip("#").strip()
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("#")
    }


def _section_calls(path: Path) -> list[tuple[int, str, str]]:
    """Every `section(notebook, heading)` in a module, its arguments resolved to strings: literals,
    module constants, and names unpacked from a module-level dict of tuples (`why, heading = WHY[c]`,
    every value of that position)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants: dict[str, str] = {}
    tables: dict[str, list[tuple]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant | ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in (t for t in targets if isinstance(t, ast.Name)):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    constants[target.id] = node.value.value
                elif isinstance(node.value, ast.Dict):
                    rows = [ast.literal_eval(v) for v in node.value.values if isinstance(v, ast.Tuple)]
                    tables[target.id] = rows
    unpacked: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Subscript)
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in tables
        ):
            for index, name in enumerate(node.targets[0].elts):
                if isinstance(name, ast.Name):
                    unpacked[name.id] = [row[index] for row in tables[node.value.value.id]]

    def values(arg: ast.AST) -> list[str]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.Name) and arg.id in constants:
            return [constants[arg.id]]
        if isinstance(arg, ast.Name) and arg.id in unpacked:
            return unpacked[arg.id]
        raise AssertionError(f"{path.name}:{arg.lineno}: section() needs literal strings or module constants")

    return [
        (node.lineno, notebook, heading)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "section"
        for notebook in values(node.args[0])
        for heading in values(node.args[1])
    ]


@pytest.mark.parametrize("number", NAMES)
def test_every_look_at_names_a_real_heading(number):
    path = ROOT / "helpers" / "labs" / f"lab{number}.py"
    calls = _section_calls(path)
    assert calls, f"{path.name} names no lesson section"
    missing = [
        f"{path.name}:{line}: {notebook} has no heading {heading!r}"
        for line, notebook, heading in calls
        if heading not in _headings(notebook)
    ]
    assert not missing, "\n".join(missing)


# -- the shared machinery ------------------------------------------------------------------------------
def test_a_sync_hang_is_reported_and_the_caller_goes_on():
    stop = threading.Event()

    def waits_forever():
        stop.wait()

    start = time.perf_counter()
    with pytest.raises(core.LearnerHung, match=r"did not return within 0.3 s .* never happens\?.*daemon"):
        run_learner(waits_forever, limit=0.3)
    assert time.perf_counter() - start < 2
    stop.set()  # free the worker thread the check left behind
    assert run_learner(lambda: "still usable") == "still usable"


def test_an_async_hang_is_cancelled_and_reported_also_from_inside_a_running_loop():
    cancelled = []

    async def waits_forever():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def notebook_cell():
        with pytest.raises(core.LearnerHung, match="The check cancelled it"):
            run_learner(waits_forever, limit=0.3)
        return run_async(lambda: asyncio.sleep(0, "ran"))

    assert asyncio.run(notebook_cell()) == "ran"
    assert cancelled == [True]


def run_calls_with_a_typo(calls, tools_by_name):
    first = calls[0]
    return first["tool"]  # the learner's mistake: the key is "name"


def test_a_learner_exception_names_the_learners_function_and_line():
    with pytest.raises(core.LearnerRaised) as info:
        run_learner(run_calls_with_a_typo, [{"name": "x"}], {})
    message = str(info.value)
    assert "your code raised KeyError: 'tool' in `run_calls_with_a_typo`, line" in message
    assert 'return first["tool"]' in message and "helpers" not in message


async def _ask(city: str) -> str:
    return city


ASYNC_ONLY = StructuredTool.from_function(coroutine=_ask, name="ask", description="Ask.")


def test_a_library_error_is_named_as_the_librarys_with_the_learners_call_site():
    def node(state):
        return ASYNC_ONLY.invoke({"city": "Paris"})  # sync call of an async-only tool

    exercise = Exercise("01", "q1", ("node",), lambda f: run_learner(f, {}), ("a", "b"))
    message = rejected(
        exercise, {"node": node}, "langchain-core raised NotImplementedError", "called from your `node`"
    )
    assert "await tool.ainvoke" in message and "still a stub" not in message


def test_a_stub_is_still_a_stub_and_a_missing_name_says_which_cell_to_run():
    rejected(lab01.q1, {}, "`run_calls` is not defined", "Run the exercise cell above")

    async def run_calls(calls, tools_by_name):
        raise NotImplementedError("Run every call at once.")

    message = rejected(
        lab01.q1, {"run_calls": run_calls}, "still raises NotImplementedError: Run every call at once"
    )
    assert message.count("NotImplementedError") == 1, message  # said once, not once per case

    def build_node(tools):
        raise NotImplementedError("Return a ToolNode that meets POLICY under invoke and ainvoke.")

    message = rejected(
        lab03.q1, {"build_node": build_node}, "still raises NotImplementedError: Return a ToolNode"
    )
    assert "cases failed" not in message, message


def test_wrong_signature_not_callable_and_none_are_feedback():
    rejected(lab01.q1, {"run_calls": lambda calls: calls}, "cannot be called the way the exercise calls it")
    rejected(lab01.q1, {"run_calls": [("call-0", "x")]}, "not a function")
    rejected(lab01.q1, {"run_calls": lambda calls, tools: None}, "None means the function has no `return`")


def test_a_learner_who_prints_a_lot_does_not_bury_the_verdict(capsys):
    ns = solution_namespace("01")

    async def noisy(calls, tools_by_name):
        for i in range(5000):
            print("debug", i)
        return await ns["run_calls"](calls, tools_by_name)

    lab01.q1.check({"run_calls": noisy})
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("✔ q1 passed") and len(out) < 20, out[-5:]
    assert any("more line(s) not shown" in line for line in out)

    async def noisy_and_wrong(calls, tools_by_name):
        print("x" * 100_000)
        return []

    message = rejected(lab01.q1, {"run_calls": noisy_and_wrong}, "your code printed")
    assert len(message) < 6000


def test_a_check_run_twice_gives_the_same_verdict(capsys):
    ns = solution_namespace("01")
    lab01.q1.check(ns)
    lab01.q1.check(ns)
    lab01.q2.check(ns)
    lab01.q2.check(ns)
    assert capsys.readouterr().out.count("✔") == 4


def test_cases_list_every_case_and_raise_once():
    cases = Cases("q9")
    cases.ok("first", "fine")
    cases.bad("second", expected="2", observed="3", where="lesson 01", why="off by one")
    cases.bad("fourth", expected="2", observed="3", where="lesson 01", why="off by one")
    with cases.case("third"):
        raise core.fail("a summary", expected="A", observed="B", where="W")
    with pytest.raises(CheckFailed) as info:
        cases.result("never")
    text = str(info.value)
    assert text.startswith("q9 — not yet: 3 of 4 cases failed.")
    assert "✔ first — fine" in text and "✘ second" in text and "why:      off by one" in text
    assert "✘ third: a summary" in text and "observed: B" in text and "✘ fourth (as above)" in text
    assert "q9.hint()" in text
    assert Cases("q1").result("all good") == "all good"


# -- lab 01 ---------------------------------------------------------------------------------------------
async def gather_calls(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return list(zip([c["id"] for c in calls], results))


async def taskgroup_calls(calls, tools_by_name):
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]
    return [(c["id"], t.result()) for c, t in zip(calls, tasks)]


class CallRunner:
    """A callable object, as a learner who likes classes writes it."""

    async def __call__(self, calls, tools_by_name):
        return await gather_calls(calls, tools_by_name)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)  # a sync wrapper returning the coroutine

    return wrapper


async def tool_messages(calls, tools_by_name):  # ainvoke(call) returns a ToolMessage
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c) for c in calls))
    return [(c["id"], r) for c, r in zip(calls, results)]


async def one_by_one(calls, tools_by_name):
    return [(c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]


async def first_two_then_gather(calls, tools_by_name):
    first = [(c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls[:2]]
    return first + await gather_calls(calls[2:], tools_by_name)


async def first_then_gather(calls, tools_by_name):
    first = [(calls[0]["id"], await tools_by_name[calls[0]["name"]].ainvoke(calls[0]["args"]))]
    return first + await gather_calls(calls[1:], tools_by_name)


async def as_they_finish(calls, tools_by_name):
    done = []

    async def one(c):
        done.append((c["id"], await tools_by_name[c["name"]].ainvoke(c["args"])))

    await asyncio.gather(*(one(c) for c in calls))
    return done


async def hard_coded(calls, tools_by_name):
    return [
        ("call-0", "Paris: sunny, 25 °C"),
        ("call-1", "Paris: the Louvre"),
        ("call-2", "London: cloudy, 18 °C"),
        ("call-3", "London: the Tower of London"),
        ("call-4", "Tokyo: light rain, 21 °C"),
        ("call-5", "Tokyo: Senso-ji"),
    ]


async def notebook_tools(calls, tools_by_name):  # the notebook's TOOLS, not the ones passed in
    return await gather_calls(calls, lab01.TOOLS)


async def ids_by_position(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return [(f"call-{i}", r) for i, r in enumerate(results)]


async def one_tool_for_all(calls, tools_by_name):
    weather = tools_by_name["lookup_weather"]
    results = await asyncio.gather(*(weather.ainvoke(c["args"]) for c in calls))
    return list(zip([c["id"] for c in calls], results))


def sync_run_calls(calls, tools_by_name):  # a sync def calling async-only tools
    return [(c["id"], tools_by_name[c["name"]].invoke(c["args"])) for c in calls]


def test_lab01_speedup_of_no_calls_is_zero_not_a_crash():
    from helpers.timing import CallRecorder

    assert lab01.speedup(CallRecorder()) == 0.0


def test_lab01_q1_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "gather": gather_calls,
        "TaskGroup": taskgroup_calls,
        "callable object": CallRunner(),
        "decorated function": logged(gather_calls),
        "ainvoke(call) → ToolMessage": tool_messages,
        "one by one": one_by_one,
        "first two awaited, rest gathered": first_two_then_gather,
        "first awaited, rest gathered": first_then_gather,
        "completion order": as_they_finish,
        "hard-coded answers": hard_coded,
        "the notebook's TOOLS": notebook_tools,
        "ids by position": ids_by_position,
        "one tool for every call": one_tool_for_all,
        "sync def": sync_run_calls,
    }
    assert_verdicts(
        verdicts(lab01.check_run_calls, answers),
        {
            "gather": (),
            "TaskGroup": (),
            "callable object": (),
            "decorated function": (),
            "ainvoke(call) → ToolMessage": (),
            "one by one": ("one after another", "at most 1 in flight"),
            "first two awaited, rest gathered": (
                "ran on their own before the rest",
                "only partly concurrent",
            ),
            "first awaited, rest gathered": ("ran on its own before the rest", "only partly concurrent"),
            "completion order": ("call order", "completion order"),
            "hard-coded answers": ("does not fit another batch", "0 tool run(s) recorded"),
            "the notebook's TOOLS": ("0 tool run(s) recorded", "through the tools given"),
            "ids by position": ("with their own `call['id']`",),
            "one tool for every call": ("each call runs its own tool",),
            "sync def": ("langchain-core raised NotImplementedError", "await tool.ainvoke"),
        },
    )


async def per_country(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        return f"{country}: {forecast}; {landmark}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


async def two_phases(countries, capital, weather, sight):  # all capitals, then every lookup
    cities = await asyncio.gather(*(capital(c) for c in countries))
    found = await asyncio.gather(*(weather(c) for c in cities), *(sight(c) for c in cities))
    n = len(cities)
    return [f"{c}: {found[i]}; {found[n + i]}" for i, c in enumerate(countries)]


async def taskgroups(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        async with asyncio.TaskGroup() as group:
            w, s = group.create_task(weather(city)), group.create_task(sight(city))
        return f"{country}: {w.result()}; {s.result()}"

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(c)) for c in countries]
    return [t.result() for t in tasks]


async def countries_in_turn(countries, capital, weather, sight):
    lines = []
    for country in countries:
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        lines.append(f"{country}: {forecast}; {landmark}")
    return lines


async def first_country_alone(countries, capital, weather, sight):
    first = await per_country(countries[:1], capital, weather, sight)
    return first + await per_country(countries[1:], capital, weather, sight)


async def lookups_in_turn(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        return f"{country}: {await weather(city)}; {await sight(city)}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


async def everything_at_once(countries, capital, weather, sight):  # the dependency skipped
    found = await asyncio.gather(*(weather(c) for c in countries), *(sight(c) for c in countries))
    return [f"{c}: {found[i]}; {found[len(countries) + i]}" for i, c in enumerate(countries)]


async def hard_coded_report(countries, capital, weather, sight):
    return [
        "France: Paris: sunny, 25 °C; Paris: the Louvre",
        "England: London: cloudy, 18 °C; London: the Tower of London",
        "Japan: Tokyo: light rain, 21 °C; Tokyo: Senso-ji",
    ]


async def in_completion_order(countries, capital, weather, sight):
    lines = []

    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        lines.append(f"{country}: {forecast}; {landmark}")

    await asyncio.gather(*(one(c) for c in countries))
    return lines


async def forgot_return(countries, capital, weather, sight):
    await per_country(countries, capital, weather, sight)


def test_lab01_q2_accepts_correct_alternatives_and_names_each_wrong_answer():
    answers = {
        "per-country gather": per_country,
        "two phases": two_phases,
        "TaskGroups": taskgroups,
        "countries in turn": countries_in_turn,
        "first country alone": first_country_alone,
        "city lookups in turn": lookups_in_turn,
        "dependency skipped": everything_at_once,
        "hard-coded report": hard_coded_report,
        "completion order": in_completion_order,
        "no return": forgot_return,
    }
    assert_verdicts(
        verdicts(lab01.check_trip_report, answers),
        {
            "per-country gather": (),
            "two phases": (),
            "TaskGroups": (),
            "countries in turn": ("the countries ran one after another",),
            "first country alone": ("awaited on their own before the others were gathered",),
            "city lookups in turn": ("weather(city) and sight(city) in flight at the same time",),
            "dependency skipped": (
                "`unknown` means a city lookup ran with the country",
                "`capital(country)` never ran",
            ),
            "hard-coded report": ("drawn at random", "not be written out"),
            "completion order": ("completion order; keep the order of `countries`",),
            "no return": ("None means the function has no `return`",),
        },
    )


def test_lab01_q2_names_the_structure_that_failed_not_a_speedup_that_passed():
    message = verdicts(lab01.check_trip_report, {"x": first_country_alone})["x"]
    assert "the countries handled together" in message and "at least 1.3x" not in message


@pytest.mark.timing
@pytest.mark.parametrize("after", [0.005, 0.05], ids=["early", "late"])
def test_lab01_verdicts_survive_a_stall(after, capsys):
    async def stall(seconds: float = 0.3) -> None:
        await asyncio.sleep(after)
        time.sleep(seconds)  # a loaded machine freezes the loop

    async def run_calls(calls, tools_by_name):
        results, _ = await asyncio.gather(gather_calls(calls, tools_by_name), stall())
        return results

    async def trip_report(countries, capital, weather, sight):
        lines, _ = await asyncio.gather(per_country(countries, capital, weather, sight), stall())
        return lines

    lab01.q1.check({"run_calls": run_calls})
    lab01.q2.check({"trip_report": trip_report})
    assert capsys.readouterr().out.count("✔") == 2


def test_lab01_hints_are_tiered(capsys):
    lab01.q1.hint()
    lab01.q1.hint(2)
    first, second = capsys.readouterr().out.split("Hint 2/2")
    assert "Hint 1/2" in first and "q1.hint(2)" in first and "gather" in second


# -- lab 02 ---------------------------------------------------------------------------------------------
class Base:
    """A correct node (asyncio.timeout + expired), with hooks the wrong variants override."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        self.tools = {t.name: t for t in tools}
        self.timeout, self.max_concurrency = timeout, max_concurrency

    def calls(self, state):
        return state["messages"][-1].tool_calls

    def limit(self):
        return asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else contextlib.nullcontext()

    def per_call(self, shared):
        return shared

    def find(self, name):
        return self.tools.get(name)

    def error(self, call, text):
        return ToolMessage(text, name=call["name"], tool_call_id=call["id"], status="error")

    async def run(self, tool, call):
        return await self.within(self.timeout, tool, call)

    async def within(self, seconds, tool, call):
        """The call's answer under `asyncio.timeout(seconds)`: the deadline's text once it expired."""
        try:
            async with asyncio.timeout(seconds) as scope:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if scope.expired():
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")

    def deadline(self, call):
        return f"Error: {call['name']} took longer than {self.timeout} s."

    async def one(self, call, shared):
        tool = self.find(call["name"])
        if tool is None:
            return self.error(call, f"Unknown tool {call['name']!r}; allowed: {', '.join(self.tools)}")
        async with self.per_call(shared):
            return await self.run(tool, call)

    async def __call__(self, state):
        shared = self.limit()
        return {"messages": list(await asyncio.gather(*(self.one(c, shared) for c in self.calls(state))))}


# correct alternatives
class TaskGroupWait(Base):
    """TaskGroup for the batch; asyncio.wait on one task, cancelled when the deadline passes."""

    async def run(self, tool, call):
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, f"timeout: {call['name']} did not finish in {self.timeout} seconds")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except Exception as exc:
            return self.error(call, f"{type(exc).__name__}: {exc}")

    async def __call__(self, state):
        shared = self.limit()
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self.one(c, shared)) for c in self.calls(state)]
        return {"messages": [t.result() for t in tasks]}


class WaitForGuarded(Base):
    """`asyncio.wait_for` around a coroutine that answers the tool's own errors itself (3.11's
    `wait_for` sets a `loop.call_later` timer; 3.12's uses `asyncio.timeout`)."""

    async def run(self, tool, call):
        async def guarded():
            try:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
            except Exception as exc:
                return self.error(call, f"Error: {exc!r}")

        try:
            return await asyncio.wait_for(guarded(), self.timeout)
        except TimeoutError:
            return self.error(call, f"Error: {call['name']} timed out after {self.timeout} s")


class CallLaterCancel(Base):
    """`loop.call_later(self.timeout, task.cancel)`: a timer of its own on the loop."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        timer = asyncio.get_running_loop().call_later(self.timeout, task.cancel)
        try:
            return ToolMessage(str(await task), name=call["name"], tool_call_id=call["id"])
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise
            return self.error(call, f"Error: {call['name']} exceeded its time limit")
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")
        finally:
            timer.cancel()


class FloatCast(Base):
    """`float(timeout)` stored: the node's own timeout all the same."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(
            tools, timeout=None if timeout is None else float(timeout), max_concurrency=max_concurrency
        )


class EarlierConstant(Base):
    """`asyncio.timeout(self.timeout)` with a constant 0.3 s inside it: cut before its timeout."""

    async def run(self, tool, call):
        try:
            async with asyncio.timeout(self.timeout) as outer:
                async with asyncio.timeout(None if self.timeout is None else 0.3) as inner:
                    return ToolMessage(
                        str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                    )
        except TimeoutError as exc:
            if outer.expired() or inner.expired():
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class Polling(Base):
    """Correct: poll the task every `timeout / 20` until `loop.time() + timeout` has passed, then cancel."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        deadline = loop.time() + self.timeout
        while not task.done() and loop.time() < deadline:
            await asyncio.sleep(self.timeout / 20)
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class FromBatchStart(Base):
    """Correct: the deadline counted from the start of the batch (`timeout` less the time spent)."""

    async def __call__(self, state):
        self.started = asyncio.get_running_loop().time()
        return await super().__call__(state)

    async def run(self, tool, call):
        spent = asyncio.get_running_loop().time() - self.started
        remaining = None if self.timeout is None else max(0.0, self.timeout - spent)
        return await self.within(remaining, tool, call)


class HalfTimeWarning(Base):
    """Correct: the deadline, and a do-nothing "slow call" timer at half the timeout beside it."""

    async def run(self, tool, call):
        loop = asyncio.get_running_loop()
        warn = None if self.timeout is None else loop.call_later(self.timeout / 2, lambda: None)
        try:
            return await super().run(tool, call)
        finally:
            if warn is not None:
                warn.cancel()


class AnyioDeadline(Base):
    """Correct: `anyio.fail_after(self.timeout)` (anyio's cancel scope, on asyncio's timers)."""

    async def run(self, tool, call):
        import anyio

        try:
            with anyio.fail_after(self.timeout) as scope:
                return ToolMessage(
                    str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if scope.cancel_called:
                return self.error(call, self.deadline(call))
            return self.error(call, f"Error: {exc!r}")
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class Reacts(Base):
    """A call as a task; `expired(task)` says whether to cancel it (and when, by when it returns)."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        if await self.expired(task):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, self.deadline(call))
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")

    async def expired(self, task):
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        return not done


class SpinsUntilTheDeadline(Reacts):
    """Correct, if wasteful: `await asyncio.sleep(0)` until `loop.time() + timeout` has passed."""

    async def expired(self, task):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while not task.done() and loop.time() < deadline:
            await asyncio.sleep(0)
        return not task.done()


class ThreadTimer(Reacts):
    """Correct: a `threading.Timer(timeout)` cancels the call through `call_soon_threadsafe` (no loop
    timer: the check times this cut)."""

    async def expired(self, task):
        loop, passed = asyncio.get_running_loop(), threading.Event()
        timer = threading.Timer(
            self.seconds(), lambda: (passed.set(), loop.call_soon_threadsafe(task.cancel))
        )
        timer.start()
        try:
            await asyncio.wait({task})
        finally:
            timer.cancel()
        return passed.is_set()

    def seconds(self):
        return self.timeout


class ThreadTimerOwnNumber(ThreadTimer):
    """Wrong: the same, with a number of its own (0.45 s) instead of `timeout`."""

    def seconds(self):
        return 0.45


class SpinsAfterTheDeadline(Reacts):
    """Wrong: at the deadline, a 1 s "grace" spent in `await asyncio.sleep(0)`, then the cut."""

    async def expired(self, task):
        if not await super().expired(task):
            return False
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.0
        while loop.time() < end and not task.done():
            await asyncio.sleep(0)
        return not task.done()


class BlocksAfterTheDeadline(Reacts):
    """Wrong: at the deadline, `time.sleep(0.8)` ("flush the logs"), then the cut."""

    async def expired(self, task):
        if not await super().expired(task):
            return False
        time.sleep(0.8)
        return True


class CallAtAPastDeadline(Reacts):
    """Wrong: waits `timeout + 0.6`, then `loop.call_at(deadline, task.cancel)`, its moment long gone."""

    async def expired(self, task):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        done, _ = await asyncio.wait({task}, timeout=self.timeout + 0.6)
        if done:
            return False
        loop.call_at(deadline, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        return False if not task.cancelled() else True


class GracePeriod(Base):
    """Wrong: `asyncio.wait(timeout=self.timeout)`, then a 1 s grace before cancelling."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            done, _ = await asyncio.wait({task}, timeout=1.0)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class ShieldThenLateCancel(Base):
    """Wrong: `asyncio.timeout(self.timeout)` around a shielded task, cancelled 0.6 s after it."""

    async def run(self, tool, call):
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        try:
            async with asyncio.timeout(self.timeout) as scope:
                return ToolMessage(
                    str(await asyncio.shield(task)), name=call["name"], tool_call_id=call["id"]
                )
        except TimeoutError as exc:
            if not scope.expired():
                return self.error(call, f"Error: {exc!r}")
            await asyncio.sleep(0.6)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return self.error(call, self.deadline(call))
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class DecoyTimer(Base):
    """Wrong: a do-nothing timer set from `self.timeout`; the real deadline is 1.2 s."""

    async def run(self, tool, call):
        if self.timeout is None:
            return await super().run(tool, call)
        decoy = asyncio.get_running_loop().call_later(self.timeout, lambda: None)
        try:
            return await self.within(1.2, tool, call)
        finally:
            decoy.cancel()


class LoneCallNotCancelled(Base):
    """Wrong: a batch of one call stops waiting at the deadline but never cancels the call (on the
    loop, or in a worker thread the check cannot cancel)."""

    threaded = False

    async def __call__(self, state):
        calls = self.calls(state)
        if len(calls) != 1 or self.find(calls[0]["name"]) is None:
            return await super().__call__(state)
        call = calls[0]
        work = self.find(call["name"]).ainvoke(call["args"])
        task = asyncio.ensure_future(asyncio.to_thread(asyncio.run, work) if self.threaded else work)
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            return {
                "messages": [self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")]
            }
        return {"messages": [ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])]}


class LoneCallInAThread(LoneCallNotCancelled):
    threaded = True


def closure_node(tools, *, timeout=None, max_concurrency=None):
    """A closure instead of a class; other wording; a deadline flag set by the check itself."""
    by_name = {t.name: t for t in tools}

    async def node(state):
        calls = state["messages"][-1].tool_calls
        sem = asyncio.Semaphore(max_concurrency) if max_concurrency else None

        async def answer(call):
            def err(text):
                return ToolMessage(text, tool_call_id=call["id"], status="error")

            if call["name"] not in by_name:
                return err(f"No such tool. Available tools: {sorted(by_name)}")

            async def guarded():
                if sem is None:
                    return await by_name[call["name"]].ainvoke(call["args"])
                async with sem:
                    return await by_name[call["name"]].ainvoke(call["args"])

            task = asyncio.create_task(guarded())
            try:
                return ToolMessage(
                    str(await asyncio.wait_for(asyncio.shield(task), timeout)), tool_call_id=call["id"]
                )
            except TimeoutError as exc:
                if task.done():  # the tool itself raised TimeoutError
                    return err(str(exc))
                task.cancel()
                return err(f"The call exceeded its deadline ({timeout} s) and was cancelled.")
            except Exception as exc:
                return err(str(exc))

        return {"messages": await asyncio.gather(*(answer(c) for c in calls))}

    return node


class TimedOutWording(Base):  # the attacker's wordings: no number, other words
    def deadline(self, call):
        return f"Error: {call['name']} timed out."


class TimeLimitWording(Base):
    def deadline(self, call):
        return f"Error: {call['name']} exceeded the time limit and was cancelled."


class CancelWithoutAwait(Base):
    """asyncio.wait on every call, then `t.cancel()` on the pending ones without awaiting them."""

    async def __call__(self, state):
        calls, shared = self.calls(state), self.limit()

        async def untimed(call):
            tool = self.find(call["name"])
            if tool is None:
                return self.error(call, f"Unknown tool; allowed: {', '.join(self.tools)}")
            async with self.per_call(shared):
                try:
                    return ToolMessage(str(await tool.ainvoke(call["args"])), tool_call_id=call["id"])
                except Exception as exc:
                    return self.error(call, f"Error: {exc!r}")

        tasks = [asyncio.ensure_future(untimed(c)) for c in calls]
        done, pending = await asyncio.wait(tasks, timeout=self.timeout)
        for t in pending:
            t.cancel()
        return {
            "messages": [
                t.result() if t in done else self.error(c, f"Error: took longer than {self.timeout} s")
                for c, t in zip(calls, tasks, strict=True)
            ]
        }


# -- wrong answers ---------------------------------------------------------------------------------------
class SubstringTrick(Base):
    def find(self, name):
        return self.tools.get(name) or next((t for n, t in self.tools.items() if n in name), None)


class OffByOne(Base):
    def limit(self):
        return (
            asyncio.Semaphore(self.max_concurrency - 1) if self.max_concurrency else contextlib.nullcontext()
        )


class IgnoresTimeout(Base):
    async def run(self, tool, call):
        try:
            return ToolMessage(
                str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
            )
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class WaitForConfusion(Base):
    """`except TimeoutError` around wait_for; the message even carries the exception."""

    async def run(self, tool, call):
        try:
            result = await asyncio.wait_for(tool.ainvoke(call["args"]), self.timeout)
        except TimeoutError as exc:
            return self.error(call, f"Error: {call['name']} timed out after {self.timeout} s {exc!r}")
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")
        return ToolMessage(str(result), name=call["name"], tool_call_id=call["id"])


class WaitNoCancel(TaskGroupWait):
    async def run(self, tool, call):
        task = asyncio.ensure_future(tool.ainvoke(call["args"]))
        done, _ = await asyncio.wait({task}, timeout=self.timeout)
        if not done:
            return self.error(call, f"Error: {call['name']} took longer than {self.timeout} s.")
        try:
            return ToolMessage(str(task.result()), name=call["name"], tool_call_id=call["id"])
        except Exception as exc:
            return self.error(call, f"Error: {exc!r}")


class OwnDeadline(Base):
    """`asyncio.timeout(1.0)`: a deadline of its own, whatever `timeout` the node was built with."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=1.0, max_concurrency=max_concurrency)


class DefaultDeadline(Base):
    """`self.timeout or 0.5`: a deadline of its own when the node is built with `timeout=None`."""

    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=timeout or 0.5, max_concurrency=max_concurrency)


def derived_deadline(rule):
    """A node whose deadline is `rule(self.timeout)` (None passed through): a number of its own."""

    class Derived(Base):
        async def run(self, tool, call):
            return await self.within(None if self.timeout is None else rule(self.timeout), tool, call)

    return Derived


class EveryAIMessage(Base):
    def calls(self, state):
        return [c for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]


class SemaphorePerCall(Base):
    def per_call(self, shared):
        return asyncio.Semaphore(self.max_concurrency) if self.max_concurrency else shared


class SemaphoreInInit(Base):
    def __init__(self, tools, *, timeout=None, max_concurrency=None):
        super().__init__(tools, timeout=timeout, max_concurrency=max_concurrency)
        self.sem = asyncio.Semaphore(max_concurrency) if max_concurrency else contextlib.nullcontext()

    def limit(self):
        return self.sem


class FakedErrorText(Base):
    async def run(self, tool, call):
        message = await super().run(tool, call)
        if message.status == "error" and "traffic" in str(message.content):
            message.content = "Error: traffic service unreachable"
        return message


class NoTryExcept(Base):
    async def run(self, tool, call):
        return ToolMessage(str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"])


class CompletionOrder(Base):
    async def __call__(self, state):
        shared = self.limit()
        out = []
        for next_done in asyncio.as_completed([self.one(c, shared) for c in self.calls(state)]):
            out.append(await next_done)
        return {"messages": out}


class UnknownWithoutList(Base):
    async def one(self, call, shared):
        if call["name"] not in self.tools:
            return self.error(call, "Error: unknown tool")
        return await super().one(call, shared)


class Sequential(Base):
    async def __call__(self, state):
        shared = self.limit()
        return {"messages": [await self.one(c, shared) for c in self.calls(state)]}


class NoReturn(Base):
    async def __call__(self, state):
        await super().__call__(state)


class Hangs(Base):
    async def __call__(self, state):
        await asyncio.Event().wait()


class SyncCall(Base):
    def __call__(self, state):
        return {"messages": []}


class NamesTheHangingTool(Base):
    """The attacker's fake: no deadline at all, the hanging tool answered by its name."""

    async def one(self, call, shared):
        if call["name"] == "slow_search":
            return self.error(call, self.deadline(call))
        return await super().one(call, shared)

    async def run(self, tool, call):
        return await IgnoresTimeout.run(self, tool, call)


class HangingByArguments(NamesTheHangingTool):
    """The same fake, singling the hanging tool out by its `query` argument (the name is drawn)."""

    async def one(self, call, shared):
        if "query" in call["args"]:
            return self.error(call, self.deadline(call))
        return await Base.one(self, call, shared)


class StateAndConfig(Base):
    async def __call__(self, state, config):
        return await super().__call__(state)


class WrongSignature:
    def __init__(self, tools):
        self.tools = tools

    async def __call__(self, state):
        return {"messages": []}


@pytest.fixture
def quick_lab02(monkeypatch):
    """A shorter deadline and hang for the suite (a correct call takes 0.02 s)."""
    monkeypatch.setattr(lab02, "TIMEOUT", 0.6)
    monkeypatch.setattr(lab02, "HANG", 1.8)
    monkeypatch.setattr(lab02, "NO_DEADLINE", 0.8)  # above the largest deadline drawn (0.66 s)
    monkeypatch.setattr(core, "LIMIT", 3.0)


def test_lab02_accepts_correct_alternatives_and_names_each_wrong_answer(quick_lab02):
    answers = {
        "hangs": Hangs,
        "ignores timeout": IgnoresTimeout,
        "a deadline of its own": OwnDeadline,
        "a default deadline for timeout=None": DefaultDeadline,
        "asyncio.timeout + expired()": Base,
        "TaskGroup + asyncio.wait, cancelled": TaskGroupWait,
        "asyncio.wait_for, errors answered inside": WaitForGuarded,
        "loop.call_later(timeout, task.cancel)": CallLaterCancel,
        "a closure, other wording": closure_node,
        "the solution": solution_namespace("02")["MyToolNode"],
        "lesson 02's CustomAsyncToolNode": CustomAsyncToolNode,
        "substring trick": SubstringTrick,
        "off-by-one semaphore": OffByOne,
        "wait_for + except TimeoutError": WaitForConfusion,
        "asyncio.wait, never cancelled": WaitNoCancel,
        "answers every AIMessage": EveryAIMessage,
        "semaphore per call": SemaphorePerCall,
        "semaphore in __init__": SemaphoreInInit,
        "faked error text": FakedErrorText,
        "no try/except": NoTryExcept,
        "completion order": CompletionOrder,
        "unknown name without the list": UnknownWithoutList,
        "sequential": Sequential,
        "no return": NoReturn,
        "wrong signature": WrongSignature,
        "sync __call__": SyncCall,
        "deadline says 'timed out'": TimedOutWording,
        "deadline says 'exceeded the time limit'": TimeLimitWording,
        "asyncio.wait, cancelled without awaiting": CancelWithoutAwait,
        "hanging tool singled out by its argument": HangingByArguments,
        "__call__(self, state, config)": StateAndConfig,
    }
    assert_verdicts(
        verdicts(lab02.check_node, answers),
        {
            "asyncio.timeout + expired()": (),
            "TaskGroup + asyncio.wait, cancelled": (),
            "a closure, other wording": (),
            "the solution": (),
            "lesson 02's CustomAsyncToolNode": (),  # lesson and lab teach one semaphore rule: per run
            "substring trick": ("a tool ran for an unknown name", "merely contains"),
            "off-by-one semaphore": ("fewer than the limit: an off-by-one",),
            "ignores timeout": ("the node ignored `timeout`",),
            "a deadline of its own": ("must be the node's `timeout`", "not a number of your own"),
            "a default deadline for timeout=None": ("no call is cut off", "a default of your own"),
            "wait_for + except TimeoutError": ("catches the tool's own TimeoutError too", "scope.expired()"),
            "asyncio.wait, never cancelled": ("answered but never cancelled", "only stops WAITING"),
            "answers every AIMessage": ("answer only the LAST message's tool calls, not every AIMessage",),
            "semaphore per call": ("no limit was applied", "a new Semaphore per call"),
            "semaphore in __init__": ("bound to a different event loop", "made in `__init__`"),
            "faked error text": ("the exception's own text", "not a message of your own"),
            "no try/except": ("pydantic raised ValidationError", "called from your `run`"),
            "completion order": ("completion order",),
            "unknown name without the list": ("listing the allowed tools", "missing: lookup_weather"),
            "sequential": ("did not run together", "started later"),
            "no return": ("None means `__call__` has no `return`",),
            "hangs": ("did not return within 3 s", "not tried"),
            "wrong signature": ("cannot be called the way the exercise calls it", "timeout"),
            "sync __call__": ("`async def __call__(self, state)`",),
            "deadline says 'timed out'": (),
            "deadline says 'exceeded the time limit'": (),
            "asyncio.wait, cancelled without awaiting": (),
            "hanging tool singled out by its argument": ("never ran", "not the tool's name"),
            "__call__(self, state, config)": ("cannot be called as `node(state)`", "(state, config)"),
        },
    )


def test_lab02_a_node_without_a_deadline_cannot_answer_the_hanging_tool_by_name(quick_lab02, monkeypatch):
    monkeypatch.setattr(lab02, "SEARCH_NAMES", ("slow_search",))
    assert_verdicts(verdicts(lab02.check_node, {"by name": NamesTheHangingTool}), {"by name": ("never ran",)})
    monkeypatch.setattr(lab02, "SEARCH_NAMES", ("web_search",))  # another name: it hangs, unbounded
    assert_verdicts(
        verdicts(lab02.check_node, {"by name": NamesTheHangingTool}),
        {"by name": ("the node ignored `timeout`",)},
    )


def test_lab02_judges_the_deadline_by_the_timer_that_cut_the_call(quick_lab02):
    # the timer that fired just before the cut, against `timeout` after the node was called
    answers = {
        "twice the timeout": derived_deadline(lambda t: t * 2),
        "half the timeout": derived_deadline(lambda t: t / 2),
        "at most 0.5 s": derived_deadline(lambda t: min(t, 0.5)),
        "at least 0.5 s": derived_deadline(lambda t: max(t, 0.5)),
        "a constant 0.3 s inside asyncio.timeout(timeout)": EarlierConstant,
        "a 1 s grace after the deadline": GracePeriod,
        "a shielded call cancelled 0.6 s late": ShieldThenLateCancel,
        "a decoy timer from timeout, a deadline of 1.2 s": DecoyTimer,
        "a lone call never cancelled": LoneCallNotCancelled,
        "a lone call left running in a thread": LoneCallInAThread,
        "a 1 s grace spent spinning": SpinsAfterTheDeadline,
        "the loop blocked 0.8 s after the deadline": BlocksAfterTheDeadline,
        "call_at a deadline long past": CallAtAPastDeadline,
        "a thread timer with a number of its own": ThreadTimerOwnNumber,
        "the timeout itself": derived_deadline(lambda t: t),
        "float(timeout)": FloatCast,
        "polled every timeout / 20": Polling,
        "counted from the batch's start": FromBatchStart,
        "a warning timer at half the timeout beside it": HalfTimeWarning,
        "anyio.fail_after": AnyioDeadline,
        "spinning on asyncio.sleep(0) until the deadline": SpinsUntilTheDeadline,
        "a threading.Timer (timed)": ThreadTimer,
    }
    wrong = ("must be the node's `timeout`",)
    shorter, longer = (*wrong, "shorter than the timeout"), (*wrong, "longer than the timeout")
    assert_verdicts(
        verdicts(lab02.check_node, answers),
        {
            "twice the timeout": longer,
            "half the timeout": shorter,
            "at most 0.5 s": shorter,
            "at least 0.5 s": longer,
            "a constant 0.3 s inside asyncio.timeout(timeout)": shorter,
            "a 1 s grace after the deadline": longer,
            "a shielded call cancelled 0.6 s late": longer,
            "a decoy timer from timeout, a deadline of 1.2 s": longer,
            "a lone call never cancelled": (*wrong, "it was not cancelled", "cancel every call"),
            "a lone call left running in a thread": (*wrong, "it was not cancelled", "still running"),
            "a 1 s grace spent spinning": (*wrong, "no timer explains it", "is not about"),
            "the loop blocked 0.8 s after the deadline": (*wrong, "no timer explains it", "is not about"),
            "call_at a deadline long past": longer,
            "a thread timer with a number of its own": (*wrong, "did not come sooner"),
            **dict.fromkeys(list(answers)[-8:], ()),
        },
    )


def test_lab02_times_the_cut_where_it_cannot_watch_the_loop(quick_lab02, monkeypatch):
    # a loop without CPython's selector (uvloop, say): no timers seen, the cut is timed instead
    monkeypatch.setattr(lab02, "watched_loop", asyncio.new_event_loop)
    seen = []
    original = lab02._deadline_verdict
    monkeypatch.setattr(lab02, "_deadline_verdict", lambda cuts: seen.append(cuts) or original(cuts))
    answers = {"the solution": solution_namespace("02")["MyToolNode"], "a deadline of its own": OwnDeadline}
    assert_verdicts(
        verdicts(lab02.check_node, answers),
        {"the solution": (), "a deadline of its own": ("must be the node's `timeout`",)},
    )
    assert {(c[0][0], c[1][0]) for c in seen} == {("untimed", "untimed")}


def test_lab02_a_late_cut_and_a_stall_before_the_tool_starts_still_pass(quick_lab02):
    """The deadline is judged by the timer that cut the call, so a stall cannot fail a correct node.

    With the node's `timeout` the loop is blocked for 1.3 s just before the deadline: the cut comes
    about 1.3 s late, beyond any margin a timed check could allow. With the tenth of it, the loop is
    blocked for 0.3 s after the timer is set and before the tool starts, so the timer is already due
    when the tool begins."""

    class Stalls(Base):
        async def run(self, tool, call):
            if self.timeout is None or "query" not in call["args"]:
                return await super().run(tool, call)
            try:
                async with asyncio.timeout(self.timeout) as scope:
                    if self.timeout < 0.2:
                        time.sleep(0.3)
                    else:

                        async def block():
                            await asyncio.sleep(self.timeout * 0.9)
                            time.sleep(1.3)

                        asyncio.ensure_future(block())
                    return ToolMessage(
                        str(await tool.ainvoke(call["args"])), name=call["name"], tool_call_id=call["id"]
                    )
            except TimeoutError as exc:
                if scope.expired():
                    return self.error(call, self.deadline(call))
                return self.error(call, f"Error: {exc!r}")

    seen = []
    original = lab02._deadline_verdict

    def spy(cuts):
        seen.append(cuts)
        return original(cuts)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lab02, "_deadline_verdict", spy)
        assert_verdicts(verdicts(lab02.check_node, {"stalls": Stalls}), {"stalls": ()})
    [[(way, _, timeout, cut), (short_way, _, short, cut_short)]] = seen
    assert (way, short_way) == ("its deadline", "its deadline")
    assert cut > timeout + 1.0, "the long cut was not late: the test did not stall the loop"
    assert cut_short < 0.3, "the short timer was not due before the tool started"


def test_lab02_a_digit_of_the_nonce_is_not_the_timeout(quick_lab02, monkeypatch):
    """The reference solution failed ~1.6 % of runs: timeout 1.0 → "1", found in the hex nonce."""
    own = 'Error: TimeoutError("upstream gateway timed out (the tool\'s own error) [a1b2c3]")'
    assert not lab02._mentions_deadline(own.replace(f"{lab02.GATEWAY_MESSAGE} [a1b2c3]", ""), 1.0)
    assert not lab02._mentions_deadline("[111111] [1a2b3c] call_1f", 1.0)
    assert lab02._mentions_deadline("Error: 'web_search' took longer than 1.0 s.", 1.0)
    assert lab02._mentions_deadline("gave up after 1 s", 1.0)

    class Ones(lab02.random.Random):  # the attacker's draw: timeout 1.0, a nonce of ones
        def uniform(self, a, b):
            return 1.0 / lab02.TIMEOUT

        def getrandbits(self, k):
            return int("1" * 32, 16) if k == 128 else super().getrandbits(k)

    monkeypatch.setattr(lab02, "random", type("random", (), {"Random": Ones}))
    assert lab02.check_node(solution_namespace("02")["MyToolNode"])


@pytest.mark.timing
def test_lab02_verdict_survives_a_stall(monkeypatch, capsys):
    # The check's own deadline (lab02.TIMEOUT, about 1 s), not quick_lab02's 0.6 s: a good call must
    # come in under it with this test's 0.3 s stall and another one from the machine on top.
    monkeypatch.setattr(lab02, "HANG", 2.4)
    monkeypatch.setattr(core, "LIMIT", 5.0)

    class Stalled(Base):
        runs = 0

        async def __call__(self, state):
            Stalled.runs += 1
            if Stalled.runs % 2:  # every other run: the verdict, not the suite's time, is under test
                return await super().__call__(state)

            async def stall():
                await asyncio.sleep(0.005)
                time.sleep(0.3)

            update, _ = await asyncio.gather(super().__call__(state), stall())
            return update

    lab02.q1.check({"MyToolNode": Stalled})
    assert "✔ q1 passed" in capsys.readouterr().out


# -- lab 03 ---------------------------------------------------------------------------------------------
def _unavailable(request, text=None):
    name = request.tool_call["name"]
    return ToolMessage(
        text or f"{name} is unavailable, try again later.",
        name=name,
        tool_call_id=request.tool_call["id"],
        status="error",
    )


def retry_once_policy(tools):
    def retry_once(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def aretry_once(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return ToolNode(tools, wrap_tool_call=retry_once, awrap_tool_call=aretry_once)


class RetryPolicy:
    """A class with both wrappers as methods and a loop of attempts; other wording."""

    attempts = 2

    def wrap(self, request, execute):
        for _attempt in range(self.attempts):
            try:
                return execute(request)
            except ConnectionError as exc:
                last = exc
        return _unavailable(request, f"Sorry: {request.tool_call['name']} is unavailable ({last}).")

    async def awrap(self, request, execute):
        for _attempt in range(self.attempts):
            try:
                return await execute(request)
            except ConnectionError as exc:
                last = exc
        return _unavailable(request, f"Sorry: {request.tool_call['name']} is unavailable ({last}).")


def class_based(tools):
    policy = RetryPolicy()
    return ToolNode(tools, wrap_tool_call=policy.wrap, awrap_tool_call=policy.awrap)


def explicit_default(tools):
    """The default handler named explicitly, and the async wrapper delegating to a shared helper."""
    from langgraph.prebuilt.tool_node import _default_handle_tool_errors

    def decide(request, first_error, retry):
        try:
            return retry()
        except ConnectionError:
            return _unavailable(request)

    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError as exc:
            return decide(request, exc, lambda: execute(request))

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return ToolNode(
        tools, handle_tool_errors=_default_handle_tool_errors, wrap_tool_call=wrap, awrap_tool_call=awrap
    )


# -- wrong --------------------------------------------------------------------------------------------
def hard_coded_message(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return ToolMessage(
                    "lookup_traffic is unavailable", tool_call_id=request.tool_call["id"], status="error"
                )

    async def awrap(request, execute):
        return wrap(request, lambda r: None) if False else await _aw(request, execute)

    async def _aw(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return ToolMessage(
                    "lookup_traffic is unavailable", tool_call_id=request.tool_call["id"], status="error"
                )

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def retries_everything(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except Exception:
            try:
                return execute(request)
            except ConnectionError:
                return _unavailable(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except Exception:
            try:
                return await execute(request)
            except ConnectionError:
                return _unavailable(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def retry_until_it_works(tools):
    def wrap(request, execute):
        while True:
            try:
                return execute(request)
            except ConnectionError:
                continue

    async def awrap(request, execute):
        while True:
            try:
                return await execute(request)
            except ConnectionError:
                continue

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def with_true(tools):
    node = retry_once_policy(tools)
    return ToolNode(
        tools,
        handle_tool_errors=True,
        wrap_tool_call=node._wrap_tool_call,
        awrap_tool_call=node._awrap_tool_call,
    )


def async_only(tools):
    return ToolNode(tools, awrap_tool_call=retry_once_policy(tools)._awrap_tool_call)


def sync_only(tools):
    return ToolNode(tools, wrap_tool_call=retry_once_policy(tools)._wrap_tool_call)


def exception_tuple(tools):
    return ToolNode(tools, handle_tool_errors=(ConnectionError,))


def handler_for_everything(tools):
    def retry(request, execute):
        return execute(request)

    return ToolNode(tools, handle_tool_errors=lambda e: f"failed: {e}", wrap_tool_call=retry)


def _retry_once_with(give_up):
    """Both wrappers retrying once; `give_up(request)` answers the second ConnectionError."""

    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            try:
                return execute(request)
            except ConnectionError:
                return give_up(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            try:
                return await execute(request)
            except ConnectionError:
                return give_up(request)

    return wrap, awrap


def other_wordings(tools):  # the attacker's correct wordings, one per tool
    def give_up(request):
        name = request.tool_call["name"]
        text = f"Service {name} unavailable (connection failed twice)."
        if name == "lookup_ferries":
            text = f"{name} is currently unavailable, try again later."
        return _unavailable(request, text)

    wrap, awrap = _retry_once_with(give_up)
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def every_service_named(tools):  # the attacker's substring trick
    wrap, awrap = _retry_once_with(
        lambda request: _unavailable(
            request,
            "lookup_traffic is unavailable / lookup_ferries is unavailable / lookup_museums is unavailable",
        )
    )
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def wrong_tool_call_id(tools):
    wrap, awrap = _retry_once_with(
        lambda request: ToolMessage(
            f"{request.tool_call['name']} is unavailable", tool_call_id="unavailable", status="error"
        )
    )
    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def retry_then_reraise(tools):
    def wrap(request, execute):
        try:
            return execute(request)
        except ConnectionError:
            return execute(request)

    async def awrap(request, execute):
        try:
            return await execute(request)
        except ConnectionError:
            return await execute(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap)


def never_executes_services(tools):
    def wrap(request, execute):
        name = request.tool_call["name"]
        if name in ("lookup_traffic", "lookup_ferries", "lookup_museums"):
            return ToolMessage(f"{name} is unavailable", tool_call_id=request.tool_call["id"], status="error")
        try:
            return execute(request)
        except ConnectionError:
            return execute(request)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=wrap)


def async_as_wrap_tool_call(tools):
    awrap = retry_once_policy(tools)._awrap_tool_call
    return ToolNode(tools, wrap_tool_call=awrap, awrap_tool_call=awrap)


def narrow_tuple_with_interceptor(tools):
    from langgraph.prebuilt.tool_node import ToolInvocationError

    node = retry_once_policy(tools)
    return ToolNode(
        tools,
        handle_tool_errors=(ToolInvocationError,),
        wrap_tool_call=node._wrap_tool_call,
        awrap_tool_call=node._awrap_tool_call,
    )


def bare_except_forever(tools):
    def wrap(request, execute):
        while True:
            try:
                return execute(request)
            except:  # noqa: E722 - the beginner's loop under test
                pass

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=retry_once_policy(tools)._awrap_tool_call)


def no_return(tools):
    ToolNode(tools)


def plain(tools):
    return ToolNode(tools)


def build_node_raises(tools):
    return ToolNode(tools, handle_tool_errors=handle)  # noqa: F821 - the learner's NameError


RELEASE = threading.Event()


def build_node_hangs(tools):
    RELEASE.wait()


def test_lab03_accepts_correct_alternatives_and_names_each_wrong_answer(monkeypatch):
    # the check's own limit is 10 s; 1 s here made a slow case read as a hang when three suites shared
    # 2 cores, so 2.5 s (only the hanging answers wait for it)
    monkeypatch.setattr(core, "LIMIT", 2.5)
    answers = {
        "two wrappers": retry_once_policy,
        "the solution": solution_namespace("03")["build_node"],
        "a class, a loop of two attempts, other wording": class_based,
        "the default handler named": explicit_default,
        "hard-coded outage message": hard_coded_message,
        "retries every error": retries_everything,
        "retry until it works": retry_until_it_works,
        "handle_tool_errors=True": with_true,
        "awrap_tool_call only": async_only,
        "an exception tuple": exception_tuple,
        "a handler for everything": handler_for_everything,
        "no interceptor": plain,
        "no return": no_return,
        "build_node raises": build_node_raises,
        "build_node hangs": build_node_hangs,
        "wrong signature": lambda: ToolNode([]),
        "other wordings of unavailable": other_wordings,
        "every service named": every_service_named,
        "a wrong tool_call_id": wrong_tool_call_id,
        "retry once, then re-raise": retry_then_reraise,
        "never calls execute for the services": never_executes_services,
        "an async def as wrap_tool_call": async_as_wrap_tool_call,
        "(ToolInvocationError,) and an interceptor": narrow_tuple_with_interceptor,
    }
    assert_verdicts(
        verdicts(lab03.check_policy, answers),
        {
            "two wrappers": (),
            "the solution": (),
            "a class, a loop of two attempts, other wording": (),
            "the default handler named": (),
            "hard-coded outage message": ("not the tool that failed", "request.tool_call['name']"),
            "retries every error": ("lookup_hotel ran 2 times", "catch only `ConnectionError`"),
            "retry until it works": (
                "a hang: no answer within 2.5 s",
                "a retry loop with no limit",
                "the course's tool then ended the loop",
                "not tried",
            ),
            "other wordings of unavailable": (),
            "every service named": ("which did not fail here", "not the tool that failed"),
            "a wrong tool_call_id": ("tool_call_id='unavailable'", "request.tool_call['id']"),
            "retry once, then re-raise": ("re-raised the second ConnectionError",),
            "never calls execute for the services": ("never ran: call `execute(request)`",),
            "an async def as wrap_tool_call": ("must be a plain `def`",),
            "(ToolInvocationError,) and an interceptor": ("answers EVERY exception that escapes it",),
            "handle_tool_errors=True": (
                "the retry never saw an exception",
                "turns every exception into a message",
            ),
            "awrap_tool_call only": ("skipped by sync invoke",),
            "an exception tuple": ("switches off the default answer to argument errors",),
            "a handler for everything": ("turns every exception into a message",),
            "no interceptor": ("ToolNode has no retry of its own",),
            "no return": (
                "None means `build_node` has no `return`",
                "build_node must return a ToolNode first",
            ),
            "build_node raises": ("your code raised NameError", "build_node_raises"),
            "build_node hangs": ("did not return within 2.5 s",),
            "wrong signature": ("cannot be called the way the exercise calls it",),
        },
    )
    RELEASE.set()  # free the thread the hanging build_node left behind


def test_lab03_a_bare_except_retry_loop_is_really_stopped(monkeypatch):
    """It caught even `CheckGaveUp` and went on burning a core while the message said it had ended."""
    monkeypatch.setattr(core, "LIMIT", 1.0)
    rejected(lab03.q1, {"build_node": bare_except_forever}, "a hang", "bare `except:`", "then ended the loop")
    start = time.process_time()
    time.sleep(0.5)
    assert time.process_time() - start < 0.2  # the loop is held still, not spinning


# -- starters run: they fail only in exercise and check cells; the course's checks grade them ------------
FORGET = """
for _name in [n for n in globals() if not n.startswith("_")
              and n not in ("In", "Out", "get_ipython", "exit", "quit")]:
    del globals()[_name]
"""  # a fresh namespace without `%reset -f`'s half second


def test_starters_fail_only_in_their_exercise_and_check_cells_and_grade_not_yet():
    """One kernel runs all six starters (each lab's names deleted before the next), each followed by
    the course's own grading cells, as `report` appends them."""
    from nbclient import NotebookClient

    combined = nbformat.v4.new_notebook()
    spans = {}
    for number, stem in NAMES.items():
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
        graders = labs_build.grading_notebook(nbformat.v4.new_notebook(), number).cells
        combined.cells += graders
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
            if cell.cell_type != "code" or cell.metadata.get("grading"):
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
        results = labs_build.grade(nbformat.v4.new_notebook(cells=combined.cells[first:last]), stem)
        assert results and {r.status for r in results} == {"not yet"}, results


def test_report_grades_with_the_course_checks_survives_a_hang_and_writes_json_and_csv(
    tmp_path, monkeypatch, capfd
):
    """A learner's lab 01: q1 solved but its check wrapped in try/except (it would print 'passed'
    anyway), q2's check cell deleted, a cell of their own that hangs, and a check object they
    patched to pass. The report runs the course's checks in one kernel."""
    # Only the hanging cell gets a short limit: the others keep theirs, which must cover a fresh
    # kernel's imports on a loaded machine (3 s did not, at a load average of 9; nor did 10 s on a
    # fresh clone under Python 3.12, whose first kernels compile LangChain's bytecode).
    hang = "import time\ntime.sleep(600)"
    course_timeout = labs_build.cell_timeout
    monkeypatch.setattr(
        labs_build, "cell_timeout", lambda cell: 3 if cell.source == hang else course_timeout(cell)
    )
    solution = nbformat.read(SOLUTIONS / f"{NAMES['01']}.ipynb", as_version=4)
    cells = []
    for cell in solution.cells:
        if cell.cell_type == "code" and "q2.check(" in cell.source:
            continue  # a deleted check cell
        if cell.cell_type == "code" and "async def trip_report" in cell.source:
            cell.source = "async def trip_report(countries, capital, weather, sight):\n    return []\n"
        if cell.cell_type == "code" and "q1.check(" in cell.source:
            cell.source = "try:\n    q1.check()\nexcept Exception:\n    print('passed')"
        cells.append(cell)
    cells.append(nbformat.v4.new_code_cell(hang))
    cells.append(nbformat.v4.new_code_cell("q2.checker = lambda *a: 'ok'"))
    nb = nbformat.v4.new_notebook(cells=cells, metadata=solution.metadata)
    learner = tmp_path / "ana" / f"{NAMES['01']}.ipynb"
    learner.parent.mkdir()
    nbformat.write(nb, learner)
    (tmp_path / "notes.ipynb").write_text("{}", encoding="utf-8")  # not a lab: ignored

    code = labs_cli.main(
        ["report", str(tmp_path), "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")]
    )
    out = capfd.readouterr()
    assert code == 0
    rows = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [(r["exercise"], r["status"]) for r in rows["results"]] == [("q1", "passed"), ("q2", "not yet")]
    assert rows["exercises"] == 2 and rows["passed"] == 1
    assert "1 of 2 exercises passed." in out.out and "WARNING" not in out.out + out.err
    assert (tmp_path / "r.csv").read_text(encoding="utf-8").splitlines()[
        0
    ] == "notebook,exercise,status,detail"


def test_grade_and_table_count_only_real_exercises_and_cut_at_a_word():
    def graded(key, record=None, error=None):
        cell = nbformat.v4.new_code_cell("...")
        cell.metadata["grading"] = key
        cell.outputs = []
        if record:
            cell.outputs.append(
                nbformat.v4.new_output(
                    "stream", name="stdout", text=labs_build.GRADE_MARK + json.dumps(record)
                )
            )
        if error:
            cell.outputs.append(
                nbformat.v4.new_output("error", ename=error[0], evalue=error[1], traceback=[])
            )
        return cell

    nb = nbformat.v4.new_notebook(
        cells=[
            graded("q1", {"exercise": "q1", "status": "passed", "detail": ""}),
            graded("q2", {"exercise": "q2", "status": "not yet", "detail": "word " * 40}),
            graded("q3", error=("CellTimeout", "the cell did not finish in time")),
        ]
    )
    results = labs_build.grade(nb, "lab.ipynb")
    assert [(r.exercise, r.status) for r in results] == [("q1", "passed"), ("q2", "not yet"), ("q3", "error")]
    assert "took longer than" in results[2].detail
    results.append(labs_build.Result("broken.ipynb", "-", "error", "JSONDecodeError: not a notebook"))
    text = labs_build.table(results)
    assert "1 of 3 exercises passed. 1 notebook(s) could not be graded" in text
    assert "word word …" in text and "wor …" not in text


# -- reset and restore ------------------------------------------------------------------------------------
@pytest.fixture
def labs_dir(tmp_path, monkeypatch):
    labs = tmp_path / "labs"
    labs.mkdir()
    monkeypatch.setattr(labs_build, "LABS", labs)
    monkeypatch.setattr(labs_build, "BACKUPS", labs / "backups")
    monkeypatch.setattr(labs_cli, "LABS", labs)
    return labs


def test_two_resets_in_one_second_keep_two_backups_and_restore_brings_either_back(labs_dir, capsys):
    mine = labs_dir / f"{NAMES['01']}.ipynb"
    same_second = __import__("datetime").datetime(2026, 11, 30, 15, 20, 0)
    mine.write_text("my first work", encoding="utf-8")
    _, first = labs_build.reset("1", now=same_second)
    mine.write_text("my second work", encoding="utf-8")
    _, second = labs_build.reset("01", now=same_second)
    assert first != second and first.parent == second.parent == labs_dir / "backups"
    assert not any(part.startswith(".") for part in first.relative_to(labs_dir).parts)
    assert first.read_text(encoding="utf-8") == "my first work"
    assert mine.read_text(encoding="utf-8") == labs_build.starter_text(NAMES["01"])
    assert labs_build.reset("01") == (mine, None)  # unchanged: nothing to back up

    path, source, saved = labs_build.restore("01")  # the newest; a pristine starter is not backed up
    assert source == second and mine.read_text(encoding="utf-8") == "my second work" and saved is None
    path, source, saved = labs_build.restore("01", first.name)  # a named one; the replaced file kept
    assert (
        mine.read_text(encoding="utf-8") == "my first work"
        and saved.read_text(encoding="utf-8") == "my second work"
    )
    with pytest.raises(SystemExit, match="No backup 'nope.ipynb'"):
        labs_build.restore("01", "nope.ipynb")
    with pytest.raises(SystemExit, match="the labs are 01, 02, 03, 05, 06, 08"):
        labs_build.reset("04")

    assert labs_cli.main(["reset", "01"]) == 0
    out = capsys.readouterr().out
    assert "your version saved as" in out and "close its tab" in out and "restore NN" in out


def test_backups_are_ignored_by_git_and_listed_in_the_readme():
    import subprocess

    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "labs/backups/01_make_it_concurrent.x.ipynb"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0
    readme = (LABS / "README.md").read_text(encoding="utf-8")
    assert "labs/backups/" in readme and "python -m helpers.labs restore" in readme and "--json" in readme


# -- lab 01: messages that name the learner's real mistake ------------------------------------------------
async def as_completed_zipped(calls, tools_by_name):  # completion order, zipped with the calls' ids
    coros = [tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls]
    results = [await next_done for next_done in asyncio.as_completed(coros)]
    return list(zip([c["id"] for c in calls], results))


async def as_completed_zipped_messages(calls, tools_by_name):  # the same with ainvoke(call)
    coros = [tools_by_name[c["name"]].ainvoke(c) for c in calls]
    results = [await next_done for next_done in asyncio.as_completed(coros)]
    return list(zip([c["id"] for c in calls], results))


def test_lab01_q1_as_completed_zipped_with_the_calls_says_completion_order_and_wrong_ids():
    results = verdicts(
        lab01.check_run_calls, {"strings": as_completed_zipped, "messages": as_completed_zipped_messages}
    )
    for message in results.values():
        first = message.split("other calls")[0]  # the notebook's batch: distinct delays per city
        for phrase in (
            "not yet",
            "matched to the wrong call ids",
            "came back in completion order",
            "`asyncio.as_completed` yields in completion order",
            "“3. Results in argument order, completion in another”",
        ):
            assert phrase in first, f"{phrase!r} missing from:\n{message}"
        assert "each call runs its own tool" not in message


async def lowered_country(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country.lower())
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        return f"{country}: {forecast}; {landmark}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


async def uppered_city(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city.upper()), sight(city))
        return f"{country}: {forecast}; {landmark}"

    return list(await asyncio.gather(*(one(c) for c in countries)))


def test_lab01_q2_a_changed_name_is_named_with_its_argument():
    results = verdicts(lab01.check_trip_report, {"country": lowered_country, "city": uppered_city})
    country = results["country"]
    for phrase in (
        "not yet",
        "called with a country name the course did not give",
        "capital('france') for 'France'",
        "“4. Dependent calls stay sequential”",
    ):
        assert phrase in country, f"{phrase!r} missing from:\n{country}"
    # the false messages this answer used to get: it neither skipped the capital nor never called it
    assert "a city lookup ran with the country" not in country
    assert "`capital(country)` never ran" not in country
    city = results["city"]
    for phrase in ("not yet", "called with a changed city", "weather('PARIS') for 'Paris'"):
        assert phrase in city, f"{phrase!r} missing from:\n{city}"
    assert "a city lookup ran with the country" not in city


def test_lab01_a_hang_on_the_first_batch_is_reported_once_and_the_second_not_tried(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 0.5)
    started = []

    async def hanging_calls(calls, tools_by_name):
        started.append(len(calls))
        await asyncio.Event().wait()

    async def hanging_trip(countries, capital, weather, sight):
        started.append(len(countries))
        await asyncio.Event().wait()

    for exercise, name, fn in (
        (lab01.q1, "run_calls", hanging_calls),
        (lab01.q2, "trip_report", hanging_trip),
    ):
        started.clear()
        message = rejected(exercise, {name: fn}, "did not return within 0.5 s", "not tried", "hung first")
        assert started == [len(lab01.CALLS) if name == "run_calls" else len(lab01.COUNTRIES)], started
        assert message.count("did not return within") == 1, message
        assert "The check cancelled it." in message  # the kernel is usable: nothing left running


async def await_in_for_loop(calls, tools_by_name):
    answers = []
    for call in calls:
        answers.append((call["id"], await tools_by_name[call["name"]].ainvoke(call["args"])))
    return answers


async def create_task_then_await_each(calls, tools_by_name):
    answers = []
    for call in calls:
        task = asyncio.create_task(tools_by_name[call["name"]].ainvoke(call["args"]))
        answers.append((call["id"], await task))  # awaited before the next task is made
    return answers


async def dict_by_id(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return {c["id"]: r for c, r in zip(calls, results)}


async def ids_from_the_shown_batch(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return list(zip(["call-0", "call-1", "call-2", "call-3", "call-4", "call-5"], results))


def asyncio_run_inside(calls, tools_by_name):
    async def main():
        return await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))

    return list(zip([c["id"] for c in calls], asyncio.run(main())))


async def gather_of_sync_invoke(calls, tools_by_name):
    jobs = (asyncio.to_thread(tools_by_name[c["name"]].invoke, c["args"]) for c in calls)
    return list(zip([c["id"] for c in calls], await asyncio.gather(*jobs)))


async def strings_without_ids(calls, tools_by_name):
    return list(await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls)))


async def tool_messages_without_ids(calls, tools_by_name):
    return list(await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c) for c in calls)))


async def str_of_tool_messages(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c) for c in calls))
    return [(c["id"], str(r)) for c, r in zip(calls, results)]


async def id_and_result_in_one_string(calls, tools_by_name):
    results = await asyncio.gather(*(tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls))
    return [f"{c['id']}: {r}" for c, r in zip(calls, results)]


async def gather_of_one_list(calls, tools_by_name):
    coros = [tools_by_name[c["name"]].ainvoke(c["args"]) for c in calls]
    try:
        results = await asyncio.gather(coros)
    finally:
        for coro in coros:
            coro.close()
    return list(zip([c["id"] for c in calls], results))


async def coroutines_never_awaited(calls, tools_by_name):
    return [(c["id"], tools_by_name[c["name"]].ainvoke(c["args"])) for c in calls]


def test_lab01_q1_more_wrong_answers_beginners_write_are_named():
    answers = {
        "await in a for loop": await_in_for_loop,
        "create_task awaited at once": create_task_then_await_each,
        "a dict by id": dict_by_id,
        "ids from the shown batch": ids_from_the_shown_batch,
        "asyncio.run inside": asyncio_run_inside,
        "gather of sync invoke": gather_of_sync_invoke,
        "strings without ids": strings_without_ids,
        "ToolMessages without ids": tool_messages_without_ids,
        "str() of ToolMessages": str_of_tool_messages,
        "id and result in one string": id_and_result_in_one_string,
        "gather of one list": gather_of_one_list,
        "coroutines never awaited": coroutines_never_awaited,
    }
    assert_verdicts(
        verdicts(lab01.check_run_calls, answers),
        {
            "await in a for loop": ("one after another", "at most 1 in flight"),
            "create_task awaited at once": ("one after another", "at most 1 in flight"),
            "a dict by id": ("a dict keyed by call id", "list of (id, result) pairs in call order"),
            "ids from the shown batch": ("with their own `call['id']`", "does not fit another batch"),
            "asyncio.run inside": (
                "asyncio.run() cannot be called from a running event loop",
                "Write `async def` and `await asyncio.gather(...)`",
            ),
            "gather of sync invoke": ("does not support sync invocation", "use `await tool.ainvoke(...)`"),
            "strings without ids": ("the results without their call ids", "pair each with its call's id"),
            "ToolMessages without ids": ("ToolMessages on their own", "pair each with its call's id"),
            "str() of ToolMessages": ("`str()` of a ToolMessage", "`.content`"),
            "id and result in one string": ("strings that start with the id", "(id, result) tuples"),
            "gather of one list": ("unhashable type: 'list'", "`asyncio.gather(*coros)`"),
            "coroutines never awaited": (
                "coroutine(s) among the results",
                "nothing runs until it is awaited",
            ),
        },
    )


def asyncio_run_trip(countries, capital, weather, sight):
    async def one(country):
        city = await capital(country)
        forecast, landmark = await asyncio.gather(weather(city), sight(city))
        return f"{country}: {forecast}; {landmark}"

    async def main():
        return await asyncio.gather(*(one(c) for c in countries))

    return list(asyncio.run(main()))


async def capital_of_the_list(countries, capital, weather, sight):  # one lookup for all countries
    city = await capital(countries)
    return [f"{c}: {await weather(city)}; {await sight(city)}" for c in countries]


def test_lab01_q2_more_wrong_answers_beginners_write_are_named():
    assert_verdicts(
        verdicts(lab01.check_trip_report, {"asyncio.run": asyncio_run_trip, "list": capital_of_the_list}),
        {
            "asyncio.run": ("cannot be called from a running event loop", "Write `async def`"),
            "list": (
                "called with a country name the course did not give",
                "capital(['France', 'England', 'Japan']) (a list, not one country's name)",
            ),
        },
    )
