"""The live-coding copy of lesson 02 is generated: every code cell outside Setup emptied, every
output and execution count cleared, the prose unchanged, and it follows the lesson when it changes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_slides", ROOT / "scripts" / "build_slides.py")
slides = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slides)


def _setup_flags(nb) -> list[bool]:
    flags, in_setup = [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            in_setup = cell.source.splitlines()[0].strip() == "## Setup"
        flags.append(in_setup)
    return flags


def test_the_live_copy_empties_code_and_clears_outputs(tmp_path):
    source = ROOT / slides.LIVE_LESSON
    lesson = nbformat.read(source, as_version=4)
    copy = nbformat.read(slides.live_copy(source, tmp_path), as_version=4)
    assert len(copy.cells) == len(lesson.cells)
    emptied = 0
    for original, live, in_setup in zip(lesson.cells, copy.cells, _setup_flags(lesson), strict=True):
        assert live.cell_type == original.cell_type
        if live.cell_type == "code":
            assert live.outputs == [] and live.execution_count is None
            assert live.source == (original.source if in_setup else "")
            emptied += not in_setup and bool(original.source.strip())
        elif live is not copy.cells[0]:
            assert live.source == original.source
    assert emptied >= 10, "lesson 02 should have code to type"
    assert "Live-coding copy" in copy.cells[0].source


def test_the_live_copy_follows_the_lesson(tmp_path):
    lesson = nbformat.read(ROOT / slides.LIVE_LESSON, as_version=4)
    lesson.cells.append(nbformat.v4.new_markdown_cell("## 9. A new section\n\nNew prose."))
    lesson.cells.append(nbformat.v4.new_code_cell("print('typed live')"))
    changed = tmp_path / "02_custom_async_tool_node.ipynb"
    nbformat.write(lesson, changed)
    copy = nbformat.read(slides.live_copy(changed, tmp_path / "out"), as_version=4)
    assert copy.cells[-2].source.startswith("## 9. A new section")
    assert copy.cells[-1].source == ""
