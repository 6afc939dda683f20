"""Pre-flight check: is this machine (or this kernel) ready to run the course, offline?

    python -m helpers.doctor        # or: make doctor

Run it before a workshop on every laptop, and at the top of lesson 00. Each check says what is
wrong and the command that fixes it. Exit status 0 means ready.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import helpers
from helpers.models import MODEL_ENV, RealModelConfigError, real_model_requested
from helpers.nbtools import TRACING_VARS
from helpers.platforms import pins_for, platform_checks

ROOT = Path(helpers.__file__).resolve().parent.parent
MIN_PYTHON = (3, 11)


@dataclass
class Check:
    """One line of the report: `ok` is True (pass), False (fail) or None (a note, not a failure)."""

    name: str
    ok: bool | None
    detail: str
    fix: str = ""

    def __str__(self) -> str:
        mark = {True: "ok  ", False: "FAIL", None: "note"}[self.ok]
        text = f"[{mark}] {self.name}: {self.detail}"
        return text + (f"\n       fix: {self.fix}" if self.fix and self.ok is not True else "")


@dataclass
class Report:
    """All checks; `ok` is True when none failed.

    Taught in `notebooks/00_start_here.ipynb`.
    """

    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok is not False for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.ok is False]

    def __str__(self) -> str:
        verdict = "ready: the course runs offline here" if self.ok else (
            f"NOT ready: {len(self.failures)} check(s) failed; apply the fixes above and run it again"
        )
        return "\n".join([*map(str, self.checks), verdict])


def read_pins(requirements: Path) -> dict[str, str]:
    """The pins of a requirements file that apply here (marker true), names normalised (PEP 503)."""
    return pins_for(None, requirements)


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:2] >= MIN_PYTHON
    return Check("python", ok, f"{version} (need >= {'.'.join(map(str, MIN_PYTHON))})",
                 "install Python 3.11+, then `make setup PYTHON=python3.11`")


def check_checkout() -> Check:
    where = Path(helpers.__file__).resolve().parent
    ok = (ROOT / "pyproject.toml").exists() and (ROOT / "notebooks").is_dir()
    return Check("helpers package", ok, f"imported from {where}",
                 "install this checkout's package: `make setup` (or `pip install -e .` in the repo)")


def check_pins(requirements: Path | None = None) -> Check:
    requirements = requirements or ROOT / "requirements.txt"
    if not requirements.exists():
        return Check("pinned versions", None, f"{requirements} not found; versions not compared")
    wrong = []
    for name, wanted in read_pins(requirements).items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "missing"
        if have != wanted:
            wrong.append(f"{name} {have} (want {wanted})")
    if wrong:
        shown = ", ".join(wrong[:6]) + (f" and {len(wrong) - 6} more" if len(wrong) > 6 else "")
        return Check("pinned versions", False, shown,
                     "`make setup` (or `pip install -r requirements.txt -e .` in this environment)")
    return Check("pinned versions", True, f"all {len(read_pins(requirements))} match requirements.txt")


def check_environment() -> Check:
    venv = ROOT / ".venv"
    prefix = Path(sys.prefix).resolve()
    if prefix == venv.resolve():
        return Check("environment", True, "this is the project's .venv")
    return Check("environment", None, f"running from {prefix}, not the project's .venv",
                 "fine for conda or your own venv if the pinned versions match; "
                 "otherwise `make lab` uses .venv")


def check_jupyterlab() -> Check:
    try:
        version = metadata.version("jupyterlab")
    except metadata.PackageNotFoundError:
        return Check("jupyterlab", False, "not installed", "`make setup`")
    major, minor = (int(part) for part in version.split(".")[:2])
    ok = (major, minor) >= (4, 1)
    return Check("jupyterlab", ok, f"{version} (4.1+ draws the graphs offline)", "`make setup`")


def check_model(env=None) -> Check:
    env = os.environ if env is None else env
    try:
        real = real_model_requested(env)
    except RealModelConfigError as error:
        return Check("model", False, str(error), f"unset {MODEL_ENV}, or set it to `openai`")
    if not real:
        return Check("model", True, "the offline scripted model (no key, no network)")
    from helpers.models import get_chat_model

    try:
        model = get_chat_model(env=env)
    except RealModelConfigError as error:
        return Check("model", False, str(error), f"set the variables it names, or unset {MODEL_ENV}")
    return Check("model", None, f"a REAL model was requested ({MODEL_ENV}=openai): "
                 f"{type(model).__name__}; notebooks will call it and its outputs will differ",
                 f"unset {MODEL_ENV} to work offline")


def check_tracing(env=None) -> Check:
    env = os.environ if env is None else env
    on = [name for name in TRACING_VARS if env.get(name, "").strip().lower() in {"1", "true", "yes"}]
    if on:
        return Check("tracing", False, f"{', '.join(on)} is on: every run would try to reach LangSmith",
                     f"unset {' '.join(on)} (the course needs no network)")
    return Check("tracing", True, "LangSmith tracing is off")


def check_offline_loop() -> Check:
    """Run a two-turn llm → tools → llm graph with the scripted model: the whole offline path."""
    from helpers.models import ScriptedChatModel, tool_results_summary
    from helpers.tools import make_city_tools

    try:
        from helpers.graphs import tool_loop

        tools = make_city_tools(delay=0.0, sync=True)
        model = ScriptedChatModel(
            script=[[{"name": "lookup_weather", "args": {"city": "Paris"}}], tool_results_summary]
        ).bind_tools(tools)
        graph = tool_loop(model, tools)
        from langsmith import tracing_context

        with tracing_context(enabled=False):  # a diagnostic must not reach out, whatever the env says
            answer = graph.invoke({"messages": [("user", "Weather in Paris?")]})["messages"][-1].content
    except Exception as error:  # report, don't crash: this is a diagnostic
        return Check("offline graph", False, f"{type(error).__name__}: {error}",
                     "`make setup`, then run the doctor again; if it persists, file an issue with this line")
    ok = answer == "Paris: sunny, 25 °C"
    return Check("offline graph", ok, f"llm → tools → llm answered {answer!r}", "`make setup`")


def run_checks(env=None) -> Report:
    """Run every pre-flight check and return the report (nothing is printed).

    Taught in `notebooks/00_start_here.ipynb`.
    """
    return Report([
        check_python(),
        *platform_checks(),
        check_checkout(),
        check_pins(),
        check_environment(),
        check_jupyterlab(),
        check_model(env),
        check_tracing(env),
        check_offline_loop(),
    ])


def main() -> int:
    report = run_checks()
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
