"""The workshop's agenda (courseware.workshop): computed from the course's estimate, it fits the
session, every in-room lab comes after the sections its checks point to, each highlights block
runs on its own from the cells it names, and docs/workshop/README.md shows exactly this agenda."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from courseware import course, workshop
from courseware.course import estimate_parts, round_to_five

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "workshop" / "README.md"


def test_the_blocks_follow_each_other_and_fill_the_session():
    blocks = workshop.agenda()
    assert blocks[0].start == 0
    for before, after in zip(blocks, blocks[1:], strict=False):
        assert before.start + before.minutes == after.start, after.title
    assert workshop.total() == workshop.LENGTH
    low, high = workshop.WRAP_UP
    assert blocks[-1].kind == "wrap-up" and low <= blocks[-1].minutes <= high, (
        f"the wrap-up gets {blocks[-1].minutes} min: the blocks above take "
        f"{workshop.LENGTH - blocks[-1].minutes} of {workshop.LENGTH}; re-plan courseware.workshop.PLAN")
    assert sum(b.kind == "break" for b in blocks) >= 2


def test_each_block_is_the_course_estimate_times_its_room_factor():
    for block in workshop.agenda():
        if block.part is None or block.fixed is not None:
            continue
        exact = workshop.block_estimate(block.part, block.kind == "highlights")
        assert block.minutes == round_to_five(exact * workshop.ROOM_FACTOR[block.kind]), block.title
        assert 1.2 <= workshop.ROOM_FACTOR[block.kind] <= 2.0


def test_a_whole_core_path_costs_what_the_lesson_states_less_the_learners_own_predicting():
    # the block estimate is the lesson's own arithmetic without the three terms the room factor
    # was not measured with (the instructor runs, reads out and explains those)
    part = workshop.Part("notebooks/01_sequential_vs_gather.ipynb", ("core",))
    core = estimate_parts(part.notebook).core
    own = (core.predictions * course.SECONDS_PER_PREDICTION
           + core.output_lines * course.SECONDS_PER_OUTPUT_LINE + core.errors * course.SECONDS_PER_ERROR) / 60
    assert round_to_five(workshop.block_estimate(part)) == round_to_five(core.exact_minutes - own)
    assert own > 0


def test_no_block_is_longer_than_a_sitting():
    for block in workshop.agenda():
        assert block.minutes <= 45, block.title


LOOK_AT = re.compile(r'section\((LESSON|"\d\d_\w+"), ["\']([^"\']+)["\']\)')


def lab_prerequisites(lab: str) -> set[tuple[str, str]]:
    """(lesson notebook, `##` section) of every heading the lab's checks tell a learner to look at."""
    number = Path(lab).stem[:2]
    source = (ROOT / "helpers" / "labs" / f"lab{number}.py").read_text(encoding="utf-8")
    lesson = re.search(r'^LESSON = "(\d\d_\w+)"', source, re.M).group(1)
    found = set()
    for match in LOOK_AT.finditer(source):
        name = lesson if match.group(1) == "LESSON" else match.group(1).strip('"')
        heading = match.group(2).replace("`", "").split(". ", 1)[-1]
        notebook = f"notebooks/{name}.ipynb"
        cells = workshop.cells_of(notebook)
        owner = f"(no heading {heading!r})"
        for title, indices in workshop.sections(cells):
            text = "\n".join(workshop._source(cells[i]) for i in indices
                             if cells[i]["cell_type"] == "markdown").replace("`", "")
            if re.search(r"^#{2,4} (?:\d+\. )?" + re.escape(heading), text, re.M):
                owner = title
                break
        found.add((notebook, owner))
    return found


def test_every_in_room_lab_comes_after_what_its_checks_point_to():
    taught: set[tuple[str, str]] = set()
    for block in workshop.agenda():
        if block.kind == "lab":
            for notebook, heading in lab_prerequisites(block.part.notebook):
                assert (notebook, heading) in taught, (
                    f"{block.title}: its checks point to {notebook} § {heading}, "
                    "which no earlier block teaches")
        if block.part is not None and block.part.notebook.startswith("notebooks/"):
            taught |= {(block.part.notebook, h) for h in block.sections}


def test_lab_03_could_not_be_in_the_room_after_lesson_03_alone():
    # the check above has teeth: lab 03's checks point into lesson 08 (interceptors)
    assert any(nb == "notebooks/08_interceptors.ipynb"
               for nb, _ in lab_prerequisites("labs/03_error_policy.ipynb"))


def test_the_guide_shows_this_agenda():
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(workshop.BEGIN_MARK) + len(workshop.BEGIN_MARK)
    end = text.index(workshop.END_MARK)
    assert text[start:end].strip() == workshop.markdown_table().strip(), (
        "docs/workshop/README.md's agenda is stale: run python -m courseware.workshop write-guide")


@pytest.mark.parametrize("block", [b for b in workshop.agenda() if b.kind == "highlights"],
                         ids=lambda b: Path(b.part.notebook).stem)
def test_a_highlights_block_runs_alone_from_the_cells_it_names(block):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    source = nbformat.read(ROOT / block.part.notebook, as_version=4)
    alone = nbformat.v4.new_notebook(metadata=source.metadata)
    alone.cells = [source.cells[i] for i in block.run_cells]
    client = nbclient.NotebookClient(alone, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "notebooks")}},
                                     allow_errors=True)
    client.execute()
    errors = []
    for cell in alone.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and "raises-exception" not in tags:
                errors.append(f"cell [{cell.get('execution_count')}]: {output['ename']}: {output['evalue']}")
    assert not errors, "\n".join(errors)
    assert workshop.execution_counts(block.part.notebook, list(block.run_cells))


def test_the_facilitator_script_is_printed_from_the_agenda():
    facilitator = ROOT / "docs" / "workshop" / "facilitator.md"
    assert facilitator.read_text(encoding="utf-8") == workshop.facilitator_markdown(), (
        "docs/workshop/facilitator.md is stale: run python -m courseware.workshop write-guide")
    for block in workshop.agenda():
        if block.kind != "break":
            script = workshop.script_of(block)
            assert {"say", "show", "checkpoint", "cut", "helpers", "questions"} <= set(script), block.title
