"""Checks that hold against the learner's own kernel: tampering with what a check is made of gets a
verdict naming it; code that reads a check's internals is refused; every exception from learner code
(SystemExit, GeneratorExit, KeyboardInterrupt, any BaseException) ends in a verdict; `make labs`
grades with a pristine copy of the checks; only plain values are compared; limits scale with the
work drawn; and every lab's solution and starter still behave."""

from __future__ import annotations

import importlib
import json
import random
import re
import time
import types

import nbformat
import pytest
from lab_checks import accepted, rejected

import helpers.labs as core
from helpers.labs import (
    LABS,
    NAMES,
    ROOT,
    SOLUTIONS,
    CheckFailed,
    CheckStopped,
    CheckTampered,
    Exercise,
    guard,
    lab01,
    lab05,
    plain,
    plain_problem,
    rng,
    run_learner,
    scaled_limit,
    solution_namespace,
)
from helpers.labs import __main__ as labs_cli
from helpers.labs import build as labs_build

WRITTEN = [n for n in NAMES if (SOLUTIONS / f"{NAMES[n]}.ipynb").exists()]


@pytest.fixture
def enforced():
    with guard.enforced():
        yield


def wrong_trip(countries, capital, weather, sight):
    return []


# -- 1. tampering from the learner's kernel -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("patch", "named"),
    [
        (lambda mp: mp.setattr(core.Cases, "result", lambda self, summary: summary), "Cases.result"),
        (lambda mp: mp.setattr(lab01, "Cases", type("Cases", (), {})), "lab01.Cases"),
        (lambda mp: mp.setattr(lab01, "TOOLS", []), "lab01.TOOLS"),
        (lambda mp: mp.setattr(core, "shorten", lambda text, width=0: ""), "helpers.labs.shorten"),
        (
            lambda mp: mp.setattr(core.Exercise, "_judge", lambda self, fields, values: "ok"),
            "Exercise._judge",
        ),
        (lambda mp: mp.setattr(random.Random, "choice", lambda self, seq: seq[0]), "random.Random.choice"),
        (lambda mp: mp.setattr(random, "randint", lambda a, b: a), "random.randint"),
        (lambda mp: mp.setattr(lab01, "random", types.SimpleNamespace(Random=random.Random)), "lab01.random"),
        (lambda mp: mp.setattr(time, "perf_counter", lambda: 0.0), "time.perf_counter"),
        (lambda mp: mp.setattr(lab01, "len", lambda x: 0, raising=False), "lab01.len (added)"),
    ],
    ids=[
        "Cases.result",
        "a module's class",
        "a module constant",
        "a helpers.labs function",
        "an Exercise method",
        "random.Random.choice",
        "random.randint",
        "the module's random",
        "time.perf_counter",
        "a builtin shadowed",
    ],
)
def test_a_check_whose_code_was_changed_refuses_to_judge_and_names_the_change(
    patch, named, monkeypatch, enforced
):
    """Before, each of these patches let a wrong answer pass (or changed the draws), silently."""
    patch(monkeypatch)
    message = rejected(lab01.q2, {"trip_report": wrong_trip}, "cannot judge", named, "restart the kernel")
    assert "changed what it is made of" in message


def test_a_function_whose_code_or_defaults_were_swapped_is_named(monkeypatch, enforced):
    target = next(
        v for k, v in vars(lab01).items() if k.startswith("_") and isinstance(v, types.FunctionType)
    )
    monkeypatch.setattr(target, "__code__", (lambda *a, **k: None).__code__)
    rejected(lab01.q2, {"trip_report": wrong_trip}, "cannot judge", target.__name__)


def test_a_constant_changed_in_place_is_named(monkeypatch, enforced):
    monkeypatch.setitem(lab01.CALLS[0], "name", "x") if isinstance(lab01.CALLS[0], dict) else None
    monkeypatch.setattr(lab01, "CALLS", [*lab01.CALLS[:-1]])
    rejected(lab01.q1, {"run_calls": lambda calls, tools: []}, "lab01.CALLS")


def test_replacing_an_exercises_checker_runs_the_registered_one_and_says_so(monkeypatch, enforced, capsys):
    """Before, `q2.checker = lambda *a: 'ok'` made every answer pass."""
    monkeypatch.setattr(lab01.q2, "checker", lambda *a: "all good")
    message = rejected(lab01.q2, {"trip_report": wrong_trip}, "q2.checker (replaced)", "cannot judge")
    assert "all good" not in message
    monkeypatch.setattr(lab01.q2, "names", ("nothing",))
    rejected(lab01.q2, {"trip_report": wrong_trip}, "q2.names (replaced)")


