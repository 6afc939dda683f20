"""courseware.platforms: the lock read as pip reads it, this machine's facts, and what breaks where."""

from __future__ import annotations

from courseware.doctor import run_checks
from courseware.platforms import (
    SUPPORTED_PYTHONS,
    TARGETS,
    UV_VERSION,
    Pin,
    check_platform,
    drift_note,
    known_breakages,
    matching_target,
    offline_hint,
    pins_for,
    read_lock,
    setup_fix,
    venv_mismatches,
    venv_rebuild_reason,
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
    assert "make setup PYTHON=python3.1" in newer.fix  # a tested Python found on this machine's PATH
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


# make setup: when the venv is made again, and the commands its messages print.

def test_a_venv_of_the_wrong_python_is_made_again(tmp_path):
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    me = ((3, 11, 7), "/py/3.11.7")
    assert "Python 3.10.13, outside the tested 3.11–3.13" in venv_rebuild_reason(
        venv, False, me, ((3, 10, 13), "/py/3.10.13"))
    assert venv_rebuild_reason(venv, False, me, ((3, 12, 1), "/py/3.12.1")) is None  # not asked: kept
    other = venv_rebuild_reason(venv, True, me, ((3, 12, 1), "/py/3.12.1"))
    assert "made by Python 3.12.1" in other and "asked for (3.11.7" in other
    assert venv_rebuild_reason(venv, True, me, ((3, 11, 7), "/py/3.11.7")) is None
    newer = ((3, 14, 0), "/py/3.14.0")
    assert venv_rebuild_reason(venv, False, me, newer) is not None  # a tested Python is at hand
    assert venv_rebuild_reason(venv, False, newer, newer) is None  # 3.14 asked for 3.14: as asked
    assert venv_rebuild_reason(tmp_path / "none", True, me, None) is None  # nothing to rebuild


def test_a_venv_whose_python_does_not_run_is_made_again(tmp_path):
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    assert "does not run" in venv_rebuild_reason(venv)


def test_the_setup_fix_names_a_python_found_here():
    only_312 = {"python3.12": "/usr/bin/python3.12"}.get
    assert setup_fix(True, windows=False) == "`make setup`"
    assert setup_fix(False, windows=False, which=only_312) == "`make setup PYTHON=python3.12`"
    none = setup_fix(False, windows=False, which=lambda name: None)
    assert none.startswith("install Python 3.11") and "`make setup PYTHON=python3.11`" in none
    assert setup_fix(False, windows=True).startswith("`py -3.11 -m venv --clear .venv; .venv\\Scripts")


def test_offline_fixes_name_the_wheelhouse_or_how_to_get_one(tmp_path):
    elsewhere = offline_hint(tmp_path)
    assert "make offline-bundle" in elsewhere and "make offline-install" in elsewhere
    (tmp_path / "wheelhouse").mkdir()
    (tmp_path / "wheelhouse" / "CONTENTS.txt").write_text("# gathered\n")
    assert offline_hint(tmp_path) == (
        "with no network: `make offline-install` (installs from the wheelhouse/ here)")


def test_drift_is_one_line_with_the_fix():
    note = drift_note(["langchain-core 1.8.2 (want 1.8.3)"] * 5)
    assert "\n" not in note and "and 2 more" in note and "this runs anyway" in note
    assert "Fix: `make setup` (with no network:" in note


def test_the_makefile_and_the_installer_use_one_uv():
    from pathlib import Path

    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text(encoding="utf-8")
    assert f"UV_VERSION := {UV_VERSION}\n" in makefile
