"""Pre-flight check: is this machine (or this kernel) ready to run the course, offline?

    make doctor                          # or, from a fresh shell: .venv/bin/python -m courseware.doctor
    .venv/bin/python -m courseware.doctor --sample     # the report as docs/workshop/preflight.md shows it
    .venv/bin/python -m courseware.doctor --update-sample  # write it there

Run it before a workshop on every laptop, and at the top of lesson 00. Each check says what is
wrong and the command that fixes it, as it runs from a fresh shell on this machine; a fix shared by
several failing lines is printed once. Exit status 0 means ready.

It only looks: it installs and changes nothing, so it reports the environment as it found it
(run it before `make setup` to see what setup would fix). It needs only the standard library to
start, so a broken environment gets a report, not a traceback. It runs two tiny graphs offline: the
llm → tools → llm loop the lessons use, and the approval pattern lessons 08 and 14 teach (an interceptor
that calls `interrupt()` under `handle_tool_errors=True` must pause the run). With the real-model
switch on (`TOOLNODE_LAB_MODEL=openai`) it makes one cheap real request, and "ready" means the model
answered.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import helpers
from courseware.platforms import (
    VENV,
    Check,
    _shown,
    offline_hint,
    pins_for,
    platform_checks,
    python_command,
    setup_fix,
)

ROOT = Path(helpers.__file__).resolve().parent.parent
MIN_PYTHON = (3, 11)
MODEL_ENV = "TOOLNODE_LAB_MODEL"  # as helpers.models, which needs langchain-core to import
TRACING_VARS = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")  # as courseware.nbtools
SAMPLE = ROOT / "docs" / "workshop" / "preflight.md"

__all__ = ["Check", "Report", "run_checks"]


def in_project_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def env_fix() -> str:
    """The one command that installs the tested set into the environment the doctor runs in."""
    if in_project_venv() or sys.version_info[:2] < MIN_PYTHON:
        return setup_fix()
    return f"`{python_command()} -m pip install -r requirements.txt -e .` (this environment)"


def doctor_command() -> str:
    if in_project_venv() and os.name != "nt":
        return "`make doctor`"
    return f"`{python_command()} -m courseware.doctor`"


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
        lines, shown = [], set()
        for check in self.checks:
            if check.ok is not True and check.fix and check.fix in shown:  # one fix, printed once
                lines.append(str(Check(check.name, check.ok, check.detail + " (fix above)")))
                continue
            if check.ok is not True and check.fix:
                shown.add(check.fix)
            lines.append(str(check))
        fixes = list(dict.fromkeys(check.fix for check in self.failures if check.fix))
        if not self.ok:
            how = (f"fix: {fixes[0]}" if len(fixes) == 1 else "apply the fixes above")
            verdict = (f"NOT ready: {len(self.failures)} check(s) failed; {how}, then run "
                       f"{doctor_command()} again")
        elif self.real_model:
            verdict = (f"ready: the course runs here with a REAL model ({self.real_model}); its answers "
                       "differ from the committed outputs")
        else:
            verdict = "ready: the course runs offline here"
        return "\n".join([*lines, verdict])


def read_pins(requirements: Path) -> dict[str, str]:
    """The pins of a requirements file that apply here (marker true), names normalised (PEP 503)."""
    return pins_for(None, requirements)


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info[:2] >= MIN_PYTHON
    return Check("python", ok, f"{version} (need >= {'.'.join(map(str, MIN_PYTHON))})", setup_fix(False))


def check_checkout() -> Check:
    where = Path(helpers.__file__).resolve().parent
    ok = (ROOT / "pyproject.toml").exists() and (ROOT / "notebooks").is_dir()
    detail = "imported from this checkout's helpers/" if ok else f"imported from {_shown(where)}"
    return Check("helpers package", ok, detail, env_fix())


def check_pins(requirements: Path | None = None) -> Check:
    requirements = requirements or ROOT / "requirements.txt"
    if not requirements.exists():
        return Check("pinned versions", None, f"{requirements} not found; versions not compared")
    try:
        pins = read_pins(requirements)
    except ImportError:  # `packaging` reads the lock's markers; a broken environment may lack it
        return Check("pinned versions", False, "packaging missing (needed to read the lock's markers)",
                     env_fix())
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
        return Check("pinned versions", False, shown, f"{env_fix()}; {offline_hint()}"
                     if in_project_venv() else env_fix())
    return Check("pinned versions", True, f"all {len(pins)} match requirements.txt")


def compat_note(versions=None, data=None) -> str:
    """What docs/compatibility.md says about these versions: the lessons whose behaviours differ.

    Empty when the versions are the pins or the matrix has no release like them.
    """
    from courseware.compat import lessons_that_differ

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
    return Check("environment", None, f"running from {_shown(prefix)}, not the project's .venv: fine "
                 "for conda or your own venv when the pinned versions match (`make lab` uses .venv)")


def check_jupyterlab() -> Check:
    try:
        version = metadata.version("jupyterlab")
    except metadata.PackageNotFoundError:
        return Check("jupyterlab", False, "not installed", env_fix())
    major, minor = (int(part) for part in version.split(".")[:2])
    ok = (major, minor) >= (4, 1)
    return Check("jupyterlab", ok, f"{version} (4.1+ draws the graphs offline)", env_fix())


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
        return Check("model", False, f"helpers.models does not import ({error})", env_fix())
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
        return Check("offline graph", False, f"{type(error).__name__}: {error}", env_fix())
    ok = answer == "Paris: sunny, 25 °C"
    return Check("offline graph", ok, f"llm → tools → llm answered {answer!r}", env_fix())


ISSUES = ("langgraph#8217, #8394: https://github.com/langchain-ai/langgraph/issues/8217, "
          "https://github.com/langchain-ai/langgraph/issues/8394")
"""Where the bypass is reported: the interceptor path's `except Exception` caught the GraphInterrupt."""


