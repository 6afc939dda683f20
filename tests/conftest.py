"""Suite-wide pytest configuration.

Contract tests carry `@pytest.mark.lesson("NN_name")`; when one fails, the report names the notebook
that teaches the behaviour, so a library upgrade points straight at the lesson to update.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.nbtools import OFFLINE_ENV_UNSET

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    # The suite is offline by definition: a developer's real-model switch, LangSmith tracing or
    # MPLBACKEND must not reach the notebook kernels (they inherit this process's environment).
    for name in OFFLINE_ENV_UNSET:
        os.environ.pop(name, None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    marker = item.get_closest_marker("lesson")
    if marker is None or not report.failed:
        return
    name = marker.args[0]
    matches = sorted((ROOT / "notebooks").glob(f"{name}*.ipynb"))
    where = matches[0].relative_to(ROOT) if matches else f"notebooks/{name}*.ipynb"
    report.sections.append(
        (
            "lesson",
            f"The library no longer behaves as {where} teaches. Check the pinned versions in "
            f"requirements.txt, then update that lesson (and this test) to what the new version does.",
        )
    )
