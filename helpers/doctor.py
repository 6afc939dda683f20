"""Pre-flight check: is this machine (or this kernel) ready to run the course, offline?

    python -m helpers.doctor        # or: make doctor

Run it before a workshop on every laptop, and at the top of lesson 00. Each check says what is
wrong and the command that fixes it. Exit status 0 means ready.

It only looks: it installs and changes nothing, so it reports the environment as it found it
(run it before `make setup` to see what setup would fix). It needs only the standard library to
start, so a broken environment gets a report, not a traceback. With the real-model switch on
(`TOOLNODE_LAB_MODEL=openai`) it makes one cheap real request, and "ready" means the model answered.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import helpers
from helpers.platforms import pins_for, platform_checks

ROOT = Path(helpers.__file__).resolve().parent.parent
MIN_PYTHON = (3, 11)
MODEL_ENV = "TOOLNODE_LAB_MODEL"  # as helpers.models, which needs langchain-core to import
TRACING_VARS = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")  # as helpers.nbtools


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
    real_model: str = ""
    """What answered when a real model was requested (empty: the offline scripted model)."""

    @property
    def ok(self) -> bool:
        return all(check.ok is not False for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.ok is False]

    def __str__(self) -> str:
        if not self.ok:
            verdict = (f"NOT ready: {len(self.failures)} check(s) failed; apply the fixes above and "
                       "run it again")
        elif self.real_model:
            verdict = (f"ready: the course runs here with a REAL model ({self.real_model}); its answers "
                       "differ from the committed outputs")
        else:
            verdict = "ready: the course runs offline here"
        return "\n".join([*map(str, self.checks), verdict])


def read_pins(requirements: Path) -> dict[str, str]:
    """The pins of a requirements file that apply here (marker true), names normalised (PEP 503)."""
    return pins_for(None, requirements)


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:2] >= MIN_PYTHON
    return Check("python", ok, f"{version} (need >= {'.'.join(map(str, MIN_PYTHON))})",
                 "install Python 3.11+, then `make setup PYTHON=python3.11`")


def _shown(path: Path) -> str:
    """A path as the doctor prints it: under the home folder as `~/...` (no user name)."""
    home = Path.home()
    try:
        return "~/" + str(path.relative_to(home)) if path != home else "~"
    except ValueError:
        return str(path)


def check_checkout() -> Check:
    where = Path(helpers.__file__).resolve().parent
    ok = (ROOT / "pyproject.toml").exists() and (ROOT / "notebooks").is_dir()
    detail = "imported from this checkout's helpers/" if ok else f"imported from {_shown(where)}"
    return Check("helpers package", ok, detail,
                 "install this checkout's package: `make setup` (or `pip install -e .` in the repo)")


def check_pins(requirements: Path | None = None) -> Check:
    requirements = requirements or ROOT / "requirements.txt"
    if not requirements.exists():
        return Check("pinned versions", None, f"{requirements} not found; versions not compared")
    try:
        pins = read_pins(requirements)
    except ImportError:  # `packaging` reads the lock's markers; a broken environment may lack it
        return Check("pinned versions", False, "packaging missing (needed to read the lock's markers)",
                     "`make setup` (or `pip install -r requirements.txt -e .` in this environment)")
    wrong = []
    for name, wanted in pins.items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "missing"
        if have != wanted:
            wrong.append(f"{name} {have} (want {wanted})")
    if wrong:
        shown = ", ".join(wrong[:6]) + (f" and {len(wrong) - 6} more" if len(wrong) > 6 else "")
        shown += compat_note()
        return Check("pinned versions", False, shown,
                     "`make setup` (or `pip install -r requirements.txt -e .` in this environment)")
    return Check("pinned versions", True, f"all {len(pins)} match requirements.txt")


def compat_note(versions=None, data=None) -> str:
    """What docs/compatibility.md says about these versions: the lessons whose behaviours differ.

    Empty when the versions are the pins or the matrix has no release like them.
    """
    from helpers.compat import lessons_that_differ

    release, counts = lessons_that_differ(versions, data)
    if release is None or not counts:
        return ""
    lessons = ", ".join(f"{lesson[:2]} ({n})" for lesson, n in counts.items())
    return (f". These versions are like {release} in docs/compatibility.md, where behaviours taught in "
            f"these lessons differ or are absent (lesson (count)): {lessons}")


def check_environment() -> Check:
    venv = ROOT / ".venv"
    prefix = Path(sys.prefix).resolve()
    if prefix == venv.resolve():
        return Check("environment", True, "this is the project's .venv")
    return Check("environment", None, f"running from {_shown(prefix)}, not the project's .venv",
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


def check_model(env=None, *, timeout: float = 5.0) -> Check:
    """The model the notebooks will use; with the real-model switch on, one real request to it."""
    env = os.environ if env is None else env
    try:
        from helpers.models import (
            MODEL_NAME_ENV,
            RealModelConfigError,
            RealModelUnavailableError,
            ping_model,
            real_model_requested,
        )
    except ImportError as error:
        return Check("model", False, f"helpers.models does not import ({error})", "`make setup`")
    try:
        real = real_model_requested(env)
    except RealModelConfigError as error:
        return Check("model", False, str(error), f"unset {MODEL_ENV}, or set it to `openai`")
    if not real:
        return Check("model", True, "the offline scripted model (no key, no network)")
    try:
        answered = ping_model(env, timeout=timeout)
    except RealModelUnavailableError as error:
        return Check("model", False, f"a REAL model was requested ({MODEL_ENV}=openai) and did not "
                     f"answer: {error}", f"fix the setting it names, or unset {MODEL_ENV}")
    except RealModelConfigError as error:
        return Check("model", False, str(error), f"set the variables it names, or unset {MODEL_ENV}")
    name = env.get(MODEL_NAME_ENV) or "gpt-4o-mini"
    return Check("model", True, f"a REAL model ({MODEL_ENV}=openai): {answered}; notebooks will call "
                 f"{name!r} and their outputs will differ from the committed ones",
                 f"unset {MODEL_ENV} to work offline")


def check_proxy(env=None) -> Check:
    """Proxy settings that would break a real model or a client of a server on 127.0.0.1."""
    env = os.environ if env is None else env
    try:
        from helpers.models import is_loopback, mask_url, proxy_settings, real_model_requested
    except ImportError as error:
        return Check("proxy", None, f"not checked: helpers.models does not import ({error})")
    proxies = proxy_settings(env)
    if not proxies:
        return Check("proxy", True, "no proxy set: requests go straight out")
    shown = ", ".join(f"{name}={url}" for name, url in proxies.items())
    no_proxy = {part.strip() for part in (env.get("NO_PROXY") or env.get("no_proxy") or "").split(",")}
    loopback_ok = bool({"127.0.0.1", "localhost", "*"} & no_proxy)
    try:
        real = real_model_requested(env)
    except Exception:
        real = False
    base_url = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE")
    if real and not (base_url and is_loopback(base_url)):
        import socket
        from urllib.parse import urlsplit

        url = next(iter(env[name] for name in proxies))
        parts = urlsplit(url if "://" in url else f"http://{url}")
        try:
            socket.create_connection((parts.hostname, parts.port or 80), timeout=2).close()
        except (OSError, TypeError, ValueError) as error:
            return Check("proxy", False, f"{shown}, and nothing accepts connections at "
                         f"{mask_url(url)} ({type(error).__name__}): every request to the real model goes "
                         "there and fails with 'Connection error'",
                         "fix or start the proxy, or unset the proxy variables")
    detail = f"{shown}; the course's own clients reach 127.0.0.1 directly"
    if not loopback_ok:
        return Check("proxy", None, detail + ", but your own clients of a local server (a ChatOpenAI you "
                     "build in a cell, curl) would go through the proxy and fail with 'Connection error'",
                     "export NO_PROXY=127.0.0.1,localhost (no_proxy too, for some tools)")
    return Check("proxy", True, detail + " (NO_PROXY names 127.0.0.1/localhost)")


def check_tracing(env=None) -> Check:
    env = os.environ if env is None else env
    on = [name for name in TRACING_VARS if env.get(name, "").strip().lower() in {"1", "true", "yes"}]
    if on:
        return Check("tracing", False, f"{', '.join(on)} is on: every run would try to reach LangSmith",
                     f"unset {' '.join(on)} (the course needs no network)")
    return Check("tracing", True, "LangSmith tracing is off")


def check_offline_loop() -> Check:
    """Run a two-turn llm → tools → llm graph with the scripted model: the whole offline path."""
    try:
        from helpers.graphs import tool_loop
        from helpers.models import ScriptedChatModel, tool_results_summary
        from helpers.tools import make_city_tools

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
    """Run every pre-flight check and return the report (nothing is printed, nothing installed).

    Taught in `notebooks/00_start_here.ipynb`.
    """
    model = check_model(env)
    report = Report([
        check_python(),
        *platform_checks(),
        check_checkout(),
        check_pins(),
        check_environment(),
        check_jupyterlab(),
        model,
        check_proxy(env),
        check_tracing(env),
        check_offline_loop(),
    ])
    if model.ok and "REAL model" in model.detail:
        report.real_model = model.detail.split(": ", 1)[1].split(";", 1)[0]
    return report


def main() -> int:
    report = run_checks()
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