def test_the_registered_checker_runs_even_without_verification(monkeypatch):
    with guard.enforced(False):
        monkeypatch.setattr(lab01.q2, "checker", lambda *a: "all good")
        rejected(lab01.q2, {"trip_report": wrong_trip})  # the real check, not the attribute


def test_a_predict_and_check_questions_scenario_swapped_is_named(monkeypatch, enforced, capsys):
    from helpers.labs.predict import PredictionLab

    modules = [importlib.import_module(f"helpers.labs.lab{n}") for n in WRITTEN]
    found = [(m, v) for m in modules for v in vars(m).values() if isinstance(v, PredictionLab)]
    if not found:
        pytest.skip("no predict-and-check lab written yet")
    module, lab = found[0]
    key, questions = next(iter(lab.groups.items()))
    question = next(iter(questions.values()))
    monkeypatch.setattr(question, "scenario", lambda: "anything")
    exercise = getattr(module, key)
    rejected(exercise, solution_namespace(module.__name__[-2:]), "cannot judge", "scenario")


@pytest.mark.timing
def test_verification_and_scan_cost_under_50_ms_per_check(enforced, capsys):
    """What the framework adds to a check: two verifications of every module a lab 13 check is made
    of (the largest), and the scan of a kernel's history (lab 13's solution cells, each parsed once),
    in CPU time of the checking thread (all of it runs there)."""
    from helpers.labs import lab13

    cells = [c.source for c in nbformat.read(SOLUTIONS / f"{NAMES['13']}.ipynb", as_version=4).cells]
    exercise = Exercise("13", "q9", ("v",), lambda v: "fine", ("a", "b"))
    namespace = {"v": 1, "In": cells}
    exercise.check(namespace)  # the first check parses the cells and snapshots late imports
    assert guard.changes(lab13.q1) == []
    start = time.thread_time()  # the CPU this check spends: the machine's other load is not its cost
    for _ in range(5):
        exercise.check(namespace)
    assert (time.thread_time() - start) / 5 < 0.05
    assert capsys.readouterr().out.count("✔ q9 passed") == 6


def test_the_private_random_generator_ignores_patches_of_random(monkeypatch):
    monkeypatch.setattr(random.Random, "choice", lambda self, seq: seq[0])
    monkeypatch.setattr(random.Random, "random", lambda self: 0.0)
    monkeypatch.setattr(random.Random, "shuffle", lambda self, x: None)
    monkeypatch.setattr(random, "_floor", lambda x: 0, raising=False)
    draws = {rng().choice(range(100)) for _ in range(50)}
    assert len(draws) > 5
    items = list(range(20))
    rng(1).shuffle(items)
    assert items != list(range(20))
    assert rng(7).randint(1, 10**6) == rng(7).randint(1, 10**6)


@pytest.mark.parametrize("number", WRITTEN)
def test_every_solution_still_passes_with_verification_on(number, capsys, enforced):
    module = importlib.import_module(f"helpers.labs.lab{number}")
    namespace = solution_namespace(number)
    for key in labs_build.exercises(number):
        accepted(getattr(module, key), namespace, capsys)
    assert guard.changes() == [], guard.changes()


# -- 2. the course's answers are not reachable from the notebook --------------------------------------------
def history(*cells: str) -> list[str]:
    return ["%xmode Minimal\nfrom helpers.labs.lab05 import CASES, make_content_tools, q1, q2", *cells]


@pytest.mark.parametrize(
    ("cells", "phrases"),
    [
        (
            ["from helpers.labs import lab05\nSHAPES = {k: lab05.actual_shape(k) for k in CASES}"],
            ["`lab05.actual_shape` is not one of lab05's public names", "line 2"],
        ),
        (["from helpers.labs.lab05 import _contents"], ["`_contents` is not one of lab05's public names"]),
        (["import helpers.labs.lab05 as m\nm.Cases.result = lambda self, s: s"], ["m.Cases"]),
        (["q1.checker = lambda *a: 'ok'"], ["changes `q1.checker`"]),
        (["print(q1.names, q1._fields())"], ["reads `q1.names`"]),
        (["setattr(q1, 'checker', print)"], ["`setattr(...)` on `q1`"]),
        (["vars(q1)['hints'] = ()"], ["`vars(...)` on `q1`"]),
        (["f = make_content_tools()[0].func\nsecret = f.__globals__"], ["`.__globals__` reaches into"]),
        (["import importlib, helpers.labs.lab05 as m\nimportlib.reload(m)"], ["`importlib.reload`"]),
        (["import gc\nobjs = gc.get_referrers(q1)"], ["`gc.get_referrers`"]),
        (["import sys\nmod = sys.modules['helpers.labs.lab05']"], ["`sys.modules`"]),
        (["from helpers.labs.guard import changes"], ["the course's own machinery"]),
        (["import random\nrandom.random = lambda: 0.5"], ["changes `random.random`"]),
    ],
    ids=[
        "private-function",
        "private-import",
        "class-patch",
        "checker",
        "names",
        "setattr",
        "vars",
        "globals",
        "reload",
        "gc",
        "sys-modules",
        "guard",
        "random",
    ],
)
def test_code_that_reads_or_writes_check_internals_is_refused(cells, phrases):
    namespace = {**solution_namespace("05"), "In": history(*cells)}
    message = rejected(lab05.q1, namespace, "reads or changes the check's own internals", *phrases)
    assert "answers must come from your own code" in message


