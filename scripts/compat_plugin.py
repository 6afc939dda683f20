"""A pytest plugin for `scripts/compat.py`: record each contract test's outcome on one release.

Loaded with `-p compat_plugin` (scripts/ on PYTHONPATH); writes JSON to $COMPAT_OUT: one record per
test with its lesson, its outcome and, when it did not pass, the exception type and first line.
"""

from __future__ import annotations

import json
import os
import sysconfig

import pytest

_RECORDS: dict[str, dict] = {}


def _summary(report) -> tuple[str, str]:
    """(exception type, the line that says what went wrong) from a failed report."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    else:  # a collection error: the last "SomethingError: ..." line of the text is the cause
        lines = [line.strip() for line in str(report.longrepr).splitlines()]
        causes = [line.removeprefix("E   ").strip() for line in lines if "Error: " in line]
        text = causes[-1] if causes else (lines[-1] if lines else "")
    first = text.strip().splitlines()[0] if text.strip() else ""
    for local, shown in ((sysconfig.get_paths()["purelib"], "site-packages"), (os.getcwd() + os.sep, "")):
        first = first.replace(local, shown)  # no machine path in the committed record
    kind = first.split(":", 1)[0] if ":" in first else type(report.longrepr).__name__
    return kind.strip(), first[:300]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("lesson")
    record = _RECORDS.setdefault(
        item.nodeid,
        {"lesson": marker.args[0] if marker else None, "outcome": "passed",
         "timing": item.get_closest_marker("timing") is not None},
    )
    if report.skipped and record["outcome"] == "passed":
        record["outcome"] = "skipped"
    elif report.failed:
        kind, message = _summary(report)
        record.update(outcome="failed" if report.when == "call" else "error", exception=kind, message=message)


def pytest_collectreport(report):
    if report.failed:  # the module could not be imported: every test in it is missing here
        kind, message = _summary(report)
        _RECORDS[report.nodeid] = {"lesson": None, "outcome": "collection-error", "exception": kind,
                                   "message": message, "timing": False}


def pytest_sessionfinish(session):
    path = os.environ.get("COMPAT_OUT")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(_RECORDS, handle, indent=1, ensure_ascii=False)
