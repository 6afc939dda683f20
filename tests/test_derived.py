"""Every derived file is up to date (`make stale` says which is not, and the command that fixes it),
and the rewriting rules behind `make regen` do what courseware/derived.py says."""

from __future__ import annotations

import copy

import nbformat
import pytest

from courseware import derived
from courseware.nbtools import keep_unchanged_outputs, normalize

CHEAP = [item for item in derived.ITEMS if item.problems is not derived.lesson00_problems]
"""Lesson 00's outputs are compared by strict nbval in the same suite; `make stale` runs it too."""


@pytest.mark.parametrize("item", CHEAP, ids=[item.name for item in CHEAP])
def test_nothing_derived_is_stale(item):
    problems = item.problems()
    assert not problems, f"{item.name} is out of date; fix: {item.command} (or `make regen`):\n  " + \
        "\n  ".join(problems)


PREVIOUS = {"langchain-core": "1.8.3", "langgraph": "1.2.24", "langgraph-prebuilt": "1.1.3",
            "jupyterlab": "4.6.6", "langchain-openai": "1.7.4"}
PINNED = {**PREVIOUS, "langchain-core": "1.8.4", "langgraph": "1.3.0", "langchain-openai": "1.7.5"}


def test_a_bumped_pin_rewrites_every_mention_of_the_old_one_in_any_form():
    text = ("on the pinned set (LangGraph 1.2.24, langchain_core 1.8.3); `langchain-core==1.8.3`; "
            "langchain-openai\n1.7.4. JupyterLab 4.6.6 stays")
    fixed, stale = derived.fix_versions(text, PINNED, PREVIOUS)
    assert fixed == ("on the pinned set (LangGraph 1.3.0, langchain_core 1.8.4); `langchain-core==1.8.4`; "
                     "langchain-openai\n1.7.5. JupyterLab 4.6.6 stays")
    assert len(stale) == 4 and "the lock pins langchain-core 1.8.4" in stale[1]


def test_a_stale_version_that_is_not_the_previous_pin_is_reported_but_left_for_a_person():
    text = "langgraph 1.2 has a drain; tried with langgraph 1.1.5"
    fixed, stale = derived.fix_versions(text, PINNED, PREVIOUS)
    assert fixed == text and len(stale) == 2 and "HISTORICAL" in stale[0]


def test_historical_releases_a_minor_series_and_the_doctors_drift_example_stay():
    text = ("changed in langgraph-prebuilt 1.0.1; langgraph 1.3 and later; the matrix's langgraph 0.6.11; "
            "`langchain-core 1.8.2 (want 1.8.4)`")
    assert derived.fix_versions(text, PINNED, PREVIOUS) == (text, [])


FACTS = {"notebooks": 19, "labs": 8, "last": 18, "last teaching": 16, "mock interview": 17,
         "drill bank": 18, "drills": 70, "sittings": 10}


def test_counts_and_lesson_numbers_follow_the_map_in_the_form_they_were_written():
    text = ("Eighteen notebooks — lessons 00–15, the mock interview (16) and the drill bank (17) — with a "
            "lab after seven lessons (a starter). Work through 00 → 17 in order. A lab follows seven of\n"
            "the lessons. Open the drill bank: 66 drills in\nnine sittings. This notebook is 66 such drills, "
            "in nine sittings")
    fixed, wrong = derived.fix_counts(text, FACTS)
    assert fixed == ("Nineteen notebooks — lessons 00–16, the mock interview (17) and the drill bank (18) — "
                     "with a lab after eight lessons (a starter). Work through 00 → 18 in order. A lab "
                     "follows eight of\nthe lessons. Open the drill bank: 70 drills in\nten sittings. "
                     "This notebook is 70 such drills, in ten sittings")
    assert len(wrong) == 11


@pytest.mark.parametrize("text", [
    "these two notebooks", "a lab after two lessons of reading", "00 → 04, then 05 → 08",
    "the mock interview 10 questions", "the drill bank 30 minutes", "the first 12 drills, in two sittings",
    "Lessons 00–03, the warm-up", "Lessons 00–10, or the interview track",
])
def test_ordinary_prose_with_numbers_is_left_alone(text):
    assert derived.fix_counts(text, FACTS) == (text, [])


