"""The course map and the estimator in courseware/course.py are the one source: README's table and
tracks, every notebook's stated times, navigation line and "What's next" links must agree with them,
and no sitting may be longer than 45 minutes."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from courseware.course import (
    COURSE_MAP_ANCHOR,
    INTERVIEW_LESSONS,
    LESSONS,
    MAX_SITTING_MINUTES,
    README_BEGIN,
    README_END,
    estimate_parts,
    lesson,
    navigation_line,
    neighbours,
    readme_block,
    stated_part_minutes,
    track_minutes,
)

ROOT = Path(__file__).resolve().parent.parent
EXISTING = [row for row in LESSONS if row.exists]
LABS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "labs" / "solutions").glob("[0-9][0-9]_*.ipynb"))
NOTEBOOKS = [row.file for row in EXISTING] + LABS
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


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_no_sitting_over_45_minutes(path):
    parts = estimate_parts(path)
    too_long = [("core path", parts.core)] + list(parts.deep_dives) + list(parts.sittings)
    too_long = [(name, e.minutes) for name, e in too_long if e.minutes > MAX_SITTING_MINUTES]
    assert not too_long, (
        f"{path}: {too_long} estimate over {MAX_SITTING_MINUTES} minutes. Keep the core path at most "
        f"{MAX_SITTING_MINUTES}: move material into optional '## N. Deep dive: <title>' sections, "
        "or split the notebook into '## Sitting N: <title>' sections (CONTRIBUTING.md, 'Times')"
    )


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_deep_dives_and_sittings_state_their_estimate(path):
    parts = estimate_parts(path)
    stated = stated_part_minutes(path)
    for heading, e in parts.deep_dives + parts.sittings:
        assert stated[heading] == [e.minutes], (
            f"{path}: '## {heading}' should carry the line '*About {e.minutes} minutes.*' right under "
            f"its heading (the estimate of its cells), found {stated[heading]}"
        )


def test_every_lab_has_its_lesson_and_a_solution():
    labs = {row.lab for row in LESSONS if row.lab}
    starters = {str(p.relative_to(ROOT)) for p in (ROOT / "labs").glob("[0-9][0-9]_*.ipynb")}
    assert labs == starters, f"labs in courseware/course.py {sorted(labs)} vs labs/ {sorted(starters)}"
    for row in LESSONS:
        if row.lab:
            assert (ROOT / row.lab_solution).exists(), f"{row.lab}: no solution {row.lab_solution}"


def test_every_notebook_has_a_row():
    listed = {row.file for row in LESSONS}
    found = {str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert not found - listed, f"notebooks missing from courseware/course.py: {sorted(found - listed)}"


def test_readme_course_table_and_tracks_are_generated_from_the_map():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert README_BEGIN in readme and README_END in readme, "README's 'The course' lost its markers"
    begin, end = readme.index(README_BEGIN), readme.index(README_END) + len(README_END)
    assert readme[begin:end] == readme_block(), (
        "README's course table or track totals differ from the notebooks' estimates: run "
        "`python -m courseware.course --write-readme` (it rewrites only the block between the markers)"
    )


def test_tracks_name_real_lessons():
    assert [lesson(n).title for n in INTERVIEW_LESSONS[-2:]] == ["Mock interview", "Drill bank"], (
        "the interview track ends with the mock interview and the drill bank")
    for number in INTERVIEW_LESSONS:
        lesson(number)


def test_navigation_line_ends_at_both_ends_of_the_course():
    assert neighbours(0)[0] is None and neighbours(LESSONS[-1].number)[1] is None
    assert navigation_line(3).startswith("[← 02 · ")
    assert f"[Course map]({COURSE_MAP_ANCHOR})" in navigation_line(0)


@pytest.mark.parametrize("row", EXISTING, ids=[row.name for row in EXISTING])
def test_notebook_states_the_time_from_the_map(row):
    prerequisites = _section(_cells(row), "Prerequisites")
    times = re.findall(r"\*\*Time:\*\* about (\d+) minutes", prerequisites)
    assert times == [str(row.minutes)], (
        f"{row.file}: '## Prerequisites and time' should say '**Time:** about {row.minutes} minutes' "
        f"(the estimate of its core path: courseware.course.estimate_parts), found {times}"
    )


@pytest.mark.parametrize("row", EXISTING, ids=[row.name for row in EXISTING])
def test_title_states_the_number_from_the_map(row):
    first = _cells(row)[0].source.strip().splitlines()[0]
    assert first.startswith(f"# {row.code} — "), (
        f"{row.file}: the title should start '# {row.code} — ' (its number in courseware.course.LESSONS), "
        f"found {first!r}"
    )
    if row.lab:
        lab_title = nbformat.read(ROOT / row.lab, as_version=4).cells[0].source.strip().splitlines()[0]
        assert lab_title.startswith(f"# Lab {row.code} — "), (
            f"{row.lab}: the title should start '# Lab {row.code} — ' (the lesson it follows), "
            f"found {lab_title!r}")


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


def test_the_essentials_track_is_an_afternoon_and_its_labs_follow_its_own_lessons():
    from courseware.course import ESSENTIALS_LABS, ESSENTIALS_LESSONS, RUNNING_AGENT_LESSONS

    total = track_minutes(ESSENTIALS_LESSONS, labs=ESSENTIALS_LABS)
    assert 210 <= total <= 285, f"the essentials track is {total} min: README promises an afternoon"
    assert set(ESSENTIALS_LABS) <= set(ESSENTIALS_LESSONS)
    assert all(lesson(n).lab for n in ESSENTIALS_LABS)
    assert all(lesson(n).exists for n in RUNNING_AGENT_LESSONS)


# -- practice: a step every 15 minutes, and a third of the self-paced track --------------------------
def _teaching_lessons():
    from courseware.course import LESSONS, PRACTICE_TITLES

    return [row for row in LESSONS if row.number > 0 and row.title not in PRACTICE_TITLES and row.exists]


@pytest.mark.parametrize("row", _teaching_lessons(), ids=lambda row: row.code)
def test_a_learner_is_never_more_than_15_minutes_from_a_practice_step(row):
    """Every teaching lesson's core path asks for a recorded prediction (or a Practice check) at
    least every `MAX_PRACTICE_GAP` estimated minutes, its *Check your understanding* closing the last
    stretch."""
    from courseware.course import MAX_PRACTICE_GAP, practice_gaps

    gaps = practice_gaps(row.file)
    assert len(gaps) >= 2, f"{row.file}: no practice step in the core path"
    assert max(gaps) <= MAX_PRACTICE_GAP, f"{row.file}: {gaps} (estimated minutes between steps)"


def test_each_prediction_cell_writes_its_guess_first_and_reveals_it_last():
    """A cell that reveals a guess starts with `guess = predict("?")` (the committed, unwritten
    prediction) and ends with `reveal(guess, ...)`, so the learner writes before the run shows the
    answer. Its committed output opens folded in JupyterLab, which previews it by its first line:
    `predict`'s prompt, never the answer; running the cell unfolds it."""
    for row in _teaching_lessons():
        for cell in nbformat.read(ROOT / row.file, as_version=4).cells:
            if cell.cell_type != "code" or "reveal(guess" not in cell.source:
                continue
            hidden = cell.metadata.get("jupyter", {}).get("outputs_hidden")
            assert hidden is True, f"{row.file} {cell.id}: output not collapsed: make notebook NB={row.file}"
            lines = [ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("%")]
            assert lines[0].startswith('guess = predict("?")  # your prediction'), (row.file, lines[0])
            text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
            first = cell.outputs[0] if cell.outputs else {}
            assert (first.get("output_type"), first.get("name")) == ("stream", "stdout"), (row.file, cell.id)
            preview = next(line for line in first["text"].splitlines() if line)
            assert preview.startswith("· no prediction yet"), (row.file, cell.id, preview)
            assert "· no guess written; the run gave" in text, (row.file, cell.id)
            last = [ln for ln in lines[-2:] if ln.startswith("reveal(guess,")]
            assert last, (row.file, lines[-1])


