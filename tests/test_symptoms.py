"""The symptom index (docs/symptoms.md) is what `courseware.symptoms` generates from docs/questions.md,
every symptom names real question rows, and every link it writes resolves."""

from __future__ import annotations

import pytest

from courseware import symptoms
from courseware.course import LESSONS
from tests.test_links import broken_links

QUESTIONS_TEXT = symptoms.QUESTIONS.read_text(encoding="utf-8")
ROWS, SYMPTOMS, SECTION_PROBLEMS = symptoms.parse_questions(QUESTIONS_TEXT)


def test_the_committed_index_is_what_the_generator_writes():
    wanted, _ = symptoms.markdown()
    assert symptoms.INDEX.read_text(encoding="utf-8") == wanted, (
        "docs/symptoms.md differs from what docs/questions.md generates: run `make regen` "
        "(or `.venv/bin/python -m courseware.symptoms --write`)")


def test_the_symptoms_section_is_well_formed_and_every_row_it_names_resolves():
    _, problems = symptoms.entries()
    assert not problems, "\n".join(problems)
    assert 15 <= len(SYMPTOMS) <= 25, f"{len(SYMPTOMS)} symptoms: aim for 15–25, each a thing a user sees"


@pytest.mark.parametrize("symptom", SYMPTOMS, ids=[s.title for s in SYMPTOMS])
def test_every_question_link_of_a_symptom_is_a_row_of_the_tables(symptom):
    linked = {url for row in ROWS for _, url in row.links}
    missing = [f"line {line}: [{label}]({url})" for line, label, url in symptom.links if url not in linked]
    assert symptom.rule and symptom.links and not missing, (
        f"symptom \"{symptom.title}\": rule {'stated' if symptom.rule else 'missing'}, "
        f"{len(symptom.links)} question links, not rows of the tables: {missing}")


def test_every_link_the_index_writes_resolves():
    problems = broken_links(symptoms.INDEX)
    assert not problems, "docs/symptoms.md:\n  " + "\n  ".join(problems)


def test_most_rows_are_under_a_symptom():
    linked = [row for row in ROWS if row.links]
    left = symptoms.uncovered()
    assert len(left) <= len(linked) // 4, (
        f"{len(left)} of {len(linked)} question rows are under no symptom: list each under the symptom it "
        "shows (`.venv/bin/python -m courseware.symptoms --uncovered` names them)")


def test_every_lesson_link_states_the_number_the_map_gives_its_notebook():
    import re

    from courseware.derived import fix_link_numbers

    wanted, _ = symptoms.markdown()
    by_file = {row.file: row for row in LESSONS}
    bank = next(row for row in LESSONS if row.title == "Drill bank")
    for text, target in re.findall(r"\[([^\]]+)\]\(\.\./(notebooks/[^)#]+)", wanted):
        if target != bank.file:
            assert text.startswith(f"{by_file[target].code} · "), f"[{text}]({target}): state its number"
    assert fix_link_numbers(wanted)[1] == []


# -- the generator on texts made for the test ----------------------------------------------------------
TABLE = """\
# Questions

## 1. Something — [lesson 12](../notebooks/12_streaming_and_stopping.ipynb)

| question (short, in the user's words) | link | what they got wrong | where taught |
|---|---|---|---|
| "progress never arrives" | [langgraph#3369](https://github.com/langchain-ai/langgraph/issues/3369) | \
expected a state update | 12 § 2. Progress from inside a tool; drill 45 |
| "`BaseStore \\| None` everywhere" | [example#1](https://example.org/1), \
[example#2](https://example.org/2) | x | 15 §2 "When the graph has no store"; 01 § 5 |
"""


def _with_symptoms(*blocks: str) -> str:
    head, _, tables = TABLE.partition("\n## 1.")
    return f"{head}\n## Symptoms\n\nHow to keep this section.\n\n" + "\n".join(blocks) + "\n## 1." + tables


def test_a_symptom_that_names_a_question_not_in_the_tables_fails_with_the_fix():
    text = _with_symptoms(
        "### Progress never arrives\n\nThe rule.\n\n"
        "- [langgraph#3369](https://github.com/langchain-ai/langgraph/issues/3369)\n"
        "- [langgraph#9999](https://github.com/langchain-ai/langgraph/issues/9999)\n")
    found, problems = symptoms.entries(text)
    assert len(found) == 1 and len(found[0].rows) == 1
    assert len(problems) == 1
    message = problems[0]
    assert "langgraph#9999" in message and "Progress never arrives" in message
    assert "add a row for that question" in message and "copy the link exactly" in message


@pytest.mark.parametrize("block, says", [
    ("### No rule\n\n- [langgraph#3369](https://github.com/langchain-ai/langgraph/issues/3369)\n",
     "states no rule"),
    ("### No questions\n\nThe rule.\n", "lists no question"),
    ("### A bad line\n\nThe rule.\n\n- langgraph#3369\n", "is not a question link"),
])
def test_a_malformed_symptom_says_what_to_write(block, says):
    _, problems = symptoms.entries(_with_symptoms(block))
    assert any(says in p for p in problems), problems


