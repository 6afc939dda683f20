"""Labs: starters are generated from solutions; the shared check machinery (a time limit on every
path, learner and library exceptions named with the learner's line, every case listed, bounded
output); every `look at` names a real heading; `report` grades with the course's own checks; reset
and restore keep visible, distinct backups. Each lab's own checks are tested in tests/test_lab_NN.py
and tests/test_labs_more.py.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import json
import threading
import time
from pathlib import Path

import nbformat
import pytest
from lab_checks import rejected
from langchain_core.tools import StructuredTool

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
    lab13,
    run_async,
    run_learner,
    solution_namespace,
    solution_regions,
    solution_text,
)
from helpers.labs import __main__ as labs_cli
from helpers.labs import build as labs_build

MODULES = {"01": lab01, "02": lab02, "03": lab03, "05": lab05, "06": lab06, "08": lab08, "13": lab13}
HERE = [
    n
    for n in NAMES
    if (SOLUTIONS / f"{NAMES[n]}.ipynb").exists() or (ROOT / "helpers" / "labs" / f"lab{n}.py").exists()
]
"""The labs this copy has (a lab still being written has its module or its solution first)."""


def module(number: str):
    return importlib.import_module(f"helpers.labs.lab{number}")


# -- the pair: starter generated from solution -----------------------------------------------------------
@pytest.mark.parametrize("stem", [NAMES[n] for n in HERE])
def test_committed_starter_is_generated_from_its_solution(stem):
    committed = (LABS / f"{stem}.ipynb").read_text(encoding="utf-8")
    assert committed == labs_build.starter_text(stem), (
        f"labs/{stem}.ipynb differs from what labs/solutions/{stem}.ipynb generates: run `make labs-build` "
        "(never edit a starter by hand)."
    )


@pytest.mark.parametrize("number", HERE)
def test_every_exercise_has_a_region_a_check_a_hint_cell_and_hints(number):
    nb = nbformat.read(SOLUTIONS / f"{NAMES[number]}.ipynb", as_version=4)
    keys = {key for cell in nb.cells for key, _, _ in solution_regions(cell.source)}
    checked = {key for cell in nb.cells for key in labs_build.CHECK_CALL.findall(cell.source)}
    assert keys and keys == checked == set(labs_build.exercises(number)), (keys, checked)
    for key in keys:
        exercise = getattr(module(number), key)
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

    calls = [
        (node.lineno, notebook, heading)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "section"
        for notebook in values(node.args[0])
        for heading in values(node.args[1])
    ]
    # a predict-and-check lab: `PredictionLab(number, lesson)` and `@lab.question(..., heading=...,
    # lesson=...)`, whose check names `section(lesson, heading)` for each question
    lessons = [
        values(node.args[1])[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "PredictionLab"
        and len(node.args) > 1
    ]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "question" and lessons):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        if "heading" in keywords:
            notebooks = values(keywords["lesson"]) if "lesson" in keywords else lessons[:1]
            calls += [(node.lineno, nb, h) for nb in notebooks for h in values(keywords["heading"])]
    return calls


@pytest.mark.parametrize("number", HERE)
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
    for number in [n for n in HERE if (LABS / f"{NAMES[n]}.ipynb").exists()]:
        stem = NAMES[number]
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
    assert "error" not in {r["status"] for r in rows["results"]}, rows["results"]
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
    with pytest.raises(SystemExit, match="the labs are 01, 02, 03, 04, 05, 06, 07, 08"):
        labs_build.reset("99")

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


def test_a_solution_banner_without_its_tag_never_reaches_a_starter():
    import nbformat

    from helpers.labs.build import SOLUTION_BANNER, starter_notebook

    banner = nbformat.v4.new_markdown_cell(f"> {SOLUTION_BANNER} Learners work in the starter")
    solution = nbformat.v4.new_notebook(cells=[banner])
    with pytest.raises(ValueError, match="tag it `solution-only`"):
        starter_notebook(solution)
    solution.cells[0].metadata["tags"] = ["solution-only"]
    assert starter_notebook(solution).cells == []


@pytest.mark.parametrize("stem", ["01_make_it_concurrent", "17_predict_the_agent_loop"])
def test_a_starter_run_in_a_real_kernel_gets_its_checks_verdicts_not_a_tampering_refusal(stem):
    """In a kernel the lab's own cells (`%xmode Minimal`, the imports, the starters) reach the check
    through IPython's history, magics transformed: none of them may read as reaching into the check.
    nbval cannot see this (the starter's check cells are tagged to raise), so the kernel runs it here."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(LABS / f"{stem}.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(LABS)}}).execute()
    verdicts = [o for cell in nb.cells if cell.cell_type == "code" and ".check(" in cell.source
                for o in cell.outputs if o.output_type == "error"]
    assert verdicts, "the starter's checks raised nothing"
    for error in verdicts:
        assert error.ename != "CheckTampered", error.evalue
        assert "not yet" in error.evalue, error.evalue
