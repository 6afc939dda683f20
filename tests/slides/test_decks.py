"""What the decks hold, checked on the notebooks `scripts/build_slides.py` assembles (no browser; the
rendered decks are measured by tests/handout/test_slides.py): an output is shown whole (a plain-text
table as a table with every column, its rows continued on the next slides), a typed section's intro
comes before its typing slides, the versions cell and its intro stay off the projector, the code of
conduct names who to tell, the wrap-up says where the handout is."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path

import pytest

from courseware import workshop
from helpers.returns import text_table

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_slides", ROOT / "scripts" / "build_slides.py")
slides = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slides)


@pytest.fixture(scope="module")
def decks():
    return {title: nb for _, title, nb in slides.decks(workshop)}


def _text(nb) -> str:
    return "\n".join(c.source for c in nb.cells
                     if c.metadata.get("slideshow", {}).get("slide_type") != "notes")


def _block(kind: str):
    return next(b for b in workshop.agenda() if b.kind == kind)


# -- outputs whole -----------------------------------------------------------------------------------
def test_a_plain_text_table_is_read_column_by_column_chinese_included():
    printed = text_table(["tool", "content", "name"],
                         [("text", "'Paris: sunny'", "'text'"), ("天气", "'杭州: 晴'", "None")])
    before, header, rows, after = slides.text_table("· a note first\n" + printed + "\n· what the run gave")
    assert before == ["· a note first"] and after == ["· what the run gave"]
    assert header == ["tool", "content", "name"]
    assert rows == [["text", "'Paris: sunny'", "'text'"], ["天气", "'杭州: 晴'", "None"]]
    assert slides.text_table("no table\n--- here") is None


def test_a_wide_long_table_keeps_every_column_and_row_over_several_slides():
    rows = [(f"tool_{n}", repr({"type": "text", "text": f"answer {n} " * 6}), f"'tool_{n}'")
            for n in range(30)]
    items = slides._output_items(text_table(["tool", "content", "name"], rows))
    tables = [i for i in items if i.kind == "table"]
    assert len(tables) > 1 and all(i.rows <= slides.ROWS for i in items)
    shown = "".join(i.body for i in tables)
    assert all(t.body.count("<th>") == 3 for t in tables), "the header on every slide"
    for row in rows:
        assert "".join(f"<td>{html.escape(c)}</td>" for c in row) in shown
    assert "more lines" not in shown


def test_a_long_output_continues_on_the_next_slides():
    lines = [f"[ok  ] check {n}: fine" for n in range(30)] + ["ready: the course runs offline here"]
    items = slides._output_items("\n".join(lines))
    assert len(items) > 1 and all(i.rows <= slides.ROWS for i in items)
    assert "\n".join(re.sub(r"</?pre[^>]*>", "", i.body) for i in items) == html.escape("\n".join(lines))
    huge = slides._output_items("\n".join(f"line {n}" for n in range(200)))
    assert f"{200 - slides.OUTPUT_MAX_LINES + 1} more lines in the lesson" in huge[-1].body


def test_every_table_an_output_prints_is_on_its_block_s_slides_whole(decks):
    """The checkpoint of the highlights block is §5's table of eight answers: all eight, every column."""
    found = {}
    for block in workshop.agenda():
        if block.part is None:
            continue
        cells = workshop.cells_of(block.part.notebook)
        text = _text(decks[block.title])
        for step in block.steps:
            for i in workshop.step_cells(block, step):
                for output in cells[i].get("outputs", []):
                    table = slides.text_table(slides._output_text(output))
                    if table and step.mode != "type":
                        found.setdefault(block.kind, 0)
                        found[block.kind] += 1
                        for row in table[2]:
                            shown = "".join(f"<td>{html.escape(c)}</td>" for c in row)
                            assert shown in text, (block.title, row)
        assert "more lines in the lesson" not in text, block.title
    assert found.get("highlights"), "the highlights block shows its table of answers"


def test_the_opening_shows_the_pre_flight_check_to_its_verdict(decks):
    text = _text(decks[next(b.title for b in workshop.agenda() if b.kind == "demo")])
    assert "ready: the course runs offline here" in text or "not ready" in text