def _nb(*sources, outputs=None):
    nb = nbformat.v4.new_notebook()
    for source in sources:
        nb.cells.append(nbformat.v4.new_code_cell(source) if source.startswith("print")
                        else nbformat.v4.new_markdown_cell(source))
    return normalize(nb)


def test_inserting_a_cell_changes_no_other_cells_id():
    nb = _nb("# A", "print(1)", "## B")
    ids = [cell.id for cell in nb.cells]
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("new"))
    again = normalize(nb)
    assert [c.id for c in again.cells if c.source != "new"] == ids
    assert len({c.id for c in again.cells}) == 4


def test_a_copied_cell_gets_an_id_of_its_own():
    nb = _nb("# A", "print(1)")
    nb.cells.append(nbformat.from_dict(dict(nb.cells[1])))
    assert len({cell.id for cell in normalize(nb).cells}) == 3


def test_a_regenerated_cell_keeps_its_committed_output_when_only_masked_values_moved():
    old = _nb("print(1)", "print(2)")
    new = copy.deepcopy(old)  # a fresh run of the same file: same ids, same sources
    for nb, (first, second) in ((old, ("took 0.21 s", "speed-up 1.98x")), (new, ("took 0.23 s", "CHANGED"))):
        for cell, text, count in zip(nb.cells, (first, second), (1, 2), strict=True):
            cell.execution_count = count
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    assert keep_unchanged_outputs(new, old) == 1
    assert new.cells[0].outputs[0].text == "took 0.21 s"  # the committed text: only a duration moved
    assert new.cells[1].outputs[0].text == "CHANGED"       # a real change is kept


def test_a_lesson_link_states_the_number_of_the_notebook_it_links():
    text = ("[11 · Streaming](11_streaming_and_stopping.ipynb) · the [mock interview]"
            "(16_mock_interview.ipynb) (13) · [09 · Prebuilt agents](10_mcp_tools.ipynb) · "
            "[12 §10](../notebooks/13_x.ipynb#a) · [lesson 04, section 5](05_return_types.ipynb#b) · "
            "Lesson 06 ([section 3](07_inside.ipynb#c)) · [the lab](../labs/01_make_it.ipynb) (30)")
    fixed, wrong = derived.fix_link_numbers(text)
    assert fixed == ("[11 · Streaming](11_streaming_and_stopping.ipynb) · the [mock interview]"
                     "(16_mock_interview.ipynb) (16) · [10 · Prebuilt agents](10_mcp_tools.ipynb) · "
                     "[13 §10](../notebooks/13_x.ipynb#a) · "
                     "[lesson 05, section 5](05_return_types.ipynb#b) · "
                     "Lesson 07 ([section 3](07_inside.ipynb#c)) · [the lab](../labs/01_make_it.ipynb) (30)")
    assert len(wrong) == 5


def test_the_labs_readme_states_each_labs_estimate():
    text = ("| [02 · Build](02_b.ipynb) | [02 · Lesson](../notebooks/02_x.ipynb) | it | 25 min |\n"
            "| [03 · Meet](03_p.ipynb) | [03 · Lesson](../notebooks/03_x.ipynb) | it | 20 min |")
    fixed, wrong = derived.fix_lab_table(text, {"02": 20, "03": 20})
    assert fixed == text.replace("25 min", "20 min") and wrong == ["lab 02: 25 min, its estimate is 20"]


def test_the_handout_cover_counts_notebooks_and_labs_from_the_map():
    import importlib.util

    script = derived.ROOT / "scripts" / "build_handout.py"
    spec = importlib.util.spec_from_file_location("build_handout", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    facts = derived.course_facts()
    cover = module.cover_and_contents([])
    assert f"{derived.WORDS[facts['notebooks']].capitalize()} notebooks" in cover
    assert f"{derived.WORDS[facts['labs']]} self-checking labs" in cover
    assert f"lessons 00–{facts['last teaching']:02d}," in cover