def test_a_predict_and_check_labs_questions_are_not_readable_from_the_notebook():
    from helpers.labs.predict import PredictionLab

    for number in WRITTEN:
        module = importlib.import_module(f"helpers.labs.lab{number}")
        exported = [
            n for n in getattr(module, "__all__", ()) if isinstance(getattr(module, n), PredictionLab)
        ]
        for name in exported:
            cells = [
                f"from helpers.labs.lab{number} import {name}\n{name}.show('q1')",
                f"answer = {name}.groups['q1']",
            ]
            found = guard.scan(cells)
            assert [f.what for f in found] == [f"your code reads `{name}.groups`, the check's own field"]


def test_a_finding_about_another_exercise_does_not_block_this_one(capsys):
    namespace = {**solution_namespace("05"), "In": history("q2.checker = lambda *a: 'ok'")}
    accepted(lab05.q1, namespace, capsys)
    rejected(lab05.q2, namespace, "changes `q2.checker`")


def test_what_the_setup_cell_imports_and_the_exercise_api_are_not_findings():
    cells = history(
        "import helpers.labs.lab05 as lab\nprint(lab.CASES, lab.q1.key)\nq1.hint(2)\nq1.solution()\n"
        "q1.check()",
        "from helpers.labs import lab05, run_learner\nlab05.q2.check()\nx = {}\nx.__class__\nvars()",
    )
    assert guard.scan(cells) == []


@pytest.mark.parametrize("number", [n for n in NAMES if (LABS / f"{NAMES[n]}.ipynb").exists()])
def test_no_lab_notebook_trips_the_scan(number):
    for path in (SOLUTIONS / f"{NAMES[number]}.ipynb", LABS / f"{NAMES[number]}.ipynb"):
        if path.exists():
            nb = nbformat.read(path, as_version=4)
            found = guard.scan(c.source for c in nb.cells if c.cell_type == "code")
            assert found == [], (path.name, found)


# -- 3. every exception from learner code ends in a verdict -------------------------------------------------
class Raises:
    """A value whose every dunder the check might call raises `exc`."""

    def __init__(self, exc):
        self.exc = exc

    def __eq__(self, other):
        raise self.exc

    __hash__ = None

    def __iter__(self):
        raise self.exc

    def __len__(self):
        raise self.exc

    def __repr__(self):
        raise self.exc

    __str__ = __repr__


class Weird(BaseException):
    pass


def reads(value):
    """A checker that reads the learner's object outside run_learner, as lab checks do."""
    return "equal" if value == [1] else "not equal"


@pytest.mark.parametrize(
    "exc",
    [SystemExit(3), GeneratorExit(), Weird("odd"), ValueError("x")],
    ids=["SystemExit", "GeneratorExit", "BaseException", "ValueError"],
)
def test_an_exception_from_an_object_the_check_reads_is_a_verdict(exc):
    exercise = Exercise("01", "q9", ("value",), reads, ("a", "b"))
    message = rejected(exercise, {"value": Raises(exc)}, f"raised {type(exc).__name__}")
    assert "__eq__" in message


@pytest.mark.parametrize(
    "exc", [SystemExit, GeneratorExit, Weird], ids=["SystemExit", "GeneratorExit", "BaseException"]
)
def test_an_exception_raised_by_learner_code_in_run_learner_is_a_verdict(exc):
    def learner():
        raise exc()

    exercise = Exercise("01", "q9", ("fn",), lambda fn: run_learner(fn), ("a", "b"))
    rejected(exercise, {"fn": learner}, f"your code raised {exc.__name__}")


