"""The compatibility table is generated from the record `make compat` writes: check the generator
on a small record (the matrix itself runs only under `make compat`)."""

from __future__ import annotations

from courseware.compat import ABSENT, DIFFERS, HOLDS, classify, lessons_that_differ, markdown, statuses

T1 = "tests/contracts/test_03_builtin_toolnode.py::test_default_handler"
T2 = "tests/contracts/test_03_builtin_toolnode.py::test_runtime_fix"
T3 = "tests/contracts/test_07_inside_toolnode.py::test_tool_runtime"


def entry(name, versions, results, reference=False, note=""):
    keys = ("langgraph", "langgraph-prebuilt", "langchain-core", "langchain")
    return {"name": name, "reference": reference, "note": note, "pins": [],
            "versions": dict(zip(keys, versions, strict=True)), "results": results}


OLD = entry("langgraph 0.6.11", ("0.6.11", "0.6.5", "0.3.86", "0.3.30"), {
    T1: {"lesson": "03_builtin_toolnode", "outcome": "failed", "exception": "AssertionError",
         "message": "assert 'Error: boom' == 'crash'"},
    T2: {"lesson": "03_builtin_toolnode", "outcome": "failed", "exception": "TypeError",
         "message": "TypeError: ToolNode._func() got an unexpected keyword argument 'runtime'"},
    "tests/contracts/test_07_inside_toolnode.py": {
        "outcome": "collection-error", "exception": "ImportError",
        "message": "ImportError: cannot import name 'ToolRuntime'"},
}, note="an old one")
PINNED = entry("langgraph 1.2.24", ("1.2.24", "1.1.3", "1.8.3", "1.5.2"), {
    T1: {"lesson": "03_builtin_toolnode", "outcome": "passed"},
    T2: {"lesson": "03_builtin_toolnode", "outcome": "passed"},
    T3: {"lesson": "07_inside_toolnode", "outcome": "passed"},
}, reference=True)
DATA = {"date": "2026-11-30", "commit": "abc1234", "seconds": 100.0, "cpus": 2, "entries": [OLD, PINNED]}


def test_outcomes_are_holds_differs_or_absent():
    assert classify({"outcome": "passed"}) == (HOLDS, "")
    assert classify({"outcome": "failed", "exception": "AssertionError", "message": "x"}) == (DIFFERS, "x")
    assert classify({"outcome": "failed", "exception": "ImportError", "message": "y"})[0] == ABSENT
    assert classify(None)[0] == ABSENT


def test_a_test_whose_module_cannot_import_is_absent_there():
    table = statuses(DATA)
    assert table[T3] == {"langgraph 0.6.11": (ABSENT, "ImportError: cannot import name 'ToolRuntime'"),
                         "langgraph 1.2.24": (HOLDS, "")}
    assert table[T2]["langgraph 0.6.11"][0] == ABSENT  # runtime= is an API the old release lacks
    assert table[T1]["langgraph 0.6.11"] == (DIFFERS, "assert 'Error: boom' == 'crash'")


def test_the_table_names_each_lesson_first_and_last_release_and_what_was_observed():
    text = markdown(DATA)
    assert "| langgraph 1.2.24 · core 1.8.3 (the course's pins) | 1.2.24 | 1.1.3 | 1.8.3 | 1.5.2 |" in text
    header = "| behaviour (contract test) | langgraph 0.6.11 · core 0.3.86 | langgraph 1.2.24 · core 1.8.3 |"
    assert header in text
    assert "langgraph 0.6.11: an old one" in text
    assert "## 03_builtin_toolnode" in text and "## 07_inside_toolnode" in text
    assert "| `test_default_handler` | ✗ [1] | ✓ | langgraph 1.2.24 | langgraph 1.2.24 |" in text
    assert "[1] assert 'Error: boom' == 'crash'" in text
    assert "| `test_tool_runtime` | n/a | ✓ |" in text
    assert "| `test_default_handler` | 03 | ✗ | ✓ |" in text  # what changes across the matrix
    assert "- langgraph 0.6.11: ImportError: cannot import name 'ToolRuntime'" in text


def test_the_doctor_learns_which_lessons_differ_for_the_installed_versions():
    old = {"langgraph": "0.6.11", "langgraph-prebuilt": "0.6.5", "langchain-core": "0.3.86"}
    assert lessons_that_differ(old, DATA) == ("langgraph 0.6.11", {"03_builtin_toolnode": 2,
                                                                   "07_inside_toolnode": 1})
    same_minor = {"langgraph": "0.6.3", "langgraph-prebuilt": "0.6.1", "langchain-core": "0.3.70"}
    assert lessons_that_differ(same_minor, DATA)[0] == "langgraph 0.6.11"
    pinned = {"langgraph": "1.2.24", "langgraph-prebuilt": "1.1.3", "langchain-core": "1.8.3"}
    assert lessons_that_differ(pinned, DATA) == ("langgraph 1.2.24", {})
    assert lessons_that_differ({"langgraph": "9.9.9"}, DATA) == (None, {})


def test_the_doctor_names_the_lessons_that_differ_for_drifted_versions():
    from courseware.doctor import compat_note

    old = {"langgraph": "0.6.11", "langgraph-prebuilt": "0.6.5", "langchain-core": "0.3.86"}
    note = compat_note(old, DATA)
    assert "like langgraph 0.6.11 in docs/compatibility.md" in note and "03 (2), 07 (1)" in note
    pinned = {"langgraph": "1.2.24", "langgraph-prebuilt": "1.1.3", "langchain-core": "1.8.3"}
    assert compat_note(pinned, DATA) == ""


def _plugin():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "compat_plugin.py"
    spec = importlib.util.spec_from_file_location("compat_plugin", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_name_a_release_lacks_makes_only_the_tests_that_use_it_absent():
    import pytest

    plugin = _plugin()
    contract = {"__file__": plugin._CONTRACTS + "test_x.py"}
    partial = plugin._tolerant_import("json", contract, None, ("dumps", "no_such_name"), 0)
    assert partial.dumps({"a": 1}) == '{"a": 1}'  # what exists still works
    missing = partial.no_such_name  # importing the absent name does not fail ...
    annotation = missing[int] | None  # ... nor writing it in an annotation
    with pytest.raises(ImportError, match="cannot import name 'no_such_name' from 'json'"):
        missing()  # ... using it does, in the test that uses it
    with pytest.raises(ImportError):
        annotation.anything()
    with pytest.raises(ImportError, match="'no_such_module'"):
        plugin._tolerant_import("no_such_module", contract, None, ("thing",), 0).thing()
    with pytest.raises(ImportError):  # outside tests/contracts imports stay strict
        plugin._tolerant_import("no_such_module", {"__file__": __file__}, None, ("thing",), 0)
    with pytest.raises(ImportError):  # subclassing an absent class at module level fails the module
        class Child(missing):  # noqa: F841
            pass


def test_a_newest_column_that_resolved_to_the_pins_says_so():
    from courseware.compat import column_label

    newest = entry("newest", ("1.2.24", "1.1.3", "1.8.3", "1.5.2"), {})
    assert column_label(newest, PINNED) == "newest (= the pins)"
    moved = entry("newest", ("1.2.25", "1.1.3", "1.8.4", "1.5.2"), {})
    assert column_label(moved, PINNED) == "newest · core 1.8.4"
