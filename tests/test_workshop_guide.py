"""docs/workshop/README.md: the agenda adds up to three hours and is the plan of helpers.course."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "workshop" / "README.md"
ROW = re.compile(r"^\| (\d):(\d\d)–(\d):(\d\d) \| (.+?) \| (\d+) \|([\d + ]*)\|$")


def agenda() -> list[dict]:
    rows = []
    for line in GUIDE.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            h1, m1, h2, m2, block, minutes, course = match.groups()
            rows.append({"start": int(h1) * 60 + int(m1), "end": int(h2) * 60 + int(m2), "block": block,
                         "minutes": int(minutes), "course": [int(n) for n in course.split("+") if n.strip()]})
    return rows


def test_slots_follow_each_other_and_fill_three_hours():
    rows = agenda()
    assert rows, "no agenda rows found"
    assert rows[0]["start"] == 0 and rows[-1]["end"] == 180
    for row in rows:
        assert row["end"] - row["start"] == row["minutes"], row["block"]
    for before, after in zip(rows, rows[1:], strict=False):
        assert before["end"] == after["start"], after["block"]


def test_the_agenda_is_the_workshop_plan_of_helpers_course():
    course = pytest.importorskip("helpers.course", reason="the course map is helpers/course.py")
    blocks = getattr(course, "WORKSHOP_BLOCKS", None)
    if blocks is None:
        pytest.skip("helpers.course has no WORKSHOP_BLOCKS")
    assert [row["minutes"] for row in agenda()] == [minutes for _, minutes in blocks]


def test_course_times_are_the_lesson_times_of_helpers_course():
    course = pytest.importorskip("helpers.course", reason="the course map is helpers/course.py")
    minutes = {row.name: row.minutes for row in course.LESSONS}
    for row in agenda():
        lessons = re.findall(r"notebooks/(\d\d_\w+)\.ipynb", row["block"])
        if lessons:
            assert row["course"] == [minutes[name] for name in lessons], row["block"]