def test_a_keyboard_interrupt_stops_the_check_in_one_line():
    def learner():
        raise KeyboardInterrupt

    for checker in (lambda fn: run_learner(fn), lambda fn: fn()):
        exercise = Exercise("01", "q9", ("fn",), checker, ("a", "b"))
        with pytest.raises(CheckStopped) as info:
            exercise.check({"fn": learner})
        text = str(info.value)
        assert len(text.splitlines()) == 1 and "check stopped: KeyboardInterrupt" in text, text
        assert "run the check again" in text and info.value.__traceback__ is not None
        assert info.value.__cause__ is None and info.value.__suppress_context__


def test_a_keyboard_interrupt_from_an_object_read_later_stops_the_check_in_one_line():
    exercise = Exercise("01", "q9", ("value",), reads, ("a", "b"))
    with pytest.raises(CheckStopped, match="check stopped"):
        exercise.check({"value": Raises(KeyboardInterrupt())})


def test_a_real_lab_turns_an_exit_from_the_learners_result_into_a_verdict():
    async def run_calls(calls, tools_by_name):
        return Raises(SystemExit(1))

    message = rejected(lab01.q1, {"run_calls": run_calls}, "SystemExit")
    assert "Traceback" not in message


# -- 4. make labs grades with a pristine copy ---------------------------------------------------------------
def test_report_grades_with_a_pristine_copy_and_names_cells_that_reach_in(tmp_path):
    """A lab 01 notebook: q1 solved; q2 wrong, its course `Cases.result` patched by a module of the
    learner's own (no scan reads it) so the notebook's own checks pass everything; and a cell that
    reads a private name of lab 01. The pristine copy, loaded before the notebook's first cell, is not
    the one the notebook patched: q2 is `not yet`; the reading cell makes the report name it."""
    solution = nbformat.read(SOLUTIONS / f"{NAMES['01']}.ipynb", as_version=4)
    cells = []
    for cell in solution.cells:
        if cell.cell_type == "code" and "async def trip_report" in cell.source:
            cell.source = "async def trip_report(countries, capital, weather, sight):\n    return []\n"
        cells.append(cell)
    (tmp_path / "my_shortcut.py").write_text(
        "from helpers.labs import Cases\nCases.result = lambda self, s: s\n", encoding="utf-8"
    )
    cells.append(nbformat.v4.new_code_cell("import my_shortcut"))
    cells.append(nbformat.v4.new_code_cell("q2.check()  # passes: the notebook's copy is patched"))
    learner = tmp_path / f"{NAMES['01']}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=solution.metadata), learner)
    results = labs_build.report(learner)
    assert [(r.exercise, r.status) for r in results] == [("q1", "passed"), ("q2", "not yet")], results

    cells.append(nbformat.v4.new_code_cell("from helpers.labs import lab01\nprint(lab01._sight)"))
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=solution.metadata), learner)
    results = labs_build.report(learner)
    assert {r.status for r in results} == {"not yet"}, results
    assert "reach into the check" in results[0].detail and "lab01._sight" in results[0].detail


def test_the_grading_cells_load_the_checks_first_and_never_trip_the_scan():
    nb = labs_build.grading_notebook(nbformat.v4.new_notebook(), "05")
    assert nb.cells[0].metadata["grading"] == "pristine" and "pristine_checks" in nb.cells[0].source
    assert [c.metadata["grading"] for c in nb.cells[1:]] == ["q1", "q2"]
    assert guard.scan(c.source for c in nb.cells) == []
    hashes = json.loads(re.search(r"\{.*\}", nb.cells[0].source)[0])
    assert (
        hashes["helpers/labs/__init__.py"]
        == labs_build.file_hashes(labs_build.course_files())["helpers/labs/__init__.py"]
    )


def test_a_changed_course_file_is_reported_not_written(monkeypatch):
    files = {"helpers/x.py": b"old"}
    monkeypatch.setattr(labs_build, "course_files", lambda: {"helpers/x.py": b"new", "helpers/y.py": b""})
    assert labs_build.changed_course_files(files) == ["helpers/x.py", "helpers/y.py"]


def test_pristine_checks_refuses_files_whose_hash_differs():
    namespace: dict = {}
    saved = {n: m for n, m in __import__("sys").modules.items() if n.startswith("helpers")}
    labs_build.pristine_checks("05", "0" * 16, {"helpers/labs/__init__.py": "0" * 64}, namespace)
    assert {n: m for n, m in __import__("sys").modules.items() if n.startswith("helpers")} == saved
    record = namespace["_grade_" + "0" * 16]("05", "q1", solution_namespace("05"))
    assert record["status"] == "error" and "not the file the grading recorded" in record["detail"]


