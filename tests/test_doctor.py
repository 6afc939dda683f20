from helpers.doctor import Report, check_model, check_tracing, read_pins, run_checks


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


def test_real_model_with_key_is_a_note_not_a_failure():
    check = check_model({"TOOLNODE_LAB_MODEL": "openai", "OPENAI_API_KEY": "sk-test"})
    assert check.ok is None and "ChatOpenAI" in check.detail


def test_tracing_on_fails():
    assert check_tracing({"LANGSMITH_TRACING": "true"}).ok is False
    assert check_tracing({}).ok is True


def test_failed_report_is_not_ok(tmp_path):
    from helpers.doctor import check_pins

    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nlanggraph==0.0.1\nnot-a-real-package-xyz==1.0\n")
    assert read_pins(req) == {"langgraph": "0.0.1", "not-a-real-package-xyz": "1.0"}
    check = check_pins(req)
    assert check.ok is False and "missing" in check.detail and "(want 0.0.1)" in check.detail
    report = Report([check])
    assert not report.ok and "NOT ready" in str(report)