# -- order and what is left out ------------------------------------------------------------------------
def test_a_typed_section_s_intro_comes_before_its_typing_slides_with_code():
    for block, step in workshop.typed_steps():
        cells = workshop.cells_of(block.part.notebook)
        typed = workshop.step_cells(block, step)[0]
        heading = next(slides._text_items(workshop._source(cells[i]))[0]
                       for i in range(typed, -1, -1)
                       if cells[i]["cell_type"] == "markdown"
                       and workshop._source(cells[i]).startswith("## "))
        deck = [c.source for c in slides.block_deck(block, workshop).cells]
        intro = next(k for k, s in enumerate(deck) if s.startswith(f"### {heading}"))
        typing = next(k for k, s in enumerate(deck) if slides.TYPE_IT.body in s)
        assert intro <= typing, f"{heading!r} comes after the slides typed live"
        assert "```python" in deck[typing] and "class " in deck[typing], "the typing slide shows code"


def test_the_versions_cell_and_the_sentence_introducing_it_are_not_shown(decks):
    for block in workshop.agenda():
        if block.part is None:
            continue
        cells = workshop.cells_of(block.part.notebook)
        text = _text(decks[block.title])
        for step in block.steps:
            indices = workshop.step_cells(block, step)
            for before, i in zip(indices, indices[1:], strict=False):
                tags = cells[i].get("metadata", {}).get("tags", [])
                if step.where == "Setup" and "nbval-ignore-output" in tags \
                        and cells[before]["cell_type"] == "markdown":
                    _, prose = slides._text_items(workshop._source(cells[before]))
                    assert prose and all(p.body[:40] not in text for p in prose), block.title


def test_a_list_item_is_shown_whole_not_cut_at_its_line_end():
    _, items = slides._text_items("1. **BaseTool** builds the message when it is invoked with a tool call\n"
                                  "   (ToolNode does that).\n2. **ToolNode** then redoes its content.")
    assert items[0].body.splitlines() == [
        "1. **BaseTool** builds the message when it is invoked with a tool call (ToolNode does that).",
        "2. **ToolNode** then redoes its content."]


# -- the welcome and the wrap-up ---------------------------------------------------------------------
def test_the_code_of_conduct_slide_names_who_to_tell(decks):
    text = slides.CONDUCT.read_text(encoding="utf-8")
    contact = slides.conduct_contact(text)
    assert contact and contact in " ".join(text.split()) or contact == slides.CONTACT_MISSING
    filled = re.sub(r"<name and contact[^>]*>", "Ada Lovelace (organiser), ada@example.org", text)
    assert slides.conduct_contact(filled) == "Ada Lovelace (organiser), ada@example.org"
    placeholder = "privately: <name and contact of the person to tell>. We will act on it."
    assert slides.conduct_contact("**If anything makes this room unwelcoming**, tell " + placeholder) == \
        "<name and contact of the person to tell>"
    assert slides.conduct_contact("# Code of conduct\n\nBe kind.") == slides.CONTACT_MISSING
    welcome = _text(decks[_block("welcome").title])
    assert html.escape(contact) in welcome


def test_the_wrap_up_says_where_the_handout_is(decks):
    text = _text(decks[_block("wrap-up").title])
    assert ("the handout: on the stick, in `handout/`: copy it at a break, or build it at home with "
            "`make handout`") in text
    assert "from disk" not in text and "docs/workshop/solutions.md" in text


def test_run_all_comes_where_the_highlights_plan_puts_it_and_labels_say_it_once(decks):
    for block in workshop.agenda():
        if block.title not in decks:  # a break
            continue
        deck = [c.source for c in decks[block.title].cells
                if c.metadata.get("slideshow", {}).get("slide_type") == "slide"]
        if block.highlights:
            run_all = next(k for k, s in enumerate(deck) if s.startswith("## Everyone: Run All"))
            before = [s.where for s in block.steps].index("Setup")
            assert run_all == 1 + before, "Run All after the steps the plan puts before it"
        for source in deck:
            title = re.match(r"### (.*?) <span class=\"step\">(.*?)</span>", source)
            if title:
                assert not title.group(2).startswith(title.group(1)), title.group(0)


def test_the_prediction_prompts_are_left_off_the_projector():
    # the room predicts aloud; `predict`'s prompt and `reveal`'s verdict are for a reader of the notebook
    text = slides._output_text({"output_type": "stream", "name": "stdout", "text": (
        "· no prediction yet: write it in place of the ?, then run the cell\n"
        "lookup_weather call-weather Paris: sunny\n"
        "· no guess written; the run gave 2\n")})
    assert text == "lookup_weather call-weather Paris: sunny\n"
