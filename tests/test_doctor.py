import os
import re
import socket
import subprocess
import sys
import threading

from courseware.doctor import (
    ROOT,
    Check,
    Report,
    check_model,
    check_proxy,
    check_tracing,
    read_pins,
    run_checks,
)
from helpers.openai_endpoint import ScriptedOpenAIEndpoint


def test_doctor_passes_in_the_test_environment():
    report = run_checks(env={})
    assert report.ok, str(report)
    assert str(report).endswith("ready: the course runs offline here")


def test_real_model_without_key_fails_with_a_fix():
    check = check_model({"TOOLNODE_LAB_MODEL": "openai"})
    assert check.ok is False and "OPENAI_API_KEY" in check.detail
    assert "fix:" in str(check)


def test_unknown_model_switch_value_is_explained():
    check = check_model({"TOOLNODE_LAB_MODEL": "gpt"})
    assert check.ok is False and "TOOLNODE_LAB_MODEL=openai" in check.detail


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_real_model_that_answers_is_ready_and_the_verdict_says_real():
    with ScriptedOpenAIEndpoint(["hi"]) as endpoint:
        env = {"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": endpoint.base_url,
               "TOOLNODE_LAB_MODEL_NAME": "scripted"}
        check = check_model(env)
        assert check.ok is True and "answered and lists 'scripted'" in check.detail
        report = run_checks(env)
    assert report.ok and "ready: the course runs here with a REAL model" in str(report)
    assert "runs offline" not in str(report)


def test_a_real_model_that_does_not_answer_fails_and_masks_the_password():
    url = f"http://ann:s3cret@127.0.0.1:{_free_port()}/v1"
    report = run_checks({"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": url,
                         "TOOLNODE_LAB_MODEL_NAME": "m"})
    text = str(report)
    assert not report.ok and "did not answer" in text and "Start the server" in text
    assert "s3cret" not in text and "ann:***@" in text


def test_a_web_server_that_is_not_an_openai_api_fails_the_model_check():
    from http.server import HTTPServer, SimpleHTTPRequestHandler

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_error(404)

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        check = check_model({"TOOLNODE_LAB_MODEL": "openai", "OPENAI_BASE_URL": url,
                             "TOOLNODE_LAB_MODEL_NAME": "m"})
    finally:
        server.shutdown()
        server.server_close()
    assert check.ok is False and "not as an OpenAI-compatible API" in check.detail


def test_proxy_checks():
    dead = f"http://user:pw@127.0.0.1:{_free_port()}"
    assert check_proxy({}).ok is True
    loopback = check_proxy({"HTTP_PROXY": dead})
    assert loopback.ok is None and "NO_PROXY=127.0.0.1,localhost" in loopback.fix
    assert "pw" not in loopback.detail and "user:***@" in loopback.detail
    assert check_proxy({"HTTP_PROXY": dead, "NO_PROXY": "localhost,127.0.0.1"}).ok is True
    remote = check_proxy({"HTTPS_PROXY": dead, "TOOLNODE_LAB_MODEL": "openai", "OPENAI_API_KEY": "sk-x"})
    assert remote.ok is False and "Connection error" in remote.detail


def test_the_doctor_prints_no_machine_path():
    text = str(run_checks(env={}))
    assert str(ROOT) not in text and "imported from this checkout's helpers/" in text


