"""Every committed notebook is fit for strict nbval: executed in order from one clean run, normalised,
with the course's fixed opening and closing, errors only in cells tagged to raise."""

from __future__ import annotations

import nbformat
import pytest

from courseware.nbtools import check, course_notebooks, saved_lesson_note

NOTEBOOKS = course_notebooks()


def test_the_course_has_its_first_lessons():
    names = [path.name for path in NOTEBOOKS]
    assert "00_start_here.ipynb" in names and "01_sequential_vs_gather.ipynb" in names, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_fit_to_commit(path):
    raw = path.read_text(encoding="utf-8")
    problems = check(nbformat.reads(raw, as_version=4), raw)
    first = saved_lesson_note(path)
    assert not problems, (first + "\n" if first else "") + f"{path.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_lessons_are_prose_led(path):
    cells = nbformat.read(path, as_version=4).cells
    markdown = sum(c.cell_type == "markdown" for c in cells)
    code = sum(c.cell_type == "code" for c in cells)
    assert markdown >= code, f"{path.name}: {markdown} markdown vs {code} code cells; explain more, cut code"