def test_a_symptom_gathers_sections_labs_and_drills_from_its_rows():
    text = _with_symptoms(
        "### Two rows\n\nThe rule.\n\n"
        "- [langgraph#3369](https://github.com/langchain-ai/langgraph/issues/3369)\n"
        "- [example#2](https://example.org/2)\n")
    (entry,), problems = symptoms.entries(text)
    assert not problems
    assert [row.question for row in entry.rows] == ['"progress never arrives"',
                                                    '"`BaseStore | None` everywhere"']
    links = [place.link() for place in entry.places]
    assert links[0].startswith("[01 · 5. When one call fails](../notebooks/01_sequential_vs_gather.ipynb#5.-")
    assert any("#When-the-graph-has-no-store)" in link for link in links)  # a quoted subsection
    assert any(link.startswith("[12 · 2. Progress from inside a tool](") for link in links)
    assert 45 in [drill.number for drill in entry.drills]                    # named in the column
    assert "13" in [lab.code for lab in entry.labs]  # lab 13's checks send a learner back to 12 § 2


def test_a_table_added_later_is_read_by_its_column_names():
    """A new lesson's table may number its rows and call its columns differently."""
    text = _with_symptoms(
        "### From a new table\n\nThe rule.\n\n- [example#3](https://example.org/3)\n") + (
        "\n## 9. The step model, as tools feel it\n\n"
        "| # | question (user's words, paraphrased) | link | answer | where taught |\n"
        "|---|---|---|---|---|\n"
        "| 9.1 | \"parallel branches wait\" | [example#3](https://example.org/3) | a step | 01 § 2 |\n")
    (entry,), problems = symptoms.entries(text)
    assert not problems
    assert [row.question for row in entry.rows] == ['"parallel branches wait"']
    assert entry.places[0].link().startswith("[01 · 2. `asyncio.gather`: overlap the waits](")


def test_where_taught_cells_in_the_forms_the_tables_use():
    refs, drills = symptoms.parse_where_taught(
        '12 § 3 (rule) and § 4 (cited); 09 § 8. Deep dive: x; 15 §6 deep dive, "A `TypedDict` or a pydantic '
        'context"; 12 § 2 ### A chat model called inside a tool; 10 § 4.1; 20 § Sitting 9, Drills 57, 58')
    assert [(r.lesson, r.section) for r in refs] == [
        (12, "3"), (12, "4"), (9, "8"), (15, "6"), (12, "2"), (10, "4.1"), (20, "Sitting 9")]
    assert "A `TypedDict` or a pydantic context" in refs[3].hints
    assert "A chat model called inside a tool" in refs[4].hints
    assert drills == [57, 58]


def test_a_lesson_being_written_is_linked_without_an_anchor_until_it_is_here(monkeypatch):
    """Rows of a new lesson's section may be listed before its notebook is committed."""
    from courseware import course

    absent = course.Lesson(11, "notebooks/11_not_here_yet.ipynb", "The step model", None, "")
    monkeypatch.setattr(course, "LESSONS", tuple(absent if r.number == 11 else r for r in course.LESSONS))
    place, problem = symptoms.resolve(symptoms.Reference(11, "2", ()))
    assert problem is None
    assert place.link() == "[11 · The step model, § 2](../notebooks/11_not_here_yet.ipynb)"


def test_a_section_the_lesson_does_not_have_is_a_problem_with_the_fix():
    place, problem = symptoms.resolve(symptoms.Reference(1, "42", ()))
    assert place is None and "has no section 42" in problem and "write the section's number" in problem


def test_a_lessons_practice_questions_train_the_section_their_link_names(tmp_path, monkeypatch):
    import nbformat

    from courseware import course

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 11 — The step model"),
        nbformat.v4.new_markdown_cell("## 2. Reads and writes\n\nText."),
        nbformat.v4.new_markdown_cell("## Practice"),
        nbformat.v4.new_code_cell(
            "%xmode Minimal\n"
            "@practice.question(\n    ask=\"What does the second task \"\n        \"read?\",\n"
            "    answers=(\"0\", \"1\"),\n    rule=\"At the step's start.\",\n"
            "    section=\"11_the_step_model.ipynb#2.-Reads-and-writes\",\n)\n"
            "def reads():\n    return \"0\""),
    ]
    path = tmp_path / "11_the_step_model.ipynb"
    nbformat.write(nb, path)
    fake = course.Lesson(11, str(path), "The step model", None, "")
    monkeypatch.setattr(course, "LESSONS", tuple(fake if r.number == 11 else r for r in course.LESSONS))
    (question,) = [q for q in symptoms.practice_questions() if q.lesson == 11]
    assert question.place == symptoms.Place(11, 0)  # the notebook's first `##` section
    assert question.link().endswith("#Practice): What does the second task read?")
