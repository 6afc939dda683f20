"""The workshop's agenda (courseware.workshop): computed from the course's estimate, it fits the
session with realistic room time (the opening, typing live at a typing rate, the hardest block at a
fresh hour, a named buffer), every in-room lab comes after the sections its checks point to, every
reference the script, the run sheet and the demo table make names something inside its block, and
every file the plan prints is today's."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from courseware import course, workshop
from courseware.course import estimate_parts, round_to_five

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = workshop.agenda()
TAUGHT = [b for b in BLOCKS if b.part is not None]


def test_the_blocks_follow_each_other_and_fill_the_session():
    assert BLOCKS[0].start == 0
    for before, after in zip(BLOCKS, BLOCKS[1:], strict=False):
        assert before.end == after.start, after.title
    assert workshop.total() == workshop.LENGTH == 180
    low, high = workshop.WRAP_UP
    assert low == sum(m for _, m in BLOCKS[-1].items)
    assert BLOCKS[-1].kind == "wrap-up" and low <= BLOCKS[-1].minutes <= high, (
        f"the wrap-up gets {BLOCKS[-1].minutes} min: the blocks above take "
        f"{workshop.LENGTH - BLOCKS[-1].minutes} of {workshop.LENGTH}; re-plan courseware.workshop.PLAN")
    assert sum(b.kind == "break" for b in BLOCKS) >= 2


def test_each_block_is_the_sum_of_its_steps_at_their_room_prices():
    for block in TAUGHT:
        cells = workshop.cells_of(block.part.notebook)
        total = workshop.RUN_MARGIN_MINUTES * workshop.ROOM_FACTOR[block.kind]
        for step in block.steps:
            chosen = [cells[i] for i in workshop.step_cells(block, step)]
            if step.mode == "type":
                price = workshop.typed_characters(chosen) / workshop.LIVE_CHARS_PER_MINUTE
            else:
                estimate = course.estimate_cells(chosen, margin=0)
                own = replace(estimate, predictions=0, output_lines=0, errors=0).exact_minutes
                factor = workshop.ROOM_FACTOR["lab" if step.mode == "pairs" else block.kind]
                price = own * factor
            assert workshop.step_minutes(block, step) == pytest.approx(price), (block.title, step.where)
            total += price
        assert block.minutes == round_to_five(total + block.slack), block.title
        assert 1.2 <= min(workshop.ROOM_FACTOR.values()) and max(workshop.ROOM_FACTOR.values()) <= 2.0


def test_a_whole_core_path_costs_what_the_lesson_states_less_the_learners_own_predicting():
    # the block estimate is the lesson's own arithmetic without the three terms the room factor
    # was not measured with (the instructor runs, reads out and explains those)
    part = workshop.Part("notebooks/01_sequential_vs_gather.ipynb", ("core",))
    core = estimate_parts(part.notebook).core
    own = (core.predictions * course.SECONDS_PER_PREDICTION
           + core.output_lines * course.SECONDS_PER_OUTPUT_LINE + core.errors * course.SECONDS_PER_ERROR) / 60
    assert round_to_five(workshop.block_estimate(part)) == round_to_five(core.exact_minutes - own)
    assert own > 0


@pytest.mark.parametrize("block", TAUGHT, ids=lambda b: b.title.split(" · ")[0])
def test_the_steps_cover_the_block_exactly_once(block):
    covered = [i for step in block.steps for i in workshop.step_cells(block, step)]
    assert len(covered) == len(set(covered)), f"{block.title}: two steps share a cell"
    wanted = set(workshop.selected(block.part)[1])
    if block.kind == "highlights":
        wanted |= set(workshop.borrowed(block.part))
    assert set(covered) == wanted, f"{block.title}: cells no step covers: {sorted(wanted - set(covered))}"


def test_a_block_shown_from_its_lesson_needs_nothing_it_skips():
    # outside a highlights block the lesson is run section by section: what the block shows must not
    # read a name that only a skipped section defines
    for block in TAUGHT:
        if block.kind != "highlights":
            assert workshop.borrowed(block.part) == [], (
                f"{block.title} needs cells outside it: cover their section, or make it a highlights block")


def test_no_block_is_longer_than_a_sitting():
    for block in BLOCKS:
        assert block.minutes <= 45, block.title


def test_the_opening_has_realistic_room_time():
    low, high = workshop.OPENING
    assert (low, high) == (20, 25)
    assert low <= workshop.opening_minutes(BLOCKS) <= high
    welcome = BLOCKS[0]
    assert welcome.kind == "welcome" and welcome.minutes == sum(m for _, m in welcome.items)
    said = " ".join(text for text, _ in welcome.items)
    for item in ("code of conduct", "housekeeping", "sticky notes", "pairs", "shared notes"):
        assert item in said, item


def test_live_coding_is_priced_at_a_typing_rate_not_a_reading_rate():
    # the Carpentries' budget, as measured: 25,128 characters typed live in 490 teaching minutes
    assert workshop.LIVE_CHARS_PER_MINUTE == round(25_128 / 490)
    typed = workshop.typed_steps(BLOCKS)
    assert typed, "no block types live"
    for block, step in typed:
        cells = workshop.cells_of(block.part.notebook)
        chosen = [cells[i] for i in workshop.step_cells(block, step)]
        reading = workshop.ROOM_FACTOR[block.kind] * course.estimate_cells(chosen, margin=0).exact_minutes
        typing = workshop.step_minutes(block, step)
        assert typing > 5 * reading, (block.title, typing, reading)
        # the lesson's code the block shows would not fit if it were all typed
        _, everything = workshop.selected(block.part)
        setup = next(ix for h, ix in workshop.sections(cells) if h == "Setup")
        all_code = [cells[i] for i in everything if i not in setup]
        assert workshop.typed_characters(all_code) / workshop.LIVE_CHARS_PER_MINUTE > block.minutes


def test_the_hardest_block_comes_after_a_break_while_the_room_is_fresh():
    hardest = workshop.hardest_block(BLOCKS)
    before = BLOCKS[BLOCKS.index(hardest) - 1]
    assert before.kind == "break", "the hardest block starts right after a break"
    assert hardest.start < workshop.LENGTH * 2 / 3, "not in the last third of the session"
    taught = [b for b in BLOCKS if b.part is not None]
    assert hardest not in (taught[0], taught[-1])
    assert sum(b.role == "hardest" for b in BLOCKS) == 1


def test_the_hardest_block_alone_has_planned_slack_after_its_steps():
    # typing along is where a room's pace varies most: its minutes hold the estimate plus the slack,
    # and the last cue leaves the slack at the end of the block
    hardest = workshop.hardest_block(BLOCKS)
    assert hardest.slack >= 5
    assert hardest.minutes >= hardest.estimate + hardest.slack - 2.5
    assert hardest.cues[-1][0] <= hardest.end - hardest.slack
    assert all(b.slack == 0 for b in BLOCKS if b is not hardest)
    assert f"+ {hardest.slack} slack" in workshop.markdown_table()


def test_a_step_typed_live_has_a_decision_cue_halfway_and_the_slack_says_what_it_is_for():
    # the typed step's cut (paste instead of type) gives time back only while the typing lasts: the
    # cue to decide comes halfway through it, not in the slack at the block's end
    script = (ROOT / "docs" / "workshop" / "facilitator.md").read_text(encoding="utf-8")
    sheet = (ROOT / "docs" / "workshop" / "run-sheet.md").read_text(encoding="utf-8")
    typed = workshop.typed_steps(BLOCKS)
    assert typed
    for block, step in typed:
        index = block.steps.index(step)
        begins = block.cues[index][0]
        ends = block.cues[index + 1][0] if index + 1 < len(block.steps) else block.end - block.slack
        (at, _, text), = block.decisions
        assert begins < at < ends and abs(at - (begins + ends) / 2) <= 1, (at, begins, ends)
        first = block.cuts[0]
        assert first.where == step.where and first.instead, "the first cut shows the typed step instead"
        half = workshop.halfway_saves(block.saves)
        assert 0 < half < block.saves[0]
        assert workshop.render(first.how) in text and f"gives back about {half} min" in text
        assert "fewer than half the room" in text
        chunk = script.split(f"## {workshop.clock(block.start)}–", 1)[1].split("\n## ", 1)[0]
        assert f"| {workshop.clock(at)} | **decide** | {text} |" in chunk
        start = f"| {workshop.clock(block.start)} |"
        row = next(line for line in sheet.splitlines() if line.startswith(start))
        assert f"{workshop.clock(at)} **halfway: first cut?**" in row
        slack = next(line for line in chunk.splitlines()
                     if line.startswith(f"| {workshop.clock(block.end - block.slack)} | slack |"))
        assert "questions" in slack and "typo" in slack and "next block" in slack
        assert "cut" not in slack, "the slack comes after the typed step: its cut is moot by then"
    assert all(not b.decisions for b in BLOCKS if all(s.mode != "type" for s in b.steps))
    guide = (ROOT / "docs" / "workshop" / "README.md").read_text(encoding="utf-8")
    hardest = workshop.hardest_block(BLOCKS)
    assert f"Halfway through its typing ({workshop.clock(hardest.decisions[0][0])})" in guide


def test_a_block_without_a_cut_for_its_typed_step_is_refused():
    hardest = next(b for b in workshop.PLAN if b.role == "hardest")
    with pytest.raises(LookupError, match="first cut"):
        workshop.agenda((replace(hardest, cuts=hardest.cuts[1:]),))


def test_the_late_plan_sends_you_to_the_next_blocks_first_cut():
    # a checkpoint is a block's end: its own cuts are past
    late = workshop.late_markdown(BLOCKS)
    assert "the next block's first cut" in late and "that block's first cut" not in late


def test_the_room_never_goes_two_taught_blocks_without_an_exercise():
    # the Carpentries' rhythm: learners do something at least every block or two, not only listen
    taught = [b for b in BLOCKS if b.part is not None]
    for first, second in zip(taught, taught[1:], strict=False):
        assert first.exercises or second.exercises, (first.title, second.title)
    first_break = next(b for b in BLOCKS if b.kind == "break")
    after_break = [b for b in taught if b.start > first_break.start]
    assert sum(b.exercises for b in after_break) >= 20, "the second half is listening only"


def test_the_buffer_is_named_last_and_its_cuts_give_time_back():
    buffer = workshop.buffer_block(BLOCKS)
    assert sum(b.role == "buffer" for b in BLOCKS) == 1
    after = BLOCKS[BLOCKS.index(buffer) + 1]
    assert after.kind == "wrap-up", "the buffer is the last block before the wrap-up"
    assert buffer.cuts and buffer.cuts[-1].where == "" and buffer.saves[-1] == buffer.minutes
    assert all(0 < saved <= buffer.minutes for saved in buffer.saves)
    assert list(buffer.saves) == sorted(buffer.saves), "the buffer's cuts go from small to whole"
    late = workshop.late_markdown(BLOCKS)
    assert buffer.title in late and f"gives back {buffer.minutes} min" in late


def test_every_block_has_a_cut_or_says_why_not():
    for block in BLOCKS:
        if block.kind != "break":
            assert block.cuts or block.never_cut, block.title
            assert len(block.saves) == len(block.cuts)


def test_teaching_and_exercises_add_up_and_cues_run_in_order():
    for block in BLOCKS:
        assert block.teaching + block.exercises == block.minutes, block.title
        if block.kind == "lab":
            assert block.exercises > block.teaching
        starts = [at for at, _ in block.cues]
        assert starts == sorted(starts), block.title
        if starts:
            assert starts[0] == block.start and starts[-1] < block.end, block.title


def test_every_teaching_block_has_objectives_and_key_points():
    for block in TAUGHT:
        assert block.objectives and block.key_points, block.title


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
    for block in BLOCKS:
        if block.kind == "lab":
            for notebook, heading in lab_prerequisites(block.part.notebook):
                assert (notebook, heading) in taught, (
                    f"{block.title}: its checks point to {notebook} § {heading}, "
                    "which no earlier block teaches")
        if block.part is not None and block.part.notebook.startswith("notebooks/"):
            taught |= {(block.part.notebook, h) for h in block.sections}


def test_the_homework_takes_every_lesson_and_lab_after_the_room_and_each_lab_after_what_it_needs():
    from courseware.course import LESSONS

    order = list(workshop.HOMEWORK)
    assert len(order) == len(set(order))
    for row in LESSONS:
        if row.number >= 2:
            assert row.file in order, row.file
        if row.lab:
            assert row.lab in order, row.lab
    for lab in (p for p in order if p.startswith("labs/")):
        module = ROOT / "helpers" / "labs" / f"lab{Path(lab).stem[:2]}.py"
        if not re.search(r'^LESSON = "', module.read_text(encoding="utf-8"), re.M):
            continue
        for notebook, _ in lab_prerequisites(lab):
            if notebook in order:  # lessons 00 and 01 are taught in the room
                assert order.index(notebook) < order.index(lab), f"{lab} comes before {notebook}"


def test_lab_03_could_not_be_in_the_room_after_lesson_03_alone():
    # the check above has teeth: lab 03's checks point into lesson 08 (interceptors)
    assert any(nb == "notebooks/08_interceptors.ipynb"
               for nb, _ in lab_prerequisites("labs/03_error_policy.ipynb"))


# -- references --------------------------------------------------------------------------------------
def test_every_reference_in_the_script_names_something_inside_its_block():
    problems = [p for block in BLOCKS for p in workshop.reference_problems(block)]
    assert not problems, "\n".join(problems)


def test_the_reference_check_has_teeth():
    block = next(b for b in BLOCKS if b.title.startswith("03"))
    # the handle_tool_errors matrix is deep dive 7: outside the block
    assert workshop.reference_problems(replace(block, say="every form: {§7}"))
    assert workshop.reference_problems(replace(block, say="every form is §7"))  # written bare
    assert not workshop.reference_problems(replace(block, say="every form is {home §7}"))
    assert workshop.reference_problems(replace(block, say="{home §4}"))  # inside: not homework
    assert workshop.reference_problems(replace(block, cuts=(workshop.Cut("§3", "skip it"),)))
    assert workshop.reference_problems(replace(block, say="lesson {04 §42}"))
    first = next(b for b in BLOCKS if b.title.startswith("01"))
    assert workshop.reference_problems(replace(first, cuts=(workshop.Cut("§6", "the second example"),)))


_SECTION = re.compile(r"(lesson \d\d )?§(\d+)(?:–§(\d+))?( \(homework\))?")


def _named_sections(text: str) -> set[str]:
    """`§N` a rendered text names as part of its own block (not `lesson NN §N`, not homework)."""
    found = set()
    for m in _SECTION.finditer(text):
        if m.group(1) or m.group(4):
            continue
        found |= {f"§{n}" for n in range(int(m.group(2)), int(m.group(3) or m.group(2)) + 1)}
    return found


def _inside(block) -> set[str]:
    return {f"§{h.split('.')[0]}" for h in block.sections if h[:1].isdigit()}


def test_the_printed_script_names_only_sections_inside_each_block():
    text = (ROOT / "docs" / "workshop" / "facilitator.md").read_text(encoding="utf-8")
    chunks = re.split(r"^## ", text, flags=re.M)
    for block in TAUGHT:
        chunk = next(c for c in chunks if c.startswith(f"{workshop.clock(block.start)}–"))
        named = _named_sections(chunk.split("| question | answer |")[0])
        outside = sorted(named - _inside(block))
        assert not outside, f"{block.title}: the script names {outside}"


def test_the_demo_table_names_only_sections_inside_each_block():
    rows = workshop.demo_table().splitlines()[2:]
    assert len(rows) == len(TAUGHT)
    for block, row in zip(TAUGHT, rows, strict=True):
        assert row.startswith(f"| {block.title} |")
        named = _named_sections(row)
        outside = sorted(named - _inside(block))
        assert not outside, f"{block.title}: the demo table names {outside}"


def test_the_run_sheet_cues_and_cuts_come_from_the_blocks():
    sheet = (ROOT / "docs" / "workshop" / "run-sheet.md").read_text(encoding="utf-8")
    for block in TAUGHT:
        start = f"| {workshop.clock(block.start)} |"
        row = next(line for line in sheet.splitlines() if line.startswith(start))
        assert _named_sections(row) <= _inside(block), block.title
        for at, _ in block.cues:
            assert workshop.clock(at) in row


# -- the printed files -------------------------------------------------------------------------------
def test_every_file_the_plan_prints_is_current():
    problems = workshop.problems()
    assert not problems, ("run `make workshop-guide` (or `make regen`):\n  " + "\n  ".join(problems))


def test_the_guide_shows_this_agenda():
    text = (ROOT / "docs" / "workshop" / "README.md").read_text(encoding="utf-8")
    start = text.index(workshop.BEGIN_MARK) + len(workshop.BEGIN_MARK)
    end = text.index(workshop.END_MARK)
    assert text[start:end].strip() == workshop.markdown_table().strip(), (
        "docs/workshop/README.md's agenda is stale: run make workshop-guide")


def test_the_script_keeps_the_slides_interface():
    # scripts/build_slides.py reads SCRIPT by block title (and "opening"), with these fields
    for block in BLOCKS:
        if block.kind != "break":
            script = workshop.SCRIPT[block.title]
            assert {"say", "show", "checkpoint", "cut", "helpers", "questions"} <= set(script), block.title
            assert "{" not in script["say"] + script["show"] + script["cut"], block.title
    assert workshop.SCRIPT["opening"]["say"]


def test_workshop_guide_command_writes_nothing_when_current(capsys):
    assert workshop.main(["stale"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_the_write_guide_command_rewrites_a_stale_file_in_a_copy(tmp_path):
    # what `make workshop-guide` runs, on a copy of what it reads and writes (never this checkout)
    import os
    import shutil
    import subprocess
    import sys

    for rel in ("courseware", "notebooks", "labs", "docs/workshop", "requirements.txt", "pyproject.toml"):
        source, dest = ROOT / rel, tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "backups"))
        else:
            shutil.copy(source, dest)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "courseware.workshop", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    sheet = tmp_path / "docs" / "workshop" / "run-sheet.md"
    sheet.write_text("edited by hand\n", encoding="utf-8")
    assert run("stale").returncode == 1
    wrote = run("write-guide")
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    assert "wrote docs/workshop/run-sheet.md" in wrote.stdout
    assert sheet.read_text(encoding="utf-8") == (ROOT / "docs" / "workshop" / "run-sheet.md").read_text(
        encoding="utf-8")
    again = run("stale")
    assert again.returncode == 0, again.stdout
    table = run("table")
    assert f"total: {workshop.LENGTH} of {workshop.LENGTH} minutes" in table.stdout