def _approve_with_interrupt(request, execute):
    """The approval interceptor lessons 08 and 14 teach: ask a human before the tool runs."""
    from langgraph.types import interrupt

    answer = interrupt({"approve": request.tool_call["name"], "args": request.tool_call["args"]})
    return execute(request) if answer == "yes" else None


def run_approval_probe(wrap_tool_call=None):
    """One ToolNode call under an approval interceptor, `handle_tool_errors=True`, a checkpointer.

    Returns what `invoke` returned. `wrap_tool_call` defaults to `_approve_with_interrupt`.
    """
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from langsmith import tracing_context

    @tool
    def delete_records(table: str) -> str:
        """Delete every record of a table (the probe's stand-in for a tool that needs approval)."""
        return f"deleted every record of {table}"

    node = ToolNode([delete_records], wrap_tool_call=wrap_tool_call or _approve_with_interrupt,
                    handle_tool_errors=True)
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    call = {"name": "delete_records", "args": {"table": "users"}, "id": "probe-1", "type": "tool_call"}
    with tracing_context(enabled=False):
        return graph.invoke({"messages": [AIMessage("", tool_calls=[call])]},
                            {"configurable": {"thread_id": "doctor-approval-probe"}})


def classify_approval(result, prebuilt: str | None = None) -> Check:
    """The doctor's `approval` line from what the probe's `invoke` returned.

    ok when the run paused (`__interrupt__` in the result); FAIL when a ToolMessage came back
    instead (the interrupt became an error message, or the tool ran unapproved).
    """
    if prebuilt is None:
        try:
            prebuilt = metadata.version("langgraph-prebuilt")
        except metadata.PackageNotFoundError:
            prebuilt = "?"
    if result.get("__interrupt__"):
        return Check("approval", True, "an interrupt() in a wrap_tool_call interceptor pauses the run under "
                     f"handle_tool_errors=True (langgraph-prebuilt {prebuilt})")
    last = (result.get("messages") or [None])[-1]
    if getattr(last, "type", "") == "tool":
        what = ("becomes an error ToolMessage" if getattr(last, "status", "") == "error"
                else "is skipped and the tool runs")
        return Check("approval", False, f"on langgraph-prebuilt {prebuilt} an interrupt() inside an "
                     f"interceptor under handle_tool_errors=True {what}: approvals are bypassed — "
                     f"{ISSUES}",
                     f"install the tested set: {env_fix()}")
    return Check("approval", False, f"the probe neither paused nor answered the call: {result!r:.200}",
                 f"install the tested set: {env_fix()}")


def check_approval() -> Check:
    """Run the approval probe live and classify what came back."""
    try:
        result = run_approval_probe()
    except TypeError as error:  # a release whose ToolNode has no interceptors: nothing to bypass
        return Check("approval", None, f"not checked: this ToolNode takes no wrap_tool_call ({error})",
                     f"install the tested set: {env_fix()}")
    except Exception as error:  # report, don't crash: this is a diagnostic
        return Check("approval", False, f"{type(error).__name__}: {error}", env_fix())
    return classify_approval(result)


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
        check_approval(),
    ])
    if model.ok and "REAL model" in model.detail:
        report.real_model = model.detail.split(": ", 1)[1].split(";", 1)[0]
    return report


# The sample report in docs/workshop/preflight.md is this doctor's output (`--update-sample`), and
# tests/test_doctor.py checks it still is, with what varies by machine masked (`mask_sample`).

SAMPLE_START = "<!-- sample: .venv/bin/python -m courseware.doctor --update-sample -->"


def sample_report() -> str:
    """The report with no proxy, model or tracing variable set (what an attendee's laptop should print)."""
    return str(run_checks(env={}))


def mask_sample(text: str) -> str:
    """Blank what differs between healthy machines: Python's version, the platform, the pin count."""
    text = re.sub(r"\b3\.1[1-3]\.\d+\b", "3.1x.y", text)
    text = re.sub(r"platform: [^,]+, Python", "platform: <platform>, Python", text)
    return re.sub(r"all \d+ match", "all N match", text)


def _sample_parts(path: Path) -> tuple[str, str, str]:
    """preflight.md split around the sample: (text up to the block's body, the body, the rest)."""
    text = path.read_text(encoding="utf-8")
    start = text.index("```text\n", text.index(SAMPLE_START)) + len("```text\n")
    end = text.index("```", start)
    return text[:start], text[start:end], text[end:]


def committed_sample(path: Path = SAMPLE) -> str:
    """The ```text block under SAMPLE_START in preflight.md."""
    return _sample_parts(path)[1].rstrip("\n")


def update_sample(path: Path = SAMPLE) -> None:
    head, _, tail = _sample_parts(path)
    path.write_text(f"{head}{sample_report()}\n{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    # Redirected to a file on Windows (`... > doctor.txt`), stdout is cp1252, which has no "→":
    # print what it cannot encode as "?" rather than stop with an empty file.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")
    args = sys.argv[1:] if argv is None else argv
    if args == ["--sample"]:
        print(sample_report())
        return 0
    if args == ["--update-sample"]:
        update_sample()
        print(f"wrote the sample report into {_shown(SAMPLE)}")
        return 0
    report = run_checks()
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
