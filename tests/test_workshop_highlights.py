"""The highlights notebooks (docs/workshop/highlights/): each holds exactly its block's cells (the
lesson's Setup, the earlier code cells the section needs, the section), runs top to bottom under
strict nbval with the lesson's own outputs, links only to files that exist, and `make highlights`
writes them again from the lessons, which also resets a copy a learner saved."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from courseware import workshop

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = workshop.highlights_blocks()
IDS = [Path(b.part.notebook).stem for b in BLOCKS]


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _text(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _outputs(cell: dict) -> list[dict]:
    """A cell's outputs without their execution counts (renumbered in the highlights notebook)."""
    return [{k: v for k, v in output.items() if k != "execution_count"} for output in cell["outputs"]]


def test_every_highlights_block_has_its_notebook_and_no_other_is_left():
    assert BLOCKS, "the plan has no highlights block"
    assert workshop.highlights_problems() == [], "run `make highlights`"
    assert sorted(p.name for p in workshop.HIGHLIGHTS.glob("*.ipynb")) == sorted(
        Path(b.part.notebook).name for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=IDS)
def test_a_highlights_notebook_holds_exactly_its_blocks_cells(block):
    lesson = _cells(ROOT / block.part.notebook)
    made = _cells(ROOT / block.highlights)
    generated = [c for c in made if c["id"].startswith("highlights-")]
    taken = [c for c in made if not c["id"].startswith("highlights-")]
    assert generated[0] is made[0] and all(c["cell_type"] == "markdown" for c in generated)
    # the code: exactly the cells the block must run, in the lesson's order, with its outputs
    code = [c for c in taken if c["cell_type"] == "code"]
    wanted = [lesson[i] for i in workshop.cells_to_run(block.part)]
    assert [_text(c) for c in code] == [_text(c) for c in wanted]
    assert [_outputs(c) for c in code] == [_outputs(c) for c in wanted]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    # the prose: the lesson's Setup and section cells (links made relative to the new folder)
    _, own = workshop.selected(block.part)
    prose = [lesson[i] for i in own if lesson[i]["cell_type"] == "markdown"]
    assert [c["id"] for c in taken if c["cell_type"] == "markdown"] == [c["id"] for c in prose]
    # and nothing from the lesson it does not need
    borrowed = set(workshop.borrowed(block.part))
    assert {c["id"] for c in taken} == {lesson[i]["id"] for i in set(own) | borrowed}


@pytest.mark.parametrize("block", BLOCKS, ids=IDS)
def test_a_highlights_notebook_runs_top_to_bottom_under_strict_nbval(block):
    # the suite's own nbval settings (pyproject.toml): strict comparison with the sanitizer, so each
    # cell must give the lesson's output, and a `raises-exception` cell the lesson's exception
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", block.highlights]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    code = sum(1 for c in _cells(ROOT / block.highlights) if c["cell_type"] == "code")
    assert f"{code} passed" in run.stdout, run.stdout[-2000:]
    assert time.monotonic() - started < 300


@pytest.mark.parametrize("block", BLOCKS, ids=IDS)
def test_a_highlights_notebooks_links_resolve(block):
    from tests.test_links import broken_links

    assert broken_links(ROOT / block.highlights) == []


def test_make_highlights_writes_them_and_resets_a_saved_copy(tmp_path):
    # a copy of what the command reads, so that the test never writes into this checkout
    for rel in ("Makefile", "requirements.txt", "pyproject.toml", "courseware", "notebooks",
                "labs/01_make_it_concurrent.ipynb"):
        source, dest = ROOT / rel, tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, dest)
    folder = tmp_path / "docs" / "workshop" / "highlights"
    folder.mkdir(parents=True)
    saved = folder / Path(BLOCKS[0].part.notebook).name
    saved.write_text((ROOT / BLOCKS[0].highlights).read_text(encoding="utf-8").replace(
        '"execution_count": 1', '"execution_count": 7', 1), encoding="utf-8")
    (folder / "99_stale.ipynb").write_text("{}", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(["make", "--no-print-directory", "highlights", f"VENV={ROOT / '.venv'}"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "wrote docs/workshop/highlights/" in run.stdout and "Run All" in run.stdout
    for block in BLOCKS:
        copy = folder / Path(block.part.notebook).name
        assert copy.read_text(encoding="utf-8") == (ROOT / block.highlights).read_text(encoding="utf-8")
    assert not (folder / "99_stale.ipynb").exists()
