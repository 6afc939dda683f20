"""The hygiene check can fail: each rule is shown rejecting a notebook that breaks it."""

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from courseware.nbtools import _dumps, check, normalize

SECTIONS = "## Review\n## Goals\n## Prerequisites and time\n## Setup"
CLOSING = "## Recap\n## Check your understanding\n## What's next"


def good():
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# T\n" + SECTIONS),
        new_code_cell("print(1)", execution_count=1,
                      outputs=[new_output("stream", name="stdout", text="1\n")]),
        new_code_cell("1/0", execution_count=2, metadata={"tags": ["raises-exception"]},
                      outputs=[new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                          traceback=[])]),
        new_markdown_cell(CLOSING),
    ]
    return normalize(nb)


def test_a_good_notebook_passes_and_normalising_is_idempotent():
    nb = good()
    assert check(nb, _dumps(nb)) == []
    assert _dumps(normalize(nb)) == _dumps(nb)


def test_out_of_order_counts_fail():
    nb = good()
    nb.cells[1].execution_count = 3
    assert any("execution counts" in p for p in check(nb))


def test_unexecuted_cell_fails():
    nb = good()
    nb.cells[1].execution_count = None
    assert any("execution counts" in p for p in check(nb))


def test_missing_or_misordered_sections_fail():
    nb = good()
    nb.cells[0].source = "# T\n## Goals\n## Review\n## Prerequisites\n## Setup"
    assert any("out of order" in p for p in check(nb))
    nb.cells[-1].source = "## Recap"
    assert any("Check your understanding" in p for p in check(nb))


def test_error_and_tag_must_agree():
    nb = good()
    nb.cells[2].metadata = {}
    assert any("not tagged raises-exception" in p for p in check(nb))
    nb = good()
    nb.cells[1].metadata = {"tags": ["raises-exception"]}
    assert any("raised nothing" in p for p in check(nb))


def test_stderr_svg_and_pip_fail():
    nb = good()
    nb.cells[1].outputs.append(new_output("stream", name="stderr", text="UserWarning: x"))
    nb.cells[1].outputs.append(new_output("display_data", data={"image/svg+xml": "<svg/>"}))
    nb.cells[1].source = "%pip install x"
    problems = " ".join(check(nb))
    assert "stderr" in problems and "SVG" in problems and "installs packages" in problems


def test_unnormalised_file_fails():
    nb = good()
    raw = _dumps(nb).replace('"language_info"', '"widgets": {}, "language_info"')
    assert any("not normalised" in p for p in check(nbformat.reads(raw, as_version=4), raw))


def test_tracebacks_lose_machine_specific_paths():
    import os
    import sysconfig

    from courseware.nbtools import ROOT

    nb = good()
    paths = sysconfig.get_paths()
    home = os.path.expanduser("~")
    stdlib = paths["stdlib"]
    shown_stdlib = "~" + stdlib[len(home):] if stdlib.startswith(home + "/") else stdlib
    nb.cells[2].outputs[0].traceback = [
        f"File {paths['purelib']}/langgraph/x.py:1",
        f"File {ROOT}/helpers/tools.py:2",
        f"File \x1b[0;32m{shown_stdlib}/asyncio/base_events.py:653\x1b[0m, in run_until_complete",
        "File /home/ann/course/helpers/tools.py:3, C:\\Users\\ann\\x.py, /tmp/tmpab12/cell.py",
    ]
    lines = normalize(nb).cells[2].outputs[0].traceback
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert lines == [
        "File site-packages/langgraph/x.py:1",
        "File helpers/tools.py:2",
        f"File \x1b[0;32m{version}/asyncio/base_events.py:653\x1b[0m, in run_until_complete",
        "File .../tools.py:3, .../x.py, .../cell.py",
    ]
    assert check(normalize(nb)) == []


@pytest.mark.parametrize("shown", ["imported from /home/ann/toolnode-lab/helpers", "~/.pyenv/x.py",
                                   "C:\\Users\\ann\\lab", "/Users/bob/lab/x.py", "/root/lab",
                                   "/tmp/tmpq1w2/x.json"])