# -- 5. plain values ----------------------------------------------------------------------------------------
class Name(str):
    pass


class AlwaysEqual:
    def __eq__(self, other):
        return True


@pytest.mark.parametrize(
    ("value", "kind", "phrase"),
    [
        (Name("x"), str, "only looks like a str"),
        (AlwaysEqual(), str, "an AlwaysEqual, not a str"),
        (True, int, "True (a bool), not an int"),
        (["a", Name("b")], list[str], "item 1"),
        (("a", 1), tuple[str, str], "item 1"),
        ({"k": AlwaysEqual()}, dict[str, str], "the value of 'k'"),
        ((1, 2, 3), tuple[int, int], "3 items"),
        ({Name("k"): 1}, dict, "key"),
    ],
)
def test_plain_refuses_what_only_looks_plain(value, kind, phrase):
    assert phrase in plain_problem(value, kind)
    with pytest.raises(CheckFailed, match="not yet"):
        plain(value, kind, key="q1")


def test_plain_rebuilds_from_builtins():
    value = {"a": ["x", ("y", 1)], "b": {2, 3}}
    copy = plain(value, dict)
    assert copy == value and copy is not value and copy["a"] is not value["a"]
    assert plain(["a", "b"], list[str]) == ["a", "b"] and plain(3, int) == 3 and plain(None) is None
    assert plain_problem(1.5, (int, float)) is None and plain_problem("x", None) is None


# -- 6. time limits that scale with the work drawn ----------------------------------------------------------
def test_a_limit_scales_with_the_work_drawn(monkeypatch):
    monkeypatch.setattr(core, "LIMIT", 0.2)
    assert scaled_limit(0.0) == 2.0 and scaled_limit(4.0) == 14.0
    monkeypatch.setattr(core, "LIMIT", 10.0)
    assert scaled_limit(1.0) == 10.0

    def slow(n):
        time.sleep(0.05 * n)
        return n

    assert run_learner(slow, 6, limit=scaled_limit(0.05 * 6, slack=0.1)) == 6


# -- reset on a copy without solutions ----------------------------------------------------------------------
def test_reset_without_solutions_uses_the_committed_starter_or_says_what_to_do(tmp_path, monkeypatch, capsys):
    labs = tmp_path / "labs"
    labs.mkdir()
    monkeypatch.setattr(labs_build, "LABS", labs)
    monkeypatch.setattr(labs_build, "BACKUPS", labs / "backups")
    monkeypatch.setattr(labs_cli, "LABS", labs)
    monkeypatch.setattr(labs_build, "SOLUTIONS", tmp_path / "none")
    (labs / f"{NAMES['01']}.ipynb").write_text("mine", encoding="utf-8")
    assert labs_cli.main(["reset", "01"]) == 0
    committed = (ROOT / "labs" / f"{NAMES['01']}.ipynb").read_text(encoding="utf-8")
    assert json.loads((labs / f"{NAMES['01']}.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "your version saved as" in capsys.readouterr().out and committed

    monkeypatch.setattr(labs_build, "ROOT", tmp_path)  # no git history here either
    with pytest.raises(SystemExit) as info:
        labs_cli.main(["reset", "01"])
    text = str(info.value)
    assert len(text.splitlines()) == 1 and "copy labs/01_make_it_concurrent.ipynb" in text, text
    assert (labs / f"{NAMES['01']}.ipynb").read_text(encoding="utf-8") != "mine"  # unchanged by the refusal


def test_list_names_the_labs_there_are(capsys):
    assert labs_cli.main(["list", "--numbers"]) == 0
    assert capsys.readouterr().out.split()[:2] == ["01", "02"]


def test_check_tampered_is_a_check_failed():
    assert issubclass(CheckTampered, CheckFailed) and issubclass(CheckStopped, CheckFailed)


# -- in a real kernel ----------------------------------------------------------------------------------------
def test_in_a_kernel_the_check_reads_the_cells_it_ran_even_after_in_is_cleared():
    """The setup cell; an object whose `__eq__` raises KeyboardInterrupt: the check stops with one
    line. A cell that reads a private name of lab 05 and then clears IPython's `In`, a check: refused,
    naming the line. A patch of the check's own class through `exec`: refused, naming it."""
    from nbclient import NotebookClient

    cells = [
        "%xmode Minimal\nfrom helpers.labs.lab05 import CASES, q1, q2",
        "from helpers.labs import Exercise\n"
        "class Stop:\n    def __eq__(self, other):\n        raise KeyboardInterrupt\n"
        "e = Exercise('01', 'q9', ('v',), lambda v: 'same' if v == 1 else 'other', ('a', 'b'))\n"
        "e.check({'v': Stop()})",
        "SHAPES = {}\nimport helpers.labs.lab05 as m\nsecret = m._contents\nIn.clear()",
        "q1.check()",
        "%reset_selective -f secret",
        "exec('import helpers.labs as c; c.Cases.ok = lambda *a, **k: True')",
        "q2.check({'CONTENTS': {}})",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(LABS)}}
    ).execute()
    errors = {i: o for i, c in enumerate(nb.cells) for o in c.outputs if o.output_type == "error"}
    assert errors[1].ename == "CheckStopped" and "check stopped: KeyboardInterrupt" in errors[1].evalue
    shown = "\n".join(errors[1].traceback)
    assert "Traceback" not in shown and len(errors[1].traceback) <= 2, errors[1].traceback
    assert errors[3].ename == "CheckTampered", errors[3]
    assert "secret = m._contents" in errors[3].evalue and "_contents" in errors[3].evalue
    assert errors[6].ename == "CheckTampered" and "Cases.ok" in errors[6].evalue, errors[6]
    assert "restart the kernel" in errors[6].evalue


