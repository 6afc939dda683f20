"""courseware.course's time estimator: what each constant adds, the rounding, and the split of a
notebook into core path, deep dives and sittings."""

from __future__ import annotations

import json

import pytest

from courseware import course
from courseware.course import (
    estimate_cells,
    estimate_parts,
    prose_words,
    round_to_five,
    stated_part_minutes,
)


def md(text: str) -> dict:
    return {"cell_type": "markdown", "source": text}


def code(text: str) -> dict:
    return {"cell_type": "code", "source": text}


def extra(cells, margin=0) -> float:
    """Minutes these cells add (no run margin)."""
    return estimate_cells(cells, margin=margin).exact_minutes


def test_nothing_costs_only_the_margin():
    assert estimate_cells([]).exact_minutes == course.RUN_MARGIN_MINUTES
    assert extra([]) == 0


def test_prose_is_read_at_180_words_a_minute():
    assert extra([md(" ".join(["word"] * 180))]) == pytest.approx(1.0)


def test_what_is_not_prose_is_not_counted_as_words():
    assert prose_words("- one | two |\n\n[link text](https://example.com/a-long/path.html)") == 4
    assert prose_words("<details><summary>Answers</summary></details>") == 1
    assert prose_words("before\n```python\nx = 1\n```\nafter") == 2
    assert prose_words("工具节点") == 4  # one word per CJK character


def test_each_code_cell_and_line():
    one_line = extra([code("x = 1")])
    assert one_line == pytest.approx(
        (course.SECONDS_PER_CODE_CELL + course.SECONDS_PER_CODE_LINE + course.SECONDS_PER_PREDICTION) / 60)
    assert extra([code("x = 1\n\ny = 2\n")]) - one_line == pytest.approx(course.SECONDS_PER_CODE_LINE / 60)


def test_fenced_code_in_markdown_is_read_as_code_lines():
    e = estimate_cells([md("```python\nx = 1\ny = 2\n```")])
    assert (e.code_lines, e.code_cells, e.words) == (2, 0, 0)


QUESTIONS = """## Check your understanding

1. First?
2) Second?
- Third?
* Fourth?
   - a nested point is part of its question

<details><summary>Answers</summary>

1. Not a question.
2. Neither.

</details>"""


def test_questions_in_every_list_form_and_never_the_answers():
    assert estimate_cells([md(QUESTIONS)]).questions == 4


def test_questions_counted_when_the_heading_stands_in_the_middle_of_a_cell():
    cell = md("**Fix:** run it again.\n\n" + QUESTIONS)
    assert estimate_cells([cell]).questions == 4
    before = estimate_cells([md("## Recap\n\n1. A recap point, not a question.")])
    assert before.questions == 0


def test_answers_in_a_cell_of_their_own_are_not_questions():
    cells = [md("## Check your understanding\n\n1. One?\n2. Two?"),
             md("<details>\n\n1. Answer.\n\n</details>")]
    assert estimate_cells(cells).questions == 2


def test_each_question_drill_spoken_answer_and_exercise():
    base = extra([md("## Check your understanding\n\n1. One?")])
    assert base - extra([md("## Check your understanding")]) == pytest.approx(
        course.SECONDS_PER_QUESTION / 60 + 2 / course.WORDS_PER_MINUTE)  # "1." and "One?" are read too
    assert estimate_cells([md("### Drill 1: x")]).drills == 1
    assert estimate_cells([md("#### Spoken answer: y")]).spoken_answers == 1
    drill = extra([md("### Drill: x")]) - extra([md("### x")])
    assert drill == pytest.approx(course.MINUTES_PER_DRILL + 1 / course.WORDS_PER_MINUTE)
    spoken = extra([md("### Spoken answer: y")]) - extra([md("### y")])
    assert spoken == pytest.approx(course.MINUTES_PER_SPOKEN_ANSWER + 2 / course.WORDS_PER_MINUTE)
    # an exercise counts once however often its check runs
    checks = [code("q1.check(answer)"), code("q1.check(answer)"), code("q2.check(other)")]
    assert estimate_cells(checks).exercises == 2
    unchecked = [code("q1.chek(answer)"), code("q1.chek(answer)"), code("q2.chek(other)")]
    assert extra(checks) - extra(unchecked) == pytest.approx(2 * course.MINUTES_PER_EXERCISE)


@pytest.mark.parametrize(("exact", "stated"), [
    (0, 5), (4.9, 5), (7.49, 5), (7.5, 10), (12.4, 10), (42.49, 40), (42.5, 45), (47.49, 45), (47.5, 50),
])
def test_rounded_to_the_nearest_five_halves_up_never_below_five(exact, stated):
    assert round_to_five(exact) == stated


def write(tmp_path, cells) -> str:
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return str(path)