def test_a_machine_path_in_an_output_fails(shown):
    nb = good()
    nb.cells[1].outputs[0].text = f"{shown}\n"
    assert any("machine path" in p for p in check(nb)), shown


def test_a_path_the_code_itself_writes_is_content_not_a_machine_path():
    nb = good()
    nb.cells[1].source = 'delete_file.invoke({"path": "/tmp/old.log"})'
    nb.cells[1].outputs[0].text = "deleted /tmp/old.log\n"
    assert check(nb) == []


def test_urls_are_not_machine_paths():
    nb = good()
    nb.cells[1].outputs[0].text = "POST http://127.0.0.1:8000/v1/chat/completions and GET /v1/models\n"
    assert check(nb) == []


def test_metadata_is_what_jupyterlab_writes_for_an_untouched_notebook():
    nb = good()
    info = nb.metadata.language_info
    assert info.name == "python" and info.pygments_lexer == "ipython3" and info.version
    assert info.codemirror_mode == {"name": "ipython", "version": 3}
    assert nb.metadata.kernelspec.name == "python3"


def test_the_kernel_version_is_kept_and_may_differ_between_machines():
    nb = good()
    nb.metadata.language_info.version = "3.11.4"
    assert normalize(nb).metadata.language_info.version == "3.11.4"
    raw = _dumps(nb).replace('"version": "3.11.4"', '"version": "3.12.9"')
    assert check(nbformat.reads(raw, as_version=4), raw) == []


def test_consecutive_streams_of_one_name_are_merged():
    nb = good()
    nb.cells[1].outputs = [new_output("stream", name="stdout", text="a\n"),
                           new_output("stream", name="stdout", text="b\n"),
                           new_output("execute_result", data={"text/plain": "1"}, execution_count=1),
                           new_output("stream", name="stdout", text="c\n")]
    outputs = normalize(nb).cells[1].outputs
    assert [(o.output_type, o.get("text")) for o in outputs] == [
        ("stream", "a\nb\n"), ("execute_result", None), ("stream", "c\n")]


def test_tags_and_jupyter_metadata_are_kept_and_the_rest_dropped():
    nb = good()
    nb.cells[1].metadata = {"tags": ["answer"], "jupyter": {"outputs_hidden": True},
                            "collapsed": True, "scrolled": True, "execution": {"iopub.status.busy": "x"}}
    kept = normalize(nb).cells[1].metadata
    assert kept == {"tags": ["answer"], "jupyter": {"outputs_hidden": True}}
    assert check(normalize(nb), _dumps(normalize(nb))) == []


def test_a_cell_that_reveals_a_guess_keeps_its_answer_collapsed():
    nb = good()
    nb.cells[1].source = 'guess = predict("?")  # your prediction: 1 or 2\nreveal(guess, 1 + 1)'
    nb.cells[1].metadata = {"tags": ["x"]}
    assert normalize(nb).cells[1].metadata == {"tags": ["x"], "jupyter": {"outputs_hidden": True}}
    nb.cells[1].source = "print('reveal(guess, 2)')"  # not a reveal line
    assert "jupyter" not in normalize(nb).cells[1].metadata


def test_a_mermaid_svg_saved_by_jupyterlab_is_dropped():
    nb = good()
    nb.cells[1].outputs = [new_output("display_data", data={
        "text/vnd.mermaid": "graph TD", "text/plain": "graph TD", "image/svg+xml": "<svg>...</svg>"})]
    assert sorted(normalize(nb).cells[1].outputs[0].data) == ["text/plain", "text/vnd.mermaid"]


def test_a_long_error_output_fails_and_names_xmode_minimal():
    nb = good()
    nb.cells[2].outputs[0].traceback = [f"frame {i}" for i in range(26)]
    assert any("%xmode Minimal" in p and "26 lines" in p for p in check(nb))
    nb.cells[2].outputs[0].traceback = [f"frame {i}" for i in range(25)]
    assert check(nb) == []


