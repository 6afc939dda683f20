"""The instructor's offline tools: collecting lab notebooks (scripts/collect_labs.py) and tallying
the attendees' doctor outputs (scripts/doctor_tally.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


collect = _load("collect_labs")
tally = _load("doctor_tally")

STARTER = ROOT / "labs" / "01_make_it_concurrent.ipynb"
SOLUTION = ROOT / "labs" / "solutions" / "01_make_it_concurrent.ipynb"


def test_learners_come_from_subfolders_or_name_prefixes(tmp_path):
    (tmp_path / "ada" / "labs").mkdir(parents=True)
    shutil.copy(STARTER, tmp_path / "ada" / "labs" / STARTER.name)
    shutil.copy(STARTER, tmp_path / f"bob_{STARTER.name}")
    shutil.copy(STARTER, tmp_path / f"chen-li-{STARTER.name}")
    (tmp_path / "ada" / ".ipynb_checkpoints").mkdir()
    shutil.copy(STARTER, tmp_path / "ada" / ".ipynb_checkpoints" / STARTER.name)
    (tmp_path / "notes.ipynb").write_text("{}", encoding="utf-8")
    found = collect.discover(tmp_path)
    assert sorted((who, stem) for who, stem, _ in found) == [
        ("ada", STARTER.stem), ("bob", STARTER.stem), ("chen-li", STARTER.stem)]


def test_the_summary_shows_who_is_stuck_on_which_exercise():
    rows = [
        {"notebook": "ada/01_make_it_concurrent.ipynb", "exercise": "q1", "status": "passed", "detail": ""},
        {"notebook": "ada/01_make_it_concurrent.ipynb", "exercise": "q2", "status": "not yet",
         "detail": "q2 — not yet: the capital was looked up after its city"},
        {"notebook": "bob/01_make_it_concurrent.ipynb", "exercise": "q1", "status": "error",
         "detail": "NameError: name 'asyncio' is not defined"},
        {"notebook": "bob/01_make_it_concurrent.ipynb", "exercise": "q2", "status": "not yet",
         "detail": "q2 — not yet: the capital was looked up after its city"},
    ]
    text = collect.summary(rows, ["ada", "bob"])
    lines = text.splitlines()
    assert lines[1].startswith("ada") and "✔" in lines[1] and "1/2" in lines[1]
    assert lines[2].startswith("bob") and "✗" in lines[2] and "0/2" in lines[2]
    assert "01 q2: 2 of 2" in text and "ada, bob — q2 — not yet: the capital" in text
    assert "01 q1: 1 of 2" in text and "bob — NameError" in text
    assert len(lines) <= 25, "one screen"


@pytest.mark.skipif(os.environ.get("TOOLNODE_LAB_HANDOUT_TEST") != "1",
                    reason="runs two lab notebooks headless (~45 s): make handout-test")
def test_collecting_runs_the_labs_report(tmp_path, capsys):
    (tmp_path / "ada").mkdir()
    shutil.copy(SOLUTION, tmp_path / "ada" / SOLUTION.name)
    shutil.copy(STARTER, tmp_path / f"bob_{STARTER.name}")
    assert collect.main([str(tmp_path), "--json", str(tmp_path / "rows.json")]) == 0
    out = capsys.readouterr().out
    ada = next(line for line in out.splitlines() if line.startswith("ada"))
    bob = next(line for line in out.splitlines() if line.startswith("bob"))
    assert "·" not in ada and ada.count("✔") >= 2
    assert "✔" not in bob and "stub" in out


DOCTOR = """[ok  ] python: 3.12.4 (need >= 3.11)
[ok  ] platform: {platform}, Python 3.12.4: tested (Python 3.11–3.13 on Linux, macOS, Windows)
[ok  ] jupyterlab offline: no update check, no news fetch
{pins}
[note] proxy: HTTPS_PROXY is set; NO_PROXY has 127.0.0.1
[ok  ] offline graph: llm → tools → llm answered 'Paris: sunny, 25 °C'
{verdict}
"""


def test_the_tally_counts_ready_platforms_and_failing_lines(tmp_path):
    ok_pins = "[ok  ] pinned versions: all 151 match requirements.txt"
    bad_pins = "[FAIL] pinned versions: 3 differ from requirements.txt → make setup"
    ready, not_ready = "ready: the course runs offline here", "NOT ready: 1 check(s) failed; apply the fixes"
    for who, plat, pins, verdict in [("ada", "Linux x86_64", ok_pins, ready),
                                     ("bob", "macOS arm64", bad_pins, not_ready),
                                     ("chen", "Windows AMD64", bad_pins, not_ready),
                                     ("dee", "macOS arm64", ok_pins, ready)]:
        (tmp_path / f"{who}.txt").write_text(DOCTOR.format(platform=plat, pins=pins, verdict=verdict),
                                             encoding="utf-8")
    (tmp_path / "eve.txt").write_text("[ok  ] python: 3.11.9 (need >= 3.11)\n", encoding="utf-8")
    reports = tally.collect(tmp_path)
    text = tally.summary(reports)
    assert text.startswith("5 doctor reports: 2 ready, 2 not ready, 1 without a verdict line")
    assert "macos-arm64              3.12  1 / 2" in text
    assert re.search(r"^  pinned versions +2  bob, chen$", text, re.M), text
    assert "proxy ×4" in text
    assert tally.make_args(reports) == "PLATFORMS=linux-x86_64,macos-arm64,windows-x86_64 PYTHONS=3.12"


def test_the_tally_reads_this_machines_real_doctor_output(tmp_path):
    from courseware import doctor
    from courseware.platforms import matching_target

    (tmp_path / "me.txt").write_text(str(doctor.run_checks()) + "\n", encoding="utf-8")
    report = tally.read_report(tmp_path / "me.txt")
    here = matching_target()
    assert report.ready is not None and report.python
    assert report.platform == (here.name if here else report.platform)
