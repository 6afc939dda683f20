"""The course map in helpers/course.py is the one source: README's table, every notebook's time,
navigation line and "What's next" links must agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from helpers.course import (
    COURSE_MAP_ANCHOR,
    INTERVIEW_LESSONS,
    LESSONS,
    WORKSHOP_BLOCKS,
    lesson,
    markdown_table,
    navigation_line,
    neighbours,
)

ROOT = Path(__file__).resolve().parent.parent
EXISTING = [row for row in LESSONS if (ROOT / row.file).exists()]
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _cells(row):
    return nbformat.read(ROOT / row.file, as_version=4).cells


def _section(cells, heading: str) -> str:
    """The markdown of one `## heading` section (up to the next `##`)."""
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    match = re.search(rf"^## {re.escape(heading)}.*?(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"no '## {heading}' section"
    return match.group(0)


def test_numbers_and_files_follow_the_map():
    assert [row.number for row in LESSONS] == list(range(len(LESSONS)))
    for row in LESSONS:
        assert row.file == f"notebooks/{row.code}_{row.name[3:]}.ipynb"
        assert row.lab is None or row.lab.startswith(f"labs/{row.code}_"), row.lab
        assert 5 <= row.minutes <= 35, f"{row.code}: no lesson over ~35 minutes"


def test_every_notebook_has_a_row():
    listed = {row.file for row in LESSONS}
    found = {str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert not found - listed, f"notebooks missing from helpers/course.py: {sorted(found - listed)}"


def test_readme_course_table_is_generated_from_the_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, (
        "README's course table differs from helpers/course.py: paste the output of "
        "`python -m helpers.course` into README's 'The course' section"
    )


def test_tracks_name_real_lessons():
    assert INTERVIEW_LESSONS[-1] == 11
    for number in INTERVIEW_LESSONS:
        lesson(number)
    assert 150 <= sum(minutes for _, minutes in WORKSHOP_BLOCKS) <= 190, "a workshop is about 3 hours"


def test_navigation_line_ends_at_both_ends_of_the_course():
    assert neighbours(0)[0] is None and neighbours(LESSONS[-1].number)[1] is None
    assert navigation_line(3).startswith("[← 02 · ")
    assert f"[Course map]({COURSE_MAP_ANCHOR})" in navigation_line(0)


@pytest.mark.parametrize("row", EXISTING, ids=[row.name for row in EXISTING])
def test_notebook_states_the_time_from_the_map(row):
    prerequisites = _section(_cells(row), "Prerequisites")
    times = re.findall(r"\*\*Time:\*\* about (\d+) minutes\.", prerequisites)
    assert times == [str(row.minutes)], (
        f"{row.file}: '## Prerequisites and time' should say '**Time:** about {row.minutes} minutes.' "
        f"(helpers/course.py is the one source), found {times}"
    )


@pytest.mark.parametrize("row", EXISTING, ids=[row.name for row in EXISTING])
def test_title_cell_ends_with_the_navigation_line(row):
    title = _cells(row)[0].source.strip().splitlines()[-1]
    links = LINK.findall(title)
    previous, following = neighbours(row.number)
    wanted = []
    if previous is not None:
        wanted.append((f"← {previous.code} · ", f"{previous.name}.ipynb"))
    wanted.append(("Course map", COURSE_MAP_ANCHOR))
    if following is not None:
        wanted.append((f"{following.code} · ", f"{following.name}.ipynb"))
    assert [href for _, href in links] == [href for _, href in wanted], (
        f"{row.file}: the title cell should end with\n  {navigation_line(row.number)}\nfound\n  {title}"
    )
    for (text, _), (start, _) in zip(links, wanted, strict=False):  # a length mismatch fails above
        assert text.startswith(start), f"{row.file}: link text {text!r} should start with {start!r}"


@pytest.mark.parametrize("row", EXISTING, ids=[row.name for row in EXISTING])
def test_whats_next_links_the_next_lesson_and_the_lab(row):
    hrefs = [href for _, href in LINK.findall(_section(_cells(row), "What's next"))]
    _, following = neighbours(row.number)
    if following is not None:
        wanted = f"{following.name}.ipynb"
        assert wanted in hrefs, f"{row.file}: What's next should link {wanted}"
    if row.lab is not None:
        assert f"../{row.lab}" in hrefs, f"{row.file}: What's next should link the lab ../{row.lab}"