def test_practice_is_at_least_a_third_of_the_self_paced_track_as_readme_says():
    from courseware.course import practice_minutes, practice_share, tracks_markdown

    assert practice_share() >= 1 / 3, (practice_minutes(), practice_share())
    assert f"is {practice_minutes()} of those minutes" in tracks_markdown()


def test_lesson_00_and_contributing_state_the_practice_gap_the_estimator_enforces():
    from courseware.course import MAX_PRACTICE_GAP

    cells = nbformat.read(ROOT / "notebooks/00_start_here.ipynb", as_version=4).cells
    start = " ".join(" ".join(c.source for c in cells if c.cell_type == "markdown").split())
    assert f"at most {MAX_PRACTICE_GAP} estimated minutes apart" in start
    contributing = " ".join((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    assert f"at least every {MAX_PRACTICE_GAP} estimated minutes" in contributing


def test_every_lesson_with_a_lab_sends_the_learner_there_in_whats_next():
    from courseware.course import LESSONS

    for row in LESSONS:
        if not row.lab or not row.exists:
            continue
        cells = nbformat.read(ROOT / row.file, as_version=4).cells
        last = next(c.source for c in cells
                    if c.cell_type == "markdown" and c.source.startswith("## What's next"))
        assert f"(../{row.lab})" in last, f"{row.file}: What's next does not link {row.lab}"
        assert "no lab" not in last, f"{row.file}: What's next says there is no lab"


def test_every_teaching_lesson_is_followed_by_a_lab():
    missing = [row.code for row in _teaching_lessons() if not row.lab]
    assert not missing, f"teaching lessons without a lab: {missing}"