@pytest.mark.parametrize("number", WRITTEN)
def test_make_labs_grades_every_solution_passed_with_its_pristine_copy(number, tmp_path):
    """The grading copy is not the one the notebook imports: a check that relied on identity with an
    object the notebook imported from its lab module would fail its own solution here."""
    path = tmp_path / f"{NAMES[number]}.ipynb"
    path.write_bytes((SOLUTIONS / f"{NAMES[number]}.ipynb").read_bytes())
    results = labs_build.report(path)
    assert results and {r.status for r in results} == {"passed"}, results


def test_only_the_course_tests_turn_verification_off(enforced):
    source = "guard.relax_for_tests()\nwith guard.enforced(False):\n    pass"
    cell = compile(source, "<ipython-input-3>", "exec")
    with pytest.raises(PermissionError):
        exec(cell, {"guard": guard})  # noqa: S102 - a notebook cell, played
    assert guard.enforcing()


# -- 7. hangs in what the check reads, the verification's own path, the exercise's class -------------------
class HangsWhenHashed:
    """A learner value whose `__hash__` never returns (and whose `__eq__` does not either)."""

    def __hash__(self):
        while True:
            time.sleep(0.01)

    def __eq__(self, other):
        return hash(self) == hash(other)


def hashes(value):
    """A checker that reads the learner's value on its own thread, as lab checks do (a set, a dict key)."""
    return "seen" if value in {1, 2} else "not seen"


def test_a_hang_in_what_the_check_reads_is_cut_with_a_verdict_and_the_kernel_stays_usable(
    monkeypatch, capsys
):
    """Before, a learner object whose `__hash__` (or `__eq__`, `__lt__`, `__len__`, a metaclass's
    `__name__`, a `__class__` property) never returns hung the check forever: the check read it on the
    notebook's own thread, with no time limit."""
    monkeypatch.setattr(core, "OWN_LIMIT", 0.5)
    exercise = Exercise("01", "q9", ("value",), hashes, ("a", "b"))
    start = time.monotonic()
    message = rejected(exercise, {"value": HangsWhenHashed()}, "did not return within 0.5 s", "__hash__")
    assert "while the check read what it gave" in message and time.monotonic() - start < 5
    assert "passed: not seen" in accepted(exercise, {"value": 3}, capsys)  # the same kernel: judged as ever


def test_runs_of_learner_code_inside_a_check_keep_their_own_limits(monkeypatch, capsys):
    """The check's own clock stops while learner code runs under `run_learner`: a run longer than the
    check's own limit, within its own, passes; a hang inside it is cut by its own limit."""
    monkeypatch.setattr(core, "OWN_LIMIT", 0.3)

    def slow():
        time.sleep(0.6)
        return 1

    def checker(fn):
        return "fine" if run_learner(fn, limit=3.0) == 1 and run_learner(fn, limit=3.0) == 1 else "no"

    accepted(Exercise("01", "q9", ("fn",), checker, ("a", "b")), {"fn": slow}, capsys)

    def hangs():
        threading_event().wait()

    hanging = Exercise("01", "q9", ("fn",), lambda fn: run_learner(fn, limit=0.5), ("a",))
    message = rejected(hanging, {"fn": hangs}, "did not return within 0.5 s (`hangs`)")
    assert "while the check read" not in message