def test_parts_core_deep_dives_and_sittings(tmp_path):
    words = " ".join(["w"] * 900)  # five minutes of reading
    path = write(tmp_path, [
        md("# Title"),
        md("## 1. Core\n\n" + words),
        md("## 2. Deep dive: Details\n\n*About 5 minutes.*\n\n" + words),
        md(words + "\n\n## 3. Back on the core path\n\n" + words),  # a heading in the middle of a cell
        md("## Sitting 1: Drills\n\n*About 10 minutes.*\n\n" + words),
    ])
    parts = estimate_parts(path)
    assert [t for t, _ in parts.deep_dives] == ["2. Deep dive: Details"]
    assert [t for t, _ in parts.sittings] == ["Sitting 1: Drills"]
    dive, sitting = parts.deep_dives[0][1], parts.sittings[0][1]
    assert dive.margin == 0 and sitting.margin == course.RUN_MARGIN_MINUTES
    # the text before "## 3." belongs to the deep dive; "## 3." is core again
    assert dive.words == 2 * 900 + 7 and parts.core.words == 2 * 900 + 1 + 3 + 5
    assert (parts.core.minutes, dive.minutes, sitting.minutes) == (10, 10, 5)
    assert parts.total_minutes == 25
    assert stated_part_minutes(path) == {"2. Deep dive: Details": [5], "Sitting 1: Drills": [10]}


def test_a_missing_notebook_names_the_course_map(tmp_path):
    with pytest.raises(FileNotFoundError, match="the course map lists"):
        estimate_parts(tmp_path / "nope.ipynb")


def code_with(text: str, outputs=(), tags=()) -> dict:
    return {"cell_type": "code", "source": text, "outputs": list(outputs), "metadata": {"tags": list(tags)}}


def test_each_lesson_cell_adds_a_prediction_but_a_lab_or_drill_cell_does_not():
    lesson = estimate_cells([code("x = 1")])
    lab = estimate_cells([code("x = 1")], predict=False)
    assert (lesson.predictions, lab.predictions) == (1, 0)
    assert lesson.exact_minutes - lab.exact_minutes == pytest.approx(course.SECONDS_PER_PREDICTION / 60)
    drill = estimate_cells([md("### Drill 1. x"), code("x = 1"), code("y = 2"),
                            md("### After the drill"), code("z = 3")])
    assert drill.predictions == 1  # the drill's own cells are priced by MINUTES_PER_DRILL


def test_outputs_are_read_line_by_line_and_a_figure_as_a_few_lines():
    printed = code_with("print(1)", [{"output_type": "stream", "name": "stdout", "text": "a\nb\nc\n"}])
    result = code_with("x", [{"output_type": "execute_result", "data": {"text/plain": ["1\n", "2"]}}])
    figure = code_with("plot()", [{"output_type": "display_data",
                                   "data": {"image/png": "...", "text/plain": "<Figure>"}}])
    mermaid = "```mermaid\ngraph TD;\n" + "a-->b;\n" * 20 + "```"
    diagram = code_with("show_graph(g)", [{"output_type": "execute_result",
                                           "data": {"text/markdown": mermaid, "text/plain": mermaid}}])
    assert estimate_cells([printed, result, figure]).output_lines == 3 + 2 + course.OUTPUT_LINES_PER_FIGURE
    assert estimate_cells([diagram]).output_lines == course.OUTPUT_LINES_PER_FIGURE
    read = extra([printed]) - extra([code("print(1)")])
    assert read == pytest.approx(3 * course.SECONDS_PER_OUTPUT_LINE / 60)


def test_an_error_on_purpose_adds_the_time_to_find_its_cause():
    error = {"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": ["..."] * 20}
    raising = code_with("boom()", [error], tags=["raises-exception"])
    e = estimate_cells([raising])
    assert (e.errors, e.output_lines) == (1, 3)
    cause = extra([raising]) - extra([code_with("boom()", [error])])
    assert cause == pytest.approx(course.SECONDS_PER_ERROR / 60)


def test_a_lab_is_estimated_without_predictions():
    lab = course.LESSONS[1].lab_solution
    assert course.is_lab(lab) and not course.is_lab(course.LESSONS[1].file)
    assert estimate_parts(lab).core.predictions == 0 < estimate_parts(course.LESSONS[1].file).core.predictions


def test_an_error_on_purpose_counts_in_the_core_path_and_in_a_deep_dive(tmp_path):
    error = {"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": ["..."]}
    path = write(tmp_path, [
        md("# Title"),
        md("## 1. Core"),
        code_with("boom()", [error], tags=["raises-exception"]),
        md("## 2. Deep dive: More\n\n*About 5 minutes.*"),
        code_with("boom()", [error], tags=["raises-exception"]),
        code_with("fine()"),
    ])
    parts = estimate_parts(path)
    assert parts.core.errors == 1 and parts.deep_dives[0][1].errors == 1
    assert parts.core.errors == course.estimate(path).errors - 1