def test_the_doctor_starts_without_the_course_packages():
    # A broken environment (a package removed) gets a report, not an ImportError.
    code = ("import sys; sys.modules['langchain_core'] = None; sys.modules['packaging'] = None; "
            "from courseware.doctor import main; raise SystemExit(main())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env={k: v for k, v in os.environ.items() if not k.startswith("TOOLNODE")})
    assert result.returncode == 1, result.stderr
    assert "NOT ready" in result.stdout and "Traceback" not in result.stderr


def test_the_doctor_redirected_to_a_cp1252_file_writes_the_whole_report(tmp_path):
    # Windows: `.venv\Scripts\python -m courseware.doctor > doctor.txt` writes cp1252.
    out = tmp_path / "doctor.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLNODE")}
    env["PYTHONIOENCODING"] = "cp1252"
    with out.open("wb") as handle:
        result = subprocess.run([sys.executable, "-m", "courseware.doctor"], stdout=handle,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    text = out.read_text(encoding="cp1252")
    assert "offline graph" in text and "llm ? tools ? llm" in text
    assert text.rstrip().endswith("ready: the course runs offline here")


def test_tracing_on_fails():
    assert check_tracing({"LANGSMITH_TRACING": "true"}).ok is False
    assert check_tracing({}).ok is True


def test_failed_report_is_not_ok(tmp_path):
    from courseware.doctor import check_pins

    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nlanggraph==0.0.1\nnot-a-real-package-xyz==1.0\n")
    assert read_pins(req) == {"langgraph": "0.0.1", "not-a-real-package-xyz": "1.0"}
    check = check_pins(req)
    assert check.ok is False and "missing" in check.detail and "(want 0.0.1)" in check.detail
    report = Report([check])
    assert not report.ok and "NOT ready" in str(report)


# The approval-safety probe (issue: an interrupt() in an interceptor under handle_tool_errors=True).

def test_the_approval_probe_pauses_on_the_pinned_set():
    from courseware.doctor import check_approval

    check = check_approval()
    assert check.ok is True and "pauses the run" in check.detail, str(check)


def _as_langgraph_prebuilt_1_0_did(request, execute):
    """The interceptor path of langgraph-prebuilt 1.0.x: `except Exception` around the interceptor."""
    from langchain_core.messages import ToolMessage

    from courseware.doctor import _approve_with_interrupt

    try:
        return _approve_with_interrupt(request, execute)
    except Exception as error:  # GraphInterrupt is an Exception: the approval becomes an error message
        return ToolMessage(content=f"Error: {error!r}", tool_call_id=request.tool_call["id"],
                           name=request.tool_call["name"], status="error")


def test_an_interrupt_turned_into_an_error_message_is_a_failure_naming_the_issues():
    from courseware.doctor import classify_approval, run_approval_probe

    result = run_approval_probe(_as_langgraph_prebuilt_1_0_did)
    assert "__interrupt__" not in result and result["messages"][-1].status == "error"
    check = classify_approval(result, prebuilt="1.0.13")
    assert check.ok is False
    assert "on langgraph-prebuilt 1.0.13 an interrupt() inside an interceptor" in check.detail
    assert "becomes an error ToolMessage: approvals are bypassed" in check.detail
    assert "langgraph/issues/8217" in check.detail and "langgraph/issues/8394" in check.detail
    assert check.fix.startswith("install the tested set: `")


def test_the_classifier_reads_each_kind_of_result():
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.types import Interrupt

    from courseware.doctor import classify_approval

    paused = {"messages": [AIMessage("")], "__interrupt__": [Interrupt(value={"approve": "x"})]}
    assert classify_approval(paused, prebuilt="1.1.3").ok is True
    ran = {"messages": [AIMessage(""), ToolMessage("deleted", tool_call_id="1", name="x")]}
    unapproved = classify_approval(ran, prebuilt="1.0.8")
    assert unapproved.ok is False and "is skipped and the tool runs" in unapproved.detail
    assert classify_approval({"messages": []}, prebuilt="1.0.8").ok is False


# One fix, printed once; commands that run as printed.

def test_a_fix_shared_by_several_failures_is_printed_once_and_named_in_the_verdict():
    report = Report([Check("python", False, "3.10.13", "`make setup PYTHON=python3.11`"),
                     Check("pinned versions", False, "langgraph missing", "`make setup PYTHON=python3.11`"),
                     Check("tracing", True, "off")])
    text = str(report)
    assert text.count("fix: `make setup PYTHON=python3.11`") == 2  # under the first line, in the verdict
    assert "langgraph missing (fix above)" in text
    assert text.splitlines()[-1].startswith("NOT ready: 2 check(s) failed; fix: `make setup PYTHON=")


def test_printed_commands_name_the_interpreter_not_a_bare_python():
    from courseware.platforms import check_offline_settings, python_command

    assert python_command(windows=False) == ".venv/bin/python"  # the tests run in the project's .venv
    assert python_command(windows=True) == ".venv\\Scripts\\python"
    fix = Check("x", None, "", check_offline_settings().fix).fix or ""
    assert not re.search(r"(^|[`\s])python -m", fix)


def test_platforms_does_not_import_the_doctor():
    code = "import sys, courseware.platforms; print('courseware.doctor' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "False", result.stderr
    source = (ROOT / "courseware" / "platforms.py").read_text(encoding="utf-8")
    assert "from courseware.doctor" not in source and "import courseware.doctor" not in source


def test_the_preflight_sample_is_what_the_doctor_prints_today():
    from courseware.doctor import committed_sample, mask_sample, sample_report

    assert mask_sample(committed_sample()) == mask_sample(sample_report()), (
        "docs/workshop/preflight.md's sample is stale: .venv/bin/python -m courseware.doctor --update-sample")


def test_the_preflight_samples_pin_count_is_the_locks():
    # the mask hides the count across machines; on the platform the sample names it is the lock's
    import platform

    from courseware.doctor import committed_sample

    sample = committed_sample()
    named = re.search(r"platform: (\S+) (\S+), Python", sample).groups()
    if named != (platform.system(), platform.machine()):
        return  # another platform has another count of pins (environment markers)
    count = int(re.search(r"all (\d+) match", sample).group(1))
    assert count == len(read_pins(ROOT / "requirements.txt")), (
        "docs/workshop/preflight.md's pin count is not the lock's: .venv/bin/python -m courseware.doctor "
        "--update-sample")