def threading_event():
    import threading

    return threading.Event()


def test_the_stop_button_during_a_check_still_stops_it_in_one_line():
    """The stop button raises KeyboardInterrupt in the notebook's thread, which now waits for the check's
    own thread: one line, as before."""
    import _thread

    def learner():
        _thread.interrupt_main()
        time.sleep(2)

    exercise = Exercise("01", "q9", ("fn",), lambda fn: run_learner(fn), ("a", "b"))
    with pytest.raises(CheckStopped) as info:
        exercise.check({"fn": learner})
    assert len(str(info.value).splitlines()) == 1 and "check stopped: KeyboardInterrupt" in str(info.value)


def test_predictions_keyed_by_an_object_that_hangs_when_hashed_are_refused_at_once():
    """Before, lab 11's check hashed the learner's keys (`k not in questions`): a key whose `__hash__`
    never returns hung it. Only plain `str` keys are read now, before anything hashes them."""
    from helpers.labs import lab11

    class HashedOnceThenHangs(HangsWhenHashed):
        hashed = False

        def __hash__(self):
            if HashedOnceThenHangs.hashed:  # the dict below hashed it; the check must not
                return super().__hash__()
            HashedOnceThenHangs.hashed = True
            return 1

    steps = {HashedOnceThenHangs(): 1, **solution_namespace("11")["STEPS"]}
    start = time.monotonic()
    rejected(lab11.q1, {"STEPS": steps}, "not plain strings")
    assert time.monotonic() - start < 5


def test_replacing_the_guards_own_functions_turns_nothing_off(monkeypatch, enforced):
    """Before, `guard.changes = lambda *a: []` (behind `exec`, so no scan saw it) turned verification off
    in the kernel, then any patch passed: the check path holds the functions it was imported with."""
    monkeypatch.setattr(guard, "changes", lambda *a, **k: [])
    monkeypatch.setattr(guard, "registered", lambda exercise: None)
    monkeypatch.setattr(core, "_refuse_tampering", lambda *a, **k: None)
    monkeypatch.setattr(core.Cases, "result", lambda self, summary: summary)
    rejected(lab01.q2, {"trip_report": wrong_trip}, "cannot judge", "guard.changes", "Cases.result")


def test_a_notebook_cannot_switch_the_verification_off():
    for source in ("guard._enforce(False)", "with guard.enforced(False):\n    pass"):
        with pytest.raises(PermissionError):
            exec(compile(source, "<ipython-input-4>", "exec"), {"guard": guard})  # noqa: S102 - a cell, played


class Agreeable(Exercise):
    def _judge(self, fields, values):
        return "all good"

    def _check(self, namespace, sources):
        print(f"✔ {self.key} passed: all good")


def test_an_exercise_whose_class_was_swapped_is_named_and_its_methods_never_run(monkeypatch, enforced):
    """Before, `q2.__class__ = Sub` (a subclass whose `_judge` says yes) made a wrong answer pass."""
    monkeypatch.setattr(lab01.q2, "__class__", Agreeable)
    message = rejected(lab01.q2, {"trip_report": wrong_trip}, "q2.__class__ (replaced)", "cannot judge")
    assert "all good" not in message
    with guard.enforced(False):  # even unverified, the check path runs the registered checker
        message = rejected(lab01.q2, {"trip_report": wrong_trip})
        assert "all good" not in message


def test_an_exercises_public_checker_leads_nowhere():
    """Before, `ex = [q1][0]; ex.checker.func.__self__.groups[...]` ran a predict lab's scenarios:
    the checker is kept in the guard's registry; the attribute is an opaque stand-in."""
    import functools

    from helpers.labs import lab11

    for exercise in (lab11.q1, lab01.q1):
        assert exercise.checker is core.sealed_checker
        assert not isinstance(exercise.checker, functools.partial)
        with pytest.raises(CheckFailed, match="runs only through its `check"):
            exercise.checker({})