# -- tests/conftest.py: what a failed test says ---------------------------------------------------
def test_a_failed_timing_test_says_it_is_timing_first():
    failure_note = _suite_conftest().failure_note

    title, text = failure_note("tests/x.py::t", "01_sequential_vs_gather", timing=True)
    assert title == "timing" and text.startswith("TIMING-DEPENDENT")
    assert "idle machine" in text and "make soak" in text and "01_sequential_vs_gather.ipynb" in text
    assert "no longer behaves" not in text


def test_a_failed_contract_test_names_its_lesson():
    failure_note = _suite_conftest().failure_note

    title, text = failure_note("tests/x.py::t", "01_sequential_vs_gather", timing=False)
    assert title == "lesson" and "no longer behaves as notebooks/01_sequential_vs_gather.ipynb" in text
    assert failure_note("tests/x.py::t", None, timing=False) is None


# -- rerun and reset ------------------------------------------------------------------------------
def test_rerun_reports_a_cell_broken_by_a_later_cell(tmp_path):
    from courseware.nbtools import rerun

    nb = new_notebook(cells=[
        new_code_cell("tools = ['weather']"),
        new_code_cell("assert tools == ['weather']"),
        new_code_cell("tools = ['sights']"),
        new_code_cell("1/0", metadata={"tags": ["raises-exception"]}),
    ])
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    problems = rerun(path)
    assert len(problems) == 1 and problems[0].startswith("cell 1 passes top to bottom but fails")
    assert "AssertionError" in problems[0]
    assert nbformat.read(path, as_version=4) == nb  # nothing written


def test_reset_lessons_backs_up_saved_lessons_and_restores_them(tmp_path):
    import subprocess

    from courseware.nbtools import reset_lessons

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "notebooks").mkdir()
    lesson = tmp_path / "notebooks" / "01_x.ipynb"
    lesson.write_text("committed")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert reset_lessons(tmp_path) == ([], None)
    lesson.write_text("saved by a learner")
    restored, backup = reset_lessons(tmp_path)
    assert restored == [lesson.relative_to(tmp_path)] and lesson.read_text() == "committed"
    assert (backup / "01_x.ipynb").read_text() == "saved by a learner"
    assert backup.parent == tmp_path / "saved-lessons"


def test_reset_lessons_outside_git_says_what_to_do(tmp_path):
    from courseware.nbtools import reset_lessons

    (tmp_path / "notebooks").mkdir()
    with pytest.raises(RuntimeError, match="needs a git checkout"):
        reset_lessons(tmp_path)


def _suite_conftest():
    """tests/conftest.py as a module of its own (`import conftest` may find labs/conftest.py first)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("suite_conftest", Path(__file__).with_name("conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Item:
    def __init__(self, nodeid, lesson):
        self.nodeid, self.lesson = nodeid, lesson

    def get_closest_marker(self, name):
        return self.lesson


def test_a_contract_test_without_its_lesson_marker_is_refused():
    conftest = _suite_conftest()
    items = [_Item("tests/contracts/test_05_x.py::test_marked", object()),
             _Item("tests/contracts/test_05_x.py::test_forgot", None),
             _Item("tests/test_course.py::test_y", None)]
    assert conftest.unmarked_contract_tests(items) == ["tests/contracts/test_05_x.py::test_forgot"]


def test_make_quick_keeps_the_lessons_contract_tests_and_the_cases_that_name_no_other_notebook():
    keep = _suite_conftest().keep_for_lessons
    lesson = ["03_builtin_toolnode"]
    assert keep("tests/contracts/test_19_interview.py::test_z", "03_builtin_toolnode", lesson)
    assert not keep("tests/contracts/test_03_x.py::test_z", "05_return_types", lesson)
    assert keep("tests/test_course.py::test_tracks_name_real_lessons", None, lesson)
    assert keep("tests/test_course.py::test_t[03_builtin_toolnode]", None, lesson)
    assert not keep("tests/test_course.py::test_t[05_return_types]", None, lesson)
