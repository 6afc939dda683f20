"""Suite-wide pytest configuration.

Contract tests carry `@pytest.mark.lesson("NN_name")`; when one fails, the report names the notebook
that teaches the behaviour, so a library upgrade points straight at the lesson to update.

Tests whose verdict depends on the clock carry `@pytest.mark.timing`. When one of those fails, the
report says first that it is a timing failure (a loaded machine, a GC pause) and how to tell that
apart from a behaviour change: re-run it on an idle machine, and `make soak` counts its failures
under load. `make soak` (scripts/soak.py) runs exactly the tests selected by `-m timing`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from courseware.nbtools import OFFLINE_ENV_UNSET, saved_lesson_note

ROOT = Path(__file__).resolve().parent.parent

# The handout's browser tests run only through `make handout-test` (they build the site and drive
# Chromium: minutes on their own); plain `pytest` does not collect them.
collect_ignore_glob = [] if os.environ.get("TOOLNODE_LAB_HANDOUT_TEST") == "1" else ["handout/test_*.py"]


def pytest_addoption(parser):
    parser.addoption(
        "--only-lesson", action="append", default=[], metavar="NAME",
        help="keep only what can break when lesson NAME (e.g. 03_builtin_toolnode) or its lab changes: "
             "contract tests marked with that lesson, and consistency tests whose id names no other "
             "notebook (`make quick` passes it)",
    )


_NOTEBOOK_NAME = re.compile(r"\b\d\d_[a-z][a-z0-9_]*")


def keep_for_lessons(nodeid: str, marker: str | None, names: list[str]) -> bool:
    """Whether `make quick` for `names` (lesson and lab stems) keeps this test.

    A contract test stays when its `lesson` marker is one of them; any other test stays unless its
    id names a different lesson or lab (a parametrised case of another notebook).
    """
    if marker is not None:
        return marker in names
    return not _NOTEBOOK_NAME.search(nodeid) or any(name in nodeid for name in names)


def unmarked_contract_tests(items) -> list[str]:
    """Contract tests without `@pytest.mark.lesson(...)`: their failure could not name the lesson."""
    return [item.nodeid for item in items
            if item.nodeid.startswith("tests/contracts/") and item.get_closest_marker("lesson") is None]


def pytest_collection_modifyitems(config, items):
    unmarked = unmarked_contract_tests(items)
    if unmarked:
        raise pytest.UsageError(
            "every contract test names the lesson that teaches its behaviour, so that its failure says "
            "which lesson to update: add @pytest.mark.lesson(\"NN_name\") (or the module's LESSON marker) "
            "to:\n  " + "\n  ".join(unmarked[:20]))
    names = config.getoption("--only-lesson")
    if not names:
        return
    kept, dropped = [], []
    for item in items:
        marker = item.get_closest_marker("lesson")
        keep = keep_for_lessons(item.nodeid, marker.args[0] if marker else None, names)
        (kept if keep else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_configure(config):
    # The suite is offline by definition: a developer's real-model switch, LangSmith tracing or
    # MPLBACKEND must not reach the notebook kernels (they inherit this process's environment).
    for name in OFFLINE_ENV_UNSET:
        os.environ.pop(name, None)


def _lesson_path(name: str) -> str:
    matches = sorted((ROOT / "notebooks").glob(f"{name}*.ipynb"))
    return str(matches[0].relative_to(ROOT)) if matches else f"notebooks/{name}*.ipynb"


def failure_note(nodeid: str, lesson: str | None, timing: bool) -> tuple[str, str] | None:
    """The section a failed test's report gets: what kind of failure it is and what to do.

    A `timing` test first says it is timing-dependent (so nobody hunts a library change that is
    a loaded machine); a contract test (`lesson`) names the notebook that teaches the behaviour.
    Used by `pytest_runtest_makereport` below; tests/test_nbtools.py checks the wording.
    """
    where = _lesson_path(lesson) if lesson else None
    if timing:
        text = (
            "TIMING-DEPENDENT test: its verdict depends on the clock, so a loaded machine or a GC "
            "pause can fail it. Re-run it alone on an idle machine:\n"
            f"    .venv/bin/python -m pytest '{nodeid}'\n"
            "`make soak` runs every timing test under load and counts failures. If it also fails "
            "on an idle machine, the behaviour changed"
        )
        if where:
            text += (f": check the pinned versions in requirements.txt, then update {where} "
                     "(and this test) to what the new version does.")
        else:
            text += ": read the assertion above."
        return ("timing", text)
    if where:
        return (
            "lesson",
            f"The library no longer behaves as {where} teaches. Check the pinned versions in "
            f"requirements.txt, then update that lesson (and this test) to what the new version does.",
        )
    return None




@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    path = Path(str(item.path))
    note = saved_lesson_note(path) if path.suffix == ".ipynb" else ""
    if note:
        report.sections.append(("saved lesson", note))
    marker = item.get_closest_marker("lesson")
    note = failure_note(item.nodeid, marker.args[0] if marker else None,
                        item.get_closest_marker("timing") is not None)
    if note:
        report.sections.append(note)