@pytest.mark.parametrize(
    ("cell", "phrase"),
    [
        ("ex = [q1][0]\nlab = ex.checker.func.__self__", "reads `q1.checker`"),
        ("for x in (q1, q2):\n    y = [x][0]\n    y.__class__ = int", "changes `q1.__class__`"),
        ("exec('from helpers.labs import lab11 as m; print(m._lab.groups)')", "`exec(...)` runs code"),
        ("f = eval('show')", "`eval(...)` runs code"),
        ("code = compile('1', 'x', 'eval')", "`compile(...)` runs code"),
        ("m = show.__globals__", "`.__globals__` reaches into"),
        ("lab = show.__self__", "`.__self__` reaches into"),
        ("name = 'check' + 'er'\nc = getattr(q1, name)", "with a name built at run time"),
        ("g = getattr(show, '__clo' + 'sure__')", "a dunder name built from pieces"),
        ("setattr(show, attribute, None)", "with a name built at run time"),
        ("import operator\nc = operator.attrgetter('__closure__')(show)", "`__closure__` reaches into"),
        ("print(_grade_0123456789abcdef)", "the grading's own machinery"),
    ],
    ids=[
        "alias-checker",
        "alias-class-swap",
        "exec",
        "eval",
        "compile",
        "globals",
        "self",
        "getattr-built-name",
        "dunder-built",
        "setattr-built-name",
        "attrgetter",
        "grading-names",
    ],
)
def test_the_scan_follows_aliases_and_refuses_code_it_cannot_read(cell, phrase):
    """Before, each of these read or changed a check's internals unseen (BUG 11, BUG 13): an alias of an
    imported exercise, code built as a string, a name built at run time."""
    found = guard.scan(["from helpers.labs.lab11 import q1, q2, q3, show", cell])
    assert any(phrase in f.what for f in found), found


def test_make_labs_names_a_cell_that_runs_code_the_check_cannot_read():
    """`make labs` scans each notebook's cells (helpers.labs.build.tampering): a cell that computes lab
    11's answers through `exec` is named, with its cell and line, in every exercise's grade."""
    solution = nbformat.read(SOLUTIONS / f"{NAMES['11']}.ipynb", as_version=4)
    cell = nbformat.v4.new_code_cell(
        'exec("from helpers.labs import lab11 as m\\n'
        "STEPS = {n: q.scenario() for n, q in m._lab.groups['q1'].items()}\")"
    )
    solution.cells.append(cell)
    found = labs_build.tampering(solution)
    assert found and found[-1][0] == len(solution.cells) and "`exec(...)` runs code" in found[-1][1].what
    results = [labs_build.Result("nb", key, "passed", "") for key in ("q1", "q2", "q3")]
    graded = labs_build._tampered(results, found)
    assert {r.status for r in graded} == {"not yet"}
    assert f"cell {len(solution.cells)}, line 1" in graded[0].detail


def finish_order_reversed(original):
    def invoke(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if isinstance(out, dict) and out.get("log") == ["Alpha", "beta", "zeta"]:
            out = {**out, "log": ["zeta", "beta", "Alpha"]}
        return out

    return invoke


def wrong_steps():
    steps = dict(solution_namespace("11")["STEPS"])
    steps["edge_order_by_name"] = ("zeta", "beta", "Alpha")
    return {"STEPS": steps}


def test_a_patched_library_the_scenarios_run_is_named(monkeypatch, enforced):
    """Before, `Pregel.invoke` patched in the kernel made lab 11's scenario give the learner's wrong
    answer: the library classes the scenarios and checks drive are verified too."""
    from langchain_core.tools import BaseTool
    from langgraph.pregel import Pregel

    from helpers.labs import lab11

    rejected(lab11.q1, wrong_steps(), "edge_order_by_name")  # the wrong prediction, judged
    monkeypatch.setattr(Pregel, "invoke", finish_order_reversed(Pregel.invoke))
    rejected(lab11.q1, wrong_steps(), "cannot judge", "Pregel.invoke (replaced)")
    monkeypatch.undo()
    with guard.enforced():
        monkeypatch.setattr(BaseTool.invoke, "__code__", (lambda self, *a, **k: None).__code__)
        rejected(lab01.q2, {"trip_report": wrong_trip}, "BaseTool.invoke (its code replaced)")


def test_make_labs_grading_refuses_a_library_patched_by_the_notebook(monkeypatch, capsys):
    """The pristine copy `make labs` loads before the notebook's first cell snapshots the library too:
    a notebook cell that patches `Pregel.invoke` afterwards is named in the grade."""
    import sys

    from langgraph.pregel import Pregel

    token = "1" * 16
    namespace: dict = {}
    saved = {n: m for n, m in sys.modules.items() if n.startswith("helpers")}
    labs_build.pristine_checks("11", token, labs_build.file_hashes(labs_build.course_files()), namespace)
    assert {n: m for n, m in sys.modules.items() if n.startswith("helpers")} == saved
    monkeypatch.setattr(Pregel, "invoke", finish_order_reversed(Pregel.invoke))
    record = namespace[f"_grade_{token}"]("11", "q1", wrong_steps())
    assert record["status"] == "not yet" and "Pregel.invoke" in record["detail"], record
