"""The live-coding copy is generated from the block typed live (`courseware.workshop.typed_steps()`):
the lesson's cells in order with every output and execution count cleared, each typed cell
collapsed with an empty cell below it to type into, and it follows the lesson when it changes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

from courseware import workshop

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("build_slides", ROOT / "scripts" / "build_slides.py")
slides = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slides)


def test_the_live_copy_collapses_the_typed_cell_and_leaves_room_below_it(tmp_path):
    (block, step), = workshop.typed_steps()
    source = ROOT / block.part.notebook
    lesson = nbformat.read(source, as_version=4)
    copy = nbformat.read(slides.live_copy(source, tmp_path), as_version=4)
    typed = workshop._source(workshop.cells_of(block.part.notebook)[workshop.step_cells(block, step)[0]])
    added = [c for c in copy.cells if c.metadata.get("live_copy")]
    assert len(copy.cells) == len(lesson.cells) + 2 and len(added) == 2
    hidden = [i for i, c in enumerate(copy.cells) if c.metadata.get("jupyter", {}).get("source_hidden")]
    assert len(hidden) == 1 and copy.cells[hidden[0]].source == typed
    assert copy.cells[hidden[0] + 1].cell_type == "markdown" and "Type `MinimalAsyncToolNode`" in \
        copy.cells[hidden[0] + 1].source
    assert copy.cells[hidden[0] + 2].cell_type == "code" and copy.cells[hidden[0] + 2].source == ""
    kept = [c for c in copy.cells if not c.metadata.get("live_copy")]
    for original, live in zip(lesson.cells[1:], kept[1:], strict=True):
        assert live.source == original.source
        if live.cell_type == "code":
            assert live.outputs == [] and live.execution_count is None
    assert "Live-coding copy" in copy.cells[0].source
    nbformat.validate(copy)


def test_the_live_copy_follows_the_lesson(tmp_path):
    (block, _), = workshop.typed_steps()
    lesson = nbformat.read(ROOT / block.part.notebook, as_version=4)
    lesson.cells.append(nbformat.v4.new_markdown_cell("## 9. A new section\n\nNew prose."))
    lesson.cells.append(nbformat.v4.new_code_cell("print('typed live')"))
    changed = tmp_path / Path(block.part.notebook).name
    nbformat.write(lesson, changed)
    copy = nbformat.read(slides.live_copy(changed, tmp_path / "out"), as_version=4)
    assert copy.cells[-2].source.startswith("## 9. A new section")
    assert copy.cells[-1].source == "print('typed live')" and copy.cells[-1].outputs == []
