"""helpers.platforms: the lock read as pip reads it, this machine's facts, and what breaks where."""

from __future__ import annotations

from helpers.doctor import run_checks
from helpers.platforms import (
    SUPPORTED_PYTHONS,
    TARGETS,
    Pin,
    check_platform,
    known_breakages,
    matching_target,
    pins_for,
    read_lock,
    venv_mismatches,
)


def test_a_pin_applies_only_where_its_marker_is_true():
    darwin = Pin("appnope", "1.0.0", "sys_platform == 'darwin'")
    by_name = {target.name: target for target in TARGETS}
    assert darwin.applies(by_name["macos-arm64"].marker_environment("3.12"))
    assert not darwin.applies(by_name["windows-x86_64"].marker_environment("3.12"))
    assert Pin("anyio", "4.16.0").applies({})
    old = Pin("overrides", "7.7.0", "python_full_version < '3.12'")
    assert [old.applies(by_name["linux-x86_64"].marker_environment(p)) for p in SUPPORTED_PYTHONS] == [
        True, False, False
    ]


def test_pins_for_reads_a_lock_as_pip_would(tmp_path):
    lock = tmp_path / "requirements.txt"
    lock.write_text("# header\nanyio==4.16.0\npywin32==312 ; sys_platform == 'win32'\n", encoding="utf-8")
    windows = next(t for t in TARGETS if t.name == "windows-x86_64").marker_environment("3.13")
    assert pins_for(windows, lock) == {"anyio": "4.16.0", "pywin32": "312"}
    assert [pin.marker for pin in read_lock(lock)] == ["", "sys_platform == 'win32'"]


def test_this_environment_matches_the_lock():
    assert venv_mismatches() == [] or venv_mismatches() == ["JupyterLab's offline settings missing"], (
        "fix: make setup (or pip install -r requirements.txt -e .)"
    )


def test_every_laptop_maps_to_its_target():
    assert matching_target("Windows", "AMD64").name == "windows-x86_64"
    assert matching_target("Darwin", "arm64").name == "macos-arm64"
    assert matching_target("Darwin", "x86_64").name == "macos-x86_64"
    assert matching_target("Linux", "aarch64").name == "linux-aarch64"
    assert matching_target("Linux", "x86_64").name == "linux-x86_64"
    assert matching_target("Windows", "ARM64") is None
    assert matching_target("Linux", "riscv64") is None


def test_the_doctor_reports_the_platform_and_python():
    names = [check.name for check in run_checks(env={}).checks]
    assert "platform" in names and "jupyterlab offline" in names
    assert check_platform("Linux", "x86_64", (3, 12, 1)).ok is True


def test_python_outside_the_tested_range_is_said_with_the_fix():
    newer = check_platform("Darwin", "arm64", (3, 14, 0))
    assert newer.ok is None and "outside the tested range 3.11–3.13" in newer.detail
    assert "PYTHON=python3.13" in newer.fix
    older = check_platform("Linux", "x86_64", (3, 10, 12))
    assert older.ok is False and "3.11 or newer" in older.detail


def test_windows_names_the_mcp_stdio_breakage_and_the_encoding():
    found = known_breakages("Windows", (3, 12), encoding="cp1252")
    text = " ".join(f"{b.where} {b.what} {b.fix}" for b in found)
    assert "lesson 10" in text and "fileno" in text and "python-sdk#1103" in text
    assert "helpers.mcp_client" in text
    assert "PYTHONUTF8=1" in text
    assert known_breakages("Linux", (3, 12)) == []
    note = check_platform("Windows", "AMD64", (3, 12, 1))
    assert note.ok is None and "lesson 10" in note.detail
